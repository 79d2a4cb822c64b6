"""ModelSpec: the normalised architecture of a decoder-only language model.

A ModelSpec holds what the cost model needs and nothing else: sizes, the attention kind of each
layer, the MLP or MoE block, norms, embeddings. Model families differ only in how their Hugging Face
config is read into this spec (`hf_config.py`); the graph builder (`cost/builder.py`, `cost/blocks/`)
knows no family by name.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..dtypes import canonical_dtype, kv_element_bytes
from .quantization import ROLES, QuantizationSpec


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


WeightLayout = Literal["out_in", "in_out"]
_LAYOUT_DOC = ("how the reference implementation (transformers) stores the projection matrices: 'out_in' "
               "W[N, K] as nn.Linear, 'in_out' W[K, N] as GPT-2's Conv1D and gpt-oss's experts (on some "
               "devices the other layout runs another, slower kernel: hardware matmul_rows_in_out)")


class AttentionSpec(_Frozen):
    """One layer's attention block.

    kind "standard" covers MHA (num_kv_heads == num_heads), GQA and MQA (num_kv_heads == 1).
    kind "mla" is DeepSeek's multi-head latent attention: the cache holds a latent of
    kv_lora_rank + qk_rope_head_dim values per token, shared by all heads.
    kind "linear" is a gated DeltaNet layer (Qwen3-Next): num_heads value heads of v_head_dim, num_kv_heads
    query/key heads of head_dim, a causal depthwise convolution of conv_kernel taps over q, k and v; no KV
    cache, but a recurrent state of fixed size per sequence (see recurrent_state_bytes).
    kind "mamba2" is a Mamba-2 (SSD) mixer: num_heads heads of head_dim (= v_head_dim) channels, num_kv_heads
    groups sharing B and C of ssm_state_size, a causal depthwise convolution of conv_kernel taps over x, B and C
    (conv_bias: with a bias), the selective scan in chunks of ssm_chunk_size; qkv_bias and o_bias are in_proj's
    and out_proj's biases. Its state is fixed-size too: the convolution's inputs and the [H, head_dim, N] SSM
    state.
    """

    kind: Literal["standard", "mla", "linear", "mamba2"] = "standard"
    num_heads: int = Field(gt=0)
    num_kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0, description="q and k dims per head (MLA: qk_nope + qk_rope)")
    v_head_dim: int = Field(gt=0)
    qkv_bias: bool = False
    o_bias: bool = False
    fused_qkv: bool = False
    qk_norm: bool = False
    qk_norm_weights: Literal["shared", "per_head", "none"] = Field(
        default="shared", description="QK norm weights: one [d] vector for all query heads and one for all key "
        "heads (Qwen3, Gemma 3), one per head, [H*d] and [kvh*d] (OLMo 2 and Cohere), or none (Llama 4's L2 norm)")
    output_gate: bool = Field(default=False, description="the output multiplied by sigmoid(gate), the gate a "
                              "second half of q_proj's output (Qwen3-Next's full attention)")
    conv_kernel: int = Field(default=0, ge=0, description="linear attention, Mamba-2: taps of the causal "
                             "convolution")
    conv_bias: bool = Field(default=False, description="Mamba-2: the convolution adds a bias per channel")
    ssm_state_size: int = Field(default=0, ge=0, description="Mamba-2: N, the state size of each group's B and C")
    ssm_chunk_size: int = Field(default=0, ge=0, description="Mamba-2: the chunk length of the prefill scan")
    chunked: bool = Field(default=False, description="sliding_window is a chunk size: each query attends to the "
                          "keys of its own aligned chunk (Llama 4's chunked local attention); the cache keeps "
                          "W - 1 tokens, as for a window")
    sliding_window: int | None = Field(default=None, gt=1)
    sinks: bool = False
    broadcast_kv: bool = Field(default=False, description="K and V reach SDPA with fewer heads than Q, to broadcast "
                               "(Falcon's multi-query attention, no enable_gqa): PyTorch's math kernel then runs "
                               "and copies them out to every head when the batch is above 1")
    logit_softcap: bool = Field(default=False, description="the scores capped as c * tanh(scores / c) before the "
                                "softmax (Gemma 2's attn_logit_softcapping)")
    rotary_dim: int = Field(default=0, ge=0, description="dims per head that rotary rotates (0: none)")
    weight_layout: WeightLayout = Field(default="out_in", description=_LAYOUT_DOC)
    q_lora_rank: int | None = None
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0

    @model_validator(mode="after")
    def _check(self) -> AttentionSpec:
        if self.num_heads % self.num_kv_heads:
            heads, kv_heads = {"linear": ("linear_num_value_heads", "linear_num_key_heads"),
                               "mamba2": ("mamba num_heads", "n_groups")}.get(
                                   self.kind, ("num_attention_heads", "num_key_value_heads"))
            raise ValueError(f"{heads}={self.num_heads} is not a multiple of {kv_heads}={self.num_kv_heads}")
        if self.rotary_dim % 2 or self.rotary_dim > self.head_dim:
            raise ValueError(f"head_dim={self.head_dim} with rotary_dim={self.rotary_dim}: rotary embeddings "
                             f"rotate pairs of dims, so rotary_dim must be even and at most head_dim")
        if self.chunked and self.sliding_window is None:
            raise ValueError("chunked attention needs its chunk size in sliding_window")
        if self.kind == "mla" and (self.kv_lora_rank <= 0 or self.qk_rope_head_dim <= 0):
            raise ValueError("MLA attention needs kv_lora_rank > 0 and qk_rope_head_dim > 0")
        if self.kind == "linear" and self.conv_kernel <= 0:
            raise ValueError("linear attention needs linear_conv_kernel_dim > 0")
        if self.kind == "mamba2" and min(self.conv_kernel, self.ssm_state_size, self.ssm_chunk_size) <= 0:
            raise ValueError(f"a Mamba-2 layer needs conv_kernel, ssm_state_size and chunk_size > 0 (got "
                             f"{self.conv_kernel}, {self.ssm_state_size}, {self.ssm_chunk_size})")
        return self

    def recurrent_state_bytes(self, batch_size: np.ndarray | int, kv_bytes: float, tensor_parallel: int = 1
                              ) -> np.ndarray | float:
        """A linear-attention or Mamba-2 layer's state per batch, as transformers' LinearAttentionLayer holds it: the
        convolution's last conv_kernel inputs [B, 2*Hk*dk + Hv*dv, K] at the cache dtype, and the recurrent
        state [B, Hv, dk, dv] in float32 (the torch gated delta rule computes and returns it in float32).
        With tensor_parallel=t, one GPU's heads (Hv/t, and Hk/t or one replicated head when Hk < t, as for KV
        heads). A Mamba-2 layer's (the same LinearAttentionLayer): the convolution's last conv_kernel inputs
        [B, H*p + 2*G*N, K] at the cache dtype and the SSM state [B, H, p, N] in float32 (the torch chunk scan
        returns it in float32; vLLM's mamba_ssm_cache_dtype "float32", as Nemotron-H states it); H/t heads and
        G/t groups (one replicated group when G < t) per GPU. 0 for attention layers."""
        if self.kind not in ("linear", "mamba2"):
            return 0.0
        hv, hk = self.num_heads / tensor_parallel, max(self.num_kv_heads // tensor_parallel, 1)
        if self.kind == "mamba2":  # x [H*p], B and C [G*N] convolved; state [H, p, N]
            conv_channels = hv * self.head_dim + 2 * hk * self.ssm_state_size
            recurrent = hv * self.head_dim * self.ssm_state_size
        else:
            conv_channels = 2 * hk * self.head_dim + hv * self.v_head_dim
            recurrent = hv * self.head_dim * self.v_head_dim
        return np.asarray(batch_size) * (conv_channels * self.conv_kernel * kv_bytes + recurrent * 4.0)

    @property
    def qk_norm_params(self) -> int:
        """Weights of the Q and K norms (without a LayerNorm's biases): [d] + [d], or [H*d] + [kvh*d]."""
        if not self.qk_norm or self.qk_norm_weights == "none":
            return 0
        if self.qk_norm_weights == "per_head":
            return (self.num_heads + self.num_kv_heads) * self.head_dim
        return 2 * self.head_dim

    @property
    def kv_cache_values_per_token(self) -> int:
        """Values cached per token per layer: K and V of every KV head, or MLA's latent and rope key."""
        if self.kind == "mla":
            return self.kv_lora_rank + self.qk_rope_head_dim  # latent [r] + shared rope key [d_rope]
        if self.kind in ("linear", "mamba2"):
            return 0  # a state of fixed size instead (recurrent_state_bytes)
        return self.num_kv_heads * (self.head_dim + self.v_head_dim)  # K [kvh, d] + V [kvh, dv]

    def cached_tokens(self, seq_len: np.ndarray | int) -> np.ndarray | int:
        """Tokens a transformers cache holds after `seq_len` tokens: a sliding window keeps W - 1."""
        if self.sliding_window is None:
            return seq_len
        return np.minimum(seq_len, self.sliding_window - 1)


class MLPSpec(_Frozen):
    """A feed-forward block: gated (SwiGLU/GeGLU: act(x W_gate) * x W_up) or plain (act(x W_in))."""

    gated: bool
    intermediate_size: int = Field(gt=0)
    bias: bool = False
    fused_gate_up: bool = False
    activation: str = "silu"
    weight_layout: WeightLayout = Field(default="out_in", description=_LAYOUT_DOC)


class MoESpec(_Frozen):
    """A mixture-of-experts block: a router, `num_experts` experts of which `top_k` run per token,
    and optional always-on shared experts (DeepSeek)."""

    num_experts: int = Field(gt=0)
    top_k: int = Field(gt=0)
    expert: MLPSpec
    shared: MLPSpec | None = None
    router_bias: bool = False
    router_extra_params: int = Field(default=0, ge=0, description="e.g. DeepSeek's score correction bias")
    shared_gate: bool = Field(default=False, description="the shared expert's output scaled by sigmoid(x W[h, 1]) "
                              "(Qwen2-MoE, Qwen3-Next)")
    routing: Literal["balanced", "power_law_1.01", "power_law_1.2"] = Field(
        default="power_law_1.2", description="the tokens' spread over the experts that the measured MoE tables are "
        "read at: expert loads drawn from a power law of that exponent (aiconfigurator's default: 1.01 for "
        "DeepSeek-style routers, 1.2 for the others), or balanced (every expert loaded evenly, as with EPLB)")

    @model_validator(mode="after")
    def _check(self) -> MoESpec:
        if self.top_k > self.num_experts:
            raise ValueError(f"num_experts_per_tok={self.top_k} exceeds the number of experts {self.num_experts}")
        return self


# MoESpec.routing of DeepSeek-style sigmoid routers beside a shared expert (DeepSeek-V2/V3, Kimi K2, Llama 4,
# Nemotron-H): a power law of exponent 1.01, as aiconfigurator's models of those families read the tables
# (ai-dynamo/aiconfigurator aic-core sdk/models deepseek.py, hybrid_moe.py, nemotron_h.py: _power_law_alpha = 1.01);
# every other MoE keeps the default, 1.2 (its generic MoE family, sdk/models/moe.py, and Qwen3.5's)
DEEPSEEK_STYLE_ROUTING = "power_law_1.01"


class LayerSpec(_Frozen):
    """One decoder layer. Norm placement: pre-attention (absent in OLMo 2, which normalises only the
    branch outputs), optional pre-MLP (absent when a parallel block shares one norm), optional
    post-attention and post-MLP sandwich norms (Gemma 2/3, GLM-4, OLMo 2).

    A layer may hold one branch only (Mamba-2 and Nemotron-H blocks: one norm, one mixer, one residual add):
    mlp None is a mixer alone (attention or Mamba-2), attention None an MLP or MoE alone behind input_norm."""

    attention: AttentionSpec | None
    mlp: MLPSpec | MoESpec | None
    parallel: bool = False
    input_norm: bool = True
    pre_mlp_norm: bool = True
    post_attn_norm: bool = False
    post_mlp_norm: bool = False
    unquantized: tuple[str, ...] = Field(default=(), description="module roles this layer keeps at the model's "
                                         "dtype where the quantization_config converts them in other layers")
    residual_scale: bool = Field(default=False, description="each branch output multiplied by a constant before "
                                 "its residual add (Granite's residual_multiplier)")

    @model_validator(mode="after")
    def _check(self) -> LayerSpec:
        if self.attention is None and self.mlp is None:
            raise ValueError("a layer needs an attention (or Mamba-2) mixer, an MLP, or both")
        if (self.attention is None or self.mlp is None) and (self.parallel or self.pre_mlp_norm):
            raise ValueError("a layer with one branch has neither a parallel block nor a pre-MLP norm")
        return self

    @property
    def norms(self) -> int:
        return int(self.input_norm) + int(self.pre_mlp_norm) + int(self.post_attn_norm) + int(self.post_mlp_norm)

    @property
    def is_moe(self) -> bool:
        return isinstance(self.mlp, MoESpec)


class LayerGroup(_Frozen):
    """Layers of identical structure: `tag` names them in op names when a model has several groups."""

    tag: str
    count: int = Field(gt=0)
    layer: LayerSpec


class ModelSpec(_Frozen):
    """The normalised architecture. Build one with `llmsim.load_model` (a name, path, dict or PretrainedConfig).

    A plain spec: what is built from it (ops, parameter counts) lives in `llmsim.cost`."""

    name: str
    model_type: str
    vocab_size: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    max_position_embeddings: int = Field(gt=0)
    layer_groups: tuple[LayerGroup, ...]
    layer_pattern: tuple[int, ...] = Field(description="group index of each layer, in order")
    position_embedding: Literal["rotary", "learned", "none"] = "rotary"
    tie_word_embeddings: bool = False
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    norm_bias: bool | None = Field(default=None, description="the norms add a bias (None: LayerNorm does, RMSNorm "
                                   "does not; Cohere's LayerNorm has none)")
    embedding_scale: bool = Field(default=False, description="the token embeddings multiplied by a constant "
                                  "(Gemma: sqrt(h); Granite: embedding_multiplier)")
    logit_scale: bool = Field(default=False, description="the logits multiplied by a constant (Cohere: "
                              "logit_scale; Granite: 1 / logits_scaling)")
    logit_softcap: bool = Field(default=False, description="the logits capped as c * tanh(logits / c) (Gemma 2's "
                                "final_logit_softcapping)")
    lm_head_bias: bool = False
    mtp_layers: int = Field(default=0, ge=0, description="the multi-token-prediction modules the checkpoint ships "
                            "(num_nextn_predict_layers, mtp_num_hidden_layers, MiniMax's num_mtp_modules): not "
                            "costed in a forward pass, what serve()'s speculative method 'mtp' runs")
    dtype: str = "bfloat16"
    dtype_source: str = Field(default="", description="where dtype came from, or what was assumed and why")
    quantization: QuantizationSpec | None = Field(default=None, description="the weight formats of a quantized "
                                                  "checkpoint per module role (llmsim.models.quantization)")

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        canonical_dtype(self.dtype, "torch_dtype")
        for group in self.layer_groups:
            for role in group.layer.unquantized:
                if role not in ROLES:
                    raise ValueError(f"unquantized role {role!r}; allowed: {', '.join(ROLES)}")
        counts = [self.layer_pattern.count(i) for i in range(len(self.layer_groups))]
        if counts != [g.count for g in self.layer_groups]:
            raise ValueError("layer_pattern does not match the layer group counts")
        return self

    # ---- sizes ----------------------------------------------------------------------------------
    @property
    def num_layers(self) -> int:
        return len(self.layer_pattern)

    @property
    def norm_params(self) -> int:
        """Parameters of one norm over the hidden size: weight, plus bias for LayerNorm (unless norm_bias=False)."""
        return self.hidden_size * (2 if self.has_norm_bias else 1)

    @property
    def has_norm_bias(self) -> bool:
        return self.norm == "layernorm" if self.norm_bias is None else self.norm_bias

    @property
    def attention_kinds(self) -> str:
        """A short description such as 'GQA 32/8, sliding 4096' for tables."""
        counts: dict[AttentionSpec, int] = {}
        for group in self.layer_groups:
            if group.layer.attention is not None:
                counts[group.layer.attention] = counts.get(group.layer.attention, 0) + group.count
        parts = []
        for attn, count in counts.items():
            if attn.kind == "mla":
                kind = f"MLA r={attn.kv_lora_rank}"
            elif attn.kind == "linear":
                kind = f"gated DeltaNet {attn.num_kv_heads}/{attn.num_heads}"
            elif attn.kind == "mamba2":
                kind = f"Mamba-2 {attn.num_heads}x{attn.head_dim}, state {attn.ssm_state_size}"
            elif attn.num_kv_heads == attn.num_heads:
                kind = f"MHA {attn.num_heads}"
            elif attn.num_kv_heads == 1:
                kind = f"MQA {attn.num_heads}/1"
            else:
                kind = f"GQA {attn.num_heads}/{attn.num_kv_heads}"
            if attn.sliding_window:
                kind += f" {'chunk' if attn.chunked else 'window'} {attn.sliding_window}"
            parts.append(f"{count}x {kind}" if len(counts) > 1 else kind)
        return "; ".join(dict.fromkeys(parts))

    @property
    def weight_roles(self) -> tuple[str, ...]:
        """The module roles with weight matrices in this model (llmsim.models.quantization.ROLES)."""
        layers = [g.layer for g in self.layer_groups]
        present = {"attention"} if any(layer.attention is not None for layer in layers) else set()
        present |= {"mla_projections"} if any(layer.attention is not None and layer.attention.kind == "mla"
                                               for layer in layers) else set()
        present |= {"mlp"} if any(isinstance(layer.mlp, MLPSpec) for layer in layers) else set()
        present |= {"experts", "router"} if any(layer.is_moe for layer in layers) else set()
        present |= {"shared_experts"} if any(isinstance(layer.mlp, MoESpec) and layer.mlp.shared is not None
                                             for layer in layers) else set()
        present |= set() if self.tie_word_embeddings else {"lm_head"}
        return tuple(r for r in ROLES if r in present)

    def weights_source(self) -> str:
        """One line: how the weights are stored and where that comes from."""
        if self.quantization is None:
            return f"{self.dtype} ({self.dtype_source or 'the spec'})"
        return self.quantization.summary(self.dtype, self.weight_roles)

    # ---- KV cache -------------------------------------------------------------------------------
    def kv_cache_bytes(
        self,
        batch_size: int | np.ndarray = 1,
        seq_len: int | np.ndarray = 1,
        kv_dtype: str | None = None,
        tensor_parallel: int = 1,
    ) -> float | np.ndarray:
        """Bytes of the KV cache holding `seq_len` tokens of each of `batch_size` sequences.

        Sums over layers: B * cached_tokens(S) * values_per_token * bytes. Sliding-window layers hold
        W - 1 tokens once full (as transformers' DynamicSlidingWindowLayer does); MLA layers hold the
        compressed latent and the rope key, not per-head K and V; linear-attention layers hold their
        recurrent state (recurrent_state_bytes), whatever the length. With tensor_parallel=t, the bytes on
        one GPU: kvh/t KV heads (one replicated head when kvh < t); MLA's latent is replicated.
        """
        kv_bytes = kv_element_bytes(canonical_dtype(kv_dtype or self.dtype, "kv_dtype"))
        total: float | np.ndarray = self.recurrent_state_bytes(batch_size, kv_dtype, tensor_parallel)
        for count, attn, values in self.kv_cache_groups(tensor_parallel):
            # [B, tokens, values_per_token] per layer
            total = total + count * np.asarray(batch_size) * attn.cached_tokens(
                np.asarray(seq_len)
            ) * values * kv_bytes
        return total if isinstance(total, np.ndarray) and total.ndim else float(total)

    def kv_cache_groups(self, tensor_parallel: int = 1) -> list[tuple[int, AttentionSpec, int]]:
        """(layers, attention, cached values per token on one GPU) of each layer group with attention, in
        order: kv_cache_bytes' terms."""
        groups = []
        for group in self.layer_groups:
            attn = group.layer.attention
            if attn is None:
                continue
            values = attn.kv_cache_values_per_token
            if attn.kind == "standard" and tensor_parallel > 1:
                values = max(attn.num_kv_heads // tensor_parallel, 1) * (attn.head_dim + attn.v_head_dim)
            groups.append((group.count, attn, values))
        return groups

    def recurrent_state_bytes(
        self, batch_size: int | np.ndarray = 1, kv_dtype: str | None = None, tensor_parallel: int = 1
    ) -> float | np.ndarray:
        """The part of kv_cache_bytes that does not grow with the tokens: the linear-attention layers' states
        (a fixed amount per sequence, AttentionSpec.recurrent_state_bytes); 0 for a model without them. A
        per-token KV size (e.g. for paged blocks) is kv_cache_bytes(1, 1) minus recurrent_state_bytes(1)."""
        kv_bytes = kv_element_bytes(canonical_dtype(kv_dtype or self.dtype, "kv_dtype"))
        total: float | np.ndarray = 0.0
        for group in self.layer_groups:
            if group.layer.attention is not None:
                total = total + group.count * group.layer.attention.recurrent_state_bytes(batch_size, kv_bytes,
                                                                                           tensor_parallel)
        return total if isinstance(total, np.ndarray) and total.ndim else float(total)
