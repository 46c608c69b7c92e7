"""Storage of sweep results: datasets (NetCDF), their summaries, and the per-task parts of a running sweep.

Guarantees
----------
- **Atomic, durable writes.** A dataset or part is written to a uniquely named temporary file in the target's
  folder, flushed and ``fsync``-ed, renamed over the target (atomic on POSIX), and the folder is ``fsync``-ed. A
  process killed at any moment leaves either the old file or the new one, never a mixture; two writers never share
  a temporary file.
- **Parts know where they came from.** A sweep's finished tasks live in ``<out>.parts/<digest>/``, where the digest
  identifies everything the numbers depend on (quantity, grid, fixed parameters, replications, root seed, the
  spare_mc version and the schema version). Each part also records its digest, task key and replication range, and
  is validated when read; a part that is unreadable (corrupt, truncated) or that does not match is moved aside
  (``*.rejected``) with a warning naming the file, and recomputed. Parts of another spec, seed or version are never
  adopted: they live under another digest.
- **One writer per output.** A sweep holds an exclusive lock (``<out>.parts/.lock``, released by the operating
  system if the process dies) for its whole run; a second sweep to the same output is refused at once.
- **Opening checks what it opens.** :func:`open_dataset` refuses what is not a NetCDF file, and
  :func:`spare_mc.sweep.runner.open_sweep_dataset` what is not a spare-mc sweep dataset, each with one clear message.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import stat
import sys
import tempfile

import numpy as np

from .._lib.dist import t_ppf
from .._lib.provenance import code_digest
from .._lib.validation import UsageValueError

__all__ = ["QUANTITIES", "OUTPUTS", "write_dataset", "open_dataset", "summarize", "write_json", "json_default",
           "content_digest", "check_regular_target", "check_writable", "check_writable_folder", "take_lock",
           "CorruptDataset", "PartsStore", "SweepLocked"]


#: The quantities a sweep can measure.
QUANTITIES = ("wipeout", "overhead", "ttt")

#: Per-replication outputs: name -> (units, long name, support of the interval).
OUTPUTS = {
    "wipeout": {"T": ("1", "index of the failure causing the first wipe-out (1-based)", "nonnegative"),
                "masked": ("1", "failures masked before the first wipe-out", "nonnegative")},
    "overhead": {"T": ("1", "index of the wipe-out failure = epochs per replication", "nonnegative"),
                 "masked": ("1", "failures masked before the first wipe-out", "nonnegative"),
                 "sum_c": ("1", "sum over epochs of the stack-number lower bound c(k)", "nonnegative"),
                 "sum_s": ("1", "sum over epochs of the measured stack number S*", "nonnegative"),
                 "calls": ("1", "ReCtlr calls (masked failure events)", "nonnegative"),
                 "phase0": ("1", "ReCtlr calls resolved by Phase 0 (HK-Fixed)", "nonnegative"),
                 "moves": ("1", "shards moved into a top-S* window, summed over calls", "nonnegative"),
                 "patch": ("1", "largest extra shards per survivor, summed over calls", "nonnegative")},
    "ttt": {"ttt_over_t0": ("1", "time to train / T0 (a capped run at the cap: restricted mean)", "nonnegative"),
            "availability": ("1", "kept step time / wall clock", "unit"),
            "failures": ("1", "failures that killed a group", "nonnegative"),
            "wipeouts": ("1", "global restarts", "nonnegative"),
            "checkpoints": ("1", "checkpoints written", "nonnegative"),
            "mean_s": ("1", "mean compute layers per executed step", "nonnegative"),
            "finished": ("1", "1 if the job finished before the wall-clock cap, 0 if capped (censored)", "unit"),
            "memory_restarts": ("1", "wipe-outs that reloaded an in-memory checkpoint (memory_copies > 0)",
                                "nonnegative"),
            "remote_fallbacks": ("1", "wipe-outs that fell back to remote storage, no copy being left "
                                      "(memory_copies > 0)", "nonnegative"),
            "async_slowdown_s": ("s", "checkpoint time spent as compute slowed by asynchronous saves (ckpt_async)",
                                 "nonnegative")},
}
#: Outputs added after datasets were first written: a dataset without them is still complete (written before).
OPTIONAL_OUTPUTS = frozenset({"memory_restarts", "remote_fallbacks", "async_slowdown_s"})


# ------------------------------------------------------------------------------------------------ atomic files
def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder or ".", os.O_RDONLY)
    except OSError:  # pragma: no cover - a file system without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def check_regular_target(path, what: str = "output") -> None:
    """Refuse to write over anything but a regular file (or nothing): a folder, a device such as ``/dev/null``, a
    FIFO or a socket -- whatever ``force`` says."""
    path = os.fspath(path)
    if not path:
        raise UsageValueError(f"the {what} path is empty; give a file name")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError:  # a dangling link or an unreadable parent: the write itself will say
        return
    if stat.S_ISDIR(mode):
        raise UsageValueError(f"the {what} path {path} is a directory; give a file name")
    if not stat.S_ISREG(mode):
        kind = ("a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        raise UsageValueError(f"the {what} path {path} is {kind}; spare-mc only writes regular files")


def check_writable(path, what: str = "output") -> None:
    """Refuse, before any work, a file ``path`` that could not be written: a parent path that runs through a file,
    or a folder (the nearest one that exists: the missing ones are made by the run) where this process cannot
    create a file. The test creates and removes a probe file there (``os.access`` would say yes to root on a
    read-only folder, and no on some network file systems that allow it). Errors name ``path``, the user's path."""
    path = os.fspath(path)
    check_regular_target(path, what)
    check_writable_folder(os.path.dirname(os.path.abspath(path)), what, shown=path)


