"""Attention data-parallel ranks run in lockstep: every rank of a replica simulated, each step priced for all.

With attention data parallelism (serving.data_parallel) the d ranks of a replica run each forward pass together:
before every MoE layer their hidden states are all-gathered and the experts run over all of them, so a rank's step
ends when the slowest rank's does, and a rank with nothing to run still joins the pass (SGLang runs an idle batch,
TensorRT-LLM a dummy request; sources in serving.data_parallel). Each rank schedules its own requests (its own
queue, KV pool and limits: serving.scheduler's loop, one per rank); a joint step of ranks r holding T_r tokens
(prefill tokens plus decode requests' query tokens) takes

    step_s = max_r (t_r - g(T_r)) + g(sum_r T_r / d)

t_r: rank r's own step time (StepCost.step_s, which prices the experts as if every rank held T_r), g(T): the part
shared by all ranks, the routed experts over every GPU at d x T tokens and their all-gather and reduce-scatter
(StepCost.gathered_s), read from the prefill pass's grid when some rank prefills, else from the decode pass's.

Where every rank that holds requests could run pure decode steps until one of its requests finishes, its
blocks run out or a request arrives, the ranks take those steps as one run: each step's joint time as above,
vectorised, the same times as step by step (tests/test_attention_data_parallel.py). With TensorRT-LLM's
attention-DP balance, which decides every step (serving.adp_balance), the ranks step one at a time.

Requests go round robin: an open loop's request i to rank i mod d; a closed loop's client j to rank j mod d, with
every request that client sends (request i is client i mod c's). One serving frontend takes every request in
(serving.frontend), in the order they were sent. (A disaggregated pool of ranks, serving.disaggregated, still
simulates each rank on its own with every d-th request: ranks symmetric there.)

approximation: a closed loop's client keeps its rank (the engines route each request round robin); a decode-only
rank in a step where another rank prefills keeps its own pass's price (SGLang then runs no rank from a CUDA graph);
the max over whole steps stands for a max per layer (the slowest rank is taken to be the slowest in every layer).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .adp_balance import AdpBalance
from .frontend import Frontend
from .scheduler import LockstepLink, RequestLog, SchedulerLimits, StepLog, lockstep_engine, step_starts
from .step_cost import StepCost


def rank_of_requests(n: int, ranks: int, concurrency: int | None) -> np.ndarray:
    """The rank of each of n requests [n]: i mod d in an open loop, (i mod c) mod d in a closed loop of c clients
    (request i is client i mod c's; client j is on rank j mod d)."""
    i = np.arange(n)
    return (i if concurrency is None else i % concurrency) % ranks


def simulate_lockstep(cost: StepCost, limits: SchedulerLimits, ranks: int, prompt_len: np.ndarray,
                      gen_len: np.ndarray, arrival_s: np.ndarray, concurrency: int | None,
                      prefix_group: np.ndarray | None = None, prefix_len: int = 0,
                      frontend: Frontend | None = None
                      ) -> tuple[RequestLog, StepLog, dict[str, np.ndarray], np.ndarray]:
    """simulate_engine for a replica of `ranks` attention data-parallel ranks in lockstep (module docstring): the
    requests' log (every rank's, in the workload's order), one row per joint step (sums over the ranks), one row
    per joint step and rank that stepped in it (its start, the joint time, the rank's decode requests; an `instance`
    column, the rank: a rank whose decodes sat out a joint step that others decoded in, as SGLang's prefill-first
    steps hold them, waits that step for its next token) and each request's rank."""
    n = len(prompt_len)
    rank_of = rank_of_requests(n, ranks, concurrency)
    known = n if concurrency is None else min(concurrency, n)  # requests sent before any finishes
    arrivals = np.full(n, np.inf)  # a closed loop's later requests are sent as earlier ones finish
    arrivals[:known] = np.asarray(arrival_s, dtype=float)[:known]
    ready = np.full(n, np.inf)
    ready[:known] = arrivals[:known]
    if frontend is not None and known:  # one frontend takes the first requests in, in the order they were sent
        order = np.argsort(arrivals[:known], kind="stable")
        ready[order] = frontend.admit_all(arrivals[:known][order])
    members = [np.flatnonzero(rank_of == r) for r in range(ranks)]
    adp = AdpBalance(*limits.adp_balance) if limits.adp_balance else None
    link = LockstepLink(adp)
    logs: list[RequestLog] = []
    step_logs: list[StepLog] = []
    joint_logs = [StepLog() for _ in range(ranks)]  # per rank, its rows at the joint steps' times
    engines: list[Any] = []
    for r, ids in enumerate(members):
        clients = None if concurrency is None else int(np.count_nonzero(ids < known))
        sent = np.where(ids < known, arrivals[ids], np.inf)
        log = RequestLog(np.asarray(prompt_len, dtype=np.int64)[ids], np.asarray(gen_len, dtype=np.int64)[ids],
                         sent, ready[ids].copy())
        steps = StepLog()
        groups = None if prefix_group is None else prefix_group[ids]
        logs.append(log)
        step_logs.append(steps)
        engines.append(lockstep_engine(cost, limits, log, steps, clients, groups, prefix_len, frontend, link, r))
    state: list[Any] = [None] * ranks  # each rank's last yield; None once it has finished its requests
    for r, engine in enumerate(engines):
        state[r] = _resume(engine, None)
    out = StepLog()
    clock = 0.0
    while any(s is not None for s in state):
        after = _advance(cost, ranks, engines, state, clock, out, step_logs, adp, joint_logs)
        if after is not None:
            clock = after
            continue
        # every rank idle: on to the next request any of them will see
        wake = min(s[1] for s in state if s is not None)
        if not math.isfinite(wake):  # pragma: no cover - an idle rank always has a request on its way
            raise RuntimeError("the lockstep simulation stalled")
        clock = max(clock, wake)
        for r, s in enumerate(state):
            if s is not None:
                state[r] = _resume(engines[r], clock)
    log = RequestLog(np.asarray(prompt_len, dtype=np.int64), np.asarray(gen_len, dtype=np.int64), arrivals.copy(),
                     ready)
    for ids, part in zip(members, logs):
        log.arrival_s[ids] = part.arrival_s
        log.ready_s[ids] = part.ready_s
        log.first_token_s[ids] = part.first_token_s
        log.finish_s[ids] = part.finish_s
        log.preemptions[ids] = part.preemptions
    merged = [dict(steps.arrays(), instance=np.full(len(steps.time_s), r)) for r, steps in enumerate(joint_logs)]
    return log, out, {k: np.concatenate([m[k] for m in merged]) for k in merged[0]}, rank_of


def _advance(cost: StepCost, ranks: int, engines: list[Any], state: list[Any], clock: float, out: StepLog,
             rank_steps: list[StepLog], adp: AdpBalance | None, joint_logs: list[StepLog]) -> float | None:
    """One round from `clock`: the ranks' yields in `state` (None: finished) taken up, the ranks resumed (their
    next yields back in `state`) and the joint steps' rows added to `out`: the new clock, or None where every
    rank is idle (none resumed). A run of pure decode steps goes at once where every rank that holds requests
    offers one (_joint_run); otherwise the offers are declined and one joint step is taken."""
    runs = [r for r, s in enumerate(state) if s is not None and s[0] == "run"]
    if runs:
        joint = None if any(s is not None and s[0] == "step" for s in state) else _joint_run(cost, ranks, state,
                                                                                             runs, clock)
        if joint is None:  # declined: those ranks step one at a time
            for r in runs:
                state[r] = _resume(engines[r], None)
        else:
            starts = step_starts(clock, joint)  # as each rank adds them up
            end = float(starts[-1] + joint[-1])
            for r, s in enumerate(state):
                if s is not None:
                    state[r] = _resume(engines[r], joint if r in runs else end)
            k = len(joint)
            for j in range(k):  # the run's rows, summed over the ranks
                _record(out, float(starts[j]), float(joint[j]), [rank_steps[r] for r in runs], k - j,
                        [joint_logs[r] for r in runs])
            return end  # (no balance: its ranks offer no runs)
    stepping = [r for r, s in enumerate(state) if s is not None and s[0] == "step"]
    if not stepping:
        return None
    joint_s = _joint_s(cost, ranks, [state[r] for r in stepping])
    start, clock = clock, clock + joint_s
    for r, s in enumerate(state):
        if s is not None:
            state[r] = _resume(engines[r], joint_s if r in stepping else clock)
    _record(out, start, joint_s, [rank_steps[r] for r in stepping], 1, [joint_logs[r] for r in stepping])
    if adp is not None:
        adp.round += 1
    return clock


def _joint_run(cost: StepCost, ranks: int, state: list[Any], runs: list[int], clock: float) -> np.ndarray | None:
    """The joint times of the decode steps the offering ranks (`runs`: ("run", own times, requests, arrival or
    None)) take together: as many as the shortest offer holds, each step's time as _joint_s's, cut before the
    first step to start at or after an arrival an offering or idle rank waits for; None for fewer than two."""
    query = cost.query
    k = min(len(state[r][1]) for r in runs)
    own = np.max([np.asarray(state[r][1][:k]) - cost.gathered_s(state[r][2] * query, False) for r in runs], axis=0)
    joint = own + cost.gathered_s(sum(state[r][2] for r in runs) * query / ranks, False)  # [k]
    waits = [state[r][3] for r in runs if state[r][3] is not None]
    waits += [s[1] for s in state if s is not None and s[0] == "idle"]
    limit = min(waits, default=math.inf)
    if math.isfinite(limit):
        k = int(np.searchsorted(step_starts(clock, joint), limit, side="left"))  # steps starting before it
    return joint[:k] if k >= 2 else None


def _joint_s(cost: StepCost, ranks: int, steps: list[tuple[Any, ...]]) -> float:
    """The joint step of the stepping ranks' ("step", own time, prefill tokens, decode requests) yields, the
    other ranks holding nothing (module docstring)."""
    query = cost.query
    tokens = [prefill + decode * query for _, _, prefill, decode in steps]  # T_r: prefill + decode query tokens
    slowest = max(own - cost.gathered_s(t, prefill > 0) for (_, own, prefill, _), t in zip(steps, tokens))
    prefilling = any(prefill for _, _, prefill, _ in steps)
    return slowest + cost.gathered_s(sum(tokens) / ranks, prefilling)  # [s]


def _record(out: StepLog, start: float, joint: float, rank_steps: list[StepLog], back: int,
            joint_logs: list[StepLog]) -> None:
    """One row for a joint step: the stepping ranks' rows `back` from their last (1: the last one), summed; and
    each stepping rank's row at the joint step's times in its joint_logs."""
    out.add(start, joint, sum(s.prefill_tokens[-back] for s in rank_steps),
            sum(s.decode_requests[-back] for s in rank_steps), sum(s.running[-back] for s in rank_steps),
            sum(s.waiting[-back] for s in rank_steps), sum(s.kv_blocks_used[-back] for s in rank_steps))
    for s, own in zip(rank_steps, joint_logs):
        own.add(start, joint, s.prefill_tokens[-back], s.decode_requests[-back], s.running[-back], s.waiting[-back],
                s.kv_blocks_used[-back])


def _resume(engine: Any, value: float | None) -> Any:
    """The rank's next yield after sending it `value` (None: its first), or None once it has finished."""
    try:
        return next(engine) if value is None else engine.send(value)
    except StopIteration:
        return None
