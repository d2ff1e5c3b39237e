"""Expert parallelism: a mixture of experts spread over G GPUs, attention beside it data-parallel or
tensor-parallel in groups.

The layout DeepSeek, SGLang and TensorRT-LLM serve DeepSeek-V3 in: each of the G GPUs holds
(E+R)/G of every MoE layer's expert slots (R redundant copies of hot experts, 0 by default),
and everything else (attention, dense layers, shared experts, embedding, head) is held by
attention groups of T GPUs (``attention_tp``): T = 1 is data-parallel attention, each GPU a
whole copy and the cache of its own B/G users (``--parallel ep``); T > 1 splits those layers
over the group as tensor parallelism does, and the group's B T/G users' cache with them
(``--parallel tpxep --tp T``), so a latent (MLA) cache, which every head needs, sits whole on
each of the T GPUs (``performance.kv_copies``). Every MoE layer sends each token's hidden vector
to the ranks of its E_tok experts (dispatch) and brings the E_tok outputs back (combine).
Formulas are ``roofline.moe``'s; this module times one iteration of n tokens (``ExpertCosts``),
the step the estimate prints and every iteration the simulator runs alike.

One iteration on the busiest GPU (imbalance F = busiest rank's routed tokens over the mean):

- weights read = the non-expert weights for its group's n T/G tokens, over T, + ``min((E+R)/G,
  F * D(n)/G)`` routed experts of every MoE layer, ``D(n) = E (1 - (1 - E_tok/E)^n)``
  (``moe.routed_experts_touched``);
- cache read = its group's users' cache, over T, times the copies T GPUs keep (``kv_copies``);
- FLOPs = (all FLOPs of the iteration less the routed experts') / G + the routed experts' * F / G;
- all-to-all = per MoE layer, its ``F * n/G`` tokens, each sent once to every destination its
  E_tok experts reach, ``d (b_d + b_c)`` bytes a destination (``moe.destinations_per_token``):
  over the network one copy per remote node (at most the model's node limit), over NVLink one per
  other GPU of its own scale-up domain of D GPUs; the least any correct all-to-all moves, as
  DeepEP's normal kernels send a token once a node and forward it inside the node.
  ``alltoall_s = L_moe * (2 latency + max(NVLink bytes / NVLink rate, RDMA bytes / RDMA rate))``
  at the best figures the GPU's spec gives (``InterconnectSpec.alltoall_ceiling``);
- T > 1: ``2L`` all-reduces of the group's n T/G tokens over its T GPUs, each
  ``latency + n T/G * d * 2 * performance.allreduce_wire``: a ring inside one domain; past one
  domain the cheaper of a flat ring over the network and NCCL's two-level (hierarchical) bound,
  ``max(2 (D-1)/D * S / NVLink, 2 (N-1)/N * S / D / network)``, N nodes, the one formula
  tensor parallelism uses too.

The ceiling overlaps the all-to-all with the math (two micro-batches, as DeepSeek's and SGLang's
engines run): an iteration takes ``max(memory_s, compute_s, alltoall_s) + all-reduces``
(``Pass.overlapped_s``). A prefill's FLOPs spread over all G GPUs, which no engine beats
(attention of one request runs on its own group). The cost model's fitted shares and
overheads apply as to any pass (``--costs expected``); dequantization is not charged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

from . import architecture as arch
from . import moe
from .errors import SpecError
from .performance import (
    ALLREDUCES_PER_LAYER,
    Hardware,
    IterationCosts,
    Pass,
    Workload,
    allreduce_bytes,
    context_serial_s,
    iteration_costs,
    kv_copies,
    resolved,
)
from .precisions import bytes_per_value
from .quantization import critical_batch_for

#: The ``--parallel`` values that spread a mixture of experts' experts over the GPUs.
EXPERT_PARALLEL = ("ep", "tpxep")


@dataclass(frozen=True)
class ExpertLayout:
    """``ep`` GPUs, each one expert-parallel rank; attention data-parallel (``attention_tp`` 1)
    or tensor-parallel over groups of ``attention_tp`` GPUs; the busiest rank gets
    ``imbalance`` times the mean routed tokens; the all-to-all sends at ``dispatch`` and brings
    back at ``combine`` precision."""

    ep: int
    imbalance: float = moe.DEFAULT_EXPERT_IMBALANCE
    dispatch: str = moe.DEFAULT_DISPATCH_PRECISION
    combine: str = moe.DEFAULT_COMBINE_PRECISION
    #: Extra expert slots holding copies of hot experts (DeepSeek's 32, EPLB's redundant experts).
    redundant: int = 0
    #: GPUs one attention group splits attention over: 1 is data-parallel attention.
    attention_tp: int = 1

    @property
    def attention_groups(self) -> int:
        """Data-parallel attention groups: ``G / T``."""
        return self.ep // self.attention_tp

    @property
    def label(self) -> str:
        """``ep`` or ``tpxep``, the ``--parallel`` value that gives this layout."""
        return "ep" if self.attention_tp == 1 else "tpxep"

    @property
    def attention_words(self) -> str:
        """What attention each GPU runs, in words, for the report."""
        if self.attention_tp == 1:
            return "data-parallel attention: each GPU its own users' attention and cache"
        return (
            f"attention tensor-parallel over {self.attention_tp:,} GPUs, {self.attention_groups:,}"
            " data-parallel groups: each GPU a share of its group's heads"
        )


def check_layout(model, layout: ExpertLayout) -> None:
    """SpecError, in one line, for a layout the model cannot take: a dense model, an EP size
    the experts do not divide or that exceeds them, an imbalance below 1, an unknown precision,
    an attention group the GPUs do not divide or the heads cannot fill."""
    if model.moe is None:
        raise SpecError(
            f"{model.id} is a dense model: it has no experts to spread",
            field="parallel",
            hint="use --parallel tp (or pp, tpxpp) for a dense model, or pick a mixture of experts",
        )
    moe.check_ep(model.moe.experts, layout.ep, redundant=layout.redundant)
    moe.check_imbalance(layout.imbalance)
    moe.alltoall_bytes_per_token(model.hidden_size, model.moe.experts_per_token, layout.dispatch, layout.combine)
    tp = layout.attention_tp
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise SpecError(f"must be a whole number, at least 1, got {tp!r}", field="tp")
    if layout.ep % tp:
        divisors = [n for n in range(1, layout.ep + 1) if layout.ep % n == 0]
        near = sorted(sorted(divisors, key=lambda n: (abs(n - tp), n))[:3])
        raise SpecError(
            f"{tp:,} GPUs an attention group do not divide the {layout.ep:,} GPUs",
            field="tp",
            hint="choose a divisor of --gpus: " + ", ".join(f"{n:,}" for n in near),
        )
    if tp > model.attention_heads:
        raise SpecError(
            f"{model.id} has {model.attention_heads:,} attention heads, none to split over {tp:,} GPUs each",
            field="tp",
            hint=f"give --tp {model.attention_heads:,} or less, or --parallel ep (data-parallel attention)",
        )


def _expert_bytes(model, precision: str) -> float:
    """One routed expert of every MoE layer at ``precision``: ``L_moe * P_e * b_w``."""
    return arch.moe_layers(model) * arch.expert_parameters(model) * bytes_per_value(precision)


def non_expert_bytes_read(model, tokens: float, precision: str) -> float:
    """Weights a pass over ``tokens`` tokens reads but for the routed experts: every rank's own
    copy of attention, dense layers, shared experts, head and the embedding rows it copies."""
    moe_spec = model.moe
    touched = moe.routed_experts_touched(moe_spec.experts, moe_spec.experts_per_token, tokens)
    return arch.weights_read_bytes(model, tokens, precision) - touched * _expert_bytes(model, precision)


def alltoall_s(hardware: Hardware, ep: int, tokens_per_gpu: float, bytes_per_token: float, layers: int, model) -> tuple:
    """``(seconds, NVLink bytes, RDMA bytes)`` of one pass's all-to-alls on one GPU sending
    ``tokens_per_gpu`` tokens whose E_tok expert copies carry ``bytes_per_token`` a layer:
    ``L_moe * (2 latency + max(nv / nv_rate, rdma / rdma_rate))``, at the best figures of the
    GPU's spec (``InterconnectSpec.alltoall_ceiling``) times the cost model's link share (1 for
    the ceiling). 0 on one GPU.

    The bytes are the least any correct all-to-all moves, one copy per destination rather than per
    expert copy (``moe.destinations_per_token``, ``model``'s experts and node limit): over the
    network one copy per remote node a token reaches (DeepEP's normal kernels send it once a node
    and forward it over NVLink inside), over NVLink one per other GPU of its own node."""
    if ep == 1 or tokens_per_gpu <= 0:
        return 0.0, 0.0, 0.0
    link = hardware.gpu.interconnect
    best = link.alltoall_ceiling()
    share = hardware.costs.link_efficiency
    spec = model.moe
    remote, local = moe.destinations_per_token(
        spec.experts, spec.experts_per_token, ep, link.domain_gpus, spec.node_limit
    )
    per_copy = tokens_per_gpu * bytes_per_token / spec.experts_per_token * layers
    rdma = per_copy * remote
    nvlink = per_copy * local
    seconds = layers * 2 * best.latency_s + max(
        nvlink / (share * best.nvlink_bytes_per_s), rdma / (share * best.rdma_bytes_per_s)
    )
    return seconds, nvlink, rdma


def group_allreduce(hardware: Hardware, model, tp: int) -> tuple[float, float]:
    """``(latency, seconds per token)`` of one all-reduce over an attention group of ``tp`` GPUs:
    0 for one GPU; else ``performance.allreduce_wire``'s seconds a byte (a ring inside one domain,
    past it the cheaper of a flat ring and the two-level bound) times one token's message."""
    if tp == 1:
        return 0.0, 0.0
    group = replace(hardware, count=tp)
    return group.allreduce_latency, allreduce_bytes(model, 1) * group.allreduce_wire[0]


