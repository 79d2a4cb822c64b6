"""Multi-GPU: collectives against their closed forms, sharded weights, invalid splits, the plan."""

from __future__ import annotations

import pytest

import llmsim
from llmsim.cost.op import formula
from llmsim.cost.symbolic import Expr
from llmsim.hardware.spec import hardware_from_dict
from llmsim.timing.roofline import ExecutionOptions, Roofline

from .conftest import TEST_GPU


def test_all_reduce_time_equals_ring_closed_form() -> None:
    # 8 GPUs in one node, 400e9 byte/s per direction, 5 us per hop; a [4096 tokens, 8192] bf16 message
    # = 4096*8192*2 = 67108864 bytes: 2*(8-1)/8 * 67108864 / 400e9 + 2*(8-1)*5e-6 = 363.6 us
    roofline = Roofline(hardware_from_dict(TEST_GPU), ExecutionOptions.make(overhead="none"))
    message = 4096 * 8192 * 2
    assert roofline.collective_s("all_reduce", message, 8) == pytest.approx(
        2 * 7 / 8 * 67108864 / 400e9 + 2 * 7 * 5e-6, rel=1e-12)
    # 16 GPUs span two 8-GPU nodes: the inter-node link, 50e9 byte/s and 10 us
    assert roofline.collective_s("all_reduce", message, 16) == pytest.approx(
        2 * 15 / 16 * 67108864 / 50e9 + 2 * 15 * 10e-6, rel=1e-12)
    assert roofline.collective_s("all_gather", message, 4) == pytest.approx(3 / 4 * message / 400e9 + 3 * 5e-6)
    assert roofline.collective_s("p2p", message, 2) == pytest.approx(message / 400e9 + 5e-6)
    op = formula("collective")("x", 1, kind="all_reduce", message_bytes=Expr.const(message), group=8)
    assert op.kind == "communication" and op.comm_bytes == message


def test_tp2_halves_sharded_weights_exactly() -> None:
    one = {op.name: op for op in llmsim.build_ops("llama-3.1-8b", "decode", batch_size=1, kv_len=100)}
    two = {op.name: op for op in llmsim.build_ops("llama-3.1-8b", "decode", batch_size=1, kv_len=100,
                                                 tensor_parallel=2)}
    for name in ("layers.attn.q_proj", "layers.attn.k_proj", "layers.attn.v_proj", "layers.attn.o_proj",
                 "layers.mlp.gate_proj", "layers.mlp.up_proj", "layers.mlp.down_proj", "lm_head"):
        assert two[name].weight_bytes * 2 == one[name].weight_bytes
        assert two[name].param_count * 2 == one[name].param_count
    assert two["layers.input_add_norm"].param_count == one["layers.input_add_norm"].param_count  # replicated
    assert "layers.attn.all_reduce" in two and "layers.mlp.all_reduce" in two and "lm_head.all_gather" in two
    # KV heads: 8 over 2 GPUs -> 4 each: per-GPU cache halves; over 16 GPUs each keeps 1 replicated head
    spec = llmsim.load_model("llama-3.1-8b")
    assert spec.kv_cache_bytes(4, 1000, tensor_parallel=2) * 2 == spec.kv_cache_bytes(4, 1000)
    assert spec.kv_cache_bytes(4, 1000, tensor_parallel=16) * 8 == spec.kv_cache_bytes(4, 1000)


