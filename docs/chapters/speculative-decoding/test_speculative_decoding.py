"""Chapter 5, "Speculative Decoding": its quoted numbers, the claims its prose makes about them,
its published figures, its calculator and its Run cell.

One package, one answer: every number the page quotes is recomputed here with
``roofline.speculative`` (or the measured and acceptance tables) and compared with what
the page module wrote, and each sentence that compares two numbers (a slowdown, a
break-even that never comes, a drafter that breaks even sooner) is checked on the same
numbers, so a change to the package that turns a sentence false fails here.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from roofline import Hardware, Workload, builtin_specs, crossover_batch, decode_step
from roofline import formatting as fmt
from roofline.acceptance import load_acceptance
from roofline.forms import InputError
from roofline.measured import compare_all, load_measurements
from roofline.speculative import break_even_batch, speculation_round, tokens_per_step
from sitegen.pages import find

FOLDER = find(Path(__file__).resolve().parents[2], "speculative-decoding")
ROOT = FOLDER.docs.parent
PAGE_SOURCE = FOLDER.folder / "index.md"
PROGRAM = FOLDER.folder / "programs" / "speculate_batch.py"
chapter = FOLDER.module()
calculator = FOLDER.calculator("speculate")


@pytest.fixture(scope="module")
def values(page_contents) -> dict[str, str]:
    return page_contents[FOLDER.page].values  # chapter.build(load_context(ROOT)), once per session (conftest)


@pytest.fixture(scope="module")
def setup():
    specs = builtin_specs()
    return Hardware(specs.gpu(chapter.GPU)), specs.model(chapter.TARGET), specs.model(chapter.DRAFT)


def number(text: str) -> float:
    return float(text.replace(",", "").removesuffix("×").removesuffix("%"))


# ---- The page's numbers are the package's ---------------------------------------------------------


def test_tau_and_the_one_user_speedups_are_the_packages(values, setup) -> None:
    hardware, target, draft = setup
    workload = Workload(target, chapter.PRECISION)
    tau = tokens_per_step(chapter.ALPHA, chapter.GAMMA)
    assert values["tau"] == f"{tau:.2f}"
    drafted = speculation_round(hardware, workload, chapter.GAMMA, 1, draft=draft)
    assert values["speedup_draft"] == f"{drafted.speedup(chapter.ALPHA):.2f}×"
    assert values["draft_cost"] == f"{drafted.draft_cost:.2f}"
    assert values["ceiling_tps"] == fmt.rate(1 / decode_step(hardware, workload).seconds)


def test_with_a_free_draft_at_one_user_the_speedup_is_tau(values, setup) -> None:
    """The issue's goal: at batch 1 with a free draft the speedup equals τ (the verification of
    γ+1 tokens costs what a plain step does while it is memory-bound)."""
    hardware, target, _ = setup
    for alpha in (0.3, 0.6, chapter.ALPHA, 0.95):
        for gamma in (1, 4, 8):
            free = speculation_round(hardware, Workload(target, chapter.PRECISION), gamma, 1)
            assert free.speedup(alpha) == pytest.approx(tokens_per_step(alpha, gamma), rel=1e-4)
    assert values["speedup_free"] == f"{number(values['tau']):.2f}×"


def test_break_even_batches_are_the_packages_and_the_draft_breaks_even_sooner(values, setup) -> None:
    hardware, target, draft = setup
    workload = Workload(target, chapter.PRECISION)
    free = break_even_batch(hardware, workload, chapter.ALPHA, chapter.GAMMA)
    drafted = break_even_batch(hardware, workload, chapter.ALPHA, chapter.GAMMA, draft=draft)
    assert values["break_even_free"] == fmt.users(free)
    assert values["break_even_draft"] == fmt.users(drafted)
    assert drafted < free  # "With the draft it comes sooner"
    critical = crossover_batch(hardware, workload)
    assert values["critical_batch"] == fmt.users(critical)
    # The rule τ/(γ+1)·B* is quoted as an approximation of the package's own answer: within 10%.
    assert number(values["break_even_rule"]) == pytest.approx(free, rel=0.1)


def test_past_the_break_even_speculation_is_a_slowdown_and_a_long_context_keeps_it_paying(values) -> None:
    assert number(values["speedup_batch_high"]) < 1  # "a slowdown"
    assert number(values["batch_high"].replace(",", "")) > number(values["break_even_draft"])
    assert values["long_context_bound"] == "memory"
    assert values["long_context_even"] == "never"
    assert number(values["long_context_speedup"]) > number(values["short_context_speedup"])
    # Not "as at one user": one user at the same context gains more, because the draft's own cache
    # reads (a larger share of the target's than its weights are) grow with the batch.
    assert number(values["long_context_speedup"]) < number(values["long_context_one_user"]) - 0.1
    assert number(values["long_draft_cost_batch"]) > number(values["long_draft_cost_one"])
    assert number(values["draft_kv_share"]) > number(values["draft_weight_share"])


def test_the_best_gamma_shrinks_with_the_batch(values) -> None:
    assert int(values["best_gamma_b64"]) <= int(values["best_gamma_b1"])
    assert values["best_speedup_b1"] == values["speedup_draft"]  # γ = 4 is the best at one user


def test_verification_is_a_small_prefill_that_fits_in_the_read(values) -> None:
    assert values["verify_ms"] == values["step_ms"]
    assert number(values["idle_share"]) > 99


def test_spec_bench_rounds_cost_more_than_a_step(values) -> None:
    rows = [r for r in load_acceptance() if r.id.startswith(chapter.SPEC_BENCH_PREFIX) and r.speedup]
    costs = sorted(r.cost_per_round for r in rows)
    assert values["sb_cost_low"] == f"{costs[0]:.2f}" and values["sb_cost_high"] == f"{costs[-1]:.2f}"
    assert costs[0] > 1  # no published round was as cheap as a plain step
    assert values["sb_pld_cost"] == values["sb_cost_low"]  # "prompt lookup: its draft is nearly free"


def test_the_opening_run_beats_the_plain_ceiling_and_is_flagged_speculative(values) -> None:
    row = next(c for c in compare_all() if c.measurement.id == "sglang-eagle3-llama-3.1-8b-h100")
    assert row.measurement.speculative and row.ratio > 1
    assert values["sglang_eagle3_over"] == f"{row.ratio:.2f}"
    assert values["ceiling_tps"] == fmt.rate(row.ceiling)


def test_the_eagle3_head_drafts_cheaper_than_the_small_model_and_reaches_the_sglang_run(values, setup) -> None:
    """The head's numbers are the package's; the prose's comparisons hold on them."""
    hardware, target, draft = setup
    specs = builtin_specs()
    head = specs.draft(chapter.HEAD)
    workload = Workload(target, chapter.PRECISION)
    headed = speculation_round(hardware, workload, chapter.GAMMA, 1, draft=head)
    drafted = speculation_round(hardware, workload, chapter.GAMMA, 1, draft=draft)
    assert values["head_params"] == "425 million"  # 424,689,664, counted by hand in tests/test_draft_heads.py
    assert values["head_speedup"] == f"{headed.speedup(chapter.ALPHA):.2f}×"
    assert number(values["head_speedup"]) > number(values["speedup_draft"])
    assert values["head_vocab"] == "32,000"
    assert values["head_cost"] == f"{headed.draft_cost:.3f}"
    assert values["head_step_ms"] == fmt.milliseconds(headed.draft_step_s)
    # "… times less": the head's drafting is cheaper than Llama 3.2 1B's.
    assert number(values["head_drafting_ratio"]) == pytest.approx(drafted.draft_step_s / headed.draft_step_s, abs=0.05)
    assert number(values["head_drafting_ratio"]) > 1
    # SGLang's EAGLE-3 run is reachable with the head: at the quoted α the ceiling is that run's rate.
    sglang = next(c for c in compare_all() if c.measurement.id == "sglang-eagle3-llama-3.1-8b-h100")
    alpha = headed.alpha_for_speedup(sglang.measurement.value * headed.baseline.seconds)
    assert headed.tokens_per_s_per_user(alpha) == pytest.approx(sglang.measurement.value, rel=1e-9)
    assert values["head_alpha_sglang"] == f"{alpha:.3f}" and alpha < chapter.ALPHA
    assert values["head_tau_sglang"] == f"{tokens_per_step(alpha, chapter.GAMMA):.2f}"


