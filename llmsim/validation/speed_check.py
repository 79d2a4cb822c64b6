"""Is this machine as fast right now as the calibrated hardware file says?

`validate` on a file that `calibrate` wrote on this machine times two reference matmuls before its cases
and after them, and compares each with llmsim's own prediction of it from the file: one compute-bound
(x[256, K] @ W[N, K]), one that streams its weight from memory (x[1, K] @ W[N, K]), at a point of the
file's matmul_rows grid, measured as calibrate measured it (process CPU time on one thread, copies of W
cycled through calibrate's pool, median of the repeats). The ratio predicted / measured is the machine's
speed against its calibration: 1.0 when it runs as calibrated, 0.9 when it runs 10 % slower.

Why: on a shared 2-core guest (an AMD EPYC) the same held-out prefill cases, predicted with the same
calibrated file, measured 13.0 % faster than predicted in one session and 1.9 % in the next
(validation/README.md, "Another machine"): the machine's speed moved between calibrate and validate, and
the load average did not show it. A report's errors then include that drift; this check measures it.
"""

from __future__ import annotations

from statistics import median

from ..hardware.spec import HardwareSpec

# the two probes: rows M of x[M, K] @ W[N, K]
PROBES: dict[str, int] = {"compute": 256, "memory": 1}
# |speed - 1| above which validate warns. On the guest above at idle, five checks in a row against one
# calibrated file read the compute probe at 0.98-1.01 and the memory probe at 1.11-1.20 (its 0.5 ms calls
# stream W from DRAM, which neighbours share; the file's own point came from a noisier minute): 10 % is
# beyond the check's own scatter.
DRIFT_WARN = 0.10
_REPEATS, _WARMUP = 15, 2


def probe_shape(hardware: HardwareSpec, precision: str) -> tuple[int, int, int] | None:
    """(K, N, M of the compute probe) at a measured point of the file's matmul_rows grid for `precision`:
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
    m = PROBES["compute"] if PROBES["compute"] in rows.rows else int(max(rows.rows))
    return int(k), int(n), int(m)


def machine_speed(hardware: HardwareSpec, device: str, dtype: str) -> dict[str, float] | None:
    """{"compute": ratio, "memory": ratio}: llmsim's predicted time of each probe on `hardware` over its
    measured time here (1.0: as calibrated). None when the file has no matmul_rows table for `dtype`."""
    from ..analysis.one_op import op_cost
    from ..dtypes import MATMUL_PRECISION
    from ._device import require_torch, time_call, torch_dtype
    from .calibrate import _cycled, _matmul_shapes

    shape = probe_shape(hardware, MATMUL_PRECISION[dtype])
    if shape is None:
        return None
    k, n, m_compute = shape
    torch = require_torch()
    tdtype = torch_dtype(dtype)
    gen = torch.Generator(device=device).manual_seed(3)
    first = torch.randn(n, k, device=device, dtype=tdtype, generator=gen)
    pool_bytes = _matmul_shapes(device, quick=False)[3]  # calibrate's W pool: W streams from memory
    copies = max(2, -(-pool_bytes // (n * k * first.element_size())))
    weights = [first] + [first.clone() for _ in range(copies - 1)]
    next_weight = _cycled(weights)
    speed = {}
    with torch.inference_mode():
        for probe, m in (("compute", m_compute), ("memory", PROBES["memory"])):
            x = torch.randn(m, k, device=device, dtype=tdtype, generator=gen)
            times = time_call(lambda w, x=x: torch.nn.functional.linear(x, w), device, _REPEATS, _WARMUP,
                              setup=next_weight)
            # overhead="none": calibrate's table points are the kernel's time alone (dispatch is its own entry)
            predicted = op_cost("matmul", hardware, dtype, m=m, n=n, k=k, engine="transformers",
                                overhead="none").time_s
            speed[probe] = round(predicted / median(times), 4)
    weights.clear()
    return speed


def drift_warning(hardware: HardwareSpec, before: dict[str, float] | None,
                  after: dict[str, float] | None = None) -> str | None:
    """A one-line warning when either check (before or after the cases) puts either probe more than
    DRIFT_WARN away from the calibrated speed; None otherwise."""
    checks = [c for c in (before, after) if c]
    if not any(abs(v - 1.0) > DRIFT_WARN for c in checks for v in c.values()):
        return None

    def words(check: dict[str, float]) -> str:
        return ", ".join(f"{probe} {value:.2f}x" for probe, value in check.items())

    when = f"before the cases {words(before)}" if before else ""
    if after:
        when += ("; " if when else "") + f"after them {words(after)}"
    return (f"warning: this machine runs llmsim's reference matmuls at a speed other than hardware "
            f"{hardware.name!r} was calibrated at ({when}; 1.00x: as calibrated, compute: x[256, K] @ W, memory: "
            f"x[1, K] @ W): the errors include this drift; calibrate again (`llmsim calibrate --out FILE`) just "
            f"before validating, on a quiet machine")


