"""A model's max_context: validated when given, cited for every built-in model, and every command
warns past it (one line on stderr, the run goes on; --json lists the same lines under "warnings")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from roofline import builtin_specs
from roofline.specs import MAX_CONTEXT_TOKENS
from test_bad_input import assert_one_line_error, run_cli, write
from test_kvcache_bad_input import WINDOWED_MODEL

DATA = Path(__file__).resolve().parent.parent / "roofline" / "data" / "models.toml"

#: Each built-in model's max_position_embeddings, read from the config.json its entry cites.
#: DeepSeek-V3's config gives 163,840 (YaRN, factor 40 over 4,096); its model card advertises 128K.
PUBLISHED = {
    "llama-3.1-8b": 131_072,
    "llama-3.1-70b": 131_072,
    "llama-3.1-405b": 131_072,
    "llama-2-13b": 4_096,
    "mistral-7b": 32_768,
    "mixtral-8x7b": 32_768,
    "gemma-2-9b": 8_192,
    "deepseek-v3": 163_840,
}


def test_every_built_in_model_has_its_published_limit() -> None:
    models = builtin_specs().models
    for model_id, limit in PUBLISHED.items():
        assert models[model_id].max_context == limit, model_id
        assert "config.json" in models[model_id].source


def test_the_data_file_documents_the_field_and_its_range() -> None:
    header = DATA.read_text(encoding="utf-8").split("\n[model.", 1)[0]
    assert "max_context       integer" in header and "max_position_embeddings" in header
    assert f"max_context               1 to {MAX_CONTEXT_TOKENS:,}" in header


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "must be at least 1, got 0"),
        ("8192.5", "must be a whole number"),
        ('"8k"', "must be a whole number, got '8k'"),
        ("true", "must be a whole number"),
        ("200_000_000", "must be at most 100,000,000"),
    ],
)
def test_bad_max_context_is_one_line(
    value: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, WINDOWED_MODEL.replace("sliding_window", f"max_context = {value}\nsliding_window"))
    status, _, err = run_cli(capsys, "validate", path)
    assert_one_line_error(status, err, '[model."tiny-local"]', "field 'max_context'", message)


def test_a_model_without_max_context_warns_about_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, WINDOWED_MODEL)
    status, out, err = run_cli(
        capsys, "estimate", "--gpu", "h100-sxm", "--model", "tiny-local", "--context", "10000000", "--specs", path
    )
    assert status == 0 and err == "" and out


def test_estimate_warns_past_the_limit_and_still_answers(capsys: pytest.CaptureFixture[str]) -> None:
    """Gemma 2 9B serves 8,192 tokens: at 32,768 the figures are for no real deployment."""
    status, out, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "gemma-2-9b", "--context", "32768")
    assert status == 0 and "KV cache per token" in out
    assert err == (
        "roofline estimate: warning: --context of 32,768 tokens is past Gemma 2 9B's limit of 8,192"
        " (max_context): engines refuse longer sequences, so these figures describe no real deployment\n"
    )
    status, out, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "gemma-2-9b", "--context", "8192")
    assert status == 0 and err == ""


def test_estimate_json_lists_the_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("estimate", "--gpu", "h100-sxm", "--model", "llama-2-13b", "--context", "4096", "--prompt", "8000")
    status, out, err = run_cli(capsys, *argv, "--json")
    warnings = json.loads(out)["warnings"]
    assert status == 0 and len(warnings) == 1 and warnings[0].startswith("--prompt of 8,000 tokens")
    assert err.count("warning:") == 1
    status, out, _ = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-2-13b", "--json")
    assert json.loads(out)["warnings"] == []


def test_table_and_simulate_warn_per_model(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "table", "--prompt", "5000")
    assert status == 0 and "Llama 2 13B" in out
    assert re.findall(r"past (.+?)'s limit", err) == ["Llama 2 7B", "Llama 2 13B", "Llama 2 70B"]
    status, _, err = run_cli(
        capsys,
        "simulate",
        "--gpu",
        "h100-sxm",
        "--model",
        "llama-2-13b",
        "--prompt",
        "3000",
        "--output",
        "100:1200",
        "--requests",
        "5",
    )
    assert status == 0
    assert "a request (prompt plus output) of 4,200 tokens is past Llama 2 13B's limit of 4,096" in err


def test_list_models_shows_the_limit(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "list", "models")
    assert status == 0 and "max context" in out.splitlines()[0]
    assert re.search(r"gemma-2-9b .* 8,192$", out, re.MULTILINE)


def test_estimate_warns_about_a_gpu_count_no_engine_splits_a_model_over(capsys: pytest.CaptureFixture[str]) -> None:
    """Llama 3.1 70B's 64 heads and 8 KV heads split over powers of two: 3 GPUs is no layout."""
    status, out, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--gpus", "3")
    assert status == 0 and out
    assert "--gpus 3: Llama 3.1 70B splits by tensor parallelism over 1, 2, 4, 8, 16, 32 or 64 GPUs" in err
    for good in ("2", "8"):
        assert run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--gpus", good)[2] == ""
    # Two groups of 64 are a layout; past one NVLink domain of 8 the estimate says so (issue 21), once.
    err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--gpus", "128")[2]
    assert "splits by tensor parallelism" not in err and "more than one NVLink 4" in err and err.count("\n") == 1
