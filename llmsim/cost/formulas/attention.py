"""Attention kernels: unfused math (attention_scores, softmax, sdpa_softmax, attention_context, with
repeat_kv for eager GQA/MQA and sdpa_broadcast_kv for SDPA's math kernel on fewer K/V heads), fused
flash_attention, and kv_append (new K and V into the cache)."""

from __future__ import annotations

from ..op import Op, make_op, register, value_scalar
from ..symbolic import Expr, smin


@register("attention_scores")
def attention_scores(name: str, count: int, *, B: Expr, H: Expr, Sq: Expr, Skv: Expr, d: Expr, kvh: Expr,
                     ab: Expr, kvb: Expr, precision: str = "bf16", kv_window: int | None = None) -> Op:
    """scores[B, H, Sq, Skv] = Q[B, H, Sq, d] @ K^T[B, kvh, d, Skv] (unfused: scores reach memory)."""
    return make_op(
        name, "attention", count,
        matmul_flops=2 * B * H * Sq * Skv * d,
        bytes_read=B * H * Sq * d * ab + B * kvh * Skv * d * kvb,
        bytes_written=B * H * Sq * Skv * ab,
        precision=precision, kv_window=kv_window,
    )


@register("softmax")
def softmax(name: str, count: int, *, B: Expr, H: Expr, Sq: Expr, Skv: Expr, ab: Expr, params: int = 0,
            kv_window: int | None = None, eager: bool = False, softcap: bool = False) -> Op:
    """probs[B, H, Sq, Skv] = softmax(scores) over the last axis (reads and writes the scores).

    eager=True: as transformers' eager attention runs it, one kernel per PyTorch op on the scores:
    scale (a read, a written), + mask (a, a), softmax into float32 (a, 4), .to(dtype) (4, a; none when
    a = 4), with a the activation bytes per element.
    softcap=True (Gemma 2): scores = c * tanh(scores / c) first, three more kernels in eager PyTorch (/ c,
    tanh, * c: 3a read, 3a written; 10 nominal FLOPs per score: tanh 8 as in tanh-GELU, / and * 1 each);
    (a fused kernel caps inside its softmax: no extra traffic, and flash_attention counts none).
    """
    scores = B * H * Sq * Skv
    read, written, launches = scores * ab, scores * ab, 1
    if eager:
        cast = float(value_scalar(ab)) != 4.0
        read = scores * (3 * ab + (4 if cast else 0))
        written = scores * (2 * ab + 4 + (ab if cast else 0))
        launches = 4 if cast else 3
    if eager and softcap:
        read, written, launches = read + 3 * scores * ab, written + 3 * scores * ab, launches + 3
    return make_op(
        name, "attention", count,
        vector_flops=(5 + (10 if softcap else 0)) * scores,
        bytes_read=read,
        bytes_written=written,
        param_count=params, param_bytes=params * float(value_scalar(ab)), kv_window=kv_window, launches=launches,
    )


@register("sdpa_softmax")
def sdpa_softmax(name: str, count: int, *, B: Expr, H: Expr, Sq: Expr, Skv: Expr, ab: Expr, masked: bool,
                 kv_window: int | None = None) -> Op:
    """probs[B, H, Sq, Skv] as PyTorch's SDPA math kernel computes them on float32 scores, one kernel
    per op (bytes read / written per score element):
        + causal mask, in place (masked only) 4 / 4 | softmax 4 / 4 | isneginf(scores) 4 / 1 |
        all(-1) 1 / - | where(all-masked row, 0, probs) 4 / 4 | copy of the probs (a != 4 only) 4 / 4
    (the guard keeps fully masked rows at zero: aten::_safe_softmax).
    """
    scores = B * H * Sq * Skv
    cast = float(value_scalar(ab)) != 4.0
    read = (4 if masked else 0) + 13 + (4 if cast else 0)
    written = (4 if masked else 0) + 9 + (4 if cast else 0)
    return make_op(
        name, "attention", count,
        vector_flops=(5 + 3) * scores,  # softmax 5 + mask test, reduction and select 3 (nominal)
        bytes_read=scores * read,
        bytes_written=scores * written,
        kv_window=kv_window, launches=4 + int(masked) + int(cast),
    )


