"""A first SPARe job compiles the timeline in a second process while this one compiles ReCtlr (issue 38).

With an empty numba cache a first SPARe job compiles two things that do not depend on each other: ReCtlr (its
fully live state, :func:`~spare_mc._kernels.timeline.live_state`, and the kernels the timeline calls through
:mod:`spare_mc._kernels.rectlr_calls`; about 12 s on 2 cores) and the timeline kernel (about 13 s). One after the
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
- ``SPARE_MC_COMPILE_AHEAD=0`` (:data:`AHEAD_ENV`) turns it off; the warm-up processes of
  :mod:`spare_mc.sweep.warm`, which already compile in parallel, set it.
- A failure log's jobs are guessed to need the basic variant unless the config says otherwise; a wrong guess
  compiles a variant the job does not use (time, not results).
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import tempfile

from numba import types

from .._kernels import cache as _cache
from .._kernels import timeline as _tk

#: The environment variable that turns the second process off (``0`` or ``off``).
AHEAD_ENV = "SPARE_MC_COMPILE_AHEAD"
#: About how long a first SPARe job compiles with the second process, per variant (basic, extended; seconds of
#: wall time on 2 cores, 2026-12-07: the second process's compile of the variant bounds it).
COMPILE_S = (17.0, 35.0)
#: A process still running after this many seconds is stopped (the job then compiles what it lacks).
WAIT_S = 600.0

#: What the process runs. The directory that holds this package goes to the *end* of its path: it finds the same
#: ``spare_mc`` as this process and never shadows another module.
_CHILD = ("import sys; sys.path.append({root!r}); from spare_mc.ttt.run import compile_variant; "
          "compile_variant(sys.argv[1] == 'extended')")

#: per variant (True: the extended one): the process compiling it and its standard error, or None once decided
_pending: dict = {}


def _off(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("0", "off", "no", "false")


def _variant_cached(extended: bool) -> bool:
    return _cache.compiled_or_cached(_tk.timeline, lambda sig: isinstance(sig[-1], types.NoneType) != extended)


def start(extended: bool) -> bool:
    """Before a SPARe config first compiles ReCtlr: start compiling the timeline's variant (``extended``: the
    extended one, see :func:`spare_mc._kernels.timeline.variant`) in a second process, unless it or ReCtlr is
    cached, it was decided already in this process, or :data:`AHEAD_ENV` is off. Returns whether it started one.
    O(1) after the first call of each variant."""
    if extended in _pending:
        return False
    _pending[extended] = None
    if _off(AHEAD_ENV) or _variant_cached(extended) or _cache.compiled_or_cached(_tk.live_state):
        return False
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, AHEAD_ENV: "0", _cache.NOTICE_ENV: "0"}
    # a file, not a pipe (a pipe that fills would block the process); kept open until wait() reads it
    err = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115
    try:
        proc = subprocess.Popen([sys.executable, "-c", _CHILD.format(root=root),
                                 "extended" if extended else "basic"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env)
    except OSError as exc:  # no process to be had: the job compiles it itself
        err.close()
        _say(f"spare-mc: could not start a process to compile the timeline kernel ahead ({exc}); the first job "
             f"compiles it itself")
        return False
    _pending[extended] = (proc, err)
    atexit.register(_stop, proc)
    if not _off(_cache.NOTICE_ENV):
        _say(f"spare-mc: compiling ReCtlr and the timeline kernel{' (its extended variant)' if extended else ''} "
             f"for a first run on this machine, in two processes: about {COMPILE_S[extended]:.0f} s on 2 cores, once "
             f"(numba keeps the machine code in its cache for later runs)")
    return True


def wait(extended: bool) -> None:
    """Before a job's kernel call: wait for the process compiling the timeline's variant ``extended``, if one is
    running (O(1) otherwise). A process that failed or took over :data:`WAIT_S` is reported in one line."""
    entry = _pending.get(extended)
    if entry is None:
        return
    _pending[extended] = None
    proc, err = entry
    try:
        finish(proc, err, "the timeline kernel", "the job", WAIT_S, _say)
    finally:
        err.close()


def finish(proc, err, what: str, who: str, timeout: float, log) -> None:
    """Wait up to ``timeout`` seconds for the process ``proc`` compiling ``what`` ahead (its standard error in the
    file ``err``), stop it if it is still running then, and ``log`` one line if it was stopped or failed (``who``
    compiles it itself then). Also :mod:`spare_mc.sweep.warm`'s."""
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        log(f"spare-mc: compiling {what} ahead took over {timeout:.0f} s and was stopped; {who} compiles it itself")
        return
    if rc != 0:
        err.seek(0)
        last = (err.read().strip().splitlines() or ["no message"])[-1]
        log(f"spare-mc: compiling {what} ahead failed ({last}); {who} compiles it itself")


def _stop(proc) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
