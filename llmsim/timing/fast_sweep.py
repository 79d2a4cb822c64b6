"""A sweep block's phase totals by the fast path: ScalarPlan's per-op arithmetic on numpy arrays.

The reference (phases.prefill_totals / decode_totals) keeps every op's PARTS and SUMS over the block and
sums them afterwards; a sweep reads only each phase's PARTS summed over its ops. Here each op's parts are
computed with the reference's operations, element by element (the same IEEE doubles), and added into the
phase's totals in op order (as the reference's sums add them), without the per-op SUMS, stacks and copies.
Measured tables are read with the coordinates no workload changes applied once (TableRead.fixed_at; a
GEMM's table becomes one interpolation along M): that read alone sums its cell corners in another order
(last bits). tests/test_fast_simulate.py checks sweeps against the reference.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .decode_sum import mean_clamped_offset, segments
from .fast_path import ScalarPhase, ScalarPlan, _OpPlan
from .host_bound import host_excess_s
from .op_totals import PARTS
from .roofline import crossing_offsets, crossing_pairs
from .sustained import sustained_scale, throttled_parts


class BlockTotals:
    """One phase's PARTS summed over its ops (arrays over the block), read as PhaseTotals.total reads them."""

    def __init__(self, totals: dict[str, Any]) -> None:
        self.totals = totals

    def total(self, key: str) -> Any:
        value = self.totals[key]
        if key == "communication_s":  # the reference sums zeros of each op's shape: the phase's shape
            shape = np.broadcast_shapes(*(np.shape(v) for v in self.totals.values()))
            return np.broadcast_to(np.asarray(value, dtype=float), shape) if np.shape(value) != shape else value
        return value


