"""Regime analysis: crossovers against closed forms, sweeps against one-at-a-time simulate."""

from __future__ import annotations

import numpy as np
import pytest

import llmsim
from llmsim.analysis.regime import find_crossover, first_limit, sweep
from llmsim.hardware.spec import hardware_from_dict

from .conftest import TEST_GPU

PEAK = {"efficiency": "peak", "overhead": "none"}


def test_gemm_crossover_batch_equals_closed_form() -> None:
    # Llama-3.1-8B decode, down_proj: x[B, K=14336] @ W[K, N=4096], bf16 weights and activations (w = a = 2)
    # on the test GPU at peak: P = 1000e12 FLOP/s, BW = 2e12 byte/s.
    # 2*B*N*K / P = (N*K*w + B*(N+K)*a) / BW  =>  B = N*K*w/BW / (2*N*K/P - (N+K)*a/BW)
    N, K, w, a, P, BW = 4096, 14336, 2, 2, 1000e12, 2e12
    expected = N * K * w / BW / (2 * N * K / P - (N + K) * a / BW)  # = 505.06... sequences
    c = find_crossover("llama-3.1-8b", TEST_GPU, phase="decode", vary="batch_size", kv_len=1024, **PEAK)
    assert c.per_op["layers.mlp.down_proj"] == pytest.approx(expected, rel=1e-9)
    assert c.bracket == (1.0, 4096.0)


def test_prefill_flips_to_compute_below_ridge_point() -> None:
    # the roofline's own flip: a prefill replaying CUDA graphs (prefill_dispatch_s=0)
    hw = llmsim.load_hardware("h100-sxm")
    c = find_crossover("llama-3.1-8b", hw, phase="prefill", vary="seq_len", batch_size=1, prefill_dispatch_s=0)
    assert (c.from_bound, c.to_bound) == ("memory", "compute")
    ridge = hw.ridge_point_flops_per_byte("bf16")  # 989.4e12 / 3.35e12 = 295 FLOP/byte
    assert c.value is not None and 1 < c.value < ridge
    # just below it prefill is memory-bound, just above compute-bound
    below = llmsim.simulate("llama-3.1-8b", hw, batch_size=1, prompt_len=int(c.value) - 2, gen_len=1,
                            prefill_dispatch_s=0)
    above = llmsim.simulate("llama-3.1-8b", hw, batch_size=1, prompt_len=int(c.value) + 3, gen_len=1,
                            prefill_dispatch_s=0)
    assert below.prefill.bound == "memory" and above.prefill.bound == "compute"


def test_an_uncaptured_prefill_of_a_short_prompt_is_overhead_bound() -> None:
    # SGLang runs prefill without a CUDA graph (62.2 us of host dispatch per kernel, engines.catalog): a short
    # prompt's small kernels finish before the host has dispatched the next, a long prompt's outlast it
    c = find_crossover("llama-3.1-8b", "h100-sxm", phase="prefill", vary="seq_len", batch_size=1, engine="sglang")
    assert (c.from_bound, c.to_bound) == ("overhead", "compute")
    short = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=16, gen_len=1, engine="sglang")
    assert short.prefill.bound == "overhead"
    # vLLM replays its piecewise graphs up to 512 tokens: the same prompt is not host-bound there
    assert llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=16, gen_len=1).prefill.bound != \
        "overhead"


def test_decode_against_context_does_not_flip() -> None:
    c = find_crossover("llama-3.1-8b", "h100-sxm", phase="decode", vary="kv_len", batch_size=8)
    assert c.value is None and c.to_bound is None
    assert "stays memory-bound" in c.reason


def test_crossover_outside_range_is_none() -> None:
    c = find_crossover("llama-3.1-8b", TEST_GPU, phase="prefill", vary="seq_len", batch_size=1, lo=1000, hi=4000)
    assert c.value is None and c.bracket == (1000.0, 4000.0)


def test_sweep_equals_one_at_a_time_simulate() -> None:
    s = sweep("qwen3-30b-a3b", TEST_GPU, batch_size=[1, 3, 64], prompt_len=[17, 900], gen_len=[1, 40])
    assert len(s) == 12
    for row in s.to_rows():
        r = llmsim.simulate("qwen3-30b-a3b", TEST_GPU, batch_size=row["batch_size"], prompt_len=row["prompt_len"],
                            gen_len=row["gen_len"])
        assert row["ttft_s"] == pytest.approx(r.ttft_s, rel=1e-12)
        # one generated token: no TPOT (the row's None; simulate's tpot_s holds 0.0 there)
        assert row["tpot_s"] == (None if row["gen_len"] == 1 else pytest.approx(r.tpot_s, rel=1e-12))
        assert row["total_bytes"] == pytest.approx(r.memory.total_bytes, rel=1e-12)
        assert row["prefill_bound"] == r.prefill.bound
        assert row["decode_bound"] == (r.decode.bound if row["gen_len"] > 1 else "none")


