"""Issue 36: request lengths from a trace (``simulate --trace``, roofline/traces.py) and the highest
Poisson rate meeting p99 TTFT and TPOT targets (``simulate --search-rate``, roofline/ratesearch.py,
MLPerf's Server scenario)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from roofline import Hardware, ServingConfig, Workload, builtin_specs
from roofline.ratesearch import LOW_DIVISOR, search_rate
from roofline.serving import MAX_LENGTH_TOKENS, finished_run, simulate
from roofline.traces import MAX_ROW_TOKENS, load_trace, parse_trace
from support import run_cli

SPECS = builtin_specs()
HARDWARE = Hardware(SPECS.gpu("h100-sxm"))
WORKLOAD = Workload(SPECS.model("llama-3.1-8b"), "bf16")
BASE = ["--gpu", "h100-sxm", "--model", "llama-3.1-8b"]
TRACE = load_trace("azure-conv-2023")


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``roofline simulate`` with ``BASE`` and ``args`` (``support.run_cli``)."""
    return run_cli(capsys, "simulate", *BASE, *args)


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    status, out, err = _cli(capsys, *args, "--json")
    assert status == 0, err
    return json.loads(out)


def test_the_shipped_trace_is_the_cited_sample_of_the_azure_conversation_trace() -> None:
    """Every 40th request of the 19,366 in the source, each pair whole; the rows checked at the source
    (its first, 41st, 9,721st and 19,361st data rows) are the file's rows 1, 2, 244 and 485."""
    assert len(TRACE.prompts) == len(TRACE.outputs) == 485 == math.ceil(19366 / 40)
    assert TRACE.source == (
        "https://github.com/Azure/AzurePublicDataset/blob/790921015d50dd6aae7f7e47f39ba0e235ad6b08/data/"
        "AzureLLMInferenceTrace_conv.csv"
    )
    pairs = list(zip(TRACE.prompts, TRACE.outputs, strict=True))
    assert (pairs[0], pairs[1], pairs[243], pairs[484]) == ((374, 44), (437, 88), (910, 91), (997, 454))
    facts = TRACE.facts()
    assert facts["rows"] == 485 and facts["prompt_range"] == [7, 6461] and facts["output_range"] == [12, 659]
    # The sample's means sit within 6 % of the whole trace's, which its header gives (1,154.7 and 211.1).
    assert facts["prompt_mean"] == pytest.approx(1154.7, rel=0.06)
    assert facts["output_mean"] == pytest.approx(211.1, rel=0.06)
    assert MAX_ROW_TOKENS == MAX_LENGTH_TOKENS


def test_a_trace_run_draws_whole_pairs_and_the_same_seed_gives_the_same_run(capsys) -> None:
    config = ServingConfig(requests=300, rate=12.0, trace=TRACE, trace_requests=300)
    run = finished_run(HARDWARE, WORKLOAD, config)
    rows = set(zip(TRACE.prompts, TRACE.outputs, strict=True))
    drawn = list(zip(run.prompt, run.output, strict=True))
    assert all(pair in rows for pair in drawn)
    assert len(set(drawn)) > 150  # many rows drawn, not one repeated
    first = _json(capsys, "--trace", "azure-conv-2023", "--requests", "300", "--rate", "12")
    again = _json(capsys, "--trace", "azure-conv-2023", "--requests", "300", "--rate", "12")
    assert first == again
    assert first["throughput_tokens_per_s"] == pytest.approx(
        simulate(HARDWARE, WORKLOAD, config).throughput_tokens_per_s
    )
    assert first["length_trace"]["name"] == "azure-conv-2023" and first["length_trace"]["rows"] == 485
    other = _json(capsys, "--trace", "azure-conv-2023", "--requests", "300", "--rate", "12", "--seed", "1")
    assert other["throughput_tokens_per_s"] != first["throughput_tokens_per_s"]
    status, out, _ = _cli(capsys, "--trace", "azure-conv-2023", "--requests", "50")
    assert status == 0
    assert "lengths from trace azure-conv-2023 (485 pairs): prompt 7:6461 and output 12:659 tokens" in out


