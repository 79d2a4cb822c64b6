"""Model families beyond Llama: each family's stated differences reach the spec and the graph; configs as
transformers itself writes them load. (Parameters, FLOPs and KV bytes of every tiny config are checked
against the real models in test_cost_model_reference.py.)"""

from __future__ import annotations

import json

import pytest

import llmsim
from llmsim.errors import ConfigError

from .hf_reference import hf_config, meta_parameter_count
from .tiny_configs import TINY_CONFIGS

BF16_UNFUSED = {"fusion": "none", "logits": "all", "activation_dtype": "bfloat16", "weight_dtype": "bfloat16"}


def _ops(name: str, phase: str = "prefill", length: int = 3, **options: object) -> dict[str, llmsim.Op]:
    model = llmsim.load_model(TINY_CONFIGS[name])
    sizes = {"seq_len": length} if phase == "prefill" else {"kv_len": length}
    return {op.name: op for op in llmsim.build_ops(model, phase, batch_size=2, **sizes, **options)}


@pytest.mark.parametrize("name", sorted(TINY_CONFIGS))
def test_config_as_transformers_writes_it_loads(name: str) -> None:
    # transformers 5's to_dict(): e.g. qwen3_moe's num_experts written as num_local_experts, qwen2_moe's
    # sliding_window=0 when use_sliding_window is false
    written = json.loads(json.dumps(hf_config(TINY_CONFIGS[name]).to_dict()))
    assert llmsim.num_parameters(written) == meta_parameter_count(TINY_CONFIGS[name])


def test_granite_multipliers_are_elementwise_ops() -> None:
    ops = _ops("granite", **BF16_UNFUSED)
    # B=2, S=3: T=6 tokens, h=64, V=128, bf16 (2 bytes); one multiply per element
    assert (ops["embed_scale"].bytes_read, ops["embed_scale"].bytes_written) == (6 * 64 * 2, 6 * 64 * 2)
    assert ops["embed_scale"].vector_flops == 6 * 64
    for branch in ("attn", "mlp"):
        op = ops[f"layers.{branch}_residual_scale"]
        assert (op.count, op.vector_flops, op.bytes_read) == (2, 6 * 64, 6 * 64 * 2)  # 2 layers
    assert ops["logit_scale"].vector_flops == 6 * 128  # logits="all": [T, V]
    assert ops["logit_scale"].bytes_written == 6 * 128 * 2


def test_logit_scale_reads_last_positions_only_in_generation() -> None:
    ops = _ops("cohere", logits="last", activation_dtype="bfloat16")
    assert ops["logit_scale"].vector_flops == 2 * 128  # one position per sequence: [B, V]


def test_gemma_families_scale_their_embeddings() -> None:
    for name in ("gemma", "gemma2", "gemma3_text"):
        assert llmsim.load_model(TINY_CONFIGS[name]).embedding_scale
        assert "embed_scale" in _ops(name)
    assert "embed_scale" not in _ops("llama-gqa")


def test_phi_is_a_parallel_block_with_one_layernorm_and_biased_head() -> None:
    model = llmsim.load_model(TINY_CONFIGS["phi"])
    layer = model.layer_groups[0].layer
    assert (layer.parallel, layer.pre_mlp_norm, model.norm, model.lm_head_bias) == (True, False, "layernorm", True)
    assert layer.attention.rotary_dim == 8  # head_dim 16 * partial_rotary_factor 0.5
    assert not layer.mlp.gated and layer.mlp.activation == "gelu_new"
    # 1 norm per layer (weight + bias), no pre-MLP norm; lm_head: 64 * 128 weights + 128 biases
    ops = _ops("phi")
    assert ops["layers.input_norm"].param_count == 2 * 64 and "layers.pre_mlp_norm" not in ops
    assert ops["lm_head"].param_count == 64 * 128 + 128


def test_qk_norm_weights_shared_or_per_head() -> None:
    # H=4, kvh=2, d=16. OLMo 2: RMSNorm over the whole q [H*d] and k [kvh*d]; Cohere: a LayerNorm weight per
    # head (no bias); Phi's qk_layernorm: one LayerNorm [d] for q and one for k, weight + bias
    assert _ops("olmo2")["layers.attn.qk_norm"].param_count == (4 + 2) * 16
    assert _ops("cohere")["layers.attn.qk_norm"].param_count == (4 + 2) * 16
    assert _ops("phi-qk-layernorm")["layers.attn.qk_norm"].param_count == 2 * 16 * 2


