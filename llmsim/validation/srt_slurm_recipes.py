"""The SGLang server arguments of InferenceX's disaggregated SGLang runs: the NVIDIA/srt-slurm recipe each run was
launched with, read per pool (prefill, decode). The file's columns give each pool's workers and parallel sizes but
not its scheduler knobs; these feed llmsim.validation.serving.simulate_row's pools. Nothing is fitted to the rows.

Which recipe: InferenceX names it per configuration and sequence lengths in `.github/configs/nvidia-master.yaml`
(`CONFIG_FILE=recipes/...` in a search-space entry's additional-settings), as that file stood on the day the run was
measured (SemiAnalysisAI/InferenceX, the commit in force at the end of that day, matched by concurrency and by the
entry's workers, tensor size and attention data parallelism). The run is found by its `config_id` in
aiconfigurator's copy of InferenceX's database (`db-dump/2026-04-27; config_id=...`).

The recipes' values (NVIDIA/srt-slurm, at the commit named per recipe): `tp-size`/`tensor-parallel-size`,
`dp-size`/`data-parallel-size`, `chunked-prefill-size`, `max-prefill-tokens` and `max-running-requests` of the
`sglang_config` prefill and decode servers, and the resources' worker counts. The b200 `*/stp/*` recipes exist only
at 5063eb432 (deleted the next day by 37f8ca23, "Consolidate B200 recipes"); the gb300 and h200 ones are the main
branch's (last changed by 04ff0a0a0); the others are the versions a public index stores (07fbab130 and branches of
the repository), whose values match the main branch's where both have the file.

How they map onto serve_disaggregated's pools:
- prefill max_num_batched_tokens = min(chunked-prefill-size, d x max-prefill-tokens), d the pool's attention
  data-parallel ranks (SGLang divides chunked_prefill_size over its DP-attention ranks, llmsim's
  serving.engine_limits._sglang_rank_share, and caps a step's new prompt tokens at max_prefill_tokens per rank,
  16384 when the recipe does not set it: python/sglang/srt/server_args.py; approximation: SGLang's PrefillAdder
  admits a last request past max_prefill_tokens up to the chunk, not modelled).
- max_num_seqs = max-running-requests (divided over the ranks, as SGLang does).
- decode: no token budget (a decode server's batches are its running requests): max_num_batched_tokens =
  max-running-requests, so llmsim's budget of one token per running decode never binds first.
- the KV cache: every recipe here passes `kv-cache-dtype: fp8_e4m3` to both servers except
  recipes/h200/8k1k/bs128-1p1d-dep.yaml (none: the checkpoint's dtype), so those runs take kv_dtype="fp8"
  (sglang_disagg_kv_dtype).
- DeepEP (from session 36): where a server runs `moe-a2a-backend: deepep`, its block-fp8 experts take SGLang's DeepEP
  rows of its `deepep-mode` (pool fp8_block_moe_kernel "deepep-normal" on the prefill servers, "deepep-low-latency"
  on the decode servers: the gb200-fp8 max-tpt, ultra-tpt and 8k1k mid-curve recipes and the gb300-fp8 stp max,
  stp mid and 8k1k stp mid ones; the fp4 mid-curve and max-tpt decode servers too, whose nvfp4 experts it leaves
  alone). A server's `scheduler-recv-interval` is the pool's scheduler_recv_interval (10 on both servers of the
  gb200 and gb300-fp4 low-latency recipes; 10 on prefill and 1 on decode in the gb300-fp8 stp low-latency ones).
approximation: the recipes' max-total-tokens (a KV pool cap), mem-fraction-static, CUDA-graph batch sizes and the
other MoE back ends (moe-runner-backend) are not read (serve_disaggregated takes one memory fraction for both
pools); DeepEP's dispatch and combine are priced as the attention data-parallel all-gather and reduce-scatter
(serving.data_parallel), not from the package's DeepEP tables.

Runs not covered keep SGLang's defaults: InferenceX's December 2025 runs (launched by SCRIPT_MODE, before its
CONFIG_FILE recipes), and a run whose pools' workers, tensor size or attention ranks differ from its recipe's
(recipes/gb200-fp8/8k1k/low-latency.yaml's stored version has 3 or 7 decode workers per variant; its runs have 1).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from .silicon_rows import _count
from .silicon_rows import _ranks as _row_ranks

# (config_id, isl, osl) of a run -> its recipe (the nvidia-master.yaml commit and the day its run was measured)
RECIPE_OF_RUN: dict[tuple[int, int, int], str] = {
    (434, 8192, 1024): "recipes/h200/8k1k/bs128-1p1d-dep.yaml",  # 04b564b39 (2026-02-07)
    (453, 8192, 1024): "recipes/b200-fp8/8k1k/stp/low-latency-tep8-1p4d.yaml",  # 04b564b39 (2026-02-07)
    (455, 1024, 1024): "recipes/b200-fp8/1k1k/stp/low-latency-tep8-1p1d.yaml",  # 593fb431a (2026-03-18)
    (455, 8192, 1024): "recipes/b200-fp8/8k1k/stp/low-latency-tep8-1p1d.yaml",  # 04b564b39 (2026-02-07)
    (457, 8192, 1024): "recipes/b200-fp8/8k1k/stp/max-tpt-dep8-1p1d.yaml",  # 04b564b39 (2026-02-07)
    (459, 8192, 1024): "recipes/b200-fp8/8k1k/stp/max-tpt-dep8-2p1d.yaml",  # 04b564b39 (2026-02-07)
    (481, 8192, 1024): "recipes/gb200-fp4/8k1k/low-latency.yaml",  # 2767db504 (2026-02-08)
    (483, 1024, 1024): "recipes/gb200-fp4/1k1k/mid-curve.yaml",  # 2767db504 (2026-02-08)
    (486, 1024, 1024): "recipes/gb200-fp4/1k1k/low-latency.yaml",  # 2767db504 (2026-02-08)
    (489, 8192, 1024): "recipes/gb200-fp4/8k1k/max-tpt.yaml",  # 2767db504 (2026-02-08)
    (502, 1024, 1024): "recipes/gb200-fp8/1k1k/low-latency.yaml",  # 37f353be2 (2026-02-09)
    (505, 8192, 1024): "recipes/gb300-fp8/8k1k/stp/mid.yaml",  # 37f353be2 (2026-02-09)
    (508, 1024, 1024): "recipes/gb200-fp8/1k1k/ultra-tpt.yaml",  # 37f353be2 (2026-02-09)
    (517, 1024, 1024): "recipes/gb300-fp8/1k1k/stp/low-latency.yaml",  # 37f353be2 (2026-02-09)
    (519, 8192, 1024): "recipes/gb300-fp8/8k1k/stp/low-latency.yaml",  # 37f353be2 (2026-02-09)
    (523, 1024, 1024): "recipes/gb200-fp8/1k1k/max-tpt.yaml",  # 37f353be2 (2026-02-09)
    (526, 1024, 1024): "recipes/gb300-fp8/1k1k/stp/max.yaml",  # 37f353be2 (2026-02-09)
    (527, 1024, 1024): "recipes/b200-fp4/1k1k/stp/max-tpt-dep4-1p-dep8-1d.yaml",  # 2376a7182 (2026-02-11)
    (528, 1024, 1024): "recipes/gb300-fp8/1k1k/stp/mid.yaml",  # 37f353be2 (2026-02-09)
    (530, 8192, 1024): "recipes/b200-fp4/8k1k/stp/low-latency-dep4-1p-tep8-1d.yaml",  # 2376a7182 (2026-02-11)
    (532, 1024, 1024): "recipes/b200-fp4/1k1k/stp/max-tpt-dep4-1p-dep8-2d.yaml",  # 2376a7182 (2026-02-11)
    (533, 8192, 1024): "recipes/gb200-fp8/8k1k/mid-curve.yaml",  # 37f353be2 (2026-02-09)
    (535, 8192, 1024): "recipes/b200-fp4/8k1k/stp/low-latency-tp4-1p-tp8-1d.yaml",  # 2376a7182 (2026-02-11)
    (536, 8192, 1024): "recipes/gb200-fp8/8k1k/low-latency.yaml",  # 37f353be2 (2026-02-09)
    (538, 8192, 1024): "recipes/b200-fp4/8k1k/stp/max-tpt-dep4-7p-dep8-2d.yaml",  # 2376a7182 (2026-02-11)
    (569, 8192, 1024): "recipes/gb300-fp4/8k1k/low_latency.yaml",  # d25c4e75b (2026-02-12)
    (571, 1024, 1024): "recipes/gb300-fp4/1k1k/low_latency.yaml",  # d25c4e75b (2026-02-12)
    (575, 8192, 1024): "recipes/gb300-fp4/8k1k/max_tpt.yaml",  # d25c4e75b (2026-02-12)
    (576, 1024, 1024): "recipes/gb300-fp4/1k1k/mid_curve.yaml",  # d25c4e75b (2026-02-12)
    (639, 8192, 1024): "recipes/b200-fp8/8k1k_stp_lowlat_1.yaml",  # 593fb431a (2026-03-18)
    (641, 8192, 1024): "recipes/b200-fp8/8k1k_stp_maxtpt_1.yaml",  # 593fb431a (2026-03-18)
    (649, 8192, 1024): "recipes/b200-fp8/8k1k_stp_maxtpt_0.yaml",  # 593fb431a (2026-03-18)
    (654, 8192, 1024): "recipes/b200-fp8/8k1k_stp_maxtpt_2.yaml",  # 593fb431a (2026-03-18)
    (655, 8192, 1024): "recipes/b200-fp8/8k1k_stp_maxtpt_3.yaml",  # 593fb431a (2026-03-18)
}


class PoolRecipe(NamedTuple):
    """One pool's server as a recipe launches it (None: the recipe does not set it)."""

    workers: int | None
    tp: int  # tp-size: the GPUs of one instance
    dp: int | None  # dp-size (attention data-parallel ranks with enable-dp-attention)
    dp_attention: bool | None
    chunked_prefill_size: int | None
    max_prefill_tokens: int | None
    max_running_requests: int | None
    deepep_mode: str | None = None  # with moe-a2a-backend deepep: its deepep-mode ("normal", "low_latency")
    recv_interval: int | None = None  # scheduler-recv-interval


