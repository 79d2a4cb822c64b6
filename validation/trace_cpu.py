"""Traced vision models on this CPU: measured forward time against llmsim.analyze's prediction.

transformers' ViT, ResNet and ConvNeXt at their default (ViT-B/16, ResNet-50, ConvNeXt-T) widths, random
weights, float32, eager, 1 thread (as validation/cpu-calibrated.toml was calibrated); predicted with
engine="transformers" on that calibrated file (kept apart: the calibration ran matmuls, copies and
element-wise ops, never these models). Writes validation/trace_cpu.md.

    PYTHONPATH=. python validation/trace_cpu.py
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import torch
import transformers

import llmsim

HERE = Path(__file__).parent
HARDWARE = str(HERE / "cpu-calibrated.toml")
CASES = [("vit", "ViTConfig", "ViTModel", 2, 96), ("resnet", "ResNetConfig", "ResNetModel", 2, 96),
         ("convnext", "ConvNextConfig", "ConvNextModel", 2, 96)]
REPEATS, WARMUP = 7, 2


def measure(module: torch.nn.Module, pixels: torch.Tensor) -> float:
    with torch.no_grad():
        for _ in range(WARMUP):
            module(pixels)
        times = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            module(pixels)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rows = []
    for name, config_name, model_name, batch, size in CASES:
        fields = {"image_size": size} if name == "vit" else {}
        config = getattr(transformers, config_name)(**fields)
        module = getattr(transformers, model_name)(config).eval()
        pixels = torch.randn(batch, 3, size, size)
        measured = measure(module, pixels)
        result = llmsim.analyze(module, (pixels,), hardware=HARDWARE, dtype="float32", engine="transformers")
        error = result.time_s / measured - 1
        rows.append(f"| {name} ({model_name}, default config) | {batch} x 3 x {size} x {size} | "
                    f"{result.flops / 1e9:.2f} | {measured * 1e3:.1f} | {result.time_s * 1e3:.1f} | {error:+.1%} | "
                    f"{result.bound} |")
        print(rows[-1], flush=True)
    lines = ["# Traced vision models on this CPU: measured vs predicted", "",
             f"torch {torch.__version__}, transformers {transformers.__version__}, 1 thread, float32, eager, "
             f"median of {REPEATS} after {WARMUP} warm-up runs; predicted by `llmsim.analyze(..., "
             "engine='transformers', hardware='validation/cpu-calibrated.toml')` (traced on meta). "
             "Reproduce: `PYTHONPATH=. python validation/trace_cpu.py`.", "",
             f"Load average when run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (other work shares this "
             "machine: a load above 1 inflates the measured times).", "",
             "| model | input | GFLOP | measured ms | predicted ms | error | predicted bound |",
             "|---|---|---|---|---|---|---|", *rows, ""]
    (HERE / "trace_cpu.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
