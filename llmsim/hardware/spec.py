"""HardwareSpec: a device's ceilings and overheads, every number with its unit and source.

Hardware files (`hardware/*.toml`) hold each number as `{ value = ..., unit = "...", source = "..." }`
in base SI units (FLOP/s, byte/s, byte, s). An optional `[matmul_rows.<precision>]` table holds how much
of the roofline a matmul x[M, K] @ W[K, N] reaches by its row count M (`rows`, `fraction`, `source`;
measured by calibrate: thin decode shapes fall short of what a large square matmul or a copy reaches),
optionally also by its output width N (`cols`, with `fraction` then one list over `rows` per N: wide
outputs such as an LM head reach less than a square matmul on some devices). An optional
`[matmul_rows_in_out.<precision>]` table (same keys) holds the same for weights stored W[K, N] (GPT-2's
Conv1D, gpt-oss's experts), which run another kernel than nn.Linear's W[N, K] on some devices. An
optional `[matmul_depth.<precision>]` table (`rows`, `depths`, `fraction` one list over `rows` per K,
`source`) scales those fractions by the matmul's inner dimension K, as a ratio to the K the tables were
measured at. An optional `[elementwise_bytes.<fp32|fp16>]` curve (`bytes`, `fraction`, `source`) holds
the fraction of the bandwidth an element-wise kernel reaches by the bytes it moves.
`vendor` ("nvidia", "amd", "intel") says who makes the device, as engines run on some vendors only; a file
without it loads as "unknown", which no engine refuses. Loading refuses unknown keys, missing fields, a wrong unit
and values outside a plausibility range (a bandwidth written in GB/s instead of byte/s is caught).
"""

from __future__ import annotations

import math
import os
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

import tomllib
from pydantic import BaseModel, ConfigDict, Field

from ..errors import HardwareError, OptionError
from ..memo import Memo, content_key, file_stamp, names_a_path, shipped_file_stamp
from ..shipped import hardware_dir
from .curves import DepthCurve, RowCurve, SizeCurve

# who makes the device: engines run on some vendors only (TensorRT-LLM: NVIDIA GPUs); "unknown" (the default of a
# file without the key) is refused by no engine
VENDORS = ("nvidia", "amd", "intel", "unknown")
MATRIX_PRECISIONS = ("tf32", "bf16", "fp16", "fp8", "int8", "int4", "fp4", "fp32")
VECTOR_PRECISIONS = ("fp32", "fp16")


