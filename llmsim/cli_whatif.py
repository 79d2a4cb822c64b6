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
    return name.strip().replace("-", "_"), [_value(v.strip()) for v in values.split(",") if v.strip()]


def _value(text: str) -> Any:
    if text.isdigit():
        return int(text)
    return {"true": True, "false": False}.get(text.lower(), text)


def add_parsers(sub: Any, add_model_options: Any, positive_int: Any) -> None:
    p = sub.add_parser("whatif", help="one workload under several choices side by side: TTFT, TPOT, speedup "
                       "over the first choice, bytes saved")
    add_model_options(p)
    p.add_argument("--vary", type=_vary_arg, action="extend", nargs="+", required=True, metavar="OPTION=V1,V2",
                   help="an option and its values, the first the baseline's (repeat for several options), e.g. "
                   "--vary fusion=none,elementwise,full --vary attention=math,flash --vary engine=vllm,transformers")
    p.add_argument("--product", action="store_true",
                   help="every combination of the values (default: one option at a time against the baseline)")
    p.add_argument("--batch-size", type=positive_int, default=1)
    p.add_argument("--prompt-len", type=positive_int, default=512)
    p.add_argument("--gen-len", type=positive_int, default=128)
    p.add_argument("--tensor-parallel", type=positive_int)
    p.add_argument("--expert-parallel", type=positive_int)
    p.add_argument("--json", action="store_true")


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
    return None
