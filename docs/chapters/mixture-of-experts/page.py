"""Chapter 7, "Mixture of Experts and Expert Parallelism": every number its prose quotes, its tables and its figure.

The page is ``index.md`` beside this module; its Run cells are ``programs/*.py``, its calculator
``calculators/mixture_of_experts.py``. Every model figure comes from the package:
``roofline.moe`` (experts touched, tokens per expert, all-to-all bytes), ``roofline.epdeploy``
(one expert-parallel step on the busiest GPU), ``roofline.moelayout`` (TP and EP side by side,
the batch where EP overtakes TP, a batched prefill) and ``roofline.architecture`` (parameters,
bytes). Published measurements the prose sets beside the ceilings are in ``CITED``, each with
its source, read at the commit named.
"""

from __future__ import annotations

from dataclasses import dataclass

import altair as alt

from roofline import Hardware, Workload, moe
from roofline import architecture as arch
from roofline import formatting as fmt
from roofline.epdeploy import ExpertLayout, alltoall_s, expert_step
from roofline.moelayout import (
    batch_reading_share,
    batched_prefill,
    ep_advantage,
    ep_break_even_batch,
    ep_layout,
    tp_layout,
)
from roofline.precisions import bytes_per_value
from roofline.quantization import critical_batch_for
from sitegen.context import Context
from sitegen.figures import figure_spec
from sitegen.page import PageContent
from sitegen.tables import markdown_table
from sitegen.values import percent

GPU, BIG_GPU, B200 = "h100-sxm", "h200", "b200"
#: The four mixtures of experts the chapter compares, each at its checkpoint's own weight format.
MODELS = (
    ("mixtral-8x7b", "bf16"),
    ("qwen3-30b-a3b", "bf16"),
    ("gpt-oss-120b", "mxfp4"),
    ("deepseek-v3", "fp8"),
)
DS, DS_PRECISION = "deepseek-v3", "fp8"
#: The figure's batches: 1 to 4,096 users, doubling.
BATCHES = tuple(2**i for i in range(13))
#: The table's two batches, and the share of the weights a step reads that the prose finds the batch for.
TABLE_BATCHES = (1, 64)
READ_SHARE = 0.9
#: The running EP example: DeepSeek-V3 in fp8 at 4,096 tokens of context, 128 users a GPU.
CONTEXT, USERS_PER_GPU = 4096, 128
EP_SMALL, EP_BIG = 8, 32
#: TP against EP on one node of H200s (the model fits one node in fp8), and the break-even table's grid.
NODE = 8
BREAK_GPUS = (8, 16, 32)
BREAK_CONTEXTS = (1024, 4096, 16384)
#: DeepSeek's redundant experts: 32 extra slots, 288 in all (CITED["deepseek"]).
REDUNDANT = 32
#: Prefill servers run many prompts at once: SGLang's profile ran 16,384 tokens a GPU (CITED["sglang"]).
PREFILL_TOKENS_PER_GPU = 16384
GPUS_PER_NODE = 8
#: DeepSeek does not publish its prompt lengths: its prefill ceiling is taken at SGLang's profiled 4,096.
DS_PREFILL_PROMPT = 4096


@dataclass(frozen=True)
class Cited:
    """A published figure the page quotes, with where it was read."""

    value: float
    source: str


