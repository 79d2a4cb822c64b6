"""Tensor parallelism in the graph: which splits a model allows, the heads on one GPU, the slice of a
dimension, and the all-reduce that sums the partial outputs (a mixin of GraphBuilder)."""

from __future__ import annotations

import math

from ...errors import OptionError
from ...models.spec import AttentionSpec, ModelSpec, MoESpec
from ..op import formula
from ..symbolic import Expr

# vLLM pads the vocabulary of its VocabParallelEmbedding / ParallelLMHead to a multiple of 64
# (DEFAULT_VOCAB_PADDING_SIZE = 64, pad_vocab_size() in vllm/model_executor/layers/vocab_parallel_embedding.py)
# and gives each tensor-parallel GPU divide(padded, tp) rows: gpt2's 50257 -> 50304, 25152 rows per GPU at tp=2.
VOCAB_PADDING = 64


def padded_vocab_size(vocab_size: int) -> int:
    """vLLM's pad_vocab_size: the vocabulary rounded up to a multiple of 64."""
    return math.ceil(vocab_size / VOCAB_PADDING) * VOCAB_PADDING


def check_expert_parallel(model: ModelSpec, expert_parallel: int) -> None:
    """Refuse expert parallelism on a model without experts (it would be reported and ignored)."""
    if expert_parallel > 1 and not any(isinstance(g.layer.mlp, MoESpec) for g in model.layer_groups):
        raise OptionError(f"expert_parallel={expert_parallel}: the model has no experts (every MLP is dense); "
                          "leave expert_parallel at 1")


class ParallelBlocks:
    """Tensor-parallel splits and collectives (tp_degree GPUs; ep_degree for experts)."""

    def _check_split(self, model: ModelSpec) -> None:
        """Refuse a tensor-parallel degree the model cannot be split by, naming the field."""
        t = self.tp_degree
        if t == 1:
            return
        # the vocabulary is padded, not refused (see vocab_local); vLLM's divide() still needs tp to divide it
        padded = padded_vocab_size(model.vocab_size)
        if padded % t:
            raise OptionError(
                f"tensor_parallel={t} does not divide vocab_size={model.vocab_size} padded to a multiple of "
                f"{VOCAB_PADDING} ({padded})"
            )
        checks: list[tuple[str, int]] = []
        for group in model.layer_groups:
            attn, mlp = group.layer.attention, group.layer.mlp
            if attn is not None:
                checks.append(("mamba num_heads" if attn.kind == "mamba2" else "num_attention_heads", attn.num_heads))
            if attn is not None and attn.kind == "standard" and attn.num_kv_heads % t and t % attn.num_kv_heads:
                raise OptionError(
                    f"tensor_parallel={t}: num_key_value_heads={attn.num_kv_heads} is neither a multiple nor a "
                    f"divisor of it"
                )
            if isinstance(mlp, MoESpec):
                if self.ep_degree == 1:
                    checks.append(("expert intermediate_size", mlp.expert.intermediate_size))
                if mlp.shared is not None:
                    checks.append(("shared expert intermediate_size", mlp.shared.intermediate_size))
            elif mlp is not None:
                checks.append(("intermediate_size", mlp.intermediate_size))
        for field, value in checks:
            if value % t:
                raise OptionError(f"tensor_parallel={t} does not divide {field}={value}")
        for group in model.layer_groups:
            if isinstance(group.layer.mlp, MoESpec) and self.ep_degree > 1:
                self._check_expert_split(group.layer.mlp)
        check_expert_parallel(model, self.ep_degree)
        self._check_scale_blocks(model)

    def _check_scale_blocks(self, model: ModelSpec) -> None:
        """Refuse a split that cuts a block-scaled checkpoint's scale blocks (fp8 weight_block_size [128, 128]):
        each GPU's share of an MLP's or the experts' intermediate size must be whole blocks, as vLLM requires ("The
        output_size of gate's and up's weight = 192 is not divisible by weight quantization block_n = 128":
        Qwen3-235B-A22B-FP8's experts, 1536 wide, at tensor_parallel 8 without expert parallelism)."""
        quantization = model.quantization
        if quantization is None:
            return
        t, e = self.tp_degree, self.ep_degree
        for group in model.layer_groups:
            mlp = group.layer.mlp
            parts: list[tuple[str, str, int, int]] = []  # (role, field, width, GPUs it is split over)
            if isinstance(mlp, MoESpec):
                parts.append(("experts", "expert intermediate_size", mlp.expert.intermediate_size, t // e))
                if mlp.shared is not None:
                    parts.append(("shared_experts", "shared expert intermediate_size", mlp.shared.intermediate_size,
                                  t))
            elif mlp is not None:
                parts.append(("mlp", "intermediate_size", mlp.intermediate_size, t))
            for role, field, width, split in parts:
                fmt = quantization.format_of(role)
                if split <= 1 or fmt is None or fmt.granularity != "block":
                    continue
                share, block = width // split, max(fmt.block)
                if share % block:
                    hint = " or a larger expert_parallel" if role == "experts" else ""
                    raise OptionError(f"tensor_parallel={t}: {field}={width} over {split} GPUs is {share} per GPU, "
                                      f"not whole {fmt.block[0]}x{fmt.block[1]} scale blocks of the checkpoint's "
                                      f"weight_block_size (engines refuse it); choose a smaller tensor_parallel"
                                      f"{hint}")

    def _check_expert_split(self, moe: MoESpec) -> None:
        """Refuse an expert-parallel split (ep > 1) the MoE layer cannot take: ep must divide the experts and
        tp/ep (the experts' tensor-parallel degree) their intermediate size."""
        t, e = self.tp_degree, self.ep_degree
        if moe.num_experts % e:
            raise OptionError(f"expert_parallel={e} does not divide number of experts={moe.num_experts}")
        if moe.expert.intermediate_size % (t // e):
            raise OptionError(f"tensor_parallel/expert_parallel={t}/{e}={t // e} (the experts' tensor-parallel "
                              f"degree) does not divide expert intermediate_size={moe.expert.intermediate_size}")

    def vocab_local(self) -> Expr:
        """Rows of the embedding / LM head on one GPU: V at tp=1 (exact parameter counts); else the
        vocabulary padded to a multiple of 64 and split over the tp GPUs, as vLLM does."""
        V = self.model.vocab_size
        if self.tp_degree == 1:
            return Expr.sym("V", V)
        return Expr.sym("V_pad", padded_vocab_size(V)) / self.tp

    def heads(self, attn: AttentionSpec) -> tuple[Expr, Expr]:
        """(query heads, KV heads) on one GPU: H/tp, and kvh/tp or one replicated KV head."""
        H, kvh = Expr.sym("H", attn.num_heads), Expr.sym("kvh", attn.num_kv_heads)
        if self.tp_degree == 1:
            return H, kvh
        local_kv = kvh / self.tp if attn.num_kv_heads >= self.tp_degree else Expr.sym("kvh_replicated", 1)
        return H / self.tp, local_kv

    def all_reduce(self, name: str, count: int) -> None:
        """Sum the [T, h] partial outputs of the tensor-parallel GPUs, in the residual stream's dtype (self.rb)."""
        if self.tp_degree > 1:
            self.add(formula("collective")(name, count, kind="all_reduce", message_bytes=self.T * self.h * self.rb,
                                           group=self.tp_degree))

    def _split(self, size: Expr) -> Expr:
        """A dimension sliced over the tensor-parallel GPUs."""
        return size / self.tp if self.tp_degree > 1 else size
