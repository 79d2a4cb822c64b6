"""The GPU validation of llmsim.analyze against timm's published benchmarks (validation/vision_gpu.py): the
reference rows parse, each timm architecture is rebuilt exactly (its parameter count is timm's), and a row's
comparison is analyze's own time."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmsim.hardware import load_hardware
from llmsim.validation.timm_vision import ENGINE_OF_MODE, TIMM_ARCHITECTURES, compare, parameter_count_m, read_rows

pytest.importorskip("torch")
pytest.importorskip("transformers")
CSV = Path(__file__).resolve().parent.parent / "validation" / "timm_benchmarks.csv"


def test_the_reference_rows_parse_and_name_shipped_devices() -> None:
    rows = read_rows(CSV)
    # 37 architecture x image-size rows in each of timm's three files (RTX 4090 eager and dynamo, RTX 3090 eager)
    assert len(rows) == 111
    assert {r.mode for r in rows} == set(ENGINE_OF_MODE)
    assert {r.model for r in rows} == set(TIMM_ARCHITECTURES)
    for gpu in {r.gpu for r in rows}:
        load_hardware(gpu)  # a shipped hardware file
    vit = next(r for r in rows if r.model == "vit_base_patch16_224" and r.mode == "eager" and r.gpu == "rtx-4090")
    # results/benchmark-infer-amp-nchw-pt291-cu128-4090.csv: "vit_base_patch16_224,224,2992.79,342.132,1024,86.57,..."
    assert (vit.img_size, vit.batch_size, vit.step_time_ms, vit.param_count_m) == (224, 1024, 342.132, 86.57)


@pytest.mark.parametrize("model", sorted(TIMM_ARCHITECTURES))
def test_each_rebuilt_architecture_has_timms_parameter_count(model: str) -> None:
    timm = {r.model: r.param_count_m for r in read_rows(CSV)}
    # timm's param_count (millions, two decimals): e.g. resnet50 25.56, vit_base_patch16_224 86.57, convnext_tiny 28.59
    assert parameter_count_m(model) == pytest.approx(timm[model], abs=0.006)


def test_a_rows_comparison_is_analyzes_time() -> None:
    import llmsim
    from llmsim.validation.timm_vision import build

    row = next(r for r in read_rows(CSV) if r.model == "resnet50" and r.img_size == 224 and r.mode == "dynamo")
    result, = compare([row])
    module, inputs = build("resnet50", 1024, 224)
    step_s = llmsim.analyze(module, example_inputs=inputs, hardware="rtx-4090", dtype="float32", autocast="float16",
                            engine="torch-compile").time_s
    assert result["predicted_step_ms"] == pytest.approx(step_s * 1e3)
    # measured: 1024 images / 127.355 ms = 8040.5 images/s (the file's infer_samples_per_sec, 8039.05, is over the
    # whole timed loop); error % = 100 x (1024 / step_s - 8040.5) / 8040.5
    assert result["measured_samples_per_s"] == pytest.approx(1024 / 0.127355)
    assert result["error_pct"] == pytest.approx(100 * (1024 / step_s - 1024 / 0.127355) / (1024 / 0.127355))