def test_eagle3s_gains_by_batch_are_the_papers_beside_the_heads_speedups(values, page_contents) -> None:
    """The paper's table 3 row, read from published.toml, beside the package's speedups: both cost
    models pass through the measured gain at the smallest batch, and the prose's comparisons hold."""
    paper = tomllib.loads(chapter.PUBLISHED.read_text(encoding="utf-8"))["batch"]["eagle3-sglang"]
    assert paper["source"] == "https://arxiv.org/abs/2503.01840" and "Table 3" in paper["section"]
    assert paper["gains"]["2"] == 1.81 and paper["gains"]["64"] == 1.38  # the two figures
    rows = chapter.eagle3_batch_rows(paper, builtin_specs(), builtin_specs().draft(chapter.HEAD))
    first, last = rows[0], rows[-1]
    assert first.ceiling == pytest.approx(first.measured, rel=1e-6)
    assert first.expected == pytest.approx(first.measured, rel=1e-6)
    assert values["e3b_first_gain"] == "1.81×" and values["e3b_last_gain"] == "1.38×"
    assert (
        values["e3b_ceiling_last"] == f"{last.ceiling:.2f}×" and values["e3b_expected_last"] == f"{last.expected:.2f}×"
    )
    # "the ceiling still gives …": it holds its gain above the measured one; "fade to": the expected one falls.
    assert last.ceiling > last.measured and last.ceiling > last.expected
    assert last.expected < first.expected
    under = [row.batch for row in rows if row.expected < row.measured]
    said = values["e3b_expected_against_measured"]
    assert said == (
        f"from {under[0]:,} users it is below the measured gain, so it is no bound either"
        if under
        else "it stays above the measured gain at every batch"
    )
    assert values["e3b_last_bound"] == "memory"
    fade = int(values["e3b_fade"])
    assert all(row.measured >= chapter.FADED * row.ceiling for row in rows if row.batch < fade)
    table = page_contents[FOLDER.page].tables["eagle3-batches"]
    assert table.count("\n| ") == len(rows) and "1.81×" in table and paper["source"] in table


