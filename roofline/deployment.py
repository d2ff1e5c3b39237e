"""A deployment split over GPUs: tensor-parallel groups, pipeline stages, and the best split.

``parallelism`` holds the rules that know nothing of GPUs (usable degrees, stages, the
bubble); ``performance`` times one pass on a tensor-parallel group, all-reduces included.
This module puts them together, as the parallelism chapter's page, Run cell and
calculator need:

- ``pipeline_decode``: one decode step of a batch on ``tp x pp`` GPUs. Each of the p
  stages is a tensor-parallel group of ``tp`` GPUs holding its share of the layers (the
  first the embedding, the last the output head) and paying its layers' all-reduces.
  One user's token takes every stage in turn plus ``p - 1`` hops
  (``parallelism.pipeline_latency_s``); with m micro-batches in flight a user's tokens
  come every ``max(lap, m * slowest stage)`` (``parallelism.pipeline_interval_s``).
- ``memory_per_gpu``: the heaviest stage's weights and cache on one of its GPUs, against
  that GPU's KV pool (the same rule as ``performance.memory_use``, per GPU).
- ``deploy``: decode per user and in total, the prefill, memory per GPU, the share of a
  token spent communicating; ``best_split`` and ``best_tp_degree`` search the splits.

A hop between stages sends the tokens' activations, ``tokens * d * 2`` bytes, over the
scale-up link, or over the scale-out network where the split crosses a node, and pays the
fixed latency of an all-reduce between two GPUs on that hardware, whatever the stage's
TP degree (``HOP_GPUS``; the one measured fixed cost of a message on these links). At
one stage and one micro-batch every figure here is ``performance``'s own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

from . import architecture as arch
from .errors import SpecError
from .parallelism import (
    best_degree,
    check_tp_degree,
    pipeline_bubble_fraction,
    pipeline_interval_s,
    pipeline_latency_s,
    point_to_point_s,
    stage_layers,
    tp_pp_splits,
    usable_tp_degrees,
)
from .performance import (
    Hardware,
    IterationCosts,
    MemoryUse,
    Pass,
    Workload,
    allreduce_bytes,
    allreduces_per_pass,
    decode_pass,
    iteration_costs,
    kv_copies,
    memory_use,
    prefill_pass,
    require_links,
    resolved,
)
from .precisions import bytes_per_value, embedding_bytes_per_value, head_bytes_per_value

#: The ways to split, as the CLI and the calculator name them.
PARALLEL = ("tp", "pp", "tpxpp")


@dataclass(frozen=True)
class Split:
    """``tp`` GPUs per tensor-parallel group, ``pp`` pipeline stages of one group each, and
    ``microbatches`` groups of users in flight through the stages (1 without a pipeline)."""

    tp: int = 1
    pp: int = 1
    microbatches: int = 1

    def __post_init__(self) -> None:
        for name, value in (("tp", self.tp), ("pp_stages", self.pp), ("microbatches", self.microbatches)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SpecError(f"must be a whole number, at least 1, got {value!r}", field=name)

    @property
    def gpus(self) -> int:
        """``tp * pp``."""
        return self.tp * self.pp

    @property
    def label(self) -> str:
        """``TP8``, ``PP8`` or ``TP4 x PP2``."""
        if self.pp == 1:
            return f"TP{self.tp}"
        if self.tp == 1:
            return f"PP{self.pp}"
        return f"TP{self.tp} × PP{self.pp}"


def split_for(parallel: str, gpus: int, pp_stages: int | None = None, microbatches: int = 1) -> Split:
    """The split ``--parallel`` names on ``gpus`` GPUs: ``tp`` all of them in one group,
    ``pp`` one GPU per stage, ``tpxpp`` ``pp_stages`` stages of ``gpus / pp_stages``."""
    if parallel not in PARALLEL:
        raise SpecError(f"unknown split {parallel!r}", field="parallel", hint="choose tp, pp or tpxpp")
    if parallel == "tp":
        return Split(gpus, 1, 1)
    if parallel == "pp":
        return Split(1, gpus, microbatches)
    if pp_stages is None:
        raise SpecError("tpxpp needs the number of stages", field="pp_stages", hint="add --pp-stages N")
    if isinstance(pp_stages, bool) or not isinstance(pp_stages, int) or pp_stages < 1 or gpus % pp_stages:
        raise SpecError(
            f"must divide the {gpus:,} GPUs into equal groups, got {pp_stages!r}",
            field="pp_stages",
            hint="choose a divisor of the GPU count",
        )
    return Split(gpus // pp_stages, pp_stages, microbatches)


def check_split(hardware: Hardware, model, split: Split) -> None:
    """SpecError, in one line, for a split the model cannot take: a TP degree that does not give
    each GPU whole heads (naming the nearest usable ones), or more stages than layers.

    This is the one rule for which layouts the course allows, used by every calculator and the
    command line alike. A tensor-parallel group wider than the GPUs' scale-up domain is allowed:
    its all-reduces are priced past the domain (``performance.allreduce_wire``: the cheaper of
    a flat ring over the scale-out network and a two-level all-reduce), slow but real, and
    ``domain_note`` says so in words. Refusing it here while chapter 1's ``gpus_to_fit``
    counts Llama 3.1 405B in bf16 as 16-way TP made two pages disagree."""
    check_tp_degree(model, split.tp, field="tp")
    stage_layers(model.layers, split.pp)


def domain_note(hardware: Hardware, tp: int) -> str | None:
    """The sentence a page shows for a tensor-parallel group of ``tp`` GPUs wider than one
    scale-up domain (every all-reduce then crosses the scale-out network), or None."""
    link = hardware.gpu.interconnect
    if link is None or tp <= link.domain_gpus:
        return None
    return (
        f"A tensor-parallel group of {tp:,} GPUs spans more than one {link.scale_up} domain of"
        f" {link.domain_gpus:,}: every layer's all-reduces also cross the scale-out network at"
        f" {link.scale_out_bytes_per_s / 1e9:g} GB/s per GPU (the ceiling charges a two-level all-reduce"
        f" where it is cheaper than a flat ring: only a 1/{link.domain_gpus:,} share crosses), so engines"
        f" usually keep TP within {link.domain_gpus:,} GPUs and add pipeline stages across nodes"
    )


def group(hardware: Hardware, split: Split) -> Hardware:
    """One stage's tensor-parallel group: ``hardware`` with ``split.tp`` GPUs."""
    return replace(hardware, count=split.tp)


