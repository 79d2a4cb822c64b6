"""What simulate() and the per-layer tables share: options resolved on top of an engine, workloads checked,
phases evaluated (with pipelining), each op's fields, and the inputs a result was computed from."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..cost.op import formula
from ..cost.symbolic import Expr
from ..cost.workload import BATCH_MAX, CostOptions, check_count
from ..engines.catalog import check_tables_device, engine_on
from ..hardware.spec import HardwareSpec, load_hardware
from ..models.dtype_default import served_model
from ..models.loading import load_model
from ..models.spec import ModelSpec
from ..timing.phases import PhaseTotals, decode_totals, pipelined, prefill_totals
from ..timing.roofline import BOUNDS, ExecutionOptions, Roofline
from .memory import footprint, stage_weights_bytes


def refuse_pipeline_decode(options: dict[str, Any], where: str) -> None:
    """Refuse pipeline_decode="lockstep" in a function that runs no pipeline stages (it would be ignored)."""
    if options.get("pipeline_decode") == "lockstep":
        from ..errors import OptionError

        raise OptionError(f"pipeline_decode='lockstep': {where} runs no pipeline stages, so it would be ignored; "
                          "it applies to simulate(pipeline_parallel > 1)")


def load_model_given(model: Any, options: dict[str, Any]) -> ModelSpec:
    """load_model, without the advice to pass weight_dtype and activation_dtype where the options give both (a
    config stating no dtype: the assumed one is then replaced)."""
    if options.get("weight_dtype") is None or options.get("activation_dtype") is None:
        return load_model(model)
    import warnings

    from ..errors import AssumptionWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*states no torch_dtype/dtype: assumed", category=AssumptionWarning)
        return load_model(model)


def resolve(model: Any, hardware: Any, engine: str | None = None, **options: Any
            ) -> tuple[ModelSpec, HardwareSpec, CostOptions, ExecutionOptions]:
    """Load model and hardware and split keyword options into cost and execution options, on top of the
    engine's defaults (llmsim.engines; default: vllm on a GPU, transformers on a CPU). Options the caller
    passes win over the engine's."""
    cost_keys = set(CostOptions.model_fields)
    exec_keys = set(ExecutionOptions.model_fields) - {"engine"}
    unknown = set(options) - cost_keys - exec_keys
    if unknown:
        from ..errors import choice_error

        raise choice_error("option", sorted(unknown)[0], cost_keys | exec_keys | {"engine"})
    given = {k: v for k, v in options.items() if v is not None}
    spec = load_model_given(model, given)
    hw = load_hardware(hardware)
    chosen = engine_on(engine, hw)
    spec = served_model(spec, chosen.serves_float32_as, chosen.name,
                        (given.get("weight_dtype"), given.get("activation_dtype")))
    if spec.quantization is not None:  # fp8/fp4 GEMMs need those tensor cores; else weight-only kernels
        quantization = spec.quantization.for_precisions(tuple(hw.matrix_flops_per_s))
        if quantization is not spec.quantization:
            spec = spec.model_copy(update={"quantization": quantization})
    steps = {"engine_step": True} if given.get("step_host_s") else {}  # a host time given: its op too
    cost = CostOptions.make(**{**chosen.cost, **steps, **{k: v for k, v in given.items() if k in cost_keys}})
    defaults = {**chosen.execution, "engine": chosen.name, "tables": chosen.tables,
                "table_families": chosen.table_families}
    if "tables" in options and options["tables"] is None:  # tables=None given: the roofline alone
        defaults.update(tables=None, table_families=None)
    execution = ExecutionOptions.make(**{**defaults, **{k: v for k, v in given.items() if k in exec_keys}})
    if given.get("tables") is not None and execution.efficiency == "peak":  # timing reads no table at peak
        from ..errors import OptionError

        raise OptionError(f"tables={given['tables']!r} with efficiency='peak': the datasheet speed of light reads no "
                          "measured tables; give efficiency='achievable' to time ops from them")
    check_tables_device(hw, execution.tables)
    _check_precision(spec, hw, cost)
    check_moe_options(spec, given)
    check_layer_kind_options(spec, given)
    check_fp8_scales(spec, cost, given)
    check_host_options(execution, given)
    return spec, hw, cost, execution


