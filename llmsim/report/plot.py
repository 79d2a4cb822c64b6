"""Plots (matplotlib, imported only here): the roofline with the ops on it, a sweep chart with bound
bands, and a time breakdown per op class. Each function returns a Figure."""

from __future__ import annotations

import re
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files, not windows: works on machines without a display
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text

from ..analysis.simulate import SimulationResult
from ..analysis.text import device_word
from ..dtypes import MATMUL_PRECISION
from ..hardware.spec import HardwareSpec, load_hardware

PHASE_COLOURS = {"prefill": "tab:blue", "decode": "tab:orange"}
BOUND_COLOURS = {"compute": "#d8e8f8", "memory": "#fde2c8", "overhead": "#e6e6e6", "none": "white"}
ROOF_STYLES = [("tab:purple", "--"), ("tab:brown", "-."), ("tab:pink", ":"), ("tab:olive", (0, (5, 1, 1, 1, 1, 1))),
               ("tab:cyan", (0, (1, 3))), ("0.5", (0, (8, 3)))]  # the roofs of precisions the run does not use
OP_CLASSES = {"matmul": "matmul", "attention": "attention", "norm": "elementwise", "elementwise": "elementwise",
              "embedding": "elementwise", "routing": "elementwise", "cache": "elementwise",
              "communication": "communication"}


def run_precisions(result: SimulationResult, hw: HardwareSpec) -> tuple[str, str]:
    """(matrix precision, vector precision) the run's ops execute at: the matmul precision follows the
    activation dtype (llmsim.dtypes.matmul_precision), the vector unit runs fp16 for fp16/bf16 where the
    device has an fp16 vector peak, else fp32 (HardwareSpec.vector_peak_flops_per_s)."""
    activation = result.options.activation_dtype
    if activation is None:  # the model's own dtype: simulate() states it in its assumptions
        found = re.search(r"activations (\w+)", result.assumptions.get("dtypes", ""))
        activation = found.group(1) if found else "bfloat16"
    matrix = MATMUL_PRECISION.get(activation, activation)
    vector = "fp16" if matrix in ("fp16", "bf16") and "fp16" in hw.vector_flops_per_s else "fp32"
    return matrix, vector


def quantized_precisions(result: SimulationResult) -> tuple[str, ...]:
    """The matrix precisions a checkpoint's quantized GEMMs run at besides the activations' (the result's dtypes
    assumption: ", quantized GEMMs fp8"), e.g. ("fp8",) for DeepSeek-V3's block-scaled fp8; () for none."""
    found = re.search(r"quantized GEMMs ([\w/]+)", result.assumptions.get("dtypes", ""))
    return tuple(found.group(1).split("/")) if found else ()


def _rate(value: float, unit: str) -> str:
    """A peak with the prefix that keeps it readable: 989.4 TFLOP/s, 3.35 TB/s; a CPU's 95.15 GFLOP/s, 11.65 GB/s."""
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M")):
        if value >= scale:
            return f"{value / scale:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


def memory_warning(result: SimulationResult) -> str | None:
    """One line when the run does not fit in the device's memory (None when it does)."""
    m = result.memory
    if m.fits:
        return None
    gib = 1024**3
    return (f"DOES NOT FIT in memory: {m.total_bytes / gib:.1f} GiB needed per {device_word(result.device_type)} of "
            f"{m.capacity_bytes / gib:.1f} GiB (times are for a device that could hold it)")


def _workload(result: SimulationResult) -> str:
    gpus = f", {result.gpus} {device_word(result.device_type)}s" if result.gpus > 1 else ""
    return (f"{result.model} on {result.hardware}{gpus}: batch {result.batch_size}, prompt {result.prompt_len}, "
            f"gen {result.gen_len}, engine {result.engine or result.execution.engine}")


