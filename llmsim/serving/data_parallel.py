"""Attention data parallelism (DP attention): how SGLang (`--enable-dp-attention`), TensorRT-LLM
(`enable_attention_dp`) and vLLM (`--data-parallel-size` with `--enable-expert-parallel`) serve DeepSeek-style
mixture-of-experts models.

A replica of G GPUs (tensor_parallel=G) is split into d attention data-parallel ranks of a = G/d GPUs each.
Each rank runs attention and every other non-expert op (embedding, norms, dense MLP layers, shared experts,
router, LM head) at tensor-parallel degree a on its own requests, with its own KV pool. The routed experts
run over all G GPUs (E/e whole experts per group of G/e GPUs, each sliced G/e ways: expert_parallel=e) on the
tokens of all d ranks: before each MoE layer the ranks' hidden states are all-gathered over the G GPUs, after
it the expert outputs are reduce-scattered back. The ranks run each forward pass in lockstep. Sources (facts,
no code): aiconfigurator-core (NVIDIA, Apache-2.0) sdk/config.py (GPUs = tp_size x attention_dp_size =
moe_tp_size x moe_ep_size), backends/base_backend.py (concurrency = per-rank batch x attention_dp_size),
operations/moe.py MoE.query (the experts see num_tokens x attention_dp_size tokens) and rust
operators/moe_dispatch.rs (all_gather before and reduce_scatter after the experts, of num_tokens x
attention_dp_size x hidden, over the G GPUs, for vLLM, SGLang and TensorRT-LLM without its NVL72 all-to-all).

One step of one rank:

    step_s(T) = non_expert_s(T; tp=a) + experts_s(d T; tp=G, ep=e)
                + moe_layers x (all_gather_s(d T h b, G) + reduce_scatter_s(d T h b, G))

(T: the rank's tokens this step, h: hidden size, b: activation bytes). The attention-side MoE all-reduce of
a tp=a graph is dropped: the shared experts' partial outputs ride in the reduce-scatter.

StepCost prices one rank's step as if every rank held its T tokens (experts at d T); serve() runs every rank in
lockstep (serving.lockstep), which takes the experts off each rank's step and adds them back at the ranks' summed
tokens (gathered_s), so a step where ranks hold different work (one prefilling, others decoding) takes the slowest
rank's time. A disaggregated pool of ranks (serving.disaggregated) still simulates one rank with every d-th request,
approximation: the ranks symmetric there, a step priced as if all held that rank's work. The hidden states
travel at the activation dtype (TensorRT-LLM's quantized all-gather and its NVL72 all-to-all kernels are not
modelled); collectives are not overlapped with compute.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..cost.workload import CostOptions, check_one
from ..errors import OptionError
from ..models.spec import ModelSpec, MoESpec
from ..timing.phases import PhaseTotals, decode_totals, prefill_totals
from ..timing.roofline import Roofline
from .step_cost import is_attention_core, is_lm_head

_EXPERTS = ".experts."  # the routed experts' ops: prefix.experts.{gate_up_proj, up_proj, act, down_proj, combine, ...}


@dataclass(frozen=True)
class AttentionDataParallel:
    """d attention data-parallel ranks; the experts' options (tensor_parallel = every GPU of the replica)."""

    ranks: int
    expert_options: CostOptions

    @property
    def gpus(self) -> int:
        return self.expert_options.tensor_parallel

    # A rank's step over its T tokens, every op but the attention core and the LM head (StepCost's tokens_s):
    # rank_s(the rank's tp=a graph at T) + gathered_s(T).

    def rank_s(self, totals: PhaseTotals) -> Any:
        """The rank's own part: `totals` (the rank's tp=a graph) without the attention core, the LM head, the
        routed experts and the MoE all-reduce."""
        moe_prefixes = {name.split(_EXPERTS)[0] for name in totals.names if _EXPERTS in name}
        drop = {f"{prefix}.all_reduce" for prefix in moe_prefixes}
        rest: Any = 0.0
        for name, kind, time_s in zip(totals.names, totals.kinds, totals.per_op["time_s"]):
            if not is_attention_core(name, kind) and not is_lm_head(name) and _EXPERTS not in name \
                    and name not in drop:
                rest = rest + time_s
        return rest

    def gathered_s(self, model: ModelSpec, roofline: Roofline, phase: str, tokens: np.ndarray) -> Any:
        """The shared part: the routed experts at d x tokens over every GPU (the tokens of all
        ranks when each holds `tokens`) and their all-gather and reduce-scatter, an array like tokens."""
        d = self.ranks
        gathered = d * tokens  # [T]: the tokens of all ranks, entering every GPU's experts
        experts_only = routed_experts_model(model)
        if phase == "prefill":
            everything = prefill_totals(experts_only, roofline, self.expert_options, 1, gathered, host_bound=False)
        else:
            everything = decode_totals(experts_only, roofline, self.expert_options, gathered, 1, 1)
        experts: Any = 0.0
        moe_layers = 0
        for name, count, time_s in zip(everything.names, everything.counts, everything.per_op["time_s"]):
            if _EXPERTS in name:
                experts = experts + time_s
                if name.endswith(".down_proj"):  # one per MoE layer
                    moe_layers += int(count)
        _, act_dtype, _ = self.expert_options.resolved_dtypes(model.dtype)
        from ..dtypes import dtype_bytes

        message = gathered * (model.hidden_size * dtype_bytes(act_dtype))  # [T] bytes gathered per MoE layer
        G = self.gpus
        collectives = roofline.collective_s("all_gather", message, G) + roofline.collective_s("reduce_scatter",
                                                                                                message, G)
        return np.broadcast_to(experts, tokens.shape) + moe_layers * np.asarray(collectives, dtype=float)


