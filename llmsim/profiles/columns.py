"""The refusal every reader gives an export that lacks what it needs."""

from __future__ import annotations

from pathlib import Path

from ..errors import LlmsimError


def missing_columns(kind: str, path: Path, missing: list[str], hint: str) -> LlmsimError:
    """The one-line refusal of an export that lacks columns (or metrics) a reader needs."""
    return LlmsimError(f"{kind} export {path}: missing {', '.join(missing)}; {hint}")