# the cost options that choose how one kind of attention layer runs, that kind, and their defaults: on a model
# without such layers they would be ignored (as MOE_ONLY_OPTIONS on a dense model)
LAYER_KIND_OPTIONS = {"mla": ("mla", "absorb", "MLA (multi-head latent attention)"),
                      "linear_attention_kernel": ("linear", "fused", "linear-attention (gated DeltaNet)")}


def check_layer_kind_options(spec: ModelSpec, given: dict[str, Any]) -> None:
    """Warn (AssumptionWarning; the CLI prints it) of an option of LAYER_KIND_OPTIONS changed from its default on a
    model without that kind of layer: it changes nothing, which was silent. A warning, not a refusal as for the
    MoE options: one set of kernel options given to several models (validate's mla="expand") is a normal use."""
    from ..errors import warn_assumption

    kinds = {g.layer.attention.kind for g in spec.layer_groups if g.layer.attention is not None}
    for key, (kind, default, name) in LAYER_KIND_OPTIONS.items():
        if key in given and given[key] != default and kind not in kinds:
            warn_assumption(f"{key}={given[key]!r} changes nothing: the model has no {name} layers")


def check_fp8_scales(spec: ModelSpec, cost: CostOptions, given: dict[str, Any]) -> None:
    """Warn of fp8_scales="dynamic" where no GEMM runs fp8 activations (a 16-bit model run 16-bit): it reads the
    per-tensor fp8 GEMM rows only, so it changes nothing there. A quantized checkpoint is left to its own roles."""
    if given.get("fp8_scales") != "dynamic" or spec.quantization is not None:
        return
    from ..errors import warn_assumption

    _, act, _ = cost.resolved_dtypes(spec.dtype)
    if act != "fp8":
        warn_assumption(f"fp8_scales='dynamic' changes nothing: activations are {act}, so no GEMM runs per-tensor "
                        "fp8 (give activation_dtype='fp8' for W8A8 GEMMs)")


def check_host_options(execution: ExecutionOptions, given: dict[str, Any]) -> None:
    """Refuse a host time the caller gave that the overhead mode does nothing with (it was dropped silently):
    step_host_s under overhead="none", prefill_dispatch_s under any mode but "graph" (an eager pass already pays
    PyTorch's dispatch per kernel; "none" charges no host time)."""
    from ..errors import OptionError

    by = f" (engine {execution.engine})" if "overhead" not in given and execution.engine else ""
    if given.get("step_host_s") and execution.overhead == "none":
        raise OptionError(f"step_host_s={given['step_host_s']!r} has no effect with overhead='none'{by}, which "
                          "charges no host time; give overhead='graph' or 'eager', or leave step_host_s out")
    if given.get("prefill_dispatch_s") and execution.overhead != "graph":
        raise OptionError(f"prefill_dispatch_s={given['prefill_dispatch_s']!r} has no effect with overhead="
                          f"{execution.overhead!r}{by}: it prices the uncaptured prefill of an engine that replays "
                          "CUDA graphs (overhead='graph'); leave it out or give overhead='graph'")


# the execution options that choose how experts run, and their defaults: on a model without experts they would be
# reported and ignored
MOE_ONLY_OPTIONS = {"mxfp4_moe_kernel": "default", "fp8_block_moe_kernel": "default", "moe_routing": "model"}


def check_moe_options(spec: ModelSpec, given: dict[str, Any]) -> None:
    """Refuse an option of MOE_ONLY_OPTIONS changed from its default on a model without experts."""
    from ..errors import OptionError

    changed = [k for k, default in MOE_ONLY_OPTIONS.items() if k in given and given[k] != default]
    if changed and not any(g.layer.is_moe for g in spec.layer_groups):
        raise OptionError(f"{changed[0]}={given[changed[0]]!r}: the model has no experts (every MLP is dense); "
                          f"leave {changed[0]} at {MOE_ONLY_OPTIONS[changed[0]]!r}")


