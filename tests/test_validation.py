"""llmsim.validation: calibration, real-model timing against the prediction, reports, resume."""

from __future__ import annotations

import importlib
import json
import platform
from pathlib import Path

import numpy as np
import pytest
import tomllib

torch = pytest.importorskip("torch")

import llmsim  # noqa: E402
from llmsim.errors import LlmsimError  # noqa: E402
from llmsim.hardware.spec import _CURVE_FRACTION_RANGE  # noqa: E402
from llmsim.profiles.classify import aten_class  # noqa: E402
from llmsim.validation import ValidationReport, ValidationRow, calibrate, hardware_toml, validate  # noqa: E402
from llmsim.validation import hf_model as hf_model_module  # noqa: E402
from llmsim.validation._device import device_name, release_free_memory  # noqa: E402
from llmsim.validation.hf_model import prepare_config  # noqa: E402
from llmsim.validation.speed_check import drift_warning, probe_shape  # noqa: E402
from llmsim.validation.validate import (  # noqa: E402
    busy_machine_warning,
    hardware_mismatch_warning,
    noisy_cases_warning,
    recorded_device,
    recorded_threads,
    run_threads,
)

from .tiny_configs import TINY_CONFIGS  # noqa: E402

# the module itself: llmsim.validation exports the function calibrate under the same name
calibrate_module = importlib.import_module("llmsim.validation.calibrate")

# the example CPU file: predictions only need some hardware; timings are compared, not asserted
HW = "cpu-generic"
TINY = dict(batch_sizes=(1,), seq_lens=(8,), kv_lens=(8,), repeats=2, warmup=1, threads=1)


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> tuple[llmsim.HardwareSpec, object]:
    path = tmp_path_factory.mktemp("cal") / "cpu.toml"
    spec = calibrate("cpu", quick=True, out=path, threads=1)
    return spec, path


# ---- calibration -------------------------------------------------------------------------------------
def test_calibrate_quick_writes_a_file_load_hardware_reads(calibrated: tuple) -> None:
    spec, path = calibrated
    back = llmsim.load_hardware(path)
    assert back.name == spec.name == "cpu-calibrated"
    assert back.device_type == "cpu"
    assert 1e9 <= back.memory_bandwidth_bytes_per_s <= 1e13
    for precision in ("fp32", "bf16"):  # bf16 on a CPU without bf16 instructions: 0.85e9 measured (AVX2 AMD EPYC)
        assert 1e8 <= back.matrix_peak_flops_per_s(precision) <= 1e15
    assert 1e9 <= back.vector_peak_flops_per_s("fp32") <= 1e15
    assert back.memory_capacity_bytes > 1e9
    assert back.overhead_s("kernel_launch_s") == 0.0
    assert 0 < back.overhead_s("eager_dispatch_s") < 1e-3
    assert back.efficiency_of("matmul") == back.efficiency_of("memory") == 1.0
    # provenance: every measured number says how it was taken
    source = back.matrix_flops_per_s["fp32"].source
    assert "measured by llmsim calibrate" in source and "1 threads" in source and "median of" in source
    assert "spread" in back.memory["bandwidth_bytes_per_s"].source
    assert "MemTotal" in back.memory["capacity_bytes"].source
    # the file is the TOML schema of hardware/*.toml: {value, unit, source} per number
    data = tomllib.loads(path.read_text())
    assert set(data["memory"]["bandwidth_bytes_per_s"]) == {"value", "unit", "source"}
    # who made the CPU, from the kernel's vendor_id (this machine's lscpu says the same), as engines check it
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    made_by = "intel" if "GenuineIntel" in cpuinfo else "amd" if "AuthenticAMD" in cpuinfo else "unknown"
    assert data["vendor"] == back.vendor == spec.vendor == made_by
    # thin-shape matmul efficiency per calibrated dtype, read back from the file as written
    for precision in ("fp32", "bf16"):
        curve = back.matmul_rows[precision]
        assert curve == spec.matmul_rows[precision] and len(curve.rows) >= 4 and len(curve.cols) >= 2
        # above 1 where small F.linear beats the square matmul stored as the peak (8.45x for bf16 on AVX2 only)
        low, high = _CURVE_FRACTION_RANGE
        assert all(low <= f <= high for line in curve.fraction for f in line) and "F.linear" in curve.source
        in_out = back.matmul_rows_in_out[precision]
        assert in_out == spec.matmul_rows_in_out[precision] and "torch.matmul(x[M, 512], W[512, N])" in in_out.source
    # element-wise bandwidth by size: fp32 and the 16-bit rate (stored as fp16)
    assert set(back.elementwise_bytes) == {"fp32", "fp16"} == set(spec.elementwise_bytes)
    assert "into a new output on" in back.elementwise_bytes["fp16"].source
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":  # outputs on fresh pages, as in a model
        assert release_free_memory() and "fresh pages (malloc_trim(0)" in back.elementwise_bytes["fp32"].source
    # and it works in a simulation
    r = llmsim.simulate("gpt2", back, batch_size=1, prompt_len=32, gen_len=4, overhead="eager")
    assert r.ttft_s > 0 and r.tpot_s > 0


def test_hardware_toml_escapes_strings(test_gpu_dict: dict) -> None:
    test_gpu_dict["description"] = 'quote " backslash \\ tab \t done'
    test_gpu_dict["memory"]["bandwidth_bytes_per_s"]["source"] = 'a "quoted" source'
    text = hardware_toml(test_gpu_dict)
    back = llmsim.hardware.hardware_from_dict(tomllib.loads(text))
    assert back.description == test_gpu_dict["description"]
    assert back.memory["bandwidth_bytes_per_s"].source == 'a "quoted" source'
    assert back.memory_bandwidth_bytes_per_s == 2e12


def test_calibrate_rejects_unknown_options() -> None:
    with pytest.raises(LlmsimError, match="dtype"):
        calibrate("cpu", dtypes=("int8",), quick=True)
    with pytest.raises(LlmsimError, match="dispatch"):
        calibrate("cpu", quick=True, dispatch="fast")
    # the aliases simulate takes are read (fp32 passes, so the error names fp8), and an empty list is refused
    with pytest.raises(LlmsimError, match=r"^calibrate: dtype='fp8' is not supported"):
        calibrate("cpu", dtypes=("fp32", "fp8"), quick=True)
    with pytest.raises(LlmsimError, match=r"^calibrate: dtypes is empty"):
        calibrate("cpu", dtypes=(), quick=True)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_requested_without_cuda_is_a_clear_one_line_error() -> None:
    for call in (lambda: calibrate("cuda", quick=True),
                 lambda: validate(TINY_CONFIGS["llama-gqa"], HW, device="cuda", **TINY)):
        with pytest.raises(LlmsimError) as info:
            call()
        message = str(info.value)
        assert "cuda" in message and "\n" not in message


