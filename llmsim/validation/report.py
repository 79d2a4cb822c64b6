"""Validation results: one row per measured case, summaries, a Markdown table, JSON lines on disk.

This module does not import torch, so recorded runs can be read and summarised anywhere.

error_pct = 100 * (predicted - measured) / measured: positive means llmsim predicts too slow a run.
spread = (p90 - p10) / median of the timed repeats: how noisy the measurement was.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..errors import LlmsimError

OP_CLASSES = ("matmul", "attention", "elementwise", "other")


class ValidationRow(BaseModel):
    """One measured case: a prefill of seq_len tokens, or one decode step with kv_len tokens cached."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    phase: Literal["prefill", "decode"]
    batch_size: int
    seq_len: int | None = None
    kv_len: int | None = None
    dtype: str
    num_layers: int | None = None
    overhead: str = "eager"
    attention: str = "flash"  # llmsim's attention option for the kernel that ran
    device: str
    device_name: str = ""
    hardware: str = ""
    status: str = "ok"  # "ok", "oom" or "error: <message>"
    predicted_s: float | None = None
    measured_s: float | None = None  # median of the timed repeats
    spread: float | None = None
    error_pct: float | None = None
    predicted_flops: float | None = None
    predicted_bytes: float | None = None
    achieved_flops_per_s: float | None = None  # predicted FLOPs / measured time
    achieved_bytes_per_s: float | None = None  # predicted bytes / measured time
    predicted_bound: str | None = None
    predicted_split_s: dict[str, float] | None = None  # per op class, from llmsim's ops
    measured_split_s: dict[str, float] | None = None  # per op class, from torch.profiler (profile=True)
    timings_s: list[float] = Field(default_factory=list)
    clock: str = "wall"  # what timings_s and measured_s are: "cpu" (the process's CPU time, 1 thread) or "wall"
    wall_s: float | None = None  # median wall time of the timed repeats (CPU only)
    cpu_s: float | None = None  # median CPU time of the process over them (wall_s * threads above it: it waited)
    torch_version: str = ""
    transformers_version: str = ""
    threads: int | None = None
    load_average: float | None = None  # 1-minute load of the machine when the case ran (CPU noise)
    # the machine's speed against a hardware file calibrated on it, checked before the run's cases: predicted /
    # measured time of a reference matmul (speed_check; 1.0: as calibrated); None: not checked
    machine_speed: float | None = None
    recorded_at: str = ""
    # what the prediction was made from: a fingerprint of the hardware file's figures and the model config run
    # (setup_fingerprint); resume reuses a recorded case only under the same ("" in records before 0.2.0: run again)
    setup: str = ""

    @property
    def length(self) -> int:
        """Tokens per sequence of a prefill, or cached tokens of a decode step."""
        return int(self.seq_len if self.phase == "prefill" else self.kv_len)  # type: ignore[arg-type]

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.error_pct is not None

    def key(self) -> tuple[Any, ...]:
        """What identifies a case in a results file (resume skips rows with the same key)."""
        return case_key(self.model, self.phase, self.batch_size, self.length, self.dtype, self.num_layers,
                        self.overhead, self.device, self.setup)


def case_key(model: str, phase: str, batch_size: int, length: int, dtype: str, num_layers: int | None,
             overhead: str, device: str, setup: str = "") -> tuple[Any, ...]:
    return (model, phase, int(batch_size), int(length), dtype, num_layers, overhead, device, setup)


