"""The published-measurements CSV read into typed rows, and where the CSV is found by default.

One row per published figure (see shared/reference/README.md for the columns). Free-text columns stay
text (their wording is quoted in skip reasons); numeric columns are parsed, None where the cell is empty
or not a plain number (e.g. M0335's value "~1200 ('close to 1.2 PFLOPs/s')").
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import OptionError
from .results import SkipError

CSV_NAME = "published_measurements.csv"
_REFERENCE_DIR = Path("shared") / "reference"

# The columns read; the CSV may carry more (caveats, source, quotes), which are kept out of the row.
COLUMNS: tuple[str, ...] = (
    "id", "source_group", "category", "model", "gpu", "gpu_count", "parallelism", "weight_dtype", "framework",
    "batch_size", "input_len", "output_len", "metric", "value", "unit", "throughput_scope", "ttft_ms",
    "per_token_latency_ms", "achieved_bw_GBps", "gemm_M", "gemm_N", "gemm_K", "attn_shape_B_H_S_D",
)


def as_int(text: str) -> int | None:
    """A plain non-negative integer ("128"), else None ("", "1 concurrent request")."""
    text = text.strip()
    return int(text) if re.fullmatch(r"\d+", text) else None


def as_float(text: str) -> float | None:
    """A number, else None ("", "~1200")."""
    try:
        return float(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class PublishedRow:
    """One published figure. Text columns as written in the CSV; numbers parsed (None: empty or not a number)."""

    id: str
    source_group: str
    category: str  # e2e_llm, microbench_gemm, microbench_attention
    model: str
    gpu: str
    gpu_count: int | None
    parallelism: str
    weight_dtype: str
    framework: str  # the engine or kernel library that produced the figure, as the source names it
    batch_size: str  # "1", "1 concurrent request", "" (continuous batching)
    input_len: str  # "128", "small default prompt (not stated)", ...
    output_len: str
    metric: str
    value: float | None  # the published figure, in `unit`
    value_text: str
    unit: str
    throughput_scope: str
    ttft_ms: float | None
    per_token_latency_ms: float | None
    achieved_bw_gbps: float | None  # the source's own GB/s column
    gemm_m: int | None
    gemm_n: int | None
    gemm_k: int | None
    attn_shape: str  # "B H S D" as written (attn_shape_B_H_S_D)

    @property
    def input_tokens(self) -> int | None:
        return as_int(self.input_len)

    @property
    def output_tokens(self) -> int | None:
        return as_int(self.output_len)

    def measured(self) -> float:
        """The published figure as a number; SkipError when the row states it only in words."""
        if self.value is None:
            raise SkipError(f"value {self.value_text!r} is not a number", "value not a number")
        return self.value

    @classmethod
    def from_csv(cls, record: dict[str, str]) -> PublishedRow:
        """A row from one csv.DictReader record; a missing column is refused by name."""
        missing = [c for c in COLUMNS if c not in record]
        if missing:
            raise OptionError(f"published measurements: missing column(s) {', '.join(missing)}")
        text = {c: record[c] or "" for c in COLUMNS}
        return cls(
            id=text["id"], source_group=text["source_group"], category=text["category"], model=text["model"],
            gpu=text["gpu"], gpu_count=as_int(text["gpu_count"]), parallelism=text["parallelism"],
            weight_dtype=text["weight_dtype"], framework=text["framework"], batch_size=text["batch_size"],
            input_len=text["input_len"],
            output_len=text["output_len"], metric=text["metric"], value=as_float(text["value"]),
            value_text=text["value"], unit=text["unit"], throughput_scope=text["throughput_scope"],
            ttft_ms=as_float(text["ttft_ms"]), per_token_latency_ms=as_float(text["per_token_latency_ms"]),
            achieved_bw_gbps=as_float(text["achieved_bw_GBps"]), gemm_m=as_int(text["gemm_M"]),
            gemm_n=as_int(text["gemm_N"]), gemm_k=as_int(text["gemm_K"]), attn_shape=text["attn_shape_B_H_S_D"],
        )


def read_rows(csv_path: str | Path) -> list[PublishedRow]:
    """Every row of the published-measurements CSV, in file order."""
    path = Path(csv_path)
    if not path.is_file():
        raise OptionError(f"published measurements: no file at {path}")
    with path.open(newline="") as f:
        return [PublishedRow.from_csv(record) for record in csv.DictReader(f)]


def default_csv_path() -> Path | None:
    """The shared reference CSV next to the repository checkout (`<checkout>/../shared/reference/`), found by
    walking up from this file; None when no ancestor has it (an installed wheel: pass the path)."""
    for folder in Path(__file__).resolve().parents:
        candidate = folder / _REFERENCE_DIR / CSV_NAME
        if candidate.is_file():
            return candidate
    return None
