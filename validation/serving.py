"""serve() against aiconfigurator-core's measured serving runs; write validation/serving.md and the chart
validation/serving_vs_measured.png.

    pip install ".[aiconfigurator]"      # the package that ships systems/silicon_sample.csv
    PYTHONPATH=. python validation/serving.py [--csv PATH] [--limit N] [--jobs N]

The rows are validation data only: nothing in llmsim is fitted to them (llmsim.validation.serving).
error_pct = 100 * (predicted - measured) / measured, on the mean TTFT and the mean TPOT of each run.
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

import numpy as np

from llmsim.validation.serving import (
    INFERENCEX_PROMPTS_PER_CLIENT,
    INFERENCEX_RANGE_RATIO,
    REQUESTS_PER_CLIENT,
    compare_serving,
    default_silicon_csv,
    repeat_summary,
)

HERE = Path(__file__).parent
PEER_CSV = HERE / "aiconfigurator-0.12.0-estimates.csv"


TARGET_PCT = 15.0  # the serving issue's target: median |error| per engine, device and mode


def _row(name: str, errors: np.ndarray) -> str:
    a = np.abs(errors)
    return (f"| {name} | {len(errors)} | {np.median(a):.1f} | {np.percentile(a, 90):.1f} | "
            f"{np.median(errors):+.1f} |")


def _peer_section(rows: list[dict], peer_csv: Path) -> list[str]:
    """llmsim's errors next to aiconfigurator's own estimates of the same runs (the rows both estimate)."""
    import csv

    with peer_csv.open(newline="") as f:
        peer = {r["id"]: r for r in csv.DictReader(f)}
    both = [(r, peer[r["id"]]) for r in rows if r["id"] in peer and peer[r["id"]]["ttft_ms"]]
    refused = sum(1 for r in rows if r["id"] in peer and not peer[r["id"]]["ttft_ms"])
    lines = ["## Against aiconfigurator's own estimate", "",
             f"aiconfigurator 0.12.0's `cli_estimate` of the same runs ({peer_csv.name}, written by "
             "`validation/aiconfigurator_estimates.py` in an environment with `aiconfigurator==0.12.0`, the database "
             "it serves): median absolute error % of llmsim and of aiconfigurator on the rows both estimate "
             f"({len(both)} of the {len(rows)} simulated here; aiconfigurator refused {refused}, "
             f"{sum(1 for r in rows if r['id'] not in peer)} were not run). aiconfigurator shares llmsim's kernel "
             "data (the same package's tables) but not its model; some of its corrections are calibrated to measured "
             "runs, so on this set it is not an independent baseline.", "",
             "| group | rows | TTFT llmsim | TTFT aiconfigurator | TPOT llmsim | TPOT aiconfigurator |",
             "|---|---|---|---|---|---|"]

    def line(name: str, pairs: list) -> str:
        cells = []
        for m in ("ttft", "tpot"):  # llmsim's error (its row's), then aiconfigurator's on the same measurement
            cells.append(np.median([abs(r[f"{m}_error_pct"]) for r, _ in pairs]))
            cells.append(np.median([abs(100 * (float(p[f"{m}_ms"]) - r[f"measured_{m}_ms"]) / r[f"measured_{m}_ms"])
                                    for r, p in pairs]))
        return f"| {name} | {len(pairs)} | " + " | ".join(f"{c:.1f}" for c in cells) + " |"

    if both:
        lines.append(line("**all**", both))
    for fields in (("mode",), ("engine",), ("engine", "system", "mode")):
        groups: dict[tuple, list] = collections.defaultdict(list)
        for r, p in both:
            groups[tuple(r[k] for k in fields)].append((r, p))
        lines += [line(" / ".join(map(str, key)), pairs) for key, pairs in sorted(groups.items())]
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=default_silicon_csv())
    parser.add_argument("--limit", type=int, help="simulate only the first N runnable rows")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (the rows are independent)")
    parser.add_argument("--out", type=Path, default=HERE / "serving.md")
    parser.add_argument("--plot", type=Path, default=HERE / "serving_vs_measured.png")
    parser.add_argument("--rows-json", type=Path, help="also write every simulated row (with its errors) as JSON")
    parser.add_argument("--peer", type=Path, default=PEER_CSV,
                        help="aiconfigurator's estimates of the rows (validation/aiconfigurator_estimates.py)")
    args = parser.parse_args()
    if args.csv is None:
        parser.error("no silicon_sample.csv: pip install '.[aiconfigurator]' or give --csv")
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: give a whole number >= 1")
    if args.jobs == 1:
        c = compare_serving(args.csv, args.limit)
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.jobs) as pool:
            c = compare_serving(args.csv, args.limit, executor=pool)
    fp8_cache = sum(r.get("kv_dtype") == "fp8" for r in c.rows)
    recipe_rows = sum(bool(r.get("recipe_options")) and r["protocol"] == "inferencex" for r in c.rows)
    generated_rows = sum(bool(r.get("recipe_options")) and r["protocol"] == "fixed" for r in c.rows)

    def pool_recipe_rows(engine: str) -> int:
        """InferenceX disaggregated rows of `engine` that took pool knobs from their srt-slurm recipe."""
        return sum(r["engine"] == engine and r["protocol"] == "inferencex"
                   and any(k.startswith(("prefill.", "decode.")) for k in r.get("recipe_options", [])) for r in c.rows)
    lines = [
        "# serve() against measured serving runs",
        "",
        f"Source: `aiconfigurator_core/systems/silicon_sample.csv` ({args.csv.name}, NVIDIA aiconfigurator-core, "
        "Apache-2.0): measured aggregated and disaggregated serving runs of vLLM, SGLang and TensorRT-LLM at fixed "
        "concurrency at nominal input/output lengths (isl, osl), mean TTFT and TPOT per run (the benchmark's "
        "mean_ttft and mean_tpot, as aiconfigurator's own accuracy campaign reads them). **Validation data only: "
        "nothing is fitted to it.**",
        "",
        "Rows with attention data parallelism (attention_dp_size d > 1) run `tensor_parallel=tp_size*d, "
        "attention_data_parallel=d, expert_parallel=moe_ep_size` (aggregated) or the same per pool, with the run's "
        "client count (`silicon_concurrency=`). A row whose fields contradict its own name (`..._tp{T}_ep{E}_{n}`: T "
        "GPUs), or an aggregated InferenceX row whose fields give more GPUs than one node of its system (its "
        "aggregated recipes are single-node; such rows write moe_tp_size x moe_ep_size as tp_size: 64 for TP8 x EP8), "
        "is skipped (llmsim.validation.serving; before session 23 only rows with attention data parallelism were "
        "checked, and 296 such rows ran on 4 to 64 GPUs). So is a run of a speculative-decoding (MTP) config, whose "
        "acceptance rate no source states (llmsim.validation.inferencex_recipes.inferencex_mtp_only: SGLang "
        "DeepSeek-R1 fp8 B200 points of 2026-03-25 beyond the plain sweep, TensorRT-LLM DeepSeek-R1 rows of the "
        "days only its MTP recipes ran, SGLang Qwen3.5 fp8 B200 rows of 2026-03-20; "
        f"{sum('MTP' in why for _, why in c.skipped)} rows; before session 24 only the first).",
        "",
        "Each runnable aggregated row is simulated with `llmsim.serve(model, device, engine=backend, concurrency=c, "
        "prompt_len=..., gen_len=..., num_requests=..., tensor_parallel=tp)` with the shipped "
        "model, hardware and measured-kernel files and the engine's default scheduler limits; fp8 runs with fp8 "
        "weights and activations and a 16-bit KV cache, except where InferenceX's recipe passed an fp8 KV cache "
        f"(`kv_dtype='fp8'`, `llmsim.validation.serving.inferencex_kv_dtype`, and for SGLang's disaggregated runs "
        f"`llmsim.validation.srt_slurm_recipes`: {fp8_cache} rows). The clients all "
        "start together (closed loop, `ramp_s=0`). "
        "InferenceX's SGLang runs on B200 and B300 also take the `--scheduler-recv-interval` their recipe passed "
        "(`scheduler_recv_interval=`, `llmsim.validation.serving.inferencex_recv_interval`: 10, or 30 at 16 clients "
        "and more). "
        "InferenceX's runs take the other knobs their recipe set that the file's columns do not record "
        "(`llmsim.validation.serving.inferencex_trtllm_options`, `inferencex_vllm_options` and "
        "`inferencex_sglang_options`, each with its commits: token budgets, SGLang's running-request limits, "
        "TensorRT-LLM's batch waiting, vLLM's FULL_DECODE_ONLY graphs, expert and attention data parallelism the "
        f"recipe chose itself; {recipe_rows} rows). "
        "aiconfigurator's own gap-analysis runs take the engine settings its config generator wrote for those "
        "deployments (`llmsim.validation.aiconfigurator_recipes`, from session 32: max_num_seqs the run's batch "
        "size bs, max_num_batched_tokens bs + isl + 1500, SGLang's min(its chunked prefill size, isl + 1500); "
        "disaggregated prefill workers isl + 1500, decode workers bs; TensorRT-LLM's KV cache 0.8 of the free "
        "memory, its templates' free_gpu_memory_fraction, from session 33; "
        f"{generated_rows} rows). TensorRT-LLM "
        "prefills each prompt whole, "
        "its default (`chunked_prefill=False`, from session 32). "
        "Each disaggregated row that states its worker counts is simulated with `llmsim.serve_disaggregated(model, "
        "device, prefill={replicas, tensor_parallel, expert_parallel}, decode={...}, ...)` from the row's "
        "prefill_/decode_ num_workers, tp_size and moe_ep_size, the clients from `silicon_concurrency=` in "
        "silicon_data_source; the KV cache travels over NVLink when both pools fit one NVLink domain, else over "
        "the device file's inter-node link. InferenceX's SGLang disaggregated runs of February and March 2026 take "
        "each pool's chunked-prefill-size, max-prefill-tokens and max-running-requests, and the fp8 KV cache "
        "(kv-cache-dtype fp8_e4m3) all but one of them set, from the NVIDIA/srt-slurm "
        "recipe InferenceX launched them with (`llmsim.validation.srt_slurm_recipes`: the recipe its "
        "nvidia-master.yaml named for the run's configuration on the day it was measured, each with its commit; "
        f"{pool_recipe_rows('sglang')} rows; before session 30 they ran SGLang's defaults). InferenceX's "
        "TensorRT-LLM disaggregated runs likewise take each pool's max_batch_size and max_num_tokens (per attention "
        "data-parallel rank), the TRTLLM-gen MoE of the servers that ran `moe_config: backend: TRTLLM` on block-fp8 "
        "experts, the fp8 KV cache and each pool's free_gpu_memory_fraction from their srt-slurm recipe "
        "(`llmsim.validation.trtllm_disagg_recipes`, from session 37, each with its commit: "
        f"{pool_recipe_rows('trtllm')} rows; a run that matches both an MTP and a plain recipe, or whose pools "
        "differ from its recipe's, keeps the defaults).",
        "",
        "The load is the one each run's benchmark client sent, where its source states it "
        "(`llmsim.validation.serving.client_protocol`): rows from InferenceX (SemiAnalysis's "
        "InferenceMAX sweeps: the `db-dump/...` and `source_file=<date>.csv; model=...` sources, at its "
        "scenarios 1k/1k, 1k/8k and 8k/1k; aggregated, and disaggregated through NVIDIA/srt-slurm's sa-bench, the "
        "same client) run its client's `--random-range-ratio "
        f"{INFERENCEX_RANGE_RATIO} --num-prompts {INFERENCEX_PROMPTS_PER_CLIENT}*c --max-concurrency c "
        "--ignore-eos`: each request's input and output lengths drawn uniformly from the integers "
        f"int({INFERENCEX_RANGE_RATIO}*isl)..isl and int({INFERENCEX_RANGE_RATIO}*osl)..osl, "
        f"{INFERENCEX_PROMPTS_PER_CLIENT}c requests (`prompt_len='uniform:{{int({INFERENCEX_RANGE_RATIO}*isl)}}:"
        "{isl}'`, likewise "
        "gen_len), after 2c warm-ups that finish first; the other rows (aiconfigurator's gap-analysis runs, "
        "whose client is not stated) run the client of aiconfigurator's automated evaluation (src/aiconfigurator/"
        "eval/benchmarks/genai_perf_runner.py, 2025-08-22 to 2026-03-03: fixed lengths isl and osl, "
        f"`--request-count {REQUESTS_PER_CLIENT}c --warmup-request-count 2c`; 5c before session 32, when no client "
        "was known); the 123 "
        "rows of its kimi-k2.5 and qwen3.5-397b gap-analysis files are InferenceX runs (TTFT and TPOT equal an "
        "InferenceX row's to the 0.01 ms they are written with: `llmsim.validation.serving.inferencex_copies`) "
        "and are counted once, under that row (before session 31 they ran again as fixed-protocol rows). "
        "Before session 15 every row ran the fixed protocol, and before session 16 InferenceX's disaggregated "
        "ones still did (serve_disaggregated's closed loop was a fixed point that seldom settled; it is now one "
        "event-driven run of both pools); the `protocol` groups below say which rows ran which.",
        "",
        "Reproduce: `pip install '.[aiconfigurator]' && PYTHONPATH=. python validation/serving.py`",
        "",
        f"{len(c.rows)} rows simulated, {len(c.skipped)} skipped.",
        "",
    ]
    lines += _target_section(c)
    lines += _repeat_section(c)
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
        for key, errors in sorted(c.errors(metric, ("protocol",)).items()):
            lines.append(_row(f"protocol {key[0]}", errors))
        for key, errors in sorted(c.errors(metric, ("protocol", "engine")).items()):
            lines.append(_row(f"protocol {key[0]} / engine {key[1]}", errors))
        for key, errors in sorted(c.errors(metric, ("attention_dp",)).items()):
            if key[0] > 1:
                lines.append(_row(f"attention data parallel {key[0]}", errors))
        dp_rows = [r[f"{metric}_error_pct"] for r in c.rows if r["attention_dp"] > 1]
        if dp_rows:
            lines.append(_row("attention data parallel, all", np.asarray(dp_rows)))
        for key, errors in sorted(c.errors(metric, ("model", "system", "engine", "precision", "mode")).items()):
            lines.append(_row(" / ".join(map(str, key)), errors))
        lines.append("")
    if args.peer is not None and args.peer.is_file():
        lines += _peer_section(c.rows, args.peer)
    lines += ["## Skipped rows", "", "| reason | rows |", "|---|---|"]
    reasons = collections.Counter(_reason_group(r) for _, r in c.skipped)
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


def _target_section(c) -> list[str]:
    """The issue's target, per engine, device and mode: median |error| <= TARGET_PCT for TTFT and for TPOT."""
    keys = ("engine", "system", "mode")
    ttft, tpot = c.errors("ttft", keys), c.errors("tpot", keys)

    def med(errors: np.ndarray) -> float:
        return float(np.median(np.abs(errors)))

    met = {m: [k for k in ttft if med(errs[k]) <= TARGET_PCT] for m, errs in (("ttft", ttft), ("tpot", tpot))}
    rows_met = {m: sum(len(ttft[k]) for k in met[m]) for m in met}
    lines = ["## Per engine, device and mode (the target: median |error| <= "
             f"{TARGET_PCT:g} % for TTFT and for TPOT)", "",
             f"TTFT meets it in {len(met['ttft'])} of {len(ttft)} groups ({rows_met['ttft']} of {len(c.rows)} rows), "
             f"TPOT in {len(met['tpot'])} ({rows_met['tpot']} rows).", "",
             "| engine / device / mode | rows | TTFT median abs error % | TPOT median abs error % | TTFT met "
             "| TPOT met |",
             "|---|---|---|---|---|---|"]
    for key in sorted(ttft):
        lines.append(f"| {' / '.join(key)} | {len(ttft[key])} | {med(ttft[key]):.1f} | {med(tpot[key]):.1f} | "
                     f"{'yes' if key in met['ttft'] else 'no'} | {'yes' if key in met['tpot'] else 'no'} |")
    return [*lines, ""]


