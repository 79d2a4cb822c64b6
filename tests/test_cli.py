"""The llmsim command as a user runs it: every subcommand, JSON round trip, bad input."""

from __future__ import annotations

import json
import math
import os
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import llmsim
import llmsim.validation
from llmsim.analysis.simulate import SimulationResult
from llmsim.cli import main

ROOT = Path(__file__).resolve().parent.parent


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_simulate_summary_and_ops(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch-size", "16",
                       "--prompt-len", "2048", "--gen-len", "512", "--ops")
    assert code == 0
    assert "TTFT" in out and "TPOT" in out and "fits" in out and "layers.mlp.down_proj" in out


def test_simulate_json_round_trips(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", "mixtral-8x7b", "--hardware", "h200", "--batch-size", "4", "--json")
    assert code == 0
    result = SimulationResult.model_validate_json(out)
    assert result.batch_size == 4 and result.model == "mixtral-8x7b"
    assert SimulationResult.model_validate_json(result.model_dump_json()) == result


@pytest.mark.parametrize("argv", [
    ["sweep", "llama-3.2-1b", "--hardware", "l4", "--batch-size", "1,8,64", "--prompt-len", "128,1024"],
    ["crossover", "llama-3.1-8b", "--hardware", "h100-sxm", "--phase", "prefill", "--vary", "seq_len",
     "--batch-size", "1"],
    ["limit", "llama-3.1-70b", "--hardware", "h200", "--vary", "kv_len", "--batch-size", "32",
     "--tpot-slo-s", "0.05"],
    ["models"],
    ["hardware"],
])
def test_subcommands(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert out.strip()


def test_sweep_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "sweep", "qwen3-8b", "--hardware", "a100-80gb-sxm", "--batch-size", "1:64", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["batch_size"] for r in rows] == [1, 2, 4, 8, 16, 32, 64]


@pytest.mark.parametrize("command", ["roofline", "plot"])
def test_plots_written(capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str) -> None:
    out_file = tmp_path / f"{command}.png"
    code, _, err = run(capsys, command, "llama-3.1-8b", "--hardware", "h100-sxm", "--out", str(out_file))
    assert code == 0, err
    assert out_file.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("argv", "message"), [
    (["simulate", "llama-3.1-8x", "--hardware", "h100-sxm"], "did you mean llama-3.1-8b"),
    (["simulate", "llama-3.1-8b", "--hardware", "h100-sxn"], "did you mean h100-sxm"),
    (["simulate", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch-size", "-4"], "--batch-size"),
    (["simulate", "llama-3.1-8b", "--hardware", "h100-sxm", "--prompt-len", "200000"], "context of 131072"),
    (["simulate", "llama-3.1-8b", "--hardware", "h100-sxm", "--attention", "fast"], "--attention"),
    # validate picks the cost options eager transformers runs: a serving option would be ignored, so it is refused
    (["validate", "gpt2", "--hardware", "cpu-generic", "--overlap", "sum"], "unrecognized arguments: --overlap"),
])
def test_bad_input_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_malformed_config_and_hardware_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad_config = tmp_path / "config.json"
    bad_config.write_text('{"model_type": "llama", "hidden_size": 64')
    code, _, err = run(capsys, "simulate", str(bad_config), "--hardware", "h100-sxm")
    assert code == 2 and "not valid JSON" in err and "Traceback" not in err
    bad_config.write_text(json.dumps({"model_type": "llama", "hidden_size": 64}))
    code, _, err = run(capsys, "simulate", str(bad_config), "--hardware", "h100-sxm")
    assert code == 2 and "missing field 'intermediate_size'" in err
    bad_config.write_text(json.dumps({"model_type": "bert", "hidden_size": 64}))
    code, _, err = run(capsys, "simulate", str(bad_config), "--hardware", "h100-sxm")
    assert code == 2 and "model_type='bert' is not supported" in err

    text = (ROOT / "hardware" / "h100-sxm.toml").read_text()
    bad_hw = tmp_path / "gpu.toml"
    bad_hw.write_text(text.replace("value = 3.35e12", "value = 3350"))  # GB/s where byte/s belongs
    code, _, err = run(capsys, "simulate", "gpt2", "--hardware", str(bad_hw))
    assert code == 2 and "memory.bandwidth_bytes_per_s" in err and "plausible range" in err
    bad_hw.write_text(text + '\n[memory_extra]\nx = { value = 1, unit = "s", source = "x" }\n')
    code, _, err = run(capsys, "simulate", "gpt2", "--hardware", str(bad_hw))
    assert code == 2 and "unknown key 'memory_extra'" in err
    bad_hw.write_text("name = [")
    code, _, err = run(capsys, "simulate", "gpt2", "--hardware", str(bad_hw))
    assert code == 2 and "not valid TOML" in err


def test_wheel_installs_and_runs(tmp_path: Path) -> None:
    """Build a wheel, install it (not editable) into a fresh environment, run the command from there."""
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
                    str(ROOT)], check=True)
    wheel = next(dist.glob("llmsim-*.whl"))
    env_dir = tmp_path / "venv"
    # the fresh environment borrows this one's dependencies (no network in CI), not llmsim itself and not the
    # base interpreter's packages: this environment's site-packages joined by a path file (whose own .pth files,
    # such as an editable llmsim's, are not run)
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    new_site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
    (Path(new_site) / "borrowed.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    # --ignore-installed: the borrowed site-packages may hold an installed llmsim (CI installs it non-editable)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", str(wheel)],
                   check=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    llmsim_bin = env_dir / "bin" / "llmsim"
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed copy only
    work = tmp_path / "elsewhere"
    work.mkdir()
    sim = subprocess.run([str(llmsim_bin), "simulate", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch-size",
                          "16", "--prompt-len", "2048", "--gen-len", "512"], capture_output=True, text=True,
                         cwd=work, check=True, env=clean)
    assert "TTFT" in sim.stdout
    models = subprocess.run([str(llmsim_bin), "models"], capture_output=True, text=True, cwd=work, check=True,
                            env=clean)
    assert "deepseek-v3" in models.stdout and "llama-3.1-405b" in models.stdout
    where = subprocess.run([str(python), "-c", "import llmsim; print(llmsim.__file__)"], capture_output=True,
                           text=True, cwd=work, check=True, env=clean)
    assert str(env_dir) in where.stdout  # the installed copy, not the checkout


