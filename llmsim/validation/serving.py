"""serve() against measured serving runs: aiconfigurator-core's systems/silicon_sample.csv.

Each row is one engine (vLLM, SGLang, TensorRT-LLM) serving fixed-length requests (isl in, osl out) at a
fixed concurrency on one GPU type, with its mean TTFT and TPOT. The rows llmsim can run (a shipped
model, a shipped device, a precision llmsim prices) are simulated with the shipped files and the engine's
defaults: aggregated rows with `serve`, disaggregated rows with `serve_disaggregated` (prefill and decode
pools of the row's worker counts, tensor, attention data and expert parallel sizes); the others are listed
with the reason. Nothing is fitted to these rows: they are validation data only.

Attention data parallelism (attention_dp_size d > 1) is read as aiconfigurator-core reads it (sdk/config.py,
backends/base_backend.py): a replica of tp_size x d GPUs (= moe_tp_size x moe_ep_size), d ranks of tp_size
GPUs each, batch_size clients per rank; simulated as serve(tensor_parallel=tp_size x d,
attention_data_parallel=d, expert_parallel=moe_ep_size) with the run's client count (silicon_concurrency=).
A row whose name states its launch (`..._tp{T}_ep{E}_{n}`, the replica's T GPUs) but whose fields give
another GPU count is skipped as contradicting itself (the file holds the same measurement under both
encodings; which one is right is not stated, so neither is guessed).

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
approximation: for the other rows (aiconfigurator's own gap-analysis runs) the number of requests each run
sent is not in the file; they are simulated with fixed lengths (isl, osl) and REQUESTS_PER_CLIENT requests per
client (closed loop), the first ones all arriving together.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..engines.aiconfigurator import SYSTEMS  # the file's system names -> llmsim hardware files

REQUESTS_PER_CLIENT = 5
INFERENCEX_RANGE_RATIO = 0.8  # every InferenceX recipe that sets RANDOM_RANGE_RATIO sets 0.8
INFERENCEX_PROMPTS_PER_CLIENT = 10  # --num-prompts $((CONC * 10))
INFERENCEX_SCENARIOS = {(1024, 1024), (1024, 8192), (8192, 1024)}  # (isl, osl)
_INFERENCEX_SOURCE = re.compile(r"db-dump/|source_file=\d{4}-\d\d-\d\d\.csv; model=")

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

    def errors(self, metric: str, group: tuple[str, ...] = ()) -> dict[tuple, np.ndarray]:
        """Signed % errors of `metric` ("ttft" or "tpot") grouped by the given row keys."""
        out: dict[tuple, list[float]] = {}
        for row in self.rows:
            key = tuple(row[g] for g in group)
            out.setdefault(key, []).append(row[f"{metric}_error_pct"])
        return {k: np.asarray(v) for k, v in out.items()}


def default_silicon_csv() -> Path | None:
    """The file inside an installed aiconfigurator-core, if there is one."""
    try:
        import aiconfigurator_core
    except ImportError:
        return None
    path = Path(aiconfigurator_core.__file__).parent / "systems" / "silicon_sample.csv"
    return path if path.is_file() else None


def _is_one(value: str) -> bool:
    return value in ("", "0.0", "1.0", "0", "1")


def _count(value: str) -> int:
    return int(float(value or 1))


def _concurrency(row: dict[str, str]) -> int | None:
    """The run's client count: the aggregated rows' batch_size, else the source's `silicon_concurrency=`; with
    attention data parallelism (batch_size: per rank) the source's count, else batch_size x attention_dp_size."""
    found = re.search(r"silicon_concurrency=(\d+)", row.get("silicon_data_source", ""))
    if row["batch_size"] and _ranks(row, "") > 1:
        return int(found.group(1)) if found else _count(row["batch_size"]) * _ranks(row, "")
    if row["batch_size"]:
        return _count(row["batch_size"])
    return int(found.group(1)) if found else None


def _ranks(row: dict[str, str], prefix: str) -> int:
    """The attention data-parallel ranks of one phase (prefix "", "prefill_" or "decode_"): 1 where the field
    is empty, 0 or 1."""
    value = row.get(f"{prefix}attention_dp_size", "")
    return 1 if _is_one(value) else _count(value)


