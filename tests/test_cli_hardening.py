"""Hostile input to the CLI and the spec files (issue 8): one line on stderr, exit 2, never a
traceback, never inf or NaN; and a does-not-fit explanation that names what overflows."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

import roofline
from roofline import cli, estimate, memory_shortfall
from roofline.loader import MAX_FILE_BYTES
from roofline.specs import GpuSpec, MlaSpec, ModelSpec, MoeSpec
from support import GOOD_GPU, GOOD_MODEL, assert_one_line_error, run_cli, write

ROOT = Path(__file__).resolve().parent.parent
BASE = ["estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b"]


def strict_json(text: str) -> dict:
    """JSON as a strict parser reads it: NaN and Infinity are not JSON."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


# --- Numbers on the command line -------------------------------------------------------------

HUGE_ARGUMENTS = {
    "prompt 10**200": ("--prompt", 10**200, "argument --prompt: must be at most 100,000,000, got a 201-digit number"),
    "gpus 10**310": ("--gpus", 10**310, "argument --gpus: must be at most 100,000, got a 311-digit number"),
    "batch 10**310": ("--batch", 10**310, "argument --batch: must be at most 1,000,000"),
    "context 10**310": ("--context", 10**310, "argument --context: must be at most 100,000,000"),
    "prompt 10**310": ("--prompt", 10**310, "argument --prompt: must be at most 100,000,000"),
    "gpus 10**300": ("--gpus", 10**300, "argument --gpus: must be at most 100,000"),
    "batch 10**300": ("--batch", 10**300, "argument --batch: must be at most 1,000,000"),
    "batch one past the range": ("--batch", 1_000_001, "must be at most 1,000,000, got 1,000,001"),
    "gpus 5,000 digits": ("--gpus", "9" * 5000, "must be at most 100,000, got a 5,000-digit number"),
    "negative 300 digits": ("--context", "-" + "9" * 300, "argument --context: must be at least 0"),
    # The article follows the spoken count: an eleven-, an eighteen-, an eighty-digit number.
    "gpus 11 digits": ("--gpus", 10**10, "must be at most 100,000, got an 11-digit number"),
    "gpus 80 digits": ("--gpus", 10**79, "must be at most 100,000, got an 80-digit number"),
    "negative 18 digits": ("--context", -(10**17), "argument --context: must be at least 0, got an 18-digit negative"),
}


@pytest.mark.parametrize("case", list(HUGE_ARGUMENTS))
def test_extreme_numbers_are_refused_with_the_range(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    option, value, fragment = HUGE_ARGUMENTS[case]
    status, out, err = run_cli(capsys, *BASE, option, str(value), "--json")
    assert_one_line_error(status, err, fragment)
    assert out == ""


NOT_WHOLE_NUMBERS = ["1e6", "12.0", "", " ", "٣", "１２", "0x10", "nan", "inf", "1 000"]


@pytest.mark.parametrize("text", NOT_WHOLE_NUMBERS)
def test_only_ascii_whole_numbers_are_counts(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, *BASE, "--batch", text)
    assert_one_line_error(status, err, "argument --batch: must be a whole number")


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "0", "1e-400", "5e-324", "0.001", "1.0000001", "x"])
def test_usable_fraction_outside_its_range(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, *BASE, f"--usable-fraction={text}")
    assert_one_line_error(status, err, "argument --usable-fraction: must be")


def test_every_number_is_finite_at_the_edges_of_every_range(capsys: pytest.CaptureFixture[str]) -> None:
    """Each built-in GPU and model at the largest and smallest arguments: strict JSON, finite numbers."""
    specs = roofline.load_specs()
    corners = [
        ["--gpus", str(cli.GPUS_RANGE[1]), "--batch", str(cli.BATCH_RANGE[1])],
        ["--context", str(cli.CONTEXT_RANGE[1]), "--prompt", str(cli.PROMPT_RANGE[1])],
        ["--batch", str(cli.BATCH_RANGE[1]), "--context", str(cli.CONTEXT_RANGE[1]), "--usable-fraction", "0.01"],
    ]
    for gpu in specs.gpus:
        for model in specs.models:
            for corner in corners:
                argv = ["estimate", "--gpu", gpu, "--model", model, *corner]
                status, out, err = run_cli(capsys, *argv, "--json")
                assert status == 0, err
                figures = strict_json(out)
                for key, value in figures.items():
                    if isinstance(value, float):
                        assert math.isfinite(value), (argv, key, value)
                status, out, _ = run_cli(capsys, *argv)
                assert status == 0 and not re.search(r"\b(inf|nan)\b", out, re.IGNORECASE), out


