"""One layer of one step, LLM-Viewer style: per op of a layer (per layer group for mixed models, e.g.
sliding/full attention or dense/MoE), its FLOPs, bytes, arithmetic intensity, time and bound, and the
layer's total; the ops outside the layers (embedding, final norm, LM head) beside them.

Step: prefill is one forward pass over the prompt; decode step i (1 .. gen_len - 1) attends to
kv_len = prompt_len + i - 1 cached tokens (simulate's definition), timed alone (decode_totals with one
step), so that  sum over groups of (layer time x layers) + the other ops = that step's time, exactly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from ..cost.workload import check_one
from ..errors import OptionError, check_choice

if TYPE_CHECKING:
    import pandas


class LayerOp(BaseModel):
    """One op of one layer (or one op outside the layers), one step: what it does and what it costs."""

    model_config = ConfigDict(frozen=True)
    name: str  # without the group's prefix ("attn.qkv_proj"); the full name for ops outside the layers
    kind: str
    flops: float  # matmul_flops + vector_flops
    matmul_flops: float  # on the matrix unit (2 per multiply-add)
    bytes: float
    arithmetic_intensity: float  # flops / bytes, 0 without bytes
    time_s: float
    bound: str
    source: str  # where its time comes from: a measured table or "roofline"


class LayerGroupTable(BaseModel):
    """One layer of a group of identical layers: its ops, the layer's total, and how many layers run it."""

    model_config = ConfigDict(frozen=True)
    group: str  # the group's tag ("sliding", "moe"), "" for a model with one kind of layer
    layers: int
    ops: list[LayerOp]
    flops: float
    matmul_flops: float
    bytes: float
    time_s: float
    bound: str  # where the largest share of the layer's time goes


class LayerTable(BaseModel):
    """Per layer, one step: the layer groups, the ops outside the layers, and the step's time."""

    model_config = ConfigDict(frozen=True)
    model: str
    hardware: str
    phase: str
    step: int  # 0 for prefill
    batch_size: int
    tokens: int  # new tokens per sequence this step: prompt_len for prefill, 1 for decode
    kv_len: int  # cached tokens attended to besides the new ones (0 for prefill)
    groups: list[LayerGroupTable]
    other_ops: list[LayerOp]  # totals of their runs this step (count included)
    step_time_s: float  # = sum(group.time_s * group.layers) + sum(other_ops.time_s)

    def __str__(self) -> str:
        from .text import fmt_s as _fmt_s

        where = "prefill" if self.phase == "prefill" else f"decode step {self.step} (kv_len {self.kv_len})"
        lines = [f"{self.model} on {self.hardware}: {where}, batch {self.batch_size}, {self.tokens} new "
                 f"token{'s' if self.tokens != 1 else ''} per sequence; step time {_fmt_s(self.step_time_s)}"]
        header = f"  {'op':<36} {'MFLOP':>12} {'MB':>10} {'FLOP/B':>8} {'time':>10} {'bound':>8}  source"
        for group in self.groups:
            label = f"one {group.group + ' ' if group.group else ''}layer (x{group.layers})"
            lines += ["", label, header]
            lines += [_row(op) for op in group.ops]
            lines.append(_row(LayerOp(name="layer total", kind="", flops=group.flops, matmul_flops=group.matmul_flops,
                                      bytes=group.bytes,
                                      arithmetic_intensity=group.flops / group.bytes if group.bytes else 0.0,
                                      time_s=group.time_s, bound=group.bound, source="")))
        if self.other_ops:
            lines += ["", "outside the layers (all their runs)", header]
            lines += [_row(op) for op in self.other_ops]
        return "\n".join(lines)

    def to_pandas(self) -> pandas.DataFrame:
        """One row per op: group ("" for one kind of layer, None outside the layers), layers, the LayerOp fields."""
        from ..frames import data_frame

        rows = [{"group": g.group, "layers": g.layers, **op.model_dump()} for g in self.groups for op in g.ops]
        rows += [{"group": None, "layers": 0, **op.model_dump()} for op in self.other_ops]
        return data_frame(rows)


