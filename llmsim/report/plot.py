"""Plots (matplotlib, imported only here): the roofline with the ops on it, a sweep chart with bound
bands, and a time breakdown per op class. Each function returns a Figure."""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")  # files, not windows: works on machines without a display
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..analysis.simulate import SimulationResult
from ..hardware.spec import HardwareSpec, load_hardware

PHASE_COLOURS = {"prefill": "tab:blue", "decode": "tab:orange"}
BOUND_COLOURS = {"compute": "#d8e8f8", "memory": "#fde2c8", "overhead": "#e6e6e6", "none": "white"}
OP_CLASSES = {"matmul": "matmul", "attention": "attention", "norm": "elementwise", "elementwise": "elementwise",
              "embedding": "elementwise", "routing": "elementwise", "cache": "elementwise",
              "communication": "communication"}


def roofline_figure(result: SimulationResult, hardware: Any, label_top: int = 4) -> Figure:
    """The device's ceilings and every op of both phases at its arithmetic intensity and attained
    FLOP/s (kernel time, no overhead), sized by its share of the phase, coloured by phase."""
    hw: HardwareSpec = load_hardware(hardware)
    fig, ax = plt.subplots(figsize=(9, 6))
    bandwidth = hw.memory_bandwidth_bytes_per_s
    ops = [(phase, op) for phase in (result.prefill, result.decode) for op in phase.ops
           if op.bytes > 0 and (op.matmul_flops + op.vector_flops) > 0]
    intensities = [(op.matmul_flops + op.vector_flops) / op.bytes for _, op in ops]
    x_lo = min([0.1, *intensities]) / 2
    x_hi = max([1e4, *intensities]) * 2
    xs = np.geomspace(x_lo, x_hi, 200)
    peaks = sorted(((k, q.value) for k, q in hw.matrix_flops_per_s.items()), key=lambda kv: -kv[1])
    peaks.append(("vector fp32", hw.vector_flops_per_s["fp32"].value))
    styles = ["-", "--", "-.", ":"]
    for i, (name, peak) in enumerate(peaks):
        ax.plot(xs, np.minimum(xs * bandwidth, peak), color="0.25", lw=1.2, ls=styles[i % len(styles)],
                label=f"{name} {peak / 1e12:.0f} TFLOP/s")
        ridge = peak / bandwidth
        ax.plot([ridge], [peak], marker="|", color="0.25", ms=12)
        if i < 2:
            ax.annotate(f"ridge {ridge:.0f}", (ridge, peak), textcoords="offset points", xytext=(4, -14),
                        fontsize=8, color="0.3")
    ax.text(x_lo * 1.5, x_lo * 1.5 * bandwidth * 1.3, f"{bandwidth / 1e12:.2f} TB/s", rotation=0, fontsize=8,
            color="0.3")
    for phase_result in (result.prefill, result.decode):
        chosen = [op for p, op in ops if p is phase_result]
        if not chosen:
            continue
        kernel_s = [max(op.compute_s + op.memory_s if result.execution.overlap == "sum" else
                        max(op.compute_s, op.memory_s), 1e-30) for op in chosen]
        x = [(op.matmul_flops + op.vector_flops) / op.bytes for op in chosen]
        y = [(op.matmul_flops + op.vector_flops) / k for op, k in zip(chosen, kernel_s)]
        sizes = [20 + 600 * op.share for op in chosen]
        ax.scatter(x, y, s=sizes, alpha=0.55, color=PHASE_COLOURS[phase_result.phase], edgecolor="k", lw=0.4,
                   label=f"{phase_result.phase} ops ({phase_result.bound}-bound)")
        # one label per point: ops at the same spot (gate/up/down of one shape) share it
        labels: dict[tuple[float, float], list[str]] = {}
        for i in sorted(range(len(chosen)), key=lambda i: -chosen[i].share):
            key = (round(float(np.log10(x[i])), 2), round(float(np.log10(y[i])), 2))
            if key in labels or len(labels) < label_top:
                labels.setdefault(key, []).append(chosen[i].name.removeprefix("layers."))
        for rank, ((lx, ly), names) in enumerate(labels.items()):
            offset = (8, 10 - 13 * rank) if phase_result.phase == "prefill" else (8, -10 - 13 * rank)
            text = names[0] if len(names) == 1 else f"{names[0]} (+{len(names) - 1} same shape)"
            ax.annotate(text, (10**lx, 10**ly), textcoords="offset points",
                        xytext=offset, fontsize=7, color=PHASE_COLOURS[phase_result.phase],
                        arrowprops={"arrowstyle": "-", "color": "0.6", "lw": 0.5})
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(min(x_lo * bandwidth, 1e9), peaks[0][1] * 3)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attained FLOP/s")
    ax.set_title(f"{result.model} on {hw.name}: B={result.batch_size}, prompt {result.prompt_len}, "
                 f"gen {result.gen_len}", fontsize=10)
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def sweep_figure(model: Any, hardware: Any, vary: str = "batch_size", values: Any = None, metric: str = "tpot",
                 batch_size: int = 1, prompt_len: int = 1024, gen_len: int = 128, **options: Any) -> Figure:
    """A metric against batch size or prompt length, shaded by the phase's bound, with the crossover
    and the out-of-memory wall."""
    from ..analysis.regime import find_crossover, geometric_values, sweep
    from ..analysis.simulate import resolve

    spec, hw, _, _ = resolve(model, hardware, **options)
    if values is None:
        top = 4096 if vary == "batch_size" else max(spec.max_position_embeddings - gen_len, 2)
        values = geometric_values(1 if vary == "batch_size" else 16, top, 8)
    values = np.asarray(values)
    args = {"batch_size": batch_size, "prompt_len": prompt_len, "gen_len": gen_len, vary: values}
    s = sweep(spec, hw, **args, **options)
    phase = "prefill" if metric == "ttft" else "decode"
    column = {"tpot": "tpot_s", "ttft": "ttft_s", "throughput": "throughput_tokens_per_s"}[metric]
    x = s.columns[vary]
    y = s.columns[column] * (1e3 if metric != "throughput" else 1.0)
    bounds = s.columns[f"{phase}_bound"]
    fig, ax = plt.subplots(figsize=(9, 5))
    edges = np.concatenate([[x[0]], np.sqrt(x[1:] * x[:-1]), [x[-1]]])
    for i, bound in enumerate(bounds):
        ax.axvspan(edges[i], edges[i + 1], color=BOUND_COLOURS.get(str(bound), "white"), lw=0)
    ax.plot(x, y, color="k", lw=1.6, marker=".", ms=3)
    for bound in dict.fromkeys(str(b) for b in bounds):
        ax.fill_between([], [], color=BOUND_COLOURS[bound], label=f"{phase} {bound}-bound")
    cross_var = {"batch_size": "batch_size", "prompt_len": "seq_len" if phase == "prefill" else "kv_len"}[vary]
    fixed = {"batch_size": batch_size, "seq_len": prompt_len, "kv_len": prompt_len}
    fixed.pop(cross_var)
    fixed = {k: v for k, v in fixed.items() if (phase == "prefill") == (k != "kv_len")}
    crossover = find_crossover(spec, hw, phase=phase, vary=cross_var, lo=float(x[0]), hi=float(x[-1]),
                               **fixed, **options)
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
    ax.set_title(f"{spec.name} on {hw.name}: {metric} against {vary.replace('_', ' ')}", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def breakdown_figure(result: SimulationResult) -> Figure:
    """Stacked time per op class (matmul, attention, elementwise, communication, overhead) per phase,
    as a share of the phase so both phases read on one axis."""
    classes = ["matmul", "attention", "elementwise", "communication", "overhead"]
    colours = ["tab:blue", "tab:purple", "tab:olive", "tab:cyan", "tab:gray"]
    fig, ax = plt.subplots(figsize=(7, 4))
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
    ax.set_yticks(range(len(phases)), [f"{p.phase}\n{p.time_s * 1e3:.3g} ms" for p in phases])
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of phase time")
    ax.set_title(f"{result.model} on {result.hardware}: where the time goes", fontsize=10)
    ax.legend(fontsize=8, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.22))
    fig.tight_layout()
    return fig


