"""A measurements file gets what a spec file gets (issue 25: H7, C2, C3, W4): one located line for
anything that is not a regular UTF-8 file of sensible size, any malformed TOML or wrong type, and
any entry the data header's own rules forbid; and whatever `validate` accepts, the build charts.

The cases are neighbours of the attack report's, not its own: other special files, other ways
to nest, overflow and mistype, other impossible measurements."""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
import socket
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import roofline.measured
import support
from roofline import SpecError, builtin_specs
from roofline.cli import main
from roofline.measured import compare, load_measurements, parse_measurements
from sitegen.generate import Run as GeneratorRun
from sitegen.generate import build_outputs, generate
from sitegen.pages import find

ROOT = Path(__file__).resolve().parent.parent
MEASURED = find(ROOT / "docs", "measured")
measured_page = MEASURED.module()

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
input_tokens = 512
output_tokens = 200
metric = "decode_tokens_per_s_per_user"
value = 100.0
source = "https://example.org/bench"
section = "table 1"
date = "2024-09-15"
speculative = false
"""


def validate(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(["validate", str(path)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_one_located_line(err: str, path: Path, *parts: str) -> None:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"roofline validate: error: {path}: "), err
    assert len(err) < 600, err
    for part in parts:
        assert part in err, err


# --- the file itself (H7) -------------------------------------------------------------------------


def test_special_files_are_refused_in_one_line_without_reading_them(tmp_path: Path, capsys) -> None:
    cases = {}
    folder = tmp_path / "a-directory" / "measurements.toml"
    folder.mkdir(parents=True)
    cases[folder] = "is a directory"
    for device, kind in (("/dev/urandom", "is a character device"), ("/dev/null", "is a character device")):
        link = tmp_path / Path(device).name / "measurements.toml"
        link.parent.mkdir()
        link.symlink_to(device)
        cases[link] = kind
    sock_dir = tmp_path / "s"
    sock_dir.mkdir()
    sock_path = sock_dir / "measurements.toml"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock_path))
    assert stat.S_ISSOCK(os.stat(sock_path).st_mode)
    cases[sock_path] = "cannot open"  # a socket cannot even be opened as a file
    try:
        for path, said in cases.items():
            status, out, err = validate(path, capsys)
            assert status == 2 and out == ""
            assert_one_located_line(err, path)
            assert said in err or "is a socket" in err, err
    finally:
        listener.close()


def test_a_fifo_named_measurements_toml_returns_at_once(tmp_path: Path, capsys) -> None:
    path = tmp_path / "pipe" / "measurements.toml"
    path.parent.mkdir()
    os.mkfifo(path)
    status, _, err = validate(path, capsys)  # a blocking read would hang the test here
    assert status == 2
    assert_one_located_line(err, path, "named pipe")


def test_a_file_over_a_megabyte_is_refused_before_it_is_parsed(tmp_path: Path, capsys) -> None:
    path = tmp_path / "measurements.toml"
    path.write_text(GOOD + "# padding\n" * 120_000)
    status, _, err = validate(path, capsys)
    assert status == 2
    assert_one_located_line(err, path, "larger than 1 MB")


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"\xef\xbb\xbf" + GOOD.encode(), None),  # a UTF-8 byte-order mark is fine, as in spec files
        (GOOD.replace("one H100", "caf\xe9").encode("latin-1"), "is not UTF-8 text (byte 0xe9"),
        (b"\xff\xfe" + GOOD.encode("utf-16-le"), "is UTF-16 text"),
        (b"\x00" * 64, "TOML syntax error"),
    ],
)
def test_encodings(tmp_path: Path, capsys, content: bytes, said: str | None) -> None:
    path = tmp_path / "measurements.toml"
    path.write_bytes(content)
    status, out, err = validate(path, capsys)
    if said is None:
        assert (status, err) == (0, "") and out == f"{path}: ok (1 measurements)\n"
    else:
        assert status == 2
        assert_one_located_line(err, path, said)


# --- the TOML and its types (C2) ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("x = " + "{a = " * 3000 + "1" + "}" * 3000, "nested more than 64 deep"),
        ("[measurement.x]\nnote = " + "[" * 4000 + "]" * 4000, "nested more than 64 deep"),
        (GOOD.replace("gpus = 1", "gpus = 1" + "0" * 5000), "a value is out of range"),
        (GOOD.replace("gpus = 1", "gpus = 1" + "0" * 400), "field 'gpus': must be at most 100,000"),
        (GOOD.replace("value = 100.0", "value = 1" + "0" * 400), "field 'value': must be at most 1e21"),
        (GOOD.replace("value = 100.0", "value = inf"), "field 'value': must be a finite number"),
        (GOOD.replace("value = 100.0", "value = nan"), "field 'value': must be a finite number"),
        ('measurement = "everything"', "field 'measurement': must hold [measurement.ID] tables"),
        ("[[measurement]]\ngpu = 'h100-sxm'", "must hold [measurement.ID] tables"),
        ("measurement = {x = 3}", '[measurement."x"]: must be a table'),
        (
            GOOD.replace('metric = "decode_tokens_per_s_per_user"', 'metric = ["decode_tokens_per_s_per_user"]'),
            "field 'metric': unknown metric an array",
        ),
        (GOOD.replace('gpu = "h100-sxm"', "gpu = 5"), "field 'gpu': must be non-empty text, got 5"),
        (GOOD.replace('kv_precision = "bf16"', "kv_precision = {bits = 8}"), "field 'kv_precision': must be"),
        (GOOD.replace("gpus = 1", 'gpus = "2"'), "field 'gpus': must be a whole number, got '2'"),
        (GOOD.replace("batch = 1", 'batch = ["max"]'), "field 'batch': must be a whole number, got an array"),
        (GOOD.replace("batch = 1", "batch = 1.5"), "field 'batch': must be a whole number"),
        (GOOD.replace('date = "2024-09-15"', "date = 2024-09-15"), "field 'date': must be non-empty text"),
        (GOOD.replace("speculative = false", "speculative = 0"), "field 'speculative': must be true or false"),
        (GOOD.replace('hardware = "one H100"', 'hardware = "one\\nH100"'), "must be one line of printable text"),
        (GOOD.replace('hardware = "one H100"', 'hardware = "' + "x" * 5000 + '"'), "at most 2,000 characters"),
        (GOOD.replace('[measurement."x"]', '[measurement."x\\n"]'), "bad id"),
        (GOOD.replace('[measurement."x"]', '[measurement."' + "a" * 65 + '"]'), "bad id"),
        (GOOD + GOOD, "duplicate id"),
    ],
)
def test_malformed_toml_and_wrong_types_are_one_located_line(tmp_path: Path, capsys, text: str, said: str) -> None:
    path = tmp_path / "measurements.toml"
    path.write_text(text)
    status, out, err = validate(path, capsys)
    assert status == 2 and out == ""
    assert_one_located_line(err, path, said)


# --- the header's rules (W4) and ratios that would break the build (C3) -------------------------------


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (('date = "2024-09-15"', 'date = "2023-02-29"'), "field 'date': is not a day of the calendar"),
        (('date = "2024-09-15"', 'date = "2024-00-10"'), "field 'date': is not a day of the calendar"),
        (('date = "2024-09-15"', 'date = "2999-01-01"'), "field 'date': must be from 2000-01-01 to today"),
        (('date = "2024-09-15"', 'date = "1970-01-01"'), "field 'date': must be from 2000-01-01 to today"),
        (('date = "2024-09-15"', 'date = "2024-9-15"'), "field 'date': must be YYYY-MM-DD or 'undated'"),
        (('date = "2024-09-15"', 'date = "２０２４-09-15"'), "field 'date': must be YYYY-MM-DD or 'undated'"),
        # A decode far above what the bandwidth allows, without speculation: 50,000 tokens/s for one user.
        (("value = 100.0", "value = 50000.0"), "field 'value': is 2"),
        # Speculation may beat the ceiling, but not by a thousand times.
        (("value = 100.0\n", "value = 200000.0\n"), None),
        # A time to first token with no prompt to prefill.
        (('metric = "decode_tokens_per_s_per_user"', 'metric = "time_to_first_token_s"'), None),
        (("batch = 1", "batch = 2000000"), "field 'batch': must be at most 1,000,000"),
        (("batch = 1", "batch = 0"), "field 'batch': must be at least 1"),
        (("output_tokens = 200", "output_tokens = 300000000"), "field 'output_tokens': must be at most 100,000,000"),
        (("output_tokens = 200", "output_tokens = 0"), "field 'output_tokens': must be at least 1"),
        (("input_tokens = 512", "input_tokens = -3"), "field 'input_tokens': must be at least 0"),
        (("gpus = 1", "gpus = 0"), "field 'gpus': must be at least 1"),
        # Milliseconds written as seconds: far below any ceiling.
        (("value = 100.0", "value = 0.001"), "under a thousandth"),
    ],
)
def test_the_header_rules_are_applied(tmp_path: Path, capsys, change: tuple[str, str], said: str | None) -> None:
    text = GOOD.replace(*change)
    if change[1] == "value = 200000.0\n":
        text = text.replace("speculative = false", "speculative = true")
        said = "field 'value': is"
    if "time_to_first_token_s" in change[1]:
        text = text.replace("input_tokens = 512", "input_tokens = 0").replace("value = 100.0", "value = 0.05")
        said = "field 'input_tokens': must be at least 1 for a time to first token"
    path = tmp_path / "measurements.toml"
    path.write_text(text)
    status, _, err = validate(path, capsys)
    assert status == 2
    assert_one_located_line(err, path, '[measurement."x"]', said)


@pytest.mark.parametrize(
    ("metric", "value"),
    [
        ("inter_token_latency_s", 1e-300),  # below a float's reach of the ceiling: an infinite ratio
        ("inter_token_latency_s", 2.2e-308),
        ("time_to_first_token_s", 1e-12),
        ("hbm_bandwidth_bytes_per_s", 3e20),
        ("gemm_flops_per_s", 9e20),
        ("output_tokens_per_s_total", 1e19),
    ],
)
def test_ratios_past_a_float_or_past_the_ceiling_are_refused_not_charted(metric: str, value: float) -> None:
    text = GOOD.replace('"decode_tokens_per_s_per_user"', f'"{metric}"').replace("value = 100.0", f"value = {value!r}")
    with pytest.raises(SpecError) as raised:
        parse_measurements(text)
    message = str(raised.value)
    assert message.startswith('roofline/data/measurements.toml: [measurement."x"]: ') and "\n" not in message
    assert "field 'value'" in message


def measurement_text(
    metric: str, value: float, speculative: bool, batch: int, tokens: int, where: tuple[str, str, int, str]
) -> str:
    gpu, model, gpus, precision = where
    return (
        GOOD.replace('"decode_tokens_per_s_per_user"', f'"{metric}"')
        .replace('gpu = "h100-sxm"', f'gpu = "{gpu}"')
        .replace('model = "llama-3.1-8b"', f'model = "{model}"')
        .replace("gpus = 1", f"gpus = {gpus}")
        .replace('weight_precision = "bf16"', f'weight_precision = "{precision}"')
        .replace("value = 100.0", f"value = {value!r}")
        .replace("speculative = false", f"speculative = {str(speculative).lower()}")
        .replace("batch = 1", f"batch = {batch}")
        .replace("input_tokens = 512", f"input_tokens = {tokens}")
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    metric=st.sampled_from(
        [
            "decode_tokens_per_s_per_user",
            "inter_token_latency_s",
            "time_to_first_token_s",
            "output_tokens_per_s_total",
            "hbm_bandwidth_bytes_per_s",
            "gemm_flops_per_s",
        ]
    ),
    value=st.floats(min_value=5e-324, max_value=1e308, allow_nan=False, allow_infinity=False),
    speculative=st.booleans(),
    batch=st.one_of(st.integers(min_value=1, max_value=1_000_000), st.just("max")),
    tokens=st.integers(min_value=0, max_value=100_000_000),
    where=st.tuples(
        st.sampled_from(sorted(builtin_specs().gpus)),
        st.sampled_from(sorted(builtin_specs().models)),
        st.sampled_from([1, 2, 8, 64, 100_000]),
        st.sampled_from(["bf16", "fp8", "int4"]),
    ),
)
def test_whatever_validate_accepts_charts_as_strict_json(metric, value, speculative, batch, tokens, where) -> None:
    """C3's class: a measurement that parses has a finite, charted ratio; nothing in between crashes."""
    batch = '"max"' if batch == "max" else batch
    try:
        (measurement,) = parse_measurements(measurement_text(metric, value, speculative, batch, tokens, where))
    except SpecError as error:
        assert "\n" not in str(error) and str(error).startswith("roofline/data/measurements.toml: ")
        return
    comparison = compare(measurement)
    assert math.isfinite(comparison.ratio) and math.isfinite(comparison.ceiling)
    json.dumps(measured_page.ratio_chart([comparison]), allow_nan=False)