def _gpus_why_not(row: dict[str, str], prefix: str) -> str | None:
    """Why a row's parallel fields (of one phase: prefix "", "prefill_" or "decode_") cannot be simulated."""
    tp, dp = _count(row[f"{prefix}tp_size"]), _ranks(row, prefix)
    moe = [row[f"{prefix}moe_tp_size"], row[f"{prefix}moe_ep_size"]]
    if dp > 1 and all(moe) and _count(moe[0]) * _count(moe[1]) != tp * dp:
        return (f"{prefix}tp_size x attention_dp_size = {tp * dp} GPUs but moe_tp_size x moe_ep_size = "
                f"{_count(moe[0]) * _count(moe[1])}")
    named = re.search(r"_tp(\d+)(?:_0)?_ep(\d+)(?:_0)?_\d+$", row["id"])
    if dp > 1 and named and row["mode"] == "agg" and int(named.group(1)) != tp * dp:
        return (f"fields give tp_size x attention_dp_size = {tp * dp} GPUs, the run's name tp{named.group(1)}: "
                "the row contradicts itself")
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
        if not _is_one(row.get(f"{prefix}attention_dp_size", "")):
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


def _from_inferencex(row: dict[str, str]) -> bool:
    """Whether a row is an InferenceX run (its source: module docstring)."""
    return bool(_INFERENCEX_SOURCE.match(row.get("silicon_data_source", "")))


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


def _measured_on(row: dict[str, str]) -> str:
    """The date a row was measured (YYYY-MM-DD), from its source: db-dump's `measured=`, or the dated CSV it came
    from; "" where neither is stated."""
    source = row.get("silicon_data_source", "")
    found = re.search(r"measured=(\d{4}-\d\d-\d\d)", source) or re.search(r"source_file=(\d{4}-\d\d-\d\d)\.csv", source)
    return found.group(1) if found else ""


def inferencex_recv_interval(row: dict[str, str]) -> int:
    """SGLang's --scheduler-recv-interval in the InferenceX recipe that ran an aggregated SGLang row on B200 or B300,
    as the recipe stood when the row was measured (SemiAnalysisAI/InferenceX, benchmarks/single_node/[fixed_seq_len/]
    *.sh; git history): the scheduler takes new requests in after every N decode steps (serve's
    scheduler_recv_interval). 1 (SGLang's default) for every other row.
    - dsr1_fp8_b200 / dsr1_fp4_b200 (since 6be2c6997, 2025-09-23), dsr1_{fp8,fp4}_b300 (since 435ba1219, 2026-02-25):
      30 at CONC >= 16, else 10; dsr1_fp8 at TP 4: 10.
    - qwen3.5_bf16_b200 (20edd7f34, 2026-02-18), qwen3.5_bf16_b300 (32274d6c1, 2026-04-17), qwen3.5_fp4_b200
      (e1e8cb214, 2026-03-29, until 9189c1884 on 2026-05-01), qwen3.5_fp4_b300 (01f98ead1, 2026-04-17): the same
      30 at CONC >= 16, else 10.
    - qwen3.5_fp8_b200: 30 at CONC >= 16, else 10 (87b5ee212, 2026-02-25); 10 from 92985b879 (2026-04-13); 30 at
      CONC > 16 from 646261434 (2026-04-27); 30 at CONC > 4 from 8beecaf04 (2026-04-28). qwen3.5_fp8_b300: 10
      (c0f62a2ef, 2026-04-17).
    approximation: the file names the model, system and precision, not the recipe; the recipe of that model,
    system and precision is taken to be the one that ran it, and a row's date (its `measured=` or its CSV's) to
    be when."""
    if row["backend"] != "sglang" or row["mode"] != "agg" or row["system"] not in ("b200_sxm", "b300_sxm"):
        return 1
    if not _from_inferencex(row):
        return 1
    clients = _concurrency(row) or 1
    usual = 30 if clients >= 16 else 10
    name, precision = row["model_path"], row["gemm_quant_mode"] or "bfloat16"
    if name in ("deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3"):
        return 10 if precision == "fp8" and _count(row["tp_size"]) == 4 else usual
    if name != "Qwen/Qwen3.5-397B-A17B":
        return 1
    if precision != "fp8":
        return usual
    if row["system"] == "b300_sxm":
        return 10
    day = _measured_on(row)
    if day >= "2026-04-28":
        return 30 if clients > 4 else 10
    if day >= "2026-04-27":
        return 30 if clients > 16 else 10
    return 10 if day >= "2026-04-13" else usual