def pareto_figure(plan: Any) -> Figure:
    """Every candidate of a capacity plan: TPOT against tokens/s per GPU, the Pareto front and the best."""
    fig, ax = plt.subplots(figsize=(8, 5))
    markers = {1: "o", 2: "s", 4: "^", 8: "D", 16: "P"}
    for c in plan.candidates:
        ax.scatter(c.tokens_per_s_per_gpu, c.tpot_s * 1e3, marker=markers.get(c.tensor_parallel, "x"),
                   color="tab:blue" if c.meets_targets else "0.75", s=18 + 4 * c.pipeline_parallel, alpha=0.8)
    if plan.pareto:
        ax.plot([c.tokens_per_s_per_gpu for c in plan.pareto], [c.tpot_s * 1e3 for c in plan.pareto],
                color="tab:orange", lw=1.5, label="Pareto front")
    if plan.best:
        ax.scatter([plan.best.tokens_per_s_per_gpu], [plan.best.tpot_s * 1e3], s=160, facecolor="none",
                   edgecolor="tab:red", lw=2, label=f"best: TP{plan.best.tensor_parallel} PP"
                   f"{plan.best.pipeline_parallel} batch {plan.best.batch_size}")
    for tp, marker in markers.items():
        if any(c.tensor_parallel == tp for c in plan.candidates):
            ax.scatter([], [], marker=marker, color="0.4", label=f"TP={tp}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("generated tokens/s per GPU")
    ax.set_ylabel("TPOT (ms)")
    ax.set_title(f"{plan.model} on {plan.hardware}: capacity plan (grey: misses a target or does not fit)",
                 fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
