"""Issue 36: the expected figures name what they were fitted on, and say when they leave it.

A harness (what a measurement includes round the GPU) carries its own fitted host costs, so an
offline loop is not charged an HTTP path; an engine, a harness or a GPU's math the fit has no
rows for takes the common fit with the wider cross-validated band, and the report and JSON say
so; the band's coverage is cross-validated by release and by GPU beside the in-sample one."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from roofline import Hardware, Workload, benchmarks, load_calibration, load_specs
from roofline.calibration import link_kind, parse_calibration
from roofline.cli import main
from roofline.errors import SpecError
from roofline.harness import ENGINES, HARNESSES, SERIAL_CONTEXT_HARNESSES, engine_of
from roofline.performance import iteration_costs, prefill_pass

ROOT = Path(__file__).resolve().parents[1]
ROWS = ROOT / "data" / "serving-measurements.csv"
TEXT = (ROOT / "roofline" / "data" / "calibration.toml").read_text(encoding="utf-8")
SIMULATE = ["simulate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--rate", "2", "--requests", "40"]
SIMULATE += ["--prompt", "500", "--output", "50", "--costs", "expected", "--json"]


def _json(capsys, args: list[str]) -> dict:
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def test_every_modelled_row_names_its_harness_and_an_engine_the_package_knows() -> None:
    """Each fit and check row says what its figure includes (read in its source) and names an engine."""
    runs = [run for run in benchmarks.load_serving_runs(ROWS) if run.split != "out"]
    assert runs and all(run.harness in HARNESSES and run.engine_id in ENGINES for run in runs)
    by_label = {run.engine: run.harness for run in runs}
    assert by_label["TensorRT-LLM 0.17"] == "offline"  # trtllm-bench throughput, the engine's own loop
    assert by_label["TensorRT-LLM 0.14 + Triton"] == "server"  # Triton's TensorRT-LLM backend
    assert by_label["NIM 1.8.0 (TensorRT-LLM)"] == "http"  # genai-perf against NIM's OpenAI API
    assert engine_of("NIM 1.8.0 (TensorRT-LLM)") == "tensorrt-llm" and engine_of("SGLang 0.4") == "sglang"


def test_each_harness_is_fitted_on_its_own_rows_and_offline_has_no_request_path() -> None:
    """The file's harness tables count the fit rows measured through each; offline is charged 0 s a
    request (not fitted), the server harness a few milliseconds, and http, with no fit rows,
    borrows the server's and says so."""
    calibration = load_calibration()
    fit = [run for run in benchmarks.load_serving_runs(ROWS) if run.split == "fit"]
    for name, costs in calibration.harnesses.items():
        assert costs.fit_rows == sum(1 for run in fit if run.harness == name), name
    offline, server, http = (calibration.harnesses[name] for name in ("offline", "server", "http"))
    assert offline.request_overhead_s == 0 and offline.fitted and offline.token_overhead_s > 0
    assert 1e-3 < server.request_overhead_s < 5e-2 and server.fitted
    assert not http.fitted and http.stand_in == "server" and http.fit_rows == 0
    assert (http.request_overhead_s, http.token_overhead_s) == (server.request_overhead_s, server.token_overhead_s)


def test_an_offline_run_is_not_charged_the_server_path(capsys) -> None:
    """The same simulation under --harness offline and server: every TTFT differs by exactly the
    server harness's request time, and JSON and the report name the harness and its costs."""
    calibration = load_calibration()
    server = _json(capsys, [*SIMULATE, "--harness", "server"])
    offline = _json(capsys, [*SIMULATE, "--harness", "offline"])
    request = calibration.harnesses["server"].request_overhead_s
    assert offline["fit"]["request_overhead_s"] == 0 and server["fit"]["request_overhead_s"] == request
    assert offline["fit"]["token_overhead_s"] == calibration.harnesses["offline"].token_overhead_s
    # Different token costs move the schedule a little; the request path moves every TTFT by itself.
    gap = server["expected"]["ttft_mean_s"] - offline["expected"]["ttft_mean_s"]
    assert gap == pytest.approx(request, rel=0.05)
    assert offline["fit"]["harness"] == "offline" and offline["fit"]["unfitted"] == []
    assert main([*SIMULATE[:-1], "--harness", "offline"]) == 0
    report = capsys.readouterr().out
    assert f"offline, {HARNESSES['offline']}: 0.0 ms a request" in report
    assert "unfitted" not in report


