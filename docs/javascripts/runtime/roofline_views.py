"""Answers a calculator's request inside Pyodide's worker: JSON in, JSON out.

The worker writes each calculator's module (``calculators/NAME.py`` in its page's
folder) into the worker's file system as ``roofline_calculator_NAME`` and calls
``answer(NAME, request)`` on every input. The module's view is decorated with its
form (``roofline.forms``), so the request is checked here exactly as in CPython,
whatever the page let through. One string each way keeps the call across the
JavaScript boundary cheap. A bad request answers ``{"error": "...", "fields": [...]}``
instead of raising, so the page can say why.
"""

from __future__ import annotations

import importlib
import json

from roofline import SpecError
from roofline.forms import InputError

#: Python module name of a calculator, as the worker writes it (sitegen.pages.CALCULATOR_MODULE too).
MODULE_PREFIX = "roofline_calculator_"


def answer(name: str, request: str) -> str:
    """The calculator ``name``'s view of the inputs in ``request`` (a JSON object), as JSON."""
    view = importlib.import_module(MODULE_PREFIX + name).view
    try:
        return json.dumps(view(**json.loads(request)))
    except InputError as error:
        return json.dumps({"error": str(error), "fields": list(error.fields)})
    except (SpecError, TypeError, ValueError) as error:
        return json.dumps({"error": str(error)})