def hops_across_nodes(hardware: Hardware, split: Split) -> int:
    """How many of the ``pp - 1`` hops cross from one scale-up domain to the next: stages
    fill a domain before the next one starts, so ``ceil(tp * pp / domain) - 1`` (0 without
    an interconnect in the spec)."""
    link = hardware.gpu.interconnect
    if link is None or split.pp == 1:
        return 0
    return min(split.pp - 1, math.ceil(split.gpus / link.domain_gpus) - 1)


#: A hop is one GPU sending to the next: it pays the fixed latency ``Hardware.allreduce_latency``
#: charges two GPUs (the same rule: fixed, preset, fitted, else the smallest measured at two),
#: since that latency grows with the GPU count and a send involves two GPUs however many
#: each stage holds (charging the stage's own count would make a one-GPU stage's hop free).
#: No send latency is measured in the specs; a ring all-reduce on two GPUs is two steps
#: where a send is one, so this is a stand-in, not a measurement.
HOP_GPUS = 2


def hop_s(hardware: Hardware, workload: Workload, tokens: float, across_nodes: bool) -> float:
    """One hop between stages for ``tokens`` tokens: ``latency + tokens * d * 2 / link``, over
    the scale-out network when ``across_nodes`` (``parallelism.point_to_point_s``), the
    latency that of an all-reduce on ``HOP_GPUS`` GPUs. 0 without an interconnect in the
    spec, as the all-reduces are."""
    link = hardware.gpu.interconnect
    if link is None:
        return 0.0
    wire = link.scale_out_bytes_per_s if across_nodes else link.link_bytes_per_s
    return point_to_point_s(
        allreduce_bytes(workload.model, tokens),
        hardware.costs.link_efficiency * wire,
        replace(hardware, count=HOP_GPUS).allreduce_latency,
    )