def test_calibrate_never_overwrites(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    existing = tmp_path / "mine.toml"
    existing.write_text("# my notes\n")
    code, _, err = run(capsys, "calibrate", "--quick", "--out", str(existing))
    assert code == 2 and "exists" in err
    assert existing.read_text() == "# my notes\n"


def test_calibrate_refuses_an_empty_dtypes_list(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # an unset shell variable (--dtypes "") calibrated float32 and bfloat16 without a word
    assert main(["calibrate", "--quick", "--dtypes", "", "--out", str(tmp_path / "d.toml")]) == 2
    assert "--dtypes is empty" in capsys.readouterr().err
    assert not (tmp_path / "d.toml").exists()


def test_calibrate_threads_default_one_and_passed_on(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from llmsim.cli import build_parser

    parser = build_parser()
    # not given: None, so that --from aiconfigurator can refuse it when given; measuring takes 1 then
    assert parser.parse_args(["calibrate", "--out", "x.toml"]).threads is None
    assert parser.parse_args(["calibrate", "--out", "x.toml", "--threads", "4"]).threads == 4
    code, _, err = run(capsys, "calibrate", "--out", "x.toml", "--threads", "0")
    assert code == 2 and "--threads" in err
    seen: dict = {}

    def fake_calibrate(**kwargs: object) -> llmsim.HardwareSpec:  # no real measurement: it takes minutes
        seen.update(kwargs)
        return llmsim.load_hardware("cpu-generic")

    monkeypatch.setattr(llmsim.validation, "calibrate", fake_calibrate)
    code, out, _ = run(capsys, "calibrate", "--quick", "--threads", "3", "--out", str(tmp_path / "cpu.toml"))
    assert code == 0 and seen["threads"] == 3 and seen["progress"] is True and "wrote" in out
    assert seen["name"] is None  # the file's default name; --name passes one (every CLI file was cpu-calibrated)
    code, out, _ = run(capsys, "calibrate", "--quick", "--name", "my-epyc", "--out", str(tmp_path / "epyc.toml"))
    assert code == 0 and seen["name"] == "my-epyc"
    code, out, _ = run(capsys, "calibrate", "--quick", "--out", str(tmp_path / "cpu1.toml"))
    assert code == 0 and seen["threads"] == 1  # validation/README.md: 1 thread, the steadiest


def test_calibrate_floor_error_names_the_value_and_the_cure() -> None:
    from llmsim.validation.calibrate import check_plausible

    # a loaded machine: a copy at 0.82 GB/s is under the 1e9 byte/s floor of memory.bandwidth_bytes_per_s
    data = {"name": "cpu-calibrated", "memory": {"bandwidth_bytes_per_s": {"value": 8.2e8, "unit": "byte/s",
                                                                          "source": "measured"}}}
    with pytest.raises(llmsim.LlmsimError) as info:
        check_plausible(data, threads=4, load=3.5)
    assert str(info.value) == (
        "calibrate: measured memory.bandwidth_bytes_per_s = 8.2e+08 byte/s is below llmsim's plausibility floor of "
        "1e+09 byte/s (hardware/spec.py): the machine was likely loaded (4 threads, 1-minute load 3.5); rerun with "
        "--threads 1 on a quieter machine")
    with pytest.raises(llmsim.LlmsimError, match=r"1-minute load 3.5\); rerun on a quieter machine$"):
        check_plausible(data, threads=1, load=3.5)  # already one thread: not advised again
    # validation/cpu-calibrated.toml's 13.9 GB/s, and 9.9 GB/s measured by one thread of the same 2-core machine
    # under load (refused by the former 1e10 floor: calibrate --quick failed on a first try)
    for value in (1.39e10, 9.9e9):
        data["memory"]["bandwidth_bytes_per_s"]["value"] = value
        check_plausible(data, threads=1, load=None)
    # torch's bf16 matmul on a CPU without bf16 instructions (AVX2 only): 8.513e8 flop/s measured by one thread of an
    # AMD EPYC in session 41, a true figure the former 1e10 floor refused as "the machine was likely loaded"
    check_plausible({"matrix_flops_per_s": {"bf16": {"value": 8.513e8, "unit": "flop/s"}}}, threads=1, load=1.2)
    with pytest.raises(llmsim.LlmsimError, match=r"matrix_flops_per_s\.bf16 = 989 flop/s is below"):  # TFLOP/s typed
        check_plausible({"matrix_flops_per_s": {"bf16": {"value": 989, "unit": "flop/s"}}}, threads=1, load=None)


def test_option_spellings_and_their_defaults_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", "llama-3.1-8b", "--hardware", "h100-sxm", "--help")
    assert code == 0 and "--kv-cache {paged,concat}, --kv_cache" in out
    assert "default: flash" in out and "default: last" in out  # CostOptions' defaults, not the first choice
    paged = run(capsys, "simulate", "llama-3.1-8b", "--hardware", "h100-sxm", "--json")[1]
    for flag in ("--kv-cache", "--kv_cache"):
        code, concat, _ = run(capsys, "simulate", "llama-3.1-8b", "--hardware", "h100-sxm", flag, "concat", "--json")
        assert code == 0 and json.loads(concat)["tpot_s"] > json.loads(paged)["tpot_s"]  # the cache copy per step
    code, out, _ = run(capsys, "validate", "--help")
    assert code == 0 and "default: eager" in out


def test_validate_runs_a_real_model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("torch")
    results = tmp_path / "runs.jsonl"
    code, out, err = run(capsys, "validate", "gpt2", "--hardware", "cpu-generic", "--num-layers", "1",
                         "--seq-lens", "8", "--kv-lens", "8", "--repeats", "1", "--warmup", "0", "--threads", "1",
                         "--results", str(results))
    assert code == 0, err
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(r["phase"], r["status"], r["threads"]) for r in rows] == [("prefill", "ok", 1), ("decode", "ok", 1)]
    assert all(r["measured_s"] > 0 and r["predicted_s"] > 0 for r in rows) and "prefill" in out
    assert "| phase | cases | median abs error |" in out  # the medians under the cases


def test_calibrate_from_aiconfigurator_refuses_missing_arguments(capsys: pytest.CaptureFixture[str],
                                                                  tmp_path: Path) -> None:
    code = main(["calibrate", "--from", "aiconfigurator", "--out", str(tmp_path / "k")])
    assert code != 0
    assert "--from aiconfigurator needs --system" in capsys.readouterr().err
    # an empty --out (an unset shell variable) is the current folder to Path(""): refused, nothing written there
    assert main(["calibrate", "--from", "aiconfigurator", "--system", "l40s", "--engine", "vllm", "--out", ""]) == 2
    assert "--out is empty: give the folder to write the tables into" in capsys.readouterr().err


def test_engines_command_lists_the_engines(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["engines"]) == 0
    out = capsys.readouterr().out
    assert "torch-compile" in out and "h100-sxm" in out and "roofline" in out
    # each serving engine's frontend figure and its source (serve's frontend_s default)
    assert "Serving frontend per request (serve's frontend_s): 4 ms (tenstorrent/tt-inference-server issue #190" in out
    assert "frontend_s): none (no public figure)" in out


def test_simulate_with_an_engine_prints_its_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "llama-3.2-1b", "--hardware", "h100-sxm", "--engine", "trtllm", "--batch-size", "2",
                 "--prompt-len", "64", "--gen-len", "4", "--ops"]) == 0
    out = capsys.readouterr().out
    assert "engine      trtllm" in out and "engine_version 1.3.0rc20" in out and "trtllm gemm" in out


