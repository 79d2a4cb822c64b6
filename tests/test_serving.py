"""serve(): an engine under load. Invariants of the scheduler and its agreement with simulate().

References: simulate() (the static-batch cost model, itself pinned to transformers and FlopCounterMode) for
the step times; the scheduling rules of vLLM's V1 scheduler for the step composition.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import llmsim
from llmsim.errors import AssumptionWarning, OptionError

MODEL, GPU = "llama-3.1-8b", "h100-sxm"


def test_low_rate_matches_simulate_at_batch_one() -> None:
    # requests 1000 s apart never meet: each one's TTFT is simulate()'s prefill, its TPOT the decode mean (the
    # engine alone: frontend_s=0; by default vLLM's frontend adds 4 ms to each TTFT and end-to-end latency)
    s = llmsim.simulate(MODEL, GPU, batch_size=1, prompt_len=2048, gen_len=64)
    r = llmsim.serve(MODEL, GPU, request_rate=0.001, arrival="constant", prompt_len=2048, gen_len=64,
                     num_requests=5, frontend_s=0)
    assert r.ttft_s.max == pytest.approx(s.ttft_s, rel=1e-3)  # grids interpolated: within 0.1 %
    assert r.ttft_s.p50 == pytest.approx(s.ttft_s, rel=1e-3)
    assert r.tpot_s.mean == pytest.approx(s.tpot_s, rel=1e-3)
    assert r.e2e_s.mean == pytest.approx(s.e2e_s, rel=1e-3)
    default = llmsim.serve(MODEL, GPU, request_rate=0.001, arrival="constant", prompt_len=2048, gen_len=64,
                           num_requests=5)
    assert default.ttft_s.p50 == pytest.approx(r.ttft_s.p50 + 4e-3, abs=1e-12)


def test_every_request_finishes_with_its_tokens() -> None:
    r = llmsim.serve(MODEL, GPU, request_rate=50.0, prompt_len="lognormal:800:600", gen_len="uniform:1:300",
                     num_requests=400, seed=3)
    req = r.requests
    assert np.all(np.isfinite(req["finish_s"])) and np.all(np.isfinite(req["first_token_s"]))
    assert np.all(req["first_token_s"] >= req["arrival_s"]) and np.all(req["finish_s"] >= req["first_token_s"])
    steps = r.step_log
    # conservation: every prompt token prefilled once (no preemption here), every other token decoded once
    assert r.preemptions == 0
    assert steps["prefill_tokens"].sum() == req["prompt_len"].sum()
    assert steps["decode_requests"].sum() == (req["gen_len"] - 1).sum()
    # steps run back to back while busy, never overlapping
    ends = steps["start_s"] + steps["time_s"]
    assert np.all(steps["start_s"][1:] >= ends[:-1] - 1e-12)


def test_fixed_concurrency_steady_state_is_a_static_batch() -> None:
    # 16 clients, equal lengths, all starting together: the first 16 prefill in one step (16 x 256 = 4096
    # tokens <= 8192), then decode in lock-step as one static batch of 16
    s = llmsim.simulate(MODEL, GPU, batch_size=16, prompt_len=256, gen_len=33)
    r = llmsim.serve(MODEL, GPU, concurrency=16, prompt_len=256, gen_len=33, num_requests=16, frontend_s=0)
    steps = r.step_log
    assert steps["prefill_tokens"][0] == 16 * 256
    assert r.ttft_s.max == pytest.approx(s.ttft_s, rel=1e-3)
    decode_s = steps["time_s"][1:]
    assert len(decode_s) == 32 and np.all(steps["decode_requests"][1:] == 16)
    assert decode_s.sum() == pytest.approx(s.decode.time_s, rel=1e-3)
    assert r.tpot_s.mean == pytest.approx(s.tpot_s, rel=1e-3)


def test_the_serving_frontend_adds_its_time_per_request_to_ttft_and_e2e_only() -> None:
    """A benchmark client's TTFT includes the server's frontend (HTTP, tokenization, hand-offs, streaming): vLLM
    4 ms (tenstorrent/tt-inference-server #190: offline 231 -> online 235 ms), SGLang 6.9 ms (#3560: median TTFT
    9.54 ms over a 2.632 ms mock forward pass), TensorRT-LLM none. One client at a time (nothing queues at the
    frontend, the engine idle when each request reaches it): exactly that much more TTFT and e2e, TPOT untouched."""
    kw = {"concurrency": 1, "num_requests": 4, "prompt_len": 512, "gen_len": 16}
    for engine, frontend in (("vllm", 4e-3), ("sglang", 6.9e-3), ("trtllm", 0.0)):
        default = llmsim.serve("llama-3.1-8b", "h100-sxm", engine=engine, **kw)
        off = llmsim.serve("llama-3.1-8b", "h100-sxm", engine=engine, frontend_s=0, **kw)
        assert default.ttft_s.mean == pytest.approx(off.ttft_s.mean + frontend, abs=1e-12)
        assert default.e2e_s.mean == pytest.approx(off.e2e_s.mean + frontend, abs=1e-12)
        assert default.tpot_s.mean == pytest.approx(off.tpot_s.mean, abs=1e-15)
        assert (f"{frontend * 1e3:.1f} ms per request" in default.assumptions["frontend"]) == (frontend > 0)
    given = llmsim.serve("llama-3.1-8b", "h100-sxm", frontend_s=0.02, **kw)  # vLLM, 20 ms as given
    off = llmsim.serve("llama-3.1-8b", "h100-sxm", frontend_s=0, **kw)
    assert given.ttft_s.p50 == pytest.approx(off.ttft_s.p50 + 0.02, abs=1e-12)


def test_the_frontend_takes_one_request_at_a_time() -> None:
    """serving.frontend: a FIFO server. Four requests sent together with 4 ms each reach the engine at 4, 8, 12 and
    16 ms; one sent after it is free waits for nothing: ready = max(sent, previous ready) + 4 ms."""
    from llmsim.serving.frontend import Frontend

    f = Frontend(4e-3)
    assert f.admit_all(np.zeros(4)) == pytest.approx([4e-3, 8e-3, 12e-3, 16e-3], abs=1e-15)
    assert f.admit(0.010) == pytest.approx(0.020, abs=1e-15)  # sent at 10 ms, the server busy until 16 ms
    assert f.admit(1.0) == pytest.approx(1.004, abs=1e-15)
    # the closed form agrees with admitting one at a time, from a busy server too
    sent = np.array([0.0, 0.001, 0.001, 0.03, 0.031, 0.5])
    one, many = Frontend(4e-3), Frontend(4e-3)
    one.free_s = many.free_s = 0.002
    assert many.admit_all(sent) == pytest.approx([one.admit(t) for t in sent], abs=1e-15)
    assert Frontend(0.0).admit_all(sent) == pytest.approx(sent, abs=0)  # off: the engine sees them when sent
    # four clients at once through a 1 s frontend: the engine sees them a second apart, so the k-th request's
    # first token comes about k seconds after it was sent (its prefill alone takes milliseconds)
    r = llmsim.serve("llama-3.1-8b", "h100-sxm", concurrency=4, num_requests=4, prompt_len=512, gen_len=4,
                     frontend_s=1.0)
    ttft = np.sort(r.to_pandas()["ttft_s"].to_numpy())
    assert ttft == pytest.approx([1, 2, 3, 4], abs=0.05)


def test_a_ramped_clients_next_request_waits_only_for_requests_sent_before_it() -> None:
    """A closed loop's first requests are known up front (each client's at its point of the ramp); a request sent
    as another finishes queues at the frontend behind those sent before it, not behind a later client's first one.
    Before session 33 it queued behind every first request: 5 clients ramped over 100 s, vLLM's 4 ms frontend,
    and a client's second request, sent at 0.84 s, reached the engine at 80 s (TTFT p99 69 s)."""
    from llmsim.serving.frontend import Frontend

    f = Frontend(1.0)
    assert f.admit_all(np.array([0.0, 10.0, 20.0])) == pytest.approx([1.0, 11.0, 21.0])
    assert f.admit(5.0) == pytest.approx(6.0)  # behind the one sent at 0 (done at 1): max(5, 1) + 1
    assert f.admit(10.5) == pytest.approx(12.0)  # behind the one sent at 10 (done at 11)
    assert f.admit(10.6) == pytest.approx(13.0)  # and behind the one admit() took before it
    kw = dict(concurrency=5, num_requests=50, prompt_len=512, gen_len=64, ramp_s=100.0)
    ramped, off = llmsim.serve(MODEL, GPU, **kw), llmsim.serve(MODEL, GPU, frontend_s=0, **kw)
    # the clients hardly meet: each request's TTFT is its own prefill and wait plus 4 ms (8 ms if two meet)
    assert (ramped.requests["ttft_s"] - off.requests["ttft_s"]).max() < 0.0085
    assert (ramped.requests["ttft_s"] - off.requests["ttft_s"]).min() > 0.0039


def test_inter_token_latency_counts_the_prefill_only_steps_a_decode_waits_through() -> None:
    """A request's gaps between tokens sum to finish - first token, so with equal lengths the token-weighted mean
    ITL is the mean TPOT, and the largest gap is at least the mean. SGLang's prefill-first steps hold decodes back
    while 30,000-token prompts start: before session 33 ITL counted only the steps that decoded (mean 7.9 ms,
    TPOT 43.1 ms for Mistral-7B)."""
    kw = dict(concurrency=8, num_requests=16, prompt_len=30_000, gen_len=100)
    r = llmsim.serve(MODEL, GPU, engine="sglang", **kw)
    assert r.itl_s.mean == pytest.approx(r.tpot_s.mean, rel=1e-9)
    assert r.itl_s.max >= r.tpot_s.mean > 2 * r.itl_s.p50  # a few long stalls, most gaps one decode step
    # mixed steps (vLLM): every running request decodes in every step, each gap that step's time, as before
    from llmsim.serving.scheduler import percentile_summary

    v = llmsim.serve(MODEL, GPU, engine="vllm", **kw)
    old = percentile_summary(v.step_log["time_s"], v.step_log["decode_requests"])
    assert v.itl_s.mean == pytest.approx(old["mean"], rel=1e-9) == pytest.approx(v.tpot_s.mean, rel=1e-9)


def test_a_serving_result_says_which_ops_the_measured_tables_timed() -> None:
    # as simulate() does: an NVFP4 checkpoint on an H200 has no measured fp4 GEMM table (its GEMMs on the roofline),
    # which a serving run said nothing of before session 33
    r = llmsim.serve("qwen3-32b-nvfp4", "h200", concurrency=2, num_requests=2, prompt_len=256, gen_len=8)
    assert "measured tables: decode_attention, gemm, prefill_attention" in r.assumptions["kernel times"]
    assert "roofline: no nvfp4_wo GEMM table for engine vllm on h200" in r.assumptions["kernel times"]
    plain = llmsim.serve(MODEL, GPU, concurrency=2, num_requests=2, prompt_len=256, gen_len=8)
    assert "roofline" not in plain.assumptions["kernel times"]


def test_a_result_read_back_from_json_says_it_has_no_per_request_data() -> None:
    # the per-request and per-step arrays are private (not serialized): the summary survives the round trip, and
    # asking a reloaded result for requests, steps or a goodput objective is one clear error (a raw KeyError and
    # empty frames before session 33)
    r = llmsim.serve(MODEL, GPU, concurrency=4, num_requests=8, prompt_len=256, gen_len=16)
    back = llmsim.ServingResult.model_validate_json(r.model_dump_json())
    assert back.ttft_s == r.ttft_s and back.goodput() == pytest.approx(r.goodput())
    for ask in (lambda: back.goodput(ttft_s=1.0), back.to_pandas, back.steps_to_pandas, lambda: back.requests,
                lambda: back.step_log):
        with pytest.raises(OptionError, match="no per-request data"):
            ask()


def test_a_prefill_step_runs_at_the_sustained_clock_past_the_onset() -> None:
    # one request of 4096 tokens: its prefill step is one pass whose compute-bound seconds C (about 80 ms at the
    # boost clock, simulate()'s prefill compute part) run past the onset at the sustained clock
    # (hardware/h100-sxm.toml [sustained]: fraction 0.795, onset 5 ms): (C - 0.005) * (1 / 0.795 - 1) more
    kw = dict(concurrency=1, prompt_len=4096, gen_len=16, num_requests=1, frontend_s=0)  # the engine alone
    hot, boost = llmsim.serve(MODEL, GPU, **kw), llmsim.serve(MODEL, GPU, clock="boost", **kw)
    c = llmsim.simulate(MODEL, GPU, batch_size=1, prompt_len=4096, gen_len=2, clock="boost").prefill.compute_s
    assert c > 0.05
    first_hot, first_boost = hot.step_log["time_s"][0], boost.step_log["time_s"][0]
    # (the step's C leaves out its LM head, a fraction of a microsecond here: rel 1e-4)
    assert first_hot - first_boost == pytest.approx((c - 0.005) * (1 / 0.795 - 1), rel=1e-4)
    # decode-only steps are not throttled; the same prefill in simulate() is stretched alike
    np.testing.assert_array_equal(hot.step_log["time_s"][1:], boost.step_log["time_s"][1:])
    assert hot.ttft_s.mean == pytest.approx(llmsim.simulate(MODEL, GPU, batch_size=1, prompt_len=4096,
                                                            gen_len=16).ttft_s, rel=1e-3)


def test_kv_in_use_never_exceeds_capacity_and_preemption_recomputes() -> None:
    # a small utilisation leaves little KV: requests are preempted, recomputed, and all still finish
    r = llmsim.serve(MODEL, GPU, concurrency=64, prompt_len=1024, gen_len=512, num_requests=128,
                     gpu_memory_utilization=0.3)
    steps = r.step_log
    capacity_blocks = r.kv_cache_tokens // r.block_size
    assert steps["kv_blocks_used"].max() <= capacity_blocks
    assert r.preemptions > 0
    assert np.all(np.isfinite(r.requests["finish_s"]))
    # recompute: preempted requests prefill their prompt and generated tokens again
    assert steps["prefill_tokens"].sum() > r.requests["prompt_len"].sum()


