"""The reader's own GPU and model in every calculator ("Your GPU…", "Your model…"), in CPython.

The page sends the pasted text with the inputs; ``roofline_views.answer`` reads it with the
package's own readers (``ownspecs.own_entry``) and the view finds it in ``FORM.specs()``. The
browser half (paste, storage, the link's hash) is ``test_own_entries_browser.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from roofline import SpecError, builtin_specs
from roofline.forms import Field, Form, InputError, Output, Rule, own_entries
from roofline.loader import SpecSet
from roofline.ownspecs import FILL_IN, FILL_IN_BASE, own_entry

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "docs" / "javascripts" / "runtime"), str(ROOT / "scripts")]

import roofline_views  # noqa: E402

from sitegen.pages import chapters  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "hfconfig"
MODEL_TEXT = (FIXTURES / "qwen3-32b.json").read_text(encoding="utf-8")
GPU_TEXT = json.dumps(
    {
        "name": "My <b>GPU</b>",
        "memory_bytes": 192e9,
        "bandwidth_bytes_per_s": 8e12,
        "dense_flops_per_s": {"bf16": 2250e12, "fp8": 4500e12},
    }
)
MODEL_ID, GPU_ID = "own-0000aaaa", "own-0000bbbb"
CALCULATORS = {name: chapter.calculator(name) for chapter in chapters(ROOT / "docs") for name in chapter.calculators}


@pytest.fixture(autouse=True)
def registered() -> None:
    """Every calculator module where ``answer`` imports it, as the worker writes it."""
    for name, module in CALCULATORS.items():
        sys.modules[roofline_views.MODULE_PREFIX + name] = module


def ask(name: str, request: dict, own: dict | None = None) -> dict:
    return json.loads(roofline_views.answer(name, json.dumps(request), json.dumps(own) if own else ""))


@pytest.mark.parametrize("name", sorted(CALCULATORS))
def test_every_calculator_offers_your_gpu_and_your_model(name: str) -> None:
    owns = sorted(CALCULATORS[name].FORM.owns.values())
    missing = [kind for kind in ("gpu", "model") if kind not in owns]
    assert not missing, (
        f"calculator {name!r} has no {' and no '.join(f'Field.{kind}' for kind in missing)} field: add "
        + " and ".join(WHAT_TO_ADD[kind] for kind in missing)
        + " to its FORM's fields, and look the value up in FORM.specs() in the view"
        + " (README, 'The rules a chapter meets')"
    )
    assert owns == ["gpu", "model"], f"calculator {name!r}: one Field.gpu and one Field.model, not {owns}"


#: What a calculator without the reader's own GPU or model adds, as the README's worked example does.
WHAT_TO_ADD = {
    "gpu": 'Field.gpu("gpu", "GPU", SPECS, default="h100-sxm")',
    "model": 'Field.model("model", "Model", SPECS, default="llama-3.1-8b")',
}


def offers_both_or_skip(name: str) -> None:
    """A test of what the reader's own GPU and model change needs both fields: without them it is
    skipped, naming the test that says what to add (rather than failing on a missing key)."""
    if sorted(CALCULATORS[name].FORM.owns.values()) != ["gpu", "model"]:
        pytest.skip(
            f"calculator {name!r} lacks Field.gpu or Field.model: "
            "see test_every_calculator_offers_your_gpu_and_your_model"
        )


@pytest.mark.parametrize("name", sorted(CALCULATORS))
def test_a_pasted_config_and_gpu_file_change_every_calculator_s_numbers(name: str) -> None:
    offers_both_or_skip(name)
    form = CALCULATORS[name].FORM
    before = ask(name, form.defaults)
    request, own = dict(form.defaults), {}
    for field, kind in form.owns.items():
        request[field] = GPU_ID if kind == "gpu" else MODEL_ID
        own[kind] = {"id": request[field], "text": GPU_TEXT if kind == "gpu" else MODEL_TEXT}
    after = ask(name, request, own)
    assert "error" not in after, after
    assert {kind: (entry["id"], entry["name"]) for kind, entry in after["own"].items()} == {
        "gpu": (GPU_ID, "My <b>GPU</b>"),
        "model": (MODEL_ID, "Your model (Qwen3)"),
    }
    # What the package read, for the line under the box (issue 40): the file's own numbers.
    assert after["own"]["model"]["read"].startswith(
        "Read: Your model (Qwen3): 64 layers, hidden size 5,120, 64 attention heads, 8 KV heads, head size 128,"
        " MLP size 25,600, vocabulary 151,936,"
    )
    assert after["own"]["gpu"]["read"] == (
        "Read: My <b>GPU</b>: memory 192.0 GB; bandwidth 8.00 TB/s; dense peak 2,250 TFLOP/s bf16, 4,500 TFLOP/s fp8."
    )
    changed = [key for key in (output.name for output in form.outputs) if after[key] != before[key]]
    assert len(changed) >= 3, (
        f"calculator {name!r}: only {changed or 'no output'} changed with the reader's GPU and model; "
        "give it at least 3 outputs that depend on them (sizes on the model, times on both, shares of the GPU's memory)"
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{", "your config.json: is not JSON: Expecting property name"),
        ("[1]", "your config.json: must be a JSON object"),
        (json.dumps({"architectures": ["<img src=x onerror=alert(1)>"]}), "unknown architecture '<img src=x"),
        (MODEL_TEXT.replace('"hidden_size"', '"hidden_sise"'), "field 'hidden_size': is missing"),
        (MODEL_TEXT.replace('"num_key_value_heads": 8', '"num_key_value_heads": 7'), "num_key_value_heads"),
        (MODEL_TEXT.replace('"num_hidden_layers": 64', '"num_hidden_layers": "64<b>"'), "num_hidden_layers"),
    ],
)
def test_a_malformed_paste_answers_one_line_naming_the_key_and_no_result(text: str, says: str) -> None:
    form = CALCULATORS["decode_speed"].FORM
    answer = ask("decode_speed", {**form.defaults, "model": MODEL_ID}, {"model": {"id": MODEL_ID, "text": text}})
    assert set(answer) == {"error", "own"} and answer["own"] == "model"
    assert says in answer["error"] and "\n" not in answer["error"] and len(answer["error"]) < 500


def test_a_100_mb_paste_is_refused_by_its_size_before_it_is_read() -> None:
    text = "{" + " " * 100_000_000 + "}"
    with pytest.raises(SpecError, match=r"larger than 1 MB, too large for a config\.json"):
        own_entry("model", MODEL_ID, text)


def test_a_request_naming_an_entry_it_does_not_carry_is_refused_under_the_field() -> None:
    form = CALCULATORS["kv_budget"].FORM
    answer = ask("kv_budget", {**form.defaults, "gpu": GPU_ID})
    assert answer["fields"] == ["gpu"] and "this request does not carry" in answer["error"]
    bad = ask("kv_budget", {**form.defaults, "gpu": "own-xyz"})
    assert bad["fields"] == ["gpu"] and "one of the choices" in bad["error"]


def test_the_typed_numbers_read_as_a_paste_of_their_keys() -> None:
    """What the page writes from the typed numbers (own.mjs, typedText) is a text the readers take."""
    model = dict(FILL_IN_BASE["model"], **{key: 8 if "heads" in key else 4096 for key, *_ in FILL_IN["model"]})
    assert own_entry("model", MODEL_ID, json.dumps(model)).layers == 4096
    gpu = dict(FILL_IN_BASE["gpu"], memory_bytes=80e9, bandwidth_bytes_per_s=3e12, dense_flops_per_s={"bf16": 1e15})
    assert own_entry("gpu", GPU_ID, json.dumps(gpu)).name == "Your GPU (typed)"
    assert {key.split(".")[0] for key, *_ in FILL_IN["gpu"]} <= {
        "memory_bytes",
        "bandwidth_bytes_per_s",
        "dense_flops_per_s",
    }


def test_an_allowed_rule_leaves_the_reader_s_entries_to_the_package() -> None:
    """Combinations list built-in entries only; with an own model the package's checks speak."""
    specs = builtin_specs()
    form = Form(
        title="t",
        legend="l",
        fields=[Field.gpu("gpu", "GPU", specs, "h100-sxm"), Field.model("model", "Model", specs, "llama-3.1-8b")],
        outputs=[Output.text("x", "X")],
        rules=[Rule.allowed(("gpu", "model"), [("h100-sxm", "llama-3.1-8b")], "{model} does not fit on {gpu}.")],
    )
    with pytest.raises(InputError, match=r"Llama 3\.1 70B does not fit"):
        form.validate({"gpu": "h100-sxm", "model": "llama-3.1-70b"})
    mine = own_entry("model", MODEL_ID, MODEL_TEXT)
    with own_entries(SpecSet(models={MODEL_ID: mine})):
        assert form.validate({"gpu": "h100-sxm", "model": MODEL_ID})["model"] == MODEL_ID
        assert form.specs().model(MODEL_ID) is mine
    assert MODEL_ID not in form.specs().models  # only for the call that carried it


def test_a_model_too_large_for_the_gpu_is_refused_in_one_line_by_the_package() -> None:
    form = CALCULATORS["serving"].FORM
    big = (FIXTURES / "llama-3.1-405b.json").read_text(encoding="utf-8")
    answer = ask("serving", {**form.defaults, "model": MODEL_ID}, {"model": {"id": MODEL_ID, "text": big}})
    assert "error" in answer and "\n" not in answer["error"], answer
    assert answer["own"]["model"]["id"] == MODEL_ID  # read fine; it is the deployment that fails