SOURCES = {
    "deepseek": "https://github.com/deepseek-ai/open-infra-index/blob/56d86855fcf6e08fdfd45ce6280bd24322c93351/"
    "202502OpenSourceWeek/day_6_one_more_thing_deepseekV3R1_inference_system_overview.md",
    "sglang": "https://github.com/lm-sys/lm-sys.github.io/blob/2db4e4042b31f3c3c9f4f93068ae80946d25a115/"
    "blog/2025-05-05-large-scale-ep.md",
    "trtllm": "https://github.com/NVIDIA/TensorRT-LLM/blob/02643c1f8dd5e0f3bed08da2b90f515d8884a1d7/"
    "docs/source/blogs/tech_blog/blog3_Optimizing_DeepSeek_R1_Throughput_on_NVIDIA_Blackwell_GPUs.md",
    "deepep": "https://github.com/deepseek-ai/DeepEP/blob/0297fc801788b14b338a46554faca28d419e518a/docs/legacy.md",
}
#: Published figures, each read at its source (SOURCES): per-node throughputs and their conditions.
CITED = {
    # DeepSeek's 24 hours on H800s: decode EP144 over 18 nodes; ~14.8k output tokens/s a node.
    "ds_decode_node": Cited(14_800, SOURCES["deepseek"]),
    # ~73.7k input tokens/s a node in prefill, cache hits included; 32,206 without them (SGLang's table).
    "ds_prefill_node": Cited(73_700, SOURCES["deepseek"]),
    "ds_prefill_node_uncached": Cited(32_206, SOURCES["sglang"]),
    # DeepSeek's average KV length per output token, and the batch a GPU SGLang's table lists for it.
    "ds_kv_length": Cited(4_989, SOURCES["deepseek"]),
    "ds_batch_per_gpu": Cited(128, SOURCES["sglang"]),
    # SGLang on H100s: decode EP72 on 9 nodes, 256 users a GPU, 2,000-token inputs: 22,282 a node.
    "sgl_decode_node": Cited(22_282, SOURCES["sglang"]),
    "sgl_decode_batch_per_gpu": Cited(256, SOURCES["sglang"]),
    "sgl_decode_context": Cited(2_000, SOURCES["sglang"]),
    # SGLang prefill EP32 on 4 nodes: 57,674 / 54,543 / 50,302 a node at 1K / 2K / 4K prompts.
    "sgl_prefill_1k": Cited(57_674, SOURCES["sglang"]),
    "sgl_prefill_2k": Cited(54_543, SOURCES["sglang"]),
    "sgl_prefill_4k": Cited(50_302, SOURCES["sglang"]),
    # TensorRT-LLM on 8 B200s, attention DP8 + EP8, FP4 experts, FP8 KV, 1K in / 2K out: 4,600 tokens/s a GPU,
    # at up to 500 users a GPU (its attention-DP arithmetic).
    "trt_per_gpu": Cited(4_600, SOURCES["trtllm"]),
    "trt_batch_per_gpu": Cited(500, SOURCES["trtllm"]),
    "trt_prompt": Cited(1_000, SOURCES["trtllm"]),
    "trt_output": Cited(2_000, SOURCES["trtllm"]),
    # SGLang's two-batch overlap in decode: -27% at 32 tokens a GPU, +25.5% at 256.
    "tbo_small_pct": Cited(27, SOURCES["sglang"]),
    "tbo_small_tokens": Cited(32, SOURCES["sglang"]),
    "tbo_big_pct": Cited(25.5, SOURCES["sglang"]),
    "tbo_big_tokens": Cited(256, SOURCES["sglang"]),
    # TensorRT-LLM: attention data parallelism, "400% speedup" in the max-throughput cases on 8 B200s.
    "adp_speedup": Cited(400, SOURCES["trtllm"]),
    # DeepEP's H800s: "~160 GB/s NVLink maximum bandwidth".
    "h800_nvlink_gbps": Cited(160, SOURCES["deepep"]),
    # DeepEP V1 low-latency kernels on H800 + CX7 (128 tokens a batch): dispatch and combine at EP8 and EP256.
    "ll_dispatch_ep8_us": Cited(77, SOURCES["deepep"]),
    "ll_combine_ep8_us": Cited(114, SOURCES["deepep"]),
    "ll_dispatch_ep256_us": Cited(194, SOURCES["deepep"]),
    "ll_combine_ep256_us": Cited(360, SOURCES["deepep"]),
}

