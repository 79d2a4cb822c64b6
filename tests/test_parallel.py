"""Multi-GPU: collectives against their closed forms, sharded weights, invalid splits, the plan."""

from __future__ import annotations

import pytest

import llmsim
from llmsim.cost.op import formula
from llmsim.cost.symbolic import Expr
from llmsim.hardware.spec import hardware_from_dict
from llmsim.timing.roofline import ExecutionOptions, Roofline

from .conftest import TEST_GPU
from .tiny_configs import TINY_CONFIGS


def test_all_reduce_time_equals_ring_closed_form() -> None:
    # 8 GPUs in one node, 400e9 byte/s per direction, 5 us per hop, NCCL's LL base latency 6.6 us per ring
    # collective (tuning.cc); a [4096 tokens, 8192] bf16 message = 4096*8192*2 = 67108864 bytes:
    # 6.6e-6 + 2*(8-1)/8 * 67108864 / 400e9 + 2*(8-1)*5e-6 = 370.2 us
    roofline = Roofline(hardware_from_dict(TEST_GPU), ExecutionOptions.make(overhead="none"))
    message = 4096 * 8192 * 2
    assert roofline.collective_s("all_reduce", message, 8) == pytest.approx(
        6.6e-6 + 2 * 7 / 8 * 67108864 / 400e9 + 2 * 7 * 5e-6, rel=1e-12)
    # 16 GPUs span two 8-GPU nodes (inter-node link 50e9 byte/s, 10 us): NCCL's ring, 2 of its 30 steps over the
    # network, 6.6e-6 + 2*15/16 * 67108864 / 50e9 + 28 * 5e-6 + 2 * 10e-6 = 2683.2 us, beats its tree,
    # 6.8e-6 + 2 * 67108864 / 50e9 + 2 * (7 * 5e-6 + 1 * 10e-6) = 2781.2 us
    assert roofline.collective_s("all_reduce", message, 16) == pytest.approx(
        6.6e-6 + 2 * 15 / 16 * 67108864 / 50e9 + 28 * 5e-6 + 2 * 10e-6, rel=1e-12)
    assert roofline.collective_s("all_gather", message, 4) == pytest.approx(
        6.6e-6 + 3 / 4 * message / 400e9 + 3 * 5e-6)
    # all-to-all and p2p: NCCL's grouped sends and receives, outside its tuning model: no base latency
    assert roofline.collective_s("all_to_all", message, 4) == pytest.approx(3 / 4 * message / 400e9 + 3 * 5e-6)
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


def test_quantized_activations_all_reduce_the_16_bit_residual_stream() -> None:
    """fp8 (or nvfp4) activations are the GEMMs' quantized inputs; the GEMMs write bf16, and the engines all-reduce
    that bf16 output before the next norm quantizes it again: the message is the 16-bit hidden state."""
    kw = {"batch_size": 1, "seq_len": 1024, "tensor_parallel": 8}
    fp8 = {op.name: op for op in llmsim.build_ops("llama-3.1-70b", "prefill", weight_dtype="fp8",
                                                 activation_dtype="fp8", **kw)}
    bf16 = {op.name: op for op in llmsim.build_ops("llama-3.1-70b", "prefill", **kw)}
    # 1024 tokens x hidden 8192 x 2 bytes = 16777216 bytes, in both (not 1024 x 8192 x 1 = 8388608 at fp8)
    for name in ("layers.attn.all_reduce", "layers.mlp.all_reduce", "embed_tokens.all_reduce"):
        assert fp8[name].comm_bytes == bf16[name].comm_bytes == 1024 * 8192 * 2
    # the GEMMs' inputs stay fp8: o_proj reads [1024, 8192/8] activations at 1 byte, half the bf16 run's
    assert fp8["layers.attn.o_proj"].bytes_read < bf16["layers.attn.o_proj"].bytes_read
    # float32 activations keep their 4 bytes: 1024 x 8192 x 4
    fp32 = {op.name: op for op in llmsim.build_ops("llama-3.1-70b", "prefill", activation_dtype="float32",
                                                  weight_dtype="float32", **kw)}
    assert fp32["layers.mlp.all_reduce"].comm_bytes == 1024 * 8192 * 4


