"""Read a Hugging Face ``config.json`` into a ModelSpec, offline.

A config names its model class in ``architectures``; each supported class has a
reader here that maps the config's keys to ModelSpec's fields. A key that
published configs leave out takes the value transformers' config class gives
it (each reader says which), and the entry's source then lists it; every
other key is required. The record's own validation applies, so a config gets
the same limits as an entry in a spec file, and its errors name the config's
key (``num_hidden_layers``), not the record's field.

Nothing is fetched: the text is the only input. The same code reads a pasted
config in the reader's browser.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .errors import SpecError, one_line, shown
from .loader import (
    MAX_FILE_BYTES,
    MAX_NESTING,
    decode_spec_text,
    nesting_depth,
    read_spec_bytes,
    suggested_id,
    too_deep,
)
from .specs import MAX_CONTEXT_TOKENS, NAME_LENGTH, SOURCE_LENGTH, MlaSpec, ModelSpec, MoeSpec

#: Largest config read, in bytes (as a spec file): real ones are 1 to 30 kB, and
#: a mistaken file (a 100 MB safetensors shard) is refused before it is parsed.
MAX_CONFIG_BYTES = MAX_FILE_BYTES
#: transformers' names for the kinds of layer in ``layer_types``.
_LAYER_TYPES = {"sliding_attention": "local", "full_attention": "global"}
_REQUIRED = object()


def _maxima() -> dict[str, int]:
    """The largest value of each record field a config key may set (``layers``: 10,000,
    ``moe.experts``: 100,000), from the records' own limits, so that a key is checked the
    moment it is read: a count drives loops and lists (one entry a layer) before the
    record exists, and 1e9 layers must be refused before a list of 1e9 entries is built."""
    maxima = {"max_context": MAX_CONTEXT_TOKENS, "sliding_window": MAX_CONTEXT_TOKENS}
    for prefix, record in (("", ModelSpec), ("moe.", MoeSpec), ("mla.", MlaSpec)):
        for spec_field in fields(record):
            if spec_field.metadata.get("kind") == "count" and spec_field.metadata.get("maximum") is not None:
                maxima[prefix + spec_field.name] = spec_field.metadata["maximum"]
    return maxima


_MAXIMA = _maxima()
_CONFIG_HINT = "give the model's config.json as Hugging Face publishes it"


@dataclass(frozen=True)
class Family:
    """One supported model class: its name as ``architectures`` gives it, a reader
    from the config's keys to ModelSpec's fields, and where the defaults come from."""

    architecture: str
    read: Callable[[_Keys], dict[str, Any]]
    #: The transformers config class whose defaults fill keys a config leaves out.
    config_class: str


class _Keys:
    """The config's keys, read with checks; remembers which key set which record field
    (so a range error names the config's key) and which keys took a default."""

    def __init__(self, config: Mapping[str, Any], family: str, config_class: str) -> None:
        self.config = config
        self.family = family
        self.config_class = config_class
        self.fields: dict[str, str] = {}
        self.defaulted: list[str] = []
        self.notes: list[str] = []
        #: Defaults of the config class for keys its published configs leave out (Gemma 3's text_config).
        self.class_defaults: Mapping[str, Any] = {}

    @property
    def labels(self) -> tuple[str, str]:
        """The family and config class, for a reader of a nested table (text_config)."""
        return self.family, self.config_class

    def _given(self, key: str) -> Any:
        """The key's value, or None when absent or null (transformers reads null as "not given")."""
        return self.config.get(key)

    def whole(self, key: str, default: Any = _REQUIRED, *, field: str | None = None, minimum: int = 1) -> int:
        """A whole number, at least ``minimum``; ``default`` when absent (if the config class has one)."""
        value = self._given(key)
        if value is None:
            default = self.class_defaults.get(key, default)
            if default is _REQUIRED:
                raise SpecError(
                    "is missing" if key not in self.config else "is null",
                    field=key,
                    hint=f"every {self.family} config states it; copy it from the model's config.json",
                )
            self._default(key, default)
            value = default
        elif isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and math.isfinite(value) and value.is_integer():
                value = int(value)  # 4096.0: a whole number written as a float
            else:
                raise SpecError(f"must be a whole number, got {shown(value)}", field=key)
        if value < minimum:
            raise SpecError(f"must be at least {minimum}, got {shown(value)}", field=key)
        maximum = _MAXIMA.get(field or "")
        if maximum is not None and value > maximum:
            raise SpecError(f"must be at most {maximum:,}, got {shown(value)} (roofline's {field})", field=key)
        if field:
            self.fields[field] = key
        return value

    def flag(self, key: str, default: bool, *, field: str | None = None) -> bool:
        """true or false; ``default`` when absent."""
        value = self._given(key)
        if value is None:
            if key in self.config or default:  # a false default needs no note
                self._default(key, default)
            value = default
        elif not isinstance(value, bool):
            raise SpecError(f"must be true or false, got {shown(value)}", field=key)
        if field:
            self.fields[field] = key
        return value

    def whole_list(self, key: str) -> list[int]:
        """A list of whole numbers (layer indices); [] when absent."""
        value = self._given(key)
        if value is None:
            return []
        if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise SpecError(f"must be a list of whole numbers, got {shown(value)}", field=key)
        return value

    def refuse(self, key: str, why: str) -> None:
        """Refuse a config that sets ``key`` true: a variant the package does not model."""
        if self.flag(key, False):
            raise SpecError(f"is true: {why}", field=key, hint="roofline does not model this variant")

    def _default(self, key: str, value: Any) -> None:
        shown_value = json.dumps(value) if not isinstance(value, list) else f"a {len(value)}-entry list"
        self.defaulted.append(f"{key} = {shown_value}")


# -- The pieces every decoder has ---------------------------------------------------------------


def _decoder(keys: _Keys, *, tied: bool, head_dim: str = "derived") -> dict[str, Any]:
    """Layers, widths, heads and vocabulary: the keys every supported family shares.

    ``head_dim``: "derived" reads a missing ``head_dim`` as transformers does,
    ``hidden_size // num_attention_heads``; "required" refuses a config without one
    (families whose config class defaults it to a constant, not the ratio).
    """
    hidden = keys.whole("hidden_size", field="hidden_size")
    heads = keys.whole("num_attention_heads", field="attention_heads")
    kv_heads = keys.whole("num_key_value_heads", heads, field="kv_heads")
    if heads % kv_heads:
        raise SpecError(
            f"must divide num_attention_heads ({heads:,}) evenly, got {kv_heads:,}",
            field="num_key_value_heads",
            hint="grouped-query attention shares each key/value head among a whole number of query heads",
        )
    values = {
        "layers": keys.whole("num_hidden_layers", field="layers"),
        "hidden_size": hidden,
        "attention_heads": heads,
        "kv_heads": kv_heads,
        "head_dim": keys.whole("head_dim", hidden // heads if head_dim == "derived" else _REQUIRED, field="head_dim"),
        "ffn_size": keys.whole("intermediate_size", field="ffn_size"),
        "vocab_size": keys.whole("vocab_size", field="vocab_size"),
        "tied_embeddings": keys.flag("tie_word_embeddings", tied, field="tied_embeddings"),
    }
    return values


def _attention_bias(keys: _Keys, default: bool = False) -> dict[str, bool]:
    """``attention_bias``: biases on q, k, v and the output projection together."""
    bias = keys.flag("attention_bias", default, field="qkv_bias")
    keys.fields["output_bias"] = "attention_bias"
    return {"qkv_bias": bias, "output_bias": bias}


def _kinds_from_layer_types(keys: _Keys, layers: int) -> list[str] | None:
    """``layer_types`` as "local"/"global", or None when the config has none."""
    types = keys._given("layer_types")
    if types is None:
        return None
    if not isinstance(types, list):
        raise SpecError(f"must be a list of one type per layer, got {shown(types)}", field="layer_types")
    if len(types) != layers:  # checked before any entry is read: the list may be long
        raise SpecError(
            f"has {len(types):,} entries for {layers:,} layers (num_hidden_layers)",
            field="layer_types",
            hint="give one type per layer, as the model's config.json does",
        )
    kinds = []
    for kind in types:
        if kind not in _LAYER_TYPES:
            raise SpecError(
                f"has a layer type {shown(kind)} roofline does not model",
                field="layer_types",
                hint="supported: " + ", ".join(_LAYER_TYPES),
            )
        kinds.append(_LAYER_TYPES[kind])
    return kinds


def _alternating(layers: int) -> list[str]:
    """Local and global layers in turn, the first local (Gemma 2's and gpt-oss's defaults)."""
    return ["global" if layer % 2 else "local" for layer in range(layers)]


def _shortest_repeat(kinds: list[str]) -> tuple[str, ...]:
    """The shortest pattern that, repeated from the first layer and cut at the last,
    gives ``kinds`` (the whole list when nothing shorter does).

    That is the list's smallest period ``p`` (``kinds[i] == kinds[i - p]`` for every
    ``i >= p``), which is ``n - b`` for ``b`` the length of the longest proper prefix
    that is also a suffix. Knuth-Morris-Pratt's prefix function gives ``b`` in O(n)
    comparisons, where trying every period costs O(n^2) on a list that differs only at
    its end.
    """
    count = len(kinds)
    if not count:
        return ()
    border = [0] * count  # border[i]: the longest proper border of kinds[: i + 1]
    for i in range(1, count):
        length = border[i - 1]
        while length and kinds[i] != kinds[length]:
            length = border[length - 1]
        border[i] = length + 1 if kinds[i] == kinds[length] else length
    return tuple(kinds[: count - border[-1]])


def _windows(keys: _Keys, layers: int, kinds: list[str] | None, window_default: Any = _REQUIRED) -> dict[str, Any]:
    """``sliding_window`` and ``layer_pattern`` for layers of ``kinds`` (None or no local layer: none)."""
    if kinds is None or "local" not in kinds:
        return {}
    window = keys.whole("sliding_window", window_default, field="sliding_window")
    keys.fields["layer_pattern"] = "layer_types"
    return {"sliding_window": window, "layer_pattern": _shortest_repeat(kinds)}


def _every_layer_windowed(keys: _Keys, layers: int, window_default: int | None = None) -> dict[str, Any]:
    """Mistral, Mixtral, Phi-3: one ``sliding_window`` for every layer, null for none
    (``window_default`` when the key is absent: MistralConfig's 4096)."""
    kinds = _kinds_from_layer_types(keys, layers)
    if kinds is None:
        absent = "sliding_window" not in keys.config
        if keys._given("sliding_window") is None and not (absent and window_default):
            return {}
        kinds = ["local"] * layers
    return _windows(keys, layers, kinds, window_default or _REQUIRED)


def _part(record_type: type, prefix: str, **values: Any) -> Any:
    """A MoeSpec or MlaSpec, its errors naming the field as ModelSpec's (``moe.experts_per_token``)."""
    try:
        return record_type(**values)
    except SpecError as error:
        raise SpecError(error.message, field=f"{prefix}.{error.field}", hint=error.hint) from None


# -- The families ---------------------------------------------------------------------------------


def _llama(keys: _Keys) -> dict[str, Any]:
    """LlamaConfig: no head_dim means hidden / heads; tie_word_embeddings false; biases
    on all four attention projections when attention_bias is true."""
    keys.refuse("mlp_bias", "biases on the MLP's projections are not counted")
    return {**_decoder(keys, tied=False), **_attention_bias(keys)}


def _mistral(keys: _Keys) -> dict[str, Any]:
    """MistralConfig: a sliding_window (4096 when the key is absent, none when null) on every layer."""
    values = _decoder(keys, tied=False)
    return {**values, **_every_layer_windowed(keys, values["layers"], window_default=4096)}


def _mixtral(keys: _Keys) -> dict[str, Any]:
    """MixtralConfig: every layer's MLP is num_local_experts experts of intermediate_size."""
    values = _decoder(keys, tied=False)
    return {**values, "moe": _experts_everywhere(keys, values), **_every_layer_windowed(keys, values["layers"])}


def _experts_everywhere(keys: _Keys, values: dict[str, Any], biases: bool = False) -> MoeSpec:
    """Mixtral, gpt-oss: every layer's MLP is num_local_experts experts of intermediate_size, no
    shared ones; with ``biases``, a router bias and biases on every expert's projections."""
    return _part(
        MoeSpec,
        "moe",
        experts=keys.whole("num_local_experts", field="moe.experts"),
        experts_per_token=keys.whole("num_experts_per_tok", field="moe.experts_per_token"),
        expert_ffn_size=values["ffn_size"],
        shared_experts=0,
        dense_layers=0,
        router_bias=biases,
        expert_bias=biases,
    )


def _qwen_windows(keys: _Keys, layers: int) -> dict[str, Any]:
    """Qwen2/3: sliding_window applies only with use_sliding_window (false unless given), and then
    to the layers from max_window_layers (28 unless given) on."""
    if not keys.flag("use_sliding_window", False):
        return {}
    kinds = _kinds_from_layer_types(keys, layers)
    if kinds is None:
        first = keys.whole("max_window_layers", 28, minimum=0)
        kinds = ["global" if layer < first else "local" for layer in range(layers)]
    return _windows(keys, layers, kinds)


def _qwen2(keys: _Keys) -> dict[str, Any]:
    """Qwen2Config: biases on the q, k and v projections always, none on the output."""
    values = _decoder(keys, tied=False)
    return {**values, "qkv_bias": True, **_qwen_windows(keys, values["layers"])}


def _qwen3(keys: _Keys) -> dict[str, Any]:
    """Qwen3Config: a norm over each query and key head; head_dim stated (not hidden / heads)."""
    values = _decoder(keys, tied=False, head_dim="required")
    return {**values, "qk_norm": True, **_attention_bias(keys), **_qwen_windows(keys, values["layers"])}


def _qwen3_moe(keys: _Keys) -> dict[str, Any]:
    """Qwen3MoeConfig: layer i is sparse unless listed in mlp_only_layers or (i + 1) is not a
    multiple of decoder_sparse_step (1 unless given); dense layers use intermediate_size."""
    values = _qwen3(keys)
    experts = keys.whole("num_experts", field="moe.experts")
    step = keys.whole("decoder_sparse_step", 1)
    dense_only = set(keys.whole_list("mlp_only_layers"))
    layers = values["layers"]
    dense = sum(1 for layer in range(layers) if layer in dense_only or (layer + 1) % step)
    if dense:
        keys.notes.append(f"{dense} of the {layers} layers have a dense MLP (mlp_only_layers, decoder_sparse_step)")
    values["moe"] = _part(
        MoeSpec,
        "moe",
        experts=experts,
        experts_per_token=keys.whole("num_experts_per_tok", field="moe.experts_per_token"),
        expert_ffn_size=keys.whole("moe_intermediate_size", field="moe.expert_ffn_size"),
        shared_experts=0,
        dense_layers=dense,
    )
    return values


def _gemma2(keys: _Keys) -> dict[str, Any]:
    """Gemma2Config: tied embeddings, four norms per layer, local and global layers
    alternating from a local first layer, a 4096-token window unless given."""
    values = _decoder(keys, tied=True, head_dim="required")
    layers = values["layers"]
    kinds = _kinds_from_layer_types(keys, layers) or _alternating(layers)
    return {**values, **_attention_bias(keys), "norms_per_layer": 4, **_windows(keys, layers, kinds, 4096)}


#: Gemma3TextConfig's defaults for keys the multimodal configs leave out of text_config:
#: https://github.com/huggingface/transformers/blob/main/src/transformers/models/gemma3/configuration_gemma3.py
_GEMMA3_TEXT_DEFAULTS = {"vocab_size": 262_208, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256}


def _gemma3(keys: _Keys) -> dict[str, Any]:
    """Gemma3TextConfig: as Gemma 2 with q/k norms, and sliding_window_pattern (6 unless given):
    every layer local but each sixth, from a local first layer."""
    keys.class_defaults = _GEMMA3_TEXT_DEFAULTS
    values = _decoder(keys, tied=True, head_dim="required")
    layers = values["layers"]
    kinds = _kinds_from_layer_types(keys, layers)
    if kinds is None:
        period = keys.whole("sliding_window_pattern", 6)
        kinds = ["local" if (layer + 1) % period else "global" for layer in range(layers)]
    windows = _windows(keys, layers, kinds, 4096)
    return {**values, **_attention_bias(keys), "qk_norm": True, "norms_per_layer": 4, **windows}


def _gemma3_multimodal(keys: _Keys) -> dict[str, Any]:
    """Gemma3Config (4B and up): the text decoder's keys sit in text_config; the vision
    encoder (vision_config) is not counted."""
    text = keys._given("text_config")
    if text is None:
        raise SpecError(
            "is missing" if "text_config" not in keys.config else "is null",
            field="text_config",
            hint=f"a {keys.family} config holds its text decoder's keys there; copy it from the model's config.json",
        )
    if not isinstance(text, dict):
        raise SpecError(f"must be a table of the text decoder's keys, got {shown(text)}", field="text_config")
    outer_tied = keys._given("tie_word_embeddings")
    inner = _Keys({**text, **({} if outer_tied is None else {"tie_word_embeddings": outer_tied})}, *keys.labels)
    try:
        values = _gemma3(inner)
    except SpecError as error:
        raise SpecError(error.message, field=f"text_config.{error.field}", hint=error.hint) from None
    keys.fields.update({name: f"text_config.{key}" for name, key in inner.fields.items()})
    keys.defaulted.extend(f"text_config.{entry}" for entry in inner.defaulted)
    keys.notes.extend(inner.notes)
    keys.notes.append("the text decoder only: the vision encoder in vision_config is not counted")
    return values


def _phi3(keys: _Keys) -> dict[str, Any]:
    """Phi3Config: q, k and v in one fused matrix and gate and up in another, which hold the
    same weights as separate ones; a sliding_window, when given, on every layer."""
    values = _decoder(keys, tied=False)
    return {**values, **_every_layer_windowed(keys, values["layers"])}


def _node_limit(keys: _Keys) -> int:
    """``topk_group`` when the router picks a token's experts from that many of ``n_group`` groups
    (DeepSeek's group-limited routing, one group a node or device in its deployments, so a token
    reaches at most that many nodes); 0, no limit, when there is one group or it picks them all."""
    groups = keys.whole("n_group", 1)
    picked = keys.whole("topk_group", groups)
    if groups <= 1 or picked >= groups:
        return 0
    keys.notes.append(f"node_limit: topk_group = {picked:,} of n_group = {groups:,}, at most that many nodes a token")
    return picked


def _deepseek(keys: _Keys, *, router_bias: bool) -> dict[str, Any]:
    """DeepseekV2/V3Config: latent attention (q_lora_rank null: a direct query projection);
    layer i's MLP is experts when i >= first_k_dense_replace (0 unless given) and i is a
    multiple of moe_layer_freq (1 unless given), else dense of intermediate_size."""
    keys.refuse("attention_bias", "biases with latent attention are not modelled")
    layers = keys.whole("num_hidden_layers", field="layers")
    heads = keys.whole("num_attention_heads", field="attention_heads")
    first_moe = keys.whole("first_k_dense_replace", 0, minimum=0)
    frequency = keys.whole("moe_layer_freq", 1)
    dense = sum(1 for layer in range(layers) if layer < first_moe or layer % frequency)
    shared = keys._given("n_shared_experts")
    mla = _part(
        MlaSpec,
        "mla",
        kv_lora_rank=keys.whole("kv_lora_rank", field="mla.kv_lora_rank"),
        q_lora_rank=keys.whole("q_lora_rank", 0, field="mla.q_lora_rank", minimum=0),
        qk_nope_head_dim=keys.whole("qk_nope_head_dim", field="mla.qk_nope_head_dim"),
        qk_rope_head_dim=keys.whole("qk_rope_head_dim", field="mla.qk_rope_head_dim"),
        v_head_dim=keys.whole("v_head_dim", field="mla.v_head_dim"),
    )
    moe = _part(
        MoeSpec,
        "moe",
        experts=keys.whole("n_routed_experts", field="moe.experts"),
        experts_per_token=keys.whole("num_experts_per_tok", field="moe.experts_per_token"),
        expert_ffn_size=keys.whole("moe_intermediate_size", field="moe.expert_ffn_size"),
        shared_experts=0 if shared is None else keys.whole("n_shared_experts", minimum=0, field="moe.shared_experts"),
        dense_layers=dense,
        router_bias=router_bias,
        node_limit=_node_limit(keys),
    )
    predict = keys._given("num_nextn_predict_layers")
    if predict:
        keys.notes.append(
            f"the multi-token-prediction layers (num_nextn_predict_layers = {shown(predict)}) not counted"
        )
    if router_bias:
        keys.notes.append("router_bias: the router's e_score_correction_bias, one per routed expert")
    return {
        "layers": layers,
        "hidden_size": keys.whole("hidden_size", field="hidden_size"),
        "attention_heads": heads,
        "kv_heads": 0,
        "head_dim": 0,
        "ffn_size": keys.whole("intermediate_size", field="ffn_size"),
        "vocab_size": keys.whole("vocab_size", field="vocab_size"),
        "tied_embeddings": keys.flag("tie_word_embeddings", False, field="tied_embeddings"),
        "moe": moe,
        "mla": mla,
    }


def _gpt_oss(keys: _Keys) -> dict[str, Any]:
    """GptOssConfig: every layer a mixture of num_local_experts experts of intermediate_size with
    biases, a router with a bias, attention biases (attention_bias, true unless given), and
    128-token windows (sliding_window) on alternate layers from the first."""
    values = _decoder(keys, tied=False, head_dim="required")
    layers = values["layers"]
    kinds = _kinds_from_layer_types(keys, layers) or _alternating(layers)
    moe = _experts_everywhere(keys, values, biases=True)
    keys.notes.append("attention sinks, one per head per layer, not counted")
    return {**values, **_attention_bias(keys, True), "moe": moe, **_windows(keys, layers, kinds, 128)}


FAMILIES: dict[str, Family] = {
    family.architecture: family
    for family in (
        Family("LlamaForCausalLM", _llama, "LlamaConfig"),
        Family("MistralForCausalLM", _mistral, "MistralConfig"),
        Family("MixtralForCausalLM", _mixtral, "MixtralConfig"),
        Family("Qwen2ForCausalLM", _qwen2, "Qwen2Config"),
        Family("Qwen3ForCausalLM", _qwen3, "Qwen3Config"),
        Family("Qwen3MoeForCausalLM", _qwen3_moe, "Qwen3MoeConfig"),
        Family("Gemma2ForCausalLM", _gemma2, "Gemma2Config"),
        Family("Gemma3ForCausalLM", _gemma3, "Gemma3TextConfig"),
        Family("Gemma3ForConditionalGeneration", _gemma3_multimodal, "Gemma3TextConfig"),
        Family("Phi3ForCausalLM", _phi3, "Phi3Config"),
        Family("DeepseekV2ForCausalLM", lambda keys: _deepseek(keys, router_bias=False), "DeepseekV2Config"),
        Family("DeepseekV3ForCausalLM", lambda keys: _deepseek(keys, router_bias=True), "DeepseekV3Config"),
        Family("GptOssForCausalLM", _gpt_oss, "GptOssConfig"),
    )
}


# -- The weights' format ----------------------------------------------------------------------------

_PRECISION_HINT = "give the weights' format with --precision; `roofline list precisions` names them"
#: torch_dtype (``dtype`` in newer configs) -> the precision of 16-bit checkpoints.
_DTYPES = {"bfloat16": None, "float16": "fp16"}


def _quantization_value(table: Mapping[str, Any], key: str, default: Any) -> Any:
    value = table.get(key)
    return default if value is None else value


def _weight_format(keys: _Keys) -> str | None:
    """The format the checkpoint stores its weights in, as the config publishes it; None: bf16.

    ``quantization_config`` first, by ``quant_method``: ``fp8`` is per-tensor E4M3 (``fp8``) or,
    with ``weight_block_size`` [128, 128], one scale per 128 x 128 block (``fp8-block``,
    DeepSeek-V3); ``fbgemm_fp8`` per channel (``fp8``); ``awq`` with ``bits`` 4, ``group_size`` 128
    and zero points (``int4-awq``); ``gptq`` with ``bits`` 4, ``group_size`` 128 and ``sym``
    (``int4``); ``mxfp4`` (gpt-oss); ``modelopt`` with ``quant_algo`` FP8 or NVFP4. Any other
    layout has no matching precision and is refused in one line naming the key and --precision.
    Without one, ``torch_dtype``: float16 is fp16, bfloat16 bf16, and float32 16 bits as well, as
    engines serve it (vLLM's ``dtype="auto"`` casts a float32 checkpoint to 16 bits).
    """
    table = keys._given("quantization_config")
    if table is None:
        key = "torch_dtype" if keys._given("torch_dtype") is not None else "dtype"
        dtype = keys._given(key)
        if dtype is None:
            return None
        if dtype == "float32":
            keys.notes.append(f"{key} float32 read at 16 bits, as engines serve a float32 checkpoint")
            return None
        if dtype not in _DTYPES:
            raise SpecError(
                f"is {shown(dtype)}, a weight type roofline does not read (bfloat16, float16, float32)",
                field=key,
                hint=_PRECISION_HINT,
            )
        return _DTYPES[dtype]
    if not isinstance(table, dict):
        raise SpecError(
            f"must be a table of the quantization's keys, got {shown(table)}",
            field="quantization_config",
            hint=_PRECISION_HINT,
        )
    method = table.get("quant_method")
    precision = _quantized_format(table, method if isinstance(method, str) else None)
    if precision is None:
        layout = _layout(table)
        raise SpecError(
            f"quant_method {shown(method)}{f' ({layout})' if layout else ''} has no matching precision:"
            " roofline reads fp8 (per tensor, or in 128 × 128 blocks), AWQ and symmetric GPTQ int4 in groups"
            " of 128, MXFP4, and ModelOpt FP8 or NVFP4",
            field="quantization_config",
            hint=_PRECISION_HINT,
        )
    if method == "mxfp4" and table.get("modules_to_not_convert"):
        keys.notes.append("mxfp4 weights throughout: the 16-bit modules_to_not_convert are counted at mxfp4 too")
    keys.notes.append(f"weights {precision} (quantization_config)")
    return precision


def _layout(table: Mapping[str, Any]) -> str:
    """The keys of a quantization_config that set its layout, for an error: ``bits 8, group_size 64``."""
    keys = ("bits", "group_size", "sym", "zero_point", "weight_block_size", "quant_algo")
    shown_keys = [f"{key} {shown(table[key])}" for key in keys if table.get(key) is not None]
    return ", ".join(shown_keys)


def _quantized_format(table: Mapping[str, Any], method: str | None) -> str | None:
    """The precision of a ``quantization_config`` (see ``_weight_format``), None when none matches."""
    if method == "fp8":
        block = table.get("weight_block_size")
        return "fp8" if block is None else "fp8-block" if block == [128, 128] else None
    if method == "fbgemm_fp8":
        return "fp8"
    bits, group = _quantization_value(table, "bits", 4), _quantization_value(table, "group_size", 128)
    if method == "awq" and (bits, group) == (4, 128) and _quantization_value(table, "zero_point", True) is True:
        return "int4-awq"
    if method == "gptq" and (bits, group) == (4, 128) and _quantization_value(table, "sym", True) is True:
        return "int4"
    if method == "mxfp4":
        return "mxfp4"
    if method == "modelopt":
        return {"FP8": "fp8", "NVFP4": "nvfp4"}.get(str(table.get("quant_algo")).upper())
    return None


# -- Text to record -------------------------------------------------------------------------------


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for key, value in pairs:
        if key in table:
            raise ValueError(f"the key {shown(key)} appears twice")
        table[key] = value
    return table


def decode_json(text: str, label: str, what: str = "config.json", hint: str = _CONFIG_HINT) -> dict[str, Any]:
    """The JSON object in ``text``, strictly: no NaN or Infinity, no repeated key, and at
    most ``MAX_CONFIG_BYTES`` of UTF-8, measured before parsing. ``what`` names the file
    in errors ("config.json", "GPU file")."""
    if len(text) > MAX_CONFIG_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_CONFIG_BYTES:
        raise too_large(label, what)
    if nesting_depth(text) > MAX_NESTING:
        raise too_deep(label, what)
    try:
        document = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise SpecError(f"is not a {what}: nested too deeply", file=label) from None
    except json.JSONDecodeError as error:
        raise SpecError(
            f"is not JSON: {error.msg} at line {error.lineno}, column {error.colno}", file=label, hint=hint
        ) from None
    except ValueError as error:  # a repeated key, NaN, or an integer of more than 4,300 digits
        raise SpecError(f"is not a usable {what}: {str(error).split(':')[0]}", file=label) from None
    if not isinstance(document, dict):
        raise SpecError(f"must be a JSON object {{...}}, got {shown(document)}", file=label, hint=hint)
    return document


def too_large(label: str, what: str) -> SpecError:
    """The error for a file over ``MAX_CONFIG_BYTES``: the file it was probably confused with."""
    return SpecError(
        f"is larger than {MAX_CONFIG_BYTES / 1e6:g} MB, too large for a {what}",
        file=label,
        hint=f"a {what} is a few kB; give that file, not a weights file",
    )


def _family(config: Mapping[str, Any]) -> Family:
    names = config.get("architectures")
    supported = ", ".join(FAMILIES)
    if names is None:
        raise SpecError("is missing", field="architectures", hint=f"supported: {supported}")
    if not isinstance(names, list) or not names or not all(isinstance(name, str) for name in names):
        raise SpecError(f"must be a list of class names, got {shown(names)}", field="architectures")
    name = names[0]  # transformers builds the first
    if name not in FAMILIES:
        raise SpecError(f"unknown architecture {shown(name)}", field="architectures", hint=f"supported: {supported}")
    return FAMILIES[name]


def default_name(config: Mapping[str, Any], label: str) -> str:
    """A name for a config that comes without one: ``_name_or_path``'s last part, else the
    folder of a file named config.json, else the file's name less ``.json``; one printable line."""
    candidate = config.get("_name_or_path")
    if isinstance(candidate, str) and candidate.strip():
        candidate = re.split(r"[\\/]", candidate.strip().rstrip("\\/"))[-1]
    else:
        parts = [part for part in re.split(r"[\\/]", label) if part]
        candidate = parts[-1] if parts else ""
        if candidate.lower() == "config.json" and len(parts) >= 2:
            candidate = parts[-2]
        elif candidate.lower().endswith(".json"):
            candidate = candidate[: -len(".json")]
    return one_line(candidate.strip())[:NAME_LENGTH] or "config.json"


def model_from_config(
    config: Mapping[str, Any],
    label: str,
    *,
    model_id: str | None = None,
    name: str | None = None,
    source: str | None = None,
    read_weights: bool = True,
) -> ModelSpec:
    """The ModelSpec of a decoded config; ``label`` names the file in errors and in the default source.

    ``read_weights``: take the weights' format from the config (``_weight_format``); False when the
    caller gives the format itself (``--precision``), so a layout roofline does not read is no error.
    Errors are one line naming the file and the config's key.
    """
    try:
        family = _family(config)
        keys = _Keys(config, family.architecture.removesuffix("ForCausalLM"), family.config_class)
        try:
            values = family.read(keys)
            # The longest sequence the model serves (ModelSpec.max_context), where the config says.
            if keys._given("max_position_embeddings") is not None:
                values["max_context"] = keys.whole("max_position_embeddings", field="max_context")
            if read_weights:
                values["weight_precision"] = _weight_format(keys)
            name = name if name is not None else default_name(config, label)
            notes = list(keys.notes)
            if keys.defaulted:
                notes.append(f"left out, read at {family.config_class}'s defaults: " + ", ".join(keys.defaulted))
            where = source if source is not None else f"{family.architecture} config read from {one_line(label)}"
            described = f"{where} ({'; '.join(notes)})" if notes else where
            if len(described) > SOURCE_LENGTH:
                described = described[: SOURCE_LENGTH - 1] + "…"
            return ModelSpec(id=model_id or suggested_id(name), name=name, source=described, **values)
        except SpecError as error:
            raise _in_config_terms(error, keys) from None
    except SpecError as error:
        raise error.located(file=label) from None


def _in_config_terms(error: SpecError, keys: _Keys) -> SpecError:
    """A record's error about one of its fields, as an error about the config key behind it."""
    key = keys.fields.get(error.field or "")
    if key is None or key == error.field:
        return error
    return SpecError(f"{error.message} (roofline's {error.field})", field=key, hint=error.hint)


def parse_config(
    text: str,
    label: str = "config.json",
    *,
    model_id: str | None = None,
    name: str | None = None,
    source: str | None = None,
    read_weights: bool = True,
) -> ModelSpec:
    """The ModelSpec of a config.json's ``text`` (a pasted config, in the browser too)."""
    config = decode_json(text, label)
    return model_from_config(config, label, model_id=model_id, name=name, source=source, read_weights=read_weights)


def read_config(
    path: str | Path,
    *,
    model_id: str | None = None,
    name: str | None = None,
    source: str | None = None,
    read_weights: bool = True,
) -> ModelSpec:
    """The ModelSpec of the config.json at ``path``; a file over ``MAX_CONFIG_BYTES`` is refused
    from its first megabyte, unread past it."""
    text = read_small_file(path, "config.json")
    return parse_config(text, str(path), model_id=model_id, name=name, source=source, read_weights=read_weights)


def read_small_file(path: str | Path, what: str) -> str:
    """The UTF-8 text of a config or GPU file: a regular file of at most ``MAX_CONFIG_BYTES``,
    refused from its first megabyte (never read whole) when larger."""
    label = str(path)
    try:
        data = read_spec_bytes(path, label)
    except SpecError as error:
        if error.message.startswith("is larger than"):
            raise too_large(label, what) from None
        if error.message.endswith("not a spec file"):  # a directory, a FIFO, a device
            raise SpecError(f"{error.message.removesuffix('spec file')}{what}", file=label) from None
        raise
    return decode_spec_text(data, label)