_DEEPSEEK = ("deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3")
_MINIMAX = ("MiniMaxAI/MiniMax-M2.5",)
# (engine, models, systems, row precisions, first day): InferenceX single-node recipes that launch the engine with an
# fp8 KV cache (SGLang --kv-cache-dtype fp8_e4m3, vLLM --kv-cache-dtype fp8, TensorRT-LLM kv_cache_config: dtype:
# fp8), with the commit that added it where the rows span it (inferencex_kv_dtype)
_FP8_KV_RECIPES: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...], str], ...] = (
    ("sglang", _DEEPSEEK, ("b200_sxm", "b300_sxm"), ("fp8", "fp4"), ""),  # dsr1_{fp8,fp4}_{b200,b300}
    ("sglang", ("Qwen/Qwen3.5-397B-A17B",), ("b200_sxm", "b300_sxm", "h200_sxm"), ("fp8", "fp4"), ""),
    ("trtllm", _DEEPSEEK, ("b200_sxm", "h200_sxm"), ("fp8", "fp4"), ""),  # dsr1_*_trt
    ("trtllm", ("meta-llama/Llama-3.1-70B",), ("b200_sxm", "h200_sxm"), ("fp8", "fp4"), ""),  # 70b_*_trt
    ("trtllm", ("openai/gpt-oss-120b",), ("b200_sxm",), ("fp4",), "2025-10-20"),  # ac1998a50
    ("vllm", ("meta-llama/Llama-3.1-70B",), ("b200_sxm", "h200_sxm", "h100_sxm"), ("fp8", "fp4"), "2025-09-23"),
    ("vllm", ("openai/gpt-oss-120b",), ("b200_sxm",), ("fp4",), "2025-12-05"),  # 25506e87c (v0.11.2)
    ("vllm", _MINIMAX, ("b200_sxm",), ("fp8",), "2026-04-03"),  # bddbf4031 (v0.19.0)
    ("vllm", _MINIMAX, ("b200_sxm",), ("fp4",), ""),  # minimaxm2.5_fp4_b200 (79bd988e9) from its first version
    ("vllm", _MINIMAX, ("b300_sxm",), ("fp8", "fp4"), ""),  # minimaxm2.5_{fp8,fp4}_b300
    ("vllm", ("moonshotai/Kimi-K2.5",), ("b200_sxm",), ("fp4",), "2026-04-20"),  # 6c3acebfa
)


def inferencex_kv_dtype(row: dict[str, str]) -> str | None:
    """The KV-cache dtype InferenceX's recipe launched an aggregated row's engine with, as the recipe stood when the
    row was measured: "fp8", or None where the recipe left it to the engine (the checkpoint's 16-bit dtype)
    (SemiAnalysisAI/InferenceX benchmarks/[single_node/[fixed_seq_len/]]*.sh and their git history).
    - fp8 throughout the rows' dates: SGLang DeepSeek-R1 fp8/fp4 on B200 and B300, Qwen3.5-397B fp8/fp4 on B200, B300
      and H200; TensorRT-LLM DeepSeek-R1 on B200 and H200, Llama-3.3-70B on B200 and H200; vLLM MiniMax-M2.5 fp4 on
      B200, fp8/fp4 on B300.
    - from a commit: TensorRT-LLM gpt-oss-120b B200 (ac1998a50, 2025-10-20); vLLM Llama-3.3-70B on B200, H200 and
      H100 (by 2025-09-23), gpt-oss-120b B200 (25506e87c, 2025-12-05), MiniMax-M2.5 fp8 B200 (bddbf4031,
      2026-04-03, with the v0.19.0 image its rows of that day name), Kimi-K2.5 fp4 B200 (6c3acebfa, 2026-04-20).
    - never in the rows' span: SGLang DeepSeek-R1 H200, Qwen3.5 bf16; vLLM gpt-oss-120b H100/H200, MiniMax-M2.5
      H100/H200 (fp8 from 8014ee637, 2026-05-26), Kimi-K2.5 int4 and fp4 B300; TensorRT-LLM gpt-oss-120b H200.
    Disaggregated rows (NVIDIA/srt-slurm recipes) and the GB200 aggregated ones keep None.
    approximation: as inferencex_recv_interval, the recipe of the row's model, system and precision is taken to
    be the one that ran it, on the row's date (a run on the day a change landed is taken to have it)."""
    if row["mode"] != "agg" or not _from_inferencex(row):
        return None
    day = _measured_on(row)
    for engine, models, systems, precisions, since in _FP8_KV_RECIPES:
        if (row["backend"] == engine and row["model_path"] in models and row["system"] in systems
                and row["precision"] in precisions and day >= since):
            return "fp8"
    return None


