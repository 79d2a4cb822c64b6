"""Tiny symbolic arithmetic: each value remembers the formula that made it.

`Expr` carries a numeric value (a float or a numpy array, so formulas broadcast) and a lazy
expression tree, so an op can print `2*B*S*h*(H*d)` and `2*8*4096*4096*(32*128)` next to its number
without a second copy of the formula that could drift from the one that computed it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


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
        other_expr = other if isinstance(other, Expr) else Expr.const(other)
        left, right = (other_expr, self) if reverse else (self, other_expr)
        if op == "+":
            value = left.value + right.value
        elif op == "-":
            value = left.value - right.value
        elif op == "*":
            value = left.value * right.value
        else:
            value = left.value / right.value
        return Expr(value, ("bin", op, left._node, right._node))

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


def smin(a: Any, b: Any) -> Expr:
    """min(a, b), elementwise, keeping the formula."""
    ea = a if isinstance(a, Expr) else Expr.const(a)
    eb = b if isinstance(b, Expr) else Expr.const(b)
    return Expr(np.minimum(ea.value, eb.value), ("call", "min", ea._node, eb._node))


def scall(name: str, value: Any, *args: Any) -> Expr:
    """A named function of other Exprs whose value the caller computed (e.g. expected experts)."""
    nodes = tuple((a if isinstance(a, Expr) else Expr.const(a))._node for a in args)
    return Expr(value, ("call", name, *nodes))


def value_of(x: Any) -> Any:
    return x.value if isinstance(x, Expr) else x


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


def _render(node: tuple, substitute: bool, parent_op: str = "", right_side: bool = False) -> str:
    kind = node[0]
    if kind == "sym":
        return _format_number(node[2]) if substitute else node[1]
    if kind == "num":
        return _format_number(node[1])
    if kind == "call":
        inner = ", ".join(_render(arg, substitute) for arg in node[2:])
        return f"{node[1]}({inner})"
    op, left, right = node[1], node[2], node[3]
    text = f"{_render(left, substitute, op)}{op}{_render(right, substitute, op, right_side=True)}"
    prec, parent_prec = _PRECEDENCE[op], _PRECEDENCE.get(parent_op, 0)
    needs_paren = prec < parent_prec or (right_side and prec == parent_prec and parent_op in "-/")
    return f"({text})" if needs_paren else text
