"""One row of aiconfigurator-core's systems/silicon_sample.csv: its fields as llmsim.validation.serving reads them
(counts, ranks, clients) and what its source says (an InferenceX run, and the day it was measured)."""

from __future__ import annotations

import re

# InferenceX's sources in the file (llmsim.validation.serving's docstring)
_INFERENCEX_SOURCE = re.compile(r"db-dump/|source_file=\d{4}-\d\d-\d\d\.csv; model=")


def _is_one(value: str) -> bool:
    return value in ("", "0.0", "1.0", "0", "1")


def _count(value: str) -> int:
    return int(float(value or 1))


def _concurrency(row: dict[str, str]) -> int | None:
    """The run's client count: the aggregated rows' batch_size, else the source's `silicon_concurrency=`; with
    attention data parallelism (batch_size: per rank) the source's count, else batch_size x attention_dp_size."""
    found = re.search(r"silicon_concurrency=(\d+)", row.get("silicon_data_source", ""))
    if row["batch_size"] and _ranks(row, "") > 1:
        return int(found.group(1)) if found else _count(row["batch_size"]) * _ranks(row, "")
    if row["batch_size"]:
        return _count(row["batch_size"])
    return int(found.group(1)) if found else None


def _ranks(row: dict[str, str], prefix: str) -> int:
    """The attention data-parallel ranks of one phase (prefix "", "prefill_" or "decode_"): 1 where the field
    is empty, 0 or 1."""
    value = row.get(f"{prefix}attention_dp_size", "")
    return 1 if _is_one(value) else _count(value)


def _from_inferencex(row: dict[str, str]) -> bool:
    """Whether a row is an InferenceX run (its source: llmsim.validation.serving's docstring)."""
    return bool(_INFERENCEX_SOURCE.match(row.get("silicon_data_source", "")))


def _measured_on(row: dict[str, str]) -> str:
    """The date a row was measured (YYYY-MM-DD), from its source: db-dump's `measured=`, or the dated CSV it came
    from; "" where neither is stated."""
    source = row.get("silicon_data_source", "")
    found = re.search(r"measured=(\d{4}-\d\d-\d\d)", source) or re.search(r"source_file=(\d{4}-\d\d-\d\d)\.csv", source)
    return found.group(1) if found else ""
