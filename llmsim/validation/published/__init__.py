"""llmsim against published measurements: GPU runs and kernel benchmarks from public sources.

    comparison = compare_published()            # default: <checkout>/../shared/reference/published_measurements.csv
    write_published_report(comparison, "validation/published.md")

Each row of the CSV is predicted with the llmsim engine of the framework that produced it (end-to-end rows
with `simulate(..., engine=...)`, GEMM and attention micro-benchmarks with that engine's measured kernel
table, or the roofline for one kernel where no table covers the GPU) or skipped with the reason.
error_pct = 100 * (predicted - measured) / measured; roofline_error_pct the same for the roofline at the
hardware files' achievable fractions (llmsim before measured tables).

    plot_published(comparison, "validation/published_vs_measured.png")   # needs matplotlib

Modules: rows (the CSV into typed rows), mapping (published names -> shipped models and hardware files),
options (engine / simulate_kwargs / hardware_overrides threaded through), e2e and kernels (predicting one row
per category), predict (the dispatch), compare (statistics and compare_published), report and patterns
(the markdown), plot (the chart; matplotlib imported when called). No torch.
"""

from __future__ import annotations

from .compare import PublishedComparison, Stats, compare_published, error_stats
from .options import PredictOptions
from .plot import plot_published
from .predict import predict_row
from .report import render_published_report, write_published_report
from .results import Comparison, Skipped
from .rows import PublishedRow, default_csv_path, read_rows

__all__ = [
    "Comparison",
    "PredictOptions",
    "PublishedComparison",
    "PublishedRow",
    "Skipped",
    "Stats",
    "compare_published",
    "default_csv_path",
    "error_stats",
    "plot_published",
    "predict_row",
    "read_rows",
    "render_published_report",
    "write_published_report",
]
