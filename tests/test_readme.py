"""The README's examples are real: each ``$ roofline ...`` block is run and compared."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from roofline.cli import main

README = Path(__file__).resolve().parent.parent / "README.md"
EXAMPLE = re.compile(r"```console\n\$ roofline (?P<args>[^\n]+)\n(?P<output>.*?)```", re.DOTALL)


def examples() -> list[tuple[str, str]]:
    found = [(match["args"], match["output"]) for match in EXAMPLE.finditer(README.read_text(encoding="utf-8"))]
    assert found, "the README shows no roofline examples"
    return found


@pytest.mark.parametrize(("args", "expected"), examples())
def test_readme_example_output_is_what_the_command_prints(
    args: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        main(shlex.split(args))
    except SystemExit:
        pass
    captured = capsys.readouterr()
    assert captured.out + captured.err == expected


FILE_EXAMPLE = re.compile(r"<!-- example: (?P<path>\S+) -->\n```\w+\n(?P<body>.*?)```", re.DOTALL)


@pytest.mark.slow
def test_the_writing_a_chapter_example_builds_and_runs(tmp_path: Path) -> None:
    """The README's minimal chapter: its module computes, its page expands, its marker finds its program."""
    import subprocess
    import sys

    from support import load_script

    root = README.parent
    files = {m["path"]: m["body"] for m in FILE_EXAMPLE.finditer(README.read_text(encoding="utf-8"))}
    assert set(files) == {"scripts/sitegen/pages/example.py", "docs/chapters/example.md", "docs/programs/example_kv.py"}
    for path, body in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(body, encoding="utf-8")

    sys.path.insert(0, str(root / "scripts"))
    from sitegen import pages
    from sitegen.generate import Run, build_outputs
    from sitegen.shortcodes import Shortcodes

    pages.__path__.append(str(tmp_path / "scripts" / "sitegen" / "pages"))
    try:
        figures = tmp_path / "figures"
        figures.mkdir()
        for name, content in build_outputs(root, figures, rerender=False, run=Run()).items():
            (figures / name).write_bytes(content)
    finally:
        pages.__path__.remove(str(tmp_path / "scripts" / "sitegen" / "pages"))
        sys.modules.pop("sitegen.pages.example", None)
    text = Shortcodes(figures).expand(files["docs/chapters/example.md"], "chapters/example.md")
    assert "Each token of context costs 131.1 kB of KV cache; [figure (a)](#figure-example-kv-growth)" in text
    assert "**Figure (a).** One user's KV cache grows with context." in text

    hook = load_script("runtime_hook_example", root / "hooks" / "runtime.py")
    hook.on_config(None)
    hook._state["docs"] = tmp_path / "docs"
    html = hook.replace_markers("<!-- roofline:run-cell programs/example_kv.py -->", "chapters/example.md", "x/")
    assert "data-rf-cell" in html and "example_kv.py" in html
    program = tmp_path / "docs" / "programs" / "example_kv.py"
    done = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, check=True)
    assert done.stdout == "0.54 GB at 4,096 tokens\n"
