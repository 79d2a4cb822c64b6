"""The Mamba-2 mixer (a mixin of GraphBuilder): in_proj, the causal convolution over x, B and C, the gates,
the chunked selective scan (prefill) or the state update (decode), the gated grouped RMSNorm and out_proj,
as transformers' Mamba2Mixer (and Nemotron-H's, Granite 4's) and vLLM's MambaMixer2 run them."""

from __future__ import annotations

from ...models.spec import AttentionSpec
from ..op import formula
from ..symbolic import Expr


class SSMBlocks:
    """Mamba-2 layers: H heads of p channels, G groups of state size N (per GPU under tensor parallelism)."""

    def mamba2(self, prefix: str, n: int, attn: AttentionSpec) -> None:
        T, B, S, h = self.T, self.B, self.S, self.h
        H, G = self.heads(attn)  # heads and groups on one GPU (one replicated group when G < tp)
        p, N = Expr.sym("p", attn.head_dim), Expr.sym("N", attn.ssm_state_size)
        # z (the gate) [T, H*p], x B C [T, H*p + 2*G*N], dt [T, H]
        self.linear(f"{prefix}.in_proj", n, T, h, 2 * H * p + 2 * G * N + H, bias=attn.qkv_bias)
        self.add(formula("causal_conv1d")(f"{prefix}.conv1d", n, B=B, S=S, C=H * p + 2 * G * N, K=attn.conv_kernel,
                                          ab=self.ab, kvb=self.kvb, bias=attn.conv_bias))
        # dt = softplus(dt + dt_bias), A = -exp(A_log): [T, H]; parameters A_log, dt_bias and D [H]
        self.elementwise(f"{prefix}.gates", n, T * H, 1, 1, 8, params=3 * attn.num_heads // self.tp_degree)
        # transformers' torch scan under attention="math"/"sdpa_math" (the reference), else the fused kernels
        common = dict(B=B, H=H, p=p, G=G, N=N, ab=self.ab, fused=self.options.attention == "flash")
        if self.phase == "prefill":
            self.add(formula("ssd_scan")(f"{prefix}.scan", n, S=S, chunk=attn.ssm_chunk_size, **common))
        else:
            self.add(formula("ssd_update")(f"{prefix}.update", n, **common))
        # y * silu(z), then RMSNorm over each group's H*p/G channels (weight [H*p])
        self.elementwise(f"{prefix}.norm_gate", n, T * H * p, 2, 1, 5)
        self.norm(f"{prefix}.norm", n, H * p, params_per_norm=attn.num_heads * attn.head_dim // self.tp_degree)
        self.linear(f"{prefix}.out_proj", n, T, H * p, h, bias=attn.o_bias)
        self.all_reduce(f"{prefix}.all_reduce", n)
