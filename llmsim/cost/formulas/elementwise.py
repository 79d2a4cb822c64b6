"""Element-wise kernels: norm, eager_rmsnorm (transformers' op-by-op RMSNorm), elementwise (any function
of same-shaped tensors), cast (a copy into another dtype) and embedding (a table lookup)."""

from __future__ import annotations

from ..op import ZERO, Op, make_op, register, value_scalar
from ..symbolic import Expr


@register("norm")
def norm(name: str, count: int, *, T: Expr, n: Expr, ab: Expr, kind: str, params_per_norm: int,
         norms: int = 1) -> Op:
    """y[T, n] = norm(x[T, n]) * w (+ b): RMSNorm 4 or LayerNorm 7 vector FLOPs per element."""
    per_element = 7 if kind == "layernorm" else 4
    return make_op(
        name, "norm", count,
        vector_flops=per_element * T * n,
        bytes_read=T * n * ab,
        bytes_written=T * n * ab,
        param_count=params_per_norm * norms, param_bytes=params_per_norm * norms * float(value_scalar(ab)),
    )


@register("eager_rmsnorm")
def eager_rmsnorm(name: str, count: int, *, T: Expr, n: Expr, ab: Expr, params_per_norm: int, norms: int = 1) -> Op:
    """y[T, n] = w * (x.float() * rsqrt(x.float().pow(2).mean(-1) + eps)).to(dtype), as transformers'
    eager RMSNorm runs it: one kernel per PyTorch op, float32 intermediates. Bytes read / written per
    element, with a the activation bytes (the two casts only when a != 4):
        to(float32) a / 4 | pow 4 / 4 | mean 4 / - | x * rsqrt 4 / 4 | to(dtype) 4 / a | w * x a / a
    (the eps add and rsqrt run on [T, 1]: launches only).
    approximation: Gemma's (1 + w) variant, which multiplies in float32 before one cast, counts the same.
    """
    cast = float(value_scalar(ab)) != 4.0
    elements = T * n
    return make_op(
        name, "norm", count,
        vector_flops=4 * elements,
        bytes_read=elements * (12 + ab + (ab + 4 if cast else 0)),
        bytes_written=elements * (8 + ab + (4 + ab if cast else 0)),
        param_count=params_per_norm * norms, param_bytes=params_per_norm * norms * float(value_scalar(ab)),
        launches=8 if cast else 6,
    )


@register("elementwise")
def elementwise(name: str, count: int, *, elements: Expr, inputs: float, outputs: float, flops_per_element: int,
                ab: Expr, kind: str = "elementwise", params: int = 0, kv_window: int | None = None,
                launches: int = 1) -> Op:
    """out[elements] = f(in_1[elements], ..., in_inputs[elements]); `outputs` tensors written (over all
    `launches` kernels when one op stands for a sequence of them)."""
    return make_op(
        name, kind, count,
        vector_flops=flops_per_element * elements,
        bytes_read=inputs * elements * ab,
        bytes_written=outputs * elements * ab,
        param_count=params, param_bytes=params * float(value_scalar(ab)), kv_window=kv_window, launches=launches,
    )


@register("cast")
def cast(name: str, count: int, *, bytes_read: Expr, bytes_written: Expr, launches: int = 1, kind: str = "attention",
         kv_window: int | None = None) -> Op:
    """Tensors copied to another dtype (e.g. 16-bit Q, K, V to float32): their bytes read in the old
    dtype and written in the new one, one kernel per tensor (`launches`)."""
    return make_op(name, kind, count, bytes_read=bytes_read, bytes_written=bytes_written, kv_window=kv_window,
               launches=launches)


@register("embedding")
def embedding(name: str, count: int, *, T: Expr, h: Expr, rows: int, ab: Expr, add: bool = False) -> Op:
    """out[T, h] = table[rows, h][ids[T]] (+ x[T, h] when added to the hidden state)."""
    return make_op(
        name, "embedding", count,
        vector_flops=T * h if add else ZERO,
        bytes_read=T * h * ab * (2 if add else 1),
        bytes_written=T * h * ab,
        weight_bytes=T * h * ab,
        param_count=rows * int(value_scalar(h)), param_bytes=rows * int(value_scalar(h)) * float(value_scalar(ab)),
    )
