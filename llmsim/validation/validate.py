"""validate(): run the real transformers model, time its phases, and compare with llmsim's prediction.

Each case is a prefill of seq_len tokens per sequence, or one decode step with kv_len tokens cached, timed
with the torch threads the hardware file was calibrated with; on one CPU thread by the process's CPU time
(the wall time recorded beside it), as calibrate times its micro-benchmarks.
The prediction uses the cost options that match what eager transformers executes:
attention="flash" when SDPA runs a fused kernel (on a CPU aten::_scaled_dot_product_flash_attention_for_cpu,
which skips fully masked causal blocks), "sdpa_math" when it falls back to its math kernel (MLA: query/key
and value head dims differ), "math" when transformers runs its eager attention (gpt-oss: sinks); the kernel is
seen in a short profiled forward of the built model, not assumed,
logits="all" (a plain forward computes every position's logits), mla="expand" (transformers caches
the MLA latent and re-expands it every step), fusion="eager" (every PyTorch op its own kernel, as
transformers runs them), kv_cache="concat", and weight, activation and KV dtypes equal to the run dtype.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..analysis.simulate import resolve
from ..errors import LlmsimError
from ..hardware.spec import HardwareSpec
from ..timing.phases import decode_totals, prefill_totals
from ..timing.roofline import BOUNDS, Roofline
from ._device import (
    BUSY_WAIT_SHARE,
    check_device,
    cpu_clock,
    device_name,
    is_oom,
    load_average,
    median,
    release_device_memory,
    spread,
    synchronize,
    torch_threads,
    versions,
    waited_share,
)
from .hf_model import (
    attention_kernel,
    build_model,
    config_dict,
    prepare_config,
    profile_split,
    time_decode,
    time_prefill,
)
from .report import (
    OP_CLASSES,
    ValidationReport,
    ValidationRow,
    append_result,
    case_key,
    read_results,
    setup_fingerprint,
)
from .speed_check import drift_warning, machine_speed

_KIND_CLASS = {"matmul": "matmul", "attention": "attention", "norm": "elementwise", "elementwise": "elementwise",
               "cache": "elementwise", "embedding": "elementwise", "routing": "elementwise", "communication": "other"}
COST_OPTIONS = {"attention": "flash", "logits": "all", "mla": "expand", "fusion": "eager", "kv_cache": "concat"}


def predict_case(data: dict[str, Any], hardware: HardwareSpec, phase: str, batch_size: int, length: int,
                 dtype: str, overhead: str, name: str = "", attention: str = "flash") -> dict[str, Any]:
    """llmsim's prediction of one case: time, FLOPs, bytes, bound and the time per op class."""
    from ..models.loading import load_model

    spec = load_model(data, name=name or None)
    tokens = length if phase == "prefill" else length + 1
    if tokens > spec.max_position_embeddings:
        raise LlmsimError(f"{phase} of {tokens} positions exceeds the model's context of "
                          f"{spec.max_position_embeddings} (max_position_embeddings)")
    options = {**COST_OPTIONS, "attention": attention}
    spec, hw, cost, execution = resolve(spec, hardware, overhead=overhead, weight_dtype=dtype,
                                        activation_dtype=dtype, kv_dtype=dtype, **options)
    roofline = Roofline(hw, execution)
    if phase == "prefill":
        totals = prefill_totals(spec, roofline, cost, batch_size, length)
    else:
        totals = decode_totals(spec, roofline, cost, batch_size, length, 1)
    parts = {b: float(totals.total(f"{b}_s")) for b in BOUNDS}
    split = dict.fromkeys(OP_CLASSES, 0.0)
    for i, op in enumerate(totals.ops):
        split[_KIND_CLASS.get(op.kind, "other")] += float(totals.per_op["time_s"][i])
    return {
        "time_s": float(totals.total("time_s")),
        "flops": float(totals.total("matmul_flops") + totals.total("vector_flops")),
        "bytes": float(totals.total("bytes")),
        "bound": max(parts, key=lambda b: parts[b]),
        "split": split,
    }


