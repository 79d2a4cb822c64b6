"""Profile and Kernel: what every reader returns, whatever the export it read.

A Kernel is one group of launches of the same kernel (for torch.profiler: the same op name and input
shapes), with its total time and, where known, its FLOPs and bytes and where each number came from:
"counters" (hardware counters: Nsight Compute), "shapes" (the recorded input shapes through llmsim's op
formulas: torch.profiler with record_shapes=True) or "matched op" (the predicted op it was matched to).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

SOURCES = ("counters", "shapes", "matched op")
OP_CLASSES = ("matmul", "attention", "elementwise", "communication", "copy", "host", "other")


class Kernel(BaseModel):
    """One kernel (or aten op on a CPU) summed over its calls."""

    model_config = ConfigDict(frozen=True)
    name: str
    calls: int
    time_s: float  # all calls together
    op_class: str = "other"  # one of OP_CLASSES; "host": no kernel of its own (a view, a wrapper op)
    shapes: str = ""  # the input shapes (torch.profiler with record_shapes=True)
    precision: str | None = None  # fp32, bf16, fp16, fp8 ... where the export says (else None)
    flops: float | None = None  # all calls together
    flops_source: str | None = None  # one of SOURCES
    bytes: float | None = None  # device-memory traffic, all calls together
    bytes_source: str | None = None
    sm_pct: float | None = None  # Nsight Compute Speed of Light: compute (SM) throughput, % of peak
    memory_pct: float | None = None  # Nsight Compute Speed of Light: memory throughput, % of peak

    @property
    def time_per_call_s(self) -> float:
        return self.time_s / self.calls if self.calls else 0.0

    @property
    def flops_per_call(self) -> float | None:
        return None if self.flops is None or not self.calls else self.flops / self.calls


class ProfileData(BaseModel):
    """A measured run: its kernels, and the timeline around them where the export has one (the data of
    llmsim.profiles.profile.Profile, which adds the table, the comparison and the figure).

    span_s: first kernel start to last kernel end (None for summary exports without a timeline).
    idle_s: the part of span_s with no kernel running (host work the device waits on: overhead).
    host_launch_s: host time in CUDA launch calls (torch.profiler CUDA traces), None where unknown.
    gpu_name: the GPU the export says it ran on (Nsight Compute reports), None where it names none."""

    model_config = ConfigDict(frozen=True)
    format: str
    path: str
    device: str  # "cpu" or "gpu"
    kernels: list[Kernel]
    span_s: float | None = None
    idle_s: float | None = None
    host_launch_s: float | None = None
    notes: list[str] = []
    gpu_name: str | None = None

    @property
    def kernel_time_s(self) -> float:
        return sum(k.time_s for k in self.kernels)

    def __str__(self) -> str:
        span = "" if self.span_s is None else f", span {self.span_s * 1e3:.3f} ms"
        idle = "" if self.idle_s is None else f", idle {self.idle_s * 1e3:.3f} ms"
        copies = [k for k in self.kernels if k.op_class == "copy"]  # memcpy/memset rows: not kernels
        n, c = len(self.kernels) - len(copies), len(copies)
        copy_s = sum(k.time_s for k in copies)
        counts = f"{n} kernel{'s' if n != 1 else ''}" + (f" and {c} cop{'ies' if c != 1 else 'y'}" if c else "")
        times = f"{(self.kernel_time_s - copy_s) * 1e3:.3f} ms in kernels" + (
            f" and {copy_s * 1e3:.3f} ms in copies" if c else "")
        return f"{self.format} profile {self.path}: {counts}, {times}{span}{idle}"
