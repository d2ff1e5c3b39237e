"""The ``roofline`` command as a user sees it: text, JSON, listings and tables."""

from __future__ import annotations

import csv
import io
import json

import pytest

from roofline import builtin_specs, estimate
from roofline.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def test_estimate_text_reads_like_the_readme(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(
        capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--context", "4096", "--prompt", "2000"
    )
    assert out.splitlines()[0] == (
        "Llama 3.1 8B on 1 × NVIDIA H100 SXM (80 GB), bf16 math; 1 user, 4,096 tokens of context"
    )
    assert "memory in use        16.6 GB of 72.0 GB usable" in out
    assert "decode, per user     202 tokens/s" in out
    assert "prefill              33.5 ms for 2,000 tokens, compute-bound" in out
    assert "compute-bound from   never at this context" in out


def test_estimate_json_matches_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(
        capsys, "estimate", "--gpu", "h200", "--model", "mixtral-8x7b", "--precision", "fp8",
        "--compute-precision", "fp8", "--gpus", "2", "--batch", "64", "--context", "1024", "--json",
    )  # fmt: skip
    data = json.loads(out)
    expected = estimate(
        "h200", "mixtral-8x7b", precision="fp8", compute_precision="fp8", gpus=2, batch=64, context=1024
    ).to_dict()
    assert data == pytest.approx(expected)
    assert data["decode_bound"] in ("memory", "compute")


def test_json_crossover_is_null_when_decode_never_turns_compute_bound(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--context", "32768", "--json")
    assert json.loads(out)["crossover_batch"] is None
    assert '"crossover_batch": null' in out


def test_list_gpus_models_precisions(capsys: pytest.CaptureFixture[str]) -> None:
    gpus = run(capsys, "list", "gpus")
    for gpu_id in ("h100-sxm", "h200", "b200", "a100-80gb", "l40s", "mi300x", "tpu-v5e"):
        assert gpu_id in gpus
    models = run(capsys, "list", "models")
    assert "mixtral-8x7b    Mixtral 8x7B     46.7B       12.9B" in models
    precisions = run(capsys, "list", "precisions")
    assert "int4                   0.5" in precisions


def test_table_markdown_has_every_model_and_precision(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "table")
    lines = out.splitlines()
    assert lines[0] == "| Model | Weights | Size | GPUs | Decode tok/s | Prefill ms (2,000 tok) |"
    assert len(lines) == 2 + len(builtin_specs().models) * 3
    assert "| Llama 3.1 8B | bf16 | 16.1 GB | 1 | 209 | 33.5 |" in lines
    assert "| Llama 3.1 70B | bf16 | 141.1 GB | 2 | 47 | 145.3 |" in lines


def test_table_csv_parses(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(
        capsys, "table", "--gpu", "mi300x", "--model", "llama-3.1-70b", "--precisions", "bf16,fp8", "--format", "csv"
    )
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0][0] == "Model" and len(rows) == 3
    assert rows[1][:4] == ["Llama 3.1 70B", "bf16", "141.1 GB", "1"]


def test_specs_option_adds_a_gpu(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "next.toml"
    path.write_text(
        '[gpu."next-gen"]\nname = "Next"\nmemory_bytes = 288e9\nbandwidth_bytes_per_s = 8e12\n'
        'source = "a press release"\n[gpu."next-gen".dense_flops_per_s]\nbf16 = 2.5e15\n'
    )
    out = run(capsys, "list", "gpus", "--specs", str(path))
    assert "next-gen" in out and "288 GB" in out
