"""End-to-end rows (category e2e_llm): one static batch through llmsim.simulate with the engine that ran the
row (mapping.ENGINES), compared on the source's headline metric (generated tokens/s in the source's scope) and,
where the row gives them, TTFT at batch 1 and the median per-token latency against TPOT. Each comparison also
carries the roofline prediction (engine "roofline" at the hardware file's achievable fractions, no measured
tables: llmsim before measured tables)."""

from __future__ import annotations

import re
from typing import Any

from ...analysis.simulate import SimulationResult, simulate
from ...errors import LlmsimError
from .mapping import (
    E2E_DTYPES,
    MODELS,
    TORCHAO_GEN_LEN,
    TORCHAO_PROMPT_LEN,
    engine_of,
    gpu_choice,
    host_options_of,
    overhead_of,
)
from .options import PredictOptions
from .results import Comparison, SkipError
from .rows import PublishedRow, as_int


def tensor_parallel(row: PublishedRow) -> int:
    """The TP degree; SkipError when the parallelism does not cover every GPU of the row."""
    match = re.search(r"TP(\d+)", row.parallelism)
    tp = int(match.group(1)) if match else 1
    gpus = row.gpu_count or 1
    if tp != gpus:
        raise SkipError(f"parallelism {row.parallelism!r} does not cover gpu_count {gpus}", "parallelism unclear")
    return tp


def e2e_lengths(row: PublishedRow, flags: set[str]) -> tuple[int, int]:
    """(prompt, generated) tokens; torchao's unstated lengths are its generate.py defaults (flag L)."""
    prompt, gen = row.input_tokens, row.output_tokens
    if prompt is not None and gen is not None:
        return prompt, gen
    if row.source_group == "torchao":
        flags.add("L")
        return TORCHAO_PROMPT_LEN, TORCHAO_GEN_LEN
    raise SkipError(f"prompt length not fixed ({row.input_len!r}); output {row.output_len or '?'} tokens",
                    "prompt length not fixed")


def e2e_batch(row: PublishedRow) -> int:
    """A fixed batch size; a load test with one concurrent request runs at batch 1."""
    text = row.batch_size.strip()
    if as_int(text) is not None:
        return int(text)
    if text == "1 concurrent request":
        return 1
    raise SkipError(f"no fixed batch size ({text!r}); continuous batching", "no fixed batch size")


def e2e_dtypes(row: PublishedRow) -> dict[str, str]:
    """llmsim's dtype options for the row's published weight dtype."""
    dtype = row.weight_dtype
    if dtype == "int8 dynamic act+weight":
        raise SkipError("int8 dynamic activation+weight quantization: the source flags it as pathological at bs=1 "
                        "(a slow unfused path), so the figure does not measure the hardware",
                        "pathological kernel path")
    if dtype not in E2E_DTYPES:
        raise SkipError(f"weight dtype {dtype!r} has no llmsim equivalent", "dtype not modelled")
    return dict(E2E_DTYPES[dtype])


def e2e_bound_note(row: PublishedRow, options: PredictOptions) -> str:
    """For skipped rows with an unknown prompt: llmsim's time per token with a 1-token prompt, a lower
    bound on a per-token latency that amortises the prefill."""
    try:
        model, _ = MODELS[row.model]
        hw = gpu_choice(row).hardware
        dtypes = e2e_dtypes(row)
        gen = row.output_tokens
        tp = tensor_parallel(row)
        engine = engine_of(row, options).engine
        if gen is None or row.metric != "median latency per generated token" or row.value is None:
            return ""
        result = simulate(model, options.hardware(hw), batch_size=1, prompt_len=1, gen_len=gen,
                          **options.simulate_options(tensor_parallel=tp, engine=engine, **host_options_of(row),
                                                     **dtypes))
    except (KeyError, SkipError, LlmsimError):
        return ""
    per_token_ms = 1e3 * result.e2e_s / gen
    return (f" (bound only: llmsim ({engine}) with a 1-token prompt gives {per_token_ms:.1f} ms/token on "
            f"{options.hardware_label(hw)} vs {row.value:.1f} measured)")