def _fmt_time(seconds: float) -> str:
    """Seconds with the unit that keeps 3 significant figures readable (us, ms or s)."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale * 0.9995 or unit == "us":
            return f"{seconds / scale:.3g} {unit}"
    raise AssertionError("unreachable")


def _warn(ax: Any, result: SimulationResult) -> None:
    warning = memory_warning(result)
    if warning:
        ax.text(0.5, 0.985, warning, transform=ax.transAxes, ha="center", va="top", fontsize=9, color="white",
                fontweight="bold", bbox={"facecolor": "tab:red", "edgecolor": "none", "pad": 3}, zorder=10)


def roofline_figure(result: SimulationResult, hardware: Any, label_top: int = 4) -> Figure:
    """The device's ceilings and every op of both phases at its arithmetic intensity and attained
    FLOP/s (kernel time, no overhead), sized by its share of the phase, coloured by phase.

    The roofs the run's ops execute at (its matmul precision, its vector unit) are drawn bold with their
    ridge points labelled; the device's other matrix precisions thin, each in its own colour and style.
    The `label_top` ops of each phase with the largest share of its time are numbered (P1.., D1..) and
    named in a key beside the plot."""
    hw: HardwareSpec = load_hardware(hardware)
    fig, ax = plt.subplots(figsize=(13, 6.2))
    fig.subplots_adjust(left=0.07, right=0.66, top=0.94, bottom=0.09)  # the legends to the right
    bandwidth = hw.memory_bandwidth_bytes_per_s
    ops = [(phase, op) for phase in (result.prefill, result.decode) for op in phase.ops
           if op.bytes > 0 and (op.matmul_flops + op.vector_flops) > 0]
    intensities = [(op.matmul_flops + op.vector_flops) / op.bytes for _, op in ops]
    x_lo = min([0.1, *intensities]) / 2
    x_hi = max([1e4, *intensities]) * 2
    matrix, vector = run_precisions(result, hw)
    # used roofs first: the matrix unit at the run's precision (fp32 without a matrix peak: the vector
    # unit), the vector unit; sdpa_math attention multiplies in fp32
    used: dict[str, tuple[float, str, str]] = {}  # precision -> (peak, colour, what runs there)
    vector_peak = hw.vector_flops_per_s[vector].value
    quantized = [p for p in quantized_precisions(result) if p != matrix]  # a checkpoint's fp8/fp4 GEMMs
    drawn = [p for p in quantized if p in hw.matrix_flops_per_s]
    for precision, colour in zip(drawn, ("tab:purple", "tab:brown"), strict=False):
        used[f"{precision} matrix"] = (hw.matrix_flops_per_s[precision].value, colour, "quantized matmuls")
    if matrix in hw.matrix_flops_per_s:
        used[f"{matrix} matrix"] = (hw.matrix_flops_per_s[matrix].value, "tab:red",
                                    "the other matmuls" if drawn else "matmuls")
    if result.options.attention == "sdpa_math" and matrix != "fp32":
        if "fp32" in hw.matrix_flops_per_s:
            used["fp32 matrix"] = (hw.matrix_flops_per_s["fp32"].value, "tab:blue", "attention scores")
        elif vector != "fp32":
            used["fp32 vector"] = (hw.vector_flops_per_s["fp32"].value, "tab:blue", "attention scores")
    used[f"{vector} vector"] = (vector_peak, "tab:green", "element-wise ops" + (
        ", matmuls" if matrix not in hw.matrix_flops_per_s else "") + (
        ", attention scores" if result.options.attention == "sdpa_math" and vector == "fp32" else ""))
    # the other precisions, one roof per distinct peak (fp8 and int8 often share one)
    used_peaks = {peak for peak, _, _ in used.values()}
    others: dict[float, list[str]] = {}
    for k, q in sorted(hw.matrix_flops_per_s.items(), key=lambda kv: -kv[1].value):
        if f"{k} matrix" not in used:
            others.setdefault(q.value, []).append(k)
    for k, q in hw.vector_flops_per_s.items():
        if f"{k} vector" not in used:
            others.setdefault(q.value, []).append(f"{k} vector")
    same = {peak: names for peak, names in others.items() if peak in used_peaks}  # e.g. fp16 = bf16
    others = {peak: names for peak, names in others.items() if peak not in used_peaks}
    top_peak = max([*used_peaks, *others])
    # the memory roof once, up to the highest ridge
    ax.plot([x_lo, top_peak / bandwidth], [x_lo * bandwidth, top_peak], color="k", lw=1.6,
            label=f"memory {_rate(bandwidth, 'B/s')}")
    for (name, (peak, colour, what)) in used.items():
        ridge = peak / bandwidth
        also = f" (= {', '.join(same[peak])})" if peak in same else ""
        ax.plot([ridge, x_hi], [peak, peak], color=colour, lw=2.2,
                label=f"{name} {_rate(peak, 'FLOP/s')}{also}: {what}")
        ax.plot([ridge], [peak], marker="o", color=colour, ms=6)
        ax.annotate(f"{name.split()[0]} ridge {ridge:.3g} FLOP/B", (ridge, peak), textcoords="offset points",
                    xytext=(-8, 6), ha="right", fontsize=8, color=colour, fontweight="bold")
    for i, (peak, names) in enumerate(others.items()):
        colour, style = ROOF_STYLES[i % len(ROOF_STYLES)]
        ax.plot([peak / bandwidth, x_hi], [peak, peak], color=colour, ls=style, lw=1.0, alpha=0.8,
                label=f"{' / '.join(names)} {_rate(peak, 'FLOP/s')} (not used)")
    key: list[str] = []
    marks: list[Any] = []
    lowest: list[float] = []  # the lowest attained rate of each phase (a CPU's ops sit far below a GPU's 1 GFLOP/s)
    for phase_result in (result.prefill, result.decode):
        chosen = [op for p, op in ops if p is phase_result]
        if not chosen:
            continue
        kernel_s = [max(op.compute_s + op.memory_s if result.execution.overlap == "sum" else
                        max(op.compute_s, op.memory_s), 1e-30) for op in chosen]
        x = [(op.matmul_flops + op.vector_flops) / op.bytes for op in chosen]
        y = [(op.matmul_flops + op.vector_flops) / k for op, k in zip(chosen, kernel_s)]
        sizes = [20 + 600 * op.share for op in chosen]
        lowest.append(min(y))
        colour = PHASE_COLOURS[phase_result.phase]
        ax.scatter(x, y, s=sizes, alpha=0.55, color=colour, edgecolor="k", lw=0.4,
                   label=f"{phase_result.phase} ops ({phase_result.bound}-bound)")
        # the top ops by share, numbered; ops at the same spot (gate/up/down of one shape) share a number
        spots: dict[tuple[float, float], list[int]] = {}
        for i in sorted(range(len(chosen)), key=lambda i: -chosen[i].share):
            key_xy = (round(float(np.log10(x[i])), 2), round(float(np.log10(y[i])), 2))
            if key_xy in spots or len(spots) < label_top:
                spots.setdefault(key_xy, []).append(i)
        # numbered by their share of the phase (ops of one shape together)
        spots = dict(sorted(spots.items(), key=lambda kv: -sum(chosen[i].share for i in kv[1])))
        letter = phase_result.phase[0].upper()
        # numbers stacked below-right of their points in order of intensity, so leader lines do not cross
        for rank, (lx, ly) in enumerate(sorted(spots, key=lambda xy: xy)):
            number = list(spots).index((lx, ly)) + 1
            marks.append(ax.annotate(f"{letter}{number}", (10**lx, 10**ly), textcoords="offset points",
                        xytext=(14 + 4 * rank, -16 - 13 * rank), fontsize=8, color=colour, fontweight="bold",
                        arrowprops={"arrowstyle": "-", "color": "0.5", "lw": 0.6}))
        for number, members in enumerate(spots.values(), start=1):
            names = [chosen[i].name.removeprefix("layers.") for i in members]
            share = sum(chosen[i].share for i in members)
            more = f" (+{len(names) - 1} at the same point)" if len(names) > 1 else ""
            key.append(f"{letter}{number}  {names[0]}{more}: {share:.0%} of {phase_result.phase}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(min(x_lo * bandwidth, 1e9, *(y / 3 for y in lowest)), top_peak * 3)  # every op's point on the plot
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attained FLOP/s")
    matmuls = f"quantized matmuls {'/'.join(quantized)}, the others {matrix}" if quantized else f"matmuls {matrix}"
    ax.set_title(f"{_workload(result)}, {matmuls}", fontsize=10)
    ax.grid(True, which="both", alpha=0.2)
    roofs = ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                      title="roofs (the hardware file's peaks; bold: used by this run)",
                      title_fontsize=8)
    if key:
        ax.add_artist(roofs)
        roofs.set_clip_on(False)  # add_artist clips it to the axes, which leaves it out of the saved figure's bbox
        handles = [Line2D([], [], lw=0) for _ in key]
        ax.legend(handles, key, fontsize=7.5, loc="lower left", bbox_to_anchor=(1.01, 0.0), handlelength=0,
                  handletextpad=0, title="largest ops (share of phase time)", title_fontsize=8)
    _spread(fig, marks)
    _warn(ax, result)
    return fig


def _spread(fig: Figure, marks: list[Any], step_points: float = 10.0) -> None:
    """Moves each label down (in steps) until it overlaps none placed before it: ops of both phases can
    sit at one spot (the norms of prefill and decode)."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    placed: list[Any] = []
    for mark in marks:
        for _ in range(40):
            box = text_extent(mark, renderer)
            if not any(box.overlaps(other) for other in placed):
                break
            x, y = mark.xyann
            mark.xyann = (x, y - step_points)
        placed.append(text_extent(mark, renderer))


