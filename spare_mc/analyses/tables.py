"""The single tables of ``spare-mc reproduce --table X`` as library calls: one function per table, taking the
command's arguments and returning what it prints (``--json``: exactly this dict).

- :func:`domains_table`: the failure-domain study (:mod:`spare_mc.analyses.domains`), ``--table domains``;
- :func:`domain_period_table`: the checkpoint period re-optimised per failure-domain level
  (:mod:`spare_mc.analyses.domain_period`), ``--table domain-period``;
- :func:`phase_table`: the phase map of which strategy wins by cluster size, save and restart time
  (:mod:`spare_mc.analyses.phase`), ``--table phase``;
- :func:`llama3_table`: the effective training time of the Llama 3 405B preset with its sensitivity table
  (:mod:`spare_mc.analyses.clusters`), ``--table llama3``.

Each takes ``quick`` (the small flavour), the replication counts and root ``seed`` (``None``: the table's own),
``out_dir`` (``None``: nothing is written; else the table's JSON, and its figure where it has one, go there),
``force`` (replace files there that spare-mc did not write) and ``progress`` (called with a line of text at each
stage). ``--table main`` and the full reproduction are :func:`spare_mc.analyses.reproduce.reproduce`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import replace

from .._lib.provenance import json_safe, stamp
from .._lib.resources import check_local_workers
from .._lib.validation import UsageValueError
from ..plots.studies import figure_domains, figure_phase
from ..sweep.storage import write_json
from .clusters import llama3_study
from .domain_period import run_domain_period_study
from .domains import DomainStudy, domain_study_rows, run_domain_study
from .folder import StudyFolder
from .phase import PhaseStudy, phase_rows, run_phase_study

__all__ = ["domains_table", "domain_period_table", "phase_table", "llama3_table", "LLAMA3_REPS",
           "DOMAIN_PERIOD_QUICK"]

#: Replications per row of :func:`llama3_table` (``quick``: the second).
LLAMA3_REPS = (1000, 100)

#: The quick flavour of :func:`domain_period_table`: N = 200, the background and racks, 1,000 steps
#: (:class:`~spare_mc.analyses.domains.DomainStudy` fields), three period factors and few jobs (the study's keywords).
DOMAIN_PERIOD_QUICK = {"study": {"n_values": (200,), "levels": ("none", "rack"), "n_steps": 1000, "mixed_n_values": ()},
                       "run": {"period_factors": (0.5, 1.0, 2.0), "screen_reps": 4, "confirm_reps": 8}}



def _folder(table: str, out_dir, settings: dict, force: bool, result: tuple, figure: str | None = None,
            owns=()):
    """The table's :class:`~spare_mc.analyses.folder.StudyFolder` (study ``table-<table>``, checked now, before any
    work; ``result``: ``(file name, keys, what)``; ``figure``: a path inside the folder), or ``None`` without
    ``out_dir`` (nothing is written)."""
    if out_dir is None:
        return None
    fig = None if figure is None else os.path.join(os.fspath(out_dir), figure)
    return StudyFolder(out_dir, f"table-{table}", settings, force=force, result=result, figure=fig,
                       owns=(result[0], *([figure] if figure else []), *owns))


def _write(folder, res: dict, draw, out: dict) -> None:
    """With a folder (held): the study's whole result ``res``, stamped, as the folder's result JSON and ``draw``'s
    figure of it at the folder's figure path; their paths go into ``out`` (``result``, ``figure``)."""
    if folder is None:
        return
    path = folder.file(folder.result[0])
    write_json(json_safe(stamp(res)), path)
    out["figure"] = draw(res, folder.record(folder.figure), force=folder.force)
    out["result"] = path


def _held(folder):
    """``with _held(folder):`` holds the folder for the whole run (nothing without one)."""
    return contextlib.nullcontext() if folder is None else folder


