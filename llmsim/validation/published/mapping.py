"""How the rows' free-text fields map onto llmsim: published model, GPU and dtype names onto shipped
models, hardware files and dtype options; the framework each source ran onto an llmsim engine (whose
measured tables time the row); the rows that are in-sample."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...engines.catalog import default_engine_name
from .options import PredictOptions
from .results import SkipError
from .rows import PublishedRow

# published model name -> (shipped llmsim model, note when it is a proxy)
MODELS: dict[str, tuple[str, str | None]] = {
    "Llama-2-7B": ("llama-2-7b", None),
    "llama2-7b": ("llama-2-7b", None),
    "Llama-2-13B": ("llama-2-13b", None),
    "llama2-13b": ("llama-2-13b", None),
    "Llama-2-70B": ("llama-2-70b", None),
    "llama2-70b": ("llama-2-70b", None),
    "Llama-3.1-8B": ("llama-3.1-8b", None),
    "Llama-3-8B": ("llama-3.1-8b", "Llama-3-8B simulated as llama-3.1-8b (identical shapes; only RoPE scaling "
                                   "and context length differ)"),
}


@dataclass(frozen=True)
class GpuChoice:
    """The hardware file a published GPU name maps to, and the other variant when the source is vague."""

    hardware: str
    alternative: str | None = None  # simulated too, shown as a sensitivity
    note: str | None = None  # why this mapping is an inference
    flag: str | None = None  # "V" variant inferred, "H" H800 as H100 SXM


GPUS: dict[str, GpuChoice] = {
    "A100-80GB": GpuChoice("a100-80gb-sxm", "a100-80gb-pcie", "A100 80GB form factor not stated; SXM assumed", "V"),
    "A100-80G (form factor not stated)": GpuChoice("a100-80gb-sxm", "a100-80gb-pcie",
                                                   "A100 80GB form factor not stated; SXM assumed", "V"),
    "H100 (variant not stated)": GpuChoice(
        "h100-sxm", "h100-pcie", "H100 variant not stated; SXM assumed (the source's 1905 GB/s effective "
        "bandwidth is 95% of the PCIe part's 2.0 TB/s peak, implausible there)", "V"),
    "A10G 24GB": GpuChoice("a10g"),
    "A100 40GB (SXM, p4d)": GpuChoice("a100-40gb-sxm"),
    "H800 SXM5": GpuChoice("h100-sxm", None, "H800 SXM5 simulated as h100-sxm: same GH100 die, clocks, FP8/BF16 "
                                             "peaks and 3.35 TB/s HBM3; only NVLink and FP64 are cut", "H"),
    "NVIDIA A100 SXM": GpuChoice("a100-80gb-sxm", None, "40/80 GB not stated; both A100 SXM files have the "
                                                        "same matrix peak and fraction"),
    "NVIDIA A100 PCIe": GpuChoice("a100-80gb-pcie", None, "40/80 GB not stated; both A100 PCIe files have the "
                                                          "same matrix peak and fraction"),
    "NVIDIA H100 SXM": GpuChoice("h100-sxm"),
    "NVIDIA H200 SXM": GpuChoice("h200"),
    "NVIDIA B200 SXM": GpuChoice("b200"),
    "AMD MI300X": GpuChoice("mi300x"),
    "Hopper GPU (FA3 requires H100/H800; exact SKU NOT stated in source)": GpuChoice(
        "h100-sxm", "h100-pcie", "Hopper SKU not stated; H100 SXM assumed (620 TFLOP/s would be 82% of the "
        "PCIe part's 756 TFLOP/s peak, above anything published for it)", "V"),
}

GPU_NOT_SHIPPED: dict[str, str] = {
    "NVIDIA GH200 SXM (900W, 141GiB HBM3e)": "GH200 not shipped (Grace Hopper superchip at 900 W; no hardware file)",
    "NVIDIA GH200 SXM": "GH200 not shipped (Grace Hopper superchip at 900 W; no hardware file)",
    "AMD MI325X (1000W)": "MI325X not shipped (no hardware file)",
}

# published weight dtype -> llmsim dtype options
E2E_DTYPES: dict[str, dict[str, str]] = {
    "bf16": {"weight_dtype": "bf16", "activation_dtype": "bf16"},
    "fp16": {"weight_dtype": "fp16", "activation_dtype": "fp16"},
    "none (fp16)": {"weight_dtype": "fp16", "activation_dtype": "fp16"},
    "int8 weight-only": {"weight_dtype": "int8", "activation_dtype": "bf16"},
    "int4 weight-only g64 (tinygemm)": {"weight_dtype": "int4", "activation_dtype": "bf16"},
    "int4 weight-only g64": {"weight_dtype": "int4", "activation_dtype": "bf16"},
    "fp8 weight-only": {"weight_dtype": "fp8", "activation_dtype": "bf16"},
    "fp8 dynamic act+weight (row-wise)": {"weight_dtype": "fp8", "activation_dtype": "fp8", "kv_dtype": "bf16"},
    "gptq 4-bit": {"weight_dtype": "int4", "activation_dtype": "fp16"},
}

@dataclass(frozen=True)
class EngineChoice:
    """The llmsim engine a row is simulated with, and why; `proxy`: no llmsim engine is the one the source ran,
    so another's measured tables stand in (flag P)."""

    engine: str
    reason: str
    proxy: bool = False


