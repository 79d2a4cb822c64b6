"""The reading rule along one axis of a measured kernel table (llmsim.hardware.kernel_table): a monotone cubic
(Fritsch-Carlson) of log time against log size through the measured points, or the straight line, and where a
size falls on an axis (its cell, its weight in the cell, the factor past the top edge). GridTable and ScalarGrid
(kernel_table.py) apply it axis by axis; kernel_table's docstring states the rule and why it was chosen."""

from __future__ import annotations

import bisect
import math
from typing import Any

import numpy as np


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
