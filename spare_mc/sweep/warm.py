"""A first run's kernels compiled in parallel processes (issue 38: the cold start).

With an empty numba cache a first run compiles every kernel it calls, one after another, when it first calls it.
``spare-mc reproduce`` runs three families of sweeps: time to train (the timeline kernel, and ReCtlr for SPARe),
ReCtlr's Monte Carlo driver (the overhead sweep) and the wipe-out kernels (the masked-failure sweep), and its dask
workers each compiled the kernel of the task they were given, the same kernel at the same time. :func:`warm_up`
compiles them first, in parallel processes, into numba's on-disk cache, from which the run (this process, its dask
workers, the phase map's processes) then loads them, and tells the user once that it is compiling and about how
long it takes.

The work is a list of tasks dealt to the processes as they finish (:class:`_Dealer`):

- one point of each sweep per combination of its non-numeric parameters and of
  :func:`~spare_mc.sweep.tasks.kernel_key` (:func:`_kinds`), run for one replication. Numeric values change no
  compiled type, but some choose the kernel: ``N`` and ``r`` choose among the wipe-out kernels. Until 2026-12-07
  it ran one point per non-numeric combination only, so the quick masked-failure sweep compiled three of its six
  kernels in its dask workers after the warm-up.
- the *shared* compilations, which the points that need them wait for: ReCtlr
  (:func:`~spare_mc.ttt.run.compile_rectlr`; SPARe's time to train and the overhead sweep both call it) and each
  variant of the timeline kernel the points run (:func:`~spare_mc.ttt.run.compile_variant`). Until 2026-12-07 the
  families were dealt whole, so the process of the time-to-train sweeps and that of the overhead sweep each compiled
  ReCtlr (about 10 s of CPU) unless one happened to wait for the other; now one process compiles ReCtlr while
  another compiles the timeline, the points that need them follow, and the wipe-out kernels fill the gaps.

Each process takes the ready task (all it waits for done) estimated the longest (:data:`COMPILE_S`), the order of
the list breaking ties; a process with nothing ready waits for the others. The warm-up writes nothing but numba's
cache and changes no result: a run draws its own numbers from its own seeds. A family whose kernels are all in the
cache (:func:`_cached`) adds no task, nor does a shared compilation already cached. A task that fails, whose
process exits while running it, or that never runs because every process has exited is reported in one line per
family, and the run compiles what it needs itself, as it would have. The processes read the sweeps from a file
once; a task is a few bytes on their standard input, and each reply a line on their standard output that starts
with :data:`_REPLY` (anything a task prints goes to their standard error).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

from .._kernels import cache as _cache
from .._kernels import rectlr, wipeout
from .._kernels import timeline as tk
from .._lib.resources import usable_cpus
from ..ttt.cold_start import AHEAD_ENV
from ..ttt.run import compile_rectlr, compile_variant
from .spec import SweepSpec
from .tasks import kernel_key, run_task

__all__ = ["warm_up"]

#: Seconds each task compiles with an empty cache on 2 cores (2026-12-07; each measured alone in a fresh process,
#: after the shared compilations it waits for): the shared ones, then the first point of each kernel of a family (a
#: later point of a kernel already compiled: :data:`LATER_S`). The processes are dealt the longest ready task first
#: and the estimate the user is told is the dealing of these times.
COMPILE_S = {"rectlr": 10.0, "variant:basic": 14.0, "variant:extended": 33.0,
             "ttt": 1.3, "overhead": 2.7, "wipeout": 1.2}
#: A point whose kernel a point before it compiled (in the same sweep family)
LATER_S = 0.1
#: At most this many points of a sweep are run to compile its kernels.
MAX_POINTS = 64
#: The warm-up is stopped after this many seconds (the run then compiles what it lacks).
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
#: How the messages name a shared compilation
_SHARED_NAME = {"rectlr": "ReCtlr", "variant:basic": "the timeline kernel",
                "variant:extended": "the timeline kernel's extended variant"}

#: What a warm-up process runs: :func:`_serve` on the sweeps of the file its argument names, one task per line of
#: its standard input. The directory that holds this package goes to the *end* of its path: it finds the same
#: ``spare_mc`` as this process (installed, on ``PYTHONPATH`` or in the working directory, which it inherits) and
#: never shadows another module with it.
_CHILD = ("import sys; sys.path.append({root!r}); from spare_mc.sweep.warm import _serve; _serve(sys.argv[1])")


def _families(specs) -> dict:
    """``{quantity: [spec, ...]}`` of the sweeps ``specs``."""
    out: dict = {}
    for sp in specs:
        out.setdefault(sp.quantity, []).append(sp)
    return out


def _cached(quantity: str, specs, kinds=None) -> bool:
    """Whether every kernel that the sweeps ``specs`` (of ``quantity``) run is in numba's cache (or compiled in this
    process): the kernel of each :func:`~spare_mc.sweep.tasks.kernel_key` of their points (:func:`_kinds`, or
    ``kinds(quantity, spec)``), for the timeline its variant and, for SPARe, ReCtlr's initial state
    (``live_state``)."""
    kinds = kinds or _kinds
    found = [(params, key) for sp in specs for _, params, key in kinds(quantity, sp)]
    if quantity == "ttt":  # the timeline's kernels are the shared compilations its points need
        return all(_shared_cached(s) for s in {s for params, key in found for s in _needs(quantity, params, key)})
    kernels = {_KERNEL_OF[quantity, key] for _, key in found}
    return all(_cache.compiled_or_cached(getattr(module, name)) for module, name in kernels)


def _needs(quantity: str, params: dict, key: str) -> list:
    """The shared compilations a point of ``quantity`` with parameters ``params`` and kernel key ``key`` runs: the
    timeline's variant and, for SPARe, ReCtlr (time to train); ReCtlr (the overhead sweep); none (wipe-out)."""
    if quantity == "ttt":
        return [f"variant:{key}"] + (["rectlr"] if params.get("strategy") == "spare" else [])
    return ["rectlr"] if quantity == "overhead" else []


