"""ModelSpecs of config files cached on disk (llmsim.disk_cache), so a config llmsim has read once needs no
transformers again: building a spec goes through `transformers.AutoConfig` (hf_config), whose import takes
seconds (it imports torch where torch is installed), and the spec it yields is plain data.

The key: the config file's bytes and the spec's name, llmsim's version, the source of every module of
llmsim/models and of dtypes.py (the spec-building code), and the installed transformers version (its
defaults fill keys a config leaves out; read from its metadata, transformers itself is not imported).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

from ..disk_cache import cached, source_fingerprint
from .spec import ModelSpec


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


def cached_spec(config_bytes: bytes, name: str, build: Callable[[], ModelSpec]) -> ModelSpec:
    """The spec cached for this config file content and name, else build() (then cached for later runs)."""
    return cached("specs", config_bytes + b"\0" + name.encode(), builder_fingerprint(), build,
                  dump=lambda spec: spec.model_dump(mode="json"), load=ModelSpec.model_validate)
