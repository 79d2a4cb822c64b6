"""What bounds a measured kernel, and why: compute, memory, latency or overhead.

Thresholds (documented in docs/profiling.md):
- With Nsight Compute's Speed of Light percentages (compute = sm__throughput, memory =
  gpu__compute_memory_throughput, both .avg.pct_of_peak_sustained_elapsed): the larger one names the bound
  when it reaches LATENCY_FRACTION (60%) of peak; below that on both units the kernel is latency-bound.
  60% is NVIDIA's own line: its SOLBottleneck rule reports "achieved compute throughput and/or memory
  bandwidth below 60.0% of peak typically indicate latency issues".
- Otherwise, with FLOPs and bytes (counters, shapes or a matched op) and a device: the roofline time
  max(FLOPs / peak, bytes / bandwidth), peaks from the datasheet (not derated); the larger term names the
  bound when the kernel reaches LATENCY_FRACTION of that roofline, else it is latency-bound (neither unit
  near its peak: launch, dispatch, synchronisation or too little parallel work).
- Overhead: time with no kernel of its own: the timeline's idle gaps (Profile.idle_s) and, in torch.profiler
  CPU traces, the self time of views and wrapper ops (aten::linear around its aten::mm).
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import OptionError
from ..hardware.spec import HardwareSpec
from .model import Kernel

LATENCY_FRACTION = 0.6


def peak_flops_per_s(kernel: Kernel, hw: HardwareSpec) -> tuple[float, str]:
    """The datasheet peak a kernel's FLOPs run at: the matrix unit at its precision for matmuls and
    attention, the vector unit otherwise; (peak, what was assumed)."""
    precision = kernel.precision
    assumed = ""
    if precision is None:
        precision = "bf16" if hw.device_type == "gpu" and "bf16" in hw.matrix_flops_per_s else "fp32"
        assumed = f"precision not in the export: {precision} assumed"
    if kernel.op_class in ("matmul", "attention"):
        try:
            return hw.matrix_peak_flops_per_s(precision), assumed
        except OptionError:
            return hw.vector_flops_per_s["fp32"].value, f"no {precision} matrix peak on {hw.name}: fp32 vector used"
    return hw.vector_peak_flops_per_s(precision), assumed


_HOST_COPY = re.compile(r"host.to.device|device.to.host|htod|dtoh|pinned|pageable", re.IGNORECASE)  # nsys names


def classify(kernel: Kernel, hw: HardwareSpec | None) -> dict[str, Any]:
    """Achieved FLOP/s and bytes/s, the fraction of the roofline reached, the bound and why."""
    t = kernel.time_s
    out: dict[str, Any] = {
        "flops_per_s": kernel.flops / t if kernel.flops is not None and t > 0 else None,
        "bytes_per_s": kernel.bytes / t if kernel.bytes is not None and t > 0 else None,
        "roofline_fraction": None,
    }
    if kernel.op_class == "host":
        return {**out, "bound": "overhead", "why": "no kernel of its own (a view or a wrapper op): host dispatch"}
    if kernel.op_class == "copy" and _HOST_COPY.search(kernel.name):
        return {**out, "bound": "unknown", "why": "a copy between host and device: the host link's speed "
                                                  "(PCIe, NVLink-C2C), not the HBM roofline"}
    if kernel.sm_pct is not None and kernel.memory_pct is not None:
        return {**out, **_from_speed_of_light(kernel.sm_pct, kernel.memory_pct)}
    if hw is None or t <= 0 or (kernel.flops is None and kernel.bytes is None):
        counted = kernel.flops is not None or kernel.bytes is not None
        why = ("give a device to place it on the roofline" if hw is None and counted else
               "a time of 0: no rate to place on the roofline (its counts are read)" if counted else
               "time only: no counters, shapes or matched op")
        return {**out, "bound": "unknown", "why": why}
    peak, assumed = peak_flops_per_s(kernel, hw)
    compute_s = (kernel.flops or 0.0) / peak
    memory_s = (kernel.bytes or 0.0) / hw.memory_bandwidth_bytes_per_s
    term = "compute" if compute_s >= memory_s else "memory"
    fraction = max(compute_s, memory_s) / t
    missing = "; bytes unknown" if kernel.bytes is None else "; FLOPs unknown" if kernel.flops is None else ""
    detail = f"{fraction:.1%} of the roofline, {term} term larger"
    if kernel.flops and kernel.bytes:
        detail += (f" (intensity {kernel.flops / kernel.bytes:.3g} FLOP/B, ridge "
                   f"{peak / hw.memory_bandwidth_bytes_per_s:.3g})")
    detail += missing + (f"; {assumed}" if assumed else "")
    if fraction >= LATENCY_FRACTION:
        return {**out, "roofline_fraction": fraction, "bound": term, "why": detail}
    return {**out, "roofline_fraction": fraction, "bound": "latency",
            "why": f"{detail}: neither unit near its peak (launch, dispatch, sync or too little work)"}


def _from_speed_of_light(sm_pct: float, memory_pct: float) -> dict[str, Any]:
    top = max(sm_pct, memory_pct)
    fraction = top / 100.0
    if fraction < LATENCY_FRACTION:
        return {"roofline_fraction": fraction, "bound": "latency",
                "why": f"Speed of Light: compute {sm_pct:.3g}% and memory {memory_pct:.3g}% of peak, both < "
                       f"{LATENCY_FRACTION:.0%} (NVIDIA SOLBottleneck rule: latency issues)"}
    term = "compute" if sm_pct >= memory_pct else "memory"
    return {"roofline_fraction": fraction, "bound": term,
            "why": f"Speed of Light: compute {sm_pct:.3g}%, memory {memory_pct:.3g}% of peak"}
