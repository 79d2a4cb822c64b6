"""Everything that imports torch: run real models, calibrate a device, compare and report."""