def text_extent(mark: Any, renderer: Any) -> Any:
    """The box of an annotation's text alone (Annotation.get_window_extent includes its leader line)."""
    mark.update_positions(renderer)
    return Text.get_window_extent(mark, renderer)


def sweep_figure(model: Any, hardware: Any, vary: str = "batch_size", values: Any = None, metric: str = "tpot",
                 batch_size: int | None = None, prompt_len: int | None = None, gen_len: int = 128,
                 **options: Any) -> Figure:
    """A metric against batch size or prompt length, shaded by the phase's bound, with the crossover
    and the out-of-memory wall. The quantity not varied is fixed at batch_size (default 1) or prompt_len
    (default 1024); a value of the varied one is refused (the sweep's values replace it)."""
    from ..analysis.regime import find_crossover, geometric_values, sweep
    from ..analysis.simulate import resolve
    from ..errors import OptionError, check_choice

    check_choice("vary", vary, ("batch_size", "prompt_len"))
    check_choice("metric", metric, ("tpot", "ttft", "throughput"))
    given = {"batch_size": batch_size, "prompt_len": prompt_len}
    if given[vary] is not None:
        raise OptionError(f"{vary}={given[vary]!r}: {vary} is the quantity varied; give its values instead "
                          "(values=, or --values lo:hi[:points])")
    batch_size = 1 if batch_size is None else batch_size
    prompt_len = 1024 if prompt_len is None else prompt_len
    if metric == "tpot" and gen_len == 1:  # no decode step: nothing to draw
        raise OptionError("metric='tpot' with gen_len=1: one generated token has no decode step, so no TPOT; give "
                          "gen_len >= 2 or metric='ttft' or 'throughput'")
    spec, hw, _, execution = resolve(model, hardware, **options)
    if values is None:
        top = 4096 if vary == "batch_size" else max(spec.max_position_embeddings - gen_len, 2)
        values = geometric_values(1 if vary == "batch_size" else 16, top, 8)
    values = np.asarray(values)
    if np.unique(values).size < 2:  # a line and its bands need a range
        from ..errors import OptionError

        raise OptionError(f"values={values.tolist()}: a sweep chart needs at least two different {vary} values "
                          f"(e.g. 1:256 for a geometric range)")
    args = {"batch_size": batch_size, "prompt_len": prompt_len, "gen_len": gen_len, vary: values}
    s = sweep(spec, hw, **args, **options)
    phase = "prefill" if metric == "ttft" else "decode"
    column = {"tpot": "tpot_s", "ttft": "ttft_s", "throughput": "throughput_tokens_per_s"}[metric]
    x = s.columns[vary]
    y = s.columns[column] * (1e3 if metric != "throughput" else 1.0)
    bounds = s.columns[f"{phase}_bound"]
    fig, ax = plt.subplots(figsize=(9, 5))
    cross_var = {"batch_size": "batch_size", "prompt_len": "seq_len" if phase == "prefill" else "kv_len"}[vary]
    fixed = {"batch_size": batch_size, "seq_len": prompt_len, "kv_len": prompt_len}
    fixed.pop(cross_var)
    fixed = {k: v for k, v in fixed.items() if (phase == "prefill") == (k != "kv_len")}
    from ..analysis.regime import PREFILL_ONLY_OPTIONS

    # the chart's own simulations read every option; a decode crossover is refused the prefill's alone
    cross_options = {k: v for k, v in options.items() if phase == "prefill" or k not in PREFILL_ONLY_OPTIONS}
    crossover = find_crossover(spec, hw, phase=phase, vary=cross_var, lo=float(x[0]), hi=float(x[-1]),
                               **fixed, **cross_options)
    # each point's band reaches halfway (on the log axis) to its neighbours; where the bound flips between two
    # points, the band edge is the crossover itself, so that the bands and the crossover line agree on a coarse grid
    edges = np.concatenate([[x[0]], np.sqrt(x[1:] * x[:-1]), [x[-1]]])
    if crossover.value is not None:
        flips = [i for i in range(1, len(x)) if bounds[i] != bounds[i - 1] and x[i - 1] <= crossover.value <= x[i]]
        if flips:
            edges[flips[0]] = crossover.value
    for i, bound in enumerate(bounds):
        ax.axvspan(edges[i], edges[i + 1], color=BOUND_COLOURS.get(str(bound), "white"), lw=0)
    ax.plot(x, y, color="k", lw=1.6, marker=".", ms=3)
    for bound in dict.fromkeys(str(b) for b in bounds):
        ax.fill_between([], [], color=BOUND_COLOURS[bound], label=f"{phase} {bound}-bound")
    if crossover.value is not None:
        ax.axvline(crossover.value, color="tab:green", ls="--", lw=1.2,
                   label=f"{crossover.from_bound}->{crossover.to_bound} at {crossover.value:.4g}")
    no_fit = np.where(~s.columns["fits"])[0]
    if len(no_fit):
        wall = x[no_fit[0]]
        ax.axvline(wall, color="tab:red", lw=2, label=f"out of memory from {wall:g}")
        ax.axvspan(wall, x[-1], facecolor="none", edgecolor="tab:red", hatch="//", lw=0, alpha=0.4)
    ax.set_xscale("log")
    if metric != "throughput":
        ax.set_yscale("log")
    ax.set_xlim(x[0], x[-1])
    ax.set_xlabel({"batch_size": "batch size (sequences)", "prompt_len": "prompt length (tokens)"}[vary])
    ax.set_ylabel({"tpot": "TPOT (ms)", "ttft": "TTFT (ms)", "throughput": "throughput (tokens/s)"}[metric])
    held = {"batch_size": f"batch {batch_size}", "prompt_len": f"prompt {prompt_len}"}
    fixed_text = ", ".join(text for name, text in held.items() if name != vary)
    ax.set_title(f"{spec.name} on {hw.name}: {metric} against {vary.replace('_', ' ')} ({fixed_text}, gen {gen_len}, "
                 f"engine {execution.engine})", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def breakdown_figure(result: SimulationResult) -> Figure:
    """Stacked time per op class (matmul, attention, elementwise, communication, overhead) per phase,
    as a share of the phase so both phases read on one axis."""
    classes = ["matmul", "attention", "elementwise", "communication", "overhead"]
    colours = ["tab:blue", "tab:purple", "tab:olive", "tab:cyan", "tab:gray"]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    phases = [result.prefill, result.decode]
    for j, phase in enumerate(phases):
        shares = dict.fromkeys(classes, 0.0)
        for op in phase.ops:
            busy_s = op.time_s - op.overhead_s - op.communication_s
            shares[OP_CLASSES.get(op.kind, "elementwise")] += busy_s / max(phase.time_s, 1e-30)
            shares["communication"] += op.communication_s / max(phase.time_s, 1e-30)
            shares["overhead"] += op.overhead_s / max(phase.time_s, 1e-30)
        bottom = 0.0
        for name, colour in zip(classes, colours):
            ax.barh(j, shares[name], left=bottom, color=colour, label=name if j == 0 else None)
            if shares[name] > 0.06:
                ax.text(bottom + shares[name] / 2, j, f"{shares[name]:.0%}", ha="center", va="center", fontsize=8,
                        color="white")
            bottom += shares[name]
    steps = result.decode.steps
    ax.set_yticks(range(len(phases)), [
        f"prefill\nTTFT {_fmt_time(result.ttft_s)}",
        f"decode\nTPOT {_fmt_time(result.tpot_s)} per token\n({steps} step{'s' if steps != 1 else ''}: "
        f"{_fmt_time(result.decode.time_s)} in all)"])
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of phase time")
    ax.set_title(f"{_workload(result)}\nwhere the time goes", fontsize=10)
    if not result.memory.fits:  # room above the bars for the warning
        ax.set_ylim(-0.6, len(phases) - 0.4 + 0.3)
        _warn(ax, result)
    ax.legend(fontsize=8, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.22))
    fig.tight_layout()
    return fig


