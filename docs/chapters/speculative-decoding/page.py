"""Chapter 5, "Speculative Decoding": every number its prose quotes, its tables and its four figures.

The page is ``index.md`` beside this module; its Run cell shows
``programs/speculate_batch.py``, its calculator is ``calculators/speculate.py`` and its
chart builders are in ``charts.py``. Every figure of speculation comes from
``roofline.speculative`` (τ, a round's cost, the batch-aware speedup, the break-even
batch), the published acceptance from ``roofline.acceptance`` (``data/acceptance.toml``),
the speculative runs and their ceilings from ``roofline.measured``, and the plain runs
beside them and vLLM's figures under load from ``published.toml`` here. The chapter's own
choices (the deployment, α, γ) are the constants below.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from roofline import Hardware, Workload, crossover_batch, decode_step, memory_use
from roofline import architecture as arch
from roofline import formatting as fmt
from roofline.acceptance import Acceptance, held_out_speedups, load_acceptance, round_cost_line
from roofline.calibration import load_calibration
from roofline.measured import Comparison, compare_all, load_measurements
from roofline.performance import decode_pass
from roofline.serving import Lengths, ServingConfig
from roofline.specsampling import acceptance_at_temperature, output_distribution, softmax, total_variation
from roofline.specserving import Drafting, simulate_speculative
from roofline.spectree import TreeRounds, TreeShape
from roofline.speculative import (
    Rounds,
    alpha_for_tokens_per_step,
    best_gamma,
    break_even_batch,
    speculation_round,
    tokens_per_step,
)
from sitegen import escape
from sitegen.context import Context
from sitegen.figures import sig
from sitegen.page import PageContent
from sitegen.values import percent

from . import charts

GPU = "h100-sxm"
TARGET = "llama-3.1-8b"
DRAFT = "llama-3.2-1b"
#: The draft-only entry for TARGET: the EAGLE-3 head trained for it (``SpecSet.drafts``).
HEAD = "eagle3-llama-3.1-8b"
PRECISION = "bf16"
#: The chapter's running example: each guess accepted with probability ALPHA, GAMMA guesses a round.
ALPHA = 0.8
GAMMA = 4
#: The heatmap's axes.
HEAT_ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
HEAT_GAMMAS = tuple(range(1, 11))
#: Draft lengths drawn against the batch, and a batch well past the break-even.
BATCH_GAMMAS = (1, 2, 4, 8)
BATCH_HIGH = 256
BATCH_AXIS_TOP = 1024
#: A long context, where each user's cache read keeps the verification memory-bound.
LONG_CONTEXT = 4096
#: A measured gain "falls" once it is below this share of the ceiling's at the same batch.
FADED = 0.95
#: Choosing γ: the batch at which the best γ is compared with one user's.
BEST_BATCH = 64
#: Spec-Bench rows the chapter compares: one leaderboard (A100, Vicuna-13B), so the methods share a setup.
SPEC_BENCH_PREFIX = "spec-bench-a100-vicuna-13b-"
#: Where the round-cost figure puts a method's name when above-right would collide with a neighbour.
LABEL_PLACES = {"lookahead": "left", "rest": "below-right", "sps": "below-right"}
#: The chain runs of vLLM issue 20780, one user, draft length 2 to 7.
VLLM_CHAINS = {"EAGLE-1": "vllm-20780-llama-3.1-8b-eagle1-k", "EAGLE-3": "vllm-20780-llama-3.1-8b-eagle3-k"}
#: Under load: one stream of requests per rate, served without speculation and with Llama 3.2 1B
#: drafting at two acceptance rates (γ = GAMMA), by the serving simulator (``roofline.specserving``).
LOAD_RATES = (4, 16, 32, 64, 96, 128)
LOAD_REQUESTS = 300
LOAD_PROMPT, LOAD_OUTPUT = Lengths(128, 1024), Lengths(32, 512)
LOAD_MAX_BATCH = 256
LOAD_ALPHAS = (0.6, ALPHA)
#: DeepSeek-V3's MTP acceptance, the two ends of the report's range (``data/acceptance.toml``).
MTP_ROWS = ("deepseek-v3-mtp-low", "deepseek-v3-mtp-high")
#: Trees of candidates: (depth, branches kept per step, tokens verified per user), the first a
#: chain of GAMMA; every shape priced at the same τ, the chain's at ALPHA, to show what the
#: verification's size alone does.
TREE_SHAPES = ((GAMMA, 1, GAMMA + 1), (5, 8, 8), (5, 8, 16), (5, 8, 32), (8, 8, 64))
TREE_BATCH = 32
#: Acceptance and sampling: a five-token vocabulary, the target's and the draft's logits at one
#: position (the chapter's own illustration, not a model's), and the temperatures compared.
SAMPLE_TARGET = (5.0, 2.5, 1.0, 0.0, 0.0)
SAMPLE_DRAFT = (4.0, 1.0, 3.0, 0.5, 0.5)
#: A position where the two models rank different tokens first.
SAMPLE_DISAGREE_TARGET = (2.0, 2.2, 0.5, 0.0, -1.0)
SAMPLE_DISAGREE_DRAFT = (2.4, 1.6, 0.5, 0.2, -1.0)
SAMPLE_TEMPERATURES = (0.0, 0.5, 0.7, 1.0)
#: A temperature far past any served one, where both distributions approach uniform.
SAMPLE_HOT = 10.0
#: The self-check's figures.
Q1_ALPHA, Q1_GAMMAS = 0.7, (3, 6)
Q2_COST = 0.05
PUBLISHED = Path(__file__).with_name("published.toml")


@dataclass(frozen=True)
class Plain:
    """A run without speculation beside a speculative row of measurements.toml (``published.toml``
    lists, for each plain run, the speculative rows measured beside it)."""

    id: str
    speculative: str
    value: float
    source: str
    section: str


def published() -> tuple[dict[str, Plain], dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """The plain runs, keyed by the speculative row they go with, vLLM's figures under load, and
    gains measured at a batch of several users (``batch``, and an engine's MTP gains, ``mtp``)."""
    document = tomllib.loads(PUBLISHED.read_text(encoding="utf-8"))
    plain = {
        speculative: Plain(key, speculative, float(entry["value"]), entry["source"], entry["section"])
        for key, entry in document["plain"].items()
        for speculative in entry["speculative"]
    }
    return plain, document["load"], {**document["batch"], **document["mtp"]}


@dataclass(frozen=True)
class BatchGain:
    """One batch of a published gain by batch size, beside the package's speedups at that batch."""

    batch: int
    measured: float
    ceiling: float
    expected: float
    #: The α each cost model was given (the one that reproduces the gain at the smallest batch).
    alpha: float
    alpha_expected: float
    #: What bounds the ceiling's verification pass at this batch.
    bound: str


def eagle3_batch_rows(paper: dict[str, Any], specs: Any, head: Any) -> list[BatchGain]:
    """The paper's gains by batch beside the head's speedup at the ceiling and at the expected
    costs, each at the α that gives the paper's gain at its smallest batch (α solved from it)."""
    hardware = Hardware(specs.gpu(paper["gpu"]))
    fitted = replace(hardware, costs=load_calibration().cost_model(paper["gpu"]))
    workload = Workload(specs.model(paper["model"]), PRECISION)
    gains = sorted((int(batch), float(gain)) for batch, gain in paper["gains"].items())
    ceiling = Rounds(hardware, workload, paper["gamma"], draft=head)
    expected = Rounds(fitted, workload, paper["gamma"], draft=head)
    smallest, gain = gains[0]
    alpha = ceiling.at(smallest).alpha_for_speedup(gain)
    alpha_expected = expected.at(smallest).alpha_for_speedup(gain)
    return [
        BatchGain(
            batch,
            measured,
            ceiling.at(batch).speedup(alpha),
            expected.at(batch).speedup(alpha_expected),
            alpha,
            alpha_expected,
            ceiling.at(batch).verification.bound,
        )
        for batch, measured in gains
    ]


def eagle3_batch_table(rows: list[BatchGain], paper: dict[str, Any]) -> str:
    """Users, the measured gain, and the head's speedup at the ceiling and expected."""
    lines = [
        "| Users | Measured gain | Ceiling speedup | Expected speedup |",
        "|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {row.batch:,} | {times(row.measured)} | {times(row.ceiling)} | {times(row.expected)} |" for row in rows
    ]
    return (
        "\n".join(lines)
        + f"\n\nMeasured: {escape.text(paper['setup'])} ([EAGLE-3, {escape.text(paper['section'].split(',')[0])},"
        f" Table 3]({escape.http_url(paper['source'])})). Ceiling and expected: the package, with the EAGLE-3 head"
        f" drafting a chain of {paper['gamma']}, at α = {rows[0].alpha:.2f} (ceiling) and {rows[0].alpha_expected:.2f}"
        " (expected), the rates that give the measured gain at the smallest batch.\n"
    )


def times(value: float) -> str:
    """A speedup as the page prints it: ``2.03×``."""
    return f"{value:.2f}×"


def ms(seconds: float) -> str:
    return fmt.milliseconds(seconds)


def spec_bench_table(rows: list[Acceptance]) -> str:
    """Spec-Bench's methods on one setup: τ, the measured speedup and what a round cost (τ ÷ speedup)."""
    lines = [
        "| Method | Drafts with | τ (tokens per step) | Measured speedup | Round cost (plain steps) |",
        "|---|---|---:|---:|---:|",
    ]
    for row in sorted(rows, key=lambda row: -(row.speedup or 0)):
        lines.append(
            f"| {escape.text(row.method)} | {escape.text(row.drafter)} | {row.tokens_per_step:.2f} |"
            f" {times(row.speedup or 0)} | {row.cost_per_round:.2f} |"
        )
    source = rows[0]
    return (
        "\n".join(lines)
        + f"\n\nSource: [{escape.text(source.section.split(',')[0])}]({escape.http_url(source.source)}).\n"
    )


@dataclass(frozen=True)
class TreeRow:
    """One draft shape priced at the chapter's τ: break-even batches and speedups."""

    shape: TreeShape
    even_free: float | None
    even_head: float | None
    rule: float
    speedup_one: float
    speedup_batch: float


def tree_rows(hardware: Hardware, workload: Workload, head: Any, tau: float, critical: float) -> list[TreeRow]:
    """Each of TREE_SHAPES at the same τ: the break-even batch with a free draft and with the
    head drafting, the rule τ / N · B*, and the head's speedup at one user and at TREE_BATCH."""
    rows = []
    for depth, topk, verified in TREE_SHAPES:
        shape = TreeShape(depth, topk, verified)
        free, headed = TreeRounds(hardware, workload, shape), TreeRounds(hardware, workload, shape, draft=head)
        rows.append(
            TreeRow(
                shape,
                free.break_even(tau),
                headed.break_even(tau),
                round(tau, 3) / verified * critical,
                headed.at(1).speedup(tau),
                headed.at(TREE_BATCH).speedup(tau),
            )
        )
    return rows


def tree_table(rows: list[TreeRow], tau: float, head_name: str) -> str:
    """Draft shapes against the tokens they make the target verify, at one τ."""
    lines = [
        "| Draft | Depth | Top-k | Tokens verified per user | Break-even, free draft | Rule τ ÷ N × B\\* |"
        f" Break-even, head | Speedup, 1 user | Speedup, {TREE_BATCH} users |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        shape = row.shape
        kind = f"chain of {shape.depth}" if shape.is_chain else "tree"
        lines.append(
            f"| {kind} | {shape.depth} | {shape.topk} | {shape.verified} | {fmt.users(row.even_free)} |"
            f" {fmt.users(row.rule)} | {fmt.users(row.even_head)} | {times(row.speedup_one)} |"
            f" {times(row.speedup_batch)} |"
        )
    return (
        "\n".join(lines)
        + f"\n\nEvery shape at τ = {tau:.2f} tokens per round. Break-even with a free draft and with the"
        f" {escape.text(head_name)} drafting (its first step at the users' batch, each later one over top-k"
        " branches per user); speedups with the head. The package (`roofline.spectree`).\n"
    )


def sampling_table(temperatures: tuple[float, ...], agree: list[float], disagree: list[float]) -> str:
    """α at each temperature for the two positions of the worked example."""
    head = " | ".join(f"T = {t:g}" for t in temperatures)
    return (
        f"| Position | {head} |\n|---|" + "---:|" * len(temperatures) + "\n"
        f"| top tokens agree | {' | '.join(f'{a:.3f}' for a in agree)} |\n"
        f"| top tokens differ | {' | '.join(f'{a:.3f}' for a in disagree)} |\n"
        "\nα = Σ min(p, q) = 1 − TV(p, q) for softmax(logits ÷ T) of the chapter's two five-token examples;"
        " T = 0 is greedy decoding. The package (`roofline.specsampling`).\n"
    )


def measured_table(comparisons: list[Comparison], plain: dict[str, Plain], ctx: Context) -> str:
    """Each speculative run beside the plain run of the same setup and the plain ceiling."""
    lines = [
        "| Run | Ceiling without speculation | Without speculation | With speculation | Measured speedup |",
        "|---|---:|---:|---:|---:|",
    ]
    for comparison in comparisons:
        m = comparison.measurement
        base = plain.get(m.id)
        without = "—" if base is None else f"{fmt.rate(base.value)} ({percent(base.value / comparison.ceiling)})"
        speedup = "—" if base is None else times(m.value / base.value)
        what = (
            f"{escape.text(m.software)}, {escape.text(ctx.specs.model(m.model).name)},"
            f" {escape.text(ctx.specs.gpu(m.gpu).name)} ([source]({escape.http_url(m.source)}))"
        )
        lines.append(
            f"| {what} | {fmt.rate(comparison.ceiling)} | {without} |"
            f" **{fmt.rate(m.value)}** ({percent(comparison.ratio)}) | {speedup} |"
        )
    return "\n".join(lines) + "\n"


def build(ctx: Context) -> PageContent:
    content = PageContent()
    put = content.put
    specs = ctx.specs
    gpu, target, draft = specs.gpu(GPU), specs.model(TARGET), specs.model(DRAFT)
    hardware, workload = Hardware(gpu), Workload(target, PRECISION)
    plain, load, batch_gains = published()
    comparisons = [c for c in compare_all(load_measurements(specs=specs), specs) if c.measurement.speculative]
    by_id = {c.measurement.id: c for c in comparisons}

    def round_(gamma: int = GAMMA, batch: float = 1, context: int = 0, **drafter: Any):
        return speculation_round(hardware, Workload(target, PRECISION, context=context), gamma, batch, **drafter)

    put("gpu_name", gpu.name)
    put("target_name", target.name)
    put("draft_name", draft.name)

    # The opening: a published run above the ceiling.
    eagle3 = by_id["sglang-eagle3-llama-3.1-8b-h100"]
    step = decode_step(hardware, Workload(target, PRECISION))
    put("ceiling_tps", fmt.rate(1 / step.seconds))
    put("sglang_eagle3_tps", fmt.rate(eagle3.measurement.value))
    put("sglang_eagle3_over", f"{eagle3.ratio:.2f}")

    # Decode wastes math; verification is a small prefill.
    put("weights_gb", fmt.gigabytes(step.bytes_moved))
    put("step_gflops", f"{step.flops / 1e9:,.0f} GFLOP")
    put("step_memory_ms", ms(step.memory_s))
    put("step_compute_ms", ms(step.compute_s))
    put("idle_share", percent(1 - step.compute_s / step.memory_s, 1))
    put("gamma", str(GAMMA))
    put("gamma_plus_one", str(GAMMA + 1))
    free = round_()
    put("step_ms", ms(free.baseline.seconds))
    put("verify_ms", ms(free.verification.seconds))
    put("verify_extra", fmt.microseconds(free.verification.seconds - free.baseline.seconds))
    put("verify_compute_ms", ms(free.verification.compute_s))

    # Drafters.
    drafted = round_(draft=draft)
    put("draft_weights_gb", fmt.gigabytes(decode_pass(hardware, Workload(draft, PRECISION), 1).bytes_moved))
    put("draft_step_ms", ms(drafted.draft_step_s))
    put("draft_cost", f"{drafted.draft_cost:.2f}")
    # The one-user equation prints its inputs to three digits, so that its printed result follows from them.
    put("draft_cost_3", f"{drafted.draft_cost:.3f}")
    # The EAGLE-3 head as a draft entry: its own weights, its step, what a round's drafting costs.
    head = specs.draft(HEAD)
    headed = round_(draft=head)
    put("head_name", head.name)
    put("head_id", head.id)
    put("head_vocab", f"{head.output_vocab_size:,}")
    put("head_params", f"{arch.total_parameters(head) / 1e6:,.0f} million")
    put("head_weights_gb", fmt.gigabytes(arch.weight_bytes(head, PRECISION)))
    put("head_step_ms", ms(headed.draft_step_s))
    put("head_cost", f"{headed.draft_cost:.3f}")
    put("head_drafting_ms", ms(GAMMA * headed.draft_step_s))
    put("draft_drafting_ms", ms(GAMMA * drafted.draft_step_s))
    # DeepSeek-V3's MTP module as a drafter: the report's acceptance range at γ = 1, and what a round cost.
    acceptance = {row.id: row for row in load_acceptance(specs=specs)}
    mtp_low, mtp_high = (acceptance[key] for key in MTP_ROWS)
    put("mtp_alpha_low", percent(mtp_low.alpha))
    put("mtp_alpha_high", percent(mtp_high.alpha))
    put("mtp_speedup", f"{mtp_low.speedup:g}×")
    put("mtp_tau_low", f"{mtp_low.tokens_per_step:.2f}")
    put("mtp_tau_high", f"{mtp_high.tokens_per_step:.2f}")
    put("mtp_cost_low", f"{mtp_low.cost_per_round:.2f}")
    put("mtp_cost_high", f"{mtp_high.cost_per_round:.2f}")
    sglang_mtp = batch_gains["sglang-deepseek-v3-h200"]
    mtp_gains = sorted((int(batch), float(gain)) for batch, gain in sglang_mtp["gains"].items())
    put("mtp_sglang_first", f"{mtp_gains[0][1]:g}×")
    put("mtp_sglang_first_batch", f"{mtp_gains[0][0]:,}")
    put("mtp_sglang_last", f"{mtp_gains[-1][1]:g}×")
    put("mtp_sglang_last_batch", f"{mtp_gains[-1][0]:,}")
    put("head_drafting_ratio", f"{drafted.draft_step_s / headed.draft_step_s:.1f}")
    put("head_speedup", times(headed.speedup(ALPHA)))

    # Expected tokens per step.
    tau = tokens_per_step(ALPHA, GAMMA)
    put("alpha", f"{ALPHA:g}")
    put("tau", f"{tau:.2f}")
    put("tau_3", f"{tau:.3f}")
    put("tau_terms", " + ".join(f"{ALPHA**k:.3g}" for k in range(1, GAMMA + 1)))
    put("tau_limit", f"{1 / (1 - ALPHA):.0f}")
    e3 = {k: acceptance[f"{VLLM_CHAINS['EAGLE-3']}{k}"] for k in range(2, 8)}
    for k in (4, 7):
        put(f"e3_k{k}_tau", f"{e3[k].tokens_per_step:.2f}")
        # Three digits: τ is sensitive to α (at γ = 4, 0.01 in α moves τ by 0.04).
        put(f"e3_k{k}_alpha", f"{e3[k].alpha:.3f}")

    # Acceptance and sampling: the worked example.
    agree = [acceptance_at_temperature(SAMPLE_TARGET, SAMPLE_DRAFT, t) for t in SAMPLE_TEMPERATURES]
    disagree = [
        acceptance_at_temperature(SAMPLE_DISAGREE_TARGET, SAMPLE_DISAGREE_DRAFT, t) for t in SAMPLE_TEMPERATURES
    ]
    p_one, q_one = softmax(SAMPLE_TARGET, 1.0), softmax(SAMPLE_DRAFT, 1.0)
    put("sample_p", ", ".join(f"{v:.3f}" for v in p_one))
    put("sample_q", ", ".join(f"{v:.3f}" for v in q_one))
    put("sample_min", " + ".join(f"{min(a, b):.3f}" for a, b in zip(p_one, q_one, strict=True)))
    put("sample_alpha_one", f"{agree[SAMPLE_TEMPERATURES.index(1.0)]:.3f}")
    put("sample_tv_one", f"{total_variation(p_one, q_one):.3f}")
    put("sample_output", ", ".join(f"{v:.3f}" for v in output_distribution(p_one, q_one)))
    put("sample_alpha_greedy", f"{agree[0]:.0f}")
    put("sample_alpha_half", f"{agree[1]:.3f}")
    put("sample_disagree_greedy", f"{disagree[0]:.0f}")
    put("sample_disagree_one", f"{disagree[-1]:.3f}")
    put("sample_hot", f"{SAMPLE_HOT:g}")
    put("sample_alpha_hot", f"{acceptance_at_temperature(SAMPLE_TARGET, SAMPLE_DRAFT, SAMPLE_HOT):.3f}")
    put("sample_tau_greedy", f"{tokens_per_step(min(agree[0], 1.0), GAMMA):.2f}")
    put("sample_tau_one", f"{tokens_per_step(agree[-1], GAMMA):.2f}")
    content.table("spec-sampling", sampling_table(SAMPLE_TEMPERATURES, agree, disagree))

    # Speedup = τ ÷ cost per round.
    put("speedup_draft", times(drafted.speedup(ALPHA)))
    put("speedup_free", times(free.speedup(ALPHA)))
    heat = [
        {"alpha": alpha, "gamma": gamma, "speedup": sig(round_(gamma, draft=draft).speedup(alpha), 3)}
        for alpha in HEAT_ALPHAS
        for gamma in HEAT_GAMMAS
    ]
    best_cell = max(heat, key=lambda cell: cell["speedup"])
    put("heat_best", times(best_cell["speedup"]))
    put("heat_best_alpha", f"{best_cell['alpha']:g}")
    put("heat_best_gamma", str(best_cell["gamma"]))
    content.figure(
        "spec-heatmap",
        charts.speedup_heatmap(
            heat,
            f"Speedup at one user, {target.name} with {draft.name} drafting",
            [
                "Ceiling speedup τ ÷ (verification + γ draft steps) for each α and γ;",
                "orange is a gain, blue a loss, 1.0 none.",
            ],
        ),
        f"The package's batch-1 speedup on one {escape.text(gpu.name)}, with {escape.text(draft.name)}'s own decode"
        f" step as the draft's cost ({drafted.draft_cost:.2f} of a target step). Longer drafts pay only when α is"
        " high; at low α a short draft is best.",
    )

    # Why measured speedups sit below τ: Spec-Bench.
    bench = [row for key, row in acceptance.items() if key.startswith(SPEC_BENCH_PREFIX) and row.speedup]
    costs = sorted(row.cost_per_round for row in bench)
    sb_eagle3 = acceptance[f"{SPEC_BENCH_PREFIX}eagle3"]
    sb_pld = acceptance[f"{SPEC_BENCH_PREFIX}pld"]
    put("sb_model", sb_eagle3.target)
    put("sb_hardware", sb_eagle3.hardware.split(",")[0])
    put("sb_eagle3_tau", f"{sb_eagle3.tokens_per_step:.2f}")
    put("sb_eagle3_speedup", times(sb_eagle3.speedup))
    put("sb_eagle3_cost", f"{sb_eagle3.cost_per_round:.2f}")
    put("sb_pld_tau", f"{sb_pld.tokens_per_step:.2f}")
    put("sb_pld_speedup", times(sb_pld.speedup))
    put("sb_pld_cost", f"{sb_pld.cost_per_round:.2f}")
    put("sb_cost_low", f"{costs[0]:.2f}")
    put("sb_cost_high", f"{costs[-1]:.2f}")
    put("sb_methods", str(len(bench)))
    content.table("spec-bench-costs", spec_bench_table(bench))
    content.figure(
        "spec-round-costs",
        charts.round_costs(
            [
                {
                    "method": row.method,
                    "drafter": row.drafter,
                    "tau": row.tokens_per_step,
                    "speedup": row.speedup,
                    "cost": sig(row.cost_per_round, 3),
                    "label": LABEL_PLACES.get(row.id.removeprefix(SPEC_BENCH_PREFIX), "above-right"),
                }
                for row in bench
            ],
            f"Accepted tokens against measured speedup, Spec-Bench, {sb_eagle3.target}",
            [
                "The dashed line is a round that costs one plain step;",
                "how far below it a point sits is the round's cost.",
            ],
        ),
        f"Each point is one method of Spec-Bench's leaderboard on {escape.text(sb_eagle3.hardware.split(',')[0])} with"
        f" {escape.text(sb_eagle3.target)}: its mean tokens per verification step against the speedup it measured."
        " A point on the dashed line would have a free draft and a verification as cheap as a plain step.",
    )

    # Beating the ceiling.
    plain_e3 = plain[eagle3.measurement.id]
    eagle2 = by_id["sglang-eagle2-llama-3.1-8b-h100"]
    put("sglang_plain_tps", fmt.rate(plain_e3.value))
    put("sglang_plain_share", percent(plain_e3.value / eagle3.ceiling))
    put("sglang_eagle2_tps", fmt.rate(eagle2.measurement.value))
    put("sglang_min_tau", f"{eagle3.ratio:.2f}")
    put("spec_ceiling_tps", fmt.rate(drafted.tokens_per_s_per_user(ALPHA)))
    put("free_ceiling_tps", fmt.rate(free.tokens_per_s_per_user(ALPHA)))
    put("speculative_rows", str(len(comparisons)))
    # The SGLang run with the head drafting: the α at which the package's ceiling reaches it.
    head_alpha = headed.alpha_for_speedup(eagle3.measurement.value * headed.baseline.seconds)
    put("head_alpha_sglang", f"{head_alpha:.3f}")
    put("head_tau_sglang", f"{tokens_per_step(head_alpha, GAMMA):.2f}")

    # Speedup against the batch.
    critical = crossover_batch(hardware, Workload(target, PRECISION))
    put("critical_batch", fmt.users(critical))
    even_free = break_even_batch(hardware, workload, ALPHA, GAMMA)
    even_draft = break_even_batch(hardware, workload, ALPHA, GAMMA, draft=draft)
    put("break_even_free", fmt.users(even_free))
    # The rule of thumb is evaluated on the figures the page prints (τ to three digits, B* whole users).
    critical_shown = float(fmt.users(critical).replace(",", ""))
    put("break_even_rule", fmt.users(round(tau, 3) / (GAMMA + 1) * critical_shown))
    put("break_even_draft", fmt.users(even_draft))
    put("batch_high", f"{BATCH_HIGH:,}")
    put("speedup_batch_high", times(round_(batch=BATCH_HIGH, draft=draft).speedup(ALPHA)))
    # EAGLE-3's paper, by batch: its gains beside the head's, each cost model at the α that
    # gives the paper's gain at its smallest batch.
    paper = batch_gains["eagle3-sglang"]
    rows = eagle3_batch_rows(paper, specs, head)
    first, last = rows[0], rows[-1]
    put("e3b_gamma", str(paper["gamma"]))
    put("e3b_first", f"{first.batch:,}")
    put("e3b_first_gain", times(first.measured))
    put("e3b_last", f"{last.batch:,}")
    put("e3b_last_gain", times(last.measured))
    put("e3b_alpha", f"{first.alpha:.2f}")
    put("e3b_ceiling_last", times(last.ceiling))
    put("e3b_expected_last", times(last.expected))
    put("e3b_last_tokens", f"{last.batch * (paper['gamma'] + 1):,}")
    put("e3b_last_bound", last.bound)
    put("e3b_fade", f"{next(row.batch for row in rows if row.measured < FADED * row.ceiling):,}")
    # Where the expected gain, fitted without speculation, first drops below the measured one (if it does).
    under = next((row.batch for row in rows if row.expected < row.measured), None)
    put(
        "e3b_expected_against_measured",
        "it stays above the measured gain at every batch"
        if under is None
        else f"from {under:,} users it is below the measured gain, so it is no bound either",
    )
    content.table("eagle3-batches", eagle3_batch_table(rows, paper))
    batches = [2**power for power in range(11)]
    content.figure(
        "spec-batch",
        charts.speedup_vs_batch(
            [
                {"batch": batch, "gamma": gamma, "speedup": sig(round_(gamma, batch, draft=draft).speedup(ALPHA), 3)}
                for gamma in BATCH_GAMMAS
                for batch in batches
            ],
            "Speculation fades, then reverses, as the batch grows",
            [
                f"Ceiling speedup at α = {ALPHA:g}, {draft.name} drafting, empty caches;",
                "below the dotted line it is a slowdown.",
            ],
        ),
        f"{escape.text(target.name)} on one {escape.text(gpu.name)} with {escape.text(draft.name)} drafting,"
        f" α = {ALPHA:g}. Each line is one γ; longer drafts gain most at one user and lose first as the batch grows.",
    )
    # The most users whose caches fit at the long context: the largest batch a server could run there.
    long_workload = Workload(target, PRECISION, context=LONG_CONTEXT)
    long_batch = memory_use(hardware, long_workload).max_batch
    long_round = round_(batch=long_batch, context=LONG_CONTEXT, draft=draft)
    put("long_context", f"{LONG_CONTEXT:,}")
    put("long_context_batch", f"{long_batch:,}")
    put("long_context_speedup", times(long_round.speedup(ALPHA)))
    put("long_context_bound", long_round.verification.bound)
    put("long_context_even", fmt.users(break_even_batch(hardware, long_workload, ALPHA, GAMMA, draft=draft)))
    put("short_context_speedup", times(round_(batch=long_batch, draft=draft).speedup(ALPHA)))
    # One user at the same context: the draft's cache reads are a smaller share of its step there.
    long_one = round_(batch=1, context=LONG_CONTEXT, draft=draft)
    put("long_context_one_user", times(long_one.speedup(ALPHA)))
    put("long_draft_cost_one", f"{long_one.draft_cost:.2f}")
    put("long_draft_cost_batch", f"{long_round.draft_cost:.2f}")
    put("draft_kv_share", f"{arch.kv_cache_bytes_per_token(draft) / arch.kv_cache_bytes_per_token(target):.2f}")
    put(
        "draft_weight_share",
        f"{arch.weight_bytes(draft, PRECISION) / arch.weight_bytes(target, PRECISION):.2f}",
    )

    # Trees of candidates: the same τ with more tokens to verify.
    trees = tree_rows(hardware, workload, head, tau, critical_shown)
    chain, widest = trees[0], trees[-1]
    put("tree_batch", str(TREE_BATCH))
    put("tree_chain_tokens", str(chain.shape.verified))
    put("tree_chain_even", fmt.users(chain.even_free))
    put("tree_wide_tokens", str(widest.shape.verified))
    put("tree_wide_depth", str(widest.shape.depth))
    put("tree_wide_topk", str(widest.shape.topk))
    put("tree_wide_even", fmt.users(widest.even_free))
    put("tree_wide_even_head", fmt.users(widest.even_head))
    put("tree_wide_batch_speedup", times(widest.speedup_batch))
    put("tree_chain_batch_speedup", times(chain.speedup_batch))
    # The τ the widest tree would need to break even where the chain does (τ_chain · N_tree / N_chain),
    # beside the most any round of its depth can yield.
    put("tree_needed_tau", f"{tau * widest.shape.verified / chain.shape.verified:.0f}")
    put("tree_wide_most", str(widest.shape.most_tokens))
    content.table("spec-trees", tree_table(trees, tau, head.name))

    # Choosing γ.
    best1, best1_speedup = best_gamma(hardware, workload, ALPHA, 1, draft=draft)
    best64, best64_speedup = best_gamma(hardware, workload, ALPHA, BEST_BATCH, draft=draft)
    put("best_gamma_b1", str(best1))
    put("best_speedup_b1", times(best1_speedup))
    put("best_batch", str(BEST_BATCH))
    put("best_gamma_b64", str(best64))
    put("best_speedup_b64", times(best64_speedup))
    gamma_rows: list[dict[str, Any]] = []
    for head, prefix in VLLM_CHAINS.items():
        rows = [acceptance[f"{prefix}{k}"] for k in range(2, 8)]
        line = round_cost_line(rows)
        key = head.lower().replace("-", "")
        put(f"{key}_slope", f"{line.per_draft_token:.2f}")
        put(f"{key}_fixed", f"{line.fixed:.2f}")
        measured_best = max(rows, key=lambda row: row.speedup or 0)
        fitted = {row.gamma: row.tokens_per_step / (line.fixed + line.per_draft_token * row.gamma) for row in rows}
        put(f"{key}_best_measured", str(measured_best.gamma))
        put(f"{key}_best_fitted", str(max(fitted, key=fitted.get)))
        # Out of sample: each γ predicted by a line fitted to the other five.
        held = held_out_speedups(rows)
        put(f"{key}_best_held_out", str(max(held, key=held.get)))
        put(f"{key}_held_out_miss", percent(max(abs(held[row.gamma] / row.speedup - 1) for row in rows), 1))
        for row in rows:
            gamma_rows.append({"gamma": row.gamma, "speedup": sig(row.speedup, 3), "head": head, "kind": "measured"})
            gamma_rows.append({"gamma": row.gamma, "speedup": sig(fitted[row.gamma], 3), "head": head, "kind": "model"})
    content.figure(
        "spec-gamma",
        charts.gamma_choice(
            gamma_rows,
            f"Choosing γ: vLLM's EAGLE heads on {target.name}, one user",
            [
                "Points: measured speedups; lines: each γ's own τ over a round cost",
                "that grows in a straight line with γ.",
            ],
        ),
        "vLLM issue 20780: speedup over plain decoding at each draft length γ, one user. The lines divide each γ's"
        " measured τ by the fitted round cost (fixed part plus a slope per draft token), so where they peak is the γ"
        " the costs favour.",
    )

    # Under load: the serving simulator with and without speculation.
    runs = {
        setup: [
            (
                rate,
                simulate_speculative(
                    hardware,
                    workload,
                    ServingConfig(
                        rate=rate,
                        requests=LOAD_REQUESTS,
                        prompt=LOAD_PROMPT,
                        output=LOAD_OUTPUT,
                        max_batch=LOAD_MAX_BATCH,
                    ),
                    drafting,
                ).result,
            )
            for rate in LOAD_RATES
        ]
        for setup, drafting in [
            ("no speculation", None),
            *((f"α = {alpha:g}, γ = {GAMMA}", Drafting(GAMMA, alpha, draft=draft)) for alpha in LOAD_ALPHAS),
        ]
    }
    plain_runs, low_runs, high_runs = runs.values()
    put("sim_requests", f"{LOAD_REQUESTS:,}")
    put("sim_prompt", f"{LOAD_PROMPT.low:,} to {LOAD_PROMPT.high:,}")
    put("sim_output", f"{LOAD_OUTPUT.low:,} to {LOAD_OUTPUT.high:,}")
    put("sim_max_batch", f"{LOAD_MAX_BATCH:,}")
    put("sim_alpha_low", f"{LOAD_ALPHAS[0]:g}")
    put("sim_rate_low", f"{LOAD_RATES[0]:g}")
    put("sim_rate_high", f"{LOAD_RATES[-1]:g}")
    put("sim_tpot_plain_low", ms(plain_runs[0][1].tpot_s[50]))
    put("sim_tpot_spec_low", ms(high_runs[0][1].tpot_s[50]))
    put("sim_tpot_weak_low", ms(low_runs[0][1].tpot_s[50]))
    put("sim_tps_plain_high", fmt.rate(plain_runs[-1][1].throughput_tokens_per_s))
    put("sim_tps_weak_high", fmt.rate(low_runs[-1][1].throughput_tokens_per_s))
    put("sim_tps_spec_high", fmt.rate(high_runs[-1][1].throughput_tokens_per_s))
    put("sim_tpot_plain_high", ms(plain_runs[-1][1].tpot_s[50]))
    put("sim_tpot_weak_high", ms(low_runs[-1][1].tpot_s[50]))
    put("sim_batch_high", f"{plain_runs[-1][1].mean_batch:.0f}")
    content.figure(
        "spec-load",
        charts.under_load(
            [
                {
                    "rate": rate,
                    "setup": setup,
                    "tpot_ms": sig((result.tpot_s[50] or 0.0) * 1e3),
                    "goodput": sig(result.goodput_requests_per_s),
                    "tokens_per_s": sig(result.throughput_tokens_per_s),
                }
                for setup, points in runs.items()
                for rate, result in points
            ],
            f"Under load: {target.name} on one {gpu.name}, with and without speculation",
            ["Median time per output token and goodput as the request rate rises;", f"{draft.name} drafting."],
        ),
        f"{LOAD_REQUESTS} requests per rate, prompts of {LOAD_PROMPT.low:,} to {LOAD_PROMPT.high:,} tokens and"
        f" outputs of {LOAD_OUTPUT.low:,} to {LOAD_OUTPUT.high:,}, at most {LOAD_MAX_BATCH} running, simulated by"
        " the roofline package with continuous batching; each decode iteration verifies γ + 1 tokens per request"
        " and draws how many it accepts. At low rates speculation cuts TPOT; at high rates a weak drafter's"
        " rejected guesses take math from other users.",
    )

    # Under load: vLLM's measurements.
    for key, entry in load.items():
        name = key.removeprefix("vllm-").replace("-", "_")
        put(f"load_{name}", f"{entry['times']:g}×")

    # Measured against the model.
    content.table("spec-measured", measured_table(comparisons, plain, ctx))
    gptfast = by_id["gptfast-speculative-llama-2-70b-int4-a100"]
    put("gptfast_ratio", percent(gptfast.ratio))
    put("gptfast_plain_share", percent(plain[gptfast.measurement.id].value / gptfast.ceiling))
    vllm = by_id["vllm-eagle3-k2-llama-3.1-8b-h100"]
    put("vllm_k2_ratio", percent(vllm.ratio))
    # Two sources, kept apart: PR 16937's tokens/s (no acceptance length given there) and issue
    # 20780's own τ and speedup, from which alone its round cost follows.
    k2 = acceptance[VLLM_CHAINS["EAGLE-3"] + "2"]
    put("vllm_k2_plain_tps", fmt.rate(plain[vllm.measurement.id].value))
    put("vllm_k2_tps", fmt.rate(vllm.measurement.value))
    put("vllm_k2_tau", f"{k2.tokens_per_step:.2f}")
    put("vllm_k2_speedup", times(k2.speedup))
    put("vllm_k2_cost", f"{k2.cost_per_round:.2f}")

    # Self-check.
    put("q1_alpha", f"{Q1_ALPHA:g}")
    q1 = [tokens_per_step(Q1_ALPHA, gamma) for gamma in Q1_GAMMAS]
    put("q1_gamma_a", str(Q1_GAMMAS[0]))
    put("q1_gamma_b", str(Q1_GAMMAS[1]))
    put("q1_tau_a", f"{q1[0]:.2f}")
    put("q1_tau_b", f"{q1[1]:.2f}")
    put("q1_gain", f"{q1[1] - q1[0]:.2f}")
    put("q1_limit", f"{1 / (1 - Q1_ALPHA):.2f}")
    given = round_(draft_cost=Q2_COST)
    put("q2_cost", f"{Q2_COST:g}")
    put("q2_round", f"{given.seconds / given.baseline.seconds:.2f}")
    put("q2_speedup", times(given.speedup(ALPHA)))
    sb7_eagle2 = acceptance["spec-bench-a100-vicuna-7b-eagle2"]
    put("sb7_model", sb7_eagle2.target)
    put("sb7_eagle2_tau", f"{sb7_eagle2.tokens_per_step:.2f}")
    put("sb7_eagle2_speedup", times(sb7_eagle2.speedup))
    put("sb7_eagle2_cost", f"{sb7_eagle2.cost_per_round:.2f}")
    put("sb7_eagle2_lost", percent(1 - 1 / sb7_eagle2.cost_per_round))
    put("q5_tau7", f"{tokens_per_step(alpha_for_tokens_per_step(e3[4].tokens_per_step, 4), 7):.2f}")
    return content
