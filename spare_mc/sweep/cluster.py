"""Running a sweep's tasks on dask: an external scheduler (checked before any work) or a local cluster whose
workers ignore Ctrl-C (:func:`run_on_dask`), the workers' code checked against the client's (:class:`MixedCodeError`),
lost workers (:class:`WorkersLost`, :data:`NO_WORKER_TIMEOUT_S`), the signals that arrive while a cluster starts,
and the refusal of a sweep started by a script that a worker process is importing (:func:`check_not_reimported`).

dask is imported only in this module, and only when a cluster is used.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import socket
import sys
import time

from .._lib.provenance import code_digest
from .._lib.resources import usable_cpus
from .._lib.validation import UsageValueError
from .progress import Progress
from .tasks import run_task

__all__ = ["MixedCodeError", "NO_WORKER_TIMEOUT_S", "WorkersLost", "check_not_reimported", "check_scheduler",
           "run_on_dask", "shared_local_cluster"]

#: The local cluster (and its client) that :func:`shared_local_cluster` holds for several sweeps, else empty.
_SHARED: dict = {}


_PROBE = """
import sys
from distributed import Client
with Client(sys.argv[1], timeout="8s", set_as_default=False) as c:
    print(c.scheduler_info()["type"])
"""


def check_scheduler(address: str) -> None:
    """Fail fast (one line) when a dask scheduler address is malformed, unreachable, or not a dask scheduler: a
    TCP connection within 5 s, then a dask handshake within 10 s, run in a child process so that whatever answers
    cannot crash or hang this one."""
    if not isinstance(address, str) or "://" not in address:
        raise UsageValueError(f"`scheduler` must be an address like tcp://host:8786, got {address!r}")
    hostport = address.split("://", 1)[1]
    host, _, port = hostport.rpartition(":")
    try:
        port = int(port)
    except ValueError:
        raise UsageValueError(f"`scheduler` must end with a port number (tcp://host:8786), got {address!r}") from None
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", port), timeout=5):
            pass
    except OSError as exc:  # the network refused: an environment error, not a usage error
        raise ConnectionError(f"cannot reach the dask scheduler at {address}: {exc.strerror or exc}") from None
    import subprocess

    try:
        probe = subprocess.run([sys.executable, "-c", _PROBE, address], capture_output=True, text=True, timeout=15)
        ok = probe.returncode == 0 and probe.stdout.strip() == "Scheduler"
        why = (probe.stderr.strip().splitlines() or ["no answer"])[-1][:160]
    except subprocess.TimeoutExpired:
        ok, why = False, "no dask handshake within 15 s"
    if not ok:
        raise ConnectionError(f"{address} does not answer as a dask scheduler ({why})")


def check_not_reimported() -> None:
    """Refuse a call from the top level of a script that a worker process is importing (as ``__mp_main__``): the
    script lacks the ``if __name__ == "__main__":`` guard, and each worker would start the sweep again."""
    frame = sys._getframe(2)  # the caller of run_sweep and the callers above it
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__mp_main__":
            raise UsageValueError('run_sweep was called from the top level of a script without the `if __name__ == '
                                  '"__main__":` guard: dask starts worker processes that import the script, and each '
                                  'would start the sweep again. Put the call under that guard')
        frame = frame.f_back


def _run_tasks_here(code: str, quantity, seed, lenient, items) -> tuple:
    """:func:`run_task` on a dask worker for a batch of tasks ``items`` (``(idx, params, rep_start, rep_stop)``
    each; one dask task, see :func:`_batch_size`), their results in order, returned with the worker's code digest and
    address: a worker running other spare_mc code (another installation, a checkout before or after an update that
    kept the version string) must not put its numbers into this sweep's dataset (the client compares ``code`` with
    what comes back)."""
    from distributed import get_worker

    return code_digest(), get_worker().address, [run_task(quantity, seed, idx, params, a, b, lenient)
                                                 for idx, params, a, b in items]


class MixedCodeError(UsageValueError):
    """A dask worker runs other spare_mc code than the client."""


def _check_worker_code(client, code: str) -> None:
    """Every worker connected now runs the client's code (workers that join later are checked per task)."""

    try:
        theirs = client.run(code_digest)
    except Exception as exc:  # noqa: BLE001 - a worker whose spare_mc cannot even report it
        raise MixedCodeError(f"a dask worker cannot report its spare_mc code ({type(exc).__name__}: {exc}); every "
                             f"worker must run the same spare_mc as this client (code {code})") from None
    other = {w: c for w, c in theirs.items() if c != code}
    if other:
        raise MixedCodeError(_mixed_code_message(other, code))