def test_the_calculators_drafter_menu_offers_the_head_for_its_target_only() -> None:
    field = next(f for f in calculator.FORM.fields if f.name == "draft")
    models = next(f for f in calculator.FORM.fields if f.name == "model")
    assert chapter.HEAD in dict(field.choices) and chapter.HEAD not in dict(models.choices)
    answer = calculator.view(**{**calculator.DEFAULTS, "draft": chapter.HEAD})
    assert answer["verdict"].startswith("Speculation pays")
    hardware, workload = Hardware(builtin_specs().gpu("h100-sxm")), Workload(builtin_specs().model("llama-3.1-8b"))
    round_ = speculation_round(hardware, workload, 4, 1, draft=builtin_specs().draft(chapter.HEAD))
    assert answer["draft_share"].startswith(f"{round_.draft_cost:.3f} ceiling")
    other = calculator.view(**{**calculator.DEFAULTS, "draft": chapter.HEAD, "model": "mistral-7b"})
    assert other["verdict"] == "This drafter cannot draft for this model"
    assert "drafts for llama-3.1-8b only" in other["explain"] and "\n" not in other["explain"]


# ---- The published figures the chapter adds ---------------------------------------------------------


def test_every_plain_baseline_belongs_to_a_speculative_row_and_stays_under_its_ceiling() -> None:
    """published.toml's plain runs are measurements without speculation: none may beat its ceiling,
    and each speculative run beats its own plain run."""
    document = tomllib.loads((FOLDER.folder / "published.toml").read_text(encoding="utf-8"))
    rows = {c.measurement.id: c for c in compare_all(load_measurements())}
    for key, entry in document["plain"].items():
        assert entry["source"].startswith("https://"), key
        for speculative in entry["speculative"]:
            comparison = rows[speculative]
            assert comparison.measurement.speculative, speculative
            assert entry["value"] < comparison.ceiling, key
            assert comparison.measurement.value > entry["value"], key
    for key, entry in document["load"].items():
        assert entry["change"] in ("speedup", "slowdown") and entry["times"] > 1, key
        assert entry["source"] == "https://blog.vllm.ai/2024/10/17/spec-decode.html"