# calibrate writes description = f"{device_name(device)}, calibrated by llmsim ({threads} threads, ...)" (calibrate.py)
_CALIBRATED = re.compile(r"^(?P<device>.+?), calibrated by llmsim\b")
_CALIBRATED_THREADS = re.compile(r"calibrated by llmsim \((?P<threads>\d+) threads\b")
# a case whose repeats spread more than this ((p90 - p10) / median) was measured on a machine too busy to time
# it: on the quiet 2-core machine of validation/README.md the median spread was 1.5 % (p90 11.7 %)
NOISY_SPREAD = 0.25
# more than this share of noisy cases makes the whole run suspect (a report-level warning)
NOISY_SHARE = 0.2


def recorded_device(hardware: HardwareSpec) -> str | None:
    """The device a calibrated hardware file was measured on (e.g. "cpu: Intel(R) Xeon(R) Processor"), read
    from the description calibrate writes; None where the file records none (a datasheet, a hand-written file)."""
    match = _CALIBRATED.match(hardware.description.strip())
    return match.group("device").strip() if match else None


def recorded_threads(hardware: HardwareSpec) -> int | None:
    """The torch thread count a calibrated hardware file was measured with, read from the description
    calibrate writes; None where the file records none."""
    match = _CALIBRATED_THREADS.search(hardware.description)
    return int(match.group("threads")) if match else None


def run_threads(hardware: HardwareSpec, device: str, threads: int | None) -> tuple[int | None, str | None]:
    """(torch threads to measure with, a warning or None). A CPU run measures with the thread count the
    hardware file was calibrated with unless `threads` is given: a prediction from 1-thread rates compared
    with a 2-thread run (torch's default on 2 cores) is off by the parallel speed-up, not by llmsim. A given
    count that differs from the file's is kept and warned about."""
    calibrated = recorded_threads(hardware) if device == "cpu" else None
    if threads is None:
        return calibrated, None
    if calibrated is not None and threads != calibrated:
        where = f"hardware {hardware.name!r}" + (f" ({hardware.path})" if hardware.path else "")
        return threads, (f"warning: {where} was calibrated with {calibrated} torch threads but this run uses "
                         f"{threads}: the predictions describe {calibrated}; give --threads {calibrated} (or leave it "
                         f"out) to compare like with like")
    return threads, None


def noisy_cases_warning(rows: Sequence[ValidationRow], threshold: float = NOISY_SPREAD,
                        share: float = NOISY_SHARE) -> str | None:
    """A one-line warning when more than `share` of the measured cases spread more than `threshold` between
    their repeats ((p90 - p10) / median of the timings), or, timed on the wall clock, waited for a core more
    than BUSY_WAIT_SHARE of the time: the machine was too busy to time them, and their errors say more about
    the other work than about llmsim. None otherwise."""
    timed = [r for r in rows if r.ok and r.spread is not None and len(r.timings_s) >= 2]

    def waited(r: ValidationRow) -> float:
        return waited_share(r.wall_s, r.cpu_s, r.threads or 1) if r.wall_s and r.cpu_s else 0.0

    spread = [r for r in timed if r.spread > threshold]  # type: ignore[operator]
    waiting = [r for r in timed if r.clock == "wall" and waited(r) > BUSY_WAIT_SHARE]
    flagged = {id(r) for r in (*spread, *waiting)}
    noisy = [r for r in timed if id(r) in flagged]
    if not timed or len(noisy) <= share * len(timed):
        return None
    loads = [r.load_average for r in noisy if r.load_average is not None]
    load = f", 1-minute load average up to {max(loads):g}" if loads else ""
    why = [f"{len(spread)} spread more than {threshold:.0%} between repeats ((p90 - p10) / median)"] if spread else []
    if waiting:  # each reason counted on its own: a case can be flagged by either
        why.append(f"{len(waiting)} waited for a core more than {BUSY_WAIT_SHARE:.0%} of the wall time (up to "
                   f"{max(waited(r) for r in waiting):.0%})")
    return (f"warning: {len(noisy)} of {len(timed)} cases were noisy ({'; '.join(why)}){load}: the machine was too "
            "busy to time them and their errors are not llmsim's; rerun on a quieter machine")


