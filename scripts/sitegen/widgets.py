"""HTML for the in-page widgets: Run cells and calculators, and the calculator's output kinds.

Used by ``hooks/runtime.py``. The markup works before and without JavaScript: the
cell shows its program in a plain textarea, a calculator shows the answer for
its default inputs as computed at build time. A calculator's markup comes from
its declared ``Form`` (``roofline.forms``): each field becomes a control carrying
its bounds, step or choices and the words for what it must be, the cross-field
rules go into ``data-rf-rules``, and each output is written by its kind's entry in
``KINDS``. The scripts in ``docs/javascripts/runtime/`` find the widgets by their
``data-rf-*`` attributes (data attributes, not inline scripts: Material's instant
navigation re-creates inline scripts without their type) and validate and draw from
that markup alone, so a new calculator needs no new JavaScript or HTML.

A new output kind is one entry here (``@kind``: where it goes, its markup, what its
answer must hold) and one in ``docs/javascripts/runtime/outputs.mjs`` (how the page
draws it).
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from roofline.forms import OWN_KINDS, Field, Form, Output, plain
from roofline.hfconfig import MAX_CONFIG_BYTES
from roofline.ownspecs import FILL_IN, FILL_IN_BASE


@dataclass(frozen=True)
class RuntimeLinks:
    """Where a page finds the package wheel and the Pyodide snapshot (relative to the page),
    and the asset version."""

    wheel: str
    version: str
    snapshot: str = ""
    pyodide: str = ""  # Pyodide's folder, named by its version (hooks/runtime.py)
    #: The runtime's files (address relative to the page -> bytes, unpacked): the whole that the
    #: "Starting Python" line counts the download against (runtime.mjs), where a host's gzip hides it.
    sizes: tuple[tuple[str, int], ...] = ()

    def attributes(self) -> str:
        snapshot = f' data-rf-snapshot="{html.escape(self.snapshot)}"' if self.snapshot else ""
        if self.sizes:
            snapshot += f' data-rf-sizes="{html.escape(json.dumps(dict(self.sizes), separators=(",", ":")))}"'
        pyodide = f' data-rf-pyodide="{html.escape(self.pyodide)}"' if self.pyodide else ""
        wheel = f'data-rf-wheel="{html.escape(self.wheel)}"'
        return f'{wheel} data-rf-version="{html.escape(self.version)}"{snapshot}{pyodide}'


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


# ---- Output kinds --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """How the build writes one output kind.

    ``place``: ``"row"`` (a labelled line in the results list, its answer shown as text,
    with ``markup`` adding a drawing after it) or ``"figure"`` (a captioned figure under the
    list, ``markup`` filling it). ``check`` says what is wrong with the answer's values for
    this output, or returns None; the build runs it on the view's answer for the defaults.
    """

    place: str
    markup: Callable[[Output, dict[str, Any]], str]
    check: Callable[[Output, dict[str, Any]], str | None]


KINDS: dict[str, Kind] = {}


def kind(name: str, place: str, check: Callable[[Output, dict[str, Any]], str | None] = lambda output, answer: None):
    """Register output kind ``name``: decorates the function that writes its markup."""

    def register(markup: Callable[[Output, dict[str, Any]], str]) -> Callable[[Output, dict[str, Any]], str]:
        KINDS[name] = Kind(place, markup, check)
        return markup

    return register


def _share(value: Any) -> float:
    """A share as a width in percent, clamped to 0..100 (the page clamps the same way)."""
    return max(0.0, min(float(value), 1.0)) * 100


def _is_share(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _draw(output: Output, key: str, body: str = "", tag: str = "span", css: str = "") -> str:
    """The element the page's script draws into: ``data-rf-draw`` names the kind, ``data-rf-key`` the answer's key."""
    return (
        f'<{tag} class="{css}" data-rf-draw="{output.kind}" data-rf-key="{html.escape(key)}" aria-hidden="true">'
        f"{body}</{tag}>"
    )


@kind("text", "row")
def _text(output: Output, answer: dict[str, Any]) -> str:
    return ""


def _check_bar(output: Output, answer: dict[str, Any]) -> str | None:
    value = answer[output.options["share"]]
    return None if _is_share(value) else f"{output.options['share']!r} must be a number (a share from 0 to 1)"


@kind("bar", "row", _check_bar)
def _bar(output: Output, answer: dict[str, Any]) -> str:
    share = _share(answer[output.options["share"]])
    return _draw(output, output.options["share"], f'<span style="width:{share:.1f}%"></span>', css="rf-calc__bar")


def _check_stack(output: Output, answer: dict[str, Any]) -> str | None:
    parts = answer[output.options["parts"]]
    if not isinstance(parts, list) or not all(
        isinstance(p, dict) and "label" in p and _is_share(p.get("share")) for p in parts
    ):
        return f"{output.options['parts']!r} must be a list of {{'label', 'share'}}"
    return None


@kind("stack", "row", _check_stack)
def _stack(output: Output, answer: dict[str, Any]) -> str:
    spans = "".join(
        f'<span class="rf-calc__part" data-rf-part="{index}" title="{html.escape(str(part["label"]))}"'
        f' style="width:{_share(part["share"]):.1f}%"></span>'
        for index, part in enumerate(answer[output.options["parts"]])
    )
    return _draw(output, output.options["parts"], spans, css="rf-calc__stack")


def _check_timeline(output: Output, answer: dict[str, Any]) -> str | None:
    timeline = answer[output.name]
    if not (isinstance(timeline, dict) and {"rows", "kinds", "unit"} <= set(timeline)):
        return f"{output.name!r} must be {{'rows': [...], 'kinds': [[kind, text], ...], 'unit': ...}}"
    return None


@kind("timeline", "figure", _check_timeline)
def _timeline(output: Output, answer: dict[str, Any]) -> str:
    return _draw(output, output.name, tag="div")


def _check_vega(output: Output, answer: dict[str, Any]) -> str | None:
    spec = answer[output.name]
    if not (isinstance(spec, dict) and any(key in spec for key in ("mark", "layer", "concat", "hconcat", "vconcat"))):
        return f"{output.name!r} must be a Vega-Lite spec (a dict with 'mark' or 'layer')"
    if not (spec.get("description") or spec.get("title")):
        return f"{output.name!r} needs a 'description' (what the chart shows, read to screen readers)"
    return None


@kind("vega", "figure", _check_vega)
def _vega(output: Output, answer: dict[str, Any]) -> str:
    return _draw(output, output.name, tag="div")


# ---- The calculator ------------------------------------------------------------------------------


class AnswerError(ValueError):
    """The view's answer lacks what an output needs; the message is one line naming the output and key."""


