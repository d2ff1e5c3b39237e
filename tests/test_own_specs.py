"""The reader's own model and GPU on the command line: ``--model config.json`` and ``--gpu FILE`` in
every command, ``roofline model import``, and one line naming the fix for every bad file."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from roofline import SpecError, builtin_specs
from roofline import architecture as arch
from roofline.hfconfig import FAMILIES, MAX_CONFIG_BYTES, parse_config
from roofline.loader import parse_specs
from roofline.ownspecs import parse_gpu_text, resolve_gpu, resolve_model
from test_bad_input import assert_one_line_error, run_cli

FIXTURES = Path(__file__).parent / "fixtures" / "hfconfig"
QWEN3 = FIXTURES / "qwen3-32b.json"
LLAMA = json.loads((FIXTURES / "llama-3.1-8b.json").read_text())

GPU_TOML = """\
name = "My accelerator"
memory_bytes = 96e9
bandwidth_bytes_per_s = 4e12
[dense_flops_per_s]
bf16 = 900e12
fp8 = 1800e12
"""
GPU_JSON = {
    "id": "my-gpu",
    "name": "My accelerator",
    "memory_bytes": 96e9,
    "bandwidth_bytes_per_s": 4e12,
    "dense_flops_per_s": {"bf16": 900e12, "fp8": 1800e12},
    "source": "https://example.com/datasheet",
}


def config_file(tmp_path: Path, config: object, name: str = "config.json") -> str:
    path = tmp_path / name
    path.write_text(config if isinstance(config, str) else json.dumps(config), encoding="utf-8")
    return str(path)


def llama(**changes: object) -> dict:
    config = dict(LLAMA)
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    return config


# -- Every command takes a path -----------------------------------------------------------------


def test_estimate_reads_a_config_as_the_built_in_id(capsys: pytest.CaptureFixture[str]) -> None:
    """Llama 3.1 8B's config gives the numbers the built-in entry gives, figure for figure."""
    argv = ["estimate", "--gpu", "h100-sxm", "--context", "8192", "--batch", "4", "--json"]
    _, by_id, _ = run_cli(capsys, *argv, "--model", "llama-3.1-8b")
    status, by_file, err = run_cli(capsys, *argv, "--model", str(FIXTURES / "llama-3.1-8b.json"))
    assert status == 0, err
    by_id, by_file = json.loads(by_id), json.loads(by_file)
    assert by_file.pop("model") == "llama-3.1-8b" and by_id.pop("model") == "llama-3.1-8b"
    assert by_file == by_id


def test_table_and_simulate_read_configs_too(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "table", "--format", "csv", "--model", str(QWEN3), "--model", "llama-3.1-8b")
    assert status == 0, err
    assert out.count("qwen3-32b") == 3 and out.count("Llama 3.1 8B") == 3
    status, out, err = run_cli(capsys, "simulate", "--gpu", "h100-sxm", "--model", str(QWEN3), "--requests", "20")
    assert status == 0, err
    assert out.startswith("qwen3-32b on 1 × NVIDIA H100 SXM")


SPEC_FILE_GPU = '[gpu."my-gpu"]\nsource = "https://example.com/datasheet"\n' + GPU_TOML.replace(
    "[dense_flops_per_s]", '[gpu."my-gpu".dense_flops_per_s]'
)


