"""Micro-benchmark rows: one GEMM (microbench_gemm) or one fused attention forward (microbench_attention),
compared on achieved TFLOP/s.

The time is the row's engine's measured table where one covers the device, dtype and shape (GEMM: the
`gemm` table; attention: the `prefill_attention` table), else llmsim's roofline for one kernel with no
launch or dispatch cost (micro-benchmarks time the kernel alone). The roofline prediction is kept on every
row (`roofline_predicted`) as the before of the tables."""

from __future__ import annotations

import re

from ...cost.op import formula
from ...cost.symbolic import Expr
from ...engines.catalog import get_engine
from ...hardware.measured import TABLE_SIBLINGS, MeasuredKernels, measured_for
from ...timing.measured import MeasuredTiming
from ...timing.roofline import ExecutionOptions, Roofline
from .mapping import IN_SAMPLE, SCALED_MM_ENGINE, engine_of, gpu_choice
from .options import PredictOptions
from .results import Comparison, SkipError
from .rows import PublishedRow


def kernel_time_s(roofline: Roofline, matmul_flops: float, vector_flops: float, bytes_moved: float,
                  precision: str) -> float:
    """Seconds of one kernel on the roofline."""
    cost = roofline.cost(matmul_flops, vector_flops, bytes_moved, precision, launches=1)
    return float(roofline.time(cost).time_s)


def group_quant_s(hardware: str, options: PredictOptions, M: int, K: int) -> float:
    """Seconds of SGLang's per-token-group fp8 quantisation of a GEMM's [M, K] bf16 activations
    (sglang_per_token_group_quant_fp8, group 128), which aiconfigurator's SGLang fp8_block GEMM rows time together
    with DeepGEMM (collector/sglang/collect_gemm.py: quantise, then gemm_nt_f8f8bf16, in one CUDA graph): one
    memory-bound kernel on the roofline, reading M*K bf16 and writing M*K fp8 and an fp32 scale per 128 values,
    plus one kernel launch from a graph (approximation: a few vector FLOPs per value, its time the bytes')."""
    roofline = Roofline(options.hardware(hardware), ExecutionOptions.make(overhead="graph"))
    moved = M * K * (2.0 + 1.0) + M * K / 128 * 4.0
    return kernel_time_s(roofline, 0.0, 4.0 * M * K, moved, "bf16")


def kernel_roofline(hardware: str, options: PredictOptions) -> Roofline:
    """The device's achievable ceilings for one kernel: no launch or dispatch cost."""
    return Roofline(options.hardware(hardware), ExecutionOptions.make(overhead="none"))


def engine_tables(hardware: str, engine: str, family: str, options: PredictOptions
                  ) -> tuple[MeasuredKernels | None, str]:
    """(the engine's measured tables of the simulated device when they hold `family`, else None; why not)."""
    spec = get_engine(engine)
    device = options.hardware(hardware).name
    if spec.tables is None:
        return None, f"engine {engine} reads no tables"
    if spec.table_families is not None and family not in spec.table_families:
        return None, f"engine {engine} reads no {family} table"
    kernels = measured_for(device, spec.tables)
    if kernels is None or family not in kernels.tables:
        return None, f"no {spec.tables} {family} table for {device}"
    return kernels, ""


def timed(table_s: float | None, why_not: str, roofline_s: float, table_label: str) -> tuple[float, str]:
    """(seconds, where they came from): the table's where it gave one, else the roofline's and why."""
    if table_s is not None:
        return table_s, table_label
    return roofline_s, f"roofline ({why_not})"


def gemm_precision(row: PublishedRow) -> tuple[str, float, float, bool]:
    """(llmsim matrix precision, input bytes, output bytes, 128-block scales) of a GEMM row."""
    dtype = row.weight_dtype.lower()
    if dtype.startswith("bf16"):
        return "bf16", 2.0, 2.0, False
    if dtype.startswith("fp8"):
        return "fp8", 1.0, 2.0, "128-block" in dtype  # FP8 inputs, BF16 output in both sources
    raise SkipError(f"GEMM dtype {row.weight_dtype!r} not handled", "dtype not modelled")