def test_a_missing_module_is_named_with_what_to_install() -> None:
    from llmsim.cli import _install_hint

    assert "llmsim[validate]" in _install_hint(ImportError("x", name="torch"))
    assert "llmsim[aiconfigurator]" in _install_hint(ImportError("x", name="pyarrow.parquet"))
    # a core dependency is not blamed on an extra
    assert _install_hint(ImportError("x", name="transformers")) == (
        "transformers is a core dependency: reinstall llmsim (pip install llmsim)")


def test_no_pytorch_advice_on_a_core_install() -> None:
    """The README's core install has no torch; transformers then advised "PyTorch was not found. Models won't be
    available" on every command. llmsim reads configs only, so the advice is silenced for its import (and the
    environment is left as it was). torch is hidden here as on that install (find_spec finds None)."""
    code = ("import sys, os; sys.modules['torch'] = None; import llmsim; llmsim.load_model('gpt2'); "
            "print(os.environ.get('TRANSFORMERS_NO_ADVISORY_WARNINGS'))")
    env = {k: v for k, v in os.environ.items() if k != "TRANSFORMERS_NO_ADVISORY_WARNINGS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**env, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert "PyTorch was not found" not in done.stderr and done.stdout.strip() == "None", done.stderr


@pytest.mark.parametrize("command", ["simulate", "serve", "sweep", "crossover", "limit", "roofline", "plot", "whatif"])
def test_every_prediction_command_takes_the_parallel_split(command: str) -> None:
    """The Python API takes tensor_parallel / expert_parallel everywhere; the CLI's sweep, crossover, limit,
    roofline and plot refused them (`unrecognized arguments`), so a 70B model could not be swept on its GPUs."""
    from llmsim.cli import _options, build_parser

    extra = {"serve": ["--concurrency", "4"], "whatif": ["--vary", "fusion=none,full"]}.get(command, [])
    args = build_parser().parse_args([command, "mixtral-8x7b", "--hardware", "h100-sxm", "--tensor-parallel", "4",
                                      "--expert-parallel", "2", *extra])
    assert {k: _options(args)[k] for k in ("tensor_parallel", "expert_parallel")} == {
        "tensor_parallel": 4, "expert_parallel": 2}


def test_crossover_on_the_cli_is_the_api_on_eight_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "crossover", "llama-3.1-70b", "--hardware", "h200", "--tensor-parallel", "8",
                         "--kv-len", "1024", "--json")
    assert code == 0, err
    expected = llmsim.find_crossover("llama-3.1-70b", "h200", vary="batch_size", kv_len=1024, tensor_parallel=8)
    assert json.loads(out)["value"] == expected.value != llmsim.find_crossover(
        "llama-3.1-70b", "h200", vary="batch_size", kv_len=1024).value