class Quantity(BaseModel):
    """One number of a hardware file, with its unit and where it comes from."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    value: float
    unit: str
    source: str = Field(min_length=1)


# above 1: beats the calibrated roofline (e.g. data held in a cache, or on a CPU without bf16 instructions, where
# torch's square bf16 matmul, the stored peak, takes a slow path that small F.linear calls do not: 8.45x measured on
# an AVX2-only AMD EPYC, torch 2.13.0+cpu, session 41); 16 still refuses a fraction written in percent
_CURVE_FRACTION_RANGE = (0.01, 16.0)
# curve sections: name -> (the key of its x values, its model, the precisions it may name)
_CURVES: dict[str, tuple[str, type, tuple[str, ...]]] = {
    "matmul_rows": ("rows", RowCurve, MATRIX_PRECISIONS),
    "matmul_rows_in_out": ("rows", RowCurve, MATRIX_PRECISIONS),
    "matmul_depth": ("rows", DepthCurve, MATRIX_PRECISIONS),
    "elementwise_bytes": ("bytes", SizeCurve, VECTOR_PRECISIONS),
}

# field -> (unit, plausible low, plausible high)
_FIELDS: dict[str, dict[str, tuple[str, float, float]]] = {
    # floor 0.1 GFLOP/s: torch's bf16 matmul on a CPU without bf16 instructions (AVX2 only, no AVX512-BF16 or AMX)
    # takes a slow path, 0.85 GFLOP/s on one thread of an AMD EPYC (torch 2.13.0+cpu; its fp32 about 100x that), a
    # true figure the former 1e10 floor refused; still 1e6 x above a figure written in TFLOP/s
    "matrix_flops_per_s": {p: ("flop/s", 1e8, 1e17) for p in MATRIX_PRECISIONS},
    "vector_flops_per_s": {p: ("flop/s", 1e9, 1e16) for p in VECTOR_PRECISIONS},
    "memory": {
        # floor 1 GB/s: one CPU thread's copy reaches only ~10-15 GB/s (13.9 on validation/'s machine, 9.9 there
        # when loaded); still 1e9 x above a figure written in GB/s
        "bandwidth_bytes_per_s": ("byte/s", 1e9, 1e14),
        "capacity_bytes": ("byte", 1e9, 1e13),
        "l2_cache_bytes": ("byte", 1e5, 1e10),
    },
    "interconnect": {
        "intra_node_bandwidth_bytes_per_s": ("byte/s", 1e9, 1e13),
        "intra_node_latency_s": ("s", 1e-8, 1e-3),
        "gpus_per_node": ("count", 1, 1024),
        "inter_node_bandwidth_bytes_per_s": ("byte/s", 1e8, 1e13),
        "inter_node_latency_s": ("s", 1e-8, 1e-2),
    },
    "overhead": {
        "kernel_launch_s": ("s", 0.0, 1e-3),
        "eager_dispatch_s": ("s", 0.0, 1e-2),
        "graph_replay_per_kernel_s": ("s", 0.0, 1e-3),
    },
    "efficiency": {
        "matmul": ("fraction", 0.01, 1.0),
        # optional per-precision matmul fractions; "matmul" applies where none is given
        **{f"matmul_{p}": ("fraction", 0.01, 1.0) for p in MATRIX_PRECISIONS},
        "memory": ("fraction", 0.01, 1.0),
        # optional: the fraction of bandwidth memory-bound matmuls (decode GEMV-like shapes) reach
        "matmul_memory": ("fraction", 0.01, 1.0),
        "vector": ("fraction", 0.01, 1.0),
    },
    "price": {"usd_per_hour": ("usd/hour", 0.0, 1e4)},
    # optional: compute-bound work of a long pass at the power-limited clock (timing.sustained)
    "sustained": {
        "matmul_fraction": ("fraction", 0.3, 1.0),  # sustained over boost throughput of compute-bound kernels
        "onset_s": ("s", 0.0, 10.0),  # seconds of compute-bound work before the clock drops
    },
}


def plausible_range(section: str, key: str) -> tuple[str, float, float] | None:
    """(unit, plausible low, plausible high) of a hardware field, e.g. ("byte/s", 1e10, 1e14) for
    memory.bandwidth_bytes_per_s; None for a field with no range (a curve, an unknown key)."""
    return _FIELDS.get(section, {}).get(key)


_REQUIRED: dict[str, tuple[str, ...]] = {
    "matrix_flops_per_s": (),
    "vector_flops_per_s": ("fp32",),
    "memory": ("bandwidth_bytes_per_s", "capacity_bytes"),
    "overhead": ("kernel_launch_s", "eager_dispatch_s"),
    "efficiency": ("matmul", "memory"),
    "sustained": ("matmul_fraction", "onset_s"),
}
_OPTIONAL_SECTIONS = ("interconnect", "price", "sustained")


class HardwareSpec(BaseModel):
    """A device: dense peaks per precision, memory, interconnect, overheads, achievable fractions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    device_type: Literal["gpu", "cpu"] = "gpu"
    vendor: Literal["nvidia", "amd", "intel", "unknown"] = "unknown"
    matrix_flops_per_s: dict[str, Quantity]
    vector_flops_per_s: dict[str, Quantity]
    memory: dict[str, Quantity]
    interconnect: dict[str, Quantity] = Field(default_factory=dict)
    overhead: dict[str, Quantity]
    efficiency: dict[str, Quantity]
    price: dict[str, Quantity] = Field(default_factory=dict)
    sustained: dict[str, Quantity] = Field(default_factory=dict)
    matmul_rows: dict[str, RowCurve] = Field(default_factory=dict)
    matmul_rows_in_out: dict[str, RowCurve] = Field(default_factory=dict)
    matmul_depth: dict[str, DepthCurve] = Field(default_factory=dict)
    elementwise_bytes: dict[str, SizeCurve] = Field(default_factory=dict)
    path: str | None = None

    # ---- accessors ---------------------------------------------------------------------------------
    @property
    def memory_bandwidth_bytes_per_s(self) -> float:
        return self.memory["bandwidth_bytes_per_s"].value

    @property
    def memory_capacity_bytes(self) -> float:
        return self.memory["capacity_bytes"].value

    def matrix_peak_flops_per_s(self, precision: str) -> float:
        """Dense matrix-unit peak at `precision`. fp32 matmuls without a matrix fp32 figure run on the
        vector unit (PyTorch keeps TF32 off for matmuls by default)."""
        if precision in self.matrix_flops_per_s:
            return self.matrix_flops_per_s[precision].value
        if precision == "fp32":
            return self.vector_flops_per_s["fp32"].value
        raise OptionError(
            f"hardware {self.name!r} has no matrix-unit peak for {precision}; it has "
            f"{', '.join(sorted(self.matrix_flops_per_s))}"
        )

    def vector_peak_flops_per_s(self, precision: str) -> float:
        key = "fp16" if precision in ("fp16", "bf16") and "fp16" in self.vector_flops_per_s else "fp32"
        return self.vector_flops_per_s[key].value

    def matmul_efficiency(self, precision: str) -> float:
        """Achievable fraction of the matrix peak at `precision` (falls back to the general one)."""
        item = self.efficiency.get(f"matmul_{precision}") or self.efficiency["matmul"]
        return item.value

    def sustained_clock(self) -> tuple[float, float] | None:
        """(sustained fraction, onset seconds) of compute-bound work in a long pass ([sustained]); None: not
        throttled (no figure for the device)."""
        if not self.sustained:
            return None
        return self.sustained["matmul_fraction"].value, self.sustained["onset_s"].value

    def matmul_row_fraction(self, precision: str, rows: Any, cols: Any = None, layout: str = "out_in",
                            depth: Any = None) -> Any | None:
        """Fraction of the roofline a matmul of `rows` rows (and `cols` output columns, where the table
        has widths) reaches at `precision` (None: no curve). Weights stored W[K, N] (layout "in_out")
        read the matmul_rows_in_out table where the file has one, else the nn.Linear one. With its inner
        dimension `depth` (K) and a matmul_depth table, times that table's ratio (approximation: the
        ratio measured with nn.Linear's layout at one width applies to every width and layout)."""
        curve = (self.matmul_rows_in_out.get(precision) if layout == "in_out" else None) or self.matmul_rows.get(
            precision)
        if curve is None or rows is None:
            return None
        fraction = curve.at(rows, cols)
        by_depth = self.matmul_depth.get(precision)
        return fraction if by_depth is None or not depth else fraction * by_depth.at(rows, depth)

    def elementwise_bandwidth_fraction(self, precision: str, size_bytes: Any) -> Any | None:
        """Fraction of the bandwidth an element-wise kernel moving size_bytes reaches (None: no curve);
        16-bit types read the fp16 curve, as they read the fp16 vector rate."""
        key = "fp16" if precision in ("fp16", "bf16") else "fp32"
        curve = self.elementwise_bytes.get(key)
        return None if curve is None or size_bytes is None else curve.at(size_bytes)

    def efficiency_of(self, unit: str) -> float:
        if unit in self.efficiency:
            return self.efficiency[unit].value
        return self.efficiency["matmul"].value if unit == "vector" else 1.0

    def overhead_s(self, key: str) -> float:
        item = self.overhead.get(key)
        if item is not None:
            return item.value
        if key == "graph_replay_per_kernel_s":
            return self.overhead["kernel_launch_s"].value
        return 0.0

    @property
    def linked_gpus(self) -> float:
        """The most devices the file can link into one replica: 1 without an [interconnect]; gpus_per_node
        without an inter-node link (an L4's or RTX 4090's PCIe box: no NVLink between nodes named); else no bound
        (inf). A plan's default search stays within it; a split past it asked for by name is refused
        (interconnect_value names the missing link)."""
        if not self.interconnect:
            return 1
        per_node = self.interconnect.get("gpus_per_node")
        if per_node is not None and "inter_node_bandwidth_bytes_per_s" not in self.interconnect:
            return per_node.value
        return math.inf

    def interconnect_value(self, key: str) -> float:
        if not self.interconnect:  # no section at all (a one-device file: cpu-generic, a copy without it)
            raise HardwareError(f"hardware {self.name!r} has no [interconnect] section: splitting a model over "
                                "several devices needs its gpus_per_node and intra_node_bandwidth_bytes_per_s / "
                                "intra_node_latency_s (inter_node_* past one node)")
        if key not in self.interconnect:
            per_node = self.interconnect.get("gpus_per_node")
            if key.startswith("inter_node") and per_node is not None:  # a layout past one node of this file
                raise HardwareError(f"hardware {self.name!r}: more GPUs than its gpus_per_node={per_node.value:g} "
                                    f"need a link between nodes, and the file has no [interconnect] {key}; in a "
                                    "copy of the file raise gpus_per_node to your box's GPUs, or add the link")
            raise HardwareError(f"hardware {self.name!r}: [interconnect] {key} is missing; multi-GPU needs it")
        return self.interconnect[key].value

    def ridge_point_flops_per_byte(self, precision: str = "bf16") -> float:
        """Arithmetic intensity where the matrix peak meets the bandwidth (peak figures)."""
        return self.matrix_peak_flops_per_s(precision) / self.memory_bandwidth_bytes_per_s

    def summary_row(self) -> dict[str, object]:
        # the bf16 peak alone (a file without one shows none: fp32's rate was shown under bf16), to 4 significant
        # digits (a calibrated CPU's 0.00094 TFLOP/s read 0.0)
        bf16 = self.matrix_flops_per_s.get("bf16")
        return {
            "name": self.name,
            "vendor": self.vendor,
            "description": self.description,
            "bf16_tflops": float(f"{bf16.value / 1e12:.4g}") if bf16 else None,
            "bandwidth_tb_s": round(self.memory_bandwidth_bytes_per_s / 1e12, 3),
            "memory_gib": round(self.memory_capacity_bytes / 1024**3, 1),
            "ridge_flops_per_byte": round(self.ridge_point_flops_per_byte("bf16"), 1)
            if "bf16" in self.matrix_flops_per_s
            else None,
            # sustained over boost rate of a long pass's compute-bound work ([sustained]; None: not throttled)
            "sustained_fraction": (self.sustained_clock() or (None,))[0],
        }

    def with_overrides(self, **section_values: dict[str, float]) -> HardwareSpec:
        """A copy with some values replaced, e.g. with_overrides(memory={"bandwidth_bytes_per_s": 2e12})."""
        data = self.model_dump()
        for section, values in section_values.items():
            if section not in _FIELDS:
                raise HardwareError(f"with_overrides: unknown section {section!r}; allowed: {', '.join(_FIELDS)}")
            for key, value in values.items():
                old = data[section].get(key, {"unit": _FIELDS[section][key][0], "source": "override"})
                data[section][key] = {**old, "value": value, "source": "override"}
        return hardware_from_dict(data, origin=f"{self.name} (overridden)")


