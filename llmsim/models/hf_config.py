"""Read Hugging Face configs into a ModelSpec: one small adapter per model family.

Configs are read with `transformers.AutoConfig.for_model` on the config's own keys: no remote code
ever runs and nothing is downloaded. Keys the architecture needs must be present in the given dict;
transformers would otherwise fill them with a default model's values and the numbers would be
silently wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import ConfigError, first_validation_error
from .config_checks import check_fields, head_split
from .config_fields import activation as _activation
from .config_fields import get as _get
from .config_fields import layer_windows as _layer_windows
from .config_fields import rotary_fraction as _rotary_fraction
from .dtype_default import config_dtype
from .families import ADAPTERS as _FAMILY_ADAPTERS
from .families import REQUIRED_KEYS as _FAMILY_REQUIRED_KEYS
from .modelopt_file import with_quant_file
from .quantization import quantize_layers
from .spec import DEEPSEEK_STYLE_ROUTING, AttentionSpec, LayerGroup, LayerSpec, MLPSpec, ModelSpec, MoESpec

# the dtype names a config's torch_dtype / dtype may hold (torch dtypes as transformers reads them; "auto" lets the
# checkpoint decide)
CONFIG_DTYPES = ("float32", "bfloat16", "float16", "float64", "float8_e4m3fn", "float8_e5m2", "int8", "uint8", "auto")

# Keys each family's config must state (raw config.json names); the rest have faithful defaults.
_REQUIRED_KEYS: dict[str, tuple[str, ...]] = {
    "llama": ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size"),
    "gpt2": ("n_embd", "n_layer", "n_head", "vocab_size"),
    "gpt_neox": ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size"),
    "falcon": ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"),
    "deepseek_v3": (
        "hidden_size", "intermediate_size", "moe_intermediate_size", "num_hidden_layers", "num_attention_heads",
        "vocab_size", "n_routed_experts", "num_experts_per_tok", "kv_lora_rank", "qk_rope_head_dim",
        "qk_nope_head_dim", "v_head_dim",
    ),
    "gpt_oss": (
        "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
        "num_local_experts", "num_experts_per_tok",
    ),
    **_FAMILY_REQUIRED_KEYS,
}
_REQUIRED_KEYS["deepseek_v2"] = _REQUIRED_KEYS["deepseek_v3"]
_LLAMA_LIKE = ("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3_text", "mixtral", "qwen3_moe")
# Legacy model_type names that transformers' own class reads (Falcon's original RefinedWeb configs).
# transformers 5 no longer maps their n_layer/n_head names and would silently use its defaults.
# Kimi K2's remote-code name for DeepSeek-V3's architecture, mapped as transformers' Kimi_K25Config maps it.
_LEGACY_TYPES = {"RefinedWebModel": "falcon", "RefinedWeb": "falcon", "kimi_k2": "deepseek_v3"}
_LEGACY_KEYS = {"falcon": {"n_layer": "num_hidden_layers", "n_head": "num_attention_heads"}}
_MOE_KEYS = {"mixtral": ("num_local_experts", "num_experts_per_tok"),
             "qwen3_moe": ("num_experts", "num_experts_per_tok", "moe_intermediate_size")}

# ---- loading ------------------------------------------------------------------------------------
def read_config_file(path: Path) -> dict[str, Any]:
    """The dict of a config.json file, or of the config.json inside a folder (with the quantization_config of
    an hf_quant_config.json beside it: llmsim.models.modelopt_file)."""
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise ConfigError(f"model config: no file at {file}")
    try:
        data = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"model config {file}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"model config {file}: expected a JSON object at the top level")
    return with_quant_file(data, file)  # ModelOpt's hf_quant_config.json beside it, if any


def _check_model_type(data: Mapping[str, Any], where: str = "") -> None:
    """model_type, where given, is a name (a list or a mapping there was an unhashable-type traceback)."""
    value = data.get("model_type")
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"model config: {where}model_type={value!r} is not allowed; give a name (a string), one "
                          f"of {', '.join(sorted(_ADAPTERS))}")


def _text_part(data: dict[str, Any]) -> dict[str, Any]:
    """A multimodal config (e.g. Gemma 3 27B) holds its language model under text_config."""
    if data.get("model_type") not in _supported_types() and isinstance(data.get("text_config"), dict):
        text = dict(data["text_config"])
        text.setdefault("model_type", f"{data['model_type']}_text")
        for key in ("torch_dtype", "dtype", "quantization_config"):
            if key in data and key not in text:
                text[key] = data[key]
        return text
    return data


def _supported_types() -> tuple[str, ...]:
    return tuple(_ADAPTERS)


def _import_transformers() -> Any:
    """transformers, imported without its start-up advice that PyTorch is missing: llmsim reads only configs, for
    which transformers needs no PyTorch (the variable is set for the import alone, then restored)."""
    import os

    key = "TRANSFORMERS_NO_ADVISORY_WARNINGS"
    previous = os.environ.get(key)
    os.environ[key] = "1"
    try:
        import transformers
    finally:
        if previous is None:
            del os.environ[key]
        else:
            os.environ[key] = previous
    return transformers


def _warn_towers(outer: Any, text_type: Any, towers: list[str]) -> None:
    """Say, once per load, that a multimodal config is costed as its language model alone: its vision or audio
    encoder (vision_config, audio_config) is not modelled, so its weights, memory and time are left out."""
    if towers and text_type in _ADAPTERS:
        from ..errors import warn_assumption

        encoders = " and ".join(t.removesuffix("_config") for t in towers)
        warn_assumption(f"model config ({outer}): costed as its language model ({text_type}); the {encoders} "
                        "encoder's weights, memory and time are left out")


def config_from_dict(data: Mapping[str, Any]) -> Any:
    """A transformers PretrainedConfig built from a config dict, after checking the needed keys."""
    transformers = _import_transformers()

    data = _special_floats(dict(data))
    data.pop("auto_map", None)  # remote-code hooks are never followed
    _check_model_type(data)
    if isinstance(data.get("text_config"), dict):
        _check_model_type(data["text_config"], "text_config.")
    from_text_config = "text_config" in data and data.get("model_type") not in _ADAPTERS
    outer, towers = data.get("model_type"), [k for k in ("vision_config", "audio_config") if data.get(k)]
    data = _text_part(data)
    if from_text_config:
        _warn_towers(outer, data.get("model_type"), towers)
    if data.get("model_type") in _LEGACY_TYPES:
        data["model_type"] = _LEGACY_TYPES[data["model_type"]]
    for old, new in _LEGACY_KEYS.get(str(data.get("model_type")), {}).items():
        if old in data and new not in data:
            data[new] = data.pop(old)
    model_type = data.get("model_type")
    if model_type is None and {"library", "class", "config"} <= set(data):  # a file of analyze's model zoo
        raise ConfigError(f"model config: a {data.get('library')} {data.get('class')} file of `llmsim analyze`'s "
                          "zoo (vision and diffusion models), not an LLM config: `llmsim analyze diffusers:NAME` "
                          "or hf:NAME traces it")
    if model_type is None:
        raise ConfigError("model config: missing field 'model_type'")
    if model_type not in _ADAPTERS:
        raise ConfigError(
            f"model config: model_type={model_type!r} is not supported; supported: {', '.join(sorted(_ADAPTERS))}"
        )
    family = "llama" if model_type in _LLAMA_LIKE else model_type
    required = _REQUIRED_KEYS[family] + _MOE_KEYS.get(model_type, ())
    aliases = getattr(transformers.CONFIG_MAPPING[model_type], "attribute_map", {}) or {}
    # either name of an attribute_map pair counts (transformers 5 writes qwen3_moe's num_experts as num_local_experts)
    present = set(data) | {aliases[k] for k in data if k in aliases} | {k for k, v in aliases.items() if v in data}
    # a multimodal config's text_config leans on its class defaults by design (Gemma 3)
    missing = [] if from_text_config else [key for key in required if not present & set(key.split("|"))]
    if missing:
        named = [" or ".join(repr(k) for k in key.split("|")) for key in missing]
        raise ConfigError(f"model config ({model_type}): missing field {named[0]} (needed: {', '.join(missing)})")
    check_fields(data, model_type, family)
    for key in ("torch_dtype", "dtype"):  # transformers resolves it as getattr(torch, name): its error names torch
        value = data.get(key)
        if isinstance(value, str) and value.removeprefix("torch.") not in CONFIG_DTYPES:
            raise ConfigError(f"model config ({model_type}): {key}={value!r} is not a dtype transformers reads; "
                              f"allowed: {', '.join(CONFIG_DTYPES)}")
    fields = {k: v for k, v in data.items() if k != "model_type"}
    if family == "falcon":  # transformers derives Falcon's head_dim (a read-only property); checked equal above
        fields.pop("head_dim", None)
    if "torch_dtype" in fields:  # the name transformers 5 renamed to dtype
        fields.setdefault("dtype", fields.pop("torch_dtype"))
    verbosity = transformers.logging.get_verbosity()
    # transformers' own config warnings are about running the model (e.g. Llama-4-Scout's published rope_parameters
    # with high_freq_factor == low_freq_factor: its inv_freq), not its cost, and came only with a cold spec cache;
    # what llmsim needs is checked above (config_checks) and refused by name. Errors still show.
    transformers.logging.set_verbosity_error()
    try:
        return transformers.AutoConfig.for_model(model_type, **fields)
    except Exception as exc:  # transformers' strict-dataclass errors are plain Exceptions
        split = head_split(data, family)
        if split:  # some classes (llama, gemma2, gpt_neox) require the split even with head_dim stated
            raise ConfigError(f"model config ({model_type}): {split}; transformers' {model_type} config "
                              "requires it even with head_dim") from None
        reason = " ".join(str(exc).split())  # one line: its validation errors span several
        raise ConfigError(f"model config ({model_type}): transformers refused it: {reason}") from None
    finally:
        transformers.logging.set_verbosity(verbosity)


_FLOAT_TAGS = {"Infinity": float("inf"), "-Infinity": float("-inf"), "NaN": float("nan")}


def _special_floats(value: Any) -> Any:
    """transformers 5 saves non-finite floats as {"__float__": "Infinity"} (Mamba-2's time_step_limit) and reads
    them back as floats; so does this."""
    if isinstance(value, dict):
        if set(value) == {"__float__"} and value["__float__"] in _FLOAT_TAGS:
            return _FLOAT_TAGS[value["__float__"]]
        return {k: _special_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_special_floats(v) for v in value]
    return value


def spec_from_hf_config(config: Any, name: str | None = None) -> ModelSpec:
    """A ModelSpec from a transformers PretrainedConfig or a config dict."""
    if isinstance(config, Mapping):
        config = config_from_dict(config)
    if getattr(config, "model_type", None) not in _ADAPTERS and hasattr(config, "get_text_config"):
        outer = getattr(config, "model_type", None)
        towers = [k for k in ("vision_config", "audio_config") if getattr(config, k, None) is not None]
        config = config.get_text_config()
        _warn_towers(outer, getattr(config, "model_type", None), towers)
    model_type = getattr(config, "model_type", None)
    if model_type not in _ADAPTERS:
        raise ConfigError(
            f"model config: model_type={model_type!r} is not supported; supported: {', '.join(sorted(_ADAPTERS))}"
        )
    try:
        fields = _ADAPTERS[model_type](config)
        layers: list[LayerSpec] = fields.pop("layers")
        # transformers 5 keeps torch_dtype as dtype; none stated: bfloat16, said why (dtype_default)
        dtype, dtype_source = config_dtype(getattr(config, "dtype", None), model_type)
        quantization, layers = quantize_layers(config, layers, dtype)
        groups, pattern = _group_layers(layers)
        return ModelSpec(
            name=name or getattr(config, "name_or_path", "") or model_type,
            model_type=model_type,
            dtype=dtype,
            dtype_source=dtype_source,
            quantization=quantization,
            layer_groups=groups,
            layer_pattern=pattern,
            mtp_layers=_mtp_layers(config),
            **fields,
        )
    except ValidationError as exc:
        raise ConfigError(f"model config ({model_type}): {first_validation_error(exc)}") from None


def _mtp_layers(config: Any) -> int:
    """The multi-token-prediction modules a config states (DeepSeek-V3, GLM-4.5, MiMo: num_nextn_predict_layers;
    Qwen3-Next, Qwen3.5: mtp_num_hidden_layers; MiniMax-M2: num_mtp_modules where use_mtp), 0 where it states none."""
    for key in ("num_nextn_predict_layers", "mtp_num_hidden_layers"):
        value = getattr(config, key, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    modules = getattr(config, "num_mtp_modules", None)
    if getattr(config, "use_mtp", False) is True and isinstance(modules, int) and modules > 0:
        return modules
    return 0


def _group_layers(layers: list[LayerSpec]) -> tuple[tuple[LayerGroup, ...], tuple[int, ...]]:
    """Group identical layers; tag each group by what tells it apart (sliding/full, dense/moe, rope/nope)."""
    unique: list[LayerSpec] = []
    pattern: list[int] = []
    for layer in layers:
        if layer not in unique:
            unique.append(layer)
        pattern.append(unique.index(layer))
    features = [_layer_features(u) for u in unique]
    varying = [i for i in range(3) if len({f[i] for f in features} - {""}) > 1]
    # a one-branch layer whose varying features are all empty is named by what it has (an MLP alone: "dense")
    tags = [".".join(f[i] for i in varying if f[i]) or (next((x for x in f if x), "") if len(features) > 1 else "")
            for f in features]
    if len(set(tags)) < len(tags):
        tags = [f"{t}{i}" if t else f"group{i}" for i, t in enumerate(tags)]
    groups = tuple(
        LayerGroup(tag=tag, count=pattern.count(i), layer=layer) for i, (tag, layer) in enumerate(zip(tags, unique))
    )
    return groups, tuple(pattern)


def _layer_features(layer: LayerSpec) -> tuple[str, str, str]:
    """(mixer, feed-forward, positions) of a layer, for its group's tag: linear/mamba/full/chunked/sliding or
    "" (an MLP alone), moe/dense or "" (a mixer alone), rope/nope or "" (no attention)."""
    attn = layer.attention
    if attn is None:
        mixer = ""
    elif attn.kind in ("linear", "mamba2"):
        mixer = "mamba" if attn.kind == "mamba2" else "linear"
    else:
        mixer = "full" if not attn.sliding_window else "chunked" if attn.chunked else "sliding"
    ffn = "" if layer.mlp is None else "moe" if layer.is_moe else "dense"
    rope = "" if attn is None or attn.kind in ("linear", "mamba2") else "rope" if attn.rotary_dim else "nope"
    return mixer, ffn, rope


# ---- adapters: config -> ModelSpec fields ------------------------------------------------------
def _llama_like(config: Any) -> dict[str, Any]:
    """llama, mistral, qwen2, qwen3, phi3, gemma2, gemma3_text, mixtral, qwen3_moe."""
    model_type = config.model_type
    h = config.hidden_size
    heads = config.num_attention_heads
    kv_heads = _get(config, "num_key_value_heads", heads)
    head_dim = _get(config, "head_dim", h // heads)
    bias = bool(_get(config, "attention_bias", False))
    qkv_bias = True if model_type == "qwen2" else bias  # Qwen2: q/k/v biased, o_proj not
    o_bias = False if model_type == "qwen2" else bias
    gemma = model_type in ("gemma2", "gemma3_text")
    dense_mlp = MLPSpec(
        gated=True,
        intermediate_size=config.intermediate_size,
        bias=bool(_get(config, "mlp_bias", False)),
        fused_gate_up=model_type == "phi3",
        activation=_activation(config),
    )
    layers = []
    for i, window in enumerate(_layer_windows(config, config.num_hidden_layers)):
        attention = AttentionSpec(
            num_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            v_head_dim=head_dim,
            qkv_bias=qkv_bias,
            o_bias=o_bias,
            fused_qkv=model_type == "phi3",
            qk_norm=model_type in ("qwen3", "qwen3_moe", "gemma3_text"),
            sliding_window=window,
            logit_softcap=bool(_get(config, "attn_logit_softcapping", None)),
            rotary_dim=int(head_dim * _rotary_fraction(config)),
        )
        layers.append(
            LayerSpec(
                attention=attention,
                mlp=_llama_like_moe(config, i) or dense_mlp,
                post_attn_norm=gemma,
                post_mlp_norm=gemma,
            )
        )
    return {
        "vocab_size": config.vocab_size,
        "hidden_size": h,
        "max_position_embeddings": config.max_position_embeddings,
        "tie_word_embeddings": bool(_get(config, "tie_word_embeddings", False)),
        "embedding_scale": gemma,  # x * sqrt(h) after the lookup
        "logit_softcap": bool(_get(config, "final_logit_softcapping", None)),
        "layers": layers,
    }


def _llama_like_moe(config: Any, layer_idx: int) -> MoESpec | None:
    if config.model_type == "mixtral":
        expert_size, experts = config.intermediate_size, config.num_local_experts
    elif config.model_type == "qwen3_moe":
        sparse = layer_idx not in (config.mlp_only_layers or []) and (
            config.num_experts > 0 and (layer_idx + 1) % config.decoder_sparse_step == 0
        )
        if not sparse:
            return None
        expert_size, experts = config.moe_intermediate_size, config.num_experts
    else:
        return None
    expert = MLPSpec(gated=True, intermediate_size=expert_size, activation=_activation(config))
    return MoESpec(num_experts=experts, top_k=config.num_experts_per_tok, expert=expert)


def _gpt2(config: Any) -> dict[str, Any]:
    h = config.n_embd
    attention = AttentionSpec(
        num_heads=config.n_head, num_kv_heads=config.n_head, head_dim=h // config.n_head,
        v_head_dim=h // config.n_head, qkv_bias=True, o_bias=True, fused_qkv=True, weight_layout="in_out",
    )  # Conv1D: W[in, out]
    mlp = MLPSpec(gated=False, intermediate_size=_get(config, "n_inner", 4 * h), bias=True,
                  activation=_activation(config), weight_layout="in_out")
    return {
        "vocab_size": config.vocab_size,
        "hidden_size": h,
        "max_position_embeddings": config.n_positions,
        "tie_word_embeddings": bool(_get(config, "tie_word_embeddings", True)),
        "position_embedding": "learned",
        "norm": "layernorm",
        "layers": [LayerSpec(attention=attention, mlp=mlp)] * config.n_layer,
    }


def _gpt_neox(config: Any) -> dict[str, Any]:
    h, heads = config.hidden_size, config.num_attention_heads
    bias = bool(_get(config, "attention_bias", True))
    attention = AttentionSpec(
        num_heads=heads, num_kv_heads=heads, head_dim=h // heads, v_head_dim=h // heads,
        qkv_bias=bias, o_bias=bias, fused_qkv=True, rotary_dim=int(h // heads * _rotary_fraction(config)),
    )
    mlp = MLPSpec(gated=False, intermediate_size=config.intermediate_size, bias=True, activation=_activation(config))
    layer = LayerSpec(attention=attention, mlp=mlp, parallel=bool(_get(config, "use_parallel_residual", True)))
    return {
        "vocab_size": config.vocab_size,
        "hidden_size": h,
        "max_position_embeddings": config.max_position_embeddings,
        "tie_word_embeddings": bool(_get(config, "tie_word_embeddings", False)),
        "norm": "layernorm",
        "layers": [layer] * config.num_hidden_layers,
    }


def _falcon(config: Any) -> dict[str, Any]:
    h, heads = config.hidden_size, config.num_attention_heads
    if _get(config, "alibi", False):
        raise ConfigError("model config (falcon): alibi=true is not supported (only rotary Falcon models)")
    new_arch = bool(_get(config, "new_decoder_architecture", False))
    if new_arch:
        kv_heads = _get(config, "num_kv_heads", heads)
    else:
        kv_heads = 1 if _get(config, "multi_query", True) else heads
    bias = bool(_get(config, "bias", False))
    attention = AttentionSpec(
        num_heads=heads, num_kv_heads=kv_heads, head_dim=h // heads, v_head_dim=h // heads,
        qkv_bias=bias, o_bias=bias, fused_qkv=True, rotary_dim=h // heads,
        broadcast_kv=not new_arch and kv_heads < heads,  # FalconAttention hands SDPA its one K/V head as it is
    )
    mlp = MLPSpec(gated=False, intermediate_size=_get(config, "ffn_hidden_size", 4 * h), bias=bias,
                  activation=_activation(config) if hasattr(config, "hidden_act") else "gelu")
    parallel = bool(_get(config, "parallel_attn", True))
    two_norms = not parallel or (new_arch and _get(config, "num_ln_in_parallel_attn", 2) == 2)
    layer = LayerSpec(attention=attention, mlp=mlp, parallel=parallel, pre_mlp_norm=two_norms)
    return {
        "vocab_size": config.vocab_size,
        "hidden_size": h,
        "max_position_embeddings": _get(config, "max_position_embeddings", 2048),
        "tie_word_embeddings": bool(_get(config, "tie_word_embeddings", True)),
        "norm": "layernorm",
        "layers": [layer] * config.num_hidden_layers,
    }


def _deepseek_v3(config: Any) -> dict[str, Any]:
    heads = config.num_attention_heads
    attention = AttentionSpec(
        kind="mla",
        num_heads=heads,
        num_kv_heads=heads,
        head_dim=config.qk_nope_head_dim + config.qk_rope_head_dim,
        v_head_dim=config.v_head_dim,
        qkv_bias=bool(_get(config, "attention_bias", False)),
        o_bias=bool(_get(config, "attention_bias", False)),
        rotary_dim=config.qk_rope_head_dim,
        q_lora_rank=config.q_lora_rank,
        kv_lora_rank=config.kv_lora_rank,
        qk_rope_head_dim=config.qk_rope_head_dim,
        qk_nope_head_dim=config.qk_nope_head_dim,
    )
    act = _activation(config)
    bias = bool(_get(config, "mlp_bias", False))  # DeepSeek-V2's dense and shared MLPs (V3 has none)
    dense = MLPSpec(gated=True, intermediate_size=config.intermediate_size, bias=bias, activation=act)
    expert = MLPSpec(gated=True, intermediate_size=config.moe_intermediate_size, activation=act)
    shared_experts = _get(config, "n_shared_experts", 0)
    moe = MoESpec(
        num_experts=config.n_routed_experts,
        top_k=config.num_experts_per_tok,
        expert=expert,
        routing=DEEPSEEK_STYLE_ROUTING,
        shared=MLPSpec(gated=True, intermediate_size=config.moe_intermediate_size * shared_experts, bias=bias,
                       activation=act)
        if shared_experts
        else None,
    )
    first_dense = _get(config, "first_k_dense_replace", 0)
    layers = [
        LayerSpec(attention=attention, mlp=dense if i < first_dense else moe) for i in range(config.num_hidden_layers)
    ]
    return {
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "max_position_embeddings": config.max_position_embeddings,
        "tie_word_embeddings": bool(_get(config, "tie_word_embeddings", False)),
        "layers": layers,
    }


def _gpt_oss(config: Any) -> dict[str, Any]:
    h, heads = config.hidden_size, config.num_attention_heads
    head_dim = _get(config, "head_dim", h // heads)
    expert = MLPSpec(gated=True, intermediate_size=config.intermediate_size, bias=True, fused_gate_up=True,
                     activation="swiglu_clamped", weight_layout="in_out")  # experts' W[E, in, out]
    moe = MoESpec(num_experts=config.num_local_experts, top_k=config.num_experts_per_tok, expert=expert,
                  router_bias=True)
    layers = []
    for window in _layer_windows(config, config.num_hidden_layers):
        attention = AttentionSpec(
            num_heads=heads, num_kv_heads=_get(config, "num_key_value_heads", heads), head_dim=head_dim,
            v_head_dim=head_dim, qkv_bias=bool(_get(config, "attention_bias", True)),
            o_bias=bool(_get(config, "attention_bias", True)), sinks=True, sliding_window=window,
            rotary_dim=head_dim,
        )
        layers.append(LayerSpec(attention=attention, mlp=moe))
    return {
        "vocab_size": config.vocab_size,
        "hidden_size": h,
        "max_position_embeddings": config.max_position_embeddings,
        "tie_word_embeddings": bool(_get(config, "tie_word_embeddings", False)),
        "layers": layers,
    }


_ADAPTERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    **{model_type: _llama_like for model_type in _LLAMA_LIKE},
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
    "falcon": _falcon,
    "deepseek_v3": _deepseek_v3,
    "deepseek_v2": _deepseek_v3,  # the same layers; V2's router has no score correction bias (V3's is a buffer)
    "gpt_oss": _gpt_oss,
    **_FAMILY_ADAPTERS,
}