# --- the build: the same rules, the same line, figures/ untouched -------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A checkout holding the spec files, the serving runs, the figures and the measured page's folder alone (the
    chapters quote measurements by id, which a file of one made-up measurement does not have)."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "roofline" / "data", root / "roofline" / "data")
    shutil.copytree(ROOT / "data", root / "data")  # the serving runs the page shows beside them
    shutil.copytree(ROOT / "figures", root / "figures")
    folder = MEASURED.folder.relative_to(ROOT)
    shutil.copytree(MEASURED.folder, root / folder, ignore=support.COPY_IGNORE)
    return root


def with_measurements(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Point the measured page at ``path``, as a checkout whose data file holds it would: the
    build imports the page afresh, which then takes the package's loader as it is patched here."""
    monkeypatch.setattr(roofline.measured, "load_measurements", functools.partial(load_measurements, path))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("measurement = [1, 2]", "must hold [measurement.ID] tables"),
        ("x = " + "[" * 3000 + "]" * 3000, "nested more than 64 deep"),
        (
            GOOD.replace('metric = "decode_tokens_per_s_per_user"', 'metric = "inter_token_latency_s"').replace(
                "value = 100.0", "value = 1e-320"
            ),
            "field 'value'",
        ),
        (GOOD.replace('date = "2024-09-15"', 'date = "2024-02-30"'), "field 'date'"),
    ],
)
def test_the_build_stops_on_the_same_line_and_leaves_figures_alone(
    repo: Path, monkeypatch: pytest.MonkeyPatch, text: str, said: str
) -> None:
    path = repo / "roofline" / "data" / "measurements.toml"
    path.write_text(text)
    with_measurements(monkeypatch, path)
    before = {p.name: p.read_bytes() for p in (repo / "figures").iterdir()}
    with pytest.raises(SpecError) as raised:
        generate(repo)
    message = str(raised.value)
    assert message.startswith(f"{path}: ") and said in message and "\n" not in message
    assert {p.name: p.read_bytes() for p in (repo / "figures").iterdir()} == before


