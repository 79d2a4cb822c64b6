"""Measured kernel times of one device under one engine: the tables of `kernels/<device>/<engine>/`.

Each lookup returns seconds per call of one layer's kernel on one GPU, or None where no table covers the
shape (the caller then uses the roofline and says why). Shapes are per GPU, as the tables are.

Rules where a table holds no exact slice (each an approximation, named where it is applied):
- GEMM fp16 reads the bf16 table (the same tensor-core rate and bytes).
- Attention with head counts not in the table: the measured (heads, KV heads) pair nearest in log space
  with the same head dim and KV dtype, read at the batch times heads / heads' (prefill: the work grows with
  batch x query heads) or KV heads / KV heads' (decode: the bytes read grow with batch x KV heads). Scaling
  the batch, not the time, keeps the kernel's fixed floor once (a 32/32-head decode is not 4 floors).
- A sliding window: decode reads the full-attention table at the keys the window leaves (the graph's key
  count is already min(kv_len + 1, W)); prefill scales the full-attention time at the prompt length by
  the ratio of (query, key) pairs the window (or chunked attention's chunks) keeps to the causal triangle's.
- Non-causal (encoder) attention: heads off the grid as prefill (batch x heads / heads'); a head dim the table
  lacks (it holds the ViT dims 64, 72 and 80) reads the nearest measured dim and carries it over with the same
  engine's causal prefill table: time x causal(D) / causal(D0) at the same batch, isl and heads
  (ENCODER_HEAD_DIM_NOTE).
- MoE: the exact model shape (hidden, intermediate, top-k, experts, TP, EP) must be in the table.
- Gated DeltaNet (prefill_gdn, decode_gdn): the exact per-GPU shape (kernel, head dims, convolution width, key
  and value heads) must be in the table; the package measured every tensor-parallel split of the Qwen3.5
  family (16 key heads, 16 to 64 value heads, dims 128, width 4) from 1 to 16 GPUs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import HardwareError
from .kernel_table import GridTable
from .table_file import TableFile, read_header, read_table_file_cached

# Gated DeltaNet tables' keys: the kernel ("conv1d" or "delta_rule"), head dims, convolution width, per-GPU key and
# value heads
GDN_KEYS = ("kernel", "head_k_dim", "head_v_dim", "conv", "num_k_heads", "num_v_heads")
# family -> (key columns, grid axes, fill the first axis beyond a token budget); the importer writes these columns
# the MoE lane of TensorRT-LLM's min-latency NVFP4 kernel: written by the importer (engines.aiconfigurator),
# read at few tokens per call (timing.measured)
MIN_LATENCY_LANE = "nvfp4_min_latency"
# the MoE lane of vLLM's Marlin kernel for MXFP4 experts with 16-bit activations (fused_marlin_moe: what vLLM runs
# for them with VLLM_MXFP4_USE_MARLIN=1, and for compressed-tensors MXFP4 experts on Hopper): written by the
# importer apart from the engine's default MXFP4 kernel, read with ExecutionOptions.mxfp4_moe_kernel="marlin"
MARLIN_MXFP4_LANE = "mxfp4_wo_marlin"
# the MoE lanes of SGLang's DeepEP experts (--moe-a2a-backend deepep: DeepGEMM's grouped GEMMs on the tokens DeepEP
# dispatched, block-scaled fp8), from aiconfigurator's wide-EP tables: normal mode (prefill servers, the contiguous
# layout: wideep_context_moe_perf) and low-latency mode (decode servers, the masked layout:
# wideep_generation_moe_perf); written by the importer, read with ExecutionOptions.fp8_block_moe_kernel
DEEPEP_NORMAL_LANE = "fp8_block_deepep_normal"
DEEPEP_LOW_LATENCY_LANE = "fp8_block_deepep_ll"
# the MoE tables' token-to-expert loads (their `routing` key column; MoESpec.routing names the one a model reads)
MOE_ROUTINGS = ("balanced", "power_law_1.01", "power_law_1.2")
FAMILIES: dict[str, tuple[tuple[str, ...], tuple[str, ...], bool]] = {
    "gemm": (("dtype",), ("m", "n", "k"), False),
    "prefill_attention": (("kv_dtype", "head_dim", "window", "num_heads", "num_kv_heads"), ("batch", "isl"), True),
    "decode_attention": (("kv_dtype", "head_dim", "window", "num_heads", "num_kv_heads"), ("batch", "keys"), True),
    "encoder_attention": (("head_dim", "num_heads"), ("batch", "isl"), True),
    "moe": (("dtype", "routing", "topk", "num_experts", "hidden", "inter", "tp", "ep"), ("tokens",), False),
    "all_reduce": (("num_gpus",), ("message_bytes",), False),
    "nccl": (("collective", "num_gpus"), ("message_bytes",), False),
    "prefill_mla": (("kv_dtype", "num_heads"), ("batch", "isl"), True),
    "decode_mla": (("kv_dtype", "num_heads"), ("batch", "keys"), True),
    "prefill_gdn": (GDN_KEYS, ("batch", "isl"), True),
    "decode_gdn": (GDN_KEYS, ("batch",), False),
}
_GEMM_TABLE_OF = {"bf16": "bf16", "fp16": "bf16", "fp8": "fp8", "int8": "int8_wo", "int4": "int4_wo", "fp4": "nvfp4"}


@dataclass(frozen=True)
class MeasuredKernels:
    """The measured tables of `device` under `engine` (families without a file are absent)."""

    device: str
    engine: str
    folder: str
    tables: Mapping[str, TableFile]
    _slices: dict[tuple, Any] = field(default_factory=dict, compare=False, repr=False)
    from_user_folder: bool = False  # a folder the user gave (tables=PATH): its sources name it

    def __hash__(self) -> int:
        return hash((self.device, self.engine, self.folder))

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(self.tables)

    def source(self, family: str) -> str:
        source = self.tables[family].source
        return f"{source}; read from {self.folder}" if self.from_user_folder else source

    # ---- GEMM ---------------------------------------------------------------------------------------
    def gemm_table(self, precision: str) -> GridTable | None:
        """The GEMM grid for a matmul precision (None without one)."""
        name = _GEMM_TABLE_OF.get(precision)
        return None if name is None else self.gemm_table_named(name)

    def gemm_table_named(self, dtype: str) -> GridTable | None:
        """The GEMM grid of a table dtype name (bf16, fp8, int8_wo, int4_wo, nvfp4), or None."""
        table = self.tables.get("gemm")
        return None if table is None else table.grids.get((dtype,))

    def gemm_s(self, precision: str, m: Any, n: Any, k: Any) -> Any:
        """Time of Y[m, n] = X[m, k] W[k, n] at `precision` (None without a table for it)."""
        grid = self.gemm_table(precision)
        return None if grid is None else grid.time_s(m, n, k)

    # ---- attention ----------------------------------------------------------------------------------
    def attention_slice(self, phase: str, kv_dtype: str, head_dim: int, heads: int, kv_heads: int
                        ) -> tuple[GridTable, float, str] | None:
        """(grid over (batch, isl or keys), batch factor, note) for the per-GPU head counts, or None: the time
        is the grid's at (batch x factor, isl or keys)."""
        key = (phase, kv_dtype, head_dim, heads, kv_heads)
        if key not in self._slices:
            self._slices[key] = self._find_slice(*key)
        return self._slices[key]

    def _find_slice(self, phase: str, kv_dtype: str, head_dim: int, heads: int, kv_heads: int
                    ) -> tuple[GridTable, float, str] | None:
        table = self.tables.get(f"{phase}_attention")
        if table is None:
            return None
        dtype = kv_dtype if kv_dtype in ("bf16", "fp8") else "bf16"
        candidates = {k: g for k, g in table.grids.items() if k[1] == head_dim and k[2] == 0}
        same_dtype = {k: g for k, g in candidates.items() if k[0] == dtype}
        candidates = same_dtype or {k: g for k, g in candidates.items() if k[0] == "bf16"}
        if not candidates:
            return None
        cache_note = "" if same_dtype else (f"a {kv_dtype} cache read from the bf16-cache table (approximation: "
                                            f"no {kv_dtype} slice shipped)")
        exact = next((g for k, g in candidates.items() if k[3] == heads and k[4] == kv_heads), None)
        if exact is not None:
            return exact, 1.0, cache_note

        def distance(k: tuple) -> float:
            return abs(math.log(k[3] / heads)) + abs(math.log(k[4] / kv_heads))

        best = min(candidates, key=distance)
        factor = heads / best[3] if phase == "prefill" else kv_heads / best[4]
        note = (f"{heads}/{kv_heads} heads read from the measured {best[3]}/{best[4]} at batch x {factor:.3g} "
                f"(approximation: the work grows with batch x {'query' if phase == 'prefill' else 'KV'} heads)")
        return candidates[best], factor, "; ".join(n for n in (note, cache_note) if n)

    def encoder_head_dims(self) -> tuple[int, ...]:
        """The head dims the non-causal (encoder) table measured (none without the table)."""
        table = self.tables.get("encoder_attention")
        return () if table is None else tuple(sorted({k[0] for k in table.grids}))

    def encoder_attention_slice(self, head_dim: int, heads: int) -> tuple[GridTable, float, str] | None:
        """(grid over (batch, isl), batch factor, note) of the non-causal table for `heads` heads of a measured
        `head_dim`, or None: the time is the grid's at (batch x factor, isl). A head dim the table lacks is the
        caller's to carry over (timing.measured.ENCODER_HEAD_DIM_NOTE)."""
        table = self.tables.get("encoder_attention")
        candidates = {} if table is None else {k: g for k, g in table.grids.items() if k[0] == head_dim}
        if not candidates:
            return None
        best = min(candidates, key=lambda k: (abs(math.log(k[1] / heads)), k[1]))
        factor = heads / best[1]
        note = "" if best[1] == heads else (f"{heads} heads read from the measured {best[1]} at batch x {factor:.3g} "
                                            "(approximation: the work grows with batch x heads)")
        return candidates[best], factor, note

    # ---- MoE and collectives --------------------------------------------------------------------------
    def moe_table(self, dtype: str, topk: int, experts: int, hidden: int, inter: int, tp: int, ep: int,
                  routing: str = "balanced") -> GridTable | None:
        """The fused-MoE grid (tokens -> seconds) of one expert shape and split under one token-to-expert
        distribution (`routing`: "balanced", "power_law_1.01" or "power_law_1.2"), or None. A line of one measured
        token count is None too (moe_single_point): one point is no curve, and the rule past the largest point
        (time x tokens / largest) from a launch-bound single token priced a 4,000-token prefill 100x too slow."""
        grid = self.moe_single_point(dtype, topk, experts, hidden, inter, tp, ep, routing)
        return None if grid is None or len(grid.points[0]) < 2 else grid

    def moe_single_point(self, dtype: str, topk: int, experts: int, hidden: int, inter: int, tp: int, ep: int,
                         routing: str = "balanced") -> GridTable | None:
        """The MoE line as stored, however few its points (aiconfigurator-core's collection stopped at one token
        on 10-14 lines of each Blackwell vLLM table: bf16 top-1 of 16 or 128 experts, Llama-4's shapes)."""
        table = self.tables.get("moe")
        name = _GEMM_TABLE_OF.get(dtype, dtype)
        return None if table is None else table.grids.get((name, routing, topk, experts, hidden, inter, tp, ep))

    def gdn_table(self, phase: str, kernel: str, head_k_dim: int, head_v_dim: int, conv: int, k_heads: Any,
                  v_heads: Any) -> GridTable | None:
        """The Gated DeltaNet grid of a phase ("prefill": batch x isl; "decode": batch) for one kernel ("conv1d",
        "delta_rule") at per-GPU heads, or None."""
        table = self.tables.get(f"{phase}_gdn")
        key = (kernel, head_k_dim, head_v_dim, conv, k_heads, v_heads)
        return None if table is None else table.grids.get(key)

    def nccl_table(self, collective: str, num_gpus: int) -> GridTable | None:
        table = self.tables.get("nccl")
        return None if table is None else table.grids.get((collective, num_gpus))

    def all_reduce_table(self, num_gpus: int) -> GridTable | None:
        table = self.tables.get("all_reduce")
        return None if table is None else table.grids.get((num_gpus,))


