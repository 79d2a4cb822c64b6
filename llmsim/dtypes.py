"""Numeric formats: bytes per element, and the bytes of quantization scales.

Names users type: float32, bfloat16, float16, fp8, int8, int4, mxfp4, nvfp4 (aliases: fp32, bf16, fp16,
float8, float8_e4m3fn, half, float).

The two 4-bit float formats carry block scales in their own definition (OCP Microscaling Formats (MX)
v1.0 spec, section 5; NVIDIA's NVFP4 in the Blackwell/ModelOpt documentation):
- mxfp4: E2M1 values, one E8M0 (8-bit) scale per 32 values -> 0.5 + 1/32 = 0.53125 bytes per value.
- nvfp4: E2M1 values, one FP8 E4M3 scale per 16 values and one float32 scale per tensor ->
  0.5 + 1/16 = 0.5625 bytes per value (+ 4 bytes per tensor).
"""

from __future__ import annotations

from .errors import choice_error

DTYPE_BYTES: dict[str, float] = {
    "float32": 4.0,
    "bfloat16": 2.0,
    "float16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "mxfp4": 0.5,  # the packed E2M1 values; their block scales: BLOCK_SCALED
    "nvfp4": 0.5,
}

# 4-bit float formats with block scales: name -> (values per scale, bytes per scale, bytes per tensor)
BLOCK_SCALED: dict[str, tuple[int, float, float]] = {
    "mxfp4": (32, 1.0, 0.0),  # E8M0 scale per 32 values
    "nvfp4": (16, 1.0, 4.0),  # FP8 E4M3 scale per 16 values + a float32 scale per tensor
}

_ALIASES: dict[str, str] = {
    "fp32": "float32",
    "float": "float32",
    "bf16": "bfloat16",
    "fp16": "float16",
    "half": "float16",
    "float8": "fp8",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "e4m3": "fp8",
}

# Weight-only integer quantization stores one scale per group of weights (GPTQ/AWQ style).
# approximation: group size 128 with one float16 scale per group, no zero point.
WEIGHT_QUANT_GROUP_SIZE = 128
WEIGHT_QUANT_SCALE_BYTES = 2.0

# The matrix-unit precision a matmul runs at, keyed by the activation dtype.
# float32 matmuls run in full fp32 (PyTorch's default: TF32 is off for matmuls).
MATMUL_PRECISION: dict[str, str] = {
    "float32": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "fp8": "fp8",
    "int8": "int8",
    "int4": "int4",
    "mxfp4": "fp4",  # Blackwell's FP4 tensor cores take both block-scaled 4-bit formats
    "nvfp4": "fp4",
}


def canonical_dtype(name: str, field: str = "dtype") -> str:
    """The canonical name of a dtype ('bf16' -> 'bfloat16'); an OptionError naming `field` otherwise."""
    if not isinstance(name, str):
        raise choice_error(field, name, DTYPE_BYTES)
    key = name.lower().removeprefix("torch.")
    key = _ALIASES.get(key, key)
    if key not in DTYPE_BYTES:
        raise choice_error(field, name, DTYPE_BYTES)
    return key


def dtype_bytes(name: str) -> float:
    """Bytes per element of a canonical dtype."""
    return DTYPE_BYTES[name]


def kv_element_bytes(name: str) -> float:
    """Bytes per cached key or value element of a canonical KV dtype: a block-scaled 4-bit format adds its
    scales (nvfp4: one E4M3 byte per 16 values, 0.5 + 1/16 = 0.5625; mxfp4: one E8M0 byte per 32, 0.53125), as
    its weights carry them. approximation: NVFP4's per-tensor float32 scale is left out (one per layer's cache)."""
    if name in BLOCK_SCALED:
        values, scale, _ = BLOCK_SCALED[name]
        return DTYPE_BYTES[name] + scale / values
    return DTYPE_BYTES[name]


def residual_stream_bytes(activation_dtype: str) -> float:
    """Bytes per element of the hidden state between layers (what tensor-parallel all-reduces sum and pipeline
    stages hand over): the activation dtype's, or 2 where activations are quantized (fp8, nvfp4, int8 are the
    GEMMs' quantized inputs; the GEMMs write 16-bit outputs, and vLLM, SGLang and TensorRT-LLM all-reduce those
    before the next norm quantizes again)."""
    return max(DTYPE_BYTES[activation_dtype], 2)


def weight_bytes_per_param(name: str) -> float:
    """Bytes per weight element including group scales for int8/int4 weights and the block scales of
    mxfp4/nvfp4 (approximation: nvfp4's 4-byte per-tensor scale is left out of this per-element rate)."""
    per_element = DTYPE_BYTES[name]
    if name in BLOCK_SCALED:
        values, scale, _ = BLOCK_SCALED[name]
        return per_element + scale / values  # mxfp4: 0.5 + 1/32; nvfp4: 0.5 + 1/16
    if name in ("int8", "int4"):
        # int4: 0.5 + 2/128 = 0.515625 bytes per weight
        per_element += WEIGHT_QUANT_SCALE_BYTES / WEIGHT_QUANT_GROUP_SIZE
    return per_element


def matmul_precision(activation_dtype: str, weight_dtype: str) -> str:
    """The matrix-unit precision a matmul runs at.

    approximation: weight-only quantized weights (int4/int8/fp8 weights with wider activations) are
    dequantized and multiplied at the activation precision; when the activations are as narrow as the
    weights (fp8 x fp8, int8 x int8) the narrow unit runs it.
    """
    del weight_dtype  # the activation dtype decides; kept in the signature to make the rule explicit
    return MATMUL_PRECISION[activation_dtype]
