"""Phase totals: prefill (one forward pass) and decode (every generated step, summed exactly).

The ops of a phase are evaluated together along a leading op axis (one numpy evaluation for one
workload; a large sweep op by op), from the per-run values the graph template replays for the workload.

Decode step i (i = 1 .. gen_len - 1) runs with kv_len = prompt_len + i - 1 cached tokens. Every
decode quantity is affine in the keys a step attends to (and constant once a sliding window is
full), so each op's time is piecewise affine in kv_len with breakpoints where two of its terms cross
or its window fills. Summing each affine piece by the trapezoid rule over its integer steps is exact:
no step is sampled or skipped, and a sweep of a million points stays one vectorised evaluation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ..cost.graph import build_ops_unchecked, graph_template
from ..cost.op import Op
from ..cost.workload import CostOptions
from ..models.spec import ModelSpec
from .roofline import OpColumns, OpCost, Roofline

PARTS = ("time_s", "compute_s", "memory_s", "overhead_s", "communication_s")
SUMS = ("matmul_flops", "vector_flops", "bytes")


class PhaseTotals:
    """Per-op totals over a phase (arrays broadcast over the sweep shape); index i is ops[i].

    per_op: PARTS and SUMS -> one entry per op, already times its count. names, kinds, counts: the ops'
    fixed fields; values: their per-run quantities by formula name (see cost.template.GraphTemplate's
    values_at), until taken (take_values). The Ops are made when first asked for (one simulate() needs none).
    """

    def __init__(self, per_op: dict[str, list[Any]], fixed: OpFields, values: dict[str, list[Any]],
                 ops: list[Op] | Callable[[], list[Op]]) -> None:
        self.per_op, self.values = per_op, values
        self.names, self.kinds, self.counts = fixed.names, fixed.kinds, fixed.counts
        self._ops = ops

    @property
    def ops(self) -> list[Op]:
        if callable(self._ops):
            self._ops = self._ops()
        return self._ops

    def take_values(self) -> dict[str, list[Any]] | None:
        """The per-run values, handed over and no longer held here (a sweep's arrays are large)."""
        values, self.values = self.values, None
        return values

    def total(self, key: str) -> Any:
        return sum(self.per_op[key]) if self.names else 0.0


@dataclass(frozen=True)
class OpFields:
    """The fields of a graph's ops that no workload changes, one entry per op; any subset of them as a
    chunk evaluated together, made once (`chunk`)."""

    ops: list[Op]
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    counts: tuple[int, ...]
    windows: tuple[float, ...]  # kv_window, inf without
    collectives: tuple[bool, ...]
    # decode: the ops whose quantities change with kv_len (their values carry the pair axis); steady: the others
    varying: tuple[int, ...]
    steady: tuple[int, ...]
    _chunks: dict[tuple[int, ...], _Chunk] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, ops: list[Op], varying: tuple[int, ...] = ()) -> OpFields:
        return cls(ops, tuple(op.name for op in ops), tuple(op.kind for op in ops), tuple(op.count for op in ops),
                   tuple(op.kv_window or np.inf for op in ops), tuple(bool(op.collective) for op in ops), varying,
                   tuple(i for i in range(len(ops)) if i not in varying))

    def chunk(self, indices: list[int]) -> _Chunk:
        """The ops of `indices` as one chunk (made once)."""
        key = tuple(indices)
        if key not in self._chunks:
            self._chunks[key] = _Chunk(OpColumns.of([self.ops[i] for i in indices]),
                                       np.array([self.counts[i] for i in indices], dtype=float),
                                       np.array([self.windows[i] for i in indices], dtype=float),
                                       any(self.collectives[i] for i in indices))
        return self._chunks[key]


@dataclass(frozen=True)
class _Chunk:
    """Ops evaluated together along an op axis: their roofline columns, counts and windows (inf without)."""

    columns: OpColumns
    counts: np.ndarray
    windows: np.ndarray
    collective: bool  # whether any of them is a collective

    def lifted(self, values: np.ndarray, ndim: int) -> np.ndarray:
        """Per-op numbers broadcasting over `ndim` workload axes."""
        return values.reshape(_lift_shape(len(values), ndim))


