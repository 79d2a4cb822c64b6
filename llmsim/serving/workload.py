"""Serving workloads: request lengths and arrival times, reproducible from a seed.

Lengths (prompt_len, gen_len): an integer (every request the same); a list or array (one per request);
or a distribution written "uniform:LOW:HIGH", "normal:MEAN:STD" or "lognormal:MEAN:STD" (MEAN and STD
of the lengths themselves), drawn per request, rounded and clipped to at least 1. A CSV of measured
pairs (a ShareGPT-style trace) gives both: columns prompt_len and gen_len (or input_len/output_len),
taken in order and repeated as needed.

Arrivals (open loop, request_rate requests per second): "poisson" (exponential gaps), "constant" (equal
gaps) or "gamma" with a burstiness factor (shape = burstiness, mean gap 1/rate: 1 is Poisson, below 1
burstier), as vLLM's benchmark_serving draws them. A closed loop (concurrency=c) has no arrival times:
c clients each send their next request when the previous one finishes.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import OptionError, check_choice, check_positive, warn_assumption

ARRIVALS = ("poisson", "constant", "gamma")
DISTRIBUTIONS = ("uniform", "normal", "lognormal")

MAX_LENGTH = 100_000_000  # tokens: above any model's context (each is checked against it after the draw)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def draw_lengths(field: str, spec: Any, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` lengths (integers >= 1) from an integer, a sequence or a distribution string."""
    if isinstance(spec, bool):
        raise OptionError(f"{field}={spec!r} must be an integer, a list of integers or 'uniform:LOW:HIGH', "
                          f"'normal:MEAN:STD', 'lognormal:MEAN:STD'")
    if isinstance(spec, (int, np.integer)):
        if spec < 1 or spec > MAX_LENGTH:
            raise OptionError(f"{field}={spec} must be >= 1 and at most {MAX_LENGTH:,} tokens")
        return np.full(count, int(spec), dtype=np.int64)
    if isinstance(spec, str):
        return _from_distribution(field, spec, count, rng)
    values = np.asarray(spec)
    if values.ndim != 1 or values.size == 0 or not np.issubdtype(values.dtype, np.number):
        raise OptionError(f"{field} must be an integer, a non-empty list of integers or a distribution string")
    if not np.all(np.isfinite(values)) or np.any(values != np.round(values)) or np.any(values < 1) \
            or np.any(values > MAX_LENGTH):
        raise OptionError(f"{field}: every length must be a whole number >= 1 and at most {MAX_LENGTH:,} tokens")
    return np.resize(values.astype(np.int64), count)


def _from_distribution(field: str, spec: str, count: int, rng: np.random.Generator) -> np.ndarray:
    if spec.strip().isdecimal():  # '512': a length written as text (as the CLI reads it), checked as the integer
        return draw_lengths(field, int(spec), count, rng)
    if ":" not in spec and _is_number(spec):  # '12.5' or '-3': a number, not a distribution's name
        raise OptionError(f"{field}={spec!r} is not a whole number of tokens >= 1: give an integer, or a distribution "
                          f"'uniform:LOW:HIGH', 'normal:MEAN:STD' or 'lognormal:MEAN:STD'")
    parts = spec.split(":")
    if parts[0] not in DISTRIBUTIONS:  # (a name, or nothing: say that a whole number of tokens is one too)
        raise OptionError(f"{field}={spec!r} is neither a whole number of tokens >= 1 nor a distribution: give an "
                          f"integer, or 'uniform:LOW:HIGH', 'normal:MEAN:STD' or 'lognormal:MEAN:STD'")
    try:
        a, b = (float(x) for x in parts[1:])
    except ValueError:
        raise OptionError(f"{field}={spec!r}: write {parts[0]}:A:B with two numbers") from None
    if not (np.isfinite(a) and np.isfinite(b)) or a <= 0 or b < 0 or max(a, b) > MAX_LENGTH:
        raise OptionError(f"{field}={spec!r}: both numbers must be finite, the first > 0, the second >= 0, both at "
                          f"most {MAX_LENGTH:,} tokens")
    if parts[0] == "uniform":
        if b < a:
            raise OptionError(f"{field}={spec!r}: HIGH must be >= LOW")
        values = rng.uniform(a, b + 1, count)  # integers LOW..HIGH equally likely after flooring
        return np.maximum(np.floor(values), 1).astype(np.int64)
    if parts[0] == "normal":
        values = rng.normal(a, b, count)
    else:  # lognormal with the given mean and standard deviation of the lengths
        sigma2 = np.log1p((b / a) ** 2)
        values = rng.lognormal(np.log(a) - sigma2 / 2, np.sqrt(sigma2), count)
    lengths = np.maximum(np.round(values), 1).astype(np.int64)
    raised = float(np.mean(np.round(values) < 1))
    if raised > 0.01:  # a normal wider than its mean: the draws below 1 token become 1, and the mean moves
        warn_assumption(f"{field}={spec!r}: {raised:.0%} of the draws fell below 1 token and were raised to 1, so "
                        f"the mean length is {lengths.mean():.0f}, not {a:g}; narrow the spread or use lognormal")
    return lengths


