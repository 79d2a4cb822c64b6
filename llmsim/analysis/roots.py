"""Several bracketed sign changes at once: one vectorised evaluation per round serves every root.

find_crossover solves, for a phase and for each op that flips, g(x) = 0 on the continuous model. With
measured kernel tables g jumps at its root (an op's measured time is booked to the bound its roofline
terms give: compute_s - memory_s goes from -t to +t), so secant-type methods (brentq's included) fall
back to bisection, one evaluation per bit. But the model evaluates a whole array of x in little more
than the time of one x (its cost is fixed overhead per op, not per point), so here every round places
many points in every root's bracket and keeps the cell where the sign changes: about 10 bits per round
instead of one. Stops, as scipy.optimize.brentq does, once the bracket is within xtol + rtol * |x|
(the result: the bracket's midpoint).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# points per round, shared among the unfinished roots (the model's cost grows slowly up to about here)
POINTS_PER_ROUND = 128


def bracketed_roots(values: Callable[[np.ndarray], np.ndarray], lo: float, hi: float, f_lo: np.ndarray,
                    f_hi: np.ndarray, xtol: float = 1e-9, rtol: float = 1e-12, max_rounds: int = 60) -> np.ndarray:
    """x[j] in [lo, hi] where function j changes sign, for every j at once.

    values(x): the matrix [function j, point i] of every function at every point of x. f_lo, f_hi: each
    function at lo and at hi, of opposite signs (or zero: that end is the root). Where a function changes
    sign more than once, the lowest change found is kept.
    """
    f_lo, f_hi = np.asarray(f_lo, dtype=float), np.asarray(f_hi, dtype=float)
    if np.any(np.sign(f_lo) * np.sign(f_hi) > 0):
        raise ValueError("each bracket needs values of opposite signs at its ends")
    n = len(f_lo)
    a, b = np.full(n, float(lo)), np.full(n, float(hi))
    sign_a = np.sign(f_lo)  # the sign at each bracket's lower end
    root = np.where(f_lo == 0, a, np.where(f_hi == 0, b, np.nan))
    for _ in range(max_rounds):
        open_ = np.isnan(root) & (b - a > xtol + rtol * np.maximum(np.abs(a), np.abs(b)))
        if not open_.any():
            break
        # one set of interior points per distinct bracket (all roots share the first one)
        brackets = sorted({(a[j], b[j]) for j in np.flatnonzero(open_)})
        m = max(POINTS_PER_ROUND // len(brackets), 8)
        grids = {ab: np.linspace(ab[0], ab[1], m + 2)[1:-1] for ab in brackets}
        where: dict[tuple[float, float], slice] = {}
        start = 0
        for ab, grid in grids.items():
            where[ab] = slice(start, start + len(grid))
            start += len(grid)
        matrix = np.asarray(values(np.concatenate(list(grids.values()))), dtype=float)
        for j in np.flatnonzero(open_):
            ab = (a[j], b[j])
            grid, signs = grids[ab], np.sign(matrix[j, where[ab]])
            zero = np.flatnonzero(signs == 0)
            change = np.flatnonzero(signs != sign_a[j])  # the first point past the sign change
            if zero.size and (not change.size or zero[0] <= change[0]):
                root[j] = grid[zero[0]]
                continue
            k = change[0] if change.size else len(grid)
            a[j] = grid[k - 1] if k > 0 else a[j]
            b[j] = grid[k] if k < len(grid) else b[j]
    return np.where(np.isnan(root), 0.5 * (a + b), root)
