"""The output-folder contract every study keeps (``sensitivity``, ``calibrate``, ``dynamic``, ``repair``, ``reproduce``
and its tables): a folder holds one study at one setting.

A study's folder carries a manifest, :data:`MANIFEST`: the study's name, its **setting digest** (a SHA-256 of the
study's name, its settings -- every input that changes a number, the seed included -- and the spare_mc version),
the settings themselves, and the files the study has written there. :class:`StudyFolder` enforces, in this order:

1. **Before any work** (:meth:`StudyFolder.check`, called by the constructor): the folder is a folder or can be made
   (no file in its path), this process can create files in it (a probe file, so a read-only folder is refused
   even to root), and a manifest of **another setting** is refused unless ``force``; the refusal names what differs
   (e.g. ``seed: 0 -> 1``). Each output file the study will write is checked by :func:`check_target` (writable, not
   a folder, not a file spare-mc did not write).
2. **For the whole run** (``with folder:``): one exclusive lock (:data:`LOCK`, ``flock``), so that a second run into
   the folder -- any setting -- is refused at once instead of interleaving its stages with the first; the manifest
   is checked again under the lock and written before the first result.
3. **With force and another setting**, the earlier run's files (those its manifest lists) are moved aside into
   ``replaced/<UTC time>-<its digest>/`` inside the folder: kept, never mixed with the new run's, never deleted.

A rerun of the same setting finds its own manifest and resumes (the sweeps keep their finished tasks) or returns at
once. A folder without a usable manifest (written by spare_mc 0.3.0, or its manifest deleted or damaged) that holds
any of the study's outputs (``owns``: ``dynamic.json``, ``dynamic-*``, ...) holds results of an unknown setting:
refused unless ``force``, which moves them aside. Other files in a folder (a user's ``data/README.md``) are never
touched, and ``force`` never moves the lock, ``replaced/`` or anything outside the folder. A figure or preset
path that another study folder records is refused (:func:`check_not_in_another_study`).
"""

from __future__ import annotations

import dataclasses
import datetime
import glob
import hashlib
import json
import os
import warnings

from .._lib.provenance import SCHEMA_VERSION, json_safe
from .._lib.validation import UsageValueError, as_bool
from .._lib.version import __version__
from ..plots.files import check_figure_target
from ..sweep.storage import (check_own_json, check_regular_target, check_writable, check_writable_folder, take_lock,
                             write_json)

__all__ = ["MANIFEST", "LOCK", "REPLACED", "StudyFolder", "check_target", "check_not_in_another_study",
           "setting_digest"]

#: The manifest of a study's output folder (its study, setting digest, settings and files).
MANIFEST = ".spare-mc-study.json"
#: The lock file held for the whole run of a study.
LOCK = ".spare-mc-study.lock"
#: The subfolder where ``force`` moves the files of a run of another setting.
REPLACED = "replaced"


