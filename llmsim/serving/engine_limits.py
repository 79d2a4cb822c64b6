"""Each engine's scheduling defaults and the KV cache it can hold, from its own documented defaults.

- vLLM (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults, OpenAI server context): on a GPU with at
  least 70 GiB that is not an A100, max_num_batched_tokens 8192 and max_num_seqs 1024; otherwise 2048 and
  256. gpu_memory_utilization 0.9, block_size 16 (vllm/config/cache.py).
- SGLang (python/sglang/srt/server_args.py): chunked_prefill_size 2048 below 35 GB of GPU memory, 8192
  below 160 GB, 16384 above; mem_fraction_static 0.88 (its fallback), page_size 1; enable_mixed_chunk
  False: a step prefills new requests (decodes wait) while any can start, else decodes.
  approximation: max_running_requests, which SGLang derives from its token pool, is taken as vLLM's 1024.
- TensorRT-LLM (tensorrt_llm/llmapi: BuildConfig max_batch_size 2048, max_num_tokens 8192;
  KvCacheConfig free_gpu_memory_fraction 0.9, tokens_per_block 32).
Explicit arguments win over these.
"""

from __future__ import annotations

from typing import Any

from ..analysis.memory import peak_activation_bytes, weights_bytes, workspace_bytes
from ..cost.workload import CostOptions, check_count
from ..errors import OptionError
from ..hardware.spec import HardwareSpec
from ..models.spec import ModelSpec
from .scheduler import SchedulerLimits

_GIB = 1024**3


def engine_defaults(engine: str, hardware: HardwareSpec) -> dict[str, Any]:
    """max_num_seqs, max_num_batched_tokens, gpu_memory_utilization and block_size of `engine` on `hardware`."""
    memory = hardware.memory_capacity_bytes
    if engine == "sglang":
        tokens = 2048 if memory < 35e9 else 8192 if memory < 160e9 else 16384
        return {"max_num_seqs": 1024, "max_num_batched_tokens": tokens, "gpu_memory_utilization": 0.88,
                "block_size": 1, "mixed_batches": False}
    if engine == "trtllm":
        return {"max_num_seqs": 2048, "max_num_batched_tokens": 8192, "gpu_memory_utilization": 0.9,
                "block_size": 32, "mixed_batches": True}
    large = memory >= 70 * _GIB and "a100" not in hardware.name.lower()
    return {"max_num_seqs": 1024 if large else 256, "max_num_batched_tokens": 8192 if large else 2048,
            "gpu_memory_utilization": 0.9, "block_size": 16, "mixed_batches": True}


def scheduler_limits(model: ModelSpec, hardware: HardwareSpec, options: CostOptions, engine: str,
                     longest_request: int, max_num_seqs: Any = None, max_num_batched_tokens: Any = None,
                     gpu_memory_utilization: Any = None, block_size: Any = None,
                     mixed_batches: Any = None, pipeline_parallel: int = 1) -> SchedulerLimits:
    """The engine's limits with the caller's overrides, and the KV blocks left on one GPU after weights,
    the activations of a full token budget and the workspace:

        kv_blocks = floor((utilization x capacity - weights - activations - workspace) / (block x kv/token))

    approximation: every layer keeps a full KV cache (sliding-window layers are not trimmed), as vLLM
    allocates without its hybrid allocator. Linear-attention and Mamba layers' fixed-size states come from
    the same pool, state_blocks blocks per running request (taken when it starts, freed when it finishes
    or is preempted), as vLLM V1's hybrid KV cache manager gives each request one state page.
    """
    defaults = engine_defaults(engine, hardware)
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
    if tokens < seqs:
        seqs = tokens  # approximation: vLLM refuses max_num_batched_tokens < max_num_seqs; one token each
    _, _, kv_dtype = options.resolved_dtypes(model.dtype)
    tp = options.tensor_parallel
    # one GPU of a pipeline stage holds 1/p of the layers: their weights, KV cache and states
    # (approximation: layers, embedding and LM head spread evenly over the stages)
    p = pipeline_parallel
    state = float(model.recurrent_state_bytes(1, kv_dtype=kv_dtype, tensor_parallel=tp)) / p  # per sequence
    per_token = float(model.kv_cache_bytes(batch_size=1, seq_len=1, kv_dtype=kv_dtype, tensor_parallel=tp)) / p \
        - state
    free = (util * hardware.memory_capacity_bytes - weights_bytes(model, options) / p
            - float(peak_activation_bytes(model, options, 1, tokens)) - workspace_bytes(hardware))
    block_bytes = block * per_token if per_token > 0 else state  # a state-only model: one state per block
    blocks = int(free // block_bytes) if block_bytes > 0 else 1 << 40
    state_blocks = -(-int(state) // int(block_bytes)) if state and block_bytes else 0  # per running request
    need = -(-longest_request // block) * (per_token > 0) + state_blocks
    if blocks < need:
        holds = (f"{max(blocks, 0) * block} tokens" if per_token > 0 else f"{max(blocks, 0)} sequence states")
        with_state = f" plus its fixed-size state ({state / _GIB:.2f} GiB)" if state else ""
        raise OptionError(
            f"the KV cache holds {holds} per GPU after the weights ({weights_bytes(model, options) / p / _GIB:.1f} "
            f"GiB) at gpu_memory_utilization={util}, fewer than the longest request's {longest_request} tokens"
            f"{with_state}: raise tensor_parallel, gpu_memory_utilization or lower the lengths")
    return SchedulerLimits(max_num_seqs=int(seqs), max_num_batched_tokens=int(tokens), kv_blocks=blocks,
                           block_size=int(block), state_blocks=state_blocks,
                           mixed_batches=defaults["mixed_batches"] if mixed_batches is None else mixed_batches)
