"""Calibrate this CPU, then validate llmsim against real transformers models on it.

    python validation/run_cpu.py               # calibrate + the whole grid (resumes), then the report
    python validation/run_cpu.py --report-only # rebuild README tables and the plot from the recorded runs
    python validation/run_cpu.py --plan        # print the cases and the estimated time, run nothing
    python validation/run_cpu.py --repredict   # re-predict the recorded cases (both runs) with the current llmsim
    python validation/run_cpu.py --recalibrate # calibrate again first (on a quiet machine)

Writes, next to this file:
    cpu-calibrated.toml               the calibrated hardware file (eager_dispatch_s = one bare tiny op)
    cpu-calibrated-hf-dispatch.toml   the same with eager_dispatch_s = transformers' host time per llmsim op
    cpu-results.jsonl                 one JSON line per measured case (raw timings, versions, threads)
                                      (cpu-results-run1.jsonl: an earlier run, re-predicted beside it)
    report.md                         the tables (README.md quotes them), predicted_vs_measured.png

Cases: every architecture family llmsim supports, at real widths with few layers (and a smaller
vocabulary where the real one alone would dominate the run), float32 and bfloat16, prefill of 32..2048
tokens at batch 1..32, decode steps at kv 32..4096 and batch 1..32. A case is kept when its predicted
time and memory traffic fit the budget of this 2-core machine (at most 3 s per prefill run and 1 s per
decode step predicted, 5 GB of traffic: the grid runs in about 27 minutes).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import tomllib

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import llmsim  # noqa: E402
from llmsim.hardware.spec import hardware_from_dict  # noqa: E402
from llmsim.validation import ValidationReport, calibrate, hardware_toml, measure_dispatch, validate  # noqa: E402
from llmsim.validation.hf_model import config_dict, prepare_config  # noqa: E402
from llmsim.validation.validate import predict_case  # noqa: E402

THREADS = 1  # see README: a 2-thread run stalls whenever another process holds one of the two cores
CALIBRATED = HERE / "cpu-calibrated.toml"
CALIBRATED_HF = HERE / "cpu-calibrated-hf-dispatch.toml"
RESULTS = HERE / "cpu-results.jsonl"
# earlier recorded runs of the same grid, re-predicted beside the current one with the same hardware file
EARLIER_RUNS = {
    "run 1": (HERE / "cpu-results-run1.jsonl", "2026-11-22 11:14-11:37, another process on the second core "
              "(1-minute load average 1.07); its own calibration, taken then: cpu-calibrated-run1.toml"),
}

SMALL_VOCAB = {"vocab_size": 32768}
# (report name, shipped config, layers kept, config overrides)
MODELS: list[tuple[str, str, int, dict]] = [
    ("gpt2-4L", "gpt2", 4, {}),
    ("llama-3.2-1b-2L", "llama-3.2-1b", 2, {}),
    ("qwen2.5-7b-1L", "qwen2.5-7b", 1, {}),
    ("mistral-7b-1L", "mistral-7b", 1, {}),
    ("phi-3-mini-2L", "phi-3-mini", 2, {}),
    ("gemma-3-27b-2L-v32k", "gemma-3-27b", 2, SMALL_VOCAB),
    ("mixtral-8x7b-1L", "mixtral-8x7b", 1, {}),
    ("qwen3-30b-a3b-1L", "qwen3-30b-a3b", 1, {}),
    ("gpt-oss-20b-2L-v32k", "gpt-oss-20b", 2, {**SMALL_VOCAB, "pad_token_id": None, "eos_token_id": None}),
    # DeepSeek-V3's MLA and MoE at a quarter of its width: one dense layer, one MoE layer (32 experts, top 8)
    ("deepseek-v3-mid-2L", "deepseek-v3", 2, {
        "hidden_size": 2048, "intermediate_size": 8192, "moe_intermediate_size": 1024, "n_routed_experts": 32,
        "num_experts_per_tok": 8, "n_group": 4, "topk_group": 2, "first_k_dense_replace": 1, **SMALL_VOCAB}),
]
DTYPES = ("float32", "bfloat16")
PREFILL = [(1, 32), (1, 128), (1, 512), (1, 2048), (4, 128), (4, 512), (16, 128), (32, 32)]
DECODE = [(1, 32), (1, 512), (1, 4096), (8, 512), (8, 4096), (32, 128), (32, 1024), (32, 4096)]
MAX_PREDICTED_S = {"prefill": 3.0, "decode": 1.0}  # per run, by the calibrated prediction (prompts to 2048)
MAX_BYTES = 5e9  # predicted memory traffic of one case (bounds the working set, e.g. MLA's expanded K/V)
REPEATS = 3
WARMUP = 1


def model_data(source: str, dtype: str, layers: int, overrides: dict) -> dict:
    raw, _ = config_dict(source)
    data = prepare_config(raw, dtype, layers)
    data.update(overrides)
    return data


def plan(hardware: llmsim.HardwareSpec) -> list[tuple[str, str, int, dict, str, list[tuple[str, int, int]], float]]:
    """Per model and dtype: the cases that fit the budget and their estimated seconds (all runs)."""
    out = []
    for label, source, layers, overrides in MODELS:
        for dtype in DTYPES:
            data = model_data(source, dtype, layers, overrides)
            cases, seconds = [], 0.0
            for phase, grid in (("prefill", PREFILL), ("decode", DECODE)):
                for batch, length in grid:
                    if (length if phase == "prefill" else length + 1) > llmsim.load_model(data).max_position_embeddings:
                        continue
                    p = predict_case(data, hardware, phase, batch, length, dtype, "eager")
                    if p["time_s"] <= MAX_PREDICTED_S[phase] and p["bytes"] <= MAX_BYTES:
                        cases.append((phase, batch, length))
                        # warm-up + repeats + one profiled run, and the real run is ~2x slower than predicted
                        seconds += 2 * p["time_s"] * (WARMUP + REPEATS + 1)
            out.append((label, source, layers, overrides, dtype, cases, seconds))
    return out


def run_calibration() -> llmsim.HardwareSpec:
    spec = calibrate("cpu", dtypes=DTYPES, out=CALIBRATED, threads=THREADS, dispatch="op")
    data = tomllib.loads(CALIBRATED.read_text())
    value, source = measure_dispatch("cpu", kind="hf", threads=THREADS)
    data["name"] = "cpu-calibrated-hf-dispatch"
    data["overhead"]["eager_dispatch_s"] = {"value": value, "unit": "s", "source": source}
    hardware_from_dict(data)
    CALIBRATED_HF.write_text(hardware_toml(data))
    return spec


def run_grid(hardware: llmsim.HardwareSpec) -> None:
    todo = plan(hardware)
    total = sum(t[-1] for t in todo)
    print(f"{sum(len(t[5]) for t in todo)} cases, estimated {total / 60:.1f} min", flush=True)
    for label, source, layers, overrides, dtype, cases, seconds in todo:
        t0 = time.perf_counter()
        report = validate(source, CALIBRATED, dtype=dtype, num_layers=layers, config_overrides=overrides,
                          name=label, cases=cases, repeats=REPEATS, warmup=WARMUP, profile=True,
                          results_path=RESULTS, threads=THREADS)
        rows = report.rows
        errors = [f"{r.error_pct:+.0f}" for r in rows if r.ok]
        print(f"{label} {dtype}: {len(rows)} cases in {time.perf_counter() - t0:.0f} s "
              f"(estimated {seconds:.0f} s); errors % {' '.join(errors)}", flush=True)


# ---- the report --------------------------------------------------------------------------------------
def repredict(report: ValidationReport, hardware: llmsim.HardwareSpec) -> ValidationReport:
    """The same measurements against predictions made with another hardware file."""
    by_label = {m[0]: m for m in MODELS}
    rows = []
    for r in report.rows:
        if not r.ok or r.model not in by_label:
            continue
        _, source, layers, overrides = by_label[r.model]
        data = model_data(source, r.dtype, layers, overrides)
        p = predict_case(data, hardware, r.phase, r.batch_size, r.length, r.dtype, r.overhead,
                         attention=r.attention)
        rows.append(r.model_copy(update={"predicted_s": p["time_s"], "predicted_split_s": p["split"],
                                         "predicted_bound": p["bound"],
                                         "error_pct": 100 * (p["time_s"] - r.measured_s) / r.measured_s}))
    return ValidationReport(rows=rows)


def repredict_file(results: Path = RESULTS) -> None:
    """Recompute the predicted fields of every recorded case with the current llmsim, the calibrated file
    and the attention kernel each model really runs (measurements untouched); rewrite the results file."""
    from llmsim.validation.hf_model import attention_kernel, build_model

    report = ValidationReport.from_jsonl(results)
    hardware = llmsim.load_hardware(CALIBRATED)
    kernels: dict[tuple[str, str], str] = {}
    lines = []
    for r in report.rows:
        _, source, layers, overrides = {m[0]: m for m in MODELS}[r.model]
        if (r.model, r.dtype) not in kernels:
            data = model_data(source, r.dtype, 1, overrides)  # one layer: the kernel choice is the same
            kernels[(r.model, r.dtype)] = attention_kernel(build_model(data, r.dtype, "cpu"))
        data = model_data(source, r.dtype, layers, overrides)
        attention = kernels[(r.model, r.dtype)]
        p = predict_case(data, hardware, r.phase, r.batch_size, r.length, r.dtype, r.overhead, attention=attention)
        update = {"attention": attention, "predicted_s": p["time_s"], "predicted_split_s": p["split"],
                  "predicted_bound": p["bound"], "predicted_flops": p["flops"], "predicted_bytes": p["bytes"]}
        if r.measured_s:
            update |= {"error_pct": 100 * (p["time_s"] - r.measured_s) / r.measured_s,
                       "achieved_flops_per_s": p["flops"] / r.measured_s,
                       "achieved_bytes_per_s": p["bytes"] / r.measured_s}
        lines.append(r.model_copy(update=update).model_dump_json())
    results.write_text("\n".join(lines) + "\n")
    print(f"{results.name}: attention kernels", kernels)


def class_table(report: ValidationReport) -> str:
    """Per phase and dtype: predicted and measured seconds per op class, summed over the cases."""
    lines = ["| phase | dtype | cases | " + " | ".join(f"{c} pred / meas" for c in ("matmul", "attention",
             "elementwise", "other")) + " | total pred / meas |", "|---|---|---:|---|---|---|---|---|"]
    for phase in ("prefill", "decode"):
        for dtype in DTYPES:
            rows = [r for r in report.ok_rows(phase) if r.dtype == dtype and r.measured_split_s]
            if not rows:
                continue
            cells = []
            for c in ("matmul", "attention", "elementwise", "other"):
                p = sum(r.predicted_split_s.get(c, 0.0) for r in rows)
                m = sum(r.measured_split_s.get(c, 0.0) for r in rows)
                cells.append(f"{p:.2f} / {m:.2f} s")
            p = sum(r.predicted_s for r in rows)
            m = sum(r.measured_s for r in rows)
            lines.append(f"| {phase} | {dtype} | {len(rows)} | " + " | ".join(cells) + f" | {p:.2f} / {m:.2f} s |")
    return "\n".join(lines)


def per_group_table(report: ValidationReport) -> str:
    lines = ["| model | dtype | phase | cases | median abs error | mean signed error | worst |",
             "|---|---|---|---:|---:|---:|---:|"]
    groups: dict[tuple[str, str, str], list[float]] = {}
    for r in report.ok_rows():
        groups.setdefault((r.model, r.dtype, r.phase), []).append(r.error_pct)
    for (model, dtype, phase), errors in groups.items():
        worst = max(errors, key=abs)
        lines.append(f"| {model} | {dtype} | {phase} | {len(errors)} | {np.median(np.abs(errors)):.1f}% | "
                     f"{np.mean(errors):+.1f}% | {worst:+.0f}% |")
    return "\n".join(lines)


def write_report() -> None:
    report = ValidationReport.from_jsonl(RESULTS)
    hf = repredict(report, llmsim.load_hardware(CALIBRATED_HF)) if CALIBRATED_HF.exists() else None
    report.plot(HERE / "predicted_vs_measured.png",
                title="llmsim vs transformers on this CPU (calibrated, eager, 1 thread)")
    parts = ["# Recorded validation run (generated by validation/run_cpu.py --report-only)", "",
             "## Summary, calibrated file as measured (eager_dispatch_s = one bare op)", "", report.summary_markdown()]
    if hf is not None:
        parts += ["", "## Summary, eager_dispatch_s = transformers' host time per llmsim op", "",
                  hf.summary_markdown()]
    parts += ["", "## Time per op class (profiled run scaled to the median; sums over the cases)", "",
              class_table(report), "", "## Per model", "", per_group_table(report)]
    if hf is not None:
        parts += ["", "## Per model, eager_dispatch_s = transformers' host time per llmsim op", "",
                  per_group_table(hf)]
    for name, (path, when) in EARLIER_RUNS.items():
        if path.exists():
            earlier = ValidationReport.from_jsonl(path)
            parts += ["", f"## Earlier measurements, {name} ({path.name}), predicted with the same file", "",
                      f"Measured {when}.", "", earlier.summary_markdown(), "", class_table(earlier)]
    parts += ["", "## Every case", "", report.to_markdown(), ""]
    (HERE / "report.md").write_text("\n".join(parts))
    print(json.dumps(report.summary(), indent=1))
    if hf is not None:
        print(json.dumps(hf.summary(), indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--plan", action="store_true")
    parser.add_argument("--repredict", action="store_true",
                        help="recompute the predictions of the recorded cases (current llmsim), then the report")
    parser.add_argument("--recalibrate", action="store_true", help="calibrate again even if the file exists")
    args = parser.parse_args()
    if args.repredict:
        for results in (RESULTS, *(path for path, _ in EARLIER_RUNS.values())):
            if results.exists():
                repredict_file(results)
    if args.report_only or args.repredict:
        write_report()
        return
    if args.plan:
        hardware = llmsim.load_hardware(CALIBRATED) if CALIBRATED.exists() else llmsim.load_hardware("cpu-generic")
        todo = plan(hardware)
        for label, _, _, _, dtype, cases, seconds in todo:
            print(f"{label:24} {dtype:9} {len(cases):2} cases ~{seconds:5.0f} s  {cases}")
        print(f"total ~{sum(t[-1] for t in todo) / 60:.1f} min")
        return
    t0 = time.perf_counter()
    hardware = llmsim.load_hardware(CALIBRATED) if CALIBRATED.exists() and not args.recalibrate else run_calibration()
    print(f"calibrated in {time.perf_counter() - t0:.0f} s: {hardware.summary_row()}", flush=True)
    run_grid(hardware)
    write_report()
    print(f"done in {(time.perf_counter() - t0) / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()
