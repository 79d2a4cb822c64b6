"""aiconfigurator's own estimate of each measured serving run, for comparison with llmsim's (validation/serving.py).

Runs in an environment with NVIDIA's aiconfigurator (its CLI package, not only aiconfigurator-core), apart from
llmsim, and writes one CSV row per run: id, ttft_ms, tpot_ms, or the error aiconfigurator raised.

    python -m venv /tmp/aic && /tmp/aic/bin/pip install aiconfigurator==0.12.0
    /tmp/aic/bin/python validation/aiconfigurator_estimates.py --ids ROWS.json --out FILE.csv

Each row is estimated as aiconfigurator's own accuracy tooling does (tools/accuracy_regression_testing/
predict_silicon_sample.py in ai-dynamo/aiconfigurator: `cli_estimate` with the row's model, system, backend,
mode, lengths, quantisation, batch and parallel fields), except that the engine's database is always the one
aiconfigurator serves (`backend_version=None`), the same tables llmsim's importer reads. --ids: a JSON list of
row ids, or validation/serving.py's --rows-json output (its rows' "id"), to estimate only those rows.
--config-root DIR: a model whose DIR/<model_path>/config.json exists is read from there (the gated Meta Llama
checkpoints, whose configs aiconfigurator cannot download without a Hugging Face token; llmsim's shipped copies:
model_configs/llama-3.1-8b.json and llama-3.1-70b.json saved as config.json under DIR/meta-llama/<name>/).
aiconfigurator's estimates are not validation of llmsim: some of its factors are calibrated to measured runs.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import importlib.resources
import io
import json
import re
import time
from pathlib import Path

PARALLEL = ("tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")
DISAGG = tuple(f"{pool}_{field}" for pool in ("prefill", "decode") for field in (*PARALLEL, "batch_size",
                                                                                 "num_workers"))


def estimate_args(row: dict[str, str], config_root: Path | None = None) -> dict[str, object]:
    """cli_estimate's arguments for one silicon_sample.csv row."""
    fields = ("batch_size", *PARALLEL) if row["mode"] == "agg" else DISAGG
    local = None if config_root is None else config_root / row["model_path"]
    model_path = str(local) if local is not None and (local / "config.json").is_file() else row["model_path"]
    return dict(model_path=model_path, system_name=row["system"], mode=row["mode"],
                backend_name=row["backend"], backend_version=None, isl=int(row["isl"]), osl=int(row["osl"]),
                gemm_quant_mode=row["gemm_quant_mode"] or None, moe_quant_mode=row["moe_quant_mode"] or None,
                **{field: int(row[field]) for field in fields if row.get(field)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", type=Path, help="JSON: row ids, or serving.py --rows-json output")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--config-root", type=Path, help="local config.json folders by model path (see above)")
    args = parser.parse_args()
    from aiconfigurator.cli.api import cli_estimate

    sample = importlib.resources.files("aiconfigurator_core") / "systems" / "silicon_sample.csv"
    with sample.open(newline="") as f:
        rows = list(csv.DictReader(f))
    wanted = None
    if args.ids is not None:
        listed = json.loads(args.ids.read_text())
        wanted = {item["id"] if isinstance(item, dict) else item for item in listed}
    with args.out.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["id", "ttft_ms", "tpot_ms", "error"])
        for row in rows:
            if wanted is not None and row["id"] not in wanted:
                continue
            start = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                try:
                    result = cli_estimate(**estimate_args(row, args.config_root))
                    record = [row["id"], f"{result.ttft:.6g}", f"{result.tpot:.6g}", ""]
                except Exception as exc:  # any refusal is recorded, not fatal
                    why = str(exc).replace(f"{args.config_root}/", "") if args.config_root else str(exc)
                    why = re.sub(r"\S*/site-packages/", "", why)  # no path of this machine's
                    record = [row["id"], "", "", " ".join(why.split())[:200]]
            out.writerow(record)
            f.flush()
            print(f"{row['id']}: {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
