"""A traced kernel's time on the device: the roofline (timing.roofline) with the hardware file's shape
curves, or a measured GEMM table where the engine has one for the device and the kernel is a 2-D matrix
product (mm/addmm) or a convolution read as its implicit GEMM (M = N * output pixels, N = Cout,
K = Cin * kernel area; groups = 1, not transposed), or the non-causal attention table for a non-causal SDPA
kernel, labelled with the kernel the table times and the one PyTorch's SDPA runs (SDPA_KERNELS' note).

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
# A traced non-causal SDPA kernel (F.scaled_dot_product_attention) reads vLLM's non-causal attention table where
# that table times the kernel PyTorch 2.13's SDPA runs on the device, or one published measurements put within a
# few tens of per cent of it. PyTorch's backend order (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp,
# check_prefer_cudnn_attention and priority_order) puts cuDNN attention first on compute capability 9.x and 10.x
# (Hopper, datacenter Blackwell) with a cuDNN above 9.15 (its CUDA 13 wheels; TORCH_CUDNN_SDPA_DEPRIORITIZED=1 or an
# older cuDNN fall back to flash), and its vendored FlashAttention-2 first elsewhere (Ampere, Ada, sm120).
# Table kernel (aiconfigurator kernel source) -> what the label says:
#   fa2 (L40S, RTX PRO 6000): FlashAttention-2, PyTorch's flash backend on those devices (approximation: vLLM's build
#       times the same kernels as PyTorch's vendored copy);
#   fa3 (H100, H200): FlashAttention-3 as a proxy for cuDNN attention. Published H100 measurements put them
#       together: sglang-project/sglang PR #30090 (H100 80GB, PyTorch 2.11+cu130, 16 heads, bf16) times cuDNN SDPA
#       at 0.93-1.19x FlashAttention's time (0.0676/0.0685 ms at B4 S1024 D64, 0.1055/0.1132 at B8, 0.0814/0.0810 at
#       D80, 0.0484/0.0407 at B4 S576 D64); pytorch/pytorch issue #142132 (tritonbench, H100, B1 H24 S4608 D128)
#       cuDNN 631.3 against FlashAttention-3 631.8 TFLOP/s;
#   fa4 (B200, B300, GB200, GB300): FlashAttention-4 as a proxy for cuDNN attention: Dao-AILab/flash-attention
#       PR #2605's Blackwell forward benchmark times cuDNN at 0.80-1.06x FlashAttention-4's (head dim 64, non-causal:
#       0.28 against 0.35 ms at B32 S1024, 0.98 against 0.98 at B8 S4096, 3.80 against 3.59 at B2 S16384).
# approximation: the proxies' spread is that of those measurements; other tables (triton, TensorRT-LLM's own FMHA)
# time no kernel PyTorch runs, and a device without a table (A100) stays on the roofline.
SDPA_KERNELS = {
    "fa2": "FlashAttention-2, as PyTorch's SDPA runs it",
    "fa3": "FlashAttention-3, a proxy for the cuDNN attention PyTorch's SDPA runs on Hopper",
    "fa4": "FlashAttention-4, a proxy for the cuDNN attention PyTorch's SDPA runs on Blackwell",
}


def sdpa_table_label(kernel_sources: str) -> str | None:
    """The source label of a traced SDPA timed from an encoder_attention table of these kernel sources (its
    provenance's `kernel_sources`, e.g. "vllm_vit_flash_attn_fa3"), or None where the table times no kernel in
    SDPA_KERNELS."""
    tokens = set(str(kernel_sources).split("_"))
    found = [key for key in SDPA_KERNELS if key in tokens]
    return f"encoder_attention ({SDPA_KERNELS[found[0]]})" if len(found) == 1 else None


def kernel_time(roofline: Roofline, kernel: Kernel, precision: str) -> tuple[float, str, str]:
    """(seconds, bound, source) of one run of the kernel."""
    moved = kernel.bytes_read + kernel.bytes_written
    source = "roofline"
    measured_s = _measured_gemm_s(roofline, kernel, precision)
    label = f"gemm{' (conv as implicit GEMM)' if 'conv' in kernel.aten else ''}"
    if measured_s is None:
        measured_s, label = _measured_attention_s(roofline, kernel, precision)
    if measured_s is not None:
        plain = roofline.cost(kernel.matmul_flops, kernel.vector_flops, moved, precision, 1, kind=kernel.kind)
        table = roofline.table_roofline  # the tables' device (a sibling's, where it stands in)
        own = plain if table is roofline else table.cost(kernel.matmul_flops, kernel.vector_flops, moved, precision,
                                                         1, kind=kernel.kind)
        factor = measured_s / max(own.compute_s, own.memory_s, 1e-300)
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


def _measured_attention_s(roofline: Roofline, kernel: Kernel, precision: str) -> tuple[float | None, str]:
    """(the non-causal attention table's seconds, its label) for a traced SDPA kernel, or (None, ""): only a
    non-causal MHA kernel (query length = key length, heads = KV heads, one head dim) in 16-bit, on a device whose
    table times a kernel of SDPA_KERNELS."""
    shape = kernel.attention
    if roofline.measured is None or shape is None or GEMM_TABLE_DTYPES.get(precision) != "bf16":
        return None, ""
    batch, heads, kv_heads, q_len, kv_len, head_dim, value_dim, causal = shape
    if causal or q_len != kv_len or heads != kv_heads or head_dim != value_dim:
        return None, ""
    table = roofline.measured.kernels.tables.get("encoder_attention")
    label = None if table is None else sdpa_table_label(table.provenance.get("kernel_sources", ""))
    if label is None:
        return None, ""
    time_at = roofline.measured.lookup(("encoder_attention", head_dim, heads))[0]
    return _one_point_s(time_at, batch, q_len, None), label


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
