"""Predict one published row: the handler of its category, and a skip reason where it cannot be simulated."""

from __future__ import annotations

from collections.abc import Callable

from .e2e import predict_e2e
from .kernels import predict_attention, predict_gemm
from .options import PredictOptions
from .results import Comparison, SkipError, Skipped
from .rows import PublishedRow

Handler = Callable[[PublishedRow, PredictOptions], list[Comparison]]

# category -> how its rows are predicted (also the order of the per-row tables in the report)
HANDLERS: dict[str, Handler] = {
    "e2e_llm": predict_e2e,
    "microbench_gemm": predict_gemm,
    "microbench_attention": predict_attention,
}
CATEGORIES: tuple[str, ...] = tuple(HANDLERS)


def predict_row(row: PublishedRow, options: PredictOptions | None = None) -> list[Comparison] | Skipped:
    """The row's comparisons (headline metric first, then extra metrics of the same row), or why it was
    skipped."""
    options = options or PredictOptions()
    try:
        if row.category not in HANDLERS:
            raise SkipError(f"category {row.category!r} not handled", "category not handled")
        return HANDLERS[row.category](row, options)
    except SkipError as skip:
        return Skipped(row.id, row.source_group, row.category, row.model, row.gpu, str(skip), skip.kind)
