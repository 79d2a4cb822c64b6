"""The torch side shared by calibration and validation: import torch, check the device, time things."""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import LlmsimError

DEVICES = ("cpu", "cuda")


def require_torch() -> Any:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is installed wherever validation runs
        raise LlmsimError("llmsim.validation needs PyTorch: pip install 'llmsim[validate]'") from None
    return torch


def check_device(device: str) -> Any:
    """torch, after checking that `device` is "cpu" or an available "cuda"; a one-line LlmsimError else."""
    torch = require_torch()
    if device not in DEVICES:
        raise LlmsimError(f"device={device!r} is not supported; choose one of {', '.join(DEVICES)}")
    if device == "cuda" and not torch.cuda.is_available():
        raise LlmsimError(
            f"device='cuda' was requested but torch.cuda.is_available() is False (torch {torch.__version__}, "
            f"no CUDA device or a CPU-only build); use device='cpu'"
        )
    return torch


def torch_dtype(name: str) -> Any:
    torch = require_torch()
    table = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if name not in table:
        raise LlmsimError(f"dtype={name!r} cannot be run; choose one of {', '.join(table)}")
    return table[name]


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """torch's CPU thread count set to `threads` inside the block (unchanged when None), restored after."""
    torch = require_torch()
    if threads is None:
        yield
        return
    if threads < 1:
        raise LlmsimError(f"threads={threads} must be >= 1")
    previous = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def release_free_memory() -> bool:
    """Hand the C heap's free pages back to the operating system (glibc's malloc_trim(0)), so that the next
    allocation lands on fresh pages, as most outputs of an eager PyTorch model on a CPU do. False where
    the C library has no malloc_trim (not glibc): nothing is done there."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        try:
            import ctypes

            _MALLOC_TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _MALLOC_TRIM = False
    if _MALLOC_TRIM is False:
        return False
    _MALLOC_TRIM(0)
    return True


_MALLOC_TRIM: Any = None


def release_device_memory(device: str) -> None:
    """Collect unreachable tensors and, on CUDA, hand the caching allocator's free blocks back (between
    cases, and after a failed one, so that the next case starts from the same free memory)."""
    import gc

    gc.collect()
    if device == "cuda":
        require_torch().cuda.empty_cache()


def synchronize(device: str) -> None:
    if device == "cuda":
        require_torch().cuda.synchronize()


# GPU clock cycles of the spin kernel queued before a timed call with queue_ahead (about 0.5 ms at 2 GHz:
# room for the host to enqueue ~100 kernel launches behind it)
_QUEUE_AHEAD_CYCLES = 1_000_000


def cpu_clock(device: str) -> bool:
    """Whether timings on `device` are the process's CPU time: on a CPU with one torch thread, where the CPU
    time of the process is the time the call computed, without the time it waited for a core while other
    processes held both (a wall clock on a shared 2-core machine read 1.09-1.66 s for a matmul whose CPU time
    was 0.14-0.19 s, at a 1-minute load of 8.5). With more threads the CPU time sums them: the wall clock."""
    return device == "cpu" and require_torch().get_num_threads() == 1


def time_call(fn: Callable[[], Any], device: str, repeats: int, warmup: int,
              setup: Callable[[], Any] | None = None, queue_ahead: bool = False,
              clocks: dict[str, list[float]] | None = None) -> list[float]:
    """Seconds of each of `repeats` timed calls of fn(*setup()), after `warmup` untimed calls.

    On a CPU with one torch thread (cpu_clock) the seconds are the process's CPU time (time.process_time:
    user + system, page faults included); elsewhere wall (or CUDA event) time. On a CPU, `clocks`, when
    given, receives both for each timed call, as clocks["wall"] and clocks["cpu"] (the process's, all threads):
    a wall time well above the CPU time per thread means the process waited for a core.

    `setup` (untimed) prepares the arguments of each call, e.g. a fresh copy of a KV cache.
    On CUDA the time is taken with CUDA events around the call, after a synchronisation. That time
    includes the host's launch latency (the GPU waits for the launch behind the start event), as a real
    eager run pays it. queue_ahead=True (device ceilings in calibrate) first queues a spin kernel, so the
    start event, the call's kernels and the end event are all enqueued while the GPU is still busy: the
    time is then the kernels' own, back to back (launch cost is calibrated separately). No effect on a CPU.
    """
    torch = require_torch()
    for _ in range(warmup):
        args = setup() if setup else ()
        fn(*args)
    synchronize(device)
    times = []
    by_cpu = cpu_clock(device)
    for _ in range(repeats):
        args = setup() if setup else ()
        synchronize(device)
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if queue_ahead:
                torch.cuda._sleep(_QUEUE_AHEAD_CYCLES)
            start.record()
            fn(*args)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            c0, t0 = time.process_time(), time.perf_counter()
            fn(*args)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            times.append(cpu if by_cpu else wall)
            if clocks is not None:
                clocks.setdefault("wall", []).append(wall)
                clocks.setdefault("cpu", []).append(cpu)
        del args
    return times


# a 1-thread CPU run whose process waited for a core more than this share of its wall time ran on a machine too
# busy to time on the wall clock (other processes held the cores)
BUSY_WAIT_SHARE = 0.2


def waited_share(wall_s: float, cpu_s: float, threads: int) -> float:
    """The share of the wall time the process's `threads` threads spent waiting for a core:
    1 - cpu / (wall * threads), 0 when it never waited (or the timings are empty)."""
    if wall_s <= 0 or threads < 1:
        return 0.0
    return max(0.0, 1.0 - cpu_s / (wall_s * threads))


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def spread(values: list[float]) -> float:
    """(p90 - p10) / median of the timings: 0 for a perfectly steady measurement."""
    import numpy as np

    arr = np.asarray(values, dtype=float)
    mid = float(np.median(arr))
    return float((np.percentile(arr, 90) - np.percentile(arr, 10)) / mid) if mid > 0 else 0.0


def versions() -> dict[str, Any]:
    torch = require_torch()
    try:
        import transformers

        tf_version = transformers.__version__
    except ImportError:  # pragma: no cover
        tf_version = ""
    return {"torch_version": torch.__version__, "transformers_version": tf_version,
            "threads": torch.get_num_threads()}


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # pragma: no cover - not on every platform
        return None


def device_name(device: str) -> str:
    """A readable name of the device: the GPU's name, or the CPU model from /proc/cpuinfo."""
    torch = require_torch()
    if device == "cuda":
        return str(torch.cuda.get_device_name())
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return f"cpu: {line.split(':', 1)[1].strip()}"
    except OSError:  # pragma: no cover
        pass
    import platform

    return f"cpu: {platform.processor() or platform.machine()}"


def device_vendor(device: str) -> str:
    """Who makes the device, as hardware files name it: a ROCm build's GPU "amd", a CUDA one "nvidia"; a CPU by
    /proc/cpuinfo's vendor_id (GenuineIntel, AuthenticAMD); "unknown" elsewhere."""
    torch = require_torch()
    if device == "cuda":
        return "amd" if getattr(torch.version, "hip", None) else "nvidia"
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("vendor_id"):
                    found = line.split(":", 1)[1].strip()
                    return {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(found, "unknown")
    except OSError:  # pragma: no cover
        pass
    return "unknown"


def is_oom(exc: BaseException) -> bool:
    torch = require_torch()
    oom_type = getattr(torch, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(exc, oom_type):
        return True
    return isinstance(exc, (RuntimeError, MemoryError)) and (
        isinstance(exc, MemoryError) or "out of memory" in str(exc).lower()
    )