def check_answer(form: Form, answer: dict[str, Any]) -> None:
    """The form's own check (every key present, optional keys typed), then each output kind's."""
    form.check_answer(answer)
    for output in form.outputs:
        if output.kind not in KINDS:
            raise AnswerError(
                f"output {output.name!r}: kind {output.kind!r} is not registered"
                f" (kinds: {', '.join(KINDS)}; a new one goes in sitegen/widgets.py and runtime/outputs.mjs)"
            )
        place = KINDS[output.kind].place
        if place == "row" and not output.label:
            raise AnswerError(f"output {output.name!r} ({output.kind}) is a row: it needs a label")
        if place == "figure" and not output.caption:
            raise AnswerError(f"output {output.name!r} ({output.kind}) is a figure: it needs a caption")
        problem = KINDS[output.kind].check(output, answer)
        if problem:
            raise AnswerError(f"output {output.name!r} ({output.kind}): {problem}")


def _control(field_id: str, field: Field) -> str:
    label = f'<label for="{field_id}">{html.escape(field.label)}</label>'
    error = f'<span class="rf-field__error" id="{field_id}-error" aria-live="polite"></span>'
    describe = f' data-rf-describe="{html.escape(field.describe())}"'
    if field.kind == "choice":
        options = "".join(
            f'<option value="{html.escape(value)}"{" selected" if value == field.default else ""}>'
            f"{html.escape(text)}</option>"
            for value, text in field.choices
        )
        wide = " rf-field--wide" if field.wide else ""
        # A choice has an error line too: a rule between choices (Rule.allowed) writes its message there.
        return (
            f'<div class="rf-field{wide}">{label}<select id="{field_id}" name="{html.escape(field.name)}"'
            f' aria-describedby="{field_id}-error"{describe}>{options}</select>{error}'
            f"{_own_entry(field_id, field) if field.own else ''}</div>"
        )
    mode = "numeric" if field.whole else "decimal"
    return (
        f'<div class="rf-field">{label}<input id="{field_id}" name="{html.escape(field.name)}" type="number"'
        f' inputmode="{mode}" step="{plain(field.step)}" min="{plain(field.low)}" max="{plain(field.high)}"'
        f' value="{plain(field.default)}"'
        f' required aria-describedby="{field_id}-error"{describe}>{error}</div>'
    )


