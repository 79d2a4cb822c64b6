"""Readers of a transformers PretrainedConfig's fields that several family adapters share: a value with a
default for null, the rotary fraction, each layer's sliding window, the MLP activation."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError


def get(config: Any, key: str, default: Any = None) -> Any:
    """config.key, or `default` when it is absent or null."""
    value = getattr(config, key, None)
    return default if value is None else value


def rotary_fraction(config: Any) -> float:
    """The fraction of each head's dims that rotary rotates (partial_rotary_factor; 1.0 when unstated)."""
    rope = getattr(config, "rope_parameters", None) or {}
    if isinstance(rope, dict) and "partial_rotary_factor" in rope:
        return float(rope["partial_rotary_factor"])
    return float(get(config, "partial_rotary_factor", 1.0))


def layer_windows(config: Any, num_layers: int) -> list[int | None]:
    """Sliding window of each layer (None: full attention), as transformers' cache decides it."""
    window = getattr(config, "sliding_window", None)
    layer_types = getattr(config, "layer_types", None)
    if layer_types is None:
        return [window] * num_layers
    allowed = {"full_attention", "sliding_attention"}
    windows: list[int | None] = []
    for i, layer_type in enumerate(layer_types):
        if layer_type not in allowed:
            raise ConfigError(f"model config: layer_types[{i}]={layer_type!r}; supported: {', '.join(sorted(allowed))}")
        if layer_type == "sliding_attention" and window is None:
            raise ConfigError("model config: layer_types has sliding_attention but 'sliding_window' is missing")
        windows.append(window if layer_type == "sliding_attention" else None)
    return windows


def activation(config: Any) -> str:
    """The MLP activation: hidden_activation (Gemma 2/3) or hidden_act."""
    return str(get(config, "hidden_activation", None) or get(config, "hidden_act", "silu"))
