"""Measured kernel times inside the roofline: an op a measured table covers takes the table's time.

An op that names a kernel (`Op.kernel_key`, with its workload coordinates in the formulas `kernel_x` and
`kernel_y`) is looked up in the engine's tables for the device:
    ("gemm", dtype, K)                                   x = M rows, y = N columns (read per dtype: z = K)
    ("moe", dtype, topk, experts, hidden, inter, tp, ep, share, routing)   x = tokens; time = the routing's
                                                         rows x share (balanced rows x routing_factor(x, topk, E))
    ("prefill_attention", kv_dtype, head_dim, heads, kv_heads, window, chunked)   x = batch, y = prompt tokens
    ("decode_attention", kv_dtype, head_dim, heads, kv_heads)     x = batch, y = keys attended
    ("encoder_attention", head_dim, heads)               non-causal, bf16: x = batch, y = tokens per sequence
    ("prefill_mla" | "decode_mla", kv_dtype, heads)      DeepSeek-shaped MLA, as the attention ones
    ("prefill_gdn", kernel, dk, dv, conv, k_heads, v_heads, act_dtype)   x = batch, y = prompt tokens
    ("decode_gdn", kernel, dk, dv, conv, k_heads, v_heads, act_dtype)    x = tokens of the step (one per sequence)
    ("unmeasured", why)                                  no table: the op stays on the roofline and says why
Its roofline terms (compute_s and memory_s, as the hardware file derates them) are then both scaled by
measured / roofline, so the op's time is the measured time and its bound stays the larger roofline term.
An op no table covers keeps the roofline; `reason` says why, per op.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from ..cost.formulas.matmul import experts_read_fraction
from ..hardware.kernel_table import GridTable
from ..hardware.measured import (
    DEEPEP_LOW_LATENCY_LANE,
    DEEPEP_NORMAL_LANE,
    FABRIC_SIBLINGS,
    MARLIN_MXFP4_LANE,
    MIN_LATENCY_LANE,
    MeasuredKernels,
    measured_for,
    prefill_window_factor,
    shipped_kernel_sets,
)

# MXFP4 experts with 16-bit activations (gpt-oss's checkpoint) that an engine runs with MXFP8 activations instead
# where its tables measured that lane (the Blackwell GPUs): TensorRT-LLM's deployment guide for GPT-OSS lists
# MXFP8 activations x MXFP4 weights on its TRTLLM MoE backend, the default on B200/GB200/B300/GB300 (BF16 x MXFP4
# with TRITON on H200); vLLM's and SGLang's measured lanes keep 16-bit activations.
MXFP8_ACTIVATION_ENGINES = {"trtllm": "MXFP8 activations x MXFP4 experts, TensorRT-LLM's default TRTLLM MoE "
                            "backend on Blackwell (deployment guide for GPT-OSS)"}
# NVFP4 experts at up to 128 tokens per call run TensorRT-LLM's min-latency MoE kernel where its tables measured
# one (B200): the DeepSeek-V3 decoder layer takes min_latency_mode at hidden_states.size(0) <= 128 with NVFP4
# weights (NVIDIA/TensorRT-LLM tensorrt_llm/_torch/models/modeling_deepseekv3.py), and aiconfigurator-core reads
# its moe_torch_flow_min_latency rows for gated NVFP4 MoE at num_tokens <= 128 on TensorRT-LLM (aic-core
# operators/moe.rs). approximation: TensorRT-LLM's own rule also asks for tensor parallelism without attention
# data parallelism; the threshold is applied to the tokens of each MoE call, as aiconfigurator applies it.
MIN_LATENCY_MAX_TOKENS = 128
MIN_LATENCY_NOTE = "TensorRT-LLM's min-latency NVFP4 MoE kernel at <= 128 tokens per call (its default kernel above)"
ROUTING_NOTES = {
    "balanced": ("balanced rows read with independent routing: x the experts T tokens read on average over those "
                 "the rows spread them on, (1 - (1 - k/E)^T) / min(1, T k / E)"),
    "power_law_1.01": "power_law_1.01 rows (expert loads drawn from a power law of exponent 1.01)",
    "power_law_1.2": "power_law_1.2 rows (expert loads drawn from a power law of exponent 1.2)",
}
# approximation: a fused MoE split over tp x ep GPUs reads, per GPU, E/ep experts of inter/tp width; split instead as
# tp' x ep' with tp' ep' = tp ep it reads E/ep' experts of inter/tp' width: the same weights and FLOPs per GPU at
# balanced routing, in other GEMM shapes (narrower N, or fewer and wider experts)
SPLIT_NOTE = "the same expert weights and FLOPs per GPU, another split of them; approximation"
MXFP8_KERNEL_NOTE = ("MXFP8 activations x MXFP4 experts on FlashInfer's TRTLLM-gen MoE kernel (vLLM's "
                     "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1)")
MARLIN_NOTE = "Marlin MXFP4 MoE kernel (vLLM's VLLM_MXFP4_USE_MARLIN=1)"
# TensorRT-LLM's `moe_config: backend: TRTLLM` runs block-scaled fp8 experts on the TRTLLM-gen fused-MoE kernels
# (torch.ops.trtllm.fp8_block_scale_moe_runner), which FlashInfer ships and vLLM 0.24.0 runs on Blackwell
# (aiconfigurator's vLLM B200/B300/GB200/GB300 rows: kernel sources vllm_fp8moe_flashinfer_trtllm_*); the package
# times TensorRT-LLM's own block-fp8 MoE on DeepGEMM only. approximation: the same kernel family measured under
# another engine; read at expert tensor parallelism only (ep 1), where every engine's rows count the same tokens
# (at ep > 1 the engines' collectors disagree: TRTLLM-gen 5.7x DeepGEMM at 4096 tokens, tp 1 x ep 8, on the B200)
TRTLLM_GEN_FP8_BLOCK_NOTE = ("FlashInfer's TRTLLM-gen FP8 block-scale MoE kernel (TensorRT-LLM's moe_config backend "
                             "TRTLLM), as vLLM's rows of this device time it")
# SGLang's DeepEP experts (fp8_block_moe_kernel "deepep-normal" / "deepep-low-latency"): the lane of SGLang's
# tables of the device (aiconfigurator's wide-EP rows, hardware.measured.DEEPEP_NORMAL_LANE), read at the call's
# tokens; its EP sizes are 2, 4, 16, 32, ... (the package measured no 8), so an EP size between two measured ones
# reads the two at the same tokens, geometric in the EP size (deepep_moe_grid)
DEEPEP_LANES = {"deepep-normal": DEEPEP_NORMAL_LANE, "deepep-low-latency": DEEPEP_LOW_LATENCY_LANE}
DEEPEP_NOTE = {"deepep-normal": "SGLang's DeepEP experts in normal mode (DeepGEMM grouped GEMMs, contiguous layout; "
                                "--moe-a2a-backend deepep --deepep-mode normal), its wide-EP rows",
               "deepep-low-latency": "SGLang's DeepEP experts in low-latency mode (DeepGEMM masked grouped GEMMs; "
                                     "--deepep-mode low_latency), its wide-EP rows"}
FAMILY_OF = {"gemm": "gemm", "moe": "moe", "prefill_attention": "prefill_attention",
             "decode_attention": "decode_attention", "encoder_attention": "encoder_attention",
             "prefill_mla": "prefill_mla", "decode_mla": "decode_mla", "prefill_gdn": "prefill_gdn",
             "decode_gdn": "decode_gdn"}
# A head dim the non-causal (encoder) table lacks (aiconfigurator measured the ViT dims 64, 72, 80) is carried over
# from the nearest measured dim D0 with the same engine's causal prefill table: time x causal(D) / causal(D0) at
# the same batch, tokens and heads. approximation: the head dim changes a flash kernel's time alike with or without
# the causal mask (the tile shapes and FLOPs per (query, key) pair it sets are the same). FlashAttention-3's paper
# (arXiv:2407.08608, H100 SXM5, BF16 forward) measures both rising with the head dim: at 16k tokens 497 -> 648
# TFLOP/s non-causal from head dim 64 to 128 (1.30x), and this device's causal table 447 -> 605 (1.35x); holding
# the TFLOP/s of D0 instead would read head dim 128 a quarter slow.
ENCODER_HEAD_DIM_NOTE = ("head dim {dim} read from the measured {d0} x the causal prefill table's time ratio "
                         "{dim}/{d0} at the same batch, tokens and heads (approximation: the head dim changes the "
                         "kernel's time alike with or without the causal mask)")
# a head dim below the smallest measured one (SD 1.5's 40): FlashAttention rounds the head dim up to a kernel it
# instantiates, 64 the smallest (flash-attention's hopper/flash_api.cpp round_up_headdim: <= 64 -> 64; FA2's
# csrc/flash_attn/flash_api.cpp: round_multiple(head_size, 32) -> 64 for 33..64), so it runs that kernel's time
ENCODER_PADDED_NOTE = ("head dim {dim} read at the measured {d0}: FlashAttention runs a head dim of {dim} in its "
                       "{d0} kernel, padded (round_up_headdim)")
# the KV-cache dtypes attention tables are read for (an fp8 cache without fp8 rows reads the bf16 ones, noted)
MEASURED_CACHE_DTYPES = ("bf16", "fp8")
# activation dtypes the Gated DeltaNet tables time (their q, k, v are bf16; fp16 runs the same kernels, and fp8
# checkpoints quantize only the GEMMs around them)
_GDN_ACTIVATIONS = ("bfloat16", "float16", "fp8")


# GEMM lanes the static per-tensor fp8 rows stand in for where an engine and device lack them (how the note
# names those rows)
_FP8_STAND_IN = {"fp8_block": "per-tensor", "fp8_dynamic": "static-scale"}
# Weight-only lanes no package measures, read from the measured lane of the same weight width (approximation:
# an fp8 weight-only GEMM dequantizes 8-bit weights to 16 bits on load as the int8 weight-only kernel does, and
# reads the same bytes; the two conversions cost alike next to the weight traffic)
_WEIGHT_ONLY_STAND_IN = {"fp8_wo": "int8_wo"}


class MeasuredTiming:
    """The measured tables an engine's ops are timed from on one device (a subset of families, or all)."""

    def __init__(self, kernels: MeasuredKernels, families: tuple[str, ...] | None, fp8_scales: str = "static",
                 mxfp4_moe_kernel: str = "default", fp8_block_moe_kernel: str = "default",
                 sibling_of: str | None = None, moe_routing: str = "model") -> None:
        self.kernels = kernels
        # the device these tables stand in for (TABLE_SIBLINGS: read with the roofline ratio), or None: its own
        self.sibling_of = sibling_of
        self.fp8_scales = fp8_scales  # per-tensor fp8 GEMMs: the static lane, or fp8_dynamic
        self.mxfp4_moe_kernel = mxfp4_moe_kernel  # MXFP4 experts: the engine's default kernel, or "marlin"
        self.fp8_block_moe_kernel = fp8_block_moe_kernel  # block fp8 experts: the default kernel, or "trtllm-gen"
        self.moe_routing = moe_routing  # MoE rows read: "model" (MoESpec.routing), or a load of ROUTING_NOTES
        self.families = tuple(f for f in kernels.families if families is None or f in families)
        self.all_families = families is None  # may another engine's table of the device stand in (MLA)
        self._lookups: dict[tuple, Any] = {}
        self._remembered: dict[int, tuple[Any, Any]] = {}  # id(owner) -> (owner, value): the owner kept alive

    def remembered(self, owner: Any, make: Any) -> Any:
        """make(), once per owner object (bounded: forgets all past 256 owners)."""
        found = self._remembered.get(id(owner))
        if found is None or found[0] is not owner:
            if len(self._remembered) >= 256:
                self._remembered.clear()
            found = self._remembered[id(owner)] = (owner, make())
        return found[1]

    def label(self, family: str) -> str:
        return f"{self.kernels.engine} {family} table"

    def lookup(self, key: tuple) -> tuple[Any, str, str | None]:
        """(a function (x, y, z) -> seconds, or None; the table it reads or why none applies; the source name
        when it is not this engine's own table), made once per key."""
        if key not in self._lookups:
            self._lookups[key] = self._find(key)
        return self._lookups[key]

    def _find(self, key: tuple) -> tuple[Any, str, str | None]:
        family = FAMILY_OF.get(key[0])
        if key[0] == "unmeasured":  # ("unmeasured", why): an op that would be a measured kernel, and why none is
            return None, key[1], None
        if family is None:
            return None, f"{key[0]}: no measured table family in llmsim yet (roofline)", None
        if family in ("prefill_mla", "decode_mla", "prefill_attention", "decode_attention") and (
                key[1] not in MEASURED_CACHE_DTYPES):
            return None, (f"no {family.replace('_', ' ')} table for {key[1]} KV caches (the tables time "
                          f"{' and '.join(MEASURED_CACHE_DTYPES)} caches; engine {self.kernels.engine} on "
                          f"{self.kernels.device})"), None
        if family in ("prefill_mla", "decode_mla") and family not in self.kernels.tables and self.all_families:
            proxy = _proxy_mla(self.kernels.device, self.kernels.engine, family, tuple(key[1:]))
            if proxy is not None:
                other, grid = proxy
                return TableRead(grid, 2), (
                    f"{other} {family} table, a proxy: aiconfigurator ships no op-level MLA table for "
                    f"{self.kernels.engine}; {other}'s MLA kernels (FlashMLA-style absorbed decode, FlashAttention "
                    f"prefill) stand in (approximation)"), f"{other} {family} (proxy)"
        if family not in self.kernels.tables and family != "gemm":
            return None, f"no {family} table for engine {self.kernels.engine} on {self.kernels.device}", None
        if family not in self.families:
            only = "/".join(self.families)
            return None, f"{family}: on the roofline (this engine reads only the {only} tables)", None
        if family not in self.kernels.tables and family != "gemm":
            return None, f"no {family} table for engine {self.kernels.engine} on {self.kernels.device}", None
        k = self.kernels
        if family == "gemm":  # key ("gemm", dtype): K comes as z
            dtype = key[1]
            # the lane read: per-tensor fp8 with activation scales computed per call has rows of its own
            lane = "fp8_dynamic" if dtype == "fp8" and self.fp8_scales == "dynamic" else dtype
            grid = k.gemm_table_named(lane)
            if grid is not None:
                note = "; fp8_dynamic rows (scales per call)" if lane == "fp8_dynamic" else ""
                if lane == "nvfp4" and "nvfp4" in k.tables["gemm"].provenance:  # the importer's tuned stand-in
                    note = (f"; nvfp4 rows: the fastest nvfp4 kernel measured on {k.device}, standing in for the "
                            f"tactic {k.engine}'s AutoTuner picks (its own rows, nvfp4_fallback, time the untuned "
                            "fallback)")
                return TableRead(grid, 3), self.label("gemm") + note, None
            stand_in = _FP8_STAND_IN.get(lane)
            if stand_in is not None and k.gemm_table_named("fp8") is not None:  # the static per-tensor kernel
                return TableRead(k.gemm_table_named("fp8"), 3), (
                    self.label("gemm") + f"; fp8 {stand_in} rows (no {lane} rows for this engine and device)"), None
            read = _WEIGHT_ONLY_STAND_IN.get(dtype, dtype)  # the measured lane read for it
            instead = f"; {read} rows stand in for {dtype} (no {dtype} kernel is measured)" if read != dtype else ""
            if read != dtype and k.gemm_table_named(read) is not None:
                return TableRead(k.gemm_table_named(read), 3), self.label("gemm") + instead, None
            proxy = _proxy_gemm(k.device, k.engine, read)
            ratio = _relative_gemm(k, read) if proxy is None else None
            if ratio is not None:
                other, grid = ratio
                return (lambda x, y, z: grid.time_s(x, y, z)), (
                    f"{other} {read}/bf16 time ratio x this engine's bf16 gemm table (approximation: no {read} "
                    f"GEMM table on {k.device}; the dequantizing kernel's speed relative to the bf16 GEMM of the "
                    f"same shape as measured on {other.split()[0]}){instead}"), (
                    f"{k.engine} gemm x {other} {read} ratio (proxy)")
            if proxy is None:
                hint = " (fp8 weights with 16-bit activations are weight-only; pass activation_dtype='fp8' for " \
                       "W8A8 GEMMs)" if dtype == "fp8_wo" else ""
                return None, f"no {dtype} GEMM table for engine {k.engine} on {k.device}{hint}", None
            other, grid = proxy
            return TableRead(grid, 3), (
                f"{other} gemm table ({read}), a proxy: {k.engine} has no {read} GEMM table on {k.device}{instead}"), (
                f"{other} gemm (proxy)")
        if family == "moe":
            _, dtype, topk, experts, hidden, inter, tp, ep, share, routing = key
            if self.moe_routing != "model":
                routing = self.moe_routing
            label = self.label("moe")
            routing_note = ROUTING_NOTES[routing]  # the rows read, said with every MoE read

            def read(grid: Any) -> TableRead:
                # balanced rows: x the experts independent routing reads; power-law rows drew their own loads
                return TableRead(grid, 1, share=share, routing=(topk, experts) if routing == "balanced" else None)

            missed = ""  # the kernel mxfp4_moe_kernel or fp8_block_moe_kernel asked for, where no rows time it
            if dtype == "mxfp4_wo" and self.mxfp4_moe_kernel == "mxfp8" and k.engine not in MXFP8_ACTIVATION_ENGINES:
                grid, split = moe_split_table(k, "mxfp4_mxfp8", topk, experts, hidden, inter, tp, ep, routing)
                if grid is not None:
                    return read(grid), f"{label}; {MXFP8_KERNEL_NOTE}{split}; {routing_note}", None
                other = _other_engine_grid(k.device, k.engine, lambda kernels: kernels.moe_table(
                    "mxfp4_mxfp8", topk, experts, hidden, inter, tp, ep, routing), first="trtllm")
                if other is not None:
                    return read(other[1]), (f"{other[0]} moe table (mxfp4_mxfp8), a proxy: {MXFP8_KERNEL_NOTE}, "
                                            f"measured under {other[0]} (no {k.engine} rows at this shape); "
                                            f"{routing_note}"), f"{other[0]} moe (proxy)"
                missed = f"mxfp4_moe_kernel='mxfp8' but no mxfp4_mxfp8 MoE rows for this shape on {k.device}"
            if dtype == "mxfp4_wo" and k.engine in MXFP8_ACTIVATION_ENGINES:
                grid, split = moe_split_table(k, "mxfp4_mxfp8", topk, experts, hidden, inter, tp, ep, routing)
                if grid is not None:  # measured on this device: its Blackwell lane
                    return read(grid), f"{label}; {MXFP8_ACTIVATION_ENGINES[k.engine]}{split}; {routing_note}", None
            if dtype == "mxfp4_wo" and self.mxfp4_moe_kernel == "marlin":
                found = marlin_moe_grid(k, topk, experts, hidden, inter, tp, ep, routing)
                if found is not None:
                    grid, how = found
                    return read(grid), f"{label}; {MARLIN_NOTE}{how}; {routing_note}", None
                missed = (f"mxfp4_moe_kernel='marlin' but no Marlin MoE rows at tp {tp}, ep {ep} (engine {k.engine} "
                          f"on {k.device})")
            if dtype == "fp8_block" and self.fp8_block_moe_kernel == "trtllm-gen":
                found = trtllm_gen_fp8_block_moe(k.device, topk, experts, hidden, inter, tp, ep, routing)
                if found is not None:
                    if k.engine == "vllm":  # its own rows time that kernel
                        return read(found), f"{label}; {TRTLLM_GEN_FP8_BLOCK_NOTE}; {routing_note}", None
                    return read(found), (f"vllm moe table (fp8_block), a proxy: {TRTLLM_GEN_FP8_BLOCK_NOTE}; "
                                         f"{routing_note}"), "vllm moe (proxy)"
                missed = (f"fp8_block_moe_kernel='trtllm-gen' but no TRTLLM-gen fp8_block MoE rows at tp {tp}, "
                          f"ep {ep} on {k.device}" + (" (read at expert tensor parallelism only, ep 1)" if ep > 1
                                                      else ""))
            if dtype == "fp8_block" and self.fp8_block_moe_kernel in DEEPEP_LANES:
                kernel = self.fp8_block_moe_kernel

                def deepep(kernels: MeasuredKernels) -> tuple[GridTable, str] | None:
                    return deepep_moe_grid(kernels, DEEPEP_LANES[kernel], topk, experts, hidden, inter, tp, ep,
                                           routing)

                found = deepep(k)
                if found is not None:
                    grid, how = found
                    return read(grid), f"{label}; {DEEPEP_NOTE[kernel]}{how}; {routing_note}", None
                other = _other_engine_grid(k.device, k.engine, deepep, first="sglang")  # SGLang's rows, a proxy
                if other is not None:
                    name, (grid, how) = other
                    return read(grid), (f"{name} moe table ({kernel}), a proxy: {DEEPEP_NOTE[kernel]}{how}; "
                                        f"{routing_note}"), f"{name} moe (proxy)"
                missed = (f"fp8_block_moe_kernel='{kernel}' but no SGLang DeepEP rows for top-{topk} of {experts} "
                          f"experts, hidden {hidden}, intermediate {inter} at {tp * ep} GPUs on {k.device}")
            if missed:  # said, never silent: the default kernel's rows, read as below
                label = f"{label}; {missed}: the default kernel's rows"
            grid = k.moe_table(dtype, topk, experts, hidden, inter, tp, ep, routing)
            if grid is None and dtype == "mxfp4_wo":  # the shape measured on the Marlin kernel only
                grid = k.moe_table(MARLIN_MXFP4_LANE, topk, experts, hidden, inter, tp, ep, routing)
                if grid is not None:
                    return read(grid), f"{label}; {MARLIN_NOTE} (the kernel this shape was measured on); " \
                        f"{routing_note}", None
            if grid is None and dtype == "fp8_block":  # the per-tensor fp8 kernel's rows stand in
                grid = k.moe_table("fp8", topk, experts, hidden, inter, tp, ep, routing)
                if grid is not None:
                    return read(grid), (f"{label}; fp8 per-tensor rows (no fp8_block rows for this shape); "
                                        f"{routing_note}"), None
            if grid is None:  # the same GPUs split the experts the other way
                grid, split = moe_split_table(k, dtype, topk, experts, hidden, inter, tp, ep, routing)
                if grid is not None:
                    return read(grid), f"{label}{split}; {routing_note}", None
            if grid is None:
                return None, (f"no {dtype} MoE table row for top-{topk} of {experts} experts, hidden {hidden}, "
                              f"intermediate {inter}, tp {tp}, ep {ep}, {routing} routing (engine {k.engine} on "
                              f"{k.device}){_no_routing_hint(k, routing)}{_single_point_hint(k, key[1:-2], routing)}"
                              ), None
            fast = (k.moe_table(MIN_LATENCY_LANE, topk, experts, hidden, inter, tp, ep, routing) if dtype == "nvfp4"
                    else None)
            if fast is not None:  # TensorRT-LLM at few tokens: its min-latency kernel
                return (TokenSplitRead(read(fast), read(grid), MIN_LATENCY_MAX_TOKENS),
                        f"{label}; {MIN_LATENCY_NOTE}; {routing_note}", None)
            return read(grid), f"{label}; {routing_note}", None
        if family in ("prefill_gdn", "decode_gdn"):
            return _gdn_lookup(k, self.label(family), key)
        if family in ("prefill_mla", "decode_mla"):  # key (family, kv_dtype, per-GPU heads)
            grid = k.tables[family].grids.get(tuple(key[1:]))
            if grid is None:
                why = f"no {family} table for {key[2]} heads, {key[1]} cache (engine {k.engine} on {k.device})"
                return None, why, None
            return TableRead(grid, 2), self.label(family), None
        if family == "encoder_attention":
            return _encoder_lookup(k, self.label(family), key)
        phase = "prefill" if family == "prefill_attention" else "decode"
        _, kv_dtype, head_dim, heads, kv_heads, *window = key
        found = k.attention_slice(phase, kv_dtype, head_dim, heads, kv_heads)
        if found is None:
            return None, f"no {phase} attention table for head dim {head_dim} (engine {k.engine} on {k.device})", None
        grid, factor, note = found  # factor: on the batch (see hardware.measured)
        label = self.label(family) + (f"; {note}" if note else "")
        if phase == "prefill" and window and window[0]:
            w, chunked = window[0], len(window) > 1 and bool(window[1])
            label += (f"; {'chunks' if chunked else 'window'} {w}: the causal table x the pairs the "
                      f"{'chunks' if chunked else 'window'} keep (approximation)")
            return TableRead(grid, 2, x_factor=factor, window=(w, chunked)), label, None
        return TableRead(grid, 2, x_factor=factor), label, None

    def collective(self, kind: str, group: int) -> tuple[Any, str, str]:
        """(time function of a collective among `group` GPUs by message bytes, or None; its family; why another
        device's table stands in, or ""): the engine's own all-reduce, else NCCL's table of that collective; where
        this device's tables lack the group size, the same engine's tables of the device on its NVLink fabric
        (FABRIC_SIBLINGS) that measured it, its family then "<sibling> <family> (proxy)"."""
        time_s, family = _collective_in(self.kernels, self.families, kind, group)
        if time_s is None and self.kernels.device in FABRIC_SIBLINGS:
            return _fabric_sibling_collective(self.kernels.device, self.kernels.engine, self.families, kind, group)
        return time_s, family, ""


