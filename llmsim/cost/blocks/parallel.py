"""Tensor parallelism in the graph: which splits a model allows, the heads on one GPU, the slice of a
dimension, and the all-reduce that sums the partial outputs (a mixin of GraphBuilder)."""

from __future__ import annotations

from ...errors import OptionError
from ...models.spec import AttentionSpec, ModelSpec, MoESpec
from ..op import formula
from ..symbolic import Expr


class ParallelBlocks:
    """Tensor-parallel splits and collectives (tp_degree GPUs; ep_degree for experts)."""

    def _check_split(self, model: ModelSpec) -> None:
        """Refuse a tensor-parallel degree the model cannot be split by, naming the field."""
        t = self.tp_degree
        if t == 1:
            return
        checks: list[tuple[str, int]] = [("vocab_size", model.vocab_size)]
        for group in model.layer_groups:
            attn, mlp = group.layer.attention, group.layer.mlp
            checks.append(("num_attention_heads", attn.num_heads))
            if attn.kind == "standard" and attn.num_kv_heads % t and t % attn.num_kv_heads:
                raise OptionError(
                    f"tensor_parallel={t}: num_key_value_heads={attn.num_kv_heads} is neither a multiple nor a "
                    f"divisor of it"
                )
            if isinstance(mlp, MoESpec):
                if self.ep_degree > 1:
                    checks.append(("number of experts", mlp.num_experts))
                else:
                    checks.append(("expert intermediate_size", mlp.expert.intermediate_size))
                if mlp.shared is not None:
                    checks.append(("shared expert intermediate_size", mlp.shared.intermediate_size))
            else:
                checks.append(("intermediate_size", mlp.intermediate_size))
        for field, value in checks:
            if value % t:
                raise OptionError(f"tensor_parallel={t} does not divide {field}={value}")

    def heads(self, attn: AttentionSpec) -> tuple[Expr, Expr]:
        """(query heads, KV heads) on one GPU: H/tp, and kvh/tp or one replicated KV head."""
        H, kvh = Expr.sym("H", attn.num_heads), Expr.sym("kvh", attn.num_kv_heads)
        if self.tp_degree == 1:
            return H, kvh
        local_kv = kvh / self.tp if attn.num_kv_heads >= self.tp_degree else Expr.sym("kvh_replicated", 1)
        return H / self.tp, local_kv

    def all_reduce(self, name: str, count: int) -> None:
        """Sum the [T, h] partial outputs of the tensor-parallel GPUs."""
        if self.tp_degree > 1:
            self.add(formula("collective")(name, count, kind="all_reduce", message_bytes=self.T * self.h * self.ab,
                                           group=self.tp_degree))

    def _split(self, size: Expr) -> Expr:
        """A dimension sliced over the tensor-parallel GPUs."""
        return size / self.tp if self.tp_degree > 1 else size
