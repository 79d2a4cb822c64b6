"""Continuous batching with chunked prefill, step by step, as vLLM's V1 scheduler runs it.

Every step (vllm/v1/core/sched/scheduler.py, Scheduler.schedule):
1. the running requests, in order, each get their new tokens (one for a decode, the rest of the prompt,
   up to the remaining token budget, for a prefill), each allocating the KV blocks those tokens need;
   when the blocks run out the last running request is preempted (its blocks freed, its computed tokens
   dropped, back to the front of the waiting queue: recompute, vLLM's default);
2. then waiting requests, first come first served, while fewer than max_num_seqs run, budget is left and
   their blocks can be allocated (a prompt longer than the budget is prefilled in chunks across steps).
A request samples a token at the end of the step that computes its last known token (the final prompt
chunk, then each decode token). It finishes after gen_len tokens.

The scheduler hands each step to StepCost for its time; the clock advances by it. Runs of steps in which
nothing but decoding happens (no admission possible, no arrival, no finish, no block shortage) are
evaluated together in one vectorised pass (fast_forward): the same steps, summed without the Python loop.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .step_cost import StepCost


@dataclass(frozen=True)
class SchedulerLimits:
    """The engine's knobs: requests per step, tokens per step, KV blocks and their size."""

    max_num_seqs: int
    max_num_batched_tokens: int
    kv_blocks: int
    block_size: int


@dataclass
class RequestLog:
    """Per request (index = request id): lengths, arrival and the times it saw."""

    prompt_len: np.ndarray
    gen_len: np.ndarray
    arrival_s: np.ndarray
    first_token_s: np.ndarray = field(init=False)
    finish_s: np.ndarray = field(init=False)
    preemptions: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        n = len(self.prompt_len)
        self.first_token_s = np.full(n, np.nan)
        self.finish_s = np.full(n, np.nan)
        self.preemptions = np.zeros(n, dtype=np.int64)


@dataclass
class StepLog:
    """Per step, appended as the simulation runs (lists, made arrays at the end)."""

    start_s: list[float] = field(default_factory=list)
    time_s: list[float] = field(default_factory=list)
    prefill_tokens: list[int] = field(default_factory=list)
    decode_requests: list[int] = field(default_factory=list)
    running: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    kv_blocks_used: list[int] = field(default_factory=list)

    def add(self, start: float, time: float, prefill: int, decode: int, running: int, waiting: int, kv: int) -> None:
        self.start_s.append(start)
        self.time_s.append(time)
        self.prefill_tokens.append(prefill)
        self.decode_requests.append(decode)
        self.running.append(running)
        self.waiting.append(waiting)
        self.kv_blocks_used.append(kv)

    def extend(self, starts: np.ndarray, times: np.ndarray, decode: int, running: int, waiting: Any,
               kv: np.ndarray) -> None:
        k = len(times)
        self.start_s.extend(starts.tolist())
        self.time_s.extend(times.tolist())
        self.prefill_tokens.extend([0] * k)
        self.decode_requests.extend([decode] * k)
        self.running.extend([running] * k)
        self.waiting.extend(np.broadcast_to(waiting, (k,)).tolist())
        self.kv_blocks_used.extend(kv.tolist())

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: np.asarray(values) for name, values in vars(self).items()}


