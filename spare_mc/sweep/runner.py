"""Running a sweep: :func:`run_sweep` (and :func:`run_study_sweep` for a study that owns its output) turns a
:class:`~spare_mc.sweep.spec.SweepSpec` into its tasks, runs those not finished yet (in this process, or on dask:
:mod:`spare_mc.sweep.cluster`) and writes one xarray dataset; :func:`open_sweep_dataset` reads one back.

Safety (see :mod:`spare_mc.sweep.storage`): the output is checked before any work (a directory, or an existing file that
is not this sweep's output, is refused unless ``force``; this sweep's own up-to-date output is returned as is);
the number of tasks and the dataset's memory are checked against the limits of :mod:`spare_mc.options`; finished
tasks are written atomically to ``<out>.parts/<digest>/`` as they complete, so an interrupted sweep (Ctrl-C, a killed
process, a lost worker) resumes where it stopped; parts are validated when read and never adopted from another
spec, seed or version; one sweep at a time writes one output.
"""

from __future__ import annotations

import os

from .._lib.resources import check_local_workers
from .._lib.validation import UsageError, UsageTypeError, UsageValueError
from .cluster import check_not_reimported, check_scheduler, run_on_dask
from .progress import Progress
from .spec import TASK_KEY_RE, SweepSpec
from .storage import (OPTIONAL_OUTPUTS, OUTPUTS, QUANTITIES, CorruptDataset, PartsStore, cannot_create_in,
                      check_regular_target, open_dataset, sweep_writing, write_dataset)
from .tasks import assemble_dataset, part_check, run_task
from .warm import warm_up

__all__ = ["open_sweep_dataset", "run_study_sweep", "run_sweep"]


def _check_output(out: str, spec: SweepSpec, force: bool, say=None):
    """Before any work: refuse a directory or an unwritable place, and an existing file that is not this sweep's
    output (unless ``force``). Returns the existing dataset when it is this sweep's up-to-date output (read-only
    places included: nothing is written then). ``say`` (a :class:`Progress`) gets the warnings: the caller
    checks twice, before and under the output's lock, and warns once."""
    if os.path.isdir(out) or out.endswith(tuple(x for x in (os.sep, os.altsep) if x)):
        raise UsageValueError(f"`out` {out} is a directory; give the dataset's file name (e.g. "
                              f"{os.path.join(out, spec.name + '.nc')})")
    check_regular_target(out, "`out`")  # an empty path, a device, a FIFO: refused whatever `force` says
    folder = os.path.dirname(out) or "."
    parent = folder
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if parent and not os.path.isdir(parent):
        raise UsageValueError(f"cannot write {out}: {parent} is a file, not a folder")
    ds, same, recompute, unreadable = None, False, None, None
    digest = spec.digest()
    if os.path.exists(out):
        try:
            ds = open_dataset(out)
            dims = [d for d in ds[next(iter(ds.data_vars))].dims if d != "rep"] if ds.data_vars else None
            same = ds.attrs.get("spec_digest") == digest and dims == spec.dims
            # the digest of before the grid's order was recorded (`legacy`) is today's for a grid listed in sorted
            # key order; for another order it is not trusted: the code of that time could fill such a dataset with
            # another order's parts, every value under another point's labels, and this spec's dimensions
            legacy = spec.digest(legacy=True)
            if not same and legacy != digest and dims == spec.dims and ds.attrs.get("spec_digest") == legacy:
                recompute = (f"{out} was written by an older spare_mc that could mix grid points when the [grid] keys "
                             f"are not in sorted order; it will be recomputed")
        except (CorruptDataset, UsageError) as exc:  # damaged or truncated: recompute this sweep's own output
            ds, same = None, False
            if _looks_like_a_dataset(out):  # netCDF or HDF5 that does not read: damaged or truncated, said so
                unreadable = str(exc)  # (the text: the exception holds the file open)
            if _claims_digest(out, digest):
                recompute = f"{exc}; it will be recomputed"
    if same:
        return ds
    os.makedirs(folder, exist_ok=True)
    why = "permission denied" if not os.access(folder, os.W_OK | os.X_OK) else cannot_create_in(folder)
    if why:
        raise UsageValueError(f"cannot write the dataset {out}: {folder} is not writable ({why})")
    if recompute is not None:
        if say is not None:
            say.warn(recompute)
        return None
    if ds is None and not os.path.exists(out):
        return None
    if not force:
        what = ("a dataset of another sweep or spare_mc version" if ds is not None and "spec_digest" in ds.attrs
                else f"unreadable as a dataset ({unreadable})"
                if unreadable is not None else "not a dataset of this sweep")
        raise UsageValueError(f"`out` {out} already exists and is {what}; refusing to replace it (pass force=True to "
                              f"replace it, or choose another `out`)")
    return None


