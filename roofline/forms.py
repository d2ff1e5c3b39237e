"""A calculator's declared form: its inputs, the rules between them, and its outputs.

A calculator (``docs/chapters/<slug>/calculators/<name>.py``) declares one ``Form``
and decorates its view with it::

    FORM = Form(
        title="How many users fit?",
        legend="Deployment",
        fields=[
            Field.choice("gpu", "GPU", [("h100-sxm", "NVIDIA H100 SXM")], default="h100-sxm"),
            Field.number("users", "Users", low=1, high=4096, default=1),
            Field.number("accept", "Acceptance", low=0, high=1, step=0.05, default=0.8),
        ],
        outputs=[Output.text("per_user", "Tokens/s for each user")],
        rules=[Rule.at_most("prompt_low", "prompt_high", "The shortest prompt must not be longer than the longest.")],
    )

A GPU or model menu is declared with ``Field.gpu("gpu", "GPU", specs, default="h100-sxm")`` or
``Field.model(...)``: it also takes the reader's own GPU or model ("Your GPU…", "Your model…"
in the page), an id ``own-`` and a hash whose text the request carries, and the view looks the
value up in ``FORM.specs()``, which holds that entry for the call (``own_entries``).

A rule between choices lists the combinations allowed, computed from the specs:
``Rule.allowed(("gpus", "model"), [("1", "llama-3.1-8b"), ...], "{model} needs more GPUs.")``.

    @FORM.view
    def view(gpu: str, users: int, accept: float) -> dict: ...

The declaration is the only place an input's bounds are written. It is checked in
three places, the same way: here, in CPython, when the view is called (at build time,
in tests, and in the reader's browser, where the worker runs this same module in
Pyodide), and in the page, whose script reads the bounds, steps, choices and rules
from the markup the build renders from this declaration. A bad input raises
``InputError``, a ``SpecError`` naming the field and what it must be; a declaration
that breaks the contract raises ``FormError`` naming the key and the fix.

Output kinds (``text``, ``bar``, ``stack``, ``timeline``, ``vega``…) are plug-ins: this
module only records an output's kind and options, and checks that the view answers
its ``name``; the site's markup (``scripts/sitegen/widgets.py``) and the page's
drawing (``docs/javascripts/runtime/outputs.mjs``) each register every kind once.
Standard library only, like the rest of the package.
"""

from __future__ import annotations

import inspect
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import wraps
from typing import Any

from . import formatting as fmt
from .errors import SpecError, did_you_mean, shown
from .loader import SpecSet, builtin_specs
from .specs import GpuSpec, ModelSpec

#: A field's, an output's or a key's name: what Python, the URL (``NAME.FIELD=…``) and the markup all accept.
NAME = re.compile(r"[a-z][a-z0-9_]*")
#: Keys a view may add to its answer beside its outputs, and what each must be.
OPTIONAL_KEYS: dict[str, type] = {"verdict": str, "explain": str, "summary": str, "fits": bool}
#: Cross-field rules: kind -> the comparison that must hold between the first and the second field.
#: The page's script has the same table (calculator.mjs, RULES).
RULES: dict[str, Callable[[Any, Any], bool]] = {"at_most": operator.le, "below": operator.lt}
#: Every kind of rule: the comparisons above, and ``allowed`` (listed combinations of choices).
KINDS_OF_RULE = (*RULES, "allowed")
#: A field named in an ``allowed`` rule's message, ``{gpu}``: the chosen option's text goes there.
PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")
#: The most decimals a step may have: the page compares numbers as integers of that many decimals.
MAX_DECIMALS = 6
#: What a GPU or model field (``Field.gpu``, ``Field.model``) also takes: the reader's own entry,
#: by the id the page gives it, ``own-`` and a short hash of its text (calculator.mjs, own.mjs).
OWN_ID = re.compile(r"own-[0-9a-f]{8}")
#: The kinds of entry a reader may bring, and the word each takes in messages.
OWN_KINDS = {"gpu": "GPU", "model": "model"}
#: The reader's own entries for the view being called (own_entries): empty outside one.
_OWN: ContextVar[SpecSet | None] = ContextVar("own_entries", default=None)
_NO_ENTRIES = SpecSet()


