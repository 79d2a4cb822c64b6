"""Each engine's scheduling defaults and the KV cache it can hold, from its own documented defaults.

- vLLM (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults, OpenAI server context): on a GPU with at
  least 70 GiB that is not an A100, max_num_batched_tokens 8192 and max_num_seqs 1024; otherwise 2048 and
  256. gpu_memory_utilization 0.9, block_size 16 (vllm/config/cache.py).
- SGLang (python/sglang/srt/server_args.py, ServerArgs._handle_gpu_memory_settings): by GPU memory (MiB, as
  torch reports it) chunked_prefill_size 2048 below 35 GiB, 4096 below 60 GiB, 8192 below 160 GiB, 16384
  above; cuda_graph_max_bs 8 below 20 GiB, then (tensor_parallel < 4 / >= 4) 24/80 below 35 GiB, 32/160
  below 60 GiB, 256/512 below 160 GiB, 512 above; mem_fraction_static = (memory - reserved) / memory with
  reserved = 512 + 1.5 max(chunk, 2048) + 2 cuda_graph_max_bs + 1024 tp x pp / 8 MiB, at least 10 GiB on
  GPUs above 60 GiB (H100 TP1: 0.836). page_size 1; enable_mixed_chunk False: a step prefills new requests
  (decodes wait) while any can start, else decodes.
  approximation: max_running_requests, which SGLang derives from its token pool, is taken as vLLM's 1024.
  With attention data parallelism over d ranks SGLang divides its chunked prefill size (and a given
  max_running_requests) by d: each rank schedules its share (_sglang_rank_share).
- TensorRT-LLM (tensorrt_llm/llmapi: BuildConfig max_batch_size 2048, max_num_tokens 8192;
  KvCacheConfig free_gpu_memory_fraction 0.9 of the memory left free, tokens_per_block 32; SchedulerConfig
  capacity_scheduler_policy GUARANTEED_NO_EVICT, "Useful Runtime Options" in its performance tuning guide: a
  request starts only when the blocks of its prompt and maximum output fit, and none is paused;
  enable_chunked_prefill False, BaseLlmArgs in tensorrt_llm/llmapi/llm_args.py: a prompt runs whole in one step
  beside the decodes, within max_num_tokens, or waits, as "Tuning Max Batch Size and Max Num Tokens" in its
  performance tuning guide draws the scheduler; a prompt longer than max_num_tokens is refused).
Each of the three decides a step while the one before it runs (async_scheduling): vLLM's async scheduling,
on by default since vllm-project/vllm PR #27614 (its issue #27679, "Async Scheduling Plan"); SGLang's overlap
scheduler (on by default since v0.4: lmsys.org blog 2024-12-04; `--disable-overlap-schedule` turns it off);
TensorRT-LLM's overlap scheduler (PyTorch backend, `disable_overlap_scheduler` False by default). A request
that arrives while a step runs is then scheduled into the step after the next one. SGLang takes new requests
in before every step by default (`--scheduler-recv-interval 1`); scheduler_recv_interval=N makes it do so only
after every N decode steps and after any step that prefilled, as its SchedulerRecvSkipper counts
(sglang/srt/managers/scheduler_recv_skipper.py: decode weight 1, any other forward mode 1000).
TensorRT-LLM's batch waiting (batch_wait_timeout_iters, batch_wait_max_tokens_ratio) is off by default, as there;
so is its attention data-parallel balance (attention_dp_balance, serving.adp_balance).
The serving frontend (frontend_s): what a request spends outside the engine's steps before its first token reaches
the client (HTTP, tokenization, the hand-offs between the API server and the engine, detokenization, streaming),
spent before the engine sees it in a queue one request at a time (serving.frontend), so part of its TTFT and
end-to-end latency. vLLM 4 ms: tenstorrent/tt-inference-server issue #190 (2025-05,
Llama-3.3-70B, 32 clients of 128-token prompts): vLLM offline -> its OpenAI server, TTFT 231 -> 235 ms, "from HTTP
server + ZMQ latency". SGLang 6.9 ms: tenstorrent/tt-inference-server issue #3560 (2026-05, SGLang over a CPU mock
whose forward pass busy-waits 2.632 ms, one client of 128-token prompts through /v1/chat/completions): median TTFT
9.54 ms, 6.9 ms beyond the one forward pass. TensorRT-LLM: no public figure, 0.
approximation: a fixed time per request, whatever its prompt's length, all of it before the engine (the streaming
of the first token back included); the client's next request in a closed loop is sent when the engine finishes
the last one.
Explicit arguments win over these.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..analysis.memory import peak_activation_bytes, weights_bytes, workspace_bytes
from ..analysis.text import device_word
from ..cost.workload import CostOptions, check_count, check_one
from ..errors import AssumptionWarning, OptionError
from ..hardware.spec import HardwareSpec
from ..models.spec import ModelSpec
from .scheduler import SchedulerLimits

_GIB = 1024**3


# each engine's frontend time per request and where it comes from (module docstring); other engines none
FRONTEND: dict[str, tuple[float, str]] = {
    "vllm": (4e-3, "tenstorrent/tt-inference-server issue #190: vLLM offline -> its OpenAI server, TTFT +4 ms"),
    "sglang": (6.9e-3, "tenstorrent/tt-inference-server issue #3560: median TTFT 9.54 ms over a 2.632 ms mock "
                       "forward pass"),
    "trtllm": (0.0, "no public figure"),
}


def frontend_seconds(engine: str, frontend_s: float | None) -> float:
    """The serving frontend's time per request: `frontend_s` as given (0 or positive), else the engine's."""
    if frontend_s is None:
        return FRONTEND.get(engine, (0.0, ""))[0]
    from ..errors import HOST_TIME_LIMIT_S, check_off_or_positive

    return check_off_or_positive("frontend_s", frontend_s, "seconds (or 0)", HOST_TIME_LIMIT_S)


def engine_defaults(engine: str, hardware: HardwareSpec, tensor_parallel: int = 1,
                    pipeline_parallel: int = 1) -> dict[str, Any]:
    """max_num_seqs, max_num_batched_tokens, gpu_memory_utilization and block_size of `engine` on `hardware`
    (one GPU of a tensor_parallel x pipeline_parallel replica)."""
    memory = hardware.memory_capacity_bytes
    if engine == "sglang":
        return _sglang_defaults(memory / 2**20, tensor_parallel, pipeline_parallel)
    if engine == "trtllm":
        return {"max_num_seqs": 2048, "max_num_batched_tokens": 8192, "gpu_memory_utilization": 0.9,
                "block_size": 32, "mixed_batches": True, "reserve_output": True, "async_scheduling": True,
                "chunked_prefill": False}
    large = memory >= 70 * _GIB and "a100" not in hardware.name.lower()
    return {"max_num_seqs": 1024 if large else 256, "max_num_batched_tokens": 8192 if large else 2048,
            "gpu_memory_utilization": 0.9, "block_size": 16, "mixed_batches": True, "reserve_output": False,
            "async_scheduling": engine == "vllm", "chunked_prefill": True}


def _sglang_defaults(memory_mib: float, tp: int, pp: int) -> dict[str, Any]:
    """SGLang's ServerArgs._handle_gpu_memory_settings (module docstring), without attention data parallelism,
    piecewise CUDA graphs or speculative decoding."""
    gib = 1024  # MiB
    if memory_mib < 20 * gib:
        tokens, graph_bs = 2048, 8
    elif memory_mib < 35 * gib:
        tokens, graph_bs = 2048, 24 if tp < 4 else 80
    elif memory_mib < 60 * gib:
        tokens, graph_bs = 4096, 32 if tp < 4 else 160
    elif memory_mib < 160 * gib:
        tokens, graph_bs = 8192, 256 if tp < 4 else 512
    else:
        tokens, graph_bs = 16384, 512
    # reserved[MiB] = metadata + prefill activations + CUDA graph buffers + a parallel-size allowance
    reserved = 512 + max(tokens, 2048) * 1.5 + graph_bs * 2 + tp * pp / 8 * 1024
    if memory_mib > 60 * gib:
        reserved = max(reserved, 10 * gib)
    return {"max_num_seqs": 1024, "max_num_batched_tokens": tokens,
            "gpu_memory_utilization": round((memory_mib - reserved) / memory_mib, 3), "block_size": 1,
            "mixed_batches": False, "reserve_output": False, "async_scheduling": True, "chunked_prefill": True}


def scheduler_limits(model: ModelSpec, hardware: HardwareSpec, options: CostOptions, engine: str,
                     longest_request: int, max_num_seqs: Any = None, max_num_batched_tokens: Any = None,
                     gpu_memory_utilization: Any = None, block_size: Any = None,
                     mixed_batches: Any = None, pipeline_parallel: int = 1,
                     data_parallel: Any = None, reserve_output: Any = None,
                     async_scheduling: Any = None, recv_interval: Any = None,
                     batch_wait_timeout_iters: Any = 0, batch_wait_max_tokens_ratio: Any = 0.0,
                     attention_dp_balance: Any = False, attention_dp_timeout_iters: Any = 50,
                     attention_dp_batching_wait_iters: Any = 10, chunked_prefill: Any = None,
                     draft: ModelSpec | None = None) -> SchedulerLimits:
    """The engine's limits with the caller's overrides, and the KV blocks left on one GPU after weights,
    the activations of a full token budget and the workspace, as each engine sizes its pool:

        vLLM:          kv_blocks = floor((utilization x capacity - weights - activations - workspace) / block_bytes)
        SGLang:        kv_blocks = floor((mem_fraction_static x capacity - weights) / block_bytes)
        TensorRT-LLM:  kv_blocks = floor(free_fraction x (capacity - weights - activations - workspace) / block_bytes)

    (block_bytes = block x KV bytes per token; SGLang's fraction already leaves out its activations and CUDA
    graphs, TensorRT-LLM's KvCacheConfig.free_gpu_memory_fraction is of the memory free after loading the
    weights and a profiling forward pass.)

    approximation: every layer keeps a full KV cache (sliding-window layers are not trimmed), as vLLM
    allocates without its hybrid allocator. Linear-attention and Mamba layers' fixed-size states come from
    the same pool, state_blocks blocks per running request (taken when it starts, freed when it finishes
    or is preempted), as vLLM V1's hybrid KV cache manager gives each request one state page.
    draft: a speculative-decoding draft model on the same GPUs (serve(speculative={"method": "draft", ...})): its
    weights, at the same tensor parallelism and dtypes, take memory before the pool, and each block holds its KV
    too (vLLM's draft model shares the target's KV cache manager: one block table, both models' layers).
    data_parallel: an AttentionDataParallel (serving.data_parallel): `options` are then one rank's (its KV
    pool, its non-expert weights at tp = GPUs / ranks) and the routed experts are spread over every GPU.
    """
    gpus = options.tensor_parallel if data_parallel is None else data_parallel.gpus
    defaults = engine_defaults(engine, hardware, gpus, pipeline_parallel)
    seqs = check_count("max_num_seqs", defaults["max_num_seqs"] if max_num_seqs is None else max_num_seqs, 1)
    tokens = check_count("max_num_batched_tokens", defaults["max_num_batched_tokens"]
                         if max_num_batched_tokens is None else max_num_batched_tokens, 1)
    block = check_count("block_size", defaults["block_size"] if block_size is None else block_size, 1)
    util = defaults["gpu_memory_utilization"] if gpu_memory_utilization is None else gpu_memory_utilization
    if isinstance(util, bool) or not isinstance(util, (int, float)) or not 0 < util <= 1:
        raise OptionError(f"gpu_memory_utilization={util!r} must be a number in (0, 1]")
    if mixed_batches is not None and not isinstance(mixed_batches, bool):
        raise OptionError(f"mixed_batches={mixed_batches!r} must be True (prefill chunks ride with decodes) or False "
                          f"(prefill first, as SGLang's default)")
    if chunked_prefill is not None and not isinstance(chunked_prefill, bool):
        raise OptionError(f"chunked_prefill={chunked_prefill!r} must be True (a prompt longer than the step's token "
                          f"budget is prefilled in chunks over steps) or False (whole, TensorRT-LLM's default)")
    if async_scheduling is not None and not isinstance(async_scheduling, bool):
        raise OptionError(f"async_scheduling={async_scheduling!r} must be True (a step is decided while the one before "
                          f"it runs: vLLM's async scheduling, SGLang's and TensorRT-LLM's overlap schedulers) or False")
    recv = 1 if recv_interval is None else check_count("scheduler_recv_interval", recv_interval, 1)
    if recv > 1 and engine != "sglang":
        raise OptionError(f"scheduler_recv_interval={recv} is SGLang's --scheduler-recv-interval; engine {engine!r} "
                          "takes requests in before every step (use engine='sglang' or leave it 1)")
    wait_iters, wait_tokens = _batch_wait(engine, batch_wait_timeout_iters, batch_wait_max_tokens_ratio, tokens,
                                          data_parallel is not None)
    balance = _adp_balance(engine, data_parallel, attention_dp_balance, attention_dp_timeout_iters,
                           attention_dp_batching_wait_iters)
    if reserve_output is not None and not isinstance(reserve_output, bool):
        raise OptionError(f"reserve_output={reserve_output!r} must be True (a request starts when its whole prompt "
                          f"and output fit, TensorRT-LLM's GUARANTEED_NO_EVICT) or False (when its prompt fits)")
    seqs, tokens, split = _sglang_rank_share(engine, data_parallel, seqs, tokens, max_num_seqs is not None)
    seqs, note = _seqs_within_token_budget(engine, seqs, tokens, max_num_seqs is not None)
    _, _, kv_dtype = options.resolved_dtypes(model.dtype)
    tp = options.tensor_parallel
    # one GPU of a pipeline stage holds its layers (analysis.memory.stage_weights_bytes: vLLM's split, the
    # embedding on the first stage, the LM head on the last): their weights, KV cache and states; the engine's
    # pool is the fewest blocks any stage's GPU holds (vLLM takes the minimum over its workers)
    # (approximation: every layer caches alike)
    p = pipeline_parallel
    layers = len(model.layer_pattern)
    if data_parallel is not None:
        from .data_parallel import weights_bytes_per_gpu

        stages = [(weights_bytes_per_gpu(model, options, data_parallel) / p, layers / p)]
    elif p > 1:
        from ..analysis.memory import stage_weights_bytes

        stages = [(w, float(n)) for w, n in stage_weights_bytes(model, options, p)]
    else:
        stages = [(weights_bytes(model, options), float(layers))]
    transient = float(peak_activation_bytes(model, options, 1, tokens)) + workspace_bytes(hardware)
    capacity = hardware.memory_capacity_bytes
    all_state = float(model.recurrent_state_bytes(1, kv_dtype=kv_dtype, tensor_parallel=tp))  # per sequence
    all_token = float(model.kv_cache_bytes(batch_size=1, seq_len=1, kv_dtype=kv_dtype, tensor_parallel=tp))
    pools = []
    for stage_weights, stage_layers in stages:
        share = stage_layers / layers
        state, per_token, weights = all_state * share, (all_token - all_state) * share, stage_weights
        if draft is not None:  # the draft's weights and, per token, its KV beside the target's
            weights += weights_bytes(draft, options) / p
            per_token += float(draft.kv_cache_bytes(batch_size=1, seq_len=1, kv_dtype=kv_dtype,
                                                    tensor_parallel=tp)) / p
        if engine == "sglang":  # mem_fraction_static = (weights + KV pool) / capacity: the reserved rest holds the
            free = util * capacity - weights  # rest
        elif engine == "trtllm":  # free_gpu_memory_fraction of what a profiling pass leaves after the weights
            free = util * (capacity - weights - transient)
        else:  # vLLM: gpu_memory_utilization of the capacity for weights, peak activations and the KV cache
            free = util * capacity - weights - transient
        block_bytes = block * per_token if per_token > 0 else state  # a state-only model: one state per block
        blocks = int(free // block_bytes) if block_bytes > 0 else 1 << 40
        pools.append((blocks, block_bytes, state, per_token, weights))
    blocks, block_bytes, state, per_token, weights = min(pools, key=lambda pool: pool[0])
    state_blocks = -(-int(state) // int(block_bytes)) if state and block_bytes else 0  # per running request
    need = -(-longest_request // block) * (per_token > 0) + state_blocks
    if blocks < need and weights >= capacity:  # no memory share can help: say what can
        raise OptionError(
            f"the weights alone ({weights / _GIB:.1f} GiB per {device_word(hardware.device_type)}"
            f"{', the draft model' + chr(39) + 's included' if draft is not None else ''}) exceed its "
            f"{capacity / _GIB:.1f} GiB of memory: raise tensor_parallel (or pipeline_parallel), or use a larger "
            f"{device_word(hardware.device_type)}")
    if blocks < need:
        holds = (f"{max(blocks, 0) * block} tokens" if per_token > 0 else f"{max(blocks, 0)} sequence states")
        with_state = f" plus its fixed-size state ({state / _GIB:.2f} GiB)" if state else ""
        # the activations of a pass of max_num_batched_tokens tokens come off the KV cache too (SGLang's reserve
        # aside); where they, not the weights, leave it short, say so, naming the budget and the block size
        costly = engine != "sglang" and transient > 0.1 * capacity
        activations = (f" and a pass of max_num_batched_tokens={tokens} tokens ({transient / _GIB:.1f} GiB of "
                       f"activations and workspace)" if costly else "")
        and_budget = ", or lower max_num_batched_tokens" if costly else ""
        if block_bytes > 0.1 * capacity:
            and_budget += f", or lower block_size={block}"
        raise OptionError(
            f"the KV cache holds {holds} per {device_word(hardware.device_type)} after the weights "
            f"({weights / _GIB:.1f} GiB{', the draft model' + chr(39) + 's included' if draft is not None else ''})"
            f"{activations} at gpu_memory_utilization={util}, fewer than the longest request's "
            f"{longest_request} tokens"
            f"{with_state}: raise tensor_parallel, gpu_memory_utilization or lower the lengths{and_budget}")
    return SchedulerLimits(max_num_seqs=int(seqs), max_num_batched_tokens=int(tokens), kv_blocks=blocks,
                           block_size=int(block), state_blocks=state_blocks, note=note, rank_note=split,
                           mixed_batches=defaults["mixed_batches"] if mixed_batches is None else mixed_batches,
                           reserve_output=defaults["reserve_output"] if reserve_output is None else reserve_output,
                           async_scheduling=defaults["async_scheduling"] if async_scheduling is None
                           else async_scheduling,
                           chunked_prefill=defaults["chunked_prefill"] if chunked_prefill is None else chunked_prefill,
                           recv_interval=recv, batch_wait_iters=wait_iters,
                           batch_wait_tokens=wait_tokens, adp_balance=balance)


def _adp_balance(engine: str, data_parallel: Any, enable: Any, timeout_iters: Any,
                 batching_wait_iters: Any) -> tuple[int, int, int] | None:
    """TensorRT-LLM's attention_dp_config (enable_balance, timeout_iters, batching_wait_iters; defaults False, 50,
    10, tensorrt_llm/llmapi/llm_args.py AttentionDpConfig) as SchedulerLimits.adp_balance: (ranks, timeout_iters,
    batching_wait_iters), or None when off; refused for another engine or without attention data parallelism."""
    if not isinstance(enable, bool):
        raise OptionError(f"attention_dp_balance={enable!r} must be True (TensorRT-LLM's attention_dp_config "
                          "enable_balance) or False")
    timeout = check_one("attention_dp_timeout_iters", timeout_iters, 0)
    batching = check_one("attention_dp_batching_wait_iters", batching_wait_iters, 0)
    if not enable:
        if (timeout, batching) != (50, 10):  # TensorRT-LLM's defaults: a changed counter would be ignored
            raise OptionError(f"attention_dp_timeout_iters={timeout} / attention_dp_batching_wait_iters={batching} "
                              "tune TensorRT-LLM's attention data-parallel balance: give attention_dp_balance=True "
                              "too, or leave them at 50 / 10")
        return None
    if engine != "trtllm":
        raise OptionError(f"attention_dp_balance is TensorRT-LLM's attention_dp_config enable_balance; engine "
                          f"{engine!r} has none (use engine='trtllm' or leave it False)")
    if data_parallel is None:
        raise OptionError("attention_dp_balance balances prompts over attention data-parallel ranks: give "
                          "attention_data_parallel > 1, or leave it False")
    return data_parallel.ranks, timeout, batching


def _batch_wait(engine: str, iters: Any, ratio: Any, tokens: int, data_parallel: bool) -> tuple[int, float]:
    """TensorRT-LLM's batch waiting (batch_wait_timeout_iters, batch_wait_max_tokens_ratio; both 0 by default) as
    (steps, tokens): on when both are positive, as PyExecutor._waiting_requests stops waiting at once when either
    is 0; refused for another engine and under attention data parallelism (PyExecutor._schedule applies it only
    without)."""
    iters = check_one("batch_wait_timeout_iters", iters, 0)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 <= ratio <= 1:
        raise OptionError(f"batch_wait_max_tokens_ratio={ratio!r} must be a number in [0, 1] (a share of "
                          "max_num_batched_tokens)")
    if (iters or ratio) and engine != "trtllm":  # either alone is still TensorRT-LLM's option
        raise OptionError(f"batch_wait_timeout_iters and batch_wait_max_tokens_ratio are TensorRT-LLM's; engine "
                          f"{engine!r} has no batch waiting (use engine='trtllm' or leave them 0)")
    if not (iters and ratio):
        if iters or ratio:  # one alone: TensorRT-LLM stops waiting at once (either 0 ends the wait)
            given = f"batch_wait_timeout_iters={iters}" if iters else f"batch_wait_max_tokens_ratio={ratio!r}"
            warnings.warn(f"{given} alone does nothing: TensorRT-LLM's batch waiting needs both "
                          "batch_wait_timeout_iters and batch_wait_max_tokens_ratio above 0", AssumptionWarning,
                          stacklevel=3)
        return 0, 0.0
    if data_parallel:
        raise OptionError("batch_wait_timeout_iters with attention_data_parallel > 1: TensorRT-LLM applies batch "
                          "waiting only without attention data parallelism; leave it 0")
    return iters, float(ratio) * tokens


def _sglang_rank_share(engine: str, data_parallel: Any, seqs: int, tokens: int,
                       seqs_given: bool) -> tuple[int, int, str]:
    """(max_num_seqs, max_num_batched_tokens, a note) of one attention data-parallel rank of SGLang, whose server
    arguments are the replica's: with --enable-dp-attention over d ranks each rank's scheduler takes
    chunked_prefill_size // d tokens a step (python/sglang/srt/server_args.py, ServerArgs._handle_data_parallelism:
    "The chunked prefill size is adjusted to ...") and, where --max-running-requests is given, max_running_requests
    // d requests (srt/model_executor/model_runner.py, "Init max running requests"). Other engines' knobs are per
    rank already (TensorRT-LLM's and vLLM's attention data-parallel ranks each run the engine's own scheduler with
    the limits given); unchanged there and without ranks."""
    if engine != "sglang" or data_parallel is None:
        return seqs, tokens, ""
    d = data_parallel.ranks
    if tokens < d or (seqs_given and seqs < d):
        knob, value = ("max_num_batched_tokens", tokens) if tokens < d else ("max_num_seqs", seqs)
        raise OptionError(f"{knob}={value} is below attention_data_parallel={d}: SGLang divides it over its "
                          f"attention data-parallel ranks, leaving a rank none; give at least {d}")
    share = seqs // d if seqs_given else seqs
    return share, tokens // d, (f"SGLang's chunked prefill size {tokens} divided over its {d} attention "
                                f"data-parallel ranks: {tokens // d} tokens a step per rank"
                                + (f", max_running_requests {seqs} // {d} = {share} per rank" if seqs_given else ""))


def _seqs_within_token_budget(engine: str, seqs: int, tokens: int, seqs_given: bool) -> tuple[int, str]:
    """max_num_seqs within max_num_batched_tokens, as vLLM rules it: SchedulerConfig refuses
    max_num_batched_tokens < max_num_seqs (vllm/config/scheduler.py, verify_max_model_len), and an unset
    max_num_seqs defaults to min(its default, max_num_batched_tokens) (vllm/engine/arg_utils.py,
    EngineArgs._set_default_args). Applied to every engine: each running decode takes one token of a step's
    budget in llmsim's scheduler, so more sequences than tokens could never all run. Returns (max_num_seqs,
    a note when the default was lowered)."""
    if tokens >= seqs:
        return seqs, ""
    if seqs_given and engine == "vllm":
        raise OptionError(f"max_num_batched_tokens={tokens} is below max_num_seqs={seqs}: the engine refuses it "
                          f"(vLLM: max_num_batched_tokens must be >= max_num_seqs); raise max_num_batched_tokens or "
                          f"lower max_num_seqs")
    if seqs_given:  # another engine may accept it (TensorRT-LLM runs at most that many decodes a step)
        raise OptionError(f"max_num_batched_tokens={tokens} is below max_num_seqs={seqs}: llmsim's scheduler gives "
                          f"every running decode a token of each step's budget, so it cannot hold more sequences "
                          f"than tokens ({engine} would run at most {tokens} of them a step); lower max_num_seqs to "
                          f"{tokens} or raise max_num_batched_tokens")
    return tokens, (f"{engine}'s default {seqs} lowered to {tokens}, the max_num_batched_tokens given, as vLLM sets "
                    "an unset max_num_seqs (at most one token per running request each step)")


def check_prompts_fit(limits: SchedulerLimits, longest_prompt: int, where: str = "") -> None:
    """Refuse a prompt that no step can hold whole when the engine does not chunk prefills (TensorRT-LLM's default
    enable_chunked_prefill False rejects such a request)."""
    if not limits.chunked_prefill and longest_prompt > limits.max_num_batched_tokens:
        raise OptionError(f"{where}a prompt of {longest_prompt} tokens exceeds max_num_batched_tokens="
                          f"{limits.max_num_batched_tokens} and prefills are not chunked (chunked_prefill=False, "
                          f"TensorRT-LLM's default): raise max_num_batched_tokens to at least {longest_prompt} "
                          f"or pass chunked_prefill=True")
