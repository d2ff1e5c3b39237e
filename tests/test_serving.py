"""The serving simulator against queueing theory and against the package's own roofline.

Properties, checked with hypothesis over traffic, lengths, batch sizes and built-in models:
Little's law, the low-rate limit (chapter 1's prefill and batch-1 decode step), the
saturation ceiling, continuous against static, chunked against continuous, memory
admission, determinism; then the ``roofline simulate`` command and its bad input.
"""

from __future__ import annotations

import json
import math
import random
from itertools import pairwise

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from roofline import (
    GpuSpec,
    Hardware,
    Lengths,
    ServingConfig,
    Workload,
    builtin_specs,
    decode_step,
    gpus_to_fit,
    iteration_costs,
    parse_lengths,
    prefill_pass,
    serving,
    simulate,
    weight_bytes,
)
from roofline.cli import main
from roofline.errors import SpecError
from roofline.serving import BLOCK_TOKENS, kv_blocks_available, percentile

SPECS = builtin_specs()
H100 = Hardware(SPECS.gpu("h100-sxm"))
LLAMA_8B = Workload(SPECS.model("llama-3.1-8b"))
#: Every built-in model, on enough H100s to hold its weights with room for long contexts.
DEPLOYMENTS = [
    (Hardware(H100.gpu, gpus_to_fit(H100, Workload(model, batch=8, context=32768))), Workload(model))
    for model in SPECS.models.values()
    if not model.sliding_window  # the simulator refuses windowed layers (see serving.simulate)
]
SIMULATION = settings(max_examples=12, deadline=None)
#: Cheap properties: more examples; no deadline, as the machines running them are shared.
QUICK = settings(max_examples=60, deadline=None)
POLICY = st.sampled_from(("static", "continuous", "chunked"))


def run(config: ServingConfig, hardware: Hardware = H100, workload: Workload = LLAMA_8B):
    return simulate(hardware, workload, config)


# -- one package, one answer --------------------------------------------------------------------


@QUICK
@given(
    deployment=st.sampled_from(DEPLOYMENTS),
    batch=st.integers(1, 512),
    context=st.integers(0, 65536),
    prompt=st.integers(1, 32768),
)
def test_an_iteration_of_decodes_or_one_prompt_is_the_decode_step_or_the_prefill(
    deployment: tuple[Hardware, Workload], batch: int, context: int, prompt: int
) -> None:
    hardware, workload = deployment
    costs = iteration_costs(hardware, workload)
    decodes = costs.iteration(batch, batch * context)
    expected = decode_step(hardware, Workload(workload.model, batch=batch, context=context))
    assert decodes.bytes_moved == pytest.approx(expected.bytes_moved, rel=1e-12)
    assert decodes.flops == pytest.approx(expected.flops, rel=1e-12)
    pairs = prompt * (prompt + 1) / 2
    one_prompt = costs.iteration(0, 0, prefill_tokens=prompt, prefill_pairs=pairs, prompts_finished=1)
    expected = prefill_pass(hardware, Workload(workload.model, prompt=prompt))
    assert one_prompt.seconds == pytest.approx(expected.seconds, rel=1e-12)
    assert one_prompt.bytes_moved == pytest.approx(expected.bytes_moved, rel=1e-12)


@SIMULATION
@given(
    deployment=st.sampled_from(DEPLOYMENTS),
    policy=POLICY,
    prompt=st.integers(1, 4096),
    output=st.integers(2, 300),
    seed=st.integers(0, 2**32),
)
def test_at_a_low_rate_ttft_is_the_prefill_and_tpot_the_batch_1_decode_step(
    deployment: tuple[Hardware, Workload], policy: str, prompt: int, output: int, seed: int
) -> None:
    """Requests a thousand service times apart on average never meet: each waits for nothing, its
    first token takes chapter 1's prefill of its prompt, and each later token one batch-1 decode
    step at its length then (prompt + tokens so far), so TPOT is their mean. Arrivals are Poisson,
    so about one draw in seventy brings two requests within a service time of each other; such
    a draw is set aside, not counted."""
    hardware, workload = deployment
    model = workload.model
    prefill_s = prefill_pass(hardware, Workload(model, prompt=prompt)).seconds
    steps = [decode_step(hardware, Workload(model, context=prompt + made)).seconds for made in range(1, output)]
    alone_s = prefill_s + sum(steps)
    config = ServingConfig(
        policy=policy,
        rate=1 / (1000 * alone_s),
        requests=15,
        prompt=Lengths(prompt, prompt),
        output=Lengths(output, output),
        token_budget=max(prompt, 65),  # a whole prompt in one chunk: chunking is the next test's subject
        seed=seed,
    )
    result = run(config, hardware, workload)
    assert len(result.trace) == 15
    assume(all(later.arrival_s - earlier.arrival_s > alone_s for earlier, later in pairwise(result.trace)))
    assert result.completed == 15
    for p in (50, 99):
        assert result.ttft_s[p] == pytest.approx(prefill_s, rel=1e-9)
        assert result.tpot_s[p] == pytest.approx(sum(steps) / len(steps), rel=1e-9)
    assert result.latency_mean_s == pytest.approx(alone_s, rel=1e-9)


