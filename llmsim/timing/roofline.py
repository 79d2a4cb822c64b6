"""Op x HardwareSpec -> time and bound: the roofline per op plus launch and framework overhead.

Per run of an op:
    compute_s = matmul_flops / (matrix peak of its precision * matmul fraction)
              + vector_flops / (vector peak * vector fraction)
    memory_s  = (bytes_read + bytes_written) / (bandwidth * memory fraction)
    (a matmul x[M, K] @ W[K, N]: both divided by the file's matmul_rows fraction at (M, N) times its
    matmul_depth ratio at (M, K), where the file has them; an
    element-wise op's memory_s by the file's elementwise_bytes fraction at its bytes per kernel: bytes
    per run / launches)
    kernel_s  = max(compute_s, memory_s)   (overlap="max", the roofline)
              | compute_s + memory_s       (overlap="sum", pessimistic)
    time_s    = kernel_s + launches * per-kernel cost      (overhead="graph")
              | kernel_s + launches * (launch + dispatch)  (overhead="eager" on a CPU: no async queue)
              | max(kernel_s + launches * launch, launches * dispatch)
                                                            (overhead="eager" on a GPU)
              | kernel_s                                   (overhead="none")
A prefill pass that the engine runs without a CUDA graph (ExecutionOptions.prefill_dispatch_s > 0, with
overhead="graph") launches each kernel eagerly (Roofline.for_prefill: its ops pay kernel_launch_s) and its host
dispatch counts for the whole pass (Roofline.pass_dispatch_s; timing.host_bound): the host queues kernels ahead,
so the pass takes the longer of its kernels' time and its kernels x prefill_dispatch_s.
approximation: in eager mode (overhead="eager") on a GPU the host dispatch counts per op, the longer of an op's
kernel and its dispatch.
The op's bound is the largest of its compute, memory and overhead terms.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..hardware.measured import TABLE_SIBLINGS, load_measured, measured_for
from ..hardware.spec import HardwareSpec
from .execution import EFFICIENCY_MODES, OVERHEAD_MODES, OVERLAP_POLICIES, ExecutionOptions
from .measured import MeasuredTiming
from .op_columns import ELEMENTWISE_KINDS, OpColumns, group_key, op_rates

__all__ = ["BOUNDS", "EFFICIENCY_MODES", "ELEMENTWISE_KINDS", "OVERHEAD_MODES", "OVERLAP_POLICIES",
           "ExecutionOptions", "OpColumns", "OpCost", "OpTime", "Roofline"]

BOUNDS = ("compute", "memory", "overhead", "communication")

# NCCL's base latency of one collective under its LL protocol, by algorithm, in seconds: the software cost its
# tuning model adds to the per-step hardware latencies (NVIDIA/nccl src/graph/tuning.cc, ncclTunerConstantsDefaults
# baseLatencies: Tree {6.8, 14.0, 8.4}, Ring {6.6, 14.0, 8.4} us for LL / LL128 / Simple; the hardware files'
# NVLink and network latencies, 0.6 and 2.7 us, are the same table's hwLatencies for LL). The measured NCCL tables
# show it: an 8-GPU all-gather of 512 bytes takes 10.1 us on the H100 (kernels/h100-sxm/vllm/nccl.csv), where
# 7 steps x 0.6 us give 4.2 us and 6.6 + 4.2 = 10.8 us.
NCCL_BASE_LATENCY_S = {"ring": 6.6e-6, "tree": 6.8e-6}


@dataclass(frozen=True)
class OpCost:
    """Compute and memory seconds of one run of an op, and its launches (arrays broadcast)."""

    compute_s: Any
    memory_s: Any
    launches: Any  # an int, or a float array for stacked ops
    comm_s: Any = 0.0
    host_s: Any = 0.0  # host work the GPU waits for ("engine.step" ops: ExecutionOptions.step_host_s)


@dataclass(frozen=True)
class OpTime:
    """One run's time and where it goes: compute, memory, overhead and communication parts sum to time_s."""

    time_s: Any
    compute_part_s: Any
    memory_part_s: Any
    overhead_part_s: Any
    communication_part_s: Any = 0.0