def predict_gemm(row: PublishedRow, options: PredictOptions) -> list[Comparison]:
    """The engine's GEMM table at (M, N, K) where it covers the device and dtype; else the roofline:
    time = max(2MNK / achievable matrix rate, bytes / achievable bandwidth), bytes = inputs + outputs
    (+ DeepGEMM's fp32 block scales). Predicted TFLOP/s = 2MNK / time."""
    flags: set[str] = set()
    gpu = gpu_choice(row)
    if gpu.flag:
        flags.add(gpu.flag)
    M, N, K = row.gemm_m, row.gemm_n, row.gemm_k
    if M is None or N is None or K is None:
        raise SkipError("GEMM shape not given", "shape not given")
    precision, in_bytes, out_bytes, block_scales = gemm_precision(row)
    choice = engine_of(row, options)
    if precision == "fp8" and not block_scales and row.framework.startswith("PyTorch matmul") \
            and options.engine_override is None:
        choice = SCALED_MM_ENGINE  # torch._scaled_mm: cuBLASLt, as TensorRT-LLM's fp8 rows
    if choice.proxy:
        flags.add("P")
    flops = 2.0 * M * N * K
    moved = in_bytes * (M * K + N * K) + out_bytes * M * N
    if block_scales:  # DeepGEMM: fp32 scale per 1x128 of A and per 128x128 of B
        moved += 4.0 * (M * K / 128 + N * K / 128 / 128)

    def roofline_s(hardware: str) -> float:
        return kernel_time_s(kernel_roofline(hardware, options), flops, 0.0, moved, precision)

    def time_s(hardware: str) -> tuple[float, str]:
        kernels, why = engine_tables(hardware, choice.engine, "gemm", options)
        sibling = TABLE_SIBLINGS.get(options.hardware(hardware).name)
        if kernels is None and sibling is not None and engine_tables(sibling, choice.engine, "gemm", options)[0]:
            # the same die's tables stand in, x this GEMM's roofline time here / there (as simulate() reads them)
            seconds, label = time_s(sibling)
            if not label.startswith("roofline"):
                return seconds * roofline_s(hardware) / roofline_s(sibling), (
                    f"{label} of {sibling} x the roofline ratio (sibling)")
        lane = "fp8_block" if block_scales else precision  # DeepGEMM: the block-scaled lane
        grid = kernels.gemm_table_named(lane) if kernels is not None and block_scales else None
        table_s = (grid.time_s(M, N, K) if grid is not None else None) if block_scales else (
            kernels.gemm_s(precision, M, N, K) if kernels is not None else None)
        if kernels is not None and table_s is None:
            why = f"no {lane} GEMM table for {choice.engine} on {kernels.device}"
        quant = block_scales and table_s is not None and choice.engine == "sglang"
        if quant:  # the row times DeepGEMM alone; SGLang's rows time its activation quantisation too
            table_s -= group_quant_s(hardware, options, M, K)
        return timed(table_s, why, roofline_s(hardware), f"{choice.engine} gemm table" + (
            " (fp8_block, less its activation quantisation)" if quant else " (fp8_block)" if block_scales else ""))

    seconds, timing = time_s(gpu.hardware)
    if row.id in IN_SAMPLE and timing.startswith("roofline"):
        flags.add("I")  # the figure set the fraction this roofline prediction uses
    return [Comparison(
        row_id=row.id, source=row.source_group, category=row.category, metric="achieved TFLOP/s",
        model=f"GEMM {M}x{N}x{K}", hardware=options.hardware_label(gpu.hardware),
        settings=f"{precision}, intensity {flops / moved:.0f} FLOP/B", measured=row.measured(),
        predicted=flops / seconds / 1e12, unit="TFLOP/s",
        alt_predicted=flops / time_s(gpu.alternative)[0] / 1e12 if gpu.alternative else None,
        flags=frozenset(flags), engine=choice.engine, timing=timing,
        roofline_predicted=flops / roofline_s(gpu.hardware) / 1e12)]


