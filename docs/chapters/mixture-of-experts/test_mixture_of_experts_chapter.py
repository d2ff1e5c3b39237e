"""Chapter 7, "Mixture of Experts and Expert Parallelism": its numbers, the claims its prose makes of
them, the calculator, the Run cells and the quiz.

Every number the page quotes is recomputed here from the package and compared with what the page
module wrote, and every sentence that compares two numbers is checked on those numbers, so a change
to the cost model that turns a sentence false fails here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from roofline import Hardware, Workload, builtin_specs, moe
from roofline import architecture as arch
from roofline import formatting as fmt
from roofline.epdeploy import ExpertLayout, alltoall_s, expert_step
from roofline.moelayout import ep_break_even_batch, ep_layout, tp_layout
from roofline.quantization import critical_batch_for
from sitegen.context import load_context
from sitegen.pages import find

FOLDER = find(Path(__file__).resolve().parents[2], "mixture-of-experts")
ROOT = FOLDER.docs.parent
chapter = FOLDER.module()
calculator = FOLDER.calculator("mixture_of_experts")
SPECS = builtin_specs()
PAGE = (FOLDER.folder / "index.md").read_text()
DS = SPECS.model("deepseek-v3")


@pytest.fixture(scope="module")
def content():
    return chapter.build(load_context(ROOT))


@pytest.fixture(scope="module")
def values(content) -> dict[str, str]:
    return content.values


def rows_of(table: str) -> list[list[str]]:
    """A Markdown table's body rows, each split into cells (header and rule left out)."""
    lines = [line for line in table.splitlines() if line.startswith("|")][2:]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def seconds(text: str) -> float:
    """A duration as the page prints it (``675.9 ms``, ``1.38 s``) in seconds."""
    return number(text) * (1e-3 if text.endswith("ms") else 1.0)


def number(text: str) -> float:
    """The first number of a value as the page prints it (``1,304``, ``22.2 ms``, ``87%``)."""
    return float(re.search(r"-?[\d,]*\.?\d+", text).group().replace(",", ""))


# ---- What one decode step reads -----------------------------------------------------------------


def test_64_users_touch_most_of_deepseeks_experts_and_read_most_of_its_weights(values) -> None:
    touched = moe.routed_experts_touched(256, 8, 64)
    assert values["ds_touched_64"] == f"{touched:,.1f}" == "222.4"  # the module's docstring example
    read = arch.weights_read_bytes(DS, 64, "fp8")
    assert values["ds_read_64"] == fmt.gigabytes(read, 1)
    share = read / arch.weight_bytes(DS, "fp8")
    assert values["ds_read_64_share"] == f"{share:.0%}"
    # "the active advantage is gone long before the batch is large": most of the weights at 64.
    assert share > 0.8
    assert values["ds_read_1"] == fmt.gigabytes(arch.weights_read_bytes(DS, 1, "fp8"), 1)


def test_coarse_experts_saturate_first(values) -> None:
    """Mixtral reaches 90% of its weights at fewer users than every fine-grained model."""
    batches = {key: number(values[f"{key}_share_batch"]) for key in ("mixtral", "qwen3", "gpt", "deepseek")}
    assert batches["mixtral"] < min(batches[k] for k in ("qwen3", "gpt", "deepseek"))
    for key, (model_id, precision) in zip(batches, chapter.MODELS, strict=True):
        model = SPECS.model(model_id)
        found = int(batches[key])
        target = 0.9 * arch.weight_bytes(model, precision)
        assert arch.weights_read_bytes(model, found, precision) >= target
        assert arch.weights_read_bytes(model, found - 1, precision) < target


def test_the_figure_climbs_from_the_active_share_to_nearly_all(content) -> None:
    spec = next(figure.spec for figure in content.figures if figure.name == "moe-reads-vs-batch")
    points = spec["data"]["values"] if "data" in spec else spec["datasets"][next(iter(spec["datasets"]))]
    for model in ("Mixtral 8x7B", "Qwen3-30B-A3B", "gpt-oss-120b", "DeepSeek-V3"):
        shares = [p["share"] for p in points if p["model"] == model]
        assert shares == sorted(shares) and shares[0] < 30 and shares[-1] > 95, model


def test_the_reads_table_lists_each_model_at_its_checkpoint_format(content) -> None:
    table = content.tables["moe-reads"]
    assert "| DeepSeek-V3 | 256 (8 a token) | 1 | 671B | 37.6B |" in table
    assert "(mxfp4)" in table.split("gpt-oss-120b")[1].split("\n")[0]
    assert "Qwen3-30B-A3B | 128 (8 a token) | 0 | 30.5B" in table


# ---- Compute-bound experts ----------------------------------------------------------------------


def test_an_expert_needs_e_over_e_tok_times_the_dense_batch(values) -> None:
    dense = critical_batch_for(Hardware(SPECS.gpu("h100-sxm")), "fp8")
    assert values["ds_dense_crit"] == f"{round(dense):,}"
    assert values["ds_expert_crit"] == f"{round(dense * 32):,}"
    assert values["tpe_256"] == "8.0"  # 256 * 8 / 256
    # "far below": 8 tokens against the dense critical batch.
    assert number(values["tpe_256"]) < number(values["ds_dense_crit"]) / 10


