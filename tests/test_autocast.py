"""Tracing under CUDA autocast (analyze(autocast=...), llmsim.trace.autocast): the emulation on the meta device
against PyTorch's own CUDA autocast, run on fake CUDA tensors (FakeTensorMode: the C++ autocast registrations of
the installed torch decide every op's dtype and insert the casts), a cast's bytes pinned by hand, refusals."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from llmsim.errors import OptionError  # noqa: E402
from llmsim.trace.analyze import analyze  # noqa: E402
from llmsim.trace.autocast import AutocastTrace  # noqa: E402
from llmsim.trace.recorder import record  # noqa: E402


class Mixed(torch.nn.Module):
    """Every autocast category: convolutions and linears (lower precision), norms, softmax, pow, exp and sum
    (float32), and ops autocast leaves to type promotion (batch norm, relu, gelu, mul by a float32 parameter)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.norm = torch.nn.LayerNorm(8)
        self.fc = torch.nn.Linear(8, 16)
        self.scale = torch.nn.Parameter(torch.ones(16))

    def forward(self, x: Any) -> Any:
        h = torch.relu(self.bn(self.conv(x)))  # [B, 8, H, W]
        h = self.norm(h.permute(0, 2, 3, 1))  # channels last, LayerNorm over 8
        h = torch.nn.functional.gelu(self.fc(h)) * self.scale
        s = torch.softmax(h, dim=-1) + h.pow(2).exp()
        return (s @ s.transpose(-1, -2)).sum(dim=-1)


def _small_convnext() -> Any:
    config = transformers.ConvNextConfig(depths=[1, 1, 1, 1], hidden_sizes=[8, 16, 32, 64], num_labels=10)
    return transformers.ConvNextForImageClassification(config).eval()


def _real_autocast_ops(module: Any, shape: tuple[int, ...]) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """(op, input dtypes, output dtypes) of every aten op but views, under PyTorch's CUDA autocast (float16) on fake
    CUDA tensors with float32 weights."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode

    ops: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []

    def dtypes(value: Any) -> tuple[str, ...]:
        flat = value if isinstance(value, (list, tuple)) else [value]
        return tuple(str(t.dtype).removeprefix("torch.") for t in flat if isinstance(t, torch.Tensor))

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            if func.namespace == "aten" and not func.is_view:
                ops.append((func.overloadpacket.__name__, dtypes(list(args)), dtypes(out)))
            return out

    fake = FakeTensorMode()
    with fake:
        state = {k: torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device="cuda")
                 for k, v in [*module.named_parameters(), *module.named_buffers()]}
        x = torch.empty(shape, device="cuda")
    torch.set_autocast_enabled("cuda", True)
    torch.set_autocast_dtype("cuda", torch.float16)
    torch.autocast_increment_nesting()
    try:
        with torch.no_grad(), fake, Mode():
            torch.func.functional_call(module, state, (x,), {}, strict=False)
    finally:
        torch.autocast_decrement_nesting()
        torch.set_autocast_enabled("cuda", False)
        torch.clear_autocast_cache()
    return ops


def _emulated_ops(module: Any, shape: tuple[int, ...]) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """The same list from llmsim's recorder with the autocast emulation, on meta."""
    state = {k: v.to("meta") for k, v in [*module.named_parameters(), *module.named_buffers()]}
    x = torch.empty(shape, device="meta")
    trace = AutocastTrace(torch, torch.float16, list(state.values()))
    recorded, _ = record(module, lambda: torch.func.functional_call(module, state, (x,), {}, strict=False), "meta",
                         trace)
    return [(op.aten.split(".")[1], tuple(t.dtype for t in op.inputs), tuple(t.dtype for t in op.outputs))
            for op in recorded if not op.is_view]


@pytest.mark.parametrize("build, shape", [(Mixed, (2, 3, 8, 8)), (_small_convnext, (2, 3, 32, 32))],
                         ids=["mixed", "convnext"])
def test_the_emulation_runs_every_op_as_pytorchs_cuda_autocast_does(build: Any, shape: tuple[int, ...]) -> None:
    module = build().eval()
    real = _real_autocast_ops(module, shape)
    assert ("_to_copy", ("float32",), ("float16",)) in real  # the reference does cast: autocast is on
    assert _emulated_ops(module, shape) == real


