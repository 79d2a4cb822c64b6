"""simulate(): time to first token, time per output token, throughput, memory, and why.

Definitions:
- TTFT (time to first token) = the time of the prefill of prompt_len tokens, which yields token 1.
- TPOT (time per output token) = the mean time of the gen_len - 1 decode steps that follow; step i
  (i = 1 .. gen_len - 1) attends to prompt_len + i keys. Summed exactly, not sampled. 0 when gen_len = 1.
- e2e = TTFT + (gen_len - 1) * TPOT; throughput = batch_size * gen_len / e2e (tokens generated per second).
- bound of an op: the largest of its compute, memory and overhead terms; of a phase: where the largest
  share of its time goes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..cost.workload import BATCH_MAX, check_count, check_one
from ..models.spec import ModelSpec
from ..timing.phases import PhaseTotals
from ..timing.roofline import BOUNDS, Roofline
from .evaluation import (  # noqa: F401  (resolve, check_workload, evaluate: re-exported)
    _OP_COLUMNS,
    _op_fields,
    _total,
    check_workload,
    evaluate,
    evaluate_inputs,
    pipeline_of,
    refuse_pipeline_decode,
    remember_inputs,
    resolve,
)
from .fast_simulate import fast_simulate
from .memory import MemoryResult, footprint, largest_fitting
from .provenance import assumptions_of, provenance_of
from .results import PhaseResult, SimulationResult


def default_microbatches(batch_size: int, pipeline_parallel: int) -> int:
    """The micro-batches a pipeline of p stages runs a batch of B as by default: the largest divisor of B up to p
    (p when it divides; 6 for 12 over 8 stages). Before session 33 a batch p did not divide ran as one micro-batch,
    with no pipelining at all (TTFT of 12 over 8 stages 6.0 s, of 8 and 16 1.0 and 1.9 s)."""
    return max(d for d in range(1, min(batch_size, pipeline_parallel) + 1) if batch_size % d == 0)

def simulate(model: Any, hardware: Any, batch_size: int = 1, prompt_len: int = 512, gen_len: int = 128,
             pipeline_parallel: int = 1, num_microbatches: int | None = None, data_parallel: int = 1,
             **options: Any) -> SimulationResult:
    """Predict one generation: `batch_size` sequences of `prompt_len` prompt tokens, `gen_len` new tokens.

    model: a shipped name, a config.json path or folder, a dict, a PretrainedConfig or a ModelSpec.
    hardware: a shipped name, a hardware file path, or a HardwareSpec.
    options: the cost options of `build_ops` (attention, logits, mla, fusion, weight_dtype,
    activation_dtype, kv_dtype, tensor_parallel, expert_parallel) and the execution options
    (efficiency, overhead, overlap).
    Multi-GPU: tensor_parallel and expert_parallel split each layer (CostOptions);
    pipeline_parallel=p splits the layers into p stages run by num_microbatches micro-batches
    (default: the largest divisor of the batch up to p, default_microbatches); decode steady by default
    (pipeline_decode="steady": the micro-batches stay in flight across steps, as serving engines run them,
    max(m, p) stage times a step) or "lockstep" (every token fills and drains the pipeline, m + p - 1 stage
    times), the result's assumptions say which (see timing.phases.pipelined); data_parallel=r runs r replicas,
    each with `batch_size` sequences. Times are per replica; throughput counts all replicas; memory is per GPU.
    """
    if options.get("pipeline_decode") == "lockstep" and pipeline_parallel == 1 and num_microbatches in (
            None, 1):  # one stage, one micro-batch: nothing is in flight, the option would be ignored
        from ..errors import OptionError

        raise OptionError(f"pipeline_decode={options['pipeline_decode']!r} applies under pipeline_parallel > 1 (or "
                          "num_microbatches > 1); give pipeline_parallel, or leave pipeline_decode")
    fast = fast_simulate(model, hardware, batch_size, prompt_len, gen_len, pipeline_parallel, num_microbatches,
                         data_parallel, options)
    if fast is not None:  # one workload by the scalar fast path: the same result (tests/test_fast_paths.py)
        return fast
    spec, hw, cost, execution = resolve(model, hardware, **options)
    B, P, G = check_workload(spec, batch_size, prompt_len, gen_len)
    for name, value in (("batch_size", B), ("prompt_len", P), ("gen_len", G)):
        if np.ndim(value):
            from ..errors import OptionError

            raise OptionError(f"{name} must be a single integer in simulate(); use llmsim.sweep for several")
    p, r = _parallel_degrees(spec, pipeline_parallel, data_parallel)
    m = num_microbatches if num_microbatches is not None else default_microbatches(B, p)
    m = check_one("num_microbatches", m, 1)
    if B % m:
        from ..errors import OptionError

        raise OptionError(f"num_microbatches={m} must divide batch_size={B}")
    if m > 1 and p == 1:  # the batch would run as m sequential chunks, each reading every weight, unsaid
        from ..errors import OptionError

        raise OptionError(f"num_microbatches={m} applies to pipeline_parallel > 1 (micro-batches in flight across "
                          "the stages); one stage runs the batch whole")
    prefill, decode, memory = evaluate(spec, hw, cost, execution, B, P, G, p, m)
    roofline = Roofline(hw, execution)
    prefill_result = _phase_result("prefill", prefill, 1, roofline)
    decode_result = _phase_result("decode", decode, G - 1, roofline)
    ttft = prefill_result.time_s
    tpot = decode_result.time_s / (G - 1) if G > 1 else 0.0
    e2e = ttft + (G - 1) * tpot
    gpus = cost.tensor_parallel * p * r
    throughput = r * B * G / e2e if e2e > 0 else 0.0
    result = SimulationResult(
        model=spec.name,
        hardware=hw.name,
        batch_size=B,
        prompt_len=P,
        gen_len=G,
        options=cost,
        execution=execution,
        tensor_parallel=cost.tensor_parallel,
        pipeline_parallel=p,
        expert_parallel=cost.expert_parallel,
        data_parallel=r,
        num_microbatches=m,
        gpus=gpus,
        ttft_s=ttft,
        tpot_s=tpot,
        e2e_s=e2e,
        throughput_tokens_per_s=throughput,
        tokens_per_s_per_gpu=throughput / gpus,
        prefill=prefill_result,
        decode=decode_result,
        memory=MemoryResult(**{k: float(v) if k != "fits" else bool(v) for k, v in memory.items()}),
        assumptions=assumptions_of(spec, hw, cost, execution) | _pipeline_assumption(p, m, execution),
        engine=execution.engine,
        **provenance_of(roofline, (prefill, decode)),
        device_type=hw.device_type,
    )
    remember_inputs(result, (spec, hw, cost, execution))  # for layer_table, which computes one step again
    return result


def _pipeline_assumption(p: int, m: int, execution: Any) -> dict[str, str]:
    """Which pipeline model timed the run (none without pipeline parallelism)."""
    if p == 1:
        return {}
    decode = ("decode steady (micro-batches in flight across steps, as serving engines run it): max(m, p) stage "
              "times a step" if execution.pipeline_decode == "steady" else
              "decode lockstep (every token fills and drains the pipeline): m + p - 1 stage times a step")
    return {"pipeline": f"{p} stages, m={m} micro-batches: prefill fills and drains it (m + p - 1 stage times), "
                        f"{decode}"}


def _parallel_degrees(spec: ModelSpec, pipeline_parallel: Any, data_parallel: Any) -> tuple[int, int]:
    from ..errors import OptionError

    p = check_count("pipeline_parallel", pipeline_parallel, 1)
    r = check_count("data_parallel", data_parallel, 1)
    if np.ndim(p) or np.ndim(r):
        raise OptionError("pipeline_parallel and data_parallel must be single integers")
    if p > spec.num_layers:
        raise OptionError(f"pipeline_parallel={p} exceeds the model's {spec.num_layers} layers")
    return int(p), int(r)


def _phase_result(phase: str, totals: PhaseTotals, steps: int, roofline: Roofline) -> PhaseResult:
    # every per-op total as a Python float, once; Python's float sums below round exactly as numpy's
    # sums of these float64 scalars would (same IEEE double additions, same order)
    columns = {key: list(map(float, values)) for key, values in totals.per_op.items()}
    time_s = _total(columns, "time_s")
    parts = {b: _total(columns, f"{b}_s") for b in BOUNDS}
    shares = {b: (v / time_s if time_s > 0 else 0.0) for b, v in parts.items()}
    return PhaseResult(
        phase=phase, steps=steps, time_s=time_s, compute_s=parts["compute"], memory_s=parts["memory"],
        overhead_s=parts["overhead"], communication_s=parts["communication"], shares=shares,
        bound=max(parts, key=lambda b: parts[b]) if time_s > 0 else "none",
        flops=_total(columns, "matmul_flops") + _total(columns, "vector_flops"),
        bytes=_total(columns, "bytes"),
        # one dict of OpResult fields per op: pydantic validates them all into OpResults in one call,
        # faster than constructing each OpResult (even with model_construct)
        ops=_op_fields(totals, columns, time_s, roofline),
    )


def max_batch_size(model: Any, hardware: Any, prompt_len: int, gen_len: int, limit: int = 1 << 20,
                   pipeline_parallel: int = 1, **options: Any) -> int | None:
    """The largest batch up to `limit` whose footprint fits the device (None if batch 1 does not fit);
    pipeline_parallel=p: on the fullest stage's GPU, as simulate(pipeline_parallel=p) reports its memory (its
    layers' weights and the KV cache of every micro-batch)."""
    stages = check_one("pipeline_parallel", pipeline_parallel, 1)
    if stages == 1:
        refuse_pipeline_decode(options, "max_batch_size() without pipeline_parallel")
    spec, hw, cost, _ = resolve(model, hardware, **options)
    prompt_len, gen_len = check_one("prompt_len", prompt_len, 1), check_one("gen_len", gen_len, 1)
    limit = check_one("limit", limit, 1, BATCH_MAX)
    check_workload(spec, 1, prompt_len, gen_len)
    if stages == 1:
        return largest_fitting(lambda b: bool(footprint(spec, hw, cost, b, prompt_len, gen_len)["fits"]), 1, limit)
    return largest_fitting(lambda b: simulate(spec, hw, batch_size=b, prompt_len=prompt_len, gen_len=gen_len,
                                              pipeline_parallel=stages, **options).memory.fits, 1, limit)


