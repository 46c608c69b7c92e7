"""Numba's on-disk cache and the kernels other kernel modules inline (private).

Numba invalidates a cached kernel when the source file that defines it changes, and not when a kernel it calls
from **another** module changes, although the compiled code contains that callee: after an edit or a ``git pull``
that touches only ``rectlr.py``, the cache of ``timeline.live_state`` (which inlines ReCtlr's initial assignment)
would keep running the old ReCtlr. Each
kernel module that calls into another one therefore calls :func:`drop_if_dependencies_changed` when imported
(before any kernel runs: numba reads its cache at the first call). It keeps a digest of the dependencies' sources
next to the cache and, when the digest changes (or was never written), deletes the module's cached kernels, which
numba then compiles again.

With ``NUMBA_CACHE_DIR`` set the caches live elsewhere and are left alone: clear that directory after changing a
kernel module.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path


def drop_if_dependencies_changed(module_file: str, deps: tuple) -> int:
    """Delete the numba cache files of ``module_file`` if the sources ``deps`` (file names in the same directory)
    changed since the last call; returns how many files were deleted.

    A name in ``deps`` that is not a file beside ``module_file`` raises :class:`FileNotFoundError`: it is a bug of
    the package (a renamed or moved dependency), which would otherwise keep a stale cache silently. Other
    file-system errors (a read-only install, a concurrent import) are ignored: at worst a cache is kept or compiled
    again."""
    here = Path(module_file)
    missing = [d for d in deps if not (here.parent / d).is_file()]
    if missing:
        raise FileNotFoundError(f"{here.name} names {missing} as kernel dependencies, which are not files in "
                                f"{here.parent}: rename them in its drop_if_dependencies_changed call")
    if os.environ.get("NUMBA_CACHE_DIR"):
        return 0
    cache_dir = here.parent / "__pycache__"
    try:
        digest = hashlib.sha256(b"".join((here.parent / d).read_bytes() for d in deps)).hexdigest()
        stamp = cache_dir / f"{here.stem}.deps"
        if stamp.is_file() and stamp.read_text() == digest:
            return 0
        stale = [*cache_dir.glob(f"{here.stem}.*.nbi"), *cache_dir.glob(f"{here.stem}.*.nbc")]
        for f in stale:
            f.unlink(missing_ok=True)
        cache_dir.mkdir(exist_ok=True)
        tmp = cache_dir / f"{here.stem}.deps.{os.getpid()}"
        tmp.write_text(digest)
        os.replace(tmp, stamp)
        return len(stale)
    except OSError:
        return 0


# ------------------------------------------------------------------------------------------ the first compilation
def env_off(name: str) -> bool:
    """Whether the environment variable ``name`` turns something off (``0``, ``off``, ``no`` or ``false``)."""
    return os.environ.get(name, "").strip().lower() in ("0", "off", "no", "false")


def finish(proc, err, what: str, who: str, timeout: float, log) -> None:
    """Wait up to ``timeout`` seconds for the process ``proc`` that compiles ``what`` ahead (its standard error in
    the file ``err``), stop it if it is still running then, and ``log`` one line if it was stopped or failed (``who``
    then compiles it itself). An interruption stops the process too, then propagates. Used by
    :mod:`spare_mc.sweep.warm` and :mod:`spare_mc.ttt.cold_start`."""
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(proc)
        log(f"spare-mc: compiling {what} ahead took over {timeout:.0f} s and was stopped; {who} compiles it itself")
        return
    except BaseException:  # Ctrl-C: no process left behind compiling
        stop(proc)
        raise
    if rc != 0:
        err.seek(0)
        last = (err.read().strip().splitlines() or ["no message"])[-1]
        log(f"spare-mc: compiling {what} ahead failed ({last}); {who} compiles it itself")


def stop(proc) -> None:
    """Kill the process ``proc`` if it is still running, and reap it."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()


#: The environment variable that silences :func:`tell_if_compiling` (``0`` or ``off``): the test suite sets it, so
#: that what its tests capture on standard error does not depend on whether the cache was warm.
NOTICE_ENV = "SPARE_MC_COMPILE_NOTICE"
_told: set = set()


def compiled_or_cached(dispatcher, which=None) -> bool:
    """Whether a call of the numba ``dispatcher`` will find machine code without compiling: it holds a compiled
    signature in this process, or numba's on-disk cache holds one for the current source (of those signatures,
    only the ones ``which(signature)`` accepts count, if given). Reads the cache's index (a small pickle) the way
    numba does, which ignores an index left by an older source; if numba's internals are not where this expects
    them, the answer is True (nothing is said rather than something wrong)."""
    if any(which is None or which(sig) for sig in dispatcher.signatures):
        return True
    try:
        index = dispatcher._cache._cache_file._load_index()  # {(signature, target, code hashes): data file}
        return any(which is None or which(key[0]) for key in index)
    except Exception:  # noqa: BLE001 -- no on-disk cache (cache=False), or numba's internals moved
        return True


def tell_if_compiling(what: str, seconds: float, dispatcher, which=None, stream=None) -> bool:
    """Tell the user once per process, on standard error, that a first run is compiling ``what`` and about how long
    it takes (``seconds``, measured on 2 cores), if :func:`compiled_or_cached` says it must. Returns whether it
    told. Silenced by ``SPARE_MC_COMPILE_NOTICE=0`` (:data:`NOTICE_ENV`)."""
    if what in _told or env_off(NOTICE_ENV):
        return False
    if compiled_or_cached(dispatcher, which):
        return False
    _told.add(what)
    print(f"spare-mc: compiling {what} for a first run on this machine: about {seconds:.0f} s on 2 cores, once "
          f"(numba keeps the machine code in its cache for later runs)", file=stream or sys.stderr, flush=True)
    return True
