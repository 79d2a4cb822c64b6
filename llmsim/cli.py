"""The `llmsim` command. Exit codes: 0 ok, 1 a failed run, 2 a usage error or bad input."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .cli_args import int_at_least as _int_at_least
from .errors import LlmsimError

_COST_OPTIONS = {
    "attention": ("math", "flash", "sdpa_math"),
    "logits": ("all", "last"),
    "mla": ("expand", "absorb"),
    "fusion": ("none", "elementwise", "full", "eager"),
    "kv_cache": ("paged", "concat"),
    "linear_attention_kernel": ("fused", "fla"),
}
_EXEC_OPTIONS = {
    "efficiency": ("achievable", "peak"),
    "overhead": ("graph", "eager", "none"),
    "overlap": ("max", "sum"),
}


def _dtype_arg(text: str) -> str:
    """--weight-dtype / --activation-dtype / --kv-dtype: a dtype name or alias (bf16, fp16), as the Python API
    takes it; an unknown name is left for argparse's choices to refuse."""
    from .dtypes import canonical_dtype

    try:
        return canonical_dtype(text)
    except LlmsimError:
        return text


_positive_int = _int_at_least(1)
_non_negative_int = _int_at_least(0)


_MAX_PER_OCTAVE = 64


def _add_figure_out(parser: argparse.ArgumentParser, flag: str, **kwargs: Any) -> None:
    """A figure file to write (--out, --plot): every one is checked before the work by _check_figures (a known
    image suffix, an existing folder, no file there yet), so no command can forget it."""
    parser.add_argument(flag, **kwargs)
    parser.set_defaults(figure_flags=(*(parser.get_default("figure_flags") or ()), flag))


def _int_list(text: str) -> list[int]:
    """'1,2,4' or '1:1024' (powers of two from 1 to 1024) or '1:1024:4' (4 points per octave)."""
    try:
        if ":" in text:
            parts = [int(p) for p in text.split(":")]
            from .analysis.regime import geometric_values

            start, stop, per_octave = (*parts, 1) if len(parts) == 2 else parts  # 4 parts: a ValueError
            if start < 1 or stop < start or not 1 <= per_octave <= _MAX_PER_OCTAVE:
                raise ValueError
            return list(geometric_values(start, stop, per_octave))
        values = [int(p) for p in text.split(",")]  # an empty item ('1,,2') is a typo: refused
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give integers like 1,2,4 or a geometric range START:STOP[:POINTS_PER_OCTAVE] like 1:1024 "
            f"or 1:1024:4 (1 <= START <= STOP, 1 <= POINTS_PER_OCTAVE <= {_MAX_PER_OCTAVE})"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: values must be integers >= 1")
    return values


def _add_model_options(parser: argparse.ArgumentParser, hardware: bool = True, parallel: bool = True) -> None:
    """The model, the device, the cost options and (parallel=True) one tensor/expert-parallel split: every
    command that predicts one deployment takes the same ones, as the Python API does."""
    parser.add_argument("model", help="a shipped model name (see `llmsim models`), a config.json or its folder")
    if hardware:
        parser.add_argument("--hardware", "--hw", required=True,
                            help="a shipped device (see `llmsim hardware`) or a hardware .toml file")
    if parallel:
        parser.add_argument("--tensor-parallel", type=_positive_int, help="GPUs each layer is split over (default 1)")
        parser.add_argument("--expert-parallel", type=_positive_int,
                            help="MoE models: GPUs the experts are spread over, a divisor of --tensor-parallel "
                            "(default 1)")
    _add_cost_options(parser)


def _add_cost_options(parser: argparse.ArgumentParser) -> None:
    """The cost model, engine and execution options of a prediction."""
    from .cost.workload import CostOptions

    group = parser.add_argument_group("cost model options (see CostOptions)")
    for name, choices in _COST_OPTIONS.items():
        flags = [f"--{name.replace('_', '-')}"] + ([f"--{name}"] if "_" in name else [])  # --kv-cache, --kv_cache
        group.add_argument(*flags, dest=name, choices=choices,
                           help=f"default: {CostOptions.model_fields[name].default}")
    from .dtypes import DTYPE_BYTES

    for name, default in (("weight-dtype", "the config's dtype (a quantized checkpoint: its formats)"),
                          ("activation-dtype", "the config's dtype"), ("kv-dtype", "--activation-dtype's")):
        group.add_argument(f"--{name}", type=_dtype_arg, choices=tuple(DTYPE_BYTES),
                           help=f"default: {default} (aliases: bf16, fp16, fp32)")
    group.add_argument("--fused-projections", dest="fused_projections", action=argparse.BooleanOptionalAction,
                       default=None, help="one GEMM for Q, K, V and one for gate and up (default: the engine's)")
    group = parser.add_argument_group("engine and execution options")
    from .engines.catalog import ENGINE_NAMES

    group.add_argument("--engine", choices=ENGINE_NAMES,
                       help="what runs the model: its kernels, overheads and measured tables (default: vllm on a "
                       "GPU, transformers on a CPU; `llmsim engines` lists them)")
    group.add_argument("--tables", help="measured kernel tables: a set name (vllm, sglang, trtllm) or a folder "
                       "written by `llmsim calibrate --from aiconfigurator` (default: the engine's)")
    for name, choices in _EXEC_OPTIONS.items():
        group.add_argument(f"--{name}", choices=choices, help=f"default: the engine's, else {choices[0]}")
    group.add_argument("--pipeline-decode", dest="pipeline_decode", choices=("steady", "lockstep"),
                       help="decode under --pipeline-parallel: micro-batches kept in flight across steps (steady, "
                       "default, as serving engines run it) or one batch filling the pipeline every step")
    group.add_argument("--fp8-scales", dest="fp8_scales", choices=("static", "dynamic"),
                       help="per-tensor fp8 GEMMs: static activation scales (fp8 checkpoints; default but for "
                       "torch-compile) or computed per call (torchao float8, fp8 runs of 16-bit checkpoints)")
    group.add_argument("--mxfp4-moe-kernel", dest="mxfp4_moe_kernel", choices=("default", "marlin", "mxfp8"),
                       help="MXFP4 experts (gpt-oss): the engine's default fused-MoE kernel, vLLM's Marlin kernel "
                       "(VLLM_MXFP4_USE_MARLIN=1) or MXFP8 activations on FlashInfer's TRTLLM-gen kernel "
                       "(VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1), from the measured tables")
    group.add_argument("--fp8-block-moe-kernel", dest="fp8_block_moe_kernel",
                       choices=("default", "trtllm-gen", "deepep-normal", "deepep-low-latency"),
                       help="block-scaled fp8 experts (DeepSeek): the engine's default fused-MoE kernel, "
                       "FlashInfer's TRTLLM-gen kernel (TensorRT-LLM's moe_config backend TRTLLM; Blackwell), or "
                       "SGLang's DeepEP experts (--moe-a2a-backend deepep) in normal (prefill) or low-latency "
                       "(decode) mode, from the measured tables")
    group.add_argument("--moe-routing", dest="moe_routing", choices=("model", "balanced", "power_law_1.01",
                                                                     "power_law_1.2"),
                       help="the expert load the measured MoE tables are read at: the model's (default: a power law "
                       "of exponent 1.01 for DeepSeek-style routers, 1.2 for the others, as aiconfigurator reads "
                       "them), balanced (every expert loaded evenly, as expert-parallel load balancing runs) or a "
                       "power law's")
    group.add_argument("--clock", choices=("sustained", "boost"),
                       help="a long prefill pass's compute-bound work at the device's sustained, power-limited clock "
                       "past the onset (sustained, default; the hardware file's [sustained] figures) or every kernel "
                       "at the boost clock short benchmarks time it at")
    group.add_argument("--step-host-s", dest="step_host_s", type=float,
                       help="the engine's host work per step that the GPU waits for, in s (default: the engine's; "
                       "0 switches it off; refused with --overhead none, which charges no host time; "
                       "`llmsim engines` gives each engine's figure and source)")
    group.add_argument("--prefill-dispatch-s", dest="prefill_dispatch_s", type=float,
                       help="host time per kernel of a prefill pass the engine runs without a CUDA graph, in s "
                       "(default: the engine's; 0: prefill replays graphs as decode does; only with --overhead "
                       "graph, the default: an eager pass already pays PyTorch's dispatch per kernel)")
    group.add_argument("--prefill-graph-tokens", dest="prefill_graph_tokens", type=int,
                       help="prefill passes of at most this many tokens replay CUDA graphs all the same (default: "
                       "the engine's: vLLM 512, its largest captured size; 0: none)")


