"""Independent tasks of a study run in local processes, each result handed back as it finishes.

The studies whose units of work share nothing but their settings (the phase map's cells, the failure-domain study's
blocks of rows) run them here: in this process when one worker is asked for, else in a pool of spawned processes
(a fresh interpreter each: no state of the caller's is inherited, so the results do not depend on how many workers
ran them, only on each task's own seeds).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed

__all__ = ["each_in_processes"]


def each_in_processes(fn: Callable, tasks: Iterable, workers: int) -> Iterator[tuple]:
    """Yield ``(i, fn(tasks[i]))`` for every task as it finishes.

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

    Notes
    -----
    If the caller stops consuming (an exception, an interrupt, ``break``), the tasks not yet started are cancelled;
    those running finish before the pool closes (at most one task per process). A process that dies raises
    :class:`concurrent.futures.process.BrokenProcessPool` here; the results already yielded are the caller's.
    """

    tasks = list(tasks)
    if workers <= 1 or len(tasks) <= 1:
        for i, task in enumerate(tasks):
            yield i, fn(task)
        return
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks)),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(fn, task): i for i, task in enumerate(tasks)}
        try:
            for fut in as_completed(futures):
                yield futures[fut], fut.result()
        finally:
            for fut in futures:
                fut.cancel()
