"""Timeline arithmetic shared by the readers: how much of a span intervals cover."""

from __future__ import annotations

from collections.abc import Iterable


def covered_s(intervals: Iterable[tuple[float, float]]) -> float:
    """Length of the union of (start, end) intervals, in their unit: overlapping kernels (several streams,
    nested ops) count once."""
    total = 0.0
    current_start = current_end = None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total
