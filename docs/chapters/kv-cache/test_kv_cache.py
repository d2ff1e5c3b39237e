"""Chapter 2, "The KV Cache": its page module, its Run cell program, its calculator and the built page.

One package, one answer: the chapter's prose and tables, the program's
output and the calculator's view must all show the numbers ``roofline``
computes for the same deployment.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from roofline import Hardware, Workload, builtin_specs, decode_step, estimate, users_that_fit, weight_bytes
from roofline import formatting as fmt
from roofline.forms import InputError, Output
from roofline.kvcache import VLLM_PAPER_PRIOR_SYSTEMS_USED, kv_read_asymptote
from roofline.performance import gpus_to_fit
from sitegen import widgets
from sitegen.context import load_context
from sitegen.pages import find

FOLDER = find(Path(__file__).resolve().parents[2], "kv-cache")
ROOT = FOLDER.docs.parent
PAGE = FOLDER.folder / "index.md"
PROGRAM = FOLDER.folder / "programs" / "kv_budget.py"
kv_cache = FOLDER.module()
calculator = FOLDER.calculator("kv_budget")
SPECS = builtin_specs()


@pytest.fixture(scope="module")
def content():
    return kv_cache.build(load_context(ROOT))


@pytest.fixture(scope="module")
def values(content) -> dict[str, str]:
    return content.values


def test_every_value_the_page_quotes_is_computed_and_committed(values) -> None:
    source = PAGE.read_text(encoding="utf-8")
    quoted = set(re.findall(r"\{\{\s*n\.([\w-]+)\s*\}\}", source))
    assert quoted, "the page quotes no values"
    assert quoted <= set(values), sorted(quoted - set(values))
    committed = json.loads((ROOT / "figures" / "values.json").read_text(encoding="utf-8"))["pages"]
    assert committed[FOLDER.page] == values


def test_the_page_shows_four_figures_and_four_tables(content) -> None:
    source = PAGE.read_text(encoding="utf-8")
    for figure in content.figures:
        assert f"{{{{ md.figure-{figure.name} }}}}" in source
    for table in content.tables:
        assert f"{{{{ md.{table} }}}}" in source
    assert len(content.figures) == 4 and len(content.tables) == 4


def test_prose_values_agree_with_the_package(values) -> None:
    """Capacity, the asymptote and the cache per token, recomputed here from the public API."""
    h100 = Hardware(SPECS.gpu("h100-sxm"))
    small = SPECS.model("llama-3.1-8b")
    # 0.95 x (85.52e9 the driver reports - 0.5e9 workspace - 16.06e9) / (8192 x 131,072) = 61.0
    assert values["cap_small_h100_8k"] == "61"
    assert values["kv_per_token_small"] == "131.1 kB"
    assert values["q_large_bytes"] == "327,680"  # 2 x 80 x 8 x 128 x 2
    long = Workload(small, context=kv_cache.LONG_CONTEXT)
    assert values["asym_small_tps"] == fmt.rate(kv_read_asymptote(h100, long))
    users = users_that_fit(h100, long)
    assert values["asym_small_users"] == f"{users:,}"
    step = decode_step(h100, Workload(small, batch=users, context=kv_cache.LONG_CONTEXT))
    assert values["asym_small_fit_tps"] == fmt.rate(users / step.seconds)


def test_the_vllm_figure_is_quoted_from_the_package_with_its_source(values) -> None:
    assert values["vllm_low"] == "20.4%" and values["vllm_high"] == "38.2%"
    assert "arxiv.org/abs/2309.06180" in values["vllm_source"]
    assert VLLM_PAPER_PRIOR_SYSTEMS_USED.low == 0.204


def test_swap_against_recompute_names_every_exception(values) -> None:
    """The prose counts the pairs where recomputing wins, block by block and batched, and names each
    batched one; the pairs are every model on every GPU with a host link but the TPU."""
    context = load_context(ROOT)
    by_block, checked = kv_cache.swap_findings(context, kv_cache.CUDA_COPY_ISSUE.low)
    batched, _ = kv_cache.swap_findings(context, 0.0)
    gpus = [g for g in SPECS.gpus.values() if g.host_link_bytes_per_s and g.id not in kv_cache.NOT_CUDA]
    assert checked == len(gpus) * len(SPECS.models) and values["swap_pairs"] == f"{checked:,}"
    assert values["swap_wins_by_block"] == f"{len(by_block):,}" and values["swap_wins_batched"] == f"{len(batched):,}"
    for line in batched:
        assert line in values["swap_batched_exceptions"]
    # The 8B on an H100 with vLLM's block-by-block copies: recomputing wins; batched, swapping does.
    assert values["swap_cheaper"] == "recomputing" and values["batched_cheaper"] == "swapping"


def test_swap_numbers_use_estimates_prefill(values) -> None:
    """The recompute time is the prefill estimate reports, and the per-token figures and the break-even
    link divide the same numbers the prose quotes (4,096 tokens, 62.2 ms, 8.4 ms)."""
    prefill = estimate("h100-sxm", "llama-3.1-8b", prompt=kv_cache.SWAP_CONTEXT).prefill.seconds
    assert values["recompute_ms"] == f"{prefill * 1e3:,.1f}"
    assert values["prefill_per_token_us"] == f"{prefill / kv_cache.SWAP_CONTEXT * 1e6:.1f}"
    cache = kv_cache.SWAP_CONTEXT * 131_072
    assert values["break_even_gbps"] == f"{cache / prefill / 1e9:,.1f}"
    assert values["break_even_copy_us"] == f"{prefill / values_copies(values) * 1e6:.1f}"


def values_copies(values) -> int:
    return int(values["swap_copies"].replace(",", ""))


def test_every_context_the_page_uses_is_within_its_models_limit(values) -> None:
    """No number on the page describes a context the model does not serve."""
    gemma = SPECS.model(kv_cache.WINDOW_MODEL)
    assert kv_cache.WINDOW_CONTEXT <= gemma.max_context
    for model_id in (kv_cache.SMALL_MODEL, kv_cache.LARGE_MODEL):
        model = SPECS.model(model_id)
        for context in (*kv_cache.CAPACITY_CONTEXTS, *kv_cache.FIGURE_CONTEXTS, kv_cache.LONG_CONTEXT):
            assert context <= model.max_context, (model_id, context)
    # c* for the 70B is past its limit, and the page says so.
    assert int(values["cstar_large"].replace(",", "")) > SPECS.model(kv_cache.LARGE_MODEL).max_context
    assert values["large_max_context"] == f"{SPECS.model(kv_cache.LARGE_MODEL).max_context:,}"


def test_c_star_divides_the_weights_a_step_reads(values) -> None:
    """c* = W_read / k: 15.0 GB / 131,072 B = 114,516 tokens for the 8B, not the 16.1 GB held."""
    small = SPECS.model(kv_cache.SMALL_MODEL)
    read = kv_cache.weights_read_bytes(Workload(small))
    assert values["cstar_small"] == f"{read / 131_072:,.0f}"
    assert values["w_read_small"] == fmt.gigabytes(read)
    assert read < weight_bytes(small, "bf16")


def test_calculator_users_match_the_chapter_table(content) -> None:
    """The capacity table and the calculator give the same users that fit, cell for cell."""
    table = kv_cache.capacity_table(load_context(ROOT))
    for row in table.rows:
        model = next(m.id for m in SPECS.models.values() if m.name == row[0])
        count, gpu_name = row[1].split(" × ")
        gpu = next(g.id for g in SPECS.gpus.values() if g.name == gpu_name)
        for context, cell in zip(kv_cache.CAPACITY_CONTEXTS, row[2:], strict=True):
            answer = calculator.view(
                model=model, gpu=gpu, gpus=int(count), weights="bf16", kv="bf16", context=context, prefix=0
            )
            assert answer["users"] == cell, (row[0], row[1], context)


def test_calculator_shrink_rows_match_the_chapter(content) -> None:
    """The fp8, int4 and shared-prefix rows of the shrinking table are the calculator's answers too."""
    rows = {row[0]: row for row in kv_cache.shrink_table(load_context(ROOT)).rows}
    cases = {
        "8-bit cache (fp8)": dict(kv="fp8", prefix=0),
        "4-bit cache (int4, group scales)": dict(kv="int4", prefix=0),
        f"{kv_cache.PREFIX_TOKENS:,}-token shared prefix, read once": dict(kv="bf16", prefix=kv_cache.PREFIX_TOKENS),
    }
    for label, inputs in cases.items():
        answer = calculator.view(
            model="llama-3.1-8b", gpu="h100-sxm", gpus=1, weights="bf16", context=kv_cache.LONG_CONTEXT, **inputs
        )
        _, weights, _, users, per_user, total = rows[label]
        assert weights == "16.1 GB", label
        assert (answer["users"], answer["per_user"], answer["total"]) == (users, per_user, total), label