def inferencex_vllm_options(row: dict[str, str]) -> dict[str, Any]:
    """serve() knobs from the InferenceX recipe that launched an aggregated vLLM row's server, where it set more than
    the engine's defaults that llmsim models, as the recipe stood when the row was measured (SemiAnalysisAI/
    InferenceX benchmarks/[single_node/]*.sh, git history); {} for every other row.
    - `--max-num-batched-tokens $((ISL * 2))` (2048 at 1k prompts, 16384 at 8k): MiniMax-M2.5 fp8 on B200 from
      2026-04-03 (bddbf4031), fp4 on B200 from 2026-04-08 (79bd988e9), fp8 and fp4 on B300 from 2026-04-17
      (340d7854c, 22d0f12f7); Kimi-K2.5 fp4 on B200 from 2026-04-20 (6c3acebfa).
    - Llama-3.3-70B on B200 (benchmarks/70b_{fp8,fp4}_b200_docker.sh, from 27f29acbe, 2025-09-21): `"cudagraph_mode":
      "FULL_DECODE_ONLY"`: prefill and mixed passes run without CUDA graphs (prefill_graph_tokens=0).
    - MiniMax-M2.5 fp8 on B200 (f342df18e, 2026-03-11; 0f78cf4eb, 2026-03-28) and H200 (1d5cae141, 2026-03-27;
      2026-03-28): `if [ "$EP_SIZE" -ge 1 ]; then EP=" --enable-expert-parallel"`, always true, so experts ran
      expert-parallel over the TP GPUs where the file's columns say EP 1; Kimi-K2.5 fp4 on B200 on 2026-03-11
      (a58dedd5a): its recipe passed no expert-parallel flag where the file says EP 4 (its config's EP was
      corrected in 2cbaec340, 2026-04-14).
    approximation: as inferencex_recv_interval, the recipe of the row's model, system and precision is taken to
    be the one that ran it, on the row's date."""
    if row["backend"] != "vllm" or row["mode"] != "agg" or not _from_inferencex(row):
        return {}
    day, system, precision, model = _measured_on(row), row["system"], row["precision"], row["model_path"]
    options: dict[str, Any] = {}
    budget_from = {("MiniMaxAI/MiniMax-M2.5", "b200_sxm", "fp8"): "2026-04-03",
                   ("MiniMaxAI/MiniMax-M2.5", "b200_sxm", "fp4"): "2026-04-08",
                   ("MiniMaxAI/MiniMax-M2.5", "b300_sxm", "fp8"): "2026-04-17",
                   ("MiniMaxAI/MiniMax-M2.5", "b300_sxm", "fp4"): "2026-04-17",
                   ("moonshotai/Kimi-K2.5", "b200_sxm", "fp4"): "2026-04-20"}.get((model, system, precision))
    if budget_from is not None and day >= budget_from:
        options["max_num_batched_tokens"] = 2 * int(row["isl"])
    if model == "meta-llama/Llama-3.1-70B" and system == "b200_sxm" and "2025-09-21" <= day <= "2025-10-31":
        options["prefill_graph_tokens"] = 0
    if model == "MiniMaxAI/MiniMax-M2.5" and precision == "fp8" and _ranks(row, "") == 1 and (
            (system == "b200_sxm" and day in ("2026-03-11", "2026-03-28"))
            or (system == "h200_sxm" and day in ("2026-03-27", "2026-03-28"))):
        options["expert_parallel"] = _count(row["tp_size"])
    if model == "moonshotai/Kimi-K2.5" and system == "b200_sxm" and precision == "fp4" and day == "2026-03-11":
        options["expert_parallel"] = 1
    return options