# ---- loading --------------------------------------------------------------------------------------
def load_hardware(source: Any) -> HardwareSpec:
    """A HardwareSpec from a shipped name ("h100-sxm"), a path to a hardware TOML file, a dict, or a
    HardwareSpec (returned as it is)."""
    if isinstance(source, HardwareSpec):
        return source
    if isinstance(source, dict):
        key = content_key(source)
        if key is None:  # not TOML-like: validated every time
            return hardware_from_dict(source, origin="hardware dict")
        return _SPECS.get(("dict", key), None, lambda: hardware_from_dict(source, origin="hardware dict"))
    if isinstance(source, (str, Path)):
        if isinstance(source, str) and "/" not in source and not source.endswith(".toml") and not (
                names_a_path(source) and os.path.isfile(os.path.expanduser(source))):
            # a shipped name (os.path: the by-name hot path skips pathlib); absolute, as a str, with its file_stamp
            shipped, stamp = shipped_file_stamp("hardware", source, hardware_dir(), ".toml")
            return _SPECS.get((shipped, shipped), stamp, lambda: _read_hardware_file(Path(shipped)))
        path = Path(source).expanduser()
        if path.is_dir():
            raise HardwareError(f"hardware file {path}: a folder; give a hardware .toml file (or a shipped name: "
                                "`llmsim hardware`)")
        if not path.is_file():
            raise HardwareError(f"hardware file: no file at {path}")
        # memoised while the file is unchanged (a HardwareSpec is frozen: callers share it); the key keeps the
        # spelling of the path too, as the spec records it
        return _SPECS.get((str(path.absolute()), str(path)), file_stamp(path), lambda: _read_hardware_file(path))
    raise HardwareError(f"hardware: cannot load from a {type(source).__name__}; give a shipped name or a path")


