"""Nsight Compute exports -> Profile: the CSV layouts here, and the metric mapping that .ncu-rep reports
(profiles.ncu_rep) share.

Two layouts of `ncu --csv`:
- details (the default page): one row per (launch, metric), columns "ID", "Kernel Name", "Section Name",
  "Metric Name", "Metric Unit", "Metric Value"; sections print labels ("Duration", "Compute (SM)
  Throughput"), --metrics prints metric names (gpu__time_duration.sum).
- raw (--page raw): one row per launch, one column per metric name, a second header row of units.
Needed: each launch's duration (gpu__time_duration.sum, or the Speed Of Light section's "Duration").
Used where present: Speed of Light percentages (sm__throughput / gpu__compute_memory_throughput
.avg.pct_of_peak_sustained_elapsed, or the section's "Compute (SM) Throughput" and "Memory Throughput"),
DRAM bytes (dram__bytes_read.sum + dram__bytes_write.sum, or dram__bytes.sum) and FP32/FP16/FP64 FLOPs
from the SASS counters sm__sass_thread_inst_executed_op_{f,h,d}{add,mul,fma}_pred_on.sum (an FMA is 2
FLOPs). approximation: tensor-core (matrix) work is not in these SASS counters, so a GEMM on tensor cores
shows its non-tensor FLOPs only; its bound then rests on the Speed of Light percentages.
Where a report has no counts but the roofline sections' rates (`--set full`, `--section
SpeedOfLight_RooflineChart`), they give the same numbers: bytes = dram__bytes.sum.per_second x duration,
FLOPs = (add + mul + 2 fma).per_cycle_elapsed (smsp__sass_thread_inst_executed_op_*_pred_on.sum) x
smsp__cycles_elapsed.avg.per_second x duration, the product NVIDIA's roofline chart plots per second.
These rates are taken over the kernel's duration: on a real report of a 1024^3 SGEMM the product gives
1024^3 FFMAs to 16 digits (tests/test_profiles_ncu_rep.py).
Numbers may carry "," thousands separators (English locale); unit prefixes are SI (Kbyte = 1e3 bytes).
Launches without a duration value (a kernel ncu could not profile: "n/a" in a CSV, NaN in a report) are
left out with a note naming them; an export where no launch has one is refused.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from ..errors import LlmsimError
from .classify import kernel_class, name_precision
from .columns import missing_columns
from .model import Kernel
from .profile import Profile

DURATION = ("gpu__time_duration.sum", "Duration")
SM_PCT = ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "Compute (SM) Throughput")
MEMORY_PCT = ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "Memory Throughput")
DRAM_BYTES = ("dram__bytes_read.sum", "dram__bytes_write.sum", "dram__bytes.sum")
DRAM_RATE = "dram__bytes.sum.per_second"
SMSP_CLOCK = "smsp__cycles_elapsed.avg.per_second"
_SASS = "sm__sass_thread_inst_executed_op_{}{}_pred_on.sum"
_SASS_RATE = "smsp__sass_thread_inst_executed_op_{}{}_pred_on.sum.per_cycle_elapsed"
_PRECISIONS, _OPS = ("h", "f", "d"), ("add", "mul", "fma")
_FIXED = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context", "Stream",
          "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value",
          "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup"}
_PREFIX = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1.0,
         "second": 1.0}

Metrics = dict[str, tuple[str, float]]  # metric name or section label -> (unit, value)


def read_ncu(path: Path, kind: str, header: list[str], rows: list[list[str]]) -> Profile:
    if kind == "ncu raw":  # one row per launch: a row cut short would read as a launch without its metrics
        width = len(header)
        short = next((i for i, row in enumerate(rows) if len(row) != width), None)
        if short is not None:
            raise LlmsimError(f"{kind} export {path}: row {short + 2} has {len(rows[short])} fields, the header "
                              f"{width} (a cut or edited export)")
    launches = _details(header, rows) if kind == "ncu details" else _raw(header, rows)
    return ncu_profile(path, kind, launches, f"Nsight Compute ({kind.split()[1]})")


MAX_PERCENT = 150.0  # ncu's "% of peak" figures stay near 100 at most; far past it the export is not ncu's


def check_values(path: Path, kind: str, launches: list[tuple[str, Metrics]]) -> None:
    """Every metric read here (metric_names and the sections' labels) a finite number >= 0, a percentage at most
    MAX_PERCENT: refused by kernel and metric, never read as a NaN share or a negative time. Metrics not read are
    left alone."""
    read = {*metric_names(), *DURATION, *SM_PCT, *MEMORY_PCT, *DRAM_BYTES}
    for name, metrics in launches:
        for key, (unit, value) in metrics.items():
            metric = key.rsplit("|", 1)[0]
            bad = not (math.isfinite(value) and value >= 0) or (unit == "%" and value > MAX_PERCENT)
            if metric in read and bad:
                allowed = f"a percentage in 0..{MAX_PERCENT:g}" if unit == "%" else "a finite number >= 0"
                raise LlmsimError(f"{kind} export {path}: kernel {name!r} has {metric} = {value!r}"
                                  f"{unit and ' ' + unit}; expected {allowed}")


def metric_names() -> tuple[str, ...]:
    """Every metric name the mapping below reads (what a report reader needs to fetch per launch)."""
    sass = [pattern.format(p, op) for pattern in (_SASS, _SASS_RATE) for p in _PRECISIONS for op in _OPS]
    return (*DURATION[:1], *SM_PCT[:1], *MEMORY_PCT[:1], *DRAM_BYTES, DRAM_RATE, SMSP_CLOCK, *sass)


def ncu_profile(path: Path, kind: str, launches: list[tuple[str, Metrics]], label: str,
                notes: tuple[str, ...] = (), gpu_name: str | None = None) -> Profile:
    """Launches (kernel name, its metrics) of any Nsight Compute export -> Profile, one Kernel per name."""
    if not launches:
        raise LlmsimError(f"{kind} export {path}: no kernel launches in it")
    check_values(path, kind, launches)
    untimed = sorted({name for name, metrics in launches if _pick(metrics, DURATION) is None})
    timed = [(name, metrics) for name, metrics in launches if _pick(metrics, DURATION) is not None]
    if not timed:
        raise missing_columns(kind, path, ["gpu__time_duration.sum (or the Speed Of Light section's Duration)"],
                              "profile with --section SpeedOfLight, or --metrics gpu__time_duration.sum,"
                              "sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,...")
    by_name: dict[str, list[Metrics]] = defaultdict(list)
    for name, metrics in timed:
        by_name[name].append(metrics)
    kernels = [_kernel(path, name, group) for name, group in by_name.items()]
    skipped = [f"left out, without a duration value (ncu did not profile them): {len(launches) - len(timed)} "
               f"launches of {', '.join(untimed)}"] if untimed else []
    return Profile(format=label, path=str(path), device="gpu", kernels=sorted(kernels, key=lambda k: -k.time_s),
                   gpu_name=gpu_name, notes=[*notes, *skipped,
                          "Nsight Compute replays each kernel alone: no timeline, so no idle time (use nsys)"])


def _details(header: list[str], rows: list[list[str]]) -> list[tuple[str, Metrics]]:
    """Launches of the long layout, in ID order: (kernel name, its metrics)."""
    launches: dict[str, tuple[str, Metrics]] = {}
    for row in rows:
        cells = dict(zip(header, row))
        launch, metric = cells.get("ID", ""), cells.get("Metric Name", "")
        if not launch or not metric:
            continue  # a rule's advice row, or a units row
        value = _number(cells.get("Metric Value", ""))
        entry = launches.setdefault(launch, (cells.get("Kernel Name", ""), {}))
        if value is not None:
            entry[1].setdefault(f"{metric}|{cells.get('Metric Unit', '')}", (cells.get("Metric Unit", ""), value))
    return list(launches.values())


def _raw(header: list[str], rows: list[list[str]]) -> list[tuple[str, Metrics]]:
    """Launches of the wide layout: a units row first, then one row per launch."""
    units = rows[0] if rows and not rows[0][0].strip() else [""] * len(header)
    out = []
    for row in rows[1:] if rows and units is rows[0] else rows:
        cells = dict(zip(header, row))
        metrics: Metrics = {}
        for column, unit, text in zip(header, units, row):
            value = _number(text) if column not in _FIXED else None
            if value is not None:
                metrics[f"{column}|{unit}"] = (unit, value)
        out.append((cells.get("Kernel Name", ""), metrics))
    return out


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", "").strip())
    except ValueError:
        return None  # "n/a", text values


def _pick(metrics: Metrics, names: tuple[str, ...], percent: bool = False) -> tuple[str, float] | None:
    """The first of `names` present (a section label as well as a metric name); percentages only with a
    % unit (the Memory Workload section also has a "Memory Throughput" in Gbyte/s)."""
    for key, (unit, value) in metrics.items():
        name = key.rsplit("|", 1)[0]
        if name in names and (unit == "%") == percent:
            return unit, value
    return None


def _scaled(path: Path, what: str, unit: str, value: float, base: str) -> float:
    """value in base units: "Mbyte" -> 1e6 bytes, "usecond" -> 1e-6 s."""
    if base == "second":
        if unit not in _TIME:
            raise LlmsimError(f"ncu export {path}: {what} has unit {unit!r}; expected one of {', '.join(_TIME)}")
        return value * _TIME[unit]
    prefix = unit[: -len(base)] if unit.endswith(base) else None
    if prefix not in _PREFIX:
        raise LlmsimError(f"ncu export {path}: {what} has unit {unit!r}; expected {base} with an SI prefix")
    return value * _PREFIX[prefix]


def _seconds(path: Path, metrics: Metrics) -> float:
    unit, value = _pick(metrics, DURATION) or ("", 0.0)
    return _scaled(path, "the duration", unit, value, "second")


def _bytes(path: Path, metrics: Metrics) -> float | None:
    """read + write, else dram__bytes.sum, else the roofline section's rate x duration."""
    read, written = _pick(metrics, DRAM_BYTES[:1]), _pick(metrics, DRAM_BYTES[1:2])
    if read and written:
        return sum(_scaled(path, "dram bytes", u, v, "byte") for u, v in (read, written))
    both = _pick(metrics, DRAM_BYTES[2:])
    if both:
        return _scaled(path, "dram__bytes.sum", *both, "byte")
    rate = _pick(metrics, (DRAM_RATE,))
    # bytes = (bytes / s) * s
    return _rate(path, DRAM_RATE, *rate, "byte") * _seconds(path, metrics) if rate else None


def _flops(path: Path, metrics: Metrics) -> float | None:
    """add + mul + 2 * fma over the precisions whose three counters are all present (counts, else the
    roofline section's instructions per SMSP cycle x SMSP cycles per second x duration)."""
    total, found = 0.0, False
    clock = _pick(metrics, (SMSP_CLOCK,))
    for p in _PRECISIONS:
        counts = [_pick(metrics, (_SASS.format(p, op),)) for op in _OPS]
        rates = [_pick(metrics, (_SASS_RATE.format(p, op),)) for op in _OPS]
        if all(counts):
            add, mul, fma = (_scaled(path, "a SASS instruction count", u, v, "inst") if u else v
                             for u, v in counts)  # type: ignore[misc]
        elif all(rates) and clock:
            # instructions = (inst / cycle) * (cycle / s) * s
            cycles = _rate(path, SMSP_CLOCK, *clock, "cycle") * _seconds(path, metrics)
            add, mul, fma = (_scaled(path, "a SASS instruction rate", u, v, "inst/cycle") * cycles
                             for u, v in rates)  # type: ignore[misc]
        else:
            continue
        found = True
        total += add + mul + 2 * fma
    return total if found else None


def _rate(path: Path, what: str, unit: str, value: float, base: str) -> float:
    """value in base units per second: "byte/s", "Gbyte/second", "Kbyte/usecond"; for cycles also "hz",
    "Ghz", "cycle/nsecond"."""
    if base == "cycle" and unit.lower().endswith("hz"):
        prefix = unit[:-2]
        if prefix not in _PREFIX:
            raise LlmsimError(f"ncu export {path}: {what} has unit {unit!r}; expected hz with an SI prefix")
        return value * _PREFIX[prefix]
    amount, _, per = unit.partition("/")
    if per not in _TIME:
        raise LlmsimError(f"ncu export {path}: {what} has unit {unit!r}; expected {base}/second with SI prefixes")
    return _scaled(path, what, amount, value, base) / _TIME[per]


def _kernel(path: Path, name: str, launches: list[Metrics]) -> Kernel:
    times = [_seconds(path, m) for m in launches]
    flops = [_flops(path, m) for m in launches]
    nbytes = [_bytes(path, m) for m in launches]
    sm = [_pick(m, SM_PCT, percent=True) for m in launches]
    mem = [_pick(m, MEMORY_PCT, percent=True) for m in launches]
    total = sum(times)

    def weighted(values: list[tuple[str, float] | None]) -> float | None:  # time-weighted mean over launches
        if not all(values) or total <= 0:
            return None
        return sum(t * v[1] for t, v in zip(times, values) if v) / total

    return Kernel(name=name, calls=len(launches), time_s=total, op_class=kernel_class(name),
                  precision=name_precision(name),
                  flops=sum(f for f in flops if f is not None) if all(f is not None for f in flops) else None,
                  flops_source="counters" if all(f is not None for f in flops) else None,
                  bytes=sum(b for b in nbytes if b is not None) if all(b is not None for b in nbytes) else None,
                  bytes_source="counters" if all(b is not None for b in nbytes) else None,
                  sm_pct=weighted(sm), memory_pct=weighted(mem))
