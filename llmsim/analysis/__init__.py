"""What users ask: simulate (one static batch), memory footprint, regime sweeps and crossovers, first
limits, and multi-GPU plans. Composes models, cost, hardware and timing."""
