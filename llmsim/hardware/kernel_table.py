"""A measured kernel table: kernel times on a full grid of shape axes, read in log space.

A table file (`kernels/<device>/<engine>/<family>.csv`) is plain CSV after a block of `# key: value`
provenance lines (source package and version, file, engine and its version, GPU string). Its columns are
the family's key columns (exact-match: dtype, head dim, ...), its grid axes (sizes: m, n, k, batch, ...)
and `latency_us`. Within each combination of keys the rows must form a full grid over the axes.

Reading (`GridTable.time_s`): log(time) multilinear in log(axis) between the measured points, so a
measured point returns its measured time and a point halfway (in log) between two measured points
returns their geometric mean. Beyond the measured range of an axis:
- below the smallest point: the time at the smallest point (a kernel does not get faster than its
  smallest measured shape: launch and tail floors dominate there);
- above the largest point: the time at the largest point times x / x_largest (the work grows in
  proportion, at the efficiency of the largest measured shape).
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


@dataclass(frozen=True)
class GridTable:
    """Times (seconds) on the grid `points[0] x points[1] x ...` of the named axes."""

    axes: tuple[str, ...]
    points: tuple[np.ndarray, ...]  # each sorted ascending, > 0
    times_s: np.ndarray  # shape (len(points[0]), len(points[1]), ...)
    _log_points: tuple[np.ndarray, ...] = field(init=False, repr=False, compare=False)
    _log_times: np.ndarray = field(init=False, repr=False, compare=False)
    _strides: np.ndarray = field(init=False, repr=False, compare=False)
    _log_lists: tuple[list[float], ...] = field(init=False, repr=False, compare=False)
    _log_list: list[float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        points, times = list(self.points), self.times_s
        for axis, p in enumerate(points):
            if len(p) == 1:  # one measured size: a second point at twice it, twice the time (the rule above it)
                points[axis] = np.array([p[0], 2 * p[0]])
                times = np.concatenate([times, 2 * times], axis=axis)
        object.__setattr__(self, "_log_points", tuple(np.log(p) for p in points))
        object.__setattr__(self, "_log_times", np.log(times).ravel())  # flat, C order
        # the flat-index step of each axis
        d = len(points)
        object.__setattr__(self, "_strides", np.array([int(np.prod([len(p) for p in points[i + 1:]]))
                                                       for i in range(d)], dtype=int))
        object.__setattr__(self, "_log_lists", tuple(lp.tolist() for lp in self._log_points))
        object.__setattr__(self, "_log_list", self._log_times.tolist())

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
        # a sweep: each axis located on its own values, then the cell's corners lerped, the last axis first
        # (_nested: memory of one point array per axis)
        located = [_locate(np.asarray(x, dtype=float), lp) for x, lp in zip(coords, self._log_points)]
        strides = self._strides.tolist()

        def nested(axis: int, index: Any) -> Any:
            """log time lerped over axes axis.. of the cells at flat index `index` (of the axes before)."""
            if axis == len(located):
                return self._log_times[index]
            lo, w, _ = located[axis]
            low = nested(axis + 1, index + lo * strides[axis])
            high = nested(axis + 1, index + (lo + 1) * strides[axis])
            return (1.0 - w) * low + w * high

        result = np.broadcast_to(np.exp(nested(0, 0)) * _beyond([f for _, _, f in located]), shape)
        return float(result) if result.ndim == 0 else result

    def _time_at(self, point: tuple[float, ...]) -> float:
        """time_s of one point, the same arithmetic in plain Python (math.log, bisect): the cell's corners lerped
        along the last axis first, then the one before, ...; the factors beyond the top edges multiplied last
        axis first (ScalarGrid reads the same way with some axes held)."""
        located = [_locate_one(x, log_points) for x, log_points in zip(point, self._log_lists)]
        strides = self._strides.tolist()
        corners = [0]  # flat indices of the cell's corners, the last axis varying fastest
        for (lo, _, _), stride in zip(located, strides):
            corners = [c + (lo + side) * stride for c in corners for side in (0, 1)]
        values = [self._log_list[c] for c in corners]
        for _, w, _ in reversed(located):  # each pair along the axis reduced to one: half as many values
            values = [(1.0 - w) * values[i] + w * values[i + 1] for i in range(0, len(values), 2)]
        return math.exp(values[0]) * _beyond([f for _, _, f in located])

    def fixed_at(self, fixed: tuple[float | None, ...]) -> ScalarGrid:
        """time_s of one point with the axes given in `fixed` (None: free) held at those values: a ScalarGrid
        over the free axes, for many reads of one kernel shape that differ in a few axes (a GEMM's M)."""
        return ScalarGrid(self, fixed)


class ScalarGrid:
    """A GridTable read at single points with its last axes held fixed, in plain Python: the fixed axes' cell
    weights applied once (to the log times: a table over the free axes), so a read of a 3-axis GEMM table
    at a new M interpolates one axis. The same arithmetic as GridTable._time_at, which lerps the last axis
    first (the held axes must come after the free ones: TableRead.fixed_at checks)."""

    def __init__(self, grid: GridTable, fixed: tuple[float | None, ...]) -> None:
        log_times = grid._log_times.reshape([len(p) for p in grid._log_points])
        beyond = 1.0
        free = []
        for axis, value in reversed(list(enumerate(fixed))):  # fixed axes reduced last to first
            if value is None:
                free.append(axis)
                continue
            lo, w, factor = _locate_one(float(value), grid._log_lists[axis])  # as GridTable._time_at locates it
            beyond *= factor  # the last axis first, as _beyond multiplies them
            low, high = np.take(log_times, lo, axis=axis), np.take(log_times, lo + 1, axis=axis)
            log_times = (1.0 - w) * low + w * high
        self.beyond = beyond
        self.log_lists = tuple(grid._log_lists[axis] for axis in reversed(free))
        self.log_list = np.asarray(log_times, dtype=float).ravel().tolist()
        self.stride = int(np.asarray(log_times).shape[-1]) if np.ndim(log_times) == 2 else 1

    def reader(self) -> Any:
        """time_s as a function of the free axes' values, written out for one and two free axes (a GEMM's M;
        attention's batch and length): the same arithmetic, with the grid's lists bound once."""
        if len(self.log_lists) == 2:
            return self._reader_2()
        if len(self.log_lists) != 1:
            return self.time_s
        points, times, beyond = self.log_lists[0], self.log_list, self.beyond
        first, top, cells = points[0], points[-1], len(points) - 2
        log, exp, bisect_right = math.log, math.exp, bisect.bisect_right

        def time_s(x: float) -> float:
            log_x = log(x if x > 1e-300 else 1e-300)
            clamped = first if log_x < first else top if log_x > top else log_x
            lo = bisect_right(points, clamped) - 1
            lo = 0 if lo < 0 else cells if lo > cells else lo
            w = (clamped - points[lo]) / (points[lo + 1] - points[lo])
            return exp((1.0 - w) * times[lo] + w * times[lo + 1]) * (beyond * exp(log_x - top) if log_x > top
                                                                       else beyond)

        return time_s

    def _reader_2(self) -> Any:
        """time_s of two free axes (x, y) as a function: each located as _locate_one does, the cell's corners
        lerped along y first, the factors beyond the top edges multiplied y first."""
        locate_x, locate_y = (_locator(points) for points in self.log_lists)
        t, n, beyond, exp = self.log_list, self.stride, self.beyond, math.exp

        def time_s(x: float, y: float) -> float:
            lo0, w0, f0 = locate_x(x)
            lo1, w1, f1 = locate_y(y)
            at = lo0 * n + lo1
            return exp((1.0 - w0) * ((1.0 - w1) * t[at] + w1 * t[at + 1])
                       + w0 * ((1.0 - w1) * t[at + n] + w1 * t[at + n + 1])) * ((beyond * f1) * f0)

        return time_s

    def array_time_s(self, *free: np.ndarray) -> np.ndarray:
        """time_s over arrays of the free axes' values (broadcasting; at most two free axes)."""
        located = [_located(x, points) for x, points in zip(free, self.log_lists)]
        times = np.asarray(self.log_list)
        if len(located) == 1:
            (lo, w, factor), = located
            log_t = (1.0 - w) * times[lo] + w * times[lo + 1]
            factor = self.beyond * factor
        elif len(located) == 2:
            (lo0, w0, f0), (lo1, w1, f1) = located
            at, n = lo0 * self.stride + lo1, self.stride
            log_t = ((1.0 - w0) * ((1.0 - w1) * times[at] + w1 * times[at + 1])
                     + w0 * ((1.0 - w1) * times[at + n] + w1 * times[at + n + 1]))
            factor = (self.beyond * f1) * f0  # the last axis first, as _beyond multiplies them
        elif free:
            raise ValueError("ScalarGrid reads at most two free axes")
        else:
            return np.asarray(math.exp(self.log_list[0]) * self.beyond)
        return np.exp(log_t) * factor

    def time_s(self, *free: float) -> float:
        """The time at the free axes' values (in axis order)."""
        log_t, beyond = 0.0, self.beyond
        if len(free) == 1:
            lo, w, factor = _locate_one(free[0], self.log_lists[0])
            log_t = (1.0 - w) * self.log_list[lo] + w * self.log_list[lo + 1]
            beyond = beyond * factor
        elif len(free) == 2:
            lo0, w0, f0 = _locate_one(free[0], self.log_lists[0])
            lo1, w1, f1 = _locate_one(free[1], self.log_lists[1])
            t, n = self.log_list, self.stride
            at = lo0 * n + lo1
            log_t = ((1.0 - w0) * ((1.0 - w1) * t[at] + w1 * t[at + 1])
                     + w0 * ((1.0 - w1) * t[at + n] + w1 * t[at + n + 1]))
            beyond = (beyond * f1) * f0  # the last axis first, as _beyond multiplies them
        elif free:
            raise ValueError("ScalarGrid reads at most two free axes")
        else:
            log_t = self.log_list[0]
        return math.exp(log_t) * beyond


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


def _locator(log_points: list[float]) -> Any:
    """_locate_one on one axis as a function of x: the same arithmetic, the axis's points bound once."""
    first, top, cells = log_points[0], log_points[-1], len(log_points) - 2
    log, exp, bisect_right = math.log, math.exp, bisect.bisect_right

    def locate(x: float) -> tuple[int, float, float]:
        log_x = log(max(x, 1e-300))
        clamped = min(max(log_x, first), top)
        lo = min(max(bisect_right(log_points, clamped) - 1, 0), cells)
        w = (clamped - log_points[lo]) / (log_points[lo + 1] - log_points[lo])
        return lo, w, (exp(log_x - top) if log_x > top else 1.0)

    return locate


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
    return GridTable(axes, points, times)


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
                                      np.array(times, dtype=float).reshape([len(p) for p in arrays]))
    return TableFile(data["family"], str(path), dict(data["provenance"]), tuple(data["keys"]), tuple(data["axes"]),
                     grids)
