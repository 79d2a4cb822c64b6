"""Serving capacity plans: the replica shape and count that serve a request rate within percentile SLOs at
the least cost.

For each candidate replica (tensor_parallel, pipeline_parallel, max_num_seqs) the largest request rate one
replica sustains within the objectives is found by bisection on serve() (Poisson arrivals, a fixed seed); the
replicas needed for the target rate follow (approximation: a load balancer splits the stream evenly, so each
replica sees rate / replicas). Candidates are independent: any concurrent.futures.Executor (a process pool,
Dask's `Client.get_executor()`, Ray's) evaluates them in parallel, unchanged.
"""

from __future__ import annotations

import math
from concurrent.futures import Executor
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..analysis.text import device_word
from ..cost.workload import check_one
from ..errors import LlmsimError, OptionError, check_positive
from ..hardware.spec import load_hardware
from ..models.loading import load_model
from .serve import serve

_BISECTION_STEPS = 7  # rate found to within 2**-7 (< 1 %) of the bracket


class ServingCandidate(BaseModel):
    """One replica shape and the rate it sustains within the objectives. Disaggregated: tensor_parallel is the
    prefill instances', decode_tensor_parallel the decode instances'; replicas counts both pools."""

    model_config = ConfigDict(frozen=True)
    mode: str = "aggregated"
    tensor_parallel: int
    max_num_seqs: int
    max_rate_per_replica: float  # requests/s within the objectives (0: not even at the lowest rate tried)
    ttft_p_s: float  # the objective's percentile at that rate
    tpot_p_s: float
    replicas: int | None
    gpus: int | None
    usd_per_hour: float | None
    reason: str = ""
    refused: bool = False  # serve() refused the shape's settings (reason: its error), rather than evaluated it
    decode_tensor_parallel: int | None = None
    prefill_replicas: int | None = None
    decode_replicas: int | None = None
    pipeline_parallel: int = 1

    @property
    def shape(self) -> str:
        if self.mode == "aggregated":
            return f"TP{self.tensor_parallel}" + (f" PP{self.pipeline_parallel}" if self.pipeline_parallel > 1 else "")
        return (f"P {self.prefill_replicas or '-'}xTP{self.tensor_parallel} + "
                f"D {self.decode_replicas or '-'}xTP{self.decode_tensor_parallel}")


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
    device_type: Literal["gpu", "cpu"] = "gpu"  # the hardware's: text counts GPUs or CPUs

    def to_pandas(self) -> Any:
        """One row per candidate: its fields, and columns `best` and `pareto`."""
        from ..frames import candidates_frame

        return candidates_frame(self.candidates, self.best, self.pareto)

    def __str__(self) -> str:
        priced = any(c.usd_per_hour is not None for c in self.candidates)  # a price given or on file: a column
        lines = [f"{self.model} on {self.hardware} at {self.request_rate:g} req/s: {self.reason}",
                 f"  {'shape':>24} {'seqs':>5} {'req/s/replica':>14} {'TTFT p' + str(self.percentile):>11} "
                 f"{'TPOT p' + str(self.percentile):>11} {'replicas':>9} {device_word(self.device_type) + 's':>5}"
                 + (f" {'USD/hour':>9}" if priced else "")]
        for c in sorted(self.candidates, key=lambda c: (c.gpus or 1 << 30, c.tensor_parallel)):
            mark = "*" if c == self.best else " "
            cost = "" if not priced else f" {c.usd_per_hour:>9.2f}" if c.usd_per_hour is not None else f" {'-':>9}"
            lines.append(f"{mark} {c.shape:>24} {c.max_num_seqs:>5} {c.max_rate_per_replica:>14.2f} "
                         f"{c.ttft_p_s * 1e3:>9.1f}ms {c.tpot_p_s * 1e3:>9.2f}ms {c.replicas or '-':>9} "
                         f"{c.gpus or '-':>5}{cost}" + (f"  ({c.reason})" if c.reason else ""))
        return "\n".join(lines)


