"""Collectives among GPUs (all_reduce, all_gather, all_to_all, p2p): message bytes only; timing
turns them into time with the interconnect's formulas."""

from __future__ import annotations

from ..op import Op, make_op, register
from ..symbolic import Expr

COLLECTIVES = ("all_reduce", "all_gather", "all_to_all", "p2p")


@register("collective")
def collective(name: str, count: int, *, kind: str, message_bytes: Expr, group: int) -> Op:
    """A collective among `group` GPUs. message_bytes: all_reduce, the tensor each GPU holds;
    all_gather, the gathered result; all_to_all, what each GPU sends plus keeps; p2p, the tensor sent."""
    if kind not in COLLECTIVES:
        raise ValueError(f"collective kind {kind!r}; choose one of {', '.join(COLLECTIVES)}")
    return make_op(name, "communication", count, comm_bytes=message_bytes, collective=kind, group_size=group)
