"""ModelSpec x phase -> the list of Ops of one forward pass.

Prefill runs `seq_len` new tokens per sequence with an empty cache. Decode runs one new token per
sequence with the cache already holding `kv_len` tokens: the new token's K and V are appended and it
attends to kv_len + 1 keys (min(kv_len + 1, W) on a sliding-window layer, whose cache keeps W - 1).

Symbols in formulas: B batch, S new tokens per sequence, L cached tokens, T = B*S tokens, h hidden,
H heads, kvh KV heads, d and dv head dims, I intermediate size, E experts, k experts per token,
V vocabulary, r MLA latent rank, dr MLA rope dim, dn MLA no-rope dim, qr MLA query rank, W window;
wb, ab, kvb bytes per weight, activation and cache element.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields
from functools import lru_cache
from typing import Any

import numpy as np

from ..dtypes import canonical_dtype, dtype_bytes, matmul_precision, weight_bytes_per_param
from ..errors import OptionError, check_choice
from ..models.loading import load_model
from ..models.spec import AttentionSpec, LayerGroup, MLPSpec, ModelSpec, MoESpec
from .ops import Op, formula
from .symbolic import Expr, FormulaProgram, NotReplayableError, smin
from .workload import PHASES, CostOptions, check_count

_UNFUSED = ("none", "eager")  # fusion policies without the fused residual add + norm
_VECTOR_FLOPS_PER_ELEMENT = {"silu": 4, "swish": 4, "gelu": 8, "gelu_new": 8, "gelu_pytorch_tanh": 8,
                             "gelu_fast": 8, "relu": 1, "swiglu_clamped": 6}


def build_ops(
    model: Any,
    phase: str,
    batch_size: Any = 1,
    seq_len: Any = None,
    kv_len: Any = None,
    options: CostOptions | None = None,
    **option_values: Any,
) -> list[Op]:
    """The ops of one forward pass of `phase` ("prefill" or "decode").

    `model`: a ModelSpec or anything `load_model` takes (a shipped name, a path, a dict, a config).
    Prefill needs `seq_len` (tokens per sequence); decode needs `kv_len` (tokens already cached).
    Options (attention, logits, mla, fusion, weight_dtype, activation_dtype, kv_dtype) are described
    in `CostOptions`; pass them as keywords or as a CostOptions.
    """
    model = load_model(model)
    check_choice("phase", phase, PHASES)
    if options is None:
        options = CostOptions.make(**option_values)
    elif option_values:
        options = options.model_copy(update=CostOptions.make(**option_values).model_dump(exclude_unset=True))
    B = check_count("batch_size", batch_size, 1)
    if phase == "prefill":
        if seq_len is None:
            raise OptionError("phase='prefill' needs seq_len (tokens per sequence)")
        S, L = check_count("seq_len", seq_len, 1), 0
        _check_context(model, "seq_len", S)
    else:
        if kv_len is None:
            raise OptionError("phase='decode' needs kv_len (tokens already in the cache)")
        S, L = 1, check_count("kv_len", kv_len, 0)
        _check_context(model, "kv_len + 1", np.asarray(L) + 1)
    return build_ops_unchecked(model, phase, B, S, L, options)


def _check_context(model: ModelSpec, field: str, tokens: Any) -> None:
    longest = int(np.max(tokens))
    if longest > model.max_position_embeddings:
        raise OptionError(
            f"{field}={longest} exceeds the model's context of {model.max_position_embeddings} tokens "
            f"(max_position_embeddings)"
        )


class _GraphBuilder:
    """Builds the op list; one method per block, shared by every model family."""

    def __init__(self, model: ModelSpec, phase: str, B: Any, S: Any, L: Any, options: CostOptions) -> None:
        self.model, self.phase, self.options = model, phase, options
        weight_dtype, act_dtype, kv_dtype = options.resolved_dtypes(model.dtype)
        self.precision = matmul_precision(act_dtype, weight_dtype)
        self.B = Expr.sym("B", B)
        self.S = Expr.sym("S", S)
        self.L = Expr.sym("L", L)
        self.T = self.B * self.S
        self.h = Expr.sym("h", model.hidden_size)
        self.wb = Expr.sym("wb", weight_bytes_per_param(weight_dtype))
        self.ab = Expr.sym("ab", dtype_bytes(act_dtype))
        self.kvb = Expr.sym("kvb", dtype_bytes(kv_dtype))
        self.eb = Expr.sym("eb", dtype_bytes(canonical_dtype(model.dtype)))  # embedding/norm storage
        self.fusion = options.fusion
        self.tp_degree, self.ep_degree = options.tensor_parallel, options.expert_parallel
        self.tp = Expr.sym("tp", self.tp_degree)
        self._check_split(model)
        self.ops: list[Op] = []
        # ops whose formula computes a value outside its Exprs (experts touched): index in self.ops ->
        # (formula name, op name, count, keyword arguments), so a graph template can call it again
        self.calls: dict[int, tuple[str, str, int, dict[str, Any]]] = {}

    # ---- tensor parallelism --------------------------------------------------------------------------
    def _check_split(self, model: ModelSpec) -> None:
        """Refuse a tensor-parallel degree the model cannot be split by, naming the field."""
        t = self.tp_degree
        if t == 1:
            return
        checks: list[tuple[str, int]] = [("vocab_size", model.vocab_size)]
        for group in model.layer_groups:
            attn, mlp = group.layer.attention, group.layer.mlp
            checks.append(("num_attention_heads", attn.num_heads))
            if attn.kind == "standard" and attn.num_kv_heads % t and t % attn.num_kv_heads:
                raise OptionError(
                    f"tensor_parallel={t}: num_key_value_heads={attn.num_kv_heads} is neither a multiple nor a "
                    f"divisor of it"
                )
            if isinstance(mlp, MoESpec):
                if self.ep_degree > 1:
                    checks.append(("number of experts", mlp.num_experts))
                else:
                    checks.append(("expert intermediate_size", mlp.expert.intermediate_size))
                if mlp.shared is not None:
                    checks.append(("shared expert intermediate_size", mlp.shared.intermediate_size))
            else:
                checks.append(("intermediate_size", mlp.intermediate_size))
        for field, value in checks:
            if value % t:
                raise OptionError(f"tensor_parallel={t} does not divide {field}={value}")

    def heads(self, attn: AttentionSpec) -> tuple[Expr, Expr]:
        """(query heads, KV heads) on one GPU: H/tp, and kvh/tp or one replicated KV head."""
        H, kvh = Expr.sym("H", attn.num_heads), Expr.sym("kvh", attn.num_kv_heads)
        if self.tp_degree == 1:
            return H, kvh
        local_kv = kvh / self.tp if attn.num_kv_heads >= self.tp_degree else Expr.sym("kvh_replicated", 1)
        return H / self.tp, local_kv

    def all_reduce(self, name: str, count: int) -> None:
        """Sum the [T, h] partial outputs of the tensor-parallel GPUs."""
        if self.tp_degree > 1:
            self.add(formula("collective")(name, count, kind="all_reduce", message_bytes=self.T * self.h * self.ab,
                                           group=self.tp_degree))

    # ---- helpers ----------------------------------------------------------------------------------
    def add(self, op: Op) -> None:
        if self.fusion == "full" and op.kind in ("norm", "elementwise"):
            # fused into a neighbouring matmul's prologue/epilogue: no traffic, no launch of its own
            zero = Expr.const(0)
            formulas = dict(op.formulas, bytes_read=zero, bytes_written=zero)
            op = op.scaled(formulas=formulas, launches=0)
        self.ops.append(op)

    def linear(self, name: str, count: int, T: Expr, K: Expr, N: Expr, bias: bool = False, **kw: Any) -> None:
        self.add(formula("linear")(name, count, T=T, K=K, N=N, wb=self.wb, ab=self.ab, bias=bias,
                                   precision=self.precision, **kw))

    def norm(self, name: str, count: int, n: Expr, norms: int = 1, params_per_norm: int | None = None) -> None:
        params = params_per_norm if params_per_norm is not None else self.model.norm_params
        if self.fusion == "eager" and self.model.norm != "layernorm":  # LayerNorm is one aten kernel
            self.add(formula("eager_rmsnorm")(name, count, T=self.T, n=n, ab=self.ab, params_per_norm=params,
                                              norms=norms))
            return
        self.add(formula("norm")(name, count, T=self.T, n=n, ab=self.ab, kind=self.model.norm,
                                 params_per_norm=params, norms=norms))

    def expert_linear(self, name: str, count: int, **kw: Any) -> None:
        """An experts' matmul (formula "expert_linear"), its call recorded in self.calls."""
        self.calls[len(self.ops)] = ("expert_linear", name, count, kw)
        self.add(formula("expert_linear")(name, count, **kw))

    def elementwise(self, name: str, count: int, elements: Expr, inputs: float, outputs: float, flops: int,
                    **kw: Any) -> None:
        self.add(formula("elementwise")(name, count, elements=elements, inputs=inputs, outputs=outputs,
                                        flops_per_element=flops, ab=self.ab, **kw))

    # ---- the forward pass ---------------------------------------------------------------------------
    def build(self) -> list[Op]:
        model = self.model
        self.add(formula("embedding")("embed_tokens", 1, T=self.T, h=self.h, rows=model.vocab_size // self.tp_degree,
                                      ab=self.eb))
        self.all_reduce("embed_tokens.all_reduce", 1)  # vocabulary-parallel embedding
        if model.position_embedding == "learned":
            self.add(formula("embedding")("embed_positions", 1, T=self.T, h=self.h,
                                          rows=model.max_position_embeddings, ab=self.eb, add=True))
        for group in model.layer_groups:
            prefix = f"layers.{group.tag}" if group.tag and len(model.layer_groups) > 1 else "layers"
            self.layer(prefix, group)
        if self.fusion not in _UNFUSED and not any(g.layer.parallel for g in model.layer_groups):
            self._add_norm("final_add_norm", 1)  # the last layer's residual add, fused
        else:
            self.norm("final_norm", 1, self.h)
        self.lm_head()
        return self.ops

    def lm_head(self) -> None:
        model = self.model
        tokens = self.T if self.options.logits == "all" or self.phase == "decode" else self.B
        V = Expr.sym("V", model.vocab_size)
        V_local = V / self.tp if self.tp_degree > 1 else V
        tied = model.tie_word_embeddings
        self.add(formula("linear")(
            "lm_head", 1, T=tokens, K=self.h, N=V_local, wb=self.eb if tied else self.wb, ab=self.ab,
            owns_weight=not tied, precision=self.precision,
        ))
        if self.tp_degree > 1:  # gather the vocabulary slices of the logits
            self.add(formula("collective")("lm_head.all_gather", 1, kind="all_gather",
                                           message_bytes=tokens * V * self.ab, group=self.tp_degree))

    def layer(self, prefix: str, group: LayerGroup) -> None:
        layer, n = group.layer, group.count
        T, h = self.T, self.h
        # With fusion, each residual add runs inside the next norm's kernel (fused add + norm), as
        # serving engines do; parallel blocks (attention and MLP both read x) keep their adds.
        fuse_add = self.fusion not in _UNFUSED and not layer.parallel
        if fuse_add:
            self._add_norm(f"{prefix}.input_add_norm", n)  # x += previous mlp out; norm(x)
        else:
            self.norm(f"{prefix}.input_norm", n, h)
        self.attention(f"{prefix}.attn", n, layer.attention)
        if layer.post_attn_norm:
            self.norm(f"{prefix}.post_attn_norm", n, h)
        if layer.parallel:
            if layer.pre_mlp_norm:
                self.norm(f"{prefix}.pre_mlp_norm", n, h)
        elif fuse_add:
            self._add_norm(f"{prefix}.pre_mlp_add_norm", n)  # x += attn out; norm(x)
        else:
            self.elementwise(f"{prefix}.attn_residual_add", n, T * h, 2, 1, 1)
            self.norm(f"{prefix}.pre_mlp_norm", n, h)
        if isinstance(layer.mlp, MoESpec):
            self.moe(f"{prefix}.mlp", n, layer.mlp)
        else:
            self.mlp(f"{prefix}.mlp", n, layer.mlp)
        if layer.post_mlp_norm:
            self.norm(f"{prefix}.post_mlp_norm", n, h)
        if layer.parallel:
            self.elementwise(f"{prefix}.residual_add", 2 * n, T * h, 2, 1, 1)  # x + attn + mlp: two adds
        elif not fuse_add:
            self.elementwise(f"{prefix}.mlp_residual_add", n, T * h, 2, 1, 1)

    def _add_norm(self, name: str, count: int) -> None:
        """x = x + y; out = norm(x): reads x and y, writes x and out, one kernel."""
        per_element = 8 if self.model.norm == "layernorm" else 5
        self.add(formula("elementwise")(name, count, elements=self.T * self.h, inputs=2, outputs=2,
                                        flops_per_element=per_element, ab=self.ab, kind="norm",
                                        params=self.model.norm_params))

    # ---- attention --------------------------------------------------------------------------------
    def _keys(self, attn: AttentionSpec) -> Expr:
        """Keys each query attends to: S (prefill, full scores) or L + 1 (decode), capped by the window."""
        if self.phase == "prefill":
            return self.S
        keys = self.L + 1
        if attn.sliding_window is not None:
            keys = smin(keys, Expr.sym("W", attn.sliding_window))
        return keys

    def _decode_window(self, attn: AttentionSpec) -> int | None:
        """The sliding window of a decode step's attention (None in prefill or without one)."""
        return attn.sliding_window if self.phase == "decode" else None

    def _cached(self, attn: AttentionSpec) -> Expr | None:
        """Tokens a concatenating cache copies each step (None when the cache is written in place)."""
        if self.options.kv_cache != "concat" or self.phase == "prefill":
            return None
        return self._keys(attn) - 1  # L, or W - 1 once a window is full

    def _pairs(self, attn: AttentionSpec) -> Expr:
        """(query, key) pairs per head a fused kernel computes: causal triangle, clipped by the window.

        approximation: exact triangle, ignoring the kernel's tile granularity on the diagonal.
        """
        if self.phase == "decode":
            return self._keys(attn)
        S = self.S
        if attn.sliding_window is None:
            return S * (S + 1) / 2  # sum_{i=1..S} i
        m = smin(S, Expr.sym("W", attn.sliding_window))
        return m * (m + 1) / 2 + (S - m) * Expr.sym("W", attn.sliding_window)

    def attention(self, prefix: str, n: int, attn: AttentionSpec) -> None:
        if attn.kind == "mla":
            self.mla(prefix, n, attn)
            return
        h, T = self.h, self.T
        H, kvh = self.heads(attn)
        d, dv = Expr.sym("d", attn.head_dim), Expr.sym("dv", attn.v_head_dim)
        layout = attn.weight_layout
        if attn.fused_qkv:
            self.linear(f"{prefix}.qkv_proj", n, T, h, H * d + kvh * (d + dv), bias=attn.qkv_bias, weight_layout=layout)
        else:
            self.linear(f"{prefix}.q_proj", n, T, h, H * d, bias=attn.qkv_bias, weight_layout=layout)
            self.linear(f"{prefix}.k_proj", n, T, h, kvh * d, bias=attn.qkv_bias, weight_layout=layout)
            self.linear(f"{prefix}.v_proj", n, T, h, kvh * dv, bias=attn.qkv_bias, weight_layout=layout)
        if attn.qk_norm:
            self.norm(f"{prefix}.qk_norm", n, (H + kvh) * d, params_per_norm=2 * attn.head_dim)
        if attn.rotary_dim and self.fusion == "eager":
            # x * cos + rotate_half(x) * sin per PyTorch op, for q and for k: neg (of half) a/2 read, a/2
            # written; cat a, a; x * cos a, a; * sin a, a; add 2a, a: 5.5a read, 4.5a written, 5 kernels each
            self.elementwise(f"{prefix}.rotary", n, T * (H + kvh) * d, 5.5, 4.5, 3, launches=10)
        elif attn.rotary_dim:
            self.elementwise(f"{prefix}.rotary", n, T * (H + kvh) * d, 1, 1, 3)
        self.add(formula("kv_append")(f"{prefix}.kv_append", n, B=self.B, Snew=self.S,
                                      values=kvh * (d + dv), kvb=self.kvb, ab=self.ab, cached=self._cached(attn),
                                      kv_window=self._decode_window(attn)))
        self.core_attention(prefix, n, attn, H=H, kvh=kvh, d=d, dv=dv, kv_values=d + dv,
                            params=attn.num_heads // self.tp_degree if attn.sinks else 0)
        self.linear(f"{prefix}.o_proj", n, T, H * dv, h, bias=attn.o_bias, weight_layout=layout)
        self.all_reduce(f"{prefix}.all_reduce", n)

    def core_attention(self, prefix: str, n: int, attn: AttentionSpec, *, H: Expr, kvh: Expr, d: Expr, dv: Expr,
                       kv_values: Expr, params: int = 0) -> None:
        """softmax(Q K^T) V: three unfused kernels (math) or one fused kernel (flash)."""
        keys = self._keys(attn)
        window = attn.sliding_window if self.phase == "decode" else None
        common = dict(B=self.B, H=H, Sq=self.S, Skv=keys)
        if self.options.attention == "flash":
            self.add(formula("flash_attention")(
                f"{prefix}.flash", n, **common, pairs=self._pairs(attn), d=d, dv=dv, kvh=kvh, ab=self.ab,
                kvb=self.kvb, kv_values=kv_values, params=params, precision=self.precision, kv_window=window,
            ))
            return
        if self.options.attention == "sdpa_math":
            self._sdpa_math(prefix, n, common, H=H, kvh=kvh, d=d, dv=dv, keys=keys, window=window)
            return
        eager = self.fusion == "eager"
        if eager and kvh.value < H.value:  # transformers' repeat_kv: K and V copied out to every head
            self.add(formula("repeat_kv")(f"{prefix}.repeat_kv", n, B=self.B, H=H, kvh=kvh, Skv=keys,
                                          kv_values=kv_values, kvb=self.kvb, kv_window=window))
        self.add(formula("attention_scores")(f"{prefix}.scores", n, **common, d=d, kvh=kvh, ab=self.ab,
                                             kvb=self.kvb, precision=self.precision, kv_window=window))
        self.add(formula("softmax")(f"{prefix}.softmax", n, **common, ab=self.ab, params=params, kv_window=window,
                                    eager=eager))
        self.add(formula("attention_context")(f"{prefix}.context", n, **common, dv=dv, kvh=kvh, ab=self.ab,
                                              kvb=self.kvb, precision=self.precision, kv_window=window))

    def _sdpa_math(self, prefix: str, n: int, common: dict[str, Expr], *, H: Expr, kvh: Expr, d: Expr, dv: Expr,
                   keys: Expr, window: int | None) -> None:
        """PyTorch's SDPA math kernel (torch's fallback when no fused kernel takes the shapes), one kernel
        per op as profiled on torch 2.13: 16-bit Q, K, V cast to float32; Q and K^T each scaled by
        sqrt(scale); both matmuls in float32; mask, softmax and the all-masked-row guard on float32
        scores (sdpa_softmax); the output cast back. The causal mask is added in prefill only (a decode
        step's single query sees every cached key)."""
        B, S, ab, kvb = self.B, self.S, self.ab, self.kvb
        q_elements, k_elements, v_elements = B * H * S * d, B * kvh * keys * d, B * kvh * keys * dv
        f32 = Expr.const(4.0)  # float32 bytes per element
        if float(ab.value) != 4.0 or float(kvb.value) != 4.0:  # .to(float32) of Q (a bytes), K and V (kv bytes)
            self.add(formula("cast")(f"{prefix}.sdpa_upcast", n, bytes_read=q_elements * ab + (k_elements + v_elements)
                                     * kvb, bytes_written=(q_elements + k_elements + v_elements) * f32, launches=3,
                                     kv_window=window))
        self.add(formula("elementwise")(f"{prefix}.sdpa_scale", n, elements=q_elements + k_elements, inputs=1,
                                        outputs=1, flops_per_element=1, ab=f32, kind="attention", launches=2,
                                        kv_window=window))
        self.add(formula("attention_scores")(f"{prefix}.scores", n, **common, d=d, kvh=kvh, ab=f32, kvb=f32,
                                             precision="fp32", kv_window=window))
        self.add(formula("sdpa_softmax")(f"{prefix}.softmax", n, **common, ab=ab, masked=self.phase == "prefill",
                                         kv_window=window))
        self.add(formula("attention_context")(f"{prefix}.context", n, **common, dv=dv, kvh=kvh, ab=f32, kvb=f32,
                                              precision="fp32", kv_window=window))
        if float(ab.value) != 4.0:  # the float32 output cast back
            self.add(formula("cast")(f"{prefix}.sdpa_downcast", n, bytes_read=B * H * S * dv * f32,
                                     bytes_written=B * H * S * dv * ab))

    def mla(self, prefix: str, n: int, attn: AttentionSpec) -> None:
        """Multi-head latent attention (DeepSeek V2/V3)."""
        h, T, B = self.h, self.T, self.B
        H, _ = self.heads(attn)
        dn, dr = Expr.sym("dn", attn.qk_nope_head_dim), Expr.sym("dr", attn.qk_rope_head_dim)
        dv, r = Expr.sym("dv", attn.v_head_dim), Expr.sym("r", attn.kv_lora_rank)
        if attn.q_lora_rank:
            qr = Expr.sym("qr", attn.q_lora_rank)
            self.linear(f"{prefix}.q_a_proj", n, T, h, qr, bias=attn.qkv_bias)
            self.norm(f"{prefix}.q_a_norm", n, qr, params_per_norm=attn.q_lora_rank)
            self.linear(f"{prefix}.q_b_proj", n, T, qr, H * (dn + dr))
        else:
            self.linear(f"{prefix}.q_proj", n, T, h, H * (dn + dr))
        self.linear(f"{prefix}.kv_a_proj", n, T, h, r + dr, bias=attn.qkv_bias)
        self.norm(f"{prefix}.kv_a_norm", n, r, params_per_norm=attn.kv_lora_rank)
        self.elementwise(f"{prefix}.rotary", n, T * (H + 1) * dr, 1, 1, 3)
        one = Expr.sym("kvh", 1)
        self.add(formula("kv_append")(f"{prefix}.kv_append", n, B=B, Snew=self.S, values=r + dr,
                                      kvb=self.kvb, ab=self.ab, cached=self._cached(attn),
                                      kv_window=self._decode_window(attn)))
        if self.phase == "decode" and self.options.mla == "absorb":
            # q_nope [T, H, dn] @ W_UK [H, dn, r] -> q_latent [T, H, r]; attention over the latent cache
            self.linear(f"{prefix}.q_absorb", n, T * H, dn, r, param_bytes_per=None,
                        owns_weight=True)
            self._fix_head_weights(H)
            self.core_attention(prefix, n, attn, H=H, kvh=one, d=r + dr, dv=r, kv_values=r + dr)
            # out_latent [T, H, r] @ W_UV [H, r, dv] -> [T, H, dv]
            self.linear(f"{prefix}.v_absorb", n, T * H, r, dv)
            self._fix_head_weights(H)
        else:
            # latent [B, Skv, r] @ W_UKV [r, H*(dn+dv)] -> K_nope, V for every cached key, every step
            keys = self._keys(attn)
            self.linear(f"{prefix}.kv_b_proj", n, B * keys, r, H * (dn + dv))
            self.core_attention(prefix, n, attn, H=H, kvh=H, d=dn + dr, dv=dv, kv_values=dn + dr + dv)
        self.linear(f"{prefix}.o_proj", n, T, H * dv, h, bias=attn.o_bias)
        self.all_reduce(f"{prefix}.all_reduce", n)

    def _fix_head_weights(self, H: Expr) -> None:
        """A per-head matmul [T*H rows, K] @ W[H, K, N]: H weight matrices, not one.

        Rebuilds the last linear op with weights and parameters H times its single-head values; each of
        the H matrices sees T of the rows.
        """
        op = self.ops.pop()
        weight = op.formulas["weight_bytes"] * H
        act_read = op.formulas["bytes_read"] - op.formulas["weight_bytes"]
        heads = round(float(H.value))
        self.ops.append(op.scaled(
            formulas=dict(op.formulas, weight_bytes=weight, bytes_read=weight + act_read,
                          matmul_rows=op.formulas["matmul_rows"] / H),  # each head's matrix sees T rows
            param_count=op.param_count * heads, param_bytes=op.param_bytes * heads,
        ))

    # ---- MLP and MoE ---------------------------------------------------------------------------------
    def _activation_op(self, name: str, n: int, mlp: MLPSpec, tokens: Expr, I: Expr) -> None:
        per_element = _VECTOR_FLOPS_PER_ELEMENT.get(mlp.activation, 8)
        if mlp.gated and self.fusion == "eager":  # act(gate): a read, a written; * up: 2a read, a written
            self.elementwise(name, n, tokens * I, 3, 2, per_element + 1, launches=2)
        elif mlp.gated:  # act(gate) * up: reads gate and up, writes one
            self.elementwise(name, n, tokens * I, 2, 1, per_element + 1)
        else:
            self.elementwise(name, n, tokens * I, 1, 1, per_element)

    def mlp(self, prefix: str, n: int, mlp: MLPSpec, tokens: Expr | None = None, reduce: bool = True) -> None:
        T = self.T if tokens is None else tokens
        h, I = self.h, self._split(Expr.sym("I", mlp.intermediate_size))
        layout = mlp.weight_layout
        if mlp.gated and mlp.fused_gate_up:
            self.linear(f"{prefix}.gate_up_proj", n, T, h, 2 * I, bias=mlp.bias, weight_layout=layout)
        elif mlp.gated:
            self.linear(f"{prefix}.gate_proj", n, T, h, I, bias=mlp.bias, weight_layout=layout)
            self.linear(f"{prefix}.up_proj", n, T, h, I, bias=mlp.bias, weight_layout=layout)
        else:
            self.linear(f"{prefix}.up_proj", n, T, h, I, bias=mlp.bias, weight_layout=layout)
        self._activation_op(f"{prefix}.act", n, mlp, T, I)
        self.linear(f"{prefix}.down_proj", n, T, I, h, bias=mlp.bias, weight_layout=layout)
        if reduce:
            self.all_reduce(f"{prefix}.all_reduce", n)

    def _split(self, size: Expr) -> Expr:
        """A dimension sliced over the tensor-parallel GPUs."""
        return size / self.tp if self.tp_degree > 1 else size

    def moe(self, prefix: str, n: int, moe: MoESpec) -> None:
        T, h = self.T, self.h
        E, k = Expr.sym("E", moe.num_experts), Expr.sym("k", moe.top_k)
        self.linear(f"{prefix}.router", n, T, h, E, bias=moe.router_bias)
        # softmax/sigmoid over E scores and top-k selection: reads T*E scores
        self.elementwise(f"{prefix}.topk", n, T * E, 1, 0, 5, kind="routing", params=moe.router_extra_params)
        expert = moe.expert
        ep = self.ep_degree
        if ep > 1:
            # whole experts spread over ep GPUs: each runs T*k/ep token-expert pairs on E/ep experts
            ep_sym = Expr.sym("ep", ep)
            tokens, experts, I = T / ep_sym, E / ep_sym, Expr.sym("I", expert.intermediate_size)
            dispatch = T * k * h * self.ab
            self.add(formula("collective")(f"{prefix}.experts.dispatch", n, kind="all_to_all",
                                           message_bytes=dispatch, group=ep))
        else:
            tokens, experts, I = T, E, self._split(Expr.sym("I", expert.intermediate_size))
        kw = dict(T=tokens, k=k, E=experts, wb=self.wb, ab=self.ab, bias=expert.bias, precision=self.precision,
                  weight_layout=expert.weight_layout)
        if expert.fused_gate_up:
            self.expert_linear(f"{prefix}.experts.gate_up_proj", n, K=h, N=2 * I, **kw)
        else:
            self.expert_linear(f"{prefix}.experts.gate_proj", n, K=h, N=I, **kw)
            self.expert_linear(f"{prefix}.experts.up_proj", n, K=h, N=I, **kw)
        self._activation_op(f"{prefix}.experts.act", n, expert, tokens * k, I)
        self.expert_linear(f"{prefix}.experts.down_proj", n, K=I, N=h, **kw)
        # out[T, h] = sum over k of weight * expert_out[T, k, h]
        self.elementwise(f"{prefix}.experts.combine", n, tokens * k * h, 1, 0, 2)
        if ep > 1:
            self.add(formula("collective")(f"{prefix}.experts.combine_all_to_all", n, kind="all_to_all",
                                           message_bytes=T * k * h * self.ab, group=ep))
        if moe.shared is not None:
            self.mlp(f"{prefix}.shared_experts", n, moe.shared, reduce=False)
        if ep == 1:
            self.all_reduce(f"{prefix}.all_reduce", n)
        elif moe.shared is not None:
            self.all_reduce(f"{prefix}.shared_experts.all_reduce", n)


def build_ops_unchecked(model: ModelSpec, phase: str, batch_size: Any, seq_len: Any, kv_len: Any,
                        options: CostOptions) -> list[Op]:
    """build_ops for callers that validated the workload already (simulate, sweeps)."""
    S = seq_len if phase == "prefill" else 1
    template = _template(model, phase, options)
    if template is None:
        return _GraphBuilder(model, phase, batch_size, S, kv_len, options).build()
    return template.ops_at(batch_size, S, kv_len)


def graph_template(model: ModelSpec, phase: str, options: CostOptions) -> _GraphTemplate | None:
    """The graph template of (model, phase, options), cached; None where the builder must run each time."""
    return _template(model, phase, options)


# ---- graph templates: the graph of a model, phase and options, rebuilt for any workload ----------------
class _GraphTemplate:
    """The ops of one (model, phase, options), built once with their formulas recorded, so the ops of
    any workload come from replaying the formulas with its B, S and L (see FormulaProgram) instead of
    running the builder again. Which ops exist, their names, counts and parameters depend only on the
    model, phase and options; only the formula values depend on the workload. An op whose formula
    computes a value outside its Exprs (the builder's recorded calls) is made by calling its formula
    again, with its Expr arguments replayed."""

    def __init__(self, model: ModelSpec, phase: str, options: CostOptions) -> None:
        builder = _GraphBuilder(model, phase, 1, 1, 0, options)
        ops = builder.build()
        names = [f.name for f in fields(Op)]
        at = names.index("formulas")
        self._recipes: list[_Replayed | _Called] = []
        exprs: list[Expr] = []  # what the program replays: each recipe's Exprs, in order
        for index, op in enumerate(ops):
            if index in builder.calls:
                kind, name, count, kwargs = builder.calls[index]
                args = tuple(key for key, value in kwargs.items() if isinstance(value, Expr))
                fixed = {key: value for key, value in kwargs.items() if key not in args}
                self._recipes.append(_Called(formula(kind), name, count, args, fixed))
                exprs.extend(kwargs[key] for key in args)
            else:  # Op fields before and after `formulas` (positional: faster than keywords)
                before, after = (tuple(getattr(op, n) for n in part) for part in (names[:at], names[at + 1:]))
                self._recipes.append(_Replayed(before, after, tuple(op.formulas)))
                exprs.extend(op.formulas.values())
        self._program = FormulaProgram(exprs, [builder.B, builder.S, builder.L])
        self.ops = ops  # at B = S = 1, L = 0: every field but the formula values is that of any workload
        self._index_values(ops)

    def ops_at(self, B: Any, S: Any, L: Any) -> list[Op]:
        exprs = iter(self._program.replay((B, S, L)))
        return [recipe.op(exprs) for recipe in self._recipes]

    def values_at(self, B: Any, S: Any, L: Any) -> dict[str, list[Any]]:
        """Per quantity (matmul_flops, bytes_read, ...), its formula's value for each op of ops_at(B, S, L),
        None where an op has no such formula; without making the Ops and Exprs."""
        workload = (B, S, L)
        registers = self._program.run(workload)
        registers.append(None)  # register -1: the value of a formula an op does not have
        values = {quantity: [registers[r] for r in column] for quantity, column in self._value_registers.items()}
        for index, recipe, start, stop in self._called:
            for quantity, value in self._called_values(recipe, registers, workload, start, stop).items():
                values[quantity][index] = value
        return values

    def _called_values(self, recipe: _Called, registers: list[Any], workload: tuple[Any, ...], start: int,
                       stop: int) -> dict[str, Any]:
        """The formula values of a called op (None for quantities it has not). Remembered per argument values
        when they are all numbers (a pure function of them: e.g. decode's experts depend on the batch alone)."""
        args = self._program.exprs(registers, workload, start, stop)
        numbers = all(type(a.value) in (int, float) for a in args)
        key = (id(recipe), *((type(a.value), a.value) for a in args)) if numbers else None
        if key in self._called_cache:
            return self._called_cache[key]
        op = recipe.op(iter(args))
        found = {quantity: op.formulas[quantity].value if quantity in op.formulas else None
                 for quantity in self._value_registers}
        if numbers:
            if len(self._called_cache) >= 1024:  # bounded: forget all
                self._called_cache.clear()
            self._called_cache[key] = found
        return found

    def _index_values(self, ops: list[Op]) -> None:
        """Where values_at finds each value: per quantity, the register of each replayed op's formula (-1
        for none); the called ops with their arguments' place among the program's formulas."""
        outputs = self._program.output_registers
        self._value_registers = {quantity: [-1] * len(ops) for op in ops for quantity in op.formulas}
        self._called: list[tuple[int, _Called, int, int]] = []
        self._called_cache: dict[tuple, dict[str, Any]] = {}
        start = 0
        for index, recipe in enumerate(self._recipes):
            names = recipe.args if isinstance(recipe, _Called) else recipe.quantities
            if isinstance(recipe, _Called):
                self._called.append((index, recipe, start, start + len(names)))
            else:
                for quantity, register in zip(names, outputs[start:]):
                    self._value_registers[quantity][index] = register
            start += len(names)


class _Replayed:
    """An op whose formulas are replayed: the Op with new formula values, all else as built."""

    def __init__(self, before: tuple, after: tuple, quantities: tuple[str, ...]) -> None:
        self.before, self.after, self.quantities = before, after, quantities

    def op(self, exprs: Iterator[Expr]) -> Op:
        # zip stops at the end of `quantities` without taking more from `exprs`: the op takes its own
        return Op(*self.before, dict(zip(self.quantities, exprs)), *self.after)


class _Called:
    """An op made by calling its formula again, with its Expr arguments replayed."""

    def __init__(self, make: Callable[..., Op], name: str, count: int, args: tuple[str, ...],
                 fixed: dict[str, Any]) -> None:
        self.make, self.name, self.count, self.args, self.fixed = make, name, count, args, fixed

    def op(self, exprs: Iterator[Expr]) -> Op:
        return self.make(self.name, self.count, **dict(zip(self.args, exprs)), **self.fixed)


# workloads at which a new template must reproduce a fresh build exactly before it is used: scalars
# (values and formula texts compared) and broadcasting arrays of both dtypes (values compared)
_CHECK_WORKLOADS = (
    (3, 5, 7),
    (np.array([[2], [9]]), np.array([1, 4, 33]), np.array([6.0, 100.0, 4096.0])),
)


@lru_cache(maxsize=256)
def _template(model: ModelSpec, phase: str, options: CostOptions) -> _GraphTemplate | None:
    """The graph template of (model, phase, options), or None where the builder must run each time.

    Cached: a template depends only on these three, all frozen (hashable) pydantic models or strings.
    None when a formula holds a value its tree cannot recompute (an scall) outside the builder's
    recorded calls, or when replaying does not reproduce a fresh build (every Op field; values with
    their types, dtypes and shapes; formula texts) at the check workloads, e.g. if a formula computed
    something outside its Exprs.
    """
    with np.errstate(all="ignore"):  # internal builds at made-up workloads: no warnings of their own
        try:
            template = _GraphTemplate(model, phase, options)
        except NotReplayableError:
            return None
        for i, (B, S, L) in enumerate(_CHECK_WORKLOADS):
            built = _GraphBuilder(model, phase, B, S, L, options).build()
            if not _same_ops(template.ops_at(B, S, L), built, texts=i == 0):
                return None
    return template


def _same_ops(replayed: list[Op], built: list[Op], texts: bool) -> bool:
    if len(replayed) != len(built):
        return False
    for a, b in zip(replayed, built):
        if any(getattr(a, f.name) != getattr(b, f.name) for f in fields(a) if f.name != "formulas"):
            return False
        if list(a.formulas) != list(b.formulas):
            return False
        for x, y in zip(a.formulas.values(), b.formulas.values()):
            if not _same_value(x.value, y.value):
                return False
            if texts and (x.symbolic() != y.symbolic() or x.substituted() != y.substituted()):
                return False
    return True


def _same_value(x: Any, y: Any) -> bool:
    if type(x) is not type(y) or np.shape(x) != np.shape(y) or np.asarray(x).dtype != np.asarray(y).dtype:
        return False
    return bool(np.array_equal(x, y, equal_nan=True))