def test_calculator_memory_split_adds_up_and_the_step_split_is_the_packages() -> None:
    answer = calculator.view(**calculator.DEFAULTS)
    parts = answer["memory_parts"]
    assert [part["label"] for part in parts] == ["weights", "KV cache", "headroom"]
    assert sum(part["share"] for part in parts) == pytest.approx(1.0)
    assert parts[2]["share"] > 0.04  # the workspace and the 5% of the pool the usable fraction keeps back
    from roofline import step_split

    split = step_split(Hardware(SPECS.gpu("h100-sxm")), Workload(SPECS.model("llama-3.1-8b"), batch=61, context=8192))
    assert answer["step_parts"][1]["share"] == pytest.approx(split.kv_share)
    assert answer["step"] == f"{split.weights_s * 1e3:,.1f} · {split.kv_s * 1e3:,.1f} ms"


def test_calculator_words_what_cannot_be_served() -> None:
    too_big = calculator.view(**{**calculator.DEFAULTS, "model": "llama-3.1-70b"})
    assert too_big["fits"] is False and too_big["users"] == "0" and too_big["total"] == "—"
    assert "needs at least 2 of these GPUs" in too_big["explain"]
    with pytest.raises(InputError, match="gpus"):
        calculator.view(**{**calculator.DEFAULTS, "gpus": 0})


