"""serve() against measured serving runs: aiconfigurator-core's systems/silicon_sample.csv.

Each row is one engine (vLLM, SGLang, TensorRT-LLM) serving fixed-length requests (isl in, osl out) at a
fixed concurrency on one GPU type, with its mean TTFT and TPOT. The rows llmsim can run (a shipped
model, a shipped device, a precision llmsim prices) are simulated with the shipped files and the engine's
defaults: aggregated rows with `serve`, disaggregated rows with `serve_disaggregated` (prefill and decode
pools of the row's worker counts, tensor, attention data and expert parallel sizes; InferenceX's SGLang ones with
their srt-slurm recipe's scheduler knobs and KV cache dtype, llmsim.validation.srt_slurm_recipes); the others are
listed with the reason. Nothing is fitted to these rows: they are validation data only. Configurations the file
measured more than once show its own reproducibility (ServingComparison.repeats).

Attention data parallelism (attention_dp_size d > 1) is read as aiconfigurator-core reads it (sdk/config.py,
backends/base_backend.py): a replica of tp_size x d GPUs (= moe_tp_size x moe_ep_size), d ranks of tp_size
GPUs each, batch_size clients per rank; simulated as serve(tensor_parallel=tp_size x d,
attention_data_parallel=d, expert_parallel=moe_ep_size) with the run's client count (silicon_concurrency=).
A row whose name states its launch (`..._tp{T}_ep{E}_{n}`, the replica's T GPUs) but whose fields give
another GPU count is skipped as contradicting itself (the file holds the same measurement under both
encodings; which one is right is not stated, so neither is guessed), with or without attention data
parallelism; so is an aggregated InferenceX row whose fields give more GPUs than one node of its system holds
(InferenceX's aggregated runs are its single-node recipes; such rows write moe_tp_size x moe_ep_size as tp_size),
and a run of a speculative-decoding (MTP) config, whose acceptance rate no row states: a point that only the
MTP config swept, or a day only MTP configs of that engine and model ran
(llmsim.validation.inferencex_recipes.inferencex_mtp_only).

The client's protocol, where the source of a row states it. Rows from InferenceX (SemiAnalysis's
InferenceMAX serving sweeps: the file's `db-dump/...; workflow_run_id=...` and `source_file=<date>.csv; model=...`
sources, always at its three scenarios 1k/1k, 1k/8k and 8k/1k), aggregated and disaggregated, are simulated as
its client runs them
(InferenceX benchmarks/benchmark_lib.sh `run_benchmark_serving` and its recipes for its single-node runs,
NVIDIA/srt-slurm's sa-bench bench.sh, the same client with RANDOM_RANGE_RATIO 0.8, NUM_PROMPTS_MULT 10 and
NUM_WARMUP_MULT 2 by default, for its multi-node disaggregated ones; kimbochen/bench_serving
`sample_random_requests`): `--dataset-name random --random-range-ratio 0.8`, so each request's input and
output lengths are drawn independently and uniformly from the integers int(0.8 x isl)..isl and
int(0.8 x osl)..osl (`--ignore-eos`: exactly that many tokens out); `--num-prompts 10 x c --max-concurrency
c --request-rate inf`: 10c measured requests, c of them sent at once.
The 2c warm-up requests all finish before the measured ones start (InferenceX utils/bench_serving/
benchmark_serving.py `--num-warmups $((2 * CONC))`: the warm-ups, each the first prompt, run under their own
semaphore and are gathered before the benchmark's clock starts; sa-bench: a separate run of 2c prompts before
the measured one), so the measured run starts on an idle deployment. Before InferenceX's d053ae24e (2026-01-21) its
client sent no warm-ups, only benchmark_serving's initial single-prompt test run, which also finishes first; llmsim
starts every run on a warm, idle deployment (first-use costs such as kernel JIT compilation are not modelled).
approximation: the draws are numpy's default_rng(0), not the benchmark's own sequence (the distribution is
the same, the sample is not).
The other rows are aiconfigurator's own gap-analysis runs ("aic-auto-gap-analysis" in their source). Their
client is not in the file; they run the client of aiconfigurator's automated evaluation, the one public statement
of how its team benchmarked its deployments while these engine versions were current (ai-dynamo/aiconfigurator
src/aiconfigurator/eval/benchmarks/genai_perf_runner.py, from 961028348 on 2025-08-22 until c0c44d911 removed the
module on 2026-03-03): `genai-perf`/`aiperf profile --synthetic-input-tokens-mean isl --synthetic-input-tokens-stddev 0
--output-tokens-mean osl --output-tokens-stddev 0 --extra-inputs min_tokens:osl max_tokens:osl ignore_eos:true
--concurrency c --request-count 10c --warmup-request-count 2c --streaming`: fixed lengths, REQUESTS_PER_CLIENT (10)
requests per client in a closed loop, the first c sent together after the warm-ups have all finished (aiperf
waits for every warm-up response before its profiling phase starts).
approximation: that these runs used that client is inferred (same team, same automated deploy-and-measure
loop), not stated; aiconfigurator's later generated benchmark (config/backend_templates/benchmark/bench_run.sh.j2,
from 2026-02-11) sends 20c. The rows of its kimi-k2.5 and qwen3.5-397b
gap-analysis files are InferenceX runs (inferencex_copies) and are counted once, under their InferenceX rows.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..engines.aiconfigurator import SYSTEMS  # the file's system names -> llmsim hardware files
from .aiconfigurator_recipes import (
    aiconfigurator_agg_options,
    aiconfigurator_disagg_pools,
    aiconfigurator_engine_options,
)
from .inferencex_recipes import (
    inferencex_gb200_disaggregated,
    inferencex_kv_dtype,
    inferencex_mtp_only,
    inferencex_recv_interval,
    inferencex_sglang_options,
    inferencex_trtllm_options,
    inferencex_vllm_options,
)
from .silicon_rows import _concurrency, _count, _from_inferencex, _is_one, _measured_on, _ranks
from .srt_slurm_recipes import sglang_disagg_kv_dtype, sglang_disagg_pools
from .trtllm_disagg_recipes import trtllm_disagg_kv_dtype, trtllm_disagg_pools

REQUESTS_PER_CLIENT = 10  # genai_perf_runner.py: --request-count v * 10 (module docstring)
INFERENCEX_RANGE_RATIO = 0.8  # every InferenceX recipe that sets RANDOM_RANGE_RATIO sets 0.8
INFERENCEX_PROMPTS_PER_CLIENT = 10  # --num-prompts $((CONC * 10))
INFERENCEX_SCENARIOS = {(1024, 1024), (1024, 8192), (8192, 1024)}  # (isl, osl)

CONFIG = "config"  # the checkpoint's quantization_config decides (fp8 block scales, MXFP4 experts)
MODELS = {  # Hugging Face id in the file -> (shipped llmsim model, forced weight/activation dtype, None or CONFIG)
    "meta-llama/Llama-3.1-8B-Instruct": ("llama-3.1-8b", None),
    "nvidia/Llama-3.1-8B-Instruct-FP8": ("llama-3.1-8b", "fp8"),
    "meta-llama/Llama-3.1-70B": ("llama-3.1-70b", None),
    "Qwen/Qwen3-32B": ("qwen3-32b", None),
    "deepseek-ai/DeepSeek-V3": ("deepseek-v3", CONFIG),
    "deepseek-ai/DeepSeek-R1": ("deepseek-v3", CONFIG),  # the same architecture, config and fp8 checkpoint as V3
    "Qwen/Qwen3-235B-A22B-FP8": ("qwen3-235b-a22b-fp8", CONFIG),
    "openai/gpt-oss-120b": ("gpt-oss-120b", CONFIG),  # MXFP4 experts (the file labels them nvfp4)
    "MiniMaxAI/MiniMax-M2.5": ("minimax-m2.5", CONFIG),  # fp8 128x128 blocks
    "Qwen/Qwen3.5-397B-A17B": ("qwen3.5-397b-a17b", None),  # bf16; the language model (vision not costed)
    "moonshotai/Kimi-K2.5": ("kimi-k2.5", CONFIG),  # int4 experts (w4a16); the language model (vision not costed)
    "nvidia/DeepSeek-V3.1-NVFP4": ("deepseek-v3.1-nvfp4", CONFIG),  # ModelOpt NVFP4 (hf_quant_config)
    "nvidia/Qwen3-32B-NVFP4": ("qwen3-32b-nvfp4", CONFIG),  # ModelOpt NVFP4 (hf_quant_config)
}
# assumption: a row of one of these models with gemm_quant_mode nvfp4 ran NVIDIA's ModelOpt NVFP4 checkpoint of it (the
# file names the base model only; these are the NVFP4 checkpoints aiconfigurator-core ships configs of)
# approximation: DeepSeek-V3 and R1 nvfp4 runs are costed as NVIDIA's NVFP4 checkpoint of DeepSeek-V3.1, the
# same architecture: its exclusion list (the MLA low-rank projections and the LM head in 16 bits, o_proj, dense
# and expert MLPs in nvfp4) stands in for the V3/R1 FP4 checkpoints', which are not public as files
NVFP4_CHECKPOINTS = {"MiniMaxAI/MiniMax-M2.5": "minimax-m2.5-nvfp4",
                     "Qwen/Qwen3.5-397B-A17B": "qwen3.5-397b-a17b-nvfp4", "moonshotai/Kimi-K2.5": "kimi-k2.5-nvfp4",
                     "deepseek-ai/DeepSeek-V3": "deepseek-v3.1-nvfp4", "deepseek-ai/DeepSeek-R1": "deepseek-v3.1-nvfp4"}
# gemm_quant_mode -> llmsim dtype (None: the model's); approximation: nvfp4 (a ModelOpt W4A4 checkpoint of a
# 16-bit model) is costed with every weight in nvfp4, the LM head too, which those checkpoints keep in 16 bits
PRECISIONS = {"": None, "bf16": "bf16", "fp8": "fp8", "nvfp4": "nvfp4"}
# approximation: an fp8_block run of a 16-bit checkpoint is costed as that checkpoint quantized the way the
# block-fp8 checkpoints of these families are (Qwen3-235B-A22B-FP8's quantization_config: e4m3 weights in
# 128 x 128 blocks, activations quantized per call in groups of 128, the LM head in 16 bits). A run that labels
# its dense GEMMs fp8 and its experts fp8_block is costed as block fp8 throughout, as those checkpoints are. The
# MoE routers, which they keep in 16 bits, are costed in fp8 here (under 0.1 % of the weights).
BLOCK_FP8 = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128],
             "modules_to_not_convert": ["lm_head"]}


@dataclass
class ServingComparison:
    """Compared rows (with predictions) and skipped rows (with reasons)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def repeats(self) -> list[dict[str, Any]]:
        """Each row whose configuration (`point`: measured_point) the file measured more than once, on another day or
        engine version: that row's TTFT and TPOT "predicted" by the mean of the point's other measurements, as % of
        its own (`ttft_repeat_pct`, `tpot_repeat_pct`: 100 x (mean of the others - this one) / this one, the sign
        and scale of llmsim's error_pct), with llmsim's error on the row and whether llmsim's prediction lies within
        the point's measured range (`ttft_within`, `tpot_within`). The spread of the measurements is the accuracy a
        predictor given only the file's columns could reach there (repeat_summary)."""
        points: dict[str, list[dict[str, Any]]] = {}
        for row in self.rows:
            points.setdefault(row["point"], []).append(row)
        out = []
        for rows in points.values():
            if len(rows) < 2:
                continue
            measured = {m: np.array([r[f"measured_{m}_ms"] for r in rows]) for m in ("ttft", "tpot")}  # [repeats]
            for i, row in enumerate(rows):
                entry: dict[str, Any] = {k: row[k] for k in ("id", "engine", "system", "mode", "point")}
                for m, values in measured.items():
                    own, others = values[i], np.delete(values, i).mean()  # shape: [repeats - 1] -> scalar
                    entry[f"{m}_repeat_pct"] = float(100 * (others - own) / own)
                    entry[f"{m}_error_pct"] = row[f"{m}_error_pct"]
                    entry[f"{m}_within"] = bool(values.min() <= row[f"{m}_ms"] <= values.max())
                out.append(entry)
        return out

    def errors(self, metric: str, group: tuple[str, ...] = ()) -> dict[tuple, np.ndarray]:
        """Signed % errors of `metric` ("ttft" or "tpot") grouped by the given row keys."""
        out: dict[tuple, list[float]] = {}
        for row in self.rows:
            key = tuple(row[g] for g in group)
            out.setdefault(key, []).append(row[f"{metric}_error_pct"])
        return {k: np.asarray(v) for k, v in out.items()}


