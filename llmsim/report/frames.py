"""Results as pandas DataFrames (pandas is a core dependency, imported here only, when a frame is asked for)."""

from __future__ import annotations

from typing import Any


def data_frame(data: Any) -> Any:
    """A pandas DataFrame of a list of row dicts or a dict of columns."""
    import pandas as pd

    return pd.DataFrame(data)
