"""What a mixture-of-experts decode step reads and sends, one formula a function.

Notation, the site's (docs/notation.toml) where it has the symbol: E routed experts a layer,
E_tok of them per token, E_shared shared experts, d the hidden size, B tokens in the step
(decode: one per user), G expert-parallel ranks (GPUs).

- ``experts_touched``: expected distinct experts one layer runs for B tokens,
  ``E * (1 - (1 - E_tok/E)**B) + E_shared``. Each token picks a given routed expert with
  probability E_tok/E under uniform routing, so the routed part is exact for that routing; real routers are
  skewed, which touches fewer experts but loads the busiest rank more (``expert_imbalance``).
- ``tokens_per_expert``: ``B * E_tok / E``, the rows one routed expert's GEMM gets on average.
- ``expert_critical_batch``: the batch at which that reaches a GPU's critical batch,
  ``E / E_tok`` times a dense model's.
- ``alltoall_bytes_per_token``: what one token's E_tok expert copies carry through one MoE
  layer's dispatch and combine, ``E_tok * d * (b_dispatch + b_combine)``.
- ``destinations_per_token``: the destinations those copies must reach at the least, one copy
  per remote node (network) and one per other GPU of the token's own node (scale-up link), under
  uniform routing and the model's node limit: what the ceiling charges, per destination, not per
  expert copy (``epdeploy.alltoall_s``).

Precisions of the all-to-all: fp8 dispatch and bf16 combine are DeepEP's DeepSeek-V3/R1
setting ("FP8 dispatching and BF16 combining", https://github.com/deepseek-ai/DeepEP/blob/
0297fc801788b14b338a46554faca28d419e518a/docs/legacy.md). An fp8 copy carries one fp32
scale per 128 channels (DeepEP's low-latency kernels: ``kNumPerChannels = 128``, float
scales), so 7,168 channels cost 7,168 + 4 * 56 = 7,392 bytes.
"""

from __future__ import annotations

import math

from .errors import SpecError

#: Bytes one channel of a token's hidden vector takes on the wire, scales counted. fp8: one byte
#: plus a 4-byte fp32 scale per 128 channels (DeepEP, see the module docstring).
ALLTOALL_BYTES_PER_VALUE = {"fp8": 1.0 + 4.0 / 128.0, "bf16": 2.0, "fp16": 2.0, "fp32": 4.0}

#: The precisions of DeepSeek's design: fp8 dispatch, bf16 combine (DeepEP, module docstring).
DEFAULT_DISPATCH_PRECISION = "fp8"
DEFAULT_COMBINE_PRECISION = "bf16"

#: Busiest rank's routed tokens over the mean. 1 is uniform routing, the ceiling's assumption:
#: a skew only slows a step, so an upper bound may not charge one it cannot know. Measured:
#: TensorRT-LLM's DeepSeek-R1 on 32 GB200s at EP32, imbalance ratio (max - mean) / mean of
#: 1.564 without its load balancer and 0.109 with it (factors 2.564 and 1.109; blog 4,
#: "Offline EP Load Balancer", Table 1, https://github.com/NVIDIA/TensorRT-LLM/blob/
#: 1d263f15a979ef2902c60de3f6238bcc0952bb29/docs/source/blogs/tech_blog/
#: blog4_Scaling_Expert_Parallelism_in_TensorRT-LLM.md).
DEFAULT_EXPERT_IMBALANCE = 1.0
MEASURED_IMBALANCE_NO_EPLB = 2.564
MEASURED_IMBALANCE_EPLB = 1.109


def check_imbalance(factor: float, field: str = "expert_imbalance") -> float:
    """``factor`` when it is a finite number of at least 1; SpecError otherwise."""
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor < 1:
        raise SpecError(
            f"the busiest rank's load over the mean is at least 1, got {factor!r}",
            field=field,
            hint=f"give 1 (uniform routing) or more, e.g. {MEASURED_IMBALANCE_EPLB} (TensorRT-LLM's EPLB at EP32)",
        )
    return float(factor)


def routed_experts_touched(experts: int, experts_per_token: int, tokens: float) -> float:
    """Expected distinct routed experts one layer runs for ``tokens`` tokens:
    ``E * (1 - (1 - E_tok/E)**B)``; E_tok at one token, approaching E as B grows (0 at B = 0)."""
    if tokens <= 0:
        return 0.0
    return experts * (1.0 - (1.0 - experts_per_token / experts) ** tokens)


def experts_touched(experts: int, experts_per_token: int, tokens: float, shared: int = 0) -> float:
    """Routed experts touched (``routed_experts_touched``) plus the ``E_shared`` shared experts,
    which every token runs: ``E * (1 - (1 - E_tok/E)**B) + E_shared``. DeepSeek-V3 (E 256,
    E_tok 8, E_shared 1) at B = 64:
    256 * (1 - (31/32)**64) + 1 = 223.4."""
    return routed_experts_touched(experts, experts_per_token, tokens) + (shared if tokens > 0 else 0)


def tokens_per_expert(tokens: float, experts_per_token: int, experts: int) -> float:
    """Mean rows one routed expert's GEMM gets: ``B * E_tok / E`` (DeepSeek-V3 at B = 256: 8)."""
    return tokens * experts_per_token / experts


def expert_critical_batch(dense_critical_batch: float, experts: int, experts_per_token: int) -> float:
    """Tokens a step needs before the mean expert GEMM reaches the critical batch: ``B* * E / E_tok``.

    An expert with m rows does ``2 m`` FLOPs per weight it reads, as a dense layer with batch m
    does, so it turns compute-bound at the same m = B* (``quantization.critical_batch_for``);
    m = B E_tok / E then gives B = B* E / E_tok. DeepSeek-V3 (E/E_tok = 32) on an H100 at fp8 math
    (B* = 295): 9,452 tokens a step.
    """
    return dense_critical_batch * experts / experts_per_token


