"""Small configs of every supported architecture, with the real transformers field names.

Each is a few layers and tiny widths, so the real model builds and runs on CPU in milliseconds.
Windows are short so sliding-window layers are exercised at the test lengths.
"""

from __future__ import annotations

from typing import Any

_BASE: dict[str, Any] = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
                         "num_attention_heads": 4, "vocab_size": 128, "max_position_embeddings": 256}

TINY_CONFIGS: dict[str, dict[str, Any]] = {
    "llama-gqa": {"model_type": "llama", **_BASE, "num_key_value_heads": 2},
    "llama-mha-bias": {"model_type": "llama", **_BASE, "num_key_value_heads": 4, "attention_bias": True,
                       "mlp_bias": True, "tie_word_embeddings": True},
    "llama-mqa-headdim": {"model_type": "llama", **_BASE, "num_key_value_heads": 1, "head_dim": 24},
    "mistral-sliding": {"model_type": "mistral", **_BASE, "num_key_value_heads": 2, "sliding_window": 8},
    "qwen2": {"model_type": "qwen2", **_BASE, "num_key_value_heads": 2},
    "qwen3": {"model_type": "qwen3", **_BASE, "num_key_value_heads": 2, "head_dim": 32},
    "phi3": {"model_type": "phi3", **_BASE, "num_key_value_heads": 2, "pad_token_id": 0},
    "gemma2": {"model_type": "gemma2", **_BASE, "num_key_value_heads": 2, "head_dim": 16, "sliding_window": 8},
    "gemma3_text": {"model_type": "gemma3_text", **_BASE, "num_hidden_layers": 3, "num_key_value_heads": 1,
                    "head_dim": 16, "sliding_window": 8,
                    "layer_types": ["sliding_attention", "sliding_attention", "full_attention"]},
    "gpt2": {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 128, "n_positions": 256},
    "gpt_neox": {"model_type": "gpt_neox", **_BASE, "rotary_pct": 0.25, "use_parallel_residual": True},
    "gpt_neox-serial": {"model_type": "gpt_neox", **_BASE, "use_parallel_residual": False},
    "falcon-mqa-parallel": {"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2,
                            "num_attention_heads": 4, "vocab_size": 128, "multi_query": True,
                            "parallel_attn": True, "bias": False, "alibi": False,
                            "new_decoder_architecture": False},
    "falcon-new-arch": {"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "num_kv_heads": 2, "vocab_size": 128,
                        "new_decoder_architecture": True, "parallel_attn": True, "bias": False, "alibi": False},
    "mixtral": {"model_type": "mixtral", **_BASE, "num_key_value_heads": 2, "num_local_experts": 4,
                "num_experts_per_tok": 2},
    "qwen3_moe": {"model_type": "qwen3_moe", **_BASE, "num_hidden_layers": 3, "num_key_value_heads": 2,
                  "head_dim": 16, "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                  "decoder_sparse_step": 1, "mlp_only_layers": [0]},
    "deepseek_v3": {"model_type": "deepseek_v3", **_BASE, "num_hidden_layers": 3, "num_key_value_heads": 4,
                    "moe_intermediate_size": 32, "first_k_dense_replace": 1, "n_routed_experts": 8,
                    "num_experts_per_tok": 2, "n_shared_experts": 1, "n_group": 2, "topk_group": 1,
                    "q_lora_rank": 32, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4,
                    "v_head_dim": 8},
    "deepseek_v3-no-qlora": {"model_type": "deepseek_v3", **_BASE, "num_hidden_layers": 2,
                             "num_key_value_heads": 4, "moe_intermediate_size": 32, "first_k_dense_replace": 1,
                             "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 2,
                             "n_group": 1, "topk_group": 1, "q_lora_rank": None, "kv_lora_rank": 16,
                             "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 12},
    "gpt_oss": {"model_type": "gpt_oss", **_BASE, "intermediate_size": 32, "num_key_value_heads": 2,
                "head_dim": 16, "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 8,
                "layer_types": ["sliding_attention", "full_attention"]},
}
