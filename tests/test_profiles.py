"""Profiles on the roofline: readers checked against real exports.

torch.profiler: traces recorded here, on this CPU, of tiny transformers models (tests/tiny_configs.py),
checked against torch's own numbers: the per-op self times of prof.key_averages(), FlopCounterMode's
FLOPs and torch's sdpa_flop_count; compare() must match every matmul to its predicted op.
Nsight Compute / Nsight Systems: real exports published in public repositories (tests/fixtures/profiles,
sources in its README), plus files made from NVIDIA's documented layouts where no real one was found.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import llmsim
from llmsim.errors import LlmsimError
from llmsim.profiles.bound import LATENCY_FRACTION
from llmsim.profiles.timeline import covered_s

from .tiny_configs import TINY_CONFIGS

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

FIXTURES = Path(__file__).parent / "fixtures" / "profiles"
BATCH, SEQ = 2, 16
COST = {"attention": "flash", "logits": "all", "fusion": "eager", "kv_cache": "concat"}  # eager transformers


def _record(name: str, out: Path) -> dict:
    """One prefill of a tiny model, profiled with record_shapes=True after a warm-up; the FLOPs that
    FlopCounterMode counts for the same forward; torch's own self time per op name."""
    from torch.profiler import ProfilerActivity, profile
    from torch.utils.flop_counter import FlopCounterMode

    config = transformers.AutoConfig.for_model(**TINY_CONFIGS[name])
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").eval()
    ids = torch.randint(0, config.vocab_size, (BATCH, SEQ), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        model(input_ids=ids)  # warm-up: first-call allocations and kernel selection stay out of the trace
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            model(input_ids=ids)
        with FlopCounterMode(display=False) as counter:
            model(input_ids=ids)
    prof.export_chrome_trace(str(out))
    self_s = {e.key: e.self_cpu_time_total * 1e-6 for e in prof.key_averages()}
    return {"path": out, "flops": {str(k): v for k, v in counter.get_flop_counts()["Global"].items()},
            "self_s": self_s}


@pytest.fixture(scope="module", params=["llama-gqa", "gpt2"])
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("traces") / f"{request.param}.json"
    return {"name": request.param, **_record(request.param, out)}


def test_torch_trace_kernel_times_sum_to_the_span(recorded: dict) -> None:
    p = llmsim.read_profile(recorded["path"])
    assert p.format == "torch.profiler (CPU)" and p.device == "cpu"
    # every microsecond of the span is in exactly one kernel's self time or in the idle gaps; the documented
    # tolerance (docs/profiling.md) is 1%: timestamps are rounded to ns, and nothing else runs on other threads
    assert p.kernel_time_s + p.idle_s == pytest.approx(p.span_s, rel=0.01)
    assert 0 <= p.idle_s < p.span_s


def test_torch_trace_self_times_equal_torch_key_averages(recorded: dict) -> None:
    p = llmsim.read_profile(recorded["path"])
    ours: dict[str, float] = {}
    for k in p.kernels:
        ours[k.name] = ours.get(k.name, 0.0) + k.time_s
    torch_self = {name: s for name, s in recorded["self_s"].items() if name.startswith("aten::")}
    assert set(torch_self) <= set(ours)
    for name, seconds in torch_self.items():
        assert ours[name] == pytest.approx(seconds, rel=1e-3, abs=2e-6), name


def test_torch_trace_flops_from_shapes_equal_flop_counter_mode(recorded: dict) -> None:
    p = llmsim.read_profile(recorded["path"])
    matmuls = [k for k in p.kernels if k.op_class == "matmul"]
    assert matmuls and all(k.flops_source == "shapes" and k.bytes_source == "shapes" for k in matmuls)
    counted = sum(v for k, v in recorded["flops"].items() if k in ("aten.mm", "aten.addmm", "aten.bmm"))
    # addmm (gpt2's Conv1D): llmsim adds the M*N bias FLOPs that FlopCounterMode leaves out
    bias = sum(_addmm_bias(k) for k in matmuls if k.name == "aten::addmm")
    assert sum(k.flops for k in matmuls) == counted + bias
    if recorded["name"] == "llama-gqa":
        assert bias == 0
    else:  # gpt2: per layer c_attn [32,64]x[64,192], c_proj [32,64]x[64,64], c_fc [32,64]x[64,256], mlp c_proj
        assert bias == 2 * 32 * (192 + 64 + 256 + 64)  # 2 layers, 32 tokens: 36864


def _addmm_bias(k: llmsim.Kernel) -> int:
    import json

    _, a, b = json.loads(k.shapes)
    return k.calls * a[0] * b[1]


def test_torch_trace_attention_flops_match_torch_sdpa_flop_count(recorded: dict) -> None:
    from torch.utils.flop_counter import sdpa_flop_count

    p = llmsim.read_profile(recorded["path"])
    (attention,) = [k for k in p.kernels if k.op_class == "attention"]
    assert attention.name == "aten::_scaled_dot_product_flash_attention_for_cpu" and attention.calls == 2
    heads = 4
    kv_heads = TINY_CONFIGS[recorded["name"]].get("num_key_value_heads", heads)
    d = 64 // heads
    full = sdpa_flop_count((BATCH, heads, SEQ, d), (BATCH, kv_heads, SEQ, d), (BATCH, kv_heads, SEQ, d))
    pairs = SEQ * (SEQ + 1) / 2  # causal: 136 of the 256 (query, key) pairs
    # torch counts all S*S pairs (2*(2*B*H*S*S*d) = 131072); the causal kernel does 136/256 of them, plus
    # llmsim's 5 vector FLOPs per pair of the softmax: 69632 + 5440 = 75072 per call
    assert attention.flops_per_call == full * pairs / (SEQ * SEQ) + 5 * BATCH * heads * pairs == 75072


def test_compare_matches_every_matmul_to_its_predicted_op(recorded: dict) -> None:
    p = llmsim.read_profile(recorded["path"])
    result = llmsim.simulate(TINY_CONFIGS[recorded["name"]], "cpu-generic", batch_size=BATCH, prompt_len=SEQ,
                             gen_len=2, **COST)
    c = p.compare(result)
    matched_kernels = sum(m.calls for m in c.matches if m.op_class == "matmul")
    assert matched_kernels == sum(k.calls for k in p.kernels if k.op_class == "matmul")
    assert not [n for n in c.unmatched_kernels if n.startswith("aten::mm") or n.startswith("aten::addmm")]
    assert c.unmatched_ops == []
    for m in c.matches:
        assert m.calls == m.predicted_calls, m  # each predicted op ran once per layer, as the trace shows
    predicted_matmuls = {op.name for op in result.prefill.ops if op.kind == "matmul"}
    assert predicted_matmuls == {name for m in c.matches if m.op_class == "matmul" for name in m.ops}
    assert {r.op_class for r in c.classes} >= {"matmul", "attention", "elementwise", "overhead"}


def test_torch_trace_table_and_figure(recorded: dict, tmp_path: Path) -> None:
    p = llmsim.read_profile(recorded["path"])
    rows = p.rows("cpu-generic")
    idle = [r for r in rows if r["bound"] == "overhead" and r["class"] == "overhead"]
    assert len(idle) == 1 and idle[0]["time_s"] == p.idle_s
    assert {r["bound"] for r in rows} <= {"compute", "memory", "latency", "overhead", "unknown"}
    for r in rows:
        if r["roofline_fraction"] is not None and r["bound"] in ("compute", "memory"):
            assert r["roofline_fraction"] >= LATENCY_FRACTION
    text = p.kernels_table("cpu-generic", top=5)
    assert "aten::" in text and "shapes/shapes" in text
    figure = p.roofline_figure("cpu-generic")
    figure.savefig(tmp_path / "roofline.png")
    assert (tmp_path / "roofline.png").stat().st_size > 10_000


# ---- Nsight Compute ---------------------------------------------------------------------------------
def test_torch_trace_without_shapes_keeps_matmuls_as_matmuls(tmp_path: Path) -> None:
    """A CPU trace recorded without record_shapes: aten::addmm has no FLOPs rule, and its bias copy_ child made it
    a "wrapper" whose time read as host dispatch (a new-user audit: 31.9 % of the time as overhead)."""
    from torch.profiler import ProfilerActivity, profile

    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64)).eval()
    x = torch.randn(8, 64)
    with torch.inference_mode():
        model(x)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            model(x)
    prof.export_chrome_trace(str(tmp_path / "noshapes.json"))
    p = llmsim.read_profile(tmp_path / "noshapes.json")
    addmm = next(k for k in p.kernels if k.name == "aten::addmm")
    assert addmm.op_class == "matmul" and addmm.flops is None  # time only: no shapes to count from
    assert next(k for k in p.kernels if k.name == "aten::linear").op_class == "host"  # it does hand its work down


