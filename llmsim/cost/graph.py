"""ModelSpec x phase -> the list of Ops of one forward pass: the public entry points.

build_ops checks the workload (phase, counts, the model's context) and builds; build_ops_unchecked is
for callers that checked it already; both replay the cached graph template of (model, phase, options)
where there is one (`cost.template`) and run the graph builder (`cost.builder`, whose docstring holds
the phases' meaning and the symbol legend: B, S, L, T, h, H, ...) where there is not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import OptionError, check_choice
from ..models.loading import load_model
from ..models.spec import ModelSpec
from .builder import GraphBuilder
from .op import Op
from .template import GraphTemplate, cached_template
from .workload import BATCH_MAX, PHASES, CostOptions, check_count


def build_ops(
    model: Any,
    phase: str,
    batch_size: Any = 1,
    seq_len: Any = None,
    kv_len: Any = None,
    options: CostOptions | None = None,
    **option_values: Any,
) -> list[Op]:
    """The ops of one forward pass of `phase` ("prefill" or "decode").

    `model`: a ModelSpec or anything `load_model` takes (a shipped name, a path, a dict, a config).
    Prefill needs `seq_len` (tokens per sequence); decode needs `kv_len` (tokens already cached).
    Options (attention, logits, mla, fusion, weight_dtype, activation_dtype, kv_dtype) are described
    in `CostOptions`; pass them as keywords or as a CostOptions.
    """
    model = load_model(model)
    check_choice("phase", phase, PHASES)
    if options is None:
        options = CostOptions.make(**option_values)
    elif option_values:
        options = options.model_copy(update=CostOptions.make(**option_values).model_dump(exclude_unset=True))
    B = check_count("batch_size", batch_size, 1, BATCH_MAX)
    if phase == "prefill":
        if seq_len is None:
            raise OptionError("phase='prefill' needs seq_len (tokens per sequence)")
        S, L = check_count("seq_len", seq_len, 1), 0
        _check_context(model, "seq_len", S)
    else:
        if kv_len is None:
            raise OptionError("phase='decode' needs kv_len (tokens already in the cache)")
        S, L = 1, check_count("kv_len", kv_len, 0)
        _check_context(model, "kv_len + 1", np.asarray(L) + 1)
    return build_ops_unchecked(model, phase, B, S, L, options)


def _check_context(model: ModelSpec, field: str, tokens: Any) -> None:
    longest = int(np.max(tokens))
    if longest > model.max_position_embeddings:
        raise OptionError(
            f"{field}={longest} exceeds the model's context of {model.max_position_embeddings} tokens "
            f"(max_position_embeddings)"
        )


def build_ops_unchecked(model: ModelSpec, phase: str, batch_size: Any, seq_len: Any, kv_len: Any,
                        options: CostOptions) -> list[Op]:
    """build_ops for callers that validated the workload already (simulate, sweeps)."""
    S = seq_len if phase == "prefill" else 1
    template = cached_template(model, phase, options)
    if template is None:
        return GraphBuilder(model, phase, batch_size, S, kv_len, options).build()
    return template.ops_at(batch_size, S, kv_len)


def graph_template(model: ModelSpec, phase: str, options: CostOptions) -> GraphTemplate | None:
    """The graph template of (model, phase, options), cached; None where the builder must run each time."""
    return cached_template(model, phase, options)
