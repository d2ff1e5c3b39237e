"""Expert parallelism: a mixture of experts spread over G GPUs, attention data-parallel beside it.

The layout DeepSeek, SGLang and TensorRT-LLM serve DeepSeek-V3 in: each of the G GPUs holds
(E+R)/G of every MoE layer's expert slots (R redundant copies of hot experts, 0 by default),
a whole copy of everything else (attention, dense layers, shared experts, embedding, head),
and the cache of its own B/G users. Every MoE layer
sends each token's hidden vector to the ranks of its E_tok experts (dispatch) and brings the E_tok
outputs back (combine). Formulas are ``roofline.moe``'s; this module times one step.

One decode step on the busiest GPU (imbalance F = busiest rank's routed tokens over the mean):

- weights read = the non-expert weights for its B/G users + ``min((E+R)/G, F * D(B)/G)`` routed
  experts of every MoE layer, ``D(B) = E (1 - (1 - E_tok/E)^B)`` (``moe.routed_experts_touched``);
- cache read = its B/G users' cache, one copy (data-parallel attention);
- FLOPs = (all FLOPs of the step less the routed experts') / G + the routed experts' * F / G;
- all-to-all = per MoE layer, its ``F * B/G`` tokens' copies to other ranks,
  ``E_tok d (b_d + b_c)`` bytes a token, a share ``(G - 1)/G`` of them off the GPU; those to ranks
  outside its scale-up domain of D GPUs, ``max(0, G - D)/G``, cross the network.
  ``alltoall_s = L_moe * (2 latency + max(NVLink bytes / NVLink rate, RDMA bytes / RDMA rate))``
  at the best figures the GPU's spec gives (``InterconnectSpec.alltoall_ceiling``).

The ceiling overlaps the all-to-all with the math (two micro-batches, as DeepSeek's and SGLang's
engines run, and as the package's data-parallel attention already assumes): a step takes
``max(memory_s, compute_s, alltoall_s)``. A prefill's ceiling spreads the prompt's FLOPs over
all G GPUs, which no engine beats (attention of one request runs on its own rank).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import architecture as arch
from . import moe
from .errors import SpecError
from .performance import Hardware, Workload, resolved
from .precisions import bytes_per_value
from .quantization import critical_batch_for


@dataclass(frozen=True)
class ExpertLayout:
    """``ep`` GPUs, each one expert-parallel rank with data-parallel attention; the busiest
    rank gets ``imbalance`` times the mean routed tokens; the all-to-all sends at
    ``dispatch`` and brings back at ``combine`` precision."""

    ep: int
    imbalance: float = moe.DEFAULT_EXPERT_IMBALANCE
    dispatch: str = moe.DEFAULT_DISPATCH_PRECISION
    combine: str = moe.DEFAULT_COMBINE_PRECISION
    #: Extra expert slots holding copies of hot experts (DeepSeek's 32, EPLB's redundant experts).
    redundant: int = 0


def check_layout(model, layout: ExpertLayout) -> None:
    """SpecError, in one line, for a layout the model cannot take: a dense model, an EP size
    the experts do not divide or that exceeds them, an imbalance below 1, an unknown precision."""
    if model.moe is None:
        raise SpecError(
            f"{model.id} is a dense model: it has no experts to spread",
            field="parallel",
            hint="use --parallel tp (or pp, tpxpp) for a dense model, or pick a mixture of experts",
        )
    moe.check_ep(model.moe.experts, layout.ep, redundant=layout.redundant)
    moe.check_imbalance(layout.imbalance)
    moe.alltoall_bytes_per_token(model.hidden_size, model.moe.experts_per_token, layout.dispatch, layout.combine)


@dataclass(frozen=True)
class ExpertStep:
    """One decode step (and the prefill) of an expert-parallel layout, on its busiest GPU."""

    layout: ExpertLayout
    batch: int
    users_per_gpu: float
    experts_touched_per_step: float
    routed_experts_per_gpu: float
    slots_per_gpu: float
    tokens_per_expert: float
    expert_critical_batch: float
    moe_weight_bytes_read_per_step: float
    kv_bytes_read_per_gpu: float
    alltoall_bytes_per_token: float
    alltoall_bytes_per_step: float
    alltoall_nvlink_bytes_per_step: float
    alltoall_rdma_bytes_per_step: float
    alltoall_s: float
    memory_s: float
    compute_s: float
    prefill_s: float
    prefill_bound: str
    weights_bytes_per_gpu: float
    kv_pool_bytes_per_gpu: float
    max_batch_that_fits: int

    @property
    def step_s(self) -> float:
        """``max(memory_s, compute_s, alltoall_s)``: the all-to-all overlaps the math."""
        return max(self.memory_s, self.compute_s, self.alltoall_s)

    @property
    def bound(self) -> str:
        """What sets the step: ``memory``, ``compute`` or ``communication``."""
        if self.alltoall_s > max(self.memory_s, self.compute_s):
            return "communication"
        return "memory" if self.memory_s >= self.compute_s else "compute"

    @property
    def kv_bytes_per_gpu(self) -> float:
        """The busiest GPU's users' cache (read each step, held in its pool)."""
        return self.kv_bytes_read_per_gpu

    @property
    def fits(self) -> bool:
        """Whether each GPU's share of the users fits its KV pool."""
        return self.kv_bytes_per_gpu <= self.kv_pool_bytes_per_gpu and self.kv_pool_bytes_per_gpu > 0