# ---- validation end to end -------------------------------------------------------------------------
def test_validate_tiny_llama_end_to_end(calibrated: tuple) -> None:
    spec, _ = calibrated
    report = validate(TINY_CONFIGS["llama-gqa"], spec, batch_sizes=(1, 2), seq_lens=(16,), kv_lens=(16,),
                      repeats=3, warmup=1, name="tiny-llama", threads=1)
    assert [(r.phase, r.batch_size, r.length) for r in report.rows] == [
        ("prefill", 1, 16), ("prefill", 2, 16), ("decode", 1, 16), ("decode", 2, 16)]
    for row in report.rows:
        assert row.status == "ok", row.status
        assert row.model == "tiny-llama" and row.device == "cpu" and row.threads == 1
        assert len(row.timings_s) == 3 and row.measured_s == sorted(row.timings_s)[1]
        assert row.predicted_s > 0 and row.spread >= 0
        assert row.error_pct == pytest.approx(100 * (row.predicted_s - row.measured_s) / row.measured_s)
        assert row.achieved_bytes_per_s == pytest.approx(row.predicted_bytes / row.measured_s)
        assert row.predicted_bound in ("compute", "memory", "overhead")
        assert sum(row.predicted_split_s.values()) == pytest.approx(row.predicted_s)
        assert row.torch_version == torch.__version__
    assert _not_busy(report.warnings) == []  # calibrated on this very CPU: no mismatch
    summary = report.summary()
    assert set(summary) == {"prefill", "decode"} and summary["decode"]["count"] == 2
    table = report.to_markdown()
    assert table.count("\n") == 1 + len(report.rows) and "tiny-llama" in table


def test_prediction_is_for_the_same_config_as_the_run() -> None:
    """The predicted time of a case equals llmsim's own simulate() on the same (shrunk) config."""
    from llmsim.validation import predict_case

    data = prepare_config(TINY_CONFIGS["gemma3_text"], "float32", num_layers=2)
    assert data["num_hidden_layers"] == 2 and data["layer_types"] == ["sliding_attention"] * 2
    predicted = predict_case(data, HW, "prefill", 2, 16, "float32", "eager")
    sim = llmsim.simulate(data, HW, batch_size=2, prompt_len=16, gen_len=1, overhead="eager",
                          attention="flash", logits="all", mla="expand", fusion="eager", kv_cache="concat")
    assert predicted["time_s"] == pytest.approx(sim.ttft_s, rel=1e-12)
    decode = predict_case(data, HW, "decode", 2, 16, "float32", "eager")
    sim = llmsim.simulate(data, HW, batch_size=2, prompt_len=16, gen_len=2, overhead="eager",
                          attention="flash", logits="all", mla="expand", fusion="eager", kv_cache="concat")
    assert decode["time_s"] == pytest.approx(sim.tpot_s, rel=1e-12)


def test_validate_shipped_gpt2_shrunk_with_profile() -> None:
    report = validate("gpt2", HW, num_layers=2, batch_sizes=(1,), seq_lens=(16,), kv_lens=(16,), repeats=2,
                      warmup=1, profile=True, threads=1)
    assert {r.num_layers for r in report.rows} == {2}
    for row in report.rows:
        assert row.status == "ok" and row.model == "gpt2"
        assert set(row.measured_split_s) == {"matmul", "attention", "elementwise", "other"}
        assert sum(row.measured_split_s.values()) == pytest.approx(row.measured_s, rel=1e-6)
        assert row.measured_split_s["matmul"] > 0
    assert "matmul pred/meas" in report.to_markdown()


def test_validate_prints_no_kineto_lines(capfd: pytest.CaptureFixture[str]) -> None:
    """torch 2.13's Kineto wrote "USDT:<time> <pid>:<tid> SyncActivityProfilerHandler.cpp:52] profiler_start" (and
    profiler_stop) to stderr (file descriptor 2, from C++) at every torch.profiler start and stop: the
    attention-kernel check and each case of --profile. The CLI as a user runs it, stderr read at the descriptor
    (in this process: a subprocess would spend most of its time importing torch); llmsim's own warnings remain."""
    from llmsim.cli import main

    code = main(["validate", "gpt2", "--hardware", HW, "--num-layers", "1", "--seq-lens", "8", "--kv-lens", "8",
                 "--batch-sizes", "1", "--repeats", "1", "--warmup", "0", "--threads", "1", "--profile"])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "matmul pred/meas" in out  # the profiled split ran
    assert not [line for line in err.splitlines() if "USDT" in line or "profiler_st" in line], err
    assert "warning: hardware 'cpu-generic'" in err  # cpu-generic is not this machine: still said


def test_only_kinetos_usdt_lines_are_dropped(capfd: pytest.CaptureFixture[str]) -> None:
    import os

    with hf_model_module.torch_profiler("cpu"):
        os.write(2, b"USDT:2026-11-24 06:25:50 1:1 SyncActivityProfilerHandler.cpp:52] profiler_start\n")
        os.write(2, b"a warning of the run\n")
    assert capfd.readouterr().err == "a warning of the run\n"


@pytest.mark.parametrize("name", ["mistral-sliding", "gpt_oss", "mixtral", "deepseek_v3", "falcon-mqa-parallel"])
def test_validate_runs_other_architectures(name: str) -> None:
    """Sliding windows past the window, MoE, MLA, parallel blocks: prefill and decode run and compare."""
    report = validate(TINY_CONFIGS[name], HW, batch_sizes=(2,), seq_lens=(12,), kv_lens=(12,), repeats=1, warmup=1,
                      threads=1, name=name)
    assert [r.status for r in report.rows] == ["ok", "ok"]


def test_decode_cache_is_fresh_for_every_timed_step() -> None:
    """The DynamicCache grows on each call: every timed step must start from kv_len cached tokens."""
    data = prepare_config(TINY_CONFIGS["llama-gqa"], "float32", None)
    model = hf_model_module.build_model(data, "float32", "cpu")
    seen = []
    forward = model.forward

    def spy(*args, **kwargs):
        cache = kwargs.get("past_key_values")
        if cache is not None and kwargs["input_ids"].shape[1] == 1:
            seen.append(cache.get_seq_length())
        return forward(*args, **kwargs)

    model.forward = spy
    times, _ = hf_model_module.time_decode(model, 2, 10, "cpu", "eager", repeats=3, warmup=2)
    assert len(times) == 3
    assert seen == [10] * 5