def test_the_compute_bound_batchs_cache_outgrows_a_node(values) -> None:
    gpus = number(values["crit_cache_gpus"])
    assert gpus > 8  # "No single node holds such a batch"
    cache = arch.kv_cache_bytes(DS, 4096) * moe.expert_critical_batch(
        critical_batch_for(Hardware(SPECS.gpu("h100-sxm")), "fp8"), 256, 8
    )
    assert values["crit_cache_tb"] == f"{cache / 1e12:,.1f} TB"


# ---- Expert parallelism -------------------------------------------------------------------------


def test_the_all_to_all_bytes_are_deepseeks_design(values) -> None:
    assert values["a2a_dispatch"] == "59.1 kB" and values["a2a_combine"] == "114.7 kB"
    assert values["a2a_token"] == "173.8 kB"  # 59,136 + 114,688 bytes, the module's docstring
    assert values["a2a_bf16"] == "229.4 kB"


def test_crossing_nodes_makes_the_all_to_all_slower_and_overlap_hides_it(values) -> None:
    steps = {
        g: expert_step(Hardware(SPECS.gpu("h100-sxm")), Workload(DS, "fp8", "bf16", 128 * g, 4096), ExpertLayout(g))
        for g in (8, 32)
    }
    assert values["a2a_small_ms"] == fmt.milliseconds(steps[8].alltoall_s)
    assert values["a2a_big_ms"] == fmt.milliseconds(steps[32].alltoall_s)
    assert steps[32].alltoall_s > steps[8].alltoall_s  # "takes ... times as long"
    big = steps[32]
    assert values["big_step_ms"] == fmt.milliseconds(max(big.memory_s, big.compute_s, big.alltoall_s))
    # The page says the step is set by the read: the overlap hides the all-to-all here.
    assert big.bound == "memory" and big.alltoall_s < big.memory_s
    assert values["big_serial_ms"] == fmt.milliseconds(big.memory_s + big.alltoall_s)


def test_the_published_kernel_figures_are_the_specs_presets(values) -> None:
    preset = SPECS.gpu("h100-sxm").interconnect.alltoall["deepep_v1_normal"]
    assert values["deepep_nvlink_gbps"] == f"{preset.nvlink_bytes_per_s / 1e9:,.0f}" == "158"
    assert values["deepep_rdma_gbps"] == "58"
    assert values["ll_floor_ms"] == fmt.milliseconds(58 * (77 + 114) / 1e6)


# ---- Attention beside the experts, redundant experts, imbalance ---------------------------------


def test_data_parallel_attention_holds_more_users_than_tensor_parallel(values) -> None:
    h200 = Hardware(SPECS.gpu("h200"))
    work = Workload(DS, "fp8", "bf16", 1, 4096)
    tp, ep = tp_layout(h200, work, 8), ep_layout(h200, work, 8)
    assert values["tp_node_users"] == f"{tp.max_batch:,}" and values["ep_node_users"] == f"{ep.max_batch:,}"
    assert ep.max_batch > 2 * tp.max_batch


def test_redundant_slots_and_the_skew_that_turns_the_step(values) -> None:
    assert (values["ep32_slots"], values["ep72_slots"], values["ep144_slots"]) == ("9", "4", "2")
    assert values["slots"] == "288"
    # At the balanced factor the step does not move; at the measured skew the busiest GPU's
    # all-to-all grows by the skew, and the prose names whichever part then sets the step.
    assert values["skew_eplb_ms"] == values["skew_none_ms"]
    assert number(values["skew_raw_a2a_ms"]) == pytest.approx(
        number(values["skew_none_a2a_ms"]) * moe.MEASURED_IMBALANCE_NO_EPLB, rel=0.02
    )
    assert number(values["skew_raw_ms"]) >= number(values["skew_none_ms"])
    assert values["skew_raw_setter"] == chapter.SETTERS[values["skew_raw_bound"]]
    # Per destination, a token crosses the network fewer times than its copies leave the node.
    assert values["ds_node_limit"] == "4"
    assert float(values["ep_big_remote"]) < float(values["ep_big_copies_off_node"]) == 6.0


# ---- Serving at scale ---------------------------------------------------------------------------


def test_every_published_deepseek_throughput_sits_under_its_ceiling(content) -> None:
    rows = rows_of(content.tables["ds-at-scale"])
    assert len(rows) == 6
    for row in rows:
        measured, ceiling = number(row[2]), number(row[3])
        assert measured < ceiling, row