def test_every_speculative_row_is_within_the_measured_pages_bounds() -> None:
    speculative = [c for c in compare_all() if c.measurement.speculative]
    assert len(speculative) >= 5
    assert all(c.ratio < 10 for c in speculative)


# ---- The calculator ---------------------------------------------------------------------------------


def test_the_calculator_shows_ceiling_and_expected_side_by_side_and_flags_a_speculative_rate() -> None:
    answer = calculator.view(**calculator.DEFAULTS)
    assert " ceiling · " in answer["speedup"] and answer["speedup"].endswith(" expected")
    assert answer["break_even"].startswith("160 users")
    assert "speculative" in answer["per_user"]  # 2× the plain ceiling at one user
    assert "fitted without speculation" in answer["expected"]
    hardware, workload = Hardware(builtin_specs().gpu("h100-sxm")), Workload(builtin_specs().model("llama-3.1-8b"))
    round_ = speculation_round(hardware, workload, 4, 1, draft=builtin_specs().model("llama-3.2-1b"))
    assert answer["speedup"].startswith(f"{round_.speedup(0.8):.2f}× ceiling")
    assert answer["per_user"].startswith(fmt.rate(round_.tokens_per_s_per_user(0.8)))


def test_at_a_large_batch_the_calculator_says_speculation_slows_decoding() -> None:
    answer = calculator.view(**{**calculator.DEFAULTS, "batch": 1024})
    assert answer["fits"] is False
    assert answer["verdict"].startswith("Speculation slows decoding")
    assert "at or below the plain ceiling" in answer["per_user"]


def test_a_draft_with_another_vocabulary_is_refused_in_one_line() -> None:
    answer = calculator.view(**{**calculator.DEFAULTS, "draft": "mistral-7b"})
    assert answer["verdict"] == "This drafter cannot draft for this model"
    assert "vocabulary" in answer["explain"] and "\n" not in answer["explain"]
    assert answer["tau"] == calculator.NOT_APPLICABLE


@pytest.mark.parametrize(
    ("field", "value"),
    [("alpha", 1.5), ("alpha", -0.1), ("gamma", 0), ("gamma", 65), ("draft_cost", 11), ("batch", 0)],
)
def test_out_of_range_inputs_are_refused_by_the_form(field: str, value: float) -> None:
    with pytest.raises(InputError) as caught:
        calculator.view(**{**calculator.DEFAULTS, field: value})
    assert "\n" not in str(caught.value)


def test_a_given_draft_cost_is_used_when_chosen() -> None:
    free = calculator.view(**{**calculator.DEFAULTS, "draft": calculator.GIVEN_COST, "draft_cost": 0})
    assert free["speedup"].startswith(f"{tokens_per_step(0.8, 4):.2f}× ceiling")
    assert free["draft_share"].startswith("0.000 ceiling")


