"""The browser's runtime without a browser: the wheel in Pyodide under Node 20 must agree with CPython.

Takes the wheel and the memory snapshot the tests' site serves, computes every answer
here in CPython, then runs ``tests/node/golden.test.mjs`` with Node's own test
runner, which boots the npm ``pyodide`` package through the page's boot module
twice (restored from the snapshot, and plainly) and compares; it also checks that
seven kinds of broken snapshot are refused with their reason, and that a refused one
falls back to a plain boot that prints the same,
that a snapshot a host already unzipped still restores, and that two restores do
not share the random module's state. The golden cases are the
issue's reference deployments (see tests/test_golden.py for their sources) plus
a mixture-of-experts and a latent-attention model, so every formula runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import roofline_views as views

from sitegen.pages import find
from support import node_test_report

pytestmark = [pytest.mark.node, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ROOT / "docs" / "javascripts" / "runtime"
CHAPTER = find(ROOT / "docs", "prefill-vs-decode")
PROGRAM = CHAPTER.folder / "programs" / "h100_decode_prefill.py"
PYODIDE = ROOT / "node_modules" / "pyodide"
CALCULATOR = "decode_speed"
#: File name in the worker -> the file the site serves (as worker.mjs writes them).
MODULES = {
    "roofline_cell.py": RUNTIME / "roofline_cell.py",
    "roofline_views.py": RUNTIME / "roofline_views.py",
    f"roofline_calculator_{CALCULATOR}.py": CHAPTER.calculators[CALCULATOR],
}
#: Per boot: how it started, the package's whereabouts, the program, the traceback, isolation.
CHECKS_PER_BOOT = 5
BROKEN_SNAPSHOTS = 7  # each refused with its reason
FALLBACK_BOOT = 1  # one refused snapshot all the way to a plain boot that prints the same
UNZIPPED_SNAPSHOT = 1  # one sent with Content-Encoding: gzip, which the browser has undone
FRESH_RANDOMNESS = 1  # two restores must not draw the same random numbers
FIRST_RUN_READY = 1  # a restore holds the first Run's own package copy
GROWN_HEAP = 1  # a snapshot whose memory outgrew the wasm's initial memory restores
KEPT_SNAPSHOT = 3  # the raw snapshot kept between pages: restored from, replaced when altered, or not kept

CASES = [
    {"gpu": "h100-sxm", "model": "llama-3.1-8b", "precision": "bf16"},
    {"gpu": "h100-sxm", "model": "llama-3.1-8b", "precision": "fp8"},
    {"gpu": "h100-sxm", "model": "llama-3.1-8b", "precision": "int4"},
    {"gpu": "h100-sxm", "model": "llama-3.1-8b", "prompt": 2000},
    {"gpu": "h100-sxm", "model": "llama-3.1-8b", "context": 4096},
    {"gpu": "h100-sxm", "model": "llama-3.1-70b"},
    {"gpu": "h100-sxm", "model": "llama-3.1-70b", "gpus": 2},
    {"gpu": "h100-sxm", "model": "llama-3.1-8b", "batch": 512},
    {"gpu": "h200", "model": "mixtral-8x7b", "precision": "fp8", "batch": 32, "context": 8192, "prompt": 4000},
    {"gpu": "b200", "model": "deepseek-v3", "precision": "fp4", "gpus": 8, "batch": 64, "context": 32768},
    {"gpu": "mi300x", "model": "llama-3.1-405b", "precision": "fp8", "gpus": 4, "compute_precision": "fp8"},
    # Windowed layers, a shared prefix and a KV format with group scales.
    {
        "gpu": "h100-sxm",
        "model": "gemma-2-9b",
        "kv_precision": "int4",
        "batch": 16,
        "context": 32768,
        "shared_prefix": 2048,
        "prompt": 8192,
    },
]
#: Serving simulations (roofline.serving): Pyodide must print byte-identical JSON, traces included.
SIMULATIONS = [
    {"gpu": "h100-sxm", "model": "llama-3.1-8b", "policy": "static", "rate": 10.0, "prompt": "128:2048"},
    {"gpu": "h100-sxm", "model": "llama-3.1-8b", "policy": "continuous", "rate": 10.0, "output": "16:512"},
    {"gpu": "h200", "model": "mixtral-8x7b", "policy": "chunked", "rate": 4.0, "prompt": "1000:8000"},
    # Issue 38: a prefix cache (a string-seeded draw of groups, LRU eviction) and two pools.
    {
        "gpu": "h100-sxm",
        "model": "llama-3.1-8b",
        "policy": "continuous",
        "rate": 20.0,
        "prompt": "1000:2000",
        "prefix_share": 0.5,
        "prefix_groups": 40,
        "prefix_cache_share": 0.02,
    },
    {"gpu": "h100-sxm", "model": "llama-3.1-8b", "policy": "continuous", "rate": 20.0, "disaggregate": "2:1"},
    # Issue 42: speculation with drawn rounds (each request's own generator, 64-bit draws, packed fields).
    {
        "gpu": "h100-sxm",
        "model": "llama-3.1-8b",
        "policy": "continuous",
        "rate": 20.0,
        "output": "1:900",
        "speculate": [4, 0.6],
    },
]
VIEWS = [
    {"gpu": "h100-sxm", "model": "llama-3.1-8b", "precision": "bf16", "gpus": 1, "users": 1, "context": 4096},
    {"gpu": "h100-sxm", "model": "llama-3.1-405b", "precision": "bf16", "gpus": 1, "users": 1, "context": 4096},
    {"gpu": "a100-80gb", "model": "mixtral-8x7b", "precision": "int4", "gpus": 2, "users": 300, "context": 0},
    {"gpu": "h100", "model": "llama-3.1-8b", "precision": "bf16", "gpus": 1, "users": 1, "context": 0},
]


#: What both runtimes run for a simulation; ``call`` comes in as JSON text named ``call_json``.
SIMULATION_PROGRAM = """
import json, roofline
call = json.loads(call_json)
specs = roofline.builtin_specs()
config = roofline.ServingConfig(
    policy=call["policy"],
    rate=call["rate"],
    requests=300,
    prompt=roofline.parse_lengths(call.get("prompt", "512"), "prompt"),
    output=roofline.parse_lengths(call.get("output", "256"), "output"),
    prefix_share=call.get("prefix_share"),
    prefix_groups=call.get("prefix_groups", 1),
    prefix_cache_share=call.get("prefix_cache_share", 0.1),
)
hardware, workload = roofline.Hardware(specs.gpu(call["gpu"])), roofline.Workload(specs.model(call["model"]))
if "disaggregate" in call:
    from roofline.disaggserving import parse_pools, simulate_disaggregated
    result = simulate_disaggregated(hardware, workload, config, parse_pools(call["disaggregate"]))