def test_the_serving_prose_names_what_bounds_each_ceiling(values) -> None:
    # Charged once per node reached, SGLang's EP72 all-to-all no longer outlasts its reads.
    assert values["sgl_decode_bound"] == "memory"
    assert number(values["sgl_decode_a2a_ms"]) < number(values["sgl_decode_memory_ms"])
    assert values["sgl_decode_setter"] == "reading weights and cache"
    assert values["ds_decode_bound"] == "memory"
    # "{ds_prefill_uncached} ... below the ceiling"; the cache-hit figure is not bounded by it.
    assert number(values["ds_prefill_uncached"]) < number(values["ds_prefill_ceiling"])
    # "is {prefill_bound}-bound: the all-to-all takes ... against ... of math"
    a2a, math_s = seconds(values["prefill_a2a_s"]), seconds(values["prefill_compute_s"])
    assert values["prefill_bound"] == ("communication" if a2a > math_s else "compute")
    assert number(values["trt_measured"]) < number(values["trt_ceiling_gpu"])
    # "far past the critical batch": a prefill batch feeds every expert.
    assert values["prefill_tpe"] == f"{16384 * 32 * 8 // 256:,}"
    assert number(values["prefill_tpe"]) > 10 * number(values["ds_dense_crit"])


def test_the_page_says_ceiling_only_for_expert_parallelism() -> None:
    assert "`--costs expected` does not yet cover expert parallelism" in PAGE


# ---- The batch at which EP pays -----------------------------------------------------------------


def test_ep_overtakes_tp_at_the_quoted_batch_and_not_before(values) -> None:
    h200 = Hardware(SPECS.gpu("h200"))
    base = Workload(DS, "fp8", "bf16", 1, 4096)
    even = ep_break_even_batch(h200, base, 8)
    assert values["break_even"] == f"{even:,}"

    def rates(users: int) -> tuple[float, float]:
        work = Workload(DS, "fp8", "bf16", users, 4096)
        return ep_layout(h200, work, 8).tokens_per_s, tp_layout(h200, work, 8).tokens_per_s

    ep, tp = rates(even)
    assert ep >= tp
    ep, tp = rates(even - 1)
    assert ep < tp
    assert number(values["adv_1"]) > 1 and number(values["adv_256"]) > 1


def test_longer_contexts_bring_the_crossing_down(content) -> None:
    first_column = [number(row[1]) for row in rows_of(content.tables["ep-break-even"])]
    assert first_column == sorted(first_column, reverse=True)


# ---- Calculator, Run cells ----------------------------------------------------------------------


def test_the_calculator_names_the_fewest_gpus_and_why_others_fail() -> None:
    answer = calculator.view(**calculator.DEFAULTS)
    assert answer["fewest"].startswith("EP32:")
    assert "does not fit" in answer["g8"]
    assert "do not split evenly over 72 GPUs" in answer["g72"]
    assert "cannot give each GPU whole heads" in answer["g144"]


def test_the_calculators_example_serves_sglangs_layout_at_the_tables_ceiling(values) -> None:
    example = chapter.EXAMPLES["sglang"]
    answer = calculator.view(**example)
    assert "EP72" in answer["g72"] and "tokens/s" in answer["g72"].split("·")[1]
    work = Workload(DS, "fp8", "bf16", int(example["batch"]), int(example["context"]))
    step = expert_step(Hardware(SPECS.gpu("h100-sxm")), work, ExpertLayout(72, redundant=32))
    assert fmt.rate(step.batch / step.step_s) in answer["g72"]
    assert values["sgl_decode_ceiling"] == f"{round(step.batch / step.step_s * 8 / 72):,}"


def test_a_dense_model_gets_tensor_parallel_layouts_only() -> None:
    answer = calculator.view(**{**calculator.DEFAULTS, "model": "llama-3.1-70b", "batch": 16})
    assert "dense model" in answer["g8"]
    assert answer["fewest"].startswith("TP")


@pytest.mark.parametrize("program", ["experts_touched", "expert_step", "break_even"])
def test_each_run_cell_prints_the_pages_numbers(program: str, values) -> None:
    path = FOLDER.folder / "programs" / f"{program}.py"
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, check=True).stdout
    if program == "experts_touched":
        assert "222.4" in out and "9,451" in out
    elif program == "break_even":
        assert f"from {values['break_even']} users" in out
    else:
        assert "memory" in out and "yes" in out


def test_deepeps_published_kernel_times_stay_above_the_ceilings_time(content) -> None:
    """The ceiling's dispatch and combine (bytes at the best link rates, no fixed latency) take less
    time than DeepEP measured at every EP size, and its times are the package's own."""
    rows = rows_of(content.tables["deepep-kernels"])
    assert [row[0] for row in rows] == [f"EP{ep}" for ep in chapter.DEEPEP_LOW_LATENCY_US]
    hardware = Hardware(SPECS.gpu("h100-sxm"))
    per_token = moe.alltoall_bytes_per_token(DS.hidden_size, 8)
    for row, (ep, (out_us, back_us)) in zip(rows, chapter.DEEPEP_LOW_LATENCY_US.items(), strict=True):
        ceiling = alltoall_s(hardware, ep, 128, per_token, 1, DS)[0] * 1e6
        assert row[2] == f"{ceiling:,.0f}"
        assert ceiling < out_us + back_us, row
