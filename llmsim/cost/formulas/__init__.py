"""The op formulas, one small function per op kind with a shape comment, one module per family:
matmul (linear, expert_linear), attention (scores, softmax, sdpa_softmax, repeat_kv, context, flash,
kv_append), linear_attention (causal_conv1d, gated_delta_scan, gated_delta_update), ssm (ssd_scan,
ssd_update: Mamba-2), elementwise (norm, eager_rmsnorm, elementwise, cast, embedding), collective and host
(engine_step). Importing
this package registers each of them once by its name (`cost.op.register`; a duplicate name is
refused); `llmsim.cost` imports it, so `cost.op.formula(name)` always finds them.

Values are per run of the kernel; workload values may be numpy arrays and every formula broadcasts.
FLOPs: 2 per multiply-add (as torch.utils.flop_counter counts matmuls). `matmul_flops` are matrix
products (tensor cores), `vector_flops` everything else.
approximation: vector FLOPs per element are nominal: RMSNorm 4, LayerNorm 7, softmax 5, SiLU 4,
GELU 8, multiply/add 1, rotary 3 per rotated element.
"""

from . import attention, collective, elementwise, host, linear_attention, matmul, ssm

__all__ = ["attention", "collective", "elementwise", "host", "linear_attention", "matmul", "ssm"]