def _evaluate(job: dict[str, Any]) -> ServingCandidate:
    """The largest rate one replica of this shape sustains within the objectives (module level: picklable)."""
    tp, seqs, pct = job["tensor_parallel"], job["max_num_seqs"], job["percentile"]
    pp = job.get("pipeline_parallel", 1)
    common = dict(engine=job["engine"], prompt_len=job["prompt_len"], gen_len=job["gen_len"], seed=job["seed"],
                  num_requests=job["num_requests"], tensor_parallel=tp, max_num_seqs=seqs, **job["options"])
    if pp > 1:
        common["pipeline_parallel"] = pp

    def meets(rate: float) -> tuple[bool, tuple[float, float]]:
        r = serve(job["model"], job["hardware"], request_rate=rate, **common)
        ttft = getattr(r.ttft_s, f"p{pct}")
        tpot = getattr(r.tpot_s, f"p{pct}")
        ok = (job["ttft_slo_s"] is None or ttft <= job["ttft_slo_s"]) and (
            job["tpot_slo_s"] is None or tpot <= job["tpot_slo_s"])
        return ok, (ttft, tpot)

    try:
        saturated = serve(job["model"], job["hardware"], concurrency=seqs, **common)
    except OptionError as exc:
        return ServingCandidate(tensor_parallel=tp, pipeline_parallel=pp, max_num_seqs=seqs, max_rate_per_replica=0.0,
                                ttft_p_s=0.0, tpot_p_s=0.0, replicas=None, gpus=None, usd_per_hour=None,
                                reason=str(exc), refused=True)
    # no replica sustains more than its saturated throughput
    rate, (ttft, tpot) = _largest_rate(meets, saturated.requests_per_s)
    if rate == 0:
        return ServingCandidate(tensor_parallel=tp, pipeline_parallel=pp, max_num_seqs=seqs, max_rate_per_replica=0.0,
                                ttft_p_s=ttft, tpot_p_s=tpot, replicas=None, gpus=None, usd_per_hour=None,
                                reason="misses the objectives even at a light load")
    replicas = math.ceil(job["request_rate"] / rate)
    price = job["usd_per_gpu_hour"]
    gpus = replicas * tp * pp  # a replica is tp x pp GPUs
    return ServingCandidate(tensor_parallel=tp, pipeline_parallel=pp, max_num_seqs=seqs, max_rate_per_replica=rate,
                            ttft_p_s=ttft, tpot_p_s=tpot, replicas=replicas, gpus=gpus,
                            usd_per_hour=price * gpus if price is not None else None)


def _largest_rate(meets: Any, hi: float) -> tuple[float, Any]:
    """The largest rate in (hi/64, hi] at which meets(rate) -> (ok, detail) holds, by bisection; (0, detail
    at hi/64) when even that fails."""
    lo = hi / 64
    ok, detail = meets(lo)
    if not ok:
        return 0.0, detail
    best = (lo, detail)
    for _ in range(_BISECTION_STEPS):
        mid = (lo + hi) / 2
        ok, detail = meets(mid)
        if ok:
            lo, best = mid, (mid, detail)
        else:
            hi = mid
    return best