def alltoall_value_bytes(precision: str, field: str) -> float:
    """Bytes one channel takes on the wire at ``precision`` (``ALLTOALL_BYTES_PER_VALUE``)."""
    try:
        return ALLTOALL_BYTES_PER_VALUE[precision]
    except KeyError:
        raise SpecError(
            f"unknown all-to-all precision {precision!r}",
            field=field,
            hint="choose " + ", ".join(ALLTOALL_BYTES_PER_VALUE),
        ) from None


def alltoall_bytes_per_token(
    hidden_size: int,
    experts_per_token: int,
    dispatch: str = DEFAULT_DISPATCH_PRECISION,
    combine: str = DEFAULT_COMBINE_PRECISION,
) -> float:
    """Bytes one token sends through one MoE layer: ``E_tok * d * (b_dispatch + b_combine)``.

    Dispatch sends one copy of the hidden vector to each of its E_tok experts; combine brings
    E_tok outputs back. DeepSeek-V3 (d 7,168, E_tok 8, fp8 dispatch with scales, bf16 combine):
    8 * 7,392 + 8 * 14,336 = 59,136 + 114,688 = 173,824 bytes.
    """
    per_value = alltoall_value_bytes(dispatch, "dispatch_precision") + alltoall_value_bytes(
        combine, "combine_precision"
    )
    return experts_per_token * hidden_size * per_value


def hit_probability(pool: float, unit: float, picks: int) -> float:
    """Chance that ``picks`` distinct experts drawn uniformly from ``pool`` land at least once in a
    given destination holding ``unit`` of them: ``1 - prod_{i<k} (pool - unit - i) / (pool - i)``
    (0 when it holds none; 1 once the others cannot take all ``picks``)."""
    if unit <= 0 or pool <= 0:
        return 0.0
    miss = 1.0
    for i in range(picks):
        if pool - unit - i <= 0:
            return 1.0
        miss *= (pool - unit - i) / (pool - i)
    return 1.0 - miss


def destinations_per_token(experts: int, experts_per_token: int, ep: int, domain_gpus: int, node_limit: int = 0):
    """``(remote nodes, other GPUs of its own node)`` one token's E_tok experts reach, expected under
    uniform routing: the fewest copies any correct all-to-all sends, since a token needs one copy per
    destination node over the network (DeepEP's normal kernels send it once per node over RDMA and
    forward it inside the node over NVLink) and one per other GPU of its own node.

    With N = ceil(G / D) nodes of s = E/N experts, a token may reach n = min(N, M) of them (M the
    model's ``node_limit``, DeepSeek-V3's ``topk_group`` 4; 0: none), a pool of n s experts:

    - remote nodes = (N - 1) * (n / N) * P(n s, s, E_tok) (``hit_probability``); at n = N this is
      DeepEP's own expected scale-out ranks times (1 - 1/N) (``get_expected_topk``);
    - other GPUs of its node = (min(G, D) - 1) * (n / N) * P(n s, E/G, E_tok).

    DeepSeek-V3 (E 256, E_tok 8, M 4) on EP32 of 8-GPU nodes: 2.71 remote nodes, not the 6 copies
    that charging every off-node expert copy counts."""
    nodes = math.ceil(ep / domain_gpus)
    reach = min(nodes, node_limit) if node_limit else nodes
    per_node = experts / nodes
    pool = reach * per_node
    chosen = reach / nodes
    remote = (nodes - 1) * chosen * hit_probability(pool, per_node, experts_per_token)
    local = (min(ep, domain_gpus) - 1) * chosen * hit_probability(pool, experts / ep, experts_per_token)
    return remote, local


def scale_out_copies(experts_per_token: int, ep: int, domain_gpus: int) -> float:
    """Expert copies of one token on GPUs outside its own scale-up domain, ``E_tok max(0, G - D)/G``:
    what charging every copy separately would send over the network (for comparison with
    ``destinations_per_token``; the ceiling does not charge it)."""
    return experts_per_token * max(0, ep - domain_gpus) / ep


def check_ep(experts: int, ep: int, field: str = "ep", redundant: int = 0) -> int:
    """``ep`` when it spreads the ``experts + redundant`` expert slots evenly, at most one rank
    per routed expert; SpecError naming the nearest divisors otherwise. Redundant slots are
    copies of hot experts (DeepSeek-V3 serves 256 experts in 288 slots, EP144 decode: 2 each)."""
    if isinstance(ep, bool) or not isinstance(ep, int) or ep < 1:
        raise SpecError(f"must be a whole number, at least 1, got {ep!r}", field=field)
    if isinstance(redundant, bool) or not isinstance(redundant, int) or not 0 <= redundant <= 100_000:
        raise SpecError(f"must be a whole number from 0 to 100,000, got {redundant!r}", field="redundant_experts")
    slots = experts + redundant
    if ep > experts:
        raise SpecError(
            f"{ep:,} expert-parallel ranks is more than the model's {experts:,} experts",
            field=field,
            hint=f"give at most {experts:,}, one expert a GPU or more",
        )
    if slots % ep:
        divisors = [n for n in range(2, min(slots, experts) + 1) if slots % n == 0]
        near = sorted(divisors, key=lambda n: (abs(n - ep), n))[:3]
        what = f"{experts:,} experts" if not redundant else f"{experts:,} + {redundant:,} = {slots:,} expert slots"
        raise SpecError(
            f"{what} do not split evenly over {ep:,} GPUs",
            field=field,
            hint=f"choose a divisor of {slots:,}: "
            + ", ".join(f"{n:,}" for n in sorted(near))
            + ("" if redundant else ", or add --redundant-experts"),
        )
    return ep
