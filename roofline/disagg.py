"""Disaggregated prefill and decode: the KV transfer between the pools, the pool ratio, goodput.

Disaggregated serving (DistServe, Splitwise, Mooncake, NVIDIA Dynamo) runs prefill on one pool
of GPUs and decode on another. A request's prompt is prefilled on a prefill instance, its KV
cache is sent to a decode instance, and the decode instance generates the rest. Chapter 8's
closed forms, on the accounting of ``performance`` (ceiling costs by default; a fitted cost
model gives the calibrated expectation):

Public API
    ``LINKS``: the links a KV cache can travel over, each read from the GPU's spec, one direction:
        ``"nvlink"`` the scale-up link inside a domain (``interconnect.link_bytes_per_s``: NVLink 4 on
        an H100, 450 GB/s), ``"network"`` the scale-out NIC per GPU between domains
        (``interconnect.scale_out_bytes_per_s``: on an H100 one 400 Gb/s InfiniBand NIC, 50 GB/s, as
        gpus.toml cites it; a RoCE NIC of the same line rate gives the same figure), ``"pcie"`` the GPU's
        host link (``host_link_bytes_per_s``), for a copy staged through host memory.
    ``link_bytes_per_s(gpu, link)``: that figure, SpecError naming the field when the spec lacks it.
    ``kv_transfer(hardware, workload, prompt, link="network", latency_s=0.0)`` -> ``KvTransfer``
        bytes = ``prompt * KV bytes per token`` (the cache one request's prompt leaves, each token
        once); the prefill instance's G GPUs each send their own shard over their own link, so
        seconds = ``latency + bytes / (G * link bytes/s * link efficiency)``. ``prefill_s`` beside it
        is the prompt's prefill on the same GPUs (``performance.prefill_pass``), the time a
        layer-by-layer transfer overlaps: ``exposed_layerwise_s`` = ``latency + max(transfer / L,
        transfer - prefill * (L - 1) / L)``, what would be left after the last layer's prefill ends if
        layer l's KV started moving as soon as layer l is done (an assumption of this formula, not a
        measured engine's behaviour). The ceiling charges no setup latency (``latency_s = 0``): a
        transfer takes at least its bytes over the link.
    ``pool_rates(prefill_hw, decode_hw, workload, prompt, output, decode_batch, prefill_batch=1)``
        -> ``PoolRates``: requests per second one prefill instance and one decode instance sustain
        when kept busy. Prefill: ``prefill_batch`` prompts per iteration,
        ``R_P = prefill_batch / t_prefill`` (the batch's prompts as one iteration, each attending
        to itself only); decode: ``decode_batch`` users each at mean context
        ``prompt + output / 2``, ``R_D = decode_batch / ((output - 1) * t_step)`` (the first token
        comes from the prefill). ``prefill_gpus_per_decode_gpu`` = ``(R_D * G_P) / (R_P * G_D)``:
        rate matching, ``N_P * R_P = N_D * R_D``, in GPUs: TensorRT-LLM's "ratio of context to
        generation workers such that aggregated throughput of context servers matches the aggregated
        throughput of generation servers" (https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/
        blogs/tech_blog/blog5_Disaggregated_Serving_in_TensorRT-LLM.md, "Measurement Methodology").
    ``ttft_limited_rate(prefill_s, ttft_slo_s, transfer_s=0.0)``
        Most requests per second one prefill instance takes with a *mean* TTFT within the SLO,
        treating it as an M/D/1 queue (Poisson arrivals, one prompt at a time, each taking the same
        D): the M/D/1 mean time in the system, ``D + lam D^2 / (2 (1 - lam D))``, plus the transfer,
        so with ``k = (SLO - transfer) / D - 1`` the utilization is at most
        ``2k / (1 + 2k)`` and ``lam = 2k / ((1 + 2k) D)`` (0 when one prefill already misses it).
    ``itl_limited_batch(decode_hw, workload, prompt, output, itl_slo_s, max_batch)``
        The largest decode batch, at most ``max_batch`` and what the KV pool holds at full length
        ``prompt + output``, whose step at the mean context is within the ITL SLO (0 if none).
    ``disaggregated_goodput(prefill_hw, decode_hw, workload, prompt, output, prefill_instances,
        decode_instances, ttft_slo_s, itl_slo_s, link="network", max_batch=256)`` -> ``Goodput``
        ``min(N_P * ttft_limited_rate, N_D * R_D at itl_limited_batch)`` requests/s, and per GPU
        ``/ (N_P G_P + N_D G_D)``: an estimate from the mean TTFT, not DistServe's P90.

The serving simulator runs the same split request by request (``disaggserving``, ``simulate
--disaggregate``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from .errors import SpecError
from .performance import Hardware, Workload, decode_pass, iteration_costs, memory_use, prefill_pass
from .specs import GpuSpec

Link = Literal["nvlink", "network", "pcie"]
LINKS: tuple[Link, ...] = ("nvlink", "network", "pcie")


def link_bytes_per_s(gpu: GpuSpec, link: str) -> float:
    """One GPU's bandwidth, one direction, over ``link`` (``LINKS``), from its spec."""
    if link not in LINKS:
        raise SpecError(f"unknown link {link!r}", field="kv_link", hint=f"use one of {', '.join(LINKS)}")
    if link == "pcie":
        if gpu.host_link_bytes_per_s is None:
            raise SpecError(
                f"{gpu.id} has no host link in its spec",
                field="host_link_bytes_per_s",
                hint="add host_link_bytes_per_s and host_link_source, or send the KV over nvlink or network",
            )
        return gpu.host_link_bytes_per_s
    if gpu.interconnect is None:
        raise SpecError(
            f"{gpu.id} has no interconnect in its spec, so no {link} to send KV over",
            field="interconnect",
            hint="add an [interconnect] table to the GPU's entry, or use --kv-link pcie",
        )
    if link == "nvlink":
        return gpu.interconnect.link_bytes_per_s
    return gpu.interconnect.scale_out_bytes_per_s


