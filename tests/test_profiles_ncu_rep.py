"""Nsight Compute binary reports (.ncu-rep) read through NVIDIA's ncu_report module, on real reports
published in public repositories (tests/fixtures/profiles, sources in its README).

Each number the reader returns is checked against the report's raw metric values, read here independently
through ncu_report, and where the source code fixes it, against the work the profiled program did
(2·M·N·K for a GEMM, 4 bytes per int32 element for a scan)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import llmsim
from llmsim.errors import LlmsimError

FIXTURES = Path(__file__).parent / "fixtures" / "profiles"
SGEMM = FIXTURES / "esmm_sgemm_a10g_roofline.ncu-rep"
SCAN = FIXTURES / "speedy_scan_rtx3070_full.ncu-rep"
UNPROFILED = FIXTURES / "esmm_a10g_one_unprofiled.ncu-rep"
NO_MODULE = "ncu_report (pip install 'llmsim[ncu]', in the test extra) is not installed"


def _raw(path: Path) -> dict[str, dict[str, Any]]:
    """Demangled kernel name -> {metric name: value} for every action, straight from ncu_report."""
    ncu_report = pytest.importorskip("ncu_report", reason=NO_MODULE)
    context = ncu_report.load_report(str(path))
    out: dict[str, dict[str, Any]] = {}
    for r in range(context.num_ranges()):
        profiled = context.range_by_idx(r)
        for a in range(profiled.num_actions()):
            action = profiled.action_by_idx(a)
            name = action.name(ncu_report.IAction.NameBase_DEMANGLED)
            assert name not in out  # one launch per kernel in these reports
            out[name] = {m: action.metric_by_name(m).value() for m in action.metric_names()}
    return out


def test_sgemm_report_roofline_sections_a10g() -> None:
    """Four hand-written 1024x1024x1024 FP32 GEMMs (ESMM-Research, A10G), profiled with the Speed of Light
    and roofline sections: the roofline's per-cycle FFMA rate gives back the GEMM's 1024^3 multiply-adds."""
    raw = _raw(SGEMM)
    p = llmsim.read_profile(SGEMM)
    assert p.format == "Nsight Compute (ncu-rep)" and len(p.kernels) == 4 == len(raw)
    assert "profiled on NVIDIA A10G" in p.notes
    for k in p.kernels:
        m = raw[k.name]
        assert k.calls == 1 and k.time_s == pytest.approx(m["gpu__time_duration.sum"] * 1e-9, rel=1e-12)
        # driver.cu: rows = cols = inners = 1024, one FFMA per multiply-add; the repository's own
        # roofline_data.txt lists FFMA 1,073,741,824, FADD 0, FMUL 0 for these four kernels
        assert k.flops == pytest.approx(2 * 1024**3, rel=1e-9) and k.flops_source == "counters"
        # bytes = dram__bytes.sum.per_second (byte/s) * gpu__time_duration.sum (ns)
        assert k.bytes == pytest.approx(m["dram__bytes.sum.per_second"] * m["gpu__time_duration.sum"] * 1e-9)
        assert k.sm_pct == pytest.approx(m["sm__throughput.avg.pct_of_peak_sustained_elapsed"])
        assert k.memory_pct == pytest.approx(m["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"])
    one = next(k for k in p.kernels if k.name.startswith("void one_blocktiling<"))
    assert one.time_s == pytest.approx(431648e-9)  # gpu__time_duration.sum 431,648 ns
    assert one.bytes == pytest.approx(20_680_960, abs=1)  # 47.91 GB/s * 431.648 us
    rows = {r["kernel"]: r for r in p.rows("a10g")}
    # two_blocktiling: compute 33.3% and memory 44.4% of peak, both under NVIDIA's 60% line
    two = next(name for name in rows if name.startswith("void two_blocktiling<"))
    assert rows[two]["bound"] == "latency"


def test_scan_report_full_set_dram_counters_rtx3070() -> None:
    """A decoupled-lookback prefix scan of int32 (speedy_scan, RTX 3070), `--set full`: DRAM bytes from
    dram__bytes_read.sum + dram__bytes_write.sum; no floating-point work."""
    raw = _raw(SCAN)
    p = llmsim.read_profile(SCAN)
    (k,) = p.kernels
    (m,) = raw.values()
    assert k.time_s == pytest.approx(336704e-9) == m["gpu__time_duration.sum"] * 1e-9
    read, written = m["dram__bytes_read.sum"], m["dram__bytes_write.sum"]
    assert (read, written) == (40_114_816, 38_219_392)
    assert k.bytes == read + written and k.bytes_source == "counters"
    # 19,532 blocks of 512 threads, one int32 each: ~10,000,000 elements = 40,000,000 bytes in; the kernel
    # reads them once (plus its lookback flags) and has not yet written back the output's last
    # 1.8 MB when it ends (RTX 3070: 4 MB L2)
    assert m["launch__grid_size"] * m["launch__block_size"] == 19_532 * 512
    assert 40_000_000 <= read <= 1.01 * 40_000_000 and 40_000_000 - 4 * 2**20 <= written <= 40_000_000
    assert k.flops == 0.0  # every FP instruction rate of the roofline section is 0 for an integer scan
    assert k.sm_pct == pytest.approx(49.0116, abs=1e-4) and k.memory_pct == pytest.approx(53.4176, abs=1e-4)


def test_report_with_an_unprofiled_launch_keeps_the_others() -> None:
    """A real report (ESMM-Research, "troubles with profiling") where ncu stored NaN for one launch's metrics:
    that launch is left out with a note naming it; the three profiled GEMMs are read."""
    raw = _raw(UNPROFILED)
    p = llmsim.read_profile(UNPROFILED)
    assert len(raw) == 4 and len(p.kernels) == 3
    assert all(k.name.startswith("esmm_shmem_multi") for k in p.kernels)
    assert any("1 launches of void vectorized_blocktiling<" in note for note in p.notes)
    for k in p.kernels:
        assert k.time_s == pytest.approx(raw[k.name]["gpu__time_duration.sum"] * 1e-9)
        assert k.bytes is None and k.flops is None  # the default sections: no DRAM bytes, no FP counters


def test_cli_profile_reads_a_report(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from llmsim.cli import main

    pytest.importorskip("ncu_report", reason=NO_MODULE)
    out = tmp_path / "sgemm.png"
    assert main(["profile", str(SGEMM), "--hardware", "h100-sxm", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "void warptiling<" in text and "counters/counters" in text and out.stat().st_size > 5_000


def test_report_without_the_module_names_the_extra_and_the_csv_export(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # import ncu_report now raises ImportError
    with pytest.raises(LlmsimError, match=r"pip install 'llmsim\[ncu\]'.*ncu --import") as info:
        llmsim.read_profile(SGEMM)
    assert "\n" not in str(info.value)


def test_a_file_that_is_no_report_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("ncu_report", reason=NO_MODULE)
    path = tmp_path / "run.ncu-rep"
    path.write_bytes(b"\x00\x01")
    with pytest.raises(LlmsimError, match="no profiled kernels in it"):
        llmsim.read_profile(path)


def test_raw_csv_with_roofline_rates_gives_what_the_report_gives(tmp_path: Path) -> None:
    """The same launch written as an `ncu --csv --page raw` row in display units (made here from the
    report's values, in ncu's unit spellings): the CSV path reads the rates as the report path does."""
    rates = ",".join(f"smsp__sass_thread_inst_executed_op_f{op}_pred_on.sum.per_cycle_elapsed"
                     for op in ("add", "mul", "fma"))
    path = tmp_path / "raw.csv"
    path.write_text(
        'ID,Kernel Name,gpu__time_duration.sum,dram__bytes.sum.per_second,smsp__cycles_elapsed.avg.per_second,'
        f'{rates}\n'
        ',,usecond,Gbyte/second,cycle/nsecond,inst/cycle,inst/cycle,inst/cycle\n'
        '0,one_blocktiling,431.648,47.911631699903625,1.3150812699236414,0,0,1891.548775817305\n')
    (k,) = llmsim.read_profile(path).kernels
    # FFMA: 1891.55 inst/cycle * 1.31508e9 cycle/s * 431.648e-6 s = 1024^3; FLOPs = 2 * 1024^3
    assert k.flops == pytest.approx(2 * 1024**3, rel=1e-9)
    assert k.bytes == pytest.approx(47.911631699903625e9 * 431.648e-6)  # 20,680,960 bytes, as in the report


def test_a_profile_read_against_another_gpus_file_says_so() -> None:
    pytest.importorskip("ncu_report", reason=NO_MODULE)
    from llmsim.errors import AssumptionWarning

    profile = llmsim.read_profile(SGEMM)
    assert profile.gpu_name == "NVIDIA A10G"  # the report's device__attribute_display_name
    with pytest.warns(AssumptionWarning, match="ran on NVIDIA A10G, but its roofline and bounds are h100-sxm's"):
        table = profile.kernels_table("h100-sxm")
    assert "note: the profile ran on NVIDIA A10G" in table
    with warnings.catch_warnings():
        warnings.simplefilter("error", AssumptionWarning)  # its own GPU's file: no warning
        assert "ran on" not in profile.kernels_table("a10g")
    assert llmsim.read_profile(SCAN).gpu_name == "NVIDIA GeForce RTX 3070"
    with pytest.warns(AssumptionWarning, match="RTX 3070, but its roofline and bounds are rtx-3090's"):
        llmsim.read_profile(SCAN).kernels_table("rtx-3090")  # a near name is still another GPU
