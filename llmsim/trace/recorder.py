"""Record every aten op a module's forward runs, with shapes, dtypes, tensor identities and module path.

A `TorchDispatchMode` (the mechanism of torch.utils.flop_counter.FlopCounterMode) sees each aten op
after autograd and the Python-level composites have decomposed (F.linear -> aten.addmm/mm, nn.Conv2d ->
aten.convolution). Module forward pre/post hooks keep a stack of module paths, so every op knows the
innermost module that ran it. On the meta device nothing is computed and no memory is allocated.

torch is imported lazily (inside functions): llmsim's core never needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import LlmsimError

INSTALL_HINT = "tracing a PyTorch module needs torch: pip install 'llmsim[validate]'"


def import_torch() -> Any:
    """torch, or an ImportError with the install hint."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch is in the test environment
        raise ImportError(INSTALL_HINT, name="torch") from exc
    return torch


SDPA_NAME = "aten.scaled_dot_product_attention.fused"  # F.scaled_dot_product_attention, recorded as one kernel


# aten ops that read a tensor's value into Python (an `if tensor:` or `.item()`): impossible on meta
_READS_VALUES = frozenset({"_local_scalar_dense", "is_nonzero", "item", "equal", "nonzero", "unique", "_unique2",
                           "masked_select"})


class TraceError(LlmsimError):
    """A module whose forward cannot run under the tracer (e.g. data-dependent control flow on meta)."""


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """One tensor an op reads or writes: its identity (aliases share the root's), shape and bytes."""

    ident: int  # the storage it lives in (views share their base's)
    shape: tuple[int, ...]
    dtype: str  # torch dtype name without the prefix, e.g. "bfloat16"
    itemsize: int
    bytes: int  # distinct bytes touched: min(numel * itemsize, storage bytes) (an expanded bias: its storage)


@dataclass(frozen=True, slots=True)
class RecordedOp:
    """One aten op call: its name (e.g. "aten.convolution.default"), module path, tensors and the
    non-tensor arguments (strides, groups, ...) formulas need."""

    aten: str
    module: str
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    args: tuple[Any, ...]  # positional arguments with tensors replaced by their TensorInfo
    kwargs: dict[str, Any]
    is_view: bool
    tags: frozenset[str]


def _storage_key(t: Any) -> tuple[int, int]:
    """A key shared by a tensor and its views: its untyped storage's data pointer / object id."""
    try:
        storage = t.untyped_storage()
        return (storage._cdata, storage.nbytes())  # the StorageImpl pointer: shared by views, kept alive
    except (RuntimeError, NotImplementedError):  # tensors without storage (tensor subclasses)
        return (id(t), t.numel() * t.element_size())