@lru_cache(maxsize=256)
def _fabric_sibling_collective(device: str, engine: str, families: tuple[str, ...], kind: str, group: int
                               ) -> tuple[Any, str, str]:
    """MeasuredTiming.collective from the device's NVLink-fabric sibling's `engine` tables (FABRIC_SIBLINGS), or
    (None, "", "")."""
    sibling = FABRIC_SIBLINGS[device]
    other = measured_for(sibling, engine)
    time_s, family = _collective_in(other, families, kind, group) if other is not None else (None, "")
    if time_s is None:
        return None, "", ""
    return time_s, f"{sibling} {family} (proxy)", (
        f"{kind} among {group} GPUs, which the {device} tables do not measure: the same engine's table of "
        f"{sibling}, on the same NVLink fabric, stands in (approximation: the fabric and the kernel set the time)")


def _collective_in(kernels: MeasuredKernels, families: tuple[str, ...], kind: str, group: int) -> tuple[Any, str]:
    """(time function by message bytes, family) of one table set's collective among `group` GPUs, or (None, "")."""
    if kind == "all_reduce" and "all_reduce" in families:
        grid = kernels.all_reduce_table(group)
        if grid is not None:
            return grid.time_s, "all_reduce"
    if "nccl" in families:
        grid = kernels.nccl_table(kind, group)
        if grid is not None:
            return grid.time_s, "nccl"
    return None, ""


