"""Attention data parallelism in serve() / serve_disaggregated() (llmsim.serving.data_parallel)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import llmsim
from llmsim.analysis.simulate import resolve
from llmsim.errors import OptionError
from llmsim.serving.data_parallel import rank_options, weights_bytes_per_gpu
from llmsim.serving.engine_limits import engine_defaults, scheduler_limits
from llmsim.serving.lockstep import rank_of_requests, simulate_lockstep
from llmsim.serving.scheduler import simulate_engine
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


def test_sglang_splits_its_chunk_and_running_requests_over_the_ranks_others_do_not() -> None:
    spec, hw, rank, dp, _ = _tiny(4, 4)  # 4 ranks of 1 GPU
    # SGLang on H100 (80 GB, under 160 GiB): chunked_prefill_size 8192, divided over the 4 ranks: 8192 // 4 = 2048
    # (ServerArgs._handle_data_parallelism); its unset max_running_requests stays llmsim's default 1024
    limits = scheduler_limits(spec, hw, rank, "sglang", 128, data_parallel=dp)
    assert (limits.max_num_batched_tokens, limits.max_num_seqs) == (2048, 1024)
    assert "8192 divided over its 4 attention data-parallel ranks: 2048" in limits.rank_note
    # given ones are the server's arguments: --chunked-prefill-size 1000 -> 1000 // 4 = 250 a rank,
    # --max-running-requests 30 -> 30 // 4 = 7 a rank (model_runner: max_running_requests // dp_size)
    limits = scheduler_limits(spec, hw, rank, "sglang", 128, max_num_seqs=30, max_num_batched_tokens=1000,
                              data_parallel=dp)
    assert (limits.max_num_batched_tokens, limits.max_num_seqs) == (250, 7)
    # without ranks, and for TensorRT-LLM's and vLLM's ranks (each its own scheduler), the limits stand as given
    assert scheduler_limits(spec, hw, rank, "sglang", 128, max_num_batched_tokens=1000).max_num_batched_tokens == 1000
    for engine in ("trtllm", "vllm"):
        limits = scheduler_limits(spec, hw, rank, engine, 128, max_num_seqs=30, max_num_batched_tokens=1000,
                                  data_parallel=dp)
        assert (limits.max_num_batched_tokens, limits.max_num_seqs, limits.rank_note) == (1000, 30, "")
    with pytest.raises(llmsim.OptionError, match=r"max_num_batched_tokens=3 is below attention_data_parallel=4"):
        scheduler_limits(spec, hw, rank, "sglang", 2, max_num_seqs=1, max_num_batched_tokens=3, data_parallel=dp)
    r = llmsim.serve(TINY_MOE, "h100-sxm", engine="sglang", tensor_parallel=4, expert_parallel=4,
                     attention_data_parallel=4, concurrency=8, prompt_len=64, gen_len=8, num_requests=16, tables=None)
    assert "2048 tokens a step per rank" in r.assumptions["limits per rank"]


def test_trtllm_balance_decisions_by_hand() -> None:
    """TensorRT-LLM's _balance_adp_requests over 3 ranks in lockstep: one decision per joint step (round)."""
    from llmsim.serving.adp_balance import AdpBalance

    a = AdpBalance(3, timeout_iters=4, batching_wait_iters=0)
    assert a.hold(0, 0.0, decoding=0, has_prompt=True, slots_free=True) is False  # rank 0 decodes nothing: released
    a.peers = [(False, True)] * 3  # every rank decodes, none holds a prompt yet
    decisions = []
    for step in range(1, 5):  # rank 0 holds a prompt; ranks 1 and 2 none: the counter reads 1, 2, 3, 4
        a.round = step
        decisions.append(a.hold(0, float(step), 5, True, True))
    assert decisions == [True, True, True, False] and a.count == 0 and a.released_s == 4.0  # 4 >= timeout_iters
    a.round = 5
    assert a.hold(0, 5.0, 5, True, True) is True and a.count == 1
    assert a.hold(1, 5.0, 5, True, True) is True and a.count == 1  # rank 1, same step: the step's decision
    a.round = 6
    a.idle(2)  # rank 2 ran out of requests: it does not decode, so the step releases
    assert a.hold(0, 6.0, 5, True, True) is False and a.count == 0 and a.released_s == 6.0
    # batching_wait_iters 2: every rank holds a prompt and decodes: two more steps held, then released
    b = AdpBalance(3, timeout_iters=50, batching_wait_iters=2)
    b.peers = [(True, True)] * 3
    held = []
    for step in range(3):
        b.round = step
        held.append(b.hold(0, float(step), 5, True, True))
    assert held == [True, True, False] and b.count == 0