@dataclass(frozen=True)
class ExpertCosts:
    """What one serving iteration costs on the busiest GPU of an expert-parallel layout: the
    interface of ``performance.IterationCosts`` (``iteration``, ``prefill``,
    ``kv_bytes_per_token``, ``swap_seconds``), so ``serving`` schedules it as any other layout.
    ``one`` is the whole model's costs on one GPU at the cost model's shares; the layout's
    shares of it are the module docstring's."""

    one: IterationCosts
    layout: ExpertLayout
    #: The busiest GPU's stored weights, its KV pool, and what one cached token takes on it.
    weights_bytes_per_gpu: float
    kv_pool_bytes_per_gpu: float
    kv_bytes_per_token_per_gpu: float
    #: Share of its group's cache each GPU holds: ``kv_copies(T) / T`` (1/T split heads, 1 a latent).
    kv_share: float
    #: Bytes of one routed expert of every MoE layer; what a token sends through one MoE layer.
    expert_bytes: float
    alltoall_bytes_per_token: float
    routed_flops_per_token: float
    #: One GPU's link to host memory (None: the spec has none).
    host_link_bytes_per_s: float | None
    hardware: Hardware
    allreduce_latency_s: float = 0.0
    allreduce_s_per_token: float = 0.0

    @property
    def model(self):
        """The model served (``one.model``)."""
        return self.one.model

    @property
    def kv_bytes_per_token(self) -> float:
        """KV bytes one cached token takes over every GPU that holds it (copies counted)."""
        return self.kv_bytes_per_token_per_gpu * self.layout.attention_tp

    @property
    def slots_per_gpu(self) -> float:
        """Expert slots of a layer on each GPU: ``(E + R) / G``."""
        return (self.model.moe.experts + self.layout.redundant) / self.layout.ep

    @cached_property
    def kv_blocks(self) -> int:
        """16-token KV blocks the deployment holds: every attention group's pool, each GPU's
        ``floor(pool / (16 * its bytes a cached token))``, times the groups (each group its own
        users). SpecError when the weights leave no room."""
        per_block = 16 * self.kv_bytes_per_token_per_gpu
        blocks = math.floor(self.kv_pool_bytes_per_gpu / per_block) if per_block > 0 else 0
        if blocks < 1:
            raise SpecError(
                f"the weights ({self.weights_bytes_per_gpu / 1e9:,.1f} GB a GPU) leave no room for a KV cache",
                field="gpus",
                hint="add GPUs or use a smaller weight precision",
            )
        return blocks * self.layout.attention_groups

    def routed_experts_on_busiest(self, tokens: float) -> float:
        """Routed experts of a layer the busiest GPU runs: ``min((E+R)/G, F D(n) / G)``."""
        spec, layout = self.model.moe, self.layout
        touched = moe.routed_experts_touched(spec.experts, spec.experts_per_token, tokens)
        return min(self.slots_per_gpu, layout.imbalance * touched / layout.ep)

    def weights_read(self, tokens: float) -> float:
        """Weight bytes the busiest GPU reads in an iteration of ``tokens`` tokens."""
        layout = self.layout
        group_tokens = tokens / layout.attention_groups
        shared = non_expert_bytes_read(self.model, group_tokens, self.one.weight_precision) / layout.attention_tp
        return shared + self.routed_experts_on_busiest(tokens) * self.expert_bytes

    def alltoall(self, tokens: float) -> tuple[float, float, float]:
        """``(seconds, NVLink bytes, RDMA bytes)`` the busiest GPU's all-to-alls take for ``tokens``."""
        layout = self.layout
        return alltoall_s(
            self.hardware,
            layout.ep,
            layout.imbalance * tokens / layout.ep,
            self.alltoall_bytes_per_token,
            arch.moe_layers(self.model),
            self.model,
        )

    def iteration(
        self,
        decodes: float,
        decode_context: float,
        prefill_tokens: float = 0,
        prefill_cached: float = 0,
        prefill_pairs: float = 0,
        prompts_finished: float = 0,
    ) -> Pass:
        """The iteration's ``Pass`` on the busiest GPU; ``seconds`` is
        ``max(memory, compute, all-to-all) + all-reduces + overheads``."""
        tokens = decodes + prefill_tokens
        if tokens == 0:
            return Pass(0.0, 0.0, 0.0, 0.0)
        one, layout = self.one, self.layout
        groups, ep = layout.attention_groups, layout.ep
        whole = one.iteration(decodes, decode_context, prefill_tokens, prefill_cached, prefill_pairs, prompts_finished)
        cached = decode_context + prefill_cached + prefill_tokens
        kv_read = self.kv_bytes_per_token_per_gpu * cached / groups
        bytes_moved = self.weights_read(tokens) + kv_read
        routed = tokens * self.routed_flops_per_token
        flops = (whole.flops - routed) / ep + layout.imbalance * routed / ep
        group_tokens = tokens / groups
        allreduce_s = (
            ALLREDUCES_PER_LAYER
            * self.model.layers
            * (self.allreduce_latency_s + self.allreduce_s_per_token * group_tokens)
            if layout.attention_tp > 1
            else 0.0
        )
        memory_s, compute_s = bytes_moved / one.bandwidth_bytes_per_s, flops / one.peak_flops_per_s
        overhead_s = one.overhead_s + one.token_overhead_s * (decodes + prompts_finished) / groups
        if not decodes:
            overhead_s += context_serial_s(one.context_serial_share, memory_s, compute_s)
        return Pass(bytes_moved, flops, memory_s, compute_s, allreduce_s, overhead_s, 0.0, self.alltoall(tokens)[0])

    def prefill(self, tokens: int, cached: float = 0, *, decodes: int = 0, decode_context: float = 0) -> Pass:
        """``tokens`` prompt tokens after ``cached`` ones, beside ``decodes`` decoding users, as one iteration."""
        pairs = tokens * cached + tokens * (tokens + 1) / 2
        return self.iteration(decodes, decode_context, tokens, cached, pairs, 1)

    def prefill_tokens_per_s(self, prompt: int) -> float:
        """The most prompt tokens a second the G GPUs prefill in batches of ``prompt``-token
        prompts, over every batch size: ``P / (max(compute, all-to-all) + all-reduces)`` of one
        prompt's share of a batch. A batch of n prompts costs n times one prompt's math,
        all-to-all bytes and all-reduce bytes (each prompt attends only to itself), while the
        weights, the fixed latencies and the overheads are paid once a batch and vanish per
        prompt as n grows, so this limit bounds every batch's throughput (the one-prompt
        ``prefill`` is a latency, not a throughput: it pays all of them for one prompt)."""
        if prompt < 1:
            return 0.0
        one = self.prefill(prompt)
        model, layout = self.model, self.layout
        # The all-to-all's bytes alone, its fixed latencies left out (paid once a batch).
        link = self.hardware.gpu.interconnect
        latency = 2 * arch.moe_layers(model) * link.alltoall_ceiling().latency_s if layout.ep > 1 else 0.0
        alltoall = max(0.0, one.overlapped_s - latency)
        allreduces = ALLREDUCES_PER_LAYER * model.layers * self.allreduce_s_per_token * prompt / layout.attention_groups
        per_prompt = max(one.compute_s, alltoall) + allreduces
        return prompt / per_prompt if per_prompt > 0 else math.inf

    def swap_seconds(self, tokens: int) -> float:
        """Time to copy ``tokens`` tokens of cache one way: each GPU copies its share over its
        own host link, ``tokens * per-GPU bytes / groups / host link``."""
        if self.host_link_bytes_per_s is None:
            return self.one.swap_seconds(tokens)  # its one-line error
        return tokens * self.kv_bytes_per_token_per_gpu / self.layout.attention_groups / self.host_link_bytes_per_s

    def figures(self, tokens: float) -> dict[str, float]:
        """The expert-parallel keys of an iteration of ``tokens`` tokens (README, "EP keys")."""
        spec = self.model.moe
        seconds, nvlink, rdma = self.alltoall(tokens)
        return {
            "experts_touched_per_step": moe.experts_touched(
                spec.experts, spec.experts_per_token, tokens, spec.shared_experts
            ),
            "tokens_per_expert": moe.tokens_per_expert(tokens, spec.experts_per_token, spec.experts),
            "routed_experts_per_gpu": self.routed_experts_on_busiest(tokens),
            "moe_weight_bytes_read_per_step": self.weights_read(tokens),
            "alltoall_bytes_per_step": nvlink + rdma,
            "alltoall_nvlink_bytes_per_step": nvlink,
            "alltoall_rdma_bytes_per_step": rdma,
            "alltoall_s": seconds,
        }


