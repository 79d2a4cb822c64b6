"""References nobody here wrote: the real transformers model's parameters, FLOPs and KV cache.

FLOPs come from torch.utils.flop_counter.FlopCounterMode on the real model run on CPU with
attn_implementation="eager" (FlopCounterMode has no formula for the fused CPU SDPA kernel, so it
would drop attention) and the eager experts loop (it has none for grouped-mm either).
"""

from __future__ import annotations

import inspect
from functools import cache
from typing import Any

import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

from .tiny_configs import TINY_CONFIGS


def hf_config(data: dict[str, Any]) -> Any:
    fields = {k: v for k, v in data.items() if k not in ("model_type", "auto_map")}
    model_type = {"RefinedWebModel": "falcon"}.get(data["model_type"], data["model_type"])
    if data["model_type"] == "RefinedWebModel":
        # the original Falcon names, which transformers 4.x mapped and 5.x ignores
        fields["num_hidden_layers"] = fields.pop("n_layer")
        fields["num_attention_heads"] = fields.pop("n_head")
    config = transformers.AutoConfig.for_model(model_type, **fields)
    if config.model_type in ("gemma3", "qwen3_5_moe", "kimi_k25"):  # multimodal: the language model
        config = config.text_config
    return config


@cache
def tiny_model(name: str) -> Any:
    config = hf_config(TINY_CONFIGS[name])
    config._experts_implementation = "eager"
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    return model.eval()


def meta_parameter_count(data: dict[str, Any]) -> int:
    """Parameters of the real model built on the meta device (no memory, nothing downloaded)."""
    config = hf_config({k: v for k, v in data.items() if k != "quantization_config"})
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def _ids(model: Any, batch_size: int, length: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(batch_size * 1000 + length)
    return torch.randint(0, model.config.vocab_size, (batch_size, length), generator=generator)


def prefill_flops(name: str, batch_size: int, seq_len: int) -> int:
    model = tiny_model(name)
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(_ids(model, batch_size, seq_len), use_cache=True)
    return counter.get_total_flops()


# what a model calls its cache: Mamba-2's models "cache_params" up to transformers 5.23, "cache" from 5.24
_CACHE_NAMES = ("cache", "cache_params", "past_key_values")


def _cache(out: Any) -> Any:
    """The cache a forward pass returns."""
    return next(out[name] for name in _CACHE_NAMES if name in out)


def _cache_argument(model: Any, cache: Any) -> dict[str, Any]:
    parameters = inspect.signature(model.forward).parameters
    return {next(name for name in _CACHE_NAMES if name in parameters): cache}


def decode_flops(name: str, batch_size: int, kv_len: int) -> int:
    """FLOPs of one decode step with the cache holding kv_len tokens (the prefill is not counted)."""
    model = tiny_model(name)
    with torch.no_grad():
        out = model(_ids(model, batch_size, kv_len), use_cache=True)
        counter = FlopCounterMode(display=False)
        with counter:
            model(_ids(model, batch_size, 1), **_cache_argument(model, _cache(out)), use_cache=True)
    return counter.get_total_flops()


def cache_bytes_after_prefill(name: str, batch_size: int, seq_len: int, dtype: torch.dtype) -> int:
    """Bytes of every tensor the real transformers cache holds after a prefill of seq_len tokens."""
    model = tiny_model(name).to(dtype)
    try:
        with torch.no_grad():
            cache = _cache(model(_ids(model, batch_size, seq_len), use_cache=True))
        tensors = []
        for layer in cache.layers:  # K and V, and a linear-attention layer's conv and recurrent states
            tensors += [getattr(layer, "keys", None), getattr(layer, "values", None)]
            tensors += [*getattr(layer, "conv_states", {}).values(), *getattr(layer, "recurrent_states", {}).values()]
        return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))
    finally:
        model.to(torch.float32)
