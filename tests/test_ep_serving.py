"""Expert parallelism in the simulator, attention tensor-parallel beside it (tpxep), data-parallel
attention under simulate, and the expected (calibrated, unfitted) expert-parallel figure.

Published rows, each read at its source:

- SGLang, "Deploying DeepSeek with PD Disaggregation and Large-scale Expert Parallelism on 96 H100
  GPUs" (lm-sys/lm-sys.github.io@2db4e4042b31f3c3c9f4f93068ae80946d25a115,
  blog/2025-05-05-large-scale-ep.md): prefill on 4 nodes (EP32), 16,384 tokens per device and
  4,096-token inputs, 50,302 tokens/s per node with its default expert distribution and 59,337
  with a simulated perfect EPLB; decode on 9 nodes (EP72), 256 sequences a GPU at a KV length of
  2,000, 22,282 tokens/s per node.
- SGLang serving DeepSeek-R1-0528 on 16 H100s over InfiniBand, concurrency 1 (tenstorrent/
  tt-inference-server issue #356, 2025-07-09 comment): TTFT 263.9 ms and TPOT 24.0 ms at 8,192
  prompt tokens and 128 out, and the sweep's other prompt lengths; the layout is not stated, so
  each layout the package has for a mixture of experts is tried.
- TensorRT-LLM's "Scaling Expert Parallelism in TensorRT-LLM (Part 1)", Table 1 (NVIDIA/
  TensorRT-LLM@1d263f15a979ef2902c60de3f6238bcc0952bb29, docs/source/blogs/tech_blog/blog4_...md):
  DeepSeek-R1 on 32 GB200s at EP32 without a load balancer, imbalance ratio 1.564, so the busiest
  rank gets 2.564 times the mean: the band's widening.

None of these runs is in the expected costs' fit: each is held out, and the expected figure's band
is the dense fit's widened by the measured expert imbalance (``epdeploy.EP_BAND_BASIS``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from roofline import serving
from roofline.benchmarks import load_serving_runs
from roofline.calibration import load_calibration
from roofline.cli import main
from roofline.epdeploy import EP_BAND_WIDENING, ExpertLayout, expert_costs, expert_step
from roofline.loader import builtin_specs
from roofline.performance import Hardware, Workload
from roofline.serving import ServingConfig, parse_lengths, simulate

DSV3 = ("--gpu", "h100-sxm", "--model", "deepseek-v3", "--precision", "fp8")
SPECS = builtin_specs()


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def as_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


# -- simulate --parallel ep: the same scheduler, each iteration the EP step --------------------------


def test_simulate_ep_times_one_request_as_the_estimate_does(capsys: pytest.CaptureFixture[str]) -> None:
    """One client, 8,192-token prompts and two output tokens: the first token is the prompt's
    prefill, the second one decode step at that length, each as estimate --parallel ep times them."""
    run = as_json(
        capsys,
        "simulate",
        "--parallel",
        "ep",
        *DSV3,
        "--gpus",
        "16",
        "--prompt",
        "8192",
        "--output",
        "2",
        "--concurrency",
        "1",
        "--requests",
        "3",
    )
    # The second token's step reads the prompt and the first token: 8,193 cached tokens.
    step = as_json(capsys, "estimate", "--parallel", "ep", *DSV3, "--gpus", "16", "--batch", "1", "--context", "8193")
    prefill = as_json(capsys, "estimate", "--parallel", "ep", *DSV3, "--gpus", "16", "--prompt", "8192")
    assert run["parallel"] == "ep" and run["ep"] == 16 and run["tp"] == 1
    assert run["ttft_mean_s"] == pytest.approx(prefill["prefill_s"], rel=1e-9)
    assert run["itl_mean_s"] == pytest.approx(step["decode_step_s"], rel=1e-9)
    means = run["expert_means"]
    # Three prefills of 8,192 tokens and three decodes of one token, each iteration counted once.
    assert means["iterations"] == run["iterations"] == 6
    assert means["tokens_per_iteration"] == pytest.approx((3 * 8192 + 3) / 6)
    assert means["tokens_per_expert"] == pytest.approx(means["tokens_per_iteration"] * 8 / 256)
    assert means["alltoall_s"] > 0 and means["moe_weight_bytes_read_per_step"] > 0


def test_decode_runs_hold_the_all_to_all_as_a_floor() -> None:
    """An EP iteration takes max(memory, compute, all-to-all); the simulator sums runs of decode
    steps in closed form, and must hold the all-to-all as a floor under the two lines: 16,384
    users on 64 GPUs, 256 a GPU, send their tokens to the other nodes over InfiniBand (once a node
    reached) for longer than the reads and the math take."""
    hardware = Hardware(SPECS.gpu("h100-sxm"), 1, "auto")
    work = Workload(SPECS.model("deepseek-v3"), "fp8", "bf16")
    costs = expert_costs(hardware, work, ExpertLayout(64))
    users, prompt, output = 16384, 128, 20
    config = ServingConfig(
        policy="continuous",
        rate=math.inf,
        requests=users,
        max_batch=users,
        prompt=parse_lengths(str(prompt), "--prompt"),
        output=parse_lengths(str(output), "--output"),
    )
    result = simulate(hardware, work, config, costs=costs)
    # Decode step j (1 to 19) holds every user at prompt + j tokens.
    steps = [costs.iteration(users, users * (prompt + j)) for j in range(1, output)]
    assert all(step.overlapped_s > max(step.memory_s, step.compute_s) for step in steps)
    assert result.itl_mean_s == pytest.approx(sum(step.seconds for step in steps) / len(steps), rel=1e-9)


def test_a_floor_holds_the_first_steps_of_a_run() -> None:
    pieces = serving._pieces(1.0, 0.5, 0.5, 0.1, 10, floor=2.2)
    times = [max(1.0 + 0.5 * i, 0.5 + 0.1 * i, 2.2) for i in range(10)]
    assert [first + slope * i for first, slope, start, stop in pieces for i in range(start, stop)] == times


# -- The published rows: none beats its ceiling, in estimate or simulate -----------------------------

SGLANG_16XH100_TTFT_S = 0.2639
SGLANG_EP32_PREFILL_PER_NODE = {"default": 50_302, "perfect EPLB": 59_337}
SGLANG_EP72_DECODE_PER_NODE = 22_282


@pytest.mark.parametrize(
    "layout",
    [("--parallel", "ep"), ("--parallel", "tpxep", "--tp", "8"), ("--parallel", "tpxep", "--tp", "16")],
)
def test_sglang_16xh100_ttft_stays_below_the_ceiling_in_simulate(
    capsys: pytest.CaptureFixture[str], layout: tuple
) -> None:
    base = (*layout, *DSV3, "--gpus", "16")
    run = as_json(
        capsys, "simulate", *base, "--prompt", "8192", "--output", "128", "--concurrency", "1", "--requests", "4"
    )
    estimated = as_json(capsys, "estimate", *base, "--prompt", "8192")
    assert 0 < run["ttft_mean_s"] < SGLANG_16XH100_TTFT_S
    assert 0 < run["best_case"]["ttft_mean_s"] <= run["ttft_mean_s"] * (1 + 1e-12)
    assert 0 < estimated["prefill_s"] < SGLANG_16XH100_TTFT_S


#: The whole concurrency-1 sweep of the same issue: (prompt, output, TTFT s, TPOT s).
SGLANG_16XH100_SWEEP = (
    (128, 128, 0.1797, 0.0231),
    (128, 1024, 0.1841, 0.0232),
    (1024, 128, 0.3917, 0.0232),
    (2048, 128, 0.1905, 0.0233),
    (3072, 128, 0.2004, 0.0236),
    (4096, 128, 0.1997, 0.0237),
    (8192, 128, 0.2639, 0.0240),
)


@pytest.mark.parametrize("layout", [("--parallel", "ep"), ("--parallel", "tpxep", "--tp", "16")])
def test_the_whole_sglang_16xh100_sweep_stays_below_its_ceilings(
    capsys: pytest.CaptureFixture[str], layout: tuple
) -> None:
    for prompt, output, ttft, tpot in SGLANG_16XH100_SWEEP:
        run = as_json(
            capsys,
            "simulate",
            *layout,
            *DSV3,
            "--gpus",
            "16",
            "--prompt",
            str(prompt),
            "--output",
            str(output),
            "--concurrency",
            "1",
            "--requests",
            "2",
        )
        assert run["ttft_mean_s"] < ttft and run["tpot_mean_s"] < tpot, (prompt, output)


def sglang_prefill(capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    """SGLang's prefill setting: 32 H100s, 16,384 tokens a GPU as four 4,096-token prompts a GPU,
    all sent at once, one output token each; 32 redundant experts (DeepSeek's) so 288 slots split."""
    return as_json(
        capsys,
        "simulate",
        "--parallel",
        "ep",
        *DSV3,
        "--gpus",
        "32",
        "--redundant-experts",
        "32",
        "--prompt",
        "4096",
        "--output",
        "1",
        "--rate",
        "inf",
        "--requests",
        "256",
        "--max-batch",
        "128",
        *extra,
    )


def test_sglang_ep32_prefill_rows_stay_below_the_ceiling(capsys: pytest.CaptureFixture[str]) -> None:
    run = sglang_prefill(capsys)
    assert run["expert_means"]["tokens_per_iteration"] == 16_384 * 32
    per_node = 256 * 4096 / run["duration_s"] / 4
    for measured in SGLANG_EP32_PREFILL_PER_NODE.values():
        assert measured < per_node


def test_sglang_ep72_decode_row_stays_below_the_ceiling_in_simulate(capsys: pytest.CaptureFixture[str]) -> None:
    """256 sequences on each of 72 GPUs, 2,000 tokens of prompt, decoding together: the simulated
    steady decode gives each GPU's users one token a step."""
    run = as_json(
        capsys,
        "simulate",
        "--parallel",
        "ep",
        *DSV3,
        "--gpus",
        "72",
        "--redundant-experts",
        "32",
        "--prompt",
        "2000",
        "--output",
        "100",
        "--concurrency",
        str(256 * 72),
        "--requests",
        str(256 * 72),
        "--max-batch",
        str(256 * 72),
    )
    per_node_ceiling = 256 * 8 / run["itl_mean_s"]
    assert SGLANG_EP72_DECODE_PER_NODE < per_node_ceiling


# -- The expected figure: calibrated costs, band widened, held-out rows inside it -----------------


def test_expected_ep_decode_holds_the_held_out_sglang_row(capsys: pytest.CaptureFixture[str]) -> None:
    figures = as_json(
        capsys,
        "estimate",
        "--parallel",
        "ep",
        *DSV3,
        "--gpus",
        "72",
        "--redundant-experts",
        "32",
        "--batch",
        str(256 * 72),
        "--context",
        "2000",
        "--costs",
        "expected",
    )
    assert figures["costs"] == "expected" and figures["band_basis"].startswith("unfitted: band widened")
    expected = figures["expected"]["decode_tokens_per_s_total"] / 9
    assert expected < figures["decode_tokens_per_s_total"] / 9  # below its own ceiling
    low, high = (value / 9 for value in figures["band"]["throughput_tokens_per_s"])
    dense_low = load_calibration().band["throughput_tokens_per_s"][0]
    assert low == pytest.approx(dense_low * expected / EP_BAND_WIDENING)
    assert low <= SGLANG_EP72_DECODE_PER_NODE <= high
    # Measured ÷ expected: 0.40, below the dense fit's band, inside only because the band is widened.
    ratio = SGLANG_EP72_DECODE_PER_NODE / expected
    assert 0.3 < ratio < dense_low


def test_expected_ep_prefill_holds_the_held_out_sglang_row(capsys: pytest.CaptureFixture[str]) -> None:
    run = sglang_prefill(capsys, "--costs", "expected")
    expected = run["expected"]
    per_node = 256 * 4096 / expected["duration_s"] / 4
    ceiling = 256 * 4096 / run["duration_s"] / 4
    assert per_node < ceiling
    calibration = load_calibration()
    low = calibration.band["throughput_tokens_per_s"][0] / EP_BAND_WIDENING
    high = calibration.band["throughput_tokens_per_s"][1]
    for measured in SGLANG_EP32_PREFILL_PER_NODE.values():
        assert low <= measured / per_node <= high
    assert run["band_basis"].startswith("unfitted: band widened")


def test_expected_report_names_the_widened_band(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, "estimate", "--parallel", "ep", *DSV3, "--gpus", "16", "--batch", "64", "--costs", "expected"
    )
    assert code == 0, err
    assert "expected decode" in out and "unfitted: band widened" in out


# -- tp x ep and data-parallel attention: which attention each GPU runs, what cache follows --------


def test_tpxep_keeps_mla_whole_on_each_gpu_of_a_group(capsys: pytest.CaptureFixture[str]) -> None:
    base = (*DSV3, "--gpus", "16", "--batch", "256", "--context", "4096")
    data_parallel = as_json(capsys, "estimate", "--parallel", "ep", *base)
    grouped = as_json(capsys, "estimate", "--parallel", "tpxep", "--tp", "8", *base)
    assert data_parallel["kv_copies"] == 1.0 and data_parallel["attention_dp"] is True
    assert grouped["kv_copies"] == 8.0 and grouped["attention_dp"] is False
    assert grouped["tp"] == 8 and grouped["attention_groups"] == 2 and grouped["parallel"] == "tpxep"
    # Each GPU of a group holds the group's whole latent cache: 16 users' on a GPU under DP,
    # 128 under TP8, so the cache a GPU holds is 8 times larger.
    assert grouped["kv_bytes_per_gpu"] == pytest.approx(8 * data_parallel["kv_bytes_per_gpu"])
    # Splitting the non-expert weights over 8 GPUs leaves more room, yet DP attention holds more users.
    assert grouped["weights_bytes_per_gpu"] < data_parallel["weights_bytes_per_gpu"]
    assert data_parallel["max_batch_that_fits"] > 4 * grouped["max_batch_that_fits"]
    assert grouped["allreduces_per_step"] == 2 * 61 and data_parallel["allreduces_per_step"] == 0


def test_reports_say_which_attention_each_gpu_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "estimate", "--parallel", "tpxep", "--tp", "8", *DSV3, "--gpus", "16")
    assert code == 0, err
    assert "EP16 (attention TP8 x 2 groups)" in out
    assert "attention tensor-parallel over 8 GPUs, 2 data-parallel groups" in out
    assert "each cached token kept 8 time(s)" in out
    code, out, err = run_cli(
        capsys, "simulate", "--parallel", "ep", *DSV3, "--gpus", "16", "--requests", "4", "--prompt", "64"
    )
    assert code == 0, err
    assert "EP16, data-parallel attention: each GPU its own users' attention and cache" in out
    assert "over the 16 attention group(s)" in out and "means over" in out


