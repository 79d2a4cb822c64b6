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

Requests go round robin: an open loop's request i to rank i mod d; a closed loop's client j to rank j mod d, with
every request that client sends (request i is client i mod c's). One serving frontend takes every request in
(serving.frontend), in the order they were sent.

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
from .scheduler import RequestLog, SchedulerLimits, StepLog, lockstep_engine
from .step_cost import StepCost


def rank_of_requests(n: int, ranks: int, concurrency: int | None) -> np.ndarray:
    """The rank of each of n requests [n]: i mod d in an open loop, (i mod c) mod d in a closed loop of c clients
    (request i is client i mod c's; client j is on rank j mod d)."""
    i = np.arange(n)
    return (i if concurrency is None else i % concurrency) % ranks


def simulate_lockstep(cost: StepCost, limits: SchedulerLimits, ranks: int, prompt_len: np.ndarray,
                      gen_len: np.ndarray, arrival_s: np.ndarray, concurrency: int | None,
                      prefix_group: np.ndarray | None = None, prefix_len: int = 0,
                      frontend: Frontend | None = None) -> tuple[RequestLog, StepLog]:
    """simulate_engine for a replica of `ranks` attention data-parallel ranks in lockstep (module docstring): the
    requests' log (every rank's, in the workload's order) and one row per joint step (sums over the ranks)."""
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
    logs: list[RequestLog] = []
    step_logs: list[StepLog] = []
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
        engines.append(lockstep_engine(cost, limits, log, steps, clients, groups, prefix_len, frontend,
                                       adp if adp is not None else True, r))
    state: list[Any] = [None] * ranks  # each rank's last yield; None once it has finished its requests
    for r, engine in enumerate(engines):
        state[r] = _resume(engine, None)
    out = StepLog()
    clock = 0.0
    query = cost.query
    while any(s is not None for s in state):
        stepping = [r for r, s in enumerate(state) if s is not None and s[0] == "step"]
        if not stepping:  # every rank idle: on to the next request any of them will see
            wake = min(s[1] for s in state if s is not None)
            if not math.isfinite(wake):  # pragma: no cover - an idle rank always has a request on its way
                raise RuntimeError("the lockstep simulation stalled")
            clock = max(clock, wake)
            for r, s in enumerate(state):
                if s is not None:
                    state[r] = _resume(engines[r], clock)
            continue
        tokens = {r: state[r][2] + state[r][3] * query for r in stepping}  # T_r: prefill + decode query tokens
        prefilling = any(state[r][2] for r in stepping)
        slowest = max(state[r][1] - cost.gathered_s(tokens[r], state[r][2] > 0) for r in stepping)
        joint = slowest + cost.gathered_s(sum(tokens.values()) / ranks, prefilling)  # [s]
        start, clock = clock, clock + joint
        for r, s in enumerate(state):
            if s is not None:
                state[r] = _resume(engines[r], joint if r in tokens else clock)
        running = waiting = kv = 0
        for r in stepping:
            steps = step_logs[r]
            running += steps.running[-1]
            waiting += steps.waiting[-1]
            kv += steps.kv_blocks_used[-1]
        out.add(start, joint, sum(step_logs[r].prefill_tokens[-1] for r in stepping),
                sum(step_logs[r].decode_requests[-1] for r in stepping), running, waiting, kv)
        if adp is not None:
            adp.round += 1
    log = RequestLog(np.asarray(prompt_len, dtype=np.int64), np.asarray(gen_len, dtype=np.int64), arrivals.copy(),
                     ready)
    for ids, part in zip(members, logs):
        log.arrival_s[ids] = part.arrival_s
        log.ready_s[ids] = part.ready_s
        log.first_token_s[ids] = part.first_token_s
        log.finish_s[ids] = part.finish_s
        log.preemptions[ids] = part.preemptions
    return log, out


def _resume(engine: Any, value: float | None) -> Any:
    """The rank's next yield after sending it `value` (None: its first), or None once it has finished."""
    try:
        return next(engine) if value is None else engine.send(value)
    except StopIteration:
        return None
