"""Speed of serve() (not a timed test): 10,000 requests of 1024 tokens in, 250 out (2.5 M decode tokens) on
Llama-3.1-8B / H100 with vLLM, closed loop at 256 clients and open loop at 20 requests/s; the step-cost
grids are built once per setup (shown apart) and reused. Target (the serving issue): under 0.5 s.
Run: python benchmarks/bench_serving.py"""

from __future__ import annotations

import platform
import statistics
import time

import llmsim
from llmsim.serving import serve as serve_module


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    print(f"{platform.processor() or platform.machine()}, python {platform.python_version()}")
    llmsim.serve("llama-3.1-8b", "h100-sxm", concurrency=2, num_requests=2)  # load model, hardware, tables
    serve_module._STEP_COSTS.clear()
    start = time.perf_counter()
    llmsim.serve("llama-3.1-8b", "h100-sxm", concurrency=2, num_requests=2)
    print(f"step-cost grids for one setup (8192-token budget, 1024 sequences): {time.perf_counter() - start:.3f} s")
    for label, load in (("closed loop, 256 clients", {"concurrency": 256}),
                        ("open loop, 20 req/s Poisson", {"request_rate": 20.0})):
        def run(load=load):
            return llmsim.serve("llama-3.1-8b", "h100-sxm", prompt_len=1024, gen_len=250, num_requests=10_000, **load)

        r = run()
        seconds = timed(run, 3)
        print(f"serve 10,000 requests ({label}): {seconds:.3f} s median of 3, {r.steps:,} engine steps, "
              f"{int(r.requests['gen_len'].sum()):,} tokens (target < 0.5 s)")


if __name__ == "__main__":
    main()
