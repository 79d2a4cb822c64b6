"""load_model: a ModelSpec from a shipped name, a config.json path or folder, a dict or a config."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..shipped import find_shipped, model_configs_dir, shipped_model_names
from .hf_config import read_config_file, spec_from_hf_config
from .spec import ModelSpec


def load_model(source: Any, name: str | None = None) -> ModelSpec:
    """A ModelSpec from:

    - a shipped name such as "llama-3.1-8b" (see `llmsim models`),
    - a path to a config.json, or to a folder holding one,
    - a config dict, or a transformers PretrainedConfig,
    - a ModelSpec (returned as it is).
    """
    if isinstance(source, ModelSpec):
        return source
    if isinstance(source, Mapping):
        return spec_from_hf_config(source, name=name or str(source.get("_name_or_path") or "") or None)
    if isinstance(source, (str, Path)):
        path = Path(source).expanduser()
        if path.exists():
            data = read_config_file(path)
            stem = path.name if path.is_dir() else path.stem
            if stem == "config":
                stem = path.parent.name if not path.is_dir() else path.name
            return spec_from_hf_config(data, name=name or stem)
        if isinstance(source, str) and ("/" not in source and not source.endswith(".json")):
            file = find_shipped("model", source, shipped_model_names(), model_configs_dir(), ".json")
            return spec_from_hf_config(read_config_file(file), name=name or file.stem)
        raise ConfigError(f"model config: no file at {path}")
    if hasattr(source, "model_type") and hasattr(source, "to_dict"):
        return spec_from_hf_config(source, name=name)
    raise ConfigError(
        f"model: cannot load from a {type(source).__name__}; give a shipped name, a path, a dict or a PretrainedConfig"
    )
