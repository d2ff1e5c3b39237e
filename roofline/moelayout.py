"""Which GPU layouts serve a mixture of experts: the formulas of "Mixture of Experts and Expert Parallelism".

Two ways to put a mixture of experts on G GPUs, each timed at the ceiling's costs by the
package's own layouts (nothing is re-derived here):

- **TP-G**: every layer split over the G GPUs, experts included (``deployment.deploy`` with
  ``split_for("tp", G)``, chapter 6's layout: two all-reduces a layer; a latent (MLA) cache held
  whole by every GPU).
- **EP-G**: the routed experts spread over the G GPUs, ``(E + R) / G`` slots each, attention
  data-parallel (``epdeploy.expert_step``: a dispatch and a combine a MoE layer, each GPU its own
  users' cache and its own copy of everything but the routed experts).

``layouts`` sets both side by side for a list of GPU counts and says, in one line, why a layout
is refused (heads that do not split, experts that do not divide, a chip without links) or does
not fit. ``ep_break_even_batch`` finds the batch at which EP-G's ceiling first reaches TP-G's:
below it the copies EP keeps on every GPU (attention, shared experts, head) cost more than the
all-reduces and the replicated cache it saves; above it EP wins. ``batched_prefill`` prices a
prefill of many prompts at once on EP-G, as disaggregated prefill servers run it (16,384 tokens a
GPU in SGLang's test), since one prompt at a time reads every GPU's weights for a few tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import architecture as arch
from . import moe
from .deployment import check_split, deploy, split_for
from .epdeploy import ExpertLayout, alltoall_s, expert_step, non_expert_bytes_read
from .errors import SpecError
from .performance import Hardware, Workload, require_links, resolved
from .precisions import bytes_per_value

#: The GPU counts the chapter's calculator tries: powers of two to 64 (eight 8-GPU nodes), then
#: SGLang's decode group (72, 9 nodes) and DeepSeek's (144, 18 nodes), both with 288 expert slots.
GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64, 72, 144)


@dataclass(frozen=True)
class LayoutResult:
    """One layout's ceiling for a workload, or why it cannot serve it.

    ``kind`` is ``"tp"`` or ``"ep"``; ``tokens_per_s`` the decode ceiling of all users together
    (None when the layout is refused); ``fits`` whether every GPU holds its weights and its users'
    cache; ``max_batch`` the most users that fit; ``reason`` one line when refused or too full."""

    kind: str
    gpus: int
    tokens_per_s: float | None = None
    step_s: float | None = None
    bound: str | None = None
    fits: bool = False
    max_batch: int | None = None
    reason: str | None = None

    @property
    def name(self) -> str:
        """``TP8``, ``EP32``: how the page and the calculator name the layout."""
        return f"{self.kind.upper()}{self.gpus}"

    @property
    def serves(self) -> bool:
        """Whether the layout runs this workload: not refused, and it fits."""
        return self.tokens_per_s is not None and self.fits


def tp_layout(hardware: Hardware, workload: Workload, gpus: int) -> LayoutResult:
    """TP over ``gpus`` GPUs of ``hardware.gpu`` (``hardware.count`` ignored), at the ceiling."""
    split = split_for("tp", gpus)
    try:
        require_links(hardware.gpu, gpus)
        check_split(hardware, workload.model, split)
    except SpecError as error:
        return LayoutResult("tp", gpus, reason=error.message)
    result = deploy(hardware, workload, split)
    memory = result.memory
    reason = None if memory.fits else _full(memory.max_batch, workload.batch)
    return LayoutResult(
        "tp",
        gpus,
        tokens_per_s=workload.batch / result.step.interval_s,
        step_s=result.step.interval_s,
        bound=result.step.stages[0].bound,
        fits=memory.fits,
        max_batch=memory.max_batch,
        reason=reason,
    )


def ep_layout(
    hardware: Hardware, workload: Workload, gpus: int, *, redundant: int = 0, imbalance: float = 1.0
) -> LayoutResult:
    """EP over ``gpus`` GPUs with data-parallel attention (``epdeploy.expert_step``), at the ceiling.
    One GPU holds every expert: that is TP1, so EP1 is refused with that reason."""
    if gpus == 1:
        return LayoutResult("ep", 1, reason="one GPU holds every expert: that is TP1")
    try:
        require_links(hardware.gpu, gpus)
        step = expert_step(hardware, workload, ExpertLayout(gpus, imbalance=imbalance, redundant=redundant))
    except SpecError as error:
        return LayoutResult("ep", gpus, reason=error.message)
    reason = None if step.fits else _full(step.max_batch_that_fits, workload.batch)
    return LayoutResult(
        "ep",
        gpus,
        tokens_per_s=step.batch / step.step_s,
        step_s=step.step_s,
        bound=step.bound,
        fits=step.fits,
        max_batch=step.max_batch_that_fits,
        reason=reason,
    )


def _full(max_batch: int | None, batch: int) -> str:
    if not max_batch:
        return "the weights leave no room for even one user's cache"
    return f"holds {max_batch:,} users at this context, not {batch:,}"


def layouts(
    hardware: Hardware, workload: Workload, counts: tuple[int, ...] = GPU_COUNTS, *, redundant: int = 0
) -> tuple[LayoutResult, ...]:
    """TP-G then EP-G for every G of ``counts``: each layout's ceiling, or why it cannot serve."""
    found = []
    for gpus in counts:
        found.append(tp_layout(hardware, workload, gpus))
        found.append(ep_layout(hardware, workload, gpus, redundant=redundant))
    return tuple(found)