# ---- resume, failures, progress -----------------------------------------------------------------------
def test_resume_measures_only_new_cases(tmp_path) -> None:
    results = tmp_path / "run.jsonl"
    config = TINY_CONFIGS["qwen2"]
    first = validate(config, HW, seq_lens=(8, 16), kv_lens=(), results_path=results, name="q", repeats=2, warmup=0)
    lines = results.read_text().splitlines()
    assert len(lines) == 2 and len(first.rows) == 2
    record = json.loads(lines[0])
    assert {"device", "torch_version", "transformers_version", "threads", "timings_s"} <= set(record)
    second = validate(config, HW, seq_lens=(8, 16, 24), kv_lens=(), results_path=results, name="q", repeats=2,
                      warmup=0)
    lines = results.read_text().splitlines()
    assert len(lines) == 3  # only the new case was measured and appended
    assert [r.seq_len for r in second.rows] == [8, 16, 24]
    assert second.rows[:2] == first.rows  # the recorded cases come back as they were, not re-timed
    assert ValidationReport.from_jsonl(results).rows == second.rows


def test_resume_reuses_a_case_only_under_the_same_hardware_file_and_config(tmp_path) -> None:
    # a shared results file: a case recorded with another hardware file (or another config under the same name)
    # was reused, with that file's prediction (67 ms where cpu-generic predicts 0.8 ms, in the audit)
    results = tmp_path / "run.jsonl"
    config = TINY_CONFIGS["qwen2"]
    kwargs = dict(seq_lens=(8,), kv_lens=(), results_path=results, name="q", repeats=1, warmup=0)
    first = validate(config, HW, **kwargs)
    other_hardware = validate(config, "a10g", **kwargs)
    wider = validate({**config, "intermediate_size": 2 * config["intermediate_size"]}, HW, **kwargs)
    again = validate(config, HW, **kwargs)
    assert len(results.read_text().splitlines()) == 3  # three setups measured; the fourth run reused the first
    assert again.rows == first.rows
    assert other_hardware.rows[0].predicted_s != first.rows[0].predicted_s
    assert wider.rows[0].predicted_s > first.rows[0].predicted_s
    assert len({first.rows[0].setup, other_hardware.rows[0].setup, wider.rows[0].setup}) == 3


@pytest.mark.parametrize("sizes", [dict(seq_lens=(0,), kv_lens=()), dict(seq_lens=(), kv_lens=(8, -5)),
                                   dict(batch_sizes=(-2,)), dict(seq_lens=(2.5,), kv_lens=())])
def test_validate_refuses_sizes_below_one_as_the_cli_does(sizes: dict) -> None:
    # the Python API built the model and recorded torch's errors ("cannot reshape tensor of 0 elements") per case
    with pytest.raises(LlmsimError, match=r"^(batch_sizes|seq_lens|kv_lens) holds .*: sizes are integers >= 1$"):
        validate(TINY_CONFIGS["qwen2"], HW, **{**TINY, **sizes})


def test_a_results_path_that_is_not_a_records_file_is_refused_before_anything_runs(tmp_path) -> None:
    """An audit's `--results` pointed at a calibrated hardware TOML got JSON lines appended to it (the TOML no longer
    loaded), and a folder raised IsADirectoryError after the first case was measured."""
    toml = tmp_path / "mine.toml"
    toml.write_text('name = "mine"\n[memory]\n')
    with pytest.raises(LlmsimError, match=r"results file .*mine.toml: line 1 is not a validate record "
                                          r"\('name = \"mine\"'\); records are appended to this file"):
        validate(TINY_CONFIGS["qwen2"], HW, results_path=toml, **TINY)
    assert toml.read_text() == 'name = "mine"\n[memory]\n'  # untouched
    with pytest.raises(LlmsimError, match=r"results file .*: a folder; give a file"):
        validate(TINY_CONFIGS["qwen2"], HW, results_path=tmp_path, **TINY)
    cut = tmp_path / "cut.jsonl"  # a run killed while writing its first record: resumed, the stub skipped
    cut.write_text('{"model": "q", "pha')
    assert len(validate(TINY_CONFIGS["qwen2"], HW, results_path=cut, **{**TINY, "kv_lens": ()}).rows) == 1


def test_a_prediction_llmsim_cannot_make_is_refused_before_anything_is_measured() -> None:
    """float16 on a device with no fp16 matrix peak: every case had been measured, recorded as an error row, and
    the CLI exited 0."""
    assert "fp16" not in llmsim.load_hardware(HW).matrix_flops_per_s  # cpu-generic: bf16, int8, fp32
    with pytest.raises(LlmsimError, match=r"validate cannot predict .* at dtype='float16' on 'cpu-generic': "
                                          r"activation_dtype='float16': hardware 'cpu-generic' has no matrix-unit "
                                          r"peak for fp16"):
        validate(TINY_CONFIGS["qwen2"], HW, dtype="float16", **TINY)

def test_out_of_memory_is_recorded_and_the_run_goes_on(tmp_path, monkeypatch) -> None:
    real = hf_model_module.prefill_timer

    def fake(model, batch_size, seq_len, device):
        if seq_len == 16:
            raise torch.OutOfMemoryError("CPU out of memory: tried to allocate 1 TiB")
        return real(model, batch_size, seq_len, device)

    monkeypatch.setattr(hf_model_module, "prefill_timer", fake)
    results = tmp_path / "oom.jsonl"
    report = validate(TINY_CONFIGS["llama-gqa"], HW, seq_lens=(8, 16, 24), kv_lens=(), results_path=results,
                      repeats=1, warmup=0)
    assert [r.status for r in report.rows] == ["ok", "oom", "ok"]
    assert report.rows[1].measured_s is None and report.rows[1].predicted_s > 0
    assert len(results.read_text().splitlines()) == 3
    assert report.summary()["prefill"]["count"] == 2


def test_the_cli_exits_non_zero_when_no_case_ran(monkeypatch, capsys) -> None:
    """Every case out of memory: the table of error rows is printed and the exit status says the run failed."""
    from llmsim.cli import main

    def oom(*args, **kwargs):
        raise torch.OutOfMemoryError("CPU out of memory: tried to allocate 1 TiB")

    import sys

    validate_module = sys.modules["llmsim.validation.validate"]  # the module (the package exports the function)
    monkeypatch.setattr(hf_model_module, "prefill_timer", oom)
    monkeypatch.setattr(validate_module, "time_decode", oom)
    code = main(["validate", "gpt2", "--hardware", HW, "--num-layers", "1", "--seq-lens", "8", "--kv-lens", "8",
                 "--batch-sizes", "1", "--repeats", "1", "--warmup", "0", "--threads", "1"])
    out, err = capsys.readouterr()
    assert code == 1 and out.count("| oom |") == 2
    assert "llmsim: error: none of the 2 cases ran (see the status column)" in err