def repeat_summary(entries: list[dict[str, Any]], group: tuple[str, ...] = ("engine", "system", "mode")
                   ) -> dict[tuple, dict[str, float]]:
    """ServingComparison.repeats() summed up per group: rows, points, and for TTFT and TPOT the median |%| of a
    repeat against the mean of its point's others (`{m}_repeat`), llmsim's median |error %| on the same rows
    (`{m}_llmsim`) and the % of those rows whose prediction lies within the point's measured range
    (`{m}_within`)."""
    grouped: dict[tuple, list[dict[str, Any]]] = {}
    for e in entries:
        grouped.setdefault(tuple(e[g] for g in group), []).append(e)
    out = {}
    for key, rows in grouped.items():
        stats: dict[str, float] = {"rows": len(rows), "points": len({e["point"] for e in rows})}
        for m in ("ttft", "tpot"):
            stats[f"{m}_repeat"] = float(np.median([abs(e[f"{m}_repeat_pct"]) for e in rows]))
            stats[f"{m}_llmsim"] = float(np.median([abs(e[f"{m}_error_pct"]) for e in rows]))
            stats[f"{m}_within"] = 100.0 * sum(e[f"{m}_within"] for e in rows) / len(rows)
        out[key] = stats
    return out


def default_silicon_csv() -> Path | None:
    """The file inside an installed aiconfigurator-core, if there is one."""
    try:
        import aiconfigurator_core
    except ImportError:
        return None
    path = Path(aiconfigurator_core.__file__).parent / "systems" / "silicon_sample.csv"
    return path if path.is_file() else None


