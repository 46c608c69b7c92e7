"""The version of spare_mc (one place; the package, the CLI and provenance read it from here)."""

__version__ = "0.3.0"
