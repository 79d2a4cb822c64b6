"""aten op -> FLOPs and bytes: one small formula per op family, registered by aten packet name.

FLOPs count 2 per multiply-add, as torch.utils.flop_counter.FlopCounterMode does for matmuls,
convolutions and attention. Bytes are what one eager kernel moves: every distinct input storage read
once (a weight used twice by an op: once; an expanded bias: its storage) plus the outputs written.
Views and reshapes move nothing. An aten op without a formula is counted as a memory-bound copy of its
inputs and outputs, and the caller lists it (never dropped silently).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from math import prod

from .recorder import RecordedOp, TensorInfo


@dataclass(frozen=True, slots=True)
class AtenCost:
    """Per call: the op kind (cost.op OP_KINDS plus "view"), FLOPs split as in Op, bytes, and whether a
    formula knew the op."""

    kind: str
    matmul_flops: float
    vector_flops: float
    bytes_read: float
    bytes_written: float
    known: bool = True
    gemm: tuple[int, int, int] | None = None  # (M, N, K) of a plain 2-D matrix product (or implicit-GEMM conv)
    # fused attention: (batch, query heads, KV heads, query length, key length, head dim, value head dim, causal)
    attention: tuple[int, int, int, int, int, int, int, bool] | None = None


_FORMULAS: dict[str, Callable[[RecordedOp], AtenCost]] = {}


def _register(*names: str) -> Callable:
    def wrap(fn: Callable[[RecordedOp], AtenCost]) -> Callable[[RecordedOp], AtenCost]:
        for name in names:
            _FORMULAS[name] = fn
        return fn
    return wrap


def packet(aten: str) -> str:
    """'aten.convolution.default' -> 'convolution'."""
    parts = aten.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def read_bytes(op: RecordedOp) -> float:
    """Each distinct input storage once (a weight read twice by one op counts once)."""
    seen: dict[int, int] = {}
    for t in op.inputs:
        seen[t.ident] = max(seen.get(t.ident, 0), t.bytes)
    return float(sum(seen.values()))


def written_bytes(op: RecordedOp) -> float:
    return float(sum(t.bytes for t in op.outputs))


def _numel(t: TensorInfo) -> int:
    return prod(t.shape)


def _tensor_args(op: RecordedOp) -> list[TensorInfo]:
    return [a for a in op.args if isinstance(a, TensorInfo)]


def _moves(op: RecordedOp, kind: str, matmul_flops: float = 0.0, vector_flops: float = 0.0) -> AtenCost:
    return AtenCost(kind, float(matmul_flops), float(vector_flops), read_bytes(op), written_bytes(op))


@_register("mm", "addmm", "bmm", "baddbmm")
def _matmul(op: RecordedOp) -> AtenCost:
    # a[..., M, K] @ b[..., K, N] -> out[..., M, N]: 2*M*N*K per batch entry (bias of addmm not counted, as
    # FlopCounterMode); K from the first matrix operand (the last of the tensor args before them for addmm)
    tensors = _tensor_args(op)
    a = tensors[-2]
    cost = _moves(op, "matmul", 2 * _numel(op.outputs[0]) * a.shape[-1])
    if len(a.shape) == 2:  # mm / addmm: x[M, K] @ W[K, N], a measured GEMM table's coordinates
        cost = replace(cost, gemm=(a.shape[0], op.outputs[0].shape[-1], a.shape[1]))
    return cost


@_register("convolution", "_convolution", "cudnn_convolution", "mkldnn_convolution")
def _convolution(op: RecordedOp) -> AtenCost:
    # input[N, Cin, *spatial_in], weight[Cout, Cin/groups, *kernel] (transposed: [Cin, Cout/groups, *kernel]):
    # 2 * N * prod(weight) * prod(spatial), spatial = the output's (the input's when transposed), as
    # FlopCounterMode's conv_flop_count = 2 * N * Cout * prod(out spatial) * Cin/groups * prod(kernel)
    x, w = op.args[0], op.args[1]
    transposed = bool(op.args[6]) if len(op.args) > 6 else False
    spatial = x.shape[2:] if transposed else op.outputs[0].shape[2:]
    cost = _moves(op, "matmul", 2 * x.shape[0] * prod(w.shape) * prod(spatial))
    groups = op.args[8] if len(op.args) > 8 else 1
    if not transposed and groups == 1:
        # as an implicit GEMM: M = N * prod(out spatial) output pixels, N = Cout, K = Cin * prod(kernel)
        cost = replace(cost, gemm=(x.shape[0] * prod(spatial), w.shape[0], prod(w.shape[1:])))
    return cost


_SDPA = ("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
         "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu",
         "_flash_attention_forward", "_efficient_attention_forward", "scaled_dot_product_attention")


@_register(*_SDPA)
def _attention(op: RecordedOp) -> AtenCost:
    # q[B, H, L, E], k[B, H, S, E], v[B, H, S, Ev]: 2*B*H*L*S*E (q @ k^T) + 2*B*H*L*S*Ev (p @ v), the full
    # L x S as FlopCounterMode counts; softmax ~5 vector FLOPs per score. is_causal=True: the flash kernel
    # skips the masked blocks, so only the scores it keeps count: query i sees keys 0..i (top-left
    # aligned, as SDPA's is_causal), sum_i min(i + 1, S) = L*(L+1)/2 for L = S (DESIGN's flash convention;
    # FlopCounterMode counts the full L x S here too, so a causal model's traced FLOPs are below its count
    # by 2*B*H*(L*S - kept)*(E + Ev): tests/test_trace_zoo.py pins it on SD 1.5's CLIP text encoder).
    # approximation: an explicit mask (attn_mask) is not read (it is data): the full L x S is counted, as
    # FlopCounterMode counts it and a math or memory-efficient kernel computes it.
    # The flash variants store [B, L, H, E] batch-first: the same counts
    q, k, v = _tensor_args(op)[:3]
    if op.aten.split(".")[1] in ("_flash_attention_forward", "_efficient_attention_forward"):
        b, l_, h, e = q.shape
        s, ev, hkv = k.shape[1], v.shape[-1], k.shape[2]
    else:
        b, h, l_, e = q.shape[0], prod(q.shape[1:-2]), q.shape[-2], q.shape[-1]
        s, ev, hkv = k.shape[-2], v.shape[-1], prod(k.shape[1:-2])
    causal = _is_causal(op)
    if causal:
        kept = min(l_, s) * (min(l_, s) + 1) // 2 + max(l_ - s, 0) * s  # sum over i < L of min(i + 1, S)
        scores = b * h * kept
    else:
        scores = b * h * l_ * s
    # bytes: q, k, v read and the output written once (the flash kernel keeps scores on chip); the
    # logsumexp and RNG outputs of the training variants are written too
    cost = _moves(op, "attention", 2 * scores * e + 2 * scores * ev, 5 * scores)
    return replace(cost, attention=(b, h, hkv, l_, s, e, ev, causal))


def _is_causal(op: RecordedOp) -> bool:
    """SDPA's is_causal: a keyword, or the 6th positional argument (q, k, v, attn_mask, dropout_p, is_causal)."""
    if "is_causal" in op.kwargs:
        return bool(op.kwargs["is_causal"])
    return packet(op.aten) == "scaled_dot_product_attention" and len(op.args) > 5 and bool(op.args[5])