def kernels_root() -> Path:
    """The shipped tables: `kernels/` of a checkout, or the installed package data."""
    from ..shipped import kernels_dir

    return kernels_dir()


def shipped_kernel_sets() -> dict[str, tuple[str, ...]]:
    """Device -> engines with shipped tables."""
    root = kernels_root()
    if not root.is_dir():
        return {}
    return {d.name: tuple(sorted(e.name for e in d.iterdir() if e.is_dir()))
            for d in sorted(root.iterdir()) if d.is_dir()}


@lru_cache(maxsize=64)
def load_measured(folder: str, device: str = "", engine: str = "") -> MeasuredKernels:
    """Read every family file of a folder (`<family>.csv`); unknown files are refused by name."""
    path = Path(folder)
    if not path.is_dir():
        raise HardwareError(f"kernel tables: {folder} is not a folder")
    files = {}
    for file in sorted(path.glob("*.csv")):
        if file.stem not in FAMILIES:
            raise HardwareError(f"{file}: unknown kernel table family {file.stem!r}; allowed: {sorted(FAMILIES)}")
        files[file.stem] = file
    if device and engine:  # a shipped set (measured_for)
        return MeasuredKernels(device, engine, str(path), TableFiles(files))
    # a folder the user gave: the device and engine its files say they were measured on and with (the
    # importer's `# system:` and `# engine:` lines), else the folder's names, as the shipped layout has them
    # (llmsim's name of the system the file names: h200 for aiconfigurator's h200_sxm)
    header = read_header(next(iter(files.values()))) if files else {}
    system = header.get("system", "")
    return MeasuredKernels(AICONFIGURATOR_SYSTEMS.get(system, system) or path.parent.name,
                           header.get("engine") or path.name, str(path), TableFiles(files), from_user_folder=True)