# recipe -> (NVIDIA/srt-slurm commit, prefill server, decode server)
RECIPES: dict[str, tuple[str, PoolRecipe, PoolRecipe]] = {
    "recipes/b200-fp4/1k1k/stp/max-tpt-dep4-1p-dep8-1d.yaml": (
        "5063eb432", PoolRecipe(1, 4, 4, True, 32768, 32768, 1024), PoolRecipe(1, 8, 8, True, 32768, 32768, 1024)),
    "recipes/b200-fp4/1k1k/stp/max-tpt-dep4-1p-dep8-2d.yaml": (
        "5063eb432", PoolRecipe(1, 4, 4, True, 32768, 32768, 512), PoolRecipe(2, 8, 8, True, 32768, 32768, 512)),
    "recipes/b200-fp4/8k1k/stp/low-latency-dep4-1p-tep8-1d.yaml": (
        "5063eb432", PoolRecipe(1, 4, 4, True, 32768, 32768, 512), PoolRecipe(1, 8, 1, None, 32768, 32768, 512)),
    "recipes/b200-fp4/8k1k/stp/low-latency-tp4-1p-tp8-1d.yaml": (
        "5063eb432", PoolRecipe(1, 4, 1, None, 32768, 32768, 512), PoolRecipe(1, 8, 1, None, 32768, 32768, 512)),
    "recipes/b200-fp4/8k1k/stp/max-tpt-dep4-7p-dep8-2d.yaml": (
        "5063eb432", PoolRecipe(7, 4, 4, True, 65536, 65536, 1024), PoolRecipe(2, 8, 8, True, 32768, 32768, 2048)),
    "recipes/b200-fp8/1k1k/stp/low-latency-tep8-1p1d.yaml": (
        "5063eb432", PoolRecipe(1, 8, 1, None, 32768, 32768, 512), PoolRecipe(1, 8, 1, None, 32768, 32768, 512)),
    "recipes/b200-fp8/8k1k/stp/low-latency-tep8-1p1d.yaml": (
        "5063eb432", PoolRecipe(1, 8, 1, None, 32768, 32768, 512), PoolRecipe(1, 8, 1, None, 32768, 32768, 512)),
    "recipes/b200-fp8/8k1k/stp/low-latency-tep8-1p4d.yaml": (
        "5063eb432", PoolRecipe(1, 8, 1, None, 32768, 32768, 512), PoolRecipe(4, 8, 1, None, 32768, 32768, 512)),
    "recipes/b200-fp8/8k1k/stp/max-tpt-dep8-1p1d.yaml": (
        "5063eb432", PoolRecipe(1, 8, 8, True, 32768, 32768, 1024), PoolRecipe(1, 8, 8, True, 32768, 32768, 1024)),
    "recipes/b200-fp8/8k1k/stp/max-tpt-dep8-2p1d.yaml": (
        "5063eb432", PoolRecipe(2, 8, 8, True, 32768, 32768, 1024), PoolRecipe(1, 8, 8, True, 32768, 32768, 1024)),
    "recipes/b200-fp8/8k1k_stp_lowlat_1.yaml": (
        "591779112", PoolRecipe(1, 8, 8, True, 65536, 8192, 8), PoolRecipe(4, 8, 1, None, None, None, 32)),
    "recipes/b200-fp8/8k1k_stp_maxtpt_0.yaml": (
        "591779112", PoolRecipe(1, 8, 8, True, 65536, 8192, 8), PoolRecipe(2, 8, 8, True, None, None, 128)),
    "recipes/b200-fp8/8k1k_stp_maxtpt_1.yaml": (
        "591779112", PoolRecipe(1, 8, 8, True, 65536, 8192, 8), PoolRecipe(1, 8, 8, True, None, None, 256)),
    "recipes/b200-fp8/8k1k_stp_maxtpt_2.yaml": (
        "591779112", PoolRecipe(2, 8, 8, True, 65536, 8192, 8), PoolRecipe(1, 8, 8, True, None, None, 512)),
    "recipes/b200-fp8/8k1k_stp_maxtpt_3.yaml": (
        "591779112", PoolRecipe(3, 8, 8, True, 65536, 8192, 8), PoolRecipe(1, 8, 8, True, None, None, 1024)),
    "recipes/gb200-fp4/1k1k/low-latency.yaml": (
        "7c50317d3",
        PoolRecipe(1, 4, 1, None, 8192, None, 512, recv_interval=10),
        PoolRecipe(2, 4, None, None, 8192, None, None, recv_interval=10)),
    "recipes/gb200-fp4/1k1k/mid-curve.yaml": (
        "07fbab130",
        PoolRecipe(4, 4, 4, True, 65536, 32768, 30000),
        PoolRecipe(1, 32, 32, True, 786432, None, 67584, deepep_mode="low_latency")),
    "recipes/gb200-fp4/8k1k/low-latency.yaml": (
        "b26af4b64",
        PoolRecipe(1, 4, 1, False, 24576, None, 512, recv_interval=10),
        PoolRecipe(4, 4, None, False, 8192, None, None, recv_interval=10)),
    "recipes/gb200-fp4/8k1k/max-tpt.yaml": (
        "975f228f3", PoolRecipe(10, 4, 1, False, 131072, 524288, 30000),
        PoolRecipe(1, 32, 32, True, 24576, None, 16384, deepep_mode="low_latency")),
    "recipes/gb200-fp8/1k1k/low-latency.yaml": (
        "96f34420a",
        PoolRecipe(1, 4, 1, None, 8192, None, 512, recv_interval=10),
        PoolRecipe(1, 4, 1, None, 8192, None, 128, recv_interval=10)),
    "recipes/gb200-fp8/1k1k/max-tpt.yaml": (
        "07fbab130",
        PoolRecipe(2, 8, 8, True, 131072, None, 30000, deepep_mode="normal"),
        PoolRecipe(1, 32, 32, True, 36864, None, 45000, deepep_mode="low_latency")),
    "recipes/gb200-fp8/1k1k/ultra-tpt.yaml": (
        "07fbab130",
        PoolRecipe(1, 8, 8, True, 131072, None, 8192, deepep_mode="normal"),
        PoolRecipe(1, 8, 8, True, 36864, None, 5120, deepep_mode="low_latency")),
    # base + variants of 3 or 7 decode workers: no variant is its runs' layout (1 decode worker)
    "recipes/gb200-fp8/8k1k/low-latency.yaml": (
        "eb889c08a",
        PoolRecipe(1, 8, 1, None, None, None, 32, recv_interval=10),
        PoolRecipe(None, 8, 1, None, None, None, 32, recv_interval=10)),
    "recipes/gb200-fp8/8k1k/mid-curve.yaml": (
        "eb889c08a",
        PoolRecipe(5, 8, 8, True, 131072, None, 30000, deepep_mode="normal"),
        PoolRecipe(1, 32, 32, True, 36864, None, 8192, deepep_mode="low_latency")),
    "recipes/gb300-fp4/1k1k/low_latency.yaml": (
        "04ff0a0a0",
        PoolRecipe(1, 4, 1, None, 8192, None, 512, recv_interval=10),
        PoolRecipe(2, 4, None, None, 8192, None, None, recv_interval=10)),
    "recipes/gb300-fp4/1k1k/mid_curve.yaml": (
        "04ff0a0a0",
        PoolRecipe(4, 4, 4, True, 65536, 32768, 30000),
        PoolRecipe(1, 32, 32, True, 786432, None, 67584, deepep_mode="low_latency")),
    "recipes/gb300-fp4/8k1k/low_latency.yaml": (
        "04ff0a0a0",
        PoolRecipe(1, 4, 1, False, 24576, None, 512, recv_interval=10),
        PoolRecipe(4, 4, None, False, 8192, None, None, recv_interval=10)),
    "recipes/gb300-fp4/8k1k/max_tpt.yaml": (
        "04ff0a0a0", PoolRecipe(10, 4, 1, False, 131072, 524288, 30000),
        PoolRecipe(1, 32, 32, True, 24576, None, 16384, deepep_mode="low_latency")),
    "recipes/gb300-fp8/1k1k/stp/low-latency.yaml": (
        "04ff0a0a0",
        PoolRecipe(1, 4, 1, None, 8192, 8192, 128, recv_interval=10),
        PoolRecipe(4, 4, 1, None, -1, None, 128, recv_interval=1)),
    "recipes/gb300-fp8/1k1k/stp/max.yaml": (
        "04ff0a0a0",
        PoolRecipe(1, 8, 8, True, 131072, None, 30000, deepep_mode="normal"),
        PoolRecipe(1, 8, 8, True, 36864, None, 45000, deepep_mode="low_latency")),
    "recipes/gb300-fp8/1k1k/stp/mid.yaml": (
        "04ff0a0a0",
        PoolRecipe(2, 8, 8, True, 131072, None, 30000, deepep_mode="normal"),
        PoolRecipe(1, 32, 32, True, 36864, None, 45000, deepep_mode="low_latency")),
    "recipes/gb300-fp8/8k1k/stp/low-latency.yaml": (
        "04ff0a0a0",
        PoolRecipe(1, 4, 1, None, 32768, 32768, 128, recv_interval=10),
        PoolRecipe(1, 4, 1, None, -1, None, 128, recv_interval=1)),
    "recipes/gb300-fp8/8k1k/stp/mid.yaml": (
        "04ff0a0a0",
        PoolRecipe(5, 8, 8, True, 131072, None, 30000, deepep_mode="normal"),
        PoolRecipe(1, 32, 32, True, 36864, None, 45000, deepep_mode="low_latency")),
    "recipes/h200/8k1k/bs128-1p1d-dep.yaml": (
        "04ff0a0a0", PoolRecipe(1, 8, 1, None, 163840, 163840, 16), PoolRecipe(1, 8, 8, True, None, None, 256)),
}
KV_CACHE_CHECKPOINT_DTYPE = frozenset({"recipes/h200/8k1k/bs128-1p1d-dep.yaml"})  # no kv-cache-dtype: "auto"
# deepep-mode -> serve's fp8_block_moe_kernel (llmsim.timing.measured.deepep_moe_grid)
DEEPEP_KERNEL = {"normal": "deepep-normal", "low_latency": "deepep-low-latency"}
SGLANG_MAX_PREFILL_TOKENS = 16384  # ServerArgs.max_prefill_tokens's default (python/sglang/srt/server_args.py)