def _options(args: argparse.Namespace) -> dict[str, Any]:
    keys = [*_COST_OPTIONS, *_EXEC_OPTIONS, "weight_dtype", "activation_dtype", "kv_dtype", "tensor_parallel",
            "expert_parallel", "fused_projections", "engine", "tables", "step_host_s", "prefill_dispatch_s",
            "prefill_graph_tokens", "pipeline_decode", "fp8_scales", "mxfp4_moe_kernel", "fp8_block_moe_kernel",
            "clock", "moe_routing"]
    return {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}


def _regime_parser(sub: Any, name: str, help_text: str, vary: str) -> argparse.ArgumentParser:
    """A subcommand over one phase and one varied quantity, with the others fixed."""
    p = sub.add_parser(name, help=help_text)
    _add_model_options(p)
    p.add_argument("--phase", choices=("prefill", "decode"), default="decode",
                   help="the phase: one prefill pass, or one decode step (default: decode)")
    p.add_argument("--vary", choices=("batch_size", "seq_len", "kv_len"), default=vary,
                   help=f"the quantity that grows (default: {vary}; seq_len is a prefill's, kv_len a decode step's)")
    p.add_argument("--batch-size", type=_positive_int, help="sequences, when not varied (default 1)")
    p.add_argument("--seq-len", type=_positive_int, help="prefill: tokens per sequence, when not varied (default 512)")
    p.add_argument("--kv-len", type=_non_negative_int,
                   help="decode: tokens already cached, when not varied (default 512)")
    p.add_argument("--json", action="store_true", help="the result as JSON")
    return p


def _speculative_arg(text: str) -> dict[str, Any]:
    """--speculative METHOD:K:ACCEPTANCE[:DRAFT_MODEL] (checked further by serve())."""
    parts = text.split(":", 3)
    try:
        spec: dict[str, Any] = {"method": parts[0], "num_tokens": int(parts[1]), "acceptance_rate": float(parts[2])}
    except (IndexError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r}: write METHOD:K:ACCEPTANCE[:DRAFT_MODEL], e.g. "
                                         f"ngram:4:0.7") from None
    if len(parts) == 4:
        spec["draft_model"] = parts[3]
    return spec


def _pool_arg(text: str) -> dict[str, int]:
    """--prefill-pool / --decode-pool: REPLICASxTP, e.g. 2x4."""
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) >= 1 for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r}: write REPLICASxTP with two integers >= 1, e.g. 2x4")
    return {"replicas": int(parts[0]), "tensor_parallel": int(parts[1])}


def _shape_arg(text: str) -> tuple[int, ...]:
    """--input-shape: comma-separated positive integers, e.g. 8,3,224,224."""
    parts = text.replace("x", ",").split(",")
    if not all(p.strip().isdigit() and int(p) >= 1 for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r}: write positive integers separated by commas, e.g. 8,3,224,224")
    return tuple(int(p) for p in parts)


def _length_arg(text: str | None) -> int | str | None:
    """--prompt-len / --gen-len: an integer, else a distribution string (checked by serve()); None: not given."""
    if text is None:
        return None
    return int(text) if text.strip().lstrip("-").isdigit() else text


def _install_hint(exc: ImportError) -> str:
    """What to install for a missing module: torch is the validate extra, pyarrow and aiconfigurator_core the
    aiconfigurator extra; anything else is a core dependency, missing from a broken install."""
    module = (exc.name or "").split(".")[0]
    if module == "torch":
        return "calibrate, validate and analyze need torch: pip install 'llmsim[validate]'"
    if module in ("pyarrow", "aiconfigurator_core"):
        return "the importer needs: pip install 'llmsim[aiconfigurator]'"
    return f"{module or 'a dependency'} is a core dependency: reinstall llmsim (pip install llmsim)"