def test_a_cast_is_a_kernel_reading_float32_and_writing_float16() -> None:
    layer = torch.nn.Linear(64, 32)
    x = torch.empty(128, 64)
    result = analyze(layer, (x,), hardware="h100-sxm", dtype="float32", autocast="float16", engine="transformers")
    casts = [k for k in result.kernels if "_to_copy" in k.kernel.aten]
    # input [128, 64], weight [32, 64], bias [32] each cast once: read 4 bytes, write 2 bytes per element
    assert sorted(k.kernel.bytes_read for k in casts) == [32 * 4, 32 * 64 * 4, 128 * 64 * 4]
    assert sorted(k.kernel.bytes_written for k in casts) == [32 * 2, 32 * 64 * 2, 128 * 64 * 2]
    gemm, = [k for k in result.kernels if "addmm" in k.kernel.aten]
    assert gemm.kernel.dtype == "float16"
    assert result.precision == "fp16" and result.autocast == "float16"
    assert "autocast float16 over float32" in str(result)


def test_a_weight_is_cast_once_per_forward() -> None:
    class Twice(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(16, 16, bias=False)

        def forward(self, x: Any) -> Any:
            return self.fc(self.fc(x))  # the same weight read by two linears: cast once (autocast's cache)

    result = analyze(Twice(), (torch.empty(4, 16),), hardware="h100-sxm", dtype="float32", autocast="float16",
                     engine="transformers")
    weight_casts = [k for k in result.kernels if "_to_copy" in k.kernel.aten and k.kernel.bytes_read == 16 * 16 * 4]
    assert len(weight_casts) == 1


def test_compiled_traces_cast_a_value_once() -> None:
    class ThreeLinears(torch.nn.Module):  # transformers' separate q, k, v projections of one float32 norm output
        def __init__(self) -> None:
            super().__init__()
            self.norm = torch.nn.LayerNorm(32)
            self.q, self.k, self.v = (torch.nn.Linear(32, 32) for _ in range(3))

        def forward(self, x: Any) -> Any:
            h = self.norm(x)
            return self.q(h) + self.k(h) + self.v(h)

    x = (torch.empty(8, 32),)
    eager = analyze(ThreeLinears(), x, hardware="h100-sxm", dtype="float32", autocast="float16",
                    engine="transformers")
    compiled = analyze(ThreeLinears(), x, hardware="h100-sxm", dtype="float32", autocast="float16",
                       engine="torch-compile")
    # eager casts the norm's [8, 32] float32 output for each of the three linears: 3 kernels reading 8 * 32 * 4
    # (the float32 input needs no cast for the norm)
    assert sum(1 for k in eager.kernels if k.kernel.aten == "aten._to_copy.default" and k.kernel.shapes == "[8, 32]"
               and k.kernel.bytes_read == 8 * 32 * 4) == 3
    # compiled: one conversion of the value (Inductor's common subexpression elimination), fused into the norm
    fused = [k for k in compiled.kernels if "native_layer_norm" in k.kernel.aten]
    assert len(fused) == 1 and "_to_copy" in fused[0].kernel.aten


def test_autocast_refusals_name_the_field() -> None:
    x = (torch.empty(2, 4),)
    with pytest.raises(OptionError, match="autocast='int8' is not allowed; choose one of bfloat16, float16"):
        analyze(torch.nn.Linear(4, 4), x, autocast="int8")
    with pytest.raises(OptionError, match="autocast='float16' is traced on the meta device: keep device='meta'"):
        analyze(torch.nn.Linear(4, 4), x, autocast="float16", device="cpu")


def test_a_diffusion_pipeline_traces_under_autocast_too() -> None:
    pytest.importorskip("diffusers")
    from llmsim.trace.diffusion import analyze_pipeline

    plain = analyze_pipeline("vae-sd15", latent=16, hardware="rtx-4090", dtype="float16", engine="transformers")
    amp = analyze_pipeline("vae-sd15", latent=16, hardware="rtx-4090", dtype="float32", autocast="float16",
                           engine="transformers")
    stage = amp.stages[0].result
    assert stage.autocast == "float16" and "autocast float16 over float32" in str(amp)
    # autocast's float32 group norms and the casts around them: more bytes than the same decoder in float16
    assert stage.bytes > plain.stages[0].result.bytes
    assert any("_to_copy" in k.kernel.aten for k in stage.kernels)
