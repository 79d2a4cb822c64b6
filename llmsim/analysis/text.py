"""How results write a time, and the device they count."""

from __future__ import annotations


def fmt_s(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.2f} us"


def device_word(device_type: str) -> str:
    """What a result counts its devices in: "GPU", or "CPU" on a CPU (one socket, as a hardware file describes
    it): "tokens/s per CPU", "GiB per CPU"."""
    return "CPU" if device_type == "cpu" else "GPU"


# a table's footnote where gen_len = 1: TPOT and what derives from it have no decode step to measure
NO_DECODE_NOTE = "TPOT n/a: generate 1, the prefill samples the only token (no decode step)"