def _encoder_lookup(k: MeasuredKernels, label: str, key: tuple) -> tuple[Any, str, str | None]:
    """The non-causal table's time function (batch, tokens) for key ("encoder_attention", head_dim, heads)."""
    _, head_dim, heads = key
    dims = k.encoder_head_dims()
    if not dims:
        return None, f"no encoder_attention table for engine {k.engine} on {k.device}", None
    if head_dim in dims:
        grid, factor, note = k.encoder_attention_slice(head_dim, heads)
        return TableRead(grid, 2, x_factor=factor), "; ".join(n for n in (label, note) if n), None
    if head_dim < min(dims):  # run in FlashAttention's smallest kernel, padded (ENCODER_PADDED_NOTE)
        grid, factor, note = k.encoder_attention_slice(min(dims), heads)
        notes = [n for n in (label, note, ENCODER_PADDED_NOTE.format(dim=head_dim, d0=min(dims))) if n]
        return TableRead(grid, 2, x_factor=factor), "; ".join(notes), None
    # carried over from the nearest measured dim the causal table also holds (ENCODER_HEAD_DIM_NOTE)
    causal_to = k.attention_slice("prefill", "bf16", head_dim, heads, heads)
    carriers = {d: found for d in dims if (found := k.attention_slice("prefill", "bf16", d, heads, heads))}
    if causal_to is None or not carriers:
        return None, (f"no encoder_attention slice for head dim {head_dim} (measured: {list(dims)}), and no causal "
                      f"prefill slices to carry it over from them (engine {k.engine} on {k.device})"), None
    dim = min(carriers, key=lambda d: (abs(math.log(d / head_dim)), d))
    grid, factor, note = k.encoder_attention_slice(dim, heads)
    read = TableRead(grid, 2, x_factor=factor)
    to_read = TableRead(causal_to[0], 2, x_factor=causal_to[1])
    from_read = TableRead(carriers[dim][0], 2, x_factor=carriers[dim][1])

    def time_s(x: Any, y: Any, z: Any = None) -> Any:
        # [batch, tokens]: t_encoder(D0) x t_causal(D) / t_causal(D0)
        return read(x, y, z) * to_read(x, y, z) / from_read(x, y, z)

    notes = [n for n in (label, note, ENCODER_HEAD_DIM_NOTE.format(dim=head_dim, d0=dim)) if n]
    return time_s, "; ".join(notes), None