def test_tp_pads_the_vocabulary_like_vllm() -> None:
    # gpt2's vocab 50257 is odd: vLLM pads it to a multiple of 64 (DEFAULT_VOCAB_PADDING_SIZE) and splits it:
    # ceil(50257/64)*64 = 786*64 = 50304 rows; /2 = 25152 = ceil(50257/128)*64 = 393*64 per GPU at tp=2
    two = {op.name: op for op in llmsim.build_ops("gpt2", "decode", batch_size=1, kv_len=10, tensor_parallel=2)}
    assert two["lm_head"].matmul_cols == 25152
    assert two["embed_tokens"].param_count == 25152 * 768  # = 19316736 rows x n_embd on each GPU
    # 1 decode token x padded logits x bf16 (gpt2's config states no dtype: assumed bfloat16, models.dtype_default)
    assert two["lm_head.all_gather"].comm_bytes == 1 * 50304 * 2
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
    # attention is tensor parallel, so every GPU already holds all tokens: no all-to-all (vLLM runs none at
    # data-parallel size 1: FusedMoEParallelConfig.use_all2all_kernels = dp_size > 1 and use_ep)
    assert not any(op.collective == "all_to_all" for op in ops.values())


def _mixtral_expert_ops(t: int, e: int) -> dict[str, llmsim.Op]:
    return {op.name: op for op in llmsim.build_ops("mixtral-8x7b", "prefill", batch_size=4, seq_len=512,
                                                   tensor_parallel=t, expert_parallel=e)}


def test_expert_parallel_below_tensor_parallel_slices_the_local_experts() -> None:
    # Mixtral 8x7B (E=8, k=2, h=4096, I=14336, bf16) at tp=4, ep=2: the experts' tensor-parallel degree is
    # 4/2 = 2, so each GPU holds E/ep = 4 whole experts, each sliced I/2 = 7168 columns
    ops = _mixtral_expert_ops(4, 2)
    for name in ("gate_proj", "up_proj", "down_proj"):
        op = ops[f"layers.mlp.experts.{name}"]
        assert op.param_count == 4 * 7168 * 4096  # = 117440512
        assert op.param_bytes == 4 * 7168 * 4096 * 2  # = 234881024 bytes of bf16 on each GPU
        # prefill of 4 x 512 tokens touches all 4 local experts: the weight traffic is the whole local slice
        assert op.weight_bytes == 234881024
    assert ops["layers.mlp.experts.gate_proj"].matmul_cols == 7168  # I/(tp/ep) = 14336/2
    assert ops["layers.mlp.experts.down_proj"].matmul_depth == 7168
    # no token crosses GPUs: one all-reduce of the layer's [T, h] = 2048 * 4096 * 2 = 16777216 bytes over the 4
    # GPUs sums both expert groups and both slices of each expert
    assert not any(op.collective == "all_to_all" for op in ops.values())
    assert "layers.mlp.experts.all_reduce" not in ops
    reduce = ops["layers.mlp.all_reduce"]
    assert (reduce.collective, reduce.group_size, reduce.comm_bytes) == ("all_reduce", 4, 16777216)
    # the measured fused-MoE table is read at moe tp = 4/2 = 2, ep = 2
    assert ops["layers.mlp.experts.down_proj"].kernel_key == ("moe", "bf16", 2, 8, 4096, 14336, 2, 2, 1 / 3,
                                                                 "power_law_1.2")  # Mixtral: the generic MoE load
    result = llmsim.simulate("mixtral-8x7b", "h100-sxm", batch_size=4, prompt_len=512, gen_len=4,
                             tensor_parallel=4, expert_parallel=2)
    assert result.expert_parallel == 2 and result.gpus == 4 and result.tpot_s > 0


