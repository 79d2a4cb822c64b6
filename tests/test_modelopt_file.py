"""ModelOpt's hf_quant_config.json beside a checkpoint's config.json: read as its quantization_config where the
config states none; weight bytes pinned by hand. The fixture: nvidia/Qwen3-32B-NVFP4's hf_quant_config.json as
ai-dynamo/aiconfigurator@f577ab8432dfc9970fea27853a24861a6d3076cf keeps it
(src/aiconfigurator/model_configs/nvidia--Qwen3-32B-NVFP4_hf_quant_config.json, byte for byte) beside the
Qwen3-32B config.json (model_configs/qwen3-32b.json; the NVFP4 checkpoint keeps the base architecture); and
nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4's pair of files from the aiconfigurator-core 0.12.0 wheel."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import llmsim
from llmsim.analysis.memory import weights_bytes
from llmsim.cost.workload import CostOptions
from llmsim.errors import ConfigError

FIXTURE = Path(__file__).parent / "fixtures" / "modelopt" / "qwen3-32b-nvfp4"

# Qwen3-32B: 64 layers, h 5120, 64 query heads and 8 KV heads of 128, I 25600 -> (K, N) of q, k, v, o, gate, up, down
_LINEARS = [(5120, 8192), (5120, 1024), (5120, 1024), (8192, 5120), (5120, 25600), (5120, 25600), (25600, 5120)]


def test_nvfp4_hf_quant_config_beside_config_json(tmp_path: Path) -> None:
    spec = llmsim.load_model(FIXTURE)
    assert spec.quantization is not None and spec.quantization.method == "modelopt"
    assert spec.weights_source() == (
        "quantization_config modelopt: attention/mlp modelopt nvfp4 (4-bit + E4M3 scale per 16, fp4 activations); "
        "lm_head bfloat16 (kv_cache_quant_algo FP8: the KV cache follows kv_dtype, as engines do unless told "
        "(kv_dtype='fp8'))")
    # NVFP4: 4-bit values (0.5 byte), one E4M3 scale byte per 16 inputs, a float32 global scale of the weights
    # and one of the activations per matrix: K*N/2 + K*N/16 + 8 per linear
    per_layer = sum(K * N // 2 + K * N // 16 + 8 for K, N in _LINEARS)
    assert per_layer == 243_793_920 + 30_474_240 + 7 * 8
    norms = 64 * (2 * 5120 + 2 * 128) * 2 + 5120 * 2  # input/post-attention norms, q/k norms, final norm (bf16)
    embeddings = 2 * 151936 * 5120 * 2  # embed_tokens and lm_head (exclude_modules: lm_head) in bf16
    total = weights_bytes(spec, CostOptions.make())
    assert total == 64 * per_layer + norms + embeddings == 20_666_168_832
    r = llmsim.simulate(FIXTURE, "b200", batch_size=1, prompt_len=128, gen_len=8)
    assert "quantization_config modelopt: " in str(r) and "nvfp4" in str(r)


def test_a_quantization_config_in_config_json_wins(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(FIXTURE, folder)
    data = json.loads((folder / "config.json").read_text())
    data["quantization_config"] = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    (folder / "config.json").write_text(json.dumps(data))
    assert llmsim.load_model(folder).quantization.method == "fp8"
    # a config file of another name (a shipped one, say) takes no hf_quant_config.json from its folder
    shutil.copy(FIXTURE / "config.json", folder / "qwen3-32b.json")
    assert llmsim.load_model(folder / "qwen3-32b.json").quantization is None


def test_a_shipped_name_reads_its_hf_quant_config_from_the_named_folder(tmp_path: Path) -> None:
    # model_configs/qwen3-32b-nvfp4.json (Qwen3-32B's config) + model_configs/hf_quant_config/qwen3-32b-nvfp4.json
    # (the fixture's file): the same spec as the checkpoint folder, 20,666,168,832 bytes as pinned above
    shipped = llmsim.load_model("qwen3-32b-nvfp4")
    assert shipped.quantization == llmsim.load_model(FIXTURE).quantization
    assert weights_bytes(shipped, CostOptions.make()) == 20_666_168_832
    # any NAME.json: hf_quant_config/NAME.json beside it
    (tmp_path / "hf_quant_config").mkdir()
    shutil.copy(FIXTURE / "config.json", tmp_path / "mine.json")
    assert llmsim.load_model(tmp_path / "mine.json").quantization is None
    shutil.copy(FIXTURE / "hf_quant_config.json", tmp_path / "hf_quant_config" / "mine.json")
    assert llmsim.load_model(tmp_path / "mine.json").quantization.method == "modelopt"


def test_modelopt_wildcards_match_as_globs(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(FIXTURE, folder)
    quant = {"quantization": {"quant_algo": "NVFP4", "group_size": 16,
                              "exclude_modules": ["lm_head", "model.layers.6*", "*.self_attn*"]}}
    (folder / "hf_quant_config.json").write_text(json.dumps(quant))
    spec = llmsim.load_model(folder)
    # "*.self_attn*" keeps every layer's attention in bf16; "model.layers.6*" (layers 6, 60..63) also their MLPs
    # (a regex would have read "model.layers.6" followed by any number of 6s, i.e. layer 6 only)
    assert "attention" in spec.quantization.kept
    kept_mlp = [i for i, g in enumerate(spec.layer_pattern) if "mlp" in spec.layer_groups[g].layer.unquantized]
    assert kept_mlp == [6, 60, 61, 62, 63]


def test_a_broken_hf_quant_config_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(FIXTURE, folder)
    (folder / "hf_quant_config.json").write_text(json.dumps({"producer": {"name": "modelopt"}}))
    with pytest.raises(ConfigError, match=re.escape("hf_quant_config.json: expected an object with a 'quantization'")):
        llmsim.load_model(folder)


def test_nemotron_3_nano_nvfp4_keeps_its_excluded_mixers_in_bf16() -> None:
    # nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4's config.json and hf_quant_config.json, byte for byte from the
    # aiconfigurator-core 0.12.0 wheel (aiconfigurator_core/model_configs/nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-
    # NVFP4_*): exclude_modules lists lm_head, in_proj/out_proj of 6 Mamba-2 layers (4, 11, 18, 25, 32, 41),
    # q/k/v/o_proj of all 6 attention layers (5, 12, 19, 26, 33, 42) and the convolutions (no matmul)
    spec = llmsim.load_model(FIXTURE.parent / "nemotron-3-nano-30b-a3b-nvfp4")
    kept = [i for i, g in enumerate(spec.layer_pattern) if spec.layer_groups[g].layer.unquantized]
    assert kept == [4, 5, 11, 12, 18, 19, 25, 26, 32, 33, 41, 42]

    def nvfp4(K: int, N: int) -> int:  # K*N/2 values + K/16*N E4M3 scales + two float32 global scales
        return K * N // 2 + K // 16 * N + 8

    h = 2688
    mamba_rest = (6144 * 5 + 3 * 64 + 4096 + h) * 2  # conv [6144, 4] + bias, A_log/dt_bias/D, gated norm, norm
    mamba = nvfp4(h, 10304) + nvfp4(4096, h) + mamba_rest  # in_proj [h -> 2*4096 + 2*8*128 + 64], out_proj
    mamba_bf16 = (h * 10304 + 4096 * h) * 2 + mamba_rest
    attention_bf16 = (h * 4096 + 2 * h * 256 + 4096 * h) * 2 + h * 2  # q, k, v, o (32 heads, 2 KV heads of 128)
    experts = 128 * (nvfp4(h, 1856) + nvfp4(1856, h))  # 128 relu2 experts: up, down
    moe = 128 * h * 2 + experts + nvfp4(h, 3712) + nvfp4(3712, h) + h * 2  # router bf16, shared expert, norm
    assert (mamba, moe) == (21_848_208, 730_326_288)
    rest = 2 * 131072 * h * 2 + h * 2  # embeddings, lm_head (excluded), final norm in bf16
    total = 17 * mamba + 6 * mamba_bf16 + 6 * attention_bf16 + 23 * moe + rest
    assert weights_bytes(spec, CostOptions.make()) == total == 19_323_942_912