# ---- The Run cell -----------------------------------------------------------------------------------


def test_the_run_cell_prints_the_packages_speedups_and_break_evens(setup) -> None:
    hardware, target, draft = setup
    output = subprocess.run([sys.executable, str(PROGRAM)], capture_output=True, text=True, check=True).stdout
    workload = Workload(target, context=0)
    lines = {line.split()[0]: line for line in output.splitlines()[2:]}
    for gamma in (1, 2, 4, 8):
        speedup = speculation_round(hardware, workload, gamma, 1, draft=draft).speedup(0.8)
        even = break_even_batch(hardware, workload, 0.8, gamma, draft=draft)
        assert f"{speedup:.2f}×" in lines[str(gamma)]
        assert lines[str(gamma)].endswith(f"{even:,.0f} users")


def test_the_page_quotes_no_number_typed_by_hand_in_its_speedups() -> None:
    """Every "N×" in the prose is a computed value: the source has none outside {{ n.… }}."""
    import re

    text = PAGE_SOURCE.read_text(encoding="utf-8")
    prose = re.sub(r"\{\{[^}]*\}\}", "", text.split("[^sglang]:")[0])
    assert re.findall(r"\d+(?:\.\d+)?×", prose) == []


# ---- Under load: the serving simulator ------------------------------------------------------------


def test_under_load_the_prose_reads_the_simulators_numbers_the_right_way_round(values, setup) -> None:
    """At the low rate speculation cuts median TPOT; at the high rate the weak drafter lowers throughput
    and raises TPOT, while the good one still serves more than plain decoding."""
    from roofline.serving import ServingConfig
    from roofline.specserving import Drafting, simulate_speculative

    hardware, target, draft = setup
    workload = Workload(target, chapter.PRECISION)

    def run(rate: float, alpha: float | None):
        config = ServingConfig(
            rate=rate,
            requests=chapter.LOAD_REQUESTS,
            prompt=chapter.LOAD_PROMPT,
            output=chapter.LOAD_OUTPUT,
            max_batch=chapter.LOAD_MAX_BATCH,
        )
        drafting = None if alpha is None else Drafting(chapter.GAMMA, alpha, draft=draft)
        return simulate_speculative(hardware, workload, config, drafting).result

    high = chapter.LOAD_RATES[-1]
    plain, weak = run(high, None), run(high, chapter.LOAD_ALPHAS[0])
    assert values["sim_tps_plain_high"] == fmt.rate(plain.throughput_tokens_per_s)
    assert values["sim_tps_weak_high"] == fmt.rate(weak.throughput_tokens_per_s)
    assert weak.throughput_tokens_per_s < plain.throughput_tokens_per_s
    assert weak.tpot_s[50] > plain.tpot_s[50]
    assert number(values["sim_tps_spec_high"]) > number(values["sim_tps_plain_high"])
    assert number(values["sim_tpot_spec_low"].removesuffix(" ms")) < number(
        values["sim_tpot_plain_low"].removesuffix(" ms")
    )


# ---- Printed arithmetic reproduces from the printed inputs (audit L5) --------------------------


@pytest.fixture(scope="module")
def page_text(values) -> str:
    """index.md with every ``{{ n.NAME }}`` replaced by the page module's value: the prose a reader sees."""
    import re

    return re.sub(r"\{\{\s*n\.([A-Za-z0-9_-]+)\s*\}\}", lambda m: values[m.group(1)], PAGE_SOURCE.read_text("utf-8"))


