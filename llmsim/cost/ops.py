"""Op: one kernel of one layer type, and the registry of formulas that make ops.

Each formula is one small function with a shape comment, registered once by name (a duplicate name
is refused). Values are per run of the kernel; `count` says how many times it runs in a forward pass.
Quantities are `Expr`s, so every number can print the formula that made it; workload values may be
numpy arrays and every formula broadcasts.

FLOPs: 2 per multiply-add (as torch.utils.flop_counter counts matmuls). `matmul_flops` are matrix
products (tensor cores), `vector_flops` everything else.
approximation: vector FLOPs per element are nominal: RMSNorm 4, LayerNorm 7, softmax 5, SiLU 4,
GELU 8, multiply/add 1, rotary 3 per rotated element.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .symbolic import Expr, scall

OpKind = Literal["matmul", "attention", "norm", "elementwise", "embedding", "routing", "cache", "communication"]
OP_KINDS: tuple[str, ...] = (
    "matmul", "attention", "norm", "elementwise", "embedding", "routing", "cache", "communication",
)
QUANTITIES = ("matmul_flops", "vector_flops", "bytes_read", "bytes_written")

_ZERO = Expr.const(0)


@dataclass(frozen=True, slots=True)
class Op:
    """One kernel: per-run FLOPs and bytes, run `count` times per forward pass."""

    name: str
    kind: str
    count: int
    formulas: dict[str, Expr]
    param_count: int = 0
    param_bytes: float = 0.0
    precision: str = "bf16"
    launches: int = 1
    kv_window: int | None = None
    collective: str | None = None
    group_size: int = 1
    weight_layout: str = "out_in"  # matmuls: W[N, K] as nn.Linear ("out_in") or W[K, N] ("in_out")
    matmul_depth: int = 0  # matmuls with weights: the inner dimension K (0: not stated)

    @property
    def matmul_flops(self) -> Any:
        return self.formulas["matmul_flops"].value

    @property
    def vector_flops(self) -> Any:
        return self.formulas["vector_flops"].value

    @property
    def bytes_read(self) -> Any:
        return self.formulas["bytes_read"].value

    @property
    def bytes_written(self) -> Any:
        return self.formulas["bytes_written"].value

    @property
    def weight_bytes(self) -> Any:
        """The part of bytes_read that is weights (for MoE experts: the experts the batch touches)."""
        return self.formulas["weight_bytes"].value

    @property
    def matmul_rows(self) -> Any:
        """Rows M of the matrix product x[M, K] @ W[K, N] one weight matrix sees (None for non-matmuls):
        decode's thin shapes (small M) reach less of the roofline on some devices (hardware matmul_rows)."""
        expr = self.formulas.get("matmul_rows")
        return None if expr is None else expr.value

    @property
    def matmul_cols(self) -> Any:
        """Output columns N of that product (None for non-matmuls): wide outputs (an LM head) reach less
        of the roofline than square ones on some devices (hardware matmul_rows tables with cols)."""
        expr = self.formulas.get("matmul_cols")
        return None if expr is None else expr.value

    @property
    def comm_bytes(self) -> Any:
        """Message bytes of a collective (0 for every other op)."""
        return self.formulas["comm_bytes"].value

    @property
    def flops(self) -> Any:
        return self.matmul_flops + self.vector_flops

    @property
    def bytes(self) -> Any:
        return self.bytes_read + self.bytes_written

    @property
    def arithmetic_intensity(self) -> Any:
        """FLOPs per byte of memory traffic (inf for an op that moves no bytes)."""
        total_bytes = np.asarray(self.bytes, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(total_bytes > 0, np.asarray(self.flops, dtype=float) / total_bytes, np.inf)

    def formula(self, quantity: str = "matmul_flops") -> str:
        """`quantity = symbols = numbers = value`, e.g. `matmul_flops = 2*T*K*N = 2*8*4096*4096 = ...`."""
        if quantity not in self.formulas:
            raise KeyError(f"quantity={quantity!r}; choose one of {', '.join(self.formulas)}")
        expr = self.formulas[quantity]
        value = expr.value
        shown = f"{float(value):.6g}" if np.ndim(value) == 0 else f"array of shape {np.shape(value)}"
        return f"{quantity} = {expr.symbolic()} = {expr.substituted()} = {shown}"

    def scaled(self, **changes: Any) -> Op:
        """A copy with some fields replaced (dataclass replace)."""
        from dataclasses import replace

        return replace(self, **changes)


OpFormula = Callable[..., Op]
_REGISTRY: dict[str, OpFormula] = {}


def register(kind_name: str) -> Callable[[OpFormula], OpFormula]:
    """Register a formula under `kind_name`; a second registration of the same name is an error."""

    def wrap(fn: OpFormula) -> OpFormula:
        if kind_name in _REGISTRY:
            raise ValueError(f"op formula {kind_name!r} is already registered")
        _REGISTRY[kind_name] = fn
        return fn

    return wrap


def formula(kind_name: str) -> OpFormula:
    """The registered formula of that name."""
    return _REGISTRY[kind_name]


def registered_formulas() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def _op(name: str, kind: str, count: int, *, matmul_flops: Expr = _ZERO, vector_flops: Expr = _ZERO,
        bytes_read: Expr = _ZERO, bytes_written: Expr = _ZERO, weight_bytes: Expr = _ZERO,
        comm_bytes: Expr = _ZERO, matmul_rows: Expr | None = None, matmul_cols: Expr | None = None,
        **extra: Any) -> Op:
    formulas = {
        "matmul_flops": matmul_flops,
        "vector_flops": vector_flops,
        "bytes_read": bytes_read,
        "bytes_written": bytes_written,
        "weight_bytes": weight_bytes,
        "comm_bytes": comm_bytes,
    }
    if matmul_rows is not None:
        formulas["matmul_rows"] = matmul_rows
    if matmul_cols is not None:
        formulas["matmul_cols"] = matmul_cols
    return Op(name=name, kind=kind, count=count, formulas=formulas, **extra)


# ---- matmuls -------------------------------------------------------------------------------------
@register("linear")
def linear(name: str, count: int, *, T: Expr, K: Expr, N: Expr, wb: Expr, ab: Expr, bias: bool = False,
           owns_weight: bool = True, param_bytes_per: float | None = None, precision: str = "bf16",
           weight_layout: str = "out_in") -> Op:
    """y[T, N] = x[T, K] @ W[K, N] (+ b[N]). Weights read once per run."""
    weight = K * N * wb
    params = int(value_scalar(K) * value_scalar(N) + (value_scalar(N) if bias else 0)) if owns_weight else 0
    per = param_bytes_per if param_bytes_per is not None else float(value_scalar(wb))
    return _op(
        name, "matmul", count,
        matmul_flops=2 * T * K * N,
        vector_flops=T * N if bias else _ZERO,
        bytes_read=weight + T * K * ab,
        bytes_written=T * N * ab,
        weight_bytes=weight,
        matmul_rows=T,
        matmul_cols=N,
        param_count=params,
        param_bytes=params * per,
        precision=precision,
        weight_layout=weight_layout,
        matmul_depth=int(value_scalar(K)),
    )


@register("expert_linear")
def expert_linear(name: str, count: int, *, T: Expr, k: Expr, E: Expr, K: Expr, N: Expr, wb: Expr, ab: Expr,
                  bias: bool = False, precision: str = "bf16", weight_layout: str = "out_in") -> Op:
    """y[T*k, N] = x[T*k, K] @ W_e[K, N] over the experts the T tokens chose (k each).

    Weight bytes are those of the distinct experts touched.
    approximation: uniform routing; expected distinct experts = E * (1 - (1 - k/E)^T).
    """
    touched_value = E.value * (1.0 - (1.0 - k.value / E.value) ** np.asarray(T.value, dtype=float))
    touched = scall("experts_touched", touched_value, T, k, E)
    weight = touched * K * N * wb
    params = int(value_scalar(E) * (value_scalar(K) * value_scalar(N) + (value_scalar(N) if bias else 0)))
    return _op(
        name, "matmul", count,
        matmul_flops=2 * T * k * K * N,
        vector_flops=T * k * N if bias else _ZERO,
        bytes_read=weight + T * k * K * ab,
        bytes_written=T * k * N * ab,
        weight_bytes=weight,
        matmul_rows=T * k / touched,  # rows per expert matrix: the T*k routed rows over the experts touched
        matmul_cols=N,
        param_count=params,
        param_bytes=params * float(value_scalar(wb)),
        precision=precision,
        weight_layout=weight_layout,
        matmul_depth=int(value_scalar(K)),
    )


# ---- attention -------------------------------------------------------------------------------------
@register("attention_scores")
def attention_scores(name: str, count: int, *, B: Expr, H: Expr, Sq: Expr, Skv: Expr, d: Expr, kvh: Expr,
                     ab: Expr, kvb: Expr, precision: str = "bf16", kv_window: int | None = None) -> Op:
    """scores[B, H, Sq, Skv] = Q[B, H, Sq, d] @ K^T[B, kvh, d, Skv] (unfused: scores reach memory)."""
    return _op(
        name, "attention", count,
        matmul_flops=2 * B * H * Sq * Skv * d,
        bytes_read=B * H * Sq * d * ab + B * kvh * Skv * d * kvb,
        bytes_written=B * H * Sq * Skv * ab,
        precision=precision, kv_window=kv_window,
    )


@register("softmax")
def softmax(name: str, count: int, *, B: Expr, H: Expr, Sq: Expr, Skv: Expr, ab: Expr, params: int = 0,
            kv_window: int | None = None, eager: bool = False) -> Op:
    """probs[B, H, Sq, Skv] = softmax(scores) over the last axis (reads and writes the scores).

    eager=True: as transformers' eager attention runs it, one kernel per PyTorch op on the scores:
    scale (a read, a written), + mask (a, a), softmax into float32 (a, 4), .to(dtype) (4, a; none when
    a = 4), with a the activation bytes per element.
    """
    scores = B * H * Sq * Skv
    read, written, launches = scores * ab, scores * ab, 1
    if eager:
        cast = float(value_scalar(ab)) != 4.0
        read = scores * (3 * ab + (4 if cast else 0))
        written = scores * (2 * ab + 4 + (ab if cast else 0))
        launches = 4 if cast else 3
    return _op(
        name, "attention", count,
        vector_flops=5 * scores,
        bytes_read=read,
        bytes_written=written,
        param_count=params, param_bytes=params * float(value_scalar(ab)), kv_window=kv_window, launches=launches,
    )


@register("cast")
def cast(name: str, count: int, *, bytes_read: Expr, bytes_written: Expr, launches: int = 1, kind: str = "attention",
         kv_window: int | None = None) -> Op:
    """Tensors copied to another dtype (e.g. 16-bit Q, K, V to float32): their bytes read in the old
    dtype and written in the new one, one kernel per tensor (`launches`)."""
    return _op(name, kind, count, bytes_read=bytes_read, bytes_written=bytes_written, kv_window=kv_window,
               launches=launches)


@register("sdpa_softmax")
def sdpa_softmax(name: str, count: int, *, B: Expr, H: Expr, Sq: Expr, Skv: Expr, ab: Expr, masked: bool,
                 kv_window: int | None = None) -> Op:
    """probs[B, H, Sq, Skv] as PyTorch's SDPA math kernel computes them on float32 scores, one kernel
    per op (bytes read / written per score element):
        + causal mask, in place (masked only) 4 / 4 | softmax 4 / 4 | isneginf(scores) 4 / 1 |
        all(-1) 1 / - | where(all-masked row, 0, probs) 4 / 4 | copy of the probs (a != 4 only) 4 / 4
    (the guard keeps fully masked rows at zero: aten::_safe_softmax).
    """
    scores = B * H * Sq * Skv
    cast = float(value_scalar(ab)) != 4.0
    read = (4 if masked else 0) + 13 + (4 if cast else 0)
    written = (4 if masked else 0) + 9 + (4 if cast else 0)
    return _op(
        name, "attention", count,
        vector_flops=(5 + 3) * scores,  # softmax 5 + mask test, reduction and select 3 (nominal)
        bytes_read=scores * read,
        bytes_written=scores * written,
        kv_window=kv_window, launches=4 + int(masked) + int(cast),
    )


@register("repeat_kv")
def repeat_kv(name: str, count: int, *, B: Expr, H: Expr, kvh: Expr, Skv: Expr, kv_values: Expr, kvb: Expr,
              kv_window: int | None = None) -> Op:
    """K, V [B, kvh, Skv, d] -> [B, H, Skv, d] copies (transformers' eager attention with GQA/MQA):
    two kernels reading the cached K and V and writing them once per query head."""
    return _op(
        name, "cache", count,
        bytes_read=B * kvh * Skv * kv_values * kvb,
        bytes_written=B * H * Skv * kv_values * kvb,
        kv_window=kv_window, launches=2,
    )


@register("attention_context")
def attention_context(name: str, count: int, *, B: Expr, H: Expr, Sq: Expr, Skv: Expr, dv: Expr, kvh: Expr,
                      ab: Expr, kvb: Expr, precision: str = "bf16", kv_window: int | None = None) -> Op:
    """out[B, H, Sq, dv] = probs[B, H, Sq, Skv] @ V[B, kvh, Skv, dv]."""
    return _op(
        name, "attention", count,
        matmul_flops=2 * B * H * Sq * Skv * dv,
        bytes_read=B * H * Sq * Skv * ab + B * kvh * Skv * dv * kvb,
        bytes_written=B * H * Sq * dv * ab,
        precision=precision, kv_window=kv_window,
    )


@register("flash_attention")
def flash_attention(name: str, count: int, *, B: Expr, H: Expr, Sq: Expr, Skv: Expr, pairs: Expr, d: Expr,
                    dv: Expr, kvh: Expr, kv_values: Expr, ab: Expr, kvb: Expr, params: int = 0,
                    precision: str = "bf16", kv_window: int | None = None) -> Op:
    """out[B, H, Sq, dv] = softmax(Q K^T) V fused: no scores in memory; only the (query, key) `pairs`
    inside the causal mask and the window are computed. Q read once, each key's `kv_values` (K and V,
    or MLA's shared latent) read once, out written once."""
    return _op(
        name, "attention", count,
        matmul_flops=2 * B * H * pairs * (d + dv),
        vector_flops=5 * B * H * pairs,
        bytes_read=B * H * Sq * d * ab + B * kvh * Skv * kv_values * kvb,
        bytes_written=B * H * Sq * dv * ab,
        param_count=params, param_bytes=params * float(value_scalar(ab)), precision=precision,
        kv_window=kv_window,
    )


# ---- everything else ----------------------------------------------------------------------------------
@register("norm")
def norm(name: str, count: int, *, T: Expr, n: Expr, ab: Expr, kind: str, params_per_norm: int,
         norms: int = 1) -> Op:
    """y[T, n] = norm(x[T, n]) * w (+ b): RMSNorm 4 or LayerNorm 7 vector FLOPs per element."""
    per_element = 7 if kind == "layernorm" else 4
    return _op(
        name, "norm", count,
        vector_flops=per_element * T * n,
        bytes_read=T * n * ab,
        bytes_written=T * n * ab,
        param_count=params_per_norm * norms, param_bytes=params_per_norm * norms * float(value_scalar(ab)),
    )


@register("elementwise")
def elementwise(name: str, count: int, *, elements: Expr, inputs: float, outputs: float, flops_per_element: int,
                ab: Expr, kind: str = "elementwise", params: int = 0, kv_window: int | None = None,
                launches: int = 1) -> Op:
    """out[elements] = f(in_1[elements], ..., in_inputs[elements]); `outputs` tensors written (over all
    `launches` kernels when one op stands for a sequence of them)."""
    return _op(
        name, kind, count,
        vector_flops=flops_per_element * elements,
        bytes_read=inputs * elements * ab,
        bytes_written=outputs * elements * ab,
        param_count=params, param_bytes=params * float(value_scalar(ab)), kv_window=kv_window, launches=launches,
    )


@register("eager_rmsnorm")
def eager_rmsnorm(name: str, count: int, *, T: Expr, n: Expr, ab: Expr, params_per_norm: int, norms: int = 1) -> Op:
    """y[T, n] = w * (x.float() * rsqrt(x.float().pow(2).mean(-1) + eps)).to(dtype), as transformers'
    eager RMSNorm runs it: one kernel per PyTorch op, float32 intermediates. Bytes read / written per
    element, with a the activation bytes (the two casts only when a != 4):
        to(float32) a / 4 | pow 4 / 4 | mean 4 / - | x * rsqrt 4 / 4 | to(dtype) 4 / a | w * x a / a
    (the eps add and rsqrt run on [T, 1]: launches only).
    approximation: Gemma's (1 + w) variant, which multiplies in float32 before one cast, counts the same.
    """
    cast = float(value_scalar(ab)) != 4.0
    elements = T * n
    return _op(
        name, "norm", count,
        vector_flops=4 * elements,
        bytes_read=elements * (12 + ab + (ab + 4 if cast else 0)),
        bytes_written=elements * (8 + ab + (4 + ab if cast else 0)),
        param_count=params_per_norm * norms, param_bytes=params_per_norm * norms * float(value_scalar(ab)),
        launches=8 if cast else 6,
    )


@register("embedding")
def embedding(name: str, count: int, *, T: Expr, h: Expr, rows: int, ab: Expr, add: bool = False) -> Op:
    """out[T, h] = table[rows, h][ids[T]] (+ x[T, h] when added to the hidden state)."""
    return _op(
        name, "embedding", count,
        vector_flops=T * h if add else _ZERO,
        bytes_read=T * h * ab * (2 if add else 1),
        bytes_written=T * h * ab,
        weight_bytes=T * h * ab,
        param_count=rows * int(value_scalar(h)), param_bytes=rows * int(value_scalar(h)) * float(value_scalar(ab)),
    )


@register("kv_append")
def kv_append(name: str, count: int, *, B: Expr, Snew: Expr, values: Expr, kvb: Expr, ab: Expr,
              cached: Expr | None = None, kv_window: int | None = None) -> Op:
    """cache[B, L + Snew, values] <- new[B, Snew, values]: the new tokens' K and V written to the cache.

    With `cached` (transformers' DynamicCache, which concatenates): the L cached tokens are read and
    written again into a new tensor every step as well (at most W - 1 tokens with a sliding window W:
    `kv_window`, so that decode sums stop its growth where the window fills).
    """
    read = B * Snew * values * ab
    written = B * Snew * values * kvb
    if cached is not None:
        read = read + B * cached * values * kvb
        written = written + B * cached * values * kvb
    return _op(name, "cache", count, bytes_read=read, bytes_written=written,
               kv_window=kv_window if cached is not None else None)


COLLECTIVES = ("all_reduce", "all_gather", "all_to_all", "p2p")


@register("collective")
def collective(name: str, count: int, *, kind: str, message_bytes: Expr, group: int) -> Op:
    """A collective among `group` GPUs. message_bytes: all_reduce, the tensor each GPU holds;
    all_gather, the gathered result; all_to_all, what each GPU sends plus keeps; p2p, the tensor sent."""
    if kind not in COLLECTIVES:
        raise ValueError(f"collective kind {kind!r}; choose one of {', '.join(COLLECTIVES)}")
    return _op(name, "communication", count, comm_bytes=message_bytes, collective=kind, group_size=group)


def value_scalar(x: Expr | float) -> float:
    """The scalar value of a model-size symbol (sizes never vary across a sweep)."""
    value = x.value if isinstance(x, Expr) else x
    return float(np.asarray(value).reshape(-1)[0]) if np.ndim(value) else float(value)