def _expert_bytes(model, precision: str) -> float:
    """One routed expert of every MoE layer at ``precision``: ``L_moe * P_e * b_w``."""
    return arch.moe_layers(model) * arch.expert_parameters(model) * bytes_per_value(precision)


def non_expert_bytes_read(model, tokens: float, precision: str) -> float:
    """Weights a pass over ``tokens`` tokens reads but for the routed experts: every rank's own
    copy of attention, dense layers, shared experts, head and the embedding rows it copies."""
    moe_spec = model.moe
    touched = moe.routed_experts_touched(moe_spec.experts, moe_spec.experts_per_token, tokens)
    return arch.weights_read_bytes(model, tokens, precision) - touched * _expert_bytes(model, precision)


def alltoall_s(hardware: Hardware, ep: int, tokens_per_gpu: float, bytes_per_token: float, layers: int) -> tuple:
    """``(seconds, NVLink bytes, RDMA bytes)`` of one pass's all-to-alls on one GPU sending
    ``tokens_per_gpu`` tokens: ``L_moe * (2 latency + max(nv / nv_rate, rdma / rdma_rate))``,
    at the best figures of the GPU's spec (``InterconnectSpec.alltoall_ceiling``). 0 on one GPU."""
    if ep == 1 or tokens_per_gpu <= 0:
        return 0.0, 0.0, 0.0
    link = hardware.gpu.interconnect
    best = link.alltoall_ceiling()
    sent = tokens_per_gpu * bytes_per_token * layers
    rdma = sent * moe.scale_out_share(ep, link.domain_gpus)
    nvlink = sent * moe.offrank_share(ep) - rdma
    seconds = layers * 2 * best.latency_s + max(nvlink / best.nvlink_bytes_per_s, rdma / best.rdma_bytes_per_s)
    return seconds, nvlink, rdma