def _gpus_why_not(row: dict[str, str], prefix: str) -> str | None:
    """Why a row's parallel fields (of one phase: prefix "", "prefill_" or "decode_") cannot be simulated."""
    tp, dp = _count(row[f"{prefix}tp_size"]), _ranks(row, prefix)
    moe = [row[f"{prefix}moe_tp_size"], row[f"{prefix}moe_ep_size"]]
    if dp > 1 and all(moe) and _count(moe[0]) * _count(moe[1]) != tp * dp:
        return (f"{prefix}tp_size x attention_dp_size = {tp * dp} GPUs but moe_tp_size x moe_ep_size = "
                f"{_count(moe[0]) * _count(moe[1])}")
    named = re.search(r"_tp(\d+)(?:_0)?_ep(\d+)(?:_0)?_\d+$", row["id"])
    if named and row["mode"] == "agg" and int(named.group(1)) != tp * dp:
        return (f"fields give tp_size x attention_dp_size = {tp * dp} GPUs, the run's name tp{named.group(1)}: "
                "the row contradicts itself")
    if row["mode"] == "agg" and _from_inferencex(row) and row["system"] in SYSTEMS:
        from ..hardware.spec import load_hardware

        hw = load_hardware(SYSTEMS[row["system"]])
        node = int(hw.interconnect_value("gpus_per_node")) if "gpus_per_node" in hw.interconnect else 0
        if node and tp * dp > node:
            return (f"fields give tp_size x attention_dp_size = {tp * dp} GPUs, but InferenceX's aggregated runs are "
                    f"its single-node recipes, on one {node}-GPU node of {row['system']} (moe_tp_size x "
                    "moe_ep_size written as tp_size): the row contradicts itself")
    return None


