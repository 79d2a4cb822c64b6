"""Nsight Systems stats CSVs -> Profile.

- cuda_gpu_kern_sum (`nsys stats --report cuda_gpu_kern_sum --format csv`): one row per kernel name with
  "Total Time (ns)", "Instances" and "Name" (older versions: "Total Time", "Calls"). No timeline, so no
  idle time; no FLOPs or bytes (compare() can match kernels to predicted ops).
- cuda_gpu_trace (`--report cuda_gpu_trace`): one row per kernel launch or memory copy with "Start (ns)",
  "Duration (ns)" and "Name"; the timeline gives span_s and idle_s (the GPU waiting on the host: overhead).
  Copies and memsets (rows without a grid) are kept as "copy" kernels with their "Bytes (MB)" (MB = 1e6
  bytes, nsys's unit) as measured bytes.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from ..errors import LlmsimError
from .classify import kernel_class, name_precision
from .columns import missing_columns
from .model import Kernel
from .profile import Profile
from .timeline import covered_s

_NS = 1e-9


# the columns read (the others are not kept: a trace's rows have about twenty, and a long run millions of rows)
_READ = ("Start (ns)", "Duration (ns)", "Name", "GrdX", "Device", "Total Time (ns)", "Total Time", "Instances", "Calls")


def read_nsys(path: Path, kind: str, header: list[str], rows: Iterable[list[str]]) -> Profile:
    columns = [h.strip() for h in header]
    kept = [(i, c) for i, c in enumerate(columns) if c in _READ or c.startswith("Bytes")]
    table = []
    for number, row in enumerate(rows, start=2):
        # a row may leave its last field out (an empty trailing column); one cut shorter is a damaged export, whose
        # kernels would be dropped without a word
        if len(row) < len(columns) - 1:
            raise LlmsimError(f"{kind} export {path}: row {number} has {len(row)} fields, the header "
                              f"{len(columns)} (a cut or edited export)")
        table.append({c: row[i] for i, c in kept if i < len(row)})
    if kind == "nsys cuda_gpu_kern_sum":
        return _kern_sum(path, kind, columns, table)
    return _gpu_trace(path, kind, columns, table)


def _column(path: Path, kind: str, columns: list[str], choices: tuple[str, ...]) -> str:
    for name in choices:
        if name in columns:
            return name
    raise missing_columns(kind, path, [" or ".join(repr(c) for c in choices)],
                          f"found {', '.join(columns)}; re-export with `nsys stats --report {kind.split()[1]} "
                          "--format csv`")


def _float(path: Path, text: str, column: str) -> float:
    """A finite number >= 0 (every column read here is a time, a count or a size)."""
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        raise LlmsimError(f"nsys export {path}: {column} value {text!r} is not a number") from None
    if not (math.isfinite(value) and value >= 0):
        raise LlmsimError(f"nsys export {path}: {column} value {text!r} must be a finite number >= 0")
    return value


def _count(path: Path, text: str, column: str) -> int:
    """A whole number of launches >= 1."""
    value = _float(path, text, column)
    if value != int(value) or value < 1:
        raise LlmsimError(f"nsys export {path}: {column} value {text!r} must be a whole number of launches >= 1")
    return int(value)


def _kern_sum(path: Path, kind: str, columns: list[str], table: list[dict[str, str]]) -> Profile:
    total = _column(path, kind, columns, ("Total Time (ns)", "Total Time"))
    calls = _column(path, kind, columns, ("Instances", "Calls"))
    name = _column(path, kind, columns, ("Name",))
    kernels = [Kernel(name=r[name], calls=_count(path, r[calls], calls),
                      time_s=_float(path, r[total], total) * _NS, op_class=kernel_class(r[name]),
                      precision=name_precision(r[name])) for r in table if r.get(name)]
    if not kernels:
        raise LlmsimError(f"{kind} export {path}: no kernel rows under its header")
    return Profile(format="Nsight Systems (cuda_gpu_kern_sum)", path=str(path), device="gpu",
                   kernels=sorted(kernels, key=lambda k: -k.time_s),
                   notes=["cuda_gpu_kern_sum has no timeline: idle time (overhead) needs cuda_gpu_trace"])


def _gpu_trace(path: Path, kind: str, columns: list[str], table: list[dict[str, str]]) -> Profile:
    start = _column(path, kind, columns, ("Start (ns)",))
    duration = _column(path, kind, columns, ("Duration (ns)",))
    name = _column(path, kind, columns, ("Name",))
    size = next((c for c in columns if c.startswith("Bytes")), None)
    intervals = []
    groups: dict[str, list[tuple[float, float | None]]] = defaultdict(list)
    for r in table:
        if not r.get(name):
            continue
        t0, dt = _float(path, r[start], start), _float(path, r[duration], duration)
        intervals.append((t0, t0 + dt))
        copy = not r.get("GrdX", "x").strip()  # copies and memsets have no grid
        nbytes = _float(path, r[size], size) * 1e6 if copy and size and r.get(size, "").strip() else None
        groups[r[name]].append((dt * _NS, nbytes))
    if not groups:
        raise LlmsimError(f"{kind} export {path}: no kernel rows under its header")
    kernels = []
    for kernel_name, items in groups.items():
        known = all(b is not None for _, b in items)
        kernels.append(Kernel(
            name=kernel_name, calls=len(items), time_s=sum(t for t, _ in items),
            op_class="copy" if known else kernel_class(kernel_name), precision=name_precision(kernel_name),
            bytes=sum(b for _, b in items if b is not None) if known else None,
            bytes_source="counters" if known else None))
    span_ns = max(e for _, e in intervals) - min(s for s, _ in intervals)
    # the GPU its Device column names ("NVIDIA H100 80GB HBM3 (0)"), for the wrong-device warning, as an .ncu-rep's
    named = {re.sub(r"\s*\(\d+\)\s*$", "", r["Device"]).strip() for r in table if r.get("Device", "").strip()}
    return Profile(format="Nsight Systems (cuda_gpu_trace)", path=str(path), device="gpu",
                   kernels=sorted(kernels, key=lambda k: -k.time_s), span_s=span_ns * _NS,
                   idle_s=(span_ns - covered_s(intervals)) * _NS,
                   gpu_name=named.pop() if len(named) == 1 else None)