def test_progress_bar_only_when_asked_or_on_a_terminal(capsys) -> None:
    validate(TINY_CONFIGS["llama-gqa"], HW, seq_lens=(8,), kv_lens=(), repeats=1, warmup=0, progress=True)
    assert "1/1" in capsys.readouterr().err
    report = validate(TINY_CONFIGS["llama-gqa"], HW, seq_lens=(8,), kv_lens=(), repeats=1, warmup=0)  # a pipe
    # no bar; only the one-line warning that the shipped example file records no measured CPU
    assert capsys.readouterr().err.splitlines() == report.warnings
    warnings = _not_busy(report.warnings)
    assert len(warnings) == 1 and "records no measured device" in warnings[0]


def _not_busy(warnings: list[str]) -> list[str]:
    """The warnings but a busy or drifting machine's (which depend on what else runs while the tests do: a
    shared CI host ran the speed check's matmul at 0.83x of a quick calibration a minute old)."""
    machine = ("this machine is busy", "too busy to time", "reference matmul")
    return [w for w in warnings if not any(words in w for words in machine)]


def _timed_row(spread: float, wall_s: float = 1.0, cpu_s: float = 1.0, clock: str = "cpu", threads: int = 1,
         load: float = 1.0) -> ValidationRow:
    return ValidationRow(model="m", phase="prefill", batch_size=1, seq_len=8, dtype="float32", device="cpu",
                         predicted_s=1.0, measured_s=cpu_s if clock == "cpu" else wall_s, spread=spread,
                         error_pct=0.0, timings_s=[1.0, 1.0, 1.0], clock=clock, wall_s=wall_s, cpu_s=cpu_s,
                         threads=threads, load_average=load)


def test_a_run_too_noisy_to_time_is_warned_about() -> None:
    # quiet: the median spread of the recorded quiet run was 1.5 % (validation/README.md); one noisy case in 5
    # (20 %) is not enough
    assert noisy_cases_warning([_timed_row(0.02)] * 4 + [_timed_row(0.6)]) is None
    # 2 of 5 cases spread more than 25 %: the machine was busy
    warning = noisy_cases_warning([_timed_row(0.02)] * 3 + [_timed_row(0.3, load=5.2), _timed_row(0.6, load=6.1)])
    assert warning == ("warning: 2 of 5 cases were noisy (2 spread more than 25% between repeats ((p90 - p10) / "
                       "median)), 1-minute load average up to 6.1: the machine was too busy to time them and their "
                       "errors are not llmsim's; rerun on a quieter machine")
    # timed on the wall clock (2 threads), a steady case whose threads waited for a core half the time is noisy:
    # 1 - cpu / (wall * threads) = 1 - 1.0 / (1.0 * 2) = 0.5
    waiting = [_timed_row(0.02, wall_s=1.0, cpu_s=1.0, clock="wall", threads=2)] * 2
    # each reason counted on its own (an audit's run said "2 of 2 cases spread more than 25 %" of cases that spread
    # 9.2 and 5.6 % and were flagged for waiting)
    assert noisy_cases_warning(waiting).startswith(
        "warning: 2 of 2 cases were noisy (2 waited for a core more than 20% of the wall time (up to 50%))")
    # on the CPU clock the waits are left out of the timings: not noisy by themselves
    assert noisy_cases_warning([_timed_row(0.02, wall_s=3.0, cpu_s=1.0)] * 2) is None


def test_validate_measures_with_the_threads_the_file_was_calibrated_with(test_gpu_dict: dict) -> None:
    spec = llmsim.hardware.hardware_from_dict(dict(test_gpu_dict, name="mine", device_type="cpu",
                                                   description="cpu: X, calibrated by llmsim (1 threads, torch 2)"))
    assert recorded_threads(spec) == 1
    assert run_threads(spec, "cpu", None) == (1, None)
    assert run_threads(spec, "cpu", 1) == (1, None)
    threads, warning = run_threads(spec, "cpu", 2)
    assert threads == 2 and warning == (
        "warning: hardware 'mine' was calibrated with 1 torch threads but this run uses 2: the predictions describe "
        "1; give --threads 1 (or leave it out) to compare like with like")
    sheet = llmsim.hardware.hardware_from_dict(dict(test_gpu_dict, name="sheet", description="a datasheet"))
    assert recorded_threads(sheet) is None and run_threads(sheet, "cpu", None) == (None, None)
    assert run_threads(spec, "cuda", None) == (None, None)  # GPU kernels: torch's CPU threads are not the point


def test_one_thread_cpu_timings_are_the_process_cpu_time() -> None:
    """With one torch thread the timings leave out the time the process waited for a core; the wall
    times come back beside them. A sleep takes wall time but almost no CPU time."""
    import time

    from llmsim.validation._device import cpu_clock, time_call, torch_threads

    clocks: dict[str, list[float]] = {}
    with torch_threads(1):
        assert cpu_clock("cpu") and not cpu_clock("cuda")
        times = time_call(lambda: time.sleep(0.02), "cpu", repeats=3, warmup=0, clocks=clocks)
    assert times == clocks["cpu"] and len(clocks["wall"]) == 3
    assert all(t < 0.01 for t in times) and all(w >= 0.02 for w in clocks["wall"])


def test_a_busy_machine_is_warned_about() -> None:
    # the 2-core machine of #20's report, loaded by other work: 1-minute load 4.29 >= 2 cores
    assert busy_machine_warning("cpu", 4.29, 2) == (
        "warning: this machine is busy before the run (1-minute load average 4.29 on 2 cores): measured CPU times "
        "will be noisy (and slow on the wall clock), the errors not llmsim's; rerun on a quieter machine")
    assert busy_machine_warning("cpu", 1.5, 2) is None  # a core to spare
    assert busy_machine_warning("cuda", 40.0, 2) is None and busy_machine_warning("cpu", None, 2) is None


def test_validate_checks_the_machine_speed_against_its_calibration(calibrated: tuple) -> None:
    """A file calibrated on this machine: validate times a reference matmul before and after its cases and
    records predicted / measured time (the machine's speed against the file) in each row. A file ten times
    faster than this machine gives a speed near 0.1 and a warning."""
    spec, path = calibrated
    report = validate(TINY_CONFIGS["llama-gqa"], spec, **TINY)
    speeds = {r.machine_speed for r in report.rows}
    assert len(speeds) == 1  # one check before the cases, in every row
    # the quick calibration minutes ago: the same machine, within its noise (not asserted closer: a shared CI host)
    assert 0.3 < speeds.pop() < 3.0
    assert "Machine speed against the calibrated hardware file" in report.summary_markdown()
    data = tomllib.loads(Path(path).read_text())
    data["matrix_flops_per_s"]["fp32"]["value"] *= 10  # a machine ten times faster at everything it measured
    data["memory"]["bandwidth_bytes_per_s"]["value"] *= 10
    fast = llmsim.hardware.hardware_from_dict(data)
    report = validate(TINY_CONFIGS["llama-gqa"], fast, **TINY)
    assert all(r.machine_speed < 0.3 for r in report.rows)  # about 1 / 10
    assert any(w.startswith("warning: this machine ran llmsim's reference matmul (x[256, K] @ W) at 0.")
               for w in report.warnings)
    # a datasheet file (no device recorded): nothing to check against
    assert all(r.machine_speed is None for r in validate(TINY_CONFIGS["llama-gqa"], HW, **TINY).rows)


