"""The engines llmsim knows: what each runs (kernels, fusion, overheads) and which measured tables apply.

An engine supplies defaults; an option the user passes explicitly wins over the engine's. Every figure an
engine adds carries its source. Engines with measured tables (`kernels/<device>/<tables>/`) time the ops
those tables cover from the measurements and the others from the roofline with the hardware file's
achievable fractions; where a device has no tables for the engine, every op falls back to the roofline and
the result says why.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import check_choice


class Engine(BaseModel):
    """One serving or execution engine."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    description: str
    tables: str | None = None  # the measured table set (kernels/<device>/<tables>/); None: roofline only
    table_families: tuple[str, ...] | None = None  # a subset of the set's families; None: all of them
    table_note: str = ""  # why these tables fit this engine
    cost: dict[str, Any] = {}  # CostOptions defaults
    execution: dict[str, Any] = {}  # ExecutionOptions defaults
    serves_float32_as: str | None = None  # dtype="auto": a float32 checkpoint run in this dtype (models.dtype_default)
    step_host_note: str = ""  # the source of execution["step_host_s"] (or why the engine has none)
    prefill_dispatch_note: str = ""  # the source of execution["prefill_dispatch_s"] (none: prefill replays graphs)
    device_types: tuple[str, ...] = ("gpu", "cpu")  # where it runs (TensorRT-LLM: NVIDIA GPUs only)
    vendors: tuple[str, ...] | None = None  # the hardware vendors it runs on (HardwareSpec.vendor); None: any


_SERVING_COST = {"attention": "flash", "fusion": "elementwise", "mla": "absorb", "kv_cache": "paged",
                 "logits": "last", "fused_projections": True}
# gated DeltaNet prefill: SGLang and TensorRT-LLM run FLA's Triton chunked kernels (their measured prefill_gdn rows:
# kernel source chunk_gated_delta_rule); vLLM runs FlashInfer's fused kernel on the GPUs its tables cover (kernel
# source chunk_gated_delta_rule_flashinfer; approximation: its Triton fallback on L40S and RTX PRO is FLA's too)
_FLA = {"linear_attention_kernel": "fla"}
_SERVING_NOTE = ("{name} fuses the QKV and gate/up projections into one GEMM each (fused_projections), runs fused "
                 "add+RMSNorm and activation kernels, paged flash attention and CUDA graphs")

# The host work per engine step that the GPU waits for (one "engine.step" op per forward pass), from public
# profiles of each engine; none is fitted to a validation set. approximation: a fixed time per step; the
# per-request part (vLLM: update_from_output about 1.1 us per running request, PR #46112: 0.142 ms at 128
# requests, 0.287 ms at 256) is left out, at most 0.3 ms at 256 requests.
_VLLM_STEP = {"engine_step": True}
_VLLM_STEP_S = 0.4e-3
_VLLM_STEP_NOTE = ("0.4 ms host work per step on the GPU's critical path with async scheduling on: vllm-project/vllm "
                   "PR #42131 (2026-05, B200): schedule() about 0.2 ms, the model runner's _update_states about "
                   "0.18 ms and decode input preparation about 0.05 ms per decode step, about 30 % of TPOT on its "
                   "workload")
_TRTLLM_STEP_S = 0.58e-3
_TRTLLM_STEP_NOTE = ("0.58 ms host work per iteration left as GPU idle with the overlap scheduler on: NVIDIA/"
                     "TensorRT-LLM issue #13957 (2026-05, Llama-3.1-8B-FP8 on B200, concurrency 64)")
_SGLANG_STEP_NOTE = ("none: SGLang's overlap scheduler leaves no GPU idle between decode batches (lmsys.org blog "
                     "2024-12-04, SGLang v0.4, Nsight timeline); no public per-step figure for current versions")