def _reproduces(printed: str, computed: float) -> bool:
    """``computed`` rounded to ``printed``'s decimals is ``printed`` (a speedup's × dropped)."""
    text = printed.removesuffix("×").replace(",", "")
    decimals = len(text.split(".")[1]) if "." in text else 0
    return f"{computed:,.{decimals}f}".replace(",", "") == text


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_one_user_speedup_equation_reproduces_from_its_printed_inputs(page_text) -> None:
    import re

    found = re.search(r"([\d.]+) ÷ \(1 \+ (\d+) × ([\d.]+)\) = \*\*([\d.]+×)\*\*", _flat(page_text))
    assert found, "the equation τ ÷ (1 + γ × ĉ) = S is on the page"
    tau, gamma, cost, speedup = found.groups()
    assert _reproduces(speedup, float(tau) / (1 + int(gamma) * float(cost)))


def test_the_tau_sum_and_the_break_even_rule_reproduce(page_text) -> None:
    import re

    flat = _flat(page_text)
    terms = re.search(r"1 \+ ((?:[\d.]+ \+ )+[\d.]+) = \*\*([\d.]+)\*\* tokens per step", flat)
    assert terms and _reproduces(terms.group(2), 1 + sum(float(t) for t in terms.group(1).split(" + ")))
    rule = re.search(r"([\d.]+) ÷ (\d+) × ([\d,]+) ≈ ([\d,]+) users", flat)
    assert rule
    tau, tokens, critical, result = rule.groups()
    assert _reproduces(result, float(tau) / int(tokens) * float(critical.replace(",", "")))


def test_every_alpha_the_page_solves_gives_back_the_tau_it_prints(page_text) -> None:
    """α printed beside a τ reproduces that τ at the printed γ: self-check 5, the acceptance lengths,
    and the α at which the head reaches SGLang's run (three digits where two did not reproduce)."""
    import re

    flat = _flat(page_text)
    q5 = re.search(
        r"Solve 1 \+ α \+ α² \+ α³ \+ α⁴ = ([\d.]+): \*\*α = ([\d.]+)\*\*\. At γ = 7 that α gives τ = \*\*([\d.]+)\*\*",
        flat,
    )
    assert q5
    assert _reproduces(q5.group(1), tokens_per_step(float(q5.group(2)), 4))
    assert _reproduces(q5.group(3), tokens_per_step(float(q5.group(2)), 7))
    lengths = re.search(
        r"accepted ([\d.]+) tokens per step at γ = 4, which is α = ([\d.]+), and ([\d.]+) at γ = 7, α = ([\d.]+)\.",
        flat,
    )
    assert lengths
    assert _reproduces(lengths.group(1), tokens_per_step(float(lengths.group(2)), 4))
    assert _reproduces(lengths.group(3), tokens_per_step(float(lengths.group(4)), 7))
    head = re.search(r"at α = ([\d.]+), τ = ([\d.]+) tokens per step: a chain of (\d+)", flat)
    assert head and _reproduces(head.group(2), tokens_per_step(float(head.group(1)), int(head.group(3))))


