"""Chapter 8, "Prefix Caching and Disaggregated Serving": every number its prose quotes, its tables and figures.

The page is ``index.md`` beside this module; its Run cell is ``programs/prefix_caching.py``, its
calculator ``calculators/prefix_caching.py`` and its chart builders are in ``charts.py``. Every
model figure comes from the package: ``roofline.prefixcache`` (what a hit saves, what the cache
takes from the pool), ``roofline.disagg`` (the KV transfer, the pools' rates) and
``roofline.splitchoice`` (a prefill's stall inside a decode iteration, full-block hits). Published
figures the prose quotes are in ``CITED`` below, each with its source, read there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from roofline import Hardware, ServingConfig, Workload, load_calibration
from roofline import formatting as fmt
from roofline.calibration import cost_model
from roofline.disagg import kv_transfer, link_bytes_per_s, pool_rates
from roofline.disaggserving import Pools, max_rate_within_slo, simulate_disaggregated
from roofline.fleet import simulate_fleet
from roofline.prefixcache import BLOCK_TOKENS, cache_memory, cached_tokens, hit_saving
from roofline.serving import DEFAULT_PREFIX_CACHE_SHARE, DEFAULT_TPOT_SLO_S, DEFAULT_TTFT_SLO_S, Lengths, simulate
from roofline.splitchoice import choose, full_block_tokens, prefill_stall
from sitegen import escape
from sitegen.context import Context
from sitegen.page import PageContent
from sitegen.tables import markdown_table
from sitegen.values import percent, whole

from . import charts

GPU = "h100-sxm"
#: The prefix half's running example: one GPU, a prompt, the share of it a cached prefix covers.
MODEL, KV_PRECISION = "llama-3.1-8b", "bf16"
PROMPT, SHARE = 4096, 0.9
#: The hit table's shares, and the figure's prompts and shares.
TABLE_SHARES = (0.0, 0.5, 0.9, 0.99)
FIG_PROMPTS = (1024, 4096, 16384)
FIG_SHARES = (0.0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)
#: A shared prefix that is not a whole number of blocks.
ODD_PREFIX = 1000
#: The cache's memory: this many distinct prefixes held at once, running requests of CONTEXT tokens.
GROUPS, CONTEXT = 50, 4096
#: The stall: one prompt of STALL_PROMPT tokens prefilled beside STALL_BATCH decodes at STALL_CONTEXT.
STALL_PROMPT, STALL_BATCH, STALL_CONTEXT = 4096, 32, 4096
#: The disaggregated example: a 70B model on pools of DG_GPUS GPUs, a DG_PROMPT-token prompt.
DG_MODEL, DG_GPUS, DG_PROMPT = "llama-3.1-70b", 4, 4096
#: The transfer table's links, and the figure's prompts.
LINK_ROWS = ("nvlink", "network", "pcie")
FIG_LINKS = (("nvlink", "NVLink"), ("network", "network"))
DG_FIG_PROMPTS = (256, 1024, 4096, 16384, 65536, 131072)
#: The pool ratio: output tokens and the decode batch.
PD_OUTPUT, PD_BATCH = 256, 64
#: Where a split loses: short prompts on the small model, the simulator's default targets.
LOSS_PROMPT, LOSS_OUTPUT = 100, 256
LOSS_TTFT_SLO_S, LOSS_ITL_SLO_S = DEFAULT_TTFT_SLO_S, DEFAULT_TPOT_SLO_S

#: The prefix cache in the simulator: the running example's prompt at SIM_RATE requests/s, its first SHARE
#: one of SIM_GROUPS prefixes (None: no cache), in the cache's default share of the KV blocks.
SIM_RATE, SIM_REQUESTS, SIM_OUTPUT = 4.0, 1000, 256
SIM_GROUPS = (None, 1, 20, 100)
#: DistServe's worked example (its blog): a 13B model on one A100 80 GB, prompts 512, outputs 64,
#: goodput the highest Poisson rate at which 90% of requests meet TTFT 0.4 s and TPOT 0.04 s.
TOY_GPU, TOY_MODEL, TOY_PROMPT, TOY_OUTPUT, TOY_TTFT_S, TOY_TPOT_S = "a100-80gb", "llama-2-13b", 512, 64, 0.4, 0.04
TOY_POOLS = Pools(2, 1)
#: Short prompts on two GPUs, all sent at once: one prefill and one decode GPU, or two replicas of both.
BURST_REQUESTS, BURST_PROMPT, BURST_OUTPUT, BURST_MAX_BATCH = 3000, 100, 100, 256


@dataclass(frozen=True)
class Cited:
    """A published figure the prose quotes, with its source (read there; see the footnotes)."""

    value: float
    source: str


SGLANG04 = "https://github.com/lm-sys/lm-sys.github.io/blob/44576d5bfce86a3d065f6f1dfda2557f05053760/blog/2024-12-04-sglang-v0-4.md"
SGLANG = (
    "https://github.com/lm-sys/lm-sys.github.io/blob/180a410e46f406dba5aa8ecab44e3b7a8700f292/blog/2024-01-17-sglang.md"
)
DEEPSEEK = (
    "https://github.com/deepseek-ai/open-infra-index/blob/56d86855fcf6e08fdfd45ce6280bd24322c93351/"
    "202502OpenSourceWeek/day_6_one_more_thing_deepseekV3R1_inference_system_overview.md"
)
DISTSERVE = "https://github.com/hao-ai-lab/hao-ai-lab.github.io/blob/821a7fe7d3be54a90ad98378278e83e8017c9d41/content/blogs/distserve/index.md"
TRTLLM = (
    "https://github.com/NVIDIA/TensorRT-LLM/blob/012f575512b37451d93439a1e9cf0edb7d9fee2c/"
    "docs/source/blogs/tech_blog/blog5_Disaggregated_Serving_in_TensorRT-LLM.md"
)
MOONCAKE = "https://github.com/kvcache-ai/Mooncake/blob/01b91d9bddabae761570e588906c6c5530e2a147/README.md"
DYNAMO = "https://developer.nvidia.com/dynamo"
SPLITWISE = "https://arxiv.org/abs/2311.18677"
VLLM_DISAGG = (
    "https://github.com/vllm-project/vllm/blob/0047fb9dad17a566f41008c80e57f7eeb7aa5b81/docs/features/disagg_prefill.md"
)

CITED = {
    # SGLang v0.4's cache-aware router against v0.3's round robin: 8 data-parallel workers.
    "router_dp": Cited(8, SGLANG04),
    "router_rr_hit": Cited(0.20, SGLANG04),
    "router_ca_hit": Cited(0.75, SGLANG04),
    "router_rr_tps": Cited(82665, SGLANG04),
    "router_ca_tps": Cited(158596, SGLANG04),
    # vLLM's SHA-256 block hash: its cost a token, in ns (low, high).
    "sha_low_ns": Cited(
        100,
        "https://github.com/vllm-project/vllm/blob/01ff8bff98541914fbc22970a92359b1602988c7/docs/design/prefix_caching.md",
    ),
    "sha_high_ns": Cited(
        200,
        "https://github.com/vllm-project/vllm/blob/01ff8bff98541914fbc22970a92359b1602988c7/docs/design/prefix_caching.md",
    ),
    # DeepSeek's deployment units: nodes a prefill unit and a decode unit span.
    "ds_prefill_nodes": Cited(4, DEEPSEEK),
    "ds_decode_nodes": Cited(18, DEEPSEEK),
    # NVIDIA's Dynamo headline, tokens/s a GPU, DeepSeek-R1 on GB200 NVL72 (baseline not stated).
    "dynamo_headline": Cited(30, DYNAMO),
    # DistServe's goodput: the share of requests that must meet both targets.
    "goodput_attainment": Cited(0.9, DISTSERVE),
    # RadixAttention's headline against Guidance, vLLM and TGI.
    "radix_speedup": Cited(5, SGLANG),
    # DistServe's worked example: goodput a GPU colocated, and with two prefill GPUs and one decode GPU.
    "toy_colocated": Cited(1.6, DISTSERVE),
    "toy_split": Cited(10 / 3, DISTSERVE),
    # DeepSeek's 24 hours: input tokens in total and those that hit the on-disk cache; R1's prices, $ per million.
    # (342B of 608B input tokens; the page quotes the share as DeepSeek rounds it, 56.3%, not 342/608's 56.25%.)
    "ds_hit_rate": Cited(0.563, DEEPSEEK),
    "ds_hit_price": Cited(0.14, DEEPSEEK),
    "ds_miss_price": Cited(0.55, DEEPSEEK),
}


def _hit_rows(hardware: Hardware, workload: Workload) -> list[tuple[str, ...]]:
    rows = []
    for share in TABLE_SHARES:
        saving = hit_saving(hardware, workload, PROMPT, cached_tokens(PROMPT, share))
        rows.append(
            (
                percent(share),
                whole(saving.cached),
                whole(saving.prompt - saving.cached),
                fmt.milliseconds(saving.after_s),
                percent(saving.saved_fraction),
            )
        )
    return rows


def _prefix_half(content: PageContent, ctx: Context) -> None:
    gpu, model = ctx.specs.gpu(GPU), ctx.specs.model(MODEL)
    hardware, workload = Hardware(gpu), Workload(model, kv_precision=KV_PRECISION)
    content.put("gpu_name", escape.text(gpu.name))
    content.put("model_name", escape.text(model.name))
    content.put("kv_precision", KV_PRECISION)
    cached = cached_tokens(PROMPT, SHARE)
    saving = hit_saving(hardware, workload, PROMPT, cached)
    content.put("prompt", whole(PROMPT))
    content.put("share", percent(SHARE))
    content.put("cached", whole(cached))
    content.put("new_tokens", whole(PROMPT - cached))
    content.put("ttft_full", fmt.milliseconds(saving.full_s))
    content.put("ttft_hit", fmt.milliseconds(saving.after_s))
    content.put("saved_share", percent(saving.saved_fraction))
    # No hit goes below one read of the weights: the prefill of the prompt's last token alone.
    content.put("weights_floor", fmt.milliseconds(hit_saving(hardware, workload, PROMPT, PROMPT - 1).after_s))
    header = ("Cached share", "Cached tokens", "New tokens", "Time to first token", "Saved")
    content.table("pc-hits", markdown_table(header, _hit_rows(hardware, workload), right={0, 1, 2, 3, 4}))
    content.figure(
        "pc-ttft-share",
        charts.ttft_left(hardware, workload, FIG_PROMPTS, FIG_SHARES),
        "The prefill a hit leaves, as a share of the whole prompt's, against the share cached.",
    )
    content.put("block_tokens", str(BLOCK_TOKENS))
    content.put("odd_prefix", whole(ODD_PREFIX))
    content.put("odd_hit", whole(full_block_tokens(ODD_PREFIX)))
    memory = cache_memory(hardware, Workload(model, kv_precision=KV_PRECISION, context=CONTEXT), cached, GROUPS)
    content.put("kv_per_token", fmt.bytes_size(workload.kv_bytes_per_token))
    content.put("prefix_bytes", fmt.bytes_size(memory.prefix_bytes / GROUPS))
    content.put("groups", whole(GROUPS))
    content.put("groups_bytes", fmt.gigabytes(memory.prefix_bytes))
    content.put("groups_pool_share", percent(memory.pool_share))
    content.put("context", whole(CONTEXT))
    content.put("batch_full", whole(memory.users_without_cache))
    content.put("batch_lost", whole(memory.users_without_cache - memory.users_with_cache))


def _published_hits(content: PageContent) -> None:
    c = CITED
    content.put("router_dp", whole(c["router_dp"].value))
    content.put("router_rr_hit", percent(c["router_rr_hit"].value))
    content.put("router_ca_hit", percent(c["router_ca_hit"].value))
    speedup = c["router_ca_tps"].value / c["router_rr_tps"].value
    content.put("router_speedup", f"{speedup:.1f}")
    hit_rate = c["ds_hit_rate"].value
    hit, miss = c["ds_hit_price"].value, c["ds_miss_price"].value
    effective = hit_rate * hit + (1 - hit_rate) * miss  # the prose's weighted mean of the two prices
    content.put("ds_hit_rate", percent(hit_rate, 1))
    content.put("ds_hit_price", f"${hit:.2f}")
    content.put("ds_miss_price", f"${miss:.2f}")
    content.put("ds_price_ratio", percent(hit / miss))
    content.put("ds_effective", f"${effective:.3f}")
    content.put("ds_saving", percent(1 - effective / miss))
    content.put("sha_ns", f"{c['sha_low_ns'].value:.0f}–{c['sha_high_ns'].value:.0f}")
    content.put("ds_prefill_nodes", whole(c["ds_prefill_nodes"].value))
    content.put("ds_decode_nodes", whole(c["ds_decode_nodes"].value))
    content.put("dynamo_headline", whole(c["dynamo_headline"].value))
    content.put("toy_attainment", percent(c["goodput_attainment"].value))
    rows = [
        (
            "SGLang RadixAttention against Guidance 0.1.8, vLLM 0.2.5, TGI 1.3.0",
            "Llama-7B on 1 A10G, Mixtral-8x7B on 8 A10G, fp16; few-shot, agent, tree search, chat, RAG",
            "not stated",
            f"up to {c['radix_speedup'].value:.0f}× throughput",
            f"[LMSYS blog]({SGLANG})",
        ),
        (
            "SGLang v0.4 cache-aware router against round robin",
            f"Llama 3.1 8B on 8 A100 80 GB, {c['router_dp'].value:.0f} data-parallel workers; shared-prefix groups",
            f"{percent(c['router_ca_hit'].value)} against {percent(c['router_rr_hit'].value)}"
            " (of prefills or of tokens: the blog does not say)",
            f"{whole(c['router_ca_tps'].value)} against {whole(c['router_rr_tps'].value)} tokens/s ({speedup:.1f}×)",
            f"[LMSYS blog]({SGLANG04})",
        ),
        (
            "DeepSeek-V3/R1 service, on-disk cache (3FS)",
            "H800 nodes, all web, app and API traffic over 24 hours",
            f"{percent(hit_rate, 1)} of input tokens",
            f"cached input billed at {percent(hit / miss)} of uncached",
            f"[DeepSeek]({DEEPSEEK})",
        ),
    ]
    header = ("System", "Model, hardware, workload", "Hit rate", "Result", "Source")
    content.table("pc-published", markdown_table(header, rows, right=set()))


def _disagg_half(content: PageContent, ctx: Context) -> None:
    gpu = ctx.specs.gpu(GPU)
    small = Workload(ctx.specs.model(MODEL), kv_precision=KV_PRECISION)
    stall = prefill_stall(Hardware(gpu), small, STALL_PROMPT, STALL_BATCH, STALL_CONTEXT)
    content.put("dg_stall_prompt", whole(STALL_PROMPT))
    content.put("dg_stall_batch", whole(STALL_BATCH))
    content.put("dg_stall_iter", fmt.milliseconds(stall.iteration_s))
    content.put("dg_stall_decode", fmt.milliseconds(stall.decode_s))
    content.put("dg_stall_ratio", f"{stall.ratio:.1f}")

    model = ctx.specs.model(DG_MODEL)
    hardware, workload = Hardware(gpu, count=DG_GPUS), Workload(model, kv_precision=KV_PRECISION)
    transfers = {link: kv_transfer(hardware, workload, DG_PROMPT, link) for link in LINK_ROWS}
    network, nvlink = transfers["network"], transfers["nvlink"]
    content.put("dg_model_name", escape.text(model.name))
    content.put("dg_gpus", whole(DG_GPUS))
    content.put("dg_prompt", whole(DG_PROMPT))
    content.put("dg_bytes", fmt.gigabytes(network.bytes, 2))
    content.put("dg_prefill", fmt.milliseconds(network.prefill_s))
    content.put("dg_xfer_out", fmt.milliseconds(network.seconds))
    content.put("dg_xfer_nvlink", fmt.milliseconds(nvlink.seconds))
    content.put("dg_xfer_out_share", percent(network.transfer_to_prefill, 1))
    content.put("dg_nic", f"{link_bytes_per_s(gpu, 'network') * 8 / 1e9:.0f} Gb/s")
    names = {"nvlink": escape.text(gpu.interconnect.scale_up), "network": "scale-out NIC", "pcie": "PCIe host link"}
    rows = [
        (
            names[link],
            f"{link_bytes_per_s(gpu, link) / 1e9:,.0f}",
            fmt.gigabytes(moved.bytes, 2),
            fmt.milliseconds(moved.seconds),
            percent(moved.transfer_to_prefill, 1),
        )
        for link, moved in transfers.items()
    ]
    header = ("Link", "GB/s a GPU, one way", "KV cache", "Transfer", "Share of the prefill")
    content.table("dg-transfer", markdown_table(header, rows, right={1, 2, 3, 4}))
    content.figure(
        "dg-transfer",
        charts.transfer_vs_prefill(hardware, workload, DG_FIG_PROMPTS, FIG_LINKS),
        "The KV transfer over NVLink and over the network, beside the prefill that computes the cache.",
    )

    rates = pool_rates(hardware, hardware, workload, DG_PROMPT, PD_OUTPUT, PD_BATCH)
    content.put("pd_prefill_time", fmt.milliseconds(network.prefill_s))
    content.put("pd_prefill_rate", f"{rates.prefill_requests_per_s:.1f}")
    content.put("pd_batch", whole(PD_BATCH))
    content.put("pd_output", whole(PD_OUTPUT))
    content.put("pd_decode_rate", f"{rates.decode_requests_per_s:.1f}")
    content.put("pd_ratio", f"{rates.prefill_gpus_per_decode_gpu:.1f}")

    # Short prompts: the verdict for the small model on one GPU a pool, at a load one pool serves.
    loss = choose(Hardware(gpu), small, LOSS_PROMPT, LOSS_OUTPUT, 1.0, LOSS_TTFT_SLO_S, LOSS_ITL_SLO_S)
    assert loss.verdict == "keep" and loss.stall is not None, loss.reason  # the prose says a split loses here
    content.put("loss_prompt", whole(LOSS_PROMPT))
    content.put("loss_model_name", escape.text(small.model.name))
    content.put("loss_batch", whole(loss.decode_batch))
    content.put("loss_iter", fmt.milliseconds(loss.stall.iteration_s))
    content.put("loss_decode", fmt.milliseconds(loss.stall.decode_s))
    content.put("loss_itl", fmt.milliseconds(LOSS_ITL_SLO_S))


def _published_disagg(content: PageContent) -> None:
    rows = [
        (
            "DistServe against vLLM",
            "OPT models on A100s; chatbot, code completion, summarization",
            "2.0–3.41×, 3.2× and 4.48× goodput",
            f"[Hao AI Lab blog]({DISTSERVE})",
        ),
        (
            "DistServe's example, 2 prefill + 1 decode GPU",
            "13B model on A100 80 GB, prompts 512, outputs 64; P90 TTFT 0.4 s, P90 TPOT 0.04 s",
            f"{CITED['toy_split'].value:.1f} against {CITED['toy_colocated'].value:.1f} requests/s a GPU",
            f"[Hao AI Lab blog]({DISTSERVE})",
        ),
        (
            "Splitwise against one pool",
            "production traces; prompt and token machines of different GPU types",
            "up to 1.4× throughput at 20% lower cost",
            f"[paper]({SPLITWISE}) (read in a copy)",
        ),
        (
            "TensorRT-LLM, disaggregated against aggregated",
            "DeepSeek R1 on GB200; prompts 4,400, outputs 1,200",
            "1.4–1.8× at equal speed per user, most at low concurrency",
            f"[tech blog 5]({TRTLLM})",
        ),
        (
            "Mooncake (Kimi)",
            "real workloads, within its SLOs",
            "75% more requests",
            f"[README]({MOONCAKE})",
        ),
        (
            "NVIDIA Dynamo",
            "DeepSeek-R1 on GB200 NVL72; Llama 70B on Hopper",
            f"up to {CITED['dynamo_headline'].value:.0f}× and more than 2× tokens/s a GPU, baseline not stated",
            f"[product page]({DYNAMO})",
        ),
        (
            "vLLM",
            "its disaggregated prefill feature",
            "does not improve throughput",
            f"[docs]({VLLM_DISAGG})",
        ),
    ]
    header = ("System", "Model, hardware, workload", "Reported", "Source")
    content.table("dg-published", markdown_table(header, rows, right=set()))


def _prefix_in_simulator(content: PageContent, ctx: Context) -> None:
    gpu = ctx.specs.gpu(GPU)
    hardware, workload = Hardware(gpu), Workload(ctx.specs.model(MODEL), kv_precision=KV_PRECISION)
    base = ServingConfig(
        rate=SIM_RATE, requests=SIM_REQUESTS, prompt=Lengths(PROMPT, PROMPT), output=Lengths(SIM_OUTPUT, SIM_OUTPUT)
    )
    runs = {}
    for groups in SIM_GROUPS:
        config = base if groups is None else replace(base, prefix_share=SHARE, prefix_groups=groups)
        runs[groups] = simulate(hardware, workload, config)
    rows = []
    for groups, run in runs.items():
        figures = run.to_dict()
        rows.append(
            (
                "no cache" if groups is None else f"{whole(groups)} prefix{'es' if groups > 1 else ''}",
                "—" if groups is None else percent(figures["prefix_hit_rate"], 1),
                "—" if groups is None else percent(figures["prefix_token_hit_rate"], 1),
                "—" if groups is None else whole(figures["prefill_tokens_saved"]),
                fmt.milliseconds(run.ttft_mean_s),
                fmt.milliseconds(run.ttft_s[50]),
            )
        )
    header = (
        "Shared prefixes",
        "Prefills that hit",
        "Prompt tokens from the cache",
        "Prompt tokens skipped",
        "Mean TTFT",
        "Median TTFT",
    )
    content.table("pc-sim", markdown_table(header, rows, right={1, 2, 3, 4, 5}))
    plain, one = runs[None], runs[1]
    content.put("pcsim_rate", f"{SIM_RATE:g}")
    content.put("pcsim_requests", whole(SIM_REQUESTS))
    content.put("pcsim_output", whole(SIM_OUTPUT))
    content.put("pcsim_cache_share", percent(DEFAULT_PREFIX_CACHE_SHARE))
    content.put("pcsim_saved", percent(1 - one.ttft_mean_s / plain.ttft_mean_s, 1))
    saving = hit_saving(hardware, workload, PROMPT, cached_tokens(PROMPT, SHARE))
    content.put("pcsim_predicted", percent(saving.saved_fraction, 1))
    content.put("pcsim_many", whole(SIM_GROUPS[-1]))
    many = runs[SIM_GROUPS[-1]].to_dict()
    content.put("pcsim_many_hit", percent(many["prefix_hit_rate"], 1))
    content.put("pcsim_many_token_hit", percent(many["prefix_token_hit_rate"], 1))
    content.put("pcsim_one_hit", percent(one.to_dict()["prefix_hit_rate"], 1))
    content.put("pcsim_one_token_hit", percent(one.to_dict()["prefix_token_hit_rate"], 1))


def _disagg_in_simulator(content: PageContent, ctx: Context) -> None:
    gpu, model = ctx.specs.gpu(TOY_GPU), ctx.specs.model(TOY_MODEL)
    config = ServingConfig(
        requests=SIM_REQUESTS, prompt=Lengths(TOY_PROMPT, TOY_PROMPT), output=Lengths(TOY_OUTPUT, TOY_OUTPUT),
        ttft_slo_s=TOY_TTFT_S, tpot_slo_s=TOY_TPOT_S, max_batch=BURST_MAX_BATCH,
    )  # fmt: skip
    workload = Workload(model)
    split_gpus = TOY_POOLS.prefill + TOY_POOLS.decode
    rows = []
    for label, costs in (("ceiling", "ceiling"), ("expected", "expected")):
        hardware = Hardware(gpu, costs=cost_model(costs, gpu, load_calibration()))
        share = CITED["goodput_attainment"].value  # DistServe's definition, the same for both layouts
        together = max_rate_within_slo(hardware, workload, config, attainment=share, low=0.5, high=100.0)
        split = max_rate_within_slo(hardware, workload, config, TOY_POOLS, attainment=share, low=0.5, high=100.0)
        split /= split_gpus
        rows.append((f"simulator, {label} costs", f"{together:.1f}", f"{split:.1f}", f"{split / together:.2f}×"))
        content.put(f"toy_{label}_gain", f"{split / together:.2f}")
    colocated, paper_split = CITED["toy_colocated"].value, CITED["toy_split"].value
    rows.append(("DistServe's blog", f"{colocated:.1f}", f"{paper_split:.1f}", f"{paper_split / colocated:.2f}×"))
    header = ("Run", "One GPU, both phases", f"{TOY_POOLS.prefill} prefill + {TOY_POOLS.decode} decode", "Gain")
    content.table("dg-toy", markdown_table(header, rows, right={1, 2, 3}))
    content.put("toy_model_name", escape.text(model.name))
    content.put("toy_gpu_name", escape.text(gpu.name))
    content.put("toy_prompt", whole(TOY_PROMPT))
    content.put("toy_output", whole(TOY_OUTPUT))
    content.put("toy_ttft", fmt.milliseconds(TOY_TTFT_S))
    content.put("toy_tpot", fmt.milliseconds(TOY_TPOT_S))
    content.put("toy_paper_gain", f"{paper_split / colocated:.2f}")

    small = Workload(ctx.specs.model(MODEL), kv_precision=KV_PRECISION)
    hardware = Hardware(ctx.specs.gpu(GPU))
    burst = ServingConfig(
        rate=math.inf, requests=BURST_REQUESTS, prompt=Lengths(BURST_PROMPT, BURST_PROMPT),
        output=Lengths(BURST_OUTPUT, BURST_OUTPUT), max_batch=BURST_MAX_BATCH,
    )  # fmt: skip
    split = simulate_disaggregated(hardware, small, burst, Pools(1, 1))
    together = simulate_fleet(hardware, small, burst, replicas=2)
    assert split.goodput_requests_per_s < together.goodput_requests_per_s  # the prose: the split loses
    content.put("burst_requests", whole(BURST_REQUESTS))
    content.put("burst_prompt", whole(BURST_PROMPT))
    content.put("burst_output", whole(BURST_OUTPUT))
    content.put("burst_split_tps", fmt.rate(split.throughput_tokens_per_s))
    content.put("burst_together_tps", fmt.rate(together.throughput_tokens_per_s))
    content.put("burst_split_itl", fmt.milliseconds(split.itl_mean_s))
    content.put("burst_together_itl", fmt.milliseconds(together.itl_mean_s))
    pools = split.to_dict()["disaggregation"]
    content.put("burst_prefill_busy", percent(pools["prefill_pool"]["busy_fraction"]))
    content.put("burst_decode_busy", percent(pools["decode_pool"]["busy_fraction"]))


def build(ctx: Context) -> PageContent:
    content = PageContent()
    _prefix_half(content, ctx)
    _published_hits(content)
    _prefix_in_simulator(content, ctx)
    _disagg_half(content, ctx)
    _disagg_in_simulator(content, ctx)
    _published_disagg(content)
    return content