def _ends(model, weight_precision: str, tokens: float, sampled: float) -> tuple[float, float, float]:
    """What the first and last stage do beyond their layers for ``tokens`` tokens of which
    ``sampled`` predict a next token: the bytes of the embedding rows the tokens look up
    (first stage), the bytes of the output head with the final norm (last stage), and the
    head's FLOPs (last stage)."""
    size = bytes_per_value(weight_precision)
    rows = min(tokens, model.vocab_size) * arch.copied_row_width(model)
    head = arch.output_head_parameters(model)
    # A quantized checkpoint keeps the head and the embedding at 16 bits (precisions.NumberFormat.head).
    return (
        rows * embedding_bytes_per_value(weight_precision),
        head * head_bytes_per_value(weight_precision) + model.hidden_size * size,
        2.0 * head * sampled,
    )


def split_stages(
    whole: Pass, ends: tuple[float, float, float], layers: tuple[int, ...], bandwidth: float, peak: float
) -> tuple[Pass, ...]:
    """``whole``, one pass of the model on a tensor-parallel group, cut into the stages that
    hold ``layers`` layers each: a stage gets its layers' share of the layers' bytes, FLOPs,
    all-reduces and overhead, the first also the embedding rows and the last the head
    (``ends``, from ``_ends``), each timed at the group's ``bandwidth`` and ``peak`` (as
    ``performance.timed`` does). Their bytes and FLOPs add up to ``whole``'s.

    The one place a pass becomes stages: the decode step (``stage_passes``) and a serving
    iteration (``PipelineCosts``) both cut here."""
    first_bytes, last_bytes, head_flops = ends
    layer_bytes = whole.bytes_moved - first_bytes - last_bytes
    layer_flops = whole.flops - head_flops
    total = sum(layers)
    passes = []
    for index, held in enumerate(layers):
        share = held / total
        bytes_moved = layer_bytes * share + (first_bytes if index == 0 else 0.0)
        flops = layer_flops * share
        if index == len(layers) - 1:
            bytes_moved += last_bytes
            flops += head_flops
        # A new Pass rather than dataclasses.replace, which costs more than the arithmetic: a
        # pipeline of 64 stages builds 64 of these per answer.
        passes.append(
            Pass(
                bytes_moved,
                flops,
                bytes_moved / bandwidth,
                flops / peak,
                whole.communication_s * share,
                whole.overhead_s * share,
            )
        )
    return tuple(passes)


def stage_passes(hardware: Hardware, workload: Workload, split: Split, batch: float) -> tuple[Pass, ...]:
    """Each stage's decode pass for ``batch`` users on its group of ``split.tp`` GPUs: its
    layers' share (``parallelism.stage_layers``) of the layers' bytes, FLOPs, all-reduces and
    overhead; the first stage also reads the embedding rows, the last the output head and
    does its math (``split_stages``). Their bytes and FLOPs add up to ``decode_pass`` on one group."""
    tp_group = resolved(group(hardware, split), workload)
    whole = decode_pass(tp_group, workload, batch)
    if split.pp == 1:
        return (whole,)
    return split_stages(
        whole,
        _ends(workload.model, workload.weight_precision, batch, batch),
        stage_layers(workload.model.layers, split.pp),
        tp_group.effective_bandwidth_bytes_per_s,
        tp_group.effective_peak_flops_per_s,
    )


def pipelined(stages: tuple[Pass, ...], hops_s: float, microbatches: int) -> Pass:
    """One round of ``microbatches`` micro-batches through ``stages`` (each stage's pass for one
    micro-batch) with ``hops_s`` of hops per lap, as one ``Pass`` whose ``seconds`` is the
    interval between a user's tokens, ``max(lap, m * slowest stage)``
    (``parallelism.pipeline_interval_s``), and whose bytes and FLOPs are the round's.

    The lap's memory and compute times are the stages' sums; a lap whose stages are not all
    bound the same way takes ``sum(max) - max(sum, sum)`` longer, charged as overhead so that
    ``seconds`` is exact. Past the lap, the slowest stage serves ``m`` micro-batches in turn:
    its times, ``m`` times over."""
    m = microbatches
    lap = sum(stage.seconds for stage in stages) + hops_s
    slowest = max(stages, key=lambda stage: stage.seconds)
    work_bytes = m * sum(stage.bytes_moved for stage in stages)
    work_flops = m * sum(stage.flops for stage in stages)
    if m * slowest.seconds > lap:
        return Pass(
            work_bytes,
            work_flops,
            m * slowest.memory_s,
            m * slowest.compute_s,
            m * slowest.communication_s,
            m * slowest.overhead_s,
        )
    memory = sum(stage.memory_s for stage in stages)
    compute = sum(stage.compute_s for stage in stages)
    mixed = sum(max(stage.memory_s, stage.compute_s) for stage in stages) - max(memory, compute)
    return Pass(
        work_bytes,
        work_flops,
        memory,
        compute,
        sum(stage.communication_s for stage in stages) + hops_s,
        sum(stage.overhead_s for stage in stages) + mixed,
    )