def setup_fingerprint(hardware: Any, config: dict[str, Any]) -> str:
    """12 hex digits of a hash of a hardware spec's figures and a model config (the run's setup): two runs
    with another hardware file or another config under the same model name do not share recorded cases."""
    import hashlib

    text = json.dumps({"hardware": hardware.model_dump(mode="json"), "config": config}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else float("nan")


class ValidationReport(BaseModel):
    """Predicted against measured time of a set of cases."""

    model_config = ConfigDict(frozen=True)
    rows: list[ValidationRow]
    warnings: list[str] = Field(default_factory=list)  # e.g. a hardware file calibrated on another CPU

    def ok_rows(self, phase: str | None = None) -> list[ValidationRow]:
        return [r for r in self.rows if r.ok and (phase is None or r.phase == phase)]

    def summary(self) -> dict[str, dict[str, float]]:
        """Per phase: count of ok cases, median and p90 of |error| %, mean signed error %."""
        out: dict[str, dict[str, float]] = {}
        for phase in ("prefill", "decode"):
            errors = [r.error_pct for r in self.ok_rows(phase)]
            if not errors:
                continue
            absolute = [abs(e) for e in errors]  # type: ignore[arg-type]
            out[phase] = {
                "count": len(errors),
                "median_abs_error_pct": _percentile(absolute, 50),
                "p90_abs_error_pct": _percentile(absolute, 90),
                "mean_error_pct": float(np.mean(errors)),
            }
        return out

    def to_markdown(self, split: bool | None = None) -> str:
        """A Markdown table, one line per case; op-class columns when the rows have a measured split."""
        if split is None:
            split = any(r.measured_split_s for r in self.rows)
        head = ["model", "dtype", "phase", "batch", "seq/kv", "predicted", "measured", "spread", "error",
                "achieved GFLOP/s", "achieved GB/s", "bound", "status"]
        if split:
            head += [f"{c} pred/meas" for c in OP_CLASSES]
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        for r in self.rows:
            cells = [
                r.model, r.dtype, r.phase, str(r.batch_size), str(r.length), _fmt_s(r.predicted_s),
                _fmt_s(r.measured_s), _fmt_pct(100 * r.spread if r.spread is not None else None, signed=False),
                _fmt_pct(r.error_pct), _fmt_rate(r.achieved_flops_per_s), _fmt_rate(r.achieved_bytes_per_s),
                r.predicted_bound or "", r.status,
            ]
            if split:
                for c in OP_CLASSES:
                    p = (r.predicted_split_s or {}).get(c)
                    m = (r.measured_split_s or {}).get(c)
                    cells.append(f"{_fmt_s(p)} / {_fmt_s(m)}" if m is not None else _fmt_s(p))
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def summary_markdown(self) -> str:
        lines = ["| phase | cases | median abs error | p90 abs error | mean signed error |",
                 "|---|---:|---:|---:|---:|"]
        for phase, s in self.summary().items():
            lines.append(f"| {phase} | {int(s['count'])} | {s['median_abs_error_pct']:.1f}% | "
                         f"{s['p90_abs_error_pct']:.1f}% | {s['mean_error_pct']:+.1f}% |")
        checked = [r.machine_speed for r in self.rows if r.machine_speed is not None]
        if checked:
            lo, hi = min(checked), max(checked)
            span = f"{lo:.2f}x" + (f"-{hi:.2f}x" if hi != lo else "")
            lines += ["", "Machine speed against the calibrated hardware file before the cases (predicted / measured "
                      f"time of a reference matmul; 1.00x: as calibrated): {span}"]
        return "\n".join(lines)

    @classmethod
    def from_jsonl(cls, *paths: str | Path) -> ValidationReport:
        """The rows of one or more results files; a case recorded twice keeps its last record."""
        return cls(rows=list(read_results(*paths).values()))

    def plot(self, path: str | Path, title: str = "llmsim: predicted vs measured") -> Path:
        """A log-log predicted-vs-measured chart with y = x and a +-10% band (needs matplotlib)."""
        return plot_predicted_vs_measured(self.ok_rows(), path, title=title)


def _fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def _fmt_pct(value: float | None, signed: bool = True) -> str:
    if value is None:
        return ""
    return f"{value:+.1f}%" if signed else f"{value:.1f}%"


def _fmt_rate(value: float | None) -> str:
    return "" if value is None else f"{value / 1e9:.1f}"


# ---- results files (JSON lines) --------------------------------------------------------------------
def append_result(path: str | Path, row: ValidationRow) -> None:
    """Append one finished case to a JSON-lines file at once (flushed), so an interrupted run keeps it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(row.model_dump_json() + "\n")
        handle.flush()


def read_results(*paths: str | Path, strict: bool = False) -> dict[tuple[Any, ...], ValidationRow]:
    """Rows recorded in JSON-lines files, by case key (the last record of a case wins).

    A truncated last line (a run killed while writing) is ignored. strict: a file about to be appended to must
    hold only records: a folder, a file not text, or any other line (a hardware TOML given by mistake) is refused
    before anything is written to it; otherwise such lines are skipped."""
    rows: dict[tuple[Any, ...], ValidationRow] = {}
    for path in paths:
        path = Path(path)
        if strict and path.is_dir():
            raise LlmsimError(f"results file {path}: a folder; give a file (JSON lines, one record per case)")
        if not path.is_file():
            continue
        try:
            lines = [line.strip() for line in path.read_text().splitlines() if line.strip()]
        except UnicodeDecodeError:
            if not strict:
                continue
            raise LlmsimError(f"results file {path}: not text; give a JSON-lines file of validate's records or a "
                              "new path") from None
        for number, line in enumerate(lines, start=1):
            try:
                row = ValidationRow.model_validate(json.loads(line))
            except (json.JSONDecodeError, ValueError):
                if strict and not (number == len(lines) and line.startswith("{")):  # not a record cut short
                    raise LlmsimError(f"results file {path}: line {number} is not a validate record "
                                      f"({line[:40]!r}); records are appended to this file, so it must hold only "
                                      "them: give another path") from None
                continue
            rows[row.key()] = row
    return rows


# ---- the chart ---------------------------------------------------------------------------------------
def plot_predicted_vs_measured(rows: Iterable[ValidationRow], path: str | Path,
                               title: str = "llmsim: predicted vs measured") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r.ok]
    fig, ax = plt.subplots(figsize=(7.5, 7))
    markers = {"prefill": "o", "decode": "^"}
    models = sorted({r.model for r in rows})
    cmap = plt.get_cmap("tab10" if len(models) <= 10 else "tab20")
    colours = {m: cmap(i % cmap.N) for i, m in enumerate(models)}
    for r in rows:
        filled = r.dtype == "float32"
        ax.scatter(r.measured_s, r.predicted_s, marker=markers[r.phase], s=26,
                   facecolors=colours[r.model] if filled else "none", edgecolors=colours[r.model], linewidths=1.0)
    values = [v for r in rows for v in (r.measured_s, r.predicted_s) if v]
    lo, hi = (min(values) / 1.5, max(values) * 1.5) if values else (1e-4, 1.0)
    xs = np.geomspace(lo, hi, 50)
    ax.fill_between(xs, xs * 0.9, xs * 1.1, color="0.85", label="±10%", zorder=0)
    ax.plot(xs, xs, color="0.3", lw=1, label="y = x", zorder=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured time (s)")
    ax.set_ylabel("predicted time (s)")
    ax.set_title(title)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color="0.3", lw=1, label="y = x"),
               matplotlib.patches.Patch(color="0.85", label="±10%"),
               Line2D([], [], marker="o", ls="", color="0.3", label="prefill"),
               Line2D([], [], marker="^", ls="", color="0.3", label="decode step"),
               Line2D([], [], marker="o", ls="", color="0.3", markerfacecolor="none", label="bfloat16 (hollow)")]
    handles += [Line2D([], [], marker="s", ls="", color=colours[m], label=m) for m in models]
    ax.legend(handles=handles, fontsize=7, loc="upper left", ncol=2)
    ax.grid(True, which="both", alpha=0.25)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