def rank_options(model: ModelSpec, cost: CostOptions, ranks: Any) -> tuple[CostOptions, AttentionDataParallel | None]:
    """(one rank's cost options, the DP setup) for attention_data_parallel=ranks over cost.tensor_parallel GPUs;
    (cost, None) for ranks == 1. Refuses a count that does not divide the GPUs, or a model without experts."""
    d = check_one("attention_data_parallel", ranks, 1)
    if d == 1:
        return cost, None
    G = cost.tensor_parallel
    if G % d:
        raise OptionError(f"attention_data_parallel={d} must divide tensor_parallel={G} (the replica's GPUs; each "
                          f"rank runs attention on tensor_parallel / attention_data_parallel of them)")
    if not any(isinstance(g.layer.mlp, MoESpec) for g in model.layer_groups):
        raise OptionError(f"attention_data_parallel={d}: the model has no experts (every MLP is dense), so its "
                          f"ranks would share nothing; serve {d} replicas of tensor_parallel={G // d} instead")
    rank = CostOptions.make(**{**cost.model_dump(), "tensor_parallel": G // d, "expert_parallel": 1})
    return rank, AttentionDataParallel(ranks=d, expert_options=cost)


def weights_bytes_per_gpu(model: ModelSpec, rank: CostOptions, dp: AttentionDataParallel) -> float:
    """Parameter bytes on one GPU: the non-expert weights of a rank (tp=a), the routed experts over all GPUs."""
    from ..cost.graph import build_ops_unchecked

    attention = build_ops_unchecked(model, "prefill", 1, 1, 0, rank)
    experts = build_ops_unchecked(routed_experts_model(model), "prefill", 1, 1, 0, dp.expert_options)
    return float(sum(op.count * op.param_bytes for op in attention if _EXPERTS not in op.name)
                 + sum(op.count * op.param_bytes for op in experts if _EXPERTS in op.name))


@lru_cache(maxsize=32)
def routed_experts_model(model: ModelSpec) -> ModelSpec:
    """The model less its dense MLPs and shared experts: what the routed experts' build over every GPU
    (expert_options) reads. The ranks run the rest at their own split (tensor_parallel / ranks: a dense MLP
    unsplit at one GPU per rank, as SGLang's DP-attention deployments run it with --moe-dense-tp-size 1), checked
    there; built over all the GPUs, a block-fp8 dense MLP was refused for a split no rank runs (DeepSeek-V3's
    18432-wide dense MLPs over 32 GPUs: 576 per GPU, not whole 128-wide scale blocks)."""
    groups = []
    for group in model.layer_groups:
        mlp = group.layer.mlp
        kept = mlp.model_copy(update={"shared": None}) if isinstance(mlp, MoESpec) else None
        groups.append(group.model_copy(update={"layer": group.layer.model_copy(update={"mlp": kept})}))
    return model.model_copy(update={"layer_groups": tuple(groups)})