def hardware_mismatch_warning(hardware: HardwareSpec, running: str, device: str = "") -> str | None:
    """A one-line warning when the hardware file was not measured on the running device `running` (as
    device_name() gives it), or records no device at all; None when they match. device: "cpu" or "cuda", the
    kind of device the run is on (a GPU file for a CPU run, or the reverse, is said first)."""
    recorded = recorded_device(hardware)
    where = f"hardware {hardware.name!r}" + (f" ({hardware.path})" if hardware.path else "")
    kind = {"cpu": "cpu", "cuda": "gpu"}.get(device)
    if kind is not None and hardware.device_type != kind:
        return (f"warning: {where} describes a {hardware.device_type.upper()} but this run is on the "
                f"{kind.upper()} ({running!r}): the predictions are for another device; give this machine's "
                "hardware file (`llmsim calibrate --out ...`)")
    if recorded is None:
        return (f"warning: {where} records no measured device (not written by `llmsim calibrate`); this run is on "
                f"{running!r}: expect large errors unless it describes this machine")
    if recorded != running:
        return (f"warning: {where} was calibrated on {recorded!r} but this run is on {running!r}: expect large "
                f"errors; calibrate this machine (`llmsim calibrate --out ...`)")
    return None


def busy_machine_warning(device: str, load: float | None, cores: int | None) -> str | None:
    """A one-line warning when other work already keeps every CPU core busy before a CPU run (the 1-minute load
    average at least the core count): the measured times then come out noisy, and slow on the wall clock (a
    1-thread run is timed by its CPU time, which leaves out its waits for a core but not the caches and memory
    bandwidth it shares). None otherwise (a GPU run's kernels do not share the CPU's cores; a platform without
    a load average)."""
    if device != "cpu" or load is None or not cores or load < cores:
        return None
    return (f"warning: this machine is busy before the run (1-minute load average {load:g} on {cores} cores): "
            "measured CPU times will be noisy (and slow on the wall clock), the errors not llmsim's; rerun on a "
            "quieter machine")