@pytest.mark.parametrize(
    ("name", "text"),
    [("gpu.toml", GPU_TOML), ("gpu.json", json.dumps(GPU_JSON)), ("spec.toml", SPEC_FILE_GPU)],
)
def test_gpu_file_in_toml_or_json(name: str, text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A flat TOML table, a JSON object, or a spec file with one GPU: the estimate uses its figures
    (decode at batch 1 is the weights a step reads, at the file's 4 TB/s)."""
    path = tmp_path / name
    path.write_text(text)
    status, out, err = run_cli(capsys, "estimate", "--gpu", str(path), "--model", "llama-3.1-8b", "--json")
    assert status == 0, err
    figures = json.loads(out)
    assert figures["gpu"] == ("my-accelerator" if name == "gpu.toml" else "my-gpu")
    read = arch.parameters_read(builtin_specs().model("llama-3.1-8b"), 1) * 2  # bf16 weights, one embedding row
    assert figures["decode_tokens_per_s_per_user"] == pytest.approx(4e12 / read, rel=1e-9)


def test_resolver_keeps_ids_and_adds_files() -> None:
    specs = builtin_specs()
    assert resolve_model(specs, "llama-3.1-8b") == (specs, "llama-3.1-8b")
    assert resolve_model(specs, "no-such-model") == (specs, "no-such-model")  # the caller's did-you-mean
    specs2, model_id = resolve_model(specs, str(QWEN3))
    assert model_id == "qwen3-32b" and arch.total_parameters(specs2.model(model_id)) > 32e9
    assert "qwen3-32b" not in specs.models  # the built-in set is not changed


def test_a_file_never_replaces_the_entry_its_id_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Llama 3.1 70B's config in a folder called llama-3.2-1b derives the built-in 1B's id: the file's
    entry gets its own id, so --draft llama-3.2-1b still drafts with the 1B (2.49×, not the 70B's 0.55×)."""
    folder = tmp_path / "llama-3.2-1b"
    folder.mkdir()
    config_file(
        folder,
        {k: v for k, v in json.loads((FIXTURES / "llama-3.1-70b.json").read_text()).items() if k != "_name_or_path"},
    )
    argv = ["--gpu", "h100-sxm", "--model", str(folder / "config.json")]
    status, out, err = run_cli(
        capsys, "speculate", *argv, "--gpus", "4", "--gamma", "4", "--alpha", "0.7", "--draft", "llama-3.2-1b", "--json"
    )
    assert status == 0, err
    assert json.loads(out)["speedup"] == pytest.approx(2.49, abs=0.005)
    status, out, err = run_cli(capsys, "estimate", *argv, "--json")
    assert status == 0, err
    assert json.loads(out)["model"] == "llama-3.2-1b-file"
    # A repo name that slugs to a built-in id, on every command that resolves --model.
    named = config_file(tmp_path, llama(_name_or_path="meta-llama/Llama-3.1-70B"), "named.json")
    specs, model_id = resolve_model(builtin_specs(), named)
    assert model_id == "llama-3.1-70b-file"
    assert specs.model("llama-3.1-70b") == builtin_specs().model("llama-3.1-70b")
    assert specs.model(model_id).hidden_size == 4096


def test_a_gpu_file_never_replaces_the_gpu_its_id_names(tmp_path: Path) -> None:
    path = tmp_path / "h100-sxm.toml"
    path.write_text(GPU_TOML.replace('name = "My accelerator"', 'name = "H100 SXM"'))
    specs, gpu_id = resolve_gpu(builtin_specs(), str(path))
    assert gpu_id == "h100-sxm-file" and specs.gpu("h100-sxm") == builtin_specs().gpu("h100-sxm")
    path.write_text(json.dumps({**GPU_JSON, "id": "h100-sxm"}))
    assert resolve_gpu(specs, str(path))[1] == "h100-sxm-file-2"


def test_a_file_of_a_known_model_is_read_as_that_model() -> None:
    """Equal in every field but name and source: the known entry, under its own id, unchanged."""
    specs = builtin_specs()
    assert resolve_model(specs, str(FIXTURES / "llama-3.1-8b.json")) == (specs, "llama-3.1-8b")


def test_unknown_ids_still_get_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8")
    assert_one_line_error(status, err, "--model: unknown model 'llama-3.1-8' (did you mean 'llama-3.1-8b'?)")


def test_a_missing_file_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "models/nope/config.json")
    assert_one_line_error(status, err, "--model: models/nope/config.json: no such file")
    status, _, err = run_cli(capsys, "estimate", "--gpu", "my.toml", "--model", "llama-3.1-8b")
    assert_one_line_error(status, err, "--gpu: my.toml: no such file")


# -- roofline model import ------------------------------------------------------------------------


def test_import_prints_a_checked_entry(capsys: pytest.CaptureFixture[str]) -> None:
    url = "https://huggingface.co/Qwen/Qwen3-32B/blob/main/config.json"
    status, out, err = run_cli(capsys, "model", "import", str(QWEN3), "--id", "my-qwen", "--source", url)
    assert status == 0, err
    assert '[model."my-qwen"]' in out and f'source = "{url}"' in out and "qk_norm = true" in out
    assert out.startswith("# Written by `roofline model import`")


def test_import_writes_a_new_file_usable_with_specs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "mine.toml"
    status, out, err = run_cli(capsys, "model", "import", str(FIXTURES / "gpt-oss-20b.json"), "-o", str(target))
    assert status == 0, err
    assert f'{target}: wrote [model."gpt-oss-20b"]' in out and "20.9B parameters" in out
    status, out, err = run_cli(capsys, "validate", str(target))
    assert status == 0 and "ok (0 GPUs, 1 models)" in out
    status, out, err = run_cli(
        capsys, "estimate", "--gpu", "h100-sxm", "--model", "gpt-oss-20b", "--specs", str(target), "--json"
    )
    assert status == 0, err
    assert json.loads(out)["kv_bytes_per_token"] == 2 * 24 * 8 * 64 * 2
    status, _, err = run_cli(capsys, "model", "import", str(QWEN3), "-o", str(target))
    assert_one_line_error(status, err, f"{target}: exists already (name a new file, or delete this one)")


def test_import_refuses_a_bad_id(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, "model", "import", str(QWEN3), "--id", "My Qwen!")
    assert_one_line_error(status, err, "bad id", "for example 'my-qwen'")


# -- Bad input: one line naming the fix -----------------------------------------------------------


def test_unknown_architecture_lists_the_supported_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = config_file(tmp_path, llama(architectures=["FalconForCausalLM"]))
    status, _, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", path)
    assert_one_line_error(
        status,
        err,
        "field 'architectures': unknown architecture 'FalconForCausalLM'",
        "supported: " + ", ".join(FAMILIES),
    )


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"num_hidden_layers": None}, "field 'num_hidden_layers': is missing (every Llama config states it"),
        ({"hidden_size": "4096"}, "field 'hidden_size': must be a whole number, got '4096'"),
        ({"intermediate_size": 14336.5}, "field 'intermediate_size': must be a whole number, got 14336.5"),
        ({"vocab_size": True}, "field 'vocab_size': must be a whole number, got True"),
        ({"num_key_value_heads": 5}, "field 'num_key_value_heads': must divide num_attention_heads (32) evenly, got 5"),
        (
            {"num_hidden_layers": 10**6},
            "field 'num_hidden_layers': must be at most 10,000, got 1000000 (roofline's layers)",
        ),
        ({"num_attention_heads": 0}, "field 'num_attention_heads': must be at least 1, got 0"),
        ({"tie_word_embeddings": "no"}, "field 'tie_word_embeddings': must be true or false, got 'no'"),
        ({"architectures": "LlamaForCausalLM"}, "field 'architectures': must be a list of class names"),
        ({"architectures": None}, "field 'architectures': is missing (supported: LlamaForCausalLM"),
        ({"mlp_bias": True}, "field 'mlp_bias': is true: biases on the MLP's projections are not counted"),
    ],
)
def test_bad_keys_are_named(change: dict, fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = config_file(tmp_path, llama(**change))
    status, out, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", path)
    assert_one_line_error(status, err, f"--model: {path}: {fragment}")
    assert out == ""


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("num_hidden_layers = 32\n", "is not JSON: Expecting value at line 1, column 1"),
        ('{"architectures": ["LlamaForCausalLM"],}', "is not JSON: Expecting property name enclosed in double quotes"),
        ("[1, 2]", "must be a JSON object {...}, got an array"),
        ('{"a": 1, "a": 2}', "is not a usable config.json: the key 'a' appears twice"),
        ('{"hidden_size": NaN}', "is not a usable config.json: NaN is not a JSON number"),
        ('{"hidden_size": ' + "9" * 5000 + "}", "is not a usable config.json: Exceeds the limit (4300 digits)"),
        ("[" * 100_000 + "]" * 100_000, "is not a config.json: arrays or tables nested more than 64 deep"),
        ("", "is not JSON: Expecting value at line 1, column 1"),
    ],
)
def test_a_file_that_is_not_a_config(
    text: str, fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_file(tmp_path, text)
    status, _, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", path)
    assert_one_line_error(status, err, fragment)


def test_a_100_mb_file_is_refused_by_its_size_before_parsing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A weights shard given by mistake: refused from its first megabyte, quickly."""
    path = tmp_path / "model-00001-of-00004.json"
    with path.open("wb") as handle:
        handle.write(b"{" + b" " * 1000)
        handle.truncate(100_000_000)  # sparse: 100 MB that costs no disk
    start = time.perf_counter()
    status, _, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", str(path))
    assert time.perf_counter() - start < 5  # generous: the bound is "not read whole", not a speed goal
    assert_one_line_error(status, err, "is larger than 1 MB, too large for a config.json (a config.json is a few kB")
    with pytest.raises(SpecError, match=r"too large for a config\.json"):
        parse_config("{" + " " * MAX_CONFIG_BYTES + "}")


def test_hostile_text_is_escaped_everywhere_it_is_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Terminal escapes, a right-to-left override and newlines in keys, values and paths stay one
    escaped line in errors, and in the model's name and source when they are shown."""
    hostile = "Evil\x1b[2J\u202e\nForCausalLM"
    path = config_file(tmp_path, llama(architectures=[hostile]))
    status, _, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", path)
    assert_one_line_error(status, err, "unknown architecture 'Evil\\x1b[2J\\u202e\\nForCausalLM'")
    assert "\x1b" not in err and "\u202e" not in err
    path = config_file(tmp_path, llama(hidden_size="\x1b]0;owned\x07"))
    status, _, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", path)
    assert_one_line_error(status, err, "field 'hidden_size': must be a whole number, got '\\x1b]0;owned\\x07'")
    folder = tmp_path / "bad\u202ename\x1b[31m"
    folder.mkdir()
    path = config_file(folder, llama(_name_or_path="meta/\u202eLlama\nInjected"))
    status, out, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", path)
    assert status == 0, err
    assert "\u202e" not in out and "\x1b" not in out and "\\u202eLlama\\nInjected" in out
    status, out, err = run_cli(capsys, "model", "import", path)
    assert status == 0, err
    assert "\u202e" not in out and "\x1b" not in out
    entry = parse_specs(out, "imported.toml").models["u202ellama-ninjected"]
    assert entry.name == "\\u202eLlama\\nInjected" and "\\u202ename\\x1b[31m" in entry.source


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (GPU_TOML.replace("memory_bytes = 96e9\n", ""), "field 'memory_bytes': is missing"),
        (GPU_TOML.replace("96e9", '"96 GB"'), "field 'memory_bytes': must be a number, got '96 GB'"),
        (
            GPU_TOML.replace("bandwith", "x").replace("bandwidth_bytes_per_s", "bandwith_bytes_per_s"),
            "did you mean 'bandwidth_bytes_per_s'",
        ),
        (GPU_TOML.replace("bf16 = 900e12\n", ""), "needs a 16-bit peak (bf16 or fp16)"),
        (GPU_TOML + "id = 'My GPU'\n", "field 'dense_flops_per_s.id'"),
        ('id = "My GPU"\n' + GPU_TOML, "field 'id': bad id"),
        ("{", "is not JSON: Expecting property name"),
        (
            '[gpu."a"]\n' + GPU_TOML.replace("[dense", '[gpu."a".dense') + '[gpu."b"]\nname = "b"\n',
            "[gpu.\"a\"]: field 'source': is missing",
        ),
    ],
)
def test_bad_gpu_files_are_named(text: str, fragment: str) -> None:
    with pytest.raises(SpecError) as raised:
        parse_gpu_text(text, "gpu.toml")
    assert fragment in str(raised.value) and str(raised.value).startswith("gpu.toml")