def _bytes_per_kernel(bytes_moved: Any, launches: Any) -> Any:
    """The size an element-wise op's curve is read at: its bytes per run spread over its kernels
    (approximation: an op of several kernels, such as eager RMSNorm, moves the same bytes in each)."""
    return bytes_moved / np.maximum(launches, 1)


def _curve_scales(groups: tuple[tuple[Any, np.ndarray], ...], x: np.ndarray, fraction_at: Any,
                  cols: np.ndarray | None = None) -> Any:
    """1 / the curve's fraction at x (and cols, for matmul tables) for the ops of each group (every
    group's key has a curve), 1.0 for every other op."""
    scale = np.ones(np.broadcast_shapes(np.shape(x), np.shape(cols)) if cols is not None else np.shape(x))
    for key, where in groups:
        if len(where) == len(x):  # every op: no copies
            scale = 1.0 / (fraction_at(key, x) if cols is None else fraction_at(key, x, cols))
        else:
            scale[where] = 1.0 / (fraction_at(key, x[where]) if cols is None else fraction_at(key, x[where],
                                                                                              cols[where]))
    return scale


def _op_cost(matmul_flops: Any, vector_flops: Any, bytes_moved: Any, matmul_flops_per_s: Any, vector_flops_per_s: Any,
             bandwidth_bytes_per_s: Any, scale: Any, memory_scale: Any, launches: Any, comm_s: Any) -> OpCost:
    """The module docstring's compute_s and memory_s, with the shape-curve scales (one op or stacked ops)."""
    compute_s = _plus(matmul_flops / matmul_flops_per_s, vector_flops / vector_flops_per_s)
    memory_s = bytes_moved / bandwidth_bytes_per_s
    return OpCost(compute_s=_times(compute_s, scale), memory_s=_times(memory_s, memory_scale), launches=launches,
                  comm_s=comm_s)


def _plus(x: Any, y: Any) -> Any:
    """x + y for seconds (>= 0); one of them alone where the other is a single zero (no FLOPs of that kind):
    the same values and shape, without a pass over an array."""
    for kept, other in ((x, y), (y, x)):
        if np.size(other) == 1 and np.ndim(other) <= np.ndim(kept) and other == 0:
            return kept
    return x + y