# --- Spec values -----------------------------------------------------------------------------------

GPU_AT_EDGES = GOOD_GPU.replace("bf16 = 1e15", "bf16 = 1e18").replace("4e12", "1e9")
MOE_MODEL = (
    GOOD_MODEL
    + '[model."tiny-1b".moe]\nexperts = 100000\nexperts_per_token = 1\nexpert_ffn_size = 10000000\n'
    + "shared_experts = 0\ndense_layers = 0\n"
)

BAD_VALUES = {
    "nested 1,000 deep": (GOOD_GPU + "deep = " + "[" * 1000 + "]" * 1000 + "\n", ["nested more than 64 deep"]),
    "5,000-digit integer": (GOOD_MODEL.replace("layers = 16", "layers = " + "9" * 5000), ["value is out of range"]),
    "400-digit integer": (
        GOOD_GPU.replace("96e9", "1" + "0" * 400),
        ["field 'memory_bytes'", "must be at most 1e13, got a number of about 401 digits"],
    ),
    "1e400 float": (GOOD_GPU.replace("4e12", "1e400"), ["field 'bandwidth_bytes_per_s'", "finite number, got inf"]),
    "subnormal bandwidth": (
        GOOD_GPU.replace("4e12", "5e-324"),
        ["field 'bandwidth_bytes_per_s'", "must be at least 1e9, got 5e-324"],
    ),
    "bf16 at 1.7e308": (
        GOOD_GPU.replace("bf16 = 1e15", "bf16 = 1.7e308"),
        ["field 'dense_flops_per_s.bf16'", "must be at most 1e18, got 1.7e+308"],
    ),
    "subnormal peak": (
        GOOD_GPU.replace("fp8 = 2e15", "fp8 = 1e-310"),
        ["field 'dense_flops_per_s.fp8'", "at least 1e9"],
    ),
    "memory above 10 TB": (GOOD_GPU.replace("96e9", "2e13"), ["field 'memory_bytes'", "must be at most 1e13"]),
    "a million layers": (GOOD_MODEL.replace("layers = 16", "layers = 1000000"), ["field 'layers'", "at most 10,000"]),
    "huge vocabulary": (GOOD_MODEL.replace("128256", "1000000000"), ["field 'vocab_size'", "at most 100,000,000"]),
    "experts beyond range": (MOE_MODEL.replace("experts = 100000", "experts = 100001"), ["field 'moe.experts'"]),
    "name with a newline": (GOOD_GPU.replace('"My GPU"', '"My\\nGPU"'), ["field 'name'", "one line", "\\n"]),
    "name with a terminal escape": (GOOD_GPU.replace('"My GPU"', '"My\\u001b[2JGPU"'), ["\\x1b"]),
    "name with a right-to-left override": (GOOD_GPU.replace('"My GPU"', '"My\\u202eGPU"'), ["\\u202e"]),
    "source too long": (GOOD_GPU.replace("https://example.com", "https://" + "a" * 2100), ["at most 2,000 characters"]),
    "id with a trailing newline": (GOOD_GPU.replace('[gpu."my-gpu"]', '[gpu."my-gpu\\n"]'), ["bad id", "\\n"]),
    "id of 65 characters": (GOOD_GPU.replace('"my-gpu"', '"' + "g" * 65 + '"'), ["bad id", "1 to 64"]),
    "key with a control character": (GOOD_GPU.replace("name =", '"na\\u0007me" = 1\nname ='), ["\\x07"]),
}


