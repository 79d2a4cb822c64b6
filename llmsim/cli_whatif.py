"""The what-if subcommands of `llmsim`: `whatif` (one workload under several choices side by side) and
`op` (one op alone on a device's roofline). Registered and run by llmsim.cli."""

from __future__ import annotations

import argparse
from typing import Any


def _vary_arg(text: str) -> tuple[str, list[Any]]:
    """--vary OPTION=V1,V2,...: integers and true/false become numbers and booleans."""
    name, sep, values = text.partition("=")
    if not sep or not name.strip() or not values.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: write OPTION=VALUE1,VALUE2,..., e.g. fusion=none,full")
    parts = [v.strip() for v in values.split(",")]
    if not all(parts):  # "none,,full": a value left out, refused as sweep's and plan's lists are
        raise argparse.ArgumentTypeError(f"{text!r}: an empty value between commas; write OPTION=VALUE1,VALUE2,...")
    name = name.strip().replace("-", "_")
    if name == "table_families":  # each value a list of families: gemm+decode_attention (commas part the values)
        return name, [[f.strip() for f in v.split("+")] for v in parts]
    return name, [_value(v) for v in parts]


def _value(text: str) -> Any:
    """One --vary value: true/false, an integer, a number (0.001, 1e-5), or the text as given."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for number in (int, float):
        try:
            return number(text)
        except ValueError:
            pass
    return text


def add_parsers(sub: Any, add_model_options: Any, positive_int: Any) -> None:
    p = sub.add_parser("whatif", help="one workload under several choices side by side: TTFT, TPOT, speedup "
                       "over the first choice, bytes saved")
    add_model_options(p)
    p.add_argument("--vary", type=_vary_arg, action="extend", nargs="+", required=True, metavar="OPTION=V1,V2",
                   help="an option and its values, the first the baseline's (repeat for several options), e.g. "
                   "--vary fusion=none,elementwise,full --vary attention=math,flash --vary engine=vllm,transformers; "
                   "table_families takes families joined by +, e.g. table_families=gemm,gemm+decode_attention")
    p.add_argument("--product", action="store_true",
                   help="every combination of the values (default: one option at a time against the baseline)")
    p.add_argument("--batch-size", type=positive_int, default=1)
    p.add_argument("--prompt-len", type=positive_int, default=512)
    p.add_argument("--gen-len", type=positive_int, default=128)
    p.add_argument("--json", action="store_true")

    from .analysis.one_op import OP_KINDS
    from .engines.catalog import ENGINE_NAMES

    p = sub.add_parser("op", help="one op alone on a device: intensity, ridge point, bound, time, share of peak, "
                       "what fusing it saves")
    p.add_argument("kind", choices=OP_KINDS)
    p.add_argument("--hardware", "--hw", required=True, help="a shipped device or a hardware .toml file")
    p.add_argument("--dtype", default="bfloat16", help="e.g. fp16, bf16, fp8, float32 (default: bfloat16)")
    p.add_argument("--shape", help="elementwise and norm: the tensor's shape, e.g. 32,2048,4096; conv: the input "
                   "[N, C_in, *spatial], e.g. 8,64,56,56")
    p.add_argument("--flops-per-element", type=_at_least(0), default=None,
                   help="elementwise: vector FLOPs per element (default 1)")
    p.add_argument("--inputs", type=_at_least(0), default=None, help="elementwise: tensors read (default 1)")
    p.add_argument("--outputs", type=positive_int, default=None, help="elementwise: tensors written (default 1)")
    p.add_argument("--norm", choices=("rmsnorm", "layernorm"), default=None, help="norm: which (default rmsnorm)")
    p.add_argument("--m", type=positive_int, help="matmul: rows of the input (tokens)")
    p.add_argument("--n", type=positive_int, help="matmul: output columns")
    p.add_argument("--k", type=positive_int, help="matmul: inner dimension")
    p.add_argument("--batch", type=positive_int, default=None, help="attention: sequences (default 1)")
    p.add_argument("--heads", type=positive_int, help="attention: query heads")
    p.add_argument("--kv-heads", type=positive_int, help="attention: K/V heads (default: --heads)")
    p.add_argument("--head-dim", type=positive_int, default=None, help="attention: head size (default 128)")
    p.add_argument("--q-len", type=positive_int, help="attention: new tokens per sequence (1: a decode step)")
    p.add_argument("--kv-len", type=_at_least(0), default=None, help="attention: cached tokens before them (default 0)")
    p.add_argument("--non-causal", action="store_true", default=None,
                   help="attention: every token sees all --q-len tokens of its sequence (a ViT, DiT or encoder), not "
                   "only those before it")
    p.add_argument("--out-channels", type=positive_int, help="conv: filters (output channels)")
    p.add_argument("--kernel-size", help="conv: filter size, one (3) or one per spatial axis (3,3)")
    p.add_argument("--stride", type=positive_int, default=None, help="conv: stride (default 1)")
    p.add_argument("--padding", type=_at_least(0), default=None, help="conv: zero padding per side (default 0)")
    p.add_argument("--engine", choices=ENGINE_NAMES, help="whose kernels and measured tables (default: vllm on a "
                   "GPU, transformers on a CPU)")
    for name, choices in (("efficiency", ("achievable", "peak")), ("overhead", ("graph", "eager", "none")),
                          ("overlap", ("max", "sum"))):
        p.add_argument(f"--{name}", choices=choices, help="default: the engine's")
    p.add_argument("--json", action="store_true")


# the op options only some kinds read (None: not given), and those kinds
_OP_OPTION_KINDS = {"flops_per_element": ("elementwise",), "inputs": ("elementwise",), "outputs": ("elementwise",),
                    "norm": ("norm",), "batch": ("attention",), "heads": ("attention",), "kv_heads": ("attention",),
                    "head_dim": ("attention",), "q_len": ("attention",), "kv_len": ("attention",),
                    "non_causal": ("attention",), "out_channels": ("conv",), "kernel_size": ("conv",),
                    "stride": ("conv",), "padding": ("conv",)}


def _at_least(minimum: int) -> Any:
    from .cli_args import int_at_least

    return int_at_least(minimum)


def run(args: argparse.Namespace, options: dict[str, Any]) -> int | None:
    """Run a what-if subcommand; None for any other command."""
    from .errors import OptionError

    if args.command == "whatif":
        from .analysis.whatif import whatif

        vary: dict[str, list[Any]] = {}
        for name, values in args.vary:
            if name in vary:
                raise OptionError(f"--vary {name}: given twice; give all its values once, comma-separated")
            vary[name] = values
        if "engine" in vary:  # the engine's own tables go with each engine
            options.pop("tables", None)
        result = whatif(args.model, args.hardware, vary, batch_size=args.batch_size, prompt_len=args.prompt_len,
                        gen_len=args.gen_len, product=args.product, **options)
        print(result.model_dump_json(indent=2) if args.json else result)
        return 0
    if args.command == "op":
        from .analysis.one_op import op_cost

        if args.kind == "matmul" and args.shape:
            raise OptionError("--shape: a matmul takes --m, --n and --k")
        if args.kind != "matmul" and (args.m or args.n or args.k):
            raise OptionError(f"--m/--n/--k: only a matmul takes them; {args.kind} takes --shape")
        if args.kind == "attention" and args.shape:
            raise OptionError("--shape: attention takes --batch, --heads, --kv-heads, --head-dim, --q-len, --kv-len")
        for option, kinds in _OP_OPTION_KINDS.items():  # another kind's option would be silently ignored
            if getattr(args, option) is not None and args.kind not in kinds:
                flag = "--" + option.replace("_", "-")
                raise OptionError(f"{flag}: only {' and '.join(kinds)} takes it, not {args.kind}")
        given = {option: getattr(args, option) for option in _OP_OPTION_KINDS
                 if getattr(args, option) is not None and option != "non_causal"}  # causal= below
        if args.kind in ("elementwise", "norm") and not args.shape:
            raise OptionError(f"--shape is missing: {args.kind} needs the tensor's shape, e.g. --shape 32,2048,4096")
        if args.kind == "conv" and not args.shape:
            raise OptionError("--shape is missing: conv needs its input [N, C_in, *spatial], e.g. --shape 8,64,56,56")
        result = op_cost(args.kind, args.hardware, args.dtype, shape=args.shape, m=args.m, n=args.n, k=args.k,
                         engine=args.engine, causal=not args.non_causal, efficiency=args.efficiency,
                         overhead=args.overhead, overlap=args.overlap, **given)
        print(result.model_dump_json(indent=2) if args.json else result)
        return 0
    return None
