"""The scalar fast path of one workload: prefill and decode per-op totals in plain Python floats.

The reference path (phases.prefill_totals / decode_totals) evaluates the ops of a phase along a numpy op
axis, for any workload shape; for one workload (a handful of ops, each a number) numpy's per-call overhead is
most of its time. ScalarPlan does the same arithmetic op by op on Python floats, element by element as the
reference does it (same operations, same order: the same IEEE doubles), with everything that does not
depend on the workload done once per (model, device, options):
  - each phase's formula program compiled to one straight-line Python function of (B, S, L) (`_compile`);
  - per op: its rates, launches, window, count, and the time function of the measured table covering it,
    with the coordinates no workload changes applied once (TableRead.fixed_at: a GEMM's N and K), read with
    the arithmetic of GridTable._time_at.
tests/test_fast_simulate.py checks the results against the reference over models, engines and workloads
(every shipped model agrees to the last bit). The caller (analysis.fast_simulate) takes the reference path
wherever ScalarPlan.make gives None (a model without graph templates).
"""

from __future__ import annotations

import math
import operator
from typing import Any

from ..cost.graph import graph_template
from ..cost.workload import CostOptions
from ..hardware.spec import HardwareSpec
from ..models.spec import ModelSpec
from .decode_sum import mean_clamped_offset
from .host_bound import with_host_dispatch
from .measured import TableRead
from .op_columns import ELEMENTWISE_KINDS, group_key
from .op_fields import _template_fields
from .roofline import ExecutionOptions, Roofline, crossing_pairs
from .sustained import sustained_scale, throttled_parts

_SYMBOLS = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/"}
# per run, each op's: matmul_flops, vector_flops, bytes_read, bytes_written, weight_bytes, comm_bytes,
# matmul_rows, matmul_cols, kernel_x, kernel_y (None where the op has no such formula)
_QUANTITIES = ("matmul_flops", "vector_flops", "bytes_read", "bytes_written", "weight_bytes", "comm_bytes",
               "matmul_rows", "matmul_cols", "kernel_x", "kernel_y")


def _compile(template: Any, only: frozenset[int] | None = None) -> Any:
    """template.values_at(B, S, L) for numbers, as one generated straight-line function returning one tuple
    per op (its _QUANTITIES); values_at itself where the template has ops made by calling their formula again.
    only: the ops whose tuples it returns (None for the others), computing only the steps those need.

    Each step is the program's own (the same operator on the same registers, in the same order), so each
    value is the one values_at gives. The source is generated from the recorded program, never from input."""
    if template._called:  # ops made by calling their formula again: values_at itself, as tuples per op
        return _values_at_rows(template)
    program = template._program
    registers = program._registers
    columns = template._value_registers
    ops = range(len(template.ops)) if only is None else sorted(only)
    cells = {i: [columns[q][i] if q in columns else -1 for q in _QUANTITIES] for i in ops}
    steps = _steps_for(program._steps, {r for row in cells.values() for r in row if r >= 0})
    used = {r for _, _, a, b in steps for r in (a, b)} | {r for row in cells.values() for r in row}
    fixed = [i for i in range(3, len(registers)) if not program._varies[i] and i in used]
    namespace: dict[str, Any] = {"_fixed": tuple(registers[i] for i in fixed)}
    lines = ["def run(r0, r1, r2):"]
    if fixed:  # the registers no workload changes, bound once per call
        lines.append(f"    {', '.join(f'r{i}' for i in fixed)}, = _fixed")
    for out, fn, a, b in steps:
        symbol = _SYMBOLS.get(fn)
        if symbol is not None:
            lines.append(f"    r{out} = r{a} {symbol} r{b}")
        else:
            namespace[f"_f{out}"] = fn
            lines.append(f"    r{out} = _f{out}(r{a}, r{b})")
    rows = []
    for i in range(len(template.ops)):
        row = cells.get(i)
        rows.append("None" if row is None else "(" + ", ".join("None" if r < 0 else f"r{r}" for r in row) + ",)")
    lines.append(f"    return ({', '.join(rows)},)")
    exec(compile("\n".join(lines), f"<llmsim formula program {id(template):x}>", "exec"), namespace)
    return namespace["run"]


