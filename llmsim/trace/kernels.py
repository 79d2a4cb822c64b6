"""Recorded aten ops -> the kernels an execution policy runs (eager: one per op; compiled: element-wise
chains fused) -> llmsim Ops.

Policies (the `fusion` of traced modules):
- "eager" (engine "transformers", and "roofline"): every aten op that is not a view is one kernel that
  reads its inputs and writes its outputs.
- "elementwise" (engine "torch-compile"): each maximal run of consecutive element-wise, norm, softmax,
  reduction and copy ops between heavy ops (matmuls, convolutions, attention, gathers, unknown ops) is one
  kernel. It reads the storages its ops read that it did not produce itself, and writes only the
  outputs something outside the run reads (a later op, or the module's output).
  A cast of a tensor already cast to the same dtype is dropped (Inductor's common subexpression elimination).
  approximation: Inductor also fuses a pointwise epilogue into some GEMMs and splits some chains
  (reductions of different shapes); neither is modelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..cost.op import Op, make_op
from ..cost.symbolic import Expr
from .aten_costs import AtenCost, aten_cost, packet
from .recorder import RecordedOp

FUSIBLE_KINDS = ("elementwise", "norm")
FUSIONS = ("eager", "elementwise")


@dataclass(frozen=True, slots=True)
class Kernel:
    """One kernel of the traced forward: the aten ops it runs, where, and its FLOPs and bytes."""

    aten: str  # "aten.addmm.default", or "fused: aten.add + aten.gelu" for a fused chain
    module: str  # the module path (a fused chain: the longest path its ops share)
    shapes: str  # input shapes of its first op, e.g. "[8, 197, 768] [768, 2304]"
    kind: str
    matmul_flops: float
    vector_flops: float
    bytes_read: float
    bytes_written: float
    dtype: str
    known: bool = True
    gemm: tuple[int, int, int] | None = None  # (M, N, K): where a measured GEMM table may time it
    # fused attention (batch, heads, KV heads, query length, key length, head dim, value dim, causal): where a
    # measured attention table may time it
    attention: tuple[int, int, int, int, int, int, int, bool] | None = None

    def to_op(self, precision: str) -> Op:
        """The same kernel as an llmsim Op (count 1, one launch), for the shared timing and plots."""
        return make_op(f"{self.aten} @ {self.module or '<root>'}", self.kind, 1,
                       matmul_flops=Expr.const(self.matmul_flops), vector_flops=Expr.const(self.vector_flops),
                       bytes_read=Expr.const(self.bytes_read), bytes_written=Expr.const(self.bytes_written),
                       precision=precision)


def _shapes(op: RecordedOp) -> str:
    return " ".join(str(list(t.shape)) for t in op.inputs[:3])


def _dtype(op: RecordedOp) -> str:
    tensors = op.outputs or op.inputs
    return tensors[0].dtype if tensors else ""


def _single(op: RecordedOp, cost: AtenCost) -> Kernel:
    return Kernel(aten=op.aten, module=op.module, shapes=_shapes(op), kind=cost.kind, matmul_flops=cost.matmul_flops,
                  vector_flops=cost.vector_flops, bytes_read=cost.bytes_read, bytes_written=cost.bytes_written,
                  dtype=_dtype(op), known=cost.known, gemm=cost.gemm, attention=cost.attention)


def _common_path(paths: list[str]) -> str:
    parts = [p.split(".") if p else [] for p in paths]
    common: list[str] = []
    for level in zip(*parts, strict=False):
        if any(x != level[0] for x in level):
            break
        common.append(level[0])
    return ".".join(common)


def _fused(chain: list[tuple[int, RecordedOp, AtenCost]], readers: dict[int, list[int]],
           returned: frozenset[int]) -> Kernel:
    """One kernel for a chain of fusible ops (see the module docstring)."""
    first, last = chain[0][0], chain[-1][0]
    # a tensor is read from memory unless an earlier op of the chain made it: in order, so that an in-place op
    # (its output the storage of its input) still reads what was there before the chain
    produced: set[int] = set()
    read: dict[int, int] = {}
    for _, op, _ in chain:
        for t in op.inputs:
            if t.ident not in produced:
                read[t.ident] = max(read.get(t.ident, 0), t.bytes)
        produced.update(t.ident for t in op.outputs)
    written: dict[int, int] = {}
    for _, op, _ in chain:
        for t in op.outputs:
            outside = any(i < first or i > last for i in readers.get(t.ident, ()))
            if outside or t.ident in returned:
                written[t.ident] = max(written.get(t.ident, 0), t.bytes)
    ops = [op for _, op, _ in chain]
    names = " + ".join(dict.fromkeys(f"aten.{packet(op.aten)}" for op in ops))
    return Kernel(aten=f"fused: {names}", module=_common_path([op.module for op in ops]), shapes=_shapes(ops[0]),
                  kind="norm" if any(c.kind == "norm" for _, _, c in chain) else "elementwise",
                  matmul_flops=sum(c.matmul_flops for _, _, c in chain),
                  vector_flops=sum(c.vector_flops for _, _, c in chain),
                  bytes_read=float(sum(read.values())), bytes_written=float(sum(written.values())),
                  dtype=_dtype(ops[-1]))


def _without_repeated_casts(costed: list[tuple[int, RecordedOp, AtenCost]]) -> list[tuple[int, RecordedOp, AtenCost]]:
    """The ops less every dtype cast (aten._to_copy) of a tensor already cast to that dtype: Inductor's common
    subexpression elimination computes one conversion of a value once (eager autocast casts a float32 norm's
    output again for each linear that reads it: transformers' separate q, k and v projections)."""
    seen: set[tuple[int, tuple[int, ...], str]] = set()
    kept = []
    for item in costed:
        op = item[1]
        if packet(op.aten) == "_to_copy" and op.inputs and op.outputs:
            key = (op.inputs[0].ident, op.inputs[0].shape, op.outputs[0].dtype)
            if key in seen:
                continue
            seen.add(key)
        kept.append(item)
    return kept


def kernels_of(recorded: list[RecordedOp], returned: frozenset[int], fusion: str) -> list[Kernel]:
    """The kernels of the recorded forward under `fusion` ("eager" or "elementwise")."""
    costed = [(i, op, aten_cost(op)) for i, op in enumerate(recorded)]
    costed = [(i, op, c) for i, op, c in costed if c.kind != "view"]
    if fusion == "eager":
        return [_single(op, c) for _, op, c in costed]
    costed = _without_repeated_casts(costed)
    readers: dict[int, list[int]] = {}
    for i, op in enumerate(recorded):
        for t in op.inputs:
            readers.setdefault(t.ident, []).append(i)
    kernels: list[Kernel] = []
    chain: list[tuple[int, RecordedOp, AtenCost]] = []
    for item in costed:
        if item[2].kind in FUSIBLE_KINDS and item[2].known:
            chain.append(item)
            continue
        if chain:
            kernels.append(_fused(chain, readers, returned) if len(chain) > 1 else _single(chain[0][1], chain[0][2]))
            chain = []
        kernels.append(_single(item[1], item[2]))
    if chain:
        kernels.append(_fused(chain, readers, returned) if len(chain) > 1 else _single(chain[0][1], chain[0][2]))
    return kernels
