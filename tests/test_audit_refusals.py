"""A new user's audit (session 26): options that were silently ignored, values that gave inf/NaN or a wrong model,
and two tracebacks, each now a one-line error naming the field or a corrected result."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import llmsim
from llmsim.errors import OptionError

from .test_cli import run

MODEL, GPU = "llama-3.2-1b", "h100-sxm"
SERVE = dict(concurrency=2, num_requests=4, prompt_len=64, gen_len=8)


def _one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, _, err = run(capsys, *argv)
    assert code != 0 and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_whatif_on_the_command_line_takes_fractional_values(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "whatif", MODEL, "--hw", GPU, "--vary", "step_host_s=0,0.001")
    assert code == 0, err
    assert "0.001" in out


def test_validate_refuses_more_layers_than_the_model_has() -> None:
    from llmsim.validation.hf_model import prepare_config

    config = {"model_type": "gpt2", "n_layer": 12, "n_embd": 64, "n_head": 4}
    assert prepare_config(config, "float32", 2)["n_layer"] == 2
    with pytest.raises(llmsim.LlmsimError, match=r"num_layers=100 exceeds the model's 12 layers \(n_layer\)"):
        prepare_config(config, "float32", 100)


def test_a_lengths_csv_that_is_not_text(tmp_path: Path) -> None:
    path = tmp_path / "bin.csv"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(OptionError, match="is not a UTF-8 text CSV"):
        llmsim.serve(MODEL, GPU, concurrency=2, num_requests=4, lengths_csv=str(path))


def test_lengths_csv_with_explicit_lengths_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lengths.csv"
    path.write_text("prompt_len,gen_len\n100,10\n200,20\n")
    r = llmsim.serve(MODEL, GPU, concurrency=2, num_requests=4, lengths_csv=str(path))
    assert r.num_requests == 4
    with pytest.raises(OptionError, match="drop prompt_len and gen_len, or drop lengths_csv"):
        llmsim.serve(MODEL, GPU, concurrency=2, num_requests=4, lengths_csv=str(path), prompt_len=5000, gen_len=500)


def test_a_bad_length_in_a_lengths_csv_is_named_with_its_line(tmp_path: Path) -> None:
    """(It said only that every length must be a whole number >= 1, not which.)"""
    for body, message in (("100,20\n200,x\n", "line 3: gen_len='x' is not a whole number of tokens"),
                          ("100,20\n300,5\n0,5\n", "line 4: prompt_len=0 must be >= 1"),
                          ("12.5,3\n", "line 2: prompt_len='12.5' is not a whole number")):
        path = tmp_path / "lengths.csv"
        path.write_text("prompt_len,gen_len\n" + body)
        with pytest.raises(OptionError, match=message):
            llmsim.serve(MODEL, GPU, concurrency=2, num_requests=4, lengths_csv=str(path))


def test_an_analyze_function_that_raises_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "mod.py").write_text("def bad():\n    raise RuntimeError('boom')\n")
    line = _one_line_error(capsys, "analyze", f"{tmp_path / 'mod.py'}:bad", "--input-shape", "4,64")
    assert "bad() raised RuntimeError: boom" in line


@pytest.mark.parametrize("field, value", [("step_host_s", 1e308), ("prefill_dispatch_s", 1e300)])
def test_host_times_past_an_hour_are_refused(field: str, value: float) -> None:
    with pytest.raises(OptionError, match=f"{field}=.* must be at most 3600 seconds"):
        llmsim.simulate(MODEL, GPU, **{field: value})


def test_serving_time_and_rate_bounds() -> None:
    with pytest.raises(OptionError, match="frontend_s=1e\\+300 must be at most 3600 seconds"):
        llmsim.serve(MODEL, GPU, frontend_s=1e300, **SERVE)
    with pytest.raises(OptionError, match="request_rate=1e-300 must be at least 1e-05 requests per second"):
        llmsim.serve(MODEL, GPU, request_rate=1e-300, num_requests=4, prompt_len=64, gen_len=8)
    with pytest.raises(OptionError, match=r"prompt_len='uniform:1:1e20': both numbers .* at most 100,000,000 tokens"):
        llmsim.serve(MODEL, GPU, **{**SERVE, "prompt_len": "uniform:1:1e20"})


def test_options_of_another_engine_or_mode_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(OptionError, match="batch_wait_timeout_iters and batch_wait_max_tokens_ratio are "
                                          "TensorRT-LLM's; engine 'vllm'"):
        llmsim.serve(MODEL, GPU, batch_wait_timeout_iters=5, **SERVE)
    with pytest.raises(OptionError, match="prefix_groups=3 needs shared_prefix_len > 0"):
        llmsim.serve(MODEL, GPU, prefix_groups=3, **SERVE)
    line = _one_line_error(capsys, "serve", MODEL, "--hw", GPU, "--concurrency", "2", "--num-requests", "4",
                           "--kv-transfer-bytes-per-s", "1e9")
    assert "--kv-transfer-bytes-per-s applies to disaggregated serving" in line
    line = _one_line_error(capsys, "calibrate", "--system", "h100_sxm", "--out", "x.toml")
    assert "--system: for --from aiconfigurator only" in line
    # the other way round: this machine's flags with --from aiconfigurator had been ignored without a word
    line = _one_line_error(capsys, "calibrate", "--from", "aiconfigurator", "--system", "l40s", "--engine", "vllm",
                           "--quick", "--threads", "2", "--out", "tables")
    assert "--quick, --threads: for measuring this machine only; --from aiconfigurator takes --system" in line


def test_analyze_options_that_do_not_apply_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    line = _one_line_error(capsys, "analyze", "hf:vit", "--steps", "5")
    assert line.endswith("FILE.py:FUNCTION that returns only a module)") and "--steps does not apply to hf:vit" in line
    line = _one_line_error(capsys, "analyze", "hf:vit", "--input-shape", "1,3,224,224")
    assert "--input-shape does not apply to hf:vit" in line


def test_a_draft_model_must_share_the_vocabulary() -> None:
    with pytest.raises(OptionError, match="has a vocabulary of 50,257 tokens, the model 128,256"):
        llmsim.serve(MODEL, GPU, speculative={"method": "draft", "num_tokens": 4, "acceptance_rate": 0.7,
                                              "draft_model": "gpt2"}, **SERVE)


def test_output_paths_are_checked_before_the_work(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    line = _one_line_error(capsys, "calibrate", "--quick", "--out", str(tmp_path / "missing" / "c.toml"))
    assert "no folder" in line
    line = _one_line_error(capsys, "calibrate", "--quick", "--out", str(tmp_path / "c.txt"))
    assert "the name must end in .toml" in line
    # a folder that exists but takes no file (/proc): refused before the minutes of measuring, not a traceback
    line = _one_line_error(capsys, "calibrate", "--quick", "--out", "/proc/llmsim-calibrated.toml")
    assert "--out /proc/llmsim-calibrated.toml: cannot write there" in line
    line = _one_line_error(capsys, "validate", "gpt2", "--hw", "cpu-generic", "--results",
                           str(tmp_path / "missing" / "r.jsonl"))
    assert "no folder" in line
    line = _one_line_error(capsys, "sweep", MODEL, "--hw", GPU, "--csv", str(tmp_path))
    assert "that is a folder" in line
    code, _, err = run(capsys, "sweep", MODEL, "--hw", GPU, "--batch-size", "1,,2")
    assert code != 0 and "'1,,2': give integers like 1,2,4" in err


def test_one_generated_token_has_no_tpot_line() -> None:
    text = str(llmsim.simulate(MODEL, GPU, gen_len=1))
    assert "TPOT               n/a   no decode step" in text


def test_python_dash_m_runs_the_command_line() -> None:
    done = subprocess.run([sys.executable, "-m", "llmsim", "hardware"], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0 and "h100-sxm" in done.stdout


def test_a_count_in_a_hardware_file_is_whole_and_a_one_gpu_file_says_how_to_go_wider(tmp_path: Path) -> None:
    from llmsim.errors import HardwareError

    text = (Path(llmsim.__file__).resolve().parents[1] / "hardware" / "h100-sxm.toml").read_text()
    path = tmp_path / "odd.toml"
    path.write_text(text.replace("gpus_per_node                    = { value = 8,",
                                 "gpus_per_node                    = { value = 2.5,"))
    with pytest.raises(HardwareError, match=r"gpus_per_node: value 2\.5 is not a whole number"):
        llmsim.load_hardware(str(path))
    with pytest.raises(HardwareError, match="more GPUs than its gpus_per_node=1 need a link between nodes"):
        llmsim.simulate("llama-3.1-8b", "rtx-4090", tensor_parallel=2)


def test_a_measured_ops_bound_is_decided_at_the_achievable_ridge() -> None:
    r = llmsim.op_cost("conv", "h100-sxm", shape=(8, 64, 56, 56), out_channels=64, kernel_size=3, padding=1)
    # datasheet ridge 989.4e12 / 3.35e12 = 295.3 FLOP/B; achievable: (989.4e12 x 0.80) / (3.35e12 x 0.90) = 262.5
    assert r.ridge_point == pytest.approx(989.4e12 / 3.35e12)
    assert r.achievable_ridge_point == pytest.approx(989.4e12 * 0.80 / (3.35e12 * 0.90))
    # its intensity, 285 FLOP/B, lies between the two: compute-bound at the achievable rates, as reported
    assert r.achievable_ridge_point < r.arithmetic_intensity < r.ridge_point and r.bound == "compute"


def test_a_normal_wider_than_its_mean_says_the_mean_moved() -> None:
    from llmsim.errors import AssumptionWarning

    with pytest.warns(AssumptionWarning, match=r"prompt_len='normal:10:1000': \d+% of the draws fell below 1 token"):
        llmsim.serve(MODEL, GPU, **{**SERVE, "num_requests": 200, "prompt_len": "normal:10:1000"})


def test_one_generated_token_has_no_tpot_in_json_or_sweep_rows(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    # a new-user audit (session 46): the table said "TPOT n/a" but --json and sweep gave 0 s, a wrong number
    code, out, _ = run(capsys, "simulate", MODEL, "--hw", GPU, "--gen-len", "1", "--json")
    assert code == 0 and '"tpot_s": null' in out
    rows = llmsim.sweep(MODEL, GPU, batch_size=[1], prompt_len=[64], gen_len=[1, 4]).to_rows()
    assert rows[0]["tpot_s"] is None and rows[1]["tpot_s"] > 0
    code, out, _ = run(capsys, "sweep", MODEL, "--hw", GPU, "--gen-len", "1", "--csv", str(tmp_path / "s.csv"))
    assert code == 0 and "n/a" in out
    header, row = (tmp_path / "s.csv").read_text().splitlines()
    assert row.split(",")[header.split(",").index("tpot_s")] == ""


def test_sweep_csv_dash_is_standard_output_and_an_empty_name_is_refused(capsys: pytest.CaptureFixture[str],
                                                                        tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "sweep", MODEL, "--hw", GPU, "--batch-size", "1,2", "--csv", "-")
    assert code == 0 and out.splitlines()[0].startswith("batch_size,prompt_len,gen_len,ttft_s")
    assert len(out.splitlines()) == 3 and not (tmp_path / "-").exists()  # it wrote a file named "-"
    assert _one_line_error(capsys, "sweep", MODEL, "--hw", GPU, "--csv", "") == (
        "llmsim: error: --csv '': give a file name (or - for standard output)")  # it wrote nothing, silently
    assert "both write to standard output" in _one_line_error(capsys, "sweep", MODEL, "--hw", GPU, "--csv", "-",
                                                              "--json")


def test_a_layer_kind_option_on_a_model_without_that_kind_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    # a new-user audit (session 46): --mla expand and --linear-attention-kernel fla on Llama changed nothing, silently
    import warnings

    from llmsim.errors import AssumptionWarning

    for option, message in ((("mla", "expand"), "mla='expand' changes nothing: the model has no MLA"),
                            (("linear_attention_kernel", "fla"), "the model has no linear-attention (gated DeltaNet)")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            llmsim.simulate(MODEL, GPU, batch_size=1, prompt_len=16, gen_len=2, **dict([option]))
        assert any(message in str(w.message) and w.category is AssumptionWarning for w in caught)
    with warnings.catch_warnings(record=True) as caught:  # a model with MLA layers: nothing to say
        warnings.simplefilter("always")
        llmsim.simulate("deepseek-v2-lite", GPU, batch_size=1, prompt_len=16, gen_len=2, mla="expand")
    assert not any("changes nothing" in str(w.message) for w in caught)


def test_an_empty_device_name_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # a new-user audit (session 46): a hardware file named "" loaded ("llama-3.2-1b on : batch 1"), and
    # `calibrate --name ''` wrote cpu-calibrated without a word
    import tomllib

    from llmsim.hardware.spec import hardware_from_dict
    from llmsim.shipped import hardware_dir

    data = tomllib.loads((hardware_dir() / f"{GPU}.toml").read_text())
    with pytest.raises(llmsim.LlmsimError, match="name=''; give the device a name"):
        hardware_from_dict(dict(data, name=""))
    with pytest.raises(llmsim.LlmsimError, match="name='  '; give the device a name"):
        hardware_from_dict(dict(data, name="  "))
    assert _one_line_error(capsys, "calibrate", "--quick", "--name", "", "--out", str(tmp_path / "c.toml")) == (
        "llmsim: error: --name '': give the hardware file a name (or leave --name out for the default)")
    assert not (tmp_path / "c.toml").exists()


def test_data_parallel_headline_says_the_batch_is_per_replica(capsys: pytest.CaptureFixture[str]) -> None:
    # "batch 8" beside a throughput of 4 replicas' tokens read as a contradiction (a new-user audit, session 46)
    code, out, _ = run(capsys, "simulate", MODEL, "--hw", GPU, "--batch-size", "8", "--data-parallel", "4")
    assert code == 0 and "batch 8 per replica, prompt 512" in out
    code, out, _ = run(capsys, "simulate", MODEL, "--hw", GPU, "--batch-size", "8")
    assert "batch 8, prompt 512" in out
    code, out, _ = run(capsys, "simulate", "--help")
    assert "replicas, each serving --batch-size sequences of its own" in " ".join(out.split())


def test_limit_without_an_slo_says_no_target(capsys: pytest.CaptureFixture[str]) -> None:
    # it printed "slo not met" with no SLO given (a new-user audit, session 46)
    code, out, _ = run(capsys, "limit", MODEL, "--hw", GPU, "--vary", "kv_len", "--batch-size", "1")
    assert code == 0 and "slo        no target given" in out
    code, out, _ = run(capsys, "limit", MODEL, "--hw", GPU, "--vary", "kv_len", "--batch-size", "1", "--tpot-slo-s",
                       "10")
    assert "slo        not met" in out


def test_empty_and_uncallable_names_say_what_is_wrong(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # a new-user audit (session 46): each message named another fault ("a folder", "give --model too", "no function")
    fixture = str(Path(__file__).parent / "fixtures" / "profiles" / "nsys_cuda_gpu_trace_documented_layout.csv")
    assert _one_line_error(capsys, "profile", "", "--hw", GPU) == (
        "llmsim: error: profile '': give the export file to read")
    assert _one_line_error(capsys, "profile", fixture, "--hw", GPU, "--model", "") == (
        "llmsim: error: --model '': give a model name or config (or leave --model out)")
    (tmp_path / "mymod.py").write_text("x = 5\n")
    assert "'x' is of type int, not a function to call" in _one_line_error(
        capsys, "analyze", f"{tmp_path / 'mymod.py'}:x", "--hw", GPU)


def test_plan_says_what_it_leaves_out_and_refuses_what_it_would_ignore(capsys: pytest.CaptureFixture[str]) -> None:
    # a new-user audit (session 46): TP=4 asked for was dropped past max_gpus without a word; a TPOT target with one
    # generated token and pipeline_decode without pipeline parallelism did nothing; 8,8 searched twice; the price
    # showed only in --json
    p = llmsim.plan("llama-3.1-8b", GPU, prompt_len=128, gen_len=8, batch_sizes=[1, 1], max_gpus=2,
                    tensor_parallel=[1, 4], pipeline_parallel=[1], usd_per_gpu_hour=2.5)
    assert p.notes == ["TP=4 x PP=1 left out: 4 GPUs, past max_gpus=2"]
    assert len(p.candidates) == 1  # batch 1 once
    text = str(p)
    assert "note: TP=4 x PP=1 left out" in text and "USD/hour USD/M tok" in text
    c = p.best  # USD/M tokens = 2.5 USD/hour / (tokens/s x 3600) x 1e6
    assert c.usd_per_million_tokens == pytest.approx(2.5 / (c.tokens_per_s * 3600) * 1e6, rel=1e-12)
    assert f"{c.usd_per_million_tokens:>9.3f}" in text
    with pytest.raises(OptionError, match=r"tpot_slo_s=0\.05 with gen_len=1: one generated token has no decode step"):
        llmsim.plan("llama-3.1-8b", GPU, prompt_len=128, gen_len=1, tpot_slo_s=0.05, max_gpus=2, batch_sizes=[1])
    with pytest.raises(OptionError, match="pipeline_decode='lockstep': every split searched has pipeline_parallel=1"):
        llmsim.plan("llama-3.1-8b", GPU, prompt_len=128, gen_len=8, batch_sizes=[1], pipeline_parallel=[1],
                    pipeline_decode="lockstep")


def test_analyze_api_refuses_in_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # a new-user audit (session 46): a list as example_kwargs raised a ValueError, by_module(1.5) a TypeError, and
    # by_module(0 or -1) returned the whole model as one row; --autocast '' listed every dtype llmsim knows
    torch = pytest.importorskip("torch")
    module, x = torch.nn.Linear(8, 8), torch.randn(2, 8)
    with pytest.raises(OptionError, match="example_kwargs: a list; give a dict of keyword arguments"):
        llmsim.analyze(module, (x,), example_kwargs=[1])
    r = llmsim.analyze(module, (x,))
    for depth in (0, -1, 1.5):
        with pytest.raises(OptionError, match=f"depth={depth} must be an integer in 1"):
            r.by_module(depth)
    (tmp_path / "mods.py").write_text("import torch\ndef pair():\n"
                                      "    return torch.nn.Linear(8, 8), (torch.randn(2, 8),)\n")
    assert _one_line_error(capsys, "analyze", f"{tmp_path / 'mods.py'}:pair", "--autocast", "") == (
        "llmsim: error: autocast='' is not allowed; choose one of bfloat16, float16")


def test_plan_table_says_the_best_is_on_the_front() -> None:
    # the text listed the front without its best row (printed once, above), which read as the best being off it
    p = llmsim.plan("llama-3.1-8b", GPU, prompt_len=512, gen_len=64, tpot_slo_s=0.03, ttft_slo_s=1, max_gpus=4,
                    batch_sizes=[1, 8, 64])
    assert p.best in p.pareto and "against throughput per GPU, besides the best above):" in str(p)


def test_fp8_scales_on_a_16_bit_run_is_said() -> None:
    # a new-user audit (session 46): fp8_scales='dynamic' on bf16 weights and activations changed nothing, silently
    import warnings

    def said(**kw: Any) -> bool:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            llmsim.simulate(MODEL, GPU, batch_size=1, prompt_len=16, gen_len=2, fp8_scales="dynamic", **kw)
        return any("fp8_scales='dynamic' changes nothing: activations are" in str(w.message) for w in caught)

    assert said() and not said(weight_dtype="fp8", activation_dtype="fp8")