def _no_routing_hint(kernels: MeasuredKernels, routing: str) -> str:
    """Where a MoE table holds no row of a load at all: how to get them ("" otherwise)."""
    if any(key[1] == routing for key in kernels.tables["moe"].grids):
        return ""
    return (f"; the table holds no {routing} rows (compact imports keep the power-law loads; `llmsim calibrate "
            f"--from aiconfigurator --full` writes the balanced ones too)")


def _single_point_hint(kernels: MeasuredKernels, shape: tuple[Any, ...], routing: str) -> str:
    """Where the line was measured at one token count only (MeasuredKernels.moe_table reads it as absent)."""
    grid = kernels.moe_single_point(*shape, routing)
    if grid is None:
        return ""
    return (f"; its only measured row is at {grid.points[0][0]:g} tokens (the package's collection stopped there): "
            "no curve to read")


def moe_split_table(kernels: MeasuredKernels, lane: str, topk: int, experts: int, hidden: int, inter: int, tp: int,
                    ep: int, routing: str = "balanced") -> tuple[GridTable | None, str]:
    """A MoE lane's grid at tp x ep, else at the same GPUs' other split (tp 1 x ep tp*ep, then tp*ep x ep 1), with a
    note saying so ("" when exact); (None, "") where neither is measured. approximation: SPLIT_NOTE."""
    grid = kernels.moe_table(lane, topk, experts, hidden, inter, tp, ep, routing)
    if grid is not None or tp * ep == 1:
        return grid, ""
    for tp_s, ep_s in ((1, tp * ep), (tp * ep, 1)):
        grid = kernels.moe_table(lane, topk, experts, hidden, inter, tp_s, ep_s, routing)
        if grid is not None:
            return grid, f"; moe tp {tp} x ep {ep} read from the measured tp {tp_s} x ep {ep_s} rows ({SPLIT_NOTE})"
    return None, ""


