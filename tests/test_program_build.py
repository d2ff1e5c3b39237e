"""What the site build gives the in-page runtime: the wheel, the widgets' markup, the
calculator's view and the server's headers. Fast checks in CPython, no browser.
"""

from __future__ import annotations

import json
import urllib.request
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
from support import load_script

ROOT = Path(__file__).resolve().parent.parent


build_wheel = load_script("build_wheel", ROOT / "scripts" / "build_wheel.py")
serve = load_script("serve", ROOT / "scripts" / "serve.py")
calculator = load_script("roofline_calculator", ROOT / "docs" / "javascripts" / "runtime" / "roofline_calculator.py")


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
    page = "<h2>A</h2>\n<!-- roofline:run-cell -->\n<p>b</p>\n<!-- roofline:calculator -->\n"
    html = hook.replace_markers(page, hook.CHAPTER, "chapters/prefill-vs-decode/")
    assert "roofline:" not in html
    assert html.count("data-rf-cell") == 1 and html.count("data-rf-calc") == 1
    assert 'data-rf-wheel="../../assets/runtime/wheels/' in html  # relative to the page


@pytest.mark.parametrize("missing", ["run-cell", "calculator"])
def test_the_chapter_without_a_marker_fails_the_build(hook: ModuleType, missing: str) -> None:
    from mkdocs.exceptions import PluginError

    page = "".join(marker for name, marker in hook.MARKERS.items() if name != missing)
    with pytest.raises(PluginError, match=f"lacks the marker line <!-- roofline:{missing} -->"):
        hook.replace_markers(page, hook.CHAPTER, "chapters/prefill-vs-decode/")


def test_a_marker_twice_fails_and_other_pages_need_none(hook: ModuleType) -> None:
    from mkdocs.exceptions import PluginError

    assert hook.replace_markers("<p>no widgets</p>", "index.md", "") == "<p>no widgets</p>"
    with pytest.raises(PluginError, match="2 times"):
        hook.replace_markers("<!-- roofline:calculator -->" * 2, "index.md", "")


def test_the_first_paint_shows_the_packages_numbers_for_the_defaults(hook: ModuleType) -> None:
    """Issue 2, section 5: one user of the 8B at 16-bit, 4,096 tokens, ≈17 GB of 72 GB. Issue 9: the ceiling
    reads one embedding row, not the table, so ≈216 tokens/s where the rule gave ≈203."""
    html = hook.replace_markers("<!-- roofline:calculator -->", "index.md", "")
    view = calculator.view(**calculator.DEFAULTS)
    for name in ("per_user", "total", "weights", "hardware", "memory", "bound"):
        assert f'data-rf-out="{name}">{view[name]}<' in html
    assert view["per_user"] in {"215", "216"} and view["memory"] == "16.6 GB of 72.0 GB usable"


# ---- The calculator's view -----------------------------------------------------------------------


def test_the_view_words_a_deployment_that_does_not_fit() -> None:
    view = calculator.view(**dict(calculator.DEFAULTS, model="llama-3.1-405b"))
    # 811.7 GB over 72 GB per H100 is 11.3 GPUs; the smallest tensor-parallel degree that holds it is 16.
    assert view["fits"] is False and view["per_user"] == "—" and view["gpus_needed"] == 16
    assert view["explain"].startswith("Does not fit. Llama 3.1 405B at bf16 needs 811.7 GB")


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
def test_view_json_answers_bad_requests_with_the_reason(change: dict, message: str) -> None:
    answer = json.loads(calculator.view_json(json.dumps(dict(calculator.DEFAULTS, **change))))
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