def test_ncu_details_real_export_superbench_b200() -> None:
    """A real `ncu --csv` details page (default sections) of one cuBLASLt FP8 GEMM on a B200 (CC 10.0),
    published by microsoft/superbenchmark: Duration 406240 ns, Compute (SM) 23.59%, Memory 21.68%."""
    p = llmsim.read_profile(FIXTURES / "superbench_cublaslt_ncu_details.log")
    (k,) = p.kernels
    assert k.name.startswith("cutlass3x_sm100_tensorop_s64x256x32gemm_f8_f8")
    assert (k.calls, k.time_s, k.sm_pct, k.memory_pct) == (1, pytest.approx(406240e-9), pytest.approx(23.59),
                                                           pytest.approx(21.68))
    assert (k.op_class, k.precision) == ("matmul", "fp8")
    row = p.rows("b200")[0]
    # both units below 60% of peak: latency-bound, as NVIDIA's own SOLBottleneck rule in this export says
    # ("low compute throughput and memory bandwidth utilization ... typically indicate latency issues")
    assert row["bound"] == "latency" and row["roofline_fraction"] == pytest.approx(0.2359)


def test_ncu_raw_page_documented_layout() -> None:
    """`ncu --csv --page raw`: built from NVIDIA's documented layout (see the fixtures README)."""
    p = llmsim.read_profile(FIXTURES / "ncu_raw_documented_layout.csv")
    by_name = {k.name: k for k in p.kernels}
    gemm, norm = by_name["ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn"], by_name["rms_norm_kernel"]
    assert gemm.calls == 2 and gemm.time_s == pytest.approx(2 * 2.0e-3)  # "2,000" usecond twice
    assert gemm.bytes == pytest.approx(2 * (150e6 + 2e6))  # dram read 150 Mbyte + write 2 Mbyte per launch
    # FP32 SASS counters per launch: fadd 1e6 + fmul 2e6 + 2 * ffma 3e6 = 9e6 FLOPs (tensor-core work not in them)
    assert gemm.flops == pytest.approx(2 * 9e6) and gemm.flops_source == "counters"
    assert gemm.sm_pct == pytest.approx(85.0) and norm.memory_pct == pytest.approx(88.0)
    rows = {r["kernel"]: r for r in p.rows("a100-80gb-sxm")}
    assert rows[gemm.name]["bound"] == "compute" and rows[norm.name]["bound"] == "memory"


