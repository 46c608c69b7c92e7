"""Run benchmark code against another revision of the repository, in the same run (shared by the benchmarks'
before/after comparisons).

:func:`at_revision` checks ``rev`` out into a temporary git worktree and yields a function that runs Python source
there in a subprocess (``PYTHONPATH`` on the worktree, so ``import spare_mc`` is that revision's) and returns the JSON
its last printed line holds; :func:`worktree` yields the checkout itself (for long-lived processes). The worktree is
removed on exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def worktree(rev: str):
    """Context manager: revision ``rev`` checked out into a temporary git worktree; yields its path, removes it on
    exit. Raises :class:`subprocess.CalledProcessError` if git cannot check ``rev`` out."""
    with tempfile.TemporaryDirectory() as tmp:
        wt = pathlib.Path(tmp) / "before"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(wt), rev], check=True,
                       capture_output=True, text=True)
        try:
            yield wt
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(wt)], check=False,
                           capture_output=True)


@contextlib.contextmanager
def at_revision(rev: str):
    """Context manager: ``run(code)`` executes ``code`` on revision ``rev`` and returns its last line's JSON.
    Raises :class:`subprocess.CalledProcessError` if git cannot check ``rev`` out or the code fails."""
    with worktree(rev) as wt:
        def run(code: str):
            env = {**os.environ, "PYTHONPATH": str(wt)}  # read at each call: a caller may set variables between runs
            proc = subprocess.run([sys.executable, "-c", code], cwd=str(wt), env=env, check=True,
                                  capture_output=True, text=True)
            return json.loads(proc.stdout.strip().splitlines()[-1])

        yield run
