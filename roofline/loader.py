"""Read spec files (TOML) into validated records, with one-line errors that say where.

A spec file holds ``[gpu.ID]`` and ``[model.ID]`` tables; the built-in files in
``roofline/data/`` document the format in their headers. Later files add
entries or replace entries with the same id, which is how ``--specs`` works.
"""

from __future__ import annotations

import codecs
import functools
import itertools
import os
import re
import stat
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .errors import SpecError, did_you_mean, entry_label, shown, unknown_name
from .specs import GpuSpec, InterconnectSpec, MlaSpec, ModelSpec, MoeSpec

BUILTIN_FILES = ("gpus.toml", "models.toml")
#: Matched with ``fullmatch``: ``$`` in ``re.match`` would also accept an id ending in a newline.
_ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
#: Largest spec file read. The built-in ones are about 10 kB; this is a hundred times that,
#: and it keeps a mistaken path (a log, a disk image, /dev/zero) from filling memory.
MAX_FILE_BYTES = 1_000_000
#: How deeply arrays and tables (JSON objects) may nest in a spec file, a GPU file or a
#: config.json; real ones nest three or four deep. Checked before parsing: the parsers recurse
#: once a level, and in Pyodide a few thousand levels overflow JavaScript's stack, which kills
#: the interpreter for the page instead of raising RecursionError as CPython does.
MAX_NESTING = 64
#: What may hold a bracket that does not nest: strings, and TOML's comments. Possessive, and an
#: unclosed string runs to the end, so that the scan is linear whatever the text.
_JSON_SKIPPED = re.compile(r'"(?:[^"\\]++|\\.?)*+"?', re.DOTALL)
_TOML_SKIPPED = re.compile(
    r"#[^\n]*+"
    r"|'''.*?(?:'''|\Z)"
    r"|'[^'\n]*+'?"
    r'|"""(?:[^"\\]++|\\.?|"(?!""))*+(?:"""|\Z)'
    r'|"(?:[^"\\\n]++|\\.?)*+"?',
    re.DOTALL,
)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_NESTS = {"[": 1, "{": 1, "]": -1, "}": -1}


def nesting_depth(text: str, *, toml: bool = False) -> int:
    """How deeply arrays and tables nest in ``text`` (JSON, or TOML with ``toml``), brackets in
    strings and comments aside. A stray closing bracket lowers the count, but the parser stops
    there, so the count is never below the depth it would reach. Linear, in C loops."""
    bare = _NOT_BRACKET.sub("", (_TOML_SKIPPED if toml else _JSON_SKIPPED).sub("", text))
    return max(itertools.accumulate(map(_NESTS.__getitem__, bare)), default=0)


def too_deep(label: str, what: str) -> SpecError:
    """The error for a text nested more than ``MAX_NESTING`` deep (see there)."""
    return SpecError(f"is not a {what}: arrays or tables nested more than {MAX_NESTING} deep", file=label)


def _keys(record_type: type, *, leave_out: Iterable[str] = ()) -> tuple[str, ...]:
    skip = {"id", *leave_out}
    return tuple(f.name for f in fields(record_type) if f.name not in skip)