def test_a_trace_file_of_ones_own_is_read_with_comments_and_extra_columns(tmp_path: Path, capsys) -> None:
    path = tmp_path / "mine.csv"
    path.write_text(
        "# my service\n# source: measured on our gateway\nid,prompt_tokens,output_tokens\na,100,20\nb,300,40\n"
    )
    trace = load_trace(str(path))
    assert (trace.prompts, trace.outputs, trace.source) == ((100, 300), (20, 40), "measured on our gateway")
    figures = _json(capsys, "--trace", str(path), "--requests", "40")
    assert figures["completed"] == 40 and figures["length_trace"]["prompt_range"] == [100, 300]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "prompt_tokens,output_tokens\n10,5\n-3,4\n",
            "line 3: prompt_tokens must be from 1 to 10,000,000 tokens, got -3",
        ),
        ("prompt_tokens,output_tokens\n10,0\n", "line 2: output_tokens must be from 1 to 10,000,000 tokens, got 0"),
        ("prompt_tokens,output_tokens\n10,x\n", "line 2: output_tokens must be a whole number of tokens, got 'x'"),
        (
            "prompt_tokens,output_tokens\n10,100000000000\n",
            "line 2: output_tokens must be from 1 to 10,000,000 tokens, got a 12-digit number",
        ),
        ("prompt_tokens,output_tokens\n10\n", "line 2: 1 values under a header of 2"),
        ("prompt,output\n10,5\n", "line 1: the header has no prompt_tokens and no output_tokens column"),
        ("prompt_tokens,output_tokens\n", "has a header on line 1 but no rows"),
        ("# nothing here\n", "holds no header and no rows"),
        (
            "prompt_tokens,output_tokens\n1000000,5\n",
            "1 of its 1 requests is longer than Llama 3.1 8B's limit of 131,072",
        ),
    ],
    ids=["negative", "zero", "not-a-number", "absurd", "short-row", "header", "empty", "no-header", "past-context"],
)
def test_a_bad_trace_is_refused_in_one_line_naming_file_line_and_fix(tmp_path: Path, capsys, text, message) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    status, out, err = _cli(capsys, "--trace", str(path))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"roofline simulate: error: --trace: {path}: ")
    assert message in err and "(" in err  # the fix, in brackets


def test_the_shipped_trace_on_a_short_context_model_and_other_misuse_are_refused(capsys) -> None:
    status, _, err = _cli(capsys, "--model", "llama-2-13b", "--trace", "azure-conv-2023")
    assert status == 2
    assert "32 of its 485 requests are longer than Llama 2 13B's limit of 4,096 tokens (max_context)" in err
    assert "use a model with a longer context" in err
    for args, line in (
        (["--trace", "azure-conv-2023", "--prompt", "5"], "--prompt: cannot be combined with --trace"),
        (["--trace", "sharegpt"], "--trace: unknown trace 'sharegpt' (give a built-in trace (azure-conv-2023)"),
        (["--trace", "/no/such/trace.csv"], "--trace: /no/such/trace.csv: no such file"),
    ):
        status, _, err = _cli(capsys, *args)
        assert status == 2 and line in err and err.count("\n") == 1
    with pytest.raises(ValueError, match="line 2"):
        parse_trace("prompt_tokens,output_tokens\n1.5,2\n", "inline")


def test_the_rate_search_finds_the_highest_rate_meeting_both_p99_targets(capsys) -> None:
    args = ["--trace", "azure-conv-2023", "--requests", "600", "--search-rate", "--ttft-slo", "0.3"]
    figures = _json(capsys, *args, "--tpot-slo", "0.03")
    search = figures["rate_search"]
    tried = search["tried"]
    assert search["runs"] == len(tried) == 10  # the default: the saturating run and 9 rates
    assert tried[0]["rate"] is None and tried[1]["rate"] == pytest.approx(
        search["capacity_requests_per_s"] / LOW_DIVISOR
    )
    meeting = [t["rate"] for t in tried if t["meets"]]
    failing = [t for t in tried[1:] if not t["meets"]]
    assert search["rate_found"] == max(meeting) and figures["rate"] == search["rate_found"]
    # The run reported is the found rate's, and it meets both targets; the lowest failing rate above it
    # is the next one tried, and the target it missed is the one that binds.
    assert figures["ttft_p99_s"] <= 0.3 and figures["tpot_p99_s"] <= 0.03
    above = min(failing, key=lambda t: t["rate"])
    assert above["rate"] > search["rate_found"] and search["binds"] == above["missed"] == ["ttft"]
    assert above["ttft_p99_s"] > 0.3
    assert (search["ttft_p99_slo_s"], search["tpot_p99_slo_s"]) == (0.3, 0.03)
    # Bisection halves the bracket each run: after 7 of them it is within 1 % of the capacity.
    assert above["rate"] - search["rate_found"] <= search["capacity_requests_per_s"] / 2**7
    status, out, _ = _cli(capsys, *args, "--tpot-slo", "0.03")
    assert status == 0
    assert (
        "Rate search (MLPerf Server): the highest Poisson rate with p99 TTFT ≤ 300.0 ms and p99 TPOT ≤ 30.0 ms" in out
    )
    assert "p99 TTFT binds" in out and "depends on the scheduler" in out