def _shared_cached(name: str) -> bool:
    """Whether the shared compilation ``name`` (``"rectlr"``, ``"variant:basic"`` or ``"variant:extended"``) is in
    numba's cache or compiled in this process."""
    if name == "rectlr":
        return _cache.compiled_or_cached(tk.live_state)
    return _cache.compiled_or_cached(tk.timeline, tk.variant_signature(name == "variant:extended"))


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


def _tasks(families: dict, kinds=None) -> tuple:
    """The warm-up's work for ``{quantity: [spec, ...]}``: ``(sweeps, tasks)``, the sweeps as ``[(quantity, spec
    TOML), ...]`` (written once to a file the processes read) and the tasks: the shared compilations the points
    need and numba's cache lacks, then each sweep's points (:func:`_kinds`, or ``kinds(quantity, spec)``), in order.
    A task is a dict: ``family`` (what a failure message names), ``name`` (a shared compilation's), ``needs`` (the
    shared compilations it waits for), ``cost`` (estimated seconds, :data:`COMPILE_S`) and ``msg`` (what its
    process is sent: a few bytes, ``{"shared": name}`` or ``{"spec": i, "k": k}``, the ``k``-th point of sweep
    ``i``)."""
    kinds = kinds or _kinds
    sweeps, points, first = [], [], set()
    for quantity, specs in families.items():
        for sp in specs:
            sweeps.append((quantity, sp.to_toml()))
            for k, (_, params, key) in enumerate(kinds(quantity, sp)):
                spare = params.get("strategy") == "spare"
                needs = _needs(quantity, params, key)
                cost = COMPILE_S[quantity] if (quantity, key, spare) not in first else LATER_S
                first.add((quantity, key, spare))
                points.append({"family": quantity, "needs": needs, "cost": cost,
                               "msg": {"spec": len(sweeps) - 1, "k": k}})
    shared = [s for s in dict.fromkeys(s for p in points for s in p["needs"]) if not _shared_cached(s)]
    for p in points:
        p["needs"] = [s for s in p["needs"] if s in shared]
    return sweeps, [{"family": _SHARED_NAME[s], "name": s, "needs": [], "cost": COMPILE_S[s],
                     "msg": {"shared": s}} for s in shared] + points


class _Dealer:
    """Deals the tasks of :func:`_tasks` to the processes: :meth:`take` gives the ready task (every shared
    compilation it needs finished) estimated the longest, the first in the list among equals, or None if none is
    ready; :meth:`finish` marks a task done (failed ones too: the tasks that waited for it then compile what it
    lacks themselves)."""

    def __init__(self, tasks):
        self.todo = list(tasks)
        self.done: set = set()

    def take(self):
        ready = [t for t in self.todo if all(s in self.done for s in t["needs"])]
        if not ready:
            return None
        task = max(ready, key=lambda t: t["cost"])  # the first of the longest
        self.todo.remove(task)
        return task

    def finish(self, task) -> None:
        if "name" in task:
            self.done.add(task["name"])