def _read_hardware_file(path: Path) -> HardwareSpec:
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise HardwareError(f"hardware file {path}: not valid TOML ({exc})") from None
    data.pop("path", None)
    spec = hardware_from_dict(data, origin=str(path))
    _warn_if_shadowing_shipped(spec, path)
    return spec.model_copy(update={"path": str(path)})


def _warn_if_shadowing_shipped(spec: HardwareSpec, path: Path) -> None:
    """A file of the user's that takes a shipped device's name but states other figures (an edited copy, or
    another device renamed) gets that device's measured kernel tables, chosen by name, and they time the ops they
    cover whatever the file says: the edit would change nothing there, silently. Say so once, when it is read."""
    from ..errors import warn_assumption
    from .measured import shipped_kernel_sets

    shipped = hardware_dir() / f"{spec.name}.toml"
    if spec.name not in shipped_kernel_sets() or not shipped.is_file() or path.resolve() == shipped.resolve():
        return
    original = load_hardware(spec.name)  # the shipped file, memoised
    differs = sorted(field for field in HardwareSpec.model_fields if field != "path"
                     and getattr(spec, field) != getattr(original, field))
    if differs:
        warn_assumption(
            f"hardware file {path}: named {spec.name!r} as a shipped device, but states other figures than the "
            f"shipped file ({', '.join(differs)}); {spec.name}'s measured kernel tables (engines "
            f"{', '.join(shipped_kernel_sets()[spec.name])}) still time the ops they cover, so those figures only "
            "time the rest; give the file a name of its own (its ops then run on its roofline) or pass "
            "engine='roofline'")


