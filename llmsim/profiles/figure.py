"""A measured profile on the device's roofline (matplotlib, imported only here): each kernel with FLOPs and
bytes at its arithmetic intensity and achieved FLOP/s, sized by its share of the kernel time, coloured by
op class; a SimulationResult's predicted ops of one phase beside them as hollow markers."""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")  # files, not windows
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ..hardware.spec import HardwareSpec, load_hardware
from .bound import peak_flops_per_s
from .compare import KIND_CLASS
from .model import ProfileData

CLASS_COLOURS = {"matmul": "tab:blue", "attention": "tab:purple", "elementwise": "tab:olive",
                 "communication": "tab:pink", "copy": "tab:cyan",
                 "other": "tab:gray"}


def profile_roofline_figure(profile: ProfileData, hardware: Any, result: Any = None, phase: str = "prefill") -> Figure:
    """The roofline of `hardware` (memory roof, the matrix roof at the profile's main matmul precision, the
    vector roof) with the measured kernels on it and, given a SimulationResult, its predicted ops."""
    hw: HardwareSpec = load_hardware(hardware)
    placed = [k for k in profile.kernels if k.flops and k.bytes and k.time_s > 0]
    fig, ax = plt.subplots(figsize=(11, 6))
    fig.subplots_adjust(left=0.08, right=0.70, top=0.92, bottom=0.1)
    bandwidth = hw.memory_bandwidth_bytes_per_s
    matmuls = [k for k in placed if k.op_class in ("matmul", "attention")]
    matrix_peak, _ = peak_flops_per_s(max(matmuls, key=lambda k: k.time_s), hw) if matmuls else (
        max(q.value for q in hw.matrix_flops_per_s.values()), "")
    vector_peak = hw.vector_flops_per_s["fp32"].value
    xs = [k.flops / k.bytes for k in placed]
    x_lo, x_hi = min([0.05, *xs]) / 2, max([1e4, *xs]) * 2
    ax.plot([x_lo, matrix_peak / bandwidth], [x_lo * bandwidth, matrix_peak], color="k", lw=1.6,
            label=f"memory {bandwidth / 1e12:.3g} TB/s")
    for peak, colour, label in ((matrix_peak, "tab:red", "matrix unit (matmuls)"),
                                (vector_peak, "tab:green", "fp32 vector unit")):
        ax.plot([peak / bandwidth, x_hi], [peak, peak], color=colour, lw=2, label=f"{label} {peak / 1e12:.3g} TFLOP/s")
    total_s = sum(k.time_s for k in placed) or 1.0
    for op_class, colour in CLASS_COLOURS.items():
        chosen = [k for k in placed if k.op_class == op_class]
        if chosen:
            ax.scatter([k.flops / k.bytes for k in chosen], [k.flops / k.time_s for k in chosen],
                       s=[20 + 600 * k.time_s / total_s for k in chosen], color=colour, alpha=0.6, edgecolor="k",
                       lw=0.4, label=f"measured {op_class} ({len(chosen)})")
    if result is not None:
        _predicted(ax, result, phase)
    left_out = sum(1 for k in profile.kernels if k.op_class != "host") - len(placed)
    if left_out:
        ax.text(0.01, 0.01, f"{left_out} kernels without both FLOPs and bytes not drawn (see kernels_table)",
                transform=ax.transAxes, fontsize=8, color="0.3")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    reached = [k.flops / k.time_s for k in placed]  # every placed kernel inside the axes, the slowest too
    ax.set_ylim(min([x_lo * bandwidth, 1e8, *[r / 2 for r in reached]]), max([matrix_peak, vector_peak, *reached]) * 3)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("achieved FLOP/s")
    peaks = "measured peaks" if "calibrated by llmsim" in hw.description else "datasheet peaks"  # calibrate's file
    ax.set_title(f"{profile.format}: {profile.path} on the {hw.name} roofline ({peaks})", fontsize=9)
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def _predicted(ax: Any, result: Any, phase: str) -> None:
    """The phase's predicted ops at their intensity and roofline FLOP/s (kernel time, no overhead)."""
    phase_result = result.prefill if phase == "prefill" else result.decode
    for op_class, colour in CLASS_COLOURS.items():
        ops = [op for op in phase_result.ops if KIND_CLASS.get(op.kind, "other") == op_class and op.bytes > 0
               and (op.matmul_flops + op.vector_flops) > 0 and op.time_s - op.overhead_s - op.communication_s > 0]
        if ops:
            ax.scatter([(op.matmul_flops + op.vector_flops) / op.bytes for op in ops],
                       [(op.matmul_flops + op.vector_flops) / (op.time_s - op.overhead_s - op.communication_s)
                        for op in ops], s=40, facecolor="none", edgecolor=colour, lw=1.2, marker="D",
                       label=f"predicted {op_class} ({phase})")