def test_every_dtype_of_the_api_on_the_cli() -> None:
    """The CLI's dtype choices were a hand-kept list without mxfp4 and nvfp4 (and no bf16/fp16 aliases)."""
    from llmsim.cli import build_parser
    from llmsim.dtypes import DTYPE_BYTES

    for name, expected in [*((n, n) for n in DTYPE_BYTES), ("bf16", "bfloat16"), ("FP16", "float16")]:
        args = build_parser().parse_args(["simulate", "llama-3.1-8b", "--hardware", "b200", "--weight-dtype", name])
        assert args.weight_dtype == expected


def test_a_warning_is_one_line() -> None:
    """Warnings print as `llmsim: warning: ...`, not Python's file:line and the source line under it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONWARNINGS", None)
    done = subprocess.run([sys.executable, "-m", "llmsim.cli", "simulate", "gpt2", "--hardware", "h100-sxm",
                           "--prompt-len", "8", "--gen-len", "2"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("llmsim: warning: model config (gpt2)"), done.stderr


def test_a_cpu_is_counted_per_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    """Results on a CPU said "per GPU" (throughput, memory, plans); a file without [interconnect] (cpu-generic:
    one socket) is not split by a plan's default search (it ended in "multi-GPU needs it")."""
    from llmsim.report.plot import memory_warning

    assert main(["simulate", "gpt2", "--hardware", "cpu-generic", "--gen-len", "4"]) == 0
    out = capsys.readouterr().out
    assert "GPU" not in out and " per CPU)" in out and " GiB per CPU of " in out
    gpu = llmsim.simulate("gpt2", "h100-sxm", gen_len=4)
    assert "per GPU)" in str(gpu) and gpu.device_type == "gpu"
    # KV cache 256 x 8193 tokens x 327,680 B (80 layers x 8 KV heads x 128 x 2 x 2 B) = 687 GB > 512 GiB
    huge = memory_warning(llmsim.simulate("llama-3.1-70b", "cpu-generic", batch_size=256, prompt_len=8192, gen_len=2))
    assert huge is not None and " GiB needed per CPU of 512.0 GiB" in huge
    plan = llmsim.plan("gpt2", "cpu-generic", prompt_len=32, gen_len=4, batch_sizes=[1, 8])
    assert {(c.tensor_parallel, c.pipeline_parallel) for c in plan.candidates} == {(1, 1)}
    assert "GPU" not in str(plan) and "tokens/s per CPU" in plan.reason and "tok/s/CPU" in str(plan)
    serving = llmsim.plan_serving("gpt2", "cpu-generic", request_rate=2, tpot_slo_s=0.05, prompt_len=32, gen_len=4,
                                  num_requests=20, max_num_seqs=[8])
    assert [c.tensor_parallel for c in serving.candidates] == [1]
    assert "GPU" not in str(serving) and "1 CPUs" in serving.reason
    with pytest.raises(llmsim.errors.OptionError, match=r"the KV cache holds \d+ tokens per CPU after the weights"):
        llmsim.serve("llama-3.1-8b", "cpu-generic", concurrency=1, num_requests=1, prompt_len=100000,
                     gpu_memory_utilization=0.04)


