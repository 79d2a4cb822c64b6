"""The ops of a phase at one workload, as the phase totals read them.

Two halves: what no workload changes (OpFields: names, kinds, counts, windows, and which ops vary with
kv_len; made once per graph template), and what the workload sets (the per-run values of each op's
formulas, by formula name: one list entry per op, a number or an array over the sweep). PhaseGraph
holds both for one phase at one workload; `quantities` and `matmul_rows_cols` gather a chunk of its ops'
values into stacks along a leading op axis.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ..cost.graph import build_ops_unchecked, graph_template
from ..cost.op import Op
from ..cost.workload import CostOptions
from ..models.spec import ModelSpec
from .roofline import OpColumns, Roofline
from .stacking import lift_shape, stack_ops


@dataclass(frozen=True)
class OpFields:
    """The fields of a graph's ops that no workload changes, one entry per op; any subset of them as a
    chunk evaluated together, made once (`chunk`)."""

    ops: list[Op]
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    counts: tuple[int, ...]
    windows: tuple[float, ...]  # kv_window, inf without
    collectives: tuple[bool, ...]
    # decode: the ops whose quantities change with kv_len (their values carry the pair axis); steady: the others
    varying: tuple[int, ...]
    steady: tuple[int, ...]
    _chunks: dict[tuple[int, ...], Chunk] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, ops: list[Op], varying: tuple[int, ...] = ()) -> OpFields:
        return cls(ops, tuple(op.name for op in ops), tuple(op.kind for op in ops), tuple(op.count for op in ops),
                   tuple(op.kv_window or np.inf for op in ops), tuple(bool(op.collective) for op in ops), varying,
                   tuple(i for i in range(len(ops)) if i not in varying))

    def chunk(self, indices: list[int]) -> Chunk:
        """The ops of `indices` as one chunk (made once)."""
        key = tuple(indices)
        if key not in self._chunks:
            self._chunks[key] = Chunk(OpColumns.of([self.ops[i] for i in indices]),
                                      np.array([self.counts[i] for i in indices], dtype=float),
                                      np.array([self.windows[i] for i in indices], dtype=float),
                                      any(self.collectives[i] for i in indices))
        return self._chunks[key]


@dataclass(frozen=True)
class Chunk:
    """Ops evaluated together along an op axis: their roofline columns, counts and windows (inf without)."""

    columns: OpColumns
    counts: np.ndarray  # shape: [op]
    windows: np.ndarray  # shape: [op]
    collective: bool  # whether any of them is a collective

    def lifted(self, values: np.ndarray, ndim: int) -> np.ndarray:
        """Per-op numbers broadcasting over `ndim` workload axes."""
        # shape: [op] -> [op, 1 x ndim]
        return values.reshape(lift_shape(len(values), ndim))


@lru_cache(maxsize=256)
def _template_fields(template: Any, phase: str) -> OpFields:
    """OpFields of a graph template's ops (made once per template); decode's varying ops found from
    the shapes of the values at a kv_len pair (as decode_totals evaluates them)."""
    varying: tuple[int, ...] = ()
    if phase == "decode":
        with np.errstate(all="ignore"):
            values = template.values_at(1, 1, np.array([0.0, 1.0]))
        varying = _paired(values)
    return OpFields.of(template.ops, varying)


def _paired(values: dict[str, list[Any]]) -> tuple[int, ...]:
    """The ops with a quantity of a trailing pair axis: those whose values change with kv_len."""
    runs = zip(*_per_run(values, range(len(values["matmul_flops"]))))
    return tuple(i for i, run in enumerate(runs) if any(np.ndim(v) and np.shape(v)[-1] == 2 for v in run))


class PhaseGraph:
    """The ops of a phase at one workload: their per-run quantities (values) and fixed fields, and the
    Ops themselves on demand; from the graph template where there is one (fields made once)."""

    def __init__(self, model: ModelSpec, phase: str, B: Any, S: Any, L: Any, options: CostOptions) -> None:
        template = graph_template(model, phase, options)
        if template is None:
            ops = build_ops_unchecked(model, phase, B, S, L, options)
            self.values = values_of(ops)
            self.fixed = OpFields.of(ops, _paired(self.values) if phase == "decode" else ())
            self.ops: list[Op] | Callable[[], list[Op]] = ops
        else:
            S = S if phase == "prefill" else 1
            self.values = template.values_at(B, S, L)
            self.fixed = _template_fields(template, phase)
            self.ops = lambda: template.ops_at(B, S, L)


def values_of(ops: list[Op]) -> dict[str, list[Any]]:
    """Per formula quantity, its value for each op (None where an op has none)."""
    quantities = dict.fromkeys(quantity for op in ops for quantity in op.formulas)
    return {q: [op.formulas[q].value if q in op.formulas else None for op in ops] for q in quantities}


def _per_run(values: dict[str, list[Any]], indices: Iterable[int]) -> tuple[list[Any], ...]:
    """matmul_flops, vector_flops and bytes (read + written, as Op.bytes) per run of the ops of `indices`."""
    matmul, vector, read, written = ([values[q][i] for i in indices]
                                     for q in ("matmul_flops", "vector_flops", "bytes_read", "bytes_written"))
    return matmul, vector, [r + w for r, w in zip(read, written)]


def quantities(values: dict[str, list[Any]], indices: list[int], ndim: int) -> list[np.ndarray]:
    """matmul_flops, vector_flops and bytes per run of the ops of `indices`, each stacked along a leading
    op axis with `ndim` axes after it."""
    # shape: 3 x [op, *ndim workload axes]
    columns = _per_run(values, indices)
    if len(indices) == 1:  # a large sweep's op by itself (see stacking.op_chunks): no copies
        return [stack_ops(column, ndim) for column in columns]
    block = stack_ops(columns[0] + columns[1] + columns[2], ndim)  # one stack: 3 quantities x ops
    return list(block.reshape((3, len(indices), *block.shape[1:])))


def matmul_rows_cols(roofline: Roofline, graph: PhaseGraph, indices: list[int], columns: OpColumns, ndim: int
                     ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """matmul_rows and matmul_cols of the ops, where the roofline reads them (1.0 for ops without, never
    read)."""
    # shape: 2 x [op, *ndim workload axes], or (None, None)
    if not roofline.reads_rows(columns):
        return None, None
    rows, cols = graph.values["matmul_rows"], graph.values.get("matmul_cols", [None] * len(graph.values["matmul_rows"]))
    return (stack_ops([1.0 if rows[i] is None else rows[i] for i in indices], ndim),
            stack_ops([1.0 if cols[i] is None else cols[i] for i in indices], ndim))


def kernel_coords(roofline: Roofline, graph: PhaseGraph, indices: list[int], columns: OpColumns, ndim: int
                  ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """kernel_x and kernel_y of the ops (the coordinates a measured table is read at; 1.0 for ops without,
    never read), where the roofline has measured tables for some of them; else (None, None)."""
    # shape: 2 x [op, *ndim workload axes], or (None, None)
    if not roofline.measured_groups(columns):
        return None, None
    none = [None] * len(graph.fixed.names)
    xs, ys = graph.values.get("kernel_x", none), graph.values.get("kernel_y", none)
    return (stack_ops([1.0 if xs[i] is None else xs[i] for i in indices], ndim),
            stack_ops([1.0 if ys[i] is None else ys[i] for i in indices], ndim))