@lru_cache(maxsize=256)
def _template_fields(template: Any, phase: str) -> OpFields:
    """OpFields of a graph template's ops (made once per template); decode's varying ops found from
    the shapes of the values at a kv_len pair (as decode_totals evaluates them)."""
    varying: tuple[int, ...] = ()
    if phase == "decode":
        with np.errstate(all="ignore"):
            values = template.values_at(1, 1, np.array([0.0, 1.0]))
        varying = _paired(values)
    return OpFields.of(template.ops, varying)


def _paired(values: dict[str, list[Any]]) -> tuple[int, ...]:
    """The ops with a quantity of a trailing pair axis: those whose values change with kv_len."""
    runs = zip(*_per_run(values, range(len(values["matmul_flops"]))))
    return tuple(i for i, run in enumerate(runs) if any(np.ndim(v) and np.shape(v)[-1] == 2 for v in run))


class _Graph:
    """The ops of a phase at one workload: their per-run quantities (values) and fixed fields, and the
    Ops themselves on demand; from the graph template where there is one (fields made once)."""

    def __init__(self, model: ModelSpec, phase: str, B: Any, S: Any, L: Any, options: CostOptions) -> None:
        template = graph_template(model, phase, options)
        if template is None:
            ops = build_ops_unchecked(model, phase, B, S, L, options)
            self.values = _values_of(ops)
            self.fixed = OpFields.of(ops, _paired(self.values) if phase == "decode" else ())
            self.ops: list[Op] | Callable[[], list[Op]] = ops
        else:
            S = S if phase == "prefill" else 1
            self.values = template.values_at(B, S, L)
            self.fixed = _template_fields(template, phase)
            self.ops = lambda: template.ops_at(B, S, L)

    def totals(self, per_op: dict[str, list[Any]]) -> PhaseTotals:
        return PhaseTotals(per_op, self.fixed, self.values, self.ops)


def _values_of(ops: list[Op]) -> dict[str, list[Any]]:
    """Per formula quantity, its value for each op (None where an op has none)."""
    quantities = dict.fromkeys(quantity for op in ops for quantity in op.formulas)
    return {q: [op.formulas[q].value if q in op.formulas else None for op in ops] for q in quantities}


def _per_run(values: dict[str, list[Any]], indices: Iterable[int]) -> tuple[list[Any], ...]:
    """matmul_flops, vector_flops and bytes (read + written, as Op.bytes) per run of the ops of `indices`."""
    matmul, vector, read, written = ([values[q][i] for i in indices]
                                     for q in ("matmul_flops", "vector_flops", "bytes_read", "bytes_written"))
    return matmul, vector, [r + w for r, w in zip(read, written)]


def _parts(t: Any) -> tuple[Any, ...]:
    return t.time_s, t.compute_part_s, t.memory_part_s, t.overhead_part_s, t.communication_part_s


def _comm_s(roofline: Roofline, op: Op, message_bytes: Any) -> Any:
    return roofline.collective_s(op.collective, message_bytes, op.group_size) if op.collective else 0.0


def prefill_totals(model: ModelSpec, roofline: Roofline, options: CostOptions, batch_size: Any,
                   seq_len: Any) -> PhaseTotals:
    graph = _Graph(model, "prefill", batch_size, seq_len, 0, options)
    n = len(graph.fixed.names)
    per_op: dict[str, list[Any]] = {k: [None] * n for k in PARTS + SUMS}
    shape = _shape_of(batch_size, seq_len)  # of every value
    for chunk in _chunks(list(range(n)), shape):
        _steady(roofline, graph, chunk, 1, per_op, len(shape), pair_axis=False)
    return graph.totals(per_op)


