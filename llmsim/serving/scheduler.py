"""Continuous batching with chunked prefill, step by step, as vLLM's V1 scheduler runs it.

Every step (vllm/v1/core/sched/scheduler.py, Scheduler.schedule):
1. the running requests, in order, each get their new tokens (one for a decode, the rest of the prompt,
   up to the remaining token budget, for a prefill), each allocating the KV blocks those tokens need;
   when the blocks run out the last running request is preempted (its blocks freed, its computed tokens
   dropped, back to the front of the waiting queue: recompute, vLLM's default);
2. then, unless step 1 preempted a request (`if not preempted_reqs`), waiting requests, first come first
   served, while fewer than max_num_seqs run, budget is left and their blocks can be allocated (a prompt
   longer than the budget is prefilled in chunks across steps). Without that rule a request whose blocks run
   out preempts itself and is admitted again in the same step, forever.
A request samples a token at the end of the step that computes its last known token (the final prompt
chunk, then each decode token). It finishes after gen_len tokens. With mixed_batches=False (SGLang's
default) a step prefills only while prompts can start, and decodes otherwise. With async_scheduling (vLLM's
async scheduling, SGLang's and TensorRT-LLM's overlap schedulers) a step is decided while the one before it runs:
while requests run, the step starting at t sees the arrivals up to the start of the step before it. A closed loop's
request sent on another's last token reaches a busy engine after the decision taken at that instant (the engine
returns the token, then decides), so it is first seen by the decision after. With
recv_interval N (SGLang's --scheduler-recv-interval) arrivals are taken in only after every N decode steps or a
step that prefilled. With batch_wait_iters (TensorRT-LLM's batch_wait_timeout_iters and batch_wait_max_tokens_ratio,
tensorrt_llm/_torch/pyexecutor/py_executor.py, PyExecutor._waiting_requests) a step that decodes admits no new
prompt until the prompts it would admit plus its decodes reach batch_wait_tokens or batch_wait_iters steps have held
them back (the count kept across steps, reset when they go in). Prefix caching, prefilled arrivals (a
disaggregated decode instance) and speculative decoding (tokens_per_step per decode step) are options of
simulate_engine; coupled_engine runs the same loop as one of several engines that feed each other
(serving.disaggregated), lockstep_engine as one attention data-parallel rank of several that step together
(serving.lockstep), where adp_balance (TensorRT-LLM's attention data-parallel balance, serving.adp_balance) holds
new prompts back until every rank holds one or its counter times out.

The scheduler hands each step to StepCost for its time; the clock advances by it. Runs of steps in which
nothing but decoding happens (no admission possible, no arrival, no finish, no block shortage) are
evaluated together in one vectorised pass (_decode_run): the same steps, summed without the Python loop. The
running requests are the rows of one array (compacted in one numpy call); their token counts are kept less the
number of steps that moved every request one token (_Running.epoch), so such a step writes no row, and what a step
needs of them (their cached-token sum, how many open a KV block, the first to finish, the free blocks) is kept as
they change rather than summed every step (tests/test_speed_paths.py checks each against the sum). Decodes past the
leading ones (behind a prompt, or all of them when blocks run short and a request must be preempted) are scheduled a
stretch at a time: those whose blocks fit, in order, in one numpy pass, then one by one from the first that must
preempt (DECODE_STRETCHES: the same steps as one by one, checked bit for bit).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .adp_balance import AdpBalance
from .frontend import Frontend
from .prefix_cache import PrefixCache
from .step_cost import StepCost


@dataclass(frozen=True)
class SchedulerLimits:
    """The engine's knobs: requests per step, tokens per step, KV blocks and their size."""

    max_num_seqs: int
    max_num_batched_tokens: int
    kv_blocks: int
    block_size: int
    mixed_batches: bool = True  # False: a step either prefills (new requests first) or decodes, never both
    # False: a new prompt runs whole in one step or waits for a step with room for it (TensorRT-LLM's default,
    # enable_chunked_prefill False); True: the last one admitted is cut to the step's budget and goes on next step
    chunked_prefill: bool = True
    state_blocks: int = 0  # blocks of the pool each running request's fixed-size state takes (linear attention)
    # True: a waiting request starts only when the blocks of its whole prompt and output fit beside the
    # outstanding footprints of the running ones, so none is ever preempted (TensorRT-LLM's default capacity
    # policy, GUARANTEED_NO_EVICT); False: by the blocks of its prompt alone, preempting when blocks run out
    # (vLLM's; TensorRT-LLM's MAX_UTILIZATION)
    reserve_output: bool = False
    # True: the engine decides step N + 1 while step N runs (vLLM's async scheduling, SGLang's and TensorRT-LLM's
    # overlap schedulers), so a request that arrives while a step runs is first scheduled into the step after the
    # next one: while requests run, a step starting at t sees the arrivals up to the start of the step before it
    async_scheduling: bool = False
    # SGLang's --scheduler-recv-interval: while requests run, the scheduler takes new requests in only after every
    # recv_interval decode steps, and after any step that prefilled (1: before every step)
    recv_interval: int = 1
    # TensorRT-LLM's batch waiting (batch_wait_timeout_iters, batch_wait_max_tokens_ratio x max_num_tokens): while
    # requests decode, waiting prompts are held back until their tokens and the decodes reach batch_wait_tokens or
    # batch_wait_iters steps have held them (0: off)
    batch_wait_iters: int = 0
    batch_wait_tokens: float = 0.0
    # TensorRT-LLM's attention data-parallel balance (attention_dp_config enable_balance) as (ranks, timeout_iters,
    # batching_wait_iters), serving.adp_balance; None: off
    adp_balance: tuple[int, int, int] | None = None
    # True: a prefilled arrival (a disaggregated decode instance) recomputes its last prompt token in its first step,
    # so its first token reaches the client at the end of that step, not at its admission (vLLM's NixlConnector:
    # serving.disaggregated.RECOMPUTES_FIRST_TOKEN); the caller then gives it one token more to emit
    recompute_first_token: bool = False
    note: str = ""  # a default changed to fit the caller's settings, and why (empty: none)
    rank_note: str = ""  # how the engine split its limits over attention data-parallel ranks (empty: not split)


