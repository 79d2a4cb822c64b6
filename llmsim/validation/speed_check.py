"""Is this machine as fast right now as the calibrated hardware file says?

`validate` on a file that `calibrate` wrote on this machine times one reference matmul before its cases and
after them, x[256, K] @ W[N, K] (compute-bound, at a point of the file's matmul_rows grid), measured as
calibrate measures (process CPU time on one thread, copies of W cycled through calibrate's pool, median of the
repeats), and compares it with llmsim's own prediction of it from the file. The ratio predicted / measured is
the machine's speed against its calibration: 1.0 when it runs as calibrated, 0.9 when it runs 10 % slower.

Why: on a shared 2-core guest (an AMD EPYC) the same held-out prefill cases, predicted with the same calibrated
file, measured 13.0 % faster than predicted in one session and 1.9 % in the next (validation/README.md,
"Another machine"): the machine's speed moved between calibrate and validate, and the load average did not
show it. A report's errors then include that drift; this check measures it.

Approximation: one compute-bound point. A memory-bound probe (x[1, K] @ W) was tried and left out: timed alone it
read 1.05-1.20x right after a fresh calibration, and calibrate's own way (every M taking turns) read the same
point anywhere from 1.01 to 1.06x a minute apart (M = 2 and 4: 0.88-1.31x), so it could not tell drift from the
method and the noise of memory-bound calls on a shared host.
"""

from __future__ import annotations

from statistics import median

from ..hardware.spec import HardwareSpec

PROBE_ROWS = 256  # M of x[M, K] @ W[N, K]: compute-bound on a CPU
# |speed - 1| above which validate warns: on the guest above at idle, 16 checks against two calibrated files (one
# minutes old) read 0.97-1.01x, and the shift that motivated the check was 7-13 %
DRIFT_WARN = 0.05
_REPEATS, _WARMUP = 15, 2


def probe_shape(hardware: HardwareSpec, precision: str) -> tuple[int, int, int] | None:
    """(M, K, N) of the reference matmul at a measured point of the file's matmul_rows grid for `precision`:
    K the reference depth of its matmul_depth table (where every ratio is 1.0; 2048 without one, the K of
    calibrate's CPU tables), N = 1024 (a width of every calibrate grid) or the table's first, M = 256 or the
    table's largest. None when the file has no matmul_rows table for `precision` (nothing calibrated)."""
    rows = hardware.matmul_rows.get(precision)
    if rows is None:
        return None
    k = 2048
    depth = hardware.matmul_depth.get(precision)
    if depth is not None:
        unit = [d for d, line in zip(depth.depths, depth.fraction) if all(abs(f - 1.0) < 1e-9 for f in line)]
        k = unit[0] if unit else k
    cols = list(rows.cols or [1024])
    n = 1024 if 1024 in cols else int(cols[0])
    m = PROBE_ROWS if PROBE_ROWS in rows.rows else int(max(rows.rows))
    return m, int(k), n


def machine_speed(hardware: HardwareSpec, device: str, dtype: str) -> float | None:
    """llmsim's predicted time of the reference matmul on `hardware` over its measured time here (1.0: as
    calibrated; below 1: slower). None when the file has no matmul_rows table for `dtype`."""
    from ..analysis.one_op import op_cost
    from ..dtypes import MATMUL_PRECISION
    from ._device import require_torch, time_call, torch_dtype
    from .calibrate import _cycled, _matmul_shapes

    shape = probe_shape(hardware, MATMUL_PRECISION[dtype])
    if shape is None:
        return None
    m, k, n = shape
    torch = require_torch()
    tdtype = torch_dtype(dtype)
    gen = torch.Generator(device=device).manual_seed(3)
    first = torch.randn(n, k, device=device, dtype=tdtype, generator=gen)
    pool_bytes = _matmul_shapes(device, quick=False)[3]  # calibrate's W pool: W comes from memory, as there
    weights = [first] + [first.clone() for _ in range(max(2, -(-pool_bytes // (n * k * first.element_size()))) - 1)]
    x = torch.randn(m, k, device=device, dtype=tdtype, generator=gen)
    with torch.inference_mode():
        times = time_call(lambda w: torch.nn.functional.linear(x, w), device, _REPEATS, _WARMUP,
                          setup=_cycled(weights))
    weights.clear()
    # overhead="none": calibrate's table points are the kernel's time alone (dispatch is its own entry)
    predicted = op_cost("matmul", hardware, dtype, m=m, n=n, k=k, engine="transformers", overhead="none").time_s
    return round(predicted / median(times), 4)


def drift_warning(hardware: HardwareSpec, before: float | None, after: float | None = None) -> str | None:
    """A one-line warning when the check before or after the cases is more than DRIFT_WARN away from the
    calibrated speed; None otherwise."""
    checks = {"before the cases": before, "after them": after}
    read = {when: speed for when, speed in checks.items() if speed is not None}
    if not any(abs(speed - 1.0) > DRIFT_WARN for speed in read.values()):
        return None
    words = " and ".join(f"{speed:.2f}x {when}" for when, speed in read.items())
    return (f"warning: this machine ran llmsim's reference matmul (x[256, K] @ W) at {words}, against the speed "
            f"hardware {hardware.name!r} was calibrated at (1.00x; more than {DRIFT_WARN:.0%} off): the errors "
            "include this drift; "
            f"calibrate again (`llmsim calibrate --out FILE`) just before validating, on a quiet machine")
