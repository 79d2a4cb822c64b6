"""Regime analysis: vectorised sweeps, the exact point where a phase flips bound, the first limit met.

- sweep(): every point of a grid (batch x prompt x generated lengths) in one vectorised evaluation.
- find_crossover(): solves share_to(x) - share_from(x) = 0 on the continuous model inside the searched
  bracket, and per op compute_s(x) = memory_s(x): every root at once, many points per vectorised
  evaluation (roots.bracketed_roots; tests hold it to scipy.optimize.brentq's roots).
- first_limit(): walks one variable up and reports which limit is met first: the phase turning
  compute-bound ("compute"), turning memory-bound ("bandwidth"), out of memory ("capacity"), or a
  latency target ("slo").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..cost.workload import BATCH_MAX, COUNT_MAX, check_count, check_one
from ..errors import OptionError, check_choice, check_positive
from ..timing.phases import decode_step_totals, prefill_totals
from ..timing.roofline import BOUNDS, Roofline
from .evaluation import refuse_pipeline_decode
from .fast_simulate import fast_evaluate
from .memory import footprint
from .roots import bracketed_roots
from .simulate import check_workload, evaluate, resolve
from .text import device_word

VARY = {"prefill": ("batch_size", "seq_len"), "decode": ("batch_size", "kv_len")}


class SweepResult(BaseModel):
    """One row per point: inputs, TTFT, TPOT, throughput, bounds, memory and fit (numpy columns)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)
    model: str
    hardware: str
    columns: dict[str, Any]

    def __len__(self) -> int:
        return len(self.columns["batch_size"])

    def to_rows(self) -> list[dict[str, Any]]:
        """One dict per point; tpot_s None where gen_len is 1 (no decode step, no TPOT: the column holds 0.0)."""
        keys = list(self.columns)
        rows = [{k: _py(self.columns[k][i]) for k in keys} for i in range(len(self))]
        for row in rows:
            if row.get("gen_len") == 1 and "tpot_s" in row:
                row["tpot_s"] = None
        return rows

    def to_pandas(self) -> Any:
        """One row per point of the sweep (pandas: a core dependency)."""
        from ..frames import data_frame

        return data_frame(self.columns)


