"""Op: one kernel of one layer type; the registry that finds each formula by its op kind name; the
small helpers the formulas share (make_op, ZERO, value_scalar).

The formulas themselves live in `cost.formulas`, one module per family, and register on import;
`llmsim.cost` imports that package, so the registry is full whenever this module can be reached.
Values are per run of the kernel; `count` says how many times it runs in a forward pass. Quantities
are `Expr`s, so every number can print the formula that made it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .symbolic import Expr

OpKind = Literal["matmul", "attention", "norm", "elementwise", "embedding", "routing", "cache", "communication"]
OP_KINDS: tuple[str, ...] = (
    "matmul", "attention", "norm", "elementwise", "embedding", "routing", "cache", "communication",
)
QUANTITIES = ("matmul_flops", "vector_flops", "bytes_read", "bytes_written")

ZERO = Expr.const(0)


@dataclass(frozen=True, slots=True)
class Op:
    """One kernel: per-run FLOPs and bytes, run `count` times per forward pass."""

    name: str
    kind: str
    count: int
    formulas: dict[str, Expr]
    param_count: int = 0
    param_bytes: float = 0.0
    precision: str = "bf16"
    launches: int = 1
    kv_window: int | None = None
    collective: str | None = None
    group_size: int = 1
    weight_layout: str = "out_in"  # matmuls: W[N, K] as nn.Linear ("out_in") or W[K, N] ("in_out")
    matmul_depth: int = 0  # matmuls with weights: the inner dimension K (0: not stated)
    # the measured kernel this op is (timing.measured), its workload coordinates in formulas kernel_x/kernel_y
    kernel_key: tuple | None = None

    @property
    def matmul_flops(self) -> Any:
        return self.formulas["matmul_flops"].value

    @property
    def vector_flops(self) -> Any:
        return self.formulas["vector_flops"].value

    @property
    def bytes_read(self) -> Any:
        return self.formulas["bytes_read"].value

    @property
    def bytes_written(self) -> Any:
        return self.formulas["bytes_written"].value

    @property
    def weight_bytes(self) -> Any:
        """The part of bytes_read that is weights (for MoE experts: the experts the batch touches)."""
        return self.formulas["weight_bytes"].value

    @property
    def matmul_rows(self) -> Any:
        """Rows M of the matrix product x[M, K] @ W[K, N] one weight matrix sees (None for non-matmuls):
        decode's thin shapes (small M) reach less of the roofline on some devices (hardware matmul_rows)."""
        expr = self.formulas.get("matmul_rows")
        return None if expr is None else expr.value

    @property
    def matmul_cols(self) -> Any:
        """Output columns N of that product (None for non-matmuls): wide outputs (an LM head) reach less
        of the roofline than square ones on some devices (hardware matmul_rows tables with cols)."""
        expr = self.formulas.get("matmul_cols")
        return None if expr is None else expr.value

    @property
    def comm_bytes(self) -> Any:
        """Message bytes of a collective (0 for every other op)."""
        return self.formulas["comm_bytes"].value

    @property
    def flops(self) -> Any:
        return self.matmul_flops + self.vector_flops

    @property
    def bytes(self) -> Any:
        return self.bytes_read + self.bytes_written

    @property
    def arithmetic_intensity(self) -> Any:
        """FLOPs per byte of memory traffic (inf for an op that moves no bytes)."""
        total_bytes = np.asarray(self.bytes, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(total_bytes > 0, np.asarray(self.flops, dtype=float) / total_bytes, np.inf)

    def formula(self, quantity: str = "matmul_flops") -> str:
        """`quantity = symbols = numbers = value`, e.g. `matmul_flops = 2*T*K*N = 2*8*4096*4096 = ...`
        (a repeated part once: `matmul_flops = 0`)."""
        from ..errors import check_choice

        expr = self.formulas[check_choice("quantity", quantity, self.formulas)]
        value = expr.value
        shown = f"{float(value):.6g}" if np.ndim(value) == 0 else f"array of shape {np.shape(value)}"
        parts = [quantity]
        for part in (expr.symbolic(), expr.substituted(), shown):
            if part != parts[-1]:
                parts.append(part)
        return " = ".join(parts)

    def scaled(self, **changes: Any) -> Op:
        """A copy with some fields replaced (dataclass replace)."""
        from dataclasses import replace

        return replace(self, **changes)


OpFormula = Callable[..., Op]
_REGISTRY: dict[str, OpFormula] = {}


def register(kind_name: str) -> Callable[[OpFormula], OpFormula]:
    """Register a formula under `kind_name`; a second registration of the same name is an error."""

    def wrap(fn: OpFormula) -> OpFormula:
        if kind_name in _REGISTRY:
            raise ValueError(f"op formula {kind_name!r} is already registered")
        _REGISTRY[kind_name] = fn
        return fn

    return wrap


def formula(kind_name: str) -> OpFormula:
    """The registered formula of that name."""
    return _REGISTRY[kind_name]


def registered_formulas() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def make_op(name: str, kind: str, count: int, *, matmul_flops: Expr = ZERO, vector_flops: Expr = ZERO,
            bytes_read: Expr = ZERO, bytes_written: Expr = ZERO, weight_bytes: Expr = ZERO,
            comm_bytes: Expr = ZERO, matmul_rows: Expr | None = None, matmul_cols: Expr | None = None,
            kernel_x: Expr | None = None, kernel_y: Expr | None = None, **extra: Any) -> Op:
    """An Op with the six formulas every op has (zero unless given) and, for matmuls, rows and cols."""
    formulas = {
        "matmul_flops": matmul_flops,
        "vector_flops": vector_flops,
        "bytes_read": bytes_read,
        "bytes_written": bytes_written,
        "weight_bytes": weight_bytes,
        "comm_bytes": comm_bytes,
    }
    if matmul_rows is not None:
        formulas["matmul_rows"] = matmul_rows
    if matmul_cols is not None:
        formulas["matmul_cols"] = matmul_cols
    if extra.get("kernel_key") is not None:  # the coordinates a measured table is read at
        formulas["kernel_x"] = kernel_x
        if kernel_y is not None:
            formulas["kernel_y"] = kernel_y
    return Op(name=name, kind=kind, count=count, formulas=formulas, **extra)


def value_scalar(x: Expr | float) -> float:
    """The scalar value of a model-size symbol (sizes never vary across a sweep)."""
    value = x.value if isinstance(x, Expr) else x
    return float(np.asarray(value).reshape(-1)[0]) if np.ndim(value) else float(value)