#: Keys an entry may leave out; without them the record takes its default.
_GPU_OPTIONAL = (
    "memory_note",
    "host_link_bytes_per_s",
    "host_link_source",
    "addressable_memory_bytes",
    "addressable_memory_source",
    "interconnect",
    "same_compute_as",
    "same_compute_source",
)
_WINDOW_KEYS = ("sliding_window", "layer_pattern")
#: Small per-layer weights some architectures add (biases, q/k norms, extra norms).
_LAYER_EXTRAS = ("qkv_bias", "output_bias", "qk_norm", "norms_per_layer")
#: Widths a draft head changes, and the target it drafts for (see ModelSpec).
_DRAFT_KEYS = ("head_vocab_size", "attention_input_size", "fusion_input_size", "shares_target_embedding", "draft_for")
_MODEL_OPTIONAL = (*_WINDOW_KEYS, *_LAYER_EXTRAS, "max_context", *_DRAFT_KEYS, "weight_precision")
_MOE_OPTIONAL = ("router_bias", "expert_bias", "node_limit")
_GPU_KEYS = _keys(GpuSpec, leave_out=_GPU_OPTIONAL)
_MODEL_KEYS = _keys(ModelSpec, leave_out=("moe", "mla", *_MODEL_OPTIONAL))
_MLA_MODEL_KEYS = tuple(key for key in _MODEL_KEYS if key not in ("kv_heads", "head_dim"))
_MOE_KEYS = _keys(MoeSpec, leave_out=_MOE_OPTIONAL)
_MLA_KEYS = _keys(MlaSpec)
#: Interconnect keys a links table may leave out.
_INTERCONNECT_OPTIONAL = ("alltoall", "allreduce_bus_bytes_per_s")
_INTERCONNECT_KEYS = _keys(InterconnectSpec, leave_out=_INTERCONNECT_OPTIONAL)


@dataclass(frozen=True)
class SpecSet:
    """Every GPU and model known to one run, by id, and which file defined each entry.

    ``models`` are the models one can serve; ``drafts`` the draft-only entries (a model
    entry with ``draft_for``, such as an EAGLE-3 head), kept apart so that no table, menu,
    sweep or figure that goes over the models meets one. ``draft`` finds either kind.
    """

    gpus: Mapping[str, GpuSpec] = field(default_factory=lambda: MappingProxyType({}))
    models: Mapping[str, ModelSpec] = field(default_factory=lambda: MappingProxyType({}))
    #: Entry label (``[gpu."h100-sxm"]``) -> the label of the file that defined it, for error messages.
    origins: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    drafts: Mapping[str, ModelSpec] = field(default_factory=lambda: MappingProxyType({}))

    def gpu(self, gpu_id: str) -> GpuSpec:
        """The GPU with ``gpu_id``; an unknown id raises SpecError naming the close match."""
        try:
            return self.gpus[gpu_id]
        except KeyError:
            raise self._unknown("gpu", "GPU", gpu_id, self.gpus) from None

    def model(self, model_id: str) -> ModelSpec:
        """The model with ``model_id``; an unknown id raises SpecError naming the close match."""
        try:
            return self.models[model_id]
        except KeyError:
            pass
        head = self.drafts.get(model_id)
        if head is not None:
            raise SpecError(
                f"{model_id} is a draft for {head.draft_for}, not a model to serve on its own",
                hint=f"give it as --draft with --model {head.draft_for}",
            )
        raise self._unknown("model", "model", model_id, self.models)

    def draft(self, model_id: str) -> ModelSpec:
        """The draft called ``model_id``: a draft-only entry, or any model (a small model of the
        target's family drafts for it). Whether it suits a target is ``speculative``'s check."""
        head = self.drafts.get(model_id)
        if head is not None:
            return head
        try:
            return self.models[model_id]
        except KeyError:
            raise self._unknown("model", "model", model_id, {**self.models, **self.drafts}) from None

    def _unknown(self, kind: str, noun: str, entry_id: str, known: Mapping[str, object]) -> SpecError:
        error = unknown_name(noun, entry_id, known)
        error.missing = (kind, entry_id)
        return error

    def locate(self, error: SpecError) -> SpecError:
        """``error`` naming the file of its entry too: the file that defined the entry, or for an
        unknown id the file(s) that hold that kind of entry, where it would go (the site build's
        errors say which file to fix). A caller's own bad id is left unlocated by ``gpu``/``model``."""
        if error.missing is not None:
            kind, entry_id = error.missing
            known = self.gpus if kind == "gpu" else {**self.models, **self.drafts}
            labels = (entry_label(kind, other) for other in known)
            files = dict.fromkeys(self.origins[label] for label in labels if label in self.origins)
            return error.located(file=", ".join(files) or None, entry=entry_label(kind, entry_id))
        if error.file is None and error.entry in self.origins:
            return error.located(file=self.origins[error.entry])
        return error

    def merged(self, other: SpecSet) -> SpecSet:
        """This set with ``other``'s entries added, replacing any with the same id (a draft-only
        entry replaced by a model, or the other way round, leaves the kind it was)."""
        models = {key: value for key, value in self.models.items() if key not in other.drafts}
        drafts = {key: value for key, value in self.drafts.items() if key not in other.models}
        return SpecSet(
            gpus=MappingProxyType({**self.gpus, **other.gpus}),
            models=MappingProxyType({**models, **other.models}),
            origins=MappingProxyType({**self.origins, **other.origins}),
            drafts=MappingProxyType({**drafts, **other.drafts}),
        )