#: DeepEP V1's tables (SOURCES["deepep"]) by EP size: low-latency dispatch and combine in µs (128 tokens a
#: batch), and the normal kernels' bottleneck bandwidth in GB/s (4,096 tokens a batch; NVLink at EP8, RDMA above).
DEEPEP_LOW_LATENCY_US = {8: (77, 114), 16: (118, 195), 32: (155, 273), 64: (173, 314), 128: (192, 369), 256: (194, 360)}
DEEPEP_NORMAL_GBPS = {8: (153, 158), 16: (43, 43), 32: (58, 57), 64: (51, 50)}
DEEPEP_TOKENS = 128

#: The figure's colours, one per model in MODELS' order (light and dark pages alike).
COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759"]


def _gb(value: float) -> str:
    return fmt.gigabytes(value, 1)


#: What sets a step, in words, by its ``bound``.
SETTERS = {"communication": "the network", "memory": "reading weights and cache", "compute": "the math"}


def prefill_bound(run) -> str:
    """``compute``, ``memory`` or ``communication``: the largest of a batched prefill's three terms."""
    return max((run.compute_s, "compute"), (run.memory_s, "memory"), (run.alltoall_s, "communication"))[1]


def _kb(value: float) -> str:
    return f"{value / 1e3:,.1f} kB"


def _int(value: float) -> str:
    return f"{round(value):,}"


def _x(value: float) -> str:
    return f"{value:,.1f}"


