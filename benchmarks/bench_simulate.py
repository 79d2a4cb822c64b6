"""Speed of the simulator itself (not a timed test): one simulate() of a full generation, and a
million-point sweep. Run: python benchmarks/bench_simulate.py"""

from __future__ import annotations

import platform
import statistics
import time

import llmsim
from llmsim.regime import sweep


def median_s(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    model = llmsim.load_model("llama-3.1-70b")
    hw = llmsim.load_hardware("h100-sxm")
    llmsim.simulate(model, hw, batch_size=16, prompt_len=2048, gen_len=1024)  # warm-up
    one = median_s(lambda: llmsim.simulate(model, hw, batch_size=16, prompt_len=2048, gen_len=1024), 200)
    print(f"{platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"simulate(llama-3.1-70b, h100-sxm, B=16, prompt 2048, 1024 generated): median {one * 1e3:.3f} ms"
          f" (target < 1 ms)")
    grid = {"batch_size": list(range(1, 1001)), "prompt_len": list(range(64, 1064)), "gen_len": 256}
    sweep(model, hw, **grid)  # warm-up
    big = median_s(lambda: sweep(model, hw, **grid), 5)
    print(f"sweep of 1,000,000 points (1000 batch sizes x 1000 prompt lengths, 256 generated): median {big:.2f} s"
          f" (target about 1 s)")


if __name__ == "__main__":
    main()