class _Progress:
    """A one-line progress bar on stderr (only when stderr is a terminal, unless forced)."""

    def __init__(self, total: int, enabled: bool | None) -> None:
        self.total, self.done = total, 0
        self.enabled = sys.stderr.isatty() if enabled is None else bool(enabled)

    def update(self, label: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {label[:60]:<60}")
        if self.done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def validate(
    model: Any,
    hardware: Any,
    device: str = "cpu",
    dtype: str = "float32",
    batch_sizes: Sequence[int] = (1,),
    seq_lens: Sequence[int] = (32,),
    kv_lens: Sequence[int] = (32,),
    num_layers: int | None = None,
    overhead: str = "eager",
    repeats: int = 5,
    warmup: int = 2,
    profile: bool = False,
    results_path: Any = None,
    progress: bool | None = None,
    name: str | None = None,
    config_overrides: dict[str, Any] | None = None,
    threads: int | None = None,
    cases: Sequence[tuple[str, int, int]] | None = None,
) -> ValidationReport:
    """Time the real model on `device` and compare with llmsim's prediction on `hardware`.

    model: a shipped name, a config.json path or folder, a config dict or a PretrainedConfig.
    hardware: a shipped name, a hardware file (e.g. from `calibrate`) or a HardwareSpec.
    Cases: a prefill for each batch size x seq_len, one decode step for each batch size x kv_len (empty
    seq_lens or kv_lens skip that phase). num_layers shrinks the model; the prediction is for the same
    shrunk config. overhead: "eager" (plain PyTorch), "graph" (CUDA graphs; CUDA only) or "none".
    profile=True adds the measured time per op class (torch.profiler) beside the predicted one.
    results_path: a JSON-lines file; each finished case is appended at once, and cases already in it
    are not run again (resume). progress: a progress bar on stderr (default: when stderr is a terminal).
    name: the model's name in the report (default: the shipped name or file stem).
    config_overrides: config keys replaced before both sides read it (e.g. a smaller vocab_size).
    threads: torch CPU threads while measuring (default on a CPU: the count a calibrated hardware file was measured
    with, `calibrate`'s 1 by default; else torch's current setting). A different count is warned about.
    cases: an explicit list of (phase, batch_size, seq_len or kv_len) instead of the grid.
    """
    check_device(device)
    from ..dtypes import canonical_dtype
    from ..hardware.spec import load_hardware

    dtype = canonical_dtype(dtype, "dtype")
    if dtype not in ("float32", "bfloat16", "float16"):
        raise LlmsimError(f"dtype={dtype!r} cannot be run by validate; choose float32, bfloat16 or float16")
    if overhead not in ("eager", "graph", "none"):
        raise LlmsimError(f"overhead={overhead!r}; choose eager, graph or none")
    if overhead == "graph" and profile:
        raise LlmsimError("profile=True splits the measured time by the aten ops it sees; a CUDA-graph replay "
                          "(overhead='graph') runs none: profile with overhead='eager'")
    if overhead == "graph" and device != "cuda":
        raise LlmsimError("overhead='graph' replays CUDA graphs and needs device='cuda'")
    if repeats < 1 or warmup < 0:
        raise LlmsimError(f"repeats={repeats} must be >= 1 and warmup={warmup} >= 0")
    hw = load_hardware(hardware)
    raw, default_name = config_dict(model)
    name = name or default_name
    data = prepare_config(raw, dtype, num_layers)
    data.update(config_overrides or {})
    if cases is None:
        cases = [("prefill", b, s) for b in batch_sizes for s in seq_lens]
        cases += [("decode", b, k) for b in batch_sizes for k in kv_lens]
    for phase, batch, length in cases:
        if phase not in ("prefill", "decode"):
            raise LlmsimError(f"case phase={phase!r}; choose prefill or decode")
        # as the CLI's lists: sizes are integers >= 1 (a decode step reads at least one cached token)
        for field, value in (("batch_sizes", batch), ("seq_lens" if phase == "prefill" else "kv_lens", length)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise LlmsimError(f"{field} holds {value!r}: sizes are integers >= 1")
    # a folder, or a file of other lines, refused before anything is appended to it
    done = read_results(results_path, strict=True) if results_path is not None else {}
    setup = setup_fingerprint(hw, data)  # a case recorded under another hardware file or config runs again
    to_run = [c for c in cases
              if _recorded(done, case_key(name, *c, dtype, num_layers, overhead, device, setup)) is None]
    if to_run:  # the smallest case: if llmsim cannot predict it (no fp16 peak on the device, a broken config), no
        phase, batch, length = min(to_run, key=lambda c: (c[1], c[2]))  # case can be: said before any is measured
        try:
            predict_case(data, hw, phase, batch, length, dtype, overhead, name=name)
        except LlmsimError as exc:
            raise LlmsimError(f"validate cannot predict {name} at dtype={dtype!r} on {hw.name!r}: {exc}") from None
    bar = _Progress(len(cases), progress)
    rows: list[ValidationRow] = []
    warnings: list[str] = []
    threads, threads_warning = run_threads(hw, device, threads)
    with torch_threads(threads):
        info = {**versions(), "device_name": device_name(device)}
        for warning in (hardware_mismatch_warning(hw, info["device_name"], device), threads_warning,
                        busy_machine_warning(device, load_average(), os.cpu_count())):
            if warning is not None:
                warnings.append(warning)
                print(warning, file=sys.stderr)
        # the machine's speed against a file calibrated on it, before and after the cases (speed_check)
        check_speed = bool(to_run) and recorded_device(hw) == info["device_name"]
        speed_before = machine_speed(hw, device, dtype) if check_speed else None
        info["machine_speed"] = speed_before
        hf_model = None
        for phase, batch, length in cases:
            previous = _recorded(done, case_key(name, phase, batch, length, dtype, num_layers, overhead, device,
                                                setup))
            if previous is not None:
                rows.append(previous)
                bar.update(f"{name} {phase} b{batch} {length} (recorded)")
                continue
            common = dict(model=name, phase=phase, batch_size=batch, dtype=dtype, num_layers=num_layers,
                          overhead=overhead, device=device, hardware=hw.name, setup=setup,
                          recorded_at=_dt.datetime.now().isoformat(timespec="seconds"),
                          **({"seq_len": length} if phase == "prefill" else {"kv_len": length}), **info)
            if hf_model is None:
                try:
                    hf_model = build_model(data, dtype, device)
                except Exception as exc:  # a config transformers cannot build: say so in one line
                    if isinstance(exc, LlmsimError):
                        raise
                    message = " ".join(str(exc).split())[:300]
                    raise LlmsimError(f"validate: transformers could not build {name!r}: "
                                      f"{type(exc).__name__}: {message}") from exc
                attention = attention_kernel(hf_model, device)
            common["attention"] = attention
            try:
                predicted = predict_case(data, hw, phase, batch, length, dtype, overhead, name=name,
                                         attention=attention)
            except LlmsimError as exc:
                row = ValidationRow(status=f"error: llmsim: {exc}", **common)
            else:
                row = _measure(hf_model, phase, batch, length, device, overhead, repeats, warmup, profile,
                               predicted, common)
            rows.append(row)
            if results_path is not None:
                append_result(results_path, row)
            bar.update(f"{name} {phase} b{batch} {length} {row.status}")
        del hf_model
        release_device_memory(device)
        drift = drift_warning(hw, speed_before, machine_speed(hw, device, dtype) if check_speed else None)
    if drift is not None:
        warnings.append(drift)
        print(drift, file=sys.stderr)
    noisy = noisy_cases_warning(rows)
    if noisy is not None:
        warnings.append(noisy)
        print(noisy, file=sys.stderr)
    return ValidationReport(rows=rows, warnings=warnings)


def _recorded(done: dict[tuple[Any, ...], ValidationRow], key: tuple[Any, ...]) -> ValidationRow | None:
    """The row a results file already holds for this case (resume skips it), None if none or a recorded error
    (which runs again)."""
    previous = done.get(key)
    return previous if previous is not None and not previous.status.startswith("error") else None


def _measure(hf_model: Any, phase: str, batch: int, length: int, device: str, overhead: str, repeats: int,
             warmup: int, profile: bool, predicted: dict[str, Any], common: dict[str, Any]) -> ValidationRow:
    check_device(device)
    timer: Callable[..., tuple[list[float], Callable[[], Any]]] = time_prefill if phase == "prefill" else time_decode
    load = load_average()
    failure = None
    clocks: dict[str, list[float]] = {}
    try:
        times, run = timer(hf_model, batch, length, device, overhead, repeats, warmup, clocks=clocks)
        measured = median(times)
        split = profile_split(run, device, measured) if profile else None
        del run
        synchronize(device)  # a device error that surfaces late still belongs to this case
    except Exception as exc:  # every failure is recorded and the run goes on
        failure = "oom" if is_oom(exc) else f"error: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    if failure is not None:
        release_device_memory(device)  # after the except block: the traceback no longer holds the tensors
        if failure != "oom":
            return ValidationRow(status=failure, **common)
        return ValidationRow(status="oom", predicted_s=predicted["time_s"], predicted_flops=predicted["flops"],
                             predicted_bytes=predicted["bytes"], predicted_bound=predicted["bound"],
                             predicted_split_s=predicted["split"], **common)
    return ValidationRow(
        status="ok",
        predicted_s=predicted["time_s"],
        measured_s=measured,
        spread=spread(times),
        error_pct=100.0 * (predicted["time_s"] - measured) / measured,
        predicted_flops=predicted["flops"],
        predicted_bytes=predicted["bytes"],
        achieved_flops_per_s=predicted["flops"] / measured,
        achieved_bytes_per_s=predicted["bytes"] / measured,
        predicted_bound=predicted["bound"],
        predicted_split_s=predicted["split"],
        measured_split_s=split,
        timings_s=times,
        clock="cpu" if cpu_clock(device) else "wall",
        wall_s=median(clocks["wall"]) if clocks else None,
        cpu_s=median(clocks["cpu"]) if clocks else None,
        load_average=load,
        **common,
    )
