"""llmsim: predict how fast a large language model runs, explain why, and check it against reality."""

from __future__ import annotations

from .errors import ConfigError, HardwareError, LlmsimError, OptionError
from .graph import build_ops
from .loading import load_model
from .model import ModelSpec
from .ops import Op
from .workload import CostOptions

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "CostOptions",
    "HardwareError",
    "LlmsimError",
    "ModelSpec",
    "Op",
    "OptionError",
    "__version__",
    "build_ops",
    "load_model",
]
