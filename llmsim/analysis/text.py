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