# The host time per kernel of a forward pass the engine runs without a CUDA graph: its prefill and mixed steps
# (ExecutionOptions.prefill_dispatch_s). Each engine replays CUDA graphs for decode batches only: vLLM V1 captures
# batches of up to min(2 x max_num_seqs, 512) tokens (vllm-project/vllm PR #20628) and runs larger ones compiled
# but uncaptured; SGLang runs extend (prefill) batches eagerly unless its piecewise prefill graph is switched on
# (sgl-project/sglang PR #10062: opt-in); TensorRT-LLM's generation-only CUDA graphs leave context and mixed
# iterations uncaptured (TensorRT-LLM docs, "Torch Compile & Piecewise CUDA Graph": piecewise graphs, off by
# default, "only handle context-only and mixed context+generation iterations"). Each figure is one public
# measurement divided by the kernels llmsim counts for that pass; none is fitted to a validation set.
# approximation: a fixed host time per kernel llmsim counts (an engine launching more, smaller kernels than llmsim's
# fused count spends its host time over those). vLLM replays its piecewise graphs for passes of up to 512 tokens
# (prefill_graph_tokens; approximation: its attention, run between the pieces, is priced as replayed too).
_VLLM_PREFILL_DISPATCH_S = 44.5e-6
_VLLM_GRAPH_TOKENS = 512  # min(2 x max_num_seqs, 512) at its default max_num_seqs (256 or 1024): PR #20628
_VLLM_PREFILL_NOTE = ("vllm-project/vllm issue #45709 (2026-08): Qwen3-30B-A3B bf16, TP4 on 4x L20, vLLM 0.28.1rc1, "
                      "torch.compile with cudagraph_mode=NONE: TPOT 34.4 ms at 8 clients (11.8 ms with PIECEWISE "
                      "graphs); 34.4 ms / the 773 kernels llmsim counts for that decode step = 44.5 us per kernel")
_SGLANG_PREFILL_DISPATCH_S = 62.2e-6
_SGLANG_PREFILL_NOTE = ("sgl-project/sglang PR #12160 (2025-10): DeepSeek-V3 prefill of 1 new token, 'forward cost' "
                        "82.6 ms eager (23.1 ms with a prefill CUDA graph); 82.6 ms / the 1,329 kernels llmsim counts "
                        "for that pass at TP8 (its q_a and kv_a projections one GEMM) = 62.2 us per kernel "
                        "(approximation: the pass taken as host-bound; the PR states no GPU or TP)")
_TRTLLM_PREFILL_DISPATCH_S = 35e-6
_TRTLLM_PREFILL_NOTE = ("NVIDIA/TensorRT-LLM PR #12653 (2026-04): in its PyTorch flow 'small kernels (~24us) are "
                        "shorter than CPU dispatch interval (~35us)' (8 GPUs, LTX-2): 35 us per kernel")

# Where the engines as modelled here run (CUDA or HIP graphs, GPU kernels): vLLM and SGLang on NVIDIA GPUs and on
# AMD's with ROCm (docs.vllm.ai "GPU" installation: CUDA and ROCm; docs.sglang.ai "AMD GPUs"); TensorRT-LLM on NVIDIA
# GPUs only; torch.compile on any device (Inductor has a CPU backend too; CUDA graphs where there are GPU kernels).
# approximation: vLLM's and SGLang's CPU, TPU and Intel XPU backends run other kernels and no GPU graphs, so they
# are not modelled: refused on a CPU or an Intel device.
_CUDA_OR_ROCM: dict[str, Any] = {"device_types": ("gpu",), "vendors": ("nvidia", "amd")}

