"""Adapters of the model families that differ from Llama in a few stated ways, one small function each.

Each adapter reads a transformers config into ModelSpec fields and says only how its family differs:
norm kind and placement, biases, gated or plain MLP, parallel blocks, QK norms, NoPE layers, constant
multipliers, a shared expert's gate. The graph builder knows none of them by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ConfigError
from .config_fields import activation, get, layer_windows, rotary_fraction
from .spec import DEEPSEEK_STYLE_ROUTING, AttentionSpec, LayerSpec, MLPSpec, MoESpec

_BASE_KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size")

# Keys each family's config must state (raw config.json names; "a|b": either); the rest have faithful defaults.
REQUIRED_KEYS: dict[str, tuple[str, ...]] = {
    "gemma": (*_BASE_KEYS, "head_dim"),  # the class default (256) is Gemma-7B's
    "phi": _BASE_KEYS,
    "starcoder2": _BASE_KEYS,
    "cohere": _BASE_KEYS,
    "olmo2": _BASE_KEYS,
    "granite": _BASE_KEYS,
    "glm4": (*_BASE_KEYS, "head_dim"),  # the class default (128) is GLM-4-9B's
    "smollm3": _BASE_KEYS,
    "qwen2_moe": (*_BASE_KEYS, "num_experts", "num_experts_per_tok", "moe_intermediate_size",
                  "shared_expert_intermediate_size"),
    "llama4_text": (*_BASE_KEYS, "head_dim", "intermediate_size_mlp", "num_local_experts", "num_experts_per_tok"),
    "qwen3_next": (*_BASE_KEYS, "head_dim", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
                   "shared_expert_intermediate_size", "linear_num_value_heads", "linear_num_key_heads",
                   "linear_key_head_dim", "linear_value_head_dim"),
    "mamba2": ("hidden_size", "num_hidden_layers", "vocab_size", "num_heads", "head_dim", "state_size", "n_groups"),
    "nemotron_h": ("hidden_size", "vocab_size", "num_attention_heads", "num_key_value_heads", "mamba_num_heads",
                   "mamba_head_dim", "ssm_state_size", "n_groups", "hybrid_override_pattern|layers_block_type"),
    "qwen3_5_moe_text": ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "head_dim",
                         "num_experts", "num_experts_per_tok", "moe_intermediate_size",
                         "shared_expert_intermediate_size", "linear_num_value_heads", "linear_num_key_heads",
                         "linear_key_head_dim", "linear_value_head_dim", "layer_types"),
    "minimax_m2": (*_BASE_KEYS, "head_dim", "num_local_experts", "num_experts_per_tok"),
    "granitemoehybrid": ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "num_local_experts",
                         "shared_intermediate_size", "layer_types|layers_block_type", "mamba_n_heads",
                         "mamba_d_state"),
}
# a state-space model has no position limit; llmsim's searches over the context stop at 2^20 tokens
SSM_MAX_CONTEXT = 1 << 20


def attention(config: Any, **differences: Any) -> AttentionSpec:
    """A standard attention layer of `config`'s heads (head_dim stated or h / heads; K and V of one size),
    rotary on its partial_rotary_factor of each head, with the family's `differences`."""
    heads = config.num_attention_heads
    head_dim = get(config, "head_dim", config.hidden_size // heads)
    fields: dict[str, Any] = dict(num_heads=heads, num_kv_heads=get(config, "num_key_value_heads", heads),
                                  head_dim=head_dim, v_head_dim=head_dim,
                                  rotary_dim=int(head_dim * rotary_fraction(config)))
    return AttentionSpec(**(fields | differences))


def gated_mlp(config: Any, intermediate_size: int | None = None, **differences: Any) -> MLPSpec:
    """act(x W_gate) * x W_up, then W_down (bias: mlp_bias)."""
    fields: dict[str, Any] = dict(gated=True, intermediate_size=intermediate_size or config.intermediate_size,
                                  bias=bool(get(config, "mlp_bias", False)), activation=activation(config))
    return MLPSpec(**(fields | differences))


def model_fields(config: Any, layers: list[LayerSpec], **differences: Any) -> dict[str, Any]:
    """The ModelSpec fields of a decoder of `layers` (a LayerSpec per layer)."""
    return {"vocab_size": config.vocab_size, "hidden_size": config.hidden_size,
            "max_position_embeddings": config.max_position_embeddings,
            "tie_word_embeddings": bool(get(config, "tie_word_embeddings", False)), "layers": layers, **differences}


def _biases(config: Any) -> dict[str, bool]:
    bias = bool(get(config, "attention_bias", False))
    return {"qkv_bias": bias, "o_bias": bias}


# ---- the families -------------------------------------------------------------------------------
def _gemma(config: Any) -> dict[str, Any]:
    """Gemma: Llama with GeGLU (hidden_act), head_dim stated, tied embeddings scaled by sqrt(h)."""
    layer = LayerSpec(attention=attention(config, **_biases(config)),
                      mlp=gated_mlp(config, activation=str(get(config, "hidden_act", "gelu_pytorch_tanh"))))
    return model_fields(config, [layer] * config.num_hidden_layers, embedding_scale=True)


def _phi(config: Any) -> dict[str, Any]:
    """Phi-1/1.5/2: one LayerNorm feeding attention and MLP in parallel, biases everywhere (LM head too),
    partial rotary, a plain gelu MLP, optional per-head LayerNorm of Q and K."""
    attn = attention(config, qkv_bias=True, o_bias=True, qk_norm=bool(get(config, "qk_layernorm", False)))
    mlp = MLPSpec(gated=False, intermediate_size=config.intermediate_size, bias=True, activation=activation(config))
    layer = LayerSpec(attention=attn, mlp=mlp, parallel=True, pre_mlp_norm=False)
    return model_fields(config, [layer] * config.num_hidden_layers, norm="layernorm", lm_head_bias=True)


def _starcoder2(config: Any) -> dict[str, Any]:
    """StarCoder2: LayerNorm, biases on every projection (use_bias), a plain gelu MLP, sliding window."""
    bias = bool(get(config, "use_bias", True))
    mlp = MLPSpec(gated=False, intermediate_size=config.intermediate_size, bias=bias, activation=activation(config))
    layers = [LayerSpec(attention=attention(config, qkv_bias=bias, o_bias=bias, sliding_window=window), mlp=mlp)
              for window in layer_windows(config, config.num_hidden_layers)]
    return model_fields(config, layers, norm="layernorm")


def _cohere(config: Any) -> dict[str, Any]:
    """Command R: one LayerNorm without bias feeding attention and MLP in parallel, optional per-head
    LayerNorm of Q and K (use_qk_norm), logits scaled by logit_scale."""
    attn = attention(config, **_biases(config), qk_norm=bool(get(config, "use_qk_norm", False)),
                     qk_norm_weights="per_head")
    layer = LayerSpec(attention=attn, mlp=gated_mlp(config, bias=False), parallel=True, pre_mlp_norm=False)
    return model_fields(config, [layer] * config.num_hidden_layers, norm="layernorm", norm_bias=False,
                        logit_scale=True)


def _olmo2(config: Any) -> dict[str, Any]:
    """OLMo 2: RMSNorm on each branch's output (none before them), RMSNorm of the whole Q and K projections."""
    attn = attention(config, **_biases(config), qk_norm=True, qk_norm_weights="per_head")
    layer = LayerSpec(attention=attn, mlp=gated_mlp(config, bias=False), input_norm=False, pre_mlp_norm=False,
                      post_attn_norm=True, post_mlp_norm=True)
    return model_fields(config, [layer] * config.num_hidden_layers)


def _granite(config: Any) -> dict[str, Any]:
    """Granite 3: Llama with constant multipliers on the embeddings, each residual branch and the logits
    (the attention multiplier replaces 1/sqrt(d): no cost of its own)."""
    layer = LayerSpec(attention=attention(config, **_biases(config)), mlp=gated_mlp(config), residual_scale=True)
    return model_fields(config, [layer] * config.num_hidden_layers, embedding_scale=True, logit_scale=True)


def _glm4(config: Any) -> dict[str, Any]:
    """GLM-4: biased Q, K, V (attention_bias), partial rotary, fused gate/up, sandwich norms around both
    branches."""
    attn = attention(config, qkv_bias=bool(get(config, "attention_bias", True)), o_bias=False)
    layer = LayerSpec(attention=attn, mlp=gated_mlp(config, bias=False, fused_gate_up=True), post_attn_norm=True,
                      post_mlp_norm=True)
    return model_fields(config, [layer] * config.num_hidden_layers)


def _smollm3(config: Any) -> dict[str, Any]:
    """SmolLM3: Llama with no rotary on every no_rope_layer_interval-th layer (NoPE: no_rope_layers[i] == 0);
    sliding windows only with use_sliding_window."""
    windows = layer_windows(config, config.num_hidden_layers) if get(config, "use_sliding_window", False) else None
    layers = []
    for i, rope in enumerate(config.no_rope_layers):
        attn = attention(config, **_biases(config), sliding_window=windows[i] if windows else None)
        layers.append(LayerSpec(attention=attn if rope else attn.model_copy(update={"rotary_dim": 0}),
                                mlp=gated_mlp(config)))
    return model_fields(config, layers)


def _qwen2_moe(config: Any) -> dict[str, Any]:
    """Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B): Qwen2 attention (biased Q, K, V), MoE every
    decoder_sparse_step-th layer outside mlp_only_layers, a shared expert scaled by a sigmoid gate."""
    qkv_bias = bool(get(config, "qkv_bias", True))
    act = activation(config)
    expert = MLPSpec(gated=True, intermediate_size=config.moe_intermediate_size, activation=act)
    shared = config.shared_expert_intermediate_size
    moe = MoESpec(num_experts=config.num_experts, top_k=config.num_experts_per_tok, expert=expert,
                  shared=MLPSpec(gated=True, intermediate_size=shared, activation=act) if shared else None,
                  shared_gate=bool(shared))
    dense = MLPSpec(gated=True, intermediate_size=config.intermediate_size, activation=act)
    layers = []
    for i, window in enumerate(layer_windows(config, config.num_hidden_layers)):
        sparse = i not in (config.mlp_only_layers or []) and (i + 1) % config.decoder_sparse_step == 0
        layers.append(LayerSpec(attention=attention(config, qkv_bias=qkv_bias, sliding_window=window or None),
                                mlp=moe if sparse and config.num_experts > 0 else dense))
    return model_fields(config, layers)


def _llama4_text(config: Any) -> dict[str, Any]:
    """Llama 4 (text): rotary layers with chunked local attention (layer_types chunked_attention, chunks of
    attention_chunk_size) and a weightless L2 norm of Q and K (use_qk_norm), every no_rope_layer_interval-th
    layer global attention without rotary (NoPE); MoE on moe_layers (every interleave_moe_layer_step-th):
    top-k sigmoid router, experts with fused gate/up stored W[E, in, out], one shared expert; dense layers use
    intermediate_size_mlp.

    approximation: the NoPE layers' attention temperature tuning (q scaled per position: T * H * d multiplies)
    is not counted.
    """
    act = activation(config)
    expert = MLPSpec(gated=True, intermediate_size=config.intermediate_size, fused_gate_up=True, activation=act,
                     weight_layout="in_out")
    moe = MoESpec(num_experts=config.num_local_experts, top_k=config.num_experts_per_tok, expert=expert,
                  shared=MLPSpec(gated=True, intermediate_size=config.intermediate_size, activation=act),
                  routing=DEEPSEEK_STYLE_ROUTING)
    dense = MLPSpec(gated=True, intermediate_size=config.intermediate_size_mlp, activation=act)
    chunk = get(config, "attention_chunk_size", None)
    layers = []
    for i, (rope, layer_type) in enumerate(zip(config.no_rope_layers, config.layer_types, strict=True)):
        if layer_type not in ("chunked_attention", "full_attention"):
            raise ConfigError(f"model config (llama4_text): layer_types[{i}]={layer_type!r}; supported: "
                              "chunked_attention, full_attention")
        chunked = layer_type == "chunked_attention" and chunk is not None
        attn = attention(config, **_biases(config), qk_norm=bool(rope and get(config, "use_qk_norm", True)),
                         qk_norm_weights="none", sliding_window=chunk if chunked else None, chunked=chunked)
        layers.append(LayerSpec(attention=attn if rope else attn.model_copy(update={"rotary_dim": 0}),
                                mlp=moe if i in config.moe_layers else dense))
    return model_fields(config, layers)


def _qwen3_next(config: Any) -> dict[str, Any]:
    """Qwen3-Next: gated DeltaNet (linear attention) layers, every full_attention_interval-th layer full
    attention with an output gate in q_proj, RMSNorm of each Q and K head and partial rotary; MoE every
    decoder_sparse_step-th layer outside mlp_only_layers (fused gate/up experts, a shared expert scaled by a
    sigmoid gate)."""
    dense = MLPSpec(gated=True, intermediate_size=config.intermediate_size, activation=activation(config))
    return _gated_deltanet_hybrid(config, lambda i: i not in (config.mlp_only_layers or []) and (
        i + 1) % config.decoder_sparse_step == 0 and config.num_experts > 0, dense)


def _qwen3_5_moe_text(config: Any) -> dict[str, Any]:
    """Qwen3.5-MoE (text model): Qwen3-Next's layers with every layer MoE (no dense layers). transformers' Qwen3.5
    DeltaNet projects in_proj_qkv, in_proj_z, in_proj_b and in_proj_a separately where Qwen3-Next fuses them into
    in_proj_qkvz and in_proj_ba: the same weights and FLOPs. Interleaved multi-axis rotary (mrope) on text tokens is
    plain rotary (every axis the same position). The multi-token-prediction layer (mtp_num_hidden_layers) is not
    part of transformers' model and is not costed.

    approximation: the DeltaNet input projections are costed fused (in_proj_qkvz, in_proj_ba), as vLLM and SGLang
    merge them; eager transformers reads x twice more."""
    return _gated_deltanet_hybrid(config, lambda i: True, None)


def _gated_deltanet_hybrid(config: Any, sparse: Callable[[int], bool], dense: MLPSpec | None) -> dict[str, Any]:
    """The layers of Qwen3-Next and Qwen3.5-MoE: layer_types linear_attention (gated DeltaNet) or full_attention
    (output gate, per-head Q/K RMSNorm, partial rotary); MoE where sparse(i), else the dense MLP."""
    act = activation(config)
    expert = MLPSpec(gated=True, intermediate_size=config.moe_intermediate_size, fused_gate_up=True, activation=act)
    shared = config.shared_expert_intermediate_size
    moe = MoESpec(num_experts=config.num_experts, top_k=config.num_experts_per_tok, expert=expert,
                  shared=MLPSpec(gated=True, intermediate_size=shared, activation=act) if shared else None,
                  shared_gate=bool(shared))
    full = attention(config, **_biases(config), qk_norm=True, output_gate=True)
    linear = AttentionSpec(kind="linear", num_heads=config.linear_num_value_heads,
                           num_kv_heads=config.linear_num_key_heads, head_dim=config.linear_key_head_dim,
                           v_head_dim=config.linear_value_head_dim, conv_kernel=config.linear_conv_kernel_dim)
    layers = []
    for i, layer_type in enumerate(config.layer_types):
        if layer_type not in ("linear_attention", "full_attention"):
            raise ConfigError(f"model config ({config.model_type}): layer_types[{i}]={layer_type!r}; supported: "
                              "full_attention, linear_attention")
        layers.append(LayerSpec(attention=linear if layer_type == "linear_attention" else full,
                                mlp=moe if sparse(i) or dense is None else dense))
    return model_fields(config, layers)


def _minimax_m2(config: Any) -> dict[str, Any]:
    """MiniMax-M2 (M2, M2.1, M2.5): GQA whose whole Q and K projections are RMS-normalised (qk_norm_type
    "per_layer": weights [H*d] and [kvh*d]), rotary on rotary_dim of each head; every layer MoE: a sigmoid router
    choosing top-k by score plus a correction bias (a buffer, no parameters), experts with fused gate/up
    (intermediate_size each), no shared expert. The multi-token-prediction modules (use_mtp) are not part of
    transformers' model and are not costed, as for DeepSeek-V3's."""
    if not get(config, "use_qk_norm", True) or get(config, "qk_norm_type", "per_layer") != "per_layer":
        raise ConfigError("model config (minimax_m2): only use_qk_norm=true with qk_norm_type='per_layer' is "
                          "supported (the layout transformers' MiniMaxM2 builds)")
    if get(config, "shared_intermediate_size", 0):
        raise ConfigError("model config (minimax_m2): shared_intermediate_size > 0 (a shared expert) is not "
                          "supported; transformers' MiniMaxM2 has none")
    expert = MLPSpec(gated=True, intermediate_size=config.intermediate_size, fused_gate_up=True,
                     activation=activation(config))
    moe = MoESpec(num_experts=config.num_local_experts, top_k=config.num_experts_per_tok, expert=expert)
    attn = attention(config, **_biases(config), qk_norm=True, qk_norm_weights="per_head")
    return model_fields(config, [LayerSpec(attention=attn, mlp=moe)] * config.num_hidden_layers)


def mamba2_mixer(config: Any, *, heads: str, head_dim: str, state: str, bias: str, groups: str = "n_groups",
                 conv: str = "conv_kernel", conv_bias: str = "use_conv_bias", chunk: str = "chunk_size"
                 ) -> AttentionSpec:
    """A Mamba-2 mixer from the config's field names for its heads, head size, state size, projection bias,
    groups, convolution taps and bias, and scan chunk (Mamba-2 and Nemotron-H share the last four names; Granite 4
    prefixes them all with mamba_)."""
    return AttentionSpec(kind="mamba2", num_heads=getattr(config, heads), num_kv_heads=getattr(config, groups),
                         head_dim=getattr(config, head_dim), v_head_dim=getattr(config, head_dim),
                         qkv_bias=bool(get(config, bias, False)), o_bias=bool(get(config, bias, False)),
                         conv_kernel=getattr(config, conv), conv_bias=bool(get(config, conv_bias, True)),
                         ssm_state_size=getattr(config, state), ssm_chunk_size=getattr(config, chunk))


def _mamba2(config: Any) -> dict[str, Any]:
    """Mamba-2: every layer an RMSNorm and a Mamba-2 mixer, no MLP, no positions. transformers' config has no
    max_position_embeddings: the model has no position limit (SSM_MAX_CONTEXT stands in).

    approximation: residual_in_fp32 (the residual stream kept in float32) is not counted in the adds' bytes.
    """
    layer = LayerSpec(attention=mamba2_mixer(config, heads="num_heads", head_dim="head_dim", state="state_size",
                                             bias="use_bias"), mlp=None, pre_mlp_norm=False)
    return {"vocab_size": config.vocab_size, "hidden_size": config.hidden_size,
            "max_position_embeddings": get(config, "max_position_embeddings", SSM_MAX_CONTEXT),
            "tie_word_embeddings": bool(get(config, "tie_word_embeddings", False)),
            "layers": [layer] * config.num_hidden_layers, "position_embedding": "none"}


def _nemotron_h(config: Any) -> dict[str, Any]:
    """Nemotron-H (Nemotron-H 8B/47B/56B, Nemotron 3 Nano/Super): one block per layer, each an RMSNorm, one
    mixer and a residual add, the mixer named by layers_block_type (hybrid_override_pattern M, *, -, E):
    Mamba-2, attention without positions or biases, a relu2 MLP (up, down), or a MoE of relu2 experts with a
    sigmoid router (its score correction bias a buffer) and a shared expert."""
    act = str(get(config, "mlp_hidden_act", "relu2"))
    bias = bool(get(config, "mlp_bias", False))
    if get(config, "moe_latent_size", None) is not None:
        raise ConfigError("model config (nemotron_h): moe_latent_size (latent MoE projections) is not supported")
    mixers = {"linear_attention": mamba2_mixer(config, heads="mamba_num_heads", head_dim="mamba_head_dim",
                                                state="ssm_state_size", bias="use_bias"),
              "full_attention": attention(config, rotary_dim=0)}
    dense = MLPSpec(gated=False, intermediate_size=config.intermediate_size, bias=bias, activation=act)
    expert = MLPSpec(gated=False, intermediate_size=config.moe_intermediate_size, activation=act)
    shared = MLPSpec(gated=False, intermediate_size=config.moe_shared_expert_intermediate_size, bias=bias,
                     activation=act)
    layers = []
    for i, block in enumerate(config.layers_block_type):
        if block in mixers:
            layers.append(LayerSpec(attention=mixers[block], mlp=None, pre_mlp_norm=False))
        elif block in ("mlp", "moe"):
            mlp = dense if block == "mlp" else MoESpec(num_experts=config.n_routed_experts,
                                                       top_k=config.num_experts_per_tok, expert=expert, shared=shared,
                                                       routing=DEEPSEEK_STYLE_ROUTING)
            layers.append(LayerSpec(attention=None, mlp=mlp, pre_mlp_norm=False))
        else:
            raise ConfigError(f"model config (nemotron_h): layers_block_type[{i}]={block!r}; supported: "
                              "full_attention, linear_attention, mlp, moe")
    return model_fields(config, layers, position_embedding="none")


def _granitemoehybrid(config: Any) -> dict[str, Any]:
    """Granite 4.0-H: Granite 3's multipliers (embeddings, each residual branch, logits) on layers whose mixer is
    Mamba-2 or attention (layer_types; rotary only with position_embedding_type "rope"), each followed by a MoE of
    fused gate/up experts with a plain top-k router plus an always-on shared MLP (shared_intermediate_size), or
    by the shared MLP alone when num_local_experts is 0."""
    act = activation(config)
    shared = MLPSpec(gated=True, intermediate_size=config.shared_intermediate_size, fused_gate_up=True,
                     activation=act)
    experts = get(config, "num_local_experts", 0)
    ffn: MLPSpec | MoESpec = shared
    if experts:
        expert = MLPSpec(gated=True, intermediate_size=config.intermediate_size, fused_gate_up=True, activation=act)
        ffn = MoESpec(num_experts=experts, top_k=config.num_experts_per_tok, expert=expert, shared=shared)
    rope = get(config, "position_embedding_type", None) == "rope"
    mixers = {"linear_attention": mamba2_mixer(config, heads="mamba_n_heads", head_dim="mamba_d_head",
                                                state="mamba_d_state", bias="mamba_proj_bias", groups="mamba_n_groups",
                                                conv="mamba_d_conv", conv_bias="mamba_conv_bias",
                                                chunk="mamba_chunk_size"),
              "full_attention": attention(config, **_biases(config), **({} if rope else {"rotary_dim": 0}))}
    layers = []
    for i, layer_type in enumerate(config.layer_types):
        if layer_type not in mixers:
            raise ConfigError(f"model config (granitemoehybrid): layer_types[{i}]={layer_type!r}; supported: "
                              "mamba (linear_attention), attention (full_attention)")
        layers.append(LayerSpec(attention=mixers[layer_type], mlp=ffn, residual_scale=True))
    return model_fields(config, layers, embedding_scale=True, logit_scale=True,
                        position_embedding="rotary" if rope else "none")


ADAPTERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "gemma": _gemma,
    "phi": _phi,
    "starcoder2": _starcoder2,
    "cohere": _cohere,
    "olmo2": _olmo2,
    "granite": _granite,
    "glm4": _glm4,
    "smollm3": _smollm3,
    "qwen2_moe": _qwen2_moe,
    "llama4_text": _llama4_text,
    "qwen3_next": _qwen3_next,
    "qwen3_5_moe_text": _qwen3_5_moe_text,
    "minimax_m2": _minimax_m2,
    "mamba2": _mamba2,
    "nemotron_h": _nemotron_h,
    "granitemoehybrid": _granitemoehybrid,
}
