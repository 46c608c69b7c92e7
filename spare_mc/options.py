"""Global options of spare_mc, validated, in the manner of :func:`xarray.set_options`.

``max_memory``
    Largest memory (bytes) one call may allocate for its results or traces, checked **before** any work starts.
    ``None`` (the default) means half of the memory the operating system reports as available at the time of the
    call. Raise it to run a big job deliberately; lower it to keep a laptop responsive.
``max_tasks``
    Largest number of tasks (each written as one part file) a sweep may create (default 20,000). A sweep over more
    grid points is refused before any work with the count in the message: raise ``block`` in the spec (more
    replications per task), or raise this limit.

Examples
--------
>>> import spare_mc as sm
>>> with sm.set_options(max_tasks=50):
...     sm.get_options()["max_tasks"]
50
>>> sm.get_options()["max_tasks"]
20000
"""

from __future__ import annotations

from ._lib.validation import UsageValueError, as_int

__all__ = ["set_options", "get_options", "OPTIONS_DEFAULTS"]

#: Defaults of every option.
OPTIONS_DEFAULTS = {"max_memory": None, "max_tasks": 20_000}
_OPTIONS = dict(OPTIONS_DEFAULTS)


def _validate(name, value):
    if name == "max_memory":
        return None if value is None else as_int(value, "max_memory", min_value=1)
    if name == "max_tasks":
        return as_int(value, "max_tasks", min_value=1)

    raise UsageValueError(f"unknown option {name!r}; expected one of {sorted(OPTIONS_DEFAULTS)}")


def get_options() -> dict:
    """A copy of the current options."""
    return dict(_OPTIONS)


class set_options:
    """Set options for the rest of the session, or for a ``with`` block (restored at its end).

    Parameters
    ----------
    max_memory : int or None
        Bytes one call may allocate (``None``: half of the available memory at call time).
    max_tasks : int
        Largest number of sweep tasks.
    """

    def __init__(self, **kwargs):
        new = {name: _validate(name, value) for name, value in kwargs.items()}
        self._old = {name: _OPTIONS[name] for name in new}
        _OPTIONS.update(new)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _OPTIONS.update(self._old)
        return False