def test_a_static_session_charges_its_context_passes_the_fitted_serial_share(capsys) -> None:
    """TensorRT-LLM 0.5 to 0.9's gptSessionBenchmark rows are the ``session`` harness: no request
    path, a token cost of their own, and κ, fitted on that harness's fit TTFTs alone, added to a
    context pass as ``κ * min(reads, math)``. Under --harness session a prompt's expected prefill is
    offline's costs' prefill plus exactly that (at the session's token cost, one sampled token);
    a decode step is not charged it."""
    calibration = load_calibration()
    session = calibration.harnesses["session"]
    fit = [run for run in benchmarks.load_serving_runs(ROWS) if run.split == "fit"]
    serial = [run for run in fit if run.harness == "session" and run.kind == "ttft"]
    assert len(serial) == calibration.provenance["context_serial_rows"] == 10
    assert {run.engine for run in serial} == {"TensorRT-LLM 0.5 (static)"}
    assert session.fitted and session.request_overhead_s == 0 and 0.5 < session.context_serial_share <= 1
    assert all(calibration.harnesses[name].context_serial_share == 0 for name in HARNESSES if name != "session")
    args = ["estimate", "--gpu", "a100-80gb", "--model", "llama-2-7b", "--batch", "1", "--context", "256"]
    args += ["--prompt", "128", "--costs", "expected", "--json"]
    offline = _json(capsys, [*args, "--harness", "offline"])
    static = _json(capsys, [*args, "--harness", "session"])
    assert static["fit"]["context_serial_share"] == session.context_serial_share
    assert offline["fit"]["context_serial_share"] == 0
    specs = load_specs()
    work = Workload(specs.model("llama-2-7b"), "bf16", prompt=128)
    plain = prefill_pass(Hardware(specs.gpu("a100-80gb"), costs=calibration.cost_model("a100-80gb")), work)
    serial_s = session.context_serial_share * min(plain.memory_s, plain.compute_s)
    assert 0.3 * plain.seconds < serial_s  # an A100 at 128 tokens: reads and math take about as long
    # The simulator charges an iteration of prompt tokens alone the same, and one with a decode none.
    static_hw = Hardware(
        specs.gpu("a100-80gb"), costs=calibration.for_ground("a100-80gb", harness="session").cost_model("a100-80gb")
    )
    costs = iteration_costs(static_hw, work)
    assert costs.iteration(0, 0, 128, 0, 128 * 129 / 2, 1).seconds == pytest.approx(
        prefill_pass(static_hw, work).seconds
    )
    mixed = costs.iteration(1, 500, 128, 0, 128 * 129 / 2, 1)
    assert mixed.overhead_s == pytest.approx(costs.overhead_s + 2 * costs.token_overhead_s)
    token_gap = session.token_overhead_s - calibration.harnesses["offline"].token_overhead_s
    assert static["expected"]["prefill_s"] == pytest.approx(offline["expected"]["prefill_s"] + serial_s + token_gap)
    step_gap = static["expected"]["decode_step_s"] - offline["expected"]["decode_step_s"]
    assert step_gap == pytest.approx(token_gap)  # one sampled token a step: the token cost, no κ
    assert main([*args[:-1], "--harness", "session"]) == 0
    report = capsys.readouterr().out
    assert f"a context pass + {session.context_serial_share:.2f} x min(reads, math)" in report