def check_writable_folder(folder, what: str = "output folder", *, shown=None) -> None:
    """:func:`check_writable` for a folder (existing or to be made) that files will be created in; errors name
    ``shown`` (default: ``folder`` as given)."""
    shown = os.fspath(folder) if shown is None else shown
    folder = os.path.abspath(os.fspath(folder))
    while not os.path.exists(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    if not os.path.isdir(folder):
        raise UsageValueError(f"cannot write the {what} {shown}: {folder} is a file, not a folder")
    why = cannot_create_in(folder)
    if why:
        raise UsageValueError(f"cannot write the {what} {shown}: {folder} is not writable ({why})")


def cannot_create_in(folder) -> str:
    """Why this process cannot create a file in the existing folder ``folder`` (``""``: it can). A probe file is
    created and removed: ``os.access`` says yes to root on a read-only folder."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".spare-mc-probe.", suffix=".tmp", dir=folder)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    os.remove(probe)
    return ""


def _file_mode() -> int:
    """The mode a new file gets under the process's umask (mkstemp's files are 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: str, write) -> None:
    """``write(tmp_path)`` into a unique temporary file beside ``path``, fsync it, rename it over ``path``."""
    path = os.fspath(path)
    check_regular_target(path)
    folder = os.path.dirname(path) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    except OSError as exc:  # name the file being written, not the temporary one that could not be made
        raise OSError(exc.errno, exc.strerror, path) from exc
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, _file_mode())
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.remove(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and exc.strerror is not None and (not exc.filename or exc.filename == tmp):
            # a write to an open file (a full disk, a quota) names no file, or the temporary one: name the one
            # being written
            raise OSError(exc.errno, exc.strerror, path) from exc
        raise
    _fsync_dir(folder)


def remove_stale_temporaries(path: str) -> int:
    """Remove temporary files a killed writer of ``path`` left behind (call only while holding its lock)."""
    folder = os.path.dirname(os.fspath(path)) or "."
    prefix = f".{os.path.basename(os.fspath(path))}."
    n = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        if name.startswith(prefix) and name.endswith(".tmp"):
            try:
                os.remove(os.path.join(folder, name))
                n += 1
            except OSError:  # pragma: no cover - removed meanwhile
                pass
    return n


def content_digest(ds) -> str:
    """SHA-256 of a dataset's content: every variable's name, shape and values and every attribute (but this
    digest), in a form that survives the NetCDF round trip."""
    h = hashlib.sha256()
    for name in sorted(map(str, ds.variables)):
        v = np.asarray(ds[name].values)
        h.update(f"{name}{v.shape}".encode())
        if v.dtype.kind in "biuf":
            h.update(np.ascontiguousarray(v, dtype=np.float64).tobytes())
        else:
            h.update("\x00".join(map(str, v.ravel().tolist())).encode())
    for key in sorted(ds.attrs):
        if key != "content_sha256":
            h.update(f"{key}={ds.attrs[key]}\x00".encode())
    return h.hexdigest()


def write_dataset(ds, path):
    """Write a dataset to NetCDF (scipy engine, no extra dependency), atomically and durably, with a checksum of its
    content (attribute ``content_sha256``) that :func:`open_dataset` verifies.

    Integer variables are stored as int32 or float64 (NetCDF-3 has no 64-bit integers); attributes must be
    strings or numbers. Returns the dataset as written (converted, with its checksum).
    """
    ds = ds.copy()
    for name in list(ds.variables):
        if ds[name].dtype == np.int64:
            v = ds[name].values
            ds[name] = ds[name].astype(np.int32 if v.size == 0 or np.abs(v).max() < 2**31 else np.float64)
    ds.attrs["content_sha256"] = content_digest(ds)
    atomic_write(os.fspath(path), lambda tmp: _to_netcdf(ds, tmp))
    return ds


def _to_netcdf(ds, path) -> None:
    """``ds.to_netcdf(path)`` (scipy engine) under dask's synchronous scheduler. With a dask client in this process
    (a study's shared cluster) xarray would otherwise take a distributed lock -- a round trip to the scheduler --
    for every variable it writes: 0.35-0.45 s per dataset of 52 variables, a third of a short sweep (2026-12-06).
    The data are numpy arrays written by this process alone, so the process-local lock xarray then takes is enough;
    the file written is the same."""
    import dask

    with dask.config.set(scheduler="synchronous"):
        ds.to_netcdf(path, engine="scipy")


def json_default(x):
    """JSON conversion of numpy scalars and arrays (``json.dump(..., default=json_default)``)."""
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def write_json(obj, path) -> None:
    """Write ``obj`` as JSON (numpy scalars converted), atomically and durably."""
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, default=json_default, indent=1)

    atomic_write(os.fspath(path), write)


