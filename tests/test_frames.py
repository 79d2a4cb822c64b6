"""Results a planner wants as DataFrames (ops, layers, sweeps, plans, what-ifs) work after the README's
install: pandas is a core dependency, and every third-party module llmsim imports is declared."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest
import tomllib

import llmsim

ROOT = Path(llmsim.__file__).resolve().parents[1]
GPU = "h100-sxm"
# import name -> distribution name, where they differ
DISTRIBUTION = {"aiconfigurator_core": "aiconfigurator-core", "ncu_report": "ncu-report", "yaml": "pyyaml"}


def _imported_modules() -> set[str]:
    """Top-level third-party modules imported anywhere in llmsim (at run time or lazily; not TYPE_CHECKING)."""
    found = set()
    for path in (ROOT / "llmsim").rglob("*.py"):
        tree = ast.parse(path.read_text())
        typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                       and getattr(node.test, "id", "") == "TYPE_CHECKING" for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "llmsim"}


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~ \[;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_every_imported_module_is_a_declared_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = _names(project["dependencies"])
    extras = set().union(*(_names(v) for v in project["optional-dependencies"].values()))
    assert "pandas" in core  # to_pandas() works after `pip install .` (the README's install)
    for module in _imported_modules():
        assert DISTRIBUTION.get(module, module).lower() in core | extras, module


def test_planner_results_as_data_frames() -> None:
    r = llmsim.simulate("llama-3.2-1b", GPU, batch_size=4, prompt_len=256, gen_len=8)
    ops = r.ops_to_pandas()
    assert set(ops["phase"]) == {"prefill", "decode"} and len(ops) == len(r.prefill.ops) + len(r.decode.ops)
    assert ops[ops.phase == "decode"]["time_s"].sum() == pytest.approx(r.decode.time_s, rel=1e-12)
    assert len(r.ops_to_pandas("prefill")) == len(r.prefill.ops)
    assert len(r.layer_table().to_pandas()) == 14  # 10 ops of the layer, 4 outside (with vLLM's engine.step)
    sweep = llmsim.sweep("llama-3.2-1b", GPU, batch_size=[1, 8], prompt_len=256, gen_len=8)
    assert len(sweep.to_pandas()) == 2
    plan = llmsim.plan("llama-3.2-1b", GPU, prompt_len=256, gen_len=8, max_gpus=2, batch_sizes=[1, 8])
    frame = plan.to_pandas()
    assert len(frame) == len(plan.candidates) and frame["best"].sum() == (plan.best is not None)



def test_serving_plan_as_a_data_frame() -> None:
    from llmsim.serving.plan import ServingCandidate

    fields = dict(max_num_seqs=64, ttft_p_s=0.1, tpot_p_s=0.01, usd_per_hour=None)
    one = ServingCandidate(tensor_parallel=1, max_rate_per_replica=2.0, replicas=5, gpus=5, **fields)
    two = ServingCandidate(tensor_parallel=2, max_rate_per_replica=5.0, replicas=2, gpus=4, **fields)
    plan = llmsim.ServingPlan(model="m", hardware=GPU, request_rate=10.0, percentile=99, best=two,
                              candidates=[one, two], pareto=[two], reason="fewest GPUs")
    frame = plan.to_pandas()
    assert list(frame["best"]) == [False, True] and list(frame["gpus"]) == [5, 4]
