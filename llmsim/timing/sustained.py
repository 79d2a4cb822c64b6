"""Sustained clocks: a long compute-bound pass runs slower than short kernel benchmarks time its kernels.

A GPU at full tensor-core load draws more power than its limit allows for long, so its firmware lowers
the SM clock once the load has lasted a few milliseconds (flashinfer-ai/flashinfer PR #2899, B200: SM
clock 1965 -> about 1580 MHz, FlashAttention-4 at 1450 TFLOPS falling to 1237 once fully throttled).
Kernel benchmarks time short bursts at boost clock: aiconfigurator's collector runs 3 warm-ups and 6
timed runs of one kernel (ai-dynamo/aiconfigurator collector/helper.py, benchmark_with_power; the GEMM
collectors keep num_runs=6), and the achievable fractions of the hardware files come from short matmul
benchmarks too. A prefill pass of tens to hundreds of milliseconds of GEMMs and attention runs its
compute-bound kernels at the throttled rate once past the onset:

    extra_s = max(0, C - onset_s) * (1 / fraction - 1)     # C: the pass's compute-bound seconds

and each compute-bound op of the pass takes its share: its compute part times 1 + extra_s / C (so the
per-op table still sums to the pass). The hardware file's [sustained] section holds fraction (sustained
over boost throughput of compute-bound work) and onset_s, each with its source; a device without one is
not throttled. ExecutionOptions.clock="boost" (or efficiency="peak") switches it off.

approximation: every prefill pass starts at boost clock and drops at once at the onset (measured: the
drop spreads over a few tens of milliseconds, and a pass right after another may start throttled);
memory-bound, host-bound and communication time is unchanged (the HBM clock is not lowered); decode steps
are not throttled (memory-bound, below the power limit); the compute part of an op is all of its kernel
time where its compute term bounds it (Roofline.time), none of it otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def sustained_extra_s(compute_bound_s: Any, fraction: float, onset_s: float) -> Any:
    """extra_s of a pass with compute_bound_s (C) seconds of compute-bound work: max(0, C - onset_s) *
    (1 / fraction - 1) (arrays: per point)."""
    # shape: C [*points] -> extra_s [*points]
    if np.ndim(compute_bound_s):
        return np.maximum(np.asarray(compute_bound_s, dtype=float) - onset_s, 0.0) * (1.0 / fraction - 1.0)
    return sustained_extra_one_s(float(compute_bound_s), fraction, onset_s)


def sustained_extra_one_s(compute_bound_s: float, fraction: float, onset_s: float) -> float:
    """sustained_extra_s of one pass (a Python float; no numpy call, for a serving step)."""
    c = compute_bound_s
    return (c - onset_s) * (1.0 / fraction - 1.0) if c > onset_s else 0.0


def sustained_scale(compute_bound_s: Any, fraction: float, onset_s: float) -> Any:
    """The factor each compute-bound op's compute part of a pass takes: 1 + extra_s / C, where C is the
    pass's compute-bound seconds (arrays: per point; 1.0 where C <= onset_s)."""
    # shape: C [*points] -> scale [*points]
    extra = sustained_extra_s(compute_bound_s, fraction, onset_s)
    if np.ndim(compute_bound_s):
        return 1.0 + extra / np.maximum(np.asarray(compute_bound_s, dtype=float), 1e-300)
    return 1.0 + extra / float(compute_bound_s) if extra else 1.0


def throttled_parts(time_s: Any, compute_s: Any, scale: Any) -> tuple[Any, Any]:
    """(time, compute part) of one op (or a phase's sums) with its compute part stretched by `scale`."""
    if type(scale) is float and scale == 1.0:
        return time_s, compute_s
    extra = compute_s * (scale - 1.0)
    return time_s + extra, compute_s + extra