def check_own_json(path, force: bool, keys, what: str, hint: str = "pass --force, or choose another folder") -> None:
    """Refuse to replace a file that is not a ``what`` spare-mc wrote -- a JSON object with ``schema_version`` and
    every key of ``keys`` -- unless ``force``; anything that is not a regular file is refused always."""
    check_regular_target(path, what)
    if force or not os.path.exists(path):
        return
    try:
        with open(path, encoding="utf-8") as fh:
            d = json.load(fh)
        ours = isinstance(d, dict) and "schema_version" in d and all(k in d for k in keys)
    except (OSError, ValueError, UnicodeDecodeError):
        ours = False
    if not ours:
        raise UsageValueError(f"{path} exists and is not a {what} written by spare-mc; refusing to replace it "
                              f"({hint})")


class CorruptDataset(UsageValueError):
    """A dataset whose content no longer matches the checksum written with it."""


def open_dataset(path):
    """Open (and load) a NetCDF dataset; a clear error if ``path`` is missing, not a regular file, not NetCDF, or
    (for a dataset written by :func:`write_dataset`) no longer matches its checksum (:class:`CorruptDataset`)."""

    path = os.fspath(path)
    if not os.path.exists(path):
        raise UsageValueError(f"dataset file not found: {path}")
    if os.path.isdir(path):
        raise UsageValueError(f"{path} is a directory, not a dataset file")
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise UsageValueError(f"{path} is not a regular file (a device, FIFO or socket), not a dataset")
    import xarray as xr  # here, not at the top: it and pandas take 0.4 s to import (outside the try: a failed
    # import is not a file's fault)
    try:
        with xr.open_dataset(path, engine="scipy") as ds:
            ds = ds.load()
    except (OSError, ValueError, TypeError, KeyError, IndexError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        with open(path, "rb") as fh:  # a NetCDF header that does not read through: most likely a file cut short
            cut = fh.read(4) in (b"CDF\x01", b"CDF\x02", b"CDF\x05")
        why = "; it starts as NetCDF, so it is most likely truncated (an interrupted copy or write)" if cut else ""
        raise UsageValueError(f"{path} cannot be read as a NetCDF dataset ({first}){why}") from None
    expected = ds.attrs.get("content_sha256")
    if expected is not None and content_digest(ds) != expected:
        raise CorruptDataset(f"{path} is corrupt: its content no longer matches the checksum written with it")
    return ds


# ----------------------------------------------------------------------------------------------------- summaries
def summarize(ds, quantity: str | None = None):
    """``ds`` with ``<output>_mean``, ``_se``, ``_ci_low``, ``_ci_high`` over ``rep`` (NaNs ignored) added.

    The interval is at 95% and respects each output's support (:data:`OUTPUTS`: the log scale for
    non-negative quantities, the logit scale for proportions; see :meth:`spare_mc.MCEstimate.confidence_interval`);
    the level is the variables' ``level`` attribute.
    """

    quantity = quantity or ds.attrs["quantity"]
    level = 0.95
    new = {}  # added at once: one merge instead of one per variable (4 per output)
    for name, (units, long, support) in OUTPUTS[quantity].items():
        x = ds[name]
        n = x.notnull().sum("rep")
        mean = x.mean("rep", skipna=True)
        se = x.std("rep", ddof=1, skipna=True) / np.sqrt(n)
        t = t_ppf(0.5 + level / 2, np.maximum(n - 1, 1))
        m, s = mean.values, se.values
        with np.errstate(divide="ignore", invalid="ignore"):
            lo, hi = m - t * s, m + t * s
            if support == "nonnegative":
                h = t * s / m
                pos = m > 0
                lo = np.where(pos, m * np.exp(-h), np.maximum(lo, 0.0))
                hi = np.where(pos, m * np.exp(h), hi)
            elif support == "unit":
                inside = (m > 0) & (m < 1)
                lm = np.log(m / (1 - m))
                h = t * s / (m * (1 - m))
                lo = np.where(inside, 1 / (1 + np.exp(-(lm - h))), np.clip(lo, 0.0, 1.0))
                hi = np.where(inside, 1 / (1 + np.exp(-(lm + h))), np.clip(hi, 0.0, 1.0))
        attrs = {"units": units}
        new[f"{name}_mean"] = mean.assign_attrs(attrs, long_name=f"mean of: {long}")
        new[f"{name}_se"] = se.assign_attrs(attrs, long_name=f"standard error of the mean of: {long}")
        new[f"{name}_ci_low"] = mean.copy(data=lo).assign_attrs(attrs, level=level, support=support,
                                                                long_name=f"{level:.0%} CI low of: {long}")
        new[f"{name}_ci_high"] = mean.copy(data=hi).assign_attrs(attrs, level=level, support=support,
                                                                 long_name=f"{level:.0%} CI high of: {long}")
    return ds.assign(new)


# --------------------------------------------------------------------------------------------------------- parts
class SweepLocked(UsageValueError):
    """Another process is running a sweep into the same output."""


class SweepWriteError(OSError):
    """A sweep could not write a finished task or its dataset (a full disk, a quota): the tasks already on disk
    are kept, and a rerun resumes from them."""


@contextlib.contextmanager
def sweep_writing(path):
    """The operating system's refusals inside as :class:`SweepWriteError` naming their file (``path`` if they name
    none); an error raised with a message of its own (no ``strerror``) passes as it is."""
    try:
        yield
    except OSError as exc:
        if exc.strerror is None:
            raise
        raise SweepWriteError(exc.errno, exc.strerror, exc.filename or os.fspath(path)) from exc


def take_lock(path, busy: str) -> int:
    """Open ``path`` (created if missing) and take its exclusive ``flock`` without waiting; returns the open file
    descriptor (closing it releases the lock; so does the process's death, ``kill -9`` included). A lock held by
    another process raises :class:`SweepLocked` with the message ``busy``."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise SweepLocked(busy) from None
        raise
    return fd


class PartsStore:
    """The finished tasks of one sweep (``<out>.parts/<digest>/<task key>.npz``), locked while in use.

    Use as a context manager: entering takes the exclusive lock of the output (or raises :class:`SweepLocked`),
    removes temporaries that a killed run left, and creates the folder.
    """

    def __init__(self, out_path, digest: str, outputs, *, warn=None):

        self.out = os.fspath(out_path)
        self.root = self.out + ".parts"
        self.folder = os.path.join(self.root, digest)
        self.digest = digest
        self.code = code_digest()  # the code that computes (and computed) the parts
        self.other_code = {}  # parts of other code set aside by load(): {their code digest: count}
        self.outputs = tuple(outputs)
        self._warn = warn or (lambda msg: print(f"spare-mc: warning: {msg}", file=sys.stderr))
        self._lock_fd = None

    def __enter__(self):

        os.makedirs(self.folder, exist_ok=True)
        self._lock_fd = take_lock(os.path.join(self.root, ".lock"),
                                  f"another spare-mc sweep is running into {self.out} (lock {self.root}/.lock); wait "
                                  f"for it to finish or choose another `out`")
        for name in os.listdir(self.folder):  # written by a run that was killed mid-write
            if name.endswith(".tmp"):
                os.remove(os.path.join(self.folder, name))
        remove_stale_temporaries(self.out)
        legacy = [n for n in os.listdir(self.root) if n.endswith(".npz")]
        if legacy:
            self._warn(f"ignoring {len(legacy)} part files in {self.root} that carry no digest (written by spare_mc "
                       f"< 0.2); they are never adopted")
        return self

    def __exit__(self, *exc):
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the lock
            self._lock_fd = None
        return False

    def path(self, key: str) -> str:
        return os.path.join(self.folder, f"{key}.npz")

    @staticmethod
    def point_text(params) -> str:
        """A task's parameter values as stored with its part (canonical JSON): the part is bound to the point it
        computed, not only to its position in the grid (:meth:`load` checks it)."""
        return json.dumps(params, sort_keys=True, default=str)

    def save(self, key: str, rep_range: tuple, result: dict, params) -> None:
        """Write one finished task atomically, with its provenance (and its parameter values, ``params``)."""
        meta = json.dumps({"digest": self.digest, "key": key, "rep_start": int(rep_range[0]),
                           "rep_stop": int(rep_range[1]), "point": self.point_text(params), "code": self.code})

        def write(tmp):
            with open(tmp, "wb") as fh:
                np.savez(fh, __meta__=np.array(meta), **result)

        with sweep_writing(self.path(key)):
            atomic_write(self.path(key), write)

    def load(self, key: str, rep_range: tuple, check=None, *, params):
        """The task's results, or ``None`` if it is missing, or was rejected (moved aside, with a warning): a part
        of another sweep, task or point, or computed by other code (:func:`spare_mc._lib.provenance.code_digest`).

        ``check(data)`` returns why the values are impossible (non-finite, outside their range), or ``None``;
        ``params`` are the task's parameter values, which the part must have been computed for (a part written
        before parts recorded them is rejected, so recomputed)."""
        path = self.path(key)
        if not os.path.exists(path):
            return None
        a, b = rep_range
        try:
            with np.load(path, allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
            meta = json.loads(str(data.pop("__meta__")))
        except Exception as exc:  # noqa: BLE001 - any failure to read means the file is unusable
            return self._reject(path, f"unreadable ({type(exc).__name__}: {exc}): corrupt or truncated")
        expected = {"digest": self.digest, "key": key, "rep_start": a, "rep_stop": b,
                    "point": self.point_text(params)}
        wrong = {k: meta.get(k) for k, v in expected.items() if meta.get(k) != v}
        if wrong:
            return self._reject(path, f"it belongs to another sweep or task ({wrong}, expected {expected})")
        if meta.get("code") != self.code:  # e.g. a sweep resumed after an update that kept the version string
            os.replace(path, path + ".rejected")  # one warning for all of them: report_other_code()
            self.other_code[meta.get("code")] = self.other_code.get(meta.get("code"), 0) + 1
            return None
        for name in self.outputs:
            v = data.get(name)
            if v is None or v.shape != (b - a,) or v.dtype.kind != "f":
                return self._reject(path, f"variable {name!r} is missing or malformed")
        extra = set(data) - set(self.outputs)
        if extra:
            return self._reject(path, f"unexpected variables {sorted(extra)}")
        why = check(data) if check is not None else None
        if why:
            return self._reject(path, f"impossible values: {why}")
        return data

    def report_other_code(self) -> None:
        """One warning for the parts that :meth:`load` set aside as computed by other code (a part per line would
        flood stderr after an update)."""
        if self.other_code:
            n = sum(self.other_code.values())
            codes = ", ".join("none recorded (written before parts recorded it)" if c is None else c
                              for c in self.other_code)
            self._warn(f"{n} part files in {self.folder} were computed by other spare_mc code (code digest {codes}; "
                       f"this code {self.code}) and will be recomputed: a dataset must not mix the numbers of two "
                       f"codes (they are kept as *.rejected)")
            self.other_code = {}

    def _reject(self, path, why):
        os.replace(path, path + ".rejected")
        self._warn(f"part file {path} was rejected and will be recomputed: {why} (kept as {path}.rejected)")
        return None
