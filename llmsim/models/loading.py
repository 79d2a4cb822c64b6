"""load_model: a ModelSpec from a shipped name, a config.json path or folder, a dict or a config.

Specs are memoised (llmsim.memo): one read from a file while the file is unchanged, one built from a dict
under a hash of its content. A ModelSpec is frozen, so callers share it safely. Specs of config files are
also cached on disk (spec_cache), so a config read once before needs no transformers import.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..memo import Memo, content_key, file_stamp, names_a_path, shipped_file_stamp
from ..shipped import model_configs_dir
from .hf_config import read_config_file, spec_from_hf_config
from .modelopt_file import named_quant_file, quant_file_beside
from .spec import ModelSpec
from .spec_cache import Noted, build_noted, cached_spec, replay

_SPECS = Memo(64)


def load_model(source: Any, name: str | None = None) -> ModelSpec:
    """A ModelSpec from:

    - a shipped name such as "llama-3.1-8b" (see `llmsim models`),
    - a path to a config.json, or to a folder holding one (with ModelOpt's hf_quant_config.json beside it, read
      as its quantization_config where config.json states none),
    - a config dict, or a transformers PretrainedConfig,
    - a ModelSpec (returned as it is).
    """
    if isinstance(source, ModelSpec):
        return source
    if isinstance(source, Mapping):
        label = name or str(source.get("_name_or_path") or "") or None
        key = content_key(source)
        if key is None:  # not JSON-like: built every time
            return spec_from_hf_config(source, name=label)
        return replay(_SPECS.get(("dict", key, label), None,
                                 lambda: build_noted(lambda: spec_from_hf_config(source, name=label))))
    if isinstance(source, (str, Path)):
        if isinstance(source, str) and "/" not in source and not source.endswith(".json") and not names_a_path(
                source):  # a shipped name (os.path: the by-name hot path skips pathlib)
            # absolute, as a str (no pathlib), with its file_stamp
            file, stamp = shipped_file_stamp("model", source, model_configs_dir(), ".json")
            return replay(_from_file(file, name or os.path.basename(file)[:-len(".json")], stamp))
        path = Path(source).expanduser()
        if path.exists():
            stem = path.name if path.is_dir() else path.stem
            if stem == "config":
                stem = path.parent.name if not path.is_dir() else path.name
            return replay(_from_file(path / "config.json" if path.is_dir() else path, name or stem))
        raise ConfigError(f"model config: no file at {path}")
    if hasattr(source, "model_type") and hasattr(source, "to_dict"):
        return spec_from_hf_config(source, name=name)
    raise ConfigError(
        f"model: cannot load from a {type(source).__name__}; give a shipped name, a path, a dict or a PretrainedConfig"
    )


def _from_file(file: Path | str, name: str, file_stamp_now: Any = None) -> Noted:
    """The spec of a config.json (with its assumption notes), read again only when the file changed; from the
    disk cache of specs (spec_cache) where this content was read before, so without importing transformers.
    file: a Path, or an absolute path as a str; file_stamp_now: its file_stamp where the caller just read it."""
    # ModelOpt's hf_quant_config.json: part of the key and of the stamp (NAME.json's: hf_quant_config/NAME.json)
    quant = named_quant_file(file) if isinstance(file, str) else quant_file_beside(file)

    def read() -> Noted:
        path = Path(file)
        build = lambda: spec_from_hf_config(read_config_file(path), name=name)  # noqa: E731
        try:
            content = path.read_bytes() + (b"\0" + Path(quant).read_bytes() if quant else b"")
        except OSError:  # read_config_file says what is wrong
            return build_noted(build)
        return cached_spec(content, name, build)

    absolute = file if isinstance(file, str) else str(file.absolute())
    stamp = (file_stamp_now or file_stamp(absolute), file_stamp(quant) if quant else None)
    return _SPECS.get(("file", absolute, name), stamp, read)