def _steps_for(steps: list[tuple[Any, ...]], wanted: set[int]) -> list[tuple[Any, ...]]:
    """The steps (out, fn, a, b) that the registers `wanted` depend on, in their order."""
    needed, kept = set(wanted), []
    for step in reversed(steps):
        if step[0] in needed:
            needed.update(step[2:4])
            kept.append(step)
    return kept[::-1]


def _table_read(time_at: Any, template: Any, index: int, depth: float, arrays: bool = False) -> Any:
    """The op's measured time as a function (x, y) -> seconds of single points (arrays: of arrays of points),
    with the coordinates that no workload changes (a GEMM's N and K) applied once (TableRead.fixed_at); None
    where no table covers it."""
    if time_at is None:
        return None
    if not isinstance(time_at, TableRead):
        return (lambda x, y: time_at(x, y, depth)) if arrays else (lambda x, y: float(time_at(x, y, depth)))
    program, columns = template._program, template._value_registers
    if any(called[0] == index for called in template._called):  # values from calling its formula: none held
        return time_at.fixed_at(None, None, depth, arrays)
    held = []
    for quantity in ("kernel_x", "kernel_y"):
        register = columns[quantity][index] if quantity in columns else -1
        if register < 0:
            held.append(1.0)  # read at 1.0, as the reference reads an op without the coordinate
        else:
            held.append(None if program._varies[register] else float(program._registers[register]))
    return time_at.fixed_at(held[0], held[1], depth, arrays)


def _values_at_rows(template: Any) -> Any:
    """The run function of a template with called ops: values_at's values, one tuple of _QUANTITIES per op."""
    none = [None] * len(template.ops)

    def run(B: Any, S: Any, L: Any) -> tuple[tuple[Any, ...], ...]:
        values = template.values_at(B, S, L)
        return tuple(zip(*(values.get(quantity, none) for quantity in _QUANTITIES)))

    return run


class _OpPlan:
    """What one op's scalar evaluation needs, fixed by the model, device and options."""

    __slots__ = (
        "bandwidth",
        "collective",
        "count",
        "depth",
        "host_s",
        "launch_s",
        "launches",
        "matmul_peak",
        "measured",
        "measured_arrays",
        "op",
        "plain",
        "row_key",
        "size_precision",
        "steady",
        "table_rates",
        "vector_peak",
        "window",
    )

    def __init__(self, op: Any, roofline: Roofline, rows_read: bool, measured: Any) -> None:
        self.op = op
        self.count = float(op.count)
        self.launches = float(op.launches)
        self.matmul_peak = roofline.matmul_flops_per_s(op.precision)
        self.vector_peak = roofline.vector_flops_per_s(op.precision)
        self.bandwidth = roofline.matmul_bandwidth_bytes_per_s if op.kind == "matmul" else \
            roofline.bandwidth_bytes_per_s
        # the rates a measured time is divided by (Roofline.table_roofline: a sibling device's where its tables
        # stand in; this device's otherwise)
        table = roofline.table_roofline
        self.table_rates = (self.matmul_peak, self.vector_peak, self.bandwidth) if table is roofline else (
            table.matmul_flops_per_s(op.precision), table.vector_flops_per_s(op.precision),
            table.bandwidth_for("matmul" if op.kind == "matmul" else op.kind))
        self.window = float(op.kv_window or math.inf)
        self.collective = bool(op.collective)
        self.measured = measured  # (x, y) -> seconds of one point, or None
        self.measured_arrays = None  # the same of arrays of points (timing.fast_sweep)
        self.depth = float(op.kernel_key[2]) if op.kernel_key and op.kernel_key[0] == "gemm" else 0.0
        # the row curve's key (precision, layout, K) where the roofline reads one for this op, else None
        self.row_key = (op.precision, op.weight_layout, op.matmul_depth) if rows_read else None
        self.size_precision = None
        self.launch_s = 0.0  # launches x the roofline's launch_s, + host_s (ScalarPlan)
        # an "engine.step" op's host work per run (Roofline.step_host_s; 0 for every other op)
        self.host_s = roofline.step_host_s if op.kind == "host" else 0.0
        self.steady: Any = None  # (values of one run, runs) -> ScalarPlan._steady's totals (ScalarPlan)