@dataclass(frozen=True)
class PipelineStep:
    """A decode step of ``batch`` users on a split: each stage's pass for one micro-batch,
    the hops between them, and what those give."""

    split: Split
    batch: int
    #: Users in each micro-batch: ``ceil(batch / m)``.
    microbatch: int
    stages: tuple[Pass, ...]
    #: Seconds of each hop inside a domain and across domains, and how many cross.
    hop_s: float
    hop_across_s: float
    hops_across: int

    @property
    def hops_s(self) -> float:
        """All ``p - 1`` hops of one lap."""
        inside = self.split.pp - 1 - self.hops_across
        return inside * self.hop_s + self.hops_across * self.hop_across_s

    # Computed once each: the calculator asks for them several times per answer.
    @cached_property
    def latency_s(self) -> float:
        """One micro-batch through every stage: ``sum of stages + hops``."""
        seconds = [stage.seconds for stage in self.stages]
        return pipeline_latency_s(seconds, 0.0) + self.hops_s

    @cached_property
    def interval_s(self) -> float:
        """Seconds between one user's tokens: ``max(lap, m * slowest stage)``."""
        seconds = [stage.seconds for stage in self.stages]
        return max(self.latency_s, pipeline_interval_s(seconds, 0.0, self.split.microbatches))

    @property
    def bubble(self) -> float:
        """The idle share of a pass that drains: ``(p - 1) / (m + p - 1)``."""
        return pipeline_bubble_fraction(self.split.pp, self.split.microbatches)

    @property
    def communication_s(self) -> float:
        """What one lap spends talking: every stage's all-reduces plus the hops."""
        return sum(stage.communication_s for stage in self.stages) + self.hops_s

    @property
    def tokens_per_s_per_user(self) -> float:
        """``1 / interval``."""
        return 1.0 / self.interval_s

    @property
    def tokens_per_s_total(self) -> float:
        """``batch / interval``."""
        return self.batch / self.interval_s


def pipeline_decode(hardware: Hardware, workload: Workload, split: Split) -> PipelineStep:
    """``workload.batch`` users decoding on ``split``: the batch in ``m`` micro-batches of
    ``ceil(batch / m)`` users (m at most the batch), each stage's pass for one of them, and
    the hops. At ``pp = 1`` and ``m = 1`` the step is ``decode_step`` on ``tp`` GPUs."""
    check_split(hardware, workload.model, split)
    m = min(split.microbatches, workload.batch)
    split = replace(split, microbatches=m)
    per = math.ceil(workload.batch / m)
    stages = stage_passes(hardware, workload, split, per)
    tp_group = group(hardware, split)
    return PipelineStep(
        split=split,
        batch=workload.batch,
        microbatch=per,
        stages=stages,
        hop_s=hop_s(tp_group, workload, per, False),
        hop_across_s=hop_s(tp_group, workload, per, True),
        hops_across=hops_across_nodes(hardware, split),
    )