def expert_costs(hardware: Hardware, workload: Workload, layout: ExpertLayout) -> ExpertCosts:
    """``ExpertCosts`` of ``workload.model`` at its precisions on ``layout.ep`` GPUs of
    ``hardware.gpu`` (``hardware.count`` is ignored), at ``hardware.costs``."""
    model = workload.model
    check_layout(model, layout)
    one_gpu = resolved(replace(hardware, count=1, attention_dp=False), workload)
    one = iteration_costs(one_gpu, workload)
    precision, tp = workload.weight_precision, layout.attention_tp
    expert_bytes = _expert_bytes(model, precision)
    slots = (model.moe.experts + layout.redundant) / layout.ep
    shared = arch.weight_bytes(model, precision) - model.moe.experts * expert_bytes
    stored = shared / tp + slots * expert_bytes
    copies = kv_copies(replace(one_gpu, count=tp), model)
    latency, per_token = group_allreduce(one_gpu, model, tp)
    # Each token runs E_tok routed experts of every MoE layer, 2 FLOPs a weight.
    routed_flops = 2.0 * arch.moe_layers(model) * model.moe.experts_per_token * arch.expert_parameters(model)
    return ExpertCosts(
        one=one,
        layout=layout,
        weights_bytes_per_gpu=stored,
        kv_pool_bytes_per_gpu=one_gpu.kv_pool_bytes(stored),
        kv_bytes_per_token_per_gpu=workload.kv_bytes_per_token * copies / tp,
        kv_share=copies / tp,
        expert_bytes=expert_bytes,
        alltoall_bytes_per_token=moe.alltoall_bytes_per_token(
            model.hidden_size, model.moe.experts_per_token, layout.dispatch, layout.combine
        ),
        routed_flops_per_token=routed_flops,
        host_link_bytes_per_s=one_gpu.gpu.host_link_bytes_per_s,
        hardware=one_gpu,
        allreduce_latency_s=latency,
        allreduce_s_per_token=per_token,
    )


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
    allreduce_s: float = 0.0
    overhead_s: float = 0.0
    kv_copies: float = 1.0
    layers: int = 0
    allreduce_bytes: float = 0.0
    allreduce_latency_s: float = 0.0
    #: How an attention group's all-reduce is charged (``performance.allreduce_wire``); None at T = 1.
    allreduce_accounting: str | None = None
    #: Prompt tokens a second the G GPUs prefill at most in batches (``prefill_tokens_per_s``).
    prefill_tokens_per_s: float = 0.0

    @property
    def step_s(self) -> float:
        """``max(memory_s, compute_s, alltoall_s) + all-reduces (+ overheads)``: the all-to-all
        overlaps the math; an attention group's all-reduces do not."""
        return max(self.memory_s, self.compute_s, self.alltoall_s) + self.allreduce_s + self.overhead_s

    @property
    def bound(self) -> str:
        """What sets the step: ``memory``, ``compute`` or ``communication``."""
        if max(self.alltoall_s, self.allreduce_s) > max(self.memory_s, self.compute_s):
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