@pytest.mark.parametrize("case", list(BAD_VALUES))
def test_spec_edge_cases_fail_validate_in_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, fragments = BAD_VALUES[case]
    path = write(tmp_path, text)
    status, out, err = run_cli(capsys, "validate", path)
    assert_one_line_error(status, err, path, *fragments)
    assert len(err) < 400, err
    assert out == ""


def test_specs_at_the_edges_of_their_ranges_give_finite_estimates(tmp_path: Path) -> None:
    """A GPU with the most math and least bandwidth, and a mixture of experts at its widest: the
    crossover solver (which returned NaN for bf16 at 1.7e308) stays finite."""
    path = write(tmp_path, GPU_AT_EDGES + MOE_MODEL)
    specs = roofline.load_specs([path])
    for batch, context in ((1, 0), (cli.BATCH_RANGE[1], 0), (1, cli.CONTEXT_RANGE[1])):
        result = estimate("my-gpu", "tiny-1b", specs=specs, batch=batch, context=context, prompt=10**8)
        for key, value in result.to_dict().items():
            if isinstance(value, float):
                assert math.isfinite(value), (batch, context, key, value)


def test_data_file_headers_state_the_ranges_the_code_checks() -> None:
    """Every bounded spec field has a line in its data file's header giving the same bounds."""
    headers = {
        GpuSpec: (ROOT / "roofline/data/gpus.toml").read_text(),
        ModelSpec: (ROOT / "roofline/data/models.toml").read_text(),
        MoeSpec: (ROOT / "roofline/data/models.toml").read_text(),
        MlaSpec: (ROOT / "roofline/data/models.toml").read_text(),
    }
    prefixes = {GpuSpec: "", ModelSpec: "", MoeSpec: "moe.", MlaSpec: "mla."}
    checked = 0
    for record, text in headers.items():
        ranges = text[text.index("# Ranges") : text.index("\n\n", text.index("# Ranges"))]
        for spec_field in fields(record):
            maximum = spec_field.metadata.get("maximum")
            if maximum is None or spec_field.name == "id":
                continue
            name = prefixes[record] + spec_field.name
            line = next(
                (row for row in ranges.splitlines() if re.search(rf"[#,;]\s+(moe\.)?{spec_field.name}\b", row)),
                None,
            ) or next(row for row in ranges.splitlines() if f"{prefixes[record]}*" in row)
            kind = spec_field.metadata["kind"]
            if kind == "quantity":
                assert f"to {maximum:.0e}".replace("e+", "e").replace("e0", "e") in line, (name, line)
            elif kind == "text":
                assert f"to {maximum}" in line, (name, line)
            elif name not in ("moe.experts_per_token", "moe.dense_layers"):  # bounded by another field
                assert f"to {maximum:,}" in line, (name, line)
            checked += 1
    flops = next(
        row for row in (ROOT / "roofline/data/gpus.toml").read_text().splitlines() if "dense_flops_per_s.*" in row
    )
    assert "1e9 to 1e18" in flops
    assert checked >= 20


# --- Files -------------------------------------------------------------------------------------


def test_a_fifo_is_refused_without_blocking(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "specs.toml"
    os.mkfifo(fifo)
    status, _, err = run_cli(capsys, "validate", str(fifo))
    assert_one_line_error(status, err, "is a named pipe (FIFO), not a spec file")


@pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "a character device"), ("/dev/null", "a character device")])
def test_a_device_is_refused_without_reading_it(path: str, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, "validate", path)
    assert_one_line_error(status, err, f"{path}: is {kind}")


def test_a_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(
        capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--specs", str(tmp_path)
    )
    assert_one_line_error(status, err, "is a directory")


def test_a_file_over_the_size_cap_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD_GPU + "#" * MAX_FILE_BYTES)
    status, _, err = run_cli(capsys, "validate", path)
    assert_one_line_error(status, err, "is larger than 1 MB, too large for a spec file")


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD_GPU.encode())
    status, out, _ = run_cli(capsys, "validate", str(path))
    assert status == 0 and "ok (1 GPUs, 0 models)" in out