@dataclass(frozen=True)
class PipelineCosts:
    """What one serving iteration costs on a split with pipeline stages, for the simulator
    (``serving.simulate`` with a ``Split``): the same interface as ``performance.IterationCosts``.

    An iteration's work (its decodes, prompt tokens, cached tokens and token pairs) goes in
    ``m`` equal micro-batches (``m`` at most the decodes, 1 for prompts alone; a share of a
    prompt stands in for whole prompts in different micro-batches). One micro-batch on the
    tensor-parallel group is ``group.iteration`` on its share, cut into stages by
    ``split_stages``; the round takes ``pipelined``'s ``max(lap, m * slowest stage)``, hops
    included. So an iteration of decodes alone takes ``pipeline_decode``'s interval."""

    #: One tensor-parallel group's costs, the whole model on ``split.tp`` GPUs.
    group: IterationCosts
    split: Split
    layers: tuple[int, ...]
    weight_precision: str
    #: Seconds per hop, fixed and per token, inside a domain and across one, and how many cross.
    hop_latency_s: float
    hop_s_per_token: float
    hop_across_s_per_token: float
    hops_across: int
    #: One stage's GPUs' links to host memory together (None: the spec has none).
    stage_host_link_bytes_per_s: float | None

    @property
    def kv_bytes_per_token(self) -> float:
        """KV bytes a token adds over every stage, copies included."""
        return self.group.kv_bytes_per_token

    def iteration(
        self,
        decodes: int,
        decode_context: float,
        prefill_tokens: int = 0,
        prefill_cached: float = 0,
        prefill_pairs: float = 0,
        prompts_finished: int = 0,
    ) -> Pass:
        """The iteration's ``Pass`` on the pipeline; its ``seconds`` is the round's time."""
        tokens = decodes + prefill_tokens
        if tokens == 0:
            return Pass(0.0, 0.0, 0.0, 0.0)
        m = max(1, min(self.split.microbatches, decodes))
        micro = self.group.iteration(
            decodes / m,
            decode_context / m,
            prefill_tokens / m,
            prefill_cached / m,
            prefill_pairs / m,
            prompts_finished / m,
        )
        group = self.group
        stages = split_stages(
            micro,
            _ends(group.model, self.weight_precision, tokens / m, (decodes + prompts_finished) / m),
            self.layers,
            group.bandwidth_bytes_per_s,
            group.peak_flops_per_s,
        )
        inside = self.split.pp - 1 - self.hops_across
        hops = (self.split.pp - 1) * self.hop_latency_s + (tokens / m) * (
            inside * self.hop_s_per_token + self.hops_across * self.hop_across_s_per_token
        )
        return pipelined(stages, hops, m)

    def swap_seconds(self, tokens: int) -> float:
        """Time to copy ``tokens`` tokens of KV cache one way: every stage copies its layers' share
        over its own GPUs' host links at once, so the stage with the most layers sets the time."""
        if self.stage_host_link_bytes_per_s is None:
            return self.group.swap_seconds(tokens)  # its one-line error
        share = max(self.layers) / sum(self.layers)
        return tokens * self.kv_bytes_per_token * share / self.stage_host_link_bytes_per_s


def pipeline_costs(hardware: Hardware, workload: Workload, split: Split) -> PipelineCosts:
    """``PipelineCosts`` of ``workload.model`` at its precisions on ``split`` of ``hardware.gpu``
    (``hardware.count`` is ignored), at ``hardware.costs``; SpecError for a split the model or the
    hardware cannot take (``check_split``)."""
    check_split(hardware, workload.model, split)
    tp_group = group(hardware, split)
    # hop_s is latency + tokens * d * 2 / link: its fixed part, and what one token adds.
    latency = hop_s(tp_group, workload, 0, False) if split.pp > 1 else 0.0
    per_token = hop_s(tp_group, workload, 1, False) - latency if split.pp > 1 else 0.0
    per_token_across = hop_s(tp_group, workload, 1, True) - latency if split.pp > 1 else 0.0
    host = hardware.gpu.host_link_bytes_per_s
    return PipelineCosts(
        group=iteration_costs(tp_group, workload),
        split=split,
        layers=stage_layers(workload.model.layers, split.pp),
        weight_precision=workload.weight_precision,
        hop_latency_s=latency,
        hop_s_per_token=per_token,
        hop_across_s_per_token=per_token_across,
        hops_across=hops_across_nodes(hardware, split),
        stage_host_link_bytes_per_s=None if host is None else split.tp * host,
    )


def prefill_s(hardware: Hardware, workload: Workload, split: Split) -> float:
    """One prompt on ``split``: the stages run one after another, so the prefill on one
    tensor-parallel group (``performance.prefill_pass``) plus ``p - 1`` hops of the prompt's
    activations. 0 for no prompt."""
    check_split(hardware, workload.model, split)
    if workload.prompt == 0:
        return 0.0
    tp_group = group(hardware, split)
    across = hops_across_nodes(hardware, split)
    inside = split.pp - 1 - across
    return (
        prefill_pass(tp_group, workload).seconds
        + inside * hop_s(tp_group, workload, workload.prompt, False)
        + across * hop_s(tp_group, workload, workload.prompt, True)
    )