def inferencex_sglang_options(row: dict[str, str]) -> dict[str, Any]:
    """SGLang's `--chunked-prefill-size` (max_num_batched_tokens) and `--max-running-requests` (max_num_seqs, where
    it is a number rather than the run's CONC) in the InferenceX recipe that launched an aggregated SGLang row without
    attention data parallelism, as the recipe stood when the row was measured (SemiAnalysisAI/InferenceX
    benchmarks/[single_node/]*.sh); {} for every other row:
    - Qwen3.5-397B-A17B on B200 (bf16 9dc87a68c, fp8 efd49e50b / 6a5dad463, fp4 48d35c480) and B300 bf16 / fp4
      (32274d6c1, 8acbd08b7): 32768 and 128; B300 fp8 (c0f62a2ef, 2026-04-17): 16384; H200 fp8 (f65d6b4b1): 16384
      and 128.
    - DeepSeek-R1 fp4 on B200 and B300: 16384 and 256; fp8 on B200 and B300 at TP 8: 32768 and 128, at TP 4: 8192
      and 32 (12ba0ae07, 5b302f147; the nightly 2025 versions alike); fp8 on H200 (2026-03-25): 32768 and 512 at
      1k/1k, else 256.
    approximation: as inferencex_recv_interval; the B300 Qwen3.5 fp8 runs of 2026-04-03 (a script not in the
    repository) keep the defaults, and the DeepSeek-R1 fp8 B200 runs of 2026-03-25, which mixed plain and MTP
    points, take the plain recipe's."""
    if row["backend"] != "sglang" or row["mode"] != "agg" or not _from_inferencex(row) or _ranks(row, "") > 1:
        return {}
    day, system, precision = _measured_on(row), row["system"], row["precision"]
    if row["model_path"] == "Qwen/Qwen3.5-397B-A17B":
        if system == "b300_sxm" and precision == "fp8":
            return {"max_num_batched_tokens": 16384} if day >= "2026-04-17" else {}
        if system == "h200_sxm":
            return {"max_num_batched_tokens": 16384, "max_num_seqs": 128}
        if day == "2026-03-20":  # the MTP recipe (35d4bb367): --max-running-requests $CONC
            return {"max_num_batched_tokens": 32768}
        return {"max_num_batched_tokens": 32768, "max_num_seqs": 128}
    if row["model_path"] not in _DEEPSEEK:
        return {}
    if precision == "fp4":
        return {"max_num_batched_tokens": 16384, "max_num_seqs": 256}
    if system == "h200_sxm":
        return {"max_num_batched_tokens": 32768,
                "max_num_seqs": 512 if (int(row["isl"]), int(row["osl"])) == (1024, 1024) else 256}
    if _count(row["tp_size"]) == 4:
        return {"max_num_batched_tokens": 8192, "max_num_seqs": 32}
    return {"max_num_batched_tokens": 32768, "max_num_seqs": 128}


# the days InferenceX ran its TensorRT-LLM DeepSeek-R1 MTP recipes (inferencex_trtllm_options)
_TRTLLM_DEEPSEEK_MTP_DAYS = ("2026-01-14", "2026-01-28", "2026-02-05", "2026-02-06")