def decode_totals(model: ModelSpec, roofline: Roofline, options: CostOptions, batch_size: Any,
                  first_kv_len: Any, steps: Any) -> PhaseTotals:
    """Sums over `steps` decode steps at kv_len = first_kv_len, first_kv_len + 1, ..."""
    # one graph evaluated at kv_len = L0 and L0 + 1 along a trailing axis: value and slope of each op (an
    # array batch gets the trailing axis too; a single batch size broadcasts as it is)
    L0 = np.asarray(first_kv_len, dtype=float)
    pair = L0[..., None] + np.array([0.0, 1.0])
    batch = np.asarray(batch_size)[..., None] if np.ndim(batch_size) else batch_size
    graph = _Graph(model, "decode", batch, 1, pair, options)
    steps = np.asarray(steps, dtype=float)
    n = len(graph.fixed.names)
    per_op: dict[str, list[Any]] = {k: [None] * n for k in PARTS + SUMS}
    shape = _shape_of(batch_size, L0)  # of every value without its pair axis
    # ops without kv_len in their formulas are the same every step; their values depend on the batch only
    for chunk in _chunks(list(graph.fixed.steady), np.shape(batch_size)):
        _steady(roofline, graph, chunk, steps, per_op, len(shape))
    for chunk in _chunks(list(graph.fixed.varying), shape):
        _trapezoid(roofline, graph, chunk, L0, steps, per_op, len(shape))
    return graph.totals(per_op)


def _shape_of(*values: Any) -> tuple[int, ...]:
    """The shape workload values broadcast to."""
    shapes = [np.shape(v) for v in values]
    return np.broadcast_shapes(*shapes) if any(shapes) else ()


# values per stack of ops evaluated at once: every op of one workload or a small sweep together; a large
# sweep op by op, as each op's arrays are large already (stacking them would only cost memory)
_CHUNK_VALUES = 1 << 16


