"""A measured kernel table file (`kernels/<device>/<engine>/<family>.csv`): `# key: value` provenance lines,
then CSV rows of key columns, grid axes and `latency_us`, read into one GridTable (llmsim.hardware.kernel_table)
per combination of key values; a missing column, a non-positive time or a hole in a grid is refused by name.
Parsed files are kept in the disk cache (llmsim.disk_cache)."""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ..disk_cache import cached, source_fingerprint
from ..errors import HardwareError
from .kernel_table import STRAIGHT_FAMILIES, GridTable

# key columns added after files were first written -> the value a file without the column holds: MoE rows before
# the token-to-expert distribution was imported were all the package's balanced rows
KEY_DEFAULTS: dict[str, dict[str, str]] = {"moe": {"routing": "balanced"}}


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
    defaults: dict[str, str] = {}  # key columns the file lacks -> the value they read as (KEY_DEFAULTS)
    rows: list[list[str]] = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            provenance.update(provenance_item(line))
            continue
        cells = [c.strip() for c in line.split(",")]
        if header is None:
            header = cells
            defaults = {k: v for k, v in KEY_DEFAULTS.get(family, {}).items() if k in keys and k not in header}
            header = [*header, *defaults]  # a column files written before it held reads as its default
            missing = [c for c in (*keys, *axes, "latency_us") if c not in header]
            if missing:
                raise HardwareError(f"{path}: kernel table '{family}' lacks column(s) {missing}; expected "
                                    f"{[*keys, *axes, 'latency_us']}")
            continue
        if len(cells) != len(header) - len(defaults):
            raise HardwareError(f"{path}:{number}: {len(cells)} cells, the header has {len(header) - len(defaults)}")
        rows.append([*cells, *defaults.values()])
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


def provenance_item(line: str) -> dict[str, str]:
    """{key: value} of a `# key: value` line of a table file ({} for a comment without a key)."""
    key, sep, value = line[1:].partition(":")
    return {key.strip(): value.strip()} if sep else {}


def read_header(path: Path) -> dict[str, str]:
    """The provenance of a table file's leading `# key: value` lines, without reading its rows."""
    found: dict[str, str] = {}
    with path.open() as handle:
        for line in handle:
            if not line.startswith("#"):
                break
            found.update(provenance_item(line))
    return found


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
    try:
        coords = np.array(list(map(_cells_at([at[a] for a in axes]), rows)), dtype=float).reshape(len(rows), len(axes))
        latency_us = np.array([r[at["latency_us"]] for r in rows], dtype=float)
    except ValueError:
        raise HardwareError(_first_non_number(path, family, (*axes, "latency_us"), at, rows)) from None
    if (not np.all(np.isfinite(latency_us)) or np.any(latency_us <= 0) or not np.all(np.isfinite(coords))
            or np.any(coords <= 0)):
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
    return GridTable(axes, points, monotone_envelope(times), family not in STRAIGHT_FAMILIES)


def _first_non_number(path: Path, family: str, columns: tuple[str, ...], at: dict[str, int],
                      rows: list[list[str]]) -> str:
    """The message for the first cell of `columns` that is not a number (a row of `rows` has one)."""
    for cells in rows:
        for column in columns:
            try:
                float(cells[at[column]])
            except ValueError:
                return (f"{path}: kernel table '{family}': {column} {cells[at[column]]!r} is not a number (row "
                        f"{','.join(cells)!r})")
    return f"{path}: kernel table '{family}' holds a cell that is not a number"  # pragma: no cover


def monotone_envelope(times: np.ndarray) -> np.ndarray:
    """Each grid point's time, at most the least time measured at any point at least as large on every axis.

    Every axis of every family is a size of the work (rows, columns, depth, batch, tokens, keys, bytes), so a
    kernel given more work is never faster: the engine could run the smaller problem padded to the larger one
    (CUDA-graph padding does just that with the batch). A point measured slower than a larger one is read at the
    larger one's time. The shipped tables hold such points, from measurement glitches more than kernels:
    an audit found H200 TensorRT-LLM decode MLA at batch 2 and 131,072 keys 1,193 us against 117.7 us at batch 4
    (DeepSeek-V3 TPOT 53.2 ms at batch 2, 14.8 ms at batch 1), GB300 TensorRT-LLM fp8 decode attention at batch 1
    and 128 keys 457.8 us against 11 us, and Blackwell vLLM fp8 GEMMs at m = 1 2.4-3x their time at m = 2.
    Shape: [*grid] -> [*grid]; the suffix minimum along each axis in turn (the minimum over the orthant above)."""
    out = times
    for axis in range(times.ndim):
        flipped = np.flip(out, axis=axis)
        out = np.flip(np.minimum.accumulate(flipped, axis=axis), axis=axis)
    return out


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
    here = Path(__file__).parent  # the file reader and the grid reading rule the parsed grids hold
    return source_fingerprint([Path(__file__), here / "kernel_table.py", here / "log_cubic.py"])


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