#: What each kind of own entry is pasted as, in the panel's words.
_OWN_PASTE = {
    "model": "Paste the model's config.json",
    "gpu": "Paste a GPU file (JSON, or TOML as for --gpu)",
}


def _own_entry(field_id: str, field: Field) -> str:
    """ "Your model…" or "Your GPU…" under a GPU or model menu (``Field.gpu``, ``Field.model``): a
    box to paste the file ``--model``/``--gpu`` reads, or a few numbers to type (``ownspecs.FILL_IN``),
    and one line for what the package says of it. calculator.mjs and own.mjs make it work; nothing
    in it has a ``name``, so the form's inputs stay the declared fields."""
    kind = field.own
    panel = f"{field_id}-own"
    numbers = "".join(
        f'<div class="rf-own__number"><label for="{panel}-{index}">{html.escape(label)}</label>'
        f'<input id="{panel}-{index}" type="number" inputmode="decimal" min="0" step="any"'
        f' data-rf-own-key="{html.escape(key)}" data-rf-own-scale="{plain(scale)}"'
        f"{' data-rf-own-required' if required else ''}></div>"
        for index, (key, label, scale, required) in enumerate(FILL_IN[kind])
    )
    return (
        f'<details class="rf-own" data-rf-own="{kind}" data-rf-own-max="{MAX_CONFIG_BYTES}"'
        f' data-rf-own-base="{_json_attribute(FILL_IN_BASE[kind])}">'
        f"<summary>Your {OWN_KINDS[kind]}…</summary>"
        f'<div class="rf-own__body"><label for="{panel}-text">{_OWN_PASTE[kind]}</label>'
        f'<textarea id="{panel}-text" rows="4" spellcheck="false" autocomplete="off" autocapitalize="off"'
        f' aria-describedby="{panel}-error"></textarea>'
        f'<span class="rf-own__error" id="{panel}-error" aria-live="polite"></span>'
        f'<p class="rf-own__read" id="{panel}-read" aria-live="polite"></p>'
        f'<div class="rf-own__fill" role="group" aria-labelledby="{panel}-fill">'
        f'<p class="rf-own__or" id="{panel}-fill">Or type its numbers:</p>{numbers}'
        f'<button type="button" class="rf-button rf-own__use">Use these numbers</button></div>'
        '<p class="rf-own__privacy">Kept in this browser only; a link you share names it by a short hash.</p>'
        "</div></details>"
    )


def _row(output: Output, answer: dict[str, Any]) -> str:
    return (
        f"<div><dt>{html.escape(output.label)}</dt>"
        f'<dd data-rf-out="{html.escape(output.name)}">{html.escape(str(answer[output.name]))}</dd>'
        f"{KINDS[output.kind].markup(output, answer)}</div>"
    )


def _figure(output: Output, answer: dict[str, Any]) -> str:
    return (
        f'<figure class="rf-calc__chart rf-calc__{output.kind}">{KINDS[output.kind].markup(output, answer)}'
        f"<figcaption>{html.escape(output.caption)}</figcaption></figure>"
    )


def _json_attribute(value: Any) -> str:
    return html.escape(json.dumps(value, separators=(",", ":"), ensure_ascii=False), quote=True)


