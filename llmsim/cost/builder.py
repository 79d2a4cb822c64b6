"""The graph builder: ModelSpec x phase x workload -> the list of Ops of one forward pass.

GraphBuilder holds the workload symbols, the op list and the helpers that append ops (add, linear, norm,
elementwise, expert_linear), and walks the model: embeddings, each layer group (norms, attention, MLP or
MoE, residual adds), final norm, LM head. The blocks themselves are mixins, one concern each, in
`cost.blocks` (attention, mla, linear_attention, ssm, feedforward, parallel, head); every op's numbers come
from a formula found by its op kind name in the registry (`cost.op.formula`).

Prefill runs `seq_len` new tokens per sequence with an empty cache. Decode runs one new token per
sequence with the cache already holding `kv_len` tokens: the new token's K and V are appended and it
attends to kv_len + 1 keys (min(kv_len + 1, W) on a sliding-window layer, whose cache keeps W - 1).

Symbols in formulas: B batch, S new tokens per sequence, L cached tokens, T = B*S tokens, h hidden,
H heads, kvh KV heads, d and dv head dims, I intermediate size, E experts, k experts per token,
V vocabulary, r MLA latent rank, dr MLA rope dim, dn MLA no-rope dim, qr MLA query rank, W window;
wb, ab, kvb bytes per weight, activation and cache element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dtypes import (
    canonical_dtype,
    dtype_bytes,
    kv_element_bytes,
    matmul_precision,
    residual_stream_bytes,
    weight_bytes_per_param,
)
from ..models.quantization import WeightFormat, compute_precision
from ..models.spec import LayerGroup, LayerSpec, ModelSpec, MoESpec
from .blocks.attention import AttentionBlocks
from .blocks.feedforward import FeedForwardBlocks
from .blocks.head import HeadBlocks
from .blocks.linear_attention import LinearAttentionBlocks
from .blocks.mla import MLABlocks
from .blocks.parallel import ParallelBlocks
from .blocks.ssm import SSMBlocks
from .op import Op, formula, value_scalar
from .symbolic import Expr
from .workload import CostOptions

_UNFUSED = ("none", "eager")  # fusion policies without the fused residual add + norm


def _no_matmul_flops(op: Op) -> bool:
    """Whether an op does no matrix-unit work (element-wise, norms, copies, softmax, collectives)."""
    flops = op.formulas.get("matmul_flops")
    return flops is None or not np.any(np.asarray(flops.value) != 0)


class GraphBuilder(HeadBlocks, AttentionBlocks, MLABlocks, LinearAttentionBlocks, SSMBlocks, FeedForwardBlocks,
                   ParallelBlocks):
    """Builds the op list; one method per block, shared by every model family."""

    def __init__(self, model: ModelSpec, phase: str, B: Any, S: Any, L: Any, options: CostOptions) -> None:
        self.model, self.phase, self.options = model, phase, options
        weight_dtype, act_dtype, kv_dtype = options.resolved_dtypes(model.dtype)
        self.precision = matmul_precision(act_dtype, weight_dtype)
        # the measured GEMM table the matmuls read: a lane the tables may hold, else the pair named (it has none)
        lane = _gemm_table_dtype(weight_dtype, act_dtype)
        self.gemm_lane_measured = lane is not None
        self.gemm_dtype = lane or unmeasured_gemm_lane(weight_dtype, act_dtype)
        # the attention tables' cache dtype: bf16 or fp8, else the cache dtype named (no table measures it)
        self.kv_table_dtype = {"bfloat16": "bf16", "float16": "bf16", "fp8": "fp8"}.get(kv_dtype, kv_dtype)
        self.B = Expr.sym("B", B)
        self.S = Expr.sym("S", S)
        self.L = Expr.sym("L", L)
        self.T = self.B * self.S
        self.h = Expr.sym("h", model.hidden_size)
        self.wb = Expr.sym("wb", weight_bytes_per_param(weight_dtype))
        self.ab = Expr.sym("ab", dtype_bytes(act_dtype))
        # the residual stream between layers, which tensor-parallel all-reduces sum (dtypes.residual_stream_bytes)
        rb = residual_stream_bytes(act_dtype)
        self.rb = self.ab if rb == dtype_bytes(act_dtype) else Expr.sym("rb", rb)
        self.kvb = Expr.sym("kvb", kv_element_bytes(kv_dtype))
        self.eb = Expr.sym("eb", dtype_bytes(canonical_dtype(model.dtype)))  # embedding/norm storage
        # a quantized checkpoint's formats per module role, unless weight_dtype overrides them all
        self.quantization = None if options.weight_dtype else model.quantization
        self.act_dtype = act_dtype
        self.role = "attention"  # the module role the block being built belongs to (models.quantization.ROLES)
        self.layer_unquantized: tuple[str, ...] = ()
        self.fusion = options.fusion
        self.tp_degree, self.ep_degree = options.tensor_parallel, options.expert_parallel
        self.tp = Expr.sym("tp", self.tp_degree)
        self._check_split(model)
        self.ops: list[Op] = []
        # ops whose formula computes a value outside its Exprs (experts touched): index in self.ops ->
        # (formula name, op name, count, keyword arguments), so a graph template can call it again
        self.calls: dict[int, tuple[str, str, int, dict[str, Any]]] = {}

    # ---- helpers ----------------------------------------------------------------------------------
    def add(self, op: Op) -> None:
        if self.act_dtype == "float32" and op.precision == "bf16" and _no_matmul_flops(op):
            # an op without matmul FLOPs left at Op's default precision runs on the activations: in a float32 run
            # it reads the fp32 vector rate and element-wise curve, not the 16-bit ones
            op = op.scaled(precision="fp32")
        if self.fusion == "full" and op.kind in ("norm", "elementwise"):
            # fused into a neighbouring matmul's prologue/epilogue: no traffic, no launch of its own
            zero = Expr.const(0)
            formulas = dict(op.formulas, bytes_read=zero, bytes_written=zero)
            op = op.scaled(formulas=formulas, launches=0)
        self.ops.append(op)

    def weight_format(self, role: str) -> WeightFormat | None:
        """The quantized format of a role's weights in the current layer (None: the plain weight dtype)."""
        if self.quantization is None or role in self.layer_unquantized:
            return None
        return self.quantization.format_of(role)

    def role_terms(self, role: str, K: Expr, N: Expr) -> dict[str, Any]:
        """wb (bytes per weight: packed values + scales + zeros of this [N, K] matrix), bias bytes, matmul
        precision and measured GEMM table of a role's matmul ("gemm"; "lane_measured": whether it is a lane the
        tables may hold, or a pair unmeasured_gemm_lane names)."""
        fmt = self.weight_format(role)
        if fmt is None:
            return {"wb": self.wb, "precision": self.precision, "gemm": self.gemm_dtype, "bias_bytes_per": None,
                    "lane_measured": self.gemm_lane_measured}
        wb = Expr.sym("wb", fmt.bytes_per_weight(float(value_scalar(K)), float(value_scalar(N))))
        precision = compute_precision(fmt, self.act_dtype)
        measured = bool(fmt.compute) or self.act_dtype in ("bfloat16", "float16")
        gemm = fmt.gemm_table if measured else unmeasured_gemm_lane(fmt.gemm_table, self.act_dtype)
        return {"wb": wb, "precision": precision, "gemm": gemm, "bias_bytes_per": float(self.eb.value),
                "lane_measured": measured}

    def linear(self, name: str, count: int, T: Expr, K: Expr, N: Expr, bias: bool = False, **kw: Any) -> None:
        terms = self.role_terms(kw.pop("role", self.role), K, N)
        key = ("gemm", terms["gemm"], int(value_scalar(K)))
        self.add(formula("linear")(name, count, T=T, K=K, N=N, wb=terms["wb"], ab=self.ab, bias=bias,
                                   precision=terms["precision"], kernel_key=key,
                                   bias_bytes_per=terms["bias_bytes_per"], **kw))

    def norm(self, name: str, count: int, n: Expr, norms: int = 1, params_per_norm: int | None = None) -> None:
        params = params_per_norm if params_per_norm is not None else self.model.norm_params
        if self.fusion == "eager" and self.model.norm != "layernorm":  # LayerNorm is one aten kernel
            self.add(formula("eager_rmsnorm")(name, count, T=self.T, n=n, ab=self.ab, params_per_norm=params,
                                              norms=norms))
            return
        self.add(formula("norm")(name, count, T=self.T, n=n, ab=self.ab, kind=self.model.norm,
                                 params_per_norm=params, norms=norms))

    def expert_linear(self, name: str, count: int, **kw: Any) -> None:
        """An experts' matmul (formula "expert_linear"), its call recorded in self.calls; its weight bytes and
        precision are the experts' format's."""
        terms = self.role_terms("experts", kw["K"], kw["N"])
        kw = dict(kw, wb=terms["wb"], precision=terms["precision"], bias_bytes_per=terms["bias_bytes_per"])
        self.calls[len(self.ops)] = ("expert_linear", name, count, kw)
        self.add(formula("expert_linear")(name, count, **kw))

    def elementwise(self, name: str, count: int, elements: Expr, inputs: float, outputs: float, flops: int,
                    **kw: Any) -> None:
        self.add(formula("elementwise")(name, count, elements=elements, inputs=inputs, outputs=outputs,
                                        flops_per_element=flops, ab=self.ab, **kw))

    # ---- the forward pass ---------------------------------------------------------------------------
    def build(self) -> list[Op]:
        """The ops of the forward pass: embeddings, every layer group, the final norm, the LM head."""
        model = self.model
        self.embed()
        for group in model.layer_groups:
            prefix = f"layers.{group.tag}" if group.tag and len(model.layer_groups) > 1 else "layers"
            self.layer(prefix, group)
        if self._fuses_adds(model.layer_groups[model.layer_pattern[-1]].layer):
            self._add_norm("final_add_norm", 1)  # the last layer's residual add, fused
        else:
            self.norm("final_norm", 1, self.h)
        self.lm_head()
        return self.ops

    def layer(self, prefix: str, group: LayerGroup) -> None:
        """One layer type, run group.count times: norms, attention (or a Mamba-2 mixer), MLP or MoE, residual
        adds; a one-branch layer (LayerSpec) runs its norm, its branch and its add."""
        layer, n = group.layer, group.count
        T, h = self.T, self.h
        self.layer_unquantized = layer.unquantized
        fuse_add = self._fuses_adds(layer)
        if fuse_add:
            self._add_norm(f"{prefix}.input_add_norm", n)  # x += previous mlp out; norm(x)
        elif layer.input_norm:
            self.norm(f"{prefix}.input_norm", n, h)
        if layer.attention is not None:
            self.role = "attention"
            self.attention(f"{prefix}.attn", n, layer.attention)
            if layer.post_attn_norm:
                self.norm(f"{prefix}.post_attn_norm", n, h)
            self._residual_scale(f"{prefix}.attn_residual_scale", n, layer)
        if layer.mlp is None:  # a mixer alone (Mamba-2, Nemotron-H): its add, fused into the next norm or not
            if not fuse_add:
                self.elementwise(f"{prefix}.attn_residual_add", n, T * h, 2, 1, 1)
            return
        if layer.attention is not None:  # (an MLP alone runs behind the input norm)
            if layer.parallel:
                if layer.pre_mlp_norm:
                    self.norm(f"{prefix}.pre_mlp_norm", n, h)
            elif fuse_add:
                self._add_norm(f"{prefix}.pre_mlp_add_norm", n)  # x += attn out; norm(x)
            else:
                self.elementwise(f"{prefix}.attn_residual_add", n, T * h, 2, 1, 1)
                if layer.pre_mlp_norm:
                    self.norm(f"{prefix}.pre_mlp_norm", n, h)
        self.role = "mlp"
        if isinstance(layer.mlp, MoESpec):
            self.moe(f"{prefix}.mlp", n, layer.mlp)
        else:
            self.mlp(f"{prefix}.mlp", n, layer.mlp)
        if layer.post_mlp_norm:
            self.norm(f"{prefix}.post_mlp_norm", n, h)
        self._residual_scale(f"{prefix}.mlp_residual_scale", n, layer)
        if layer.parallel:
            self.elementwise(f"{prefix}.residual_add", 2 * n, T * h, 2, 1, 1)  # x + attn + mlp: two adds
        elif not fuse_add:
            self.elementwise(f"{prefix}.mlp_residual_add", n, T * h, 2, 1, 1)

    def _fuses_adds(self, layer: LayerSpec) -> bool:
        """With fusion, each residual add runs inside the next norm's kernel (fused add + norm), as serving
        engines do; parallel blocks (attention and MLP both read x) and layers without an input norm (OLMo 2's
        norms follow the branches) keep their adds."""
        return self.fusion not in _UNFUSED and not layer.parallel and layer.input_norm

    def _residual_scale(self, name: str, count: int, layer: LayerSpec) -> None:
        """Granite's branch_out * residual_multiplier before the residual add: out[T, h] = y[T, h] * m.

        approximation: its own kernel under every fusion policy but "full" (serving engines run it as
        PyTorch writes it; an add it could ride in is fused into the next norm).
        """
        if layer.residual_scale:
            self.elementwise(name, count, self.T * self.h, 1, 1, 1)

    def _add_norm(self, name: str, count: int) -> None:
        """x = x + y; out = norm(x): reads x and y, writes x and out, one kernel."""
        per_element = 8 if self.model.norm == "layernorm" else 5
        self.add(formula("elementwise")(name, count, elements=self.T * self.h, inputs=2, outputs=2,
                                        flops_per_element=per_element, ab=self.ab, kind="norm",
                                        params=self.model.norm_params))


