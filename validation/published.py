"""Compare llmsim's predictions with published measurements and write validation/published.md.

Input: shared/reference/published_measurements.csv next to the checkout (one row per published figure; see
the README next to it). The work is llmsim.validation.published; this script only parses arguments.

    PYTHONPATH=. python validation/published.py [--csv PATH] [--out PATH]

error_pct = 100 * (predicted - measured) / measured, on the metric the source reports.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from llmsim.validation.published import compare_published, default_csv_path, write_published_report

OUT_PATH = Path(__file__).with_name("published.md")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=default_csv_path(),
                        help="published_measurements.csv (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=OUT_PATH, help="markdown report (default: %(default)s)")
    args = parser.parse_args()
    if args.csv is None:
        parser.error("--csv: no shared/reference/published_measurements.csv found above the checkout; give it")
    comparison = compare_published(args.csv)
    write_published_report(comparison, args.out)
    prim = comparison.summary.get("all")
    print(f"{len(comparison.compared_row_ids)} rows simulated ({len(comparison.comparisons)} comparisons), "
          f"{len(comparison.skipped)} skipped; headline median |error| {prim.median_abs:.1f}%, p90 "
          f"{prim.p90_abs:.1f}%, mean signed {prim.mean_signed:+.1f}% -> {args.out}" if prim else "nothing simulated")


if __name__ == "__main__":
    main()