def _row(op: LayerOp) -> str:
    from .text import fmt_s as _fmt_s

    return (f"  {op.name:<36} {op.flops / 1e6:>12.3f} {op.bytes / 1e6:>10.3f} {op.arithmetic_intensity:>8.1f} "
            f"{_fmt_s(op.time_s):>10} {op.bound:>8}  {op.source}")


def layer_table(result: Any, phase: str = "decode", step: int | None = None) -> LayerTable:
    """The per-layer table of `result` for one step of `phase` (decode default: the middle step)."""
    from ..timing.phases import decode_totals, prefill_totals
    from ..timing.roofline import BOUNDS, Roofline
    from .evaluation import _op_fields, evaluate_inputs, pipeline_of

    phase = check_choice("phase", phase, ("prefill", "decode"))
    steps = result.gen_len - 1
    if phase == "prefill":
        if step not in (None, 0, 1):
            raise OptionError(f"step={step!r}: prefill is one step; leave step out for phase='prefill'")
        step = 0
    elif steps < 1:
        raise OptionError(f"phase='decode': gen_len={result.gen_len} has no decode step; give gen_len >= 2 or "
                          "phase='prefill'")
    else:
        step = (steps + 1) // 2 if step is None else check_one("step", step, 1, steps)
    spec, hw, cost, execution = evaluate_inputs(result)
    roofline = Roofline(hw, execution)
    micro = result.batch_size // result.num_microbatches
    kv_len = result.prompt_len + step - 1 if phase == "decode" else 0
    if phase == "prefill":
        totals = prefill_totals(spec, roofline, cost, micro, result.prompt_len)
    else:
        totals = decode_totals(spec, roofline, cost, micro, kv_len, 1)
    totals = pipeline_of(totals, spec, roofline, cost, micro, result.prompt_len if phase == "prefill" else 1,
                         result.pipeline_parallel, result.num_microbatches,
                         steady=phase == "decode" and execution.pipeline_decode == "steady")
    columns = {key: list(map(float, values)) for key, values in totals.per_op.items()}
    step_time_s = float(sum(columns["time_s"]))
    fields = _op_fields(totals, columns, step_time_s, roofline)
    prefixes = [(g.tag, g.count, f"layers.{g.tag}." if g.tag and len(spec.layer_groups) > 1 else "layers.")
                for g in spec.layer_groups]
    groups, other = [], []
    for tag, layers, prefix in prefixes:
        # one layer's share of each op: its total over the group's layers (an op can run twice in a layer:
        # Falcon's two residual adds, 64 runs in 32 layers, listed once at one run's time before)
        ops = [_layer_op(f, prefix, layers) for f in fields if f["name"].startswith(prefix)]
        parts = {b: sum(f[f"{b}_s"] / layers for f in fields if f["name"].startswith(prefix)) for b in BOUNDS}
        time_s = sum(op.time_s for op in ops)
        groups.append(LayerGroupTable(
            group=tag if prefix != "layers." else "", layers=layers, ops=ops, flops=sum(op.flops for op in ops),
            matmul_flops=sum(op.matmul_flops for op in ops),
            bytes=sum(op.bytes for op in ops), time_s=time_s,
            bound=max(parts, key=lambda b: parts[b]) if time_s > 0 else "none"))
    other = [_layer_op(f, "", 1) for f in fields if not any(f["name"].startswith(p) for _, _, p in prefixes)]
    return LayerTable(model=result.model, hardware=result.hardware, phase=phase, step=step, batch_size=micro,
                      tokens=result.prompt_len if phase == "prefill" else 1, kv_len=kv_len, groups=groups,
                      other_ops=other, step_time_s=step_time_s)


def _layer_op(fields: dict[str, Any], prefix: str, per: int) -> LayerOp:
    """An op's fields over `per` runs (its layer count: one layer), its name without the group prefix."""
    flops = (fields["matmul_flops"] + fields["vector_flops"]) / per
    moved = fields["bytes"] / per
    return LayerOp(name=fields["name"][len(prefix):], kind=fields["kind"], flops=flops,
                   matmul_flops=fields["matmul_flops"] / per, bytes=moved,
                   arithmetic_intensity=fields["arithmetic_intensity"], time_s=fields["time_s"] / per,
                   bound=fields["bound"], source=fields["source"])