def fewest_gpus(found: tuple[LayoutResult, ...]) -> LayoutResult | None:
    """The layout that serves on the fewest GPUs; of two on as many, the faster."""
    serving = [item for item in found if item.serves]
    return min(serving, key=lambda item: (item.gpus, -item.tokens_per_s)) if serving else None


def most_per_gpu(found: tuple[LayoutResult, ...]) -> LayoutResult | None:
    """The layout that serves with the most decode tokens/s per GPU; of equals, the fewer GPUs."""
    serving = [item for item in found if item.serves]
    return max(serving, key=lambda item: (item.tokens_per_s / item.gpus, -item.gpus)) if serving else None


def ep_advantage(hardware: Hardware, workload: Workload, gpus: int, batch: int) -> float:
    """EP-G's decode ceiling over TP-G's at ``batch`` users, memory set aside (a ratio of two
    ceilings: above 1 EP is faster)."""
    at = Workload(workload.model, workload.weight_precision, workload.kv_precision, batch, workload.context)
    ep = ep_layout(hardware, at, gpus).tokens_per_s
    tp = tp_layout(hardware, at, gpus).tokens_per_s
    if ep is None or tp is None:
        raise SpecError(f"EP{gpus} and TP{gpus} cannot both serve {workload.model.name}", field="gpus")
    return ep / tp


def ep_break_even_batch(hardware: Hardware, workload: Workload, gpus: int, limit: int = 1_000_000) -> int | None:
    """The fewest users at which EP-G's decode ceiling reaches TP-G's (``ep_advantage >= 1``),
    at the workload's context and precisions, memory set aside; None when it never does up to
    ``limit``, or 1 when EP wins from the start.

    Doubling the batch from 1 brackets the crossing, then bisection finds the first integer: at
    one user TP reads 1/G of the weights a token uses while every EP GPU reads its own copy of
    attention, dense layers and head; as the batch grows TP's all-reduces and its copy of each
    latent cache on every GPU grow while EP's copies stay one read a step."""
    if ep_advantage(hardware, workload, gpus, 1) >= 1:
        return 1
    low, high = 1, 2
    while ep_advantage(hardware, workload, gpus, high) < 1:
        low, high = high, high * 2
        if high > limit:
            return None
    while high - low > 1:
        middle = (low + high) // 2
        if ep_advantage(hardware, workload, gpus, middle) >= 1:
            high = middle
        else:
            low = middle
    return high


