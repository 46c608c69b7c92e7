"""A sweep's progress and warnings on stderr (:class:`Progress`), written so that they never abort the sweep."""

from __future__ import annotations

import sys

__all__ = ["Progress"]


class Progress:
    """Progress and warnings on stderr that never abort a sweep (stderr may be a closed pipe)."""

    def __init__(self, spec, enabled):
        self.name = spec.name
        self.enabled = enabled
        try:
            self.tty = sys.stderr.isatty()
        except (OSError, ValueError, AttributeError):
            self.tty = False
        self.shown = -1

    def _write(self, text, end="\n"):
        try:
            print(text, end=end, file=sys.stderr, flush=True)
        except (OSError, ValueError):  # a broken pipe or a closed stderr: go on silently
            self.enabled = False

    def line(self, msg):
        if self.enabled:
            self._write(f"[spare-mc sweep {self.name}] {msg}")

    def warn(self, msg):
        self._write(f"spare-mc: warning: {msg}")

    def update(self, k, total):
        if not self.enabled:
            return
        if self.tty:
            bar = "#" * (30 * k // max(total, 1))
            self._write(f"\r[spare-mc sweep {self.name}] [{bar:<30}] {k}/{total} tasks", end="")
        else:
            tenth = (10 * k) // max(total, 1)
            if tenth != self.shown:
                self.shown = tenth
                self._write(f"[spare-mc sweep {self.name}] {k}/{total} tasks")

    def done(self):
        if self.enabled and self.tty:
            self._write("")