def _estimate(tasks, n: int) -> float:
    """Seconds the tasks take in ``n`` processes, dealt as :class:`_Dealer` deals them, each taking its ``cost``."""
    dealer, now, running, idle = _Dealer(tasks), 0.0, [], list(range(n))
    while True:
        while idle:
            task = dealer.take()
            if task is None:
                break
            running.append((now + task["cost"], idle.pop(0), task))
        if not running:
            return now
        running.sort(key=lambda x: (x[0], x[1]))
        now, proc, task = running.pop(0)
        dealer.finish(task)
        idle.append(proc)


def warm_up(specs, *, processes: int | None = None, log=None) -> float:
    """Compile the kernels the sweeps ``specs`` (:class:`~spare_mc.sweep.spec.SweepSpec`) run, in up to
    ``processes`` processes at once (default and most: the number of usable CPUs), unless they are in numba's
    cache already.

    Returns the seconds it took (0.0 if everything was cached). ``log`` (default: standard error) gets one line
    before it compiles and one per family whose compilation failed or did not happen. Ctrl-C stops the processes
    at once and propagates.
    """
    if log is None:
        def log(msg):
            print(msg, file=sys.stderr, flush=True)
    memo: dict = {}

    def kinds(quantity, spec):  # each sweep's points once: _cached and _tasks both need them
        if id(spec) not in memo:
            memo[id(spec)] = _kinds(quantity, spec)
        return memo[id(spec)]
    try:
        families = {q: sps for q, sps in _families(specs).items() if not _cached(q, sps, kinds)}
        sweeps, tasks = _tasks(families, kinds)
    except Exception as exc:  # noqa: BLE001 -- a bug of kernel_key (the points were checked): said, not fatal
        log(f"spare-mc: could not tell which kernels to compile ahead ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())}); the run compiles what it needs itself")
        return 0.0
    if not tasks:
        return 0.0
    n = max(1, min(processes or usable_cpus(), usable_cpus(), len(tasks)))
    log(f"spare-mc: compiling the kernels of a first run on this machine ({', '.join(sorted(families))}) in {n} "
        f"process{'es' if n > 1 else ''}: about {_estimate(tasks, n):.0f} s on 2 cores, once (numba keeps the "
        f"machine code in its cache for later runs)")
    t0 = time.perf_counter()
    env = {**os.environ, _cache.NOTICE_ENV: "0"}  # this line said it
    if n > 1:  # the processes already compile in parallel: none starts one more for its first SPARe job
        env[AHEAD_ENV] = "0"
    child = _CHILD.format(root=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    procs, readers, replies, failed, clean = [], [], queue.Queue(), {}, False
    with contextlib.ExitStack() as files:
        path = _write_sweeps(sweeps, files)
        try:
            for _ in range(n):
                # a child's messages go to a file, not a pipe: a pipe that fills while this process waits on another
                # child would block it
                err = files.enter_context(tempfile.TemporaryFile(mode="w+", errors="replace"))
                try:
                    proc = subprocess.Popen([sys.executable, "-c", child, path], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=err, env=env, text=True,
                                            errors="replace")
                except OSError as exc:  # no process to be had (resources): the run compiles what it needs
                    log(f"spare-mc: could not start a process to compile kernels ahead ({exc}); the run compiles "
                        f"them itself")
                    break
                readers.append(threading.Thread(target=_read_replies, args=(len(procs), proc, replies), daemon=True))
                readers[-1].start()
                procs.append((proc, err))
            failed, clean = _deal(tasks, procs, replies, t0 + WAIT_S, log)
        finally:
            try:
                for proc, _ in procs:  # the end of their input: they exit
                    with contextlib.suppress(OSError):
                        proc.stdin.close()
                if clean:  # every task answered: a moment to exit; otherwise (Ctrl-C, the time limit) none
                    for proc, _ in procs:
                        with contextlib.suppress(subprocess.TimeoutExpired):
                            proc.wait(timeout=5.0)
            finally:
                for proc, _ in procs:
                    _cache.stop(proc)
                for reader in readers:  # at the end of its process's output, which it closes
                    reader.join(timeout=5.0)
    for family, msg in failed.items():
        log(f"spare-mc: compiling {family} ahead {msg}; the run compiles it itself")
    return time.perf_counter() - t0


def _write_sweeps(sweeps, files) -> str:
    """Write ``sweeps`` (:func:`_tasks`) as JSON to a temporary file removed when ``files`` (an ``ExitStack``)
    closes; returns its path. The processes read it once: a task then is a few bytes on their standard input, which
    a pipe takes whole (a sweep's TOML, of any length, could fill it and block this process)."""
    fd, path = tempfile.mkstemp(prefix="spare-mc-warm-", suffix=".json")
    files.callback(_remove, path)
    with os.fdopen(fd, "w") as f:
        json.dump(sweeps, f)
    return path


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


def _read_replies(i: int, proc, replies) -> None:
    """A thread of :func:`warm_up`: each reply process ``i`` writes (:data:`_REPLY` lines; any other line is
    ignored), then None when its output ends, whatever ended it."""
    try:
        with proc.stdout:
            for line in proc.stdout:
                if line.startswith(_REPLY):
                    replies.put((i, line[len(_REPLY):].rstrip("\n")))
    finally:
        replies.put((i, None))


def _last_message(proc, err) -> str:
    """The last line of the standard error of the exited process ``proc``."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10.0)
    err.seek(0)
    return (err.read().strip().splitlines() or ["no message"])[-1]


def _deal(tasks, procs, replies, deadline: float, log) -> tuple:
    """Deal ``tasks`` to the processes ``procs`` (``[(process, stderr file), ...]``) as they reply, until all are
    done, every process has exited, or ``deadline``. Returns ``({family: what went wrong}, clean)``: the families
    of the tasks that failed, whose process exited while running them, or that never ran because every process
    had exited; ``clean`` is False if the deadline passed (the caller then stops the processes at once)."""
    dealer, busy, live, failed = _Dealer(tasks), {}, set(range(len(procs))), {}
    while live:
        for i in sorted(live - set(busy)):
            task = dealer.take()
            if task is None:
                break
            busy[i] = task
            with contextlib.suppress(OSError):  # it exited: its reader says so (below)
                procs[i][0].stdin.write(json.dumps(task["msg"]) + "\n")  # a few bytes: the pipe takes them
                procs[i][0].stdin.flush()
        if not busy:
            break
        try:
            i, line = replies.get(timeout=max(0.0, deadline - time.perf_counter()))
        except queue.Empty:
            log(f"spare-mc: compiling kernels ahead took over {WAIT_S:.0f} s and was stopped; the run compiles what "
                f"it lacks itself")
            return failed, False
        task = busy.pop(i, None)
        if line is None:  # the process exited: its task failed and, if it was the last one, no other task ran
            live.discard(i)
            msg = _last_message(*procs[i])
            if task is not None:
                failed.setdefault(task["family"], f"failed ({msg})")
                dealer.finish(task)
            if not live:
                for t in dealer.todo:
                    failed.setdefault(t["family"], f"did not happen (the warm-up processes exited: {msg})")
        elif task is not None:
            if line != "ok":
                failed.setdefault(task["family"], f"failed ({line.partition(' ')[2]})")
            dealer.finish(task)
    return failed, True


#: What starts every reply of a warm-up process (:func:`_serve`): any other line on its standard output is not one
_REPLY = "spare-mc-warm: "


def _serve(path: str, lines=None, replies=None) -> None:
    """In a warm-up process: read the sweeps of the file ``path`` (:func:`_write_sweeps`), then run the task of
    each line of ``lines`` (default: standard input; :func:`_run_task`), replying ``ok`` or ``failed <message>``
    after :data:`_REPLY` on a line of ``replies`` (default: standard output, and whatever a task prints then goes to
    standard error); return at the end of the input."""
    with open(path) as f:
        sweeps = json.load(f)
    with contextlib.ExitStack() as own:
        if replies is None:
            replies = own.enter_context(os.fdopen(os.dup(1), "w"))
            os.dup2(2, 1)
        memo: dict = {}
        for line in sys.stdin if lines is None else lines:
            try:
                _run_task(json.loads(line), sweeps, memo)
                reply = "ok"
            except Exception as exc:  # noqa: BLE001 -- reported by the parent in one line; the run compiles it
                reply = f"failed {type(exc).__name__}: {' '.join(str(exc).split())}"
            replies.write(_REPLY + reply + "\n")
            replies.flush()


def _run_task(msg: dict, sweeps, memo: dict) -> None:
    """One task of :func:`_tasks` (its ``msg``): a shared compilation, or one replication of a point of one of the
    ``sweeps`` (``memo`` keeps each sweep's spec and :func:`_kinds`)."""
    if "shared" in msg:
        if msg["shared"] == "rectlr":
            compile_rectlr()
        else:
            compile_variant(msg["shared"] == "variant:extended")
        return
    i = msg["spec"]
    if i not in memo:
        quantity, text = sweeps[i]
        spec = SweepSpec.from_toml(text)
        memo[i] = (quantity, spec, _kinds(quantity, spec))
    quantity, spec, kinds = memo[i]
    idx, params, _ = kinds[msg["k"]]
    run_task(quantity, spec.seed, idx, params, 0, 1, spec.lenient)
