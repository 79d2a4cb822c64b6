"""The roofline of a traced module (llmsim.trace): the device's ceilings at the run's precisions and
every kernel at its arithmetic intensity and attained FLOP/s (FLOPs / kernel time without overhead),
sized by its share of the forward pass, coloured by kind. matplotlib is imported only here."""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")  # files, not windows
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ..hardware.spec import load_hardware

KIND_COLOURS = {"matmul": "tab:red", "attention": "tab:purple", "norm": "tab:green", "elementwise": "tab:orange",
                "embedding": "tab:brown"}


def trace_roofline_figure(result: Any, label_top: int = 5) -> Figure:
    """The figure of a TraceResult (see the module docstring); the `label_top` slowest kernels numbered."""
    hw = load_hardware(result.hardware)
    bandwidth = hw.memory_bandwidth_bytes_per_s
    matrix = hw.matrix_flops_per_s.get(result.precision)
    vector_name = "fp16" if result.precision in ("fp16", "bf16") and "fp16" in hw.vector_flops_per_s else "fp32"
    vector = hw.vector_flops_per_s[vector_name].value
    fig, ax = plt.subplots(figsize=(11, 6))
    kernels = [k for k in result.kernels if k.flops > 0 and k.bytes > 0]
    intensities = [k.arithmetic_intensity for k in kernels]
    x_lo, x_hi = min([0.1, *intensities]) / 2, max([1e4, *intensities]) * 2
    roofs = [(f"{vector_name} vector", vector, "tab:green")]
    if matrix is not None:
        roofs.insert(0, (f"{result.precision} matrix", matrix.value, "tab:red"))
    top = max(peak for _, peak, _ in roofs)
    ax.plot([x_lo, top / bandwidth], [x_lo * bandwidth, top], color="k", lw=1.6,
            label=f"memory {bandwidth / 1e12:.2f} TB/s")
    for name, peak, colour in roofs:
        ax.plot([peak / bandwidth, x_hi], [peak, peak], color=colour, lw=2, label=f"{name} {peak / 1e12:.0f} TFLOP/s")
    total = result.time_s or 1.0
    slowest = sorted(kernels, key=lambda k: -k.time_s)[:label_top]
    for kind, colour in KIND_COLOURS.items():
        chosen = [k for k in kernels if k.kernel.kind == kind]
        if not chosen:
            continue
        attained = [k.flops / max(k.time_s, 1e-30) for k in chosen]
        ax.scatter([k.arithmetic_intensity for k in chosen], attained, s=[20 + 400 * k.time_s / total for k in chosen],
                   color=colour, alpha=0.6, label=kind, edgecolors="none")
    for i, k in enumerate(slowest, 1):
        ax.annotate(f"{i}", (k.arithmetic_intensity, k.flops / max(k.time_s, 1e-30)), fontsize=8,
                    textcoords="offset points", xytext=(4, 4))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attained FLOP/s (time with overhead)")
    ax.set_title(f"{result.model} on {result.hardware}, {result.dtype}, engine {result.engine}", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    key = "\n".join(f"{i}. {k.kernel.aten} @ {k.kernel.module or '<root>'}" for i, k in enumerate(slowest, 1))
    ax.text(1.01, 1.0, key, transform=ax.transAxes, va="top", fontsize=7)
    fig.subplots_adjust(right=0.62)
    return fig
