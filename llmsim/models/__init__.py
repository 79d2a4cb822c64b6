"""config.json -> ModelSpec: the normalised architecture (spec), one adapter per family (hf_config), and
the loader that takes a shipped name, a path, a dict or a PretrainedConfig (loading). Imports nothing above it."""