class VectorPhases:
    """Prefill and decode totals of blocks of a sweep grid, from a ScalarPlan."""

    def __init__(self, plan: ScalarPlan) -> None:
        self.plan = plan
        roofline = plan.roofline
        self.hw = roofline.hardware
        self.overlap_max = plan.overlap_max
        self._floats_of: dict[int, tuple[Any, np.ndarray]] = {}  # id(x) -> (x, its floats)

    def prefill(self, B: np.ndarray, P: np.ndarray) -> tuple[BlockTotals, tuple[tuple[Any, ...], ...]]:
        """The prefill's totals, and the per-run values (for the footprint)."""
        plan = self.plan
        phase = plan.prefill
        values = phase.run(B, P, 0)
        captured = plan.roofline.prefill_captured(np.multiply(B, P))

        def totals(timed_as: ScalarPhase | None) -> dict[str, Any]:  # None: a replayed graph (decode's launches)
            sums = _Sums()
            for p, v in zip(phase.ops, values):
                sums.add(self._steady(p, v, p.count * 1, phase.any_collective, timed_as))
            return sums.totals

        if np.all(captured):
            return BlockTotals(self._sustained(totals(None))), values
        uncaptured = totals(phase)
        if np.any(captured):  # some points within prefill_graph_tokens: their parts as a replayed graph's
            replayed = totals(None)
            uncaptured = {key: np.where(captured, replayed[key], value) for key, value in uncaptured.items()}
        uncaptured = self._sustained(uncaptured)
        # phases._host_dispatch on the pass's sums: its host dispatch beyond its kernels (timing.host_bound)
        prefill = plan.roofline.for_prefill()
        host_s = sum(p.count * p.launches for p in phase.ops) * prefill.pass_dispatch_s
        if host_s:  # the engine's own host work per step stays outside the maximum
            serial_s = sum(p.count * p.host_s for p in phase.ops if p.op.kind == "host")
            excess = host_excess_s(uncaptured["time_s"] - serial_s, host_s, prefill.async_host)
            excess = np.where(captured, 0.0, excess) if np.any(captured) else excess
            uncaptured = {**uncaptured, "time_s": uncaptured["time_s"] + excess,
                          "overhead_s": uncaptured["overhead_s"] + excess}
        return BlockTotals(uncaptured), values

    def _sustained(self, totals: dict[str, Any]) -> dict[str, Any]:
        """phases._sustained on the pass's sums (the same stretch of the sum of the ops' compute parts)."""
        sustained = self.plan.roofline.sustained
        if sustained is None:
            return totals
        scale = sustained_scale(totals["compute_s"], *sustained)
        time_s, compute_s = throttled_parts(totals["time_s"], totals["compute_s"], scale)
        return {**totals, "time_s": time_s, "compute_s": compute_s}

    def decode(self, B: np.ndarray, P: np.ndarray, G: np.ndarray) -> BlockTotals:
        phase: ScalarPhase = self.plan.decode
        L0 = np.asarray(P, dtype=float)
        steps = np.asarray(np.asarray(G) - 1, dtype=float)
        first, second = phase.run(B, 1, L0), phase.run(B, 1, L0 + 1.0)
        sums = _Sums()
        for i, (p, v0, v1) in enumerate(zip(phase.ops, first, second)):
            if i in phase.varying:
                sums.add(self._trapezoid(p, v0, v1, L0, steps))
            else:
                sums.add(self._steady(p, v0, p.count * steps, phase.any_collective))
        return BlockTotals(sums.totals)

    # ---- one op, as op_totals.steady_totals and decode_sum.trapezoid_totals compute it ------------------
    def _scales(self, p: _OpPlan, mf: Any, vf: Any, by: Any, rows: Any, cols: Any, x: Any, y: Any, size: Any,
                compute_s: Any = None, memory_s: Any = None) -> tuple[Any, Any]:
        """Roofline.costs' scale and memory scale of one op (arrays): its measured time over its roofline time
        where a table covers it, else 1 / its row curve's fraction; memory also / the size curve's.
        size None: by per launch; compute_s and memory_s: those of mf, vf, by where the caller has them."""
        scale: Any = 1.0
        if p.row_key is not None:
            key = p.row_key
            scale = 1.0 / self.hw.matmul_row_fraction(key[0], 1.0 if rows is None else np.asarray(rows, dtype=float),
                                                      1.0 if cols is None else np.asarray(cols, dtype=float),
                                                      key[1], key[2])
        if p.measured_arrays is not None:
            matmul_peak, vector_peak, bandwidth = p.table_rates  # the tables' own device's (Roofline.table_roofline)
            if compute_s is None or p.table_rates != (p.matmul_peak, p.vector_peak, p.bandwidth):
                compute_s = mf / matmul_peak + vf / vector_peak
                memory_s = by / bandwidth
            kernel_s = np.maximum(compute_s, memory_s)  # bounding term, either overlap (Roofline.measured_scale)
            scale = p.measured_arrays(self._floats(1.0 if x is None else x),
                                      self._floats(1.0 if y is None else y)) / np.maximum(kernel_s, 1e-300)
        if p.size_precision is None:
            return scale, scale
        if size is None:
            size = by / max(p.launches, 1.0)
        return scale, scale * (1.0 / self.hw.elementwise_bandwidth_fraction(p.size_precision, size))

    def _floats(self, x: Any) -> np.ndarray:
        """x as floats; the same array again for the same x as a recent call (a block's GEMMs share their M
        values: the table reads then locate them once, log_cubic._located)."""
        found = self._floats_of.get(id(x))
        if found is None or found[0] is not x:
            if len(self._floats_of) >= 8:  # a few per block: forget the last block's
                self._floats_of.clear()
            found = self._floats_of[id(x)] = (x, np.asarray(x, dtype=float))
        return found[1]

    def _time(self, compute_s: Any, memory_s: Any, launches: float, comm_s: Any, host_s: float = 0.0,
              phase: ScalarPhase | None = None) -> tuple[Any, ...]:
        """Roofline.time of arrays: (time, compute part, memory part, overhead part); phase: whose launch and
        dispatch apply (ScalarPhase.launch_s, dispatch_s), the decode's by default."""
        plan = self.plan
        launch_each, dispatch_each = (plan.launch_s, plan.dispatch_s) if phase is None else (
            phase.launch_s, phase.dispatch_s)
        if self.overlap_max:
            kernel_s = np.maximum(compute_s, memory_s)
            compute_part = np.where(compute_s >= memory_s, kernel_s, 0.0)
            memory_part = kernel_s - compute_part
        else:
            kernel_s = compute_s + memory_s
            compute_part, memory_part = compute_s, memory_s
        busy_s = kernel_s if type(comm_s) is float and comm_s == 0 else kernel_s + comm_s
        launch_s = launches * launch_each + host_s if host_s else launches * launch_each
        if dispatch_each == 0:
            time_s = busy_s + launch_s
        elif plan.async_host:
            time_s = np.maximum(busy_s + launch_s, launches * dispatch_each)
        else:
            time_s = busy_s + launch_s + launches * dispatch_each
        return time_s, compute_part, memory_part, time_s - busy_s

    def _steady(self, p: _OpPlan, v: tuple[Any, ...], runs: Any, collective_chunk: bool,
                phase: ScalarPhase | None = None) -> tuple[Any, ...]:
        mf, vf = np.asarray(v[0], dtype=float), np.asarray(v[1], dtype=float)
        by = np.asarray(v[2] + v[3], dtype=float)
        comm_s: Any = 0.0
        if p.collective:
            comm_s = np.asarray(self.plan.roofline.collective_s(p.op.collective, v[5], p.op.group_size), dtype=float)
        compute_s = mf / p.matmul_peak + vf / p.vector_peak
        memory_s = by / p.bandwidth
        scale, memory_scale = self._scales(p, mf, vf, by, v[6], v[7], v[8], v[9], None, compute_s, memory_s)
        # x * 1.0 and 1 * x are x itself: those products skipped
        t = self._time(compute_s if _one(scale) else compute_s * scale,
                       memory_s if _one(memory_scale) else memory_s * memory_scale, p.launches, comm_s, p.host_s,
                       phase)
        comm_total = runs * comm_s if collective_chunk else 0.0
        if _one(runs):
            return (*t, comm_total)
        return runs * t[0], runs * t[1], runs * t[2], runs * t[3], comm_total

    def _trapezoid(self, p: _OpPlan, v0: tuple[Any, ...], v1: tuple[Any, ...], L0: np.ndarray, steps: np.ndarray
                   ) -> tuple[Any, ...]:
        q0 = [np.asarray(v0[0], dtype=float), np.asarray(v0[1], dtype=float), np.asarray(v0[2] + v0[3], dtype=float)]
        q1 = [np.asarray(v1[0], dtype=float), np.asarray(v1[1], dtype=float), np.asarray(v1[2] + v1[3], dtype=float)]
        clamp = (p.window - 1) - L0
        x = y = None
        mid = q0
        if p.measured_arrays is not None:  # the quantities and table coordinates at the steps' mean clamped offset
            u = mean_clamped_offset(np.asarray(steps, dtype=float), np.asarray(clamp, dtype=float))
            mid = [a + (b - a) * u for a, b in zip(q0, q1)]
            x = None if v0[8] is None else _at(v0[8], v1[8], u)
            y = None if v0[9] is None else _at(v0[9], v1[9], u)
        scale, memory_scale = self._scales(p, *mid, v0[6], v0[7], x, y, q0[2])
        c0 = (q0[0] / p.matmul_peak + q0[1] / p.vector_peak) * scale
        m0 = q0[2] / p.bandwidth * memory_scale
        cs = (q1[0] / p.matmul_peak + q1[1] / p.vector_peak) * scale - c0
        ms = q1[2] / p.bandwidth * memory_scale - m0
        launches = p.launches
        ends, n = _segments([np.asarray(clamp, dtype=float), *self._crossings(c0, cs, m0, ms, launches)], steps)
        clamp_axis = np.asarray(clamp, dtype=float)[..., None]
        c0, cs, m0, ms = c0[..., None], cs[..., None], m0[..., None], ms[..., None]
        first, last = (self._time(c0 + cs * u, m0 + ms * u, launches, 0.0)
                       for u in (np.minimum(end, clamp_axis) for end in ends))
        count = p.count
        return (*(count * (n * (a + b) / 2.0).sum(axis=-1) for a, b in zip(first, last)), 0.0)

    def _crossings(self, c0: Any, cs: Any, m0: Any, ms: Any, launches: float) -> list[Any]:
        plan = self.plan
        pairs = crossing_pairs(c0, cs, m0, ms, launches, plan.launch_s, plan.dispatch_s, plan.async_host,
                               self.overlap_max)
        return [crossing_offsets(diff0, slope) for diff0, slope in pairs]


