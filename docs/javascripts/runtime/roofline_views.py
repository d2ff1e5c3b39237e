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
"""

from __future__ import annotations

import importlib
import json

from roofline import SpecError
from roofline.errors import shortened
from roofline.forms import InputError

#: Python module name of a calculator, as the worker writes it (sitegen.pages.CALCULATOR_MODULE too).
MODULE_PREFIX = "roofline_calculator_"


def answer(name: str, request: str) -> str:
    """The calculator ``name``'s view of the inputs in ``request`` (a JSON object), as JSON."""
    module = importlib.import_module(MODULE_PREFIX + name)
    try:
        return json.dumps(module.view(**json.loads(request)))
    except InputError as error:
        # A note is a line: whatever the request held (a 30,000-character link value), it is cut.
        return json.dumps({"error": shortened(str(error)), "fields": list(error.fields)})
    except SpecError as error:
        fields = [error.field] if error.field in module.FORM.defaults else []
        return json.dumps({"error": shortened(str(error)), "fields": fields})
    except (TypeError, ValueError) as error:
        return json.dumps({"error": shortened(str(error))})