# vector FLOPs per output element of the non-pointwise families (approximation: a few per element, as
# torch's own analytic counters do not count them at all)
_NORMS = {"native_layer_norm": 5, "native_group_norm": 5, "native_batch_norm": 5, "_native_batch_norm_legit": 5,
          "_native_batch_norm_legit_no_training": 5, "_native_batch_norm_legit_functional": 5,
          "_fused_rms_norm": 4, "rms_norm": 4, "layer_norm": 5, "group_norm": 5, "batch_norm": 5}
_SOFTMAX = ("_softmax", "_log_softmax", "softmax", "log_softmax", "_safe_softmax")


@_register(*_NORMS)
def _norm(op: RecordedOp) -> AtenCost:
    # x[..., D]: mean, variance, normalise, scale and shift ~5 FLOPs per element (RMS: ~4)
    return _moves(op, "norm", vector_flops=_NORMS[packet(op.aten)] * _numel(_tensor_args(op)[0]))


@_register(*_SOFTMAX)
def _softmax(op: RecordedOp) -> AtenCost:
    # max, subtract, exp, sum, divide: ~5 FLOPs per element
    return _moves(op, "elementwise", vector_flops=5 * _numel(op.outputs[0]))


@_register("embedding", "index_select", "gather", "index", "take")
def _gather(op: RecordedOp) -> AtenCost:
    # out[..., D] gathered from table[V, D] by indices: reads the rows it gathers (out's bytes) and the
    # indices, not the whole table
    tensors = _tensor_args(op)
    out = written_bytes(op)
    indices = sum(t.bytes for t in tensors[1:]) if packet(op.aten) != "embedding" else tensors[1].bytes
    if packet(op.aten) == "index" and len(op.args) > 1 and isinstance(op.args[1], (list, tuple)):
        indices = sum(t.bytes for t in op.args[1] if isinstance(t, TensorInfo))
    return AtenCost("embedding", 0.0, 0.0, float(out + indices), out)


@_register("max_pool2d_with_indices", "max_pool3d_with_indices", "max_pool1d", "max_pool2d", "avg_pool1d",
           "avg_pool2d", "avg_pool3d", "_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_max_pool2d",
           "_adaptive_avg_pool1d")
def _pool(op: RecordedOp) -> AtenCost:
    # every input element is read and compared/added about once per window it falls in
    # (approximation: one FLOP per input element for non-overlapping windows)
    return _moves(op, "elementwise", vector_flops=_numel(_tensor_args(op)[0]))


