"""Issue 36: no caller shows the narrow band on a GPU the fit has no rows for.

Every expected figure's costs and band come from one call (``calibration.expected_costs``); these
tests go over every built-in GPU and every caller that shows an expected band (the CLI's estimate,
split, expert-parallel and simulate answers, ``serving.simulate_expected``, and the chapters'
calculators) and fail where one shows a band narrower than ``Calibration.for_ground``'s widened
one, or leaves out the "unfitted: band widened" flag. The reference band is computed here from
``for_ground`` directly, not through ``expected_costs``, so a caller that bypasses it is caught."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from roofline import builtin_specs, load_calibration
from roofline import formatting as fmt
from roofline.calibration import UNFITTED_FLAG, Calibration
from roofline.cli import main
from roofline.performance import Hardware, Workload, decode_step, resolved
from roofline.serving import Lengths, ServingConfig, simulate_expected
from sitegen.pages import find

ROOT = Path(__file__).resolve().parents[1]
SPECS = builtin_specs()
GPUS = sorted(SPECS.gpus)
#: Small enough for every built-in GPU's memory (the TPU v5e's 16 GB included).
MODEL = "llama-3.2-1b"
#: How far a shown band may sit inside the reference before it counts as narrower (rounding only).
SLACK = 1e-9


def _reference(gpu: str, gpus: int = 1, model: str = MODEL, precision: str = "bf16") -> Calibration:
    """The widened calibration a caller must show: ``for_ground`` at the resolved math and GPU count."""
    hardware = resolved(Hardware(SPECS.gpu(gpu), gpus), Workload(SPECS.model(model), precision))
    return load_calibration().for_ground(SPECS.gpu(gpu), math=hardware.compute_precision, gpus=gpus)


def _assert_not_narrower(
    where: str,
    reference: Calibration,
    figures: dict,
    band: dict,
    metrics=("throughput_tokens_per_s", "itl_mean_s"),
    ceilings: dict | None = None,
) -> None:
    """Each metric's shown ``[low, high]`` over its figure reaches at least the reference's p10 and p90,
    except past its figure in ``ceilings`` (the ceiling, or a time's best-case bound), where it stops."""
    for metric in metrics:
        low, high = (value / figures[metric] for value in band[metric])
        bound = (ceilings or {}).get(metric)
        p10, p90 = (end / figures[metric] for end in reference.band_for(metric, figures[metric], bound))
        assert low <= p10 * (1 + SLACK) and high >= p90 * (1 - SLACK), (
            f"{where}: {metric} band {low:.4f}–{high:.4f} of the figure is narrower than {p10:.4f}–{p90:.4f}"
        )
        if bound is not None:  # and never past the ceiling (the band's ends were divided above: 1e-12 of slack)
            beyond = (
                high * figures[metric] > bound * (1 + 1e-12)
                if metric == "throughput_tokens_per_s"
                else low * figures[metric] < bound * (1 - 1e-12)
            )
            assert not beyond, f"{where}: {metric} band reaches past its ceiling {bound}"


def _estimate_ceilings(data: dict) -> dict:
    """An estimate's ceiling figures by the band's names."""
    return {"throughput_tokens_per_s": data["decode_tokens_per_s_total"], "itl_mean_s": data["decode_step_s"]}


def chapter_calculator(chapter: str, name: str):
    """The chapter's calculator module, loaded as its own tests load it."""
    return find(ROOT, chapter).calculator(name)


def _json(capsys, args: list[str]) -> dict:
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def test_some_built_in_gpus_are_unfitted_and_some_fitted() -> None:
    """The enumeration below means something only if both kinds are among the built-in GPUs."""
    widened = {gpu: bool(_reference(gpu).unfitted) for gpu in GPUS}
    assert widened["mi300x"] and not widened["h100-sxm"]


@pytest.mark.parametrize("gpu", GPUS)
def test_cli_estimate_shows_the_widened_band_on_every_gpu(capsys, gpu: str) -> None:
    """``estimate --costs expected --json``: the band and ``fit.band_widened`` on each GPU."""
    data = _json(capsys, ["estimate", "--gpu", gpu, "--model", MODEL, "--batch", "4", "--costs", "expected", "--json"])
    reference = _reference(gpu)
    _assert_not_narrower(
        f"estimate on {gpu}", reference, data["expected"], data["band"], ceilings=_estimate_ceilings(data)
    )
    assert data["fit"]["band_widened"] is bool(reference.unfitted)
    assert data["fit"]["unfitted"] == list(reference.unfitted)


@pytest.mark.parametrize("gpu", [gpu for gpu in GPUS if SPECS.gpu(gpu).interconnect is not None])
def test_cli_pipeline_split_is_grounded_at_the_splits_gpu_count(capsys, gpu: str) -> None:
    """``estimate --parallel pp --gpus 2``: grounded at two GPUs, so an unfitted link widens it too."""
    args = ["estimate", "--gpu", gpu, "--model", MODEL, "--parallel", "pp", "--gpus", "2", "--costs", "expected"]
    data = _json(capsys, [*args, "--json"])
    reference = _reference(gpu, gpus=2)
    shown = data["expected"]
    figures = {"throughput_tokens_per_s": shown["decode_tokens_per_s_total"], "itl_mean_s": shown["decode_step_s"]}
    ceilings = _estimate_ceilings(data)
    _assert_not_narrower(f"estimate --parallel pp on {gpu}", reference, figures, data["band"], ceilings=ceilings)
    assert data["fit"]["unfitted"] == list(reference.unfitted)


@pytest.mark.parametrize("gpu", GPUS)
def test_cli_simulate_shows_the_widened_band_on_every_gpu(capsys, gpu: str) -> None:
    """``simulate --costs expected --json``: a short run's band on each GPU."""
    args = ["simulate", "--gpu", gpu, "--model", MODEL, "--rate", "2", "--requests", "20"]
    data = _json(capsys, [*args, "--prompt", "200", "--output", "20", "--costs", "expected", "--json"])
    reference = _reference(gpu)
    bounds = data["best_case"]
    _assert_not_narrower(f"simulate on {gpu}", reference, data["expected"], data["band"], ceilings=bounds)
    assert data["fit"]["band_widened"] is bool(reference.unfitted)


def test_cli_expert_parallel_widens_an_unfitted_gpus_band_before_the_experts(capsys) -> None:
    """``estimate --parallel ep`` on an MI300X: at least the GPU's widened band, then the experts' factor;
    before the fix the experts' factor was applied to the fitted GPUs' narrow band."""
    args = ["estimate", "--gpu", "mi300x", "--model", "mixtral-8x7b", "--parallel", "ep", "--gpus", "8"]
    data = _json(capsys, [*args, "--costs", "expected", "--json"])
    reference = _reference("mi300x", gpus=8, model="mixtral-8x7b")
    figures = {"throughput_tokens_per_s": data["expected"]["decode_tokens_per_s_total"]}
    _assert_not_narrower(
        "estimate --parallel ep on mi300x", reference, figures, data["band"], ("throughput_tokens_per_s",)
    )
    assert data["band_basis"].startswith(UNFITTED_FLAG)
    assert "mi300x: bf16 compute share unfitted" in data["band_basis"]  # its share is fitted at fp8 only


@pytest.mark.parametrize("gpu", GPUS)
def test_simulate_expected_and_its_band_come_from_one_grounding(gpu: str) -> None:
    """``serving.simulate_expected``'s run with ``expected_costs``'s band: widened where unfitted."""
    from roofline.calibration import expected_costs

    hardware, workload = Hardware(SPECS.gpu(gpu), 1), Workload(SPECS.model(MODEL), "bf16")
    config = ServingConfig(rate=2.0, requests=20, prompt=Lengths(200, 200), output=Lengths(20, 20))
    figures = simulate_expected(hardware, workload, config, load_calibration()).to_dict()
    ground = expected_costs(hardware, workload)
    _assert_not_narrower(f"simulate_expected on {gpu}", _reference(gpu), figures, ground.bands(figures))
    assert ground.flag.startswith(UNFITTED_FLAG) is bool(_reference(gpu).unfitted)


# The chapters' calculators: each page's text must carry the flag exactly where the band is widened,
# and the kv-cache one's band must be the widened one to the digit the page shows.
CALCULATORS = {
    # chapter folder, calculator, the field with the band, inputs besides the GPU
    "kv-cache": ("kv_budget", "expected", {"model": MODEL}),
    "continuous-batching": ("serving", "expected", {"model": MODEL, "gpus": "1"}),
    "parallelism": ("deploy", "total", {"model": MODEL, "gpus": 2, "split": "tp", "weights": "bf16"}),
    "speculative-decoding": ("speculate", "expected", {"gpus": 1}),
}


@pytest.mark.parametrize("chapter", sorted(CALCULATORS))
@pytest.mark.parametrize("gpu", ["mi300x", "h100-sxm", "a10", "l40s"])
def test_each_calculator_says_unfitted_band_widened_where_the_band_is(chapter: str, gpu: str) -> None:
    """The calculator's band field and its explanation say "unfitted: band widened" on a GPU the fit
    has no rows for at the math used (the MI300X at bf16, the A10), and not on one it has (the H100)."""
    name, field, inputs = CALCULATORS[chapter]
    calculator = chapter_calculator(chapter, name)
    params = dict(calculator.DEFAULTS, gpu=gpu, **inputs)
    view = calculator.view(**params)
    # The speculative chapter's target is bf16; the others name their weights, or default to bf16.
    reference = _reference(
        gpu, int(params["gpus"]), params.get("model", params.get("target")), params.get("weights", "bf16")
    )
    widened = bool(reference.unfitted)
    assert (UNFITTED_FLAG in view[field]) is widened, f"{chapter} on {gpu}: {view[field]}"
    assert (f"Expected band: {UNFITTED_FLAG}" in view["explain"] or f"({UNFITTED_FLAG}" in view["explain"]) is widened


def test_kv_calculator_shows_the_widened_decode_band_on_an_mi300x() -> None:
    """The kv-cache calculator's expected tokens/s and band on an MI300X, formatted from the widened
    band, not the fitted GPUs' narrower one it showed before the fix."""
    calculator = chapter_calculator("kv-cache", "kv_budget")
    params = dict(calculator.DEFAULTS, gpu="mi300x", model=MODEL)
    view = calculator.view(**params)
    hardware = Hardware(SPECS.gpu("mi300x"), params["gpus"])
    users = view["max_users"]
    full = Workload(SPECS.model(MODEL), params["weights"], params["kv"], batch=users, context=params["context"])
    reference = _reference("mi300x", model=MODEL, precision=params["weights"])
    rate = 1 / decode_step(replace(hardware, costs=reference.cost_model("mi300x")), full).seconds
    ceiling = 1 / decode_step(hardware, full).seconds
    shown = fmt.banded(fmt.rate(rate), *map(fmt.rate, reference.decode_rate_band(rate, ceiling)))
    assert view["expected"] == f"{shown}, {UNFITTED_FLAG}"
    narrow = fmt.banded(fmt.rate(rate), *map(fmt.rate, load_calibration().decode_rate_band(rate)))
    assert shown != narrow  # the widened band differs from the narrow one at the digits shown


@pytest.mark.parametrize("gpu", GPUS)
def test_a_published_measurement_moved_to_each_gpu_gets_that_gpus_band(gpu: str) -> None:
    """``benchmarks.expect_measurement`` (the measured page's expected column): gpt-fast's one-GPU
    bf16 decode rate, set on each GPU in turn, carries at least that GPU's widened band (a rate's
    band is the ITL band inverted: ``[r / p90, r / p10]``), and stops at the ceiling's rate beside
    it, where the widened fast end would pass it."""
    from roofline import benchmarks
    from roofline.measured import compare, load_measurements

    (decode,) = [m for m in load_measurements(specs=SPECS) if m.id == "gptfast-llama-3.1-8b-bf16-1gpu"]
    moved = replace(decode, gpu=gpu)
    expectation = benchmarks.expect_measurement(moved, load_calibration(), SPECS)
    reference = _reference(gpu, model=moved.model, precision=moved.weight_precision)
    ceiling = compare(moved, specs=SPECS).ceiling
    p10, p90 = reference.band["itl_mean_s"]
    assert expectation.high == pytest.approx(min(expectation.expected / p10, ceiling), rel=SLACK)
    assert expectation.expected / expectation.low >= p90 * (1 - SLACK)
    assert expectation.high <= ceiling * (1 + 1e-12)
