"""What a simulation result says about itself: the assumptions it made (weights and dtypes, kernels, peaks,
overheads) and where its op times came from (the measured tables, and why any op is on the roofline).
Shared by simulate() and its scalar fast path."""

from __future__ import annotations

from typing import Any

from ..cost.workload import CostOptions
from ..hardware.spec import HardwareSpec
from ..models.spec import ModelSpec
from ..timing.phases import PhaseTotals
from ..timing.roofline import ExecutionOptions, Roofline


def provenance_of(roofline: Roofline, phases: tuple[PhaseTotals, ...]) -> dict[str, Any]:
    """The measured tables the ops were timed from (family -> source) and why any op was not."""
    tables: dict[str, str] = {}
    reasons: dict[str, None] = {}
    if roofline.tables_note:
        reasons[roofline.tables_note] = None
    if roofline.measured is not None:
        for totals in phases:
            for where, why in roofline.sources_of(totals.fixed):
                if where == "roofline":
                    if why:
                        reasons[why] = None
                elif where.endswith("(proxy)"):  # another engine's table of the device: why says which and why
                    tables.setdefault(where, why)
                else:
                    family = where.split(" ")[-1]
                    tables.setdefault(family, roofline.measured.kernels.source(family))
                    note = why.partition("; ")[2]  # the table's label, then any approximation it made
                    if note and note not in tables[family]:
                        tables[family] += f"; {note}"
    return {"measured_tables": tables, "roofline_reasons": list(reasons)}


def assumptions_of(model: ModelSpec, hw: HardwareSpec, cost: CostOptions, execution: ExecutionOptions
                   ) -> dict[str, str]:
    """The assumptions a result prints: weights, dtypes, kernels, peaks, overheads, overlap."""
    weight, act, kv = cost.resolved_dtypes(model.dtype)
    roofline = Roofline(hw, execution)
    from ..dtypes import MATMUL_PRECISION

    precision = MATMUL_PRECISION[act]
    matmul_flops_per_s = roofline.matmul_flops_per_s(precision)
    fraction = matmul_flops_per_s / hw.matrix_peak_flops_per_s(precision)
    without_table = "; ops without a measured table" if roofline.measured else ""
    return {
        "weights": weights_line(model, cost),
        "dtypes": f"weights {'per the weights line' if model.quantization and not cost.weight_dtype else weight}, "
                  f"activations {act}{_quantized_matmuls(model, cost, act)}, KV {kv}{_weight_only_hint(hw, cost)}",
        "kernels": f"attention={cost.attention}, logits={cost.logits}, mla={cost.mla}, fusion={cost.fusion}",
        "matmul_peak": f"{matmul_flops_per_s / 1e12:.1f} TFLOP/s {precision} "
        f"({execution.efficiency}, fraction {fraction:.2f}{without_table})",
        "bandwidth": f"{roofline.bandwidth_bytes_per_s / 1e12:.3f} TB/s (fraction {roofline.memory_fraction:.2f})",
        "overhead": f"{execution.overhead}: launch {roofline.launch_s * 1e6:.1f} us, dispatch "
        f"{roofline.dispatch_s * 1e6:.1f} us per kernel" + (
            f", engine host {roofline.step_host_s * 1e3:.2f} ms per step" if cost.engine_step and roofline.step_host_s
            else "") + (
            "; prefill without a CUDA graph"
            + (f" above {roofline.prefill_graph_tokens} tokens" if roofline.prefill_graph_tokens else "")
            + f": launch {roofline.for_prefill().launch_s * 1e6:.1f} us, dispatch "
            f"{roofline.prefill_dispatch_s * 1e6:.1f} us per kernel, the pass the longer of its kernels and its "
              "dispatch" if roofline.prefill_dispatch_s else ""),
        "overlap": execution.overlap,
        "clock": clock_line(hw, roofline),
    }


def clock_line(hw: HardwareSpec, roofline: Roofline) -> str:
    """The clock long prefill passes run at (timing.sustained), with the figures' sources."""
    if roofline.sustained is None:
        why = ("clock='boost'" if roofline.execution.clock == "boost" else "efficiency='peak'"
               if roofline.execution.efficiency == "peak" else "no [sustained] figure for this device")
        return f"boost: every kernel at the clock short benchmarks time it at ({why})"
    fraction, onset_s = roofline.sustained
    source = hw.sustained["matmul_fraction"].source.split(": ")[0]  # who measured it; the file has the rest
    return (f"sustained: a prefill pass's compute-bound work past {onset_s * 1e3:g} ms at {fraction:.3f} of the "
            f"boost rate (hardware [sustained]: {source})")


def weights_line(model: ModelSpec, cost: CostOptions) -> str:
    """How the weights are costed and where that comes from: the weight_dtype argument, or the config's
    quantization_config per module role, or the config's dtype (or what was assumed and why)."""
    if cost.weight_dtype:
        over = f", overrides quantization_config {model.quantization.method}" if model.quantization else ""
        return f"{cost.weight_dtype} everywhere (weight_dtype argument{over})"
    line = model.weights_source()
    if model.quantization is not None and model.dtype_source and not model.dtype_source.endswith("(config)"):
        line += f"; {model.dtype_source}"
    return line


def _weight_only_hint(hw: HardwareSpec, cost: CostOptions) -> str:
    """Where weight_dtype fp8 or nvfp4 runs with 16-bit activations (weight-only GEMMs) on a device whose matrix
    unit takes that precision: serving engines run such checkpoints with quantized activations there (vLLM's
    --quantization fp8 is W8A8 on Hopper), which activation_dtype gives. "" otherwise."""
    weight, act = cost.weight_dtype, cost.activation_dtype
    unit = {"fp8": "fp8", "nvfp4": "fp4"}.get(weight or "")
    if unit is None or act is not None or unit not in hw.matrix_flops_per_s:
        return ""
    return (f"; weight-only {weight} GEMMs (16-bit activations): this device's {unit} matrix unit would run "
            f"activation_dtype='{weight}' too, as engines serve {weight} checkpoints on it")


def _quantized_matmuls(model: ModelSpec, cost: CostOptions, activation: str) -> str:
    """", quantized GEMMs fp8" where a checkpoint's quantized formats run their matmuls at another precision than
    the activations' (fp8 block-scaled DeepSeek, NVFP4 checkpoints), "" otherwise (report.plot draws that roof)."""
    from ..dtypes import MATMUL_PRECISION
    from ..models.quantization import ROLES, compute_precision

    if model.quantization is None or cost.weight_dtype:
        return ""
    own = MATMUL_PRECISION[activation]
    other = sorted({compute_precision(model.quantization.format_of(role), activation) for role in ROLES} - {own})
    return f", quantized GEMMs {'/'.join(other)}" if other else ""
