"""The TensorRT-LLM settings of InferenceX's disaggregated TensorRT-LLM runs: the NVIDIA/srt-slurm recipe each run
was launched with (`srtctl apply -f $CONFIG_FILE`, Dynamo frontend, sa-bench client), read per pool (context
servers: prefill; generation servers: decode). The file's columns give each pool's workers and parallel sizes but not
its engine settings; these feed llmsim.validation.serving.simulate_row's pools. Nothing is fitted to the rows.

Which recipe (from session 37): InferenceX's `.github/configs/nvidia-master.yaml` as it stood on the day the run
was measured (SemiAnalysisAI/InferenceX, the last main-branch commit of that day, named per run below) names it
(`CONFIG_FILE=recipes/trtllm/...` in a `<model>-<precision>-<system>-dynamo-trt` search-space entry) by sequence
lengths, workers, tensor and expert sizes and attention data parallelism; the run is found by its `config_id` in
aiconfigurator's copy of InferenceX's database (`db-dump/2026-04-27; config_id=...`) and its client count, which is
the recipe's `benchmark.concurrencies` (for the H200 recipes the entry's conc-list times the decode workers). A run
that matches both a speculative-decoding (MTP) entry and a plain one has no recipe here (47 rows) and keeps the
defaults, as do InferenceX's December 2025 runs (launched by a Dynamo script before the srt-slurm recipes).

The recipes' values: `backend.trtllm_config.prefill` / `.decode` (max_batch_size, max_num_tokens, moe_config.backend,
kv_cache_config.dtype and free_gpu_memory_fraction, tensor_parallel_size, moe_expert_parallel_size,
enable_attention_dp) and `resources` (prefill_workers, decode_workers), each at the srt-slurm commit named after its
path. The January to March runs cloned a fork (ishandhanani/srt-slurm, branch sa-submission-q1-2026) that no public
index stores; its recipes are read at NVIDIA/srt-slurm 75f6e32a3 (2026-01-27) or at 5063eb432 (2026-03-03, the
squash-merge of that branch), the latest version on or before the run's day where one exists (approximation: the
fork's files on the run's day are taken to be those; where the two versions differ, e.g. every gb300-fp8 recipe's
context free_gpu_memory_fraction 0.4/0.5 -> 0.1, the one before the run is read). The Kimi-K2.5 runs of 2026-04-18
used NVIDIA/srt-slurm's sa-submission-q2-2026 branch (94903bdb6).

How they map onto serve_disaggregated's pools:
- max_num_seqs = max_batch_size and max_num_batched_tokens = max_num_tokens, per attention data-parallel rank (each
  rank of a TensorRT-LLM attention-DP server is its own executor with these limits: llmsim's per-rank limits); a
  generation server's max_num_seqs is min(max_batch_size, max_num_tokens) (approximation: TensorRT-LLM's micro-batch
  scheduler fits at most max_num_tokens one-token decodes into a step, holding the rest of its max_batch_size
  requests for later steps; llmsim keeps them waiting instead: one recipe, b200-fp8 8k1k
  ctx2_gen1_dep8_batch640_eplb0_mtp0_640, max_batch_size 640 and max_num_tokens 512).
- every recipe runs an fp8 KV cache on both servers (`kv_cache_config.dtype: fp8`): kv_dtype="fp8".
- `moe_config.backend: TRTLLM` on a server of a block-fp8 (DeepSeek-R1 fp8) run: the pool's fp8_block_moe_kernel
  "trtllm-gen" (TensorRT-LLM's TRTLLM-gen fused MoE, read from vLLM's Blackwell rows of that kernel at expert tensor
  parallelism: timing.measured.trtllm_gen_fp8_block_moe); DEEPGEMM, CUTLASS and WIDEEP: the default kernel (the
  package's TensorRT-LLM fp8_block rows, DeepGEMM). nvfp4 experts keep their own table.
- each pool's gpu_memory_utilization = its servers' free_gpu_memory_fraction (the context servers' 0.1 to 0.85, the
  generation servers' 0.7 to 0.9; before session 37's last change, the generation servers' for both pools).
approximation: the recipes' CUDA-graph batch sizes, stream_interval (100 on most generation servers: TensorRT-LLM
streams a request's first token at its first decoding iteration and then every stream_interval iterations, which
leaves the mean TTFT and TPOT the client measures unchanged to within one chunk), allreduce_strategy (MNNVL),
use_low_precision_moe_combine, overlap-scheduler settings and environment (TRTLLM_ENABLE_PDL) are not read.
A run whose pools' workers, tensor size, expert size or attention data parallelism differ from its recipe's (15 runs:
the b200-fp8 8k1k context servers of 2026-02-12 run expert size 1 where the file says 8; the 2026-02-14 h200 context
servers the other attention layout) keeps TensorRT-LLM's defaults.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from .silicon_rows import _count
from .silicon_rows import _ranks as _row_ranks


class TrtllmPool(NamedTuple):
    """One server type of a recipe: `resources` workers and its trtllm_config values."""

    workers: int
    tp: int  # tensor_parallel_size (the server's GPUs)
    ep: int  # moe_expert_parallel_size
    attention_dp: bool  # enable_attention_dp: tp ranks, one GPU each
    max_batch_size: int
    max_num_tokens: int
    moe_backend: str | None  # moe_config.backend
    kv_fraction: float  # kv_cache_config.free_gpu_memory_fraction


_KIMI = "kimi2.5/trtllm_dynamo/disagg/gb200Nvfp4/"
# (config_id, isl, osl, clients) of a run -> its recipe, "<path under recipes/>@<NVIDIA/srt-slurm commit>"
RECIPE_OF_RUN: dict[tuple[int, int, int, int], str] = {
    (239, 1024, 8192, 2048):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/gb200-fp4/1k8k/stp/ctx1_gen1_dep32_batch64_eplb0_mtp0.yaml@75f6e32a3',
    (239, 1024, 8192, 4096):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/gb200-fp4/1k8k/stp/ctx1_gen1_dep32_batch128_eplb288_mtp0.yaml@75f6e32a3',
    (291, 8192, 1024, 128):  # InferenceX 6e97ccc73 (2026-02-14)
        'trtllm/h200/8k1k/stp/c128_ctx1_gen1_dep8_batch256_eplb0_mtp0.yaml@75f6e32a3',
    (294, 8192, 1024, 768):  # InferenceX 6e97ccc73 (2026-02-14)
        'trtllm/h200/8k1k/stp/c256_ctx5_gen3_dep8_batch256_eplb0_mtp0.yaml@75f6e32a3',
    (303, 1024, 1024, 36):  # InferenceX 6e97ccc73 (2026-02-14)
        'trtllm/h200/1k1k/stp/c4_ctx1_gen9_tep8_batch256_eplb0_mtp0.yaml@75f6e32a3',
    (303, 1024, 1024, 72):  # InferenceX 6e97ccc73 (2026-02-14)
        'trtllm/h200/1k1k/stp/c8_ctx1_gen9_tep8_batch256_eplb0_mtp0.yaml@75f6e32a3',
    (303, 1024, 1024, 288):  # InferenceX 6e97ccc73 (2026-02-14)
        'trtllm/h200/1k1k/stp/c32_ctx1_gen9_tep8_batch256_eplb0_mtp0.yaml@75f6e32a3',
    (303, 1024, 1024, 576):  # InferenceX 6e97ccc73 (2026-02-14)
        'trtllm/h200/1k1k/stp/c64_ctx1_gen9_tep8_batch256_eplb0_mtp0.yaml@75f6e32a3',
    (305, 8192, 1024, 160):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/h200/8k1k/stp/c32_ctx2_gen5_tep8_batch128_eplb0_mtp0.yaml@75f6e32a3',
    (309, 1024, 1024, 4096):  # InferenceX dcc0f53a8 (2026-01-29)
        'trtllm/b200-fp4/1k1k/stp/ctx1_gen1_dep8_batch512_eplb0_mtp0.yaml@75f6e32a3',
    (315, 8192, 1024, 370):  # InferenceX dcc0f53a8 (2026-01-29)
        'trtllm/b200-fp4/8k1k/stp/ctx2_gen5_tep8_batch64_eplb0_mtp0.yaml@75f6e32a3',
    (320, 8192, 1024, 25):  # InferenceX dcc0f53a8 (2026-01-29)
        'trtllm/b200-fp4/8k1k/stp/ctx1_gen5_tep8_batch8_eplb0_mtp0.yaml@75f6e32a3',
    (320, 8192, 1024, 50):  # InferenceX dcc0f53a8 (2026-01-29)
        'trtllm/b200-fp4/8k1k/stp/ctx1_gen5_tep8_batch8_eplb0_mtp0.yaml@75f6e32a3',
    (320, 8192, 1024, 100):  # InferenceX dcc0f53a8 (2026-01-29)
        'trtllm/b200-fp4/8k1k/stp/ctx1_gen5_tep8_batch8_eplb0_mtp0.yaml@75f6e32a3',
    (321, 1024, 1024, 1152):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/h200/1k1k/stp/c128_ctx1_gen9_dep8_batch512_eplb0_mtp0.yaml@75f6e32a3',
    (325, 8192, 1024, 192):  # InferenceX 6e97ccc73 (2026-02-14)
        'trtllm/h200/8k1k/stp/c64_ctx2_gen3_dep8_batch128_eplb0_mtp0.yaml@75f6e32a3',
    (328, 1024, 1024, 3584):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/h200/1k1k/stp/c512_ctx2_gen7_dep8_batch512_eplb0_mtp0.yaml@75f6e32a3',
    (335, 1024, 1024, 450):  # InferenceX dcc0f53a8 (2026-01-29)
        'trtllm/b200-fp4/1k1k/stp/ctx1_gen6_tep8_batch64_eplb0_mtp0.yaml@75f6e32a3',
    (336, 1024, 1024, 1536):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/h200/1k1k/stp/c256_ctx1_gen6_dep8_batch512_eplb0_mtp0.yaml@75f6e32a3',
    (346, 1024, 1024, 2192):  # InferenceX dcc0f53a8 (2026-01-29)
        'trtllm/b200-fp4/1k1k/stp/ctx1_gen2_dep8_batch128_eplb0_mtp0.yaml@75f6e32a3',
    (362, 8192, 1024, 4096):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/gb200-fp4/8k1k/stp/ctx10_gen1_dep16_batch256_eplb256_mtp0.yaml@75f6e32a3',
    (373, 1024, 8192, 1024):  # InferenceX daa8239f7 (2026-02-03)
        'trtllm/gb300-fp4/1k8k/stp/ctx1_gen1_dep32_batch32_eplb0_mtp0.yaml@75f6e32a3',
    (373, 1024, 8192, 4096):  # InferenceX daa8239f7 (2026-02-03)
        'trtllm/gb300-fp4/1k8k/stp/ctx1_gen1_dep32_batch128_eplb288_mtp0.yaml@75f6e32a3',
    (373, 1024, 8192, 8192):  # InferenceX daa8239f7 (2026-02-03)
        'trtllm/gb300-fp4/1k8k/stp/ctx1_gen1_dep32_batch256_eplb288_mtp0.yaml@75f6e32a3',
    (374, 1024, 8192, 60):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/gb200-fp4/1k8k/stp/ctx1_gen15_tep4_batch4_eplb0_mtp0.yaml@75f6e32a3',
    (374, 1024, 8192, 135):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/gb200-fp4/1k8k/stp/ctx1_gen15_tep4_batch8_eplb0_mtp0.yaml@75f6e32a3',
    (375, 1024, 1024, 256):  # InferenceX d7dbd045b (2026-02-05)
        'trtllm/gb200-fp8/1k1k/stp/ctx1_gen1_dep32_batch8_eplb0_mtp0_256.yaml@75f6e32a3',
    (375, 1024, 8192, 2048):  # InferenceX d7dbd045b (2026-02-05)
        'trtllm/gb200-fp8/1k8k/stp/ctx1_gen1_dep32_batch64_eplb0_mtp0_2048.yaml@75f6e32a3',
    (378, 1024, 8192, 36):  # InferenceX d7dbd045b (2026-02-05)
        'trtllm/gb200-fp8/1k8k/stp/ctx1_gen4_tep8_batch8_eplb0_mtp0_36.yaml@75f6e32a3',
    (385, 8192, 1024, 72):  # InferenceX daa8239f7 (2026-02-03)
        'trtllm/gb300-fp4/8k1k/stp/ctx1_gen3_tep8_batch16_eplb0_mtp0.yaml@75f6e32a3',
    (386, 1024, 1024, 3):  # InferenceX d7dbd045b (2026-02-05)
        'trtllm/gb200-fp8/1k1k/stp/ctx1_gen3_tep8_batch1_eplb0_mtp0_3.yaml@75f6e32a3',
    (386, 1024, 1024, 27):  # InferenceX d7dbd045b (2026-02-05)
        'trtllm/gb200-fp8/1k1k/stp/ctx1_gen3_tep8_batch8_eplb0_mtp0_27.yaml@75f6e32a3',
    (386, 8192, 1024, 18):  # InferenceX d7dbd045b (2026-02-05)
        'trtllm/gb200-fp8/8k1k/stp/ctx1_gen3_tep8_batch4_eplb0_mtp0_18.yaml@75f6e32a3',
    (386, 8192, 1024, 63):  # InferenceX d7dbd045b (2026-02-05)
        'trtllm/gb200-fp8/8k1k/stp/ctx1_gen3_tep8_batch16_eplb0_mtp0_63.yaml@75f6e32a3',
    (387, 1024, 1024, 8192):  # InferenceX daa8239f7 (2026-02-03)
        'trtllm/gb300-fp4/1k1k/stp/ctx2_gen1_dep8_batch1024_eplb0_mtp0.yaml@75f6e32a3',
    (388, 1024, 1024, 96):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/gb200-fp4/1k1k/stp/ctx1_gen4_tep8_batch32_eplb0_mtp0.yaml@75f6e32a3',
    (388, 1024, 1024, 192):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/gb200-fp4/1k1k/stp/ctx1_gen4_tep8_batch32_eplb0_mtp0.yaml@75f6e32a3',
    (388, 8192, 1024, 44):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/gb200-fp4/8k1k/stp/ctx1_gen4_tep8_batch16_eplb0_mtp0.yaml@75f6e32a3',
    (388, 8192, 1024, 76):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/gb200-fp4/8k1k/stp/ctx1_gen4_tep8_batch16_eplb0_mtp0.yaml@75f6e32a3',
    (392, 1024, 1024, 4):  # InferenceX 04b564b39 (2026-02-07)
        'trtllm/gb300-fp8/1k1k/stp/ctx1_gen4_tep8_batch1_eplb0_mtp0_4.yaml@75f6e32a3',
    (392, 1024, 1024, 84):  # InferenceX 04b564b39 (2026-02-07)
        'trtllm/gb300-fp8/1k1k/stp/ctx1_gen4_tep8_batch16_eplb0_mtp0_84.yaml@75f6e32a3',
    (392, 1024, 8192, 36):  # InferenceX 04b564b39 (2026-02-07)
        'trtllm/gb300-fp8/1k8k/stp/ctx1_gen4_tep8_batch8_eplb0_mtp0_36.yaml@75f6e32a3',
    (392, 8192, 1024, 4):  # InferenceX 04b564b39 (2026-02-07)
        'trtllm/gb300-fp8/8k1k/stp/ctx1_gen4_tep8_batch1_eplb0_mtp0_4.yaml@75f6e32a3',
    (392, 8192, 1024, 36):  # InferenceX 04b564b39 (2026-02-07)
        'trtllm/gb300-fp8/8k1k/stp/ctx1_gen4_tep8_batch8_eplb0_mtp0_36.yaml@75f6e32a3',
    (404, 1024, 8192, 245):  # InferenceX daa8239f7 (2026-02-03)
        'trtllm/gb300-fp4/1k8k/stp/ctx1_gen7_tep8_batch32_eplb0_mtp0.yaml@75f6e32a3',
    (411, 1024, 1024, 6144):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/gb200-fp4/1k1k/stp/ctx1_gen2_dep4_batch768_eplb0_mtp0.yaml@75f6e32a3',
    (412, 8192, 1024, 3228):  # InferenceX daa8239f7 (2026-02-03)
        'trtllm/gb300-fp4/8k1k/stp/ctx11_gen3_dep4_batch256_eplb0_mtp0.yaml@75f6e32a3',
    (416, 1024, 1024, 6144):  # InferenceX d7dbd045b (2026-02-05)
        'trtllm/gb200-fp8/1k1k/stp/ctx1_gen1_dep8_batch768_eplb0_mtp0_6144.yaml@75f6e32a3',
    (417, 1024, 1024, 96):  # InferenceX daa8239f7 (2026-02-03)
        'trtllm/gb300-fp4/1k1k/stp/ctx1_gen4_tep8_batch32_eplb0_mtp0.yaml@75f6e32a3',
    (417, 1024, 1024, 192):  # InferenceX daa8239f7 (2026-02-03)
        'trtllm/gb300-fp4/1k1k/stp/ctx1_gen4_tep8_batch32_eplb0_mtp0.yaml@75f6e32a3',
    (418, 1024, 1024, 12288):  # InferenceX 04b564b39 (2026-02-07)
        'trtllm/gb300-fp8/1k1k/stp/ctx3_gen2_dep8_batch768_eplb0_mtp0_12288.yaml@75f6e32a3',
    (421, 1024, 8192, 60):  # InferenceX daa8239f7 (2026-02-03)
        'trtllm/gb300-fp4/1k8k/stp/ctx1_gen15_tep4_batch4_eplb0_mtp0.yaml@75f6e32a3',
    (436, 8192, 1024, 512):  # InferenceX 04b564b39 (2026-02-07)
        'trtllm/gb300-fp8/8k1k/stp/ctx6_gen1_dep32_batch16_eplb0_mtp0_512.yaml@75f6e32a3',
    (437, 8192, 1024, 5):  # InferenceX daa8239f7 (2026-02-03)
        'trtllm/gb300-fp4/8k1k/stp/ctx1_gen5_tep4_batch4_eplb0_mtp0.yaml@75f6e32a3',
    (437, 8192, 1024, 15):  # InferenceX daa8239f7 (2026-02-03)
        'trtllm/gb300-fp4/8k1k/stp/ctx1_gen5_tep4_batch4_eplb0_mtp0.yaml@75f6e32a3',
    (437, 8192, 1024, 30):  # InferenceX daa8239f7 (2026-02-03)
        'trtllm/gb300-fp4/8k1k/stp/ctx1_gen5_tep4_batch4_eplb0_mtp0.yaml@75f6e32a3',
    (462, 1024, 8192, 1024):  # InferenceX 04b564b39 (2026-02-07)
        'trtllm/gb300-fp8/1k8k/stp/ctx1_gen1_dep32_batch32_eplb0_mtp0_1024.yaml@75f6e32a3',
    (488, 1024, 8192, 4096):  # InferenceX 04b564b39 (2026-02-07)
        'trtllm/gb300-fp8/1k8k/stp/ctx1_gen2_dep16_batch128_eplb0_mtp0_4096.yaml@75f6e32a3',
    (488, 1024, 8192, 8192):  # InferenceX 04b564b39 (2026-02-07)
        'trtllm/gb300-fp8/1k8k/stp/ctx1_gen2_dep16_batch256_eplb0_mtp0_8192.yaml@75f6e32a3',
    (503, 8192, 1024, 154):  # InferenceX 2767db504 (2026-02-08)
        'trtllm/h100-fp8/8k1k/stp/ctx1_gen2_tep16_batch64_eplb0_mtp0.yaml@5063eb432',
    (549, 1024, 1024, 4096):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/b200-fp8/1k1k/stp/ctx1_gen1_dep8_batch512_eplb0_mtp0_4096.yaml@75f6e32a3',
    (549, 8192, 1024, 128):  # InferenceX d25c4e75b (2026-02-12)
        'trtllm/b200-fp8/8k1k/stp/ctx1_gen1_dep8_batch128_eplb0_mtp0_128.yaml@75f6e32a3',
    (549, 8192, 1024, 256):  # InferenceX d25c4e75b (2026-02-12)
        'trtllm/b200-fp8/8k1k/stp/ctx1_gen1_dep8_batch256_eplb0_mtp0_256.yaml@75f6e32a3',
    (553, 8192, 1024, 32):  # InferenceX d25c4e75b (2026-02-12)
        'trtllm/b200-fp8/8k1k/stp/ctx1_gen4_tp8_batch32_eplb0_mtp0_32.yaml@75f6e32a3',
    (553, 8192, 1024, 128):  # InferenceX d25c4e75b (2026-02-12)
        'trtllm/b200-fp8/8k1k/stp/ctx1_gen4_tp8_batch32_eplb0_mtp0_128.yaml@75f6e32a3',
    (554, 8192, 1024, 96):  # InferenceX d25c4e75b (2026-02-12)
        'trtllm/b200-fp8/8k1k/stp/ctx1_gen6_tp8_batch16_eplb0_mtp0_96.yaml@75f6e32a3',
    (555, 8192, 1024, 640):  # InferenceX d25c4e75b (2026-02-12)
        'trtllm/b200-fp8/8k1k/stp/ctx2_gen1_dep8_batch640_eplb0_mtp0_640.yaml@75f6e32a3',
    (556, 8192, 1024, 1):  # InferenceX d25c4e75b (2026-02-12)
        'trtllm/b200-fp8/8k1k/stp/ctx1_gen1_tp8_batch1_eplb0_mtp0_1.yaml@75f6e32a3',
    (564, 1024, 1024, 1920):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/b200-fp8/1k1k/stp/ctx1_gen5_dep8_batch48_eplb0_mtp0_1920.yaml@75f6e32a3',
    (566, 8192, 1024, 128):  # InferenceX d25c4e75b (2026-02-12)
        'trtllm/b200-fp8/8k1k/stp/ctx1_gen2_dep8_batch64_eplb0_mtp0_128.yaml@75f6e32a3',
    (590, 1024, 1024, 36):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/h200/1k1k/stp/c4_ctx1_gen9_tep8_batch256_eplb0_mtp0.yaml@75f6e32a3',
    (590, 1024, 1024, 72):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/h200/1k1k/stp/c8_ctx1_gen9_tep8_batch256_eplb0_mtp0.yaml@75f6e32a3',
    (590, 1024, 1024, 288):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/h200/1k1k/stp/c32_ctx1_gen9_tep8_batch256_eplb0_mtp0.yaml@75f6e32a3',
    (590, 1024, 1024, 576):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/h200/1k1k/stp/c64_ctx1_gen9_tep8_batch256_eplb0_mtp0.yaml@75f6e32a3',
    (661, 8192, 1024, 32):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/b200-fp8/8k1k/stp/ctx1_gen4_tp8_batch32_eplb0_mtp0_32.yaml@5063eb432',
    (661, 8192, 1024, 128):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/b200-fp8/8k1k/stp/ctx1_gen4_tp8_batch32_eplb0_mtp0_128.yaml@75f6e32a3',
    (662, 8192, 1024, 1):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/b200-fp8/8k1k/stp/ctx1_gen1_tp8_batch1_eplb0_mtp0_1.yaml@5063eb432',
    (666, 8192, 1024, 128):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/b200-fp8/8k1k/stp/ctx1_gen1_dep8_batch128_eplb0_mtp0_128.yaml@75f6e32a3',
    (666, 8192, 1024, 256):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/b200-fp8/8k1k/stp/ctx1_gen1_dep8_batch256_eplb0_mtp0_256.yaml@75f6e32a3',
    (667, 8192, 1024, 640):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/b200-fp8/8k1k/stp/ctx2_gen1_dep8_batch640_eplb0_mtp0_640.yaml@75f6e32a3',
    (669, 8192, 1024, 96):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/b200-fp8/8k1k/stp/ctx1_gen6_tp8_batch16_eplb0_mtp0_96.yaml@75f6e32a3',
    (670, 8192, 1024, 128):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/b200-fp8/8k1k/stp/ctx1_gen2_dep8_batch64_eplb0_mtp0_128.yaml@75f6e32a3',
    (674, 8192, 1024, 192):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/h200/8k1k/stp/c64_ctx2_gen3_dep8_batch128_eplb0_mtp0.yaml@75f6e32a3',
    (675, 8192, 1024, 128):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/h200/8k1k/stp/c128_ctx1_gen1_dep8_batch256_eplb0_mtp0.yaml@75f6e32a3',
    (679, 8192, 1024, 768):  # InferenceX 26d415b36 (2026-03-23)
        'trtllm/h200/8k1k/stp/c256_ctx5_gen3_dep8_batch256_eplb0_mtp0.yaml@75f6e32a3',
    (759, 1024, 1024, 4):  # InferenceX e8924a6a4 (2026-04-18)
        _KIMI + 'ISL1K_OSL1K/STP/ctx1dep4_gen4tep8_batch128_allconc_eplb0_mtp0.yaml@94903bdb6',
    (759, 1024, 1024, 192):  # InferenceX e8924a6a4 (2026-04-18)
        _KIMI + 'ISL1K_OSL1K/STP/ctx1dep4_gen4tep8_batch128_allconc_eplb0_mtp0.yaml@94903bdb6',
    (759, 1024, 1024, 360):  # InferenceX e8924a6a4 (2026-04-18)
        _KIMI + 'ISL1K_OSL1K/STP/ctx1dep4_gen4tep8_batch128_allconc_eplb0_mtp0.yaml@94903bdb6',
    (759, 1024, 1024, 668):  # InferenceX e8924a6a4 (2026-04-18)
        _KIMI + 'ISL1K_OSL1K/STP/ctx1dep4_gen4tep8_batch128_allconc_eplb0_mtp0.yaml@94903bdb6',
    (759, 8192, 1024, 4):  # InferenceX e8924a6a4 (2026-04-18)
        _KIMI + 'ISL8K_OSL1K/STP/ctx1dep4_gen4tep8_batch1_allconc_eplb0_mtp0.yaml@94903bdb6',
    (760, 8192, 1024, 156):  # InferenceX e8924a6a4 (2026-04-18)
        _KIMI + 'ISL8K_OSL1K/STP/ctx1dep4_gen4tep4_batch32_allconc_eplb0_mtp0.yaml@94903bdb6',
    (763, 1024, 1024, 5):  # InferenceX e8924a6a4 (2026-04-18)
        _KIMI + 'ISL1K_OSL1K/STP/ctx1dep4_gen5tep4_batch8_allconc_eplb0_mtp0.yaml@94903bdb6',
    (763, 1024, 1024, 15):  # InferenceX e8924a6a4 (2026-04-18)
        _KIMI + 'ISL1K_OSL1K/STP/ctx1dep4_gen5tep4_batch8_allconc_eplb0_mtp0.yaml@94903bdb6',
    (763, 1024, 1024, 30):  # InferenceX e8924a6a4 (2026-04-18)
        _KIMI + 'ISL1K_OSL1K/STP/ctx1dep4_gen5tep4_batch8_allconc_eplb0_mtp0.yaml@94903bdb6',
    (763, 1024, 1024, 55):  # InferenceX e8924a6a4 (2026-04-18)
        _KIMI + 'ISL1K_OSL1K/STP/ctx1dep4_gen5tep4_batch8_allconc_eplb0_mtp0.yaml@94903bdb6',
    (763, 8192, 1024, 5):  # InferenceX e8924a6a4 (2026-04-18)
        _KIMI + 'ISL8K_OSL1K/STP/ctx1dep4_gen5tep4_batch16_allconc_eplb0_mtp0.yaml@94903bdb6',
    (763, 8192, 1024, 15):  # InferenceX e8924a6a4 (2026-04-18)
        _KIMI + 'ISL8K_OSL1K/STP/ctx1dep4_gen5tep4_batch16_allconc_eplb0_mtp0.yaml@94903bdb6',
    (763, 8192, 1024, 30):  # InferenceX e8924a6a4 (2026-04-18)
        _KIMI + 'ISL8K_OSL1K/STP/ctx1dep4_gen5tep4_batch16_allconc_eplb0_mtp0.yaml@94903bdb6',
    (763, 8192, 1024, 60):  # InferenceX e8924a6a4 (2026-04-18)
        _KIMI + 'ISL8K_OSL1K/STP/ctx1dep4_gen5tep4_batch16_allconc_eplb0_mtp0.yaml@94903bdb6',
    (763, 8192, 1024, 105):  # InferenceX e8924a6a4 (2026-04-18)
        _KIMI + 'ISL8K_OSL1K/STP/ctx1dep4_gen5tep4_batch16_allconc_eplb0_mtp0.yaml@94903bdb6',
}
RECIPES: dict[str, tuple[TrtllmPool, TrtllmPool]] = {
    _KIMI + 'ISL1K_OSL1K/STP/ctx1dep4_gen4tep8_batch128_allconc_eplb0_mtp0.yaml@94903bdb6':
        (TrtllmPool(1, 4, 4, True, 16, 16384, 'TRTLLM', 0.4), TrtllmPool(4, 8, 8, False, 128, 128, 'TRTLLM', 0.9)),
    _KIMI + 'ISL1K_OSL1K/STP/ctx1dep4_gen5tep4_batch8_allconc_eplb0_mtp0.yaml@94903bdb6':
        (TrtllmPool(1, 4, 4, True, 16, 16384, 'TRTLLM', 0.4), TrtllmPool(5, 4, 4, False, 8, 8, 'TRTLLM', 0.9)),
    _KIMI + 'ISL8K_OSL1K/STP/ctx1dep4_gen4tep4_batch32_allconc_eplb0_mtp0.yaml@94903bdb6':
        (TrtllmPool(1, 4, 4, True, 2, 16384, 'TRTLLM', 0.4), TrtllmPool(4, 4, 4, False, 32, 32, 'TRTLLM', 0.9)),
    _KIMI + 'ISL8K_OSL1K/STP/ctx1dep4_gen4tep8_batch1_allconc_eplb0_mtp0.yaml@94903bdb6':
        (TrtllmPool(1, 4, 4, True, 2, 16384, 'TRTLLM', 0.4), TrtllmPool(4, 8, 8, False, 1, 1, 'TRTLLM', 0.9)),
    _KIMI + 'ISL8K_OSL1K/STP/ctx1dep4_gen5tep4_batch16_allconc_eplb0_mtp0.yaml@94903bdb6':
        (TrtllmPool(1, 4, 4, True, 2, 16384, 'TRTLLM', 0.4), TrtllmPool(5, 4, 4, False, 16, 16, 'TRTLLM', 0.9)),
    'trtllm/b200-fp4/1k1k/stp/ctx1_gen1_dep8_batch512_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 8, 10240, 'TRTLLM', 0.75), TrtllmPool(1, 8, 8, True, 512, 512, 'CUTLASS', 0.8)),
    'trtllm/b200-fp4/1k1k/stp/ctx1_gen2_dep8_batch128_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 8, 10240, 'TRTLLM', 0.75), TrtllmPool(2, 8, 8, True, 128, 128, 'CUTLASS', 0.8)),
    'trtllm/b200-fp4/1k1k/stp/ctx1_gen6_tep8_batch64_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 8, 10240, 'TRTLLM', 0.75), TrtllmPool(6, 8, 8, False, 64, 64, 'TRTLLM', 0.9)),
    'trtllm/b200-fp4/8k1k/stp/ctx1_gen5_tep8_batch8_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 2, 16896, 'TRTLLM', 0.75), TrtllmPool(5, 8, 8, False, 16, 16, 'TRTLLM', 0.9)),
    'trtllm/b200-fp4/8k1k/stp/ctx2_gen5_tep8_batch64_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(2, 4, 4, True, 2, 16896, 'TRTLLM', 0.75), TrtllmPool(5, 8, 8, False, 64, 64, 'TRTLLM', 0.9)),
    'trtllm/b200-fp8/1k1k/stp/ctx1_gen1_dep8_batch512_eplb0_mtp0_4096.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 16, 16384, 'DEEPGEMM', 0.2), TrtllmPool(1, 8, 8, True, 512, 4096, 'DEEPGEMM', 0.8)),
    'trtllm/b200-fp8/1k1k/stp/ctx1_gen5_dep8_batch48_eplb0_mtp0_1920.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 16, 16384, 'DEEPGEMM', 0.4), TrtllmPool(5, 8, 8, True, 48, 4096, 'DEEPGEMM', 0.8)),
    'trtllm/b200-fp8/8k1k/stp/ctx1_gen1_dep8_batch128_eplb0_mtp0_128.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 1, True, 1, 8320, 'TRTLLM', 0.2), TrtllmPool(1, 8, 8, True, 128, 512, 'TRTLLM', 0.8)),
    'trtllm/b200-fp8/8k1k/stp/ctx1_gen1_dep8_batch256_eplb0_mtp0_256.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 1, True, 1, 8320, 'TRTLLM', 0.2), TrtllmPool(1, 8, 8, True, 256, 512, 'TRTLLM', 0.8)),
    'trtllm/b200-fp8/8k1k/stp/ctx1_gen1_tp8_batch1_eplb0_mtp0_1.yaml@5063eb432':
        (TrtllmPool(1, 8, 1, False, 64, 8320, 'TRTLLM', 0.8), TrtllmPool(1, 8, 1, False, 1, 1, 'TRTLLM', 0.8)),
    'trtllm/b200-fp8/8k1k/stp/ctx1_gen1_tp8_batch1_eplb0_mtp0_1.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 1, False, 64, 8320, 'TRTLLM', 0.8), TrtllmPool(1, 8, 1, False, 1, 512, 'TRTLLM', 0.8)),
    'trtllm/b200-fp8/8k1k/stp/ctx1_gen2_dep8_batch64_eplb0_mtp0_128.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 1, True, 1, 8320, 'TRTLLM', 0.2), TrtllmPool(2, 8, 8, True, 64, 512, 'TRTLLM', 0.8)),
    'trtllm/b200-fp8/8k1k/stp/ctx1_gen4_tp8_batch32_eplb0_mtp0_128.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 1, True, 1, 8320, 'TRTLLM', 0.2), TrtllmPool(4, 8, 1, False, 32, 512, 'TRTLLM', 0.8)),
    'trtllm/b200-fp8/8k1k/stp/ctx1_gen4_tp8_batch32_eplb0_mtp0_32.yaml@5063eb432':
        (TrtllmPool(1, 8, 1, True, 1, 8320, 'TRTLLM', 0.2), TrtllmPool(4, 8, 1, False, 8, 8, 'TRTLLM', 0.8)),
    'trtllm/b200-fp8/8k1k/stp/ctx1_gen4_tp8_batch32_eplb0_mtp0_32.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 1, True, 1, 8320, 'TRTLLM', 0.2), TrtllmPool(4, 8, 1, False, 32, 512, 'TRTLLM', 0.8)),
    'trtllm/b200-fp8/8k1k/stp/ctx1_gen6_tp8_batch16_eplb0_mtp0_96.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 1, True, 1, 8320, 'TRTLLM', 0.2), TrtllmPool(6, 8, 1, False, 16, 512, 'TRTLLM', 0.8)),
    'trtllm/b200-fp8/8k1k/stp/ctx2_gen1_dep8_batch640_eplb0_mtp0_640.yaml@75f6e32a3':
        (TrtllmPool(2, 8, 1, True, 1, 8320, 'TRTLLM', 0.2), TrtllmPool(1, 8, 8, True, 640, 512, 'TRTLLM', 0.8)),
    'trtllm/gb200-fp4/1k1k/stp/ctx1_gen2_dep4_batch768_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 16, 16384, 'TRTLLM', 0.6), TrtllmPool(2, 4, 4, True, 768, 768, 'CUTLASS', 0.8)),
    'trtllm/gb200-fp4/1k1k/stp/ctx1_gen4_tep8_batch32_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 16, 16384, 'TRTLLM', 0.6), TrtllmPool(4, 8, 8, False, 32, 32, 'TRTLLM', 0.9)),
    'trtllm/gb200-fp4/1k8k/stp/ctx1_gen15_tep4_batch4_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 16, 16384, 'TRTLLM', 0.6), TrtllmPool(15, 4, 4, False, 4, 16, 'TRTLLM', 0.9)),
    'trtllm/gb200-fp4/1k8k/stp/ctx1_gen15_tep4_batch8_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 16, 16384, 'TRTLLM', 0.6), TrtllmPool(15, 4, 4, False, 8, 32, 'TRTLLM', 0.9)),
    'trtllm/gb200-fp4/1k8k/stp/ctx1_gen1_dep32_batch128_eplb288_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 16, 16384, 'TRTLLM', 0.6), TrtllmPool(1, 32, 32, True, 128, 512, 'CUTEDSL', 0.7)),
    'trtllm/gb200-fp4/1k8k/stp/ctx1_gen1_dep32_batch64_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 16, 16384, 'TRTLLM', 0.6), TrtllmPool(1, 32, 32, True, 64, 256, 'CUTEDSL', 0.7)),
    'trtllm/gb200-fp4/8k1k/stp/ctx10_gen1_dep16_batch256_eplb256_mtp0.yaml@75f6e32a3':
        (TrtllmPool(10, 4, 4, True, 2, 16640, 'TRTLLM', 0.6), TrtllmPool(1, 16, 16, True, 256, 256, 'CUTEDSL', 0.8)),
    'trtllm/gb200-fp4/8k1k/stp/ctx1_gen4_tep8_batch16_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 2, 16640, 'TRTLLM', 0.6), TrtllmPool(4, 8, 8, False, 16, 16, 'TRTLLM', 0.9)),
    'trtllm/gb200-fp8/1k1k/stp/ctx1_gen1_dep32_batch8_eplb0_mtp0_256.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 16, 16384, 'DEEPGEMM', 0.5), TrtllmPool(1, 32, 32, True, 8, 8, 'DEEPGEMM', 0.7)),
    'trtllm/gb200-fp8/1k1k/stp/ctx1_gen1_dep8_batch768_eplb0_mtp0_6144.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 16, 16384, 'DEEPGEMM', 0.5), TrtllmPool(1, 8, 8, True, 768, 768, 'DEEPGEMM', 0.8)),
    'trtllm/gb200-fp8/1k1k/stp/ctx1_gen3_tep8_batch1_eplb0_mtp0_3.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 16, 16384, 'DEEPGEMM', 0.5), TrtllmPool(3, 8, 8, False, 1, 1, 'TRTLLM', 0.9)),
    'trtllm/gb200-fp8/1k1k/stp/ctx1_gen3_tep8_batch8_eplb0_mtp0_27.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 16, 16384, 'DEEPGEMM', 0.5), TrtllmPool(3, 8, 8, False, 8, 8, 'TRTLLM', 0.9)),
    'trtllm/gb200-fp8/1k8k/stp/ctx1_gen1_dep32_batch64_eplb0_mtp0_2048.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 16, 16384, 'DEEPGEMM', 0.4), TrtllmPool(1, 32, 32, True, 64, 64, 'DEEPGEMM', 0.75)),
    'trtllm/gb200-fp8/1k8k/stp/ctx1_gen4_tep8_batch8_eplb0_mtp0_36.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 16, 16384, 'DEEPGEMM', 0.4), TrtllmPool(4, 8, 8, False, 8, 8, 'TRTLLM', 0.9)),
    'trtllm/gb200-fp8/8k1k/stp/ctx1_gen3_tep8_batch16_eplb0_mtp0_63.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 2, 16384, 'DEEPGEMM', 0.4), TrtllmPool(3, 8, 8, False, 16, 16, 'TRTLLM', 0.9)),
    'trtllm/gb200-fp8/8k1k/stp/ctx1_gen3_tep8_batch4_eplb0_mtp0_18.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 2, 16384, 'DEEPGEMM', 0.4), TrtllmPool(3, 8, 8, False, 4, 4, 'TRTLLM', 0.9)),
    'trtllm/gb300-fp4/1k1k/stp/ctx1_gen4_tep8_batch32_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 2, 2, True, 16, 16384, 'TRTLLM', 0.6), TrtllmPool(4, 8, 8, False, 32, 32, 'TRTLLM', 0.9)),
    'trtllm/gb300-fp4/1k1k/stp/ctx2_gen1_dep8_batch1024_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(2, 2, 2, True, 16, 16384, 'TRTLLM', 0.6), TrtllmPool(1, 8, 8, True, 1024, 1024, 'CUTLASS', 0.8)),
    'trtllm/gb300-fp4/1k8k/stp/ctx1_gen15_tep4_batch4_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 2, 2, True, 16, 16384, 'TRTLLM', 0.6), TrtllmPool(15, 4, 4, False, 4, 16, 'TRTLLM', 0.9)),
    'trtllm/gb300-fp4/1k8k/stp/ctx1_gen1_dep32_batch128_eplb288_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 2, 2, True, 16, 16384, 'TRTLLM', 0.6), TrtllmPool(1, 32, 32, True, 128, 512, 'CUTEDSL', 0.7)),
    'trtllm/gb300-fp4/1k8k/stp/ctx1_gen1_dep32_batch256_eplb288_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 2, 2, True, 16, 16384, 'TRTLLM', 0.6), TrtllmPool(1, 32, 32, True, 256, 1024, 'CUTEDSL', 0.7)),
    'trtllm/gb300-fp4/1k8k/stp/ctx1_gen1_dep32_batch32_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 2, 2, True, 16, 16384, 'TRTLLM', 0.6), TrtllmPool(1, 32, 32, True, 32, 128, 'CUTEDSL', 0.7)),
    'trtllm/gb300-fp4/1k8k/stp/ctx1_gen7_tep8_batch32_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 2, 2, True, 16, 16384, 'TRTLLM', 0.6), TrtllmPool(7, 8, 8, False, 32, 128, 'TRTLLM', 0.9)),
    'trtllm/gb300-fp4/8k1k/stp/ctx11_gen3_dep4_batch256_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(11, 2, 2, True, 2, 16640, 'TRTLLM', 0.6), TrtllmPool(3, 4, 4, True, 256, 256, 'CUTLASS', 0.9)),
    'trtllm/gb300-fp4/8k1k/stp/ctx1_gen3_tep8_batch16_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 2, 2, True, 2, 16640, 'TRTLLM', 0.6), TrtllmPool(3, 8, 8, False, 16, 16, 'TRTLLM', 0.9)),
    'trtllm/gb300-fp4/8k1k/stp/ctx1_gen5_tep4_batch4_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 2, 2, True, 2, 16640, 'TRTLLM', 0.6), TrtllmPool(5, 4, 4, False, 4, 4, 'TRTLLM', 0.9)),
    'trtllm/gb300-fp8/1k1k/stp/ctx1_gen4_tep8_batch16_eplb0_mtp0_84.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 16, 16384, 'DEEPGEMM', 0.5), TrtllmPool(4, 8, 8, False, 16, 16, 'TRTLLM', 0.9)),
    'trtllm/gb300-fp8/1k1k/stp/ctx1_gen4_tep8_batch1_eplb0_mtp0_4.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 16, 16384, 'DEEPGEMM', 0.5), TrtllmPool(4, 8, 8, False, 1, 1, 'TRTLLM', 0.9)),
    'trtllm/gb300-fp8/1k1k/stp/ctx3_gen2_dep8_batch768_eplb0_mtp0_12288.yaml@75f6e32a3':
        (TrtllmPool(3, 4, 4, True, 16, 16384, 'DEEPGEMM', 0.4), TrtllmPool(2, 8, 8, True, 768, 768, 'DEEPGEMM', 0.8)),
    'trtllm/gb300-fp8/1k8k/stp/ctx1_gen1_dep32_batch32_eplb0_mtp0_1024.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 16, 16384, 'DEEPGEMM', 0.4), TrtllmPool(1, 32, 32, True, 32, 32, 'DEEPGEMM', 0.75)),
    'trtllm/gb300-fp8/1k8k/stp/ctx1_gen2_dep16_batch128_eplb0_mtp0_4096.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 16, 16384, 'DEEPGEMM', 0.4), TrtllmPool(2, 16, 16, True, 128, 128, 'DEEPGEMM', 0.8)),
    'trtllm/gb300-fp8/1k8k/stp/ctx1_gen2_dep16_batch256_eplb0_mtp0_8192.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 16, 16384, 'DEEPGEMM', 0.4), TrtllmPool(2, 16, 16, True, 256, 256, 'DEEPGEMM', 0.8)),
    'trtllm/gb300-fp8/1k8k/stp/ctx1_gen4_tep8_batch8_eplb0_mtp0_36.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 16, 16384, 'DEEPGEMM', 0.4), TrtllmPool(4, 8, 8, False, 8, 8, 'TRTLLM', 0.9)),
    'trtllm/gb300-fp8/8k1k/stp/ctx1_gen4_tep8_batch1_eplb0_mtp0_4.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 2, 16384, 'DEEPGEMM', 0.4), TrtllmPool(4, 8, 8, False, 1, 1, 'TRTLLM', 0.9)),
    'trtllm/gb300-fp8/8k1k/stp/ctx1_gen4_tep8_batch8_eplb0_mtp0_36.yaml@75f6e32a3':
        (TrtllmPool(1, 4, 4, True, 2, 16384, 'DEEPGEMM', 0.4), TrtllmPool(4, 8, 8, False, 8, 8, 'TRTLLM', 0.9)),
    'trtllm/gb300-fp8/8k1k/stp/ctx6_gen1_dep32_batch16_eplb0_mtp0_512.yaml@75f6e32a3':
        (TrtllmPool(6, 4, 4, True, 2, 16384, 'DEEPGEMM', 0.3), TrtllmPool(1, 32, 32, True, 16, 16, 'DEEPGEMM', 0.75)),
    'trtllm/h100-fp8/8k1k/stp/ctx1_gen2_tep16_batch64_eplb0_mtp0.yaml@5063eb432':
        (TrtllmPool(1, 16, 16, True, 1, 8224, 'WIDEEP', 0.3), TrtllmPool(2, 16, 16, False, 64, 256, 'CUTLASS', 0.9)),
    'trtllm/h200/1k1k/stp/c128_ctx1_gen9_dep8_batch512_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 8, 8192, 'CUTLASS', 0.6), TrtllmPool(9, 8, 8, True, 512, 512, 'CUTLASS', 0.9)),
    'trtllm/h200/1k1k/stp/c256_ctx1_gen6_dep8_batch512_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 8, 8192, 'CUTLASS', 0.6), TrtllmPool(6, 8, 8, True, 512, 512, 'CUTLASS', 0.9)),
    'trtllm/h200/1k1k/stp/c32_ctx1_gen9_tep8_batch256_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 8, 8192, 'CUTLASS', 0.6), TrtllmPool(9, 8, 8, False, 256, 256, 'CUTLASS', 0.9)),
    'trtllm/h200/1k1k/stp/c4_ctx1_gen9_tep8_batch256_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 8, 8192, 'CUTLASS', 0.6), TrtllmPool(9, 8, 8, False, 256, 256, 'CUTLASS', 0.9)),
    'trtllm/h200/1k1k/stp/c512_ctx2_gen7_dep8_batch512_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(2, 8, 8, True, 8, 8192, 'CUTLASS', 0.6), TrtllmPool(7, 8, 8, True, 512, 512, 'CUTLASS', 0.9)),
    'trtllm/h200/1k1k/stp/c64_ctx1_gen9_tep8_batch256_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 8, 8192, 'CUTLASS', 0.6), TrtllmPool(9, 8, 8, False, 256, 256, 'CUTLASS', 0.9)),
    'trtllm/h200/1k1k/stp/c8_ctx1_gen9_tep8_batch256_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, True, 8, 8192, 'CUTLASS', 0.6), TrtllmPool(9, 8, 8, False, 256, 256, 'CUTLASS', 0.9)),
    'trtllm/h200/8k1k/stp/c128_ctx1_gen1_dep8_batch256_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(1, 8, 8, False, 2, 16640, 'CUTLASS', 0.85), TrtllmPool(1, 8, 8, True, 256, 256, 'CUTLASS', 0.85)),
    'trtllm/h200/8k1k/stp/c256_ctx5_gen3_dep8_batch256_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(5, 8, 8, False, 2, 16640, 'CUTLASS', 0.85), TrtllmPool(3, 8, 8, True, 256, 256, 'CUTLASS', 0.85)),
    'trtllm/h200/8k1k/stp/c32_ctx2_gen5_tep8_batch128_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(2, 8, 8, False, 2, 16640, 'CUTLASS', 0.85), TrtllmPool(5, 8, 8, False, 128, 128, 'CUTLASS', 0.85)),
    'trtllm/h200/8k1k/stp/c64_ctx2_gen3_dep8_batch128_eplb0_mtp0.yaml@75f6e32a3':
        (TrtllmPool(2, 8, 8, False, 2, 16640, 'CUTLASS', 0.85), TrtllmPool(3, 8, 8, True, 128, 128, 'CUTLASS', 0.85)),
}


def _matches(row: dict[str, str], phase: str, pool: TrtllmPool) -> bool:
    """Whether a row's pool (its workers, GPUs, expert size and attention ranks, as simulate_row reads them) is the
    recipe's server."""
    ranks = _row_ranks(row, f"{phase}_")
    return (pool.workers == _count(row[f"{phase}_num_workers"]) and pool.tp == _count(row[f"{phase}_tp_size"]) * ranks
            and (pool.tp if pool.attention_dp else 1) == ranks and pool.ep == _count(row[f"{phase}_moe_ep_size"]))