def _check_precision(spec: ModelSpec, hw: HardwareSpec, cost: CostOptions) -> None:
    """The device must have a matrix unit at the precision the matmuls run at (e.g. no int4 on Hopper)."""
    from ..dtypes import matmul_precision
    from ..errors import OptionError

    weight, act, _ = cost.resolved_dtypes(spec.dtype)
    try:
        hw.matrix_peak_flops_per_s(matmul_precision(act, weight))
    except OptionError as exc:
        raise OptionError(f"activation_dtype={act!r}: {exc} (choose another activation_dtype)") from None


def check_workload(model: ModelSpec, batch_size: Any, prompt_len: Any, gen_len: Any) -> tuple[Any, Any, Any]:
    from ..errors import OptionError

    B = check_count("batch_size", batch_size, 1, BATCH_MAX)
    P = check_count("prompt_len", prompt_len, 1)
    G = check_count("gen_len", gen_len, 1)
    if isinstance(P, int) and isinstance(G, int):  # one workload: plain ints, no numpy needed
        longest = P + G - 1
    else:
        longest = int(np.max(np.asarray(P) + np.asarray(G) - 1))
    if longest > model.max_position_embeddings:
        raise OptionError(
            f"prompt_len + gen_len - 1 = {longest} exceeds the model's context of "
            f"{model.max_position_embeddings} tokens (max_position_embeddings)"
        )
    return B, P, G


def evaluate(model: ModelSpec, hardware: HardwareSpec, cost: CostOptions, execution: ExecutionOptions,
             batch_size: Any, prompt_len: Any, gen_len: Any, pipeline_parallel: int = 1,
             num_microbatches: int = 1) -> tuple[PhaseTotals, PhaseTotals, dict[str, Any]]:
    """Prefill totals, decode totals (summed over gen_len - 1 steps) and memory of one GPU; arrays
    broadcast. With pipeline_parallel=p the batch runs as num_microbatches micro-batches through p
    stages (see phases.pipelined)."""
    roofline = Roofline(hardware, execution)
    p, m = pipeline_parallel, num_microbatches
    micro = np.asarray(batch_size) // m if m > 1 else batch_size
    prefill = prefill_totals(model, roofline, cost, micro, prompt_len)
    # the prefill ops' per-run values serve the footprint only: handed over, then let go (a sweep's are large)
    memory = footprint(model, hardware, cost, micro, prompt_len, gen_len, prefill_values=prefill.take_values())
    decode = decode_totals(model, roofline, cost, micro, prompt_len, np.asarray(gen_len) - 1)
    if p > 1 or m > 1:
        prefill = pipeline_of(prefill, model, roofline, cost, micro, prompt_len, p, m)
        decode = pipeline_of(decode, model, roofline, cost, micro, 1, p, m, steps=np.asarray(gen_len) - 1,
                             steady=execution.pipeline_decode == "steady")
        # one GPU holds one stage: its layers' weights and KV cache of all m micro-batches, the embedding on the
        # first stage, the LM head on the last; the fullest stage's GPU is the one reported (memory.stage_weights_bytes;
        # approximation: every layer caches alike)
        # (one workload: simulate() runs a pipeline for a single batch and length)
        kv_all = memory["kv_cache_bytes"] * m
        stages = [(w, kv_all * n / model.num_layers) for w, n in stage_weights_bytes(model, cost, p)]
        weights, kv = max(stages, key=lambda stage: stage[0] + stage[1])
        memory = dict(memory, weights_bytes=weights, kv_cache_bytes=kv)
        memory["total_bytes"] = (memory["weights_bytes"] + memory["kv_cache_bytes"] + memory["activation_bytes"]
                                 + memory["workspace_bytes"])
        memory["fits"] = np.asarray(memory["total_bytes"]) <= hardware.memory_capacity_bytes
    return prefill, decode, memory


