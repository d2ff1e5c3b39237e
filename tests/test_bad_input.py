"""Bad input gets one line naming file, entry and field, exit status 2, and no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from roofline import builtin_specs
from support import GOOD_GPU, GOOD_MODEL, assert_one_line_error, run_cli, write


def test_good_user_file_validates_and_adds_entries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD_GPU + GOOD_MODEL)
    status, out, _ = run_cli(capsys, "validate", path)
    assert status == 0 and "ok (1 GPUs, 1 models)" in out
    status, out, _ = run_cli(capsys, "estimate", "--gpu", "my-gpu", "--model", "tiny-1b", "--specs", path)
    assert status == 0 and "Tiny 1B on 1 × My GPU" in out


def test_user_file_replaces_a_builtin_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD_GPU.replace('"my-gpu"', '"h100-sxm"').replace("4e12", "6.7e12"))
    _, out, _ = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--specs", path, "--json")
    assert '"decode_tokens_per_s_per_user": 417.' in out


#: A GPU's interconnect table, its all-reduce preset's value to fill in for LATENCY.
INTERCONNECT = """
[gpu."my-gpu".interconnect]
scale_up = "NVLink"
domain_gpus = 8
link_bytes_per_s = 450e9
scale_out_bytes_per_s = 50e9
allreduce_latency_s = { nccl = LATENCY }
source = "https://example.com/my-gpu-links"
"""

BAD_SPECS = {
    "toml syntax, with its line": (
        GOOD_GPU.replace("name = ", "name = = ", 1),
        ["specs.toml", "TOML syntax error at line 2"],
    ),
    "missing field": (
        GOOD_GPU.replace("memory_bytes = 96e9\n", ""),
        ['[gpu."my-gpu"]', "field 'memory_bytes'", "is missing"],
    ),
    "wrong type": (
        GOOD_GPU.replace("96e9", '"96 GB"'),
        ['[gpu."my-gpu"]', "field 'memory_bytes'", "must be a number, got '96 GB'"],
    ),
    "zero": (
        GOOD_GPU.replace("4e12", "0"),
        ["field 'bandwidth_bytes_per_s'", "must be positive, got 0"],
    ),
    "negative": (
        GOOD_GPU.replace("bf16 = 1e15", "bf16 = -1e15"),
        ["field 'dense_flops_per_s.bf16'", "must be positive"],
    ),
    "nan": (
        GOOD_GPU.replace("96e9", "nan"),
        ["field 'memory_bytes'", "must be a finite number, got nan"],
    ),
    "infinite": (
        GOOD_GPU.replace("4e12", "inf"),
        ["field 'bandwidth_bytes_per_s'", "must be a finite number, got inf"],
    ),
    "unknown precision": (
        GOOD_GPU.replace("fp8 = 2e15", "fp9 = 2e15"),
        ["field 'dense_flops_per_s.fp9'", "unknown precision 'fp9'", "did you mean 'fp8'?"],
    ),
    "duplicate id": (
        GOOD_GPU + "\n" + GOOD_GPU,
        ['[gpu."my-gpu"]', "duplicate id", "line 11"],
    ),
    "misspelled key": (
        GOOD_GPU.replace("bandwidth_bytes_per_s", "bandwith_bytes_per_s"),
        ['[gpu."my-gpu"]', "field 'bandwith_bytes_per_s'", "unknown key", "did you mean 'bandwidth_bytes_per_s'?"],
    ),
    "unknown key": (
        GOOD_GPU.replace("name =", 'vendor = "x"\nname ='),
        ["field 'vendor'", "unknown key"],
    ),
    "count given as a float": (
        GOOD_MODEL.replace("layers = 16", "layers = 16.0"),
        ['[model."tiny-1b"]', "field 'layers'", "must be a whole number"],
    ),
    "boolean given as text": (
        GOOD_MODEL.replace("tied_embeddings = true", 'tied_embeddings = "yes"'),
        ["field 'tied_embeddings'", "must be true or false"],
    ),
    "kv heads do not divide heads": (
        GOOD_MODEL.replace("kv_heads = 8", "kv_heads = 7"),
        ["field 'kv_heads'", "multiple"],
    ),
    "moe field missing": (
        GOOD_MODEL
        + '[model."tiny-1b".moe]\nexperts = 8\nexperts_per_token = 2\nexpert_ffn_size = 1024\nshared_experts = 0\n',
        ['[model."tiny-1b"]', "field 'moe.dense_layers'", "is missing"],
    ),
    "moe top-k above experts": (
        GOOD_MODEL
        + '[model."tiny-1b".moe]\nexperts = 8\nexperts_per_token = 9\nexpert_ffn_size = 1024\n'
        + "shared_experts = 0\ndense_layers = 0\n",
        ["field 'moe.experts_per_token'", "must not exceed experts (8)"],
    ),
    "unquoted id with a dot": (
        GOOD_MODEL.replace('[model."tiny-1b"]', "[model.tiny-1.5b]"),
        ['[model."tiny-1"]', "unknown key", "quote an id that has a dot in it"],
    ),
    "all-reduce latency as one number": (
        GOOD_GPU + INTERCONNECT.replace("LATENCY", "19e-6"),
        ["field 'interconnect.allreduce_latency_s.nccl'", "must be a table", "{ ring_gpus = 8, ring_s = S }"],
    ),
    "all-reduce algorithm unknown": (
        GOOD_GPU + INTERCONNECT.replace("LATENCY", '{ algorithm = "rng", base_s = 5e-6, step_s = 1e-6 }'),
        ["field 'interconnect.allreduce_latency_s.nccl.algorithm'", "must be one of ring, one_shot, two_shot"],
    ),
    "all-reduce fit without its step": (
        GOOD_GPU + INTERCONNECT.replace("LATENCY", '{ algorithm = "ring", base_s = 5e-6 }'),
        ["field 'interconnect.allreduce_latency_s.nccl.step_s'", "is missing (a fit needs base_s and step_s)"],
    ),
    "all-reduce measurement at one GPU": (
        GOOD_GPU + INTERCONNECT.replace("LATENCY", '{ algorithm = "one_shot", measured = { 1 = 3e-6 } }'),
        ["field 'interconnect.allreduce_latency_s.nccl.measured.1'", "must be a GPU count from 2"],
    ),
    "ring latency without its measurement": (
        GOOD_GPU + INTERCONNECT.replace("LATENCY", "{ ring_gpus = 8 }"),
        ["field 'interconnect.allreduce_latency_s.nccl.ring_s'", "is missing"],
    ),
    "ring latency misspelled": (
        GOOD_GPU + INTERCONNECT.replace("LATENCY", "{ ring_gpu = 8, ring_s = 19e-6 }"),
        ["field 'interconnect.allreduce_latency_s.nccl.ring_gpu'", "did you mean 'ring_gpus'?"],
    ),
    "latency measured at one GPU": (
        GOOD_GPU + INTERCONNECT.replace("LATENCY", "{ 1 = 3e-6, 8 = 6e-6 }"),
        ["field 'interconnect.allreduce_latency_s.nccl.1'", "must be a GPU count from 2 to 100,000"],
    ),
    "compute shared with an unknown chip": (
        GOOD_GPU.replace("source =", 'same_compute_as = "h100-sx"\nsame_compute_source = "x"\nsource =', 1),
        ['[gpu."my-gpu"]', "field 'same_compute_as'", "unknown GPU 'h100-sx'", "did you mean 'h100-sxm'?"],
    ),
    "compute shared with itself": (
        GOOD_GPU.replace("source =", 'same_compute_as = "my-gpu"\nsame_compute_source = "x"\nsource =', 1),
        ["field 'same_compute_as'", "names the chip itself"],
    ),
    "compute shared with a chip that shares another's": (
        GOOD_GPU.replace("source =", 'same_compute_as = "h200"\nsame_compute_source = "x"\nsource =', 1),
        ["field 'same_compute_as'", "names h200, which itself names h100-sxm", "name h100-sxm directly"],
    ),
    "compute shared without its source": (
        GOOD_GPU.replace("source =", 'same_compute_as = "h100-sxm"\nsource =', 1),
        ["field 'same_compute_source'", "is missing"],
    ),
    "compute shared by a bad id": (
        GOOD_GPU.replace("source =", 'same_compute_as = "H100 SXM"\nsame_compute_source = "x"\nsource =', 1),
        ["field 'same_compute_as'", "bad id"],
    ),
    "unknown table": (
        GOOD_GPU.replace('[gpu."my-gpu"]', '[gpus."my-gpu"]').replace('[gpu."my-gpu".', '[gpus."my-gpu".'),
        ["unknown table [gpus]", "did you mean 'gpu'?"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_SPECS))
def test_bad_spec_file_fails_validate_with_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, fragments = BAD_SPECS[case]
    path = write(tmp_path, text)
    status, out, err = run_cli(capsys, "validate", path)
    assert_one_line_error(status, err, path, *fragments)
    assert out == ""


@pytest.mark.parametrize("case", ["missing field", "duplicate id", "nan"])
def test_bad_spec_file_fails_estimate_too(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, fragments = BAD_SPECS[case]
    path = write(tmp_path, text)
    status, out, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--specs", path)
    assert_one_line_error(status, err, "roofline estimate: error:", path, *fragments)
    assert out == ""


def test_validate_reports_each_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, GOOD_GPU.replace("4e12", "0"))
    status, out, err = run_cli(capsys, "validate", "roofline/data/gpus.toml", bad, str(tmp_path / "nope.toml"))
    assert status == 2
    assert out == f"roofline/data/gpus.toml: ok ({len(builtin_specs().gpus)} GPUs, 0 models)\n"
    assert err.count("\n") == 2
    assert "nope.toml: no such file" in err


BAD_ARGUMENTS = {
    "unknown gpu id": (["--gpu", "h100"], ["--gpu: unknown GPU 'h100'", "did you mean 'h100-sxm'?"]),
    "unknown model id": (["--model", "llama-8b"], ["--model: unknown model 'llama-8b'", "did you mean"]),
    "batch zero": (["--batch", "0"], ["argument --batch: must be at least 1, got 0"]),
    "negative context": (["--context", "-1"], ["argument --context: must be at least 0, got -1"]),
    "zero gpus": (["--gpus", "0"], ["argument --gpus: must be at least 1, got 0"]),
    "text for a number": (["--batch", "many"], ["argument --batch: must be a whole number, got 'many'"]),
    "unknown precision": (["--precision", "int3"], ["argument --precision: unknown precision 'int3'"]),
    "unknown kv precision": (["--kv-precision", "fp6"], ["argument --kv-precision: unknown precision 'fp6'"]),
    "math precision the chip lacks": (
        ["--gpu", "a100-80gb", "--compute-precision", "fp8"],
        ["a100-80gb has no fp8 math", "bf16, fp16, int8"],
    ),
    "usable fraction over one": (["--usable-fraction", "2"], ["must be between 0.01 and 1, got '2'"]),
}


@pytest.mark.parametrize("case", list(BAD_ARGUMENTS))
def test_bad_estimate_arguments(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    overrides, fragments = BAD_ARGUMENTS[case]
    argv = {"--gpu": "h100-sxm", "--model": "llama-3.1-8b"}
    argv.update(zip(overrides[::2], overrides[1::2], strict=True))
    status, out, err = run_cli(capsys, "estimate", *[part for pair in argv.items() for part in pair])
    assert_one_line_error(status, err, "roofline estimate: error:", *fragments)
    assert out == ""


def test_bad_table_precision_list(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, "table", "--precisions", "bf16,int5")
    assert_one_line_error(status, err, "unknown precision 'int5'")


def test_does_not_fit_is_a_result_not_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-405b")
    assert status == 0 and err == ""
    assert "NO: The weights alone need 811.7 GB at bf16, more than the 85.0 GB usable on 1 GPU." in out
    assert "to fit               use 16 GPUs of this kind" in out


@pytest.mark.slow
def test_console_script_and_module_print_one_line_without_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_GPU.replace("96e9", "-1"))
    script = Path(sys.executable).with_name("roofline")
    for command in ([str(script)], [sys.executable, "-m", "roofline"]):
        done = subprocess.run([*command, "validate", path], capture_output=True, text=True, check=False)
        assert done.returncode == 2
        assert done.stderr.strip().count("\n") == 0
        assert "field 'memory_bytes': must be positive, got -1" in done.stderr