@pytest.mark.parametrize(
    ("encoding", "fragment"),
    [("utf-16", "is UTF-16 text, not UTF-8 (save it as UTF-8"), ("latin-1", "is not UTF-8 text (byte 0xe9")],
)
def test_other_encodings_are_explained(
    encoding: str, fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "other.toml"
    path.write_bytes(GOOD_GPU.replace("My GPU", "Mé GPU").encode(encoding))
    status, _, err = run_cli(capsys, "validate", str(path))
    assert_one_line_error(status, err, fragment)


def test_a_path_with_a_newline_stays_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, "validate", str(tmp_path / "a\nb.toml"))
    assert_one_line_error(status, err, "a\\nb.toml: no such file")


def test_validate_checks_and_reports_every_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "deep.toml").write_text("x = " + "[" * 1000 + "]" * 1000 + "\n")
    (tmp_path / "digits.toml").write_text(GOOD_MODEL.replace("layers = 16", "layers = " + "9" * 5000))
    (tmp_path / "good.toml").write_text(GOOD_GPU)
    os.mkfifo(tmp_path / "fifo.toml")
    files = [str(tmp_path / name) for name in ("deep.toml", "digits.toml", "fifo.toml", "good.toml")]
    status, out, err = run_cli(capsys, "validate", *files, "/dev/zero")
    assert status == 2
    assert out == f"{files[3]}: ok (1 GPUs, 0 models)\n"
    lines = err.splitlines()
    assert len(lines) == 4 and "Traceback" not in err
    for line, name in zip(lines, ["deep.toml", "digits.toml", "fifo.toml", "/dev/zero"], strict=True):
        assert line.startswith("roofline validate: error: ") and name in line


# --- Echoed text ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["estimate", "--gpu", "h100\n\x1b[2J", "--model", "llama-3.1-8b"],
        ["estimate", "--gpu", "h100-sxm", "--model", "llama\r\nfake: ok"],
        ["estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--precision", "bf16\n"],
        ["table", "--format", "csv\n"],
        ["list", "gpus\x00"],
    ],
)
def test_echoed_input_has_control_characters_escaped(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, *argv)
    assert_one_line_error(status, err)
    assert not any(ord(char) < 0x20 for char in err[:-1]), err
    assert out == ""


# --- The does-not-fit explanation ---------------------------------------------------------------