def test_a_shared_prefix_longer_than_the_context_is_refused_by_the_forms_rule() -> None:
    """The prefix is the first part of each user's context: the form's rule, not the view, refuses
    one longer than it, naming both fields (the page marks both)."""
    with pytest.raises(InputError) as refused:
        calculator.view(**{**calculator.DEFAULTS, "prefix": 8193})
    assert refused.value.fields == ("prefix", "context")
    assert "cannot be longer than each user's context" in str(refused.value)
    assert calculator.view(**{**calculator.DEFAULTS, "prefix": 8191})["fits"] is True


def test_a_prefix_as_long_as_the_context_sets_no_limit_as_the_cli_says(capsys) -> None:
    """Every cached token shared: no user holds a cache of its own, so memory limits no number of
    users; `roofline estimate --shared-prefix` equal to `--context` says so too (issue 42)."""
    answer = calculator.view(**{**calculator.DEFAULTS, "prefix": 8192})
    assert answer["fits"] is True and answer["users"] == "no limit" and answer["max_users"] is None
    assert answer["verdict"] == "No limit: every cached token is shared"
    from roofline.cli import main

    assert main(
        ["estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--context", "8192", "--shared-prefix", "8192"]
    ) in (0, None)
    out = capsys.readouterr().out
    assert "no limit (every cached token is shared)" in out
    per_user = next(line for line in out.splitlines() if "decode, per user" in line)
    assert per_user.split()[-2] == answer["per_user"]


# ---- The stack output kind (sitegen/widgets.py) ---------------------------------------------


def test_a_stack_output_draws_one_span_per_part_at_its_share() -> None:
    output = Output.stack("memory", "Memory", parts="parts")
    answer = {"memory": "a · b", "parts": [{"label": "weights", "share": 0.25}, {"label": "KV <cache>", "share": 1.5}]}
    assert widgets.KINDS["stack"].check(output, answer) is None
    soup = BeautifulSoup(widgets.KINDS["stack"].markup(output, answer), "html.parser")
    spans = soup.select("[data-rf-draw=stack][data-rf-key=parts] .rf-calc__part")
    assert [span["style"] for span in spans] == ["width:25.0%", "width:100.0%"]
    assert spans[1]["title"] == "KV <cache>"  # escaped in the markup, the text itself once parsed
    assert "must be a list" in widgets.KINDS["stack"].check(output, {"memory": "", "parts": {"no": 1}})