def test_expert_parallel_one_and_equal_to_tp_unchanged() -> None:
    # ep == tp = 4: 8/4 = 2 whole experts of 14336 columns each, no slicing, key tp=1
    whole = _mixtral_expert_ops(4, 4)
    assert whole["layers.mlp.experts.down_proj"].param_count == 2 * 14336 * 4096  # = 117440512
    assert whole["layers.mlp.experts.gate_proj"].matmul_cols == 14336
    assert not any(op.collective == "all_to_all" for op in whole.values())
    assert "layers.mlp.experts.all_reduce" not in whole
    # the same layer all-reduce as sliced experts: [T, h] = 2048 * 4096 * 2 = 16777216 bytes over 4 GPUs
    assert (whole["layers.mlp.all_reduce"].group_size, whole["layers.mlp.all_reduce"].comm_bytes) == (4, 16777216)
    assert whole["layers.mlp.experts.down_proj"].kernel_key == ("moe", "bf16", 2, 8, 4096, 14336, 1, 4, 1 / 3,
                                                                 "power_law_1.2")
    # ep == 1 at tp = 4: all 8 experts sliced 14336/4 = 3584 columns, no all-to-all, one layer all-reduce of
    # [T, h] = 2048 * 4096 * 2 = 16777216 bytes over the 4 GPUs, key tp=4 ep=1
    sliced = _mixtral_expert_ops(4, 1)
    assert sliced["layers.mlp.experts.down_proj"].param_count == 8 * 3584 * 4096  # = 117440512
    assert sliced["layers.mlp.experts.gate_proj"].matmul_cols == 3584
    assert not any(op.collective == "all_to_all" for op in sliced.values())
    assert "layers.mlp.experts.all_reduce" not in sliced
    assert (sliced["layers.mlp.all_reduce"].group_size, sliced["layers.mlp.all_reduce"].comm_bytes) == (4, 16777216)
    assert sliced["layers.mlp.experts.down_proj"].kernel_key == ("moe", "bf16", 2, 8, 4096, 14336, 4, 1, 1 / 3,
                                                                  "power_law_1.2")


@pytest.mark.parametrize(("changes", "t", "e", "message"), [
    # 6 experts do not spread over 4 GPUs
    ({"num_local_experts": 6}, 4, 4, "expert_parallel=4 does not divide number of experts=6"),
    # an odd expert width cannot be sliced over the tp/ep = 4/2 = 2 GPUs of an expert
    ({"intermediate_size": 97}, 4, 2, r"tensor_parallel/expert_parallel=4/2=2 .* does not divide expert "
                                      r"intermediate_size=97"),
])
def test_expert_splits_refused_by_name(changes: dict, t: int, e: int, message: str) -> None:
    spec = llmsim.load_model(dict(TINY_CONFIGS["mixtral"], **changes))
    with pytest.raises(llmsim.OptionError, match=message):
        llmsim.build_ops(spec, "prefill", batch_size=1, seq_len=8, tensor_parallel=t, expert_parallel=e)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"tensor_parallel": 3}, "tensor_parallel=3"),
    ({"tensor_parallel": 2, "expert_parallel": 4}, "expert_parallel=4 must divide tensor_parallel=2"),
    ({"tensor_parallel": 4, "expert_parallel": 3}, "expert_parallel=3 must divide tensor_parallel=4"),
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


def test_pipeline_memory_is_the_fullest_stages() -> None:
    # Llama-3.1-405B, 126 layers over 8 stages, split as vLLM's get_pp_indices does: 126 // 8 = 15 each, the 6 left
    # over one more each on stages 6, 5, ..., 1 (the ones before the last): [15, 16, 16, 16, 16, 16, 16, 15]; the
    # first stage adds the embedding, the last the LM head. Before session 33 a GPU held 1/8 of every weight.
    from llmsim.analysis.memory import pipeline_stage_sizes, stage_weights_bytes, weights_bytes
    from llmsim.cost.workload import CostOptions

    assert pipeline_stage_sizes(126, 8) == [15, 16, 16, 16, 16, 16, 16, 15]
    spec = llmsim.load_model("llama-3.1-405b")
    stages = stage_weights_bytes(spec, CostOptions(), 8)
    assert sum(w for w, _ in stages) == pytest.approx(weights_bytes(spec, CostOptions()))  # every weight, once
    r = llmsim.simulate("llama-3.1-405b", "h200", batch_size=192, prompt_len=2048, gen_len=256, pipeline_parallel=8)
    # a middle stage's 16 layers outweigh the first stage's 15 and the embedding: 16 / 126 of the layers' weights
    assert r.memory.weights_bytes == pytest.approx(stages[1][0])
    assert stages[1][0] > max(stages[0][0], stages[7][0]) and stages[1][0] > weights_bytes(spec, CostOptions()) / 8
    assert r.memory.kv_cache_bytes == pytest.approx(
        llmsim.simulate("llama-3.1-405b", "h200", batch_size=192, prompt_len=2048, gen_len=256,
                        pipeline_parallel=8, num_microbatches=1).memory.kv_cache_bytes)  # all micro-batches' KV
    tied = stage_weights_bytes(llmsim.load_model("gemma-3-1b"), CostOptions(), 2)  # tied embeddings
    assert tied[0][0] == pytest.approx(tied[1][0], rel=0.1)  # the last stage holds its own LM head copy


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