def _why_not(row: dict[str, str]) -> str | None:
    if row["mode"] not in ("agg", "disagg"):
        return f"mode {row['mode']} is not simulated"
    if _concurrency(row) is None:
        return "concurrency not stated"
    if (row["backend"], row["model_path"], row["system"]) == ("vllm", "openai/gpt-oss-120b", "h100_sxm") and \
            _from_inferencex(row) and _measured_on(row) in ("2025-12-05", "2025-12-08"):
        return ("InferenceX's gpt-oss H100 recipe then sent --max-concurrency 512 to a server launched with "
                "--max-num-seqs $CONC (d22bf9ca9, fixed by 4e135fd3f on 2025-12-08): the server's limit, which decided "
                "the run, is not in the row")
    if row["mode"] == "disagg" and not (row["prefill_num_workers"] and row["decode_num_workers"]):
        return "disaggregated run without its prefill and decode worker counts"
    not_one_replica = inferencex_gb200_disaggregated(row) or inferencex_mtp_only(row)
    if not_one_replica is not None:
        return not_one_replica
    if row["model_path"] not in MODELS:
        return f"model {row['model_path']} is not shipped"
    if row["system"] not in SYSTEMS:
        return f"system {row['system']} has no hardware file"
    model, forced = _model_of(row)
    if forced == CONFIG:
        native = ("nvfp4",) if model.endswith("-nvfp4") else {  # the shipped NVIDIA NVFP4 checkpoints
            "openai/gpt-oss-120b": ("nvfp4",), "moonshotai/Kimi-K2.5": ("int4_wo",)}.get(
            row["model_path"], ("fp8", "fp8_block"))
        if row["gemm_quant_mode"] not in native:
            return f"gemm_quant_mode {row['gemm_quant_mode']} is not the checkpoint's own format"
    elif row["gemm_quant_mode"] == "fp8_block" or row["moe_quant_mode"] == "fp8_block":
        if {row["gemm_quant_mode"], row["moe_quant_mode"]} - {"fp8_block", "fp8", ""}:
            return (f"gemm_quant_mode {row['gemm_quant_mode']} with moe_quant_mode {row['moe_quant_mode']} is not "
                    "priced yet")
    elif row["gemm_quant_mode"] not in PRECISIONS:
        return f"gemm_quant_mode {row['gemm_quant_mode']} is not priced yet"
    elif row["moe_quant_mode"] not in PRECISIONS:
        return f"moe_quant_mode {row['moe_quant_mode']} is not priced yet"
    for prefix in ("", "prefill_", "decode_") if row["mode"] == "disagg" else ("",):
        if row.get(f"{prefix}tp_size"):
            reason = _gpus_why_not(row, prefix)
            if reason is not None:
                return reason
    for prefix in ("", "prefill_", "decode_"):
        if not _is_one(row.get(f"{prefix}pp_size", "")):
            return f"{prefix}pp_size {row[prefix + 'pp_size']}"
    return None


