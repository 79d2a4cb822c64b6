"""FLOPs and bytes of one aten op from the input shapes torch.profiler records (record_shapes=True).

Matmuls and attention go through llmsim's own op formulas (cost.formulas: linear, flash_attention), so a
measured kernel and the predicted op it matches are counted the same way; element-wise ops count one FLOP
per output element. Ops with no rule here get None (the table then says the number is unknown).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..cost.op import formula
from ..cost.symbolic import Expr
from .classify import torch_dtype

# unary and binary element-wise ops: out = broadcast(inputs); one FLOP per output element
_POINTWISE = frozenset({"add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "neg", "silu", "silu_",
                        "gelu", "gelu_", "relu", "relu_", "tanh", "sigmoid", "exp", "rsqrt", "sqrt", "pow", "cos",
                        "sin", "where", "masked_fill", "masked_fill_", "clamp", "clamp_", "minimum", "maximum",
                        "reciprocal", "abs", "erf"})
_REDUCTIONS = frozenset({"mean", "sum", "amax", "var", "var_mean"})  # over all input elements
_COPIES = frozenset({"copy_", "_to_copy", "clone", "cat", "index_select"})  # read once, written once
_NORMS = {"native_layer_norm": "layernorm", "layer_norm": "layernorm", "rms_norm": "rmsnorm",
          "_fused_rms_norm": "rmsnorm"}


def _numel(dims: Sequence[int]) -> int:
    return math.prod(int(d) for d in dims)


def _tensors(dims: list[Any], types: list[str]) -> list[tuple[list[int], str, int]]:
    """(dims, precision, bytes per element) of each tensor input (scalars and None left out)."""
    out = []
    for d, t in zip(dims, types):
        dtype = torch_dtype(t)
        if dtype is not None and isinstance(d, list) and d:
            out.append(([int(x) for x in d], dtype[0], dtype[1]))
    return out


def op_cost(name: str, dims: list[Any], types: list[str], concrete: list[Any] | None = None
            ) -> tuple[float, float, str] | None:
    """(FLOPs, bytes, precision) of one call of aten op `name`, or None when no rule covers it."""
    base = name.split("::", 1)[-1]
    tensors = _tensors(dims, types)
    if not tensors:
        return None
    precision, size = tensors[0][1], tensors[0][2]
    if base in ("mm", "addmm", "bmm", "baddbmm"):
        return _matmul(base, tensors, precision, size)
    if base.startswith("_scaled_dot_product") and len(tensors) >= 3:
        causal = _is_causal(base, concrete or [])
        return _attention(tensors, causal, precision, size)
    if base in _POINTWISE:
        out = max(_numel(d) for d, _, _ in tensors)  # approximation: the output has the largest input's size
        read = sum(_numel(d) * s for d, _, s in tensors)
        return float(out), float(read + out * size), precision
    if base in _NORMS:
        *rows, n = tensors[0][0]
        op = formula("norm")("profile", 1, T=Expr.sym("T", math.prod(rows)), n=Expr.sym("n", n),
                             ab=Expr.sym("ab", size), kind=_NORMS[base], params_per_norm=0)
        return float(op.flops), float(op.bytes), precision  # llmsim's norm: LayerNorm 7, RMSNorm 4 FLOPs/element
    if base in _COPIES:
        if base == "index_select":  # out[len(index), ...] rows gathered from the table
            moved = _numel(tensors[1][0]) * _numel(tensors[0][0][1:]) * size
        else:  # copy_(dst, src): src; cat: every input
            moved = sum(_numel(d) * s for d, _, s in (tensors[1:2] if base == "copy_" else tensors))
        return 0.0, float(2 * moved), precision
    if base in _REDUCTIONS:
        n = _numel(tensors[0][0])
        return float(n), float(n * size), precision  # approximation: the (small) reduced output is not counted
    return None


def _matmul(base: str, tensors: list[tuple[list[int], str, int]], precision: str, size: int
            ) -> tuple[float, float, str] | None:
    """mm: a[M, K] @ b[K, N]; addmm: bias + a @ b; bmm: a[B, M, K] @ b[B, K, N]; baddbmm: bias + bmm."""
    pair = tensors[-2:]  # addmm / baddbmm: the bias comes first
    if len(pair) < 2:
        return None
    (a, _, _), (b, _, wsize) = pair
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:  # not a product torch ran: no cost rather than a wrong one
        raise ShapeError(f"aten::{base} with inputs {a} and {b}: the inner sizes must agree (a[..., M, K] @ "
                         "b[..., K, N])")
    batch = a[0] if base in ("bmm", "baddbmm") and len(a) == 3 else 1
    M, K, N = a[-2], a[-1], b[-1]
    # addmm's bias add counts M*N FLOPs, as llmsim's linear(bias=True) does (torch's FlopCounterMode counts
    # only the 2*M*K*N of the product)
    op = formula("linear")("profile", 1, T=Expr.sym("T", M), K=Expr.sym("K", K), N=Expr.sym("N", N),
                           wb=Expr.sym("wb", wsize), ab=Expr.sym("ab", size), bias=base in ("addmm", "baddbmm"))
    return float(batch * (op.matmul_flops + op.vector_flops)), float(batch * op.bytes), precision


class ShapeError(ValueError):
    """Recorded shapes that no run of the op could have had (the reader names the event)."""


def _is_causal(base: str, concrete: list[Any]) -> bool:
    """is_causal from the recorded scalar inputs: flash kernels (q, k, v, dropout_p, is_causal, ...),
    efficient and cuDNN (q, k, v, attn_bias, compute_log_sumexp, dropout_p, is_causal, ...), the math
    kernel (q, k, v, attn_mask, dropout_p, is_causal, ...)."""
    position = 4 if "flash" in base else 6 if ("efficient" in base or "cudnn" in base) else 5
    value = concrete[position] if len(concrete) > position else ""
    return str(value) == "True"


def _attention(tensors: list[tuple[list[int], str, int]], causal: bool, precision: str, size: int
               ) -> tuple[float, float, str] | None:
    """q[B, H, Sq, d], k[B, kvh, Skv, d], v[B, kvh, Skv, dv] through llmsim's flash_attention formula.
    Causal: the (query, key) pairs inside the mask, the last query seeing every key (bottom-right
    alignment; Sq = Skv: S(S+1)/2). approximation: the exact triangle, not the kernel's tiles."""
    (q, _, _), (k, _, kvsize), (v, _, _) = tensors[:3]
    if len(q) != 4 or len(k) != 4 or len(v) != 4:
        return None
    B, H, Sq, d = q
    kvh, Skv, dv = k[1], k[2], v[3]
    pairs = Sq * Skv - (Sq * (Sq - 1) / 2 if causal and Sq <= Skv else 0)
    op = formula("flash_attention")(
        "profile", 1, B=Expr.sym("B", B), H=Expr.sym("H", H), Sq=Expr.sym("Sq", Sq), Skv=Expr.sym("Skv", Skv),
        pairs=Expr.sym("pairs", pairs), d=Expr.sym("d", d), dv=Expr.sym("dv", dv), kvh=Expr.sym("kvh", kvh),
        kv_values=Expr.sym("kv_values", d + dv), ab=Expr.sym("ab", size), kvb=Expr.sym("kvb", kvsize))
    return float(op.matmul_flops + op.vector_flops), float(op.bytes), precision