def deepep_moe_grid(kernels: MeasuredKernels, lane: str, topk: int, experts: int, hidden: int, inter: int, tp: int,
                    ep: int, routing: str = "balanced") -> tuple[GridTable, str] | None:
    """A DeepEP lane's grid (tokens -> seconds) at this expert shape on tp x ep GPUs, and how it was read, or None.

    DeepEP runs the experts with expert parallelism only, so tp x ep GPUs read the lane's rows at EP size
    G = tp x ep (SPLIT_NOTE where tp > 1). A G the package did not measure, between measured E_lo < G < E_hi,
    reads both at the same tokens T (every EP rank's together), geometric in the EP size. Shape: [T] grid.

        w = log(G / E_lo) / log(E_hi / E_lo)
        time(T) = time_lo(T)^(1 - w) x time_hi(T)^w

    on the tokens both measured. approximation: the per-GPU time between two EP sizes follows a power of the EP
    size (each GPU holds E / G experts and receives T topk / G of the assignments: a power -1 where compute-bound,
    flatter where the grouped GEMM's fixed costs dominate, as the measured rows go from one to the other)."""
    table = kernels.tables.get("moe")
    if table is None:
        return None
    gpus = tp * ep
    files = str(table.provenance.get("deepep_files", ""))  # the package files the lanes came from
    split = (f" ({files})" if files else "") + (f" (tp {tp} x ep {ep} read at ep {gpus}: {SPLIT_NOTE})" if tp > 1
                                               else "")
    exact = kernels.moe_table(lane, topk, experts, hidden, inter, 1, gpus, routing)
    if exact is not None:
        return exact, split
    sizes = sorted(key[7] for key in table.grids if key[:7] == (lane, routing, topk, experts, hidden, inter, 1))
    below, above = [e for e in sizes if e < gpus], [e for e in sizes if e > gpus]
    if not below or not above:
        return None
    e_lo, e_hi = below[-1], above[0]
    lo = kernels.moe_table(lane, topk, experts, hidden, inter, 1, e_lo, routing)
    hi = kernels.moe_table(lane, topk, experts, hidden, inter, 1, e_hi, routing)
    tokens = np.array(sorted(set(lo.points[0]) & set(hi.points[0])), dtype=float)
    if len(tokens) == 0:
        return None
    w = math.log(gpus / e_lo) / math.log(e_hi / e_lo)
    times = np.exp((1 - w) * np.log(lo.time_s(tokens)) + w * np.log(hi.time_s(tokens)))  # [T]
    grid = GridTable(lo.axes, (tokens,), times, lo.smooth)
    return grid, (f"{split}; ep {gpus} not measured: geometric between the measured ep {e_lo} and ep {e_hi} at the "
                  "same tokens (approximation)")


