"""Mamba-2 and hybrid state-space families (mamba2, nemotron_h): layers, state bytes and scan FLOPs pinned by
hand. (Parameters, FLOPs and state bytes against the real transformers models: test_cost_model_reference.py.)"""

from __future__ import annotations

import re

import pytest

import llmsim
from llmsim.errors import ConfigError

from .tiny_configs import TINY_CONFIGS


def _op(name: str, op_name: str, phase: str = "prefill", **options: object) -> llmsim.Op:
    model = llmsim.load_model(TINY_CONFIGS[name])
    sizes = {"seq_len": 12} if phase == "prefill" else {"kv_len": 9}
    ops = llmsim.build_ops(model, phase, batch_size=1, **sizes, **options)
    return next(op for op in ops if op.name == op_name)


def test_mamba2_state_is_fixed_per_sequence() -> None:
    model = llmsim.load_model(TINY_CONFIGS["mamba2"])
    # per sequence and layer: conv state [C = H*p + 2*G*N = 8*16 + 2*2*16 = 192, K = 4] bf16 = 1536 bytes and
    # the float32 SSM state [H=8, p=16, N=16] = 8192 bytes; B=2, 2 layers: 2 * 2 * 9728 = 38912, any length
    for seq_len in (1, 1000):
        assert model.kv_cache_bytes(batch_size=2, seq_len=seq_len, kv_dtype="bfloat16") == 38912
    assert model.recurrent_state_bytes(batch_size=2, kv_dtype="bfloat16") == 38912
    # tensor_parallel=2: 4 heads and 1 group per GPU: conv [64 + 32, 4] x 2 + [4, 16, 16] x 4 = 768 + 4096
    assert model.recurrent_state_bytes(batch_size=1, kv_dtype="bfloat16", tensor_parallel=2) == 2 * (768 + 4096)
    assert model.attention_kinds == "Mamba-2 8x16, state 16"


def test_mamba2_scan_torch_path_and_fused_kernels() -> None:
    # S=12 tokens in chunks of l=8, B=1, H=8 heads of p=16, G=2 groups of N=16
    # torch path (attention="math"), c=2 padded chunks: H (2 c l^2 (N+p) + 4 c l p N + 2 (c+1)^2 p N)
    #   = 8 (2*2*64*32 + 4*2*8*256 + 2*9*256) = 8 * 29184
    torch_path = _op("mamba2", "layers.attn.scan", attention="math")
    assert torch_path.matmul_flops == 8 * 29184
    # fused kernels (the default): C B^T per group over 64 + 16 products (a whole chunk and 4 tokens), the causal
    # pairs 36 + 10 of (C B^T L) x, B^T x and C states over the 12 real tokens:
    #   2 G 80 N + 2 H 46 p + 4 H 12 p N = 5120 + 11776 + 98304
    fused = _op("mamba2", "layers.attn.scan")
    assert fused.matmul_flops == 5120 + 11776 + 98304
    # both write the output [12, H*p] bf16 and the float32 state [H, p, N] once
    assert fused.bytes_written == torch_path.bytes_written == 12 * 128 * 2 + 8 * 16 * 16 * 4


def test_mamba2_decode_update_reads_and_writes_the_state_once() -> None:
    update = _op("mamba2", "layers.attn.update", phase="decode")
    state = 8 * 16 * 16  # [H, p, N] float32
    # reads the state, x [H*p], B and C [2*G*N] and dt [H] in bf16; writes the state and y [H*p]
    assert update.bytes_read == state * 4 + (128 + 64 + 8) * 2
    assert update.bytes_written == state * 4 + 128 * 2
    assert update.matmul_flops == 0 and update.vector_flops == 7 * state  # fused selective_state_update
    # transformers' torch path runs state C as a bmm: 2 H p N matmul FLOPs (as FlopCounterMode counts)
    assert _op("mamba2", "layers.attn.update", phase="decode", attention="math").matmul_flops == 2 * state


def test_nemotron_h_blocks_from_the_pattern() -> None:
    model = llmsim.load_model(TINY_CONFIGS["nemotron_h"])
    # "M*-EM": Mamba-2, attention, MLP, MoE, Mamba-2; each a norm, one mixer, one residual add
    assert model.layer_pattern == (0, 1, 2, 3, 0)
    assert [g.tag for g in model.layer_groups] == ["mamba", "full", "dense", "moe"]
    mamba, full, dense, moe = (g.layer for g in model.layer_groups)
    assert mamba.mlp is None and full.mlp is None and dense.attention is None and moe.attention is None
    assert full.attention.rotary_dim == 0 and model.position_embedding == "none"
    assert not dense.mlp.gated and dense.mlp.activation == "relu2"
    assert not moe.mlp.expert.gated and moe.mlp.shared.intermediate_size == 48
    names = {op.name for op in llmsim.build_ops(model, "prefill", batch_size=1, seq_len=4)}
    # relu2 experts: up and down only; no rotary anywhere
    assert {"layers.moe.mlp.experts.up_proj", "layers.moe.mlp.experts.down_proj"} <= names
    assert not any("gate_proj" in n or "rotary" in n for n in names)
    # 2 Mamba-2 layers x [192, 4] bf16 + [8, 16, 16] fp32, 1 attention layer x 10 tokens x 2 x 2 heads x 16 x 2
    assert model.kv_cache_bytes(batch_size=1, seq_len=10, kv_dtype="bfloat16") == 2 * 9728 + 10 * 128


