"""Importer: NVIDIA aiconfigurator-core's measured kernel tables -> llmsim kernel table files.

aiconfigurator-core (Apache-2.0) ships parquet tables under
`aiconfigurator_core/systems/data/<system>/<family>/<backend>/<version>/`. Their conventions, read from the
package's loader and collector sources (summarised here in our own words): `latency` in milliseconds for
one call of one op of one layer on one GPU; shapes already per GPU (attention heads divided by the
tensor-parallel degree); GEMM Y[m, n] = X[m, k] W[k, n] with m the tokens; prefill attention causal over
`isl` new tokens per sequence, no cached prefix; decode attention one step of the whole batch with `step`
tokens already cached (it attends to step + 1 keys); collective message sizes in elements (bf16: 2 bytes).

`import_tables` writes one CSV per family (the format of `llmsim.hardware.kernel_table`) with the
provenance of every table: package and version, source file, engine and its version, GPU string. A compact
grid (default) keeps the shipped files small; `full=True` keeps every measured point (and the MoE tables'
balanced rows).
Needs `pip install 'llmsim[aiconfigurator]'` (aiconfigurator-core and pyarrow); the core never imports it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import LlmsimError, OptionError, check_choice
from ..hardware.measured import (
    AICONFIGURATOR_SYSTEMS,
    DEEPEP_LOW_LATENCY_LANE,
    DEEPEP_NORMAL_LANE,
    FAMILIES,
    MARLIN_MXFP4_LANE,
    MIN_LATENCY_LANE,
    MOE_ROUTINGS,
)

# aiconfigurator system name -> llmsim hardware file name (kept beside the tables it names)
SYSTEMS = AICONFIGURATOR_SYSTEMS
ENGINES = ("vllm", "sglang", "trtllm")
# aiconfigurator dtype names -> llmsim's (matmul precision / dtype names)
GEMM_DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8_block", "nvfp4": "nvfp4",
               "int8_wo": "int8_wo", "int4_wo": "int4_wo"}
KV_DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}
# fused-MoE dtypes -> llmsim's expert formats: w4a16_mxfp4 is MXFP4 experts with 16-bit activations (gpt-oss's
# checkpoint format, "mxfp4_wo" in llmsim); int4_wo the int4 weight-only experts of compressed-tensors / GPTQ
# checkpoints (Kimi-K2.5); nvfp4 W4A4 (NVIDIA's NVFP4 checkpoints); w4a8_mxfp4_mxfp8 the same MXFP4 experts
# with MXFP8 activations, as TensorRT-LLM runs gpt-oss on Blackwell ("mxfp4_mxfp8", see timing.measured).
MOE_DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8_block", "nvfp4": "nvfp4", "int4_wo": "int4_wo",
              "w4a16_mxfp4": "mxfp4_wo", "w4a8_mxfp4_mxfp8": "mxfp4_mxfp8"}
# the token-to-expert distributions imported (the package's moe_perf `distribution` column): `balanced`, a call's
# tokens x topk assignments spread evenly over min(E, T topk) experts, and the power-law loads its collector draws
# (collector/helper.py, _generate_power_law_distribution: tokens per expert sampled from a power law of exponent
# alpha between 1 and 0.8 T, the most loaded experts on the EP rank it times), at the two
# exponents aiconfigurator's own models read (aic-core sdk/models: 1.01 for DeepSeek, Kimi K2.5 and the hybrid MoE
# families, 1.2 for the generic MoE family: Mixtral, Qwen2/3-MoE, gpt-oss, MiniMax-M2, and Qwen3.5)
# the compact grid keeps the two loads models read by default (MoESpec.routing); balanced rows (expert-parallel load
# balancing, ExecutionOptions.moe_routing="balanced") come with full=True, to keep the shipped files small
COMPACT_MOE_ROUTINGS = ("power_law_1.01", "power_law_1.2")
# SGLang's wide-EP expert tables (aiconfigurator collector/wideep/sglang/collect_deepep_moe.py): DeepEP's
# run_moe_core (DeepGEMM grouped GEMMs on block-fp8 experts, the dispatch faked, not timed) on one GPU holding
# num_experts / moe_ep_size experts, each of moe_ep_size ranks sending it num_tokens / moe_ep_size tokens:
# `num_tokens` counts the tokens of every EP rank, as the fused-MoE rows' tokens count a call's tokens
DEEPEP_FILE_NOTE = (f"{DEEPEP_NORMAL_LANE} and {DEEPEP_LOW_LATENCY_LANE}: SGLang's DeepEP experts (DeepGEMM grouped "
               "GEMMs on block-fp8 experts after DeepEP's dispatch, which is not timed) in normal mode "
               "(wideep_context_moe_perf) and low-latency mode (wideep_generation_moe_perf); tokens: those of every "
               "EP rank together; every measured token count and EP size kept")
MOE_ROUTING_NOTE = ("the routing column: balanced (T x topk assignments spread evenly over min(E, T topk) experts), "
                    "power_law_1.01 and power_law_1.2 (tokens per expert drawn from a power law of that exponent, as "
                    "aiconfigurator's collector draws them); the compact grid keeps the power laws only")
# TensorRT-LLM's min-latency NVFP4 MoE kernel (its TRTLLM-Gen backend with DeepSeek routing and the finalize left
# to the fused all-reduce), measured by aiconfigurator's collector (collector/trtllm/collect_moe.py, "min-latency
# mode") on SM100 next to the default CUTLASS kernel of the same shapes; written as a lane of its own
MIN_LATENCY_SOURCE = "moe_torch_flow_min_latency"
# GEMM lanes left out: aiconfigurator's vLLM GEMM collector (ai-dynamo/aiconfigurator collector/vllm, gemm)
# replays bf16 and fp8 under a CUDA graph but times fp8_block without one, so those rows hold the host launch
# path: a flat 59-95 us (H100) to 155-190 us (B200) from m = 1 to 1024 at n = k = 4096, where its graph-timed
# fp8 rows take 12-39 us. vLLM serves with CUDA graphs, which hide that host time; its block-scaled fp8 GEMMs
# read the per-tensor fp8 rows instead (and say so).
UNGRAPHED_GEMM_LANES = {("fp8_block", "vllm")}
# GEMM lanes timed with the engine's untuned fallback kernel: TensorRT-LLM picks its NVFP4 GEMM's runner and
# tactic with its AutoTuner (tensorrt_llm/_torch/custom_ops: nvfp4_gemm -> AutoTuner.choose_one), which profiles
# the candidates during the engine's warm-up (TorchLlmArgs.enable_autotuner, on by default) and, outside a tuning
# pass, answers a shape it has not tuned with its fallback tactic ("Using the fallback tactic, due to cache miss",
# tensorrt_llm/_torch/autotuner.py). aiconfigurator's TensorRT-LLM GEMM collector (collector/trtllm/
# collect_gemm.py) times Linear.forward outside any autotune() pass, so its nvfp4 rows time that fallback: on
# the B200, GB200, GB300 and B300 they take a median 1.6-1.9x the time of the same device's vLLM and SGLang nvfp4
# rows (FlashInfer's CUTLASS and CuTe DSL FP4 GEMMs) at m <= 256 and 1.0-1.2x from m = 1024, where the three
# engines' bf16 rows (cuBLAS in all three) agree within 3 %. The imported nvfp4 lane is the fastest of the
# device's measured nvfp4 kernels at each (m, n, k); "nvfp4_fallback" keeps TensorRT-LLM's rows as measured.
# approximation: the tuner's pick taken as the fastest kernel measured on the device (its candidates include
# CUTLASS and CuTe DSL NVFP4 GEMMs, the kernels FlashInfer ships; a candidate none of the three tables times is
# not seen, and the minimum of separate measurements leans a little fast: about 2-3 % on bf16, where the kernels
# are the same).
UNTUNED_GEMM_LANES = {"trtllm": "nvfp4"}
# compact grids: the measured points kept (a full grid over them; points missing from a table are dropped)
COMPACT_M = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
# 51200: the package's line past 16384 that every table measures at every m (65536 stops at m = 16384 where n = k =
# 65536, so the full-grid rule drops it); without it wider GEMMs (a 70B model's gate/up at TP 1-2) read 16384 in
# proportion, 14.6 % median / 74.8 % p90 off at the measured points (validation/kernel_tables.md)
COMPACT_NK = (32, 64, 128, 256, 512, 1024, 2048, 4096, 6144, 8192, 12288, 16384, 51200, 65536)
COMPACT_GEMM_DTYPES = ("bf16", "fp8", "fp8_dynamic", "fp8_block", "nvfp4", "nvfp4_fallback", "int8_wo", "int4_wo")
COMPACT_ISL = (1, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
COMPACT_KEYS = (2, 8, 32, 128, 512, 1024, 2048, 4096, 8192, 16384, 32768, 131072)
COMPACT_BATCH = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
COMPACT_TOKENS = (1, 2, 4, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
COMPACT_PARALLEL = (1, 2, 4, 8)
# wide expert parallelism on the compact grid's MoE tables: expert-parallel-only splits (tp 1) over more GPUs than
# one HGX board, as disaggregated decode pools and multi-node deployments run them (DeepSeek and Kimi at ep 16-64
# on GB200 / GB300 NVL72 racks); without them a MoE split of 16+ GPUs had no measured row and ran on the roofline
COMPACT_WIDE_EP = (16, 32, 64)
COMPACT_KV_HEADS = (1, 2, 4, 8, 16, 32, 64)
COMPACT_HEADS = (1, 2, 4, 8, 16, 32, 64, 128)
COMPACT_HEAD_DIMS = (64, 128, 256)
# encoder (non-causal) attention: the package measured ViT shapes (head dims 64, 72, 80); the compact grid keeps
# the powers of two of heads and the ViT heads 12 and 24 (ViT-B, DiT-XL), and every measured isl: the package's
# lengths are image grids (400 = 20x20, 576, 1296, 3136, ...) where a kernel's time steps with its tiles, and
# reading them between powers of two missed by 12-14 % median (validation/kernel_tables.md, session 25)
COMPACT_ENCODER_HEADS = (1, 2, 4, 8, 12, 16, 24, 32)

COMPACT_GDN_BATCH = (1, 2, 4, 16, 64)
COMPACT_GDN_ISL = (1, 4, 16, 64, 256, 1024, 4096, 32768)
COMPACT_GDN_DECODE_BATCH = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

# family -> (key columns, grid axes) of llmsim's files: the reader's own schema (hardware.measured.FAMILIES), so
# the files written here are the files read back
FAMILY_COLUMNS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    family: (keys, axes) for family, (keys, axes, _) in FAMILIES.items()}
# aiconfigurator's NCCL op names -> llmsim's collective kinds
NCCL_OPS = {"all_reduce": "all_reduce", "all_gather": "all_gather", "alltoall": "all_to_all",
            "reduce_scatter": "reduce_scatter"}


def package_root() -> Path:
    """The installed aiconfigurator_core package folder (found without importing it)."""
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or not spec.submodule_search_locations:
        raise LlmsimError("aiconfigurator-core is not installed: pip install 'llmsim[aiconfigurator]'")
    return Path(next(iter(spec.submodule_search_locations)))


def import_tables(system: str, engine: str, out_dir: Path, data_root: Path | None = None, full: bool = False,
                  families: Iterable[str] | None = None) -> list[Path]:
    """Write llmsim kernel tables for `system` and `engine` into `out_dir` (never over an existing file).

    `data_root`: the `systems/data` folder to read (default: the installed package's). Returns the files
    written; a family the package has no table for is skipped (the result says which were written).
    """
    check_choice("engine", engine, ENGINES)
    root = data_root if data_root is not None else package_root() / "systems" / "data"
    system = system.rstrip("/")  # a shell's completion of the folder name ("l40s/")
    if not system or Path(system).name != system or system in (".", ".."):  # a path: its tables would be refused
        raise OptionError(f"system={system!r}: give a system's name, as aiconfigurator names its folders (e.g. "
                          "h100_sxm), not a path")
    if not (root / system).is_dir():
        # the systems with measured tables (the package ships some folders empty: l4, a30 in 0.12.0)
        known = sorted(p.name for p in root.iterdir() if p.is_dir() and next(p.rglob("*.parquet"), None)) \
            if root.is_dir() else []
        named = {device: name for name, device in SYSTEMS.items()}.get(system)  # an llmsim device name given
        hint = f" (llmsim's {system!r} is aiconfigurator's {named!r})" if named else ""
        raise OptionError(f"system={system!r} has no data in {root}{hint}; systems with measured tables: "
                          f"{', '.join(known)}")
    wanted = tuple(families) if families is not None else tuple(FAMILY_COLUMNS)
    for family in wanted:
        check_choice("family", family, tuple(FAMILY_COLUMNS))
    if out_dir.exists() and not out_dir.is_dir():
        raise LlmsimError(f"out {out_dir}: a file; the tables are a folder of CSV files: give a folder's path")
    created = [p for p in (out_dir, *out_dir.parents) if not p.exists()]  # removed again if nothing is written
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LlmsimError(f"out {out_dir}: cannot create that folder ({exc.strerror or exc}); choose another "
                          "path") from None
    readers = {"gemm": _gemm,
               "prefill_attention": lambda d, e, f: _attention(d, e, f, "context_attention_perf", "isl"),
               "decode_attention": lambda d, e, f: _attention(d, e, f, "generation_attention_perf", "keys"),
               "encoder_attention": _encoder_attention,
               "moe": _moe, "all_reduce": _all_reduce, "nccl": _nccl,
               "prefill_mla": lambda d, e, f: _mla(d, e, "context_mla_perf", "isl"),
               "decode_mla": lambda d, e, f: _mla(d, e, "generation_mla_perf", "keys"),
               "prefill_gdn": lambda d, e, f: _gdn(d, e, f, "context"),
               "decode_gdn": lambda d, e, f: _gdn(d, e, f, "generation")}
    existing = [str(out_dir / f"{family}.csv") for family in wanted if (out_dir / f"{family}.csv").exists()]
    if existing:
        raise LlmsimError(f"{existing[0]} exists: llmsim never overwrites a file; choose another --out")
    written = []
    for family in wanted:
        found = readers[family](root / system, engine, full)
        if found is None or not found[0]:
            continue
        path = out_dir / f"{family}.csv"
        rows, source_file, extra = found
        _write(path, family, rows, _provenance(system, engine, source_file, root, extra))
        written.append(path)
    if not written:  # the system's folder ships empty for this engine: leave no empty folder behind
        for folder in created:  # deepest first
            folder.rmdir()
    return written


# ---- reading the package's tables ---------------------------------------------------------------------
def _parquet_rows(path: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise LlmsimError("reading aiconfigurator tables needs pyarrow: pip install 'llmsim[aiconfigurator]'") from exc
    return pq.read_table(path).to_pylist()


def _version_dir(family_dir: Path, table: str) -> Path | None:
    """The version folder holding `table`.parquet that the package itself serves: its `current` version of
    the engine on this system (systems/query_versions.yaml), else the newest one older than it (the package
    fills a table the current version lacks backward, never from a newer one); the newest where the package
    names no current version. A newer folder can hold a partial drop (TensorRT-LLM 1.3.0rc23's moe_perf has
    only Nemotron-3 shapes), which is why the newest is not simply taken."""
    candidates = [d for d in family_dir.iterdir() if (d / f"{table}.parquet").is_file()] if family_dir.is_dir() else []
    if not candidates:
        return None
    current = _current_version(family_dir.parent.parent.parent, family_dir.parent.parent.name, family_dir.name)
    if current is not None:
        served = [d for d in candidates if _version_key(d.name) <= _version_key(current)]
        if served:
            return max(served, key=lambda d: _version_key(d.name))
    return max(candidates, key=lambda d: _version_key(d.name))


def _current_version(data_root: Path, system: str, backend: str) -> str | None:
    """The package's `current` version slot for (system, backend), from systems/query_versions.yaml beside
    its data folder (None without that file, or where it names none)."""
    path = data_root.parent / "query_versions.yaml"
    if not path.is_file():
        return None
    try:
        import yaml  # installed with aiconfigurator-core (and transformers)
    except ImportError as exc:  # pragma: no cover - the package depends on it
        raise LlmsimError("reading aiconfigurator's version slots needs PyYAML: pip install 'llmsim[aiconfigurator]'"
                          ) from exc
    doc = yaml.safe_load(path.read_text()) or {}
    entry = ((doc.get("overrides") or {}).get(system) or {}).get(backend) or (doc.get("defaults") or {}).get(backend)
    current = entry.get("current") if isinstance(entry, dict) else None
    return str(current) if current else None


def _version_key(text: str) -> tuple:
    parts: list[Any] = []
    for piece in text.replace("rc", ".").replace("post", ".").split("."):
        parts.append((0, int(piece)) if piece.isdigit() else (1, piece))
    return tuple(parts)


def _table(system_dir: Path, family: str, backend: str, table: str) -> tuple[list[dict[str, Any]], Path] | None:
    version_dir = _version_dir(system_dir / family / backend, table)
    if version_dir is None:
        return None
    path = version_dir / f"{table}.parquet"
    return _first_wins(_parquet_rows(path)), path


def _first_wins(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop exact repeats of a key (the package's loader keeps the first row of a key)."""
    seen: set[tuple] = set()
    kept = []
    for row in rows:
        key = tuple((k, v) for k, v in row.items() if k not in ("latency", "power", "energy"))
        if key not in seen:
            seen.add(key)
            kept.append(row)
    return kept


def _preferred_kernel(rows: list[dict[str, Any]], key_of: Any) -> list[dict[str, Any]]:
    """One row per key: the kernel source most rows use (the engine's main lane), the others where it lacks one."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.get("kernel_source", "")] = counts.get(row.get("kernel_source", ""), 0) + 1
    rank = {source: -count for source, count in counts.items()}
    best: dict[tuple, dict[str, Any]] = {}
    for row in rows:
        key = key_of(row)
        if key not in best or rank[row.get("kernel_source", "")] < rank[best[key].get("kernel_source", "")]:
            best[key] = row
    return list(best.values())


def _gemm(system_dir: Path, engine: str, full: bool) -> tuple[list[dict[str, Any]], Path, dict[str, str]] | None:
    found = _table(system_dir, "gemm", engine, "gemm_perf")
    if found is None:
        return None
    rows, path = found
    rows = [r for r in rows if r["gemm_dtype"] in GEMM_DTYPES and (r["gemm_dtype"], engine) not in UNGRAPHED_GEMM_LANES]
    # one kernel per dtype and shape: the one timing most of the dtype's rows (vLLM fp8_block on Hopper: DeepGEMM)
    rows = _preferred_kernel(rows, lambda r: (r["gemm_dtype"], r["m"], r["n"], r["k"]))
    out = [{"dtype": GEMM_DTYPES[r["gemm_dtype"]], "m": r["m"], "n": r["n"], "k": r["k"], "latency_ms": r["latency"]}
           for r in rows]
    extra = {"kernel_sources": _sources(rows)}
    overhead = _compute_scale(system_dir, engine)
    if overhead is not None:
        # the package's fp8 rows run dynamic per-token activation quantisation; a checkpoint with static input
        # scales (the per-tensor fp8 checkpoints) skips the scale computation, which the package times on its
        # own: static = fp8 row - compute_scale(m, k), as aiconfigurator itself derives fp8_static
        # approximation: never below half the row (a guard against the noise of two separate measurements)
        dynamic = [{**r, "dtype": "fp8_dynamic"} for r in out if r["dtype"] == "fp8"]
        for r in out:
            if r["dtype"] == "fp8":
                r["latency_ms"] = max(r["latency_ms"] - overhead(r["m"], r["k"]), 0.5 * r["latency_ms"])
        out += dynamic
        extra["fp8"] = ("static activation scales: the package's fp8 row (dynamic per-token quantisation) minus its "
                        f"compute_scale row at (m, k) ({overhead.source}), as aiconfigurator derives fp8_static; "
                        "fp8_dynamic: the package's fp8 row as measured (activation scales computed per call)")
    if engine in UNTUNED_GEMM_LANES:
        out, note = _autotuned_stand_in(system_dir, engine, out)
        if note:
            extra[UNTUNED_GEMM_LANES[engine]] = note
    if not full:
        out = [r for r in out if r["m"] in COMPACT_M and r["n"] in COMPACT_NK and r["k"] in COMPACT_NK
               and r["dtype"] in COMPACT_GEMM_DTYPES]
    return _full_grids(out, ("dtype",), ("m", "n", "k")), path, extra


class _ComputeScale:
    """The package's measured fp8 compute-scale overhead (ms) at (m, k): bilinear in (log m, log k) between its
    grid points, the edge values beyond them (approximation: the grid spans m 1-32768, k 32-65536)."""

    def __init__(self, rows: list[dict[str, Any]], source: str) -> None:
        self.source = source
        rows = _full_grids(rows, (), ("m", "k"))  # the largest full m x k grid of the measured points
        self.m = np.array(sorted({float(r["m"]) for r in rows}))
        self.k = np.array(sorted({float(r["k"]) for r in rows}))
        cells = {(float(r["m"]), float(r["k"])): float(r["latency"]) for r in rows}
        self.ms = np.array([[cells[(m, k)] for k in self.k] for m in self.m])

    def __call__(self, m: float, k: float) -> float:
        lm, lk = np.log(self.m), np.log(self.k)
        along_k = np.array([np.interp(np.log(k), lk, row) for row in self.ms])
        return float(np.interp(np.log(m), lm, along_k))


def _compute_scale(system_dir: Path, engine: str) -> _ComputeScale | None:
    found = _table(system_dir, "quantize", engine, "computescale_perf")
    if found is None:
        return None
    rows, path = found
    rows = [r for r in rows if r.get("quant_dtype", "fp8") == "fp8"]
    source = "/".join(path.parts[-4:])
    return _ComputeScale(rows, source) if rows else None


def _attention_rows(system_dir: Path, engine: str, table: str) -> tuple[list[dict[str, Any]], Path] | None:
    found = _table(system_dir, "attention", engine, table)
    if found is None:
        return None
    rows, path = found
    rows = [r for r in rows if r.get("attn_dtype", "bfloat16") == "bfloat16" and r["kv_cache_dtype"] in KV_DTYPES]
    return rows, path


def _attention_key(r: dict[str, Any]) -> dict[str, Any]:
    return {"kv_dtype": KV_DTYPES[r["kv_cache_dtype"]], "head_dim": r["head_dim"], "window": r.get("window_size", 0),
            "num_heads": r["num_heads"], "num_kv_heads": r["num_key_value_heads"]}


def _compact_heads(row: dict[str, Any], kv_dtypes: tuple[str, ...] = ("bf16",)) -> bool:
    """The compact grid's attention slices: a cache of one of `kv_dtypes`, no window (windows are read from the
    full-attention table at the keys a window leaves), common head counts and head dims."""
    return (row["kv_dtype"] in kv_dtypes and row["window"] == 0 and row["head_dim"] in COMPACT_HEAD_DIMS
            and row["num_heads"] in COMPACT_HEADS and row["num_kv_heads"] in COMPACT_KV_HEADS)


def _attention(system_dir: Path, engine: str, full: bool, table: str, axis: str) -> Any:
    """Prefill (axis "isl": new tokens per sequence) or decode (axis "keys": a step with `step` tokens cached
    attends to step + isl (= 1) keys) attention rows of the table, one kernel per key."""
    found = _attention_rows(system_dir, engine, table)
    if found is None:
        return None
    rows, path = found

    def at(r: dict[str, Any]) -> int:
        return r["isl"] if axis == "isl" else r["step"] + r["isl"]

    picked = _preferred_kernel(rows, lambda r: (*_attention_key(r).values(), r["batch_size"], at(r)))
    out = [{**_attention_key(r), "batch": r["batch_size"], axis: at(r), "latency_ms": r["latency"]} for r in picked]
    if not full:
        # decode keeps the fp8-cache slices too: an fp8 cache halves the bytes a decode step reads (serving
        # engines run it on Hopper and Blackwell); prefill reads fresh 16-bit keys and values, so bf16 only
        points, caches = (COMPACT_ISL, ("bf16",)) if axis == "isl" else (COMPACT_KEYS, ("bf16", "fp8"))
        out = [r for r in out if r["batch"] in COMPACT_BATCH and r[axis] in points and _compact_heads(r, caches)]
    keys, axes = FAMILY_COLUMNS["prefill_attention" if axis == "isl" else "decode_attention"]
    return _full_grids(out, keys, axes, fill_first_axis=True), path, {"kernel_sources": _sources(picked)}


def _encoder_attention(system_dir: Path, engine: str, full: bool) -> Any:
    """Non-causal attention (the package's ViT encoder tables): `batch` sequences of `isl` tokens, each token
    attending to every token of its sequence, query heads = KV heads, bf16, no KV cache."""
    found = _table(system_dir, "encoder_attention", engine, "encoder_attention_perf")
    if found is None:
        return None
    rows, path = found
    rows = [r for r in rows if r.get("attn_dtype", "bfloat16") == "bfloat16"]
    picked = _preferred_kernel(rows, lambda r: (r["head_dim"], r["num_heads"], r["batch_size"], r["isl"]))
    out = [{"head_dim": r["head_dim"], "num_heads": r["num_heads"], "batch": r["batch_size"], "isl": r["isl"],
            "latency_ms": r["latency"]} for r in picked]
    if not full:
        out = [r for r in out if r["batch"] in COMPACT_BATCH and r["num_heads"] in COMPACT_ENCODER_HEADS]
    keys, axes = FAMILY_COLUMNS["encoder_attention"]
    return _full_grids(out, keys, axes, fill_first_axis=True), path, {"kernel_sources": _sources(picked)}


def _moe(system_dir: Path, engine: str, full: bool) -> Any:
    found = _table(system_dir, "moe", engine, "moe_perf")
    if found is None:
        return None
    rows, path = found
    routings = MOE_ROUTINGS if full else COMPACT_MOE_ROUTINGS
    rows = [r for r in rows if r["distribution"] in routings and r["moe_dtype"] in MOE_DTYPES]
    # TensorRT-LLM's min-latency NVFP4 kernel is a lane of its own (dtype nvfp4_min_latency), not a rival of the
    # default kernel for the same key: the engine runs it at few tokens only (llmsim.timing.measured); vLLM's
    # Marlin MXFP4 kernel likewise (dtype mxfp4_wo_marlin; kernel sources naming "marlin" among the w4a16_mxfp4
    # rows, measured at another model's shape than gpt-oss's default-kernel rows), a rival run by an option
    def marlin(r: dict[str, Any]) -> bool:
        return r["moe_dtype"] == "w4a16_mxfp4" and "marlin" in str(r.get("kernel_source", "")).lower()

    lanes = [[r for r in rows if r.get("kernel_source") != MIN_LATENCY_SOURCE and not marlin(r)],
             [{**r, "moe_dtype": MIN_LATENCY_LANE} for r in rows
              if r.get("kernel_source") == MIN_LATENCY_SOURCE and r["moe_dtype"] == "nvfp4"],
             [{**r, "moe_dtype": MARLIN_MXFP4_LANE} for r in rows if marlin(r)]]
    picked = [row for lane in lanes for row in _preferred_kernel(
        lane, lambda r: (r["moe_dtype"], r["distribution"], r["topk"], r["num_experts"], r["hidden_size"],
                         r["inter_size"], r["moe_tp_size"], r["moe_ep_size"], r["num_tokens"]))]
    out = [{"dtype": MOE_DTYPES.get(r["moe_dtype"], r["moe_dtype"]), "routing": r["distribution"], "topk": r["topk"],
            "num_experts": r["num_experts"],
            "hidden": r["hidden_size"], "inter": r["inter_size"], "tp": r["moe_tp_size"], "ep": r["moe_ep_size"],
            "tokens": r["num_tokens"], "latency_ms": r["latency"]} for r in picked]
    if not full:
        out = [r for r in out if r["tokens"] in COMPACT_TOKENS and (
            (r["tp"] in COMPACT_PARALLEL and r["ep"] in COMPACT_PARALLEL)
            or (r["tp"] == 1 and r["ep"] in COMPACT_WIDE_EP))]
    extra = {"kernel_sources": _sources(picked), "routing": MOE_ROUTING_NOTE}
    deepep, files = _deepep_moe(system_dir, engine, routings)
    if deepep:
        out += deepep
        extra["deepep_files"] = " ".join(str(f.relative_to(system_dir.parent)) for f in files)
        extra["deepep_lanes"] = DEEPEP_FILE_NOTE
    keys, axes = FAMILY_COLUMNS["moe"]
    return _full_grids(out, keys, axes), path, extra


def _deepep_moe(system_dir: Path, engine: str, routings: tuple[str, ...]) -> tuple[list[dict[str, Any]], list[Path]]:
    """SGLang's DeepEP expert rows (DEEPEP_FILE_NOTE) as two MoE lanes, every measured token count and EP size (the
    tables are small, and wide EP lives past the compact grid's 16,384 tokens and 8 GPUs); ([], []) for another
    engine or where the package has no such table."""
    if engine != "sglang":
        return [], []
    out: list[dict[str, Any]] = []
    files = []
    for table, lane in (("wideep_context_moe_perf", DEEPEP_NORMAL_LANE),
                        ("wideep_generation_moe_perf", DEEPEP_LOW_LATENCY_LANE)):
        found = _table(system_dir, "moe", engine, table)
        if found is None:
            continue
        rows, path = found
        files.append(path)
        # its `uniform` load is llmsim's balanced one (every local expert the same tokens)
        out += [{"dtype": lane, "routing": routing, "topk": r["topk"], "num_experts": r["num_experts"],
                 "hidden": r["hidden_size"], "inter": r["inter_size"], "tp": r["moe_tp_size"], "ep": r["moe_ep_size"],
                 "tokens": r["num_tokens"], "latency_ms": r["latency"]}
                for r in rows for routing in ["balanced" if r["distribution"] == "uniform" else r["distribution"]]
                if r["moe_dtype"] == "fp8_block" and routing in routings]
    return out, files


def _all_reduce(system_dir: Path, engine: str, full: bool) -> Any:
    found = _table(system_dir, "comm", engine, "custom_allreduce_perf")
    if found is None:
        return None
    rows, path = found
    # the CUDA-graph lane, as served (the package's loader drops the eager rows too); bf16: 2 bytes per element
    rows = [r for r in rows if not str(r.get("kernel_source", "")).endswith("_eager")
            and not str(r.get("backend", "")).endswith("_eager")]
    out = [{"num_gpus": r["num_gpus"], "message_bytes": 2 * r["message_size"], "latency_ms": r["latency"]}
           for r in rows]
    return _full_grids(out, ("num_gpus",), ("message_bytes",)), path, {"kernel_sources": _sources(rows)}


def _mla(system_dir: Path, engine: str, table: str, axis: str) -> Any:
    """DeepSeek-shaped MLA attention (op-level: 128 native heads, latent 512 + rope 64, nope 128, v 128), per-GPU
    heads; prefill over isl new tokens (the expanded form), decode one step attending to step + 1 keys (the
    absorbed form over the latent cache). The package's tp_size column only records provenance."""
    found = _table(system_dir, "mla", engine, table)
    if found is None:
        return None
    rows, path = found
    rows = [r for r in rows if r.get("mla_dtype", "bfloat16") == "bfloat16" and r["kv_cache_dtype"] in KV_DTYPES]

    def at(r: dict[str, Any]) -> int:
        return r["isl"] if axis == "isl" else r["step"] + r["isl"]

    picked = _preferred_kernel(rows, lambda r: (r["kv_cache_dtype"], r["num_heads"], r["batch_size"], at(r)))
    out = [{"kv_dtype": KV_DTYPES[r["kv_cache_dtype"]], "num_heads": r["num_heads"], "batch": r["batch_size"],
            axis: at(r), "latency_ms": r["latency"]} for r in picked]
    keys, axes = FAMILY_COLUMNS["prefill_mla" if axis == "isl" else "decode_mla"]
    return (_full_grids(out, keys, axes, fill_first_axis=True), path,
            {"kernel_sources": _sources(picked), "shape": "DeepSeek-V3 MLA: latent 512, rope 64, nope 128, v 128"})


def _nccl(system_dir: Path, engine: str, full: bool) -> Any:
    """NCCL collectives (nccl-tests, fp16 messages), the same for every engine: the newest NCCL version folder."""
    found = _table(system_dir, "comm", "nccl", "nccl_perf")
    if found is None:
        return None
    rows, path = found
    out = [{"collective": NCCL_OPS[r["op_name"]], "num_gpus": r["num_gpus"], "message_bytes": 2 * r["message_size"],
            "latency_ms": r["latency"]} for r in rows if r.get("nccl_dtype") == "half" and r["op_name"] in NCCL_OPS]
    return (_full_grids(out, ("collective", "num_gpus"), ("message_bytes",)), path,
            {"nccl_version": path.parent.name, "note": "nccl-tests out-of-place times; message_size elements x 2 "
             "bytes (fp16)"})


def _gdn_kernel(source: str) -> str | None:
    """llmsim's name of a gdn_perf kernel source: "conv1d" (causal_conv1d_fn in prefill, causal_conv1d_update in
    decode) or "delta_rule" (the chunked rule in prefill: chunk_gated_delta_rule[_flashinfer|_triton]; the
    recurrent one in decode: fused_recurrent_gated_delta_rule[_packed_decode], fused_sigmoid_gating_...)."""
    if source.startswith("causal_conv1d"):
        return "conv1d"
    if "delta_rule" in source:
        return "delta_rule"
    return None


def _gdn(system_dir: Path, engine: str, full: bool, phase: str) -> Any:
    """Gated DeltaNet kernels (Qwen3.5, Qwen3-Next linear attention), one call of one layer's kernel on one GPU
    with per-GPU heads (the package's model builder looks them up at heads / tp). Prefill ("context"): the
    causal convolution over the packed q, k, v of `batch` fresh prompts of `isl` tokens, and the chunked delta
    rule over them (q, k already L2-normalised, the gates given); decode ("generation"): one token per sequence,
    the convolution's state update and the recurrent delta rule (vLLM's and SGLang's packed decode kernel fuse
    the gates and the L2 norm). The package keys rows also by d_model, which no GDN kernel reads (its
    collectors size every tensor from the heads): the same shape measured under several model names is one
    point here, the fastest of its repeats (noise only adds time)."""
    found = _table(system_dir, "linear_attention", engine, "gdn_perf")
    if found is None:
        return None
    rows, path = found
    rows = [r for r in rows if r["phase"] == phase and _gdn_kernel(str(r["kernel_source"])) is not None]
    axis = "isl" if phase == "context" else None
    best: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        point = {"kernel": _gdn_kernel(str(r["kernel_source"])), "head_k_dim": r["head_k_dim"],
                 "head_v_dim": r["head_v_dim"], "conv": r["d_conv"], "num_k_heads": r["num_k_heads"],
                 "num_v_heads": r["num_v_heads"], "batch": r["batch_size"], "latency_ms": r["latency"]}
        if axis:
            point[axis] = r["seq_len"]
        at = tuple(v for k, v in point.items() if k != "latency_ms")
        if at not in best or point["latency_ms"] < best[at]["latency_ms"]:
            best[at] = point
    out = list(best.values())
    family = "prefill_gdn" if axis else "decode_gdn"
    if not full:
        batches = COMPACT_GDN_BATCH if axis else COMPACT_GDN_DECODE_BATCH
        out = [r for r in out if r["batch"] in batches and (not axis or r[axis] in COMPACT_GDN_ISL)]
    keys, axes = FAMILY_COLUMNS[family]
    return (_full_grids(out, keys, axes, fill_first_axis=bool(axis)), path,
            {"kernel_sources": _sources(rows), "phase": phase,
             "shape": "per-GPU heads; q, k, v packed in one convolution of 2 x num_k_heads x head_k_dim + "
                      "num_v_heads x head_v_dim channels; float32 recurrent state; the fastest repeat of a shape "
                      "measured under several model names (d_model)"})


def _autotuned_stand_in(system_dir: Path, engine: str, out: list[dict[str, Any]]
                        ) -> tuple[list[dict[str, Any]], str]:
    """(rows, note): the engine's untuned lane (UNTUNED_GEMM_LANES) replaced by the fastest measured kernel of
    that dtype on the device at each (m, n, k), its own rows kept as "<dtype>_fallback"."""
    dtype = UNTUNED_GEMM_LANES[engine]
    package_dtype = next(k for k, v in GEMM_DTYPES.items() if v == dtype)
    own = [r for r in out if r["dtype"] == dtype]
    if not own:
        return out, ""
    fastest: dict[tuple, float] = {}
    used = []
    for other in sorted(ENGINES):
        if other == engine:
            continue
        found = _table(system_dir, "gemm", other, "gemm_perf")
        rows = [r for r in found[0] if r["gemm_dtype"] == package_dtype] if found is not None else []
        if not rows:
            continue
        used.append(f"{other} {found[1].parent.name} ({_sources(rows)})")
        for r in rows:
            key = (r["m"], r["n"], r["k"])
            fastest[key] = min(fastest.get(key, math.inf), r["latency"])
    if not used:
        return out, ""
    fallback = [{**r, "dtype": f"{dtype}_fallback"} for r in own]
    for r in own:
        r["latency_ms"] = min(r["latency_ms"], fastest.get((r["m"], r["n"], r["k"]), math.inf))
    note = (f"the fastest measured {dtype} kernel of the device at each (m, n, k): this engine's row (its "
            f"AutoTuner's untuned fallback tactic, as the package's collector times it) and {', '.join(used)}, "
            f"standing in for the tactic the engine's AutoTuner picks at warm-up; {dtype}_fallback: this engine's "
            "rows as measured (llmsim.engines.aiconfigurator.UNTUNED_GEMM_LANES)")
    return out + fallback, note


def _sources(rows: list[dict[str, Any]]) -> str:
    return " ".join(sorted({str(r.get("kernel_source", "")) for r in rows}))


def _full_grids(rows: list[dict[str, Any]], keys: tuple[str, ...], axes: tuple[str, ...],
                fill_first_axis: bool = False) -> list[dict[str, Any]]:
    """The rows of each key's largest full grid: axis values missing anywhere are dropped until the rest is a
    full product. With fill_first_axis, cells missing only at the top of the first axis (a table capped at a
    token budget, batch x isl) are allowed: the reader extends them in proportion to the first axis."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    kept: list[dict[str, Any]] = []
    for group in groups.values():
        cells = {tuple(r[a] for a in axes): r for r in group}
        values = [sorted({c[i] for c in cells}) for i in range(len(axes))]
        while True:
            missing = _missing(cells, values, fill_first_axis)
            if not missing:
                break
            # drop the axis value (other than the first axis's smallest) with the most missing cells
            counts: dict[tuple[int, Any], int] = {}
            for cell in missing:
                for i, v in enumerate(cell):
                    counts[(i, v)] = counts.get((i, v), 0) + 1
            axis, value = max(counts, key=lambda iv: (counts[iv], iv[0] > 0, iv[1]))
            values[axis].remove(value)
            if not values[axis]:
                break
        if all(values):
            kept.extend(r for c, r in cells.items() if all(c[i] in values[i] for i in range(len(axes))))
    return kept


def _missing(cells: dict[tuple, Any], values: list[list[Any]], fill_first_axis: bool) -> list[tuple]:
    import itertools

    missing = [c for c in itertools.product(*values) if c not in cells]
    if not fill_first_axis:
        return missing
    # allowed: for each rest-of-axes, a run of missing values at the top of the first axis (above a measured one)
    bad = []
    for cell in missing:
        rest = cell[1:]
        below = [v for v in values[0] if v < cell[0]]
        if not below or (below[0], *rest) not in cells:
            bad.append(cell)
            continue
        higher = [v for v in values[0] if v > cell[0]]
        if any((v, *rest) in cells for v in higher):
            bad.append(cell)
    return bad


# ---- writing ----------------------------------------------------------------------------------------
def _provenance(system: str, engine: str, source_file: Path, root: Path, extra: dict[str, str]) -> dict[str, str]:
    try:
        version = importlib.metadata.version("aiconfigurator-core")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown (tables read from a folder, not an installed package)"
    engine_version = source_file.parent.name
    if source_file.parent.parent.name == "nccl":  # NCCL's own tables: the folder is the NCCL version
        engine_version = f"not engine-specific (NCCL {engine_version})"
    gpu = _gpu_string(source_file)
    return {
        "source": f"aiconfigurator-core {version} (NVIDIA, Apache-2.0), measured kernel timings",
        "file": str(source_file.relative_to(root)),
        "system": system,
        "engine": engine,
        "engine_version": engine_version,
        "gpu": gpu,
        **extra,
        "units": "latency_us: microseconds per call of one layer's kernel on one GPU (package: milliseconds)",
        "written_by": "llmsim calibrate --from aiconfigurator",
    }


def _gpu_string(source_file: Path) -> str:
    rows = _parquet_rows(source_file)
    return str(rows[0].get("device", "?")) if rows else "?"


def _write(path: Path, family: str, rows: list[dict[str, Any]], provenance: dict[str, str]) -> None:
    keys, axes = FAMILY_COLUMNS[family]
    lines = [f"# {key}: {value}" for key, value in provenance.items()]
    lines.append(",".join((*keys, *axes, "latency_us")))
    rows = sorted(rows, key=lambda r: tuple(str(r[k]) for k in keys) + tuple(r[a] for a in axes))
    for row in rows:
        latency_us = f"{row['latency_ms'] * 1000:.4g}"
        lines.append(",".join([*(str(row[k]) for k in (*keys, *axes)), latency_us]))
    path.write_text("\n".join(lines) + "\n")