def _times(x: Any, scale: Any) -> Any:
    """x * scale; x itself for a scale of exactly 1.0 (the same value, without a pass over an array)."""
    return x if type(scale) is float and scale == 1.0 else x * scale


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
        self.step_host_s = 0.0 if mode == "none" else execution.step_host_s  # per "engine.step" op run
        # a prefill pass run without a CUDA graph (ExecutionOptions.prefill_dispatch_s): eager launches and
        # host dispatch per kernel; only where the rest replays graphs
        self.prefill_dispatch_s = execution.prefill_dispatch_s if mode == "graph" else 0.0
        self.prefill_graph_tokens = execution.prefill_graph_tokens  # passes up to this many tokens replay graphs
        self.pass_dispatch_s = 0.0  # host seconds per kernel counted for a whole pass (for_prefill's; host_bound)
        self._prefill: Roofline | None = None
        self.async_host = hardware.device_type == "gpu"
        self.measured, self.tables_note = _measured_timing(hardware, execution)
        # the roofline a measured time is divided by: this one, or that of the device whose tables stand in
        # (TABLE_SIBLINGS), so the tables' achieved fraction of their own device's roofline carries over
        self.table_roofline = self
        if self.measured is not None and self.measured.sibling_of is not None:
            from ..hardware.spec import load_hardware

            self.table_roofline = Roofline(load_hardware(self.measured.kernels.device), execution)
        # a long prefill pass's compute-bound work at the sustained clock (timing.sustained): (fraction, onset_s)
        self.sustained = None if peak or execution.clock == "boost" else hardware.sustained_clock()

    def for_prefill(self) -> Roofline:
        """The roofline a prefill pass runs under: this one, or, where the engine runs its prefill without a
        CUDA graph (prefill_dispatch_s > 0), a copy whose ops pay the eager launch (overhead.kernel_launch_s)
        and whose passes pay prefill_dispatch_s of host time per kernel as a whole (pass_dispatch_s: the pass
        takes the longer of its kernels and its host dispatch, timing.host_bound; the module docstring)."""
        if self.prefill_dispatch_s == 0:
            return self
        if self._prefill is None:
            prefill = copy.copy(self)
            prefill.launch_s = self.hardware.overhead_s("kernel_launch_s")
            prefill.dispatch_s = 0.0  # per op: none (counted for the pass)
            prefill.pass_dispatch_s = self.prefill_dispatch_s
            prefill.prefill_dispatch_s = 0.0  # already the prefill's: for_prefill() of it is itself
            prefill._prefill = None
            self._prefill = prefill
        return self._prefill

    def at_boost(self) -> Roofline:
        """This roofline with every pass at the boost clock (no sustained-clock stretch; timing.sustained): the
        serving step cost applies the stretch per step itself."""
        if self.sustained is None:
            return self
        boost = copy.copy(self)
        boost.sustained, boost._prefill = None, None
        return boost

    def prefill_captured(self, tokens: Any) -> Any:
        """Whether a prefill pass of `tokens` tokens (all its sequences; arrays allowed) replays CUDA graphs:
        where the engine runs none uncaptured, or the pass is within prefill_graph_tokens."""
        if self.for_prefill() is self:
            return np.ones(np.shape(tokens), dtype=bool) if np.ndim(tokens) else True
        return np.asarray(tokens) <= self.prefill_graph_tokens if np.ndim(tokens) else \
            tokens <= self.prefill_graph_tokens

    def matmul_flops_per_s(self, precision: str) -> float:
        fraction = 1.0 if self.execution.efficiency == "peak" else self.hardware.matmul_efficiency(precision)
        return self.hardware.matrix_peak_flops_per_s(precision) * fraction

    def vector_flops_per_s(self, precision: str) -> float:
        return self.hardware.vector_peak_flops_per_s(precision) * self.vector_fraction

    def bandwidth_for(self, kind: str) -> float:
        """Achievable bandwidth of an op of this kind (matmuls may have their own fraction)."""
        return self.matmul_bandwidth_bytes_per_s if kind == "matmul" else self.bandwidth_bytes_per_s

    def row_scale(self, kind: str, precision: str, rows: Any, cols: Any = None, layout: str = "out_in",
                  depth: int = 0) -> Any:
        """1 / the fraction of the roofline a matmul with `rows` rows, `cols` output columns and inner
        dimension `depth` reaches (the hardware file's matmul_rows table for the precision, and its
        matmul_depth ratio; 1.0 for other ops, without a table, or at peak)."""
        if kind != "matmul" or rows is None or self.execution.efficiency == "peak":
            return 1.0
        fraction = self.hardware.matmul_row_fraction(precision, rows, cols, layout, depth)
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
             cols: Any = None, layout: str = "out_in", depth: int = 0) -> OpCost:
        """Compute and memory seconds. A matmul's both terms stretch by its row-count scale
        (approximation: thin shapes slow the kernel, whichever term bounds it); an element-wise op's
        memory term by the bandwidth fraction at its size (size_bytes, default bytes_moved / launches)."""
        scale = self.row_scale(kind, precision, rows, cols, layout, depth)
        size = _bytes_per_kernel(bytes_moved, launches) if size_bytes is None else size_bytes
        memory_scale = scale * self.size_scale(kind, precision, size)
        cost = _op_cost(matmul_flops, vector_flops, bytes_moved, self.matmul_flops_per_s(precision),
                        self.vector_flops_per_s(precision), self.bandwidth_for(kind), scale, memory_scale, launches,
                        comm_s)
        return replace(cost, host_s=self.step_host_s) if kind == "host" and self.step_host_s else cost

    def costs(self, ops: OpColumns, matmul_flops: np.ndarray, vector_flops: np.ndarray, bytes_moved: np.ndarray,
              rows: np.ndarray | None = None, size_bytes: np.ndarray | None = None, comm_s: Any = 0.0,
              ndim: int | None = None, cols: np.ndarray | None = None, measured: np.ndarray | None = None
              ) -> OpCost:
        """cost() of several ops at once, the same arithmetic element by element: each quantity an array
        with the op axis of `ops` followed by `ndim` workload axes (default: the op axis first), and any
        axes before it; rows, cols and size_bytes with the op axis first (rows and cols of ops without
        matmul_rows are not read). measured: measured_scale() of the ops (NaN where no table covers one),
        which replaces their shape curves."""
        matmul_peak, vector_peak, bandwidth, launches = self.rates(ops, np.ndim(matmul_flops) - 1 if ndim is None
                                                                   else ndim)
        scale, size_scale = 1.0, 1.0
        row_groups = self._with_curves(ops.row_groups, self._row_fraction)
        if row_groups and rows is not None:
            scale = _curve_scales(row_groups, rows, self._row_fraction, cols)
        if measured is not None:
            scale = np.where(np.isnan(measured), scale, measured)
        size_groups = self._with_curves(ops.size_groups, self.hardware.elementwise_bandwidth_fraction)
        if size_groups:
            size = _bytes_per_kernel(bytes_moved, launches) if size_bytes is None else size_bytes
            size_scale = _curve_scales(size_groups, size, self.hardware.elementwise_bandwidth_fraction)
        cost = _op_cost(matmul_flops, vector_flops, bytes_moved, matmul_peak, vector_peak, bandwidth, scale,
                        scale * size_scale, launches, comm_s)
        if ops.is_host is None or not self.step_host_s:
            return cost
        host = np.where(ops.is_host, self.step_host_s, 0.0).reshape(np.shape(launches))  # [op, 1, ...]
        return replace(cost, host_s=host)

    def rates(self, ops: OpColumns, ndim: int) -> tuple[np.ndarray, ...]:
        """Each op's matrix peak, vector peak, bandwidth and launches along the op axis of `ops`,
        broadcasting over `ndim` workload axes."""
        return op_rates(ops, ndim, tuple(self.matmul_flops_per_s(p) for p in ops.precision_names),
                         tuple(self.vector_flops_per_s(p) for p in ops.precision_names),
                         (self.matmul_bandwidth_bytes_per_s, self.bandwidth_bytes_per_s))

    def measured_groups(self, ops: OpColumns) -> tuple[tuple[Any, np.ndarray], ...]:
        """(time function (x, y) -> seconds, op indices) of the ops a measured table covers."""
        if self.measured is None:
            return ()
        found = ((self.measured.lookup(key)[0], where) for key, where in ops.kernel_groups)
        return tuple((fn, where) for fn, where in found if fn is not None)

    def measured_scale(self, ops: OpColumns, matmul_flops: np.ndarray, vector_flops: np.ndarray,
                       bytes_moved: np.ndarray, x: np.ndarray, y: np.ndarray, ndim: int) -> np.ndarray | None:
        """Measured time / roofline time of each op a table covers (NaN for the others; None if it covers
        none), the op axis first. Both terms of such an op are scaled by it (see timing.measured).

        The roofline time here is the bounding term, max(compute, memory), under either overlap policy: the
        table sets the op's efficiency at the roof that bounds it, as a hardware file's achievable fraction
        does for an op without one, and overlap="sum" then adds the other term unoverlapped, as for any op
        (so "sum" is never faster than "max"; dividing by compute + memory made a table op's compute part,
        which the sustained clock stretches, smaller under "sum" than under "max")."""
        groups = self.measured_groups(ops)
        if not groups:
            return None
        matmul_peak, vector_peak, bandwidth, _ = self.table_roofline.rates(ops, ndim)
        compute_s = _plus(matmul_flops / matmul_peak, vector_flops / vector_peak)
        memory_s = bytes_moved / bandwidth
        kernel_s = np.maximum(compute_s, memory_s)  # the bounding term, whatever the overlap (docstring)
        kernel_s = np.broadcast_to(kernel_s, np.broadcast_shapes(np.shape(kernel_s), np.shape(x), np.shape(y)))
        scale = np.full(kernel_s.shape, np.nan)
        depth = ops.kernel_depth.reshape((-1,) + (1,) * (kernel_s.ndim - 1))
        for time_at, where in groups:
            scale[where] = time_at(x[where], y[where], depth[where]) / np.maximum(kernel_s[where], 1e-300)
        return scale

    def sources_of(self, fixed: Any) -> list[tuple[str, str]]:
        """source_of each op of an OpFields (made once per OpFields and table set: they depend on nothing else)."""
        if self.measured is None:
            return [self.source_of(op) for op in fixed.ops]
        return self.measured.remembered(fixed, lambda: [self.source_of(op) for op in fixed.ops])

    def source_of(self, op: Any) -> tuple[str, str]:
        """(where the op's time comes from: "<tables> <family>" or "roofline"; why no table, if one was meant)."""
        if self.measured is not None:
            if op.collective and op.group_size > 1:
                found, family, stand_in = self.measured.collective(op.collective, op.group_size)
                if found is not None:
                    return f"{self.measured.kernels.engine} {family}", stand_in
                return "roofline", f"no {op.collective} table for {op.group_size} GPUs (alpha-beta model)"
            if op.kernel_key is not None:
                time_at, label, other = self.measured.lookup(group_key(op.kernel_key))
                if time_at is None:
                    return "roofline", label
                return other or f"{self.measured.kernels.engine} {op.kernel_key[0]}", label
        return "roofline", ""

    def reads_rows(self, ops: OpColumns) -> bool:
        """Whether costs() reads the ops' matmul_rows: a matmul's precision has a row curve (not at peak)."""
        return bool(self._with_curves(ops.row_groups, self._row_fraction))

    def _row_fraction(self, key: tuple[str, str, int], rows: Any, cols: Any = None) -> Any:
        """The matmul table's fraction for a row group's (precision, weight layout, inner dimension)."""
        return self.hardware.matmul_row_fraction(key[0], rows, cols, key[1], key[2])

    def _with_curves(self, groups: tuple[tuple[Any, np.ndarray], ...], fraction_at: Any
                     ) -> tuple[tuple[Any, np.ndarray], ...]:
        """The groups whose key has a curve (fraction_at gives None without one); none at peak."""
        if self.execution.efficiency == "peak":
            return ()
        return tuple(group for group in groups if fraction_at(group[0], 1.0) is not None)

    def collective_s(self, kind: str | None, message_bytes: Any, group: int) -> Any:
        """Time of a collective among `group` GPUs (ring algorithms; alpha-beta model).

        With n GPUs, link bandwidth BW (one direction), latency a per step and NCCL's base latency b_ring of a
        ring collective, for a message of M bytes:
            all_reduce  b_ring + 2*(n-1)/n * M/BW + 2*(n-1)*a   (ring: reduce-scatter then all-gather)
            all_gather  b_ring +   (n-1)/n * M/BW +   (n-1)*a   (reduce_scatter the same: M the gathered size)
            all_to_all             (n-1)/n * M/BW +   (n-1)*a
            p2p                              M/BW +          a
        Sources: the bus-bandwidth factors of NCCL's tests (nccl-tests doc/PERFORMANCE.md: all-reduce
        2(n-1)/n, all-gather and all-to-all (n-1)/n); Thakur, Rabenseifner and Gropp, "Optimization of
        collective communication operations in MPICH" (2005) for the ring latency terms; b (NCCL_BASE_LATENCY_S)
        from NCCL's tuning model. The link is NVLink (intra-node) when the group fits one node, else the
        inter-node network.
        An all-reduce over N nodes (n / gpus_per_node, rounded up) is timed as NCCL's own tuning model times
        its two algorithms (NVIDIA/nccl src/graph/tuning.cc, ncclTopoTuneModel), the faster one taken:
            ring  b_ring + 2*(n-1)/n * M/BW_net + (2(n-1) - 2(N-1)) * a_nvlink + 2(N-1) * a_net
            tree  b_tree + 2 * M/BW_net + 2 * ((n/N - 1) * a_nvlink + floor(log2 N) * a_net)
        (ring: only 2(N-1) of its steps cross the network; tree: algorithm bandwidth half the bus bandwidth,
        latency in the depth of the tree across nodes).
        approximation: the link runs at its datasheet bandwidth (no achievable fraction); the LL protocol's base
        and per-step latencies at every size (NCCL's Simple protocol has more of each and more bandwidth: at
        the sizes where it wins, the bandwidth term dominates); all-to-all and p2p, which NCCL runs as grouped
        sends and receives outside that tuning model, take no base latency.
        """
        if kind is None or group <= 1:
            return 0.0
        measured = self.measured.collective(kind, group)[0] if self.measured is not None else None
        if measured is not None:
            return measured(message_bytes)
        hw = self.hardware
        per_node = int(hw.interconnect_value("gpus_per_node")) if "gpus_per_node" in hw.interconnect else 1
        where = "intra_node" if group <= per_node else "inter_node"
        bandwidth = hw.interconnect_value(f"{where}_bandwidth_bytes_per_s")
        latency = hw.interconnect_value(f"{where}_latency_s")
        n = group
        if kind == "all_reduce" and where == "inter_node" and "intra_node_latency_s" in hw.interconnect:
            nodes = -(-n // per_node)
            nvlink = hw.interconnect_value("intra_node_latency_s")
            ring = NCCL_BASE_LATENCY_S["ring"] + 2 * (n - 1) / n * message_bytes / bandwidth \
                + (2 * (n - 1) - 2 * (nodes - 1)) * nvlink + 2 * (nodes - 1) * latency
            tree = NCCL_BASE_LATENCY_S["tree"] + 2 * message_bytes / bandwidth \
                + 2 * ((n / nodes - 1) * nvlink + math.floor(math.log2(nodes)) * latency)
            return np.minimum(ring, tree) if isinstance(ring, np.ndarray) else min(ring, tree)
        if kind == "all_reduce":
            return NCCL_BASE_LATENCY_S["ring"] + 2 * (n - 1) / n * message_bytes / bandwidth + 2 * (n - 1) * latency
        if kind in ("all_gather", "reduce_scatter"):
            return NCCL_BASE_LATENCY_S["ring"] + (n - 1) / n * message_bytes / bandwidth + (n - 1) * latency
        if kind == "all_to_all":
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
        if type(cost.host_s) not in (int, float) or cost.host_s:  # engine steps' host work (none: skipped)
            launch = launch + cost.host_s
        dispatch = cost.launches * self.dispatch_s
        # adding no communication (a scalar 0) or taking the max with no host dispatch changes nothing (the
        # terms are >= 0): skipped, as each would be a pass over an array in a sweep
        busy_s = kernel_s if type(comm_s) in (int, float) and comm_s == 0 else kernel_s + comm_s
        if self.dispatch_s == 0:
            time_s = busy_s + launch
        else:
            time_s = maximum(busy_s + launch, dispatch) if self.async_host else busy_s + launch + dispatch
        if not scalar:
            comm_s = np.broadcast_to(comm_s, np.shape(time_s))
        return OpTime(time_s=time_s, compute_part_s=compute_part, memory_part_s=memory_part,
                      overhead_part_s=time_s - busy_s, communication_part_s=comm_s)

    def crossings(self, c0: Any, cs: Any, m0: Any, ms: Any, launches: int) -> list[Any]:
        """Real L offsets where two of an op's affine terms (compute, memory, host dispatch) cross,
        given each term as value at offset 0 plus slope per step. Non-crossings are +inf."""
        pairs = crossing_pairs(c0, cs, m0, ms, launches, self.launch_s, self.dispatch_s, self.async_host,
                               self.execution.overlap == "max")
        return [crossing_offsets(diff0, slope) for diff0, slope in pairs]


def crossing_pairs(c0: Any, cs: Any, m0: Any, ms: Any, launches: Any, launch_s: float, dispatch_s: float,
                   async_host: bool, overlap_max: bool) -> list[tuple[Any, Any]]:
    """(difference at offset 0, difference of slopes) of each pair of an op's affine time terms that can
    cross: compute and memory, and with asynchronous host dispatch each of them (or, with overlap "sum",
    their sum) against the dispatch time beyond the launches. Shared by Roofline.crossings and the fast
    paths (timing.fast_path, timing.fast_sweep)."""
    dispatch = launches * dispatch_s - launches * launch_s
    pairs = [(c0 - m0, cs - ms)]
    if dispatch_s > 0 and async_host:
        pairs += [(c0 - dispatch, cs), (m0 - dispatch, ms)]
        if not overlap_max:
            pairs = [(c0 + m0 - dispatch, cs + ms)]
    return pairs


def crossing_offsets(diff0: Any, slope: Any) -> np.ndarray:
    """-diff0 / slope element by element, +inf where the slope is 0 (the terms never cross)."""
    diff0, slope = np.asarray(diff0, dtype=float), np.asarray(slope, dtype=float)
    shape = diff0.shape if diff0.shape == slope.shape else np.broadcast_shapes(diff0.shape, slope.shape)
    return np.divide(-diff0, slope, out=np.full(shape, np.inf), where=slope != 0)


def _measured_timing(hardware: HardwareSpec, execution: ExecutionOptions) -> tuple[MeasuredTiming | None, str]:
    """The measured tables of the execution options for this device, and a note when none apply."""
    if not execution.tables or execution.efficiency == "peak":
        return None, ""
    timing, note = _timing_of(hardware.name, execution.tables, execution.table_families, execution.fp8_scales,
                              execution.mxfp4_moe_kernel, execution.fp8_block_moe_kernel, execution.moe_routing)
    if timing is not None and not note:
        from ..engines.catalog import ENGINES

        wanted = ENGINES[execution.engine].tables if execution.engine in ENGINES else None
        if Path(execution.tables).is_dir():  # a folder of the user's
            measured = {table.provenance.get("engine") for table in timing.kernels.tables.values()} - {None}
        else:  # a shipped set by name
            measured = {execution.tables}
        if wanted and measured and wanted not in measured:  # another engine's kernels: said, not silent
            under = ", ".join(sorted(str(e) for e in measured))
            note = (f"tables {execution.tables}: measured under engine {under}; they stand in for engine "
                    f"{execution.engine}'s kernels, whose own differ (approximation)")
    return timing, note


STAND_IN_SETS = ("sglang", "trtllm")  # engine table sets that fall back to the device's vLLM set


@lru_cache(maxsize=64)
def _timing_of(device: str, tables: str, families: tuple[str, ...] | None, fp8_scales: str = "static",
               mxfp4_moe_kernel: str = "default", fp8_block_moe_kernel: str = "default", moe_routing: str = "model"
               ) -> tuple[MeasuredTiming | None, str]:
    """One MeasuredTiming per device, table set (or folder) and families, kept with its lookups."""
    kernels = measured_for(device, tables)
    folder = kernels is None and Path(tables).is_dir()
    if folder:
        kernels = load_measured(str(Path(tables).resolve()))
        if kernels.device != device and TABLE_SIBLINGS.get(device) == kernels.device:
            kernels = None  # a folder of the same die's tables: read as the sibling's, below
    if kernels is None and tables in STAND_IN_SETS:
        stand_in = measured_for(device, "vllm")
        if stand_in is not None:  # the same GPU's measured kernels, from another engine, beat peak x fraction
            return MeasuredTiming(stand_in, families, fp8_scales, mxfp4_moe_kernel, fp8_block_moe_kernel,
                                  moe_routing=moe_routing), (
                f"no {tables} kernel tables ship for {device}: vLLM's measured tables of this device stand in "
                f"(approximation: same GPU, the engines' kernels differ)")
    sibling = TABLE_SIBLINGS.get(device)
    if kernels is None and sibling is not None:
        timing, note = _timing_of(sibling, tables, families, fp8_scales, mxfp4_moe_kernel, fp8_block_moe_kernel,
                                  moe_routing)
        if timing is not None:
            whose = (f"the tables of {tables}, measured on {sibling} (the same die), stand in for {device}:" if folder
                     else f"no {tables} kernel tables ship for {device}: those of {sibling} (the same die) stand in,")
            return MeasuredTiming(timing.kernels, families, fp8_scales, mxfp4_moe_kernel, fp8_block_moe_kernel,
                                  sibling_of=device, moe_routing=moe_routing), (
                f"{whose} each op's measured time x its roofline time on {device} / on {sibling} (approximation: "
                f"the sibling's achieved fraction of its roofline carries over)" + (f"; {note}" if note else ""))
    if kernels is None:
        return None, (f"no measured {tables} kernel tables for {device}: every op on the roofline with the hardware "
                      f"file's achievable fractions")
    return MeasuredTiming(kernels, families, fp8_scales, mxfp4_moe_kernel, fp8_block_moe_kernel,
                          moe_routing=moe_routing), ""
