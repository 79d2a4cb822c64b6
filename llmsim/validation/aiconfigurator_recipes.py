"""The engine settings of aiconfigurator's own gap-analysis deployments (silicon_sample.csv rows whose source is
"aic-auto-gap-analysis"), as aiconfigurator's config generator wrote them.

aiconfigurator's automated evaluation (ai-dynamo/aiconfigurator src/aiconfigurator/eval/pipeline.py, 2025-08-22
to 2026-03-03) ran its CLI, copied the generated backend configs into Dynamo and launched them; the generator's
rules then (src/aiconfigurator/generator/rule_plugin/{trtllm,vllm,sglang}.rule at 8745c7714, 2026-01-05; the
TensorRT-LLM-only generator before 95ddf241a, 2025-12-04, src/aiconfigurator/generator/backends/trtllm.py at
4361371a6, the same values) set, from the chosen batch size bs (the row's batch_size) and its isl:

- aggregated TensorRT-LLM: `max_batch_size: bs`, `max_num_tokens: bs + isl + 1500`, chunked prefill left at
  TensorRT-LLM's default (off); vLLM: `--max-num-seqs bs --max-num-batched-tokens bs + isl + 1500`; SGLang:
  `--max-running-requests bs --max-prefill-tokens isl + 1500` (a prefill step's tokens: llmsim's
  max_num_batched_tokens is min(SGLang's chunked prefill size on the GPU, isl + 1500), as
  srt_slurm_recipes.sglang_disagg_pools reads a recipe's max_prefill_tokens);
- disaggregated prefill workers: `max_num_tokens: isl + 1500` (TensorRT-LLM, vLLM), max_batch_size the prefill
  batch size; decode workers: max_batch_size and max_num_tokens the decode batch size.

- aggregated SGLang of a version whose generator template came after the rule `agg enable_mixed_chunk = true`
  (sglang.rule from fa895ffb1 and 07a377923, 2026-01-19, still there at 095f58a51): `--enable-mixed-chunk`,
  serve()'s mixed_batches=True (prefill chunks ride with the decodes, the decodes counted in the step's token
  budget: SGLang's PrefillAdder takes the running requests off rem_chunk_tokens and rem_input_tokens). The
  templates of SGLang 0.5.6.post2 (c46a56b02, 2026-01-23, Dynamo 0.8.0), 0.5.8 (2026-02-11) and later came after
  it, so those runs had it; 0.5.1.post1, 0.5.3.post2 and 0.5.4.post3 had templates from 2025-12-04, before it,
  and their runs' dates are not known: they keep SGLang's default (no mixed chunks; approximation). From session
  44; what prompted the look (say so: the validation rows informed it): SGLang 0.5.6.post2 Llama-3.1-8B rows on
  H200 with TTFT predicted 2-6x too long, the signature of SGLang's default in a closed loop of equal lengths,
  where prefill-only steps keep the clients' requests in waves; the setting itself is the generator's.
- TensorRT-LLM, either mode: `kv_cache_config.free_gpu_memory_fraction: 0.80`, the default of every TensorRT-LLM
  template of both generators (generator/config/backend_templates/trtllm/extra_engine_args*.yaml.j2 at 8745c7714,
  generator/templates/trtllm/ at 4361371a6; neither generator's rules set it): serve()'s gpu_memory_utilization,
  the share of the memory left free that TensorRT-LLM gives its KV cache (0.9 by default; from session 33).

approximation: that these rows ran the generator's configs is inferred (same team, the same automated
deploy-and-measure loop), not stated in the file; the generator's other settings (CUDA-graph batch sizes 1..bs,
TensorRT-LLM's KV block reuse off, its default too) are not passed.
"""

from __future__ import annotations

from typing import Any

from .silicon_rows import _count

GAP_ANALYSIS_SOURCE = "aic-auto-gap-analysis"
TOKENS_BEYOND_ISL = 1500  # the generator's `isl + 1500` (module docstring)
TRTLLM_FREE_GPU_MEMORY_FRACTION = 0.80  # its TensorRT-LLM templates' free_gpu_memory_fraction (module docstring)
# SGLang versions whose generator templates predate `agg enable_mixed_chunk = true` (module docstring)
SGLANG_TEMPLATES_BEFORE_MIXED_CHUNK = ("0.5.1.post1", "0.5.3.post2", "0.5.4.post3")


def from_gap_analysis(row: dict[str, str]) -> bool:
    """Whether a row is one of aiconfigurator's own gap-analysis runs (its source names the project)."""
    return GAP_ANALYSIS_SOURCE in row.get("silicon_data_source", "")


def aiconfigurator_agg_options(row: dict[str, str], hardware: str, tensor_parallel: int) -> dict[str, Any]:
    """serve() knobs of an aggregated gap-analysis row's generated deployment on the llmsim device `hardware` at
    `tensor_parallel` GPUs (module docstring); {} for other rows."""
    if not from_gap_analysis(row) or row["mode"] != "agg":
        return {}
    bs, isl = _count(row["batch_size"]), int(row["isl"])
    if row["backend"] == "sglang":  # SGLang's own chunked prefill size on the GPU caps the prefill budget
        from ..hardware.spec import load_hardware
        from ..serving.engine_limits import engine_defaults

        chunk = int(engine_defaults("sglang", load_hardware(hardware), tensor_parallel)["max_num_batched_tokens"])
        options = {"max_num_seqs": bs, "max_num_batched_tokens": min(chunk, isl + TOKENS_BEYOND_ISL)}
        if row["backend_version"] not in SGLANG_TEMPLATES_BEFORE_MIXED_CHUNK:  # --enable-mixed-chunk
            options["mixed_batches"] = True
        return options
    return {"max_num_seqs": bs, "max_num_batched_tokens": bs + isl + TOKENS_BEYOND_ISL}


def aiconfigurator_engine_options(row: dict[str, str]) -> dict[str, Any]:
    """serve() or serve_disaggregated() knobs of a gap-analysis row's generated deployment in either mode, beyond
    the batch limits: TensorRT-LLM's KV cache share of the free memory (module docstring); {} for other rows."""
    if not from_gap_analysis(row) or row["backend"] != "trtllm":
        return {}
    return {"gpu_memory_utilization": TRTLLM_FREE_GPU_MEMORY_FRACTION}


def aiconfigurator_disagg_pools(row: dict[str, str]) -> dict[str, dict[str, Any]]:
    """serve_disaggregated's pool knobs of a disaggregated TensorRT-LLM or vLLM gap-analysis row's generated
    deployment (module docstring); {} for other rows."""
    if not from_gap_analysis(row) or row["mode"] != "disagg" or row["backend"] == "sglang":
        return {}
    prefill_bs, decode_bs = _count(row["prefill_batch_size"]), _count(row["decode_batch_size"])
    return {"prefill": {"max_num_seqs": prefill_bs, "max_num_batched_tokens": int(row["isl"]) + TOKENS_BEYOND_ISL},
            "decode": {"max_num_seqs": decode_bs, "max_num_batched_tokens": decode_bs}}
