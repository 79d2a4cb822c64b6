"""The host dispatch of a pass run without a CUDA graph, counted for the pass as a whole.

An engine that runs a forward pass uncaptured (Roofline.for_prefill) spends host time on every kernel it
launches (Roofline.pass_dispatch_s per kernel). CUDA launches are asynchronous: the host queues kernels ahead
of the GPU, which waits only while the host's dispatch of the pass so far outruns its work so far. A pass of
alike layers therefore takes

    pass_s = max(gpu_s, host_s),   gpu_s = sum over ops of (kernel + launches x launch_s)
                                   host_s = (sum over ops of count x launches) x pass_dispatch_s

(on a device without an asynchronous queue, a CPU, the two add: pass_s = gpu_s + host_s). The engine's own host
work per step (an "engine.step" op, ExecutionOptions.step_host_s) runs on the same host thread before it dispatches
the pass, so it stays outside the maximum: pass_s = step_host_s + max(gpu_s, host_s). The excess,
max(0, host_s - gpu_s), is the GPU's idle time; each op is charged its share of it by its share of the pass's
launches, as overhead, so the ops still sum to the pass.
approximation: the layers alike (the host's lead built in a GPU-heavy layer carries over to a host-heavy one);
the first kernel's dispatch and the last kernel's run, one kernel's worth each, left out.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def host_excess_s(gpu_s: Any, host_s: float, async_host: bool) -> Any:
    """The seconds a pass's host dispatch adds to its kernels' gpu_s (arrays allowed)."""
    if not async_host:
        return host_s
    excess = host_s - gpu_s
    return np.maximum(excess, 0.0) if np.ndim(excess) else host_excess_one_s(gpu_s, host_s, async_host)


def host_excess_one_s(gpu_s: float, host_s: float, async_host: bool) -> float:
    """host_excess_s of one pass (Python floats; no numpy call, for a serving step)."""
    if not async_host:
        return host_s
    excess = host_s - gpu_s
    return excess if excess > 0.0 else 0.0


def with_host_dispatch(times: list[Any], overheads: list[Any], launches: list[float], dispatch_s: float,
                       async_host: bool, uncaptured: Any = True, host_work: list[bool] | None = None
                       ) -> tuple[list[Any], list[Any]]:
    """Per-op times and overhead parts of one pass with its host dispatch's excess spread over the ops by their
    launches (the module docstring). launches: per op, its count x launches per run; uncaptured: where the pass
    runs without a graph (an array mask, or True), the others left as they are; host_work: per op, whether its time
    is the engine's host work (kind "host"), outside the maximum."""
    total = sum(launches)
    if dispatch_s == 0 or total == 0:
        return times, overheads
    gpu_s = sum(t for i, t in enumerate(times) if not (host_work and host_work[i]))  # the kernels' side
    excess = host_excess_s(gpu_s, total * dispatch_s, async_host)
    if uncaptured is not True:
        excess = np.where(uncaptured, excess, 0.0)
    shares = [excess * (n / total) for n in launches]
    return [t + s for t, s in zip(times, shares)], [o + s for o, s in zip(overheads, shares)]
