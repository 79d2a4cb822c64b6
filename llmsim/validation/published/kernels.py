"""Micro-benchmark rows: one GEMM (microbench_gemm) or one fused attention forward (microbench_attention)
on llmsim's roofline with no launch or dispatch cost (micro-benchmarks time the kernel alone), compared on
achieved TFLOP/s."""

from __future__ import annotations

import re

from ...cost.op import formula
from ...cost.symbolic import Expr
from ...timing.roofline import ExecutionOptions, Roofline
from .mapping import IN_SAMPLE, gpu_choice
from .options import PredictOptions
from .results import Comparison, SkipError
from .rows import PublishedRow


def kernel_time_s(roofline: Roofline, matmul_flops: float, vector_flops: float, bytes_moved: float,
                  precision: str) -> float:
    """Seconds of one kernel on the roofline."""
    cost = roofline.cost(matmul_flops, vector_flops, bytes_moved, precision, launches=1)
    return float(roofline.time(cost).time_s)


def kernel_roofline(hardware: str, options: PredictOptions) -> Roofline:
    """The device's achievable ceilings for one kernel: no launch or dispatch cost."""
    return Roofline(options.hardware(hardware), ExecutionOptions.make(overhead="none"))


def gemm_precision(row: PublishedRow) -> tuple[str, float, float, bool]:
    """(llmsim matrix precision, input bytes, output bytes, 128-block scales) of a GEMM row."""
    dtype = row.weight_dtype.lower()
    if dtype.startswith("bf16"):
        return "bf16", 2.0, 2.0, False
    if dtype.startswith("fp8"):
        return "fp8", 1.0, 2.0, "128-block" in dtype  # FP8 inputs, BF16 output in both sources
    raise SkipError(f"GEMM dtype {row.weight_dtype!r} not handled", "dtype not modelled")


def predict_gemm(row: PublishedRow, options: PredictOptions) -> list[Comparison]:
    """time = max(2MNK / achievable matrix rate, bytes / achievable bandwidth); bytes = inputs + outputs
    (+ DeepGEMM's fp32 block scales); predicted TFLOP/s = 2MNK / time."""
    flags: set[str] = set()
    gpu = gpu_choice(row)
    if gpu.flag:
        flags.add(gpu.flag)
    M, N, K = row.gemm_m, row.gemm_n, row.gemm_k
    if M is None or N is None or K is None:
        raise SkipError("GEMM shape not given", "shape not given")
    precision, in_bytes, out_bytes, block_scales = gemm_precision(row)
    flops = 2.0 * M * N * K
    moved = in_bytes * (M * K + N * K) + out_bytes * M * N
    if block_scales:  # DeepGEMM: fp32 scale per 1x128 of A and per 128x128 of B
        moved += 4.0 * (M * K / 128 + N * K / 128 / 128)

    def tflops(hardware: str) -> float:
        return flops / kernel_time_s(kernel_roofline(hardware, options), flops, 0.0, moved, precision) / 1e12

    if row.id in IN_SAMPLE:
        flags.add("I")
    return [Comparison(
        row_id=row.id, source=row.source_group, category=row.category, metric="achieved TFLOP/s",
        model=f"GEMM {M}x{N}x{K}", hardware=options.hardware_label(gpu.hardware),
        settings=f"{precision}, intensity {flops / moved:.0f} FLOP/B", measured=row.measured(),
        predicted=tflops(gpu.hardware), unit="TFLOP/s",
        alt_predicted=tflops(gpu.alternative) if gpu.alternative else None, flags=frozenset(flags))]


def predict_attention(row: PublishedRow, options: PredictOptions) -> list[Comparison]:
    """llmsim's own flash_attention op, non-causal (flag C), MHA, bf16; predicted TFLOP/s = tritonbench's
    count 4·B·H·S²·D / predicted time."""
    shape = re.findall(r"\d+", row.attn_shape)
    if len(shape) != 4:
        raise SkipError("attention shape not given (a peak over an unstated sweep, or 'up to' wording)",
                        "shape not given")
    flags = {"C"}
    gpu = gpu_choice(row)
    if gpu.flag:
        flags.add(gpu.flag)
    B, H, S, D = (int(x) for x in shape)
    # llmsim's own fused-attention op: non-causal, so every (query, key) pair; MHA (kvh = H), bf16
    # (tritonbench's default precision; fp16 has the same peak on Hopper).
    c = Expr.const
    op = formula("flash_attention")("attn", 1, B=c(B), H=c(H), Sq=c(S), Skv=c(S), pairs=c(S * S), d=c(D),
                                    dv=c(D), kvh=c(H), kv_values=c(2 * D), ab=c(2), kvb=c(2))
    counted_flops = 4.0 * B * H * S * S * D  # tritonbench's count (non-causal forward)

    def tflops(hardware: str) -> float:
        t = kernel_time_s(kernel_roofline(hardware, options), float(op.matmul_flops), float(op.vector_flops),
                          float(op.bytes), "bf16")
        return counted_flops / t / 1e12

    return [Comparison(
        row_id=row.id, source=row.source_group, category=row.category, metric="attention fwd TFLOP/s",
        model=row.model.split(" (")[0], hardware=options.hardware_label(gpu.hardware),
        settings=f"B{B} H{H} S{S} D{D}, non-causal, bf16", measured=row.measured(),
        predicted=tflops(gpu.hardware), unit="TFLOP/s",
        alt_predicted=tflops(gpu.alternative) if gpu.alternative else None, flags=frozenset(flags))]
