"""Prefill passes the serving engines run without a CUDA graph: host dispatch per kernel
(ExecutionOptions.prefill_dispatch_s), each engine's figure from its source, decode untouched."""

from __future__ import annotations

import pytest

import llmsim
from llmsim.analysis.evaluation import resolve
from llmsim.cli import main
from llmsim.engines.catalog import ENGINES
from llmsim.errors import OptionError
from llmsim.timing.phases import decode_step_totals, prefill_totals
from llmsim.timing.roofline import Roofline


def _kernels(totals: object) -> int:
    return int(sum(op.launches * op.count for op in totals.ops))


def test_each_engine_figure_is_its_source_pass_over_the_kernels_llmsim_counts() -> None:
    """The catalog's figures, re-derived: a public time of one uncaptured pass / the kernels llmsim counts in it."""
    # SGLang PR #12160: DeepSeek-V3, 1 new token, eager prefill 'forward cost' 82.6 ms (TP8 assumed)
    spec, hw, cost, ex = resolve("deepseek-v3", "h200", engine="sglang", tensor_parallel=8)
    kernels = _kernels(prefill_totals(spec, Roofline(hw, ex), cost, 1, 1))
    assert kernels == 1329  # 61 layers of MLA (q_a and kv_a one GEMM) and MoE (3 dense), the embedding, norm, LM head
    assert ENGINES["sglang"].execution["prefill_dispatch_s"] == pytest.approx(82.6e-3 / kernels, rel=1e-3)
    # vLLM issue #45709: Qwen3-30B-A3B TP4, compiled with cudagraph_mode=NONE, a decode step of 8 requests 34.4 ms
    spec, hw, cost, ex = resolve("qwen3-30b-a3b", "l40s", engine="vllm", tensor_parallel=4)
    kernels = _kernels(decode_step_totals(spec, Roofline(hw, ex), cost, 8, 3500))
    assert kernels == 773
    assert ENGINES["vllm"].execution["prefill_dispatch_s"] == pytest.approx(34.4e-3 / kernels, rel=1e-3)
    # TensorRT-LLM PR #12653 states its CPU dispatch interval per kernel: about 35 us
    assert ENGINES["trtllm"].execution["prefill_dispatch_s"] == 35e-6


def test_a_one_token_prefill_is_host_bound_at_its_source_time() -> None:
    # DeepSeek-V3 on 8 H200s under SGLang, one token: every kernel is shorter than its 62.2 us of host dispatch,
    # so the pass takes 1,329 kernels x 62.2 us = 82.6 ms, the figure the per-kernel time was taken from
    r = llmsim.simulate("deepseek-v3", "h200", engine="sglang", tensor_parallel=8, batch_size=1, prompt_len=1,
                        gen_len=2)
    assert r.ttft_s == pytest.approx(1329 * 62.2e-6, rel=0.01)
    assert r.prefill.bound == "overhead"
    # replaying a graph instead, the same pass is the GPU's time alone: several times shorter
    graphed = llmsim.simulate("deepseek-v3", "h200", engine="sglang", tensor_parallel=8, batch_size=1,
                              prompt_len=1, gen_len=2, prefill_dispatch_s=0)
    assert graphed.ttft_s < r.ttft_s / 3


def test_decode_keeps_its_graphs_and_a_long_prefill_its_kernels() -> None:
    kw = dict(engine="vllm", tensor_parallel=8, batch_size=4, gen_len=64, weight_dtype="fp8", activation_dtype="fp8")
    for prompt_len in (256, 8192):
        uncaptured = llmsim.simulate("llama-3.1-70b", "b200", prompt_len=prompt_len, **kw)
        graphed = llmsim.simulate("llama-3.1-70b", "b200", prompt_len=prompt_len, prefill_dispatch_s=0, **kw)
        assert uncaptured.decode.time_s == graphed.decode.time_s  # decode batches replay CUDA graphs
        # the pass: max(its kernels + 2.7 us eager launch each, its kernels x 44.5 us) against kernel + 0.9 us replay
        assert uncaptured.ttft_s > graphed.ttft_s
    # 8192 tokens: the GEMMs outlast their dispatch, so the pass is longer by a small share only; at 256 tokens
    # host dispatch is most of it
    assert uncaptured.ttft_s < 1.25 * graphed.ttft_s


