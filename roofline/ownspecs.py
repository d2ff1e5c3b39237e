"""The reader's own model and GPU: what ``--model`` and ``--gpu`` name, on every command.

One resolver for every command that takes them: a value that is a known id
(built in, or from ``--specs``) is that entry. Any other value that names a
file, or looks like a path (it has a ``/`` or ends in ``.json`` or ``.toml``),
is read from disk: for ``--model`` a Hugging Face ``config.json`` (see
``hfconfig``), for ``--gpu`` a small GPU file. The entry read joins the spec
set under its own id, so everything downstream works by id as before; an id
another entry has is never taken over (``_unshadowed``). Nothing
is fetched from the network.

A GPU file holds the keys of one ``[gpu."ID"]`` entry of ``data/gpus.toml``,
as TOML or as one JSON object, with ``id`` and ``source`` optional::

    name = "My accelerator"
    memory_bytes = 96e9
    bandwidth_bytes_per_s = 4.0e12
    [dense_flops_per_s]
    bf16 = 900e12
    fp8 = 1800e12

A TOML file that is a spec file with exactly one ``[gpu."ID"]`` table works too.

In the reader's browser the same readers take a pasted text (``own_entry``): a
calculator's "Your model…" and "Your GPU…" entries send it, under an id the page
makes from its hash (``forms.OWN_ID``), and ``FILL_IN`` declares the few numbers a
reader may type instead, which the page writes into a config or GPU file of these
keys and sends alike.

This module also writes a model as a spec-file entry (``roofline model import``).
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import MISSING, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .architecture import total_parameters
from .errors import SpecError, entry_label, one_line
from .forms import OWN_ID, OWN_KINDS
from .hfconfig import MAX_CONFIG_BYTES, decode_json, model_from_config, read_config, read_small_file, too_large
from .loader import (
    MAX_NESTING,
    SpecSet,
    check_id,
    check_same_compute,
    gpu_entry,
    nesting_depth,
    parse_specs,
    suggested_id,
    too_deep,
)
from .specs import SOURCE_LENGTH, GpuSpec, ModelSpec

_PATH_ENDINGS = (".json", ".toml")
_GPU_HINT = "a GPU file holds one GPU's keys, as a [gpu.ID] entry in roofline/data/gpus.toml does"


def looks_like_path(value: str) -> bool:
    """Whether ``value`` is meant as a file: it has a path separator or a .json/.toml ending,
    or something of that name exists. (An id has neither; a known id is never read as a file.)"""
    return "/" in value or "\\" in value or value.lower().endswith(_PATH_ENDINGS) or os.path.exists(value)


#: What a file's entry gets after its id when the id is another entry's: ``llama-3.2-1b-file``.
_OWN_SUFFIX = "-file"


def _unshadowed(taken: Mapping[str, GpuSpec | ModelSpec], entry: GpuSpec | ModelSpec) -> GpuSpec | ModelSpec | None:
    """``entry`` under an id no other entry has; None when the entry of its id is the same GPU or
    model (equal in every field but id, name and source), so the file adds nothing.

    A file's id comes from its name (``_name_or_path``, the folder), so Llama 3.1 70B's config in a
    folder called ``llama-3.2-1b`` derives a built-in's id: replacing that entry would change every
    later use of the id (``--draft llama-3.2-1b`` would draft with the 70B). The file's entry gets
    ``-file`` after its id instead (``-file-2`` and on, should that be taken), cut to the id's 64
    characters.
    """
    existing = taken.get(entry.id)
    if existing is None:
        return entry
    if replace(existing, id=entry.id, name=entry.name, source=entry.source) == entry:
        return None
    for number in range(1, len(taken) + 2):
        suffix = _OWN_SUFFIX if number == 1 else f"{_OWN_SUFFIX}-{number}"
        candidate = entry.id[: 64 - len(suffix)] + suffix
        if candidate not in taken:
            return replace(entry, id=candidate)
    raise AssertionError("unreachable: more candidates than taken ids")  # pragma: no cover


def _with(specs: SpecSet, kind: str, entry: GpuSpec | ModelSpec, label: str) -> tuple[SpecSet, str]:
    """``specs`` with ``entry`` added under an id no other entry has (``_unshadowed``), its origin
    the file; and the id that names it."""
    taken = dict(specs.gpus) if kind == "gpu" else {**specs.drafts, **specs.models}
    unshadowed = _unshadowed(taken, entry)
    if unshadowed is None:
        return specs, entry.id
    entry = unshadowed
    added = SpecSet(
        gpus=MappingProxyType({entry.id: entry} if kind == "gpu" else {}),
        models=MappingProxyType({entry.id: entry} if kind == "model" else {}),
        origins=MappingProxyType({entry_label(kind, entry.id): label}),
    )
    return check_same_compute(specs.merged(added)), entry.id


def resolve_model(specs: SpecSet, value: str, *, read_weights: bool = True) -> tuple[SpecSet, str]:
    """``(specs, id)`` for a ``--model`` value: a known id as it is, a config.json's path (or the
    folder holding one, as a downloaded model is laid out) read and added. Anything else is
    returned unchanged, for the caller's unknown-id error. ``read_weights``: read the weights'
    format from the config (False: the caller gives it, see ``hfconfig.model_from_config``)."""
    if value in specs.models or not looks_like_path(value):
        return specs, value
    model = read_config(config_path(value), read_weights=read_weights)
    return _with(specs, "model", model, value)


def config_path(value: str) -> str:
    """The config.json a ``--model`` value or ``model import`` names: the file itself, or the one in
    the folder given (a downloaded model keeps config.json beside its weights)."""
    inside = os.path.join(value, "config.json")
    return inside if os.path.isdir(value) and os.path.isfile(inside) else value


def resolve_gpu(specs: SpecSet, value: str) -> tuple[SpecSet, str]:
    """``(specs, id)`` for a ``--gpu`` value: a known id as it is, a GPU file read and added."""
    if value in specs.gpus or not looks_like_path(value):
        return specs, value
    return _with(specs, "gpu", read_gpu_file(value), value)


# -- GPU files ----------------------------------------------------------------------------------


def parse_gpu_text(text: str, label: str) -> GpuSpec:
    """A GpuSpec from a GPU file's text: a JSON object when it starts with ``{``, else TOML."""
    try:
        if text.lstrip().startswith("{"):
            return _gpu_from_table(decode_json(text, label, "GPU file", _GPU_HINT), label)
        if len(text.encode("utf-8", "surrogatepass")) > MAX_CONFIG_BYTES:
            raise too_large(label, "GPU file")
        return _gpu_from_toml(text, label)
    except SpecError as error:
        raise error.located(file=label) from None


