"""The simulator's outputs, pinned: speed work on ``serving`` and ``specserving`` must not move a digit.

Each case is a small but busy run (every scheduler path: continuous, chunked, static, reserve and
paged admission, preemption by recompute and by swap, a closed loop, pipeline stages, the expected
costs, speculation with a free drafter, a draft model and an EAGLE-style head). Its digest is the
SHA-256 of everything a reader can see: ``roofline simulate --json``'s text, and for the API runs
every request's trace and the logged KV blocks. The expected digests were taken from the code as it
stood before issue 42's NH4 speed work, on the main branch it merged into (commit c1fbb87, after
issue 35's 16-bit heads and issue 36's ``fleet`` key; the sped-up code gave the same). A change in
behaviour fails here, and a deliberate one must say so and update them
(``python tests/test_serving_perf_identity.py`` prints the current ones).

One deliberate change so far: speculation with fixed rounds (α 0 or 1: ``speculative-greedy``,
``speculative-certain``, ``speculative-certain-closed`` and the α 0 and 1 API runs) times a run of
rounds by closed-form sums over its pieces, as plain decode runs are timed, instead of a running
sum a round (``specserving._SpeculativeRun.fixed_run``). Every count, iteration and order stayed
the same; the times moved in their last digits, at most 4e-11 relative to the old figures.

A second, for the runs whose rounds are drawn (0 < α < 1: ``speculative``, ``speculative-draft`` and
the α 0.6 API run): a request's rounds are now all drawn when it gets its first token, one 64-bit draw
a round from a generator of its own (``specserving.RoundDraws``, then ``random.Random(((index + 1) << 64) |
seed)``, compared with α^i · 2^64), instead of one draw a draft token from the run's generator, in the
order the iterations met the requests. So the same seed draws other rounds, and every figure of those
three runs moved with them (as another seed would move them); the scheduling and the cost accounting
did not change (``tests/test_specserving_drawn.py`` checks the new runs against a round-by-round
reference, to the bit). The fixed-round and plain digests did not move.

A third, for the same three runs: a request's draws now come from SHAKE-128 streams of its own
(``specserving.round_stream``: one byte a round, 7 more only where that byte leaves the round open)
instead of a Mersenne Twister seeded a request, whose seeding cost more than the draws. The same
seed draws other rounds again; nothing else changed, and the round-by-round reference still agrees.

The ``expected-costs`` case runs at the fitted costs of ``roofline/data/calibration.toml``, so a refit
moves its digest with no change to the simulator: issue 36's refit with AMD's MI300X rows did (the
code at that commit gives the old digest with the old file and the new digest with the new one), and
so did the band's move to conformal ranks (its JSON differs from the old one in the band's eight
numbers only; every simulated figure is the same). So did the ``session`` harness: TensorRT-LLM
0.5 to 0.9's static rows got host costs of their own, which moved the shared ones, and the JSON's
``fit`` gained ``context_serial_share`` (0 under the default server harness); every ceiling case's
digest stayed.

A deliberate change to every non-speculative CLI case: ``best_case`` gained the open loop's
``throughput_tokens_per_s`` (``load_bounds.throughput_bound``, ``null`` for a closed loop or rate inf)
and its ``accounting``. With those two keys taken out, each JSON is byte for byte the old one, except
``expected-costs``, whose throughput band's high end is now held at the bound (5,690 → 4,947 tokens/s);
no simulated figure moved. The speculative CLI cases gained ``best_case`` itself (the TTFT bound and
that throughput bound, with their accounting); without it each JSON is byte for byte the old one.
Then ``pipeline`` (2 micro-batches) moved again in ``best_case`` only: its TTFT bound is one
micro-batch's share of the prompt through every stage (7.29 → 4.49 ms; the old one was beaten by
the simulator itself at longer prompts), its accounting says so, and the throughput bound follows.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json

import pytest

from roofline import Hardware, Lengths, ServingConfig, Workload, builtin_specs, simulate
from roofline.cli import main
from roofline.specserving import Drafting, simulate_speculative

SIMULATE = ("simulate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--json")

#: name -> the CLI's arguments after ``SIMULATE``, split at spaces.
CLI_CASES: dict[str, str] = {
    "continuous-paged": "--requests 3000 --rate 12 --prompt 64:4096 --output 1:1024",
    "chunked": "--policy chunked --requests 1500 --prompt 100:6000 --output 1:600",
    "static": "--policy static --requests 1500 --rate 30 --output 16:512",
    "reserve": "--admission reserve --requests 2000 --rate inf --output 16:2048",
    "recompute-thrash": (
        "--rate inf --requests 1500 --prompt 128:512 --output 16:2048 --max-batch 256 --usable-fraction 0.05"
    ),
    "swap-thrash": (
        "--rate inf --requests 800 --prompt 128:512 --output 16:2048 "
        "--max-batch 256 --usable-fraction 0.05 --preemption swap"
    ),
    "chunked-paged-thrash": (
        "--policy chunked --rate inf --requests 600 --prompt 100:6000 "
        "--output 16:1024 --usable-fraction 0.03 --max-batch 128 --token-budget 1024"
    ),
    "closed-loop": "--concurrency 48 --requests 2000 --output 1:700",
    "expected-costs": "--costs expected --requests 1000 --rate 20",
    "pipeline": "--gpus 4 --parallel pp --microbatches 2 --requests 800 --rate 30",
    "speculative": "--speculate-gamma 4 --speculate-alpha 0.6 --requests 600 --output 1:900",
    "speculative-draft": (
        "--speculate-gamma 3 --speculate-alpha 0.7 --draft llama-3.2-1b --requests 400 --concurrency 32"
    ),
    "speculative-greedy": "--speculate-gamma 1 --speculate-alpha 0 --requests 200 --output 2000",
    "speculative-certain": "--speculate-gamma 3 --speculate-alpha 1 --requests 300 --output 1:3000 --rate 5",
    "speculative-certain-closed": (
        "--speculate-gamma 2 --speculate-alpha 1 --requests 300 --concurrency 20 --output 1:700 --draft llama-3.2-1b"
    ),
}

EXPECTED_CLI: dict[str, str] = {
    "continuous-paged": "a8cbb32d4190281d96fe3e97178724a668ed7713a97f1e443ef3726e853b61ad",
    "chunked": "bfcb577ae577029dd2b756b78a50a580301004be6d366c7c839acdcd8dbba362",
    "static": "4765df430c4dc5ef433828dc6fb55d31275e910de3767dde166f315e581a1e71",
    "reserve": "e61332ce68282cd34eda9cfe062e7a33479091bee955904dcb284d638d5c8564",
    "recompute-thrash": "347d939967af0e630eca5066d5f077bae0b28781ea4f9d09339a01f084cf39b9",
    "swap-thrash": "7b3b8bccf1a3189baba6fe8739fd106ffaf0d3cad6adc1307db5a249c5e2671a",
    "chunked-paged-thrash": "80648412bef224b8ed92fea5468c93d03af69b218d1ff4ffd944fd6befa05c35",
    "closed-loop": "02b3c0facaaa4c4730b6fd276abb570257761ea4417c4380125df078e7fccfad",
    "expected-costs": "e2f7cb7b01e575a958e645a25ac1168b7f5c9af1103833e26a18ced4ad605b31",
    "pipeline": "14947b328fca147c6ae15451a9ee6bc43da539a9ff69ac9871033b3c01176a33",
    "speculative": "f42360a452e9914799fd034f7673c07504841b46139a99ab2548edc14b0aca22",
    "speculative-draft": "31b22484452d2debc2dafa3938cdd3d1e4c451ee1a644a848197a8b7e0607ab6",
    "speculative-greedy": "d619ca9d02ad0221a1f4e20e05a83f7193a60e9892eb7947adb3e0a6aa2ca328",
    "speculative-certain": "04c69691d45d2f88e029f2110ac2cd249032e0b4b0ad95090b89c92f8dae6b5c",
    "speculative-certain-closed": "689e2aab33226b56b3750db357dd56e14cf2a9c5ef761f021ebd9def0bd32003",
}

#: name -> a ServingConfig run through the API with 40 traced requests and the block log.
API_CASES: dict[str, ServingConfig] = {
    policy: ServingConfig(
        policy=policy,
        rate=40.0,
        requests=1200,
        prompt=Lengths(100, 3000),
        output=Lengths(1, 800),
        trace_requests=40,
        record_blocks=policy != "static",
        seed=7,
    )
    for policy in ("continuous", "chunked", "static")
}

EXPECTED_API: dict[str, str] = {
    "continuous": "5ff9ea415e2e5e630b61775f60c3d89b849761a2e62ae73cd36f4d87dca43fc3",
    "chunked": "d46597f561e25095cca201c47fc49c65cad1fcefbeb53dfb317b08b528ecc451",
    "static": "3b5b8005f80ba6d6df5ed20df278bc2ec28a6658240a49b30b0793dbd0009656",
}


def cli_digest(name: str) -> str:
    """SHA-256 of ``roofline simulate --json``'s output for case ``name``."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main([*SIMULATE, *CLI_CASES[name].split()])
    assert status in (0, None), f"{name}: exit status {status}"
    return hashlib.sha256(out.getvalue().encode()).hexdigest()


