"""HTML for the in-page widgets: Run cells and calculators.

Used by ``hooks/runtime.py``. The markup works before and without JavaScript: the
cell shows its program in a plain textarea, a calculator shows the answer for
its default inputs as computed at build time. A calculator's markup comes from
its declared form (fields, outputs, an optional chart), so a new calculator
needs no new JavaScript or HTML. The scripts in
``docs/javascripts/runtime/`` find the widgets by their ``data-rf-*`` attributes
(data attributes, not inline scripts: Material's instant navigation re-creates
inline scripts without their type).
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RuntimeLinks:
    """Where a page finds the package wheel and the Pyodide snapshot (relative to the page),
    and the asset version."""

    wheel: str
    version: str
    snapshot: str = ""

    def attributes(self) -> str:
        snapshot = f' data-rf-snapshot="{html.escape(self.snapshot)}"' if self.snapshot else ""
        return f'data-rf-wheel="{html.escape(self.wheel)}" data-rf-version="{html.escape(self.version)}"{snapshot}'


def run_cell(source: str, filename: str, links: RuntimeLinks, index: int = 1) -> str:
    """The Run cell for the program ``source``, shown under ``filename``; ``index`` keeps its ids unique on the page."""
    lines = source.count("\n") + 1
    help_id = f"rf-cell-help-{index}"
    return f"""<div class="rf-cell" data-rf-cell data-rf-filename="{html.escape(filename)}" {links.attributes()}>
<div class="rf-cell__bar">
<span class="rf-cell__file">{html.escape(filename)}</span>
<button type="button" class="rf-button rf-button--primary" data-rf-action="run">Run</button>
<button type="button" class="rf-button" data-rf-action="stop" disabled>Stop</button>
<button type="button" class="rf-button" data-rf-action="reset">Reset</button>
<button type="button" class="rf-button" data-rf-action="retry" hidden>Retry</button>
</div>
<div class="rf-editor">
<div class="rf-editor__highlight" aria-hidden="true"></div>
<textarea rows="{lines}" wrap="off" spellcheck="false" autocapitalize="off" autocomplete="off" autocorrect="off" \
aria-label="Python program, editable" aria-describedby="{help_id}">
{html.escape(source)}</textarea>
</div>
<p class="rf-cell__help" id="{help_id}">Edit the program, then press Run or Ctrl+Enter. It runs in your browser. \
Tab indents; press Esc, then Tab, to leave the editor.</p>
<p class="rf-status" role="status"></p>
<pre class="rf-output" role="log" aria-live="polite" aria-label="Output" tabindex="0" \
data-placeholder="Press Run: the output appears here."></pre>
</div>"""


class FormError(ValueError):
    """A calculator's declared form that the page could not show."""


def check_form(form: dict[str, Any]) -> dict[str, Any]:
    """``form`` if it is a valid declaration (see docs/calculators/), else FormError saying what is wrong.

    A form is ``{"title", "legend", "fields": [...], "outputs": [...], "chart"?: {"caption"},
    "timeline"?: {"caption"}}``. A field is a choice (``choices``: [[value, text], ...]) or a whole
    number (``min``, ``max``), with ``name``, ``label`` and ``default``; an output is
    ``{"name", "label", "bar"?, "stack"?}``: ``bar`` names the view's key holding one share (0 to 1)
    drawn as a filled bar, ``stack`` the key holding parts that add up to a whole, ``[{"label",
    "share"}, ...]``, drawn side by side in one bar (the output's text names them in the same
    order). With ``timeline``, the view answers ``timeline``: ``{"rows": [{"label", "title"?,
    "spans": [[kind, start, end], ...]}], "kinds": [[kind, text], ...], "unit"}``, drawn as a
    Gantt chart by ``timeline.mjs`` (kinds coloured in their listed order).
    """
    for key in ("title", "legend", "fields", "outputs"):
        if key not in form:
            raise FormError(f"the form has no {key!r}")
    for key in ("chart", "timeline"):
        if key in form and not (isinstance(form[key], dict) and isinstance(form[key].get("caption"), str)):
            raise FormError(f"the form's {key!r} needs a 'caption'")
    names = set()
    for field in form["fields"]:
        missing = [key for key in ("name", "label", "default") if key not in field]
        if missing:
            raise FormError(f"field {field.get('name', '?')!r} lacks {', '.join(missing)}")
        if field["name"] in names:
            raise FormError(f"field {field['name']!r} appears twice")
        names.add(field["name"])
        if "choices" in field:
            if field["default"] not in [value for value, _ in field["choices"]]:
                raise FormError(f"field {field['name']!r}: default {field['default']!r} is not one of its choices")
        elif not ("min" in field and "max" in field and field["min"] <= field["default"] <= field["max"]):
            raise FormError(f"field {field['name']!r} needs choices, or min <= default <= max")
    for output in form["outputs"]:
        if "bar" in output and "stack" in output:
            raise FormError(f"output {output.get('name', '?')!r} has both a bar and a stack; it can show one")
    return form


