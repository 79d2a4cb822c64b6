"""The traced zoo on this CPU: each model run for real (random weights, float32, eager, 1 thread) against
llmsim.analyze's prediction (engine="transformers"), per model and per op class. Writes validation/zoo.md.

Predicted with validation/cpu-calibrated.toml (the repository's calibrated CPU file) and, where present,
validation/cpu-calibrated-zoo.toml (calibrated on the machine this runs on). Kept apart: calibration
measures matmuls, copies and element-wise ops (`llmsim calibrate`), never these models; nothing is fitted.

Models: transformers' ViT-B/16, ResNet-50, ConvNeXt-T (hf:), SD 1.5's CLIP text encoder, UNet and VAE
decoder (shipped configs), and SD3-medium's and FLUX.1-schnell's transformers with the shipped widths but
fewer blocks (their full weights, 8 and 48 GB in float32, do not fit beside the other work on this machine;
every block is the same, so fewer blocks change the count, not the kind of work).
Measured: the process's CPU time (1 thread: the time it computed, not the time it waited for a core on a
shared machine), the minimum over REPEATS runs after WARMUP, the wall time beside. Per op class:
torch.profiler's shares of aten self time in one more run, grouped as the prediction's kernels are
(convolution, matmul, attention, norm, other).

    PYTHONPATH=. python validation/zoo.py [NAME ...]
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
import transformers

import llmsim

HERE = Path(__file__).parent
HARDWARE = str(HERE / "cpu-calibrated.toml")
HERE_FILE = str(HERE / "cpu-calibrated-zoo.toml")  # calibrated on the machine this ran on, in the same session
FILE_LABELS = {"shipped": "cpu-calibrated.toml", "here": "cpu-calibrated-zoo.toml"}
FILE_NOTES = {
    "shipped": "the repository's calibrated CPU file, measured on 2026-11-22 on another machine ('Intel(R) Xeon(R) "
               "Processor', its description says) by wall clock",
    "here": "`llmsim calibrate --device cpu --dtypes float32 --threads 1` run on this machine just before these "
            "measurements (1-thread runs timed by process CPU time), on a quiet machine (load about 1; the "
            "previous calibration, taken at load 8-9, had a 22 % matmul spread, this one 3.6 %)",
}
REPEATS, WARMUP = 5, 1
CLASSES = ("convolution", "matmul", "attention", "norm", "other")


def _hf(name: str, size: int) -> tuple[torch.nn.Module, tuple, dict]:
    from llmsim.trace.zoo import HF_VISION

    config_name, model_name = HF_VISION[name]
    config = getattr(transformers, config_name)(**({"image_size": size} if name == "vit" else {}))
    return getattr(transformers, model_name)(config).eval(), (torch.randn(1, 3, size, size),), {}


def _diffusers(stem: str, **overrides: Any) -> torch.nn.Module:
    import diffusers

    from llmsim.trace.diffusion import zoo_config

    spec = zoo_config(stem)
    return getattr(diffusers, spec["class"])(**{**spec["config"], **overrides}).eval()


def _real(meta_inputs: tuple[tuple, dict]) -> tuple[tuple, dict]:
    """The zoo's meta inputs as CPU tensors (random floats, the integer timesteps kept)."""
    def real(t: torch.Tensor) -> torch.Tensor:
        return torch.randn(t.shape) if t.is_floating_point() else torch.full(t.shape, 999, dtype=t.dtype)
    args, kwargs = meta_inputs
    return tuple(real(a) for a in args), {k: real(v) for k, v in kwargs.items()}


