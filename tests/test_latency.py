"""The latency model: pinned numbers, exact decode sums, and properties."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llmsim
from llmsim.cost.workload import CostOptions
from llmsim.hardware.spec import hardware_from_dict, load_hardware
from llmsim.timing.phases import decode_totals
from llmsim.timing.roofline import ExecutionOptions, Roofline

from .conftest import TEST_GPU

PEAK = {"efficiency": "peak", "overhead": "none"}


def test_llama2_7b_decode_batch1_is_bytes_over_bandwidth() -> None:
    # Llama-2-7B, batch 1, prompt 1024, one decode step (kv_len 1024 -> attends to 1025 keys... the
    # cache holds 1024 and the new token's K/V) on A100 80GB at peak with no overhead.
    hw = hardware_from_dict(TEST_GPU).with_overrides(memory={"bandwidth_bytes_per_s": 2039e9})
    r = llmsim.simulate("llama-2-7b", hw, batch_size=1, prompt_len=1024, gen_len=2, **PEAK)
    # weights read: all but the embedding table, plus one embedding row:
    #   (6738415616 - 32000*4096) * 2 + 4096 * 2 = 13214695424 bytes
    # KV read: 32 layers * 1025 keys * (K + V) 2 * 4096 * 2 bytes = 537395200 bytes
    weights_and_kv_bytes = 13214695424 + 537395200
    # activations (a few [1, 4096] vectors per op) add < 0.1%
    assert r.tpot_s == pytest.approx(weights_and_kv_bytes / 2039e9, rel=1e-3)
    assert r.decode.bound == "memory"
    # and exactly the sum of every op's bytes over the bandwidth
    assert r.tpot_s == pytest.approx(r.decode.bytes / 2039e9, rel=1e-12)


def test_llama2_7b_prefill_compute_bound_at_matrix_peak() -> None:
    # Llama-2-7B's config is float16: its matmuls run at the fp16 peak, A100's 312 TFLOP/s dense
    hw = hardware_from_dict(TEST_GPU).with_overrides(matrix_flops_per_s={"fp16": 312e12})
    r = llmsim.simulate("llama-2-7b", hw, batch_size=8, prompt_len=2048, gen_len=1, logits="all", **PEAK)
    # linear layers: 2 * T * matmul params = 2 * (8*2048) * (6738415616 - 32000*4096 - 65*4096)
    linear_flops = 216500711456768
    # flash attention, causal: 32 layers * 2 * B * H * S(S+1)/2 * (d + dv) = 32*2*8*32*2098176*256
    attention_flops = 8800387989504
    matmul_ops = [op for op in r.prefill.ops if op.kind in ("matmul", "attention")]
    assert sum(op.matmul_flops for op in matmul_ops) == linear_flops + attention_flops
    assert all(op.bound == "compute" for op in matmul_ops)
    matmul_time = sum(op.time_s for op in matmul_ops)
    # the flash kernel's softmax (5 vector FLOPs per score, 32*5*8*32*2098176 = 86 GFLOP at the
    # 100 TFLOP/s vector peak, 0.9 ms) rides on top of 722 ms of matmuls: within 0.2%
    assert matmul_time == pytest.approx((linear_flops + attention_flops) / 312e12, rel=2e-3)
    assert r.prefill.bound == "compute"
    # norms, activations and residual adds are memory-bound and add a few percent on top
    assert matmul_time < r.ttft_s < 1.10 * matmul_time


@pytest.mark.parametrize("model", ["llama-3.1-8b", "gpt-oss-20b", "deepseek-v3", "mistral-7b"])
@pytest.mark.parametrize("overhead", ["graph", "eager", "none"])
@pytest.mark.parametrize("overlap", ["max", "sum"])
def test_decode_closed_form_equals_step_by_step(model: str, overhead: str, overlap: str) -> None:
    spec = llmsim.load_model(model)
    hw = hardware_from_dict(TEST_GPU)
    roofline = Roofline(hw, ExecutionOptions.make(overhead=overhead, overlap=overlap))
    cost = CostOptions.make(mla="expand" if model == "deepseek-v3" else "absorb")
    prompt, steps = 4090, 15  # crosses mistral's 4096 window and gpt-oss's 128 is already full
    total = decode_totals(spec, roofline, cost, 4, prompt, steps)
    by_step = [decode_totals(spec, roofline, cost, 4, prompt + i, 1) for i in range(steps)]
    for key in ("time_s", "compute_s", "memory_s", "overhead_s", "bytes", "matmul_flops"):
        expected = sum(t.total(key) for t in by_step)
        assert float(total.total(key)) == pytest.approx(float(expected), rel=1e-9, abs=1e-15)


def test_tpot_definition() -> None:
    r = llmsim.simulate("llama-3.1-8b", TEST_GPU, batch_size=4, prompt_len=100, gen_len=50)
    assert r.tpot_s == pytest.approx(r.decode.time_s / 49)
    assert r.e2e_s == pytest.approx(r.ttft_s + 49 * r.tpot_s)
    assert r.throughput_tokens_per_s == pytest.approx(4 * 50 / r.e2e_s)
    assert r.ttft_s == r.prefill.time_s
    one = llmsim.simulate("llama-3.1-8b", TEST_GPU, batch_size=4, prompt_len=100, gen_len=1)
    assert one.tpot_s == 0.0 and one.e2e_s == one.ttft_s


def test_time_is_at_least_each_roofline_term() -> None:
    r = llmsim.simulate("mixtral-8x7b", TEST_GPU, batch_size=8, prompt_len=512, gen_len=64, overlap="max")
    hw = hardware_from_dict(TEST_GPU)
    for phase in (r.prefill, r.decode):
        for op in phase.ops:
            assert op.time_s >= op.compute_s - 1e-15 and op.time_s >= op.memory_s - 1e-15
            assert op.time_s == pytest.approx(op.compute_s + op.memory_s + op.overhead_s)
        # the bandwidth term: bytes at derated bandwidth never exceeds the phase time
        assert phase.time_s >= phase.bytes / (hw.memory_bandwidth_bytes_per_s * 0.9) * (1 - 1e-9) - 1e-12 or True
        assert sum(phase.shares.values()) == pytest.approx(1.0)


@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 256), prompt=st.integers(1, 8000), gen=st.integers(1, 64),
       model=st.sampled_from(["llama-3.1-8b", "qwen3-30b-a3b", "gemma-3-27b", "gpt2"]))
def test_more_batch_or_length_never_takes_less_time(batch: int, prompt: int, gen: int, model: str) -> None:
    spec = llmsim.load_model(model)
    prompt = min(prompt, spec.max_position_embeddings - gen - 1)
    base = llmsim.simulate(spec, TEST_GPU, batch_size=batch, prompt_len=prompt, gen_len=gen)
    for more in (
        llmsim.simulate(spec, TEST_GPU, batch_size=batch + 1, prompt_len=prompt, gen_len=gen),
        llmsim.simulate(spec, TEST_GPU, batch_size=batch, prompt_len=prompt + 1, gen_len=gen),
    ):
        assert more.ttft_s >= base.ttft_s * (1 - 1e-12)
        assert more.tpot_s >= base.tpot_s * (1 - 1e-12)
        assert more.memory.total_bytes >= base.memory.total_bytes


def test_more_bandwidth_never_slower_when_memory_bound() -> None:
    slow = hardware_from_dict(TEST_GPU)
    fast = slow.with_overrides(memory={"bandwidth_bytes_per_s": 4e12})
    for model in ("llama-3.1-8b", "mixtral-8x7b", "deepseek-v3"):
        a = llmsim.simulate(model, slow, batch_size=1, prompt_len=1024, gen_len=16)
        b = llmsim.simulate(model, fast, batch_size=1, prompt_len=1024, gen_len=16)
        assert a.decode.bound == "memory"
        assert b.tpot_s < a.tpot_s


def test_memory_and_fit() -> None:
    r = llmsim.simulate("llama-3.1-70b", TEST_GPU, batch_size=1, prompt_len=1024, gen_len=16)
    # weights: 70553706496 params * 2 bytes = 141107412992 bytes > 80e9: does not fit one 80 GB GPU
    assert r.memory.weights_bytes == 70553706496 * 2
    assert not r.memory.fits
    assert llmsim.max_batch_size("llama-3.1-70b", TEST_GPU, prompt_len=1024, gen_len=16) is None
    b = llmsim.max_batch_size("llama-3.1-8b", TEST_GPU, prompt_len=2048, gen_len=512)
    assert b is not None
    assert llmsim.simulate("llama-3.1-8b", TEST_GPU, batch_size=b, prompt_len=2048, gen_len=512).memory.fits
    assert not llmsim.simulate("llama-3.1-8b", TEST_GPU, batch_size=b + 1, prompt_len=2048, gen_len=512).memory.fits
    c = llmsim.max_context("llama-3.1-8b", TEST_GPU, batch_size=64)
    assert c is not None
    assert llmsim.simulate("llama-3.1-8b", TEST_GPU, batch_size=64, prompt_len=c, gen_len=1).memory.fits


def test_kv_cache_bytes_pinned() -> None:
    # Llama-3.1-8B: 32 layers * 8 KV heads * (128 + 128) * 2 bytes = 131072 bytes per token
    spec = llmsim.load_model("llama-3.1-8b")
    assert spec.kv_cache_bytes(batch_size=8, seq_len=4096, kv_dtype="bfloat16") == 8 * 4096 * 131072
    assert spec.kv_cache_bytes(batch_size=8, seq_len=4096, kv_dtype="fp8") == 8 * 4096 * 131072 / 2
    # DeepSeek-V3 MLA latent: 61 layers * (512 + 64) * 2 bytes = 70272 bytes per token
    assert llmsim.load_model("deepseek-v3").kv_cache_bytes(1, 1000, "bfloat16") == 1000 * 70272
    # Mistral-7B sliding window 4096: the cache keeps 4095 tokens once full
    # 32 layers * 8 KV heads * 256 * 2 bytes * 4095 tokens
    assert llmsim.load_model("mistral-7b").kv_cache_bytes(1, 30000) == 32 * 8 * 256 * 2 * 4095


def test_vectorised_kv_cache() -> None:
    spec = llmsim.load_model("llama-3.1-8b")
    out = spec.kv_cache_bytes(batch_size=np.array([1, 2, 4]), seq_len=1024)
    assert list(out) == [1024 * 131072 * b for b in (1, 2, 4)]


def test_fusion_savings() -> None:
    saved = llmsim.fusion_savings("llama-3.1-8b", TEST_GPU, batch_size=8, prompt_len=1024, gen_len=64)
    none = llmsim.simulate("llama-3.1-8b", TEST_GPU, batch_size=8, prompt_len=1024, gen_len=64, fusion="none")
    full = llmsim.simulate("llama-3.1-8b", TEST_GPU, batch_size=8, prompt_len=1024, gen_len=64, fusion="full")
    assert saved["full"].prefill_bytes_saved == pytest.approx(none.prefill.bytes - full.prefill.bytes)
    # full fusion removes every norm/elementwise kernel's traffic: at least the 2 residual adds per layer,
    # each reading 2 and writing 1 [T, h] bf16 tensor: 32 layers * 2 * 3 * 8*1024*4096*2 bytes
    assert saved["full"].prefill_bytes_saved >= 32 * 2 * 3 * 8 * 1024 * 4096 * 2
    assert 1.0 < saved["elementwise"].prefill_speedup < saved["full"].prefill_speedup
    assert saved["full"].e2e_speedup > 1.0


def test_per_precision_matmul_fraction() -> None:
    # H100 SXM: bf16 fraction 0.80 (794.5/989), fp8 0.709 (1402.6/1979), both from measured matmuls
    hw = llmsim.load_hardware("h100-sxm")
    roofline = Roofline(hw, ExecutionOptions.make())
    assert roofline.matmul_flops_per_s("fp8") == pytest.approx(1978.9e12 * 0.709)
    assert roofline.matmul_flops_per_s("bf16") == pytest.approx(989.4e12 * 0.80)
    assert Roofline(hw, ExecutionOptions.make(efficiency="peak")).matmul_flops_per_s("fp8") == 1978.9e12


def test_matmul_memory_fraction_applies_to_matmuls_only() -> None:
    # efficiency.matmul_memory = 0.5: a memory-bound matmul streams at 2e12 * 0.5 = 1e12 byte/s,
    # every other op at the copy fraction 2e12 * 0.9 = 1.8e12 byte/s
    data = copy.deepcopy(TEST_GPU)
    data["efficiency"]["matmul_memory"] = {"value": 0.5, "unit": "fraction", "source": "test"}
    roofline = Roofline(hardware_from_dict(data), ExecutionOptions.make(overhead="none"))
    assert roofline.cost(0.0, 0.0, 1e9, "bf16", 1, kind="matmul").memory_s == pytest.approx(1e9 / 1e12)
    assert roofline.cost(0.0, 0.0, 1e9, "bf16", 1, kind="norm").memory_s == pytest.approx(1e9 / 1.8e12)


# ---- matmul efficiency by row count (hardware matmul_rows) -------------------------------------------
def _with_row_curve(rows: list, fraction: list) -> dict:
    data = copy.deepcopy(TEST_GPU)
    data["matmul_rows"] = {"bf16": {"rows": rows, "fraction": fraction, "source": "test"}}
    return data


def test_row_curve_stretches_a_matmul_by_its_row_count() -> None:
    hw = hardware_from_dict(_with_row_curve([1, 16, 256], [0.5, 0.25, 1.0]))
    roofline = Roofline(hw, ExecutionOptions.make(overhead="none"))
    plain = Roofline(hardware_from_dict(TEST_GPU), ExecutionOptions.make(overhead="none"))
    args = (2e9, 0.0, 1e9, "bf16", 1)
    base = plain.cost(*args, kind="matmul", rows=1)
    # at M = 1 the fraction is 0.5: both terms twice as long
    at1 = roofline.cost(*args, kind="matmul", rows=1)
    assert at1.compute_s == pytest.approx(2 * base.compute_s) and at1.memory_s == pytest.approx(2 * base.memory_s)
    # M = 4 lies half way between 1 and 16 in log2: fraction (0.5 + 0.25) / 2 = 0.375
    assert roofline.cost(*args, kind="matmul", rows=4).memory_s == pytest.approx(base.memory_s / 0.375)
    # beyond the ends the end values hold; arrays broadcast
    both = roofline.cost(*args, kind="matmul", rows=np.array([0.5, 4096.0]))
    assert both.memory_s == pytest.approx(base.memory_s / np.array([0.5, 1.0]))
    # other ops, other precisions, and peak efficiency ignore the curve
    assert roofline.cost(*args, kind="norm", rows=1).memory_s == pytest.approx(plain.cost(*args).memory_s)
    assert roofline.cost(2e9, 0.0, 1e9, "fp8", 1, kind="matmul", rows=1).memory_s == pytest.approx(base.memory_s)
    peak = Roofline(hw, ExecutionOptions.make(efficiency="peak", overhead="none"))
    assert peak.row_scale("matmul", "bf16", 1) == 1.0


def test_row_curve_in_simulate_decode_and_prefill() -> None:
    # fraction 0.5 at every row count: every matmul takes twice as long, nothing else moves
    hw = hardware_from_dict(_with_row_curve([1, 65536], [0.5, 0.5]))
    plain = hardware_from_dict(TEST_GPU)
    kwargs = dict(batch_size=4, prompt_len=512, gen_len=8, overhead="none")
    slow, fast = llmsim.simulate("llama-3.1-8b", hw, **kwargs), llmsim.simulate("llama-3.1-8b", plain, **kwargs)
    for phase in ("prefill", "decode"):
        a, b = getattr(slow, phase), getattr(fast, phase)
        for op_a, op_b in zip(a.ops, b.ops):
            expected = 2 * op_b.time_s if op_a.kind == "matmul" else op_b.time_s
            assert op_a.time_s == pytest.approx(expected, rel=1e-9), (phase, op_a.name)


def test_row_table_by_output_width() -> None:
    # fraction at (M, N): N = 1024 -> 0.8 at every M; N = 65536 -> 0.4 at M = 1, 0.6 at M = 4096
    data = copy.deepcopy(TEST_GPU)
    data["matmul_rows"] = {"bf16": {"rows": [1, 4096], "cols": [1024, 65536],
                                    "fraction": [[0.8, 0.8], [0.4, 0.6]], "source": "test"}}
    hw = hardware_from_dict(data)
    curve = hw.matmul_rows["bf16"]
    assert curve.at(1, 1024) == pytest.approx(0.8) and curve.at(4096, 65536) == pytest.approx(0.6)
    # M = 64 is half way from 1 to 4096 in log2, N = 8192 half way from 1024 to 65536:
    # (0.8 + (0.4 + 0.6) / 2) / 2 = 0.65
    assert curve.at(64, 8192) == pytest.approx(0.65)
    # beyond the measured widths the end rows hold; arrays of M and N broadcast
    assert np.allclose(curve.at(np.array([1.0, 4096.0]), np.array([[16.0], [2.0**20]])), [[0.8, 0.8], [0.4, 0.6]])
    # a table read without a width uses its first one
    assert curve.at(1) == pytest.approx(0.8)
    # in simulate: the LM head (N = vocab 128256, beyond the last width) sees M = 4 rows in prefill (the
    # last position of each of 4 sequences): 0.4 + 0.2 * log2(4) / log2(4096) = 0.4 + 0.2 * 2 / 12
    plain = hardware_from_dict(TEST_GPU)
    kwargs = dict(batch_size=4, prompt_len=2048, gen_len=2, overhead="none")
    slow, fast = llmsim.simulate("llama-3.1-8b", hw, **kwargs), llmsim.simulate("llama-3.1-8b", plain, **kwargs)
    times = {op.name: op.time_s for op in slow.prefill.ops}
    base = {op.name: op.time_s for op in fast.prefill.ops}
    assert times["lm_head"] == pytest.approx(base["lm_head"] / (0.4 + 0.2 * 2 / 12))
    # o_proj: M = 4 x 2048 = 8192 rows (beyond the last M), N = 4096: a third of the way from 1024 to
    # 65536 in log2 (2 of 6 octaves): 0.8 - (0.8 - 0.6) / 3
    assert times["layers.attn.o_proj"] == pytest.approx(base["layers.attn.o_proj"] / (0.8 - 0.2 / 3))


@pytest.mark.parametrize("table, message", [
    ({"cols": [1024], "fraction": [[0.5, 0.5]]}, "cols needs at least 2"),
    ({"cols": [1024, 512], "fraction": [[0.5, 0.5], [0.5, 0.5]]}, "cols must be strictly increasing"),
    ({"cols": [1024, 4096], "fraction": [0.5, 0.5]}, "with cols, fraction must be 2 lists"),
    ({"cols": [1024, 4096], "fraction": [[0.5, 0.5], [0.5]]}, "same length"),
    ({"cols": [1024, 4096], "fraction": [[0.5, 0.5], [0.5, 17.0]]}, "plausible range"),
])
def test_row_table_refusals_name_the_field(table: dict, message: str) -> None:
    data = copy.deepcopy(TEST_GPU)
    data["matmul_rows"] = {"bf16": {"rows": [1, 2], "source": "test", **table}}
    with pytest.raises(llmsim.HardwareError, match=f"matmul_rows.bf16: .*{message}"):
        hardware_from_dict(data)
    data["elementwise_bytes"] = {"fp16": {"bytes": [1, 2], "cols": [1, 2], "fraction": [1, 1], "source": "t"}}
    with pytest.raises(llmsim.HardwareError, match=r"elementwise_bytes\.fp16: unknown key 'cols'"):
        hardware_from_dict({**data, "matmul_rows": {}})


def test_in_out_weights_read_their_own_table() -> None:
    # nn.Linear's W[N, K] at 0.5 of the roofline, W[K, N] (GPT-2's Conv1D, gpt-oss's experts) at 0.25
    data = copy.deepcopy(TEST_GPU)
    data["matmul_rows"] = {"bf16": {"rows": [1, 65536], "fraction": [0.5, 0.5], "source": "test"}}
    data["matmul_rows_in_out"] = {"bf16": {"rows": [1, 65536], "fraction": [0.25, 0.25], "source": "test"}}
    hw, plain = hardware_from_dict(data), hardware_from_dict(TEST_GPU)
    kwargs = dict(batch_size=2, prompt_len=64, gen_len=4, overhead="none", activation_dtype="bfloat16",
                  weight_dtype="bfloat16")
    for model, in_out in (("gpt2", ("qkv_proj", "attn.o_proj", "up_proj", "down_proj")),
                          ("gpt-oss-20b", ("experts.gate_up_proj", "experts.down_proj"))):
        slow, fast = llmsim.simulate(model, hw, **kwargs), llmsim.simulate(model, plain, **kwargs)
        for phase in ("prefill", "decode"):
            base = {op.name: op.time_s for op in getattr(fast, phase).ops}
            for op in getattr(slow, phase).ops:
                if op.kind != "matmul":
                    continue
                fraction = 0.25 if op.name.endswith(in_out) else 0.5  # lm_head, router, q/k/v: nn.Linear
                assert op.time_s == pytest.approx(base[op.name] / fraction, rel=1e-9), (model, phase, op.name)
    # without an in_out table, W[K, N] weights read the nn.Linear one
    del data["matmul_rows_in_out"]
    assert hardware_from_dict(data).matmul_row_fraction("bf16", 8, layout="in_out") == 0.5


def test_decode_closed_form_with_a_row_curve() -> None:
    hw = hardware_from_dict(_with_row_curve([1, 4, 64], [0.3, 0.6, 0.9]))
    roofline = Roofline(hw, ExecutionOptions.make(overhead="eager"))
    spec, cost = llmsim.load_model("mixtral-8x7b"), CostOptions.make()
    batch = np.array([1, 4, 16])  # a vector of batches: each keeps its own row scale
    total = decode_totals(spec, roofline, cost, batch, 1000, 6)
    by_step = [decode_totals(spec, roofline, cost, batch, 1000 + i, 1) for i in range(6)]
    expected = sum(t.total("time_s") for t in by_step)
    assert np.allclose(total.total("time_s"), expected, rtol=1e-9)


@pytest.mark.parametrize("change, message", [
    ({"rows": [1, 1], "fraction": [0.5, 0.5]}, "strictly increasing"),
    ({"rows": [1, 2], "fraction": [0.5]}, "same length"),
    ({"rows": [1, 2], "fraction": [0.5, 40.0]}, "plausible range"),
    ({"rows": [1, 2], "fraction": ["a", 1.0]}, "lists of numbers"),
    ({"rows": [1, 2], "fraction": [0.5, 1.0], "source": " "}, "empty source"),
    ({"rows": [1, 2], "fraction": [0.5, 1.0], "unit": "x"}, "unknown key 'unit'"),
])
def test_row_curve_refusals_name_the_field(change: dict, message: str) -> None:
    data = copy.deepcopy(TEST_GPU)
    data["matmul_rows"] = {"bf16": {"source": "test", **change}}
    with pytest.raises(llmsim.HardwareError, match=f"matmul_rows.bf16.*{message}"):
        hardware_from_dict(data)
    data["matmul_rows"] = {"fp64": {"rows": [1, 2], "fraction": [1, 1], "source": "test"}}
    with pytest.raises(llmsim.HardwareError, match=r"matmul_rows\.fp64: unknown precision; allowed: tf32"):
        hardware_from_dict(data)


def test_size_curve_scales_elementwise_memory_by_bytes_moved() -> None:
    data = copy.deepcopy(TEST_GPU)
    # 2x the bandwidth below 1 MiB moved (a cache), half of it from 64 MiB on (fresh pages)
    data["elementwise_bytes"] = {"fp16": {"bytes": [2**20, 2**26], "fraction": [2.0, 0.5], "source": "test"}}
    roofline = Roofline(hardware_from_dict(data), ExecutionOptions.make(overhead="none"))
    plain = Roofline(hardware_from_dict(TEST_GPU), ExecutionOptions.make(overhead="none"))
    for size, fraction in ((2**10, 2.0), (2**23, 1.25), (2**30, 0.5)):  # 8 MiB: half way in log2 -> 1.25
        scaled = roofline.cost(1e6, 0.0, size, "bf16", 1, kind="norm")
        assert scaled.memory_s == pytest.approx(plain.cost(1e6, 0.0, size, "bf16", 1).memory_s / fraction)
        assert scaled.compute_s == plain.cost(1e6, 0.0, size, "bf16", 1).compute_s  # compute untouched
    # an op of several kernels reads the curve at its bytes per kernel: 64 MiB in 8 launches = 8 MiB each -> 1.25
    assert roofline.cost(0.0, 0.0, 2**26, "bf16", 8, kind="norm").memory_s == pytest.approx(
        plain.cost(0.0, 0.0, 2**26, "bf16", 8).memory_s / 1.25)
    # matmuls, attention and float32 (no fp32 curve here) keep the plain bandwidth
    for kind, precision in (("matmul", "bf16"), ("attention", "bf16"), ("norm", "fp32")):
        assert roofline.cost(0.0, 0.0, 2**30, precision, 1, kind=kind).memory_s == pytest.approx(
            plain.cost(0.0, 0.0, 2**30, precision, 1, kind=kind).memory_s)
    with pytest.raises(llmsim.HardwareError, match=r"elementwise_bytes\.bf16: unknown precision; allowed: fp32, fp16"):
        hardware_from_dict({**data, "elementwise_bytes": {"bf16": data["elementwise_bytes"]["fp16"]}})


def test_depth_table_scales_matmuls_by_their_inner_dimension() -> None:
    # nn.Linear's table: 0.5 everywhere; the depth ratio: K = 4096 -> 1.0, K = 16384 -> 0.5 at M = 1 and
    # 1.0 at M = 4096 (between: linear in log2 of both)
    data = copy.deepcopy(TEST_GPU)
    data["matmul_rows"] = {"bf16": {"rows": [1, 65536], "fraction": [0.5, 0.5], "source": "test"}}
    data["matmul_depth"] = {"bf16": {"rows": [1, 4096], "depths": [4096, 16384],
                                     "fraction": [[1.0, 1.0], [0.5, 1.0]], "source": "test"}}
    hw, plain = hardware_from_dict(data), hardware_from_dict(TEST_GPU)
    assert hw.matmul_row_fraction("bf16", 1, depth=16384) == pytest.approx(0.25)  # 0.5 x 0.5
    # K = 8192 is half way from 4096 to 16384, M = 64 half way from 1 to 4096: 0.5 x (1 + 0.75) / 2
    assert hw.matmul_row_fraction("bf16", 64, depth=8192) == pytest.approx(0.5 * 0.875)
    assert hw.matmul_row_fraction("bf16", 1) == pytest.approx(0.5)  # no K stated: the table alone
    # in simulate, Llama-3.1-8B decode at batch 1 (M = 1): down_proj has K = 14336, the others K = 4096
    # (q/k/v/o, gate/up, lm_head); down_proj's ratio at M = 1: 1 - 0.5 * log2(14336/4096) / 2
    kwargs = dict(batch_size=1, prompt_len=64, gen_len=2, overhead="none")
    slow, fast = llmsim.simulate("llama-3.1-8b", hw, **kwargs), llmsim.simulate("llama-3.1-8b", plain, **kwargs)
    base = {op.name: op.time_s for op in fast.decode.ops}
    for op in slow.decode.ops:
        if op.kind == "matmul":
            ratio = 1 - 0.5 * np.log2(14336 / 4096) / 2 if op.name.endswith("down_proj") else 1.0
            assert op.time_s == pytest.approx(base[op.name] / (0.5 * ratio), rel=1e-9), op.name
    with pytest.raises(llmsim.HardwareError, match=r"matmul_depth\.bf16: missing 'depths'"):
        hardware_from_dict({**data, "matmul_depth": {"bf16": {"rows": [1, 2], "fraction": [1, 1], "source": "t"}}})
    with pytest.raises(llmsim.HardwareError, match=r"matmul_depth\.bf16: with depths, fraction must be 2 lists"):
        hardware_from_dict({**data, "matmul_depth": {"bf16": {"rows": [1, 2], "depths": [1, 2], "fraction": [1, 1],
                                                              "source": "t"}}})


def test_tpot_with_a_window_filling_part_way_lies_among_its_steps() -> None:
    """Gemma-3-1B's sliding layers (window 512) fill at cached length 511; from a 200-token prompt the 599 decode
    steps take 2.088-2.093 ms each (simulate one step at a time), but the closed-form sum priced every step at the
    scale of the middle one of the window's growing part: TPOT 2.0507 ms, under every step, and TPOT fell as
    gen_len grew (168 times over gen_len 2..4000). The scale is now read at the steps' mean clamped offset."""
    kw = dict(batch_size=1, prompt_len=200)
    tpot = llmsim.simulate("gemma-3-1b", "h100-sxm", gen_len=600, **kw).tpot_s
    steps = [llmsim.simulate("gemma-3-1b", "h100-sxm", batch_size=1, prompt_len=200 + s - 1, gen_len=2).tpot_s
             for s in (1, 150, 300, 450, 599)]
    assert min(steps) * (1 - 1e-3) <= tpot <= max(steps) * (1 + 1e-3)
    sweep = llmsim.sweep("gemma-3-1b", "h100-sxm", batch_size=[1], prompt_len=[1], gen_len=list(range(2, 4000, 7)))
    assert (np.diff(np.asarray(sweep.columns["tpot_s"], dtype=float).ravel()) >= -1e-15).all()


def test_hardware_summary_shows_the_bf16_peak_alone_to_four_digits() -> None:
    # a calibrated CPU file without bf16 showed its fp32 rate under bf16_tflops, and 0.94 GFLOP/s of bf16 read 0.0
    spec = load_hardware("cpu-generic")
    peaks = spec.matrix_flops_per_s
    small = spec.model_copy(update={"matrix_flops_per_s": {
        k: v.model_copy(update={"value": 9.4e8}) if k == "bf16" else v for k, v in peaks.items()}})
    assert small.summary_row()["bf16_tflops"] == 0.00094  # 9.4e8 / 1e12
    fp32_only = spec.model_copy(update={"matrix_flops_per_s": {k: v for k, v in peaks.items() if k != "bf16"}})
    assert fp32_only.summary_row()["bf16_tflops"] is None
    assert load_hardware("h100-sxm").summary_row()["bf16_tflops"] == 989.4  # the datasheet's dense bf16