def simulate_engine(cost: StepCost, limits: SchedulerLimits, prompt_len: np.ndarray, gen_len: np.ndarray,
                    arrival_s: np.ndarray, concurrency: int | None) -> tuple[RequestLog, StepLog]:
    """Run every request through the engine. Open loop (concurrency None): request i arrives at
    arrival_s[i] (sorted). Closed loop: concurrency clients, client i sending its first request at
    arrival_s[i] and each next one the moment its previous one finishes."""
    n = len(prompt_len)
    closed = concurrency is not None
    arrivals = np.asarray(arrival_s, dtype=float)
    if closed:
        arrivals = np.concatenate([arrivals[:concurrency], np.full(max(n - concurrency, 0), np.inf)])
    log = RequestLog(np.asarray(prompt_len, dtype=np.int64), np.asarray(gen_len, dtype=np.int64), arrivals.copy())
    steps = StepLog()
    prompt = log.prompt_len.tolist()
    gen = log.gen_len.tolist()
    computed = np.zeros(n, dtype=np.int64)  # tokens in the KV cache (prompt, then generated)
    emitted = np.zeros(n, dtype=np.int64)  # tokens sampled
    blocks = np.zeros(n, dtype=np.int64)  # KV blocks held
    bs = limits.block_size
    free_blocks = limits.kv_blocks
    running: list[int] = []
    waiting: deque[int] = deque()
    known = min(concurrency, n) if closed else n  # requests whose arrival time is known up front
    released = known  # closed loop: requests sent so far
    next_arrival = 0  # the next request (of the known ones) not yet arrived
    clock = 0.0
    finished = 0

    def blocks_for(tokens: int) -> int:
        return -(-tokens // bs)

    while finished < n:
        while next_arrival < known and arrivals[next_arrival] <= clock:
            waiting.append(next_arrival)
            next_arrival += 1
        if not running and not waiting:
            clock = max(clock, float(arrivals[next_arrival]))
            continue

        # ---- a run of pure decode steps at once --------------------------------------------------------
        if running and (not waiting or len(running) >= limits.max_num_seqs):
            ids = np.asarray(running)
            if np.all(emitted[ids] > 0) and np.all(computed[ids] == log.prompt_len[ids] + emitted[ids] - 1):
                k, kv = _decode_run_length(ids, computed, blocks, gen_len=log.gen_len, emitted=emitted, bs=bs,
                                           free_blocks=free_blocks)
                if k >= 2:
                    limit_s = float(arrivals[next_arrival]) if (next_arrival < known
                                                                and len(running) < limits.max_num_seqs) else None
                    k, times = _decode_run_times(cost, ids, computed, k, clock, limit_s)
                    if k >= 2:
                        starts = clock + np.concatenate([[0.0], np.cumsum(times[:-1])])
                        queued = len(waiting) + np.searchsorted(arrivals[:known], starts, side="right") - next_arrival
                        steps.extend(starts, times, len(ids), len(ids), queued,
                                     limits.kv_blocks - free_blocks + kv[:k])
                        clock = float(starts[-1] + times[-1])
                        computed[ids] += k
                        emitted[ids] += k
                        need = -(-computed[ids] // bs)
                        free_blocks -= int(np.sum(need - blocks[ids]))
                        blocks[ids] = need
                        finished, released = _finish(running, ids, emitted, log, clock, blocks, n, closed,
                                                     released, waiting, finished)
                        free_blocks = limits.kv_blocks - int(blocks.sum())
                        continue

        # ---- one step: running requests first, then waiting ones ---------------------------------------
        budget = limits.max_num_batched_tokens
        # the leading running requests that decode (one token each), allocated together when their blocks fit
        ids = np.asarray(running, dtype=np.int64)
        decoding = (emitted[ids] > 0) & (computed[ids] == log.prompt_len[ids] + emitted[ids] - 1)
        lead = len(ids) if decoding.all() else int(np.argmin(decoding))
        lead = min(lead, budget)
        dec = ids[:lead]
        need_dec = -(-(computed[dec] + 1) // bs) - blocks[dec]
        if lead and int(need_dec.sum()) <= free_blocks:
            free_blocks -= int(need_dec.sum())
            blocks[dec] += need_dec
            budget -= lead
            i = lead
        else:
            dec, i = dec[:0], 0
        scheduled: list[tuple[int, int]] = []  # the others: (request, new tokens)
        while i < len(running) and budget > 0:
            r = running[i]
            new = min(prompt[r] + int(emitted[r]) - int(computed[r]), budget)
            need = blocks_for(int(computed[r]) + new) - int(blocks[r])
            while need > free_blocks:  # preempt from the back until the blocks fit (or r itself goes)
                victim = running.pop()
                free_blocks += int(blocks[victim])
                blocks[victim] = 0
                computed[victim] = 0
                log.preemptions[victim] += 1
                waiting.appendleft(victim)
                if victim == r:
                    break
            if r not in running[i:i + 1]:
                break
            free_blocks -= need
            blocks[r] += need
            scheduled.append((r, new))
            budget -= new
            i += 1
        admitted = True
        while waiting and admitted and budget > 0 and len(running) < limits.max_num_seqs:
            r = waiting[0]
            new = min(prompt[r] + int(emitted[r]) - int(computed[r]), budget)
            need = blocks_for(int(computed[r]) + new) - int(blocks[r])
            admitted = need <= free_blocks
            if admitted:
                waiting.popleft()
                running.append(r)
                free_blocks -= need
                blocks[r] += need
                scheduled.append((r, new))
                budget -= new
        if not scheduled and not len(dec):  # nothing fits: refused before the simulation starts
            raise RuntimeError("the KV cache cannot hold a single request")  # pragma: no cover

        chunks: list[tuple[int, int]] = []
        decode_sum = int(computed[dec].sum())
        n_decode = n_emit = len(dec)
        for r, new in scheduled:
            total = prompt[r] + int(emitted[r])
            if int(computed[r]) + new == total:
                n_emit += 1
            if emitted[r] > 0 and new == 1 and int(computed[r]) == total - 1:
                n_decode += 1
                decode_sum += int(computed[r])
            else:
                chunks.append((new, int(computed[r])))
        time_s = cost.step_s(decode_sum, n_decode, chunks, n_emit)
        steps.add(clock, time_s, sum(q for q, _ in chunks), n_decode, len(running), len(waiting),
                  limits.kv_blocks - free_blocks)
        clock += time_s
        computed[dec] += 1
        emitted[dec] += 1
        done = dec[emitted[dec] >= log.gen_len[dec]].tolist()
        for r, new in scheduled:
            computed[r] += new
            if int(computed[r]) == prompt[r] + int(emitted[r]):
                emitted[r] += 1
                if emitted[r] == 1:
                    log.first_token_s[r] = clock
                if emitted[r] >= gen[r]:
                    done.append(r)
        if done:
            finished, released = _finish(running, np.asarray(done), emitted, log, clock, blocks, n, closed,
                                         released, waiting, finished)
            free_blocks = limits.kv_blocks - int(blocks.sum())
    return log, steps


def _finish(running: list[int], ids: np.ndarray, emitted: np.ndarray, log: RequestLog, clock: float,
            blocks: np.ndarray, n: int, closed: bool, released: int, waiting: deque[int],
            finished: int) -> tuple[int, int]:
    """Retire the requests of `ids` that have all their tokens; a closed loop sends the next ones."""
    done = ids[emitted[ids] >= log.gen_len[ids]]
    if len(done) == 0:
        return finished, released
    for r in done.tolist():
        running.remove(r)
        log.finish_s[r] = clock
        if log.gen_len[r] == 1 and np.isnan(log.first_token_s[r]):
            log.first_token_s[r] = clock
    blocks[done] = 0
    finished += len(done)
    if closed:
        for _ in range(len(done)):
            if released < n:
                log.arrival_s[released] = clock
                waiting.append(released)
                released += 1
    return finished, released


def _decode_run_length(ids: np.ndarray, computed: np.ndarray, blocks: np.ndarray, *, gen_len: np.ndarray,
                       emitted: np.ndarray, bs: int, free_blocks: int) -> tuple[int, np.ndarray]:
    """How many pure decode steps the running requests take before one finishes or the blocks run out,
    and the blocks in use (beyond those held now) at each of those steps."""
    k = int(np.min(gen_len[ids] - emitted[ids]))  # the step after which the first request finishes
    c, held = computed[ids], blocks[ids]
    j = np.arange(1, k + 1)
    extra = np.sum(-(-(c[None, :] + j[:, None]) // bs) - held[None, :], axis=1) if k * len(ids) < 4_000_000 else None
    if extra is None:  # very long runs: take them in pieces
        k = 4_000_000 // len(ids)
        j = np.arange(1, k + 1)
        extra = np.sum(-(-(c[None, :] + j[:, None]) // bs) - held[None, :], axis=1)
    fits = int(np.searchsorted(extra, free_blocks, side="right"))  # steps whose blocks fit
    k = min(k, fits)
    return k, extra[:k] if k > 0 else np.zeros(0, dtype=np.int64)


def _decode_run_times(cost: StepCost, ids: np.ndarray, computed: np.ndarray, k: int, clock: float,
                      limit_s: float | None) -> tuple[int, np.ndarray]:
    """Times of k pure decode steps of the requests `ids` (each step one token more cached for each); cut
    before the first step that starts at or after limit_s (an arrival that could be admitted)."""
    n = len(ids)
    mean0 = float(np.mean(computed[ids]))
    fixed = cost.tokens(0, n) + float(cost.lm_head_s[n])
    times = fixed + cost.decode_attention(n, mean0 + np.arange(k, dtype=float))
    if limit_s is not None:
        starts = clock + np.concatenate([[0.0], np.cumsum(times[:-1])])
        k = int(np.searchsorted(starts, limit_s, side="left"))  # steps starting before the arrival
        k = max(k, 1)
        times = times[:k]
    return k, np.asarray(times, dtype=float)


def percentile_summary(values: Any, weights: Any = None) -> dict[str, float]:
    """mean, p50, p90, p95, p99, max of `values` (each counted `weights` times when given)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return dict.fromkeys(("mean", "p50", "p90", "p95", "p99", "max"), 0.0)
    if weights is None:
        q = np.percentile(v, [50, 90, 95, 99])
        return {"mean": float(v.mean()), "p50": float(q[0]), "p90": float(q[1]), "p95": float(q[2]),
                "p99": float(q[3]), "max": float(v.max())}
    w = np.asarray(weights, dtype=float)
    keep = w > 0
    v, w = v[keep], w[keep]
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order]
    cdf = np.cumsum(w) / w.sum()
    pick = [float(v[min(int(np.searchsorted(cdf, p / 100, side="left")), len(v) - 1)]) for p in (50, 90, 95, 99)]
    return {"mean": float(np.sum(v * w) / w.sum()), "p50": pick[0], "p90": pick[1], "p95": pick[2],
            "p99": pick[3], "max": float(v.max())}
