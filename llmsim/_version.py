"""The package version, the same as pyproject.toml's [project] version."""

__version__ = "0.2.0"
