"""OpColumns: the fields of a list of ops that the roofline reads besides their FLOPs and bytes, along an op
axis, made once per op list; and each op's rates along that axis (op_rates, cached)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

# op kinds whose memory traffic follows the hardware file's elementwise_bytes curve, where it has one
ELEMENTWISE_KINDS = ("norm", "elementwise", "embedding", "routing", "cache")


@dataclass(frozen=True, eq=False)  # hashed by identity: one per op list, made once (see op_rates)
class OpColumns:
    """The fields of a list of ops that the roofline reads besides their FLOPs and bytes, along an op
    axis (index i is op i): fixed by the model, phase and options, whatever the workload."""

    kinds: tuple[str, ...]
    precision_names: tuple[str, ...]  # the precisions that occur, each once
    precision_index: np.ndarray  # op -> its precision's index in precision_names
    is_matmul: np.ndarray  # bool
    launches: np.ndarray  # float
    # (key, op indices) of the ops a shape curve may apply to: matmuls with matmul_rows by (precision,
    # weight layout, inner dimension K) (row_groups), element-wise kinds by precision (size_groups)
    row_groups: tuple[tuple[tuple[str, str, int], np.ndarray], ...]
    size_groups: tuple[tuple[str, np.ndarray], ...]
    # (kernel key, op indices) of the ops that name a measured kernel (Op.kernel_key; timing.measured): GEMMs
    # grouped by dtype alone, each op's K in kernel_depth (one table read for all of a dtype's GEMMs)
    kernel_groups: tuple[tuple[tuple, np.ndarray], ...] = ()
    kernel_depth: np.ndarray | None = None
    is_host: np.ndarray | None = None  # bool: host work ops ("engine.step"), timed by ExecutionOptions.step_host_s

    @classmethod
    def of(cls, ops: list[Any]) -> OpColumns:
        precisions = [op.precision for op in ops]
        names = tuple(dict.fromkeys(precisions))
        kinds = tuple(op.kind for op in ops)
        has_rows = [kind == "matmul" and "matmul_rows" in op.formulas for kind, op in zip(kinds, ops)]
        elementwise = [kind in ELEMENTWISE_KINDS for kind in kinds]
        return cls(
            kinds=kinds, precision_names=names,
            precision_index=np.array([names.index(p) for p in precisions], dtype=int),
            is_matmul=np.array([kind == "matmul" for kind in kinds], dtype=bool),
            launches=np.array([op.launches for op in ops], dtype=float),
            row_groups=_groups([(op.precision, op.weight_layout, op.matmul_depth) for op in ops], has_rows),
            size_groups=_groups(precisions, elementwise),
            kernel_groups=_groups([group_key(op.kernel_key) for op in ops], [op.kernel_key is not None for op in ops]),
            kernel_depth=np.array([op.kernel_key[2] if op.kernel_key and op.kernel_key[0] == "gemm" else 0
                                   for op in ops], dtype=float),
            is_host=np.array([kind == "host" for kind in kinds], dtype=bool) if "host" in kinds else None,
        )


def group_key(key: tuple | None) -> tuple | None:
    """GEMM keys without their K (one group per dtype); other kernel keys whole."""
    return key[:2] if key is not None and key[0] == "gemm" else key


def _groups(keys: list[Any], selected: list[bool]) -> tuple[tuple[Any, np.ndarray], ...]:
    """(key, indices) of the selected ops, one entry per key (a precision, or precision and layout)."""
    indices: dict[Any, list[int]] = {}
    for i, (key, chosen) in enumerate(zip(keys, selected)):
        if chosen:
            indices.setdefault(key, []).append(i)
    return tuple((key, np.array(where, dtype=int)) for key, where in indices.items())


@lru_cache(maxsize=1024)
def op_rates(ops: OpColumns, ndim: int, matmul_flops_per_s: tuple[float, ...], vector_flops_per_s: tuple[float, ...],
              bandwidths_bytes_per_s: tuple[float, float]) -> tuple[np.ndarray, ...]:
    """Each op's matrix and vector peak (given per precision of ops.precision_names), bandwidth (matmul,
    other) and launches along the op axis, broadcasting over `ndim` workload axes (read-only: shared)."""
    lift = (len(ops.kinds),) + (1,) * ndim
    rates = (np.array(matmul_flops_per_s)[ops.precision_index], np.array(vector_flops_per_s)[ops.precision_index],
             np.where(ops.is_matmul, *bandwidths_bytes_per_s), ops.launches)
    lifted = tuple(rate.reshape(lift) for rate in rates)
    for rate in lifted:
        rate.flags.writeable = False
    return lifted
