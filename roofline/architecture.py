"""What a model's architecture implies: parameter counts, KV-cache bytes and FLOPs per token.

Symbols used in the docstrings, the site's notation (docs/notation.toml) where it has them:
L layers, d hidden size, H attention heads, H_kv key-value heads, d_head head width, f FFN
size, V vocabulary, E routed experts, E_tok experts per token, E_shared shared experts, f_e
expert FFN size, L_dense leading dense layers, L_moe layers with experts, w sliding window,
c context (tokens cached per user), n_tok tokens in a pass; and, for what only the code
needs, n_norm norms per layer, d_in the attention projections' input width (d unless
``attention_input_size``), V_o the tokens the output head scores (V unless
``head_vocab_size``), d_fusion a fusion layer's input width (0 unless ``fusion_input_size``).
Biases, q/k norms and extra norms are counted where the record says the model
has them (``qkv_bias``, ``output_bias``, ``qk_norm``, ``norms_per_layer``,
``moe.router_bias``, ``moe.expert_bias``). Not counted: gpt-oss's attention
sinks (one scalar per head per layer, 2,304 in gpt-oss-120b).
"""

from __future__ import annotations

import functools

from .kvformats import kv_bytes_per_value
from .precisions import bytes_per_value, embedding_bytes_per_value, head_bytes_per_value
from .specs import ModelSpec


def swiglu_parameters(hidden_size: int, ffn_size: int) -> int:
    """Parameters of a SwiGLU MLP: gate, up and down matrices, ``3 * d * f``."""
    return 3 * hidden_size * ffn_size


def attention_parameters(model: ModelSpec) -> int:
    """Attention weights of one layer.

    Grouped-query attention: ``d_in*H*d_head`` (Q) + ``2*d_in*H_kv*d_head`` (K, V) +
    ``H*d_head*d`` (output), where the projections read d_in = d values unless the record
    widens their input (EAGLE-3: 2d), plus ``H*d_head + 2*H_kv*d_head`` with q/k/v biases,
    ``d`` with an output bias and ``2*d_head`` with q/k norms. A fused qkv or gate-up matrix
    (Phi-3) holds the same weights.
    Latent attention (MLA) with ranks r_q, r_latent and head widths d_nope, d_rope, d_v:
    ``d*r_q + r_q + r_q*H*(d_nope+d_rope)`` (query down, norm, up; ``d*H*(d_nope+d_rope)``
    when r_q is 0, a direct query projection)
    ``+ d*(r_latent+d_rope) + r_latent + r_latent*H*(d_nope+d_v)`` (KV down, norm, up)
    ``+ H*d_v*d`` (output).
    """
    d, heads = model.hidden_size, model.attention_heads
    mla = model.mla
    if mla is None:
        h, kv, width = model.head_dim, model.kv_heads, model.attention_input_width
        weights = width * heads * h + 2 * width * kv * h + heads * h * d
        biases = (heads * h + 2 * kv * h if model.qkv_bias else 0) + (d if model.output_bias else 0)
        return weights + biases + (2 * h if model.qk_norm else 0)
    query_width = heads * (mla.qk_nope_head_dim + mla.qk_rope_head_dim)
    if mla.q_lora_rank:
        query = d * mla.q_lora_rank + mla.q_lora_rank + mla.q_lora_rank * query_width
    else:
        query = d * query_width
    key_value = (
        d * (mla.kv_lora_rank + mla.qk_rope_head_dim)
        + mla.kv_lora_rank
        + mla.kv_lora_rank * heads * (mla.qk_nope_head_dim + mla.v_head_dim)
    )
    return query + key_value + heads * mla.v_head_dim * d


def embedding_parameters(model: ModelSpec) -> int:
    """Input embedding plus output head the model stores: ``V*d`` once when the two are tied,
    else ``V*d + V_o*d``, less the input table ``V*d`` when it is the target's
    (``shares_target_embedding``: a draft head reads its target's table, it does not hold one)."""
    if model.tied_embeddings:
        return model.vocab_size * model.hidden_size
    return lookup_only_parameters(model) + output_head_parameters(model)