def _gemm_table_dtype(weight_dtype: str, act_dtype: str) -> str | None:
    """The measured GEMM table of a (weight, activation) pair, as llmsim's cost model reads the pair: bf16
    (fp16 reads it too: the same tensor-core rate and bytes); fp8 weights and fp8 activations: "fp8" (W8A8);
    weight-only with 16-bit activations: "int8_wo", "int4_wo", "fp8_wo" (dequantizing GEMMs; no fp8_wo table
    ships, so those fall back to the roofline and say so); nvfp4 weights and activations: "nvfp4" (W4A4); None
    for any other pair (float32 or int activations, 16-bit weights with 8-bit activations): unmeasured_gemm_lane
    names it."""
    if act_dtype in ("bfloat16", "float16"):
        return {"bfloat16": "bf16", "float16": "bf16", "fp8": "fp8_wo", "int8": "int8_wo", "int4": "int4_wo",
                "mxfp4": "mxfp4_wo", "nvfp4": "nvfp4_wo"}.get(weight_dtype)
    if act_dtype == weight_dtype and act_dtype in ("fp8", "nvfp4"):
        return act_dtype
    return None


def unmeasured_gemm_lane(weight_dtype: str, act_dtype: str) -> str:
    """The name of a (weight, activation) pair no measured GEMM table holds (float32, int8 W8A8, 16-bit weights
    with fp8 activations, ...): its GEMMs still name a kernel, so that a result says why they are on the
    roofline ("no float32 GEMM table for engine vllm on h100-sxm") instead of leaving them there silently."""
    if weight_dtype != act_dtype:
        return f"{weight_dtype} weights x {act_dtype} activations"
    bits = round(dtype_bytes(act_dtype) * 8)
    return f"{act_dtype} (W{bits}A{bits})" if act_dtype.startswith("int") else act_dtype