def _model_of(row: dict[str, str]) -> tuple[str, str | None]:
    """(shipped model, forced dtype or CONFIG) of a row of a shipped model."""
    if row["gemm_quant_mode"] == "nvfp4" and row["model_path"] in NVFP4_CHECKPOINTS:
        return NVFP4_CHECKPOINTS[row["model_path"]], CONFIG
    return MODELS[row["model_path"]]


def _shipped_config(name: str) -> dict[str, Any]:
    """The shipped config.json of a model, as a dict."""
    import json

    from ..shipped import model_configs_dir

    return dict(json.loads((model_configs_dir() / f"{name}.json").read_text()))


def client_protocol(row: dict[str, str]) -> dict[str, Any]:
    """The load a row's benchmark client sent: serve()'s prompt_len, gen_len and num_requests, and the protocol's
    name ("inferencex" or "fixed"; module docstring)."""
    isl, osl, concurrency = int(row["isl"]), int(row["osl"]), _concurrency(row)
    assert concurrency is not None  # _why_not refused the row otherwise
    inferencex = _from_inferencex(row) and (isl, osl) in INFERENCEX_SCENARIOS
    if inferencex:
        # uniform integers int(r * L)..L, as bench_serving's np.random.randint(int(L * r), L + 1) draws them
        return {"protocol": "inferencex",
                "prompt_len": f"uniform:{int(isl * INFERENCEX_RANGE_RATIO)}:{isl}",
                "gen_len": f"uniform:{int(osl * INFERENCEX_RANGE_RATIO)}:{osl}",
                "num_requests": INFERENCEX_PROMPTS_PER_CLIENT * concurrency}
    return {"protocol": "fixed", "prompt_len": isl, "gen_len": osl, "num_requests": REQUESTS_PER_CLIENT * concurrency}


