"""simulate()'s fast path for one workload: the same result as the reference path, built with plain floats.

Two things make a warm simulate() by name slow that do not depend on the workload, and are done once here
per (model, device, engine, options), kept while the loaded specs are the same objects (load_model and
load_hardware hand back the same spec while its file or dict is unchanged, and a new one when it changed):
  - resolve(): the engine's defaults, the options validated into CostOptions and ExecutionOptions, the
    precision and table checks;
  - everything the phases read but the workload (timing.fast_path.ScalarPlan), the weight bytes, the
    assumptions and the measured tables' provenance.
What depends on the workload is computed op by op on Python floats (timing.fast_path), and the result
objects are built without validating again what was built here from validated inputs (`_trusted`).

`fast_simulate` returns None wherever it does not apply (arrays, pipelines, micro-batches, an input the
reference path refuses, a model or option the scalar plan does not cover): simulate() then takes the
reference path, which stays the definition. tests/test_fast_paths.py checks that both give the same result.
"""

from __future__ import annotations

import threading
from typing import Any

from pydantic import BaseModel

from ..cost.workload import BATCH_MAX, COUNT_MAX
from ..hardware.spec import HardwareSpec, load_hardware
from ..models.spec import ModelSpec
from ..timing.fast_path import ScalarPlan
from ..timing.fast_sweep import VectorPhases
from ..timing.roofline import BOUNDS
from .evaluation import load_model_given, remember_inputs
from .memory import MemoryResult, footprint, weights_bytes, workspace_bytes
from .provenance import assumptions_of, provenance_of
from .results import OpResult, PhaseResult, SimulationResult


def _trusted(cls: type, fields: dict[str, Any]) -> Any:
    """An instance of the pydantic model `cls` holding `fields` (every field, in declaration order), not
    validated again: for values computed here from validated inputs (as model_construct does, without its
    pass over the fields' defaults). Frozen models: their fields-set is never changed, so one is shared
    (model_copy copies it before changing it)."""
    obj = _new(cls)
    _set_dict(obj, fields)
    _set_fields_set(obj, _FIELDS_SET[cls])
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