def test_trtllm_balance_holds_prompts_back_and_is_refused_elsewhere() -> None:
    kw = dict(engine="trtllm", tensor_parallel=4, expert_parallel=4, attention_data_parallel=4, prompt_len=
              "uniform:48:64", gen_len="uniform:24:32", tables=None, max_num_seqs=16, max_num_batched_tokens=256)
    off = llmsim.serve(TINY_MOE, "h100-sxm", concurrency=32, num_requests=320, **kw)
    on = llmsim.serve(TINY_MOE, "h100-sxm", concurrency=32, num_requests=320, attention_dp_balance=True, **kw)
    assert on.ttft_s.mean > 2 * off.ttft_s.mean  # prompts wait for the other ranks (or up to 50 steps)
    assert "enable_balance over 4 ranks" in on.assumptions["attention dp balance"]
    assert np.all(np.isfinite(on.to_pandas()["finish_s"]))  # every request still finishes
    # 3 clients over 4 ranks: one rank never decodes, so TensorRT-LLM releases every prompt at once
    few = llmsim.serve(TINY_MOE, "h100-sxm", concurrency=3, num_requests=30, attention_dp_balance=True, **kw)
    assert few.ttft_s.mean == llmsim.serve(TINY_MOE, "h100-sxm", concurrency=3, num_requests=30, **kw).ttft_s.mean
    assert "holds nothing: 3 clients" in few.assumptions["limits per rank"]
    with pytest.raises(llmsim.OptionError, match="attention_dp_balance is TensorRT-LLM's"):
        llmsim.serve(TINY_MOE, "h100-sxm", **{**kw, "engine": "sglang"}, concurrency=8, attention_dp_balance=True)
    with pytest.raises(llmsim.OptionError, match=r"attention_dp_balance='yes' must be True"):
        llmsim.serve(TINY_MOE, "h100-sxm", **kw, concurrency=8, attention_dp_balance="yes")
    with pytest.raises(llmsim.OptionError, match="attention_dp_timeout_iters"):
        llmsim.serve(TINY_MOE, "h100-sxm", **kw, concurrency=8, attention_dp_balance=True,
                     attention_dp_timeout_iters=-1)
    with pytest.raises(llmsim.OptionError, match="give attention_data_parallel > 1"):
        llmsim.serve(TINY_MOE, "h100-sxm", **{**kw, "attention_data_parallel": 1}, concurrency=8,
                     attention_dp_balance=True)


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
    # on NVLink, each NCCL's base 6.6 us + (n - 1)/n * M / BW + (n - 1) * latency: 6.6e-6 + 0.5 * 3,072 / BW + latency
    bandwidth = hw.interconnect_value("intra_node_bandwidth_bytes_per_s")
    latency = hw.interconnect_value("intra_node_latency_s")
    collectives = 2 * (6.6e-6 + 0.5 * 3072 / bandwidth + latency)  # one MoE layer
    assert step.decode_tokens_s[n] == pytest.approx(kept + experts + collectives, rel=1e-12)


