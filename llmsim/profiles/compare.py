"""A measured ProfileData beside a SimulationResult: per op class, and kernel by kernel where they match.

The profile is taken to be one forward pass of the simulated workload: a prefill (phase="prefill") or one
decode step (phase="decode": the predicted decode totals divided by its steps).

Matching (matmul and attention only):
- A kernel with FLOPs (from shapes or counters) matches the predicted ops of its class whose FLOPs per run
  equal its FLOPs per call (relative difference < 1e-6): k_proj and v_proj of one shape both match the one
  aten::mm group that ran them. Kernels matching the same ops are reported as one match (gate/up and down
  projections do equal FLOPs; the prediction carries no shapes to tell them apart).
- Kernels with no FLOPs (Nsight Systems exports: names and times only) are paired with the predicted ops
  grouped by FLOPs per run, both sorted by time, when the two lists are equally long (approximation: the
  same order of cost measured and predicted); the kernel then takes the ops' FLOPs and bytes per call,
  marked "matched op". Otherwise they stay unmatched and only the class totals compare.
Predicted times are kernel times (the op's time less its overhead and communication parts; a collective's, its
communication time, beside the measured NCCL and custom all-reduce kernels); the "overhead"
class compares the predicted overhead with the measured idle time plus the host-only ops.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import OptionError, check_choice
from .model import Kernel, ProfileData

KIND_CLASS = {"matmul": "matmul", "attention": "attention", "norm": "elementwise", "elementwise": "elementwise",
              "embedding": "elementwise", "routing": "elementwise", "cache": "elementwise",
              "communication": "communication"}
_MATCHED = ("matmul", "attention")
_TOLERANCE = 1e-6


class KernelMatch(BaseModel):
    """One measured kernel group and the predicted ops it ran."""

    model_config = ConfigDict(frozen=True)
    kernel: str
    shapes: str
    op_class: str
    calls: int
    measured_s: float
    ops: list[str]
    predicted_calls: int
    predicted_s: float
    flops_per_call: float | None


class ClassRow(BaseModel):
    model_config = ConfigDict(frozen=True)
    op_class: str
    measured_s: float
    predicted_s: float


class ProfileComparison(BaseModel):
    """Predicted against measured, per op class and per matched kernel; profile: the measured profile with
    FLOPs and bytes filled in from matched ops where it had none."""

    model_config = ConfigDict(frozen=True)
    phase: str
    model: str
    hardware: str
    classes: list[ClassRow]
    matches: list[KernelMatch]
    unmatched_kernels: list[str]
    unmatched_ops: list[str]
    profile: ProfileData

    def __str__(self) -> str:
        lines = [f"{self.profile.path} against {self.model} on {self.hardware} ({self.phase}, one pass)",
                 f"  {'class':<12} {'measured ms':>12} {'predicted ms':>13} {'measured/predicted':>19}"]
        for c in self.classes:
            ratio = f"{c.measured_s / c.predicted_s:.3g}" if c.predicted_s > 0 else "-"
            lines.append(f"  {c.op_class:<12} {c.measured_s * 1e3:>12.4f} {c.predicted_s * 1e3:>13.4f} {ratio:>19}")
        lines.append(f"  matched kernels ({len(self.matches)}):")
        for m in self.matches:
            ratio = f"{m.measured_s / m.predicted_s:.3g}" if m.predicted_s > 0 else "-"
            lines.append(f"    {m.kernel} {m.shapes} x{m.calls} = {', '.join(m.ops)} (x{m.predicted_calls}): "
                         f"{m.measured_s * 1e3:.4f} ms measured, {m.predicted_s * 1e3:.4f} ms predicted ({ratio}x)")
        if self.unmatched_kernels:
            lines.append(f"  unmatched kernels: {', '.join(self.unmatched_kernels)}")
        if self.unmatched_ops:
            lines.append(f"  unmatched predicted ops: {', '.join(self.unmatched_ops)}")
        return "\n".join(lines)


def _predicted(result: Any, phase: str) -> list[dict[str, Any]]:
    """Per predicted op of the phase, per pass: class, runs, FLOPs per run, bytes per run, kernel time."""
    phase_result = result.prefill if phase == "prefill" else result.decode
    steps = max(phase_result.steps, 1)
    out = []
    for op in phase_result.ops:
        runs = op.count
        # a collective's kernel is its communication time (NCCL's or the custom all-reduce's kernel on the GPU)
        kernel_s = (op.communication_s if op.kind == "communication" else
                    op.time_s - op.overhead_s - op.communication_s) / steps
        out.append({"name": op.name, "class": KIND_CLASS.get(op.kind, "other"), "runs": runs,
                    "flops": (op.matmul_flops + op.vector_flops) / steps / runs if runs else 0.0,
                    "bytes": op.bytes / steps / runs if runs else 0.0, "kernel_s": kernel_s,
                    "overhead_s": op.overhead_s / steps})
    return out


def compare(profile: ProfileData, result: Any, phase: str = "prefill") -> ProfileComparison:
    check_choice("phase", phase, ("prefill", "decode"))
    if phase == "decode" and getattr(result, "gen_len", 2) < 2:  # its decode ops' times are all 0: no step
        raise OptionError(f"phase='decode': the result has no decode step (gen_len={result.gen_len}); simulate it "
                          "with gen_len >= 2")
    predicted = _predicted(result, phase)
    matches: list[KernelMatch] = []
    used: set[str] = set()
    filled: dict[int, Kernel] = {}
    by_flops: dict[str, dict[float, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for p in predicted:
        if p["class"] in _MATCHED and p["flops"] > 0:
            by_flops[p["class"]][p["flops"]].append(p)
    unmatched: list[Kernel] = []
    for k in profile.kernels:
        if k.op_class not in _MATCHED:
            continue
        per_call = k.flops_per_call
        group = None if per_call is None else next(
            (ops for f, ops in by_flops[k.op_class].items() if abs(f - per_call) <= _TOLERANCE * max(f, 1.0)), None)
        if group is None:
            if per_call is None:
                unmatched.append(k)
            else:
                matches.append(_match(k, []))
            continue
        matches.append(_match(k, group))
        used.update(p["name"] for p in group)
    # kernels without FLOPs: pair with the unused predicted shapes by time order when the counts agree
    for op_class in _MATCHED:
        kernels = sorted((k for k in unmatched if k.op_class == op_class), key=lambda k: -k.time_s)
        groups = sorted((ops for ops in by_flops[op_class].values() if not used & {p["name"] for p in ops}),
                        key=lambda ops: -sum(p["kernel_s"] for p in ops))
        if kernels and len(kernels) == len(groups):
            for k, ops in zip(kernels, groups):
                matches.append(_match(k, ops))
                used.update(p["name"] for p in ops)
                filled[id(k)] = k.model_copy(update={
                    "flops": ops[0]["flops"] * k.calls, "flops_source": "matched op",
                    "bytes": ops[0]["bytes"] * k.calls, "bytes_source": "matched op"})
            unmatched = [k for k in unmatched if k.op_class != op_class]
    kernels = [filled.get(id(k), k) for k in profile.kernels]
    matches = _merged(matches)
    return ProfileComparison(
        phase=phase, model=result.model, hardware=result.hardware, classes=_classes(profile, predicted),
        matches=[m for m in matches if m.ops],
        unmatched_kernels=[f"{m.kernel} {m.shapes}".strip() for m in matches if not m.ops]
        + [k.name for k in unmatched],
        unmatched_ops=[p["name"] for p in predicted if p["class"] in _MATCHED and p["name"] not in used],
        profile=profile.model_copy(update={"kernels": kernels}))


def _merged(matches: list[KernelMatch]) -> list[KernelMatch]:
    """One match per set of predicted ops: kernels of equal FLOPs per call (gate/up [T, h] @ [h, I] and down
    [T, I] @ [I, h]) match the same ops, and a prediction without shapes cannot tell them apart."""
    by_ops: dict[tuple[str, ...], list[KernelMatch]] = defaultdict(list)
    for m in matches:
        by_ops[tuple(m.ops) or (m.kernel + m.shapes,)].append(m)
    out = []
    for group in by_ops.values():
        first = group[0]
        out.append(first if len(group) == 1 else first.model_copy(update={
            "shapes": " + ".join(m.shapes for m in group), "calls": sum(m.calls for m in group),
            "measured_s": sum(m.measured_s for m in group)}))
    return out


def _match(k: Kernel, ops: list[dict[str, Any]]) -> KernelMatch:
    return KernelMatch(kernel=k.name, shapes=k.shapes, op_class=k.op_class, calls=k.calls, measured_s=k.time_s,
                       ops=[p["name"] for p in ops], predicted_calls=sum(p["runs"] for p in ops),
                       predicted_s=sum(p["kernel_s"] for p in ops),
                       flops_per_call=k.flops_per_call if k.flops_per_call is not None else (
                           ops[0]["flops"] if ops else None))


def _classes(profile: ProfileData, predicted: list[dict[str, Any]]) -> list[ClassRow]:
    measured: dict[str, float] = defaultdict(float)
    for k in profile.kernels:
        measured["overhead" if k.op_class == "host" else k.op_class] += k.time_s
    measured["overhead"] += profile.idle_s or 0.0
    expected: dict[str, float] = defaultdict(float)
    for p in predicted:
        expected[p["class"]] += p["kernel_s"]
        expected["overhead"] += p["overhead_s"]
    names = [c for c in ("matmul", "attention", "elementwise", "communication", "copy", "other", "overhead")
             if measured.get(c) or expected.get(c)]
    return [ClassRow(op_class=c, measured_s=measured.get(c, 0.0), predicted_s=expected.get(c, 0.0)) for c in names]