def trtllm_recipe_of(row: dict[str, str]) -> str | None:
    """The srt-slurm recipe (path@commit) of an InferenceX TensorRT-LLM disaggregated run whose pools are the
    recipe's servers, or None (module docstring)."""
    if row["backend"] != "trtllm" or row["mode"] != "disagg":
        return None
    source = row.get("silicon_data_source", "")
    found = re.search(r"db-dump/[^;]*; config_id=(\d+); silicon_concurrency=(\d+)", source)
    if found is None:
        return None
    name = RECIPE_OF_RUN.get((int(found.group(1)), int(row["isl"]), int(row["osl"]), int(found.group(2))))
    if name is None:
        return None
    prefill, decode = RECIPES[name]
    return name if _matches(row, "prefill", prefill) and _matches(row, "decode", decode) else None


def trtllm_disagg_kv_dtype(row: dict[str, str]) -> str | None:
    """"fp8" where the row has a recipe (every one runs an fp8 KV cache), else None (the default)."""
    return "fp8" if trtllm_recipe_of(row) is not None else None


def trtllm_disagg_pools(row: dict[str, str]) -> dict[str, dict[str, Any]]:
    """{"prefill": {...}, "decode": {...}}: serve_disaggregated's pool knobs (max_num_seqs, max_num_batched_tokens
    per rank, the memory share, the block-fp8 MoE kernel) from the row's recipe; {} without one (module
    docstring)."""
    name = trtllm_recipe_of(row)
    if name is None:
        return {}
    knobs: dict[str, dict[str, Any]] = {}
    for phase, pool in zip(("prefill", "decode"), RECIPES[name]):
        # shape: scalar requests a step runs: a generation server runs at most max_num_tokens of its
        # max_batch_size requests a step (one token each)
        seqs = pool.max_batch_size if phase == "prefill" else min(pool.max_batch_size, pool.max_num_tokens)
        knobs[phase] = {"max_num_seqs": seqs, "max_num_batched_tokens": pool.max_num_tokens,
                        "gpu_memory_utilization": pool.kv_fraction}
        if pool.moe_backend == "TRTLLM" and row["moe_quant_mode"] in ("fp8", "fp8_block"):  # DeepSeek-R1's fp8
            knobs[phase]["fp8_block_moe_kernel"] = "trtllm-gen"
    return knobs
