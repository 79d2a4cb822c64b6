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


def pipeline_stage_sizes(num_layers: int, stages: int) -> list[int]:
    """Layers per pipeline stage as vLLM splits them (vllm/distributed/utils.py get_pp_indices): num_layers // p
    each, the remainder one more each on the stages before the last, from the second-to-last backwards (the
    first stage holds the embedding, the last the LM head)."""
    sizes = [num_layers // stages] * stages
    for i in range(2, num_layers % stages + 2):
        sizes[-i] += 1
    return sizes


@lru_cache(maxsize=256)
def stage_weights_bytes(model: ModelSpec, options: CostOptions, stages: int) -> tuple[tuple[float, int], ...]:
    """(weight bytes, layers) of each pipeline stage: its layers' weights (pipeline_stage_sizes, in the model's
    layer order), the embedding on the first stage, the final norm and LM head on the last (which, with tied
    embeddings, holds its own copy of the embedding matrix as its LM head).
    approximation: every layer of a group weighs the same (exact: a group is identical layers)."""
    ops = build_ops_unchecked(model, "prefill", 1, 1, 0, options)
    groups = model.layer_groups
    prefixes = sorted(((f"layers.{g.tag}." if g.tag else "layers.", i) for i, g in enumerate(groups)),
                      key=lambda x: len(x[0]), reverse=True)
    per_layer = [0.0] * len(groups)
    first = last = 0.0
    for op in ops:
        if not op.param_bytes:
            continue
        if op.name.startswith("layers."):
            index = next(i for prefix, i in prefixes if op.name.startswith(prefix))
            per_layer[index] += float(op.param_bytes)  # one layer's (op.count: the group's layers)
        elif op.name.startswith("embed"):
            first += float(op.count * op.param_bytes)
        else:
            last += float(op.count * op.param_bytes)
    if stages > 1 and model.tie_word_embeddings:
        last += first  # the last stage's LM head: the embedding matrix, loaded there too
    out, start = [], 0
    for k, size in enumerate(pipeline_stage_sizes(len(model.layer_pattern), stages)):
        weights = sum(per_layer[g] for g in model.layer_pattern[start:start + size])
        weights += (first if k == 0 else 0.0) + (last if k == stages - 1 else 0.0)
        out.append((weights, size))
        start += size
    return tuple(out)


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