def test_a_long_context_blames_one_users_cache_not_the_weights(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--context", "600000")
    assert status == 0
    assert "weights alone" not in out
    assert "one user's KV cache at 600,000 tokens needs 78.6 GB, more than the 65.5 GB left" in out
    assert "none: one user's KV cache at 600,000 tokens does not fit" in out
    assert "shorten the context to 499,818 tokens or fewer" in out and "fp8" in out


def test_every_remedy_offered_actually_fits() -> None:
    """Each piece of advice, applied alone, makes the deployment fit (and the context is the longest)."""
    cases = [
        dict(model="llama-3.1-8b", context=600_000),
        dict(model="llama-3.1-70b", precision="int4", context=200_000),
        dict(model="llama-3.1-8b", context=8192, batch=100),
        dict(model="llama-3.1-405b"),
        dict(model="deepseek-v3", precision="int4", context=1_000_000),
    ]
    for case in cases:
        result = estimate("h100-sxm", **case)
        shortfall = memory_shortfall(result)
        assert shortfall is not None and shortfall.remedies, case
        for remedy in shortfall.remedies:
            change = dict(case)
            if match := re.fullmatch(r"shorten the context to ([\d,]+) tokens or fewer", remedy):
                change["context"] = int(match.group(1).replace(",", ""))
                assert not estimate("h100-sxm", **{**change, "context": change["context"] + 1}).memory.fits
            elif match := re.fullmatch(r"serve at most ([\d,]+) users at this context", remedy):
                change["batch"] = int(match.group(1).replace(",", ""))
            elif match := re.fullmatch(r"cache keys and values in (\w+) .*", remedy):
                change["kv_precision"] = match.group(1)
            elif match := re.fullmatch(r"store the weights in (\w+)", remedy):
                change["precision"] = match.group(1)
            elif match := re.fullmatch(r"use ([\d,]+) GPUs of this kind", remedy):
                change["gpus"] = int(match.group(1).replace(",", ""))
            else:
                raise AssertionError(f"unrecognised remedy {remedy!r}")
            assert estimate("h100-sxm", **change).memory.fits, (case, remedy)


def test_the_70b_int4_long_context_case_points_at_the_cache() -> None:
    shortfall = memory_shortfall(estimate("h100-sxm", "llama-3.1-70b", precision="int4", context=200_000))
    assert shortfall.what == "one user's KV cache"
    # 43.2 GB left, not 46.2: the int4 checkpoint keeps its head and embedding at 16 bits (issue 35).
    assert round(shortfall.needed_bytes / 1e9, 1) == 65.5 and round(shortfall.available_bytes / 1e9, 1) == 43.2
    assert not any("weights in" in remedy for remedy in shortfall.remedies)  # already int4; fp4 would not help
    assert shortfall.remedies[0] == "shorten the context to 131,977 tokens or fewer"


def test_weights_that_do_not_fit_are_reported_as_such() -> None:
    shortfall = memory_shortfall(estimate("h100-sxm", "llama-3.1-405b"))
    assert shortfall.what == "weights"
    assert shortfall.sentence() == (
        "The weights alone need 811.7 GB at bf16, more than the 85.0 GB usable on 1 GPU."
        " To fit: use 16 GPUs of this kind."
    )
    assert memory_shortfall(estimate("h100-sxm", "llama-3.1-8b")) is None


# --- table --------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", " ", ",", " , ,"])
def test_an_empty_precision_list_is_refused(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "table", "--precisions", text)
    assert_one_line_error(status, err, "argument --precisions: needs at least one precision")
    assert out == ""


def test_a_repeated_precision_gives_one_row(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "table", "--model", "llama-3.1-8b", "--precisions", "bf16,bf16", "--format", "csv")
    assert status == 0 and len(out.splitlines()) == 2


def test_a_gpu_without_16_bit_math_is_refused_where_it_is_defined(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A GPU with fp16 but no bf16 math tables at fp16 (``auto`` takes either 16-bit math). One with
    neither is refused when its file is read, naming the field: no command could use it (weight-only
    formats and the rule of thumb multiply at 16 bits), so no command should suggest another."""
    fp16_only = write(tmp_path, GOOD_GPU.replace("bf16 = 1e15", "fp16 = 1e15"))
    status, out, _ = run_cli(capsys, "table", "--gpu", "my-gpu", "--specs", fp16_only)
    assert status == 0 and "Llama 3.1 8B" in out
    path = write(tmp_path, GOOD_GPU.replace("bf16 = 1e15\n", ""))
    for command in (["table", "--gpu", "my-gpu"], ["estimate", "--gpu", "my-gpu", "--model", "llama-3.1-8b"]):
        status, _, err = run_cli(capsys, *command, "--specs", path)
        assert_one_line_error(status, err, '[gpu."my-gpu"]', "dense_flops_per_s", "needs a 16-bit peak (bf16 or fp16)")


def test_a_pipe_in_a_name_does_not_shift_the_cli_markdown_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, GOOD_MODEL.replace('"Tiny 1B"', '"Tiny | 1B"'))
    status, out, _ = run_cli(capsys, "table", "--model", "tiny-1b", "--specs", path)
    assert status == 0
    header, _, row = out.splitlines()[:3]
    assert len(re.split(r"(?<!\\)\|", header)) == len(re.split(r"(?<!\\)\|", row))


# --- Interrupts and output failures ---------------------------------------------------------------


def test_ctrl_c_exits_130_quietly(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "load_specs", interrupted)
    assert cli.main(["list", "gpus"]) == 130
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("argv", [["list", "gpus"], ["simulate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b"]])
def test_running_out_of_memory_is_one_line_and_exit_2(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A MemoryError anywhere (here a list of 2**60 entries, which Python refuses at once) is input
    too large for this machine: one line naming the command, exit 2, no traceback."""

    def exhausted(*_: object) -> None:
        [0] * (1 << 60)  # the allocation is the point

    monkeypatch.setattr(cli, "load_specs", exhausted)
    status, out, err = run_cli(capsys, *argv)
    assert_one_line_error(status, err, f"roofline {argv[0]}: error: out of memory: this input needs more memory")
    assert "Traceback" not in err and out == ""


@pytest.mark.slow
def test_out_of_memory_in_a_real_process_is_one_line() -> None:
    code = (
        "import sys; from roofline import cli\n"
        "cli.load_specs = lambda *a: bytearray(1 << 62)\n"
        "sys.exit(cli.main(['estimate', '--gpu', 'h100-sxm', '--model', 'llama-3.1-8b']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("roofline estimate: error: out of memory:") and done.stderr.count("\n") == 1


@pytest.mark.slow
def test_sigint_in_a_real_process_exits_130_without_traceback() -> None:
    """Ctrl-C in a real process. The child first puts Python's own SIGINT handler back: a shell
    starts a background job (``pytest … &``) with SIGINT ignored, and the child would inherit that."""
    code = (
        "import os, signal, sys; from roofline import cli\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "cli.load_specs = lambda *a: os.kill(os.getpid(), signal.SIGINT)\n"
        "sys.exit(cli.main(['list', 'gpus']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 130 and done.stderr == "" and done.stdout == ""


@pytest.mark.slow
def test_a_full_disk_is_one_line_not_a_traceback() -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "roofline", "list", "gpus"], stdout=full, stderr=subprocess.PIPE, text=True
        )
    assert done.returncode == 1
    assert done.stderr == "roofline: error: cannot write the output: No space left on device\n"


@pytest.mark.slow
def test_a_closed_pipe_ends_quietly() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "roofline", "table", "--format", "text"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()  # the reader went away, as `| head -0` does
    stderr = process.stderr.read().decode()
    assert process.wait() == 1
    assert stderr == ""


def test_other_os_errors_are_not_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only write failures become exit 1; any other OSError is a bug and must surface."""

    def broken(*_: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cli, "load_specs", broken)
    with pytest.raises(PermissionError):
        cli.main(["list", "gpus"])


def test_a_huge_id_is_echoed_cut_short(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, "estimate", "--gpu", "a" * 100_000, "--model", "llama-3.1-8b")
    assert_one_line_error(status, err, "--gpu: unknown GPU 'aaaa", "…")
    assert len(err) < 400


def test_a_huge_key_in_a_spec_file_is_echoed_cut_short(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD_GPU.replace("name =", "k" * 50_000 + " = 1\nname ="))
    status, _, err = run_cli(capsys, "validate", path)
    assert_one_line_error(status, err, "unknown key", "…")
    assert len(err) < 600


def test_a_repeated_model_gives_one_row(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["table", "--model", "llama-3.1-8b", "--model", "llama-3.1-8b", "--precisions", "bf16", "--format", "csv"]
    status, out, _ = run_cli(capsys, *argv)
    assert status == 0 and len(out.splitlines()) == 2


def test_help_states_each_range_the_parser_enforces(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "estimate", "--help")
    text = " ".join(out.split())
    assert status == 0
    for option, (low, high) in {
        "--gpus": cli.GPUS_RANGE,
        "--batch": cli.BATCH_RANGE,
        "--context": cli.CONTEXT_RANGE,
        "--prompt": cli.PROMPT_RANGE,
    }.items():
        assert f"{low:,} to {high:,}" in text, option
        assert run_cli(capsys, *BASE, option, str(high))[0] == 0
        assert run_cli(capsys, *BASE, option, str(high + 1))[0] == 2
        if low > 0:
            assert run_cli(capsys, *BASE, option, str(low - 1))[0] == 2
    assert "0.01 to 1" in text


def test_a_callers_unknown_id_is_not_blamed_on_a_data_file() -> None:
    """The build locates an unknown id in the data file it would belong to; a reader's own call does not."""
    with pytest.raises(roofline.SpecError) as raised:
        estimate("h100", "llama-3.1-8b")
    assert str(raised.value) == "unknown GPU 'h100' (did you mean 'h100-sxm'?)"
    located = roofline.load_specs().locate(raised.value)
    assert str(located) == "roofline/data/gpus.toml: [gpu.\"h100\"]: unknown GPU 'h100' (did you mean 'h100-sxm'?)"


@pytest.mark.parametrize("name", ["=1+2", "@SUM(1+9)*cmd|x!A0", "+cmd", "-2+3"])
def test_csv_never_writes_a_cell_a_spreadsheet_runs(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model's name comes from its config.json: a cell that starts like a formula starts with ' instead."""
    config = json.loads((ROOT / "tests" / "fixtures" / "hfconfig" / "llama-3.2-1b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "_name_or_path": name}))
    status, out, err = run_cli(capsys, "table", "--format", "csv", "--model", str(path), "--precisions", "bf16")
    assert status == 0, err
    import csv

    cells = [cell for row in csv.reader(out.splitlines()) for cell in row]
    assert cells and not any(cell.startswith(("=", "@", "+", "-", "\t", "\r")) for cell in cells)
    assert "'" + name in cells


def test_a_gpu_count_is_written_with_thousands_separators(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--gpus", "100000")
    assert status == 0, err
    assert out.startswith("Llama 3.1 8B on 100,000 × NVIDIA H100 SXM")
    assert "--gpus 100,000 is more than one" in err
    status, out, err = run_cli(
        capsys, "simulate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--gpus", "10000", "--requests", "3"
    )
    assert status == 0, err
    assert out.startswith("Llama 3.1 8B on 10,000 × NVIDIA H100 SXM")
    status, out, err = run_cli(
        capsys,
        "speculate",
        "--gpu",
        "h100-sxm",
        "--model",
        "llama-3.1-8b",
        "--gpus",
        "1000",
        "--gamma",
        "2",
        "--alpha",
        "0.5",
    )
    assert status == 0, err
    assert out.startswith("Llama 3.1 8B on 1,000 × NVIDIA H100 SXM")


SIMULATE = ["simulate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--requests", "5"]


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        ([*SIMULATE, "--token-budget", "100"], "--token-budget: only chunked prefill has a token budget"),
        ([*SIMULATE, "--policy", "static", "--token-budget", "100"], "got --policy static"),
        ([*SIMULATE, "--admission", "reserve", "--preemption", "swap"], "--preemption: only paged admission preempts"),
        ([*SIMULATE, "--policy", "static", "--preemption", "recompute"], "--preemption: only paged admission"),
        ([*SIMULATE, "--policy", "static", "--admission", "paged"], "--admission: static batching always reserves"),
        (
            [*SIMULATE, "--speculate-gamma", "2", "--speculate-alpha", "0.5", "--admission", "paged"],
            "--admission: speculation always reserves",
        ),
        ([*SIMULATE, "--gpus", "2", "--microbatches", "4"], "--microbatches: groups of users go through a pipeline"),
        ([*BASE, "--gpus", "2", "--microbatches", "4"], "--microbatches: groups of users go through a pipeline"),
        ([*BASE, "--attention-dp"], "--dp-attention: one GPU has no attention to split"),
    ],
)
def test_an_option_the_chosen_mode_does_not_use_is_refused_not_ignored(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """As --pp-stages without a pipeline is: one line naming the option, never a silent default."""
    status, out, err = run_cli(capsys, *argv)
    assert_one_line_error(status, err, fragment)
    assert out == ""


@pytest.mark.parametrize(
    "extra",
    [
        ["--policy", "chunked", "--token-budget", "100"],
        ["--preemption", "swap"],
        ["--admission", "paged", "--preemption", "recompute"],
        ["--gpus", "2", "--parallel", "pp", "--microbatches", "2"],
    ],
)
def test_the_same_options_where_they_apply_still_run(extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, *SIMULATE, *extra)
    assert status == 0, err
    status, _, err = run_cli(capsys, *BASE, "--gpus", "2", "--attention-dp")
    assert status == 0, err
