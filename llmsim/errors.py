"""Errors that llmsim raises for bad input: one line, naming the field and what is allowed."""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Iterable


class LlmsimError(ValueError):
    """Bad input to llmsim (a config, a hardware file, an option). The message names the field."""


class ConfigError(LlmsimError):
    """A model config that llmsim cannot read into a ModelSpec."""


class HardwareError(LlmsimError):
    """A hardware file that is missing a field, has an unknown key or an implausible value."""


class OptionError(LlmsimError):
    """An option value outside its allowed set or range."""


def first_validation_error(exc: Exception) -> str:
    """'field: message' of a pydantic ValidationError's first error on one line (its own text is several lines;
    the field left out when it has none); another exception's first line."""
    if not callable(getattr(exc, "errors", None)):
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    err = exc.errors()[0]  # type: ignore[attr-defined]
    loc = ".".join(str(p) for p in err["loc"])
    return f"{loc}: " * bool(loc) + str(err["msg"]).removeprefix("Value error, ")


def choice_error(field: str, value: object, allowed: Iterable[str]) -> OptionError:
    """An OptionError for `value` not in `allowed`, with the closest allowed names as suggestions."""
    allowed_list = sorted(allowed)
    close = difflib.get_close_matches(str(value), allowed_list, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return OptionError(f"{field}={value!r} is not allowed; choose one of {', '.join(allowed_list)}{hint}")


def check_choice(field: str, value: str, allowed: Iterable[str]) -> str:
    """Return `value` if it is in `allowed`, else raise an OptionError naming the field."""
    allowed_set = set(allowed)
    try:
        known = value in allowed_set
    except TypeError:  # an unhashable value (a list, a dict) is no allowed name either
        known = False
    if not known:
        raise choice_error(field, value, allowed_set)
    return value


def check_positive(field: str, value: object, unit: str) -> float:
    """A finite number > 0 (not a bool), as a float; an OptionError naming the field otherwise."""
    try:
        number = float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else math.nan
    except OverflowError:  # an int past any float
        number = math.inf
    if not (math.isfinite(number) and number > 0):
        raise OptionError(f"{field}={value!r} must be a positive number of {unit}")
    return float(number)


def check_off_or_positive(field: str, value: object, unit: str, at_most: float | None = None) -> float:
    """0 (switched off) or a finite number > 0 (and <= at_most where given), as a float; an OptionError naming the
    field otherwise."""
    if type(value) in (int, float) and value == 0:
        return 0.0
    number = check_positive(field, value, unit)
    if at_most is not None and number > at_most:
        raise OptionError(f"{field}={value!r} must be at most {at_most:g} {unit.split(' (')[0]}")
    return number


HOST_TIME_LIMIT_S = 3600.0  # a host cost per step, kernel or request past an hour is a typo, not a machine


def check_top(top: object) -> int | None:
    """How many rows of a table to show: None (all) or an integer >= 1; an OptionError naming `top` otherwise."""
    if top is None:
        return None
    if isinstance(top, bool) or not isinstance(top, numbers.Integral) or top < 1:
        raise OptionError(f"top={top!r} must be an integer >= 1 (the rows shown) or None (all of them)")
    return int(top)


class AssumptionWarning(UserWarning):
    """llmsim filled in something the input did not state (e.g. a config without torch_dtype); the message
    says what was assumed and why, and the result records it."""


def warn_assumption(message: str) -> None:
    """Raise an AssumptionWarning attributed to the first frame outside llmsim (the user's call), wherever inside
    llmsim it is raised: a fixed stacklevel named one of llmsim's own files (analysis/fast_simulate.py:143) when
    the call went through more frames than the warning's author counted."""
    import sys
    import warnings
    from pathlib import Path

    package = str(Path(__file__).resolve().parent)
    level, frame = 2, sys._getframe(1)  # stacklevel 1 is this function, 2 its caller
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(package):
        level, frame = level + 1, frame.f_back
    warnings.warn(AssumptionWarning(message), stacklevel=level)
