"""llmsim: predict how fast a large language model runs, explain why, and check it against reality.

The public names are imported on first use (PEP 562): `import llmsim` costs a few milliseconds, and
`llmsim.simulate` loads only the modules a simulation needs (not scipy, the planner, sweeps, serving or profiles).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

# public name -> the module that defines it (relative to this package)
_LAZY = {
    "Plan": ".analysis.plan",
    "plan": ".analysis.plan",
    "find_crossover": ".analysis.regime",
    "first_limit": ".analysis.regime",
    "sweep": ".analysis.regime",
    "whatif": ".analysis.whatif",
    "op_cost": ".analysis.one_op",
    "OneOpCost": ".analysis.one_op",
    "WhatIfResult": ".analysis.whatif",
    "SimulationResult": ".analysis.simulate",
    "fusion_savings": ".analysis.simulate",
    "max_batch_size": ".analysis.simulate",
    "max_context": ".analysis.simulate",
    "simulate": ".analysis.simulate",
    "build_ops": ".cost.graph",
    "Op": ".cost.op",
    "num_parameters": ".cost.parameters",
    "CostOptions": ".cost.workload",
    "ConfigError": ".errors",
    "HardwareError": ".errors",
    "LlmsimError": ".errors",
    "OptionError": ".errors",
    "HardwareSpec": ".hardware.spec",
    "load_hardware": ".hardware.spec",
    "load_model": ".models.loading",
    "ModelSpec": ".models.spec",
    "Kernel": ".profiles",
    "Profile": ".profiles",
    "read_profile": ".profiles",
    "Pool": ".serving.disaggregated",
    "serve_disaggregated": ".serving.disaggregated",
    "ServingPlan": ".serving.plan",
    "plan_serving": ".serving.plan",
    "ServingResult": ".serving.results",
    "serve": ".serving.serve",
    "analyze": ".trace.analyze",
    "TraceResult": ".trace.result",
}

__all__ = [
    "ConfigError",
    "CostOptions",
    "HardwareError",
    "HardwareSpec",
    "Kernel",
    "LlmsimError",
    "ModelSpec",
    "OneOpCost",
    "Op",
    "OptionError",
    "Plan",
    "Pool",
    "Profile",
    "ServingPlan",
    "ServingResult",
    "SimulationResult",
    "TraceResult",
    "WhatIfResult",
    "__version__",
    "analyze",
    "build_ops",
    "find_crossover",
    "first_limit",
    "fusion_savings",
    "load_hardware",
    "load_model",
    "max_batch_size",
    "max_context",
    "num_parameters",
    "op_cost",
    "plan",
    "plan_serving",
    "read_profile",
    "serve",
    "serve_disaggregated",
    "simulate",
    "sweep",
    "whatif",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'llmsim' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY} - {"Any", "TYPE_CHECKING", "importlib"})


if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, imported eagerly
    from .analysis.one_op import OneOpCost, op_cost
    from .analysis.plan import Plan, plan
    from .analysis.regime import find_crossover, first_limit, sweep
    from .analysis.simulate import SimulationResult, fusion_savings, max_batch_size, max_context, simulate
    from .analysis.whatif import WhatIfResult, whatif
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
    from .trace.analyze import analyze
    from .trace.result import TraceResult
