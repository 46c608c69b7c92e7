"""A first run's kernels compiled in parallel processes (issue 38: the cold start).

With an empty numba cache a first run compiles every kernel it calls, one after another, when it first calls it.
``spare-mc reproduce`` calls three families that do not depend on one another: the timeline kernel (its sweeps of
time to train, the main table and the phase map), ReCtlr's Monte Carlo driver (the overhead sweep) and the wipe-out
kernels (the masked-failure sweep), and its dask workers each compiled the kernel of the task they were given, the
same kernel at the same time. :func:`warm_up` compiles the families in separate processes at once, each into
numba's on-disk cache, from which the run (this process, its dask workers, the phase map's processes) then loads
them, and tells the user once that it is compiling and about how long it takes.

Each process runs one replication of a few points of each of its sweeps (:func:`_kinds`): one point per
combination of the sweep's non-numeric parameters and of :func:`~spare_mc.sweep.tasks.kernel_key`. Numeric values
change no compiled type, but some choose the kernel: ``N`` and ``r`` choose among the wipe-out kernels. Until
2026-12-07 it ran one point per non-numeric combination only, so the quick masked-failure sweep compiled three of
its six kernels in its dask workers after the warm-up (about 4.5 s of a cold ``spare-mc reproduce --quick``), and a
family counted as cached when any one of its kernels was. It writes nothing but numba's cache and changes no
result: a run draws its own numbers from its own seeds. A family whose kernels are all in the cache
(:func:`_cached`) starts no process. A process that fails is reported in one line and the run compiles what it
needs itself, as it would have.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

from .._kernels import cache as _cache
from .._kernels import rectlr, wipeout
from .._kernels import timeline as tk
from .._lib.resources import usable_cpus
from ..ttt.cold_start import AHEAD_ENV
from .spec import SweepSpec
from .tasks import kernel_key, run_task

__all__ = ["warm_up"]

#: Seconds to compile each family with an empty cache, measured on 2 cores (the groups are balanced on them; "ttt":
#: ReCtlr and the timeline, one after the other, 2026-12-07; the others 2026-12-06).
COMPILE_S = {"ttt": 24.0, "overhead": 17.0, "wipeout": 14.0}
#: At most this many points of a sweep are run to compile its kernels.
MAX_POINTS = 64
#: A warm-up process still running after this many seconds is stopped (the run then compiles what it lacks).
WAIT_S = 900.0
#: The kernel each :func:`~spare_mc.sweep.tasks.kernel_key` of a wipe-out or overhead point names (the functions of
#: :mod:`spare_mc._kernels.wipeout` and :mod:`spare_mc._kernels.rectlr`), which :func:`_cached` looks up.
_KERNEL_OF = {("wipeout", "sequential"): (wipeout, "wipeout_generic"),
              ("wipeout", "cyclic-window"): (wipeout, "wipeout_cyclic_window"),
              ("wipeout", "cyclic-unit"): (wipeout, "wipeout_cyclic_unit"),
              ("wipeout", "partition"): (wipeout, "wipeout_partition"),
              ("wipeout", "fresh"): (wipeout, "wipeout_random_fresh"),
              ("wipeout", "order"): (wipeout, "wipeout_order_stat"),
              ("wipeout", "events"): (wipeout, "wipeout_events"),
              ("overhead", "uniform"): (rectlr, "overhead_uniform"),
              ("overhead", "events"): (rectlr, "overhead_events")}


#: What a warm-up process runs: :func:`_run` on the sweeps it reads from its standard input. The directory that
#: holds this package goes to the *end* of its path: it finds the same ``spare_mc`` as this process (installed, on
#: ``PYTHONPATH`` or in the working directory, which it inherits) and never shadows another module with it.
_CHILD = ("import sys; sys.path.append({root!r}); from spare_mc.sweep.warm import _run; "
          "_run(sys.stdin.read())")


def _families(specs) -> dict:
    """``{quantity: [spec, ...]}`` of the sweeps ``specs``."""
    out: dict = {}
    for sp in specs:
        out.setdefault(sp.quantity, []).append(sp)
    return out


def _cached(quantity: str, specs) -> bool:
    """Whether every kernel that the sweeps ``specs`` (of ``quantity``) run is in numba's cache (or compiled in this
    process): the kernel of each :func:`~spare_mc.sweep.tasks.kernel_key` of their points (:func:`_kinds`), for the
    timeline its variant and, for SPARe, ReCtlr's initial state (``live_state``)."""
    found = [(params, key) for sp in specs for _, params, key in _kinds(quantity, sp)]
    if quantity == "ttt":
        return (all(_cache.compiled_or_cached(tk.timeline, tk.variant_signature(key == "extended"))
                    for key in {key for _, key in found})
                and (all(p.get("strategy") != "spare" for p, _ in found) or _cache.compiled_or_cached(tk.live_state)))
    kernels = {_KERNEL_OF[quantity, key] for _, key in found}
    return all(_cache.compiled_or_cached(getattr(module, name)) for module, name in kernels)


