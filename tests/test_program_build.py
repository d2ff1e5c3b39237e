"""What the site build gives the in-page runtime: the wheel, the widgets' markup, the
calculator's view and the server's headers. Fast checks in CPython, no browser.
"""

from __future__ import annotations

import html as html_module
import json
import re
import urllib.request
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
from support import load_script

ROOT = Path(__file__).resolve().parent.parent


build_wheel = load_script("build_wheel", ROOT / "scripts" / "build_wheel.py")
serve = load_script("serve", ROOT / "scripts" / "serve.py")
calculator = load_script("roofline_calculator_decode_speed", ROOT / "docs" / "calculators" / "decode_speed.py")
views = load_script("roofline_views", ROOT / "docs" / "javascripts" / "runtime" / "roofline_views.py")
CHAPTER = "chapters/prefill-vs-decode.md"
RUN_CELL = "<!-- roofline:run-cell programs/h100_decode_prefill.py -->"
CALCULATOR = "<!-- roofline:calculator decode_speed -->"


# ---- The wheel -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_wheel_is_pure_complete_and_reproducible(tmp_path: Path) -> None:
    first = build_wheel.build_wheel(tmp_path / "a", cache=None)
    second = build_wheel.build_wheel(tmp_path / "b", cache=None)
    assert first.name.endswith("-py3-none-any.whl")
    assert first.read_bytes() == second.read_bytes()  # fixed timestamps: same sources, same bytes
    with zipfile.ZipFile(first) as archive:
        names = archive.namelist()
        metadata = archive.read(next(name for name in names if name.endswith("dist-info/METADATA"))).decode()
    package = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "roofline").rglob("*.py"))
    assert sorted(name for name in names if name.endswith(".py")) == package
    assert {"roofline/data/gpus.toml", "roofline/data/models.toml"} <= set(names)
    assert "Requires-Dist" not in metadata  # Pyodide's loadPackage would not install dependencies


def test_check_wheel_refuses_a_wheel_without_spec_data(tmp_path: Path) -> None:
    broken = tmp_path / "roofline-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(broken, "w") as archive:
        archive.writestr("roofline/__init__.py", "")
    with pytest.raises(build_wheel.WheelError, match=r"missing roofline/data/gpus\.toml"):
        build_wheel.check_wheel(broken)
    platform = tmp_path / "roofline-0.1.0-cp311-cp311-linux_x86_64.whl"
    platform.write_bytes(broken.read_bytes())
    with pytest.raises(build_wheel.WheelError, match="not a pure"):
        build_wheel.check_wheel(platform)


def test_the_source_digest_follows_the_package(tmp_path: Path) -> None:
    (tmp_path / "roofline").mkdir()
    (tmp_path / "roofline" / "__init__.py").write_text("x = 1\n")
    before = build_wheel.source_digest(tmp_path)
    (tmp_path / "roofline" / "__init__.py").write_text("x = 2\n")
    assert build_wheel.source_digest(tmp_path) != before


# ---- The hook ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hook() -> ModuleType:
    module = load_script("runtime_hook", ROOT / "hooks" / "runtime.py")
    module.on_config(None)
    return module


def test_the_hook_replaces_both_markers_on_the_chapter(hook: ModuleType) -> None:
    page = f"<h2>A</h2>\n{RUN_CELL}\n<p>b</p>\n{CALCULATOR}\n"
    html = hook.replace_markers(page, CHAPTER, "chapters/prefill-vs-decode/")
    assert "roofline:" not in html
    assert html.count("data-rf-cell") == 1 and html.count('data-rf-calc="decode_speed"') == 1
    assert 'data-rf-wheel="../../assets/runtime/wheels/' in html  # relative to the page
    assert 'data-rf-module="../../calculators/decode_speed.py"' in html
    program = (ROOT / "docs" / "programs" / "h100_decode_prefill.py").read_text(encoding="utf-8")
    assert html_module.escape(program) in html


