"""Published measurements beside the ceilings: the data file, its loader, and the ratios."""

from __future__ import annotations

import math

import pytest

from roofline import SpecError
from roofline.measured import (
    KINDS,
    compare,
    compare_all,
    load_measurements,
    parse_measurements,
    ratio_range_by_kind,
    well_tuned_decode_range,
)

COMPARISONS = compare_all()

GOOD = """
[measurement."x"]
gpu = "h100-sxm"
gpus = 1
hardware = "one H100"
software = "engine"
software_version = "1.0"
model = "llama-3.1-8b"
weight_precision = "bf16"
kv_precision = "bf16"
compute_precision = "auto"
batch = 1
input_tokens = 5
output_tokens = 200
metric = "decode_tokens_per_s_per_user"
value = 100.0
source = "https://example.org/bench"
section = "table 1"
date = "2024-09-15"
speculative = false
"""


def test_every_source_is_an_http_url_and_every_ceiling_is_computed() -> None:
    assert len(COMPARISONS) >= 20
    for comparison in COMPARISONS:
        measurement = comparison.measurement
        assert measurement.source.startswith(("https://", "http://")), measurement.id
        assert math.isfinite(comparison.ceiling) and comparison.ceiling > 0, measurement.id
        assert comparison.accounting, measurement.id


def test_no_measurement_beats_its_ceiling_unless_it_speculates() -> None:
    """Speculative decoding and multi-token prediction emit several tokens per weight read, so they
    may exceed a decode ceiling; nothing else can."""
    for comparison in COMPARISONS:
        if not comparison.measurement.speculative:
            assert comparison.ratio <= 1.0, comparison.measurement.id


def test_the_chart_has_every_kind() -> None:
    assert {comparison.measurement.kind for comparison in COMPARISONS} == set(KINDS)


def test_gpt_fast_8b_ratio_worked_by_hand() -> None:
    """gpt-fast README (A100-80GB at 330 W): Llama-3.1-8B at bf16, 93.89 tokens/s at batch 1.

    Ceiling: 5 prompt + 100 of 200 new tokens cached on average = 105 tokens × 131,072 B
    = 13.8 MB, plus (8,030,261,248 − 525,336,576 + 4,096) × 2 B = 15.0099e9 B of weights;
    2.039e12 / 15.0237e9 = 135.7 tokens/s, so 93.89 is 69% of the ceiling.
    """
    (comparison,) = [c for c in COMPARISONS if c.measurement.id == "gptfast-llama-3.1-8b-bf16-1gpu"]
    assert comparison.ceiling == pytest.approx(2.039e12 / ((8_030_261_248 - 525_336_576 + 4_096) * 2 + 105 * 131_072))
    assert comparison.ratio == pytest.approx(0.692, abs=0.001)


def test_max_throughput_ceiling_worked_by_hand() -> None:
    """TensorRT-LLM v1.0, Llama 3.1 8B FP8 on one H100, ISL/OSL 128/128: 28,312 output tokens/s.

    The math bound binds. A request: prefill 2 × (8.0303e9 − 2 × 0.52534e9) × 128 + 2 × 0.52534e9
    + 128 × 129 / 2 × 524,288 = 1.7922e12 FLOPs; 128 decode tokens at 192 cached, each
    2 × 7.50492e9 + 192 × 524,288 = 15.1105e9: 1.9341e12. 1978.9e12 × 128 / 3.7263e12 = 67,976.
    """
    (comparison,) = [c for c in COMPARISONS if c.measurement.id == "trtllm-llama-3.1-8b-h100-fp8-128-128"]
    assert comparison.ceiling == pytest.approx(67_976, rel=1e-4)
    assert comparison.ratio == pytest.approx(28_312 / 67_976, rel=1e-4)


def test_times_are_compared_ceiling_over_measured() -> None:
    (comparison,) = [c for c in COMPARISONS if c.measurement.id == "nim-llama-3.3-70b-fp8-tp2-5000-500-ttft"]
    assert comparison.ratio == pytest.approx(comparison.ceiling / 0.40677)
    assert "fp8 math" in comparison.accounting


def test_well_tuned_range_rests_on_single_gpu_decode() -> None:
    expected = well_tuned_decode_range(COMPARISONS)
    assert 0 < expected.low <= expected.high <= 1
    assert expected.basis and all("1gpu" in measurement_id for measurement_id in expected.basis)
    assert f"{expected.low:.0%} to {expected.high:.0%}" in expected.note


def test_a_speculative_measurement_may_beat_the_ceiling() -> None:
    (fast,) = parse_measurements(GOOD.replace("value = 100.0", "value = 500.0").replace("false", "true"))
    assert compare(fast).ratio > 1 and fast.speculative


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ('source = "https://example.org/bench"', 'source = "gpt-fast README"'),
            "field 'source': must be an http(s) URL",
        ),
        (('metric = "decode_tokens_per_s_per_user"', 'metric = "tokens"'), "field 'metric': unknown metric 'tokens'"),
        (('gpu = "h100-sxm"', 'gpu = "h100"'), "field 'gpu': unknown GPU 'h100' (did you mean 'h100-sxm'?)"),
        (('date = "2024-09-15"', 'date = "Sept 2024"'), "field 'date': must be YYYY-MM-DD or 'undated'"),
        (("batch = 1\n", ""), "field 'batch': is missing"),
        (("value = 100.0", "value = -1"), "field 'value': must be positive, got -1"),
        (("speculative = false", "speculative = false\nspeculativ = true"), "field 'speculativ': unknown key"),
    ],
)
def test_bad_entries_are_one_line_errors(change: tuple[str, str], message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_measurements(GOOD.replace(*change))
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith('roofline/data/measurements.toml: [measurement."x"]: ')
    assert message in text


def test_builtin_file_loads() -> None:
    ids = [measurement.id for measurement in load_measurements()]
    assert len(ids) == len(set(ids)) == len(COMPARISONS)


def test_roofline_validate_checks_a_measurements_file(tmp_path, capsys) -> None:
    from roofline.cli import main

    good = tmp_path / "measurements.toml"
    good.write_text(GOOD)
    assert main(["validate", str(good)]) == 0
    assert capsys.readouterr().out == f"{good}: ok (1 measurements)\n"
    good.write_text(GOOD.replace('source = "https://example.org/bench"', 'source = "a blog"'))
    assert main(["validate", str(good)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert error.startswith(f"roofline validate: error: {good}: [measurement.\"x\"]: field 'source'")


def test_multi_gpu_decode_falls_further_below_its_ideal_ceiling() -> None:
    """The multi-GPU ceilings take the interconnect as free; gpt-fast's 8B on 8 A100s reaches a quarter
    of 8 × 2.039 TB/s, so the lowest multi-GPU ratio sits below every single-GPU one."""
    ranges = ratio_range_by_kind(COMPARISONS)
    assert set(ranges) == set(KINDS)
    assert ranges["multi-GPU decode"][0] < ranges["single-GPU decode"][0]
    assert all(0 < low <= high <= 1 for low, high in ranges.values())
