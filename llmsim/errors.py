"""Errors that llmsim raises for bad input: one line, naming the field and what is allowed."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class LlmsimError(ValueError):
    """Bad input to llmsim (a config, a hardware file, an option). The message names the field."""


class ConfigError(LlmsimError):
    """A model config that llmsim cannot read into a ModelSpec."""


class HardwareError(LlmsimError):
    """A hardware file that is missing a field, has an unknown key or an implausible value."""


class OptionError(LlmsimError):
    """An option value outside its allowed set or range."""


def choice_error(field: str, value: object, allowed: Iterable[str]) -> OptionError:
    """An OptionError for `value` not in `allowed`, with the closest allowed names as suggestions."""
    allowed_list = sorted(allowed)
    close = difflib.get_close_matches(str(value), allowed_list, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return OptionError(f"{field}={value!r} is not allowed; choose one of {', '.join(allowed_list)}{hint}")


def check_choice(field: str, value: str, allowed: Iterable[str]) -> str:
    """Return `value` if it is in `allowed`, else raise an OptionError naming the field."""
    allowed_set = set(allowed)
    if value not in allowed_set:
        raise choice_error(field, value, allowed_set)
    return value


class AssumptionWarning(UserWarning):
    """llmsim filled in something the input did not state (e.g. a config without torch_dtype); the message
    says what was assumed and why, and the result records it."""