def fusion_parameters(model: ModelSpec) -> int:
    """A fusion layer's weights, ``d_fusion*d`` (no bias), 0 without one: EAGLE-3 maps three of its
    target's hidden states, d_fusion = 3d, to one before its layer."""
    return model.fusion_input_size * model.hidden_size


def moe_layers(model: ModelSpec) -> int:
    """Layers whose MLP is a mixture of experts: ``L - L_dense``, or 0 for a dense model."""
    return 0 if model.moe is None else model.layers - model.moe.dense_layers


def expert_parameters(model: ModelSpec) -> int:
    """Parameters of one expert, ``3 * d * f_e``, plus ``2*f_e + d`` when experts carry
    biases (gate and up, then down); 0 for a dense model."""
    if model.moe is None:
        return 0
    size = model.moe.expert_ffn_size
    bias = 2 * size + model.hidden_size if model.moe.expert_bias else 0
    return swiglu_parameters(model.hidden_size, size) + bias


def router_parameters(model: ModelSpec) -> int:
    """The router of one MoE layer: ``d*E``, plus ``E`` with a router bias (0 for a dense model)."""
    if model.moe is None:
        return 0
    return model.moe.experts * (model.hidden_size + (1 if model.moe.router_bias else 0))


@functools.cache  # records are frozen; the sweep asks for these millions of times
def always_used_parameters(model: ModelSpec) -> int:
    """Parameters every token passes through: all but the routed experts.

    ``embeddings + fusion + d`` (final norm) ``+ L*(attention + n_norm*d)`` (norms)
    ``+ (L - L_moe)*3*d*f`` (dense MLPs) ``+ L_moe*(router + E_shared*expert)`` (router, shared experts).
    """
    d = model.hidden_size
    dense_mlp_layers = model.layers - moe_layers(model)
    layers = model.layers * (attention_parameters(model) + model.norms_per_layer * d)
    total = embedding_parameters(model) + fusion_parameters(model) + d + layers
    total += dense_mlp_layers * swiglu_parameters(d, model.ffn_size)
    if model.moe is not None:
        total += moe_layers(model) * (router_parameters(model) + model.moe.shared_experts * expert_parameters(model))
    return total


@functools.cache
def total_parameters(model: ModelSpec) -> int:
    """Every parameter: ``always used + L_moe * E * 3*d*f_e``."""
    experts = 0 if model.moe is None else model.moe.experts
    return always_used_parameters(model) + moe_layers(model) * experts * expert_parameters(model)


@functools.cache
def active_parameters(model: ModelSpec) -> int:
    """Parameters one token uses: ``always used + L_moe * E_tok * 3*d*f_e`` (all of them if dense)."""
    routed = 0 if model.moe is None else model.moe.experts_per_token
    return always_used_parameters(model) + moe_layers(model) * routed * expert_parameters(model)


def expected_distinct_experts(experts: int, experts_per_token: int, tokens: float) -> float:
    """Expected routed experts a layer uses for ``tokens`` tokens: ``E * (1 - (1 - E_tok/E)**n_tok)``.

    Each token is taken to pick its E_tok experts independently and evenly. That
    gives E_tok at one token and approaches E as the batch grows.
    """
    if tokens <= 0:
        return 0.0
    return experts * (1.0 - (1.0 - experts_per_token / experts) ** tokens)


def lookup_only_parameters(model: ModelSpec) -> int:
    """Parameters that are only looked up, never multiplied: the input embedding ``V*d``
    when it is its own table, 0 when it is tied to the output head (which is multiplied)
    or is the target's (``shares_target_embedding``, not stored with the head)."""
    return 0 if model.tied_embeddings or model.shares_target_embedding else model.vocab_size * model.hidden_size


def copied_row_width(model: ModelSpec) -> int:
    """Values one token copies from an embedding table it only looks up: ``d`` for an untied
    table of the model's own, 0 when the table is tied (read whole as the head) or is the
    target's (a draft head's, left out: see ``parameters_read``)."""
    return 0 if model.tied_embeddings or model.shares_target_embedding else model.hidden_size


