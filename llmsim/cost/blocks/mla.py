"""Multi-head latent attention (DeepSeek V2/V3): low-rank Q and KV projections, a latent KV cache, and
either weight absorption (decode with mla="absorb") or the expanded per-head K and V. A mixin of
GraphBuilder; the core attention kernels come from AttentionBlocks."""

from __future__ import annotations

from ...models.spec import AttentionSpec
from ..op import formula
from ..symbolic import Expr


class MLABlocks:
    """MLA layers; calls AttentionBlocks' core_attention and key helpers through self."""

    def mla(self, prefix: str, n: int, attn: AttentionSpec) -> None:
        """Multi-head latent attention (DeepSeek V2/V3)."""
        h, T, B = self.h, self.T, self.B
        H, _ = self.heads(attn)
        dn, dr = Expr.sym("dn", attn.qk_nope_head_dim), Expr.sym("dr", attn.qk_rope_head_dim)
        dv, r = Expr.sym("dv", attn.v_head_dim), Expr.sym("r", attn.kv_lora_rank)
        low_rank = "mla_projections"  # the quantization role of every projection but o_proj
        fused_a = bool(attn.q_lora_rank) and self.options.fused_projections
        if attn.q_lora_rank:
            qr = Expr.sym("qr", attn.q_lora_rank)
            if fused_a:
                # x [T, h] @ [h, qr + r + dr] -> query latent, KV latent and shared rope key in one GEMM: q_a_proj
                # and kv_a_proj_with_mqa read the same input and are both replicated over the tensor ranks, so
                # serving engines run them as one (vLLM's and SGLang's fused_qkv_a_proj[_with_mqa] in
                # models/deepseek_v2.py; TensorRT-LLM's kv_a_proj_with_mqa of width q_lora_rank + kv_lora_rank +
                # qk_rope_head_dim in _torch/modules/attention.py)
                self.linear(f"{prefix}.fused_qkv_a_proj", n, T, h, qr + r + dr, bias=attn.qkv_bias, role=low_rank)
            else:
                self.linear(f"{prefix}.q_a_proj", n, T, h, qr, bias=attn.qkv_bias, role=low_rank)
            self.norm(f"{prefix}.q_a_norm", n, qr, params_per_norm=attn.q_lora_rank)
            self.linear(f"{prefix}.q_b_proj", n, T, qr, H * (dn + dr), role=low_rank)
        else:
            self.linear(f"{prefix}.q_proj", n, T, h, H * (dn + dr), role=low_rank)
        if not fused_a:
            self.linear(f"{prefix}.kv_a_proj", n, T, h, r + dr, bias=attn.qkv_bias, role=low_rank)
        self.norm(f"{prefix}.kv_a_norm", n, r, params_per_norm=attn.kv_lora_rank)
        self.elementwise(f"{prefix}.rotary", n, T * (H + 1) * dr, 1, 1, 3)
        one = Expr.sym("kvh", 1)
        self.add(formula("kv_append")(f"{prefix}.kv_append", n, B=B, Snew=self.S, values=r + dr,
                                      kvb=self.kvb, ab=self.ab, cached=self._cached(attn),
                                      kv_window=self._decode_window(attn)))
        if self.phase == "decode" and self.options.mla == "absorb":
            # q_nope [T, H, dn] @ W_UK [H, dn, r] -> q_latent [T, H, r]; attention over the latent cache
            self.linear(f"{prefix}.q_absorb", n, T * H, dn, r, param_bytes_per=None,
                        owns_weight=True, role=low_rank)
            self._fix_head_weights(H)
            self.core_attention(prefix, n, attn, H=H, kvh=one, d=r + dr, dv=r, kv_values=r + dr)
            # out_latent [T, H, r] @ W_UV [H, r, dv] -> [T, H, dv]
            self.linear(f"{prefix}.v_absorb", n, T * H, r, dv, role=low_rank)
            self._fix_head_weights(H)
        else:
            # latent [B, Skv, r] @ W_UKV [r, H*(dn+dv)] -> K_nope, V for every cached key, every step
            keys = self._keys(attn)
            self.linear(f"{prefix}.kv_b_proj", n, B * keys, r, H * (dn + dv), role=low_rank)
            self.core_attention(prefix, n, attn, H=H, kvh=H, d=dn + dr, dv=dv, kv_values=dn + dr + dv)
        self.linear(f"{prefix}.o_proj", n, T, H * dv, h, bias=attn.o_bias)
        self.all_reduce(f"{prefix}.all_reduce", n)

    def _fix_head_weights(self, H: Expr) -> None:
        """A per-head matmul [T*H rows, K] @ W[H, K, N]: H weight matrices, not one.

        Rebuilds the last linear op with weights and parameters H times its single-head values; each of
        the H matrices sees T of the rows.
        """
        op = self.ops.pop()
        # H weight matrices in one batched matmul: not the single GEMM a measured table times
        formulas = {k: v for k, v in op.formulas.items() if k not in ("kernel_x", "kernel_y")}
        op = op.scaled(formulas=formulas, kernel_key=None)
        weight = op.formulas["weight_bytes"] * H
        act_read = op.formulas["bytes_read"] - op.formulas["weight_bytes"]
        heads = round(float(H.value))
        self.ops.append(op.scaled(
            formulas=dict(op.formulas, weight_bytes=weight, bytes_read=weight + act_read,
                          matmul_rows=op.formulas["matmul_rows"] / H),  # each head's matrix sees T rows
            param_count=op.param_count * heads, param_bytes=op.param_bytes * heads,
        ))