def test_ncu_export_without_duration_is_refused() -> None:
    """A real export (PolyFHE artifact) that collected only dram__bytes_read.sum: no kernel time."""
    with pytest.raises(LlmsimError, match=r"missing gpu__time_duration\.sum"):
        llmsim.read_profile(FIXTURES / "polyfhe_memaccess_ncu_dram_only.csv")


# ---- Nsight Systems ---------------------------------------------------------------------------------
def test_nsys_kern_sum_real_export_polyfhe() -> None:
    """A real `nsys stats --report cuda_gpu_kern_sum --format csv` (nsys 2024.7.1, RTX 4090) from PolyFHE."""
    import csv

    path = FIXTURES / "polyfhe_phantom_cuda_gpu_kern_sum.csv"
    p = llmsim.read_profile(path)
    assert p.format == "Nsight Systems (cuda_gpu_kern_sum)" and len(p.kernels) == 15 and p.idle_s is None
    top = p.kernels[0]
    assert top.name.startswith("phantom::key_switch_inner_prod_c2_and_evk") and top.calls == 5
    assert top.time_s == pytest.approx(1791874e-9)
    # nsys's own "Time (%)" column (rounded to 0.1) agrees with each kernel's share of the total
    rows = list(csv.DictReader(path.read_text().splitlines()[2:]))
    total = p.kernel_time_s
    shares = {r["Name"]: float(r["Time (%)"]) for r in rows if r.get("Name")}
    for k in p.kernels:
        assert 100 * k.time_s / total == pytest.approx(shares[k.name], abs=0.051)


