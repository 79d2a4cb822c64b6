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

from ..cost.op import formula
from ..cost.symbolic import Expr
from ..cost.workload import CostOptions, check_count
from ..hardware.spec import HardwareSpec, load_hardware
from ..models.loading import load_model
from ..models.spec import ModelSpec
from ..timing.phases import PhaseTotals, decode_totals, pipelined, prefill_totals
from ..timing.roofline import BOUNDS, ExecutionOptions, Roofline
from .memory import MemoryResult, footprint, largest_fitting


class OpResult(BaseModel):
    """One op's totals over its phase (all runs, all decode steps)."""

    model_config = ConfigDict(frozen=True)
    name: str
    kind: str
    count: int
    matmul_flops: float
    vector_flops: float
    bytes: float
    arithmetic_intensity: float
    time_s: float
    compute_s: float
    memory_s: float
    overhead_s: float
    communication_s: float = 0.0
    bound: str
    share: float


class PhaseResult(BaseModel):
    """A phase's time, where it goes (shares of compute, memory, overhead), its bound and ops."""

    model_config = ConfigDict(frozen=True)
    phase: str
    steps: int
    time_s: float
    compute_s: float
    memory_s: float
    overhead_s: float
    communication_s: float = 0.0
    shares: dict[str, float]
    bound: str
    flops: float
    bytes: float
    ops: list[OpResult]

    @property
    def step_time_s(self) -> float:
        return self.time_s / self.steps if self.steps else 0.0


class SimulationResult(BaseModel):
    """The prediction for one workload on one device, with every assumption visible."""

    model_config = ConfigDict(frozen=True)
    model: str
    hardware: str
    batch_size: int
    prompt_len: int
    gen_len: int
    options: CostOptions
    execution: ExecutionOptions
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    expert_parallel: int = 1
    data_parallel: int = 1
    num_microbatches: int = 1
    gpus: int = 1
    ttft_s: float
    tpot_s: float
    e2e_s: float
    throughput_tokens_per_s: float
    tokens_per_s_per_gpu: float = 0.0
    prefill: PhaseResult
    decode: PhaseResult
    memory: MemoryResult
    assumptions: dict[str, str]

    def ops_table(self, phase: str | None = None, top: int | None = None) -> str:
        """A text table per op: count, FLOPs, bytes, arithmetic intensity, time, bound, share."""
        lines = []
        for result in (self.prefill, self.decode):
            if phase and result.phase != phase:
                continue
            label = f"{result.phase} ({result.steps} step{'s' if result.steps != 1 else ''}, {_fmt_s(result.time_s)})"
            lines.append(label)
            lines.append(f"  {'op':<40} {'count':>5} {'GFLOP':>10} {'MB':>10} {'FLOP/B':>8} {'time':>10} "
                         f"{'bound':>8} {'share':>6}")
            ops = sorted(result.ops, key=lambda o: -o.time_s)[: top or None]
            for op in ops:
                lines.append(
                    f"  {op.name:<40} {op.count:>5} {(op.matmul_flops + op.vector_flops) / 1e9:>10.3f} "
                    f"{op.bytes / 1e6:>10.2f} {op.arithmetic_intensity:>8.1f} {_fmt_s(op.time_s):>10} "
                    f"{op.bound:>8} {op.share:>6.1%}"
                )
        return "\n".join(lines)

    def __str__(self) -> str:
        m = self.memory
        gib = 1024**3
        split = ""
        if self.gpus > 1:
            split = (f" on {self.gpus} GPUs (tensor {self.tensor_parallel} x pipeline {self.pipeline_parallel}"
                     f" x data {self.data_parallel}, expert {self.expert_parallel})")
        lines = [
            f"{self.model} on {self.hardware}{split}: batch {self.batch_size}, prompt {self.prompt_len}, "
            f"generate {self.gen_len}",
            f"  TTFT        {_fmt_s(self.ttft_s):>10}   prefill {self.prefill.bound}-bound "
            f"({_shares(self.prefill)})",
            f"  TPOT        {_fmt_s(self.tpot_s):>10}   decode {self.decode.bound}-bound ({_shares(self.decode)})",
            f"  end to end  {_fmt_s(self.e2e_s):>10}",
            f"  throughput  {self.throughput_tokens_per_s:>10.1f} tokens/s generated "
            f"({self.tokens_per_s_per_gpu:.1f} per GPU)",
            f"  memory      {m.total_bytes / gib:>8.2f} GiB per GPU of {m.capacity_bytes / gib:.2f} GiB "
            f"({'fits' if m.fits else 'DOES NOT FIT'}): weights {m.weights_bytes / gib:.2f}, "
            f"KV cache {m.kv_cache_bytes / gib:.2f}, activations {m.activation_bytes / gib:.2f}, "
            f"workspace {m.workspace_bytes / gib:.2f}",
            "  assumptions: " + "; ".join(f"{k}={v}" for k, v in self.assumptions.items()),
        ]
        return "\n".join(lines)


