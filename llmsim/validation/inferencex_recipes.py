"""What InferenceX's recipes launched each engine with, where the silicon file's columns do not say: read per
row from the recipe scripts' git history (SemiAnalysisAI/InferenceX), each rule with its commits. The knobs feed
llmsim.validation.serving.simulate_row; none is fitted to the rows."""

from __future__ import annotations

from typing import Any

from ..engines.catalog import ENGINES
from .silicon_rows import _concurrency, _count, _from_inferencex, _measured_on, _ranks

_DEEPSEEK = ("deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3")
_MINIMAX = ("MiniMaxAI/MiniMax-M2.5",)
# vLLM's compiled graph with `"splitting_ops": []` is one flattened FX graph; run without a CUDA graph (prefill and
# mixed passes under FULL_DECODE_ONLY) it "is about 2x slower on the cpu side than the compiled piecewise fx graph"
# (vllm-project/vllm PR #20050, 2025-06-25, the author's profiles), the graph the engine's prefill_dispatch_s was
# measured on (cudagraph_mode=NONE, default splitting). approximation: 2 x that host time per kernel.
_FLATTENED_GRAPH_HOST_FACTOR = 2.0


def _aggregated_run(row: dict[str, str], engine: str | None = None) -> bool:
    """Whether a row is an aggregated InferenceX run (of `engine`, where one is named): the rows its single-node
    recipes launched."""
    return row["mode"] == "agg" and _from_inferencex(row) and engine in (None, row["backend"])


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
    if not _aggregated_run(row, "sglang") or row["system"] not in ("b200_sxm", "b300_sxm"):
        return 1
    clients = _concurrency(row) or 1
    usual = 30 if clients >= 16 else 10
    name, precision = row["model_path"], row["gemm_quant_mode"] or "bfloat16"
    if name in _DEEPSEEK:
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
    Disaggregated rows keep None here (their NVIDIA/srt-slurm recipes: llmsim.validation.srt_slurm_recipes), and so
    do the GB200 aggregated ones.
    approximation: as inferencex_recv_interval, the recipe of the row's model, system and precision is taken to
    be the one that ran it, on the row's date (a run on the day a change landed is taken to have it)."""
    if not _aggregated_run(row):
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
      "FULL_DECODE_ONLY"`: prefill and mixed passes run without CUDA graphs (prefill_graph_tokens=0), and with
      `"splitting_ops": []` they run vLLM's flattened compiled graph, at twice the host time per kernel of the
      piecewise one (prefill_dispatch_s, _FLATTENED_GRAPH_HOST_FACTOR).
    - MiniMax-M2.5 fp8 on B200 (f342df18e, 2026-03-11; 0f78cf4eb, 2026-03-28) and H200 (1d5cae141, 2026-03-27;
      2026-03-28): `if [ "$EP_SIZE" -ge 1 ]; then EP=" --enable-expert-parallel"`, always true, so experts ran
      expert-parallel over the TP GPUs where the file's columns say EP 1; Kimi-K2.5 fp4 on B200 on 2026-03-11
      (a58dedd5a): its recipe passed no expert-parallel flag where the file says EP 4 (its config's EP was
      corrected in 2cbaec340, 2026-04-14).
    - gpt-oss-120b (benchmarks/[single_node/]gptoss_fp4_{h100,h200,b200}*.sh): `max-cudagraph-capture-size: 2048`
      from 2025-12-05 (25506e87c, the vLLM 0.11.2 upgrade; `cuda-graph-sizes` before it): vLLM's piecewise CUDA
      graphs cover passes of up to 2048 tokens (prefill_graph_tokens=2048); on H100 and H200 `export
      VLLM_MXFP4_USE_MARLIN=1` from 2025-12-10 (8796275ce, "Fix H100/H200 perf regression"; the H100 Slurm
      script from 2025-12-16, 9951db676): the experts run vLLM's Marlin MXFP4 MoE kernel
      (mxfp4_moe_kernel="marlin"); on B200 `export VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1` from 2025-09-24
      (c677a52f3): MXFP8 activations on FlashInfer's TRTLLM-gen MXFP4 MoE kernel (mxfp4_moe_kernel="mxfp8").
    approximation: as inferencex_recv_interval, the recipe of the row's model, system and precision is taken to
    be the one that ran it, on the row's date."""
    if not _aggregated_run(row, "vllm"):
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
        options["prefill_dispatch_s"] = _FLATTENED_GRAPH_HOST_FACTOR * ENGINES["vllm"].execution["prefill_dispatch_s"]
    if model == "MiniMaxAI/MiniMax-M2.5" and precision == "fp8" and _ranks(row, "") == 1 and (
            (system == "b200_sxm" and day in ("2026-03-11", "2026-03-28"))
            or (system == "h200_sxm" and day in ("2026-03-27", "2026-03-28"))):
        options["expert_parallel"] = _count(row["tp_size"])
    if model == "moonshotai/Kimi-K2.5" and system == "b200_sxm" and precision == "fp4" and day == "2026-03-11":
        options["expert_parallel"] = 1
    if model == "openai/gpt-oss-120b":
        if day >= "2025-12-05":
            options["prefill_graph_tokens"] = 2048
        if system in ("h100_sxm", "h200_sxm") and day >= ("2025-12-16" if system == "h100_sxm" else "2025-12-10"):
            options["mxfp4_moe_kernel"] = "marlin"
        if system == "b200_sxm" and day >= "2025-09-24":
            options["mxfp4_moe_kernel"] = "mxfp8"
    return options


# InferenceX's GB200 runs of November 2025 were Dynamo disaggregated deployments: its runner
# (runners/launch_gb200-nv.sh as 450d834a9 left it on 2025-11-05, unchanged until 175fe5364 on 2025-12-01) ran only
# Dynamo's submit_disagg.sh sweeps, TensorRT-LLM and SGLang, and nvidia-master.yaml named no GB200 config; the
# file writes them as aggregated rows whose tp_size is the deployment's GPU count (`dep 8 1 32 ... 538`: 8
# context workers of 4 GPUs and one 32-GPU generation worker, the row tp_size 64 at 538 clients).
GB200_DYNAMO_ONLY_UNTIL = "2025-12-01"
GB200_DYNAMO_ONLY_NOTE = ("InferenceX's GB200 runs before December 2025 were Dynamo disaggregated deployments "
                          "(runners/launch_gb200-nv.sh at 450d834a9: submit_disagg.sh only): the row's mode agg and "
                          "tp_size (the deployment's GPU count) are not one aggregated replica, and its worker counts "
                          "are not stated")


def inferencex_gb200_disaggregated(row: dict[str, str]) -> str | None:
    """Why an aggregated-looking InferenceX GB200 row is not one aggregated replica (GB200_DYNAMO_ONLY_NOTE), or
    None: one measured before GB200_DYNAMO_ONLY_UNTIL."""
    if _aggregated_run(row) and row["system"] == "gb200" and "" < _measured_on(row) < GB200_DYNAMO_ONLY_UNTIL:
        return GB200_DYNAMO_ONLY_NOTE
    return None


def inferencex_mtp_only(row: dict[str, str]) -> str | None:
    """Why an aggregated InferenceX row can only be a speculative-decoding (MTP) point, or None. On 2026-03-25
    InferenceX ran SGLang DeepSeek-R1 fp8 on the B200 under two configs of one image (lmsysorg/sglang:v0.5.9-cu130;
    .github/configs/nvidia-master.yaml at 12ba0ae07): `dsr1-fp8-b200-sglang` swept TP 8 over 4-64 clients at 1k/1k
    and 1k/8k and 4 clients at 8k/1k (TP 4: 4-32), `dsr1-fp8-b200-sglang-mtp` (EAGLE, 2 steps, 3 draft tokens) TP 8
    over 4-512 clients in all three. A TP 8 point beyond the plain sweep is the MTP config's; its acceptance rate is
    not stated, so it is not simulated. (The points both swept, four rows each, stay read as the plain recipe:
    which of them is which is not stated.) Nor are TensorRT-LLM's DeepSeek-R1 runs of its MTP recipes
    (_trtllm_mtp_run) or SGLang's Qwen3.5 fp8 B200 runs of 2026-03-20 (_sglang_qwen35_mtp_run)."""
    for rule in (_sglang_dsr1_mtp_point, _trtllm_mtp_run, _sglang_qwen35_mtp_run):
        why = rule(row)
        if why is not None:
            return why
    return None


def _sglang_dsr1_mtp_point(row: dict[str, str]) -> str | None:
    """Why an aggregated InferenceX SGLang DeepSeek-R1 fp8 B200 row of 2026-03-25 is a point only the MTP config
    swept (inferencex_mtp_only), or None."""
    if not (_aggregated_run(row, "sglang") and row["model_path"] in _DEEPSEEK and row["system"] == "b200_sxm"
            and row["precision"] == "fp8" and _measured_on(row) == "2026-03-25" and _count(row["tp_size"]) == 8
            and _ranks(row, "") == 1):
        return None
    clients = _concurrency(row) or 0
    plain_end = 4 if int(row["isl"]) == 8192 else 64
    if clients <= plain_end:
        return None
    return (f"InferenceX's plain SGLang DeepSeek-R1 fp8 B200 config swept TP 8 up to {plain_end} clients on "
            f"2026-03-25 (nvidia-master.yaml at 12ba0ae07); {clients} clients is its MTP config's point (EAGLE "
            "speculative decoding, acceptance rate not stated)")


def _sglang_qwen35_mtp_run(row: dict[str, str]) -> str | None:
    """Why an aggregated InferenceX SGLang Qwen3.5-397B-A17B fp8 B200 row is a run of the MTP config, or None: on
    2026-03-20 the only Qwen3.5 config InferenceX changed was the new `qwen3.5-fp8-b200-sglang-mtp` (35d4bb367, PR
    #898: EAGLE, 3 steps, 4 draft tokens; TP 4 over 4-256 clients in all three scenarios, the sweep the rows of that
    day hold). Its acceptance rate is not stated, so the row is not simulated."""
    if not (_aggregated_run(row, "sglang") and row["model_path"] == "Qwen/Qwen3.5-397B-A17B"
            and row["system"] == "b200_sxm" and row["precision"] == "fp8" and _measured_on(row) == "2026-03-20"):
        return None
    return ("InferenceX's Qwen3.5 fp8 B200 SGLang runs of 2026-03-20 are its new MTP config's (35d4bb367, PR #898): "
            "EAGLE speculative decoding, acceptance rate not stated")


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
    if not _aggregated_run(row, "sglang") or _ranks(row, "") > 1:
        return {}
    day, system, precision = _measured_on(row), row["system"], row["precision"]
    if row["model_path"] == "Qwen/Qwen3.5-397B-A17B":
        if system == "b300_sxm" and precision == "fp8":
            return {"max_num_batched_tokens": 16384} if day >= "2026-04-17" else {}
        if system == "h200_sxm":
            return {"max_num_batched_tokens": 16384, "max_num_seqs": 128}
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


# the days only MTP recipes of TensorRT-LLM DeepSeek-R1 ran (_trtllm_mtp_run): PR #392 (bf3456727, merged
# 2026-01-14 22:26 UTC) added dsr1-{fp4,fp8}-b200-trt-mtp and dsr1-fp8-h200-trt-mtp and changed no plain config;
# 5d517074c (2026-02-05) and 0aae52d4c (2026-02-06) gave the fp8 and fp4 B200 MTP configs the image
# release:1.2.0rc6.post3, which the plain dsr1-{fp8,fp4}-b200-trt configs never had (rc6.post2 until 2026-04)
_TRTLLM_DEEPSEEK_MTP_ONLY_DAYS = ("2026-01-14", "2026-02-05", "2026-02-06")
# those days and InferenceX's 2026-01-28 evaluation run, which mixed MTP and plain points (inferencex_trtllm_options)
_TRTLLM_DEEPSEEK_MTP_DAYS = (*_TRTLLM_DEEPSEEK_MTP_ONLY_DAYS, "2026-01-28")


def _trtllm_mtp_run(row: dict[str, str]) -> str | None:
    """Why an aggregated InferenceX TensorRT-LLM DeepSeek-R1 row is a run of an MTP recipe (speculative decoding:
    "MTP=3 (or MTP=1 when DP_ATTN=true)", 5d517074c), or None: measured on a day only those recipes ran
    (_TRTLLM_DEEPSEEK_MTP_ONLY_DAYS). MTP's acceptance rate on InferenceX's random prompts is not stated, so the
    row is not simulated (serve(speculative=...) would run it given one). The 2026-01-28 evaluation run mixed MTP
    and plain points without saying which is which: read as plain."""
    if not (_aggregated_run(row, "trtllm") and row["model_path"] in _DEEPSEEK
            and _measured_on(row) in _TRTLLM_DEEPSEEK_MTP_ONLY_DAYS):
        return None
    return (f"InferenceX ran only its TensorRT-LLM DeepSeek-R1 MTP recipes on {_measured_on(row)} (bf3456727, "
            "5d517074c, 0aae52d4c): speculative decoding (MTP), acceptance rate not stated")


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
    - DeepSeek-R1 fp8 on B200 from 2026-01-27: `moe_config: backend: TRTLLM` (fp8_block_moe_kernel="trtllm-gen",
      _dsr1_trt_moe_kernel), on the MTP days too.
    - gpt-oss-120b on B200 and H200 (benchmarks/gptoss_fp4_{b200,h200}_trt_slurm.sh, every version in the rows'
      span): `--max_num_tokens 20000`; on 2025-11-02 the H200 recipe (e06929c70) launched `--ep_size=$TP`, which the
      file's columns do not record (EP 1).
    - With attention data parallelism, DeepSeek-R1 on B200 and H200 from ec90f3fe7 (2025-09-18) on:
      `attention_dp_config: {batching_wait_iters: 0, enable_balance: true, timeout_iters: 60}`; gpt-oss-120b on
      B200 from 28e5a01ea (2025-09-19) on: `attention_dp_config: {enable_balance: true}` (TensorRT-LLM's defaults:
      timeout_iters 50, batching_wait_iters 10); the H200 gpt-oss recipes never set it (_trtllm_adp_balance).
    approximation: as inferencex_recv_interval, the recipe of the row's model and system is taken to be the one
    that ran it, on the row's date."""
    options = _trtllm_recipe(row)
    if options.get("attention_data_parallel", _ranks(row, "")) > 1:
        options.update(_trtllm_adp_balance(row))
    return options


def _trtllm_adp_balance(row: dict[str, str]) -> dict[str, Any]:
    """serve()'s attention_dp_* knobs from the attention_dp_config of the InferenceX recipe of an aggregated
    TensorRT-LLM row run with attention data parallelism (inferencex_trtllm_options); {} where it set none."""
    day, system = _measured_on(row), row["system"]
    if row["model_path"] in _DEEPSEEK and system in ("b200_sxm", "h200_sxm") and day >= "2025-09-18":
        return {"attention_dp_balance": True, "attention_dp_timeout_iters": 60, "attention_dp_batching_wait_iters": 0}
    if row["model_path"] == "openai/gpt-oss-120b" and system == "b200_sxm" and day >= "2025-09-19":
        return {"attention_dp_balance": True}
    return {}


def _trtllm_recipe(row: dict[str, str]) -> dict[str, Any]:
    """inferencex_trtllm_options without the attention data-parallel balance."""
    if not _aggregated_run(row, "trtllm"):
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
    clients = _concurrency(row) or 1
    moe = _dsr1_trt_moe_kernel(row["system"], row["precision"], day, isl, osl, clients)
    if not "2025-11-02" <= day <= "2026-02-06" or day in _TRTLLM_DEEPSEEK_MTP_DAYS:
        return moe
    tokens = (clients + isl + 64 + 63) // 64 * 64
    options = {"max_num_batched_tokens": max(tokens, 8192) if day >= "2026-01-21" else tokens}
    fp8_b200 = row["system"] == "b200_sxm" and row["precision"] == "fp8"
    if fp8_b200 and day >= "2026-01-29" and (isl, osl) == (1024, 1024) and clients >= 64 and _ranks(row, "") == 1:
        options.update(batch_wait_timeout_iters=40, batch_wait_max_tokens_ratio=0.8)
    if day == "2025-11-02":
        options.update(_dsr1_trt_split(row["system"], row["precision"], _count(row["tp_size"]), isl, osl, clients))
    return {**options, **moe}


def _dsr1_trt_moe_kernel(system: str, precision: str, day: str, isl: int, osl: int, clients: int) -> dict[str, str]:
    """`moe_config: backend: TRTLLM` in InferenceX's DeepSeek-R1 fp8 B200 TensorRT-LLM recipes from 0a919c5f8
    (2026-01-27, benchmarks/dsr1_fp8_b200_trt.sh; ec7bafaae, single_node/ from 6a2e4f5f0, the MTP recipe
    dsr1_fp8_b200_trt_mtp.sh from 5d517074c): the TRTLLM-gen fused MoE (fp8_block_moe_kernel="trtllm-gen"), but
    DEEPGEMM at 1k/8k from 256 clients and, in the MTP recipe, with attention data parallelism (expert parallel:
    read on the default kernel's rows anyway, timing.measured.trtllm_gen_fp8_block_moe); before 0a919c5f8 every
    run was DEEPGEMM (the package's own TensorRT-LLM rows)."""
    if system != "b200_sxm" or precision != "fp8" or day < "2026-01-27":
        return {}
    if (isl, osl) == (1024, 8192) and clients >= 256:
        return {}
    return {"fp8_block_moe_kernel": "trtllm-gen"}


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
