"""Independent tasks of a study run in local processes, each result handed back as it finishes.

The studies whose units of work share nothing but their settings (the phase map's cells, the failure-domain study's
blocks of rows) run them here: in this process when one worker is asked for, else in a pool of spawned processes
(a fresh interpreter each: no state of the caller's is inherited but the global options, which are sent with every
task, so the results do not depend on how many workers ran them, only on each task's own seeds).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed

from ..options import get_options, set_options

__all__ = ["each_in_processes"]


def _under_options(args):
    """Run ``fn(task)`` in a worker under the caller's global options (:mod:`spare_mc.options`: the memory budget,
    ...), which a spawned process does not inherit."""
    fn, task, options = args
    with set_options(**options):
        return fn(task)


@contextlib.contextmanager
def _starting_workers_without_sigint():
    """Processes started inside the block never see SIGINT: it is blocked in this thread meanwhile, and a process
    inherits the signal mask through fork and exec (Python does not unblock it). A Ctrl-C at the terminal reaches
    the whole process group, and interrupted while it imported its packages a worker printed a traceback ("Fatal
    Python error: init_import_site"); this process, which gets the KeyboardInterrupt, stops them instead.

    In the main thread, a SIGINT or SIGTERM that arrives just before or during the block is only recorded inside
    it, and handled (by the handler it found) at its end: raised inside it, between starting a process and sending
    it its task, it left that process reading an empty pipe ("EOFError: Ran out of input"), or the pool with a
    thread it could not join. A Ctrl-C during the block stays pending and is raised at its end too (with
    ``SIG_IGN`` instead, it was lost: seen in CI). Not where signal masks do not exist (Windows)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    main = threading.current_thread() is threading.main_thread()
    got = []
    handlers = {sig: signal.signal(sig, lambda signum, frame: got.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)} if main else {}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)  # a pending SIGINT is recorded now
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        for sig in got[:1]:  # the first signal, through the handler it found (the CLI's: KeyboardInterrupt, ...)
            handler = handlers[sig]
            if callable(handler):
                handler(sig, None)
            elif handler == signal.SIG_DFL:
                if sig == signal.SIGINT:
                    raise KeyboardInterrupt
                os.kill(os.getpid(), sig)


def _terminate_workers(pool: ProcessPoolExecutor) -> None:
    """Stop the pool's processes at once (SIGTERM), whatever they are running."""
    stop = getattr(pool, "terminate_workers", None)  # Python 3.14
    if stop is not None:
        stop()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.is_alive():
            process.terminate()


def each_in_processes(fn: Callable, tasks: Iterable, workers: int) -> Iterator[tuple]:
    """Run ``fn`` on every task, in this process or in spawned worker processes.

    Parameters
    ----------
    fn : callable
        A module-level function of one argument (it is pickled by reference into the processes, as are the tasks).
    tasks : iterable
        The tasks' arguments.
    workers : int
        Processes at once (``min(workers, len(tasks))`` are started). With 1, or a single task, the tasks run in
        this process in their order and no process is started. Scripts that pass more need an
        ``if __name__ == "__main__":`` guard (the processes are spawned and import the script).

    Yields
    ------
    tuple
        ``(i, fn(tasks[i]))`` for every task, as it finishes (in order with one worker). Each worker runs ``fn``
        under this process's global options (:func:`spare_mc.options.get_options` at the call).

    Notes
    -----
    The workers never see SIGINT (blocked from their start): a Ctrl-C interrupts this process, which then stops
    them. If the caller stops consuming before the last result (an exception, an interrupt, ``break``), the workers
    are terminated at once, whatever they run, and the pool is closed; the results already yielded are the
    caller's. A task's exception is
    raised here; a process that dies raises :class:`concurrent.futures.process.BrokenProcessPool`.
    """

    tasks = list(tasks)
    if workers <= 1 or len(tasks) <= 1:
        for i, task in enumerate(tasks):
            yield i, fn(task)
        return
    options = get_options()
    pool = ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=multiprocessing.get_context("spawn"))
    finished = False
    try:
        with _starting_workers_without_sigint():  # the processes start at the first submissions
            futures = {pool.submit(_under_options, (fn, task, options)): i for i, task in enumerate(tasks)}
        for fut in as_completed(futures):
            yield futures[fut], fut.result()
        finished = True
    finally:
        # stopped early: the workers are terminated rather than left to finish their tasks; the futures are not
        # cancelled (CPython 3.11's pool then sets an exception on cancelled futures, a traceback from its thread)
        if not finished:
            _terminate_workers(pool)
        pool.shutdown(wait=True)