def link_name(gpu: GpuSpec, link: str) -> str:
    """The link in words: the spec's scale-up fabric, the scale-out network or PCIe."""
    if link == "nvlink" and gpu.interconnect is not None:
        return gpu.interconnect.scale_up
    if link == "network":
        return "the scale-out network (InfiniBand or RoCE NIC per GPU)"
    return "the PCIe host link"


@dataclass(frozen=True)
class KvTransfer:
    """One request's KV cache sent from a prefill instance to a decode instance."""

    prompt: int
    link: str
    bytes: float
    link_bytes_per_s: float
    seconds: float
    prefill_s: float
    exposed_layerwise_s: float

    @property
    def transfer_to_prefill(self) -> float:
        """How the transfer compares with the prefill it follows: ``seconds / prefill_s``."""
        return self.seconds / self.prefill_s


def kv_transfer(
    hardware: Hardware, workload: Workload, prompt: int, link: str = "network", latency_s: float = 0.0
) -> KvTransfer:
    """The KV transfer of a ``prompt``-token prompt from ``hardware`` (the prefill instance)
    over ``link`` (module docstring)."""
    if isinstance(prompt, bool) or not isinstance(prompt, int) or prompt < 1:
        raise SpecError(f"must be a whole number of at least 1, got {prompt!r}", field="prompt")
    if isinstance(latency_s, bool) or not isinstance(latency_s, (int, float)) or not 0 <= latency_s <= 1:
        raise SpecError(f"must be between 0 and 1 s, got {latency_s!r}", field="kv_latency_s")
    per_gpu = link_bytes_per_s(hardware.gpu, link) * hardware.costs.link_efficiency
    moved = prompt * workload.kv_bytes_per_token
    wire = moved / (hardware.count * per_gpu)
    prefill = prefill_pass(hardware, replace(workload, batch=1, context=0, prompt=prompt)).seconds
    layers = workload.model.layers
    exposed = latency_s + max(wire / layers, wire - prefill * (layers - 1) / layers)
    return KvTransfer(prompt, link, moved, hardware.count * per_gpu, latency_s + wire, prefill, exposed)


def _decode_step_s(hardware: Hardware, workload: Workload, prompt: int, output: int, batch: int) -> float:
    context = prompt + output // 2
    return decode_pass(hardware, replace(workload, batch=batch, context=context, prompt=0), batch).seconds


@dataclass(frozen=True)
class PoolRates:
    """Requests per second one busy prefill instance and one busy decode instance serve."""

    prefill_requests_per_s: float
    decode_requests_per_s: float
    prefill_gpus: int
    decode_gpus: int

    @property
    def prefill_instances_per_decode_instance(self) -> float:
        """Rate matching, ``N_P / N_D = R_D / R_P``."""
        return self.decode_requests_per_s / self.prefill_requests_per_s

    @property
    def prefill_gpus_per_decode_gpu(self) -> float:
        """The balanced ratio in GPUs: ``(R_D * G_P) / (R_P * G_D)``."""
        return self.prefill_instances_per_decode_instance * self.prefill_gpus / self.decode_gpus