def test_hybrid_configs_name_what_is_wrong() -> None:
    data = {k: v for k, v in TINY_CONFIGS["nemotron_h"].items() if k != "hybrid_override_pattern"}
    with pytest.raises(ConfigError, match="missing field 'hybrid_override_pattern' or 'layers_block_type'"):
        llmsim.load_model(data)
    with pytest.raises(ConfigError, match="mamba num_heads=8 is not a multiple of n_groups=3"):
        llmsim.load_model(dict(TINY_CONFIGS["nemotron_h"], n_groups=3))
    with pytest.raises(ConfigError, match="moe_latent_size"):
        llmsim.load_model(dict(TINY_CONFIGS["nemotron_h"], moe_latent_size=32))


@pytest.mark.parametrize(("name", "field", "value", "message"), [
    ("mamba2", "n_groups", 0, "n_groups=0 is not allowed; give an integer in 1..65536"),
    ("mamba2", "state_size", -1, "state_size=-1 is not allowed"),
    ("nemotron_h", "mamba_num_heads", 0, "mamba_num_heads=0 is not allowed"),
    ("nemotron_h", "hybrid_override_pattern", "MX", "hybrid_override_pattern='MX' is not allowed; give one character "
                                                    "per layer: M (Mamba-2), * (attention), - (MLP), E (MoE)"),
])
def test_state_space_fields_refused_by_name(name: str, field: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        llmsim.load_model(dict(TINY_CONFIGS[name], **{field: value}))


def test_serving_takes_states_per_running_request_and_says_when_one_does_not_fit() -> None:
    # Nemotron 3 Nano: 49,364,992 state bytes per sequence (23 Mamba-2 layers) beside 58.8 GiB of weights on an
    # H100. States come from the KV pool per running request (vLLM V1's hybrid allocator), so vLLM's default
    # max_num_seqs 1024 no longer reserves 47.1 GiB up front: the model serves
    r = llmsim.serve("nemotron-3-nano-30b-a3b", "h100-sxm", request_rate=5, prompt_len=2000, gen_len=200,
                     num_requests=10)
    assert r.ttft_s.mean > 0
    # at 75 % of 80 GiB = 60 GiB, less than weights + activations + workspace: not one request fits
    with pytest.raises(llmsim.errors.OptionError, match=re.escape(
            "the KV cache holds 0 tokens per GPU after the weights (58.8 GiB) at gpu_memory_utilization=0.75, "
            "fewer than the longest request's 2199 tokens plus its fixed-size state (0.05 GiB)")):
        llmsim.serve("nemotron-3-nano-30b-a3b", "h100-sxm", request_rate=5, prompt_len=2000, gen_len=200,
                     num_requests=10, gpu_memory_utilization=0.75)


def test_granite_4_hybrid_layers() -> None:
    model = llmsim.load_model(TINY_CONFIGS["granitemoehybrid"])
    # layer_types mamba, attention, mamba: each mixer followed by the MoE and the shared MLP, Granite's multipliers
    assert model.layer_pattern == (0, 1, 0) and [g.tag for g in model.layer_groups] == ["mamba", "full"]
    layer = model.layer_groups[0].layer
    assert layer.residual_scale and model.embedding_scale and model.logit_scale
    assert layer.mlp.shared.fused_gate_up and layer.mlp.expert.fused_gate_up and not layer.mlp.shared_gate
    dense = llmsim.load_model(TINY_CONFIGS["granitemoehybrid-dense-nope"])
    # num_local_experts 0: the shared MLP alone; no position_embedding_type "rope": no rotary
    attn_layer = dense.layer_groups[dense.layer_pattern[0]].layer
    assert not attn_layer.is_moe and attn_layer.mlp.intermediate_size == 48 and attn_layer.attention.rotary_dim == 0
    mamba = dense.layer_groups[dense.layer_pattern[1]].layer.attention
    # mamba_d_head "auto": 2 * 64 / 4 heads = 32; conv without bias
    assert (mamba.head_dim, mamba.num_kv_heads, mamba.conv_bias) == (32, 1, False)


def test_granite_4_modules_not_converted_by_their_names() -> None:
    qc = {"quant_method": "fp8", "weight_block_size": [128, 128],
          "modules_to_not_convert": ["model.layers.0.mamba", "model.layers.1.shared_mlp"]}
    spec = llmsim.load_model(dict(TINY_CONFIGS["granitemoehybrid"], quantization_config=qc))
    kept = [spec.layer_groups[g].layer.unquantized for g in spec.layer_pattern]
    # layer 0's Mamba-2 mixer (its in_proj/out_proj: the attention role); layer 1's shared MLP (named as a dense
    # MLP's module too: the layer has only the shared one)
    assert kept[0] == ("attention",) and "shared_experts" in kept[1] and kept[2] == ()
