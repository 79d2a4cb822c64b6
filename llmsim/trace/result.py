"""TraceResult: the timed kernels of one traced forward pass, with totals, tables and module grouping."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..analysis.text import fmt_s as _fmt_s
from ..cost.op import Op
from .kernels import Kernel

BOUNDS = ("compute", "memory", "overhead")


@dataclass(frozen=True, slots=True)
class TracedKernel:
    """A kernel and its predicted time and bound on the device."""

    kernel: Kernel
    time_s: float
    bound: str  # the largest of its compute, memory and overhead terms
    source: str = "roofline"  # where its time comes from: "roofline" or a measured table ("vllm gemm")

    @property
    def flops(self) -> float:
        return self.kernel.matmul_flops + self.kernel.vector_flops

    @property
    def bytes(self) -> float:
        return self.kernel.bytes_read + self.kernel.bytes_written

    @property
    def arithmetic_intensity(self) -> float:
        """FLOP per byte; 0 where the kernel moves nothing (an empty tensor: no work of either kind)."""
        if not self.bytes:
            return 0.0 if not self.flops else float("inf")
        return self.flops / self.bytes


@dataclass(frozen=True)
class TraceResult:
    """One forward pass of a traced module on a device (frozen).

    kernels: in execution order. unknown_ops: aten ops no formula knows, each costed as a memory-bound copy
    of its inputs and outputs (listed so nothing is dropped silently)."""

    model: str
    hardware: str
    dtype: str
    engine: str
    fusion: str
    precision: str
    kernels: tuple[TracedKernel, ...]
    unknown_ops: tuple[str, ...]
    aten_ops: int  # aten calls recorded, views included
    parameters: int
    tables_note: str = ""  # why the engine's measured tables do not apply on this device ("" if they do)
    autocast: str | None = None  # traced under CUDA autocast to this dtype (analyze(autocast=...)), else None
    weights_bytes: float = 0.0  # parameters and buffers at the traced dtype (tied ones once)
    capacity_bytes: float = 0.0  # the device's memory (0: not known)

    @property
    def memory_floor_bytes(self) -> float:
        """A floor of the forward's peak memory: the weights, or the largest kernel's inputs and outputs if more
        (they are all resident while it runs).
        approximation: a floor, not the peak: the other tensors live at that moment (a residual kept for a later
        add, the weights a kernel does not read) are not counted, nor the allocator's workspace."""
        largest = max((k.kernel.bytes_read + k.kernel.bytes_written for k in self.kernels), default=0.0)
        return max(self.weights_bytes, largest)

    @property
    def fits(self) -> bool:
        """Whether the memory floor fits the device (True where its memory is not known)."""
        return not self.capacity_bytes or self.memory_floor_bytes <= self.capacity_bytes

    @property
    def time_s(self) -> float:
        return sum(k.time_s for k in self.kernels)

    @property
    def flops(self) -> float:
        return sum(k.flops for k in self.kernels)

    @property
    def matmul_flops(self) -> float:
        """FLOPs of matmuls, convolutions and attention (what FlopCounterMode counts)."""
        return sum(k.kernel.matmul_flops for k in self.kernels)

    @property
    def bytes(self) -> float:
        return sum(k.bytes for k in self.kernels)

    @property
    def shares(self) -> dict[str, float]:
        """Share of the time in kernels of each bound."""
        total = self.time_s or 1.0
        return {b: sum(k.time_s for k in self.kernels if k.bound == b) / total for b in BOUNDS}

    @property
    def bound(self) -> str:
        """The largest share of the time; "none" for a forward with no time at all (no kernel ran)."""
        shares = self.shares
        if not any(shares.values()):
            return "none"
        return max(shares, key=shares.get)

    @property
    def ops(self) -> list[Op]:
        """The kernels as llmsim Ops (for the shared roofline plots and tools that take [Op])."""
        return [k.kernel.to_op(self.precision) for k in self.kernels]

    def roofline_figure(self, label_top: int = 5) -> Any:
        """The device's roofline with every kernel on it (a matplotlib Figure; report.trace_plot)."""
        from ..report.trace_plot import trace_roofline_figure

        return trace_roofline_figure(self, label_top)

    def by_module(self, depth: int = 2) -> dict[str, dict[str, float]]:
        """Time, FLOPs and bytes summed per module path cut to `depth` parts ("" = the root), slowest first."""
        from ..cost.workload import check_one

        depth = check_one("depth", depth, 1)  # 0 or -1 gave the whole model as one row; 1.5 a TypeError
        groups: dict[str, dict[str, float]] = {}
        for k in self.kernels:
            path = ".".join(k.kernel.module.split(".")[:depth]) if k.kernel.module else ""
            g = groups.setdefault(path, {"time_s": 0.0, "flops": 0.0, "bytes": 0.0, "kernels": 0})
            g["time_s"] += k.time_s
            g["flops"] += k.flops
            g["bytes"] += k.bytes
            g["kernels"] += 1
        return dict(sorted(groups.items(), key=lambda item: -item[1]["time_s"]))

    def rows(self) -> list[dict[str, Any]]:
        """One dict per kernel: aten op, module path, shapes, FLOPs, bytes, AI, time, bound, share."""
        total = self.time_s or 1.0
        return [{"aten": k.kernel.aten, "module": k.kernel.module, "shapes": k.kernel.shapes, "kind": k.kernel.kind,
                 "flops": k.flops, "bytes": k.bytes, "arithmetic_intensity": k.arithmetic_intensity,
                 "time_s": k.time_s, "bound": k.bound, "share": k.time_s / total, "source": k.source}
                for k in self.kernels]

    def ops_table(self, top: int | None = None) -> str:
        """A text table of the kernels, slowest first (all, or the `top` slowest)."""
        from ..errors import check_top

        rows = sorted(self.rows(), key=lambda r: -r["time_s"])[: check_top(top)]
        lines = [f"{'aten op':<34} {'module':<36} {'shapes':<30} {'GFLOP':>9} {'MB':>9} {'FLOP/B':>8} "
                 f"{'time':>10} {'bound':>8} {'share':>6}  source"]
        for r in rows:
            lines.append(f"{_cut(r['aten'], 34):<34} {_cut(r['module'] or '<root>', 36):<36} "
                         f"{_cut(r['shapes'], 30):<30} {r['flops'] / 1e9:>9.3f} {r['bytes'] / 1e6:>9.2f} "
                         f"{r['arithmetic_intensity']:>8.1f} {_fmt_s(r['time_s']):>10} {r['bound']:>8} "
                         f"{r['share']:>6.1%}  {r['source']}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary(top=5)

    def summary(self, top: int = 5) -> str:
        """The result in words, with its `top` kernels (0: none, as `llmsim analyze` prints its own table)."""
        shares = ", ".join(f"{b} {s:.0%}" for b, s in self.shares.items())
        dtype = self.dtype if self.autocast is None else f"autocast {self.autocast} over {self.dtype}"
        lines = [f"{self.model} ({self.parameters / 1e6:.1f} M parameters) on {self.hardware}, {dtype}, "
                 f"engine {self.engine}: {_fmt_s(self.time_s)} per forward, "
                 + (f"{self.bound}-bound ({shares})" if self.bound != "none" else "no kernel runs (views only)"),
                 f"  {self.flops / 1e9:.2f} GFLOP ({self.matmul_flops / 1e9:.2f} in matmul/conv/attention), "
                 f"{self.bytes / 1e6:.1f} MB moved, {len(self.kernels)} kernels from {self.aten_ops} aten calls"]
        if self.capacity_bytes:  # a batch or image too large for the device says so (it timed 121 GB tensors)
            gib = 2**30
            lines.append(f"  memory      at least {self.memory_floor_bytes / gib:.2f} GiB of "
                         f"{self.capacity_bytes / gib:.2f} GiB ({'fits' if self.fits else 'DOES NOT FIT'}): the "
                         f"weights {self.weights_bytes / gib:.2f} GiB or the largest kernel's inputs and outputs")
        measured = [k for k in self.kernels if k.source != "roofline"]
        if measured:  # by the table that timed them (a source reads "<engine> <family>" or "<engine> <family> (...)")
            counts: dict[str, int] = {}
            for k in measured:
                family = k.source.split(" (")[0].split(" ")[-1]
                counts[family] = counts.get(family, 0) + 1
            named = ", ".join(f"{n} from the {family} table" for family, n in counts.items())
            lines.append(f"  {len(measured)} kernels timed from measured tables ({named}), the others on the "
                         "roofline")
        elif self.tables_note:
            lines.append(f"  {self.tables_note}")
        if self.unknown_ops:
            lines.append(f"  no formula (costed as memory-bound copies): {', '.join(self.unknown_ops)}")
        if top:
            lines.append("  top kernels:")
            lines += ["    " + line for line in self.ops_table(top=top).splitlines()]
        return "\n".join(lines)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
