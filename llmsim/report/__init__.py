"""Pictures of results: roofline and sweep plots (the only place matplotlib is imported)."""
