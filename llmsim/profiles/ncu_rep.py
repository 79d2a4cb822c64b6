"""Nsight Compute binary reports (.ncu-rep) -> Profile, through NVIDIA's `ncu_report` module.

`ncu_report` is NVIDIA's Python report interface (the `ncu-report` package on PyPI, also shipped in an
Nsight Compute install under extras/python): load_report(path) -> IContext -> IRange (one per profiled
range) -> IAction (one per profiled kernel launch) -> IMetric by metric name, each with its value and unit.
A report stores every metric in base units ("ns", "byte", "%", "hz", "byte/s", "inst/cycle") whatever the
CSV export would have printed. Each action becomes the same (kernel name, metrics) launch the CSV readers
produce, and llmsim.profiles.ncu maps the metric names to time, FLOPs, bytes and Speed of Light exactly as
for an `ncu --csv` export. Kernel names are the demangled ones, as `ncu --csv` prints them by default.
A metric without a value (NaN: a launch ncu could not profile) counts as absent, like "n/a" in a CSV.
Needs `pip install 'llmsim[ncu]'`; imported only here, only when a .ncu-rep is read.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..errors import LlmsimError
from .ncu import Metrics, metric_names, ncu_profile
from .profile import Profile

KIND = "ncu-rep"
CSV_INSTEAD = "ncu --import FILE.ncu-rep --csv --page raw > FILE.csv"


def read_ncu_rep(path: Path) -> Profile:
    """A saved Nsight Compute report: one Kernel per kernel name, launches summed."""
    ncu_report = _module(path)
    try:
        context = ncu_report.load_report(str(path))
    except (OSError, RuntimeError) as exc:
        raise LlmsimError(f"profile {path}: ncu_report cannot read it ({exc}); or export it: {CSV_INSTEAD}") from None
    names = metric_names()
    launches: list[tuple[str, Metrics]] = []
    devices: set[str] = set()
    for r in range(context.num_ranges()):
        profiled_range = context.range_by_idx(r)
        for a in range(profiled_range.num_actions()):
            action = profiled_range.action_by_idx(a)
            launches.append((action.name(ncu_report.IAction.NameBase_DEMANGLED), _metrics(action, names)))
            devices.add(_text(action, "device__attribute_display_name"))
    if not launches:
        raise LlmsimError(f"profile {path}: no profiled kernels in it (not an Nsight Compute report, or an empty "
                          "one)")
    named = sorted(d for d in devices if d)
    on = [f"profiled on {', '.join(named)}"] if named else []
    return ncu_profile(path, KIND, launches, "Nsight Compute (ncu-rep)", tuple(on),
                       gpu_name=named[0] if len(named) == 1 else None)


def _module(path: Path) -> Any:
    try:
        import ncu_report
    except ImportError:
        raise LlmsimError(f"profile {path}: reading a .ncu-rep needs NVIDIA's ncu_report module: "
                          f"pip install 'llmsim[ncu]'; or export it first: {CSV_INSTEAD}") from None
    return ncu_report


def _metrics(action: Any, names: tuple[str, ...]) -> Metrics:
    """The launch's metrics among `names` that have a numeric value, keyed as the CSV readers key them."""
    out: Metrics = {}
    for name in names:
        metric = action.metric_by_name(name)
        if metric is None or not metric.has_value():
            continue
        try:
            value = metric.as_double()
        except (TypeError, ValueError):
            continue  # a string metric
        if not math.isnan(value):
            out[f"{name}|{metric.unit()}"] = (metric.unit(), value)
    return out


def _text(action: Any, name: str) -> str:
    metric = action.metric_by_name(name)
    return str(metric.value()) if metric is not None and metric.has_value() else ""