def _require_keys(table: Mapping[str, Any], allowed: tuple[str, ...], *, optional: tuple[str, ...] = ()) -> None:
    """Raise on the first unknown key (with the close match) or missing key."""
    listed = "allowed: " + ", ".join(allowed) + ("; optional: " + ", ".join(optional) if optional else "")
    for key in table:
        if key not in allowed and key not in optional:
            hint = did_you_mean(key, (*allowed, *optional)) or listed
            if isinstance(table[key], dict):  # a table: often an id's dot read as nesting
                hint = f'quote an id that has a dot in it: [model."llama-3.1-8b"]; {hint}'
            raise SpecError("unknown key", field=key, hint=hint)
    for key in allowed:
        if key not in table:
            raise SpecError("is missing", field=key, hint="an entry states " + ", ".join(allowed))


def _subtable(table: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = table[key]
    if not isinstance(value, dict):
        raise SpecError(f"must be a table ([...{key}]), got {shown(value)}", field=key)
    return value


def _nested(
    record_type: type, table: Mapping[str, Any], key: str, allowed: tuple[str, ...], optional: tuple[str, ...] = ()
) -> Any:
    sub = _subtable(table, key)
    try:
        _require_keys(sub, allowed, optional=optional)
        return record_type(**sub)
    except SpecError as error:
        raise SpecError(error.message, field=f"{key}.{error.field}", hint=error.hint) from None


def _gpu(entry_id: str, table: Mapping[str, Any]) -> GpuSpec:
    _require_keys(table, _GPU_KEYS, optional=_GPU_OPTIONAL)
    values = dict(table)
    values["dense_flops_per_s"] = _subtable(table, "dense_flops_per_s")
    if "interconnect" in table:
        try:
            values["interconnect"] = _nested(
                InterconnectSpec, table, "interconnect", _INTERCONNECT_KEYS, optional=_INTERCONNECT_OPTIONAL
            )
        except SpecError as error:
            raise _interconnect_hint(error, entry_id) from None
    if "same_compute_as" in table:
        try:
            check_id(table["same_compute_as"])
        except SpecError as error:
            raise SpecError(error.message, field="same_compute_as", hint=error.hint) from None
    return GpuSpec(id=entry_id, **values)


#: What each interconnect field holds, with an example: the fix a bad or missing one is told.
_INTERCONNECT_HINTS = {
    "scale_up": 'the fabric\'s name, one line of text, for example scale_up = "PCIe Gen4 x16"',
    "domain_gpus": "a whole number of GPUs that share the fabric, 1 to 100,000, for example domain_gpus = 8",
    "link_bytes_per_s": "what one GPU sends, one direction, in bytes per second from 1e8 to 1e14,"
    " for example link_bytes_per_s = 32e9 (PCIe Gen4 x16; datasheets print 64 GB/s, both directions added)",
    "scale_out_bytes_per_s": "one GPU's share of the network between domains, one direction, in bytes per second"
    " from 1e8 to 1e14, for example scale_out_bytes_per_s = 50e9 (a 400 Gb/s NIC)",
    "allreduce_latency_s": "for example allreduce_latency_s = { nccl = { ring_gpus = 8, ring_s = 19.19e-6 } }",
    "source": 'where the figures come from, one line, for example source = "https://..."',
    "allreduce_bus_bytes_per_s": "a large all-reduce's measured bus bandwidth (nccl-tests' busbw), in bytes per"
    " second from 1e8 to 1e14, for example allreduce_bus_bytes_per_s = 200e9; or leave it out",
    "alltoall": "for example alltoall = { deepep_normal = { nvlink_bytes_per_s = 158e9, rdma_bytes_per_s = 58e9,"
    ' latency_s = 0, source = "https://..." } }',
}


def _interconnect_hint(error: SpecError, entry_id: str) -> SpecError:
    """``error`` from an ``[interconnect]`` table, with the fix for its field when it names none
    of its own (a misspelling keeps its 'did you mean'); an unknown key is told where a PCIe
    card's generation and lanes go, the details a links table has no key for."""
    parts = (error.field or "").split(".")
    if parts[0] != "interconnect":
        return error
    if error.message == "unknown key" and len(parts) == 2 and (error.hint or "").startswith("allowed:"):
        hint = f"{error.hint}; a PCIe card's generation and lanes go in scale_up's text: scale_up = \"PCIe Gen4 x16\""
        return SpecError(error.message, file=error.file, entry=error.entry, field=error.field, hint=hint)
    if error.hint:
        return error
    hint = _INTERCONNECT_HINTS.get(parts[1]) if len(parts) > 1 else None
    if hint is None:
        hint = f'write it as a table, [gpu."{entry_id}".interconnect], with ' + ", ".join(_INTERCONNECT_KEYS)
    return SpecError(error.message, file=error.file, entry=error.entry, field=error.field, hint=hint)


def check_same_compute(specs: SpecSet) -> SpecSet:
    """``specs``, once every GPU's ``same_compute_as`` names a GPU of the set that names no other
    itself (one step, no chains: the shares are fitted under that chip's id); else one located
    SpecError. Checked on a whole set, as a reader's own GPU file may name a built-in chip."""
    for gpu in specs.gpus.values():
        other = gpu.same_compute_as
        if other is None:
            continue
        entry = entry_label("gpu", gpu.id)
        if other not in specs.gpus:
            error = unknown_name("GPU", other, specs.gpus)
            raise SpecError(
                error.message, file=specs.origins.get(entry), entry=entry, field="same_compute_as", hint=error.hint
            )
        if specs.gpus[other].same_compute_as is not None:
            raise SpecError(
                f"names {other}, which itself names {specs.gpus[other].same_compute_as}",
                file=specs.origins.get(entry),
                entry=entry,
                field="same_compute_as",
                hint=f"name {specs.gpus[other].same_compute_as} directly",
            )
    return specs


def _model(entry_id: str, table: Mapping[str, Any]) -> ModelSpec:
    uses_mla = "mla" in table
    base_keys = _MLA_MODEL_KEYS if uses_mla else _MODEL_KEYS
    if uses_mla:
        for key in ("kv_heads", "head_dim"):
            if key in table:
                raise SpecError(
                    "does not apply to a model with [mla]",
                    field=key,
                    hint="the latent's size is set by mla.kv_lora_rank; remove this key",
                )
    _require_keys(table, base_keys, optional=("moe", "mla", *_MODEL_OPTIONAL))
    values = {key: table[key] for key in (*base_keys, *_MODEL_OPTIONAL) if key in table}
    if "draft_for" in table:
        try:
            check_id(table["draft_for"])
        except SpecError as error:
            raise SpecError(error.message, field="draft_for", hint=error.hint) from None
    if "moe" in table:
        values["moe"] = _nested(MoeSpec, table, "moe", _MOE_KEYS, _MOE_OPTIONAL)
    if uses_mla:
        values["mla"] = _nested(MlaSpec, table, "mla", _MLA_KEYS)
        values.update(kv_heads=0, head_dim=0)
    return ModelSpec(id=entry_id, **values)


_BUILDERS = {"gpu": _gpu, "model": _model}


def gpu_entry(entry_id: str, table: Mapping[str, Any]) -> GpuSpec:
    """A GpuSpec from the keys of one ``[gpu."ID"]`` table, with a spec file's checks
    (a GPU file given to ``--gpu`` holds the same keys)."""
    return _gpu(entry_id, table)


def check_id(entry_id: object) -> None:
    """Raise SpecError unless ``entry_id`` is a valid id (what ``--gpu``/``--model`` take)."""
    if not isinstance(entry_id, str) or not _ID_PATTERN.fullmatch(entry_id):
        raise SpecError(
            "bad id: use 1 to 64 lower-case letters, digits, '.', '-' and '_', starting with a letter or digit",
            hint=f"for example '{suggested_id(str(entry_id))}'",
        )


def suggested_id(entry_id: str) -> str:
    """A valid id close to ``entry_id``: lower case, runs of other characters as one '-'."""
    cleaned = re.sub(r"[^a-z0-9._-]+", "-", entry_id.lower()).strip("-._")[:64]
    return cleaned or "my-entry"


def _decode_toml(text: str, label: str) -> dict[str, Any]:
    if nesting_depth(text, toml=True) > MAX_NESTING:
        # Spec files and measurements both come here: the line names neither.
        raise SpecError(f"nested more than {MAX_NESTING} deep (arrays or inline tables inside each other)", file=label)
    try:
        return tomllib.loads(text)
    except RecursionError:
        # tomllib reads nested arrays and inline tables recursively; no spec needs more than 3 levels.
        raise SpecError("nested too deeply (arrays or inline tables inside each other)", file=label) from None
    except (ValueError, OverflowError) as error:
        if not isinstance(error, tomllib.TOMLDecodeError):
            # int() refuses more than 4,300 digits; no spec value comes near that.
            raise SpecError(f"a value is out of range: {str(error).split(':')[0]}", file=label) from None
        message = str(error)
        twice = re.search(r"Cannot declare \('(\w+)', '([^']+)'\) twice", message)
        where = re.search(r"\(at line (\d+), column (\d+)\)", message)
        line = f"line {where.group(1)}: " if where else ""
        if twice:
            raise SpecError(
                f"{line}duplicate id (an id may be defined once per file)",
                file=label,
                entry=entry_label(twice.group(1), twice.group(2)),
                hint="rename one of them or delete the copy",
            ) from None
        detail = re.sub(r"\s*\(at line \d+, column \d+\)", "", message)
        if where:
            detail = f"line {where.group(1)}, column {where.group(2)}: {detail}"
        raise SpecError(f"TOML syntax error at {detail}", file=label) from None


def parse_specs(text: str, label: str) -> SpecSet:
    """Parse the TOML ``text`` of one spec file; ``label`` names it in errors."""
    document = _decode_toml(text, label)
    found: dict[str, dict[str, Any]] = {"gpu": {}, "model": {}}
    for kind, entries in document.items():
        if kind not in _BUILDERS:
            raise SpecError(
                f"unknown table [{kind}]",
                file=label,
                hint=did_you_mean(kind, _BUILDERS) or "a spec file holds [gpu.ID] and [model.ID] tables",
            )
        if not isinstance(entries, dict):
            raise SpecError(f"[{kind}] must hold [{kind}.ID] tables", file=label)
        for entry_id, table in entries.items():
            entry = entry_label(kind, entry_id)
            try:
                check_id(entry_id)
            except SpecError as error:
                raise error.located(file=label, entry=entry) from None
            if not isinstance(table, dict):
                raise SpecError(f"must be a table [{kind}.{entry_id}]", file=label, entry=entry)
            try:
                found[kind][entry_id] = _BUILDERS[kind](entry_id, table)
            except SpecError as error:
                raise error.located(file=label, entry=entry) from None
    origins = {entry_label(kind, entry_id): label for kind in found for entry_id in found[kind]}
    models = {key: model for key, model in found["model"].items() if model.draft_for is None}
    drafts = {key: model for key, model in found["model"].items() if model.draft_for is not None}
    return SpecSet(
        gpus=MappingProxyType(found["gpu"]),
        models=MappingProxyType(models),
        origins=MappingProxyType(origins),
        drafts=MappingProxyType(drafts),
    )


def _file_kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


def read_spec_bytes(path: str | Path, label: str) -> bytes:
    """The bytes of one spec file, refusing anything that is not a regular file of at most ``MAX_FILE_BYTES``.

    The file is opened without blocking and checked through its open handle, so
    a FIFO cannot hang the read and ``/dev/zero`` cannot fill memory, and a
    file swapped between a check and the read is still the file checked.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise SpecError("no such file", file=label) from None
    except (OSError, ValueError) as error:  # ValueError: a NUL in the path
        raise SpecError(f"cannot open: {getattr(error, 'strerror', None) or error}", file=label) from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise SpecError(f"is {_file_kind(mode)}, not a spec file", file=label, hint="give the path of a .toml file")
        chunks, size = [], 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(descriptor, MAX_FILE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except OSError as error:
        raise SpecError(f"cannot read: {error.strerror or error}", file=label) from None
    finally:
        os.close(descriptor)
    if len(data) > MAX_FILE_BYTES:
        raise SpecError(
            f"is larger than {MAX_FILE_BYTES / 1e6:g} MB, too large for a spec file",
            file=label,
            hint="a spec file lists GPUs and models; the built-in ones are about 10 kB",
        )
    return data


def decode_spec_text(data: bytes, label: str) -> str:
    """UTF-8 text of a spec file. A UTF-8 byte-order mark is dropped (editors on Windows write one);
    other encodings are refused with the way out."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise SpecError("is UTF-16 text, not UTF-8", file=label, hint="save it as UTF-8; TOML files are UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SpecError(
            f"is not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start:,})",
            file=label,
            hint="save it as UTF-8; TOML files are UTF-8",
        ) from None


def read_spec_file(path: str | Path) -> SpecSet:
    """Read one spec file from disk; an unreadable, oversized or non-regular file is a SpecError too."""
    label = str(path)
    return parse_specs(decode_spec_text(read_spec_bytes(path, label), label), label)


def builtin_specs(data_dir: str | Path | None = None) -> SpecSet:
    """The GPUs and models that ship in ``roofline/data/`` (or in ``data_dir``, laid out alike).

    The files are read on every call, which is cheap, and parsed only when
    their text changed, so a long-lived process (a dev server, the browser's
    calculator) sees an edited spec file at once and pays nothing otherwise.
    """
    texts = []
    for name in BUILTIN_FILES:
        location = Path(data_dir) / name if data_dir is not None else resources.files("roofline") / "data" / name
        label = f"roofline/data/{name}"
        try:
            texts.append((decode_spec_text(location.read_bytes(), label), label))
        except OSError as error:
            raise SpecError(f"cannot read: {error.strerror or error}", file=label) from None
    return _parse_texts(tuple(texts))


@functools.lru_cache(maxsize=8)
def _parse_texts(texts: tuple[tuple[str, str], ...]) -> SpecSet:
    specs = SpecSet()
    for text, label in texts:
        specs = specs.merged(parse_specs(text, label))
    return check_same_compute(specs)


def load_specs(extra_files: Iterable[str | Path] = (), *, data_dir: str | Path | None = None) -> SpecSet:
    """Built-in specs (from ``data_dir`` if given), then each of ``extra_files`` in order,
    later ids replacing earlier."""
    specs = builtin_specs(data_dir)
    for path in extra_files:
        specs = specs.merged(read_spec_file(path))
    return check_same_compute(specs)