@SIMULATION
@given(
    deployment=st.sampled_from(DEPLOYMENTS),
    batch=st.integers(1, 64),
    prompt=st.integers(1, 2048),
    output=st.integers(1, 200),
)
def test_a_full_static_batch_is_one_prefill_then_chapter_1_decode_steps_at_that_batch(
    deployment: tuple[Hardware, Workload], batch: int, prompt: int, output: int
) -> None:
    """``batch`` requests arrive together and wait to fill the batch; then one prefill of all their
    prompts, and every later token one ``decode_step`` at that batch and the length so far."""
    hardware, workload = deployment
    model = workload.model
    config = ServingConfig(
        policy="static",
        rate=1e9,
        requests=batch,
        prompt=Lengths(prompt, prompt),
        output=Lengths(output, output),
        max_batch=batch,
        batch_wait_s=1.0,
        trace_requests=batch,
    )
    result = run(config, hardware, workload)
    start = result.trace[-1].arrival_s  # the batch is full when its last request arrives
    prefill_s = iteration_costs(hardware, workload).iteration(
        0, 0, prefill_tokens=batch * prompt, prefill_pairs=batch * prompt * (prompt + 1) / 2, prompts_finished=batch
    )
    steps = [
        decode_step(hardware, Workload(model, batch=batch, context=prompt + made)).seconds for made in range(1, output)
    ]
    for request in result.trace:
        assert request.admitted_s == start
        assert request.first_token_s - start == pytest.approx(prefill_s.seconds, rel=1e-9)
        assert request.finish_s - request.first_token_s == pytest.approx(sum(steps), rel=1e-9, abs=1e-15)
    assert result.iterations == output


@SIMULATION
@given(
    deployment=st.sampled_from(DEPLOYMENTS),
    prompt=st.integers(2, 20000),
    budget=st.integers(2, 3000),
)
def test_a_chunked_prompt_costs_one_iteration_per_budgetful(
    deployment: tuple[Hardware, Workload], prompt: int, budget: int
) -> None:
    """Alone, a prompt is prefilled in budget-sized chunks, each reading the chunks before it
    (``cached``) and attending over ``chunk * cached + chunk * (chunk + 1) / 2`` token pairs."""
    hardware, workload = deployment
    costs = iteration_costs(hardware, workload)
    chunk_s, cached = 0.0, 0
    while cached < prompt:
        chunk = min(budget, prompt - cached)
        pairs = chunk * cached + chunk * (chunk + 1) / 2
        last = int(cached + chunk == prompt)  # the head runs for the prompt's last token only
        chunk_s += costs.iteration(
            0, 0, prefill_tokens=chunk, prefill_cached=cached, prefill_pairs=pairs, prompts_finished=last
        ).seconds
        cached += chunk
    config = ServingConfig(
        policy="chunked",
        rate=1e-3 / chunk_s,
        requests=3,
        prompt=Lengths(prompt, prompt),
        output=Lengths(1, 1),
        max_batch=1,
        token_budget=budget,
    )
    result = run(config, hardware, workload)
    assert result.ttft_s[50] == pytest.approx(chunk_s, rel=1e-9)
    assert result.iterations == 3 * math.ceil(prompt / budget)
    whole = prefill_pass(hardware, Workload(workload.model, prompt=prompt)).seconds
    assert result.ttft_s[50] >= whole * (1 - 1e-9)  # chunks re-read the weights and the prefix


