"""The exact decode sum: the time of every decode step, summed in closed form.

Decode step i (i = 1 .. gen_len - 1) runs with kv_len = prompt_len + i - 1 cached tokens. Number the
steps by their offset x = kv_len - first_kv_len, x = 0 .. steps - 1; an op's total over the phase is

    total = count * sum over x = 0 .. steps - 1 of t(x)        t(x): the time of one run at offset x

1. Its quantities are affine in x. An op's FLOPs and bytes grow linearly with the keys a step attends
   to, until a sliding window of W keys is full (W - 1 cached); from then on they stay constant:

       u(x) = min(x, W - 1 - first_kv_len)        (u = x without a window: W = inf)
       q(x) = q0 + qs * u(x)                      q0 = q(first_kv_len), qs = q(first_kv_len + 1) - q0

   so the graph is evaluated at two kv_lens only, [first_kv_len, first_kv_len + 1] on a trailing pair
   axis (see phases.decode_totals), which gives every quantity's q0 and slope qs at once.
2. So its time is piecewise affine in x. One run's compute and memory times are linear in its
   quantities, and its host dispatch is constant:

       compute_s(u) = c0 + cs * u        memory_s(u) = m0 + ms * u

   Roofline.time combines them with max and +: max(compute, memory) or compute + memory for the
   kernel, plus launches, or the longer of kernel + launches and host dispatch (eager on a GPU). A max of
   affine functions is affine between the points where its arguments cross, so t(x) is piecewise affine,
   with breakpoints where
     - two terms cross: compute = memory, or compute or memory meets host dispatch (Roofline.crossings);
     - the window fills: x = W - 1 - first_kv_len (after it, t is constant).
3. The trapezoid rule is exact on each affine piece. Cutting 0 .. steps - 1 after floor(cut) at every
   breakpoint (`segments`) leaves integer segments lo .. hi of n = hi - lo + 1 steps, each inside one
   affine piece. The mean of an arithmetic sequence is the mean of its ends, so

       sum over x = lo .. hi of t(x) = n * (t(lo) + t(hi)) / 2

   with no error; FLOPs and bytes are summed the same way. Empty segments have n = 0.

No step is sampled or skipped, the work does not grow with gen_len, and a sweep of a million points stays
one vectorised evaluation. tests/test_fast_paths.py checks the sum against the step-by-step one.
Collectives never depend on kv_len (they are summed as steady ops), so these ops communicate nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .op_fields import PhaseGraph, kernel_coords, matmul_rows_cols, quantities
from .op_totals import NOT_COMMUNICATION, parts_of
from .roofline import OpCost, Roofline
from .stacking import CHUNK_VALUES, broadcast_block, put, put_zeros


def trapezoid_totals(roofline: Roofline, graph: PhaseGraph, indices: list[int], L0: Any, steps: Any,
                     per_op: dict[str, list[Any]], ndim: int) -> None:
    """Sums over the decode steps of ops whose quantities change with kv_len, all ops in one evaluation
    along a leading op axis."""
    chunk = graph.fixed.chunk(indices)
    columns = chunk.columns
    # each quantity at kv_len = [L0, L0 + 1] on a trailing pair axis (of length 1 where no op of the chunk
    # changes it): value and slope per step
    q = quantities(graph.values, indices, ndim + 1)  # 3 x [op, *workload axes, pair]
    base, slopes = [x[..., 0] for x in q], [x[..., -1] - x[..., 0] for x in q]  # q0, qs: [op, *workload axes]
    rows, cols = matmul_rows_cols(roofline, graph, indices, columns, ndim + 1)
    rows, cols = (None, None) if rows is None else (rows[..., 0], cols[..., 0])
    # approximation: a matmul keeps the row fraction of its first step's rows (decode: the batch, but the
    # latent expansion of mla="expand"), and an element-wise op whose size grows with kv_len (a concatenated
    # cache) the bandwidth fraction of its first step's size, so that its time stays affine and sums exactly
    # approximation: an op timed from a measured table (decode attention) keeps the ratio of measured to
    # roofline time at the steps' mean (window-clamped) kv_len on every step, so that too stays affine: the
    # phase's sum is exact where the measured time is affine in the clamped kv_len
    clamp = (chunk.lifted(chunk.windows, ndim) - 1) - L0  # W - 1 - first_kv_len: [op, *workload axes]
    measured = _middle_step_scale(roofline, graph, indices, columns, ndim, q, clamp, steps)
    cost0 = roofline.costs(columns, *base, rows, base[2], cols=cols, measured=measured)  # no collectives here
    cost1 = roofline.costs(columns, *(x[..., -1] for x in q), rows, base[2], cols=cols, measured=measured)
    c0, m0 = cost0.compute_s, cost0.memory_s
    cs, ms = cost1.compute_s - c0, cost1.memory_s - m0  # compute_s(u) = c0 + cs * u; memory_s(u) = m0 + ms * u
    # offsets x = kv_len - first_kv_len in [0, steps - 1]; a window stops growth at W - 1 cached (clamp)
    launches = roofline.rates(columns, ndim)[3]
    ends, n = segments([clamp, *roofline.crossings(c0, cs, m0, ms, launches)], steps)
    counts = chunk.lifted(chunk.counts, n.ndim - 2)  # n: op axis, workload axes, segments
    u = [np.minimum(end, clamp[..., None], out=end) for end in ends]  # each segment's first and last offset, clamped

    def parts_at(u: np.ndarray) -> tuple[np.ndarray, ...]:
        """PARTS but communication of one run at clamped offsets u (segment axis last), each affine in u."""
        return parts_of(roofline.time(OpCost(c0[..., None] + cs[..., None] * u, m0[..., None] + ms[..., None] * u,
                                             launches[..., None])))[:-1]

    def quantity_at(value: np.ndarray, slope: np.ndarray, u: np.ndarray) -> np.ndarray:
        # q(u) = q0 + qs * u: [op, *workload axes, segment]
        return value[..., None] + slope[..., None] * u

    def summed(first: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Each affine piece summed over its n integer offsets by the trapezoid rule: n * (first + last) / 2."""
        # [op, *workload axes, segment] -> [op, *workload axes]
        return counts * (n * (first + last) / 2.0).sum(axis=-1)

    if u[0].size > CHUNK_VALUES:  # a large sweep: one quantity at a time (no stacked copies)
        totals: Any = [summed(a, b) for a, b in zip(parts_at(u[0]), parts_at(u[1]))]
        totals += [summed(quantity_at(v, slope, u[0]), quantity_at(v, slope, u[1])) for v, slope in zip(base, slopes)]
    else:  # every quantity at both ends in one stack: quantities, ends, op axis, workload axes, segments
        both = np.array(u)
        block = broadcast_block(parts_at(both) + tuple(quantity_at(v, slope, both) for v, slope in zip(base, slopes)))
        totals = summed(block[:, 0], block[:, 1])
    put(per_op, NOT_COMMUNICATION, indices, totals)
    put_zeros(per_op, "communication_s", indices, totals[0])