def _kinds(quantity: str, spec: SweepSpec) -> list:
    """``[(idx, params, key), ...]``: the first point of each combination of ``spec``'s non-numeric parameters and
    :func:`~spare_mc.sweep.tasks.kernel_key` ``key`` (at most :data:`MAX_POINTS`), in the sweep's order. The key is
    computed once per combination of non-numeric parameters, ``N`` and ``r``, which are what choose a kernel."""
    seen, keys, out = set(), {}, []
    for idx, params in spec.points():
        kind = tuple(sorted((k, v) for k, v in params.items() if isinstance(v, (str, bool)) or v is None))
        at = (kind, params.get("n_groups"), params.get("r"))
        if at not in keys:
            keys[at] = kernel_key(quantity, params, spec.lenient)
        if (kind, keys[at]) in seen:
            continue
        seen.add((kind, keys[at]))
        out.append((idx, params, keys[at]))
        if len(out) >= MAX_POINTS:
            break
    return out


def _split(families: dict, n: int) -> list:
    """The families dealt to ``n`` processes, the longest first, each to the least loaded (greedy)."""
    loads = [[0.0, []] for _ in range(n)]
    for q in sorted(families, key=lambda q: -COMPILE_S.get(q, 10.0)):
        least = min(loads, key=lambda x: x[0])
        least[0] += COMPILE_S.get(q, 10.0)
        least[1].append(q)
    return [names for _, names in loads if names]


def warm_up(specs, *, processes: int | None = None, log=None) -> float:
    """Compile the kernels the sweeps ``specs`` (:class:`~spare_mc.sweep.spec.SweepSpec`) run, in up to
    ``processes`` processes at once (default: the number of CPUs), unless they are in numba's cache already.

    Returns the seconds it took (0.0 if everything was cached). ``log`` (default: standard error) gets one line
    before it compiles and one per process that failed. Ctrl-C stops the processes and propagates.
    """
    if log is None:
        def log(msg):
            print(msg, file=sys.stderr, flush=True)
    try:
        families = {q: [sp.to_toml() for sp in sps] for q, sps in _families(specs).items() if not _cached(q, sps)}
    except Exception as exc:  # noqa: BLE001 -- a bug of kernel_key (the points were checked): said, not fatal
        log(f"spare-mc: could not tell which kernels to compile ahead ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())}); the run compiles what it needs itself")
        return 0.0
    if not families:
        return 0.0
    n = max(1, min(processes or usable_cpus(), len(families)))
    groups = _split(families, n)
    est = max(sum(COMPILE_S.get(q, 10.0) for q in g) for g in groups)
    log(f"spare-mc: compiling the kernels of a first run on this machine ({', '.join(sorted(families))}) in "
        f"{len(groups)} process{'es' if len(groups) > 1 else ''}: about {est:.0f} s on 2 cores, once (numba keeps "
        f"the machine code in its cache for later runs)")
    t0 = time.perf_counter()
    env = {**os.environ, _cache.NOTICE_ENV: "0"}  # this line said it
    if len(groups) > 1:  # the processes already compile in parallel: none starts one more for its first SPARe job
        env[AHEAD_ENV] = "0"
    child = _CHILD.format(root=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    procs = []
    with contextlib.ExitStack() as files:
        try:
            for g in groups:
                payload = json.dumps({q: families[q] for q in g})
                # a child's messages go to a file, not a pipe: a pipe that fills while this process waits on another
                # child would block it
                err = files.enter_context(tempfile.TemporaryFile(mode="w+", errors="replace"))
                try:
                    proc = subprocess.Popen([sys.executable, "-c", child], stdin=subprocess.PIPE,
                                            stdout=subprocess.DEVNULL, stderr=err, env=env, text=True)
                except OSError as exc:  # no process to be had (resources): the run compiles what it needs
                    log(f"spare-mc: could not start a process to compile {', '.join(g)} ahead ({exc}); the run "
                        f"compiles it itself")
                    continue
                procs.append((g, err, proc))
                try:
                    proc.stdin.write(payload)
                except BrokenPipeError:  # it exited at once: its exit status says why (below)
                    pass
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            for g, err, proc in procs:
                _cache.finish(proc, err, ", ".join(g), "the run", WAIT_S, log)
        finally:
            for _, _, p in procs:
                _cache.stop(p)
    return time.perf_counter() - t0


def _run(payload: str) -> None:
    """In a warm-up process: one replication of up to :data:`MAX_POINTS` points of each sweep of ``payload``
    (``{quantity: [spec TOML, ...]}``), one per kernel it runs (:func:`_run_spec`). A sweep that fails does
    not stop the others; the process then exits with status 1 and the last failure's message on standard error."""
    failed = None
    for quantity, texts in json.loads(payload).items():
        for text in texts:
            try:
                _run_spec(quantity, SweepSpec.from_toml(text))
            except Exception as exc:  # noqa: BLE001 -- reported by the parent in one line; the run compiles it
                failed = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    if failed:
        print(failed, file=sys.stderr)
        sys.exit(1)


def _run_spec(quantity: str, spec: SweepSpec) -> None:
    """One replication of each point of :func:`_kinds`."""
    for idx, params, _ in _kinds(quantity, spec):
        run_task(quantity, spec.seed, idx, params, 0, 1, spec.lenient)