class _Parser(argparse.ArgumentParser):
    """argparse with a usage error on one line (the subcommand's --help has the usage), as llmsim's own errors."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"llmsim: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(
        prog="llmsim",
        description="Predict LLM inference latency, throughput and memory on a declared device, and why.",
    )
    parser.add_argument("--version", action="version", version=f"llmsim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("simulate", help="TTFT, TPOT, throughput, memory and bounds of one workload")
    _add_model_options(p)
    p.add_argument("--batch-size", type=_positive_int, default=1)
    p.add_argument("--prompt-len", type=_positive_int, default=512)
    p.add_argument("--gen-len", type=_positive_int, default=128)
    p.add_argument("--pipeline-parallel", type=_positive_int, default=1,
                   help="pipeline stages: the layers split in consecutive groups over this many GPUs (default 1)")
    p.add_argument("--num-microbatches", type=_positive_int,
                   help="with --pipeline-parallel: micro-batches the batch is cut into (default: the largest "
                   "divisor of the batch up to the stages)")
    p.add_argument("--data-parallel", type=_positive_int, default=1,
                   help="replicas, each serving --batch-size sequences of its own (default 1); throughput counts "
                   "them all")
    p.add_argument("--ops", action="store_true", help="also print the per-op table")
    p.add_argument("--per-layer", action="store_true",
                   help="also print one layer per layer group, per op: prefill and one decode step")
    p.add_argument("--step", type=_positive_int,
                   help="the decode step of --per-layer: 1 .. gen-len - 1, kv_len = prompt-len + step - 1 "
                   "(default: the middle step)")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")

    p = sub.add_parser("serve", help="an engine under load: continuous batching, request rate or concurrency, "
                       "latency percentiles")
    _add_model_options(p)
    load = p.add_mutually_exclusive_group(required=True)
    load.add_argument("--request-rate", type=float, help="requests per second (open loop)")
    load.add_argument("--concurrency", type=_positive_int, help="clients in a closed loop")
    p.add_argument("--prompt-len", default=None, help="an integer or uniform:LOW:HIGH, normal:MEAN:STD, "
                   "lognormal:MEAN:STD (default: 512)")
    p.add_argument("--gen-len", default=None, help="as --prompt-len (default: 128)")
    p.add_argument("--lengths-csv", help="a CSV of prompt_len,gen_len (or input_len,output_len) pairs")
    p.add_argument("--num-requests", type=_positive_int, help="default 1000, or each row of --lengths-csv once")
    p.add_argument("--arrival", choices=("poisson", "constant", "gamma"), default="poisson")
    p.add_argument("--burstiness", type=float, default=1.0, help="gamma arrivals' shape (1: Poisson)")
    p.add_argument("--ramp-s", type=float, default=0.0, help="closed loop: clients start evenly over this many s")
    p.add_argument("--seed", type=_non_negative_int, default=0)
    p.add_argument("--pipeline-parallel", type=_positive_int, default=1,
                   help="pipeline stages (tensor-parallel GPUs each), micro-batches in flight across steps")
    p.add_argument("--attention-data-parallel", type=_positive_int, default=1,
                   help="MoE models: attention data-parallel ranks over the --tensor-parallel GPUs (SGLang "
                   "--enable-dp-attention, TensorRT-LLM enable_attention_dp), the experts over all of them")
    p.add_argument("--max-num-seqs", type=_positive_int, help="default: the engine's")
    p.add_argument("--max-num-batched-tokens", type=_positive_int, help="default: the engine's")
    p.add_argument("--gpu-memory-utilization", type=float, help="default: the engine's")
    p.add_argument("--block-size", type=_positive_int, help="default: the engine's")
    p.add_argument("--shared-prefix-len", type=_non_negative_int, default=0,
                   help="every prompt starts with one of --prefix-groups shared prefixes of this many tokens")
    p.add_argument("--prefix-groups", type=_positive_int, default=1)
    p.add_argument("--prefix-caching", action=argparse.BooleanOptionalAction, default=True,
                   help="compute each shared prefix once (default: on, as the engines run)")
    p.add_argument("--mixed-batches", action=argparse.BooleanOptionalAction, default=None,
                   help="prefill chunks share steps with decodes (default: the engine's; --no-mixed-batches: prefill "
                   "first, as SGLang by default; --mixed-batches with engine sglang: its --enable-mixed-chunk)")
    p.add_argument("--chunked-prefill", action=argparse.BooleanOptionalAction, default=None,
                   help="a prompt longer than the step's token budget is prefilled in chunks over steps (default: "
                   "the engine's; --no-chunked-prefill: a new prompt runs whole or waits, TensorRT-LLM's default)")
    p.add_argument("--reserve-output", action=argparse.BooleanOptionalAction, default=None,
                   help="a request starts only when the KV blocks of its whole prompt and output fit, so none is "
                   "preempted (default: the engine's; TensorRT-LLM's GUARANTEED_NO_EVICT reserves, vLLM and SGLang "
                   "do not)")
    p.add_argument("--async-scheduling", action=argparse.BooleanOptionalAction, default=None,
                   help="each step is decided while the one before it runs, so a request arriving mid-step joins the "
                   "step after the next (default: on for vLLM, SGLang and TensorRT-LLM, as they run)")
    p.add_argument("--scheduler-recv-interval", type=_positive_int, default=None,
                   help="SGLang's --scheduler-recv-interval N: while requests run, new ones are taken in only after "
                   "every N decode steps or a step that prefilled (default 1: before every step)")
    p.add_argument("--batch-wait-timeout-iters", type=_non_negative_int, default=0,
                   help="TensorRT-LLM's batch waiting: while requests decode, new prompts wait up to N steps ... "
                   "(default 0: off; it needs --batch-wait-max-tokens-ratio too: either alone does nothing)")
    p.add_argument("--batch-wait-max-tokens-ratio", type=float, default=0.0,
                   help="... or until they and the decodes reach this share of --max-num-batched-tokens "
                   "(TensorRT-LLM's batch_wait_max_tokens_ratio; default 0: off)")
    p.add_argument("--attention-dp-balance", action=argparse.BooleanOptionalAction, default=False,
                   help="TensorRT-LLM's attention_dp_config enable_balance (with --attention-data-parallel): while "
                   "the ranks decode, a new prompt waits until every rank holds one or the counter times out "
                   "(default: off, as TensorRT-LLM)")
    p.add_argument("--attention-dp-timeout-iters", type=_non_negative_int, default=50,
                   help="attention_dp_config timeout_iters (default 50, TensorRT-LLM's)")
    p.add_argument("--attention-dp-batching-wait-iters", type=_non_negative_int, default=10,
                   help="attention_dp_config batching_wait_iters (default 10, TensorRT-LLM's)")
    p.add_argument("--frontend-s", dest="frontend_s", type=float, default=None,
                   help="the serving frontend's time per request (HTTP, tokenization, hand-offs, streaming) before "
                   "the engine sees it, one request at a time (requests sent together queue), in s (default: the "
                   "engine's: vLLM 0.004, SGLang 0.0069, TensorRT-LLM 0; 0 switches it off)")
    p.add_argument("--speculative", type=_speculative_arg, help="METHOD:K:ACCEPTANCE[:DRAFT_MODEL], e.g. "
                   "ngram:4:0.7, mtp:1:0.8 or draft:4:0.7:llama-3.2-1b")
    p.add_argument("--prefill-pool", type=_pool_arg, help="disaggregated: REPLICASxTP prefill instances, e.g. 2x4")
    p.add_argument("--decode-pool", type=_pool_arg, help="disaggregated: REPLICASxTP decode instances, e.g. 1x8")
    p.add_argument("--kv-transfer-bytes-per-s", type=float, help="disaggregated: per-GPU link (default: the "
                   "device's NVLink bandwidth when both pools fit one node, else its inter-node bandwidth)")
    _add_figure_out(p, "--plot", help="write latency percentiles and batch occupancy over time to this PNG")
    for name, what in (("ttft", "time to first token"), ("tpot", "time per output token"),
                       ("e2e", "end-to-end latency")):
        p.add_argument(f"--{name}-slo-s", type=float, default=None,
                       help=f"a service-level objective on each request's {what} (seconds): prints the goodput, the "
                       "requests/s that met every objective given")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")

    p = sub.add_parser("sweep", help="simulate a grid of batch sizes and lengths in one pass")
    _add_model_options(p)
    p.add_argument("--batch-size", type=_int_list, default=[1], help="e.g. 1,2,4 or 1:1024")
    p.add_argument("--prompt-len", type=_int_list, default=[512])
    p.add_argument("--gen-len", type=_int_list, default=[128])
    p.add_argument("--csv", help="write every point to this CSV file (- : to standard output, instead of the table)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")

    p = _regime_parser(sub, "crossover", "where a phase flips bound as one variable grows", vary="batch_size")
    p.add_argument("--lo", type=float, help="the searched range's low end (default 1; kv_len: 0)")
    p.add_argument("--hi", type=float, help="its high end (default: 4096 for batch_size, else the model's context)")

    p = _regime_parser(sub, "limit", "which limit (compute, bandwidth, capacity, slo) is met first", vary="kv_len")
    p.add_argument("--tpot-slo-s", type=float)
    p.add_argument("--ttft-slo-s", type=float)

    p = sub.add_parser("roofline", help="the device's roofline with every op of both phases on it (a figure: "
                       "--out roofline.png by default; .pdf or .svg too)")
    _add_model_options(p)
    p.add_argument("--batch-size", type=_positive_int, default=1, help="sequences (default 1)")
    p.add_argument("--prompt-len", type=_positive_int, default=512, help="prompt tokens (default 512)")
    p.add_argument("--gen-len", type=_positive_int, default=128, help="generated tokens (default 128)")
    _add_figure_out(p, "--out", default="roofline.png")

    p = sub.add_parser("plot", help="a sweep chart with the bound bands, crossover and memory wall (PNG)")
    _add_model_options(p)
    p.add_argument("--vary", choices=("batch_size", "prompt_len"), default="batch_size")
    p.add_argument("--values", type=_int_list, default=None, help="e.g. 1:1024:4 (default: a log range)")
    p.add_argument("--metric", choices=("tpot", "ttft", "throughput"), default="tpot")
    p.add_argument("--batch-size", type=_positive_int, default=None,
                   help="the batch size when --vary prompt_len (default 1)")
    p.add_argument("--prompt-len", type=_positive_int, default=None,
                   help="the prompt length when --vary batch_size (default 1024)")
    p.add_argument("--gen-len", type=_positive_int, default=128)
    _add_figure_out(p, "--out", default="sweep.png")

    p = sub.add_parser("calibrate", help="measure this machine's ceilings into a hardware file (needs torch), or "
                       "import published measured kernel tables (--from aiconfigurator)")
    p.add_argument("--from", dest="source", choices=("this-machine", "aiconfigurator"), default="this-machine",
                   help="this-machine (default): time kernels here; aiconfigurator: write llmsim kernel tables "
                   "from an installed aiconfigurator-core (pip install 'llmsim[aiconfigurator]')")
    p.add_argument("--system", default=None, help="with --from aiconfigurator: its system name, e.g. h100_sxm")
    p.add_argument("--engine", default=None, choices=("vllm", "sglang", "trtllm"),
                   help="with --from aiconfigurator: whose measured tables to import")
    p.add_argument("--full", action="store_true",
                   help="with --from aiconfigurator: keep every measured point and the MoE tables' balanced rows "
                   "(default: the compact shipped grid)")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None, help="the device to measure (default: cpu)")
    p.add_argument("--dtypes", default=None,
                   help="comma-separated dtypes whose matmul rates and tables are measured (default: float32,bfloat16)")
    p.add_argument("--quick", action="store_true", help="fewer sizes and repeats (seconds instead of minutes): a "
                   "smoke test; validate against a full calibration")
    p.add_argument("--threads", type=_positive_int, default=None,
                   help="torch CPU threads while measuring (default: 1, the steadiest on a shared machine; see "
                   "validation/README.md)")
    p.add_argument("--name", default=None, help="the hardware file's name (default: cpu-calibrated or "
                   "cuda-calibrated; validate records it, so two machines' files read apart)")
    p.add_argument("--out", required=True, help="hardware .toml file to write, or with --from aiconfigurator the "
                   "folder of kernel tables (kernels/<device>/<engine>; an existing file is never overwritten)")

    p = sub.add_parser("validate", help="run the real model in PyTorch and compare with the prediction",
                       description="Build the real transformers model from the config (random weights, nothing "
                       "downloaded), time prefill and decode, and compare with llmsim's prediction, made with the "
                       "cost options that match eager transformers (see llmsim.validation.validate).")
    p.add_argument("model", help="a shipped model name (see `llmsim models`), a config.json or its folder")
    p.add_argument("--hardware", "--hw", required=True,
                   help="a shipped device (see `llmsim hardware`) or a hardware .toml file (`llmsim calibrate`)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the model runs (default: cpu)")
    p.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32",
                   help="weights, activations and KV cache (default: float32)")
    p.add_argument("--overhead", choices=("eager", "graph", "none"), default="eager",
                   help="eager: eager PyTorch per op; graph: CUDA-graph replay of a static cache (cuda only); "
                   "default: eager")
    p.add_argument("--batch-sizes", type=_int_list, default=[1], help="e.g. 1,8,32 or 1:32 (default: 1)")
    p.add_argument("--seq-lens", type=_int_list, default=[32], help="prefill lengths, e.g. 128,1024 (default: 32)")
    p.add_argument("--kv-lens", type=_int_list, default=[32],
                   help="tokens already cached for each decode step, e.g. 128,4096 (default: 32)")
    p.add_argument("--num-layers", type=_positive_int, help="keep only this many layers (the prediction too)")
    p.add_argument("--repeats", type=_positive_int, default=5, help="timed runs per case; the median is kept")
    p.add_argument("--warmup", type=_non_negative_int, default=2, help="untimed runs before them")
    p.add_argument("--threads", type=_positive_int,
                   help="torch CPU threads while measuring (default: the count a calibrated hardware file records, "
                   "1 from `llmsim calibrate`; else torch's)")
    p.add_argument("--results", help="JSON-lines file: each case appended; reruns resume")
    p.add_argument("--profile", action="store_true", help="split measured time by op class (torch.profiler)")

    p = sub.add_parser("plan", help="GPUs, tensor/pipeline split and batch that meet latency targets")
    _add_model_options(p, parallel=False)  # searched: lists
    p.add_argument("--prompt-len", default="2048", help="an integer; with --request-rate also uniform:LOW:HIGH, "
                   "normal:MEAN:STD or lognormal:MEAN:STD (as serve)")
    p.add_argument("--gen-len", default="256", help="as --prompt-len")
    p.add_argument("--ttft-slo-s", type=float, help="TTFT objective, s (static plan: of the batch's prefill; "
                   "serving mode: at --percentile)")
    p.add_argument("--tpot-slo-s", type=float, help="TPOT objective, s (as --ttft-slo-s)")
    p.add_argument("--target-tokens-per-s", type=float, help="static plan: generated tokens/s wanted in all; the "
                   "replicas needed are counted")
    p.add_argument("--request-rate", type=float, help="serving mode: replicas and shape for this many requests/s "
                   "within p99 TTFT/TPOT objectives (llmsim.plan_serving)")
    p.add_argument("--percentile", type=int, help="serving mode: the objectives' percentile (default 99)")
    p.add_argument("--disaggregated", action="store_true", help="serving mode: also size prefill and decode pools")
    p.add_argument("--max-num-seqs", type=_int_list, help="serving mode: the engine's max_num_seqs searched, e.g. "
                   "64,256 (the default)")
    p.add_argument("--max-num-batched-tokens", type=_positive_int, help="serving mode: the engine's token budget "
                   "per step (default: the engine's)")
    p.add_argument("--gpu-memory-utilization", type=float, help="serving mode: the engine's memory share (default: "
                   "the engine's)")
    p.add_argument("--chunked-prefill", action=argparse.BooleanOptionalAction, default=None,
                   help="serving mode: prefill long prompts in chunks (default: the engine's)")
    p.add_argument("--max-gpus", type=_positive_int, default=64,
                   help="GPUs one replica may use (default 64; replicas for --target-tokens-per-s come on top)")
    p.add_argument("--usd-per-gpu-hour", type=float, help="price per GPU-hour for the USD columns (default: the "
                   "hardware file's, where it has one)")
    p.add_argument("--batch-sizes", type=_int_list, help="batch sizes searched, e.g. 1,8,64 or 1:1024 (default: "
                   "powers of two 1..1024)")
    p.add_argument("--tensor-parallel", type=_int_list, help="tensor-parallel degrees searched, e.g. 1,2,4,8 "
                   "(default: powers of two up to 16 and --max-gpus)")
    p.add_argument("--pipeline-parallel", type=_int_list, help="pipeline-parallel degrees searched (default: "
                   "powers of two up to 8 and --max-gpus)")
    p.add_argument("--expert-parallel", type=_positive_int, help="expert-parallel degree of every split (a "
                   "divisor of its tensor-parallel degree; MoE models)")
    _add_figure_out(p, "--out", help="also write the Pareto front plot (PNG)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("profile", help="a measured profile's kernels on the roofline: time, FLOPs, bytes, bound and "
                       "why; beside a prediction with --model",
                       description="Read a torch.profiler Chrome trace (JSON), an `ncu --csv` export, an Nsight "
                       "Compute .ncu-rep report (pip install 'llmsim[ncu]') or an `nsys stats --format csv` report "
                       "(cuda_gpu_kern_sum, cuda_gpu_trace); print its kernels and write the "
                       "roofline plot. See docs/profiling.md.")
    p.add_argument("path", help="the export to read")
    p.add_argument("--hardware", "--hw", required=True,
                   help="the device it ran on: a shipped device (see `llmsim hardware`) or a hardware .toml file")
    p.add_argument("--model", help="also compare with llmsim's prediction for this model (shipped name or config)")
    p.add_argument("--batch-size", type=_positive_int, default=1, help="with --model: sequences (default: 1)")
    p.add_argument("--prompt-len", type=_positive_int, default=512,
                   help="with --model: prompt tokens (prefill) or tokens already cached (one decode step) "
                   "(default: 512; give the profiled run's)")
    p.add_argument("--phase", choices=("prefill", "decode"), default="prefill",
                   help="what the profile ran: one prefill, or one decode step (default: prefill)")
    p.add_argument("--top", type=_positive_int, default=30, help="kernel rows to print (default: 30)")
    _add_figure_out(p, "--out", default=None, help="roofline plot to write (default: <path stem>-roofline.png "
                    "in the working folder, numbered -2, -3, ... past one already there)")
    _add_cost_options(p)

    from .cli_whatif import add_parsers

    add_parsers(sub, _add_model_options, _positive_int)

    p = sub.add_parser("analyze", help="any PyTorch module traced on the meta device: time, bound and the "
                       "kernels by module (needs torch)",
                       description="Trace a module's forward on the meta device (nothing computed) and time every "
                       "aten op on the device's roofline. MODEL: hf:vit, hf:resnet or hf:convnext (transformers' "
                       "own vision models from their config defaults), diffusers:unet-sd15, diffusers:vae-sd15, "
                       "diffusers:sd3-transformer or diffusers:flux (a denoising pipeline from shipped configs: per "
                       "step and whole; needs diffusers), or FILE.py:FUNCTION returning "
                       "(module, example_inputs) or a module (then --input-shape).")
    p.add_argument("model", help="hf:vit | hf:resnet | hf:convnext | diffusers:unet-sd15 | diffusers:vae-sd15 | "
                   "diffusers:sd3-transformer | diffusers:flux | FILE.py:FUNCTION")
    p.add_argument("--hardware", "--hw", default="h100-sxm", help="a shipped device or a hardware .toml file")
    p.add_argument("--batch-size", type=_positive_int, default=1, help="images per batch (hf: models)")
    p.add_argument("--image-size", type=_positive_int, default=224, help="image height and width (hf: models)")
    p.add_argument("--latent", type=_positive_int, default=None,
                   help="latent height and width of diffusers: models (image pixels / 8; default: the model's, "
                   "SD 1.5 64, SD3 and Flux 128)")
    p.add_argument("--steps", type=_positive_int, default=None,
                   help="denoising steps of diffusers: models (default: the pipeline's, SD 1.5 50, SD3 28, Flux 4)")
    p.add_argument("--cfg", action=argparse.BooleanOptionalAction, default=None,
                   help="classifier-free guidance: the denoiser runs on 2 x batch latents (default: on for SD 1.5 "
                   "and SD3, off for FLUX.1-schnell)")
    p.add_argument("--input-shape", type=_shape_arg, default=None,
                   help="shape of the one input of a FILE.py:FUNCTION that returns only a module, e.g. 8,3,224,224")
    p.add_argument("--dtype", default="bfloat16", help="float32, bfloat16 or float16 (default: bfloat16)")
    p.add_argument("--autocast", default=None, metavar="DTYPE",
                   help="float16 or bfloat16: trace under CUDA autocast to it over weights in --dtype (mixed "
                   "precision, torch.amp.autocast; usually with --dtype float32)")
    p.add_argument("--engine", default="torch-compile", choices=("torch-compile", "transformers", "roofline"))
    p.add_argument("--top", type=_positive_int, default=20, help="kernel rows to print (default: 20)")
    p.add_argument("--by-module", type=_positive_int, default=None, metavar="DEPTH",
                   help="also print time per module path cut to DEPTH parts")
    _add_figure_out(p, "--out", default=None,
                    help="also write the roofline plot of the kernels here (.png/.pdf/.svg)")

    p = sub.add_parser("models", help="the shipped models (or the ones named: shipped names, config.json paths)")
    p.add_argument("names", nargs="*", help="shipped model names or config.json files/folders (default: every "
                   "shipped model)")
    p.add_argument("--json", action="store_true", help="one JSON object per model instead of the table")
    p = sub.add_parser("hardware", help="the shipped devices (or the ones named: shipped names, .toml files)")
    p.add_argument("names", nargs="*", help="shipped device names or hardware .toml files (default: every shipped "
                   "device)")
    p.add_argument("--json", action="store_true", help="one JSON object per device instead of the table")
    p = sub.add_parser("engines", help="the engines, what they run and the devices with measured tables for them")
    p.add_argument("--json", action="store_true", help="one JSON object per engine instead of the text")
    return parser


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=_json_default))


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "model_dump"):
        return value.model_dump()
    return str(value)


def _table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(none)"
    keys = list(rows[0])
    cells = [["-" if r[k] is None else str(r[k]) for k in keys] for r in rows]  # None: not stated
    widths = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    lines = ["  ".join(k.ljust(w) for k, w in zip(keys, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    from .analysis import regime
    from .analysis.simulate import simulate
    from .cost.parameters import model_summary_row
    from .hardware.spec import load_hardware
    from .models.loading import load_model
    from .shipped import shipped_hardware_names, shipped_model_names

    for flag in getattr(args, "figure_flags", ()):
        _check_out(getattr(args, flag.lstrip("-")), flag)
    if args.command == "analyze":
        return _analyze(args)
    if args.command == "models":  # a listing: a dtype the config does not state is marked in the table, not warned
        import warnings

        from .errors import AssumptionWarning

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AssumptionWarning)
            rows = [model_summary_row(load_model(name)) for name in args.names or shipped_model_names()]
        print(json.dumps(rows, indent=2, default=_json_default) if args.json else _table(rows))
        return 0
    if args.command == "engines":
        from .engines.catalog import ENGINES
        from .hardware.measured import shipped_kernel_sets

        sets = shipped_kernel_sets()
        rows = []
        for engine in ENGINES.values():
            devices = [d for d, engines in sets.items() if engine.tables in engines]
            families = ", ".join(engine.table_families) if engine.table_families else "all"
            rows.append({"engine": engine.name, "measured tables": f"{engine.tables} ({families})" if engine.tables
                         else "none", "devices with tables": ", ".join(devices) or "-"})
        from .serving.engine_limits import FRONTEND

        if args.json:
            _print_json([{"engine": engine.name, "description": engine.description, "tables": engine.tables,
                          "table_families": list(engine.table_families) if engine.table_families else None,
                          "devices_with_tables": [d for d, engines in sets.items() if engine.tables in engines],
                          "table_note": engine.table_note or None,
                          "step_host_s": engine.execution.get("step_host_s", 0.0),
                          "step_host_note": engine.step_host_note or None,
                          "prefill_dispatch_s": engine.execution.get("prefill_dispatch_s", 0.0),
                          "prefill_graph_tokens": engine.execution.get("prefill_graph_tokens", 0),
                          "prefill_dispatch_note": engine.prefill_dispatch_note or None,
                          "frontend_s": FRONTEND[engine.name][0] if engine.name in FRONTEND else None,
                          "frontend_note": FRONTEND[engine.name][1] if engine.name in FRONTEND else None}
                         for engine in ENGINES.values()])
            return 0
        print(_table(rows))

        for engine in ENGINES.values():
            print(f"\n{engine.name}: {engine.description}." + (f" Tables: {engine.table_note}." if engine.table_note
                                                                  else "") + (
                f" Host work per step: {engine.step_host_note}." if engine.step_host_note else "") + (
                f" Prefill without a CUDA graph, host time per kernel: {engine.prefill_dispatch_note}."
                if engine.prefill_dispatch_note else "") + (
                f" Serving frontend per request (serve's frontend_s): "
                f"{f'{FRONTEND[engine.name][0] * 1e3:g} ms' if FRONTEND[engine.name][0] else 'none'} "
                f"({FRONTEND[engine.name][1]})." if engine.name in FRONTEND else ""))
        return 0
    if args.command == "hardware":
        specs = [load_hardware(name) for name in args.names or shipped_hardware_names()]
        if args.json:  # every figure with its unit and source, as the file states it
            _print_json([spec.model_dump(mode="json") for spec in specs])
        else:
            print(_table([spec.summary_row() for spec in specs]))
        return 0
    if args.command == "calibrate" and args.source == "aiconfigurator":
        from pathlib import Path

        from .engines.aiconfigurator import import_tables

        if not args.system or not args.engine:
            raise LlmsimError("--from aiconfigurator needs --system (e.g. h100_sxm) and --engine (vllm, sglang, "
                              "trtllm)")
        stray = [flag for flag, given in (("--device", args.device), ("--dtypes", args.dtypes),
                                          ("--quick", args.quick), ("--threads", args.threads),
                                          ("--name", args.name)) if given]
        if stray:
            raise LlmsimError(f"{', '.join(stray)}: for measuring this machine only; --from aiconfigurator takes "
                              "--system, --engine, --full and --out")
        if not args.out.strip():  # Path("") is the current folder: an unset shell variable wrote tables there
            raise LlmsimError("--out is empty: give the folder to write the tables into")
        written = import_tables(args.system, args.engine, Path(args.out), full=args.full)
        if not written:  # the package ships the system's folder empty (l4, a30 in aiconfigurator-core 0.12.0)
            raise LlmsimError(f"--system {args.system} --engine {args.engine}: the installed aiconfigurator-core has "
                              "no measured tables for it; nothing written")
        for path in written:
            print(f"wrote {path}")
        return 0
    if args.command == "calibrate":
        from pathlib import Path

        if args.name is not None and not args.name.strip():  # it wrote cpu-calibrated, silently
            raise LlmsimError("--name '': give the hardware file a name (or leave --name out for the default)")

        from .validation import calibrate

        stray = [flag for flag, given in (("--system", args.system), ("--engine", args.engine), ("--full", args.full))
                 if given]
        if stray:
            raise LlmsimError(f"{', '.join(stray)}: for --from aiconfigurator only; measuring this machine takes "
                              "--device, --dtypes, --quick, --threads and --name")
        if Path(args.out).suffix.lower() != ".toml":
            raise LlmsimError(f"--out {args.out}: a calibrated hardware file is TOML; the name must end in .toml")
        _check_new_file("--out", args.out)
        if args.dtypes is not None and not args.dtypes.strip():  # an unset shell variable: not the default
            raise LlmsimError("--dtypes is empty: give dtypes like float32,bfloat16 (or leave the option out)")
        result = calibrate(device=args.device or "cpu", dtypes=tuple((args.dtypes or "float32,bfloat16").split(",")),
                           out=args.out, quick=args.quick, threads=args.threads or 1, progress=True, name=args.name)
        print(_table([result.summary_row()]))
        print(f"wrote {args.out}")
        return 0
    if args.command == "profile":
        return _profile(args)
    options = _options(args)
    if options.get("pipeline_decode") is not None and args.command not in ("simulate", "plan"):
        raise LlmsimError(f"--pipeline-decode applies to simulate --pipeline-parallel (and plan's pipeline splits); "
                          f"{args.command} runs no pipeline stages of its own, so it would be ignored")
    from .cli_whatif import run

    code = run(args, options)
    if code is not None:
        return code
    if args.command == "simulate":
        if args.step is not None and not args.per_layer:
            raise LlmsimError("--step: it picks the decode step of --per-layer; give --per-layer too")
        result = simulate(args.model, args.hardware, batch_size=args.batch_size, prompt_len=args.prompt_len,
                          gen_len=args.gen_len, pipeline_parallel=args.pipeline_parallel,
                          num_microbatches=args.num_microbatches, data_parallel=args.data_parallel, **options)
        # every table made before anything is printed: a bad --step is one error line, not one after the summary
        layers = []
        if args.per_layer:
            layers.append(result.layer_table("prefill"))
            if result.gen_len > 1 or args.step is not None:
                layers.append(result.layer_table("decode", args.step))
        if args.json:  # the per-layer tables beside the result's fields (they were left out)
            data = json.loads(result.model_dump_json())
            if result.gen_len == 1:  # no decode step: no TPOT (the table's n/a), not 0 s
                data["tpot_s"] = None
            if layers:
                data["layer_tables"] = [json.loads(table.model_dump_json()) for table in layers]
            print(json.dumps(data, indent=2))
            return 0
        tables = ([result.ops_table()] if args.ops else []) + [str(table) for table in layers]
        print(result)
        for table in tables:
            print()
            print(table)
        return 0
    if args.command == "serve" and (args.prefill_pool or args.decode_pool):
        from .serving.disaggregated import serve_disaggregated

        if not (args.prefill_pool and args.decode_pool) or args.tensor_parallel or args.expert_parallel or (
                args.pipeline_parallel > 1) or args.attention_data_parallel > 1:
            raise LlmsimError("disaggregated serving takes both --prefill-pool and --decode-pool (REPLICASxTP) and "
                              "no --tensor-parallel / --expert-parallel / --pipeline-parallel / "
                              "--attention-data-parallel (per pool: the Python API's pool dicts)")
        aggregated_only = [flag for flag, given in (
            ("--batch-wait-timeout-iters", args.batch_wait_timeout_iters),
            ("--batch-wait-max-tokens-ratio", args.batch_wait_max_tokens_ratio),
            ("--attention-dp-balance", args.attention_dp_balance), ("--ramp-s", args.ramp_s),
            ("--max-num-seqs", args.max_num_seqs is not None),
            ("--max-num-batched-tokens", args.max_num_batched_tokens is not None),
            ("--shared-prefix-len", args.shared_prefix_len), ("--prefix-groups", args.prefix_groups != 1),
            ("--no-prefix-caching", not args.prefix_caching), ("--speculative", args.speculative is not None),
            ("--mixed-batches / --no-mixed-batches", args.mixed_batches is not None),
            ("--reserve-output / --no-reserve-output", args.reserve_output is not None)) if given]
        if aggregated_only:  # serve_disaggregated takes none of them: refused, not dropped
            per_pool = any(flag in ("--max-num-seqs", "--max-num-batched-tokens") for flag in aggregated_only)
            raise LlmsimError(f"{', '.join(aggregated_only)}: not modelled for disaggregated serving (--prefill-pool / "
                              "--decode-pool)" + ("; per-pool max_num_seqs and max_num_batched_tokens go in the "
                                                  "Python API's pool dicts" if per_pool else ""))
        options = {k: v for k, v in options.items() if k not in ("tensor_parallel", "expert_parallel")}
        result = serve_disaggregated(
            args.model, args.hardware, prefill=args.prefill_pool, decode=args.decode_pool,
            request_rate=args.request_rate, concurrency=args.concurrency, prompt_len=_length_arg(args.prompt_len),
            gen_len=_length_arg(args.gen_len), lengths_csv=args.lengths_csv, num_requests=args.num_requests,
            arrival=args.arrival, burstiness=args.burstiness, seed=args.seed,
            kv_transfer_bytes_per_s=args.kv_transfer_bytes_per_s, gpu_memory_utilization=args.gpu_memory_utilization,
            block_size=args.block_size, async_scheduling=args.async_scheduling,
            scheduler_recv_interval=args.scheduler_recv_interval, frontend_s=args.frontend_s,
            chunked_prefill=args.chunked_prefill, **options)
        return _print_serving(result, args)
    if args.command == "serve":
        from .serving.serve import serve

        if args.kv_transfer_bytes_per_s is not None:
            raise LlmsimError("--kv-transfer-bytes-per-s applies to disaggregated serving (--prefill-pool and "
                              "--decode-pool); an aggregated replica sends no KV cache")

        result = serve(args.model, args.hardware, request_rate=args.request_rate, concurrency=args.concurrency,
                       prompt_len=_length_arg(args.prompt_len), gen_len=_length_arg(args.gen_len),
                       lengths_csv=args.lengths_csv, num_requests=args.num_requests, arrival=args.arrival,
                       burstiness=args.burstiness, ramp_s=args.ramp_s, seed=args.seed,
                       max_num_seqs=args.max_num_seqs, max_num_batched_tokens=args.max_num_batched_tokens,
                       gpu_memory_utilization=args.gpu_memory_utilization, block_size=args.block_size,
                       shared_prefix_len=args.shared_prefix_len, prefix_groups=args.prefix_groups,
                       prefix_caching=args.prefix_caching, speculative=args.speculative,
                       mixed_batches=args.mixed_batches, reserve_output=args.reserve_output,
                       chunked_prefill=args.chunked_prefill,
                       async_scheduling=args.async_scheduling, scheduler_recv_interval=args.scheduler_recv_interval,
                       batch_wait_timeout_iters=args.batch_wait_timeout_iters,
                       batch_wait_max_tokens_ratio=args.batch_wait_max_tokens_ratio, frontend_s=args.frontend_s,
                       attention_dp_balance=args.attention_dp_balance,
                       attention_dp_timeout_iters=args.attention_dp_timeout_iters,
                       attention_dp_batching_wait_iters=args.attention_dp_batching_wait_iters,
                       pipeline_parallel=args.pipeline_parallel,
                       attention_data_parallel=args.attention_data_parallel, **options)
        return _print_serving(result, args)
    if args.command == "sweep":
        if args.csv == "-" and args.json:
            raise LlmsimError("--csv - and --json both write to standard output; give one")
        if args.csv is not None and args.csv != "-":
            if not args.csv.strip():
                raise LlmsimError("--csv '': give a file name (or - for standard output)")
            _check_new_file("--csv", args.csv)  # before the work, so a typo costs nothing
        result = regime.sweep(args.model, args.hardware, batch_size=args.batch_size, prompt_len=args.prompt_len,
                              gen_len=args.gen_len, **options)
        rows = result.to_rows()
        if args.csv == "-":  # the CSV alone on standard output
            _write_csv_to(sys.stdout, rows)
            return 0
        if args.csv:
            _write_csv(args.csv, rows)
            print(f"wrote {len(rows)} row{'s' if len(rows) != 1 else ''} to {args.csv}", file=sys.stderr)
        if args.json:
            _print_json(rows)
        elif not args.csv or len(rows) <= 50:
            shown = [{k: _short(v) for k, v in r.items()} for r in rows[:200]]
            print(_table(shown))
            if len(rows) > 200:
                print(f"... {len(rows) - 200} more rows (use --csv)")
        return 0
    if args.command in ("crossover", "limit"):
        fixed = {k: getattr(args, k) for k in ("batch_size", "seq_len", "kv_len") if getattr(args, k) is not None}
        if args.command == "crossover":
            result = regime.find_crossover(args.model, args.hardware, phase=args.phase, vary=args.vary, lo=args.lo,
                                           hi=args.hi, **fixed, **options)
        else:
            result = regime.first_limit(args.model, args.hardware, vary=args.vary, phase=args.phase,
                                        tpot_slo_s=args.tpot_slo_s, ttft_slo_s=args.ttft_slo_s, **fixed, **options)
        if args.json:
            print(result.model_dump_json(indent=2))
        else:
            print(result.reason)
            for name, value in getattr(result, "per_op", {}).items():
                print(f"  {name:<40} flips at {args.vary} = {value:.4g}")
            no_slo = args.command == "limit" and args.tpot_slo_s is None and args.ttft_slo_s is None
            for name, value in getattr(result, "events", {}).items():
                state = "no target given" if name == "slo" and no_slo else "not met"  # none to meet
                print(f"  {name:<10} {state if value is None else f'at {args.vary} = {value:.6g}'}")
        return 0
    if args.command == "roofline":
        from .report.plot import roofline_figure

        result = simulate(args.model, args.hardware, batch_size=args.batch_size, prompt_len=args.prompt_len,
                          gen_len=args.gen_len, **options)
        _save(roofline_figure(result, load_hardware(args.hardware)), args.out)
        return 0
    if args.command == "plot":
        from .report.plot import sweep_figure

        _save(sweep_figure(args.model, args.hardware, vary=args.vary, values=args.values, metric=args.metric,
                           batch_size=args.batch_size, prompt_len=args.prompt_len, gen_len=args.gen_len, **options),
              args.out)
        return 0
    if args.command == "plan" and args.request_rate is not None:
        from .serving.plan import plan_serving

        static = [flag for flag, value in (("--batch-sizes", args.batch_sizes),
                  ("--target-tokens-per-s", args.target_tokens_per_s)) if value is not None]
        if static:  # they would be silently ignored
            raise LlmsimError(f"{static[0]} belongs to the static plan; a serving plan (--request-rate) searches "
                              "--tensor-parallel, --pipeline-parallel and the engine's max_num_seqs")

        result = plan_serving(args.model, args.hardware, request_rate=args.request_rate,
                              prompt_len=_length_arg(args.prompt_len), gen_len=_length_arg(args.gen_len),
                              ttft_slo_s=args.ttft_slo_s, tpot_slo_s=args.tpot_slo_s,
                              percentile=99 if args.percentile is None else args.percentile,
                              max_gpus=args.max_gpus, disaggregated=args.disaggregated,
                              usd_per_gpu_hour=args.usd_per_gpu_hour, pipeline_parallel=args.pipeline_parallel,
                              max_num_seqs=args.max_num_seqs,
                              **{key: value for key, value in (
                                  ("max_num_batched_tokens", args.max_num_batched_tokens),
                                  ("gpu_memory_utilization", args.gpu_memory_utilization),
                                  ("chunked_prefill", args.chunked_prefill)) if value is not None},
                              **options)
        print(result.model_dump_json(indent=2) if args.json else result)
        if args.out:
            from .report.serving_plot import serving_plan_figure

            _save(serving_plan_figure(result), args.out)
        return 0
    if args.command == "plan":
        from .analysis.plan import plan

        serving = [flag for flag, given in (("--disaggregated", args.disaggregated),
                                            ("--percentile", args.percentile is not None),
                                            ("--max-num-seqs", args.max_num_seqs is not None),
                                            ("--max-num-batched-tokens", args.max_num_batched_tokens is not None),
                                            ("--gpu-memory-utilization", args.gpu_memory_utilization is not None),
                                            ("--chunked-prefill", args.chunked_prefill is not None)) if given]
        if serving:  # they would be silently ignored
            raise LlmsimError(f"{serving[0]} belongs to the serving plan: give --request-rate too (the static plan "
                              "searches batch sizes against --ttft-slo-s / --tpot-slo-s)")

        options.pop("tensor_parallel", None)  # searched: a list here
        lengths = {}
        for flag, text in (("--prompt-len", args.prompt_len), ("--gen-len", args.gen_len)):
            try:  # the static plan costs one batch at fixed lengths
                lengths[flag] = _positive_int(text)
            except argparse.ArgumentTypeError:
                raise LlmsimError(f"{flag} {text}: the static plan takes a whole number of tokens >= 1 (length "
                                  "distributions are for the serving plan: give --request-rate)") from None
        result = plan(args.model, args.hardware, prompt_len=lengths["--prompt-len"], gen_len=lengths["--gen-len"],
                      ttft_slo_s=args.ttft_slo_s, tpot_slo_s=args.tpot_slo_s,
                      target_tokens_per_s=args.target_tokens_per_s, max_gpus=args.max_gpus,
                      usd_per_gpu_hour=args.usd_per_gpu_hour, batch_sizes=args.batch_sizes,
                      tensor_parallel=args.tensor_parallel, pipeline_parallel=args.pipeline_parallel, **options)
        print(result.model_dump_json(indent=2) if args.json else result)
        if args.out:
            from .report.plot import pareto_figure

            _save(pareto_figure(result), args.out)
        return 0
    if args.command == "validate":
        from pathlib import Path

        from .validation import validate

        if args.results is not None and not Path(args.results).parent.is_dir():  # appended to (a rerun resumes)
            raise LlmsimError(f"--results {args.results}: no folder {Path(args.results).parent}; create it or choose "
                              "another path")
        report = validate(args.model, args.hardware, device=args.device, dtype=args.dtype,
                          batch_sizes=args.batch_sizes, seq_lens=args.seq_lens, kv_lens=args.kv_lens,
                          num_layers=args.num_layers, results_path=args.results, profile=args.profile,
                          overhead=args.overhead, repeats=args.repeats, warmup=args.warmup, threads=args.threads)
        print(report.to_markdown())
        if report.ok_rows():  # the medians per phase, and the machine's speed against a calibrated file
            print()
            print(report.summary_markdown())
        elif report.rows:  # every case failed: a non-zero exit, as for any other error
            print(f"llmsim: error: none of the {len(report.rows)} cases ran (see the status column)", file=sys.stderr)
            return 1
        return 0
    raise LlmsimError(f"unknown command {args.command!r}")


def _analyze(args: argparse.Namespace) -> int:
    """`llmsim analyze`: a traced module's summary, slowest kernels and (--by-module) time per module."""
    from .trace.analyze import analyze
    from .trace.zoo import resolve_target

    if args.model.startswith("diffusers:"):
        import importlib.util

        from .trace.diffusion import analyze_pipeline

        unused = [flag for flag, given in (("--image-size", args.image_size != 224),
                                           ("--input-shape", args.input_shape is not None)) if given]
        if unused:  # (a latent of L pixels is an image of 8 L)
            verb = "does" if len(unused) == 1 else "do"
            raise LlmsimError(f"{', '.join(unused)} {verb} not apply to {args.model}: a diffusers: model's size is "
                              "--latent (latent pixels = image pixels / 8) and --batch-size")
        missing = [name for name in ("torch", "diffusers") if importlib.util.find_spec(name) is None]
        if missing:  # both named at once, not one install after the other
            raise ImportError(f"{args.model} needs torch and diffusers ({' and '.join(missing)} missing): "
                              f"pip install 'llmsim[validate,models]'")

        pipeline = analyze_pipeline(args.model.removeprefix("diffusers:"), args.batch_size, args.latent, args.steps,
                                    args.cfg, hardware=args.hardware, dtype=args.dtype, engine=args.engine,
                                    autocast=args.autocast)
        print(pipeline)
        print()
        result = pipeline.stages[-1 if len(pipeline.stages) == 1 else 1].result  # the denoiser's step
    else:
        unused = [flag for flag, given in (("--latent", args.latent is not None), ("--steps", args.steps is not None),
                                           ("--cfg", args.cfg is not None)) if given]
        if args.model.startswith("hf:"):
            unused += ["--input-shape"] if args.input_shape is not None else []
        else:
            unused += [flag for flag, given in (("--batch-size", args.batch_size != 1),
                                                ("--image-size", args.image_size != 224)) if given]
        if unused:
            verb = "does" if len(unused) == 1 else "do"
            raise LlmsimError(f"{', '.join(unused)} {verb} not apply to {args.model} (--latent, --steps and --cfg: "
                              "diffusers: models; --batch-size and --image-size: hf: models; --input-shape: a "
                              "FILE.py:FUNCTION that returns only a module)")
        module, inputs = resolve_target(args.model, args.batch_size, args.image_size, args.input_shape)
        result = analyze(module, inputs, hardware=args.hardware, dtype=args.dtype, engine=args.engine,
                         name=args.model, autocast=args.autocast)
    print(result.summary(top=0))  # the kernel table once, at --top
    print()
    print(result.ops_table(top=args.top))
    if args.by_module:
        print()
        print(_table([{"module": path or "<root>", "kernels": g["kernels"], "GFLOP": round(g["flops"] / 1e9, 3),
                       "MB": round(g["bytes"] / 1e6, 2), "time_us": round(g["time_s"] * 1e6, 2)}
                      for path, g in result.by_module(args.by_module).items()]))
    if args.out:
        _save(result.roofline_figure(), args.out)
    return 0


