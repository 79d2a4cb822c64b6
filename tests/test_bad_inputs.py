"""First contact: every bad input is refused with a one-line llmsim error naming the field.

A fixed list of bad inputs, each through the public entry point a user calls (load_model, simulate,
find_crossover, first_limit, build_ops, the CLI). Each must raise the stated llmsim.errors class, name the
field, and fit on one line: never a traceback from deep inside, never a silently wrong answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import llmsim
from llmsim.errors import ConfigError, LlmsimError, OptionError

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
    ("odd-head-dim-rotary", _config(head_dim=7), ConfigError, "head_dim"),
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
    ("crossover-negative-batch", _crossover(vary="kv_len", batch_size=-3), OptionError, "batch_size=-3 must be >= 1"),
    ("crossover-zero-batch", _crossover(vary="kv_len", batch_size=0), OptionError, "batch_size=0 must be >= 1"),
    ("crossover-fraction-batch", _crossover(vary="kv_len", batch_size=2.5), OptionError, "batch_size=2.5"),
    ("crossover-negative-kv", _crossover(kv_len=-100), OptionError, "kv_len=-100 must be >= 0"),
    ("crossover-kv-past-context", _crossover(kv_len=10**7), OptionError, "kv_len.*max_position_embeddings=131072"),
    ("crossover-hi-past-context", _crossover(vary="kv_len", hi=10**7), OptionError,
     r"hi \(kv_len\).*max_position_embeddings"),
    ("crossover-seq-past-context", _crossover(phase="prefill", vary="batch_size", seq_len=200_000), OptionError,
     "seq_len.*max_position_embeddings"),
    ("crossover-nan-lo", _crossover(vary="batch_size", lo=float("nan")), OptionError, r"lo \(batch_size\)=nan"),
    ("crossover-bad-phase", _crossover(phase="generate"), OptionError, "phase='generate'"),
    ("crossover-bad-vary", _crossover(vary="prompt_len"), OptionError, "vary='prompt_len'"),
    ("limit-negative-batch", _limit(batch_size=-3), OptionError, "batch_size=-3 must be >= 1"),
    ("limit-zero-batch", _limit(batch_size=0), OptionError, "batch_size=0 must be >= 1"),
    ("limit-negative-kv", _limit(vary="batch_size", kv_len=-100), OptionError, "kv_len=-100 must be >= 0"),
    ("limit-kv-past-context", _limit(vary="batch_size", kv_len=10**7), OptionError,
     "kv_len.*max_position_embeddings=131072"),
    ("limit-stop-past-context", _limit(stop=10**7), OptionError, r"stop \(kv_len\).*max_position_embeddings"),
    ("limit-negative-tpot-slo", _limit(tpot_slo_s=-1), OptionError, "tpot_slo_s=-1 must be a positive"),
    ("limit-negative-ttft-slo", _limit(phase="prefill", ttft_slo_s=-1), OptionError, "ttft_slo_s=-1 must be"),
    ("limit-nan-tpot-slo", _limit(tpot_slo_s=float("nan")), OptionError, "tpot_slo_s=nan"),
    ("limit-zero-gen-len", _limit(gen_len=0), OptionError, "gen_len=0 must be >= 1"),
    # ---- precisions the device lacks -----------------------------------------------------------------
    ("int4-on-hopper", _simulate(weight_dtype="int4", activation_dtype="int4"), OptionError,
     r"activation_dtype='int4'.*no matrix-unit peak for int4; it has bf16, fp16, fp8, int8, tf32"),
    ("int4-on-hopper-crossover", _crossover(activation_dtype="int4"), OptionError, "activation_dtype='int4'"),
    # ---- simulate / build_ops options -----------------------------------------------------------------
    ("unknown-attention", _build_ops(attention="fast"), OptionError,
     r"attention='fast' is not allowed; choose one of flash, math"),
    ("unknown-weight-dtype", _build_ops(weight_dtype="int3"), OptionError, "weight_dtype='int3' is not allowed"),
    ("ops-zero-batch", _build_ops(batch_size=0), OptionError, "batch_size=0 must be >= 1"),
    ("ops-seq-past-context", _build_ops(seq_len=10**7), OptionError, "exceeds the model's context"),
    ("misspelt-option", _build_ops(atention="math"), OptionError, "option='atention' is not allowed"),
    ("simulate-zero-batch", _simulate(batch_size=0), OptionError, "batch_size=0 must be >= 1"),
    ("simulate-past-context", _simulate(prompt_len=131072, gen_len=2), OptionError, "max_position_embeddings"),
    ("unknown-engine", _simulate(engine="tgi"), OptionError, r"engine.*tgi.*vllm"),
    ("bad-fused-projections", _simulate(fused_projections="yes"), OptionError, "fused_projections"),
    ("tensor-parallel-not-dividing", _simulate(tensor_parallel=3), OptionError, "tensor_parallel=3"),
    ("pipeline-past-layers", _simulate(pipeline_parallel=200), OptionError, "exceeds the model's 16 layers"),
]


@pytest.mark.parametrize(("call", "error", "match"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_refused_by_name(call: Callable[[], Any], error: type[LlmsimError], match: str) -> None:
    with pytest.raises(error, match=match) as info:
        call()
    assert "\n" not in str(info.value)


def test_the_list_is_long_enough() -> None:
    assert len(CASES) >= 40 and len({c[0] for c in CASES}) == len(CASES)


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
], ids=["plot-no-folder", "plot-not-an-image", "roofline-no-folder", "limit-negative-slo", "crossover-past-context"])
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