def api_digest(name: str) -> str:
    """SHA-256 of an API run's figures, every traced request and the block log, on a cache small
    enough (2% of the memory the weights leave) that paged admission preempts."""
    specs = builtin_specs()
    hardware = Hardware(specs.gpu("h100-sxm"), usable_fraction=0.02)
    result = simulate(hardware, Workload(specs.model("llama-3.1-8b")), API_CASES[name])
    seen = {
        "figures": result.to_dict(trace=True),
        "blocks": result.blocks_in_use,
        "cached": result.cached_tokens,
        "itl": sorted(result.itl_s.items()) if result.itl_s else None,
        "batch_seconds": result.batch_seconds,
    }
    return hashlib.sha256(json.dumps(seen).encode()).hexdigest()


#: α -> the digest of a traced speculative API run (γ 3, a draft at 0.1 of the target's step): α 0 and
#: 1 fix every round's tokens (``specserving.fixed_round_tokens``), 0.6 draws them.
EXPECTED_SPECULATIVE: dict[float, str] = {
    0.0: "ea94935d0b942bb79e09d29cf3208eceddac3b2e680cb6cb537e18651a108547",
    1.0: "cc6527e2a9ddf71a9bd313f1d50d79779319067a91e8602a951ba57af9f6864c",
    0.6: "aaf34a4e3079e92d425b3da00234f3eea101d27d5b75fbbc9dad2cc530929388",
}


