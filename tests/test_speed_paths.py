"""The speed paths of issue 21 against their references (no timings here: benchmarks/bench_speed.py).

- decode_step_totals (one decode step by the prefill's path) against decode_totals(..., steps=1).
- find_crossover's lockstep multisection against scipy.optimize.brentq on the scalar model, root by root.
- bracketed_roots on functions with known roots, continuous and jumping.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.optimize import brentq

import llmsim
from llmsim.analysis import regime
from llmsim.analysis.regime import _phase_evaluator, find_crossover
from llmsim.analysis.roots import bracketed_roots
from llmsim.analysis.simulate import resolve
from llmsim.timing.phases import PARTS, SUMS, decode_step_totals, decode_totals
from llmsim.timing.roofline import BOUNDS, Roofline

from .tiny_configs import TINY_CONFIGS


@pytest.mark.parametrize("name", ["llama-gqa", "gemma3_text", "deepseek_v3", "mixtral", "llama-3.1-70b",
                                  "gpt-oss-20b"])
@pytest.mark.parametrize("options", [{}, {"engine": "roofline"}, {"engine": "transformers"},
                                     {"tensor_parallel": 2}])
def test_one_decode_step_equals_decode_totals_of_one_step(name: str, options: dict[str, Any]) -> None:
    spec, hw, cost, execution = resolve(TINY_CONFIGS.get(name, name), "h100-sxm", **options)
    roofline = Roofline(hw, execution)
    # scalar, batch array, kv array (gemma3_text's window of 8 is passed mid-range)
    for batch, kv_len in ((3, 5), (np.array([1.0, 2.5, 40.0, 300.0]), 6), (2, np.array([0.0, 7.0, 8.5, 200.0]))):
        step = decode_step_totals(spec, roofline, cost, batch, kv_len)
        reference = decode_totals(spec, roofline, cost, batch, kv_len, 1)
        assert list(step.names) == list(reference.names)
        for key in PARTS + SUMS:
            for a, b in zip(step.per_op[key], reference.per_op[key]):  # equal where both broadcast
                a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=0, err_msg=f"{name} {key}")


def _brentq_crossover(model: Any, hardware: Any, phase: str, vary: str, lo: float, hi: float,
                      fixed: dict[str, Any], options: dict[str, Any]) -> tuple[float | None, dict[str, float]]:
    """The crossover as llmsim solved it before: brentq on scalar evaluations, one root after another."""
    totals, _, _ = _phase_evaluator(model, hardware, phase, vary, fixed, options)

    def parts(x: float) -> dict[str, float]:
        t = totals(x)
        return {b: float(t.total(f"{b}_s")) for b in BOUNDS}

    at_lo, at_hi = parts(lo), parts(hi)
    from_bound, to_bound = max(at_lo, key=at_lo.__getitem__), max(at_hi, key=at_hi.__getitem__)
    t_lo, t_hi = totals(lo), totals(hi)
    per_op = {}
    for i, op in enumerate(t_lo.ops):
        d_lo = float(t_lo.per_op["compute_s"][i] - t_lo.per_op["memory_s"][i])
        d_hi = float(t_hi.per_op["compute_s"][i] - t_hi.per_op["memory_s"][i])
        if d_lo == 0 or d_hi == 0 or (d_lo > 0) == (d_hi > 0):
            continue
        per_op[op.name] = brentq(lambda x, i=i: float(totals(x).per_op["compute_s"][i] - totals(x).per_op[
            "memory_s"][i]), lo, hi, xtol=1e-9, rtol=1e-12)
    if from_bound == to_bound:
        return None, per_op
    return brentq(lambda x: parts(x)[to_bound] - parts(x)[from_bound], lo, hi, xtol=1e-9, rtol=1e-12), per_op


@pytest.mark.parametrize(("model", "phase", "vary", "fixed", "bracket", "options"), [
    ("llama-3.1-70b", "decode", "batch_size", {"kv_len": 2048}, (1.0, 4096.0), {}),
    ("llama-3.1-8b", "decode", "batch_size", {"kv_len": 1024}, (1.0, 4096.0), {"engine": "roofline"}),
    ("llama-3.1-8b", "prefill", "seq_len", {"batch_size": 1}, (1.0, 8192.0), {"engine": "roofline"}),
    ("deepseek-v3", "decode", "batch_size", {"kv_len": 512}, (1.0, 2048.0), {"tensor_parallel": 8}),
    ("gemma-3-27b", "prefill", "batch_size", {"seq_len": 64}, (1.0, 512.0), {}),
])
def test_crossover_roots_equal_brentq_root_by_root(model: str, phase: str, vary: str, fixed: dict[str, Any],
                                                  bracket: tuple[float, float], options: dict[str, Any]) -> None:
    lo, hi = bracket
    fast = find_crossover(model, "h100-sxm", phase=phase, vary=vary, lo=lo, hi=hi, **fixed, **options)
    value, per_op = _brentq_crossover(model, "h100-sxm", phase, vary, lo, hi, fixed, options)
    assert list(fast.per_op) == list(per_op)
    # each within brentq's tolerance xtol + rtol * |x| of the true root: of each other within twice that
    for name, x in per_op.items():
        assert fast.per_op[name] == pytest.approx(x, abs=2 * (1e-9 + 1e-12 * x)), name
    if value is None:
        assert fast.value is None
    else:
        assert fast.value == pytest.approx(value, abs=2 * (1e-9 + 1e-12 * value))
    assert fast.per_op or fast.value is not None  # each case solves at least one root


def test_bracketed_roots_finds_smooth_roots_and_jumps_at_once() -> None:
    targets = np.array([0.3, 1.0 / 3.0, 2.0 ** 0.5, 7.25])

    def values(x: np.ndarray) -> np.ndarray:
        # [function, point]: x^2 - t^2 (smooth), a step at t (a jump, as an op's bound flips), x - t (linear)
        return np.stack([x ** 2 - targets[0] ** 2, np.where(x < targets[1], -1.0, 1.0), x - targets[2],
                         np.where(x < targets[3], -5.0, 3.0)])

    ends = values(np.array([0.0, 10.0]))
    roots = bracketed_roots(values, 0.0, 10.0, ends[:, 0], ends[:, 1])
    np.testing.assert_allclose(roots, targets, rtol=0, atol=1e-9 + 1e-12 * 10)
    with pytest.raises(ValueError, match="opposite signs"):
        bracketed_roots(values, 1.0, 2.0, np.ones(4), np.ones(4))


def test_crossover_result_is_unchanged_in_shape() -> None:
    c = llmsim.find_crossover("llama-3.1-8b", "h100-sxm", phase="decode", vary="kv_len", batch_size=8)
    assert c.bracket == (0.0, 131071.0) and isinstance(c.per_op, dict)


@pytest.mark.parametrize("model", ["llama-3.1-8b", "gemma-3-27b"])
def test_sweep_in_blocks_equals_the_sweep_in_one_block(model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    grid = {"batch_size": [1, 2, 5, 64, 300], "prompt_len": [16, 100, 3000, 5000], "gen_len": [1, 2, 129]}
    monkeypatch.setattr(regime, "SWEEP_CHUNK_POINTS", 10**9)
    whole = llmsim.sweep(model, "h100-sxm", **grid)
    for points in (1, 7, 20):  # a row at a time; blocks that split the longest axis unevenly
        monkeypatch.setattr(regime, "SWEEP_CHUNK_POINTS", points)
        blocks = llmsim.sweep(model, "h100-sxm", **grid)
        assert list(blocks.columns) == list(whole.columns)
        for key, values in whole.columns.items():
            assert blocks.columns[key].dtype == values.dtype, key
            if values.dtype.kind == "f":  # a measured table reads a few points in Python, many with numpy: ulps
                np.testing.assert_allclose(blocks.columns[key], values, rtol=1e-12, atol=0, err_msg=key)
            else:
                assert np.array_equal(blocks.columns[key], values), key


# ---- serving: one step's plain-Python reads and the scheduler's running sums -----------------------------
def test_serving_one_step_reads_equal_the_step_cost_parts() -> None:
    """StepCost._one_pass (Python floats, the length's cell located once for both batch rows) equals the sum
    of its parts as tokens(), lm_head(), decode_attention() and prefill_attention() read them, bit for bit."""
    from llmsim.serving import step_cost as sc
    from llmsim.serving.serve import _step_cost
    from llmsim.timing.host_bound import host_excess_s

    spec, hw, cost, execution = resolve("llama-3.1-8b", "h100-sxm")
    step = _step_cost(spec, hw, cost, execution, 512, 48, 3000)
    rng = np.random.default_rng(0)
    lengths = np.concatenate([rng.uniform(0.0, 3500.0, 200), step.lengths[:5], step.lengths[-3:], [0.0, 1.0, 1e6]])
    rows, grid = step.decode_attention_s.tolist(), step.lengths.tolist()
    for length in lengths.tolist():
        for batch in (1, 7, 16, 17, 23, 48):
            k = int(np.searchsorted(step.batches, batch))
            upper = sc._interp(length, grid, rows[k])  # the one-point interpolation, row by row
            if step.batches[k] == batch:
                expected = upper
            else:
                lower = sc._interp(length, grid, rows[k - 1])
                b0, b1 = step.batches[k - 1], step.batches[k]
                expected = lower + (upper - lower) * ((batch - b0) / (b1 - b0))
            assert step.decode_attention(batch, length) == expected
    for decode_sum, n_decode, chunks, n_emit in ((0.0, 0, [(512, 0)], 1), (12345.0, 30, [], 30),
                                                 (999.0, 3, [(100, 40), (7, 0)], 4), (5.0, 1, [(0, 12)], 1),
                                                 (40000.0, 20, [(500, 100)], 21), (80.0, 40, [(480, 0)], 41)):
        # a pass with prefill tokens beyond vLLM's captured sizes (512 tokens): run without a CUDA graph
        prefill = sum(q for q, _ in chunks)
        mixed = prefill > 0 and prefill + n_decode > step.prefill_graph_tokens
        parts = step.tokens(sum(q for q, _ in chunks), n_decode) + step.lm_head(n_emit, n_decode, mixed)
        if n_decode:
            parts += float(step.decode_attention(n_decode, decode_sum / n_decode, mixed))
        if chunks:
            pairs = sum(q * c + q * q / 2 for q, c in chunks)
            parts += step.prefill_attention(len(chunks), pairs)
            parts += step.sustained_s(prefill + n_decode, len(chunks), pairs)  # the sustained clock past its onset
        if mixed and step._pass_host_s:  # an uncaptured pass's host dispatch beyond its kernels
            parts += host_excess_s(parts - step._step_host_s, step._pass_host_s, step._async_host)
        assert step.step_s(decode_sum, n_decode, chunks, n_emit) == parts


def _check_running(run: Any) -> None:
    """The counts the scheduler keeps as its running requests change, against the same summed from their rows:
    cached tokens, the decoding requests by residue and the prompts, the bound on the first finish, the blocks."""
    from llmsim.serving import scheduler

    m, epoch, bs = run.m, run.epoch, run.block_size
    computed, emitted = run.c[:m] + epoch, run.e[:m] + epoch
    assert run.cached_tokens == int(computed.sum())
    assert np.array_equal(run.o[:m], run.e[:m] - run.gen[:m])  # the row kept as emitted moves
    assert scheduler._leading_tokens(run, m // 2) == int(computed[:m // 2].sum())
    decoding = (emitted > 0) & (computed == run.prompt[:m] + emitted - 1)
    assert run.residues == np.bincount(run.c[:m][decoding] % bs, minlength=bs).tolist()  # (computed - epoch) % bs
    assert run.prefilling == int(m - decoding.sum())
    if decoding.any():  # no decoding request finishes before finish_at
        assert run.finish_at <= int((run.gen[:m] - emitted)[decoding].min()) + epoch
    assert run.own_blocks() == int((-(-computed // bs) - run.shared[:m]).sum())


def test_serving_running_counts_are_kept_through_preemption_and_prefixes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduler keeps the running requests' cached-token sum, their counts by block residue, the prompts among
    them and a bound on the first finish as they change (append, decode runs, chunks, preemption, retirement)
    instead of summing them every step, and the free KV blocks by what each step takes and gives back: equal to
    the same summed at every step and after every retirement."""
    from llmsim.serving import scheduler

    checked = []

    class Checked(scheduler._Running):
        def leading_decodes(self) -> int:
            _check_running(self)
            checked.append(self.m)
            return super().leading_decodes()

    monkeypatch.setattr(scheduler, "_Running", Checked)
    monkeypatch.setattr(scheduler, "CHECK_FREE_BLOCKS", True)
    r = llmsim.serve("llama-3.1-70b", "h100-sxm", prompt_len="uniform:500:4000", gen_len="uniform:100:600",
                     num_requests=150, concurrency=120, gpu_memory_utilization=0.6, tensor_parallel=4,
                     shared_prefix_len=300, prefix_groups=3)
    assert int(r.requests["preemptions"].sum()) > 0 and len(checked) > 100
    checked.clear()  # a fixed-size state per request (linear attention), decode runs, a Poisson stream
    r = llmsim.serve("qwen3-next-80b-a3b", "h200", tensor_parallel=4, request_rate=30.0, num_requests=200,
                     prompt_len="uniform:100:6000", gen_len="uniform:1:300", gpu_memory_utilization=0.5)
    assert len(checked) > 100 and r.steps > len(checked)  # some steps in decode runs


@pytest.mark.parametrize("engine, load", [
    ("sglang", {"request_rate": 200.0, "prompt_len": 512, "gen_len": 64}),  # prefill-first steps pass the decodes
    ("vllm", {"concurrency": 256, "prompt_len": "uniform:500:3000", "gen_len": "uniform:50:600",
              "gpu_memory_utilization": 0.3}),  # preemption: every decode past the first short block
])
def test_serving_decode_stretches_equal_one_by_one(monkeypatch: pytest.MonkeyPatch, engine: str,
                                                   load: dict[str, Any]) -> None:
    """Decodes scheduled a stretch at a time (one numpy pass: those whose blocks fit, in order, then one by one
    from the first that must preempt) give the same steps and times, bit for bit, as one by one; and the counts
    kept stay equal to the rows (free blocks included) through both."""
    from llmsim.serving import scheduler

    stretches = []  # the stretches the step's loop took (not the leading decodes)

    class Checked(scheduler._Running):
        def leading_decodes(self) -> int:
            _check_running(self)
            return self.m if self.prefilling == 0 else super().decodes_from(0)

        def decodes_from(self, i: int) -> int:
            stretches.append(i)
            return super().decodes_from(i)

    monkeypatch.setattr(scheduler, "_Running", Checked)
    monkeypatch.setattr(scheduler, "CHECK_FREE_BLOCKS", True)
    results = []
    for together in (True, False):
        monkeypatch.setattr(scheduler, "DECODE_STRETCHES", together)
        r = llmsim.serve("llama-3.1-8b", "h100-sxm", engine=engine, num_requests=600, **load)
        results.append((r.to_pandas().to_numpy(dtype=float), r.steps_to_pandas().to_numpy(dtype=float)))
        assert (len(stretches) > 20) == together  # the stretch path ran, or did not
        stretches.clear()
    if engine == "vllm":
        assert int(r.to_pandas()["preemptions"].sum()) > 0
    for a, b in zip(*results):
        assert np.array_equal(a, b, equal_nan=True)


def test_serving_requests_left_out_of_a_step_keep_their_counts() -> None:
    """_Running.hold: requests a step left out (its token budget spent) while the epoch moved keep their
    computed and emitted tokens, and the decoding ones move to their residue."""
    from llmsim.serving.scheduler import _Running

    rng = np.random.default_rng(11)
    for bs in (1, 16):
        run = _Running(40, bs)
        run.epoch = 37
        for r in range(30):
            prompt, gen = int(rng.integers(2, 300)), int(rng.integers(2, 50))
            if r < 12 or r % 3:  # decoding: its prompt and emitted - 1 tokens cached
                emitted = int(rng.integers(1, gen))
                run.append(r, prompt, gen, prompt + emitted - 1, emitted, 0)
            else:  # a prompt part-way
                run.append(r, prompt, gen, int(rng.integers(0, prompt)), 0, 0)
        before = (run.c[:30] + run.epoch, run.e[:30] + run.epoch)
        run.epoch += 1  # the step moved the epoch (requests 0 .. 11 decoded a token): 12 .. 29 were left out
        run.cached_tokens += 12  # (the engine adds the leading decodes' tokens)
        run.hold(12, 30)
        assert np.array_equal(run.c[12:30] + run.epoch, before[0][12:]) and np.array_equal(
            run.e[12:30] + run.epoch, before[1][12:])
        assert np.array_equal(run.c[:12] + run.epoch, before[0][:12] + 1)  # the others moved one token
        _check_running(run)


def test_sweep_segments_without_dead_cuts_give_the_same_sums() -> None:
    """fast_sweep._segments drops the cuts outside 0 .. steps - 2 at every point (they only add empty
    segments): a piecewise-affine function summed over its segments is the same, bit for bit, as over
    decode_sum.segments' (numpy sums a short last axis left to right; the dropped terms are exact zeros)."""
    from llmsim.timing.decode_sum import segments
    from llmsim.timing.fast_sweep import _segments

    rng = np.random.default_rng(3)
    steps = np.array([0.0, 1.0, 2.0, 17.0, 255.0, 4000.0]).reshape(1, 6)
    live = rng.uniform(-5.0, 300.0, (50, 6))
    dead_late, dead_early = np.full((50, 1), np.inf), rng.uniform(-9.0, -0.5, (50, 1))
    beyond = np.broadcast_to(steps + rng.uniform(0.0, 5.0, (50, 1)), (50, 6))  # at or past the last offset
    for cuts in ([dead_late, beyond], [dead_late, live], [live, dead_early, beyond], [live, live * 0.5, dead_late],
                 [np.full((50, 1), np.nan), dead_early], [live, np.where(live > 100.0, -3.0, np.inf)]):
        totals = []
        for split in (segments, _segments):
            (lo, hi), n = split(cuts, steps)
            f_lo, f_hi = 1e-3 + 7e-6 * np.minimum(lo, 150.0), 1e-3 + 7e-6 * np.minimum(hi, 150.0)  # one kink
            totals.append((n * (f_lo + f_hi) / 2.0).sum(axis=-1))
        np.testing.assert_array_equal(np.broadcast_to(totals[1], totals[0].shape), totals[0])  # (as they broadcast)
        assert np.all(totals[0] >= 0)
    _, n = _segments([dead_late, beyond], steps)
    assert n.shape[-1] == 1  # nothing live: one segment


def test_a_results_inputs_are_kept_while_it_lives() -> None:
    """layer_table reads a result's inputs again (evaluation.inputs_of): kept while the result lives, by both
    paths, and forgotten when it dies."""
    from llmsim.analysis import evaluation

    before = len(evaluation._INPUTS)
    fast = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=2, prompt_len=64, gen_len=8)
    reference = llmsim.simulate("llama-3.1-8b", "h100-sxm", batch_size=2, prompt_len=64, gen_len=8,
                                pipeline_parallel=2)  # the reference path
    for result in (fast, reference):
        spec, hw, _, _ = evaluation.inputs_of(result)
        assert spec.name == "llama-3.1-8b" and hw.name == result.hardware
    assert len(evaluation._INPUTS) == before + 2
    del fast, reference, result
    assert len(evaluation._INPUTS) == before


