"""One rule for spec text that looks like markup or a script link (issue 25, P3): it is shown as the
characters it holds, everywhere, and refused nowhere. `roofline validate` and the build agree; if
the build's last check ever finds such text unescaped (a generator's slip), it names the spec file,
entry and field the text came from. The cases are neighbours of the report's `javascript:` name."""

from __future__ import annotations

import shutil
from pathlib import Path

import markdown
import pytest
from bs4 import BeautifulSoup

import support
from roofline import SpecError
from roofline.cli import main
from sitegen import escape
from sitegen.generate import generate

ROOT = Path(__file__).resolve().parent.parent

SCRIPT_TEXTS = [
    "H100 [l](javascript:alert('x'))",
    "JavaScript:alert(1)",
    "java script: no, JAVASCRIPT :alert(1)",
    "vbscript:msgbox(1)",
    "data:text/html;base64,PHNjcmlwdD4=",
    "<a href=javascript:alert(1)>x</a>",
    "see javascript:void(0) and {{ n.x }} and {% raw %}",
]


def toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def repo_with_gpu_text(tmp_path: Path, field: str, value: str) -> Path:
    """A copy of the spec files, the figures and the hardware page's folder (which writes
    figures/hardware.md), the H100's ``field`` set to ``value``."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "roofline" / "data", root / "roofline" / "data")
    shutil.copytree(ROOT / "figures", root / "figures")
    hardware = Path("docs") / "reference" / "hardware"
    shutil.copytree(ROOT / hardware, root / hardware, ignore=support.COPY_IGNORE)
    gpus = root / "roofline" / "data" / "gpus.toml"
    text = gpus.read_text()
    start = text.index(f"\n{field} = ", text.index('[gpu."h100-sxm"]')) + 1
    end = text.index("\n", start)
    gpus.write_text(text[:start] + f"{field} = {toml_string(value)}" + text[end:])
    return root


def rendered(markdown_text: str) -> BeautifulSoup:
    return BeautifulSoup(markdown.markdown(markdown_text, extensions=["tables", "attr_list"]), "html.parser")


@pytest.mark.parametrize("value", SCRIPT_TEXTS)
@pytest.mark.parametrize("field", ["name", "memory_note"])
def test_validate_and_the_build_both_accept_it_and_show_it_literally(tmp_path, capsys, field, value) -> None:
    root = repo_with_gpu_text(tmp_path, field, value)
    gpus = root / "roofline" / "data" / "gpus.toml"
    assert main(["validate", str(gpus)]) == 0, capsys.readouterr().err
    generate(root)  # the build's last check finds nothing active: no SpecError
    hardware = (root / "figures" / "hardware.md").read_text()
    page = rendered(hardware)
    assert value in page.get_text()  # every character, as written
    for link in page.find_all(["a", "script", "img"]):
        assert link.name == "a" and link["href"].startswith(("http://", "https://")), link
    assert "javascript:" not in hardware.lower().replace("javascript&#58;", "")


@pytest.mark.parametrize(
    "source",
    [
        "https://example.org/spec?next=javascript:alert(1)",
        "https://example.org/a javascript:alert(1) b",
        "JAVASCRIPT:alert(1) https://example.org/x",
    ],
)
def test_a_source_with_a_script_link_builds_and_links_only_http(tmp_path, source) -> None:
    root = repo_with_gpu_text(tmp_path, "source", source)
    generate(root)
    page = rendered((root / "figures" / "hardware.md").read_text())
    hrefs = [a["href"] for a in page.find_all("a")]
    assert hrefs and all(href.startswith(("http://", "https://")) for href in hrefs)
    assert all("javascript:" not in href.lower() for href in hrefs)


def test_escape_never_leaves_an_active_script_scheme() -> None:
    for value in SCRIPT_TEXTS:
        assert escape.SCRIPT_SCHEME.search(escape.text(value)) is None, value
    assert escape.text("Note: 80 GB") == "Note: 80 GB"  # an ordinary colon stays readable


def test_a_generator_slip_is_reported_at_the_spec_field_it_came_from(tmp_path, monkeypatch) -> None:
    root = repo_with_gpu_text(tmp_path, "memory_note", "read javascript:alert(1) first")
    monkeypatch.setattr(escape, "text", lambda value: value)  # a module that forgot to escape
    before = {path.name: path.read_bytes() for path in (root / "figures").iterdir()}
    with pytest.raises(SpecError) as raised:
        generate(root)
    message = str(raised.value)
    assert message.startswith("roofline/data/gpus.toml: [gpu.\"h100-sxm\"]: field 'memory_note': holds 'javascript:'")
    assert "figures/" in message and "\n" not in message
    assert {path.name: path.read_bytes() for path in (root / "figures").iterdir()} == before