def test_round_costs_quoted_as_tau_over_speedup_reproduce(page_text, values) -> None:
    import re

    flat = _flat(page_text)
    # DeepSeek-V3's MTP: τ = 1 + α at γ = 1, and τ ÷ 1.8.
    mtp = re.search(
        r"accepted (\d+)% to (\d+)% of the time, and decoding ([\d.]+)× faster.*?"
        r"τ = 1 \+ α = ([\d.]+) to ([\d.]+) tokens a round, so by τ ÷ speedup a round cost ([\d.]+) to ([\d.]+) plain",
        flat,
    )
    assert mtp
    low, high, speedup, tau_low, tau_high, cost_low, cost_high = mtp.groups()
    assert _reproduces(tau_low, 1 + int(low) / 100) and _reproduces(tau_high, 1 + int(high) / 100)
    assert _reproduces(cost_low, float(tau_low) / float(speedup))
    assert _reproduces(cost_high, float(tau_high) / float(speedup))
    # vLLM issue 20780's γ = 2 run: its own τ over its own speedup.
    k2 = re.search(
        r"accepted ([\d.]+) tokens per step at γ = 2 and ran ([\d.]+)× faster:"
        r" by that run's own two figures a round cost ([\d.]+)",
        flat,
    )
    assert k2 and _reproduces(k2.group(3), float(k2.group(1)) / float(k2.group(2)))
    # Spec-Bench: "accepts τ tokens per step yet runs S× faster: each round cost C", and self-check 3.
    bench = re.search(
        r"EAGLE-3 accepts ([\d.]+) tokens per step yet runs ([\d.]+)× faster: each round cost ([\d.]+) plain steps\."
        r" Prompt lookup accepts only ([\d.]+) and runs ([\d.]+)× faster, but a round costs ([\d.]+)",
        flat,
    )
    assert bench
    assert _reproduces(bench.group(3), float(bench.group(1)) / float(bench.group(2)))
    assert _reproduces(bench.group(6), float(bench.group(4)) / float(bench.group(5)))
    q3 = re.search(
        r"accepts ([\d.]+) tokens per step and runs ([\d.]+)× faster\. What did a round cost\?.*?"
        r"τ ÷ speedup = \*\*([\d.]+) plain steps",
        flat,
    )
    assert q3 and _reproduces(q3.group(3), float(q3.group(1)) / float(q3.group(2)))
    # The sampling example: the overlap's terms add up to α, which is 1 − TV.
    overlap = re.search(r"Their overlap is ((?:[\d.]+ \+ )+[\d.]+) = \*\*([\d.]+)\*\*, which is 1 − ([\d.]+)\.", flat)
    assert overlap
    assert _reproduces(overlap.group(2), sum(float(t) for t in overlap.group(1).split(" + ")))
    assert _reproduces(overlap.group(2), 1 - float(overlap.group(3)))


# ---- Sources the audit named (M4, M5, L1, L2, L12) -------------------------------------------


def test_the_mtp_drafter_quotes_the_report_and_is_not_limited_to_one_token(page_text, values) -> None:
    rows = {row.id: row for row in load_acceptance()}
    low, high = (rows[key] for key in chapter.MTP_ROWS)
    assert (low.alpha, high.alpha, low.speedup) == (0.85, 0.9, 1.8)
    assert "arxiv.org/abs/2412.19437" in low.source and "§5.4.3" in low.section
    assert values["mtp_cost_low"] == f"{low.cost_per_round:.2f}"
    flat = _flat(page_text)
    assert "We found no primary source" not in flat and "proposes one token per round (γ = 1)" not in flat
    assert "One module does not cap γ at 1" in flat
    assert "vllm/model_executor/models/deepseek_mtp.py" in flat and "eagle_worker.py" in flat


def test_cross_tokenizer_drafting_is_an_engine_rule_not_speculations(page_text) -> None:
    flat = _flat(page_text)
    assert "A draft with another tokenizer cannot be used" not in flat
    assert "Universal Assisted Generation" in flat and "huggingface.co/blog/universal_assisted_generation" in flat


def test_lossless_is_stated_up_to_rounding(page_text) -> None:
    flat = _flat(page_text)
    assert "In exact arithmetic the text is what plain decoding would have written" in flat
    assert "docs/features/spec_decode.md" in flat  # vLLM's own statement of the limit


def test_the_vllm_k2_bullet_keeps_its_two_sources_apart(values) -> None:
    rows = {row.id: row for row in load_acceptance()}
    k2 = rows[chapter.VLLM_CHAINS["EAGLE-3"] + "2"]
    assert values["vllm_k2_cost"] == f"{k2.cost_per_round:.2f}"  # issue 20780's τ over its own speedup
    assert values["vllm_k2_speedup"] == f"{k2.speedup:.2f}×"