def _plain_steady(p: _OpPlan, dispatch_s: float = 0.0) -> Any:
    """ScalarPlan._steady of a plain op (timed by a measured table or the roofline alone: no row or size curve,
    no collective) where Roofline.time is max(compute, memory) + launches x launch_s (a GPU engine's case), or
    the larger of that and launches x dispatch_s (an uncaptured prefill on a GPU: dispatch_s > 0), as a function
    (values of one run, runs) -> totals: the same arithmetic in the same order, the op's rates bound once (about
    30 ops per simulate() call)."""
    matmul_peak, vector_peak, bandwidth, launch_s = p.matmul_peak, p.vector_peak, p.bandwidth, p.launch_s
    host_s = p.launches * dispatch_s  # the op's host dispatch (0: none)
    measured = p.measured  # (x, y) -> seconds, or None
    read_x = getattr(measured, "of_x", None)  # the same of x alone (a GEMM's table at M: TableRead.fixed_at)
    table_rates = p.table_rates
    sibling = table_rates != (matmul_peak, vector_peak, bandwidth)

    def steady(v: tuple[Any, ...], runs: float) -> tuple[float, ...]:
        mf, vf, by = float(v[0]), float(v[1]), float(v[2] + v[3])
        compute_s = mf / matmul_peak + vf / vector_peak
        memory_s = by / bandwidth
        if measured is not None:  # both terms x measured / roofline kernel time (ScalarPlan._measured_scale)
            if sibling:  # the tables' own device's roofline (Roofline.table_roofline)
                table_c, table_m = mf / table_rates[0] + vf / table_rates[1], by / table_rates[2]
                kernel_s = table_c if table_c >= table_m else table_m
            else:
                kernel_s = compute_s if compute_s >= memory_s else memory_s
            x = 1.0 if v[8] is None else float(v[8])
            measured_s = read_x(x) if read_x is not None else measured(x, 1.0 if v[9] is None else float(v[9]))
            scale = measured_s / (kernel_s if kernel_s > 1e-300 else 1e-300)
            compute_s, memory_s = compute_s * scale, memory_s * scale
        if compute_s >= memory_s:
            kernel_s = compute_part = compute_s
        else:
            kernel_s, compute_part = memory_s, 0.0
        time_s = kernel_s + launch_s
        if host_s and host_s > time_s:  # the GPU waits for the host (Roofline.time's max)
            time_s = host_s
        return (runs * time_s, runs * compute_part, runs * (kernel_s - compute_part), runs * (time_s - kernel_s),
                0.0, runs * mf, runs * vf, runs * by)

    return steady



class ScalarPhase:
    """One phase's compiled formula program and per-op plans."""

    def __init__(self, run: Any, ops: list[_OpPlan], fixed: Any, run_varying: Any = None) -> None:
        self.run, self.ops, self.fixed = run, ops, fixed  # fixed: the ops' OpFields (names, kinds, counts)
        self.varying = frozenset(fixed.varying)
        self.run_varying = run_varying or run  # run's tuples of the varying ops alone (decode's second run)
        self.any_collective = any(fixed.collectives)
        # the phase's per-kernel launch and host dispatch (Roofline.for_prefill: a prefill run without a graph)
        self.launch_s, self.dispatch_s = 0.0, 0.0
        self.steady_captured: list[tuple[Any, float]] = []  # prefill: steady as a replayed graph runs it
        self.steady: list[tuple[Any, float]] = []  # per op (its steady function, its count): ScalarPlan