def _fmt_s(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.2f} us"


def _shares(phase: PhaseResult) -> str:
    return ", ".join(f"{k} {v:.0%}" for k, v in phase.shares.items())


def resolve(model: Any, hardware: Any, **options: Any) -> tuple[ModelSpec, HardwareSpec, CostOptions, ExecutionOptions]:
    """Load model and hardware and split keyword options into cost and execution options."""
    cost_keys = set(CostOptions.model_fields)
    exec_keys = set(ExecutionOptions.model_fields)
    unknown = set(options) - cost_keys - exec_keys
    if unknown:
        from ..errors import choice_error

        raise choice_error("option", sorted(unknown)[0], cost_keys | exec_keys)
    cost = CostOptions.make(**{k: v for k, v in options.items() if k in cost_keys})
    execution = ExecutionOptions.make(**{k: v for k, v in options.items() if k in exec_keys})
    return load_model(model), load_hardware(hardware), cost, execution


def check_workload(model: ModelSpec, batch_size: Any, prompt_len: Any, gen_len: Any) -> tuple[Any, Any, Any]:
    from ..errors import OptionError

    B = check_count("batch_size", batch_size, 1)
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
        _, act_dtype, _ = cost.resolved_dtypes(model.dtype)
        from ..dtypes import dtype_bytes

        ab = Expr.sym("ab", dtype_bytes(act_dtype))
        h, b = Expr.sym("h", model.hidden_size), Expr.sym("b", micro)
        for phase, tokens in (("prefill", Expr.sym("S", prompt_len)), ("decode", Expr.const(1))):
            p2p = formula("collective")("pipeline.p2p", p - 1, kind="p2p", message_bytes=b * tokens * h * ab, group=2)
            if phase == "prefill":
                prefill = pipelined(prefill, roofline, p, m, p2p)
            else:
                decode = pipelined(decode, roofline, p, m, p2p, steps=np.asarray(gen_len) - 1)
        # one GPU holds 1/p of the layers: weights and KV cache of all m micro-batches, split by p
        kv_all = memory["kv_cache_bytes"] * m
        memory = dict(memory, weights_bytes=memory["weights_bytes"] / p, kv_cache_bytes=kv_all / p)
        memory["total_bytes"] = (memory["weights_bytes"] + memory["kv_cache_bytes"] + memory["activation_bytes"]
                                 + memory["workspace_bytes"])
        memory["fits"] = np.asarray(memory["total_bytes"]) <= hardware.memory_capacity_bytes
    return prefill, decode, memory


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
    (default: p when the batch divides, else 1); data_parallel=r runs r replicas, each with
    `batch_size` sequences. Times are per replica; throughput counts all replicas; memory is per GPU.
    """
    spec, hw, cost, execution = resolve(model, hardware, **options)
    B, P, G = check_workload(spec, batch_size, prompt_len, gen_len)
    for name, value in (("batch_size", B), ("prompt_len", P), ("gen_len", G)):
        if np.ndim(value):
            from ..errors import OptionError

            raise OptionError(f"{name} must be a single integer in simulate(); use llmsim.sweep for several")
    p, r = _parallel_degrees(spec, pipeline_parallel, data_parallel)
    m = num_microbatches if num_microbatches is not None else (p if B % p == 0 else 1)
    m = check_count("num_microbatches", m, 1)
    if B % m:
        from ..errors import OptionError

        raise OptionError(f"num_microbatches={m} must divide batch_size={B}")
    prefill, decode, memory = evaluate(spec, hw, cost, execution, B, P, G, p, m)
    prefill_result = _phase_result("prefill", prefill, 1)
    decode_result = _phase_result("decode", decode, G - 1)
    ttft = prefill_result.time_s
    tpot = decode_result.time_s / (G - 1) if G > 1 else 0.0
    e2e = ttft + (G - 1) * tpot
    gpus = cost.tensor_parallel * p * r
    throughput = r * B * G / e2e if e2e > 0 else 0.0
    return SimulationResult(
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
        assumptions=_assumptions(spec, hw, cost, execution),
    )


def _parallel_degrees(spec: ModelSpec, pipeline_parallel: Any, data_parallel: Any) -> tuple[int, int]:
    from ..errors import OptionError

    p = check_count("pipeline_parallel", pipeline_parallel, 1)
    r = check_count("data_parallel", data_parallel, 1)
    if np.ndim(p) or np.ndim(r):
        raise OptionError("pipeline_parallel and data_parallel must be single integers")
    if p > spec.num_layers:
        raise OptionError(f"pipeline_parallel={p} exceeds the model's {spec.num_layers} layers")
    return int(p), int(r)


def _phase_result(phase: str, totals: PhaseTotals, steps: int) -> PhaseResult:
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
        ops=_op_fields(totals, columns, time_s),
    )


# per-op totals that are OpResult fields of the same name
_OP_COLUMNS = ("matmul_flops", "vector_flops", "bytes", "time_s", *(f"{b}_s" for b in BOUNDS))


def _total(columns: dict[str, list[float]], key: str) -> float:
    return float(sum(columns[key]))


def _op_fields(totals: PhaseTotals, columns: dict[str, list[float]], phase_time_s: float) -> list[dict[str, Any]]:
    """Each op's OpResult fields from its totals over the phase."""
    matmul_flops, vector_flops, moved_bytes, time_s = (columns[key] for key in _OP_COLUMNS[:4])
    intensity = [(m + v) / b if b > 0 else 0.0 for m, v, b in zip(matmul_flops, vector_flops, moved_bytes)]
    # the first largest term, in BOUNDS order
    bound = [BOUNDS[terms.index(max(terms))] for terms in zip(*(columns[f"{b}_s"] for b in BOUNDS))]
    share = [t / phase_time_s for t in time_s] if phase_time_s > 0 else [0.0] * len(time_s)
    rows = zip(totals.names, totals.kinds, totals.counts, *(columns[key] for key in _OP_COLUMNS), intensity, bound,
               share)
    return [dict(zip(_OP_FIELDS, row)) for row in rows]


