"""Measured runs placed on the roofline beside the prediction: readers of torch.profiler traces, Nsight
Compute CSV exports and .ncu-rep reports, and Nsight Systems stats CSVs (read_profile), one Profile/Kernel
model for all of them, the bound of each kernel and why (bound), and the comparison with a
SimulationResult (compare).

Layout: read (format detection), torch_trace / ncu (+ ncu_rep) / nsys (one reader each), shapes (FLOPs and
bytes from recorded shapes through llmsim's op formulas), classify (op class from a name), bound, table,
compare, timeline. The figure lives in llmsim.profiles.figure (matplotlib only there)."""

from .model import Kernel
from .profile import Profile
from .read import read_profile

__all__ = ["Kernel", "Profile", "read_profile"]