@SIMULATION
@given(
    policy=POLICY,
    max_batch=st.integers(1, 128),
    prompt_low=st.integers(16, 1024),
    prompt_spread=st.integers(0, 2048),
    output=st.integers(1, 400),
    seed=st.integers(0, 2**32),
)
def test_at_saturation_throughput_never_exceeds_max_batch_over_the_step_time(
    policy: str, max_batch: int, prompt_low: int, prompt_spread: int, output: int, seed: int
) -> None:
    """Every token comes from an iteration of at most ``max_batch`` requests, none shorter than
    the shortest prompt, so no iteration beats ``max_batch / decode_step(max_batch, shortest)``."""
    step_s = decode_step(H100, Workload(LLAMA_8B.model, batch=max_batch, context=prompt_low)).seconds
    ceiling = max_batch / step_s
    config = ServingConfig(
        policy=policy,
        rate=100 * ceiling / output,  # far more than the GPU can serve
        requests=400,
        prompt=Lengths(prompt_low, prompt_low + prompt_spread),
        output=Lengths(1, output),
        max_batch=max_batch,
        token_budget=max_batch + 256,
        seed=seed,
    )
    result = run(config)
    assert result.busy_fraction > 0.99
    assert result.throughput_tokens_per_s <= ceiling * (1 + 1e-9)


# -- queueing ----------------------------------------------------------------------------------


@settings(max_examples=6, deadline=None)
@given(policy=POLICY, rate=st.floats(0.5, 6), seed=st.integers(0, 2**32))
def test_littles_law_holds_on_long_runs(policy: str, rate: float, seed: int) -> None:
    """Requests in flight = arrival rate * mean time in the system (TTFT + the rest of the tokens),
    with the configured rate: over 20,000 Poisson arrivals it is within 5% (the count's own
    noise is about 1/sqrt(20,000) = 0.7%). The rates keep every policy below its capacity."""
    config = ServingConfig(
        policy=policy,
        rate=rate,
        requests=20_000,
        prompt=parse_lengths("128:1024", "prompt"),
        output=parse_lengths("16:256", "output"),
        seed=seed,
    )
    result = run(config)
    assert result.completed == 20_000
    assert result.mean_in_flight == pytest.approx(rate * result.latency_mean_s, rel=0.05)


@SIMULATION
@given(
    max_batch=st.integers(4, 64),
    prompt=st.integers(16, 1024),
    output_low=st.integers(1, 32),
    output_high=st.integers(128, 512),
    seed=st.integers(0, 2**32),
)
def test_with_varied_output_lengths_continuous_serves_at_least_as_fast_as_static(
    max_batch: int, prompt: int, output_low: int, output_high: int, seed: int
) -> None:
    """The same requests at the same (saturating) rate: static batches wait for their longest
    output and compute padding; continuous fills a freed slot at the next iteration."""
    shared = {
        "rate": 1000.0,
        "requests": 300,
        "prompt": Lengths(prompt, prompt),
        "output": Lengths(output_low, output_high),
        "max_batch": max_batch,
        "seed": seed,
    }
    static = run(ServingConfig(policy="static", **shared))
    continuous = run(ServingConfig(policy="continuous", **shared))
    assert continuous.completed == static.completed == 300
    assert continuous.throughput_tokens_per_s >= static.throughput_tokens_per_s


@SIMULATION
@given(
    prompt_low=st.integers(4096, 8192),
    output=st.integers(64, 256),
    rate=st.floats(1, 3),
    budget=st.sampled_from((256, 512, 1024)),
    seed=st.integers(0, 2**32),
)
def test_with_long_prompts_chunked_prefill_lowers_p99_tpot(
    prompt_low: int, output: int, rate: float, budget: int, seed: int
) -> None:
    """A whole long prefill stalls every stream for its length; chunks of a token budget ride
    along with the decodes, whose weight reads they share."""
    shared = {
        "rate": rate,
        "requests": 300,
        "prompt": Lengths(prompt_low, 2 * prompt_low),
        "output": Lengths(output, output),
        "token_budget": budget,
        "seed": seed,
    }
    continuous = run(ServingConfig(policy="continuous", **shared))
    chunked = run(ServingConfig(policy="chunked", **shared))
    assert chunked.tpot_s[99] < continuous.tpot_s[99]