def _profile(args: argparse.Namespace) -> int:
    """`llmsim profile`: the kernel table, the comparison with a prediction (--model) and the plot."""
    from pathlib import Path

    from .profiles import read_profile

    if args.model is not None and not args.model.strip():  # it said "give --model too", as if none were given
        raise LlmsimError("--model '': give a model name or config (or leave --model out)")
    if not args.model:  # the prediction's settings: without a model nothing reads them
        stray = [flag for flag, given in (("--batch-size", args.batch_size != 1),
                                          ("--prompt-len", args.prompt_len != 512),
                                          ("--phase", args.phase != "prefill")) if given]
        stray += ["--" + key.replace("_", "-") for key in _options(args)]
        if stray:
            raise LlmsimError(f"{', '.join(stray)}: set the prediction a profile is compared with; give --model too "
                              "(without it the profile's kernels are read on the roofline alone)")
    out = args.out
    if out is None:  # the default name, numbered past any file already there (a rerun overwrites nothing)
        name = Path(args.path).name
        name = name[:-3] if name.endswith(".gz") else name  # trace.json.gz: its stem is trace
        stem = Path(name).stem or name  # llama-3.1-8b.run.csv: llama-3.1-8b.run (not llama-3)
        out = next(name for name in (f"{stem}-roofline{f'-{k}' if k > 1 else ''}.png" for k in range(1, 10_000))
                   if not Path(name).exists())
    _check_out(out)
    profile = read_profile(args.path)
    result = None
    if args.model:
        from .analysis.simulate import simulate

        # one decode step where the decode is compared, else none (a prefill of the whole context is then allowed)
        result = simulate(args.model, args.hardware, batch_size=args.batch_size, prompt_len=args.prompt_len,
                          gen_len=2 if args.phase == "decode" else 1, **_options(args))
        comparison = profile.compare(result, phase=args.phase)
        profile = comparison.profile  # FLOPs and bytes of matched kernels filled in
    print(profile.kernels_table(args.hardware, top=args.top))
    if result is not None:
        print()
        print(comparison)
    _save(profile.roofline_figure(args.hardware, result, phase=args.phase), out)
    return 0


