"""How well the shipped kernel tables' interpolation predicts measured points it was not given.

Writes validation/kernel_tables.md:

    PYTHONPATH=. python validation/kernel_tables.py [--out PATH] [--full-dir DIR]

(a) Hold-out on the shipped (compact) tables: per GridTable, 20 % of the interior values of each axis with
    at least 3 values (at least one; never the first or last value) are left out, at random (numpy
    default_rng(0), one generator over the tables in sorted order); the GridTable is rebuilt from the full
    sub-grid that remains (attention cells past the token budget filled again by the reader's rule, from the
    kept batches; read with the family's rule: the monotone cubic, the straight line for GEMM) and
    every measured point on a left-out grid line is predicted.
(b) Off-grid: `import_tables(system, engine, dir, full=True)` writes every measured point of
    aiconfigurator-core (installed version); each point of a key tuple the shipped table has, at a
    coordinate the shipped table did not measure, is predicted with the shipped GridTable.time_s.
error % = 100 |predicted - measured| / measured. Needs pyarrow and aiconfigurator-core (llmsim[aiconfigurator]).
"""

from __future__ import annotations

import argparse
import tempfile
from collections import defaultdict
from importlib import metadata
from pathlib import Path

import numpy as np

from llmsim.engines.aiconfigurator import SYSTEMS, import_tables
from llmsim.hardware.kernel_table import GridTable
from llmsim.hardware.measured import FAMILIES, kernels_root, load_measured, shipped_kernel_sets
from llmsim.hardware.table_file import _fill_first_axis, _key_value

TARGET_MEDIAN_PCT = 5.0
HOLDOUT_FRACTION = 0.2
DEVICE_SYSTEM = {device: system for system, device in SYSTEMS.items()}


