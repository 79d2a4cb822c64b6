"""Standard attention (MHA, GQA, MQA; sliding window; QK norm; rotary; attention sinks) and the core
softmax(Q K^T) V kernels it shares with MLA: one fused kernel (flash), three unfused ones (math), or
PyTorch's SDPA math kernel op by op (sdpa_math). A mixin of GraphBuilder."""

from __future__ import annotations

from typing import Any

from ...models.spec import AttentionSpec
from ..op import formula
from ..symbolic import Expr, sfloordiv, smin


class AttentionBlocks:
    """Attention layers and the key counts they see (cached keys, window, causal pairs)."""

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
        """(query, key) pairs per head a fused kernel computes: causal triangle, clipped by the window, or one
        triangle per chunk.

        approximation: exact triangle, ignoring the kernel's tile granularity on the diagonal. A chunked
        layer's decode step is costed as a window's, min(L + 1, W) keys, where the kernel attends to the
        (L mod W) + 1 keys of the current chunk (about W / 2 on average once L > W): an upper bound that keeps
        the decode sum's quantities affine in L.
        """
        if self.phase == "decode":
            return self._keys(attn)
        S = self.S
        if attn.sliding_window is None:
            return S * (S + 1) / 2  # sum_{i=1..S} i
        W = Expr.sym("W", attn.sliding_window)
        if attn.chunked:  # n = S // W full chunks of W(W+1)/2 pairs, and a last one of r = S - n W queries
            n = sfloordiv(S, W)
            r = S - n * W
            return n * (W * (W + 1) / 2) + r * (r + 1) / 2
        m = smin(S, W)
        return m * (m + 1) / 2 + (S - m) * W

    def attention(self, prefix: str, n: int, attn: AttentionSpec) -> None:
        """Q, K, V projections (fused or not), QK norm, rotary, the cache append, core attention, output
        projection; MLA layers go to mla()."""
        if attn.kind == "mla":
            self.mla(prefix, n, attn)
            return
        if attn.kind == "linear":
            self.linear_attention(prefix, n, attn)
            return
        if attn.kind == "mamba2":
            self.mamba2(prefix, n, attn)
            return
        h, T = self.h, self.T
        H, kvh = self.heads(attn)
        d, dv = Expr.sym("d", attn.head_dim), Expr.sym("dv", attn.v_head_dim)
        layout = attn.weight_layout
        q_width = 2 * H * d if attn.output_gate else H * d  # the output gate rides in q_proj: [T, H*(d + d)]
        if attn.fused_qkv or self.options.fused_projections:
            self.linear(f"{prefix}.qkv_proj", n, T, h, q_width + kvh * (d + dv), bias=attn.qkv_bias,
                        weight_layout=layout)
        else:
            self.linear(f"{prefix}.q_proj", n, T, h, q_width, bias=attn.qkv_bias, weight_layout=layout)
            self.linear(f"{prefix}.k_proj", n, T, h, kvh * d, bias=attn.qkv_bias, weight_layout=layout)
            self.linear(f"{prefix}.v_proj", n, T, h, kvh * dv, bias=attn.qkv_bias, weight_layout=layout)
        if attn.qk_norm:
            bias = 2 if self.model.has_norm_bias else 1  # a LayerNorm's bias per weight (Phi's qk_layernorm)
            self.norm(f"{prefix}.qk_norm", n, (H + kvh) * d, params_per_norm=attn.qk_norm_params * bias)
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
        if attn.output_gate:  # out[T, H*dv] * sigmoid(gate[T, H*dv])
            self.elementwise(f"{prefix}.output_gate", n, T * H * dv, 2, 1, 5)
        self.linear(f"{prefix}.o_proj", n, T, H * dv, h, bias=attn.o_bias, weight_layout=layout)
        self.all_reduce(f"{prefix}.all_reduce", n)

    def _attention_kernel(self, attn: AttentionSpec, H: Expr, kvh: Expr) -> dict[str, Any]:
        """The measured attention kernel a fused standard attention is (per-GPU heads), read at (batch, prompt
        tokens) in prefill and (batch, keys attended) in decode; MLA's below; unequal query and value head dims
        name no table's coordinates, only why there is none."""
        if attn.kind == "mla":
            return self._mla_kernel(attn, H)
        if attn.head_dim != attn.v_head_dim:
            return {"kernel_key": ("unmeasured", f"{self.phase} attention with head dim {attn.head_dim} and value "
                                                 f"head dim {attn.v_head_dim}: the attention tables time equal dims")}
        shape = (self.kv_table_dtype, attn.head_dim, round(float(H.value)), round(float(kvh.value)))
        if self.phase == "prefill":
            return {"kernel_key": ("prefill_attention", *shape, attn.sliding_window or 0, attn.chunked),
                    "kernel_y": self.S}
        return {"kernel_key": ("decode_attention", *shape), "kernel_y": self._keys(attn)}

    def _mla_kernel(self, attn: AttentionSpec, H: Expr) -> dict[str, Any]:
        """The measured MLA kernel: DeepSeek's shape only (latent 512, rope 64, nope 128, v 128), prefill expanded,
        decode absorbed; otherwise named without a table, so that a result says why it is on the roofline."""
        deepseek = (attn.kv_lora_rank, attn.qk_rope_head_dim, attn.qk_nope_head_dim, attn.v_head_dim) == (512, 64, 128,
                                                                                                          128)
        heads = round(float(H.value))
        if not deepseek:
            return {"kernel_key": ("unmeasured", (
                f"{self.phase} MLA with latent rank {attn.kv_lora_rank}, rope dim {attn.qk_rope_head_dim}, no-rope dim "
                f"{attn.qk_nope_head_dim}, value dim {attn.v_head_dim}: the MLA tables time DeepSeek's 512, 64, 128, "
                f"128"))}
        if self.phase == "prefill":
            return {"kernel_key": ("prefill_mla", self.kv_table_dtype, heads), "kernel_y": self.S}
        if self.options.mla == "absorb":
            return {"kernel_key": ("decode_mla", self.kv_table_dtype, heads), "kernel_y": self._keys(attn)}
        return {"kernel_key": ("unmeasured", f"decode MLA with mla={self.options.mla!r}: the decode MLA tables time "
                                             "the absorbed kernel (mla='absorb')")}

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
                **self._attention_kernel(attn, H, kvh),
            ))
            return
        if self.options.attention == "sdpa_math":
            self._sdpa_math(prefix, n, common, H=H, kvh=kvh, d=d, dv=dv, keys=keys, window=window,
                            broadcast=attn.broadcast_kv)
            return
        eager = self.fusion == "eager"
        if eager and kvh.value < H.value:  # transformers' repeat_kv: K and V copied out to every head
            self.add(formula("repeat_kv")(f"{prefix}.repeat_kv", n, B=self.B, H=H, kvh=kvh, Skv=keys,
                                          kv_values=kv_values, kvb=self.kvb, kv_window=window))
        self.add(formula("attention_scores")(f"{prefix}.scores", n, **common, d=d, kvh=kvh, ab=self.ab,
                                             kvb=self.kvb, precision=self.precision, kv_window=window))
        self.add(formula("softmax")(f"{prefix}.softmax", n, **common, ab=self.ab, params=params, kv_window=window,
                                    eager=eager, softcap=attn.logit_softcap))
        self.add(formula("attention_context")(f"{prefix}.context", n, **common, dv=dv, kvh=kvh, ab=self.ab,
                                              kvb=self.kvb, precision=self.precision, kv_window=window))

    def _sdpa_math(self, prefix: str, n: int, common: dict[str, Expr], *, H: Expr, kvh: Expr, d: Expr, dv: Expr,
                   keys: Expr, window: int | None, broadcast: bool = False) -> None:
        """PyTorch's SDPA math kernel (torch's fallback when no fused kernel takes the shapes), one kernel
        per op as profiled on torch 2.13: 16-bit Q, K, V cast to float32; Q and K^T each scaled by
        sqrt(scale); both matmuls in float32; mask, softmax and the all-masked-row guard on float32
        scores (sdpa_softmax); the output cast back. The causal mask is added in prefill only (a decode
        step's single query sees every cached key).

        broadcast: K and V come with fewer heads than Q (Falcon's multi-query attention, which hands SDPA its
        one K/V head to broadcast: the fused CPU kernel refuses it, so the math kernel runs); the math kernel's
        batched matmuls copy K^T and V out to every query head when B > 1 (sdpa_broadcast_kv) and then read the
        copies, float32 as the kernel computes. Approximation: priced as contiguous copies (K^T is a transposed
        one), after the scaling (the kernel expands inside its first matmul)."""
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
        heads_read = kvh  # the heads the two matmuls read: the per-query-head copies when B > 1
        if broadcast and kvh.value < H.value:
            self.add(formula("sdpa_broadcast_kv")(f"{prefix}.sdpa_broadcast_kv", n, B=B, H=H, kvh=kvh, Skv=keys,
                                                  kv_values=d + dv, kvb=f32, kv_window=window))
            heads_read = kvh + smin(B - 1, 1) * (H - kvh)
        self.add(formula("attention_scores")(f"{prefix}.scores", n, **common, d=d, kvh=heads_read, ab=f32, kvb=f32,
                                             precision="fp32", kv_window=window))
        self.add(formula("sdpa_softmax")(f"{prefix}.softmax", n, **common, ab=ab, masked=self.phase == "prefill",
                                         kv_window=window))
        self.add(formula("attention_context")(f"{prefix}.context", n, **common, dv=dv, kvh=heads_read, ab=f32,
                                              kvb=f32, precision="fp32", kv_window=window))
        if float(ab.value) != 4.0:  # the float32 output cast back
            self.add(formula("cast")(f"{prefix}.sdpa_downcast", n, bytes_read=B * H * S * dv * f32,
                                     bytes_written=B * H * S * dv * ab))