def _evaluate_disaggregated(job: dict[str, Any]) -> ServingCandidate:
    """Pools sized separately: the prefill rate one instance sustains within the TTFT objective, the decode
    rate one decode instance sustains within the TPOT objective (fed by enough prefill instances), then the
    whole deployment checked at the target rate (module level: picklable)."""
    from .disaggregated import serve_disaggregated

    tp_p, tp_d = job["tensor_parallel"], job["decode_tensor_parallel"]
    seqs, pct = job["max_num_seqs"], job["percentile"]
    common = dict(engine=job["engine"], prompt_len=job["prompt_len"], seed=job["seed"],
                  num_requests=job["num_requests"], **job["options"])
    ttft_slo, tpot_slo = job["ttft_slo_s"], job["tpot_slo_s"]
    # expert parallelism goes in each pool (serve_disaggregated's pools set the parallelism); serve() takes it whole
    ep = common.pop("expert_parallel", None)
    pools_ep = {} if ep is None else {"expert_parallel": ep}

    def fail(reason: str, refused: bool = False) -> ServingCandidate:
        return ServingCandidate(mode="disaggregated", tensor_parallel=tp_p, decode_tensor_parallel=tp_d,
                                max_num_seqs=seqs, max_rate_per_replica=0.0, ttft_p_s=0.0, tpot_p_s=0.0,
                                replicas=None, gpus=None, usd_per_hour=None, reason=reason, refused=refused)

    try:
        pre_hi = serve(job["model"], job["hardware"], concurrency=seqs, gen_len=1, tensor_parallel=tp_p,
                       max_num_seqs=seqs, **pools_ep, **common).requests_per_s

        def prefill_meets(rate: float) -> tuple[bool, float]:
            r = serve(job["model"], job["hardware"], request_rate=rate, gen_len=1, tensor_parallel=tp_p,
                      max_num_seqs=seqs, **pools_ep, **common)
            ttft = getattr(r.ttft_s, f"p{pct}")
            return ttft_slo is None or ttft <= ttft_slo, ttft

        r_p, _ = _largest_rate(prefill_meets, pre_hi)
        if r_p == 0:
            return fail("prefill misses the TTFT objective even at a light load")

        def decode_meets(rate: float) -> tuple[bool, float]:
            r = serve_disaggregated(job["model"], job["hardware"],
                                    prefill={"replicas": math.ceil(rate / r_p) + 1, "tensor_parallel": tp_p,
                                             **pools_ep},
                                    decode={"tensor_parallel": tp_d, "max_num_seqs": seqs, **pools_ep},
                                    request_rate=rate,
                                    gen_len=job["gen_len"], **common)
            tpot = getattr(r.tpot_s, f"p{pct}")
            return tpot_slo is None or tpot <= tpot_slo, tpot

        dec_hi = serve_disaggregated(job["model"], job["hardware"],
                                     prefill={"replicas": max(1, math.ceil(4 * pre_hi / r_p)), "tensor_parallel": tp_p,
                                              **pools_ep},
                                     decode={"tensor_parallel": tp_d, "max_num_seqs": seqs, **pools_ep},
                                     concurrency=seqs,
                                     gen_len=job["gen_len"], **common).requests_per_s
        r_d, _ = _largest_rate(decode_meets, dec_hi)
        if r_d == 0:
            return fail("decode misses the TPOT objective even at a light load")
        n_p, n_d = math.ceil(job["request_rate"] / r_p), math.ceil(job["request_rate"] / r_d)
        whole = serve_disaggregated(job["model"], job["hardware"],
                                    prefill={"replicas": n_p, "tensor_parallel": tp_p, **pools_ep},
                                    decode={"replicas": n_d, "tensor_parallel": tp_d, "max_num_seqs": seqs,
                                            **pools_ep},
                                    request_rate=job["request_rate"], gen_len=job["gen_len"], **common)
    except OptionError as exc:
        return fail(str(exc), refused=True)
    ttft, tpot = getattr(whole.ttft_s, f"p{pct}"), getattr(whole.tpot_s, f"p{pct}")
    meets = (ttft_slo is None or ttft <= ttft_slo) and (tpot_slo is None or tpot <= tpot_slo)
    gpus = n_p * tp_p + n_d * tp_d
    price = job["usd_per_gpu_hour"]
    return ServingCandidate(mode="disaggregated", tensor_parallel=tp_p, decode_tensor_parallel=tp_d,
                            max_num_seqs=seqs, max_rate_per_replica=min(r_p, r_d), ttft_p_s=ttft, tpot_p_s=tpot,
                            replicas=n_p + n_d if meets else None, gpus=gpus if meets else None,
                            prefill_replicas=n_p, decode_replicas=n_d,
                            usd_per_hour=price * gpus if price is not None and meets else None,
                            reason="" if meets else "the pools sized apart miss the objectives together")


def _check_split(spec: Any, hw: Any, engine: str | None, tps: list[int], options: dict[str, Any]) -> None:
    """Refuse a tensor-parallel degree the model cannot be split by, naming it (as serve() does), rather than a
    plan row whose every figure is 0."""
    import inspect

    from ..analysis.evaluation import resolve
    from ..cost.graph import build_ops_unchecked

    serve_only = set(inspect.signature(serve).parameters)
    model_options = {k: v for k, v in options.items() if k not in serve_only or k == "expert_parallel"}
    for tp in tps:
        split_spec, _, cost, _ = resolve(spec, hw, engine, **{**model_options, "tensor_parallel": tp})
        build_ops_unchecked(split_spec, "decode", 1, 1, 1, cost)  # the split check (ParallelBlocks) runs here


# serve()'s load and workload options, which the plan sets for every replica shape it evaluates
_PLAN_SETS = ("concurrency", "arrival", "burstiness", "ramp_s", "lengths_csv")