def test_first_limit_capacity_then_slo() -> None:
    lim = first_limit("llama-3.1-70b", "h200", vary="kv_len", batch_size=32, tpot_slo_s=0.05)
    assert lim.limit == "capacity"
    value = int(lim.value)
    assert llmsim.simulate("llama-3.1-70b", "h200", batch_size=32, prompt_len=value - 2, gen_len=1).memory.fits
    assert not llmsim.simulate("llama-3.1-70b", "h200", batch_size=32, prompt_len=value + 1, gen_len=1).memory.fits
    hw = hardware_from_dict(TEST_GPU).with_overrides(memory={"capacity_bytes": 1e12})
    lim = first_limit("llama-3.1-8b", hw, vary="kv_len", batch_size=32, tpot_slo_s=0.02)
    assert lim.limit == "slo" and lim.value is not None
    assert lim.events["capacity"] is None or lim.events["capacity"] > lim.value


def test_sweep_is_vectorised_open_grid() -> None:
    # the analytic roofline (monotonic in the batch by construction; measured tables need not be: vLLM's
    # GEMM at m = 64 runs a hair faster than at m = 32 on H100)
    s = sweep("llama-3.1-8b", "h100-sxm", batch_size=list(range(1, 201)), prompt_len=list(range(64, 264)),
              gen_len=[2, 128], engine="roofline", efficiency="achievable")
    assert len(s) == 200 * 200 * 2
    assert np.all(np.diff(s.columns["ttft_s"].reshape(200, 200, 2)[:, :, 0], axis=0) >= 0)


def test_texts_say_nothing_ran_rather_than_print_empty_tables() -> None:
    # generate 1: no decode step, so no decode op table of zero times; a plan with no configuration: no header over
    # no rows (both printed before session 33)
    r = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=64, gen_len=1)
    table = r.ops_table()
    assert "decode (0 steps" in table and "no step: the prefill samples the only token" in table
    assert table.split("decode (0 steps")[1].count("\n") == 1  # no op rows after it
    p = llmsim.plan("llama-3.1-70b", "h100-sxm", prompt_len=512, gen_len=16, tpot_slo_s=0.03, max_gpus=1,
                    batch_sizes=[1])
    assert p.best is None and "TTFT" not in str(p)


def test_first_limit_of_a_model_that_fits_nowhere_says_so() -> None:
    """Llama-3.1-405B on one 24 GiB L4: "capacity limit met first at kv_len = 1" read as if it fitted below that."""
    limit = llmsim.first_limit("llama-3.1-405b", "l4")
    assert limit.limit == "capacity" and limit.value == 1
    # 405.9e9 parameters x 2 bytes = 756.0 GiB of weights, of the L4's 24.0 GiB
    assert limit.reason.startswith("decode: capacity limit met first: it does not fit even at kv_len = 1 (757.0 GiB "
                                   "needed per GPU, 756.0 of them weights, of 24.0; split it with tensor_parallel")


def test_a_bound_that_turns_and_turns_back_is_found() -> None:
    """Llama-3.2-1B's decode at 128 cached tokens on an H100 is memory-bound at batch 1 and at 4096, but
    compute-bound from about 353 to 376 (simulate says so at 354, 360 and 376, memory at 350 and 380): the
    crossover said it "stays memory-bound". It now reports the turn and the turn back."""
    c = find_crossover("llama-3.2-1b", "h100-sxm", phase="decode", vary="batch_size", kv_len=128)
    assert [(a, b) for _, a, b in c.transitions] == [("memory", "compute"), ("compute", "memory")]
    up, down = c.transitions[0][0], c.transitions[1][0]
    assert 350 < up < 354 and 376 < down < 380 and c.value == up and c.to_bound == "compute"
    assert "then to memory-bound at 376.4" in c.reason
    for batch, bound in ((350, "memory"), (354, "compute"), (376, "compute"), (380, "memory")):
        r = llmsim.simulate("llama-3.2-1b", "h100-sxm", batch_size=batch, prompt_len=128, gen_len=2)
        assert r.decode.bound == bound, batch
    # a single turn is reported as before, its root the phase's
    one = find_crossover("llama-3.1-8b", "h100-sxm", phase="decode", vary="batch_size", kv_len=128)
    assert len(one.transitions) == 1 and one.transitions[0][0] == one.value
