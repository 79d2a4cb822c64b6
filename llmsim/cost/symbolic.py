"""Tiny symbolic arithmetic: each value remembers the formula that made it.

`Expr` carries a numeric value (a float or a numpy array, so formulas broadcast) and a lazy
expression tree, so an op can print `2*B*S*h*(H*d)` and `2*8*4096*4096*(32*128)` next to its number
without a second copy of the formula that could drift from the one that computed it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
# what each operator symbol computes: Expr arithmetic and FormulaProgram replays both use this table
_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
}


class Expr:
    """A value with the formula that produced it. Supports + - * / with numbers and other Exprs."""

    __slots__ = ("_node", "value")

    def __init__(self, value: Any, node: tuple) -> None:
        self.value = value
        self._node = node

    # ---- constructors -------------------------------------------------------------------------
    @staticmethod
    def sym(name: str, value: Any) -> Expr:
        """A named symbol such as B (batch size) or h (hidden size)."""
        return Expr(value, ("sym", name, value))

    @staticmethod
    def const(value: float) -> Expr:
        return Expr(value, ("num", value))

    # ---- arithmetic -----------------------------------------------------------------------------
    def _bin(self, op: str, other: Any, reverse: bool = False) -> Expr:
        other_expr = other if isinstance(other, Expr) else Expr(other, ("num", other))
        left, right = (other_expr, self) if reverse else (self, other_expr)
        return Expr(_OPERATORS[op](left.value, right.value), ("bin", op, left._node, right._node))

    def __add__(self, other: Any) -> Expr:
        return self._bin("+", other)

    def __radd__(self, other: Any) -> Expr:
        return self._bin("+", other, reverse=True)

    def __sub__(self, other: Any) -> Expr:
        return self._bin("-", other)

    def __rsub__(self, other: Any) -> Expr:
        return self._bin("-", other, reverse=True)

    def __mul__(self, other: Any) -> Expr:
        return self._bin("*", other)

    def __rmul__(self, other: Any) -> Expr:
        return self._bin("*", other, reverse=True)

    def __truediv__(self, other: Any) -> Expr:
        return self._bin("/", other)

    def __rtruediv__(self, other: Any) -> Expr:
        return self._bin("/", other, reverse=True)

    # ---- rendering ------------------------------------------------------------------------------
    def symbolic(self) -> str:
        """The formula in symbols, e.g. `2*B*S*h*(H*d)`."""
        return _render(self._node, substitute=False)

    def substituted(self) -> str:
        """The same formula with the numbers put in, e.g. `2*8*4096*4096*(32*128)`."""
        return _render(self._node, substitute=True)

    def __repr__(self) -> str:
        return f"Expr({self.symbolic()} = {self.value!r})"


# named functions whose value follows from their arguments alone, so a FormulaProgram can replay them
# (scall's functions are computed by their callers and cannot be replayed)
_FUNCTIONS: dict[str, Callable[[Any, Any], Any]] = {"min": np.minimum, "floordiv": np.floor_divide}


def smin(a: Any, b: Any) -> Expr:
    """min(a, b), elementwise, keeping the formula."""
    ea = a if isinstance(a, Expr) else Expr.const(a)
    eb = b if isinstance(b, Expr) else Expr.const(b)
    return Expr(_FUNCTIONS["min"](ea.value, eb.value), ("call", "min", ea._node, eb._node))


def sfloordiv(a: Any, b: Any) -> Expr:
    """floor(a / b), elementwise, keeping the formula."""
    ea = a if isinstance(a, Expr) else Expr.const(a)
    eb = b if isinstance(b, Expr) else Expr.const(b)
    return Expr(_FUNCTIONS["floordiv"](ea.value, eb.value), ("call", "floordiv", ea._node, eb._node))


def scall(name: str, value: Any, *args: Any) -> Expr:
    """A named function of other Exprs whose value the caller computed (e.g. expected experts)."""
    nodes = tuple((a if isinstance(a, Expr) else Expr.const(a))._node for a in args)
    return Expr(value, ("call", name, *nodes))


def value_of(x: Any) -> Any:
    return x.value if isinstance(x, Expr) else x


class NotReplayableError(Exception):
    """A formula holds a value its tree cannot recompute, so it cannot be replayed."""


class FormulaProgram:
    """The arithmetic of some Exprs, recorded once and replayed for new values of chosen symbols.

    `variables` are symbols (Expr.sym) the formulas were built from, e.g. the workload sizes B, S, L;
    everything else in the formulas (numbers, model sizes) is fixed. `replay(values)` returns the
    same formulas as if they had been built from symbols with those values: each value is computed
    by the same operations on the same operands, in the same order, so it is identical, and each
    formula still renders (`symbolic`, `substituted`) as before, with the new values substituted.
    Replaying is cheaper than rebuilding: the formulas become one list of steps, a subformula that
    several formulas share is computed once, and steps that involve no variable are computed here,
    once. Raises NotReplayableError when a formula holds a value its tree cannot recompute (an
    `scall`, or an already replayed formula).
    """

    def __init__(self, exprs: list[Expr], variables: list[Expr]) -> None:
        self._slots = {id(v._node): i for i, v in enumerate(variables)}  # variable node -> register
        self._registers: list[Any] = [None] * len(variables)  # variables first, then the rest
        self._varies: list[bool] = [True] * len(variables)  # does the register depend on a variable
        self._steps: list[tuple[int, Callable[[Any, Any], Any], int, int]] = []  # (out, fn, a, b)
        self._done: dict[int, tuple[int, tuple]] = {}  # id(node) -> (register, template node)
        self._same_step: dict[tuple[Any, int, int], int] = {}  # (fn, a, b) -> its register
        self._same_number: dict[tuple[type, str], int] = {}  # (type, repr) of an int or float -> its register
        # per Expr: (itself, register, template node); holding the Exprs keeps every node compiled alive,
        # so the node ids in _done stay unique
        self._outputs: list[tuple[Expr, int, tuple]] = []
        for expr in exprs:
            register, template = self._compile(expr._node)
            self._outputs.append((expr, register, template))

    def replay(self, values: tuple[Any, ...]) -> list[Expr]:
        """The formulas (in the order given) with the variables set to `values`."""
        return self.exprs(self.run(values), values)

    def run(self, values: tuple[Any, ...]) -> list[Any]:
        """Every register's value with the variables set to `values`: formula i's value is at
        output_registers[i] (the values replay gives, without making Exprs)."""
        registers = self._registers.copy()
        registers[: len(values)] = values
        for out, fn, a, b in self._steps:
            registers[out] = fn(registers[a], registers[b])
        return registers

    def exprs(self, registers: list[Any], values: tuple[Any, ...], start: int = 0, stop: int | None = None
              ) -> list[Expr]:
        """Formulas start .. stop - 1 of replay(values), from the registers of run(values)."""
        varies = self._varies
        return [Expr(registers[r], ("bound", template, values)) if varies[r] else expr
                for expr, r, template in self._outputs[start:stop]]

    @property
    def output_registers(self) -> list[int]:
        """The register of each formula, in the order given."""
        return [register for _, register, _ in self._outputs]

    # ---- compiling -------------------------------------------------------------------------------
    def _compile(self, node: tuple) -> tuple[int, tuple]:
        """The register holding `node`'s value, and its template node (variables as ("var", name, i))."""
        done = self._done.get(id(node))
        if done is not None:
            return done
        kind = node[0]
        if id(node) in self._slots:
            slot = self._slots[id(node)]
            done = slot, ("var", node[1], slot)
        elif kind in ("sym", "num"):
            done = self._fixed_register(node[-1]), node
        elif kind == "bin" or (kind == "call" and node[1] in _FUNCTIONS and len(node) == 4):
            fn = _OPERATORS[node[1]] if kind == "bin" else _FUNCTIONS[node[1]]
            (a, left), (b, right) = self._compile(node[2]), self._compile(node[3])
            template = node if (left is node[2] and right is node[3]) else (kind, node[1], left, right)
            done = self._step(fn, a, b), template
        else:
            raise NotReplayableError(f"{kind} node {node[1]!r} cannot be recomputed from its arguments")
        self._done[id(node)] = done
        return done

    def _new_register(self, value: Any, varies: bool) -> int:
        self._registers.append(value)
        self._varies.append(varies)
        return len(self._registers) - 1

    def _fixed_register(self, value: Any) -> int:
        """A register holding a fixed value; equal Python numbers share one (repr tells 0.0 from -0.0)."""
        if type(value) not in (int, float):
            return self._new_register(value, varies=False)
        key = (type(value), repr(value))
        if key not in self._same_number:
            self._same_number[key] = self._new_register(value, varies=False)
        return self._same_number[key]

    def _step(self, fn: Callable[[Any, Any], Any], a: int, b: int) -> int:
        """The register of fn(a, b): an earlier identical step's, a fixed value computed now when
        neither operand varies, or a new step."""
        key = (fn, a, b)
        if key not in self._same_step:
            if self._varies[a] or self._varies[b]:
                out = self._new_register(None, varies=True)
                self._steps.append((out, fn, a, b))
            else:
                out = self._fixed_register(fn(self._registers[a], self._registers[b]))
            self._same_step[key] = out
        return self._same_step[key]


