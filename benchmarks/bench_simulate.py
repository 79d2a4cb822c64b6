"""Speed of the simulator itself (not a timed test): one simulate() of a full generation (the same
workload repeated, then different workloads, then an MoE model), and a million-point sweep.
Run: python benchmarks/bench_simulate.py"""

from __future__ import annotations

import platform
import statistics
import time

import llmsim
from llmsim.analysis.regime import sweep


def median_s(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def best_s(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    model = llmsim.load_model("llama-3.1-70b")
    hw = llmsim.load_hardware("h100-sxm")
    llmsim.simulate(model, hw, batch_size=16, prompt_len=2048, gen_len=1024)  # warm-up
    one = median_s(lambda: llmsim.simulate(model, hw, batch_size=16, prompt_len=2048, gen_len=1024), 200)
    print(f"{platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"simulate(llama-3.1-70b, h100-sxm, B=16, prompt 2048, 1024 generated): median {one * 1e3:.3f} ms"
          f" (target < 1 ms)")
    # different workloads call after call (nothing reused but what depends on model and options only)
    workloads = [(b, p) for b in (1, 3, 8, 16, 24, 64, 100, 256) for p in (17, 128, 512, 2048, 4000)]
    varied = median_s(lambda: [llmsim.simulate(model, hw, batch_size=b, prompt_len=p, gen_len=1024)
                               for b, p in workloads], 20) / len(workloads)
    print(f"simulate(llama-3.1-70b, h100-sxm, 40 different batch sizes x prompt lengths, 1024 generated):"
          f" {varied * 1e3:.3f} ms per call")
    # measured kernel tables (the default engine, vllm) against the analytic roofline alone, interleaved and the
    # best of several rounds (the two differ by a fraction of a millisecond: a busy machine's noise is larger)
    analytic = {"engine": "roofline", "efficiency": "achievable"}
    rounds = [(best_s(lambda: llmsim.simulate(model, hw, batch_size=16, prompt_len=2048, gen_len=1024), 50),
               best_s(lambda: llmsim.simulate(model, hw, batch_size=16, prompt_len=2048, gen_len=1024, **analytic),
                      50)) for _ in range(5)]
    tables, bare = min(r[0] for r in rounds), min(r[1] for r in rounds)
    print(f"  best of 250: {tables * 1e3:.3f} ms with tables, {bare * 1e3:.3f} ms with engine='roofline' (no tables):"
          f" ratio {tables / bare:.2f} (target <= 1.5)")
    moe = llmsim.load_model("deepseek-v3")
    llmsim.simulate(moe, hw, batch_size=16, prompt_len=2048, gen_len=1024)  # warm-up
    deepseek = median_s(lambda: llmsim.simulate(moe, hw, batch_size=16, prompt_len=2048, gen_len=1024), 100)
    print(f"simulate(deepseek-v3, h100-sxm, B=16, prompt 2048, 1024 generated): median {deepseek * 1e3:.3f} ms")
    grid = {"batch_size": list(range(1, 1001)), "prompt_len": list(range(64, 1064)), "gen_len": 256}
    sweep(model, hw, **grid)  # warm-up
    big = median_s(lambda: sweep(model, hw, **grid), 5)
    print(f"sweep of 1,000,000 points (1000 batch sizes x 1000 prompt lengths, 256 generated): median {big:.2f} s"
          f" (target about 1 s)")


if __name__ == "__main__":
    main()
