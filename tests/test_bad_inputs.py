"""First contact: every bad input is refused with a one-line llmsim error naming the field.

A fixed list of bad inputs, each through the public entry point a user calls (load_model, simulate,
find_crossover, first_limit, build_ops, the CLI). Each must raise the stated llmsim.errors class, name the
field, and fit on one line: never a traceback from deep inside, never a silently wrong answer.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llmsim
from llmsim.errors import ConfigError, HardwareError, LlmsimError, OptionError
from llmsim.shipped import model_configs_dir

from .tiny_configs import TINY_CONFIGS

ROOT = Path(llmsim.__file__).resolve().parents[1]
BASE = json.loads((ROOT / "model_configs" / "llama-3.2-1b.json").read_text())
NO_HEAD_DIM = {k: v for k, v in BASE.items() if k != "head_dim"}
MODEL, GPU = "llama-3.2-1b", "h100-sxm"  # context 131072 tokens (max_position_embeddings)


def _config(**changes: Any) -> Callable[[], Any]:
    return lambda: llmsim.load_model(dict(BASE, **changes))


def _simulate_config(**changes: Any) -> Callable[[], Any]:
    return lambda: llmsim.simulate(dict(BASE, **changes), GPU, batch_size=1, prompt_len=16, gen_len=2)


def _crossover(**kwargs: Any) -> Callable[[], Any]:
    return lambda: llmsim.find_crossover(MODEL, GPU, **kwargs)


def _limit(**kwargs: Any) -> Callable[[], Any]:
    return lambda: llmsim.first_limit(MODEL, GPU, **kwargs)


def _simulate(**kwargs: Any) -> Callable[[], Any]:
    return lambda: llmsim.simulate(MODEL, GPU, **{"batch_size": 1, "prompt_len": 16, "gen_len": 2, **kwargs})


def _sweep(**kwargs: Any) -> Callable[[], Any]:
    return lambda: llmsim.sweep(MODEL, GPU, **{"batch_size": 1, "prompt_len": 16, "gen_len": 2, **kwargs})


def _plan(**kwargs: Any) -> Callable[[], Any]:  # every case is refused before any split is simulated
    return lambda: llmsim.plan(MODEL, GPU, **{"prompt_len": 16, "gen_len": 2, **kwargs})


def _max_batch(**kwargs: Any) -> Callable[[], Any]:
    return lambda: llmsim.max_batch_size(MODEL, GPU, **{"prompt_len": 16, "gen_len": 2, **kwargs})


def _max_context(**kwargs: Any) -> Callable[[], Any]:
    return lambda: llmsim.max_context(MODEL, GPU, **{"batch_size": 1, **kwargs})


def _serve(**kwargs: Any) -> Callable[[], Any]:  # every case is refused before any step is simulated
    return lambda: llmsim.serve(MODEL, GPU, **{"num_requests": 2, "prompt_len": 16, "gen_len": 2, **kwargs})


def _plan_serving(**kwargs: Any) -> Callable[[], Any]:  # refused before any shape is served
    return lambda: llmsim.plan_serving(MODEL, GPU, **{"request_rate": 2.0, "tpot_slo_s": 0.05, **kwargs})


def _result() -> Any:
    return llmsim.simulate(MODEL, GPU, batch_size=1, prompt_len=16, gen_len=2)


def _build_ops(**kwargs: Any) -> Callable[[], Any]:
    return lambda: llmsim.build_ops("llama-3.1-8b", "prefill", **{"batch_size": 1, "seq_len": 16, **kwargs})


# (id, call, error class, a regex the message must match: it names the field)
CASES: list[tuple[str, Callable[[], Any], type[LlmsimError], str]] = [
    # ---- model configs ------------------------------------------------------------------------------
    ("heads-not-dividing-hidden", lambda: llmsim.load_model(dict(NO_HEAD_DIM, num_attention_heads=30)),
     ConfigError, "hidden_size=2048 is not a multiple of num_attention_heads=30"),
    ("heads-not-dividing-hidden-simulate",
     lambda: llmsim.simulate(dict(NO_HEAD_DIM, num_attention_heads=30), GPU, prompt_len=16, gen_len=2),
     ConfigError, "num_attention_heads=30"),
    ("heads-not-dividing-hidden-head-dim-given", _config(num_attention_heads=30), ConfigError,
     "hidden_size=2048 is not a multiple of num_attention_heads=30"),
    ("hidden-size-string", _config(hidden_size="2048"), ConfigError, r"hidden_size='2048'.*integer in 1\.\."),
    ("hidden-size-nan", _config(hidden_size=float("nan")), ConfigError, "hidden_size=nan"),
    ("hidden-size-fraction", _config(hidden_size=2048.5), ConfigError, "hidden_size=2048.5"),
    ("hidden-size-huge", _config(hidden_size=2**40), ConfigError, r"hidden_size=1099511627776.*1\.\.1048576"),
    ("hidden-size-huge-simulate", _simulate_config(hidden_size=2**40), ConfigError, "hidden_size"),
    ("hidden-size-bool", _config(hidden_size=True), ConfigError, "hidden_size=True"),
    ("heads-zero", _config(num_attention_heads=0), ConfigError, "num_attention_heads=0"),
    ("heads-zero-simulate", _simulate_config(num_attention_heads=0), ConfigError, "num_attention_heads=0"),
    # a new-user audit: a list as model_type was an unhashable-type traceback; the others ran (a negative expert
    # count as a dense model, 6.68 GB of weights for Qwen3-30B-A3B's 61)
    ("model-type-list", _simulate_config(model_type=["llama"]), ConfigError,
     r"model_type=\['llama'\] is not allowed; give a name"),
    ("moe-negative-experts", lambda: llmsim.simulate(
        {**json.loads((ROOT / "model_configs" / "qwen3-30b-a3b.json").read_text()), "num_experts": -4}, GPU),
     ConfigError, "num_experts=-4 is not allowed"),
    ("mlp-only-layers-outside", lambda: llmsim.simulate(
        {**json.loads((ROOT / "model_configs" / "qwen3-30b-a3b.json").read_text()), "mlp_only_layers": [100, -1]}, GPU),
     ConfigError, r"mlp_only_layers=\[100, -1\] is not allowed; give a list of layer indices in 0\.\.47"),
    ("rope-factor-negative", _simulate_config(rope_scaling={"rope_type": "yarn", "factor": -1}), ConfigError,
     "rope_scaling factor=-1 is not allowed"),
    ("odd-head-dim-rotary", _config(head_dim=7), ConfigError,
     r"\(llama\): head_dim=7 is odd, but RoPE rotates pairs of dimensions.*choose an even head_dim"),
    ("odd-head-dim-derived", lambda: llmsim.load_model(dict(NO_HEAD_DIM, hidden_size=224)), ConfigError,
     r"head_dim = hidden_size / num_attention_heads = 224 / 32 = 7 is odd"),  # 224 / 32 = 7
    ("odd-partial-rotary", lambda: llmsim.load_model(dict(TINY_CONFIGS["phi3"], partial_rotary_factor=0.4375)),
     ConfigError, "partial_rotary_factor 0.4375 rotates 7 dimensions"),  # head_dim 64 / 4 = 16; 16 * 0.4375 = 7
    ("odd-head-dim-mixtral", lambda: llmsim.load_model(dict(TINY_CONFIGS["mixtral"], head_dim=9)), ConfigError,
     r"\(mixtral\): head_dim=9 is odd"),
    ("falcon-head-dim-disagrees", lambda: llmsim.load_model(dict(TINY_CONFIGS["falcon-mqa-parallel"], head_dim=7)),
     ConfigError, "head_dim=7 disagrees with hidden_size / num_attention_heads = 64 / 4 = 16"),
    ("gpt2-head-dim-ignored", lambda: llmsim.load_model(dict(TINY_CONFIGS["gpt2"], head_dim=7)), ConfigError,
     "head_dim=7 disagrees with n_embd / n_head"),
    ("unknown-torch-dtype", _config(torch_dtype="float12"), ConfigError, r"torch_dtype='float12'.*bfloat16"),
    ("unknown-torch-dtype-simulate", _simulate_config(torch_dtype="float12"), ConfigError, "torch_dtype"),
    ("no-layers", _config(num_hidden_layers=0), ConfigError, "num_hidden_layers=0"),
    ("no-layers-simulate", _simulate_config(num_hidden_layers=0), ConfigError, "num_hidden_layers=0"),
    ("negative-vocab", _config(vocab_size=-1), ConfigError, "vocab_size=-1"),
    ("no-mlp", _config(intermediate_size=0), ConfigError, "intermediate_size=0"),
    ("no-kv-heads", _config(num_key_value_heads=0), ConfigError, "num_key_value_heads=0"),
    ("kv-heads-not-dividing", lambda: llmsim.load_model(dict(TINY_CONFIGS["llama-gqa"], num_key_value_heads=3)),
     ConfigError, "num_attention_heads=4 is not a multiple of num_key_value_heads=3"),
    ("negative-context", _config(max_position_embeddings=-5), ConfigError, "max_position_embeddings=-5"),
    ("gpt2-heads-not-dividing", lambda: llmsim.load_model(dict(TINY_CONFIGS["gpt2"], n_head=5)),
     ConfigError, "n_embd=64 is not a multiple of n_head=5"),
    ("gpt-neox-odd-rotary", lambda: llmsim.load_model(dict(TINY_CONFIGS["gpt_neox"], rotary_pct=0.2)),
     ConfigError, r"head_dim=16 with rotary_dim=3: .* must be even"),
    ("missing-field", lambda: llmsim.load_model(
        {k: v for k, v in TINY_CONFIGS["deepseek_v3"].items() if k != "n_routed_experts"}),
     ConfigError, "missing field 'n_routed_experts'"),
    ("unsupported-model-type", lambda: llmsim.load_model({"model_type": "t5"}), ConfigError,
     "model_type='t5' is not supported"),
    # ---- regime API -----------------------------------------------------------------------------------
    ("crossover-negative-batch", _crossover(vary="kv_len", batch_size=-3), OptionError,
     r"batch_size=-3 must be an integer in 1\.\."),
    ("crossover-zero-batch", _crossover(vary="kv_len", batch_size=0), OptionError,
     r"batch_size=0 must be an integer in 1\.\."),
    ("crossover-fraction-batch", _crossover(vary="kv_len", batch_size=2.5), OptionError, "batch_size=2.5"),
    ("crossover-negative-kv", _crossover(kv_len=-100), OptionError, r"kv_len=-100 must be an integer in 0\.\."),
    ("crossover-kv-past-context", _crossover(kv_len=10**7), OptionError, "kv_len.*max_position_embeddings=131072"),
    ("crossover-hi-past-context", _crossover(vary="kv_len", hi=10**7), OptionError,
     r"hi \(kv_len\).*max_position_embeddings"),
    ("crossover-seq-past-context", _crossover(phase="prefill", vary="batch_size", seq_len=200_000), OptionError,
     "seq_len.*max_position_embeddings"),
    ("crossover-nan-lo", _crossover(vary="batch_size", lo=float("nan")), OptionError, r"lo \(batch_size\)=nan"),
    ("crossover-bad-phase", _crossover(phase="generate"), OptionError, "phase='generate'"),
    ("crossover-bad-vary", _crossover(vary="prompt_len"), OptionError, "vary='prompt_len'"),
    ("limit-negative-batch", _limit(batch_size=-3), OptionError, r"batch_size=-3 must be an integer in 1\.\."),
    ("limit-zero-batch", _limit(batch_size=0), OptionError, r"batch_size=0 must be an integer in 1\.\."),
    ("limit-negative-kv", _limit(vary="batch_size", kv_len=-100), OptionError,
     r"kv_len=-100 must be an integer in 0\.\."),
    ("limit-kv-past-context", _limit(vary="batch_size", kv_len=10**7), OptionError,
     "kv_len.*max_position_embeddings=131072"),
    ("limit-stop-past-context", _limit(stop=10**7), OptionError, r"stop \(kv_len\).*max_position_embeddings"),
    ("limit-negative-tpot-slo", _limit(tpot_slo_s=-1), OptionError, "tpot_slo_s=-1 must be a positive"),
    ("limit-negative-ttft-slo", _limit(phase="prefill", ttft_slo_s=-1), OptionError, "ttft_slo_s=-1 must be"),
    ("limit-nan-tpot-slo", _limit(tpot_slo_s=float("nan")), OptionError, "tpot_slo_s=nan"),
    ("limit-zero-gen-len", _limit(gen_len=0), OptionError, r"gen_len=0 must be an integer in 1\.\."),
    # ---- precisions the device lacks -----------------------------------------------------------------
    ("int4-on-hopper", _simulate(weight_dtype="int4", activation_dtype="int4"), OptionError,
     r"activation_dtype='int4'.*no matrix-unit peak for int4; it has bf16, fp16, fp8, int8, tf32"),
    ("int4-on-hopper-crossover", _crossover(activation_dtype="int4"), OptionError, "activation_dtype='int4'"),
    # ---- simulate / build_ops options -----------------------------------------------------------------
    ("unknown-attention", _build_ops(attention="fast"), OptionError,
     r"attention='fast' is not allowed; choose one of flash, math"),
    ("unknown-weight-dtype", _build_ops(weight_dtype="int3"), OptionError, "weight_dtype='int3' is not allowed"),
    ("ops-zero-batch", _build_ops(batch_size=0), OptionError, r"batch_size=0 must be an integer in 1\.\."),
    ("ops-seq-past-context", _build_ops(seq_len=10**7), OptionError, "exceeds the model's context"),
    ("misspelt-option", _build_ops(atention="math"), OptionError, "option='atention' is not allowed"),
    ("simulate-zero-batch", _simulate(batch_size=0), OptionError, r"batch_size=0 must be an integer in 1\.\."),
    # Qwen3-235B-A22B-FP8's experts (1536 wide, 128x128 scale blocks) at TP 8 without EP: 192 per GPU, which vLLM
    # refuses ("output_size ... = 192 is not divisible by weight quantization block_n = 128"); was: TPOT 43.95 ms
    ("simulate-tp-cuts-fp8-scale-blocks", lambda: llmsim.simulate("qwen3-235b-a22b-fp8", "h200", tensor_parallel=8,
                                                                 batch_size=1, prompt_len=16, gen_len=2), OptionError,
     "expert intermediate_size=1536 over 8 GPUs is 192 per GPU, not whole 128x128 scale blocks"),
    # options that would be reported and ignored (the same numbers) are refused by name
    ("simulate-moe-kernel-on-dense", _simulate(mxfp4_moe_kernel="marlin"), OptionError,
     "mxfp4_moe_kernel='marlin': the model has no experts"),
    ("simulate-moe-routing-on-dense", _simulate(moe_routing="balanced"), OptionError,
     "moe_routing='balanced': the model has no experts"),
    ("simulate-pipeline-decode-without-stages", _simulate(pipeline_decode="lockstep"), OptionError,
     "pipeline_decode='lockstep' applies under pipeline_parallel > 1"),
    ("sweep-pipeline-decode", _sweep(pipeline_decode="lockstep"), OptionError,
     r"pipeline_decode='lockstep': sweep\(\) runs no pipeline stages"),
    ("crossover-pipeline-decode", _crossover(pipeline_decode="lockstep"), OptionError,
     r"pipeline_decode='lockstep': find_crossover\(\) / first_limit\(\) runs no pipeline stages"),
    ("limit-pipeline-decode", _limit(pipeline_decode="lockstep"), OptionError, "runs no pipeline stages"),
    ("max-context-pipeline-decode", _max_context(pipeline_decode="lockstep"), OptionError,
     r"max_context\(\) runs no pipeline stages"),
    ("serve-pipeline-decode", _serve(concurrency=2, pipeline_decode="lockstep", pipeline_parallel=2), OptionError,
     "pipeline_decode='lockstep': serve\\(\\) runs pipeline stages"),
    ("serve-adp-counters-without-balance", _serve(concurrency=2, attention_dp_timeout_iters=5), OptionError,
     "give attention_dp_balance=True"),
    ("disaggregated-pool-moe-kernel-on-dense", lambda: llmsim.serve_disaggregated(
        MODEL, GPU, {"fp8_block_moe_kernel": "deepep-normal"}, {}, concurrency=2, num_requests=2), OptionError,
     "prefill: fp8_block_moe_kernel='deepep-normal': the model has no experts"),
    ("simulate-past-context", _simulate(prompt_len=131072, gen_len=2), OptionError, "max_position_embeddings"),
    ("unknown-engine", _simulate(engine="tgi"), OptionError, r"engine.*tgi.*vllm"),
    ("bad-fused-projections", _simulate(fused_projections="yes"), OptionError, "fused_projections"),
    ("bad-linear-attention-kernel", _simulate(linear_attention_kernel="triton"), OptionError,
     "linear_attention_kernel='triton' is not allowed; choose one of fla, fused"),
    ("tensor-parallel-not-dividing", _simulate(tensor_parallel=3), OptionError, "tensor_parallel=3"),
    ("pipeline-past-layers", _simulate(pipeline_parallel=200), OptionError, "exceeds the model's 16 layers"),
    # ---- sweep ------------------------------------------------------------------------------------------
    ("sweep-negative-batch", _sweep(batch_size=[1, -4]), OptionError, r"batch_size holds -4: each value must be an "
     r"integer in 1\.\.16777216"),
    ("sweep-nan-batch", _sweep(batch_size=[1, float("nan")]), OptionError, "batch_size holds nan"),
    ("sweep-inf-prompt", _sweep(prompt_len=float("inf")), OptionError, "prompt_len=inf must be an integer"),
    ("sweep-fraction-gen", _sweep(gen_len=[2, 2.5]), OptionError, "gen_len holds 2.5"),
    ("sweep-huge-batch", _sweep(batch_size=2**62), OptionError, r"batch_size=4611686018427387904 .*1\.\.16777216"),
    ("sweep-huge-float-batch", _sweep(batch_size=1e18), OptionError, "batch_size=1e\\+18"),
    ("sweep-past-int64-batch", _sweep(batch_size=10**30), OptionError, "batch_size=1000000000000000000000000000000"),
    ("sweep-string-batch", _sweep(batch_size="8"), OptionError, "batch_size='8' must be an integer"),
    ("sweep-none-prompt", _sweep(prompt_len=None), OptionError, "prompt_len=None must be an integer"),
    ("sweep-bool-batch", _sweep(batch_size=True), OptionError, "batch_size=True must be an integer"),
    ("sweep-empty-batch", _sweep(batch_size=[]), OptionError, "batch_size is empty"),
    ("sweep-grid-2d", _sweep(batch_size=[[1, 2], [3, 4]]), OptionError, "batch_size must be a number or a flat list"),
    ("sweep-ragged", _sweep(batch_size=[1, [2, 3]]), OptionError, r"batch_size=\[1, \[2, 3\]\] must be"),
    ("sweep-past-context", _sweep(prompt_len=[16, 10**6]), OptionError, "max_position_embeddings"),
    ("sweep-unknown-option", _sweep(fuson="none"), OptionError, "option='fuson' is not allowed.*fusion"),
    ("sweep-bad-fusion", _sweep(fusion="lots"), OptionError, "fusion='lots' is not allowed; choose one of eager"),
    ("sweep-pipeline", _sweep(pipeline_parallel=2), OptionError, "option='pipeline_parallel' is not allowed"),
    ("sweep-tensor-parallel-list", _sweep(tensor_parallel=[1, 2]), OptionError, "tensor_parallel"),
    ("sweep-unknown-model", lambda: llmsim.sweep("llama-9", GPU), LlmsimError, "model 'llama-9' is not a shipped"),
    ("sweep-unknown-hardware", lambda: llmsim.sweep(MODEL, "h1000"), LlmsimError, "hardware 'h1000'.*did you mean"),
    ("sweep-model-int", lambda: llmsim.sweep(5, GPU), ConfigError, "model: cannot load from a int"),
    ("sweep-unknown-tables", _sweep(tables="/no/such/folder"), OptionError,
     r"tables='/no/such/folder' is neither a table set name \(sglang, trtllm, vllm\) nor an existing folder"),
    # ---- plan -------------------------------------------------------------------------------------------
    ("plan-zero-gpus", _plan(max_gpus=0), OptionError, r"max_gpus=0 must be an integer in 1\.\."),
    ("plan-string-gpus", _plan(max_gpus="8"), OptionError, "max_gpus='8' must be an integer"),
    ("plan-nan-gpus", _plan(max_gpus=float("nan")), OptionError, "max_gpus=nan"),
    ("plan-negative-ttft", _plan(ttft_slo_s=-1), OptionError, "ttft_slo_s=-1 must be a positive number of seconds"),
    ("plan-nan-tpot", _plan(tpot_slo_s=float("nan")), OptionError, "tpot_slo_s=nan must be a positive"),
    ("plan-string-tpot", _plan(tpot_slo_s="fast"), OptionError, "tpot_slo_s='fast' must be a positive"),
    ("plan-inf-target", _plan(target_tokens_per_s=float("inf")), OptionError, "target_tokens_per_s=inf"),
    ("plan-negative-target", _plan(target_tokens_per_s=-5), OptionError, "target_tokens_per_s=-5 must be a positive"),
    ("plan-negative-price", _plan(usd_per_gpu_hour=-2), OptionError, "usd_per_gpu_hour=-2 must be a positive"),
    ("plan-empty-batches", _plan(batch_sizes=[]), OptionError, "batch_sizes is empty"),
    ("plan-zero-batch", _plan(batch_sizes=[0, 8]), OptionError, "batch_sizes holds 0"),
    ("plan-zero-pipeline", _plan(pipeline_parallel=[0]), OptionError, "pipeline_parallel holds 0"),
    ("plan-empty-tensor", _plan(tensor_parallel=[]), OptionError, "tensor_parallel is empty"),
    ("plan-tensor-not-dividing", _plan(tensor_parallel=[3]), OptionError,
     "no tensor/pipeline split divides this model within max_gpus=64: tensor_parallel=3: num_key_value_heads=8"),
    ("plan-expert-not-dividing", lambda: llmsim.plan("mixtral-8x7b", GPU, expert_parallel=3, batch_sizes=[8]),
     OptionError, r"expert_parallel=3 must divide tensor_parallel=1 .*\(and 4 more\)"),  # tp 1, 2, 4, 8, 16
    ("plan-zero-prompt", _plan(prompt_len=0), OptionError, r"prompt_len=0 must be an integer in 1\.\."),
    ("plan-past-context", _plan(prompt_len=10**7), OptionError, "exceeds the model's context"),
    ("plan-unknown-option", _plan(fuson="none"), OptionError, "option='fuson' is not allowed"),
    ("plan-unknown-engine", _plan(engine="tgi"), OptionError, "engine='tgi' is not allowed; choose one of"),
    ("plan-int4-on-hopper", _plan(weight_dtype="int4", activation_dtype="int4"), OptionError,
     "activation_dtype='int4'"),
    ("plan-batch-size", _plan(batch_size=4), OptionError, "option='batch_size' is not allowed"),
    # ---- max_batch_size / max_context ---------------------------------------------------------------------
    ("max-batch-zero-prompt", _max_batch(prompt_len=0), OptionError, r"prompt_len=0 must be an integer in 1\.\."),
    ("max-batch-list-prompt", _max_batch(prompt_len=[5, 6]), OptionError, r"prompt_len=\[5, 6\]: give one integer"),
    ("max-batch-nan-gen", _max_batch(gen_len=float("nan")), OptionError, "gen_len=nan"),
    ("max-batch-zero-limit", _max_batch(limit=0), OptionError, r"limit=0 must be an integer in 1\.\.16777216"),
    ("max-batch-inf-limit", _max_batch(limit=float("inf")), OptionError, "limit=inf"),
    ("max-batch-fraction-limit", _max_batch(limit=2.5), OptionError, "limit=2.5"),
    ("max-batch-huge-limit", _max_batch(limit=10**30), OptionError, "limit=1000000000000000000000000000000"),
    ("max-batch-past-context", _max_batch(prompt_len=10**7), OptionError, "max_position_embeddings"),
    # (pipeline_parallel itself was refused until session 43; it is taken now, tests/test_parallel.py)
    ("max-batch-pipeline-zero", _max_batch(pipeline_parallel=0), OptionError, "pipeline_parallel=0 must be"),
    ("max-context-zero-batch", _max_context(batch_size=0), OptionError, r"batch_size=0 must be an integer in 1\.\."),
    ("max-context-list-batch", _max_context(batch_size=[1, 2]), OptionError, r"batch_size=\[1, 2\]: give one"),
    ("max-context-huge-batch", _max_context(batch_size=1e20), OptionError, "batch_size=1e\\+20"),
    ("max-context-list-gen", _max_context(gen_len=[1, 2]), OptionError, r"gen_len=\[1, 2\]: give one"),
    ("max-context-gen-past-context", _max_context(gen_len=10**7), OptionError, "max_position_embeddings"),
    ("max-context-tensor-parallel", _max_context(tensor_parallel=3), OptionError, "tensor_parallel=3"),
    # ---- fusion_savings -----------------------------------------------------------------------------------
    ("fusion-savings-fusion", lambda: llmsim.fusion_savings(MODEL, GPU, fusion="none"), OptionError,
     "fusion='none': fusion_savings compares"),
    ("fusion-savings-zero-batch", lambda: llmsim.fusion_savings(MODEL, GPU, batch_size=0), OptionError,
     "batch_size=0"),
    ("fusion-savings-list", lambda: llmsim.fusion_savings(MODEL, GPU, batch_size=[1, 2]), OptionError,
     "batch_size must be a single integer"),
    ("fusion-savings-nan-prompt", lambda: llmsim.fusion_savings(MODEL, GPU, prompt_len=float("nan")), OptionError,
     "prompt_len=nan"),
    # ---- find_crossover / first_limit, beyond the above -------------------------------------------------------
    ("crossover-string-lo", _crossover(lo="a"), OptionError, "lo='a' must be a number"),
    ("crossover-bool-lo", _crossover(lo=True, hi=5), OptionError, "lo=True must be a number"),
    ("crossover-inverted-bracket", _crossover(lo=100, hi=10), OptionError, "the bracket needs lo < hi"),
    ("crossover-huge-hi", _crossover(hi=1e300), OptionError,
     r"hi \(batch_size\)=1e\+300 is past the largest batch llmsim takes \(16777216\)"),
    ("crossover-huge-fixed-batch", _crossover(vary="kv_len", batch_size=1e20), OptionError, "batch_size=1e\\+20"),
    ("crossover-list-kv", _crossover(kv_len=[1, 2]), OptionError, r"kv_len=\[1, 2\]: give one integer"),
    ("crossover-list-phase", _crossover(phase=["decode"]), OptionError, r"phase=\['decode'\] is not allowed"),
    ("crossover-fixed-varied", _crossover(vary="batch_size", batch_size=8), OptionError,
     "batch_size=8: batch_size is the quantity varied"),
    ("crossover-other-phase", _crossover(phase="prefill", vary="seq_len", kv_len=8), OptionError,
     "kv_len=8 does not apply to phase='prefill'"),
    ("crossover-gen-len", _crossover(gen_len=5), OptionError, "option='gen_len' is not allowed"),
    ("limit-huge-stop", _limit(vary="batch_size", stop=1e15), OptionError, r"stop \(batch_size\)=1e\+15 is past"),
    ("limit-bool-slo", _limit(tpot_slo_s=True), OptionError, "tpot_slo_s=True must be a positive"),
    ("limit-inf-slo", _limit(tpot_slo_s=float("inf")), OptionError, "tpot_slo_s=inf"),
    ("limit-list-gen", _limit(gen_len=[1, 2]), OptionError, r"gen_len=\[1, 2\]: give one integer"),
    ("limit-gen-past-context", _limit(gen_len=10**7), OptionError, "gen_len=10000000 exceeds the model's context"),
    ("limit-tpot-in-prefill", _limit(phase="prefill", tpot_slo_s=0.01), OptionError,
     "tpot_slo_s does not apply to phase='prefill'; its latency target is ttft_slo_s"),
    ("limit-ttft-in-decode", _limit(ttft_slo_s=0.01), OptionError, "ttft_slo_s does not apply to phase='decode'"),
    ("limit-fixed-varied", _limit(kv_len=8), OptionError,  # it told limit to give lo and hi (session 33)
     "kv_len=8: kv_len is the quantity varied; first_limit searches it from 1 upward; drop it"),
    ("limit-bad-phase", _limit(phase="gen"), OptionError, "phase='gen' is not allowed; choose one of decode, prefill"),
    ("limit-inverted-range", _limit(start=100, stop=10), OptionError, "the bracket needs start < stop"),
    ("crossover-inf-hi", _crossover(vary="kv_len", hi=float("inf")), OptionError,
     r"hi \(kv_len\)=inf must be a finite number >= 0"),
    # ---- more types -------------------------------------------------------------------------------------
    ("sweep-complex-batch", _sweep(batch_size=1 + 2j), OptionError, r"batch_size=\(1\+2j\) must be an integer"),
    ("plan-bool-gpus", _plan(max_gpus=True), OptionError, "max_gpus=True must be an integer"),
    ("max-context-string-gen", _max_context(gen_len="4"), OptionError, "gen_len='4' must be an integer"),
    ("simulate-tables-typo", _simulate(tables="vlm"), OptionError, "tables='vlm' is neither a table set name"),
    # session 33: it named the inter-node bandwidth missing, the file having no [interconnect] at all
    ("simulate-split-over-a-device-without-interconnect", lambda: llmsim.simulate(
        MODEL, "cpu-generic", tensor_parallel=2), LlmsimError, r"has no \[interconnect\] section"),
    ("simulate-tables-number", _simulate(tables=5), OptionError, "tables=5 is neither"),
    ("simulate-tables-empty", _simulate(tables=""), OptionError, "tables='' is neither"),  # was: no tables
    # session 33: a folder with no table file (one level too high) ran every op on the roofline without a word
    ("simulate-tables-folder-without-tables", _simulate(tables=str(Path(llmsim.__file__).parent)), OptionError,
     "holds no kernel table file"),
    ("simulate-table-families-number", _simulate(table_families=5), OptionError,
     "table_families=5 must be a list of family names"),  # was: TypeError
    ("simulate-table-families-unknown", _simulate(table_families=["gemmx"]), OptionError,
     "table_families='gemmx' is not allowed; choose one of"),
    # ---- engine host time, pipeline decode, pipelined serving ------------------------------------------
    ("simulate-step-host-string", _simulate(step_host_s="x"), OptionError,
     "step_host_s='x' must be a positive number of seconds"),
    ("simulate-step-host-nan", _simulate(step_host_s=float("nan")), OptionError, "step_host_s=nan must be"),
    ("simulate-step-host-bool", _simulate(step_host_s=True), OptionError, "step_host_s=True must be"),
    ("sweep-step-host-negative", _sweep(step_host_s=-1), OptionError, "step_host_s=-1 must be"),
    # a prefill-only option on a decode crossover changed nothing (a new-user audit, session 46)
    ("crossover-decode-clock", _crossover(phase="decode", vary="batch_size", kv_len=128, clock="boost"), OptionError,
     "clock='boost' applies to prefill passes; phase='decode' would ignore it"),
    ("crossover-decode-dispatch", _crossover(phase="decode", vary="batch_size", kv_len=128, prefill_dispatch_s=1.0),
     OptionError, "prefill_dispatch_s=1.0 applies to prefill passes"),
    # a host time the overhead mode would drop (a new-user audit: TPOT unchanged, no word)
    ("simulate-step-host-overhead-none", _simulate(step_host_s=0.01, overhead="none"), OptionError,
     "step_host_s=0.01 has no effect with overhead='none', which charges no host time"),
    ("sweep-prefill-dispatch-eager", _sweep(prefill_dispatch_s=1e-3, overhead="eager"), OptionError,
     "prefill_dispatch_s=0.001 has no effect with overhead='eager':"),
    ("simulate-prefill-dispatch-transformers", _simulate(prefill_dispatch_s=1e-3, engine="transformers"), OptionError,
     r"prefill_dispatch_s=0.001 has no effect with overhead='eager' \(engine transformers\)"),
    ("serve-step-host-overhead-none", _serve(concurrency=1, step_host_s=0.01, overhead="none"), OptionError,
     "step_host_s=0.01 has no effect with overhead='none'"),
    ("simulate-pipeline-decode-unknown", _simulate(pipeline_decode=5), OptionError,
     "pipeline_decode=5 is not allowed; choose one of lockstep, steady"),
    ("simulate-engine-step-string", _simulate(engine_step="yes"), OptionError,
     "engine_step must be True or False, not 'yes'"),
    ("serve-pipeline-zero", lambda: llmsim.serve("llama-3.1-8b", GPU, concurrency=1, num_requests=1,
                                                  pipeline_parallel=0), OptionError, "pipeline_parallel=0 must be"),
    ("serve-pipeline-float", lambda: llmsim.serve("llama-3.1-8b", GPU, concurrency=1, num_requests=1,
                                                   pipeline_parallel=2.5), OptionError, "pipeline_parallel=2.5 must"),
    ("serve-pipeline-with-speculation", lambda: llmsim.serve(
        "llama-3.1-8b", GPU, concurrency=1, num_requests=1, pipeline_parallel=2, speculative={"method": "ngram"}),
     OptionError, "speculative decoding with pipeline_parallel > 1 is not modelled"),
    # attention data parallelism: a count that does not split the GPUs, a dense model, pipeline stages
    ("serve-attention-dp-not-dividing", lambda: llmsim.serve("qwen3-30b-a3b", "h100-sxm", tensor_parallel=4,
                                                              attention_data_parallel=3, concurrency=1,
                                                              num_requests=1), OptionError,
     r"^attention_data_parallel=3 must divide tensor_parallel=4"),
    ("serve-attention-dp-dense", _serve(tensor_parallel=2, attention_data_parallel=2, concurrency=1), OptionError,
     "attention_data_parallel=2: the model has no experts"),
    ("serve-attention-dp-zero", _serve(attention_data_parallel=0, concurrency=1), OptionError,
     "attention_data_parallel=0 must be an integer in 1"),
    ("serve-attention-dp-float", _serve(attention_data_parallel=1.5, concurrency=1), OptionError,
     "attention_data_parallel=1.5 must be an integer"),
    ("serve-attention-dp-with-pipeline", lambda: llmsim.serve(
        "qwen3-30b-a3b", "h100-sxm", tensor_parallel=2, attention_data_parallel=2, pipeline_parallel=2,
        concurrency=1, num_requests=1), OptionError, "attention_data_parallel > 1 with pipeline_parallel > 1"),
    ("disaggregated-attention-dp-not-dividing", lambda: llmsim.serve_disaggregated(
        "qwen3-30b-a3b", "h100-sxm", prefill={"tensor_parallel": 2, "attention_data_parallel": 4},
        decode={"tensor_parallel": 2}, concurrency=1, num_requests=1), OptionError,
     r"^prefill: attention_data_parallel=4 must divide tensor_parallel=2"),
    ("disaggregated-kv-too-small-names-its-pool", lambda: llmsim.serve_disaggregated(  # session 33: no pool named
        "llama-3.1-70b", "h100-sxm", prefill={"tensor_parallel": 4}, decode={"tensor_parallel": 2}, concurrency=1,
        num_requests=1, prompt_len=30_000, gen_len=10), OptionError, r"^decode pool: the KV cache holds"),
    ("disaggregated-attention-dp-outside-pools", lambda: llmsim.serve_disaggregated(
        "qwen3-30b-a3b", "h100-sxm", prefill={}, decode={}, attention_data_parallel=2, concurrency=1,
        num_requests=1), OptionError, "attention_data_parallel: give it per pool"),
    # ---- first contact on the current main (2026-11-24): each was answered, not refused --------------------
    ("ops-table-bad-phase", lambda: _result().ops_table(phase="gen"), OptionError,
     "phase='gen' is not allowed; choose one of decode, prefill"),  # was: an empty string
    ("ops-table-negative-top", lambda: _result().ops_table(top=-3), OptionError,
     "top=-3 must be an integer >= 1"),  # was: every op but the last 3
    ("ops-table-zero-top", lambda: _result().ops_table(top=0), OptionError, "top=0 must be an integer >= 1"),
    ("ops-table-fraction-top", lambda: _result().ops_table(top=2.5), OptionError, "top=2.5 must be an integer"),
    ("simulate-expert-parallel-dense", _simulate(tensor_parallel=2, expert_parallel=2), OptionError,
     "expert_parallel=2: the model has no experts"),  # was: "expert 2" in the header, nothing else
    ("sweep-expert-parallel-dense", _sweep(tensor_parallel=2, expert_parallel=2), OptionError,
     "expert_parallel=2: the model has no experts"),
    ("crossover-expert-parallel-dense", _crossover(tensor_parallel=2, expert_parallel=2), OptionError,
     "expert_parallel=2: the model has no experts"),
    ("serve-negative-frontend", _serve(concurrency=1, frontend_s=-0.004), OptionError,
     r"frontend_s=-0.004 must be a positive number of seconds \(or 0\)"),
    ("serve-nan-frontend", _serve(concurrency=1, frontend_s=float("nan")), OptionError, "frontend_s=nan"),
    ("serve-ramp-open-loop", _serve(request_rate=1, ramp_s=5), OptionError,
     "ramp_s=5 applies to a closed loop"),  # was: ignored
    ("serve-negative-ramp-open-loop", _serve(request_rate=1, ramp_s=-5), OptionError, "ramp_s=-5 applies to a"),
    ("serve-ramp-past-rounding", _serve(concurrency=4, ramp_s=1e20), OptionError,
     r"ramp_s=1e\+20 must be a number of seconds in 0\.\.1e\+07"),  # was: TTFT mean 14.5 below p50 17.0 (0s)
    ("disaggregated-kv-link-past-rounding", lambda: llmsim.serve_disaggregated(
        MODEL, GPU, {}, {}, request_rate=1.0, num_requests=2, kv_transfer_bytes_per_s=1e-300), OptionError,
     "kv_transfer_bytes_per_s=1e-300 must be at least 1e\\+06 byte/s"),  # was: overflow warning, TTFT inf, TPOT 0
    ("serve-burstiness-poisson", _serve(request_rate=1, burstiness=3.0), OptionError,
     "burstiness=3.0 applies to arrival='gamma' only"),  # was: ignored (Poisson arrivals)
    ("serve-arrival-closed-loop", _serve(concurrency=2, arrival="gamma"), OptionError,
     "arrival='gamma' / burstiness=1.0 shape open-loop arrivals"),
    ("serve-lengths-unpaired", _serve(request_rate=1, prompt_len=[10, 20], gen_len=[1, 2, 3]), OptionError,
     "prompt_len and gen_len are lists of 2 and 3 lengths"),  # was: each cycled on its own, pairs drifting
    ("disaggregated-arrival-closed-loop", lambda: llmsim.serve_disaggregated(
        MODEL, GPU, prefill={"replicas": 1, "tensor_parallel": 1}, decode={"replicas": 1, "tensor_parallel": 1},
        concurrency=2, num_requests=2, arrival="constant"), OptionError,
     "arrival='constant' / burstiness=1.0 shape open-loop arrivals"),  # was: replaced by poisson, unsaid
    ("simulate-microbatches-one-stage", _simulate(batch_size=8, num_microbatches=4), OptionError,
     "num_microbatches=4 applies to pipeline_parallel > 1"),  # was: TPOT x4, the header silent
    ("simulate-trtllm-on-a-cpu", lambda: llmsim.simulate(MODEL, "cpu-generic", engine="trtllm", prompt_len=16,
                                                          gen_len=2), OptionError,
     "engine='trtllm' runs on nvidia gpus only, not on an intel cpu; choose one of torch-compile, transformers, "
     "roofline$"),  # was: CUDA graphs on a CPU
    # hardware files name their vendor: TensorRT-LLM runs on NVIDIA GPUs only, vLLM and SGLang on NVIDIA and AMD ones
    ("simulate-trtllm-on-an-amd-gpu", lambda: llmsim.simulate(MODEL, "mi300x", engine="trtllm", prompt_len=16,
                                                              gen_len=2), OptionError,
     "engine='trtllm' runs on nvidia gpus only, not on an amd gpu; choose one of vllm, sglang, torch-compile, "
     "transformers, roofline$"),  # was: costed with TensorRT-LLM's CUDA graphs on an MI300X
    ("serve-trtllm-on-an-amd-gpu", lambda: llmsim.serve(MODEL, "mi300x", engine="trtllm", num_requests=2,
                                                        prompt_len=16, gen_len=2, concurrency=1), OptionError,
     "engine='trtllm' runs on nvidia gpus only, not on an amd gpu"),
    ("plan-serving-trtllm-on-an-amd-gpu", lambda: llmsim.plan_serving(MODEL, "mi300x", engine="trtllm",
                                                                      request_rate=2.0, tpot_slo_s=0.05),
     OptionError, "engine='trtllm' runs on nvidia gpus only, not on an amd gpu"),
    ("simulate-vllm-on-a-cpu", lambda: llmsim.simulate(MODEL, "cpu-generic", engine="vllm", prompt_len=16,
                                                        gen_len=2), OptionError,
     "engine='vllm' runs on nvidia and amd gpus only, not on an intel cpu; choose one of torch-compile, "
     "transformers, roofline$"),  # was: vLLM's CUDA graphs and paged flash attention on a CPU
    ("simulate-sglang-on-an-intel-gpu", lambda: llmsim.simulate(
        MODEL, dict(llmsim.load_hardware(GPU).model_dump(exclude={"path"}), vendor="intel"), engine="sglang",
        prompt_len=16, gen_len=2), OptionError,
     "engine='sglang' runs on nvidia and amd gpus only, not on an intel gpu; choose one of torch-compile, "
     "transformers, roofline$"),
    ("hardware-unknown-vendor", lambda: llmsim.load_hardware(
        dict(llmsim.load_hardware(GPU).model_dump(exclude={"path"}), vendor="nvida")), HardwareError,
     "vendor='nvida'; allowed: nvidia, amd, intel, unknown$"),
    ("hardware-sustained-without-onset", lambda: llmsim.load_hardware(dict(
        llmsim.load_hardware(GPU).model_dump(exclude={"path"}),
        sustained={"matmul_fraction": {"value": 0.8, "unit": "fraction", "source": "test"}})), HardwareError,
     "missing field sustained.onset_s$"),
    ("hardware-sustained-fraction-above-one", lambda: llmsim.load_hardware(dict(
        llmsim.load_hardware(GPU).model_dump(exclude={"path"}),
        sustained={"matmul_fraction": {"value": 80, "unit": "fraction", "source": "test"},
                   "onset_s": {"value": 5e-3, "unit": "s", "source": "test"}})), HardwareError,
     "sustained.matmul_fraction"),
    ("simulate-unknown-clock", _simulate(clock="turbo"), OptionError,
     "clock='turbo' is not allowed; choose one of boost, sustained$"),
    ("serve-token-budget-below-max-num-seqs", _serve(concurrency=1, max_num_seqs=64, max_num_batched_tokens=10),
     OptionError, "max_num_batched_tokens=10 is below max_num_seqs=64"),  # was: max_num_seqs lowered to 10, unsaid
    ("simulate-tables-at-peak", _simulate(engine="roofline", tables="sglang"), OptionError,
     "tables='sglang' with efficiency='peak'"),  # was: the tables named in the result, none read
    ("sweep-tables-at-peak", _sweep(efficiency="peak", tables="vllm"), OptionError, "tables='vllm' with efficiency"),
    # a serving plan answered each of these with "no replica shape meets the objectives; relax them or allow more
    # GPUs" (every shape failing on the same bad input), exit code 0 on the CLI
    ("plan-serving-unknown-engine", _plan_serving(engine="tgi"), OptionError, "engine='tgi' is not allowed"),
    ("plan-serving-bad-fusion", _plan_serving(fusion="x"), OptionError, "fusion='x' is not allowed"),
    ("plan-serving-unknown-option", _plan_serving(fuson="none"), OptionError, "option='fuson' is not allowed"),
    ("plan-serving-past-context", _plan_serving(prompt_len=10**7), OptionError, "exceeds the model's context"),
    ("plan-serving-zero-requests", _plan_serving(num_requests=0), OptionError, "num_requests=0 must be"),
    ("plan-serving-int4-on-hopper", _plan_serving(activation_dtype="int4"), OptionError, "activation_dtype='int4'"),
    ("plan-serving-expert-parallel-dense", _plan_serving(expert_parallel=2), OptionError,
     "expert_parallel=2: the model has no experts"),
    ("plan-expert-parallel-dense", _plan(expert_parallel=2), OptionError,
     "expert_parallel=2: the model has no experts"),  # was: "no tensor/pipeline split divides this model"
    # session 33: an empty search list fell back to the default search; fewer requests than max_num_seqs sized
    # replicas by one request's latency (5 GPUs where 1 serves); speculation failed every disaggregated shape
    ("plan-serving-empty-tensor-parallel", _plan_serving(tensor_parallel=[]), OptionError,
     r"tensor_parallel=\[\] must be a non-empty list"),
    ("plan-serving-fewer-requests-than-sequences", _plan_serving(num_requests=20, max_num_seqs=[64]), OptionError,
     "num_requests=20 is below max_num_seqs=64"),
    ("plan-serving-disaggregated-speculation", _plan_serving(
        disaggregated=True, speculative={"method": "ngram", "num_tokens": 3, "acceptance_rate": 0.5}), OptionError,
     "disaggregated=True: speculative not modelled"),
    # session 34's audit: transformers' own "module 'torch' has no attribute 'float8'", and a folder given as a file
    ("config-torch-dtype-not-a-dtype", _config(torch_dtype="float8"), ConfigError,
     r"torch_dtype='float8' is not a dtype transformers reads; allowed: float32, bfloat16, float16"),
    ("hardware-folder", lambda: llmsim.load_hardware(str(ROOT / "llmsim")), HardwareError,
     r"hardware file .*llmsim: a folder; give a hardware \.toml file"),
    # session 41's audit: each of these ran out of memory, raised an AttributeError or TypeError, or answered with
    # a plan whose every row read 0 ms
    ("serve-a-billion-requests", _serve(request_rate=1.0, num_requests=10**9), OptionError,
     r"num_requests=1000000000 must be an integer in 1\.\.10000000"),  # was: numpy _ArrayMemoryError (7.45 GiB)
    ("serve-a-million-proposed-tokens", _serve(request_rate=1.0, speculative={
        "method": "ngram", "num_tokens": 10**6, "acceptance_rate": 0.7}), OptionError,
     r"speculative num_tokens=1000000 must be an integer in 1\.\.32"),  # was: the process killed for memory
    ("serve-lengths-csv-not-a-path", lambda: llmsim.serve(MODEL, GPU, request_rate=1.0, lengths_csv=123),
     OptionError, "lengths_csv=123 must be a path"),  # was: TypeError naming no field
    ("plan-serving-executor-not-an-executor", _plan_serving(executor="threads"), OptionError,
     "executor='threads' must be a concurrent.futures.Executor"),  # was: AttributeError 'str' ... 'map'
    ("plan-serving-tensor-parallel-not-splitting", _plan_serving(tensor_parallel=[3]), OptionError,
     "tensor_parallel=3: num_key_value_heads=8 is neither"),  # was: exit 0, rows of 0 ms
    ("plan-serving-concurrency", _plan_serving(concurrency=4), OptionError,
     "concurrency: plan_serving sets the load itself"),  # was: TypeError, multiple values for 'concurrency'
    ("plan-serving-lengths-csv", _plan_serving(lengths_csv="io.csv"), OptionError,
     "takes the lengths as prompt_len and gen_len"),  # was: every shape refused, "relax the objectives"
    ("plan-serving-nan-memory", _plan_serving(gpu_memory_utilization=float("nan"), tensor_parallel=[1, 2],
                                              max_num_seqs=[8], num_requests=40), OptionError,
     "gpu_memory_utilization=nan must be a number in"),  # was: every shape refused, "relax the objectives"
    ("plan-serving-budget-below-sequences", _plan_serving(max_num_batched_tokens=4, tensor_parallel=[1],
                                                          max_num_seqs=[8], num_requests=40), OptionError,
     "max_num_batched_tokens=4 is below max_num_seqs=8"),  # was: exit 0, "relax them or allow more GPUs"
    ("disaggregated-replicas-at-the-call", lambda: llmsim.serve_disaggregated(
        MODEL, GPU, {}, {}, concurrency=2, num_requests=2, replicas=2), OptionError,
     r"decode=\{'replicas': \.\.\.\}\)$"),  # was: decode={'replicas': 1, 'replicas': ...}
    ("disaggregated-pool-replicas-bool", lambda: llmsim.serve_disaggregated(
        MODEL, GPU, {"replicas": True}, {}, concurrency=2, num_requests=2), OptionError,
     "replicas: Input should be a valid integer"),  # was: one replica
    ("disaggregated-pool-memory-text", lambda: llmsim.serve_disaggregated(
        MODEL, GPU, {}, {"gpu_memory_utilization": "0.5"}, concurrency=2, num_requests=2), OptionError,
     "gpu_memory_utilization: Input should be a valid number"),  # was: read as 0.5 (serve() refuses "0.5")
    ("serve-weights-past-the-gpu", lambda: llmsim.serve("llama-3.1-405b", "a100-40gb-sxm", tensor_parallel=8,
                                                        concurrency=2, num_requests=2), OptionError,
     r"the weights alone \(94\.5 GiB per GPU\) exceed its 40\.0 GiB of memory: raise tensor_parallel"),
    # (was: "... at gpu_memory_utilization=0.9 ...: raise tensor_parallel, gpu_memory_utilization", whose cap is 1)
    ("disaggregated-pool-option-at-the-call", lambda: llmsim.serve_disaggregated(
        MODEL, GPU, {"replicas": 1}, {"replicas": 1}, request_rate=1.0, num_requests=2, max_num_seqs=4),
     OptionError, "max_num_seqs is a per-pool setting"),  # was: "not allowed; choose one of activation_dtype..."
    ("disaggregated-speculation", lambda: llmsim.serve_disaggregated(
        MODEL, GPU, {"replicas": 1}, {"replicas": 1}, request_rate=1.0, num_requests=2,
        speculative={"method": "ngram", "num_tokens": 2, "acceptance_rate": 0.5}),
     OptionError, "speculative is not modelled for disaggregated serving"),
    ("serve-mtp-without-mtp-layers", _serve(request_rate=1.0, speculative={
        "method": "mtp", "num_tokens": 1, "acceptance_rate": 0.8}), OptionError,
     "speculative method 'mtp' needs the model's multi-token-prediction layers"),  # was: a TPOT gain made up
    ("serve-token-budget-eats-the-kv-cache", _serve(request_rate=1.0, max_num_batched_tokens=3 * 10**6), OptionError,
     "and a pass of max_num_batched_tokens=3000000 tokens"),  # was: named only the weights as the cause
    ("serve-fractional-length-as-text", _serve(concurrency=1, prompt_len="12.5"), OptionError,
     r"prompt_len='12.5' is not a whole number of tokens >= 1"),  # was: "distribution='12.5' is not allowed"
    ("serve-empty-length", _serve(concurrency=1, prompt_len=""), OptionError,
     r"prompt_len='' is neither a whole number of tokens >= 1 nor a distribution: give an integer"),  # was: only
    ("serve-unknown-distribution", _serve(concurrency=1, gen_len="zipf:1:2"), OptionError,  # the distributions
     r"gen_len='zipf:1:2' is neither .* 'uniform:LOW:HIGH', 'normal:MEAN:STD' or 'lognormal:MEAN:STD'"),
    ("serve-negative-length-as-text", _serve(concurrency=1, gen_len="-3"), OptionError,
     r"gen_len='-3' is not a whole number of tokens >= 1"),
    ("serve-zero-length-as-text", _serve(concurrency=1, prompt_len="0"), OptionError, r"prompt_len=0 must be >= 1"),
    ("simulate-a-zoo-file-of-analyze", lambda: llmsim.simulate(
        str(model_configs_dir() / "zoo" / "sd15-unet.json"), GPU), LlmsimError,
     r"a diffusers UNet2DConditionModel file of `llmsim analyze`'s zoo"),  # was: missing field 'model_type'
]


@pytest.mark.parametrize(("call", "error", "match"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_refused_by_name(call: Callable[[], Any], error: type[LlmsimError], match: str) -> None:
    with pytest.raises(error, match=match) as info:
        call()
    assert "\n" not in str(info.value)


def test_the_list_is_long_enough() -> None:
    assert len(CASES) >= 150 and len({c[0] for c in CASES}) == len(CASES)


def test_int4_is_not_priced_at_the_int8_peak() -> None:
    hw = llmsim.load_hardware(GPU)  # Hopper: no int4 tensor cores, so no int4 peak (it was the int8 one)
    with pytest.raises(OptionError, match="no matrix-unit peak for int4"):
        hw.matrix_peak_flops_per_s("int4")
    assert llmsim.load_hardware("a100-80gb-sxm").matrix_peak_flops_per_s("int4") == 1248e12


@pytest.mark.parametrize("args", [
    ["plot", MODEL, "--hardware", GPU, "--out", "/nonexistent/dir/x.png"],
    ["plot", MODEL, "--hardware", GPU, "--out", "{tmp}/x.txt"],
    ["roofline", MODEL, "--hardware", GPU, "--out", "/nonexistent/dir/r.png"],
    ["limit", MODEL, "--hardware", GPU, "--tpot-slo-s", "-1"],
    ["crossover", MODEL, "--hardware", GPU, "--vary", "batch_size", "--kv-len", "1000000"],
    ["serve", MODEL, "--hardware", GPU, "--concurrency", "1", "--num-requests", "1", "--plot", "/nonexistent/d/x.png"],
    ["serve", MODEL, "--hardware", GPU, "--concurrency", "1", "--num-requests", "1", "--plot", "{tmp}/x.txt"],
    ["serve", MODEL, "--hardware", GPU, "--concurrency", "0"],
    ["sweep", MODEL, "--hardware", GPU, "--tp", "2"],
], ids=["plot-no-folder", "plot-not-an-image", "roofline-no-folder", "limit-negative-slo", "crossover-past-context",
        "serve-plot-no-folder", "serve-plot-not-an-image", "argparse-value", "argparse-unknown-argument"])
def test_cli_bad_input_is_one_line(args: list[str], tmp_path: Path) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, "-m", "llmsim.cli", *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert done.returncode in (1, 2), done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("llmsim: error:"), done.stderr
    assert not list(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize(("args", "match"), [
    (["sweep", MODEL, "--hardware", GPU, "--csv", "/nonexistent/dir/x.csv"], "--csv /nonexistent/dir/x.csv: no folder"),
    (["sweep", MODEL, "--hardware", GPU, "--batch-size", "99999999999"], "batch_size holds 99999999999"),
    (["sweep", MODEL, "--hardware", GPU, "--tables", "vlm"], "tables='vlm' is neither"),
    (["plan", MODEL, "--hardware", GPU, "--usd-per-gpu-hour", "-1"], "usd_per_gpu_hour=-1.0 must be a positive"),
    (["plan", MODEL, "--hardware", GPU, "--tpot-slo-s", "nan"], "tpot_slo_s=nan must be a positive"),
    (["plan", MODEL, "--hardware", GPU, "--tensor-parallel", "3"], "tensor_parallel=3: num_key_value_heads=8"),
    (["plan", MODEL, "--hardware", GPU, "--prompt-len", "1000000"], "exceeds the model's context"),
    (["plan", MODEL, "--hardware", GPU, "--disaggregated"], "--disaggregated belongs to the serving plan"),
    (["plan", MODEL, "--hardware", GPU, "--percentile", "90"], "--percentile belongs to the serving plan"),
    (["plan", MODEL, "--hardware", GPU, "--max-num-seqs", "8"], "--max-num-seqs belongs to the serving plan"),
    (["sweep", MODEL, "--hardware", GPU, "--pipeline-decode", "lockstep"], "--pipeline-decode applies to simulate"),
    (["plan", MODEL, "--hardware", GPU, "--request-rate", "2", "--ttft-slo-s", "1", "--tensor-parallel", "1",
      "--max-num-seqs", "8", "--max-num-batched-tokens", "4"], "max_num_batched_tokens=4 is below max_num_seqs=8"),
    (["plan", MODEL, "--hardware", GPU, "--request-rate", "2", "--tpot-slo-s", "0.05", "--engine", "roofline",
      "--weight-dtype", "int4", "--activation-dtype", "int4"], "activation_dtype='int4'"),
    (["crossover", MODEL, "--hardware", GPU, "--hi", "1e300"], "past the largest batch"),
    (["crossover", MODEL, "--hardware", GPU, "--batch-size", "8"], "batch_size is the quantity varied"),
    (["limit", MODEL, "--hardware", GPU, "--phase", "prefill", "--tpot-slo-s", "0.05"], "tpot_slo_s does not apply"),
    (["simulate", MODEL, "--hardware", GPU, "--batch-size", "99999999999999999999999"], "batch_size=9+ must be"),
    (["simulate", MODEL, "--hardware", GPU, "--per-layer", "--gen-len", "4", "--step", "9"],
     r"step=9 must be an integer in 1\.\.3"),  # was: the summary printed, then the error
    (["simulate", MODEL, "--hardware", GPU, "--per-layer", "--gen-len", "1", "--step", "1"],
     "gen_len=1 has no decode step"),  # was: --step ignored
])
def test_cli_analysis_commands_refuse_in_one_line(args: list[str], match: str, capsys: Any, tmp_path: Path,
                                                  monkeypatch: Any) -> None:
    """The CLI's sweep, plan, crossover and limit: each bad value ends in one llmsim error line, exit code 2,
    nothing written (in-process: an uncaught exception would fail the test as a traceback would)."""
    from llmsim.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    out, err = capsys.readouterr()
    err = err.strip()
    assert "\n" not in err and err.startswith("llmsim: error:"), err
    assert not out, out  # nothing printed before the error
    assert re.search(match, err), err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("values", ["1:8:0", "1:8:999999999", "1:8:2:4", "0:8", "8:1", "1,x"])
def test_cli_refuses_a_bad_range_before_any_work(values: str, capsys: Any) -> None:
    """A geometric range with no points, a million points per octave (it ran out of memory) or a fourth part."""
    from llmsim.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["sweep", MODEL, "--hardware", GPU, "--batch-size", values])
    assert exit_info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"argument --batch-size: {values!r}" in last and "POINTS_PER_OCTAVE <= 64" in last, last


# ---- fuzzed: any value in any numeric field of the analysis functions -------------------------------------------
_TINY = llmsim.load_model(TINY_CONFIGS["llama-gqa"])  # context 256 tokens: every call is quick
_FUZZED: dict[str, tuple[Callable[..., Any], dict[str, Any], tuple[str, ...]]] = {
    # name: (function, valid keyword arguments, the fields fuzzed)
    "sweep": (llmsim.sweep, {"batch_size": [1, 4], "prompt_len": 16, "gen_len": 4},
              ("batch_size", "prompt_len", "gen_len")),
    "plan": (llmsim.plan, {"prompt_len": 16, "gen_len": 4, "batch_sizes": [1, 8], "tensor_parallel": [1, 2],
                           "pipeline_parallel": [1]},
             ("prompt_len", "gen_len", "max_gpus", "ttft_slo_s", "tpot_slo_s", "target_tokens_per_s",
              "usd_per_gpu_hour", "batch_sizes", "tensor_parallel", "pipeline_parallel")),
    "max_batch_size": (llmsim.max_batch_size, {"prompt_len": 16, "gen_len": 4}, ("prompt_len", "gen_len", "limit")),
    "max_context": (llmsim.max_context, {"batch_size": 1, "gen_len": 4}, ("batch_size", "gen_len")),
    "find_crossover": (llmsim.find_crossover, {"vary": "kv_len", "batch_size": 4}, ("lo", "hi", "batch_size")),
    "first_limit": (llmsim.first_limit, {"vary": "batch_size", "kv_len": 64, "stop": 512},
                    ("start", "stop", "kv_len", "tpot_slo_s", "gen_len")),
    "fusion_savings": (llmsim.fusion_savings, {"batch_size": 1, "prompt_len": 16, "gen_len": 4},
                       ("batch_size", "prompt_len", "gen_len")),
    "simulate": (llmsim.simulate, {"batch_size": 2, "prompt_len": 16, "gen_len": 4},
                 ("num_microbatches", "pipeline_parallel", "data_parallel", "tensor_parallel", "expert_parallel",
                  "attention", "fusion", "weight_dtype", "kv_dtype", "overhead", "tables", "table_families",
                  "fused_projections", "engine")),
}
_ANY_VALUE = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70), st.integers(min_value=-3, max_value=300),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(), st.text(max_size=3),
    st.lists(st.integers(min_value=-3, max_value=300), max_size=3), st.lists(st.floats(), min_size=1, max_size=2),
    st.just([[1, 2], [3, 4]]), st.just([1, [2]]), st.just({"a": 1}), st.just(1 + 2j),
)


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere in a result (numbers, lists, dicts, numpy columns)."""
    import numpy as np

    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    if isinstance(value, np.ndarray):
        return value.dtype.kind not in "fc" or bool(np.all(np.isfinite(value)))
    if isinstance(value, float):
        return math.isfinite(value)
    return True


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from([(name, field) for name, (_, _, fields) in _FUZZED.items() for field in fields]),
       value=_ANY_VALUE)
