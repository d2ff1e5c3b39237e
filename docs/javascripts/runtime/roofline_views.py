"""Answers a calculator's request inside Pyodide's worker: JSON in, JSON out.

The worker writes each calculator's module (``docs/calculators/NAME.py``) into
the worker's file system and calls ``answer(NAME, request)`` on every input. One
string each way keeps the call across the JavaScript boundary cheap. A bad
request answers ``{"error": "..."}`` instead of raising, so the page can say why.
"""

from __future__ import annotations

import importlib
import json

from roofline import SpecError
from roofline.errors import shortened

#: Python module name of a calculator, as the worker writes it.
MODULE_PREFIX = "roofline_calculator_"


def answer(name: str, request: str) -> str:
    """The calculator ``name``'s view of the inputs in ``request`` (a JSON object), as JSON."""
    view = importlib.import_module(MODULE_PREFIX + name).view
    try:
        return json.dumps(view(**json.loads(request)))
    except (SpecError, TypeError, ValueError) as error:
        # A note is a line: whatever the request held (a 30,000-character link value), it is cut.
        return json.dumps({"error": shortened(str(error))})
