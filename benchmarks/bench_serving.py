"""Speed of serve() (not a timed test): 10,000 requests of 1024 tokens in, 250 out (2.5 M decode tokens) on
Llama-3.1-8B / H100 with vLLM, closed loop at 256 clients and open loop at 20 requests/s; the step-cost
grids are built once per setup (shown apart) and reused. Target (the serving issue): under 0.5 s. Then the same
closed loop disaggregated (serve_disaggregated: both pools simulated together, event by event).
Run: python benchmarks/bench_serving.py"""

from __future__ import annotations

import platform
import time

from bench_simulate import median_s  # run as a script: this folder is first on sys.path

import llmsim
from llmsim.serving import serve as serve_module


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
        seconds = median_s(run, 3)
        print(f"serve 10,000 requests ({label}): {seconds:.3f} s median of 3, {r.steps:,} engine steps, "
              f"{int(r.requests['gen_len'].sum()):,} tokens (target < 0.5 s)")

    def split() -> llmsim.ServingResult:  # both pools in one event-driven run (no target of its own)
        return llmsim.serve_disaggregated("llama-3.1-8b", "h100-sxm", prefill={"replicas": 2}, decode={"replicas": 2},
                                          concurrency=256, prompt_len="uniform:819:1024", gen_len="uniform:200:250",
                                          num_requests=10_000)

    r = split()
    print(f"serve_disaggregated 10,000 requests (closed loop, 256 clients, 2 prefill + 2 decode engines): "
          f"{median_s(split, 3):.3f} s median of 3, {r.steps:,} engine steps")


if __name__ == "__main__":
    main()