def test_serving_running_rows_removed_by_a_shift_as_by_a_mask() -> None:
    """_Running.remove(i) (one finished request) leaves the rows keep() leaves without it, in order."""
    from llmsim.serving.scheduler import _Running

    rng = np.random.default_rng(5)
    for m in (1, 2, 7, 40):
        for i in {0, m // 2, m - 1}:
            runs = [_Running(m + 1, 16, 3) for _ in range(2)]
            for r in range(m):
                prompt, gen, computed, emitted, shared = rng.integers(1, 500, 5).tolist()
                if r % 2:  # decoding
                    computed = prompt + emitted - 1
                shared = min(shared, computed // 16)  # whole blocks of its prompt
                for run in runs:
                    run.append(r, prompt, gen, computed, emitted, shared)
            shifted, masked = runs
            freed = shifted.remove(i), masked.keep(np.arange(m) != i)
            assert freed[0] == freed[1]
            assert shifted.m == masked.m == m - 1 and shifted.cached_tokens == masked.cached_tokens
            assert shifted.residues == masked.residues and shifted.prefilling == masked.prefilling
            assert np.array_equal(shifted.state[:, :m - 1], masked.state[:, :m - 1])


def test_serving_decode_run_blocks_equal_the_per_request_ceilings() -> None:
    """_decode_run's blocks for computed + j tokens beyond those held (sum of (c + epoch + j + bs - 1) // bs, j = 1 ..
    k, less the same at j = 0) against the per-request ceilings -(-(computed + j) // bs) - held, summed."""
    from llmsim.serving.scheduler import _decode_run, _Running

    class Unit:  # one second a step
        def decode_steps_s(self, n: int, means: np.ndarray) -> np.ndarray:
            return np.ones(len(means))

    rng = np.random.default_rng(9)
    for bs in (1, 16, 32):
        for m, k in ((1, 2), (5, 40), (200, 7)):
            run = _Running(m, bs)
            run.epoch = int(rng.integers(0, 10_000))
            for r in range(m):
                prompt = int(rng.integers(1, 5000))
                run.append(r, prompt, k + 5, prompt, 1, 0)  # decoding, k + 4 tokens to go
            computed = run.c[:m] + run.epoch
            held = -(-computed // bs)
            j = np.arange(1, k + 1)
            reference = np.sum(-(-(computed[None, :] + j[:, None]) // bs) - held[None, :], axis=1)
            steps, _, extra, _ = _decode_run(Unit(), run, bs, 10**9, 0.0, float(k) - 0.5)  # k steps start before
            assert steps == k and np.array_equal(extra, reference)


def test_serving_decode_steps_equal_the_parts_without_proposals() -> None:
    """StepCost.decode_steps_s leaves out the proposals (0.0) without speculation: the same times."""
    from llmsim.serving.step_cost import StepCost

    spec, hw, cost, execution = resolve("llama-3.1-8b", "h100-sxm")
    step = StepCost(spec, Roofline(hw, execution), cost, 512, 128, 10_000)
    means = np.array([1.0, 17.5, 300.25, 4000.0, 9000.0])
    for n in (1, 3, 16, 100):
        parts = step.tokens(0, n) + step.lm_head(n, n) + step.decode_attention(n, means) + step.proposals(n, means)
        assert np.array_equal(step.decode_steps_s(n, means), parts)


def test_serving_prices_linear_attention_scans_by_their_new_tokens() -> None:
    """A Gated DeltaNet scan costs by the chunk's new tokens (a fixed-size state carries the prefix), so a chunk after
    a long cached prefix costs more than a fresh one only through the softmax-attention layers: the step's time
    difference equals the full-attention layers' flash op read at the two pair-equivalent lengths."""
    from llmsim.serving.step_cost import StepCost, _split
    from llmsim.timing.phases import prefill_totals

    spec, hw, cost, execution = resolve("qwen3-next-80b-a3b", "h200", tensor_parallel=4)
    roofline = Roofline(hw, execution)
    totals = prefill_totals(spec, roofline, cost, 1, 2048.0)
    attention, _, _ = _split(totals)
    by_name = dict(zip(totals.names, totals.per_op["time_s"]))
    assert float(attention) == pytest.approx(float(by_name["layers.full.attn.flash"]), rel=1e-12)
    assert float(by_name["layers.linear.attn.scan"]) > 0  # priced with the step's tokens (in `rest`)
    step = StepCost(spec, roofline, cost, 8192, 16, 40_000)
    # a 1,024-token chunk's pass is host-bound (vLLM runs it uncaptured: its kernels take less than their host
    # dispatch, timing.host_bound), after a cached prefix or not: both steps take the host's time, its 0.4 ms of
    # step work and the dispatch of the pass's kernels
    host_s = step._step_host_s + step._pass_host_s
    assert step._step_host_s == 0.4e-3
    assert step.step_s(0.0, 0, [(1024, 0)], 1) == step.step_s(0.0, 0, [(1024, 16384)], 1) == host_s
    q, c = 8192, 16384  # one whose kernels outlast the dispatch
    fresh, after = step.step_s(0.0, 0, [(q, 0)], 1), step.step_s(0.0, 0, [(q, c)], 1)
    assert fresh > step._pass_host_s
    # pairs q*c + q*q/2 as one fresh prefill of sqrt(2 * pairs) tokens: only the attention core moves (and with it
    # the step's compute-bound seconds past the onset of the sustained clock, timing.sustained)
    core = step.prefill_attention(1, q * c + q * q / 2) - step.prefill_attention(1, q * q / 2)
    core += step.sustained_s(q, 1, q * c + q * q / 2) - step.sustained_s(q, 1, q * q / 2)
    assert after - fresh == pytest.approx(core, rel=1e-12)