@dataclass
class RequestLog:
    """Per request (index = request id): lengths, arrival (when its client sent it), when the engine first
    could see it (ready_s: after the serving frontend, serving.frontend; arrival_s where None is given) and the
    times it saw."""

    prompt_len: np.ndarray
    gen_len: np.ndarray
    arrival_s: np.ndarray
    ready_s: np.ndarray = None  # type: ignore[assignment]  # set in __post_init__ where not given
    first_token_s: np.ndarray = field(init=False)
    finish_s: np.ndarray = field(init=False)
    preemptions: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        n = len(self.prompt_len)
        if self.ready_s is None:
            self.ready_s = self.arrival_s.copy()
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
        self.waiting.extend((waiting if np.shape(waiting) == (k,) else np.broadcast_to(waiting, (k,))).tolist())
        self.kv_blocks_used.extend(kv.tolist())

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: np.asarray(values) for name, values in vars(self).items()}


class _Running:
    """The running requests in scheduling order, as parallel arrays (slices, not fancy indexing, per step):
    the rows of one array, so that a step updates or compacts several fields in one numpy call.

    A step moves each decoding request by one token (one more in its KV cache, one more sampled), so three rows are
    kept less the count of steps that moved every request (`epoch`): such a step adds one to the epoch and writes no
    row; a request that moved otherwise (a prompt chunk, left out of a step) has its rows corrected by the difference:
    computed = c + epoch, emitted = e + epoch, emitted - gen = o + epoch (>= 0: finished). A request holds
    ceil(computed / block_size) KV blocks (a cached prefix's included), which is not kept either. The decoding
    requests are counted by c % block_size (`residues`: those whose next token opens a block this step are
    residues[-epoch % block_size]), and `finish_at` is at most the epoch at which the first of them finishes."""

    def __init__(self, capacity: int, block_size: int, state_blocks: int = 0) -> None:
        self.m = 0
        self.state = np.zeros((7, capacity), dtype=np.int64)
        # rows: request id, prompt and generated lengths, then less the epoch: tokens in the KV cache (c), tokens
        # sampled (e), sampled less gen (o); last, the blocks of a cached prefix it holds (not its own)
        self.ids, self.prompt, self.gen, self.c, self.e, self.o, self.shared = self.state
        self.epoch = 0
        self.block_size = block_size
        self.state_blocks = state_blocks  # blocks each running request's fixed-size state takes (linear attention)
        self.residues = [0] * block_size  # the decoding requests by c % block_size
        self.finish_at = math.inf  # no decoding request finishes while the epoch is below this
        self.cached_tokens = 0  # the sum of computed over the running requests, kept as they change
        self.prefilling = 0  # how many are not decoding (prompt or recompute tokens left)

    def computed(self, i: int) -> int:
        return int(self.c[i]) + self.epoch

    def emitted(self, i: int) -> int:
        return int(self.e[i]) + self.epoch

    def decoding(self, i: int) -> bool:
        """Whether request i decodes (has sampled, and its KV cache holds all but its last token)."""
        e = int(self.e[i])
        return e + self.epoch > 0 and int(self.c[i]) == int(self.prompt[i]) + e - 1

    def append(self, r: int, prompt: int, gen: int, computed: int, emitted: int, shared: int) -> None:
        i, epoch = self.m, self.epoch
        self.ids[i], self.prompt[i], self.gen[i], self.shared[i] = r, prompt, gen, shared
        self.c[i], self.e[i], self.o[i] = computed - epoch, emitted - epoch, emitted - gen - epoch
        self.m += 1
        self.cached_tokens += computed
        if emitted > 0 and computed == prompt + emitted - 1:  # a prefilled request decodes at once
            self.residues[(computed - epoch) % self.block_size] += 1
            self.finish_at = min(self.finish_at, gen - emitted + epoch)
        else:
            self.prefilling += 1  # prompt (or recompute) tokens to compute

    def hold(self, start: int, stop: int) -> None:
        """Requests start .. stop - 1 did not move in a step that added one to the epoch."""
        self.state[3:6, start:stop] -= 1
        for i in range(start, stop):
            if self.decoding(i):
                c = int(self.c[i])
                self.residues[(c + 1) % self.block_size] -= 1
                self.residues[c % self.block_size] += 1

    def keep(self, mask: np.ndarray) -> int:
        """Keep the requests where mask (over the first m) is true, in order; the blocks the others held (their
        states' included, cached prefixes not)."""
        rows = (~mask).nonzero()[0]
        c, e, bs = self.c[rows], self.e[rows], self.block_size
        decoding = (e + self.epoch > 0) & (c == self.prompt[rows] + e - 1)
        self.prefilling -= int(len(rows) - np.count_nonzero(decoding))
        for residue in (c[decoding] % bs).tolist():
            self.residues[residue] -= 1
        held = (c + (self.epoch + bs - 1)) // bs  # ceil(computed / bs) each
        freed = int(np.add.reduce(held - self.shared[rows])) + self.state_blocks * len(rows)
        k = int(np.count_nonzero(mask))
        self.state[:, :k] = self.state[:, :self.m][:, mask]
        self.m = k
        self.cached_tokens = int(np.add.reduce(self.c[:k])) + self.epoch * k
        return freed

    def remove(self, i: int) -> int:
        """Drop the request at position i, the others kept in order (keep() of one request, by a shift); the
        blocks it held."""
        m, epoch, bs = self.m, self.epoch, self.block_size
        _, prompt, _, c, e, _, shared = self.state[:, i].tolist()
        if e + epoch > 0 and c == prompt + e - 1:  # decoding
            self.residues[c % bs] -= 1
        else:
            self.prefilling -= 1
        computed = c + epoch
        self.cached_tokens -= computed
        if i < m - 1:  # numpy copies overlapping slices as if through a buffer
            self.state[:, i:m - 1] = self.state[:, i + 1:m]
        self.m = m - 1
        return -(-computed // bs) - shared + self.state_blocks

    def own_blocks(self) -> int:
        """Blocks the running requests hold beyond the cached prefixes they share (their states' not counted)."""
        m, bs = self.m, self.block_size
        held = int(np.add.reduce((self.c[:m] + (self.epoch + bs - 1)) // bs))  # ceil(computed / bs) each
        return held - int(np.add.reduce(self.shared[:m]))

    def leading_decodes(self) -> int:
        """How many requests at the front decode this step (one token each)."""
        return self.m if self.prefilling == 0 else self.decodes_from(0)

    def decodes_from(self, i: int) -> int:
        """How many requests from position i on decode, one after another."""
        m = self.m
        e = self.e[i:m]
        decoding = (e > -self.epoch) & (self.c[i:m] == self.prompt[i:m] + e - 1)
        return m - i if decoding.all() else int(np.argmin(decoding))


def simulate_engine(cost: StepCost, limits: SchedulerLimits, prompt_len: np.ndarray, gen_len: np.ndarray,
                    arrival_s: np.ndarray, concurrency: int | None, prefilled: bool = False,
                    prefix_group: np.ndarray | None = None, prefix_len: int = 0,
                    frontend: Frontend | None = None) -> tuple[RequestLog, StepLog]:
    """Run every request through the engine. Open loop (concurrency None): request i arrives at
    arrival_s[i] (sorted). Closed loop: concurrency clients, client i sending its first request at
    arrival_s[i] and each next one the moment its previous one finishes. prefilled: every request arrives
    with its prompt's KV cache and first token (a disaggregated decode instance); it only decodes, and its
    first_token_s is the moment the instance first admits it (the start of its first step), when a
    disaggregated deployment streams the prefill's token to the client.
    Prefix caching: request i's prompt starts with shared prefix prefix_group[i] (-1: none) of prefix_len
    tokens; once one request of a group has computed the prefix, its whole blocks stay cached and later
    requests of the group start after them, until blocks run short and it is the least recently used prefix no
    running request holds (serving.prefix_cache).
    frontend: the serving frontend every request passes before the engine sees it (none: the engine sees it when
    it is sent): a closed loop's first requests go through it up front, each later one behind the requests sent
    before it (serving.frontend)."""
    n = len(prompt_len)
    arrivals = np.asarray(arrival_s, dtype=float)
    if concurrency is not None:  # the first requests' times; the others' are known as the run goes
        arrivals = np.concatenate([arrivals[:concurrency], np.full(max(n - concurrency, 0), np.inf)])
    known = n if concurrency is None else min(concurrency, n)
    ready = arrivals.copy()
    if frontend is not None:
        ready[:known] = frontend.admit_all(arrivals[:known])
    log = RequestLog(np.asarray(prompt_len, dtype=np.int64), np.asarray(gen_len, dtype=np.int64), arrivals.copy(),
                     ready)
    steps = StepLog()
    for _ in _engine(cost, limits, log, steps, concurrency, prefilled, prefix_group, prefix_len, None,
                     frontend=frontend):
        raise AssertionError("an engine without an inbox waited for one")  # pragma: no cover
    return log, steps  # on its own the engine never waits for another: it runs to the end at once


class Inbox:
    """The requests another part of a deployment sends one engine while they run together
    (serving.disaggregated's coupled pools): (time, request id) in a heap."""

    def __init__(self) -> None:
        self.heap: list[tuple[float, int]] = []

    def put(self, time_s: float, request: int) -> None:
        heapq.heappush(self.heap, (time_s, request))

    def next_s(self) -> float:
        """The earliest arrival it holds (inf: none)."""
        return self.heap[0][0] if self.heap else math.inf

    def due(self, clock: float) -> list[int]:
        """The requests arrived at or before `clock`, in order of arrival (taken out)."""
        heap, out = self.heap, []
        while heap and heap[0][0] <= clock:
            out.append(heapq.heappop(heap)[1])
        return out


def engine_lists(log: RequestLog, prefilled: bool) -> tuple[list[Any], ...]:
    """Per request, as Python lists for the per-step work: arrival time, prompt and output lengths, tokens sampled
    and tokens in the KV cache while not running (preempted ones keep their tokens; prefilled ones arrive with
    their prompt's cache and first token). The arrival time is when the engine first could see it (ready_s)."""
    prompt_of = log.prompt_len.tolist()
    n = len(prompt_of)
    return (log.ready_s.tolist(), prompt_of, log.gen_len.tolist(), [1 if prefilled else 0] * n,
            list(prompt_of) if prefilled else [0] * n)


def coupled_engine(cost: StepCost, limits: SchedulerLimits, log: RequestLog, steps: StepLog, inbox: Inbox,
                   prefilled: bool, on_finish: Any, lists: tuple[list[Any], ...]) -> Any:
    """One engine of several that feed each other, as a generator: it yields (clock, busy) before each
    scheduling decision and is resumed with the horizon (the earliest time another engine could still send it
    a request) once every request due by its clock is in `inbox`; on_finish(ids, clock) hears of the requests
    that finish. `log` is shared with the other engines of its pool (each request runs on one of them), its
    arrival_s unused; its steps go to `steps`; `lists`, engine_lists(log, prefilled), shared too. The coordinator
    (serving.disaggregated) resumes the engine whose clock is earliest."""
    return _engine(cost, limits, log, steps, None, prefilled, None, 0, (inbox, on_finish), lists)


@dataclass
class LockstepLink:
    """What the ranks of a replica in lockstep share (serving.lockstep): TensorRT-LLM's attention data-parallel
    balance (None: off)."""

    adp: AdpBalance | None = None


def lockstep_engine(cost: StepCost, limits: SchedulerLimits, log: RequestLog, steps: StepLog, concurrency: int | None,
                    prefix_group: np.ndarray | None, prefix_len: int, frontend: Frontend | None,
                    lockstep: LockstepLink, rank: int) -> Any:
    """One attention data-parallel rank of several run in lockstep (serving.lockstep), as a generator (_engine's
    lockstep protocol). `log` holds the rank's requests: a closed loop's first `concurrency` of them sent at their
    arrival_s and seen at their ready_s (through the replica's one frontend), the others sent as those finish."""
    return _engine(cost, limits, log, steps, concurrency, False, prefix_group, prefix_len, None, None, frontend,
                   lockstep, rank)


def _engine(cost: StepCost, limits: SchedulerLimits, log: RequestLog, steps: StepLog, concurrency: int | None,
            prefilled: bool, prefix_group: np.ndarray | None, prefix_len: int,
            coupled: tuple[Inbox, Any] | None, lists: tuple[list[Any], ...] | None = None,
            frontend: Frontend | None = None, lockstep: LockstepLink | None = None, rank: int = 0) -> Any:
    """simulate_engine's loop, filling `log` and `steps` (a generator: it yields only when coupled, at each
    decision, or in lockstep). lockstep (serving.lockstep): the engine is rank `rank` of several that run each step
    together: it yields ("step", its own step time, prefill tokens, decode requests) for each step it runs and is
    resumed with the joint step's time, and ("idle", the next time it could see a request) when it has nothing to
    run, resumed with the clock it wakes at; a run of pure decode steps it offers as ("run", its own times of the
    steps until one of its requests finishes or its blocks run out, its requests, the arrival that would end the
    run or None), resumed with the joint steps' times (a prefix of those steps) or None (then it steps one at a
    time; with TensorRT-LLM's balance, lockstep.adp, it offers none)."""
    n = len(log.prompt_len)
    closed = concurrency is not None
    arrivals = log.ready_s  # when the engine can see each request
    arrival_of, prompt_of, gen_of, emitted_of, computed_of = lists or engine_lists(log, prefilled)
    bs = limits.block_size
    states = limits.state_blocks  # taken from the pool while a request runs, freed when it leaves
    free_blocks = limits.kv_blocks
    hit_blocks = prefix_len // bs  # whole blocks of a shared prefix, the part a cache can hold
    groups = prefix_group.tolist() if prefix_group is not None and hit_blocks else None
    cache = PrefixCache(groups, hit_blocks) if groups is not None else None  # cached prefixes and their blocks
    run = _Running(limits.max_num_seqs + 1, bs, states)
    waiting: deque[int] = deque()
    known = 0 if coupled else min(concurrency, n) if closed else n  # requests whose arrival time is known up front
    released = known  # closed loop: requests sent so far
    next_arrival = 0  # the next request (of the known ones) not yet arrived
    grow = cost.speculation.tokens_per_step if cost.speculation else 1.0  # tokens per decode step
    clock = last_step_s = 0.0
    last_decode_s = 0.0  # the last step without prompt tokens: what a run's steps take, about
    force_decode = False  # a prefill-only step found nothing to prefill: decode instead
    reserve = limits.reserve_output
    finished = 0
    inbox, on_finish = coupled if coupled else (None, None)
    horizon = math.inf  # coupled: the earliest time a request not yet in the inbox could arrive
    lag = limits.async_scheduling
    sent: deque[int] = deque()  # closed loop: requests sent (ready at their ready_s) not yet seen by the scheduler
    recv_every = limits.recv_interval
    recv_count = recv_every  # SGLang's SchedulerRecvSkipper counter: decode steps since it last took requests in
    wait_iters, wait_tokens = limits.batch_wait_iters, limits.batch_wait_tokens
    wait_count = 0  # TensorRT-LLM's batch_wait_iters_count: steps that held the waiting prompts back
    seeded: list[int] = []  # prefilled arrivals admitted this step whose first token is its end (recompute)
    adp = lockstep.adp if lockstep is not None else None  # TensorRT-LLM's balance over the lockstep ranks
    # decodes past the leading ones (behind a prompt, or all of them when blocks are short) scheduled a stretch at a
    # time: the same as one by one where a decode's step is one token and no cached prefix is stored on the way
    bulk_decodes = DECODE_STRETCHES and grow == 1.0 and cache is None

    while finished < n or inbox is not None:
        if inbox is not None:  # coupled: wait for the other engines to reach this clock, then take what came
            busy = bool(run.m or waiting)
            horizon = yield clock, busy
            if not busy:
                clock = max(clock, inbox.next_s())
        # async scheduling: while requests run, this step was decided when the one before it started
        seen = clock - last_step_s if lag and run.m else clock
        if recv_count >= recv_every or not run.m:  # an idle engine takes requests in at once
            recv_count = 0
            if inbox is not None:
                waiting.extend(inbox.due(seen))
            # a closed loop's request sent at the instant `seen` (on another's last token, with no frontend time)
            # reaches a busy engine after the decision taken then: the engine returns a step's tokens and goes on
            # to decide the next step before the client's new request is in (an idle engine waits for it)
            while sent and (arrivals[sent[0]] < seen or (arrivals[sent[0]] == seen and not run.m)):
                waiting.append(sent.popleft())
            while next_arrival < known and arrival_of[next_arrival] <= seen:
                waiting.append(next_arrival)
                next_arrival += 1
        m = run.m
        if m == 0 and not waiting:  # idle: on to the next request the engine will see
            if inbox is None:
                upcoming = arrivals[sent[0]] if sent else math.inf  # sent, still in the frontend
                if next_arrival < known:
                    upcoming = min(upcoming, arrival_of[next_arrival])
                if lockstep:
                    if adp is not None:
                        adp.idle(rank)
                    clock = yield "idle", upcoming
                    continue
                clock = max(clock, upcoming)
            continue

        # ---- a run of pure decode steps at once --------------------------------------------------------
        limit_s = arrival_of[next_arrival] if next_arrival < known and m < limits.max_num_seqs else None
        if inbox is not None and m < limits.max_num_seqs:
            limit_s = min(inbox.next_s(), horizon)
        if sent and m < limits.max_num_seqs:  # sent, not yet seen: the next step's decision sees them
            limit_s = min(arrivals[sent[0]], limit_s if limit_s is not None else math.inf)
        if m and run.prefilling == 0 and (not waiting or m >= limits.max_num_seqs) and (
                limit_s is None or limit_s - clock > 3 * last_decode_s):  # else one at a time (cheaper for so few)
            joint = None
            if lockstep:  # offer the run to the other ranks: resumed with the joint steps' times, or None
                k, times, kv, _ = _decode_run(cost, run, bs, free_blocks, clock, limit_s, grow)
                # (with TensorRT-LLM's balance the ranks step one at a time: it decides every step)
                joint = (yield "run", times, m, limit_s) if k >= 2 and adp is None else None
                if joint is not None:
                    k, times, kv = len(joint), joint, kv[:len(joint)]
                    starts = step_starts(clock, times)
            else:
                k, times, kv, starts = _decode_run(cost, run, bs, free_blocks, clock, limit_s, grow)
            if k >= 2 and (not lockstep or joint is not None):
                queued = (len(waiting) + len(sent) + arrivals[:known].searchsorted(starts, side="right")
                          - next_arrival)
                in_use = limits.kv_blocks - free_blocks - _idle_cached(cache, run)  # before the run's new blocks
                steps.extend(starts, times, m, m, queued, in_use + kv)
                clock = float(starts[-1] + times[-1])
                last_step_s = last_decode_s = float(times[-1])
                recv_count = (recv_count + k - 1) % recv_every + 1  # the run's k decode steps, taken in at each
                run.epoch += k  # every request decoded k tokens
                run.cached_tokens += k * m
                free_blocks -= int(kv[-1])  # the run's new blocks
                finished, released, freed = _retire(run, log, emitted_of, clock, n, closed, released, sent, finished,
                                                    on_finish, frontend)
                free_blocks += freed
                if CHECK_FREE_BLOCKS:
                    _check_free_blocks(run, cache, limits, free_blocks)
                continue

        # ---- one step: running requests first, then waiting ones ---------------------------------------
        budget = limits.max_num_batched_tokens
        # SGLang's default (no mixed chunks): while prompts wait and can start, steps prefill only
        prefill_only = not limits.mixed_batches and not force_decode and (run.prefilling > 0 or (
            bool(waiting) and run.m < limits.max_num_seqs
            and -(-(prompt_of[waiting[0]] + emitted_of[waiting[0]]) // bs) + states
            <= free_blocks + _idle_cached(cache, run)))
        lead = 0 if prefill_only else min(run.leading_decodes(), budget)
        epoch = run.epoch
        if lead == run.m - run.prefilling:  # every decoding request: those whose next token opens a block
            need = run.residues[-epoch % bs]
        else:
            need = int(np.count_nonzero((run.c[:lead] + epoch) % bs == 0))
        if lead and need > free_blocks and cache is not None:  # cached prefixes make room first
            free_blocks += cache.evict(need - free_blocks, cache.in_use(run.ids, run.shared, run.m))
        if lead and need <= free_blocks:
            free_blocks -= need
            budget -= lead
            i = lead
        else:
            lead = i = 0
        scheduled: list[tuple[int, int]] = []  # the others: (position in run, new tokens)
        together: list[tuple[int, int]] = []  # stretches of decodes scheduled at once: (first, past the last)
        preempted = False  # a step that preempts admits no waiting request (vLLM V1: `if not preempted_reqs`)
        while i < run.m and budget > 0:
            computed, emitted, prompt = int(run.c[i]) + epoch, int(run.e[i]) + epoch, int(run.prompt[i])
            decoding = emitted > 0 and computed == prompt + emitted - 1
            if decoding and bulk_decodes and run.m - i >= 8:  # a stretch of decodes: one numpy pass, not a loop
                stretch = run.decodes_from(i)
                if prefill_only:
                    i += stretch  # they wait for the prefill step to pass
                    continue
                # one token each, in order, while their blocks fit (the first that does not preempts, below)
                opens = np.cumsum((run.c[i:i + min(stretch, budget)] + epoch) % bs == 0)
                fit = int(opens.searchsorted(free_blocks, side="right"))
                if fit:
                    free_blocks -= int(opens[fit - 1])
                    budget -= fit
                    together.append((i, i + fit))
                    i += fit
                    continue
            if prefill_only and decoding:
                i += 1  # a decode: it waits for the prefill step to pass
                continue
            new = min(prompt + emitted - computed, budget)
            need = -(-(computed + new) // bs) + (-computed // bs)  # its blocks for them, less the ones it holds
            if need > free_blocks and cache is not None:  # cached prefixes make room before any preemption
                free_blocks += cache.evict(need - free_blocks, cache.in_use(run.ids, run.shared, run.m))
            while need > free_blocks and run.m > i:  # preempt from the back until the blocks fit (or i goes)
                j = run.m - 1
                victim = int(run.ids[j])
                emitted_of[victim] = run.emitted(j)
                computed_of[victim] = 0  # recompute
                free_blocks += run.remove(j)
                log.preemptions[victim] += 1
                waiting.appendleft(victim)
                preempted = True
            if i >= run.m:
                break
            free_blocks -= need
            scheduled.append((i, new))
            budget -= new
            i += 1
        stop = run.m if prefill_only else i  # (not prefill-only: requests lead .. stop - 1 were scheduled)
        outstanding = 0  # reserve_output: blocks the running requests will still take (their footprints less held)
        if reserve and waiting:
            m = run.m
            outstanding = int(np.add.reduce(-(-(run.prompt[:m] + run.gen[:m]) // bs))) - int(
                np.add.reduce((run.c[:m] + (epoch + bs - 1)) // bs))
        admitted_from = run.m  # requests from here on were admitted this step
        held = False  # batch waiting holds the waiting prompts back this step
        if wait_iters and waiting and budget > 0 and run.m < limits.max_num_seqs and not preempted:
            decoding = run.m - run.prefilling
            if decoding:  # TensorRT-LLM waits only while requests decode ("to avoid dead waiting")
                if wait_count >= wait_iters or decoding + _admissible_tokens(
                        waiting, prompt_of, budget, limits.max_num_seqs - run.m) >= wait_tokens:
                    wait_count = 0
                else:
                    wait_count += 1
                    held = True
        if adp is not None:  # the balance decides every step, prompts waiting or not
            held = adp.hold(rank, clock, run.m - run.prefilling, bool(waiting), run.m < limits.max_num_seqs) or held
        while waiting and budget > 0 and run.m < limits.max_num_seqs and not preempted and not held:
            r = waiting[0]
            done_tokens = computed_of[r]  # 0, or a prefilled request's prompt
            shared = cache.hit(r) if cache is not None and done_tokens == 0 else 0
            done_tokens += shared * bs  # a cached prefix: computed already
            whole = prompt_of[r] + emitted_of[r] - done_tokens  # recompute: prompt and tokens so far
            if whole > budget and not limits.chunked_prefill and computed_of[r] == 0 and emitted_of[r] == 0:
                break  # no chunking: the prompt waits, first come first served, for a step with room for all of it
            new = min(whole, budget)
            need = -(-(done_tokens + new) // bs)
            footprint = -(-(prompt_of[r] + gen_of[r]) // bs) if reserve else need  # blocks to finish
            short = footprint - shared + states - (free_blocks - outstanding)
            if short > 0 and cache is not None:  # cached prefixes no running request holds make room
                free_blocks += cache.evict(short, cache.in_use(run.ids, run.shared, run.m, r if shared else -1))
                short = footprint - shared + states - (free_blocks - outstanding)
            if short > 0:
                break
            outstanding += footprint - need
            waiting.popleft()
            free_blocks -= need - shared + states
            if prefilled and log.first_token_s[r] != log.first_token_s[r]:  # NaN: its first admission
                if limits.recompute_first_token:
                    seeded.append(r)  # its first token: at the end of this step
                else:
                    log.first_token_s[r] = clock
            run.append(r, prompt_of[r], gen_of[r], done_tokens, emitted_of[r], shared)
            scheduled.append((run.m - 1, new))
            budget -= new
        force_decode = False
        if prefill_only and not scheduled:  # no prompt could go on (blocks): this step decodes after all
            force_decode = True
            continue
        if not scheduled and not lead and not together:  # nothing fits: refused before the simulation starts
            raise RuntimeError("the KV cache cannot hold a single request")  # pragma: no cover

        chunks: list[tuple[int, int]] = []
        decode_sum = float(_leading_tokens(run, lead))
        if grow != 1.0:  # speculative decoding: a decode step adds `grow` tokens; the cache holds the prompt
            decode_sum = grow * decode_sum + (1 - grow) * float(run.prompt[:lead].sum())  # and grow per step
        n_decode = n_emit = lead
        for first, last in together:  # (integers summed as floats: exact in any order)
            n_decode += last - first
            n_emit += last - first
            decode_sum += float(int(np.add.reduce(run.c[first:last])) + epoch * (last - first))
        for i, new in scheduled:
            computed, emitted = int(run.c[i]) + epoch, int(run.e[i]) + epoch
            total = int(run.prompt[i]) + emitted
            if computed + new == total:
                n_emit += 1
            if emitted > 0 and new == 1 and computed == total - 1:
                n_decode += 1
                decode_sum += grow * computed + (1 - grow) * int(run.prompt[i])
            else:
                chunks.append((new, computed))
        time_s = cost.step_s(decode_sum, n_decode, chunks, n_emit)
        prefill_tokens = (chunks[0][0] if len(chunks) == 1 else sum(q for q, _ in chunks)) if chunks else 0
        if lockstep:  # the ranks' joint step
            time_s = yield "step", time_s, prefill_tokens, n_decode
        steps.add(clock, time_s, prefill_tokens, n_decode, run.m, len(waiting),
                  limits.kv_blocks - free_blocks - _idle_cached(cache, run))
        clock += time_s
        last_step_s = time_s
        if not chunks:
            last_decode_s = time_s
        if seeded:
            log.first_token_s[seeded] = clock
            seeded.clear()
        recv_count += 1 if not chunks else recv_every  # a step that prefilled: take requests in next time
        moved = 1 if lead else 0  # the leading decodes moved one token each: the epoch moves every request
        run.epoch = epoch + moved
        run.cached_tokens += lead
        if moved and stop < admitted_from:  # requests the step left out (its budget spent) did not move
            run.hold(stop, admitted_from)
        # one of the leading decodes may have all its tokens (none can before the epoch reaches finish_at)
        any_done = lead and run.epoch >= run.finish_at
        for first, last in together:  # each decoded one token: by the epoch, or here where it did not move
            run.cached_tokens += last - first
            if not moved:
                opened = np.bincount(run.c[first:last] % bs, minlength=bs)  # their residues move up by one
                run.state[3:6, first:last] += 1
                run.residues = (np.asarray(run.residues) - opened + np.roll(opened, 1)).tolist()
            top = int(np.maximum.reduce(run.o[first:last]))  # emitted - gen, the largest, less the epoch
            run.finish_at = min(run.finish_at, -top)
            any_done = any_done or top >= -run.epoch
        for i, new in scheduled:
            r, prompt, gen, c, e, o, shared = run.state[:, i].tolist()
            computed, emitted = c + epoch, e + epoch
            was_decoding = emitted > 0 and computed == prompt + emitted - 1
            if was_decoding:
                run.residues[c % bs] -= 1
            c += new - moved
            run.c[i] = c
            run.cached_tokens += new
            computed += new
            if shared == 0 and cache is not None and computed >= hit_blocks * bs and cache.store(r):
                run.shared[i] = hit_blocks  # its prefix blocks now stay cached
            if computed == prompt + emitted:  # it samples a token, and decodes from now on
                if not moved:
                    run.e[i] = e + 1
                    run.o[i] = o = o + 1
                if not was_decoding:
                    run.prefilling -= 1  # its prompt (or recompute) is done
                if emitted == 0:
                    log.first_token_s[r] = clock
                any_done = any_done or emitted + 1 >= gen
                run.residues[c % bs] += 1
                run.finish_at = min(run.finish_at, -o)
            elif moved:
                run.e[i] = e - 1
                run.o[i] = o - 1
        if any_done:
            finished, released, freed = _retire(run, log, emitted_of, clock, n, closed, released, sent, finished,
                                                on_finish, frontend)
            free_blocks += freed
            if CHECK_FREE_BLOCKS:
                _check_free_blocks(run, cache, limits, free_blocks)


DECODE_STRETCHES = True  # tests: False schedules every decode past the leading ones one by one (the same steps)
CHECK_FREE_BLOCKS = False  # tests: check the free blocks kept step by step against the running requests' rows


def _check_free_blocks(run: _Running, cache: PrefixCache | None, limits: SchedulerLimits, free_blocks: int) -> None:
    """The free KV blocks the engine keeps (by what each step takes and gives back) equal the pool less the blocks
    the cached prefixes, the running requests (beyond those prefixes) and their states hold."""
    pinned = cache.pinned if cache is not None else 0
    held = limits.kv_blocks - pinned - run.own_blocks() - limits.state_blocks * run.m
    if held != free_blocks:
        raise AssertionError(f"free KV blocks kept {free_blocks}, counted {held}")


def _idle_cached(cache: PrefixCache | None, run: _Running) -> int:
    """The blocks of cached prefixes no running request holds: free to any allocation (evicted on demand), so not
    counted as in use (vLLM's KV cache usage counts its free block queue, cached blocks included, as free)."""
    return cache.evictable(cache.in_use(run.ids, run.shared, run.m)) if cache is not None else 0


def _admissible_tokens(waiting: deque[int], prompt_of: list[int], budget: int, slots: int) -> int:
    """The prompt tokens of the waiting requests a step would admit, first come first served, whole prompts
    within the token budget and the free slots (at least the first), as TensorRT-LLM counts a scheduled context
    request's tokens for batch waiting (all of its prompt).
    approximation: KV blocks are not checked here (the admission loop checks them)."""
    total = 0
    for count, r in enumerate(waiting):
        if count >= slots or (count and total + prompt_of[r] > budget):
            break
        total += prompt_of[r]
    return total


def _leading_tokens(run: _Running, lead: int) -> int:
    """The cached tokens of the first `lead` running requests: all of them less those of the others (one,
    most often: a request admitted this step)."""
    behind = run.m - lead
    if behind == 0:
        return run.cached_tokens
    if behind == 1:
        return run.cached_tokens - run.computed(lead)
    return int(np.add.reduce(run.c[:lead])) + run.epoch * lead


def _retire(run: _Running, log: RequestLog, emitted_of: list[int], clock: float, n: int, closed: bool,
            released: int, sent: deque[int], finished: int, on_finish: Any = None,
            frontend: Frontend | None = None) -> tuple[int, int, int]:
    """Retire the running requests that have all their tokens; a closed loop sends the next ones (to `sent`,
    at this clock, ready once the frontend has taken them), a coupled engine tells on_finish. Returns the counts
    of requests finished and sent, and the blocks freed."""
    m = run.m
    done = run.o[:m] >= -run.epoch  # emitted >= gen
    at = done.nonzero()[0]
    count = len(at)
    if count == 0:  # (none: finish_at was below the first finish, now exact for the decoding requests)
        run.finish_at = -int(np.maximum.reduce(run.o[:m])) if m else math.inf
        return finished, released, 0
    ids = run.ids[:m][done].tolist() if on_finish is not None else None
    if count == 1:  # the common case: one request, dropped by a shift
        i = int(at[0])
        log.finish_s[run.ids[i]] = clock
        freed = run.remove(i)
    elif count <= 8:  # a few: shifts from the back (the same rows as keep() leaves, for less)
        log.finish_s[run.ids[:m][done]] = clock
        freed = 0
        for i in reversed(at.tolist()):
            freed += run.remove(i)
    else:
        log.finish_s[run.ids[:m][done]] = clock
        freed = run.keep(~done)
    run.finish_at = -int(np.maximum.reduce(run.o[:run.m])) if run.m else math.inf  # (exact, or later for a prompt)
    if on_finish is not None:
        on_finish(ids, clock)
    finished += count
    if closed:
        for _ in range(count):
            if released < n:
                log.arrival_s[released] = clock
                log.ready_s[released] = clock if frontend is None else frontend.admit(clock)
                sent.append(released)
                released += 1
    return finished, released, freed


def _decode_run(cost: StepCost, run: _Running, bs: int, free_blocks: int, clock: float,
                limit_s: float | None, grow: float = 1.0) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The pure decode steps the running requests take before one finishes, the blocks run out, or a step
    would start at or after limit_s (an arrival that could be admitted): (steps, their times, the blocks in
    use beyond those held now at each, their start times)."""
    m = run.m
    k = -int(np.maximum.reduce(run.o[:m])) - run.epoch  # min(gen - emitted): the step after which the first finishes
    k = min(k, max(4_000_000 // m, 1))  # very long runs: in pieces
    if k < 2:
        return k, _NONE, _NONE_INT, _NONE
    if grow == 1.0:  # (1 - grow) x the prompts' sum is 0.0 and grow x offsets the offsets: left out
        mean0 = float(run.cached_tokens) / m
    else:
        mean0 = (grow * float(run.cached_tokens) + (1 - grow) * float(run.prompt[:m].sum())) / m  # cached, mean
    if limit_s is not None and math.isfinite(limit_s) and k > 8:  # at most the steps before limit_s:
        # a step takes no less than the first (its cached lengths only grow)
        first = float(cost.decode_steps_s(m, np.array([mean0]))[0])
        k = min(k, max(int((limit_s - clock) / first) + 2, 2)) if first > 0 else k
    times = cost.decode_steps_s(m, mean0 + grow * np.arange(k, dtype=float))
    starts = step_starts(clock, times)
    if limit_s is not None:
        k = max(int(starts.searchsorted(limit_s, side="left")), 1)  # steps starting before the arrival
    # blocks for computed + j tokens, j = 1 .. k, beyond those held (ceil(computed / bs), the row j = 0), in integers:
    # (computed + j + bs - 1) // bs = ceil((computed + j) / bs) for computed + j >= 0, computed = c + epoch
    # shape: c [m] + offsets [k + 1, 1] -> ceilings [k + 1, m] -> sums [k + 1]
    epoch = run.epoch
    sums = np.add.reduce((run.c[:m][None, :] + np.arange(epoch + bs - 1, epoch + k + bs)[:, None]) // bs, axis=1)
    extra = sums[1:] - sums[0]
    k = min(k, int(extra.searchsorted(free_blocks, side="right")))  # steps whose blocks fit
    return k, np.asarray(times[:k], dtype=float), extra[:k], starts[:k]


def step_starts(clock: float, times: np.ndarray) -> np.ndarray:
    """The start times of consecutive steps taking `times` from `clock`: clock + [0, cumsum of the times before]
    (cumsum adds in order, so a prefix's starts are the same; every caller sums a run this one way)."""
    starts = np.empty(len(times))
    starts[0] = 0.0
    np.cumsum(times[:-1], out=starts[1:])
    starts += clock
    return starts


_NONE, _NONE_INT = np.zeros(0), np.zeros(0, dtype=np.int64)  # a run of fewer than two steps: nothing to add


def percentile_summary(values: Any, weights: Any = None) -> dict[str, float]:
    """mean, p50, p90, p95, p99, max of `values` (each counted `weights` times when given) and samples, how many
    values (weighted: the weights' sum); none (every request one token long, no gap between tokens): all 0."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return {**dict.fromkeys(("mean", "p50", "p90", "p95", "p99", "max"), 0.0), "samples": 0}
    if weights is None:
        q = np.percentile(v, [50, 90, 95, 99])
        return {"mean": float(v.mean()), "p50": float(q[0]), "p90": float(q[1]), "p95": float(q[2]),
                "p99": float(q[3]), "max": float(v.max()), "samples": int(v.size)}
    w = np.asarray(weights, dtype=float)
    keep = w > 0
    v, w = v[keep], w[keep]
    if v.size == 0:  # nothing weighted (e.g. no decode steps: every request one token long)
        return {**dict.fromkeys(("mean", "p50", "p90", "p95", "p99", "max"), 0.0), "samples": 0}
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order]
    cdf = np.cumsum(w) / w.sum()
    pick = [float(v[min(int(np.searchsorted(cdf, p / 100, side="left")), len(v) - 1)]) for p in (50, 90, 95, 99)]
    return {"mean": float(np.sum(v * w) / w.sum()), "p50": pick[0], "p90": pick[1], "p95": pick[2],
            "p99": pick[3], "max": float(v.max()), "samples": round(float(w.sum()))}