def _stack_parts(parts: list[dict[str, Any]]) -> str:
    """One span per part, as wide as its share (clamped to 0..100%), titled with its label."""
    spans = []
    for index, part in enumerate(parts):
        share = max(0.0, min(float(part["share"]), 1.0)) * 100
        spans.append(
            f'<span class="rf-calc__part" data-rf-part="{index}" title="{html.escape(str(part["label"]))}"'
            f' style="width:{share:.1f}%"></span>'
        )
    return "".join(spans)


def _select(field_id: str, field: dict[str, Any]) -> str:
    options = "".join(
        f'<option value="{html.escape(str(value))}"{" selected" if value == field["default"] else ""}>'
        f"{html.escape(text)}</option>"
        for value, text in field["choices"]
    )
    return (
        f'<div class="rf-field{" rf-field--wide" if field.get("wide") else ""}">'
        f'<label for="{field_id}">{html.escape(field["label"])}</label>'
        f'<select id="{field_id}" name="{html.escape(field["name"])}">{options}</select></div>'
    )


def _number(field_id: str, field: dict[str, Any]) -> str:
    return (
        f'<div class="rf-field"><label for="{field_id}">{html.escape(field["label"])}</label>'
        f'<input id="{field_id}" name="{html.escape(field["name"])}" type="number" inputmode="numeric" step="1"'
        f' min="{field["min"]}" max="{field["max"]}" value="{field["default"]}" required'
        f' aria-describedby="{field_id}-error">'
        f'<span class="rf-field__error" id="{field_id}-error" aria-live="polite"></span></div>'
    )


def _output(output: dict[str, Any], initial: dict[str, Any]) -> str:
    name = output["name"]
    extra = ""
    if output.get("bar"):
        share = max(0.0, min(float(initial[output["bar"]]), 1.0)) * 100
        extra = (
            f'<span class="rf-calc__bar" data-rf-bar="{html.escape(output["bar"])}" aria-hidden="true">'
            f'<span style="width:{share:.1f}%"></span></span>'
        )
    elif output.get("stack"):
        extra = (
            f'<span class="rf-calc__stack" data-rf-stack="{html.escape(output["stack"])}" aria-hidden="true">'
            f"{_stack_parts(initial[output['stack']])}</span>"
        )
    return (
        f"<div><dt>{html.escape(output['label'])}</dt>"
        f'<dd data-rf-out="{html.escape(name)}">{html.escape(str(initial[name]))}</dd>{extra}</div>'
    )


def _json_attribute(value: Any) -> str:
    return html.escape(json.dumps(value, separators=(",", ":"), ensure_ascii=False), quote=True)


def calculator(name: str, form: dict[str, Any], initial: dict[str, Any], links: RuntimeLinks, module: str) -> str:
    """The calculator ``name``: its declared form, its outputs filled with ``initial`` (the view of the defaults).

    ``module`` is the URL of its Python view module, relative to the page; the worker imports it.
    """
    prefix = f"rf-{name}"
    defaults = {field["name"]: field["default"] for field in form["fields"]}
    controls = "".join(
        (_select if "choices" in field else _number)(f"{prefix}-{field['name']}", field) for field in form["fields"]
    )
    outputs = "".join(_output(output, initial) for output in form["outputs"])
    chart = ""
    # Each figure is drawn by the page's script from the view's answer of the same name.
    for kind in ("chart", "timeline"):
        if form.get(kind):
            chart += (
                f'<figure class="rf-calc__chart rf-calc__{kind}"><div data-rf-{kind}></div>'
                f"<figcaption>{html.escape(form[kind]['caption'])}</figcaption></figure>"
            )
    return f"""<form class="rf-calc" data-rf-calc="{html.escape(name)}" data-state="static" \
data-fits="{str(bool(initial.get("fits", True))).lower()}" {links.attributes()} \
data-rf-module="{html.escape(module)}" data-rf-defaults="{_json_attribute(defaults)}" \
data-rf-initial="{_json_attribute(initial)}" aria-labelledby="{prefix}-title" novalidate>
<p class="rf-calc__title" id="{prefix}-title"><strong>{html.escape(form["title"])}</strong></p>
<fieldset><legend>{html.escape(form["legend"])}</legend>{controls}</fieldset>
<p class="rf-calc__note" role="status" hidden></p>
<div class="rf-calc__results">
<p class="rf-calc__verdict" data-rf-out="verdict">{html.escape(str(initial.get("verdict", "")))}</p>
<dl>{outputs}</dl>
<p class="rf-calc__explain" data-rf-out="explain">{html.escape(str(initial.get("explain", "")))}</p>
<p class="rf-calc__summary rf-visually-hidden" aria-live="polite"></p>
</div>
{chart}</form>"""
