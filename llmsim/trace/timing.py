"""A traced kernel's time on the device: the roofline (timing.roofline) with the hardware file's shape
curves, or a measured GEMM table where the engine has one for the device and the kernel is a 2-D matrix
product (mm/addmm) or a convolution read as its implicit GEMM (M = N * output pixels, N = Cout,
K = Cin * kernel area; groups = 1, not transposed), or the non-causal attention table for a non-causal SDPA
kernel where that table times the FlashAttention-2 PyTorch runs (SDPA_TABLE_LABEL's note).

As for LLM ops (timing.measured): a measured kernel's compute and memory terms are both scaled by
measured / roofline time, so its time is the table's and its bound the larger roofline term.
approximation: a convolution timed from a GEMM table runs as fast as the GEMM of its implicit shape
(cuDNN's implicit-GEMM kernels; no convolution tables ship).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..timing.roofline import OpCost, Roofline
from .kernels import Kernel

GEMM_TABLE_DTYPES = {"bf16": "bf16", "fp16": "bf16"}  # matmul precision -> the GEMM table read (fp16: bf16's)
# A traced non-causal SDPA kernel (F.scaled_dot_product_attention) reads vLLM's non-causal attention table only
# where that table times FlashAttention-2 (L40S, RTX PRO 6000: kernel source vllm_vit_flash_attn_fa2), the library
# PyTorch's SDPA flash backend vendors. On Hopper and Blackwell the table times FlashAttention-3/4, which PyTorch
# 2.13 runs only when asked (torch/nn/attention/_fa3.py: a prototype, activated by hand); FlashAttention-3's paper
# measures FlashAttention-2 at about 370 TFLOP/s against its own 648 on the H100 (head dim 128), so those rows would
# read SDPA some 1.5x fast, and it stays on the roofline there. approximation: vLLM's build of FlashAttention-2 times
# the same kernels as PyTorch's vendored copy.
SDPA_TABLE_LABEL = "encoder_attention (FlashAttention-2, as PyTorch's SDPA runs it)"


def kernel_time(roofline: Roofline, kernel: Kernel, precision: str) -> tuple[float, str, str]:
    """(seconds, bound, source) of one run of the kernel."""
    moved = kernel.bytes_read + kernel.bytes_written
    source = "roofline"
    measured_s = _measured_gemm_s(roofline, kernel, precision)
    label = f"gemm{' (conv as implicit GEMM)' if 'conv' in kernel.aten else ''}"
    if measured_s is None:
        measured_s, label = _measured_attention_s(roofline, kernel, precision), SDPA_TABLE_LABEL
    if measured_s is not None:
        plain = roofline.cost(kernel.matmul_flops, kernel.vector_flops, moved, precision, 1, kind=kernel.kind)
        factor = measured_s / max(plain.compute_s, plain.memory_s, 1e-300)
        cost = OpCost(compute_s=plain.compute_s * factor, memory_s=plain.memory_s * factor, launches=1)
        source = f"{roofline.measured.kernels.engine} {label}"
    elif kernel.gemm is not None:
        rows, cols, depth = kernel.gemm
        cost = roofline.cost(kernel.matmul_flops, kernel.vector_flops, moved, precision, 1, kind=kernel.kind,
                             rows=rows, cols=cols, depth=depth)
    else:
        cost = roofline.cost(kernel.matmul_flops, kernel.vector_flops, moved, precision, 1, kind=kernel.kind)
    op_time = roofline.time(cost)
    parts = {"compute": op_time.compute_part_s, "memory": op_time.memory_part_s, "overhead": op_time.overhead_part_s}
    return float(op_time.time_s), max(parts, key=parts.get), source


def _measured_attention_s(roofline: Roofline, kernel: Kernel, precision: str) -> float | None:
    """The non-causal attention table's seconds for a traced SDPA kernel, or None: only a non-causal MHA kernel
    (query length = key length, heads = KV heads, one head dim) in 16-bit, on a device whose table times
    FlashAttention-2 (SDPA_TABLE_LABEL's note)."""
    shape = kernel.attention
    if roofline.measured is None or shape is None or GEMM_TABLE_DTYPES.get(precision) != "bf16":
        return None
    batch, heads, kv_heads, q_len, kv_len, head_dim, value_dim, causal = shape
    if causal or q_len != kv_len or heads != kv_heads or head_dim != value_dim:
        return None
    table = roofline.measured.kernels.tables.get("encoder_attention")
    if table is None or "fa2" not in str(table.provenance.get("kernel_sources", "")).split("_"):
        return None
    return _one_point_s(roofline.measured.lookup(("encoder_attention", head_dim, heads))[0], batch, q_len, None)


def _measured_gemm_s(roofline: Roofline, kernel: Kernel, precision: str) -> float | None:
    """The measured GEMM table's seconds for the kernel's (M, N, K), or None where none covers it."""
    table_dtype = GEMM_TABLE_DTYPES.get(precision)
    if roofline.measured is None or kernel.gemm is None or table_dtype is None:
        return None
    return _one_point_s(roofline.measured.lookup(("gemm", table_dtype))[0], *kernel.gemm)


def _one_point_s(time_at: Any, *coords: float | None) -> float | None:
    """A table's time function at one point (None for an axis it does not have), or None: no function, or a time
    that is not a positive number."""
    if time_at is None:
        return None
    point = [None if c is None else np.asarray([float(c)]) for c in coords]
    seconds = float(np.asarray(time_at(*point)).reshape(-1)[0])
    return seconds if np.isfinite(seconds) and seconds > 0 else None
