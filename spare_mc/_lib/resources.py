"""Resource estimates checked before any work: memory of results and traces, number of sweep tasks.

A call that would need more than the budget (:mod:`spare_mc.options`: ``max_memory``, by default half of the memory
the system reports as available) raises :class:`ResourceLimitError` before allocating, with the estimate, the
budget and what to do, instead of being killed by the operating system minutes later.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from ..options import get_options
from .validation import UsageValueError, as_int

__all__ = ["ResourceLimitError", "available_memory", "memory_budget", "check_memory", "memory_negligible",
           "format_bytes", "parse_size", "check_local_workers", "usable_cpus", "LOCAL_WORKERS_PER_CPU"]

#: Without a ``max_memory`` option, requests up to this size (1 MiB) pass :func:`check_memory` without reading the
#: system's available memory (``/proc/meminfo``, ~0.1 ms: more than a short timeline job's setup): the interpreter
#: with numpy and numba loaded holds a hundred times as much, so a system that cannot spare it is failing anyway.
NEGLIGIBLE_BYTES = 1 << 20


class ResourceLimitError(UsageValueError):
    """The request needs more memory or tasks than the configured limit allows."""


#: Local worker processes allowed per CPU. Each is a Python process with numpy, numba and its compiled kernels
#: (about 200 MB) that runs one task at a time, so beyond one per CPU they only add memory and start-up time; the
#: limit stops a typo (``--workers 1000``) from starting a thousand processes. More machines: a dask scheduler.
LOCAL_WORKERS_PER_CPU = 4


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask (``taskset``, a batch scheduler's CPU binding, a
    container's cpuset), else the machine's count. The default number of local workers: ``os.cpu_count()`` counts
    the machine's CPUs, so on a 128-core node where a job was given 4 it would start 128 worker processes."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def check_local_workers(workers, name: str = "workers", *, min_value: int = 0, scheduler: bool = True):
    """``workers`` (None: the default, kept) as an int in ``min_value .. LOCAL_WORKERS_PER_CPU x CPUs``, or a
    :class:`ResourceLimitError` naming ``name`` and the rule (and, with ``scheduler``, pointing to a dask scheduler
    for more machines: only for callers that take one)."""

    if workers is None:
        return None
    workers = as_int(workers, name, min_value=min_value)
    cpus = usable_cpus()
    if workers > LOCAL_WORKERS_PER_CPU * cpus:
        raise ResourceLimitError(f"`{name}`={workers} local worker processes is more than {LOCAL_WORKERS_PER_CPU} per "
                                 f"CPU ({LOCAL_WORKERS_PER_CPU * cpus} on {cpus} CPUs): each is a process of about "
                                 f"200 MB that runs one task at a time, so more only slows the run"
                                 + ("; for more machines start a dask scheduler and pass its address (`scheduler`)"
                                    if scheduler else ""))
    return workers


def available_memory() -> int:
    """Bytes the operating system reports as available now (``MemAvailable``; physical memory as a fallback)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    try:  # pragma: no cover - not Linux
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return 8 << 30


def memory_budget() -> int:
    """The current budget in bytes (the ``max_memory`` option, or half of :func:`available_memory`)."""

    limit = get_options()["max_memory"]
    return int(limit) if limit is not None else available_memory() // 2


def format_bytes(n: float) -> str:
    """``1.5 GB``-style text (powers of 1024)."""
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1024 or unit == "PB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.3g} PB"  # pragma: no cover


def memory_negligible(nbytes: float) -> bool:
    """Whether ``nbytes`` passes :func:`check_memory` without a look at the memory: at most
    :data:`NEGLIGIBLE_BYTES` and no ``max_memory`` option set (a set limit is always honoured)."""

    return nbytes <= NEGLIGIBLE_BYTES and get_options()["max_memory"] is None


def check_memory(nbytes: float, what: str | Callable[[], str], hint: str = "") -> None:
    """Raise :class:`ResourceLimitError` if ``nbytes`` exceeds :func:`memory_budget` (a request that is
    :func:`memory_negligible` passes at once).

    ``what`` says what would be allocated ("per-replication results of 1e9 replications"), ``hint`` how to need
    less. ``what`` may also be a function returning that text, called only when the check fails: a caller on a hot
    path (one call per timeline job) then does not format a message that is almost never shown.
    """

    if memory_negligible(nbytes):
        return
    budget = memory_budget()
    if nbytes > budget:
        what = what() if callable(what) else what
        hint = f"; {hint}" if hint else ""
        source = ("the max_memory option" if get_options()["max_memory"] is not None
                  else "half of the available memory")
        raise ResourceLimitError(
            f"{what} would need about {format_bytes(nbytes)}, more than the memory budget of {format_bytes(budget)} "
            f"({source}){hint}. To allow it, raise the budget: spare_mc.set_options(max_memory=...) or "
            f"`spare-mc <command> ... --max-memory SIZE`")


_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kKmMgGtT]?)[iI]?[bB]?\s*$")


def parse_size(text: str) -> int:
    """Bytes from ``"512M"``, ``"8G"``, ``"1.5T"`` or a plain number of bytes (powers of 1024)."""
    m = _SIZE.match(str(text))
    if not m:
        raise UsageValueError(f"`--max-memory` must be a size like 512M, 8G or 1.5T, got {text!r}")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    value = int(float(m.group(1)) * scale)
    if value < 1:
        raise UsageValueError(f"`--max-memory` must be positive, got {text!r}")
    return value