def expert_step(hardware: Hardware, workload: Workload, layout: ExpertLayout) -> ExpertStep:
    """Time one decode step and the prefill of ``workload`` on ``layout.ep`` GPUs (``hardware``
    is one of them: its ``count`` is ignored), at the ceiling's costs. See the module docstring."""
    model = workload.model
    check_layout(model, layout)
    one = resolved(Hardware(hardware.gpu, 1, hardware.compute_precision, hardware.usable_fraction), workload)
    gpu, precision, ep, factor = one.gpu, workload.weight_precision, layout.ep, layout.imbalance
    spec = model.moe
    experts, k, layers = spec.experts, spec.experts_per_token, arch.moe_layers(model)
    batch = workload.batch
    users = batch / ep
    expert_bytes = _expert_bytes(model, precision)
    # Each rank holds (E + R) / G slots; the step reads at most those, and at least the mean
    # share of the distinct experts touched (a copy only splits an expert's tokens).
    local = (experts + layout.redundant) / ep
    touched = moe.routed_experts_touched(experts, k, batch)
    busiest = min(local, factor * touched / ep)
    weights_read = non_expert_bytes_read(model, users, precision) + busiest * expert_bytes
    kv_read = workload.kv_bytes_for(users)
    bandwidth = gpu.bandwidth_bytes_per_s
    peak = one.peak_flops_per_s
    routed_flops_per_token = layers * k * 2.0 * arch.expert_parameters(model)
    total_flops = batch * arch.decode_flops_per_token(model, workload.context)
    routed = batch * routed_flops_per_token
    flops = (total_flops - routed) / ep + factor * routed / ep
    per_token = moe.alltoall_bytes_per_token(model.hidden_size, k, layout.dispatch, layout.combine)
    a2a_s, nvlink, rdma = alltoall_s(one, ep, factor * users, per_token, layers)
    # Prefill of one prompt: its FLOPs spread over every GPU, each reading its copy of the
    # non-expert weights and the experts the prompt touches on it, the all-to-all overlapped.
    prompt = workload.prompt
    prefill_compute = arch.prefill_flops(model, prompt) / (ep * peak)
    prefill_touched = moe.routed_experts_touched(experts, k, prompt)
    prefill_memory = (
        non_expert_bytes_read(model, prompt, precision) + min(local, prefill_touched / ep) * expert_bytes
    ) / bandwidth
    prefill_a2a = alltoall_s(one, ep, prompt / ep, per_token, layers)[0]
    prefill_s = max(prefill_compute, prefill_memory, prefill_a2a) if prompt else 0.0
    prefill_bound = (
        "communication"
        if prefill_a2a > max(prefill_compute, prefill_memory)
        else "memory"
        if prefill_memory >= prefill_compute
        else "compute"
    )
    stored = arch.weight_bytes(model, precision) - experts * expert_bytes + local * expert_bytes  # its slots
    pool = one.kv_pool_bytes(stored)
    per_user = workload.kv_bytes_private
    room = pool - workload.kv_bytes_shared
    fit_users = (math.floor(room / per_user) if per_user > 0 else batch) if room > 0 else 0
    return ExpertStep(
        layout=layout,
        batch=batch,
        users_per_gpu=users,
        experts_touched_per_step=moe.experts_touched(experts, k, batch, spec.shared_experts),
        routed_experts_per_gpu=busiest,
        slots_per_gpu=local,
        tokens_per_expert=moe.tokens_per_expert(batch, k, experts),
        expert_critical_batch=moe.expert_critical_batch(critical_batch_for(one, precision), experts, k),
        moe_weight_bytes_read_per_step=weights_read,
        kv_bytes_read_per_gpu=kv_read,
        alltoall_bytes_per_token=per_token,
        alltoall_bytes_per_step=nvlink + rdma,
        alltoall_nvlink_bytes_per_step=nvlink,
        alltoall_rdma_bytes_per_step=rdma,
        alltoall_s=a2a_s,
        memory_s=(weights_read + kv_read) / bandwidth,
        compute_s=flops / peak,
        prefill_s=prefill_s,
        prefill_bound=prefill_bound,
        weights_bytes_per_gpu=stored,
        kv_pool_bytes_per_gpu=pool,
        max_batch_that_fits=fit_users * ep,
    )