@SIMULATION
@given(policy=POLICY, blocks=st.integers(40, 400), seed=st.integers(0, 2**32))
def test_admitted_requests_never_hold_more_kv_blocks_than_fit(policy: str, blocks: int, seed: int) -> None:
    """Shrink the usable memory to ``blocks`` 16-token blocks beyond the weights: running
    requests' reservations never overlap beyond that, and the too-long ones are rejected,
    counted, not dropped."""
    per_block = BLOCK_TOKENS * LLAMA_8B.kv_bytes_per_token
    usable = weight_bytes(LLAMA_8B.model, "bf16") + (blocks + 0.5) * per_block
    hardware = Hardware(H100.gpu, usable_fraction=usable / H100.memory_bytes)
    assert kv_blocks_available(hardware, LLAMA_8B) == blocks
    config = ServingConfig(
        policy=policy,
        rate=50.0,
        requests=200,
        prompt=Lengths(64, 2048),
        output=Lengths(16, 1024),
        max_batch=32,
        seed=seed,
        trace_requests=200,
    )
    result = run(config, hardware)
    too_long = sum(1 for r in result.trace if -(-(r.prompt + r.output) // BLOCK_TOKENS) > blocks)
    assert result.rejected == too_long
    assert result.completed + result.rejected == 200
    events = []
    for request in result.trace:
        if request.admitted_s is None:
            assert request.finish_s is None and request.spans == ()
            continue
        size = request.prompt + request.output
        if policy == "static":  # a static batch reserves the padded size; check the batch's
            continue
        events.append((request.admitted_s, 1, -(-size // BLOCK_TOKENS)))
        events.append((request.finish_s, 0, -(-size // BLOCK_TOKENS)))
    held = 0
    for _, starts, count in sorted(events):  # frees (0) sort before starts (1) at the same instant
        held += count if starts else -count
        assert held <= blocks


#: A made-up chip with little math for its bandwidth: decode turns compute-bound from about
#: batch 10, so runs of compute-bound decode steps are summed too.
STARVED_GPU = Hardware(
    GpuSpec(
        id="starved",
        name="Compute-starved test chip",
        memory_bytes=80e9,
        bandwidth_bytes_per_s=3.35e12,
        dense_flops_per_s={"bf16": 3.35e13},
        source="made up for this test",
    )
)


@SIMULATION
@given(
    hardware=st.sampled_from((H100, STARVED_GPU)),
    policy=POLICY,
    rate=st.floats(0.2, 30),
    max_batch=st.integers(1, 48),
    seed=st.integers(0, 2**32),
)
def test_summing_runs_of_decode_steps_in_closed_form_changes_nothing(
    hardware: Hardware, policy: str, rate: float, max_batch: int, seed: int
) -> None:
    """The simulator sums a run of decode steps as an arithmetic series when one side of the
    roofline bounds all of them; stepping one iteration at a time must give the same run."""
    config = ServingConfig(
        policy=policy,
        rate=rate,
        requests=150,
        prompt=Lengths(16, 2000),
        output=Lengths(1, 300),
        max_batch=max_batch,
        token_budget=max_batch + 200,
        seed=seed,
        trace_requests=150,
    )
    fast = run(config, hardware)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(serving, "_steady_run", lambda *_: None)
        stepped = run(config, hardware)
    assert (fast.iterations, fast.completed) == (stepped.iterations, stepped.completed)
    for mine, reference in zip(fast.trace, stepped.trace, strict=True):
        assert mine.finish_s == pytest.approx(reference.finish_s, rel=1e-9)
        assert mine.first_token_s == pytest.approx(reference.first_token_s, rel=1e-9)
        assert [span[3] for span in mine.spans] == [span[3] for span in reference.spans]


@QUICK
@given(
    first=st.floats(1e-4, 1e-1),
    slope=st.floats(0, 1e-5),
    gap=st.one_of(st.floats(-1.0, 0.0), st.floats(0.0, 100.0)),
    most=st.integers(1, 100_000),
)
def test_steps_to_reach_a_time_is_the_first_step_past_it(first: float, slope: float, gap: float, most: int) -> None:
    steps = serving._steps_to_reach(first, slope, gap, most)
    assert 1 <= steps <= most
    total = serving._run_seconds
    assert steps == most or total(first, slope, steps) >= gap
    assert steps == 1 or total(first, slope, steps - 1) < gap


# -- traces, determinism, lengths -------------------------------------------------------------


@SIMULATION
@given(policy=POLICY, rate=st.floats(0.5, 40), seed=st.integers(0, 2**32))
def test_each_trace_adds_up_to_its_request(policy: str, rate: float, seed: int) -> None:
    """A timeline can be drawn from the trace: spans lie between admission and the batch's end,
    prefill spans end at the first token, and one decode iteration per token after the first."""
    config = ServingConfig(
        policy=policy,
        rate=rate,
        requests=60,
        prompt=Lengths(16, 3000),
        output=Lengths(1, 200),
        max_batch=8,
        token_budget=256,
        seed=seed,
        trace_requests=40,
    )
    result = run(config)
    assert len(result.trace) == 40
    for request in result.trace:
        kinds = [span[0] for span in request.spans]
        assert request.arrival_s <= request.admitted_s <= request.first_token_s <= request.finish_s
        assert request.spans[0][1] == request.admitted_s or policy == "chunked"
        assert kinds.index("prefill") == 0 and "prefill" not in kinds[kinds.count("prefill") :]
        last_prefill = [span for span in request.spans if span[0] == "prefill"][-1]
        assert last_prefill[2] == request.first_token_s
        decodes = [span for span in request.spans if span[0] == "decode"]
        assert sum(span[3] for span in decodes) == request.output - 1
        if decodes:
            assert decodes[-1][2] == request.finish_s
        for kind, start, end, iterations in request.spans:
            assert start < end and iterations >= 1
            assert kind != "padding" or policy == "static"


@settings(max_examples=10, deadline=None)
@given(policy=POLICY, seed=st.integers(0, 2**32), noise=st.integers())
def test_the_same_inputs_and_seed_give_byte_identical_json(policy: str, seed: int, noise: int) -> None:
    config = ServingConfig(
        policy=policy, rate=8.0, requests=300, prompt=Lengths(1, 2000), output=Lengths(1, 300), seed=seed
    )
    first = json.dumps(run(config).to_dict(trace=True))
    random.seed(noise)  # the global generator must play no part
    random.random()
    assert json.dumps(run(config).to_dict(trace=True)) == first
    other = ServingConfig(
        policy=policy, rate=8.0, requests=300, prompt=Lengths(1, 2000), output=Lengths(1, 300), seed=seed + 1
    )
    assert json.dumps(run(other).to_dict(trace=True)) != first


@QUICK
@given(low=st.integers(1, 10_000), width=st.integers(0, 10_000), seed=st.integers(0, 2**32))
def test_lengths_are_drawn_from_their_whole_range(low: int, width: int, seed: int) -> None:
    lengths = parse_lengths(f"{low}:{low + width}", "prompt")
    rng = random.Random(seed)
    draws = [lengths.draw(rng) for _ in range(200)]
    assert all(low <= draw <= low + width for draw in draws)
    assert parse_lengths(str(lengths), "prompt") == lengths


@QUICK
@given(values=st.lists(st.floats(0, 1e6), min_size=1, max_size=300), p=st.sampled_from((50, 90, 99)))
def test_percentile_is_the_nearest_rank(values: list[float], p: int) -> None:
    """At least p% of values are at or below it, and fewer than p% are strictly below it."""
    ordered = sorted(values)
    found = percentile(ordered, p)
    assert found in ordered
    assert sum(value <= found for value in ordered) >= p / 100 * len(ordered)
    assert sum(value < found for value in ordered) < p / 100 * len(ordered)


def test_a_request_too_long_for_the_whole_cache_is_rejected_and_reported() -> None:
    blocks = kv_blocks_available(H100, LLAMA_8B)
    config = ServingConfig(
        requests=5, prompt=Lengths(blocks * BLOCK_TOKENS, blocks * BLOCK_TOKENS), output=Lengths(1, 1)
    )
    result = run(config)
    assert (result.completed, result.rejected) == (0, 5)
    assert result.to_dict()["ttft_p99_s"] is None


def test_weights_that_leave_no_room_are_one_clear_error() -> None:
    with pytest.raises(SpecError, match="leave no room for a KV cache"):
        run(ServingConfig(requests=1), H100, Workload(SPECS.model("llama-3.1-70b")))


# -- the command ---------------------------------------------------------------------------------

JSON_KEYS = {
    "completed",
    "throughput_tokens_per_s",
    "throughput_requests_per_s",
    "ttft_p50_s",
    "ttft_p90_s",
    "ttft_p99_s",
    "tpot_p50_s",
    "tpot_p90_s",
    "tpot_p99_s",
    "latency_mean_s",
    "mean_in_flight",
    "goodput_requests_per_s",
    "busy_fraction",
}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = main(list(argv))
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_simulate_json_has_every_key_the_chapter_reads(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("simulate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--requests", "200", "--json")
    status, out, err = cli(capsys, *argv, "--policy", "chunked", "--prompt", "100:3000", "--output", "1:300")
    assert status == 0 and err == ""
    shown = json.loads(out)
    assert JSON_KEYS <= set(shown)
    config = ServingConfig(policy="chunked", requests=200, prompt=Lengths(100, 3000), output=Lengths(1, 300))
    assert shown.pop("warnings") == []  # what the command adds: none within the model's max_context
    assert shown == json.loads(json.dumps(run(config).to_dict()))
    assert cli(capsys, *argv, "--policy", "chunked", "--prompt", "100:3000", "--output", "1:300")[1] == out


def test_simulate_text_names_the_setup_and_every_metric(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = cli(capsys, "simulate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--requests", "100")
    assert status == 0
    for words in ("continuous batching", "100 requests at 10/s", "time to first token", "goodput", "GPU busy"):
        assert words in out


BAD_SIMULATE = {
    "zero rate": (["--rate", "0"], "argument --rate: must be between 1e-06 and 1e+09"),
    "rate not a number": (["--rate", "fast"], "argument --rate: must be a number"),
    "reversed range": (["--prompt", "900:100"], "argument --prompt: must satisfy 1 <= LO <= HI"),
    "range with three parts": (["--output", "1:2:3"], "argument --output: must be N or LO:HI"),
    "zero output": (["--output", "0"], "argument --output: must satisfy 1 <= LO"),
    "unknown policy": (["--policy", "greedy"], "argument --policy: invalid choice"),
    "budget below the batch": (
        ["--policy", "chunked", "--max-batch", "600"],
        "--token-budget: must exceed the max batch (600)",
    ),
    "too many requests": (["--requests", "5000000"], "--requests: must be at most 1,000,000"),
    "negative seed": (["--seed", "-1"], "argument --seed: must be at least 0"),
    "zero target": (["--tpot-slo", "0"], "argument --tpot-slo: must be between 1e-06 and 1e+06"),
    "misspelt gpu": (["--gpu", "h100"], "--gpu: unknown GPU 'h100' (did you mean 'h100-sxm'?)"),
    "weights too big": (["--model", "llama-3.1-405b"], "--gpus: the weights (811.7 GB) leave no room"),
    "infinite rate": (["--rate", "inf"], "argument --rate: must be between 1e-06 and 1e+09, got 'inf'"),
    "rate past a billion": (["--rate", "1e300"], "argument --rate: must be between"),
    "a 5,000-digit seed": (["--seed", "9" * 5000], "argument --seed: must be at most"),
    "a million-and-one batch": (["--max-batch", "1000001"], "argument --max-batch: must be at most 1,000,000"),
    "control characters echoed escaped": (["--rate", "1\x1b[2J"], "got '1\\x1b[2J'"),
    "sliding-window model": (["--model", "gemma-2-9b"], "gemma-2-9b has sliding-window layers"),
}


@pytest.mark.parametrize(("extra", "fragment"), BAD_SIMULATE.values(), ids=BAD_SIMULATE.keys())
def test_bad_simulate_input_is_one_line_and_exit_2(
    extra: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["simulate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--requests", "50", *extra]
    status, out, err = cli(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert fragment in err, err


@pytest.mark.parametrize(
    ("field", "value"),
    [("rate", -1.0), ("rate", math.nan), ("requests", 0), ("max_batch", 0), ("seed", 1.5), ("policy", "fifo")],
)
def test_a_bad_config_names_its_field(field: str, value: object) -> None:
    with pytest.raises(SpecError) as raised:
        ServingConfig(**{field: value})
    assert raised.value.field == field