ENGINES: dict[str, Engine] = {
    "vllm": Engine(
        name="vllm", description=_SERVING_NOTE.format(name="vLLM"), tables="vllm",
        table_note="aiconfigurator-core's vLLM tables (GEMM, attention, fused MoE, custom all-reduce)",
        cost={**_SERVING_COST, **_VLLM_STEP}, execution={"overhead": "graph", "step_host_s": _VLLM_STEP_S,
                                                         "prefill_dispatch_s": _VLLM_PREFILL_DISPATCH_S,
                                                         "prefill_graph_tokens": _VLLM_GRAPH_TOKENS},
        serves_float32_as="bfloat16", step_host_note=_VLLM_STEP_NOTE, prefill_dispatch_note=_VLLM_PREFILL_NOTE,
        **_CUDA_OR_ROCM),
    "sglang": Engine(
        name="sglang", description=_SERVING_NOTE.format(name="SGLang"), tables="sglang",
        table_note="aiconfigurator-core's SGLang tables", cost={**_SERVING_COST, **_FLA},
        execution={"overhead": "graph", "prefill_dispatch_s": _SGLANG_PREFILL_DISPATCH_S},
        serves_float32_as="bfloat16", step_host_note=_SGLANG_STEP_NOTE, prefill_dispatch_note=_SGLANG_PREFILL_NOTE,
        **_CUDA_OR_ROCM),
    "trtllm": Engine(
        name="trtllm", description=_SERVING_NOTE.format(name="TensorRT-LLM"), tables="trtllm",
        table_note="aiconfigurator-core's TensorRT-LLM tables", cost={**_SERVING_COST, **_VLLM_STEP, **_FLA},
        execution={"overhead": "graph", "step_host_s": _TRTLLM_STEP_S,
                   "prefill_dispatch_s": _TRTLLM_PREFILL_DISPATCH_S},
        serves_float32_as="bfloat16", step_host_note=_TRTLLM_STEP_NOTE, prefill_dispatch_note=_TRTLLM_PREFILL_NOTE,
        device_types=("gpu",), vendors=("nvidia",)),
    "torch-compile": Engine(
        name="torch-compile",
        description="gpt-fast / torchao generate.py style: torch.compile with CUDA graphs (mode='reduce-overhead'), "
        "Inductor-fused element-wise chains, PyTorch SDPA flash attention, the config's own projections",
        tables="vllm", table_families=("gemm",),
        table_note="GEMMs only: PyTorch's F.linear (cuBLAS) is the kernel vLLM's bf16 GEMM rows time "
        "('torch.nn.functional.linear' in aiconfigurator's vLLM tables); attention and the rest from the roofline",
        cost={"attention": "flash", "fusion": "elementwise", "kv_cache": "paged", "logits": "last"},
        # torchao's float8 (Float8DynamicActivationFloat8Weight) computes activation scales per call
        execution={"overhead": "graph", "fp8_scales": "dynamic"}, serves_float32_as="bfloat16"),
    "transformers": Engine(
        name="transformers",
        description="eager PyTorch as transformers' generate() runs it (and `llmsim validate`): one kernel per "
        "PyTorch op, framework dispatch per op, DynamicCache concatenation",
        tables="vllm", table_families=("gemm",),
        table_note="GEMMs only: F.linear (cuBLAS) is the kernel vLLM's bf16 GEMM rows time; the rest from the "
        "roofline",
        cost={"attention": "flash", "fusion": "eager", "kv_cache": "concat", "mla": "expand", "logits": "last"},
        execution={"overhead": "eager"}),
    "roofline": Engine(
        name="roofline", description="the datasheet speed of light: peak FLOP/s and bandwidth, no measured tables "
        "(pass efficiency='achievable' for the hardware file's achievable fractions instead)",
        execution={"efficiency": "peak"}),
}
ENGINE_NAMES = tuple(ENGINES)


