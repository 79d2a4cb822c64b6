"""Quantized checkpoints: weight bytes per quantization_config pinned by hand (packed values + scales + zero
points + modules left unconverted), against the checkpoints' own byte totals where public, and against
transformers' quantized layout built on the meta device where transformers can build it without GPU
kernels (FineGrainedFP8). Explicit weight_dtype overrides the config; print(r) says which was used."""

from __future__ import annotations

import json

import pytest

import llmsim
from llmsim.analysis.memory import weights_bytes
from llmsim.cost.workload import CostOptions
from llmsim.errors import AssumptionWarning, ConfigError

pytestmark = pytest.mark.filterwarnings("ignore::llmsim.errors.AssumptionWarning")  # tested where they are made


def _weights(model: object, **options: object) -> int:
    return round(weights_bytes(llmsim.load_model(model), CostOptions.make(**options)))


def _llama8b(quantization_config: dict | None) -> dict:
    data = json.loads((llmsim.shipped.model_configs_dir() / "llama-3.1-8b.json").read_text())
    if quantization_config is not None:
        data["quantization_config"] = quantization_config
    return data


# Llama-3.1-8B: 32 layers, h 4096, I 14336, 8 KV heads of 128 -> per layer (K, N) of q, k, v, o, gate, up, down
_LLAMA_LINEARS = [(4096, 4096), (4096, 1024), (4096, 1024), (4096, 4096), (4096, 14336), (4096, 14336),
                  (14336, 4096)]
_LLAMA_REST = 32 * 2 * 4096 * 2 + 2 * 128256 * 4096 * 2 + 4096 * 2  # norms, embed + lm_head, final norm (bf16)


# ---- MXFP4 (gpt-oss) --------------------------------------------------------------------------------
def test_gpt_oss_20b_weights_equal_its_checkpoint() -> None:
    # experts: 24 layers x 32 experts x (gate_up [2880 -> 5760] + down [2880 -> 2880]) = 19,110,297,600 values
    # at 0.5 byte + one E8M0 byte per 32 = 0.53125 byte -> 10,152,345,600 bytes; the other 20,914,757,184 -
    # 19,110,297,600 = 1,804,459,584 parameters (attention, router, expert biases, embeddings, lm_head, norms;
    # modules_to_not_convert) at bfloat16 -> 3,608,919,168 bytes; total 13,761,264,768 bytes = the
    # metadata.total_size of openai/gpt-oss-20b's model.safetensors.index.json (quoted in public files,
    # search-index file ids 66618953322, 31112482743)
    assert _weights("gpt-oss-20b") == 10_152_345_600 + 3_608_919_168 == 13_761_264_768


def test_gpt_oss_120b_fits_one_80gb_gpu() -> None:
    # experts 36 x 128 x 2880 x 8640 = 114,661,785,600 values x 0.53125 = 60,914,073,600 bytes; the rest
    # (116,829,156,672 - 114,661,785,600) x 2 = 4,334,742,144 bytes; total 65,248,815,744 = the checkpoint's
    # tensor bytes (openai/gpt-oss-120b; quoted in a public test, search-index file id 59724567210)
    assert _weights("gpt-oss-120b") == 60_914_073_600 + 4_334_742_144 == 65_248_815_744
    r = llmsim.simulate("gpt-oss-120b", "h100-sxm", batch_size=1, prompt_len=1024, gen_len=256)
    assert r.memory.fits and r.memory.weights_bytes < 80e9
    assert "mxfp4 (4-bit + E8M0 scale per 32)" in str(r) and "attention/router/lm_head bfloat16" in str(r)


def test_explicit_weight_dtype_overrides_the_config_and_says_so() -> None:
    r = llmsim.simulate("gpt-oss-20b", "h100-sxm", batch_size=1, prompt_len=64, gen_len=2, weight_dtype="bf16")
    assert r.memory.weights_bytes == 20_914_757_184 * 2  # every parameter at 2 bytes
    assert "bfloat16 everywhere (weight_dtype argument, overrides quantization_config mxfp4)" in str(r)