def setting_digest(study: str, settings: dict) -> str:
    """SHA-256 of ``study``, ``settings`` (JSON, keys sorted) and the spare_mc version: what a folder's results
    depend on."""
    blob = json.dumps({"study": study, "settings": json_safe(settings), "spare_mc": __version__}, sort_keys=True,
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def check_target(path, what: str, *, force: bool, keys=None, figure: bool = False, flag: str | None = None) -> str:
    """Check, before any work, one file a study will write: ``path`` can be written (:func:`check_writable`), is a
    regular file or nothing, and, when it exists, is a ``what`` spare-mc wrote (a JSON object with every key of
    ``keys``, or with ``figure`` a PNG marked as spare-mc's) unless ``force``. ``flag`` (e.g. ``"--figure"``) names
    the input the path came from in the errors. Returns the path."""
    path = os.fspath(path)
    label = f"{what} (`{flag}`)" if flag else what
    check_regular_target(path, label)
    check_writable(path, label)
    try:
        if figure:
            check_figure_target(path, force)
        elif keys is not None:
            check_own_json(path, force, keys, what)
    except UsageValueError as exc:
        if not flag:
            raise
        raise UsageValueError(f"`{flag}`: {exc}") from None
    return path


#: How a study is called, for the messages (the digest and the manifest use the short name).
_COMMANDS = {"table-domains": "reproduce --table domains", "table-domain-period": "reproduce --table domain-period",
             "table-phase": "reproduce --table phase", "table-llama3": "reproduce --table llama3"}


def _command(study) -> str:
    return f"`spare-mc {_COMMANDS.get(study, study)}`" if isinstance(study, str) else "an unknown study"


def _describe(old: dict, new: dict, limit: int = 4) -> str:
    """What differs between two manifests, e.g. ``"seed: 0 -> 1; policies: ['hazard'] -> ['young_hazard']"``."""
    parts = []
    if old.get("spare_mc") != __version__:
        parts.append(f"spare_mc: {old.get('spare_mc')} -> {__version__}")
    _diff_into(parts, "", old.get("settings") or {}, new["settings"])
    more = len(parts) - limit
    return "; ".join(parts[:limit]) + (f"; and {more} more" if more > 0 else "") if parts else "the settings"


def _diff_into(parts: list, prefix: str, a, b, depth: int = 2) -> None:
    """Append ``"key: old -> new"`` for each differing key of two settings dicts, nested dicts by their dotted
    keys (``phase.seed``) down to ``depth`` levels."""
    for key in sorted(set(a) | set(b), key=str):
        x, y = a.get(key, "(unset)"), b.get(key, "(unset)")
        if x == y:
            continue
        if isinstance(x, dict) and isinstance(y, dict) and depth > 1:
            _diff_into(parts, f"{prefix}{key}.", x, y, depth - 1)
        else:
            parts.append(f"{prefix}{key}: {_short(x)} -> {_short(y)}")


def _short(x, n: int = 60) -> str:
    if isinstance(x, list) and x and all(isinstance(v, dict) and "name" in v for v in x):
        x = [v["name"] for v in x]  # named entries (the variants of a sensitivity study): their names
    text = json.dumps(x, default=str) if not isinstance(x, str) else repr(x)
    return text if len(text) <= n else text[:n - 3] + "..."


class StudyFolder:
    """One study's output folder, held for the whole run (see the module docstring).

    Parameters
    ----------
    out_dir : path
        The folder (made by the run if missing).
    study : str
        The study's name (``"dynamic"``, ``"reproduce"``, ``"table-phase"``, ...).
    settings : dict
        Every input that changes a number (the seed included), JSON-serialisable; the digest is taken over it.
    force : bool
        Move the files of a run of another setting aside (and replace files spare-mc did not write).
    flag : str
        The input the folder came from, in the errors (``"--out-dir"`` from the command line).

    Examples
    --------
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> folder = StudyFolder(out, "demo", {"seed": 0})        # checks now: another setting would be refused
    >>> with folder:                                          # the lock, for the whole run
    ...     path = folder.file("demo.json")                   # recorded in the manifest before it is written
    >>> StudyFolder(out, "demo", {"seed": 1})
    Traceback (most recent call last):
    ...
    spare_mc._lib.validation.UsageValueError: `out_dir` ... at another setting (seed: 0 -> 1); ...
    """

    def __init__(self, out_dir, study: str, settings: dict, *, force: bool = False, flag: str = "`out_dir`",
                 result=None, figure=None, figure_flag: str = "`figure`", owns=None):
        if not isinstance(out_dir, (str, os.PathLike)) or isinstance(out_dir, bytes) or not os.fspath(out_dir):
            raise UsageValueError(f"{flag} must be a folder path, got {out_dir!r}")
        if figure is not None and (not isinstance(figure, (str, os.PathLike)) or isinstance(figure, bytes)
                                   or not os.fspath(figure)):
            raise UsageValueError(f"{figure_flag} must be a file path, got {figure!r}")
        self.root = os.fspath(out_dir)
        self.study = study
        # as the manifest will hold it (a seed that is not a number -- a SeedSequence -- as its text)
        self.settings = json.loads(json.dumps(json_safe(settings), default=str))
        self.digest = setting_digest(study, self.settings)
        self.force = as_bool(force, "force")
        self.flag = flag
        self.result = result
        self.figure = None if figure is None else os.fspath(figure)
        self.figure_flag = figure_flag
        # the names (glob patterns) of the study's outputs: what a folder without a (usable) manifest may hold of
        # an unrecorded setting
        self.owns = tuple(owns) if owns is not None else tuple(x for x in (result and result[0],) if x)
        self.files: list = []
        self.moved_to = None
        self._lock_fd = None
        self.check()

    # ------------------------------------------------------------------------------------------------ checks
    def _manifest_path(self) -> str:
        return os.path.join(self.root, MANIFEST)

    def _read_manifest(self):
        """The folder's manifest (a dict), ``None`` without one; a damaged one is a usage error unless ``force``."""
        path = self._manifest_path()
        if not os.path.exists(path):
            return None
        try:
            with open(path, encoding="utf-8") as fh:
                d = json.load(fh)
            if not (isinstance(d, dict) and isinstance(d.get("digest"), str) and isinstance(d.get("study"), str)
                    and isinstance(d.get("settings"), dict) and isinstance(d.get("files", []), list)):
                raise ValueError("not a study manifest")
            return d
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            if self.force:
                return {"study": None, "digest": "damaged", "settings": {}, "files": [], "damaged": True}
            raise UsageValueError(f"{self.flag} {self.root}: its manifest {MANIFEST} is damaged ({exc}), so the "
                                  f"setting of its results is unknown; pass force=True to move them aside into "
                                  f"{os.path.join(self.root, REPLACED)}/, or choose another folder") from None

    def _unrecorded(self) -> list:
        """The study's outputs (:attr:`owns`) in a folder without a usable manifest: results of an unknown setting."""
        found = set()
        for pattern in self.owns:
            hits = glob.glob(os.path.join(glob.escape(self.root), pattern))
            found.update(os.path.relpath(p, self.root) for p in hits)
        return sorted(found)

    def check(self) -> None:
        """The checks of step 1 (no side effects): a folder that can be written, and no other setting's results
        unless ``force``."""
        if os.path.exists(self.root) and not os.path.isdir(self.root):
            raise UsageValueError(f"{self.flag} {self.root} exists and is not a folder")
        check_writable_folder(self.root, f"study folder ({self.flag})")
        old = self._read_manifest()
        aside = f"pass force=True to move them aside into {os.path.join(self.root, REPLACED)}/"
        if old is not None and old["digest"] != self.digest and not self.force:
            if old.get("study") != self.study:
                raise UsageValueError(f"{self.flag} {self.root} holds the results of {_command(old.get('study'))}, "
                                      f"another study; refusing to mix or replace them: choose another folder, or "
                                      f"{aside}")
            raise UsageValueError(
                f"{self.flag} {self.root} holds the results of the same study at another setting ({self._diff(old)}); "
                f"refusing to mix or replace them: choose another folder, or {aside}")
        if self.result is not None:
            name, keys, what = self.result
            check_target(os.path.join(self.root, name), what, force=self.force, keys=keys)
        if self.figure is not None:
            if not self.figure.lower().endswith(".png"):
                raise UsageValueError(f"{self.figure_flag} must end in .png (the figure is a PNG), got {self.figure!r}")
            check_target(self.figure, "figure", force=self.force, figure=True, flag=self.figure_flag.strip("`"))
            if self.result is not None and os.path.abspath(self.figure) == os.path.abspath(
                    os.path.join(self.root, self.result[0])):
                raise UsageValueError(f"{self.figure_flag} {self.figure} is this run's result file; choose another "
                                      f"path")
            check_not_in_another_study(self.figure, self.root, self.figure_flag)
        if old is None and not self.force:
            found = self._unrecorded()
            if found:
                shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
                raise UsageValueError(
                    f"{self.flag} {self.root} holds outputs of this study ({shown}) but no record of the setting they "
                    f"were written at (written before spare_mc 0.3.1, by hand, or its manifest {MANIFEST} was "
                    f"deleted); refusing to mix or replace them: choose another folder, or {aside}")

    def _diff(self, old: dict) -> str:
        return _describe(old, {"study": self.study, "settings": self.settings})

    # ------------------------------------------------------------------------------------------------ the run
    def __enter__(self):
        os.makedirs(self.root, exist_ok=True)
        lock = os.path.join(self.root, LOCK)
        self._lock_fd = take_lock(lock, f"another spare-mc run is writing into {self.root} (lock {lock}); wait for "
                                        f"it to finish or choose another folder")
        try:
            self.check()  # again, under the lock: another run may have claimed the folder since
            old = self._read_manifest()
            if old is not None and old["digest"] != self.digest:
                self._move_aside(old)
            elif old is not None:
                self.files = [f for f in old.get("files", []) if isinstance(f, str)]
            elif self.force and self._unrecorded():  # outputs of an unknown setting
                self._move_aside({"digest": "unrecorded", "files": []})
            self._write_manifest()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the lock
            self._lock_fd = None
        return False

    def _move_aside(self, old: dict) -> None:
        """Move the files ``old``'s manifest lists, the study's outputs (:attr:`owns`: the whole record when the
        manifest was damaged or missing) and the manifest into ``replaced/<time>-<digest>/``, and say so (a
        warning). Only entries inside the folder move: never the lock, ``replaced/`` itself, or a path that leaves
        the folder (``..``, an absolute path, a symbolic link out)."""
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        dest = os.path.join(self.root, REPLACED, f"{stamp}-{str(old.get('digest'))[:12]}")
        k = 1
        while os.path.lexists(dest):  # (two replacements within one second)
            dest = os.path.join(self.root, REPLACED, f"{stamp}-{str(old.get('digest'))[:12]}-{k}")
            k += 1
        names = [f for f in old.get("files", []) if isinstance(f, str)] + self._unrecorded() + [MANIFEST]
        moved = []
        for name in dict.fromkeys(names):
            src = os.path.join(self.root, name)
            top = os.path.normpath(name).split(os.sep)[0]
            if top in (REPLACED, LOCK) or not _inside(self.root, src, real=True) or not os.path.lexists(src):
                continue
            target = os.path.join(dest, os.path.relpath(os.path.abspath(src), os.path.abspath(self.root)))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.replace(src, target)
            moved.append(name)
        self.moved_to = dest if moved else None
        if moved:
            what = ("an unrecorded setting" if "settings" not in old else "a setting its damaged manifest lost"
                    if old.get("damaged") else "another setting (" + _describe(old, {"settings": self.settings}) + ")")
            warnings.warn(f"{self.root}: moved the results of {what} aside into {dest} ({len(moved)} entries)",
                          UserWarning, stacklevel=3)

    def _write_manifest(self) -> None:
        write_json({"schema_version": SCHEMA_VERSION, "spare_mc": __version__, "study": self.study,
                    "digest": self.digest, "settings": self.settings, "files": self.files},
                   self._manifest_path())

    def file(self, name: str, *, dataset: bool = False) -> str:
        """The path of the output ``name`` (relative to the folder), recorded in the manifest before anything is
        written there (a sweep's ``dataset`` also records its ``.parts`` folder)."""
        if self._lock_fd is None:
            raise RuntimeError("StudyFolder.file() is called inside `with folder:` (the run holds the folder)")
        path = os.path.join(self.root, name)
        if not _inside(self.root, path):
            raise UsageValueError(f"the output {name!r} is not inside the study folder {self.root}")
        new = [n for n in ([name, name + ".parts"] if dataset else [name]) if n not in self.files]
        if new:
            self.files.extend(new)
            self._write_manifest()
        return path

    def write_result(self, result, save_figure=None, extra=None):
        """Write the study's figure (``save_figure(result, path, force=...)``, when the folder has a ``figure``)
        and its result JSON (``result.to_dict()``, then ``extra``, then the paths written as ``figure`` and
        ``result``); returns ``result`` with its ``files`` (``{"result": path[, "figure": path]}``)."""
        files = {}
        if self.figure is not None and save_figure is not None:
            files["figure"] = save_figure(result, self.record(self.figure), force=self.force)
        files["result"] = self.file(self.result[0])
        if self.moved_to is not None:
            files["replaced"] = self.moved_to
        write_json(json_safe({**result.to_dict(), **(extra or {}), **files}), files["result"])
        return dataclasses.replace(result, files=files)

    def record(self, path) -> str:
        """Record ``path`` (any path; one inside the folder is recorded relative to it, one outside is not
        recorded: force never moves a file outside the folder); returns it."""
        path = os.fspath(path)
        if _inside(self.root, path):
            self.file(os.path.relpath(os.path.abspath(path), os.path.abspath(self.root)))
        return path


def _inside(root: str, path: str, *, real: bool = False) -> bool:
    """``path`` is below ``root`` (no ``..`` escapes; with ``real``, no symbolic link out of it either: the
    folders on its way resolved, the entry itself not followed)."""
    if real:
        root = os.path.realpath(root)
        path = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), os.path.basename(path))
    root, path = os.path.abspath(root), os.path.abspath(path)
    return path != root and os.path.commonpath([root, path]) == root


def check_not_in_another_study(path, root, flag: str) -> None:
    """Refuse an output ``path`` (a figure, a preset) that another study folder -- not ``root`` -- records as one
    of its results: writing it would change that study's result without its lock, whatever ``force`` says."""
    real = os.path.realpath(os.fspath(path))
    own = os.path.realpath(os.fspath(root))
    folder = os.path.dirname(real)
    while True:
        if folder != own and os.path.isfile(os.path.join(folder, MANIFEST)):
            try:
                with open(os.path.join(folder, MANIFEST), encoding="utf-8") as fh:
                    files = json.load(fh).get("files", [])
            except (OSError, ValueError, UnicodeDecodeError, AttributeError):
                files = []
            if isinstance(files, list) and os.path.relpath(real, folder) in files:
                raise UsageValueError(f"{flag} {os.fspath(path)} is a result of the study in {folder} (its "
                                      f"{MANIFEST} records it); choose a path outside that folder")
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent
