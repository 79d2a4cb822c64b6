"""Everything that imports torch: run real models, calibrate a device, compare and report.

- `calibrate(device="cpu")` measures the device and returns a HardwareSpec (and can write its TOML file).
- `validate(model, hardware, ...)` times the real transformers model and compares it with llmsim.
- `ValidationReport` / `ValidationRow` hold the results; `ValidationReport.from_jsonl` reads recorded runs.
- `compare_published(csv_path)` / `write_published_report(...)`: GPU predictions against published
  measurements (`llmsim.validation.published`; no torch).

torch is imported only when a measurement runs, so reports can be read without it.
"""

from __future__ import annotations

from .calibrate import calibrate, hardware_toml, measure_dispatch
from .published import PublishedComparison, compare_published, write_published_report
from .report import ValidationReport, ValidationRow, plot_predicted_vs_measured, read_results
from .validate import predict_case, validate

__all__ = [
    "PublishedComparison",
    "ValidationReport",
    "ValidationRow",
    "calibrate",
    "compare_published",
    "hardware_toml",
    "measure_dispatch",
    "plot_predicted_vs_measured",
    "predict_case",
    "read_results",
    "validate",
    "write_published_report",
]
