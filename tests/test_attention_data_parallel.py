"""Attention data parallelism in serve() / serve_disaggregated() (llmsim.serving.data_parallel)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import llmsim
from llmsim.analysis.simulate import resolve
from llmsim.serving.data_parallel import rank_options, weights_bytes_per_gpu
from llmsim.serving.engine_limits import engine_defaults, scheduler_limits
from llmsim.serving.step_cost import StepCost
from llmsim.timing.phases import decode_totals
from llmsim.timing.roofline import Roofline

# one layer, h = 256, 4 heads of 64 (4 KV heads), 4 experts of I = 128 (top 2), vocabulary 1024, bf16
TINY_MOE = {"model_type": "mixtral", "hidden_size": 256, "intermediate_size": 128, "num_hidden_layers": 1,
            "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 64, "num_local_experts": 4,
            "num_experts_per_tok": 2, "vocab_size": 1024, "max_position_embeddings": 4096, "torch_dtype": "bfloat16",
            "tie_word_embeddings": False, "rms_norm_eps": 1e-5}
SMALL = {"max_num_seqs": 16, "max_num_batched_tokens": 256}


def _tiny(tensor_parallel: int, ranks: int):
    spec, hw, cost, execution = resolve(TINY_MOE, "h100-sxm", "sglang", tensor_parallel=tensor_parallel,
                                        expert_parallel=tensor_parallel, tables=None)
    rank, dp = rank_options(spec, cost, ranks)
    return spec, hw, rank, dp, execution


def test_one_rank_is_todays_serve_exactly() -> None:
    kw = dict(engine="vllm", tensor_parallel=2, expert_parallel=2, concurrency=4, prompt_len=64, gen_len=8,
              num_requests=12, **SMALL)
    today = llmsim.serve("qwen3-30b-a3b", "h100-sxm", **kw)
    one = llmsim.serve("qwen3-30b-a3b", "h100-sxm", attention_data_parallel=1, **kw)
    assert one.model_dump() == today.model_dump()
    pools = dict(prefill={"tensor_parallel": 2}, decode={"tensor_parallel": 2, "expert_parallel": 2})
    today = llmsim.serve_disaggregated("qwen3-30b-a3b", "h100-sxm", **pools, concurrency=4, prompt_len=64, gen_len=8,
                                       num_requests=12)
    pools["decode"]["attention_data_parallel"] = 1
    one = llmsim.serve_disaggregated("qwen3-30b-a3b", "h100-sxm", **pools, concurrency=4, prompt_len=64, gen_len=8,
                                     num_requests=12)
    assert one.model_dump() == today.model_dump()


def test_weights_and_kv_pool_per_gpu_by_hand() -> None:
    spec, hw, rank, dp, _ = _tiny(2, 2)  # 2 ranks of 1 GPU, the 4 experts 2 per GPU
    assert rank.tensor_parallel == 1 and dp.gpus == 2 and dp.expert_options.expert_parallel == 2
    # non-expert parameters, all on every GPU (tp = 1): embedding 1024*256 = 262,144; LM head 262,144;
    # q, k, v, o 4 * 256 * 256 = 262,144; router 256 * 4 = 1,024; 3 RMSNorms 3 * 256 = 768: 788,224
    # experts: 4 * 3 * 256 * 128 = 393,216, half on each GPU: 196,608; (788,224 + 196,608) * 2 bytes = 1,969,664
    assert weights_bytes_per_gpu(spec, rank, dp) == 1_969_664
    # SGLang's pool: mem_fraction_static x capacity - weights, at 1 layer * 2 (K, V) * 4 KV heads * 64 * 2 bytes
    # = 1,024 bytes per token (all 4 KV heads on the rank's one GPU), page size 1; the fraction is SGLang's for
    # its --tp 2 (the replica's GPUs)
    limits = scheduler_limits(spec, hw, rank, "sglang", 128, data_parallel=dp)
    fraction = engine_defaults("sglang", hw, 2)["gpu_memory_utilization"]
    assert limits.kv_blocks == math.floor((fraction * hw.memory_capacity_bytes - 1_969_664) / 1024)


def test_step_is_the_ranks_attention_plus_every_ranks_experts_and_their_collectives() -> None:
    spec, hw, rank, dp, execution = _tiny(2, 2)
    roofline = Roofline(hw, execution)
    step = StepCost(spec, roofline, rank, 64, 8, 128, data_parallel=dp)
    n = 3  # decode requests on this rank: 3 tokens; the experts see 2 * 3 = 6
    own = decode_totals(spec, roofline, rank, n, 1, 1)
    everyone = decode_totals(spec, roofline, dp.expert_options, 2 * n, 1, 1)
    kept = sum(float(np.ravel(t)[0]) for name, kind, t in zip(own.names, own.kinds, own.per_op["time_s"])
               if kind != "attention" and not name.startswith("lm_head") and ".experts." not in name
               and not name.endswith("mlp.all_reduce"))
    experts = sum(float(np.ravel(t)[0]) for name, t in zip(everyone.names, everyone.per_op["time_s"])
                  if ".experts." in name)
    # all-gather and reduce-scatter of the 6 tokens' hidden states (6 * 256 * 2 bytes = 3,072 bytes) among 2 GPUs
    # on NVLink, each (n - 1)/n * M / BW + (n - 1) * latency: 0.5 * 3,072 / BW + latency
    bandwidth = hw.interconnect_value("intra_node_bandwidth_bytes_per_s")
    latency = hw.interconnect_value("intra_node_latency_s")
    collectives = 2 * (0.5 * 3072 / bandwidth + latency)  # one MoE layer
    assert step.decode_tokens_s[n] == pytest.approx(kept + experts + collectives, rel=1e-12)


def test_one_rank_of_every_dth_request_and_the_replicas_throughput() -> None:
    kw = dict(engine="sglang", tensor_parallel=2, expert_parallel=2, prompt_len=64, gen_len=8, **SMALL)
    r = llmsim.serve("qwen3-30b-a3b", "h100-sxm", attention_data_parallel=2, concurrency=4, num_requests=13, **kw)
    rank = r.requests
    assert r.num_requests == 13 and len(rank["ttft_s"]) == 7  # requests 0, 2, ..., 12
    assert r.tensor_parallel == 2 and r.gpus == 2 and r.attention_data_parallel == 2 and r.concurrency == 4
    assert r.output_tokens_per_s == pytest.approx(2 * rank["gen_len"].sum() / r.duration_s)
    assert r.goodput() == pytest.approx(2 * 7 / r.duration_s)
    assert "2 ranks of tensor_parallel=1" in r.assumptions["attention data parallelism"]


def test_rank_pool_holds_more_tokens_than_a_tensor_parallel_replica_per_gpu_of_heads() -> None:
    """A rank at tensor_parallel 1 keeps all 4 KV heads of a token on its GPU: its pool holds about half the
    tokens of the replica at tensor_parallel 2 (2 heads per GPU), the two ranks together about as many."""
    kw = dict(engine="sglang", concurrency=2, prompt_len=64, gen_len=4, num_requests=2, tensor_parallel=2,
              expert_parallel=2, **SMALL)
    tp = llmsim.serve("qwen3-30b-a3b", "h100-sxm", **kw)
    dp = llmsim.serve("qwen3-30b-a3b", "h100-sxm", attention_data_parallel=2, **kw)
    assert 0.4 < dp.kv_cache_tokens / tp.kv_cache_tokens < 0.5  # replicated attention weights take a little room


def test_disaggregated_pool_of_ranks_serves_every_request() -> None:
    r = llmsim.serve_disaggregated(
        "qwen3-30b-a3b", "h100-sxm", prefill={"tensor_parallel": 2, "expert_parallel": 2},
        decode={"tensor_parallel": 2, "expert_parallel": 2, "attention_data_parallel": 2}, concurrency=4,
        prompt_len=64, gen_len=8, num_requests=12)
    assert len(r.requests["ttft_s"]) == 12 and np.all(r.requests["finish_s"] > r.requests["first_token_s"])
    assert r.tensor_parallel == 2 and r.gpus == 4
    assert "decode 1 x TP2 (2 attention data-parallel ranks)" in r.assumptions["pools"]
