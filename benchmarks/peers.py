"""llmsim's speed beside a peer's, measured in one interleaved run (not a test).

The peer, llm-analysis (`pip install llm-analysis`, https://github.com/cli99/llm-analysis), runs in its own
virtual environment (its pins, transformers 4.31 among them, would clash with llmsim's): created at
--venv on first use with `python -m venv` and `pip install llm-analysis`. A worker process in that
environment times its `infer()`; this process times `llmsim.simulate` by name; the two alternate in rounds
and each round's ratio is taken, so a machine whose speed drifts moves both alike. Times are CPU-time
medians per call (warm: specs loaded once, as a capacity-planning script calls either repeatedly).

The second peer, GenZ (`pip install genz-llm`, https://github.com/abhibambhaniya/GenZ-LLM-Analyzer), runs in a
virtual environment of its own at --genz-venv (its own pins); its answer for a generation is one
`prefill_moddeling` and one `decode_moddeling` call (the decode one models a step at the given context), timed
the same way with fewer calls per round (each takes about 0.1 s).

The three do not compute the same thing: llm-analysis and GenZ time decode as one step (times the number of
steps), llmsim sums every step exactly and reads measured kernel tables; the comparison is of the cost of an
answer.

Run: python benchmarks/peers.py [--venv .peers-venv] [--genz-venv .peers-genz-venv] [--rounds 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

# (label, llm-analysis model and tensor parallel size, llmsim model and options, GenZ model); batch 8, prompt
# 2048, 1024 new
CASES = (
    ("Llama-2-7B, 1 GPU", ("NousResearch_Llama-2-7b-hf", 1), ("llama-2-7b", {}), "meta-llama/Llama-2-7B"),
    ("Llama-2-70B, TP 4", ("upstage_Llama-2-70b-instruct-v2", 4), ("llama-2-70b", {"tensor_parallel": 4}),
     "meta-llama/Llama-2-70B"),
)
WORKLOAD = {"batch": 8, "prompt": 2048, "generated": 1024}

WORKER = r"""
import json, sys, time
from llm_analysis.analysis import infer
for line in sys.stdin:
    model, tp, calls, batch, prompt, generated = json.loads(line)
    kw = dict(model_name=model, gpu_name="h100-sxm-80gb", dtype_name="w16a16e16", log_level="ERROR",
              batch_size_per_gpu=batch, seq_len=prompt, num_tokens_to_generate=generated, tp_size=tp)
    infer(**kw)
    start = time.process_time()
    for _ in range(calls):
        infer(**kw)
    print((time.process_time() - start) / calls, flush=True)
"""


GENZ_WORKER = r"""
import json, sys, time
from GenZ import decode_moddeling, prefill_moddeling
for line in sys.stdin:
    model, tp, calls, batch, prompt, generated = json.loads(line)
    kw = dict(model=model, batch_size=batch, input_tokens=prompt, system_name="H100_GPU", bits="bf16",
              tensor_parallel=tp)
    def answer():
        prefill_moddeling(**kw)
        decode_moddeling(output_tokens=generated, **kw)
    answer()
    start = time.process_time()
    for _ in range(calls):
        answer()
    print((time.process_time() - start) / calls, flush=True)
"""


def peer_python(venv: Path, package: str = "llm-analysis", module: str = "llm_analysis") -> Path:
    """The venv's interpreter, with the peer package installed (created on first use)."""
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"creating {venv} and installing {package} into it", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if subprocess.run([str(python), "-c", f"import {module}"], capture_output=True).returncode:
        subprocess.run([str(python), "-m", "pip", "install", "-q", package], check=True)
    return python


def _worker(python: Path, code: str) -> subprocess.Popen:
    return subprocess.Popen([str(python), "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)


def _ask(worker: subprocess.Popen, model: str, tp: int, calls: int) -> float:
    """CPU seconds per call of the worker's peer on one case."""
    assert worker.stdin is not None and worker.stdout is not None
    worker.stdin.write(json.dumps([model, tp, calls, *WORKLOAD.values()]) + "\n")
    worker.stdin.flush()
    return float(worker.stdout.readline())


def llmsim_s(model: str, options: dict, calls: int) -> float:
    import llmsim

    def run() -> None:
        llmsim.simulate(model, "h100-sxm", batch_size=WORKLOAD["batch"], prompt_len=WORKLOAD["prompt"],
                        gen_len=WORKLOAD["generated"], **options)

    run()
    start = time.process_time()
    for _ in range(calls):
        run()
    return (time.process_time() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=Path(".peers-venv"))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=50, help="calls per round and tool")
    parser.add_argument("--genz-venv", type=Path, default=Path(".peers-genz-venv"))
    parser.add_argument("--no-genz", action="store_true", help="time llm-analysis only")
    args = parser.parse_args()
    workers = {"llm-analysis infer": _worker(peer_python(args.venv), WORKER)}
    if not args.no_genz:
        workers["GenZ prefill+decode"] = _worker(peer_python(args.genz_venv, "genz-llm", "GenZ"), GENZ_WORKER)
    genz_calls = max(args.calls // 20, 2)  # about 0.1 s a call
    try:
        print(f"batch {WORKLOAD['batch']}, prompt {WORKLOAD['prompt']}, {WORKLOAD['generated']} generated, H100 SXM; "
              f"CPU-time medians of {args.rounds} interleaved rounds of {args.calls} calls ({genz_calls} for GenZ)")
        for label, (peer_model, tp), (model, options), genz_model in CASES:
            ours: list[float] = []
            theirs: dict[str, list[float]] = {name: [] for name in workers}
            for _ in range(args.rounds):
                ours.append(llmsim_s(model, options, args.calls))
                for name, worker in workers.items():
                    genz = name.startswith("GenZ")
                    theirs[name].append(_ask(worker, genz_model if genz else peer_model, tp,
                                             genz_calls if genz else args.calls))
            line = f"{label:<20} llmsim.simulate {statistics.median(ours) * 1e3:8.3f} ms"
            for name, times in theirs.items():
                ratio = statistics.median(a / b for a, b in zip(ours, times))
                line += f"   {name} {statistics.median(times) * 1e3:8.3f} ms (llmsim / it {ratio:6.3f})"
            print(line)
    finally:
        for worker in workers.values():
            assert worker.stdin is not None
            worker.stdin.close()
            worker.wait()


if __name__ == "__main__":
    main()