def test_simulate_dp_attention_multiplies_the_mla_cache(capsys: pytest.CaptureFixture[str]) -> None:
    """Tensor parallelism over 8 GPUs holds DeepSeek's latent cache 8 times; --dp-attention once."""
    base = ("simulate", *DSV3, "--gpus", "8", "--requests", "4", "--prompt", "64")
    whole = as_json(capsys, *base)
    split = as_json(capsys, *base, "--dp-attention")
    assert split["kv_blocks"] == pytest.approx(8 * whole["kv_blocks"], rel=1e-3)


# -- Bad input: one line each, naming the fix -----------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (("estimate", "--parallel", "tpxep", *DSV3, "--gpus", "16"), ("--parallel tpxep", "--tp N")),
        (("estimate", "--parallel", "tpxep", "--tp", "3", *DSV3, "--gpus", "16"), ("--tp", "divisor of --gpus")),
        (
            ("estimate", "--parallel", "tpxep", "--tp", "256", *DSV3, "--gpus", "256"),
            ("--tp", "128 attention heads", "--tp 128 or less"),
        ),
        (("estimate", "--parallel", "ep", "--tp", "2", *DSV3, "--gpus", "16"), ("--tp 2", "--parallel tpxep")),
        (("simulate", *DSV3, "--gpus", "16", "--tp", "2"), ("--tp", "add --parallel tpxep")),
        (
            ("estimate", "--parallel", "tpxep", "--tp", "8", "--dp-attention", *DSV3, "--gpus", "16"),
            ("--dp-attention", "--parallel ep"),
        ),
        (("simulate", *DSV3, "--dp-attention"), ("--dp-attention", "one GPU", "--gpus N")),
        (("simulate", "--parallel", "ep", *DSV3, "--gpus", "6"), ("--ep", "do not split evenly", "divisor")),
        (("simulate", "--parallel", "ep", *DSV3, "--gpus", "512"), ("--ep", "more than the model's 256 experts")),
        (
            ("simulate", "--parallel", "ep", *DSV3, "--gpus", "8", "--expert-imbalance", "0.9"),
            ("--expert-imbalance", "at least 1"),
        ),
        (
            ("simulate", "--parallel", "ep", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--gpus", "8"),
            ("--parallel ep", "dense model"),
        ),
        (("simulate", "--parallel", "ep", *DSV3, "--gpus", "16", "--replicas", "2"), ("--replicas", "leave it out")),
    ],
)
def test_bad_layouts_are_one_line(capsys: pytest.CaptureFixture[str], argv: tuple, names: tuple) -> None:
    code, out, err = run_cli(capsys, *argv)
    line = err.strip()
    assert code != 0 and out == "" and "\n" not in line and "Traceback" not in line
    for name in names:
        assert name in line, line