def test_the_speed_check_reads_a_point_the_file_measured() -> None:
    amd = llmsim.load_hardware(Path(__file__).resolve().parent.parent / "validation" /
                               "cpu-calibrated-amd-epyc-s12c.toml")
    # calibrate's CPU grid: M = 256, K = 2048 (the depth table's row of 1.0), N = 1024
    assert probe_shape(amd, "fp32") == (256, 2048, 1024)
    # its prediction is that table point: roofline 2 * 256 * 2048 * 1024 / 95.1495e9 FLOP/s = 11.285 ms, over the
    # fraction 1.0181 the file measured at M = 256, N = 1024: 11.084 ms
    assert llmsim.op_cost("matmul", amd, "float32", m=256, n=1024, k=2048, engine="transformers",
                          overhead="none").time_s == pytest.approx(11.285e-3 / 1.0181, rel=1e-3)
    assert probe_shape(llmsim.load_hardware(HW), "fp32") is None  # no measured matmul table
    assert drift_warning(amd, 0.96, 1.04) is None  # within 5 %
    assert drift_warning(amd, 0.93, 0.97) == (
        "warning: this machine ran llmsim's reference matmul (x[256, K] @ W) at 0.93x before the cases and 0.97x "
        "after them, against the speed hardware 'cpu-calibrated' was calibrated at (1.00x; more than 5% off): the "
        "errors include this drift; calibrate again (`llmsim calibrate --out FILE`) just before validating, on a "
        "quiet machine")


def test_a_hardware_file_of_another_cpu_is_warned_about(test_gpu_dict: dict) -> None:
    running = device_name("cpu")  # "cpu: " + /proc/cpuinfo "model name" (platform.processor() elsewhere)
    other = dict(test_gpu_dict, name="other", device_type="cpu",
                 description="cpu: Some Other CPU, calibrated by llmsim (1 threads, torch 2.13.0+cpu)")
    spec = llmsim.hardware.hardware_from_dict(other)
    assert recorded_device(spec) == "cpu: Some Other CPU"
    warning = hardware_mismatch_warning(spec, running)
    assert warning == (f"warning: hardware 'other' was calibrated on 'cpu: Some Other CPU' but this run is on "
                       f"{running!r}: expect large errors; calibrate this machine (`llmsim calibrate --out ...`)")
    same = llmsim.hardware.hardware_from_dict(dict(other, description=f"{running}, calibrated by llmsim (1 threads)"))
    assert hardware_mismatch_warning(same, running) is None
    bare = llmsim.hardware.hardware_from_dict(dict(other, description="a datasheet"))
    assert recorded_device(bare) is None and "records no measured device" in hardware_mismatch_warning(bare, running)
    # a GPU's file for a CPU run (validate --hardware h100-sxm on this machine) says so first
    gpu = llmsim.load_hardware("h100-sxm")
    assert hardware_mismatch_warning(gpu, running, "cpu") == (
        f"warning: hardware 'h100-sxm' ({gpu.path}) describes a GPU but this run is on the CPU ({running!r}): the "
        "predictions are for another device; give this machine's hardware file (`llmsim calibrate --out ...`)")
    assert hardware_mismatch_warning(same, running, "cpu") is None


def test_bad_arguments_are_one_line_errors() -> None:
    with pytest.raises(LlmsimError, match="needs device='cuda'"):
        validate(TINY_CONFIGS["llama-gqa"], HW, overhead="graph", **TINY)
    with pytest.raises(LlmsimError, match="profile with overhead='eager'"):  # a graph replay has no ops to split
        validate(TINY_CONFIGS["llama-gqa"], HW, overhead="graph", profile=True, **TINY)
    with pytest.raises(LlmsimError, match="num_layers"):
        validate(TINY_CONFIGS["gemma3_text"], HW, num_layers=4, **TINY)
    with pytest.raises(LlmsimError):
        validate(llmsim.load_model("gpt2"), HW, **TINY)


# ---- reports ---------------------------------------------------------------------------------------------
def _row(phase: str, error: float) -> ValidationRow:
    measured = 1.0
    return ValidationRow(model="m", phase=phase, batch_size=1, seq_len=8 if phase == "prefill" else None,
                         kv_len=8 if phase == "decode" else None, dtype="float32", device="cpu",
                         predicted_s=measured * (1 + error / 100), measured_s=measured, error_pct=error)


def test_summary_statistics() -> None:
    rows = [_row("prefill", e) for e in (-10, 5, 20, -40)] + [_row("decode", 8)]
    rows.append(ValidationRow(model="m", phase="decode", batch_size=2, kv_len=8, dtype="float32", device="cpu",
                              status="oom"))
    s = ValidationReport(rows=rows).summary()
    assert s["prefill"]["count"] == 4
    assert s["prefill"]["median_abs_error_pct"] == pytest.approx(15.0)  # |errors| 5 10 20 40
    assert s["prefill"]["p90_abs_error_pct"] == pytest.approx(34.0)  # numpy linear: 20 + 0.7 * 20
    assert s["prefill"]["mean_error_pct"] == pytest.approx(-6.25)
    assert s["decode"] == {"count": 1, "median_abs_error_pct": 8.0, "p90_abs_error_pct": 8.0, "mean_error_pct": 8.0}


def test_op_classes_of_aten_names() -> None:
    assert aten_class("aten::addmm") == aten_class("aten::mm") == "matmul"
    assert aten_class("aten::_scaled_dot_product_flash_attention_for_cpu") == "attention"
    assert aten_class("aten::_softmax") == "attention"
    assert aten_class("aten::silu") == aten_class("aten::rsqrt") == aten_class("aten::mul") == "elementwise"
    # no kernel of their own: views, and wrappers whose work is their child's (aten::linear -> aten::addmm)
    assert aten_class("aten::view") == aten_class("aten::empty") == aten_class("aten::linear") == "host"
    assert aten_class("aten::some_new_op") == "other"


