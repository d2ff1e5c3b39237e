""" "Does not fit" advice uses the memory model of "most users that fit" (issue 25, W1): every remedy,
applied alone on the command line, is accepted and fits; the users it offers are the report's own
"most users that fit"; the context it offers is the longest that fits. Drawn over sliding-window
models, shared prefixes, KV formats, GPU counts and usable fractions, not only the report's cases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from roofline import builtin_specs, estimate, memory_shortfall
from roofline.cli import main
from sitegen.pages import find

ROOT = Path(__file__).resolve().parent.parent
MODELS = sorted(builtin_specs().models)
GPUS = ("h100-sxm", "a100-80gb", "b200")


def cli(capsys: pytest.CaptureFixture[str], settings_: dict[str, object]) -> tuple[int, str, str]:
    argv = ["estimate"]
    for key, value in settings_.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def line(report: str, label: str) -> str:
    found = re.search(rf"^  {label} +(.*)$", report, re.M)
    return found.group(1) if found else ""


def applied(remedy: str, base: dict[str, object]) -> dict[str, object]:
    """The command-line settings with ``remedy`` applied, exactly as a reader would type them."""
    change = dict(base)
    if match := re.fullmatch(
        r"shorten the context to ([\d,]+) tokens or fewer( \(and the shared prefix with it\))?", remedy
    ):
        change["context"] = int(match.group(1).replace(",", ""))
        change["shared_prefix"] = min(int(base.get("shared_prefix", 0)), change["context"])
        assert bool(match.group(2)) == (change["shared_prefix"] < int(base.get("shared_prefix", 0))), remedy
    elif match := re.fullmatch(r"serve at most ([\d,]+) users? at this context", remedy):
        change["batch"] = int(match.group(1).replace(",", ""))
    elif match := re.fullmatch(r"cache keys and values in (\w+) .*", remedy):
        change["kv_precision"] = match.group(1)
    elif match := re.fullmatch(r"store the weights in (\w+)", remedy):
        change["precision"] = match.group(1)
    elif match := re.fullmatch(r"use ([\d,]+) GPUs of this kind", remedy):
        change["gpus"] = int(match.group(1).replace(",", ""))
    else:
        raise AssertionError(f"unrecognised remedy {remedy!r}")
    return change


def as_estimate(settings_: dict[str, object]):
    """The package's estimate for the command-line settings (``precision`` is the weights')."""
    options = {key: value for key, value in settings_.items() if key not in ("gpu", "model")}
    return estimate(settings_["gpu"], settings_["model"], **options)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    gpu=st.sampled_from(GPUS),
    model=st.sampled_from(MODELS),
    gpus=st.sampled_from([1, 2, 8]),
    batch=st.integers(1, 4000),
    context=st.integers(2, 2_000_000),
    prefix_share=st.sampled_from([0.0, 0.0, 0.25, 0.5, 0.9, 1.0]),
    kv_precision=st.sampled_from(["bf16", "fp8"]),
    usable=st.sampled_from([0.3, 0.6, 0.9]),
)
@example(
    gpu="h100-sxm",
    model="gemma-2-9b",
    gpus=1,
    batch=5,
    context=100_000,
    prefix_share=0.0,
    kv_precision="bf16",
    usable=0.9,
)
@example(
    gpu="h100-sxm",
    model="gemma-2-9b",
    gpus=1,
    batch=40,
    context=300_000,
    prefix_share=0.5,
    kv_precision="bf16",
    usable=0.9,
)
@example(
    gpu="h100-sxm",
    model="llama-3.1-8b",
    gpus=1,
    batch=64,
    context=90_000,
    prefix_share=0.9,
    kv_precision="bf16",
    usable=0.3,
)
@example(
    gpu="a100-80gb",
    model="mistral-7b",
    gpus=1,
    batch=300,
    context=40_000,
    prefix_share=0.25,
    kv_precision="fp8",
    usable=0.6,
)
def test_every_remedy_is_accepted_by_the_cli_and_fits(
    capsys, gpu, model, gpus, batch, context, prefix_share, kv_precision, usable
) -> None:
    base = {
        "gpu": gpu,
        "model": model,
        "gpus": gpus,
        "batch": batch,
        "context": context,
        "shared_prefix": int(context * prefix_share),
        "kv_precision": kv_precision,
        "usable_fraction": usable,
    }
    status, report, err = cli(capsys, base)
    assert status == 0, err
    result = as_estimate(base)
    shortfall = memory_shortfall(result)
    if shortfall is None:
        assert line(report, "fits") == "yes"
        return
    assert line(report, "to fit") == "; or ".join(shortfall.remedies)
    most = result.memory.max_batch
    for remedy in shortfall.remedies:
        change = applied(remedy, base)
        status, after, err = cli(capsys, change)
        assert status == 0, (remedy, err)  # never a setting the command then refuses
        assert line(after, "fits") == "yes", (remedy, line(after, "fits"))
        if "users" in remedy or "user " in remedy:
            # The same number as the report's "most users that fit", by the same memory model.
            assert change["batch"] == most and line(report, "most users that fit").startswith(f"{most:,} at ")
        if "shorten the context" in remedy:
            longer = dict(change, context=change["context"] + 1)
            longer["shared_prefix"] = min(base["shared_prefix"], longer["context"])
            assert not as_estimate(longer).memory.fits, remedy  # the longest, not merely one that fits
    if most and most < batch:
        assert any(remedy.startswith(f"serve at most {most:,} user") for remedy in shortfall.remedies)


def test_the_calculator_gives_the_same_advice_as_the_report() -> None:
    view = find(ROOT / "docs", "prefill-vs-decode").calculator("decode_speed").view
    answer = view(gpu="h100-sxm", model="gemma-2-9b", precision="bf16", gpus=1, users=40, context=100_000)
    shortfall = memory_shortfall(estimate("h100-sxm", "gemma-2-9b", batch=40, context=100_000))
    assert shortfall.sentence() in answer["explain"]
    assert (
        f"serve at most {estimate('h100-sxm', 'gemma-2-9b', batch=40, context=100_000).memory.max_batch:,}"
        in answer["explain"]
    )