def segments(cuts: list[Any], steps: Any) -> tuple[list[np.ndarray], np.ndarray]:
    """Integer segments of offsets 0..steps-1 split after floor(cut) for every cut.

    Returns ([first offset, last offset], count), each with a trailing segment axis; empty segments have
    count 0. E.g. steps = 10, cuts = [3.5, inf]: segments 0..3 and 4..9 (counts 4 and 6) and an empty one.
    """
    last = np.asarray(steps, dtype=float) - 1.0

    def floored(cut: np.ndarray) -> np.ndarray:  # the last offset before the cut, in [-1, last]
        return np.clip(np.floor(np.where(np.isfinite(cut), cut, 1e300)), -1.0, last)

    # inner: the cuts' last offsets, sorted: [*shape, cut]
    if last.ndim == 0 and all(np.shape(c) == np.shape(cuts[0]) for c in cuts):  # one workload: all cuts at once
        inner = floored(np.concatenate([c[..., None] for c in cuts], axis=-1))
    else:  # a sweep: each cut floored at its own (maybe smaller) shape, then broadcast
        inner = np.concatenate([f[..., None] for f in np.broadcast_arrays(*map(floored, cuts))], axis=-1)
    inner.sort(axis=-1)
    shape = inner.shape[:-1]
    # bounds: -1, the cuts, last: [*shape, cut + 2]; segment k is bounds[k] + 1 .. bounds[k + 1]
    bounds = np.concatenate([np.full((*shape, 1), -1.0), inner, np.full((*shape, 1), last[..., None])], axis=-1)
    lo = bounds[..., :-1] + 1.0
    hi = bounds[..., 1:]
    count = np.maximum(hi - lo + 1.0, 0.0)
    hi = np.maximum(hi, lo)  # empty segments evaluate at a harmless point; their count is 0
    return [lo, hi], count


def mean_clamped_offset(steps: Any, clamp: Any) -> Any:
    """The mean of u(x) = min(x, c) over x = 0 .. n - 1 (n = steps, c = clamp >= 0; c past n - 1: (n - 1) / 2),
    numpy arrays or floats alike (the scalar fast path reads the same numbers):

        (c (c + 1) / 2 + (n - 1 - c) c) / n,    c = min(max(clamp, 0), n - 1)"""
    if isinstance(steps, np.ndarray) or isinstance(clamp, np.ndarray):
        c = np.minimum(np.maximum(clamp, 0.0), steps - 1)
        return (c * (c + 1) / 2 + (steps - 1 - c) * c) / np.maximum(steps, 1.0)
    c = min(max(clamp, 0.0), steps - 1)
    return (c * (c + 1) / 2 + (steps - 1 - c) * c) / max(steps, 1.0)


def _middle_step_scale(roofline: Roofline, graph: PhaseGraph, indices: list[int], columns: Any, ndim: int,
                       q: list[np.ndarray], clamp: np.ndarray, steps: Any) -> np.ndarray | None:
    """measured_scale of the ops at the decode steps' mean clamped offset (None when no table covers one)."""
    x, y = kernel_coords(roofline, graph, indices, columns, ndim + 1)
    if x is None:
        return None
    # the mean clamped offset over the steps, where the op's roofline time is its mean (it is affine in the
    # clamped offset u(x) = min(x, c)): sum over x = 0 .. n - 1 of min(x, c) = c (c + 1) / 2 + (n - 1 - c) c for
    # c <= n - 1, else n (n - 1) / 2; so the scale read there makes the phase's sum n x the measured time at that
    # offset (exact where the measured time is affine in u). The plain middle (n - 1) / 2, clamped, left a window
    # that fills part-way through at a scale from its growing part on its flat part: Gemma-3-1B's sliding
    # attention 13 % under its every step. [op, *workload axes]
    u = mean_clamped_offset(np.asarray(steps, dtype=float), clamp)

    def at_middle(v: np.ndarray) -> np.ndarray:  # v at offsets (0, 1) on the trailing pair axis -> v(u)
        return v[..., 0] + (v[..., -1] - v[..., 0]) * u

    return roofline.measured_scale(columns, *(at_middle(v) for v in q), at_middle(x), at_middle(y), ndim)