def expert_dict(step: ExpertStep) -> dict:
    """The keys ``estimate --parallel ep --json`` adds or sets (README, "estimate --json")."""
    layout = step.layout
    return {
        "parallel": "ep",
        "ep": layout.ep,
        "expert_imbalance": layout.imbalance,
        "redundant_experts": layout.redundant,
        "expert_slots_per_gpu": step.slots_per_gpu,
        "dispatch_precision": layout.dispatch,
        "combine_precision": layout.combine,
        "experts_touched_per_step": step.experts_touched_per_step,
        "routed_experts_per_gpu": step.routed_experts_per_gpu,
        "tokens_per_expert": step.tokens_per_expert,
        "expert_critical_batch": step.expert_critical_batch,
        "moe_weight_bytes_read_per_step": step.moe_weight_bytes_read_per_step,
        "alltoall_bytes_per_token": step.alltoall_bytes_per_token,
        "alltoall_bytes_per_step": step.alltoall_bytes_per_step,
        "alltoall_nvlink_bytes_per_step": step.alltoall_nvlink_bytes_per_step,
        "alltoall_rdma_bytes_per_step": step.alltoall_rdma_bytes_per_step,
        "alltoall_s": step.alltoall_s,
        "weights_bytes_per_gpu": step.weights_bytes_per_gpu,
        "kv_bytes_per_gpu": step.kv_bytes_per_gpu,
        "kv_pool_bytes_per_gpu": step.kv_pool_bytes_per_gpu,
        "fits": step.fits,
        "max_batch_that_fits": step.max_batch_that_fits,
        "decode_step_s": step.step_s,
        "decode_memory_s": step.memory_s,
        "decode_compute_s": step.compute_s,
        "decode_bound": step.bound,
        "decode_tokens_per_s_per_user": 1.0 / step.step_s,
        "decode_tokens_per_s_total": step.batch / step.step_s,
        "communication_s": step.alltoall_s,
        "allreduces_per_step": 0,
        "allreduce_bytes": 0,
        "allreduce_latency_s": 0.0,
        "attention_dp": True,
        "kv_copies": 1.0,
        "prefill_s": step.prefill_s,
        "prefill_bound": step.prefill_bound,
    }


def expert_report(figures: dict) -> str:
    """``estimate --parallel ep``'s text: the step on the busiest GPU and where its time goes."""
    f = figures
    lines = [
        f"{f['model']} on {f['gpus']:,} x {f['gpu']}, EP{f['ep']} (data-parallel attention),"
        f" {f['weight_precision']} weights, batch {f['batch']:,}, context {f['context']:,}",
        f"  expert imbalance {f['expert_imbalance']:g} (busiest rank over the mean; 1 = uniform routing)",
        f"  experts touched a layer   {f['experts_touched_per_step']:,.1f} (routed + shared)",
        f"  tokens per expert         {f['tokens_per_expert']:,.2f}"
        f" (compute-bound from a batch of {f['expert_critical_batch']:,.0f})",
        f"  weights read per GPU      {f['moe_weight_bytes_read_per_step'] / 1e9:,.2f} GB a step"
        f" ({f['routed_experts_per_gpu']:,.2f} routed experts a layer on the busiest GPU)",
        f"  all-to-all per GPU        {f['alltoall_bytes_per_step'] / 1e6:,.2f} MB a step"
        f" ({f['alltoall_nvlink_bytes_per_step'] / 1e6:,.2f} NVLink, {f['alltoall_rdma_bytes_per_step'] / 1e6:,.2f}"
        f" RDMA), {f['alltoall_s'] * 1e3:,.3f} ms",
        f"  decode step               {f['decode_step_s'] * 1e3:,.3f} ms ({f['decode_bound']}-bound;"
        f" memory {f['decode_memory_s'] * 1e3:,.3f} ms, compute {f['decode_compute_s'] * 1e3:,.3f} ms,"
        " all-to-all overlapped)",
        f"  decode                    {f['decode_tokens_per_s_per_user']:,.1f} tokens/s per user,"
        f" {f['decode_tokens_per_s_total']:,.0f} in total (ceiling)",
        f"  weights per GPU           {f['weights_bytes_per_gpu'] / 1e9:,.1f} GB;"
        f" {'fits' if f['fits'] else 'does not fit'} (at most {f['max_batch_that_fits']:,} users)",
    ]
    if f["prompt"]:
        lines.append(f"  prefill ({f['prompt']:,} tokens)  {f['prefill_s'] * 1e3:,.2f} ms ({f['prefill_bound']}-bound)")
    return "\n".join(lines) + "\n"