def _check_lengths(prompt: int, output: int) -> None:
    for name, value in (("prompt", prompt), ("output", output)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SpecError(f"must be a whole number of at least 1, got {value!r}", field=name)
    if output < 2:
        raise SpecError(
            "a decode pool needs outputs of at least 2 tokens", field="output", hint="use --output 2 or more"
        )


def pool_rates(
    prefill_hw: Hardware,
    decode_hw: Hardware,
    workload: Workload,
    prompt: int,
    output: int,
    decode_batch: int,
    prefill_batch: int = 1,
) -> PoolRates:
    """One prefill and one decode instance's request rates when busy (module docstring)."""
    _check_lengths(prompt, output)
    # b prompts in one iteration: b * P tokens, each prompt's own b * P(P+1)/2 causal pairs, b heads
    # (IterationCosts, the simulator's accounting; b = 1 is performance.prefill_pass).
    pairs = prefill_batch * prompt * (prompt + 1) / 2
    tokens = prefill_batch * prompt
    prefill = iteration_costs(prefill_hw, workload).iteration(0, 0, tokens, 0, pairs, prefill_batch)
    prefill_rate = prefill_batch / prefill.seconds
    step = _decode_step_s(decode_hw, workload, prompt, output, decode_batch)
    decode_rate = decode_batch / ((output - 1) * step)
    return PoolRates(prefill_rate, decode_rate, prefill_hw.count, decode_hw.count)


def ttft_limited_rate(prefill_s: float, ttft_slo_s: float, transfer_s: float = 0.0) -> float:
    """Requests/s one prefill instance takes at a mean TTFT within the SLO (M/D/1, module docstring)."""
    check_slo("ttft_slo", ttft_slo_s)
    headroom = (ttft_slo_s - transfer_s) / prefill_s - 1.0
    if headroom <= 0:
        return 0.0
    return 2.0 * headroom / ((1.0 + 2.0 * headroom) * prefill_s)


def check_slo(name: str, seconds: float) -> float:
    """SpecError, in one line, unless ``seconds`` is a positive number of seconds."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < math.inf:
        raise SpecError(
            f"must be a positive number of seconds, got {seconds!r}",
            field=name,
            hint="give the target in seconds, e.g. --ttft-slo 1 --tpot-slo 0.05",
        )
    return float(seconds)


def itl_limited_batch(
    decode_hw: Hardware, workload: Workload, prompt: int, output: int, itl_slo_s: float, max_batch: int = 256
) -> int:
    """The largest decode batch within the ITL SLO and the KV pool (module docstring); 0 if none."""
    _check_lengths(prompt, output)
    check_slo("tpot_slo", itl_slo_s)
    fits = memory_use(decode_hw, replace(workload, batch=1, context=prompt + output, prompt=0)).max_batch
    limit = max_batch if fits is None else min(max_batch, fits)
    best = 0
    low, high = 1, limit
    while low <= high:  # the step time grows with the batch, so bisect
        mid = (low + high) // 2
        if _decode_step_s(decode_hw, workload, prompt, output, mid) <= itl_slo_s:
            best, low = mid, mid + 1
        else:
            high = mid - 1
    return best


@dataclass(frozen=True)
class Goodput:
    """A disaggregated deployment's estimated goodput and which pool limits it."""

    requests_per_s: float
    prefill_pool_rate: float
    decode_pool_rate: float
    gpus: int
    transfer: KvTransfer
    decode_batch: int

    @property
    def per_gpu(self) -> float:
        """Goodput per GPU: ``requests_per_s / GPUs``."""
        return self.requests_per_s / self.gpus

    @property
    def limited_by(self) -> str:
        """ "prefill" or "decode", whichever pool's rate is the smaller."""
        return "prefill" if self.prefill_pool_rate <= self.decode_pool_rate else "decode"


def disaggregated_goodput(
    prefill_hw: Hardware,
    decode_hw: Hardware,
    workload: Workload,
    prompt: int,
    output: int,
    prefill_instances: int,
    decode_instances: int,
    ttft_slo_s: float,
    itl_slo_s: float,
    link: str = "network",
    max_batch: int = 256,
) -> Goodput:
    """Estimated goodput of ``N_P`` prefill and ``N_D`` decode instances (module docstring)."""
    for name, count in (("prefill instances", prefill_instances), ("decode instances", decode_instances)):
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise SpecError(
                f"{name} must be a whole number of at least 1, got {count!r}",
                field="disaggregate",
                hint="write P:D with both at least 1, e.g. --disaggregate 1:1",
            )
    transfer = kv_transfer(prefill_hw, workload, prompt, link)
    prefill_rate = prefill_instances * ttft_limited_rate(transfer.prefill_s, ttft_slo_s, transfer.seconds)
    batch = itl_limited_batch(decode_hw, workload, prompt, output, itl_slo_s, max_batch)
    decode_rate = 0.0
    if batch:
        decode_rate = (
            decode_instances * pool_rates(prefill_hw, decode_hw, workload, prompt, output, batch).decode_requests_per_s
        )
    gpus = prefill_instances * prefill_hw.count + decode_instances * decode_hw.count
    return Goodput(min(prefill_rate, decode_rate), prefill_rate, decode_rate, gpus, transfer, batch)
