"""Bad KV-cache input: windowed-layer and host-link fields, --shared-prefix, --kv-precision.

Each gets one line naming file, entry and field, exit status 2, no traceback;
the package raises SpecError with the same one-line message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline import Hardware, SpecError, Workload, builtin_specs, paging_use, swap_or_recompute
from support import assert_one_line_error, run_cli, write

WINDOWED_MODEL = """\
[model."tiny-local"]
name = "Tiny local"
layers = 6
hidden_size = 512
attention_heads = 8
kv_heads = 2
head_dim = 64
ffn_size = 2048
vocab_size = 32000
tied_embeddings = true
sliding_window = 1024
layer_pattern = ["local", "local", "global"]
source = "https://example.com/tiny-local/config.json"
"""

LINKED_GPU = """\
[gpu."my-gpu"]
name = "My GPU"
memory_bytes = 96e9
bandwidth_bytes_per_s = 4e12
source = "https://example.com/my-gpu-datasheet"
host_link_bytes_per_s = 64e9
host_link_source = "https://example.com/my-gpu-datasheet"

[gpu."my-gpu".dense_flops_per_s]
bf16 = 1e15
"""


def test_good_windowed_model_and_linked_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, WINDOWED_MODEL + LINKED_GPU)
    status, out, _ = run_cli(capsys, "validate", path)
    assert status == 0 and "ok (1 GPUs, 1 models)" in out
    status, out, _ = run_cli(
        capsys, "estimate", "--gpu", "my-gpu", "--model", "tiny-local", "--context", "4096", "--specs", path, "--json"
    )
    assert status == 0
    # 4 of 6 layers local: each layer holds (2 x 4096 + 4 x 1024) / 6 = 2048 tokens on average.
    per_token = 2 * 6 * 2 * 64 * 2
    assert f'"kv_bytes_per_user": {per_token * 2048}.0' in out


BAD_SPECS = {
    "window without a pattern": (
        WINDOWED_MODEL.replace('layer_pattern = ["local", "local", "global"]\n', ""),
        ['[model."tiny-local"]', "field 'layer_pattern'", "a sliding_window needs a layer_pattern"],
    ),
    "pattern without a window": (
        WINDOWED_MODEL.replace("sliding_window = 1024\n", ""),
        ['[model."tiny-local"]', "field 'sliding_window'", "needs a sliding_window of at least 1"],
    ),
    "misspelled layer kind": (
        WINDOWED_MODEL.replace('"local", "local"', '"local", "locl"'),
        ["field 'layer_pattern'", "unknown layer kind 'locl'", "did you mean 'local'?"],
    ),
    "pattern longer than the model": (
        WINDOWED_MODEL.replace('["local", "local", "global"]', '["local", "global"]').replace(
            "layers = 6", "layers = 1"
        ),
        ["field 'layer_pattern'", "has 2 entries, more than the 1 layers"],
    ),
    "pattern with no local layer": (
        WINDOWED_MODEL.replace('["local", "local", "global"]', '["global"]'),
        ["field 'layer_pattern'", "names no local layer"],
    ),
    "pattern given as text": (
        WINDOWED_MODEL.replace('["local", "local", "global"]', '"local,global"'),
        ["field 'layer_pattern'", "must be a list"],
    ),
    "window given as a float": (
        WINDOWED_MODEL.replace("sliding_window = 1024", "sliding_window = 1024.5"),
        ["field 'sliding_window'", "must be a whole number"],
    ),
    "negative window": (
        WINDOWED_MODEL.replace("sliding_window = 1024", "sliding_window = -4"),
        ["field 'sliding_window'", "must be at least 1, got -4"],
    ),
    "host link without its source": (
        LINKED_GPU.replace('host_link_source = "https://example.com/my-gpu-datasheet"\n', ""),
        ['[gpu."my-gpu"]', "field 'host_link_source'", "is missing"],
    ),
    "host link zero": (
        LINKED_GPU.replace("host_link_bytes_per_s = 64e9", "host_link_bytes_per_s = 0"),
        ["field 'host_link_bytes_per_s'", "must be positive, got 0"],
    ),
    "misspelled host link": (
        LINKED_GPU.replace("host_link_bytes_per_s", "host_lnk_bytes_per_s"),
        ["field 'host_lnk_bytes_per_s'", "unknown key", "did you mean 'host_link_bytes_per_s'?"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_SPECS))
def test_bad_kv_spec_fails_validate_with_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, fragments = BAD_SPECS[case]
    path = write(tmp_path, text)
    status, out, err = run_cli(capsys, "validate", path)
    assert_one_line_error(status, err, path, *fragments)
    assert out == ""


BAD_ARGUMENTS = {
    "prefix longer than the context": (
        ["--context", "100", "--shared-prefix", "200"],
        ["field 'shared_prefix'", "must not exceed the context (100 tokens), got 200"],
    ),
    "negative prefix": (["--shared-prefix", "-1"], ["argument --shared-prefix: must be at least 0, got -1"]),
    "prefix as text": (["--shared-prefix", "long"], ["argument --shared-prefix: must be a whole number"]),
    "weight format as KV format": (
        ["--kv-precision", "fp4"],
        ["argument --kv-precision: unknown precision 'fp4' for the KV cache"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_ARGUMENTS))
def test_bad_kv_estimate_arguments(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    extra, fragments = BAD_ARGUMENTS[case]
    status, out, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", *extra)
    assert_one_line_error(status, err, "roofline estimate: error:", *fragments)
    assert out == ""


def test_shared_prefix_equal_to_the_context_is_no_limit(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(
        capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--context", "512", "--shared-prefix", "512"
    )
    assert status == 0 and err == ""
    assert "no limit (every cached token is shared)" in out
    assert "512 tokens, 67.1 MB stored once (each user adds 0 B)" in out


def test_list_kv_precisions_shows_effective_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "list", "kv-precisions")
    assert status == 0
    assert "int4                   0.5625" in out
    assert "nvfp4" in out


def test_swap_without_a_host_link_names_the_field() -> None:
    gpu = builtin_specs().gpu("h100-sxm")
    bare = type(gpu)(
        id="bare",
        name="Bare",
        memory_bytes=gpu.memory_bytes,
        bandwidth_bytes_per_s=gpu.bandwidth_bytes_per_s,
        dense_flops_per_s=gpu.dense_flops_per_s,
        source="test",
    )
    with pytest.raises(SpecError) as error:
        swap_or_recompute(Hardware(bare), builtin_specs().model("llama-3.1-8b"), 1024)
    assert str(error.value) == (
        "field 'host_link_bytes_per_s': bare has no host link bandwidth"
        " (add host_link_bytes_per_s and host_link_source to its entry)"
    )


@pytest.mark.parametrize(
    ("lengths", "max_context", "message"),
    [
        ([0], 16, "field 'lengths': each must be a whole number from 1 to 16, got 0"),
        ([17], 16, "got 17"),
        ([], 16, "field 'lengths': needs at least one request"),
        ([4], 0, "field 'max_context': must be a whole number of at least 1, got 0"),
    ],
)
def test_bad_paging_input(lengths: list[int], max_context: int, message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("(", r"\(")):
        paging_use(lengths, max_context)


def test_workload_rejects_a_prefix_past_the_context() -> None:
    with pytest.raises(SpecError, match="field 'shared_prefix'"):
        Workload(builtin_specs().model("llama-3.1-8b"), context=10, shared_prefix=11)