def output_head_parameters(model: ModelSpec) -> int:
    """The output head, ``V_o*d``: it turns the last hidden state into one logit per token it
    scores (the whole vocabulary, or a draft head's own smaller one)."""
    return model.output_vocab_size * model.hidden_size


@functools.cache
def multiplied_parameters(model: ModelSpec) -> int:
    """Parameters one token multiplies in decode: ``active - lookup-only`` (an untied
    embedding row is copied, not multiplied; a tied table is multiplied as the head)."""
    return active_parameters(model) - lookup_only_parameters(model)


def parameters_read(model: ModelSpec, tokens: float) -> float:
    """Parameters an inference engine reads from memory for a pass over ``tokens`` tokens.

    ``always used - lookup-only + min(n_tok, V)*d + L_moe * E_touched(n_tok) * 3*d*f_e``.
    An untied input embedding is indexed: each token copies its one row of d
    values, so n_tok tokens read at most n_tok rows, not the whole V*d table. A tied
    table is read whole, because it is also the output head. A draft head that
    shares its target's table copies its rows from it; those n_tok*d values (8 kB a
    token for an 8B model's head) are left out, as its weights hold no table. A dense model
    reads every other weight; a mixture of experts reads only the experts its
    tokens touch.
    """
    shared, row, vocab, experts, per_token, expert_block = _read_terms(model)
    read = shared + min(tokens, vocab) * row
    if experts:
        read += expected_distinct_experts(experts, per_token, tokens) * expert_block
    return read


@functools.cache  # the crossover solver calls parameters_read dozens of times per estimate
def _read_terms(model: ModelSpec) -> tuple[int, int, int, int, int, int]:
    """``parameters_read``'s constants: always-used parameters less the lookup-only table,
    the row a token reads (0 if tied), V, E, k, and one expert across the MoE layers."""
    shared = always_used_parameters(model) - lookup_only_parameters(model)
    row = copied_row_width(model)
    if model.moe is None:
        return shared, row, model.vocab_size, 0, 0, 0
    block = moe_layers(model) * expert_parameters(model)
    return shared, row, model.vocab_size, model.moe.experts, model.moe.experts_per_token, block


def _table_parameters(model: ModelSpec) -> tuple[int, int]:
    """``(head, lookup-only table)`` parameters the model stores: a tied table counts as the head
    (it is multiplied), and a draft head that reads its target's table stores none."""
    return output_head_parameters(model), lookup_only_parameters(model)


def weight_bytes(model: ModelSpec, precision: str) -> float:
    """Bytes of all weights of a checkpoint quantized to ``precision``:
    ``(total - head - table) * b_w + head * b_head + table * b_embedding``.

    Quantizers leave the output head and the input embedding at 16 bits (vLLM FP8, AWQ, GPTQ;
    ``precisions.head_bytes_per_value``), so at fp8 Llama 3.1 70B is 70.6e9 - 2.1e9 weights at
    1 byte plus 2.1e9 at 2, not 70.6 GB; at bf16 every term is 2 bytes.
    """
    head, table = _table_parameters(model)
    blocks = total_parameters(model) - head - table
    return (
        blocks * bytes_per_value(precision)
        + head * head_bytes_per_value(precision)
        + table * embedding_bytes_per_value(precision)
    )


def quantized_parameters_read(model: ModelSpec, tokens: float, precision: str) -> float:
    """Parameters of a pass over ``tokens`` tokens stored at ``precision`` itself: ``parameters_read``
    less the output head and the embedding rows when the checkpoint keeps them wider (what a
    widening kernel has to widen)."""
    read = parameters_read(model, tokens)
    if head_bytes_per_value(precision) != bytes_per_value(precision):
        read -= output_head_parameters(model)
    if embedding_bytes_per_value(precision) != bytes_per_value(precision):
        read -= min(tokens, model.vocab_size) * copied_row_width(model)
    return read