def pipeline_of(totals: PhaseTotals, model: ModelSpec, roofline: Roofline, cost: CostOptions, micro: Any,
                tokens: Any, p: int, m: int, steps: Any = 1, steady: bool = False) -> PhaseTotals:
    """A phase's totals on one GPU of a p-stage pipeline run by m micro-batches of `micro` sequences of
    `tokens` new tokens each (phases.pipelined, with the activation hand-over between stages); as given
    when p = m = 1."""
    if p == 1 and m == 1:
        return totals
    _, act_dtype, _ = cost.resolved_dtypes(model.dtype)
    from ..dtypes import residual_stream_bytes

    rb = Expr.sym("rb", residual_stream_bytes(act_dtype))  # the hidden state handed over
    h, b = Expr.sym("h", model.hidden_size), Expr.sym("b", micro)
    S = Expr.sym("S", tokens) if not (isinstance(tokens, int) and tokens == 1) else Expr.const(1)
    p2p = formula("collective")("pipeline.p2p", p - 1, kind="p2p", message_bytes=b * S * h * rb, group=2)
    return pipelined(totals, roofline, p, m, p2p, steps=steps, steady=steady)


def evaluate_inputs(result: Any) -> tuple[ModelSpec, HardwareSpec, CostOptions, ExecutionOptions]:
    """The model, device and options a SimulationResult was computed from (kept with it by simulate())."""
    inputs = inputs_of(result)
    if inputs is None:  # a result rebuilt from JSON or copied: resolve its names again
        spec, hw, _, _ = resolve(result.model, result.hardware, engine=result.engine)
        return spec, hw, result.options, result.execution
    return inputs


_OP_COLUMNS = ("matmul_flops", "vector_flops", "bytes", "time_s", *(f"{b}_s" for b in BOUNDS))


def _total(columns: dict[str, list[float]], key: str) -> float:
    return float(sum(columns[key]))


def _op_fields(totals: PhaseTotals, columns: dict[str, list[float]], phase_time_s: float, roofline: Roofline
               ) -> list[dict[str, Any]]:
    """Each op's OpResult fields from its totals over the phase."""
    matmul_flops, vector_flops, moved_bytes, time_s = (columns[key] for key in _OP_COLUMNS[:4])
    intensity = [(m + v) / b if b > 0 else 0.0 for m, v, b in zip(matmul_flops, vector_flops, moved_bytes)]
    # the first largest term, in BOUNDS order
    bound = [BOUNDS[terms.index(max(terms))] for terms in zip(*(columns[f"{b}_s"] for b in BOUNDS))]
    share = [t / phase_time_s for t in time_s] if phase_time_s > 0 else [0.0] * len(time_s)
    source = [where for where, _ in roofline.sources_of(totals.fixed)]
    rows = zip(totals.names, totals.kinds, totals.counts, *(columns[key] for key in _OP_COLUMNS), intensity, bound,
               share, source)
    return [dict(zip(_OP_FIELDS, row)) for row in rows]


_OP_FIELDS = ("name", "kind", "count", *_OP_COLUMNS, "arithmetic_intensity", "bound", "share", "source")



_INPUTS: dict[int, tuple[tuple[Any, ...], Any]] = {}  # id(result) -> (its inputs, a weak reference to it)


def remember_inputs(result: Any, inputs: tuple[Any, ...]) -> None:
    """Keep the inputs of `result` while it lives (forgotten by a weak reference's callback when it dies:
    as weakref.finalize would, without its registry)."""
    key = id(result)
    _INPUTS[key] = (inputs, weakref.ref(result, lambda _, key=key: _INPUTS.pop(key, None)))


def inputs_of(result: Any) -> tuple[Any, ...] | None:
    found = _INPUTS.get(id(result))
    return None if found is None else found[0]
