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
    PublishedRow,
    Skipped,
    compare_published,
    default_csv_path,
    plot_published,
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
     "weight_dtype": "bf16", "compute_kv_dtype": "bf16", "framework": "LMDeploy TurboMind", "batch_size": "1",
     "input_len": "128", "output_len": "128", "metric": "output throughput", "value": "150", "unit": "tokens/s",
     "throughput_scope": "total (1 GPU)", "ttft_ms": "20.0", "per_token_latency_ms": "8.0", "source": "test"},
    {"id": "T0002", "source_group": "ml-engineering (MAMF)", "category": "microbench_gemm", "regime": "compute",
     "model": "GEMM", "gpu": "NVIDIA H100 SXM", "gpu_count": "1", "weight_dtype": "bf16",
     "framework": "PyTorch matmul (mamf-finder.py)",
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


def make_row(**values: str) -> PublishedRow:
    """A PublishedRow from the CSV's columns (the ones not given are empty)."""
    return PublishedRow.from_csv({c: values.get(c, "") for c in COLUMNS})


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
    # LMDeploy TurboMind has no llmsim engine: vllm's tables stand in (flag P), without vLLM's Python dispatch
    # per prefill kernel (TurboMind launches from C++: prefill_dispatch_s=0)
    assert headline.engine == "vllm" and headline.flags == frozenset({"P"})
    sim = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=128, gen_len=128, tensor_parallel=1,
                          overhead="graph", weight_dtype="bf16", activation_dtype="bf16", engine="vllm",
                          prefill_dispatch_s=0)
    assert headline.predicted == pytest.approx(sim.throughput_tokens_per_s, rel=1e-12)
    # error = 100 * (predicted - measured) / measured, measured 150 tok/s
    assert headline.error_pct == pytest.approx(100 * (sim.throughput_tokens_per_s - 150) / 150, rel=1e-12)
    assert ttft.error_pct == pytest.approx(100 * (1e3 * sim.ttft_s - 20.0) / 20.0, rel=1e-12)
    assert tpot.error_pct == pytest.approx(100 * (1e3 * sim.tpot_s - 8.0) / 8.0, rel=1e-12)
    # the before: engine "roofline" at the hardware file's achievable fractions, no measured tables
    base = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=128, gen_len=128, tensor_parallel=1,
                           overhead="graph", weight_dtype="bf16", activation_dtype="bf16", engine="roofline",
                           efficiency="achievable")
    assert headline.roofline_predicted == pytest.approx(base.throughput_tokens_per_s, rel=1e-12)
    assert tpot.roofline_predicted == pytest.approx(1e3 * base.tpot_s, rel=1e-12)

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
    assert gemm.timing == "roofline (no vllm gemm table for test-gpu)"  # no tables for the test GPU
    assert gemm.predicted == pytest.approx(800.0, rel=1e-12)
    assert gemm.error_pct == pytest.approx(25.0, rel=1e-12)  # 100 * (800 - 640) / 640


def test_gemm_from_the_engines_table(small_csv: Path) -> None:
    # kernels/h100-sxm/vllm/gemm.csv row "bf16,8192,8192,8192,1542" (a grid point: no interpolation):
    # 2*8192^3 = 1.099511627776e12 FLOP in 1542 us -> 1.099511627776e12 / 1542e-6 / 1e12 = 713.04 TFLOP/s
    gemm = next(c for c in compare_published(small_csv).comparisons if c.row_id == "T0002")
    assert (gemm.engine, gemm.timing) == ("vllm", "vllm gemm table")
    assert gemm.predicted == pytest.approx(2 * 8192**3 / 1542e-6 / 1e12, rel=1e-9)
    assert gemm.predicted == pytest.approx(713.04, abs=0.01)
    assert gemm.error_pct == pytest.approx(100 * (713.04 - 640) / 640, abs=0.01)  # +11.41 %
    # the roofline prediction stays beside it: bf16 peak x matmul fraction (compute-bound at 8192^3)
    h100 = llmsim.load_hardware("h100-sxm")
    assert gemm.roofline_predicted == pytest.approx(
        h100.matrix_peak_flops_per_s("bf16") * h100.matmul_efficiency("bf16") / 1e12, rel=1e-9)


