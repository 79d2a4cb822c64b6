"""The serving chart (matplotlib, imported only here): per-request latencies over time with their
percentiles, and the engine's batch occupancy and KV use over time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files, not windows
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure


def serving_figure(result: Any, path: str | Path | None = None) -> Figure:
    """Three panels sharing the time axis: TTFT of each request at its arrival (with p50/p99 lines), TPOT of
    each request, and running / waiting requests and KV use per engine step."""
    req, steps = result.requests, result.step_log
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    for ax, key, label in ((axes[0], "ttft_s", "TTFT"), (axes[1], "tpot_s", "TPOT")):
        values = req[key] * 1e3
        ax.scatter(req["arrival_s"], values, s=4, alpha=0.5, color="tab:blue")
        summary = getattr(result, key)
        if summary.samples == 0:  # TPOT with every request one token long: nothing to draw
            ax.text(0.5, 0.5, str(summary), transform=ax.transAxes, ha="center", va="center")
        for q, style in (("p50", "-"), ("p99", "--")) if summary.samples else ():
            ax.axhline(getattr(summary, q) * 1e3, color="tab:red", linestyle=style, linewidth=1,
                       label=f"{q} {getattr(summary, q) * 1e3:.1f} ms")
        ax.set_ylabel(f"{label} (ms)")
        if summary.samples:
            ax.legend(loc="upper left", fontsize=8)
    ax = axes[2]
    kv = ax.twinx()
    # one engine instance, or (disaggregated serving: an `instance` column) each of them on its own
    instance = np.asarray(steps["instance"]) if "instance" in steps else np.zeros(len(steps["start_s"]), int)
    ids = np.unique(instance)
    for k, e in enumerate(ids):
        mine = instance == e
        name = f"instance {e} " if len(ids) > 1 else ""
        colors = ("tab:green", "tab:orange", "0.5") if len(ids) == 1 else (f"C{k % 10}",) * 3
        start = np.asarray(steps["start_s"])[mine]
        ax.step(start, np.asarray(steps["running"])[mine], where="post", label=f"{name}running", color=colors[0])
        ax.step(start, np.asarray(steps["waiting"])[mine], where="post", label=f"{name}waiting", color=colors[1],
                linestyle="-" if len(ids) == 1 else ":")
        kv.plot(start, 100 * np.asarray(steps["kv_blocks_used"])[mine] * result.block_size
                / max(result.kv_cache_tokens, 1), color=colors[2], linewidth=0.8, alpha=0.6,
                label=f"{name}KV in use")
    ax.set_ylabel("requests")
    ax.set_xlabel("time (s)")
    kv.set_ylabel("KV cache in use (%)")
    kv.set_ylim(0, 105)
    lines = ax.get_legend_handles_labels()
    more = kv.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="upper left", fontsize=7, ncol=1 + len(ids) // 3)
    load = f"{result.request_rate:g} req/s" if result.request_rate is not None else f"concurrency {result.concurrency}"
    fig.suptitle(f"{result.model} on {result.hardware} x{result.gpus} ({result.engine}), {load}")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return fig


def serving_plan_figure(plan: Any, path: str | Path | None = None) -> Figure:
    """Every replica shape of a serving plan: the GPUs it needs for the target rate against its latency
    percentile at its highest sustainable rate; the Pareto front and the best marked."""
    fig, ax = plt.subplots(figsize=(8, 5))
    markers = {1: "o", 2: "s", 4: "^", 8: "D", 16: "P"}
    for c in plan.candidates:
        if c.gpus is None:
            continue
        ax.scatter(c.gpus, c.ttft_p_s * 1e3, marker=markers.get(c.tensor_parallel, "x"), color="tab:blue", s=40)
        ax.annotate(f"TP{c.tensor_parallel} seqs {c.max_num_seqs}\nTPOT {c.tpot_p_s * 1e3:.1f} ms",
                    (c.gpus, c.ttft_p_s * 1e3), fontsize=7, xytext=(4, 4), textcoords="offset points")
    if plan.pareto:
        ax.plot([c.gpus for c in plan.pareto], [c.ttft_p_s * 1e3 for c in plan.pareto], color="tab:orange",
                lw=1.5, label="Pareto front")
    if plan.best:
        ax.scatter([plan.best.gpus], [plan.best.ttft_p_s * 1e3], s=180, facecolor="none", edgecolor="tab:red", lw=2,
                   label=f"best: {plan.best.replicas} x TP{plan.best.tensor_parallel}")
    ax.set_xlabel(f"GPUs for {plan.request_rate:g} requests/s")
    ax.set_ylabel(f"p{plan.percentile} TTFT (ms) at the highest rate per replica")
    ax.set_title(f"{plan.model} on {plan.hardware}: serving plan", fontsize=10)
    ax.grid(True, alpha=0.25)
    ax.legend(fontsize=8)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return fig