def _sizes(counts: dict, seed) -> dict:
    """The replication counts given (``counts``: the argument's name -> (the study's keyword, its value)), each
    >= 2, and ``seed`` (>= 0) as ``seed``; counts and a seed not given (``None``) are left out."""
    out = {}
    for name, (key, v) in counts.items():
        if v is not None:
            if v < 2:
                raise UsageValueError(f"`{name}` must be >= 2, got {v}")
            out[key] = v
    if seed is not None:
        if seed < 0:
            raise UsageValueError(f"`seed` must be >= 0, got {seed}")
        out["seed"] = seed
    return out


def _json_table(table: str, out_dir, settings: dict, force: bool, keys: tuple, what: str, run, progress) -> dict:
    """A table whose result is one JSON: ``run(progress)``, stamped; with ``out_dir`` (a study folder at
    ``settings``, checked before any work), written to ``<table>.json`` there (``-`` as ``_``)."""
    name = f"{table.replace('-', '_')}.json"
    folder = _folder(table, out_dir, settings, force, (name, keys, what))
    with _held(folder):
        out = stamp({"table": table, **run(progress)})
        if folder is not None:
            target = folder.file(name)
            write_json(json_safe(out), target)
            out["result"] = target
    return out


def domains_table(*, quick: bool = False, n_values=None, reps=None, seed=None, out_dir=None, force: bool = False,
                  workers=None, progress=None) -> dict:
    """``spare-mc reproduce --table domains``: the failure-domain study
    (:func:`spare_mc.analyses.domains.run_domain_study`) with its rows.

    Parameters
    ----------
    quick : bool
        The smoke-sized study (:meth:`~spare_mc.analyses.domains.DomainStudy.quick`).
    n_values : sequence of int, optional
        Group counts, each one the study sets SPARe's r for (``DomainStudy().spare_r``; default: the study's).
    reps : int, optional
        Time-to-train replications per row (>= 2; default 100, quick 8).
    seed : int, optional
        Root seed (>= 0; default the study's, 0).
    out_dir : path, optional
        Folder of ``domains.json`` (the study's whole result) and ``figures/domains.png``; default: nothing written.
    force : bool
        Replace a ``domains.json`` there that spare-mc did not write.
    workers : int, optional
        Local processes, each computing one ``N`` and level's rows at a time (>= 1; default 1: in this process;
        ``spare-mc reproduce --table domains`` passes one per CPU). The rows do not depend on it. A script that
        passes more than 1 needs an ``if __name__ == "__main__":`` guard (the processes are spawned).
    progress : callable, optional
        Called with a line of text at each stage.

    Returns
    -------
    dict
        ``rows`` (:func:`~spare_mc.analyses.domains.domain_study_rows`), ``settings``, ``elapsed_s``, ``table``
        (``"domains"``) and, with ``out_dir``, ``figure`` and ``result`` (the paths written), led by the schema
        version and the software versions.
    """

    kw = {}
    if n_values is not None:
        kw["n_values"] = tuple(n_values)
        known = sorted(DomainStudy().spare_r)
        bad = [n for n in kw["n_values"] if n not in known]
        if bad:
            raise UsageValueError(f"`n_values` must be among {','.join(map(str, known))} with --table domains (the "
                                  f"study's SPARe r is set per N; other N: spare_mc.analyses.domains.DomainStudy), "
                                  f"got {bad[0]}")
    kw.update(_sizes({"reps": ("ttt_reps", reps)}, seed))
    workers = check_local_workers(workers, "workers", min_value=1, scheduler=False) or 1
    study = DomainStudy.quick(**kw) if quick else DomainStudy(**kw)
    folder = _folder("domains", out_dir, dataclasses.asdict(study), force,
                     ("domains.json", ("rows", "settings"), "domain study"), os.path.join("figures", "domains.png"))
    with _held(folder):
        res = run_domain_study(study, progress=progress, workers=workers)
        out = {"rows": domain_study_rows(res), "settings": res["settings"], "elapsed_s": res["elapsed_s"],
               "table": "domains"}
        _write(folder, res, figure_domains, out)
    return stamp(out)


