"""op_cost(): one op alone on a device: its FLOPs, bytes, arithmetic intensity against the ridge point, bound,
time, the share of the peak it reaches, and what fusing it with a neighbour would save.

The op is the cost model's own formula (cost.formulas: "elementwise", "norm", "linear", "flash_attention"; a
convolution counted as traced modules count it, trace.aten_costs) timed by the same path as a simulate()
phase (timing.phases), so it reads the engine's measured GEMM or attention table where one covers it (the
result's `source` says which) and the roofline otherwise.

Fusion with a neighbour: the op's output written by it and read back by the next kernel (or its input from
the previous one) stays on chip: 2 x the output tensor's bytes saved, and one kernel launch.
Attention is the fused (flash) kernel already: its saving is against the unfused math kernels, whose
[B, H, q_len, keys] scores are written, read and written by the softmax, and read again (4 x their bytes)
and which launch 2 kernels more.
approximation: the fused kernel stays memory-bound, so the time saved is those bytes at the achievable
bandwidth plus one launch (a compute-bound neighbour hides less).
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import OptionError, check_choice

OP_KINDS = ("elementwise", "matmul", "norm", "attention", "conv")


class OneOpCost(BaseModel):
    """One op on one device: what it does, where it sits on the roofline, and what fusing it would save."""

    model_config = ConfigDict(frozen=True)
    kind: str
    shape: str  # the op in words, e.g. "[32, 2048, 4096] x 10 FLOP/element" or "[4096, 4096] @ [4096, 4096]"
    dtype: str
    hardware: str
    engine: str
    flops: float
    bytes: float
    arithmetic_intensity: float  # FLOP per byte
    peak_flops_per_s: float  # the datasheet peak of the unit it runs on (matrix unit for matmuls, else vector)
    peak_bandwidth_bytes_per_s: float
    ridge_point: float  # peak_flops_per_s / peak_bandwidth_bytes_per_s: FLOP/B where the roofs meet
    # the same at the rates the engine's roofline uses (the hardware file's achievable fractions, or the peaks with
    # efficiency="peak"): where `bound` flips between compute and memory, a measured op's terms scaled alike
    achievable_ridge_point: float
    bound: str  # compute, memory or overhead: the largest term of its time
    time_s: float
    compute_s: float  # time_s split by what bounds it, as simulate()'s ops (overlap="max": the larger term)
    memory_s: float
    overhead_s: float
    achieved_flops_per_s: float
    achieved_bandwidth_bytes_per_s: float
    flops_share_of_peak: float  # achieved / peak FLOP/s
    bandwidth_share_of_peak: float  # achieved / peak bytes/s
    source: str  # "roofline" or the measured table it was read from ("vllm gemm")
    source_reason: str = ""  # on the roofline: why no measured table timed it (empty: none asked, or a table did)
    fused_bytes_saved: float  # fused with a neighbour: its output's write + read back (attention: see fused_what)
    fused_time_saved_s: float
    fused_what: str  # what the fusion saving is against

    def __str__(self) -> str:
        from .text import fmt_s as _fmt_s

        reach = max(self.flops_share_of_peak, self.bandwidth_share_of_peak)
        of = "FLOP/s" if self.flops_share_of_peak >= self.bandwidth_share_of_peak else "bandwidth"
        return "\n".join([
            f"{self.kind} {self.shape}, {self.dtype} on {self.hardware} ({self.engine})",
            f"  work        {self.flops / 1e9:.4g} GFLOP, {self.bytes / 1e6:.4g} MB",
            f"  intensity   {self.arithmetic_intensity:.3g} FLOP/B against a ridge point of {self.ridge_point:.3g} "
            f"FLOP/B ({self.peak_flops_per_s / 1e12:.4g} TFLOP/s / {self.peak_bandwidth_bytes_per_s / 1e12:.3g} TB/s); "
            f"{self.achievable_ridge_point:.3g} at the achievable rates, where the bound below flips",
            f"  time        {_fmt_s(self.time_s)}, {self.bound}-bound (of which compute {_fmt_s(self.compute_s)}, "
            f"memory {_fmt_s(self.memory_s)}, overhead {_fmt_s(self.overhead_s)}); timed by {self.source}"
            + (f" ({self.source_reason})" if self.source == "roofline" and self.source_reason else ""),
            f"  reaches     {self.achieved_flops_per_s / 1e12:.4g} TFLOP/s ({self.flops_share_of_peak:.1%} of peak), "
            f"{self.achieved_bandwidth_bytes_per_s / 1e12:.4g} TB/s ({self.bandwidth_share_of_peak:.1%} of peak): "
            f"{reach:.1%} of peak {of}",
            f"  fused       {self.fused_bytes_saved / 1e6:.4g} MB saved ({self.fused_what}), about "
            f"{_fmt_s(self.fused_time_saved_s)}",
        ])


def op_cost(kind: str, hardware: Any, dtype: str = "bfloat16", *, shape: Any = None, flops_per_element: int = 1,
            inputs: int = 1, outputs: int = 1, norm: str = "rmsnorm", m: int | None = None, n: int | None = None,
            k: int | None = None, batch: int = 1, heads: int | None = None, kv_heads: int | None = None,
            head_dim: int = 128, q_len: int | None = None, kv_len: int = 0, out_channels: int | None = None,
            kernel_size: Any = None, stride: int = 1, padding: int = 0, engine: str | None = None,
            causal: bool = True, **execution: Any) -> OneOpCost:
    """The cost of one op on `hardware`.

    kind="elementwise": `inputs` tensors of `shape` in, `outputs` out, flops_per_element vector FLOPs each.
    kind="norm": RMSNorm (or norm="layernorm") over the last axis of `shape` (4 or 7 FLOPs per element).
    kind="matmul": [m, k] @ [k, n] with the weight [k, n] read once (a linear layer).
    kind="attention": fused (flash) attention of `batch` sequences, `heads` query heads (kv_heads K/V heads,
    default heads) of head_dim: q_len new tokens each after kv_len cached ones; q_len = 1 is a decode step
    (kv_len + 1 keys), kv_len = 0 a causal prefill (q_len (q_len + 1) / 2 query-key pairs per head).
    causal=False (kv_len 0): every token of a sequence attends to all q_len of them (q_len^2 pairs per head),
    as a ViT, DiT or text encoder runs; read from the engine's non-causal (encoder_attention) table where it
    has one (query heads = KV heads, 16-bit).
    kind="conv": a convolution (groups 1) of the input `shape` [N, C_in, *spatial] by out_channels filters of
    kernel_size (one size, or one per spatial axis) at stride and padding, read as its implicit GEMM (a
    measured GEMM table's shape, as traced convolutions are).
    engine: whose kernels and measured tables (default: vllm on a GPU, transformers on a CPU); execution:
    efficiency, overhead, overlap as in simulate().
    """
    from ..cost.op import formula
    from ..cost.symbolic import Expr
    from ..dtypes import MATMUL_PRECISION, canonical_dtype, dtype_bytes
    from ..timing.phases import _one_pass

    kind = check_choice("kind", kind, OP_KINDS)
    dtype = canonical_dtype(dtype, "dtype")
    hw, execution_options, engine_name = _device(hardware, engine, execution)
    from ..timing.roofline import Roofline

    roofline = Roofline(hw, execution_options)
    ab = Expr.sym("ab", dtype_bytes(dtype))
    precision = MATMUL_PRECISION[dtype]
    if kind in ("matmul", "attention", "conv"):  # the matrix unit must have the precision; the error names this field
        try:
            hw.matrix_peak_flops_per_s(precision)
        except OptionError as exc:
            raise OptionError(f"dtype={dtype!r}: {exc}") from None
    fused_launches = 1
    if kind == "attention":
        op, words, saved = _attention(dtype, precision, batch, heads, kv_heads, head_dim, q_len, kv_len, ab, causal)
        fused_launches = 2
    elif kind == "conv":
        op, words, out_elements = _conv(dtype, precision, shape, out_channels, kernel_size, stride, padding, ab)
    elif kind == "matmul":
        from ..cost.builder import _gemm_table_dtype

        M, N, K = (_size(name, v) for name, v in (("m", m), ("n", n), ("k", k)))
        gemm = _gemm_table_dtype(dtype, dtype)
        op = formula("linear")("matmul", 1, T=Expr.sym("T", M), K=Expr.sym("K", K), N=Expr.sym("N", N), wb=ab, ab=ab,
                               precision=precision, kernel_key=("gemm", gemm, K) if gemm else None)
        words, out_elements = f"[{M}, {K}] @ [{K}, {N}]", M * N
    else:
        dims = _shape(shape)
        rows, last = math.prod(dims[:-1]), dims[-1]
        out_elements = rows * last
        if kind == "norm":
            norm = check_choice("norm", norm, ("rmsnorm", "layernorm"))
            op = formula("norm")("norm", 1, T=Expr.sym("T", rows), n=Expr.sym("n", last), ab=ab, kind=norm,
                                 params_per_norm=last * (2 if norm == "layernorm" else 1))
            words = f"{list(dims)} {norm}"
        else:
            flops = _size("flops_per_element", flops_per_element, 0)
            ins, outs = _size("inputs", inputs, 0), _size("outputs", outputs, 1)
            op = formula("elementwise")("elementwise", 1, elements=Expr.sym("E", out_elements), inputs=ins,
                                        outputs=outs, flops_per_element=flops, ab=ab)
            words = f"{list(dims)} x {flops} FLOP/element, {ins} in, {outs} out"
    totals = _one_pass(roofline, _OneOp(op), ())
    where, why = roofline.source_of(op)
    part = {key: float(values[0]) for key, values in totals.per_op.items()}
    matrix = part["matmul_flops"] > 0  # matmuls and attention run on the matrix unit
    peak = hw.matrix_peak_flops_per_s(op.precision) if matrix else hw.vector_peak_flops_per_s(op.precision)
    bandwidth = hw.memory_bandwidth_bytes_per_s
    flops_total, moved, time_s = part["matmul_flops"] + part["vector_flops"], part["bytes"], part["time_s"]
    terms = {"compute": part["compute_s"], "memory": part["memory_s"], "overhead": part["overhead_s"]}
    if kind != "attention":
        saved = 2 * out_elements * dtype_bytes(dtype)
    return OneOpCost(
        kind=kind, shape=words, dtype=dtype, hardware=hw.name, engine=engine_name, flops=flops_total, bytes=moved,
        arithmetic_intensity=flops_total / moved if moved else 0.0, peak_flops_per_s=peak,
        peak_bandwidth_bytes_per_s=bandwidth, ridge_point=peak / bandwidth,
        achievable_ridge_point=(roofline.matmul_flops_per_s(op.precision) if matrix else
                                roofline.vector_flops_per_s(op.precision)) / roofline.bandwidth_for(op.kind),
        bound=max(terms, key=lambda t: terms[t]), time_s=time_s, compute_s=terms["compute"], memory_s=terms["memory"],
        overhead_s=terms["overhead"], achieved_flops_per_s=flops_total / time_s,
        achieved_bandwidth_bytes_per_s=moved / time_s, flops_share_of_peak=flops_total / time_s / peak,
        bandwidth_share_of_peak=moved / time_s / bandwidth, source=where,
        source_reason=why if where == "roofline" else "",
        fused_bytes_saved=saved, fused_what=_FUSED_WHAT["attention" if kind == "attention" else "other"],
        fused_time_saved_s=saved / roofline.bandwidth_for(op.kind) + fused_launches * roofline.launch_s,
    )


def _attention(dtype: str, precision: str, batch: Any, heads: Any, kv_heads: Any, head_dim: Any, q_len: Any,
               kv_len: Any, ab: Any, causal: bool = True) -> tuple[Any, str, float]:
    """The flash_attention op, its words, and the bytes the unfused math kernels would move more."""
    from ..cost.op import formula
    from ..cost.symbolic import Expr
    from ..dtypes import dtype_bytes

    B, H, d = _size("batch", batch), _size("heads", heads), _size("head_dim", head_dim)
    kvh = H if kv_heads is None else _size("kv_heads", kv_heads)
    if H % kvh:
        raise OptionError(f"kv_heads={kvh} must divide heads={H}")
    S, L = _size("q_len", q_len), _size("kv_len", kv_len, 0)
    if not isinstance(causal, bool):
        raise OptionError(f"causal={causal!r}: allowed values: True, False")
    if not causal and L:
        raise OptionError(f"kv_len={L}: non-causal attention (causal=False) has no cached tokens; give kv_len=0")
    keys = L + S  # each query sees the cached keys and the new ones up to itself (causal), or all S (non-causal)
    # per head: all cached keys and the causal triangle of the new ones; non-causal: the full S x S
    pairs = S * L + S * (S + 1) // 2 if causal else S * S
    table = {"bfloat16": "bf16", "float16": "bf16", "fp8": "fp8"}.get(dtype)  # as the cost builder's KV tables
    kernel: dict[str, Any] = {}
    if not causal:
        if table == "bf16" and kvh == H:  # the non-causal tables time 16-bit MHA
            kernel = {"kernel_key": ("encoder_attention", d, H), "kernel_y": Expr.sym("S", S)}
    elif table and S == 1:
        kernel = {"kernel_key": ("decode_attention", table, d, H, kvh), "kernel_y": Expr.sym("keys", keys)}
    elif table and L == 0:
        kernel = {"kernel_key": ("prefill_attention", table, d, H, kvh, 0, False), "kernel_y": Expr.sym("S", S)}
    sym = Expr.sym
    op = formula("flash_attention")("attention", 1, B=sym("B", B), H=sym("H", H), Sq=sym("Sq", S),
                                    Skv=sym("Skv", keys), pairs=sym("pairs", pairs), d=sym("d", d), dv=sym("d", d),
                                    kvh=sym("kvh", kvh), kv_values=sym("kv_values", 2 * d), ab=ab, kvb=ab,
                                    precision=precision, **kernel)
    words = (f"batch {B}, {H} heads ({kvh} KV) of {d}, {S} new token{'s' if S > 1 else ''} after {L} cached"
             if causal else f"batch {B}, {H} heads ({kvh} KV) of {d}, {S} tokens, non-causal")
    return op, words, 4.0 * B * H * S * keys * dtype_bytes(dtype)


def _conv(dtype: str, precision: str, shape: Any, out_channels: Any, kernel_size: Any, stride: Any, padding: Any,
          ab: Any) -> tuple[Any, str, int]:
    """A convolution as one matmul-unit op: input [N, Cin, *S] read once, weights [Cout, Cin, *k], output
    [N, Cout, *S_out] written, S_out = (S + 2 padding - k) // stride + 1 per axis;
    FLOPs = 2 N Cout prod(S_out) Cin prod(k), as FlopCounterMode's conv_flop_count; timed as the implicit GEMM
    M = N prod(S_out), N = Cout, K = Cin prod(k). Returns the op, its words and the output's elements."""
    from ..cost.builder import _gemm_table_dtype
    from ..cost.op import make_op
    from ..cost.symbolic import Expr

    dims = _shape(shape)
    if len(dims) < 3:
        raise OptionError(f"shape={list(dims)} must be the input [N, C_in, *spatial] of a convolution, e.g. 8,64,56,56")
    batch, cin, spatial = dims[0], dims[1], dims[2:]
    cout = _size("out_channels", out_channels)
    if kernel_size is None:
        raise OptionError("kernel_size is missing: give one size (3) or one per spatial axis (3,3)")
    try:
        sizes = _shape([kernel_size] if isinstance(kernel_size, int) else kernel_size)
    except OptionError:
        raise OptionError(f"kernel_size={kernel_size!r} must be an integer >= 1 or one per spatial axis, e.g. 3,3"
                          ) from None
    if len(sizes) == 1:
        sizes = sizes * len(spatial)
    if len(sizes) != len(spatial):
        raise OptionError(f"kernel_size={list(sizes)} must give one size or one per spatial axis ({len(spatial)})")
    step, pad = _size("stride", stride), _size("padding", padding, 0)
    out = tuple((s + 2 * pad - k) // step + 1 for s, k in zip(spatial, sizes))
    if min(out) < 1:
        raise OptionError(f"kernel_size={list(sizes)} is larger than the padded input {list(spatial)} "
                          f"(padding={pad}): no output")
    M, N, K = batch * math.prod(out), cout, cin * math.prod(sizes)
    from ..cost.workload import COUNT_MAX

    if M > COUNT_MAX:  # the bound a matmul's m keeps (a huge padding made 3.2e11 rows)
        raise OptionError(f"padding={pad}, stride={step}: the output {[batch, cout, *out]} is an implicit GEMM of "
                          f"{M:,} rows, past the {COUNT_MAX:,} a matmul's m may have; lower the padding or the shape")
    gemm = _gemm_table_dtype(dtype, dtype)
    sym = Expr.sym
    weight = sym("Wn", cout * K) * ab
    op = make_op("conv", "matmul", 1, matmul_flops=2 * sym("M", M) * sym("N", N) * sym("K", K),
                 bytes_read=sym("X", batch * cin * math.prod(spatial)) * ab + weight,
                 bytes_written=sym("Y", M * N) * ab, weight_bytes=weight, matmul_rows=sym("M", M),
                 matmul_cols=sym("N", N), precision=precision, matmul_depth=K,
                 kernel_key=("gemm", gemm, K) if gemm else None, kernel_x=sym("M", M), kernel_y=sym("N", N))
    words = (f"{list(dims)} * {cout} x {list(sizes)} filters, stride {step}, padding {pad} -> "
             f"{[batch, cout, *out]} (implicit GEMM [{M}, {K}] @ [{K}, {N}])")
    return op, words, M * N


_FUSED_WHAT = {
    "other": "fused with a neighbour: its output not written and read back",
    "attention": "this fused kernel against the unfused math kernels, whose scores reach memory",
}


class _OneOp:
    """One op as the phase machinery reads a graph: its fixed fields and per-run values."""

    def __init__(self, op: Any) -> None:
        from ..timing.op_fields import OpFields, values_of

        self.fixed, self.values, self.ops = OpFields.of([op]), values_of([op]), [op]


def _device(hardware: Any, engine: str | None, execution: dict[str, Any]) -> tuple[Any, Any, str]:
    """The device, execution options (the engine's, then those given) and the engine's name."""
    from ..engines.catalog import check_tables_device, engine_on
    from ..hardware.spec import load_hardware
    from ..timing.roofline import ExecutionOptions

    hw = load_hardware(hardware)
    allowed = set(ExecutionOptions.model_fields) - {"engine", "tables", "table_families"}
    for name in execution:
        if name not in allowed:
            from ..errors import choice_error

            raise choice_error("option", name, allowed | {"engine"})
    chosen = engine_on(engine, hw)
    options = ExecutionOptions.make(**{**chosen.execution, "engine": chosen.name, "tables": chosen.tables,
                                       "table_families": chosen.table_families,
                                       **{k: v for k, v in execution.items() if v is not None}})
    check_tables_device(hw, options.tables)
    return hw, options, chosen.name


def _size(field: str, value: Any, minimum: int = 1) -> int:
    from ..cost.workload import check_one

    if value is None:
        raise OptionError(f"{field} is missing: give an integer >= {minimum}")
    return check_one(field, value, minimum)


def _shape(shape: Any) -> tuple[int, ...]:
    """A tensor shape: a list of integers >= 1 (or "32,2048,4096")."""
    if isinstance(shape, str):
        try:
            shape = [int(p) for p in shape.split(",")]
        except ValueError:
            raise OptionError(f"shape={shape!r} must be integers separated by commas, e.g. 32,2048,4096") from None
    if shape is None or isinstance(shape, (int, float)) or not hasattr(shape, "__iter__") or not list(shape):
        raise OptionError(f"shape={shape!r} must be a non-empty list of integers >= 1, e.g. [32, 2048, 4096]")
    return tuple(_size("shape", v) for v in shape)
