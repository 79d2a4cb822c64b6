"""The dtype a model is costed at when its config states none, or states float32.

A config's `torch_dtype` (transformers 5: `dtype`) is the dtype its checkpoint is stored in, not always
the one it is served in:
- none stated: assumed bfloat16, said so (AssumptionWarning and `ModelSpec.dtype_source`). Serving
  engines run any checkpoint in 16 bits (below), and current checkpoints are stored in 16 bits.
- float32 (e.g. google/gemma-2-9b, whose base checkpoint is stored in float32): kept in the spec (eager
  transformers loads it so), but a serving engine runs it in 16 bits: vLLM's dtype="auto"
  (vllm/config/model.py `_resolve_auto_dtype`, "Downcast for float32 models") picks the platform's first
  supported dtype, bfloat16 on current GPUs (float16 is never chosen for gemma2/gemma3, whose activations
  overflow it). `served_model` applies that for the engines that do it (`Engine.serves_float32_as`).
  approximation: SGLang, TensorRT-LLM and torch-compile (gpt-fast) are taken to do the same; float16
  and bfloat16 cost the same bytes and the same tensor-core rate, so which 16-bit type does not matter.
"""

from __future__ import annotations

from ..dtypes import canonical_dtype
from ..errors import warn_assumption
from .spec import ModelSpec

ASSUMED_DTYPE = "bfloat16"


def stated(dtype: str) -> str:
    """The dtype_source of a dtype the config states."""
    return f"torch_dtype {dtype} (config)"


def config_dtype(value: object, model_type: str) -> tuple[str, str]:
    """(the dtype of a config's torch_dtype/dtype value, where it came from: one line); no value: bfloat16,
    with an AssumptionWarning saying so."""
    if value is not None:
        dtype = canonical_dtype(str(value), "torch_dtype")
        return dtype, stated(dtype)
    note = (f"the config states no torch_dtype/dtype: assumed {ASSUMED_DTYPE} (serving engines run checkpoints in "
            f"16 bits; pass weight_dtype/activation_dtype to cost another)")
    warn_assumption(f"model config ({model_type}): {note}")
    return ASSUMED_DTYPE, note


def served_model(spec: ModelSpec, serves_float32_as: str | None, engine: str, explicit: tuple[object, ...]
                 ) -> ModelSpec:
    """The spec as `engine` runs it: a float32 checkpoint (dtype stated in its config) in the engine's
    16-bit dtype, unless float32 was asked for explicitly (weight_dtype or activation_dtype)."""
    asked = {canonical_dtype(d) for d in explicit if isinstance(d, str) and d.lower() in ("float32", "fp32", "float")}
    if (serves_float32_as is None or spec.dtype != "float32" or spec.dtype_source != stated("float32")
            or "float32" in asked):
        return spec
    note = (f"the config's torch_dtype float32 is the checkpoint's storage dtype; {engine} serves it in "
            f"{serves_float32_as} (vLLM dtype='auto': _resolve_auto_dtype); pass activation_dtype='float32' "
            f"to cost a float32 run")
    warn_assumption(f"model {spec.name}: {note}")
    return spec.model_copy(update={"dtype": serves_float32_as, "dtype_source": note})
