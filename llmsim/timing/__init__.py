"""[Op] x HardwareSpec -> per-op time and bound: the roofline with overheads (roofline) and the phase
totals, prefill and the exact decode sum (phases, the entry points; decode_sum, op_totals, op_fields and
stacking, their machinery). Knows no model family."""