def test_models_lists_without_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    """`llmsim models` warned three times that configs state no dtype (gpt2, gpt-oss, MiniMax) before its table:
    a listing marks the assumed dtype in its column instead."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an AssumptionWarning escaping would fail here
        assert main(["models"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert "bfloat16 (assumed)" in rows["gpt2"] and "(assumed)" not in rows["llama-3.1-8b"]
    assert " float32 " in rows["gemma-2-9b"]  # stated float32 in its config: shown as stated


def test_serve_on_the_cli_takes_trtllm_batch_waiting(capsys: pytest.CaptureFixture[str]) -> None:
    """`--batch-wait-timeout-iters` / `--batch-wait-max-tokens-ratio` reach serve() (the API's numbers, JSON), and
    the disaggregated form refuses them in one line."""
    load = ["--engine", "trtllm", "--request-rate", "2", "--arrival", "constant", "--prompt-len", "512",
            "--gen-len", "200", "--num-requests", "2", "--json"]
    code, out, err = run(capsys, "serve", "llama-3.1-8b", "--hardware", "h100-sxm", *load,
                         "--batch-wait-timeout-iters", "5", "--batch-wait-max-tokens-ratio", "0.9")
    assert code == 0, err
    expected = llmsim.serve("llama-3.1-8b", "h100-sxm", engine="trtllm", request_rate=2.0, arrival="constant",
                            prompt_len=512, gen_len=200, num_requests=2, batch_wait_timeout_iters=5,
                            batch_wait_max_tokens_ratio=0.9)
    assert json.loads(out)["ttft_s"]["mean"] == pytest.approx(expected.ttft_s.mean, rel=1e-12)
    code, out, err = run(capsys, "serve", "llama-3.1-8b", "--hardware", "h100-sxm", *load, "--prefill-pool", "1x1",
                         "--decode-pool", "1x1", "--batch-wait-timeout-iters", "5")
    assert code != 0 and "not modelled for disaggregated serving" in err and "Traceback" not in err


def test_serve_on_the_cli_prints_the_goodput_under_its_objectives(capsys: pytest.CaptureFixture[str]) -> None:
    """--ttft-slo-s / --tpot-slo-s / --e2e-slo-s: the goodput (ServingResult.goodput with those objectives) in the
    table and in --json, aggregated and disaggregated; a bad objective is one line naming its flag."""
    load = ["llama-3.1-8b", "--hardware", "h100-sxm", "--request-rate", "16", "--num-requests", "60",
            "--prompt-len", "2048", "--gen-len", "32"]
    expected = llmsim.serve("llama-3.1-8b", "h100-sxm", request_rate=16.0, num_requests=60, prompt_len=2048, gen_len=32)
    code, out, err = run(capsys, "serve", *load, "--ttft-slo-s", "0.15", "--tpot-slo-s", "0.03", "--json")
    assert code == 0, err
    assert json.loads(out)["goodput"] == {"objectives": {"ttft_s": 0.15, "tpot_s": 0.03},
                                          "requests_per_s": expected.goodput(ttft_s=0.15, tpot_s=0.03)}
    code, out, err = run(capsys, "serve", *load, "--ttft-slo-s", "0.15")
    assert code == 0 and f"goodput {expected.goodput(ttft_s=0.15):.2f} req/s within TTFT <= 150 ms" in out, err
    code, out, err = run(capsys, "serve", *load, "--prefill-pool", "1x1", "--decode-pool", "1x1", "--e2e-slo-s", "9")
    assert code == 0 and "within E2E <= 9000 ms (100.0% of the requests)" in out, err
    code, _, err = run(capsys, "serve", *load, "--tpot-slo-s", "0")
    assert code != 0 and "--tpot-slo-s=0 must be a positive number of seconds" in err and "Traceback" not in err


def test_disaggregated_serve_on_the_cli_refuses_what_it_does_not_model_and_plots(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """serve_disaggregated takes no speculation, shared prefixes, ramp or aggregated batch limits: each flag is
    refused in one line naming it (they were silently dropped before session 33), and --plot draws each engine
    instance's occupancy."""
    pools = ["--concurrency", "4", "--num-requests", "8", "--prompt-len", "256", "--gen-len", "16",
             "--prefill-pool", "1x1", "--decode-pool", "1x1"]
    for flag in (["--speculative", "ngram:4:0.7"], ["--shared-prefix-len", "64"], ["--ramp-s", "5"],
                 ["--max-num-seqs", "2"], ["--no-prefix-caching"], ["--no-mixed-batches"], ["--reserve-output"]):
        code, _, err = run(capsys, "serve", "llama-3.1-8b", "--hardware", "h100-sxm", *pools, *flag)
        assert code != 0 and flag[0] in err and "not modelled for disaggregated" in err and "Traceback" not in err
    png = tmp_path / "disagg.png"
    code, out, err = run(capsys, "serve", "llama-3.1-8b", "--hardware", "h100-sxm", *pools, "--plot", str(png))
    assert code == 0 and png.stat().st_size > 10_000 and "TTFT" in out, err


def test_serve_on_the_cli_takes_trtllm_attention_dp_balance(capsys: pytest.CaptureFixture[str]) -> None:
    """`--attention-dp-balance` and its two counters reach serve() (the API's numbers, JSON); another engine is
    refused in one line."""
    load = ["--tensor-parallel", "4", "--expert-parallel", "4", "--attention-data-parallel", "4", "--concurrency",
            "16", "--prompt-len", "uniform:200:256", "--gen-len", "uniform:40:64", "--num-requests", "64", "--json"]
    code, out, err = run(capsys, "serve", "qwen3-30b-a3b", "--hardware", "h100-sxm", "--engine", "trtllm", *load,
                         "--attention-dp-balance", "--attention-dp-timeout-iters", "60",
                         "--attention-dp-batching-wait-iters", "0")
    assert code == 0, err
    expected = llmsim.serve("qwen3-30b-a3b", "h100-sxm", engine="trtllm", tensor_parallel=4, expert_parallel=4,
                            attention_data_parallel=4, concurrency=16, prompt_len="uniform:200:256",
                            gen_len="uniform:40:64", num_requests=64, attention_dp_balance=True,
                            attention_dp_timeout_iters=60, attention_dp_batching_wait_iters=0)
    assert json.loads(out)["ttft_s"]["mean"] == pytest.approx(expected.ttft_s.mean, rel=1e-12)
    code, out, err = run(capsys, "serve", "qwen3-30b-a3b", "--hardware", "h100-sxm", "--engine", "vllm", *load,
                         "--attention-dp-balance")
    assert code != 0 and "attention_dp_balance is TensorRT-LLM's" in err and "Traceback" not in err


def test_listings_take_names_files_and_json(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    """`llmsim hardware`, `models` and `engines` had no --json, and `hardware` could not show a user's .toml."""
    from llmsim.shipped import hardware_dir

    mine = tmp_path / "mine.toml"
    mine.write_text((hardware_dir() / "l4.toml").read_text().replace('name = "l4"', 'name = "my-l4"'))
    code, out, _ = run(capsys, "hardware", "h100-sxm", str(mine))
    assert code == 0 and out.splitlines()[1].startswith("h100-sxm") and out.splitlines()[2].startswith("my-l4")
    code, out, _ = run(capsys, "hardware", "--json", "h100-sxm")
    [h100] = json.loads(out)
    assert h100["memory"]["bandwidth_bytes_per_s"]["value"] == 3.35e12  # with its unit and source
    assert "source" in h100["memory"]["bandwidth_bytes_per_s"]
    code, out, _ = run(capsys, "models", "--json", "llama-3.1-8b")
    [model] = json.loads(out)
    assert model["name"] == "llama-3.1-8b" and model["parameters"] == 8030261248
    code, out, _ = run(capsys, "engines", "--json")
    engines = {e["engine"]: e for e in json.loads(out)}
    assert set(engines) == {"vllm", "sglang", "trtllm", "torch-compile", "transformers", "roofline"}
    assert engines["vllm"]["frontend_s"] == 0.004 and "h100-sxm" in engines["vllm"]["devices_with_tables"]
    # the per-step host and uncaptured-prefill figures as numbers, not only inside the notes (session 46's audit):
    # vLLM 0.4 ms per step, 44.5 us per kernel, graphs up to 512 tokens (engines/catalog.py)
    assert (engines["vllm"]["step_host_s"], engines["vllm"]["prefill_dispatch_s"],
            engines["vllm"]["prefill_graph_tokens"]) == (0.4e-3, 44.5e-6, 512)
    assert engines["sglang"]["step_host_s"] == 0.0 and engines["trtllm"]["step_host_s"] == 0.58e-3
    code, _, err = run(capsys, "hardware", "nope")
    assert code == 2 and "hardware 'nope' is not a shipped name" in err


def test_a_plan_searches_only_the_gpus_a_file_links() -> None:
    """rtx-4090.toml says gpus_per_node 1 and names no link between nodes; l4.toml gpus_per_node 8. A plan's
    default search (TP 1..16, PP 1..8) ended in "more GPUs than its gpus_per_node=1 need a link between nodes";
    it now stays within what the file links, and a split asked for by name past it is still refused."""
    from llmsim.errors import HardwareError

    assert llmsim.load_hardware("rtx-4090").linked_gpus == 1 and llmsim.load_hardware("l4").linked_gpus == 8
    assert llmsim.load_hardware("h100-sxm").linked_gpus == math.inf  # an inter-node link: no bound
    one = llmsim.plan("llama-3.1-8b", "rtx-4090", tpot_slo_s=0.05, batch_sizes=[1, 16])
    assert {(c.tensor_parallel, c.pipeline_parallel) for c in one.candidates} == {(1, 1)}
    box = llmsim.plan("llama-3.1-8b", "l4", tpot_slo_s=0.05, batch_sizes=[1, 16])
    assert max(c.tensor_parallel * c.pipeline_parallel for c in box.candidates) == 8
    serving = llmsim.plan_serving("llama-3.1-8b", "rtx-4090", request_rate=1.0, tpot_slo_s=0.05, prompt_len=256,
                                  gen_len=16, num_requests=20, max_num_seqs=[8])
    assert [c.tensor_parallel for c in serving.candidates] == [1]
    with pytest.raises(HardwareError, match="more GPUs than its gpus_per_node=1 need a link between nodes"):
        llmsim.plan("llama-3.1-8b", "rtx-4090", tpot_slo_s=0.05, batch_sizes=[1], tensor_parallel=[2])