def memory_per_gpu(hardware: Hardware, workload: Workload, split: Split) -> MemoryUse:
    """One GPU of the stage that binds first: its share of the stage's weights and of every
    user's cache against its own pool, ``usable fraction * (addressable - workspace -
    weights)``, as ``memory_use`` sizes it for a group. The first stage holds the input
    embedding, the last the output head; the layers split as ``stage_layers`` says. At one
    stage this is ``memory_use`` on ``tp`` GPUs divided by ``tp``."""
    check_split(hardware, workload.model, split)
    model = workload.model
    tp = split.tp
    one = replace(hardware, count=1)
    copies = kv_copies(group(hardware, split), model)
    total = arch.weight_bytes(model, workload.weight_precision)
    # The table the first stage holds: the tied one (also the head), else the lookup-only one
    # (none for a draft head that reads its target's).
    table = model.vocab_size * model.hidden_size if model.tied_embeddings else arch.lookup_only_parameters(model)
    embedding = table * (head_bytes_per_value if model.tied_embeddings else embedding_bytes_per_value)(
        workload.weight_precision
    )
    head = (
        0.0
        if model.tied_embeddings
        else arch.output_head_parameters(model) * head_bytes_per_value(workload.weight_precision)
    )
    if split.pp == 1:
        whole = memory_use(group(hardware, split), workload)
        return MemoryUse(
            whole.weights_bytes / tp,
            whole.kv_bytes / tp,
            whole.usable_bytes / tp,
            whole.max_batch,
            whole.pool_bytes / tp,
            whole.shared_bytes / tp,
        )
    layer_weights = total - embedding - head
    worst: MemoryUse | None = None
    layers = stage_layers(model.layers, split.pp)
    # Stages differ only by their layer count and whether they hold an end: look at each kind once.
    kinds = {(held, index == 0, index == split.pp - 1): index for index, held in enumerate(layers)}
    for index in kinds.values():
        held = layers[index]
        share = held / model.layers
        ends = (embedding if index == 0 else 0.0) + (head if index == split.pp - 1 else 0.0)
        if model.tied_embeddings and index == split.pp - 1 and index != 0:
            ends += embedding  # the last stage needs the tied table as its head
        weights = (layer_weights * share + ends) / tp
        shared = copies * workload.kv_bytes_shared * share / tp
        private = copies * workload.kv_bytes_private * share / tp
        pool = one.kv_pool_bytes(weights)
        room = one.usable_memory_bytes
        usable = weights + pool if weights <= room else room
        if weights + shared > usable:
            max_batch: int | None = 0
        elif private <= 0:
            max_batch = None
        else:
            max_batch = math.floor((pool - shared) / private)
        use = MemoryUse(weights, shared + workload.batch * private, usable, max_batch, pool, shared)
        if worst is None or _tighter(use, worst):
            worst = use
    assert worst is not None
    return worst


def _tighter(one: MemoryUse, other: MemoryUse) -> bool:
    """Whether ``one`` binds before ``other``: fewer users fit, or the same and less room left."""
    a = math.inf if one.max_batch is None else one.max_batch
    b = math.inf if other.max_batch is None else other.max_batch
    return (a, one.usable_bytes - one.used_bytes) < (b, other.usable_bytes - other.used_bytes)


@dataclass(frozen=True)
class Deployment:
    """What a split gives a workload: decode, prefill, memory per GPU, and the talk."""

    split: Split
    step: PipelineStep
    prefill_s: float
    memory: MemoryUse

    @property
    def fits(self) -> bool:
        """Whether the busiest stage's GPUs hold their weights and every user's cache."""
        return self.memory.fits

    @property
    def communication_share(self) -> float:
        """The share of one lap spent in all-reduces and hops."""
        lap = self.step.latency_s
        return self.step.communication_s / lap if lap else 0.0


def deploy(hardware: Hardware, workload: Workload, split: Split) -> Deployment:
    """``workload`` on ``split`` of ``hardware.gpu`` (``hardware.count`` is ignored); refused,
    as every multi-GPU figure is, for a chip without an interconnect (``require_links``)."""
    require_links(hardware.gpu, split.gpus)
    return Deployment(
        split=split,
        step=pipeline_decode(hardware, workload, split),
        prefill_s=prefill_s(hardware, workload, split),
        memory=memory_per_gpu(hardware, workload, split),
    )


