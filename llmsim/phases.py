"""Phase totals: prefill (one forward pass) and decode (every generated step, summed exactly).

Decode step i (i = 1 .. gen_len - 1) runs with kv_len = prompt_len + i - 1 cached tokens. Every
decode quantity is affine in the keys a step attends to (and constant once a sliding window is
full), so each op's time is piecewise affine in kv_len with breakpoints where two of its terms cross
or its window fills. Summing each affine piece by the trapezoid rule over its integer steps is exact:
no step is sampled or skipped, and a sweep of a million points stays one vectorised evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .graph import build_ops_unchecked
from .model import ModelSpec
from .ops import Op
from .roofline import OpCost, Roofline
from .workload import CostOptions

PARTS = ("time_s", "compute_s", "memory_s", "overhead_s", "communication_s")
SUMS = ("matmul_flops", "vector_flops", "bytes")


@dataclass(frozen=True)
class PhaseTotals:
    """Per-op totals over a phase (arrays broadcast over the sweep shape); index i is ops[i]."""

    ops: list[Op]
    per_op: dict[str, list[Any]]  # PARTS and SUMS -> one entry per op, already times op.count

    def total(self, key: str) -> Any:
        return sum(self.per_op[key]) if self.ops else 0.0


def _per_run(op: Op) -> tuple[Any, Any, Any]:
    return op.matmul_flops, op.vector_flops, op.bytes


def _parts(t: Any) -> tuple[Any, ...]:
    return t.time_s, t.compute_part_s, t.memory_part_s, t.overhead_part_s, t.communication_part_s


def _comm_s(roofline: Roofline, op: Op) -> Any:
    return roofline.collective_s(op.collective, op.comm_bytes, op.group_size) if op.collective else 0.0


def prefill_totals(model: ModelSpec, roofline: Roofline, options: CostOptions, batch_size: Any,
                   seq_len: Any) -> PhaseTotals:
    ops = build_ops_unchecked(model, "prefill", batch_size, seq_len, 0, options)
    per_op: dict[str, list[Any]] = {k: [] for k in PARTS + SUMS}
    for op in ops:
        matmul, vector, moved = _per_run(op)
        t = roofline.time(roofline.cost(matmul, vector, moved, op.precision, op.launches, _comm_s(roofline, op),
                                        op.kind, op.matmul_rows, cols=op.matmul_cols,
                                        layout=op.weight_layout))
        for key, value in zip(PARTS, _parts(t)):
            per_op[key].append(op.count * value)
        for key, value in zip(SUMS, (matmul, vector, moved)):
            per_op[key].append(op.count * np.asarray(value, dtype=float))
    return PhaseTotals(ops=ops, per_op=per_op)


def decode_totals(model: ModelSpec, roofline: Roofline, options: CostOptions, batch_size: Any,
                  first_kv_len: Any, steps: Any) -> PhaseTotals:
    """Sums over `steps` decode steps at kv_len = first_kv_len, first_kv_len + 1, ..."""
    # one graph evaluated at kv_len = L0 and L0 + 1 along a trailing axis: value and slope of each op
    L0 = np.asarray(first_kv_len, dtype=float)
    pair = np.stack([L0, L0 + 1], axis=-1)
    at01 = build_ops_unchecked(model, "decode", np.asarray(batch_size)[..., None], 1, pair, options)
    steps = np.asarray(steps, dtype=float)
    per_op: dict[str, list[Any]] = {k: [None] * len(at01) for k in PARTS + SUMS}
    constant: list[int] = []
    for index, op0 in enumerate(at01):
        both = [np.asarray(v, dtype=float) for v in _per_run(op0)]
        if not any(v.ndim and v.shape[-1] == 2 for v in both):
            constant.append(index)  # no kv_len in its formulas: the same every step
            continue
        q0 = [_first(v) for v in both]
        q1 = [v[..., -1] if v.ndim else v for v in both]
        slopes = [b - a for a, b in zip(q0, q1)]
        comm_s = 0.0  # collectives never depend on kv_len
        rows = _first(op0.matmul_rows)  # rows never depend on kv_len (decode: the batch)
        cols = _first(op0.matmul_cols)  # nor do a matmul's output columns (attention is not a matmul op)
        # approximation: an element-wise op whose size grows with kv_len (a concatenated cache) keeps the
        # bandwidth fraction of its first step's size, so that its time stays affine and sums exactly
        size = q0[2]
        cost0 = roofline.cost(*q0, op0.precision, op0.launches, comm_s, op0.kind, rows, size, cols, op0.weight_layout)
        cost1 = roofline.cost(*q1, op0.precision, op0.launches, comm_s, op0.kind, rows, size, cols, op0.weight_layout)
        c0, m0 = np.asarray(cost0.compute_s, dtype=float), np.asarray(cost0.memory_s, dtype=float)
        cs, ms = cost1.compute_s - c0, cost1.memory_s - m0
        # offsets x = kv_len - first_kv_len in [0, steps - 1]; a window stops growth at W - 1 cached
        clamp = (op0.kv_window - 1) - L0 if op0.kv_window else np.full_like(L0, np.inf)
        cuts = [clamp, *roofline.crossings(c0, cs, m0, ms, op0.launches)]
        segments = _segments(cuts, steps)

        def at(x: Any, c0: Any = c0, cs: Any = cs, m0: Any = m0, ms: Any = ms, clamp: Any = clamp,
               launches: int = op0.launches, comm_s: Any = comm_s) -> tuple[Any, ...]:
            u = np.minimum(x, clamp[..., None]) if np.ndim(clamp) else np.minimum(x, clamp)
            cost = OpCost(_lift(c0) + _lift(cs) * u, _lift(m0) + _lift(ms) * u, launches, _lift(comm_s))
            t = roofline.time(cost)
            return _parts(t)

        lo, hi, n = segments
        f_lo, f_hi = at(lo), at(hi)
        for key, a, b in zip(PARTS, f_lo, f_hi):
            per_op[key][index] = op0.count * np.sum(n * (a + b) / 2.0, axis=-1)
        u_lo = np.minimum(lo, _lift(clamp))
        u_hi = np.minimum(hi, _lift(clamp))
        for key, base, slope in zip(SUMS, q0, slopes):
            a = _lift(base) + _lift(slope) * u_lo
            b = _lift(base) + _lift(slope) * u_hi
            per_op[key][index] = op0.count * np.sum(n * (a + b) / 2.0, axis=-1)
    _constant_ops(roofline, [at01[i] for i in constant], constant, steps, per_op)
    return PhaseTotals(ops=at01, per_op=per_op)


def _constant_ops(roofline: Roofline, ops: list[Op], indices: list[int], steps: Any,
                  per_op: dict[str, list[Any]], pair_axis: bool = True) -> None:
    """steps * one run of each op, all ops in one vectorised evaluation (for decode: the ops that do
    not depend on kv_len, whose values carry a trailing pair axis of length 1)."""
    if not ops:
        return
    values = [[np.asarray(v, dtype=float) for v in (*_per_run(op), _comm_s(roofline, op))] for op in ops]
    if pair_axis:
        values = [[_first(v) for v in row] for row in values]
    shape = np.broadcast_shapes(*(v.shape for row in values for v in row))
    if shape == ():  # scalars (one simulate()): one array per quantity, no broadcasting needed
        stacked = [np.array([row[j] for row in values]) for j in range(4)]
    else:
        stacked = [np.stack([np.broadcast_to(row[j], shape) for row in values]) for j in range(4)]
    lift = (len(ops),) + (1,) * len(shape)
    matmul_peak = np.array([roofline.matmul_flops_per_s(op.precision) for op in ops]).reshape(lift)
    vector_peak = np.array([roofline.vector_flops_per_s(op.precision) for op in ops]).reshape(lift)
    launches = np.array([op.launches for op in ops], dtype=float).reshape(lift)
    bandwidth = np.array([roofline.bandwidth_for(op.kind) for op in ops]).reshape(lift)
    scales = [roofline.row_scale(op.kind, op.precision, *((_first(op.matmul_rows), _first(op.matmul_cols))
                                                          if pair_axis else (op.matmul_rows, op.matmul_cols)),
                                 layout=op.weight_layout)
              for op in ops]
    scale = np.stack([np.broadcast_to(np.asarray(v, dtype=float), shape) for v in scales])
    sizes = [roofline.size_scale(op.kind, op.precision, stacked[2][row]) for row, op in enumerate(ops)]
    size_scale = np.stack([np.broadcast_to(np.asarray(v, dtype=float), shape) for v in sizes])
    cost = OpCost((stacked[0] / matmul_peak + stacked[1] / vector_peak) * scale,
                  stacked[2] / bandwidth * scale * size_scale, launches, stacked[3])  # type: ignore[arg-type]
    counts = np.array([op.count for op in ops], dtype=float).reshape(lift) * steps
    for key, value in zip(PARTS + SUMS, (*_parts(roofline.time(cost)), *stacked[:3])):
        scaled = counts * value
        for row, index in enumerate(indices):
            per_op[key][index] = scaled[row]


def _first(x: Any) -> Any:
    """A decode value without its trailing pair axis (None stays None)."""
    if x is None:
        return None
    x = np.asarray(x, dtype=float)
    return x[..., 0] if x.ndim else x


def _lift(x: Any) -> Any:
    """Add a trailing axis for the segments."""
    return np.asarray(x, dtype=float)[..., None]


def _segments(cuts: list[Any], steps: Any) -> tuple[Any, Any, Any]:
    """Integer segments of offsets 0..steps-1 split after floor(cut) for every cut.

    Returns (first offset, last offset, count) with a trailing segment axis; empty segments have
    count 0.
    """
    last = np.asarray(steps, dtype=float) - 1.0
    floors = [np.clip(np.floor(np.where(np.isfinite(c), c, 1e300)), -1.0, last) for c in cuts]
    shape = np.broadcast_shapes(*(np.shape(f) for f in floors), np.shape(last))
    inner = np.sort(np.stack([np.broadcast_to(f, shape) for f in floors], axis=-1), axis=-1)
    bounds = np.concatenate(
        [np.full((*shape, 1), -1.0), inner, np.broadcast_to(last, shape)[..., None]], axis=-1
    )
    lo = bounds[..., :-1] + 1.0
    hi = bounds[..., 1:]
    count = np.maximum(hi - lo + 1.0, 0.0)
    hi = np.maximum(hi, lo)  # empty segments evaluate at a harmless point; their count is 0
    return lo, hi, count


def pipelined(totals: PhaseTotals, roofline: Roofline, stages: int, microbatches: int, p2p: Op,
              steps: Any = 1) -> PhaseTotals:
    """Totals of one GPU of a `stages`-deep pipeline, from the totals of the whole model run on one
    micro-batch (batch / microbatches sequences).

    Each of the m micro-batches passes p stages holding 1/p of the model each, so the phase takes
    (m + p - 1) stage times (the pipeline bubble is the p - 1), plus the activation hand-overs between
    stages on the critical path ((p - 1) point-to-point transfers per step); one GPU does m/p of the
    whole model's FLOPs and bytes of one micro-batch.
    approximation: layers, embedding and LM head spread evenly over the stages.
    """
    if stages == 1 and microbatches == 1:
        return totals
    time_scale = (microbatches + stages - 1) / stages
    work_scale = microbatches / stages
    per_op = {key: [v * (time_scale if key in PARTS else work_scale) for v in values]
              for key, values in totals.per_op.items()}
    ops = list(totals.ops)
    if stages > 1:
        t = roofline.time(roofline.cost(0.0, 0.0, 0.0, p2p.precision, 0, _comm_s(roofline, p2p)))
        for key, value in zip(PARTS, _parts(t)):
            per_op[key].append(p2p.count * np.asarray(steps, dtype=float) * value)
        for key in SUMS:
            per_op[key].append(0.0)
        ops.append(p2p)
    return PhaseTotals(ops=ops, per_op=per_op)