def _repeat_section(c) -> list[str]:
    """The file's own reproducibility: configurations it measured more than once, each measurement "predicted" by
    the mean of the others, next to llmsim's error on the same rows (ServingComparison.repeats)."""
    entries = c.repeats()
    if not entries:
        return []
    total = repeat_summary(entries, ())[()]
    lines = ["## Repeated measurements: the file's own reproducibility", "",
             f"{int(total['points'])} configurations were measured more than once ({int(total['rows'])} rows: the "
             "same engine, device, mode, model, precision fields, lengths, clients, parallel fields and client "
             "protocol, on another day or engine version; `llmsim.validation.serving.measured_point`). Each such "
             "row is \"predicted\" by the mean of its configuration's other measurements, as % of its own, the "
             "sign and scale of llmsim's error %: the accuracy any predictor given only the file's columns can "
             "reach on these rows. Next to it, llmsim's error on the same rows and the share of them whose "
             "prediction lies between the configuration's lowest and highest measurement. Where the repeats "
             "disagree by more than the target, the target cannot be told apart from the measurements' own "
             "spread; where they agree, llmsim's error there is its own.", "",
             "| engine / device / mode | points | rows | TTFT: repeats median abs % | TTFT: llmsim median abs % "
             "| TTFT: llmsim within range % | TPOT: repeats median abs % | TPOT: llmsim median abs % "
             "| TPOT: llmsim within range % |",
             "|---|---|---|---|---|---|---|---|---|"]

    def line(name: str, s: dict[str, float]) -> str:
        cells = [f"{s[f'{m}_{k}']:.{0 if k == 'within' else 1}f}" for m in ("ttft", "tpot")
                 for k in ("repeat", "llmsim", "within")]
        return f"| {name} | {int(s['points'])} | {int(s['rows'])} | " + " | ".join(cells) + " |"

    lines.append(line("**all**", total))
    for key, stats in sorted(repeat_summary(entries).items()):
        lines.append(line(" / ".join(key), stats))
    return [*lines, ""]


def _reason_group(reason: str) -> str:
    """A skip reason as the report counts it: one line per kind, not per row named in it."""
    if reason.startswith("model "):
        return "model not shipped"
    if reason.startswith("the same measurement as InferenceX row"):
        return ("the same measurement as an InferenceX row (a gap-analysis file's copy, its TTFT and TPOT equal to "
                "0.01 ms: llmsim.validation.serving.inferencex_copies): counted once, under that row")
    if reason.startswith("the same measurement as row"):
        return "the same measurement as an earlier row (InferenceX's database dump and its dated CSVs): counted once"
    return reason


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