@contextmanager
def own_entries(entries: SpecSet) -> Iterator[None]:
    """Within this block, GPU and model fields take ``entries``' ids (the reader's own GPU or
    model, read by ``ownspecs.own_entry``), and ``Form.specs()`` holds them beside the built-in ones."""
    token = _OWN.set(entries)
    try:
        yield
    finally:
        _OWN.reset(token)


def _own_entry(kind: str, value: Any) -> GpuSpec | ModelSpec | None:
    """The reader's own ``kind`` entry ``value`` names in the current call, or None."""
    if not isinstance(value, str) or not OWN_ID.fullmatch(value):
        return None
    entries = _OWN.get() or _NO_ENTRIES
    return (entries.gpus if kind == "gpu" else entries.models).get(value)


def gpu_menu(specs: SpecSet) -> list[tuple[str, str]]:
    """Every GPU of ``specs`` as a choice: ``("h100-sxm", "NVIDIA H100 SXM (80 GB)")``."""
    return [(gpu.id, f"{gpu.name} ({fmt.gigabytes(gpu.memory_bytes, 0)})") for gpu in specs.gpus.values()]


def model_menu(specs: SpecSet, keep: Callable[[ModelSpec], bool] = lambda model: True) -> list[tuple[str, str]]:
    """Every model of ``specs`` that ``keep`` accepts, as a choice: ``("llama-3.1-8b", "Llama 3.1 8B")``."""
    return [(model.id, model.name) for model in specs.models.values() if keep(model)]


def draft_menu(specs: SpecSet) -> list[tuple[str, str]]:
    """Every draft-only entry of ``specs`` (a head such as EAGLE-3, ``SpecSet.drafts``) as a choice:
    ``("eagle3-llama-3.1-8b", "EAGLE-3 head for Llama 3.1 8B")``. Only a drafter menu lists them."""
    return [(head.id, head.name) for head in specs.drafts.values()]


class FormError(ValueError):
    """A declaration (or a view's answer) that breaks the contract; one line naming the key and the fix."""


class InputError(SpecError):
    """An input the form refuses: names the field (``field``) and says what it must be.

    ``fields`` names every field the error is about (both fields of a broken rule).
    """

    def __init__(self, message: str, fields: Iterable[str], hint: str | None = None) -> None:
        self.fields = tuple(fields)
        super().__init__(message, field=self.fields[0], hint=hint)


def _decimal(value: float | int) -> Decimal:
    """A number as the decimal it was written as (``0.8``, not 0.8000000000000000444)."""
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def _number_text(value: float | int) -> str:
    """``4096`` -> ``4,096``; ``0.05`` -> ``0.05``; ``1.0`` -> ``1`` (as the page prints it too)."""
    number = _decimal(value).normalize()
    if number == number.to_integral_value():
        return f"{int(number):,}"
    return f"{number:f}"


def plain(value: float | int) -> str:
    """A number as an HTML attribute holds it: ``4096``, ``0.05``, never ``5e-02`` or ``4,096``."""
    return f"{_decimal(value).normalize():f}"


