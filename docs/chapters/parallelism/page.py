"""Chapter 6, "Splitting a Model Across GPUs": every number its prose quotes, its tables and its figures.

The page is ``index.md`` beside this module; its Run cell is ``programs/tp_sweep.py``, its
calculator ``calculators/deploy.py`` and its chart builders are in ``charts.py``. Every
model figure comes from the package: ``roofline.performance`` (a step on a tensor-parallel
group, its all-reduces), ``roofline.deployment`` (pipeline stages, memory per GPU, the best
split), ``roofline.parallelism`` (usable degrees, the bubble, the latency-optimal degree)
and ``roofline.measured`` (published runs). All-reduce latencies are the GPU specs' presets;
the one published figure the prose cites that is neither a preset nor a row of
``measurements.toml`` (a slowdown report) is in ``CITED`` below, with its source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from roofline import Hardware, Workload, decode_step, gpus_to_fit, load_calibration, memory_use
from roofline import formatting as fmt
from roofline.architecture import weight_bytes
from roofline.calibration import cost_model, expected_costs
from roofline.deployment import Split, best_tp_degree, deploy, pipeline_decode
from roofline.measured import Measurement, compare, load_measurements
from roofline.memorykinds import DRIVER, labelled, memory_of
from roofline.parallelism import (
    crossover,
    latency_optimal_degree,
    pipeline_bubble_fraction,
    ring_allreduce_latency_s,
    ring_step_for_base_s,
    stage_layers,
    tp_pp_splits,
    usable_tp_degrees,
)
from roofline.performance import allreduce_bytes, allreduces_per_pass, kv_copies
from roofline.specs import allreduce_bytes_factor
from sitegen import escape
from sitegen.context import Context
from sitegen.page import PageContent
from sitegen.tables import markdown_table
from sitegen.values import percent

from . import charts

GPU = "h100-sxm"
#: The chapter's running example: a 70B model in fp8 on H100s, its KV cache in bf16: the deployment the
#: quantization chapter counts users for, so both chapters give one user count (issue 35, M2).
MODEL, PRECISION, KV_PRECISION = "llama-3.1-70b", "fp8", "bf16"
#: Capacity: a model that needs several GPUs just to hold its weights.
CAP_MODEL, CAP_PRECISION = "llama-3.1-405b", "bf16"
#: KV room: users that fit at this context on 1, 2, 4 and 8 GPUs.
ROOM_CONTEXT = 8192
ROOM_GPUS = (1, 2, 4, 8)
#: A decode step's message at these batches, and a prefill's.
MSG_BATCH = 64
MSG_PROMPT = 2048
#: Where tensor parallelism stops: a small model, one user, NCCL's latency.
BEST_MODEL = "llama-3.1-8b"
NCCL = "nccl"
#: The all-reduce table's GPU counts.
LATENCY_GPUS = (2, 4, 8)
#: gpt-fast's sweep: its GPU, model and the TP degrees it ran.
GF_GPU, GF_MODEL, GF_DEGREES = "a100-80gb", "llama-3.1-8b", (1, 2, 4, 8)
GF_PREFIX = "gptfast-llama-3.1-8b-bf16-"
#: The links table's columns, less its last (the all-reduces a step, counted per model).
LINK_COLUMNS = ["Link", "GB/s each way", "Algorithm: bytes a GPU moves", "Latency on 8", "One all-reduce"]
#: Pipeline pictures: stages and micro-batches.
PP_STAGES = 4
PP_MICRO = (1, 4, 32)
#: NVIDIA's comparison: 405B in fp8 on 8 H200s, TP8 against PP8.
NV_GPU, NV_MODEL, NV_GPUS, NV_MICRO, NV_CONTEXT = "h200", "llama-3.1-405b", 8, 8, 1024
NV_BATCHES = (1, 4, 16, 64, 256, 512, 1024, 2048)
#: Interview depth: ways to use eight GPUs for the running model, (label, GPUs a replica, split, replicas).
LAYOUTS = (
    ("1 × TP8", 8, Split(8, 1), 1),
    ("2 × TP4 replicas", 4, Split(4, 1), 2),
    ("4 × TP2 replicas", 2, Split(2, 1), 4),
    ("TP4 × PP2", 8, Split(4, 2, 2), 1),
    ("PP8", 8, Split(1, 8, 8), 1),
)
LAYOUT_CONTEXT = 4096
#: Self-check 4: a pipeline of the running model on H100s.
Q4_STAGES, Q4_MICRO, Q4_CONTEXT = 4, 4, 1024


@dataclass(frozen=True)
class Cited:
    """A published figure the prose quotes that is not a measurements.toml row."""

    value: float
    source: str


#: NCCL's cost model prices a ring all-reduce on NVLink with the LL protocol at baseLat 3.6 us plus
#: hwLat 0.47 us a step (src/graph/tuning.cc at commit 01afd20): the base its own authors assume.
NCCL_TUNING_BASE_S = 3.6e-6
NCCL_TUNING_SOURCE = "https://github.com/NVIDIA/nccl/blob/01afd20a77b5804e0ecf1042509dd9d20ebf9e93/src/graph/tuning.cc"

CITED = {
    # Llama 2 7B chat on two V100s with NVLink: 29 tokens/s on one GPU, 17 with tensor parallelism.
    "v100_one": Cited(29, "https://github.com/pytorch-labs/gpt-fast/issues/111"),
    "v100_two": Cited(17, "https://github.com/pytorch-labs/gpt-fast/issues/111"),
    # The same issue's Nsight trace: each all-reduce averaged 500 us.
    "v100_allreduce_us": Cited(500, "https://github.com/pytorch-labs/gpt-fast/issues/111"),
}
#: The all-reduce latencies the prose quotes are the specs' presets (``gpus.toml``, each with its
#: source), not copies: NCCL's ring as measured on a DGX A100 (nccl-tests issue 123) and SGLang's
#: one-shot kernel on H100s (sglang PR 2904), at these GPU counts.
RING_GPU, ONESHOT_GPU, ONESHOT = "a100-80gb", "h100-sxm", "custom_oneshot"
QUOTED_GPUS = (2, 8)


def _largest(fits) -> int:
    """The largest batch for which ``fits(batch)`` holds (doubling, then halving the gap); 0 if none."""
    low, high = 0, 1
    while fits(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def run_label(m: Measurement, specs) -> str:
    """A measured run in a few words: model and weights, GPUs, engine, and the lengths where the
    engine ran more than one (NIM's two prompts)."""
    size = specs.model(m.model).name.split()[-1]
    chip = specs.gpu(m.gpu).name.removeprefix("NVIDIA ").split()[0]
    engine = m.software.split(" (")[0].removeprefix("NVIDIA ").removesuffix(" for LLMs")
    label = f"{size} {m.weight_precision}, {m.gpus}×{chip}, {engine}"
    if engine == "NIM":
        label += f" {m.input_tokens:,} in"
    return escape.text(label)


def us(seconds: float) -> str:
    """Microseconds without the unit, as the prose writes them: ``19.19e-6`` -> ``"19.2"``."""
    return fmt.microseconds(seconds).removesuffix(" µs")


def times(ratio: float) -> str:
    """A ratio as the prose says it: ``2.941`` -> ``"2.9"``."""
    return f"{ratio:.1f}"


def build(ctx: Context) -> PageContent:
    content = PageContent()
    put = content.put
    specs = ctx.specs
    gpu, model = specs.gpu(GPU), specs.model(MODEL)
    link = gpu.interconnect
    assert link is not None, f"{GPU} needs an interconnect for this chapter"
    calibration = load_calibration()
    put("gpu_name", escape.text(gpu.name))
    put("model_name", escape.text(model.name))
    put("precision", PRECISION)
    put("kv_precision", KV_PRECISION)

    # gpt-fast's TP sweep: measured, and the model's ceiling and expected figure.
    gf_gpu, gf_model = specs.gpu(GF_GPU), specs.model(GF_MODEL)
    rows = {m.id: m for m in load_measurements(specs=specs)}
    gf_ids = {1: GF_PREFIX + "1gpu"} | {g: f"{GF_PREFIX}tp{g}" for g in GF_DEGREES[1:]}
    gf_measured = {g: rows[gf_ids[g]] for g in GF_DEGREES}
    gf_work = Workload(gf_model, "bf16", "bf16", 1, gf_measured[1].mean_context, gf_measured[1].input_tokens)
    gf_ceiling = {g: 1 / decode_step(Hardware(gf_gpu, g), gf_work).seconds for g in GF_DEGREES}
    gf_costs = cost_model("expected", GF_GPU, calibration)
    gf_expected = {g: 1 / decode_step(Hardware(gf_gpu, g, costs=gf_costs), gf_work).seconds for g in GF_DEGREES}
    measured_tps = {g: gf_measured[g].value for g in GF_DEGREES}
    put("gf_model_name", escape.text(gf_model.name))
    put("gf_gpu_name", escape.text(gf_gpu.name))
    put("gf_link_share", percent(gf_costs.link_efficiency))
    for g in GF_DEGREES:
        put(f"gf_tp{g}", fmt.rate(measured_tps[g]))
    put("gf_scaling", times(measured_tps[8] / measured_tps[1]))
    put("gf_pred_scaling", times(gf_ceiling[8] / gf_ceiling[1]))
    put("gf_exp_scaling", times(gf_expected[8] / gf_expected[1]))
    put("gf_ceiling_tp8", fmt.rate(gf_ceiling[8]))
    put("gf_expected_tp8", fmt.rate(gf_expected[8]))
    put("gf_ratio_tp1", percent(measured_tps[1] / gf_ceiling[1]))
    put("gf_ratio_tp8", percent(measured_tps[8] / gf_ceiling[8]))
    put("gf_exp_ratio_tp8", percent(measured_tps[8] / gf_expected[8]))

    def ranked(figures: dict[int, float]) -> list[int]:
        return sorted(figures, key=figures.get)

    measured_order = ranked(measured_tps)
    same = [
        name for name, f in (("ceiling", gf_ceiling), ("expected figure", gf_expected)) if ranked(f) == measured_order
    ]
    put(
        "gf_rank_sentence",
        "Both the ceiling and the expected figure rank the four degrees in the measured order."
        if len(same) == 2
        else (
            f"Only the {same[0]} ranks the four degrees in the measured order."
            if same
            else "Neither the ceiling nor the expected figure ranks the four degrees in the measured order."
        ),
    )
    put("v100_one", fmt.rate(CITED["v100_one"].value))
    put("v100_two", fmt.rate(CITED["v100_two"].value))

    # Why split: capacity.
    cap = specs.model(CAP_MODEL)
    cap_weights = weight_bytes(cap, CAP_PRECISION)
    put("cap_model_name", escape.text(cap.name))
    put("cap_precision", CAP_PRECISION)
    put("cap_weights", fmt.gigabytes(cap_weights, 0))
    put("cap_addressable", labelled(DRIVER, memory_of(Hardware(gpu), DRIVER)))  # named as on every page
    cap_fit = gpus_to_fit(Hardware(gpu), Workload(cap, CAP_PRECISION, CAP_PRECISION, 1, 1))
    cap_bytes = math.ceil(cap_weights / Hardware(gpu).usable_memory_bytes)
    put("cap_min_gpus", str(cap_fit))
    put("cap_bytes_gpus", str(cap_bytes))
    # Under pipeline stages (alone, or on tensor-parallel groups) the heads do not constrain the
    # GPU count: the fewest GPUs whose best layout holds the weights and one user's cache.
    cap_one = Workload(cap, CAP_PRECISION, CAP_PRECISION, 1, 1)

    def fewest(layouts) -> tuple[int, Split] | None:
        for g in range(1, cap_fit + 1):
            for tp, pp in tp_pp_splits(g, cap):
                split = Split(tp, pp)
                if layouts(split) and tp <= link.domain_gpus and deploy(Hardware(gpu, g), cap_one, split).fits:
                    return g, split
        return None

    pp_only = fewest(lambda split: split.tp == 1)
    mixed = fewest(lambda split: split.tp > 1 and split.pp > 1)
    assert pp_only is not None and mixed is not None, "405B must fit under PP and TP x PP within the TP count"
    put("cap_pp_gpus", str(pp_only[0]))
    put("cap_mixed_gpus", str(mixed[0]))
    put("cap_mixed_tp", str(mixed[1].tp))
    put("cap_mixed_pp", str(mixed[1].pp))

    # Why split: KV room grows faster than the GPUs.
    room_work = Workload(model, PRECISION, KV_PRECISION, 1, ROOM_CONTEXT)
    users = {g: memory_use(Hardware(gpu, g), room_work).max_batch or 0 for g in ROOM_GPUS}
    one = memory_use(Hardware(gpu, 1), room_work)
    put("room_context", f"{ROOM_CONTEXT:,}")
    put("room_weights", fmt.gigabytes(one.weights_bytes, 1))
    put("room_share", percent(one.weights_bytes / Hardware(gpu).usable_memory_bytes))
    for g in ROOM_GPUS:
        put(f"room_users_{g}", f"{users[g]:,}")
    put("room_ratio_2", times(users[2] / users[1]))
    put("room_ratio_8", times(users[8] / users[1]))
    content.figure(
        "par-kv-room",
        charts.kv_room(
            [{"gpus": g, "users": users[g], "linear": g * users[1]} for g in ROOM_GPUS],
            escape.text(model.name) + f" in {PRECISION}, {KV_PRECISION} KV cache",
            escape.text(gpu.name),
            f"{ROOM_CONTEXT:,}",
        ),
        f"Users of {escape.text(model.name)} in {PRECISION} with a {KV_PRECISION} KV cache that fit at"
        f" {ROOM_CONTEXT:,} tokens each, on 1 to 8"
        f" {escape.text(gpu.name)}s, against the GPU count times one GPU's users. Memory as the driver reports"
        " it, less a workspace, 95% of what the weights leave for the cache.",
    )

    # One layer's all-reduces, and their size.
    count = allreduces_per_pass(Hardware(gpu, 8), model)
    put("msg_layers", str(model.layers))
    put("msg_hidden", f"{model.hidden_size:,}")
    put("msg_count", str(count))
    put("msg_batch1", fmt.bytes_size(allreduce_bytes(model, 1)))
    put("msg_batch", str(MSG_BATCH))
    put("msg_batchB", fmt.bytes_size(allreduce_bytes(model, MSG_BATCH)))
    put("msg_prompt", f"{MSG_PROMPT:,}")
    put("msg_prefill", fmt.bytes_size(allreduce_bytes(model, MSG_PROMPT)))
    put("heads_q", str(model.attention_heads))
    put("heads_kv", str(model.kv_heads))
    degrees = usable_tp_degrees(model)
    put("heads_degrees", ", ".join(str(d) for d in degrees[:-1]) + f" or {degrees[-1]}")

    # The all-reduce's cost: the interconnects in the specs, and the latencies measured.
    link_rows = []
    for spec in specs.gpus.values():
        if spec.interconnect is None:
            continue
        ic = spec.interconnect
        link_rows.append(
            (
                escape.text(spec.name),
                escape.text(ic.scale_up),
                f"{ic.link_bytes_per_s / 1e9:,.0f}",
                str(ic.domain_gpus),
                f"{ic.scale_out_bytes_per_s / 1e9:,.0f}",
            )
        )
    content.table(
        "interconnects",
        markdown_table(
            ("GPU", "Scale-up fabric", "Link, GB/s each way", "GPUs per domain", "Scale-out, GB/s per GPU"),
            link_rows,
            right={2, 3, 4},
        ),
    )
    # Each preset's latency as the package grows it with the GPU count (roofline.specs.AllReduceLatency),
    # and the fitted start + 2(G - 1) hops of the expected figure.
    fitted = cost_model("expected", GPU, calibration)
    latencies = {name.replace("_", " "): (lambda g, n=name: link.latency(n, g)) for name in link.allreduce_latency_s}
    latencies["expected (fitted)"] = fitted.allreduce_latency
    latency_rows = [
        (escape.text(name), *(fmt.microseconds(at(g)) for g in LATENCY_GPUS), f"{count * at(8) * 1e3:.2f} ms")
        for name, at in sorted(latencies.items(), key=lambda item: item[1](8))
    ]
    content.table(
        "allreduce-latencies",
        markdown_table(
            ("All-reduce", *(f"{g} GPUs" for g in LATENCY_GPUS), f"× {count} per token on 8"),
            latency_rows,
            right=set(range(1, len(LATENCY_GPUS) + 2)),
        ),
    )
    best8 = link.best_allreduce(8)
    put("ceiling_alpha_us", us(best8.at(8)))
    put("ceiling_alpha_name", escape.text(best8.name.replace("_", " ")))
    put("expected_alpha_us", us(fitted.allreduce_latency(8)))
    put("expected_start_us", us(calibration.allreduce_latency_s))
    put("expected_hop_us", f"{calibration.allreduce_hop_s * 1e6:.2f}")

    # Decode messages are tiny, so latency rules: 8 GPUs, one user.
    eight = Hardware(gpu, 8)
    bytes_s = eight.allreduce_s(allreduce_bytes(model, 1)) - eight.allreduce_latency
    nccl = link.latency(NCCL, 8)
    put("link_gbps", f"{link.link_bytes_per_s / 1e9:,.0f}")
    put("tiny_bytes_us", f"{bytes_s * 1e6:.3f}")
    put("tiny_nccl_us", us(nccl))
    put("tiny_ratio", f"{nccl / bytes_s:,.0f}")
    put("tiny_nccl_ms", fmt.milliseconds(count * nccl))
    put("tiny_ceiling_ms", fmt.milliseconds(count * best8.at(8)))
    step8 = decode_step(eight, Workload(model, PRECISION, KV_PRECISION, 1, 0))
    put("tiny_weights_ms", fmt.milliseconds(max(step8.memory_s, step8.compute_s)))
    ring_link, oneshot_link = specs.gpu(RING_GPU).interconnect, specs.gpu(ONESHOT_GPU).interconnect
    assert ring_link is not None and oneshot_link is not None
    for g in QUOTED_GPUS:
        put(f"ring_{g}_us", us(ring_link.latency(NCCL, g)))
        put(f"oneshot_{g}_us", us(oneshot_link.latency(ONESHOT, g)))
    # The V100 anecdote's 500 us all-reduce against NCCL's ring measured on two A100s: an
    # anomalous system, not what talking costs (audit L13).
    v100_allreduce_s = CITED["v100_allreduce_us"].value * 1e-6
    put("v100_allreduce_us", us(v100_allreduce_s))
    put("v100_vs_ring", f"{v100_allreduce_s / ring_link.latency(NCCL, 2):,.0f}")

    # Where TP stops scaling: T(G) = T_w / G + 2L * alpha(G), alpha(G) = base + 2 (G - 1) * step, the
    # package's NCCL preset (roofline.specs.AllReduceLatency, NCCL's own cost-model shape). The constant
    # base drops out of G*, but not out of "four against eight": that is shown as a sensitivity.
    best_model = specs.model(BEST_MODEL)
    best_work = Workload(best_model, "bf16", "bf16", 1, 0)
    one_gpu = decode_step(Hardware(gpu, 1), best_work)
    ring_preset = link.preset(NCCL)
    assert ring_preset.base_s is not None and ring_preset.step_s is not None, f"{NCCL} must be a fitted ring"
    hop = ring_preset.step_s
    gstar = latency_optimal_degree(one_gpu.seconds, best_model.layers, hop)
    best_degrees = usable_tp_degrees(best_model, limit=8)

    def ring_step(g: int) -> float:
        return decode_step(Hardware(gpu, g, allreduce_preset=NCCL), best_work).seconds

    ring = {g: ring_step(g) for g in best_degrees}
    put("best_model_name", escape.text(best_model.name))
    put("best_layers", str(best_model.layers))
    put("best_hop_us", f"{hop * 1e6:.2f}")
    put("best_base_us", f"{ring_preset.base_s * 1e6:.2f}")
    put("best_tw_ms", fmt.milliseconds(one_gpu.seconds))
    put("best_gstar", f"{gstar:.1f}")
    put("best_ring_tps4", fmt.rate(1 / ring[4]))
    put("best_ring_tps8", fmt.rate(1 / ring[8]))
    put("best_ring_gap", percent(abs(ring[4] / ring[8] - 1)))
    for g in (2, 4):
        put(f"nccl_{g}_us", us(link.latency(NCCL, g)))

    # The sensitivity: the 19.19 us measured on eight split into a base and 2(G - 1) steps of
    # (measured - base) / 14. TP4 and TP8 at each base; X, where they tie.
    measured8 = ring_preset.measured_s[8]

    def split_step(g: int, base: float) -> float:
        latency = ring_allreduce_latency_s(base, ring_step_for_base_s(measured8, 8, base), g)
        return decode_step(Hardware(gpu, g, allreduce_latency_s=latency), best_work).seconds

    tie = crossover(lambda base: split_step(4, base) - split_step(8, base), 0.0, measured8)
    assert tie is not None, "TP4 against TP8 must turn within the measured latency"
    tuning_base = NCCL_TUNING_BASE_S
    put("sens_measured_us", us(measured8))
    put("sens_x_us", f"{tie * 1e6:.1f}")
    put("sens_tp4_at0", fmt.rate(1 / split_step(4, 0.0)))
    put("sens_tp8", fmt.rate(1 / split_step(8, 0.0)))
    put("sens_tuning_base_us", f"{tuning_base * 1e6:.1f}")
    put("sens_tuning_winner", "eight" if split_step(8, tuning_base) < split_step(4, tuning_base) else "four")
    put("sens_fit_winner", "eight" if split_step(8, ring_preset.base_s) < split_step(4, ring_preset.base_s) else "four")
    put("sens_lower", "four" if split_step(4, 0.0) < split_step(8, 0.0) else "eight")
    bases = [measured8 * k / 40 for k in range(41)]
    sens_rows = [
        {"base_us": round(base * 1e6, 3), "split": f"TP{g}", "tokens_per_s": round(1 / split_step(g, base), 1)}
        for base in bases
        for g in (4, 8)
    ]
    content.figure(
        "par-tp-sensitivity",
        charts.sensitivity(
            sens_rows,
            [
                {"what": "TP4 = TP8", "base_us": round(tie * 1e6, 2)},
                {"what": "NCCL's cost-model base", "base_us": round(tuning_base * 1e6, 2)},
                {"what": "A100 fit's base", "base_us": round(ring_preset.base_s * 1e6, 2)},
            ],
            f"TP4 against TP8 as NCCL's fixed latency grows, {escape.text(best_model.name)} on"
            f" {escape.text(gpu.name)}s",
            f"One user, bf16; every all-reduce {us(measured8)} µs on eight GPUs, split into a base and 2(G − 1) steps.",
        ),
        f"One user's tokens/s of {escape.text(best_model.name)} on four and on eight {escape.text(gpu.name)}s at"
        f" the ceiling's reads, every all-reduce priced as NCCL's ring, base + step × 2(G − 1), the step chosen"
        f" so that eight GPUs pay the {us(measured8)} µs measured there. Four GPUs pay base + 6 steps, so the"
        f" larger the base, the closer their latency comes to eight's. Rules: where the two tie"
        f" ({tie * 1e6:.1f} µs), NCCL's own cost-model base ({tuning_base * 1e6:.1f} µs) and the base fitted"
        f" to the A100 ring ({ring_preset.base_s * 1e6:.2f} µs).",
    )
    put("q3_hops4", str(2 * (4 - 1)))
    put("q3_a4", us(link.latency(NCCL, 4)))
    put("q3_zero_a4", us(ring_allreduce_latency_s(0.0, ring_step_for_base_s(measured8, 8, 0.0), 4)))
    for g in (4, 8):
        put(f"q3_t{g}", fmt.milliseconds(decode_step(Hardware(gpu, g, allreduce_preset=NCCL), best_work).seconds))
    put("best_ceiling_degree", str(best_tp_degree(Hardware(gpu, 8), best_work)))
    put("best_nccl_degree", str(best_tp_degree(Hardware(gpu, 8, allreduce_preset=NCCL), best_work)))
    put("best_fixed_degree", str(best_tp_degree(Hardware(gpu, 8, allreduce_latency_s=nccl), best_work)))
    put("best_expected_degree", str(best_tp_degree(Hardware(gpu, 8, costs=fitted), best_work)))
    best_exp = {g: decode_step(Hardware(gpu, g, costs=fitted), best_work).seconds for g in best_degrees}
    put("best_expected_gain", percent(best_exp[4] / best_exp[8] - 1))

    # Figure: tokens/s against the TP degree for several latencies, gpt-fast's points on top.
    gf_link = gf_gpu.interconnect
    assert gf_link is not None
    scaling_rows = []
    lines: dict[str, dict] = {"free links": {"allreduce_latency_s": 0.0}} | {
        f"{name.replace('_', ' ')}, {fmt.microseconds(gf_link.latency(name, 2))}"
        f" to {fmt.microseconds(gf_link.latency(name, 8))}": {"allreduce_preset": name}
        for name in sorted(gf_link.allreduce_latency_s, key=lambda name: gf_link.latency(name, 8))
    }
    for label, choice in lines.items():
        for g in GF_DEGREES:
            step = decode_step(Hardware(gf_gpu, g, **choice), gf_work)
            scaling_rows.append({"latency": label, "gpus": g, "tokens_per_s": round(1 / step.seconds, 1)})
    gf_fitted = gf_costs.allreduce_latency
    expected_label = f"expected, {fmt.microseconds(gf_fitted(2))} to {fmt.microseconds(gf_fitted(8))}"
    scaling_rows += [
        {"latency": expected_label, "gpus": g, "tokens_per_s": round(gf_expected[g], 1)} for g in GF_DEGREES
    ]
    content.figure(
        "par-tp-scaling",
        charts.tp_scaling(
            scaling_rows,
            [{"what": "gpt-fast", "gpus": g, "tokens_per_s": measured_tps[g]} for g in GF_DEGREES],
            f"One user's tokens/s against the TP degree, {escape.text(gf_model.name)} on {escape.text(gf_gpu.name)}s",
            [*lines, expected_label],
        ),
        f"Batch 1, bf16, {gf_work.context} tokens cached. Each line charges every all-reduce one measured"
        " latency over NVLink 3, at 2 to 8 GPUs as it grows with the count; free links is chapters 1 to 3's"
        " ideal. The expected line uses the fitted costs, its all-reduce a start plus 2(G − 1) hops. Points:"
        " gpt-fast's measured tokens/s on eight A100s power-limited to 330 W.",
    )

    # NVLink, PCIe, across nodes: one step's all-reduces at MSG_BATCH users.
    put("link_batch", str(MSG_BATCH))
    put("link_msg", fmt.bytes_size(allreduce_bytes(model, MSG_BATCH)))
    l40s = specs.gpu("l40s")
    l40s_link = l40s.interconnect
    assert l40s_link is not None
    wires = [
        (f"{escape.text(link.scale_up)}", link.link_bytes_per_s),
        ("PCIe Gen5 x16 (the H100's host link)", gpu.host_link_bytes_per_s),
        ("PCIe Gen4 x16 (the L40S's host link)", l40s.host_link_bytes_per_s),
        ("InfiniBand (one 400 Gb/s NIC per GPU)", link.scale_out_bytes_per_s),
    ]
    # Each row charges one algorithm that runs on that link, with that algorithm's bytes
    # (roofline.specs.allreduce_bytes_factor) and a latency measured for it on such a link.
    oneshot8, pcie_ring = link.preset(ONESHOT), l40s_link.preset(NCCL)
    link_rows_spec = [
        (wires[0], "one-shot", "one_shot", oneshot8.at(8), "SGLang's kernel, measured on 8 H100s"),
        (wires[0], "ring", "ring", link.latency(NCCL, 8), "NCCL, measured on 8 H100s"),
        (wires[1], "ring", "ring", pcie_ring.at(8), "NCCL, measured on 8 PCIe Gen4 GPUs"),
        (wires[2], "ring", "ring", pcie_ring.at(8), "NCCL, measured on 8 PCIe Gen4 GPUs"),
        (wires[3], "ring", "ring", link.latency(NCCL, 8), "NCCL within a node, a floor across nodes"),
    ]
    link_table = []
    message = allreduce_bytes(model, MSG_BATCH)
    for (name, wire), label, algorithm, latency, whence in link_rows_spec:
        assert wire is not None
        one_ar = latency + allreduce_bytes_factor(algorithm, 8) * message / wire
        factor = "7 × S" if algorithm == "one_shot" else "2(G − 1)/G × S"
        link_table.append(
            (
                name,
                f"{wire / 1e9:,.0f}",
                f"{label}: {factor}",
                f"{fmt.microseconds(latency)} ({whence})",
                f"{one_ar * 1e6:,.0f} µs",
                fmt.milliseconds(count * one_ar),
            )
        )
    oneshot_ar = oneshot8.at(8) + allreduce_bytes_factor("one_shot", 8) * message / link.link_bytes_per_s
    ring_ar = link.latency(NCCL, 8) + allreduce_bytes_factor("ring", 8) * message / link.link_bytes_per_s
    put("link_oneshot_us", f"{oneshot_ar * 1e6:,.0f}")
    put("link_ring_us", f"{ring_ar * 1e6:,.0f}")
    put("link_pcie_lat_us", us(pcie_ring.at(8)))
    # Where a one-shot stops paying: latency_1 + 7 S / W = latency_ring + 1.75 S / W on eight GPUs.
    cross_bytes = (link.latency(NCCL, 8) - oneshot8.at(8)) / (
        (allreduce_bytes_factor("one_shot", 8) - allreduce_bytes_factor("ring", 8)) / link.link_bytes_per_s
    )
    put("algo_cross", fmt.bytes_size(cross_bytes))
    put("algo_cross_users", f"{cross_bytes / allreduce_bytes(model, 1):,.0f}")
    # Figure: one all-reduce's time against its message, per link, at the ceiling's latency.
    sizes = [2**k for k in range(10, 31)]
    time_rows, link_names = [], []
    for name, wire in wires:
        over = replace(gpu, interconnect=replace(link, link_bytes_per_s=wire))
        hw = Hardware(over, 8)
        short = name.split(" (")[0]
        link_names.append(short)
        time_rows += [{"link": short, "bytes": size, "us": round(hw.allreduce_s(size) * 1e6, 3)} for size in sizes]
    marks = [
        {"what": "decode, 1 user", "bytes": allreduce_bytes(model, 1)},
        {"what": f"decode, {MSG_BATCH} users", "bytes": allreduce_bytes(model, MSG_BATCH)},
        {"what": f"prefill, {MSG_PROMPT:,} tokens", "bytes": allreduce_bytes(model, MSG_PROMPT)},
    ]
    content.figure(
        "par-allreduce-time",
        charts.allreduce_time(time_rows, marks, link_names),
        f"Ring all-reduce on eight GPUs, latency + 2(G − 1)/G × bytes / link, at the smallest measured latency"
        f" on eight ({fmt.microseconds(best8.at(8))}, {escape.text(best8.name.replace('_', ' '))}); the links'"
        " nameplate rates, each way. Dashed:"
        f" the messages of {escape.text(model.name)} (d = {model.hidden_size:,}, 2 bytes a value).",
    )
    content.table(
        "links",
        markdown_table(
            (*LINK_COLUMNS, f"{count} a step"),
            link_table,
            right={1, 4, 5},
        ),
    )
    put("link_pcie5_gbps", f"{gpu.host_link_bytes_per_s / 1e9:,.0f}")
    put("link_pcie4_gbps", f"{l40s.host_link_bytes_per_s / 1e9:,.0f}")
    put("link_scaleout_gbps", f"{link.scale_out_bytes_per_s / 1e9:,.0f}")
    put("link_domain_gpus", f"{link.domain_gpus:,}")

    # Pipeline parallelism: the bubble, and a Gantt chart of PP_STAGES stages.
    put("pp_stages", str(PP_STAGES))
    put("pp_hops", str(PP_STAGES - 1))
    for m in PP_MICRO:
        put(f"pp_bubble_{m}", percent(pipeline_bubble_fraction(PP_STAGES, m)))
    put("pp_micro_many", str(PP_MICRO[-1]))
    gantt, lanes = [], []
    for m in (1, 4):
        for stage in range(PP_STAGES):
            lane = f"{m} micro-batch{'es' if m > 1 else ''} · stage {stage + 1}"
            lanes.append(lane)
            for j in range(m):
                gantt.append({"lane": lane, "micro": str(j + 1), "start": j + stage, "end": j + stage + 1})
    content.figure(
        "par-pipeline",
        charts.pipeline(
            gantt,
            lanes,
            f"A pass through {PP_STAGES} pipeline stages, once and drained",
            f"Idle share: {percent(pipeline_bubble_fraction(PP_STAGES, 1))} with one micro-batch,"
            f" {percent(pipeline_bubble_fraction(PP_STAGES, 4))} with four.",
        ),
        "Each bar is one micro-batch in one stage, in units of one stage's time. The empty cells are the bubble,"
        " (p − 1)/(m + p − 1) of each stage's time.",
    )

    # TP against PP for 405B on 8 H200s (NVIDIA's comparison).
    nv_gpu, nv_model = specs.gpu(NV_GPU), specs.model(NV_MODEL)
    nv_hw = Hardware(nv_gpu, NV_GPUS, compute_precision="auto")
    nv_exp = replace(nv_hw, costs=cost_model("expected", NV_GPU, calibration))
    nv_one = Workload(nv_model, "fp8", "fp8", 1, NV_CONTEXT)
    tp8, pp8 = Split(NV_GPUS, 1), Split(1, NV_GPUS, NV_MICRO)
    for prefix, hw in (("nv", nv_hw), ("nvx", nv_exp)):
        tp_step, pp_step = pipeline_decode(hw, nv_one, tp8), pipeline_decode(hw, nv_one, pp8)
        put(f"{prefix}_tp_ms", fmt.milliseconds(tp_step.latency_s))
        put(f"{prefix}_pp_ms", fmt.milliseconds(pp_step.latency_s))
        put(f"{prefix}_latency_ratio", times(pp_step.latency_s / tp_step.latency_s))
    put("nv_model_name", escape.text(nv_model.name))
    put("nv_gpu_name", escape.text(nv_gpu.name))
    put("nv_context", f"{NV_CONTEXT:,}")
    put("nv_micro", str(NV_MICRO))
    nv_rows = []
    fitting: dict[str, dict[int, tuple[float, float]]] = {"TP8": {}, "PP8": {}}
    for batch in NV_BATCHES:
        work = replace(nv_one, batch=batch)
        for name, split in (("TP8", tp8), ("PP8", pp8)):
            result = deploy(nv_hw, work, split)
            if result.fits:
                fitting[name][batch] = (result.step.tokens_per_s_total, result.step.latency_s)
                nv_rows.append(
                    {
                        "split": f"{name} (ceiling)",
                        "batch": batch,
                        "tokens_per_s": round(result.step.tokens_per_s_total),
                        "per_user": round(result.step.tokens_per_s_per_user, 1),
                    }
                )
    top = max(b for b in NV_BATCHES if b in fitting["TP8"] and b in fitting["PP8"])
    work = replace(nv_one, batch=top)
    tp_top, pp_top = deploy(nv_hw, work, tp8), deploy(nv_hw, work, pp8)
    tp_top_x, pp_top_x = deploy(nv_exp, work, tp8), deploy(nv_exp, work, pp8)
    put("nv_batch", f"{top:,}")
    put("nv_msg", fmt.bytes_size(allreduce_bytes(nv_model, top)))
    put("nv_comm_ms", fmt.milliseconds(tp_top.step.communication_s))
    put("nv_tp_step_ms", fmt.milliseconds(tp_top.step.interval_s))
    put("nv_tp_tps", fmt.rate(tp_top.step.tokens_per_s_total))
    put("nv_pp_tps", fmt.rate(pp_top.step.tokens_per_s_total))
    put("nv_throughput_ratio", times(pp_top.step.tokens_per_s_total / tp_top.step.tokens_per_s_total))
    put("nvx_throughput_ratio", times(pp_top_x.step.tokens_per_s_total / tp_top_x.step.tokens_per_s_total))
    put("nv_pp_hops", str(NV_GPUS - 1))
    put("nv_allreduces", str(allreduces_per_pass(nv_hw, nv_model)))
    small = min(NV_BATCHES[1:], key=lambda b: b)
    put("nv_small_batch", str(small))
    put(
        "nv_small_ratio",
        times(fitting["TP8"][small][0] / fitting["PP8"][small][0]),
    )
    content.figure(
        "par-tp-vs-pp",
        charts.tp_vs_pp(
            nv_rows,
            f"Tensor against pipeline parallelism, {escape.text(nv_model.name)} on"
            f" {NV_GPUS} {escape.text(nv_gpu.name)}s",
            f"fp8 weights and cache, {NV_CONTEXT:,} tokens cached, {NV_MICRO} micro-batches for the pipeline.",
            ["TP8 (ceiling)", "PP8 (ceiling)"],
        ),
        f"Decode tokens/s of all users against the batch, up to the largest batch that fits both splits, on"
        f" the ceiling's accounting. TP8 pays {allreduces_per_pass(nv_hw, nv_model)} all-reduces a step whose"
        f" bytes grow with the batch; PP8 pays {NV_GPUS - 1} hops, but each stage reads its weights once per"
        " micro-batch.",
    )

    # Why measured multi-GPU decode sits below the ideal: each measured step split into parts.
    stack_rows, order, table_rows = [], [], []
    multi = [m for m in rows.values() if m.kind == "multi-GPU decode" and not m.speculative]
    for m in multi:
        hw = Hardware(specs.gpu(m.gpu), m.gpus, m.compute_precision)
        work = Workload(
            specs.model(m.model), m.weight_precision, m.kv_precision, m.batch or 1, m.mean_context, m.input_tokens
        )
        step = decode_step(hw, work)
        measured_s = 1 / m.value if m.metric == "decode_tokens_per_s_per_user" else m.value
        cache_b = kv_copies(hw, work.model) * work.kv_bytes_for(m.batch or 1)
        kv_s = cache_b / hw.effective_bandwidth_bytes_per_s
        weights_s = max(step.memory_s, step.compute_s) - kv_s  # batch 1: memory-bound, so the rest of the read
        run = run_label(m, specs)
        order.append(run)
        stack_rows.append(
            {
                "run": run,
                "weights": weights_s * 1e3,
                "cache": kv_s * 1e3,
                "all-reduces": step.communication_s * 1e3,
                "rest": max(0.0, measured_s - step.seconds) * 1e3,
            }
        )
        # Costs and band together: a run on a GPU, math or link the fit has no rows for gets the wider band.
        ground = expected_costs(hw, work, calibration)
        expected_s = decode_step(replace(hw, costs=ground.costs), work).seconds
        low, high = ground.calibration.band_for("itl_mean_s", expected_s)
        ideal_s = step.seconds - step.communication_s
        comparison = compare(m, specs)
        table_rows.append(
            (
                run,
                f"{1 / measured_s:,.1f}",
                f"{1 / ideal_s:,.1f}",
                f"{1 / step.seconds:,.1f}",
                f"{1 / expected_s:,.1f} ({1 / high:,.0f}–{1 / low:,.0f})",
                percent(comparison.ratio),
            )
        )
    content.figure(
        "par-step-stack",
        charts.step_stack(stack_rows, order),
        "Each published multi-GPU decode run at one user: the weights' read, the cache's read and the all-reduces"
        " as the ceiling charges them (the link's nameplate, the smallest measured latency), and the rest of the"
        " measured step, which the ceiling does not explain.",
    )
    content.table(
        "par-measured",
        markdown_table(
            ("Run", "Measured", "Free links", "Ceiling", "Expected (band)", "Measured ÷ ceiling"),
            table_rows,
            right={1, 2, 3, 4, 5},
        ),
    )
    worst = max(stack_rows, key=lambda row: row["rest"] / sum(row[part] for part in charts.STEP_PARTS))
    total = sum(worst[part] for part in charts.STEP_PARTS)
    put("stack_worst_run", worst["run"])
    put("stack_worst_rest", percent(worst["rest"] / total))
    put("stack_worst_comm", percent(worst["all-reduces"] / total))
    put("stack_runs", str(len(stack_rows)))

    # Interview depth: eight GPUs as one TP8 group, data-parallel replicas of smaller groups, or a
    # pipeline, for the running model at LAYOUT_CONTEXT tokens: each layout filled to the most users
    # its memory holds (every replica alike), and one user's speed.
    layout_rows, totals, singles = [], {}, {}
    for name, gpus, split, replicas in LAYOUTS:
        hw = Hardware(gpu, gpus)

        def fits(batch: int, hw=hw, split=split) -> bool:
            work = Workload(model, PRECISION, KV_PRECISION, batch, LAYOUT_CONTEXT)
            return deploy(hw, work, split).fits

        most = _largest(fits)
        full = deploy(hw, Workload(model, PRECISION, KV_PRECISION, most, LAYOUT_CONTEXT), split)
        one = deploy(hw, Workload(model, PRECISION, KV_PRECISION, 1, LAYOUT_CONTEXT), split)
        totals[name] = replicas * full.step.tokens_per_s_total
        singles[name] = one.step.tokens_per_s_per_user
        layout_rows.append(
            (
                name,
                f"{replicas * most:,}",
                fmt.rate(full.step.tokens_per_s_per_user),
                fmt.rate(totals[name]),
                fmt.rate(singles[name]),
            )
        )
    content.table(
        "par-layouts",
        markdown_table(
            ("Eight GPUs as", "Users that fit", "tokens/s per user, full", "tokens/s, all users", "tokens/s, one user"),
            layout_rows,
            right={1, 2, 3, 4},
        ),
    )
    ranked_total = sorted(totals, key=totals.get, reverse=True)
    put("layout_context", f"{LAYOUT_CONTEXT:,}")
    put("layout_best_total", ranked_total[0])
    put("layout_second_total", ranked_total[1])
    put("layout_total_gap", f"{totals[ranked_total[0]] / totals[ranked_total[1]] - 1:.1%}")
    put("layout_best_single", max(singles, key=singles.get))
    put("layout_worst_total", ranked_total[-1])
    put("layout_worst_share", percent(totals[ranked_total[-1]] / totals[ranked_total[0]]))

    # Self-check 4: a pipeline of the running model, one user.
    q4_hw = Hardware(gpu, Q4_STAGES)
    q4_work = Workload(model, PRECISION, KV_PRECISION, 1, Q4_CONTEXT)
    q4_step = pipeline_decode(q4_hw, q4_work, Split(1, Q4_STAGES, Q4_MICRO))
    put("q4_stages", str(Q4_STAGES))
    put("q4_micro", str(Q4_MICRO))
    put("q4_p1", str(Q4_STAGES - 1))
    put("q4_den", str(Q4_MICRO + Q4_STAGES - 1))
    put("q4_bubble", percent(pipeline_bubble_fraction(Q4_STAGES, Q4_MICRO)))
    put("q4_context", f"{Q4_CONTEXT:,}")
    put("q4_latency_ms", fmt.milliseconds(q4_step.latency_s))
    put("q4_one_gpu_ms", fmt.milliseconds(decode_step(Hardware(gpu, 1), q4_work).seconds))
    put("q4_layers", "/".join(str(n) for n in stage_layers(model.layers, Q4_STAGES)))

    # Self-check 2: bytes against latency on eight GPUs.
    put("q2_ratio", f"{nccl / bytes_s:,.0f}")
    return content
