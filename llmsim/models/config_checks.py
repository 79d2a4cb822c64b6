"""Checks of a config's fields before transformers sees them: sizes are integers in range, the dtype is known,
the hidden size splits into the heads; each refused by name in one line (ConfigError)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..dtypes import canonical_dtype
from ..errors import ConfigError, LlmsimError

# Integer fields that must be positive where stated (null allowed: the family's default applies), with an
# upper bound well past any published model: a larger value is a typo, and its answer would be nonsense.
_WIDTH_MAX, _COUNT_MAX, _VOCAB_MAX, _POSITIONS_MAX = 1 << 20, 1 << 16, 1 << 24, 1 << 31
_POSITIVE_INTS: dict[str, int] = {
    **dict.fromkeys(("hidden_size", "n_embd", "intermediate_size", "n_inner", "ffn_hidden_size", "head_dim",
                     "moe_intermediate_size", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim",
                     "qk_nope_head_dim", "v_head_dim", "shared_expert_intermediate_size"), _WIDTH_MAX),
    **dict.fromkeys(("num_hidden_layers", "n_layer", "num_attention_heads", "n_head", "num_key_value_heads",
                     "num_kv_heads", "num_local_experts", "n_routed_experts", "num_experts_per_tok",
                     "decoder_sparse_step", "no_rope_layer_interval", "num_heads", "mamba_num_heads", "n_groups",
                     "conv_kernel", "num_experts", "moe_layer_freq"), _COUNT_MAX),
    **dict.fromkeys(("state_size", "ssm_state_size", "mamba_head_dim", "chunk_size"), _WIDTH_MAX),
    "vocab_size": _VOCAB_MAX,
    **dict.fromkeys(("max_position_embeddings", "n_positions", "sliding_window"), _POSITIONS_MAX),
}
# 0 standing for "none", as transformers itself writes it (Qwen2MoeConfig: sliding_window=0 without use_sliding_window)
# and Granite 4's dense models (num_local_experts=0, num_experts_per_tok=0: the shared MLP alone)
_ZERO_MEANS_NONE = {("qwen2_moe", "sliding_window"), ("granitemoehybrid", "num_local_experts"),
                    ("granitemoehybrid", "num_experts_per_tok")}
# (hidden, heads) names of the families whose head dim is hidden // heads: always (gpt2, gpt_neox, falcon)
# or unless head_dim is stated (llama-like, gpt_oss)
_HEAD_SPLIT = {"gpt2": ("n_embd", "n_head", True), "gpt_neox": ("hidden_size", "num_attention_heads", True),
               "falcon": ("hidden_size", "num_attention_heads", True),
               "llama": ("hidden_size", "num_attention_heads", False),
               "gpt_oss": ("hidden_size", "num_attention_heads", False),
               **dict.fromkeys(("phi", "starcoder2", "cohere", "olmo2", "granite", "smollm3", "qwen2_moe"),
                               ("hidden_size", "num_attention_heads", False))}


def head_split(data: Mapping[str, Any], family: str) -> str | None:
    """What is wrong when the hidden size does not split evenly into the attention heads (else None)."""
    if family not in _HEAD_SPLIT:
        return None
    hidden_key, heads_key, _ = _HEAD_SPLIT[family]
    hidden, heads = data.get(hidden_key), data.get(heads_key)
    if type(hidden) is int and type(heads) is int and heads > 0 and hidden % heads:
        return f"{hidden_key}={hidden} is not a multiple of {heads_key}={heads}; choose {heads_key} among its divisors"
    return None


def check_fields(data: Mapping[str, Any], model_type: str, family: str) -> None:
    """Refuse by name what transformers would reject with a traceback or accept into a wrong answer:
    non-integer or out-of-range sizes, an unknown dtype, a hidden size that does not split into heads."""
    for key, top in _POSITIVE_INTS.items():
        value = data.get(key)
        if value is None or (value == 0 and (model_type, key) in _ZERO_MEANS_NONE):
            continue
        if type(value) is not int or not 1 <= value <= top:
            raise ConfigError(f"model config ({model_type}): {key}={value!r} is not allowed; "
                              f"give an integer in 1..{top}")
    for key in ("torch_dtype", "dtype"):
        if data.get(key) is not None:
            try:
                canonical_dtype(str(data[key]), key)
            except LlmsimError as exc:
                raise ConfigError(f"model config ({model_type}): {exc}") from None
    pattern = data.get("hybrid_override_pattern") if model_type == "nemotron_h" else None
    if pattern is not None and (not isinstance(pattern, str) or not pattern or set(pattern) - set("M*-E")):
        raise ConfigError(f"model config ({model_type}): hybrid_override_pattern={pattern!r} is not allowed; give "
                          "one character per layer: M (Mamba-2), * (attention), - (MLP), E (MoE)")
    layers = data.get("num_hidden_layers")
    only = data.get("mlp_only_layers")
    if only is not None and not (isinstance(only, list) and all(
            type(i) is int and 0 <= i < (layers if type(layers) is int else _COUNT_MAX) for i in only)):
        raise ConfigError(f"model config ({model_type}): mlp_only_layers={only!r} is not allowed; give a list of "
                          f"layer indices in 0..{layers - 1 if type(layers) is int else 'num_hidden_layers - 1'}")
    for key in ("rope_scaling", "rope_parameters"):
        rope = data.get(key)
        factor = rope.get("factor") if isinstance(rope, Mapping) else None
        if factor is not None and (isinstance(factor, bool) or not isinstance(factor, (int, float))
                                   or not 0 < factor < float("inf")):
            raise ConfigError(f"model config ({model_type}): {key} factor={factor!r} is not allowed; give a finite "
                              "number > 0")
    split = head_split(data, family)
    if split and (_HEAD_SPLIT[family][2] or data.get("head_dim") is None):
        fix = "" if _HEAD_SPLIT[family][2] else ", or state head_dim"
        raise ConfigError(f"model config ({model_type}): {split}{fix}")
    problem = _head_dim_problem(data, family)
    if problem:
        raise ConfigError(f"model config ({model_type}): {problem}")


def _head_dim_problem(data: Mapping[str, Any], family: str) -> str | None:
    """A head_dim the family cannot use: one that disagrees with hidden_size / heads where the family always
    splits that way (gpt2, gpt_neox, falcon: a stated head_dim would be ignored), or an odd rotary part
    (RoPE rotates pairs of dimensions; transformers refuses it with its own wording)."""
    stated = data.get("head_dim")
    if family in _HEAD_SPLIT:
        hidden_key, heads_key, always = _HEAD_SPLIT[family]
        hidden, heads = data.get(hidden_key), data.get(heads_key)
        if type(hidden) is not int or type(heads) is not int:
            return None
        derived = hidden // heads
        if always and stated is not None and stated != derived:
            return (f"head_dim={stated} disagrees with {hidden_key} / {heads_key} = {hidden} / {heads} = {derived}, "
                    f"the head size this family always uses; leave head_dim out")
        if always:
            return None
        head_dim, source = (stated, f"head_dim={stated}") if stated is not None else (
            derived, f"head_dim = {hidden_key} / {heads_key} = {hidden} / {heads} = {derived}")
    elif family == "deepseek_v3" and stated is not None:
        head_dim, source = stated, f"head_dim={stated}"  # transformers checks the stated one
    else:
        return None
    factor = _partial_rotary_factor(data)
    rotary = int(head_dim * factor)
    if rotary % 2 == 0:
        return None
    if factor == 1:
        return (f"{source} is odd, but RoPE rotates pairs of dimensions, so each head's rotated part must be "
                "even: choose an even head_dim")
    return (f"{source} x partial_rotary_factor {factor:g} rotates {rotary} dimensions, an odd number, but RoPE "
            "rotates pairs of dimensions: choose head_dim so that the product is even")


def _partial_rotary_factor(data: Mapping[str, Any]) -> float:
    """The part of each head RoPE rotates, wherever the config states it (1 when it does not, or not as a number)."""
    for holder in (data, data.get("rope_parameters"), data.get("rope_scaling")):
        if isinstance(holder, Mapping):
            value = holder.get("partial_rotary_factor")
            if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1:
                return float(value)
    return 1.0
