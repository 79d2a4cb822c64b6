"""llmsim's speed beside a peer's, measured in one interleaved run (not a test).

The peer, llm-analysis (`pip install llm-analysis`, https://github.com/cli99/llm-analysis), runs in its own
virtual environment (its pins, transformers 4.31 among them, would clash with llmsim's): created at
--venv on first use with `python -m venv` and `pip install llm-analysis`. A worker process in that
environment times its `infer()`; this process times `llmsim.simulate` by name; the two alternate in rounds
and each round's ratio is taken, so a machine whose speed drifts moves both alike. Times are CPU-time
medians per call (warm: specs loaded once, as a capacity-planning script calls either repeatedly).

The two do not compute the same thing: llm-analysis times decode as one step times the number of steps,
llmsim sums every step exactly and reads measured kernel tables; the comparison is of the cost of an answer.

Run: python benchmarks/peers.py [--venv .peers-venv] [--rounds 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

# (label, llm-analysis model and tensor parallel size, llmsim model and options); batch 8, prompt 2048, 1024 new
CASES = (
    ("Llama-2-7B, 1 GPU", ("NousResearch_Llama-2-7b-hf", 1), ("llama-2-7b", {})),
    ("Llama-2-70B, TP 4", ("upstage_Llama-2-70b-instruct-v2", 4), ("llama-2-70b", {"tensor_parallel": 4})),
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


def peer_python(venv: Path) -> Path:
    """The venv's interpreter, with llm-analysis installed (created on first use)."""
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"creating {venv} and installing llm-analysis into it", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if subprocess.run([str(python), "-c", "import llm_analysis"], capture_output=True).returncode:
        subprocess.run([str(python), "-m", "pip", "install", "-q", "llm-analysis"], check=True)
    return python


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
    args = parser.parse_args()
    worker = subprocess.Popen([str(peer_python(args.venv)), "-c", WORKER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        print(f"batch {WORKLOAD['batch']}, prompt {WORKLOAD['prompt']}, {WORKLOAD['generated']} generated, H100 SXM; "
              f"CPU-time medians of {args.rounds} interleaved rounds of {args.calls} calls")
        for label, (peer_model, tp), (model, options) in CASES:
            ours, theirs = [], []
            for _ in range(args.rounds):
                ours.append(llmsim_s(model, options, args.calls))
                worker.stdin.write(json.dumps([peer_model, tp, args.calls, *WORKLOAD.values()]) + "\n")
                worker.stdin.flush()
                theirs.append(float(worker.stdout.readline()))
            ratio = statistics.median(a / b for a, b in zip(ours, theirs))
            print(f"{label:<20} llmsim.simulate {statistics.median(ours) * 1e3:7.3f} ms   llm-analysis infer "
                  f"{statistics.median(theirs) * 1e3:7.3f} ms   ratio llmsim / llm-analysis {ratio:5.2f}")
    finally:
        worker.stdin.close()
        worker.wait()


if __name__ == "__main__":
    main()
