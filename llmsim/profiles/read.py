"""read_profile(path): which export a file is, and the reader for it.

Told apart by content, not by file name:
- JSON with "traceEvents" (also .json.gz): a torch.profiler Chrome trace (profiles.torch_trace)
- a .ncu-rep (or .ncu-repz) file, by name: an Nsight Compute report, read through NVIDIA's ncu_report
  module (profiles.ncu_rep; the `ncu` extra)
- CSV with "Metric Name" and "Metric Value" columns: `ncu --csv` (details page, long format; profiles.ncu)
- CSV with "ID" and "Kernel Name" columns and no "Metric Name": `ncu --csv --page raw` (wide format)
- CSV with "Total Time (ns)": `nsys stats --report cuda_gpu_kern_sum --format csv` (profiles.nsys)
- CSV with "Start (ns)": `nsys stats --report cuda_gpu_trace --format csv` (profiles.nsys)
The header picks the reader; the reader then refuses, naming them, columns it needs and does not find.
Lines before the CSV header (ncu's ==PROF== lines, the program's own output, nsys's "Processing ..." lines)
are skipped.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from ..errors import LlmsimError
from .profile import Profile

_BINARY = {
    ".nsys-rep": "export it first: nsys stats --report cuda_gpu_trace --format csv --output . FILE.nsys-rep",
    ".sqlite": "export it first: nsys stats --report cuda_gpu_trace --format csv --output . FILE.sqlite",
    ".qdrep": "export it first: nsys stats --report cuda_gpu_trace --format csv --output . FILE.qdrep",
}
FORMATS = ("torch.profiler Chrome trace JSON", "ncu --csv (details or --page raw)", "Nsight Compute .ncu-rep",
           "nsys stats cuda_gpu_kern_sum CSV", "nsys stats cuda_gpu_trace CSV")


def read_profile(path: Any) -> Profile:
    """A measured run from a torch.profiler trace, an Nsight Compute CSV export or .ncu-rep report, or an
    Nsight Systems stats CSV: its kernels with time, FLOPs and bytes where the export has them, and its
    timeline's span and idle time where it has one."""
    if isinstance(path, str) and not path.strip():  # Path("") is the working folder
        raise LlmsimError("profile '': give the export file to read")
    source = Path(path)
    if source.is_dir():
        raise LlmsimError(f"profile {source}: a folder; give one export file in it")
    if not source.is_file():
        raise LlmsimError(f"profile {source}: no such file")
    if source.suffix in (".ncu-rep", ".ncu-repz"):
        from .ncu_rep import read_ncu_rep

        return read_ncu_rep(source)
    if source.suffix in _BINARY:
        raise LlmsimError(f"profile {source}: a binary {source.suffix} report; {_BINARY[source.suffix]}")
    if source.name.endswith((".json", ".json.gz")) or _starts_with_brace(source):
        from .torch_trace import read_torch_trace

        return read_torch_trace(source)
    with _text_file(source) as handle:  # streamed: an nsys trace of a long run holds millions of rows
        for line in handle:
            if "," not in line:
                continue
            header = next(csv.reader([line]))
            kind = _csv_kind(header)
            if kind is None:
                continue
            rows = (r for r in csv.reader(handle) if r)
            if kind.startswith("ncu"):
                from .ncu import read_ncu

                return read_ncu(source, kind, header, list(rows))
            from .nsys import read_nsys

            return read_nsys(source, kind, header, rows)
    raise LlmsimError(f"profile {source}: not a known export; llmsim reads {', '.join(FORMATS)}")


def _csv_kind(header: list[str]) -> str | None:
    names = {h.strip() for h in header}
    if {"Metric Name", "Metric Value"} <= names:
        return "ncu details"
    if {"ID", "Kernel Name"} <= names:
        return "ncu raw"
    if any(n.startswith("Total Time") for n in names) and ("Name" in names or "Instances" in names):
        return "nsys cuda_gpu_kern_sum"
    if "Start (ns)" in names:
        return "nsys cuda_gpu_trace"
    return None


def _starts_with_brace(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(64).lstrip().startswith(b"{")


def _text_file(path: Path) -> Any:
    try:
        # utf-8-sig: a byte-order mark (a spreadsheet's re-save) is not part of the first column's name
        return open(path, encoding="utf-8-sig", errors="replace", newline="")
    except OSError as exc:
        raise LlmsimError(f"profile {path}: cannot read it ({exc.strerror or exc})") from None
