"""A traced kernel's time on the device: the roofline (timing.roofline) with the hardware file's shape
curves, or a measured GEMM table where the engine has one for the device and the kernel is a 2-D matrix
product (mm/addmm) or a convolution read as its implicit GEMM (M = N * output pixels, N = Cout,
K = Cin * kernel area; groups = 1, not transposed).

As for LLM ops (timing.measured): a measured kernel's compute and memory terms are both scaled by
measured / roofline time, so its time is the table's and its bound the larger roofline term.
approximation: a convolution timed from a GEMM table runs as fast as the GEMM of its implicit shape
(cuDNN's implicit-GEMM kernels; no convolution tables ship).
"""

from __future__ import annotations

import numpy as np

from ..timing.roofline import OpCost, Roofline
from .kernels import Kernel

GEMM_TABLE_DTYPES = {"bf16": "bf16", "fp16": "bf16"}  # matmul precision -> the GEMM table read (fp16: bf16's)


def kernel_time(roofline: Roofline, kernel: Kernel, precision: str) -> tuple[float, str, str]:
    """(seconds, bound, source) of one run of the kernel."""
    moved = kernel.bytes_read + kernel.bytes_written
    source = "roofline"
    measured_s = _measured_gemm_s(roofline, kernel, precision)
    if measured_s is not None:
        plain = roofline.cost(kernel.matmul_flops, kernel.vector_flops, moved, precision, 1, kind=kernel.kind)
        factor = measured_s / max(plain.compute_s, plain.memory_s, 1e-300)
        cost = OpCost(compute_s=plain.compute_s * factor, memory_s=plain.memory_s * factor, launches=1)
        source = f"{roofline.measured.kernels.engine} gemm" + (" (conv as implicit GEMM)" if "conv" in kernel.aten
                                                                 else "")
    elif kernel.gemm is not None:
        rows, cols, depth = kernel.gemm
        cost = roofline.cost(kernel.matmul_flops, kernel.vector_flops, moved, precision, 1, kind=kernel.kind,
                             rows=rows, cols=cols, depth=depth)
    else:
        cost = roofline.cost(kernel.matmul_flops, kernel.vector_flops, moved, precision, 1, kind=kernel.kind)
    op_time = roofline.time(cost)
    parts = {"compute": op_time.compute_part_s, "memory": op_time.memory_part_s, "overhead": op_time.overhead_part_s}
    return float(op_time.time_s), max(parts, key=parts.get), source


def _measured_gemm_s(roofline: Roofline, kernel: Kernel, precision: str) -> float | None:
    """The measured GEMM table's seconds for the kernel's (M, N, K), or None where none covers it."""
    table_dtype = GEMM_TABLE_DTYPES.get(precision)
    if roofline.measured is None or kernel.gemm is None or table_dtype is None:
        return None
    time_at = roofline.measured.lookup(("gemm", table_dtype))[0]
    if time_at is None:
        return None
    rows, cols, depth = kernel.gemm
    seconds = float(np.asarray(time_at(np.asarray([float(rows)]), np.asarray([float(cols)]),
                                       np.asarray([float(depth)]))).reshape(-1)[0])
    return seconds if np.isfinite(seconds) and seconds > 0 else None