def cases() -> dict[str, tuple[str, Any]]:
    """name -> (description, builder of (module on CPU, args, kwargs))."""
    from llmsim.trace.diffusion import CLIP_TOKENS, _vae_decoder, denoiser_inputs, zoo_config

    def text_encoder() -> tuple:
        config = transformers.CLIPTextConfig(**zoo_config("sd15-text-encoder")["config"])
        return transformers.CLIPTextModel(config).eval(), (torch.randint(0, 49408, (1, CLIP_TOKENS)),), {}

    return {
        "hf:vit": ("ViT-B/16, 1 x 3 x 224 x 224", lambda: _hf("vit", 224)),
        "hf:resnet": ("ResNet-50, 1 x 3 x 224 x 224", lambda: _hf("resnet", 224)),
        "hf:convnext": ("ConvNeXt-T, 1 x 3 x 224 x 224", lambda: _hf("convnext", 224)),
        "sd15 text encoder": ("CLIP ViT-L text, 1 x 77 tokens", text_encoder),
        "diffusers:unet-sd15": ("UNet, 1 x 4 x 32 x 32 latent (256 px), no CFG",
                                lambda: (_diffusers("sd15-unet"), *_real(denoiser_inputs("unet", 1, 32)))),
        "diffusers:vae-sd15": ("VAE decode, 1 x 4 x 16 x 16 -> 128 x 128 px",
                               lambda: (_vae_decoder(_diffusers("sd15-vae")), *_real(denoiser_inputs("vae", 1, 16)))),
        "diffusers:sd3-transformer": ("SD3-medium widths, 4 of 24 blocks, 1 x 16 x 32 x 32 latent + 333 text tokens",
                                      lambda: (_diffusers("sd3-medium-transformer", num_layers=4),
                                               *_real(denoiser_inputs("sd3", 1, 32)))),
        "diffusers:flux": ("FLUX.1-schnell widths, 1 of 19 double + 2 of 38 single blocks, 256 image + 256 text "
                           "tokens",
                           lambda: (_diffusers("flux1-schnell-transformer", num_layers=1, num_single_layers=2),
                                    *_real(denoiser_inputs("flux", 1, 32)))),
    }


def op_class_measured(name: str) -> str:
    """A profiler aten op name (e.g. 'aten::mkldnn_convolution') -> its class."""
    if "conv" in name:
        return "convolution"
    if "scaled_dot_product" in name or "flash_attention" in name:
        return "attention"
    if any(m in name for m in ("::mm", "::addmm", "::bmm", "::baddbmm", "::matmul", "::linear")):
        return "matmul"
    if "norm" in name:
        return "norm"
    return "other"


def op_class_predicted(kernel: Any) -> str:
    if "convolution" in kernel.aten:
        return "convolution"
    return {"matmul": "matmul", "attention": "attention", "norm": "norm"}.get(kernel.kind, "other")


