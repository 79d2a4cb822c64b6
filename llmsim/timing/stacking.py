"""Numpy plumbing of the phase totals: the values of many ops along a leading op axis, and back.

A phase evaluates a chunk of ops at once: each quantity of the chunk stacked as [op, *workload axes]
(`stack_ops`), evaluated element-wise, then each op's total put back into its per-op list (`put`). A
large sweep goes op by op instead (`op_chunks`), as each op's arrays are large already. Nothing here
knows what an op is.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

# values per stack of ops evaluated at once: every op of one workload or a small sweep together; a large
# sweep op by op, as each op's arrays are large already (stacking them would only cost memory)
CHUNK_VALUES = 1 << 16


def op_chunks(indices: list[int], shape: tuple[int, ...]) -> list[list[int]]:
    """`indices` in consecutive chunks of at most CHUNK_VALUES values of `shape` (one op at least)."""
    size = max(CHUNK_VALUES // max(math.prod(shape), 1), 1)
    return [indices[i:i + size] for i in range(0, len(indices), size)]


def stack_ops(values: list[Any], ndim: int) -> np.ndarray:
    """Values of several ops (at most `ndim` axes each) along a new leading op axis, as floats broadcast to
    one shape, with `ndim` axes after the op axis (so that stacks of different quantities broadcast)."""
    # shape: [op, *workload axes] with exactly ndim axes after the op axis (missing ones of length 1)
    stacked = np.asarray(values[0])[None] if len(values) == 1 else broadcast_block(values)
    if stacked.ndim == ndim + 1:
        return stacked
    return stacked.reshape(lift_shape(len(values), ndim - stacked.ndim + 1) + stacked.shape[1:])


def broadcast_block(values: list[Any] | tuple[Any, ...]) -> np.ndarray:
    """Numbers or arrays as floats along a new leading axis, broadcast to one shape."""
    # shape: [len(values), *broadcast shape of the values]
    shapes = {getattr(v, "shape", ()) for v in values}
    if len(shapes) > 1:  # numbers and arrays mixed: each written into its row of the broadcast shape (np.array
        # would refuse them only after a slow attempt; np.broadcast_arrays makes a view per value first)
        block = np.empty((len(values), *np.broadcast_shapes(*shapes)))
        for row, value in zip(block, values):
            row[...] = value
        return block
    try:  # numbers, or arrays of one shape
        return np.array(values, dtype=float)
    except ValueError:
        return np.array(np.broadcast_arrays(*values), dtype=float)


def lift_shape(count: int, ndim: int) -> tuple[int, ...]:
    """An op axis of `count` ops followed by `ndim` axes of length 1."""
    return (count,) + (1,) * ndim


def in_groups(arrays: tuple[np.ndarray, ...] | list[np.ndarray], fn: Callable[[np.ndarray], np.ndarray]
              ) -> list[np.ndarray] | np.ndarray:
    """[fn(a[None])[0] for a in arrays], with small arrays stacked on the leading axis for one call of fn
    (fn element-wise along that axis: the same values)."""
    if max(a.size for a in arrays) > CHUNK_VALUES:
        return [fn(a[None])[0] for a in arrays]
    return fn(broadcast_block(arrays))


def put(per_op: dict[str, list[Any]], keys: tuple[str, ...], indices: list[int],
        totals: list[np.ndarray] | np.ndarray) -> None:
    """Each key's totals (op axis first) into its per-op list: Python floats for one workload, arrays for a
    sweep. `indices` are sorted: all of them are every op, in order."""
    if isinstance(totals, np.ndarray) and totals.ndim == 2:  # one workload
        totals = totals.tolist()
    for key, total in zip(keys, totals):
        values = total.tolist() if isinstance(total, np.ndarray) and total.ndim == 1 else list(total)
        column = per_op[key]
        if len(indices) == len(column):
            per_op[key] = values
        else:
            for index, value in zip(indices, values):
                column[index] = value


def put_zeros(per_op: dict[str, list[Any]], key: str, indices: list[int], like: np.ndarray) -> None:
    """Totals of 0.0 of the shape of `like` (op axis first), as read-only views: no memory of their own."""
    put(per_op, (key,), indices, [np.broadcast_to(0.0, like.shape)])
