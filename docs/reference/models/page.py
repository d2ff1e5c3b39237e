"""Reference page "Models": every model spec, its derived sizes and its source."""

from __future__ import annotations

from roofline import ModelSpec, active_parameters, kv_cache_bytes_per_token, total_parameters
from roofline import formatting as fmt
from roofline.kvcache import attention_kind
from sitegen import escape
from sitegen.context import Context
from sitegen.page import PageContent
from sitegen.tables import markdown_table, sources_list


def build(ctx: Context) -> PageContent:
    content = PageContent()
    content.table("models", models_table(ctx))
    return content


def _architecture(model: ModelSpec) -> str:
    """The attention and MLP shape in one short cell."""
    if model.mla is not None:
        mla = model.mla
        attention = f"MLA, {model.attention_heads} heads, latent {mla.kv_lora_rank} + RoPE {mla.qk_rope_head_dim}"
    else:
        kind = attention_kind(model)
        attention = f"{kind}, {model.attention_heads} heads / {model.kv_heads} KV × {model.head_dim}"
    if model.layer_pattern:
        pattern = "/".join(model.layer_pattern)
        attention += f", layers {pattern} (local window {model.sliding_window:,})"
    if model.moe is None:
        mlp = f"FFN {model.ffn_size:,}"
    else:
        moe = model.moe
        shared = f" + {moe.shared_experts} shared" if moe.shared_experts else ""
        mlp = f"{moe.experts} experts (top-{moe.experts_per_token}{shared}) × FFN {moe.expert_ffn_size:,}"
        if moe.dense_layers:
            mlp += f", first {moe.dense_layers} layers dense (FFN {model.ffn_size:,})"
    return f"{model.layers} layers × {model.hidden_size:,}; {attention}; {mlp}"


def models_table(ctx: Context) -> str:
    """Every model: architecture, derived parameter counts and KV bytes per token, and its source."""
    header = ("Model", "id", "Architecture", "Vocab", "Parameters", "Active", "KV cache / token (16-bit)")
    rows = []
    for model in ctx.specs.models.values():
        rows.append(
            (
                escape.text(model.name),
                f"`{model.id}`",
                _architecture(model),
                f"{model.vocab_size:,}",
                fmt.parameters(total_parameters(model)),
                fmt.parameters(active_parameters(model)),
                fmt.bytes_size(kv_cache_bytes_per_token(model, "bf16")),
            )
        )
    table = markdown_table(header, rows, right={3, 4, 5, 6})
    return table + sources_list((model.name, model.id, model.source) for model in ctx.specs.models.values())