def test_olmo2_norms_follow_the_branches_and_keep_their_adds() -> None:
    ops = _ops("olmo2", fusion="elementwise")
    assert {"layers.post_attn_norm", "layers.post_mlp_norm", "final_norm"} <= set(ops)
    assert not [name for name in ops if "input" in name or "pre_mlp" in name or "add_norm" in name]
    assert ops["layers.attn_residual_add"].count == ops["layers.mlp_residual_add"].count == 2


def test_cohere_layernorm_has_no_bias() -> None:
    model = llmsim.load_model(TINY_CONFIGS["cohere"])
    assert (model.norm, model.norm_params) == ("layernorm", 64)


def test_smollm3_groups_rope_and_nope_layers() -> None:
    model = llmsim.load_model(TINY_CONFIGS["smollm3"])
    # no_rope_layer_interval 2: layers 1 and 3 (every 2nd) have no rotary
    assert model.layer_pattern == (0, 1, 0, 1)
    assert [(g.tag, g.count, g.layer.attention.rotary_dim) for g in model.layer_groups] == [
        ("rope", 2, 16), ("nope", 2, 0)]


def test_qwen2_moe_shared_expert_gate() -> None:
    ops = _ops("qwen2_moe", **BF16_UNFUSED)
    gate = ops["layers.moe.mlp.shared_expert_gate"]
    # x[T=6, h=64] @ W[64, 1], 2 MoE layers of 3 (mlp_only_layers=[1])
    assert (gate.count, gate.matmul_flops, gate.param_count) == (2, 2 * 6 * 64 * 1, 64)
    assert ops["layers.moe.mlp.shared_experts.gate_proj"].param_count == 64 * 48


def test_glm4_sandwich_norms_and_fused_gate_up() -> None:
    layer = llmsim.load_model(TINY_CONFIGS["glm4"]).layer_groups[0].layer
    assert (layer.input_norm, layer.pre_mlp_norm, layer.post_attn_norm, layer.post_mlp_norm) == (True,) * 4
    assert layer.mlp.fused_gate_up and layer.attention.qkv_bias and not layer.attention.o_bias
    assert layer.attention.rotary_dim == 8  # head_dim 16 * the GLM-4 default partial_rotary_factor 0.5


@pytest.mark.parametrize(("model_type", "missing"), [("gemma", "head_dim"), ("glm4", "head_dim"),
                                                     ("qwen2_moe", "shared_expert_intermediate_size")])
def test_family_needs_its_keys(model_type: str, missing: str) -> None:
    data = next(c for c in TINY_CONFIGS.values() if c["model_type"] == model_type)
    with pytest.raises(ConfigError, match=f"missing field '{missing}'"):
        llmsim.load_model({k: v for k, v in data.items() if k != missing})


def test_llama4_layers_chunked_rope_and_global_nope() -> None:
    model = llmsim.load_model(TINY_CONFIGS["llama4_text"])
    # no_rope_layer_interval 2: layers 1, 3 global without rotary; interleave_moe_layer_step 2: MoE on 1, 3
    assert model.layer_pattern == (0, 1, 0, 1)
    chunked, nope = (g.layer for g in model.layer_groups)
    assert (chunked.attention.chunked, chunked.attention.sliding_window, chunked.attention.qk_norm) == (True, 8, True)
    assert chunked.attention.qk_norm_params == 0  # an L2 norm: no weights
    assert (nope.attention.rotary_dim, nope.attention.sliding_window, nope.attention.qk_norm) == (0, None, False)
    assert nope.is_moe and nope.mlp.shared is not None and nope.mlp.expert.weight_layout == "in_out"
    assert chunked.mlp.intermediate_size == 96  # intermediate_size_mlp


