"""Where the shipped model configs and hardware files live, and lookup by name with suggestions.

In a source checkout they are the top-level `model_configs/`, `hardware/` and `kernels/` folders; an
installed wheel carries the same files as the package data `llmsim.model_configs`, `llmsim.hardware_files`
and `llmsim.kernel_files`.
"""

from __future__ import annotations

import difflib
from functools import cache
from pathlib import Path

from .errors import LlmsimError

_SOURCE_ROOT = Path(__file__).resolve().parent.parent


@cache  # where the package lives does not change while it runs
def _folder(package_folder: str, checkout_folder: str) -> Path:
    installed = Path(__file__).resolve().parent / package_folder  # a wheel's package data
    if installed.is_dir():
        return installed
    return _SOURCE_ROOT / checkout_folder  # a source checkout


def model_configs_dir() -> Path:
    return _folder("model_configs", "model_configs")


def hardware_dir() -> Path:
    return _folder("hardware_files", "hardware")


def kernels_dir() -> Path:
    """Measured kernel tables: kernels/<device>/<engine>/<family>.csv."""
    return _folder("kernel_files", "kernels")


def shipped_model_names() -> list[str]:
    return sorted(p.stem for p in model_configs_dir().glob("*.json"))


def shipped_hardware_names() -> list[str]:
    return sorted(p.stem for p in hardware_dir().glob("*.toml"))


def find_shipped(kind: str, name: str, names: list[str], folder: Path, suffix: str) -> Path:
    """The shipped file of that exact name (case-insensitive), else an error with the closest names."""
    if name in names:  # the exact name: no case folding needed
        return folder / f"{name}{suffix}"
    by_lower = {n.lower(): n for n in names}
    if name.lower() in by_lower:
        return folder / f"{by_lower[name.lower()]}{suffix}"
    if kind == "model" and name.startswith(("hf:", "diffusers:")):  # analyze's vision and diffusion targets
        raise LlmsimError(f"model {name!r} is one of `llmsim analyze`'s traced models (vision and diffusion); "
                          "simulate and the other commands take the LLMs `llmsim models` lists")
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.4)
    hint = f"; did you mean {', '.join(by_lower[c] for c in close)}?" if close else ""
    raise LlmsimError(
        f"{kind} {name!r} is not a shipped name nor an existing file{hint} "
        f"(list them with `llmsim {'models' if kind == 'model' else 'hardware'}`)"
    )