_SPECS = Memo(32)


def hardware_from_dict(data: dict[str, Any], origin: str = "hardware") -> HardwareSpec:
    """Validate a hardware dict: sections, keys, units, plausibility. Errors name the field."""
    data = dict(data)
    data.pop("path", None)
    allowed_top = {"name", "description", "device_type", "vendor", *_CURVES, *_FIELDS}
    for key in data:
        if key not in allowed_top:
            raise HardwareError(f"{origin}: unknown key {key!r}; allowed: {', '.join(sorted(allowed_top))}")
    if "name" not in data:
        raise HardwareError(f"{origin}: missing field 'name'")
    if not isinstance(data["name"], str) or not data["name"].strip():  # it printed "llama on : batch 1"
        raise HardwareError(f"{origin}: name={data['name']!r}; give the device a name (text, not empty)")
    if data.get("device_type", "gpu") not in ("gpu", "cpu"):
        raise HardwareError(f"{origin}: device_type={data['device_type']!r}; allowed: gpu, cpu")
    if data.get("vendor", "unknown") not in VENDORS:
        raise HardwareError(f"{origin}: vendor={data['vendor']!r}; allowed: {', '.join(VENDORS)}")
    sections: dict[str, dict[str, Quantity]] = {}
    for section, fields in _FIELDS.items():
        raw = data.get(section)
        if raw is None or (raw == {} and section in _OPTIONAL_SECTIONS):  # an empty optional one: as absent
            if section in _OPTIONAL_SECTIONS:
                continue
            raise HardwareError(f"{origin}: missing section [{section}]")
        if not isinstance(raw, dict):
            raise HardwareError(f"{origin}: [{section}] must be a table")
        sections[section] = {key: _quantity(origin, section, key, value, fields) for key, value in raw.items()}
        for key in _REQUIRED.get(section, ()):
            if key not in sections[section]:
                raise HardwareError(f"{origin}: missing field {section}.{key}")
    if not sections["matrix_flops_per_s"] and "fp32" not in sections["vector_flops_per_s"]:
        raise HardwareError(f"{origin}: [matrix_flops_per_s] needs at least one precision")
    curves = {section: _curves(origin, section, data.get(section, {})) for section in _CURVES}
    return HardwareSpec(
        name=str(data["name"]),
        description=str(data.get("description", "")),
        device_type=data.get("device_type", "gpu"),
        vendor=data.get("vendor", "unknown"),
        **curves,
        **sections,
    )


