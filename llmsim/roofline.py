"""Op x HardwareSpec -> time and bound: the roofline per op plus launch and framework overhead.

Per run of an op:
    compute_s = matmul_flops / (matrix peak of its precision * matmul fraction)
              + vector_flops / (vector peak * vector fraction)
    memory_s  = (bytes_read + bytes_written) / (bandwidth * memory fraction)
    (a matmul of M rows: both divided by the file's matmul_rows fraction at M, where it has one; an
    element-wise op's memory_s by the file's elementwise_bytes fraction at its bytes per run)
    kernel_s  = max(compute_s, memory_s)   (overlap="max", the roofline)
              | compute_s + memory_s       (overlap="sum", pessimistic)
    time_s    = kernel_s + launches * per-kernel cost      (overhead="graph")
              | kernel_s + launches * (launch + dispatch)  (overhead="eager" on a CPU: no async queue)
              | max(kernel_s + launches * launch, launches * dispatch)
                                                            (overhead="eager" on a GPU)
              | kernel_s                                   (overhead="none")
approximation: on a GPU in eager mode the host queues kernels ahead; the GPU idles only when an op's
host dispatch outlasts its kernel, so per op the longer of the two counts.
The op's bound is the largest of its compute, memory and overhead terms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from .errors import check_choice
from .hardware import HardwareSpec

EFFICIENCY_MODES = ("achievable", "peak")
OVERHEAD_MODES = ("graph", "eager", "none")
OVERLAP_POLICIES = ("max", "sum")
BOUNDS = ("compute", "memory", "overhead", "communication")
# op kinds whose memory traffic follows the hardware file's elementwise_bytes curve, where it has one
ELEMENTWISE_KINDS = ("norm", "elementwise", "embedding", "routing", "cache")


class ExecutionOptions(BaseModel):
    """How the device runs the ops.

    - efficiency="achievable" (default): peaks derated by the hardware file's achievable fractions;
      "peak": datasheet speed of light (with overhead="none", the classic roofline).
    - overhead="graph" (default): kernel launches only, as with CUDA graphs or a compiled model;
      "eager": plus PyTorch's per-op dispatch, as plain PyTorch and transformers run; "none".
    - overlap="max" (default): compute and memory traffic overlap (roofline); "sum": they do not.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    efficiency: str = "achievable"
    overhead: str = "graph"
    overlap: str = "max"

    @classmethod
    def make(cls, **values: Any) -> ExecutionOptions:
        values = {k: v for k, v in values.items() if v is not None}
        check_choice("efficiency", values.get("efficiency", "achievable"), EFFICIENCY_MODES)
        check_choice("overhead", values.get("overhead", "graph"), OVERHEAD_MODES)
        check_choice("overlap", values.get("overlap", "max"), OVERLAP_POLICIES)
        return cls(**values)


@dataclass(frozen=True)
class OpCost:
    """Compute and memory seconds of one run of an op, and its launches (arrays broadcast)."""

    compute_s: Any
    memory_s: Any
    launches: int
    comm_s: Any = 0.0


@dataclass(frozen=True)
class OpTime:
    """One run's time and where it goes: compute, memory, overhead and communication parts sum to time_s."""

    time_s: Any
    compute_part_s: Any
    memory_part_s: Any
    overhead_part_s: Any
    communication_part_s: Any = 0.0