def lengths_from_csv(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """(prompt_len, gen_len) of every row of a CSV of measured pairs, in order. Its header names one pair of
    columns, prompt_len and gen_len or input_len and output_len (other columns are left alone); a header that
    names a column twice or both pairs, or a row with more fields than the header, is refused (which to read
    would be a guess)."""
    path = Path(path)
    if not path.is_file():
        raise OptionError(f"lengths_csv={str(path)!r} is not a file")
    try:
        # utf-8-sig: a byte-order mark (spreadsheets write one) is not part of the first column's name
        with path.open(newline="", encoding="utf-8-sig") as f:
            table = list(csv.reader(f, skipinitialspace=True))
    except UnicodeDecodeError:
        raise OptionError(f"lengths_csv={str(path)!r} is not a UTF-8 text CSV") from None
    table = [row for row in table if row]  # blank lines
    header = [name.strip() for name in table[0]] if table else []
    if len(table) < 2:
        raise OptionError(f"lengths_csv={str(path)!r} has no rows")
    twice = sorted({name for name in header if header.count(name) > 1 and name})
    if twice:
        raise OptionError(f"lengths_csv={str(path)!r} names the column {twice[0]!r} twice; name each column once")
    pairs = [pair for pair in (("prompt_len", "gen_len"), ("input_len", "output_len")) if set(pair) <= set(header)]
    if not pairs:
        raise OptionError(f"lengths_csv={str(path)!r} needs columns prompt_len and gen_len (or input_len and "
                          f"output_len); it has {sorted(header)}")
    if len(pairs) == 2:
        raise OptionError(f"lengths_csv={str(path)!r} has both prompt_len/gen_len and input_len/output_len: keep "
                          "one pair")
    prompt_col, gen_col = pairs[0]
    at_prompt, at_gen = header.index(prompt_col), header.index(gen_col)
    for line, row in enumerate(table[1:], start=2):
        if len(row) > len(header) or len(row) <= max(at_prompt, at_gen):
            raise OptionError(f"lengths_csv={str(path)!r} line {line} has {len(row)} fields, the header "
                              f"{len(header)}")
    columns: tuple[list[int], list[int]] = ([], [])
    for line, row in enumerate(table[1:], start=2):  # the first bad length named with its line (of the non-blank)
        for name, at, out in ((prompt_col, at_prompt, columns[0]), (gen_col, at_gen, columns[1])):
            try:
                value = int(row[at])
            except ValueError:
                raise OptionError(f"lengths_csv={str(path)!r} line {line}: {name}={row[at].strip()!r} is not a whole "
                                  "number of tokens") from None
            if value < 1:
                raise OptionError(f"lengths_csv={str(path)!r} line {line}: {name}={value} must be >= 1")
            out.append(value)
    return np.array(columns[0]), np.array(columns[1])


MIN_REQUEST_RATE = 1e-5  # requests per second: about one a day


def arrival_times(request_rate: float, count: int, arrival: str, burstiness: float,
                  rng: np.random.Generator) -> np.ndarray:
    """Arrival times in seconds of `count` requests at `request_rate` per second, the first at 0."""
    check_choice("arrival", arrival, ARRIVALS)
    request_rate = check_positive("request_rate", request_rate, "requests per second")
    if request_rate < MIN_REQUEST_RATE:  # arrivals seconds apart by 1e300 lose every step's time to rounding
        raise OptionError(f"request_rate={request_rate!r} must be at least {MIN_REQUEST_RATE:g} requests per second "
                          "(one a day or so; slower, the arrival times swallow the steps' in float rounding)")
    if arrival == "constant":
        gaps = np.full(count, 1.0 / request_rate)
    elif arrival == "poisson":
        gaps = rng.exponential(1.0 / request_rate, count)
    else:
        burstiness = check_positive("burstiness", burstiness, "gamma shape (1 is Poisson)")
        gaps = rng.gamma(burstiness, 1.0 / (request_rate * burstiness), count)
    gaps[0] = 0.0
    return np.cumsum(gaps)