def noncausal_ratio(S: int) -> float:
    """(query, key) pairs of non-causal attention over the causal triangle's, per sequence of S tokens:
    S*S / (S*(S+1)/2) = 2S/(S+1) (approximation: the kernel's time in proportion to the pairs it computes)."""
    return S * S / (S * (S + 1) / 2)


def predict_attention(row: PublishedRow, options: PredictOptions) -> list[Comparison]:
    """Non-causal (flag C), MHA, bf16. The engine's non-causal (encoder) attention table at (batch B, isl S)
    for H heads of dim D (timing.measured: a head dim it lacks is carried over with the causal table); where
    the device has no such table, the causal prefill table times the non-causal/causal pair ratio; else
    llmsim's own flash_attention op on the roofline. Predicted TFLOP/s = tritonbench's count 4·B·H·S²·D /
    predicted time."""
    choice = engine_of(row, options)
    shape = re.findall(r"\d+", row.attn_shape)
    if len(shape) != 4:
        raise SkipError("attention shape not given (a peak over an unstated sweep, or 'up to' wording)",
                        "shape not given")
    flags = {"C"}
    gpu = gpu_choice(row)
    if gpu.flag:
        flags.add(gpu.flag)
    if choice.proxy or "triton_tutorial" in row.model:
        flags.add("P")  # the Triton tutorial kernel read from vLLM's FlashAttention-3 table
    B, H, S, D = (int(x) for x in shape)
    # llmsim's own fused-attention op: non-causal, so every (query, key) pair; MHA (kvh = H), bf16
    # (tritonbench's default precision; fp16 has the same peak on Hopper).
    c = Expr.const
    op = formula("flash_attention")("attn", 1, B=c(B), H=c(H), Sq=c(S), Skv=c(S), pairs=c(S * S), d=c(D),
                                    dv=c(D), kvh=c(H), kv_values=c(2 * D), ab=c(2), kvb=c(2))
    counted_flops = 4.0 * B * H * S * S * D  # tritonbench's count (non-causal forward)
    ratio = noncausal_ratio(S)

    def roofline_s(hardware: str) -> float:
        return kernel_time_s(kernel_roofline(hardware, options), float(op.matmul_flops), float(op.vector_flops),
                             float(op.bytes), "bf16")

    def table_s(hardware: str, family: str, key: tuple) -> tuple[float | None, str]:
        """The engine's `family` table at (B, S) through the shared lookup, or None and why not."""
        kernels, why = engine_tables(hardware, choice.engine, family, options)
        if kernels is None:
            return None, why
        read, label, _ = MeasuredTiming(kernels, None).lookup(key)
        return (None, label) if read is None else (float(read(float(B), float(S), None)), label)

    def time_s(hardware: str) -> tuple[float, str]:
        seconds, label = table_s(hardware, "encoder_attention", ("encoder_attention", D, H))
        if seconds is not None:
            return seconds, label.replace(" table", " table (non-causal)", 1)
        causal_s, causal_label = table_s(hardware, "prefill_attention", ("prefill_attention", "bf16", D, H, H))
        if causal_s is None:
            return timed(None, causal_label, roofline_s(hardware), "")
        return causal_s * ratio, causal_label.replace(
            " table", f" table (causal) x {ratio:.4f} non-causal/causal pairs ({label})", 1)

    def tflops(seconds: float) -> float:
        return counted_flops / seconds / 1e12

    seconds, timing = time_s(gpu.hardware)
    return [Comparison(
        row_id=row.id, source=row.source_group, category=row.category, metric="attention fwd TFLOP/s",
        model=row.model.split(" (")[0], hardware=options.hardware_label(gpu.hardware),
        settings=f"B{B} H{H} S{S} D{D}, non-causal, bf16", measured=row.measured(),
        predicted=tflops(seconds), unit="TFLOP/s",
        alt_predicted=tflops(time_s(gpu.alternative)[0]) if gpu.alternative else None, flags=frozenset(flags),
        engine=choice.engine, timing=timing, roofline_predicted=tflops(roofline_s(gpu.hardware)))]