def _chunks(indices: list[int], shape: tuple[int, ...]) -> list[list[int]]:
    """`indices` in consecutive chunks of at most _CHUNK_VALUES values of `shape` (one op at least)."""
    size = max(_CHUNK_VALUES // max(math.prod(shape), 1), 1)
    return [indices[i:i + size] for i in range(0, len(indices), size)]


def _trapezoid(roofline: Roofline, graph: _Graph, indices: list[int], L0: Any, steps: Any,
               per_op: dict[str, list[Any]], ndim: int) -> None:
    """Sums over the decode steps of ops whose quantities change with kv_len, all ops in one evaluation
    along a leading op axis."""
    chunk = graph.fixed.chunk(indices)
    columns = chunk.columns
    # each quantity at kv_len = [L0, L0 + 1] on a trailing pair axis (of length 1 where no op of the chunk
    # changes it): value and slope per step
    q = _quantities(graph.values, indices, ndim + 1)
    base, slopes = [x[..., 0] for x in q], [x[..., -1] - x[..., 0] for x in q]
    rows, cols = _rows(roofline, graph, indices, columns, ndim + 1)
    rows, cols = (None, None) if rows is None else (rows[..., 0], cols[..., 0])
    # approximation: a matmul keeps the row fraction of its first step's rows (decode: the batch, but the
    # latent expansion of mla="expand"), and an element-wise op whose size grows with kv_len (a concatenated
    # cache) the bandwidth fraction of its first step's size, so that its time stays affine and sums exactly
    cost0 = roofline.costs(columns, *base, rows, base[2], cols=cols)  # collectives never depend on kv_len
    cost1 = roofline.costs(columns, *(x[..., -1] for x in q), rows, base[2], cols=cols)
    c0, m0 = cost0.compute_s, cost0.memory_s
    cs, ms = cost1.compute_s - c0, cost1.memory_s - m0
    # offsets x = kv_len - first_kv_len in [0, steps - 1]; a window stops growth at W - 1 cached
    clamp = (chunk.lifted(chunk.windows, ndim) - 1) - L0
    launches = roofline.rates(columns, ndim)[3]
    ends, n = _segments([clamp, *roofline.crossings(c0, cs, m0, ms, launches)], steps)
    counts = chunk.lifted(chunk.counts, n.ndim - 2)  # n: op axis, workload axes, segments
    u = [np.minimum(end, clamp[..., None], out=end) for end in ends]  # each segment's first and last offset, clamped

    def parts_at(u: np.ndarray) -> tuple[np.ndarray, ...]:
        """PARTS but communication of one run at clamped offsets u (segment axis last), each affine in u."""
        return _parts(roofline.time(OpCost(c0[..., None] + cs[..., None] * u, m0[..., None] + ms[..., None] * u,
                                           launches[..., None])))[:-1]

    def quantity_at(value: np.ndarray, slope: np.ndarray, u: np.ndarray) -> np.ndarray:
        return value[..., None] + slope[..., None] * u

    def summed(first: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Each affine piece summed over its n integer offsets by the trapezoid rule: n * (first + last) / 2."""
        return counts * (n * (first + last) / 2.0).sum(axis=-1)

    if u[0].size > _CHUNK_VALUES:  # a large sweep: one quantity at a time (no stacked copies)
        totals: Any = [summed(a, b) for a, b in zip(parts_at(u[0]), parts_at(u[1]))]
        totals += [summed(quantity_at(v, slope, u[0]), quantity_at(v, slope, u[1])) for v, slope in zip(base, slopes)]
    else:  # every quantity at both ends in one stack: quantities, ends, op axis, workload axes, segments
        both = np.array(u)
        block = _block(parts_at(both) + tuple(quantity_at(v, slope, both) for v, slope in zip(base, slopes)))
        totals = summed(block[:, 0], block[:, 1])
    _put(per_op, _NOT_COMMUNICATION, indices, totals)
    _put_zeros(per_op, "communication_s", indices, totals[0])


def _steady(roofline: Roofline, graph: _Graph, indices: list[int], steps: Any, per_op: dict[str, list[Any]],
            ndim: int, pair_axis: bool = True) -> None:
    """steps * one run of each op, all ops in one evaluation along a leading op axis (prefill: steps = 1;
    decode: the ops that do not depend on kv_len, whose values carry a trailing pair axis of length 1)."""
    chunk = graph.fixed.chunk(indices)
    columns = chunk.columns
    axes = ndim + pair_axis

    def drop_pair(x: np.ndarray) -> np.ndarray:
        return x[..., 0] if pair_axis else x

    q = [drop_pair(x) for x in _quantities(graph.values, indices, axes)]
    rows, cols = _rows(roofline, graph, indices, columns, axes)
    comm_s: Any = 0.0
    if chunk.collective:
        message_bytes = graph.values["comm_bytes"]
        comm_s = drop_pair(_stack([_comm_s(roofline, graph.fixed.ops[i], message_bytes[i]) for i in indices], axes))
    cost = roofline.costs(columns, *q, None if rows is None else drop_pair(rows), comm_s=comm_s,
                          cols=None if cols is None else drop_pair(cols))
    counts = chunk.lifted(chunk.counts, max(ndim, np.ndim(steps))) * steps
    parts = _parts(roofline.time(cost))
    # without a collective, the communication totals are zeros: put without a pass over an array
    keys, parts = (PARTS + SUMS, parts) if chunk.collective else (_NOT_COMMUNICATION, parts[:-1])
    totals = _in_groups((*parts, *q), lambda block: counts * block)
    _put(per_op, keys, indices, totals)
    if not chunk.collective:
        _put_zeros(per_op, "communication_s", indices, totals[0])


_NOT_COMMUNICATION = (*PARTS[:-1], *SUMS)  # PARTS + SUMS but communication_s (the last of PARTS)


def _quantities(values: dict[str, list[Any]], indices: list[int], ndim: int) -> list[np.ndarray]:
    """matmul_flops, vector_flops and bytes per run of the ops of `indices`, each stacked along a leading
    op axis with `ndim` axes after it."""
    columns = _per_run(values, indices)
    if len(indices) == 1:  # a large sweep's op by itself (see _chunks): no copies
        return [_stack(column, ndim) for column in columns]
    block = _stack(columns[0] + columns[1] + columns[2], ndim)  # one stack: 3 quantities x ops
    return list(block.reshape((3, len(indices), *block.shape[1:])))


def _rows(roofline: Roofline, graph: _Graph, indices: list[int], columns: OpColumns, ndim: int
          ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """matmul_rows and matmul_cols of the ops, where the roofline reads them (1.0 for ops without, never
    read)."""
    if not roofline.reads_rows(columns):
        return None, None
    rows, cols = graph.values["matmul_rows"], graph.values.get("matmul_cols", [None] * len(graph.values["matmul_rows"]))
    return (_stack([1.0 if rows[i] is None else rows[i] for i in indices], ndim),
            _stack([1.0 if cols[i] is None else cols[i] for i in indices], ndim))


def _stack(values: list[Any], ndim: int) -> np.ndarray:
    """Values of several ops (at most `ndim` axes each) along a new leading op axis, as floats broadcast to
    one shape, with `ndim` axes after the op axis (so that stacks of different quantities broadcast)."""
    stacked = np.asarray(values[0])[None] if len(values) == 1 else _block(values)
    if stacked.ndim == ndim + 1:
        return stacked
    return stacked.reshape(_lift_shape(len(values), ndim - stacked.ndim + 1) + stacked.shape[1:])


def _block(values: list[Any] | tuple[Any, ...]) -> np.ndarray:
    """Numbers or arrays as floats along a new leading axis, broadcast to one shape."""
    try:  # numbers, or arrays of one shape
        return np.array(values, dtype=float)
    except ValueError:
        return np.array(np.broadcast_arrays(*values), dtype=float)


def _lift_shape(count: int, ndim: int) -> tuple[int, ...]:
    """An op axis of `count` ops followed by `ndim` axes of length 1."""
    return (count,) + (1,) * ndim


def _in_groups(arrays: tuple[np.ndarray, ...] | list[np.ndarray], fn: Callable[[np.ndarray], np.ndarray]
               ) -> list[np.ndarray] | np.ndarray:
    """[fn(a[None])[0] for a in arrays], with small arrays stacked on the leading axis for one call of fn
    (fn element-wise along that axis: the same values)."""
    if max(a.size for a in arrays) > _CHUNK_VALUES:
        return [fn(a[None])[0] for a in arrays]
    return fn(_block(arrays))


def _put(per_op: dict[str, list[Any]], keys: tuple[str, ...], indices: list[int],
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


def _put_zeros(per_op: dict[str, list[Any]], key: str, indices: list[int], like: np.ndarray) -> None:
    """Totals of 0.0 of the shape of `like` (op axis first), as read-only views: no memory of their own."""
    _put(per_op, (key,), indices, [np.broadcast_to(0.0, like.shape)])


def _segments(cuts: list[Any], steps: Any) -> tuple[np.ndarray, np.ndarray]:
    """Integer segments of offsets 0..steps-1 split after floor(cut) for every cut.

    Returns ([first offset, last offset], count), each with a trailing segment axis (the offsets with a
    leading axis of the two); empty segments have count 0.
    """
    last = np.asarray(steps, dtype=float) - 1.0

    def floored(cut: np.ndarray) -> np.ndarray:  # the last offset before the cut, in [-1, last]
        return np.clip(np.floor(np.where(np.isfinite(cut), cut, 1e300)), -1.0, last)

    if last.ndim == 0 and all(np.shape(c) == np.shape(cuts[0]) for c in cuts):  # one workload: all cuts at once
        inner = floored(np.concatenate([c[..., None] for c in cuts], axis=-1))
    else:  # a sweep: each cut floored at its own (maybe smaller) shape, then broadcast
        inner = np.concatenate([f[..., None] for f in np.broadcast_arrays(*map(floored, cuts))], axis=-1)
    inner.sort(axis=-1)
    shape = inner.shape[:-1]
    bounds = np.concatenate([np.full((*shape, 1), -1.0), inner, np.full((*shape, 1), last[..., None])], axis=-1)
    lo = bounds[..., :-1] + 1.0
    hi = bounds[..., 1:]
    count = np.maximum(hi - lo + 1.0, 0.0)
    hi = np.maximum(hi, lo)  # empty segments evaluate at a harmless point; their count is 0
    return [lo, hi], count


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
        t = roofline.time(roofline.cost(0.0, 0.0, 0.0, p2p.precision, 0, _comm_s(roofline, p2p, p2p.comm_bytes)))
        for key, value in zip(PARTS, _parts(t)):
            per_op[key].append(p2p.count * np.asarray(steps, dtype=float) * value)
        for key in SUMS:
            per_op[key].append(0.0)
        ops.append(p2p)
    return PhaseTotals(per_op, OpFields.of(ops), _values_of(ops), ops)