def get_engine(name: str, device_type: str | None = None, vendor: str | None = None) -> Engine:
    """The engine of that name; an unknown name, or one that does not run on `device_type` ("gpu" or "cpu") of
    `vendor` (HardwareSpec.vendor; "unknown" is refused by none), is refused listing the allowed ones."""
    check_choice("engine", name, ENGINE_NAMES)
    engine = ENGINES[name]
    if device_type is not None and not runs_on(engine, device_type, vendor):
        from ..errors import OptionError

        device = f"{'an' if vendor in ('amd', 'intel') else 'a'} {vendor} {device_type}" if vendor not in (
            None, "unknown") else f"a {device_type}"
        where = f"{' and '.join(engine.vendors or ())} {'/'.join(engine.device_types)}s".strip()
        runs = [e.name for e in ENGINES.values() if runs_on(e, device_type, vendor)]
        raise OptionError(f"engine={name!r} runs on {where} only, not on {device}; choose one of {', '.join(runs)}")
    return engine


def runs_on(engine: Engine, device_type: str, vendor: str | None = None) -> bool:
    """Whether `engine` runs on a `device_type` device of `vendor` (None or "unknown": any vendor)."""
    if device_type not in engine.device_types:
        return False
    return engine.vendors is None or vendor in (None, "unknown") or vendor in engine.vendors


def default_engine_name(device_type: str, vendor: str | None = None) -> str:
    """vllm on GPUs it runs on; transformers (eager PyTorch) elsewhere (CPUs, where no serving engine's tables
    exist; GPUs of other vendors)."""
    return "vllm" if runs_on(ENGINES["vllm"], device_type, vendor) else "transformers"


def engine_on(name: str | None, hardware: Any) -> Engine:
    """The engine `name` checked against a HardwareSpec's device type and vendor; None: that device's default."""
    vendor = hardware.vendor
    return get_engine(name if name is not None else default_engine_name(hardware.device_type, vendor),
                      hardware.device_type, vendor)


def check_tables_device(hw: Any, tables: str | None) -> None:
    """Tables read from a folder (`llmsim calibrate --from aiconfigurator --out DIR`) time the GPU they were
    measured on: an L40S's tables on an MI300X would time every kernel as the L40S ran it, and say so only in the
    provenance lines. Refused, by the files' `system`: tables of a GPU llmsim ships a device for, on any other
    shipped device; tables of a GPU it ships none for (aiconfigurator's b60, a30, ...), on any shipped device;
    GPU tables on a CPU. A hardware file of the user's own (a name llmsim does not ship) with GPU tables is taken
    as given: the user paired them."""
    from pathlib import Path

    from ..errors import OptionError
    from ..hardware.measured import TABLE_SIBLINGS, load_measured, measured_for
    from ..shipped import shipped_hardware_names
    from .aiconfigurator import SYSTEMS

    device = hw.name
    if not tables or measured_for(device, tables) is not None or not Path(tables).is_dir():
        return
    shipped, cpu = device in shipped_hardware_names(), hw.device_type == "cpu"
    for table in load_measured(str(Path(tables).resolve())).tables.values():
        system = table.provenance.get("system")
        if system is None or not (shipped or cpu):
            continue
        gpu = table.provenance.get("gpu", system)
        if cpu:
            raise OptionError(f"tables={tables!r}: GPU kernels measured on {gpu} (system {system}) cannot time "
                              f"the CPU {device!r}; drop tables= (`llmsim calibrate` measures this CPU)")
        if system in SYSTEMS and SYSTEMS[system] == TABLE_SIBLINGS.get(device):  # the same die: scaled
            continue
        if system in SYSTEMS and SYSTEMS[system] != device:
            raise OptionError(f"tables={tables!r}: measured on {gpu} (system {system}, llmsim hardware "
                              f"{SYSTEMS[system]!r}), not on {device!r}; simulate --hardware {SYSTEMS[system]} or "
                              f"import tables of {device}")
        if system not in SYSTEMS:
            raise OptionError(f"tables={tables!r}: measured on {gpu} (system {system}), a GPU llmsim ships no "
                              f"hardware file for, not on {device!r}; tables time only the GPU they were measured "
                              f"on: give a hardware file of {gpu} (llmsim calibrate, or a copy of a shipped one "
                              "with its figures) under a name of its own")
