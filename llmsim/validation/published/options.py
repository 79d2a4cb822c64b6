"""Options of a published comparison that change what is simulated, threaded through to every prediction.

- `engine`: the llmsim engine for every row when not None (end-to-end rows: `simulate(..., engine=engine)`;
  micro-benchmarks: that engine's measured tables); None: each row's own engine (mapping.ENGINES, from the
  row's `framework`).
- `simulate_kwargs`: extra keyword options for every `simulate` call of an end-to-end row (e.g.
  `{"attention": "math"}`); they win over the row's own options (dtype, overhead, tensor_parallel). The
  workload (batch_size, prompt_len, gen_len) is the row's and cannot be replaced.
- `hardware_overrides`: a mapped hardware name ("h100-sxm") -> what to simulate in its place (anything
  `load_hardware` accepts: a HardwareSpec, a file path, another shipped name), for end-to-end rows and the
  kernel roofline alike; the result's `hardware` then names the override.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import OptionError
from ...hardware.spec import HardwareSpec, load_hardware

_WORKLOAD_KEYS = frozenset({"batch_size", "prompt_len", "gen_len"})


@dataclass(frozen=True)
class PredictOptions:
    """What to change in every prediction of a published comparison (see the module docstring)."""

    engine: str | None = None
    simulate_kwargs: Mapping[str, Any] = field(default_factory=dict)
    hardware_overrides: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        fixed = sorted(_WORKLOAD_KEYS & set(self.simulate_kwargs))
        if fixed:
            raise OptionError(f"simulate_kwargs: {', '.join(fixed)} come from each published row; remove them")
        if "engine" in self.simulate_kwargs and self.engine is not None:
            raise OptionError("engine given twice (engine= and simulate_kwargs['engine']); give it once")

    @property
    def engine_override(self) -> str | None:
        """The engine given for every row (engine=, or simulate_kwargs['engine']); None: each row's own."""
        return self.engine if self.engine is not None else self.simulate_kwargs.get("engine")

    def hardware(self, name: str) -> HardwareSpec:
        """The hardware simulated for a mapped hardware name: its override, else the shipped file."""
        return load_hardware(self.hardware_overrides.get(name, name))

    def hardware_label(self, name: str) -> str:
        """The name shown for a mapped hardware name: the override's own name when overridden."""
        return self.hardware(name).name if name in self.hardware_overrides else name

    def simulate_options(self, **row_options: Any) -> dict[str, Any]:
        """The keyword options of one `simulate` call: the row's (its engine included), then simulate_kwargs,
        then engine."""
        options = {**row_options, **self.simulate_kwargs}
        if self.engine is not None:
            options["engine"] = self.engine
        return options