def test_every_rank_runs_its_own_clients_and_the_replicas_throughput() -> None:
    kw = dict(engine="sglang", tensor_parallel=2, expert_parallel=2, prompt_len=64, gen_len=8, **SMALL)
    r = llmsim.serve("qwen3-30b-a3b", "h100-sxm", attention_data_parallel=2, concurrency=4, num_requests=13, **kw)
    requests = r.requests
    assert r.num_requests == 13 and len(requests["ttft_s"]) == 13 and np.all(np.isfinite(requests["finish_s"]))
    assert r.tensor_parallel == 2 and r.gpus == 2 and r.attention_data_parallel == 2 and r.concurrency == 4
    assert r.output_tokens_per_s == pytest.approx(13 * 8 / r.duration_s)  # every rank's tokens, no scaling
    assert r.goodput() == pytest.approx(13 / r.duration_s)
    assert "2 ranks of tensor_parallel=1" in r.assumptions["attention data parallelism"]
    assert "in lockstep" in r.assumptions["attention data parallelism"]
    # request i is client i mod 4's; clients 0 and 2 on rank 0, 1 and 3 on rank 1
    assert rank_of_requests(13, 2, 4).tolist() == [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0]
    assert rank_of_requests(5, 2, None).tolist() == [0, 1, 0, 1, 0]  # open loop: round robin


def test_equal_ranks_in_lockstep_step_as_one_rank_alone() -> None:
    """Fixed lengths, clients a multiple of the ranks, no frontend: every rank holds the same work each step, so
    the joint step is each rank's own (the experts priced at d x its tokens either way) and the replica's requests
    see what one rank simulated alone with its share of the clients sees."""
    spec, hw, rank, dp, execution = _tiny(2, 2)
    limits = scheduler_limits(spec, hw, rank, "sglang", 40, 16, 256, data_parallel=dp)
    step = StepCost(spec, Roofline(hw, execution), rank, limits.max_num_batched_tokens, limits.max_num_seqs, 40,
                    data_parallel=dp)
    n, prompts, gens = 12, np.full(12, 32), np.full(12, 8)
    both, steps, _, _ = simulate_lockstep(step, limits, 2, prompts, gens, np.zeros(4), 4)
    alone, _ = simulate_engine(step, limits, prompts[::2], gens[::2], np.zeros(2), 2)
    assert both.first_token_s[::2] == pytest.approx(alone.first_token_s, rel=1e-12)
    assert both.finish_s[1::2] == pytest.approx(alone.finish_s, rel=1e-12)
    assert np.asarray(steps.running).max() == 4  # the steps' rows sum the ranks
    assert n == len(both.finish_s)


def test_joint_step_is_the_slowest_ranks_own_part_plus_the_experts_of_all_tokens() -> None:
    """One client on two ranks: rank 1 holds nothing, so each step is rank 0's own time with its experts priced
    at its tokens over both ranks (T/2 per rank on the shared grid) instead of 2 x T."""
    spec, hw, rank, dp, execution = _tiny(2, 2)
    limits = scheduler_limits(spec, hw, rank, "sglang", 40, 16, 256, data_parallel=dp)
    step = StepCost(spec, Roofline(hw, execution), rank, limits.max_num_batched_tokens, limits.max_num_seqs, 40,
                    data_parallel=dp)
    _, steps, _, _ = simulate_lockstep(step, limits, 2, np.array([32, 32]), np.array([4, 4]), np.zeros(1), 1)
    prefill = step.step_s(0.0, 0, [(32, 0)], 1)  # rank 0's prompt of 32 tokens alone
    expected = prefill - step.gathered_s(32, True) + step.gathered_s(32 / 2, True)
    assert steps.time_s[0] == pytest.approx(expected, rel=1e-12)
    decode = step.step_s(32.0, 1, [], 1)  # then one decode request at 32 cached tokens
    assert steps.time_s[1] == pytest.approx(decode - step.gathered_s(1, False) + step.gathered_s(0.5, False),
                                            rel=1e-12)
    assert 0 < step.gathered_s(0.5, False) < step.gathered_s(1, False)  # halfway between 0 and one token's
    assert step.gathered_s(0.5, False) == pytest.approx(step.gathered_s(1, False) / 2, rel=1e-12)


