"""A first SPARe job compiles the timeline in a second process while this one compiles ReCtlr (issue 38).

With an empty numba cache a first SPARe job compiles two things that do not depend on each other: ReCtlr (its
fully live state, :func:`~spare_mc._kernels.timeline.live_state`, and the kernels the timeline calls through
:mod:`spare_mc._kernels.rectlr_calls`; about 12 s on 2 cores) and the timeline kernel (about 11 s). One after the
other they cost a first ``simulate_ttt`` of the paper's SPARe job about 27 s; at once, in two processes, about
16.5 s for the whole process (2026-12-07, 2 cores, alternated with the revision before:
``benchmarks/bench_cold_start.py --commands ttt``, 16.5 and 16.7 s against 26.9 and 27.1 s).

:func:`start` is called when a SPARe config's job plan is built, before it compiles ReCtlr. If numba's cache holds
neither the timeline's variant nor ReCtlr, it starts one process that compiles the timeline's variant into the
cache (by running a 4-step CKPT-only job of that variant, which has the same compiled signature as every job of
the variant: :func:`spare_mc.ttt.run.compile_variant`) and tells the user once. :func:`wait` is called before a
job's first kernel call: it waits for that process, after which the kernel loads from the cache.

- The process writes nothing but numba's cache and changes no result.
- If it cannot be started or fails, one line says so and the job compiles what it lacks itself, as it would have.
- A process still running after :data:`WAIT_S` is stopped.
- ``SPARE_MC_COMPILE_AHEAD=0`` (:data:`AHEAD_ENV`) turns it off; so do a single usable CPU and the warm-up
  processes of :mod:`spare_mc.sweep.warm` when they already run in parallel. The test suite turns it off (what
  its tests capture must not depend on the cache); its own tests turn it on.
- The process must import this very ``spare_mc`` (it compiles into that copy's cache): one found first elsewhere
  on its path makes it fail, with a line that says so.
- Threads: one process per variant; every thread that reaches :func:`wait` waits for it. An interruption while
  waiting stops the process; the process is stopped at the interpreter's exit if still running.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import tempfile
import threading

from .._kernels import cache as _cache
from .._kernels import timeline as _tk
from .._lib.resources import usable_cpus as _usable_cpus

#: The environment variable that turns the second process off (``0`` or ``off``).
AHEAD_ENV = "SPARE_MC_COMPILE_AHEAD"
#: About how long a first SPARe job compiles with the second process, per variant (basic, extended; seconds of
#: wall time on 2 cores, 2026-12-07: the second process's compile of the variant bounds it).
COMPILE_S = (17.0, 35.0)
#: A process still running after this many seconds is stopped (the job then compiles what it lacks).
WAIT_S = 600.0

#: What the process runs. The directory that holds this package goes to the *end* of its path, so that it never
#: shadows another module; the process then checks that it imported this process's ``spare_mc``.
_CHILD = ("import os, sys; sys.path.append({root!r}); import spare_mc; "
          "sys.exit('another spare_mc comes first on its path: ' + spare_mc.__file__) "
          "if os.path.realpath(spare_mc.__file__) != {init!r} else None; "
          "from spare_mc.ttt.run import compile_variant; compile_variant(sys.argv[1] == 'extended')")
#: This package's ``__init__.py``, which the process must import
_INIT = os.path.realpath(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "__init__.py"))

#: per variant (True: the extended one): the process compiling it and its standard error, or None once decided
_pending: dict = {}
_lock = threading.RLock()


def _variant_cached(extended: bool) -> bool:
    return _cache.compiled_or_cached(_tk.timeline, _tk.variant_signature(extended))


def start(extended: bool) -> bool:
    """Before a SPARe config first compiles ReCtlr: start compiling the timeline's variant (``extended``: the
    extended one, see :func:`spare_mc._kernels.timeline.variant`) in a second process, unless it or ReCtlr is
    cached, it was decided already in this process, :data:`AHEAD_ENV` is off or a single CPU is usable.

    Returns
    -------
    bool
        Whether it started one. O(1) after the first call of each variant.
    """
    if extended in _pending:
        return False
    with _lock:
        if extended in _pending:
            return False
        _pending[extended] = None
        if _cache.env_off(AHEAD_ENV) or _usable_cpus() < 2 or not sys.executable or _variant_cached(extended) \
                or _cache.compiled_or_cached(_tk.live_state):
            return False
        child = _CHILD.format(root=os.path.dirname(os.path.dirname(_INIT)), init=_INIT)
        env = {**os.environ, AHEAD_ENV: "0", _cache.NOTICE_ENV: "0"}
        # a file, not a pipe (a pipe that fills would block the process); open until wait() reads it
        err = tempfile.TemporaryFile(mode="w+", errors="replace")  # noqa: SIM115
        try:
            proc = subprocess.Popen([sys.executable, "-c", child, "extended" if extended else "basic"],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env)
        except (OSError, ValueError) as exc:  # no process to be had: the job compiles it itself
            err.close()
            _say(f"spare-mc: could not start a process to compile the timeline kernel ahead ({exc}); the first job "
                 f"compiles it itself")
            return False
        _pending[extended] = (proc, err)
        atexit.register(_cache.stop, proc)
    if not _cache.env_off(_cache.NOTICE_ENV):
        _say(f"spare-mc: compiling ReCtlr and the timeline kernel{' (its extended variant)' if extended else ''} "
             f"for a first run on this machine, in two processes: about {COMPILE_S[extended]:.0f} s on 2 cores, once "
             f"(numba keeps the machine code in its cache for later runs)")
    return True


def wait(extended: bool) -> None:
    """Before a job's kernel call: wait for the process compiling the timeline's variant ``extended``, if one is
    running (O(1) otherwise; every thread that calls it waits). A process that failed or took over
    :data:`WAIT_S` is reported in one line, and the job compiles what it lacks itself; an interruption stops the
    process and propagates."""
    if _pending.get(extended) is None:
        return
    with _lock:
        entry = _pending.get(extended)
        if entry is None:  # another thread waited for it meanwhile
            return
        proc, err = entry
        try:
            _cache.finish(proc, err, "the timeline kernel", "the job", WAIT_S, _say)
        finally:
            _pending[extended] = None
            err.close()


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