_OP_FIELDS = ("name", "kind", "count", *_OP_COLUMNS, "arithmetic_intensity", "bound", "share")


def _assumptions(model: ModelSpec, hw: HardwareSpec, cost: CostOptions, execution: ExecutionOptions) -> dict[str, str]:
    weight, act, kv = cost.resolved_dtypes(model.dtype)
    roofline = Roofline(hw, execution)
    from ..dtypes import MATMUL_PRECISION

    precision = MATMUL_PRECISION[act]
    matmul_flops_per_s = roofline.matmul_flops_per_s(precision)
    fraction = matmul_flops_per_s / hw.matrix_peak_flops_per_s(precision)
    return {
        "dtypes": f"weights {weight}, activations {act}, KV {kv}",
        "kernels": f"attention={cost.attention}, logits={cost.logits}, mla={cost.mla}, fusion={cost.fusion}",
        "matmul_peak": f"{matmul_flops_per_s / 1e12:.1f} TFLOP/s {precision} "
        f"({execution.efficiency}, fraction {fraction:.2f})",
        "bandwidth": f"{roofline.bandwidth_bytes_per_s / 1e12:.3f} TB/s (fraction {roofline.memory_fraction:.2f})",
        "overhead": f"{execution.overhead}: launch {roofline.launch_s * 1e6:.1f} us, dispatch "
        f"{roofline.dispatch_s * 1e6:.1f} us per kernel",
        "overlap": execution.overlap,
    }


def max_batch_size(model: Any, hardware: Any, prompt_len: int, gen_len: int, limit: int = 1 << 20,
                   **options: Any) -> int | None:
    """The largest batch whose footprint fits the device (None if batch 1 does not fit)."""
    spec, hw, cost, _ = resolve(model, hardware, **options)
    check_workload(spec, 1, prompt_len, gen_len)
    return largest_fitting(lambda b: bool(footprint(spec, hw, cost, b, prompt_len, gen_len)["fits"]), 1, limit)


def max_context(model: Any, hardware: Any, batch_size: int, gen_len: int = 1, **options: Any) -> int | None:
    """The longest prompt that fits with `gen_len` tokens generated (capped by the model's context)."""
    spec, hw, cost, _ = resolve(model, hardware, **options)
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
    """Bytes and time that fusion="elementwise" and fusion="full" save against fusion="none"."""
    options.pop("fusion", None)
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
