"""Properties of the cost model: signs, monotonicity, equivalences, formulas, options, errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import llmsim
from llmsim.cost.op import formula, register
from llmsim.errors import ConfigError, OptionError

from .tiny_configs import TINY_CONFIGS

QUANTITIES = ("matmul_flops", "vector_flops", "bytes_read", "bytes_written")


def totals(ops: list[llmsim.Op]) -> dict[str, float]:
    return {q: float(sum(op.count * np.sum(getattr(op, q)) for op in ops)) for q in QUANTITIES}


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(sorted(TINY_CONFIGS)), batch=st.integers(1, 64), length=st.integers(1, 200),
       phase=st.sampled_from(["prefill", "decode"]), attention=st.sampled_from(["math", "flash"]),
       fusion=st.sampled_from(["none", "elementwise", "full"]), mla=st.sampled_from(["expand", "absorb"]))
def test_non_negative_finite_and_monotonic(name: str, batch: int, length: int, phase: str, attention: str,
                                           fusion: str, mla: str) -> None:
    model = llmsim.load_model(TINY_CONFIGS[name])
    key = "seq_len" if phase == "prefill" else "kv_len"
    opts = {"attention": attention, "fusion": fusion, "mla": mla}
    base = totals(llmsim.build_ops(model, phase, batch_size=batch, **{key: length}, **opts))
    more_batch = totals(llmsim.build_ops(model, phase, batch_size=batch + 1, **{key: length}, **opts))
    more_length = totals(llmsim.build_ops(model, phase, batch_size=batch, **{key: length + 1}, **opts))
    for q in QUANTITIES:
        assert np.isfinite(base[q]) and base[q] >= 0
        assert more_batch[q] >= base[q] and more_length[q] >= base[q]


def test_gqa_with_all_kv_heads_equals_mha() -> None:
    gqa = dict(TINY_CONFIGS["llama-gqa"], num_key_value_heads=4)  # as many KV heads as heads
    mha = {k: v for k, v in TINY_CONFIGS["llama-gqa"].items() if k != "num_key_value_heads"}  # default: MHA
    for phase, kw in (("prefill", {"seq_len": 37}), ("decode", {"kv_len": 100})):
        a = llmsim.build_ops(llmsim.load_model(gqa), phase, batch_size=3, **kw)
        b = llmsim.build_ops(llmsim.load_model(mha), phase, batch_size=3, **kw)
        assert totals(a) == totals(b)
    assert llmsim.num_parameters(gqa) == llmsim.num_parameters(mha)


def test_vectorised_ops_equal_one_at_a_time() -> None:
    model = llmsim.load_model("qwen3-30b-a3b")
    batches = np.array([1, 2, 8, 64])
    ops = llmsim.build_ops(model, "decode", batch_size=batches, kv_len=1000)
    for i, b in enumerate(batches):
        one = llmsim.build_ops(model, "decode", batch_size=int(b), kv_len=1000)
        for op_vec, op_one in zip(ops, one, strict=True):
            for q in QUANTITIES:
                assert np.broadcast_to(getattr(op_vec, q), batches.shape)[i] == pytest.approx(getattr(op_one, q))


@pytest.mark.parametrize(("seq_len", "window"), [(1, None), (17, None), (64, None), (5, 8), (8, 8), (50, 8)])
def test_flash_pairs_equal_the_unmasked_pairs_of_the_real_mask(seq_len: int, window: int | None) -> None:
    # the (query, key) pairs a fused kernel computes are those the causal (and window) mask keeps
    q = torch.arange(seq_len)[:, None]
    k = torch.arange(seq_len)[None, :]
    keep = (k <= q) & ((q - k < window) if window else True)
    config = dict(TINY_CONFIGS["mistral-sliding"], sliding_window=window, max_position_embeddings=512)
    model = llmsim.load_model(config)
    ops = llmsim.build_ops(model, "prefill", batch_size=1, seq_len=seq_len, attention="flash")
    flash = next(op for op in ops if op.name.endswith("attn.flash"))
    # 2 * B * H * pairs * (d + dv) with H = 4, d = dv = 16
    assert flash.matmul_flops == 2 * 1 * 4 * int(keep.sum()) * (16 + 16)


def test_formula_shows_symbols_and_numbers() -> None:
    ops = llmsim.build_ops("llama-3.1-8b", "prefill", batch_size=8, seq_len=4096)
    q_proj = next(op for op in ops if op.name == "layers.attn.q_proj")
    text = q_proj.formula("matmul_flops")
    # 2 * (8*4096) tokens * 4096 * (32*128) = 1099511627776
    assert text.startswith("matmul_flops = 2*B*S*h*H*d = 2*8*4096*4096*32*128 = 1.09951e+12")
    assert q_proj.matmul_flops == 2 * 8 * 4096 * 4096 * 32 * 128


def test_op_names_are_stable() -> None:
    names = [op.name for op in llmsim.build_ops("deepseek-v3", "decode", batch_size=1, kv_len=10)]
    for expected in ("embed_tokens", "layers.dense.attn.q_a_proj", "layers.moe.mlp.router",
                     "layers.moe.mlp.experts.gate_proj", "layers.moe.mlp.shared_experts.down_proj",
                     "layers.moe.attn.q_absorb", "lm_head"):
        assert expected in names
    assert len(names) == len(set(names))


def test_moe_decode_reads_only_touched_experts() -> None:
    model = llmsim.load_model("mixtral-8x7b")
    one = next(op for op in llmsim.build_ops(model, "decode", batch_size=1, kv_len=10)
               if op.name == "layers.mlp.experts.down_proj")
    many = next(op for op in llmsim.build_ops(model, "decode", batch_size=512, kv_len=10)
                if op.name == "layers.mlp.experts.down_proj")
    per_expert = 14336 * 4096 * 2  # one expert's down_proj in bf16
    assert one.weight_bytes == pytest.approx(2 * per_expert)  # 1 token, top-2: 8 * (1 - (6/8)^1) = 2 experts
    assert many.weight_bytes == pytest.approx(8 * per_expert)  # 512 tokens touch all 8
    assert many.matmul_flops == 2 * 512 * 2 * 14336 * 4096  # tokens x top-k


def test_int4_weights_include_group_scales() -> None:
    model = llmsim.load_model("llama-3.1-8b")
    ops = llmsim.build_ops(model, "decode", batch_size=1, kv_len=1, weight_dtype="int4")
    down = next(op for op in ops if op.name == "layers.mlp.down_proj")
    assert down.weight_bytes == 14336 * 4096 * (0.5 + 2 / 128)  # 4 bits + one fp16 scale per 128 weights


def test_totals_equal_sum_of_parts() -> None:
    r = llmsim.simulate("gpt-oss-20b", "h100-sxm", batch_size=4, prompt_len=300, gen_len=20)
    for phase in (r.prefill, r.decode):
        assert phase.time_s == pytest.approx(sum(op.time_s for op in phase.ops))
        assert phase.bytes == pytest.approx(sum(op.bytes for op in phase.ops))
        assert phase.compute_s + phase.memory_s + phase.overhead_s == pytest.approx(phase.time_s)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"attention": "fast"}, "attention='fast' is not allowed; choose one of flash, math"),
    ({"weight_dtype": "int3"}, "weight_dtype='int3' is not allowed"),
    ({"batch_size": 0}, "batch_size=0 must be an integer in 1.."),
    ({"batch_size": 2.5}, "batch_size=2.5 must be an integer in 1.."),
    ({"seq_len": 10**7}, "exceeds the model's context"),
    ({"atention": "math"}, "option='atention' is not allowed"),
])
def test_bad_options_name_the_field(kwargs: dict, message: str) -> None:
    args = {"batch_size": 1, "seq_len": 16, **kwargs}
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        llmsim.build_ops("llama-3.1-8b", "prefill", **args)


def test_bad_configs_name_the_field() -> None:
    with pytest.raises(ConfigError, match="missing field 'n_routed_experts'"):
        llmsim.load_model({k: v for k, v in TINY_CONFIGS["deepseek_v3"].items() if k != "n_routed_experts"})
    with pytest.raises(ConfigError, match="model_type='t5' is not supported"):
        llmsim.load_model({"model_type": "t5"})
    with pytest.raises(ConfigError, match="num_attention_heads=4 is not a multiple of num_key_value_heads=3"):
        llmsim.load_model(dict(TINY_CONFIGS["llama-gqa"], num_key_value_heads=3))


def test_registry_refuses_duplicates() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register("linear")(formula("linear"))


def test_registry_is_full_whichever_module_comes_first() -> None:
    # the formula modules register when llmsim.cost is imported: a fresh interpreter that asks for the
    # registry (or a block of the builder) first finds every formula
    expected = {"linear", "expert_linear", "attention_scores", "softmax", "sdpa_softmax", "repeat_kv",
                "sdpa_broadcast_kv", "attention_context", "flash_attention", "kv_append", "norm", "eager_rmsnorm",
                "elementwise", "cast", "embedding", "collective", "causal_conv1d", "gated_delta_scan",
                "gated_delta_update", "ssd_scan", "ssd_update", "engine_step"}
    root = Path(__file__).resolve().parent.parent
    for first in ("llmsim.cost.op", "llmsim.cost.blocks.attention", "llmsim.cost.formulas.matmul"):
        code = f"import {first}; from llmsim.cost.op import registered_formulas; print(*registered_formulas())"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
        assert set(out.stdout.split()) == expected, first


def test_concat_cache_copies_the_whole_cache_each_step() -> None:
    # Llama-3.1-8B decode at kv_len 1000, batch 2: DynamicCache reads the 1000 cached tokens and writes
    # 1001; per layer 2 * 1000 * 8 KV heads * 256 values * 2 bytes more read than the in-place append
    paged = {op.name: op for op in llmsim.build_ops("llama-3.1-8b", "decode", batch_size=2, kv_len=1000)}
    concat = {op.name: op for op in llmsim.build_ops("llama-3.1-8b", "decode", batch_size=2, kv_len=1000,
                                                    kv_cache="concat")}
    extra = 2 * 1000 * 8 * 256 * 2
    assert concat["layers.attn.kv_append"].bytes_read == paged["layers.attn.kv_append"].bytes_read + extra
    assert concat["layers.attn.kv_append"].bytes_written == paged["layers.attn.kv_append"].bytes_written + extra


@pytest.mark.parametrize("engine", ["vllm", "transformers", "trtllm"])
def test_overlap_sum_is_never_faster_than_max(engine: str) -> None:
    # overlap="sum" (compute and memory traffic not overlapped) can only add time. A measured-table op used to be
    # scaled to its table time over compute + memory under "sum", which left it a smaller compute part for the
    # sustained clock to stretch than under "max": TTFT 444.876 ms with "max", 437.328 ms with "sum" (vllm, H100,
    # batch 8, 2048 tokens). Now the table sets the op's efficiency at its bounding roof under either policy.
    kwargs = dict(batch_size=8, prompt_len=2048, gen_len=16, engine=engine)
    by = {o: llmsim.simulate("llama-3.1-8b", "h100-sxm", overlap=o, **kwargs) for o in ("max", "sum")}
    assert by["sum"].ttft_s >= by["max"].ttft_s
    assert by["sum"].tpot_s >= by["max"].tpot_s
    times = {o: {op.name: op.time_s for op in r.prefill.ops} for o, r in by.items()}
    assert all(times["sum"][name] >= t * (1 - 1e-12) for name, t in times["max"].items())
    swept = llmsim.sweep("llama-3.1-8b", "h100-sxm", batch_size=[8], prompt_len=[2048], gen_len=[16], overlap="sum",
                         engine=engine)
    assert swept.columns["ttft_s"][0] == pytest.approx(by["sum"].ttft_s, rel=1e-9)