def max_context(model: Any, hardware: Any, batch_size: int, gen_len: int = 1, **options: Any) -> int | None:
    """The longest prompt that fits with `gen_len` tokens generated (capped by the model's context)."""
    refuse_pipeline_decode(options, "max_context()")
    spec, hw, cost, _ = resolve(model, hardware, **options)
    batch_size, gen_len = check_one("batch_size", batch_size, 1, BATCH_MAX), check_one("gen_len", gen_len, 1)
    check_workload(spec, batch_size, 1, gen_len)
    top = spec.max_position_embeddings - gen_len + 1
    return largest_fitting(lambda p: bool(footprint(spec, hw, cost, batch_size, p, gen_len)["fits"]), 1, top)


class FusionSavings(BaseModel):
    """What fusing elementwise work would buy on one workload, per phase, against fusion="none"."""

    model_config = ConfigDict(frozen=True)
    fusion: str
    prefill_bytes_saved: float
    prefill_time_saved_s: float
    prefill_speedup: float
    decode_bytes_saved: float
    decode_time_saved_s: float
    decode_speedup: float
    e2e_speedup: float


def fusion_savings(model: Any, hardware: Any, batch_size: int = 1, prompt_len: int = 512, gen_len: int = 128,
                   **options: Any) -> dict[str, FusionSavings]:
    """Bytes and time that fusion="elementwise" and fusion="full" save against fusion="none", per phase.

    The special case of llmsim.whatif(..., vary={"fusion": ["none", "elementwise", "full"]}), which
    compares any options side by side (kernels, overheads, engines, dtypes) in one table."""
    if "fusion" in options:
        from ..errors import OptionError

        raise OptionError(f"fusion={options['fusion']!r}: fusion_savings compares fusion='none', 'elementwise' and "
                          "'full' itself; leave the fusion option out")
    base = simulate(model, hardware, batch_size, prompt_len, gen_len, fusion="none", **options)
    out = {}
    for policy in ("elementwise", "full"):
        fused = simulate(model, hardware, batch_size, prompt_len, gen_len, fusion=policy, **options)
        out[policy] = FusionSavings(
            fusion=policy,
            prefill_bytes_saved=base.prefill.bytes - fused.prefill.bytes,
            prefill_time_saved_s=base.prefill.time_s - fused.prefill.time_s,
            prefill_speedup=base.prefill.time_s / fused.prefill.time_s,
            decode_bytes_saved=base.decode.bytes - fused.decode.bytes,
            decode_time_saved_s=base.decode.time_s - fused.decode.time_s,
            decode_speedup=base.decode.time_s / fused.decode.time_s if fused.decode.time_s else 1.0,
            e2e_speedup=base.e2e_s / fused.e2e_s,
        )
    return out