def test_rank_pool_holds_more_tokens_than_a_tensor_parallel_replica_per_gpu_of_heads() -> None:
    """A rank at tensor_parallel 1 keeps all 4 KV heads of a token on its GPU: its pool holds about half the
    tokens of the replica at tensor_parallel 2 (2 heads per GPU), the two ranks together about as many."""
    kw = dict(engine="sglang", concurrency=2, prompt_len=64, gen_len=4, num_requests=2, tensor_parallel=2,
              expert_parallel=2, **SMALL)
    tp = llmsim.serve("qwen3-30b-a3b", "h100-sxm", **kw)
    dp = llmsim.serve("qwen3-30b-a3b", "h100-sxm", attention_data_parallel=2, **kw)
    # kv_cache_tokens: the replica's (both ranks' pools); replicated attention weights take a little room
    assert 0.8 < dp.kv_cache_tokens / tp.kv_cache_tokens < 1.0
    assert f"KV pool of {dp.kv_cache_tokens // 2:,} tokens" in dp.assumptions["attention data parallelism"]


def test_disaggregated_pool_of_ranks_serves_every_request() -> None:
    r = llmsim.serve_disaggregated(
        "qwen3-30b-a3b", "h100-sxm", prefill={"tensor_parallel": 2, "expert_parallel": 2},
        decode={"tensor_parallel": 2, "expert_parallel": 2, "attention_data_parallel": 2}, concurrency=4,
        prompt_len=64, gen_len=8, num_requests=12)
    assert len(r.requests["ttft_s"]) == 12 and np.all(r.requests["finish_s"] > r.requests["first_token_s"])
    assert r.tensor_parallel == 2 and r.gpus == 4
    assert "decode 1 x TP2 (2 attention data-parallel ranks)" in r.assumptions["pools"]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_lockstep_runs_of_decode_steps_are_the_steps_one_at_a_time(engine, monkeypatch) -> None:
    """The ranks' pure decode steps go as joint runs (serving.lockstep._joint_run); refusing every run (each
    step then taken one at a time) gives the same requests' times. (TensorRT-LLM has no frontend figure, so a
    closed loop's next request reaches it at the very moment the last one finishes, and a run's clock, summed at
    once, and one step's, summed in turn, differ in the last digit: which side of that moment a step falls on can
    differ. A 1 ms frontend, as the other engines have one, takes the tie away.)"""
    from llmsim.serving import lockstep

    kw = dict(engine=engine, tensor_parallel=4, expert_parallel=4, attention_data_parallel=4, tables=None,
              concurrency=12, prompt_len="uniform:16:96", gen_len="uniform:8:64", num_requests=96, max_num_seqs=8,
              max_num_batched_tokens=128)
    if engine == "trtllm":
        kw["frontend_s"] = 1e-3
    runs = llmsim.serve(TINY_MOE, "h100-sxm", **kw)
    monkeypatch.setattr(lockstep, "_joint_run", lambda *args: None)
    single = llmsim.serve(TINY_MOE, "h100-sxm", **kw)
    assert runs.steps == single.steps and runs.steps > 96
    for key in ("first_token_s", "finish_s"):
        np.testing.assert_allclose(runs.requests[key], single.requests[key], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(runs.steps_to_pandas()["time_s"], single.steps_to_pandas()["time_s"], rtol=1e-12)


def test_block_fp8_dense_mlps_are_checked_at_the_ranks_split_not_over_every_gpu() -> None:
    # DeepSeek-V3 (128x128 fp8 blocks; dense MLPs 18432 wide): over 32 GPUs that is 576 per GPU, which cuts the
    # blocks, so plain tensor_parallel=32 is refused. With 32 attention data-parallel ranks each runs the dense
    # MLPs at its own split (one GPU), and only the routed experts span the 32: session 43's check refused the
    # whole deployment, through the experts' build over every GPU (25 disaggregated decode pools of the serving
    # validation)
    with pytest.raises(OptionError, match=r"intermediate_size=18432 over 32 GPUs is 576 per GPU"):
        llmsim.simulate("deepseek-v3", "gb200", tensor_parallel=32, expert_parallel=32, batch_size=1, prompt_len=16,
                        gen_len=2)
    r = llmsim.serve("deepseek-v3", "gb200", engine="sglang", tensor_parallel=32, attention_data_parallel=32,
                     expert_parallel=32, concurrency=64, num_requests=64, prompt_len=256, gen_len=8)
    assert r.ttft_s.mean > 0 and r.tpot_s.mean > 0