_new = object.__new__
# the setters of BaseModel's slots, called directly (as object.__setattr__ reaches them, without its lookup)
_set_dict, _set_fields_set, _set_extra, _set_private = (
    BaseModel.__dict__[name].__set__
    for name in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"))
_FIELDS_SET = {cls: set(cls.model_fields) for cls in (OpResult, PhaseResult, SimulationResult, MemoryResult)}


class _Prepared:
    """What simulate() computes for (model, device, engine, options) whatever the workload."""

    __slots__ = (
        "act_bytes",
        "assumptions",
        "capacity",
        "fixed",
        "gpus_per_replica",
        "inputs",
        "kv",
        "kv_bytes_at",
        "loaded",
        "max_tokens",
        "plan",
        "provenance",
        "weights",
        "workspace",
    )

    def __init__(self, loaded: tuple[Any, Any], spec: ModelSpec, hw: HardwareSpec, cost: Any, execution: Any,
                 plan: ScalarPlan) -> None:
        from ..dtypes import dtype_bytes

        self.loaded, self.inputs, self.plan = loaded, (spec, hw, cost, execution), plan
        roofline = plan.roofline
        self.weights = weights_bytes(spec, cost)
        self.workspace = workspace_bytes(hw)
        self.assumptions = assumptions_of(spec, hw, cost, execution)
        self.provenance = provenance_of(roofline, tuple(_FixedOnly(p) for p in (plan.prefill, plan.decode)))
        # per phase, each op's (name, kind, count, source)
        self.fixed = tuple(list(zip(p.fixed.names, p.fixed.kinds, p.fixed.counts,
                                    [where for where, _ in roofline.sources_of(p.fixed)]))
                           for p in (plan.prefill, plan.decode))
        _, act, kv = cost.resolved_dtypes(spec.dtype)
        self.kv = kv
        self.kv_bytes_at = _kv_bytes_function(spec, kv, cost.tensor_parallel)
        self.act_bytes = dtype_bytes(act)
        self.capacity = hw.memory_capacity_bytes
        self.max_tokens = spec.max_position_embeddings
        self.gpus_per_replica = cost.tensor_parallel


def _kv_bytes_function(spec: ModelSpec, kv_dtype: str, tensor_parallel: int) -> Any:
    """spec.kv_cache_bytes(B, S, kv_dtype, tensor_parallel) of Python ints as a function (B, S) -> bytes in
    plain Python (None where it gives up: the reference method then), or None where the model holds recurrent
    states. The same numbers: numpy multiplies count x B x tokens x values in int64, exact below 2**63 (checked:
    the integer product is the same there), then x the dtype's bytes as a float, and adds the groups in order."""
    from ..dtypes import canonical_dtype, kv_element_bytes

    if spec.recurrent_state_bytes(1, kv_dtype, tensor_parallel) != 0.0:
        return None
    kv_bytes = kv_element_bytes(canonical_dtype(kv_dtype or spec.dtype, "kv_dtype"))
    groups = [(count, attn.sliding_window, values) for count, attn, values in spec.kv_cache_groups(tensor_parallel)]
    if not all(type(count) is int and type(values) is int and (window is None or type(window) is int)
               for count, window, values in groups):
        return None

    def kv_bytes_at(B: int, S: int) -> float | None:
        total = 0.0  # recurrent_state_bytes: none
        for count, window, values in groups:
            elements = count * B * (S if window is None else min(S, window - 1)) * values  # AttentionSpec.cached_tokens
            if elements >= 1 << 63:  # past int64: as numpy computes it, from the reference method
                return None
            total = total + elements * kv_bytes
        return total

    return kv_bytes_at


class _FixedOnly:
    """A stand-in for PhaseTotals where provenance_of reads only `.fixed`."""

    def __init__(self, phase: Any) -> None:
        self.fixed = phase.fixed


_PREPARED: dict[tuple, _Prepared | None] = {}
_LOCK = threading.Lock()
_SIZE = 64


def _prepared(model: Any, hardware: Any, options: dict[str, Any]) -> _Prepared | None:
    """The prepared computation of these inputs, made on first use; None where the fast path does not apply."""
    spec0, hw0 = load_model_given(model, options), load_hardware(hardware)  # memoised: the same objects
    try:
        key = (id(spec0), id(hw0), *sorted(options.items()))
        entry = _PREPARED.get(key, False)
    except TypeError:  # an option value that cannot be a key (a list): the reference path
        return None
    if entry is not False and (entry is None or (entry.loaded[0] is spec0 and entry.loaded[1] is hw0)):
        return entry
    made = _prepare(spec0, hw0, options)
    with _LOCK:
        while len(_PREPARED) >= _SIZE:
            _PREPARED.pop(next(iter(_PREPARED)))
        _PREPARED[key] = made
    return made


def _prepare(spec0: ModelSpec, hw0: HardwareSpec, options: dict[str, Any]) -> _Prepared | None:
    from .evaluation import resolve

    tables = options.get("tables")
    if spec0.dtype == "float32" or (isinstance(tables, str) and ("/" in tables or "\\" in tables)):
        # float32 configs (served_model warns on every call) and tables read from a folder (read again as
        # the reference does): the reference path
        return None
    spec, hw, cost, execution = resolve(spec0, hw0, **options)
    plan = ScalarPlan.make(spec, hw, cost, execution)
    if plan is None:
        return None
    return _Prepared((spec0, hw0), spec, hw, cost, execution, plan)


def fast_simulate(model: Any, hardware: Any, batch_size: Any, prompt_len: Any, gen_len: Any,
                  pipeline_parallel: Any, num_microbatches: Any, data_parallel: Any,
                  options: dict[str, Any]) -> SimulationResult | None:
    """simulate()'s result by the scalar fast path, or None where it does not apply."""
    B, P, G, r = batch_size, prompt_len, gen_len, data_parallel
    if not (type(B) is int and type(P) is int and type(G) is int and type(r) is int and pipeline_parallel == 1
            and type(pipeline_parallel) is int and num_microbatches in (None, 1) and 1 <= B <= BATCH_MAX
            and 1 <= P <= COUNT_MAX and 1 <= G <= COUNT_MAX and 1 <= r <= COUNT_MAX):
        return None
    prepared = _prepared(model, hardware, options)
    if prepared is None or prepared.max_tokens < P + G - 1:
        return None
    spec, hw, cost, execution = prepared.inputs
    plan = prepared.plan
    try:
        prefill, values = plan.prefill_totals(B, P)
        decode = plan.decode_totals(B, P, G)
        memory = _memory(prepared, spec, B, P, G, values)
    except (ArithmeticError, TypeError, ValueError):  # numpy would give inf or NaN here: the reference path says
        return None
    prefill_result = _phase("prefill", prefill, 1, prepared.fixed[0])
    decode_result = _phase("decode", decode, G - 1, prepared.fixed[1])
    ttft = prefill_result.time_s
    tpot = decode_result.time_s / (G - 1) if G > 1 else 0.0
    e2e = ttft + (G - 1) * tpot
    gpus = prepared.gpus_per_replica * r
    throughput = r * B * G / e2e if e2e > 0 else 0.0
    provenance = prepared.provenance
    result = _trusted(SimulationResult, {
        "model": spec.name, "hardware": hw.name, "batch_size": B, "prompt_len": P, "gen_len": G,
        "options": cost, "execution": execution, "tensor_parallel": cost.tensor_parallel, "pipeline_parallel": 1,
        "expert_parallel": cost.expert_parallel, "data_parallel": r, "num_microbatches": 1, "gpus": gpus,
        "ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e, "throughput_tokens_per_s": throughput,
        "tokens_per_s_per_gpu": throughput / gpus, "prefill": prefill_result, "decode": decode_result,
        "memory": memory, "assumptions": dict(prepared.assumptions), "engine": execution.engine,
        "measured_tables": dict(provenance["measured_tables"]),
        "roofline_reasons": list(provenance["roofline_reasons"]), "device_type": hw.device_type,
    })
    remember_inputs(result, prepared.inputs)
    return result  # type: ignore[no-any-return]


def _memory(prepared: _Prepared, spec: ModelSpec, B: int, P: int, G: int, values: Any) -> MemoryResult:
    """memory.footprint of one workload (the prefill's per-run values give the peak activations)."""
    kv = None if prepared.kv_bytes_at is None else prepared.kv_bytes_at(B, P + G - 1)
    if kv is None:
        kv = float(spec.kv_cache_bytes(batch_size=B, seq_len=P + G - 1, kv_dtype=prepared.kv,
                                       tensor_parallel=prepared.inputs[2].tensor_parallel))
    # max(max(0.0, op 1), op 2), ... of each op's bytes_read - weight_bytes + bytes_written
    largest = max([0.0, *[float(v[2] - v[4] + v[3]) for v in values]])
    activations = B * P * spec.hidden_size * prepared.act_bytes + largest
    total = prepared.weights + kv + activations + prepared.workspace
    return _trusted(MemoryResult, {
        "weights_bytes": float(prepared.weights), "kv_cache_bytes": kv, "activation_bytes": float(activations),
        "workspace_bytes": float(prepared.workspace), "total_bytes": float(total),
        "capacity_bytes": float(prepared.capacity), "fits": bool(total <= prepared.capacity)})


assert BOUNDS == ("compute", "memory", "overhead", "communication")  # the order _phase's bound test follows


def _phase(phase: str, totals: list[tuple[float, ...]], steps: int, fixed: list[tuple[Any, ...]]) -> PhaseResult:
    """simulate._phase_result from the scalar totals: the same sums in the same order."""
    columns = list(zip(*totals))  # time, compute, memory, overhead, communication, matmul, vector, bytes
    time_s = float(sum(columns[0]))
    compute, memory, overhead, communication = (float(sum(columns[1])), float(sum(columns[2])),
                                                float(sum(columns[3])), float(sum(columns[4])))
    parts = {"compute": compute, "memory": memory, "overhead": overhead, "communication": communication}
    shares = ({"compute": compute / time_s, "memory": memory / time_s, "overhead": overhead / time_s,
               "communication": communication / time_s} if time_s > 0 else dict.fromkeys(BOUNDS, 0.0))
    ops = []
    fields_set, new = _FIELDS_SET[OpResult], _new
    set_dict, set_fields_set, set_extra, set_private = _set_dict, _set_fields_set, _set_extra, _set_private
    for (t, c, m, o, comm, mf, vf, by), (name, kind, count, source) in zip(totals, fixed):
        # the first largest of (compute, memory, overhead, communication), as BOUNDS[terms.index(max(terms))]
        bound = ("compute" if c >= m and c >= o and c >= comm else "memory" if m >= o and m >= comm
                 else "overhead" if o >= comm else "communication")
        op = new(OpResult)  # _trusted, written out: 26 of these per call
        set_dict(op, {
            "name": name, "kind": kind, "count": count, "matmul_flops": mf, "vector_flops": vf, "bytes": by,
            "arithmetic_intensity": (mf + vf) / by if by > 0 else 0.0, "time_s": t, "compute_s": c, "memory_s": m,
            "overhead_s": o, "communication_s": comm, "bound": bound,
            "share": t / time_s if time_s > 0 else 0.0, "source": source})
        set_fields_set(op, fields_set)
        set_extra(op, None)
        set_private(op, None)
        ops.append(op)
    return _trusted(PhaseResult, {
        "phase": phase, "steps": steps, "time_s": time_s, "compute_s": compute, "memory_s": memory,
        "overhead_s": overhead, "communication_s": communication, "shares": shares,
        "bound": max(parts, key=parts.__getitem__) if time_s > 0 else "none",
        "flops": float(sum(columns[5])) + float(sum(columns[6])), "bytes": float(sum(columns[7])), "ops": ops})


_SWEEP_PLANS: dict[tuple, tuple[Any, Any, Any]] = {}


def _sweep_plan(spec: ModelSpec, hw: HardwareSpec, cost: Any, execution: Any) -> VectorPhases | None:
    """The VectorPhases of these inputs (specs by identity: a HardwareSpec does not hash), made on first use."""
    key = (id(spec), id(hw), cost, execution)
    found = _SWEEP_PLANS.get(key)
    if found is None or found[0] is not spec or found[1] is not hw:
        plan = ScalarPlan.make(spec, hw, cost, execution)
        found = (spec, hw, None if plan is None else VectorPhases(plan))
        with _LOCK:
            while len(_SWEEP_PLANS) >= 16:
                _SWEEP_PLANS.pop(next(iter(_SWEEP_PLANS)))
            _SWEEP_PLANS[key] = found
    return found[2]


def fast_evaluate(spec: ModelSpec, hw: HardwareSpec, cost: Any, execution: Any, B: Any, P: Any, G: Any
                  ) -> tuple[Any, Any, dict[str, Any]] | None:
    """evaluation.evaluate of a sweep block (one stage, one micro-batch) by the fast path: each phase's PARTS
    summed over its ops (timing.fast_sweep) and the footprint; None where the fast path does not apply."""
    phases = _sweep_plan(spec, hw, cost, execution)
    if phases is None:
        return None
    prefill, values = phases.prefill(B, P)
    runs = {quantity: [v[i] for v in values] for quantity, i in (("bytes_read", 2), ("bytes_written", 3),
                                                                   ("weight_bytes", 4))}
    memory = footprint(spec, hw, cost, B, P, G, prefill_values=runs)
    return prefill, phases.decode(B, P, G), memory