def test_tp_pads_the_vocabulary_like_vllm() -> None:
    # gpt2's vocab 50257 is odd: vLLM pads it to a multiple of 64 (DEFAULT_VOCAB_PADDING_SIZE) and splits it:
    # ceil(50257/64)*64 = 786*64 = 50304 rows; /2 = 25152 = ceil(50257/128)*64 = 393*64 per GPU at tp=2
    two = {op.name: op for op in llmsim.build_ops("gpt2", "decode", batch_size=1, kv_len=10, tensor_parallel=2)}
    assert two["lm_head"].matmul_cols == 25152
    assert two["embed_tokens"].param_count == 25152 * 768  # = 19316736 rows x n_embd on each GPU
    assert two["lm_head.all_gather"].comm_bytes == 1 * 50304 * 4  # 1 decode token x padded logits x fp32
    # tp=4: 50304/4 = 12576 (vLLM divides the 64-padded vocabulary; not ceil(50257/256)*64 = 12608)
    four = {op.name: op for op in llmsim.build_ops("gpt2", "decode", batch_size=1, kv_len=10, tensor_parallel=4)}
    assert four["lm_head"].matmul_cols == 12576
    # tp=1: no padding, the exact 50257 x 768 table of transformers
    one = {op.name: op for op in llmsim.build_ops("gpt2", "decode", batch_size=1, kv_len=10)}
    assert one["lm_head"].matmul_cols == 50257 and one["embed_tokens"].param_count == 50257 * 768
    result = llmsim.simulate("gpt2", "h100-sxm", batch_size=1, prompt_len=16, gen_len=4, tensor_parallel=2)
    assert result.tpot_s > 0 and result.memory.fits


def test_expert_parallel_spreads_whole_experts() -> None:
    ops = {op.name: op for op in llmsim.build_ops("mixtral-8x7b", "prefill", batch_size=4, seq_len=512,
                                                 tensor_parallel=4, expert_parallel=4)}
    # 8 experts over 4 GPUs: 2 whole experts (14336 x 4096 down_proj) each
    assert ops["layers.mlp.experts.down_proj"].param_count == 2 * 14336 * 4096
    assert ops["layers.mlp.experts.dispatch"].collective == "all_to_all"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"tensor_parallel": 3}, "tensor_parallel=3"),
    ({"tensor_parallel": 2, "expert_parallel": 4}, "expert_parallel=4 must be 1 or equal"),
    ({"pipeline_parallel": 200}, "exceeds the model's 32 layers"),
    ({"pipeline_parallel": 2, "num_microbatches": 3}, "num_microbatches=3 must divide batch_size=4"),
])
def test_invalid_splits_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(llmsim.OptionError, match=message):
        llmsim.simulate("llama-3.1-8b", TEST_GPU, batch_size=4, prompt_len=128, gen_len=4, **kwargs)


def test_pipeline_memory_and_bubble() -> None:
    base = llmsim.simulate("llama-3.1-70b", "h100-sxm", batch_size=8, prompt_len=1024, gen_len=8,
                           tensor_parallel=4)
    pp = llmsim.simulate("llama-3.1-70b", "h100-sxm", batch_size=8, prompt_len=1024, gen_len=8,
                         tensor_parallel=4, pipeline_parallel=2, num_microbatches=1)
    assert pp.memory.weights_bytes == pytest.approx(base.memory.weights_bytes / 2)
    assert pp.gpus == 8
    # one micro-batch through 2 stages of half the model each: the same compute time, plus one hand-over
    assert pp.ttft_s > base.ttft_s
    assert pp.ttft_s == pytest.approx(base.ttft_s, rel=0.01)


def test_plan_best_meets_targets_when_resimulated() -> None:
    p = llmsim.plan("llama-3.1-70b", "h100-sxm", prompt_len=1024, gen_len=128, tpot_slo_s=0.03, ttft_slo_s=5.0,
                    target_tokens_per_s=5000, max_gpus=16, batch_sizes=[1, 8, 32, 128])
    best = p.best
    assert best is not None
    r = llmsim.simulate("llama-3.1-70b", "h100-sxm", batch_size=best.batch_size, prompt_len=1024, gen_len=128,
                        tensor_parallel=best.tensor_parallel, pipeline_parallel=best.pipeline_parallel,
                        num_microbatches=best.pipeline_parallel if best.batch_size % best.pipeline_parallel == 0
                        else 1)
    assert r.memory.fits and r.tpot_s <= 0.03 and r.ttft_s <= 5.0
    assert best.gpus_needed * best.tokens_per_s_per_gpu >= 5000
    assert all(c.tokens_per_s_per_gpu <= best.tokens_per_s_per_gpu for c in p.candidates if c.meets_targets)
    # 70B in bf16 (141 GB) never fits one 80 GB GPU
    assert not any(c.fits for c in p.candidates if c.gpus_per_replica == 1)