@pytest.mark.parametrize("name", ["llama-gqa", "mistral-sliding", "deepseek_v3"])
def test_long_caches_are_tiled_to_the_right_length(name: str) -> None:
    data = prepare_config(TINY_CONFIGS[name], "float32", None)
    model = hf_model_module.build_model(data, "float32", "cpu")
    cache = hf_model_module.fill_cache(model, 3, 40, "cpu", exact_tokens=6)
    assert cache.get_seq_length() == 40
    window = TINY_CONFIGS[name].get("sliding_window")
    for layer in cache.layers:
        assert layer.keys.shape[0] == 3
        assert layer.keys.shape[-2] == (window - 1 if window else 40)
    times, _ = hf_model_module.time_decode(model, 3, 40, "cpu", "eager", repeats=1, warmup=0)
    assert len(times) == 1


def test_a_case_beyond_the_context_is_an_error_row_not_a_crash() -> None:
    report = validate(TINY_CONFIGS["gpt2"], HW, seq_lens=(8, 300), kv_lens=(255, 256), repeats=1, warmup=0)
    statuses = [r.status for r in report.rows]
    assert statuses[0] == "ok" and statuses[2] == "ok"  # 255 cached + 1 new = 256 = n_positions
    assert statuses[1].startswith("error: llmsim:") and "context of 256" in statuses[1]
    assert statuses[3].startswith("error: llmsim:")


def test_a_config_transformers_cannot_build_is_a_clear_error() -> None:
    config = {**TINY_CONFIGS["llama-gqa"], "pad_token_id": 10_000}  # outside the 128-token vocabulary
    with pytest.raises(LlmsimError, match="could not build"):
        validate(config, HW, **TINY)


def test_the_attention_kernel_is_the_one_that_runs() -> None:
    """SDPA's fused kernel for Llama; its math fallback for MLA (q/k and v head dims differ): sdpa_math;
    eager attention for gpt-oss: math."""
    kernels = {}
    for name in ("llama-gqa", "deepseek_v3", "gpt_oss"):
        model = hf_model_module.build_model(prepare_config(TINY_CONFIGS[name], "float32", None), "float32", "cpu")
        kernels[name] = hf_model_module.attention_kernel(model)
    assert kernels == {"llama-gqa": "flash", "deepseek_v3": "sdpa_math", "gpt_oss": "math"}


@pytest.mark.parametrize("dtype, causal", [("bfloat16", True), ("bfloat16", False), ("float32", True)])
def test_sdpa_math_counts_the_kernels_pytorch_runs(dtype: str, causal: bool) -> None:
    """attention="sdpa_math" stands for PyTorch's SDPA math kernel: its kernels on the [B, H, S, *]
    tensors are those the profiler sees (the [S, S] causal-mask construction is left out)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    B, H, S, d, dv = 1, 4, 8, 24, 16
    q, k, v = (torch.randn(B, H, S, n, dtype=getattr(torch, dtype)) for n in (d, d, dv))
    with sdpa_kernel(SDPBackend.MATH), torch.profiler.profile(record_shapes=True) as prof:
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    kernels = sum(e.count for e in prof.key_averages(group_by_input_shape=True)
                  if e.key in ("aten::copy_", "aten::mul", "aten::bmm", "aten::add_", "aten::_softmax",
                               "aten::isneginf", "aten::all", "aten::where")
                  and e.input_shapes and len(e.input_shapes[0]) >= 3)  # batched tensors only
    phase = "prefill" if causal else "decode"  # llmsim masks in prefill; a decode step attends to every key
    ops = llmsim.build_ops("llama-3.2-1b", phase, B, seq_len=S, kv_len=S - 1, attention="sdpa_math",
                           fusion="eager", activation_dtype=dtype, kv_dtype=dtype)
    first = [op for op in ops if op.name.startswith("layers.attn.") and (
        ".sdpa_" in op.name or op.name.endswith((".scores", ".softmax", ".context")))]
    # bfloat16, causal: casts 3 + 1 + probs copy 1, scale 2, bmm 2, mask add 1, softmax + guard 3 = 14
    assert sum(op.launches for op in first) == kernels == {("bfloat16", True): 14, ("bfloat16", False): 13,
                                                           ("float32", True): 9}[(dtype, causal)]


@pytest.mark.parametrize("batch", [1, 3])
def test_sdpa_math_copies_broadcast_kv_heads_as_falcon_runs_it(batch: int) -> None:
    """Falcon's multi-query attention hands SDPA one K/V head for 4 query heads: the fused CPU kernel refuses
    it, and the math kernel's batched matmuls copy K^T and V out to every head when batch > 1 (the batch and
    head axes of the expanded views cannot merge into one view). The profiled decode step's copies of
    [B, 4, ...] tensors are the bytes llmsim's sdpa_broadcast_kv writes."""
    import torch

    data = prepare_config(TINY_CONFIGS["falcon-mqa-parallel"], "float32", None)
    model = hf_model_module.build_model(data, "float32", "cpu")
    assert hf_model_module.attention_kernel(model) == "sdpa_math"
    _, run = hf_model_module.time_decode(model, batch, 12, "cpu", "eager", 1, 0)
    with torch.profiler.profile(record_shapes=True) as prof:
        run()
    heads = 4
    copied = sum(e.count * 4 * int(np.prod(e.input_shapes[0])) for e in prof.key_averages(group_by_input_shape=True)
                 if e.key == "aten::copy_" and len(e.input_shapes[0]) == 4 and e.input_shapes[0][1] == heads)
    ops = llmsim.build_ops(data, "decode", batch, kv_len=12, attention="sdpa_math", fusion="eager",
                           activation_dtype="float32", kv_dtype="float32")
    written = sum(op.count * op.bytes_written for op in ops if op.name.endswith("sdpa_broadcast_kv"))
    # batch 3: 2 layers x (K^T [3, 4, 16, 13] + V [3, 4, 13, 16]) x 4 bytes = 2 * 2 * 2496 * 4 = 39936; batch 1: none
    assert copied == written == {1: 0, 3: 39936}[batch]


def test_eager_fusion_counts_the_kernels_transformers_runs() -> None:
    """fusion='eager' stands for transformers' eager op sequences: rotary's kernels are those the
    profiler sees in apply_rotary_pos_emb; RMSNorm's bytes are its float32 op sequence."""
    import torch
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    from llmsim.validation.hf_model import aten_op_names

    q, k = torch.randn(1, 4, 8, 16), torch.randn(1, 2, 8, 16)
    cos, sin = torch.randn(1, 8, 16), torch.randn(1, 8, 16)
    names = aten_op_names(lambda: apply_rotary_pos_emb(q, k, cos, sin))
    kernels = sum(names.get(f"aten::{op}", 0) for op in ("mul", "neg", "cat", "add"))  # views launch nothing
    ops = llmsim.build_ops("llama-3.2-1b", "prefill", 1, seq_len=8, fusion="eager")
    rotary = next(op for op in ops if op.name.endswith("rotary"))
    assert rotary.launches == kernels == 10
    norm = next(op for op in ops if op.name.endswith("input_norm"))
    # bfloat16 (a = 2): read to-float32 2 + pow 4 + mean 4 + mul 4 + to-bf16 4 + weight-mul 2 = 20 bytes,
    # written 4 + 4 + 4 + 2 + 2 = 16 bytes per element of x[8, 2048]
    assert norm.bytes_read == 8 * 2048 * 20 and norm.bytes_written == 8 * 2048 * 16