@dataclass(frozen=True)
class BatchedPrefill:
    """A prefill of ``prompts`` prompts of ``prompt`` tokens on EP-G, each term on one GPU."""

    gpus: int
    prompts: int
    prompt: int
    compute_s: float
    memory_s: float
    alltoall_s: float

    @property
    def seconds(self) -> float:
        """``max(compute, memory, all-to-all)``: two micro-batches overlap the all-to-all."""
        return max(self.compute_s, self.memory_s, self.alltoall_s)

    @property
    def tokens_per_s(self) -> float:
        """Prompt tokens the whole group prefills a second."""
        return self.prompts * self.prompt / self.seconds


def batched_prefill(
    hardware: Hardware, workload: Workload, gpus: int, tokens_per_gpu: int, *, redundant: int = 0
) -> BatchedPrefill:
    """Prefill ``n = G * tokens_per_gpu / P`` prompts of ``P = workload.prompt`` tokens at once on EP-G.

    - compute = ``n * prefill_flops(P) / (G * peak)`` (each prompt's attention over itself only);
    - memory = (the non-expert weights + the GPU's ``(E + R)/G`` expert slots, all touched at
      this many tokens) / bandwidth: each GPU reads its weights once for the whole batch;
    - all-to-all = ``epdeploy.alltoall_s`` for ``tokens_per_gpu`` tokens a GPU.

    An upper bound on the tokens a second: every term is a lower bound on its cost."""
    model, precision, prompt = workload.model, workload.weight_precision, workload.prompt
    layout = ExpertLayout(gpus, redundant=redundant)
    expert_step(hardware, Workload(model, precision, workload.kv_precision, 1, 0), layout)  # checks the layout
    if prompt < 1 or tokens_per_gpu < prompt:
        raise SpecError(
            f"needs whole prompts of at least 1 token in {tokens_per_gpu:,} tokens a GPU, got a prompt of {prompt:,}",
            field="prompt",
        )
    prompts = gpus * tokens_per_gpu // prompt
    one = resolved(Hardware(hardware.gpu, 1, hardware.compute_precision, hardware.usable_fraction), workload)
    spec = model.moe
    compute = prompts * arch.prefill_flops(model, prompt) / (gpus * one.peak_flops_per_s)
    slots = (spec.experts + redundant) / gpus
    expert_bytes = arch.moe_layers(model) * arch.expert_parameters(model) * bytes_per_value(precision)
    memory = (non_expert_bytes_read(model, tokens_per_gpu, precision) + slots * expert_bytes) / (
        one.gpu.bandwidth_bytes_per_s
    )
    per_token = moe.alltoall_bytes_per_token(model.hidden_size, spec.experts_per_token)
    talk = alltoall_s(one, gpus, tokens_per_gpu, per_token, arch.moe_layers(model), model)[0]
    return BatchedPrefill(gpus, prompts, prompt, compute, memory, talk)


def batch_reading_share(model, precision: str, share: float, limit: int = 1_000_000) -> int | None:
    """The fewest users whose decode step reads ``share`` of the weights held:
    ``arch.weights_read_bytes(B) >= share * arch.weight_bytes``, the routed experts touched growing
    as ``E (1 - (1 - E_tok/E)^B)``; None when no batch up to ``limit`` does. A step reads only the
    embedding rows its tokens look up, so a share of 1 needs as many users as the vocabulary has tokens."""
    if not 0 < share <= 1:
        raise SpecError(f"must be above 0 and at most 1, got {share!r}", field="share")
    target = share * arch.weight_bytes(model, precision)

    def reaches(batch: int) -> bool:
        return arch.weights_read_bytes(model, batch, precision) >= target

    if reaches(1):
        return 1
    low, high = 1, 2
    while not reaches(high):
        low, high = high, high * 2
        if high > limit:
            return None
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if reaches(middle) else (middle, high)
    return high
