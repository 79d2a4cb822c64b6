"""Profile: a measured run (ProfileData) with what a user asks of it: its kernel table, its comparison with
a prediction and its roofline figure."""

from __future__ import annotations

from typing import Any

from .compare import compare
from .model import ProfileData
from .table import format_table, kernel_rows


class Profile(ProfileData):
    """What llmsim.read_profile returns (see ProfileData for the fields)."""

    def rows(self, hardware: Any = None) -> list[dict[str, Any]]:
        """One dict per kernel (largest time first) and one for the idle time: calls, time, FLOPs, bytes,
        achieved FLOP/s and bytes/s, % of the roofline, bound and why, and where FLOPs and bytes came from."""
        return kernel_rows(self, hardware)

    def kernels_table(self, hardware: Any = None, top: int | None = None) -> str:
        """The kernels as a text table (see rows), largest time first."""
        return format_table(self, hardware, top)

    def compare(self, result: Any, phase: str = "prefill") -> Any:
        """Measured kernels beside a SimulationResult's predicted ops (see llmsim.profiles.compare)."""
        return compare(self, result, phase)

    def roofline_figure(self, hardware: Any, result: Any = None, phase: str = "prefill") -> Any:
        """The device's roofline with the measured kernels on it, the predicted ops of `result` beside
        them (matplotlib Figure; matplotlib is imported only then)."""
        from .figure import profile_roofline_figure

        return profile_roofline_figure(self, hardware, result, phase)
