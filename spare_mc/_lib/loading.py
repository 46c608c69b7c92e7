"""The ``spare-mc`` console script's Ctrl-C while the package loads (private).

Importing spare_mc takes about a second (numpy, numba, scipy). A Ctrl-C then was a traceback from
inside an import. This module is imported first by ``spare_mc/__init__.py``: for the console script only (not for
a program that imports spare_mc, whose handler is left alone), it makes that Ctrl-C one line and exit 130, as for
any interrupted command (docs/robustness.md); nothing has been done yet. :func:`spare_mc.cli.main` puts Python's
handler back first thing.
"""

import os
import signal
import sys


def interrupted_while_loading(signum, frame):  # pragma: no cover - runs in a child process (tests/test_faults.py)
    """One line, exit 130, at once: the import it interrupts has nothing to clean up."""
    os.write(2, b"spare-mc: interrupted\n")
    os._exit(130)


if os.path.basename(sys.argv[0] if sys.argv else "") in ("spare-mc", "spare-mc.exe") and \
        signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, interrupted_while_loading)