def domain_period_table(*, quick: bool = False, n_values=None, reps=None, confirm_reps=None, seed=None, out_dir=None,
                        force: bool = False, progress=None) -> dict:
    """``spare-mc reproduce --table domain-period``: the checkpoint period re-optimised per failure-domain level
    (:func:`spare_mc.analyses.domain_period.run_domain_period_study`) at one N.

    Parameters
    ----------
    quick : bool
        The quick flavour, :data:`DOMAIN_PERIOD_QUICK` (N = 200, the background and racks, 1,000 steps, three
        period factors, few jobs).
    n_values : sequence of int, optional
        One group count among those the domain study sets SPARe's r for (``DomainStudy().spare_r``; default 600,
        quick 200).
    reps : int, optional
        Jobs per screened period (>= 2; default 20, quick 4).
    confirm_reps : int, optional
        Fresh jobs per compared period (>= 2; default 100, quick 8).
    seed : int, optional
        Root seed (>= 0; default the study's, 0).
    out_dir : path, optional
        Folder of ``domain_period.json``; default: nothing written.
    force : bool
        Replace a ``domain_period.json`` there that spare-mc did not write.
    progress : callable, optional
        Called with a line of text at each stage.

    Returns
    -------
    dict
        The study's result (``rows``, ``settings``, ``elapsed_s``, ...) with ``table`` (``"domain-period"``) and,
        with ``out_dir``, ``result`` (the path written), led by the schema version and the software versions.
    """

    kw = {}
    if n_values is not None:
        n_values = tuple(n_values)
        known = sorted(DomainStudy().spare_r)
        if len(n_values) != 1 or n_values[0] not in known:
            raise UsageValueError(f"`n_values` must be one N among {','.join(map(str, known))} with --table "
                                  f"domain-period (the study's SPARe r is set per N), got "
                                  f"{','.join(map(str, n_values))!r}")
        kw["n_values"] = n_values
    run_kw = _sizes({"reps": ("screen_reps", reps), "confirm_reps": ("confirm_reps", confirm_reps)}, seed)
    if "seed" in run_kw:
        kw["seed"] = run_kw.pop("seed")
    if quick:
        study = DomainStudy(**{**DOMAIN_PERIOD_QUICK["study"], **kw})
        run_kw = {**DOMAIN_PERIOD_QUICK["run"], **run_kw}
    else:
        study = DomainStudy(**{"n_values": (600,), **kw})
    return _json_table("domain-period", out_dir, {"study": dataclasses.asdict(study), "run": run_kw}, force,
                       ("rows", "settings"), "period study",
                       lambda log: run_domain_period_study(study, progress=log, **run_kw), progress)