def candidate_splits(hardware: Hardware, workload: Workload, gpus: int, microbatches: int = 1) -> tuple[Split, ...]:
    """Every ``tp x pp`` arrangement of ``gpus`` GPUs the model allows (``parallelism.tp_pp_splits``,
    the layouts ``check_split`` accepts, TP across domains included), the widest TP first."""
    splits = []
    for tp, pp in tp_pp_splits(gpus, workload.model):
        splits.append(Split(tp, pp, microbatches if pp > 1 else 1))
    return tuple(splits)


def best_split(
    hardware: Hardware, workload: Workload, gpus: int, microbatches: int = 1, goal: str = "latency"
) -> Deployment | None:
    """The split of ``gpus`` GPUs that fits and gives the fastest token per user (``goal =
    "latency"``) or the most tokens per second in total (``"throughput"``); on a tie the
    wider TP; None when none fits."""
    if goal not in ("latency", "throughput"):
        raise SpecError(f"unknown goal {goal!r}", field="goal", hint="choose latency or throughput")
    best: tuple[float, Split, PipelineStep, MemoryUse] | None = None
    for split in candidate_splits(hardware, workload, gpus, microbatches):
        memory = memory_per_gpu(hardware, workload, split)
        if not memory.fits:
            continue
        step = pipeline_decode(hardware, workload, split)
        score = step.interval_s if goal == "latency" else -step.tokens_per_s_total
        if best is None or score < best[0]:
            best = (score, split, step, memory)
    if best is None:
        return None
    _, split, step, memory = best
    return Deployment(split, step, prefill_s(hardware, workload, split), memory)


def best_tp_degree(hardware: Hardware, workload: Workload) -> int | None:
    """Among the tensor-parallel degrees up to ``hardware.count`` that give each GPU whole
    heads and hold the weights and the batch's cache, the one with the shortest decode step
    (``parallelism.best_degree``: fewer GPUs on a tie); None when none fits."""
    fitting = [
        degree
        for degree in usable_tp_degrees(workload.model, limit=hardware.count)
        if memory_use(replace(hardware, count=degree), workload).fits
    ]
    return best_degree(fitting, lambda d: decode_pass(replace(hardware, count=d), workload, workload.batch).seconds)


def deployment_dict(hardware: Hardware, workload: Workload, result: Deployment) -> dict:
    """``result`` as plain JSON values in SI units, as ``roofline estimate --parallel pp|tpxpp
    --json`` prints it: the split, one user's latency and the interval between a user's tokens,
    tokens/s, the bubble, the talk, the prefill and the busiest stage's memory per GPU."""
    split, step, memory = result.split, result.step, result.memory
    link = hardware.gpu.interconnect
    return {
        "gpu": hardware.gpu.id,
        "model": workload.model.id,
        "parallel": split.label,
        "tp": split.tp,
        "pp_stages": split.pp,
        "microbatches": split.microbatches,
        "gpus": split.gpus,
        "spans_nodes": link is not None and split.gpus > link.domain_gpus,
        "stage_layers": list(stage_layers(workload.model.layers, split.pp)),
        "weight_precision": workload.weight_precision,
        "kv_precision": workload.kv_precision,
        "batch": workload.batch,
        "microbatch_users": step.microbatch,
        "context": workload.context,
        "prompt": workload.prompt,
        "decode_latency_s": step.latency_s,
        "decode_interval_s": step.interval_s,
        "decode_tokens_per_s_per_user": step.tokens_per_s_per_user,
        "decode_tokens_per_s_total": step.tokens_per_s_total,
        "pipeline_bubble_fraction": step.bubble,
        "stage_s": [stage.seconds for stage in step.stages],
        "hops": split.pp - 1,
        "hops_across_nodes": step.hops_across,
        "hop_s": step.hop_s,
        "allreduce_bytes": allreduce_bytes(workload.model, step.microbatch) if split.tp > 1 else 0.0,
        "allreduces_per_step": allreduces_per_pass(group(hardware, split), workload.model),
        "communication_s": step.communication_s,
        "communication_share": result.communication_share,
        "prefill_s": result.prefill_s,
        "weights_bytes_per_gpu": memory.weights_bytes,
        "kv_bytes_per_gpu": memory.kv_bytes,
        "kv_pool_bytes_per_gpu": memory.pool_bytes,
        "max_batch_that_fits": memory.max_batch,
        "fits": result.fits,
    }