def test_gemma2_softcapping_counts_the_kernels_transformers_runs() -> None:
    """Gemma 2 caps its attention scores and its logits as c * tanh(x / c) (transformers' defaults 50 and 30):
    three eager kernels each (div, tanh, mul), on every layer's [B, H, S, S] scores and on the [T, V] logits.
    The profiler's aten::tanh calls of a prefill are llmsim's capped tensors, and the softcap kernels llmsim
    adds are the div and mul calls on those tensors."""
    data = prepare_config(TINY_CONFIGS["gemma2"], "float32", None)
    model = hf_model_module.build_model(data, "float32", "cpu")
    assert hf_model_module.attention_kernel(model) == "math"  # transformers' Gemma 2 has no SDPA path
    names = hf_model_module.aten_op_names(hf_model_module.prefill_timer(model, 1, 8, "cpu"))
    ops = llmsim.build_ops(data, "prefill", 1, seq_len=8, attention="math", fusion="eager", logits="all",
                           activation_dtype="float32", kv_dtype="float32")
    capped = [op for op in ops if op.name.endswith((".softmax", "logit_softcap"))]
    # 2 layers' scores + the logits = 3 tanh; float32 eager softmax: scale, mask, softmax (3) + cap (3) per layer
    assert names["aten::tanh"] == 3 == sum(op.count for op in capped)
    # one sliding and one full layer group (a layer each), then the logits
    assert [(op.count, op.launches) for op in capped] == [(1, 6), (1, 6), (1, 3)] and capped[-1].name == "logit_softcap"
    plain = llmsim.build_ops({**data, "attn_logit_softcapping": None, "final_logit_softcapping": None}, "prefill",
                             1, seq_len=8, attention="math", fusion="eager", logits="all",
                             activation_dtype="float32", kv_dtype="float32")
    # the capped scores: 3 more kernels of [1, 4, 8, 8] float32 scores, each reading and writing them
    extra = sum(op.bytes_read for op in ops) - sum(op.bytes_read for op in plain)
    assert extra == 2 * 3 * (1 * 4 * 8 * 8) * 4 + 3 * (8 * 128) * 4


@pytest.mark.parametrize("name", ["llama-gqa", "mistral-sliding", "gemma3_text"])
def test_static_cache_steps_repeat_after_a_rewind(name: str) -> None:
    """overhead="graph" captures these steps as CUDA graphs and replays them; here they run eagerly on the
    CPU. Every call after a rewind must be the same prefill or decode step (transformers advances the
    static cache's write position on every forward: without the rewind the second decode writes past the
    cache's end), with the logits of the same step through transformers' dynamic cache."""
    model = hf_model_module.build_model(prepare_config(TINY_CONFIGS[name], "float32", None), "float32", "cpu")
    batch, kv_len = 2, 12  # kv 12 > the sliding window 8 of mistral-sliding and gemma3_text: full windows
    ids = hf_model_module.input_ids(model, batch, kv_len, "cpu", seed=kv_len)
    next_ids = hf_model_module.input_ids(model, batch, 1, "cpu", seed=kv_len + 1)
    with torch.inference_mode():
        reference = model(input_ids=ids, use_cache=True)
        prefill_logits = reference.logits
        decode_logits = model(input_ids=next_ids, past_key_values=reference.past_key_values, use_cache=True).logits
    step, rewind = hf_model_module.static_prefill_step(model, ids)
    for _ in range(3):
        rewind()
        torch.testing.assert_close(step(), prefill_logits, atol=1e-4, rtol=1e-4)
    for chunk_tokens in (512, 5):  # the cache filled in one forward, or in chunks of 5, 5 and 2 tokens
        step, rewind = hf_model_module.static_decode_step(model, batch, kv_len, next_ids, "cpu", chunk_tokens)
        for _ in range(3):
            rewind()
            torch.testing.assert_close(step(), decode_logits, atol=1e-4, rtol=1e-4)


def test_a_float32_run_reads_the_float32_figures(test_gpu_dict: dict) -> None:
    """Ops without matmul FLOPs (norms, element-wise, copies, softmax) run on the activations: in a float32 run
    they read the fp32 vector rate and element-wise curve, so a file calibrated in float32 only predicts a
    float32 model (it raised "no matrix-unit peak for bf16": those ops kept Op's bf16 default)."""
    data = prepare_config(TINY_CONFIGS["llama-gqa"], "float32", None)
    options = dict(weight_dtype="float32", activation_dtype="float32", kv_dtype="float32", fusion="eager")
    assert {op.precision for op in llmsim.build_ops(data, "decode", 2, kv_len=8, **options)} == {"fp32"}
    f32_only = dict(test_gpu_dict, name="f32-only", device_type="cpu",
                    matrix_flops_per_s={"fp32": {"value": 1e11, "unit": "flop/s", "source": "test"}},
                    vector_flops_per_s={"fp32": {"value": 1e10, "unit": "flop/s", "source": "test"}},
                    elementwise_bytes={"fp32": {"bytes": [1e3, 1e9], "fraction": [0.25, 0.25], "source": "test"}})
    f32_only.pop("interconnect")
    hw = llmsim.hardware.hardware_from_dict(f32_only)
    result = llmsim.simulate(data, hw, batch_size=2, prompt_len=8, gen_len=2, **options)
    assert result.ttft_s > 0
    # the element-wise ops of a bfloat16 run still read the 16-bit figures
    assert "bf16" in {op.precision for op in llmsim.build_ops(data, "decode", 2, kv_len=8, fusion="eager",
                                                               activation_dtype="bfloat16")}


def test_depth_ratios_pair_each_round() -> None:
    # fractions[K][M index][round]; K = 2048 is the reference. Round 1 ran slow for every K (a slow spell):
    # 0.5 / 0.5 = 1.0 there, so the medians are the steady ratios, 0.9 / 1.0 and 1.0 / 1.0
    fractions = {1024: [[0.9, 0.45, 0.9]], 2048: [[1.0, 0.5, 1.0]]}
    assert calibrate_module.depth_ratios(fractions, 2048) == [[0.9], [1.0]]