@dataclass(frozen=True)
class Field:
    """One input: a choice among listed values, or a number between bounds in steps.

    A number whose ``step`` and ``low`` are whole is a whole number (the view gets an int);
    otherwise it is a decimal (a float), any multiple of ``step`` above ``low`` up to ``high``.
    """

    name: str
    label: str
    default: Any
    choices: tuple[tuple[str, str], ...] = ()
    low: float | int | None = None
    high: float | int | None = None
    step: float | int = 1
    wide: bool = False
    #: ``"gpu"`` or ``"model"`` for a field that also takes the reader's own entry (Field.gpu, Field.model).
    own: str = ""

    @classmethod
    def choice(
        cls, name: str, label: str, choices: Iterable[tuple[str, str] | list[str]], default: str, *, wide: bool = False
    ) -> Field:
        """A ``<select>``: ``choices`` are ``(value, text)`` pairs, ``default`` one of the values."""
        return cls(name, label, default, choices=tuple((str(v), str(t)) for v, t in choices), wide=wide)

    @classmethod
    def gpu(cls, name: str, label: str, specs: SpecSet, default: str, *, wide: bool = True) -> Field:
        """A menu of ``specs``' GPUs (``gpu_menu``) that also takes the reader's own GPU: the page
        adds "Your GPU…" under it, and the view finds the entry in ``FORM.specs()``."""
        return cls(name, label, default, choices=tuple(gpu_menu(specs)), wide=wide, own="gpu")

    @classmethod
    def model(
        cls,
        name: str,
        label: str,
        specs: SpecSet,
        default: str,
        *,
        keep: Callable[[ModelSpec], bool] = lambda model: True,
        wide: bool = True,
    ) -> Field:
        """A menu of ``specs``' models that ``keep`` accepts (``model_menu``), and the reader's own
        model (a pasted config.json): "Your model…" under it. ``keep`` filters the menu only; an
        own model the view cannot serve is refused by the package, in one line."""
        return cls(name, label, default, choices=tuple(model_menu(specs, keep)), wide=wide, own="model")

    @classmethod
    def number(cls, name: str, label: str, *, low: float, high: float, default: float, step: float = 1) -> Field:
        """A number box from ``low`` to ``high`` (both allowed) in steps of ``step``."""
        return cls(name, label, default, low=low, high=high, step=step)

    @property
    def kind(self) -> str:
        """``"choice"`` (a menu of ``choices``) or ``"number"`` (a box from ``low`` to ``high``)."""
        return "choice" if self.choices else "number"

    @property
    def whole(self) -> bool:
        """Whether the field takes whole numbers only (the view gets an int)."""
        return self.kind == "number" and _decimal(self.step) % 1 == 0 and _decimal(self.low) % 1 == 0

    def describe(self) -> str:
        """What a value must be, as the error messages (here and in the page) say it."""
        if self.kind == "choice":
            return "one of the choices"
        span = f"from {_number_text(self.low)} to {_number_text(self.high)}"
        if self.whole and self.step == 1:
            return f"a whole number {span}"
        if self.whole:
            return f"a whole number {span} in steps of {_number_text(self.step)}"
        return f"a number {span} in steps of {_number_text(self.step)}"

    def bounds(self) -> tuple[Any, ...]:
        """The values at the field's edges: its lowest and highest number, or its first and last choice."""
        if self.kind == "choice":
            return (self.choices[0][0], self.choices[-1][0])
        return (self.low, self.high)

    def check(self, value: Any) -> Any:
        """``value`` if the field accepts it (a whole number as an int), else raise InputError."""
        if self.kind == "choice":
            known = [choice for choice, _ in self.choices]
            if isinstance(value, str) and value in known:
                return value
            if self.own and _own_entry(self.own, value) is not None:
                return value
            if self.own and isinstance(value, str) and OWN_ID.fullmatch(value):
                raise InputError(
                    f"names your own {OWN_KINDS[self.own]} {value}, which this request does not carry",
                    [self.name],
                    f"paste its {'config.json' if self.own == 'model' else 'GPU file'} again",
                )
            hint = did_you_mean(value, known) if isinstance(value, str) else None
            raise InputError(f"must be {self.describe()}, got {shown(value)}", [self.name], hint)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:  # NaN != NaN
            raise InputError(f"must be {self.describe()}, got {shown(value)}", [self.name])
        if self.whole and isinstance(value, float):
            if not value.is_integer():
                raise InputError(f"must be {self.describe()}, got {shown(value)}", [self.name])
            value = int(value)
        try:
            offset = _decimal(value) - _decimal(self.low)
            on_step = offset % _decimal(self.step) == 0
        except (InvalidOperation, OverflowError):
            on_step = False
        if not (self.low <= value <= self.high and on_step):
            raise InputError(f"must be {self.describe()}, got {shown(value)}", [self.name])
        return value

    def text(self, value: str) -> str:
        """The words shown for a chosen ``value``: its option's text, or the reader's own entry's name."""
        own = _own_entry(self.own, value) if self.own else None
        return own.name if own is not None else dict(self.choices).get(value, value)

    def problem(self) -> str | None:
        """What is wrong with the declaration itself, or None."""
        if not NAME.fullmatch(self.name):
            return "a field's name must be lowercase letters, digits and _, starting with a letter"
        if not self.label:
            return "needs a label"
        if self.own and (self.own not in OWN_KINDS or self.kind != "choice"):
            return f"own must be one of {', '.join(OWN_KINDS)}, on a choice (Field.gpu, Field.model)"
        if self.kind == "choice":
            values = [value for value, _ in self.choices]
            if len(set(values)) != len(values):
                return "lists a choice twice"
            if self.default not in values:
                return f"default {shown(self.default)} is not one of its choices"
            return None
        if self.low is None and self.high is None:
            return "needs choices (Field.choice) or bounds (Field.number)"
        for name in ("low", "high", "step", "default"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                return f"{name} must be a number, got {shown(value)}"
        if not self.step > 0 or self.low > self.high:
            return "needs low <= high and a positive step"
        if -_decimal(self.step).normalize().as_tuple().exponent > MAX_DECIMALS:
            return f"a step may have at most {MAX_DECIMALS} decimals"
        try:
            self.check(self.default)
        except InputError:
            return f"default {shown(self.default)} is not {self.describe()}"
        return None


@dataclass(frozen=True)
class Rule:
    """A rule between fields: ``at_most`` (first <= second), ``below`` (first < second), or
    ``allowed`` (the choice fields ``fields`` hold one of the listed ``combinations`` together).

    When it breaks, every field it reads is marked and ``message`` says what to change, under
    the first. An ``allowed`` rule's message may name any of its fields in braces, ``{gpu}``,
    for the text of the option chosen there.
    """

    kind: str
    first: str
    second: str
    message: str
    #: ``allowed`` only: the fields it reads after ``first`` and ``second``, and the value
    #: combinations that may stand together, one value per field in ``fields``' order.
    more: tuple[str, ...] = ()
    combinations: frozenset[tuple[str, ...]] = frozenset()
    #: ``at_most`` and ``below`` only: ``(choice field, value)`` when the comparison applies only
    #: while that field holds that value (a limit of one scheduler), else ``()``.
    when: tuple[str, str] | tuple[()] = ()

    @classmethod
    def at_most(cls, first: str, second: str, message: str, *, when: tuple[str, str] | None = None) -> Rule:
        """``first <= second`` (a range's low end at most its high end); with ``when=(field, value)``,
        only while ``field`` holds ``value``."""
        return cls("at_most", first, second, message, more=(when[0],) if when else (), when=tuple(when or ()))

    @classmethod
    def below(cls, first: str, second: str, message: str, *, when: tuple[str, str] | None = None) -> Rule:
        """``first < second`` (a part strictly smaller than its whole); ``when`` as for ``at_most``."""
        return cls("below", first, second, message, more=(when[0],) if when else (), when=tuple(when or ()))

    @classmethod
    def allowed(cls, fields: Iterable[str], combinations: Iterable[Iterable[str]], message: str) -> Rule:
        """The choice fields ``fields`` (two or more) may only hold one of ``combinations`` at once:
        the GPU counts and precisions on which a model fits, say, computed from the specs. Each
        combination is a value of every field, in ``fields``' order."""
        names = tuple(fields)
        if len(names) < 2:
            raise FormError(f"rule 'allowed' needs two fields or more, got {shown(names)}")
        listed = frozenset(tuple(str(value) for value in combination) for combination in combinations)
        return cls("allowed", names[0], names[1], message, names[2:], listed)

    @property
    def fields(self) -> tuple[str, ...]:
        """Every field the rule reads; its message shows under the first."""
        return (self.first, self.second, *self.more)

    def holds(self, values: Mapping[str, Any]) -> bool:
        """Whether ``values`` keep the rule. An ``allowed`` rule lists combinations of the
        built-in entries only: with the reader's own GPU or model in one of its fields it holds,
        and the package's own checks (the weights fit, the heads split) speak instead."""
        if self.kind == "allowed":
            if any(_own_entry(kind, values[name]) for name in self.fields for kind in OWN_KINDS):
                return True
            return tuple(str(values[name]) for name in self.fields) in self.combinations
        if self.when and str(values[self.when[0]]) != self.when[1]:
            return True  # the comparison is for another choice of that field
        return RULES[self.kind](values[self.first], values[self.second])

    def message_for(self, texts: Mapping[str, str]) -> str:
        """The message with each ``{field}`` replaced by ``texts[field]`` (the chosen option's text)."""
        return PLACEHOLDER.sub(lambda found: texts.get(found.group(1), found.group(0)), self.message)

    def check(self, values: Mapping[str, Any], texts: Mapping[str, str] | None = None) -> None:
        """InputError naming every field of the rule, with its message, unless the rule holds for ``values``."""
        if not self.holds(values):
            raise InputError(self.message_for(texts or {}), self.fields)

    def declaration(self) -> dict[str, Any]:
        """The rule as the page's script reads it (``data-rf-rules``; checks.mjs): ``allowed``'s
        combinations as a tree, each field's value in turn leading to the next, the last field's
        allowed values in a list."""
        declared: dict[str, Any] = {
            "kind": self.kind,
            "first": self.first,
            "second": self.second,
            "fields": list(self.fields),
            "message": self.message,
        }
        if self.kind == "allowed":
            tree: dict[str, Any] = {}
            for combination in sorted(self.combinations):
                node = tree
                for value in combination[:-2]:
                    node = node.setdefault(value, {})
                node.setdefault(combination[-2], []).append(combination[-1])
            declared["allowed"] = tree
        if self.when:
            declared["when"] = {"field": self.when[0], "value": self.when[1]}
        return declared

    def problem(self, form: Form) -> str | None:
        """What is wrong with the rule as ``form`` declares it, or None."""
        if self.kind not in KINDS_OF_RULE:
            return f"is not one of {', '.join(KINDS_OF_RULE)}"
        for name in self.fields:
            if not any(item.name == name for item in form.fields):
                return f"names {name!r}, which is not a field"
        kinds = {form.field(name).kind for name in self.fields}
        if self.kind != "allowed":
            if {form.field(self.first).kind, form.field(self.second).kind} != {"number"} or not self.message:
                return f"on {self.first!r}, {self.second!r} needs two numbers and a message"
            if self.when:
                field, value = self.when
                if form.field(field).kind != "choice" or value not in dict(form.field(field).choices):
                    return f"applies when {field!r} is {value!r}, which is not one of that field's choices"
            return None
        if not self.message:
            return "needs a message"
        if kinds != {"choice"}:
            return "reads choice fields only"
        if not self.combinations:
            return "lists no combination"
        for combination in sorted(self.combinations):
            if len(combination) != len(self.fields):
                return f"combination {shown(combination)} does not give one value per field ({', '.join(self.fields)})"
            for name, value in zip(self.fields, combination, strict=True):
                if value not in dict(form.field(name).choices):
                    return f"combination {shown(combination)}: {value!r} is not a choice of {name!r}"
        for name in PLACEHOLDER.findall(self.message):
            if name not in self.fields:
                return f"message names {{{name}}}, which is not one of its fields"
        return None


@dataclass(frozen=True)
class Output:
    """One thing the calculator shows: the view's answer under ``name``, drawn as ``kind``.

    Row kinds sit in the results list with their ``label``: ``text`` (the answer as
    text), ``bar`` (text, and a bar filled to the share under ``options["share"]``),
    ``stack`` (text, and parts of one whole from ``options["parts"]``). Figure kinds sit
    under the list with a ``caption``: ``timeline`` (a Gantt chart) and ``vega`` (a
    Vega-Lite spec, drawn with the site's vega-embed). A new kind is registered once in
    ``scripts/sitegen/widgets.py`` (markup, answer check) and once in
    ``docs/javascripts/runtime/outputs.mjs`` (drawing).
    """

    name: str
    kind: str = "text"
    label: str = ""
    caption: str = ""
    options: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def text(cls, name: str, label: str) -> Output:
        """A row: the view's answer under ``name``, as text."""
        return cls(name, "text", label)

    @classmethod
    def bar(cls, name: str, label: str, *, share: str) -> Output:
        """Text, and a bar filled to the view's share (0 to 1) under ``share``."""
        return cls(name, "bar", label, options={"share": share})

    @classmethod
    def stack(cls, name: str, label: str, *, parts: str) -> Output:
        """Text, and the view's ``[{"label", "share"}, …]`` under ``parts`` side by side in one bar."""
        return cls(name, "stack", label, options={"parts": parts})

    @classmethod
    def timeline(cls, name: str, caption: str) -> Output:
        """A Gantt chart of ``{"rows": [{"label", "title"?, "spans": [[kind, start, end], …]}], "kinds", "unit"}``."""
        return cls(name, "timeline", caption=caption)

    @classmethod
    def vega(cls, name: str, caption: str) -> Output:
        """A chart: the view answers a Vega-Lite spec (plain dicts, data inline) under ``name``."""
        return cls(name, "vega", caption=caption)

    def keys(self) -> tuple[str, ...]:
        """Every key of the view's answer this output reads: its name, then any its options name."""
        return (self.name, *self.options.values())


@dataclass(frozen=True, init=False)
class Form:
    """A calculator's declaration: title, fieldset legend, fields, outputs and cross-field rules.

    Raises FormError on construction if the declaration breaks the contract.
    """

    title: str
    legend: str
    fields: tuple[Field, ...]
    outputs: tuple[Output, ...]
    rules: tuple[Rule, ...] = ()

    def __init__(
        self,
        title: str,
        legend: str,
        fields: Iterable[Field],
        outputs: Iterable[Output],
        rules: Iterable[Rule] = (),
    ) -> None:
        object.__setattr__(self, "title", title)
        object.__setattr__(self, "legend", legend)
        object.__setattr__(self, "fields", tuple(fields))
        object.__setattr__(self, "outputs", tuple(outputs))
        object.__setattr__(self, "rules", tuple(rules))
        self._check()

    def _check(self) -> None:
        if not self.title or not self.legend:
            raise FormError("the form needs a title and a legend (Form(title=..., legend=...))")
        if not self.fields or not self.outputs:
            raise FormError("the form needs at least one field and one output")
        names: set[str] = set()
        for item in self.fields:
            if not isinstance(item, Field):
                raise FormError(f"fields holds {shown(item)}; declare each with Field.choice or Field.number")
            problem = item.problem()
            if problem:
                raise FormError(f"field {item.name!r}: {problem}")
            if item.name in names:
                raise FormError(f"field {item.name!r} is declared twice")
            names.add(item.name)
        outputs: set[str] = set()
        for output in self.outputs:
            if not isinstance(output, Output):
                raise FormError(f"outputs holds {shown(output)}; declare each with Output.text, Output.bar, …")
            for key in output.keys():
                if not NAME.fullmatch(key) or key in OPTIONAL_KEYS:
                    raise FormError(
                        f"output {output.name!r}: key {key!r} must be lowercase letters, digits and _,"
                        f" and not one of {', '.join(OPTIONAL_KEYS)}"
                    )
            if output.name in outputs:
                raise FormError(f"output {output.name!r} is declared twice")
            outputs.add(output.name)
            # Which of the two a kind shows (a row's label, a figure's caption) is the kind's
            # business (scripts/sitegen/widgets.py); every output shows one of them.
            if not (output.label or output.caption):
                raise FormError(f"output {output.name!r} ({output.kind}) needs a label (a row) or a caption (a figure)")
        for rule in self.rules:
            if not isinstance(rule, Rule):
                raise FormError(f"rules holds {shown(rule)}; declare each with Rule.at_most, Rule.below, Rule.allowed")
            problem = rule.problem(self)
            if problem:
                raise FormError(f"rule {rule.kind!r} {problem}")
        try:
            self.validate(self.defaults)
        except InputError as error:
            raise FormError(f"the defaults break a rule: {error}") from None

    @property
    def defaults(self) -> dict[str, Any]:
        """Every field's default, by name, in the form's order."""
        return {item.name: item.default for item in self.fields}

    @staticmethod
    def specs() -> SpecSet:
        """The built-in specs, and the reader's own GPU and model while a view is answering for
        them (``own_entries``): where a view looks up what its GPU and model fields name."""
        own = _OWN.get()
        return builtin_specs().merged(own) if own is not None else builtin_specs()

    @property
    def owns(self) -> dict[str, str]:
        """The fields that take the reader's own entry: name -> ``"gpu"`` or ``"model"``."""
        return {item.name: item.own for item in self.fields if item.own}

    def field(self, name: str) -> Field:
        """The field called ``name``."""
        return next(item for item in self.fields if item.name == name)

    def validate(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The request with every field checked (whole numbers as ints), or InputError for the first bad one.

        Every field must be given, and nothing else; then every rule must hold.
        """
        unknown = [name for name in request if not any(name == item.name for item in self.fields)]
        if unknown:
            raise InputError(f"is not a field of this calculator (fields: {', '.join(self.defaults)})", unknown)
        values = {}
        for item in self.fields:
            if item.name not in request:
                raise InputError(f"is missing; it must be {item.describe()}", [item.name])
            values[item.name] = item.check(request[item.name])
        texts = {item.name: item.text(values[item.name]) for item in self.fields if item.kind == "choice"}
        for rule in self.rules:
            rule.check(values, texts)
        return values

    def requests_at_bounds(self) -> list[dict[str, Any]]:
        """The defaults, then each field at each of its bounds with the others at their defaults."""
        found = [self.defaults]
        for item in self.fields:
            for value in item.bounds():
                request = dict(self.defaults, **{item.name: value})
                if request not in found:
                    found.append(request)
        return found

    def check_answer(self, answer: Any) -> None:
        """FormError unless ``answer`` holds every key the outputs read, and the optional keys are well typed."""
        if not isinstance(answer, dict):
            raise FormError(f"view() must return a dict, got {type(answer).__name__}")
        for output in self.outputs:
            for key in output.keys():
                if key not in answer:
                    raise FormError(
                        f"output {output.name!r} ({output.kind}): the answer has no {key!r}; return it from view()"
                    )
        for key, wanted in OPTIONAL_KEYS.items():
            if key in answer and not isinstance(answer[key], wanted):
                raise FormError(f"the answer's {key!r} must be a {wanted.__name__}, got {type(answer[key]).__name__}")

    def view(self, function: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        """Decorate a calculator's view: every call is checked against this form first.

        The view's parameters must be the form's fields, by name. The returned function
        carries the form as ``.form``.
        """
        parameters = list(inspect.signature(function).parameters)
        if parameters != list(self.defaults):
            raise FormError(
                f"view() takes ({', '.join(parameters)}) but the form's fields are ({', '.join(self.defaults)});"
                " give view one parameter per field, in the same order"
            )

        @wraps(function)
        def checked(**request: Any) -> dict[str, Any]:
            return function(**self.validate(request))

        checked.form = self  # type: ignore[attr-defined]
        return checked
