"""analyze(): any torch nn.Module traced on the meta device, its kernels timed on a device's roofline.

    import torch, llmsim
    r = llmsim.analyze(model, example_inputs=(torch.empty(8, 3, 224, 224),), hardware="h100-sxm",
                       dtype="bfloat16", engine="torch-compile")
    print(r); print(r.ops_table(top=20)); r.by_module(depth=2)

Engines (execution policies):
- "transformers": eager PyTorch: every aten op a kernel, with the device's per-op dispatch overhead.
- "torch-compile": element-wise chains fused into one kernel (trace.kernels), CUDA-graph launches.
- "roofline": the torch-compile kernels at the datasheet peaks, no overhead (the speed of light; as the
  LLM "roofline" engine, whose default fusion is also "elementwise").
The first two read the measured GEMM tables the LLM engines of the same name read (vLLM's bf16 GEMM rows:
F.linear / cuBLAS) for 2-D matmuls and implicit-GEMM convolutions where the device has them, and vLLM's
non-causal attention table for non-causal SDPA where it times the kernel PyTorch's SDPA runs or a published
proxy of it (trace.timing.SDPA_KERNELS); every other kernel is on the roofline with the hardware file's achievable
fractions.
"""

from __future__ import annotations

from typing import Any

from ..dtypes import MATMUL_PRECISION, canonical_dtype
from ..errors import LlmsimError, OptionError, check_choice
from .autocast import AutocastTrace
from .kernels import kernels_of
from .recorder import import_torch, record
from .result import TracedKernel, TraceResult
from .timing import kernel_time

# engine -> (fusion, ExecutionOptions values)
ENGINE_POLICIES: dict[str, tuple[str, dict[str, str]]] = {
    "transformers": ("eager", {"overhead": "eager", "tables": "vllm", "table_families": ("gemm", "encoder_attention")}),
    "torch-compile": ("elementwise", {"overhead": "graph", "tables": "vllm",
                                      "table_families": ("gemm", "encoder_attention")}),
    "roofline": ("elementwise", {"efficiency": "peak", "overhead": "none"}),
}
DEVICES = ("meta", "cpu")
_TORCH_DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}
_AUTOCAST_DTYPES = ("float16", "bfloat16")  # torch.amp.autocast("cuda", dtype=...)


def _moved(value: Any, torch: Any, device: str, dtype: Any) -> Any:
    """example inputs on the tracing device; floating tensors in the analysed dtype."""
    if isinstance(value, torch.Tensor):
        return value.to(device=device, dtype=dtype if value.is_floating_point() else None)
    if isinstance(value, (list, tuple)):
        return type(value)(_moved(v, torch, device, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _moved(v, torch, device, dtype) for k, v in value.items()}
    return value


def analyze(module: Any, example_inputs: Any = (), hardware: Any = "h100-sxm", dtype: str = "bfloat16",
            engine: str = "torch-compile", example_kwargs: dict[str, Any] | None = None, device: str = "meta",
            name: str | None = None, autocast: str | None = None) -> TraceResult:
    """Trace `module(*example_inputs, **example_kwargs)` and time its kernels on `hardware`.

    device="meta" (default): weights and inputs moved to the meta device (nothing allocated or computed;
    the module itself is not changed); "cpu": run for real (a module that branches on tensor values).
    dtype: the floating dtype weights and inputs are analysed in (float32, bfloat16, float16).
    autocast: "float16" or "bfloat16": trace under CUDA autocast to that dtype over weights and inputs in `dtype`
    (torch.amp.autocast("cuda", dtype=...); timm's `--amp` and most mixed-precision code: dtype="float32"):
    CUDA autocast's op lists choose each op's precision and its casts are kernels (trace.autocast); matmuls are
    timed at the autocast dtype. device must be "meta".
    A transformers LLM traces on meta given a 4-D boolean causal mask (attention_mask of shape [B, 1, S, S]
    in example_kwargs): with a 2-D mask or none, its mask code branches on tensor values.
    """
    torch = import_torch()
    from ..hardware.spec import load_hardware
    from ..timing.execution import ExecutionOptions
    from ..timing.roofline import Roofline

    if not isinstance(module, torch.nn.Module):
        raise OptionError(f"module={type(module).__name__} is not a torch.nn.Module")
    check_choice("engine", engine, ENGINE_POLICIES)
    check_choice("device", device, DEVICES)
    try:
        dtype = canonical_dtype(dtype)
    except LlmsimError:  # refused with this function's own list (canonical_dtype's names every llmsim dtype)
        check_choice("dtype", dtype, _TORCH_DTYPES)
    check_choice("dtype", dtype, _TORCH_DTYPES)
    if autocast is not None:
        try:
            autocast = canonical_dtype(autocast, "autocast")
        except OptionError:  # its message listed every dtype llmsim knows, not the two autocast takes
            autocast = str(autocast)
        check_choice("autocast", autocast, _AUTOCAST_DTYPES)
        if device != "meta":
            raise OptionError(f"autocast={autocast!r} is traced on the meta device: keep device='meta' (device="
                              f"{device!r} runs the module for real, where CUDA autocast does not apply)")
    hw = load_hardware(hardware)
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    torch_dtype = getattr(torch, _TORCH_DTYPES[dtype])
    if device == "cpu" and any(p.device.type == "meta" for p in module.parameters()):
        raise OptionError("device='cpu' runs the module for real: build it with weights on the CPU (it has "
                          "parameters on the meta device), or keep device='meta'")
    # each tensor moved once: a tied weight (one tensor under several names) stays one tensor, as
    # functional_call(tie_weights=True) requires of the names it ties
    moved: dict[int, Any] = {}
    state = {}
    for key, value in [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]:
        if id(value) not in moved:
            moved[id(value)] = _moved(value, torch, device, torch_dtype)
        state[key] = moved[id(value)]
    args = _moved(tuple(example_inputs), torch, device, torch_dtype)
    if example_kwargs is not None and not isinstance(example_kwargs, dict):  # dict() of a list raised ValueError
        raise OptionError(f"example_kwargs: a {type(example_kwargs).__name__}; give a dict of keyword arguments "
                          "for the module's forward (name -> tensor or value)")
    kwargs = _moved(dict(example_kwargs or {}), torch, device, torch_dtype)
    trace = None if autocast is None else AutocastTrace(torch, getattr(torch, autocast), list(state.values()))

    def call() -> Any:
        return torch.func.functional_call(module, state, args, kwargs, tie_weights=True, strict=False)

    recorded, returned = record(module, call, device, trace)
    fusion, execution = ENGINE_POLICIES[engine]
    roofline = Roofline(hw, ExecutionOptions.make(**execution))
    precision = MATMUL_PRECISION[autocast or dtype]
    rows = []
    for kernel in kernels_of(recorded, returned, fusion):
        time_s, bound, source = kernel_time(roofline, kernel, precision)
        rows.append(TracedKernel(kernel=kernel, time_s=time_s, bound=bound, source=source))
    unknown = tuple(dict.fromkeys(k.kernel.aten for k in rows if not k.kernel.known))
    params = sum(p.numel() for p in module.parameters())
    weights = sum(t.numel() * t.element_size() for t in moved.values() if hasattr(t, "element_size"))
    return TraceResult(model=name or type(module).__name__, hardware=hw.name, dtype=dtype, engine=engine,
                       fusion=fusion, precision=precision, kernels=tuple(rows), unknown_ops=unknown,
                       aten_ops=len(recorded), parameters=int(params), tables_note=roofline.tables_note,
                       autocast=autocast, weights_bytes=float(weights), capacity_bytes=hw.memory_capacity_bytes)
