"""Host-side work an engine does once per forward pass (no kernel, no FLOPs, no bytes)."""

from __future__ import annotations

from ..op import Op, make_op, register


@register("engine_step")
def engine_step(name: str, count: int) -> Op:
    """One engine step's host work that the GPU waits for: scheduling, input preparation, sampling and
    output processing not hidden behind the previous step. No FLOPs or bytes; the roofline times it as
    ExecutionOptions.step_host_s per run (timing.roofline)."""
    return make_op(name, "host", count, launches=0)