def test_choosing_gamma_is_also_checked_out_of_sample(values, page_text) -> None:
    from roofline.acceptance import held_out_speedups

    rows = {row.id: row for row in load_acceptance()}
    for head, prefix in chapter.VLLM_CHAINS.items():
        chain = [rows[f"{prefix}{k}"] for k in range(2, 8)]
        held = held_out_speedups(chain)
        key = head.lower().replace("-", "")
        assert values[f"{key}_best_held_out"] == str(max(held, key=held.get))
        miss = max(abs(held[row.gamma] / row.speedup - 1) for row in chain)
        assert number(values[f"{key}_held_out_miss"]) == pytest.approx(100 * miss, abs=0.05)
    assert "That agreement is in-sample" in _flat(page_text)


# ---- Trees and sampling (interview depth) ------------------------------------------------------


def test_the_tree_table_prices_verification_by_tokens_verified(values, setup) -> None:
    from roofline.spectree import TreeRounds, TreeShape

    hardware, target, _ = setup
    workload = Workload(target, chapter.PRECISION)
    tau = tokens_per_step(chapter.ALPHA, chapter.GAMMA)
    evens = [TreeRounds(hardware, workload, TreeShape(*shape)).break_even(tau) for shape in chapter.TREE_SHAPES]
    assert values["tree_chain_even"] == fmt.users(evens[0]) == values["break_even_free"]
    assert values["tree_wide_even"] == fmt.users(evens[-1])
    # More tokens verified, sooner break-even: the order follows N, whatever the depth.
    verified = [shape[2] for shape in chapter.TREE_SHAPES]
    assert [e for _, e in sorted(zip(verified, evens, strict=True))] == sorted(evens, reverse=True)
    assert number(values["tree_wide_batch_speedup"]) < 1 < number(values["tree_chain_batch_speedup"])


def test_the_sampling_example_shows_the_output_is_p_and_acceptance_falls_with_temperature(values) -> None:
    from roofline.specsampling import acceptance_at_temperature, softmax

    assert values["sample_output"] == values["sample_p"]  # the rejection-sampling argument, computed
    agree = [
        acceptance_at_temperature(chapter.SAMPLE_TARGET, chapter.SAMPLE_DRAFT, t) for t in chapter.SAMPLE_TEMPERATURES
    ]
    assert agree[0] == 1 and agree == sorted(agree, reverse=True)  # falls from greedy over the served range
    assert values["sample_alpha_one"] == f"{agree[-1]:.3f}"
    assert acceptance_at_temperature(chapter.SAMPLE_DISAGREE_TARGET, chapter.SAMPLE_DISAGREE_DRAFT, 0) == 0
    # "not a law": far past served temperatures α climbs back toward 1.
    assert number(values["sample_alpha_hot"]) > agree[-1]
    assert values["sample_p"] == ", ".join(f"{v:.3f}" for v in softmax(chapter.SAMPLE_TARGET, 1.0))


def test_the_widest_tree_cannot_accept_enough_to_break_even_with_the_chain(values) -> None:
    """ "to break even as late as the chain it would have to accept N_tree ÷ N_chain times as much …
    where a tree of its depth yields at most depth + 1"."""
    needed = number(values["tau"]) * int(values["tree_wide_tokens"]) / int(values["tree_chain_tokens"])
    assert values["tree_needed_tau"] == f"{needed:.0f}"
    assert needed > int(values["tree_wide_most"]) == int(values["tree_wide_depth"]) + 1


def test_sglangs_mtp_gains_fade_with_the_batch_as_published(values) -> None:
    entry = tomllib.loads(chapter.PUBLISHED.read_text(encoding="utf-8"))["mtp"]["sglang-deepseek-v3-h200"]
    assert entry["gains"] == {"1": 1.8, "32": 1.5}
    assert "fa5d4572dff6cf3be94b3f794c30a1166838934d" in entry["source"]
    assert (values["mtp_sglang_first"], values["mtp_sglang_last"]) == ("1.8×", "1.5×")
    assert number(values["mtp_sglang_last"]) < number(values["mtp_sglang_first"])  # "it fades with load"
