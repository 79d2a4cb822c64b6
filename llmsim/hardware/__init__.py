"""HardwareSpec: a device's datasheet ceilings, overheads and measured curves, each number with its
source (spec), read from the shipped or the user's TOML files."""

from .spec import HardwareSpec, hardware_from_dict, load_hardware

__all__ = ["HardwareSpec", "hardware_from_dict", "load_hardware"]
