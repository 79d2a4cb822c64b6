"""Measured Gated DeltaNet (linear attention) tables: shipped points pinned by hand, the log-space midpoint, the
importer on a parquet file written here, and the roofline fallbacks with their reasons."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import llmsim
from llmsim.engines.aiconfigurator import import_tables
from llmsim.hardware.measured import load_measured, measured_for
from llmsim.timing.measured import MeasuredTiming

from .test_kernel_tables import _write_parquet


def test_shipped_h100_vllm_gdn_tables_return_measured_points() -> None:
    mk = measured_for("h100-sxm", "vllm")
    # aiconfigurator-core 0.12.0, h100_sxm/linear_attention/vllm/0.24.0/gdn_perf.parquet, 16 key / 64 value heads
    # (Qwen3.5-122B-A10B and -397B-A17B at TP1: the same kernel shape under two d_model values, the faster kept):
    # chunk_gated_delta_rule_flashinfer, batch 1, seq_len 4096: 0.20206 ms (d_model 3072), 0.20066 ms (4096)
    prefill = mk.gdn_table("prefill", "delta_rule", 128, 128, 4, 16, 64)
    assert prefill.time_s(1.0, 4096.0) == pytest.approx(200.66e-6, rel=1e-3)  # the CSV keeps 4 figures: 200.7
    # causal_conv1d_fn, batch 1, seq_len 4096: 0.093425 ms (3072), 0.093380 ms (4096)
    conv = mk.gdn_table("prefill", "conv1d", 128, 128, 4, 16, 64)
    assert conv.time_s(1.0, 4096.0) == pytest.approx(93.38e-6, rel=1e-3)
    # fused_recurrent_gated_delta_rule_packed_decode, batch 64: 0.18419 ms (3072), 0.18408 ms (4096)
    decode = mk.gdn_table("decode", "delta_rule", 128, 128, 4, 16, 64)
    assert decode.time_s(64.0) == pytest.approx(184.08e-6, rel=1e-3)
    text = (Path(mk.folder) / "prefill_gdn.csv").read_text()
    assert "# gpu: NVIDIA H100 80GB HBM3" in text and "chunk_gated_delta_rule_flashinfer" in text
    assert "gdn_perf.parquet" in mk.source("prefill_gdn")


PREFILL_CSV = """# source: written by this test
kernel,head_k_dim,head_v_dim,conv,num_k_heads,num_v_heads,batch,isl,latency_us
delta_rule,128,128,4,2,8,1,64,10
delta_rule,128,128,4,2,8,1,4096,90
delta_rule,128,128,4,2,8,4,64,40
delta_rule,128,128,4,2,8,4,4096,360
"""


def test_a_midpoint_is_the_geometric_mean_of_its_corners(tmp_path: Path) -> None:
    (tmp_path / "prefill_gdn.csv").write_text(PREFILL_CSV)
    timing = MeasuredTiming(load_measured(str(tmp_path), "test-gpu", "vllm"), None)
    read, label, _ = timing.lookup(("prefill_gdn", "delta_rule", 128, 128, 4, 2, 8, "bfloat16"))
    assert label == "vllm prefill_gdn table; delta_rule"
    assert read(1.0, 4096.0, 0.0) == pytest.approx(90e-6, rel=1e-12)  # a measured point: its time
    # two points per axis: the monotone cubic is the straight line in log-log. batch 2 is halfway between 1 and 4
    # in log, isl 512 halfway between 64 and 4096: (10 * 90 * 40 * 360) ** (1/4) = 60 us
    assert read(2.0, 512.0, 0.0) == pytest.approx(60e-6, rel=1e-12)
    # beyond the grid: below the smallest point its time; above the largest in proportion (batch 8 = 2 x 4)
    assert read(1.0, 16.0, 0.0) == pytest.approx(10e-6, rel=1e-12)
    assert read(8.0, 4096.0, 0.0) == pytest.approx(720e-6, rel=1e-12)


def test_simulate_times_gdn_ops_from_the_tables_with_per_gpu_heads() -> None:
    # Qwen3-Next-80B-A3B: 16 key and 32 value heads of 128, conv width 4; TP4 runs 4 / 8 heads per GPU
    r = llmsim.simulate("qwen3-next-80b-a3b", "h100-sxm", batch_size=2, prompt_len=4096, gen_len=8,
                        engine="vllm", tensor_parallel=4, clock="boost")  # the tables' clock (timing.sustained)
    mk = measured_for("h100-sxm", "vllm")
    prefill = {op.name: op for op in r.prefill.ops}
    scan = prefill["layers.linear.attn.scan"]
    assert scan.source == "vllm prefill_gdn" and prefill["layers.linear.attn.conv1d"].source == "vllm prefill_gdn"
    table_s = mk.gdn_table("prefill", "delta_rule", 128, 128, 4, 4, 8).time_s(2.0, 4096.0)
    # the op's time is the table's at (batch 2, 4096 tokens) plus an eager launch (2.7 us, hardware/h100-sxm.toml
    # kernel_launch_s): vLLM runs this prefill without a CUDA graph, and the kernel outlasts its host dispatch
    assert scan.time_s / scan.count == pytest.approx(table_s + 2.7e-6, abs=1e-9)
    decode = {op.name: op for op in r.decode.ops}
    assert decode["layers.linear.attn.update"].source == "vllm decode_gdn"
    assert decode["layers.linear.attn.conv1d"].source == "vllm decode_gdn"
    assert "prefill_gdn" in str(r) and not any("gdn" in why for why in r.roofline_reasons)


def test_an_fla_scan_launches_eight_kernels_and_an_uncaptured_prefill_pays_the_host_for_each() -> None:
    # SGLang and TensorRT-LLM run FLA's chunked scan: l2norm of q and of k, chunk_local_cumsum, chunk_scaled_dot_kkt,
    # solve_tril, recompute_w_u, chunk_gated_delta_rule_fwd_h, chunk_fwd_o = 8 launches (FLA_SCAN_LAUNCHES)
    kw = {"batch_size": 2, "seq_len": 4096, "tensor_parallel": 4}
    fla = {op.name: op for op in llmsim.build_ops("qwen3-next-80b-a3b", "prefill", linear_attention_kernel="fla", **kw)}
    fused = {op.name: op for op in llmsim.build_ops("qwen3-next-80b-a3b", "prefill", **kw)}
    eager = {op.name: op for op in llmsim.build_ops("qwen3-next-80b-a3b", "prefill", linear_attention_kernel="fla",
                                                   fusion="eager", **kw)}
    assert (fla["layers.linear.attn.scan"].launches, fused["layers.linear.attn.scan"].launches,
            eager["layers.linear.attn.scan"].launches) == (8, 1, 1)
    assert fla["layers.linear.attn.scan"].matmul_flops == fused["layers.linear.attn.scan"].matmul_flops
    # the engine picks it: SGLang's prefill runs uncaptured (62.2 us of host per kernel, counted for the pass:
    # timing.host_bound). Its ops launch 1,349 kernels in all (the scan's 8 each of 36 layers among them), so the
    # host needs 1,349 x 62.2 us = 83.91 ms, more than the kernels take: the pass takes that
    r = llmsim.simulate("qwen3-next-80b-a3b", "h100-sxm", batch_size=2, prompt_len=4096, gen_len=8,
                        engine="sglang", tensor_parallel=4, clock="boost")
    sglang_ops = llmsim.build_ops("qwen3-next-80b-a3b", "prefill", batch_size=2, seq_len=4096, tensor_parallel=4,
                                  attention="flash", fusion="elementwise", kv_cache="paged", logits="last",
                                  fused_projections=True, linear_attention_kernel="fla", mla="absorb")
    assert sum(op.count * op.launches for op in sglang_ops) == 1349
    assert r.prefill.time_s == pytest.approx(1349 * 62.2e-6, rel=1e-9)
    scan = next(op for op in r.prefill.ops if op.name == "layers.linear.attn.scan")
    table_s = measured_for("h100-sxm", "sglang").gdn_table("prefill", "delta_rule", 128, 128, 4, 4, 8).time_s(2.0,
                                                                                                             4096.0)
    assert table_s == pytest.approx(0.226e-3, rel=1e-6)
    # the scan: its kernels (table + 8 x 2.7 us launches) and its 8 launches' share of the host's excess
    assert scan.source == "sglang prefill_gdn" and scan.time_s / scan.count > table_s + 8 * 2.7e-6


def test_no_table_falls_back_to_the_roofline_and_says_why() -> None:
    # TensorRT-LLM's package tables hold only the TP1 shapes (16 key heads): 2 / 8 per GPU at TP8 has none
    r = llmsim.simulate("qwen3.5-397b-a17b", "h200", batch_size=1, prompt_len=512, gen_len=2, engine="trtllm",
                        tensor_parallel=8)
    assert ("no prefill_gdn delta_rule row for 2/8 key/value heads per GPU, head dims 128/128, convolution width 4 "
            "(engine trtllm on h200)") in r.roofline_reasons
    assert {op.source for op in r.prefill.ops if op.name.endswith(("scan", "conv1d"))} == {"roofline"}
    # an engine that reads only GEMM tables says so
    timing = MeasuredTiming(measured_for("h200", "vllm"), ("gemm",))
    read, why, _ = timing.lookup(("decode_gdn", "delta_rule", 128, 128, 4, 2, 8, "bfloat16"))
    assert read is None and why == "decode_gdn: on the roofline (this engine reads only the gemm tables)"
    # float32 q, k, v: the tables time 16-bit ones
    read, why, _ = MeasuredTiming(measured_for("h200", "vllm"), None).lookup(
        ("decode_gdn", "delta_rule", 128, 128, 4, 2, 8, "float32"))
    assert read is None and why == "decode_gdn: float32 activations (the tables time 16-bit q, k, v)"


def test_importer_on_a_gdn_parquet_file_written_here(tmp_path: Path) -> None:
    data = tmp_path / "data"
    base = {"framework": "vLLM", "version": "9.9", "device": "Test GPU", "op_name": "gdn", "d_conv": 4,
            "num_k_heads": 2, "head_k_dim": 128, "num_v_heads": 8, "head_v_dim": 128, "model_name": "m"}
    rows = []
    for d_model, scale in ((2048, 1.0), (4096, 1.1)):  # one kernel shape under two model names: the faster kept
        for source in ("causal_conv1d_fn", "chunk_gated_delta_rule_flashinfer"):
            per_token = 0.0001 if source.startswith("causal") else 0.0003  # ms per token
            rows += [{**base, "kernel_source": source, "phase": "context", "batch_size": b, "seq_len": s,
                      "num_tokens": b * s, "d_model": d_model, "latency": scale * (0.002 + per_token * b * s)}
                     for b in (1, 4) for s in (64, 4096)]
        for source in ("causal_conv1d_update", "fused_recurrent_gated_delta_rule_packed_decode"):
            rows += [{**base, "kernel_source": source, "phase": "generation", "batch_size": b, "seq_len": 1,
                      "num_tokens": b, "d_model": d_model, "latency": scale * 0.001 * b} for b in (1, 8)]
    rows.append({**rows[0], "kernel_source": "some_other_kernel"})  # not a GDN kernel llmsim knows: left out
    _write_parquet(data / "test_gpu" / "linear_attention" / "vllm" / "9.9" / "gdn_perf.parquet", rows)
    out = tmp_path / "k"
    written = import_tables("test_gpu", "vllm", out, data_root=data, full=True)
    assert sorted(p.name for p in written) == ["decode_gdn.csv", "prefill_gdn.csv"]
    mk = load_measured(str(out))
    # delta rule, batch 4, 4096 tokens: 0.002 + 0.0003 * 16384 = 4.9172 ms (d_model 2048, 10 % under 4096's)
    assert mk.gdn_table("prefill", "delta_rule", 128, 128, 4, 2, 8).time_s(4.0, 4096.0) == pytest.approx(
        4.9172e-3, rel=1e-3)
    # conv1d at batch 1, 64 tokens: 0.002 + 0.0001 * 64 = 0.0084 ms
    assert mk.gdn_table("prefill", "conv1d", 128, 128, 4, 2, 8).time_s(1.0, 64.0) == pytest.approx(8.4e-6, rel=1e-3)
    # decode: batch 1 and 8 measured, 0.001 and 0.008 ms; batch 2 is a third of the way in log2 (1 of 3), on
    # the straight line of two points: 1 us * (8 / 1) ** (1/3) = 2 us
    decode = mk.gdn_table("decode", "delta_rule", 128, 128, 4, 2, 8)
    assert decode.time_s(8.0) == pytest.approx(8e-6, rel=1e-3)
    assert decode.time_s(2.0) == pytest.approx(math.exp(math.log(8) / 3) * 1e-6, rel=1e-3)
    text = (out / "prefill_gdn.csv").read_text()
    assert "# kernel_sources: causal_conv1d_fn chunk_gated_delta_rule_flashinfer" in text
    assert "# file: test_gpu/linear_attention/vllm/9.9/gdn_perf.parquet" in text and "some_other" not in text
    assert "# phase: context" in text and "# gpu: Test GPU" in text