class TableFiles(Mapping[str, TableFile]):
    """Family -> its TableFile, each file read on first use: a simulation reads the families its ops need
    (a dense model no MoE table), and a malformed file is refused when first read."""

    def __init__(self, files: dict[str, Path]) -> None:
        self._files = files
        self._read: dict[str, TableFile] = {}

    def __getitem__(self, family: str) -> TableFile:
        table = self._read.get(family)
        if table is None:
            keys, axes, fill = FAMILIES[family]
            table = self._read[family] = read_table_file_cached(self._files[family], family, keys, axes, fill)
        return table

    def __contains__(self, family: object) -> bool:
        return family in self._files

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)


# A device without tables of its own -> the device of the same die whose tables it reads (timing.roofline: each op's
# measured time x its roofline time here / its roofline time there, so the sibling's achieved fraction of its
# roofline carries over). NVIDIA A100 and H100 datasheets: the PCIe, 40 GB and NVL parts are the same GA100 / GH100
# die as the SXM 80 GB part, with other memory, clocks, SM counts or power limits, all of which the hardware files'
# datasheet peaks and bandwidths hold.
# aiconfigurator system name -> llmsim hardware file name (the `# system:` line of an imported table file)
AICONFIGURATOR_SYSTEMS = {
    "h100_sxm": "h100-sxm", "h200_sxm": "h200", "a100_sxm": "a100-80gb-sxm", "b200_sxm": "b200",
    "l40s": "l40s", "b300_sxm": "b300", "gb200": "gb200", "gb300": "gb300",
    "rtx_pro_6000_server": "rtx-pro-6000-server",
}