def measure(module: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[float, float, dict[str, float]]:
    """(min process CPU seconds, min wall seconds over REPEATS, profiler share of the aten self time per
    class in one more run)."""
    with torch.no_grad():
        for _ in range(WARMUP):
            module(*args, **kwargs)
        cpu, wall = [], []
        for _ in range(REPEATS):
            c0, t0 = time.process_time(), time.perf_counter()
            module(*args, **kwargs)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            module(*args, **kwargs)
    per_class = dict.fromkeys(CLASSES, 0.0)
    for event in prof.key_averages():
        if event.key.startswith("aten::"):
            per_class[op_class_measured(event.key)] += event.self_cpu_time_total
    total = sum(per_class.values()) or 1.0
    return min(cpu), min(wall), {c: v / total for c, v in per_class.items()}


def _predicted_classes(result: Any) -> dict[str, float]:
    classes = dict.fromkeys(CLASSES, 0.0)
    for k in result.kernels:
        classes[op_class_predicted(k.kernel)] += k.time_s
    return classes


def main(names: list[str]) -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    files = {"shipped": HARDWARE}
    if Path(HERE_FILE).is_file():
        files["here"] = HERE_FILE
    rows, class_rows, loads = [], [], []
    errors: dict[str, list[float]] = {f: [] for f in files}
    for name, (description, builder) in cases().items():
        if names and name not in names:
            continue
        module, args, kwargs = builder()
        predicted = {f: llmsim.analyze(module, args, example_kwargs=kwargs, hardware=path, dtype="float32",
                                       engine="transformers") for f, path in files.items()}
        loads.append(os.getloadavg()[0])
        cpu_s, wall_s, shares = measure(module, args, kwargs)
        cells = []
        for f, result in predicted.items():
            errors[f].append(result.time_s / cpu_s - 1)
            cells.append(f"{result.time_s * 1e3:.1f} | {errors[f][-1]:+.1%}")
        last = predicted[list(files)[-1]]
        rows.append(f"| {name} | {description} | {last.flops / 1e9:.1f} | {cpu_s * 1e3:.1f} | {wall_s * 1e3:.1f} | "
                    f"{' | '.join(cells)} | {last.bound} |")
        print(rows[-1], flush=True)
        predicted_classes = _predicted_classes(last)
        class_cells = []
        for c in CLASSES:
            m, p = shares[c] * cpu_s, predicted_classes[c]
            class_cells.append(f"{m * 1e3:.1f} / {p * 1e3:.1f} ({p / m - 1:+.0%})" if m > 0 and p > 0 else
                               f"{m * 1e3:.1f} / {p * 1e3:.1f}")
        class_rows.append(f"| {name} | {' | '.join(class_cells)} |")
        print(class_rows[-1], flush=True)
        del module
    medians = {f: statistics.median(abs(e) for e in errs) for f, errs in errors.items()}
    headers = " | ".join(f"predicted ms ({FILE_LABELS[f]}) | error" for f in files)
    lines = [
        "# The traced zoo on this CPU: measured vs predicted", "",
        f"torch {torch.__version__}, transformers {transformers.__version__}, diffusers {_diffusers_version()}, "
        f"{_cpu()}, 1 thread, float32, eager, random weights. Measured: the process's CPU time (time.process_time), "
        f"the minimum of {REPEATS} runs after {WARMUP} warm-up; the wall time's minimum beside it. Predicted: "
        "`llmsim.analyze(..., engine='transformers', dtype='float32', hardware=FILE)` (traced on meta). "
        "Reproduce: `PYTHONPATH=. python validation/zoo.py`.", "",
        f"**Machine load**: 2 cores, 1-minute load average {min(loads):.1f} to {max(loads):.1f} while "
        f"measuring ({'quiet' if max(loads) < 2 else 'shared with other work'}). A process waiting for a core "
        "does not add CPU time, which is why the CPU time is the measure (the wall time counts the other "
        "work); caches and memory bandwidth are still shared, which CPU time does not remove.", "",
        *[f"Median |error| over {len(errors[f])} models against {FILE_LABELS[f]}: **{medians[f]:.1%}** "
          "(target 15 %)." for f in files], "",
        "Hardware files (calibration data, kept apart from these models: matmuls, copies and element-wise ops "
        "only, nothing fitted here):", *[f"- {FILE_LABELS[f]}: {FILE_NOTES[f]}" for f in files], "",
        f"| model | run | GFLOP | measured CPU ms | wall ms | {headers} | predicted bound |",
        f"|---|---|---|---|---|{'---|---|' * len(files)}---|", *rows, "",
        "## Per op class", "",
        "Measured (ms): the CPU time above split by torch.profiler's shares of aten self time in one more run; "
        f"predicted (ms): the kernels of that class against {FILE_LABELS[list(files)[-1]]}. `other`: element-wise "
        "ops, copies, pooling, embedding and the dispatch of composite ops (aten::linear, aten::conv2d, ...).", "",
        f"| model | {' | '.join(CLASSES)} |", f"|---|{'---|' * len(CLASSES)}", *class_rows, ""]
    if not names:
        (HERE / "zoo.md").write_text("\n".join(lines))
    print("\n".join(lines))


def _diffusers_version() -> str:
    import diffusers

    return diffusers.__version__


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "cpu"


if __name__ == "__main__":
    main(sys.argv[1:])
