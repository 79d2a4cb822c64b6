"""Matmuls with weights: linear (y = x W + b) and expert_linear (the experts a batch routes to)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..op import ZERO, Op, make_op, register, value_scalar
from ..symbolic import Expr, scall


@register("linear")
def linear(name: str, count: int, *, T: Expr, K: Expr, N: Expr, wb: Expr, ab: Expr, bias: bool = False,
           owns_weight: bool = True, param_bytes_per: float | None = None, precision: str = "bf16",
           weight_layout: str = "out_in", kernel_key: tuple | None = None, bias_bytes_per: float | None = None
           ) -> Op:
    """y[T, N] = x[T, K] @ W[K, N] (+ b[N]). Weights read once per run. kernel_key: the measured GEMM it
    is, read at (M, N) = (T, N). bias_bytes_per: bytes per bias element when they differ from the weights'
    (a quantized matrix keeps its bias at the model dtype)."""
    weight = K * N * wb
    params = int(value_scalar(K) * value_scalar(N) + (value_scalar(N) if bias else 0)) if owns_weight else 0
    per = param_bytes_per if param_bytes_per is not None else float(value_scalar(wb))
    param_bytes = params * per
    if bias_bytes_per is not None and bias and owns_weight:  # [K, N] at wb, [N] at the bias's own bytes
        param_bytes = value_scalar(K) * value_scalar(N) * per + value_scalar(N) * bias_bytes_per
    return make_op(
        name, "matmul", count,
        matmul_flops=2 * T * K * N,
        vector_flops=T * N if bias else ZERO,
        bytes_read=weight + T * K * ab,
        bytes_written=T * N * ab,
        weight_bytes=weight,
        matmul_rows=T,
        matmul_cols=N,
        param_count=params,
        param_bytes=param_bytes,
        precision=precision,
        weight_layout=weight_layout,
        matmul_depth=int(value_scalar(K)),
        kernel_key=kernel_key, kernel_x=T, kernel_y=N,
    )


def experts_read_fraction(tokens: Any, topk: Any, experts: Any) -> Any:
    """The expected fraction of `experts` that `tokens` independently routed tokens read, each picking `topk` of
    them uniformly: 1 - (1 - topk/experts)^tokens. Shape: that of `tokens` (a number or an array).
    approximation: uniform, independent routing (each expert equally likely for every token)."""
    return 1.0 - (1.0 - topk / experts) ** tokens


@register("expert_linear")
def expert_linear(name: str, count: int, *, T: Expr, k: Expr, E: Expr, K: Expr, N: Expr, wb: Expr, ab: Expr,
                  bias: bool = False, precision: str = "bf16", weight_layout: str = "out_in",
                  kernel_key: tuple | None = None, kernel_tokens: Expr | None = None, spread: int = 1,
                  bias_bytes_per: float | None = None) -> Op:
    """y[T*k, N] = x[T*k, K] @ W_e[K, N] over the experts the T tokens chose (k each). kernel_key: the
    measured fused-MoE kernel it is part of, read at kernel_tokens (the tokens entering the MoE layer).

    Weight bytes are those of the distinct experts touched. With the experts spread whole over `spread` GPUs
    (expert parallelism), E and T are one GPU's: E local experts of the E * spread, T = its share of the
    T * spread tokens routed; each token still picks k of all E * spread experts.
    approximation: uniform routing; expected distinct local experts = E * (1 - (1 - k/(E*spread))^(T*spread))
    (spread = 1: E * (1 - (1 - k/E)^T)).
    """
    all_experts = E.value * spread  # k/all_experts: the chance that a token picks a given expert
    touched_value = E.value * experts_read_fraction(np.asarray(T.value, dtype=float) * spread, k.value, all_experts)
    touched = scall("experts_touched", touched_value, T, k, E)
    weight = touched * K * N * wb
    params = int(value_scalar(E) * (value_scalar(K) * value_scalar(N) + (value_scalar(N) if bias else 0)))
    param_bytes = params * float(value_scalar(wb))
    if bias_bytes_per is not None and bias:  # E x [K, N] at wb, E x [N] biases at their own bytes
        param_bytes = value_scalar(E) * (value_scalar(K) * value_scalar(N) * float(value_scalar(wb))
                                         + value_scalar(N) * bias_bytes_per)
    return make_op(
        name, "matmul", count,
        matmul_flops=2 * T * k * K * N,
        vector_flops=T * k * N if bias else ZERO,
        bytes_read=weight + T * k * K * ab,
        bytes_written=T * k * N * ab,
        weight_bytes=weight,
        matmul_rows=T * k / touched,  # rows per expert matrix: the T*k routed rows over the experts touched
        matmul_cols=N,
        param_count=params,
        param_bytes=param_bytes,
        precision=precision,
        weight_layout=weight_layout,
        matmul_depth=int(value_scalar(K)),
        kernel_key=kernel_key, kernel_x=kernel_tokens,
    )
