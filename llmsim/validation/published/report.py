"""The markdown report of a published comparison: how each category was simulated, the engine of each
framework, the flags, summary statistics (per category against the targets, before and after measured
tables; per device and engine; per metric, per source, the GPU-variant sensitivity), the per-row tables,
the rows not simulated, and the patterns."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from .compare import PublishedComparison, Stats, error_stats
from .mapping import ENGINES, NO_ENGINE, SCALED_MM_ENGINE, short_source
from .patterns import patterns
from .predict import CATEGORIES
from .results import Comparison

FLAG_TEXT: dict[str, str] = {
    "V": "GPU variant not stated by the source; the likely one is simulated (the PCIe one in 'error % if PCIe', "
         "from the SXM part's tables times each op's roofline ratio: no PCIe part has tables of its own)",
    "L": "prompt/output lengths not stated in the row; torchao generate.py defaults used "
         "(6-token prompt, 200 new tokens)",
    "M": "model proxy: Llama-3-8B simulated as llama-3.1-8b (same shapes)",
    "H": "H800 SXM5 simulated as h100-sxm (same die, peaks and HBM)",
    "C": "causal flag not stated; non-causal inferred (tritonbench's --causal is off unless passed, and the "
         "quoted command does not pass it; tritonbench counts 4*B*H*S^2*D FLOPs, halved only when causal)",
    "P": "engine or kernel proxy: no llmsim engine or table is the one the source ran (TurboMind, TGI, "
         "the Triton tutorial kernel); the named engine's measured tables stand in",
    "I": "in-sample: this figure set the hardware file's achievable fraction and the prediction comes from the "
         "roofline with that fraction, so agreement is by construction (rows predicted from a measured table "
         "are not in-sample; their 'roofline error %' still is)",
    "Q": "llmsim says the batch's KV cache does not fit the GPU: the engine must have queued requests, "
         "which a single static batch does not model",
}

# the targets the issue sets, per category: median and p90 of |error| in percent
TARGET_MEDIAN, TARGET_P90 = 10.0, 25.0

_HEAD = "| group | n | median \\|error\\| % | p90 \\|error\\| % | mean signed error % |"
_RULE = "|---|---:|---:|---:|---:|"

_METHODS = [
    "## How each category was simulated",
    "",
    "Each row is simulated with the llmsim engine of the framework that produced it (table below); an "
    "engine's measured kernel tables (`kernels/<device>/<engine>/`, aiconfigurator-core 0.12.0) time the ops "
    "they cover, the rest stays on the roofline (datasheet peak x the hardware file's achievable fraction). "
    "Every comparison also carries the **roofline error %**: the same row predicted the old way (engine "
    "`roofline` at the achievable fractions, no tables), the before of this report.",
    "",
    "- **e2e_llm**: `llmsim.simulate(model, hardware, batch_size, prompt_len, gen_len, tensor_parallel, "
    "weight_dtype, activation_dtype[, kv_dtype], overhead, engine=<the row's engine>)`; the engine sets the "
    "kernels (fused QKV and gate/up for vllm; the config's projections and roofline attention for "
    "torch-compile) and which tables apply. Headline metric: generated tokens/s in the source's scope "
    "(torchao: one user at bs=1, tokens/s including the prefill; lmdeploy: all requests of the TP group, "
    "= `throughput_tokens_per_s`). Extra metrics from the same lmdeploy rows: TTFT at batch 1 (at batch > 1 "
    "lmdeploy's first-token latency includes queueing behind other requests' prefills), and the p50 "
    "per-token latency against llmsim's TPOT.",
    "- **microbench_gemm**: the engine's GEMM table at (M, N, K) for the row's dtype "
    "(`measured_for(device, engine).gemm_s(precision, M, N, K)`), predicted TFLOP/s = 2MNK / time; a GPU "
    "without tables of its own whose same-die sibling has them (A100 PCIe) reads the sibling's time x this "
    "GEMM's roofline time here / there. Where no table covers the GPU and dtype (MI300X), one matmul on the "
    "roofline, "
    "`Roofline(hw, ExecutionOptions.make(overhead=\"none\"))`: time = max(2MNK / (matrix peak x matmul "
    "fraction), bytes / (bandwidth x memory fraction)); bytes = inputs + outputs (+ DeepGEMM's fp32 block "
    "scales).",
    "- **microbench_attention**: the engine's non-causal attention table (`encoder_attention`: dense "
    "FlashAttention over B sequences of S tokens, no KV cache, bf16) at batch B and isl S for H heads of dim "
    "D; it measured head dims 64, 72 and 80, so D = 128 reads D = 64 times the engine's causal prefill table's "
    "time ratio D/64 at the same B, S and H (approximation: the head dim changes the kernel's time alike with "
    "or without the causal mask; `llmsim.timing.measured.ENCODER_HEAD_DIM_NOTE` has the sources). A device "
    "without that table reads the causal prefill table times the pair ratio S·S / (S(S+1)/2) (flag C). "
    "Predicted TFLOP/s = tritonbench's count 4·B·H·S²·D / time. The roofline column is llmsim's "
    "own `flash_attention` op (matmul FLOPs 2·B·H·S²·2D plus 5 vector FLOPs per score, Q/K/V read once, O "
    "written once).",
    "",
]


def engines_section(comparison: PublishedComparison) -> list[str]:
    """The framework -> engine mapping, with the reason of each (or the engine given for every row)."""
    given = comparison.options.engine_override
    if given is not None:
        return ["## Engines", "", f"Every row simulated with engine `{given}` (given to compare_published).", ""]
    lines = ["## Engines", "", "| framework (the row's `framework`) | llmsim engine | why |", "|---|---|---|"]
    lines += [f"| {framework} | {choice.engine} | {choice.reason} |" for framework, choice in ENGINES.items()]
    lines.append(f"| PyTorch matmul (mamf-finder.py), fp8 rows | {SCALED_MM_ENGINE.engine} | "
                 f"{SCALED_MM_ENGINE.reason} |")
    lines += [f"| {framework} | (skipped) | {reason} |" for framework, reason in NO_ENGINE.items()]
    return [*lines, ""]


def stats_line(label: str, comps: list[Comparison], alt: bool = False) -> str:
    """One table row of error statistics (of the alternative GPU variant's errors when `alt`)."""
    errors = [c.alt_error_pct if alt else c.error_pct for c in comps]
    s = error_stats(e for e in errors if e is not None)
    if s is None:
        return f"| {label} | 0 | | | |"
    return f"| {label} | {s.n} | {s.median_abs:.1f} | {s.p90_abs:.1f} | {s.mean_signed:+.1f} |"


def group_stats(comps: list[Comparison], key: Callable[[Comparison], str], alt: bool = False) -> list[str]:
    """One stats_line per group, in order of first appearance."""
    groups: dict[str, list[Comparison]] = defaultdict(list)
    for c in comps:
        groups[key(c)].append(c)
    return [stats_line(k, v, alt) for k, v in groups.items()]


def fmt(x: float) -> str:
    """A measured or predicted figure with about three significant digits."""
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def comparison_table(comps: list[Comparison]) -> list[str]:
    lines = ["| row | source | model / shape | gpu (llmsim) | engine | settings | metric | measured | predicted | "
             "error % | roofline error % | error % if PCIe | flags | timed from |",
             "|---|---|---|---|---|---|---|---:|---:|---:|---:|---:|---|---|"]
    for c in comps:
        alt = f"{c.alt_error_pct:+.1f}" if c.alt_error_pct is not None else ""
        base = f"{c.roofline_error_pct:+.1f}" if c.roofline_error_pct is not None else ""
        lines.append(f"| {c.row_id} | {short_source(c.source)} | {c.model} | {c.hardware} | {c.engine} | "
                     f"{c.settings} | {c.metric} | {fmt(c.measured)} {c.unit} | {fmt(c.predicted)} | "
                     f"{c.error_pct:+.1f} | {base} | {alt} | {''.join(sorted(c.flags))} | {c.timing} |")
    return lines


def met(stats: Stats | None) -> str:
    """Whether a group meets the targets (median and p90 of |error|), and which part misses."""
    if stats is None:
        return ""
    median_ok, p90_ok = stats.median_abs <= TARGET_MEDIAN, stats.p90_abs <= TARGET_P90
    if median_ok and p90_ok:
        return "**met**"
    missed = [name for name, ok in (("median", median_ok), ("p90", p90_ok)) if not ok]
    return "not met (" + ", ".join(missed) + ")"


def target_table(primary: list[Comparison]) -> list[str]:
    """Per category and overall: the statistics with measured tables, the target check, and the roofline's."""
    lines = ["| category | n | median \\|error\\| % | p90 \\|error\\| % | mean signed % | target (median <= "
             f"{TARGET_MEDIAN:.0f} %, p90 <= {TARGET_P90:.0f} %) | roofline: median / p90 / mean signed % |",
             "|---|---:|---:|---:|---:|---|---|"]
    groups: dict[str, list[Comparison]] = defaultdict(list)
    for c in primary:
        groups[c.category].append(c)
    for label, comps in [*groups.items(), ("all simulated rows", primary)]:
        now = error_stats(c.error_pct for c in comps)
        before = error_stats(c.roofline_error_pct for c in comps if c.roofline_error_pct is not None)
        if now is None:
            continue
        old = f"{before.median_abs:.1f} / {before.p90_abs:.1f} / {before.mean_signed:+.1f}" if before else ""
        lines.append(f"| {label} | {now.n} | {now.median_abs:.1f} | {now.p90_abs:.1f} | {now.mean_signed:+.1f} | "
                     f"{met(now)} | {old} |")
    return lines


def device_engine_table(primary: list[Comparison]) -> list[str]:
    """Per device, engine and category (headline metric): how many rows read measured tables, and the errors."""
    lines = ["| device (llmsim) | engine | category | n | from tables | median \\|error\\| % | p90 \\|error\\| % | "
             "mean signed % | roofline median % |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    groups: dict[tuple[str, str, str], list[Comparison]] = defaultdict(list)
    for c in primary:
        groups[(c.hardware, c.engine, c.category)].append(c)
    for (hardware, engine, category), comps in sorted(groups.items()):
        now = error_stats(c.error_pct for c in comps)
        before = error_stats(c.roofline_error_pct for c in comps if c.roofline_error_pct is not None)
        if now is None:
            continue
        tables = sum(not c.timing.startswith("roofline") for c in comps)
        old = f"{before.median_abs:.1f}" if before else ""
        lines.append(f"| {hardware} | {engine} | {category} | {now.n} | {tables} | {now.median_abs:.1f} | "
                     f"{now.p90_abs:.1f} | {now.mean_signed:+.1f} | {old} |")
    return lines


def _summary(done: list[Comparison]) -> list[str]:
    primary = [c for c in done if c.primary]
    clean = [c for c in primary if not ({"I", "Q"} & c.flags)]
    lines = [
        "## Summary",
        "",
        "Headline metric, one per simulated row (all are rates: tokens/s or TFLOP/s, so a positive mean signed "
        "error means llmsim is optimistic), with the engines' measured tables, against the targets; the last "
        "column is the same rows on the roofline (before measured tables):",
        "",
        *target_table(primary),
        "",
        "Per device, engine and category (headline metric; 'from tables': rows whose ops a measured table "
        "timed, the others are on the roofline):",
        "",
        *device_engine_table(primary),
        "",
        "Subsets (headline metric):",
        "",
        _HEAD, _RULE,
        stats_line("all, excluding in-sample (I) and queued (Q) rows", clean),
        stats_line("e2e_llm excluding Q", [c for c in clean if c.category == "e2e_llm"]),
        stats_line("microbench_gemm excluding I", [c for c in clean if c.category == "microbench_gemm"]),
        stats_line("rows with no engine or kernel proxy (no P)", [c for c in primary if "P" not in c.flags]),
        stats_line("rows with no flag at all (nothing inferred)", [c for c in primary if not c.flags]),
        "",
        "Every metric (headline and extra), by category and metric:",
        "",
        _HEAD, _RULE,
        *group_stats(done, lambda c: f"{c.category}: {c.metric}"),
        "",
        "By source (headline metric):",
        "",
        _HEAD, _RULE,
        *group_stats(primary, lambda c: short_source(c.source)),
    ]
    with_alt = [c for c in primary if c.alt_predicted is not None]
    return [
        *lines,
        "",
        "Sensitivity to the unstated GPU variant (rows flagged V, headline metric): the same rows with the "
        "assumed variant and with the other one (no PCIe part has measured tables of its own: those predictions "
        "read the SXM part's tables times each op's roofline ratio).",
        "",
        _HEAD, _RULE,
        stats_line("assumed variant (SXM)", with_alt),
        stats_line("other variant (PCIe)", with_alt, alt=True),
        "",
    ]


def render_published_report(comparison: PublishedComparison, plot: str | None = None) -> str:
    """The whole markdown report; `plot`: the predicted-vs-measured chart's path relative to the report, shown
    after the summary."""
    done, skipped = list(comparison.comparisons), list(comparison.skipped)
    simulated_rows = comparison.compared_row_ids
    lines = [
        "# llmsim against published measurements",
        "",
        f"Generated by `PYTHONPATH=. python validation/published.py` from `{comparison.csv_path}` "
        f"({len(simulated_rows) + len(skipped)} rows: **{len(simulated_rows)} simulated, {len(skipped)} skipped**). "
        "Do not edit by hand; rerun the script.",
        "",
        "error % = 100 x (predicted - measured) / measured. For throughput and TFLOP/s a positive error means "
        "llmsim is optimistic (predicts faster than measured); for TTFT and per-token latency a positive error "
        "means llmsim is pessimistic (predicts slower).",
        "",
        *_METHODS,
        *engines_section(comparison),
        "Flags:",
        "",
        *(f"- **{k}**: {v}" for k, v in FLAG_TEXT.items()),
        "",
        *_summary(done),
        *([f"![predicted vs measured]({plot})", "",
           "One point per simulated row (headline metric); marker = category, colour = engine, hollow = timed on "
           "the roofline (no measured table); grey band ±25 %.", ""] if plot else []),
        "## Per row",
        "",
    ]
    for category in CATEGORIES:
        comps = [c for c in done if c.category == category]
        if comps:
            lines += [f"### {category}", "", *comparison_table(comps), ""]
    lines += [
        "## Rows not simulated",
        "",
        "| row | source | category | model | gpu | reason |",
        "|---|---|---|---|---|---|",
    ]
    for s in skipped:
        lines.append(f"| {s.row_id} | {short_source(s.source)} | {s.category} | {s.model} | {s.gpu} | {s.reason} |")
    reasons: dict[str, int] = defaultdict(int)
    for s in skipped:
        reasons[s.kind] += 1
    lines += ["", "Skipped by reason: " + "; ".join(f"{k} ({v})" for k, v in reasons.items()) + ".", ""]
    lines += patterns(done, skipped)
    return "\n".join(lines) + "\n"


def write_published_report(comparison: PublishedComparison, out_path: str | Path, plot: str | None = None) -> Path:
    """Write the markdown report to `out_path` (with the chart at `plot`, relative to it); returns the path."""
    path = Path(out_path)
    path.write_text(render_published_report(comparison, plot))
    return path
