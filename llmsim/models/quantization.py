"""A checkpoint's `quantization_config` -> how each kind of module stores its weights.

A quantized checkpoint stores some linear layers as packed low-bit values plus scales (and zero points),
others at the model's dtype. The spec says which, per module role:

    attention       q/k/v/o projections (MLA: o_proj)
    mla_projections MLA's low-rank projections: q_a/q_b (or q), kv_a, kv_b (DeepSeek; NVIDIA's NVFP4
                    checkpoints keep them at 16 bits and quantize o_proj)
    mlp             a dense feed-forward block
    shared_experts  the always-on experts of a MoE layer (DeepSeek, Qwen2-MoE)
    experts         the routed experts
    router          the MoE router (gate)
    lm_head         the output projection (never quantized unless the config says so)

Each converted role has a WeightFormat whose `matrix_bytes(K, N)` is the exact storage of one [N, K]
weight matrix: packed values + scales + zero points (+ per-tensor scales, GPTQ's g_idx), as the
checkpoint (and the engine holding it) lays it out. Modules the config lists as not converted
(`modules_to_not_convert`, compressed-tensors' `ignore`, ModelOpt's `exclude_modules`,
bitsandbytes' `llm_int8_skip_modules`) stay at the base dtype: everywhere (the role drops out of the
spec) or in some layers only (`LayerSpec.unquantized`).

Formats read (field names as the checkpoints write them):
- mxfp4 (gpt-oss): routed experts only, E2M1 values + one E8M0 scale per 32 (transformers' Mxfp4Config).
- fp8 (transformers' FineGrainedFP8: DeepSeek-V3, Qwen3-FP8): e4m3 values; `weight_block_size` [bn, bk]:
  one float32 scale per bn x bk block, else one per tensor; activations quantized to fp8 in the GEMM.
- awq (AutoAWQ GEMM/GEMV): `bits`, `group_size`, `zero_point`: packed values, an fp16 scale and a packed
  zero point per group of `group_size` input rows per output column.
- gptq (AutoGPTQ/GPTQModel): `bits`, `group_size` (-1: per column), `lm_head`: packed values, fp16 scales,
  packed zero points per group, an int32 g_idx per input row.
- compressed-tensors (llm-compressor: w4a16, w8a8 int8/fp8, fp8 dynamic, nvfp4): `config_groups`'
  weights {num_bits, type, strategy, group_size, symmetric} and input_activations; `ignore`.
- modelopt (NVIDIA ModelOpt: `quant_algo` NVFP4 or FP8, `group_size`, `exclude_modules`).
- bitsandbytes: `load_in_4bit` (nf4/fp4, blocks of 64, `bnb_4bit_use_double_quant`) or `load_in_8bit`.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..dtypes import BLOCK_SCALED, DTYPE_BYTES, MATMUL_PRECISION
from ..errors import ConfigError

ROLES = ("attention", "mla_projections", "mlp", "shared_experts", "experts", "router", "lm_head")
# what the methods convert by default
_LINEAR_ROLES = ("attention", "mla_projections", "mlp", "shared_experts", "experts")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class WeightFormat(_Frozen):
    """How one weight matrix W[N, K] (N outputs, K inputs) is stored.

    granularity of the scales: "group" (one per `group_size` inputs per output), "channel" (one per
    output), "block" (one per block[0] x block[1] tile of W[N, K]), "tensor" (one per matrix).
    """

    dtype: str = Field(description="the stored values: int4, int8, fp8, mxfp4, nvfp4, nf4")
    value_bits: float
    granularity: Literal["group", "channel", "block", "tensor"]
    group_size: int = 0
    block: tuple[int, int] = (0, 0)
    scale_bytes: float = 0.0  # per scale
    zero_bytes: float = 0.0  # per scale (asymmetric formats' zero point)
    tensor_bytes: float = 0.0  # per matrix (global scales, activation scales, shape records)
    row_bytes: float = 0.0  # per input row K (GPTQ's int32 g_idx)
    compute: str | None = Field(default=None, description="the matrix-unit precision when activations are "
                                "quantized too (fp8, int8, fp4); None: weight-only, dequantized to the "
                                "activation dtype")
    gemm_table: str = Field(description="the measured GEMM table name of this kernel family")
    describe: str

    def matrix_bytes(self, K: float, N: float) -> float:
        """Bytes of one W[N, K]: values + scales + zero points + per-tensor and per-row extras."""
        values = K * N * self.value_bits / 8
        if self.granularity == "group":
            scales = math.ceil(K / self.group_size) * N  # one per group of inputs, per output
        elif self.granularity == "channel":
            scales = N
        elif self.granularity == "block":
            scales = math.ceil(N / self.block[0]) * math.ceil(K / self.block[1])
        else:
            scales = 1
        return values + scales * (self.scale_bytes + self.zero_bytes) + self.tensor_bytes + K * self.row_bytes

    def bytes_per_weight(self, K: float, N: float) -> float:
        return self.matrix_bytes(K, N) / (K * N)

    def weight_only(self) -> WeightFormat:
        """The same storage, run as a weight-only kernel (dequantized to the activation dtype)."""
        if self.compute is None:
            return self
        return self.model_copy(update={"compute": None, "gemm_table": f"{self.dtype}_wo",
                                       "describe": self.describe + ", run weight-only"})


class QuantizationSpec(_Frozen):
    """The weight formats of a quantized checkpoint, per module role (roles absent: the base dtype)."""

    method: str
    formats: tuple[tuple[str, WeightFormat], ...]
    kept: tuple[str, ...] = Field(default=(), description="the roles kept at the base dtype everywhere")
    notes: tuple[str, ...] = ()

    def format_of(self, role: str) -> WeightFormat | None:
        return next((fmt for r, fmt in self.formats if r == role), None)

    def summary(self, base_dtype: str, present: Sequence[str] = ROLES) -> str:
        """One line: method, each format and its roles, what stays at the base dtype (of the roles `present`
        in the model)."""
        by_format: dict[str, list[str]] = {}
        for role, fmt in self.formats:
            if role in present:
                by_format.setdefault(fmt.describe, []).append(role)
        parts = [f"{'/'.join(roles)} {text}" for text, roles in by_format.items()]
        kept = [r for r in ROLES if r in present and r not in dict(self.formats)]
        line = f"quantization_config {self.method}: " + "; ".join(parts)
        if kept:
            line += f"; {'/'.join(kept)} {base_dtype}"
        return line + "".join(f" ({note})" for note in self.notes)

    def for_precisions(self, supported: Sequence[str]) -> QuantizationSpec:
        """Formats whose compute precision the device lacks run weight-only (vLLM's Marlin fallback for fp8
        and fp4 checkpoints on GPUs without those tensor cores)."""
        missing = sorted({f.compute for _, f in self.formats if f.compute and f.compute not in supported})
        if not missing:
            return self
        formats = tuple((r, f.weight_only() if f.compute in missing else f) for r, f in self.formats)
        note = f"no {'/'.join(missing)} matrix unit on this device: weight-only kernels"
        return self.model_copy(update={"formats": formats, "notes": (*self.notes, note)})


# ---- module names, for the lists of modules not converted --------------------------------------------
# The Hugging Face module names of each role in layer i (transformers 5 and the checkpoints' own names): groups
# of (the module, its linear layers), one group per way a family names it (Llama-like self_attn and mlp; Mamba-2
# and Nemotron-H's backbone.layers.i.mixer; Granite 4's mamba, shared_mlp and block_sparse_moe).
_ROLE_NAMES: dict[str, tuple[tuple[str, ...], ...]] = {
    "attention": (("model.layers.{i}.self_attn", "model.layers.{i}.self_attn.q_proj",
                   "model.layers.{i}.self_attn.k_proj", "model.layers.{i}.self_attn.v_proj",
                   "model.layers.{i}.self_attn.o_proj", "model.layers.{i}.self_attn.qkv_proj"),
                  ("backbone.layers.{i}.mixer", "backbone.layers.{i}.mixer.q_proj", "backbone.layers.{i}.mixer.k_proj",
                   "backbone.layers.{i}.mixer.v_proj", "backbone.layers.{i}.mixer.o_proj"),
                  ("backbone.layers.{i}.mixer", "backbone.layers.{i}.mixer.in_proj",
                   "backbone.layers.{i}.mixer.out_proj"),
                  ("model.layers.{i}.mamba", "model.layers.{i}.mamba.in_proj", "model.layers.{i}.mamba.out_proj"),
                  ("model.layers.{i}.linear_attn", "model.layers.{i}.linear_attn.in_proj_qkvz",
                   "model.layers.{i}.linear_attn.in_proj_ba", "model.layers.{i}.linear_attn.out_proj"),
                  ("model.layers.{i}.linear_attn", "model.layers.{i}.linear_attn.in_proj_qkv",
                   "model.layers.{i}.linear_attn.in_proj_z", "model.layers.{i}.linear_attn.in_proj_b",
                   "model.layers.{i}.linear_attn.in_proj_a", "model.layers.{i}.linear_attn.out_proj")),
    "mla_projections": (("model.layers.{i}.self_attn", "model.layers.{i}.self_attn.q_a_proj",
                         "model.layers.{i}.self_attn.q_b_proj", "model.layers.{i}.self_attn.kv_a_proj_with_mqa",
                         "model.layers.{i}.self_attn.kv_b_proj"),
                        ("model.layers.{i}.self_attn", "model.layers.{i}.self_attn.q_proj",
                         "model.layers.{i}.self_attn.kv_a_proj_with_mqa", "model.layers.{i}.self_attn.kv_b_proj")),
    "mlp": (("model.layers.{i}.mlp", "model.layers.{i}.mlp.gate_proj", "model.layers.{i}.mlp.up_proj",
             "model.layers.{i}.mlp.down_proj", "model.layers.{i}.mlp.gate_up_proj"),
            ("backbone.layers.{i}.mixer", "backbone.layers.{i}.mixer.up_proj", "backbone.layers.{i}.mixer.down_proj"),
            ("model.layers.{i}.shared_mlp", "model.layers.{i}.shared_mlp.input_linear",
             "model.layers.{i}.shared_mlp.output_linear")),
    "shared_experts": (("model.layers.{i}.mlp.shared_experts",), ("model.layers.{i}.mlp.shared_expert",),
                       ("backbone.layers.{i}.mixer.shared_experts",), ("model.layers.{i}.shared_mlp",)),
    "experts": (("model.layers.{i}.mlp.experts",), ("model.layers.{i}.block_sparse_moe.experts",),
                ("backbone.layers.{i}.mixer.experts",)),
    "router": (("model.layers.{i}.mlp.gate",), ("model.layers.{i}.mlp.router",),
               ("model.layers.{i}.block_sparse_moe.gate",), ("backbone.layers.{i}.mixer.gate",),
               ("model.layers.{i}.block_sparse_moe.router",)),
}


def module_matches(pattern: str, name: str) -> bool:
    """transformers' should_convert_module rule (quantizers_utils.py, 5.x): the pattern matches from the start
    up to a module boundary, as a regex with that boundary, or as a suffix; compressed-tensors' "re:" patterns
    are regexes matched from the start."""
    if pattern.startswith("re:"):
        try:
            return re.match(pattern[3:], name) is not None
        except re.error:
            return False
    boundary = r"(?:(?<=\.)|(?=\.|$))"
    try:
        if re.match(rf"(?:{pattern}){boundary}", name):
            return True
    except re.error:
        pass
    return name.endswith(pattern) or name == pattern or name.startswith(pattern + ".")


# Where a multimodal checkpoint keeps its language model's "model.layers": model.language_model.layers (Qwen3.5,
# Qwen3-VL), language_model.model.layers (Kimi-K2.5, LLaVA-style wrappers)
_TEXT_PREFIXES = ("model.", "model.language_model.", "language_model.model.")


def _role_kept(patterns: Sequence[str], role: str, layer: int) -> bool:
    """Whether the lists keep this role of this layer at the base dtype: its module, or all of its linears (under
    one of the names families give them, in a text-only or a multimodal checkpoint)."""
    groups = [tuple(prefix + n.removeprefix("model.") for n in group) if group[0].startswith("model.") else group
              for group in _ROLE_NAMES[role] for prefix in _TEXT_PREFIXES]
    for group in dict.fromkeys(groups):
        names = [n.format(i=layer) for n in group]
        if any(module_matches(p, names[0]) for p in patterns):
            return True
        linears = names[1:]
        if linears and role in ("attention", "mla_projections", "mlp") and all(
                any(module_matches(p, n) for p in patterns) for n in linears):
            return True
    return False


# ---- formats ----------------------------------------------------------------------------------------
def _int_format(bits: int, group: int, zero_point: bool, *, method: str, row_bytes: float = 0.0,
                scale_bytes: float = 2.0, zero_bits: float | None = None) -> WeightFormat:
    dtype = {4: "int4", 8: "int8"}.get(bits, f"int{bits}")
    zero = (zero_bits if zero_bits is not None else bits) / 8 if zero_point else 0.0
    granularity = "channel" if group in (-1, 0) else "group"
    per = f"group {group}" if granularity == "group" else "per column"
    zero_text = " + zero point" if zero_point else ""
    return WeightFormat(dtype=dtype, value_bits=bits, granularity=granularity, group_size=max(group, 0),
                        scale_bytes=scale_bytes, zero_bytes=zero, row_bytes=row_bytes,
                        gemm_table=f"{dtype}_wo",
                        describe=f"{method} {dtype} ({per}: fp16 scale{zero_text})")


def _fp8_format(block: Sequence[int] | None, static: bool, *, scale_bytes: float = 4.0,
                granularity: str | None = None, method: str = "fp8") -> WeightFormat:
    act = 4.0 if static else 0.0  # a static activation scale per matrix (float32)
    if block:
        return WeightFormat(dtype="fp8", value_bits=8, granularity="block", block=(int(block[0]), int(block[1])),
                            scale_bytes=scale_bytes, tensor_bytes=act, compute="fp8", gemm_table="fp8_block",
                            describe=f"{method} e4m3 ({block[0]}x{block[1]} block scales, fp8 activations)")
    kind = granularity or "tensor"
    return WeightFormat(dtype="fp8", value_bits=8, granularity=kind,  # type: ignore[arg-type]
                        scale_bytes=scale_bytes, tensor_bytes=act, compute="fp8", gemm_table="fp8",
                        describe=f"{method} e4m3 (per-{kind} scale, fp8 activations)")


def _fp4_format(dtype: str, activations: bool, method: str) -> WeightFormat:
    values, scale, tensor = BLOCK_SCALED[dtype]
    tensor += 4.0 if activations and dtype == "nvfp4" else 0.0  # the activations' global scale
    scale_name = "E8M0" if dtype == "mxfp4" else "E4M3"
    compute = "fp4" if activations else None
    prefix = "" if method == dtype else f"{method} "
    return WeightFormat(dtype=dtype, value_bits=4, granularity="group", group_size=values, scale_bytes=scale,
                        tensor_bytes=tensor, compute=compute, gemm_table=dtype if activations else f"{dtype}_wo",
                        describe=f"{prefix}{dtype} (4-bit + {scale_name} scale per {values}"
                        f"{', fp4 activations' if activations else ''})")


def _int_field(qc: Mapping[str, Any], key: str, default: int, allowed: Sequence[int] | None = None,
               minimum: int = 1) -> int:
    """An integer field of a quantization_config, refused in one line when it is not one of `allowed` (or
    below `minimum`)."""
    value = qc.get(key, default)
    ok = type(value) is int and (value in allowed if allowed is not None else value >= minimum)
    if not ok:
        rule = f"one of {', '.join(map(str, allowed))}" if allowed is not None else f"an integer >= {minimum}"
        raise ConfigError(f"quantization_config ({qc.get('quant_method')}): {key}={value!r} is not allowed; "
                          f"give {rule}")
    return int(value)


def _group_field(qc: Mapping[str, Any], key: str = "group_size", default: int = 128) -> int:
    """A group size: a positive integer, or -1 / 0 for one scale per output column."""
    value = qc.get(key, default)
    if type(value) is not int or value < -1:
        raise ConfigError(f"quantization_config ({qc.get('quant_method')}): {key}={value!r} is not allowed; give "
                          f"a positive integer, or -1 for one scale per output column")
    return value


def _list_field(qc: Mapping[str, Any], *keys: str) -> list[str]:
    """The first of `keys` present, as a list of module name patterns (null: none)."""
    for key in keys:
        value = qc.get(key)
        if value is None:
            continue
        if isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"quantization_config ({qc.get('quant_method')}): {key} must be a list of module "
                              f"names, not {value!r}")
        return list(value)
    return []


def _block_field(qc: Mapping[str, Any]) -> list[int] | None:
    block = qc.get("weight_block_size")
    if block is None:
        return None
    if (not isinstance(block, (list, tuple)) or len(block) != 2
            or not all(type(b) is int and b > 0 for b in block)):
        raise ConfigError(f"quantization_config (fp8): weight_block_size={block!r} is not allowed; give two "
                          f"positive integers [rows, columns], e.g. [128, 128]")
    return list(block)


def _method_formats(qc: Mapping[str, Any], base_bytes: float) -> tuple[str, dict[str, WeightFormat], list[str], bool]:
    """(method, role -> format, patterns of modules not converted, lm_head converted)."""
    method = str(qc.get("quant_method", "")).lower()
    skip = _list_field(qc, "modules_to_not_convert")
    if method == "mxfp4":
        return method, {"experts": _fp4_format("mxfp4", False, "mxfp4")}, skip, False
    if method == "fp8":
        fmt = _fp8_format(_block_field(qc), qc.get("activation_scheme", "dynamic") == "static")
        return method, dict.fromkeys(_LINEAR_ROLES, fmt), skip, False
    if method == "awq":
        bits, group = _int_field(qc, "bits", 4, (4, 8)), _group_field(qc)
        fmt = _int_format(bits, group, bool(qc.get("zero_point", True)), method="awq")
        return method, dict.fromkeys(_LINEAR_ROLES, fmt), skip, False
    if method == "gptq":
        bits, group = _int_field(qc, "bits", 4, (2, 3, 4, 8)), _group_field(qc)
        # GPTQ checkpoints store qzeros even when symmetric, and an int32 g_idx per input row
        fmt = _int_format(bits, group, True, method="gptq", row_bytes=4.0)
        return method, dict.fromkeys(_LINEAR_ROLES, fmt), skip, bool(qc.get("lm_head", False))
    if method == "bitsandbytes":
        return method, dict.fromkeys(_LINEAR_ROLES, _bnb_format(qc)), _list_field(qc, "llm_int8_skip_modules"), False
    if method == "modelopt":
        algo = str(qc.get("quant_algo", "")).upper()
        # ModelOpt writes shell-style wildcards ("model.layers.61*", "*.attn.*"): matched as globs, whole names
        skip = [f"re:{fnmatch.translate(p)}" if "*" in p else p
                for p in _list_field(qc, "exclude_modules", "ignore", "modules_to_not_convert")]
        if algo == "NVFP4":
            group = qc.get("group_size", BLOCK_SCALED["nvfp4"][0])
            if group != BLOCK_SCALED["nvfp4"][0] or type(group) is not int:  # the format fixes it: one E4M3 per 16
                raise ConfigError(f"quantization_config (modelopt NVFP4): group_size={group!r} is not allowed; NVFP4 "
                                  f"scales every {BLOCK_SCALED['nvfp4'][0]} values (give 16 or leave it out)")
            return method, dict.fromkeys(_LINEAR_ROLES, _fp4_format("nvfp4", True, "modelopt")), skip, False
        if algo == "FP8":  # per-tensor weight and input scales
            fmt = _fp8_format(None, True, method="modelopt")
            return method, dict.fromkeys(_LINEAR_ROLES, fmt), skip, False
        raise ConfigError(f"quantization_config: quant_algo={qc.get('quant_algo')!r} is not supported for "
                          f"quant_method='modelopt'; supported: FP8, NVFP4")
    if method == "compressed-tensors":
        return method, dict.fromkeys(_LINEAR_ROLES, _compressed_tensors_format(qc, base_bytes)), \
            _list_field(qc, "ignore"), False
    raise ConfigError(f"quantization_config: quant_method={qc.get('quant_method')!r} is not supported; "
                      f"supported: awq, bitsandbytes, compressed-tensors, fp8, gptq, modelopt, mxfp4 "
                      f"(pass weight_dtype=... to cost it as a plain dtype)")


def _bnb_format(qc: Mapping[str, Any]) -> WeightFormat:
    """bitsandbytes: 4-bit (nf4/fp4) in blocks of 64 with a float32 absmax each (double quantization: an
    8-bit absmax per block plus a float32 one per 256 blocks), a 16-value float32 code book per tensor; or
    LLM.int8 (int8 rows with a float32 scale each)."""
    if qc.get("load_in_4bit"):
        kind = str(qc.get("bnb_4bit_quant_type", "fp4"))
        if qc.get("bnb_4bit_use_double_quant"):
            # 8-bit absmax per 64 + float32 absmax per 256 x 64; code books 16 + 256 float32, offset float32
            return WeightFormat(dtype=kind, value_bits=4, granularity="group", group_size=64,
                                scale_bytes=1.0 + 4.0 / 256, tensor_bytes=(16 + 256 + 1) * 4.0,
                                gemm_table=f"bnb_{kind}", describe=f"bitsandbytes {kind} (blocks of 64, double "
                                "quantized absmax)")
        return WeightFormat(dtype=kind, value_bits=4, granularity="group", group_size=64, scale_bytes=4.0,
                            tensor_bytes=16 * 4.0, gemm_table=f"bnb_{kind}",
                            describe=f"bitsandbytes {kind} (blocks of 64, float32 absmax)")
    if qc.get("load_in_8bit"):
        return WeightFormat(dtype="int8", value_bits=8, granularity="channel", scale_bytes=4.0,
                            gemm_table="bnb_int8", describe="bitsandbytes LLM.int8 (float32 scale per row)")
    raise ConfigError("quantization_config (bitsandbytes): neither load_in_4bit nor load_in_8bit is true")


def _compressed_tensors_format(qc: Mapping[str, Any], base_bytes: float) -> WeightFormat:
    """The weight scheme of the config group that targets Linear layers.

    approximation: scales and zero points are stored at the model's dtype (llm-compressor saves them so);
    pack-quantized weights also store their shape (2 int64) per matrix."""
    groups = qc.get("config_groups") or {}
    scheme = next((g for g in groups.values() if isinstance(g, Mapping) and g.get("weights")), None)
    if scheme is None:
        raise ConfigError("quantization_config (compressed-tensors): no config_groups entry with weights")
    w = scheme["weights"]
    act = scheme.get("input_activations") or None
    if not isinstance(w, Mapping) or not (act is None or isinstance(act, Mapping)):
        raise ConfigError("quantization_config (compressed-tensors): config_groups weights and input_activations "
                          "must be objects")
    bits, kind = _int_field(w, "num_bits", 8, (4, 8)), str(w.get("type", "int"))
    strategy = str(w.get("strategy", "tensor"))
    fmt_name = str(qc.get("format", ""))
    if kind == "float" and bits == 4:  # nvfp4: tensor_group strategy, group 16
        return _fp4_format("nvfp4", act is not None, "compressed-tensors")
    act_dtype = None if act is None else ("fp8" if act.get("type") == "float" else f"int{act.get('num_bits', 8)}")
    if kind == "float" and bits == 8:
        block = w.get("block_structure") if strategy == "block" else None
        granularity = {"channel": "channel", "tensor": "tensor"}.get(strategy)
        fmt = _fp8_format(block, bool(act and not act.get("dynamic", False)), scale_bytes=base_bytes,
                          granularity=granularity, method="compressed-tensors")
        return fmt if act_dtype == "fp8" else fmt.weight_only()
    group = _group_field(w, default=0) if strategy == "group" else 0
    packed = fmt_name == "pack-quantized"
    fmt = _int_format(bits, group, not w.get("symmetric", True), method="compressed-tensors",
                      scale_bytes=base_bytes)
    fmt = fmt.model_copy(update={"tensor_bytes": 16.0 if packed else 0.0})
    if act_dtype == "int8" and bits == 8:  # W8A8 int8
        return fmt.model_copy(update={"compute": "int8", "gemm_table": "int8",
                                      "describe": fmt.describe + ", int8 activations"})
    return fmt


# ---- the spec -----------------------------------------------------------------------------------------
def quantization_config_of(config: Any) -> dict[str, Any] | None:
    """The quantization_config of a PretrainedConfig (a dict or a transformers QuantizationConfig), or None."""
    qc = getattr(config, "quantization_config", None)
    if qc is None:
        return None
    if hasattr(qc, "to_dict"):
        qc = qc.to_dict()
    if not isinstance(qc, Mapping):
        raise ConfigError(f"model config: quantization_config must be an object, not {type(qc).__name__}")
    return dict(qc)


def quantization_spec(qc: Mapping[str, Any], num_layers: int, base_dtype: str, roles: Sequence[str] = ROLES
                      ) -> tuple[QuantizationSpec, dict[int, tuple[str, ...]]]:
    """(the spec, layer -> roles that layer keeps at the base dtype where others are converted), of the model's
    `roles` (e.g. mla_projections only where a layer has MLA)."""
    method, formats, patterns, lm_head = _method_formats(qc, DTYPE_BYTES[base_dtype])
    formats = {role: fmt for role, fmt in formats.items() if role in roles}
    patterns = [str(p) for p in patterns]
    kept_everywhere: list[str] = []
    per_layer: dict[int, list[str]] = {}
    for role in list(formats):
        kept = [i for i in range(num_layers) if _role_kept(patterns, role, i)]
        if len(kept) == num_layers:
            kept_everywhere.append(role)
            del formats[role]
        for i in kept if len(kept) < num_layers else ():
            per_layer.setdefault(i, []).append(role)
    if lm_head and not any(module_matches(p, "lm_head") for p in patterns):
        formats["lm_head"] = formats.get("attention") or next(iter(formats.values()))
    notes = []
    if method == "modelopt" and qc.get("kv_cache_quant_algo"):
        notes.append(f"kv_cache_quant_algo {qc['kv_cache_quant_algo']}: the KV cache follows kv_dtype, as engines "
                     "do unless told (kv_dtype='fp8')")
    if per_layer:
        notes.append(f"{len(per_layer)} layer(s) keep some modules at {base_dtype}: modules_to_not_convert")
    spec = QuantizationSpec(method=method, formats=tuple(formats.items()), kept=tuple(kept_everywhere),
                            notes=tuple(notes))
    return spec, {i: tuple(kept) for i, kept in per_layer.items()}


def compute_precision(fmt: WeightFormat | None, activation_dtype: str) -> str:
    """The matrix-unit precision of a matmul with weights in `fmt` (None: plain weights)."""
    if fmt is not None and fmt.compute is not None:
        return fmt.compute
    return MATMUL_PRECISION[activation_dtype]


def quantize_layers(config: Any, layers: list[Any], base_dtype: str) -> tuple[QuantizationSpec | None, list[Any]]:
    """The QuantizationSpec of a config (None without quantization_config) and its layers, those that keep
    some roles at the base dtype marked (LayerSpec.unquantized)."""
    qc = quantization_config_of(config)
    if qc is None:
        return None, layers
    mla = any(layer.attention is not None and layer.attention.kind == "mla" for layer in layers)
    roles = ROLES if mla else tuple(r for r in ROLES if r != "mla_projections")
    spec, per_layer = quantization_spec(qc, len(layers), base_dtype, roles)
    marked = [layer.model_copy(update={"unquantized": per_layer[i]}) if i in per_layer else layer
              for i, layer in enumerate(layers)]
    return spec, marked