def test_a_gpu_without_a_fitted_compute_share_says_so_and_widens_the_band(capsys) -> None:
    """A10 (no fit rows): the report and JSON say "unfitted: band widened", and the band is the
    file's band joined with the leave-one-GPU-out band; the H100 at bf16 (fitted) keeps the file's."""
    calibration = load_calibration()
    args = ["estimate", "--model", "llama-3.1-8b", "--batch", "8", "--context", "2048", "--prompt", "512"]
    args += ["--costs", "expected", "--harness", "offline"]
    fitted = _json(capsys, [*args, "--gpu", "h100-sxm", "--json"])
    assert fitted["fit"]["unfitted"] == [] and not fitted["fit"]["band_widened"]
    unfitted = _json(capsys, [*args, "--gpu", "a10", "--json"])
    assert unfitted["fit"]["band_widened"] and len(unfitted["fit"]["unfitted"]) == 1
    assert unfitted["fit"]["unfitted"][0].startswith("GPU a10: compute share unfitted (no fit rows)")
    for metric, key in (("itl_mean_s", "decode_step_s"), ("ttft_mean_s", "prefill_s")):
        low, high = calibration.band[metric]
        gpu_low, gpu_high = calibration.out_of_ground_bands["band_leave_one_gpu_out"][metric]
        value = unfitted["expected"][key]
        # The widened band's fast end stops at the ceiling's own time, which no run can beat.
        ceiling = unfitted[key]
        widened = [max(value * min(low, gpu_low), ceiling), value * max(high, gpu_high)]
        assert unfitted["band"][metric] == pytest.approx(widened)
        h100 = fitted["expected"][key]
        assert fitted["band"][metric] == pytest.approx([h100 * low, h100 * high])
    assert main([*args, "--gpu", "a10"]) == 0
    assert "unfitted             GPU a10: compute share unfitted" in capsys.readouterr().out
    # The L40S and the MI300X have an fp8 share (TensorRT-LLM's rows, AMD's vLLM rows) but none at
    # bf16: the math is named.
    for gpu in ("l40s", "mi300x"):
        bf16 = _json(capsys, [*args, "--gpu", gpu, "--json"])["fit"]["unfitted"]
        assert bf16 and bf16[0].startswith(f"GPU {gpu}: bf16 compute share unfitted")
        assert _json(capsys, [*args, "--gpu", gpu, "--precision", "fp8", "--json"])["fit"]["unfitted"] == []


def test_links_of_a_kind_without_fit_rows_are_flagged_and_pcie_has_its_own_share(capsys) -> None:
    """The fit gives PCIe (L40S at TP4 and TP8) and Infinity Fabric (AMD's eight-MI300X rows) link
    shares of their own, below NVLink's; eight TPU v5e chips over ICI, which no fit row crossed, take
    NVLink's share and say so."""
    calibration = load_calibration()
    specs = load_specs()
    for gpu, kind in (("l40s", "pcie"), ("mi300x", "infinity-fabric")):
        assert 0 < calibration.link_efficiency_by_kind[kind] < calibration.link_efficiency
        assert calibration.cost_model(specs.gpu(gpu)).link_efficiency == calibration.link_efficiency_by_kind[kind]
    assert calibration.cost_model(specs.gpu("tpu-v5e")).link_efficiency == calibration.link_efficiency
    args = ["estimate", "--model", "llama-3.1-70b", "--precision", "fp8", "--batch", "8", "--context", "2048"]
    args += ["--costs", "expected", "--json"]
    for gpu, gpus in (("l40s", "4"), ("mi300x", "8")):
        assert _json(capsys, [*args, "--gpu", gpu, "--gpus", gpus])["fit"]["unfitted"] == []
    tpu = _json(capsys, [*args, "--gpu", "tpu-v5e", "--gpus", "8"])["fit"]["unfitted"]
    assert any(s.startswith("GPU tpu-v5e: ici links unfitted") for s in tpu)


