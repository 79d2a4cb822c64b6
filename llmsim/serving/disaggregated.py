"""Disaggregated serving: prompts prefilled on one pool of engine instances, decoded on another, the KV cache
sent between them over the interconnect.

Each request is routed round robin (approximation: an even split, no load awareness) to a prefill instance,
which runs it to its first token (an engine with gen_len = 1: continuous batching of prefills, chunked within
its token budget); its KV cache then travels to a decode instance,

    transfer_s = kv_bytes_per_gpu(prompt, TP = min(prefill TP, decode TP)) / per-GPU link bandwidth

(each GPU pair sends its share at once: its share of the KV heads, or the whole MLA latent, which every GPU of
a tensor-parallel group holds, as it holds a whole KV head when there are fewer heads than GPUs; the default
link is the device's intra-node (NVLink) bandwidth when both pools together fit one NVLink domain
(gpus_per_node: 8 on an HGX board, 72 on a GB200 NVL72 rack), else its inter-node bandwidth, the pools then
being on separate nodes; a prefill instance's link sends one request's KV cache at a time, in the order its
prefills finish: link_queue), and joins that instance's
continuous batch already prefilled, decoding its remaining tokens. A closed loop of c clients couples the two
pools through the finish times: the next request is sent the moment any request finishes (benchmark_serving's
--max-concurrency semaphore), so both pools run together in one discrete-event simulation (_coupled_run: the
engine whose clock is earliest steps next, once every request due to it has arrived). A request's first token
reaches its client when the decode instance admits it (after the prefill, the KV transfer and any wait for a
decode slot): disaggregated engines stream the prefill's token from the decode side (SGLang PD, Dynamo route
the request to a decode worker first), except vLLM's, whose decode instance recomputes the last prompt token and
streams the token it samples at the end of that step (RECOMPUTES_FIRST_TOKEN). A decode instance never holds its
decodes back for the arrivals, even where the engine's aggregated default runs prefill-only steps (SGLang's
mixed_batches=False): SGLang's decode server builds the arrived requests' batch without a forward ("Skip the
prefill forward but only populate metadata") and merges it into the running batch to decode
(sgl-project/sglang python/sglang/srt/disaggregation/decode.py, its docstring's request life cycle, steps 3-4).
approximation: that merge's host time is not charged.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import replace
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from ..analysis.evaluation import check_moe_options
from ..analysis.simulate import resolve
from ..cost.workload import CostOptions, check_count
from ..errors import OptionError, check_positive, first_validation_error
from ..timing.execution import FP8_BLOCK_MOE_KERNELS, ExecutionOptions
from .data_parallel import rank_options
from .engine_limits import check_prompts_fit, frontend_seconds, scheduler_limits
from .frontend import Frontend, frontend_queue
from .results import ServingResult
from .scheduler import Inbox, RequestLog, StepLog, coupled_engine, engine_lists, simulate_engine
from .serve import _result, _step_cost, make_workload

# Engines whose decode instance recomputes the last prompt token of a request that arrives prefilled, rather than
# streaming the prefill's sampled token: vLLM's NixlConnector loads the KV cache of all but that token and runs it
# in a full forward of the decode instance, whose sampled token is the client's first (vllm-project/vllm PR #51919,
# 2026-08, and its RFC issue #50913: the baseline "recomput[es] a token the prefill already sampled" with "a full
# forward", about 58 ms p50 of its 197 ms hand-over on its 3P1D L20 setup). Its first token then reaches the client
# at the end of the decode instance's first step with it, and that instance emits all gen_len tokens.
# approximation: the other engines stream the prefill's token once the decode instance admits the request.
RECOMPUTES_FIRST_TOKEN = ("vllm",)

MIN_KV_TRANSFER_BYTES_PER_S = 1e6  # a KV link slower than 1 MB/s is no deployment (1e-300: inf TTFTs, 0 TPOTs)

# An open loop's sends do not depend on the decode pool: the prefill pool runs first, then the decode pool, each
# engine on its own (faster than the coupled run, and the same; the tests run both)
_OPEN_LOOP_IN_SEQUENCE = True


def _coupled_run(pools: list[tuple[Any, Any, int]], prompts: np.ndarray, gens: np.ndarray, transfer_s: np.ndarray,
                 sent_s: np.ndarray, clients: int | None,
                 frontend: Frontend | None = None) -> tuple[RequestLog, dict[str, np.ndarray], np.ndarray]:
    """Both pools in one event-driven run: pools = [(step cost, limits, engines)] for prefill then decode.
    Requests are sent at sent_s (open loop: all of them; closed loop: the first `clients`, then the next one the
    moment any request finishes, as benchmark_serving's --max-concurrency semaphore sends them), go round robin
    to a prefill engine, to their first token there, then after transfer_s round robin in order of arrival to a
    decode engine. The engine whose clock is earliest is resumed next, once every request due to it by then has
    been delivered, so each scheduling decision sees every arrival before it (conservative discrete-event
    simulation: a request only reaches an engine at or after the clock of the engine that sent it). frontend: the
    serving frontend a request passes between its client and the prefill pool (as simulate_engine's). Returns the
    request log, the step log of every engine (an `instance` column: its index in pools' order) and the engine each
    request decoded on (-1: none)."""
    n = len(prompts)
    (pre_step, pre_limits, pre_n), (dec_step, dec_limits, dec_n) = pools
    log = RequestLog(prompts, gens, np.full(n, np.inf))
    decoded_on = np.full(n, -1)
    pre_log = RequestLog(prompts, np.ones(n, np.int64), np.zeros(n))  # the prefill pool: each to its first token
    extra = 1 if dec_limits.recompute_first_token else 0  # the decode pool emits the first token again
    dec_log = RequestLog(prompts, gens + extra, np.zeros(n))  # the decode pool: the rest
    sends: list[tuple[float, int]] = []  # (time, request): sent by a client, not yet at a prefill engine
    readies: list[tuple[float, int]] = []  # (time, request): KV cache arriving at the decode pool
    released = n if clients is None else min(clients, n)
    log.arrival_s[:released] = sent_s[:released]
    first = frontend.admit_all(sent_s[:released]) if frontend is not None else sent_s[:released]
    for i in range(released):
        heapq.heappush(sends, (float(first[i]), i))
    state = {"released": released, "done": 0}

    def finish(ids: list[int], t: float) -> None:
        """Requests done: a closed loop's clients send their next ones."""
        state["done"] += len(ids)
        if clients is not None:
            for _ in ids:
                if state["released"] < n:
                    log.arrival_s[state["released"]] = t
                    heapq.heappush(sends, (t if frontend is None else frontend.admit(t), state["released"]))
                    state["released"] += 1

    link_free = [-math.inf] * pre_n  # when each prefill instance's link has sent what it was given
    prefilled_on = [0] * n  # the prefill instance of each request

    def prefilled(ids: list[int], t: float) -> None:
        one_token = [i for i in ids if gens[i] <= 1]
        for i in ids:
            if gens[i] > 1:  # its KV cache goes once the instance's link has sent the ones before it
                e = prefilled_on[i]
                link_free[e] = max(t, link_free[e]) + float(transfer_s[i])
                heapq.heappush(readies, (link_free[e], i))
        if one_token:
            finish(one_token, t)

    inboxes = [Inbox() for _ in range(pre_n + dec_n)]
    step_logs = [StepLog() for _ in inboxes]
    pre_lists, dec_lists = engine_lists(pre_log, False), engine_lists(dec_log, True)  # shared within a pool
    engines = [coupled_engine(pre_step, pre_limits, pre_log, step_logs[e], inboxes[e], False, prefilled, pre_lists)
               for e in range(pre_n)]
    engines += [coupled_engine(dec_step, dec_limits, dec_log, step_logs[e], inboxes[e], True, finish, dec_lists)
                for e in range(pre_n, pre_n + dec_n)]
    # per engine, as Python lists (a few engines: cheaper than numpy's calls): its clock, whether it runs requests,
    # and when it must next be resumed (inf: idle, nothing sent to it)
    clocks, busy, due = [0.0] * len(engines), [False] * len(engines), [math.inf] * len(engines)
    for e, engine in enumerate(engines):
        clocks[e], busy[e] = next(engine)
    turn = [0, 0]  # round robin over each pool's engines
    while state["done"] < n:
        e = due.index(min(due))  # the first of the earliest
        t_send = sends[0][0] if sends else math.inf
        t_ready = readies[0][0] if readies else math.inf
        if min(t_send, t_ready) <= due[e]:  # deliver what is due first
            pool = 0 if t_send <= t_ready else 1
            t, i = heapq.heappop(sends if pool == 0 else readies)
            target = turn[pool] % (pre_n, dec_n)[pool] + (0, pre_n)[pool]
            turn[pool] += 1
            inboxes[target].put(t, i)
            if pool == 1:
                decoded_on[i] = target
            else:
                prefilled_on[i] = target
            if not busy[target]:
                due[target] = max(clocks[target], t)
            continue
        if not math.isfinite(due[e]):  # pragma: no cover - every request in flight is in a heap or an engine
            raise RuntimeError("the disaggregated simulation stalled")
        mine, due[e] = due[e], math.inf
        horizon = min(min(due), t_send, t_ready)  # the earliest another engine could send it a request
        due[e] = mine
        clocks[e], busy[e] = engines[e].send(horizon)
        due[e] = clocks[e] if busy[e] else max(clocks[e], inboxes[e].next_s())
    for engine in engines:
        engine.close()
    decoding = gens > 1
    log.first_token_s[:] = np.where(decoding, dec_log.first_token_s, pre_log.finish_s)  # streamed from the decode
    log.finish_s[:] = np.where(decoding, dec_log.finish_s, pre_log.finish_s)  # side once it admits the request
    log.preemptions[:] = pre_log.preemptions + dec_log.preemptions
    merged = [dict(steps.arrays(), instance=np.full(len(steps.time_s), e)) for e, steps in enumerate(step_logs)]
    return log, {k: np.concatenate([s[k] for s in merged]) for k in merged[0]}, decoded_on


def link_queue(done_s: np.ndarray, transfer_s: np.ndarray) -> np.ndarray:
    """When each KV cache has arrived, sent over one prefill instance's link in the order the prefills finished
    (done_s; the order given where equal), each taking its transfer_s once the link has sent the ones before it:
    ready_k = max(done_k, ready_(k-1)) + t_k, in that order (as the coupled run adds them).
    approximation: the sending instance's link is the bottleneck; a decode instance receiving from several
    prefill instances at once is not slowed."""
    # shape: done_s [k], transfer_s [k] -> ready [k]
    order = np.argsort(done_s, kind="stable").tolist()
    ready = np.empty(len(order))
    free = -math.inf
    for k in order:  # a recurrence: in order, as the coupled run's link_free
        free = max(float(done_s[k]), free) + float(transfer_s[k])
        ready[k] = free
    return ready


class Pool(BaseModel):
    """replicas engine instances of tensor_parallel GPUs each (expert_parallel of them for experts), each of
    attention_data_parallel ranks (serve(attention_data_parallel=...))."""

    # strict: True, "2" or "0.5" are refused (serve() refuses them), not read as 1, 2 and 0.5
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    replicas: int = 1
    tensor_parallel: int = 1
    expert_parallel: int = 1
    attention_data_parallel: int = 1
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    # this pool's own engine settings where its servers differ (None: the call's): SGLang's prefill servers run
    # DeepEP's normal mode and its decode servers the low-latency one (fp8_block_moe_kernel "deepep-normal" /
    # "deepep-low-latency"); a recipe may set --scheduler-recv-interval on one pool only
    fp8_block_moe_kernel: str | None = None
    scheduler_recv_interval: int | None = None
    # the share of GPU memory this pool's engine takes (vLLM's gpu_memory_utilization, SGLang's mem-fraction-static,
    # TensorRT-LLM's free_gpu_memory_fraction as serve() reads them); None: the call's. Disaggregated deployments
    # often give the context servers less KV cache than the generation servers (their KV holds prompts in flight)
    gpu_memory_utilization: float | None = None

    @field_validator("gpu_memory_utilization", mode="before")
    @classmethod
    def _not_a_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):  # pydantic would read True as 1.0
            raise ValueError("a number in (0, 1], not a bool")
        return value


def _pool(name: str, value: Any) -> Pool:
    if isinstance(value, Pool):
        pool = value
    elif isinstance(value, dict):
        try:
            pool = Pool(**value)
        except (ValidationError, TypeError) as exc:  # pydantic's message is long: name the field and the keys
            raise OptionError(f"{name}: give replicas, tensor_parallel, expert_parallel, attention_data_parallel, "
                              "max_num_seqs, max_num_batched_tokens, scheduler_recv_interval as integers, "
                              "gpu_memory_utilization as a number in (0, 1] and "
                              f"fp8_block_moe_kernel as one of {', '.join(FP8_BLOCK_MOE_KERNELS)} "
                              f"({first_validation_error(exc)})") from None
    else:
        raise OptionError(f"{name} must be a Pool or a dict like {{'replicas': 2, 'tensor_parallel': 4}}")
    for key in ("replicas", "tensor_parallel", "expert_parallel", "attention_data_parallel"):
        check_count(f"{name}.{key}", getattr(pool, key), 1)
    return pool


def serve_disaggregated(model: Any, hardware: Any, prefill: Any, decode: Any, *, engine: str | None = None,
                        request_rate: float | None = None, concurrency: int | None = None, prompt_len: Any = None,
                        gen_len: Any = None, num_requests: int | None = None, arrival: str = "poisson",
                        burstiness: float = 1.0, lengths_csv: str | None = None, seed: int = 0,
                        kv_transfer_bytes_per_s: float | None = None, gpu_memory_utilization: float | None = None,
                        block_size: int | None = None, async_scheduling: bool | None = None,
                        scheduler_recv_interval: int | None = None, frontend_s: float | None = None,
                        chunked_prefill: bool | None = None, **options: Any) -> ServingResult:
    """Prefill on the `prefill` pool, decode on the `decode` pool (each a Pool or a dict of its fields: replicas,
    tensor_parallel, expert_parallel, attention_data_parallel, max_num_seqs, max_num_batched_tokens, and where a
    pool's servers differ from the call's settings its own fp8_block_moe_kernel, scheduler_recv_interval and
    gpu_memory_utilization, e.g.
    SGLang's DeepEP prefill {"fp8_block_moe_kernel": "deepep-normal"} and decode "deepep-low-latency").
    Load, lengths, async_scheduling, scheduler_recv_interval, chunked_prefill (both pools) and frontend_s as
    serve(); options as
    simulate() (dtypes, tables, ...; the pools set the parallelism)."""
    for key in ("tensor_parallel", "expert_parallel", "attention_data_parallel"):
        if key in options:
            raise OptionError(f"{key}: give it per pool (prefill={{'tensor_parallel': ...}}, decode={{...}})")
    pre, dec = _pool("prefill", prefill), _pool("decode", decode)
    per_pool = sorted(set(options) & set(Pool.model_fields))
    if per_pool:  # a pool's own setting given to the call: say where it goes, not the cost options' list
        raise OptionError(f"{per_pool[0]} is a per-pool setting in serve_disaggregated: give it inside the prefill "
                          f"and/or decode dict (e.g. decode={{'{per_pool[0]}': ...}})")
    import inspect

    from .serve import serve

    not_modelled = sorted(set(options) & (set(inspect.signature(serve).parameters)
                                          - set(inspect.signature(serve_disaggregated).parameters)))
    if not_modelled:  # serve()'s own options (ramp_s, speculative, prefix caching...): not in this model
        raise OptionError(f"{not_modelled[0]} is not modelled for disaggregated serving; drop it, or use serve() "
                          "for one aggregated replica")
    spec, hw, base, execution = resolve(model, hardware, engine, **options)
    frontend = frontend_seconds(execution.engine or "vllm", frontend_s)
    prompts, gens, arrivals, clients = make_workload(spec, request_rate, concurrency, prompt_len, gen_len,
                                                     num_requests, arrival, burstiness, lengths_csv, seed, 0.0)
    engine_name = execution.engine or "vllm"
    gpus = pre.replicas * pre.tensor_parallel + dec.replicas * dec.tensor_parallel
    if kv_transfer_bytes_per_s is None:
        per_node = hw.interconnect_value("gpus_per_node") if "gpus_per_node" in hw.interconnect else 1
        one_node = gpus <= per_node
        link = hw.interconnect_value("intra_node_bandwidth_bytes_per_s" if one_node
                                     else "inter_node_bandwidth_bytes_per_s")
        link_name = (f"NVLink: {gpus} GPUs fit one node of {per_node:g}" if one_node
                     else f"the inter-node link: {gpus} GPUs exceed one node of {per_node:g}")
    else:
        link = check_positive("kv_transfer_bytes_per_s", kv_transfer_bytes_per_s, "byte/s")
        if link < MIN_KV_TRANSFER_BYTES_PER_S:  # slower, a transfer's seconds swallow the steps in float rounding
            raise OptionError(f"kv_transfer_bytes_per_s={kv_transfer_bytes_per_s!r} must be at least "
                              f"{MIN_KV_TRANSFER_BYTES_PER_S:g} byte/s (1 MB/s)")
        link_name = "kv_transfer_bytes_per_s as given"

    def engine_of(pool: Pool, name: str, longest: int) -> tuple[Any, Any, CostOptions, int]:
        """(step cost, limits, cost options, engines): an attention data-parallel instance is `ranks` engines
        of one rank each (approximation: ranks symmetric, serving.data_parallel)."""
        cost = CostOptions.make(**{**base.model_dump(), "tensor_parallel": pool.tensor_parallel,
                                   "expert_parallel": pool.expert_parallel})
        if pool.fp8_block_moe_kernel is not None:  # as resolve() checks the call's own
            try:
                check_moe_options(spec, {"fp8_block_moe_kernel": pool.fp8_block_moe_kernel})
            except OptionError as exc:
                raise OptionError(f"{name}: {exc}") from None
        try:
            cost, dp = rank_options(spec, cost, pool.attention_data_parallel)
            pool_execution = execution if pool.fp8_block_moe_kernel is None else ExecutionOptions.make(
                **{**execution.model_dump(), "fp8_block_moe_kernel": pool.fp8_block_moe_kernel})
        except OptionError as exc:
            raise OptionError(f"{name}: {exc}") from None
        recv = scheduler_recv_interval if pool.scheduler_recv_interval is None else pool.scheduler_recv_interval
        memory = gpu_memory_utilization if pool.gpu_memory_utilization is None else pool.gpu_memory_utilization
        try:
            limits = scheduler_limits(spec, hw, cost, engine_name, longest, pool.max_num_seqs,
                                      pool.max_num_batched_tokens, memory, block_size,
                                      data_parallel=dp, async_scheduling=async_scheduling,
                                      recv_interval=recv, chunked_prefill=chunked_prefill)
        except OptionError as exc:  # which pool (a KV cache too small for the requests is one pool's)
            raise OptionError(f"{name} pool: {exc}") from None
        step = _step_cost(spec, hw, cost, pool_execution, limits.max_num_batched_tokens, limits.max_num_seqs,
                          max(longest, 2), data_parallel=dp)
        return step, limits, cost, pool.replicas * pool.attention_data_parallel

    pre_step, pre_limits, pre_cost, pre_engines = engine_of(pre, "prefill", int(prompts.max()))
    check_prompts_fit(pre_limits, int(prompts.max()), "prefill pool: ")
    recompute = engine_name in RECOMPUTES_FIRST_TOKEN
    dec_step, dec_limits, dec_cost, dec_engines = engine_of(dec, "decode", int(np.max(prompts + gens - 1 + recompute)))
    if recompute:
        dec_limits = replace(dec_limits, recompute_first_token=True)
    if not dec_limits.mixed_batches:  # SGLang's decode server: prefilled arrivals join the running decodes
        dec_limits = replace(dec_limits, mixed_batches=True)
    _, _, kv_dtype = base.resolved_dtypes(spec.dtype)
    senders = min(pre_cost.tensor_parallel, dec_cost.tensor_parallel)  # GPUs of a (rank's) attention group
    # [requests] the KV bytes one GPU of the narrower pool sends or receives: its heads' share, or the whole
    # MLA latent (and a KV head shared by several GPUs) that every GPU of the group holds
    kv_bytes_per_gpu = np.asarray(spec.kv_cache_bytes(batch_size=1, seq_len=prompts, kv_dtype=kv_dtype,
                                                      tensor_parallel=senders), dtype=float)
    transfer_s = kv_bytes_per_gpu / link  # [requests]: every GPU pair sends its share at once

    def run(arrival_s: np.ndarray) -> tuple[RequestLog, dict[str, np.ndarray], np.ndarray]:
        """The deployment with request i sent at arrival_s[i] (requests 0 .. len(arrival_s) - 1), as
        _coupled_run returns it."""
        n = len(arrival_s)
        prompts_n, gens_n = prompts[:n], gens[:n]
        log = RequestLog(prompts_n, gens_n, arrival_s.copy())
        decoded_on = np.full(n, -1)
        step_logs: list[dict[str, np.ndarray]] = []
        by_arrival = np.argsort(arrival_s, kind="stable")
        queue = frontend_queue(frontend)
        at_engine = np.empty(n)  # when each request is through the frontend
        at_engine[by_arrival] = queue.admit_all(arrival_s[by_arrival]) if queue else arrival_s[by_arrival]
        ready = np.empty(n)  # when each request's KV cache is at the decode pool
        for i in range(pre_engines):  # prefill: every request to its first token, round robin in arrival order
            ids = by_arrival[i::pre_engines]
            if len(ids):
                part, steps = simulate_engine(pre_step, pre_limits, prompts_n[ids], np.ones(len(ids), np.int64),
                                              at_engine[ids], None)
                log.first_token_s[ids] = part.finish_s
                log.preemptions[ids] += part.preemptions
                step_logs.append(dict(steps.arrays(), instance=np.full(len(steps.time_s), i)))
                sending = ids[(gens_n[ids] > 1)]  # the instance's link sends their KV caches one after another
                ready[sending] = link_queue(part.finish_s[gens_n[ids] > 1], transfer_s[sending])
        log.finish_s[:] = log.first_token_s  # one-token requests end at their first token
        decoding = np.flatnonzero(gens_n > 1)
        decoding = decoding[np.argsort(ready[decoding], kind="stable")]
        for i in range(dec_engines):  # decode: the rest of the tokens, arriving prefilled
            ids = decoding[i::dec_engines]
            if len(ids):
                part, steps = simulate_engine(dec_step, dec_limits, prompts_n[ids], gens_n[ids] + recompute,
                                              ready[ids], None, prefilled=True)
                log.first_token_s[ids] = part.first_token_s  # streamed once the decode instance admits it (or ends
                # its first step with it: RECOMPUTES_FIRST_TOKEN)
                log.finish_s[ids] = part.finish_s
                log.preemptions[ids] += part.preemptions
                decoded_on[ids] = pre_engines + i
                step_logs.append(dict(steps.arrays(), instance=np.full(len(steps.time_s), pre_engines + i)))
        merged = {k: np.concatenate([s[k] for s in step_logs]) for k in step_logs[0]}
        return log, merged, decoded_on

    if clients is None and _OPEN_LOOP_IN_SEQUENCE:
        log, steps, decoded_on = run(arrivals)
    else:
        log, steps, decoded_on = _coupled_run(
            [(pre_step, pre_limits, pre_engines), (dec_step, dec_limits, dec_engines)], prompts, gens, transfer_s,
            arrivals, clients, frontend_queue(frontend))
        request_rate = None
    shape = (f"prefill {pre.replicas} x TP{pre.tensor_parallel}{_ranks(pre)}, decode {dec.replicas} x "
             f"TP{dec.tensor_parallel}{_ranks(dec)}")
    return _result(spec, hw, dec_cost, engine_name, request_rate, clients, arrival, dec_limits, log, steps,
                   frontend_s=frontend, instance_of=decoded_on, decode_from=pre_engines,
                   first_in_step=recompute, mode="disaggregated", pools=shape, gpus=gpus,
                   tensor_parallel=dec.tensor_parallel,
                   assumptions={
                       "pools": f"{shape}; requests routed round robin"
                                + (" over the attention data-parallel ranks (each an engine: ranks symmetric)"
                                   if pre_engines > pre.replicas or dec_engines > dec.replicas else ""),
                       "KV transfer": f"{float(transfer_s.mean()) * 1e3:.2f} ms mean per request: each of "
                                     f"{senders} GPU pairs sends its share at {link / 1e9:.3g} GB/s "
                                     f"({link_name}); a prefill instance sends one request's at a time, in the "
                                     "order its prefills finish",
                       **{f"{name} kernel times": step.kernel_sources for name, step in (("prefill", pre_step),
                                                                                         ("decode", dec_step))},
                       "first token": ("the decode instance recomputes the last prompt token: the first token "
                                       "reaches the client at the end of its first step with the request"
                                       if recompute else "streamed once the decode instance admits the request"),
                       "closed loop": ("the next request sent the moment any request finishes, both pools "
                                       "simulated together, event by event")
                       if clients is not None else "not used",
                       **{f"{name} {key}": f"{getattr(pool, key)} (this pool's own)"
                          for name, pool in (("prefill", pre), ("decode", dec))
                          for key in ("fp8_block_moe_kernel", "scheduler_recv_interval", "gpu_memory_utilization")
                          if getattr(pool, key) is not None},
                       **{f"{name} max_num_seqs": limits.note for name, limits in (("prefill", pre_limits),
                                                                                   ("decode", dec_limits))
                          if limits.note},
                       **{f"{name} limits per rank": limits.rank_note for name, limits in (("prefill", pre_limits),
                                                                                         ("decode", dec_limits))
                          if limits.rank_note},
                   })


def _ranks(pool: Pool) -> str:
    ranks = pool.attention_data_parallel
    return f" ({ranks} attention data-parallel ranks)" if ranks > 1 else ""