def test_serve_at_a_low_rate_prefills_as_simulate_does() -> None:
    kw = dict(engine="sglang", tensor_parallel=2)
    r = llmsim.serve("llama-3.1-8b", "h100-sxm", request_rate=0.01, arrival="constant", prompt_len=1024, gen_len=2,
                     num_requests=3, async_scheduling=False, frontend_s=0, **kw)
    s = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=1024, gen_len=2, **kw)
    assert r.ttft_s.p50 == pytest.approx(s.ttft_s, rel=1e-6)


def test_bad_values_name_the_field() -> None:
    for bad in (-1e-6, "fast", float("nan"), True):
        with pytest.raises(OptionError, match="prefill_dispatch_s"):
            llmsim.simulate("llama-3.1-8b", "h100-sxm", prefill_dispatch_s=bad)


def test_cli_flag_and_engines_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "llama-3.1-8b", "--hardware", "h100-sxm", "--prompt-len", "64", "--gen-len", "2",
                 "--prefill-dispatch-s", "0"]) == 0
    out = capsys.readouterr().out
    assert "prefill without a CUDA graph" not in out
    assert main(["simulate", "llama-3.1-8b", "--hardware", "h100-sxm", "--prompt-len", "64", "--gen-len", "2"]) == 0
    assert "prefill without a CUDA graph above 512 tokens: launch 2.7 us, dispatch 44.5 us per kernel" in \
        capsys.readouterr().out
    assert main(["engines"]) == 0
    listing = capsys.readouterr().out  # each engine's figure with its source
    assert "sgl-project/sglang PR #12160" in listing and "vllm-project/vllm issue #45709" in listing


def test_vllm_replays_its_piecewise_graphs_up_to_512_tokens() -> None:
    # vLLM captures passes of up to min(2 x max_num_seqs, 512) = 512 tokens (vllm-project/vllm PR #20628)
    kw = dict(gen_len=2)
    for batch, prompt in ((1, 512), (2, 256)):  # 512 tokens: replayed, as with no uncaptured prefill at all
        r = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=batch, prompt_len=prompt, **kw)
        graphed = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=batch, prompt_len=prompt,
                                  prefill_dispatch_s=0, **kw)
        assert r.ttft_s == graphed.ttft_s
        none = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=batch, prompt_len=prompt,
                               prefill_graph_tokens=0, **kw)
        assert none.ttft_s > r.ttft_s  # with no captured sizes the same pass pays host dispatch
    over = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=513, **kw)
    graphed = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=513, prefill_dispatch_s=0, **kw)
    assert over.ttft_s > graphed.ttft_s
    # serve() prices its steps by the same rule: one 300-token request alone takes simulate()'s prefill
    s = llmsim.serve("llama-3.1-8b", "h100-sxm", request_rate=0.01, arrival="constant", prompt_len=300, gen_len=2,
                     num_requests=2, async_scheduling=False, frontend_s=0)
    one = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=1, prompt_len=300, gen_len=2)
    assert s.ttft_s.p50 == pytest.approx(one.ttft_s, rel=1e-6)


def test_bad_graph_token_counts_name_the_field() -> None:
    for bad in (-1, 1.5, True, "512"):
        with pytest.raises(OptionError, match="prefill_graph_tokens"):
            llmsim.simulate("llama-3.1-8b", "h100-sxm", prefill_graph_tokens=bad)


