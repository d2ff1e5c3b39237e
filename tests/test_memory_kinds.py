"""Every memory figure says which memory it is, and each kind has one value (issue 40).

One H100 appeared as 80, 81.6 "usable", 85.0 "usable" and 85.5 GB on different pages and
calculators: "usable" meant both what the driver reports less the workspace (85.0 GB) and the
weights plus the KV pool (81.6 GB for Llama 3.1 8B). These tests read what a reader sees (every
page's quoted values, every calculator's answer at its defaults, the command line's report and
the tables in figures/) and check that each "N GB <kind>" is a value ``roofline.memorykinds``
gives for that kind, and that the H100's figures are named the same everywhere."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from roofline import Hardware, builtin_specs
from roofline import formatting as fmt
from roofline.cli import main
from roofline.memorykinds import DRIVER, NAMEPLATE, USABLE, labelled, memory_of
from sitegen.pages import chapters
from support import ROOT

SPECS = builtin_specs()
#: The kinds whose value depends on the GPUs alone (the pool and weights + pool depend on the model too).
FIXED = (NAMEPLATE, DRIVER, USABLE)
PHRASE = re.compile(r"(\d[\d,]*(?:\.\d+)?) GB (nameplate|driver-reported|usable)\b")


def _allowed(kind: str) -> set[str]:
    """Every way ``kind`` prints for any built-in GPU on 1 to 64 of them, at 0 or 1 decimal."""
    return {
        fmt.gigabytes(memory_of(Hardware(gpu, count), kind), digits).removesuffix(" GB")
        for gpu in SPECS.gpus.values()
        for count in range(1, 65)
        for digits in (0, 1)
    }


ALLOWED = {kind: _allowed(kind) for kind in FIXED}


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _page_values() -> Iterator[tuple[str, str]]:
    pages = json.loads((ROOT / "figures" / "values.json").read_text(encoding="utf-8"))["pages"]
    for page, values in pages.items():
        for name, text in values.items():
            yield f"{page} n.{name}", text


def _calculator_answers() -> Iterator[tuple[str, str]]:
    for chapter in chapters(ROOT / "docs"):
        for name in chapter.calculators:
            module = chapter.calculator(name)
            answer = module.view(**module.FORM.defaults)
            for text in _strings(answer):
                yield f"{chapter.slug} calculator {name}", text


def _report(capsys) -> str:
    main(["estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--batch", "32", "--context", "4096"])
    return capsys.readouterr().out


def _misnamed(where: str, text: str) -> list[str]:
    return [
        f"{where}: '{match.group(0)}' is not a {match.group(2)} figure of any GPU; use roofline.memorykinds"
        for match in PHRASE.finditer(text)
        if match.group(1) not in ALLOWED[match.group(2)]
    ]


def test_every_named_memory_figure_is_that_kind_s_value(capsys) -> None:
    texts = [*_page_values(), *_calculator_answers(), ("roofline estimate", _report(capsys))]
    texts += [(f"figures/{path.name}", path.read_text(encoding="utf-8")) for path in (ROOT / "figures").glob("*.md")]
    problems = [line for where, text in texts for line in _misnamed(where, text)]
    assert not problems, "\n".join(problems)


def test_a_seeded_misnamed_figure_is_caught() -> None:
    """The old report's '81.6 GB usable' (weights + KV pool, called usable) is what the check refuses."""
    assert _misnamed("seed", "16.6 GB of 81.6 GB usable (weights + a 65.5 GB KV pool)")
    assert not _misnamed("seed", "16.6 GB of 81.6 GB weights + KV pool (65.5 GB KV pool of 85.0 GB usable)")


@pytest.mark.parametrize("kind", FIXED)
def test_one_h100_s_figure_of_each_kind_is_named_alike_on_every_page(kind: str, capsys) -> None:
    """Wherever the H100's figure of ``kind`` appears in a page's values, its kind's name follows it."""
    h100 = Hardware(SPECS.gpu("h100-sxm"))
    digits = 0 if kind == NAMEPLATE else 1
    number = fmt.gigabytes(memory_of(h100, kind), digits)
    named = labelled(kind, memory_of(h100, kind), digits)
    seen = [(where, text) for where, text in _page_values() if re.search(rf"(?<![\d.,]){re.escape(number)}\b", text)]
    assert seen, f"no page quotes the H100's {kind} memory, {number}"
    bare = [where for where, text in seen if named not in text]
    assert not bare, f"{number} without '{kind}' after it in: {', '.join(bare)}"


def test_chapters_and_the_reference_quote_the_h100_s_memory_from_one_function() -> None:
    pages = json.loads((ROOT / "figures" / "values.json").read_text(encoding="utf-8"))["pages"]
    h100 = Hardware(SPECS.gpu("h100-sxm"))
    one = pages["chapters/prefill-vs-decode/index.md"]
    reference = pages["reference/formulas/index.md"]
    assert one["gpu_usable_gb"] == reference["h100_usable"] == labelled(USABLE, memory_of(h100, USABLE))
    assert one["gpu_addressable_gb"] == reference["h100_driver"] == labelled(DRIVER, memory_of(h100, DRIVER))
    assert pages["chapters/parallelism/index.md"]["cap_addressable"] == one["gpu_addressable_gb"]
    assert one["gpu_memory_gb"] == reference["h100_nameplate"] == labelled(NAMEPLATE, memory_of(h100, NAMEPLATE), 0)
