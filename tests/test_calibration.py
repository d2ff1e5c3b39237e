"""Issue 17, expected mode: the calibration file, ``--costs expected`` in estimate, and the refit.

The file is written by scripts/fit_expected.py only. These tests check that it loads, that it
was fitted on the rows and specs now in the repository (their digests), that estimate shows the
band beside the ceiling, and that bad input (an unknown --costs, a missing, malformed or
foreign file, a failed refit) gives one line and changes nothing."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import shutil
import sys
from pathlib import Path

import pytest

from roofline import estimate, load_calibration
from roofline.calibration import BAND_METRICS, CALIBRATION_FILE, cost_model, parse_calibration
from roofline.cli import main
from roofline.errors import SpecError
from roofline.performance import CEILING

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / CALIBRATION_FILE
TEXT = FILE.read_text(encoding="utf-8")


def _script():
    spec = importlib.util.spec_from_file_location("fit_expected", ROOT / "scripts" / "fit_expected.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["fit_expected"] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


def test_the_file_loads_and_names_its_fit() -> None:
    calibration = load_calibration()
    assert calibration.provenance["script"] == "scripts/fit_expected.py"
    assert calibration.provenance["fit_rows"] > 80 and calibration.provenance["held_out_rows"] > 500
    assert 0 < calibration.bandwidth_efficiency <= 1 and calibration.layer_overhead_s > 0
    kinds = {"throughput_tokens_per_s": "throughput", "ttft_mean_s": "ttft", "itl_mean_s": "itl", "tpot_mean_s": "itl"}
    for metric in BAND_METRICS:
        low, high = calibration.band[metric]
        median = calibration.provenance["fit_rows_summary"][kinds[metric]]["median"]
        assert 0 < low < median < high  # the fit's median measured ÷ expected lies inside its band


def test_the_file_was_fitted_on_the_rows_and_specs_in_the_repository() -> None:
    """Editing the rows or a spec without refitting fails here (the full refit is the slow test)."""
    fit = load_calibration().provenance
    rows = (ROOT / "data" / "serving-measurements.csv").read_bytes()
    assert fit["rows_sha256"] == hashlib.sha256(rows).hexdigest(), "rows changed: run scripts/fit_expected.py"
    specs = (ROOT / "roofline/data/gpus.toml").read_bytes() + (ROOT / "roofline/data/models.toml").read_bytes()
    assert fit["specs_sha256"] == hashlib.sha256(specs).hexdigest(), "specs changed: run scripts/fit_expected.py"


def test_ceiling_is_the_default_and_expected_sits_beside_it() -> None:
    plain = estimate("h100-sxm", "llama-3.1-70b", precision="fp8", gpus=4, batch=64, context=2000, prompt=1000)
    both = estimate(
        "h100-sxm", "llama-3.1-70b", precision="fp8", gpus=4, batch=64, context=2000, prompt=1000, costs="expected"
    )
    assert plain.expected is None and plain.hardware.costs is CEILING
    assert both.decode == plain.decode  # the ceiling is unchanged and still printed
    expected = both.expected
    assert expected.decode.seconds > both.decode.seconds and expected.prefill.seconds > both.prefill.seconds
    figures = both.to_dict()
    assert figures["costs"] == "expected" and set(figures["band"]) == set(BAND_METRICS)
    low, high = figures["band"]["throughput_tokens_per_s"]
    assert low < figures["expected"]["throughput_tokens_per_s"] < high
    low, high = figures["band"]["itl_mean_s"]
    assert low < figures["expected"]["itl_mean_s"] < high
    assert "rule_of_thumb" in figures  # the seed's rule stays


def test_the_report_prints_the_band(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(
        [
            "estimate",
            "--gpu",
            "h100-sxm",
            "--model",
            "llama-3.1-8b",
            "--batch",
            "32",
            "--prompt",
            "500",
            "--costs",
            "expected",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    assert "decode, all users" in out  # the ceiling's lines stay
    assert "expected decode" in out and "(band " in out and "expected costs" in out


def test_json_band_is_strict_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "estimate",
                "--gpu",
                "b200",
                "--model",
                "llama-3.1-70b",
                "--precision",
                "nvfp4",
                "--costs",
                "expected",
                "--json",
            ]
        )
        == 0
    )
    figures = json.loads(capsys.readouterr().out)
    assert figures["band"]["ttft_mean_s"] is None  # no prompt, no time to first token
    assert all(math.isfinite(x) for x in figures["band"]["throughput_tokens_per_s"])


def test_an_unknown_costs_value_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--costs", "expectd"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--costs" in err and "expected" in err
    with pytest.raises(SpecError, match="did you mean 'expected'"):
        cost_model("expectd", "h100-sxm")


@pytest.mark.parametrize(
    ("mangle", "says"),
    [
        (lambda text: None, "no such file"),
        (lambda text: text.replace("[costs]", "[costs"), "TOML syntax error"),
        (lambda text: text.replace('package_version = "', 'package_version = "9.'), "was fitted for roofline 9."),
        (lambda text: text.replace("bandwidth_efficiency = ", "bandwidth_efficiency = 1"), "at most 1"),
        (lambda text: text.replace("[band]", "[band]\nthroughput_tokens_per_s = [2, 1]\n[extra]"), "unknown table"),
    ],
)
def test_a_bad_calibration_file_is_one_line_naming_the_fix(tmp_path: Path, mangle, says: str) -> None:
    path = tmp_path / "calibration.toml"
    text = mangle(TEXT)
    if text is not None:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_calibration(path)
    message = str(caught.value)
    assert says in message and "scripts/fit_expected.py" in message and "\n" not in message


def test_a_failed_refit_leaves_the_file_byte_identical(tmp_path: Path, monkeypatch, capsys) -> None:
    script = _script()
    output = tmp_path / "calibration.toml"
    shutil.copy(FILE, output)
    before = output.read_bytes()
    rows = tmp_path / "rows.csv"
    rows.write_text((ROOT / "data" / "serving-measurements.csv").read_text().replace(",fit,", ",bogus,", 1))
    monkeypatch.setattr(script, "ROWS", rows)
    monkeypatch.setattr(script, "OUTPUT", output)
    monkeypatch.setattr(script, "PREDICTIONS", tmp_path / "serving-expected.csv")
    monkeypatch.setattr(script, "ROOT", tmp_path)
    assert script.main([]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "split" in err and "left unchanged" in err
    assert output.read_bytes() == before


def test_the_written_text_is_what_parse_reads() -> None:
    assert parse_calibration(TEXT).band == load_calibration().band


@pytest.mark.slow
def test_the_file_is_what_the_script_fits() -> None:
    """The whole refit (a few minutes): the committed files must be exactly what the script writes."""
    script = _script()
    for path, text in script.build().items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name}: run scripts/fit_expected.py"