def _throughput(result: SimulationResult, scope: str) -> float:
    """Generated tokens/s in the source's scope. bs=1 "per user" equals the total; lmdeploy's "total (n GPU)"
    is the whole TP group, as is llmsim's throughput_tokens_per_s."""
    if "per GPU" in scope:
        return result.tokens_per_s_per_gpu
    if "per user" in scope:
        return result.throughput_tokens_per_s / result.batch_size
    return result.throughput_tokens_per_s


def predict_e2e(row: PublishedRow, options: PredictOptions) -> list[Comparison]:
    """The row's headline comparison, then its extra metrics; SkipError when it cannot be simulated."""
    flags: set[str] = set()
    if row.model not in MODELS:
        raise SkipError(f"model {row.model!r} not shipped (model_configs/ has no config for it)", "model not shipped")
    model, proxy = MODELS[row.model]
    if proxy:
        flags.add("M")
    gpu = gpu_choice(row)
    if gpu.flag:
        flags.add(gpu.flag)
    dtypes = e2e_dtypes(row)
    batch = e2e_batch(row)
    try:
        prompt, gen = e2e_lengths(row, flags)
    except SkipError as skip:
        raise SkipError(str(skip) + e2e_bound_note(row, options), skip.kind) from None
    tp = tensor_parallel(row)
    if row.metric not in ("decode throughput", "output throughput"):
        raise SkipError(f"metric {row.metric!r} not handled", "metric not handled")
    choice = engine_of(row, options)
    if choice.proxy:
        flags.add("P")
    overhead = overhead_of(row)
    kwargs = options.simulate_options(tensor_parallel=tp, engine=choice.engine, **host_options_of(row), **dtypes)
    # llmsim before measured tables: the roofline at the hardware file's achievable fractions
    roofline_kwargs = {**kwargs, "engine": "roofline", "efficiency": "achievable"}

    def run(hardware: str, run_kwargs: dict[str, Any] = kwargs) -> SimulationResult:
        return simulate(model, options.hardware(hardware), batch_size=batch, prompt_len=prompt, gen_len=gen,
                        **run_kwargs)

    main = run(gpu.hardware)
    alt = run(gpu.alternative) if gpu.alternative else None
    base = run(gpu.hardware, roofline_kwargs)
    if not main.memory.fits:
        flags.add("Q")
    dtype_label = "/".join(str(v) for v in dtypes.values())
    settings = f"bs {batch}, in {prompt}, out {gen}, TP{tp}, {dtype_label}, {overhead}"
    common = dict(row_id=row.id, source=row.source_group, category=row.category, model=model,
                  hardware=options.hardware_label(gpu.hardware), settings=settings, flags=frozenset(flags),
                  engine=str(kwargs["engine"]), timing=_timing(main))
    scope = row.throughput_scope
    out = [Comparison(metric=f"throughput ({scope})", measured=row.measured(),
                      predicted=_throughput(main, scope), unit="tok/s",
                      alt_predicted=_throughput(alt, scope) if alt else None,
                      roofline_predicted=_throughput(base, scope), **common)]

    # Extra metrics of the same row: TTFT at batch 1 (at batch > 1 lmdeploy's FTL includes queueing
    # behind other requests' prefills) and the median per-token latency against TPOT.
    if row.ttft_ms is not None and batch == 1:
        out.append(Comparison(metric="TTFT", measured=row.ttft_ms, predicted=1e3 * main.ttft_s, unit="ms",
                              primary=False, alt_predicted=1e3 * alt.ttft_s if alt else None,
                              roofline_predicted=1e3 * base.ttft_s, **common))
    if row.per_token_latency_ms is not None:
        out.append(Comparison(metric="per-token latency (p50)", measured=row.per_token_latency_ms,
                              predicted=1e3 * main.tpot_s, unit="ms", primary=False,
                              alt_predicted=1e3 * alt.tpot_s if alt else None,
                              roofline_predicted=1e3 * base.tpot_s, **common))
    return out


def _timing(result: SimulationResult) -> str:
    """Which measured tables timed the simulation's ops ("gemm, prefill_attention, ..."), or "roofline"."""
    return "tables: " + ", ".join(result.measured_tables) if result.measured_tables else "roofline"
