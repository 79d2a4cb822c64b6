"""ModelOpt's hf_quant_config.json beside a checkpoint's config.json: read as its quantization_config where the
config states none; weight bytes pinned by hand. The fixture: nvidia/Qwen3-32B-NVFP4's hf_quant_config.json as
ai-dynamo/aiconfigurator@f577ab8432dfc9970fea27853a24861a6d3076cf keeps it
(src/aiconfigurator/model_configs/nvidia--Qwen3-32B-NVFP4_hf_quant_config.json, byte for byte) beside the
Qwen3-32B config.json (model_configs/qwen3-32b.json; the NVFP4 checkpoint keeps the base architecture)."""

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