def build(ctx: Context) -> PageContent:
    content = PageContent()
    put = content.put
    specs = ctx.specs
    h100, h200, b200 = (Hardware(specs.gpu(g)) for g in (GPU, BIG_GPU, B200))
    put("gpu_name", specs.gpu(GPU).name)
    put("big_gpu_name", specs.gpu(BIG_GPU).name)
    ds = specs.model(DS)
    put("ds_name", ds.name)

    # -- What one decode step reads --------------------------------------------------------------
    rows, points = [], []
    for model_id, precision in MODELS:
        model = specs.model(model_id)
        spec = model.moe
        weights = arch.weight_bytes(model, precision)
        reads = [arch.weights_read_bytes(model, b, precision) for b in TABLE_BATCHES]
        rows.append(
            (
                model.name,
                f"{spec.experts:,} ({spec.experts_per_token} a token)",
                f"{spec.shared_experts}",
                fmt.parameters(arch.total_parameters(model)),
                fmt.parameters(arch.active_parameters(model)),
                f"{_gb(weights)} ({precision})",
                _gb(reads[0]),
                _gb(reads[1]),
                f"{moe.routed_experts_touched(spec.experts, spec.experts_per_token, TABLE_BATCHES[1]):,.1f}",
            )
        )
        for batch in BATCHES:
            read = arch.weights_read_bytes(model, batch, precision)
            points.append(
                {"model": model.name, "users": batch, "share": 100 * read / weights, "gb": round(read / 1e9, 1)}
            )
    content.table(
        "moe-reads",
        markdown_table(
            (
                "Model",
                "Routed experts",
                "Shared",
                "Parameters",
                "Active",
                "Weights (format)",
                "Read, 1 user",
                "Read, 64 users",
                "Routed experts touched at 64",
            ),
            rows,
            right={2, 3, 4, 5, 6, 7, 8},
        ),
    )
    order = [specs.model(m).name for m, _ in MODELS]
    share_batches = {
        specs.model(m).name: batch_reading_share(specs.model(m), precision, READ_SHARE) for m, precision in MODELS
    }
    chart = (
        alt.Chart(alt.Data(values=points))
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "users:Q",
                title="users in the step (batch)",
                scale=alt.Scale(type="log", base=2),
                axis=alt.Axis(values=[1, 4, 16, 64, 256, 1024, 4096]),
            ),
            y=alt.Y("share:Q", title="weights read a step, % of all", scale=alt.Scale(domain=[0, 100])),
            color=alt.Color("model:N", title=None, sort=order, scale=alt.Scale(domain=order, range=COLOURS)),
            tooltip=["model:N", "users:Q", alt.Tooltip("share:Q", format=".1f"), alt.Tooltip("gb:Q", title="GB")],
        )
    )
    content.figure(
        "moe-reads-vs-batch",
        figure_spec(
            chart,
            "A decode step reads most of a mixture of experts once the batch is a few dozen",
            ["Weights one step reads, as a share of all the weights, each model in its checkpoint's format."],
        ),
        "Line chart: the share of its weights one decode step reads against the batch, "
        f"{BATCHES[0]:,} to {BATCHES[-1]:,} users, for " + ", ".join(order) + ". Each starts near its active "
        f"share and climbs to nearly all of it, reaching {percent(READ_SHARE, 0)} at "
        + ", ".join(f"{share_batches[name]:,} users for {name}" for name in order)
        + ".",
    )
    ds_weights = arch.weight_bytes(ds, DS_PRECISION)
    put("ds_total", fmt.parameters(arch.total_parameters(ds)))
    put("ds_active", fmt.parameters(arch.active_parameters(ds)))
    put("ds_total_over_active", f"{arch.total_parameters(ds) / arch.active_parameters(ds):.0f}")
    put("ds_weights", _gb(ds_weights))
    put("ds_read_1", _gb(arch.weights_read_bytes(ds, 1, DS_PRECISION)))
    put("ds_experts", f"{ds.moe.experts:,}")
    put("ds_k", f"{ds.moe.experts_per_token}")
    put("ds_touched_64", _x(moe.routed_experts_touched(ds.moe.experts, ds.moe.experts_per_token, 64)))
    put("ds_read_64", _gb(arch.weights_read_bytes(ds, 64, DS_PRECISION)))
    put("ds_read_64_share", percent(arch.weights_read_bytes(ds, 64, DS_PRECISION) / ds_weights, 0))
    put("read_share", percent(READ_SHARE, 0))
    for model_id, _ in MODELS:
        put(f"{model_id.split('-')[0]}_share_batch", _int(share_batches[specs.model(model_id).name]))
    mixtral = specs.model("mixtral-8x7b")
    put("mixtral_touched_4", _x(moe.routed_experts_touched(8, mixtral.moe.experts_per_token, 4)))
    put("mxfp4_bits", f"{bytes_per_value('mxfp4') * 8:g}")
    for key in ("tbo_small_pct", "tbo_big_pct", "adp_speedup"):
        put(key, f"{CITED[key].value:g}%")
    for key in ("tbo_small_tokens", "tbo_big_tokens"):
        put(key, f"{CITED[key].value:g}")
    put("h800_nvlink_gbps", f"{CITED['h800_nvlink_gbps'].value:g}")
    put("imb_no_eplb", f"{moe.MEASURED_IMBALANCE_NO_EPLB:g}")
    put("imb_eplb", f"{moe.MEASURED_IMBALANCE_EPLB:g}")

    # -- When an expert turns compute-bound ------------------------------------------------------
    crit_rows = []
    for model_id, precision in MODELS:
        model = specs.model(model_id)
        dense = critical_batch_for(h100, precision)
        expert = moe.expert_critical_batch(dense, model.moe.experts, model.moe.experts_per_token)
        crit_rows.append(
            (
                model.name,
                precision,
                f"{model.moe.experts / model.moe.experts_per_token:g}",
                _int(dense),
                _int(expert),
            )
        )
    content.table(
        "moe-critical",
        markdown_table(
            ("Model", "Weights", "E ÷ E_tok", "Dense critical batch", "Batch for a compute-bound expert"),
            crit_rows,
            right={2, 3, 4},
        ),
    )
    ds_dense = critical_batch_for(h100, DS_PRECISION)
    ds_expert = moe.expert_critical_batch(ds_dense, ds.moe.experts, ds.moe.experts_per_token)
    put("ds_dense_crit", _int(ds_dense))
    put("ds_expert_crit", _int(ds_expert))
    put("ds_ratio", f"{ds.moe.experts // ds.moe.experts_per_token}")
    put("tpe_256", _x(moe.tokens_per_expert(256, ds.moe.experts_per_token, ds.moe.experts)))
    cache_user = arch.kv_cache_bytes(ds, CONTEXT)
    put("context", f"{CONTEXT:,}")
    put("ds_cache_user", fmt.gigabytes(cache_user, 2))
    crit_cache = cache_user * ds_expert
    put("crit_cache_tb", f"{crit_cache / 1e12:,.1f} TB")
    put("crit_cache_gpus", _int(-(-crit_cache // h100.addressable_memory_bytes)))

    # -- Expert parallelism ------------------------------------------------------------------------
    dispatch = moe.alltoall_bytes_per_token(ds.hidden_size, ds.moe.experts_per_token, "fp8", "bf16")
    bf16_both = moe.alltoall_bytes_per_token(ds.hidden_size, ds.moe.experts_per_token, "bf16", "bf16")
    dispatch_only = ds.moe.experts_per_token * ds.hidden_size * moe.ALLTOALL_BYTES_PER_VALUE["fp8"]
    put("ds_hidden", f"{ds.hidden_size:,}")
    put("a2a_token", _kb(dispatch))
    put("a2a_dispatch", _kb(dispatch_only))
    put("a2a_combine", _kb(dispatch - dispatch_only))
    put("a2a_bf16", _kb(bf16_both))
    put("a2a_saving", percent(1 - dispatch / bf16_both, 0))
    put("ds_moe_layers", f"{arch.moe_layers(ds)}")
    put("users_per_gpu", f"{USERS_PER_GPU}")
    steps = {}
    for gpus in (EP_SMALL, EP_BIG):
        work = Workload(ds, DS_PRECISION, "bf16", USERS_PER_GPU * gpus, CONTEXT)
        steps[gpus] = expert_step(h100, work, ExpertLayout(gpus))
    small, big = steps[EP_SMALL], steps[EP_BIG]
    put("ep_small", f"{EP_SMALL}")
    put("ep_big", f"{EP_BIG}")
    put("ep_big_nodes", f"{EP_BIG // GPUS_PER_NODE}")
    # The ceiling charges one copy a destination, not one an expert copy (moe.destinations_per_token).
    remote, _ = moe.destinations_per_token(
        ds.moe.experts, ds.moe.experts_per_token, EP_BIG, h100.gpu.interconnect.domain_gpus, ds.moe.node_limit
    )
    put("ds_node_limit", f"{ds.moe.node_limit}")
    put("a2a_copy", _kb(dispatch / ds.moe.experts_per_token))
    put("ep_big_remote", f"{remote:.2f}")
    put("ep_big_copies_off_node", f"{moe.scale_out_copies(ds.moe.experts_per_token, EP_BIG, GPUS_PER_NODE):.2f}")
    put("a2a_step_mb", f"{big.alltoall_bytes_per_step / 1e6:,.0f} MB")
    put("a2a_rdma_share", percent(big.alltoall_rdma_bytes_per_step / big.alltoall_bytes_per_step, 0))
    put("a2a_small_ms", fmt.milliseconds(small.alltoall_s))
    put("a2a_big_ms", fmt.milliseconds(big.alltoall_s))
    put("a2a_big_ratio", _x(big.alltoall_s / small.alltoall_s))
    put("big_memory_ms", fmt.milliseconds(big.memory_s))
    put("big_compute_ms", fmt.milliseconds(big.compute_s))
    put("big_step_ms", fmt.milliseconds(big.step_s))
    serial = big.memory_s + big.alltoall_s
    put("big_serial_ms", fmt.milliseconds(serial))
    put("big_overlap_gain", percent(serial / big.step_s - 1, 0))
    link = h100.gpu.interconnect
    best = link.alltoall_ceiling()
    put("nvlink_gbps", f"{best.nvlink_bytes_per_s / 1e9:,.0f}")
    put("rdma_gbps", f"{best.rdma_bytes_per_s / 1e9:,.0f}")
    normal = link.alltoall["deepep_v1_normal"]
    put("deepep_nvlink_gbps", f"{normal.nvlink_bytes_per_s / 1e9:,.0f}")
    put("deepep_rdma_gbps", f"{normal.rdma_bytes_per_s / 1e9:,.0f}")
    for key in ("ll_dispatch_ep8_us", "ll_combine_ep8_us", "ll_dispatch_ep256_us", "ll_combine_ep256_us"):
        put(key, f"{CITED[key].value:g}")
    kernel_rows = []
    for ep, (out_us, back_us) in DEEPEP_LOW_LATENCY_US.items():
        floor = alltoall_s(h100, ep, DEEPEP_TOKENS, dispatch, 1, ds)[0]
        normal = DEEPEP_NORMAL_GBPS.get(ep)
        kernel_rows.append(
            (
                f"EP{ep}",
                f"{out_us:g} / {back_us:g}",
                f"{floor * 1e6:,.0f}",
                percent(floor * 1e6 / (out_us + back_us), 0),
                "—" if normal is None else f"{normal[0]:g} / {normal[1]:g}" + (" (NVLink)" if ep == 8 else " (RDMA)"),
            )
        )
    content.table(
        "deepep-kernels",
        markdown_table(
            (
                "EP",
                "Low-latency dispatch / combine, µs",
                "Ceiling for both, µs",
                "Ceiling ÷ measured",
                "Normal kernels, GB/s",
            ),
            kernel_rows,
            right={1, 2, 3, 4},
        ),
    )
    put("deepep_tokens", f"{DEEPEP_TOKENS}")
    latency_floor = arch.moe_layers(ds) * (CITED["ll_dispatch_ep8_us"].value + CITED["ll_combine_ep8_us"].value) / 1e6
    put("ll_floor_ms", fmt.milliseconds(latency_floor))

    # -- Attention beside the experts --------------------------------------------------------------
    node_work = Workload(ds, DS_PRECISION, "bf16", 1, CONTEXT)
    tp_node, ep_node = tp_layout(h200, node_work, NODE), ep_layout(h200, node_work, NODE)
    put("node", f"{NODE}")
    put("tp_node_users", _int(tp_node.max_batch))
    put("ep_node_users", _int(ep_node.max_batch))
    put("ep_node_users_ratio", _x(ep_node.max_batch / tp_node.max_batch))
    for gpus, key in ((32, "ep32"), (72, "ep72"), (144, "ep144")):
        put(f"{key}_slots", f"{(ds.moe.experts + REDUNDANT) // gpus}")
    put("redundant", f"{REDUNDANT}")
    put("slots", f"{ds.moe.experts + REDUNDANT}")
    skew_work = Workload(ds, DS_PRECISION, "bf16", USERS_PER_GPU * EP_BIG, CONTEXT)
    skewed = {
        factor: expert_step(h100, skew_work, ExpertLayout(EP_BIG, imbalance=factor))
        for factor in (1.0, moe.MEASURED_IMBALANCE_EPLB, moe.MEASURED_IMBALANCE_NO_EPLB)
    }
    put("skew_none_ms", fmt.milliseconds(skewed[1.0].step_s))
    put("skew_eplb_ms", fmt.milliseconds(skewed[moe.MEASURED_IMBALANCE_EPLB].step_s))
    put("skew_raw_ms", fmt.milliseconds(skewed[moe.MEASURED_IMBALANCE_NO_EPLB].step_s))
    put("skew_raw_bound", skewed[moe.MEASURED_IMBALANCE_NO_EPLB].bound)
    put("skew_none_a2a_ms", fmt.milliseconds(skewed[1.0].alltoall_s))
    put("skew_raw_a2a_ms", fmt.milliseconds(skewed[moe.MEASURED_IMBALANCE_NO_EPLB].alltoall_s))
    put("skew_raw_setter", SETTERS[skewed[moe.MEASURED_IMBALANCE_NO_EPLB].bound])

    # -- Serving DeepSeek-V3 at scale --------------------------------------------------------------
    scale_rows = []

    def decode_row(label, hardware, gpus, batch_per_gpu, context, measured, precision, kv, redundant, conditions):
        work = Workload(ds, precision, kv, batch_per_gpu * gpus, context)
        step = expert_step(hardware, work, ExpertLayout(gpus, redundant=redundant))
        ceiling = step.batch / step.step_s * GPUS_PER_NODE / gpus
        scale_rows.append(
            (label, conditions, f"{measured:,.0f}", f"{ceiling:,.0f}", percent(measured / ceiling, 0), step.bound)
        )
        return ceiling, step

    ds_ceiling, ds_step = decode_row(
        "DeepSeek, decode, EP144",
        h100,
        144,
        int(CITED["ds_batch_per_gpu"].value),
        int(CITED["ds_kv_length"].value),
        CITED["ds_decode_node"].value,
        DS_PRECISION,
        "bf16",
        REDUNDANT,
        f"H800s (ceiling: H100), {ds.moe.experts + REDUNDANT} slots, {CITED['ds_batch_per_gpu'].value:,.0f} users"
        f" a GPU, {CITED['ds_kv_length'].value:,.0f} tokens of context",
    )
    sgl_ceiling, sgl_step = decode_row(
        "SGLang, decode, EP72",
        h100,
        72,
        int(CITED["sgl_decode_batch_per_gpu"].value),
        int(CITED["sgl_decode_context"].value),
        CITED["sgl_decode_node"].value,
        DS_PRECISION,
        "bf16",
        REDUNDANT,
        f"H100s, {ds.moe.experts + REDUNDANT} slots, {CITED['sgl_decode_batch_per_gpu'].value:,.0f} users a GPU,"
        f" {CITED['sgl_decode_context'].value:,.0f}-token inputs",
    )
    trt_context = int(CITED["trt_prompt"].value + CITED["trt_output"].value / 2)
    trt_ceiling, _ = decode_row(
        "TensorRT-LLM, DeepSeek-R1, EP8",
        b200,
        8,
        int(CITED["trt_batch_per_gpu"].value),
        trt_context,
        CITED["trt_per_gpu"].value * GPUS_PER_NODE,
        "nvfp4",
        "fp8",
        0,
        f"B200s, FP4 experts, FP8 cache, {CITED['trt_batch_per_gpu'].value:,.0f} users a GPU,"
        f" {CITED['trt_prompt'].value:,.0f} in and {CITED['trt_output'].value:,.0f} out"
        f" ({trt_context:,} tokens on average)",
    )
    prefills = {}
    for prompt, key in ((1024, "sgl_prefill_1k"), (2048, "sgl_prefill_2k"), (4096, "sgl_prefill_4k")):
        work = Workload(ds, DS_PRECISION, "bf16", 1, 0, prompt)
        run = batched_prefill(h100, work, EP_BIG, PREFILL_TOKENS_PER_GPU)
        prefills[prompt] = run
        ceiling = run.tokens_per_s * GPUS_PER_NODE / EP_BIG
        measured = CITED[key].value
        bound = prefill_bound(run)
        scale_rows.append(
            (
                f"SGLang, prefill, EP{EP_BIG}",
                f"H100s, {prompt:,}-token prompts, {PREFILL_TOKENS_PER_GPU:,} tokens a GPU",
                f"{measured:,.0f}",
                f"{ceiling:,.0f}",
                percent(measured / ceiling, 0),
                bound,
            )
        )
    ds_prefill = batched_prefill(
        h100,
        Workload(ds, DS_PRECISION, "bf16", 1, 0, DS_PREFILL_PROMPT),
        EP_BIG,
        PREFILL_TOKENS_PER_GPU,
        redundant=REDUNDANT,
    )
    put("ds_prefill_prompt", f"{DS_PREFILL_PROMPT:,}")
    put(
        "prefill_tpe",
        _int(moe.tokens_per_expert(PREFILL_TOKENS_PER_GPU * EP_BIG, ds.moe.experts_per_token, ds.moe.experts)),
    )
    ds_prefill_ceiling = ds_prefill.tokens_per_s * GPUS_PER_NODE / EP_BIG
    content.table(
        "ds-at-scale",
        markdown_table(
            (
                "Deployment",
                "Conditions",
                "Measured, tokens/s a node",
                "Ceiling",
                "Measured ÷ ceiling",
                "Ceiling's bound",
            ),
            scale_rows,
            right={2, 3, 4},
        ),
    )
    put("ds_decode_measured", f"{CITED['ds_decode_node'].value:,.0f}")
    put("ds_decode_ceiling", _int(ds_ceiling))
    put("ds_decode_bound", ds_step.bound)
    put("sgl_decode_measured", f"{CITED['sgl_decode_node'].value:,.0f}")
    put("sgl_decode_ceiling", _int(sgl_ceiling))
    put("sgl_decode_bound", sgl_step.bound)
    put("sgl_decode_a2a_ms", fmt.milliseconds(sgl_step.alltoall_s))
    put("sgl_decode_memory_ms", fmt.milliseconds(sgl_step.memory_s))
    put("sgl_decode_setter", SETTERS[sgl_step.bound])
    put("trt_measured", f"{CITED['trt_per_gpu'].value:,.0f}")
    put("trt_ceiling_gpu", _int(trt_ceiling / GPUS_PER_NODE))
    put("ds_prefill_measured", f"{CITED['ds_prefill_node'].value:,.0f}")
    put("ds_prefill_uncached", f"{CITED['ds_prefill_node_uncached'].value:,.0f}")
    put("ds_prefill_ceiling", _int(ds_prefill_ceiling))
    longest = max(prefills)
    put("ds_prefill_prompt_4k", f"{longest:,}")
    put("prefill_a2a_s", fmt.duration(prefills[longest].alltoall_s))
    put("prefill_compute_s", fmt.duration(prefills[longest].compute_s))
    put("prefill_bound", prefill_bound(prefills[longest]))
    put("prefill_tokens_per_gpu", f"{PREFILL_TOKENS_PER_GPU:,}")

    # -- The batch at which EP pays for its all-to-all ---------------------------------------------
    break_rows = []
    for context in BREAK_CONTEXTS:
        base = Workload(ds, DS_PRECISION, "bf16", 1, context)
        cells = [f"{context:,}"]
        for gpus in BREAK_GPUS:
            found = ep_break_even_batch(h200, base, gpus)
            cells.append("never" if found is None else f"{found:,}")
        break_rows.append(tuple(cells))
    content.table(
        "ep-break-even",
        markdown_table(
            ("Context (tokens)", *(f"EP{g} vs TP{g}" for g in BREAK_GPUS)), break_rows, right=set(range(1, 4))
        ),
    )
    node_base = Workload(ds, DS_PRECISION, "bf16", 1, CONTEXT)
    even = ep_break_even_batch(h200, node_base, NODE)
    put("break_even", f"{even:,}")
    put("break_even_per_gpu", _x(even / NODE))
    put("adv_1", _x(1 / ep_advantage(h200, node_base, NODE, 1)))
    put("adv_256", _x(ep_advantage(h200, node_base, NODE, 256)))
    tp_one = tp_layout(h200, Workload(ds, DS_PRECISION, "bf16", 1, CONTEXT), NODE)
    ep_one = ep_layout(h200, Workload(ds, DS_PRECISION, "bf16", 1, CONTEXT), NODE)
    put("tp_one_ms", fmt.milliseconds(tp_one.step_s))
    put("ep_one_ms", fmt.milliseconds(ep_one.step_s))
    return content


#: The calculator's example (``<!-- roofline:calculator mixture_of_experts example=sglang -->``): SGLang's
#: decode conditions, so the EP72 line shows the ceiling the serving table sets beside its 22,282 a node.
EXAMPLES: dict[str, dict[str, object]] = {
    "sglang": {
        "model": DS,
        "gpu": GPU,
        "weights": DS_PRECISION,
        "batch": 256 * 72,
        "context": 2000,
        "redundant": REDUNDANT,
    },
}