def _short(value: Any) -> Any:
    return f"{value:.4g}" if isinstance(value, float) else "n/a" if value is None else value


def _write_csv(path: str, rows: list[dict[str, Any]]) -> None:
    _check_new_file("--csv", path)
    with open(path, "w", newline="") as handle:
        _write_csv_to(handle, rows)


def _write_csv_to(handle: Any, rows: list[dict[str, Any]]) -> None:
    import csv

    writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)


_FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def _check_out(path: str | None, flag: str = "--out") -> None:
    """A figure path that can be written: a known image suffix, an existing folder, no file there yet.
    Checked before the work, so a typo costs nothing."""
    from pathlib import Path

    if path is None:
        return
    if Path(path).suffix.lower() not in _FIGURE_SUFFIXES:
        raise LlmsimError(f"{flag} {path}: the file name must end in one of {', '.join(_FIGURE_SUFFIXES)}")
    _check_new_file(flag, path)


def _check_new_file(flag: str, path: str) -> None:
    """A file to write: its folder exists and the file does not (nothing is overwritten)."""
    from pathlib import Path

    out = Path(path)
    if not out.parent.is_dir():
        raise LlmsimError(f"{flag} {path}: no folder {out.parent}; create it or choose another path")
    if out.is_dir():
        raise LlmsimError(f"{flag} {path}: that is a folder; give a file name in it")
    if out.exists():
        raise LlmsimError(f"{flag} {path}: the file exists; choose another name (nothing is overwritten)")
    try:  # writable: said now, not after a run of minutes (the probe is removed at once)
        out.open("x").close()
        out.unlink()
    except OSError as exc:
        raise LlmsimError(f"{flag} {path}: cannot write there ({exc.strerror or exc}); choose another path") from None


