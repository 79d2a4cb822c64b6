"""simulate()'s scalar fast path (analysis.fast_simulate, timing.fast_path) against its reference path.

The reference is simulate() with the fast path switched off: the numpy evaluation along an op axis that
tests/test_fast_paths.py checks against op-by-op and step-by-step sums. Every field of the two results
must agree: strings, ints and bools equal, floats within 1e-12 relative (only a measured table's
interpolation sums its cell corners in another order), over models, devices, engines (measured tables and
the roofline), options and workloads, including the edges (one token, one decode step, windows filling).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

import llmsim
from llmsim.analysis import fast_simulate as fast_module
from llmsim.analysis import simulate as simulate_module

RELATIVE = 1e-12
WORKLOADS = ((8, 2048, 1024), (1, 1, 1), (1, 1, 2), (3, 100, 2), (64, 4000, 97), (2, 9000, 300), (257, 33, 5))
# (model, device, options): engines with measured tables (vllm, sglang's stand-in, trtllm), the transformers
# engine's eager dispatch, the roofline at peak, a CPU's shape curves, tensor parallel collectives
CASES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("llama-3.1-70b", "h100-sxm", {}),
    ("llama-3.1-70b", "h100-sxm", {"engine": "roofline"}),
    ("llama-3.1-70b", "h100-sxm", {"tensor_parallel": 4}),
    ("llama-3.1-70b", "h100-sxm", {"engine": "sglang", "tensor_parallel": 8}),
    ("llama-3.1-8b", "a100-80gb-sxm", {"engine": "trtllm"}),
    ("llama-3.1-8b", "h100-sxm", {"engine": "transformers"}),
    ("llama-3.1-8b", "h100-sxm", {"overhead": "eager", "overlap": "sum"}),
    ("llama-3.1-8b", "h100-sxm", {"efficiency": "achievable", "tables": None}),
    ("llama-3.1-8b", "h100-sxm", {"weight_dtype": "fp8", "activation_dtype": "fp8", "kv_dtype": "fp8"}),
    ("llama-3.2-1b", "cpu-generic", {}),
    ("mistral-7b", "h100-sxm", {}),  # sliding window
    ("gemma-3-27b", "h100-sxm", {"fusion": "none", "attention": "math", "kv_cache": "concat"}),
    ("qwen3-8b", "l40s", {"logits": "all"}),
    ("phi-4", "b200", {"tensor_parallel": 2}),
    # MoE (ops made by calling their formula: values_at itself), MLA, hybrid linear attention
    ("deepseek-v3", "h100-sxm", {"tensor_parallel": 8}),
    ("deepseek-v3", "h200", {"tensor_parallel": 8, "expert_parallel": 8, "engine": "sglang"}),
    ("qwen3-30b-a3b", "h100-sxm", {}),
    ("gpt-oss-20b", "a100-80gb-sxm", {"engine": "trtllm"}),
    ("qwen3-next-80b-a3b", "h100-sxm", {"tensor_parallel": 2}),
)


def _without_fast_path(module: Any, name: str, run: Any) -> Any:
    """run() with module.<name> (the fast path's entry) answering None: the reference path."""
    original = getattr(module, name)
    setattr(module, name, lambda *a, **k: None)
    try:
        return run()
    finally:
        setattr(module, name, original)


def reference(*args: Any, **kwargs: Any) -> llmsim.SimulationResult:
    return _without_fast_path(simulate_module, "fast_simulate", lambda: llmsim.simulate(*args, **kwargs))


def assert_same(fast: Any, ref: Any, where: str = "result") -> None:
    """Field by field: floats within RELATIVE, everything else equal (and of the same type)."""
    if hasattr(type(ref), "model_fields"):
        assert type(fast) is type(ref), where
        for name in type(ref).model_fields:
            assert_same(getattr(fast, name), getattr(ref, name), f"{where}.{name}")
    elif isinstance(ref, dict):
        assert list(fast) == list(ref), where
        for key in ref:
            assert_same(fast[key], ref[key], f"{where}[{key!r}]")
    elif isinstance(ref, list):
        assert len(fast) == len(ref), where
        for i, (a, b) in enumerate(zip(fast, ref)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(ref, float):
        assert type(fast) is float, where
        assert fast == pytest.approx(ref, rel=RELATIVE, abs=0.0), where
    else:
        assert type(fast) is type(ref) and fast == ref, where


@pytest.mark.parametrize(("model", "device", "options"), CASES, ids=lambda c: str(c))
def test_fast_simulate_equals_the_reference(model: str, device: str, options: dict[str, Any]) -> None:
    assert fast_module._prepared(model, device, options) is not None  # the fast path covers these
    for batch, prompt, gen in WORKLOADS:
        fast = llmsim.simulate(model, device, batch_size=batch, prompt_len=prompt, gen_len=gen, **options)
        assert_same(fast, reference(model, device, batch_size=batch, prompt_len=prompt, gen_len=gen, **options))
    assert type(fast).model_validate(fast.model_dump()) == fast  # what it holds validates as it is


def test_data_parallel_and_explicit_single_stage_take_the_fast_path() -> None:
    kwargs = dict(batch_size=4, prompt_len=300, gen_len=20, data_parallel=3, pipeline_parallel=1, num_microbatches=1)
    fast = fast_module.fast_simulate("llama-3.1-8b", "h100-sxm", 4, 300, 20, 1, 1, 3, {})
    assert fast is not None
    assert_same(fast, reference("llama-3.1-8b", "h100-sxm", **kwargs))


@pytest.mark.parametrize("kwargs", [
    dict(batch_size=0), dict(prompt_len=200_000), dict(gen_len=1.5), dict(batch_size=[1, 2]),
    dict(pipeline_parallel=2), dict(num_microbatches=2, batch_size=4), dict(data_parallel=0),
    dict(engine="nope"), dict(fusion="sometimes"),
])
def test_what_the_fast_path_does_not_take_goes_to_the_reference(kwargs: dict[str, Any]) -> None:
    """Invalid inputs and multi-stage runs: the reference path answers (its errors, its pipelines)."""
    base = dict(batch_size=2, prompt_len=64, gen_len=8)
    base.update(kwargs)
    try:
        expected: Any = reference("llama-3.1-8b", "h100-sxm", **base)
    except llmsim.LlmsimError as exc:
        with pytest.raises(type(exc)) as raised:
            llmsim.simulate("llama-3.1-8b", "h100-sxm", **base)
        assert str(raised.value) == str(exc)
        return
    assert_same(llmsim.simulate("llama-3.1-8b", "h100-sxm", **base), expected)


def test_a_changed_config_file_or_dict_is_not_served_stale(tmp_path: Any) -> None:
    config = json.loads((llmsim.shipped.model_configs_dir() / "llama-3.2-1b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    before = llmsim.simulate(str(path), "h100-sxm", batch_size=2, prompt_len=64, gen_len=8)
    changed = dict(config, num_hidden_layers=config["num_hidden_layers"] // 2)
    path.write_text(json.dumps(changed) + " " * 7)  # another size: seen even within the clock's resolution
    os.utime(path, ns=(0, 10**9))
    after = llmsim.simulate(str(path), "h100-sxm", batch_size=2, prompt_len=64, gen_len=8)
    assert after.memory.weights_bytes < before.memory.weights_bytes
    assert_same(after, reference(str(path), "h100-sxm", batch_size=2, prompt_len=64, gen_len=8))
    mutable = dict(config)
    first = llmsim.simulate(mutable, "h100-sxm", batch_size=2, prompt_len=64, gen_len=8)
    mutable["num_hidden_layers"] = 4
    second = llmsim.simulate(mutable, "h100-sxm", batch_size=2, prompt_len=64, gen_len=8)
    assert second.decode.time_s < first.decode.time_s
    assert_same(second, reference(mutable, "h100-sxm", batch_size=2, prompt_len=64, gen_len=8))


def test_fast_results_support_what_results_do() -> None:
    """layer_table (which reads the inputs simulate() remembered), copies, JSON round trips, equality."""
    result = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=2, prompt_len=64, gen_len=8)
    ref = reference("llama-3.1-8b", "h100-sxm", batch_size=2, prompt_len=64, gen_len=8)
    assert str(result.layer_table()) == str(ref.layer_table())
    assert type(result).model_validate_json(result.model_dump_json()) == result
    assert result.model_copy(update={"gen_len": 9}).gen_len == 9 and result.gen_len == 8


def reference_sweep(*args: Any, **kwargs: Any) -> Any:
    from llmsim.analysis import regime

    return _without_fast_path(regime, "fast_evaluate", lambda: llmsim.sweep(*args, **kwargs))


@pytest.mark.parametrize(("model", "device", "options"), CASES[:8] + CASES[10:12] + CASES[14:16],
                         ids=lambda c: str(c))
def test_fast_sweep_equals_the_reference(model: str, device: str, options: dict[str, Any]) -> None:
    """A sweep's blocks by timing.fast_sweep against the reference evaluation: every column."""
    import numpy as np

    grid = dict(batch_size=[1, 2, 7, 64, 300], prompt_len=[1, 5, 100, 2000, 9000], gen_len=[1, 2, 50, 3000])
    fast, ref = llmsim.sweep(model, device, **grid, **options), reference_sweep(model, device, **grid, **options)
    assert list(fast.columns) == list(ref.columns)
    for key, expected in ref.columns.items():
        got = fast.columns[key]
        assert got.dtype == expected.dtype and got.shape == expected.shape, key
        if expected.dtype.kind == "f":
            np.testing.assert_allclose(got, expected, rtol=RELATIVE, atol=0.0, err_msg=key)
        else:
            np.testing.assert_array_equal(got, expected, err_msg=key)


# ---- the written-out forms of the scalar fast path, each bit for bit its general form ----------------------
@pytest.mark.parametrize(("model", "device", "options"), CASES, ids=lambda c: str(c))
def test_written_out_steps_equal_their_general_forms(model: str, device: str, options: dict[str, Any]) -> None:
    """Each op's steady function (_plain_steady where it applies) against ScalarPlan._steady, the plain time of
    the trapezoid against _time, decode's pruned second run against the full one, and the kv bytes in plain
    Python against ModelSpec.kv_cache_bytes: exactly."""
    prepared = fast_module._prepared(model, device, options)
    plan = prepared.plan
    for B, P in ((1, 1), (8, 2048), (257, 33), (3, 9000)):
        for phase, L in ((plan.prefill, 0), (plan.decode, float(P))):
            S = P if phase is plan.prefill else 1
            for p, v in zip(phase.ops, phase.run(B, S, L)):
                for runs in (p.count, p.count * 1023.0):
                    assert p.steady(v, runs) == plan._steady(p, v, runs, phase.any_collective, phase), p.op.name
        decode = plan.decode  # its second run computes the varying ops alone: the same tuples
        full, varying = decode.run(B, 1, float(P) + 1.0), decode.run_varying(B, 1, float(P) + 1.0)
        assert [varying[i] for i in decode.varying] == [full[i] for i in decode.varying]
        if prepared.kv_bytes_at is not None:
            spec = prepared.inputs[0]
            kv = spec.kv_cache_bytes(B, P, prepared.kv, prepared.inputs[2].tensor_parallel)
            assert prepared.kv_bytes_at(B, P) == kv
    if plan.plain_time:
        for launches in (0.0, 1.0, 3.0):
            time = plan._plain_time(launches)
            for compute_s, memory_s in ((1e-3, 2e-3), (2e-3, 1e-3), (1e-3, 1e-3), (0.0, 0.0), (5e-7, 0.0)):
                assert time(compute_s, memory_s, launches, 0.0) == plan._time(compute_s, memory_s, launches, 0.0)


def test_kv_bytes_past_int64_go_to_the_reference_method() -> None:
    """numpy's int64 product wraps past 2**63: the plain-Python form gives up there (the reference answers)."""
    prepared = fast_module._prepared("llama-3.1-70b", "h100-sxm", {})
    # 80 layers x B x S x 2048 values (8 KV heads x 256): B = 2**24, S = 2**31 gives 80 x 2**66 > 2**63
    assert prepared.kv_bytes_at(1 << 24, 1 << 31) is None
    assert prepared.kv_bytes_at(1 << 10, 1 << 20) == 80 * (1 << 10) * (1 << 20) * 2048 * 2.0


def test_table_point_readers_equal_the_table_reads() -> None:
    """TableRead.fixed_at's functions of one point (ScalarGrid.reader written out for one and two free axes)
    against the full read TableRead(x, y, z), at grid points, between them and past both edges."""
    from llmsim.timing.measured import TableRead

    roofline = llmsim.analysis.evaluation.Roofline(*fast_module._prepared("llama-3.1-70b", "h100-sxm", {}
                                                                          ).inputs[1::2])
    keys = [("gemm", "bf16", 8192), ("decode_attention", "bf16", 128, 64, 8),
            ("prefill_attention", "bf16", 128, 64, 8, 0), ("prefill_attention", "bf16", 128, 32, 8, 4096),
            ("prefill_attention", "bf16", 128, 40, 8, 8192, 1)]  # a sliding window, chunks
    points = (0.5, 1.0, 3.0, 64.0, 1000.0, 4096.0, 65536.0, 1e7)
    for key in keys:
        read = roofline.measured.lookup(key)[0]
        assert isinstance(read, TableRead), key
        assert key[-1] == 0 or key[0] != "prefill_attention" or read.window is not None
        z = float(key[2]) if key[0] == "gemm" else 1.0
        if key[0] == "gemm":
            for n in (1024.0, 28672.0):
                at = read.fixed_at(None, n, z)
                for x in points:
                    assert at(x, n) == at.of_x(x) == float(read(x, n, z)), (key, x, n)
        else:
            at = read.fixed_at(None, None, z)
            for x in points:
                for y in points:
                    assert at(x, y) == float(read(x, y, z)), (key, x, y)
