"""serve() against aiconfigurator-core's measured serving runs; write validation/serving.md and the chart
validation/serving_vs_measured.png.

    pip install ".[aiconfigurator]"      # the package that ships systems/silicon_sample.csv
    PYTHONPATH=. python validation/serving.py [--csv PATH] [--limit N]

The rows are validation data only: nothing in llmsim is fitted to them (llmsim.validation.serving).
error_pct = 100 * (predicted - measured) / measured, on the mean TTFT and the mean TPOT of each run.
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

import numpy as np

from llmsim.validation.serving import REQUESTS_PER_CLIENT, compare_serving, default_silicon_csv

HERE = Path(__file__).parent


def _row(name: str, errors: np.ndarray) -> str:
    a = np.abs(errors)
    return (f"| {name} | {len(errors)} | {np.median(a):.1f} | {np.percentile(a, 90):.1f} | "
            f"{np.median(errors):+.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=default_silicon_csv())
    parser.add_argument("--limit", type=int, help="simulate only the first N runnable rows")
    parser.add_argument("--out", type=Path, default=HERE / "serving.md")
    parser.add_argument("--plot", type=Path, default=HERE / "serving_vs_measured.png")
    parser.add_argument("--rows-json", type=Path, help="also write every simulated row (with its errors) as JSON")
    args = parser.parse_args()
    if args.csv is None:
        parser.error("no silicon_sample.csv: pip install '.[aiconfigurator]' or give --csv")
    c = compare_serving(args.csv, args.limit)
    lines = [
        "# serve() against measured serving runs",
        "",
        f"Source: `aiconfigurator_core/systems/silicon_sample.csv` ({args.csv.name}, NVIDIA aiconfigurator-core, "
        "Apache-2.0): measured aggregated and disaggregated serving runs of vLLM, SGLang and TensorRT-LLM at fixed "
        "concurrency with fixed input/output lengths, mean TTFT and TPOT per run. **Validation data only: nothing "
        "is fitted to it.**",
        "",
        "Rows with attention data parallelism (attention_dp_size d > 1) run `tensor_parallel=tp_size*d, "
        "attention_data_parallel=d, expert_parallel=moe_ep_size` (aggregated) or the same per pool, with the run's "
        "client count (`silicon_concurrency=`); a row whose fields contradict its own name (`..._tp{T}_ep{E}_{n}`: T "
        "GPUs) is skipped (llmsim.validation.serving).",
        "",
        f"Each runnable aggregated row is simulated with `llmsim.serve(model, device, engine=backend, concurrency=c, "
        f"prompt_len=isl, gen_len=osl, num_requests={REQUESTS_PER_CLIENT}*c, tensor_parallel=tp)` with the shipped "
        "model, hardware and measured-kernel files and the engine's default scheduler limits; fp8 runs with fp8 "
        "weights and activations and a 16-bit KV cache. The clients all start together (closed loop, `ramp_s=0`). "
        "Each disaggregated row that states its worker counts is simulated with `llmsim.serve_disaggregated(model, "
        "device, prefill={replicas, tensor_parallel, expert_parallel}, decode={...}, ...)` from the row's "
        "prefill_/decode_ num_workers, tp_size and moe_ep_size, the clients from `silicon_concurrency=` in "
        "silicon_data_source; the KV cache travels over NVLink when both pools fit one NVLink domain, else over "
        "the device file's inter-node link.",
        "",
        "Reproduce: `pip install '.[aiconfigurator]' && PYTHONPATH=. python validation/serving.py`",
        "",
        f"{len(c.rows)} rows simulated, {len(c.skipped)} skipped.",
        "",
    ]
    for metric in ("ttft", "tpot"):
        lines += [f"## {metric.upper()}", "",
                  "| group | rows | median abs error % | p90 abs error % | median signed % |", "|---|---|---|---|---|"]
        everything = np.concatenate(list(c.errors(metric).values())) if c.rows else np.zeros(0)
        if len(everything):
            lines.append(_row("**all**", everything))
        for key, errors in sorted(c.errors(metric, ("mode",)).items()):
            lines.append(_row(f"mode {key[0]}", errors))
        for key, errors in sorted(c.errors(metric, ("engine",)).items()):
            lines.append(_row(f"engine {key[0]}", errors))
        for key, errors in sorted(c.errors(metric, ("attention_dp",)).items()):
            if key[0] > 1:
                lines.append(_row(f"attention data parallel {key[0]}", errors))
        dp_rows = [r[f"{metric}_error_pct"] for r in c.rows if r["attention_dp"] > 1]
        if dp_rows:
            lines.append(_row("attention data parallel, all", np.asarray(dp_rows)))
        for key, errors in sorted(c.errors(metric, ("model", "system", "engine", "precision", "mode")).items()):
            lines.append(_row(" / ".join(map(str, key)), errors))
        lines.append("")
    lines += ["## Skipped rows", "", "| reason | rows |", "|---|---|"]
    reasons = collections.Counter("model not shipped" if r.startswith("model ") else r for _, r in c.skipped)
    lines += [f"| {reason} | {count} |" for reason, count in reasons.most_common()]
    lines += ["", f"![predicted vs measured]({args.plot.name})", ""]
    args.out.write_text("\n".join(lines))
    if args.rows_json:
        import json

        args.rows_json.write_text(json.dumps(c.rows))
    _plot(c, args.plot)
    for metric in ("ttft", "tpot"):
        e = np.concatenate(list(c.errors(metric).values())) if c.rows else np.zeros(1)
        print(f"{metric}: median |error| {np.median(np.abs(e)):.1f} %, p90 {np.percentile(np.abs(e), 90):.1f} %")
    print(f"{len(c.rows)} rows simulated, {len(c.skipped)} skipped -> {args.out}")


def _plot(c, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6))
    colours = {"vllm": "tab:blue", "sglang": "tab:green", "trtllm": "tab:red"}
    for ax, metric in zip(axes, ("ttft", "tpot")):
        for engine, colour in colours.items():
            for mode, marker in (("agg", "o"), ("disagg", "^")):
                rows = [r for r in c.rows if r["engine"] == engine and r["mode"] == mode]
                if rows:
                    ax.scatter([r[f"measured_{metric}_ms"] for r in rows], [r[f"{metric}_ms"] for r in rows],
                               s=6 if mode == "agg" else 18, alpha=0.6, color=colour, marker=marker,
                               label=f"{engine} ({'disaggregated' if mode == 'disagg' else 'aggregated'})")
        lo, hi = ax.get_xlim()
        ax.plot([lo, hi], [lo, hi], color="0.4", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"measured mean {metric.upper()} (ms)")
        ax.set_ylabel(f"llmsim serve() {metric.upper()} (ms)")
        ax.legend(fontsize=8)
    fig.suptitle("serve() vs aiconfigurator-core silicon_sample.csv (aggregated: dots, disaggregated: triangles)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