def inferencex_trtllm_options(row: dict[str, str]) -> dict[str, Any]:
    """serve() knobs from the InferenceX recipe that launched an aggregated TensorRT-LLM row's server, where it set
    more than the engine's defaults, as the recipe stood when the row was measured (SemiAnalysisAI/InferenceX, git
    history); {} for every other row.
    - Llama-3.3-70B (benchmarks/70b_{fp8,fp4}_b200_trt_{slurm,docker}.sh, 70b_fp8_h200_trt_slurm.sh, from a267b4bd5
      and 73ef92251, 2025-09-18, until the recipes were removed in b89047d5f, 2025-10-29): `trtllm-serve
      --max_num_tokens 16384`, and at 1k/1k with TP < 8 `batch_wait_max_tokens_ratio: 0.9`,
      `batch_wait_timeout_iters: 20` in its extra LLM API options (max_num_batched_tokens, batch_wait_*).
    - DeepSeek-R1 on B200 and H200 (benchmarks/[single_node/]dsr1_{fp8,fp4}_{b200,h200}_trt[_slurm].sh, e.g.
      e06929c70 for the 2025-11-02 runs): `--max_num_tokens $(( (CONC + ISL + 64 + 63) / 64 * 64 ))`, room for one
      prompt beside the decodes, at least 8192 from 2026-01-21 (64af5a771; ec7bafaae, 6eecc0e66); the fp8 B200
      recipe from ec7bafaae (2026-01-29) adds batch waiting (40 iterations, 0.8) at 1k/1k from 64 clients
      (`DELAY_BATCHING`), without attention data parallelism. The days its MTP recipes ran (2026-01-14 bf3456727,
      2026-02-05 5d517074c, 2026-02-06 0aae52d4c; validation/README.md) and the 2026-01-28 evaluation run, which
      mixed MTP and plain points, keep the defaults: their budget counts the MTP draft tokens llmsim does not run.
    - DeepSeek-R1, the 2025-11-02 runs: the recipes of that day (e06929c70) chose expert parallelism and attention
      data parallelism themselves from ISL, OSL, CONC and TP (`EP_SIZE`, `DP_ATTENTION`), which the file's
      columns do not record (they read EP 1, no attention DP): _dsr1_trt_split.
    - gpt-oss-120b on B200 and H200 (benchmarks/gptoss_fp4_{b200,h200}_trt_slurm.sh, every version in the rows'
      span): `--max_num_tokens 20000`; on 2025-11-02 the H200 recipe (e06929c70) launched `--ep_size=$TP`, which the
      file's columns do not record (EP 1).
    approximation: as inferencex_recv_interval, the recipe of the row's model and system is taken to be the one
    that ran it, on the row's date."""
    if row["backend"] != "trtllm" or row["mode"] != "agg" or not _from_inferencex(row):
        return {}
    day, isl, osl = _measured_on(row), int(row["isl"]), int(row["osl"])
    options: dict[str, Any]
    if row["model_path"] == "meta-llama/Llama-3.1-70B" and "2025-09-18" <= day <= "2025-10-31":
        options = {"max_num_batched_tokens": 16384}
        if (isl, osl) == (1024, 1024) and _count(row["tp_size"]) < 8:
            options.update(batch_wait_timeout_iters=20, batch_wait_max_tokens_ratio=0.9)
        return options
    if row["system"] not in ("b200_sxm", "h200_sxm"):
        return {}
    if row["model_path"] == "openai/gpt-oss-120b":
        options = {"max_num_batched_tokens": 20000}
        if row["system"] == "h200_sxm" and day == "2025-11-02":
            options["expert_parallel"] = _count(row["tp_size"])
        return options
    if row["model_path"] not in _DEEPSEEK:
        return {}
    if not "2025-11-02" <= day <= "2026-02-06" or day in _TRTLLM_DEEPSEEK_MTP_DAYS:
        return {}
    clients = _concurrency(row) or 1
    tokens = (clients + isl + 64 + 63) // 64 * 64
    options = {"max_num_batched_tokens": max(tokens, 8192) if day >= "2026-01-21" else tokens}
    fp8_b200 = row["system"] == "b200_sxm" and row["precision"] == "fp8"
    if fp8_b200 and day >= "2026-01-29" and (isl, osl) == (1024, 1024) and clients >= 64 and _ranks(row, "") == 1:
        options.update(batch_wait_timeout_iters=40, batch_wait_max_tokens_ratio=0.8)
    if day == "2025-11-02":
        options.update(_dsr1_trt_split(row["system"], row["precision"], _count(row["tp_size"]), isl, osl, clients))
    return options


