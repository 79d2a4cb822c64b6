"""Parameter counts and the one-line description of a model, from the ops of its graph (each op owns its
weights, so the count is exact against the transformers model on the meta device)."""

from __future__ import annotations

from typing import Any

from ..models.loading import load_model
from ..models.spec import ModelSpec
from .graph import build_ops


def num_parameters(model: Any) -> int:
    """Exact parameter count of `model` (a ModelSpec or anything `load_model` takes), summed from the ops of
    one forward pass."""
    spec = load_model(model)
    ops = build_ops(spec, phase="prefill", batch_size=1, seq_len=1)
    return int(sum(op.count * op.param_count for op in ops))


def model_summary_row(spec: ModelSpec) -> dict[str, object]:
    """The row of `llmsim models`: name, family, parameters, layers, hidden size, attention, MoE, context, dtype,
    quantization method."""
    return {
        "name": spec.name,
        "model_type": spec.model_type,
        "parameters": num_parameters(spec),
        "layers": spec.num_layers,
        "hidden": spec.hidden_size,
        "attention": spec.attention_kinds,
        "moe": any(g.layer.is_moe for g in spec.layer_groups),
        "max_context": spec.max_position_embeddings,
        # a dtype the config does not state (ModelSpec.dtype_source: models.dtype_default) is marked
        "dtype": spec.dtype if spec.dtype_source.endswith("(config)") else f"{spec.dtype} (assumed)",
        "quantization": spec.quantization.method if spec.quantization else "",  # quantization_config's method
    }
