"""Non-causal (encoder) attention tables: shipped lookups pinned by hand, the head-dim carry-over, refusals and
the importer on a parquet file the test writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llmsim.engines.aiconfigurator import import_tables
from llmsim.hardware.measured import load_measured, measured_for
from llmsim.timing.measured import MeasuredTiming

from .test_kernel_tables import _write_parquet


def _encoder(device: str, engine: str, head_dim: int, heads: int) -> tuple[object, str]:
    kernels = measured_for(device, engine)
    assert kernels is not None
    read, label, _ = MeasuredTiming(kernels, None).lookup(("encoder_attention", head_dim, heads))
    return read, label


def test_a_measured_point_returns_its_time() -> None:
    read, label = _encoder("h100-sxm", "vllm", 64, 16)
    # kernels/h100-sxm/vllm/encoder_attention.csv: 64,16,32,512,133.6 (us)
    assert float(read(32.0, 512.0, None)) == pytest.approx(133.6e-6, rel=1e-12)
    assert label == "vllm encoder_attention table"


def test_a_head_dim_the_table_lacks_is_carried_over_with_the_causal_table() -> None:
    read, label = _encoder("h100-sxm", "vllm", 128, 16)
    # encoder 64,16,32,512: 133.6 us; causal prefill (bf16, window 0, 16/16 heads, batch 32, isl 512):
    # head dim 128: 272 us, head dim 64: 225.8 us -> 133.6 x 272 / 225.8 = 160.94 us
    assert float(read(32.0, 512.0, None)) == pytest.approx(133.6e-6 * 272 / 225.8, rel=1e-9)
    assert "head dim 128 read from the measured 64" in label and "approximation" in label


def test_a_head_dim_below_the_smallest_kernel_reads_that_kernel() -> None:
    # SD 1.5's head dim 40 fell to the roofline (2.5x under the 64 table's time at the same heads and tokens);
    # FlashAttention rounds it up to its 64 kernel (round_up_headdim), so the measured 64 row is its time
    read, label = _encoder("h100-sxm", "vllm", 40, 16)
    assert float(read(32.0, 512.0, None)) == pytest.approx(133.6e-6, rel=1e-12)  # 64,16,32,512,133.6 us
    assert "head dim 40 read at the measured 64: FlashAttention runs a head dim of 40 in its 64 kernel" in label


def test_heads_off_the_grid_scale_the_batch_not_the_time() -> None:
    read, label = _encoder("h100-sxm", "vllm", 64, 64)
    # 64 heads: the nearest measured is 32, read at batch x 2: 64,32,2,512 = 26.38 us at batch 1
    assert float(read(1.0, 512.0, None)) == pytest.approx(26.38e-6, rel=1e-12)
    assert "64 heads read from the measured 32 at batch x 2" in label


def test_refusals_say_why() -> None:
    # the package measured no encoder attention on the A100
    read, label = _encoder("a100-80gb-sxm", "vllm", 64, 16)
    assert read is None and label == "no encoder_attention table for engine vllm on a100-80gb-sxm"
    # head dim 96: not in the encoder table (64, 72, 80) and no causal slice of 96 to carry it over with
    read, label = _encoder("h100-sxm", "vllm", 96, 16)
    assert read is None and "no encoder_attention slice for head dim 96 (measured: [64, 72, 80])" in label


def test_importer_writes_the_encoder_table(tmp_path: Path) -> None:
    data = tmp_path / "data"
    rows = [{"framework": "VLLM", "version": "9.9", "device": "Test GPU", "op_name": "encoder_attention",
             "kernel_source": "vllm_vit_flash_attn_fa3", "batch_size": b, "isl": s, "num_heads": 16, "head_dim": 64,
             "attn_dtype": "bfloat16", "latency": 0.001 * b * s / 1024}  # ms
            for b in (1, 2, 4) for s in (256, 512, 1024) if b * s <= 2048]  # a token budget: (4, 1024) absent
    rows.append({**rows[0], "num_heads": 5})  # a head count the compact grid leaves out
    rows.append({**rows[0], "attn_dtype": "fp8"})  # not bf16: not imported
    _write_parquet(data / "test_gpu" / "encoder_attention" / "vllm" / "9.9" / "encoder_attention_perf.parquet", rows)
    out = tmp_path / "kernels"
    written = import_tables("test_gpu", "vllm", out, data_root=data, families=["encoder_attention"])
    assert [p.name for p in written] == ["encoder_attention.csv"]
    text = (out / "encoder_attention.csv").read_text()
    assert "# kernel_sources: vllm_vit_flash_attn_fa3" in text and "head_dim,num_heads,batch,isl,latency_us" in text
    grid = load_measured(str(out)).tables["encoder_attention"].grids
    assert list(grid) == [(64, 16)]  # 5 heads: not on the compact grid
    # batch 2, isl 1024: 0.001 ms x 2 x 1024 / 1024 = 2 us
    assert grid[(64, 16)].time_s(2, 1024) == pytest.approx(2e-6, rel=1e-12)
    # batch 4, isl 1024 is past the token budget: batch 2's time x 4 / 2 = 4 us
    assert grid[(64, 16)].time_s(4, 1024) == pytest.approx(4e-6, rel=1e-12)


def test_one_non_causal_attention_op_reads_the_table() -> None:
    from llmsim.analysis.one_op import op_cost

    r = op_cost("attention", "h100-sxm", batch=32, heads=16, head_dim=128, q_len=512, causal=False)
    # the kernel: 133.6 x 272 / 225.8 us (test above); FLOPs 4*32*16*512^2*128 = 68.72 G of matmul + 5 per score
    # 5*32*16*512^2 = 0.67 G -> 69.39 GFLOP, twice the causal op's pairs
    assert r.compute_s == pytest.approx(133.6e-6 * 272 / 225.8, rel=1e-9)
    assert r.flops == pytest.approx(4 * 32 * 16 * 512**2 * 128 + 5 * 32 * 16 * 512**2, rel=1e-12)
    assert r.source == "vllm encoder_attention" and "non-causal" in r.shape
    # an engine that reads only GEMM tables keeps it on the roofline
    assert op_cost("attention", "h100-sxm", batch=32, heads=16, head_dim=128, q_len=512, causal=False,
                   engine="torch-compile").source == "roofline"


def test_non_causal_attention_refuses_a_cache_and_a_non_bool() -> None:
    from llmsim.analysis.one_op import op_cost
    from llmsim.errors import OptionError

    with pytest.raises(OptionError, match="kv_len=5: non-causal attention"):
        op_cost("attention", "h100-sxm", heads=16, q_len=512, kv_len=5, causal=False)
    with pytest.raises(OptionError, match="causal='no': allowed values: True, False"):
        op_cost("attention", "h100-sxm", heads=16, q_len=512, causal="no")


def test_a_traced_non_causal_sdpa_reads_the_table_of_the_kernel_pytorch_runs_or_its_proxy() -> None:
    torch = pytest.importorskip("torch")
    import llmsim

    class Attention(torch.nn.Module):
        def forward(self, q: object, k: object, v: object, causal: bool = False) -> object:
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def traced(hardware: str, causal: bool = False) -> Any:
        x = torch.empty(8, 16, 576, 64)  # [batch, heads, tokens, head dim]: a ViT-L/14 at 336 px (24 x 24 patches)
        return llmsim.analyze(Attention(), example_inputs=(x, x, x, causal), hardware=hardware, dtype="bfloat16",
                              engine="torch-compile").kernels[0]

    kernel = traced("l40s")
    # kernels/l40s/vllm/encoder_attention.csv "64,16,8,576,81.41" (kernel source vllm_vit_flash_attn_fa2, PyTorch's
    # flash backend on sm89), plus the graph launch the roofline adds to every kernel
    assert kernel.source == "vllm encoder_attention (FlashAttention-2, as PyTorch's SDPA runs it)"
    assert 81.41e-6 <= kernel.time_s < 81.41e-6 + 5e-6
    # the H100's table times FlashAttention-3 (vllm_vit_flash_attn_fa3): a proxy for the cuDNN attention PyTorch
    # 2.13 runs first on sm90; kernels/h100-sxm/vllm/encoder_attention.csv "64,16,8,576,37.62"
    hopper = traced("h100-sxm")
    assert hopper.source == ("vllm encoder_attention (FlashAttention-3, a proxy for the cuDNN attention PyTorch's "
                             "SDPA runs on Hopper)")
    assert 37.62e-6 <= hopper.time_s < 37.62e-6 + 5e-6
    assert "Blackwell" in traced("b200").source  # vllm_vit_flash_attn_fa4
    # no non-causal table on the A100, and a causal SDPA is not what the table times: the roofline
    assert traced("a100-80gb-sxm").source == "roofline"
    assert traced("l40s", causal=True).source == "roofline"


def test_the_sdpa_label_names_one_kernel_or_none() -> None:
    from llmsim.trace.timing import sdpa_table_label

    assert sdpa_table_label("vllm_vit_flash_attn_fa2") == \
        "encoder_attention (FlashAttention-2, as PyTorch's SDPA runs it)"
    # tables of kernels PyTorch never runs (Triton, TensorRT-LLM's own FMHA), or of no stated kernel: none
    for sources in ("triton", "torch_flow", "", "fa2_fa3"):
        assert sdpa_table_label(sources) is None
