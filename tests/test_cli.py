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
        "Llama 3.1 8B on 1 × NVIDIA H100 SXM (80 GB nameplate), bf16 math; 1 user, 4,096 tokens of context"
    )
    assert "memory in use        16.6 GB of 81.6 GB weights + KV pool (65.5 GB KV pool of 85.0 GB usable)" in out
    assert "decode, per user     215 tokens/s" in out
    assert "prefill              29.3 ms for 2,000 tokens, compute-bound" in out
    assert "compute-bound from   never at this context" in out
    assert "math                 bf16 (auto: the weights' own bf16)" in out
    assert (
        "rule of thumb        202 tokens/s per user; compute-bound from 295 users (no KV cache); prefill 32.5 ms" in out
    )
    assert "decode vs rule       the rule gives 209; an engine reads one row of the embedding" in out


def test_estimate_says_which_math_it_used(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--precision", "fp8")
    assert out.splitlines()[0].startswith("Llama 3.1 8B on 1 × NVIDIA H100 SXM (80 GB nameplate), fp8 math;")
    assert "math                 fp8 (auto: W8A8 for fp8 weights)" in out
    data = json.loads(
        run(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--precision", "int4", "--json")
    )
    assert data["compute_precision"] == "bf16"
    assert data["math"] == "bf16 (auto: weight-only int4, multiplied at 16 bits)"
    fixed = json.loads(
        run(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--precision", "int8",
            "--compute-precision", "int8", "--json")
    )  # fmt: skip
    assert fixed["math"] == "int8 (set by the caller)"


def test_json_has_the_rule_of_thumb(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--context", "4096", "--json")
    rule = json.loads(out)["rule_of_thumb"]
    assert set(rule) == {"decode_tokens_per_s_per_user", "prefill_s", "crossover_batch"}
    assert rule["decode_tokens_per_s_per_user"] == pytest.approx(202.5, rel=0.01)
    assert rule["crossover_batch"] == pytest.approx(295.3, rel=0.001)


def test_estimate_json_matches_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(
        capsys, "estimate", "--gpu", "h200", "--model", "mixtral-8x7b", "--precision", "fp8",
        "--compute-precision", "fp8", "--gpus", "2", "--batch", "64", "--context", "1024", "--json",
    )  # fmt: skip
    data = json.loads(out)
    expected = estimate(
        "h200", "mixtral-8x7b", precision="fp8", compute_precision="fp8", gpus=2, batch=64, context=1024
    ).to_dict()
    numbers = {key: value for key, value in expected.items() if not isinstance(value, (str, dict))}
    assert {key: data[key] for key in numbers} == pytest.approx(numbers)
    assert data["rule_of_thumb"] == pytest.approx(expected["rule_of_thumb"])
    assert data["decode_vs_rule"] == expected["decode_vs_rule"]
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
    assert "int4                4            4.125          0.515625" in precisions
    assert "nvfp4               4              4.5            0.5625" in precisions


def test_table_markdown_has_every_model_and_precision(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "table")
    lines = out.splitlines()
    assert lines[0] == "| Model | Weights | Size | GPUs | Decode tok/s | Prefill ms (2,000 tok) |"
    assert len(lines) == 2 + len(builtin_specs().models) * 3
    assert "| Llama 3.1 8B | bf16 | 16.1 GB | 1 | 223 | 29.3 |" in lines
    # fp8 checkpoints keep the head and the embedding (525M weights each) at 16 bits (issue 35, M3):
    # 6.98e9 + 2 x 1.05e9 bytes = 9.1 GB, and 223 x 16.1 / 8.6 = 417 tokens/s, not 446.
    assert "| Llama 3.1 8B | fp8 | 9.1 GB | 1 | 417 | 14.6 |" in lines
    # Two GPUs pay 160 all-reduces a pass. Sixteen span two NVLink domains: a two-level all-reduce
    # sends only 1/8 of each message across the network, so the ceiling charges that, not a flat
    # ring over InfiniBand (which gave 59 tokens/s and a 723.3 ms prefill).
    assert "| Llama 3.1 70B | bf16 | 141.1 GB | 2 | 47 | 153.3 |" in lines
    assert "| Llama 3.1 405B | bf16 | 811.7 GB | 16 | 60 | 168.2 |" in lines


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


def test_allreduce_preset_charges_that_preset_at_the_gpu_count(capsys: pytest.CaptureFixture[str]) -> None:
    """`--allreduce-preset nccl` on 4 H100s charges NCCL's ring fit, 5.56 µs + 6 steps of 0.973 µs = 11.4 µs; the
    ceiling alone takes SGLang's kernel, 3.7 µs; a misspelled preset, or one given with a fixed latency,
    is one line naming the fix."""
    base = ["estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--gpus", "4", "--json"]
    nccl = json.loads(run(capsys, *base, "--allreduce-preset", "nccl"))
    best = json.loads(run(capsys, *base))
    assert (
        "each 11.4 µs" in nccl["accounting"]["communication"]
        and "nccl (ring), fitted" in nccl["accounting"]["communication"]
    )
    assert (
        "each 3.7 µs" in best["accounting"]["communication"] and "custom_oneshot" in best["accounting"]["communication"]
    )
    assert nccl["decode_step_s"] > best["decode_step_s"]
    for extra, says in (
        (["--allreduce-preset", "ncl"], "did you mean 'nccl'?"),
        (["--allreduce-preset", "nccl", "--allreduce-latency", "1e-6"], "cannot be combined with --allreduce-latency"),
    ):
        assert main(base + extra) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err