def test_plan_of_one_generated_token_trades_ttft_not_a_zero_tpot() -> None:
    """gen_len = 1: the prefill samples the only token, so every candidate's TPOT is 0 (simulate's too). The table
    says n/a, not 0.00ms, and the Pareto front trades TTFT against throughput (with TPOT, all 0, it held one point)."""
    p = llmsim.plan("llama-3.2-1b", "h100-sxm", prompt_len=512, gen_len=1, max_gpus=2, batch_sizes=[1, 4, 16, 64])
    assert p.front_latency == "ttft_s" and all(c.tpot_s == 0 for c in p.candidates)
    # the front: TTFT rising, throughput rising, no candidate better on both
    assert [c.ttft_s for c in p.pareto] == sorted(c.ttft_s for c in p.pareto) and len(p.pareto) >= 2
    assert all(not (o.ttft_s < c.ttft_s and o.tokens_per_s_per_gpu > c.tokens_per_s_per_gpu)
               for c in p.pareto for o in p.candidates if o.meets_targets)
    text = str(p)
    assert "0.00ms" not in text and "n/a" in text and "Pareto front (TTFT against" in text
    assert llmsim.plan("llama-3.2-1b", "h100-sxm", prompt_len=512, gen_len=2, max_gpus=1,
                       batch_sizes=[1, 4]).front_latency == "tpot_s"


def test_experts_touched_under_expert_parallelism_count_all_experts() -> None:
    """Mixtral (8 experts, top-2) at tensor 8 = expert 8: one local expert per GPU; a decode token picks 2 of
    all 8, so a GPU's expert is touched with probability 1 - (1 - 2/8)^1 = 0.25 (the old formula used 2 of the
    GPU's 1 expert: 1 - (1 - 2)^T, which is 0 or 2)."""
    import llmsim

    ops = llmsim.build_ops("mixtral-8x7b", "decode", batch_size=1, kv_len=128, tensor_parallel=8, expert_parallel=8)
    down = next(op for op in ops if op.name.endswith("experts.down_proj"))
    # W[14336, 4096] bf16 = 117440512 bytes per expert x 0.25 expected touched = 29360128
    assert down.formulas["weight_bytes"].value == pytest.approx(14336 * 4096 * 2 * 0.25, rel=1e-12)
    # batch 64 over 8 GPUs: each GPU sees its 8 tokens of the 64 routed; 1 - 0.75^64 of its expert
    ops = llmsim.build_ops("mixtral-8x7b", "decode", batch_size=64, kv_len=128, tensor_parallel=8, expert_parallel=8)
    down = next(op for op in ops if op.name.endswith("experts.down_proj"))
    assert down.formulas["weight_bytes"].value == pytest.approx(14336 * 4096 * 2 * (1 - 0.75 ** 64), rel=1e-12)


def test_a_batch_the_stages_do_not_divide_still_runs_as_micro_batches() -> None:
    # default micro-batches: the largest divisor of the batch up to the stages (12 over 8 stages: 6). Before
    # session 33 such a batch ran as one micro-batch, no pipelining: TTFT 2.1 / 1.0 / 6.0 / 1.9 s at 4 / 8 / 12 / 16
    from llmsim.analysis.simulate import default_microbatches

    assert [default_microbatches(b, 8) for b in (1, 4, 8, 12, 16, 7)] == [1, 4, 8, 6, 8, 7]
    ttft = [llmsim.simulate("llama-3.1-70b", "h100-sxm", batch_size=b, prompt_len=2048, gen_len=4,
                            pipeline_parallel=8).ttft_s for b in (8, 12, 16)]
    assert ttft[0] < ttft[1] < ttft[2]  # a larger batch takes longer to prefill, 12 between 8 and 16


