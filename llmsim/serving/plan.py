"""Serving capacity plans: the replica shape and count that serve a request rate within percentile SLOs at
the least cost.

For each candidate replica (tensor_parallel, max_num_seqs) the largest request rate one replica sustains
within the objectives is found by bisection on serve() (Poisson arrivals, a fixed seed); the replicas needed
for the target rate follow (approximation: a load balancer splits the stream evenly, so each replica sees
rate / replicas). Candidates are independent: any concurrent.futures.Executor (a process pool, Dask's
`Client.get_executor()`, Ray's) evaluates them in parallel, unchanged.
"""

from __future__ import annotations

import math
from concurrent.futures import Executor
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import LlmsimError, OptionError
from ..hardware.spec import load_hardware
from ..models.loading import load_model
from .serve import serve

_BISECTION_STEPS = 7  # rate found to within 2**-7 (< 1 %) of the bracket


class ServingCandidate(BaseModel):
    """One replica shape and the rate it sustains within the objectives."""

    model_config = ConfigDict(frozen=True)
    tensor_parallel: int
    max_num_seqs: int
    max_rate_per_replica: float  # requests/s within the objectives (0: not even at the lowest rate tried)
    ttft_p_s: float  # the objective's percentile at that rate
    tpot_p_s: float
    replicas: int | None
    gpus: int | None
    usd_per_hour: float | None
    reason: str = ""


class ServingPlan(BaseModel):
    model_config = ConfigDict(frozen=True)
    model: str
    hardware: str
    request_rate: float
    percentile: int
    best: ServingCandidate | None
    candidates: list[ServingCandidate]
    pareto: list[ServingCandidate]
    reason: str

    def to_pandas(self) -> Any:
        """One row per candidate: its fields, and columns `best` and `pareto`."""
        from ..report.frames import candidates_frame

        return candidates_frame(self.candidates, self.best, self.pareto)

    def __str__(self) -> str:
        lines = [f"{self.model} on {self.hardware} at {self.request_rate:g} req/s: {self.reason}",
                 f"  {'TP':>3} {'seqs':>5} {'req/s/replica':>14} {'TTFT p' + str(self.percentile):>11} "
                 f"{'TPOT p' + str(self.percentile):>11} {'replicas':>9} {'GPUs':>5}"]
        for c in sorted(self.candidates, key=lambda c: (c.gpus or 1 << 30, c.tensor_parallel)):
            mark = "*" if c == self.best else " "
            lines.append(f"{mark} {c.tensor_parallel:>3} {c.max_num_seqs:>5} {c.max_rate_per_replica:>14.2f} "
                         f"{c.ttft_p_s * 1e3:>9.1f}ms {c.tpot_p_s * 1e3:>9.2f}ms {c.replicas or '-':>9} "
                         f"{c.gpus or '-':>5}" + (f"  ({c.reason})" if c.reason else ""))
        return "\n".join(lines)


def _evaluate(job: dict[str, Any]) -> ServingCandidate:
    """The largest rate one replica of this shape sustains within the objectives (module level: picklable)."""
    tp, seqs, pct = job["tensor_parallel"], job["max_num_seqs"], job["percentile"]
    common = dict(engine=job["engine"], prompt_len=job["prompt_len"], gen_len=job["gen_len"], seed=job["seed"],
                  num_requests=job["num_requests"], tensor_parallel=tp, max_num_seqs=seqs, **job["options"])

    def at(rate: float) -> tuple[bool, float, float]:
        r = serve(job["model"], job["hardware"], request_rate=rate, **common)
        ttft = getattr(r.ttft_s, f"p{pct}")
        tpot = getattr(r.tpot_s, f"p{pct}")
        ok = (job["ttft_slo_s"] is None or ttft <= job["ttft_slo_s"]) and (
            job["tpot_slo_s"] is None or tpot <= job["tpot_slo_s"])
        return ok, ttft, tpot

    try:
        saturated = serve(job["model"], job["hardware"], concurrency=seqs, **common)
    except OptionError as exc:
        return ServingCandidate(tensor_parallel=tp, max_num_seqs=seqs, max_rate_per_replica=0.0, ttft_p_s=0.0,
                                tpot_p_s=0.0, replicas=None, gpus=None, usd_per_hour=None, reason=str(exc))
    hi = saturated.requests_per_s  # no replica sustains more than its saturated throughput
    lo = hi / 64
    ok, ttft, tpot = at(lo)
    if not ok:
        return ServingCandidate(tensor_parallel=tp, max_num_seqs=seqs, max_rate_per_replica=0.0, ttft_p_s=ttft,
                                tpot_p_s=tpot, replicas=None, gpus=None, usd_per_hour=None,
                                reason="misses the objectives even at a light load")
    best = (lo, ttft, tpot)
    for _ in range(_BISECTION_STEPS):
        mid = (lo + hi) / 2
        ok, ttft, tpot = at(mid)
        if ok:
            lo, best = mid, (mid, ttft, tpot)
        else:
            hi = mid
    rate, ttft, tpot = best
    replicas = math.ceil(job["request_rate"] / rate)
    price = job["usd_per_gpu_hour"]
    return ServingCandidate(tensor_parallel=tp, max_num_seqs=seqs, max_rate_per_replica=rate, ttft_p_s=ttft,
                            tpot_p_s=tpot, replicas=replicas, gpus=replicas * tp,
                            usd_per_hour=price * replicas * tp if price is not None else None)


