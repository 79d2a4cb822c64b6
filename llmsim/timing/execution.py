"""ExecutionOptions: how the device runs the ops (efficiency, overheads, overlap, measured tables)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path, PurePath
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import OptionError, check_choice
from ..hardware.measured import FAMILIES, MOE_ROUTINGS, shipped_kernel_sets

EFFICIENCY_MODES = ("achievable", "peak")
OVERHEAD_MODES = ("graph", "eager", "none")
OVERLAP_POLICIES = ("max", "sum")
MXFP4_MOE_KERNELS = ("default", "marlin", "mxfp8")
FP8_BLOCK_MOE_KERNELS = ("default", "trtllm-gen", "deepep-normal", "deepep-low-latency")
CLOCKS = ("sustained", "boost")
MOE_ROUTING_CHOICES = ("model", *MOE_ROUTINGS)


@lru_cache(maxsize=1)
def _table_set_names() -> tuple[str, ...]:
    """The measured table sets shipped for any device (kernels/<device>/<set>/)."""
    return tuple(sorted({name for names in shipped_kernel_sets().values() for name in names}))


class ExecutionOptions(BaseModel):
    """How the device runs the ops.

    - efficiency="achievable" (default): peaks derated by the hardware file's achievable fractions;
      "peak": datasheet speed of light (with overhead="none", the classic roofline).
    - overhead="graph" (default): kernel launches only, as with CUDA graphs or a compiled model;
      "eager": plus PyTorch's per-op dispatch, as plain PyTorch and transformers run; "none".
    - overlap="max" (default): compute and memory traffic overlap (roofline); "sum": they do not.
    - tables: the measured kernel tables ops are timed from where they cover them (an engine's set name,
      kernels/<device>/<tables>/, or a folder of table files); None: the roofline alone. table_families:
      the families of the set to use (None: all). Engines set both (llmsim.engines); not read at peak.
    - step_host_s: the engine's host work per step that the GPU waits for, charged to each "engine.step"
      op (CostOptions.engine_step; llmsim.engines sets both, with their sources); 0, or overhead="none",
      switches it off.
    - prefill_dispatch_s: host seconds per kernel of a forward pass the engine runs without a CUDA graph: its
      prefill and mixed steps (serving engines replay graphs for decode batches only; llmsim.engines sets it,
      with its source). With overhead="graph", every prefill op then pays the eager launch, and the pass takes
      the longer of its kernels and its kernels x prefill_dispatch_s of host dispatch (timing.host_bound: the
      host queues kernels ahead of the GPU); 0 (default): prefill replays graphs too.
      prefill_graph_tokens: a prefill pass of at most this many tokens (all its sequences together) replays
      graphs all the same (vLLM's piecewise CUDA graphs up to its largest captured size); 0: none does.
    - fp8_scales="static" (default): per-tensor fp8 GEMMs read with static activation scales, as the fp8
      checkpoints serving engines load carry them; "dynamic": scales computed from each call's activations
      (torchao's float8, an fp8 run of a 16-bit checkpoint), the measured tables' fp8_dynamic lane.
    - mxfp4_moe_kernel="default": MXFP4 experts with 16-bit activations (gpt-oss) on the engine's default fused-MoE
      kernel, as its measured tables time it (vLLM: OpenAI's Triton kernel on Hopper, FlashInfer's on Blackwell);
      "marlin": vLLM's and SGLang's Marlin MoE kernel (vLLM's VLLM_MXFP4_USE_MARLIN=1), the tables' Marlin lane,
      carried to the model's expert shape where it was measured at another (timing.measured.marlin_moe_grid);
      "mxfp8": MXFP8 activations on FlashInfer's TRTLLM-gen MXFP4 MoE kernel (vLLM's
      VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1, Blackwell), the engine's mxfp4_mxfp8 rows, else TensorRT-LLM's of the
      device (its TRTLLM MoE backend runs that kernel family).
    - fp8_block_moe_kernel="default": block-scaled fp8 experts (DeepSeek-V3/R1) on the engine's default fused-MoE
      kernel, as its measured tables time it (TensorRT-LLM on Blackwell: DeepGEMM); "trtllm-gen": FlashInfer's
      TRTLLM-gen FP8 block-scale MoE kernel (TensorRT-LLM's `moe_config: backend: TRTLLM`), the rows vLLM's
      tables of the device time it with (Blackwell), at expert tensor parallelism only (timing.measured);
      "deepep-normal" / "deepep-low-latency": SGLang's DeepEP experts (--moe-a2a-backend deepep, DeepGEMM grouped
      GEMMs) in its normal mode (prefill servers, --deepep-mode normal) or low-latency mode (decode servers), the
      SGLang tables' wide-EP rows of the device (timing.measured.deepep_moe_grid).
    - moe_routing="model" (default): the measured MoE rows read at the model's expert load (MoESpec.routing: a
      power law of exponent 1.01 for DeepSeek-style routers, 1.2 for the others, as aiconfigurator reads them);
      "balanced": every expert loaded evenly (expert-parallel load balancing, EPLB), the balanced rows with
      independent routing's share of experts read at small calls; "power_law_1.01" or "power_law_1.2": that load.
    - clock="sustained" (default): a long prefill pass's compute-bound work runs at the device's sustained,
      power-limited clock once past the onset, from the hardware file's [sustained] section (timing.sustained;
      a device without one is not throttled); "boost": every kernel at the clock short benchmarks time it at.
    - pipeline_decode="steady" (default): under pipeline parallelism the decode micro-batches stay in flight
      across steps, as serving engines run them (no bubble per token once micro-batches >= stages);
      "lockstep": one static batch whose every step fills and drains the pipeline (timing.phases.pipelined).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    efficiency: str = "achievable"
    overhead: str = "graph"
    overlap: str = "max"
    engine: str | None = None  # the engine these options came from (llmsim.engines), for the record
    tables: str | None = None
    table_families: tuple[str, ...] | None = None
    step_host_s: float = 0.0  # seconds of host work per engine step the GPU waits for ("engine.step" ops)
    prefill_dispatch_s: float = 0.0  # host seconds per kernel of an uncaptured (no CUDA graph) prefill pass
    prefill_graph_tokens: int = 0  # prefill passes of at most this many tokens replay CUDA graphs all the same
    pipeline_decode: str = "steady"  # decode under pipeline parallelism: micro-batches kept in flight, or "lockstep"
    fp8_scales: str = "static"  # per-tensor fp8 GEMMs' activation scales: "static" or "dynamic"
    mxfp4_moe_kernel: str = "default"  # MXFP4 experts: the engine's default kernel, "marlin" or "mxfp8"
    fp8_block_moe_kernel: str = "default"  # block-scaled fp8 experts: FP8_BLOCK_MOE_KERNELS
    clock: str = "sustained"  # long prefill passes at the sustained (power-limited) clock, or "boost"
    moe_routing: str = "model"  # MoE rows read: the model's expert load, "balanced" or a power law's

    @classmethod
    def make(cls, **values: Any) -> ExecutionOptions:
        values = {k: v for k, v in values.items() if v is not None}
        check_choice("efficiency", values.get("efficiency", "achievable"), EFFICIENCY_MODES)
        check_choice("overhead", values.get("overhead", "graph"), OVERHEAD_MODES)
        check_choice("overlap", values.get("overlap", "max"), OVERLAP_POLICIES)
        check_choice("pipeline_decode", values.get("pipeline_decode", "steady"), ("steady", "lockstep"))
        check_choice("fp8_scales", values.get("fp8_scales", "static"), ("static", "dynamic"))
        check_choice("mxfp4_moe_kernel", values.get("mxfp4_moe_kernel", "default"), MXFP4_MOE_KERNELS)
        check_choice("fp8_block_moe_kernel", values.get("fp8_block_moe_kernel", "default"), FP8_BLOCK_MOE_KERNELS)
        check_choice("clock", values.get("clock", "sustained"), CLOCKS)
        check_choice("moe_routing", values.get("moe_routing", "model"), MOE_ROUTING_CHOICES)
        for key, unit in (("step_host_s", "seconds (or 0)"), ("prefill_dispatch_s", "seconds per kernel (or 0)")):
            if key in values:  # host times: 0 switches them off, else a positive number up to an hour
                from ..errors import HOST_TIME_LIMIT_S, check_off_or_positive

                values[key] = check_off_or_positive(key, values[key], unit, HOST_TIME_LIMIT_S)
        graph_tokens = values.get("prefill_graph_tokens", 0)
        if isinstance(graph_tokens, bool) or not isinstance(graph_tokens, int) or graph_tokens < 0:
            raise OptionError(f"prefill_graph_tokens={graph_tokens!r} must be a whole number of tokens >= 0")
        tables = values.get("tables")
        if isinstance(tables, PurePath):  # a folder as a Path, as hardware= takes one: its text
            tables = values["tables"] = str(tables)
        if tables is not None and (not isinstance(tables, str) or not tables or (
                tables not in _table_set_names() and not Path(tables).is_dir())):
            raise OptionError(f"tables={tables!r} is neither a table set name ({', '.join(_table_set_names())}) "
                              "nor an existing folder of tables")
        if tables is not None and tables not in _table_set_names() and not any(
                (Path(tables) / f"{family}.csv").is_file() for family in FAMILIES):
            # (a folder one level too high, or empty: every op would have run on the roofline without a word)
            raise OptionError(f"tables={tables!r} holds no kernel table file (gemm.csv, prefill_attention.csv, ...: "
                              "one engine's folder, as `llmsim calibrate --from aiconfigurator` writes it)")
        families = values.get("table_families")
        if families is not None:
            if not isinstance(families, (list, tuple)):
                raise OptionError(f"table_families={families!r} must be a list of family names "
                                  f"({', '.join(FAMILIES)})")
            for family in families:
                check_choice("table_families", family, tuple(FAMILIES))
            values["table_families"] = tuple(families)
        return cls(**values)