def _gpu_from_toml(text: str, label: str) -> GpuSpec:
    if nesting_depth(text, toml=True) > MAX_NESTING:
        raise too_deep(label, "GPU file")
    try:
        table = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError, OverflowError):
        parse_specs(text, label)  # raises the spec reader's one-line error, with line and column
        raise SpecError("is not TOML", file=label, hint=_GPU_HINT) from None
    entries = table.get("gpu")
    if isinstance(entries, dict) and entries and all(isinstance(entry, dict) for entry in entries.values()):
        gpus = parse_specs(text, label).gpus  # a spec file: its entries get a spec file's checks
        if len(gpus) != 1 or len(table) != 1:
            raise SpecError(f"holds {len(gpus)} GPU entries and more; a GPU file holds one", hint=_GPU_HINT)
        return next(iter(gpus.values()))
    return _gpu_from_table(table, label)


def _gpu_from_table(table: Mapping[str, Any], label: str) -> GpuSpec:
    """The GPU of a flat table: a ``[gpu."ID"]`` entry's keys, ``id`` and ``source`` optional."""
    if not table:
        raise SpecError("is empty", hint=_GPU_HINT + ": name, memory_bytes, bandwidth_bytes_per_s, dense_flops_per_s")
    values = dict(table)
    gpu_id = values.pop("id", None)
    name = values.get("name")
    if gpu_id is None:
        gpu_id = suggested_id(name if isinstance(name, str) and name.strip() else Path(label).stem)
    else:
        try:
            check_id(gpu_id)
        except SpecError as error:
            raise error.located(field="id") from None
    values.setdefault("source", f"GPU file {one_line(label)}"[:SOURCE_LENGTH])
    return gpu_entry(gpu_id, values)


