"""The markdown report of a published comparison: how each category was simulated, the flags, summary
statistics (overall, per category, per metric, per source, the GPU-variant sensitivity), the per-row
tables, the rows not simulated, and the patterns."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from .compare import PublishedComparison, error_stats
from .mapping import short_source
from .patterns import patterns
from .predict import CATEGORIES
from .results import Comparison

FLAG_TEXT: dict[str, str] = {
    "V": "GPU variant not stated by the source; the likely one is simulated (the PCIe one in 'error % if PCIe')",
    "L": "prompt/output lengths not stated in the row; torchao generate.py defaults used "
         "(6-token prompt, 200 new tokens)",
    "M": "model proxy: Llama-3-8B simulated as llama-3.1-8b (same shapes)",
    "H": "H800 SXM5 simulated as h100-sxm (same die, peaks and HBM)",
    "C": "causal flag not stated; non-causal inferred (tritonbench's --causal is off unless passed, and the "
         "quoted command does not pass it; tritonbench counts 4*B*H*S^2*D FLOPs, halved only when causal)",
    "I": "in-sample: this figure set the hardware file's achievable fraction, so agreement is by construction",
    "Q": "llmsim says the batch's KV cache does not fit the GPU: the engine must have queued requests, "
         "which a single static batch does not model",
}

_HEAD = "| group | n | median \\|error\\| % | p90 \\|error\\| % | mean signed error % |"
_RULE = "|---|---:|---:|---:|---:|"

_METHODS = [
    "## How each category was simulated",
    "",
    "- **e2e_llm**: `llmsim.simulate(model, hardware, batch_size, prompt_len, gen_len, tensor_parallel, "
    "weight_dtype, activation_dtype[, kv_dtype], overhead)` with llmsim's serving defaults (flash attention, "
    "fused add+norm, paged KV, last-position logits). torch.compile (torchao) and the TurboMind C++ engine "
    "(lmdeploy) both run as `overhead=\"graph\"`. Headline metric: generated tokens/s in the source's scope "
    "(torchao: one user at bs=1, tokens/s including the prefill; lmdeploy: all requests of the TP group, "
    "= `throughput_tokens_per_s`). Extra metrics from the same lmdeploy rows: TTFT at batch 1 (at batch > 1 "
    "lmdeploy's first-token latency includes queueing behind other requests' prefills), and the p50 "
    "per-token latency against llmsim's TPOT.",
    "- **microbench_gemm**: one matmul on llmsim's roofline, `Roofline(hw, ExecutionOptions.make("
    "overhead=\"none\"))`: time = max(2MNK / (matrix peak x matmul fraction), bytes / (bandwidth x memory "
    "fraction)); bytes = inputs + outputs (+ DeepGEMM's fp32 block scales); predicted TFLOP/s = 2MNK / time.",
    "- **microbench_attention**: llmsim's own `flash_attention` op (matmul FLOPs 2·B·H·S²·2D on the matrix "
    "unit plus 5 vector FLOPs per score for the softmax, Q/K/V read once, O written once) on the same "
    "roofline; predicted TFLOP/s = tritonbench's count 4·B·H·S²·D / predicted time.",
    "",
]


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
    lines = ["| row | source | model / shape | gpu (llmsim) | settings | metric | measured | predicted | error % "
             "| error % if PCIe | flags |",
             "|---|---|---|---|---|---|---:|---:|---:|---:|---|"]
    for c in comps:
        alt = f"{c.alt_error_pct:+.1f}" if c.alt_error_pct is not None else ""
        lines.append(f"| {c.row_id} | {short_source(c.source)} | {c.model} | {c.hardware} | {c.settings} | "
                     f"{c.metric} | {fmt(c.measured)} {c.unit} | {fmt(c.predicted)} | {c.error_pct:+.1f} | {alt} | "
                     f"{''.join(sorted(c.flags))} |")
    return lines


def _summary(done: list[Comparison]) -> list[str]:
    primary = [c for c in done if c.primary]
    clean = [c for c in primary if not ({"I", "Q"} & c.flags)]
    lines = [
        "## Summary",
        "",
        "Headline metric, one per simulated row (all are rates: tokens/s or TFLOP/s, so a positive mean "
        "signed error means llmsim is optimistic):",
        "",
        _HEAD, _RULE,
        stats_line("all simulated rows", primary),
        *group_stats(primary, lambda c: c.category),
        stats_line("all, excluding in-sample (I) and queued (Q) rows", clean),
        stats_line("e2e_llm excluding Q", [c for c in clean if c.category == "e2e_llm"]),
        stats_line("microbench_gemm excluding I", [c for c in clean if c.category == "microbench_gemm"]),
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
        "assumed variant and with the other one.",
        "",
        _HEAD, _RULE,
        stats_line("assumed variant (SXM)", with_alt),
        stats_line("other variant (PCIe)", with_alt, alt=True),
        "",
    ]


def render_published_report(comparison: PublishedComparison) -> str:
    """The whole markdown report."""
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
        "Flags:",
        "",
        *(f"- **{k}**: {v}" for k, v in FLAG_TEXT.items()),
        "",
        *_summary(done),
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
    lines += patterns(done, list(comparison.measurements))
    return "\n".join(lines) + "\n"


def write_published_report(comparison: PublishedComparison, out_path: str | Path) -> Path:
    """Write the markdown report to `out_path`; returns the path written."""
    path = Path(out_path)
    path.write_text(render_published_report(comparison))
    return path
