"""Workload sizes and the cost-model options, validated with messages that name the field."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..dtypes import canonical_dtype
from ..errors import OptionError, check_choice

ATTENTION_KERNELS = ("math", "flash", "sdpa_math")
LOGITS_MODES = ("all", "last")
MLA_MODES = ("expand", "absorb")
FUSION_POLICIES = ("none", "elementwise", "full", "eager")
KV_CACHE_MODES = ("paged", "concat")
LINEAR_ATTENTION_KERNELS = ("fused", "fla")
PHASES = ("prefill", "decode")


class CostOptions(BaseModel):
    """How the forward pass is computed. Defaults describe a serving engine:

    - attention="flash": fused attention; no S x S scores in memory, masked (causal, outside-window)
      blocks skipped. "math": the full S x S scores, as eager attention computes them. "sdpa_math":
      PyTorch's SDPA math fallback op by op (16-bit Q, K, V cast to float32, Q and K^T scaled, both
      matmuls, mask and softmax in float32 with the all-masked-row guard, the output cast back), as
      transformers runs where SDPA has no fused kernel for the shapes (MLA on a CPU).
    - logits="last": the LM head runs on the last position only, as generation does. "all": every
      position, as a plain forward pass.
    - mla="absorb": MLA decode in weight-absorbed form over the cached latent, as serving engines run
      it. "expand": the cached latent is re-expanded to per-head K and V every step, as transformers
      runs it. Prefill is the same in both (expanded).
    - fusion="elementwise": the residual add is fused into the next norm (vLLM's fused add+RMSNorm).
      "none": every elementwise op is its own kernel (eager PyTorch). "full": all elementwise work is
      fused into matmul prologues and epilogues (no memory traffic, no launches of its own). "eager":
      as transformers' eager model code runs on plain PyTorch, one kernel per PyTorch op: RMSNorm as
      its float32 op sequence, the gated activation as act then multiply, rotary as its five ops,
      and with attention="math" the scale/mask/float32-softmax/cast sequence and repeat_kv's copies.
    - kv_cache="paged": the new token's K and V are written in place (serving engines, static caches).
      "concat": transformers' DynamicCache, which concatenates the whole cache with the new token
      every step, so each step also reads and rewrites every cached token.
    - weight_dtype, activation_dtype: default to the config's dtype, kv_dtype to the activation dtype (fp8
      activations cache fp8 keys and values unless kv_dtype says otherwise); the weights of a quantized
      checkpoint default to its quantization_config, per module role (llmsim.models.quantization). An
      explicit weight_dtype overrides that for every linear layer (with the int4/int8 group-128 fp16 scales
      of `dtypes.weight_bytes_per_param`).
    - tensor_parallel=t: each GPU holds 1/t of the attention heads (KV heads replicated when there
      are fewer than t), of the MLP columns/rows and of the vocabulary (Megatron-style), with an
      all-reduce after attention and after the MLP of every layer. The ops are those of one GPU.
    - expert_parallel=e (a divisor of tensor_parallel=t): the experts are spread over the tensor-parallel
      GPUs, E/e whole experts on each, each expert sliced t/e ways (the experts' tensor-parallel degree),
      with an all-to-all dispatch and combine among e GPUs and, when t/e > 1, an all-reduce of the
      expert outputs among the t/e GPUs that slice an expert (approximation: see cost.blocks.feedforward).
      e == 1: every expert sliced t ways, no all-to-all; e == t: whole experts, no slicing (vLLM's
      --enable-expert-parallel with one attention data-parallel rank; SGLang/TRT-LLM moe_tp x moe_ep = tp).
    - fused_projections=True: the Q, K and V projections run as one GEMM, and gate and up as one, whatever
      the checkpoint stores (serving engines fuse them at load); False: as the config has them.
    - engine_step=True: one "engine.step" op per forward pass, the engine's host work the GPU waits for
      (scheduling, input preparation, sampling), timed as ExecutionOptions.step_host_s per step.
    - linear_attention_kernel="fused": a gated DeltaNet prefill scan is one kernel launch (FlashInfer's fused
      kernel, which vLLM's tables time). "fla": FLA's Triton chunked kernels, which SGLang and TensorRT-LLM run
      (cost.formulas.linear_attention.FLA_SCAN_LAUNCHES launches per scan; the host pays each one in a prefill run
      without a CUDA graph). fusion="eager" keeps one launch (transformers' torch path is priced as before).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    attention: str = "flash"
    logits: str = "last"
    mla: str = "absorb"
    fusion: str = "elementwise"
    kv_cache: str = "paged"
    weight_dtype: str | None = None
    activation_dtype: str | None = None
    kv_dtype: str | None = None
    tensor_parallel: int = 1
    expert_parallel: int = 1
    fused_projections: bool = False
    engine_step: bool = False
    linear_attention_kernel: str = "fused"

    @classmethod
    def make(cls, **options: Any) -> CostOptions:
        """Validated options: an OptionError names a bad field and lists the allowed values."""
        allowed = set(cls.model_fields)
        for key in options:
            if key not in allowed:
                from ..errors import choice_error

                raise choice_error("option", key, allowed)
        values = {k: v for k, v in options.items() if v is not None}
        check_choice("attention", values.get("attention", "flash"), ATTENTION_KERNELS)
        check_choice("logits", values.get("logits", "last"), LOGITS_MODES)
        check_choice("mla", values.get("mla", "absorb"), MLA_MODES)
        check_choice("fusion", values.get("fusion", "elementwise"), FUSION_POLICIES)
        check_choice("kv_cache", values.get("kv_cache", "paged"), KV_CACHE_MODES)
        check_choice("linear_attention_kernel", values.get("linear_attention_kernel", "fused"),
                     LINEAR_ATTENTION_KERNELS)
        for key in ("weight_dtype", "activation_dtype", "kv_dtype"):
            if key in values:
                values[key] = canonical_dtype(values[key], key)
        for key in ("tensor_parallel", "expert_parallel"):
            if key in values:
                values[key] = check_count(key, values[key], 1)
                if not isinstance(values[key], int):
                    raise OptionError(f"{key} must be a single integer")
        for key in ("fused_projections", "engine_step"):
            if not isinstance(values.get(key, False), bool):
                raise OptionError(f"{key} must be True or False, not {values[key]!r}")
        ep, tp = values.get("expert_parallel", 1), values.get("tensor_parallel", 1)
        if tp % ep:
            raise OptionError(f"expert_parallel={ep} must divide tensor_parallel={tp} (the experts' "
                              f"tensor-parallel degree is tensor_parallel / expert_parallel)")
        return cls(**values)

    def resolved_dtypes(self, model_dtype: str) -> tuple[str, str, str]:
        """(weight, activation, kv) dtypes with the model's own dtype filled in."""
        activation = self.activation_dtype or model_dtype
        return self.weight_dtype or model_dtype, activation, self.kv_dtype or activation


# Upper limits of counts. No deployment comes near them (a larger value is a typo), and past them the
# footprint's int64 products (batch x tokens x width x bytes) would overflow into a wrong answer.
COUNT_MAX = 1 << 31
BATCH_MAX = 1 << 24


def check_count(field: str, value: Any, minimum: int, maximum: int = COUNT_MAX) -> np.ndarray | int:
    """An integer count (or array of counts) in minimum..maximum; an OptionError naming the field otherwise."""
    if type(value) is int and minimum <= value <= maximum:  # the common case, without numpy (same result)
        return value
    allowed = f"an integer in {minimum}..{maximum}"
    try:
        array = np.asarray(value)
    except (ValueError, TypeError):  # a ragged list
        raise OptionError(f"{field}={_shown(value)} must be {allowed} or a flat list of them") from None
    if array.dtype == object:  # Python ints past int64, or not numbers at all
        items = array.ravel().tolist()
        numbers = all(type(v) is int or isinstance(v, np.integer) for v in items)
        if numbers and items and all(v >= minimum for v in items):
            raise _out_of_range(field, array, [v > maximum for v in items], allowed)
        raise OptionError(f"{field}={_shown(value)} must be {allowed}")
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise OptionError(f"{field}={_shown(value)} must be {allowed}")
    if array.size == 0:
        raise OptionError(f"{field} is empty; give at least one value in {minimum}..{maximum}")
    bad = ~np.isfinite(array) | (array != np.round(array)) | (array < minimum) | (array > maximum)
    if np.any(bad):
        raise _out_of_range(field, array, bad, allowed)
    if array.ndim == 0:
        return int(array)
    return array.astype(np.int64)


def check_one(field: str, value: Any, minimum: int, maximum: int = COUNT_MAX) -> int:
    """One integer count in minimum..maximum (a list refused: only llmsim.sweep takes lists)."""
    count = check_count(field, value, minimum, maximum)
    if not isinstance(count, int):
        raise OptionError(f"{field}={_shown(value)}: give one integer here (llmsim.sweep takes lists)")
    return count


def _out_of_range(field: str, array: np.ndarray, bad: Any, allowed: str) -> OptionError:
    """The error naming the first offending value (of a list: which one it holds)."""
    item = array.ravel()[int(np.argmax(np.asarray(bad).ravel()))]
    item = item.item() if hasattr(item, "item") else item
    if array.ndim == 0:
        return OptionError(f"{field}={item!r} must be {allowed}")
    return OptionError(f"{field} holds {item!r}: each value must be {allowed}")


def _shown(value: Any) -> str:
    """A value as one short line: a list, not numpy's multi-line array repr."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:77] + "..."