def test_a_measurement_validate_accepts_builds(repo: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    path = repo / "roofline" / "data" / "measurements.toml"
    # The smallest inter-token latency the rules allow for this workload: just above the ceiling's time.
    (measurement,) = parse_measurements(
        GOOD.replace("decode_tokens_per_s_per_user", "inter_token_latency_s").replace("value = 100.0", "value = 1.0")
    )
    fastest = compare(measurement).ceiling
    path.write_text(
        GOOD.replace("decode_tokens_per_s_per_user", "inter_token_latency_s").replace(
            "value = 100.0", f"value = {fastest!r}"
        )
    )
    assert validate(path, capsys)[0] == 0
    with_measurements(monkeypatch, path)
    outputs = build_outputs(repo, repo / "figures", rerender=False, run=GeneratorRun())
    chart = outputs["measured-ratios.vl.json"].decode()
    json.loads(chart)  # strict JSON
    assert '"what":"engine, one H100"' in chart


# --- an all-reduce's latency and a split's speedup (issue 21) -----------------------------------------

SPLIT = (
    GOOD.replace('gpu = "h100-sxm"', 'gpu = "h200"')
    .replace("gpus = 1", "gpus = 8")
    .replace('"llama-3.1-8b"', '"llama-3.1-405b"')
    .replace('"bf16"', '"fp8"')
    .replace('"decode_tokens_per_s_per_user"', '"split_speedup_per_user"')
    .replace("value = 100.0", 'value = 5.6\nsplit = "tp"\nversus = "pp"')
)


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ('split = "tp"', 'split = "tpxpp"', "split", "unknown split 'tpxpp'"),
        ('versus = "pp"', 'versus = "tp"', "versus", "compares tp with itself"),
        ('versus = "pp"\n', "", "versus", "is missing"),
        ("value = 5.6", "value = 560.0", "value", "times the package's"),
        ("value = 5.6", "value = 0.056", "value", "times the package's"),
        ("speculative = false", "speculative = false\nlengths_assumed = 1", "lengths_assumed", "true or false"),
    ],
)
def test_a_bad_split_speedup_is_one_located_line(old: str, new: str, field: str, words: str) -> None:
    with pytest.raises(SpecError) as raised:
        parse_measurements(SPLIT.replace(old, new))
    message = str(raised.value)
    assert "\n" not in message and f"field '{field}'" in message and words in message, message