def speculative_digest(alpha: float) -> str:
    """SHA-256 of a speculative API run's figures, its 40 traced requests, gaps and round counts."""
    specs = builtin_specs()
    config = ServingConfig(
        rate=20.0, requests=500, prompt=Lengths(100, 2000), output=Lengths(1, 1500), trace_requests=40, seed=3
    )
    drafting = Drafting(gamma=3, alpha=alpha, draft_cost=0.1)
    run = simulate_speculative(Hardware(specs.gpu("h100-sxm")), Workload(specs.model("llama-3.1-8b")), config, drafting)
    result = run.result
    seen = {
        "figures": result.to_dict(trace=True),
        "itl": sorted(result.itl_s.items()),
        "batch_seconds": result.batch_seconds,
        "rounds": [run.rounds, run.drawn_tokens, run.emitted_tokens],
    }
    return hashlib.sha256(json.dumps(seen).encode()).hexdigest()


@pytest.mark.parametrize("name", sorted(CLI_CASES))
def test_simulate_json_is_unchanged(name: str) -> None:
    assert cli_digest(name) == EXPECTED_CLI[name]


@pytest.mark.parametrize("name", sorted(API_CASES))
def test_traces_and_block_logs_are_unchanged(name: str) -> None:
    assert api_digest(name) == EXPECTED_API[name]


@pytest.mark.parametrize("alpha", sorted(EXPECTED_SPECULATIVE))
def test_speculative_traces_are_unchanged(alpha: float) -> None:
    assert speculative_digest(alpha) == EXPECTED_SPECULATIVE[alpha]


if __name__ == "__main__":  # print the current digests, to paste above after a deliberate change
    print("EXPECTED_CLI =", json.dumps({name: cli_digest(name) for name in CLI_CASES}, indent=4))
    print("EXPECTED_API =", json.dumps({name: api_digest(name) for name in API_CASES}, indent=4))
    print("EXPECTED_SPECULATIVE =", {alpha: speculative_digest(alpha) for alpha in EXPECTED_SPECULATIVE})
