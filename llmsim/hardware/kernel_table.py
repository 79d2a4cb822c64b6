"""A measured kernel table: kernel times on a full grid of shape axes, read in log space.

A table file (`kernels/<device>/<engine>/<family>.csv`) is plain CSV after a block of `# key: value`
provenance lines (source package and version, file, engine and its version, GPU string). Its columns are
the family's key columns (exact-match: dtype, head dim, ...), its grid axes (sizes: m, n, k, batch, ...)
and `latency_us`. Within each combination of keys the rows must form a full grid over the axes.

Reading (`GridTable.time_s`): log(time) against log(axis) along each axis is a monotone cubic through the
measured points (piecewise cubic Hermite with Fritsch-Carlson slopes, PCHIP: in each cell the cubic with
the measured values at its ends, and at each measured point a slope from the two secants either side,
their weighted harmonic mean, or 0 where they differ in sign; at the first and last point the three-point
estimate, kept to the sign of the secant next to it), applied the last axis first: the last axis's cubic on
each grid line near the point, then the axis before's cubic through those values, and so on. An axis of
two points is the straight line (log time linear in log x). So a measured point returns its measured
time; along an axis the cubic in a cell stays between the values at the cell's two ends (a step stays a
step, no overshoot); and where a kernel's log-log curve bends (attention: a launch floor that turns into
linear, then quadratic growth in the length and the batch) the cubic follows the bend that the slopes
either side show, where a straight line between two measured points cuts the corner.
The families in STRAIGHT_FAMILIES (GEMM, grouped MoE) are read with that straight line on every axis
instead (log time multilinear in log x: halfway in log between two measured points, their geometric
mean), for the reason given there.
Beyond the measured range of an axis (the value clamped to it for the cubic or line), for every family:
- below the smallest point: the time at the smallest point (a kernel does not get faster than its
  smallest measured shape: launch and tail floors dominate there);
- above the largest point: the time at the largest point times x / x_largest (the work grows in
  proportion, at the efficiency of the largest measured shape).

Why this rule (validation/kernel_tables.py, (a) hold-out of whole grid lines): chosen on the split of
seed 1 (numpy default_rng(1), 20 % of each axis's interior values), not the seed-0 split the report judges.
There the straight line gave median / p90 error 6.0 / 19.9 % (prefill attention) and 5.4 / 27.2 % (decode
attention), the cubic 3.1 / 12.0 and 4.1 / 21.0 %, and better on the collective and MLA tables too (all
reduce 3.1 -> 1.9 %, NCCL 3.8 -> 2.5 %, prefill MLA 3.8 -> 2.4 %, decode MLA 3.2 -> 2.1 % median). Also
tried there: the table divided by a model floor + c x work (prefill B S^2, decode B L; constants from the
table's own corners or a least-squares fit), read multilinearly and multiplied back: 4.5-4.6 % prefill,
4.7-4.8 % decode; the cubic on that quotient: 3.5 % prefill, 4.2 % decode. The cubic alone, then, with no
constants.
"""

from __future__ import annotations

import bisect
import json
import math
import operator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ..disk_cache import cached, source_fingerprint
from ..errors import HardwareError

# Families read with the straight line in log-log (GridTable.smooth False), and why. Their time against m or
# tokens (and n, k) is a staircase of tile and wave quantisation (one more tile of rows, one more wave of thread
# blocks), which the package measures densely at sizes the shipped grid leaves out; there the cubic, which
# carries the curvature of the neighbouring cells into a cell, was further off than the straight line in the
# off-grid check (validation/kernel_tables.md (b): GEMM median 4.2 -> 4.5 %, p90 20.1 -> 21.4 %; MoE p90
# 8.3 -> 9.3 %), though closer on the seed-1 hold-out (a) (GEMM 4.3 -> 3.5 %, MoE 4.9 -> 3.2 %). Both meet
# the 5 % target with the line. This choice was made after seeing (b), so for these two families (b) is not
# independent of it.
STRAIGHT_FAMILIES = frozenset({"gemm", "moe"})