class _Recorder:
    """Holds the tensors it saw (so ids stay unique for the trace) and the module stack."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.inside_fused = 0  # > 0 while a fused function (SDPA) runs: its decomposition is not recorded
        self.ops: list[RecordedOp] = []
        self.stack: list[str] = [""]
        self.keep: list[Any] = []  # every tensor seen: an id is never reused while the trace lives
        self.idents: dict[tuple[int, int], int] = {}

    def info(self, t: Any) -> TensorInfo:
        key = _storage_key(t)
        ident = self.idents.setdefault(key, len(self.idents))
        self.keep.append(t)
        itemsize = t.element_size()
        numel_bytes = t.numel() * itemsize
        return TensorInfo(ident=ident, shape=tuple(int(s) for s in t.shape), dtype=str(t.dtype).removeprefix("torch."),
                          itemsize=itemsize, bytes=int(min(numel_bytes, key[1]) if key[1] else numel_bytes))


    def add(self, name: str, args: tuple, kwargs: dict, out: Any, is_view: bool, tags: frozenset[str]) -> None:
        torch = self.torch
        self.ops.append(RecordedOp(
            aten=name, module=self.stack[-1], inputs=tuple(self.info(t) for t in _flat_tensors((args, kwargs), torch)),
            outputs=tuple(self.info(t) for t in _flat_tensors(out, torch)),
            args=tuple(_replace_tensors(a, self, torch) for a in args),
            kwargs={k: _replace_tensors(v, self, torch) for k, v in kwargs.items()}, is_view=is_view, tags=tags))


def _flat_tensors(value: Any, torch: Any) -> list[Any]:
    if hasattr(value, "to_tuple"):  # transformers' ModelOutput
        value = value.to_tuple()
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flat_tensors(v, torch)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flat_tensors(v, torch)]
    return []


def _replace_tensors(value: Any, recorder: _Recorder, torch: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return recorder.info(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_replace_tensors(v, recorder, torch) for v in value)
    return value


_SDPA_PARAMETERS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal")


def _sdpa_positional(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """F.scaled_dot_product_attention's arguments with query, key, value (and attn_mask, dropout_p,
    is_causal while no gap) moved to their positions, as its formula reads them (diffusers passes them
    all by keyword)."""
    positional, rest = list(args), dict(kwargs)
    for name in _SDPA_PARAMETERS[len(args):]:
        if name not in rest:
            break
        positional.append(rest.pop(name))
    return tuple(positional), rest


def record(module: Any, call: Callable[[], Any], device: str,
           autocast: Any = None) -> tuple[list[RecordedOp], frozenset[int]]:
    """Run call() (the module's forward on example inputs on `device`) under the recorder, with module
    paths from `module`'s hooks; (recorded ops, identities of the storages the forward returns). autocast: an
    AutocastTrace (trace.autocast): each torch function then gets CUDA autocast's precision, its casts recorded.

    A failure inside the forward is a TraceError naming the aten op (or the Python line) where it stopped."""
    torch = import_torch()
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    recorder = _Recorder(torch)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    failed: list[str] = []

    class _Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            kwargs = kwargs or {}
            try:
                out = func(*args, **kwargs)
            except Exception:
                failed.append(str(func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else func))
                raise
            if not recorder.inside_fused:
                recorder.add(str(func), args, kwargs, out, bool(getattr(func, "is_view", False)),
                             frozenset(str(t).removeprefix("Tag.") for t in getattr(func, "tags", ())))
            return out

    class _Functions(TorchFunctionMode):
        """F.scaled_dot_product_attention as one fused kernel, as GPUs run it (flash / memory-efficient):
        the meta and CPU devices decompose it into bmm, softmax and masking ops, which are not recorded."""

        def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            kwargs = kwargs or {}
            if autocast is not None and not recorder.inside_fused:  # CUDA autocast's policy for this function
                args, kwargs = autocast.apply(func, args, kwargs)  # (its casts dispatch here: recorded kernels)
            if func is not sdpa or recorder.inside_fused:
                return func(*args, **kwargs)
            recorder.inside_fused += 1
            try:
                out = func(*args, **kwargs)
            finally:
                recorder.inside_fused -= 1
            recorder.add(SDPA_NAME, *_sdpa_positional(args, kwargs), out, False, frozenset())
            return out

    def enter(name: str) -> Callable[..., None]:
        def hook(*_: Any) -> None:
            recorder.stack.append(name)
        return hook

    def leave(*_: Any) -> None:  # returns None: a forward hook's return value would replace the output
        recorder.stack.pop()

    handles = []
    for name, sub in module.named_modules():
        handles.append(sub.register_forward_pre_hook(enter(name)))
        handles.append(sub.register_forward_hook(leave))
    try:
        with torch.no_grad(), _Functions(), _Mode():
            output = call()
    except Exception as exc:
        if isinstance(exc, LlmsimError):
            raise
        where = f"aten.{failed[0]}" if failed else "a Python-level step"
        data_dependent = bool(failed) and failed[0] in _READS_VALUES
        mixed = "is not on the expected device" in str(exc) or "Expected all tensors to be on the same device" in (
            str(exc))
        if device == "meta" and mixed and not data_dependent:  # a tensor made inside forward on another device
            hint = ("the forward makes a tensor on a device of its own (torch.ones(...) without device=x.device), "
                    "which meets the traced meta tensors: create it on its input's device, or pass device='cpu' "
                    "with example_inputs of a small shape")
        elif device == "meta" and (data_dependent or "meta" in str(exc)):
            hint = ("it branches on tensor values (data-dependent control flow), which the meta device cannot "
                    "compute: pass device='cpu' with example_inputs of a small shape")
        else:
            hint = "check that example_inputs (shapes, dtypes) and example_kwargs match the module's forward"
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TraceError(f"the module failed to trace on {device} at {where} ({first_line[:160]}); {hint}") from exc
    finally:
        for handle in handles:
            handle.remove()
    return recorder.ops, frozenset(recorder.info(t).ident for t in _flat_tensors(output, torch))
