"""Profile -> rows and a text table: per kernel its time, FLOPs, bytes, achieved rates, share of the
roofline, bound and why, and where FLOPs and bytes came from; the timeline's idle time as one more row."""

from __future__ import annotations

import re
from typing import Any

from ..errors import check_top, warn_assumption
from ..hardware.spec import load_hardware
from .bound import classify
from .model import ProfileData

IDLE_ROW = "(idle: no kernel running)"


def kernel_rows(profile: ProfileData, hardware: Any = None) -> list[dict[str, Any]]:
    hw = load_hardware(hardware) if hardware is not None else None
    total_s = (profile.span_s if profile.span_s else profile.kernel_time_s) or 1.0
    rows = []
    for k in profile.kernels:
        c = classify(k, hw)
        rows.append({
            "kernel": k.name, "shapes": k.shapes, "class": k.op_class, "calls": k.calls, "time_s": k.time_s,
            "share": k.time_s / total_s, "flops": k.flops, "bytes": k.bytes,
            "flops_per_s": c["flops_per_s"], "bytes_per_s": c["bytes_per_s"],
            "roofline_fraction": c["roofline_fraction"], "bound": c["bound"], "why": c["why"],
            "flops_source": k.flops_source, "bytes_source": k.bytes_source,
        })
    if profile.idle_s is not None:
        if profile.device == "cpu":
            why = "host time between top-level aten ops (Python, module code, framework)"
        else:
            launch = ("" if profile.host_launch_s is None else
                      f"; host launch calls took {profile.host_launch_s * 1e3:.3g} ms")
            why = f"device idle between kernels (host launch, dispatch or sync){launch}"
        rows.append({"kernel": IDLE_ROW, "shapes": "", "class": "overhead", "calls": 0, "time_s": profile.idle_s,
                     "share": profile.idle_s / total_s, "flops": None, "bytes": None, "flops_per_s": None,
                     "bytes_per_s": None, "roofline_fraction": None, "bound": "overhead", "why": why,
                     "flops_source": None, "bytes_source": None})
    return sorted(rows, key=lambda r: -r["time_s"])


def _num(value: float | None, scale: float, digits: str = ".3g") -> str:
    return "-" if value is None else format(value / scale, digits)


def format_table(profile: ProfileData, hardware: Any = None, top: int | None = None) -> str:
    shown_count = check_top(top)  # before the work
    rows = kernel_rows(profile, hardware)
    shown = rows[:shown_count]
    header = (f"{'kernel':<58} {'class':<13} {'calls':>5} {'time ms':>9} {'share':>6} {'GFLOP':>8} {'MB':>8} "
              f"{'GFLOP/s':>8} {'GB/s':>7} {'roof':>6} {'bound':<8} FLOPs/bytes from  why")
    lines = [str(profile), header]
    for r in shown:
        name = r["kernel"] + (f" {r['shapes']}" if r["shapes"] else "")
        name = name if len(name) <= 58 else name[:55] + "..."
        sources = f"{r['flops_source'] or '-'}/{r['bytes_source'] or '-'}"
        roof = "-" if r["roofline_fraction"] is None else f"{r['roofline_fraction']:.1%}"
        lines.append(f"{name:<58} {r['class']:<13} {r['calls']:>5} {r['time_s'] * 1e3:>9.4f} {r['share']:>6.1%} "
                     f"{_num(r['flops'], 1e9):>8} {_num(r['bytes'], 1e6):>8} {_num(r['flops_per_s'], 1e9):>8} "
                     f"{_num(r['bytes_per_s'], 1e9):>7} {roof:>6} {r['bound']:<8} {sources:<17} {r['why']}")
    if len(rows) > len(shown):
        lines.append(f"... {len(rows) - len(shown)} more rows")
    lines += [f"note: {n}" for n in profile.notes]
    shares = sum(r["share"] for r in rows)
    if profile.span_s and shares > 1.001:  # concurrent kernels: more kernel time than the span holds
        lines.append(f"note: kernels ran concurrently (on several streams): {profile.kernel_time_s * 1e3:.4g} ms of "
                     f"kernel time in a {profile.span_s * 1e3:.4g} ms span; each share is a row's time over the span, "
                     f"so the shares add to {shares:.1%}")
    mismatch = gpu_mismatch(profile, hardware)
    if mismatch:
        lines.append(f"note: {mismatch}")
    return "\n".join(lines)


def gpu_mismatch(profile: ProfileData, hardware: Any) -> str | None:
    """A one-line warning (also raised as an AssumptionWarning) when the profile ran on another kind of device
    than the hardware file's (a CPU trace on a GPU's roofline) or the export names a GPU that is not the file's:
    the model number in the file's name (h100, a10g, 4090, 6000, ...) must appear in the GPU string the export
    records. None when they agree or either is unknown."""
    if hardware is None:
        return None
    hw = load_hardware(hardware)
    if profile.device != hw.device_type:  # a CPU trace on a GPU's roofline, or a GPU export on a CPU's
        message = (f"the profile's times are a {profile.device.upper()}'s, but its roofline and bounds are "
                   f"{hw.name}'s, a {hw.device_type.upper()}: pass the hardware file of the device that ran it")
        warn_assumption(message)
        return message
    if profile.gpu_name is None:
        return None
    # the model numbers in the file's name (h100, a100, 4090), not a memory size (a100-80gb's 80gb is in H100 80GB's)
    models = [t for t in re.split(r"[^a-z0-9]+", hw.name.lower())
              if any(ch.isdigit() for ch in t) and not re.fullmatch(r"\d+gb", t)]
    recorded = re.sub(r"[^a-z0-9]", "", profile.gpu_name.lower())
    if not models or any(m in recorded for m in models):
        return None
    message = (f"the profile ran on {profile.gpu_name}, but its roofline and bounds are {hw.name}'s: pass the "
               f"hardware file of the GPU that ran it (--hardware)")
    warn_assumption(message)
    return message
