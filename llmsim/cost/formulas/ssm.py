"""Mamba-2 (SSD) kernels: the chunked selective scan of a prompt and the per-token state update of a decode
step. The state is fixed-size: [B, H, p, N] in float32 per layer (and the convolution's inputs, costed by
causal_conv1d), not a KV cache that grows with the tokens.

Symbols: B batch, S tokens per sequence, H heads of p channels, G groups sharing B and C of state size N, l the
chunk length, c = ceil(S / l) chunks.
"""

from __future__ import annotations

from ..op import Op, make_op, register
from ..symbolic import Expr, sfloordiv

STATE_BYTES = 4.0  # the SSM state is kept in float32 (transformers' torch scan, mamba_ssm_cache_dtype float32)


@register("ssd_scan")
def ssd_scan(name: str, count: int, *, B: Expr, S: Expr, H: Expr, p: Expr, G: Expr, N: Expr, chunk: int,
             ab: Expr, fused: bool) -> Op:
    """y[B, S, H, p] = the selective scan over S tokens in chunks of l (prefill), from x [B, S, H, p], dt [B, S, H]
    and B, C [B, S, G, N]; writes y and the final float32 state [B, H, p, N].

    fused=False: the matmuls of transformers' torch chunk scan (mamba2_chunk_scan: the einsums on B and C
    repeated to every head, the sequence padded to c whole chunks), as FlopCounterMode counts them:
        G = C B^T per chunk              (b,c,l,h,n) x (b,c,s,h,n)   2 B c H l^2 N
        Y_diag = (G * L) x               (b,c,l,s,h) x (b,c,s,h,p)   2 B c H l^2 p
        states = B^T x per chunk         (b,c,l,h,n) x (b,c,l,h,p)   2 B c H l p N
        chunk states passed on           (b,z,c,h) x (b,z,h,p,n)     2 B H (c + 1)^2 p N
        Y_off = C states                 (b,c,l,h,n) x (b,c,h,p,n)   2 B c H l p N
    fused=True: mamba_ssm's fused kernels (mamba_chunk_scan_combined; vLLM's and SGLang's Mamba-2 layers):
    C B^T once per group (bmm_chunk), the causal triangle of (C B^T * L) x per chunk (chunk_scan), B^T x and
    C states over the S real tokens (chunk_state, chunk_scan), the chunk states passed on in sequence
    (state_passing: vector work, 2 per state value and chunk).

    approximation: the fused count takes the exact causal triangle of each chunk (l(l+1)/2 pairs; the kernel
    skips masked tiles at its tile size, as flash attention does); the decay masks exp(segsum) [B, H, c, l, l],
    the dt scaling of x and the D skip are nominal vector FLOPs (2 per mask element, 4 per x element); the
    chunk intermediates stay on chip (the torch path writes them to memory: not counted).
    """
    l_ = Expr.sym("l", chunk)
    c = sfloordiv(S + (chunk - 1), l_)  # chunks, the last one padded
    full = sfloordiv(S, l_)  # whole chunks; r tokens in the last, partial one
    r = S - full * l_
    if fused:
        pairs = full * (l_ * (l_ + 1) / 2) + r * (r + 1) / 2  # causal (query, key) pairs inside the chunks
        squares = full * l_ * l_ + r * r  # C B^T products per group
        matmul = 2 * B * G * squares * N + 2 * B * H * pairs * p + 4 * B * H * S * p * N
        passing = 2 * B * H * c * p * N
    else:
        matmul = B * H * (2 * c * l_ * l_ * (N + p) + 4 * c * l_ * p * N + 2 * (c + 1) * (c + 1) * p * N)
        passing = 0 * B
    return make_op(
        name, "attention", count,
        matmul_flops=matmul,
        vector_flops=2 * B * H * c * l_ * l_ + 4 * B * S * H * p + passing,
        bytes_read=B * S * (H * p + 2 * G * N + H) * ab,
        bytes_written=B * S * H * p * ab + B * H * p * N * STATE_BYTES,
    )


@register("ssd_update")
def ssd_update(name: str, count: int, *, B: Expr, H: Expr, p: Expr, G: Expr, N: Expr, ab: Expr,
               fused: bool) -> Op:
    """One decode token per sequence (selective_state_update): state[B, H, p, N] = state * exp(dt A) + dt x B^T;
    y[B, H, p] = state C + D x. The float32 state is read and written once.

    fused=False: transformers' torch path runs state C as a bmm, [B*H, p, N] x [B*H, N, 1]: 2 B H p N matmul
    FLOPs (FlopCounterMode counts them), the rest vector work; fused=True: mamba_ssm's selective_state_update
    kernel, all vector work (no matrix a tensor core runs).
    approximation: 7 FLOPs per state value in all (decay 2, the dt x B outer product 2, state C 2, nominal 1).
    """
    state = B * H * p * N
    matmul = 0 * state if fused else 2 * state
    return make_op(
        name, "attention", count,
        matmul_flops=matmul,
        vector_flops=7 * state - matmul,
        bytes_read=state * STATE_BYTES + B * (H * p + 2 * G * N + H) * ab,
        bytes_written=state * STATE_BYTES + B * H * p * ab,
    )