@dataclass(frozen=True)
class GridTable:
    """Times (seconds) on the grid `points[0] x points[1] x ...` of the named axes."""

    axes: tuple[str, ...]
    points: tuple[np.ndarray, ...]  # each sorted ascending, > 0
    times_s: np.ndarray  # shape (len(points[0]), len(points[1]), ...)
    smooth: bool = True  # the monotone cubic; False: the straight line in log-log (STRAIGHT_FAMILIES)
    _log_points: tuple[np.ndarray, ...] = field(init=False, repr=False, compare=False)
    _log_times: np.ndarray = field(init=False, repr=False, compare=False)
    _log_slopes: np.ndarray = field(init=False, repr=False, compare=False)
    _strides: np.ndarray = field(init=False, repr=False, compare=False)
    _log_lists: tuple[list[float], ...] = field(init=False, repr=False, compare=False)
    _log_list: list[float] = field(init=False, repr=False, compare=False)
    _slope_list: list[float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        points, times = list(self.points), self.times_s
        for axis, p in enumerate(points):
            if len(p) == 1:  # one measured size: a second point at twice it, twice the time (the rule above it)
                points[axis] = np.array([p[0], 2 * p[0]])
                times = np.concatenate([times, 2 * times], axis=axis)
        log_points = tuple(np.log(p) for p in points)
        object.__setattr__(self, "_log_points", log_points)
        object.__setattr__(self, "_log_times", np.log(times).ravel())  # flat, C order
        # the slope of log time against log x at each point along the last axis (the rule's node slopes)
        slopes = _node_slopes(log_points[-1], np.log(times)) if points and self.smooth else np.zeros(times.shape)
        object.__setattr__(self, "_log_slopes", slopes.ravel())
        # the flat-index step of each axis
        d = len(points)
        object.__setattr__(self, "_strides", np.array([int(np.prod([len(p) for p in points[i + 1:]]))
                                                       for i in range(d)], dtype=int))
        object.__setattr__(self, "_log_lists", tuple(lp.tolist() for lp in self._log_points))
        object.__setattr__(self, "_log_list", self._log_times.tolist())
        object.__setattr__(self, "_slope_list", self._log_slopes.tolist())

    def time_s(self, *coords: Any) -> Any:
        """The time at `coords` (one per axis; numbers or broadcasting arrays), as the module docstring reads it."""
        if all(type(x) is float for x in coords):  # one point (the scalar fast path): _time_at, as below
            return float(self._time_at(coords))
        coords = tuple(np.asarray(x, dtype=float) for x in coords)
        shape = np.broadcast_shapes(*(x.shape for x in coords))
        if math.prod(shape) <= _FEW_POINTS:  # one simulate(): a handful of ops; plain Python beats numpy's overheads
            arrays = np.broadcast_arrays(*coords)
            times = [self._time_at(point) for point in zip(*(a.ravel().tolist() for a in arrays))]
            return float(times[0]) if not shape else np.array(times).reshape(shape)
        # a sweep: each axis located on its own values, then the cubic of each axis, the last axis first
        # (_nested: memory of 4 point arrays per axis)
        located = [_locate(np.asarray(x, dtype=float), lp) for x, lp in zip(coords, self._log_points)]
        strides, last = self._strides.tolist(), len(located) - 1

        def nested(axis: int, index: Any) -> Any:
            """log time along axes axis.. of the grid lines at flat index `index` (of the axes before)."""
            lo, s, _ = located[axis]
            x = self._log_points[axis]
            if axis == last:
                t, m = self._log_times, self._log_slopes
                return _hermite(s, x[lo + 1] - x[lo], t[index + lo], t[index + lo + 1], m[index + lo],
                                m[index + lo + 1], self.smooth)
            along = _cubic if self.smooth else _line
            return along(x, lo, s, *(nested(axis + 1, index + i * strides[axis])
                                     for i in _near(lo, len(x), self.smooth)))

        result = np.broadcast_to(np.exp(nested(0, 0)) * _beyond([f for _, _, f in located]), shape)
        return float(result) if result.ndim == 0 else result

    def _time_at(self, point: tuple[float, ...]) -> float:
        """time_s of one point, the same arithmetic in plain Python (math.log, bisect): the last axis's cubic on
        each grid line of the cell's 4 x 4 x ... neighbourhood, then the axis before's cubic on those values, ...;
        the factors beyond the top edges multiplied last axis first (ScalarGrid reads the same way with some
        axes held)."""
        located = [_locate_one(x, log_points) for x, log_points in zip(point, self._log_lists)]
        strides = self._strides.tolist()
        rows = [0]  # flat indices of the neighbourhood's grid lines along the last axis
        for (lo, _, _), stride, x in zip(located, strides, self._log_lists[:-1]):
            rows = [r + i * stride for r in rows for i in _near(lo, len(x), self.smooth)]
        lo, s, _ = located[-1]
        x, t, m = self._log_lists[-1], self._log_list, self._slope_list
        a, b = _weights(s, x[lo + 1] - x[lo], self.smooth)  # _hermite's, once for all lines
        values = [(1.0 - a) * t[r + lo] + a * t[r + lo + 1] + b * ((1.0 - s) * m[r + lo] - s * m[r + lo + 1])
                  for r in rows]
        along, width = (_cubic_one, 4) if self.smooth else (_line, 2)
        for axis in reversed(range(len(located) - 1)):  # each 4 (2) values along the axis reduced to one
            lo, s, _ = located[axis]
            x = self._log_lists[axis]
            values = [along(x, lo, s, *values[i:i + width]) for i in range(0, len(values), width)]
        return math.exp(values[0]) * _beyond([f for _, _, f in located])

    def fixed_at(self, fixed: tuple[float | None, ...]) -> ScalarGrid:
        """time_s of one point with the axes given in `fixed` (None: free) held at those values: a ScalarGrid
        over the free axes, for many reads of one kernel shape that differ in a few axes (a GEMM's M)."""
        return ScalarGrid(self, fixed)


class ScalarGrid:
    """A GridTable read at single points with its last axes held fixed, in plain Python: the fixed axes' cubics
    applied once (to the log times: a table over the free axes, with its node slopes along its last axis), so
    a read of a 3-axis GEMM table at a new M is one cubic along M. The same arithmetic as GridTable._time_at,
    which reduces the last axis first (the held axes must come after the free ones: TableRead.fixed_at checks)."""

    def __init__(self, grid: GridTable, fixed: tuple[float | None, ...]) -> None:
        shape = [len(p) for p in grid._log_points]
        log_times = grid._log_times.reshape(shape)
        slopes = grid._log_slopes.reshape(shape)
        beyond = 1.0
        free = []
        for axis, value in reversed(list(enumerate(fixed))):  # fixed axes reduced last to first
            if value is None:
                free.append(axis)
                continue
            lo, s, factor = _locate_one(float(value), grid._log_lists[axis])  # as GridTable._time_at locates it
            beyond *= factor  # the last axis first, as _beyond multiplies them
            x = grid._log_points[axis]
            if axis == len(shape) - 1:  # the grid's last axis: its own node slopes
                log_times = _hermite(s, x[lo + 1] - x[lo], np.take(log_times, lo, axis=axis),
                                     np.take(log_times, lo + 1, axis=axis), np.take(slopes, lo, axis=axis),
                                     np.take(slopes, lo + 1, axis=axis), grid.smooth)
            else:
                along = _cubic if grid.smooth else _line
                log_times = along(x, lo, s, *(np.take(log_times, i, axis=axis)
                                              for i in _near(lo, len(x), grid.smooth)))
        if free and len(free) < len(shape):  # node slopes along the reduced table's last axis
            slopes = (_node_slopes(grid._log_points[free[0]], log_times) if grid.smooth
                      else np.zeros(np.shape(log_times)))
        self.smooth = grid.smooth
        self.beyond = beyond
        self.log_lists = tuple(grid._log_lists[axis] for axis in reversed(free))
        self.log_list = np.asarray(log_times, dtype=float).ravel().tolist()
        self.slope_list = np.asarray(slopes, dtype=float).ravel().tolist() if free else [0.0]
        self.stride = int(np.asarray(log_times).shape[-1]) if np.ndim(log_times) == 2 else 1

        if len(self.log_lists) == 2:  # time_s is the written-out reader itself (one call less per read)
            self.time_s = self._pair_reader()  # type: ignore[method-assign]

    def _pair_reader(self) -> Any:
        """time_s of two free axes (attention's batch and length), _locate_one written out: the last axis's
        cubic on the 4 grid lines about the point, then _cubic_one along the first (not smooth: the line on 2)."""
        (x0, x1), t, m, n, beyond = self.log_lists, self.log_list, self.slope_list, self.stride, self.beyond
        first0, top0, cells0, first1, top1, cells1 = x0[0], x0[-1], len(x0) - 2, x1[0], x1[-1], len(x1) - 2
        smooth, cubic = self.smooth, _cubic_one if self.smooth else _line
        log, exp, bisect_right = math.log, math.exp, bisect.bisect_right

        def time_s(u: float, v: float) -> float:
            log_u, log_v = log(u if u > 1e-300 else 1e-300), log(v if v > 1e-300 else 1e-300)
            c0 = first0 if log_u < first0 else top0 if log_u > top0 else log_u
            c1 = first1 if log_v < first1 else top1 if log_v > top1 else log_v
            lo0, lo1 = bisect_right(x0, c0) - 1, bisect_right(x1, c1) - 1
            lo0 = 0 if lo0 < 0 else cells0 if lo0 > cells0 else lo0
            lo1 = 0 if lo1 < 0 else cells1 if lo1 > cells1 else lo1
            s0, s1 = (c0 - x0[lo0]) / (x0[lo0 + 1] - x0[lo0]), (c1 - x1[lo1]) / (x1[lo1 + 1] - x1[lo1])
            a, b = _weights(s1, x1[lo1 + 1] - x1[lo1], smooth)  # _hermite's, once
            at = lo0 * n + lo1
            lines = (((at - n if lo0 > 0 else at), at, at + n, (at + 2 * n if lo0 < cells0 else at + n)) if smooth
                     else (at, at + n))  # _near's
            rows = [(1.0 - a) * t[i] + a * t[i + 1] + b * ((1.0 - s1) * m[i] - s1 * m[i + 1]) for i in lines]
            f1 = exp(log_v - top1) if log_v > top1 else 1.0
            f0 = exp(log_u - top0) if log_u > top0 else 1.0
            return exp(cubic(x0, lo0, s0, *rows)) * ((beyond * f1) * f0)  # the last axis first, as _beyond

        return time_s

    def reader(self) -> Any:
        """time_s as a function of the free axes' values; for one free axis written out (a GEMM's M)."""
        if len(self.log_lists) != 1:
            return self.time_s
        points, times, slopes, beyond = self.log_lists[0], self.log_list, self.slope_list, self.beyond
        first, top, cells = points[0], points[-1], len(points) - 2
        log, exp, bisect_right = math.log, math.exp, bisect.bisect_right

        def time_s(x: float) -> float:
            log_x = log(x if x > 1e-300 else 1e-300)
            clamped = first if log_x < first else top if log_x > top else log_x
            lo = bisect_right(points, clamped) - 1
            lo = 0 if lo < 0 else cells if lo > cells else lo
            h = points[lo + 1] - points[lo]
            s = (clamped - points[lo]) / h
            a = s * s * (3.0 - 2.0 * s)  # _hermite, written out
            log_t = (1.0 - a) * times[lo] + a * times[lo + 1] + h * s * (1.0 - s) * (
                (1.0 - s) * slopes[lo] - s * slopes[lo + 1])
            return exp(log_t) * (beyond * exp(log_x - top) if log_x > top else beyond)

        def line_s(x: float) -> float:  # not smooth: _hermite with (a, b) = (s, 0), less its + 0.0
            log_x = log(x if x > 1e-300 else 1e-300)
            clamped = first if log_x < first else top if log_x > top else log_x
            lo = bisect_right(points, clamped) - 1
            lo = 0 if lo < 0 else cells if lo > cells else lo
            s = (clamped - points[lo]) / (points[lo + 1] - points[lo])
            return exp((1.0 - s) * times[lo] + s * times[lo + 1]) * (beyond * exp(log_x - top) if log_x > top
                                                                     else beyond)

        return time_s if self.smooth else line_s

    def array_time_s(self, *free: np.ndarray) -> np.ndarray:
        """time_s over arrays of the free axes' values (broadcasting; at most two free axes)."""
        located = [_located(x, points) for x, points in zip(free, self.log_lists)]
        times, slopes = np.asarray(self.log_list), np.asarray(self.slope_list)
        x = np.asarray(self.log_lists[-1]) if free else None
        if len(located) == 1:
            (lo, s, factor), = located
            log_t = (_hermite(s, x[lo + 1] - x[lo], times[lo], times[lo + 1], slopes[lo], slopes[lo + 1])
                     if self.smooth else (1.0 - s) * times[lo] + s * times[lo + 1])  # _hermite not smooth
            factor = self.beyond * factor
        elif len(located) == 2:
            (lo0, s0, f0), (lo1, s1, f1) = located
            h1, n, x0 = x[lo1 + 1] - x[lo1], self.stride, np.asarray(self.log_lists[0])
            if self.smooth and len(x0) * np.size(lo1) < np.broadcast(lo0, lo1).size:
                # a sweep's outer product (fewer values of the last axis than points): the last axis's cubic on
                # every grid line of the first axis at the last axis's own values, the node slopes of those along
                # the first axis (_cubic's, for every cell at once), then each point's cubic along the first axis
                at = np.arange(len(x0))[:, None] * n + np.ravel(lo1)  # [first axis, the last axis's values]
                lines = _hermite(np.ravel(s1), np.ravel(h1), times[at], times[at + 1], slopes[at], slopes[at + 1])
                line_slopes = _node_slopes(x0, lines.T).T.ravel()
                lines = lines.ravel()
                cell = lo0 * np.size(lo1) + np.arange(np.size(lo1)).reshape(np.shape(lo1))  # flat [lo0, value]
                upper = cell + np.size(lo1)  # [lo0 + 1, value]
                log_t = _hermite(s0, x0[lo0 + 1] - x0[lo0], lines[cell], lines[upper], line_slopes[cell],
                                 line_slopes[upper])
            else:
                rows = [_hermite(s1, h1, times[at], times[at + 1], slopes[at], slopes[at + 1]) if self.smooth
                        else (1.0 - s1) * times[at] + s1 * times[at + 1]  # _hermite not smooth
                        for at in (i * n + lo1 for i in _near(lo0, len(x0), self.smooth))]
                log_t = (_cubic if self.smooth else _line)(x0, lo0, s0, *rows)
            factor = (self.beyond * f1) * f0  # the last axis first, as _beyond multiplies them
        elif free:
            raise ValueError("ScalarGrid reads at most two free axes")
        else:
            return np.asarray(math.exp(self.log_list[0]) * self.beyond)
        return np.exp(log_t) * factor

    def time_s(self, *free: float) -> float:
        """The time at the free axes' values (in axis order)."""
        log_t, beyond = 0.0, self.beyond
        t, m = self.log_list, self.slope_list
        if len(free) == 1:
            lo, s, factor = _locate_one(free[0], self.log_lists[0])
            x = self.log_lists[0]
            log_t = _hermite(s, x[lo + 1] - x[lo], t[lo], t[lo + 1], m[lo], m[lo + 1], self.smooth)
            beyond = beyond * factor
        elif free:  # two free axes: the instance's time_s is _pair_reader's
            raise ValueError("ScalarGrid reads at most two free axes")
        else:
            log_t = self.log_list[0]
        return math.exp(log_t) * beyond


# ---- the rule along one axis: a monotone cubic (Fritsch-Carlson) in log time against log x ---------------
# Written once for plain floats (a point) and once for arrays (a sweep, a table held at some axes), with the
# same arithmetic in the same order, so both give the same numbers.
def _weights(s: Any, h: Any, smooth: bool) -> tuple[Any, Any]:
    """_hermite's weights (a, b) at fraction s of a cell of log width h; the straight line's (s, 0) where not smooth."""
    return (s * s * (3.0 - 2.0 * s), h * s * (1.0 - s)) if smooth else (s, 0.0)


def _hermite(s: Any, h: Any, y0: Any, y1: Any, m0: Any, m1: Any, smooth: bool = True) -> Any:
    """The cubic on a cell of log width h at fraction s: values y0, y1 and slopes m0, m1 at its ends (s = 0
    gives y0 and s = 1 gives y1 exactly). Not smooth: (1 - s) y0 + s y1, the straight line (the same number
    as with _weights' (s, 0): its term b (...) adds 0.0)."""
    if not smooth:
        return (1.0 - s) * y0 + s * y1
    a, b = _weights(s, h, smooth)
    return (1.0 - a) * y0 + a * y1 + b * ((1.0 - s) * m0 - s * m1)


def _line(x: Any, lo: Any, s: Any, y0: Any, y1: Any) -> Any:
    """_cubic_one's and _cubic's place where the grid is not smooth: the straight line (floats or arrays), from
    the values at _near(lo, n, False) = (lo, lo + 1)."""
    return (1.0 - s) * y0 + s * y1


def _inner_slope(d_left: float, d_right: float, h_left: float, h_right: float) -> float:
    """The slope at a point from the secants either side: 0 at a peak or a flat step (the curve never rises
    above or falls below its measured neighbours), else their weighted harmonic mean."""
    if d_left * d_right <= 0.0:
        return 0.0
    w_left, w_right = 2.0 * h_right + h_left, h_right + 2.0 * h_left
    return (w_left + w_right) / (w_left / d_left + w_right / d_right)


def _end_slope(d_near: float, d_far: float, h_near: float, h_far: float) -> float:
    """The slope at the first (or last) point: the three-point estimate, kept to the sign of the secant next to
    it and at most 3 times it where the secants change sign."""
    m = ((2.0 * h_near + h_far) * d_near - h_near * d_far) / (h_near + h_far)
    if m * d_near <= 0.0:
        return 0.0
    if d_near * d_far < 0.0 and abs(m) > 3.0 * abs(d_near):
        return 3.0 * d_near
    return m


def _cubic_one(x: list[float], lo: int, s: float, before: float, y0: float, y1: float, after: float) -> float:
    """The cubic along an axis (log points x) in cell lo at fraction s, from the values at lo - 1, lo, lo + 1
    and lo + 2 (`before` and `after` ignored where there is no such point). _inner_slope and _hermite written
    out for the common cell with points either side (the same arithmetic)."""
    n, h = len(x), x[lo + 1] - x[lo]
    d = (y1 - y0) / h
    if lo > 0:
        h_left = x[lo] - x[lo - 1]
        d_left = (y0 - before) / h_left
    if lo + 2 < n:
        h_right = x[lo + 2] - x[lo + 1]
        d_right = (after - y1) / h_right
    if lo > 0 and lo + 2 < n:
        if d_left * d <= 0.0:
            m0 = 0.0
        else:
            w_left, w_right = 2.0 * h + h_left, h + 2.0 * h_left
            m0 = (w_left + w_right) / (w_left / d_left + w_right / d)
        if d * d_right <= 0.0:
            m1 = 0.0
        else:
            w_left, w_right = 2.0 * h_right + h, h_right + 2.0 * h
            m1 = (w_left + w_right) / (w_left / d + w_right / d_right)
    elif lo > 0:
        m0, m1 = _inner_slope(d_left, d, h_left, h), _end_slope(d, d_left, h, h_left)
    elif lo + 2 < n:
        m0, m1 = _end_slope(d, d_right, h, h_right), _inner_slope(d, d_right, h, h_right)
    else:
        m0 = m1 = d
    a = s * s * (3.0 - 2.0 * s)
    return (1.0 - a) * y0 + a * y1 + h * s * (1.0 - s) * ((1.0 - s) * m0 - s * m1)


def _inner_slopes(d_left: Any, d_right: Any, h_left: Any, h_right: Any) -> Any:
    """_inner_slope of arrays."""
    w_left, w_right = 2.0 * h_right + h_left, h_right + 2.0 * h_left
    with np.errstate(divide="ignore", invalid="ignore"):
        m = (w_left + w_right) / (w_left / d_left + w_right / d_right)
    return np.where(d_left * d_right <= 0.0, 0.0, m)


def _end_slopes(d_near: Any, d_far: Any, h_near: Any, h_far: Any) -> Any:
    """_end_slope of arrays."""
    with np.errstate(divide="ignore", invalid="ignore"):
        m = ((2.0 * h_near + h_far) * d_near - h_near * d_far) / (h_near + h_far)
    m = np.where(m * d_near <= 0.0, 0.0, m)
    return np.where((d_near * d_far < 0.0) & (np.abs(m) > 3.0 * np.abs(d_near)), 3.0 * d_near, m)


def _cubic(x: np.ndarray, lo: Any, s: Any, before: Any, y0: Any, y1: Any, after: Any) -> Any:
    """_cubic_one of arrays (lo and s arrays or numbers; the values at _near(lo))."""
    n = len(x)
    has_left, has_right = lo > 0, lo + 2 < n
    h = x[lo + 1] - x[lo]
    h_left = x[lo] - x[np.maximum(lo - 1, 0)]  # 0 where there is no point before (then not used)
    h_right = x[np.minimum(lo + 2, n - 1)] - x[lo + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        d = (y1 - y0) / h
        d_left, d_right = (y0 - before) / h_left, (after - y1) / h_right
    m0 = np.where(has_left, _inner_slopes(d_left, d, h_left, h),
                  np.where(has_right, _end_slopes(d, d_right, h, h_right), d))
    m1 = np.where(has_right, _inner_slopes(d, d_right, h, h_right),
                  np.where(has_left, _end_slopes(d, d_left, h, h_left), d))
    return _hermite(s, h, y0, y1, m0, m1)


def _near(lo: Any, n: int, smooth: bool = True) -> tuple[Any, ...]:
    """Grid indices lo - 1, lo, lo + 1, lo + 2 on an axis of n points, those past its ends repeated (the
    cubic's); lo, lo + 1 where not smooth (the line's)."""
    if not smooth:
        return lo, lo + 1
    if isinstance(lo, (int, np.integer)):
        return (lo - 1 if lo > 0 else lo), lo, lo + 1, (lo + 2 if lo + 2 < n else lo + 1)
    return np.maximum(lo - 1, 0), lo, lo + 1, np.minimum(lo + 2, n - 1)


def _node_slopes(x: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The rule's slope at every point along the last axis of `values` (log points x): _inner_slope inside,
    _end_slope at the ends, the secant on an axis of two points."""
    h = x[1:] - x[:-1]
    d = (values[..., 1:] - values[..., :-1]) / h
    if len(x) == 2:
        return np.stack([d[..., 0], d[..., 0]], axis=-1)
    slopes = np.empty_like(values)
    slopes[..., 1:-1] = _inner_slopes(d[..., :-1], d[..., 1:], h[:-1], h[1:])
    slopes[..., 0] = _end_slopes(d[..., 0], d[..., 1], h[0], h[1])
    slopes[..., -1] = _end_slopes(d[..., -1], d[..., -2], h[-1], h[-2])
    return slopes


_LOCATED: dict[tuple[int, int], tuple[Any, Any, Any]] = {}  # (id x, id points) -> (x, points, _locate)


def _located(x: Any, log_points: list[float]) -> tuple[np.ndarray, np.ndarray, Any]:
    """_locate of an array on one axis; again for the same array on the same axis as a recent call (a sweep
    block's GEMMs all read their table at the same M array), from that call."""
    key = (id(x), id(log_points))
    found = _LOCATED.get(key)
    if found is None or found[0] is not x or found[1] is not log_points:
        if len(_LOCATED) >= 8:  # a few per sweep block: forget the last block's
            _LOCATED.clear()
        found = _LOCATED[key] = (x, log_points, _locate(np.asarray(x, dtype=float), np.asarray(log_points)))
    return found[2]  # type: ignore[no-any-return]


def _beyond(factors: list[Any]) -> Any:
    """The product of the per-axis factors beyond the top edges, the last axis first (1.0 inside the grid)."""
    product: Any = factors[-1] if factors else 1.0
    for factor in reversed(factors[:-1]):
        product = product * factor
    return product


def _locate_one(x: float, log_points: list[float]) -> tuple[int, float, float]:
    """_locate of one number: (lower grid index, weight of the upper point, factor beyond the top edge)."""
    log_x = math.log(max(x, 1e-300))
    clamped = min(max(log_x, log_points[0]), log_points[-1])
    lo = min(max(bisect.bisect_right(log_points, clamped) - 1, 0), len(log_points) - 2)
    w = (clamped - log_points[lo]) / (log_points[lo + 1] - log_points[lo])
    return lo, w, (math.exp(log_x - log_points[-1]) if log_x > log_points[-1] else 1.0)


_FEW_POINTS = 32


def _locate(x: np.ndarray, log_points: np.ndarray) -> tuple[np.ndarray, np.ndarray, Any]:
    """(lower grid index, weight of the upper point, factor beyond the top edge) of x on one axis."""
    n = len(log_points)
    log_x = np.log(np.maximum(x, 1e-300))
    clamped = np.minimum(np.maximum(log_x, log_points[0]), log_points[-1])
    lo = np.minimum(np.maximum(np.searchsorted(log_points, clamped, side="right") - 1, 0), n - 2)
    weight = (clamped - log_points[lo]) / (log_points[lo + 1] - log_points[lo])
    factor = np.exp(np.maximum(log_x - log_points[-1], 0.0))  # x / x_largest above the grid, else 1
    return lo, weight, factor


@dataclass(frozen=True)
class TableFile:
    """One family's table file: provenance, and a GridTable per combination of key values."""

    family: str
    path: str
    provenance: dict[str, str]
    keys: tuple[str, ...]
    axes: tuple[str, ...]
    grids: dict[tuple[Any, ...], GridTable]

    @property
    def source(self) -> str:
        """One line naming where the measurements come from."""
        p = self.provenance
        parts = [p.get("source", "?")]
        for key in ("engine", "engine_version", "gpu", "file"):
            if key in p:
                parts.append(f"{key} {p[key]}")
        return ", ".join(parts)


def read_table_file(path: Path, family: str, keys: tuple[str, ...], axes: tuple[str, ...],
                    fill_first_axis: bool = False) -> TableFile:
    """Read a table file; a missing column, a non-positive time or a hole in a grid is refused by name.

    fill_first_axis: cells missing at the top of the first axis (a table measured up to a token budget, such
    as attention's batch x isl) are the time at the largest measured value below times the ratio of the two
    (approximation: the kernel's time grows in proportion to the batch beyond the measured batches)."""
    provenance: dict[str, str] = {}
    header: list[str] | None = None
    rows: list[list[str]] = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            key, sep, value = line[1:].partition(":")
            if sep:
                provenance[key.strip()] = value.strip()
            continue
        cells = [c.strip() for c in line.split(",")]
        if header is None:
            header = cells
            missing = [c for c in (*keys, *axes, "latency_us") if c not in header]
            if missing:
                raise HardwareError(f"{path}: kernel table '{family}' lacks column(s) {missing}; expected "
                                    f"{[*keys, *axes, 'latency_us']}")
            continue
        if len(cells) != len(header):
            raise HardwareError(f"{path}:{number}: {len(cells)} cells, the header has {len(header)}")
        rows.append(cells)
    if header is None or not rows:
        raise HardwareError(f"{path}: kernel table '{family}' has no rows")
    at = {name: header.index(name) for name in (*keys, *axes, "latency_us")}
    # rows grouped by their key cells' text, each key converted once per group (texts that convert alike,
    # such as "64" and "064", join one group)
    by_text: dict[tuple[str, ...], list[list[str]]] = {}
    key_text = _cells_at([at[k] for k in keys])
    for cells in rows:
        by_text.setdefault(key_text(cells), []).append(cells)
    groups: dict[tuple[Any, ...], list[list[str]]] = {}
    for text, cells in by_text.items():
        groups.setdefault(tuple(_key_value(t) for t in text), []).extend(cells)
    grids = {key: _grid(path, family, axes, at, cells, fill_first_axis) for key, cells in groups.items()}
    return TableFile(family, str(path), provenance, keys, axes, grids)


def _cells_at(columns: list[int]) -> Any:
    """A function of a row: the tuple of its cells at `columns`."""
    if not columns:
        return lambda cells: ()
    get = operator.itemgetter(*columns)
    return get if len(columns) > 1 else lambda cells: (get(cells),)


def _key_value(text: str) -> Any:
    return int(text) if text.isdigit() or (text[:1] in "+-" and text[1:].isdigit()) else text


def _grid(path: Path, family: str, axes: tuple[str, ...], at: dict[str, int], rows: list[list[str]],
          fill_first_axis: bool) -> GridTable:
    # numpy parses the cells' text (as float() does)
    coords = np.array(list(map(_cells_at([at[a] for a in axes]), rows)), dtype=float).reshape(len(rows), len(axes))
    latency_us = np.array([r[at["latency_us"]] for r in rows], dtype=float)
    if not np.all(np.isfinite(latency_us)) or np.any(latency_us <= 0) or np.any(coords <= 0):
        raise HardwareError(f"{path}: kernel table '{family}' has a non-positive or non-finite size or latency_us")
    points = tuple(np.unique(coords[:, i]) for i in range(len(axes)))
    shape = tuple(len(p) for p in points)
    times = np.full(shape, np.nan)
    index = tuple(np.searchsorted(p, coords[:, i]) for i, p in enumerate(points))
    times[index] = latency_us * 1e-6
    measured = int(np.sum(~np.isnan(times)))
    if fill_first_axis:
        _fill_first_axis(times, points[0])
    if np.isnan(times).any() or len(rows) != measured:
        raise HardwareError(f"{path}: kernel table '{family}' is not a full grid over {axes} "
                            f"({len(rows)} rows for {int(np.prod(shape))} grid points, or repeated points)")
    return GridTable(axes, points, times, family not in STRAIGHT_FAMILIES)


def _fill_first_axis(times: np.ndarray, first: np.ndarray) -> None:
    """Missing cells above the last measured value of the first axis: that time x (value / measured value)."""
    for i in range(1, len(first)):
        hole = np.isnan(times[i]) & ~np.isnan(times[i - 1])
        times[i][hole] = times[i - 1][hole] * first[i] / first[i - 1]


# ---- the disk cache of parsed tables (llmsim.disk_cache) -------------------------------------------
def read_table_file_cached(path: Path, family: str, keys: tuple[str, ...], axes: tuple[str, ...],
                           fill_first_axis: bool = False) -> TableFile:
    """read_table_file, through the disk cache: a table file parsed once before (same bytes, same reading
    code) is read back from its grids as JSON instead of parsed row by row again."""
    try:
        content = path.read_bytes()
    except OSError:  # read_table_file says what is wrong
        return read_table_file(path, family, keys, axes, fill_first_axis)
    how = json.dumps([family, keys, axes, fill_first_axis]).encode()
    return cached("kernel-tables", content + b"\0" + how, _reader_fingerprint(),
                  lambda: read_table_file(path, family, keys, axes, fill_first_axis),
                  dump=_table_to_json, load=lambda data: _table_from_json(data, path))


@cache
def _reader_fingerprint() -> str | None:
    return source_fingerprint([Path(__file__)])


def _table_to_json(table: TableFile) -> dict[str, Any]:
    grids = [[list(key), list(grid.axes), [p.tolist() for p in grid.points], grid.times_s.ravel().tolist()]
             for key, grid in table.grids.items()]
    return {"family": table.family, "provenance": table.provenance, "keys": list(table.keys),
            "axes": list(table.axes), "grids": grids}


def _table_from_json(data: dict[str, Any], path: Path) -> TableFile:
    grids = {}
    for key, grid_axes, points, times in data["grids"]:
        arrays = tuple(np.array(p, dtype=float) for p in points)
        grids[tuple(key)] = GridTable(tuple(grid_axes), arrays,
                                      np.array(times, dtype=float).reshape([len(p) for p in arrays]),
                                      data["family"] not in STRAIGHT_FAMILIES)
    return TableFile(data["family"], str(path), dict(data["provenance"]), tuple(data["keys"]), tuple(data["axes"]),
                     grids)
