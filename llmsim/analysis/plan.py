"""Capacity planning: the tensor/pipeline split and batch size that meet latency targets at the best
throughput per GPU, and how many GPUs reach a target rate."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, field_validator, model_serializer

from ..cost.blocks.parallel import check_expert_parallel
from ..cost.workload import BATCH_MAX, COUNT_MAX, check_count, check_one
from ..errors import OptionError, check_positive
from .simulate import check_workload, default_microbatches, resolve, simulate
from .text import NO_DECODE_NOTE, device_word


class PlanCandidate(BaseModel):
    """One configuration: a replica of tensor_parallel x pipeline_parallel GPUs running batch_size."""

    model_config = ConfigDict(frozen=True)
    tensor_parallel: int
    pipeline_parallel: int
    batch_size: int
    expert_parallel: int = 1  # the experts' split over the tensor-parallel GPUs (MoE models)
    gpus_per_replica: int
    ttft_s: float
    tpot_s: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    memory_per_gpu_bytes: float
    fits: bool
    meets_targets: bool
    replicas: int
    gpus_needed: int
    usd_per_hour: float | None
    usd_per_million_tokens: float | None

    @field_validator("tpot_s", mode="before")
    @classmethod
    def _null_is_zero(cls, value: Any) -> Any:
        return 0.0 if value is None else value  # read back from JSON (gen_len = 1: no decode step)


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True)
    model: str
    hardware: str
    best: PlanCandidate | None
    candidates: list[PlanCandidate]
    pareto: list[PlanCandidate]
    reason: str
    device_type: Literal["gpu", "cpu"] = "gpu"  # the hardware's: text counts per GPU or per CPU
    # the latency the Pareto front trades against tokens/s per device: TPOT, or TTFT when gen_len = 1 (the prefill
    # samples the only token: no decode step, every TPOT 0)
    front_latency: Literal["tpot_s", "ttft_s"] = "tpot_s"
    notes: list[str] = []  # splits asked for and left out, and why (past max_gpus, or not dividing the model)

    @model_serializer(mode="wrap")
    def _no_decode_is_null(self, handler: Any) -> Any:
        """With gen_len = 1 (front_latency "ttft_s") every candidate's TPOT is null in JSON: no decode step."""
        data = handler(self)
        if self.front_latency == "ttft_s" and isinstance(data, dict):
            for key in ("candidates", "pareto"):
                for candidate in data.get(key) or []:
                    candidate["tpot_s"] = None
            if isinstance(data.get("best"), dict):
                data["best"]["tpot_s"] = None
        return data

    def to_pandas(self) -> Any:
        """One row per candidate: its fields, and columns `best` and `pareto`."""
        from ..frames import candidates_frame

        return candidates_frame(self.candidates, self.best, self.pareto)

    def __str__(self) -> str:
        lines = [f"{self.model} on {self.hardware}: {self.reason}"]
        device = device_word(self.device_type)
        rows = ([self.best] if self.best else []) + [c for c in self.pareto if c != self.best]
        with_ep = any(c.expert_parallel > 1 for c in rows)  # an EP column only where a row splits its experts
        priced = any(c.usd_per_million_tokens is not None for c in rows)  # a price given or in the hardware file
        header = (f"  {'TP':>3} {'PP':>3} " + (f"{'EP':>3} " if with_ep else "") + f"{'batch':>6} {'TTFT':>10} "
                  f"{'TPOT':>10} {'tok/s/' + device:>10} {device + 's':>6}"
                  + (f" {'USD/hour':>9} {'USD/M tok':>9}" if priced else ""))
        lines.append("  best:" if self.best else "  no configuration meets the targets")
        if rows:  # (no header over nothing)
            lines.append(header)
        latency = "TPOT" if self.front_latency == "tpot_s" else "TTFT"
        for i, c in enumerate(rows):
            if i == 1:
                also = ", besides the best above" if self.best in self.pareto else ""  # it is printed once
                lines.append(f"  Pareto front ({latency} against throughput per {device}{also}):")
            tpot = f"{c.tpot_s * 1e3:>8.2f}ms" if self.front_latency == "tpot_s" else f"{'n/a':>10}"
            lines.append(f"  {c.tensor_parallel:>3} {c.pipeline_parallel:>3} "
                         + (f"{c.expert_parallel:>3} " if with_ep else "") + f"{c.batch_size:>6} "
                         f"{c.ttft_s * 1e3:>8.1f}ms {tpot} {c.tokens_per_s_per_gpu:>10.1f} "
                         f"{c.gpus_needed:>6}" + (f" {c.usd_per_hour:>9.2f} {c.usd_per_million_tokens:>9.3f}"
                                                 if priced and c.usd_per_hour is not None else ""))
        if self.front_latency == "ttft_s" and rows:
            lines.append(f"  {NO_DECODE_NOTE}")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


