"""llmsim: predict how fast a large language model runs, explain why, and check it against reality."""

from __future__ import annotations

from .analysis.plan import Plan, plan
from .analysis.regime import find_crossover, first_limit, sweep
from .analysis.simulate import SimulationResult, fusion_savings, max_batch_size, max_context, simulate
from .cost.graph import build_ops
from .cost.op import Op
from .cost.parameters import num_parameters
from .cost.workload import CostOptions
from .errors import ConfigError, HardwareError, LlmsimError, OptionError
from .hardware.spec import HardwareSpec, load_hardware
from .models.loading import load_model
from .models.spec import ModelSpec
from .profiles import Kernel, Profile, read_profile
from .serving.disaggregated import Pool, serve_disaggregated
from .serving.plan import ServingPlan, plan_serving
from .serving.results import ServingResult
from .serving.serve import serve

__version__ = "0.2.0"

__all__ = [
    "ConfigError",
    "CostOptions",
    "HardwareError",
    "HardwareSpec",
    "Kernel",
    "LlmsimError",
    "ModelSpec",
    "Op",
    "OptionError",
    "Plan",
    "Pool",
    "Profile",
    "ServingPlan",
    "ServingResult",
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
    "num_parameters",
    "plan",
    "plan_serving",
    "read_profile",
    "serve",
    "serve_disaggregated",
    "simulate",
    "sweep",
]