def _check_shared(spec: Any, hw: Any, engine: str | None, prompt_len: Any, gen_len: Any, num_requests: Any,
                  seed: Any, options: dict[str, Any]) -> None:
    """What every replica shape shares, checked once up front: a bad engine, option or length is an error naming
    its field, not a plan whose every shape 'misses the objectives' (what depends on the shape stays per shape)."""
    import inspect

    from ..analysis.evaluation import resolve
    from ..cost.blocks.parallel import check_expert_parallel
    from .serve import make_workload

    for key in _PLAN_SETS:
        if key in options:
            raise OptionError(f"{key}: plan_serving sets the load itself (Poisson arrivals at the rates it bisects, "
                              "a closed loop of max_num_seqs clients for a replica's saturated throughput) and "
                              "takes the lengths as prompt_len and gen_len (an integer, a list or a distribution); "
                              f"drop {key}")
    serve_only = set(inspect.signature(serve).parameters)
    model_options = {k: v for k, v in options.items() if k not in serve_only and k != "expert_parallel"}
    spec, _, _, _ = resolve(spec, hw, engine, **model_options)
    if options.get("expert_parallel") is not None:
        check_expert_parallel(spec, check_one("expert_parallel", options["expert_parallel"], 1))
    make_workload(spec, 1.0, None, prompt_len, gen_len, num_requests, "poisson", 1.0, None, seed, 0.0)