def measured_rows(path: Path, keys: tuple[str, ...], axes: tuple[str, ...]
                  ) -> dict[tuple, tuple[np.ndarray, np.ndarray]]:
    """Key tuple -> (coordinates [rows, axes], latency_s [rows]) of the measured rows of a table file (the
    reader's filled cells past a token budget are not measurements and are not in here)."""
    header: list[str] | None = None
    groups: dict[tuple, list[tuple[list[float], float]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cells = [c.strip() for c in line.split(",")]
        if header is None:
            header = cells
            continue
        row = dict(zip(header, cells))
        key = tuple(_key_value(row[k]) for k in keys)
        groups[key].append(([float(row[a]) for a in axes], float(row["latency_us"]) * 1e-6))
    return {k: (np.array([c for c, _ in v]), np.array([t for _, t in v])) for k, v in groups.items()}


def error_pct(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    return 100.0 * np.abs(np.asarray(predicted) - measured) / measured


# ---- (a) hold-out of whole grid lines -------------------------------------------------------------------
def holdout(grid: GridTable, coords: np.ndarray, fill: bool, rng: np.random.Generator
            ) -> tuple[np.ndarray, np.ndarray] | None:
    """(errors %, coordinates) of the measured points on the left-out grid lines; None where no axis has 3 values."""
    measured = np.zeros(grid.times_s.shape, dtype=bool)
    measured[tuple(np.searchsorted(p, coords[:, i]) for i, p in enumerate(grid.points))] = True
    dropped = []
    for p in grid.points:
        interior = np.arange(1, len(p) - 1)
        count = max(1, round(HOLDOUT_FRACTION * len(interior))) if len(p) >= 3 else 0
        dropped.append(np.sort(rng.choice(interior, count, replace=False)) if count else interior[:0])
    if not any(len(d) for d in dropped):
        return None
    kept = [np.setdiff1d(np.arange(len(p)), d) for p, d in zip(grid.points, dropped)]
    times = grid.times_s[np.ix_(*kept)].copy()
    if fill:  # re-apply the reader's rule past the token budget from the kept batches
        times[~measured[np.ix_(*kept)]] = np.nan
        _fill_first_axis(times, grid.points[0][kept[0]])
    sub = GridTable(grid.axes, tuple(p[k] for p, k in zip(grid.points, kept)), times, grid.smooth)
    on_line = np.zeros(measured.shape, dtype=bool)
    for axis, d in enumerate(dropped):
        index = [slice(None)] * measured.ndim
        index[axis] = d
        on_line[tuple(index)] = True
    where = np.nonzero(on_line & measured)
    at = np.stack([p[i] for p, i in zip(grid.points, where)], axis=1)
    return error_pct(sub.time_s(*at.T), grid.times_s[where]), at


# ---- (b) off-grid points of the full tables ---------------------------------------------------------------
def off_grid(grid: GridTable, compact: np.ndarray, full: np.ndarray, full_s: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(errors %, coordinates, inside the grid's range) of the full table's points the compact one lacks."""
    have = {tuple(c) for c in compact}
    new = np.array([tuple(c) not in have for c in full], dtype=bool)
    at = full[new]
    if not len(at):
        return np.zeros(0), at, np.zeros(0, dtype=bool)
    inside = np.all([(at[:, i] >= p[0]) & (at[:, i] <= p[-1]) for i, p in enumerate(grid.points)], axis=0)
    return error_pct(grid.time_s(*at.T), full_s[new]), at, inside


def collect(full_dir: Path) -> tuple[dict, dict, dict]:
    """Per (device, engine, family): hold-out results, off-grid results and counts (skipped points of keys the
    shipped table lacks; shipped grids without an axis of 3 values, which (a) cannot test)."""
    rng = np.random.default_rng(0)
    held: dict = defaultdict(list)
    off: dict = defaultdict(list)
    counts: dict = defaultdict(int)
    for device, engines in shipped_kernel_sets().items():
        for engine in engines:
            shipped = kernels_root() / device / engine
            tables = load_measured(str(shipped), device, engine).tables
            full_folder = full_dir / device / engine
            if not full_folder.is_dir():
                print(f"importing the full tables of {DEVICE_SYSTEM[device]} / {engine} ...", flush=True)
                import_tables(DEVICE_SYSTEM[device], engine, full_folder, full=True)
            for family in sorted(tables, key=list(FAMILIES).index):
                keys, axes, fill = FAMILIES[family]
                combo = (device, engine, family)
                compact = measured_rows(shipped / f"{family}.csv", keys, axes)
                for key in sorted(compact, key=str):
                    result = holdout(tables[family].grids[key], compact[key][0], fill, rng)
                    if result is None:
                        counts[(*combo, "untested grids")] += 1
                    else:
                        held[combo].append(result)
                full_file = full_folder / f"{family}.csv"
                full = measured_rows(full_file, keys, axes) if full_file.exists() else {}
                for key, (coords, times) in full.items():
                    if key not in compact:
                        counts[(*combo, "skipped points")] += len(times)
                    else:
                        off[combo].append(off_grid(tables[family].grids[key], compact[key][0], coords, times))
    return held, off, counts


# ---- report -------------------------------------------------------------------------------------------
def pool(results: list, inside: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(errors, coordinates) of a list of results; for (b) only the points inside (or outside) the grid's range."""
    if not results:
        return np.zeros(0), np.zeros((0, 1))
    pick = [np.ones(len(r[0]), dtype=bool) if inside is None else r[2] == inside for r in results]
    return (np.concatenate([r[0][m] for r, m in zip(results, pick)]),
            np.concatenate([r[1][m] for r, m in zip(results, pick)]))


def stat(e: np.ndarray, p: float = 50) -> str:
    return f"{np.percentile(e, p):.1f}" if len(e) else "–"


def row(e: np.ndarray) -> str:
    return f"{len(e)} | {stat(e)} | {stat(e, 90)}"


def worst_values(results: list, axes: tuple[str, ...], inside: bool | None, top: int = 3) -> str:
    """Per axis, the values with the largest median error (values with at least 10 points)."""
    errors, at = pool(results, inside)
    if not len(errors):
        return "no points"
    parts = []
    for i, axis in enumerate(axes):
        found = [(np.median(errors[at[:, i] == v]), v, int(np.sum(at[:, i] == v))) for v in np.unique(at[:, i])]
        found = sorted((f for f in found if f[2] >= 10), reverse=True)[:top]
        if found:
            parts.append(f"{axis} " + ", ".join(f"{v:g} ({m:.0f} %, n={n})" for m, v, n in found))
    return "; ".join(parts) or f"{len(errors)} points, fewer than 10 at any value"


def report(held: dict, off: dict, counts: dict) -> tuple[list[str], list[str], list[str], list[str]]:
    """(overall table, per device table, worst axis values, stdout summary)."""
    overall = ["| family | (a) n | (a) median % | (a) p90 % | (b) n | (b) median % | (b) p90 % "
               "| (b) inside the range: n / median / p90 % | (b) outside: n / median / p90 % | target met (a) / (b) |",
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    summary = [f"{'family':<18} {'(a) n':>7} {'median%':>8} {'p90%':>6} {'(b) n':>8} {'median%':>8} {'p90%':>6}"]
    worst = []
    for family, (_, axes, _) in FAMILIES.items():
        a = [r for c, rs in held.items() if c[2] == family for r in rs]
        b = [r for c, rs in off.items() if c[2] == family for r in rs]
        (ea, _), (eb, _), (ins, _), (out, _) = pool(a), pool(b), pool(b, True), pool(b, False)
        met = " / ".join("–" if not len(e) else "yes" if np.median(e) <= TARGET_MEDIAN_PCT else "**no**"
                         for e in (ea, eb))
        overall.append(f"| {family} | {row(ea)} | {row(eb)} | {row(ins).replace('|', '/')} "
                       f"| {row(out).replace('|', '/')} | {met} |")
        summary.append(f"{family:<18} {len(ea):>7} {stat(ea):>8} {stat(ea, 90):>6} {len(eb):>8} {stat(eb):>8} "
                       f"{stat(eb, 90):>6}")
        worst += [f"- {family} (a): {worst_values(a, axes, None)}",
                  f"- {family} (b) inside the range: {worst_values(b, axes, True)}",
                  f"- {family} (b) outside the range: {worst_values(b, axes, False)}"]
    per = ["| device | engine | family | (a) n | (a) median % | (a) p90 % | (a) untested grids | (b) n "
           "| (b) median % | (b) p90 % | (b) inside: n / median % | (b) outside: n / median % "
           "| (b) skipped points (keys not shipped) |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for combo in sorted(set(held) | set(off), key=lambda c: (c[0], c[1], list(FAMILIES).index(c[2]))):
        (ea, _), (eb, _) = pool(held.get(combo, [])), pool(off.get(combo, []))
        (ins, _), (out, _) = pool(off.get(combo, []), True), pool(off.get(combo, []), False)
        per.append(f"| {' | '.join(combo)} | {row(ea)} | {counts[(*combo, 'untested grids')]} | {row(eb)} "
                   f"| {len(ins)} / {stat(ins)} | {len(out)} / {stat(out)} | {counts[(*combo, 'skipped points')]} |")
    return overall, per, worst, summary


NOTES = """
Written after a run with aiconfigurator-core 0.12.0; the figures quoted here come from that run and from
looking at the tables by hand (the tables above are regenerated on each run, these notes are not).

- **Verdict.** Both checks meet the 5 % median target for every family. (b), the realistic question (how far
  off is the shipped compact table at a shape the package measured but the table left out): GEMM 3.8 %
  (4.2 % before the grid kept n, k = 51200),
  prefill attention 1.6 %, decode attention 2.1 %, MoE 1.0 %; the all-reduce, NCCL and MLA tables are shipped
  whole, so (b) has nothing to test there. (a) reads across two grid steps: 2.1 to 4.6 %; its tails (p90 10
  to 21 %) come from a few places, below.
- **The rule, and how it was chosen.** Until 2026-11-24 every table was read with a straight line in log(time)
  against log(size): exact where time follows a power law, wrong where the curve bends between two kept points
  (a flat launch floor that turns into linear or quadratic growth), and then (a) missed the target for prefill
  attention (6.0 %, p90 19.4 %) and decode attention (5.4 %, p90 27.5 %). Attention, MLA and the collectives
  are now read with a monotone cubic in log-log (PCHIP, llmsim/hardware/kernel_table.py), which follows a bend
  from the slopes either side and never overshoots a step; GEMM and MoE keep the straight line. The rule was
  chosen on a different split than the one judged here: (a) with numpy default_rng(1) instead of 0 (same 20 %
  of each axis's interior values), where the cubic took prefill attention from 6.0 to 3.1 % and decode from 5.4
  to 4.1 % (a floor + c x work normalisation, also tried there, reached only 4.5 and 4.7 %). The cubic also
  improved GEMM (4.3 -> 3.5 %) and MoE (4.9 -> 3.2 %) there, but made their (b) worse (GEMM 4.2 -> 4.5 %, p90
  20.1 -> 21.4 %; MoE p90 8.3 -> 9.3 %: their time is a staircase of tile and wave quantisation at the sizes the
  compact grid leaves out), so they kept the line; that decision was made after seeing (b). When the 4-bit
  expert tables came in (2026-11-24) MoE's line missed the target here (seed 0: 5.1 %) and on the seed-1
  split (5.1 %, p90 21.4 %), where the cubic gave 3.3 % (p90 18.7 %) with the same (b) median (1.1 %; p90 9.4
  -> 10.0 %); MoE now takes the cubic, chosen on seed 1 and (b), and GEMM alone keeps the line.
- **MoE.** Time against tokens is not a power law: it rises while more experts receive tokens, stays flat
  while reading every expert's weights dominates (H100, vLLM, top-1 of 128 experts of 5120 x 8192: from 128 to
  4096 tokens, 10.9 to 11.6 ms), then rises again once compute dominates. With the straight line, 4096 left
  out, the line from 1024 to 16384 cut across that last bend (39 % median); with 4 or 16 left out, across the
  first one (15 to 18 %); the cubic follows the bends from the slopes either side (the per-axis table
  below). In (b) the remaining gaps of the compact grid show the same thing at 2 tokens (5.5 %) and 1536 to
  2048 tokens (5 to 7 %): adding 2, 2048 and 8192 to COMPACT_TOKENS (all measured in the package) would close
  them.
- **Prefill attention.** Time moves from the launch floor to quadratic growth in isl and to linear growth in
  the batch; with the straight line (a) peaked at batch 256 (9 %) and isl 128, 256 and 1024 (8 %), the line
  cutting the corner of the bend across a left-out line. The cubic brings those to 3 to 5 % (worst: isl 128,
  5 %; batch 256 and 1, 4 %) and (b) from 2.1 to 1.6 %.
- **Decode attention and the L2 cache.** Time against keys has a step where the KV cache of the whole batch
  stops fitting in the GPU's L2 cache. Doubling the keys there multiplies the time by up to 7.5 on the L40S
  (at 64 -> 128 MB of KV; L2 96 MB), 4.3 on the RTX PRO 6000 (128 -> 256 MB; L2 128 MB), 2.4 to 2.8 on the
  B200, B300 and GB200 (64 -> 128 MB) and 2.3 to 2.4 on the H100 under vLLM and SGLang (32 -> 64 MB; L2 50
  MB), against a median of about 1.8 over all 2x steps; the A100 and H200 tables show no such step. The step
  lies on a diagonal of the grid (a fixed batch x keys), so a left-out line often crosses it: hence the p90
  of 21 % in (a) and the errors at keys 128 and 512 (8 and 7 % median; 11 and 8 % with the straight line). No
  smooth rule recovers a step from the points either side; the cubic at least never overshoots it. The L2
  explanation is read from where the steps fall, not checked against the benchmark's code; if it holds, the
  benchmark re-reads one layer's cache, and below the step the tables may be faster than a real forward pass,
  where each layer reads its own cache (a caveat for small decode batches on GPUs with a large L2).
- **Past the edges.** GEMMs with n or k of 32, 64 or 128 lie below the grid's smallest value (256), and the
  rule takes the time at 256: predicted / measured is 1.43 (k) and 1.22 (n) in the median on the A100, 1.52
  and 1.29 on the L40S, 1.12 to 1.17 on the H100 and B200 (pessimistic). Such shapes are real (a MoE router's
  n is the number of experts), and the package measures them: adding 32, 64 and 128 to COMPACT_NK would remove
  most of the outside-the-range error. Above the top, the proportional rule overestimates: decode at batch
  2048 from batch 1024 by 4 to 12 % (median per device), decode at keys 65536 where a slice stops at 32768 by
  3 to 24 % (the 37 % at batch 1 in the list above). GEMM n or k = 51200 read from 16384 in proportion was
  right in the median (+2 %) but scattered both ways (14.6 % median |error|, p90 74.8 %, 117,956 points; the
  B200's TensorRT-LLM nvfp4 GEMV at m = 4, n = 51200, k = 8192: 81 us read, 59 us measured); since 2026-11-28
  the compact grid keeps 51200 (COMPACT_NK), so those points are on the grid and a fused gate/up of a 70B model
  at TP 1 or 2 (n = 57344, 28672) interpolates between measured lines; (b) GEMM went from 4.1 / 19.1 % to
  3.8 / 16.9 %.
- **GEMM inside the range** is at 4.0 % median; its largest errors are at m just past a power of two (257,
  129, 65: 5 to 11 %): one extra row of tiles costs a step in time that a smooth line between 256 and 512
  cannot show.
- **Not tested.** Points of keys the shipped tables do not have (other dtypes, fp8 KV caches, windows, head
  counts, MoE shapes and parallel sizes; counted in the last column) are read by other rules (nearest head
  count scaled, the full-attention table for windows) that this check does not cover. (a) cannot test the 7
  shipped MoE grids with a single token count (the reader takes such an axis as its one point and the
  proportional rule above it).
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("kernel_tables.md"))
    parser.add_argument("--full-dir", type=Path, help="keep the full tables here (<device>/<engine>/, imported "
                        "where absent); default: a temporary folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        held, off, counts = collect(args.full_dir or Path(tmp))
    overall, per, worst, summary = report(held, off, counts)
    method = __doc__.split("\n\n")[3].split("error %")[0].strip()
    text = "\n".join([
        "# Kernel tables: how well the interpolation predicts points it was not given", "",
        "    PYTHONPATH=. python validation/kernel_tables.py", "",
        f"Written by that command (full tables: aiconfigurator-core {metadata.version('aiconfigurator-core')}); "
        "do not edit by hand.", "", method, "",
        f"error % = 100 |predicted - measured| / measured. **Target: median <= {TARGET_MEDIAN_PCT:g} %** per family.",
        "Leaving out whole grid lines (a) is stricter than leaving out random points: the neighbours of a left-out",
        "point along the left-out axis are gone too, so it is read across at least two grid steps. (b) predicts the",
        "points the compact grid never had, inside its range (interpolation) and outside (the stated rules past",
        "the edges: the smallest point's time below, proportional above). Filled cells past a token budget are",
        "not measurements and are never predicted; a grid with no axis of 3 values cannot be tested by (a).", "",
        "## Overall, per family (all devices and engines pooled)", "", *overall, "",
        "## Per device, engine and family", "", *per, "",
        "## Where the errors are: per axis, the values with the largest median error (at least 10 points)", "",
        *worst, "", "## Notes", "", NOTES.strip(), ""])
    args.out.write_text(text)
    print("\n".join(summary))
    print(f"target: median <= {TARGET_MEDIAN_PCT:g} %; wrote {args.out}")


if __name__ == "__main__":
    main()