def plan(model: Any, hardware: Any, prompt_len: int = 2048, gen_len: int = 256, ttft_slo_s: float | None = None,
         tpot_slo_s: float | None = None, target_tokens_per_s: float | None = None, max_gpus: int = 64,
         usd_per_gpu_hour: float | None = None, batch_sizes: list[int] | None = None,
         tensor_parallel: list[int] | None = None, pipeline_parallel: list[int] | None = None,
         **options: Any) -> Plan:
    """Search tensor/pipeline degree and batch size; keep what fits and meets the latency targets;
    rank by generated tokens per second per GPU (then by cost when a price is known)."""
    # everything but the split is checked once, up front, so an error names its field and is not mistaken for
    # a split that does not divide the model; expert_parallel must divide each tensor-parallel degree tried
    spec, hw, _, _ = resolve(model, hardware, **{k: v for k, v in options.items() if k != "expert_parallel"})
    if options.get("expert_parallel") is not None:
        check_expert_parallel(spec, check_one("expert_parallel", options["expert_parallel"], 1))
    prompt_len, gen_len = check_one("prompt_len", prompt_len, 1), check_one("gen_len", gen_len, 1)
    check_workload(spec, 1, prompt_len, gen_len)
    max_gpus = check_one("max_gpus", max_gpus, 1)
    if tpot_slo_s is not None and gen_len == 1:  # it was dropped without a word
        raise OptionError(f"tpot_slo_s={tpot_slo_s!r} with gen_len=1: one generated token has no decode step, so no "
                          "TPOT to hold to it; give gen_len >= 2 or leave tpot_slo_s out")
    ttft_slo_s, tpot_slo_s, target_tokens_per_s, usd_per_gpu_hour = (
        None if value is None else check_positive(field, value, unit) for field, value, unit in (
            ("ttft_slo_s", ttft_slo_s, "seconds"), ("tpot_slo_s", tpot_slo_s, "seconds"),
            ("target_tokens_per_s", target_tokens_per_s, "tokens per second"),
            ("usd_per_gpu_hour", usd_per_gpu_hour, "US dollars")))
    price = usd_per_gpu_hour
    if price is None and "usd_per_hour" in hw.price:
        price = hw.price["usd_per_hour"].value
    batches = _choices("batch_sizes", batch_sizes, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], BATCH_MAX)
    # by default a replica stays within what the file links (cpu-generic, one socket: 1; a PCIe box without an
    # inter-node link: gpus_per_node); a split past it asked for by name is refused, the missing link named
    linked = hw.linked_gpus
    tps = _choices("tensor_parallel", tensor_parallel, [t for t in (1, 2, 4, 8, 16) if t <= max_gpus and (
        t <= linked)])
    pps = _choices("pipeline_parallel", pipeline_parallel, [p for p in (1, 2, 4, 8) if p <= max_gpus and (
        p <= linked)])
    if options.get("pipeline_decode") == "lockstep" and max(pps) == 1:  # it applies under pipeline parallelism only
        raise OptionError(f"pipeline_decode={options['pipeline_decode']!r}: every split searched has "
                          "pipeline_parallel=1, where it changes nothing; search pipeline_parallel > 1 or leave it out")
    candidates: list[PlanCandidate] = []
    skipped: dict[str, None] = {}  # why a split was left out (it does not divide the model)
    notes: dict[str, None] = {}  # the splits asked for by name and left out, said with the plan
    # a MoE model without expert_parallel given: each tensor-parallel group also with its experts spread over its
    # GPUs (expert_parallel = tensor_parallel), as engines run --enable-expert-parallel
    search_ep = options.get("expert_parallel") is None and any(g.layer.is_moe for g in spec.layer_groups)
    splits = [(t, e) for t in tps for e in ([1, t] if search_ep and t > 1 else [None])]
    for tp, ep in splits:
        split = {**options, "expert_parallel": ep} if ep is not None else options
        for pp in pps:
            asked = (tp if tensor_parallel is not None else 1) * (pp if pipeline_parallel is not None else 1)
            if tp * pp > max_gpus or (asked <= linked < tp * pp):  # a default degree past the link: left out
                if (tensor_parallel is not None and tp > 1) or (pipeline_parallel is not None and pp > 1):
                    notes[f"TP={tp} x PP={pp} left out: {tp * pp} {device_word(hw.device_type)}s, past max_gpus="
                          f"{max_gpus}" if tp * pp > max_gpus else
                          f"TP={tp} x PP={pp} left out: past the {linked} linked by the hardware file"] = None
                continue
            for batch in batches:
                try:
                    r = simulate(spec, hw, batch_size=batch, prompt_len=prompt_len, gen_len=gen_len,
                                 tensor_parallel=tp, pipeline_parallel=pp,
                                 num_microbatches=default_microbatches(batch, pp),
                                 **{k: v for k, v in split.items() if pp > 1 or k != "pipeline_decode"})
                except OptionError as exc:  # all but the split was checked above: this split does not divide
                    skipped[str(exc)] = None  # the model; larger batches will not help
                    notes[f"TP={tp} x PP={pp} left out: {exc}"] = None
                    break
                meets = r.memory.fits and (ttft_slo_s is None or r.ttft_s <= ttft_slo_s) and (
                    tpot_slo_s is None or r.tpot_s <= tpot_slo_s)
                per_replica = tp * pp
                replicas = math.ceil(target_tokens_per_s / r.throughput_tokens_per_s) if target_tokens_per_s else 1
                dollars = price * per_replica if price is not None else None
                candidates.append(PlanCandidate(
                    tensor_parallel=tp, pipeline_parallel=pp, expert_parallel=r.expert_parallel, batch_size=batch,
                    gpus_per_replica=per_replica,
                    ttft_s=r.ttft_s, tpot_s=r.tpot_s, tokens_per_s=r.throughput_tokens_per_s,
                    tokens_per_s_per_gpu=r.tokens_per_s_per_gpu, memory_per_gpu_bytes=r.memory.total_bytes,
                    fits=r.memory.fits, meets_targets=meets, replicas=replicas, gpus_needed=replicas * per_replica,
                    usd_per_hour=dollars * replicas if dollars is not None else None,
                    usd_per_million_tokens=dollars / (r.throughput_tokens_per_s * 3600) * 1e6
                    if dollars is not None else None,
                ))
    feasible = [c for c in candidates if c.meets_targets]
    if not candidates:
        reasons = list(skipped)
        if not reasons:
            raise OptionError(f"no split of tensor_parallel {tps} x pipeline_parallel {pps} fits within "
                              f"max_gpus={max_gpus}")
        more = f" (and {len(reasons) - 1} more)" if reasons[1:] else ""
        raise OptionError(f"no tensor/pipeline split divides this model within max_gpus={max_gpus}: {reasons[0]}{more}")
    best = max(feasible, key=lambda c: (c.tokens_per_s_per_gpu, -(c.usd_per_million_tokens or 0)), default=None)
    front_latency = "tpot_s" if gen_len > 1 else "ttft_s"
    pareto = _pareto(feasible, front_latency)
    device = device_word(hw.device_type)
    if best is None:
        reason = f"no configuration fits and meets the targets; relax the targets or allow more {device}s"
    else:
        ep = f" (EP={best.expert_parallel})" if best.expert_parallel > 1 else ""
        reason = (f"best TP={best.tensor_parallel} x PP={best.pipeline_parallel}{ep}, batch {best.batch_size}: "
                  f"{best.tokens_per_s_per_gpu:.1f} tokens/s per {device}")
        if target_tokens_per_s:
            reason += (f"; {best.replicas} replicas ({best.gpus_needed} {device}s) for {target_tokens_per_s:g} "
                       "tokens/s")
    return Plan(model=spec.name, hardware=hw.name, best=best, candidates=candidates, pareto=pareto, reason=reason,
                device_type=hw.device_type, front_latency=front_latency, notes=list(notes))


def _choices(field: str, given: Any, default: list[int], maximum: int = COUNT_MAX) -> list[int]:
    """The values a plan searches: the caller's (a number or a list, each checked), else the default."""
    if given is None:
        return default
    values = np.atleast_1d(check_count(field, given, 1, maximum))
    if values.ndim != 1:
        raise OptionError(f"{field} must be a number or a flat list of numbers")
    return list(dict.fromkeys(int(v) for v in values))  # a value given twice is searched once


def _pareto(candidates: list[PlanCandidate], latency: str) -> list[PlanCandidate]:
    """Configurations no other beats on both latency (lower: TPOT, or TTFT with no decode step) and tokens/s per
    GPU (higher)."""
    front = []
    for c in sorted(candidates, key=lambda c: (getattr(c, latency), -c.tokens_per_s_per_gpu)):
        if not front or c.tokens_per_s_per_gpu > front[-1].tokens_per_s_per_gpu:
            front.append(c)
    return front