# the row's `framework` -> the llmsim engine that simulates it (one line of reason each)
ENGINES: dict[str, EngineChoice] = {
    "torchao llama generate.py (torch.compile)": EngineChoice(
        "torch-compile", "generate.py compiles the model with torch.compile(mode='reduce-overhead'): llmsim's "
        "torch-compile engine (cuBLAS GEMMs from vLLM's bf16 F.linear table, the rest on the roofline)"),
    "LMDeploy TurboMind": EngineChoice(
        "vllm", "proxy: no llmsim engine is TurboMind (lmdeploy's C++ engine with its own GEMM and attention "
        "kernels); vLLM's measured tables stand in as the nearest serving engine", proxy=True),
    "HF Text Generation Inference (Hugging Face LLM DLC on SageMaker)": EngineChoice(
        "vllm", "proxy: TGI serves with flash/paged attention kernels close to vLLM's; no llmsim engine is TGI",
        proxy=True),
    "PyTorch matmul (mamf-finder.py)": EngineChoice(
        "vllm", "bf16 torch.matmul is the cuBLAS kernel vLLM's bf16 GEMM rows time (torch.nn.functional.linear); "
        "fp8 torch._scaled_mm is cuBLASLt's scaled matmul, which TensorRT-LLM's fp8 rows time (see "
        "SCALED_MM_ENGINE)"),
    "DeepGEMM (JIT CUDA)": EngineChoice(
        "sglang", "SGLang's fp8_block GEMM rows time DeepGEMM itself (aiconfigurator kernel source "
        "'sglang_deepgemm_gemm_nt_f8f8bf16'), with SGLang's per-token-group activation quantisation, which the "
        "rows leave out: its kernel is taken off on the roofline (kernels.group_quant_s)"),
    "tritonbench run_benchmark.py triton --op flash_attention --metrics tflops --d-head 128": EngineChoice(
        "vllm", "vLLM's non-causal (encoder) attention table times FlashAttention-3 (vllm_vit_flash_attn_fa3, "
        "dense, no KV cache), the flash_v3 kernel of these rows; the Triton tutorial kernel's rows read it as a "
        "kernel proxy (flag P)"),
    "FlashAttention-3": EngineChoice("vllm", "vLLM's non-causal (encoder) attention table times FlashAttention-3"),
}
# fp8 torch._scaled_mm (per-tensor scales) calls cuBLASLt; TensorRT-LLM's FP8 linear calls the same library
# (trtllm::cublas_scaled_mm for m > 8, which TensorRT-LLM's unit test test_fp8_scaled_mm checks against
# torch._scaled_mm), so its fp8 rows (static lane: activation scales given, as _scaled_mm takes them) time the
# kernel of the MAMF fp8 rows. Chosen after these rows read -13/-20/-60 % from vLLM's fp8 rows (CUTLASS
# scaled_mm), so the rows informed the choice; the kernel identity decides it.
SCALED_MM_ENGINE = EngineChoice(
    "trtllm", "fp8 torch._scaled_mm is cuBLASLt's scaled matmul: TensorRT-LLM's fp8 rows time the same library "
    "(trtllm::cublas_scaled_mm, tested against torch._scaled_mm)")