def test_the_rate_search_works_with_replicas_and_the_expected_costs(capsys) -> None:
    args = [
        "--trace",
        "azure-conv-2023",
        "--requests",
        "800",
        "--search-rate",
        "--ttft-slo",
        "0.3",
        "--tpot-slo",
        "0.03",
    ]
    one = _json(capsys, *args)["rate_search"]
    assert one["binds"] == ["ttft"] and not one["capped_at_capacity"]
    four = _json(capsys, *args, "--replicas", "4", "--costs", "expected")
    assert four["fleet"]["replicas"] == 4
    search, expected = four["rate_search"], four["rate_search"]["expected"]
    assert search["rate_found"] > 3 * one["rate_found"]
    # Four replicas fed round-robin meet the targets up to their capacity over 800 requests: the search
    # stops there and says so, rather than trying rates no fleet sustains.
    assert search["capped_at_capacity"] and search["binds"] is None and search["runs"] == 3
    assert search["rate_found"] == search["capacity_requests_per_s"]
    assert 0 < expected["rate_found"] < search["rate_found"]  # the fitted costs are slower than the ceiling
    status, out, _ = _cli(capsys, *args, "--replicas", "4")
    assert status == 0 and "neither target binds up to the capacity" in out


def test_targets_no_rate_meets_and_conflicting_options_are_refused_in_one_line(capsys) -> None:
    status, _, err = _cli(capsys, "--search-rate", "--requests", "200", "--ttft-slo", "0.001")
    assert status == 2 and err.count("\n") == 1
    assert "--ttft-slo: cannot be met even at the lowest rate tried" in err and "p99 TTFT" in err
    assert "loosen the target" in err
    for args, line in (
        (["--search-rate", "--rate", "3"], "--rate: cannot be combined with --search-rate"),
        (["--search-rate", "--concurrency", "3"], "--concurrency: cannot be combined with --search-rate"),
        (["--search-tries", "5"], "--search-tries: only a rate search makes several runs"),
        (["--search-rate", "--search-tries", "2"], "--search-tries"),
    ):
        status, _, err = _cli(capsys, *args)
        assert status == 2 and line in err, err


def test_search_rate_is_deterministic_and_monotone_in_the_bracket() -> None:
    def run(rate: float):
        config = ServingConfig(requests=1000, rate=rate, trace=TRACE)
        return simulate(HARDWARE, WORKLOAD, config)

    first = search_rate(run, 0.15, 0.03, tries=8)
    again = search_rate(run, 0.15, 0.03, tries=8)
    assert first.to_dict() == again.to_dict() and len(first.trials) == 8
    passed = sorted(t.rate for t in first.trials if t.meets)
    failed = sorted(t.rate for t in first.trials[1:] if not t.meets)
    assert passed[-1] == first.rate and (not failed or failed[0] > passed[-1])


def test_the_capacity_counts_every_request_served_whatever_the_warmup(capsys) -> None:
    """The saturating run is made without the warm-up: its requests would be served, not counted, and
    the capacity would read a sixth low at --warmup 100 --requests 500."""
    args = ["--trace", "azure-conv-2023", "--requests", "500", "--search-rate", "--ttft-slo", "0.2"]
    plain = _json(capsys, *args, "--tpot-slo", "0.02")["rate_search"]
    warm = _json(capsys, *args, "--tpot-slo", "0.02", "--warmup", "100")
    assert warm["rate_search"]["capacity_requests_per_s"] == plain["capacity_requests_per_s"]
    assert warm["fleet"]["warmup_requests"] == 100 and warm["rate_search"]["binds"] == ["ttft"]