def _bound(timed: Pass) -> str:
    if max(timed.overlapped_s, timed.communication_s) > max(timed.memory_s, timed.compute_s):
        return "communication"
    return timed.bound


def expert_step(hardware: Hardware, workload: Workload, layout: ExpertLayout) -> ExpertStep:
    """Time one decode step and the prefill of ``workload`` on ``layout.ep`` GPUs (``hardware``
    is one of them: its ``count`` is ignored), at ``hardware.costs``: ``ExpertCosts`` for an
    iteration of the batch's decodes, and one of the prompt alone. See the module docstring."""
    costs = expert_costs(hardware, workload, layout)
    model = workload.model
    spec = model.moe
    batch = workload.batch
    groups, tp = layout.attention_groups, layout.attention_tp
    step = costs.iteration(batch, batch * workload.context)
    figures = costs.figures(batch)
    prompt = workload.prompt
    prefill = costs.prefill(prompt) if prompt else Pass(0.0, 0.0, 0.0, 0.0)
    per_user = workload.kv_bytes_private * costs.kv_share
    room = costs.kv_pool_bytes_per_gpu
    fit_users = (math.floor(room / per_user) if per_user > 0 else batch) if room > 0 else 0
    return ExpertStep(
        layout=layout,
        batch=batch,
        users_per_gpu=batch / layout.ep,
        experts_touched_per_step=figures["experts_touched_per_step"],
        routed_experts_per_gpu=figures["routed_experts_per_gpu"],
        slots_per_gpu=costs.slots_per_gpu,
        tokens_per_expert=figures["tokens_per_expert"],
        expert_critical_batch=moe.expert_critical_batch(
            critical_batch_for(costs.hardware, workload.weight_precision), spec.experts, spec.experts_per_token
        ),
        moe_weight_bytes_read_per_step=figures["moe_weight_bytes_read_per_step"],
        kv_bytes_read_per_gpu=workload.kv_bytes_for(batch) * costs.kv_share / groups,
        alltoall_bytes_per_token=costs.alltoall_bytes_per_token,
        alltoall_bytes_per_step=figures["alltoall_bytes_per_step"],
        alltoall_nvlink_bytes_per_step=figures["alltoall_nvlink_bytes_per_step"],
        alltoall_rdma_bytes_per_step=figures["alltoall_rdma_bytes_per_step"],
        alltoall_s=figures["alltoall_s"],
        memory_s=step.memory_s,
        compute_s=step.compute_s,
        prefill_s=prefill.seconds,
        prefill_bound=_bound(prefill),
        weights_bytes_per_gpu=costs.weights_bytes_per_gpu,
        kv_pool_bytes_per_gpu=room,
        max_batch_that_fits=fit_users * groups,
        allreduce_s=step.communication_s,
        overhead_s=step.overhead_s,
        kv_copies=costs.kv_share * tp,
        layers=model.layers,
        allreduce_bytes=allreduce_bytes(model, batch / groups),
        allreduce_latency_s=costs.allreduce_latency_s,
        allreduce_accounting=replace(costs.hardware, count=tp).allreduce_wire[1] if tp > 1 else None,
        prefill_tokens_per_s=costs.prefill_tokens_per_s(prompt) if prompt else 0.0,
    )


