"""Record llmsim's outputs over many models, devices, options and workloads, and compare two records:
a check that a speed-up changed no result (not a test: the numbers are those of the code that wrote them).

    python benchmarks/snapshot_results.py save before.pkl
    python benchmarks/snapshot_results.py compare before.pkl   # exit 1 on a difference above 1e-12

Recorded: repr(simulate(...)) and its ops_table(), sweep() columns, find_crossover() and first_limit().
"""

from __future__ import annotations

import math
import pickle
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import llmsim
from llmsim.analysis.regime import find_crossover, first_limit, sweep
from llmsim.errors import LlmsimError

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("llama-3.1-70b", "llama-3.1-8b", "deepseek-v3", "mixtral-8x7b", "gpt-oss-20b", "gemma-2-9b", "gemma-3-1b",
          "gemma-3-27b", "qwen3-30b-a3b", "gpt2", "falcon-7b", "phi-3-mini", "mistral-7b")
CPU = str(ROOT / "validation" / "cpu-calibrated.toml")  # with matmul_rows and elementwise_bytes curves
DEVICES = (*sorted(str(p) for p in (ROOT / "hardware").glob("*.toml")), CPU,
           str(ROOT / "validation" / "cpu-calibrated-hf-dispatch.toml"))
FEW_DEVICES = ("h100-sxm", "a100-80gb-sxm", CPU)
OPTIONS: tuple[dict[str, Any], ...] = (
    {}, {"tensor_parallel": 2}, {"tensor_parallel": 2, "expert_parallel": 2}, {"tensor_parallel": 16},
    {"overlap": "sum"}, {"fusion": "eager"}, {"fusion": "none"}, {"fusion": "full"}, {"attention": "math"},
    {"kv_cache": "concat"}, {"efficiency": "peak"}, {"overhead": "eager"}, {"overhead": "none"},
    {"overhead": "eager", "overlap": "sum"}, {"mla": "expand"}, {"logits": "all"},
    {"weight_dtype": "int4", "kv_dtype": "fp8"}, {"activation_dtype": "fp32"},
    {"pipeline_parallel": 2}, {"pipeline_parallel": 2, "num_microbatches": 4, "data_parallel": 3},
    {"fusion": "eager", "attention": "math", "overhead": "eager", "kv_cache": "concat", "logits": "all"},
    {"fusion": "eager", "attention": "math", "overhead": "eager", "efficiency": "peak", "overlap": "sum"},
)
WORKLOADS = ((1, 128, 64), (16, 2048, 1024), (3, 17, 1), (64, 300, 600), (5, 1000, 24))
SWEEP = {"batch_size": [1, 7, 64], "prompt_len": [17, 512, 3000], "gen_len": [1, 200, 1500]}


def records() -> Iterator[tuple[str, Any]]:
    for model in MODELS:
        for device in DEVICES:
            for workload in WORKLOADS[:2]:
                yield from _simulated(model, device, workload, {})
        for device in FEW_DEVICES:
            for options in OPTIONS:
                for workload in WORKLOADS:
                    yield from _simulated(model, device, workload, options)
        for options in OPTIONS[:12]:
            key = f"sweep {model} {options}"
            yield key, _attempt(lambda m, o: sweep(m, "h100-sxm", **{**SWEEP, **o}).columns, model, options)
    for model in ("llama-3.1-8b", "gemma-3-1b", "deepseek-v3"):
        for phase, vary in (("decode", "batch_size"), ("decode", "kv_len"), ("prefill", "seq_len")):
            key = f"crossover {model} {phase} {vary}"
            yield key, _attempt(lambda *a: repr(find_crossover(a[0], "h100-sxm", phase=a[1], vary=a[2])),
                                model, phase, vary)
        yield f"first_limit {model}", _attempt(lambda m: repr(first_limit(m, "a100-40gb-pcie", batch_size=32)), model)


def _simulated(model: str, device: str, workload: tuple[int, int, int], options: dict[str, Any]
               ) -> Iterator[tuple[str, Any]]:
    batch, prompt, generated = workload
    result = _attempt(llmsim.simulate, model, device, batch, prompt, generated, **options)
    key = f"{model} {Path(device).stem} {workload} {options}"
    yield key, result if isinstance(result, str) else repr(result)
    if not isinstance(result, str):
        yield key + " table", result.ops_table()


def _attempt(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except LlmsimError as exc:
        return f"error {type(exc).__name__}: {exc}"


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|inf|nan")


def difference(a: Any, b: Any) -> float:
    """0 when identical, else the largest relative difference of their numbers (inf: not comparable)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return math.inf
        return max((difference(a[k], b[k]) for k in a), default=0.0)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return math.inf
        if np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
            return 0.0
        if a.dtype.kind != "f":
            return math.inf
        return float(np.nanmax(np.abs(a - b) / np.maximum(np.abs(a), 1e-300)))
    if a == b:
        return 0.0
    if not isinstance(a, str) or not isinstance(b, str):
        return math.inf
    xs, ys = _NUMBER.findall(a), _NUMBER.findall(b)
    if len(xs) != len(ys) or _NUMBER.sub("#", a) != _NUMBER.sub("#", b):
        return math.inf
    return max(abs(float(x) - float(y)) / max(abs(float(x)), 1e-300) for x, y in zip(xs, ys))


def main() -> int:
    command, path = sys.argv[1], Path(sys.argv[2])
    current = dict(records())
    if command == "save":
        path.write_bytes(pickle.dumps(current))
        print(f"{len(current)} records saved to {path}")
        return 0
    saved = pickle.loads(path.read_bytes())
    if list(saved) != list(current):
        print("the record keys differ")
        return 1
    worst, identical = 0.0, 0
    for key in saved:
        diff = difference(saved[key], current[key])
        identical += diff == 0
        if diff > 0:
            print(f"differs by {diff:.3g}: {key}")
        worst = max(worst, diff)
    print(f"{len(saved)} records: {identical} identical, largest relative difference {worst:.3g}")
    return 0 if worst <= 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main())