def _mixed_code_message(other: dict, code: str) -> str:
    shown = ", ".join(f"{w} (code {c})" for w, c in sorted(other.items())[:3])
    more = f" and {len(other) - 3} more" if len(other) > 3 else ""
    return (f"dask workers {shown}{more} run other spare_mc code than this client (code {code}): their numbers "
            f"would be mixed into the dataset. Start every worker from the same spare_mc installation (the code "
            f"digest covers its sources and data, not only its version); finished tasks are kept")


class WorkersLost(OSError):
    """The sweep's dask workers are gone, or never came: killed (often for memory), failed to start, or none
    connected for :data:`NO_WORKER_TIMEOUT_S` seconds on a local cluster. The finished tasks are kept: running the
    same sweep again resumes it (the command line exits 1 with one line)."""


#: Seconds a local cluster may have no worker connected, with tasks left, before the sweep stops with
#: :class:`WorkersLost` (its nannies restart a killed worker within a few seconds; a cluster left with none would
#: otherwise wait forever). With an external scheduler, workers may join later: the sweep warns and waits.
NO_WORKER_TIMEOUT_S = 60.0
_WATCH_EVERY_S = 2.0  # how often the connected workers are counted while no task finishes
_POLL_S = 0.01  # how often finished tasks are looked for: a sweep's last task waits this long at most (a study
# runs dozens of sweeps one after another, and its workers wait meanwhile)


def _completed(ac, client, local: bool, where: str, warn, resume):
    """The futures of the ``as_completed`` iterator ``ac`` as they finish, watching meanwhile that some worker is
    connected (see :data:`NO_WORKER_TIMEOUT_S`): raises :class:`WorkersLost` (its message ends with ``resume()``)
    on a local cluster, warns (once per such spell) with an external scheduler."""

    idle_since = None
    warned = False
    next_look = time.monotonic() + _WATCH_EVERY_S
    while True:
        batch = ac.next_batch(block=False)
        if batch:
            yield from batch
            continue
        if ac.is_empty():
            return
        now = time.monotonic()
        if now >= next_look:
            next_look = now + _WATCH_EVERY_S
            try:
                n = len(client.nthreads())
            except Exception:  # noqa: BLE001 - the scheduler's own loss shows as cancelled futures
                n = None
            if n == 0:
                idle_since = now if idle_since is None else idle_since
                if now - idle_since >= NO_WORKER_TIMEOUT_S:
                    if local:
                        raise WorkersLost(f"the local dask cluster has had no worker for {now - idle_since:.0f} s "
                                          f"(its worker processes were killed and not restarted); {resume()}")
                    if not warned:
                        warn(f"no dask worker has been connected to {where} for {now - idle_since:.0f} s: waiting "
                             f"for one (finished tasks are kept; Ctrl-C stops)")
                        warned = True
            elif n is not None:
                idle_since, warned = None, False
        time.sleep(_POLL_S)


def _resume_note(n: int, folder: str) -> str:
    if n == 0:
        return "no task had finished: run the same command again once that is fixed"
    return f"the {n} finished tasks are kept in {folder}: run the same command again to resume"