def read_gpu_file(path: str | Path) -> GpuSpec:
    """The GpuSpec in the GPU file at ``path`` (TOML or JSON, at most ``MAX_CONFIG_BYTES``)."""
    return parse_gpu_text(read_small_file(path, "GPU file"), str(path))


# -- Pasted in the page -----------------------------------------------------------------------------

#: What a pasted text is called in its errors, by kind: "your config.json: field 'hidden_size': …".
OWN_LABELS = {"model": "your config.json", "gpu": "your GPU file"}

#: The numbers a reader may type instead of pasting, by kind: (key, label, unit scale, required).
#: The page writes them into a text of these keys (dotted keys nest: ``dense_flops_per_s.bf16``),
#: beside ``FILL_IN_BASE``'s, each number times its scale, and reads it as a paste: errors name the key.
FILL_IN: dict[str, tuple[tuple[str, str, float, bool], ...]] = {
    "model": (
        ("num_hidden_layers", "Layers", 1, True),
        ("hidden_size", "Hidden size", 1, True),
        ("num_attention_heads", "Attention heads", 1, True),
        ("num_key_value_heads", "KV heads", 1, True),
        ("intermediate_size", "MLP size", 1, True),
        ("vocab_size", "Vocabulary", 1, True),
    ),
    "gpu": (
        ("memory_bytes", "Memory, GB", 1e9, True),
        ("bandwidth_bytes_per_s", "Bandwidth, TB/s", 1e12, True),
        ("dense_flops_per_s.bf16", "Dense bf16, TFLOP/s", 1e12, True),
        ("dense_flops_per_s.fp8", "Dense fp8, TFLOP/s (optional)", 1e12, False),
        ("dense_flops_per_s.int8", "Dense int8, TFLOP/s (optional)", 1e12, False),
    ),
}
# No typed interconnect: a GPU-to-GPU link means little to the package without its measured
# all-reduce latency, which no one types from memory. A pasted GPU file may hold the whole
# [interconnect] table, as --gpu's does; a GPU without one is refused for more than one GPU.
#: What the typed numbers stand beside: a dense Llama-style decoder (its reader's defaults
#: for the rest: untied embeddings, no biases), and a GPU named so.
FILL_IN_BASE: dict[str, dict[str, Any]] = {
    "model": {"architectures": ["LlamaForCausalLM"], "_name_or_path": "Your model (typed)"},
    "gpu": {"name": "Your GPU (typed)"},
}


@functools.lru_cache(maxsize=16)
def own_entry(kind: str, entry_id: str, text: str) -> GpuSpec | ModelSpec:
    """The reader's own GPU or model from a pasted ``text`` (a config.json, or a GPU file as
    ``--gpu`` reads it), under ``entry_id`` (``own-`` and a hash, ``forms.OWN_ID``).

    The same readers as ``--model`` and ``--gpu``, with their limits: one line naming the key
    on bad input, a text over ``MAX_CONFIG_BYTES`` refused before it is parsed. Cached on the
    text, since the page sends it with every request that uses it.
    """
    if kind not in OWN_KINDS:
        raise SpecError(f"unknown kind of entry {kind!r}", hint=f"one of {', '.join(OWN_KINDS)}")
    if not isinstance(entry_id, str) or not OWN_ID.fullmatch(entry_id):
        raise SpecError(f"bad id {entry_id!r}", hint="own- and 8 hexadecimal digits")
    label = OWN_LABELS[kind]
    if not isinstance(text, str) or not text.strip():
        raise SpecError("is empty", file=label, hint="paste the file's text")
    if len(text) > MAX_CONFIG_BYTES:  # before anything reads it: a 100 MB paste is not even encoded
        raise too_large(label, "config.json" if kind == "model" else "GPU file")
    if kind == "model":
        config = decode_json(text, label)
        named = isinstance(config.get("_name_or_path"), str) and config["_name_or_path"].strip()
        classes = config.get("architectures")
        family = classes[0] if isinstance(classes, list) and classes and isinstance(classes[0], str) else ""
        # Without a name of its own, a pasted config is called by its family: "Your model (Qwen3)".
        name = f"Your model ({one_line(family.removesuffix('ForCausalLM'))[:40]})" if family else "Your model"
        # The calculators take the weights' format from their own precision field, as --precision
        # given: a quantization_config roofline has no format for is no reason to refuse the paste.
        return model_from_config(config, label, model_id=entry_id, name=None if named else name, read_weights=False)
    if text.lstrip().startswith("{"):
        # A pasted object may leave its name out, as the five typed numbers do not give one.
        table = decode_json(text, label, "GPU file", _GPU_HINT)
        table.setdefault("name", "Your GPU")
        try:
            return replace(_gpu_from_table(table, label), id=entry_id)
        except SpecError as error:
            raise error.located(file=label) from None
    return replace(parse_gpu_text(text, label), id=entry_id)


