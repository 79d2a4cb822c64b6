"""Graph templates: the graph of one (model, phase, options), built once with its formulas recorded and
replayed for any workload (B, S, L) instead of running the builder again, plus the check that admits
a template only where replaying reproduces a fresh build exactly."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields
from functools import lru_cache
from typing import Any

import numpy as np

from ..models.spec import ModelSpec
from .builder import GraphBuilder
from .op import Op, formula
from .symbolic import Expr, FormulaProgram, NotReplayableError
from .workload import CostOptions


class GraphTemplate:
    """The ops of one (model, phase, options), built once with their formulas recorded, so the ops of
    any workload come from replaying the formulas with its B, S and L (see FormulaProgram) instead of
    running the builder again. Which ops exist, their names, counts and parameters depend only on the
    model, phase and options; only the formula values depend on the workload. An op whose formula
    computes a value outside its Exprs (the builder's recorded calls) is made by calling its formula
    again, with its Expr arguments replayed."""

    def __init__(self, model: ModelSpec, phase: str, options: CostOptions) -> None:
        builder = GraphBuilder(model, phase, 1, 1, 0, options)
        ops = builder.build()
        names = [f.name for f in fields(Op)]
        at = names.index("formulas")
        self._recipes: list[_Replayed | _Called] = []
        exprs: list[Expr] = []  # what the program replays: each recipe's Exprs, in order
        for index, op in enumerate(ops):
            if index in builder.calls:
                kind, name, count, kwargs = builder.calls[index]
                args = tuple(key for key, value in kwargs.items() if isinstance(value, Expr))
                fixed = {key: value for key, value in kwargs.items() if key not in args}
                self._recipes.append(_Called(formula(kind), name, count, args, fixed))
                exprs.extend(kwargs[key] for key in args)
            else:  # Op fields before and after `formulas` (positional: faster than keywords)
                before, after = (tuple(getattr(op, n) for n in part) for part in (names[:at], names[at + 1:]))
                self._recipes.append(_Replayed(before, after, tuple(op.formulas)))
                exprs.extend(op.formulas.values())
        self._program = FormulaProgram(exprs, [builder.B, builder.S, builder.L])
        self.ops = ops  # at B = S = 1, L = 0: every field but the formula values is that of any workload
        self._index_values(ops)

    def ops_at(self, B: Any, S: Any, L: Any) -> list[Op]:
        exprs = iter(self._program.replay((B, S, L)))
        return [recipe.op(exprs) for recipe in self._recipes]

    def values_at(self, B: Any, S: Any, L: Any) -> dict[str, list[Any]]:
        """Per quantity (matmul_flops, bytes_read, ...), its formula's value for each op of ops_at(B, S, L),
        None where an op has no such formula; without making the Ops and Exprs."""
        workload = (B, S, L)
        registers = self._program.run(workload)
        registers.append(None)  # register -1: the value of a formula an op does not have
        values = {quantity: [registers[r] for r in column] for quantity, column in self._value_registers.items()}
        for index, recipe, start, stop in self._called:
            for quantity, value in self._called_values(recipe, registers, workload, start, stop).items():
                values[quantity][index] = value
        return values

    def _called_values(self, recipe: _Called, registers: list[Any], workload: tuple[Any, ...], start: int,
                       stop: int) -> dict[str, Any]:
        """The formula values of a called op (None for quantities it has not). Remembered per argument values
        when they are all numbers (a pure function of them: e.g. decode's experts depend on the batch alone)."""
        args = self._program.exprs(registers, workload, start, stop)
        numbers = all(type(a.value) in (int, float) for a in args)
        key = (id(recipe), *((type(a.value), a.value) for a in args)) if numbers else None
        if key in self._called_cache:
            return self._called_cache[key]
        op = recipe.op(iter(args))
        found = {quantity: op.formulas[quantity].value if quantity in op.formulas else None
                 for quantity in self._value_registers}
        if numbers:
            if len(self._called_cache) >= 1024:  # bounded: forget all
                self._called_cache.clear()
            self._called_cache[key] = found
        return found

    def _index_values(self, ops: list[Op]) -> None:
        """Where values_at finds each value: per quantity, the register of each replayed op's formula (-1
        for none); the called ops with their arguments' place among the program's formulas."""
        outputs = self._program.output_registers
        self._value_registers = {quantity: [-1] * len(ops) for op in ops for quantity in op.formulas}
        self._called: list[tuple[int, _Called, int, int]] = []
        self._called_cache: dict[tuple, dict[str, Any]] = {}
        start = 0
        for index, recipe in enumerate(self._recipes):
            names = recipe.args if isinstance(recipe, _Called) else recipe.quantities
            if isinstance(recipe, _Called):
                self._called.append((index, recipe, start, start + len(names)))
            else:
                for quantity, register in zip(names, outputs[start:]):
                    self._value_registers[quantity][index] = register
            start += len(names)


class _Replayed:
    """An op whose formulas are replayed: the Op with new formula values, all else as built."""

    def __init__(self, before: tuple, after: tuple, quantities: tuple[str, ...]) -> None:
        self.before, self.after, self.quantities = before, after, quantities

    def op(self, exprs: Iterator[Expr]) -> Op:
        # zip stops at the end of `quantities` without taking more from `exprs`: the op takes its own
        return Op(*self.before, dict(zip(self.quantities, exprs)), *self.after)


class _Called:
    """An op made by calling its formula again, with its Expr arguments replayed."""

    def __init__(self, make: Callable[..., Op], name: str, count: int, args: tuple[str, ...],
                 fixed: dict[str, Any]) -> None:
        self.make, self.name, self.count, self.args, self.fixed = make, name, count, args, fixed

    def op(self, exprs: Iterator[Expr]) -> Op:
        return self.make(self.name, self.count, **dict(zip(self.args, exprs)), **self.fixed)


# workloads at which a new template must reproduce a fresh build exactly before it is used: scalars
# (values and formula texts compared) and broadcasting arrays of both dtypes (values compared)
_CHECK_WORKLOADS = (
    (3, 5, 7),
    (np.array([[2], [9]]), np.array([1, 4, 33]), np.array([6.0, 100.0, 4096.0])),
)


@lru_cache(maxsize=256)
def cached_template(model: ModelSpec, phase: str, options: CostOptions) -> GraphTemplate | None:
    """The graph template of (model, phase, options), or None where the builder must run each time.

    Cached: a template depends only on these three, all frozen (hashable) pydantic models or strings.
    None when a formula holds a value its tree cannot recompute (an scall) outside the builder's
    recorded calls, or when replaying does not reproduce a fresh build (every Op field; values with
    their types, dtypes and shapes; formula texts) at the check workloads, e.g. if a formula computed
    something outside its Exprs.
    """
    with np.errstate(all="ignore"):  # internal builds at made-up workloads: no warnings of their own
        try:
            template = GraphTemplate(model, phase, options)
        except NotReplayableError:
            return None
        for i, (B, S, L) in enumerate(_CHECK_WORKLOADS):
            built = GraphBuilder(model, phase, B, S, L, options).build()
            if not _same_ops(template.ops_at(B, S, L), built, texts=i == 0):
                return None
    return template


def _same_ops(replayed: list[Op], built: list[Op], texts: bool) -> bool:
    if len(replayed) != len(built):
        return False
    for a, b in zip(replayed, built):
        if any(getattr(a, f.name) != getattr(b, f.name) for f in fields(a) if f.name != "formulas"):
            return False
        if list(a.formulas) != list(b.formulas):
            return False
        for x, y in zip(a.formulas.values(), b.formulas.values()):
            if not _same_value(x.value, y.value):
                return False
            if texts and (x.symbolic() != y.symbolic() or x.substituted() != y.substituted()):
                return False
    return True


def _same_value(x: Any, y: Any) -> bool:
    if type(x) is not type(y) or np.shape(x) != np.shape(y) or np.asarray(x).dtype != np.asarray(y).dtype:
        return False
    return bool(np.array_equal(x, y, equal_nan=True))