def layout_keys(layout: ExpertLayout) -> dict:
    """The layout's facts, the keys every expert-parallel JSON starts with (estimate and simulate)."""
    return {
        "parallel": layout.label,
        "ep": layout.ep,
        "tp": layout.attention_tp,
        "attention_groups": layout.attention_groups,
        "attention_layout": layout.attention_words,
        "expert_imbalance": layout.imbalance,
        "redundant_experts": layout.redundant,
        "dispatch_precision": layout.dispatch,
        "combine_precision": layout.combine,
    }


def expert_dict(step: ExpertStep) -> dict:
    """The keys ``estimate --parallel ep|tpxep --json`` adds or sets (README, "estimate --json")."""
    layout = step.layout
    return {
        **layout_keys(layout),
        "expert_slots_per_gpu": step.slots_per_gpu,
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
        "communication_s": step.alltoall_s + step.allreduce_s,
        "allreduces_per_step": 0 if layout.attention_tp == 1 else ALLREDUCES_PER_LAYER * step.layers,
        "allreduce_bytes": 0 if layout.attention_tp == 1 else step.allreduce_bytes,
        "allreduce_latency_s": step.allreduce_latency_s,
        "allreduce_accounting": step.allreduce_accounting,
        "attention_dp": layout.attention_tp == 1,
        "kv_copies": step.kv_copies,
        "prefill_s": step.prefill_s,
        "prefill_bound": step.prefill_bound,
        "prefill_basis": PREFILL_BASIS,
        "prefill_tokens_per_s": step.prefill_tokens_per_s,
    }


