"""ModelSpecs of config files cached on disk (llmsim.disk_cache), so a config llmsim has read once needs no
transformers again: building a spec goes through `transformers.AutoConfig` (hf_config), whose import takes
seconds (it imports torch where torch is installed), and the spec it yields is plain data.

The key: the config file's bytes and the spec's name, llmsim's version, the source of every module of
llmsim/models and of dtypes.py (the spec-building code), and the installed transformers version (its
defaults fill keys a config leaves out; read from its metadata, transformers itself is not imported).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import cache
from pathlib import Path

from ..disk_cache import cached, source_fingerprint
from ..errors import AssumptionWarning, warn_assumption
from .spec import ModelSpec

# a spec and the AssumptionWarnings building it raised (replayed on every load: a cached spec warns as a built one)
Noted = tuple[ModelSpec, tuple[str, ...]]


@cache
def builder_fingerprint() -> str | None:
    """What turns a config into a spec, hashed: llmsim/models/*.py, dtypes.py, transformers' version."""
    package = Path(__file__).resolve().parent.parent
    files = [*sorted((package / "models").glob("*.py")), package / "dtypes.py"]
    return source_fingerprint(files, f"transformers {_transformers_version()}")


def _transformers_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("transformers")
    except PackageNotFoundError:
        return "none"


def cached_spec(config_bytes: bytes, name: str, build: Callable[[], ModelSpec]) -> Noted:
    """The spec cached for this config file content and name (with its build's assumption notes), else
    build_noted(build) (then cached for later runs)."""
    return cached("specs", config_bytes + b"\0" + name.encode(), builder_fingerprint(), lambda: build_noted(build),
                  dump=lambda noted: {"spec": noted[0].model_dump(mode="json"), "notes": list(noted[1])},
                  load=lambda data: (ModelSpec.model_validate(data["spec"]), tuple(map(str, data["notes"]))))


def build_noted(build: Callable[[], ModelSpec]) -> Noted:
    """build(), with the messages of the AssumptionWarnings it raised (held for replay); other warnings go on."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = build()
    notes = []
    for w in caught:
        if issubclass(w.category, AssumptionWarning):
            notes.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return spec, tuple(notes)


def replay(noted: Noted) -> ModelSpec:
    """The spec, after warning its notes again, at the caller of load_model."""
    spec, notes = noted
    for note in notes:
        warn_assumption(str(note))
    return spec
