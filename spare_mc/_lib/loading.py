"""The ``spare-mc`` console script's Ctrl-C while the package loads (private).

Importing spare_mc takes about a second (numpy, numba, scipy, xarray, dask). A Ctrl-C then was a traceback from
inside an import. This module is imported first by ``spare_mc/__init__.py``: for the console script only (not for
a program that imports spare_mc, whose handler is left alone), it makes that Ctrl-C one line and exit 130, as for
any interrupted command (docs/robustness.md); nothing has been done yet. :func:`spare_mc.cli.main` puts Python's
handler back first thing. A worker process the console script spawns (a study's cells or blocks) keeps a handler
that exits at once without a word: the parent reports the interrupt, once.
"""

import os
import signal
import sys


def interrupted_while_loading(signum, frame):  # pragma: no cover - runs in a child process (tests/test_faults.py)
    """One line, exit 130, at once: the import it interrupts has nothing to clean up."""
    os.write(2, b"spare-mc: interrupted\n")
    os._exit(130)


def worker_interrupted(signum, frame):  # pragma: no cover - runs in a study's worker process (tests/test_faults.py)
    """A worker process of the console script (a study's cells or blocks, :mod:`spare_mc._lib.processes`): exit 130
    at once and silently; the parent, interrupted by the same Ctrl-C, reports it."""
    os._exit(130)


if os.path.basename(sys.argv[0] if sys.argv else "") in ("spare-mc", "spare-mc.exe") and \
        signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    # a spawned worker runs with the parent's argv; its own command line says what it is
    worker = "--multiprocessing-fork" in getattr(sys, "orig_argv", ())
    signal.signal(signal.SIGINT, worker_interrupted if worker else interrupted_while_loading)