def test_fp8_scaled_mm_reads_the_cublaslt_rows() -> None:
    # torch._scaled_mm is cuBLASLt's scaled matmul, the kernel TensorRT-LLM's fp8 linear calls: its static-scale
    # row kernels/h100-sxm/trtllm/gemm.csv "fp8,8192,8192,8192,775" (a grid point):
    # 2*8192^3 = 1.099511627776e12 FLOP in 775 us -> 1418.72 TFLOP/s; not a proxy (no flag P)
    row = make_row(**{**ROWS[1], "id": "T0005", "weight_dtype": "fp8", "value": "1300"})
    gemm, = predict_row(row)
    assert (gemm.engine, gemm.timing, gemm.flags) == ("trtllm", "trtllm gemm table", frozenset())
    assert gemm.predicted == pytest.approx(2 * 8192**3 / 775e-6 / 1e12, rel=1e-9)
    assert gemm.predicted == pytest.approx(1418.72, abs=0.01)


def test_deepgemm_rows_take_sglangs_activation_quantisation_off_its_table() -> None:
    # aiconfigurator's SGLang fp8_block rows time sglang_per_token_group_quant_fp8 and then DeepGEMM; DeepGEMM's
    # README times the GEMM alone, so the prediction is the table's time less that quantisation kernel
    from llmsim.hardware.measured import measured_for
    from llmsim.validation.published.kernels import group_quant_s

    M, N, K = 64, 2112, 7168
    row = make_row(id="T0006", source_group="DeepGEMM", category="microbench_gemm", gpu="H800 SXM5",
                   weight_dtype="FP8 e4m3 (fine-grained 128-block scaling)", framework="DeepGEMM (JIT CUDA)",
                   metric="achieved TFLOPS", value="206", unit="TFLOPS", gemm_M=str(M), gemm_N=str(N), gemm_K=str(K))
    gemm, = predict_row(row)
    table_s = measured_for("h100-sxm", "sglang").gemm_table_named("fp8_block").time_s(M, N, K)
    quant_s = group_quant_s("h100-sxm", PredictOptions(), M, K)
    assert gemm.timing == "sglang gemm table (fp8_block, less its activation quantisation)"
    assert gemm.predicted == pytest.approx(2 * M * N * K / (table_s - quant_s) / 1e12, rel=1e-9)
    # the kernel reads 64 x 7168 bf16 and writes 64 x 7168 fp8 plus 64 x 56 fp32 scales: 1,390,592 bytes, at
    # least 0.415 us at the H100's 3.35 TB/s; one launch from a graph on top, well under the table's 12.3 us
    moved = M * K * 3 + M * K // 128 * 4
    assert moved == 1_390_592
    assert moved / 3.35e12 < quant_s < moved / 3.35e12 + 5e-6 and quant_s < table_s / 4


def test_in_sample_only_on_the_roofline(test_gpu_dict: dict[str, Any]) -> None:
    # M0313 set h100-sxm's matmul fraction: from the vLLM table it is out of sample, on the roofline in sample
    row = make_row(id="M0313", source_group="ml-engineering MAMF", category="microbench_gemm",
                   gpu="NVIDIA H100 SXM", weight_dtype="BF16", framework="PyTorch matmul (mamf-finder.py)",
                   value="794.5", gemm_M="2048", gemm_N="2048", gemm_K="13312")
    (table,) = predict_row(row)
    (roofline,) = predict_row(row, PredictOptions(hardware_overrides={"h100-sxm": test_gpu_dict}))
    assert table.timing == "vllm gemm table" and "I" not in table.flags
    assert roofline.timing.startswith("roofline") and "I" in roofline.flags