def test_an_uncaptured_pass_takes_the_longer_of_its_kernels_and_its_host_dispatch_as_a_whole() -> None:
    """CUDA launches are asynchronous: the host queues a pass's kernels ahead, so long kernels hide the dispatch of
    short ones (timing.host_bound). MiniMax-M2.5 NVFP4 on 4 B300s under vLLM, 1,024 tokens (uncaptured above 512):
    per layer, the two expert GEMMs (about 113 and 58 us) outlast their 44.5 us of dispatch, the 14 other kernels
    do not; per op the longer of the two would count every expert GEMM whole on top of 14 x 44.5 us."""
    from llmsim.timing.host_bound import host_excess_s, with_host_dispatch

    spec, hw, cost, ex = resolve("minimax-m2.5-nvfp4", "b300", engine="vllm", tensor_parallel=4)
    totals = prefill_totals(spec, Roofline(hw, ex), cost, 1, 1024)
    kernels = _kernels(totals)
    assert kernels == 997  # 16 in each of 62 layers; the embedding, its all-reduce, the norm, LM head, its all-gather
    # host-bound: the pass takes vLLM's 0.4 ms of host work per step (engine.step, on the same thread before it
    # dispatches) + 997 x 44.5 us = 44.767 ms, its kernels (about 20 ms) hidden behind the dispatch
    assert totals.total("time_s") == pytest.approx(0.4e-3 + 997 * 44.5e-6, rel=1e-9)
    kernels_only = prefill_totals(spec, Roofline(hw, ex), cost, 1, 1024, host_bound=False)
    assert 15e-3 < kernels_only.total("time_s") < 25e-3
    # the excess, 44.367 ms - the kernels' time, is charged by launches: the gate/up GEMM's 62 launches get 62 / 997
    excess = 997 * 44.5e-6 - (kernels_only.total("time_s") - 0.4e-3)
    by_name = dict(zip(totals.names, totals.per_op["time_s"]))
    kernels_by_name = dict(zip(kernels_only.names, kernels_only.per_op["time_s"]))
    gate_up = "layers.mlp.experts.gate_up_proj"
    assert by_name[gate_up] == pytest.approx(kernels_by_name[gate_up] + excess * 62 / 997, rel=1e-9)
    # the serving step of the same pass, composed from its parts, takes the same
    served = llmsim.serve("minimax-m2.5-nvfp4", "b300", engine="vllm", tensor_parallel=4, concurrency=1,
                          prompt_len=1024, gen_len=4, num_requests=2, frontend_s=0)
    assert served.step_log["time_s"][0] == pytest.approx(0.4e-3 + 997 * 44.5e-6, rel=1e-9)
    # 8,192 tokens: the kernels outlast the dispatch, and the pass is its kernels alone
    long = prefill_totals(spec, Roofline(hw, ex), cost, 1, 8192)
    long_kernels = prefill_totals(spec, Roofline(hw, ex), cost, 1, 8192, host_bound=False)
    assert long_kernels.total("time_s") > 0.4e-3 + 997 * 44.5e-6
    assert long.total("time_s") == long_kernels.total("time_s")
    # the rule itself: max(gpu, host) on a GPU's asynchronous queue, gpu + host where there is none
    assert host_excess_s(0.03, 0.05, True) == pytest.approx(0.02) and host_excess_s(0.06, 0.05, True) == 0.0
    assert host_excess_s(0.06, 0.05, False) == 0.05
    times, overheads = with_host_dispatch([1.0, 3.0], [0.0, 0.5], [1.0, 3.0], 2.0, True)  # host 8 s, kernels 4 s
    assert times == [2.0, 6.0] and overheads == [1.0, 3.5]  # the 4 s excess split 1 : 3 by launches
    # an op of the engine's host work (engine.step, no launches) is outside the maximum: kernels 3 s, host 8 s
    times, _ = with_host_dispatch([1.0, 3.0], [1.0, 0.0], [0.0, 4.0], 2.0, True, True, [True, False])
    assert times == [1.0, 8.0]  # 1 s of host work + max(3 s, 8 s)
