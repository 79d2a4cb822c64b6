"""whatif(): one workload under several choices side by side (fusion, attention kernel, overheads, engine,
dtypes, parallelism: any simulate() option), each row's TTFT and TPOT, its speedup over the baseline and
the bytes it saves.

Rows: the BASELINE runs the first value of every varied option; then each other value of each option,
ONE AT A TIME, with the other varied options at their first value (so a row's speedup is that choice
alone). product=True runs the cross product of all values instead (every combination, first = baseline).
Options not varied are the engine's defaults or the fixed ones given; a varied option is passed
explicitly in every row, so varying `engine` together with `fusion` compares engines at the same fusion.
fusion_savings() is the special case vary={"fusion": ["none", "elementwise", "full"]}, per phase.
"""

from __future__ import annotations

import itertools
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_serializer

from ..errors import OptionError, choice_error


class WhatIfRow(BaseModel):
    """One choice: its options, times, speedups over the baseline (>1: faster) and bytes saved."""

    model_config = ConfigDict(frozen=True)
    choice: dict[str, Any]  # the varied options' values in this row
    label: str  # "baseline", or what differs from the baseline ("fusion=full")
    ttft_s: float
    tpot_s: float
    e2e_s: float
    throughput_tokens_per_s: float
    ttft_speedup: float  # baseline TTFT / this TTFT
    tpot_speedup: float  # baseline TPOT / this TPOT (1 when gen_len = 1)
    e2e_speedup: float
    prefill_bytes_saved: float  # baseline prefill bytes - this row's, one GPU's (negative: more traffic)
    decode_bytes_saved_per_step: float  # the same per decode step, averaged over the steps
    fits: bool  # whether the footprint fits the device's memory
    table_share: float = 0.0  # share of the run's time (prefill and decode ops) timed from measured kernel tables
    table_share_decode: float = 0.0  # the same of the decode steps alone

    @field_validator("tpot_s", "decode_bytes_saved_per_step", mode="before")
    @classmethod
    def _null_is_zero(cls, value: Any) -> Any:
        return 0.0 if value is None else value  # read back from JSON (gen_len = 1: no decode step)

    @field_validator("tpot_speedup", mode="before")
    @classmethod
    def _null_is_one(cls, value: Any) -> Any:
        return 1.0 if value is None else value


_SPLITS = ("tensor_parallel", "pipeline_parallel", "expert_parallel", "data_parallel")  # options that add GPUs

# the figures of a decode step: with gen_len = 1 there is none, and JSON says null (0 and 1 as attributes)
_DECODE_FIELDS = ("tpot_s", "tpot_speedup", "decode_bytes_saved_per_step")


class WhatIfResult(BaseModel):
    """whatif()'s table: the baseline first, then one row per other choice."""

    model_config = ConfigDict(frozen=True)
    model: str
    hardware: str
    batch_size: int
    prompt_len: int
    gen_len: int
    vary: dict[str, list[Any]]
    product: bool
    rows: list[WhatIfRow]

    @property
    def baseline(self) -> WhatIfRow:
        return self.rows[0]

    @model_serializer(mode="wrap")
    def _no_decode_is_null(self, handler: Any) -> Any:
        data = handler(self)
        if self.gen_len == 1 and isinstance(data, dict):
            for row in data.get("rows", []):
                row.update(dict.fromkeys(_DECODE_FIELDS, None))
        return data

    def __str__(self) -> str:
        from .text import NO_DECODE_NOTE
        from .text import fmt_s as _fmt_s

        how = "every combination" if self.product else "one choice at a time against the baseline"
        base = ", ".join(f"{k}={v[0]}" for k, v in self.vary.items())
        lines = [f"{self.model} on {self.hardware}: batch {self.batch_size}, prompt {self.prompt_len}, generate "
                 f"{self.gen_len}; {how} (baseline {base})",
                 f"  {'choice':<34} {'TTFT':>10} {'TPOT':>10} {'x TTFT':>7} {'x TPOT':>7} {'x e2e':>7} "
                 f"{'prefill MB saved':>16} {'MB saved/step':>14}"]
        decodes = self.gen_len > 1  # generate 1: the prefill samples the only token, no decode step to compare
        for row in self.rows:
            tpot, x_tpot, saved = ((_fmt_s(row.tpot_s), f"{row.tpot_speedup:.2f}",
                                    f"{row.decode_bytes_saved_per_step / 1e6:.2f}") if decodes else ("n/a",) * 3)
            lines.append(f"  {row.label:<34} {_fmt_s(row.ttft_s):>10} {tpot:>10} "
                         f"{row.ttft_speedup:>7.2f} {x_tpot:>7} {row.e2e_speedup:>7.2f} "
                         f"{row.prefill_bytes_saved / 1e6:>16.1f} {saved:>14}"
                         + ("" if row.fits else "  (does not fit)"))
        if not decodes:
            lines.append(f"  {NO_DECODE_NOTE}")
        base_share = self.rows[0].table_share
        base_decode = self.rows[0].table_share_decode
        mixed = [row for row in self.rows[1:] if abs(row.table_share - base_share) > TABLE_SHARE_GAP
                 or abs(row.table_share_decode - base_decode) > TABLE_SHARE_GAP]
        if mixed:  # a choice that loses (or gains) its measured tables changes the timing source, not only the choice
            shares = ", ".join(f"{row.label} {row.table_share:.0%} / {row.table_share_decode:.0%}" for row in mixed)
            lines.append(f"  timed from measured tables (whole run / decode): baseline {base_share:.0%} / "
                         f"{base_decode:.0%}, {shares}; an op off the tables runs at the hardware file's achievable "
                         "fraction, often faster than its measured kernel: those rows compare timing sources as well "
                         "as the choice")
        split = [k for k in _SPLITS if k in self.vary]
        if split:  # the bytes are one GPU's: a split spreads the traffic, it does not remove it
            lines.append(f"  MB saved are one GPU's: varying {', '.join(split)} spreads the traffic over more GPUs "
                         "rather than removing it")
        return "\n".join(lines)

    def to_pandas(self) -> Any:
        """One row per choice: the varied options as columns, then the WhatIfRow fields."""
        from ..frames import data_frame

        return data_frame([{**row.choice, **row.model_dump(exclude={"choice"})} for row in self.rows])