# ---- fp8 with block scales ----------------------------------------------------------------------------
def test_qwen3_235b_fp8_weights_by_hand() -> None:
    # per layer: q [4096 -> 8192] and o [8192 -> 4096]: 33,554,432 fp8 bytes + 64 x 32 blocks x 4-byte scale each;
    # k, v [4096 -> 512]: 2,097,152 + 4 x 32 x 4 each; 128 experts x 3 matrices of 4096 x 1536 (6,291,456 bytes +
    # 12 x 32 x 4 = 1,536 scale bytes); router 128 x 4096 and the norms (2 x 4096 + 2 x 128) in bf16
    attention = 2 * (33_554_432 + 2048 * 4) + 2 * (2_097_152 + 128 * 4)
    experts = 128 * 3 * (6_291_456 + 1_536)
    layer = attention + experts + 128 * 4096 * 2 + (2 * 4096 + 2 * 128) * 2
    rest = 2 * 151936 * 4096 * 2 + 4096 * 2  # embed_tokens and lm_head (modules_to_not_convert), final norm
    assert _weights("qwen3-235b-a22b-fp8") == 94 * layer + rest == 236_445_455_360


def test_minimax_m2_5_fp8_weights_by_hand() -> None:
    # per layer: q [3072 -> 6144] and o [6144 -> 3072]: 18,874,368 fp8 bytes + 48 x 24 blocks x 4-byte scale each;
    # k, v [3072 -> 1024]: 3,145,728 + 8 x 24 x 4 each; the q and k norms [6144] + [1024] bf16; 256 experts of
    # gate/up [3072 -> 2 x 1536] and down [1536 -> 3072] (14,155,776 fp8 bytes + (24 x 24 + 24 x 12) x 4 scale
    # bytes); router 256 x 3072 ("gate": modules_to_not_convert) and the two layer norms bf16
    attention = 2 * (18_874_368 + 48 * 24 * 4) + 2 * (3_145_728 + 8 * 24 * 4) + (6144 + 1024) * 2
    experts = 256 * (14_155_776 + (24 * 24 + 24 * 12) * 4)
    layer = attention + experts + 256 * 3072 * 2 + 2 * 3072 * 2
    rest = 2 * 200064 * 3072 * 2 + 3072 * 2  # embed_tokens and lm_head (bf16), final norm
    assert _weights("minimax-m2.5") == 62 * layer + rest == 230_024_049_664


