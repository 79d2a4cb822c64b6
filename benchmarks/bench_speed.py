"""Speed of llmsim's entry points against the targets of issue 21, each beside a peer measured in the same run
(not a test).

- `import llmsim` in a fresh interpreter (target <= 0.15 s); peer: `import llm_analysis.analysis`;
- simulate() by name, warm (target <= 0.15 ms median); peer: llm-analysis's `infer()` on its nearest case
  (Llama-2-70B, the 70B shape it ships; tensor parallel 4, as it refuses a 70B model that does not fit one
  GPU), in interleaved rounds of CPU time (benchmarks/peers.py's worker); also with new workloads every call
  (nothing of one call's workload reused by the next) and with preloaded specs;
- the CLI's `llmsim simulate` in a fresh process once the disk cache holds the specs (target <= 0.4 s);
  peer: `python -m llm_analysis.analysis infer ...`;
- find_crossover for decode (target <= 10 ms); llm-analysis has no such search;
- a 1M-point sweep in a fresh process: time and peak RSS (targets <= 1 s and <= 400 MB for Llama-3.1-70B;
  DeepSeek-V3 <= 800 MB); peer: llm-analysis has no sweep, so one million infer() calls, extrapolated.

Fresh processes run with Python's bytecode cache, as an installed package has it (pip compiles on install):
PYTHONDONTWRITEBYTECODE is dropped for them, and one untimed run of each command comes first (compiling
llmsim's sources at every start would add about 0.1 s here).
The peer runs in its own virtual environment (--peer-venv, made by `python benchmarks/peers.py` on first use);
without one the peer columns are left out. Times are wall-clock medians except where CPU time is said: on a
busy machine compare the ratios, which come from the same run.

Run: python benchmarks/bench_speed.py [--quick] [--peer-venv .peers-venv]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import WORKER  # the peer's timing worker

PY = sys.executable
PEER_CASE = ("upstage_Llama-2-70b-instruct-v2", 4)  # llm-analysis's 70B, tensor parallel 4
WORKLOAD = (8, 2048, 1024)  # batch, prompt, generated
SWEEP = ("import resource, sys, time, llmsim\n"
         "t = time.perf_counter()\n"
         "sweep = llmsim.sweep\n"  # the first use imports the analysis modules (numpy, pydantic models)
         "u = time.perf_counter()\n"
         "sweep(sys.argv[1], 'h100-sxm', batch_size=list(range(1, 1001)), prompt_len=list(range(64, 1064)),"
         " gen_len=256)\n"
         "r = resource.getrusage(resource.RUSAGE_SELF)\n"
         "print(time.perf_counter() - t, r.ru_maxrss, r.ru_utime + r.ru_stime, time.perf_counter() - u)")


FRESH_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def fresh_wall_s(python: str, code: list[str], runs: int, env: dict[str, str] | None = None) -> float:
    """Median wall time of a fresh process running `code` (argv after the interpreter), after one untimed run
    (which writes the bytecode cache)."""
    env = dict(FRESH_ENV, **(env or {}))
    subprocess.run([python, *code], check=True, capture_output=True, env=env)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([python, *code], check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def warm_median_s(fn, number: int, repeat: int, timer=time.perf_counter) -> float:
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat, timer=timer)) / number


def line(label: str, measured: float, target: float | None, unit: str = "s", scale: float = 1.0,
         peer: float | None = None) -> None:
    goal = f"target <= {target * scale:g} {unit}" if target is not None else ""
    verdict = "" if target is None else ("meets it" if measured <= target else f"{measured / target:.1f}x over")
    versus = f"peer {peer * scale:9.3f} {unit}, ratio llmsim/peer {measured / peer:6.3f}" if peer else ""
    print(f"{label:<58} {measured * scale:>9.3f} {unit:<3} {goal:<20} {verdict:<10} {versus}")


class Peer:
    """llm-analysis in its own venv: a worker process timing infer() (CPU time per call)."""

    def __init__(self, venv: Path) -> None:
        self.python = str(venv / "bin" / "python")
        self.worker = subprocess.Popen([self.python, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True)

    def infer_s(self, calls: int) -> float:
        assert self.worker.stdin is not None and self.worker.stdout is not None
        self.worker.stdin.write(json.dumps([*PEER_CASE, calls, *WORKLOAD]) + "\n")
        self.worker.stdin.flush()
        return float(self.worker.stdout.readline())

    def close(self) -> None:
        if self.worker.stdin is not None:
            self.worker.stdin.close()
        self.worker.wait()


def cpu_per_call_s(fn, calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--peer-venv", type=Path, default=Path(".peers-venv"))
    args = parser.parse_args()
    runs = 3 if args.quick else 10
    has_peer = (args.peer_venv / "bin" / "python").exists()
    peer = Peer(args.peer_venv) if has_peer else None
    peer_python = str(args.peer_venv / "bin" / "python")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; medians"
          + ("" if has_peer else f"; no peer venv at {args.peer_venv} (python benchmarks/peers.py makes one)"))
    package = Path(__file__).resolve().parents[1] / "llmsim"  # its bytecode cache written, as pip does on install
    subprocess.run([PY, "-m", "compileall", "-q", str(package)], check=True, env=FRESH_ENV)
    try:
        line("python -c pass (interpreter start)", fresh_wall_s(PY, ["-c", "pass"], runs), None)
        line("import llmsim", fresh_wall_s(PY, ["-c", "import llmsim"], runs), 0.15,
             peer=fresh_wall_s(peer_python, ["-c", "import llm_analysis.analysis"], runs) if has_peer else None)

        import llmsim

        batch, prompt, generated = WORKLOAD

        def by_name() -> None:
            llmsim.simulate("llama-3.1-70b", "h100-sxm", batch_size=batch, prompt_len=prompt, gen_len=generated)

        for _ in range(1000):  # warm: caches filled, the collector's generations settled
            by_name()
        rounds, calls = (5, 50) if args.quick else (15, 100)
        ours, theirs = [], []
        for _ in range(rounds):  # interleaved: a machine whose speed drifts moves both alike
            ours.append(cpu_per_call_s(by_name, calls))
            if peer is not None:
                theirs.append(peer.infer_s(calls))
        line("simulate(llama-3.1-70b, h100-sxm, B 8, 2048 + 1024) by name", statistics.median(ours), 0.15e-3, "ms",
             1e3, peer=statistics.median(theirs) if theirs else None)
        print("  (CPU time per call; peer: llm-analysis infer() of Llama-2-70B, TP 4, interleaved rounds)")
        workloads = iter([(b, p, 1 + (b * p) % 997) for b in range(1, 200) for p in range(100, 4100, 40)])

        def new_workload() -> None:
            b, p, g = next(workloads)
            llmsim.simulate("llama-3.1-70b", "h100-sxm", batch_size=b, prompt_len=p, gen_len=g)

        line("  the same, a new workload every call", cpu_per_call_s(new_workload, 2000), None, "ms", 1e3)
        model, hw = llmsim.load_model("llama-3.1-70b"), llmsim.load_hardware("h100-sxm")
        preloaded = warm_median_s(lambda: llmsim.simulate(model, hw, batch_size=batch, prompt_len=prompt,
                                                          gen_len=generated), 20, 10 if args.quick else 50)
        line("  the same with preloaded ModelSpec and HardwareSpec", preloaded, None, "ms", 1e3)

        cli = ["-m", "llmsim.cli", "simulate", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch-size", "8",
               "--prompt-len", "2048", "--gen-len", "256"]
        peer_cli = ["-m", "llm_analysis.analysis", "infer", "--model_name", "NousResearch_Llama-2-7b-hf",
                    "--gpu_name", "h100-sxm-80gb", "--dtype_name", "w16a16e16", "--batch_size_per_gpu", "8",
                    "--seq_len", "2048", "--num_tokens_to_generate", "256", "--log_level", "ERROR"]
        with tempfile.TemporaryDirectory() as cache:
            env = {"LLMSIM_CACHE_DIR": cache}
            start = time.perf_counter()
            subprocess.run([PY, *cli], check=True, capture_output=True, env=dict(FRESH_ENV, **env))
            line("CLI simulate llama-3.1-8b, first run (empty disk cache)", time.perf_counter() - start, None)
            line("CLI simulate llama-3.1-8b (disk cache filled)", fresh_wall_s(PY, cli, runs, env), 0.4,
                 peer=fresh_wall_s(peer_python, peer_cli, runs) if has_peer else None)

        def crossover_once() -> None:
            llmsim.find_crossover("llama-3.1-70b", "h100-sxm", phase="decode", vary="batch_size", kv_len=2048)

        crossover = warm_median_s(crossover_once, 3, 5 if args.quick else 15, timer=time.process_time)
        line("find_crossover(llama-3.1-70b, decode, vary batch_size), CPU", crossover, 10e-3, "ms", 1e3)

        per_call = statistics.median(theirs) if theirs else None
        for model_name, mb_target in (("llama-3.1-70b", 400), ("deepseek-v3", 800)):
            out = [subprocess.run([PY, "-c", SWEEP, model_name], check=True, capture_output=True, text=True,
                                  env=FRESH_ENV).stdout.split() for _ in range(1 if args.quick else 3)]
            seconds = statistics.median(float(o[0]) for o in out)
            peak_mb = statistics.median(float(o[1]) for o in out) / 1024  # ru_maxrss: KiB on Linux
            line(f"sweep of 1M points (1000 x 1000), {model_name}, fresh process", seconds,
                 1.0 if model_name == "llama-3.1-70b" else None,
                 peer=per_call * 1e6 if per_call and model_name == "llama-3.1-70b" else None)
            call_s, cpu_s = (statistics.median(float(o[i]) for o in out) for i in (3, 2))
            line("  of which the sweep call (after its first-use imports)", call_s, None)
            line("  its process CPU time (all imports and the sweep)", cpu_s, None)
            line("  its peak RSS", peak_mb, mb_target, "MB")
        if per_call:
            print("  (sweep peer: llm-analysis has no sweep; one million infer() calls, extrapolated from the above)")
    finally:
        if peer is not None:
            peer.close()


if __name__ == "__main__":
    main()