def plan_serving(model: Any, hardware: Any, request_rate: float, prompt_len: Any = 2048, gen_len: Any = 256,
                 ttft_slo_s: float | None = None, tpot_slo_s: float | None = None, percentile: int = 99,
                 tensor_parallel: list[int] | None = None, max_num_seqs: list[int] | None = None,
                 engine: str | None = None, num_requests: int = 500, seed: int = 0,
                 usd_per_gpu_hour: float | None = None, max_gpus: int = 1024, executor: Executor | None = None,
                 disaggregated: bool = False, pipeline_parallel: list[int] | None = None,
                 **options: Any) -> ServingPlan:
    """The replica shape (tensor_parallel, pipeline_parallel, max_num_seqs) and count serving `request_rate`
    requests/s with the `percentile` TTFT and TPOT within the objectives, at the fewest GPUs (then the lowest cost).
    disaggregated=True also sizes prefill and decode pools for every pair of tensor-parallel degrees (at the
    largest max_num_seqs), so aggregated and disaggregated deployments compete in one plan.
    pipeline_parallel: the pipeline degrees searched for aggregated replicas (default [1]; a replica is then
    tensor_parallel x pipeline_parallel GPUs, decode micro-batches in flight as serve() runs them)."""
    spec, hw = load_model(model), load_hardware(hardware)
    check_positive("request_rate", request_rate, "requests per second")
    _check_shared(spec, hw, engine, prompt_len, gen_len, num_requests, seed, options)
    if isinstance(percentile, bool) or percentile not in (50, 90, 95, 99):
        raise OptionError(f"percentile={percentile!r} must be one of 50, 90, 95, 99")
    percentile = int(percentile)  # 99.0 names the same percentile as 99 (its attribute is p99)
    if executor is not None and not callable(getattr(executor, "map", None)):
        raise OptionError(f"executor={executor!r} must be a concurrent.futures.Executor (anything with a map "
                          "method: ThreadPoolExecutor(), a dask Client's get_executor()) or None")
    if ttft_slo_s is None and tpot_slo_s is None:
        raise OptionError("give ttft_slo_s, tpot_slo_s or both: the objectives the plan must meet")
    for name, value in (("ttft_slo_s", ttft_slo_s), ("tpot_slo_s", tpot_slo_s)):
        if value is not None:
            check_positive(name, value, "seconds")
    check_one("max_gpus", max_gpus, 1)
    if usd_per_gpu_hour is not None:
        check_positive("usd_per_gpu_hour", usd_per_gpu_hour, "dollars")
    price = usd_per_gpu_hour
    if price is None and "usd_per_hour" in hw.price:
        price = hw.price["usd_per_hour"].value
    # by default a replica stays within what the file links (HardwareSpec.linked_gpus); one asked for is checked
    tps = tensor_parallel if tensor_parallel is not None else [
        t for t in (1, 2, 4, 8) if t <= max_gpus and t <= hw.linked_gpus]
    seqs = max_num_seqs if max_num_seqs is not None else [64, 256]
    pps = [1] if pipeline_parallel is None else pipeline_parallel
    for name, values in (("tensor_parallel", tps), ("max_num_seqs", seqs), ("pipeline_parallel", pps)):
        if isinstance(values, (int, str)) or not values or not all(type(v) is int and v >= 1 for v in values):
            raise OptionError(f"{name}={values!r} must be a non-empty list of integers >= 1")
    if tensor_parallel is not None:  # a degree the user named that the model cannot be split by is an error
        _check_split(spec, hw, engine, tps, options)
    if type(num_requests) is int and num_requests < max(seqs):
        # a replica's saturated throughput is a closed loop of max_num_seqs clients: fewer requests than clients
        # measure one request's latency, not the throughput (20 requests at 64 sequences: 15.8 req/s of ~30)
        raise OptionError(f"num_requests={num_requests} is below max_num_seqs={max(seqs)}: the saturated replica's "
                          "throughput needs at least that many requests (several times it for a steady state)")
    jobs = [dict(model=spec, hardware=hw, tensor_parallel=tp, max_num_seqs=s, percentile=percentile, engine=engine,
                 prompt_len=prompt_len, gen_len=gen_len, seed=seed, num_requests=num_requests,
                 ttft_slo_s=ttft_slo_s, tpot_slo_s=tpot_slo_s, request_rate=request_rate, usd_per_gpu_hour=price,
                 options=options, pipeline_parallel=pp)
            for tp in tps for pp in pps if tp * pp <= max_gpus for s in seqs]
    if not jobs:
        raise OptionError(f"max_gpus={max_gpus} is below every tensor_parallel x pipeline_parallel replica searched")
    if not isinstance(disaggregated, bool):
        raise OptionError(f"disaggregated={disaggregated!r} must be True or False")
    if disaggregated:
        import inspect

        from .disaggregated import serve_disaggregated

        takes = set(inspect.signature(serve_disaggregated).parameters)
        aggregated_only = sorted(k for k in options if k in set(inspect.signature(serve).parameters) - takes
                                 and k not in ("tensor_parallel", "expert_parallel"))
        if aggregated_only:
            raise OptionError(f"disaggregated=True: {', '.join(aggregated_only)} not modelled for disaggregated "
                              "serving; drop them or plan aggregated replicas only")
    split = [dict(jobs[0], tensor_parallel=tp_p, decode_tensor_parallel=tp_d, max_num_seqs=max(seqs),
                  pipeline_parallel=1)
             for tp_p in tps for tp_d in tps] if disaggregated else []
    run = executor.map if executor is not None else map
    candidates = list(run(_evaluate, jobs)) + list(run(_evaluate_disaggregated, split))
    reasons = {c.reason for c in candidates if c.refused}
    if len(reasons) == 1 and all(c.refused for c in candidates):  # the same refusal for every shape: the
        raise OptionError(reasons.pop())  # settings the shapes share, not the shapes, are at fault
    feasible = [c for c in candidates if c.gpus is not None and c.gpus <= max_gpus]
    best = min(feasible, key=lambda c: (c.gpus, c.usd_per_hour or 0, -c.max_rate_per_replica), default=None)
    front: list[ServingCandidate] = []  # fewer GPUs against a lower latency percentile
    for c in sorted(feasible, key=lambda c: (c.gpus, c.ttft_p_s)):
        if not front or c.ttft_p_s < front[-1].ttft_p_s:
            front.append(c)
    device = device_word(hw.device_type)
    meeting = [c for c in candidates if c.gpus is not None]  # shapes that meet the objectives, at any count
    if best is None and meeting:
        fewest = min(c.gpus for c in meeting)
        reason = (f"every replica shape that meets the objectives needs more than max_gpus={max_gpus} {device}s "
                  f"(the fewest: {fewest}); allow more or relax the objectives")
    elif best is None:
        reason = f"no replica shape meets the objectives within max_gpus; relax them or allow more {device}s"
    else:
        reason = (f"{best.replicas} replicas of {best.shape} with max_num_seqs={best.max_num_seqs}: "
                  f"{best.gpus} {device}s, each replica within the p{percentile} objectives up to "
                  f"{best.max_rate_per_replica:.2f} req/s" if best.mode == "aggregated" else
                  f"disaggregated {best.shape} with max_num_seqs={best.max_num_seqs}: {best.gpus} {device}s within "
                  f"the p{percentile} objectives")
    if not candidates:
        raise LlmsimError("no candidates to evaluate")  # pragma: no cover
    return ServingPlan(model=spec.name, hardware=hw.name, request_rate=float(request_rate), percentile=percentile,
                       best=best, candidates=candidates, pareto=front, reason=reason, device_type=hw.device_type)
