"""calibrate(): measure this device with PyTorch and return a HardwareSpec (optionally a TOML file).

What is measured (every figure: warm-up, then the median of N timed repeats, on a CPU with one thread (the
default) of the process's CPU time, which leaves out its waits for a core on a shared machine; the spread
(p90 - p10) / median, the thread count, the clock and the versions go into each source string). On CUDA the device
ceilings below (matrix, bandwidth, vector, matmul_rows, elementwise_bytes) are timed with a spin kernel
queued ahead of the start event, so they hold the kernels' own time without the host's launch latency,
which the overhead figures at the end measure separately:

- matrix_flops_per_s.<fp32|bf16|fp16>: square torch.matmul at a few sizes, 2*N^3 FLOPs per call; the
  best size's median is stored as the peak and efficiency.matmul is 1.0 (the measured rate is what
  PyTorch achieves, so no further derating).
- memory.bandwidth_bytes_per_s: a large tensor copy (far larger than the last-level cache), bytes read
  + bytes written per second; efficiency.memory = 1.0 for the same reason.
- vector_flops_per_s.fp32 / fp16: the element-wise ops a transformer runs (SiLU, tanh-GELU, softmax,
  the RMSNorm sequence), timed on tensors that stay in the last-level cache so the arithmetic rate, not
  DRAM, is measured; FLOPs counted with llmsim's nominal per-element figures (SiLU 4, GELU 8, softmax 5,
  RMSNorm 4), so predictions use the rate in the same units. fp16 holds the bfloat16 rate when bfloat16
  is calibrated (llmsim reads the fp16 vector figure for both 16-bit types).
- matmul_rows.<precision>: y = x[M, K] @ W^T with W[N, K] stored as nn.Linear stores it (the layout
  changes which kernel runs: bfloat16 GEMV on a CPU is 2x slower with W[K, N]) for M = 1, 2, 4, ...
  and output widths N from 1024 to 65536 (several copies of W cycled so that W comes from memory, not a
  cache, as the weights of a decode step do): the fraction of the roofline (max of 2MKN FLOPs at the
  measured matrix rate and the bytes of W, x and y at the measured copy bandwidth) each shape reaches.
  Thin shapes (decode) fall well short of a square matmul; on this repository's CPU wide outputs (an LM
  head) reach ~0.6 of it at large M where N = 1024 reaches ~0.9.
- matmul_rows_in_out.<precision>: the same for torch.matmul(x, W[K, N]) (weights stored [in, out], as
  GPT-2's Conv1D and gpt-oss's experts store them), N up to 16384.
- matmul_depth.<precision>: how those fractions change with the inner dimension K (F.linear at one width,
  K from 512 to 16384 on a CPU), as a ratio to the K of the tables, by M, each entry the median of ratios
  paired within a round.
  The shapes of each matmul table take turns (one call each per round, `_take_turns`), so a slow spell of
  a shared machine falls on a round of many shapes, which their medians outlast, not on all repeats of one.
- elementwise_bytes.<fp32|fp16>: torch.mul(a, b) into a new output, as eager PyTorch runs every
  element-wise op, at tensor sizes from 64 KiB to far beyond the caches: the fraction of the copy
  bandwidth reached at each size (bytes moved per run = 2 reads + 1 write), with the inputs cycled
  through a pool beyond the last-level cache and, on a CPU with glibc, the output on fresh pages (as in
  an eager model, where outputs page-fault in: well below 1 on this repository's CPU).
- memory.capacity_bytes: /proc/meminfo MemTotal (CPU) or torch.cuda.mem_get_info total (CUDA).
- overhead.eager_dispatch_s: one tiny op (1-element add) in eager PyTorch, from a loop of many.
- overhead.kernel_launch_s: CUDA only, a tiny op plus a synchronisation minus the synchronisation
  alone (0 on a CPU, where ops run on the host thread); graph_replay_per_kernel_s: CUDA-graph replay
  of many tiny kernels, per kernel (0 on a CPU).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import LlmsimError
from ..hardware.spec import HardwareSpec, hardware_from_dict, plausible_range
from ._device import (
    BUSY_WAIT_SHARE,
    check_device,
    cpu_clock,
    device_name,
    device_vendor,
    load_average,
    median,
    release_free_memory,
    spread,
    synchronize,
    time_call,
    torch_dtype,
    torch_threads,
    versions,
    waited_share,
)

_PRECISION = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
# llmsim's nominal vector FLOPs per element (cost/blocks/, cost/formulas/) of the ops in the vector mix
_VECTOR_MIX = {"silu": 4, "gelu_tanh": 8, "softmax": 5, "rmsnorm": 4}


class _Measure:
    """One measured figure: the value, how it was taken, and the timings behind it."""

    def __init__(self, value: float, how: str, times: Sequence[float], n: int | None = None) -> None:
        self.value, self.how, self.times = value, how, list(times)
        self.n = n if n is not None else len(self.times)


def calibrate(device: str = "cpu", dtypes: Sequence[str] = ("float32", "bfloat16"), out: str | Path | None = None,
              quick: bool = False, name: str | None = None, dispatch: str = "hf",
              threads: int | None = 1, progress: bool = False) -> HardwareSpec:
    """Measure `device` ("cpu" or "cuda") and return its HardwareSpec; write it as TOML to `out` if given.

    quick=True uses smaller sizes and fewer repeats (a few seconds on a small CPU; for tests; a square-matmul size
    whose calls would take over 10 s at the rate measured so far is skipped, as bf16 without bf16 instructions): a
    smoke test, not a calibration to validate with. Its matmul tables stop at K = 512 and N = 1024, so an LM head's
    width is read far beyond them: on an AMD EPYC guest gpt2 (2 layers) validated at -21 % prefill and +82 % decode
    with a quick file and at -8.5 % and -2.3 % with the full one, minutes apart.
    dispatch: what overhead.eager_dispatch_s holds. "hf" (default): the host time per llmsim op of a tiny
    transformers Llama decode step (the model code's Python included), which is what eager transformers (and
    so `validate`) really pays per op llmsim counts (14.2 us on a loaded 2-core AMD EPYC, 6.8 us on the
    Sapphire Rapids of validation/README.md). "op": one bare tiny op (1.8 and 0.8 us there), the framework's
    floor. Both are measured and named in the source.
    threads: torch CPU threads during the measurement (default 1, as the CLI: the steadiest on a shared machine,
    see validation/README.md; None keeps torch's current setting). The count is written into the file, and
    `validate` measures with it unless told otherwise, so that predictions and measurements describe the same
    threads.
    progress: a line on stderr as each measurement starts.
    """
    torch = check_device(device)
    if dispatch not in ("op", "hf"):
        raise LlmsimError(f"calibrate: dispatch={dispatch!r}; choose 'op' (a bare tiny op) or 'hf' (per llmsim op "
                          f"of a tiny transformers model)")
    with torch_threads(threads):
        return _calibrate(torch, device, tuple(dtypes), out, quick, name, dispatch, progress)


def slow_dtype_notes(peaks_flops_per_s: dict[str, float]) -> list[str]:
    """A line for each 16-bit dtype whose square matmul runs under a tenth of fp32's: its row and depth tables,
    sized for fp32's rate, take longer (bf16 on an AVX2-only AMD EPYC, one thread: 0.94 against 81.5 GFLOP/s
    square; small F.linear calls ran 8x that square rate, about a tenth of fp32's)."""
    fp32 = peaks_flops_per_s.get("fp32")
    notes = []
    for precision, rate in peaks_flops_per_s.items():
        if fp32 and precision != "fp32" and rate < fp32 / 10:
            # shape: scalar, how many times slower than fp32
            slower = fp32 / rate
            notes.append(f"{precision} matmul runs {slower:.0f}x slower than fp32 here ({rate / 1e9:.3g} against "
                         f"{fp32 / 1e9:.3g} GFLOP/s: this CPU has no {precision} instructions) and its tables take "
                         f"longer than fp32's; --dtypes float32 leaves it out")
    return notes


def _say(progress: bool, text: str) -> None:
    if progress:
        print(f"calibrate: {text}", file=sys.stderr, flush=True)


def check_plausible(data: dict[str, Any], threads: int, load: float | None) -> None:
    """Refuse, in one line with the measured value, a figure outside the plausible range of a hardware file
    (hardware/spec.py): below its floor it was measured on a loaded machine, not read in the wrong unit."""
    for section, fields in data.items():
        if not isinstance(fields, dict):
            continue
        for key, quantity in fields.items():
            known = plausible_range(section, key)
            if known is None or not isinstance(quantity, dict) or "value" not in quantity:
                continue
            unit, low, high = known
            value = quantity["value"]
            if low <= value <= high:
                continue
            busy = f", 1-minute load {load:g}" if load is not None else ""
            where = f"calibrate: measured {section}.{key} = {value:.4g} {unit}"
            one_thread = "" if threads == 1 else " with --threads 1"  # advice it already follows is no cure
            if value < low:
                raise LlmsimError(
                    f"{where} is below llmsim's plausibility floor of {low:g} {unit} (hardware/spec.py): the machine "
                    f"was likely loaded ({threads} threads{busy}); rerun{one_thread} on a quieter machine"
                )
            raise LlmsimError(f"{where} is above llmsim's plausibility ceiling of {high:g} {unit} (hardware/spec.py): "
                              f"a timing too short to trust ({threads} threads{busy}); rerun{one_thread or ' later'}")


def _calibrate(torch: Any, device: str, dtypes: tuple[str, ...], out: str | Path | None, quick: bool,
               name: str | None, dispatch: str, progress: bool = False) -> HardwareSpec:
    from ..dtypes import canonical_dtype

    if not dtypes:
        raise LlmsimError(f"calibrate: dtypes is empty; choose from {', '.join(_PRECISION)}")
    named = []
    for dtype in dtypes:
        with contextlib.suppress(LlmsimError):  # the names simulate takes (bf16, fp32, fp16) read as theirs; a name
            dtype = canonical_dtype(dtype, "dtype")  # llmsim does not know is refused below as given
        if dtype not in _PRECISION:
            raise LlmsimError(f"calibrate: dtype={dtype!r} is not supported; choose from {', '.join(_PRECISION)}")
        named.append(dtype)
    dtypes = tuple(dict.fromkeys(named))
    info = versions()
    clock = "process CPU time" if cpu_clock(device) else "wall time" if device == "cpu" else "CUDA events"
    stamp = (f"measured by llmsim calibrate on {_dt.date.today().isoformat()}, torch {info['torch_version']}, "
             f"{info['threads']} threads, {clock}")
    started_wall, started_cpu = time.perf_counter(), time.process_time()
    repeats = 5 if quick else 15
    warmup = 1 if quick else 3

    def source(m: _Measure) -> str:
        return f"{stamp}, median of {m.n}, spread (p90-p10)/median {spread(m.times):.1%}: {m.how}"

    def q(value: float, unit: str, text: str) -> dict[str, Any]:
        return {"value": float(value), "unit": unit, "source": text}

    def say(text: str) -> None:
        _say(progress, text)

    say(f"{device_name(device)}, {info['threads']} threads, {'quick' if quick else 'full'} run")
    matrix: dict[str, Any] = {}
    for dtype in dtypes:
        say(f"matmul peak, {dtype}")
        m = _matmul(torch, device, dtype, quick, repeats, warmup)
        matrix[_PRECISION[dtype]] = q(m.value, "flop/s", source(m))
    for note in slow_dtype_notes({_PRECISION[d]: matrix[_PRECISION[d]]["value"] for d in dtypes}):
        say(note)
    vector: dict[str, Any] = {}
    vector_dtypes = [d for d in dtypes if d == "float32"] or ["float32"]
    sixteen = [d for d in ("bfloat16", "float16") if d in dtypes]
    for dtype in vector_dtypes + sixteen[:1]:
        say(f"element-wise (vector) rate, {dtype}")
        m = _vector(torch, device, dtype, quick, repeats, warmup)
        key = "fp32" if dtype == "float32" else "fp16"
        note = "" if key == "fp32" else f" (the {dtype} rate: llmsim reads the fp16 vector figure for bf16 and fp16)"
        vector[key] = q(m.value, "flop/s", source(m) + note)
    say("memory bandwidth (copy)")
    bandwidth = _bandwidth(torch, device, quick, repeats, warmup)
    say(f"matmul efficiency by rows M, F.linear layout, {', '.join(dtypes)}")
    row_curves = {
        _PRECISION[dtype]: _matmul_rows(torch, device, dtype, matrix[_PRECISION[dtype]]["value"], bandwidth.value,
                                        quick, repeats, warmup, stamp)
        for dtype in dtypes
    }
    say(f"matmul efficiency by rows M, torch.matmul layout, {', '.join(dtypes)}")
    in_out_curves = {
        _PRECISION[dtype]: _matmul_rows(torch, device, dtype, matrix[_PRECISION[dtype]]["value"], bandwidth.value,
                                        quick, repeats, warmup, stamp, layout="in_out")
        for dtype in dtypes
    }
    say(f"matmul efficiency by depth K, {', '.join(dtypes)}")
    depth_curves = {
        _PRECISION[dtype]: _matmul_depth(torch, device, dtype, matrix[_PRECISION[dtype]]["value"], bandwidth.value,
                                         quick, repeats, warmup, stamp)
        for dtype in dtypes
    }
    say("element-wise bandwidth by size")
    size_curves = {
        ("fp32" if dtype == "float32" else "fp16"): _elementwise_bytes(torch, device, dtype, bandwidth.value, quick,
                                                                     repeats, warmup, stamp)
        for dtype in vector_dtypes + sixteen[:1]
    }
    capacity, capacity_source = _capacity(torch, device)
    say("dispatch overhead: a bare tiny op, then a tiny transformers decode step")
    op_cost = _dispatch(torch, device, quick)
    hf_cost = _hf_dispatch(torch, device, quick)
    if dispatch == "op":
        text = source(op_cost) + f". For comparison, {hf_cost.value * 1e6:.1f} us per llmsim op: {hf_cost.how}"
        overhead: dict[str, Any] = {"eager_dispatch_s": q(op_cost.value, "s", text)}
    else:
        text = source(hf_cost) + f". For comparison, a bare tiny op: {op_cost.value * 1e6:.2f} us ({op_cost.how})"
        overhead = {"eager_dispatch_s": q(hf_cost.value, "s", text)}
    if device == "cuda":
        say("kernel launch and CUDA-graph replay")
        launch = _launch(torch, quick)
        replay = _graph_replay(torch, quick)
        overhead["kernel_launch_s"] = q(launch.value, "s", source(launch))
        overhead["graph_replay_per_kernel_s"] = q(replay.value, "s", source(replay))
    else:
        overhead["kernel_launch_s"] = q(0.0, "s", "CPU: operators run on the host thread, there is no device "
                                                  "kernel launch (its cost is inside eager_dispatch_s)")
        overhead["graph_replay_per_kernel_s"] = q(0.0, "s", "CPU: no CUDA-graph equivalent; taken as 0")
    measured_note = (f"{stamp}: the measured rate is stored as the peak above, so the achievable fraction is 1.0")
    data: dict[str, Any] = {
        "name": name or f"{device}-calibrated",
        "description": f"{device_name(device)}, calibrated by llmsim ({info['threads']} threads, "
                       f"torch {info['torch_version']})",
        "device_type": "gpu" if device == "cuda" else "cpu",
        "vendor": device_vendor(device),
        "matrix_flops_per_s": matrix,
        "vector_flops_per_s": vector,
        "memory": {
            "bandwidth_bytes_per_s": q(bandwidth.value, "byte/s", source(bandwidth)),
            "capacity_bytes": q(capacity, "byte", capacity_source),
        },
        "overhead": overhead,
        "efficiency": {
            "matmul": q(1.0, "fraction", measured_note + " (matrix_flops_per_s are measured torch.matmul rates)"),
            "memory": q(1.0, "fraction", measured_note + " (bandwidth is a measured copy rate)"),
            "vector": q(1.0, "fraction", measured_note + " (vector_flops_per_s are measured element-wise rates)"),
        },
        "matmul_rows": row_curves,
        "matmul_rows_in_out": in_out_curves,
        "matmul_depth": depth_curves,
        "elementwise_bytes": size_curves,
    }
    check_plausible(data, info["threads"], load_average())
    waited = waited_share(time.perf_counter() - started_wall, time.process_time() - started_cpu, info["threads"])
    if device == "cpu" and waited > BUSY_WAIT_SHARE:
        print(f"calibrate: warning: this process waited for a core {waited:.0%} of the time (1-minute load "
              f"{load_average()}): {clock} leaves the waits out, but other work also shares the caches and memory "
              f"bandwidth; calibrate again on a quieter machine if the figures matter", file=sys.stderr, flush=True)
    spec = hardware_from_dict(data, origin="calibrate")
    say("done" + (f": writing {out}" if out is not None else ""))
    if out is not None:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(hardware_toml(data))
        spec = spec.model_copy(update={"path": str(path)})
    return spec


# ---- the measurements ------------------------------------------------------------------------------
def _best_of_sizes(sizes: Sequence[int], run: Callable[[int], tuple[float, list[float]]],
                   flops_of: Callable[[int], float], calls: int,
                   budget_s: float) -> tuple[int, float, list[float], str]:
    """The size with the best rate. flops_of, calls, budget_s: a larger size whose `calls` calls would take more
    than budget_s at the best rate measured so far is skipped, and the detail says so (bf16 on a CPU without bf16
    instructions: 0.85 GFLOP/s measured on an AVX2-only AMD EPYC, where a 2048^3 matmul takes ~20 s a call)."""
    results: dict[int, tuple[float, list[float]]] = {}
    skipped = []
    for n in sizes:
        if results:
            fastest = max(rate for rate, _ in results.values())
            # shape: scalar seconds the size's calls would take at the fastest rate measured so far
            estimate_s = calls * flops_of(n) / fastest
            if estimate_s > budget_s:
                skipped.append(f"N={n} skipped: {calls} calls would take ~{estimate_s:.0f} s")
                continue
        results[n] = run(n)
    best = max(results, key=lambda n: results[n][0])
    detail = ", ".join([f"N={n}: {results[n][0] / 1e9:.1f} G/s" for n in results] + skipped)
    return best, results[best][0], results[best][1], detail


def _matmul(torch: Any, device: str, dtype: str, quick: bool, repeats: int, warmup: int) -> _Measure:
    tdtype = torch_dtype(dtype)
    if device == "cuda":
        sizes = (4096, 8192) if quick else (2048, 4096, 8192)
    else:
        sizes = (1024, 2048) if quick else (1024, 2048, 4096)

    def run(n: int) -> tuple[float, list[float]]:
        gen = torch.Generator(device=device).manual_seed(n)
        a = torch.randn(n, n, device=device, dtype=tdtype, generator=gen)
        b = torch.randn(n, n, device=device, dtype=tdtype, generator=gen)
        with torch.inference_mode():
            times = time_call(lambda: torch.matmul(a, b), device, repeats, warmup, queue_ahead=True)
        return 2 * n**3 / median(times), times

    # sizes past a budget are skipped (a slow dtype): 10 s quick, 120 s full. On an AVX2-only EPYC guest (one thread)
    # fp32 ran 81.5 GFLOP/s at N = 2048, so N = 4096 takes 18 calls x 137.4 GFLOP / 81.5e9 = 30 s; bf16 ran
    # 0.94 GFLOP/s at N = 1024, so 18 x 137.4 / 0.94 = 2,631 s (44 minutes): skipped
    _, rate, times, detail = _best_of_sizes(sizes, run, lambda n: 2 * n**3, repeats + warmup,
                                            10.0 if quick else 120.0)
    how = (f"torch.matmul {dtype} square N x N (2*N^3 FLOPs), best of sizes ({detail}); stored as the peak, "
           f"efficiency.matmul = 1.0")
    return _Measure(rate, how, times)


def _bandwidth(torch: Any, device: str, quick: bool, repeats: int, warmup: int) -> _Measure:
    mib = 256 if quick else 1024
    n = mib * 2**20 // 4
    src = torch.ones(n, device=device, dtype=torch.float32)
    dst = torch.empty_like(src)
    with torch.inference_mode():
        times = time_call(lambda: dst.copy_(src), device, repeats, warmup, queue_ahead=True)
        read_times = time_call(lambda: src.sum(), device, repeats, warmup, queue_ahead=True)
    moved = 2 * n * 4
    read_rate = n * 4 / median(read_times)
    how = (f"dst.copy_(src) of a {mib} MiB float32 tensor, bytes read + written ({moved} bytes per copy); "
           f"stored as the bandwidth, efficiency.memory = 1.0. For comparison, a read-only stream (src.sum()) "
           f"reaches {read_rate / 1e9:.1f} GB/s")
    return _Measure(moved / median(times), how, times)


# The row counts M of a CPU's matmul_depth table: M = 2, 3 and 8 too (small decode batches), on both sides of the
# switch from repeated GEMVs to a GEMM kernel at M = 4 (_matmul_shapes)
CPU_DEPTH_ROWS = (1, 2, 3, 4, 8, 16, 64, 256, 1024)


def _matmul_shapes(device: str, quick: bool) -> tuple[int, tuple[int, ...], tuple[int, ...], int]:
    """(K, output widths N, row counts M, bytes of the W pool) of the matmul tables on this device."""
    if device == "cuda":
        return 8192, (1024, 4096, 16384, 65536), tuple(2**i for i in range(14)), 2**30
    if quick:
        return 512, (256, 1024), (1, 4, 16, 64, 256), 2**25
    # a CPU: a 1 GiB pool of W, beyond large last-level caches; N up to an LM head's width. Every M up to 8: on
    # an AMD EPYC guest (torch 2.13, 1 thread) float32 F.linear at M = 2 and 3 runs as M GEMVs (W[4096, 2048]:
    # 2.05, 4.07, 6.15 ms at M = 1, 2, 3), then a GEMM kernel from M = 4 (4.13 ms) that rises slowly and not
    # monotonically (M = 7: 5.28, M = 8: 4.82 ms); read across 2..4, decode at batch 3 was predicted 30-35 %
    # fast (validation/README.md, "Another machine").
    return 2048, (1024, 4096, 16384, 65536), (1, 2, 3, 4, 5, 6, 7, *(2**i for i in range(3, 12))), 2**30


def _linear_fractions(torch: Any, device: str, tdtype: Any, k: int, n: int, rows_list: Sequence[int], layout: str,
                      pool_bytes: int, peak_flops_per_s: float, bandwidth_bytes_per_s: float, repeats: int,
                      warmup: int, gen: Any) -> tuple[list[float], list[str], list[float]]:
    """(fraction of the roofline, ms per call, spread) of x[M, K] @ W at each M, W [N, K] (layout out_in,
    F.linear) or [K, N] (in_out, torch.matmul), copies of W cycled through the pool."""
    linear = torch.nn.functional.linear if layout == "out_in" else (lambda x, w: torch.matmul(x, w))
    shape = (n, k) if layout == "out_in" else (k, n)  # nn.Linear's [out, in], or [in, out]
    first = torch.randn(*shape, device=device, dtype=tdtype, generator=gen)
    size = first.element_size()
    copies = max(2, -(-pool_bytes // (k * n * size)))
    weights = [first] + [first.clone() for _ in range(copies - 1)]
    next_weight = _cycled(weights)

    def roofline_s(rows: int) -> float:
        return max(2 * rows * k * n / peak_flops_per_s, (k * n + rows * k + rows * n) * size / bandwidth_bytes_per_s)

    calls = []
    for rows in rows_list:
        x = torch.randn(rows, k, device=device, dtype=tdtype, generator=gen)
        heavy = 2 * rows * k * n / peak_flops_per_s > 0.05  # long calls: fewer repeats
        calls.append((lambda w, x=x: linear(x, w), next_weight, min(repeats, 5) if heavy else repeats,
                      1 if heavy else warmup))
    timings = _take_turns(device, calls)  # the row counts take turns, one call each per round
    fractions = [round(roofline_s(rows) / median(times), 4) for rows, times in zip(rows_list, timings)]
    spreads = [spread(times) for times in timings]
    medians = [f"{median(times) * 1e3:.3g}" for times in timings]
    weights.clear()  # free the pool before the next shape
    return fractions, medians, spreads


def _matmul_rows(torch: Any, device: str, dtype: str, peak_flops_per_s: float, bandwidth_bytes_per_s: float,
                 quick: bool, repeats: int, warmup: int, stamp: str, layout: str = "out_in") -> dict[str, Any]:
    """The fraction of the roofline F.linear(x[M, K], W[N, K]) reaches at each row count M and output
    width N (a matmul_rows table with cols); layout="in_out": x @ W[K, N] (matmul_rows_in_out, up to
    N = 16384: no LM head is stored that way).

    roofline(M, N) = max(2*M*K*N / matrix rate, (K*N + M*K + M*N) * element bytes / copy bandwidth), with
    the rates just measured; fraction = roofline / measured median time. Several copies of W are cycled
    (chosen untimed before each call) so that W streams from memory as a decode step's weights do.
    """
    tdtype = torch_dtype(dtype)
    k, cols, rows_list, pool_bytes = _matmul_shapes(device, quick)
    if layout == "in_out":
        cols = tuple(c for c in cols if c <= 16384)
    gen = torch.Generator(device=device).manual_seed(7)
    table, spreads, details = [], [], []
    with torch.inference_mode():
        for n in cols:
            fractions, medians, n_spreads = _linear_fractions(torch, device, tdtype, k, n, rows_list, layout,
                                                              pool_bytes, peak_flops_per_s, bandwidth_bytes_per_s,
                                                              repeats, warmup, gen)
            table.append(fractions)
            spreads += n_spreads
            details.append(f"N={n}: {' '.join(medians)}")
    call = f"F.linear(x[M, {k}], W[N, {k}])" if layout == "out_in" else f"torch.matmul(x[M, {k}], W[{k}, N])"
    how = (f"{stamp}, medians, spread (p90-p10)/median up to {max(spreads):.1%}: {call} "
           f"in {dtype}, copies of W cycled (a {pool_bytes / 2**20:.0f} MiB pool per N), the row counts taking turns "
           f"(one call each per round), fraction = max(2MKN / "
           f"{peak_flops_per_s / 1e9:.1f} GFLOP/s, bytes of W, x and y / {bandwidth_bytes_per_s / 1e9:.2f} GB/s) / "
           f"measured time; ms per call at M = {', '.join(str(r) for r in rows_list)}: {'; '.join(details)}")
    return {"rows": list(rows_list), "cols": list(cols), "fraction": table, "source": how}


def _matmul_depth(torch: Any, device: str, dtype: str, peak_flops_per_s: float, bandwidth_bytes_per_s: float,
                  quick: bool, repeats: int, warmup: int, stamp: str) -> dict[str, Any]:
    """How the matmul_rows fractions change with the inner dimension K: F.linear(x[M, K], W[N, K]) at one
    width N, the fraction at each K over the fraction at the K of the matmul_rows tables (1.0 there), by
    M. On this repository's CPU a bfloat16 decode GEMV (M = 1) reaches 0.76 of the roofline at K = 2048,
    0.53 at K = 512 and 0.57 at K = 16384; float32 rises from 0.94 to 1.20 over the same K.

    Each entry is a paired ratio (`depth_ratios`): at each M the depths take turns, one call each per round,
    and the entry is the median over the rounds of (fraction at K / fraction at the reference K) within a
    round. A slow spell of a shared machine (a neighbour's burst, a clock change) then slows every K of a
    round alike and leaves the ratio alone. Timed one K after another, as before, it fell on one point's
    repeats: on an AMD EPYC guest the point K = 1024, M = 1024 read 0.77 (122 ms a call) where the same
    call took 92 ms a minute later, and every prefill matmul with K near 1024 was predicted 20-30 % slow."""
    tdtype = torch_dtype(dtype)
    k_ref, _, _, pool_bytes = _matmul_shapes(device, quick)
    if device == "cuda":
        n, depths, rows_list = 4096, (1024, 2048, 4096, 8192, 16384, 32768), (1, 8, 64, 512, 4096)
    elif quick:
        n, depths, rows_list = 256, (256, 512, 1024), (1, 16, 256)
    else:
        n, depths, rows_list = 4096, (512, 1024, 2048, 4096, 8192, 16384), CPU_DEPTH_ROWS
    gen = torch.Generator(device=device).manual_seed(11)
    size = torch.empty((), dtype=tdtype).element_size()
    # one pool for every K: W[N, K] copies are consecutive views of it, cycled so that W streams from memory
    pool = torch.randn(max(pool_bytes // size, 2 * n * max(depths)), device=device, dtype=tdtype, generator=gen)
    cycles = {k: _cycled([pool[i * n * k:(i + 1) * n * k].view(n, k) for i in range(pool.numel() // (n * k))])
              for k in depths}
    linear = torch.nn.functional.linear

    def roofline_s(rows: int, k: int) -> float:
        return max(2 * rows * k * n / peak_flops_per_s, (k * n + rows * k + rows * n) * size / bandwidth_bytes_per_s)

    times: dict[int, list[list[float]]] = {k: [] for k in depths}  # [K][M index] -> seconds per round
    with torch.inference_mode():
        for rows in rows_list:
            xs = {k: torch.randn(rows, k, device=device, dtype=tdtype, generator=gen) for k in depths}
            calls = {k: (lambda w, x=xs[k]: linear(x, w)) for k in depths}
            # long calls: fewer rounds, but enough that the median outlasts slow spells in 4 of them
            heavy = max(2 * rows * k * n / peak_flops_per_s for k in depths) > 0.05
            rounds, warm = (min(repeats, 9), 1) if heavy else (repeats, warmup)
            timings = _take_turns(device, [(calls[k], cycles[k], rounds, warm) for k in depths])
            for k, ts in zip(depths, timings):
                times[k].append(ts)
    del pool, cycles
    table = depth_ratios({k: [[roofline_s(r, k) / t for t in ts] for r, ts in zip(rows_list, times[k])]
                          for k in depths}, k_ref)
    spreads = [spread(ts) for k in depths for ts in times[k]]
    details = [f"K={k}: {' '.join(f'{median(ts) * 1e3:.3g}' for ts in times[k])} ms "
               f"({' '.join(f'{roofline_s(r, k) / median(ts):.2f}' for r, ts in zip(rows_list, times[k]))})"
               for k in depths]
    how = (f"{stamp}, medians, spread (p90-p10)/median up to {max(spreads):.1%}: F.linear(x[M, K], W[{n}, K]) in "
           f"{dtype}, copies of W cycled (a {pool_bytes / 2**20:.0f} MiB pool); at each M the depths take turns, one "
           f"call each per round, and each entry is the median over the rounds of the fraction of the roofline at K "
           f"/ the fraction at K = {k_ref} (the K of matmul_rows) in the same round; per call at M = "
           f"{', '.join(str(r) for r in rows_list)} (fraction of the roofline): {'; '.join(details)}")
    return {"rows": list(rows_list), "depths": list(depths), "fraction": table, "source": how}


def _take_turns(device: str, calls: Sequence[tuple[Callable[..., Any], Callable[[], tuple[Any, ...]], int, int]]
                ) -> list[list[float]]:
    """Seconds of each timed call of every (fn, setup, repeats, warmup) in `calls`: all warm-ups first, then
    rounds in which each call still owed a repeat runs once, in turn. A slow spell of a shared machine (a
    neighbour's burst, a clock change) then falls on one or two rounds of many shapes, which their medians
    outlast, instead of on every repeat of one shape, which turned single table points into outliers (a
    matmul_rows point at M = 1024 read 0.74 between 0.96 and 0.88)."""
    for fn, setup, _, warmup in calls:
        time_call(fn, device, 0, warmup, setup=setup)
    timings: list[list[float]] = [[] for _ in calls]
    for round_ in range(max((c[2] for c in calls), default=0)):
        for (fn, setup, repeats, _), times in zip(calls, timings):
            if round_ < repeats:
                times += time_call(fn, device, 1, 0, setup=setup, queue_ahead=True)
    return timings


def _cycled(weights: list[Any]) -> Callable[[], tuple[Any]]:
    """A setup for time_call handing out the next of `weights` on each call (so W comes from memory)."""
    turn = [0]

    def pick() -> tuple[Any]:
        turn[0] = (turn[0] + 1) % len(weights)
        return (weights[turn[0]],)
    return pick


def depth_ratios(fractions: dict[int, list[list[float]]], k_ref: int) -> list[list[float]]:
    """The matmul_depth table from paired measurements: fractions[K][i][r] is the fraction of the roofline
    reached at depth K, the i-th row count, in round r (every K timed once per round); entry [K][i] =
    median over r of fractions[K][i][r] / fractions[k_ref][i][r]. A round where the machine ran slow slows
    every K alike, so its ratios stay near the steady ones, where a ratio of per-K medians would carry the
    slow spell into whichever K it fell on."""
    reference = fractions[k_ref]
    return [[round(median([f / r for f, r in zip(per_round, reference[i])]), 4)
             for i, per_round in enumerate(fractions[k])] for k in fractions]


def _elementwise_bytes(torch: Any, device: str, dtype: str, bandwidth_bytes_per_s: float, quick: bool,
                       repeats: int, warmup: int, stamp: str) -> dict[str, Any]:
    """Fraction of the copy bandwidth torch.mul(a, b) reaches, by bytes moved, in the conditions of an
    eager model: the inputs come from memory (pairs cycled through a pool beyond the last-level cache, as
    the activations of a model are no longer cached by their next use) and, on a CPU, the output lands on
    fresh pages (the C heap's free pages handed back before each call: eager PyTorch allocates every
    output, and glibc returns large freed blocks to the system, so an output's pages fault in again).
    Profile of a bfloat16 Llama prefill (batch 4 x 512) on this repository's CPU: its element-wise
    kernels moved 3.1-6.1 GB/s; torch.mul measured this way 4.0-5.7 GB/s, with the same inputs and the
    heap left alone 20-26 GB/s."""
    tdtype = torch_dtype(dtype)
    if device == "cuda":
        sizes_mib, pool_bytes = (1, 4, 16, 64, 256, 1024), 2**32
    else:
        sizes_mib, pool_bytes = ((1, 16), 2**26) if quick else ((0.0625, 0.25, 1, 4, 16, 64, 256), 2**30)
    size = torch.empty((), dtype=tdtype).element_size()
    moved, fractions, details, spreads = [], [], [], []
    fresh_pages = device == "cpu" and release_free_memory()
    with torch.inference_mode():
        for mib in sizes_mib:
            n = int(mib * 2**20) // size
            pairs = [(torch.ones(n, device=device, dtype=tdtype), torch.ones(n, device=device, dtype=tdtype))
                     for _ in range(max(2, pool_bytes // (2 * n * size)))]
            turn = [0]

            def next_pair(pairs: list[tuple[Any, Any]] = pairs, turn: list[int] = turn) -> tuple[Any, Any]:
                if fresh_pages:
                    release_free_memory()
                turn[0] = (turn[0] + 1) % len(pairs)
                return pairs[turn[0]]

            times = time_call(torch.mul, device, repeats, warmup, setup=next_pair, queue_ahead=True)
            bytes_moved = 3 * n * size
            rate = bytes_moved / median(times)
            moved.append(bytes_moved)
            fractions.append(round(rate / bandwidth_bytes_per_s, 4))
            spreads.append(spread(times))
            details.append(f"{mib:g} MiB: {rate / 1e9:.2f} GB/s")
            pairs.clear()
    pages = "fresh pages (malloc_trim(0) before each call)" if fresh_pages else "the allocator's pages"
    how = (f"{stamp}, medians, spread (p90-p10)/median up to {max(spreads):.1%}: torch.mul(a, b) of two {dtype} "
           f"tensors (pairs cycled through a {pool_bytes / 2**20:.0f} MiB pool) into a new output on {pages}, "
           f"bytes moved per run (2 reads + 1 write) / median time / the copy bandwidth "
           f"{bandwidth_bytes_per_s / 1e9:.2f} GB/s, at tensor sizes {', '.join(details)}")
    return {"bytes": moved, "fraction": fractions, "source": how}


def _vector(torch: Any, device: str, dtype: str, quick: bool, repeats: int, warmup: int) -> _Measure:
    tdtype = torch_dtype(dtype)
    # fits the last-level cache: 4 MiB of float32 on a CPU, 16 MiB on a GPU (its L2)
    elements = 2**20 if device == "cpu" else 2**22
    rows = elements // 1024
    gen = torch.Generator(device=device).manual_seed(1)
    x = torch.randn(rows, 1024, device=device, dtype=tdtype, generator=gen)
    inner = 3 if quick else 10
    F = torch.nn.functional

    def rmsnorm(t: Any) -> Any:
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6)

    ops = {"silu": F.silu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
           "softmax": lambda t: torch.softmax(t, dim=-1), "rmsnorm": rmsnorm}
    # each op timed on its own (median of the repeats of `inner` back-to-back calls); the rate is the mix's
    # total nominal FLOPs over the sum of the ops' median times
    per_op: dict[str, float] = {}
    all_times: list[float] = []
    with torch.inference_mode():
        for key, fn in ops.items():
            def run(fn: Callable[[Any], Any] = fn) -> None:
                for _ in range(inner):
                    fn(x)

            times = [t / inner for t in time_call(run, device, repeats, warmup, queue_ahead=True)]
            per_op[key] = median(times)
            all_times += [t / median(times) for t in times]  # relative, for the spread
    total_s = sum(per_op.values())
    flops = sum(_VECTOR_MIX.values()) * elements
    detail = ", ".join(f"{k} {_VECTOR_MIX[k] * elements / t / 1e9:.1f}" for k, t in per_op.items())
    how = (f"element-wise ops on a [{rows}, 1024] {dtype} tensor (stays in the last-level cache): SiLU, tanh-GELU, "
           f"softmax, RMSNorm (x*rsqrt(mean(x^2)+eps)), counted at llmsim's nominal 4, 8, 5, 4 FLOPs per element; "
           f"the mix's nominal FLOPs / the sum of each op's median time (each op alone, GFLOP/s: {detail})")
    return _Measure(flops / total_s, how, all_times, n=repeats)


def _capacity(torch: Any, device: str) -> tuple[float, str]:
    if device == "cuda":
        _free, total = torch.cuda.mem_get_info()
        return float(total), f"torch.cuda.mem_get_info() total on {_dt.date.today().isoformat()}: {total} bytes"
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    kib = int(line.split()[1])
                    return float(kib * 1024), (f"/proc/meminfo MemTotal {kib} kB (x 1024) on "
                                               f"{_dt.date.today().isoformat()}: the host RAM, shared with the OS")
    except OSError:
        pass
    raise LlmsimError("calibrate: cannot read /proc/meminfo MemTotal to find the memory capacity")


def _dispatch(torch: Any, device: str, quick: bool) -> _Measure:
    """Seconds per tiny eager op (1-element add into a preallocated output), from loops of many."""
    a = torch.ones(1, device=device)
    b = torch.ones(1, device=device)
    o = torch.empty(1, device=device)
    loop = 200 if quick else 1000
    times = []
    with torch.inference_mode():
        for _ in range(20):  # warm-up
            torch.add(a, b, out=o)
        synchronize(device)
        clock = time.process_time if cpu_clock(device) else time.perf_counter  # as time_call times
        for _ in range(5 if quick else 15):
            t0 = clock()
            for _ in range(loop):
                torch.add(a, b, out=o)
            synchronize(device)
            times.append((clock() - t0) / loop)
    how = (f"torch.add of two 1-element tensors in a Python loop of {loop}, host time per op (the bare framework "
           f"cost of one op; transformers' eager model code adds its own Python per module on top)")
    return _Measure(median(times), how, times)


def _hf_dispatch(torch: Any, device: str, quick: bool) -> _Measure:
    """Host seconds per llmsim op of a tiny transformers Llama decode step (its kernels take ~nothing)."""
    from ..cost.graph import build_ops
    from ..models.loading import load_model
    from .hf_model import build_model, prepare_config, time_decode

    tiny = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
            "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 256}
    data = prepare_config(tiny, "float32", None)
    ops = build_ops(load_model(data), "decode", 1, kv_len=16, fusion="eager", attention="flash", logits="all")
    launches = sum(op.launches * op.count for op in ops)
    model = build_model(data, "float32", device)
    times, _ = time_decode(model, 1, 16, device, "eager", 10 if quick else 30, 3)
    per_op = [t / launches for t in times]
    how = (f"one decode step of a tiny transformers Llama (4 layers, hidden 64, kv 16, eager, sdpa) divided by the "
           f"{launches} kernels llmsim counts for it (fusion='eager', as validate predicts): transformers' Python "
           f"and every aten op it runs "
           f"per op llmsim models")
    return _Measure(median(per_op), how, per_op)


def _launch(torch: Any, quick: bool) -> _Measure:  # pragma: no cover - needs CUDA
    a = torch.ones(1, device="cuda")
    o = torch.empty(1, device="cuda")
    reps = 50 if quick else 200

    def timed(with_op: bool) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            if with_op:
                torch.add(a, a, out=o)
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) / reps

    for _ in range(3):
        timed(True)
        timed(False)
    times = [max(timed(True) - timed(False), 0.0) for _ in range(5 if quick else 15)]
    how = ("a 1-element torch.add followed by torch.cuda.synchronize(), minus the synchronize alone "
           f"(loops of {reps}): host launch to kernel completion of a tiny kernel")
    return _Measure(median(times), how, times)


def _graph_replay(torch: Any, quick: bool) -> _Measure:  # pragma: no cover - needs CUDA
    a = torch.ones(1, device="cuda")
    o = torch.empty(1, device="cuda")
    kernels = 200 if quick else 1000
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            torch.add(a, a, out=o)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(kernels):
            torch.add(a, a, out=o)
    times = [t / kernels for t in time_call(graph.replay, "cuda", 5 if quick else 15, 2)]
    how = f"one CUDA graph of {kernels} 1-element torch.add kernels replayed, CUDA-event time per kernel"
    return _Measure(median(times), how, times)


# ---- TOML ----------------------------------------------------------------------------------------------
def hardware_toml(data: dict[str, Any]) -> str:
    """A hardware dict as TOML in the layout of hardware/*.toml (written by hand: no TOML writer needed)."""
    lines = ["# Measured by `llmsim.validation.calibrate`: every value in base SI units with its unit and source.",
             "# The measured rates are stored as the peaks and the achievable fractions are 1.0.", ""]
    for key in ("name", "description", "device_type", "vendor"):
        if key in data:
            lines.append(f"{key} = {_toml_string(str(data[key]))}")
    for section in ("matrix_flops_per_s", "vector_flops_per_s", "memory", "interconnect", "overhead",
                    "efficiency", "sustained", "price"):
        table = data.get(section)
        if not table:
            continue
        lines += ["", f"[{section}]"]
        width = max(len(k) for k in table)
        for key, item in table.items():
            lines.append(f"{key:<{width}} = {{ value = {_toml_number(item['value'])}, unit = "
                         f"{_toml_string(item['unit'])}, source = {_toml_string(item['source'])} }}")
    for section, x_key in (("matmul_rows", "rows"), ("matmul_rows_in_out", "rows"), ("matmul_depth", "rows"),
                           ("elementwise_bytes", "bytes")):
        for precision, curve in data.get(section, {}).items():
            lines += ["", f"[{section}.{precision}]", f"{x_key:<8} = {_toml_list(curve[x_key])}"]
            second = next((key for key in ("cols", "depths") if key in curve), None)
            if second is not None:  # a table: one fraction list per output width N (cols) or inner dim K (depths)
                lines += [f"{second:<8} = {_toml_list(curve[second])}", "fraction = ["]
                letter = "N" if second == "cols" else "K"
                lines += [f"    {_toml_list(line)},  # {letter} = {_toml_number(v)}"
                          for v, line in zip(curve[second], curve["fraction"])]
                lines.append("]")
            else:
                lines.append(f"fraction = {_toml_list(curve['fraction'])}")
            lines.append(f"source   = {_toml_string(curve['source'])}")
    return "\n".join(lines) + "\n"


def _toml_list(values: Sequence[float]) -> str:
    return f"[{', '.join(_toml_number(v) for v in values)}]"


def _toml_string(text: str) -> str:
    # a JSON string of ASCII text is a valid TOML basic string (same escapes)
    return json.dumps(text, ensure_ascii=True)


def _toml_number(value: float) -> str:
    value = float(value)
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def measure_dispatch(device: str = "cpu", kind: str = "hf", quick: bool = False,
                     threads: int | None = None) -> tuple[float, str]:
    """(seconds, how it was measured) of the per-op framework cost: kind="op" a bare tiny op, "hf" per
    llmsim op of a tiny transformers model (see `calibrate(dispatch=...)`)."""
    torch = check_device(device)
    with torch_threads(threads):
        m = _hf_dispatch(torch, device, quick) if kind == "hf" else _dispatch(torch, device, quick)
        info = versions()
    return m.value, (f"measured by llmsim calibrate on {_dt.date.today().isoformat()}, torch {info['torch_version']}, "
                     f"{info['threads']} threads, median of {m.n}, spread (p90-p10)/median {spread(m.times):.1%}: "
                     f"{m.how}")