def weights_read_bytes(model: ModelSpec, tokens: float, precision: str) -> float:
    """Weight bytes a pass over ``tokens`` tokens reads from a checkpoint quantized to ``precision``:
    ``(parameters_read - head - rows) * b_w + head * b_head + rows * b_embedding``, with
    ``rows = min(tokens, V) * d`` embedding values copied (0 for a tied table, read as the head).

    Llama 3.1 8B at fp8, one token: 7.0e9 block weights at 1 byte and the 525M-weight head at 2,
    8.0 GB, so fp8's batch-1 ceiling is 16.1 / 8.0 = 1.87x bf16's, not 2x.
    """
    head = output_head_parameters(model)
    rows = min(tokens, model.vocab_size) * copied_row_width(model)
    blocks = parameters_read(model, tokens) - head - rows
    return (
        blocks * bytes_per_value(precision)
        + head * head_bytes_per_value(precision)
        + rows * embedding_bytes_per_value(precision)
    )


def kv_cache_bytes_per_token(model: ModelSpec, precision: str = "bf16") -> float:
    """KV-cache bytes one token adds across all layers, while the context is within every window.

    Grouped-query attention caches a key and a value per KV head (not per query
    head): ``2 * L * H_kv * d_head * b_kv``. Latent attention caches the compressed
    latent and the shared RoPE key: ``L * (r_latent + d_rope) * b_kv``. ``b_kv``
    is the KV format's effective bytes per value, scales included (see
    ``kvformats``). Past a sliding window, a local layer stops growing: see
    ``kv_cache_bytes``.
    """
    size = kv_bytes_per_value(precision)
    if model.mla is not None:
        return model.layers * (model.mla.kv_lora_rank + model.mla.qk_rope_head_dim) * size
    return 2 * model.layers * model.kv_heads * model.head_dim * size


def local_layers(model: ModelSpec) -> int:
    """Layers that keep only a sliding window: the "local" entries of ``layer_pattern``
    repeated over the L layers (0 for a model without windows)."""
    pattern = model.layer_pattern
    if not pattern:
        return 0
    cycles, rest = divmod(model.layers, len(pattern))
    return cycles * pattern.count("local") + pattern[:rest].count("local")


def effective_context(model: ModelSpec, context: float) -> float:
    """Tokens an average layer holds at ``context``: ``((L - L_loc) * c + L_loc * min(c, w)) / L``.

    A global layer keeps every token, a local layer the last w. Without windows
    this is ``c`` itself, so ``effective_context * KV bytes per token`` is the
    cache of one user in every case.
    """
    local = local_layers(model)
    if not local or context <= model.sliding_window:
        return float(context)
    return ((model.layers - local) * context + local * model.sliding_window) / model.layers


def kv_cache_bytes(model: ModelSpec, context: float, precision: str = "bf16") -> float:
    """KV-cache bytes of one user with ``context`` tokens: ``KV bytes per token * effective context``.

    The sum over layers of ``min(c, window of that layer)`` tokens, each costing
    one layer's share of the KV bytes per token. A decode step reads all of it.
    """
    return kv_cache_bytes_per_token(model, precision) * effective_context(model, context)


def shared_prefix_cache_bytes(model: ModelSpec, context: float, prefix: float, precision: str = "bf16") -> float:
    """Bytes of a ``prefix`` shared by every user that each user's cache at ``context`` still holds.

    A global layer holds the whole prefix P_shared. A local layer holds tokens
    ``(c - w, c]``, so only ``max(0, P_shared - max(0, c - w))`` of the prefix is left
    in it. Averaged over layers like ``effective_context``, times the KV bytes
    per token. What each user holds alone is ``kv_cache_bytes - this``.
    """
    local = local_layers(model)
    if local:
        in_window = max(0.0, prefix - max(0.0, context - model.sliding_window))
        held = ((model.layers - local) * prefix + local * in_window) / model.layers
    else:
        held = prefix
    return kv_cache_bytes_per_token(model, precision) * held