def trtllm_gen_fp8_block_moe(device: str, topk: int, experts: int, hidden: int, inter: int, tp: int, ep: int,
                             routing: str = "balanced") -> GridTable | None:
    """FlashInfer's TRTLLM-gen FP8 block-scale MoE kernel at this expert shape and tp (ep 1), from the device's
    vLLM table where its block-fp8 MoE rows time that kernel (Blackwell, vLLM 0.24.0: FP8MoE's flashinfer_trtllm
    experts only), else None. approximation: TRTLLM_GEN_FP8_BLOCK_NOTE."""
    if ep != 1:
        return None
    kernels = measured_for(device, "vllm")
    if kernels is None or "moe" not in kernels.tables:
        return None
    sources = str(kernels.tables["moe"].provenance.get("kernel_sources", "")).split()
    block_fp8 = [s for s in sources if s.startswith("vllm_fp8moe_")]
    if not block_fp8 or not all("flashinfer_trtllm" in s for s in block_fp8):
        return None
    return kernels.moe_table("fp8_block", topk, experts, hidden, inter, tp, 1, routing)


def marlin_moe_grid(kernels: MeasuredKernels, topk: int, experts: int, hidden: int, inter: int, tp: int, ep: int,
                    routing: str = "balanced") -> tuple[GridTable, str] | None:
    """The Marlin MXFP4 MoE kernel's time by tokens for this expert shape, and how it was read ("" when measured
    at this shape), or None where the tables hold no Marlin rows at this tp and ep.

    The package measures the Marlin lane at one model's shape (E_s experts, top-k_s, hidden h_s, intermediate i_s;
    H100 and H200: 896 experts, top-16, 3584 x 3072), not at gpt-oss's. A shape it lacks reads the measured one at
    the same fraction of experts each token reaches and the same tp and ep, in proportion to the expert weights a
    call touches. The balanced rows spread T k assignments over min(E, T k) experts, T k / E per expert, so at
    equal T k / E both calls touch the same fraction of their experts with the same tokens each. Shape: scalar.

        T_s = T (k / E) / (k_s / E_s)                  the source tokens at the same assignments per expert
        time(T) = time_s(T_s) x (E h i) / (E_s h_s i_s)   the experts' weights (and FLOPs) the call touches

    approximation: a grouped GEMM's time in proportion to its experts' total size at equal tokens per expert, on
    the same kernel (its tiles and fixed costs follow the per-expert M, not h and i). Checked against the package's
    default (Triton) kernel at gpt-oss's own shape on the H200 at 4-256 tokens, where both kernels read the weights
    at about the HBM bandwidth: the carried Marlin times are within 6 % of the Triton rows."""
    table = kernels.tables.get("moe")
    if table is None:
        return None
    exact = kernels.moe_table(MARLIN_MXFP4_LANE, topk, experts, hidden, inter, tp, ep, routing)
    if exact is not None:
        return exact, ""
    # keys: (lane, routing, topk, experts, hidden, inter, tp, ep)
    measured = [key for key in table.grids if key[:2] == (MARLIN_MXFP4_LANE, routing) and key[6:] == (tp, ep)]
    if not measured:
        return None
    size = np.log(hidden * inter)  # the measured shape nearest in expert size (the package ships one)
    key = min(measured, key=lambda key: (abs(np.log(key[4] * key[5]) - size), key))
    _, _, k_s, e_s, h_s, i_s, _, _ = key
    source = table.grids[key]
    tokens_per_source = (topk / experts) / (k_s / e_s)  # T_s / T
    scale = (experts * hidden * inter) / (e_s * h_s * i_s)
    grid = GridTable(source.axes, (source.points[0] / tokens_per_source,), source.times_s * scale, source.smooth)
    return grid, (f", measured at top-{k_s} of {e_s} experts, hidden {h_s}, intermediate {i_s}: read at the same "
                  f"tokens per expert, x the experts' size ratio {scale:.3g} (approximation)")


