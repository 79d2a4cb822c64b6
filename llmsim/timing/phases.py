"""Phase totals: prefill (one forward pass) and decode (every generated step, summed exactly).

The entry points: prefill_totals, decode_totals and pipelined, each giving a PhaseTotals: per op, its
PARTS (time and its compute, memory, overhead and communication parts) and SUMS (FLOPs and bytes)
over the whole phase. The ops of a phase are evaluated together along a leading op axis (one numpy
evaluation for one workload; a large sweep op by op), from the per-run values the graph template
replays for the workload.

Decode step i (i = 1 .. gen_len - 1) runs with kv_len = prompt_len + i - 1 cached tokens. An op that
does not depend on kv_len costs steps x one run; one that does has a time piecewise affine in kv_len,
summed exactly by the trapezoid rule over each affine piece (the math: decode_sum).

The machinery, each module importing only those below it:
    phases       these entry points
    decode_sum   the exact sum over decode steps of the ops that change with kv_len
    op_totals    PARTS and SUMS; steps x one run of the ops that do not
    op_fields    a phase's graph at one workload: its ops' fixed fields and per-run values
    stacking     numpy plumbing: per-op values along a leading op axis, and back into per-op lists
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..cost.op import Op
from ..cost.workload import CostOptions
from ..models.spec import ModelSpec
from .decode_sum import trapezoid_totals
from .host_bound import with_host_dispatch
from .op_fields import OpFields, PhaseGraph, values_of
from .op_totals import PARTS, SUMS, collective_time_s, parts_of, steady_totals
from .roofline import Roofline
from .stacking import op_chunks
from .sustained import sustained_scale, throttled_parts

__all__ = ["PARTS", "SUMS", "PhaseTotals", "decode_totals", "pipelined", "prefill_totals"]


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
        self.fixed = fixed  # the ops' workload-independent fields (OpFields.ops: the ops at one workload)
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


def prefill_totals(model: ModelSpec, roofline: Roofline, options: CostOptions, batch_size: Any,
                   seq_len: Any, host_bound: bool = True) -> PhaseTotals:
    """Totals of one forward pass over `seq_len` tokens of each of `batch_size` sequences: replaying CUDA
    graphs where Roofline.prefill_captured says so, else under Roofline.for_prefill (arrays: per point);
    its compute-bound work past the onset at the device's sustained clock (timing.sustained); an uncaptured
    pass at the longer of its kernels and its host dispatch (timing.host_bound; host_bound=False: its kernels
    alone, for a caller that adds the dispatch of a pass it composes itself)."""
    shape = _shape_of(batch_size, seq_len)
    captured = roofline.prefill_captured(np.multiply(batch_size, seq_len))
    graph = PhaseGraph(model, "prefill", batch_size, seq_len, 0, options)
    if np.all(captured):
        return _sustained(_one_pass(roofline, graph, shape), roofline)
    uncaptured = _one_pass(roofline.for_prefill(), graph, shape)
    if np.any(captured):  # some points each way: each point's parts from its own (FLOPs and bytes are the same)
        replayed = _one_pass(roofline, graph, shape)
        for key in PARTS:
            uncaptured.per_op[key] = [np.where(captured, a, b) for a, b in zip(replayed.per_op[key],
                                                                                uncaptured.per_op[key])]
    totals = _sustained(uncaptured, roofline)
    if host_bound:
        _host_dispatch(totals, roofline.for_prefill(), True if not np.any(captured) else ~np.asarray(captured))
    return totals


def _host_dispatch(totals: PhaseTotals, uncaptured: Roofline, where: Any) -> None:
    """An uncaptured pass's host dispatch, its excess over the kernels spread over the ops (timing.host_bound)."""
    launches = [float(count) * float(op.launches) for count, op in zip(totals.counts, totals.fixed.ops)]
    per_op = totals.per_op
    per_op["time_s"], per_op["overhead_s"] = with_host_dispatch(
        per_op["time_s"], per_op["overhead_s"], launches, uncaptured.pass_dispatch_s, uncaptured.async_host, where,
        [kind == "host" for kind in totals.kinds])


def _sustained(totals: PhaseTotals, roofline: Roofline) -> PhaseTotals:
    """A prefill pass's totals with each op's compute part stretched by the pass's sustained_scale (as given
    on a device without a sustained clock)."""
    if roofline.sustained is None or not totals.names:
        return totals
    scale = sustained_scale(totals.total("compute_s"), *roofline.sustained)
    if type(scale) is float and scale == 1.0:
        return totals
    per_op = totals.per_op
    parts = [throttled_parts(t, c, scale) for t, c in zip(per_op["time_s"], per_op["compute_s"])]
    per_op["time_s"], per_op["compute_s"] = [t for t, _ in parts], [c for _, c in parts]
    return totals