def _format_number(value: Any) -> str:
    if isinstance(value, np.ndarray):
        if value.size == 1:
            return _format_number(value.reshape(()).item())
        flat = value.ravel()
        return f"[{_format_number(flat.min().item())}..{_format_number(flat.max().item())}]"
    if isinstance(value, (float, np.floating)) and float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    return str(value)


def _render(node: tuple, substitute: bool, parent_op: str = "", right_side: bool = False,
            bound: tuple = ()) -> str:
    """The text of `node`; `bound` holds the values of the ("var", name, i) nodes of a replayed formula."""
    kind = node[0]
    if kind == "sym":
        return _format_number(node[2]) if substitute else node[1]
    if kind == "num":
        return _format_number(node[1])
    if kind == "var":
        return _format_number(bound[node[2]]) if substitute else node[1]
    if kind == "bound":  # ("bound", template node, variable values): a FormulaProgram replay
        return _render(node[1], substitute, parent_op, right_side, node[2])
    if kind == "call":
        inner = ", ".join(_render(arg, substitute, bound=bound) for arg in node[2:])
        return f"{node[1]}({inner})"
    op, left, right = node[1], node[2], node[3]
    text = f"{_render(left, substitute, op, bound=bound)}{op}{_render(right, substitute, op, True, bound)}"
    prec, parent_prec = _PRECEDENCE[op], _PRECEDENCE.get(parent_op, 0)
    needs_paren = prec < parent_prec or (right_side and prec == parent_prec and parent_op in "-/")
    return f"({text})" if needs_paren else text
