"""Results as pandas DataFrames (pandas is a core dependency, imported here only, when a frame is asked for)."""

from __future__ import annotations

from typing import Any


def data_frame(data: Any) -> Any:
    """A pandas DataFrame of a list of row dicts or a dict of columns."""
    import pandas as pd

    return pd.DataFrame(data)


def candidates_frame(candidates: list[Any], best: Any, pareto: list[Any]) -> Any:
    """A plan's candidates, one row each (their fields), with whether each is the best and on the Pareto front."""
    return data_frame([{**c.model_dump(), "best": c == best, "pareto": c in pareto} for c in candidates])
