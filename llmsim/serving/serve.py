"""serve(): an engine replica under load, request by request and step by step."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.simulate import resolve
from ..cost.workload import CostOptions, check_one
from ..errors import OptionError
from ..hardware.spec import HardwareSpec
from ..models.spec import ModelSpec
from ..timing.execution import ExecutionOptions
from ..timing.roofline import Roofline
from .data_parallel import AttentionDataParallel, rank_options
from .engine_limits import check_prompts_fit, frontend_seconds, scheduler_limits
from .frontend import frontend_queue
from .lockstep import simulate_lockstep
from .results import Percentiles, ServingResult
from .scheduler import percentile_summary, simulate_engine
from .step_cost import Speculation, StepCost
from .token_gaps import inter_token_gaps
from .workload import arrival_times, draw_lengths, lengths_from_csv

DEFAULT_PROMPT_LEN, DEFAULT_GEN_LEN = 512, 128  # serve()'s lengths when neither they nor lengths_csv are given
MAX_RAMP_S = 1e7  # seconds: a closed loop's ramp, at most about 4 months (the clock keeps 1e-9 s resolution)
DEFAULT_NUM_REQUESTS = 1000  # serve()'s requests without lengths_csv (with it: each row once)
# The most requests one run simulates: 10 M requests take minutes and a few GB (arrays of one entry per request);
# a larger count is a typo or a job for sampling, refused with this bound rather than run out of memory.
MAX_REQUESTS = 10_000_000
# The most tokens a speculative method proposes per step: the step cost and its arrays grow with k, and published
# setups propose a handful (vLLM's n-gram and EAGLE examples 2-5; MTP 1-3), so a larger k is refused as a typo.
MAX_SPECULATIVE_TOKENS = 32

_STEP_COSTS: dict[tuple, StepCost] = {}


def _step_cost(model: ModelSpec, hardware: HardwareSpec, cost: CostOptions, execution: ExecutionOptions,
               max_tokens: int, max_seqs: int, max_len: int, speculation: Speculation | None = None,
               stages: int = 1, data_parallel: AttentionDataParallel | None = None) -> StepCost:
    """The step-cost grids, kept for the last few setups (a planner calls serve() many times)."""
    key = (model, hardware.model_dump_json(), cost, execution, max_tokens, max_seqs, max_len, speculation, stages,
           data_parallel)
    if key not in _STEP_COSTS:
        if len(_STEP_COSTS) >= 16:
            _STEP_COSTS.pop(next(iter(_STEP_COSTS)))
        _STEP_COSTS[key] = StepCost(model, Roofline(hardware, execution), cost, max_tokens, max_seqs, max_len,
                                    speculation, stages, data_parallel)
    return _STEP_COSTS[key]


def serve(model: Any, hardware: Any, *, engine: str | None = None, request_rate: float | None = None,
          concurrency: int | None = None, prompt_len: Any = None, gen_len: Any = None, num_requests: int | None = None,
          arrival: str = "poisson", burstiness: float = 1.0, lengths_csv: str | None = None, seed: int = 0,
          max_num_seqs: int | None = None, max_num_batched_tokens: int | None = None,
          gpu_memory_utilization: float | None = None, block_size: int | None = None, ramp_s: float = 0.0,
          shared_prefix_len: int = 0, prefix_groups: int = 1, prefix_caching: bool = True,
          speculative: dict[str, Any] | None = None, mixed_batches: bool | None = None,
          reserve_output: bool | None = None, pipeline_parallel: int = 1, attention_data_parallel: int = 1,
          async_scheduling: bool | None = None, scheduler_recv_interval: int | None = None,
          batch_wait_timeout_iters: int = 0, batch_wait_max_tokens_ratio: float = 0.0,
          attention_dp_balance: bool = False, attention_dp_timeout_iters: int = 50,
          attention_dp_batching_wait_iters: int = 10,
          frontend_s: float | None = None, chunked_prefill: bool | None = None, **options: Any) -> ServingResult:
    """Simulate one engine replica serving `num_requests` requests.

    Load: request_rate (requests per second, open loop, `arrival` "poisson", "constant" or "gamma" with
    `burstiness`) or concurrency (a closed loop of that many clients, as vLLM's benchmark_serving
    --max-concurrency and published serving sweeps measure): exactly one of the two. ramp_s: a closed
    loop's clients send their first requests evenly over ramp_s seconds (0: all at once).
    Lengths: prompt_len and gen_len (default 512 and 128), each an integer, a list, or "uniform:LOW:HIGH" /
    "normal:MEAN:STD" / "lognormal:MEAN:STD"; or lengths_csv, a CSV of (prompt_len, gen_len) pairs (not with
    prompt_len or gen_len). num_requests: default 1000, or each row of lengths_csv once (given: the rows repeated in
    order, or the first num_requests). seed: the draws.
    shared_prefix_len, prefix_groups: every prompt starts with one of prefix_groups shared prefixes (a system
    prompt, a few-shot preamble) of that many tokens, drawn per request; prefix_caching (on, as vLLM V1,
    SGLang's radix cache and TensorRT-LLM's block reuse run by default) computes each prefix once.
    speculative: {"method": "ngram" | "draft" | "mtp", "num_tokens": k, "acceptance_rate": a, "draft_model":
    name (for "draft")}: every decode step verifies k proposals and keeps (1 - a**(k+1)) / (1 - a) tokens.
    Engine knobs (default: the engine's own, llmsim.serving.engine_limits): max_num_seqs,
    max_num_batched_tokens (the chunked-prefill token budget per step; below max_num_seqs it is refused, or lowers
    an unset max_num_seqs to it, as vLLM rules, and the result's assumptions say so), gpu_memory_utilization (SGLang's
    mem_fraction_static, TensorRT-LLM's free_gpu_memory_fraction: each engine sizes its KV pool by its own rule,
    llmsim.serving.engine_limits.scheduler_limits), block_size,
    chunked_prefill (True: a prompt longer than the step's token budget is prefilled in chunks over steps, vLLM
    and SGLang; False: a new prompt runs whole in one step beside the decodes or waits for a step with room,
    TensorRT-LLM's default enable_chunked_prefill False; a prompt longer than max_num_batched_tokens is then
    refused), mixed_batches (True: prefill chunks share a step with decodes, vLLM and TensorRT-LLM; False: prefill
    first, a step prefills while prompts can start, SGLang's default; True with engine="sglang" is its
    --enable-mixed-chunk, the decodes counted in the step's token budget), reserve_output (True: a request starts
    only when the KV blocks of its whole prompt and output fit beside the running requests' remaining ones, so
    none is preempted: TensorRT-LLM's default capacity policy GUARANTEED_NO_EVICT; False: by its prompt's blocks,
    preempting when blocks run out: vLLM, SGLang and TensorRT-LLM's MAX_UTILIZATION), async_scheduling (True, all
    three engines' default: a step is decided while the one before it runs, so a request arriving mid-step joins
    the step after the next; False: the next step), scheduler_recv_interval (SGLang's --scheduler-recv-interval
    N: while requests run, new ones are taken in only after every N decode steps or a step that prefilled;
    default 1), batch_wait_timeout_iters and batch_wait_max_tokens_ratio (TensorRT-LLM's batch waiting, both 0 by
    default: while requests decode, new prompts wait until they and the decodes reach that share of
    max_num_batched_tokens, or for that many steps), attention_dp_balance, attention_dp_timeout_iters and
    attention_dp_batching_wait_iters (TensorRT-LLM's attention_dp_config enable_balance, timeout_iters,
    batching_wait_iters; off, 50 and 10 by default; with attention_data_parallel > 1: while the ranks decode, a new
    prompt waits until every rank holds one or the counter reaches timeout_iters, serving.adp_balance).
    frontend_s: the serving frontend's time per request (HTTP, tokenization, hand-offs, streaming) before the
    engine sees it, one request at a time (requests sent together queue for it: serving.frontend), so part of each
    TTFT and end-to-end latency; default the engine's (vLLM 4 ms, SGLang 6.9 ms, TensorRT-LLM 0:
    llmsim.serving.engine_limits), 0 switches it off.
    pipeline_parallel=p: the layers split into p stages (tensor_parallel GPUs each), micro-batches kept in
    flight across steps as vLLM runs them (StepCost.step_s); each GPU holds 1/p of the weights and KV cache.
    attention_data_parallel=d (MoE models; SGLang --enable-dp-attention with --dp d, TensorRT-LLM
    enable_attention_dp, vLLM --data-parallel-size d): the tensor_parallel GPUs form d ranks of tensor_parallel/d
    GPUs, each running attention and the other non-expert ops on its own requests with its own KV pool, the
    experts spread over all tensor_parallel GPUs (expert_parallel as usual) on the tokens of every rank
    (llmsim.serving.data_parallel). vLLM's -dp d -tp a --enable-expert-parallel is tensor_parallel=a*d,
    expert_parallel=a*d. Every rank is simulated, the ranks in lockstep (llmsim.serving.lockstep): each schedules
    its own requests (round robin), a step ends when the slowest rank's does and the experts run over all the
    ranks' tokens; the per-request table holds every request, the step table sums the ranks.
    options: as simulate() (tensor_parallel, expert_parallel, dtypes, tables, ...).
    """
    if options.get("pipeline_decode") == "lockstep":  # StepCost.step_s: micro-batches always in flight
        raise OptionError(f"pipeline_decode={options['pipeline_decode']!r}: serve() runs pipeline stages with "
                          "micro-batches in flight across steps, as vLLM does (steady); pipeline_decode is "
                          "simulate()'s")
    spec, hw, cost, execution = resolve(model, hardware, engine, **options)
    frontend = frontend_seconds(execution.engine or "vllm", frontend_s)
    stages = check_one("pipeline_parallel", pipeline_parallel, 1)
    if stages > spec.num_layers:
        raise OptionError(f"pipeline_parallel={stages} exceeds the model's {spec.num_layers} layers")
    cost, dp = rank_options(spec, cost, attention_data_parallel)  # cost: one rank's from here on
    if dp is not None and stages > 1:
        raise OptionError("attention_data_parallel > 1 with pipeline_parallel > 1 is not modelled; use one of the two")
    prompts, gens, arrivals, concurrency = make_workload(spec, request_rate, concurrency, prompt_len, gen_len,
                                                         num_requests, arrival, burstiness, lengths_csv, seed, ramp_s)
    longest = int(np.max(prompts + gens - 1))
    groups = prefix_groups_of(prompts, shared_prefix_len, prefix_groups, seed)
    engine_name = execution.engine or "vllm"
    limits = scheduler_limits(spec, hw, cost, engine_name, longest, max_num_seqs, max_num_batched_tokens,
                              gpu_memory_utilization, block_size, mixed_batches, stages, dp,
                              reserve_output=reserve_output, async_scheduling=async_scheduling,
                              recv_interval=scheduler_recv_interval, batch_wait_timeout_iters=batch_wait_timeout_iters,
                              batch_wait_max_tokens_ratio=batch_wait_max_tokens_ratio,
                              attention_dp_balance=attention_dp_balance,
                              attention_dp_timeout_iters=attention_dp_timeout_iters,
                              attention_dp_batching_wait_iters=attention_dp_batching_wait_iters,
                              chunked_prefill=chunked_prefill, draft=_draft_model(speculative))
    check_prompts_fit(limits, int(np.max(prompts)))
    if limits.adp_balance and concurrency is not None and concurrency < limits.adp_balance[0]:
        # a rank without a client never decodes, and TensorRT-LLM releases the prompts at once then
        limits = replace(limits, adp_balance=None, rank_note=" ".join(filter(None, (
            limits.rank_note, f"attention_dp_balance holds nothing: {concurrency} clients leave some of the "
                              f"{limits.adp_balance[0]} ranks idle, so not every rank decodes"))))
    if speculative is not None and stages > 1:
        raise OptionError("speculative decoding with pipeline_parallel > 1 is not modelled; use one of the two")
    speculation = _speculation(speculative, spec, hw, cost, execution, limits, max(longest, 2))
    step_cost = _step_cost(spec, hw, cost, execution, limits.max_num_batched_tokens, limits.max_num_seqs,
                           max(longest, 2), speculation, stages, dp)
    run_gens = gens
    if speculation is not None:  # decode steps a request takes: its first token, then tokens_per_step a step
        run_gens = 1 + np.ceil((gens - 1) / speculation.tokens_per_step).astype(np.int64)
    if not isinstance(prefix_caching, bool):
        raise OptionError(f"prefix_caching={prefix_caching!r} must be True or False")
    if dp is None:
        log, steps = simulate_engine(step_cost, limits, prompts, run_gens, arrivals, concurrency,
                                     prefix_group=groups if prefix_caching else None, prefix_len=shared_prefix_len,
                                     frontend=frontend_queue(frontend))
    else:  # every rank, in lockstep
        log, steps, rank_steps, rank_of = simulate_lockstep(
            step_cost, limits, dp.ranks, prompts, run_gens, arrivals, concurrency,
            prefix_group=groups if prefix_caching else None, prefix_len=shared_prefix_len,
            frontend=frontend_queue(frontend))
    log.gen_len = gens  # the tokens each request produced (with speculation, more than its decode steps)
    note = (f"{prefix_groups} shared prefixes of {shared_prefix_len} tokens; cached whole blocks, the least "
            "recently used evicted when blocks run short"
            if groups is not None and prefix_caching else "no shared prefixes cached (every prompt computed in full)")
    extra = {} if speculation is None else {"speculative decoding": (
        f"{speculation.method}, {speculation.num_tokens} proposals per step at acceptance "
        f"{speculation.acceptance_rate:g}: {speculation.tokens_per_step:.2f} tokens per decode step; the verifying "
        "tokens read the KV cache once; KV blocks grow one token per step")}
    extra["kernel times"] = step_cost.kernel_sources
    if limits.note:
        extra["max_num_seqs"] = limits.note
    if limits.rank_note:
        extra["limits per rank"] = limits.rank_note
    if limits.adp_balance:
        ranks, timeout, batching = limits.adp_balance
        extra["attention dp balance"] = (
            f"TensorRT-LLM's enable_balance over {ranks} ranks: while they decode, a new prompt waits until every "
            f"rank holds one (then {batching} more steps) or {timeout} steps have counted; decided once per joint "
            "step from every rank's state (serving.adp_balance)")
    if stages > 1:
        extra["pipeline"] = (f"{stages} stages of {cost.tensor_parallel} GPU(s), micro-batches kept in flight "
                             "across steps; layers, weights and KV cache split evenly over the stages")
    if dp is None:
        return _result(spec, hw, cost, engine_name, request_rate, concurrency, arrival, limits, log, steps,
                       prefix_note=note, extra_assumptions=extra, frontend_s=frontend,
                       gpus=cost.tensor_parallel * stages, pipeline_parallel=stages)
    extra["attention data parallelism"] = (
        f"{dp.ranks} ranks of tensor_parallel={cost.tensor_parallel}, experts over all {dp.gpus} GPUs "
        f"(expert_parallel={dp.expert_options.expert_parallel}) with an all-gather and a reduce-scatter per MoE "
        f"layer; every rank simulated in lockstep (a step ends with the slowest rank's; the experts run over every "
        f"rank's tokens; serving.lockstep), each with its own queue, limits and KV pool of "
        f"{limits.kv_blocks * limits.block_size:,} tokens; requests round robin"
        + (" (each client keeps its rank)" if concurrency is not None else "")
        + "; steps and KV use shown summed over the ranks")
    return _result(spec, hw, cost, engine_name, request_rate, concurrency, arrival,
                   replace(limits, kv_blocks=limits.kv_blocks * dp.ranks), log, steps,
                   prefix_note=note, extra_assumptions=extra, frontend_s=frontend, gpus=dp.gpus,
                   tensor_parallel=dp.gpus, attention_data_parallel=dp.ranks, token_steps=(rank_steps, rank_of))


def make_workload(spec: ModelSpec, request_rate: Any, concurrency: Any, prompt_len: Any, gen_len: Any,
                  num_requests: Any, arrival: str, burstiness: Any, lengths_csv: Any, seed: Any,
                  ramp_s: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, int | None]:
    """Checked lengths and arrival times (a closed loop's: its clients' first requests) of every request."""
    if (request_rate is None) == (concurrency is None):
        raise OptionError("give exactly one of request_rate (requests per second) and concurrency (clients)")
    _check_load_options(request_rate is not None, arrival, burstiness, ramp_s)
    seed = check_one("seed", seed, 0)
    rng = np.random.default_rng(int(seed))
    if lengths_csv is not None:
        if not isinstance(lengths_csv, (str, Path)):
            raise OptionError(f"lengths_csv={lengths_csv!r} must be a path to a CSV file (a str or pathlib.Path)")
        given = [name for name, v in (("prompt_len", prompt_len), ("gen_len", gen_len)) if v is not None]
        if given:  # the CSV's lengths would silently replace them
            raise OptionError(f"lengths_csv={str(lengths_csv)!r} gives every request's lengths: drop "
                              f"{' and '.join(given)}, or drop lengths_csv")
        prompts, gens = lengths_from_csv(lengths_csv)
        # every row once by default; num_requests more rows repeats them in order, fewer takes the first ones
        count = len(prompts) if num_requests is None else check_one("num_requests", num_requests, 1, MAX_REQUESTS)
        prompts, gens = np.resize(prompts, count), np.resize(gens, count)
    else:
        count = check_one("num_requests", DEFAULT_NUM_REQUESTS if num_requests is None else num_requests, 1,
                          MAX_REQUESTS)
        prompt_len = DEFAULT_PROMPT_LEN if prompt_len is None else prompt_len
        gen_len = DEFAULT_GEN_LEN if gen_len is None else gen_len
        sizes = [np.size(v) for v in (prompt_len, gen_len) if isinstance(v, (list, tuple, np.ndarray))]
        if len(sizes) == 2 and sizes[0] != sizes[1]:  # cycled separately, the pairs would drift apart
            raise OptionError(f"prompt_len and gen_len are lists of {sizes[0]} and {sizes[1]} lengths: give them "
                              "pairwise (equal lengths), or one list and one integer")
        prompts = draw_lengths("prompt_len", prompt_len, count, rng)
        gens = draw_lengths("gen_len", gen_len, count, rng)
    longest = int(np.max(prompts + gens - 1))
    if longest > spec.max_position_embeddings:
        raise OptionError(f"prompt_len + gen_len - 1 = {longest} exceeds the model's context of "
                          f"{spec.max_position_embeddings} tokens (max_position_embeddings)")
    if request_rate is not None:
        return prompts, gens, arrival_times(request_rate, count, arrival, burstiness, rng), None
    concurrency = check_one("concurrency", concurrency, 1)
    if isinstance(ramp_s, bool) or not isinstance(ramp_s, (int, float)) or not 0 <= ramp_s <= MAX_RAMP_S:
        # past it the first requests' send times swallow the steps in float rounding (1e20 s: TTFTs of 0)
        raise OptionError(f"ramp_s={ramp_s!r} must be a number of seconds in 0..{MAX_RAMP_S:g} (about 4 months)")
    return prompts, gens, np.arange(min(concurrency, count)) * (ramp_s / concurrency), concurrency


def _check_load_options(open_loop: bool, arrival: Any, burstiness: Any, ramp_s: Any) -> None:
    """Refuse a load option the chosen loop would silently ignore: arrival and burstiness shape an open loop's
    arrivals (burstiness only gamma's), ramp_s a closed loop's first requests."""
    if open_loop and not (isinstance(ramp_s, (int, float)) and ramp_s == 0):
        raise OptionError(f"ramp_s={ramp_s!r} applies to a closed loop (concurrency); an open loop's requests "
                          f"arrive at request_rate (arrival={arrival!r})")
    if open_loop and arrival != "gamma" and not (isinstance(burstiness, (int, float)) and burstiness == 1):
        raise OptionError(f"burstiness={burstiness!r} applies to arrival='gamma' only, not arrival={arrival!r}")
    if not open_loop and (arrival != "poisson" or not (isinstance(burstiness, (int, float)) and burstiness == 1)):
        raise OptionError(f"arrival={arrival!r} / burstiness={burstiness!r} shape open-loop arrivals "
                          "(request_rate); a closed loop's clients send each request when their previous one ends "
                          "(ramp_s spreads their first ones)")


SPECULATION_METHODS = ("ngram", "draft", "mtp")


def _draft_model(given: Any) -> ModelSpec | None:
    """The draft model of speculative={"method": "draft", "draft_model": ...} (its memory counts before the KV
    pool, engine_limits.scheduler_limits); None otherwise, the rest checked by _speculation."""
    if isinstance(given, dict) and given.get("method") == "draft" and "draft_model" in given:
        from ..models.loading import load_model

        return load_model(given["draft_model"])
    return None


def _speculation(given: Any, spec: ModelSpec, hw: HardwareSpec, cost: CostOptions, execution: ExecutionOptions,
                 limits: Any, max_len: int) -> Speculation | None:
    """The checked speculative-decoding setup (a draft model's step costs on the same GPUs and options)."""
    if given is None:
        return None
    if not isinstance(given, dict):
        raise OptionError("speculative must be a dict like {'method': 'ngram', 'num_tokens': 4, "
                          "'acceptance_rate': 0.7}")
    from ..errors import check_choice
    from ..models.loading import load_model

    unknown = set(given) - {"method", "num_tokens", "acceptance_rate", "draft_model"}
    if unknown:
        raise OptionError(f"speculative: unknown key {sorted(unknown)[0]!r}; allowed: method, num_tokens, "
                          f"acceptance_rate, draft_model")
    method = given.get("method", "ngram")
    check_choice("speculative method", method, SPECULATION_METHODS)
    k = check_one("speculative num_tokens", given.get("num_tokens", 4), 1, MAX_SPECULATIVE_TOKENS)
    a = given.get("acceptance_rate")
    if isinstance(a, bool) or not isinstance(a, (int, float)) or not 0 <= a <= 1:
        raise OptionError(f"speculative acceptance_rate={a!r} must be a number in [0, 1] (the chance each "
                          f"proposed token is accepted)")
    draft = None
    if method == "draft":
        if "draft_model" not in given:
            raise OptionError("speculative method 'draft' needs draft_model (a shipped name or a config)")
        draft_spec = load_model(given["draft_model"])
        if draft_spec.vocab_size != spec.vocab_size:  # the target verifies the draft's token ids: one vocabulary
            raise OptionError(f"speculative draft_model={given['draft_model']!r} has a vocabulary of "
                              f"{draft_spec.vocab_size:,} tokens, the model {spec.vocab_size:,}: a draft model must "
                              "share the target's tokenizer")
        if draft_spec.max_position_embeddings < max_len:
            raise OptionError(f"speculative draft_model={given['draft_model']!r} holds "
                              f"{draft_spec.max_position_embeddings:,} tokens of context; the requests reach "
                              f"{max_len:,}")
        draft = StepCost(draft_spec, Roofline(hw, execution), cost,
                         limits.max_num_batched_tokens, limits.max_num_seqs, max_len)
    elif "draft_model" in given:
        raise OptionError(f"speculative draft_model is for method 'draft', not {method!r}")
    if method == "mtp" and spec.mtp_layers == 0:  # no MTP head to propose with: an answer would be made up
        raise OptionError(f"speculative method 'mtp' needs the model's multi-token-prediction layers; {spec.name} "
                          "states none (num_nextn_predict_layers, mtp_num_hidden_layers or num_mtp_modules in its "
                          "config): use method 'ngram' or 'draft'")
    return Speculation(method=method, num_tokens=int(k), acceptance_rate=float(a), draft=draft,
                       num_layers=spec.num_layers)


def prefix_groups_of(prompts: np.ndarray, shared_prefix_len: Any, prefix_groups: Any, seed: Any) -> np.ndarray | None:
    """The shared prefix each request's prompt starts with (None: no shared prefixes)."""
    length = check_one("shared_prefix_len", shared_prefix_len, 0)
    groups = check_one("prefix_groups", prefix_groups, 1)
    if length == 0:
        if groups > 1:
            raise OptionError(f"prefix_groups={groups} needs shared_prefix_len > 0 (the prefixes' length); without "
                              "it no prompt shares a prefix")
        return None
    if int(prompts.min()) <= length:
        raise OptionError(f"shared_prefix_len={length} must be shorter than every prompt (the shortest has "
                          f"{int(prompts.min())} tokens)")
    rng = np.random.default_rng([int(seed), 1])  # its own stream: the lengths drawn do not change
    return rng.integers(0, groups, len(prompts))


def _result(spec: ModelSpec, hw: HardwareSpec, cost: CostOptions, engine: str, request_rate: float | None,
            concurrency: int | None, arrival: str, limits: Any, log: Any, steps: Any,
            prefix_note: str = "off (every prompt computed in full)", extra_assumptions: dict[str, str] | None = None,
            frontend_s: float = 0.0, instance_of: Any = None, decode_from: int = 0,
            first_in_step: bool = False, token_steps: tuple[dict[str, Any], Any] | None = None,
            **overrides: Any) -> ServingResult:
    """The summary of one simulation; `overrides` replace fields (a disaggregated deployment's). frontend_s: the
    serving frontend's time per request (engine_limits), which the simulation ran as one FIFO server in front of the
    engine (serving.frontend): each TTFT and end-to-end latency runs from when the client sent the request.
    A step log of several instances (an `instance` column: disaggregated serving) has the prefill pool's instances
    first: the batch, KV use and step count are those of the instances from decode_from on (the decode pool's, whose
    `limits` these are), and instance_of says which instance each request decoded on (-1: none); first_in_step: the
    decode instances sample each first token in a step of their own (token_gaps). token_steps: the steps the gaps
    between tokens are read from where they are not `steps` (attention data-parallel ranks in lockstep: each rank's
    rows at the joint steps, and each request's rank)."""
    step = steps if isinstance(steps, dict) else steps.arrays()
    pool = step if "instance" not in step else {k: v[step["instance"] >= decode_from] for k, v in step.items()}
    ttft = log.first_token_s - log.arrival_s
    e2e = log.finish_s - log.arrival_s
    several = log.gen_len > 1
    tpot = np.full(len(ttft), np.nan)
    tpot[several] = (log.finish_s[several] - log.first_token_s[several]) / (log.gen_len[several] - 1)
    start = float(np.min(log.arrival_s))
    duration = float(np.max(log.finish_s)) - start
    busy = float(np.sum(pool["time_s"]))
    requests = {"arrival_s": log.arrival_s, "first_token_s": log.first_token_s, "finish_s": log.finish_s,
                "prompt_len": log.prompt_len, "gen_len": log.gen_len, "ttft_s": ttft, "tpot_s": tpot,
                "e2e_s": e2e, "preemptions": log.preemptions}
    fields = dict(
        model=spec.name, hardware=hw.name, engine=engine, tensor_parallel=cost.tensor_parallel,
        gpus=cost.tensor_parallel, num_requests=len(ttft), request_rate=request_rate, concurrency=concurrency,
        arrival=arrival if request_rate is not None else "closed loop",
        max_num_seqs=limits.max_num_seqs, max_num_batched_tokens=limits.max_num_batched_tokens,
        kv_cache_tokens=limits.kv_blocks * limits.block_size, block_size=limits.block_size,
        ttft_s=Percentiles(**percentile_summary(ttft)), tpot_s=Percentiles(**percentile_summary(tpot[several])),
        itl_s=Percentiles(**percentile_summary(*inter_token_gaps(
            *((token_steps[0], log.first_token_s, log.gen_len, token_steps[1]) if token_steps is not None else
              (step, log.first_token_s, log.gen_len, instance_of)), first_in_step))),
        e2e_s=Percentiles(**percentile_summary(e2e)),
        duration_s=duration, requests_per_s=len(ttft) / duration if duration > 0 else 0.0,
        output_tokens_per_s=float(log.gen_len.sum()) / duration if duration > 0 else 0.0,
        input_tokens_per_s=float(log.prompt_len.sum()) / duration if duration > 0 else 0.0,
        mean_running=float(np.sum(pool["running"] * pool["time_s"]) / busy) if busy > 0 else 0.0,
        peak_kv_fraction=float(np.max(pool["kv_blocks_used"]) / limits.kv_blocks) if len(pool["time_s"]) else 0.0,
        preemptions=int(log.preemptions.sum()), steps=len(pool["time_s"]),
        assumptions={
            "scheduler": ("vLLM V1 continuous batching: running requests first, then waiting ones first come "
                          "first served; " + ("chunked prefill within max_num_batched_tokens" if limits.chunked_prefill
                                               else "no chunked prefill (TensorRT-LLM's default): a new prompt "
                                               "runs whole beside the decodes within max_num_batched_tokens or "
                                               "waits for a step with room")
                          if limits.mixed_batches else
                          "prefill first (SGLang's default, mixed_batches=False): while prompts wait and can start, "
                          "a step prefills them (first come first served, chunked within max_num_batched_tokens) "
                          "and the running requests wait; else a step decodes")
                         + ("; a request starts only when the KV blocks of its whole prompt and output fit beside "
                            "the running requests' (TensorRT-LLM's GUARANTEED_NO_EVICT), so none is preempted"
                            if limits.reserve_output else "; recompute on preemption")
                         + ("; each step decided while the one before it runs (async scheduling): a request arriving "
                            "mid-step joins the step after the next" if limits.async_scheduling else "")
                         + (f"; new requests taken in after every {limits.recv_interval} decode steps "
                            "(scheduler_recv_interval) or a step that prefilled" if limits.recv_interval > 1 else "")
                         + (f"; while requests decode, new prompts wait until they and the decodes reach "
                            f"{limits.batch_wait_tokens:g} tokens or for {limits.batch_wait_iters} steps "
                            "(TensorRT-LLM's batch waiting)" if limits.batch_wait_iters else ""),
            "step time": "one forward pass of the mixed batch from the per-op cost model, with the engine's "
                         "host time per step (engine.step) where it has one; decode attention at the batch's "
                         "mean cached length",
            "prefix caching": prefix_note,
            "frontend": (f"{frontend_s * 1e3:.1f} ms per request (HTTP, tokenization, hand-offs, streaming) before "
                         "the engine sees it, one request at a time (a FIFO server: requests sent together queue; "
                         "frontend_s; llmsim.serving.engine_limits gives each engine's source)" if frontend_s else
                         "none (frontend_s=0, or no public figure for this engine)"
                         + (": a client's next request, sent on its last token, reaches the engine just after the "
                            "decision taken then" if concurrency is not None else "")),
            **(extra_assumptions or {}),
        },
    )
    fields.update(overrides)
    result = ServingResult(**fields)
    result._requests = requests
    result._steps = step
    return result