def test_attention_from_the_non_causal_table() -> None:
    # kernels/h100-sxm/vllm/encoder_attention.csv "64,16,1,16384,2101" (non-causal, head dim 64: 2101 us), carried
    # to head dim 128 by the causal prefill table's "bf16,128,0,16,16,1,16384,1816" over "bf16,64,0,16,16,1,16384,
    # 1229": 2101 x 1816 / 1229 = 3104.4 us; tritonbench's count 4*1*16*16384^2*128 = 2.1990e12 FLOP -> 708.34 TFLOP/s
    columns = dict(id="T0010", source_group="tritonbench (pytorch/benchmark)", category="microbench_attention",
                   model="FlashAttention-3 (flash_v3)", gpu="NVIDIA H100 SXM", weight_dtype="bf16/fp16 (not stated)",
                   framework="tritonbench run_benchmark.py triton --op flash_attention --metrics tflops --d-head 128",
                   value="620.73", attn_shape_B_H_S_D="(1, 16, 16384, 128)")
    (c,) = predict_row(make_row(**columns))
    seconds = 2101e-6 * 1816 / 1229
    assert c.predicted == pytest.approx(4 * 16 * 16384**2 * 128 / seconds / 1e12, rel=1e-9)
    assert c.predicted == pytest.approx(708.34, abs=0.01)
    assert c.timing.startswith("vllm encoder_attention table (non-causal); head dim 128 read from the measured 64")
    # the A100 has no encoder table: the causal prefill table x the non-causal/causal pairs 2*16384/16385, and why
    (a100,) = predict_row(make_row(**{**columns, "gpu": "NVIDIA A100 SXM"}))
    assert a100.timing.startswith("vllm prefill_attention table (causal) x 1.9999 non-causal/causal pairs (no vllm "
                                  "encoder_attention table for a100-80gb-sxm)")
    assert c.engine == "vllm" and c.flags == frozenset({"C"})
    # FlashMLA: no MLA table, skipped with the reason
    mla = predict_row(make_row(id="T0011", category="microbench_attention", gpu="H800 SXM5", framework="FlashMLA",
                               value="660"))
    assert isinstance(mla, Skipped) and mla.kind == "no table for the kernel" and "MLA" in mla.reason


def test_torchao_row_runs_torch_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    row = make_row(id="T0012", source_group="torchao", category="e2e_llm", model="Llama-2-7B", gpu="A100-80GB",
                   gpu_count="1", parallelism="none", weight_dtype="bf16",
                   framework="torchao llama generate.py (torch.compile)", batch_size="1",
                   input_len="small default prompt (not stated)", output_len="generate.py default (not stated)",
                   metric="decode throughput", value="107.38", throughput_scope="per user (bs=1)")
    (c,) = predict_row(row)
    assert c.engine == "torch-compile" and c.timing == "tables: gemm"  # torch-compile reads the GEMM tables only
    # torchao's generate.py defaults: a 6-token prompt, 200 new tokens (flag L); A100 80GB form factor unstated (V)
    sim = llmsim.simulate("llama-2-7b", "a100-80gb-sxm", batch_size=1, prompt_len=6, gen_len=200, tensor_parallel=1,
                          overhead="graph", weight_dtype="bf16", activation_dtype="bf16", engine="torch-compile")
    assert c.predicted == pytest.approx(sim.throughput_tokens_per_s, rel=1e-12)
    assert c.flags == frozenset({"L", "V"})
    vllm = predict_row(row, PredictOptions(engine="vllm"))[0]  # an engine given for every row wins
    assert vllm.engine == "vllm" and vllm.predicted != pytest.approx(c.predicted, rel=1e-3)


def test_plot(small_csv: Path, tmp_path: Path) -> None:
    out = plot_published(compare_published(small_csv), tmp_path / "published.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_engine_and_simulate_kwargs_reach_simulate(small_csv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    real = e2e_module.simulate

    def spy(model: Any, hardware: Any, **kwargs: Any) -> llmsim.SimulationResult:
        seen.append(dict(kwargs))
        return real(model, hardware, **kwargs)

    monkeypatch.setattr(e2e_module, "simulate", spy)
    # every e2e row: its engine, then the roofline before (engine "roofline", achievable fractions)
    compare_published(small_csv, engine="torch-compile", simulate_kwargs={"attention": "math"})
    assert [k["engine"] for k in seen] == ["torch-compile", "roofline"]
    assert all(k["attention"] == "math" for k in seen) and seen[1]["efficiency"] == "achievable"
    seen.clear()
    compare_published(small_csv)  # T0001 is LMDeploy TurboMind: vllm as the proxy
    assert [k["engine"] for k in seen] == ["vllm", "roofline"] and all("attention" not in k for k in seen)


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
