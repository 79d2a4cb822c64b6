"""Capacity planning: the tensor/pipeline split and batch size that meet latency targets at the best
throughput per GPU, and how many GPUs reach a target rate."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import LlmsimError, OptionError
from ..hardware.spec import load_hardware
from ..models.loading import load_model
from .simulate import simulate


class PlanCandidate(BaseModel):
    """One configuration: a replica of tensor_parallel x pipeline_parallel GPUs running batch_size."""

    model_config = ConfigDict(frozen=True)
    tensor_parallel: int
    pipeline_parallel: int
    batch_size: int
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


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True)
    model: str
    hardware: str
    best: PlanCandidate | None
    candidates: list[PlanCandidate]
    pareto: list[PlanCandidate]
    reason: str

    def __str__(self) -> str:
        lines = [f"{self.model} on {self.hardware}: {self.reason}"]
        header = f"  {'TP':>3} {'PP':>3} {'batch':>6} {'TTFT':>10} {'TPOT':>10} {'tok/s/GPU':>10} {'GPUs':>6}"
        lines.append("  best:" if self.best else "  no configuration meets the targets")
        rows = ([self.best] if self.best else []) + [c for c in self.pareto if c != self.best]
        lines.append(header)
        for i, c in enumerate(rows):
            if i == 1:
                lines.append("  Pareto front (latency against throughput per GPU):")
            lines.append(f"  {c.tensor_parallel:>3} {c.pipeline_parallel:>3} {c.batch_size:>6} "
                         f"{c.ttft_s * 1e3:>8.1f}ms {c.tpot_s * 1e3:>8.2f}ms {c.tokens_per_s_per_gpu:>10.1f} "
                         f"{c.gpus_needed:>6}")
        return "\n".join(lines)


def plan(model: Any, hardware: Any, prompt_len: int = 2048, gen_len: int = 256, ttft_slo_s: float | None = None,
         tpot_slo_s: float | None = None, target_tokens_per_s: float | None = None, max_gpus: int = 64,
         usd_per_gpu_hour: float | None = None, batch_sizes: list[int] | None = None,
         tensor_parallel: list[int] | None = None, pipeline_parallel: list[int] | None = None,
         **options: Any) -> Plan:
    """Search tensor/pipeline degree and batch size; keep what fits and meets the latency targets;
    rank by generated tokens per second per GPU (then by cost when a price is known)."""
    spec, hw = load_model(model), load_hardware(hardware)
    if max_gpus < 1:
        raise OptionError(f"max_gpus={max_gpus} must be >= 1")
    price = usd_per_gpu_hour
    if price is None and "usd_per_hour" in hw.price:
        price = hw.price["usd_per_hour"].value
    batches = batch_sizes or [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    tps = tensor_parallel or [t for t in (1, 2, 4, 8, 16) if t <= max_gpus]
    pps = pipeline_parallel or [p for p in (1, 2, 4, 8) if p <= max_gpus]
    candidates: list[PlanCandidate] = []
    for tp in tps:
        for pp in pps:
            if tp * pp > max_gpus:
                continue
            for batch in batches:
                try:
                    r = simulate(spec, hw, batch_size=batch, prompt_len=prompt_len, gen_len=gen_len,
                                 tensor_parallel=tp, pipeline_parallel=pp,
                                 num_microbatches=pp if batch % pp == 0 else 1, **options)
                except OptionError:
                    break  # this split does not divide the model; larger batches will not help
                except LlmsimError:
                    raise
                meets = r.memory.fits and (ttft_slo_s is None or r.ttft_s <= ttft_slo_s) and (
                    tpot_slo_s is None or r.tpot_s <= tpot_slo_s)
                per_replica = tp * pp
                replicas = math.ceil(target_tokens_per_s / r.throughput_tokens_per_s) if target_tokens_per_s else 1
                dollars = price * per_replica if price is not None else None
                candidates.append(PlanCandidate(
                    tensor_parallel=tp, pipeline_parallel=pp, batch_size=batch, gpus_per_replica=per_replica,
                    ttft_s=r.ttft_s, tpot_s=r.tpot_s, tokens_per_s=r.throughput_tokens_per_s,
                    tokens_per_s_per_gpu=r.tokens_per_s_per_gpu, memory_per_gpu_bytes=r.memory.total_bytes,
                    fits=r.memory.fits, meets_targets=meets, replicas=replicas, gpus_needed=replicas * per_replica,
                    usd_per_hour=dollars * replicas if dollars is not None else None,
                    usd_per_million_tokens=dollars / (r.throughput_tokens_per_s * 3600) * 1e6
                    if dollars is not None else None,
                ))
    feasible = [c for c in candidates if c.meets_targets]
    if not candidates:
        raise OptionError("no tensor/pipeline split divides this model within max_gpus")
    best = max(feasible, key=lambda c: (c.tokens_per_s_per_gpu, -(c.usd_per_million_tokens or 0)), default=None)
    pareto = _pareto(feasible)
    if best is None:
        reason = "no configuration fits and meets the targets; relax the targets or allow more GPUs"
    else:
        reason = (f"best TP={best.tensor_parallel} x PP={best.pipeline_parallel}, batch {best.batch_size}: "
                  f"{best.tokens_per_s_per_gpu:.1f} tokens/s per GPU")
        if target_tokens_per_s:
            reason += f"; {best.replicas} replicas ({best.gpus_needed} GPUs) for {target_tokens_per_s:g} tokens/s"
    return Plan(model=spec.name, hardware=hw.name, best=best, candidates=candidates, pareto=pareto, reason=reason)


def _pareto(candidates: list[PlanCandidate]) -> list[PlanCandidate]:
    """Configurations no other beats on both TPOT (lower) and tokens/s per GPU (higher)."""
    front = []
    for c in sorted(candidates, key=lambda c: (c.tpot_s, -c.tokens_per_s_per_gpu)):
        if not front or c.tokens_per_s_per_gpu > front[-1].tokens_per_s_per_gpu:
            front.append(c)
    return front
