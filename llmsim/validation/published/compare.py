"""compare_published(): every published row predicted, and the error statistics (median and p90 of
|error %|, mean signed error %) overall and per category."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import OptionError
from .options import PredictOptions
from .predict import CATEGORIES, predict_row
from .results import Comparison, Skipped
from .rows import CSV_NAME, PublishedRow, default_csv_path, read_rows


@dataclass(frozen=True)
class Stats:
    """Error statistics of a group of comparisons, in percent."""

    n: int
    median_abs: float
    p90_abs: float
    mean_signed: float


def error_stats(errors: Iterable[float]) -> Stats | None:
    """median and p90 of |error|, mean signed error; None for no errors."""
    a = np.asarray(list(errors), dtype=float)
    if not a.size:
        return None
    return Stats(len(a), float(np.median(np.abs(a))), float(np.percentile(np.abs(a), 90)), float(a.mean()))


def summarize(comparisons: Iterable[Comparison]) -> dict[str, Stats]:
    """Headline-metric statistics: "all", then each category that has comparisons (in CATEGORIES order,
    then any other)."""
    primary = [c for c in comparisons if c.primary]
    categories = [*CATEGORIES, *sorted({c.category for c in primary} - set(CATEGORIES))]
    groups = {"all": primary, **{k: [c for c in primary if c.category == k] for k in categories}}
    out: dict[str, Stats] = {}
    for key, group in groups.items():
        stats = error_stats(c.error_pct for c in group)
        if stats is not None:
            out[key] = stats
    return out


@dataclass(frozen=True)
class PublishedComparison:
    """llmsim against a published-measurements CSV.

    comparisons: one per compared metric (a row's headline first, then its extra metrics); skipped: the rows
    not simulated, each with its reason; summary: headline-metric Stats for "all" and per category;
    measurements: the CSV's rows as read; csv_path: where they were read from."""

    csv_path: Path
    measurements: tuple[PublishedRow, ...]
    comparisons: tuple[Comparison, ...]
    skipped: tuple[Skipped, ...]
    summary: Mapping[str, Stats] = field(default_factory=dict)
    options: PredictOptions = field(default_factory=PredictOptions)

    @property
    def compared_row_ids(self) -> list[str]:
        """The ids of the rows that were simulated, sorted."""
        return sorted({c.row_id for c in self.comparisons})

    @property
    def primary(self) -> list[Comparison]:
        """The headline comparison of each simulated row."""
        return [c for c in self.comparisons if c.primary]


def compare_published(csv_path: str | Path | None = None, *, engine: str | None = None,
                      simulate_kwargs: Mapping[str, Any] | None = None,
                      hardware_overrides: Mapping[str, Any] | None = None) -> PublishedComparison:
    """Predict every row of the published-measurements CSV (default: `default_csv_path()`) and compare.

    engine, simulate_kwargs, hardware_overrides: see `PredictOptions` (passed through to every prediction)."""
    if csv_path is None:
        csv_path = default_csv_path()
        if csv_path is None:
            raise OptionError(f"csv_path: no shared/reference/{CSV_NAME} found above the llmsim package; "
                              "pass the CSV's path")
    options = PredictOptions(engine=engine, simulate_kwargs=dict(simulate_kwargs or {}),
                             hardware_overrides=dict(hardware_overrides or {}))
    rows = read_rows(csv_path)
    comparisons: list[Comparison] = []
    skipped: list[Skipped] = []
    for row in rows:
        result = predict_row(row, options)
        if isinstance(result, Skipped):
            skipped.append(result)
        else:
            comparisons += result
    return PublishedComparison(csv_path=Path(csv_path), measurements=tuple(rows), comparisons=tuple(comparisons),
                               skipped=tuple(skipped), summary=summarize(comparisons), options=options)
