"""llmsim.validation.published: the comparison with published measurements, on a small CSV written here and
on the shared reference CSV when the checkout has one next to it."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import pytest

import llmsim
from llmsim.errors import OptionError
from llmsim.validation.published import (
    PredictOptions,
    Skipped,
    compare_published,
    default_csv_path,
    predict_row,
    read_rows,
    write_published_report,
)
from llmsim.validation.published import e2e as e2e_module

# the columns of shared/reference/published_measurements.csv, in its order
COLUMNS = [
    "id", "source_group", "category", "regime", "model", "model_ref", "gpu", "gpu_count", "parallelism",
    "weight_dtype", "compute_kv_dtype", "framework", "framework_version", "settings", "batch_size", "input_len",
    "output_len", "metric", "value", "unit", "throughput_out_tok_s", "throughput_scope", "ttft_ms",
    "per_token_latency_ms", "achieved_bw_GBps", "achieved_tflops", "gemm_M", "gemm_N", "gemm_K",
    "attn_shape_B_H_S_D", "derived_batch_latency_s_COMPUTED", "caveats", "source", "source_location_quote",
]

ROWS: list[dict[str, str]] = [
    {"id": "T0001", "source_group": "lmdeploy", "category": "e2e_llm", "regime": "decode-dominated",
     "model": "Llama-3.1-8B", "gpu": "NVIDIA H100 SXM", "gpu_count": "1", "parallelism": "none",
     "weight_dtype": "bf16", "compute_kv_dtype": "bf16", "framework": "lmdeploy", "batch_size": "1",
     "input_len": "128", "output_len": "128", "metric": "output throughput", "value": "150", "unit": "tokens/s",
     "throughput_scope": "total (1 GPU)", "ttft_ms": "20.0", "per_token_latency_ms": "8.0", "source": "test"},
    {"id": "T0002", "source_group": "ml-engineering (MAMF)", "category": "microbench_gemm", "regime": "compute",
     "model": "GEMM", "gpu": "NVIDIA H100 SXM", "gpu_count": "1", "weight_dtype": "bf16",
     "metric": "achieved TFLOP/s", "value": "640", "unit": "TFLOP/s", "gemm_M": "8192", "gemm_N": "8192",
     "gemm_K": "8192", "source": "test"},
    {"id": "T0003", "source_group": "lmdeploy", "category": "e2e_llm", "model": "Mistral-7B",
     "gpu": "NVIDIA H100 SXM", "gpu_count": "1", "weight_dtype": "bf16", "batch_size": "1", "input_len": "128",
     "output_len": "128", "metric": "output throughput", "value": "100", "unit": "tokens/s", "source": "test"},
    {"id": "T0004", "source_group": "ml-engineering (MAMF)", "category": "microbench_gemm",
     "model": "GEMM", "gpu": "AMD MI325X (1000W)", "gpu_count": "1", "weight_dtype": "bf16",
     "metric": "achieved TFLOP/s", "value": "900", "unit": "TFLOP/s", "gemm_M": "8192", "gemm_N": "8192",
     "gemm_K": "8192", "source": "test"},
]


@pytest.fixture
def small_csv(tmp_path: Path) -> Path:
    path = tmp_path / "published_measurements.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for row in ROWS:
            writer.writerow({c: row.get(c, "") for c in COLUMNS})
    return path


def test_small_csv_compared_and_skipped(small_csv: Path) -> None:
    comparison = compare_published(small_csv)
    assert comparison.compared_row_ids == ["T0001", "T0002"]
    assert [(s.row_id, s.kind) for s in comparison.skipped] == [("T0003", "model not shipped"),
                                                                ("T0004", "GPU not shipped")]
    assert comparison.skipped[0].reason == "model 'Mistral-7B' not shipped (model_configs/ has no config for it)"
    assert comparison.skipped[1].reason.startswith("MI325X not shipped")

    # e2e: the headline (throughput, total scope), then TTFT (batch 1) and p50 per-token latency against TPOT
    headline, ttft, tpot = (c for c in comparison.comparisons if c.row_id == "T0001")
    assert (headline.metric, headline.primary, ttft.metric, tpot.metric) == (
        "throughput (total (1 GPU))", True, "TTFT", "per-token latency (p50)")
    assert headline.settings == "bs 1, in 128, out 128, TP1, bf16/bf16, graph"
    sim = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=128, gen_len=128, tensor_parallel=1,
                          overhead="graph", weight_dtype="bf16", activation_dtype="bf16")
    assert headline.predicted == pytest.approx(sim.throughput_tokens_per_s, rel=1e-12)
    # error = 100 * (predicted - measured) / measured, measured 150 tok/s
    assert headline.error_pct == pytest.approx(100 * (sim.throughput_tokens_per_s - 150) / 150, rel=1e-12)
    assert ttft.error_pct == pytest.approx(100 * (1e3 * sim.ttft_s - 20.0) / 20.0, rel=1e-12)
    assert tpot.error_pct == pytest.approx(100 * (1e3 * sim.tpot_s - 8.0) / 8.0, rel=1e-12)

    # summary: headline metrics only, overall and per category
    assert set(comparison.summary) == {"all", "e2e_llm", "microbench_gemm"}
    assert comparison.summary["all"].n == 2 and comparison.summary["e2e_llm"].n == 1
    gemm = next(c for c in comparison.comparisons if c.row_id == "T0002")
    assert comparison.summary["microbench_gemm"].mean_signed == pytest.approx(gemm.error_pct)


def test_gemm_error_by_hand(small_csv: Path, test_gpu_dict: dict[str, Any]) -> None:
    # h100-sxm replaced by the round-number test GPU: bf16 matrix peak 1000 TFLOP/s x matmul fraction 0.8.
    comparison = compare_published(small_csv, hardware_overrides={"h100-sxm": test_gpu_dict})
    gemm = next(c for c in comparison.comparisons if c.row_id == "T0002")
    # 8192^3 bf16: 2*8192^3 = 1.0995e12 FLOP at 800e12 FLOP/s = 1.374 ms; bytes 2*(2*8192^2) + 2*8192^2 =
    # 402.7 MB at 2e12 * 0.9 B/s = 0.224 ms -> compute-bound: predicted 800 TFLOP/s, measured 640
    assert gemm.hardware == "test-gpu"
    assert gemm.settings == "bf16, intensity 2731 FLOP/B"  # 2*8192^3 / (6*8192^2) = 8192/3
    assert gemm.predicted == pytest.approx(800.0, rel=1e-12)
    assert gemm.error_pct == pytest.approx(25.0, rel=1e-12)  # 100 * (800 - 640) / 640


def test_engine_and_simulate_kwargs_reach_simulate(small_csv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    real = e2e_module.simulate

    def spy(model: Any, hardware: Any, **kwargs: Any) -> llmsim.SimulationResult:
        seen.append(dict(kwargs))
        kwargs.pop("engine", None)  # no engine models yet: the option is only threaded through
        return real(model, hardware, **kwargs)

    monkeypatch.setattr(e2e_module, "simulate", spy)
    compare_published(small_csv, engine="vllm", simulate_kwargs={"attention": "math"})
    assert seen and all(k["engine"] == "vllm" and k["attention"] == "math" for k in seen)
    seen.clear()
    compare_published(small_csv)
    assert seen and all("engine" not in k and "attention" not in k for k in seen)


def test_options_refuse_the_rows_workload() -> None:
    with pytest.raises(OptionError, match="batch_size"):
        PredictOptions(simulate_kwargs={"batch_size": 8})


def test_predict_row_and_report(small_csv: Path, tmp_path: Path) -> None:
    rows = read_rows(small_csv)
    skipped = predict_row(rows[2])
    assert isinstance(skipped, Skipped) and skipped.kind == "model not shipped"
    out = write_published_report(compare_published(small_csv), tmp_path / "published.md")
    text = out.read_text()
    assert f"from `{small_csv}` (4 rows: **2 simulated, 2 skipped**)" in text
    assert "| T0003 | lmdeploy | e2e_llm | Mistral-7B |" in text
    assert "Skipped by reason: model not shipped (1); GPU not shipped (1)." in text


def test_missing_csv_is_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="no file at"):
        compare_published(tmp_path / "absent.csv")


SHARED_CSV = default_csv_path()


@pytest.mark.skipif(SHARED_CSV is None, reason="no ../shared/reference/published_measurements.csv next to the checkout")
def test_shared_reference_csv() -> None:
    comparison = compare_published()
    assert comparison.csv_path == SHARED_CSV
    assert len(comparison.compared_row_ids) > 0
    assert len(comparison.compared_row_ids) + len(comparison.skipped) == len(comparison.measurements)
    assert all(s.reason for s in comparison.skipped)
    assert "all" in comparison.summary
    for stats in comparison.summary.values():
        assert stats.n > 0
        assert all(math.isfinite(x) for x in (stats.median_abs, stats.p90_abs, stats.mean_signed))
