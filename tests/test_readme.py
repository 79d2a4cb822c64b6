"""Every command and Python example in the README runs, so the README cannot drift from the code.

The set-up commands' installs are covered by test_cli's wheel test; their `llmsim ...` part runs here.
Commands that need a CUDA device (`--device cuda`) are checked to parse only.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from llmsim.cli import build_parser, main

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def _llmsim_commands() -> list[str]:
    commands = []
    for block in _blocks("bash"):
        for line in block.splitlines():
            if "llmsim " in line and not line.startswith("pip"):
                commands.append(line[line.index("llmsim ") :].strip())
    return commands


def test_readme_has_the_two_setup_commands() -> None:
    setup = README.split("## Set-up")[1].split("##")[0]
    assert len(_blocks_in(setup)) == 2


def _blocks_in(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("command", _llmsim_commands())
def test_readme_command_runs(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    argv = shlex.split(command, comments=True)[1:]
    if "cuda" in argv:
        build_parser().parse_args(argv)  # no GPU here: the command must at least parse
        return
    if "aiconfigurator" in argv or "my-tables/" in argv:
        # the importer needs aiconfigurator-core (an extra; tests/test_kernel_tables.py runs it on a parquet file
        # the test writes), and the next command reads what it wrote: both must at least parse
        build_parser().parse_args(argv)
        return
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 0, capsys.readouterr().err


@pytest.mark.parametrize("block", _blocks("python"))
def test_readme_python_runs(block: str) -> None:
    exec(compile(block, "README.md", "exec"), {})


@pytest.mark.slow
@pytest.mark.parametrize(("device", "name"), [("h100-sxm", "H100 SXM"), ("h200", "H200")])
def test_readme_plan_table_is_what_plan_answers(device: str, name: str) -> None:
    """The capacity-planning table's numbers are llmsim.plan's, so the table cannot go stale (it had: 264.9
    tokens/s per GPU written before the measured kernel tables, 242.9 after)."""
    import llmsim

    row = re.search(rf"^\| {name} \| TP (\d+) \| (\d+) \| ([\d.]+) \| (\d+) \|$", README, flags=re.M)
    assert row, f"no README plan row for {name}"
    best = llmsim.plan("llama-3.1-70b", device, prompt_len=2048, gen_len=256, tpot_slo_s=0.03, ttft_slo_s=5,
                       target_tokens_per_s=10000, max_gpus=16).best
    assert best is not None and best.pipeline_parallel == 1
    assert (best.tensor_parallel, best.batch_size, f"{best.tokens_per_s_per_gpu:.1f}", best.gpus_needed) == (
        int(row[1]), int(row[2]), row[3], int(row[4]))
