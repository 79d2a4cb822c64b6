"""Speed of llmsim's entry points against the targets of issue 21 (printed as measured vs target; not a test).

- `import llmsim` in a fresh interpreter (target <= 0.15 s), beside a bare interpreter's start;
- simulate() by name, warm (target <= 0.15 ms median), beside the same call with preloaded specs;
- the CLI's `llmsim simulate` in a fresh process once the disk cache holds the specs (target <= 0.4 s),
  and its very first run with an empty cache (which builds the spec through transformers);
- find_crossover for decode (target <= 10 ms);
- a 1M-point sweep in a fresh process: time and peak RSS (targets <= 1 s, <= 400 MB).

Run: python benchmarks/bench_speed.py [--quick]. Wall-clock medians: on a busy machine compare ratios only.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit

PY = sys.executable


def fresh_wall_s(code: list[str], runs: int, env: dict[str, str] | None = None) -> float:
    """Median wall time of a fresh process running `code` (argv after the interpreter)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([PY, *code], check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def warm_median_s(fn, number: int, repeat: int) -> float:
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number


def line(label: str, measured: float, target: float | None, unit: str = "s", scale: float = 1.0) -> None:
    goal = f"target <= {target * scale:g} {unit}" if target is not None else ""
    verdict = "" if target is None else ("meets it" if measured <= target else f"{measured / target:.1f}x over")
    print(f"{label:<58} {measured * scale:>9.3f} {unit:<3} {goal:<20} {verdict}")


def main() -> None:
    quick = "--quick" in sys.argv
    runs = 3 if quick else 10
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; medians")
    line("python -c pass (interpreter start)", fresh_wall_s(["-c", "pass"], runs), None)
    line("import llmsim", fresh_wall_s(["-c", "import llmsim"], runs), 0.15)
    line("import llmsim; llmsim.simulate (loads the simulate path)",
         fresh_wall_s(["-c", "import llmsim; llmsim.simulate"], runs), None)

    import llmsim

    by_name = warm_median_s(lambda: llmsim.simulate("llama-3.1-70b", "h100-sxm", batch_size=8, prompt_len=2048,
                                                    gen_len=1024), 20, 10 if quick else 50)
    model, hw = llmsim.load_model("llama-3.1-70b"), llmsim.load_hardware("h100-sxm")
    preloaded = warm_median_s(lambda: llmsim.simulate(model, hw, batch_size=8, prompt_len=2048, gen_len=1024),
                              20, 10 if quick else 50)
    line("simulate(llama-3.1-70b, h100-sxm, B 8, 2048 + 1024) by name", by_name, 0.15e-3, "ms", 1e3)
    line("  the same with preloaded ModelSpec and HardwareSpec", preloaded, None, "ms", 1e3)

    cli = ["-m", "llmsim.cli", "simulate", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch-size", "8",
           "--prompt-len", "2048", "--gen-len", "256"]
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, LLMSIM_CACHE_DIR=cache)
        line("CLI simulate llama-3.1-8b, first run (empty disk cache)", fresh_wall_s(cli, 1, env), None)
        line("CLI simulate llama-3.1-8b (disk cache filled)", fresh_wall_s(cli, runs, env), 0.4)

    crossover = warm_median_s(lambda: llmsim.find_crossover("llama-3.1-70b", "h100-sxm", phase="decode",
                                                            vary="batch_size", kv_len=2048), 3, 5 if quick else 15)
    line("find_crossover(llama-3.1-70b, decode, vary batch_size)", crossover, 10e-3, "ms", 1e3)

    sweep = ("import resource, time, llmsim\n"
             "t = time.perf_counter()\n"
             "llmsim.sweep('llama-3.1-70b', 'h100-sxm', batch_size=list(range(1, 1001)),"
             " prompt_len=list(range(64, 1064)), gen_len=256)\n"
             "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = [subprocess.run([PY, "-c", sweep], check=True, capture_output=True, text=True).stdout.split()
           for _ in range(1 if quick else 3)]
    seconds = statistics.median(float(o[0]) for o in out)
    peak_mb = statistics.median(float(o[1]) for o in out) / 1024  # ru_maxrss: KiB on Linux
    line("sweep of 1M points (1000 x 1000 x 1), fresh process", seconds, 1.0)
    line("  its peak RSS", peak_mb, 400, "MB")


if __name__ == "__main__":
    main()