@pytest.mark.parametrize("table", ["matmul_rows", "matmul_depth"])
def test_matmul_tables_survive_a_slow_spell(table: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A slow spell of a shared machine as long as one point's repeats must not make that point an outlier.
    The clock is simulated: every F.linear call (real, quick shapes) takes its FLOPs at a fixed rate, so the
    true fraction of the roofline (bandwidth taken as unbounded) and the true depth ratio are 1.0
    everywhere, except the calls inside the spell, which take twice as long. Timed one shape after another
    (the old order) the spell covered all repeats of one point and that entry read 0.5 (on an AMD EPYC
    guest: matmul_depth at K = 1024, M = 1024 read 0.77, and prefills were predicted 20-30 % slow)."""
    rate, timed, spell = 1e9, [0], [0]

    def fake_time_call(fn, device, repeats, warmup, setup=None, queue_ahead=False, clocks=None):
        times = []
        for _ in range(repeats):
            (w,) = setup()
            y = fn(w)  # y[M, N] = x[M, K] @ W[N, K].T
            slow = spell[0] <= timed[0] < spell[0] + 5  # quick calibrate: 5 repeats per point
            timed[0] += 1
            times.append((2 if slow else 1) * 2 * y.shape[0] * y.shape[1] * w.shape[1] / rate)
        return times

    monkeypatch.setattr(calibrate_module, "time_call", fake_time_call)
    measure = getattr(calibrate_module, f"_{table}")
    for start in range(0, 50, 5):  # every point's 5 repeats under the old order (quick: 10 or 9 points)
        timed[0], spell[0] = 0, start
        fractions = measure(torch, "cpu", "float32", rate, 1e18, True, 5, 1, "test")["fraction"]
        assert all(f == 1.0 for line in fractions for f in line), (start, fractions)


def test_cpu_matmul_grid_times_every_small_row_count():
    """On an AMD EPYC (torch 2.13, 1 thread, float32) F.linear runs M = 2 and 3 as M GEMVs and switches to a GEMM
    kernel at M = 4 (W[4096, 2048]: 2.05, 4.07, 6.15, 4.13 ms at M = 1, 2, 3, 4), so a grid of powers of two read
    a batch-3 decode between M = 2 and 4, 30-35 % fast. calibrate's CPU tables time every M up to 8."""
    from llmsim.validation.calibrate import CPU_DEPTH_ROWS, _matmul_shapes

    k, cols, rows, _ = _matmul_shapes("cpu", quick=False)
    assert rows[:8] == (1, 2, 3, 4, 5, 6, 7, 8) and rows[8:] == tuple(2**i for i in range(4, 12))
    assert (k, cols) == (2048, (1024, 4096, 16384, 65536))
    assert CPU_DEPTH_ROWS[:4] == (1, 2, 3, 4)


def test_serving_report_sets_aiconfigurators_estimates_beside_llmsims(tmp_path) -> None:
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[1] / "validation" / "serving.py"
    spec = importlib.util.spec_from_file_location("serving_report", path)
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    rows = [{"id": i, "mode": "agg", "engine": "vllm", "system": "h100_sxm", "ttft_ms": ttft, "tpot_ms": 10.0,
             "measured_ttft_ms": 100.0, "measured_tpot_ms": 10.0, "ttft_error_pct": ttft - 100.0,
             "tpot_error_pct": 0.0} for i, ttft in (("a", 110.0), ("b", 130.0), ("c", 100.0))]
    peer = tmp_path / "peer.csv"
    peer.write_text("id,ttft_ms,tpot_ms,error\na,150,12,\nb,50,8,\nc,,,refused: no data\n")
    lines = report._peer_section(rows, peer)
    text = "\n".join(lines)
    assert "2 of the 3 simulated here; aiconfigurator refused 1, 0 were not run" in text
    # rows a and b: llmsim TTFT errors 10 % and 30 % (median 20.0), aiconfigurator's 50 % and 50 % (50.0);
    # TPOT: llmsim 0 and 0, aiconfigurator 20 % and 20 %
    assert "| **all** | 2 | 20.0 | 50.0 | 0.0 | 20.0 |" in lines


def test_a_quick_calibration_skips_a_matmul_size_past_its_budget() -> None:
    """bf16 on a CPU without bf16 instructions ran 0.94 GFLOP/s at N = 1024 (AVX2-only AMD EPYC, one thread): a
    2048^3 matmul takes ~18 s a call, so the quick run's 6 calls of it (5 repeats, 1 warm-up) took most of the
    test suite's 10 minutes. At the rate measured so far a larger size is skipped past the budget, and said."""
    ran = []

    def run(n: int) -> tuple[float, list[float]]:
        ran.append(n)
        return {1024: 0.94e9, 2048: 0.9e9}[n], [1.0]

    # N = 2048 at 0.94e9 flop/s: 6 calls x 2 x 2048^3 / 0.94e9 = 6 x 18.28 = 109.7 s > 10 s
    best, rate, _, detail = calibrate_module._best_of_sizes((1024, 2048), run, lambda n: 2 * n**3, 6, 10.0)
    assert ran == [1024] and best == 1024 and rate == 0.94e9
    assert detail == "N=1024: 0.9 G/s, N=2048 skipped: 6 calls would take ~110 s"
    ran.clear()  # within the budget (fp32 at 57.9e9: 6 x 17.18 / 57.9 = 1.8 s) every size runs, the best kept
    best, rate, _, _ = calibrate_module._best_of_sizes((1024, 2048), lambda n: (ran.append(n) or
                                                                               {1024: 57.9e9, 2048: 81.5e9}[n], [1.0]),
                                                       lambda n: 2 * n**3, 6, 10.0)
    assert ran == [1024, 2048] and best == 2048 and rate == 81.5e9


def test_calibrate_says_when_a_16_bit_dtype_is_far_slower_than_fp32() -> None:
    # this machine: bf16 0.94 GFLOP/s, fp32 81.5 GFLOP/s; 81.5 / 0.94 = 86.7 -> "87x"
    notes = calibrate_module.slow_dtype_notes({"fp32": 81.5e9, "bf16": 0.94e9})
    assert notes == ["bf16 matmul runs 87x slower than fp32 here (0.94 against 81.5 GFLOP/s: this CPU has no bf16 "
                     "instructions) and its tables take longer than fp32's; --dtypes float32 leaves it out"]
    # a CPU with bf16 instructions (AMX: bf16 faster than fp32) or bf16 alone: nothing to say
    assert calibrate_module.slow_dtype_notes({"fp32": 81.5e9, "bf16": 300e9}) == []
    assert calibrate_module.slow_dtype_notes({"bf16": 0.94e9}) == []