def test_any_number_of_run_cells_each_with_its_own_program_and_ids(hook: ModuleType, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "programs").mkdir(parents=True)
    (docs / "programs" / "one.py").write_text("print('one')\n")
    (docs / "programs" / "two.py").write_text("print('two')\n")
    hook._state["docs"] = docs
    try:
        page = "<!-- roofline:run-cell programs/one.py -->\n<!-- roofline:run-cell programs/two.py -->\n" * 2
        html = hook.replace_markers(page, "chapters/x.md", "chapters/x/")
    finally:
        hook._state["docs"] = ROOT / "docs"
    assert html.count("data-rf-cell") == 4
    assert html.count("print(&#x27;one&#x27;)") == 2 and html.count("print(&#x27;two&#x27;)") == 2
    assert len(set(re.findall(r'id="(rf-cell-help-\d+)"', html))) == 4


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            "<!-- roofline:run-cell programs/nope.py -->",
            "runtime hook: docs/chapters/x.md: <!-- roofline:run-cell programs/nope.py --> names a missing program:"
            " docs/programs/nope.py does not exist",
        ),
        (
            "<!-- roofline:calculator nope -->",
            "runtime hook: docs/chapters/x.md: <!-- roofline:calculator nope --> names a missing calculator:"
            " docs/calculators/nope.py does not exist (calculators:"
            f" {', '.join(sorted(path.stem for path in (ROOT / 'docs' / 'calculators').glob('*.py')))})",
        ),
        ("<!-- roofline:run-cell -->", "names no program; write <!-- roofline:run-cell programs/NAME.py -->"),
        ("<!-- roofline:run-cell ../mkdocs.yml -->", "must name a .py file by its path under docs/"),
        ("<!-- roofline:run-cell ../scripts/serve.py -->", "must name a .py file by its path under docs/"),
        ("<!-- roofline:calculator -->", "needs the calculator's name"),
        ("<!-- roofline:slider x -->", "is not a widget (use run-cell or calculator)"),
        (CALCULATOR * 2, "appears twice on the page"),
    ],
)
def test_a_bad_marker_fails_the_build_with_one_line(hook: ModuleType, marker: str, message: str) -> None:
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError) as raised:
        hook.replace_markers(f"<p>a</p>\n{marker}\n", "chapters/x.md", "chapters/x/")
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_pages_without_markers_are_left_alone(hook: ModuleType) -> None:
    assert hook.replace_markers("<p>no widgets</p>", "index.md", "") == "<p>no widgets</p>"


def test_the_first_paint_shows_the_packages_numbers_for_the_defaults(hook: ModuleType) -> None:
    """Issue 2, section 5: one user of the 8B at 16-bit, 4,096 tokens, ≈17 GB of 81.6 GB (issue 17: the
    weights plus 95% of what they leave of the 85.5 GB the driver reports, less 0.5 GB of workspace).
    Issue 9: the ceiling reads one embedding row, not the table, so ≈216 tokens/s where the rule gave ≈203."""
    html = hook.replace_markers(CALCULATOR, "index.md", "")
    view = calculator.view(**calculator.DEFAULTS)
    for name in ("per_user", "total", "weights", "hardware", "memory", "bound", "verdict", "explain"):
        assert f'data-rf-out="{name}">{html_module.escape(view[name])}<' in html
    assert view["per_user"] in {"215", "216"} and view["memory"] == "16.6 GB of 81.6 GB usable"
    for field in calculator.form()["fields"]:
        assert f'id="rf-decode_speed-{field["name"]}"' in html


def test_a_form_declaration_is_checked() -> None:
    markup = load_script("runtime_markup_checked", ROOT / "hooks" / "runtime_markup.py")
    form = calculator.form()
    markup.check_form(form)
    broken = dict(form, fields=[dict(form["fields"][3], default=0)])
    with pytest.raises(markup.FormError, match="'gpus' needs choices, or min <= default <= max"):
        markup.check_form(broken)
    with pytest.raises(markup.FormError, match="default 'h99' is not one of its choices"):
        markup.check_form(dict(form, fields=[dict(form["fields"][0], default="h99")]))


# ---- The calculator's view -----------------------------------------------------------------------


def test_the_view_words_a_deployment_that_does_not_fit() -> None:
    view = calculator.view(**dict(calculator.DEFAULTS, model="llama-3.1-405b"))
    # 811.7 GB over 85.0 GB per H100 is 9.5 GPUs; the smallest tensor-parallel degree that holds it is 16.
    assert view["fits"] is False and view["per_user"] == "—" and view["gpus_needed"] == 16
    assert view["expected"] == "—"
    assert view["explain"] == (
        "Does not fit. The weights alone need 811.7 GB at bf16, more than the 85.0 GB usable on 1 GPU."
        " To fit: use 16 GPUs of this kind."
    )


def test_a_long_context_that_does_not_fit_gets_advice_that_works() -> None:
    # Issue 8: 70B at fp8 fits its weights (70.6 GB); one user's 131,072-token cache (42.9 GB) does not
    # fit the 13.7 GB KV pool they leave (issue 17's memory). The answer is a shorter context, a
    # smaller cache or smaller weights, not "weights alone" and more GPUs only.
    view = calculator.view(**dict(calculator.DEFAULTS, model="llama-3.1-70b", precision="fp8", context=131072))
    assert view["fits"] is False
    assert "weights alone" not in view["explain"]
    assert view["explain"].startswith(
        "Does not fit. The weights (70.6 GB) fit, but one user's KV cache at 131,072 tokens needs 42.9 GB"
    )
    assert "shorten the context to 41,942 tokens or fewer; or cache keys and values in int4" in view["explain"]