# -- Every published mixture-of-experts row of the measurement file, under its expert layout -----

RUNS_FILE = Path(__file__).resolve().parents[1] / "data" / "serving-measurements.csv"


def expert_bound(run) -> float:
    """A figure no engine beats on the row's GPUs with its experts spread over them (attention
    data-parallel where the row says so, else tensor-parallel over all of them): throughput, the
    most users that fit at the prompt's length times one step's tokens over that step (prefills
    and longer contexts only cost more); TTFT, the prompt alone; ITL, one user's step at the
    prompt's length."""
    model = SPECS.model(run.model)
    hardware = Hardware(SPECS.gpu(run.gpu), 1, "auto")
    layout = ExpertLayout(run.gpus, attention_tp=1 if run.attention_dp or run.gpus == 1 else run.gpus)
    alone = Workload(model, run.weight_precision, run.kv_precision, 1, run.input_tokens, run.input_tokens)
    step = expert_step(hardware, alone, layout)
    if run.kind == "ttft":
        return step.prefill_s
    if run.kind == "itl":
        return step.step_s
    users = step.max_batch_that_fits
    full = Workload(model, run.weight_precision, run.kv_precision, users, run.input_tokens)
    return users / expert_step(hardware, full, layout).step_s


def test_no_published_moe_row_beats_its_expert_parallel_ceiling() -> None:
    runs = [
        run
        for run in load_serving_runs(RUNS_FILE)
        if run.model in SPECS.models and SPECS.model(run.model).moe is not None and run.gpu in SPECS.gpus
    ]
    assert {run.model for run in runs} == {"mixtral-8x7b", "mixtral-8x22b", "deepseek-v3"} and len(runs) > 100
    for run in runs:
        bound = expert_bound(run)
        beaten = run.value > bound if run.kind == "throughput" else run.value < bound
        assert not beaten, (run.id, run.value, bound)


def test_estimate_ep_counts_its_replicas(capsys: pytest.CaptureFixture[str]) -> None:
    """--replicas with an expert-parallel layout: N copies of the whole EP group, never ignored."""
    base = ("estimate", "--parallel", "ep", *DSV3, "--gpus", "16", "--batch", "64")
    one = as_json(capsys, *base)
    three = as_json(capsys, *base, "--replicas", "3")
    assert three["replicas"]["gpus"] == 48 and three["replicas"]["users"] == 192
    assert three["replicas"]["decode_tokens_per_s_total"] == pytest.approx(3 * one["decode_tokens_per_s_total"])