def _looks_like_a_dataset(path) -> bool:
    """Whether ``path`` starts as a netCDF (classic or 64-bit) or HDF5 (netCDF-4) file does."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return False
    return head[:3] == b"CDF" or head == b"\x89HDF\r\n\x1a\n"


def _claims_digest(path, digest) -> bool:
    """Whether a (possibly damaged) dataset file still names ``digest`` as its spec digest."""
    try:
        with open(path, "rb") as fh:
            blob = fh.read()
    except OSError:
        return False
    return b"spec_digest" in blob and digest.encode() in blob


def run_sweep(spec: SweepSpec, out=None, *, scheduler: str | None = None, workers: int | None = None,
              progress: bool = True, force: bool = False):
    """Run (or resume) a sweep and write its dataset; returns the dataset.

    Parameters
    ----------
    spec : SweepSpec
    out : path, optional
        Dataset file (default ``data/<name>.nc``); finished tasks live in ``<out>.parts/<digest>/``.
    scheduler : str, optional
        Address of an existing dask scheduler (``tcp://host:port``), checked at once. Default: a local cluster.
    workers : int, optional
        Local cluster size (worker processes with one thread each; default: the number of CPUs). ``0`` runs the
        tasks in this process without dask (for debugging; same results).
    progress : bool
        Progress on stderr (a bar on a terminal, a line per 10% otherwise; never fatal if stderr is gone).
    force : bool
        Replace an existing ``out`` that is not this sweep's output.

    Raises
    ------
    WorkersLost
        The dask workers died (a task killed every worker that ran it, or a local cluster kept none for
        :data:`NO_WORKER_TIMEOUT_S` seconds), or the local cluster did not start. Finished tasks are kept.
    ConnectionError
        The scheduler was lost mid-sweep. Finished tasks are kept.

    Notes
    -----
    A script that runs a sweep on a local cluster must call this under ``if __name__ == "__main__":``: the worker
    processes import the script, and each would start the sweep again. Such a call from a re-imported script is
    refused with :class:`~spare_mc._lib.validation.UsageValueError`.
    """
    if not isinstance(spec, SweepSpec):
        raise UsageTypeError(f"`spec` must be a SweepSpec, got {type(spec).__name__}")
    check_not_reimported()
    workers = check_local_workers(workers)
    if workers is not None and scheduler is not None:
        raise UsageValueError(f"`workers`={workers} has no effect with `scheduler`: the scheduler's own workers run "
                              f"the tasks (give one of them)")
    spec.check_resources()
    spec.check_points()  # every invalid value fails here, before any work
    out = os.path.join("data", f"{spec.name}.nc") if out is None else os.fspath(out)
    if scheduler is not None:
        check_scheduler(scheduler)
    existing = _check_output(out, spec, force)
    say = Progress(spec, progress)
    if existing is not None and existing.attrs.get("name") == spec.name:  # (a rename is written under the lock)
        return _up_to_date(existing, out, spec, say)
    lenient = spec.lenient
    tasks = spec.tasks()
    with PartsStore(out, spec.digest(), OUTPUTS[spec.quantity], warn=say.warn) as store:
        # again, under the lock: another sweep may have just finished (and now warn, once)
        existing = _check_output(out, spec, force, say)
        if existing is not None:
            return _up_to_date(existing, out, spec, say)
        results, todo = {}, []
        for t in tasks:
            got = store.load(t[0], (t[3], t[4]), check=part_check(spec.quantity, t[2]), params=t[2])
            if got is None:
                todo.append(t)
            else:
                results[t[0]] = got
        store.report_other_code()
        if todo:
            _warn_other_blocks(store.folder, spec, {t[0] for t in tasks}, say.warn)
        say.update(len(results), len(tasks))
        if todo and workers == 0 and scheduler is None:
            for key, idx, params, a, b in todo:
                res = run_task(spec.quantity, spec.seed, idx, params, a, b, lenient)
                store.save(key, (a, b), res, params)
                results[key] = res
                say.update(len(results), len(tasks))
        elif todo:
            if scheduler is None:  # compiled once, ahead, not by every local worker at once (and said once); a
                # sweep's own shared compilations (ReCtlr, the timeline) and kernels in parallel processes
                warm_up([spec], processes=workers or None)
            run_on_dask(spec, todo, store, results, scheduler, workers, lenient,
                         lambda: say.update(len(results), len(tasks)))
        say.done()
        with sweep_writing(out):  # every task is on disk: a rerun only assembles them
            ds = write_dataset(assemble_dataset(spec, results), out)
    return ds


def _warn_other_blocks(folder, spec, keys, warn) -> None:
    """Warn when the parts folder holds tasks of this sweep cut into blocks of another size (a part is one task:
    a point and a range of replications): they are not reused, and the warning names the block that would."""
    sizes = {}
    for name in os.listdir(folder):
        m = TASK_KEY_RE.fullmatch(name[:-4]) if name.endswith(".npz") else None
        if m and name[:-4] not in keys:
            size = int(m.group(2)) - int(m.group(1))
            sizes[size] = sizes.get(size, 0) + 1
    if sizes:
        found = ", ".join(f"{n} of block {b}" for b, n in sorted(sizes.items(), key=lambda kv: -kv[1]))
        best = max(sizes, key=sizes.get)
        warn(f"{folder} holds finished tasks of this sweep cut into blocks of another size ({found}); with "
             f"block = {spec.block} they are not reused. To reuse them, stop and run again with block = {best} "
             f"(sweep.block in the spec): the numbers do not depend on the block")


def _up_to_date(ds, out, spec, say):
    """This sweep's up-to-date output ``ds`` (same digest); a spec renamed since (the digest leaves the name out: it
    changes no number) gets its name written into the file, so that the file, the returned dataset and a study's
    ownership test (:func:`run_study_sweep`) all say the current name. Called under the output's lock."""
    was = ds.attrs.get("name")
    if was == spec.name:
        say.line(f"{out} is up to date (same spec, seed and version); nothing to compute")
        return ds
    ds = ds.copy()
    ds.attrs["name"] = spec.name
    ds = write_dataset(ds, out)
    say.line(f"{out} is up to date (same spec, seed and version); its sweep name is now {spec.name!r} (was "
             f"{was!r}); nothing to compute")
    return ds