def run_on_dask(spec, todo, store, results, scheduler, workers, lenient, report):
    """Run the tasks ``todo`` of ``spec`` on dask (``scheduler``, or a local cluster of ``workers`` processes),
    saving each finished one in ``store`` and ``results`` and calling ``report()``; the cluster, the client and
    the workers' start method are closed or restored however it ends."""
    from distributed import Client, KilledWorker, as_completed

    cluster = client = None
    stack = contextlib.ExitStack()  # left after the cluster is closed (below): its workers' start method
    warn = Progress(spec, True).warn
    shared = None
    try:
        if scheduler is None:
            cpus = usable_cpus()
            if workers and workers > cpus:
                warn(f"{workers} worker processes on {cpus} CPUs: the sweep will be slower than with {cpus} (each "
                     f"worker runs one task at a time)")
            try:
                if _SHARED:  # a study's cluster, started once for all its sweeps (closed by its holder)
                    if "client" not in _SHARED:
                        _SHARED["start"]()
                    shared = _SHARED["client"]
                else:
                    forked = stack.enter_context(_forked_workers())
                    cluster = _local_cluster(min(workers or cpus, len(todo)), forked)  # no idle process
            except Exception as exc:  # (not a signal: KeyboardInterrupt and SIGTERM's spare_mc.cli.Terminated pass)
                if getattr(sys.modules.get("__main__"), "__file__", None) == "<stdin>":
                    raise WorkersLost("the local dask cluster did not start: code read from standard input (python "
                                      "-) cannot start one, because its worker processes re-import the main script, "
                                      "which has no file here. Save the code to a file, or run the tasks in this "
                                      "process (workers=0)") from None
                raise WorkersLost(
                    f"the local dask cluster did not start ({type(exc).__name__}: {' '.join(str(exc).split())}); "
                    f"if run_sweep is called from a script, call it under `if __name__ == \"__main__\":` (worker "
                    f"processes import the script); with little memory, give fewer workers; "
                    + _resume_note(len(results), store.folder)) from None
            client = shared if shared is not None else Client(cluster)
        else:
            client = Client(scheduler, timeout="10s")
        _check_worker_code(client, store.code)
        digest = spec.digest()  # (once: a spec of many points takes milliseconds)
        size = _batch_size(len(todo), len(client.nthreads()), max(b - a for _, _, _, a, b in todo))
        batches = [todo[i:i + size] for i in range(0, len(todo), size)]
        futures = [client.submit(_run_tasks_here, store.code, spec.quantity, spec.seed, lenient,
                                 [(idx, params, a, b) for _, idx, params, a, b in batch],
                                 key=f"{digest}-{batch[0][0]}-{len(batch)}", pure=False, retries=3)
                   for batch in batches]
        by_key = {f.key: b for f, b in zip(futures, batches)}
        saver = stack.enter_context(_Saver(store, results, report))

        def note():  # what is kept, once the writes under way are on disk
            saver.wait()
            return _resume_note(len(results), store.folder)

        done = _completed(as_completed(futures), client, scheduler is None, scheduler or "the local cluster", warn,
                          note)
        for fut in done:
            batch = by_key[fut.key]
            what = batch[0][0] if len(batch) == 1 else (f"{batch[0][0]} (a batch of {len(batch)} tasks, to "
                                                          f"{batch[-1][0]})")
            try:
                code, where, got = fut.result()
            except concurrent.futures.CancelledError as exc:  # the scheduler went away ("scheduler-connection-lost")
                raise ConnectionError(f"lost the dask scheduler {scheduler or '(local)'} "
                                      f"({' '.join(str(exc).split())}); " + note()) from None
            except KilledWorker as exc:  # dask gave up on the task: the workers that had it died, one after another
                # (a task merely queued on a dying worker counts too: the message does not say it caused the deaths)
                raise WorkersLost(f"dask gave up on task {what} after {exc.allowed_failures + 1} workers that had it "
                                  f"died (most often a task out of memory: give fewer workers, so that each has "
                                  f"more); " + note()) from None
            except MemoryError:  # a worker's task ran out of memory (ulimit -v, a container), raised, and retried
                raise WorkersLost(f"task {what} ran out of memory on a dask worker (give fewer workers, so that each "
                                  f"has more, or fewer replications per task: sweep.block); " + note()) from None
            if code != store.code:  # a worker that joined after the check
                raise MixedCodeError(_mixed_code_message({where: code}, store.code))
            for (key, _, params, a, b), res in zip(batch, got):
                saver.save(key, (a, b), res, params)
            fut.release()
        saver.finish()
    finally:
        _shut_down(None if client is shared else client, cluster, stack)