def test_the_view_says_what_the_rule_gives_and_why_the_ceiling_differs() -> None:
    view = calculator.view(**calculator.DEFAULTS)
    assert view["per_user"] == "215"
    assert view["explain"].startswith(
        "The rule of thumb gives 209; an engine reads one row of the embedding, not the whole table, so 223,"
        " and this user's context brings it to 215 tokens/s per user, the ceiling."
    )
    # The step reads what the ceiling counts: 15.0 GB of weights (one embedding row), not the 16.1 GB stored.
    assert "Each decode step reads 15.0 GB of the 16.1 GB of weights and 0.5 GB of KV cache" in view["explain"]


def test_the_expected_range_is_the_measured_shares_of_this_ceiling() -> None:
    from roofline import estimate
    from roofline.measured import well_tuned_decode_range

    view = calculator.view(**calculator.DEFAULTS)
    measured = well_tuned_decode_range()
    ceiling = estimate("h100-sxm", "llama-3.1-8b", context=4096).decode_tokens_per_s_per_user
    low, high = f"{measured.low * ceiling:,.0f}", f"{measured.high * ceiling:,.0f}"
    assert view["expected"] == f"{low}–{high} tokens/s per user" == "109–149 tokens/s per user"
    assert f"Expected on a well-tuned stack: {low}–{high} tokens/s. The range rests on 3 published" in view["explain"]
    # Its basis is one user on one GPU, so it says nothing for two GPUs or a batch, and the view says so.
    for change in ({"gpus": 2}, {"users": 8}):
        other = calculator.view(**dict(calculator.DEFAULTS, **change))
        assert other["expected"] == "—" and "No expected range here" in other["explain"]


def test_the_view_changes_its_explanation_with_the_bound() -> None:
    memory = calculator.view(**dict(calculator.DEFAULTS, context=0))
    compute = calculator.view(**dict(calculator.DEFAULTS, context=0, users=512))
    assert "memory-bound" in memory["explain"] and "until about 295 users" in memory["explain"]
    assert "compute-bound" in compute["explain"] and compute["bound"] == "compute-bound"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"users": 0}, "users"),
        ({"context": 10**9}, "context"),
        ({"gpus": True}, "gpus"),
        ({"gpu": "h100"}, "did you mean 'h100-sxm'"),
        ({"precision": "fp3"}, "unknown precision"),
    ],
)
def test_the_worker_answers_bad_requests_with_the_reason(change: dict, message: str) -> None:
    answer = json.loads(views.answer("decode_speed", json.dumps(dict(calculator.DEFAULTS, **change))))
    assert message in answer["error"]


def test_the_chart_reuses_the_results_crossover_at_every_batch() -> None:
    from roofline import estimate

    view = calculator.view(**dict(calculator.DEFAULTS, context=0, users=48))
    users = [point["users"] for point in view["chart"]["points"]]
    assert users == sorted({*calculator.CHART_USERS, 48})
    for point in view["chart"]["points"]:
        direct = estimate("h100-sxm", "llama-3.1-8b", batch=point["users"])
        assert point["per_user"] == direct.decode_tokens_per_s_per_user
        assert point["total"] == direct.decode_tokens_per_s_total
    assert view["chart"]["crossover"] == estimate("h100-sxm", "llama-3.1-8b").crossover_batch


# ---- The server ----------------------------------------------------------------------------------


@pytest.mark.parametrize("isolated", [True, False])
def test_serve_sends_isolation_headers_and_mime_types(tmp_path: Path, isolated: bool) -> None:
    for name in ("a.wasm", "b.mjs", "c.whl"):
        (tmp_path / name).write_bytes(b"x")
    server = serve.make_server(tmp_path, isolated=isolated, quiet=True)
    base = serve.serve_in_background(server)
    try:
        headers = {name: urllib.request.urlopen(base + name).headers for name in ("a.wasm", "b.mjs", "c.whl")}
    finally:
        server.shutdown()
    assert headers["a.wasm"]["Content-Type"] == "application/wasm"
    assert headers["b.mjs"]["Content-Type"] == "text/javascript"
    assert headers["c.whl"]["Content-Type"] == "application/zip"
    expected = ("same-origin", "require-corp") if isolated else (None, None)
    wasm = headers["a.wasm"]
    assert (wasm["Cross-Origin-Opener-Policy"], wasm["Cross-Origin-Embedder-Policy"]) == expected
    assert server.server_address[0] == "127.0.0.1"


def test_multi_gpu_answers_name_how_the_all_reduces_are_charged() -> None:
    """Issue 17: several GPUs pay two all-reduces a layer, and the answer says at what rate."""
    view = calculator.view(**dict(calculator.DEFAULTS, model="llama-3.1-70b", gpus=2))
    assert "at 6.70 TB/s (2 GPUs together)" in view["explain"]
    assert "160 all-reduces between the 2 GPUs add" in view["explain"]
    assert "each 3.7 µs + 2(G-1)/G x message / 450 GB/s over NVLink 4" in view["explain"]
    assert "all-reduce" not in calculator.view(**calculator.DEFAULTS)["explain"]