def test_kimi_k2_5_int4_experts_by_hand() -> None:
    # compressed-tensors w4a16 (pack-quantized, symmetric, group 32) on the routed experts only; attention, the
    # dense and shared MLPs, the router and lm_head bf16 ("ignore"). One expert matrix [N, K]: K*N/2 packed bytes
    # + (K/32)*N bf16 scales + a 2 x int64 weight_shape; gate and up [7168 -> 2048], down [2048 -> 7168]
    h = 7168
    expert = 2 * (h * 2048 // 2 + h // 32 * 2048 * 2 + 16) + (2048 * h // 2 + 2048 // 32 * h * 2 + 16)
    # MLA bf16: q_a [7168 -> 1536] + norm, q_b [1536 -> 64 x 192], kv_a [7168 -> 576] + norm, kv_b [512 -> 64 x 256],
    # o [64 x 128 -> 7168]
    attention = 2 * (h * 1536 + 1536 + 1536 * 64 * 192 + h * 576 + 512 + 512 * 64 * 256 + 64 * 128 * h)
    moe_layer = attention + 384 * expert + 3 * h * 2048 * 2 + 384 * h * 2 + 2 * h * 2  # + shared, router, norms
    dense_layer = attention + 3 * h * 18432 * 2 + 2 * h * 2  # layer 0 (first_k_dense_replace 1)
    rest = 2 * 163840 * h * 2 + h * 2  # embed_tokens, lm_head, final norm
    assert (attention, expert) == (202_248_192, 24_772_656)
    assert _weights("kimi-k2.5") == 60 * moe_layer + dense_layer + rest == 594_206_365_696


def test_deepseek_v3_1_nvfp4_keeps_the_mla_projections_at_16_bits() -> None:
    # ModelOpt NVFP4 (hf_quant_config/deepseek-v3.1-nvfp4.json): every linear K*N/2 fp4 bytes + K*N/16 E4M3 scales +
    # 2 float32 global scales, except exclude_modules: every layer's q_a, q_b, kv_a, kv_b (bf16, with their norms)
    # and lm_head; o_proj [128 x 128 -> 7168] is quantized
    h = 7168

    def fp4(k: int, n: int) -> int:
        return k * n // 2 + k * n // 16 + 8

    mla = 2 * (h * 1536 + 1536 * 128 * 192 + h * 576 + 512 * 128 * 256 + 1536 + 512)
    attention = mla + fp4(128 * 128, h)
    dense = 3 * fp4(h, 18432)  # layers 0-2 (first_k_dense_replace 3)
    moe = 256 * 3 * fp4(h, 2048) + 3 * fp4(h, 2048) + 256 * h * 2  # 256 experts, 1 shared, the bf16 router
    rest = 2 * 129280 * h * 2 + h * 2  # embed_tokens, lm_head, final norm
    assert (mla, attention - mla) == (139_333_632, 66_060_296)
    total = 3 * (attention + dense + 2 * h * 2) + 58 * (attention + moe + 2 * h * 2) + rest
    assert _weights("deepseek-v3.1-nvfp4") == total == 386_380_083_104
    ops = {op.name: op for op in llmsim.build_ops("deepseek-v3.1-nvfp4", "decode", batch_size=1, kv_len=8)}
    assert ops["layers.moe.attn.kv_a_proj"].precision == "bf16" and ops["layers.moe.attn.o_proj"].precision == "fp4"


def test_minimax_m2_5_nvfp4_experts_by_hand() -> None:
    # ModelOpt NVFP4 inline (quant_method modelopt, ignore: every self_attn*, block_sparse_moe.gate, lm_head): only
    # the experts are fp4, K*N/2 + K*N/16 + 8 per matrix; gate/up fused [3072 -> 2 x 1536], down [1536 -> 3072].
    # approximation: the checkpoint's w1 and w3 carry a global scale pair each (+8 bytes per expert, 0.0001%)
    experts = 256 * ((3072 * 3072 // 2 + 3072 * 3072 // 16 + 8) + (1536 * 3072 // 2 + 1536 * 3072 // 16 + 8))
    attention = 2 * (3072 * 6144 + 3072 * 1024) * 2 + (6144 + 1024) * 2  # q, k, v, o and the q/k norms, bf16
    layer = experts + attention + 256 * 3072 * 2 + 2 * 3072 * 2  # + the router and the two layer norms
    assert _weights("minimax-m2.5-nvfp4") == 62 * layer + 2 * 200064 * 3072 * 2 + 3072 * 2 == 134_401_566_720


@pytest.mark.parametrize(("name", "kept"), [
    ("qwen3.5-397b-a17b-nvfp4", "attention/shared_experts/router/lm_head bfloat16"),  # model.language_model.layers
    ("kimi-k2.5-nvfp4", "attention/mla_projections/router/lm_head bfloat16"),  # language_model.model.layers
])
def test_multimodal_nvfp4_exclusions_match_the_language_model_layers(name: str, kept: str) -> None:
    # the ignore lists name the text layers under the multimodal wrapper's prefix; the excluded roles stay 16-bit
    source = llmsim.load_model(name).weights_source()
    assert "experts modelopt nvfp4" in source and kept in source


def test_deepseek_v3_fp8_blocks_round_up() -> None:
    ops = {op.name: op for op in llmsim.build_ops("deepseek-v3", "decode", batch_size=1, kv_len=8)}
    # kv_a_proj [7168 -> 576]: 4,128,768 fp8 bytes + ceil(576/128) x (7168/128) = 5 x 56 float32 block scales
    assert ops["layers.moe.attn.kv_a_proj"].param_bytes == 7168 * 576 + 5 * 56 * 4
    assert ops["layers.moe.attn.kv_a_proj"].precision == "fp8"  # dynamic fp8 activations: W8A8 GEMMs
    assert ops["lm_head"].param_bytes == 7168 * 129280 * 2  # lm_head stays bfloat16


def _meta_fp8_bytes(data: dict, block: list[int] | None, not_convert: list[str]) -> int:
    """Bytes of the tensors of transformers' FineGrainedFP8 layout, built on the meta device."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers.integrations.finegrained_fp8 import replace_with_fp8_linear

    fields = {k: v for k, v in data.items() if k not in ("model_type", "quantization_config", "auto_map")}
    config = transformers.AutoConfig.for_model(data["model_type"], **fields)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    qc = transformers.FineGrainedFP8Config(weight_block_size=block, modules_to_not_convert=not_convert)
    replace_with_fp8_linear(model, qc.modules_to_not_convert, qc, pre_quantized=True)
    # transformers 5.24 keeps DeepSeek-V3's router weight (mlp.gate.weight) in float32, as its checkpoint does not
    # (bf16) and vLLM's CUDA GateLinear does not either: counted at the model dtype's 2 bytes, as llmsim counts it
    return sum(p.numel() * (2 if name.endswith("mlp.gate.weight") else p.element_size())
               for name, p in model.named_parameters())


@pytest.mark.parametrize("block", [[128, 128], None])
@pytest.mark.parametrize("data", [
    {"model_type": "qwen3_moe", "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 128,
     "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "num_experts": 4,
     "num_experts_per_tok": 2, "vocab_size": 512, "max_position_embeddings": 256},
    {"model_type": "deepseek_v3", "hidden_size": 256, "intermediate_size": 384, "moe_intermediate_size": 128,
     "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2, "first_k_dense_replace": 1,
     "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1, "n_group": 1, "topk_group": 1,
     "q_lora_rank": 128, "kv_lora_rank": 128, "qk_nope_head_dim": 64, "qk_rope_head_dim": 64, "v_head_dim": 64,
     "vocab_size": 512, "max_position_embeddings": 256},
])
def test_fp8_bytes_equal_transformers_quantized_layout_on_meta(data: dict, block: list[int] | None) -> None:
    skip = ["lm_head", "model.layers.*.mlp.gate"]
    qc = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3", "modules_to_not_convert": skip,
          **({"weight_block_size": block} if block else {})}
    data = {**data, "torch_dtype": "bfloat16", "quantization_config": qc}
    if block is None and data["model_type"] == "deepseek_v3":
        pytest.skip("transformers' FP8Experts needs a block size")
    assert _weights(data) == _meta_fp8_bytes(data, block, skip)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["deepseek-v3", "qwen3-235b-a22b-fp8"])
def test_shipped_fp8_checkpoints_equal_transformers_quantized_layout_on_meta(name: str) -> None:
    # the whole 671B / 235B models in transformers' FineGrainedFP8 layout (fp8 weights, float32 block scales),
    # lm_head kept as transformers' quantizer keeps it, plus the config's modules_to_not_convert:
    # deepseek-v3 673,150,552,416 bytes, qwen3-235b-a22b-fp8 236,445,455,360 (by hand above)
    data = json.loads((llmsim.shipped.model_configs_dir() / f"{name}.json").read_text())
    qc = data["quantization_config"]
    skip = ["lm_head", *(qc.get("modules_to_not_convert") or [])]
    assert _weights(name) == _meta_fp8_bytes(data, qc["weight_block_size"], skip)


# ---- AWQ, GPTQ -------------------------------------------------------------------------------------------
def test_awq_int4_group128_counts_scales_and_zeros() -> None:
    # AutoAWQ GEMM: qweight 4 bits per weight, per group of 128 input rows per output column an fp16 scale and
    # a packed 4-bit zero point: K*N/2 + (K/128)*N*(2 + 0.5) per linear; embeddings, lm_head, norms bf16
    qc = {"quant_method": "awq", "zero_point": True, "group_size": 128, "bits": 4, "version": "gemm"}
    linears = sum(K * N // 2 + K // 128 * N * 5 // 2 for K, N in _LLAMA_LINEARS)
    assert linears == 113_311_744
    assert _weights(_llama8b(qc)) == 32 * linears + _LLAMA_REST == 5_727_854_592


def test_gptq_int4_adds_g_idx_and_quantizes_lm_head_when_asked() -> None:
    # GPTQ: as AWQ (qzeros stored even when sym) plus an int32 g_idx per input row: + 4*K per linear
    qc = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
    g_idx = 4 * sum(K for K, _ in _LLAMA_LINEARS)  # 4 x 38,912 = 155,648 per layer
    assert _weights(_llama8b(qc)) == 5_727_854_592 + 32 * g_idx
    head_bf16, head_int4 = 4096 * 128256 * 2, 4096 * 128256 // 2 + 32 * 128256 * 5 // 2 + 4 * 4096
    assert _weights(_llama8b({**qc, "lm_head": True})) == 5_727_854_592 + 32 * g_idx - head_bf16 + head_int4


def test_modules_not_converted_in_some_layers_stay_at_the_base_dtype() -> None:
    qc = {"quant_method": "awq", "zero_point": True, "group_size": 128, "bits": 4,
          "modules_to_not_convert": ["model.layers.0.self_attn"]}
    spec = llmsim.load_model(_llama8b(qc))
    assert [g.count for g in spec.layer_groups] == [1, 31] and spec.layer_groups[0].layer.unquantized == ("attention",)
    attention_awq = sum(K * N // 2 + K // 128 * N * 5 // 2 for K, N in _LLAMA_LINEARS[:4])
    attention_bf16 = sum(K * N * 2 for K, N in _LLAMA_LINEARS[:4])
    assert _weights(spec) == 5_727_854_592 - attention_awq + attention_bf16


# ---- compressed-tensors, ModelOpt, bitsandbytes --------------------------------------------------------
def _ct(weights: dict, activations: dict | None, fmt: str) -> dict:
    return {"quant_method": "compressed-tensors", "format": fmt, "ignore": ["lm_head"],
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights, "input_activations": activations}}}


_INT8 = {"num_bits": 8, "type": "int", "symmetric": True, "dynamic": True, "strategy": "token"}
_FP8_TOKEN = {"num_bits": 8, "type": "float", "symmetric": True, "dynamic": True, "strategy": "token"}
_NVFP4 = {"num_bits": 4, "type": "float", "symmetric": True, "strategy": "tensor_group", "group_size": 16}


@pytest.mark.parametrize(("qc", "per_linear", "precision"), [
    # w8a8 int8: int8 weights + a bf16 scale per output channel; int8 GEMMs
    (_ct({"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel"}, _INT8, "int-quantized"),
     lambda K, N: K * N + 2 * N, "int8"),
    # w4a16: 4-bit packed + a bf16 scale per group of 128 + the stored shape (2 int64) per matrix; weight-only
    (_ct({"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 128}, None,
         "pack-quantized"), lambda K, N: K * N // 2 + K // 128 * N * 2 + 16, "bf16"),
    # fp8 dynamic: fp8 weights + a bf16 scale per channel; fp8 GEMMs
    (_ct({"num_bits": 8, "type": "float", "symmetric": True, "strategy": "channel"}, _FP8_TOKEN, "float-quantized"),
     lambda K, N: K * N + 2 * N, "fp8"),
    # nvfp4: 4-bit + one fp8 scale per 16 + float32 global scales of the weight and the input; fp4 GEMMs
    (_ct(_NVFP4, _NVFP4, "nvfp4-pack-quantized"), lambda K, N: K * N // 2 + K // 16 * N + 8, "fp4"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]},
     lambda K, N: K * N // 2 + K // 16 * N + 8, "fp4"),
    # bitsandbytes nf4, double quantized: 4-bit + an 8-bit absmax per 64 + a float32 one per 256 blocks, code
    # books (16 + 256 float32) and an offset per matrix; weight-only
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
      "bnb_4bit_use_double_quant": True}, lambda K, N: K * N / 2 + K * N / 64 * (1 + 4 / 256) + 273 * 4, "bf16"),
    # LLM.int8: int8 rows + a float32 scale per row
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, lambda K, N: K * N + 4 * N, "bf16"),
])
def test_checkpoint_formats_by_hand(qc: dict, per_linear: object, precision: str) -> None:
    expected = 32 * sum(per_linear(K, N) for K, N in _LLAMA_LINEARS) + _LLAMA_REST  # 32 layers' linears + the rest
    assert _weights(_llama8b(qc)) == pytest.approx(expected, abs=1)
    ops = {op.name: op for op in llmsim.build_ops(_llama8b(qc), "decode", batch_size=1, kv_len=4)}
    assert ops["layers.mlp.down_proj"].precision == precision


def test_nvfp4_runs_on_fp4_tensor_cores_and_the_measured_table() -> None:
    qc = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}
    r = llmsim.simulate(_llama8b(qc), "b200", batch_size=64, prompt_len=2048, gen_len=2)
    down = next(op for op in r.prefill.ops if op.name == "layers.mlp.down_proj")
    assert down.source == "vllm gemm"  # aiconfigurator's nvfp4 GEMM rows (FlashInfer NVFP4 kernels)
    with pytest.raises(llmsim.errors.OptionError):  # Hopper has no fp4 tensor cores; nothing to fall back to
        llmsim.load_hardware("h100-sxm").matrix_peak_flops_per_s("fp4")


def test_fp8_checkpoint_on_a_gpu_without_fp8_runs_weight_only() -> None:
    # (TP 4: 1536 / 4 = 384 per GPU, whole 128-wide scale blocks; vLLM checks them on the Marlin path too)
    r = llmsim.simulate("qwen3-235b-a22b-fp8", "a100-80gb-sxm", tensor_parallel=4, batch_size=1, prompt_len=64,
                        gen_len=2)
    assert "run weight-only" in r.assumptions["weights"] and "no fp8 matrix unit" in r.assumptions["weights"]
    # fp8 Marlin (weight-only): the A100's TensorRT-LLM int8 weight-only GEMM rows stand in, and say so
    assert any("int8_wo rows stand in for fp8_wo" in source for source in r.measured_tables.values())


def test_an_nvfp4_group_size_other_than_16_is_refused() -> None:
    """NVFP4 puts one E4M3 scale on every 16 values; a config saying 0 or 128 was read as 16 without a word."""
    for group in (0, 128, "16"):
        with pytest.raises(ConfigError, match=f"group_size={group!r} is not allowed; NVFP4 scales every 16"):
            llmsim.load_model(_llama8b({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": group}))
    llmsim.load_model(_llama8b({"quant_method": "modelopt", "quant_algo": "NVFP4"}))  # left out: 16


def test_unknown_quant_method_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="quant_method='hqq' is not supported; supported: awq, bitsandbytes"):
        llmsim.load_model(_llama8b({"quant_method": "hqq", "nbits": 4}))


# ---- dtypes stated, missing, float32 ---------------------------------------------------------------------
def test_a_missing_dtype_is_assumed_bfloat16_and_said() -> None:
    data = _llama8b(None)
    del data["torch_dtype"]
    with pytest.warns(AssumptionWarning, match="states no torch_dtype/dtype: assumed bfloat16"):
        spec = llmsim.load_model(data)
    assert spec.dtype == "bfloat16" and "assumed bfloat16" in spec.dtype_source
    r = llmsim.simulate(spec, "h100-sxm", batch_size=1, prompt_len=64, gen_len=2)
    assert "assumed bfloat16" in str(r)
    # both dtypes given replace the assumed one: no advice to pass them (it was printed though they were passed)
    import warnings

    data["max_position_embeddings"] = 4097  # another config: not the memoised one above
    with warnings.catch_warnings():
        warnings.simplefilter("error", AssumptionWarning)
        llmsim.simulate(data, "h100-sxm", batch_size=1, prompt_len=64, gen_len=2, weight_dtype="float32",
                        activation_dtype="float32")


def test_a_float32_checkpoint_is_served_in_bfloat16_by_serving_engines() -> None:
    # google/gemma-2-9b's config says float32: its base checkpoint is stored in float32. vLLM serves it in
    # bfloat16 (dtype='auto'); eager transformers (the CPU default) loads it as stated.
    assert llmsim.load_model("gemma-2-9b").dtype == "float32"
    with pytest.warns(AssumptionWarning, match="vllm serves it in bfloat16"):
        r = llmsim.simulate("gemma-2-9b", "h100-sxm", batch_size=1, prompt_len=64, gen_len=2)
    assert r.memory.weights_bytes == 9_241_705_984 * 2  # parameters (SOURCES.md, meta device) x 2 bytes
    assert "vllm serves it in bfloat16" in str(r)
    cpu = llmsim.simulate("gemma-2-9b", "cpu-generic", batch_size=1, prompt_len=64, gen_len=2)
    assert cpu.memory.weights_bytes == 9_241_705_984 * 4
    asked = llmsim.simulate("gemma-2-9b", "h100-sxm", batch_size=1, prompt_len=64, gen_len=2,
                            activation_dtype="float32", weight_dtype="float32")
    assert asked.memory.weights_bytes == 9_241_705_984 * 4


# ---- configs as transformers 5 writes them ---------------------------------------------------------------
def test_configs_saved_by_transformers_5_load(tmp_path: object) -> None:
    transformers = pytest.importorskip("transformers")
    from .tiny_configs import TINY_CONFIGS

    for name, data in TINY_CONFIGS.items():
        fields = {k: v for k, v in data.items() if k != "model_type"}
        config = transformers.AutoConfig.for_model(data["model_type"], **fields, dtype="bfloat16")
        folder = tmp_path / name  # type: ignore[operator]
        config.save_pretrained(folder)
        written = json.loads((folder / "config.json").read_text())
        if name == "qwen3_moe":
            assert "num_local_experts" in written and "num_experts" not in written  # transformers 5's name
        assert llmsim.num_parameters(llmsim.load_model(folder)) == llmsim.num_parameters(data), name


@pytest.mark.parametrize(("qc", "message"), [
    ({"quant_method": "awq", "bits": "four"}, "(awq): bits='four' is not allowed; give one of 4, 8"),
    ({"quant_method": "gptq", "group_size": -7}, "group_size=-7 is not allowed"),
    ({"quant_method": "fp8", "weight_block_size": [128]}, "weight_block_size=[128] is not allowed"),
    ({"quant_method": "awq", "modules_to_not_convert": "lm_head"}, "modules_to_not_convert must be a list"),
    ({"quant_method": "compressed-tensors", "config_groups": {}}, "no config_groups entry with weights"),
    ({"quant_method": "bitsandbytes"}, "neither load_in_4bit nor load_in_8bit is true"),
    ("int4", "quantization_config must be an object, not str"),
])
def test_bad_quantization_configs_are_refused_in_one_line(qc: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        llmsim.load_model(_llama8b(qc))  # type: ignore[arg-type]


# ---- shipped AWQ and GPTQ checkpoints (model_configs/SOURCES.md) --------------------------------------------
def test_qwen3_32b_awq_weights_equal_its_checkpoint_tensors() -> None:
    # AutoAWQ GEMM int4, group 128, zero points: per linear qweight K*N/2 + per 128 inputs an N-wide row of scales
    # (2 bytes) and packed 4-bit zeros (0.5 byte); Qwen3-32B: 64 layers, h 5120, q 8192, k/v 1024, I 25600
    linears = [(5120, 8192), (5120, 1024), (5120, 1024), (8192, 5120), (5120, 25600), (5120, 25600), (25600, 5120)]
    per_layer = sum(K * N // 2 + K // 128 * N * 5 // 2 for K, N in linears) + (2 * 5120 + 2 * 128) * 2  # + norms
    assert per_layer == 253_338_112
    # = the checkpoint's tensors per layer, as a transformers 5.7 report of the Qwen3-32B-AWQ folder lists them
    # (search-index file id 62727925985): gate/up qweight [5120, 3200] int32 65,536,000 + qzeros [40, 3200] int32
    # 512,000 + scales [40, 25600] bf16 2,048,000 each; down [25600, 640] / [200, 640] / [200, 5120] the same sizes;
    # q and o 20,971,520 + 163,840 + 655,360 each; k and v 2,621,440 + 20,480 + 81,920 each; norms 20,992
    assert per_layer == 3 * (65_536_000 + 512_000 + 2_048_000) + 2 * (20_971_520 + 163_840 + 655_360) + 2 * (
        2_621_440 + 20_480 + 81_920) + 20_992
    # embed_tokens and lm_head [151936, 5120] and the final norm at 2 bytes: 19,325,298,688 bytes = 18.00 GiB, the
    # report's total tensor size
    assert _weights("qwen3-32b-awq") == 64 * per_layer + 2 * 151936 * 5120 * 2 + 5120 * 2 == 19_325_298_688


def test_qwen3_30b_a3b_gptq_int4_weights_by_hand() -> None:
    # GPTQ int4 group 128 (desc_act false, sym): as AWQ plus an int32 g_idx per input row; the router (mlp.gate)
    # stays float16 (the checkpoint stores it as a plain weight: ModelCloud/GPTQModel issue #1625's load log)
    def gptq(K: int, N: int) -> int:
        return K * N // 2 + K // 128 * N * 5 // 2 + 4 * K

    attention = gptq(2048, 4096) + 2 * gptq(2048, 512) + gptq(4096, 2048)  # q, k, v, o: 4 KV heads of 128
    experts = 128 * (2 * gptq(2048, 768) + gptq(768, 2048))  # gate, up, down of each of 128 experts
    assert (attention, experts) == (9_846_784, 316_276_736)
    layer = attention + experts + 128 * 2048 * 2 + (2 * 2048 + 2 * 128) * 2  # + router, norms (float16)
    total = 48 * layer + 2 * 151936 * 2048 * 2 + 2048 * 2  # + embed_tokens, lm_head, final norm
    assert _weights("qwen3-30b-a3b-gptq-int4") == total == 16_924_176_384


def test_a_4_bit_kv_cache_carries_its_block_scales() -> None:
    """The KV cache in nvfp4 holds an E4M3 scale byte per 16 values (0.5 + 1/16 = 0.5625 bytes per element) and
    in mxfp4 an E8M0 byte per 32 (0.53125), as 4-bit weights are charged; it was half of fp8's exactly."""
    spec = llmsim.load_model("llama-3.1-8b")
    fp8 = spec.kv_cache_bytes(batch_size=32, seq_len=8319, kv_dtype="fp8")  # 1 byte per element
    assert spec.kv_cache_bytes(batch_size=32, seq_len=8319, kv_dtype="nvfp4") == pytest.approx(fp8 * 0.5625)
    assert spec.kv_cache_bytes(batch_size=32, seq_len=8319, kv_dtype="mxfp4") == pytest.approx(fp8 * 0.53125)
    # the decode step's cache reads follow the same bytes
    r = {kv: llmsim.simulate(spec, "b200", batch_size=32, prompt_len=8192, gen_len=2, kv_dtype=kv)
         for kv in ("fp8", "nvfp4")}
    read = {kv: sum(op.bytes for op in res.decode.ops if op.kind == "attention") for kv, res in r.items()}
    assert read["nvfp4"] < read["fp8"] and r["nvfp4"].memory.kv_cache_bytes == pytest.approx(
        r["fp8"].memory.kv_cache_bytes * 0.5625)


def test_fp8_weights_with_16_bit_activations_say_the_device_would_run_fp8() -> None:
    """weight_dtype='fp8' alone is weight-only (W8A16, Marlin-style): on an H200 that read as vLLM's fp8 serving,
    which runs W8A8 there (TTFT 8.40 s against 4.88 s with activation_dtype='fp8'); the dtypes line now says so. On
    an A100 (no fp8 unit) weight-only is what engines run: nothing to say."""
    kw = dict(batch_size=8, prompt_len=4096, gen_len=4, weight_dtype="fp8", kv_dtype="fp8")
    h200 = llmsim.simulate("llama-3.1-70b", "h200", **kw)
    assert "weight-only fp8 GEMMs (16-bit activations): this device's fp8 matrix unit would run " \
        "activation_dtype='fp8' too" in h200.assumptions["dtypes"]
    w8a8 = llmsim.simulate("llama-3.1-70b", "h200", activation_dtype="fp8", **kw)
    assert "weight-only" not in w8a8.assumptions["dtypes"] and w8a8.ttft_s < h200.ttft_s
    a100 = llmsim.simulate("llama-3.1-70b", "a100-80gb-sxm", tensor_parallel=2, **kw)
    assert "weight-only" not in a100.assumptions["dtypes"]
