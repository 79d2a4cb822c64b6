"""Argument types the command-line parsers share."""

from __future__ import annotations

import argparse
from typing import Any


def int_at_least(minimum: int) -> Any:
    """An argparse type: an integer >= minimum, with a message naming the value."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} must be >= {minimum}")
        return value

    return parse