def test_pipeline_decode_in_steady_state_pays_no_bubble_per_token() -> None:
    kw = dict(batch_size=8, prompt_len=1024, gen_len=9, tensor_parallel=2)
    steady = llmsim.simulate("llama-3.1-70b", "h100-sxm", pipeline_parallel=4, **kw)  # 4 micro-batches of 2
    lock = llmsim.simulate("llama-3.1-70b", "h100-sxm", pipeline_parallel=4, pipeline_decode="lockstep", **kw)
    p2p = next(op for op in steady.decode.ops if op.name == "pipeline.p2p").time_s
    body = steady.decode.time_s - p2p  # the stages' work, without the hand-overs
    # steady: max(m, p) / p = 4 / 4 of the whole model's steps at a micro-batch of 2; lock-step: (4 + 4 - 1) / 4
    assert lock.decode.time_s - p2p == pytest.approx(body * 7 / 4, rel=1e-12)
    whole = llmsim.simulate("llama-3.1-70b", "h100-sxm", batch_size=2, prompt_len=1024, gen_len=9, tensor_parallel=2)
    assert body == pytest.approx(whole.decode.time_s, rel=1e-9)  # the same ops, one GPU holding all the layers
    assert steady.ttft_s == lock.ttft_s  # a prefill fills and drains the pipeline either way
    # the result says which pipeline model timed it (the first-contact pass could not tell)
    assert steady.assumptions["pipeline"].startswith("4 stages, m=4 micro-batches: prefill fills and drains it")
    assert "decode steady (micro-batches in flight across steps" in steady.assumptions["pipeline"]
    assert "decode lockstep (every token fills and drains the pipeline)" in lock.assumptions["pipeline"]
    assert "pipeline=4 stages" in str(lock) and "pipeline" not in llmsim.simulate(
        "llama-3.1-70b", "h100-sxm", **kw).assumptions
    # fewer micro-batches than stages: the stages idle, max(1, 4) / 4 = 1 whole-model step at batch 8
    one = llmsim.simulate("llama-3.1-70b", "h100-sxm", pipeline_parallel=4, num_microbatches=1, **kw)
    assert one.decode.time_s - next(op for op in one.decode.ops if op.name == "pipeline.p2p").time_s == (
        pytest.approx(llmsim.simulate("llama-3.1-70b", "h100-sxm", **kw).decode.time_s, rel=1e-9))
    with pytest.raises(llmsim.errors.OptionError, match="pipeline_decode"):
        llmsim.simulate("llama-3.1-70b", "h100-sxm", pipeline_parallel=4, pipeline_decode="wave", **kw)


def test_multi_node_all_reduce_is_the_faster_of_nccls_ring_and_tree() -> None:
    # b200.toml: 8 GPUs per node, NVLink hop 0.6 us, network hop 2.7 us at 50e9 byte/s; NCCL's LL base latency
    # 6.8 us (tree) and 6.6 us (ring) per collective (tuning.cc); measured tables off
    roofline = Roofline(llmsim.load_hardware("b200"), ExecutionOptions.make(tables=None))
    small = 4 * 7168 * 2  # one decode step's [4, 7168] bf16 activations: 57,344 bytes, over 64 GPUs = 8 nodes
    # tree: 6.8e-6 + 2 * 57344 / 50e9 + 2 * ((64/8 - 1) * 0.6e-6 + log2(8) * 2.7e-6) = 6.8e-6 + 2.29376e-6
    # + 24.6e-6 = 33.69376e-6; ring: 6.6e-6 + 2*63/64 * 57344 / 50e9 + (126 - 14) * 0.6e-6 + 14 * 2.7e-6
    # = 113.85792e-6 (the old ring model, every step over the network: 2*63 * 2.7e-6 + 2.25792e-6 = 342.46e-6)
    assert roofline.collective_s("all_reduce", small, 64) == pytest.approx(33.69376e-6, rel=1e-12)
    large = 2**28  # 256 MiB: the ring's bandwidth term wins, 6.6e-6 + 2*63/64 * 2**28 / 50e9 + 112 * 0.6e-6
    # + 14 * 2.7e-6
    assert roofline.collective_s("all_reduce", large, 64) == pytest.approx(
        6.6e-6 + 2 * 63 / 64 * 2**28 / 50e9 + 112 * 0.6e-6 + 14 * 2.7e-6, rel=1e-12)
    # within one node: the NVLink ring, 6.6e-6 + 2*7/8 * M / 900e9 + 14 * 0.6e-6
    assert roofline.collective_s("all_reduce", small, 8) == pytest.approx(
        6.6e-6 + 2 * 7 / 8 * small / 900e9 + 14 * 0.6e-6, rel=1e-12)


