"""Memory footprint: weights, KV cache, peak activations and a workspace; the largest batch or
context that fits."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..cost.graph import build_ops_unchecked
from ..cost.workload import CostOptions
from ..hardware.spec import HardwareSpec
from ..models.spec import ModelSpec

# approximation: CUDA context, cuBLAS and attention workspaces and allocator slack on a GPU.
GPU_WORKSPACE_BYTES = 1 * 1024**3


class MemoryResult(BaseModel):
    """Bytes resident on the device at the peak of a generation."""

    model_config = ConfigDict(frozen=True)
    weights_bytes: float
    kv_cache_bytes: float
    activation_bytes: float
    workspace_bytes: float
    total_bytes: float
    capacity_bytes: float
    fits: bool

    @property
    def headroom_bytes(self) -> float:
        return self.capacity_bytes - self.total_bytes


@lru_cache(maxsize=256)
def weights_bytes(model: ModelSpec, options: CostOptions) -> float:
    """Bytes of every parameter in storage: linear weights at weight_dtype (with int group scales),
    embeddings and norms at the model's dtype."""
    ops = build_ops_unchecked(model, "prefill", 1, 1, 0, options)
    return float(sum(op.count * op.param_bytes for op in ops))


def peak_activation_bytes(model: ModelSpec, options: CostOptions, batch_size: Any, seq_len: Any,
                          prefill_values: dict[str, list[Any]] | None = None) -> Any:
    """Largest live activation set of a prefill of seq_len tokens.

    approximation: the residual stream [B, S, h] plus the largest single op's activation inputs and
    outputs (e.g. the [B, H, S, S] scores with attention="math", or [B, S, V] logits with
    logits="all"); earlier intermediates are assumed freed.
    prefill_values: the prefill ops' bytes_read, weight_bytes and bytes_written per op, where known
    (PhaseTotals.values); else the ops are built.
    """
    if prefill_values is None:
        ops = build_ops_unchecked(model, "prefill", batch_size, seq_len, 0, options)
        runs: Any = [(op.bytes_read, op.weight_bytes, op.bytes_written) for op in ops]
    else:
        runs = zip(*(prefill_values[q] for q in ("bytes_read", "weight_bytes", "bytes_written")))
    _, act_dtype_bytes = _act_bytes(model, options)
    residual = np.asarray(batch_size) * np.asarray(seq_len) * model.hidden_size * act_dtype_bytes
    largest: Any = 0.0
    for read, weight, written in runs:
        size = read - weight + written
        if type(size) in (int, float) and type(largest) is float:  # one workload: Python's max, as exact
            largest = max(largest, float(size))
        else:
            largest = np.maximum(largest, np.asarray(size, dtype=float))
    return residual + largest


def _act_bytes(model: ModelSpec, options: CostOptions) -> tuple[str, float]:
    from ..dtypes import dtype_bytes

    _, act, _ = options.resolved_dtypes(model.dtype)
    return act, dtype_bytes(act)


def workspace_bytes(hardware: HardwareSpec) -> float:
    return float(GPU_WORKSPACE_BYTES if hardware.device_type == "gpu" else 0)


def footprint(model: ModelSpec, hardware: HardwareSpec, options: CostOptions, batch_size: Any, prompt_len: Any,
              gen_len: Any, prefill_values: dict[str, list[Any]] | None = None) -> dict[str, Any]:
    """Weights + KV cache at the final length (prompt_len + gen_len - 1 cached tokens) + peak
    activations of the prefill (the larger phase) + workspace. Arrays broadcast."""
    _, _, kv_dtype = options.resolved_dtypes(model.dtype)
    weights = weights_bytes(model, options)
    final_tokens = np.asarray(prompt_len) + np.asarray(gen_len) - 1
    kv = model.kv_cache_bytes(batch_size=batch_size, seq_len=final_tokens, kv_dtype=kv_dtype,
                              tensor_parallel=options.tensor_parallel)
    activations = peak_activation_bytes(model, options, batch_size, prompt_len, prefill_values)
    workspace = workspace_bytes(hardware)
    total = weights + kv + activations + workspace
    return {
        "weights_bytes": weights,
        "kv_cache_bytes": kv,
        "activation_bytes": activations,
        "workspace_bytes": workspace,
        "total_bytes": total,
        "capacity_bytes": hardware.memory_capacity_bytes,
        "fits": np.asarray(total) <= hardware.memory_capacity_bytes,
    }


def largest_fitting(fits_at: Any, low: int, high: int) -> int | None:
    """The largest integer n in [low, high] with fits_at(n) true (fits_at monotone: true then false),
    by bisection; None when even `low` does not fit."""
    if not fits_at(low):
        return None
    if fits_at(high):
        return high
    lo, hi = low, high  # fits(lo), not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits_at(mid):
            lo = mid
        else:
            hi = mid
    return lo
