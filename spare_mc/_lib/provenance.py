"""Provenance of every dataset and JSON output: the schema version and the versions of the software stack (and the
strict JSON every output is written as)."""

from __future__ import annotations

import functools
import hashlib
import math
import os
import platform
from importlib import metadata

import numpy as np

from .version import __version__

__all__ = ["SCHEMA_VERSION", "code_digest", "software_versions", "stamp", "json_safe"]

#: Version of the layout of JSON outputs and datasets; raised whenever a key or a variable changes meaning
#: (2: replications are ``rep`` everywhere, capped runs are censored observations, provenance of the stack).
SCHEMA_VERSION = 2

_STACK = ("numpy", "numba", "scipy", "xarray", "dask", "distributed")


def software_versions() -> dict:
    """``{"spare_mc": ..., "python": ..., "numpy": ..., "numba": ..., "scipy": ..., "xarray": ..., "dask": ...}``."""

    out = {"spare_mc": __version__, "python": platform.python_version()}
    for name in _STACK:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:  # pragma: no cover - an optional part of the stack
            out[name] = "not installed"
    return out


def stamp(out: dict) -> dict:
    """``out`` led by the schema version and the versions of the software stack, as every JSON output is."""
    return {"schema_version": SCHEMA_VERSION, "software": software_versions(), **out}


def json_safe(x):
    """``x`` with every NaN and infinity (in dicts, lists and tuples) replaced by ``None``: strict JSON (``NaN``
    is not JSON)."""
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, (float, np.floating)) and not math.isfinite(x):
        return None
    return x


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """A digest of the spare_mc code in use: its Python sources and package data (``*.py``, ``*.json``,
    ``*.toml``, ``*.csv`` under the package folder, by relative path). The version string alone does not name the
    code (it stayed 0.2.0 across changes of the random draws); a sweep's parts and its dask workers must all come
    from one code, which this checks (:mod:`spare_mc.sweep.runner`). Computed once per process, when ``spare_mc`` is
    imported, so that it names the code loaded then even if the files change later (1.7 ms measured for the
    1.3 MB of files)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package, above _lib/
    h = hashlib.sha256()
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files += [os.path.join(folder, n) for n in names if n.endswith((".py", ".json", ".toml", ".csv"))]
    for path in sorted(files, key=lambda f: os.path.relpath(f, root)):
        h.update(os.path.relpath(path, root).replace(os.sep, "/").encode() + b"\0")
        with open(path, "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()[:16]