def _one_pass(roofline: Roofline, graph: PhaseGraph, shape: tuple[int, ...]) -> PhaseTotals:
    """Totals of every op of the graph run once (values of `shape`)."""
    n = len(graph.fixed.names)
    per_op: dict[str, list[Any]] = {k: [None] * n for k in PARTS + SUMS}
    for chunk in op_chunks(list(range(n)), shape):
        steady_totals(roofline, graph, chunk, 1, per_op, len(shape), pair_axis=False)
    return PhaseTotals(per_op, graph.fixed, graph.values, graph.ops)


def decode_totals(model: ModelSpec, roofline: Roofline, options: CostOptions, batch_size: Any,
                  first_kv_len: Any, steps: Any) -> PhaseTotals:
    """Sums over `steps` decode steps at kv_len = first_kv_len, first_kv_len + 1, ..."""
    # one graph evaluated at kv_len = L0 and L0 + 1 along a trailing axis: value and slope of each op (an
    # array batch gets the trailing axis too; a single batch size broadcasts as it is)
    L0 = np.asarray(first_kv_len, dtype=float)
    pair = L0[..., None] + np.array([0.0, 1.0])  # [*workload axes, 2]
    batch = np.asarray(batch_size)[..., None] if np.ndim(batch_size) else batch_size
    graph = PhaseGraph(model, "decode", batch, 1, pair, options)
    steps = np.asarray(steps, dtype=float)
    n = len(graph.fixed.names)
    per_op: dict[str, list[Any]] = {k: [None] * n for k in PARTS + SUMS}
    shape = _shape_of(batch_size, L0)  # of every value without its pair axis
    # ops without kv_len in their formulas are the same every step; their values depend on the batch only
    for chunk in op_chunks(list(graph.fixed.steady), np.shape(batch_size)):
        steady_totals(roofline, graph, chunk, steps, per_op, len(shape))
    for chunk in op_chunks(list(graph.fixed.varying), shape):
        trapezoid_totals(roofline, graph, chunk, L0, steps, per_op, len(shape))
    return PhaseTotals(per_op, graph.fixed, graph.values, graph.ops)


def decode_step_totals(model: ModelSpec, roofline: Roofline, options: CostOptions, batch_size: Any,
                       kv_len: Any) -> PhaseTotals:
    """Totals of one decode step at `kv_len`: decode_totals(..., steps=1) by the prefill's path (every op
    evaluated once at its point, no value-and-slope pair), about half the work; find_crossover's evaluator."""
    graph = PhaseGraph(model, "decode", batch_size, 1, kv_len, options)
    return _one_pass(roofline, graph, _shape_of(batch_size, kv_len))


def _shape_of(*values: Any) -> tuple[int, ...]:
    """The shape workload values broadcast to."""
    shapes = [np.shape(v) for v in values]
    return np.broadcast_shapes(*shapes) if any(shapes) else ()


def pipelined(totals: PhaseTotals, roofline: Roofline, stages: int, microbatches: int, p2p: Op,
              steps: Any = 1, steady: bool = False) -> PhaseTotals:
    """Totals of one GPU of a `stages`-deep pipeline, from the totals of the whole model run on one
    micro-batch (batch / microbatches sequences).

    Each of the m micro-batches passes p stages holding 1/p of the model each. One pass that fills and
    drains the pipeline (a prefill; decode in lock-step) takes (m + p - 1) stage times (the pipeline bubble
    is the p - 1). In steady state (steady=True: decode steps with the micro-batches kept in flight across
    steps, as serving engines' pipeline parallelism runs them) a stage starts a micro-batch's next token as
    soon as it has passed the last stage, so a step of every micro-batch takes max(m, p) stage times: no
    bubble once m >= p, idle stages when m < p. Plus the activation hand-overs between stages on the
    critical path ((p - 1) point-to-point transfers per step); one GPU does m/p of the whole model's FLOPs
    and bytes of one micro-batch.
    approximation: layers, embedding and LM head spread evenly over the stages; the hand-overs are not
    overlapped with other micro-batches' work.
    """
    if stages == 1 and microbatches == 1:
        return totals
    time_scale = (max(microbatches, stages) if steady else microbatches + stages - 1) / stages
    work_scale = microbatches / stages
    per_op = {key: [v * (time_scale if key in PARTS else work_scale) for v in values]
              for key, values in totals.per_op.items()}
    ops = list(totals.ops)
    if stages > 1:
        t = roofline.time(roofline.cost(0.0, 0.0, 0.0, p2p.precision, 0,
                                        collective_time_s(roofline, p2p, p2p.comm_bytes)))
        for key, value in zip(PARTS, parts_of(t)):
            per_op[key].append(p2p.count * np.asarray(steps, dtype=float) * value)
        for key in SUMS:
            per_op[key].append(0.0)
        ops.append(p2p)
    return PhaseTotals(per_op, OpFields.of(ops), values_of(ops), ops)
