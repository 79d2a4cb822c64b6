"""What the figures say: the roofs of the run's precision, distinct styles, op labels apart, the
out-of-memory warning, and the breakdown's per-token decode time and workload title."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import llmsim
from llmsim.report.plot import breakdown_figure, roofline_figure, sweep_figure, text_extent

MODEL, GPU = "llama-3.1-8b", "h100-sxm"


def _texts(fig) -> list[str]:  # type: ignore[no-untyped-def]
    """Every text of the figure: titles, annotations, tick labels and legend entries."""
    from matplotlib.text import Text

    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


@pytest.fixture(scope="module")
def bf16() -> llmsim.SimulationResult:
    return llmsim.simulate(MODEL, GPU, batch_size=16, prompt_len=2048, gen_len=512)


@pytest.fixture(scope="module")
def too_big() -> llmsim.SimulationResult:
    result = llmsim.simulate("llama-3.1-70b", GPU, batch_size=64, prompt_len=4096, gen_len=512)
    assert not result.memory.fits
    return result


def test_roofline_ridge_of_the_run_precision(bf16: llmsim.SimulationResult) -> None:
    texts = _texts(roofline_figure(bf16, GPU))
    ridges = [t for t in texts if "ridge" in t]
    # bf16 matmuls (989 TFLOP/s over 3.35 TB/s) and the fp16 vector unit; no fp8 ridge on a bf16 run
    assert any(t.startswith("bf16 ridge 295") for t in ridges), ridges
    assert any(t.startswith("fp16 ridge") for t in ridges), ridges
    assert not any("fp8" in t for t in ridges)
    assert any("bf16 matrix 989.4 TFLOP/s" in t and "matmuls" in t for t in texts)
    assert any("matmuls bf16" in t for t in texts)  # the title names the precision


def test_roofline_ridge_follows_the_precision() -> None:
    result = llmsim.simulate(MODEL, GPU, batch_size=16, prompt_len=2048, gen_len=512, weight_dtype="fp8",
                             activation_dtype="fp8")
    ridges = [t for t in _texts(roofline_figure(result, GPU)) if "ridge" in t]
    assert any(t.startswith("fp8 ridge 591") for t in ridges) and not any("bf16" in t for t in ridges)


def test_roofline_of_a_quantized_checkpoint_draws_its_gemms_roof() -> None:
    """DeepSeek-V3's block-scaled fp8 GEMMs: the plot had said "matmuls bf16" and marked the fp8 roof unused."""
    result = llmsim.simulate("deepseek-v3", "h200", batch_size=8, prompt_len=1024, gen_len=4, tensor_parallel=8)
    assert ", quantized GEMMs fp8," in result.assumptions["dtypes"]
    texts = _texts(roofline_figure(result, "h200"))
    # fp8 1979 TFLOP/s over 4.8 TB/s: ridge 412; bf16 989.4 / 4.8: 206
    assert any(t.startswith("fp8 ridge 412") for t in texts) and any(t.startswith("bf16 ridge 206") for t in texts)
    assert any("fp8 matrix 1979 TFLOP/s" in t and "quantized matmuls" in t for t in texts)
    assert not any("fp8" in t and "(not used)" in t for t in texts)
    assert any("quantized matmuls fp8, the others bf16" in t for t in texts)  # the title


def test_roofline_of_a_cpu_labels_its_peaks_in_giga_units() -> None:
    """A CPU's peaks are GFLOP/s and GB/s: labelled in TFLOP/s they had read "0 TFLOP/s", "0.01 TB/s"."""
    cpu = Path(__file__).resolve().parent.parent / "validation" / "cpu-calibrated-amd-epyc-s12c.toml"
    result = llmsim.simulate("llama-3.2-1b", str(cpu), batch_size=1, prompt_len=64, gen_len=4, weight_dtype="float32",
                             activation_dtype="float32")
    texts = _texts(roofline_figure(result, str(cpu)))
    assert not any("TFLOP/s" in t or "TB/s" in t for t in texts), texts
    assert any(t.startswith("fp32 matrix 95.15 GFLOP/s") for t in texts), texts  # the file's 95.1495e9
    assert any(t.startswith("memory") and "GB/s" in t for t in texts)