def test_an_all_reduce_the_gb200_tables_lack_reads_the_gb300s_on_the_same_nvlink_fabric() -> None:
    # kernels/gb200/trtllm/all_reduce.csv measures 2 and 4 GPUs (one compute tray); kernels/gb300/trtllm measures
    # 8 and 16 too (across trays of the same NVLink 5 rack fabric): row "8,16384,4.408" (TensorRT-LLM's MNNVL kernel)
    roofline = Roofline(llmsim.load_hardware("gb200"), ExecutionOptions.make(engine="trtllm", tables="trtllm"))
    assert roofline.collective_s("all_reduce", 16384, 8) == pytest.approx(4.408e-6, rel=1e-9)
    assert roofline.collective_s("all_reduce", 16384, 4) == pytest.approx(4.95e-6, rel=1e-9)  # its own row
    # (the alpha-beta ring it read before: 2*7/8 * 16384 / 900e9 + 14 * 0.6e-6 = 8.43e-6, without NCCL's base)
    # a count neither device measures stays on that model, and the result names the stand-in
    assert roofline.collective_s("all_reduce", 16384, 32) == pytest.approx(
        6.6e-6 + 2 * 31 / 32 * 16384 / 900e9 + 62 * 0.6e-6)
    r = llmsim.simulate("llama-3.1-70b", "gb200", engine="trtllm", batch_size=8, prompt_len=512, gen_len=4,
                        tensor_parallel=8)
    assert "same NVLink fabric" in r.measured_tables["trtllm gb300 all_reduce (proxy)"]
    sources = {op.name: op.source for op in r.decode.ops if op.kind == "communication"}
    assert sources["layers.attn.all_reduce"] == sources["layers.mlp.all_reduce"] == "trtllm gb300 all_reduce (proxy)"
    assert sources["lm_head.all_gather"] == "roofline"  # NCCL's all-gather: neither device measures 8 GPUs


def test_a_split_into_whole_fp8_scale_blocks_runs() -> None:
    """The same checkpoint at TP 8 with EP 8 (each GPU 16 whole experts) or at TP 4 (1536 / 4 = 384 = 3 blocks of
    128 per GPU) is what engines run; TP 8 alone is refused (tests/test_bad_inputs.py)."""
    for split in ({"tensor_parallel": 8, "expert_parallel": 8}, {"tensor_parallel": 4}):
        r = llmsim.simulate("qwen3-235b-a22b-fp8", "h200", batch_size=1, prompt_len=16, gen_len=2, **split)
        assert r.tpot_s > 0


def test_max_batch_size_with_pipeline_stages() -> None:
    """max_batch_size refused pipeline_parallel ("option='pipeline_parallel' is not allowed"), which simulate takes:
    its answer is now the largest batch whose fullest stage fits, one more not fitting."""
    kw = dict(prompt_len=2048, gen_len=512, tensor_parallel=2)
    one = llmsim.max_batch_size("llama-3.1-70b", "h100-sxm", **kw)
    two = llmsim.max_batch_size("llama-3.1-70b", "h100-sxm", pipeline_parallel=2, **kw)
    assert two > one  # each GPU holds half the layers' weights and KV
    fits = [llmsim.simulate("llama-3.1-70b", "h100-sxm", batch_size=b, pipeline_parallel=2, **kw).memory.fits
            for b in (two, two + 1)]
    assert fits == [True, False]


def test_plan_searches_expert_parallelism_for_moe_models() -> None:
    """plan searched TP x PP only; for Qwen3-30B-A3B on H100 it picked TP 2 x PP 2 at batch 512 (2066 tokens/s per
    GPU) while TP 2 with the experts spread over both GPUs (EP 2) fits batch 256 at 2452, which the plan now finds.
    A dense model's plan and table are as before (no EP column)."""
    p = llmsim.plan("qwen3-30b-a3b", "h100-sxm")
    assert (p.best.tensor_parallel, p.best.pipeline_parallel, p.best.expert_parallel) == (2, 1, 2)
    assert p.best.tokens_per_s_per_gpu > max(c.tokens_per_s_per_gpu for c in p.candidates
                                             if c.meets_targets and c.expert_parallel == 1)
    assert "(EP=2)" in p.reason and "  EP  " in str(p)
    r = llmsim.simulate("qwen3-30b-a3b", "h100-sxm", batch_size=256, prompt_len=2048, gen_len=256,
                        tensor_parallel=2, expert_parallel=2)
    assert r.tokens_per_s_per_gpu == pytest.approx(p.best.tokens_per_s_per_gpu)
    dense = llmsim.plan("llama-3.1-8b", "h100-sxm", tpot_slo_s=0.05, batch_sizes=[1, 64])
    assert {c.expert_parallel for c in dense.candidates} == {1} and " EP " not in str(dense)