def test_a_gpu_file_with_two_entries_is_refused() -> None:
    one = '[gpu."a"]\nsource = "s"\n' + GPU_TOML.replace("[dense_flops_per_s]", '[gpu."a".dense_flops_per_s]')
    two = one + one.replace('"a"', '"b"')
    with pytest.raises(SpecError, match="holds 2 GPU entries and more; a GPU file holds one"):
        parse_gpu_text(two, "gpu.toml")


def test_gpu_resolver_keeps_ids(tmp_path: Path) -> None:
    specs = builtin_specs()
    assert resolve_gpu(specs, "h100-sxm") == (specs, "h100-sxm")
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(GPU_JSON))
    specs2, gpu_id = resolve_gpu(specs, str(path))
    assert gpu_id == "my-gpu" and specs2.gpu("my-gpu").source == "https://example.com/datasheet"
    assert specs2.origins['[gpu."my-gpu"]'] == str(path)


def test_paths_are_never_fetched(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A Hugging Face repo name is not a file: it is an unknown id, and nothing touches the network."""
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("network used")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    status, _, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "meta-llama/Llama-3.1-8B")
    assert_one_line_error(status, err, "--model: meta-llama/Llama-3.1-8B: no such file")
    assert not os.path.exists("meta-llama")


def test_a_downloaded_model_folder_is_read_through_its_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Hugging Face download keeps config.json beside the weights: the folder names the model."""
    folder = tmp_path / "Qwen3-32B"
    folder.mkdir()
    (folder / "config.json").write_text(QWEN3.read_text())
    status, out, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", str(folder), "--json")
    assert status == 0, err
    assert json.loads(out)["model"] == "qwen3-32b"
    empty = tmp_path / "empty"
    empty.mkdir()
    status, _, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", str(empty))
    assert_one_line_error(status, err, f"--model: {empty}: is a directory, not a config.json")


# -- The weights' format a config publishes ----------------------------------------------------------


def test_a_quantized_config_is_read_at_its_published_format(capsys: pytest.CaptureFixture[str]) -> None:
    """DeepSeek-V3's published config is fp8 in 128 × 128 blocks: 671 GB of weights, not 1,342 GB of bf16,
    on every command that takes --precision; a --precision given wins."""
    deepseek = str(FIXTURES / "deepseek-v3.json")
    status, out, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--gpus", "8", "--model", deepseek)
    assert status == 0, err
    assert "  weights              671.2 GB (fp8-block)" in out.splitlines()
    status, out, err = run_cli(
        capsys, "estimate", "--gpu", "h100-sxm", "--gpus", "8", "--model", deepseek, "--precision", "bf16"
    )
    assert status == 0, err
    assert "  weights              1,342.1 GB (bf16)" in out.splitlines()
    status, out, err = run_cli(
        capsys, "simulate", "--gpu", "h200", "--gpus", "8", "--model", deepseek, "--requests", "5", "--json"
    )
    assert status == 0, err
    status, out, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", str(FIXTURES / "gpt-oss-20b.json"))
    assert status == 0, err
    assert "(mxfp4)" in out.splitlines()[1]


def test_a_quantization_without_a_matching_precision_names_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_file(tmp_path, llama(quantization_config={"quant_method": "bitsandbytes", "load_in_4bit": True}))
    status, _, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", path)
    assert_one_line_error(
        status,
        err,
        f"--model: {path}: field 'quantization_config': quant_method 'bitsandbytes' has no matching precision",
        "give the weights' format with --precision",
    )
    status, out, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", path, "--precision", "int4")
    assert status == 0, err
    assert "(int4)" in out.splitlines()[1]
    status, out, err = run_cli(capsys, "table", "--format", "csv", "--model", path)  # names its own precisions
    assert status == 0, err


def test_import_takes_the_folder_that_model_takes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "Qwen3-32B"
    folder.mkdir()
    (folder / "config.json").write_text(QWEN3.read_text())
    status, out, err = run_cli(capsys, "model", "import", str(folder))
    assert status == 0, err
    assert '[model."qwen3-32b"]' in out
    status, _, err = run_cli(capsys, "model", "import", str(tmp_path))  # no config.json in it
    assert_one_line_error(status, err, f"{tmp_path}: is a directory, not a config.json")


@pytest.mark.parametrize(
    ("option", "value", "fragment"),
    [
        ("--source", "javascript:alert(1)", "field 'source': must be an http(s) URL, got 'javascript:alert(1)'"),
        ("--source", "file:///etc/passwd", "must be an http(s) URL"),
        ("--source", "https://", "must be an http(s) URL"),
        ("--source", "data:text/html,<script>", "must be an http(s) URL"),
        ("--source", "https://example.com/" + "a" * 5000, "must be at most 2,000 characters, got 5,020"),
        ("--id", "", "--id: bad id"),
        ("--id", "My Qwen", "--id: bad id"),
    ],
)
def test_import_refuses_a_source_that_is_no_web_address_and_an_empty_id(
    option: str, value: str, fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run_cli(capsys, "model", "import", str(QWEN3), option, value)
    assert_one_line_error(status, err, fragment)
    assert out == ""


@pytest.mark.parametrize(
    ("name", "text", "fragments"),
    [
        ("empty.toml", "", ("is empty", "name, memory_bytes, bandwidth_bytes_per_s, dense_flops_per_s")),
        ("empty.json", "{}", ("is empty",)),
        ("table.toml", "[1]\n", ("field '1': unknown key", "optional: memory_note")),
        (
            "extra.toml",
            GPU_TOML.replace("[dense_flops_per_s]", "foo = 1\n[dense_flops_per_s]"),
            ("field 'foo': unknown key", "optional: memory_note", "interconnect", "host_link_bytes_per_s"),
        ),
        (
            "null.json",
            json.dumps({**GPU_JSON, "memory_bytes": None}),
            ("field 'memory_bytes': is null (give it a number",),
        ),
        ("text.json", json.dumps({**GPU_JSON, "name": None}), ("field 'name': is null (give it a text",)),
    ],
)
def test_a_gpu_files_errors_name_the_file_and_field_and_the_fix(
    name: str, text: str, fragments: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Never 'got None', and an unknown key lists every key a GPU file may hold, the optional ones too."""
    path = tmp_path / name
    path.write_text(text)
    status, _, err = run_cli(capsys, "estimate", "--gpu", str(path), "--model", "llama-3.1-8b")
    assert_one_line_error(status, err, f"--gpu: {path}: ", *fragments)
    assert "None" not in err
