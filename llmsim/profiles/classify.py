"""Which op class a kernel belongs to, from its name, and the precision a name or a dtype implies.

aten ops (torch.profiler) are classed by their exact name; GPU kernels (Nsight, torch.profiler CUDA
traces) by words in their mangled or demangled names. approximation: a GPU kernel name is a library's
choice, so the word lists cover cuBLAS/CUTLASS GEMMs, FlashAttention/cuDNN attention and PyTorch's own
element-wise kernels; anything else is "other".
"""

from __future__ import annotations

import re

ATEN_MATMUL = frozenset({"mm", "addmm", "bmm", "baddbmm", "addmv", "mv", "dot", "_scaled_mm", "_grouped_mm",
                         "_weight_int8pack_mm", "_addmm_activation"})
ATEN_ATTENTION_PREFIXES = ("_scaled_dot_product", "_flash_attention", "_efficient_attention")
ATEN_ATTENTION = frozenset({"softmax", "_softmax", "_safe_softmax"})
# ops with no kernel of their own: views, metadata and the composite ops that dispatch to a child op
ATEN_HOST = frozenset({
    "view", "reshape", "_reshape_alias", "_unsafe_view", "t", "transpose", "permute", "as_strided", "unsqueeze",
    "squeeze", "expand", "slice", "select", "alias", "detach", "empty", "empty_like", "empty_strided",
    "resolve_conj", "resolve_neg", "lift_fresh", "split", "split_with_sizes", "chunk", "unbind", "narrow",
    "contiguous", "to", "type_as", "linear", "matmul", "scaled_dot_product_attention", "dropout", "einsum",
    "flatten", "view_as", "expand_as", "unflatten", "movedim", "_has_compatible_shallow_copy_type",
})
ATEN_ELEMENTWISE = frozenset({
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "neg", "silu", "silu_", "gelu", "gelu_", "relu",
    "relu_", "tanh", "sigmoid", "exp", "rsqrt", "sqrt", "pow", "mean", "sum", "var", "var_mean", "native_layer_norm",
    "layer_norm", "rms_norm", "_fused_rms_norm", "embedding", "index_select", "cat", "copy_", "_to_copy", "clone",
    "where", "masked_fill", "masked_fill_", "clamp", "clamp_", "minimum", "maximum", "cos", "sin", "addcmul",
    "fill_", "zero_", "index_add_", "index_copy_", "scatter", "scatter_", "gather", "cumsum", "topk", "sort",
    "abs", "reciprocal", "erf", "index", "index_put_", "sigmoid_", "amax", "max", "min", "arange", "ones",
    "zeros", "full", "triu", "tril", "bitwise_and", "bitwise_or", "eq", "ne", "lt", "le", "gt", "ge", "any", "all",
})

_GPU_PATTERNS = (
    ("attention", re.compile(r"flash|fmha|attention|attn|sdpa|mha_|paged|decode_kernel|_sm\d+_kernel.*mask",
                             re.IGNORECASE)),
    ("matmul", re.compile(r"gemm|cutlass|cublas|matmul|mma_|wgmma|xmma|s\d{5}gemm|_nn$|_nt$|_tn$|gemv|"
                          r"splitk|sm\d+_xmma|nvjet", re.IGNORECASE)),
    # collectives before the element-wise words ("reduce" would take NCCL's AllReduce kernels)
    ("communication", re.compile(r"nccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|cross_device_reduce|"
                                 r"deep_ep::", re.IGNORECASE)),
    ("copy", re.compile(r"memcpy|memset|copy_kernel|CatArrayBatchedCopy", re.IGNORECASE)),
    ("elementwise", re.compile(r"elementwise|vectorized|reduce|norm|softmax|rotary|rope|silu|gelu|act_and_mul|"
                               r"unrolled|index|embedding|add_kernel|mul_kernel|triton_", re.IGNORECASE)),
)


def aten_class(name: str) -> str:
    """matmul / attention / elementwise / host / other for an aten op name such as "aten::addmm"."""
    base = name.split("::", 1)[-1]
    if base in ATEN_MATMUL:
        return "matmul"
    if base in ATEN_ATTENTION or base.startswith(ATEN_ATTENTION_PREFIXES):
        return "attention"
    if base in ATEN_HOST:
        return "host"
    if base in ATEN_ELEMENTWISE:
        return "elementwise"
    return "other"


def kernel_class(name: str) -> str:
    """matmul / attention / elementwise / communication / copy / other for a GPU kernel name (aten names:
    aten_class)."""
    if name.startswith("aten::"):
        return aten_class(name)
    bare = name.split("(", 1)[0]  # without the argument list: "cudnn::reduced_divisor" arguments say nothing
    for op_class, pattern in _GPU_PATTERNS:
        if pattern.search(bare):
            return op_class
    return "other"


_TORCH_DTYPES = {  # torch.profiler "Input type" -> (llmsim precision, bytes per element)
    "float": ("fp32", 4), "double": ("fp64", 8), "c10::BFloat16": ("bf16", 2), "c10::Half": ("fp16", 2),
    "c10::Float8_e4m3fn": ("fp8", 1), "c10::Float8_e5m2": ("fp8", 1), "long int": ("int64", 8),
    "int": ("int32", 4), "signed char": ("int8", 1), "unsigned char": ("uint8", 1), "bool": ("bool", 1),
    "short int": ("int16", 2), "c10::complex<float>": ("complex64", 8),
}


def torch_dtype(type_name: str) -> tuple[str, int] | None:
    """(precision, bytes per element) of a torch.profiler input type, None for a non-tensor input."""
    return _TORCH_DTYPES.get(type_name)


_NAME_PRECISIONS = (("fp8", re.compile(r"e4m3|e5m2|fp8|f8f8|_f8_", re.IGNORECASE)),
                    ("bf16", re.compile(r"bf16|bfloat16", re.IGNORECASE)),
                    ("fp16", re.compile(r"f16|fp16|half|h1688|h16816|hgemm", re.IGNORECASE)),
                    ("tf32", re.compile(r"tf32", re.IGNORECASE)),
                    ("fp32", re.compile(r"sgemm|f32f32|fp32", re.IGNORECASE)))


def name_precision(name: str) -> str | None:
    """The precision a GPU kernel name states (e.g. "ampere_bf16_s16816gemm..." -> bf16), else None."""
    bare = name.split("(", 1)[0]
    for precision, pattern in _NAME_PRECISIONS:
        if pattern.search(bare):
            return precision
    return None