#: What ``prefill_s`` and ``prefill_tokens_per_s`` of an expert-parallel estimate are, for the JSON.
PREFILL_BASIS = (
    "prefill_s is one prompt alone on all the GPUs, a latency (time to first token at no load), not a"
    " throughput; prefill_tokens_per_s is the most prompt tokens a second the GPUs prefill in batches"
    " of such prompts, any batch size (weights, latencies and overheads paid once a batch)"
)


def expected_dict(step: ExpertStep) -> dict:
    """``estimate --costs expected``'s ``expected`` keys for an expert-parallel step, the
    tensor-parallel estimate's names, plus the band's names (``BAND_METRICS``) for ``ep_band``."""
    return {
        "decode_step_s": step.step_s,
        "decode_tokens_per_s_per_user": 1.0 / step.step_s,
        "decode_tokens_per_s_total": step.batch / step.step_s,
        "prefill_s": step.prefill_s,
        "prefill_tokens_per_s": step.prefill_tokens_per_s,
        "communication_s": step.alltoall_s + step.allreduce_s,
        "overhead_s": step.overhead_s,
        "alltoall_s": step.alltoall_s,
        "throughput_tokens_per_s": step.batch / step.step_s,
        "ttft_mean_s": step.prefill_s or None,
        "itl_mean_s": step.step_s,
        "tpot_mean_s": step.step_s,
    }


