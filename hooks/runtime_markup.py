"""HTML for the two in-page widgets: the Press Run cell and the calculator.

Used by ``hooks/runtime.py``. The markup works before and without JavaScript: the
cell shows its program in a plain textarea, the calculator shows the answer for
its default inputs as computed at build time. The scripts in
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


def run_cell(source: str, filename: str, links: RuntimeLinks) -> str:
    """The Run cell for the program ``source``, shown under ``filename``."""
    lines = source.count("\n") + 1
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
aria-label="Python program, editable" aria-describedby="rf-cell-help">
{html.escape(source)}</textarea>
</div>
<p class="rf-cell__help" id="rf-cell-help">Edit the program, then press Run or Ctrl+Enter. It runs in your browser. \
Tab indents; press Esc, then Tab, to leave the editor.</p>
<p class="rf-status" role="status"></p>
<pre class="rf-output" role="log" aria-live="polite" aria-label="Output" tabindex="0" \
data-placeholder="Press Run: the output appears here."></pre>
</div>"""


def _select(name: str, label: str, choices: list[tuple[str, str]], default: str, *, wide: bool = False) -> str:
    options = "".join(
        f'<option value="{html.escape(value)}"{" selected" if value == default else ""}>{html.escape(text)}</option>'
        for value, text in choices
    )
    return (
        f'<div class="rf-field{" rf-field--wide" if wide else ""}"><label for="rf-calc-{name}">{label}</label>'
        f'<select id="rf-calc-{name}" name="{name}">{options}</select></div>'
    )


def _number(name: str, label: str, default: int, bounds: list[int]) -> str:
    low, high = bounds
    return (
        f'<div class="rf-field"><label for="rf-calc-{name}">{label}</label>'
        f'<input id="rf-calc-{name}" name="{name}" type="number" inputmode="numeric" step="1" min="{low}" max="{high}"'
        f' value="{default}" required aria-describedby="rf-calc-{name}-error">'
        f'<span class="rf-field__error" id="rf-calc-{name}-error" aria-live="polite"></span></div>'
    )


def _output(name: str, label: str, value: str, extra: str = "") -> str:
    return f'<div><dt>{label}</dt><dd data-rf-out="{name}">{html.escape(value)}</dd>{extra}</div>'


def _json_attribute(value: Any) -> str:
    return html.escape(json.dumps(value, separators=(",", ":"), ensure_ascii=False), quote=True)


def calculator(options: dict[str, Any], initial: dict[str, Any], links: RuntimeLinks) -> str:
    """The calculator form, its outputs filled with ``initial`` (the view of the default inputs)."""
    defaults, limits = options["defaults"], options["limits"]
    share = min(initial["memory_share"], 1.0) * 100
    controls = "".join(
        [
            _select("gpu", "GPU", options["gpu"], defaults["gpu"], wide=True),
            _select("model", "Model", options["model"], defaults["model"], wide=True),
            _select("precision", "Weight precision", options["precision"], defaults["precision"]),
            _number("gpus", "GPUs", defaults["gpus"], limits["gpus"]),
            _number("users", "Users", defaults["users"], limits["users"]),
            _number("context", "Context (tokens)", defaults["context"], limits["context"]),
        ]
    )
    outputs = "".join(
        [
            _output("per_user", "Tokens/s for each user", initial["per_user"]),
            _output("total", "Tokens/s for all users", initial["total"]),
            _output("weights", "Weights", initial["weights"]),
            _output("hardware", "GPUs", initial["hardware"]),
            _output(
                "memory",
                "Memory in use",
                initial["memory"],
                f'<span class="rf-calc__bar" aria-hidden="true"><span style="width:{share:.1f}%"></span></span>',
            ),
            _output("bound", "Decode is", initial["bound"]),
        ]
    )
    verdict = "Fits in memory" if initial["fits"] else "Does not fit"
    return f"""<form class="rf-calc" data-rf-calc data-state="static" data-fits="{str(initial["fits"]).lower()}" \
{links.attributes()} data-rf-defaults="{_json_attribute(defaults)}" data-rf-initial="{_json_attribute(initial)}" \
aria-labelledby="rf-calc-title" novalidate>
<p class="rf-calc__title" id="rf-calc-title"><strong>How fast can a GPU generate tokens?</strong></p>
<fieldset><legend>Deployment</legend>{controls}</fieldset>
<p class="rf-calc__note" role="status" hidden></p>
<div class="rf-calc__results">
<p class="rf-calc__verdict" data-rf-out="verdict">{verdict}</p>
<dl>{outputs}</dl>
<p class="rf-calc__explain" data-rf-out="explain">{html.escape(initial["explain"])}</p>
<p class="rf-calc__summary rf-visually-hidden" aria-live="polite"></p>
</div>
<figure class="rf-calc__chart"><div data-rf-chart></div>
<figcaption>Decode tokens/s for each user and for all users together, as more users share each step \
(both axes logarithmic). Computed by the roofline package in your browser.</figcaption></figure>
</form>"""