@register("repeat_kv")
def repeat_kv(name: str, count: int, *, B: Expr, H: Expr, kvh: Expr, Skv: Expr, kv_values: Expr, kvb: Expr,
              kv_window: int | None = None) -> Op:
    """K, V [B, kvh, Skv, d] -> [B, H, Skv, d] copies (transformers' eager attention with GQA/MQA):
    two kernels reading the cached K and V and writing them once per query head."""
    return make_op(
        name, "cache", count,
        bytes_read=B * kvh * Skv * kv_values * kvb,
        bytes_written=B * H * Skv * kv_values * kvb,
        kv_window=kv_window, launches=2,
    )


@register("sdpa_broadcast_kv")
def sdpa_broadcast_kv(name: str, count: int, *, B: Expr, H: Expr, kvh: Expr, Skv: Expr, kv_values: Expr, kvb: Expr,
                      kv_window: int | None = None) -> Op:
    """K^T and V [B, kvh, Skv, d] broadcast to the query heads inside SDPA's math kernel (a model passing fewer
    K/V heads without enable_gqa, as Falcon's multi-query attention does): its batched matmul reshapes the
    expanded [B, H, ...] views, which copies them when B > 1 (batch and head axes cannot merge into one
    view) and not at B = 1 (torch 2.13 on a CPU: copy_ of [5, 16, 64, 769] and [5, 16, 769, 64] at batch 5,
    none at batch 1). min(B - 1, 1) switches the copies on from B = 2; two kernels, read kvh heads, written H."""
    batched = smin(B - 1, 1)
    return make_op(
        name, "cache", count,
        bytes_read=batched * B * kvh * Skv * kv_values * kvb,
        bytes_written=batched * B * H * Skv * kv_values * kvb,
        kv_window=kv_window, launches=2,
    )


@register("attention_context")
def attention_context(name: str, count: int, *, B: Expr, H: Expr, Sq: Expr, Skv: Expr, dv: Expr, kvh: Expr,
                      ab: Expr, kvb: Expr, precision: str = "bf16", kv_window: int | None = None) -> Op:
    """out[B, H, Sq, dv] = probs[B, H, Sq, Skv] @ V[B, kvh, Skv, dv]."""
    return make_op(
        name, "attention", count,
        matmul_flops=2 * B * H * Sq * Skv * dv,
        bytes_read=B * H * Sq * Skv * ab + B * kvh * Skv * dv * kvb,
        bytes_written=B * H * Sq * dv * ab,
        precision=precision, kv_window=kv_window,
    )


@register("flash_attention")
def flash_attention(name: str, count: int, *, B: Expr, H: Expr, Sq: Expr, Skv: Expr, pairs: Expr, d: Expr,
                    dv: Expr, kvh: Expr, kv_values: Expr, ab: Expr, kvb: Expr, params: int = 0,
                    precision: str = "bf16", kv_window: int | None = None, kernel_key: tuple | None = None,
                    kernel_y: Expr | None = None) -> Op:
    """out[B, H, Sq, dv] = softmax(Q K^T) V fused: no scores in memory; only the (query, key) `pairs`
    inside the causal mask and the window are computed. Q read once, each key's `kv_values` (K and V,
    or MLA's shared latent) read once, out written once."""
    return make_op(
        name, "attention", count,
        matmul_flops=2 * B * H * pairs * (d + dv),
        vector_flops=5 * B * H * pairs,
        bytes_read=B * H * Sq * d * ab + B * kvh * Skv * kv_values * kvb,
        bytes_written=B * H * Sq * dv * ab,
        param_count=params, param_bytes=params * float(value_scalar(ab)), precision=precision,
        kv_window=kv_window, kernel_key=kernel_key, kernel_x=B, kernel_y=kernel_y,  # read at (batch, kernel_y)
    )


@register("kv_append")
def kv_append(name: str, count: int, *, B: Expr, Snew: Expr, values: Expr, kvb: Expr, ab: Expr,
              cached: Expr | None = None, kv_window: int | None = None) -> Op:
    """cache[B, L + Snew, values] <- new[B, Snew, values]: the new tokens' K and V written to the cache.

    With `cached` (transformers' DynamicCache, which concatenates): the L cached tokens are read and
    written again into a new tensor every step as well (at most W - 1 tokens with a sliding window W:
    `kv_window`, so that decode sums stop its growth where the window fills).
    """
    read = B * Snew * values * ab
    written = B * Snew * values * kvb
    if cached is not None:
        read = read + B * cached * values * kvb
        written = written + B * cached * values * kvb
    return make_op(name, "cache", count, bytes_read=read, bytes_written=written,
               kv_window=kv_window if cached is not None else None)