def test_nvlink_3_is_a_kind_of_link_of_its_own_and_flagged_until_a_multi_gpu_a100_row_fits_it(capsys) -> None:
    """The A100's NVLink 3 (NVSwitch in an HGX A100, a bridge between two PCIe cards) is not the
    NVLink 4 and 5 the NVLink share is fitted on: a ring all-reduce reaches about 200 of its 300 GB/s
    each way (nccl-tests#149, cited in the A100's spec), against about 370 of 450 on H100s. No row of
    the joint fit runs on several A100s (TensorRT-LLM 0.5's two batch-1 TTFTs on four fit only the
    session harness's κ, every link share held), so an HGX A100's predictions take that measured
    share, 200/300, and the bridged PCIe cards, which have no measurement, borrow NVLink's; both say
    so. One A100 has no links to flag."""
    calibration = load_calibration()
    specs = load_specs()
    sxm, pcie = specs.gpu("a100-80gb"), specs.gpu("a100-80gb-pcie")
    assert link_kind(sxm) == link_kind(pcie) == "nvlink3"
    assert sxm.interconnect.allreduce_bus_bytes_per_s == 200e9 and pcie.interconnect.allreduce_bus_bytes_per_s is None
    assert calibration.cost_model(sxm).link_efficiency == pytest.approx(200 / 300)
    assert calibration.cost_model(pcie).link_efficiency == calibration.link_efficiency
    # A share measured on a fabric never replaces one the fit found for its kind of link.
    fitted = replace(calibration, link_efficiency_by_kind={**calibration.link_efficiency_by_kind, "nvlink3": 0.5})
    assert fitted.cost_model(sxm).link_efficiency == fitted.cost_model(pcie).link_efficiency == 0.5
    assert {link_kind(specs.gpu(gpu)) for gpu in ("h100-sxm", "h200", "b200", "gh200")} == {"nvlink"}
    assert "nvlink3" not in calibration.link_efficiency_by_kind
    fit_rows = [run for run in benchmarks.load_serving_runs(ROWS) if run.split == "fit"]
    multi_a100 = [run for run in fit_rows if run.gpu.startswith("a100") and run.gpus > 1]
    assert len(multi_a100) == 2
    assert all(run.harness in SERIAL_CONTEXT_HARNESSES and run.kind == "ttft" for run in multi_a100)
    assert "nccl-tests/issues/149" in specs.gpu("a100-80gb").interconnect.source
    args = ["estimate", "--model", "llama-3.1-70b", "--batch", "8", "--context", "2048"]
    args += ["--costs", "expected", "--json"]
    shares = {"a100-80gb": "the share a large all-reduce was measured to reach on them, 67%"}
    shares["a100-80gb-pcie"] = f"the share fitted on NVLink 4 and 5, {calibration.link_efficiency:.0%}"
    for gpu, gpus in (("a100-80gb", "4"), ("a100-80gb-pcie", "2")):
        data = _json(capsys, [*args, "--gpu", gpu, "--gpus", gpus])
        assert data["fit"]["band_widened"]
        flag = f"GPU {gpu}: nvlink3 links unfitted (no multi-GPU fit rows over them), {shares[gpu]} of the bandwidth"
        assert any(s.startswith(flag) for s in data["fit"]["unfitted"]), data["fit"]["unfitted"]
    assert _json(capsys, [*args, "--gpu", "a100-80gb"])["fit"]["unfitted"] == []
    assert _json(capsys, [*args, "--gpu", "h100-sxm", "--gpus", "4"])["fit"]["unfitted"] == []
    status = main([*args[:-1], "--gpu", "a100-80gb", "--gpus", "8"])
    assert status == 0 and "unfitted             GPU a100-80gb: nvlink3 links unfitted" in capsys.readouterr().out


def test_an_engine_without_rows_uses_the_common_fit_and_says_so(capsys) -> None:
    """SGLang on an A10: the same costs as the common fit (no engine-specific parameter without
    rows), a wider band, and one sentence for the engine and one for the GPU. vLLM on ROCm, which
    AMD's MI300X rows fit, is not flagged."""
    base = ["simulate", "--gpu", "a10", "--model", "llama-3.1-8b", "--requests", "30", "--costs", "expected"]
    common = _json(capsys, [*base, "--json"])
    other = _json(capsys, [*base, "--engine", "sglang", "--json"])
    assert other["expected"] == common["expected"]
    assert not other["fit"]["engine_fitted"] and common["fit"]["engine_fitted"]
    sentences = other["fit"]["unfitted"]
    assert any(s.startswith("engine SGLang: unfitted (no fit rows), the common fit") for s in sentences)
    assert any(s.startswith("GPU a10: compute share unfitted") for s in sentences)
    assert _json(capsys, [*base, "--engine", "vllm-rocm", "--json"])["fit"]["engine_fitted"]
    low, high = other["band"]["throughput_tokens_per_s"]
    common_low, common_high = common["band"]["throughput_tokens_per_s"]
    assert low <= common_low and high >= common_high


@pytest.mark.parametrize(("option", "value"), [("--harness", "htp"), ("--engine", "vllmm")])
def test_an_unknown_harness_or_engine_is_one_line_naming_the_choices(capsys, option: str, value: str) -> None:
    with pytest.raises(SystemExit):
        main(["estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--costs", "expected", option, value])
    message = capsys.readouterr().err.strip()
    choices = HARNESSES if option == "--harness" else ENGINES
    assert message.count("\n") == 0 and f"invalid choice: '{value}'" in message
    assert all(f"'{name}'" in message for name in choices)
    with pytest.raises(SpecError, match="choose one of") as caught:
        load_calibration().for_ground("h100-sxm", **{option.strip("-"): value})
    assert "\n" not in str(caught.value)


