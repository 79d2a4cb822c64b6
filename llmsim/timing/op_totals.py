"""Per-op totals of a phase: what they hold (PARTS, SUMS), and the totals of ops whose every run is the same.

An op that does not depend on kv_len costs the same on every step it runs, so its total over a phase
is `steps` times one run (prefill: one run; decode: the ops whose formulas hold no kv_len, e.g. the
weight matmuls). The ops that do change with kv_len are summed in decode_sum.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cost.op import Op
from .op_fields import PhaseGraph, kernel_coords, matmul_rows_cols, quantities
from .roofline import Roofline
from .stacking import in_groups, put, put_zeros, stack_ops

PARTS = ("time_s", "compute_s", "memory_s", "overhead_s", "communication_s")
SUMS = ("matmul_flops", "vector_flops", "bytes")
NOT_COMMUNICATION = (*PARTS[:-1], *SUMS)  # PARTS + SUMS but communication_s (the last of PARTS)


def parts_of(t: Any) -> tuple[Any, ...]:
    """PARTS of one OpTime, in order."""
    return t.time_s, t.compute_part_s, t.memory_part_s, t.overhead_part_s, t.communication_part_s


def collective_time_s(roofline: Roofline, op: Op, message_bytes: Any) -> Any:
    """The time of an op's collective for messages of `message_bytes` (0.0 for an op without)."""
    return roofline.collective_s(op.collective, message_bytes, op.group_size) if op.collective else 0.0


def steady_totals(roofline: Roofline, graph: PhaseGraph, indices: list[int], steps: Any,
                  per_op: dict[str, list[Any]], ndim: int, pair_axis: bool = True) -> None:
    """steps * one run of each op, all ops in one evaluation along a leading op axis (prefill: steps = 1;
    decode: the ops that do not depend on kv_len, whose values carry a trailing pair axis of length 1)."""
    chunk = graph.fixed.chunk(indices)
    columns = chunk.columns
    axes = ndim + pair_axis

    def drop_pair(x: np.ndarray) -> np.ndarray:
        return x[..., 0] if pair_axis else x

    # q: matmul_flops, vector_flops, bytes per run, each [op, *workload axes]
    q = [drop_pair(x) for x in quantities(graph.values, indices, axes)]
    rows, cols = matmul_rows_cols(roofline, graph, indices, columns, axes)
    comm_s: Any = 0.0
    if chunk.collective:
        message_bytes = graph.values["comm_bytes"]
        comm_s = drop_pair(stack_ops([collective_time_s(roofline, graph.fixed.ops[i], message_bytes[i])
                                      for i in indices], axes))
    x, y = kernel_coords(roofline, graph, indices, columns, axes)
    measured = None if x is None else roofline.measured_scale(columns, *q, drop_pair(x), drop_pair(y), ndim)
    cost = roofline.costs(columns, *q, None if rows is None else drop_pair(rows), comm_s=comm_s,
                          cols=None if cols is None else drop_pair(cols), measured=measured)
    counts = chunk.lifted(chunk.counts, max(ndim, np.ndim(steps))) * steps  # runs per phase: count * steps
    parts = parts_of(roofline.time(cost))
    # without a collective, the communication totals are zeros: put without a pass over an array
    keys, parts = (PARTS + SUMS, parts) if chunk.collective else (NOT_COMMUNICATION, parts[:-1])
    totals = in_groups((*parts, *q), lambda block: counts * block)
    put(per_op, keys, indices, totals)
    if not chunk.collective:
        put_zeros(per_op, "communication_s", indices, totals[0])
