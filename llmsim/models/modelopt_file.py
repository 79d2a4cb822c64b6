"""ModelOpt's hf_quant_config.json: NVIDIA's quantized checkpoints (nvidia/*-FP4, *-FP8) state their format in
this file beside config.json, whose own quantization_config is then often absent. Read into the same
quantization path as a quantization_config with quant_method "modelopt" (llmsim.models.quantization):

    {"producer": {"name": "modelopt", ...},
     "quantization": {"quant_algo": "NVFP4", "group_size": 16, "kv_cache_quant_algo": "FP8",
                      "exclude_modules": ["lm_head", ...]}}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError

QUANT_FILE = "hf_quant_config.json"


def quant_file_beside(config_file: Path) -> Path | None:
    """The hf_quant_config.json beside a checkpoint's config.json, or None (a config file of another name, such
    as a shipped one, has none)."""
    if config_file.name != "config.json":
        return None
    file = config_file.parent / QUANT_FILE
    return file if file.is_file() else None


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