def simulate_row(row: dict[str, str]) -> dict[str, Any]:
    """The prediction for one measured row (mean TTFT and TPOT in ms)."""
    from ..serving.serve import serve

    model, forced = _model_of(row)
    block_fp8 = forced != CONFIG and "fp8_block" in (row["gemm_quant_mode"], row["moe_quant_mode"])
    dtype = None if forced == CONFIG or block_fp8 else forced or PRECISIONS[row["gemm_quant_mode"]]
    options: dict[str, Any] = {}
    spec: Any = model  # the shipped name, or (block fp8) its config with BLOCK_FP8 as its quantization_config
    if block_fp8:
        spec = {**_shipped_config(model), "quantization_config": BLOCK_FP8}
        options["kv_dtype"] = "bf16"
    if dtype is not None:
        options.update(weight_dtype=dtype, activation_dtype=dtype)
        if dtype != "bf16":
            options["kv_dtype"] = "bf16"  # approximation: the KV cache at the checkpoint's 16-bit dtype
    kv_dtype = inferencex_kv_dtype(row) or sglang_disagg_kv_dtype(row) or trtllm_disagg_kv_dtype(row)
    if kv_dtype is not None:
        options["kv_dtype"] = kv_dtype
    concurrency = _concurrency(row)
    client = client_protocol(row)
    load = dict(engine=row["backend"], concurrency=concurrency, prompt_len=client["prompt_len"],
                gen_len=client["gen_len"], num_requests=client["num_requests"])
    recv_interval = inferencex_recv_interval(row)
    # knobs the row's InferenceX recipe or aiconfigurator's generated deployment set beyond the engine's defaults
    recipe: dict[str, Any] = aiconfigurator_engine_options(row)
    options.update(recipe)
    if row["mode"] == "disagg":
        from ..serving.disaggregated import serve_disaggregated

        pools = {phase: {"replicas": _count(row[f"{phase}_num_workers"]),
                         "tensor_parallel": _count(row[f"{phase}_tp_size"]) * _ranks(row, f"{phase}_"),
                         "expert_parallel": _count(row[f"{phase}_moe_ep_size"]),
                         "attention_data_parallel": _ranks(row, f"{phase}_")}
                 for phase in ("prefill", "decode")}
        for phase, knobs in {**sglang_disagg_pools(row), **trtllm_disagg_pools(row),
                             **aiconfigurator_disagg_pools(row)}.items():
            # the run's srt-slurm recipe or aiconfigurator's generated deployment, where it is known
            pools[phase].update(knobs)
            recipe.update({f"{phase}.{k}": v for k, v in knobs.items()})
        tp = pools["decode"]["tensor_parallel"]
        dp = max(pool["attention_data_parallel"] for pool in pools.values())  # either pool's ranks
        r = serve_disaggregated(spec, SYSTEMS[row["system"]], pools["prefill"], pools["decode"], **load, **options)
    else:
        dp = _ranks(row, "")
        tp = _count(row["tp_size"]) * dp  # the replica's GPUs
        ep = _count(row["moe_ep_size"])
        if ep > 1:
            options["expert_parallel"] = ep
        if dp > 1:
            options["attention_data_parallel"] = dp
        if recv_interval > 1:
            options["scheduler_recv_interval"] = recv_interval
        batching = {**inferencex_trtllm_options(row), **inferencex_vllm_options(row), **inferencex_sglang_options(row),
                    **aiconfigurator_agg_options(row, SYSTEMS[row["system"]], tp)}
        options.update(batching)
        recipe.update(batching)
        dp = options.get("attention_data_parallel", dp)
        r = serve(spec, SYSTEMS[row["system"]], tensor_parallel=tp, **load, **options)
    ttft, tpot = r.ttft_s.mean * 1e3, r.tpot_s.mean * 1e3
    measured_ttft, measured_tpot = float(row["silicon_ttft_ms"]), float(row["silicon_tpot_ms"])
    return {"id": row["id"], "point": measured_point(row), "model": model, "system": row["system"],
            "engine": row["backend"], "mode": row["mode"],
            "precision": "config" if forced == CONFIG else "fp8_block" if block_fp8 else dtype or "bf16", "tp": tp,
            "attention_dp": dp, "concurrency": concurrency, "protocol": client["protocol"],
            "recv_interval": recv_interval, "kv_dtype": options.get("kv_dtype"),
            "recipe_options": sorted(recipe),
            "isl": int(row["isl"]),
            "osl": int(row["osl"]), "ttft_ms": ttft, "tpot_ms": tpot, "measured_ttft_ms": measured_ttft,
            "measured_tpot_ms": measured_tpot,
            "ttft_error_pct": 100 * (ttft - measured_ttft) / measured_ttft,
            "tpot_error_pct": 100 * (tpot - measured_tpot) / measured_tpot}


