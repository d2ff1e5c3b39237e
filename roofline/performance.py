"""Roofline estimates: decode speed, prefill time, memory use and the batching crossover.

A pass over the model takes the longer of two times, the bytes it moves divided
by memory bandwidth and the FLOPs it does divided by peak math rate, plus the
time its tensor-parallel all-reduces take (``communication_s``) and, in expected
mode, a fixed overhead per layer and, for weight-only formats, the cost of
dequantizing (``CostModel.dequant_overhead``). Several GPUs split every layer (tensor
parallelism): bandwidth, peak and memory add up, and each layer pays two
all-reduces of its tokens' activations over the GPUs' links.

``Hardware.costs`` says how much of the hardware an engine reaches. ``CEILING``
(the default) is all of it: datasheet bandwidth and peak, links at their
nameplate rate and the smallest all-reduce latency measured on them at that
many GPUs, no overhead. Nothing real beats it. An expected cost model (``calibration``) scales
bandwidth and peak by fitted efficiencies and adds fitted overheads.

Memory is what the driver reports (``GpuSpec.addressable_bytes``), less a
workspace per GPU; engines give a share of what the weights leave to the KV
cache (``usable_fraction``). When the tensor-parallel degree exceeds the KV
heads, each head is copied to several GPUs, and a latent (MLA) cache is held
whole by every GPU unless attention is data-parallel (``kv_copies``).

The math precision follows the weights unless the caller fixes it
(``math_precision``): fp8 weights on a GPU with fp8 math run W8A8 at the fp8
peak, as TensorRT-LLM and vLLM serve fp8 on Hopper; nvfp4 weights on a GPU with
fp4 math run at the fp4 peak; every other format, int8, int4 and mxfp4 (whose
served checkpoints keep bf16 activations) included, is weight-only and
multiplies at 16 bits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import Literal

from . import architecture as arch
from . import formatting as fmt
from .errors import SpecError
from .kvformats import kv_format
from .parallelism import usable_tp_degrees
from .precisions import (
    AUTO,
    DEFAULT_COMPUTE_PRECISION,
    SIXTEEN_BIT,
    bytes_per_value,
    check_precision,
    embedding_bytes_per_value,
    native_math,
    number_format,
)
from .specs import GpuSpec, ModelSpec

Bound = Literal["memory", "compute"]

#: Share of the memory the weights and the workspace leave that goes to the KV cache. NVIDIA's
#: published TensorRT-LLM benchmarks set ``--kv_cache_free_gpu_mem_fraction 0.95`` "in the majority
#: of cases" (0.90 is the engine's own default), so a ceiling takes 0.95:
#: https://github.com/NVIDIA/TensorRT-LLM/blob/258c7540c03517def55d9a5aadfa9288af474e1b/docs/source/performance/perf-overview.md
DEFAULT_USABLE_FRACTION = 0.95
#: Memory held back on each GPU before the KV pool is sized: the CUDA context and the engine's
#: activations and scratch buffers. Engines hold more (vLLM profiles its peak activations,
#: TensorRT-LLM sizes a workspace from its token budget, CUDA graphs take their own); 0.5 GB,
#: about the CUDA context alone, errs toward more room for the cache, as a ceiling must.
DEFAULT_WORKSPACE_BYTES = 0.5e9
#: Bytes per activation value in a tensor-parallel all-reduce: engines reduce in 16 bits,
#: fp8 and fp4 math included (the GEMM's output is bf16 before it is summed).
ACTIVATION_BYTES = 2
#: All-reduces per layer of a tensor-parallel pass: after attention's output projection
#: and after the MLP's down projection (Megatron-LM's layout, which vLLM, SGLang and
#: TensorRT-LLM follow).
ALLREDUCES_PER_LAYER = 2


def _at_least(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"must be a whole number, got {value!r}", field=name)
    if value < minimum:
        raise SpecError(f"must be at least {minimum}, got {value}", field=name)


@dataclass(frozen=True)
class CostModel:
    """How much of the hardware a serving engine reaches.

    ``CEILING`` reaches all of it: every efficiency 1, no overhead, and each all-reduce
    at the smallest latency measured on the GPU's links at that many GPUs
    (``allreduce_latency_s=None``). An expected model (``calibration.cost_model``) holds
    fitted values: the share of the HBM bandwidth reached, the share of the links'
    bandwidth an all-reduce reaches, the share of the peak reached at each math precision
    (``default_compute_efficiency`` for a precision the fit did not see), a fixed
    overhead per layer of every pass (kernel launches, synchronization), a host overhead
    per token sampled, and the latency of one all-reduce over G GPUs,
    ``allreduce_latency_s + 2 (G - 1) * allreduce_hop_s``: a fixed start plus a hop per
    step of a ring, the shape of NCCL's own latency model (``allreduce_latency``); and a
    host time per request (``request_overhead_s``), which the serving simulator puts on each
    request's way to the scheduler, so into its TTFT and latency and never the GPU's time.

    Dequantization, for a pass whose weights are narrower than its math (``dequantizes``:
    W4A16 int4 AWQ/GPTQ, int8 weight-only, fp8 on a GPU without fp8 math):

    - ``dequant_overhead`` δ: a fused tiled kernel widens each quantized weight on the CUDA
      cores once per tile of ``DEQUANT_TILE_TOKENS`` tokens (vLLM's ``awq_gemm``,
      ``gemm_forward_4bit_cuda_m16nXk32``, runs one block per 16 rows of activations), which
      costs δ times that tile's multiply-adds of the weight, so the math takes
      ``(FLOPs + δ * 2 * W_q * 16 * ceil(T / 16)) / peak``, with ``W_q`` the quantized weights
      the pass multiplies (not the 16-bit head) and ``T`` its tokens: a pass of fewer than 16
      tokens pays a whole tile, and from 16 on it is ``(1 + δ)`` times the quantized layers' math;
    - ``dequant_switch_tokens`` T_s: from T_s tokens in a pass on, the engine widens every
      weight it reads to the math's width first, ``weights * (b_w + b_math) / bandwidth``,
      then runs a plain pass at that width with no δ (vLLM's AWQ from 256 tokens, AutoAWQ's
      from 1,024); None: the fused kernel at every size.

    The ceiling has neither: the best published kernels (Marlin) reach the weight-read
    ceiling, so nothing faster can be ruled out.
    """

    name: str = "ceiling"
    bandwidth_efficiency: float = 1.0
    #: Share of the links' nameplate bandwidth an all-reduce reaches (NCCL's bus bandwidth
    #: on 8 H100s is about 370 of 450 GB/s for 10 GB messages, about 150 for 58 MB ones).
    link_efficiency: float = 1.0
    compute_efficiency: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    default_compute_efficiency: float = 1.0
    layer_overhead_s: float = 0.0
    #: Host time per token sampled (each decode, each prompt's first token): sampling, stop
    #: checks, the scheduler's bookkeeping and streaming, which grow with the batch.
    token_overhead_s: float = 0.0
    #: Host time per request between its being sent and its reaching the scheduler: the HTTP
    #: request, tokenizing the prompt, queueing it, and streaming the first token back. It
    #: overlaps the GPU's work on other requests, so it delays the request, not the batch.
    request_overhead_s: float = 0.0
    allreduce_latency_s: float | None = None
    #: Latency of each of a ring all-reduce's ``2 (G - 1)`` steps, added to
    #: ``allreduce_latency_s`` (used only with it).
    allreduce_hop_s: float = 0.0
    #: δ: the fused dequantizing GEMM's extra math per weight multiplied, a share of its
    #: multiply-add (0: none, as at the ceiling).
    dequant_overhead: float = 0.0
    #: Tokens in a pass from which the weights are widened first, then multiplied plainly.
    dequant_switch_tokens: int | None = None
    #: κ: the share of the shorter of a context pass's reads and math that does not overlap
    #: the longer: the pass takes ``max(memory, compute) + κ * min(memory, compute)`` (0: they
    #: overlap fully, as at the ceiling; 1: one waits for the other). A pass holding a decode
    #: is never charged it. Only a harness that measured it sets it (``roofline.harness``).
    context_serial_share: float = 0.0

    def __post_init__(self) -> None:
        shares = {"bandwidth_efficiency": self.bandwidth_efficiency, "link_efficiency": self.link_efficiency}
        shares["default_compute_efficiency"] = self.default_compute_efficiency
        shares.update({f"compute_efficiency.{k}": v for k, v in dict(self.compute_efficiency).items()})
        for name, share in shares.items():
            if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
                raise SpecError(f"must be above 0 and at most 1, got {share!r}", field=name)
        overheads = ("layer_overhead_s", "token_overhead_s", "request_overhead_s")
        for name in (*overheads, "allreduce_latency_s", "allreduce_hop_s"):
            value = getattr(self, name)
            if value is None and name == "allreduce_latency_s":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise SpecError(f"must be between 0 and 1 s, got {value!r}", field=name)
        serial = self.context_serial_share
        if isinstance(serial, bool) or not isinstance(serial, (int, float)) or not 0 <= serial <= 1:
            raise SpecError(f"must be a number from 0 to 1, got {serial!r}", field="context_serial_share")
        delta = self.dequant_overhead
        if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 <= delta <= 100:
            raise SpecError(f"must be a number from 0 to 100, got {delta!r}", field="dequant_overhead")
        switch = self.dequant_switch_tokens
        if switch is not None and (isinstance(switch, bool) or not isinstance(switch, int) or switch < 1):
            message = f"must be a whole number of tokens, at least 1, got {switch!r}"
            raise SpecError(message, field="dequant_switch_tokens")
        object.__setattr__(self, "compute_efficiency", MappingProxyType(dict(self.compute_efficiency)))

    @property
    def is_ceiling(self) -> bool:
        """True when nothing is scaled down or added: the figures are upper bounds."""
        return (
            self.bandwidth_efficiency == 1
            and self.link_efficiency == 1
            and self.default_compute_efficiency == 1
            and all(share == 1 for share in self.compute_efficiency.values())
            and self.layer_overhead_s == 0
            and self.token_overhead_s == 0
            and self.request_overhead_s == 0
            and self.allreduce_latency_s is None
            and self.allreduce_hop_s == 0
            and self.dequant_overhead == 0
            and self.dequant_switch_tokens is None
            and self.context_serial_share == 0
        )

    @property
    def dequantizes(self) -> bool:
        """True when a weight-only pass costs more than its roofline (δ or a switch is set)."""
        return self.dequant_overhead > 0 or self.dequant_switch_tokens is not None

    def compute_share(self, precision: str) -> float:
        """The share of the peak reached at math ``precision``."""
        return self.compute_efficiency.get(precision, self.default_compute_efficiency)

    def allreduce_latency(self, gpus: int) -> float | None:
        """The fitted latency of one all-reduce over ``gpus`` GPUs,
        ``allreduce_latency_s + 2 (gpus - 1) * allreduce_hop_s``; None when the model has
        none (the ceiling: the GPU's measured presets decide)."""
        if self.allreduce_latency_s is None:
            return None
        return self.allreduce_latency_s + 2 * (gpus - 1) * self.allreduce_hop_s


#: Everything the hardware offers, nothing added: the default, and an upper bound.
CEILING = CostModel()


@dataclass(frozen=True)
class Hardware:
    """``count`` identical GPUs computing at ``compute_precision``, splitting every layer
    (tensor parallelism), at the costs of ``costs`` (``CEILING`` by default).

    Memory: each GPU holds back ``workspace_bytes`` of what its driver reports, and
    ``usable_fraction`` of what the weights then leave is the KV cache's pool, as
    TensorRT-LLM's ``kv_cache_free_gpu_mem_fraction`` sizes it (``memory_use``).
    ``attention_dp``: attention is data-parallel (each GPU serves its own users'
    attention, as SGLang's ``--enable-dp-attention`` does), so a latent (MLA) cache is
    split by users instead of held whole by every GPU. ``allreduce_latency_s`` fixes the
    latency of one all-reduce whatever the GPU count, and ``allreduce_preset`` names one
    of the GPU's measured presets (``"nccl"``); either overrides ``costs`` and the
    ceiling's choice of the smallest measured latency.

    ``compute_precision`` may be ``"auto"``: every pass then picks its math from the
    workload's weights (``math_precision``)."""

    gpu: GpuSpec
    count: int = 1
    compute_precision: str = DEFAULT_COMPUTE_PRECISION
    usable_fraction: float = DEFAULT_USABLE_FRACTION
    workspace_bytes: float = DEFAULT_WORKSPACE_BYTES
    attention_dp: bool = False
    allreduce_latency_s: float | None = None
    costs: CostModel = CEILING
    allreduce_preset: str | None = None

    def __post_init__(self) -> None:
        _at_least("gpus", self.count, 1)
        workspace = self.workspace_bytes
        if isinstance(workspace, bool) or not isinstance(workspace, (int, float)) or not 0 <= workspace < 1e13:
            raise SpecError(f"must be 0 or more bytes, below 1e13, got {workspace!r}", field="workspace_bytes")
        if not isinstance(self.attention_dp, bool):
            raise SpecError(f"must be true or false, got {self.attention_dp!r}", field="attention_dp")
        latency = self.allreduce_latency_s
        if latency is not None and (
            isinstance(latency, bool) or not isinstance(latency, (int, float)) or not 0 <= latency <= 1
        ):
            raise SpecError(f"must be between 0 and 1 s, got {latency!r}", field="allreduce_latency_s")
        if not isinstance(self.costs, CostModel):
            raise SpecError(f"must be a CostModel, got {self.costs!r}", field="costs")
        if self.allreduce_preset is not None:
            if self.gpu.interconnect is None:
                raise SpecError(
                    f"{self.gpu.id} has no interconnect in its spec, so no all-reduce presets",
                    field="allreduce_preset",
                    hint="add an [interconnect] table to the GPU's entry, or leave the preset out",
                )
            self.gpu.interconnect.preset(self.allreduce_preset)
        if self.compute_precision == AUTO:
            sixteen_bit_math(self.gpu)
        else:
            check_precision(self.compute_precision)
            self.gpu.peak_flops_per_s(self.compute_precision)
        fraction = self.usable_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
            raise SpecError(f"must be above 0 and at most 1, got {fraction!r}", field="usable_fraction")

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Aggregate bandwidth: ``GPUs * bandwidth per GPU``."""
        return self.count * self.gpu.bandwidth_bytes_per_s

    @property
    def peak_flops_per_s(self) -> float:
        """Aggregate dense peak at the compute precision: ``GPUs * peak per GPU``.

        For ``"auto"`` this is the 16-bit peak, the math of every format but fp8;
        the passes below resolve ``"auto"`` against the weights first.
        """
        precision = self.compute_precision
        if precision == AUTO:
            precision = sixteen_bit_math(self.gpu)
        return self.count * self.gpu.peak_flops_per_s(precision)

    @property
    def sixteen_bit_peak_flops_per_s(self) -> float:
        """Aggregate dense 16-bit peak, whatever the compute precision: the rule of thumb's peak."""
        return self.count * self.gpu.peak_flops_per_s(sixteen_bit_math(self.gpu))

    @cached_property  # asked for by every pass; the record is frozen
    def effective_bandwidth_bytes_per_s(self) -> float:
        """The bandwidth the passes are timed at: aggregate bandwidth * the cost model's share."""
        return self.costs.bandwidth_efficiency * self.bandwidth_bytes_per_s

    @cached_property  # asked for by every pass; the record is frozen
    def effective_peak_flops_per_s(self) -> float:
        """The peak the passes are timed at: aggregate peak * the cost model's share at this math."""
        precision = self.compute_precision
        if precision == AUTO:
            precision = sixteen_bit_math(self.gpu)
        return self.costs.compute_share(precision) * self.peak_flops_per_s

    @property
    def memory_bytes(self) -> float:
        """Aggregate nameplate memory: ``GPUs * memory per GPU``."""
        return self.count * self.gpu.memory_bytes

    @property
    def addressable_memory_bytes(self) -> float:
        """Aggregate memory the driver reports: ``GPUs * addressable memory per GPU``."""
        return self.count * self.gpu.addressable_bytes

    @property
    def usable_memory_bytes(self) -> float:
        """Memory for weights and KV cache before the pool is sized:
        ``GPUs * (addressable memory per GPU - workspace per GPU)``."""
        return self.count * max(0.0, self.gpu.addressable_bytes - self.workspace_bytes)

    def kv_pool_bytes(self, weights_bytes: float) -> float:
        """The KV cache's pool: ``usable fraction * (usable memory - weights)``, 0 when the
        weights alone fill it."""
        return self.usable_fraction * max(0.0, self.usable_memory_bytes - weights_bytes)

    @cached_property  # asked for by every pass; the record is frozen
    def allreduce_latency(self) -> float:
        """Seconds of fixed latency per all-reduce over these ``count`` GPUs: this hardware's
        fixed override, else its named preset at ``count``, else the cost model's fitted
        latency at ``count``, else the smallest latency *measured* at ``count`` among the GPU's
        interconnect presets (``InterconnectSpec.ceiling_latency``: never a fit's extrapolation
        where any preset was measured at or below ``count``; 0 on one GPU without one; SpecError
        on more, ``require_links``). A named preset pays its measurement at ``count``, else its
        fit, ``base + step x steps(algorithm, G)`` (``AllReduceLatency``)."""
        require_links(self.gpu, self.count)
        if self.allreduce_latency_s is not None:
            return self.allreduce_latency_s
        link = self.gpu.interconnect
        if self.allreduce_preset is not None and link is not None:
            return link.latency(self.allreduce_preset, self.count)
        fitted = self.costs.allreduce_latency(self.count)
        if fitted is not None:
            return fitted
        return 0.0 if link is None else link.ceiling_latency(self.count)

    @property
    def allreduce_latency_basis(self) -> str:
        """Where ``allreduce_latency`` comes from, in words: "fixed", "the preset asked for, nccl, ...",
        "fitted", "the smallest preset, custom_oneshot, as measured at 4 GPUs"; "none"
        without an interconnect."""
        link = self.gpu.interconnect
        if self.allreduce_latency_s is not None:
            return "fixed"
        if self.allreduce_preset is not None and link is not None:
            return f"the preset asked for, {link.preset(self.allreduce_preset).basis(self.count)}"
        if self.costs.allreduce_latency_s is not None:
            return "fitted"
        if link is None:
            return "none"
        # The ceiling takes the smallest measured latency; where nothing was measured at or below
        # this count it can only take a fit, and must not call that "measured".
        if link.best_allreduce(self.count).floor(self.count) is None:
            return link.ceiling_basis(self.count)
        return f"the smallest measured, {link.ceiling_basis(self.count)}"

    @cached_property  # asked for by every pass; the record is frozen
    def link_bytes_per_s(self) -> float | None:
        """One GPU's bandwidth to the others, one direction: the scale-up link within a domain,
        the scale-out network past it, times the cost model's link share; None for one GPU or
        a spec without an interconnect (SpecError on more GPUs, ``require_links``: a size in GPUs
        is computed without links, a time over them is not)."""
        link = self.gpu.interconnect
        require_links(self.gpu, self.count)
        if self.count == 1 or link is None:
            return None
        nameplate = link.link_bytes_per_s if self.count <= link.domain_gpus else link.scale_out_bytes_per_s
        return self.costs.link_efficiency * nameplate

    def allreduce_s(self, message_bytes: float) -> float:
        """One all-reduce of ``message_bytes`` (S_AR) over the G GPUs:
        ``t_lat(G) + S_AR * allreduce_seconds_per_byte`` (``allreduce_wire``: a ring inside one
        scale-up domain; past it the cheaper of a flat ring over the network and the two-level
        bound NCCL's hierarchical algorithms reach). 0 for one GPU or without an interconnect."""
        if self.link_bytes_per_s is None:
            return 0.0
        return self.allreduce_latency + message_bytes * self.allreduce_wire[0]

    @cached_property
    def allreduce_wire(self) -> tuple[float, str]:
        """``(seconds per message byte, the accounting's name)`` of one all-reduce over these GPUs
        (``allreduce_wire``, module function), at the cost model's link share."""
        return allreduce_wire(self.gpu.interconnect, self.count, self.costs.link_efficiency)


#: Names of the all-reduce accountings ``allreduce_wire`` picks from, for reports.
RING = "ring"
FLAT_RING_OVER_NETWORK = "flat ring over the scale-out network"
TWO_LEVEL = "two-level (hierarchical): reduce inside each node, a 1/D share across the network"


def allreduce_wire(link, gpus: int, share: float = 1.0) -> tuple[float, str]:
    """``(seconds per message byte, name)`` of one all-reduce over ``gpus`` GPUs of ``link``'s
    spec, each link at ``share`` of its nameplate; the one formula every all-reduce uses
    (tensor parallelism, ``tpxep``'s attention groups).

    - Inside one scale-up domain of D GPUs (G <= D): NCCL's ring, ``2 (G-1)/G / B_up``.
    - Past it, N = ceil(G / D) nodes: the cheaper of a flat ring over the scale-out network,
      ``2 (G-1)/G / B_out``, and the two-level bound, ``max(2 (D-1)/D / B_up,
      2 (N-1)/N / D / B_out)``: reduce-scatter inside each node, all-reduce each GPU's 1/D share
      across the nodes over its own NIC, all-gather inside, the two levels pipelined (NCCL's
      tree, NVLS-tree and CollNet algorithms move only that share across the network). The
      ceiling takes the cheaper, so no engine's choice of algorithm beats it."""
    if gpus <= link.domain_gpus:
        return 2.0 * (gpus - 1) / gpus / (share * link.link_bytes_per_s), RING
    domain = link.domain_gpus
    nodes = math.ceil(gpus / domain)
    flat = 2.0 * (gpus - 1) / gpus / (share * link.scale_out_bytes_per_s)
    inside = 2.0 * (domain - 1) / domain / (share * link.link_bytes_per_s)
    across = 2.0 * (nodes - 1) / nodes / domain / (share * link.scale_out_bytes_per_s)
    two_level = max(inside, across)
    return (two_level, TWO_LEVEL) if two_level <= flat else (flat, FLAT_RING_OVER_NETWORK)


def require_links(gpu: GpuSpec, gpus: int) -> None:
    """SpecError, in one line, when ``gpus`` GPUs (more than one) of a chip without an
    ``interconnect`` in its spec would have to talk: every multi-GPU figure charges the
    all-reduces and hops over those links, and a spec that names none has nothing to charge
    them at, so the run is refused rather than given free links. Every built-in chip has one;
    a GPU file of one's own may leave it out and run on one GPU."""
    if gpus > 1 and gpu.interconnect is None:
        raise SpecError(
            f"{gpu.id} has no interconnect in its spec, so {gpus:,} GPUs' all-reduces cannot be charged",
            field="interconnect",
            hint=f'add a [gpu."{gpu.id}".interconnect] table as roofline/data/gpus.toml\'s header describes'
            " (a PCIe Gen4 x16 card sends 32e9 bytes/s each way), or run it on one GPU",
        )


def sixteen_bit_math(gpu: GpuSpec) -> str:
    """The GPU's 16-bit math precision: bf16, else fp16; SpecError when it has neither."""
    for precision in SIXTEEN_BIT:
        if precision in gpu.dense_flops_per_s:
            return precision
    raise SpecError(
        f"{gpu.id} has no 16-bit math",
        field="dense_flops_per_s",
        hint="add its bf16 or fp16 peak; weight-only formats multiply at 16 bits",
    )


def math_precision(gpu: GpuSpec, weight_precision: str) -> str:
    """The math an engine uses for ``weight_precision`` on ``gpu`` (what ``"auto"`` picks).

    A format that declares a native math (``precisions.native_math``: fp8 and fp8-block
    -> fp8, W8A8; int8-sq -> int8, SmoothQuant's W8A8; nvfp4 and fp4 -> fp4, W4A4
    on Blackwell's fp4 tensor cores, as TensorRT-LLM serves NVFP4; fp32 -> fp32) gets it
    on a GPU whose spec lists that peak. Everything else runs at the 16-bit math:
    weight-only formats are widened to 16 bits in the kernel, and a format whose math
    the GPU lacks runs weight-only (fp8 on Ampere, nvfp4 on Hopper).
    """
    native = native_math(check_precision(weight_precision))
    if native is not None and native in gpu.dense_flops_per_s:
        return native
    return sixteen_bit_math(gpu)


def resolved(hardware: Hardware, workload: Workload) -> Hardware:
    """``hardware`` with ``"auto"`` math replaced by the precision the workload's weights call for."""
    if hardware.compute_precision != AUTO:
        return hardware
    return replace(hardware, compute_precision=math_precision(hardware.gpu, workload.weight_precision))


def dequantizes(hardware: Hardware, weight_precision: str) -> bool:
    """Whether a pass on ``hardware`` (its math resolved) widens ``weight_precision``'s weights
    before multiplying: the format is quantized and the math is not the format's own (W4A16
    int4, int8 weight-only, fp8 on Ampere; not fp8 on Hopper, nvfp4 on Blackwell, or bf16)."""
    declared = number_format(weight_precision)
    return declared.math != "unquantized" and hardware.compute_precision != declared.native_math


@dataclass(frozen=True)
class Workload:
    """A model served at given precisions to ``batch`` users, each with ``context``
    tokens already cached, plus one prompt of ``prompt`` tokens to prefill.

    The first ``shared_prefix`` tokens of every user's context are the same (a
    system prompt) and are stored once for the whole batch. They are also read
    once per step: a prefix-aware attention kernel (FlashInfer's cascade
    attention, Hydragen) loads the shared blocks once and applies them to every
    query, so memory and read stay one number. A kernel without it re-reads the
    prefix for each user; this ceiling does not model that.
    """

    model: ModelSpec
    weight_precision: str = "bf16"
    kv_precision: str = "bf16"
    batch: int = 1
    context: int = 0
    prompt: int = 0
    shared_prefix: int = 0

    def __post_init__(self) -> None:
        check_precision(self.weight_precision)
        kv_format(self.kv_precision)
        _at_least("batch", self.batch, 1)
        _at_least("context", self.context, 0)
        _at_least("prompt", self.prompt, 0)
        _at_least("shared_prefix", self.shared_prefix, 0)
        if self.shared_prefix > self.context:
            raise SpecError(
                f"must not exceed the context ({self.context:,} tokens), got {self.shared_prefix:,}",
                field="shared_prefix",
                hint="the shared prefix is the first tokens of each user's context",
            )

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per cached token at the KV precision (see architecture)."""
        return arch.kv_cache_bytes_per_token(self.model, self.kv_precision)

    @cached_property  # these three are asked for several times per estimate; the record is frozen
    def kv_bytes_per_user(self) -> float:
        """Cache one user attends to: ``KV bytes per token * effective context`` (windows capped)."""
        return arch.kv_cache_bytes(self.model, self.context, self.kv_precision)

    @cached_property
    def kv_bytes_shared(self) -> float:
        """The shared prefix's bytes, held once for the batch (0 without a shared prefix)."""
        if not self.shared_prefix:
            return 0.0
        return arch.shared_prefix_cache_bytes(self.model, self.context, self.shared_prefix, self.kv_precision)

    @cached_property
    def kv_bytes_private(self) -> float:
        """What each user holds alone: ``KV bytes per user - shared prefix bytes``."""
        return self.kv_bytes_per_user - self.kv_bytes_shared

    def kv_bytes_for(self, batch: float) -> float:
        """Cache of ``batch`` users, in memory and read each step: ``shared + batch * private``."""
        return self.kv_bytes_shared + batch * self.kv_bytes_private


def kv_copies(hardware: Hardware, model: ModelSpec) -> float:
    """How many times the GPUs together hold each cached token, relative to one copy.

    Grouped-query attention: each GPU holds ``ceil(H_kv / G)`` of the H_kv key-value heads, so
    the G GPUs hold ``G * ceil(H_kv / G) / H_kv`` copies: 1 while G <= H_kv divides H_kv,
    ``G / H_kv`` past it (vLLM and TensorRT-LLM copy each head to ``G / H_kv`` GPUs). Latent attention (MLA)
    has one latent per token that every head needs: each GPU holds all of it (G copies),
    unless attention is data-parallel and each GPU holds its own users' latents (1).
    """
    g = hardware.count
    if model.mla is not None:
        return 1.0 if hardware.attention_dp else float(g)
    k = model.kv_heads
    return g * math.ceil(k / g) / k


def pass_seconds(
    memory_s: float,
    compute_s: float,
    overlapped_s: float,
    communication_s: float,
    overhead_s: float,
    dequantize_s: float,
) -> float:
    """A pass's time, ``max(memory, compute, overlapped) + communication + overhead + dequantize``:
    the reads, the math and an overlapped all-to-all run together; the all-reduces between layers
    and a widening kernel do not. One sum in one order, for ``Pass.seconds`` and for
    ``IterationCosts.iteration_seconds``, which times an iteration without building its ``Pass``."""
    return max(memory_s, compute_s, overlapped_s) + communication_s + overhead_s + dequantize_s


@dataclass(frozen=True)
class Pass:
    """One forward pass: what it moves and computes, and how long each takes."""

    bytes_moved: float
    flops: float
    memory_s: float
    compute_s: float
    #: The pass's all-reduces, which wait for the layer before and hold up the next.
    communication_s: float = 0.0
    #: Fixed time per pass a cost model adds (kernel launches, synchronization; for a context
    #: pass, ``context_serial_s`` too); 0 for a ceiling.
    overhead_s: float = 0.0
    #: A kernel that widens the weights before the pass (``CostModel.dequant_switch_tokens``); 0 for a ceiling.
    dequantize_s: float = 0.0
    #: Communication that runs beside the reads and the math (an expert-parallel all-to-all,
    #: overlapped by two micro-batches, ``roofline.epdeploy``): the pass takes at least this.
    overlapped_s: float = 0.0

    @property
    def seconds(self) -> float:
        """``max(memory_s, compute_s, overlapped_s) + communication_s + overhead_s + dequantize_s``:
        the reads, the math and an overlapped all-to-all run together; the all-reduces between
        layers and a widening kernel do not."""
        return pass_seconds(
            self.memory_s, self.compute_s, self.overlapped_s, self.communication_s, self.overhead_s, self.dequantize_s
        )

    @property
    def bound(self) -> Bound:
        """``"memory"`` when moving bytes takes at least as long as the math, else ``"compute"``."""
        return "memory" if self.memory_s >= self.compute_s else "compute"


def allreduces_per_pass(hardware: Hardware, model: ModelSpec) -> int:
    """``2 * layers`` all-reduces when the layers are split over several GPUs, else 0.

    With data-parallel attention (``attention_dp``) there are none to charge: attention
    runs on each GPU's own users without a collective, and the experts' all-to-all is
    overlapped with the math by running two micro-batches at once (SGLang's two-batch
    overlap, TensorRT-LLM's attention-DP with expert parallelism), so it adds no time
    to an upper bound."""
    if hardware.count == 1 or hardware.attention_dp:
        return 0
    return ALLREDUCES_PER_LAYER * model.layers


def allreduce_bytes(model: ModelSpec, tokens: float) -> float:
    """One all-reduce's message: ``tokens * hidden size * activation bytes``."""
    return tokens * model.hidden_size * ACTIVATION_BYTES


def communication_s(hardware: Hardware, model: ModelSpec, tokens: float) -> float:
    """A pass's all-reduces over ``tokens`` tokens: ``2L * allreduce_s(tokens * d * 2)``."""
    count = allreduces_per_pass(hardware, model)
    return count * hardware.allreduce_s(allreduce_bytes(model, tokens)) if count and tokens else 0.0


def widened_parameters(model: ModelSpec, tokens: float, weight_precision: str) -> float:
    """Weights a widening kernel widens for a pass over ``tokens`` tokens: those the pass reads
    and multiplies at the quantized width, ``parameters_read`` less the untied embedding rows it
    only copies and a head the checkpoint keeps at 16 bits (``arch.quantized_parameters_read``)."""
    read = arch.quantized_parameters_read(model, tokens, weight_precision)
    if embedding_bytes_per_value(weight_precision) == bytes_per_value(weight_precision):
        read -= min(tokens, model.vocab_size) * arch.copied_row_width(model)
    return read


#: Tokens one tile of a fused dequantizing GEMM covers: each quantized weight is widened once
#: per tile. vLLM's legacy AWQ kernel, ``gemm_forward_4bit_cuda_m16nXk32``
#: (csrc/quantization/awq/gemm_kernels.cu at 2cc1023), launches one block per 16 rows of the
#: activations, ``(M + 16 - 1) / 16``, and each block dequantizes its own copy of the weights.
DEQUANT_TILE_TOKENS = 16


def tiled_dequant_flops(overhead: float, quantized_weights: float, tokens: float) -> float:
    """FLOP-equivalents a fused kernel spends widening weights: ``δ * 2 * W_q * M * ceil(T / M)``.

    Each of the ``W_q`` quantized weights is widened once per tile of ``M`` =
    ``DEQUANT_TILE_TOKENS`` tokens, at δ times the tile's multiply-adds of it (``2 M`` FLOPs). A
    1-token decode pays a whole tile; 4,096 tokens pay ``δ * 2 * W_q * 4,096``, the per-FLOP
    charge. 0 tokens pay nothing.
    """
    if tokens <= 0:
        return 0.0
    tiles = math.ceil(tokens / DEQUANT_TILE_TOKENS)
    return overhead * 2.0 * quantized_weights * DEQUANT_TILE_TOKENS * tiles


def _timed(
    hardware: Hardware,
    bytes_moved: float,
    flops: float,
    model: ModelSpec,
    tokens: float,
    sampled: float,
    weight_precision: str | None = None,
    linear_flops: float = 0.0,
    context: bool = False,
) -> Pass:
    """A model's pass over ``tokens`` tokens that samples ``sampled`` next tokens: the roofline
    (``timed``), its all-reduces, and the cost model's overheads (none when there are no tokens).
    A ``context`` pass (prompt tokens only) also pays ``context_serial_s``.

    For a pass that dequantizes (``dequantizes``; ``linear_flops`` of its FLOPs are the
    matmuls'), the cost model's dequantization: below its switch the math time grows by
    ``tiled_dequant_flops / peak`` (each quantized weight widened once per 16-token tile); from it
    on, the weights it multiplies are widened first
    (``widened_parameters * (b_w + b_math) / bandwidth``) and then read at the math's width."""
    costs = hardware.costs
    widen_s = dequant_flops = 0.0
    if weight_precision is not None and costs.dequantizes and dequantizes(hardware, weight_precision):
        narrow, wide = bytes_per_value(weight_precision), bytes_per_value(hardware.compute_precision)
        switch = costs.dequant_switch_tokens
        widened = widened_parameters(model, tokens, weight_precision)
        if switch is not None and tokens >= switch:
            bytes_moved += widened * (wide - narrow)
            widen_s = widened * (narrow + wide) / hardware.effective_bandwidth_bytes_per_s
        else:
            dequant_flops = tiled_dequant_flops(costs.dequant_overhead, widened, tokens)
    kernel = timed(hardware, bytes_moved, flops)
    if dequant_flops:
        # The pass's FLOPs stay the model's; only the time the math takes grows.
        kernel = replace(kernel, compute_s=(flops + dequant_flops) / hardware.effective_peak_flops_per_s)
    overhead = model.layers * costs.layer_overhead_s + sampled * costs.token_overhead_s if tokens else 0.0
    if context and tokens:
        overhead += context_serial_s(costs.context_serial_share, kernel.memory_s, kernel.compute_s)
    # Built directly, not with dataclasses.replace: a chart or a search times thousands of passes.
    communication = communication_s(hardware, model, tokens)
    return Pass(kernel.bytes_moved, kernel.flops, kernel.memory_s, kernel.compute_s, communication, overhead, widen_s)


def context_serial_s(share: float, memory_s: float, compute_s: float) -> float:
    """What a context pass adds to ``max(memory, compute)`` where its reads and math overlap only
    in part: ``κ * min(memory, compute)`` (``CostModel.context_serial_share``; 0 at the ceiling).
    Counted with the pass's overheads, since no change of batch or bandwidth hides it."""
    return share * min(memory_s, compute_s) if share else 0.0


def timed(hardware: Hardware, bytes_moved: float, flops: float) -> Pass:
    """One pass that moves ``bytes_moved`` and does ``flops``, timed by the roofline rule:
    ``max(bytes_moved / bandwidth, flops / peak)`` on ``hardware`` at the cost model's shares
    (``Pass.seconds``, ``Pass.bound``), with no all-reduce or overhead: the roofline of a
    kernel, not of a whole model's pass (``communication_s`` gives a pass's all-reduces).

    A new kind of pass (a draft model's step, a verification, a shard's share) builds its bytes
    and FLOPs from ``architecture`` and times them here, rather than writing the rule again.
    """
    return Pass(
        bytes_moved=bytes_moved,
        flops=flops,
        memory_s=bytes_moved / hardware.effective_bandwidth_bytes_per_s,
        compute_s=flops / hardware.effective_peak_flops_per_s,
    )


def decode_pass(hardware: Hardware, workload: Workload, batch: float) -> Pass:
    """``decode_step`` at a real-valued ``batch`` (ignoring ``workload.batch``), so the
    crossover can be solved, and checked, on a continuous batch axis."""
    hardware = resolved(hardware, workload)
    model = workload.model
    weights = arch.weights_read_bytes(model, batch, workload.weight_precision)
    cache = kv_copies(hardware, model) * workload.kv_bytes_for(batch)
    flops = batch * arch.decode_flops_per_token(model, workload.context)
    linear = batch * 2.0 * arch.multiplied_parameters(model)
    return _timed(hardware, weights + cache, flops, model, batch, batch, workload.weight_precision, linear)


def decode_step(hardware: Hardware, workload: Workload) -> Pass:
    """One decode step for the whole batch, which yields one token per user.

    bytes = weights read (all of a dense model but an untied input embedding,
    of which each user's token reads one row; for a mixture of experts, only the
    experts the batch touches), block scales included, + the cache, ``KV copies *
    (shared prefix + batch * private)`` (``batch * context * KV bytes per token``
    without windows, a shared prefix or copies);
    FLOPs = ``batch * (2 * multiplied parameters + attention over the context)``;
    time = ``max(bytes / (GPUs * bandwidth), FLOPs / (GPUs * peak))`` + ``2L``
    all-reduces of ``batch * d * 2`` bytes (none on one GPU) + the cost model's
    per-layer overhead (none for a ceiling).
    Tokens/s per user = ``1 / time``; for all users, ``batch / time``.
    """
    return decode_pass(hardware, workload, workload.batch)


def prefill_pass(hardware: Hardware, workload: Workload) -> Pass:
    """Prefill of one prompt of P tokens, which yields the first token.

    FLOPs = ``architecture.prefill_flops``: the layers for all P tokens, the
    output head for the last one only, causal attention over ``P(P+1)/2`` token
    pairs; bytes = the weights those P tokens touch + the ``P`` tokens of KV
    cache written (times the KV copies). time = ``max(FLOPs / peak, bytes /
    bandwidth)`` + ``2L`` all-reduces of ``P * d * 2`` bytes + the cost model's
    overhead (with ``context_serial_s``), so a prefill is never faster than one read
    of the weights. A prompt of 0 takes 0 s.
    """
    prompt = workload.prompt
    if prompt == 0:
        return Pass(0.0, 0.0, 0.0, 0.0)
    hardware = resolved(hardware, workload)
    model = workload.model
    weights = arch.weights_read_bytes(model, prompt, workload.weight_precision)
    cache = kv_copies(hardware, model) * arch.kv_cache_bytes(model, prompt, workload.kv_precision)
    flops = arch.prefill_flops(model, prompt)
    linear = flops - arch.prefill_attention_flops(model, prompt)
    return _timed(hardware, weights + cache, flops, model, prompt, 1, workload.weight_precision, linear, True)


def prefill_after_cached(hardware: Hardware, workload: Workload, cached: float) -> Pass:
    """Prefill of the workload's prompt (P new tokens) after ``cached`` tokens already in the
    cache, such as a shared prefix a prefix cache holds: the time to first token of what is left.

    On ``IterationCosts.prefill``'s accounting (the serving simulator's): FLOPs = the layers for
    P tokens + the output head once + attention over ``P * cached + P(P+1)/2`` token pairs;
    bytes = the weights P tokens touch + KV bytes per token * ``(cached + P)`` (the cached part
    read, the new part written). ``cached = 0`` gives ``prefill_pass``'s time.
    """
    if cached < 0:
        raise SpecError(f"cached tokens must be 0 or more, got {cached}", field="cached")
    return iteration_costs(hardware, workload).prefill(workload.prompt, cached)


def crossover_batch(hardware: Hardware, workload: Workload) -> float | None:
    """The batch at which a decode step's compute time reaches its memory time, or None.

    Solves ``compute_s(B) = memory_s(B)`` for real B using ``decode_step``'s
    model. Compute grows as ``c*B``; memory grows as weights touched (concave in
    B: embedding rows and experts) plus ``B * context * KV bytes``, so the gap
    is convex and crosses zero at most once. Once every embedding row and expert
    is read, each extra user adds only its cache read, so when that costs at
    least as much time as its math, decode never turns compute-bound and the
    answer is None.
    """
    hardware = resolved(hardware, workload)
    model = workload.model
    precision = workload.weight_precision
    bandwidth = hardware.effective_bandwidth_bytes_per_s
    copies = kv_copies(hardware, model)
    per_user_compute = arch.decode_flops_per_token(model, workload.context) / hardware.effective_peak_flops_per_s
    per_user_cache = copies * workload.kv_bytes_private / bandwidth
    # Past the crossover the gap grows at (compute - cache) per user once the weights read
    # stops growing (every embedding row and expert read), so it exists exactly when that is positive.
    if per_user_cache >= per_user_compute:
        return None
    if model.moe is None:
        # Weights read (and a shared prefix) are the same at every batch but for the untied
        # embedding's rows, one per user up to V: (W0 + shared)/BW + B*(row + cache) = B*compute.
        fixed_s = (arch.weights_read_bytes(model, 0, precision) + copies * workload.kv_bytes_shared) / bandwidth
        row_s = arch.copied_row_width(model) * embedding_bytes_per_value(precision) / bandwidth
        if per_user_cache + row_s < per_user_compute:
            batch = fixed_s / (per_user_compute - per_user_cache - row_s)
            if batch <= model.vocab_size:
                return batch
        # Beyond V users every row is read: (W0 + V*row + shared)/BW + B*cache = B*compute.
        return (fixed_s + model.vocab_size * row_s) / (per_user_compute - per_user_cache)
    return _solve_crossover(hardware, workload)


def _solve_crossover(hardware: Hardware, workload: Workload) -> float:
    """Root of the convex gap ``compute_s - memory_s``: bracketed by doubling the batch, then
    narrowed by false position with the Illinois fix (a few steps instead of bisection's forty)."""

    # decode_pass's times with its per-user terms worked out once: the solver calls this
    # a dozen times or more, and a sweep calls the solver thousands of times.
    model = workload.model
    bandwidth = hardware.effective_bandwidth_bytes_per_s
    copies = kv_copies(hardware, model)
    precision = workload.weight_precision
    shared_s = copies * workload.kv_bytes_shared / bandwidth
    cache_s = copies * workload.kv_bytes_private / bandwidth
    compute_s = arch.decode_flops_per_token(model, workload.context) / hardware.effective_peak_flops_per_s

    def gap(batch: float) -> tuple[float, float]:
        memory_s = arch.weights_read_bytes(model, batch, precision) / bandwidth + shared_s + batch * cache_s
        return batch * compute_s - memory_s, memory_s

    low, high = 0.0, 1.0
    gap_low, _ = gap(low)
    gap_high, _ = gap(high)
    while gap_high < 0:
        low, gap_low = high, gap_high
        high *= 2
        gap_high, _ = gap(high)
    kept = 0  # which end stayed put last time: -1 low, +1 high
    for _ in range(200):
        middle = (low * gap_high - high * gap_low) / (gap_high - gap_low)
        gap_middle, memory_s = gap(middle)
        if abs(gap_middle) <= 1e-13 * memory_s or high - low <= 1e-12 * high:
            return middle
        if gap_middle < 0:
            low, gap_low = middle, gap_middle
            if kept == 1:
                gap_high /= 2  # Illinois: halve the stale end so it cannot stall convergence
            kept = 1
        else:
            high, gap_high = middle, gap_middle
            if kept == -1:
                gap_low /= 2
            kept = -1
    return middle


@dataclass(frozen=True)
class MemoryUse:
    """Weights plus every user's KV cache against the memory they may use."""

    weights_bytes: float
    #: Every user's cache, copies included (``kv_copies``).
    kv_bytes: float
    #: Memory weights and cache may use: ``weights + KV pool``, or all of the usable
    #: memory when the weights alone overflow it.
    usable_bytes: float
    #: Most users that fit at this context; None when the cache is empty (no limit).
    max_batch: int | None
    #: The KV cache's pool, ``usable fraction * (usable memory - weights)``.
    pool_bytes: float = 0.0
    #: The shared prefix's bytes, copies included, held once for the batch.
    shared_bytes: float = 0.0

    @property
    def used_bytes(self) -> float:
        """``weights + KV bytes`` (``KV = copies * (shared prefix + batch * private)``)."""
        return self.weights_bytes + self.kv_bytes

    @property
    def fits(self) -> bool:
        """Whether the used bytes are within the usable memory."""
        return self.used_bytes <= self.usable_bytes


def memory_use(hardware: Hardware, workload: Workload) -> MemoryUse:
    """Memory in use and the largest batch that fits.

    room = ``GPUs * (addressable memory per GPU - workspace per GPU)``, addressable
    being what the driver reports (the nameplate where no report is cited);
    KV pool = ``usable fraction * (room - weights)``, as engines size it;
    usable = ``weights + pool`` (``room`` when the weights alone overflow it);
    used = ``weights + copies * (shared prefix + batch * private KV)``, where private =
    ``KV bytes per user - shared prefix`` and copies = ``kv_copies`` (1 unless the GPUs
    outnumber the KV heads, or hold a latent cache whole);
    largest batch = ``floor((pool - copies * shared) / (copies * private))``,
    0 when not even one user fits (``fit.memory_shortfall`` says whether the weights,
    the shared prefix or the cache is to blame), None when no user holds anything of
    their own (an empty context, or one that is all shared prefix).
    """
    weights = arch.weight_bytes(workload.model, workload.weight_precision)
    copies = kv_copies(hardware, workload.model)
    shared, private = copies * workload.kv_bytes_shared, copies * workload.kv_bytes_private
    room = hardware.usable_memory_bytes
    pool = hardware.kv_pool_bytes(weights)
    usable = weights + pool if weights <= room else room
    if weights + shared > usable:
        max_batch: int | None = 0
    elif private <= 0:
        max_batch = None
    else:
        max_batch = math.floor((pool - shared) / private)
    kv = copies * workload.kv_bytes_for(workload.batch)
    return MemoryUse(weights, kv, usable, max_batch, pool, shared)


def tensor_parallel_degrees(model: ModelSpec, limit: int = 1024) -> tuple[int, ...]:
    """GPU counts a model can be split over by tensor parallelism, up to ``limit``: one rule,
    ``parallelism.usable_tp_degrees``. Each GPU holds whole attention heads; with grouped-query
    attention the degree also divides the KV heads, or is a multiple of them, each KV head then
    copied to ``degree / H_kv`` GPUs as vLLM and TensorRT-LLM do (``kv_copies`` counts the copies'
    cache). Latent attention (MLA) has no KV heads to split. Not only powers of two: Llama 2
    13B's 40 heads split 5 ways.
    """
    return usable_tp_degrees(model, limit)


def gpu_count_problem(model: ModelSpec, count: int) -> str | None:
    """Why ``count`` GPUs are not a layout these ceilings describe for ``model``, or None when they are:
    a degree of ``tensor_parallel_degrees``, or whole groups of the largest one (as ``gpus_to_fit``
    counts them). 3 GPUs cannot split 64 heads evenly, so no engine runs a 70B model that way."""
    degrees = tensor_parallel_degrees(model)
    if count in degrees or count % degrees[-1] == 0:
        return None
    listed = ", ".join(f"{degree:,}" for degree in degrees[:-1]) + f" or {degrees[-1]:,}"
    return (
        f"{model.name} splits by tensor parallelism over {listed} GPUs (counts that divide its"
        f" {model.attention_heads:,} attention heads"
        + ("" if model.mla is not None else f" and fit its {model.kv_heads:,} KV heads")
        + f"), or whole groups of {degrees[-1]:,}: {count:,} is not one of them"
    )


def gpus_to_fit(hardware: Hardware, workload: Workload) -> int:
    """Fewest GPUs of this kind, in a usable tensor-parallel layout, that hold the weights and
    every user's cache: the smallest degree g of ``tensor_parallel_degrees`` at which
    ``memory_use`` fits (its pool, and the KV copies, grow with g).

    Past the largest degree the heads allow, G, GPUs come in whole groups of G
    (pipeline stages of one tensor-parallel group, each holding a share of the layers
    and so of the weights and cache): the fewest groups n whose ``n * G`` GPUs' usable
    memory, less the weights, gives a pool that holds the cache of G GPUs' layout.
    ``hardware.count`` is ignored.
    """
    degrees = tensor_parallel_degrees(workload.model)
    for degree in degrees:
        if memory_use(replace(hardware, count=degree), workload).fits:
            return degree
    largest = degrees[-1]
    group = memory_use(replace(hardware, count=largest), workload)
    per_group = replace(hardware, count=largest).usable_memory_bytes
    if per_group <= 0:
        raise SpecError(
            "the workspace takes all of each GPU's memory",
            field="workspace_bytes",
            hint=f"keep it below {fmt.gigabytes(hardware.gpu.addressable_bytes)}",
        )
    # n groups hold the weights once and the cache (with the largest degree's copies) once:
    # weights + cache / fraction <= n * room of one group.
    needed = group.weights_bytes + group.kv_bytes / hardware.usable_fraction
    return max(2, math.ceil(needed / per_group)) * largest


@dataclass(frozen=True)
class IterationCosts:
    """What one iteration of a serving engine moves and computes, per unit of work.

    An iteration runs ``n`` tokens through the model at once: ``decodes`` users each
    generating one token, plus chunks of prompt tokens being prefilled. It is one pass,
    on the same accounting as ``decode_step`` and ``prefill_pass`` (a batch of decodes
    alone, or one whole prompt alone, gives exactly their ``Pass``):

    bytes = weights read for ``n`` tokens + KV bytes per token * (``decode_context``
    + ``prefill_cached`` + ``prefill_tokens``), where ``decode_context`` sums the
    decoding users' current lengths, ``prefill_cached`` the prompt tokens already
    cached for the prefilling ones, and ``prefill_tokens`` the new ones written
    (``kv_bytes_per_token`` counts the KV copies);
    FLOPs = ``2 * (multiplied parameters - head) * n`` for the layers, + ``2 * head``
    for each token whose next token is predicted (every decode, and the last token of
    each prompt that finishes in this iteration: ``heads``), + decode attention FLOPs
    per cached token * ``decode_context`` + prefill attention FLOPs per token pair *
    ``prefill_pairs``. A chunk of ``c`` new tokens after ``o`` cached ones has
    ``c*o + c*(c+1)/2`` pairs. Every layer is counted as global: a sliding window's
    cap is not applied per request here (exact for models without windows).

    time = ``max(bytes / bandwidth, FLOPs / peak) + fixed_s +
    communication_s_per_token * n + token_overhead_s * sampled`` (``seconds``):
    ``bandwidth`` and ``peak`` are already scaled by the cost model's efficiencies;
    ``fixed_s`` is the per-layer overhead plus every all-reduce's latency,
    ``communication_s_per_token`` every all-reduce's bytes per token over the link, and
    ``sampled`` the decodes plus the prompts finishing. An iteration of prompt tokens alone,
    no decode, also pays ``κ * min(memory, compute)`` (``context_serial_s``; κ = 0 but under
    a harness that measured it). A simulator that inlines the time for speed must add them all.

    A weight-only format under a cost model that charges dequantization (``CostModel``):
    below ``dequant_switch_tokens`` tokens the math time grows by ``tiled_dequant_flops`` over
    the peak (each quantized weight widened once per 16-token tile); from it on the weights are
    widened first (``dequantize_s``, a fixed time
    for a given number of tokens) and read at ``widened_bytes_per_value``.
    """

    model: ModelSpec
    weight_bytes_per_value: float
    kv_bytes_per_token: float
    layer_flops_per_token: float
    head_flops_per_token: float
    decode_attention_flops_per_cached_token: float
    prefill_attention_flops_per_pair: float
    #: Bandwidth and peak the iteration is timed at: aggregate, times the cost model's shares.
    bandwidth_bytes_per_s: float
    peak_flops_per_s: float
    #: All-reduces per iteration (``2L`` on several GPUs, else 0), the latency of each,
    #: and the seconds each adds per token of the iteration (``2 (G-1)/G * d * 2 / link``).
    allreduces: int = 0
    allreduce_latency_s: float = 0.0
    allreduce_s_per_token: float = 0.0
    #: The cost model's fixed time per iteration: ``layers * overhead per layer``.
    overhead_s: float = 0.0
    #: The cost model's host time per token sampled (each decode, each finished prompt).
    token_overhead_s: float = 0.0
    #: κ: what an iteration with prompt tokens and no decode adds, ``κ * min(memory, compute)``
    #: (``CostModel.context_serial_share``, ``context_serial_s``).
    context_serial_share: float = 0.0
    #: All GPUs' links to host memory together, one direction, bytes/s (None: the spec has none).
    host_link_bytes_per_s: float | None = None
    #: Dequantization (``CostModel``): δ, the switch, and the width the weights are widened to;
    #: ``widened_bytes_per_value`` is 0 when the passes do not dequantize.
    dequant_overhead: float = 0.0
    dequant_switch_tokens: int | None = None
    widened_bytes_per_value: float = 0.0
    #: The weights' format: the blocks are read at ``weight_bytes_per_value``, the output head
    #: and the embedding rows at the widths its checkpoints keep them (``arch.weights_read_bytes``).
    weight_precision: str = "bf16"

    @property
    def fixed_s(self) -> float:
        """Seconds every iteration pays whatever its size: ``overhead + all-reduces * latency``."""
        return self.overhead_s + self.allreduces * self.allreduce_latency_s

    @property
    def communication_s_per_token(self) -> float:
        """Seconds the all-reduces add per token of the iteration: ``all-reduces * s per token``."""
        return self.allreduces * self.allreduce_s_per_token

    def weights_bytes(self, tokens: float) -> float:
        """Weight bytes a pass over ``tokens`` tokens reads (every weight if dense); each count
        worked out once per costs (a simulation asks for the same few counts millions of times,
        and ``weights_read_bytes`` hashes the whole model spec on every call)."""
        memo = self._weights_memo
        read = memo.get(tokens)
        if read is None:
            read = memo[tokens] = arch.weights_read_bytes(self.model, tokens, self.weight_precision)
        return read

    @cached_property
    def _weights_memo(self) -> dict[float, float]:
        return {}

    def iteration(
        self,
        decodes: int,
        decode_context: float,
        prefill_tokens: int = 0,
        prefill_cached: float = 0,
        prefill_pairs: float = 0,
        prompts_finished: int = 0,
    ) -> Pass:
        """The iteration's ``Pass``; its ``seconds`` is the time above."""
        return Pass(
            *self._iteration_parts(
                decodes, decode_context, prefill_tokens, prefill_cached, prefill_pairs, prompts_finished
            )
        )

    def iteration_seconds(self, *arguments: float) -> float:
        """``iteration(...).seconds`` without building the ``Pass`` (the serving simulator asks
        once an iteration holding prefill): ``max(memory, compute) + all-reduces + overheads +
        widening``, through ``pass_seconds`` as ``Pass.seconds`` is (nothing overlapped here).
        Its arguments are ``iteration``'s, all six, in order."""
        _, _, memory_s, compute_s, communication_s, overhead_s, widen_s = self._iteration_parts(*arguments)
        return pass_seconds(memory_s, compute_s, 0.0, communication_s, overhead_s, widen_s)

    def _iteration_parts(
        self,
        decodes: int,
        decode_context: float,
        prefill_tokens: int,
        prefill_cached: float,
        prefill_pairs: float,
        prompts_finished: int,
    ) -> tuple[float, float, float, float, float, float, float]:
        """An iteration's ``Pass`` fields in order (bytes, flops, memory s, compute s, all-reduces,
        overheads, widening): all zero when it holds no token."""
        tokens = decodes + prefill_tokens
        if tokens == 0:
            return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        bytes_moved = self.weights_bytes(tokens) + self.kv_bytes_per_token * (
            decode_context + prefill_cached + prefill_tokens
        )
        linear = self.layer_flops_per_token * tokens + self.head_flops_per_token * (decodes + prompts_finished)
        flops = (
            linear
            + self.decode_attention_flops_per_cached_token * decode_context
            + self.prefill_attention_flops_per_pair * prefill_pairs
        )
        math_flops, widen_s = flops, 0.0
        if self.widened_bytes_per_value:
            switch = self.dequant_switch_tokens
            read = widened_parameters(self.model, tokens, self.weight_precision)
            if switch is not None and tokens >= switch:
                bytes_moved += read * (self.widened_bytes_per_value - self.weight_bytes_per_value)
                widened = self.weight_bytes_per_value + self.widened_bytes_per_value
                widen_s = read * widened / self.bandwidth_bytes_per_s
            else:
                math_flops += tiled_dequant_flops(self.dequant_overhead, read, tokens)
        memory_s = bytes_moved / self.bandwidth_bytes_per_s
        compute_s = math_flops / self.peak_flops_per_s
        overhead_s = self.overhead_s + self.token_overhead_s * (decodes + prompts_finished)
        if self.context_serial_share and not decodes:
            overhead_s += context_serial_s(self.context_serial_share, memory_s, compute_s)
        return (
            bytes_moved,
            flops,
            memory_s,
            compute_s,
            self.allreduces * (self.allreduce_latency_s + self.allreduce_s_per_token * tokens),
            overhead_s,
            widen_s,
        )

    def prefill(
        self, tokens: int, cached: float = 0, *, decodes: int = 0, decode_context: float = 0, finishes: bool = True
    ) -> Pass:
        """``tokens`` new prompt tokens after ``cached`` of the same prompt already in the cache (a
        prefix cache hit, or the chunks before this one), optionally beside ``decodes`` decoding users
        whose contexts sum to ``decode_context``, as one iteration.

        Token pairs = ``tokens * cached + tokens * (tokens + 1) / 2`` (each new token attends to every
        cached one and, causally, to the new ones up to itself); the cached tokens' KV is read, not
        written. ``finishes``: this chunk ends the prompt, so its last token runs the output head.
        With ``cached = 0`` and no decodes it is ``prefill_pass`` for a prompt of ``tokens``.
        """
        pairs = tokens * cached + tokens * (tokens + 1) / 2
        return self.iteration(decodes, decode_context, tokens, cached, pairs, 1 if finishes else 0)

    def swap_seconds(self, tokens: int) -> float:
        """Time to copy ``tokens`` tokens of KV cache one way over the host links:
        ``tokens * KV bytes per token / (GPUs * host link)``; SpecError when the GPU spec has none."""
        if self.host_link_bytes_per_s is None:
            raise SpecError(
                "the GPU spec has no host link, so KV blocks cannot be swapped to host memory",
                field="preemption",
                hint="use --preemption recompute, or add host_link_bytes_per_s and host_link_source to the GPU's entry",
            )
        return tokens * self.kv_bytes_per_token / self.host_link_bytes_per_s


def iteration_costs(hardware: Hardware, workload: Workload) -> IterationCosts:
    """The per-unit costs of serving ``workload.model`` at its precisions on ``hardware``
    (``workload``'s batch, context and prompt are not used), at ``hardware.costs``."""
    model = workload.model
    hardware = resolved(hardware, workload)
    head = 2.0 * arch.output_head_parameters(model)
    allreduces = allreduces_per_pass(hardware, model)
    link = hardware.link_bytes_per_s
    per_token = 0.0
    latency = 0.0
    if allreduces and link is not None:
        # The one all-reduce formula (``allreduce_wire``), as ``Hardware.allreduce_s`` charges it.
        per_token = allreduce_bytes(model, 1) * hardware.allreduce_wire[0]
        latency = hardware.allreduce_latency
    host_link = hardware.gpu.host_link_bytes_per_s
    costs = hardware.costs
    charged = costs.dequantizes and dequantizes(hardware, workload.weight_precision)
    return IterationCosts(
        model=model,
        weight_bytes_per_value=bytes_per_value(workload.weight_precision),
        weight_precision=workload.weight_precision,
        kv_bytes_per_token=kv_copies(hardware, model) * workload.kv_bytes_per_token,
        layer_flops_per_token=2.0 * arch.multiplied_parameters(model) - head,
        head_flops_per_token=head,
        decode_attention_flops_per_cached_token=arch.attention_flops_per_cached_token(model, latent=True),
        prefill_attention_flops_per_pair=arch.attention_flops_per_cached_token(model, latent=False),
        bandwidth_bytes_per_s=hardware.effective_bandwidth_bytes_per_s,
        peak_flops_per_s=hardware.effective_peak_flops_per_s,
        allreduces=allreduces if link is not None else 0,
        allreduce_latency_s=latency,
        allreduce_s_per_token=per_token,
        overhead_s=model.layers * hardware.costs.layer_overhead_s,
        token_overhead_s=hardware.costs.token_overhead_s,
        context_serial_share=costs.context_serial_share,
        host_link_bytes_per_s=None if host_link is None else hardware.count * host_link,
        dequant_overhead=costs.dequant_overhead if charged else 0.0,
        dequant_switch_tokens=costs.dequant_switch_tokens if charged else None,
        widened_bytes_per_value=bytes_per_value(hardware.compute_precision) if charged else 0.0,
    )