def test_nsys_gpu_trace_documented_layout_idle_time() -> None:
    """cuda_gpu_trace built from NVIDIA's documented columns: three kernels and a copy with gaps."""
    p = llmsim.read_profile(FIXTURES / "nsys_cuda_gpu_trace_documented_layout.csv")
    # rows (start, duration) ns: copy (1000, 500), gemm (2000, 4000), norm (6500, 500), gemm (8000, 4000)
    assert p.span_s == pytest.approx((12000 - 1000) * 1e-9)
    busy = covered_s([(1000, 1500), (2000, 6000), (6500, 7000), (8000, 12000)])  # 9000 ns
    assert p.idle_s == pytest.approx((11000 - busy) * 1e-9)  # 2000 ns of gaps
    copy = next(k for k in p.kernels if k.op_class == "copy")
    assert copy.bytes == pytest.approx(4.194304e6) and copy.bytes_source == "counters"
    gemm = next(k for k in p.kernels if k.op_class == "matmul")
    assert gemm.calls == 2 and gemm.time_s == pytest.approx(8000e-9)


def test_nsys_compare_fills_flops_from_matched_ops() -> None:
    """A GEMM kernel group without FLOPs takes its matched op's FLOPs per call, marked "matched op"."""
    p = llmsim.read_profile(FIXTURES / "nsys_cuda_gpu_trace_documented_layout.csv")
    result = llmsim.simulate(TINY_CONFIGS["llama-gqa"], "h100-sxm", batch_size=BATCH, prompt_len=SEQ, gen_len=2)
    c = p.compare(result)
    gemm = next(k for k in c.profile.kernels if k.op_class == "matmul")
    # one measured GEMM group, but the prediction has several matmul shapes: no pairing, nothing guessed
    assert gemm.flops is None and gemm.name in c.unmatched_kernels


@pytest.mark.parametrize("text, needed", [
    ("Time (%),Total Time (ns),Avg (ns),Name\n50.0,1000,500,k\n", "'Instances' or 'Calls'"),
    ("Start (ns),CorrId,Name\n100,1,k\n", "'Duration \\(ns\\)'"),
    ('"ID","Kernel Name","dram__bytes_read.sum"\n"","","byte"\n"0","k","100"\n', r"gpu__time_duration\.sum"),
    ('{"traceEvents": [{"ph": "X", "cat": "python_function", "name": "f", "ts": 0, "dur": 1}]}',
     "no 'cpu_op' or 'kernel' events"),
    ('{"schemaVersion": 1}', "no 'traceEvents' list"),
    ("just some text\n", "not a known export"),
])
def test_exports_lacking_needed_columns_are_refused(tmp_path: Path, text: str, needed: str) -> None:
    path = tmp_path / "export.json" if text.startswith("{") else tmp_path / "export.csv"
    path.write_text(text)
    with pytest.raises(LlmsimError, match=needed) as info:
        llmsim.read_profile(path)
    assert "\n" not in str(info.value)


def test_binary_reports_and_missing_files_are_refused(tmp_path: Path) -> None:
    report = tmp_path / "run.nsys-rep"  # .ncu-rep files are read (tests/test_profiles_ncu_rep.py)
    report.write_bytes(b"\x00\x01")
    with pytest.raises(LlmsimError, match="nsys stats --report cuda_gpu_trace"):
        llmsim.read_profile(report)
    with pytest.raises(LlmsimError, match="no such file"):
        llmsim.read_profile(tmp_path / "absent.csv")