def test_a_row_without_a_known_harness_is_refused_in_one_line() -> None:
    lines = ROWS.read_text(encoding="utf-8").splitlines()
    header = next(line for line in lines if not line.startswith("#"))
    row = next(line for line in lines if ",fit," in line and line.endswith(",offline"))
    for bad in ("", "browser"):
        with pytest.raises(SpecError, match="harness") as caught:
            benchmarks.parse_serving_runs(f"{header}\n{row.removesuffix('offline')}{bad}\n", "rows.csv")
        message = str(caught.value)
        assert "rows.csv" in message and "offline, session, server, http" in message and "\n" not in message
        # The fix names what each harness includes, in the words the report and --harness's help use.
        assert all(f"{name}, {what}" in message for name, what in HARNESSES.items())


def test_the_harness_help_says_what_each_harness_includes_as_the_report_does(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(f"{name}, {what}" in text for name, what in HARNESSES.items())


@pytest.mark.parametrize(
    ("mangle", "says"),
    [
        (lambda text: text.replace("[harness.http]", "[harness.web]"), "harness.web"),
        (lambda text: text.replace('stand_in = "server"\n', ""), "harness.http.stand_in"),
        (lambda text: text.replace("fit_rows = 56\n", "fit_rows = 56\ncontext_serial_share = 0.5\n"), "delete it"),
        (lambda text: re.sub(r"context_serial_share = [0-9.]+", "context_serial_share = 1.5", text), "from 0 to 1"),
        (lambda text: text.replace('fitted = ["tensorrt-llm"', 'fitted = ["trt"'), "engines.fitted"),
        (lambda text: text.split("[band_leave_one_gpu_out]")[0], "band_leave_one_gpu_out"),
    ],
)
def test_a_bad_ground_table_is_one_line_naming_the_fix(mangle, says: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_calibration(mangle(TEXT), "calibration.toml")
    message = str(caught.value)
    assert says in message and "scripts/fit_expected.py" in message and "\n" not in message


def test_the_file_records_cross_validated_coverage_beside_the_in_sample_one() -> None:
    """The coverage the file records is what its band and the predictions give: in sample over the fit
    rows, and over the held-out rows each against the band of its ground; the leave-one-release-out
    and leave-one-GPU-out bands are at least as wide as the cross-validated file band at one end."""
    calibration = load_calibration()
    coverage = calibration.provenance["coverage"]
    expected = set(("in_sample", "left_out_benchmark", "leave_one_release_out", "leave_one_gpu_out"))
    for how in ("on_ground", "nested"):
        expected |= {f"{name}_{how}" for name in ("leave_one_release_out", "leave_one_gpu_out")}
    assert expected | {"held_out_fixed_band", "held_out_on_ground", "note"} == set(coverage)
    runs = benchmarks.load_serving_runs(ROWS)
    predictions = benchmarks.parse_predictions((ROOT / "data" / "serving-expected.csv").read_text(encoding="utf-8"))
    specs = load_specs()

    def share(chosen, ground: bool) -> float:
        inside = 0
        for run in chosen:
            grounded = benchmarks.grounded(run, calibration, specs) if ground else calibration
            low, high = grounded.band[benchmarks.BAND_METRIC[run.kind]]
            inside += low <= run.value / predictions[run.id][1] <= high
        return inside / len(chosen)

    fit = [run for run in runs if run.split == "fit"]
    held = [run for run in runs if run.split == "check" and run.counted]
    assert share(fit, False) == pytest.approx(coverage["in_sample"]["all"], abs=1e-6)
    assert share(held, True) == pytest.approx(coverage["held_out_on_ground"]["all"], abs=1e-6)
    assert share(held, False) == pytest.approx(coverage["held_out_fixed_band"]["all"], abs=1e-6)
    by_gpu = calibration.provenance["held_out_throughput_by_gpu"]
    l40s = [run for run in held if run.gpu == "l40s" and run.gpus > 1 and run.kind == "throughput"]
    assert by_gpu["l40s x2+"]["runs"] == len(l40s)
    assert by_gpu["l40s x2+"]["in_band"] == pytest.approx(share(l40s, True), abs=1e-6)
