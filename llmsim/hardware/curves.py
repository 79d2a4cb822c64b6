"""Shape curves of a hardware file: how far real kernels fall from the roofline by shape (matmul rows,
output width and depth; element-wise bytes), read linearly in log2 of the shape between measured points."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field


class RowCurve(BaseModel):
    """Fraction of the roofline (max of compute time at the matrix rate and memory time at the
    bandwidth, both as the file derates them) a matmul with M rows reaches, at increasing M; with
    `cols`, a table: fraction[j][i] at N = cols[j] output columns and M = rows[i]."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    rows: tuple[float, ...]
    cols: tuple[float, ...] | None = None
    fraction: tuple[float, ...] | tuple[tuple[float, ...], ...]
    source: str = Field(min_length=1)

    def at(self, rows: Any, cols: Any = None) -> Any:
        """The fraction at `rows` (and `cols`; arrays broadcast): linear in log2(M) between the measured
        row counts and in log2(N) between the measured widths, the end values beyond them. A table read
        without `cols` uses its first width (approximation; every llmsim matmul states its N)."""
        if self.cols is None:
            return _log_interp(rows, self.rows, self.fraction)  # type: ignore[arg-type]
        table: tuple[tuple[float, ...], ...] = self.fraction  # type: ignore[assignment]
        if cols is None:
            return _log_interp(rows, self.rows, table[0])
        return _log_bilinear(rows, self.rows, cols, self.cols, table)


class DepthCurve(BaseModel):
    """How a matmul's fraction of the roofline changes with its inner dimension K: fraction[j][i] is the
    fraction at K = depths[j] and M = rows[i] over the fraction at the K the matmul_rows tables were
    measured at (1.0 there), read bilinearly in (log2 M, log2 K), the end values beyond them."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    rows: tuple[float, ...]
    depths: tuple[float, ...]
    fraction: tuple[tuple[float, ...], ...]
    source: str = Field(min_length=1)

    def at(self, rows: Any, depths: Any) -> Any:
        return _log_bilinear(rows, self.rows, depths, self.depths, self.fraction)


def _log_bilinear(x: Any, xs: tuple[float, ...], y: Any, ys: tuple[float, ...],
                  table: tuple[tuple[float, ...], ...]) -> Any:
    """table[j][i] at (xs[i], ys[j]), linear in log2(x) and log2(y) between the points (arrays broadcast):
    the curve over x of each y, weighted by a hat function of log2(y) around that y (weights sum to 1;
    beyond the ends the end curve)."""
    total: Any = 0.0
    for j, line in enumerate(table):
        hat = tuple(1.0 if i == j else 0.0 for i in range(len(table)))
        total = total + _log_interp(y, ys, hat) * _log_interp(x, xs, line)
    return total


class SizeCurve(BaseModel):
    """Fraction of the (derated) bandwidth an element-wise kernel moving `bytes` bytes reaches:
    above 1 where its tensors stay in a cache, below where fresh output pages cost extra (eager PyTorch
    on a CPU allocates every output)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    bytes: tuple[float, ...]
    fraction: tuple[float, ...]
    source: str = Field(min_length=1)

    def at(self, size_bytes: Any) -> Any:
        return _log_interp(size_bytes, self.bytes, self.fraction)


def _log_interp(x: Any, xs: tuple[float, ...], fs: tuple[float, ...]) -> Any:
    """Linear in log2(x) between the points, the end values beyond them (x below 1 counts as 1)."""
    log_x = np.log2(np.maximum(np.asarray(x, dtype=float), 1.0))
    return np.interp(log_x, np.log2(xs), fs)