def whatif(model: Any, hardware: Any, vary: dict[str, Any], batch_size: int = 1, prompt_len: int = 512,
           gen_len: int = 128, product: bool = False, **options: Any) -> WhatIfResult:
    """Simulate one workload under each choice of `vary` (option name -> its values, the first the
    baseline's), side by side; `options` are fixed in every row. See the module docstring for the rows."""
    from .simulate import simulate

    choices = _check_vary(vary, options)
    names = list(choices)
    if product:
        combos = [dict(zip(names, values)) for values in itertools.product(*choices.values())]
    else:
        base = {k: v[0] for k, v in choices.items()}
        combos = [base] + [{**base, k: value} for k, values in choices.items() for value in values[1:]]
    results = [simulate(model, hardware, batch_size, prompt_len, gen_len, **combo, **options)
               for combo in combos]
    base_result = results[0]
    rows = []
    for i, (combo, r) in enumerate(zip(combos, results)):
        differs = [f"{k}={v}" for k, v in combo.items() if v != combos[0][k]]
        label = "baseline" if i == 0 else ", ".join(differs) or "baseline"
        rows.append(WhatIfRow(
            choice=combo, label=label, ttft_s=r.ttft_s, tpot_s=r.tpot_s, e2e_s=r.e2e_s,
            throughput_tokens_per_s=r.throughput_tokens_per_s,
            ttft_speedup=_ratio(base_result.ttft_s, r.ttft_s), tpot_speedup=_ratio(base_result.tpot_s, r.tpot_s),
            e2e_speedup=_ratio(base_result.e2e_s, r.e2e_s),
            prefill_bytes_saved=base_result.prefill.bytes - r.prefill.bytes,
            decode_bytes_saved_per_step=_per_step(base_result.decode) - _per_step(r.decode),
            fits=r.memory.fits, table_share=_table_share(r.prefill, r.decode),
            table_share_decode=_table_share(r.decode)))
    return WhatIfResult(model=base_result.model, hardware=base_result.hardware, batch_size=base_result.batch_size,
                        prompt_len=base_result.prompt_len, gen_len=base_result.gen_len, vary=choices,
                        product=bool(product), rows=rows)


TABLE_SHARE_GAP = 0.1  # a row whose share timed from tables differs from the baseline's by more is flagged


def _table_share(*phases: Any) -> float:
    """The share of the phases' op time (a decode: all its steps) that measured tables timed."""
    ops = [op for phase in phases for op in phase.ops]
    total = sum(op.time_s for op in ops)
    return sum(op.time_s for op in ops if op.source != "roofline") / total if total > 0 else 0.0


def _ratio(base: float, value: float) -> float:
    return base / value if value > 0 else 1.0


def _per_step(phase: Any) -> float:
    return phase.bytes / phase.steps if phase.steps else 0.0


# simulate() keywords besides the cost and execution options
_SIMULATE_KEYS = ("engine", "pipeline_parallel", "num_microbatches", "data_parallel")


def _check_vary(vary: Any, fixed: dict[str, Any]) -> dict[str, list[Any]]:
    """vary as {option: [values...]}: known simulate() options, each a non-empty list without repeats, none
    also given fixed."""
    from ..cost.workload import CostOptions
    from ..timing.roofline import ExecutionOptions

    if not isinstance(vary, dict) or not vary:
        raise OptionError(f"vary={vary!r} must be a non-empty dict of option name -> list of values, e.g. "
                          "{'fusion': ['none', 'full']}")
    allowed = (set(CostOptions.model_fields) | set(ExecutionOptions.model_fields) | set(_SIMULATE_KEYS)) - {"tables"}
    out: dict[str, list[Any]] = {}
    for name, values in vary.items():
        if name not in allowed:
            raise choice_error("vary", name, allowed)
        if name in fixed:
            raise OptionError(f"{name}={fixed[name]!r} is both fixed and varied; give it in vary only")
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise OptionError(f"vary[{name!r}]={values!r} must be a list of values, e.g. [{values!r}, ...]")
        values = list(values)
        if not values:
            raise OptionError(f"vary[{name!r}] is empty: give at least one value (the first is the baseline)")
        if len({repr(v) for v in values}) != len(values):
            raise OptionError(f"vary[{name!r}]={values!r} repeats a value; give each once")
        out[name] = values
    return out
