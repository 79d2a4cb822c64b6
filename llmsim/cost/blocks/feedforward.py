"""The feed-forward half of a layer: the dense MLP (gated or not), its activation, and mixture of experts
(router, top-k, expert matmuls over the experts touched, combine; expert parallelism). A mixin of
GraphBuilder."""

from __future__ import annotations

from typing import Any

from ...models.spec import MLPSpec, MoESpec
from ..symbolic import Expr

_VECTOR_FLOPS_PER_ELEMENT = {"silu": 4, "swish": 4, "gelu": 8, "gelu_new": 8, "gelu_pytorch_tanh": 8,
                             "gelu_fast": 8, "relu": 1, "relu2": 2, "swiglu_clamped": 6}


class FeedForwardBlocks:
    """MLP and MoE blocks."""

    def _activation_op(self, name: str, n: int, mlp: MLPSpec, tokens: Expr, I: Expr) -> None:
        """act(gate) * up (gated) or act(x) on [tokens, I]."""
        per_element = _VECTOR_FLOPS_PER_ELEMENT.get(mlp.activation, 8)
        if mlp.gated and self.fusion == "eager":  # act(gate): a read, a written; * up: 2a read, a written
            self.elementwise(name, n, tokens * I, 3, 2, per_element + 1, launches=2)
        elif mlp.gated:  # act(gate) * up: reads gate and up, writes one
            self.elementwise(name, n, tokens * I, 2, 1, per_element + 1)
        else:
            self.elementwise(name, n, tokens * I, 1, 1, per_element)

    def mlp(self, prefix: str, n: int, mlp: MLPSpec, tokens: Expr | None = None, reduce: bool = True) -> None:
        """Dense MLP: up (and gate) projections, activation, down projection; I sliced over tensor-parallel
        GPUs, whose partial outputs are summed unless reduce=False (the caller sums them)."""
        T = self.T if tokens is None else tokens
        h, I = self.h, self._split(Expr.sym("I", mlp.intermediate_size))
        layout = mlp.weight_layout
        if mlp.gated and (mlp.fused_gate_up or self.options.fused_projections):
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

    def moe(self, prefix: str, n: int, moe: MoESpec) -> None:
        """Mixture of experts: router, top-k, the routed experts' matmuls, combine, shared experts; experts
        sliced (tensor parallel), spread whole over GPUs (expert parallel, ep == tp), or both (1 < ep < tp: E/ep
        experts per GPU, each sliced tp/ep ways).

        Attention is tensor parallel, so every GPU holds all T tokens: under expert parallelism each runs its
        E/ep experts on the token-expert pairs routed to them and one all-reduce of [T, h] over the tp GPUs
        sums experts, slices and shared experts, as with sliced experts. No token crosses GPUs in an
        all-to-all: that is how the engines run EP without attention data parallelism (vLLM
        vllm/model_executor/layers/fused_moe/config.py, FusedMoEParallelConfig.use_all2all_kernels =
        dp_size > 1 and use_ep; the all-to-all dispatch/combine kernels serve data-parallel attention, which
        llmsim models in serving only, with an all-gather and a reduce-scatter: llmsim.serving.data_parallel)."""
        T, h = self.T, self.h
        E, k = Expr.sym("E", moe.num_experts), Expr.sym("k", moe.top_k)
        self.role = "router"
        self.linear(f"{prefix}.router", n, T, h, E, bias=moe.router_bias)
        # softmax/sigmoid over E scores and top-k selection: reads T*E scores
        self.elementwise(f"{prefix}.topk", n, T * E, 1, 0, 5, kind="routing", params=moe.router_extra_params)
        expert = moe.expert
        ep = self.ep_degree
        moe_tp = self.tp_degree // ep  # the experts' tensor-parallel degree: each expert sliced moe_tp ways
        if ep > 1:
            # E/ep whole experts on each group of moe_tp GPUs, each expert sliced moe_tp ways (moe_tp = 1 when
            # ep == tp): each GPU runs T*k/ep token-expert pairs on E/ep experts, I/moe_tp columns of each
            ep_sym = Expr.sym("ep", ep)
            tokens, experts, I = T / ep_sym, E / ep_sym, Expr.sym("I", expert.intermediate_size)
            if moe_tp > 1:
                I = I / Expr.sym("moe_tp", moe_tp)
        else:
            tokens, experts, I = T, E, self._split(Expr.sym("I", expert.intermediate_size))
        kw = dict(T=tokens, k=k, E=experts, wb=self.wb, ab=self.ab, bias=expert.bias, precision=self.precision,
                  weight_layout=expert.weight_layout, spread=max(ep, 1))
        # the measured fused-MoE kernel (both expert GEMMs, activation, routing and combine in one table time),
        # shared among the expert GEMMs by their weight matrices: gated gate+up 2 of 3, down 1 of 3
        # approximation: the activation and combine ops keep their own (small) roofline times on top
        matrices = 3 if expert.gated else 2
        # the experts' format's kernel family, from the checkpoint or weight_dtype; one no table holds (float32,
        # int8 weight-only, ...) is named too, so that a result says why the experts are on the roofline
        moe_dtype = self.role_terms("experts", h, I)["gemm"]
        fmt = self.weight_format("experts")
        if moe_dtype == "fp8" and fmt is not None and fmt.granularity == "block":
            moe_dtype = "fp8_block"  # block-scaled fp8 experts (DeepSeek-V3, Qwen3-FP8) run their own kernels

        def moe_key(share: int) -> dict[str, Any]:
            key = ("moe", moe_dtype, moe.top_k, moe.num_experts, self.model.hidden_size, expert.intermediate_size,
                   moe_tp, ep, share / matrices, moe.routing)
            return {"kernel_key": key, "kernel_tokens": T}  # the tokens entering the layer on this GPU

        if expert.gated and (expert.fused_gate_up or self.options.fused_projections):
            self.expert_linear(f"{prefix}.experts.gate_up_proj", n, K=h, N=2 * I, **kw, **moe_key(2))
        elif expert.gated:
            self.expert_linear(f"{prefix}.experts.gate_proj", n, K=h, N=I, **kw, **moe_key(1))
            self.expert_linear(f"{prefix}.experts.up_proj", n, K=h, N=I, **kw, **moe_key(1))
        else:  # act(x W_up) W_down (Nemotron-H's relu2 experts)
            self.expert_linear(f"{prefix}.experts.up_proj", n, K=h, N=I, **kw, **moe_key(1))
        self._activation_op(f"{prefix}.experts.act", n, expert, tokens * k, I)
        self.expert_linear(f"{prefix}.experts.down_proj", n, K=I, N=h, **kw, **moe_key(1))
        # out[T, h] = sum over k of weight * expert_out[T, k, h] (the pairs of this GPU's experts)
        self.elementwise(f"{prefix}.experts.combine", n, tokens * k * h, 1, 0, 2)
        if moe.shared is not None:
            self.role = "shared_experts"
            self.mlp(f"{prefix}.shared_experts", n, moe.shared, reduce=False)
        if moe.shared is not None and moe.shared_gate:
            # shared_out[T, h] * sigmoid(x[T, h] @ W[h, 1]); approximation: the T sigmoids are not counted
            self.linear(f"{prefix}.shared_expert_gate", n, T, h, Expr.sym("one", 1))
            self.elementwise(f"{prefix}.shared_expert_gate_mul", n, T * h, 1, 1, 1)
        # routed (sliced or whole) and shared experts' partial [T, h] outputs, summed over the tp GPUs at once
        self.all_reduce(f"{prefix}.all_reduce", n)