@_register("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "upsample_bilinear2d",
           "upsample_bicubic2d", "upsample_linear1d", "upsample_trilinear3d", "_upsample_nearest_exact2d",
           "_upsample_bilinear2d_aa")
def _upsample(op: RecordedOp) -> AtenCost:
    # each output element interpolates 2^d neighbours (linear) / 4^d (cubic) / copies one (nearest)
    name = packet(op.aten)
    dims = len(op.outputs[0].shape) - 2
    points = 1 if "nearest" in name else (4 ** dims if "bicubic" in name else 2 ** dims)
    return _moves(op, "elementwise", vector_flops=2 * points * _numel(op.outputs[0]) if points > 1 else 0)


@_register("cat", "stack", "clone", "_to_copy", "copy_", "copy", "contiguous", "constant_pad_nd", "repeat",
           "fill_", "zero_", "zeros_like", "ones_like", "full_like", "new_zeros", "new_ones",
           "where", "masked_fill", "index_put", "index_put_", "scatter", "scatter_add", "roll", "flip", "tril",
           "triu", "arange", "zeros", "ones", "full", "rand", "randn", "bernoulli", "native_dropout",
           "lift_fresh", "scalar_tensor", "_unsafe_index", "split_with_sizes_copy", "pad")
def _copy(op: RecordedOp) -> AtenCost:
    # data movement: inputs read, outputs written, no arithmetic
    return _moves(op, "elementwise")


_REDUCTIONS = ("sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "var", "std", "var_mean",
               "prod", "norm", "linalg_vector_norm", "logsumexp", "cumsum", "any", "all", "topk", "sort")


@_register(*_REDUCTIONS)
def _reduce(op: RecordedOp) -> AtenCost:
    # one FLOP per input element (var/std: ~3)
    n = _numel(_tensor_args(op)[0]) if _tensor_args(op) else 0
    return _moves(op, "elementwise", vector_flops=(3 if packet(op.aten) in ("var", "std", "var_mean") else 1) * n)


# element-wise ops (torch's `pointwise` tag covers most): FLOPs per output element
_TRANSCENDENTAL = {"gelu": 8, "silu": 4, "sigmoid": 4, "tanh": 4, "exp": 1, "log": 1, "erf": 4, "softplus": 4,
                   "mish": 8, "hardswish": 4, "elu": 4, "rsqrt": 1, "sqrt": 1, "pow": 1}
_POINTWISE_EXTRA = ("relu", "relu_", "gelu", "silu", "silu_", "hardtanh", "hardtanh_", "leaky_relu", "hardswish",
                    "hardsigmoid", "clamp", "clamp_min", "clamp_max", "threshold", "sigmoid", "tanh", "mish",
                    "gelu_", "elu", "softplus")


def _pointwise(op: RecordedOp) -> AtenCost:
    # out[...]: a few FLOPs per output element (approximation: 1 for arithmetic, more for transcendentals)
    per = _TRANSCENDENTAL.get(packet(op.aten).rstrip("_"), 1)
    return _moves(op, "elementwise", vector_flops=per * sum(_numel(t) for t in op.outputs[:1]))


for _name in _POINTWISE_EXTRA:
    _FORMULAS.setdefault(_name, _pointwise)

# ops that only describe metadata or aliasing (no kernel) beyond those flagged is_view by torch
_NO_KERNEL = frozenset({"view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "unsqueeze",
                        "squeeze", "slice", "select", "as_strided", "alias", "detach", "split", "split_with_sizes",
                        "unbind", "chunk", "narrow", "flatten", "unflatten", "view_as", "expand_as", "numpy_T",
                        "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_same_size", "_reshape_alias",
                        "lift_fresh_copy_", "empty_strided", "empty", "empty_like", "new_empty",
                        "new_empty_strided", "resize_", "set_", "_assert_async", "_local_scalar_dense",
                        "is_nonzero", "item", "_assert_tensor_metadata", "detach_", "_version"})


def aten_cost(op: RecordedOp) -> AtenCost:
    """The op's cost per call (see the module docstring)."""
    name = packet(op.aten)
    if op.is_view or name in _NO_KERNEL:
        return AtenCost("view", 0.0, 0.0, 0.0, 0.0)
    formula = _FORMULAS.get(name)
    if formula is not None:
        return formula(op)
    if "pointwise" in op.tags:
        return _pointwise(op)
    if "reduction" in op.tags:
        return _reduce(op)
    if "view_copy" in op.tags:  # diagonal_copy, permute_copy, ...: a view materialised
        return _copy(op)
    # unknown: a memory-bound copy of its inputs and outputs (the caller lists it)
    return AtenCost("elementwise", 0.0, 0.0, read_bytes(op), written_bytes(op), known=False)