def run_study_sweep(spec: SweepSpec, out, *, scheduler: str | None = None, workers: int | None = None,
                    progress: bool = True, force: bool = False):
    """:func:`run_sweep` for a study that owns its output file: the study's own earlier dataset (same sweep name,
    other settings, seed or version) is replaced; any other file only with ``force``."""
    out = os.fspath(out)
    own = False
    if os.path.isfile(out):
        try:
            own = open_dataset(out).attrs.get("name") == spec.name
        except UsageError:
            own = False
    return run_sweep(spec, out, scheduler=scheduler, workers=workers, progress=progress, force=force or own)


def open_sweep_dataset(path):
    """:func:`spare_mc.sweep.storage.open_dataset`, then check that it is a spare-mc sweep dataset (its quantity,
    spec and variables)."""
    try:
        ds = open_dataset(path)
    except UsageValueError as exc:
        if not os.path.isfile(path):  # missing, a folder...: the reason alone says it
            raise
        raise UsageValueError(f"not a spare-mc sweep dataset: {exc}") from None
    q = ds.attrs.get("quantity")
    if q not in QUANTITIES:
        raise UsageValueError(f"{path} is not a spare-mc sweep dataset (its `quantity` attribute is {q!r}; expected "
                              f"one of {list(QUANTITIES)})")
    if "spec" not in ds.attrs:
        raise UsageValueError(f"{path} is not a spare-mc sweep dataset (no `spec` attribute)")
    try:
        SweepSpec.from_toml(ds.attrs["spec"])
    except UsageValueError as exc:
        raise UsageValueError(f"{path}: its `spec` attribute is not a valid sweep spec: {exc}") from None
    missing = [name for name in OUTPUTS[q] if name not in ds and name not in OPTIONAL_OUTPUTS]
    if missing:
        raise UsageValueError(f"{path} is not a complete spare-mc {q} dataset: variables {missing} are missing")
    return ds
