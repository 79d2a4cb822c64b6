"""Tracing under CUDA autocast (`torch.amp.autocast("cuda", dtype=...)`, as mixed-precision inference and training
run it), emulated on the meta device: CUDA autocast only acts on CUDA tensors, so the recorder applies its
policy itself to every torch function the module calls, by the function's name, from the op lists PyTorch
documents (torch.amp "Autocast Op Reference", CUDA; the registrations in aten/src/ATen/autocast_mode.cpp):

- LOWER ("CUDA Ops that can autocast to float16"): matmuls, linear, convolutions, SDPA run in the autocast dtype;
  their other floating inputs are cast to it first;
- FLOAT32 ("CUDA Ops that can autocast to float32"): layer_norm, group_norm, softmax, exp, log, pow, rsqrt, sum,
  cumsum, norms, losses, ... run in float32; their 16-bit inputs are cast up first (those that take a dtype
  argument are left alone when the caller gives one, as autocast does);
- every other function runs in its inputs' dtypes (type promotion where they differ, as autocast's promote
  list does).

The casts are Tensor.to calls, so each is an aten._to_copy kernel in the trace, as eager PyTorch runs it. Like
autocast, the policy applies to the function the module calls, not to the functions it calls in turn. A weight
(a tensor of the module's state) is cast once per forward and its copy reused, as autocast's cast cache does for
leaf weights within one autocast region; an activation is cast at every use.
approximation: a float32 function given a 16-bit input is traced as a cast then the function; PyTorch runs some
as one kernel reading the 16-bit input (softmax's half_to_float), whose input bytes are then counted twice.
"""

from __future__ import annotations

from typing import Any

# torch functions (by __name__) autocast runs in the lower precision (the CUDA float16 list; einsum and SDPA from
# autocast_mode.cpp's lower_precision_fp registrations)
LOWER = frozenset({
    "__matmul__", "__rmatmul__", "matmul", "mm", "mv", "bmm", "baddbmm", "addbmm", "addmm", "addmv", "addr",
    "chain_matmul", "multi_dot", "einsum", "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "conv_tbc", "prelu", "lstm_cell", "gru_cell", "rnn_tanh_cell",
    "rnn_relu_cell", "scaled_dot_product_attention",
})
# ... and in float32 (the CUDA float32 list)
FLOAT32 = frozenset({
    "__pow__", "__rpow__", "__rdiv__", "__rtruediv__", "acos", "asin", "cosh", "sinh", "tan", "erfinv", "exp",
    "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt", "pow", "softplus", "layer_norm", "group_norm",
    "norm", "normalize", "cosine_similarity", "cdist", "pdist", "dist", "renorm", "logsumexp", "softmax",
    "softmin", "log_softmax", "sum", "prod", "cumsum", "cumprod", "linalg_vector_norm", "linalg_matrix_norm",
    "binary_cross_entropy_with_logits", "cross_entropy", "nll_loss", "kl_div", "l1_loss", "mse_loss",
    "smooth_l1_loss", "huber_loss", "poisson_nll_loss", "cosine_embedding_loss", "hinge_embedding_loss",
    "margin_ranking_loss", "multilabel_margin_loss", "multi_margin_loss", "soft_margin_loss", "triplet_margin_loss",
})
# float32 functions that take a dtype argument: autocast leaves them alone when the caller gives one
OPTIONAL_DTYPE = frozenset({"softmax", "softmin", "log_softmax", "sum", "prod", "cumsum", "cumprod", "norm",
                            "linalg_vector_norm", "linalg_matrix_norm"})


class AutocastTrace:
    """CUDA autocast's policy over one trace: which inputs of a function to cast, and the weights cast so far."""

    def __init__(self, torch: Any, dtype: Any, weights: list[Any]) -> None:
        from .recorder import _storage_key

        self.torch = torch
        self.dtype = dtype  # torch.float16 or torch.bfloat16
        self._key = _storage_key
        self.weights = {_storage_key(t) for t in weights if isinstance(t, torch.Tensor)}
        self.cache: dict[tuple[Any, ...], Any] = {}  # (weight storage, shape, strides, offset, dtype) -> its copy

    def apply(self, func: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """A torch function's arguments as CUDA autocast hands them on: LOWER ones' inputs cast to the autocast
        dtype, FLOAT32 ones' to float32, except that those with a dtype argument are given dtype=float32 (autocast's
        fp32_set_opt_dtype: one kernel reading the 16-bit input) unless the caller gave one; others unchanged."""
        name = getattr(func, "__name__", "")
        if name in LOWER:
            return self.cast_inputs(self.dtype, args, kwargs)
        if name in OPTIONAL_DTYPE:
            if kwargs.get("dtype") is None and any(self._low(a) for a in args[:1]):
                return args, {**kwargs, "dtype": self.torch.float32}
            return args, kwargs
        if name in FLOAT32:
            return self.cast_inputs(self.torch.float32, args, kwargs)
        return args, kwargs

    def _low(self, value: Any) -> bool:
        """A 16-bit floating tensor (what fp32_set_opt_dtype widens)."""
        torch = self.torch
        return isinstance(value, torch.Tensor) and value.dtype in (torch.float16, torch.bfloat16)

    def cast_inputs(self, dtype: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """args and kwargs with every tensor autocast casts (floating, not float64: autocast_mode.h is_eligible; also
        inside lists) cast to `dtype` by Tensor.to; a weight's copy made once and reused."""
        torch = self.torch

        def cast(value: Any) -> Any:
            if isinstance(value, (list, tuple)):
                return type(value)(cast(v) for v in value)
            if not (isinstance(value, torch.Tensor) and value.is_floating_point()
                    and value.dtype not in (torch.float64, dtype)):
                return value
            storage = self._key(value)
            if storage not in self.weights:
                return value.to(dtype)
            key = (storage, tuple(value.shape), tuple(value.stride()), value.storage_offset(), dtype)
            if key not in self.cache:
                self.cache[key] = value.to(dtype)
            return self.cache[key]
        return tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}
