"""Compare llmsim's predictions with published measurements; write validation/published.md and the chart
validation/published_vs_measured.png.

Input: shared/reference/published_measurements.csv next to the checkout (one row per published figure; see
the README next to it). The work is llmsim.validation.published; this script only parses arguments.

    PYTHONPATH=. python validation/published.py [--csv PATH] [--out PATH] [--plot PATH]

Each row is simulated with the llmsim engine of the framework that produced it (llmsim.validation.published
.mapping.ENGINES), from that engine's measured kernel tables where they cover it.

error_pct = 100 * (predicted - measured) / measured, on the metric the source reports.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from llmsim.validation.published import compare_published, default_csv_path, plot_published, write_published_report

OUT_PATH = Path(__file__).with_name("published.md")
PLOT_PATH = Path(__file__).with_name("published_vs_measured.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=default_csv_path(),
                        help="published_measurements.csv (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=OUT_PATH, help="markdown report (default: %(default)s)")
    parser.add_argument("--plot", type=Path, default=PLOT_PATH,
                        help="predicted-vs-measured chart, PNG (default: %(default)s)")
    args = parser.parse_args()
    if args.csv is None:
        parser.error("--csv: no shared/reference/published_measurements.csv found above the checkout; give it")
    comparison = compare_published(args.csv)
    plot_published(comparison, args.plot)
    write_published_report(comparison, args.out, plot=os.path.relpath(args.plot, args.out.resolve().parent))
    prim = comparison.summary.get("all")
    print(f"{len(comparison.compared_row_ids)} rows simulated ({len(comparison.comparisons)} comparisons), "
          f"{len(comparison.skipped)} skipped; headline median |error| {prim.median_abs:.1f}%, p90 "
          f"{prim.p90_abs:.1f}%, mean signed {prim.mean_signed:+.1f}% -> {args.out}" if prim else "nothing simulated")


if __name__ == "__main__":
    main()
