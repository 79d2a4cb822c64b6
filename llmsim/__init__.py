"""llmsim: predict how fast a large language model runs, explain why, and check it against reality."""

from __future__ import annotations

from .errors import ConfigError, HardwareError, LlmsimError, OptionError
from .graph import build_ops
from .hardware import HardwareSpec, load_hardware
from .loading import load_model
from .model import ModelSpec
from .ops import Op
from .plan import Plan, plan
from .regime import find_crossover, first_limit, sweep
from .simulate import SimulationResult, fusion_savings, max_batch_size, max_context, simulate
from .workload import CostOptions

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "CostOptions",
    "HardwareError",
    "HardwareSpec",
    "LlmsimError",
    "ModelSpec",
    "Op",
    "OptionError",
    "Plan",
    "SimulationResult",
    "__version__",
    "build_ops",
    "find_crossover",
    "first_limit",
    "fusion_savings",
    "load_hardware",
    "load_model",
    "max_batch_size",
    "max_context",
    "plan",
    "simulate",
    "sweep",
]
