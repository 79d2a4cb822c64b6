"""The fast paths against straightforward references.

- Graph templates (formulas recorded once per model, phase and options, replayed per workload) against
  a fresh build by the graph builder: the same ops, formula values (types, dtypes, shapes) and texts.
- Phase totals (every op of a phase evaluated at once along an op axis; decode summed in closed form)
  against op-by-op evaluation with Roofline.cost and Roofline.time and, for decode, step-by-step sums.
- Sweeps against the same totals computed one workload at a time.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import llmsim
from llmsim.cost.builder import GraphBuilder
from llmsim.cost.graph import graph_template
from llmsim.cost.op import Op
from llmsim.cost.workload import CostOptions
from llmsim.errors import OptionError
from llmsim.hardware.spec import hardware_from_dict
from llmsim.timing.phases import PARTS, SUMS, decode_totals, prefill_totals
from llmsim.timing.roofline import ExecutionOptions, Roofline

from .conftest import TEST_GPU
from .tiny_configs import TINY_CONFIGS

CPU_CALIBRATED = Path(__file__).resolve().parent.parent / "validation" / "cpu-calibrated.toml"
TINY = ("llama-gqa", "llama-mha-bias", "mistral-sliding", "gemma3_text", "gpt2", "falcon-mqa-parallel", "mixtral",
        "qwen3_moe", "deepseek_v3", "deepseek_v3-no-qlora", "llama4_text", "qwen3_next", "olmo2", "phi")
SHIPPED = ("deepseek-v3", "gpt-oss-20b", "gemma-3-27b", "llama-3.1-8b")
OPTIONS: tuple[dict[str, Any], ...] = (
    {},
    {"tensor_parallel": 2},
    {"tensor_parallel": 2, "expert_parallel": 2},
    {"tensor_parallel": 4, "expert_parallel": 2},
    {"fusion": "eager", "attention": "math", "kv_cache": "concat"},
    {"fusion": "full", "logits": "all", "mla": "expand"},
    {"fusion": "none", "weight_dtype": "int4", "kv_dtype": "fp8"},
)
# (B, S, L) as the phases pass them: one workload, a decode pair along a trailing axis (with an array
# batch given the trailing axis too), and an open sweep grid
PREFILL_WORKLOADS = ((3, 17, 0), (1, 1, 0), (np.array([[1], [6]]), np.array([5, 40]), 0))
DECODE_WORKLOADS = ((5, 1, 130.0), (7, 1, np.array([9.0, 10.0])),
                    (np.array([1, 8])[:, None, None], 1, np.array([[3.0, 4.0], [200.0, 201.0]])))


def _spec(name: str) -> llmsim.ModelSpec:
    return llmsim.load_model(TINY_CONFIGS.get(name, name))


def _options(spec: llmsim.ModelSpec, options: dict[str, Any]) -> CostOptions:
    moe = any(type(g.layer.mlp).__name__ == "MoESpec" for g in spec.layer_groups)
    if "expert_parallel" in options and not moe:
        pytest.skip("expert parallelism needs experts")
    try:
        cost = CostOptions.make(**options)
        GraphBuilder(spec, "prefill", 1, 1, 0, cost)  # refuses a split the model does not divide by
    except OptionError as exc:
        pytest.skip(str(exc))
    return cost


def _assert_same_value(x: Any, y: Any) -> None:
    assert type(x) is type(y)
    assert np.shape(x) == np.shape(y) and np.asarray(x).dtype == np.asarray(y).dtype
    assert np.array_equal(x, y)


def _assert_same_ops(replayed: list[Op], built: list[Op], texts: bool) -> None:
    assert [op.name for op in replayed] == [op.name for op in built]
    for a, b in zip(replayed, built):
        for f in fields(Op):
            if f.name != "formulas":
                assert getattr(a, f.name) == getattr(b, f.name), (a.name, f.name)
        assert list(a.formulas) == list(b.formulas), a.name
        for quantity, expr in a.formulas.items():
            _assert_same_value(expr.value, b.formulas[quantity].value)
            if texts:
                assert expr.symbolic() == b.formulas[quantity].symbolic()
                assert expr.substituted() == b.formulas[quantity].substituted()


@pytest.mark.parametrize("name", TINY + SHIPPED)
@pytest.mark.parametrize("options", OPTIONS)
def test_template_replays_what_the_builder_builds(name: str, options: dict[str, Any]) -> None:
    spec = _spec(name)
    cost = _options(spec, options)
    for phase, workloads in (("prefill", PREFILL_WORKLOADS), ("decode", DECODE_WORKLOADS)):
        template = graph_template(spec, phase, cost)
        assert template is not None, f"{name} {phase}: no template"
        for B, S, L in workloads:
            built = GraphBuilder(spec, phase, B, S, L, cost).build()
            _assert_same_ops(template.ops_at(B, S, L), built, texts=np.ndim(B) + np.ndim(S) + np.ndim(L) == 0)
            for _ in range(2):  # again: values of called ops (MoE experts) remembered per argument values
                values = template.values_at(B, S, L)
                assert set(values) == {quantity for op in built for quantity in op.formulas}
                for quantity, column in values.items():
                    for op, value in zip(built, column, strict=True):
                        if quantity in op.formulas:
                            _assert_same_value(value, op.formulas[quantity].value)
                        else:
                            assert value is None


# ---- phase totals ------------------------------------------------------------------------------------
def _devices() -> list[tuple[str, Any]]:
    return [("h100-sxm", llmsim.load_hardware("h100-sxm")), ("test-gpu", hardware_from_dict(TEST_GPU)),
            ("cpu-calibrated", llmsim.load_hardware(CPU_CALIBRATED))]


EXECUTIONS = ({}, {"overhead": "eager", "overlap": "sum"}, {"overhead": "eager"}, {"efficiency": "peak"})


def _one_run(roofline: Roofline, op: Op, rows: Any = None, size_bytes: Any = None) -> dict[str, float]:
    """One run of one op, the plain way: Roofline.cost and Roofline.time on its scalar quantities."""
    comm_s = roofline.collective_s(op.collective, op.comm_bytes, op.group_size) if op.collective else 0.0
    t = roofline.time(roofline.cost(op.matmul_flops, op.vector_flops, op.bytes, op.precision, op.launches, comm_s,
                                    op.kind, op.matmul_rows if rows is None else rows, size_bytes,
                                    cols=op.matmul_cols, layout=op.weight_layout, depth=op.matmul_depth))
    parts = (t.time_s, t.compute_part_s, t.memory_part_s, t.overhead_part_s, t.communication_part_s)
    return {**dict(zip(PARTS, map(float, parts))),
            **{key: float(value) for key, value in zip(SUMS, (op.matmul_flops, op.vector_flops, op.bytes))}}


def _cases() -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """Tiny models on every device with each execution, under options in turn; two shipped models under more."""
    names = ("llama-gqa", "gemma3_text", "deepseek_v3", "mixtral", "gpt2")  # gpt2: W[K, N] weights
    chosen = (OPTIONS[0], OPTIONS[1], OPTIONS[4], OPTIONS[5])
    cases = [(name, device, chosen[(i + j + k) % 4], execution) for i, name in enumerate(names)
             for j, (device, _) in enumerate(_devices()) for k, execution in enumerate(EXECUTIONS)]
    # a concatenated cache (gemma3_text: a sliding window filling mid-decode)
    cases += [(name, device, OPTIONS[3], EXECUTIONS[2]) for name in ("llama-gqa", "deepseek_v3", "gemma3_text")
              for device, _ in _devices()]
    cases += [(name, "h100-sxm", options, EXECUTIONS[0]) for name in ("gpt-oss-20b", "deepseek-v3")
              for options in (OPTIONS[2], OPTIONS[4])]
    # real widths on the calibrated CPU: matmul tables by output width N, W[K, N] experts (gpt-oss)
    cases += [(name, "cpu-calibrated", OPTIONS[0], EXECUTIONS[2]) for name in ("gpt-oss-20b", "llama-3.1-8b")]
    return cases


@pytest.mark.parametrize(("name", "device", "options", "execution"), _cases())
def test_phase_totals_equal_op_by_op_and_step_by_step(name: str, device: str, options: dict[str, Any],
                                                      execution: dict[str, Any]) -> None:
    spec = _spec(name)
    cost = _options(spec, options)
    hardware = dict(_devices())[device]
    if cost.tensor_parallel > 1 and "gpus_per_node" not in hardware.interconnect:
        pytest.skip("no interconnect")
    roofline = Roofline(hardware, ExecutionOptions.make(**execution))
    batch, prompt, steps = 3, 5 if "gemma" in name else 40, 12  # gemma3_text: its window of 8 fills mid-decode

    # prefill: every op exactly as one Roofline.cost / Roofline.time evaluation of its own, times its count
    prefill = prefill_totals(spec, roofline, cost, batch, prompt)
    ops = GraphBuilder(spec, "prefill", batch, prompt, 0, cost).build()
    assert list(prefill.names) == [op.name for op in ops]
    for i, op in enumerate(ops):
        run = _one_run(roofline, op)
        for key in PARTS + SUMS:
            assert prefill.per_op[key][i] == op.count * run[key], (op.name, key)

    # decode: the closed form against every step evaluated and summed (rows and element-wise sizes at the
    # first step: the documented approximation of the closed form)
    decode = decode_totals(spec, roofline, cost, batch, prompt, steps)
    first = GraphBuilder(spec, "decode", batch, 1, prompt, cost).build()
    runs = [[_one_run(roofline, op, op0.matmul_rows, op0.bytes) for op, op0 in
             zip(GraphBuilder(spec, "decode", batch, 1, prompt + i, cost).build(), first)] for i in range(steps)]
    assert list(decode.names) == [op.name for op in first]
    for i, op in enumerate(first):
        by_step = {key: [step[i][key] for step in runs] for key in PARTS + SUMS}
        steady = all(len(set(values)) == 1 for values in by_step.values())
        for key, values in by_step.items():
            expected = op.count * sum(values)
            assert decode.per_op[key][i] == pytest.approx(expected, rel=1e-9, abs=1e-300), (op.name, key)
            if steady:  # the same every step: exactly steps runs
                assert decode.per_op[key][i] == op.count * steps * values[0], (op.name, key)


@pytest.mark.parametrize("name", ["llama-gqa", "gemma3_text", "deepseek_v3", "gpt-oss-20b"])
@pytest.mark.parametrize("device", ["h100-sxm", "cpu-calibrated"])
def test_sweep_totals_equal_one_workload_at_a_time(name: str, device: str) -> None:
    spec = _spec(name)
    cost = CostOptions.make(kv_cache="concat")
    roofline = Roofline(dict(_devices())[device], ExecutionOptions.make(overhead="eager"))
    B = np.array([1, 4, 9]).reshape(3, 1, 1)
    P = np.array([2, 7, 30]).reshape(1, 3, 1)
    steps = np.array([0, 1, 11]).reshape(1, 1, 3)
    prefill, decode = prefill_totals(spec, roofline, cost, B, P), decode_totals(spec, roofline, cost, B, P, steps)
    for b, p, s in np.ndindex(3, 3, 3):
        one_prefill = prefill_totals(spec, roofline, cost, int(B[b, 0, 0]), int(P[0, p, 0]))
        one_decode = decode_totals(spec, roofline, cost, int(B[b, 0, 0]), int(P[0, p, 0]), int(steps[0, 0, s]))
        for totals, one in ((prefill, one_prefill), (decode, one_decode)):
            for key in PARTS + SUMS:
                grid = [np.broadcast_to(v, (3, 3, 3))[b, p, s] for v in totals.per_op[key]]
                np.testing.assert_allclose(grid, one.per_op[key], rtol=1e-12, atol=0, err_msg=key)


def test_phase_ops_are_made_on_demand_and_match_the_builder() -> None:
    spec = llmsim.load_model("llama-3.1-8b")
    cost = CostOptions.make()
    roofline = Roofline(llmsim.load_hardware("h100-sxm"), ExecutionOptions.make())
    decode = decode_totals(spec, roofline, cost, 4, 100, 10)
    _assert_same_ops(decode.ops, GraphBuilder(spec, "decode", 4, 1, np.array([100.0, 101.0]), cost).build(),
                     texts=False)
    assert [op.name for op in decode.ops] == list(decode.names)


def test_concatenated_cache_past_a_window_filling_mid_decode() -> None:
    """kv_append carries the window with kv_cache="concat": the closed form stops its copy growing
    where the window fills mid-decode, as the step-by-step sum does."""
    spec = _spec("gemma3_text")  # window 8
    cost = CostOptions.make(kv_cache="concat")
    roofline = Roofline(llmsim.load_hardware("h100-sxm"), ExecutionOptions.make())
    closed = decode_totals(spec, roofline, cost, 3, 5, 12)
    by_step = [decode_totals(spec, roofline, cost, 3, 5 + i, 1) for i in range(12)]
    assert closed.total("bytes") == pytest.approx(sum(t.total("bytes") for t in by_step), rel=1e-9)