def _simulated_or_refused(row: dict[str, str]) -> dict[str, Any] | str:
    """simulate_row's prediction, or the one-line reason llmsim refused the row."""
    from ..errors import LlmsimError

    try:
        return simulate_row(row)
    except LlmsimError as exc:
        return f"refused: {exc}"


_PARALLEL_FIELDS = ("tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")


def measured_point(row: dict[str, str]) -> str:
    """The configuration a row measured, without its day or engine version: engine, system, mode, the shipped
    model, the precision fields, the lengths, the clients and every parallel field (aggregated) or each pool's
    parallel fields and worker count (disaggregated), and the client protocol llmsim runs. Rows of one point are
    repeat measurements of it (InferenceX's DeepSeek-V3 and -R1 names are one shipped model)."""
    if row["mode"] == "disagg":
        parallel = [row[f"{pool}_{f}"] for pool in ("prefill", "decode") for f in (*_PARALLEL_FIELDS, "num_workers")]
    else:
        parallel = [row[f] for f in _PARALLEL_FIELDS]
    fields = [row["backend"], row["system"], row["mode"], _model_of(row)[0], row["gemm_quant_mode"],
              row["moe_quant_mode"], row["isl"], row["osl"], _concurrency(row), *parallel,
              client_protocol(row)["protocol"]]
    return "|".join(str(f) for f in fields)