def _dsr1_trt_split(system: str, precision: str, tp: int, isl: int, osl: int, clients: int) -> dict[str, int]:
    """expert_parallel and attention_data_parallel (TP ranks of one GPU) as InferenceX's DeepSeek-R1 TensorRT-LLM
    recipes chose them on 2025-11-02 (benchmarks/dsr1_{fp8,fp4}_b200_trt_slurm.sh, dsr1_fp8_h200_trt_slurm.sh at
    e06929c70): fp8 (B200, H200) EP = TP, attention DP above 32 clients at 1k/1k on B200 (64 on H200), above 64 at
    1k/8k, above 64 at 8k/1k on B200 (32 on H200); fp4 B200: EP = TP above 32 clients (TP 4) or 8 / 16 / 32 clients
    at 1k/1k / 1k/8k / 8k/1k (TP 8), attention DP from 256 clients, and at 8k/1k above 32 clients (with EP)."""
    if precision == "fp8":
        above = {(1024, 1024): 32 if system == "b200_sxm" else 64, (1024, 8192): 64,
                 (8192, 1024): 64 if system == "b200_sxm" else 32}.get((isl, osl))
        dp = above is not None and clients > above
        return {"expert_parallel": tp, **({"attention_data_parallel": tp} if dp else {})}
    if precision != "fp4" or system != "b200_sxm" or tp not in (4, 8):
        return {}
    ep_above = {(1024, 1024): 8, (1024, 8192): 16, (8192, 1024): 32}.get((isl, osl)) if tp == 8 else 32
    if ep_above is None:
        return {}
    split = {"expert_parallel": tp} if clients > ep_above else {}
    if clients >= 256 or ((isl, osl) == (8192, 1024) and clients > 32):
        split["attention_data_parallel"] = tp
    return split


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
    kv_dtype = inferencex_kv_dtype(row)
    if kv_dtype is not None:
        options["kv_dtype"] = kv_dtype
    concurrency = _concurrency(row)
    client = client_protocol(row)
    load = dict(engine=row["backend"], concurrency=concurrency, prompt_len=client["prompt_len"],
                gen_len=client["gen_len"], num_requests=client["num_requests"])
    recv_interval = inferencex_recv_interval(row)
    recipe: dict[str, Any] = {}  # knobs an aggregated row's InferenceX recipe set beyond the engine's defaults
    if row["mode"] == "disagg":
        from ..serving.disaggregated import serve_disaggregated

        pools = {phase: {"replicas": _count(row[f"{phase}_num_workers"]),
                         "tensor_parallel": _count(row[f"{phase}_tp_size"]) * _ranks(row, f"{phase}_"),
                         "expert_parallel": _count(row[f"{phase}_moe_ep_size"]),
                         "attention_data_parallel": _ranks(row, f"{phase}_")}
                 for phase in ("prefill", "decode")}
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
        recipe = {**inferencex_trtllm_options(row), **inferencex_vllm_options(row), **inferencex_sglang_options(row)}
        options.update(recipe)
        dp = options.get("attention_data_parallel", dp)
        r = serve(spec, SYSTEMS[row["system"]], tensor_parallel=tp, **load, **options)
    ttft, tpot = r.ttft_s.mean * 1e3, r.tpot_s.mean * 1e3
    measured_ttft, measured_tpot = float(row["silicon_ttft_ms"]), float(row["silicon_tpot_ms"])
    return {"id": row["id"], "model": model, "system": row["system"], "engine": row["backend"], "mode": row["mode"],
            "precision": "config" if forced == CONFIG else "fp8_block" if block_fp8 else dtype or "bf16", "tp": tp,
            "attention_dp": dp, "concurrency": concurrency, "protocol": client["protocol"],
            "recv_interval": recv_interval, "kv_dtype": options.get("kv_dtype"),
            "batch_wait_iters": options.get("batch_wait_timeout_iters", 0),
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


def compare_serving(csv_path: Path, limit: int | None = None, executor: Any = None) -> ServingComparison:
    """Simulate every row llmsim can run (the first `limit` of them when given); `executor` (any
    concurrent.futures.Executor) spreads the rows over its workers, in the file's order all the same."""
    result = ServingComparison()
    runnable: list[dict[str, str]] = []
    with Path(csv_path).open(newline="") as f:
        for row in csv.DictReader(f):
            reason = _why_not(row)
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