def phase_table(*, quick: bool = False, studies=None, reps=None, confirm_reps=None, seed=None, out_dir=None,
                force: bool = False, workers=None, progress=None) -> dict:
    """``spare-mc reproduce --table phase``: the phase map of which strategy wins by cluster size, save and
    restart time (:func:`spare_mc.analyses.phase.run_phase_study`).

    Parameters
    ----------
    quick : bool
        The quick flavour (the corners of the map: :meth:`~spare_mc.analyses.phase.PhaseStudy.quick`, or the spec's
        quick settings).
    studies : path, optional
        A phase-map spec (TOML with a ``[phase]`` table) or a folder holding ``phase_map.toml``; default: the
        shipped settings (:class:`~spare_mc.analyses.phase.PhaseStudy`).
    reps : int, optional
        Replications per searched point (>= 2; default 20, quick 8).
    confirm_reps : int, optional
        Replications of each strategy's selected point on fresh traces (>= 2; default 100, quick 30).
    seed : int, optional
        Root seed (>= 0; default the study's, 0).
    out_dir : path, optional
        Folder of ``phase.json``, ``figures/phase.png`` and every finished cell (the run resumes from them);
        default: nothing written. A folder holding a full reproduction (``main_table.json``) is refused unless
        ``force``: its phase map belongs to it.
    force : bool
        Replace files there that spare-mc did not write, or the phase map of a full reproduction.
    workers : int, optional
        Local processes of the cells (>= 1; default 1).
    progress : callable, optional
        Called with a line of text at each stage.

    Returns
    -------
    dict
        ``rows`` (:func:`~spare_mc.analyses.phase.phase_rows`), ``settings``, ``clusters``, ``elapsed_s``, ``table``
        (``"phase"``) and, with ``out_dir``, ``figure`` and ``result`` (the paths written), led by the schema
        version and the software versions.
    """

    if out_dir is not None and not force and os.path.exists(os.path.join(out_dir, "main_table.json")):
        raise UsageValueError(f"`out_dir` {out_dir} holds a full reproduce, whose phase map is part of it at the "
                              f"folder's settings: rerun the full `spare-mc reproduce` there, choose another folder, "
                              f"or pass force=True to move the whole reproduction aside into its replaced/ folder "
                              f"(a folder holds one study)")
    kw = _sizes({"reps": ("reps", reps), "confirm_reps": ("confirm_reps", confirm_reps)}, seed)
    check_local_workers(workers, "workers", min_value=1, scheduler=False)
    if studies is not None:  # a spec file, or a folder with phase_map.toml (as main_table.toml for the table)
        spec = studies if os.path.isfile(studies) else os.path.join(studies, "phase_map.toml")
        if not os.path.isfile(spec):
            raise UsageValueError(f"`studies` must be a phase-map spec (TOML with a [phase] table) or a folder "
                                  f"holding phase_map.toml with --table phase, got {studies}")
        study = replace(PhaseStudy.from_file(spec, quick=quick), **kw)
    else:
        study = PhaseStudy.quick(**kw) if quick else PhaseStudy(**kw)
    folder = _folder("phase", out_dir, dataclasses.asdict(study), force,
                     ("phase.json", ("rows", "settings"), "phase map"), os.path.join("figures", "phase.png"),
                     owns=("phase_cells",))
    with _held(folder):
        if folder is not None:
            folder.file("phase_cells")
        res = run_phase_study(study, progress=progress, out_dir=out_dir, workers=workers or 1)
        out = {"rows": phase_rows(res), "settings": res["settings"], "clusters": res["clusters"],
               "elapsed_s": res["elapsed_s"], "table": "phase"}
        _write(folder, res, figure_phase, out)
    return stamp(out)


def llama3_table(*, quick: bool = False, reps=None, seed=None, out_dir=None, force: bool = False,
                 progress=None) -> dict:
    """``spare-mc reproduce --table llama3``: :func:`spare_mc.analyses.clusters.llama3_study` (the Llama 3 405B
    preset's effective training time, the save x restart grid, the k = 0.78 row, the job-length check and the
    classical check).

    Parameters
    ----------
    quick : bool
        Fewer replications per row (:data:`LLAMA3_REPS`).
    reps : int, optional
        Replications per row (>= 2; default :data:`LLAMA3_REPS`: 1000, quick 100).
    seed : int, optional
        Root seed (>= 0; default 0), shared by every row (common random numbers).
    out_dir : path, optional
        Folder of ``llama3.json``; default: nothing written.
    force : bool
        Replace a ``llama3.json`` there that spare-mc did not write.
    progress : callable, optional
        Called with a line of text at each stage.

    Returns
    -------
    dict
        The study's result (``preset``, ``central``, ``modern``, ``grid``, ``shapes``, ``t0``, ``classical``,
        ``reported``, ``settings``, ``elapsed_s``, ...) with ``table`` (``"llama3"``) and, with ``out_dir``,
        ``result`` (the path written), led by the schema version and the software versions.
    """

    reps = LLAMA3_REPS[quick] if reps is None else reps
    seed = 0 if seed is None else seed
    if reps < 2:
        raise UsageValueError(f"`reps` must be >= 2 to estimate a standard error, got {reps}")
    if seed < 0:
        raise UsageValueError(f"`seed` must be >= 0, got {seed}")
    return _json_table("llama3", out_dir, {"reps": reps, "seed": seed}, force, ("central", "grid"), "Llama 3 study",
                       lambda log: llama3_study(reps=reps, rng=seed, progress=log), progress)