def _measurement(row: dict[str, str]) -> tuple[str | int | None, ...]:
    """What identifies one measured run: engine, system, mode, lengths, clients, the day it was measured and its
    measured TTFT and TPOT (to 9 significant digits: the file writes one float two ways, 195.1787801983301 and
    195.17878019833006)."""
    return (row["backend"], row["system"], row["mode"], row["isl"], row["osl"], _concurrency(row), _measured_on(row),
            f"{float(row['silicon_ttft_ms']):.9g}", f"{float(row['silicon_tpot_ms']):.9g}")


def _rounded_measurement(row: dict[str, str]) -> tuple[str | int | None, ...] | None:
    """One run as a copy written to 0.01 ms shows it: engine, system, mode, lengths, clients, TTFT and TPOT (None
    where either time is missing, not a number or not finite: such a row matches nothing)."""
    try:
        ttft, tpot = float(row["silicon_ttft_ms"]), float(row["silicon_tpot_ms"])
    except (KeyError, ValueError):
        return None
    if not (math.isfinite(ttft) and math.isfinite(tpot)):
        return None
    return (row["backend"], row["system"], row["mode"], row["isl"], row["osl"], _concurrency(row),
            f"{ttft:.2f}", f"{tpot:.2f}")


def inferencex_copies(rows: list[dict[str, str]]) -> dict[str, str]:
    """Rows that are InferenceX runs under another source, each with the id of the InferenceX row it copies.

    aiconfigurator's `kimi-k2.5-gap-analysis.csv` and `qwen3.5-397b-gap-analysis.csv` rows (123) repeat InferenceX
    runs: each one's TTFT and TPOT equal, to the 0.01 ms they are written with, those of an InferenceX row of the
    same engine, system, mode, lengths and clients (134.73 against 134.73297602613457 ms). No other non-InferenceX
    row matches one. Such a row is the InferenceX run (its client, its recipe) and is counted once, under it."""
    first: dict[tuple[str | int | None, ...], str] = {}
    for row in rows:
        key = _rounded_measurement(row) if _from_inferencex(row) else None
        if key is not None:
            first.setdefault(key, row["id"])
    copies = {}
    for row in rows:
        key = None if _from_inferencex(row) else _rounded_measurement(row)
        twin = None if key is None else first.get(key)
        if twin is not None:
            copies[row["id"]] = twin
    return copies


def compare_serving(csv_path: Path, limit: int | None = None, executor: Any = None) -> ServingComparison:
    """Simulate every row llmsim can run (the first `limit` of them when given); `executor` (any
    concurrent.futures.Executor) spreads the rows over its workers, in the file's order all the same. A measured
    run the file holds more than once (InferenceX's runs come both from its database dump and from its dated CSVs,
    under other ids and model names, and some again in aiconfigurator's gap-analysis files: inferencex_copies) is
    simulated and counted once, under its first InferenceX row."""
    result = ServingComparison()
    runnable: list[dict[str, str]] = []
    first_of: dict[tuple[str | int | None, ...], str] = {}
    with Path(csv_path).open(newline="") as f:
        every_row = list(csv.DictReader(f))
    copies = inferencex_copies(every_row)
    for row in every_row:
        reason = (f"the same measurement as InferenceX row {copies[row['id']]} (to 0.01 ms): counted once"
                  if row["id"] in copies else _why_not(row))
        if reason is None:
            first = first_of.setdefault(_measurement(row), row["id"])
            if first != row["id"]:
                reason = f"the same measurement as row {first}: counted once"
        if reason is None and limit is not None and len(runnable) >= limit:
            reason = "beyond the limit asked for"
        if reason is not None:
            result.skipped.append((row["id"], reason))
        else:
            runnable.append(row)
    outcomes = executor.map(_simulated_or_refused, runnable, chunksize=4) if executor is not None else map(
        _simulated_or_refused, runnable)
    for row, outcome in zip(runnable, outcomes):
        if isinstance(outcome, str):
            result.skipped.append((row["id"], outcome))
        else:
            result.rows.append(outcome)
    return result