def test_a_split_speedup_loads_and_may_pass_the_packages_ratio() -> None:
    # A ratio of two ceilings bounds nothing: 9x is past the package's 7x and still loads.
    (m,) = parse_measurements(SPLIT.replace("value = 5.6", "value = 9.0"))
    assert not m.bounded and compare(m).ceiling == pytest.approx(7.02, abs=0.01) and compare(m).ratio > 1


def test_splits_belong_to_a_split_speedup_only() -> None:
    with pytest.raises(SpecError) as raised:
        parse_measurements(GOOD.replace("speculative = false", 'speculative = false\nsplit = "tp"'))
    assert "field 'split'" in str(raised.value) and "only a split's speedup names splits" in str(raised.value)


def test_an_all_reduce_faster_than_every_preset_is_refused() -> None:
    latency = GOOD.replace("gpus = 1", "gpus = 8").replace('"decode_tokens_per_s_per_user"', '"allreduce_latency_s"')
    (m,) = parse_measurements(latency.replace("value = 100.0", "value = 19.19e-6"))
    assert compare(m).ceiling == pytest.approx(5.7e-6) and m.kind == "all-reduce latency"
    with pytest.raises(SpecError) as raised:
        parse_measurements(latency.replace("value = 100.0", "value = 0.5e-6"))
    assert "field 'value'" in str(raised.value) and "beyond its ceiling" in str(raised.value)