def plan_serving(model: Any, hardware: Any, request_rate: float, prompt_len: Any = 2048, gen_len: Any = 256,
                 ttft_slo_s: float | None = None, tpot_slo_s: float | None = None, percentile: int = 99,
                 tensor_parallel: list[int] | None = None, max_num_seqs: list[int] | None = None,
                 engine: str | None = None, num_requests: int = 500, seed: int = 0,
                 usd_per_gpu_hour: float | None = None, max_gpus: int = 1024, executor: Executor | None = None,
                 **options: Any) -> ServingPlan:
    """The replica shape (tensor_parallel, max_num_seqs) and count serving `request_rate` requests/s with the
    `percentile` TTFT and TPOT within the objectives, at the fewest GPUs (then the lowest cost)."""
    spec, hw = load_model(model), load_hardware(hardware)
    if isinstance(request_rate, bool) or not isinstance(request_rate, (int, float)) or not request_rate > 0:
        raise OptionError(f"request_rate={request_rate!r} must be a number of requests per second > 0")
    if percentile not in (50, 90, 95, 99):
        raise OptionError(f"percentile={percentile!r} must be one of 50, 90, 95, 99")
    if ttft_slo_s is None and tpot_slo_s is None:
        raise OptionError("give ttft_slo_s, tpot_slo_s or both: the objectives the plan must meet")
    for name, value in (("ttft_slo_s", ttft_slo_s), ("tpot_slo_s", tpot_slo_s)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
            raise OptionError(f"{name}={value!r} must be a number of seconds > 0")
    price = usd_per_gpu_hour
    if price is None and "usd_per_hour" in hw.price:
        price = hw.price["usd_per_hour"].value
    tps = tensor_parallel or [t for t in (1, 2, 4, 8) if t <= max_gpus]
    seqs = max_num_seqs or [64, 256]
    jobs = [dict(model=spec, hardware=hw, tensor_parallel=tp, max_num_seqs=s, percentile=percentile, engine=engine,
                 prompt_len=prompt_len, gen_len=gen_len, seed=seed, num_requests=num_requests,
                 ttft_slo_s=ttft_slo_s, tpot_slo_s=tpot_slo_s, request_rate=request_rate, usd_per_gpu_hour=price,
                 options=options) for tp in tps for s in seqs]
    candidates = list(executor.map(_evaluate, jobs)) if executor is not None else [_evaluate(j) for j in jobs]
    feasible = [c for c in candidates if c.gpus is not None and c.gpus <= max_gpus]
    best = min(feasible, key=lambda c: (c.gpus, c.usd_per_hour or 0, -c.max_rate_per_replica), default=None)
    front: list[ServingCandidate] = []  # fewer GPUs against a lower latency percentile
    for c in sorted(feasible, key=lambda c: (c.gpus, c.ttft_p_s)):
        if not front or c.ttft_p_s < front[-1].ttft_p_s:
            front.append(c)
    if best is None:
        reason = "no replica shape meets the objectives within max_gpus; relax them or allow more GPUs"
    else:
        reason = (f"{best.replicas} replicas of TP={best.tensor_parallel} with max_num_seqs={best.max_num_seqs}: "
                  f"{best.gpus} GPUs, each replica within the p{percentile} objectives up to "
                  f"{best.max_rate_per_replica:.2f} req/s")
    if not candidates:
        raise LlmsimError("no candidates to evaluate")  # pragma: no cover
    return ServingPlan(model=spec.name, hardware=hw.name, request_rate=float(request_rate), percentile=percentile,
                       best=best, candidates=candidates, pareto=front, reason=reason)