def _ranks(pool: PoolRecipe) -> int:
    """The attention data-parallel ranks of a recipe's server (1 without enable-dp-attention)."""
    return (pool.dp or 1) if pool.dp_attention else 1


def _matches(row: dict[str, str], phase: str, pool: PoolRecipe) -> bool:
    """Whether a row's pool (its workers, GPUs and attention ranks, read as simulate_row reads them) is the
    recipe's server."""
    ranks = _row_ranks(row, f"{phase}_")
    return (pool.workers == _count(row[f"{phase}_num_workers"]) and pool.tp == _count(row[f"{phase}_tp_size"]) * ranks
            and _ranks(pool) == ranks)


def recipe_of(row: dict[str, str]) -> str | None:
    """The srt-slurm recipe of an InferenceX SGLang disaggregated run, or None (module docstring)."""
    if row["backend"] != "sglang" or row["mode"] != "disagg":
        return None
    found = re.search(r"db-dump/[^;]*; config_id=(\d+)", row.get("silicon_data_source", ""))
    if found is None:
        return None
    return RECIPE_OF_RUN.get((int(found.group(1)), int(row["isl"]), int(row["osl"])))


def _recipe_of_layout(row: dict[str, str]) -> str | None:
    """The row's recipe where the row's pools are the recipe's servers, else None."""
    path = recipe_of(row)
    if path is None:
        return None
    _, prefill, decode = RECIPES[path]
    return path if _matches(row, "prefill", prefill) and _matches(row, "decode", decode) else None