def test_damaged_torch_traces_are_refused_in_one_line(tmp_path: Path) -> None:
    # a gzip cut short, a re-saved UTF-16 file, a non-numeric and a negative duration: an EOFError,
    # UnicodeDecodeError and ValueError traceback, and a kernel of -0.005 ms, before session 33
    import gzip
    import json

    source = FIXTURES / "hta_simple_add_a100_trace.json.gz"
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(source.read_bytes()[:10_000])
    with gzip.open(source, "rt") as handle:
        data = json.load(handle)
    utf16 = tmp_path / "utf16.json"
    utf16.write_text(json.dumps(data), encoding="utf-16")
    first = next(e for e in data["traceEvents"] if e.get("ph") == "X" and "dur" in e)
    cases = [(cut, "not readable JSON"), (utf16, "not UTF-8 text")]
    for bad in ("abc", -5):
        first["dur"] = bad
        path = tmp_path / f"dur_{bad}.json"
        path.write_text(json.dumps(data))
        cases.append((path, f"dur={bad!r}, ts=.*must be a number of microseconds >= 0"))
    for path, match in cases:
        with pytest.raises(LlmsimError, match=match) as info:
            llmsim.read_profile(path)
        assert "\n" not in str(info.value)


def test_cli_profile_refuses_prediction_settings_without_a_model(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture) -> None:
    from llmsim.cli import main

    args = ["profile", str(FIXTURES / "hta_simple_add_a100_trace.json.gz"), "--hardware", "a100-80gb-sxm",
            "--out", str(tmp_path / "p.png")]
    assert main([*args, "--batch-size", "4", "--weight-dtype", "fp8"]) == 2  # ignored before session 33
    assert "--batch-size, --weight-dtype: set the prediction" in capsys.readouterr().err
    assert main(args) == 0


def test_cli_profile_default_plot_is_numbered_past_one_already_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture) -> None:
    # a rerun refused to overwrite the first run's default plot before session 33
    from llmsim.cli import main

    monkeypatch.chdir(tmp_path)
    args = ["profile", str(FIXTURES / "ncu_raw_documented_layout.csv"), "--hardware", "a100-80gb-sxm"]
    assert main(args) == 0 and main(args) == 0
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["ncu_raw_documented_layout-roofline-2.png",
                                                               "ncu_raw_documented_layout-roofline.png"]


