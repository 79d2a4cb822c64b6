"""Linear-attention kernels (gated DeltaNet, Qwen3-Next): the causal depthwise convolution over q, k and v,
the chunked prefill scan and the per-token recurrent update. Their state is a fixed-size recurrent state
[B, Hv, dk, dv] (float32) and the convolution's last K inputs, not a KV cache that grows with the tokens."""

from __future__ import annotations

from typing import Any

from ..op import Op, make_op, register, value_scalar
from ..symbolic import Expr, sfloordiv

# the chunk length of the chunked gated delta rule (transformers' torch_chunk_gated_delta_rule and FLA's
# chunk_gated_delta_rule both use 64)
SCAN_CHUNK = 64
STATE_BYTES = 4.0  # the recurrent state is kept in float32
# the kernels FLA's chunked scan launches (fla-org/flash-linear-attention fla/ops/gated_delta_rule/chunk.py, which
# SGLang and TensorRT-LLM run): l2norm_fwd of q and of k (use_qk_l2norm_in_kernel, as Qwen3-Next and Qwen3.5 call it),
# then chunk_local_cumsum, chunk_scaled_dot_kkt_fwd, solve_tril, recompute_w_u_fwd, chunk_gated_delta_rule_fwd_h
# and chunk_fwd_o. approximation: one Triton launch each (solve_tril launches two at chunk 64 in some versions).
FLA_SCAN_LAUNCHES = 8


@register("causal_conv1d")
def causal_conv1d(name: str, count: int, *, B: Expr, S: Expr, C: Expr, K: int, ab: Expr, kvb: Expr,
                  bias: bool = False, **kernel: Any) -> Op:
    """y[B, S, C] = silu(sum_j w[C, j] * x[B, S - K + 1 + j, C] (+ b[C])): a depthwise causal convolution of K
    taps, its last K inputs kept in the state. 2 FLOPs per tap and output, plus SiLU (and the bias add).

    approximation: vector FLOPs (a depthwise convolution is no tensor-core matmul); the state's K inputs are
    read and the new ones written once per call. `kernel`: the measured kernel it is (kernel_key, kernel_x,
    kernel_y: the Gated DeltaNet tables, cost.blocks.linear_attention).
    """
    taps = Expr.sym("K", K)
    return make_op(
        name, "elementwise", count,
        vector_flops=2 * B * S * C * taps + (5 if bias else 4) * B * S * C,
        bytes_read=B * S * C * ab + B * C * taps * kvb,
        bytes_written=B * S * C * ab + B * C * taps * kvb,
        param_count=int(value_scalar(C)) * (K + bias),
        param_bytes=int(value_scalar(C)) * (K + bias) * float(value_scalar(ab)), **kernel,
    )


@register("gated_delta_scan")
def gated_delta_scan(name: str, count: int, *, B: Expr, S: Expr, Hv: Expr, dk: Expr, dv: Expr, Hk: Expr,
                     ab: Expr, launches: int = 1, **kernel: Any) -> Op:
    """out[B, S, Hv, dv] = the gated delta rule over S tokens in n = ceil(S / c) chunks of c = 64 (prefill),
    the matmuls of the chunked algorithm per chunk and value head:
        k_beta @ k^T and q @ k^T          [c, dk] @ [dk, c]       2 x 2 c^2 dk
        k_cumdecay @ state, q @ state     [c, dk] @ [dk, dv]      2 x 2 c dk dv
        attn @ v_new                      [c, c] @ [c, dv]        2 c^2 dv
        k^T @ v_new (the state update)    [dk, c] @ [c, dv]       2 c dk dv
    Reads q, k [B, S, Hk, dk], v [B, S, Hv, dv] and the gates; writes out and the float32 state [B, Hv, dk, dv].

    approximation: the two triangular solves (c^2 (dk + dv) per chunk), decays and masks are vector FLOPs,
    nominally 2 c^2 (dk + dv) + 8 c^2 per chunk and head. `kernel`: the measured kernel it is (as causal_conv1d);
    `launches`: the kernels one call launches (1, or FLA_SCAN_LAUNCHES for FLA's).
    """
    c = Expr.sym("c", SCAN_CHUNK)
    n = sfloordiv(S + (SCAN_CHUNK - 1), c)  # chunks, the last one padded
    per_chunk = 2 * c * (2 * c * dk + c * dv + 3 * dk * dv)
    return make_op(
        name, "attention", count,
        matmul_flops=B * Hv * n * per_chunk,
        vector_flops=B * Hv * n * (2 * c * c * (dk + dv) + 8 * c * c),
        bytes_read=B * S * (2 * Hk * dk + Hv * dv + 2 * Hv) * ab,
        bytes_written=B * S * Hv * dv * ab + B * Hv * dk * dv * STATE_BYTES, launches=launches, **kernel,
    )


@register("gated_delta_update")
def gated_delta_update(name: str, count: int, *, B: Expr, Hv: Expr, dk: Expr, dv: Expr, Hk: Expr,
                       ab: Expr, **kernel: Any) -> Op:
    """One decode token per sequence: state[B, Hv, dk, dv] *= exp(g); kv = k^T state; state += k (beta (v - kv));
    out = q^T state. Matrix-vector work over the float32 state, read and written once: about 8 FLOPs per state
    value (vector FLOPs: no matmul a tensor core runs). `kernel`: the measured kernel it is (as causal_conv1d)."""
    state = B * Hv * dk * dv
    return make_op(
        name, "attention", count,
        vector_flops=8 * state,
        bytes_read=state * STATE_BYTES + B * (2 * Hk * dk + Hv * dv + 2 * Hv) * ab,
        bytes_written=state * STATE_BYTES + B * Hv * dv * ab, **kernel,
    )
