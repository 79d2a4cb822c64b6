"""ModelOpt's hf_quant_config.json: NVIDIA's quantized checkpoints (nvidia/*-FP4, *-FP8) state their format in
this file beside config.json, whose own quantization_config is then often absent. Read into the same
quantization path as a quantization_config with quant_method "modelopt" (llmsim.models.quantization):

    {"producer": {"name": "modelopt", ...},
     "quantization": {"quant_algo": "NVFP4", "group_size": 16, "kv_cache_quant_algo": "FP8",
                      "exclude_modules": ["lm_head", ...]}}
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..memo import names_a_path

QUANT_FILE = "hf_quant_config.json"
NAMED_QUANT_FOLDER = "hf_quant_config"  # NAME.json's is hf_quant_config/NAME.json beside it (how llmsim ships them)


def quant_file_beside(config_file: Path) -> Path | None:
    """The hf_quant_config.json beside a checkpoint's config.json; for a config file of another name, NAME.json,
    the file hf_quant_config/NAME.json beside it (the shipped NVFP4 checkpoints: model_configs/hf_quant_config/);
    else None."""
    if config_file.name == "config.json":
        file = config_file.parent / QUANT_FILE
    else:
        file = config_file.parent / NAMED_QUANT_FOLDER / config_file.name
    return file if file.is_file() else None


def named_quant_file(config_file: str) -> str | None:
    """quant_file_beside of a config file NAME.json given as an absolute path str (the by-name hot path, without
    pathlib)."""
    folder, name = os.path.split(config_file)
    file = os.path.join(folder, NAMED_QUANT_FOLDER, name)
    return file if names_a_path(file) and os.path.isfile(file) else None  # most names have none: no error raised


def modelopt_quantization(file: Path) -> dict[str, Any]:
    """The quantization_config an hf_quant_config.json stands for: its "quantization" object, with
    quant_method "modelopt"."""
    try:
        data = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: not a readable JSON file ({exc})") from None
    quant = data.get("quantization") if isinstance(data, dict) else None
    if not isinstance(quant, dict) or "quant_algo" not in quant:
        raise ConfigError(f"{file}: expected an object with a 'quantization' object holding 'quant_algo' "
                          "(ModelOpt's hf_quant_config.json)")
    return {"quant_method": "modelopt", **quant}


def with_quant_file(data: dict[str, Any], config_file: Path) -> dict[str, Any]:
    """The config dict with the quantization_config of an hf_quant_config.json beside it, where the config
    states none of its own (a quantization_config in config.json wins)."""
    file = quant_file_beside(config_file)
    if file is None or data.get("quantization_config") is not None:
        return data
    return {**data, "quantization_config": modelopt_quantization(file)}