def calculator(
    name: str,
    form: Form,
    initial: dict[str, Any],
    links: RuntimeLinks,
    module: str,
    *,
    example: dict[str, Any] | None = None,
) -> str:
    """The calculator ``name``: its declared form, its outputs filled with ``initial`` (the view of the defaults).

    ``module`` is the URL of its Python view module, relative to the page; the worker imports it.
    ``example``: checked inputs at which it shows the section's quoted figures (the page's
    ``EXAMPLES``); a button then sets them, and calculator.mjs recomputes as for typed input.
    """
    prefix = f"rf-{name}"
    controls = "".join(_control(f"{prefix}-{field.name}", field) for field in form.fields)
    rows = "".join(_row(output, initial) for output in form.outputs if KINDS[output.kind].place == "row")
    figures = "".join(_figure(output, initial) for output in form.outputs if KINDS[output.kind].place == "figure")
    rules = [rule.declaration() for rule in form.rules]
    offer = ""
    if example is not None:
        offer = (
            f'<p class="rf-calc__example-row"><button type="button" class="rf-button rf-calc__example"'
            f' data-rf-example="{_json_attribute(example)}" aria-describedby="{prefix}-example-why">'
            "Load this section's example</button>"
            f' <span id="{prefix}-example-why">Sets the inputs to those the text above uses, so its figures'
            " appear below.</span></p>"
        )
    return f"""<form class="rf-calc" data-rf-calc="{html.escape(name)}" data-state="static" \
data-fits="{str(bool(initial.get("fits", True))).lower()}" {links.attributes()} \
data-rf-module="{html.escape(module)}" data-rf-defaults="{_json_attribute(form.defaults)}" \
data-rf-rules="{_json_attribute(rules)}" data-rf-initial="{_json_attribute(initial)}" \
aria-labelledby="{prefix}-title" novalidate>
<p class="rf-calc__title" id="{prefix}-title"><strong>{html.escape(form.title)}</strong></p>
<fieldset><legend>{html.escape(form.legend)}</legend>{controls}</fieldset>{offer}
<p class="rf-calc__note" role="status" hidden></p>
<div class="rf-calc__results">
<p class="rf-calc__verdict" data-rf-out="verdict">{html.escape(str(initial.get("verdict", "")))}</p>
<dl>{rows}</dl>
<p class="rf-calc__explain" data-rf-out="explain">{html.escape(str(initial.get("explain", "")))}</p>
<p class="rf-calc__summary rf-visually-hidden" aria-live="polite"></p>
</div>
{figures}</form>"""


# ---- The quiz ------------------------------------------------------------------------------------


def quiz(name: str, chapter: str, drawn: dict[str, Any], links: RuntimeLinks, module: str) -> str:
    """The chapter's graded quiz (``roofline.quiz``), showing ``drawn``, the question the build drew.

    ``name`` is the quiz's name on the calculators' channel (``quiz_<slug>``), ``module`` the URL of
    its ``quiz.py``, relative to the page. quiz.mjs asks the worker for a new question and for each
    grade, and writes every reply into the page as text; without JavaScript the question stays, and
    the chapter's Self-check above it has its answers.
    """
    prefix = f"rf-{name}"
    options = "".join(
        f'<option value="{html.escape(unit)}"{" selected" if unit == drawn["unit"] else ""}>'
        f"{html.escape(unit)}</option>"
        for unit in drawn["units"]
    )
    return f"""<section class="rf-quiz" data-rf-quiz="{html.escape(name)}" data-rf-chapter="{html.escape(chapter)}" \
data-rf-module="{html.escape(module)}" data-rf-seed="{int(drawn["seed"])}" {links.attributes()} \
aria-labelledby="{prefix}-title">
<p class="rf-quiz__title" id="{prefix}-title"><strong>Quiz: new numbers every question</strong></p>
<p class="rf-quiz__question" data-rf-quiz-question>{html.escape(drawn["question"])}</p>
<form class="rf-quiz__form" novalidate>
<div class="rf-field"><label for="{prefix}-answer">Your answer</label>\
<input id="{prefix}-answer" name="answer" type="text" inputmode="decimal" autocomplete="off" spellcheck="false" \
autocapitalize="off" aria-describedby="{prefix}-result"></div>
<div class="rf-field"><label for="{prefix}-unit">Unit</label>\
<select id="{prefix}-unit" name="unit">{options}</select></div>
<div class="rf-quiz__actions">
<button type="submit" class="rf-button rf-button--primary" data-rf-quiz-check>Check</button>
<button type="button" class="rf-button" data-rf-quiz-new>New question</button>
</div>
</form>
<p class="rf-quiz__result" id="{prefix}-result" role="status" aria-live="polite" data-rf-quiz-result></p>
<div class="rf-quiz__working" data-rf-quiz-working hidden><p><strong>Working</strong></p><ol></ol></div>
<p class="rf-quiz__progress" data-rf-quiz-progress></p>
<p class="rf-quiz__note">Computed in your browser by the same package as the page; \
your answers and progress stay in this browser.</p>
</section>"""