def context_for_cache_bytes(model: ModelSpec, cache_bytes: float, precision: str = "bf16") -> float | None:
    """The context whose cache is ``cache_bytes`` (the inverse of ``kv_cache_bytes``), or None.

    Below the window the cache grows by the full KV bytes per token; past it,
    only global layers grow, by ``L_g / L`` of that. A model whose every layer
    is local stops growing at the window, so a larger ``cache_bytes`` is never
    reached and the answer is None.
    """
    per_token = kv_cache_bytes_per_token(model, precision)
    local = local_layers(model)
    tokens = cache_bytes / per_token
    if not local or tokens <= model.sliding_window:
        return tokens
    global_layers = model.layers - local
    if global_layers == 0:
        return None
    return model.sliding_window + (tokens - model.sliding_window) * model.layers / global_layers


def attention_flops_per_cached_token(model: ModelSpec, *, latent: bool) -> float:
    """FLOPs one query spends on one cached token, over all layers (scores plus values).

    Grouped-query attention: ``L * (2*H*d_head + 2*H*d_head) = 4*L*H*d_head``, since
    every query head reads the key and value it shares. Latent attention in decode works on
    the latent itself (weights absorbed): ``L * 2*H*((r_latent + d_rope) + r_latent)``;
    in prefill it expands heads first: ``L * 2*H*((d_nope + d_rope) + d_v)``.
    """
    heads = model.attention_heads
    mla = model.mla
    if mla is None:
        return 4.0 * model.layers * heads * model.head_dim
    if latent:
        return 2.0 * model.layers * heads * (2 * mla.kv_lora_rank + mla.qk_rope_head_dim)
    return 2.0 * model.layers * heads * (mla.qk_nope_head_dim + mla.qk_rope_head_dim + mla.v_head_dim)


def decode_flops_per_token(model: ModelSpec, context: float) -> float:
    """FLOPs to generate one token with ``context`` tokens cached.

    ``2 * multiplied parameters`` (one multiply and one add per weight the token
    passes through, the output head included, the embedding lookup not) plus
    attention over the cache, ``effective context * attention FLOPs per cached
    token``: a local layer attends to its window only.
    """
    attended = effective_context(model, context)
    return 2.0 * multiplied_parameters(model) + attended * attention_flops_per_cached_token(model, latent=True)


def prefill_flops(model: ModelSpec, prompt: int) -> float:
    """FLOPs of a prefill of ``prompt`` tokens, as an inference engine runs it.

    ``2 * (multiplied - head) * P + 2 * head + causal attention``: every prompt
    token goes through the layers, but only the last one's hidden state goes
    through the output head (the next token is predicted once), and the
    embedding lookups cost no FLOPs. A prompt of 0 costs nothing.
    """
    if prompt <= 0:
        return 0.0
    body = multiplied_parameters(model) - output_head_parameters(model)
    return 2.0 * body * prompt + 2.0 * output_head_parameters(model) + prefill_attention_flops(model, prompt)


def prefill_attention_flops(model: ModelSpec, prompt: int) -> float:
    """Attention FLOPs of a causal prefill of ``prompt`` tokens.

    Token i attends to the i tokens up to itself, so the pairs sum to
    ``P * (P + 1) / 2``, each costing the attention FLOPs per cached token. In
    a local layer token i attends to ``min(i, w)`` tokens; the layers' pairs are
    averaged as in ``effective_context``.
    """
    return causal_pairs(model, prompt) * attention_flops_per_cached_token(model, latent=False)


def causal_pairs(model: ModelSpec, tokens: int) -> float:
    """Query-key pairs of a causal pass over ``tokens``, averaged over layers.

    Global layer: ``sum(i for i in 1..n_tok) = n_tok(n_tok+1)/2``. Local layer:
    ``sum(min(i, w))`` = ``w(w+1)/2 + (n_tok - w) * w`` once n_tok passes w.
    """
    full = tokens * (tokens + 1) / 2
    local = local_layers(model)
    window = model.sliding_window
    if not local or tokens <= window:
        return full
    windowed = window * (window + 1) / 2 + (tokens - window) * window
    return ((model.layers - local) * full + local * windowed) / model.layers