def what_was_read(spec: GpuSpec | ModelSpec) -> str:
    """One line of the values the package read from the reader's pasted file, so the page can show
    what it understood: "Read: 32 layers, hidden size 4,096, …" (a model) or "Read: 80.0 GB, …" (a GPU).
    Only values the entry holds; a field the file left out reads as its default, shown the same."""
    if isinstance(spec, GpuSpec):
        peaks = ", ".join(
            f"{flops / 1e12:,.0f} TFLOP/s {precision}" for precision, flops in sorted(spec.dense_flops_per_s.items())
        )
        parts = [
            f"memory {spec.memory_bytes / 1e9:,.1f} GB",
            f"bandwidth {spec.bandwidth_bytes_per_s / 1e12:,.2f} TB/s",
            f"dense peak {peaks}",
        ]
        return f"Read: {spec.name}: " + "; ".join(parts) + "."
    parts = [
        f"{spec.layers:,} layers",
        f"hidden size {spec.hidden_size:,}",
        f"{spec.attention_heads:,} attention heads",
    ]
    if spec.mla is not None:
        parts.append("latent attention (MLA)")
    else:
        parts += [f"{spec.kv_heads:,} KV heads", f"head size {spec.head_dim:,}"]
    parts += [f"MLP size {spec.ffn_size:,}", f"vocabulary {spec.vocab_size:,}"]
    if spec.moe is not None:
        parts.append(f"{spec.moe.experts:,} experts, {spec.moe.experts_per_token:,} per token")
    if spec.sliding_window:
        parts.append(f"sliding window {spec.sliding_window:,}")
    if spec.max_context:
        parts.append(f"context up to {spec.max_context:,}")
    # A pasted config's weight format is not read (own_entry: the calculator's precision menu sets it).
    parts.append(f"weights stored as {spec.weight_precision}" if spec.weight_precision else "precision from the menu")
    parts.append(f"{total_parameters(spec) / 1e9:,.2f}B parameters in all")
    return f"Read: {spec.name}: " + ", ".join(parts) + "."


# -- Writing a model entry ------------------------------------------------------------------------


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string: quotes and backslashes escaped, control characters as \\uXXXX."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\u{ord(m.group()):04x}", escaped) + '"'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _toml_string(value)
    return "[" + ", ".join(_toml_value(item) for item in value) + "]"


def _changed(record: Any, skip: tuple[str, ...] = ()) -> list[tuple[str, Any]]:
    """A record's fields as key/value pairs, leaving out those at their default (optional keys)."""
    pairs = []
    for spec_field in fields(record):
        value = getattr(record, spec_field.name)
        if spec_field.name in skip or (spec_field.default is not MISSING and value == spec_field.default):
            continue
        pairs.append((spec_field.name, value))
    return pairs


def model_entry_toml(model: ModelSpec) -> str:
    """``model`` as a ``[model."ID"]`` entry of a spec file, checked by reading it back:
    the text parses to a record equal to ``model``."""
    skip = ("id", "moe", "mla", "source") + (("kv_heads", "head_dim") if model.mla else ())
    lines = [f'[model."{model.id}"]']
    lines += [f"{key} = {_toml_value(value)}" for key, value in _changed(model, skip)]
    lines.append(f"source = {_toml_string(model.source)}")
    for part, record in (("moe", model.moe), ("mla", model.mla)):
        if record is not None:
            lines += ["", f'[model."{model.id}".{part}]']
            lines += [f"{key} = {_toml_value(value)}" for key, value in _changed(record)]
    text = "\n".join(lines) + "\n"
    read = parse_specs(text, entry_label("model", model.id))
    back = (read.drafts if model.draft_for is not None else read.models)[model.id]
    if back != model:  # pragma: no cover - a writer bug, not bad input
        raise AssertionError(f"the entry written for {model.id} reads back differently")
    return text
