"""The real transformers model of a config dict, with random weights, and the timing of its phases.

Nothing is downloaded and no remote code runs: the model is `AutoModelForCausalLM.from_config` on the
config's own keys, with attn_implementation="sdpa".
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import LlmsimError
from ._device import require_torch, synchronize, time_call, torch_dtype

_LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers")
# Falcon's original RefinedWeb configs: names transformers 5 no longer maps (it would use its defaults)
_LEGACY_TYPES = {"RefinedWebModel": "falcon", "RefinedWeb": "falcon"}
_LEGACY_KEYS = {"n_layer": "num_hidden_layers", "n_head": "num_attention_heads"}


# ---- configs -----------------------------------------------------------------------------------------
def config_dict(model: Any) -> tuple[dict[str, Any], str]:
    """The raw config dict of `model` (a shipped name, a config.json path or folder, a dict or a
    PretrainedConfig) and a name for reports."""
    from ..models.hf_config import read_config_file
    from ..shipped import find_shipped, model_configs_dir, shipped_model_names

    if isinstance(model, Mapping):
        data = dict(model)
        return data, str(data.get("_name_or_path") or data.get("model_type") or "model")
    if isinstance(model, (str, Path)):
        path = Path(model).expanduser()
        if path.exists():
            stem = path.name if path.is_dir() else path.stem
            if stem == "config":
                stem = path.parent.name
            return read_config_file(path), stem
        if isinstance(model, str) and "/" not in model and not model.endswith(".json"):
            file = find_shipped("model", model, shipped_model_names(), model_configs_dir(), ".json")
            return json.loads(file.read_text()), file.stem
        raise LlmsimError(f"model config: no file at {path}")
    if hasattr(model, "to_dict") and hasattr(model, "model_type"):
        data = model.to_dict()
        return data, str(data.get("_name_or_path") or data.get("model_type"))
    raise LlmsimError(
        f"validate: cannot build a real model from a {type(model).__name__}; give a shipped name, a config "
        f"path, a dict or a PretrainedConfig (a ModelSpec has no weights layout to build)"
    )


def prepare_config(data: dict[str, Any], dtype: str, num_layers: int | None) -> dict[str, Any]:
    """The dict both sides use: the text part of a multimodal config, the run dtype, and `num_layers`
    layers (layer_types truncated) when given."""
    data = {k: v for k, v in data.items() if k not in ("auto_map", "quantization_config")}
    if isinstance(data.get("text_config"), dict) and not any(k in data for k in _LAYER_KEYS):
        text = dict(data["text_config"])
        text.setdefault("model_type", f"{data['model_type']}_text")
        data = {k: v for k, v in text.items() if k not in ("auto_map", "quantization_config")}
    data.pop("torch_dtype", None)
    data["dtype"] = dtype  # embeddings and norms are stored in it too, on both sides
    if num_layers is not None:
        if num_layers < 1:
            raise LlmsimError(f"num_layers={num_layers} must be >= 1")
        keys = [k for k in _LAYER_KEYS if k in data] or ["num_hidden_layers"]
        have = max((int(data[k]) for k in keys if isinstance(data.get(k), int)), default=None)
        if have is not None and num_layers > have:  # more layers would be another, larger model
            raise LlmsimError(f"num_layers={num_layers} exceeds the model's {have} layers ({keys[0]}); pass "
                              f"1 to {have}")
        for key in keys:
            data[key] = int(num_layers)
        if isinstance(data.get("layer_types"), list):
            if len(data["layer_types"]) < num_layers:
                have = len(data["layer_types"])
                raise LlmsimError(f"num_layers={num_layers} exceeds the config's {have} layer_types")
            data["layer_types"] = data["layer_types"][:num_layers]
    return data


def hf_config(data: dict[str, Any]) -> Any:
    """A transformers config from a raw config dict (never remote code)."""
    import transformers

    fields = {k: v for k, v in data.items() if k not in ("model_type", "auto_map", "quantization_config")}
    model_type = _LEGACY_TYPES.get(data["model_type"], data["model_type"])
    if data["model_type"] in _LEGACY_TYPES:
        for old, new in _LEGACY_KEYS.items():
            if old in fields and new not in fields:
                fields[new] = fields.pop(old)
    try:
        config = transformers.AutoConfig.for_model(model_type, **fields)
    except (ValueError, TypeError, KeyError) as exc:
        raise LlmsimError(f"validate: transformers refused the config ({model_type}): {exc}") from None
    if config.model_type == "gemma3" and hasattr(config, "text_config"):
        config = config.text_config
    return config


def build_model(data: dict[str, Any], dtype: str, device: str, seed: int = 0) -> Any:
    """The real model with random weights, in eval mode, in `dtype` on `device`.

    Attention runs through SDPA; a model transformers has no SDPA path for (gpt-oss: attention sinks)
    falls back to its eager attention, and `attention_kernel(model)` says which one runs."""
    torch = require_torch()
    import transformers

    config = hf_config(data)
    torch.manual_seed(seed)
    with torch.device(device):
        try:
            model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa",
                                                                  dtype=torch_dtype(dtype))
        except ValueError as exc:
            if "scaled_dot_product_attention" not in str(exc):
                raise
            torch.manual_seed(seed)
            model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager",
                                                                  dtype=torch_dtype(dtype))
    return model.to(device=device, dtype=torch_dtype(dtype)).eval()


_FLASH_KERNELS = ("aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
                  "aten::_scaled_dot_product_cudnn_attention", "aten::_flash_attention_forward")


def attention_kernel(model: Any, device: str = "cpu") -> str:
    """llmsim's attention option for the kernel the model really runs, seen in a short profiled forward:
    "flash" when SDPA picks a fused kernel, "sdpa_math" when it falls back to its math kernel (on a CPU
    when the query/key and value head dims differ, as in MLA), "math" when transformers runs its eager
    attention (full S x S scores, softmax, then the value matmul)."""
    if getattr(model.config, "_attn_implementation", "sdpa") != "sdpa":
        return "math"
    torch = require_torch()
    ids = input_ids(model, 1, 8, device, seed=8)

    def run() -> None:
        with torch.inference_mode():
            model(input_ids=ids, use_cache=True)

    names = aten_op_names(run, device)
    if any(n.startswith(_FLASH_KERNELS) for n in names):
        return "flash"
    return "sdpa_math" if "aten::_scaled_dot_product_attention_math" in names else "math"


# ---- the phases ------------------------------------------------------------------------------------
def input_ids(model: Any, batch_size: int, length: int, device: str, seed: int) -> Any:
    torch = require_torch()
    generator = torch.Generator().manual_seed(seed)
    vocab = int(model.config.vocab_size)
    return torch.randint(0, vocab, (batch_size, length), generator=generator).to(device)


def fill_cache(model: Any, batch_size: int, kv_len: int, device: str, exact_tokens: int = 256) -> Any:
    """A DynamicCache holding kv_len tokens per sequence (untimed; its values do not change the timing).

    The model itself fills min(kv_len, exact_tokens) tokens of one sequence (in chunks, last position's
    logits only); longer caches repeat those keys and values along the sequence up to kv_len (a sliding
    layer keeps its last W - 1 and counts kv_len seen), then the batch repeats the sequence. Filling a
    4096-token cache by running the model would cost more than the whole validation grid."""
    torch = require_torch()
    exact = min(kv_len, exact_tokens)
    ids = input_ids(model, 1, exact, device, seed=kv_len)
    cache = None
    with torch.inference_mode():
        for start in range(0, exact, 128):
            out = model(input_ids=ids[:, start:start + 128], past_key_values=cache, use_cache=True, logits_to_keep=1)
            cache = out.past_key_values
            del out
        if exact < kv_len:
            for layer in cache.layers:
                window = getattr(layer, "sliding_window", None)
                stored = min(kv_len, window - 1) if window else kv_len
                layer.keys = _tile(torch, layer.keys, stored)
                layer.values = _tile(torch, layer.values, stored)
                if hasattr(layer, "cumulative_length"):
                    layer.cumulative_length = kv_len
        if batch_size > 1:
            cache.batch_repeat_interleave(batch_size)
    if cache.get_seq_length() != kv_len:  # pragma: no cover - a cache layout this code does not know
        raise LlmsimError(f"validate: could not build a cache of {kv_len} tokens ({type(cache).__name__})")
    return cache


def _tile(torch: Any, states: Any, length: int) -> Any:
    """[B, heads, n, d] -> [B, heads, length, d], repeating the n cached positions."""
    n = states.shape[-2]
    if n >= length:
        return states[..., n - length:, :].contiguous()
    reps = -(-length // n)
    return states.repeat(1, 1, reps, 1)[..., :length, :].contiguous()


def prefill_timer(model: Any, batch_size: int, seq_len: int, device: str) -> Callable[..., Any]:
    """A callable that runs one eager prefill of seq_len tokens per sequence (all logits, cache made)."""
    torch = require_torch()
    ids = input_ids(model, batch_size, seq_len, device, seed=seq_len)

    def run() -> None:
        with torch.inference_mode():
            model(input_ids=ids, use_cache=True)

    return run


def time_prefill(model: Any, batch_size: int, seq_len: int, device: str, overhead: str, repeats: int,
                 warmup: int, clocks: dict[str, list[float]] | None = None) -> tuple[list[float], Callable[[], Any]]:
    """Seconds of each timed prefill (time_call's clock; `clocks` receives the wall and CPU times)."""
    if overhead == "graph":
        ids = input_ids(model, batch_size, seq_len, device, seed=seq_len)
        return graph_timer(static_prefill_step(model, ids), device, repeats, warmup)
    run = prefill_timer(model, batch_size, seq_len, device)
    return time_call(run, device, repeats, warmup, clocks=clocks), run


def time_decode(model: Any, batch_size: int, kv_len: int, device: str, overhead: str, repeats: int,
                warmup: int, clocks: dict[str, list[float]] | None = None) -> tuple[list[float], Callable[[], Any]]:
    """Seconds of one decode step with kv_len tokens cached (time_call's clock; `clocks` receives the wall
    and CPU times). Each timed step gets a fresh copy of the cache made before the clock starts (a DynamicCache
    grows by one token per call)."""
    torch = require_torch()
    next_ids = input_ids(model, batch_size, 1, device, seed=kv_len + 1)
    if overhead == "graph":
        return graph_timer(static_decode_step(model, batch_size, kv_len, next_ids, device), device, repeats, warmup)
    cache = fill_cache(model, batch_size, kv_len, device)

    def setup() -> tuple[Any]:
        return (copy.deepcopy(cache),)

    def step(step_cache: Any) -> None:
        with torch.inference_mode():
            model(input_ids=next_ids, past_key_values=step_cache, use_cache=True)

    times = time_call(step, device, repeats, warmup, setup=setup, clocks=clocks)

    def once() -> None:
        step(*setup())

    return times, once


# ---- static cache and CUDA graphs (overhead="graph") -------------------------------------------------
def _static_cache(model: Any, max_len: int) -> Any:
    from transformers import StaticCache

    # transformers 5: the layers allocate lazily from the first keys they get (device, dtype, batch)
    return StaticCache(config=model.config, max_cache_len=max_len)


def rewind_static_cache(cache: Any, length: int) -> None:
    """Set every layer of a transformers StaticCache back to `length` tokens written. transformers 5 keeps
    the write position per layer (a device tensor, and a Python int in sliding-window layers) and advances
    it in place on every forward; a captured graph advances the tensor on every replay, and positions are
    read from it, so each warm-up, capture and replay must start from the same position. Layers not yet
    allocated are left alone (they start at 0)."""
    torch = require_torch()
    with torch.inference_mode():  # the cache's tensors are inference tensors
        for layer in cache.layers:
            if not getattr(layer, "is_initialized", False):
                continue
            layer.cumulative_length.fill_(min(length, layer.max_cache_len))
            if hasattr(layer, "cumulative_length_int"):
                layer.cumulative_length_int = length


def static_prefill_step(model: Any, ids: Any) -> tuple[Callable[[], Any], Callable[[], None]]:
    """(step, rewind): a prefill of ids into a StaticCache of exactly their length, returning the logits,
    and the rewind that makes the next step the same prefill again."""
    torch = require_torch()
    cache = _static_cache(model, ids.shape[1])

    def step() -> Any:
        with torch.inference_mode():
            return model(input_ids=ids, past_key_values=cache, use_cache=True).logits

    return step, lambda: rewind_static_cache(cache, 0)


def static_decode_step(model: Any, batch_size: int, kv_len: int, next_ids: Any, device: str,
                       chunk_tokens: int = 512) -> tuple[Callable[[], Any], Callable[[], None]]:
    """(step, rewind): one decode step at position kv_len over a StaticCache of kv_len + 1 slots already
    holding kv_len tokens (a real prefill, chunk_tokens at a time so that its activations stay small
    beside a large batch's cache), returning the logits, and the rewind back to kv_len tokens (and to
    the contents of full sliding-window layers, which a step rolls)."""
    torch = require_torch()
    cache = _static_cache(model, kv_len + 1)
    ids = input_ids(model, batch_size, kv_len, device, seed=kv_len)
    with torch.inference_mode():
        for start in range(0, kv_len, chunk_tokens):
            model(input_ids=ids[:, start:start + chunk_tokens], past_key_values=cache, use_cache=True,
                  logits_to_keep=1)
    if cache.get_seq_length() != kv_len:  # pragma: no cover - a cache layout this code does not know
        raise LlmsimError(f"validate: the static cache holds {cache.get_seq_length()} tokens, not {kv_len}")

    # a full sliding-window layer rolls its contents in place every step: keep them to put back
    rolled = [(layer, layer.keys.clone(), layer.values.clone()) for layer in cache.layers
              if getattr(layer, "is_sliding", False) and kv_len >= layer.max_cache_len]

    def step() -> Any:
        with torch.inference_mode():
            return model(input_ids=next_ids, past_key_values=cache, use_cache=True).logits

    def rewind() -> None:
        rewind_static_cache(cache, kv_len)
        with torch.inference_mode():
            for layer, keys, values in rolled:
                layer.keys.copy_(keys)
                layer.values.copy_(values)

    return step, rewind


def _capture(step: Callable[[], Any], rewind: Callable[[], None]) -> Callable[[], None]:  # pragma: no cover - CUDA
    """A CUDA graph of step (warmed up on a side stream first, each call from the rewound cache); returns
    its replay, which must follow a rewind as well."""
    torch = require_torch()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            rewind()
            step()
    torch.cuda.current_stream().wait_stream(stream)
    rewind()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    synchronize("cuda")
    return graph.replay


def graph_timer(step_and_rewind: tuple[Callable[[], Any], Callable[[], None]], device: str,
                repeats: int, warmup: int) -> tuple[list[float], Callable[[], None]]:  # pragma: no cover - CUDA
    """Times the CUDA-graph replay of a static-cache step; the rewind before each replay is untimed.
    Returns the times and one rewound replay (for profiling)."""
    if device != "cuda":
        raise LlmsimError("overhead='graph' needs device='cuda' (CUDA graphs)")
    step, rewind = step_and_rewind
    replay = _capture(step, rewind)

    def setup() -> tuple[()]:
        rewind()
        return ()

    def once() -> None:
        rewind()
        replay()

    return time_call(replay, device, repeats, warmup, setup=setup), once


# ---- profiling: measured time by op class -------------------------------------------------------------
_SPLIT = {"matmul": "matmul", "attention": "attention", "elementwise": "elementwise", "copy": "elementwise"}


@contextlib.contextmanager
def torch_profiler(device: str) -> Iterator[Any]:
    """torch.profiler.profile of the CPU (and CUDA kernels on "cuda"), without the two lines Kineto (its C++
    side) writes to stderr at each start and stop since torch 2.13: "USDT:<time> <pid>:<tid>
    SyncActivityProfilerHandler.cpp:52] profiler_start" and "... profiler_stop". USDT is Kineto's highest log
    severity (libkineto/src/Logger.h), above the ERROR threshold torch sets, so only KINETO_LOG_LEVEL=6 silences
    it, and with it every Kineto message in the process, and only if set before Kineto's first use. Instead
    file descriptor 2 goes to a temporary file for the profiled window and every other line is written back
    after it: warnings of llmsim, transformers or Kineto's own errors still reach stderr, in order."""
    require_torch()
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with _stderr_without_usdt_lines(), profile(activities=activities) as prof:
        yield prof


@contextlib.contextmanager
def _stderr_without_usdt_lines() -> Iterator[None]:
    """File descriptor 2 into a temporary file while the block runs; its lines but Kineto's "USDT:" ones written
    back to the real stderr afterwards (no descriptor 2 to redirect: the block runs as it is)."""
    import os
    import sys
    import tempfile

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            kept = b"".join(line for line in sink.read().splitlines(keepends=True) if not line.startswith(b"USDT:"))
            if kept:
                os.write(2, kept)


def profile_split(run: Callable[[], Any], device: str, measured_s: float) -> dict[str, float]:
    """Measured time by op class: one profiled run read by llmsim.read_profile (on a CPU each aten op's self
    time, on CUDA each kernel's device time, classed by llmsim.profiles.classify), scaled to the measured
    median. Views, wrapper ops and time inside no op (Python, module calls) count as "other"."""
    require_torch()
    import tempfile
    import time

    from ..profiles import read_profile

    with torch_profiler(device) as prof:
        t0 = time.perf_counter()
        run()
        synchronize(device)
        wall = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "trace.json"
        prof.export_chrome_trace(str(trace))
        measured = read_profile(trace)
    by_class = {"matmul": 0.0, "attention": 0.0, "elementwise": 0.0, "other": 0.0}
    for kernel in measured.kernels:
        by_class[_SPLIT.get(kernel.op_class, "other")] += kernel.time_s
    traced = sum(by_class.values())
    by_class["other"] += max(wall - traced, 0.0)
    total = sum(by_class.values())
    return {k: measured_s * v / total for k, v in by_class.items()} if total > 0 else by_class


def aten_op_names(run: Callable[[], Any], device: str = "cpu") -> dict[str, int]:
    """Calls per aten op name in one run (to see which kernels really run, e.g. the SDPA backend)."""
    with torch_profiler("cpu") as prof:
        run()
        synchronize(device)
    return {e.key: e.count for e in prof.key_averages() if e.key.startswith("aten::")}