def _py(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _bound_index(parts: dict[str, Any]) -> np.ndarray:
    """The index in BOUNDS of the largest part (the first of equal ones)."""
    stacked = np.stack([np.asarray(parts[b], dtype=float) for b in BOUNDS], axis=-1)
    return np.argmax(stacked, axis=-1)


def sweep(model: Any, hardware: Any, batch_size: Any = 1, prompt_len: Any = 512, gen_len: Any = 128,
          **options: Any) -> SweepResult:
    """Simulate every combination of the given batch sizes, prompt and generated lengths at once.

    Each of batch_size, prompt_len, gen_len may be a number or a list; the sweep is their grid.
    """
    refuse_pipeline_decode(options, "sweep()")
    spec, hw, cost, execution = resolve(model, hardware, **options)
    # checked before the grid is shaped, so an error shows the values as given
    axes = [np.atleast_1d(check_count("batch_size", batch_size, 1, BATCH_MAX)),
            np.atleast_1d(check_count("prompt_len", prompt_len, 1)), np.atleast_1d(check_count("gen_len", gen_len, 1))]
    for name, axis in zip(("batch_size", "prompt_len", "gen_len"), axes):
        if axis.ndim != 1:
            raise OptionError(f"{name} must be a number or a flat list of numbers")
    # open grid: each quantity is only as large as the axes it depends on (weights: batch only)
    B, P, G = (axis.reshape([-1 if i == j else 1 for j in range(3)]) for i, axis in enumerate(axes))
    B, P, G = (np.asarray(x) for x in check_workload(spec, B, P, G))
    shape = np.broadcast_shapes(B.shape, P.shape, G.shape)
    if int(np.prod(shape)) > SWEEP_CHUNK_POINTS:  # a large sweep: its temporaries reused, not mapped afresh
        from .._malloc import keep_large_blocks

        keep_large_blocks()
    # the grid in blocks of at most SWEEP_CHUNK_POINTS points along its longest axis, each block's results
    # written into columns allocated once: memory of one block's intermediates, not of the whole grid's
    columns: dict[str, np.ndarray] = {}
    for block in _grid_blocks(shape):
        b, p, g = (x[tuple(s if n > 1 else slice(None) for s, n in zip(block, x.shape))] for x in (B, P, G))
        for key, values in _sweep_columns(spec, hw, cost, execution, b, p, g).items():
            if key not in columns:
                columns[key] = np.empty(shape, dtype=_COLUMN_DTYPES.get(key, values.dtype))
            if key in _COLUMN_DTYPES:  # a bound: its index into _BOUND_NAMES, written as the name (no temporaries)
                np.take(_BOUND_NAMES, np.broadcast_to(values, columns[key][block].shape), out=columns[key][block])
            else:
                columns[key][block] = values
    columns = {key: values.ravel() for key, values in columns.items()}  # C order: the grid's flat order
    return SweepResult(model=spec.name, hardware=hw.name, columns=columns)


SWEEP_CHUNK_POINTS = 1 << 16
# the bound columns hold any bound name or "none" (a block's own values may be shorter strings)
_BOUND_NAMES = np.asarray((*BOUNDS, "none"))
_COLUMN_DTYPES = {"prefill_bound": _BOUND_NAMES.dtype, "decode_bound": _BOUND_NAMES.dtype}


def _grid_blocks(shape: tuple[int, ...]) -> list[tuple[slice, ...]]:
    """The grid `shape` as blocks of at most SWEEP_CHUNK_POINTS points (at least one row) along its longest axis."""
    axis = int(np.argmax(shape))
    other = max(int(np.prod(shape)) // max(shape[axis], 1), 1)
    step = max(SWEEP_CHUNK_POINTS // other, 1)
    return [tuple(slice(i, i + step) if k == axis else slice(None) for k in range(len(shape)))
            for i in range(0, shape[axis], step)]


def _sweep_columns(spec: Any, hw: Any, cost: Any, execution: Any, B: np.ndarray, P: np.ndarray, G: np.ndarray
                   ) -> dict[str, np.ndarray]:
    """Every result column over one block of the open grid B x P x G (arrays of the block's shape)."""
    # the fast path's phase totals where it applies (the same numbers: tests/test_fast_simulate.py)
    fast = fast_evaluate(spec, hw, cost, execution, B, P, G)
    prefill, decode, memory = fast if fast is not None else evaluate(spec, hw, cost, execution, B, P, G)
    shape = np.broadcast_shapes(B.shape, P.shape, G.shape)

    def full(x: Any) -> np.ndarray:
        return np.broadcast_to(np.asarray(x), shape)

    steps = G - 1
    ttft = prefill.total("time_s")
    decode_time = decode.total("time_s")
    tpot = np.where(steps > 0, decode_time / np.maximum(steps, 1), 0.0)
    e2e = ttft + decode_time
    return {
        "batch_size": full(B), "prompt_len": full(P), "gen_len": full(G),
        "ttft_s": full(ttft), "tpot_s": full(tpot), "e2e_s": full(e2e),
        "throughput_tokens_per_s": full(B * G / e2e),
        # bounds as indices into _BOUND_NAMES (sweep writes the names)
        "prefill_bound": full(_bound_index({b: prefill.total(f"{b}_s") for b in BOUNDS})),
        "decode_bound": full(np.where(steps > 0, _bound_index({b: decode.total(f"{b}_s") for b in BOUNDS}),
                                      len(BOUNDS))),
        **{key: full(np.asarray(memory[key], dtype=float))
           for key in ("weights_bytes", "kv_cache_bytes", "activation_bytes", "total_bytes")},
        "fits": full(memory["fits"]),
    }


# ---- crossovers ----------------------------------------------------------------------------------
class Crossover(BaseModel):
    """Where a phase flips bound as one variable grows (value None when it does not in the bracket)."""

    model_config = ConfigDict(frozen=True)
    phase: str
    vary: str
    value: float | None
    from_bound: str
    to_bound: str | None
    bracket: tuple[float, float]
    reason: str
    per_op: dict[str, float]
    # every change of the phase's bound in the bracket, in order: (value, from, to); a phase can turn and turn back
    # (decode of a small model: memory- to compute-bound over a few batch sizes, then memory-bound again)
    transitions: list[tuple[float, str, str]] = []


_SCAN_POINTS = 256  # the bracket scanned for every change of bound: geometric, about 3.3 % apart over 1..4096


def _transitions(totals: Callable[[Any], Any], lo: float, hi: float,
                 known: tuple[str, str, float] | None = None) -> list[tuple[float, str, str]]:
    """(value, from, to) of every change of the phase's bound between lo and hi: the bound at _SCAN_POINTS points
    (geometric from max(lo, 1); lo itself first), each change then solved by brentq between its two points; where
    the scan finds one change only and it is `known` (from, to, its root already solved), that root.
    approximation: an excursion narrower than the scan's spacing (about 3 % of the value over 1..4096) is not seen."""
    start = max(lo, 1.0)
    grid = np.unique(np.concatenate([[lo], np.geomspace(start, hi, _SCAN_POINTS) if hi > start else [hi]]))
    t = totals(grid)

    def shares(t: Any, n: int) -> np.ndarray:  # [bound, point]
        return np.vstack([np.broadcast_to(np.asarray(t.total(f"{b}_s"), dtype=float), (n,)) for b in BOUNDS])

    which = shares(t, len(grid)).argmax(axis=0)  # the first of BOUNDS on a tie, as max(..., key=) picks
    steps = np.flatnonzero(which[1:] != which[:-1])
    if known is not None and len(steps) == 1 and (BOUNDS[which[steps[0]]], BOUNDS[which[-1]]) == known[:2]:
        return [(known[2], known[0], known[1])]  # the one change: the root the caller solved
    out = []
    for i in steps:
        a, b = BOUNDS[which[i]], BOUNDS[which[i + 1]]

        def gap(x: float, a: str = a, b: str = b) -> float:
            point = shares(totals(np.array([x])), 1)
            return float(point[BOUNDS.index(b), 0] - point[BOUNDS.index(a), 0])

        x0, x1 = float(grid[i]), float(grid[i + 1])
        g0, g1 = gap(x0), gap(x1)
        x = x1 if g1 == 0 or g0 * g1 > 0 else brentq(gap, x0, x1, xtol=1e-9, rtol=1e-12)
        out.append((x, a, b))
    return out


# execution options only a prefill pass reads (the sustained clock, an uncaptured prefill's host dispatch)
PREFILL_ONLY_OPTIONS = ("clock", "prefill_dispatch_s", "prefill_graph_tokens")


def _phase_evaluator(model: Any, hardware: Any, phase: str, vary: str, fixed: dict[str, Any],
                     options: dict[str, Any]) -> tuple[Callable[[Any], Any], Any, Any]:
    """A function x -> PhaseTotals of the phase with `vary` = x (floats allowed: the continuous model)."""
    refuse_pipeline_decode(options, "find_crossover() / first_limit()")
    check_choice("phase", phase, VARY)
    if phase == "decode":  # the prefill's own options: a decode step's crossover never reads them
        given = [k for k in PREFILL_ONLY_OPTIONS if options.get(k) is not None]
        if given:
            raise OptionError(f"{given[0]}={options[given[0]]!r} applies to prefill passes; phase='decode' would "
                              "ignore it; leave it out or use phase='prefill'")
    spec, hw, cost, execution = resolve(model, hardware, **options)
    check_choice("vary", vary, VARY[phase])
    roofline = Roofline(hw, execution)
    values = {"batch_size": 1, "seq_len": 512, "kv_len": 512}
    for key, value in fixed.items():
        check_choice("fixed argument", key, values)
        values[key] = check_point(spec, key, value)
    if phase == "prefill":
        def totals(x: Any) -> Any:
            args = dict(values, **{vary: x})
            return prefill_totals(spec, roofline, cost, args["batch_size"], args["seq_len"])
    else:
        def totals(x: Any) -> Any:
            args = dict(values, **{vary: x})
            return decode_step_totals(spec, roofline, cost, args["batch_size"], args["kv_len"])
    return totals, spec, hw


def _fixed_workload(phase: str, vary: str, kwargs: dict[str, Any],
                   instead: str = "give its range instead of one value (lo and hi, or start and stop)"
                   ) -> dict[str, Any]:
    """Take the fixed workload out of the keyword arguments: the phase's quantities other than the varied one
    (a value of the varied one, or of the other phase's, would be silently ignored: refused)."""
    check_choice("phase", phase, VARY)
    check_choice("vary", vary, VARY[phase])
    fixed = {k: kwargs.pop(k) for k in ("batch_size", "seq_len", "kv_len") if k in kwargs}
    for key, value in fixed.items():
        if key == vary:
            raise OptionError(f"{key}={value!r}: {key} is the quantity varied; {instead}")
        if key not in VARY[phase]:
            raise OptionError(f"{key}={value!r} does not apply to phase={phase!r}; its quantities are "
                              f"{' and '.join(VARY[phase])}")
    return fixed


# the smallest value of each workload variable; a decode step at kv_len attends kv_len + 1 keys
_MINIMUM = {"batch_size": 1, "seq_len": 1, "kv_len": 0}


def _context_limit(spec: Any, key: str) -> int:
    """The largest seq_len or kv_len the model's context holds; the largest batch llmsim takes."""
    if key == "batch_size":
        return BATCH_MAX
    return spec.max_position_embeddings - (1 if key == "kv_len" else 0)


def check_point(spec: Any, key: str, value: Any) -> int:
    """A fixed workload value of find_crossover / first_limit: a whole number in its allowed range."""
    return int(_check_within(spec, key, check_one(key, value, _MINIMUM[key], BATCH_MAX if key == "batch_size"
                                                  else COUNT_MAX)))


def _check_within(spec: Any, key: str, value: float, name: str | None = None) -> float:
    top = _context_limit(spec, key)
    if value > top:
        label = key if name is None else f"{name} ({key})"
        if key == "batch_size":
            raise OptionError(f"{label}={value:g} is past the largest batch llmsim takes ({top})")
        raise OptionError(f"{label}={value:g} exceeds the model's context: at most {top} "
                          f"(max_position_embeddings={spec.max_position_embeddings})")
    return value


def _check_bracket(spec: Any, vary: str, lo: float, hi: float, names: tuple[str, str]) -> None:
    """The searched range of `vary`: finite, lo < hi, inside the variable's allowed range."""
    for name, value in zip(names, (lo, hi)):
        if not np.isfinite(value) or value < _MINIMUM[vary]:
            raise OptionError(f"{name} ({vary})={value!r} must be a finite number >= {_MINIMUM[vary]}")
        _check_within(spec, vary, value, name)
    if not lo < hi:
        raise OptionError(f"the bracket needs {names[0]} < {names[1]}, got {names[0]}={lo:g}, {names[1]}={hi:g}")


def _check_slo(field: str, value: Any) -> float | None:
    return None if value is None else check_positive(field, value, "seconds")


def _default_bracket(spec: Any, vary: str) -> tuple[float, float]:
    if vary == "batch_size":
        return 1.0, 4096.0
    if vary == "seq_len":
        return 1.0, float(spec.max_position_embeddings)
    return 0.0, float(spec.max_position_embeddings - 1)


def find_crossover(model: Any, hardware: Any, phase: str = "decode", vary: str = "batch_size",
                   lo: float | None = None, hi: float | None = None, **kwargs: Any) -> Crossover:
    """The value of `vary` in [lo, hi] where `phase` changes bound (and where each op does), solved to
    brentq's tolerance (xtol 1e-9, rtol 1e-12).

    Keyword arguments: the fixed workload (batch_size, seq_len for prefill, kv_len for decode) and any
    option of simulate (efficiency, overhead, attention, dtypes, ...).
    """
    fixed = _fixed_workload(phase, vary, kwargs)
    totals, spec, _ = _phase_evaluator(model, hardware, phase, vary, fixed, kwargs)
    d_lo, d_hi = _default_bracket(spec, vary)
    lo = d_lo if lo is None else _float("lo", lo)
    hi = d_hi if hi is None else _float("hi", hi)
    _check_bracket(spec, vary, lo, hi, ("lo", "hi"))

    # both ends in one evaluation: [op, end] per-op terms, [end] phase totals
    ends = totals(np.array([lo, hi]))
    at_lo, at_hi = ({b: float(ends.total(f"{b}_s")[j]) for b in BOUNDS} for j in (0, 1))
    from_bound = max(at_lo, key=lambda b: at_lo[b])
    to_bound = max(at_hi, key=lambda b: at_hi[b])
    flips = from_bound != to_bound
    # the roots: each flipping op's compute_s - memory_s, and the phase's share_to - share_from
    op_gap = _op_rows(ends, "compute_s", 2) - _op_rows(ends, "memory_s", 2)
    flipping = [i for i in range(len(ends.ops)) if op_gap[i, 0] != 0 and op_gap[i, 1] != 0
                and (op_gap[i, 0] > 0) != (op_gap[i, 1] > 0)]

    def gaps_of(t: Any) -> np.ndarray:
        """[root, point]: each flipping op's gap, then (where the phase flips) the phase's."""
        points = len(np.atleast_1d(t.total("time_s")))
        rows = _op_rows(t, "compute_s", points, flipping) - _op_rows(t, "memory_s", points, flipping)
        if flips:
            phase_gap = np.broadcast_to(t.total(f"{to_bound}_s") - t.total(f"{from_bound}_s"), (points,))
            rows = np.vstack([rows, phase_gap[None, :]])
        return rows

    f_ends = gaps_of(ends)
    n = len(f_ends)
    roots = bracketed_roots(lambda x: gaps_of(totals(x)), lo, hi, f_ends[:, 0], f_ends[:, 1]) if n else np.zeros(0)
    per_op = {ends.ops[i].name: float(x) for i, x in zip(flipping, roots)}
    changes = _transitions(totals, lo, hi, (from_bound, to_bound, float(roots[-1])) if flips else None)
    then = "".join(f", then to {b}-bound at {x:.4g}" for x, _, b in changes[1:])
    if not flips and not changes:
        return Crossover(phase=phase, vary=vary, value=None, from_bound=from_bound, to_bound=None,
                         bracket=(lo, hi), per_op=per_op,
                         reason=f"{phase} stays {from_bound}-bound over {vary} in [{lo:g}, {hi:g}]")
    if not flips:  # it turns and turns back inside the bracket: the first turn, and the rest said
        value, _, first_to = changes[0]
        return Crossover(phase=phase, vary=vary, value=value, from_bound=from_bound, to_bound=first_to,
                         bracket=(lo, hi), per_op=per_op, transitions=changes,
                         reason=f"{phase} turns from {from_bound}- to {first_to}-bound at {vary} = {value:.4g}{then}")
    value = float(roots[-1])
    more = "" if len(changes) <= 1 else f" (in all: {changes[0][2]}-bound at {changes[0][0]:.4g}{then})"
    return Crossover(phase=phase, vary=vary, value=value, from_bound=from_bound, to_bound=to_bound,
                     bracket=(lo, hi), per_op=per_op, transitions=changes,
                     reason=f"{phase} turns from {from_bound}- to {to_bound}-bound at {vary} = {value:.4g}{more}")


def _op_rows(t: Any, key: str, points: int, ops: list[int] | None = None) -> np.ndarray:
    """[op, point]: a per-op term at every point (of the ops listed, default all; terms that do not vary
    with x broadcast)."""
    values = t.per_op[key]
    if isinstance(values, np.ndarray) and values.shape == (len(t.ops), points):
        return values if ops is None else values[ops]
    rows = values if ops is None else [values[i] for i in ops]
    return np.array([np.broadcast_to(np.asarray(v, dtype=float), (points,)) for v in rows]).reshape(-1, points)


def brentq(f: Callable[[float], float], a: float, b: float, **tolerances: float) -> float:
    """scipy.optimize.brentq, imported on first use (scipy.optimize alone takes longer to import than llmsim)."""
    from scipy.optimize import brentq as scipy_brentq

    return float(scipy_brentq(f, a, b, **tolerances))


# ---- first limit ----------------------------------------------------------------------------------
class FirstLimit(BaseModel):
    """The first limit met as one variable grows: compute, bandwidth, capacity or slo."""

    model_config = ConfigDict(frozen=True)
    vary: str
    phase: str
    limit: str
    value: float | None
    start: float
    stop: float
    events: dict[str, float | None]
    reason: str


def first_limit(model: Any, hardware: Any, vary: str = "kv_len", phase: str = "decode",
                start: float | None = None, stop: float | None = None, tpot_slo_s: float | None = None,
                ttft_slo_s: float | None = None, **kwargs: Any) -> FirstLimit:
    """Walk `vary` up from `start` to `stop` and report which limit `phase` meets first.

    Events: the phase flipping bound (to "compute" or to "bandwidth"), the footprint exceeding the
    device ("capacity"), and TPOT or TTFT passing a target ("slo"). The earliest wins; with no event
    the limit is the ceiling that binds throughout and value is None.
    """
    if phase == "prefill" and vary == "kv_len":
        vary = "seq_len"
    tpot_slo_s = _check_slo("tpot_slo_s", tpot_slo_s)
    ttft_slo_s = _check_slo("ttft_slo_s", ttft_slo_s)
    check_choice("phase", phase, VARY)
    ignored, target = ("tpot_slo_s", "ttft_slo_s") if phase == "prefill" else ("ttft_slo_s", "tpot_slo_s")
    if (ttft_slo_s if ignored == "ttft_slo_s" else tpot_slo_s) is not None:  # it would be silently ignored
        raise OptionError(f"{ignored} does not apply to phase={phase!r}; its latency target is {target}")
    # (first_limit searches the varied quantity from 1 upward itself: no range to give)
    fixed = _fixed_workload(phase, vary, kwargs, instead="first_limit searches it from 1 upward; drop it")
    gen_len = check_one("gen_len", kwargs.pop("gen_len", 1), 1)
    totals, spec, hw = _phase_evaluator(model, hardware, phase, vary, fixed, kwargs)
    if gen_len > spec.max_position_embeddings:
        raise OptionError(f"gen_len={gen_len} exceeds the model's context of {spec.max_position_embeddings} tokens "
                          "(max_position_embeddings)")
    d_lo, d_hi = _default_bracket(spec, vary)
    start = max(d_lo, 1.0) if start is None else _float("start", start)
    stop = d_hi if stop is None else _float("stop", stop)
    _check_bracket(spec, vary, start, stop, ("start", "stop"))
    crossover = find_crossover(model, hardware, phase=phase, vary=vary, lo=start, hi=stop, **fixed, **kwargs)
    events: dict[str, float | None] = {"compute": None, "bandwidth": None, "capacity": None, "slo": None}
    if crossover.value is not None and crossover.to_bound in ("compute", "memory"):
        events["compute" if crossover.to_bound == "compute" else "bandwidth"] = crossover.value

    _, _, cost, _ = resolve(model, hardware, **kwargs)

    def need(x: float) -> dict[str, Any]:
        args = {"batch_size": 1, "seq_len": 512, "kv_len": 512, **fixed, vary: x}
        context = args["seq_len"] if phase == "prefill" else args["kv_len"] + 1
        return footprint(spec, hw, cost, args["batch_size"], max(int(context), 1), gen_len)

    def fits(x: float) -> bool:
        return bool(need(x)["fits"])

    never = None  # why nothing fits, when even the start does not
    if not fits(start):
        events["capacity"] = start
        at = need(start)
        gib = 1024**3
        never = (f"{phase}: capacity limit met first: it does not fit even at {vary} = {start:g} "
                 f"({float(at['total_bytes']) / gib:.1f} GiB needed per {device_word(hw.device_type)}, "
                 f"{float(at['weights_bytes']) / gib:.1f} of them weights, of {float(at['capacity_bytes']) / gib:.1f}; "
                 "split it with tensor_parallel or pipeline_parallel, quantize it, or choose a larger device)")
    elif not fits(stop):
        lo_x, hi_x = int(start), int(np.ceil(stop))
        while hi_x - lo_x > 1:
            mid = (lo_x + hi_x) // 2
            lo_x, hi_x = (mid, hi_x) if fits(mid) else (lo_x, mid)
        events["capacity"] = float(hi_x)
    slo = tpot_slo_s if phase == "decode" else ttft_slo_s
    if slo is not None:
        def over(x: float) -> float:
            return float(totals(x).total("time_s")) - slo

        if over(start) > 0:
            events["slo"] = start
        elif over(stop) > 0:
            events["slo"] = float(brentq(over, start, stop, xtol=1e-9))
    met = {k: v for k, v in events.items() if v is not None}
    if met:
        limit = min(met, key=lambda k: met[k])
        value: float | None = met[limit]
        reason = never if never is not None and limit == "capacity" else (
            f"{phase}: {limit} limit met first at {vary} = {value:.6g}")
    else:
        binding = crossover.from_bound
        limit = "compute" if binding == "compute" else "bandwidth" if binding == "memory" else binding
        value = None
        reason = f"{phase} stays {binding}-bound and fits over {vary} in [{start:g}, {stop:g}]"
    return FirstLimit(vary=vary, phase=phase, limit=limit, value=value, start=start, stop=stop, events=events,
                      reason=reason)


def _float(field: str, value: Any) -> float:
    if isinstance(value, bool):
        raise OptionError(f"{field}={value!r} must be a number")
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        raise OptionError(f"{field}={value!r} must be a number") from None


def geometric_values(start: int, stop: int, per_octave: int = 4) -> Sequence[int]:
    """Integers spread evenly on a log scale, for sweep axes."""
    values = np.unique(np.round(np.geomspace(start, stop, num=int(np.log2(stop / start) * per_octave) + 1)))
    return [int(v) for v in values]