#: How far the band of an expected expert-parallel figure is widened, since no expert-parallel run
#: is in the fit: the busiest rank's load over the mean that TensorRT-LLM measured on DeepSeek-R1 at
#: EP32 without a load balancer (``moe.MEASURED_IMBALANCE_NO_EPLB``), the slowdown an expected
#: figure at uniform routing cannot see. Throughput's low end is divided by it, the times' high ends
#: multiplied.
EP_BAND_WIDENING = moe.MEASURED_IMBALANCE_NO_EPLB
#: What the JSON's ``band_basis`` and the report say of that band.
EP_BAND_BASIS = (
    f"unfitted: band widened; no expert-parallel run is in the fit, so the dense fit's 80% band"
    f" is widened by the measured expert imbalance {EP_BAND_WIDENING:g} (TensorRT-LLM, DeepSeek-R1, EP32,"
    " no load balancer) on the slow side"
)


def widened(calibration):
    """``calibration`` with its band widened for an expert-parallel figure (``EP_BAND_WIDENING``):
    throughput's low end divided by it, each time's high end multiplied; the fitted costs unchanged."""
    band = {
        metric: (low / EP_BAND_WIDENING, high) if metric.startswith("throughput") else (low, high * EP_BAND_WIDENING)
        for metric, (low, high) in calibration.band.items()
    }
    return replace(calibration, band=band)


def ep_band(calibration, figures: dict, ceilings: dict | None = None) -> dict:
    """``{"band": ..., "band_basis": ...}``: the widened calibration's (``widened``) band of
    ``figures`` (by the band's names, ``calibration.BAND_METRICS``), each held within its figure in
    ``ceilings`` (``calibration.within_ceiling``), and what it rests on."""
    basis = EP_BAND_BASIS
    if calibration.unfitted:
        # Grounded first (calibration.expected_costs): say why the dense band was already wider.
        basis += "; the dense band was already widened: " + "; ".join(calibration.unfitted)
    return {"band": widened(calibration).bands(figures, ceilings), "band_basis": basis}


#: The expert-parallel keys a simulation gives as means over its iterations (``ExpertCosts.figures``).
SIMULATED_KEYS = (
    "experts_touched_per_step",
    "tokens_per_expert",
    "routed_experts_per_gpu",
    "moe_weight_bytes_read_per_step",
    "alltoall_bytes_per_step",
    "alltoall_nvlink_bytes_per_step",
    "alltoall_rdma_bytes_per_step",
    "alltoall_s",
)