def _one(x: Any) -> bool:
    """x is the number 1 (a float or int, not an array): multiplying by it changes nothing."""
    return type(x) in (float, int) and x == 1


def _segments(cuts: list[np.ndarray], steps: Any) -> tuple[list[np.ndarray], np.ndarray]:
    """decode_sum.segments without the cuts that fall outside 0 .. steps - 2 at every point of the block (no
    window, terms that never cross there): each such cut only adds an empty segment (count 0) before or after
    the others, whose terms are exact zeros in the segment sums (left to right over at most 5 segments, as
    numpy sums a short last axis): the same totals, on fewer segments (often one), of the shape of the cuts
    kept (broadcast against the block by their use)."""
    last = np.asarray(steps, dtype=float) - 1.0
    live = [cut for cut in cuts if not np.all(~np.isfinite(cut) | (cut >= last) | (cut < 0.0))]
    if live:
        return segments(live, steps)
    # decode_sum.segments with no cut: one segment 0 .. last
    lo = np.zeros((*last.shape, 1))
    hi = last[..., None]
    return [lo, np.maximum(hi, lo)], np.maximum(hi - lo + 1.0, 0.0)


def _at(v0: Any, v1: Any, u: np.ndarray) -> np.ndarray:
    """A value at offsets (0, 1) -> at offset u (decode_sum's at_middle)."""
    a = np.asarray(v0, dtype=float)
    return a + (np.asarray(v1, dtype=float) - a) * u


class _Sums:
    """PARTS summed over ops in op order, as the reference's sum() of its per-op lists adds them."""

    def __init__(self) -> None:
        self.totals: dict[str, Any] = dict.fromkeys(PARTS, 0)

    def add(self, parts: tuple[Any, ...]) -> None:
        totals = self.totals
        for key, value in zip(PARTS, parts):
            total = totals[key]
            if type(total) is np.ndarray and total.shape == np.broadcast_shapes(total.shape, np.shape(value)):
                np.add(total, value, out=total)  # the same sum, into the array this made (no new array)
            else:
                totals[key] = total + value  # a new array (0 + the first op's: a copy), owned here