def routing_factor(tokens: Any, topk: int, experts: int) -> Any:
    """The experts a MoE call reads under independent routing, over those the tables' balanced rows read.

    aiconfigurator's `balanced` rows spread a call's tokens x topk assignments over as many distinct experts as
    they can: min(E, T k) of the E experts, every one loaded evenly. A router that is balanced in expectation
    (each expert equally likely) but picks each token's k experts independently of the other tokens' reads
    fewer at small calls, because tokens share experts by chance: on average E (1 - (1 - k/E)^T). Shape: that
    of `tokens`:

        factor(T) = (1 - (1 - k/E)^T) / min(1, T k / E)        (1 at T = 1 and as T grows; lowest, 1 - 1/e
                                                                  = 0.63 for large E, at T k = E)

    The same fraction of local experts holds on each of ep ranks, so it does not depend on ep.
    approximation: the call's time in proportion to the experts it reads. That holds where the factor is
    below 1 (T k near E: decode batches, about one token per expert, a memory-bound grouped GEMM reading the
    touched experts' weights); where compute or fixed costs dominate (T k far from E) the factor is near 1
    anyway. The package's skewed (power_law) rows are faster still at these sizes on the same hardware
    (gpt-oss-120b on the B200, vLLM w4a16_mxfp4, 32 tokens: balanced 0.378 ms, this factor 0.64 -> 0.241 ms,
    power_law 1.2 0.194 ms); they are not read because no public source says which skew real routers reach."""
    share = topk / experts  # the numerator: cost.formulas.matmul's expected experts read, as the analytic bytes
    if isinstance(tokens, (int, float)):
        t = tokens if tokens > 1.0 else 1.0
        return experts_read_fraction(t, topk, experts) / min(1.0, t * share)
    t = np.maximum(np.asarray(tokens, dtype=float), 1.0)
    return experts_read_fraction(t, topk, experts) / np.minimum(1.0, t * share)


class TableRead:
    """A measured table's time function (x, y, z) -> seconds: the grid's time at (x [x x_factor], y, z), as
    many of them as the grid has axes, times `share` (MoE) and the prefill window factor at y (window:
    (W, chunked)); `fixed_at` gives the same for single points with some coordinates held fixed."""

    def __init__(self, grid: Any, axes: int, x_factor: Any = None, share: Any = None,
                 window: tuple[int, bool] | None = None, routing: tuple[int, int] | None = None) -> None:
        self.grid, self.axes, self.x_factor, self.share, self.window = grid, axes, x_factor, share, window
        self.routing = routing  # MoE: (topk, experts), time x routing_factor(x, topk, experts)
        self._fixed: dict[tuple, Any] = {}  # fixed_at's functions, made once per held coordinates

    def __call__(self, x: Any, y: Any, z: Any) -> Any:
        coords = (x if self.x_factor is None else x * self.x_factor, y, z)[:self.axes]
        time_s = self.grid.time_s(*coords)
        if self.share is not None:
            time_s = time_s * self.share
        if self.window is not None:
            time_s = time_s * prefill_window_factor(y, *self.window)
        if self.routing is not None:
            time_s = time_s * routing_factor(coords[0], *self.routing)
        return time_s

    def fixed_at(self, x: float | None, y: float | None, z: float, arrays: bool = False) -> Any:
        """A function (x, y) -> seconds of single points (plain floats) where x and y, when given here, are
        those values and z is: the grid's fixed axes applied once (kernel_table.ScalarGrid). arrays: of
        arrays of points instead (a sweep's)."""
        key = (x, y, z, arrays)
        if key not in self._fixed:
            self._fixed[key] = self._fixed_at(x, y, z, arrays)
        return self._fixed[key]

    def _fixed_at(self, x: float | None, y: float | None, z: float, arrays: bool) -> Any:
        held = (None if x is None else (x if self.x_factor is None else x * self.x_factor), y, z)[:self.axes]
        free = [i for i, value in enumerate(held) if value is None]
        if free and free[-1] >= len(held) - sum(value is not None for value in held):  # a held axis first
            return (lambda x, y: self(x, y, z)) if arrays else (lambda x, y: float(self(x, y, z)))
        reduced = self.grid.fixed_at(held)
        x_factor, share, window, routing = self.x_factor, self.share, self.window, self.routing
        if routing is not None and held[0] is not None:  # the tokens held: a constant factor
            share = (1.0 if share is None else share) * routing_factor(held[0], *routing)
            routing = None
        if not arrays:
            return self._point_reader(reduced.reader(), free, share, routing)
        read = reduced.array_time_s

        def time_s(x: Any, y: Any) -> Any:
            coords = (x if x_factor is None else x * x_factor, y)
            t = read(*(coords[i] for i in free))
            if share is not None:
                t = t * share
            if window is not None:
                t = t * prefill_window_factor(y, *window)
            if routing is not None:
                t = t * routing_factor(coords[0], *routing)
            return t

        return time_s

    def _point_reader(self, read: Any, free: list[int], share: Any, routing: tuple[int, int] | None) -> Any:
        """_fixed_at's function of single points: read(the free ones of x [x x_factor] and y), x share, x the
        prefill window factor at y, x the routing factor at x. A GEMM's (x = M alone, nothing else) carries
        `of_x`, the same of M alone (the scalar fast path calls it so)."""
        x_factor, window = self.x_factor, self.window
        plain = x_factor is None and share is None and window is None and routing is None
        if free == [0] and plain:  # a GEMM: at M
            at_m = lambda x, y: read(x)  # noqa: E731
            at_m.of_x = read  # type: ignore[attr-defined]
            return at_m
        pick = {(): lambda x, y: read(), (0,): lambda x, y: read(x), (1,): lambda x, y: read(y),
                (0, 1): read}[tuple(free)]
        if plain:
            return pick

        def time_s(x: float, y: float) -> float:
            x = x if x_factor is None else x * x_factor
            t = pick(x, y)
            if share is not None:
                t = t * share
            if window is not None:
                t = t * prefill_window_factor(y, *window)
            if routing is not None:
                t = t * routing_factor(x, *routing)
            return float(t)

        return time_s


