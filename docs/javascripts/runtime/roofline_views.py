"""Answers a calculator's request inside Pyodide's worker: JSON in, JSON out.

The worker writes each calculator's module (``calculators/NAME.py`` in its page's
folder) into the worker's file system as ``roofline_calculator_NAME`` and calls
``answer(NAME, request)`` on every input. The module's view is decorated with its
form (``roofline.forms``), so the request is checked here exactly as in CPython,
whatever the page let through. One string each way keeps the call across the
JavaScript boundary cheap. A bad request answers ``{"error": "...", "fields": [...]}``
instead of raising, so the page can say why: ``fields`` names the form's fields the error is
about, and the page marks them and greys the results, as for a value it refused itself. A
rule only the package knows (chunked prefill's token budget must exceed the max batch) comes
back this way, from the SpecError naming its field.

The reader's own GPU or model ("Your GPU…", "Your model…") comes as ``own``, a JSON object
``{"model": {"id": "own-1a2b3c4d", "text": "<config.json>"}}``: the text the reader pasted,
read by the package's own readers (``roofline.ownspecs.own_entry``, as ``--model`` and
``--gpu`` read a file) and given to the view for that call only (``forms.own_entries``).
Every answer then says what each entry is called, ``"own": {"model": {"id", "name", "read"}}``:
the name for the menu, and what the package read from it (``ownspecs.what_was_read``) for the
line under the box. A text the readers refuse answers ``{"error": "...", "own": "model"}``: the
page shows the line under the paste and keeps the results it has.
"""

from __future__ import annotations

import importlib
import json

from roofline import SpecError
from roofline.errors import shortened
from roofline.forms import OWN_KINDS, InputError, own_entries
from roofline.loader import SpecSet
from roofline.ownspecs import own_entry, what_was_read

#: Python module name of a calculator, as the worker writes it (sitegen.pages.CALCULATOR_MODULE too).
MODULE_PREFIX = "roofline_calculator_"


def _own(own: str) -> tuple[SpecSet, dict[str, dict[str, str]]]:
    """The reader's entries in ``own`` (see above) as a SpecSet, and their names by kind.
    Raises SpecError (its ``kind`` set) for the first text the package refuses."""
    given = json.loads(own) if own else {}
    if not isinstance(given, dict):
        raise TypeError("own must be a JSON object")
    gpus, models, names = {}, {}, {}
    for kind, entry in given.items():
        if kind not in OWN_KINDS or not isinstance(entry, dict):
            raise TypeError(f"own: {shortened(repr(kind))} is not one of {', '.join(OWN_KINDS)}")
        try:
            spec = own_entry(kind, entry.get("id"), entry.get("text"))
        except SpecError as error:
            error.kind = kind
            raise
        (gpus if kind == "gpu" else models)[spec.id] = spec
        # What the package read from the text, for the page to show under the box (as text).
        names[kind] = {"id": spec.id, "name": spec.name, "read": what_was_read(spec)}
    return SpecSet(gpus=gpus, models=models), names


def answer(name: str, request: str, own: str = "") -> str:
    """The calculator ``name``'s view of the inputs in ``request`` (a JSON object), as JSON;
    ``own`` carries the reader's own GPU or model, if a field names one."""
    module = importlib.import_module(MODULE_PREFIX + name)
    try:
        entries, names = _own(own)
    except SpecError as error:
        return json.dumps({"error": shortened(str(error)), "own": error.kind})
    except (TypeError, ValueError) as error:
        return json.dumps({"error": shortened(str(error))})
    reply = _view(module, request, entries)
    if names:
        reply["own"] = names
    return json.dumps(reply)


def _view(module, request: str, entries: SpecSet) -> dict:
    """The view's answer for ``request`` with ``entries`` at hand, or the error as the page reads it."""
    try:
        with own_entries(entries):
            return module.view(**json.loads(request))
    except InputError as error:
        # A note is a line: whatever the request held (a 30,000-character link value), it is cut.
        return {"error": shortened(str(error)), "fields": list(error.fields)}
    except SpecError as error:
        fields = [error.field] if error.field in module.FORM.defaults else []
        return {"error": shortened(str(error)), "fields": fields}
    except (TypeError, ValueError) as error:
        return {"error": shortened(str(error))}