# frameworks no llmsim table times: their rows are skipped with the reason
NO_ENGINE: dict[str, str] = {
    "FlashMLA": "no MLA attention table: the shipped attention tables hold head dims 64/128/256, not FlashMLA's "
                "MLA decode (head_dim_k 576, head_dim_v 512), and the row states no shape (an 'up to' peak)",
}


def engine_of(row: PublishedRow, options: PredictOptions) -> EngineChoice:
    """The llmsim engine for the row's framework; an engine given to compare_published wins; a framework with
    no mapping gets llmsim's default GPU engine as a proxy; SkipError for frameworks no table times."""
    given = options.engine_override
    if given is not None:
        return EngineChoice(given, "engine given to compare_published")
    if row.framework in NO_ENGINE:
        raise SkipError(NO_ENGINE[row.framework], "no table for the kernel")
    if row.framework in ENGINES:
        return ENGINES[row.framework]
    default = default_engine_name("gpu")
    return EngineChoice(default, f"proxy: framework {row.framework!r} not mapped; llmsim's default GPU engine",
                        proxy=True)


# The engine each source ran, as llmsim's overhead option (torch.compile in torchao's generate.py
# uses mode="reduce-overhead", i.e. CUDA graphs; TurboMind is a C++ engine with no per-op Python).
OVERHEAD: dict[str, str] = {"torchao": "graph", "lmdeploy": "graph", "HF TGI on SageMaker": "graph"}
DEFAULT_OVERHEAD = "graph"

# torchao's generate.py defaults (pytorch/ao torchao/_models/llama/generate.py, stored version):
# --prompt "Hello, my name is" (BOS + 5 tokens in both Llama tokenizers), --max_new_tokens 200;
# tokens/s = 200 generated tokens / wall time including the prefill.
TORCHAO_PROMPT_LEN, TORCHAO_GEN_LEN = 6, 200

# Rows whose figure set the hardware file's achievable fraction (read from the [efficiency] sources): in-sample
# only where the row's prediction uses that fraction, i.e. comes from the roofline (not a measured table).
IN_SAMPLE: dict[str, str] = {
    "M0311": "a100-*-sxm matmul fraction 0.87 = M0311",
    "M0312": "a100-*-pcie matmul fraction 0.81 = M0312",
    "M0313": "h100-sxm/h200 matmul fraction 0.80 = M0313",
    "M0315": "b200 matmul fraction 0.78 = M0315",
    "M0316": "mi300x matmul fraction 0.51 = M0316",
    "M0336": "h100-sxm memory fraction 0.90 = M0336",
}


def gpu_choice(row: PublishedRow) -> GpuChoice:
    """The hardware file(s) for the row's GPU; SkipError when none is shipped."""
    if row.gpu in GPU_NOT_SHIPPED:
        raise SkipError(GPU_NOT_SHIPPED[row.gpu], "GPU not shipped")
    if row.gpu not in GPUS:
        raise SkipError(f"GPU {row.gpu!r} does not map to a shipped hardware file", "GPU not shipped")
    return GPUS[row.gpu]


def overhead_of(row: PublishedRow) -> str:
    """llmsim's overhead option for the engine the row's source ran."""
    return OVERHEAD.get(row.source_group, DEFAULT_OVERHEAD)


# Sources whose engine launches its prefill kernels without Python between them, whatever proxy engine times
# them: TurboMind is C++ (no per-op Python), so its prefill pays launches only, not the proxy vLLM's host
# dispatch per kernel of an uncaptured Python pass (ExecutionOptions.prefill_dispatch_s).
PREFILL_DISPATCH_S: dict[str, float] = {"lmdeploy": 0.0}


def host_options_of(row: PublishedRow) -> dict[str, Any]:
    """The overhead options of the engine the row's source ran: overhead, and prefill_dispatch_s where the
    source's engine differs from the proxy's."""
    options: dict[str, Any] = {"overhead": overhead_of(row)}
    if row.source_group in PREFILL_DISPATCH_S:
        options["prefill_dispatch_s"] = PREFILL_DISPATCH_S[row.source_group]
    return options


def short_source(source: str) -> str:
    """The source group's name as the report's tables show it."""
    return source.replace(" (pytorch/benchmark)", "").replace("HF TGI on SageMaker", "TGI/SageMaker")
