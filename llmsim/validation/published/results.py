"""What predicting one published row gives: comparisons (prediction next to measurement) or a skip reason.

error_pct = 100 * (predicted - measured) / measured, on the metric the source reports. For rates
(throughput, TFLOP/s) positive = llmsim optimistic; for latencies (TTFT, per-token) positive = llmsim slower.
roofline_error_pct: the same for the roofline prediction (datasheet peaks x the hardware file's achievable
fractions, no measured tables): what llmsim predicted before it read measured kernel tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Comparison:
    """One published figure next to llmsim's prediction of it."""

    row_id: str
    source: str
    category: str
    metric: str
    model: str
    hardware: str
    settings: str
    measured: float
    predicted: float
    unit: str
    primary: bool = True  # the row's headline metric (one per row) vs an extra metric of the same row
    alt_predicted: float | None = None  # on the other variant when the source's GPU variant is vague
    flags: frozenset[str] = field(default_factory=frozenset)
    engine: str = ""  # the llmsim engine the row was simulated with (mapping.ENGINES)
    timing: str = ""  # where the time came from: the engine's measured tables, or the roofline and why
    roofline_predicted: float | None = None  # roofline with achievable fractions, no measured tables

    @property
    def error_pct(self) -> float:
        return 100.0 * (self.predicted - self.measured) / self.measured

    @property
    def roofline_error_pct(self) -> float | None:
        if self.roofline_predicted is None:
            return None
        return 100.0 * (self.roofline_predicted - self.measured) / self.measured

    @property
    def alt_error_pct(self) -> float | None:
        if self.alt_predicted is None:
            return None
        return 100.0 * (self.alt_predicted - self.measured) / self.measured


@dataclass(frozen=True)
class Skipped:
    """A row that was not simulated, with the reason and its short class (`kind`) for the count by reason."""

    row_id: str
    source: str
    category: str
    model: str
    gpu: str
    reason: str
    kind: str


class SkipError(Exception):
    """Raised while predicting a row that cannot be simulated; the message is the reason, `kind` its
    short class for the count by reason."""

    def __init__(self, reason: str, kind: str) -> None:
        super().__init__(reason)
        self.kind = kind
