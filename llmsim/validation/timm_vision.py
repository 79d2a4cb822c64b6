"""llmsim.analyze against timm's published GPU inference benchmarks (validation/timm_benchmarks.csv): ResNet,
ViT and ConvNeXt on the RTX 4090 (PyTorch 2.9.1, eager and torch.compile) and RTX 3090 (PyTorch 2.4.0, eager),
each timm architecture rebuilt from transformers' own classes on the meta device (TIMM_ARCHITECTURES; the
parameter count checks the rebuild against timm's), traced at the row's batch and image size as the benchmark
ran it (`--amp`: CUDA autocast to float16 over float32 weights, analyze(dtype="float32", autocast="float16"))
and timed by the engine that runs as the benchmark did: "transformers" (eager, one kernel per aten op) for the
eager rows, "torch-compile" (Inductor-fused element-wise chains) for the dynamo rows. The same rows traced in
plain float16 (no autocast) are reported beside.

Validation data only: nothing in llmsim is fitted to these rows. error % = 100 x (predicted - measured) /
measured on samples per second (batch / step time), so a positive error means llmsim is optimistic.
approximation: transformers' ViT projects q, k and v with three linears where timm's uses one qkv linear (the
same FLOPs and weights; eager autocast then casts the norm's output three times where timm casts it once).
timm's torch.compile runs Inductor's default mode (no CUDA graphs); the torch-compile engine replays graphs, a
difference of launch costs only (microseconds against steps of tens of milliseconds at these batches).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# timm name -> (transformers family, its config's values): the same layers, widths and depths (TIMM_ARCHITECTURES'
# parameter counts match timm's param_count to 0.5 %, tests/test_timm_vision.py)
TIMM_ARCHITECTURES: dict[str, tuple[str, dict[str, Any]]] = {
    "resnet18": ("ResNet", {"layer_type": "basic", "depths": [2, 2, 2, 2], "hidden_sizes": [64, 128, 256, 512]}),
    "resnet34": ("ResNet", {"layer_type": "basic", "depths": [3, 4, 6, 3], "hidden_sizes": [64, 128, 256, 512]}),
    "resnet50": ("ResNet", {}),  # ResNetConfig's defaults: bottleneck [3, 4, 6, 3], stride in the 3x3 (v1.5)
    "resnet101": ("ResNet", {"depths": [3, 4, 23, 3]}),
    "resnet152": ("ResNet", {"depths": [3, 8, 36, 3]}),
    "vit_tiny_patch16_224": ("ViT", {"hidden_size": 192, "num_attention_heads": 3, "intermediate_size": 768}),
    "vit_small_patch16_224": ("ViT", {"hidden_size": 384, "num_attention_heads": 6, "intermediate_size": 1536}),
    "vit_base_patch16_224": ("ViT", {}),  # ViTConfig's defaults: ViT-B/16 at 224
    "vit_base_patch32_224": ("ViT", {"patch_size": 32}),
    "vit_large_patch16_224": ("ViT", {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                                      "intermediate_size": 4096}),
    "convnext_tiny": ("ConvNext", {}),  # ConvNextConfig's defaults: depths [3, 3, 9, 3], widths 96 .. 768
    "convnext_small": ("ConvNext", {"depths": [3, 3, 27, 3]}),
    "convnext_base": ("ConvNext", {"depths": [3, 3, 27, 3], "hidden_sizes": [128, 256, 512, 1024]}),
    "convnext_large": ("ConvNext", {"depths": [3, 3, 27, 3], "hidden_sizes": [192, 384, 768, 1536]}),
}
ENGINE_OF_MODE = {"eager": "transformers", "dynamo": "torch-compile"}


@dataclass(frozen=True)
class TimmRow:
    """One published measurement: one forward of a batch of images."""

    source_file: str
    source_commit: str
    gpu: str  # llmsim hardware name
    torch: str
    mode: str  # "eager" or "dynamo"
    model: str  # timm name
    img_size: int
    batch_size: int
    step_time_ms: float
    param_count_m: float

    @property
    def family(self) -> str:
        return TIMM_ARCHITECTURES[self.model][0]

    @property
    def samples_per_s(self) -> float:
        return self.batch_size / (self.step_time_ms / 1e3)


def read_rows(path: str | Path) -> list[TimmRow]:
    """The reference rows of a file written as validation/timm_benchmarks.csv (comment lines skipped)."""
    with Path(path).open(newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    return [TimmRow(source_file=r["source_file"], source_commit=r["source_commit"], gpu=r["gpu"], torch=r["torch"],
                    mode=r["mode"], model=r["model"], img_size=int(r["img_size"]),
                    batch_size=int(r["batch_size"]), step_time_ms=float(r["step_time_ms"]),
                    param_count_m=float(r["param_count_m"]))
            for r in csv.DictReader(lines)]


def build(model: str, batch_size: int, img_size: int) -> tuple[Any, tuple[Any, ...]]:
    """transformers' image classifier of the timm architecture (1000 classes, as timm's ImageNet heads) on the meta
    device, and a pixel batch [B, 3, H, W] on meta."""
    import torch
    import transformers

    family, values = TIMM_ARCHITECTURES[model]
    config = getattr(transformers, f"{family}Config")(num_labels=1000, **values,
                                                       **({"image_size": img_size} if family == "ViT" else {}))
    with torch.device("meta"):
        module = getattr(transformers, f"{family}ForImageClassification")(config).eval()
    return module, (torch.empty(batch_size, 3, img_size, img_size, device="meta"),)


def parameter_count_m(model: str) -> float:
    """Millions of parameters of the rebuilt architecture (as timm's param_count)."""
    module, _ = build(model, 1, 224)
    return sum(p.numel() for p in module.parameters()) / 1e6


def predict_step_s(row: TimmRow, autocast: bool = True) -> float:
    """llmsim.analyze's seconds for one forward of the row's batch with the engine of its mode: under autocast
    float16 over float32 weights, as `--amp` runs (autocast=True), or traced in plain float16."""
    import llmsim

    module, inputs = build(row.model, row.batch_size, row.img_size)
    precision = {"dtype": "float32", "autocast": "float16"} if autocast else {"dtype": "float16"}
    return float(llmsim.analyze(module, example_inputs=inputs, hardware=row.gpu, engine=ENGINE_OF_MODE[row.mode],
                                **precision).time_s)


def compare(rows: list[TimmRow]) -> list[dict[str, Any]]:
    """One dict per row: the row's fields, predicted (under autocast, and in plain float16) and measured samples
    per second and the error %."""
    out = []
    for row in rows:
        measured = row.samples_per_s
        predicted_s, plain_s = predict_step_s(row), predict_step_s(row, autocast=False)
        predicted, plain = row.batch_size / predicted_s, row.batch_size / plain_s
        out.append({**row.__dict__, "family": row.family, "engine": ENGINE_OF_MODE[row.mode],
                    "measured_samples_per_s": measured, "predicted_samples_per_s": predicted,
                    "predicted_step_ms": predicted_s * 1e3, "error_pct": 100.0 * (predicted - measured) / measured,
                    "float16_step_ms": plain_s * 1e3, "float16_error_pct": 100.0 * (plain - measured) / measured})
    return out