class Roofline:
    """The device's derated ceilings under one set of execution options."""

    def __init__(self, hardware: HardwareSpec, execution: ExecutionOptions) -> None:
        self.hardware, self.execution = hardware, execution
        peak = execution.efficiency == "peak"
        self.vector_fraction = 1.0 if peak else hardware.efficiency_of("vector")
        self.memory_fraction = 1.0 if peak else hardware.efficiency_of("memory")
        self.bandwidth_bytes_per_s = hardware.memory_bandwidth_bytes_per_s * self.memory_fraction
        # memory-bound matmuls stream weights through the matrix unit; some devices reach less of the
        # bandwidth that way than a copy does (efficiency.matmul_memory; the memory fraction otherwise)
        matmul_memory = 1.0 if peak else hardware.efficiency_of("matmul_memory") if (
            "matmul_memory" in hardware.efficiency) else self.memory_fraction
        self.matmul_bandwidth_bytes_per_s = hardware.memory_bandwidth_bytes_per_s * matmul_memory
        mode = execution.overhead
        launch_key = "graph_replay_per_kernel_s" if mode == "graph" else "kernel_launch_s"
        self.launch_s = 0.0 if mode == "none" else hardware.overhead_s(launch_key)
        self.dispatch_s = hardware.overhead_s("eager_dispatch_s") if mode == "eager" else 0.0
        self.async_host = hardware.device_type == "gpu"

    def matmul_flops_per_s(self, precision: str) -> float:
        fraction = 1.0 if self.execution.efficiency == "peak" else self.hardware.matmul_efficiency(precision)
        return self.hardware.matrix_peak_flops_per_s(precision) * fraction

    def vector_flops_per_s(self, precision: str) -> float:
        return self.hardware.vector_peak_flops_per_s(precision) * self.vector_fraction

    def bandwidth_for(self, kind: str) -> float:
        """Achievable bandwidth of an op of this kind (matmuls may have their own fraction)."""
        return self.matmul_bandwidth_bytes_per_s if kind == "matmul" else self.bandwidth_bytes_per_s

    def row_scale(self, kind: str, precision: str, rows: Any, cols: Any = None, layout: str = "out_in") -> Any:
        """1 / the fraction of the roofline a matmul with `rows` rows and `cols` output columns reaches
        (the hardware file's matmul_rows table for the precision; 1.0 for other ops, without a table, or
        at peak)."""
        if kind != "matmul" or rows is None or self.execution.efficiency == "peak":
            return 1.0
        fraction = self.hardware.matmul_row_fraction(precision, rows, cols, layout)
        return 1.0 if fraction is None else 1.0 / fraction

    def size_scale(self, kind: str, precision: str, size_bytes: Any) -> Any:
        """1 / the fraction of the bandwidth an element-wise kernel moving size_bytes per run reaches (the
        hardware file's elementwise_bytes curve; 1.0 for matmuls and attention, without a curve, or at peak)."""
        if kind not in ELEMENTWISE_KINDS or size_bytes is None or self.execution.efficiency == "peak":
            return 1.0
        fraction = self.hardware.elementwise_bandwidth_fraction(precision, size_bytes)
        return 1.0 if fraction is None else 1.0 / fraction

    def cost(self, matmul_flops: Any, vector_flops: Any, bytes_moved: Any, precision: str, launches: int,
             comm_s: Any = 0.0, kind: str = "elementwise", rows: Any = None, size_bytes: Any = None,
             cols: Any = None, layout: str = "out_in") -> OpCost:
        """Compute and memory seconds. A matmul's both terms stretch by its row-count scale
        (approximation: thin shapes slow the kernel, whichever term bounds it); an element-wise op's
        memory term by the bandwidth fraction at its size (size_bytes, default bytes_moved)."""
        scale = self.row_scale(kind, precision, rows, cols, layout)
        memory_scale = scale * self.size_scale(kind, precision, bytes_moved if size_bytes is None else size_bytes)
        compute_s = matmul_flops / self.matmul_flops_per_s(precision) + vector_flops / self.vector_flops_per_s(
            precision
        )
        return OpCost(compute_s=compute_s * scale, memory_s=bytes_moved / self.bandwidth_for(kind) * memory_scale,
                      launches=launches, comm_s=comm_s)

    def collective_s(self, kind: str | None, message_bytes: Any, group: int) -> Any:
        """Time of a collective among `group` GPUs (ring algorithms; alpha-beta model).

        With n GPUs, link bandwidth BW (one direction) and latency a, for a message of M bytes:
            all_reduce  2*(n-1)/n * M/BW + 2*(n-1)*a   (ring: reduce-scatter then all-gather)
            all_gather    (n-1)/n * M/BW +   (n-1)*a
            all_to_all    (n-1)/n * M/BW +   (n-1)*a
            p2p                     M/BW +          a
        Sources: the bus-bandwidth factors of NCCL's tests (nccl-tests doc/PERFORMANCE.md: all-reduce
        2(n-1)/n, all-gather and all-to-all (n-1)/n); Thakur, Rabenseifner and Gropp, "Optimization of
        collective communication operations in MPICH" (2005) for the ring latency terms. The link is
        NVLink (intra-node) when the group fits one node, else the inter-node network.
        approximation: the link runs at its datasheet bandwidth (no achievable fraction).
        """
        if kind is None or group <= 1:
            return 0.0
        hw = self.hardware
        per_node = int(hw.interconnect_value("gpus_per_node")) if "gpus_per_node" in hw.interconnect else 1
        where = "intra_node" if group <= per_node else "inter_node"
        bandwidth = hw.interconnect_value(f"{where}_bandwidth_bytes_per_s")
        latency = hw.interconnect_value(f"{where}_latency_s")
        n = group
        if kind == "all_reduce":
            return 2 * (n - 1) / n * message_bytes / bandwidth + 2 * (n - 1) * latency
        if kind in ("all_gather", "all_to_all"):
            return (n - 1) / n * message_bytes / bandwidth + (n - 1) * latency
        return message_bytes / bandwidth + latency

    def time(self, cost: OpCost) -> OpTime:
        # scalar costs (one simulate()) stay Python floats: numpy's per-call overhead dominates scalars
        scalar = all(isinstance(x, (int, float)) for x in (cost.compute_s, cost.memory_s, cost.comm_s))
        if scalar:
            compute_s, memory_s, comm_s = float(cost.compute_s), float(cost.memory_s), float(cost.comm_s)
        else:
            compute_s, memory_s = np.asarray(cost.compute_s, dtype=float), np.asarray(cost.memory_s, dtype=float)
            comm_s = cost.comm_s
        maximum = max if scalar else np.maximum
        if self.execution.overlap == "max":
            kernel_s = maximum(compute_s, memory_s)
            if scalar:
                compute_part = kernel_s if compute_s >= memory_s else 0.0
            else:
                compute_part = np.where(compute_s >= memory_s, kernel_s, 0.0)
            memory_part = kernel_s - compute_part
        else:
            kernel_s = compute_s + memory_s
            compute_part, memory_part = compute_s, memory_s
        launch = cost.launches * self.launch_s
        dispatch = cost.launches * self.dispatch_s
        busy_s = kernel_s + comm_s
        time_s = maximum(busy_s + launch, dispatch) if self.async_host else busy_s + launch + dispatch
        if not scalar:
            comm_s = np.broadcast_to(comm_s, np.shape(time_s))
        return OpTime(time_s=time_s, compute_part_s=compute_part, memory_part_s=memory_part,
                      overhead_part_s=time_s - busy_s, communication_part_s=comm_s)

    def crossings(self, c0: Any, cs: Any, m0: Any, ms: Any, launches: int) -> list[Any]:
        """Real L offsets where two of an op's affine terms (compute, memory, host dispatch) cross,
        given each term as value at offset 0 plus slope per step. Non-crossings are +inf."""
        dispatch = launches * self.dispatch_s - launches * self.launch_s
        pairs = [(c0 - m0, cs - ms)]
        if self.dispatch_s > 0 and self.async_host:
            pairs += [(c0 - dispatch, cs), (m0 - dispatch, ms)]
            if self.execution.overlap == "sum":
                pairs = [(c0 + m0 - dispatch, cs + ms)]
        out = []
        for diff0, slope in pairs:
            diff0, slope = np.asarray(diff0, dtype=float), np.asarray(slope, dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                x = np.where(slope != 0, -diff0 / np.where(slope != 0, slope, 1.0), np.inf)
            out.append(x)
        return out