def test_cli_profile_prints_the_table_and_writes_the_plot(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from llmsim.cli import main

    out = tmp_path / "p.png"
    assert main(["profile", str(FIXTURES / "polyfhe_phantom_cuda_gpu_kern_sum.csv"), "--hardware", "rtx-4090",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "key_switch_inner_prod" in text and f"wrote {out}" in text and out.stat().st_size > 5_000
    assert main(["profile", str(FIXTURES / "polyfhe_memaccess_ncu_dram_only.csv"), "--hardware", "a100-80gb-sxm",
                 "--out", str(tmp_path / "q.png")]) == 2
    assert "gpu__time_duration.sum" in capsys.readouterr().err


# ---- torch.profiler on CUDA ---------------------------------------------------------------------------
def test_torch_cuda_trace_real_export_hta_alexnet_a100() -> None:
    """A real torch.profiler CUDA trace (PARAM AlexNet forward on an A100, recorded without shapes) from
    HolisticTraceAnalysis' test data: device kernels, copies, launch calls and the device's idle time."""
    import gzip
    import json

    path = FIXTURES / "hta_simple_add_a100_trace.json.gz"
    p = llmsim.read_profile(path)
    assert (p.format, p.device) == ("torch.profiler (CUDA)", "gpu")
    with gzip.open(path, "rt") as handle:
        events = json.load(handle)["traceEvents"]
    device = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    # every device event is one kernel call, its time the event's duration (microseconds in the file)
    assert sum(k.calls for k in p.kernels) == len(device) == 98
    assert p.kernel_time_s == pytest.approx(sum(e["dur"] for e in device) * 1e-6)
    start, end = min(e["ts"] for e in device), max(e["ts"] + e["dur"] for e in device)
    assert p.span_s == pytest.approx((end - start) * 1e-6)
    busy = covered_s([(e["ts"], e["ts"] + e["dur"]) for e in device])
    assert p.idle_s == pytest.approx((end - start - busy) * 1e-6)  # 99.7% idle: the run includes its set-up
    launches = [e for e in events if e.get("cat") == "cuda_runtime" and "Launch" in e["name"]]
    assert p.host_launch_s == pytest.approx(sum(e["dur"] for e in launches) * 1e-6)
    by_name = {k.name: k for k in p.kernels}
    # classes from the aten op that launched each kernel: aten::addmm's sgemm, aten::add's element-wise kernel
    assert by_name["ampere_sgemm_32x32_sliced1x4_tn"].op_class == "matmul"
    assert by_name["ampere_sgemm_32x32_sliced1x4_tn"].precision == "fp32"
    add = next(k for k in p.kernels if "CUDAFunctor_add" in k.name)
    assert add.op_class == "elementwise"
    assert "recorded without record_shapes=True" in p.notes[0]
    assert p.rows("a100-80gb-sxm")[0]["kernel"] == "(idle: no kernel running)"


_NCU_RAW = ('"ID","Kernel Name","gpu__time_duration.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed"\n'
            '"","","usecond","%"\n')
_KERN_SUM = "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"


def _event(**fields: object) -> str:
    import json

    event = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 5, "pid": 1, "tid": 1,
             "args": {"Input Dims": [[8, 4], [4, 3]], "Input type": ["float", "float"]}}
    event.update(fields)
    return json.dumps({"traceEvents": [{k: v for k, v in event.items() if v is not ...}]})


@pytest.mark.parametrize(("name", "text", "match"), [
    # a damaged torch trace: each was a KeyError, AttributeError, ValueError or TypeError traceback, or (negative
    # or mismatched dims) a negative or meaningless FLOP count
    ("no-ts.json", _event(ts=...), r"event 'aten::mm' has dur=5, ts=None: each must be a number of microseconds"),
    ("no-name.json", _event(name=None), "has name=None; each complete"),
    ("args-text.json", _event(args="oops"), "has args='oops': a mapping"),
    ("pid-list.json", _event(pid=[1]), r"has pid=\[1\]: a process or thread id"),
    ("dims-text.json", _event(args={"Input Dims": [[8, "a"], [2, 3]]}), "Input Dims=.*integers >= 0"),
    ("dims-negative.json", _event(args={"Input Dims": [[-8, 4], [4, 3]], "Input type": ["float", "float"]}),
     "Input Dims=.*integers >= 0"),
    ("dims-mismatch.json", _event(args={"Input Dims": [[8, 4], [5, 3]], "Input type": ["float", "float"]}),
     r"aten::mm with inputs \[8, 4\] and \[5, 3\]: the inner sizes must agree"),
    # ncu and nsys numbers: NaN, inf, negative or past any percentage of peak were read (nan ms, a memory-bound
    # verdict from a NaN, -0.01 ms, 500 % of peak) or crashed (a header alone: IndexError; nan Instances)
    ("ncu-header.csv", _NCU_RAW.splitlines()[0] + "\n", "no kernel launches in it"),
    ("ncu-nan.csv", _NCU_RAW + '"0","gemm","nan","80"\n', "gpu__time_duration.sum = nan usecond; expected a finite"),
    ("ncu-negative.csv", _NCU_RAW + '"0","gemm","-10","80"\n', "= -10.0 usecond; expected a finite number >= 0"),
    ("ncu-500-percent.csv", _NCU_RAW + '"0","gemm","10","500"\n', r"= 500.0 %; expected a percentage in 0\.\.150"),
    ("ncu-short-row.csv", _NCU_RAW + '"0","gemm","10"\n', "row 3 has 3 fields, the header 4"),  # was: "missing
    # gpu__time_duration.sum" (the cut row read as a launch without metrics)
    ("nsys-nan-calls.csv", _KERN_SUM + "50,1000,nan,500,500,400,600,1,gemm_a\n",
     "Instances value 'nan' must be a finite number >= 0"),
    ("nsys-fraction-calls.csv", _KERN_SUM + "50,1000,2.7,500,500,400,600,1,gemm_a\n",
     "Instances value '2.7' must be a whole number of launches"),
    ("nsys-negative.csv", _KERN_SUM + "50,-1000,2,500,500,400,600,1,gemm_a\n",
     "Total Time \\(ns\\) value '-1000' must be a finite number >= 0"),
    # a cut nsys export: the rows cut short were dropped without a word (a new-user audit)
    ("nsys-cut.csv", (FIXTURES / "nsys_cuda_gpu_trace_documented_layout.csv").read_text()[:600],
     "row 4 has 6 fields, the header 21 \\(a cut or edited export\\)"),
])
def test_a_damaged_profile_is_refused_by_event_or_metric(name: str, text: str, match: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(LlmsimError, match=match) as info:
        llmsim.read_profile(path)
    assert "\n" not in str(info.value)


def test_concurrent_kernels_say_their_shares_add_past_100_percent(tmp_path: Path) -> None:
    """Two kernels on two streams at once: each share is its time over the span (1000 / 2000 ns = 50 %, three
    rows: 150 %), which the table now says instead of leaving the sum past 100 % unexplained (a new-user audit)."""
    path = tmp_path / "overlap.csv"
    path.write_text("Start (ns),Duration (ns),GrdX,Name\n0,1000,1,gemm_a\n0,1000,1,nccl_allreduce\n"
                    "1000,1000,1,gemm_b\n")
    text = llmsim.read_profile(path).kernels_table("h100-sxm")
    assert "note: kernels ran concurrently (on several streams): 0.003 ms of kernel time in a 0.002 ms span" in text
    assert "so the shares add to 150.0%" in text
    serial = tmp_path / "serial.csv"
    serial.write_text("Start (ns),Duration (ns),GrdX,Name\n0,1000,1,gemm_a\n1000,1000,1,gemm_b\n")
    assert "concurrently" not in llmsim.read_profile(serial).kernels_table("h100-sxm")


def test_a_child_op_that_outlasts_its_parent_is_not_nested(tmp_path: Path) -> None:
    """aten::add starting inside aten::linear (0..10 us) but ending at 12 us is no child of it: nested, it left
    linear a self time of 10 - 6 - 5 = -1 us (-10 % of the time)."""
    import json

    events = [{"ph": "X", "cat": "cpu_op", "name": n, "ts": ts, "dur": dur, "pid": 1, "tid": 1}
              for n, ts, dur in (("aten::linear", 0, 10), ("aten::mm", 1, 6), ("aten::add", 7, 5))]
    path = tmp_path / "overlap.json"
    path.write_text(json.dumps({"traceEvents": events}))
    p = llmsim.read_profile(path)
    assert all(k.time_s >= 0 for k in p.kernels)


def test_collectives_are_communication_and_host_copies_are_off_the_hbm_roofline() -> None:
    """NCCL's AllReduce kernels were classed element-wise ("reduce"), so communication time landed in that bucket;
    a host-to-device copy was judged against HBM bandwidth (250.4 % of it in the documented-layout fixture)."""
    from llmsim.profiles.bound import classify
    from llmsim.profiles.classify import kernel_class

    for name in ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096>)",
                 "ncclKernel_AllGather_RING_LL_Sum_int8_t", "cross_device_reduce_1stage<__nv_bfloat16, 8>",
                 "vllm::reduce_scatter_kernel"):
        assert kernel_class(name) == "communication", name
    assert kernel_class("void at::native::reduce_kernel<512, 1>") == "elementwise"  # a plain reduction stays
    p = llmsim.read_profile(FIXTURES / "nsys_cuda_gpu_trace_documented_layout.csv")
    copy = next(k for k in p.kernels if k.op_class == "copy")  # [CUDA memcpy Host-to-Device], 4.19 MB in 500 ns
    verdict = classify(copy, llmsim.load_hardware("h100-sxm"))
    assert verdict["bound"] == "unknown" and "host link" in verdict["why"]


def test_a_cpu_trace_on_a_gpu_roofline_says_so(tmp_path: Path) -> None:
    """A CPU-only torch trace placed on h100-sxm's roofline rated the aten ops against H100 peaks without a word."""
    path = tmp_path / "cpu.json"
    path.write_text(_event())
    p = llmsim.read_profile(path)
    assert p.device == "cpu"
    with pytest.warns(llmsim.errors.AssumptionWarning, match="the profile's times are a CPU's, but its roofline"):
        table = p.kernels_table("h100-sxm")
    assert "note: the profile's times are a CPU's, but its roofline and bounds are h100-sxm's, a GPU" in table
    assert "times are a CPU's" not in p.kernels_table("cpu-generic")


def test_a_gpu_trace_with_a_byte_order_mark_and_a_folder(tmp_path: Path) -> None:
    """A cuda_gpu_trace re-saved with a UTF-8 byte-order mark was "not a known export" (a kern_sum one read fine);
    a folder was "no such file"."""
    text = (FIXTURES / "nsys_cuda_gpu_trace_documented_layout.csv").read_text()
    marked = tmp_path / "bom.csv"
    marked.write_bytes(text.encode("utf-8-sig"))
    assert llmsim.read_profile(marked).kernels == llmsim.read_profile(
        FIXTURES / "nsys_cuda_gpu_trace_documented_layout.csv").kernels
    with pytest.raises(LlmsimError, match="a folder; give one export file in it"):
        llmsim.read_profile(tmp_path)


def test_cli_profile_default_plot_keeps_the_whole_stem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture) -> None:
    # it was cut at the first dot: llama-3.1-8b.run.csv -> llama-3-roofline.png (a new-user audit, session 46)
    from llmsim.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "llama-3.1-8b.run.csv").write_text((FIXTURES / "nsys_cuda_gpu_trace_documented_layout.csv").read_text())
    assert main(["profile", "llama-3.1-8b.run.csv", "--hardware", "h100-sxm"]) == 0
    assert main(["profile", str(FIXTURES / "hta_simple_add_a100_trace.json.gz"), "--hardware", "a100-80gb-sxm"]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["hta_simple_add_a100_trace-roofline.png",
                                                              "llama-3.1-8b.run-roofline.png"]


def test_compare_refuses_a_decode_the_result_does_not_have(recorded: dict) -> None:
    # it printed 0 ms predicted for every class (a new-user audit, session 46)
    p = llmsim.read_profile(recorded["path"])
    spec = TINY_CONFIGS[recorded["name"]]
    result = llmsim.simulate(spec, "h100-sxm", batch_size=BATCH, prompt_len=SEQ, gen_len=1, **COST)
    with pytest.raises(llmsim.OptionError, match=r"phase='decode': the result has no decode step \(gen_len=1\)"):
        p.compare(result, phase="decode")


def test_nsys_trace_names_its_gpu_and_a_wrong_device_is_said() -> None:
    # the Device column ("NVIDIA H100 80GB HBM3 (0)") was not read, so an nsys trace on another GPU's roofline got no
    # warning (an .ncu-rep did); and a100-80gb-sxm's "80gb" matched the H100 80GB's name (a new-user audit, session 46)
    import warnings

    p = llmsim.read_profile(FIXTURES / "nsys_cuda_gpu_trace_documented_layout.csv")
    assert p.gpu_name == "NVIDIA H100 80GB HBM3"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert "the profile ran on NVIDIA H100 80GB HBM3, but its roofline and bounds are a100-80gb-sxm's" in (
            p.kernels_table("a100-80gb-sxm"))
        assert "the profile ran on" not in p.kernels_table("h100-sxm")


def test_the_header_counts_copies_apart_from_kernels(tmp_path: Path) -> None:
    # rows (start, duration) ns: copy (1000, 500), gemm (2000, 4000), norm (6500, 500), gemm (8000, 4000): two kernel
    # names (8500 ns) and one copy (500 ns); the header said "3 kernels, 0.009 ms in kernels" (a new-user audit)
    p = llmsim.read_profile(FIXTURES / "nsys_cuda_gpu_trace_documented_layout.csv")
    assert "2 kernels and 1 copy, 0.009 ms in kernels and 0.001 ms in copies" in str(p)  # 8500 ns, 500 ns
    one = tmp_path / "one.csv"
    one.write_text("Start (ns),Duration (ns),GrdX,Name\n0,1000,1,gemm_a\n2000,1000,1,gemm_a\n")
    assert ": 1 kernel, 0.002 ms in kernels" in str(llmsim.read_profile(one))  # "1 kernels"


def test_a_zero_time_kernel_with_counts_is_not_called_countless() -> None:
    # a launch of 0 ns with its FLOPs and bytes read said "time only: no counters, shapes or matched op" (session 46)
    from llmsim.profiles.bound import classify
    from llmsim.profiles.model import Kernel

    hw = llmsim.load_hardware("h100-sxm")
    zero = classify(Kernel(name="gemm", calls=1, time_s=0.0, op_class="matmul", flops=1e9, bytes=1e6), hw)
    assert zero["bound"] == "unknown" and zero["why"].startswith("a time of 0: no rate")
    bare = classify(Kernel(name="gemm", calls=1, time_s=1e-6, op_class="matmul"), hw)
    assert bare["why"] == "time only: no counters, shapes or matched op"