# ---- The Run cell program --------------------------------------------------------------------


def test_the_program_prints_every_model_with_the_packages_users() -> None:
    done = subprocess.run([sys.executable, str(PROGRAM)], capture_output=True, text=True, cwd=ROOT, check=True)
    lines = done.stdout.splitlines()[3:]
    assert len(lines) == len(SPECS.models)
    h100 = SPECS.gpu("h100-sxm")
    for line, model in zip(lines, SPECS.models.values(), strict=True):
        assert line.startswith(model.name)
        workload = Workload(model, context=8192)
        hardware = Hardware(h100, gpus_to_fit(Hardware(h100), workload))
        cells = line[len(model.name) :].split()
        assert cells[-2:] == [str(hardware.count), f"{users_that_fit(hardware, workload):,}"], model.name


def test_calculator_refuses_a_gpu_count_no_engine_uses() -> None:
    """3 GPUs cannot split Llama 3.1 70B's 64 heads: every figure is a dash and the reason names the counts."""
    answer = calculator.view(**{**calculator.DEFAULTS, "model": "llama-3.1-70b", "gpus": 3})
    assert answer["verdict"] == "Llama 3.1 70B does not split over 3 GPUs"
    assert answer["users"] == answer["per_user"] == answer["total"] == "—"
    assert "1, 2, 4, 8, 16, 32 or 64 GPUs" in answer["explain"]


def test_calculator_warns_past_the_models_limit_and_says_what_headroom_is() -> None:
    """Gemma 2 9B serves 8,192 tokens; the headroom is mostly the reserve, not free room for users."""
    past = calculator.view(**{**calculator.DEFAULTS, "model": "gemma-2-9b", "context": 32768})
    assert past["verdict"].endswith("past Gemma 2 9B's limit")
    assert past["explain"].startswith("A context of 32,768 tokens is past Gemma 2 9B's limit of 8,192")
    answer = calculator.view(**calculator.DEFAULTS)
    assert "limit" not in answer["verdict"]
    assert "the cache gets 95% of what they and the runtime's workspace leave, a 65.5 GB KV pool" in answer["explain"]
    assert "0.01 GB of the cache's share free" in answer["explain"]
    assert "the headroom of 4.0 GB is mostly the 3.9 GB reserved for activations and the runtime" in answer["explain"]


def test_calculator_at_a_one_token_context_shows_a_rate_not_zero() -> None:
    answer = calculator.view(**{**calculator.DEFAULTS, "context": 1})
    assert answer["per_user"] not in ("0", "0.0") and float(answer["per_user"]) > 0
    assert "at 1 token is 131.1 kB" in answer["explain"]


def test_the_budget_shows_the_expected_band_beside_the_ceiling() -> None:
    """Issue 17: the users that fit decode at the ceiling's rate, and at the fitted costs with the band
    the time between tokens' 80% band puts round it (inverted: a rate); nothing when no user fits."""
    from roofline.calibration import load_calibration

    view = calculator.view(**calculator.DEFAULTS)
    calibration = load_calibration()
    specs = builtin_specs()
    params = calculator.DEFAULTS
    full = Workload(
        specs.model(params["model"]),
        params["weights"],
        params["kv"],
        batch=view["max_users"],
        context=params["context"],
        shared_prefix=params["prefix"],
    )
    fitted = Hardware(specs.gpu(params["gpu"]), params["gpus"], costs=calibration.cost_model(params["gpu"]))
    rate = 1 / decode_step(fitted, full).seconds
    low, high = calibration.decode_rate_band(rate)
    assert view["expected"] == f"{rate:,.0f} (band {low:,.0f}–{high:,.0f})"
    assert rate < float(view["per_user"].replace(",", ""))  # the prediction sits below the ceiling
    assert f"expected, {view['expected']} tokens/s each" in view["explain"] and fmt.EXPECTED_MEANS in view["explain"]
    nothing = calculator.view(**dict(calculator.DEFAULTS, model="llama-3.1-405b", gpus=1))
    assert nothing["expected"] == "—"