def test_fuzzed_values_give_a_one_line_error_or_a_finite_answer(case: tuple[str, str], value: Any) -> None:
    name, field = case
    function, valid, _ = _FUZZED[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # an overflow or a NaN on the way is a failure too
        try:
            result = function(_TINY, GPU, **{**valid, field: value})
        except LlmsimError as exc:
            assert "\n" not in str(exc) and field.rstrip("s") in str(exc), str(exc)
            return
    dumped = result.columns if name == "sweep" else result.model_dump() if hasattr(result, "model_dump") else (
        {k: v.model_dump() for k, v in result.items()} if isinstance(result, dict) else result)
    assert _finite(dumped), (name, field, value, dumped)
    if name in ("max_batch_size", "max_context"):
        assert result is None or (type(result) is int and result >= 1)


def _layers(gen_len: int = 4, **kwargs: Any) -> Callable[[], Any]:
    return lambda: llmsim.simulate(MODEL, GPU, batch_size=1, prompt_len=16, gen_len=gen_len).layer_table(**kwargs)


def _whatif(**kwargs: Any) -> Callable[[], Any]:
    args = {"vary": {"fusion": ["none", "full"]}, "batch_size": 1, "prompt_len": 16, "gen_len": 2, **kwargs}
    return lambda: llmsim.whatif(MODEL, GPU, **args)


def _op(kind: str, **kwargs: Any) -> Callable[[], Any]:
    return lambda: llmsim.op_cost(kind, GPU, **kwargs)


# the what-if entry points: layer_table, whatif, op_cost
WHATIF_CASES: list[tuple[str, Callable[[], Any], type[LlmsimError], str]] = [
    ("layers-bad-phase", _layers(phase="gen"), OptionError, "phase='gen' is not allowed; choose one of decode"),
    ("layers-step-zero", _layers(step=0), OptionError, r"step=0 must be an integer in 1..3"),
    ("layers-step-past-end", _layers(step=4), OptionError, r"step=4 must be an integer in 1..3"),
    ("layers-step-float", _layers(step=1.5), OptionError, r"step=1.5 must be an integer"),
    ("layers-no-decode", _layers(gen_len=1), OptionError, "gen_len=1 has no decode step"),
    ("layers-prefill-step", _layers(phase="prefill", step=3), OptionError, "step=3: prefill is one step"),
    ("whatif-vary-not-dict", _whatif(vary=["fusion"]), OptionError, r"vary=\['fusion'\] must be a non-empty dict"),
    ("whatif-vary-empty", _whatif(vary={}), OptionError, "vary={} must be a non-empty dict"),
    ("whatif-unknown-option", _whatif(vary={"fusio": ["none"]}), OptionError,
     "vary='fusio' is not allowed; choose one of .*did you mean 'fusion'"),
    ("whatif-values-string", _whatif(vary={"fusion": "none"}), OptionError,
     r"vary\['fusion'\]='none' must be a list of values"),
    ("whatif-values-empty", _whatif(vary={"fusion": []}), OptionError, r"vary\['fusion'\] is empty"),
    ("whatif-values-repeat", _whatif(vary={"fusion": ["none", "none"]}), OptionError, "repeats a value"),
    ("whatif-fixed-and-varied", _whatif(fusion="full"), OptionError, "fusion='full' is both fixed and varied"),
    ("whatif-bad-value", _whatif(vary={"fusion": ["none", "fused"]}), OptionError,
     "fusion='fused' is not allowed; choose one of"),
    ("whatif-bad-batch", _whatif(batch_size=0), OptionError, "batch_size=0 must be an integer in 1"),
    ("op-bad-kind", _op("softmax"), OptionError,
     "kind='softmax' is not allowed; choose one of attention, conv, elementwise, matmul, norm"),
    ("op-no-shape", _op("elementwise"), OptionError, "shape=None must be a non-empty list of integers"),
    ("op-empty-shape", _op("norm", shape=[]), OptionError, r"shape=\[\] must be a non-empty list"),
    ("op-zero-dim", _op("elementwise", shape=[4, 0]), OptionError, "shape=0 must be an integer in 1"),
    ("op-text-shape", _op("elementwise", shape="4,x"), OptionError, "shape='4,x' must be integers separated"),
    ("op-negative-flops", _op("elementwise", shape=[4], flops_per_element=-1), OptionError,
     "flops_per_element=-1 must be an integer in 0"),
    ("op-no-outputs", _op("elementwise", shape=[4], outputs=0), OptionError, "outputs=0 must be an integer in 1"),
    ("op-bad-norm", _op("norm", shape=[4], norm="batchnorm"), OptionError, "norm='batchnorm' is not allowed"),
    ("op-missing-k", _op("matmul", m=4, n=4), OptionError, "k is missing: give an integer >= 1"),
    ("op-float-m", _op("matmul", m=4.5, n=4, k=4), OptionError, "m=4.5 must be an integer"),
    ("op-bad-dtype", _op("matmul", dtype="float12", m=4, n=4, k=4), OptionError, "dtype='float12' is not allowed"),
    ("op-int4-on-hopper", _op("matmul", dtype="int4", m=4, n=4, k=4), OptionError, "int4"),
    ("op-fp4-on-hopper", _op("matmul", dtype="nvfp4", m=4, n=4, k=4), OptionError,  # was: "choose another
     r"^dtype='nvfp4': hardware 'h100-sxm' has no matrix-unit peak for fp4; it has bf16, fp16, fp8, int8, tf32$"),
    # activation_dtype", a field op_cost does not have
    ("op-bad-engine", _op("matmul", engine="vllmm", m=4, n=4, k=4), OptionError, "engine='vllmm' is not allowed"),
    ("op-attention-no-heads", _op("attention", q_len=1), OptionError, "heads is missing"),
    ("op-attention-kv-heads", _op("attention", heads=32, kv_heads=5, q_len=1), OptionError,
     "kv_heads=5 must divide heads=32"),
    ("op-attention-negative-kv", _op("attention", heads=32, q_len=1, kv_len=-1), OptionError,
     "kv_len=-1 must be an integer in 0"),
    ("op-trtllm-on-a-cpu", lambda: llmsim.op_cost("matmul", "cpu-generic", m=4, n=4, k=4, engine="trtllm"),
     OptionError, "engine='trtllm' runs on nvidia gpus only, not on an intel cpu"),
    ("op-trtllm-on-an-amd-gpu", lambda: llmsim.op_cost("matmul", "mi300x", m=4, n=4, k=4, engine="trtllm"),
     OptionError, "engine='trtllm' runs on nvidia gpus only, not on an amd gpu"),
    ("op-unknown-option", _op("matmul", fusion="full", m=4, n=4, k=4), OptionError, "option='fusion' is not allowed"),
    ("op-conv-no-filters", _op("conv", shape=[1, 3, 8, 8], kernel_size=3), OptionError, "out_channels is missing"),
    ("op-conv-kernel-past-input", _op("conv", shape=[1, 3, 8, 8], out_channels=4, kernel_size=9), OptionError,
     r"kernel_size=\[9, 9\] is larger than the padded input \[8, 8\]"),
]


@pytest.mark.parametrize(("call", "error", "match"), [c[1:] for c in WHATIF_CASES], ids=[c[0] for c in WHATIF_CASES])
def test_whatif_bad_input_is_refused_by_name(call: Callable[[], Any], error: type[LlmsimError], match: str) -> None:
    with pytest.raises(error, match=match) as info:
        call()
    assert "\n" not in str(info.value)
