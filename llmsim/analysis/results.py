"""What simulate() returns: per-op, per-phase and whole-run results, printed as text."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..cost.workload import CostOptions
from ..timing.roofline import ExecutionOptions
from .memory import MemoryResult
from .text import device_word
from .text import fmt_s as _fmt_s


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
    source: str = "roofline"  # where its time comes from: "<engine tables> <family>" or "roofline"


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
    tpot_s: float  # 0.0 at gen_len=1 (no decode step): the table says n/a, --json and sweep rows null
    e2e_s: float
    throughput_tokens_per_s: float
    tokens_per_s_per_gpu: float = 0.0
    prefill: PhaseResult
    decode: PhaseResult
    memory: MemoryResult
    assumptions: dict[str, str]
    engine: str | None = None
    # family -> the measured table's source (package, version, file, engine version, GPU string)
    measured_tables: dict[str, str] = {}
    # ops timed on the roofline although the engine has tables: why, one line per reason
    roofline_reasons: list[str] = []
    device_type: Literal["gpu", "cpu"] = "gpu"  # the hardware's: text counts per GPU or per CPU
    def layer_table(self, phase: str = "decode", step: int | None = None) -> Any:
        """One layer per layer group, one step, LLM-Viewer style: each op's FLOPs, bytes, arithmetic
        intensity, time and bound, and the layer's total (a LayerTable: print it, or .to_pandas()).
        phase: "prefill" or "decode"; step: decode step i in 1 .. gen_len - 1, attending to
        kv_len = prompt_len + i - 1 cached tokens (default: the middle step)."""
        from .layers import layer_table

        return layer_table(self, phase, step)

    def ops_to_pandas(self, phase: str | None = None) -> Any:
        """One row per op of each phase (or of `phase`): phase, then the OpResult fields (totals over the phase)."""
        from ..errors import check_choice
        from ..frames import data_frame

        if phase is not None:
            check_choice("phase", phase, ("prefill", "decode"))
        return data_frame([{"phase": p.phase, **op.model_dump()} for p in (self.prefill, self.decode)
                           if phase in (None, p.phase) for op in p.ops])

    def ops_table(self, phase: str | None = None, top: int | None = None) -> str:
        """A text table per op: count, FLOPs, bytes, arithmetic intensity, time, bound, share."""
        from ..errors import check_choice, check_top

        if phase is not None:
            check_choice("phase", phase, ("prefill", "decode"))
        top = check_top(top)
        lines = []
        for result in (self.prefill, self.decode):
            if phase and result.phase != phase:
                continue
            label = f"{result.phase} ({result.steps} step{'s' if result.steps != 1 else ''}, {_fmt_s(result.time_s)})"
            lines.append(label)
            if result.steps == 0:  # generate 1: no decode step, so no op ran (a table of zero times told nothing)
                lines.append("  no step: the prefill samples the only token")
                continue
            lines.append(f"  {'op':<40} {'count':>5} {'GFLOP':>10} {'MB':>10} {'FLOP/B':>8} {'time':>10} "
                         f"{'bound':>8} {'share':>6}  source")
            ops = sorted(result.ops, key=lambda o: -o.time_s)[:top]
            for op in ops:
                lines.append(
                    f"  {op.name:<40} {op.count:>5} {(op.matmul_flops + op.vector_flops) / 1e9:>10.3f} "
                    f"{op.bytes / 1e6:>10.2f} {op.arithmetic_intensity:>8.1f} {_fmt_s(op.time_s):>10} "
                    f"{op.bound:>8} {op.share:>6.1%}  {op.source}"
                )
        return "\n".join(lines)

    def __str__(self) -> str:
        m = self.memory
        gib = 1024**3
        split, device = "", device_word(self.device_type)
        if self.gpus > 1:
            split = (f" on {self.gpus} {device}s (tensor {self.tensor_parallel} x pipeline {self.pipeline_parallel}"
                     f" x data {self.data_parallel}, expert {self.expert_parallel})")
        lines = [
            f"{self.model} on {self.hardware}{split}: batch {self.batch_size}"
            f"{' per replica' if self.data_parallel > 1 else ''}, prompt {self.prompt_len}, "
            f"generate {self.gen_len}",
            f"  TTFT        {_fmt_s(self.ttft_s):>10}   prefill {self.prefill.bound}-bound "
            f"({_shares(self.prefill)})",
            (f"  TPOT        {_fmt_s(self.tpot_s):>10}   decode {self.decode.bound}-bound ({_shares(self.decode)})"
             if self.gen_len > 1 else f"  TPOT        {'n/a':>10}   no decode step (generate 1: the prefill "
             "samples the only token)"),
            f"  end to end  {_fmt_s(self.e2e_s):>10}",
            f"  throughput  {self.throughput_tokens_per_s:>10.1f} tokens/s generated "
            f"({self.tokens_per_s_per_gpu:.1f} per {device})",
            f"  memory      {m.total_bytes / gib:>8.2f} GiB per {device} of {m.capacity_bytes / gib:.2f} GiB "
            f"({'fits' if m.fits else 'DOES NOT FIT'}): weights {m.weights_bytes / gib:.2f}, "
            f"KV cache {m.kv_cache_bytes / gib:.2f}, activations {m.activation_bytes / gib:.2f}, "
            f"workspace {m.workspace_bytes / gib:.2f}",
            "  assumptions: " + "; ".join(f"{k}={v}" for k, v in self.assumptions.items() if k != "weights"),
        ]
        if "weights" in self.assumptions:  # the weights' format and where it came from (config or argument)
            lines.insert(-1, f"  weights     {self.assumptions['weights']}")
        if self.engine:
            lines.append(f"  engine      {self.engine}")
        for family, source in self.measured_tables.items():
            lines.append(f"  measured    {family}: {source}")
        for reason in self.roofline_reasons:  # a stand-in table set is a note on the tables, not a fallback
            label = "tables" if "stand in" in reason else "roofline"
            lines.append(f"  {label:<11} {reason}")
        return "\n".join(lines)


# id(result) -> the (ModelSpec, HardwareSpec, CostOptions, ExecutionOptions) simulate() computed it from, while
# the result lives: kept beside it, not in it, so that results compare and serialise by their fields alone
def _shares(phase: PhaseResult) -> str:
    return ", ".join(f"{k} {v:.0%}" for k, v in phase.shares.items())