elif "speculate" in call:
    from roofline.specserving import Drafting, simulate_speculative
    gamma, alpha = call["speculate"]
    result = simulate_speculative(hardware, workload, config, Drafting(gamma, alpha, draft_cost=0.1))
else:
    result = roofline.simulate(hardware, workload, config)
answer = json.dumps(result.to_dict(trace=True))
"""


def simulation_json(call: dict) -> str:
    scope = {"call_json": json.dumps(call)}
    exec(SIMULATION_PROGRAM, scope)
    return scope["answer"]


@pytest.mark.cost(60)
def test_pyodide_under_node_matches_cpython(node: str, site, tmp_path: Path) -> None:
    from roofline import estimate

    CHAPTER.calculator(CALCULATOR)  # imported as the worker names it, for views.answer
    program_output = subprocess.run(
        [sys.executable, str(PROGRAM)], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    # The wheel and snapshot the tests' site serves (conftest.site): what a reader's browser gets,
    # and one snapshot fewer for a fresh checkout to make.
    runtime = site.directory / "assets" / "runtime"
    fixture = {
        "wheel": str(next((runtime / "wheels").rglob("*.whl"))),
        "snapshot": str(next((runtime / "snapshots").glob("*.snapshot.gz"))),
        "pyodide": str(PYODIDE),
        "program": {"path": str(PROGRAM), "filename": PROGRAM.name, "output": program_output},
        "simulation_program": SIMULATION_PROGRAM,
        "modules": [{"name": name, "path": str(path)} for name, path in MODULES.items()],
        "calculator": CALCULATOR,
        "cases": [{"call": call, "expected": estimate(**call).to_dict()} for call in CASES],
        "simulations": [{"call": call, "expected": simulation_json(call)} for call in SIMULATIONS],
        "views": [
            {"params": view, "expected": json.loads(views.answer(CALCULATOR, json.dumps(view)))} for view in VIEWS
        ],
    }
    path = tmp_path / "fixture.json"
    path.write_text(json.dumps(fixture), encoding="utf-8")
    result = subprocess.run(
        [node, "--test", "--test-reporter=spec", str(ROOT / "tests" / "node" / "golden.test.mjs")],
        capture_output=True,
        text=True,
        env={"ROOFLINE_NODE_FIXTURE": str(path), "PATH": str(Path(node).parent)},
        timeout=300,
        check=False,
    )
    # Pyodide's minified runtime can end up in a stack trace; keep the report readable.
    report = "\n".join(line[:300] for line in (result.stdout + result.stderr).splitlines())
    assert result.returncode == 0, report
    per_boot = len(CASES) + len(VIEWS) + len(SIMULATIONS) + CHECKS_PER_BOOT
    refusals = BROKEN_SNAPSHOTS + FALLBACK_BOOT
    single = UNZIPPED_SNAPSHOT + FRESH_RANDOMNESS + FIRST_RUN_READY + GROWN_HEAP + KEPT_SNAPSHOT
    expected = 2 * per_boot + refusals + single
    assert f"pass {expected}\n" in report, report


def test_snapshot_container_round_trips(node: str) -> None:
    """The container the snapshot travels in gives back every byte (tests/node/snapshot_codec.test.mjs)."""
    report = node_test_report(node, "snapshot_codec.test.mjs")
    assert "pass 9\n" in report, report


def test_the_base_image_is_the_memory_the_engine_starts_with(node: str) -> None:
    """What the snapshot is rebuilt over: a wasm file's data segments, placed as Node's own engine
    places them, with a digest that tells builds apart (tests/node/wasm_memory.test.mjs)."""
    report = node_test_report(node, "wasm_memory.test.mjs")
    assert "pass 4\n" in report, report


def test_a_full_store_of_own_entries_makes_room_and_says_full_not_missing(node: str) -> None:
    """The reader's kept entries against a storage that fills up (tests/node/own_store.test.mjs)."""
    report = node_test_report(node, "own_store.test.mjs")
    assert "pass 3\n" in report, report
