"""Linear attention: the gated DeltaNet layer of Qwen3-Next (a mixin of GraphBuilder). Projections, the causal
convolution over q, k and v, the gates, the chunked scan (prefill) or the recurrent update (decode), the gated
RMSNorm and the output projection."""

from __future__ import annotations

from typing import Any

from ...models.spec import AttentionSpec
from ..formulas.linear_attention import FLA_SCAN_LAUNCHES
from ..op import formula
from ..symbolic import Expr


class LinearAttentionBlocks:
    """Gated DeltaNet layers: Hv value heads of dv, Hk query/key heads of dk (per GPU under tensor parallelism)."""

    def linear_attention(self, prefix: str, n: int, attn: AttentionSpec) -> None:
        h, T, B, S = self.h, self.T, self.B, self.S
        Hv, Hk = self.heads(attn)
        dk, dv = Expr.sym("dk", attn.head_dim), Expr.sym("dv", attn.v_head_dim)
        # q, k [T, Hk*dk], v and the output gate z [T, Hv*dv]; b and a [T, Hv] (beta, decay)
        self.linear(f"{prefix}.in_proj_qkvz", n, T, h, 2 * Hk * dk + 2 * Hv * dv)
        self.linear(f"{prefix}.in_proj_ba", n, T, h, 2 * Hv)
        self.add(formula("causal_conv1d")(f"{prefix}.conv1d", n, B=B, S=S, C=2 * Hk * dk + Hv * dv,
                                          K=attn.conv_kernel, ab=self.ab, kvb=self.kvb,
                                          **self._gdn_kernel("conv1d", attn, Hk, Hv)))
        # beta = sigmoid(b); g = -exp(A_log) * softplus(a + dt_bias): [T, Hv], parameters A_log, dt_bias [Hv]
        self.elementwise(f"{prefix}.gates", n, T * Hv, 2, 2, 8, params=2 * attn.num_heads // self.tp_degree)
        common = dict(B=B, Hv=Hv, dk=dk, dv=dv, Hk=Hk, ab=self.ab)
        if self.phase == "prefill":  # FLA's chunked scan launches several kernels (CostOptions.linear_attention_kernel)
            fla = self.options.linear_attention_kernel == "fla" and self.fusion != "eager"
            self.add(formula("gated_delta_scan")(f"{prefix}.scan", n, S=S, **common,
                                                 launches=FLA_SCAN_LAUNCHES if fla else 1,
                                                 **self._gdn_kernel("delta_rule", attn, Hk, Hv)))
        else:
            self.add(formula("gated_delta_update")(f"{prefix}.update", n, **common,
                                                   **self._gdn_kernel("delta_rule", attn, Hk, Hv)))
        # RMSNorm over each head's dv (weight [dv]) gated by silu(z)
        self.norm(f"{prefix}.norm", n, Hv * dv, params_per_norm=attn.v_head_dim)
        self.elementwise(f"{prefix}.norm_gate", n, T * Hv * dv, 2, 1, 5)
        self.linear(f"{prefix}.out_proj", n, T, Hv * dv, h)
        self.all_reduce(f"{prefix}.all_reduce", n)

    def _gdn_kernel(self, kernel: str, attn: AttentionSpec, Hk: Expr, Hv: Expr) -> dict[str, Any]:
        """The measured Gated DeltaNet kernel an op is (timing.measured: the prefill_gdn / decode_gdn tables), keyed
        by per-GPU heads and read at (batch, prompt tokens) in prefill and at the tokens of the step in decode
        (one per sequence). The activation dtype rides in the key: the tables time 16-bit q, k, v."""
        heads = tuple(float(x.value) for x in (Hk, Hv))
        heads = tuple(int(h) if h == int(h) else h for h in heads)  # a fraction (heads not divisible) finds none
        key = (f"{self.phase}_gdn", kernel, attn.head_dim, attn.v_head_dim, attn.conv_kernel, *heads, self.act_dtype)
        if self.phase == "prefill":
            return {"kernel_key": key, "kernel_x": self.B, "kernel_y": self.S}
        return {"kernel_key": key, "kernel_x": self.T}