def test_tensorrt_llm_starts_a_request_only_when_its_whole_output_fits() -> None:
    # TensorRT-LLM's default capacity policy (GUARANTEED_NO_EVICT) reserves each request's prompt and maximum
    # output at admission: at most floor(kv_blocks / ceil((1024 + 512) / block)) run at once and none is preempted;
    # vLLM's rule admits on the prompt's blocks and preempts when decoding runs out (the test above)
    kw = dict(concurrency=64, prompt_len=1024, gen_len=512, num_requests=128, gpu_memory_utilization=0.1)
    r = llmsim.serve(MODEL, GPU, engine="trtllm", **kw)
    blocks = r.kv_cache_tokens // r.block_size
    footprint = -(-(1024 + 512) // r.block_size)  # 48 blocks of 32 tokens
    assert r.preemptions == 0
    assert r.step_log["running"].max() == min(64, blocks // footprint)
    assert r.step_log["kv_blocks_used"].max() <= blocks
    assert "GUARANTEED_NO_EVICT" in r.assumptions["scheduler"]
    loose = llmsim.serve(MODEL, GPU, engine="trtllm", reserve_output=False, **kw)  # MAX_UTILIZATION
    assert loose.preemptions > 0 and loose.step_log["running"].max() > blocks // footprint
    with pytest.raises(OptionError, match="reserve_output='yes'"):
        llmsim.serve(MODEL, GPU, engine="trtllm", reserve_output="yes", **kw)


def test_tensorrt_llm_prefills_each_prompt_whole_by_default() -> None:
    # TensorRT-LLM's enable_chunked_prefill defaults to False (tensorrt_llm/llmapi/llm_args.py): two 3000-token
    # prompts sent together with a 5000-token budget run one per step (3000, then 3000 beside the first one's
    # decode); with chunked_prefill=True the second is cut to the 5000 - 3000 = 2000 tokens left and ends next step
    kw = dict(concurrency=2, prompt_len=3000, gen_len=3, num_requests=2, max_num_batched_tokens=5000, frontend_s=0)
    whole = llmsim.serve(MODEL, GPU, engine="trtllm", **kw)
    assert whole.step_log["prefill_tokens"].tolist()[:2] == [3000, 3000]
    assert whole.step_log["decode_requests"].tolist()[:2] == [0, 1]
    assert "no chunked prefill" in whole.assumptions["scheduler"]
    chunked = llmsim.serve(MODEL, GPU, engine="trtllm", chunked_prefill=True, **kw)
    assert chunked.step_log["prefill_tokens"].tolist()[:2] == [5000, 1000]
    # vLLM chunks by default; chunked_prefill=False holds it to whole prompts as well
    assert llmsim.serve(MODEL, GPU, **kw).step_log["prefill_tokens"].tolist()[:2] == [5000, 1000]
    assert llmsim.serve(MODEL, GPU, chunked_prefill=False, **kw).step_log["prefill_tokens"].tolist()[:2] == [3000, 3000]
    # a prompt no step can hold whole is refused (TensorRT-LLM rejects it), naming the budget and the way out
    with pytest.raises(OptionError, match="a prompt of 9000 tokens exceeds max_num_batched_tokens=8192"):
        llmsim.serve(MODEL, GPU, engine="trtllm", concurrency=1, prompt_len=9000, gen_len=2, num_requests=1)
    with pytest.raises(OptionError, match="chunked_prefill='no' must be True"):
        llmsim.serve(MODEL, GPU, engine="trtllm", chunked_prefill="no", **kw)
    # a disaggregated prefill pool alike: refused whole, served in chunks when asked to
    pools = dict(prefill={"replicas": 1}, decode={"replicas": 1}, engine="trtllm", concurrency=1, prompt_len=9000,
                 gen_len=2, num_requests=1)
    with pytest.raises(OptionError, match="prefill pool: a prompt of 9000 tokens exceeds"):
        llmsim.serve_disaggregated(MODEL, GPU, **pools)
    assert llmsim.serve_disaggregated(MODEL, GPU, chunked_prefill=True, **pools).ttft_s.mean > 0


def test_long_prompts_are_prefilled_in_chunks() -> None:
    # a 20000-token prompt with a 8192-token budget: chunks of 8192, 8192 and 3616 over three steps
    r = llmsim.serve(MODEL, GPU, request_rate=0.001, prompt_len=20000, gen_len=2, num_requests=1)
    assert r.step_log["prefill_tokens"].tolist() == [8192, 8192, 3616, 0]
    s = llmsim.simulate(MODEL, GPU, batch_size=1, prompt_len=20000, gen_len=2)
    # the chunks cost what the whole prefill costs plus two extra passes over the weights and launches
    assert s.ttft_s < r.ttft_s.p50 < 1.2 * s.ttft_s


def test_higher_rate_never_lowers_latency() -> None:
    previous = None
    for rate in (2.0, 8.0, 32.0, 128.0):
        r = llmsim.serve(MODEL, GPU, request_rate=rate, arrival="constant", prompt_len=1024, gen_len=128,
                         num_requests=300)
        current = (r.ttft_s.mean, r.tpot_s.mean, r.e2e_s.mean)
        if previous is not None:
            assert all(c >= p * (1 - 1e-9) for c, p in zip(current, previous))
        previous = current


def test_seed_reproduces_and_goodput_counts_requests_meeting_slos() -> None:
    a = llmsim.serve(MODEL, GPU, request_rate=20.0, prompt_len="normal:1000:300", gen_len=100, num_requests=200,
                     seed=7)
    b = llmsim.serve(MODEL, GPU, request_rate=20.0, prompt_len="normal:1000:300", gen_len=100, num_requests=200,
                     seed=7)
    assert a.model_dump() == b.model_dump()
    assert a.goodput() == pytest.approx(200 / a.duration_s)
    ttft = a.requests["ttft_s"]
    limit = float(np.median(ttft))
    assert a.goodput(ttft_s=limit) == pytest.approx(np.sum(ttft <= limit) / a.duration_s)


def test_tensor_parallel_and_engines_run() -> None:
    r = llmsim.serve("llama-3.1-70b", GPU, engine="sglang", tensor_parallel=4, concurrency=8, prompt_len=512,
                     gen_len=32, num_requests=16)
    assert r.gpus == 4 and r.engine == "sglang" and r.max_num_batched_tokens == 8192
    assert "TTFT" in str(r)


def test_lengths_from_csv(tmp_path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("input_len,output_len\n100,5\n300,7\n")
    r = llmsim.serve(MODEL, GPU, concurrency=2, lengths_csv=str(path), num_requests=3)
    assert r.requests["prompt_len"].tolist() == [100, 300, 100]
    assert r.requests["gen_len"].tolist() == [5, 7, 5]
    # a spreadsheet's CSV: a byte-order mark before the first name, a space after each comma (refused before
    # session 33: "it has ['gen_len', '\ufeffprompt_len']")
    excel = tmp_path / "excel.csv"
    excel.write_bytes("prompt_len, gen_len\r\n100, 5\r\n300, 7\r\n".encode("utf-8-sig"))
    r = llmsim.serve(MODEL, GPU, concurrency=2, lengths_csv=str(excel), num_requests=3)
    assert r.requests["prompt_len"].tolist() == [100, 300, 100] and r.requests["gen_len"].tolist() == [5, 7, 5]
    # without num_requests, every row once (it was the first 1000 rows of any trace, silently)
    r = llmsim.serve(MODEL, GPU, concurrency=2, lengths_csv=str(excel))
    assert r.num_requests == 2 and r.requests["prompt_len"].tolist() == [100, 300]
    # which column to read would be a guess: refused, naming what is wrong
    for text, match in (("prompt_len,gen_len,prompt_len\n100,10,5\n", "names the column 'prompt_len' twice"),
                        ("prompt_len,gen_len,input_len,output_len\n100,10,5,5\n", "has both prompt_len/gen_len"),
                        ("prompt_len,gen_len\n100,10,5\n", "line 2 has 3 fields, the header 2"),
                        ("prompt_len,gen_len\n100,10\n200\n", "line 3 has 1 fields, the header 2")):
        bad = tmp_path / "bad.csv"
        bad.write_text(text)
        with pytest.raises(OptionError, match=match):
            llmsim.serve(MODEL, GPU, concurrency=2, lengths_csv=str(bad))


@pytest.mark.parametrize(("kwargs", "field"), [
    ({}, "request_rate"),
    ({"request_rate": 1.0, "concurrency": 2}, "request_rate"),
    ({"request_rate": -1.0}, "request_rate"),
    ({"request_rate": float("nan")}, "request_rate"),
    ({"concurrency": 0}, "concurrency"),
    ({"concurrency": 2, "num_requests": 0}, "num_requests"),
    ({"concurrency": 2, "prompt_len": "zipf:1:2"}, "prompt_len"),
    ({"concurrency": 2, "prompt_len": "uniform:5"}, "prompt_len"),
    ({"concurrency": 2, "gen_len": 0}, "gen_len"),
    ({"concurrency": 2, "gen_len": [1, 2.5]}, "gen_len"),
    ({"request_rate": 1.0, "arrival": "bursty"}, "arrival"),
    ({"request_rate": 1.0, "arrival": "gamma", "burstiness": 0}, "burstiness"),
    ({"concurrency": 2, "gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
    ({"concurrency": 2, "max_num_seqs": 0}, "max_num_seqs"),
    ({"concurrency": 2, "prompt_len": 200000}, "max_position_embeddings"),
    ({"concurrency": 2, "lengths_csv": "/nonexistent.csv"}, "lengths_csv"),
    ({"concurrency": 2, "ramp_s": -1}, "ramp_s"),
    ({"concurrency": 2, "engine": "tgi"}, "engine"),
])
def test_bad_inputs_are_refused_in_one_line(kwargs, field) -> None:
    with pytest.raises(OptionError) as info:
        llmsim.serve(MODEL, GPU, **kwargs)
    message = str(info.value)
    assert field in message and "\n" not in message


def test_a_model_that_leaves_no_kv_cache_is_refused() -> None:
    # 70B in bf16 on one 80 GB GPU: the weights alone (131.4 GiB) exceed it
    with pytest.raises(OptionError, match=r"the weights alone \(131\.4 GiB per GPU\) exceed its 80\.0 GiB"):
        llmsim.serve("llama-3.1-70b", GPU, concurrency=1, prompt_len=1000, gen_len=10, num_requests=1)
    # on two, 65.7 GiB each fit, but 0.9 x 80 GB leaves no room for the KV cache of the request
    with pytest.raises(OptionError, match="KV cache holds"):
        llmsim.serve("llama-3.1-70b", GPU, tensor_parallel=2, concurrency=1, prompt_len=1000, gen_len=10,
                     num_requests=1, gpu_memory_utilization=0.8)


def test_cli_serve_prints_the_table_and_writes_the_plot(tmp_path, capsys) -> None:
    from llmsim.cli import main

    out = tmp_path / "serve.png"
    code = main(["serve", MODEL, "--hardware", GPU, "--request-rate", "4", "--prompt-len", "uniform:100:400",
                 "--gen-len", "32", "--num-requests", "50", "--plot", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "TTFT" in text and "p99" in text
    assert out.stat().st_size > 10_000  # a PNG with three panels
    assert main(["serve", MODEL, "--hardware", GPU, "--concurrency", "2", "--prompt-len", "zipf:1:2"]) == 2
    assert "prompt_len" in capsys.readouterr().err


def test_validation_rows_are_simulated_or_skipped_with_a_reason() -> None:
    import csv
    from pathlib import Path

    from llmsim.validation.serving import _why_not, compare_serving

    fixture = Path(__file__).parent / "fixtures" / "serving" / "silicon_sample_rows.csv"
    c = compare_serving(fixture)
    assert [r["model"] for r in c.rows] == ["llama-3.1-8b", "llama-3.1-70b", "kimi-k2.5-nvfp4", "minimax-m2.5",
                                           "deepseek-v3", "llama-3.1-70b", "llama-3.1-8b"]
    reasons = [reason for _, reason in c.skipped]
    assert any("worker counts" in r for r in reasons)
    # GB200, TRT-LLM: 1 prefill worker of tp_size 1 x attention_dp_size 4 (moe_ep 4), 4 decode workers of TP8
    kimi = c.rows[2]
    assert kimi["mode"] == "disagg" and kimi["attention_dp"] == 4 and kimi["tp"] == 8 and kimi["concurrency"] == 4
    with fixture.open(newline="") as f:
        first = next(csv.DictReader(f))
    assert "not shipped" in str(_why_not({**first, "model_path": "zhipuai/GLM-5"}))  # sparse attention: not costed
    disagg = c.rows[4]  # 36 clients, 1 prefill worker of TP8 and 9 decode workers of TP8 (EP8), H200, TRT-LLM
    assert disagg["mode"] == "disagg" and disagg["concurrency"] == 36 and disagg["tp"] == 8
    assert disagg["measured_tpot_ms"] == pytest.approx(13.39021889249814)
    eight_b = c.rows[0]
    # the measured row: TensorRT-LLM, 8 clients of 1024-in/128-out on one H100, mean TPOT 7.94 ms
    assert eight_b["measured_tpot_ms"] == pytest.approx(7.94357745)
    assert eight_b["tpot_error_pct"] == pytest.approx(100 * (eight_b["tpot_ms"] / 7.94357745 - 1))
    assert abs(eight_b["tpot_error_pct"]) < 25  # a sanity bound on the model, not a fitted figure
    fp4 = c.rows[5]  # vLLM on 4 B200s, W4A4 nvfp4 (gemm_quant_mode nvfp4): costed in nvfp4, KV cache in 16 bits
    assert fp4["precision"] == "nvfp4" and fp4["tp"] == 4
    assert fp4["measured_tpot_ms"] == pytest.approx(7.464780910375318)
    block = c.rows[6]  # SGLang on one H200, gemm_quant_mode fp8_block: the 16-bit config with block-fp8 weights
    assert block["precision"] == "fp8_block" and block["concurrency"] == 160
    assert block["measured_ttft_ms"] == pytest.approx(1612.27)
    # InferenceX's runs (db-dump and dated-csv sources; its disaggregated Kimi and DeepSeek runs too) with its
    # client's lengths, the gap-analysis runs with fixed lengths
    assert [r["protocol"] for r in c.rows] == ["fixed", "inferencex", "inferencex", "inferencex", "inferencex",
                                               "inferencex", "fixed"]
    # an executor (validation/serving.py --jobs) spreads the rows and returns them in the file's order
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        spread = compare_serving(fixture, executor=pool)
    assert spread.rows == c.rows and spread.skipped == c.skipped


def test_a_measurement_the_file_holds_twice_is_counted_once(tmp_path) -> None:
    """InferenceX's runs reach silicon_sample.csv twice, from its database dump and from its dated CSVs, under other
    ids and model names (DeepSeek-V3 / DeepSeek-R1) and one float written two ways: the second copy is skipped."""
    import csv
    from pathlib import Path

    from llmsim.validation.serving import _why_not, compare_serving

    fixture = Path(__file__).parent / "fixtures" / "serving" / "silicon_sample_rows.csv"
    with fixture.open(newline="") as f:
        rows = list(csv.DictReader(f))
    original = next(r for r in rows if _why_not(r) is None and "measured=" in r["silicon_data_source"])
    ttft = float(original["silicon_ttft_ms"])
    copy = {**original, "id": "the_dated_csv_copy", "silicon_ttft_ms": repr(ttft * (1 + 1e-15))}
    other = {**original, "id": "another_run", "silicon_ttft_ms": repr(ttft * 1.01)}  # a different measurement
    path = tmp_path / "rows.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(original))
        writer.writeheader()
        writer.writerows([*rows, copy, other])
    skipped = dict(compare_serving(path, limit=0).skipped)  # limit 0: nothing simulated, every row has a reason
    assert skipped["the_dated_csv_copy"] == f"the same measurement as row {original['id']}: counted once"
    assert skipped["another_run"] == "beyond the limit asked for"
    assert skipped[original["id"]] == "beyond the limit asked for"


def test_a_gap_analysis_copy_of_an_inferencex_run_is_counted_once_under_it(tmp_path) -> None:
    """aiconfigurator's kimi-k2.5 and qwen3.5-397b gap-analysis files repeat InferenceX runs with TTFT and TPOT
    written to 0.01 ms (134.73 for 134.73297602613457): such a row is skipped, under its InferenceX row, wherever
    it stands in the file; a value 0.01 ms off is another run."""
    import csv
    from pathlib import Path

    from llmsim.validation.serving import _why_not, compare_serving, inferencex_copies
    from llmsim.validation.silicon_rows import _from_inferencex

    fixture = Path(__file__).parent / "fixtures" / "serving" / "silicon_sample_rows.csv"
    with fixture.open(newline="") as f:
        rows = list(csv.DictReader(f))
    original = next(r for r in rows if _why_not(r) is None and _from_inferencex(r))
    clients = original["silicon_data_source"].split("silicon_concurrency=")[1].split(";")[0]
    gap = f"source_file=kimi-k2.5-gap-analysis.csv; silicon_concurrency={clients}; aic_database_mode=SILICON"
    ttft, tpot = float(original["silicon_ttft_ms"]), float(original["silicon_tpot_ms"])
    copy = {**original, "id": "gap_copy", "silicon_data_source": gap,
            "silicon_ttft_ms": f"{ttft:.2f}", "silicon_tpot_ms": f"{tpot:.2f}"}
    other = {**copy, "id": "gap_other", "silicon_ttft_ms": f"{ttft + 0.01:.2f}"}  # 0.01 ms off: not the same run
    assert not _from_inferencex(copy)
    assert inferencex_copies([copy, other, *rows]) == {"gap_copy": original["id"]}  # before its original too
    unmeasured = [{**copy, "id": f"gap_{v}", "silicon_ttft_ms": v} for v in ("", "n/a", "nan")]
    twin_nan = {**original, "id": "nan_run", "silicon_ttft_ms": "nan"}  # nan never equals nan: no twin
    assert inferencex_copies([*unmeasured, twin_nan, *rows]) == {}
    path = tmp_path / "rows.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(original))
        writer.writeheader()
        writer.writerows([copy, other, *rows])
    skipped = dict(compare_serving(path, limit=0).skipped)
    assert skipped["gap_copy"] == f"the same measurement as InferenceX row {original['id']} (to 0.01 ms): counted once"
    assert skipped["gap_other"] == "beyond the limit asked for"


def test_inferencex_sglang_recipes_set_the_scheduler_recv_interval() -> None:
    """InferenceX's SGLang recipes on B200 and B300 pass --scheduler-recv-interval (30 at CONC >= 16, else 10; the
    Qwen3.5 fp8 B200 rule changed in April 2026), as each stood when the row was measured; others: 1."""
    from llmsim.validation.serving import inferencex_recv_interval

    def row(clients: int, **fields: str) -> dict[str, str]:
        base = {"backend": "sglang", "mode": "agg", "system": "b200_sxm", "model_path": "deepseek-ai/DeepSeek-R1",
                "gemm_quant_mode": "nvfp4", "tp_size": "8", "attention_dp_size": "1", "batch_size": str(clients),
                "silicon_data_source": f"source_file=2026-03-10.csv; model=x; silicon_concurrency={clients}"}
        return {**base, **fields}

    assert inferencex_recv_interval(row(4)) == 10 and inferencex_recv_interval(row(8)) == 10
    assert inferencex_recv_interval(row(16)) == 30 and inferencex_recv_interval(row(256)) == 30
    assert inferencex_recv_interval(row(64, gemm_quant_mode="fp8", tp_size="4")) == 10  # dsr1_fp8's TP 4 branch
    assert inferencex_recv_interval(row(64, system="h200_sxm")) == 1  # no such flag in the H200 recipes
    assert inferencex_recv_interval(row(64, backend="vllm")) == 1
    assert inferencex_recv_interval(row(64, silicon_data_source="source_file=/x/gap-analysis.csv")) == 1
    qwen = dict(model_path="Qwen/Qwen3.5-397B-A17B", gemm_quant_mode="fp8")
    on = "db-dump/2026-04-30; config_id=1; silicon_concurrency=0; measured={}T00:00:00.000Z"
    for day, clients, expected in (("2026-03-01", 8, 10), ("2026-03-01", 16, 30), ("2026-04-20", 64, 10),
                                   ("2026-04-27", 16, 10), ("2026-04-27", 32, 30), ("2026-04-28", 8, 30),
                                   ("2026-04-28", 4, 10)):
        assert inferencex_recv_interval(row(clients, silicon_data_source=on.format(day), **qwen)) == expected
    assert inferencex_recv_interval(row(64, system="b300_sxm", **qwen)) == 10
    assert inferencex_recv_interval(row(8, model_path="Qwen/Qwen3.5-397B-A17B", gemm_quant_mode="")) == 10


def test_inferencex_recipes_set_the_kv_cache_dtype() -> None:
    """InferenceX's single-node recipes that pass an fp8 KV cache, as each stood on the row's measured= date (not its
    CSV's); disaggregated rows, other engines and recipes without the flag keep the checkpoint's dtype (None)."""
    from llmsim.validation.serving import inferencex_kv_dtype

    def row(engine: str, model: str, system: str, precision: str, day: str = "2026-04-10", **fields: str
            ) -> dict[str, str]:
        source = f"source_file=2026-03-25.csv; model=x; silicon_concurrency=8; measured={day}T02:34:55Z; wip=True"
        return {"backend": engine, "model_path": model, "system": system, "precision": precision, "mode": "agg",
                "silicon_data_source": source, **fields}

    deepseek, minimax = "deepseek-ai/DeepSeek-R1", "MiniMaxAI/MiniMax-M2.5"
    assert inferencex_kv_dtype(row("sglang", deepseek, "b200_sxm", "fp4")) == "fp8"  # dsr1_fp4_b200 fp8_e4m3
    assert inferencex_kv_dtype(row("sglang", deepseek, "h200_sxm", "fp8")) is None  # dsr1_fp8_h200: no flag
    assert inferencex_kv_dtype(row("trtllm", deepseek, "h200_sxm", "fp8")) == "fp8"  # kv_cache_config dtype fp8
    assert inferencex_kv_dtype(row("sglang", "Qwen/Qwen3.5-397B-A17B", "b200_sxm", "bf16")) is None
    # bddbf4031 (2026-04-03) added --kv-cache-dtype fp8 to minimaxm2.5_fp8_b200 with the v0.19.0 image; the row's
    # measured= date decides, not its CSV's (2026-03-25)
    assert inferencex_kv_dtype(row("vllm", minimax, "b200_sxm", "fp8", "2026-04-03")) == "fp8"
    assert inferencex_kv_dtype(row("vllm", minimax, "b200_sxm", "fp8", "2026-03-28")) is None
    assert inferencex_kv_dtype(row("vllm", minimax, "h200_sxm", "fp8")) is None  # fp8 only from 2026-05-26
    assert inferencex_kv_dtype(row("vllm", "openai/gpt-oss-120b", "b200_sxm", "fp4", "2025-11-02")) is None
    assert inferencex_kv_dtype(row("vllm", "openai/gpt-oss-120b", "b200_sxm", "fp4", "2026-02-25")) == "fp8"
    assert inferencex_kv_dtype(row("sglang", deepseek, "b200_sxm", "fp8", mode="disagg")) is None
    assert inferencex_kv_dtype(row("sglang", deepseek, "b200_sxm", "fp8",
                                   silicon_data_source="source_file=/x/gap-analysis.csv")) is None


def test_gap_analysis_rows_run_the_deployment_aiconfigurators_generator_wrote() -> None:
    # aiconfigurator's generator rules (rule_plugin/*.rule at 8745c7714): aggregated max_num_tokens bs + isl + 1500,
    # max_batch_size bs; SGLang --max-prefill-tokens isl + 1500; disaggregated prefill isl + 1500, decode bs
    from llmsim.validation.aiconfigurator_recipes import aiconfigurator_agg_options, aiconfigurator_disagg_pools

    row = {"silicon_data_source": "source_file=/Users/x/aic-auto-gap-analysis/data/h100_sxm/trtllm/1.0.0rc3/a.csv",
           "backend": "trtllm", "mode": "agg", "batch_size": "64.0", "isl": "4096"}
    # 64 + 4096 + 1500 = 5660
    assert aiconfigurator_agg_options(row, "h100-sxm", 1) == {"max_num_seqs": 64, "max_num_batched_tokens": 5660}
    assert aiconfigurator_agg_options({**row, "backend": "vllm"}, "h100-sxm", 1) == {"max_num_seqs": 64,
                                                                         "max_num_batched_tokens": 5660}
    # SGLang: min(its chunked prefill size on an H100, 8192, and 4096 + 1500 = 5596); at isl 8000, 8192 < 9500;
    # a version whose template predates the generator's `agg enable_mixed_chunk = true` keeps SGLang's default
    sglang = {**row, "backend": "sglang", "backend_version": "0.5.1.post1"}
    assert aiconfigurator_agg_options(sglang, "h100-sxm", 1) == {"max_num_seqs": 64, "max_num_batched_tokens": 5596}
    # 0.5.6.post2's template (2026-01-23) came after the rule (2026-01-19): --enable-mixed-chunk
    assert aiconfigurator_agg_options({**sglang, "backend_version": "0.5.6.post2"}, "h100-sxm", 1) == {
        "max_num_seqs": 64, "max_num_batched_tokens": 5596, "mixed_batches": True}
    long_sglang = {**sglang, "isl": "8000"}
    assert aiconfigurator_agg_options(long_sglang, "h100-sxm", 1)["max_num_batched_tokens"] == 8192
    inferencex = {**row, "silicon_data_source": "db-dump/2026-04-27; config_id=733; silicon_concurrency=128"}
    assert aiconfigurator_agg_options(inferencex, "h100-sxm", 1) == {} and aiconfigurator_disagg_pools(inferencex) == {}
    disagg = {**row, "mode": "disagg", "isl": "15000", "prefill_batch_size": "1.0", "decode_batch_size": "80.0"}
    assert aiconfigurator_agg_options(disagg, "h100-sxm", 1) == {}
    # prefill 15000 + 1500 = 16500 tokens, one request a step; decode 80 requests
    assert aiconfigurator_disagg_pools(disagg) == {"prefill": {"max_num_seqs": 1, "max_num_batched_tokens": 16500},
                                                   "decode": {"max_num_seqs": 80, "max_num_batched_tokens": 80}}


def test_gap_analysis_tensorrt_llm_rows_give_the_kv_cache_the_generators_memory_fraction() -> None:
    # every TensorRT-LLM template of aiconfigurator's generator: free_gpu_memory_fraction default(0.80), either mode
    from llmsim.serving.engine_limits import scheduler_limits
    from llmsim.validation.aiconfigurator_recipes import aiconfigurator_engine_options

    row = {"silicon_data_source": "source_file=/Users/x/aic-auto-gap-analysis/data/h100_sxm/trtllm/1.0.0rc3/a.csv",
           "backend": "trtllm", "mode": "agg"}
    assert aiconfigurator_engine_options(row) == {"gpu_memory_utilization": 0.8}
    assert aiconfigurator_engine_options({**row, "mode": "disagg"}) == {"gpu_memory_utilization": 0.8}
    assert aiconfigurator_engine_options({**row, "backend": "vllm"}) == {}  # vLLM's template sets none
    assert aiconfigurator_engine_options({**row, "silicon_data_source": "db-dump/2026-04-27; config_id=7"}) == {}
    # TensorRT-LLM's KV pool is the fraction of the memory left free: 0.8 of it holds 8/9 of 0.9's blocks
    from llmsim.cost.workload import CostOptions
    from llmsim.hardware.spec import load_hardware

    spec, hw = llmsim.load_model("llama-3.1-8b"), load_hardware("h100-sxm")
    blocks = [scheduler_limits(spec, hw, CostOptions(), "trtllm", 4096, gpu_memory_utilization=f).kv_blocks
              for f in (0.9, 0.8)]
    assert abs(blocks[1] / blocks[0] - 0.8 / 0.9) < 1e-3


def test_the_inferencex_client_protocol_is_the_one_its_benchmark_sends() -> None:
    """InferenceX's run_benchmark_serving: --random-range-ratio 0.8 --num-prompts $((CONC * 10)), lengths drawn as
    bench_serving's np.random.randint(int(L * 0.8), L + 1): the integers int(0.8 L)..L, each equally likely."""
    from llmsim.serving.workload import draw_lengths
    from llmsim.validation.serving import client_protocol

    row = {"silicon_data_source": "db-dump/2026-04-27; config_id=733; silicon_concurrency=128; workflow_run_id=758",
           "isl": "8192", "osl": "1024", "batch_size": "128", "attention_dp_size": "1", "mode": "agg"}
    protocol = client_protocol(row)
    # int(0.8 * 8192) = int(6553.6) = 6553; int(0.8 * 1024) = int(819.2) = 819; 10 x 128 clients = 1280 requests
    assert protocol == {"protocol": "inferencex", "prompt_len": "uniform:6553:8192", "gen_len": "uniform:819:1024",
                        "num_requests": 1280}
    dated = {**row, "silicon_data_source": "source_file=2026-04-06.csv; model=Llama-3.1-70B; silicon_concurrency=4",
             "isl": "1024", "osl": "8192", "batch_size": "4"}
    assert client_protocol(dated)["gen_len"] == "uniform:6553:8192" and client_protocol(dated)["num_requests"] == 40
    # aiconfigurator's gap-analysis runs, and any length outside InferenceX's three scenarios: fixed lengths, 10c
    # (aiconfigurator's eval runner: --request-count v * 10): 10 x 128 clients = 1280 requests
    gap = {**row, "silicon_data_source": "source_file=/x/aic-auto-gap-analysis/data/h100_sxm/trtllm/a.csv"}
    assert client_protocol(gap) == {"protocol": "fixed", "prompt_len": 8192, "gen_len": 1024, "num_requests": 1280}
    assert client_protocol({**row, "isl": "2048"})["protocol"] == "fixed"
    # its disaggregated runs: the same client (NVIDIA/srt-slurm's sa-bench)
    assert client_protocol({**row, "mode": "disagg"}) == protocol
    # the drawn lengths stay within int(0.8 L)..L, both ends reachable, mean (6553 + 8192) / 2 = 7372.5
    drawn = draw_lengths("prompt_len", protocol["prompt_len"], 20_000, np.random.default_rng(0))
    assert drawn.min() == 6553 and drawn.max() == 8192
    assert drawn.mean() == pytest.approx(7372.5, rel=0.005)


PLAN = dict(request_rate=30.0, prompt_len=1024, gen_len=64, ttft_slo_s=0.5, tpot_slo_s=0.05, tensor_parallel=[1, 2],
            max_num_seqs=[128], num_requests=150)


def test_plan_serving_finds_the_fewest_gpus_within_the_objectives(tmp_path) -> None:
    from llmsim.report.serving_plot import serving_plan_figure

    p = llmsim.plan_serving(MODEL, GPU, **PLAN)
    serving_plan_figure(p, tmp_path / "plan.png")
    assert (tmp_path / "plan.png").stat().st_size > 10_000
    assert p.best is not None and len(p.candidates) == 2
    for c in p.candidates:
        # the rate found meets the objectives; replicas cover the target rate
        assert c.ttft_p_s <= 0.5 and c.tpot_p_s <= 0.05
        assert c.replicas * c.max_rate_per_replica >= 30.0
        check = llmsim.serve(MODEL, GPU, request_rate=c.max_rate_per_replica, prompt_len=1024, gen_len=64,
                             num_requests=150, tensor_parallel=c.tensor_parallel, max_num_seqs=128)
        assert check.ttft_s.p99 == pytest.approx(c.ttft_p_s) and check.tpot_s.p99 == pytest.approx(c.tpot_p_s)
    assert p.best.gpus == min(c.gpus for c in p.candidates)
    fewer = llmsim.plan_serving(MODEL, GPU, **PLAN, max_gpus=p.best.gpus - 1)  # every shape met: too few GPUs
    assert fewer.best is None and f"needs more than max_gpus={p.best.gpus - 1} GPUs (the fewest: {p.best.gpus})" \
        in fewer.reason  # (it said no shape met the objectives)
    priced = llmsim.plan_serving(MODEL, GPU, **PLAN, usd_per_gpu_hour=2.0)  # the text shows the cost (--json only)
    assert "USD/hour" in str(priced).splitlines()[1]
    for c in priced.candidates:  # 2.0 USD x its GPUs, in its row
        assert c.usd_per_hour == 2.0 * c.gpus and f"{2.0 * c.gpus:.2f}" in str(priced)
    with pytest.raises(OptionError, match="ttft_slo_s, tpot_slo_s"):
        llmsim.plan_serving(MODEL, GPU, request_rate=1.0)
    for bad in ({"tensor_parallel": [0]}, {"max_num_seqs": [2.5]}, {"tensor_parallel": 2}):
        with pytest.raises(OptionError, match="list of integers"):
            llmsim.plan_serving(MODEL, GPU, request_rate=1.0, ttft_slo_s=1.0, **bad)


def test_plan_serving_searches_pipeline_parallel_replicas() -> None:
    p = llmsim.plan_serving(MODEL, GPU, **{**PLAN, "tensor_parallel": [1], "pipeline_parallel": [1, 2]})
    assert sorted(c.pipeline_parallel for c in p.candidates) == [1, 2]
    staged = next(c for c in p.candidates if c.pipeline_parallel == 2)
    assert staged.shape == "TP1 PP2" and staged.gpus == staged.replicas * 1 * 2  # a replica is TP x PP GPUs
    # the rate found is the rate serve() meets the objectives at, with the same two stages
    check = llmsim.serve(MODEL, GPU, request_rate=staged.max_rate_per_replica, prompt_len=1024, gen_len=64,
                         num_requests=150, max_num_seqs=128, pipeline_parallel=2)
    assert check.ttft_s.p99 == pytest.approx(staged.ttft_p_s) and check.tpot_s.p99 == pytest.approx(staged.tpot_p_s)
    with pytest.raises(OptionError, match="pipeline_parallel"):
        llmsim.plan_serving(MODEL, GPU, request_rate=1.0, ttft_slo_s=1.0, pipeline_parallel=[0])


def test_plan_serving_runs_unchanged_on_a_dask_cluster() -> None:
    distributed = pytest.importorskip("distributed")  # in the test extra: a real local cluster, no mock
    with distributed.Client(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as client:
        on_dask = llmsim.plan_serving(MODEL, GPU, executor=client.get_executor(), **PLAN)
    here = llmsim.plan_serving(MODEL, GPU, **PLAN)
    assert on_dask.model_dump() == here.model_dump()


def test_disaggregated_at_low_rate_is_prefill_then_transfer_then_decode() -> None:
    from llmsim.serving.disaggregated import serve_disaggregated

    pre = llmsim.simulate("llama-3.1-70b", GPU, batch_size=1, prompt_len=2048, gen_len=2, tensor_parallel=4)
    dec = llmsim.simulate("llama-3.1-70b", GPU, batch_size=1, prompt_len=2048, gen_len=65, tensor_parallel=2)
    r = serve_disaggregated("llama-3.1-70b", GPU, prefill={"tensor_parallel": 4}, decode={"tensor_parallel": 2},
                            request_rate=0.001, arrival="constant", prompt_len=2048, gen_len=65, num_requests=3,
                            frontend_s=0)  # the engines alone (vLLM's frontend would add 4 ms to TTFT and e2e)
    assert r.mode == "disaggregated" and r.gpus == 6
    # KV of 2048 tokens: 80 layers x 2 (K, V) x 8 KV heads x 128 x 2 bytes x 2048 = 671,088,640 bytes over
    # min(4, 2) = 2 GPU links; 4 + 2 = 6 GPUs fit one 8-GPU HGX board, so NVLink at 450e9 byte/s each = 0.75 ms
    transfer_s = 671_088_640 / (2 * 450e9)
    # vLLM's decode instance recomputes the last prompt token (NixlConnector): once the KV cache has arrived the
    # idle instance admits the request and runs it for one decode step, whose token is the client's first; then
    # 64 more steps for the 64 later tokens: 65 decode steps, the 64 of a static decode at batch 1 and one more
    step_s = dec.decode.time_s / 64  # one decode step at batch 1 near a 2048-token context
    assert r.ttft_s.p50 == pytest.approx(pre.ttft_s + transfer_s + step_s, rel=1e-3)
    assert r.e2e_s.p50 == pytest.approx(pre.ttft_s + transfer_s + 65 * step_s, rel=1e-3)
    assert r.tpot_s.p50 == pytest.approx(step_s, rel=1e-3)  # the 64 later tokens
    assert "recomputes the last prompt token" in r.assumptions["first token"]
    closed = serve_disaggregated("llama-3.1-70b", GPU, prefill={"tensor_parallel": 4}, decode={"tensor_parallel": 2},
                                 concurrency=1, prompt_len=2048, gen_len=65, num_requests=3, frontend_s=0)
    assert closed.ttft_s.p50 == pytest.approx(r.ttft_s.p50, rel=1e-9)  # one client: the event-driven run agrees
    assert closed.e2e_s.p50 == pytest.approx(r.e2e_s.p50, rel=1e-9)


def test_disaggregated_sglang_streams_the_prefill_token_once_the_decode_instance_admits_it() -> None:
    from llmsim.serving.disaggregated import serve_disaggregated

    kw = dict(engine="sglang", tensor_parallel=4)
    pre = llmsim.simulate("llama-3.1-70b", GPU, batch_size=1, prompt_len=2048, gen_len=2, **kw)
    dec = llmsim.simulate("llama-3.1-70b", GPU, batch_size=1, prompt_len=2048, gen_len=65, **kw)
    r = serve_disaggregated("llama-3.1-70b", GPU, prefill={"tensor_parallel": 4}, decode={"tensor_parallel": 4},
                            engine="sglang", request_rate=0.001, arrival="constant", prompt_len=2048, gen_len=65,
                            num_requests=3, frontend_s=0)
    # 80 layers x 2 x 8 KV heads x 128 x 2 bytes x 2048 tokens = 671,088,640 bytes over 4 NVLinks at 450e9 byte/s
    transfer_s = 671_088_640 / (4 * 450e9)
    # the prefill's token reaches the client when the idle decode instance admits the request, which then decodes
    # the 64 later tokens in the 64 steps of a static decode at batch 1
    assert r.ttft_s.p50 == pytest.approx(pre.ttft_s + transfer_s, rel=1e-3)
    assert r.e2e_s.p50 == pytest.approx(pre.ttft_s + transfer_s + dec.decode.time_s, rel=1e-3)
    assert r.assumptions["first token"] == "streamed once the decode instance admits the request"


def test_disaggregated_mla_sends_its_whole_latent_over_every_gpu_link() -> None:
    from llmsim.serving.disaggregated import serve_disaggregated

    kw = dict(request_rate=0.001, arrival="constant", prompt_len=2048, gen_len=2, num_requests=2, frontend_s=0,
              engine="sglang")  # SGLang streams the prefill's token at admission: TTFT = prefill + transfer
    pre = llmsim.simulate("deepseek-v2-lite", GPU, batch_size=1, prompt_len=2048, gen_len=2, tensor_parallel=2,
                          engine="sglang")
    r = serve_disaggregated("deepseek-v2-lite", GPU, {"tensor_parallel": 2}, {"tensor_parallel": 2}, **kw)
    # MLA caches one latent per token that every GPU of the TP group holds whole (not split by heads): 27 layers x
    # (kv_lora_rank 512 + rope 64) x 2 bytes x 2048 tokens = 63,700,992 bytes on each GPU, so each of the 2 GPU
    # pairs sends all of it over its own NVLink (450e9 byte/s; 4 GPUs fit the HGX board): 0.14 ms, not half of it
    transfer_s = 27 * (512 + 64) * 2 * 2048 / 450e9
    assert r.ttft_s.p50 == pytest.approx(pre.ttft_s + transfer_s, rel=1e-3)
    assert "each of 2 GPU pairs sends its share at 450 GB/s" in r.assumptions["KV transfer"]
    # a KV head shared by GPUs is sent whole too: gemma-3-1b has 1 KV head, held by both GPUs of a TP2 group
    one = serve_disaggregated("gemma-3-1b", GPU, {"tensor_parallel": 1}, {"tensor_parallel": 1}, **kw)
    two = serve_disaggregated("gemma-3-1b", GPU, {"tensor_parallel": 2}, {"tensor_parallel": 2}, **kw)
    transfer = [float(x.assumptions["KV transfer"].split(" ms")[0]) for x in (one, two)]
    assert transfer[0] == pytest.approx(transfer[1], abs=0.01)  # the same bytes per GPU link at TP1 and TP2


def test_disaggregated_pools_beyond_one_node_send_the_kv_cache_over_the_network() -> None:
    from llmsim.serving.disaggregated import serve_disaggregated

    kw = dict(request_rate=0.001, arrival="constant", prompt_len=2048, gen_len=2, num_requests=2)
    one_node = serve_disaggregated("llama-3.1-70b", GPU, {"tensor_parallel": 4}, {"tensor_parallel": 4}, **kw)
    two_nodes = serve_disaggregated("llama-3.1-70b", GPU, {"tensor_parallel": 4}, {"replicas": 2,
                                                                                   "tensor_parallel": 4}, **kw)
    # 671,088,640 KV bytes (above) over min(4, 4) = 4 links: 8 GPUs fit the HGX board's NVLink (450e9 byte/s),
    # 12 do not and use the 400 Gb/s NIC per GPU (50e9 byte/s): the second waits 671088640/4 x (1/50e9 - 1/450e9)
    extra_s = 671_088_640 / 4 * (1 / 50e9 - 1 / 450e9)
    assert two_nodes.e2e_s.p50 - one_node.e2e_s.p50 == pytest.approx(extra_s, rel=1e-3)


def test_disaggregated_closed_loop_sends_each_request_when_the_previous_one_finishes() -> None:
    from llmsim.serving.disaggregated import serve_disaggregated

    r = serve_disaggregated(MODEL, GPU, prefill={"replicas": 2}, decode={"replicas": 1}, concurrency=32,
                            prompt_len="uniform:512:1536", gen_len="uniform:16:240", num_requests=400)
    req = r.requests
    arrivals, finishes = np.asarray(req["arrival_s"]), np.asarray(req["finish_s"])
    assert np.all(np.isfinite(finishes))
    # 32 clients, as benchmark_serving's semaphore: 32 sent at once, then request 32 + k the moment the (k + 1)-th
    # request to finish does (lengths differ, so not the moment request k does)
    assert np.all(arrivals[:32] == 0.0)
    np.testing.assert_array_equal(arrivals[32:], np.sort(finishes)[:-32])
    assert not np.array_equal(arrivals[32:], finishes[:-32])
    # Little's law over the run: about 32 requests in the system at a time (the first and last waves aside)
    assert len(arrivals) / finishes.max() == pytest.approx(32 / r.e2e_s.mean, rel=0.1)
    # every engine's steps follow one another; no request is served before it is sent, nor its first token
    # streamed sooner than its prompt alone takes on an idle prefill engine (batch 1, the same tables)
    steps = r.steps_to_pandas()
    for _, one in steps.groupby("instance"):
        start, time_s = one["start_s"].to_numpy(), one["time_s"].to_numpy()
        assert np.all(start[1:] >= start[:-1] + time_s[:-1] - 1e-12)
    alone = {p: llmsim.simulate(MODEL, GPU, batch_size=1, prompt_len=int(p), gen_len=1).ttft_s
             for p in np.unique(req["prompt_len"])[::50]}
    for p, ttft_s in alone.items():
        mine = np.asarray(req["prompt_len"]) == p
        assert np.all(np.asarray(req["first_token_s"])[mine] - arrivals[mine] >= 0.999 * ttft_s)
    with pytest.raises(OptionError, match="per pool"):
        serve_disaggregated(MODEL, GPU, prefill={}, decode={}, concurrency=2, tensor_parallel=2)
    with pytest.raises(OptionError, match="decode"):
        serve_disaggregated(MODEL, GPU, prefill={}, decode={"replicas": 0}, concurrency=2)


def test_disaggregated_coupled_run_is_the_two_pools_run_in_turn_when_nothing_couples_them(monkeypatch) -> None:
    """An open loop: the prefill pool's arrivals do not depend on the decode pool, so the coupled event-driven run
    (a closed loop's) must give what running the prefill engines, then the decode engines, each alone gives."""
    import llmsim.serving.disaggregated as disaggregated

    kw = dict(request_rate=20.0, prompt_len="uniform:500:2000", gen_len="uniform:1:300", num_requests=500)
    pools = dict(prefill={"replicas": 2}, decode={"replicas": 3})
    in_turn = disaggregated.serve_disaggregated(MODEL, GPU, **pools, **kw)
    monkeypatch.setattr(disaggregated, "_OPEN_LOOP_IN_SEQUENCE", False)
    coupled = disaggregated.serve_disaggregated(MODEL, GPU, **pools, **kw)
    assert np.any(np.asarray(in_turn.requests["gen_len"]) == 1)  # one-token requests end at the prefill pool
    for key in ("arrival_s", "first_token_s", "finish_s", "preemptions"):
        np.testing.assert_allclose(coupled.requests[key], in_turn.requests[key], rtol=1e-12, atol=1e-12)
    assert coupled.steps == in_turn.steps


@pytest.mark.parametrize("in_sequence", [True, False])
def test_disaggregated_kv_transfers_queue_on_the_prefill_instances_link(monkeypatch, in_sequence: bool) -> None:
    """A prefill instance's link sends one KV cache at a time: 40 requests of 2,048 tokens at once over a 0.2 GB/s
    link cannot all arrive in less than 40 transfers (each transfer is the run's mean, all prompts alike). Before,
    every transfer ran at full speed beside the others (a new-user audit: 0.67 req/s over a 1 MB/s link carrying
    268 MB per request). Both the in-turn (open loop) and the coupled run queue them, the same way."""
    import llmsim.serving.disaggregated as disaggregated

    monkeypatch.setattr(disaggregated, "_OPEN_LOOP_IN_SEQUENCE", in_sequence)
    r = disaggregated.serve_disaggregated(MODEL, GPU, prefill={}, decode={}, request_rate=1000.0, prompt_len=2048,
                                          gen_len=8, num_requests=40, kv_transfer_bytes_per_s=2e8)
    each_s = float(r.assumptions["KV transfer"].split(" ms mean")[0]) / 1e3  # one request's transfer
    assert each_s > 1.0  # 2,048 tokens x 128 KiB (Llama-3.1-8B's K and V, bf16) / 0.2 GB/s = 1.34 s
    assert r.duration_s >= 40 * each_s * 0.999
    first = np.sort(np.asarray(r.requests["first_token_s"]))
    assert np.all(np.diff(first) >= each_s * 0.999)  # one KV cache at a time reaches the decode instance


def test_async_scheduling_admits_a_request_arriving_mid_step_one_step_later() -> None:
    """vLLM's async scheduling (SGLang's and TensorRT-LLM's overlap schedulers) decides step N + 1 while step N
    runs: a request arriving during step N is first scheduled into step N + 2; without it, into step N + 1."""
    kwargs = dict(request_rate=2.0, arrival="constant", prompt_len=512, gen_len=200, num_requests=2,
                  frontend_s=0)  # the engine sees each request when it is sent
    on = llmsim.serve(MODEL, GPU, **kwargs)  # vLLM's default
    off = llmsim.serve(MODEL, GPU, async_scheduling=False, **kwargs)
    assert "async scheduling" in on.assumptions["scheduler"] and "async" not in off.assumptions["scheduler"]
    arrival = 0.5  # the second request, while the first decodes alone
    for result, later in ((on, 1), (off, 0)):
        steps = result.step_log
        start, time_s, prefill = steps["start_s"], steps["time_s"], steps["prefill_tokens"]
        k = int(np.flatnonzero((start <= arrival) & (arrival < start + time_s))[0])  # the step it arrives in
        assert prefill[k] == 0 and np.all(prefill[k + 1:k + 1 + later] == 0)  # decodes of the first request
        assert prefill[k + 1 + later] == 512  # its prompt, with the first request's decode
        # its first token comes at the end of the step that prefills it
        assert result.requests["first_token_s"][1] == pytest.approx(start[k + 1 + later] + time_s[k + 1 + later])
    # one decode step of the first request alone between the two: the TTFTs differ by that step (and by the
    # first request's one more cached token in the step that prefills the second, a few ns)
    ttft_on = on.requests["first_token_s"][1] - arrival
    ttft_off = off.requests["first_token_s"][1] - arrival
    k = int(np.flatnonzero(on.step_log["start_s"] <= arrival)[-1])
    assert ttft_on - ttft_off == pytest.approx(on.step_log["time_s"][k + 1], rel=1e-4)
    # an idle engine schedules at once: the first request's TTFT is its prefill in both
    assert on.requests["first_token_s"][0] == pytest.approx(off.requests["first_token_s"][0])
    with pytest.raises(OptionError, match="async_scheduling"):
        llmsim.serve(MODEL, GPU, async_scheduling="yes", **kwargs)


def test_a_closed_loop_request_sent_on_a_last_token_misses_the_decision_taken_then() -> None:
    """A client sends its next request when its last token comes; the engine has returned that token and gone on to
    decide its next step before the request is in (TensorRT-LLM's _executor_loop_overlap: responses, then the next
    fetch and schedule), so with no frontend time the request is first scheduled one decision later: into the step
    after the next without async scheduling, two steps after with it (not at once, as a tie would have it)."""
    kwargs = dict(concurrency=2, prompt_len=512, gen_len=[20, 200, 20], num_requests=3,
                  frontend_s=0)  # request 2 is sent when request 0 finishes, while request 1 decodes
    for async_scheduling, skipped in ((False, 1), (True, 2)):
        r = llmsim.serve(MODEL, GPU, async_scheduling=async_scheduling, **kwargs)
        start, time_s, prefill = r.step_log["start_s"], r.step_log["time_s"], r.step_log["prefill_tokens"]
        sent = r.requests["arrival_s"][2]
        assert sent == r.requests["finish_s"][0] > 0
        k = int(np.flatnonzero(np.isclose(start, sent, rtol=0, atol=1e-12))[0])  # the step starting as it is sent
        # steps k .. k + skipped - 1 decode request 1 alone; step k + skipped prefills request 2
        assert np.all(prefill[k:k + skipped] == 0) and prefill[k + skipped] == 512
        assert r.requests["first_token_s"][2] == pytest.approx(start[k + skipped] + time_s[k + skipped])


def test_scheduler_recv_interval_takes_requests_in_every_n_decode_steps() -> None:
    """SGLang's --scheduler-recv-interval N (its SchedulerRecvSkipper: decode steps weigh 1, a step that prefilled
    1000): while requests run, new ones are taken in only after every N decode steps."""
    kwargs = dict(request_rate=2.0, arrival="constant", prompt_len=512, gen_len=200, num_requests=2,
                  async_scheduling=False, frontend_s=0, engine="sglang")  # the engine sees each request when sent
    every = llmsim.serve(MODEL, GPU, **kwargs)
    for n in (10, 30):
        r = llmsim.serve(MODEL, GPU, scheduler_recv_interval=n, **kwargs)
        assert f"after every {n} decode steps" in r.assumptions["scheduler"]
        start, time_s, prefill = r.step_log["start_s"], r.step_log["time_s"], r.step_log["prefill_tokens"]
        assert prefill[0] == 512  # the first request, into an idle engine at once; then it decodes alone
        j = int(np.flatnonzero((start <= 0.5) & (start + time_s > 0.5))[0])  # decode step j: the second arrives
        p = int(np.flatnonzero(prefill[1:])[0]) + 1  # the step that prefills it
        # taken in after decode step p - 1, the first multiple of n at or after j (counted from the prefill)
        assert (p - 1) % n == 0 and j <= p - 1 < j + n
        assert r.requests["first_token_s"][1] > every.requests["first_token_s"][1]
    assert every.step_log["prefill_tokens"][j + 1] == 512  # interval 1: the step after the one it arrives in
    with pytest.raises(OptionError, match="scheduler_recv_interval"):
        llmsim.serve(MODEL, GPU, scheduler_recv_interval=0, **kwargs)
    with pytest.raises(OptionError, match="scheduler_recv_interval=10 is SGLang's --scheduler-recv-interval; engine "
                                          "'vllm' takes requests in before every step"):
        llmsim.serve(MODEL, GPU, scheduler_recv_interval=10, **{**kwargs, "engine": "vllm"})
    # disaggregated: the decode pool takes arriving KV caches in on the same count
    split = {"prefill": {"replicas": 1}, "decode": {"replicas": 1}}
    plain = llmsim.serve_disaggregated(MODEL, GPU, **split, **kwargs)
    slow = llmsim.serve_disaggregated(MODEL, GPU, **split, scheduler_recv_interval=30, **kwargs)
    assert slow.requests["first_token_s"][1] > plain.requests["first_token_s"][1]
    assert slow.requests["first_token_s"][0] == plain.requests["first_token_s"][0]  # the idle pools: at once


def test_prefix_caching_computes_each_shared_prefix_once() -> None:
    # (async_scheduling off: a request then waits for no step in flight, so TTFT is its prefill's alone; the
    # prefill replays CUDA graphs, prefill_dispatch_s=0, so that its time follows its tokens, not host dispatch)
    kwargs = dict(request_rate=5.0, arrival="constant", prompt_len=1200, gen_len=50, num_requests=100,
                  async_scheduling=False, prefill_dispatch_s=0)
    plain = llmsim.serve(MODEL, GPU, **kwargs)
    assert plain.step_log["prefill_tokens"].sum() == 100 * 1200
    r = llmsim.serve(MODEL, GPU, shared_prefix_len=1000, prefix_groups=4, **kwargs)
    # 4 groups: the first request of each computes all 1200 tokens; the other 96 skip the prefix's whole
    # blocks, 1000 // 16 = 62 blocks = 992 tokens: 120000 - 96 * 992 = 24768 tokens prefilled
    assert r.step_log["prefill_tokens"].sum() == 24_768
    assert r.ttft_s.p50 < 0.5 * plain.ttft_s.p50  # 208 tokens after a cached prefix instead of 1200
    # run uncaptured (vLLM's 44.5 us of host dispatch per kernel, its 208 tokens not replayed from a graph) the
    # short prefill is host-bound: less saved
    uncaptured = {**kwargs, "prefill_dispatch_s": None, "prefill_graph_tokens": 0}
    cached = llmsim.serve(MODEL, GPU, shared_prefix_len=1000, prefix_groups=4, **uncaptured)
    assert 0.5 * plain.ttft_s.p50 < cached.ttft_s.p50 < llmsim.serve(MODEL, GPU, **uncaptured).ttft_s.p50
    off = llmsim.serve(MODEL, GPU, shared_prefix_len=1000, prefix_groups=4, prefix_caching=False, **kwargs)
    assert off.model_dump(exclude={"assumptions"}) == plain.model_dump(exclude={"assumptions"})
    with pytest.raises(OptionError, match="shared_prefix_len"):
        llmsim.serve(MODEL, GPU, shared_prefix_len=1200, **kwargs)


def test_kv_in_use_leaves_out_cached_prefixes_no_running_request_holds() -> None:
    """Blocks of cached prefixes that no running request holds are free to any allocation (evicted on demand), as
    vLLM's KV cache usage counts them: with 500 prefix groups for 200 requests the cached prefixes pile up unused,
    and the peak KV use read 43 % against 10 % without prefixes (a new-user audit). Now it stays within the
    running requests' blocks: at most what the same run holds without sharing."""
    kw = dict(request_rate=8.0, num_requests=200, prompt_len=2048, gen_len=128)
    shared = llmsim.serve(MODEL, GPU, shared_prefix_len=1024, prefix_groups=500, **kw)
    plain = llmsim.serve(MODEL, GPU, **kw)
    assert shared.peak_kv_fraction <= plain.peak_kv_fraction * 1.01
    # every step: no more than the running requests' own blocks (each 2,048 + its tokens, 16 per block)
    steps = shared.step_log
    assert np.all(steps["kv_blocks_used"] <= steps["running"] * -(-(2048 + 128) // 16))


def test_cached_prefixes_beyond_the_kv_cache_are_evicted_least_recently_used_first() -> None:
    # 3000 prefixes of 4000 tokens (12 M tokens) against an H100's KV cache for Llama-3.1-8B (about 0.45 M
    # tokens): the engine evicts unheld cached prefixes instead of refusing (it raised "the KV cache cannot hold a
    # single request" before session 33)
    kwargs = dict(engine="vllm", concurrency=64, prompt_len=4096, gen_len=64, num_requests=3000,
                  shared_prefix_len=4000)
    many = llmsim.serve(MODEL, GPU, prefix_groups=3000, **kwargs)
    assert (many.requests["gen_len"] == 64).all() and np.isfinite(many.requests["finish_s"]).all()
    assert many.step_log["kv_blocks_used"].max() <= many.kv_cache_tokens // many.block_size
    off = llmsim.serve(MODEL, GPU, prefix_groups=3000, prefix_caching=False, **kwargs)
    few = llmsim.serve(MODEL, GPU, prefix_groups=40, **kwargs)
    # 40 prefixes stay cached: nearly every prompt computes 4096 - 3984 = 112 tokens; 3000 seldom repeat
    # within the cache (a few hits: draws that repeat a recent prefix)
    assert few.ttft_s.mean < 0.5 * many.ttft_s.mean < many.ttft_s.mean <= off.ttft_s.mean
    assert many.step_log["prefill_tokens"].sum() < off.step_log["prefill_tokens"].sum()


def test_prefix_cache_evicts_the_least_recently_used_prefix_no_request_holds() -> None:
    from llmsim.serving.prefix_cache import PrefixCache

    cache = PrefixCache(groups=[0, 1, 2, 0, -1], hit_blocks=10)  # requests 0..4 and their prefix groups
    assert [cache.store(r) for r in (0, 1, 2, 3, 4)] == [True, True, True, False, False]  # 3: 0's group; 4: none
    assert cache.pinned == 30 and cache.hit(3) == 10  # request 3 hits group 0: now the most recently used
    # held by a running request (ids [1], 10 shared blocks): group 1 stays; LRU order 1, 2, 0 -> 2 goes first
    assert cache.evict(5, cache.in_use(np.array([1]), np.array([10]), 1)) == 10
    assert list(cache.lru) == [1, 0] and cache.pinned == 20 and cache.hit(2) == 0
    assert cache.evictable(set()) == 20 and cache.evict(100, set()) == 20 and cache.pinned == 0


def test_a_draft_models_weights_and_kv_share_the_gpu_memory() -> None:
    # the draft runs on the same GPU: its weights come off the memory before the KV pool, and every cached token
    # holds its KV too. Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B a token;
    # Llama-3.2-1B: 16 x 8 x 64 x 2 x 2 = 32,768 B. Before session 33 the draft took no memory at all.
    from llmsim.analysis.memory import weights_bytes
    from llmsim.cost.workload import CostOptions

    kw = dict(concurrency=2, num_requests=4, prompt_len=256, gen_len=16)
    plain = llmsim.serve(MODEL, GPU, **kw)
    r = llmsim.serve(MODEL, GPU, speculative={"method": "draft", "num_tokens": 4, "acceptance_rate": 0.7,
                                              "draft_model": "llama-3.2-1b"}, **kw)
    draft_weights = weights_bytes(llmsim.load_model("llama-3.2-1b"), CostOptions())  # about 2.47 GB
    expected = (plain.kv_cache_tokens * 131_072 - draft_weights) / (131_072 + 32_768)
    assert abs(r.kv_cache_tokens - expected) <= 2 * 16  # whole blocks of 16 tokens, floored twice
    with pytest.raises(OptionError, match="the draft model's included"):  # a 405B draft beside an 8B target
        llmsim.serve(MODEL, GPU, speculative={"method": "draft", "num_tokens": 4, "acceptance_rate": 0.7,
                                              "draft_model": "llama-3.1-405b"}, **kw)


def test_speculative_decoding_keeps_the_expected_tokens_per_step() -> None:
    base = dict(request_rate=0.01, arrival="constant", prompt_len=1024, gen_len=257, num_requests=2)
    plain = llmsim.serve(MODEL, GPU, **base)
    r = llmsim.serve(MODEL, GPU, speculative={"method": "ngram", "num_tokens": 4, "acceptance_rate": 0.7}, **base)
    # (1 - 0.7**5) / (1 - 0.7) = 2.7731 tokens per step: 256 later tokens take ceil(256 / 2.7731) = 93 steps
    # each, after the prefill step: 2 x 94 steps in all
    assert r.steps == 2 * 94 and plain.steps == 2 * 257
    assert r.requests["gen_len"].tolist() == [257, 257]
    # each step verifies 5 tokens per request: a little dearer than one decode step, 93 instead of 256 of them
    assert plain.tpot_s.p50 * 93 / 256 < r.tpot_s.p50 < 1.2 * plain.tpot_s.p50 * 93 / 256
    with pytest.raises(OptionError, match="acceptance_rate"):
        llmsim.serve(MODEL, GPU, speculative={"method": "ngram", "num_tokens": 4}, **base)
    with pytest.raises(OptionError, match="draft_model"):
        llmsim.serve(MODEL, GPU, speculative={"method": "draft", "acceptance_rate": 0.5}, **base)
    draft = llmsim.serve(MODEL, GPU, speculative={"method": "draft", "num_tokens": 4, "acceptance_rate": 0.7,
                                                  "draft_model": "llama-3.2-1b"}, **base)
    assert draft.tpot_s.p50 > r.tpot_s.p50  # the draft model's four steps cost time an n-gram lookup does not


def test_sglang_steps_prefill_or_decode_never_both() -> None:
    # SGLang's default (enable_mixed_chunk=False): while prompts can start, a step prefills only
    r = llmsim.serve(MODEL, GPU, engine="sglang", request_rate=20.0, prompt_len=1024, gen_len=64, num_requests=100)
    steps = r.step_log
    assert not np.any((steps["prefill_tokens"] > 0) & (steps["decode_requests"] > 0))
    v = llmsim.serve(MODEL, GPU, engine="vllm", request_rate=20.0, prompt_len=1024, gen_len=64, num_requests=100)
    assert np.any((v.step_log["prefill_tokens"] > 0) & (v.step_log["decode_requests"] > 0))  # vLLM mixes them
    # and each says which schedule it ran (sglang's said "vLLM V1 continuous batching")
    assert r.assumptions["scheduler"].startswith("prefill first (SGLang's default")
    assert v.assumptions["scheduler"].startswith("vLLM V1 continuous batching")


def test_one_token_requests_have_no_decode_latency() -> None:
    r = llmsim.serve(MODEL, GPU, request_rate=5.0, prompt_len=512, gen_len=1, num_requests=20)
    assert r.itl_s.p99 == 0.0 and r.tpot_s.mean == 0.0 and np.all(r.requests["finish_s"] == r.requests["first_token_s"])


def test_plan_serving_weighs_disaggregated_pools_too() -> None:
    from llmsim.serving.disaggregated import serve_disaggregated

    p = llmsim.plan_serving(MODEL, GPU, request_rate=30.0, prompt_len=1024, gen_len=64, ttft_slo_s=0.2,
                            tpot_slo_s=0.02, tensor_parallel=[1], max_num_seqs=[128], num_requests=150,
                            disaggregated=True)
    split = [c for c in p.candidates if c.mode == "disaggregated"]
    assert len(split) == 1 and split[0].gpus == split[0].prefill_replicas + split[0].decode_replicas
    c = split[0]
    # the whole deployment, rerun at the target rate, meets both objectives with the figures the plan reports
    r = serve_disaggregated(MODEL, GPU, prefill={"replicas": c.prefill_replicas},
                            decode={"replicas": c.decode_replicas, "max_num_seqs": 128}, request_rate=30.0,
                            prompt_len=1024, gen_len=64, num_requests=150)
    assert r.ttft_s.p99 == pytest.approx(c.ttft_p_s) and r.ttft_s.p99 <= 0.2 and r.tpot_s.p99 <= 0.02


def test_plan_serving_gives_each_disaggregated_pool_the_expert_parallelism() -> None:
    # serve_disaggregated takes expert_parallel per pool: the plan passed it whole and every disaggregated shape of
    # an expert-parallel MoE plan failed ("expert_parallel: give it per pool") before session 33
    p = llmsim.plan_serving("qwen3-30b-a3b", GPU, request_rate=5.0, prompt_len=512, gen_len=64, tpot_slo_s=0.05,
                            tensor_parallel=[2], expert_parallel=2, max_num_seqs=[64], num_requests=64,
                            disaggregated=True)
    split = [c for c in p.candidates if c.mode == "disaggregated"]
    assert len(split) == 1 and split[0].gpus is not None and "per pool" not in split[0].reason


def test_fixed_size_states_come_from_the_pool_per_running_request() -> None:
    from llmsim.analysis.evaluation import resolve
    from llmsim.serving.engine_limits import scheduler_limits

    spec, hw, cost, _ = resolve("nemotron-3-nano-30b-a3b", "h100-sxm", engine="vllm")
    limits = scheduler_limits(spec, hw, cost, "vllm", 2048)
    # per sequence: 49,364,992 B of Mamba conv + SSM state; per token 6,144 B of KV; a block of 16 tokens is
    # 98,304 B, so a state takes ceil(49,364,992 / 98,304) = 503 blocks of the shared pool
    assert spec.recurrent_state_bytes(1, kv_dtype="bfloat16") == 49_364_992
    assert limits.state_blocks == 503
    # vLLM's default 1024 sequences no longer reserve 47 GiB of states up front: the model serves on one H100,
    # and the blocks in use (states of the running requests included) never pass the pool
    r = llmsim.serve("nemotron-3-nano-30b-a3b", "h100-sxm", concurrency=64, prompt_len=1024, gen_len=32,
                     num_requests=128)
    used = r.steps_to_pandas()["kv_blocks_used"]
    assert 0 < used.max() <= limits.kv_blocks
    assert used.max() >= 64 * 503  # 64 running requests hold their states at the peak


def test_pipeline_parallel_serving_matches_simulate_at_the_limits() -> None:
    kw = dict(prompt_len=1024, gen_len=33, tensor_parallel=2)
    # one request at a time through 2 stages: a whole-model pass plus one hand-over, as simulate
    s = llmsim.simulate("llama-3.1-70b", GPU, batch_size=1, pipeline_parallel=2, **kw)
    r = llmsim.serve("llama-3.1-70b", GPU, concurrency=1, num_requests=2, pipeline_parallel=2, frontend_s=0, **kw)
    assert r.gpus == 4 and "pipeline" in r.assumptions
    assert r.ttft_s.mean == pytest.approx(s.ttft_s, rel=1e-3)
    assert r.tpot_s.mean == pytest.approx(s.tpot_s, rel=1e-3)
    # 16 clients decoding together: 2 micro-batches of 8 in flight, each step the whole model at a batch of 8
    # plus a hand-over, as simulate's steady-state pipelined decode of a batch of 16 in 2 micro-batches
    kw16 = dict(kw, prompt_len=256)  # 16 x 256 = 4096 prompt tokens: one prefill step within the 8192 budget
    s16 = llmsim.simulate("llama-3.1-70b", GPU, batch_size=16, pipeline_parallel=2, num_microbatches=2, **kw16)
    r16 = llmsim.serve("llama-3.1-70b", GPU, concurrency=16, num_requests=16, pipeline_parallel=2, frontend_s=0,
                       **kw16)  # all 16 in one step: no frontend spreading them
    assert r16.step_log["prefill_tokens"][0] == 16 * 256
    decode_s = r16.step_log["time_s"][1:]
    assert len(decode_s) == 32 and decode_s.sum() == pytest.approx(s16.decode.time_s, rel=1e-3)
    # each GPU holds half the layers: about twice the KV cache of tensor_parallel=2 alone (which does not fit)
    tp4 = llmsim.serve("llama-3.1-70b", GPU, concurrency=1, num_requests=1, prompt_len=1024, gen_len=33,
                       tensor_parallel=4)
    assert r.kv_cache_tokens == pytest.approx(tp4.kv_cache_tokens, rel=0.01)  # the same weights per GPU
    with pytest.raises(OptionError, match="pipeline_parallel=200 exceeds the model's 80 layers"):
        llmsim.serve("llama-3.1-70b", GPU, concurrency=1, num_requests=1, pipeline_parallel=200, **kw)


def test_pipeline_parallel_on_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from llmsim.cli import main

    assert main(["serve", "llama-3.1-70b", "--hardware", GPU, "--concurrency", "4", "--num-requests", "4",
                 "--prompt-len", "256", "--gen-len", "8", "--tensor-parallel", "2", "--pipeline-parallel", "2"]) == 0
    assert "x4 (vllm, tensor_parallel=2, pipeline_parallel=2)" in capsys.readouterr().out


def test_each_engine_sizes_its_kv_pool_by_its_own_rule() -> None:
    from llmsim.analysis.memory import peak_activation_bytes, weights_bytes, workspace_bytes
    from llmsim.cost.workload import CostOptions
    from llmsim.serving.engine_limits import engine_defaults, scheduler_limits

    h100, l40s = llmsim.load_hardware("h100-sxm"), llmsim.load_hardware("l40s")
    # SGLang ServerArgs._handle_gpu_memory_settings on 80 GiB = 81920 MiB, TP1: chunk 8192, cuda_graph_max_bs 256,
    # reserved = 512 + 1.5 * 8192 + 2 * 256 + 1024 * 1 / 8 = 13440 MiB -> (81920 - 13440) / 81920 = 0.836
    assert engine_defaults("sglang", h100)["gpu_memory_utilization"] == 0.836
    # TP4: cuda_graph_max_bs 512, reserved = 512 + 12288 + 1024 + 512 = 14336 -> (81920 - 14336) / 81920 = 0.825
    assert engine_defaults("sglang", h100, tensor_parallel=4)["gpu_memory_utilization"] == 0.825
    assert engine_defaults("sglang", l40s)["max_num_batched_tokens"] == 4096  # 48 GiB: below 60 GiB, chunk 4096

    spec = llmsim.load_model(MODEL)
    options = CostOptions()
    weights = weights_bytes(spec, options)
    per_block = float(spec.kv_cache_bytes(batch_size=1, seq_len=1))  # SGLang's page: one token
    transient = float(peak_activation_bytes(spec, options, 1, 8192)) + workspace_bytes(h100)
    capacity = 80 * 2**30
    sglang = scheduler_limits(spec, h100, options, "sglang", 4096)
    assert sglang.kv_blocks == int((0.836 * capacity - weights) // per_block)  # activations sit in the reserve
    trtllm = scheduler_limits(spec, h100, options, "trtllm", 4096)
    assert trtllm.kv_blocks == int(0.9 * (capacity - weights - transient) // (32 * per_block))  # 0.9 of what is free
    vllm = scheduler_limits(spec, h100, options, "vllm", 4096)
    assert vllm.kv_blocks == int((0.9 * capacity - weights - transient) // (16 * per_block))


def test_a_step_that_preempts_admits_no_waiting_request() -> None:
    # found on a fresh clone: 32 clients of 2048-token prompts on an L4 (KV for about 44,700 tokens) with
    # prefill-first steps. A recomputing request that ran out of blocks preempted itself and was admitted again
    # in the same step, forever; vLLM V1 admits no waiting request in a step that preempted (`if not
    # preempted_reqs`). Every request now finishes, with its tokens.
    for mixed in (False, True):
        r = llmsim.serve(MODEL, "l4", mixed_batches=mixed, concurrency=32, max_num_seqs=32, prompt_len=2048,
                         gen_len=256, num_requests=50)
        requests = r.to_pandas()
        assert len(requests) == 50 and (requests["gen_len"] == 256).all()
        assert requests["preemptions"].sum() > 0  # the KV cache did run out


def test_sglang_prefill_first_keeps_a_closed_loop_of_equal_lengths_in_waves() -> None:
    # SGLang's default (no mixed chunks): while prompts can start, steps prefill only and every decode waits, so
    # 16 clients of equal lengths start decoding together and finish together (on at most two steps here), and
    # their next requests arrive as a wave again; --enable-mixed-chunk (mixed_batches=True) lets each decode
    # start after its own prefill, so the requests spread out (aiconfigurator's generated SGLang deployments set
    # it: llmsim.validation.aiconfigurator_recipes)
    def finishes(mixed: bool | None) -> tuple[int, float]:
        r = llmsim.serve("llama-3.1-8b", "h100-sxm", engine="sglang", concurrency=16, num_requests=48,
                         prompt_len=2000, gen_len=100, mixed_batches=mixed)
        requests = r.to_pandas()
        return requests["finish_s"][:16].nunique(), r.ttft_s.mean

    waves, ttft_waves = finishes(None)
    spread, ttft_spread = finishes(True)
    assert waves <= 2 < 4 <= spread
    assert ttft_spread < ttft_waves  # a request's prefill no longer waits behind the whole wave's


def test_a_token_budget_below_max_num_seqs_follows_vllms_rule(capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM refuses max_num_batched_tokens < max_num_seqs (vllm/config/scheduler.py, verify_max_model_len) and
    defaults an unset max_num_seqs to min(its default, max_num_batched_tokens) (vllm/engine/arg_utils.py). llmsim
    lowered max_num_seqs silently in both cases."""
    from llmsim.cli import main

    kwargs = dict(concurrency=4, num_requests=4, prompt_len=16, gen_len=4, max_num_batched_tokens=10)
    with pytest.raises(OptionError, match=r"^max_num_batched_tokens=10 is below max_num_seqs=64: the engine refuses"):
        llmsim.serve(MODEL, GPU, max_num_seqs=64, **kwargs)
    r = llmsim.serve(MODEL, GPU, **kwargs)  # vLLM's default on an H100 (80 GiB, not an A100): 1024 sequences
    assert (r.max_num_seqs, r.max_num_batched_tokens) == (10, 10)
    assert r.assumptions["max_num_seqs"] == ("vllm's default 1024 lowered to 10, the max_num_batched_tokens given, "
                                             "as vLLM sets an unset max_num_seqs (at most one token per running "
                                             "request each step)")
    assert "max_num_seqs" not in llmsim.serve(MODEL, GPU, max_num_seqs=8, **kwargs).assumptions  # 10 >= 8
    split = llmsim.serve_disaggregated(MODEL, GPU, prefill={"replicas": 1, "tensor_parallel": 1},
                                       decode={"replicas": 1, "tensor_parallel": 1, "max_num_batched_tokens": 10},
                                       concurrency=2, num_requests=2, prompt_len=16, gen_len=4)
    assert split.max_num_seqs == 10 and "vllm's default 1024 lowered to 10" in split.assumptions["decode max_num_seqs"]
    cli = ["serve", MODEL, "--hardware", GPU, "--concurrency", "4", "--num-requests", "4", "--prompt-len", "16",
           "--gen-len", "4", "--max-num-batched-tokens", "10"]
    assert main([*cli, "--max-num-seqs", "64"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("llmsim: error: max_num_batched_tokens=10 is below max_num_seqs=64: the engine refuses it (vLLM: "
                   "max_num_batched_tokens must be >= max_num_seqs); raise max_num_batched_tokens or lower "
                   "max_num_seqs")
    assert main([*cli, "--max-num-seqs", "64", "--engine", "trtllm"]) == 2  # TensorRT-LLM accepts it; llmsim can't
    assert capsys.readouterr().err.strip() == (
        "llmsim: error: max_num_batched_tokens=10 is below max_num_seqs=64: llmsim's scheduler gives every running "
        "decode a token of each step's budget, so it cannot hold more sequences than tokens (trtllm would run at most "
        "10 of them a step); lower max_num_seqs to 10 or raise max_num_batched_tokens")
    assert main(cli) == 0
    out = capsys.readouterr().out
    assert "max_num_seqs 10, max_num_batched_tokens 10" in out and "vllm's default 1024 lowered to 10" in out


def test_trtllm_batch_waiting_holds_new_prompts_while_requests_decode() -> None:
    """TensorRT-LLM's batch waiting (PyExecutor._waiting_requests): while requests decode, new prompts are held
    until they and the decodes reach batch_wait_max_tokens_ratio x max_num_tokens, or for batch_wait_timeout_iters
    steps; with no request decoding they go in at once ("to avoid dead waiting")."""
    kwargs = dict(engine="trtllm", request_rate=2.0, arrival="constant", prompt_len=512, gen_len=200, num_requests=2,
                  async_scheduling=False)
    plain = llmsim.serve(MODEL, GPU, **kwargs)
    r = llmsim.serve(MODEL, GPU, batch_wait_timeout_iters=5, batch_wait_max_tokens_ratio=0.9, **kwargs)
    assert "reach 7372.8 tokens or for 5 steps" in r.assumptions["scheduler"]  # 0.9 x TensorRT-LLM's 8192
    # the first request finds an idle engine: no wait
    assert r.requests["first_token_s"][0] == plain.requests["first_token_s"][0]
    start, prefill = r.step_log["start_s"], r.step_log["prefill_tokens"]
    j = int(np.flatnonzero(start > 0.5)[0])  # the first step decided after the second request arrived at 0.5 s
    p = int(np.flatnonzero(prefill[1:])[0]) + 1  # the step that prefills it
    # 1 decode + 512 prompt tokens < 7372.8: held for steps j..j+4 (the count reaching 5), admitted at step j + 5
    assert p == j + 5 and plain.step_log["prefill_tokens"][j] == 512
    assert r.requests["first_token_s"][1] > plain.requests["first_token_s"][1]
    # the token threshold reached (0.01 x 8192 = 81.92 <= 1 + 512): no step held, the same run as without waiting
    met = llmsim.serve(MODEL, GPU, batch_wait_timeout_iters=5, batch_wait_max_tokens_ratio=0.01, **kwargs)
    assert np.array_equal(met.requests["first_token_s"], plain.requests["first_token_s"])
    # either knob 0: off, as PyExecutor stops waiting at once; said (it was silent)
    with pytest.warns(AssumptionWarning, match="batch_wait_timeout_iters=5 alone does nothing"):
        off = llmsim.serve(MODEL, GPU, batch_wait_timeout_iters=5, **kwargs)
    assert np.array_equal(off.requests["first_token_s"], plain.requests["first_token_s"])
    with pytest.warns(AssumptionWarning, match="batch_wait_max_tokens_ratio=0.9 alone does nothing"):
        llmsim.serve(MODEL, GPU, batch_wait_max_tokens_ratio=0.9, **kwargs)
    with pytest.raises(OptionError, match=r"batch_wait_max_tokens_ratio=1.5 must be a number in \[0, 1\]"):
        llmsim.serve(MODEL, GPU, batch_wait_timeout_iters=5, batch_wait_max_tokens_ratio=1.5, **kwargs)
    with pytest.raises(OptionError, match="batch_wait_timeout_iters=-1"):
        llmsim.serve(MODEL, GPU, batch_wait_timeout_iters=-1, batch_wait_max_tokens_ratio=0.5, **kwargs)
    with pytest.raises(OptionError, match="engine 'vllm' has no batch waiting"):
        llmsim.serve(MODEL, GPU, **{**kwargs, "engine": "vllm"}, batch_wait_timeout_iters=5,
                     batch_wait_max_tokens_ratio=0.5)
    with pytest.raises(OptionError, match="only without attention data parallelism"):
        llmsim.serve("qwen3-30b-a3b", GPU, engine="trtllm", tensor_parallel=2, attention_data_parallel=2,
                     concurrency=2, num_requests=4, batch_wait_timeout_iters=5, batch_wait_max_tokens_ratio=0.5)


def test_inferencex_trtllm_llama_recipe_sets_its_token_budget_and_batch_waiting() -> None:
    """InferenceX's Llama-70B TensorRT-LLM recipes (2025-09-18 .. 2025-10-29): --max_num_tokens 16384, and batch
    waiting (20 steps, 0.9) at 1k/1k below TP 8; other rows keep the engine's defaults."""
    from llmsim.validation.serving import inferencex_trtllm_options

    def row(**fields: str) -> dict[str, str]:
        base = {"backend": "trtllm", "mode": "agg", "system": "b200_sxm", "model_path": "meta-llama/Llama-3.1-70B",
                "isl": "1024", "osl": "1024", "tp_size": "4",
                "silicon_data_source": "source_file=2026-04-06.csv; model=Llama-3.1-70B; silicon_concurrency=4; "
                                       "measured=2025-10-29T00:00:00.000Z; wip=False"}
        return {**base, **fields}

    waiting = {"max_num_batched_tokens": 16384, "batch_wait_timeout_iters": 20, "batch_wait_max_tokens_ratio": 0.9}
    assert inferencex_trtllm_options(row()) == waiting
    assert inferencex_trtllm_options(row(tp_size="8")) == {"max_num_batched_tokens": 16384}
    assert inferencex_trtllm_options(row(osl="8192")) == {"max_num_batched_tokens": 16384}
    assert inferencex_trtllm_options(row(backend="vllm")) == {}
    assert inferencex_trtllm_options(row(mode="disagg")) == {}
    assert inferencex_trtllm_options(row(model_path="Qwen/Qwen3-32B")) == {}
    assert inferencex_trtllm_options(row(silicon_data_source="source_file=/x/gap-analysis.csv")) == {}


def _dsr1_trt_row(day: str, clients: int, **fields: str) -> dict[str, str]:
    """A DeepSeek-R1 TensorRT-LLM aggregated row of the silicon file (InferenceX's db-dump), measured on `day`."""
    base = {"backend": "trtllm", "mode": "agg", "system": "b200_sxm", "model_path": "deepseek-ai/DeepSeek-R1",
            "precision": "fp8", "isl": "1024", "osl": "1024", "tp_size": "8", "attention_dp_size": "1",
            "batch_size": str(clients),
            "silicon_data_source": f"db-dump/x; config_id=1; silicon_concurrency={clients}; "
                                   f"measured={day}T00:00:00.000Z"}
    return {**base, **fields}


def test_inferencex_deepseek_fp8_b200_trtllm_recipe_runs_the_trtllm_moe_backend() -> None:
    """dsr1_fp8_b200_trt.sh from 0a919c5f8 (2026-01-27): moe_config backend TRTLLM, DEEPGEMM at 1k/8k from 256
    clients; earlier recipes and other GPUs keep the engine's default MoE kernel."""
    from llmsim.validation.serving import inferencex_trtllm_options

    row = _dsr1_trt_row

    assert inferencex_trtllm_options(row("2026-02-05", 4)) == {"fp8_block_moe_kernel": "trtllm-gen"}  # an MTP day
    assert inferencex_trtllm_options(row("2026-01-29", 4))["fp8_block_moe_kernel"] == "trtllm-gen"
    assert "fp8_block_moe_kernel" not in inferencex_trtllm_options(row("2026-01-29", 256, osl="8192"))
    assert "fp8_block_moe_kernel" not in inferencex_trtllm_options(row("2026-01-14", 4))
    assert "fp8_block_moe_kernel" not in inferencex_trtllm_options(row("2026-02-05", 4, system="h200_sxm"))
    assert "fp8_block_moe_kernel" not in inferencex_trtllm_options(row("2026-02-05", 4, precision="fp4"))


def test_inferencex_trtllm_deepseek_recipes_set_token_budget_and_parallel_split() -> None:
    """InferenceX's DeepSeek-R1 TensorRT-LLM recipes: --max_num_tokens (CONC + ISL + 64 + 63) // 64 * 64, at least
    8192 from 2026-01-21; the 2025-11-02 recipes chose EP and attention DP themselves; the fp8 B200 recipe's
    DELAY_BATCHING from 2026-01-29; MTP days keep the defaults."""
    from llmsim.validation.serving import inferencex_trtllm_options

    row = _dsr1_trt_row

    # (64 + 1024 + 127) // 64 * 64 = 1152; fp8: EP = TP, attention DP above 32 clients at 1k/1k on B200, with the
    # recipe's attention_dp_config (enable_balance, timeout_iters 60, batching_wait_iters 0)
    balance = {"attention_dp_balance": True, "attention_dp_timeout_iters": 60, "attention_dp_batching_wait_iters": 0}
    assert inferencex_trtllm_options(row("2025-11-02", 64)) == {
        "max_num_batched_tokens": 1152, "expert_parallel": 8, "attention_data_parallel": 8, **balance}
    # fp4 TP 8 at 1k/1k: EP above 8 clients, attention DP from 256; (16 + 1024 + 127) // 64 * 64 = 1152
    assert inferencex_trtllm_options(row("2025-11-02", 16, precision="fp4")) == {
        "max_num_batched_tokens": 1152, "expert_parallel": 8}
    assert inferencex_trtllm_options(row("2025-11-02", 8, precision="fp4")) == {"max_num_batched_tokens": 1152}
    # H200 8k/1k: attention DP above 32 clients; (64 + 8192 + 127) // 64 * 64 = 8320
    assert inferencex_trtllm_options(row("2025-11-02", 64, system="h200_sxm", isl="8192")) == {
        "max_num_batched_tokens": 8320, "expert_parallel": 8, "attention_data_parallel": 8, **balance}
    assert inferencex_trtllm_options(row("2025-12-15", 64)) == {"max_num_batched_tokens": 1152}  # no split then
    # from 2026-01-21 at least 8192; the fp8 B200 recipe's DELAY_BATCHING at 1k/1k from 64 clients
    # (and the TRTLLM MoE backend from 2026-01-27: the test above)
    trtllm_moe = {"fp8_block_moe_kernel": "trtllm-gen"}
    assert inferencex_trtllm_options(row("2026-01-29", 64)) == {
        "max_num_batched_tokens": 8192, "batch_wait_timeout_iters": 40, "batch_wait_max_tokens_ratio": 0.8,
        **trtllm_moe}
    assert inferencex_trtllm_options(row("2026-01-29", 32)) == {"max_num_batched_tokens": 8192, **trtllm_moe}
    assert inferencex_trtllm_options(row("2026-02-05", 64)) == trtllm_moe  # an MTP day: no token budget
    assert inferencex_trtllm_options(row("2025-11-02", 64, system="gb200")) == {}
    # the file's own attention_dp_size: the balance alone on a day without other knobs (2026-03-01), none before
    # the recipes set it (ec90f3fe7, 2025-09-18), none for gpt-oss on H200; gpt-oss on B200: TensorRT-LLM's
    # defaults (enable_balance only, 28e5a01ea)
    assert inferencex_trtllm_options(row("2026-03-01", 64, attention_dp_size="8")) == {**balance, **trtllm_moe}
    assert inferencex_trtllm_options(row("2025-09-10", 64, attention_dp_size="8")) == {}
    gpt_oss = {"model_path": "openai/gpt-oss-120b", "attention_dp_size": "4", "tp_size": "4"}
    assert inferencex_trtllm_options(row("2026-03-01", 64, **gpt_oss)) == {
        "max_num_batched_tokens": 20000, "attention_dp_balance": True}
    assert inferencex_trtllm_options(row("2026-03-01", 64, system="h200_sxm", **gpt_oss)) == {
        "max_num_batched_tokens": 20000}


def test_rows_whose_gpu_count_contradicts_their_launch_are_skipped() -> None:
    """InferenceX's aggregated runs are single-node recipes named ..._tp{T}_ep{E}_{n} (T GPUs: TensorRT-LLM's --tp_size
    T --ep_size E); some rows write moe_tp_size x moe_ep_size as tp_size (tp_size 64 for a TP8 x EP8 run on one
    8-GPU H200 node). Such a row contradicts its own name, or the node, and is skipped, not simulated on 64 GPUs."""
    from llmsim.validation.serving import _why_not

    base = {"backend": "trtllm", "mode": "agg", "system": "h200_sxm", "model_path": "deepseek-ai/DeepSeek-R1",
            "precision": "fp8", "gemm_quant_mode": "fp8", "moe_quant_mode": "fp8", "isl": "1024", "osl": "1024",
            "batch_size": "4", "pp_size": "1", "attention_dp_size": "1", "prefill_num_workers": "",
            "decode_num_workers": "", "silicon_data_source": "source_file=2026-04-06.csv; model=DeepSeek-R1; "
            "silicon_concurrency=4; measured=2025-12-15T00:00:00.000Z; wip=False"}  # (the real row: 2026-01-14, MTP)
    named = {**base, "id": "2026_04_06_deepseek_r1_h200_sxm_trtllm_fp8_agg_1024x1024_c4_tp8_ep8_954",
             "tp_size": "64", "moe_tp_size": "8", "moe_ep_size": "8"}
    assert "the run's name tp8" in (_why_not(named) or "")  # 64 GPUs in the fields, 8 in the name
    # the same measurement written consistently (the 2026-03-25 file): TP8 x EP8 on 8 GPUs, simulated
    assert _why_not({**named, "id": "2026_03_25_deepseek_r1_h200_sxm_trtllm_fp8_agg_1024x1024_c4_tp8_0_ep8_0_1252",
                     "tp_size": "8", "moe_tp_size": "1"}) is None
    # no name to check against: 64 GPUs cannot be one of InferenceX's single-node runs on an 8-GPU H200 node
    unnamed = {**named, "id": "dsr1_h200_trtllm_fp8_agg_1024x1024_c4_cfg181",
               "silicon_data_source": "db-dump/2026-04-27; config_id=181; silicon_concurrency=4; "
               "measured=2025-12-15T00:00:00.000Z; workflow_run_id=223"}
    assert "one 8-GPU node of h200_sxm" in (_why_not(unnamed) or "")
    # a GB200 NVL72 "node" is its 72-GPU NVLink domain: 64 GPUs fit
    assert "node" not in (_why_not({**unnamed, "system": "gb200"}) or "")


def test_points_only_the_mtp_config_swept_are_skipped() -> None:
    """2026-03-25: InferenceX's plain SGLang DeepSeek-R1 fp8 B200 config swept TP 8 up to 64 clients (8k/1k: 4), its
    MTP config up to 512 (nvidia-master.yaml at 12ba0ae07): 256 clients is an MTP point, not simulated."""
    from llmsim.validation.serving import _why_not

    base = {"backend": "sglang", "mode": "agg", "system": "b200_sxm", "model_path": "deepseek-ai/DeepSeek-R1",
            "precision": "fp8", "gemm_quant_mode": "fp8_block", "moe_quant_mode": "fp8_block", "isl": "1024",
            "osl": "1024", "tp_size": "8", "pp_size": "1", "attention_dp_size": "1", "moe_tp_size": "8",
            "moe_ep_size": "1", "prefill_num_workers": "", "decode_num_workers": "",
            "id": "2026_04_06_deepseek_r1_b200_sxm_sglang_fp8_agg_1024x1024_c256_tp8_ep1_1705"}

    def at(clients: int, day: str = "2026-03-25", **fields: str) -> dict[str, str]:
        source = (f"source_file=2026-04-06.csv; model=DeepSeek-R1; silicon_concurrency={clients}; "
                  f"measured={day}T00:00:00.000Z; wip=False; image=lmsysorg/sglang:v0.5.9-cu130")
        return {**base, "batch_size": str(clients), "silicon_data_source": source, **fields}

    assert "MTP config's point" in (_why_not(at(256)) or "")
    assert "MTP config" not in (_why_not(at(64)) or "")  # both configs swept 64: read as the plain recipe
    assert "MTP config's point" in (_why_not(at(8, isl="8192")) or "")  # 8k/1k: the plain sweep stopped at 4
    assert "MTP config" not in (_why_not(at(4, isl="8192")) or "")
    assert "MTP config" not in (_why_not(at(256, day="2026-02-05")) or "")  # another day's sweep


def test_tensorrt_llm_deepseek_rows_of_mtp_only_days_are_skipped() -> None:
    """InferenceX ran only its TensorRT-LLM DeepSeek-R1 MTP recipes on 2026-01-14 (PR #392, bf3456727), 2026-02-05
    (5d517074c) and 2026-02-06 (0aae52d4c), and only its SGLang Qwen3.5 fp8 B200 MTP config on 2026-03-20: such a
    row is speculative decoding with no stated acceptance rate, not simulated; the mixed 2026-01-28 run and other
    days stay simulated as plain."""
    from llmsim.validation.serving import _why_not

    base = {"backend": "trtllm", "mode": "agg", "system": "b200_sxm", "model_path": "deepseek-ai/DeepSeek-R1",
            "precision": "fp8", "gemm_quant_mode": "fp8", "moe_quant_mode": "fp8", "isl": "1024",
            "osl": "1024", "tp_size": "8", "pp_size": "1", "attention_dp_size": "1", "moe_tp_size": "8",
            "moe_ep_size": "1", "prefill_num_workers": "", "decode_num_workers": "", "batch_size": "4",
            "id": "2026_03_25_deepseek_r1_b200_sxm_trtllm_fp8_agg_1024x1024_c4_tp8_0_ep1_0_1021"}

    def on(day: str) -> dict[str, str]:
        source = (f"source_file=2026-03-25.csv; model=DeepSeek-R1; silicon_concurrency=4; measured={day}T19:55:05Z; "
                  "wip=False; image=nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc6.post3")
        return {**base, "silicon_data_source": source}

    for day in ("2026-01-14", "2026-02-05", "2026-02-06"):
        assert "MTP recipes" in (_why_not(on(day)) or ""), day
    for day in ("2026-01-28", "2026-01-29", "2025-11-02"):
        assert "MTP" not in (_why_not(on(day)) or ""), day
    assert "MTP" not in (_why_not({**on("2026-02-05"), "backend": "vllm"}) or "")  # another engine's run
    # 2026-03-20: the only Qwen3.5 config InferenceX changed was its new SGLang fp8 B200 MTP one (35d4bb367)
    qwen = {**on("2026-03-20"), "backend": "sglang", "model_path": "Qwen/Qwen3.5-397B-A17B", "tp_size": "4",
            "moe_tp_size": "4", "gemm_quant_mode": "fp8_block", "moe_quant_mode": "fp8_block"}
    assert "MTP config" in (_why_not(qwen) or "")
    assert "MTP" not in (_why_not({**qwen, "silicon_data_source": on("2026-03-24")["silicon_data_source"]}) or "")


def test_inferencex_recipes_set_vllm_budgets_graphs_and_expert_parallelism() -> None:
    """vLLM recipe facts the file's columns miss: --max-num-batched-tokens 2 x ISL (MiniMax, Kimi on Blackwell from
    April 2026), FULL_DECODE_ONLY graphs (Llama-70B B200), MiniMax fp8's always-on --enable-expert-parallel and
    Kimi fp4's absent one; TensorRT-LLM gpt-oss's --max_num_tokens 20000 (and --ep_size=$TP on H200, 2025-11-02)."""
    from llmsim.validation.serving import _why_not, inferencex_trtllm_options, inferencex_vllm_options

    def row(model: str, system: str, precision: str, day: str, **fields: str) -> dict[str, str]:
        base = {"backend": "vllm", "mode": "agg", "system": system, "model_path": model, "precision": precision,
                "isl": "1024", "osl": "1024", "tp_size": "4", "attention_dp_size": "1", "batch_size": "8",
                "silicon_data_source": f"db-dump/x; config_id=1; silicon_concurrency=8; measured={day}T00:00:00Z"}
        return {**base, **fields}

    minimax = "MiniMaxAI/MiniMax-M2.5"
    assert inferencex_vllm_options(row(minimax, "b200_sxm", "fp8", "2026-04-03")) == {"max_num_batched_tokens": 2048}
    assert inferencex_vllm_options(row(minimax, "b300_sxm", "fp4", "2026-04-21", isl="8192")) == {
        "max_num_batched_tokens": 16384}
    assert inferencex_vllm_options(row(minimax, "b200_sxm", "fp4", "2026-04-03")) == {}  # from 04-08 only
    assert inferencex_vllm_options(row(minimax, "h200_sxm", "fp8", "2026-03-27", tp_size="8")) == {
        "expert_parallel": 8}
    assert inferencex_vllm_options(row(minimax, "h200_sxm", "fp8", "2026-03-01")) == {}
    assert inferencex_vllm_options(row("moonshotai/Kimi-K2.5", "b200_sxm", "fp4", "2026-03-11")) == {
        "expert_parallel": 1}
    # FULL_DECODE_ONLY with "splitting_ops": []: uncaptured prefills run the flattened graph, 2 x vLLM's host time per
    # kernel (PR #20050): 2 x 44.5 us = 89 us
    assert inferencex_vllm_options(row("meta-llama/Llama-3.1-70B", "b200_sxm", "fp8", "2025-10-29")) == {
        "prefill_graph_tokens": 0, "prefill_dispatch_s": pytest.approx(89e-6)}
    assert inferencex_vllm_options(row("meta-llama/Llama-3.1-70B", "h200_sxm", "fp8", "2025-10-29")) == {}
    assert inferencex_vllm_options(row(minimax, "b200_sxm", "fp8", "2026-04-03", backend="sglang")) == {}
    gptoss = row("openai/gpt-oss-120b", "h200_sxm", "fp4", "2025-11-02", backend="trtllm")
    assert inferencex_trtllm_options(gptoss) == {"max_num_batched_tokens": 20000, "expert_parallel": 4}
    assert inferencex_trtllm_options({**gptoss, "system": "b200_sxm"}) == {"max_num_batched_tokens": 20000}
    # the H100 runs whose client sent 512 concurrent requests to a server limited to a CONC the row does not hold
    bug = row("openai/gpt-oss-120b", "h100_sxm", "fp4", "2025-12-05", gemm_quant_mode="nvfp4")
    assert "--max-concurrency 512" in (_why_not(bug) or "")


def test_inferencex_sglang_recipes_set_chunk_size_and_running_requests() -> None:
    """SGLang recipe facts: --chunked-prefill-size (max_num_batched_tokens) and a numeric --max-running-requests
    (max_num_seqs); attention-DP rows and other engines keep the defaults."""
    from llmsim.validation.serving import inferencex_sglang_options

    def row(model: str, system: str, precision: str, day: str, **fields: str) -> dict[str, str]:
        base = {"backend": "sglang", "mode": "agg", "system": system, "model_path": model, "precision": precision,
                "isl": "1024", "osl": "1024", "tp_size": "8", "attention_dp_size": "1", "batch_size": "8",
                "silicon_data_source": f"db-dump/x; config_id=1; silicon_concurrency=8; measured={day}T00:00:00Z"}
        return {**base, **fields}

    qwen, dsr1 = "Qwen/Qwen3.5-397B-A17B", "deepseek-ai/DeepSeek-R1"
    assert inferencex_sglang_options(row(qwen, "b200_sxm", "bf16", "2026-02-20")) == {
        "max_num_batched_tokens": 32768, "max_num_seqs": 128}
    assert inferencex_sglang_options(row(qwen, "b200_sxm", "fp8", "2026-03-19")) == {
        "max_num_batched_tokens": 32768, "max_num_seqs": 128}
    assert inferencex_sglang_options(row(qwen, "b300_sxm", "fp8", "2026-04-17")) == {"max_num_batched_tokens": 16384}
    assert inferencex_sglang_options(row(qwen, "b300_sxm", "fp8", "2026-04-03")) == {}
    assert inferencex_sglang_options(row(qwen, "h200_sxm", "fp8", "2026-03-04")) == {
        "max_num_batched_tokens": 16384, "max_num_seqs": 128}
    assert inferencex_sglang_options(row(dsr1, "b200_sxm", "fp4", "2026-03-25")) == {
        "max_num_batched_tokens": 16384, "max_num_seqs": 256}
    assert inferencex_sglang_options(row(dsr1, "b200_sxm", "fp8", "2026-03-25", tp_size="4", isl="8192")) == {
        "max_num_batched_tokens": 8192, "max_num_seqs": 32}
    assert inferencex_sglang_options(row(dsr1, "h200_sxm", "fp8", "2026-03-25", osl="8192")) == {
        "max_num_batched_tokens": 32768, "max_num_seqs": 256}
    assert inferencex_sglang_options(row(dsr1, "b200_sxm", "fp8", "2026-03-25", attention_dp_size="8")) == {}
    assert inferencex_sglang_options(row(dsr1, "b200_sxm", "fp8", "2026-03-25", backend="vllm")) == {}


def test_repeated_measurements_are_predicted_by_the_others_of_their_configuration() -> None:
    """ServingComparison.repeats: a configuration measured three times (TTFT 100, 200 and 300 ms) gives each row
    the mean of the other two as its 'prediction'; a configuration measured once gives nothing."""
    from llmsim.validation.serving import ServingComparison, repeat_summary

    def row(i: str, point: str, ttft: float, predicted: float) -> dict:
        return {"id": i, "point": point, "engine": "vllm", "system": "h200_sxm", "mode": "agg",
                "measured_ttft_ms": ttft, "ttft_ms": predicted, "ttft_error_pct": 100 * (predicted - ttft) / ttft,
                "measured_tpot_ms": 10.0, "tpot_ms": 12.0, "tpot_error_pct": 20.0}

    c = ServingComparison(rows=[row("a", "p", 100, 150), row("b", "p", 200, 150), row("c", "p", 300, 150),
                                row("d", "q", 50, 60)])
    got = {e["id"]: e for e in c.repeats()}
    assert sorted(got) == ["a", "b", "c"]  # q was measured once
    assert got["a"]["ttft_repeat_pct"] == pytest.approx(150.0)  # others' mean (200 + 300) / 2 = 250 vs 100: +150 %
    assert got["b"]["ttft_repeat_pct"] == pytest.approx(0.0)  # (100 + 300) / 2 = 200 vs 200
    assert got["c"]["ttft_repeat_pct"] == pytest.approx(-50.0)  # (100 + 200) / 2 = 150 vs 300: -50 %
    assert got["a"]["tpot_repeat_pct"] == 0.0  # every TPOT measured 10 ms
    assert all(e["ttft_within"] for e in got.values())  # 150 lies within 100..300
    assert not any(e["tpot_within"] for e in got.values())  # 12 lies outside 10..10
    s = repeat_summary(c.repeats())[("vllm", "h200_sxm", "agg")]
    assert s["points"] == 1 and s["rows"] == 3
    assert s["ttft_repeat"] == pytest.approx(50.0)  # median of |150|, |0|, |-50|
    assert s["ttft_llmsim"] == pytest.approx(50.0)  # median of |+50|, |-25|, |-50| %
    assert s["ttft_within"] == 100.0 and s["tpot_within"] == 0.0


def test_a_measured_point_is_the_configuration_without_its_day() -> None:
    """measured_point: InferenceX's DeepSeek-V3 and -R1 names of one shipped model are one configuration; another
    expert-parallel size or client count is another."""
    import csv
    from pathlib import Path

    from llmsim.validation.serving import _why_not, measured_point

    fixture = Path(__file__).parent / "fixtures" / "serving" / "silicon_sample_rows.csv"
    with fixture.open(newline="") as f:
        row = next(r for r in csv.DictReader(f) if _why_not(r) is None and r["model_path"].startswith("deepseek-ai"))
    renamed = {**row, "id": "other", "model_path": "deepseek-ai/DeepSeek-R1" if row["model_path"].endswith("V3")
               else "deepseek-ai/DeepSeek-V3", "silicon_data_source": row["silicon_data_source"] + "; later",
               "backend_version": "9.9"}
    assert measured_point(renamed) == measured_point(row)
    field = "decode_moe_ep_size" if row["mode"] == "disagg" else "moe_ep_size"
    assert measured_point({**row, field: "16"}) != measured_point(row)
    assert measured_point({**row, "isl": "2048"}) != measured_point(row)


_MID_CURVE_RUN = dict(zip(  # InferenceX's GB200 fp4 1k/1k mid-curve run at 512 clients, as silicon_sample.csv holds it
    ["id", "silicon_data_source", "backend", "backend_version", "model_path", "system", "precision", "mode", "isl",
     "osl", "gemm_quant_mode", "moe_quant_mode", "batch_size", "tp_size", "pp_size", "attention_dp_size",
     "moe_tp_size", "moe_ep_size", "prefill_batch_size", "prefill_num_workers", "prefill_tp_size",
     "prefill_pp_size", "prefill_attention_dp_size", "prefill_moe_tp_size", "prefill_moe_ep_size",
     "decode_batch_size", "decode_num_workers", "decode_tp_size", "decode_pp_size", "decode_attention_dp_size",
     "decode_moe_tp_size", "decode_moe_ep_size", "silicon_ttft_ms", "silicon_tpot_ms"],
    ["dsr1_gb200_sglang_fp4_disagg_1024x1024_c512_cfg483", "db-dump/2026-04-27; config_id=483; "
     "silicon_concurrency=512; measured=2026-02-08T00:00:00.000Z; workflow_run_id=268; lmsysorg/sglang:v0.5.8-cu130",
     "sglang", "0.5.8", "deepseek-ai/DeepSeek-V3", "gb200", "fp4", "disagg", "1024", "1024", "nvfp4", "nvfp4", "",
     "", "", "", "", "", "1", "4", "1", "1", "4", "1", "4", "16", "1", "1", "1", "32", "1", "32", "767.06", "14.68"]))


def test_an_inferencex_sglang_disaggregated_run_takes_its_srt_slurm_recipes_knobs() -> None:
    """The run's recipe (nvidia-master.yaml: CONFIG_FILE=recipes/gb200-fp4/1k1k/mid-curve.yaml) sets the prefill
    servers' chunked-prefill-size 65536, max-prefill-tokens 32768 and max-running-requests 30000 over dp-size 4,
    the decode server's max-running-requests 67584 over dp-size 32."""
    from llmsim.validation.srt_slurm_recipes import (
        RECIPE_OF_RUN,
        RECIPES,
        recipe_of,
        sglang_disagg_kv_dtype,
        sglang_disagg_pools,
    )

    assert recipe_of(_MID_CURVE_RUN) == "recipes/gb200-fp4/1k1k/mid-curve.yaml"
    assert sglang_disagg_pools(_MID_CURVE_RUN) == {
        "prefill": {"max_num_batched_tokens": 65536,  # min(65536, 4 ranks x 32768 = 131072)
                    "max_num_seqs": 30000},
        "decode": {"max_num_seqs": 67584, "max_num_batched_tokens": 67584,  # decodes: no token budget of their own
                   "fp8_block_moe_kernel": "deepep-low-latency"}}  # moe-a2a-backend deepep, deepep-mode low_latency
    # another layout than the recipe's (2 decode workers), another length, another source or engine: none
    assert sglang_disagg_pools({**_MID_CURVE_RUN, "decode_num_workers": "2"}) == {}
    assert recipe_of({**_MID_CURVE_RUN, "isl": "8192"}) is None
    assert recipe_of({**_MID_CURVE_RUN, "silicon_data_source": "source_file=2026-04-06.csv"}) is None
    assert recipe_of({**_MID_CURVE_RUN, "backend": "trtllm"}) is None
    assert set(RECIPE_OF_RUN.values()) <= set(RECIPES)
    # the recipe's kv-cache-dtype fp8_e4m3 (both servers); none where the row is not the recipe's layout
    assert sglang_disagg_kv_dtype(_MID_CURVE_RUN) == "fp8"
    assert sglang_disagg_kv_dtype({**_MID_CURVE_RUN, "decode_num_workers": "2"}) is None
    # an unset max-prefill-tokens is SGLang's 16384 per rank: gb200-fp8/1k1k/max-tpt, 131072 over 8 ranks
    max_tpt = {**_MID_CURVE_RUN, "silicon_data_source": "db-dump/2026-04-27; config_id=523", "prefill_num_workers": "2",
               "prefill_attention_dp_size": "8", "decode_attention_dp_size": "32"}
    assert sglang_disagg_pools(max_tpt)["prefill"]["max_num_batched_tokens"] == 131072  # min(131072, 8 x 16384)
    # its servers run DeepEP (moe-a2a-backend deepep): deepep-mode normal on prefill, low_latency on decode
    assert sglang_disagg_pools(max_tpt)["prefill"]["fp8_block_moe_kernel"] == "deepep-normal"
    assert sglang_disagg_pools(max_tpt)["decode"]["fp8_block_moe_kernel"] == "deepep-low-latency"
    # gb200-fp8/1k1k/low-latency.yaml (config 502): scheduler-recv-interval 10 on both servers, no DeepEP
    low = {**_MID_CURVE_RUN, "silicon_data_source": "db-dump/2026-04-27; config_id=502", "prefill_num_workers": "1",
           "prefill_tp_size": "4", "prefill_attention_dp_size": "1", "decode_num_workers": "1", "decode_tp_size": "4",
           "decode_attention_dp_size": "1"}
    assert recipe_of(low) == "recipes/gb200-fp8/1k1k/low-latency.yaml"
    assert {phase: (knobs.get("scheduler_recv_interval"), knobs.get("fp8_block_moe_kernel"))
            for phase, knobs in sglang_disagg_pools(low).items()} == {"prefill": (10, None), "decode": (10, None)}


def test_a_recipes_knobs_reach_the_simulated_pools() -> None:
    """simulate_row passes the recipe's knobs to serve_disaggregated and records them."""
    from llmsim.validation.serving import simulate_row

    row = {**_MID_CURVE_RUN, "silicon_data_source": _MID_CURVE_RUN["silicon_data_source"].replace(
        "silicon_concurrency=512", "silicon_concurrency=8")}  # 8 clients: a quick run
    got = simulate_row(row)
    assert got["recipe_options"] == ["decode.fp8_block_moe_kernel", "decode.max_num_batched_tokens",
                                     "decode.max_num_seqs", "prefill.max_num_batched_tokens", "prefill.max_num_seqs"]
    assert got["ttft_ms"] > 0 and got["tpot_ms"] > 0
    assert got["kv_dtype"] == "fp8"  # the recipe's kv-cache-dtype


def test_inferencex_gb200_runs_of_november_2025_are_disaggregated_deployments() -> None:
    """InferenceX's GB200 runner then launched only Dynamo's submit_disagg.sh sweeps (450d834a9), which the file
    writes as aggregated rows with the deployment's GPU count as tp_size: refused with that reason, not simulated
    as one 64-GPU tensor-parallel replica; a later GB200 run is not caught by it."""
    from llmsim.validation.inferencex_recipes import GB200_DYNAMO_ONLY_NOTE
    from llmsim.validation.serving import _why_not

    row = {"id": "x", "backend": "trtllm", "system": "gb200", "mode": "agg", "model_path": "deepseek-ai/DeepSeek-R1",
           "isl": "8192", "osl": "1024", "gemm_quant_mode": "nvfp4", "moe_quant_mode": "nvfp4", "batch_size": "538",
           "tp_size": "64", "pp_size": "1", "attention_dp_size": "1", "moe_tp_size": "64", "moe_ep_size": "1",
           "prefill_num_workers": "", "decode_num_workers": "",
           "silicon_data_source": "source_file=2026-04-06.csv; model=DeepSeek-R1; silicon_concurrency=538; "
                                  "measured=2025-11-17T00:00:00.000Z; wip=False"}
    assert _why_not(row) == GB200_DYNAMO_ONLY_NOTE
    later = {**row, "silicon_data_source": row["silicon_data_source"].replace("2025-11-17", "2026-03-01")}
    assert _why_not(later) != GB200_DYNAMO_ONLY_NOTE
    assert _why_not({**row, "system": "b200_sxm"}) != GB200_DYNAMO_ONLY_NOTE


def test_each_disaggregated_pool_takes_its_own_moe_kernel_and_recv_interval() -> None:
    """SGLang's prefill servers run DeepEP's normal mode and its decode servers the low-latency one: a pool's
    fp8_block_moe_kernel times that pool's block-fp8 experts only; a bad value is refused in one line naming the
    pool and the field."""
    from llmsim.serving.disaggregated import serve_disaggregated

    # 4096-token prompts: a prefill pass whose kernels outlast its host dispatch (shorter ones are host-bound,
    # timing.host_bound, and their MoE kernel does not show)
    load = dict(engine="sglang", concurrency=2, prompt_len=4096, gen_len=4, num_requests=4)
    base = serve_disaggregated("deepseek-v3", "gb200", {"tensor_parallel": 16, "expert_parallel": 16},
                               {"tensor_parallel": 16, "expert_parallel": 16}, **load)
    prefill = {"tensor_parallel": 16, "expert_parallel": 16, "fp8_block_moe_kernel": "deepep-normal"}
    decode = {"tensor_parallel": 16, "expert_parallel": 16, "scheduler_recv_interval": 4}
    deepep = serve_disaggregated("deepseek-v3", "gb200", prefill, decode, **load)
    assert deepep.assumptions["prefill fp8_block_moe_kernel"] == "deepep-normal (this pool's own)"
    assert deepep.assumptions["decode scheduler_recv_interval"] == "4 (this pool's own)"
    assert "decode fp8_block_moe_kernel" not in deepep.assumptions

    def first_step_s(r: object, instance: int, prefill: bool) -> float:
        steps = r.step_log
        mine = (steps["instance"] == instance) & ((steps["prefill_tokens"] > 0) == prefill)
        return float(steps["time_s"][mine][0])

    # the prefill pool's experts (instance 0) on DeepEP's rows; the decode pool's (instance 1) as before
    assert first_step_s(deepep, 0, True) != pytest.approx(first_step_s(base, 0, True), rel=1e-3)
    assert first_step_s(deepep, 1, False) == pytest.approx(first_step_s(base, 1, False), rel=1e-9)
    with pytest.raises(OptionError, match="decode: fp8_block_moe_kernel='deepep'") as info:
        serve_disaggregated("deepseek-v3", "gb200", {"tensor_parallel": 16},
                            {"tensor_parallel": 16, "fp8_block_moe_kernel": "deepep"}, **load)
    assert "\n" not in str(info.value) and "deepep-low-latency" in str(info.value)
    with pytest.raises(OptionError, match="prefill pool: scheduler_recv_interval"):
        serve_disaggregated("deepseek-v3", "gb200", {"tensor_parallel": 16, "scheduler_recv_interval": 0},
                            {"tensor_parallel": 16}, **load)


_GB200_TEP8_RUN = dict(zip(_MID_CURVE_RUN, [  # InferenceX's GB200 DeepSeek-R1 fp8 1k/1k run at 27 clients, as the file
    "dsr1_gb200_trtllm_fp8_disagg_1024x1024_c27_cfg386", "db-dump/2026-04-27; config_id=386; silicon_concurrency=27; "
    "measured=2026-02-05T00:00:00.000Z; workflow_run_id=259; nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post2",
    "trtllm", "0.8.1.post2", "deepseek-ai/DeepSeek-V3", "gb200", "fp8", "disagg", "1024", "1024", "fp8", "fp8", "", "",
    "", "", "", "", "1", "1", "1", "1", "8", "1", "8", "9", "3", "8", "1", "1", "1", "8", "1562.33", "10.88"]))


def test_an_inferencex_trtllm_disaggregated_run_takes_its_srt_slurm_recipes_knobs() -> None:
    """NVIDIA/srt-slurm 75f6e32a3 recipes/trtllm/gb200-fp8/1k1k/stp/ctx1_gen3_tep8_batch8_eplb0_mtp0_27.yaml (named by
    InferenceX's nvidia-master.yaml of 2026-02-05): one context server, attention DP 8 x EP 8, max_batch_size 16,
    max_num_tokens 16384, DEEPGEMM MoE; three generation servers TP 8 x EP 8, max_batch_size 8, max_num_tokens 8,
    TRTLLM MoE, KV cache fp8 at free_gpu_memory_fraction 0.5 (context) and 0.9 (generation); concurrencies ['27']."""
    from llmsim.validation.trtllm_disagg_recipes import (
        RECIPE_OF_RUN,
        RECIPES,
        trtllm_disagg_kv_dtype,
        trtllm_disagg_pools,
        trtllm_recipe_of,
    )

    assert set(RECIPE_OF_RUN.values()) <= set(RECIPES)  # every run's recipe is read
    run = _GB200_TEP8_RUN
    assert trtllm_recipe_of(run) == "trtllm/gb200-fp8/1k1k/stp/ctx1_gen3_tep8_batch8_eplb0_mtp0_27.yaml@75f6e32a3"
    assert trtllm_disagg_pools(run) == {
        "prefill": {"max_num_seqs": 16, "max_num_batched_tokens": 16384,  # per attention-DP rank; DEEPGEMM: default
                    "gpu_memory_utilization": 0.5},
        "decode": {"max_num_seqs": 8, "max_num_batched_tokens": 8, "gpu_memory_utilization": 0.9,
                   "fp8_block_moe_kernel": "trtllm-gen"}}
    assert trtllm_disagg_kv_dtype(run) == "fp8"
    # another layout than the recipe's (2 decode workers, expert size 1), clients, source or engine: no recipe
    for other in ({"decode_num_workers": "2"}, {"prefill_moe_ep_size": "1"}, {"backend": "sglang"},
                  {"silicon_data_source": run["silicon_data_source"].replace("concurrency=27", "concurrency=28")},
                  {"silicon_data_source": "source_file=2026-04-06.csv"}):
        assert trtllm_recipe_of({**run, **other}) is None
    assert trtllm_disagg_pools({**run, "decode_num_workers": "2"}) == {} and trtllm_disagg_kv_dtype(
        {**run, "decode_num_workers": "2"}) is None


def test_each_disaggregated_pool_takes_its_own_memory_fraction() -> None:
    """A pool's gpu_memory_utilization sizes that pool's KV cache only (context servers often get less): Llama-3.1-70B
    in bf16 on H100s at TP2 holds 70.6 GB of weights per 80 GB GPU (141.1e9 / 2), so a 0.3 share leaves no KV cache
    (0.3 x 85.9e9 bytes = 25.8 GB < the weights) and is refused naming the pool that has it."""
    from llmsim.serving.disaggregated import serve_disaggregated

    load = dict(concurrency=2, prompt_len=64, gen_len=4, num_requests=4)
    two = {"tensor_parallel": 2}
    with pytest.raises(OptionError, match=r"^prefill pool: the KV cache holds 0 tokens .* gpu_memory_utilization=0\.3"):
        serve_disaggregated("llama-3.1-70b", "h100-sxm", {**two, "gpu_memory_utilization": 0.3}, two, **load)
    # the call's share for both pools, the prefill pool's own overriding it: now the decode pool is the one short
    with pytest.raises(OptionError, match=r"^decode pool: the KV cache holds 0 tokens .* gpu_memory_utilization=0\.3"):
        serve_disaggregated("llama-3.1-70b", "h100-sxm", {**two, "gpu_memory_utilization": 0.9}, two,
                            gpu_memory_utilization=0.3, **load)
    r = serve_disaggregated("llama-3.1-70b", "h100-sxm", two, {**two, "gpu_memory_utilization": 0.95}, **load)
    assert r.assumptions["decode gpu_memory_utilization"] == "0.95 (this pool's own)"
    for bad in (True, "most", 1.5):
        with pytest.raises(OptionError, match="gpu_memory_utilization") as info:
            serve_disaggregated("llama-3.1-70b", "h100-sxm", {**two, "gpu_memory_utilization": bad}, two, **load)
        assert "\n" not in str(info.value)


def test_a_run_of_one_token_requests_says_tpot_is_not_defined() -> None:
    # session 41's audit: with gen_len=1 no request has a second token, so TPOT and ITL have nothing to summarise;
    # the table showed "mean 0.0 ... ms" as if measured. The summary now counts its samples and says n/a.
    r = llmsim.serve(MODEL, GPU, request_rate=4.0, num_requests=20, prompt_len=64, gen_len=1)
    assert r.tpot_s.samples == 0 and r.itl_s.samples == 0
    assert str(r.tpot_s) == "n/a: no request generated a second token"
    assert "TPOT  n/a" in str(r) and "nan" not in str(r).lower()
    assert r.ttft_s.samples == 20  # one TTFT per request
    # in JSON the undefined figures are null (they were 0.0, read by a consumer as 0 ms), and read back as 0
    dumped = json.loads(r.model_dump_json())
    assert dumped["tpot_s"] == {**dict.fromkeys(("mean", "p50", "p90", "p95", "p99", "max")), "samples": 0}
    assert dumped["ttft_s"]["p50"] == r.ttft_s.p50
    from llmsim.serving.results import ServingResult

    assert ServingResult.model_validate_json(r.model_dump_json()).tpot_s == r.tpot_s
    # two tokens each: one gap per request, 20 TPOT samples and 20 inter-token gaps (1 x 20)
    two = llmsim.serve(MODEL, GPU, request_rate=4.0, num_requests=20, prompt_len=64, gen_len=2)
    assert two.tpot_s.samples == 20 and two.itl_s.samples == 20


def test_plan_serving_reads_percentile_99_0_as_99() -> None:
    # session 41's audit: 99.0 passed the check (99.0 == 99) and then crashed looking up the attribute "p99.0"
    p = llmsim.plan_serving(MODEL, GPU, 2.0, ttft_slo_s=1.0, tpot_slo_s=0.05, num_requests=40, max_gpus=1,
                            max_num_seqs=[16], percentile=99.0)
    assert p.percentile == 99 and isinstance(p.percentile, int)


def test_the_spec_counts_the_multi_token_prediction_layers_its_config_ships() -> None:
    # the shipped configs (model_configs/*.json): DeepSeek-V3 "num_nextn_predict_layers": 1, Kimi-K2.5's text config
    # 0, Qwen3.5 "mtp_num_hidden_layers": 1, MiniMax-M2.5 "use_mtp": true with "num_mtp_modules": 3; Llama none
    counts = {m: llmsim.load_model(m).mtp_layers
              for m in ("deepseek-v3", "kimi-k2.5", "qwen3.5-397b-a17b", "minimax-m2.5", "llama-3.1-8b")}
    assert counts == {"deepseek-v3": 1, "kimi-k2.5": 0, "qwen3.5-397b-a17b": 1, "minimax-m2.5": 3,
                      "llama-3.1-8b": 0}
    with pytest.raises(OptionError, match=r"kimi-k2\.5 states none"):
        llmsim.serve("kimi-k2.5", "h200", tensor_parallel=8, request_rate=1.0, num_requests=2, prompt_len=64,
                     gen_len=4, speculative={"method": "mtp", "num_tokens": 1, "acceptance_rate": 0.8})


def test_a_length_written_as_text_is_that_integer() -> None:
    """'512' (a length as text, as the CLI reads --prompt-len) draws 512 for every request, as 512 does; before, it
    was refused as an unknown distribution named '512'."""
    from llmsim.serving.workload import draw_lengths

    rng = np.random.default_rng(0)
    assert draw_lengths("prompt_len", "512", 3, rng).tolist() == [512, 512, 512]
    assert draw_lengths("gen_len", " 64 ", 2, rng).tolist() == [64, 64]
    text = llmsim.serve("llama-3.2-1b", "h100-sxm", concurrency=2, prompt_len="512", gen_len=8, num_requests=4)
    number = llmsim.serve("llama-3.2-1b", "h100-sxm", concurrency=2, prompt_len=512, gen_len=8, num_requests=4)
    assert text.ttft_s.mean == number.ttft_s.mean and text.to_pandas()["prompt_len"].tolist() == [512] * 4


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_disaggregated_itl_is_the_decode_step_when_requests_come_one_at_a_time(engine) -> None:
    """Requests 2 s apart, 4 tokens each: every one decodes alone on the decode instance, so each gap between
    two of its tokens is one decode step of batch 1, its TPOT (the idle time between requests is no gap; vLLM's
    decode instance samples the first token in a step of its own, which holds no gap either)."""
    r = llmsim.serve_disaggregated(MODEL, GPU, prefill={}, decode={}, engine=engine, request_rate=0.5,
                                   arrival="constant", prompt_len=512, gen_len=4, num_requests=6)
    assert r.itl_s.samples == 6 * 3  # 3 gaps per request
    # (the slowest gap, at the longest cache, is a hair over the slowest request's mean: 1e-4)
    assert r.itl_s.max == pytest.approx(r.tpot_s.max, rel=1e-4)
    assert r.itl_s.mean == pytest.approx(r.tpot_s.mean, rel=1e-6)


def test_itl_counts_the_steps_a_decode_sat_out_in_sglang_decode_pools_and_lockstep_ranks() -> None:
    """Equal lengths: the token-weighted mean ITL is the mean TPOT (every gap counted once). SGLang's decode server
    merges arrived requests into its running decodes without a forward of their own (its decode.py: "Skip the
    prefill forward but only populate metadata", then "Merge ... into running batch to run decoding"); llmsim ran
    them in a prefill-first step that held the other decodes back, which ITL missed (TPOT 7.3 ms, ITL 6.9 ms). With
    attention data parallelism one rank's prefill-first step sits beside another's decodes in a joint step: each
    rank's gaps are read from its own rows (TPOT 7.7 ms, ITL 7.2 ms before)."""
    r = llmsim.serve_disaggregated(MODEL, GPU, prefill={}, decode={}, engine="sglang", request_rate=8.0,
                                   num_requests=120, prompt_len=2048, gen_len=64)
    decode = r.step_log["instance"] >= 1
    assert np.array_equal(r.step_log["decode_requests"][decode], r.step_log["running"][decode])  # none held back
    assert r.itl_s.mean == pytest.approx(r.tpot_s.mean, rel=1e-9)
    for engine in ("sglang", "trtllm"):
        a = llmsim.serve("qwen3-30b-a3b", "h100-sxm", tensor_parallel=2, expert_parallel=2,
                         attention_data_parallel=2, engine=engine, request_rate=4.0, num_requests=50, gen_len=64)
        assert a.itl_s.mean == pytest.approx(a.tpot_s.mean, rel=1e-9)
        assert a.itl_s.samples == 50 * 63


def test_disaggregated_batch_kv_and_steps_are_the_decode_pools() -> None:
    """The limits a disaggregated result reports are the decode pool's, and so are its peak KV use (a share of the
    decode instance's blocks), batch and step count; the step log keeps both pools' steps (instance column,
    prefill instances first)."""
    r = llmsim.serve_disaggregated(MODEL, GPU, prefill={"tensor_parallel": 8, "max_num_batched_tokens": 200_000},
                                   decode={"gpu_memory_utilization": 0.3}, prompt_len=30_000, gen_len=2,
                                   request_rate=100.0, num_requests=40)
    log = r.step_log
    decode = log["instance"] >= 1  # one prefill instance (instance 0), then the decode one
    assert 0 < r.peak_kv_fraction <= 1.0  # the prefill instance's 30k-token prompts held 3.7x the decode pool's KV
    assert r.peak_kv_fraction == pytest.approx(log["kv_blocks_used"][decode].max() * r.block_size / r.kv_cache_tokens)
    assert r.steps == int(decode.sum()) < len(log["time_s"])
    head, engine = str(r).splitlines()[:2]  # both pools named (it showed the decode pool's tensor_parallel alone)
    assert "(vllm, disaggregated: prefill 1 x TP8, decode 1 x TP1)" in head and engine.startswith("  engine (decode")
