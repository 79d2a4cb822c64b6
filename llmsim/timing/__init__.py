"""[Op] x HardwareSpec -> per-op time and bound: the roofline with overheads (roofline) and the phase
totals, prefill and the exact decode sum (phases). Knows no model family."""
