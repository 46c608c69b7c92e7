"""Provenance of every dataset and JSON output: the schema version and the versions of the software stack."""

from __future__ import annotations

import platform
from importlib import metadata

__all__ = ["SCHEMA_VERSION", "software_versions"]

#: Version of the layout of JSON outputs and datasets; raised whenever a key or a variable changes meaning
#: (2: replications are ``rep`` everywhere, capped runs are censored observations, provenance of the stack).
SCHEMA_VERSION = 2

_STACK = ("numpy", "numba", "scipy", "xarray", "dask", "distributed")


def software_versions() -> dict:
    """``{"spare_mc": ..., "python": ..., "numpy": ..., "numba": ..., "scipy": ..., "xarray": ..., "dask": ...}``."""
    from ._version import __version__

    out = {"spare_mc": __version__, "python": platform.python_version()}
    for name in _STACK:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:  # pragma: no cover - an optional part of the stack
            out[name] = "not installed"
    return out