class ScalarPlan:
    """Prefill and decode of one (model, device, cost options, execution options), one workload at a time."""

    def __init__(self, roofline: Roofline, prefill: ScalarPhase, decode: ScalarPhase) -> None:
        self.roofline, self.prefill, self.decode = roofline, prefill, decode
        self.overlap_max = roofline.execution.overlap == "max"
        self.launch_s, self.dispatch_s, self.async_host = roofline.launch_s, roofline.dispatch_s, roofline.async_host
        # Roofline.time is max(compute, memory) + launches x launch_s: _steady's written-out case
        self.plain_time = self.overlap_max and self.dispatch_s == 0
        self.prefill_uncaptured = roofline.for_prefill() is not roofline
        if self.prefill_uncaptured:  # a prefill within prefill_graph_tokens: timed as decode's replayed graph
            for p in prefill.ops:
                p.launch_s = p.launches * self.launch_s + p.host_s if p.host_s else p.launches * self.launch_s
            prefill.steady_captured = [(_plain_steady(p) if p.plain and self.plain_time else
                                        self._general_steady(p, None), p.count) for p in prefill.ops]
        for phase, phase_roofline in ((prefill, roofline.for_prefill()), (decode, roofline)):
            phase.launch_s, phase.dispatch_s = phase_roofline.launch_s, phase_roofline.dispatch_s
            # written out where Roofline.time is max(compute, memory) + launches (and, on a GPU, its max with the
            # phase's host dispatch)
            plain = self.overlap_max and (phase.dispatch_s == 0 or self.async_host)
            for p in phase.ops:
                p.launch_s = p.launches * phase.launch_s + p.host_s if p.host_s else p.launches * phase.launch_s
                p.steady = _plain_steady(p, phase.dispatch_s) if p.plain and plain else self._general_steady(p, phase)
            phase.steady = [(p.steady, p.count) for p in phase.ops]

    @classmethod
    def make(cls, model: ModelSpec, hardware: HardwareSpec, cost: CostOptions, execution: ExecutionOptions
             ) -> ScalarPlan | None:
        roofline = Roofline(hardware, execution)
        phases = []
        for phase in ("prefill", "decode"):
            template = graph_template(model, phase, cost)
            if template is None:
                return None
            run = template.__dict__.get("_fast_run")
            if run is None:  # compiled once per template (templates are cached per model, phase and options)
                run = template._fast_run = _compile(template)
            phases.append(cls._phase(roofline, template, run, phase))
        return cls(roofline, *phases)

    @staticmethod
    def _phase(roofline: Roofline, template: Any, run: Any, phase: str) -> ScalarPhase:
        ops = template.ops
        fixed = _template_fields(template, phase)
        run_varying = None
        if phase == "decode":  # decode_totals' second run: the ops whose values vary along the steps
            run_varying = template.__dict__.get("_fast_run_varying")
            if run_varying is None:
                run_varying = template._fast_run_varying = _compile(template, frozenset(fixed.varying))
        peak = roofline.execution.efficiency == "peak"
        hw = roofline.hardware
        plans = []
        for op in ops:
            rows_read = (not peak and op.kind == "matmul" and "matmul_rows" in op.formulas
                         and roofline._row_fraction((op.precision, op.weight_layout, op.matmul_depth), 1.0) is not None)
            plan = _OpPlan(op, roofline, rows_read, None)
            if roofline.measured is not None and op.kernel_key is not None:
                time_at = roofline.measured.lookup(group_key(op.kernel_key))[0]
                plan.measured = _table_read(time_at, template, len(plans), plan.depth)
                plan.measured_arrays = _table_read(time_at, template, len(plans), plan.depth, arrays=True)
            if (not peak and op.kind in ELEMENTWISE_KINDS
                    and hw.elementwise_bandwidth_fraction(op.precision, 1.0) is not None):
                plan.size_precision = op.precision
            # timed by the measured table or the roofline alone: no row or size curve, no collective
            plan.plain = plan.row_key is None and plan.size_precision is None and not plan.collective
            plans.append(plan)
        return ScalarPhase(run, plans, fixed, run_varying)

    # ---- one run of an op ---------------------------------------------------------------------------
    def _scales(self, p: _OpPlan, mf: float, vf: float, by: float, rows: Any, cols: Any, x: Any, y: Any,
                size: float) -> tuple[float, float]:
        """(compute scale, memory scale) of an op as Roofline.costs gives them: its measured time over its
        roofline time where a table covers it, else 1 / its row curve's fraction; the memory scale times
        1 / the element-wise size curve's fraction. x, y: where the table is read (None: no table)."""
        scale = 1.0
        hw = self.roofline.hardware
        if p.row_key is not None:
            key = p.row_key
            scale = 1.0 / hw.matmul_row_fraction(key[0], 1.0 if rows is None else rows,
                                                 1.0 if cols is None else cols, key[1], key[2])
        if p.measured is not None:
            scale = self._measured_scale(p, mf, vf, by, x, y)
        size_scale = 1.0
        if p.size_precision is not None:
            size_scale = 1.0 / hw.elementwise_bandwidth_fraction(p.size_precision, size)
        return scale, scale * size_scale

    def _measured_scale(self, p: _OpPlan, mf: float, vf: float, by: float, x: Any, y: Any) -> float:
        """Roofline.measured_scale of one op: its table's time over its roofline kernel time (on the tables' own
        device: _OpPlan.table_rates)."""
        matmul_peak, vector_peak, bandwidth = p.table_rates
        compute_s = mf / matmul_peak + vf / vector_peak
        memory_s = by / bandwidth
        kernel_s = max(compute_s, memory_s)  # the bounding term under either overlap (Roofline.measured_scale)
        return p.measured(1.0 if x is None else float(x), 1.0 if y is None else float(y)) / max(kernel_s, 1e-300)

    def _time(self, compute_s: float, memory_s: float, launches: float, comm_s: float, host_s: float = 0.0,
              phase: ScalarPhase | None = None) -> tuple[float, ...]:
        """Roofline.time: (time, compute part, memory part, overhead part) of one run (host_s: an engine step's
        host work, added to its launches; phase: whose launch and dispatch apply, the decode's by default)."""
        launch_each, dispatch_each = (self.launch_s, self.dispatch_s) if phase is None else (
            phase.launch_s, phase.dispatch_s)
        if self.overlap_max:
            kernel_s = compute_s if compute_s >= memory_s else memory_s
            compute_part = kernel_s if compute_s >= memory_s else 0.0
            memory_part = kernel_s - compute_part
        else:
            kernel_s = compute_s + memory_s
            compute_part, memory_part = compute_s, memory_s
        busy_s = kernel_s + comm_s if comm_s else kernel_s
        launch_s = launches * launch_each + host_s if host_s else launches * launch_each
        if dispatch_each == 0:
            time_s = busy_s + launch_s
        elif self.async_host:
            time_s = max(busy_s + launch_s, launches * dispatch_each)
        else:
            time_s = busy_s + launch_s + launches * dispatch_each
        return time_s, compute_part, memory_part, time_s - busy_s

    # ---- phases -----------------------------------------------------------------------------------------
    def prefill_totals(self, B: int, P: int) -> tuple[list[tuple[float, ...]], tuple[tuple[Any, ...], ...]]:
        """Per op (time, compute, memory, overhead, communication, matmul_flops, vector_flops, bytes) over the
        prefill, and the per-run values (for the footprint)."""
        values = self.prefill.run(B, P, 0)
        # runs = count x 1 step = count
        totals = [steady(v, count) for (steady, count), v in zip(self.prefill_steady(B, P), values)]
        sustained = self.roofline.sustained
        if sustained is not None and totals:
            # phases._sustained: each op's compute part stretched by the pass's sustained_scale
            scale = sustained_scale(sum(t[1] for t in totals), *sustained)
            if scale != 1.0:
                totals = [(*throttled_parts(t[0], t[1], scale), *t[2:]) for t in totals]
        if self.prefill_uncaptured and totals and not self.roofline.prefill_captured(B * P):
            # phases._host_dispatch: the pass's host dispatch beyond its kernels, spread over the ops
            uncaptured = self.roofline.for_prefill()
            times, overheads = with_host_dispatch(
                [t[0] for t in totals], [t[3] for t in totals],
                [float(p.count) * float(p.launches) for p in self.prefill.ops], uncaptured.pass_dispatch_s,
                uncaptured.async_host, True, [p.op.kind == "host" for p in self.prefill.ops])
            totals = [(time_s, t[1], t[2], overhead_s, *t[4:]) for t, time_s, overhead_s in zip(totals, times,
                                                                                               overheads)]
        return totals, values

    def decode_totals(self, B: int, P: int, G: int) -> list[tuple[float, ...]]:
        """The same over the G - 1 decode steps (decode_totals' exact sums)."""
        phase = self.decode
        L0 = float(P)
        steps = float(G - 1)
        first, second = phase.run(B, 1, L0), phase.run_varying(B, 1, L0 + 1.0)
        varying = phase.varying
        out = []
        for i, ((steady, count), v0, v1) in enumerate(zip(phase.steady, first, second)):
            if i in varying:
                out.append(self._trapezoid(phase.ops[i], v0, v1, L0, steps))
            else:
                out.append(steady(v0, count * steps))
        return out

    def _general_steady(self, p: _OpPlan, phase: ScalarPhase | None) -> Any:
        """_steady of one op of `phase` as a function (values of one run, runs) -> totals (None: of a prefill
        replaying graphs, as decode's launches time it)."""
        if phase is None:
            collective = self.prefill.any_collective
            return lambda v, runs: self._steady(p, v, runs, collective, None)
        return lambda v, runs: self._steady(p, v, runs, phase.any_collective, phase)

    def prefill_steady(self, B: Any, P: Any) -> list[tuple[Any, float]]:
        """The prefill's per-op steady functions for a pass of B x P tokens: replayed or uncaptured."""
        prefill = self.prefill
        if self.prefill_uncaptured and self.roofline.prefill_captured(B * P):
            return prefill.steady_captured
        return prefill.steady

    def _steady(self, p: _OpPlan, v: tuple[Any, ...], runs: float, collective_chunk: bool,
                phase: ScalarPhase | None = None) -> tuple[float, ...]:
        """op_totals.steady_totals of one op: `runs` (count x steps) x one run (_plain_steady: the common case
        of a GPU engine, written out)."""
        mf, vf, by = float(v[0]), float(v[1]), float(v[2] + v[3])
        comm_s = 0.0
        if p.collective:
            comm_s = float(self.roofline.collective_s(p.op.collective, v[5], p.op.group_size))
        compute_s = mf / p.matmul_peak + vf / p.vector_peak
        memory_s = by / p.bandwidth
        scale, memory_scale = self._scales(p, mf, vf, by, v[6], v[7], v[8], v[9], by / max(p.launches, 1.0))
        t = self._time(compute_s * scale, memory_s * memory_scale, p.launches, comm_s, p.host_s, phase)
        comm_total = runs * comm_s if collective_chunk else 0.0
        return (runs * t[0], runs * t[1], runs * t[2], runs * t[3], comm_total, runs * mf, runs * vf, runs * by)

    def _trapezoid(self, p: _OpPlan, v0: tuple[Any, ...], v1: tuple[Any, ...], L0: float, steps: float
                   ) -> tuple[float, ...]:
        """decode_sum.trapezoid_totals of one op: its affine pieces over the steps, each summed exactly."""
        q0 = a0, a1, a2 = float(v0[0]), float(v0[1]), float(v0[2] + v0[3])  # FLOPs and bytes at the first step
        q1 = float(v1[0]), float(v1[1]), float(v1[2] + v1[3])  # ... at the second
        s0, s1, s2 = q1[0] - a0, q1[1] - a1, q1[2] - a2  # per step
        clamp = (p.window - 1) - L0
        x = y = None
        mid = q0
        if p.measured is not None:  # the quantities and table coordinates at the steps' mean clamped offset
            u = mean_clamped_offset(float(steps), float(clamp))
            mid = (a0 + s0 * u, a1 + s1 * u, a2 + s2 * u)
            x = None if v0[8] is None else float(v0[8]) + (float(v1[8]) - float(v0[8])) * u
            y = None if v0[9] is None else float(v0[9]) + (float(v1[9]) - float(v0[9])) * u
        scale, memory_scale = self._scales(p, *mid, v0[6], v0[7], x, y, a2)
        c0 = (a0 / p.matmul_peak + a1 / p.vector_peak) * scale
        m0 = a2 / p.bandwidth * memory_scale
        cs = (q1[0] / p.matmul_peak + q1[1] / p.vector_peak) * scale - c0
        ms = q1[2] / p.bandwidth * memory_scale - m0
        launches = p.launches
        last = steps - 1.0
        inner = sorted([min(max(float(math.floor(c)) if math.isfinite(c) else 1e300, -1.0), last)
                        for c in (clamp, *self._crossings(c0, cs, m0, ms, launches))])
        bounds = [-1.0, *inner, last]
        t_sum = c_sum = m_sum = o_sum = f_sum = v_sum = b_sum = 0.0
        time = self._plain_time(launches) if self.plain_time else self._time
        for k in range(len(bounds) - 1):
            lo, hi = bounds[k] + 1.0, bounds[k + 1]
            n = max(hi - lo + 1.0, 0.0)
            hi = max(hi, lo)
            u, w = min(lo, clamp), min(hi, clamp)  # the segment's first and last offset, clamped
            t_u, c_u, m_u, o_u = time(c0 + cs * u, m0 + ms * u, launches, 0.0)
            t_w, c_w, m_w, o_w = time(c0 + cs * w, m0 + ms * w, launches, 0.0)
            # the trapezoid rule on each affine piece: n * (first + last) / 2, summed over the segments
            t_sum += n * (t_u + t_w) / 2.0
            c_sum += n * (c_u + c_w) / 2.0
            m_sum += n * (m_u + m_w) / 2.0
            o_sum += n * (o_u + o_w) / 2.0
            f_sum += n * ((a0 + s0 * u) + (a0 + s0 * w)) / 2.0
            v_sum += n * ((a1 + s1 * u) + (a1 + s1 * w)) / 2.0
            b_sum += n * ((a2 + s2 * u) + (a2 + s2 * w)) / 2.0
        count = p.count
        return (count * t_sum, count * c_sum, count * m_sum, count * o_sum, 0.0, count * f_sum, count * v_sum,
                count * b_sum)

    def _plain_time(self, launches: float) -> Any:
        """_time(compute_s, memory_s, launches, 0.0) where Roofline.time is max(compute, memory) + launches x
        launch_s (plain_time), written out: the same arithmetic."""
        launch_s = launches * self.launch_s

        def time(compute_s: float, memory_s: float, _launches: float, _comm_s: float) -> tuple[float, ...]:
            if compute_s >= memory_s:
                time_s = compute_s + launch_s
                return time_s, compute_s, compute_s - compute_s, time_s - compute_s
            time_s = memory_s + launch_s
            return time_s, 0.0, memory_s - 0.0, time_s - memory_s

        return time

    def _crossings(self, c0: float, cs: float, m0: float, ms: float, launches: float) -> list[float]:
        """Roofline.crossings of one op, in Python floats."""
        pairs = crossing_pairs(c0, cs, m0, ms, launches, self.launch_s, self.dispatch_s, self.async_host,
                               self.overlap_max)
        return [-diff0 / slope if slope != 0 else math.inf for diff0, slope in pairs]