def pareto_figure(plan: Any) -> Figure:
    """Every candidate of a capacity plan: TPOT (TTFT when gen_len = 1: no decode step) against tokens/s per GPU,
    the Pareto front and the best."""
    key = plan.front_latency
    fig, ax = plt.subplots(figsize=(8, 5))
    markers = {1: "o", 2: "s", 4: "^", 8: "D", 16: "P"}
    for c in plan.candidates:
        ax.scatter(c.tokens_per_s_per_gpu, getattr(c, key) * 1e3, marker=markers.get(c.tensor_parallel, "x"),
                   color="tab:blue" if c.meets_targets else "0.75", s=18 + 4 * c.pipeline_parallel, alpha=0.8)
    if plan.pareto:
        ax.plot([c.tokens_per_s_per_gpu for c in plan.pareto], [getattr(c, key) * 1e3 for c in plan.pareto],
                color="tab:orange", lw=1.5, label="Pareto front")
    if plan.best:
        ax.scatter([plan.best.tokens_per_s_per_gpu], [getattr(plan.best, key) * 1e3], s=160, facecolor="none",
                   edgecolor="tab:red", lw=2, label=f"best: TP{plan.best.tensor_parallel} PP"
                   f"{plan.best.pipeline_parallel} batch {plan.best.batch_size}")
    for tp, marker in markers.items():
        if any(c.tensor_parallel == tp for c in plan.candidates):
            ax.scatter([], [], marker=marker, color="0.4", label=f"TP={tp}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"generated tokens/s per {device_word(plan.device_type)}")
    ax.set_ylabel("TPOT (ms)" if key == "tpot_s" else "TTFT (ms): generate 1, no decode step")
    ax.set_title(f"{plan.model} on {plan.hardware}: capacity plan (grey: misses a target or does not fit)",
                 fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
