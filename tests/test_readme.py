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
