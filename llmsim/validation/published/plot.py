"""The predicted-vs-measured chart of a published comparison (matplotlib, imported when called).

One point per simulated row (its headline metric: tokens/s for end-to-end rows, TFLOP/s for kernels), log-log,
a marker per category and a colour per llmsim engine; y = x and a ±25 % band (the p90 target)."""

from __future__ import annotations

from pathlib import Path

from .compare import PublishedComparison
from .predict import CATEGORIES

MARKERS = {"e2e_llm": "o", "microbench_gemm": "s", "microbench_attention": "^"}
BAND = 0.25


def plot_published(comparison: PublishedComparison, path: str | Path,
                   title: str = "llmsim vs published GPU measurements") -> Path:
    """Write the chart to `path` (PNG); returns the path. Hollow markers: the row's time came from the roofline
    (no measured table for its device, engine or dtype)."""
    import matplotlib

    matplotlib.use("Agg")  # files, not windows
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    points = comparison.primary
    engines = sorted({c.engine for c in points})
    cmap = plt.get_cmap("tab10")
    colours = {e: cmap(i % cmap.N) for i, e in enumerate(engines)}
    fig, ax = plt.subplots(figsize=(7.5, 7))
    for c in points:
        colour = colours[c.engine]
        from_table = not c.timing.startswith("roofline")
        ax.scatter(c.measured, c.predicted, marker=MARKERS.get(c.category, "D"), s=34, linewidths=1.1,
                   facecolors=colour if from_table else "none", edgecolors=colour, zorder=3)
    values = [v for c in points for v in (c.measured, c.predicted)]
    lo, hi = (min(values) / 1.6, max(values) * 1.6) if values else (1.0, 1e4)
    xs = np.geomspace(lo, hi, 50)
    ax.fill_between(xs, xs * (1 - BAND), xs * (1 + BAND), color="0.88", zorder=0)
    ax.plot(xs, xs, color="0.3", lw=1, zorder=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured (tokens/s for e2e_llm, TFLOP/s for micro-benchmarks)")
    ax.set_ylabel("llmsim predicted (same unit)")
    ax.set_title(title)
    handles = [Line2D([], [], color="0.3", lw=1, label="y = x"), Patch(color="0.88", label=f"±{BAND:.0%}")]
    handles += [Line2D([], [], marker=MARKERS[k], ls="", color="0.35", label=k)
                for k in CATEGORIES if any(c.category == k for c in points)]
    handles.append(Line2D([], [], marker="o", ls="", color="0.35", markerfacecolor="none",
                          label="hollow: roofline (no table)"))
    handles += [Patch(color=colours[e], label=f"engine {e}") for e in engines]
    ax.legend(handles=handles, fontsize=8, loc="upper left")
    ax.grid(True, which="both", alpha=0.25)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