TABLE_SIBLINGS: dict[str, str] = {
    "a100-80gb-pcie": "a100-80gb-sxm", "a100-40gb-sxm": "a100-80gb-sxm", "a100-40gb-pcie": "a100-80gb-sxm",
    "h100-pcie": "h100-sxm", "h100-nvl": "h100-sxm",
}

# A device -> the device on the same NVLink fabric whose collective tables stand in for a GPU count its own tables
# lack (timing.measured.MeasuredTiming.collective: the same engine's all-reduce or NCCL table, as measured there).
# NVIDIA's GB200 NVL72 and GB300 NVL72 pages: one 72-GPU NVLink 5 domain of 18 compute trays of 4 GPUs behind the
# same NVLink Switch trays, 1.8 TB/s per GPU and 130 TB/s per rack on both (hardware/gb200.toml, gb300.toml: the same
# NVLink bandwidth and latency). aiconfigurator-core 0.12.0 measures all-reduce within one tray (2 and 4 GPUs) on
# the GB200 and across trays (8 and 16 GPUs) on the GB300 only. approximation: a collective's time at a group size
# depends on the fabric and the engine's kernel, not on which Blackwell GPU drives it.
FABRIC_SIBLINGS: dict[str, str] = {"gb200": "gb300", "gb300": "gb200"}


def measured_for(device: str, engine: str) -> MeasuredKernels | None:
    """The shipped tables of a device (hardware file name) under an engine; None where none are shipped."""
    if "/" in engine or "\\" in engine or engine in (".", ".."):
        return None  # a folder, not a table set name
    folder = kernels_root() / device / engine
    return load_measured(str(folder), device, engine) if folder.is_dir() else None


def prefill_window_factor(isl: Any, window: int | None, chunked: bool = False) -> Any:
    """(query, key) pairs a causal window W (or chunked attention in chunks of W) keeps over the full causal
    triangle's, per sequence of isl tokens (approximation: a windowed kernel's time scales with the pairs it
    computes)."""
    if window is None:
        return 1.0
    s = np.asarray(isl, dtype=float)
    if chunked:  # one causal triangle per chunk (the graph's own pair count, cost.blocks.attention._pairs)
        n = np.floor_divide(s, window)
        r = s - n * window
        return (n * window * (window + 1) / 2 + r * (r + 1) / 2) / (s * (s + 1) / 2)
    m = np.minimum(s, window)
    kept = m * (m + 1) / 2 + (s - m) * window  # the graph's own pair count (cost.blocks.attention._pairs)
    return kept / (s * (s + 1) / 2)