def _batch_size(n_tasks: int, n_workers: int, reps_per_task: int) -> int:
    """Sweep tasks per dask task. Dask costs a few ms of the client's and the scheduler's CPU per task, which a
    2-core machine takes from its workers: a sweep of 780 tasks of 5 SPARe replications took 12.4-15.6 s on 2 local
    workers one task at a time and 10.2-12.6 s in batches, against 19.2 s in one process (2026-12-06). A batch holds
    at most :data:`MAX_BATCH` tasks and :data:`MAX_BATCH_REPS` replications (a long task runs alone: what a lost
    worker loses, and the granularity of the progress, stay those of the sweep's ``block``), and every worker gets
    at least :data:`BATCHES_PER_WORKER` batches (the balance of the load). Batching never changes a number:
    replication ``i`` has its own seed whatever task or batch runs it."""
    return max(1, min(MAX_BATCH, MAX_BATCH_REPS // max(reps_per_task, 1),
                      n_tasks // (BATCHES_PER_WORKER * max(n_workers, 1))))


#: See :func:`_batch_size`.
BATCHES_PER_WORKER = 16
MAX_BATCH = 32
MAX_BATCH_REPS = 96


class _Saver:
    """Saves finished tasks (:meth:`PartsStore.save`: an atomic write with two ``fsync``, about 10 ms, mostly
    waiting on the disk) on a few threads, so that the process collecting the results keeps pace with the workers
    instead of making them wait; a task counts as finished (``results``, then ``report()`` in the caller's thread)
    once its part is on disk, and the first failed write is raised in the caller's thread (at the next :meth:`save`
    or at :meth:`finish`).
    Leaving the context waits for the writes under way."""

    THREADS = 4

    def __init__(self, store, results, report):
        self.store, self.results, self.report = store, results, report
        self.pending = set()

    def __enter__(self):
        self.pool = concurrent.futures.ThreadPoolExecutor(self.THREADS, thread_name_prefix="spare-mc-save")
        return self

    def __exit__(self, *exc):
        self.pool.shutdown(wait=True, cancel_futures=True)
        return False

    def _write(self, key, rep_range, res, params):
        self.store.save(key, rep_range, res, params)
        self.results[key] = res  # at once (one dict item, atomic): the count an error message gives is on disk
        return key, res

    def _collect(self, futures) -> None:
        for f in futures:
            self.pending.discard(f)
            f.result()  # a failed write raises here
            self.report()

    def save(self, key, rep_range, res, params) -> None:
        self.pending.add(self.pool.submit(self._write, key, rep_range, res, params))
        self._collect([f for f in self.pending if f.done()])

    def finish(self) -> None:
        self._collect(list(concurrent.futures.as_completed(list(self.pending))))

    def wait(self) -> None:
        """Wait for the writes under way (their failures are left for :meth:`finish`): before an error message
        counts the finished tasks."""
        concurrent.futures.wait(list(self.pending))


@contextlib.contextmanager
def shared_local_cluster(scheduler=None, workers=None):
    """While in force, every sweep of this process that would start its own local dask cluster (no ``scheduler``,
    ``workers`` not 0) runs on one local cluster of ``workers`` processes (default: the number of CPUs) started
    here, on first use, and closed on exit: a study of many sweeps pays the cluster's start (about 3 s on 2 cores)
    and each worker's import of spare_mc and its compiled kernels (about 1 s) once instead of once per sweep. The
    results do not depend on it (a sweep's numbers never depend on its workers). With a ``scheduler`` or
    ``workers=0``, or inside another ``shared_local_cluster``, it does nothing. The workers' checks (their code, a
    lost worker) are those of each sweep, as on a cluster of its own."""
    if scheduler is not None or workers == 0 or _SHARED:
        yield
        return
    cpus = usable_cpus()
    n = workers or cpus
    stack = contextlib.ExitStack()
    _SHARED["start"] = lambda: _start_shared(stack, n)
    try:
        yield
    finally:
        client, cluster = _SHARED.get("client"), _SHARED.get("cluster")
        _SHARED.clear()
        _shut_down(client, cluster, stack)


def _shut_down(client, cluster, stack) -> None:
    """Close ``client`` and ``cluster`` (either may be None), then ``stack``. Shutting down after an interrupt makes
    the scheduler log errors about the client it can no longer reach: noise for the user, who already gets one
    line; ``distributed``'s logging is silenced for the shutdown only."""
    import logging

    log = logging.getLogger("distributed")
    level = log.level
    log.setLevel(logging.CRITICAL + 1)
    try:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    finally:
        log.setLevel(level)
        stack.close()


def _start_shared(stack, n_workers) -> None:
    """Start the cluster of :func:`shared_local_cluster` (its workers forked as :func:`_local_cluster` says)."""
    from distributed import Client

    forked = stack.enter_context(_forked_workers())
    _SHARED["cluster"] = cluster = _local_cluster(n_workers, forked)
    _SHARED["client"] = Client(cluster)


@contextlib.contextmanager
def _forked_workers():
    """While in force, dask starts worker processes (and any its nannies restart) from multiprocessing's fork
    server, started once with SIGINT ignored: so the workers ignore it, whatever this process does meanwhile.
    Yields whether it could (only from the main thread, where signals are handled, and where the platform has a
    fork server: not on Windows). A fork server already running (started by other code of this process) is reused
    as it is. Workers forked from it get the environment it started with: a later change of ``os.environ`` in this
    process does not reach them."""
    import multiprocessing
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or \
            "forkserver" not in multiprocessing.get_all_start_methods():
        yield False
        return
    from multiprocessing import forkserver

    import dask
    from distributed.utils import get_mp_context

    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
        get_mp_context()  # dask's preload of the fork server (its packages, imported once for every worker)
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            forkserver.ensure_running()
        finally:
            signal.signal(signal.SIGINT, old)
        yield True


def _local_cluster(n_workers, forked: bool):
    """A local dask cluster of ``n_workers`` processes, one thread each. ":0": the scheduler's HTTP server on a
    free port, so that several sweeps can run at once.

    Ctrl-C at a terminal reaches the whole process group. The worker processes must ignore it, so that it stops
    the sweep with one line instead of a traceback from every worker: a process started with SIGINT ignored keeps
    ignoring it (across exec, and Python leaves it alone). With ``forked`` (inside :func:`_forked_workers`) they
    do; SIGINT and SIGTERM that arrive while the cluster starts are then recorded, and acted upon once it is up
    (the signal's own handler runs, and the cluster is closed: one line, exit 130 or 143), because interrupting
    the start itself would leave a half-started cluster that dask's exit handler reports with a traceback. Without
    a fork server (Windows), SIGINT is ignored during the whole start (1-3 s), so that the spawned workers inherit
    the ignore, and a Ctrl-C then is lost.
    """
    import signal
    import threading

    from distributed import LocalCluster

    def start():
        return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                            silence_logs=50)  # task errors surface in results

    if threading.current_thread() is not threading.main_thread():  # signals belong to the main thread
        return start()
    if not forked:
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            return start()
        finally:
            signal.signal(signal.SIGINT, old)
    return _start_recording_signals(start)


def _start_recording_signals(start):
    """``start()`` with SIGINT and SIGTERM recorded instead of handled (those not ignored), then the first one
    recorded handled as its handler says; every cluster started here is closed quietly if anything raises."""
    import signal

    from distributed.deploy.spec import SpecCluster

    before = set(SpecCluster._instances)
    got, olds = [], {}
    try:
        failed = cluster = None
        with contextlib.ExitStack() as restore:  # every handler is put back, even if one of them raises
            for sig in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(sig) is not signal.SIG_IGN:
                    olds[sig] = signal.signal(sig, lambda signum, frame: got.append(signum))
                    restore.callback(signal.signal, sig, olds[sig])
            try:
                cluster = start()
            except BaseException as exc:
                if not got:
                    raise
                # a group's SIGTERM also ends the fork server and the workers, and the start fails: the signal is
                # the news, not the failure
                failed = exc
        if got:
            handler = olds[got[0]]
            if callable(handler):
                handler(got[0], None)  # KeyboardInterrupt, the CLI's SIGTERM handler, or a caller's own
            else:  # SIG_DFL (or a handler not set from Python): the default action ends the process
                _close_quietly(set(SpecCluster._instances) - before)
                signal.raise_signal(got[0])
        if failed is not None:  # the handler let the process go on: the start's own failure
            raise failed
        return cluster
    except BaseException:
        _close_quietly(set(SpecCluster._instances) - before)
        raise


def _close_quietly(clusters) -> None:
    """Close local clusters, started or half-started, with no message now or at exit (dask's exit handler reports a
    half-started cluster it still finds open with a traceback)."""
    from distributed.core import Status

    for cluster in clusters:
        try:
            cluster.close(timeout=10)
        except Exception:  # noqa: BLE001 - a half-started cluster fails its own close; it is marked closed below
            pass
        cluster.status = Status.closed