class TokenSplitRead(TableRead):
    """Two table reads of one op, split on x (the tokens of a MoE call): `low` at x <= limit, `high` above."""

    def __init__(self, low: TableRead, high: TableRead, limit: float) -> None:
        super().__init__(high.grid, high.axes, high.x_factor, high.share, high.window)
        self.low, self.high, self.limit = low, high, limit

    def __call__(self, x: Any, y: Any, z: Any) -> Any:
        low, high = self.low(x, y, z), self.high(x, y, z)
        if isinstance(x, (int, float)):
            return low if x <= self.limit else high
        return np.where(np.asarray(x) <= self.limit, low, high)  # shape: that of the x given

    def _fixed_at(self, x: float | None, y: float | None, z: float, arrays: bool) -> Any:
        low, high = self.low.fixed_at(x, y, z, arrays), self.high.fixed_at(x, y, z, arrays)
        if x is not None:  # the tokens held: one of the two
            return low if x <= self.limit else high
        limit = self.limit
        if arrays:
            return lambda x, y: np.where(np.asarray(x) <= limit, low(x, y), high(x, y))
        return lambda x, y: low(x, y) if x <= limit else high(x, y)


def _gdn_lookup(kernels: MeasuredKernels, label: str, key: tuple) -> tuple[Any, str, str | None]:
    """A Gated DeltaNet op's table read: (batch, prompt tokens) in prefill, the step's tokens in decode; the
    exact per-GPU shape or the roofline with the reason."""
    family, kernel, dk, dv, conv, k_heads, v_heads, act_dtype = key
    phase = family.split("_")[0]
    if act_dtype not in _GDN_ACTIVATIONS:
        return None, f"{family}: {act_dtype} activations (the tables time 16-bit q, k, v)", None
    grid = kernels.gdn_table(phase, kernel, dk, dv, conv, k_heads, v_heads)
    if grid is None:
        return None, (f"no {family} {kernel} row for {k_heads}/{v_heads} key/value heads per GPU, head dims "
                      f"{dk}/{dv}, convolution width {conv} (engine {kernels.engine} on {kernels.device})"), None
    return TableRead(grid, 2 if phase == "prefill" else 1), f"{label}; {kernel}", None


def _proxy_gemm(device: str, engine: str, dtype: str) -> tuple[str, Any] | None:
    """Another engine's shipped GEMM table of the device for a dtype the engine's own set lacks (weight-only
    int4/int8 kernels: TensorRT-LLM's on an A100), as (that engine, its grid); None where none has it.
    approximation: a dequantizing GEMM runs about as fast in any engine that ships one (the same kernel family)."""
    return _other_engine_grid(device, engine, lambda kernels: kernels.gemm_table_named(dtype))


def _other_engine_grid(device: str, engine: str, grid_of: Any, first: str | None = None) -> tuple[str, Any] | None:
    """(another engine, grid_of(its shipped tables)) for the first other engine of the device (`first` before
    the rest) whose grid_of is not None; None where none has one."""
    others = shipped_kernel_sets().get(device, ())
    if first is not None:
        others = sorted(others, key=lambda e: (e != first, e))
    for other in others:
        kernels = measured_for(device, other) if other != engine else None
        grid = grid_of(kernels) if kernels is not None else None
        if grid is not None:
            return other, grid
    return None


class _RatioGrid:
    """time_s(m, n, k) = base(m, n, k) * r(m, n, k), r the running maximum over m of other / other_base: a
    dtype's measured speed relative to bf16 on one device, carried to another device's bf16 table.

    approximation: the ratio is taken as non-decreasing in m (at m, the largest ratio measured at m or at any of
    the other device's measured m below it): a weight-only kernel's edge over bf16 only shrinks as m grows
    (fewer bytes per FLOP saved), while two tables' own noise can make the measured ratio dip (the A100
    int4_wo/bf16 ratio at n 1280, k 5120: 1.43 at m 1, 1.37 at m 2), which made a larger batch faster."""

    def __init__(self, base: Any, other: Any, other_base: Any) -> None:
        self.base, self.other, self.other_base = base, other, other_base
        self.m_nodes = [float(m) for m in np.asarray(other.points[0], dtype=float)]  # the m it measured

    def ratio(self, m: Any, n: Any, k: Any) -> Any:
        return self.other.time_s(m, n, k) / self.other_base.time_s(m, n, k)

    def time_s(self, m: Any, n: Any, k: Any) -> Any:
        r = self.ratio(m, n, k)
        if all(type(x) is float for x in (m, n, k)):  # one point
            for node in self.m_nodes:
                if node >= m:
                    break
                r = max(r, self.ratio(node, n, k))
            return self.base.time_s(m, n, k) * r
        m_arr = np.asarray(m, dtype=float)
        for node in self.m_nodes:
            if node >= float(np.max(m_arr)):
                break
            # shape: r [*points]; the node's ratio where it lies below m
            r = np.where(m_arr > node, np.maximum(r, self.ratio(np.full_like(m_arr, node), n, k)), r)
        return self.base.time_s(m, n, k) * r


def _relative_gemm(kernels: Any, dtype: str) -> tuple[str, _RatioGrid] | None:
    """For a weight-only dtype (int8_wo, int4_wo) with no table on this device: another shipped device's table
    of it, as its time relative to that device's bf16 GEMM at the same shape, times this engine's bf16 table,
    as ("<device> <engine>", the grid); None where no device measured it or this engine has no bf16 table.
    approximation: a dequantizing GEMM keeps its measured speed relative to the bf16 GEMM across GPUs (both
    read the same weights from HBM at small m, where weight-only kernels matter)."""
    base = kernels.gemm_table_named("bf16")
    if base is None or not dtype.endswith("_wo"):
        return None
    for device, engines in sorted(shipped_kernel_sets().items()):
        if device == kernels.device:
            continue
        for engine in engines:
            other = measured_for(device, engine)
            grid = other.gemm_table_named(dtype) if other is not None else None
            other_base = other.gemm_table_named("bf16") if grid is not None else None
            if grid is not None and other_base is not None:
                return f"{device} {engine}", _RatioGrid(base, grid, other_base)
    return None


def _proxy_mla(device: str, engine: str, family: str, key: tuple) -> tuple[str, Any] | None:
    """Another engine's shipped MLA table of the device at this (kv_dtype, per-GPU heads), as (that engine, its
    grid), SGLang first; None where none has one."""
    return _other_engine_grid(device, engine, lambda kernels: kernels.tables[family].grids.get(key)
                              if family in kernels.tables else None, first="sglang")