def _curves(origin: str, section: str, raw: Any) -> dict[str, Any]:
    """[<section>.<precision>] tables: x values strictly increasing (>= 1) and a fraction for each; a
    matmul_rows table may add `cols` (output widths N), its fraction then one list over rows per width."""
    x_key, model, precisions = _CURVES[section]
    if not isinstance(raw, dict):
        raise HardwareError(f"{origin}: [{section}] must be a table of precisions")
    curves: dict[str, Any] = {}
    for precision, table in raw.items():
        where = f"{origin}: {section}.{precision}"
        if precision not in precisions:
            raise HardwareError(f"{where}: unknown precision; allowed: {', '.join(precisions)}")
        if not isinstance(table, dict):
            raise HardwareError(f"{where} must be a table {{ {x_key} = [...], fraction = [...], source = ... }}")
        second = "depths" if section == "matmul_depth" else "cols" if section.startswith("matmul_rows") else None
        allowed = (x_key, second, "fraction", "source") if second else (x_key, "fraction", "source")
        extra = set(table) - set(allowed)
        if extra:
            raise HardwareError(f"{where}: unknown key {sorted(extra)[0]!r}; allowed: {', '.join(allowed)}")
        for part in (x_key, "fraction", "source"):
            if part not in table:
                raise HardwareError(f"{where}: missing {part!r}")
        if not str(table["source"]).strip():
            raise HardwareError(f"{where}: empty source; every number needs one")
        xs = _axis(where, x_key, table[x_key])
        fields: dict[str, Any] = {x_key: xs}
        if second == "depths" and second not in table:
            raise HardwareError(f"{where}: missing 'depths'")
        if second and second in table:
            ys = _axis(where, second, table[second])
            lines = table["fraction"]
            if not isinstance(lines, (list, tuple)) or len(lines) != len(ys) or not all(
                    isinstance(line, (list, tuple)) for line in lines):
                raise HardwareError(f"{where}: with {second}, fraction must be {len(ys)} lists (one per {second} "
                                    f"value) of {len(xs)} numbers (one per {x_key} value)")
            fields |= {second: ys, "fraction": tuple(_fractions(where, x_key, xs, line) for line in lines)}
        else:
            fields["fraction"] = _fractions(where, x_key, xs, table["fraction"])
        curves[precision] = model(**fields, source=str(table["source"]))
    return curves


def _axis(where: str, key: str, xs: Any) -> tuple[float, ...]:
    """A curve's x values: at least 2 numbers, strictly increasing, >= 1."""
    if not isinstance(xs, (list, tuple)) or any(_not_number(v) for v in xs):
        raise HardwareError(f"{where}: {key} must be a list of numbers")
    if len(xs) < 2:
        raise HardwareError(f"{where}: {key} needs at least 2 values (got {len(xs)})")
    if xs[0] < 1 or any(b <= a for a, b in pairwise(xs)):
        raise HardwareError(f"{where}: {key} must be strictly increasing, >= 1 (got {list(xs)})")
    return tuple(float(x) for x in xs)


def _fractions(where: str, x_key: str, xs: tuple[float, ...], fraction: Any) -> tuple[float, ...]:
    """One fraction per x value, each in the plausible range."""
    if not isinstance(fraction, (list, tuple)) or any(_not_number(v) for v in fraction):
        raise HardwareError(f"{where}: {x_key} and fraction must be lists of numbers")
    if len(fraction) != len(xs):
        raise HardwareError(f"{where}: {x_key} and fraction need the same length, at least 2 "
                            f"(got {len(xs)} and {len(fraction)})")
    low, high = _CURVE_FRACTION_RANGE
    bad = [f for f in fraction if not low <= f <= high]
    if bad:
        raise HardwareError(f"{where}: fraction {bad[0]:g} is outside the plausible range [{low:g}, {high:g}]")
    return tuple(float(f) for f in fraction)


def _not_number(value: Any) -> bool:
    return isinstance(value, bool) or not isinstance(value, (int, float)) or value != value


def _quantity(origin: str, section: str, key: str, raw: Any, fields: dict[str, tuple[str, float, float]]) -> Quantity:
    where = f"{origin}: {section}.{key}"
    if key not in fields:
        raise HardwareError(f"{origin}: unknown key {section}.{key}; allowed: {', '.join(fields)}")
    if not isinstance(raw, dict):
        raise HardwareError(f"{where} must be a table {{ value = ..., unit = ..., source = ... }}")
    for part in ("value", "unit", "source"):
        if part not in raw:
            raise HardwareError(f"{where}: missing {part!r}")
    extra = set(raw) - {"value", "unit", "source"}
    if extra:
        raise HardwareError(f"{where}: unknown key {sorted(extra)[0]!r}; allowed: value, unit, source")
    unit, low, high = fields[key]
    if raw["unit"] != unit:
        raise HardwareError(f"{where}: unit {raw['unit']!r}, expected {unit!r} (values in base SI units)")
    value = raw["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise HardwareError(f"{where}: value {value!r} is not a number")
    if unit == "count" and value != int(value):
        raise HardwareError(f"{where}: value {value:g} is not a whole number (a count)")
    if not low <= value <= high:
        raise HardwareError(
            f"{where}: value {value:g} {unit} is outside the plausible range [{low:g}, {high:g}] "
            f"(a unit mix-up, e.g. GB/s where byte/s is expected?)"
        )
    if not str(raw["source"]).strip():
        raise HardwareError(f"{where}: empty source; every number needs one")
    return Quantity(value=float(value), unit=unit, source=str(raw["source"]))