def test_chunked_attention_prefill_pairs_are_one_triangle_per_chunk() -> None:
    ops = _ops("llama4_text", length=20)
    # chunk W=8, S=20: chunks of 8, 8, 4 queries: 2 * 8*9/2 + 4*5/2 = 82 pairs per head (a window of 8 would
    # see 8*9/2 + 12*8 = 132); flash FLOPs 2 * B * H * pairs * (d + dv) = 2 * 2 * 4 * 82 * 32
    assert ops["layers.chunked.dense.rope.attn.flash"].matmul_flops == 2 * 2 * 4 * 82 * 32
    assert ops["layers.full.moe.nope.attn.flash"].matmul_flops == 2 * 2 * 4 * (20 * 21 // 2) * 32



def test_measured_prefill_attention_scales_by_the_chunks_pairs() -> None:
    from llmsim.hardware.measured import prefill_window_factor

    # S=20, chunks of 8: 82 pairs of the causal 20*21/2 = 210; a window of 8: 132 of 210
    assert prefill_window_factor(20, 8, chunked=True) == 82 / 210
    assert prefill_window_factor(20, 8) == 132 / 210


def test_qwen3_next_layers_and_recurrent_state() -> None:
    model = llmsim.load_model(TINY_CONFIGS["qwen3_next"])
    # full_attention_interval 2: layers 1, 3 full attention; mlp_only_layers [0]: layer 0 dense
    assert model.layer_pattern == (0, 1, 2, 1)
    assert [g.tag for g in model.layer_groups] == ["linear.dense", "full.moe", "linear.moe"]
    # per sequence, per linear layer: conv state [C = 2*2*8 + 4*16 = 96, K = 4] bf16 = 768 bytes and the
    # float32 recurrent state [Hv=4, dk=8, dv=16] = 2048 bytes; per full layer: 10 tokens x kvh 2 x (16 + 16) x 2
    # B=2, S=10: 2 linear x 2 x (768 + 2048) + 2 full x 2 x 10 x 64 x 2 = 11264 + 5120
    assert model.kv_cache_bytes(batch_size=2, seq_len=10, kv_dtype="bfloat16") == 11264 + 5120
    assert model.recurrent_state_bytes(batch_size=2, kv_dtype="bfloat16") == 11264  # whatever the length


def test_gated_delta_scan_runs_in_chunks_of_64() -> None:
    from .hf_reference import prefill_flops
    from .test_cost_model_reference import REFERENCE_OPTIONS, convolution_flops, matmul_flops

    model = llmsim.load_model(TINY_CONFIGS["qwen3_next"])
    ops = llmsim.build_ops(model, "prefill", batch_size=1, seq_len=70, **REFERENCE_OPTIONS)
    scan = next(op for op in ops if op.name == "layers.linear.dense.attn.scan")
    # 70 tokens: 2 chunks of c=64; per chunk and value head 2c (2c dk + c dv + 3 dk dv), dk=8, dv=16:
    # 128 * (1024 + 1024 + 384) = 311296; B=1, Hv=4
    assert scan.matmul_flops == 1 * 4 * 2 * 311296
    assert matmul_flops(ops) == prefill_flops("qwen3_next", 1, 70) - convolution_flops("qwen3_next", 1, 70 + 3)
    decode = llmsim.build_ops(model, "decode", batch_size=2, kv_len=9, activation_dtype="bfloat16")
    update = next(op for op in decode if op.name.endswith("update"))
    # the float32 state [B=2, Hv=4, 8, 16] read and written once per token; the output [B, Hv*dv] in bf16
    assert update.matmul_flops == 0 and update.bytes_written == 2 * 4 * 8 * 16 * 4 + 2 * 4 * 16 * 2


def test_linear_attention_heads_named_in_errors() -> None:
    with pytest.raises(ConfigError, match="linear_num_value_heads=3 is not a multiple of linear_num_key_heads=2"):
        llmsim.load_model(dict(TINY_CONFIGS["qwen3_next"], linear_num_value_heads=3))


def test_a_multimodal_config_says_its_encoder_is_left_out() -> None:
    # llava: a Llama language model beside a CLIP vision tower. llmsim costs the language model; before session 33
    # it said nothing of the vision encoder's weights, memory and time left out
    from llmsim.errors import AssumptionWarning

    llava = {"model_type": "llava", "text_config": dict(TINY_CONFIGS["llama-gqa"]),
             "vision_config": {"model_type": "clip_vision_model", "hidden_size": 64}}
    with pytest.warns(AssumptionWarning, match=r"\(llava\): costed as its language model \(llama\); the vision"):
        spec = llmsim.load_model(llava)
    assert spec.model_type == "llama"