def _save(figure: Any, path: str, flag: str = "--out", quiet: bool = False) -> None:
    _check_out(path, flag)
    try:
        figure.savefig(path, dpi=130, bbox_inches="tight")
    except OSError as exc:
        raise LlmsimError(f"{flag} {path}: cannot write it ({exc.strerror or exc})") from None
    if not quiet:
        print(f"wrote {path}")


def _show_warning(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    """A warning as one line, as the errors are (not Python's file, line and source text)."""
    print(f"llmsim: warning: {message}", file=sys.stderr)


def _print_serving(result: Any, args: argparse.Namespace) -> int:
    """`serve`'s output: the result (or its JSON), the goodput under the objectives given, the plot."""
    objectives = {f"{name}_s": getattr(args, f"{name}_slo_s") for name in ("ttft", "tpot", "e2e")
                  if getattr(args, f"{name}_slo_s") is not None}
    for key, value in objectives.items():
        if not (math.isfinite(value) and value > 0):
            raise LlmsimError(f"--{key[:-2]}-slo-s={value:g} must be a positive number of seconds")
    goodput = result.goodput(**objectives) if objectives else None  # (a bad objective: one error line)
    if args.json:
        data = json.loads(result.model_dump_json())
        if goodput is not None:
            data["goodput"] = {"objectives": objectives, "requests_per_s": goodput}
        print(json.dumps(data, indent=2))
    else:
        print(result)
        if goodput is not None:
            within = ", ".join(f"{key[:-2].upper()} <= {value * 1e3:g} ms" for key, value in objectives.items())
            share = goodput / result.requests_per_s if result.requests_per_s > 0 else 0.0
            print(f"  goodput {goodput:.2f} req/s within {within} ({share:.1%} of the requests)")
    if args.plot:
        from .report.serving_plot import serving_figure

        _save(serving_figure(result), args.plot, "--plot", quiet=args.json)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    import warnings

    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # named against the subcommand that refused them, not the top-level usage
        parser._subparsers._group_actions[0].choices[args.command].error(  # type: ignore[union-attr]
            f"unrecognized arguments: {' '.join(unknown)}")
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _guarded_run(args)


def _guarded_run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except LlmsimError as exc:
        print(f"llmsim: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        hint = "" if "pip install" in str(exc) else f" ({_install_hint(exc)})"  # the message may name it already
        print(f"llmsim: error: {exc}{hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("llmsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