def sglang_disagg_kv_dtype(row: dict[str, str]) -> str | None:
    """"fp8" where the row's recipe runs an fp8 KV cache (module docstring), else None (the default)."""
    path = _recipe_of_layout(row)
    return None if path is None or path in KV_CACHE_CHECKPOINT_DTYPE else "fp8"


def sglang_disagg_pools(row: dict[str, str]) -> dict[str, dict[str, Any]]:
    """{"prefill": {...}, "decode": {...}}: serve_disaggregated's pool knobs (max_num_batched_tokens,
    max_num_seqs) from the row's recipe, where its pools are the recipe's; {} otherwise (module docstring)."""
    path = _recipe_of_layout(row)
    if path is None:
        return {}
    _, prefill, decode = RECIPES[path]
    knobs: dict[str, dict[str, Any]] = {"prefill": {}, "decode": {}}
    if prefill.chunked_prefill_size and prefill.chunked_prefill_size > 0:
        per_rank = prefill.max_prefill_tokens or SGLANG_MAX_PREFILL_TOKENS
        # shape: scalar tokens a prefill step admits over the instance's ranks
        knobs["prefill"]["max_num_batched_tokens"] = min(prefill.chunked_prefill_size, _ranks(prefill) * per_rank)
    if prefill.max_running_requests:
        knobs["prefill"]["max_num_seqs"] = prefill.max_running_requests
    if decode.max_running_requests:
        knobs["decode"] = {"max_num_seqs": decode.max_running_requests,
                           "max_num_batched_tokens": decode.max_running_requests}
    for phase, pool in (("prefill", prefill), ("decode", decode)):
        if pool.deepep_mode is not None:  # block-fp8 experts on DeepEP (other expert dtypes: their own kernel)
            knobs[phase]["fp8_block_moe_kernel"] = DEEPEP_KERNEL[pool.deepep_mode]
        if pool.recv_interval is not None:
            knobs[phase]["scheduler_recv_interval"] = pool.recv_interval
    return knobs