def test_roofline_roofs_distinct(bf16: llmsim.SimulationResult) -> None:
    fig = roofline_figure(bf16, GPU)
    roofs = [line for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")]
    styles = [(line.get_color(), str(line.get_linestyle()), line.get_linewidth()) for line in roofs]
    assert len(roofs) >= 5 and len(set(styles)) == len(styles), styles
    assert any("fp8 / int8" in label for label in _texts(fig))  # one roof for one peak, not two identical lines


def test_roofline_op_labels_do_not_overlap(bf16: llmsim.SimulationResult) -> None:
    from matplotlib.text import Annotation

    fig = roofline_figure(bf16, GPU, label_top=6)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    marks = [a for a in fig.axes[0].texts if isinstance(a, Annotation) and "ridge" not in a.get_text()]
    assert {a.get_text()[0] for a in marks} == {"P", "D"} and len(marks) >= 8
    boxes = [text_extent(a, renderer) for a in marks]
    for (i, a), (j, b) in itertools.combinations(enumerate(boxes), 2):
        assert not a.overlaps(b), (marks[i].get_text(), marks[j].get_text())
    key = [t for t in _texts(fig) if t.startswith(("P1 ", "D1 "))]
    assert len(key) == 2 and all("%" in t for t in key)


def test_roofline_and_breakdown_warn_when_it_does_not_fit(bf16: llmsim.SimulationResult,
                                                          too_big: llmsim.SimulationResult) -> None:
    for figure in (roofline_figure(too_big, GPU), breakdown_figure(too_big)):
        assert any("DOES NOT FIT" in t for t in _texts(figure))
    for figure in (roofline_figure(bf16, GPU), breakdown_figure(bf16)):
        assert not any("FIT" in t for t in _texts(figure))


def test_breakdown_decode_per_token(bf16: llmsim.SimulationResult) -> None:
    fig = breakdown_figure(bf16)
    ax = fig.axes[0]
    prefill, decode = [t.get_text() for t in ax.get_yticklabels()]
    assert f"TTFT {bf16.ttft_s * 1e3:.3g} ms" in prefill, prefill  # 680 ms
    assert f"TPOT {bf16.tpot_s * 1e3:.3g} ms per token" in decode, decode  # 8.91 ms, not the 4.55 s total
    assert "511 steps" in decode and f"{bf16.decode.time_s:.3g} s in all" in decode
    title = ax.get_title()
    for part in (MODEL, GPU, "batch 16", "prompt 2048", "gen 512", "engine vllm"):
        assert part in title, title


def test_sweep_title_names_the_fixed_workload_and_engine() -> None:
    from llmsim.report.plot import sweep_figure

    fig = sweep_figure("llama-3.2-1b", "h100-sxm", vary="batch_size", values=[1, 4, 16], prompt_len=128, gen_len=8)
    title = fig.axes[0].get_title()
    assert "prompt 128" in title and "gen 8" in title and "engine vllm" in title and "batch 1," not in title


def test_roofline_saved_figure_holds_both_legends() -> None:
    """The roofs legend (added with add_artist, so clipped to the axes) fell outside the saved figure's tight
    bounding box: its right side was cut off in the PNG whenever nothing else reached that far (here)."""
    from matplotlib.legend import Legend

    result = llmsim.simulate("llama-3.1-70b", GPU, tensor_parallel=4)
    fig = roofline_figure(result, llmsim.load_hardware(GPU))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    saved = fig.get_tightbbox(renderer)  # what savefig(bbox_inches="tight") keeps, in inches
    legends = [a for a in fig.axes[0].get_children() if isinstance(a, Legend)]
    assert len(legends) == 2
    for legend in legends:
        box = legend.get_window_extent(renderer).transformed(fig.dpi_scale_trans.inverted())
        assert saved.x0 <= box.x0 and box.x1 <= saved.x1 + 1e-6, (box, saved)


def test_sweep_bands_flip_at_the_crossover_on_a_coarse_grid() -> None:
    """On a coarse grid the bands had flipped halfway between two points (about 37 in an audit's chart) while the
    crossover line stood at 39.81; the band edge between the two points is now the crossover itself."""
    fig = sweep_figure(MODEL, GPU, vary="batch_size", values=[1, 16, 256, 4096], metric="tpot", prompt_len=128,
                       gen_len=16)
    ax = fig.axes[0]
    crossover = next(line for line in ax.get_lines() if "memory->compute at" in line.get_label())
    at = crossover.get_xdata()[0]
    assert at == pytest.approx(286.1, abs=0.1)  # between the grid's 256 and 4096 (the README's crossover, 286.1)
    edges = sorted({round(p.get_x() + p.get_width(), 6) for p in ax.patches})
    assert round(at, 6) in edges


def test_a_sweep_chart_of_one_value_is_refused() -> None:
    with pytest.raises(llmsim.OptionError, match=r"values=\[8\]: a sweep chart needs at least two different "
                                                  r"batch_size values"):
        sweep_figure(MODEL, GPU, vary="batch_size", values=[8])


@pytest.mark.parametrize(("kwargs", "match"), [
    # each drew a chart and exited 0 (a new-user audit): the fixed value of the varied quantity was ignored; a TPOT
    # chart of one generated token plotted nothing ("Data has no positive values") under a "decode none-bound" legend
    ({"vary": "batch_size", "batch_size": 64}, "batch_size=64: batch_size is the quantity varied; give its values"),
    ({"vary": "prompt_len", "prompt_len": 64}, "prompt_len=64: prompt_len is the quantity varied"),
    ({"metric": "tpot", "gen_len": 1}, "metric='tpot' with gen_len=1: one generated token has no decode step"),
])
def test_a_sweep_chart_refuses_what_it_would_ignore_or_draw_empty(kwargs: dict, match: str) -> None:
    with pytest.raises(llmsim.OptionError, match=match):
        sweep_figure(MODEL, GPU, values=[1, 4] if kwargs.get("vary") != "prompt_len" else [16, 64], **kwargs)


def test_cli_plot_refuses_the_varied_quantity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from llmsim.cli import main

    out = tmp_path / "s.png"
    assert main(["plot", MODEL, "--hw", GPU, "--vary", "batch_size", "--batch-size", "64", "--out", str(out)]) == 2
    assert "batch_size=64: batch_size is the quantity varied" in capsys.readouterr().err and not out.exists()