def simulated_expert_figures(costs: ExpertCosts, sizes: dict[int, int]) -> dict:
    """The expert-parallel keys of a simulated run: each ``ExpertCosts.figures`` key's mean over
    the run's iterations (``sizes``: tokens -> iterations of that size), every iteration weighted
    once, and the layout's facts beside them (``simulate --parallel ep|tpxep --json``)."""
    layout = costs.layout
    iterations = sum(sizes.values())
    means = dict.fromkeys(SIMULATED_KEYS, 0.0)
    tokens = 0.0
    for size in sorted(sizes):  # a fixed order: the same floats on every run
        count = sizes[size]
        tokens += size * count
        for key, value in costs.figures(size).items():
            means[key] += value * count
    if iterations:
        means = {key: value / iterations for key, value in means.items()}
    return {
        **layout_keys(layout),
        "weights_bytes_per_gpu": costs.weights_bytes_per_gpu,
        "kv_pool_bytes_per_gpu": costs.kv_pool_bytes_per_gpu,
        "kv_copies": costs.kv_share * layout.attention_tp,
        "expert_means": {
            "over": "the run's iterations, each once",
            "iterations": iterations,
            "tokens_per_iteration": tokens / iterations if iterations else 0.0,
            **means,
        },
    }


def expert_simulation_lines(figures: dict) -> str:
    """``simulate --parallel ep|tpxep``'s lines on the layout: attention, cache, the means."""
    f, means = figures, figures["expert_means"]
    return (
        "\n".join(
            [
                f"expert parallelism: EP{f['ep']}, {f['attention_layout']}",
                f"  KV cache: {f['kv_blocks']:,} blocks of 16 tokens over the {f['attention_groups']:,} attention"
                f" group(s), {f['kv_pool_bytes_per_gpu'] / 1e9:,.1f} GB a GPU beside"
                f" {f['weights_bytes_per_gpu'] / 1e9:,.1f} GB of weights; each cached token kept"
                f" {f['kv_copies']:g} time(s)",
                f"  means over {means['iterations']:,} iterations: {means['tokens_per_iteration']:,.1f} tokens,"
                f" {means['experts_touched_per_step']:,.1f} experts touched a layer, {means['tokens_per_expert']:,.2f}"
                f" tokens per expert, {means['moe_weight_bytes_read_per_step'] / 1e9:,.2f} GB of weights read on the"
                f" busiest GPU, all-to-all {means['alltoall_bytes_per_step'] / 1e6:,.2f} MB in"
                f" {means['alltoall_s'] * 1e3:,.3f} ms",
            ]
        )
        + "\n"
    )


def expert_report(figures: dict) -> str:
    """``estimate --parallel ep|tpxep``'s text: the step on the busiest GPU and where its time goes."""
    f = figures
    layout = "data-parallel attention" if f["tp"] == 1 else f"attention TP{f['tp']} x {f['attention_groups']:,} groups"
    lines = [
        f"{f['model']} on {f['gpus']:,} x {f['gpu']}, EP{f['ep']} ({layout}),"
        f" {f['weight_precision']} weights, batch {f['batch']:,}, context {f['context']:,}",
        f"  attention                 {f['attention_layout']}",
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
        f" {'fits' if f['fits'] else 'does not fit'} (at most {f['max_batch_that_fits']:,} users:"
        f" KV pool {f['kv_pool_bytes_per_gpu'] / 1e9:,.1f} GB a GPU, each cached token kept {f['kv_copies']:g}"
        " time(s))",
    ]
    if f["prompt"]:
        lines.append(
            f"  prefill ({f['prompt']:,} tokens)  {f['prefill_s'] * 1e3:,.2f} ms ({f['prefill_bound']}-bound)"
            " for one prompt alone: a latency, not a throughput"
        )
        lines.append(
            f"  prefill, batched          at most {f['prefill_tokens_per_s']:,.0f} prompt tokens/s over the"
            f" {f['ep']:,} GPUs in batches of such prompts (ceiling)"
        )
    expected = f.get("expected")
    if expected:
        band = f["band"]
        low, high = band["throughput_tokens_per_s"]
        lines.append(
            f"  expected decode           {expected['decode_tokens_per_s_total']:,.0f} tokens/s in total"
            f" (band {low:,.0f} to {high:,.0f}); {expected['decode_step_s'] * 1e3:,.3f} ms a step"
        )
        if band.get("ttft_mean_s"):
            ttft_low, ttft_high = band["ttft_mean_s"]
            lines.append(
                f"  expected prefill          {expected['prefill_s'] * 1e3:,.2f} ms"
                f" (band {ttft_low * 1e3:,.2f} to {ttft_high * 1e3:,.2f} ms)"
            )
        lines.append(f"  expected band             {f['band_basis']}")
    return "\n".join(lines) + "\n"
