"""``spare-mc reproduce``: every shipped study, the paper's main table, the phase map and the figures, as a library
call.

The study specs ship with the package (``spare_mc/studies/*.toml``, package data), so this works after a regular
``pip install .`` from any directory; ``studies=`` runs the specs of another folder instead (every ``*.toml`` sweep
spec in it, and its ``main_table.toml`` and ``phase_map.toml`` if present).
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

import tomllib

from .._lib.provenance import SCHEMA_VERSION, software_versions
from .._lib.resources import usable_cpus
from .._lib.validation import UsageError, UsageValueError, as_int, in_file, reject_unknown
from ..model.strategies import STRATEGIES, STRATEGY_TABLE
from ..plots.studies import figure_phase
from ..plots.sweep_figures import save_figures
from ..sweep.cluster import shared_local_cluster
from ..sweep.runner import run_study_sweep
from ..sweep.spec import SweepSpec
from ..sweep.storage import write_json
from ..sweep.warm import warm_up
from ..ttt.optimize import main_table, n_values_iv
from ..ttt.config import TimelineConfig, applicable
from .calibrate import load_preset
from .folder import StudyFolder, check_target
from .phase import PhaseStudy, run_phase_study

__all__ = ["reproduce", "ReproduceResult", "studies_dir", "main_table_settings", "MAIN_TABLE_DEFAULTS"]

#: Settings of the main table when no ``main_table.toml`` says otherwise.
MAIN_TABLE_DEFAULTS = {"n_values": [200, 600, 1000], "reps": 20, "confirm_reps": 50, "quick_reps": 6,
                       "quick_confirm_reps": 12, "seed": 0}


def studies_dir() -> Path:
    """The folder of the shipped study specs (package data)."""
    return Path(str(resources.files("spare_mc").joinpath("studies")))


def _studies(studies) -> Path:
    d = studies_dir() if studies is None else Path(studies)
    if not d.is_dir():
        raise UsageValueError(f"`studies` must be a folder of TOML sweep specs, got {d}")
    return d


def main_table_settings(studies=None, *, required: bool = False) -> dict:
    """:data:`MAIN_TABLE_DEFAULTS` updated by ``main_table.toml`` of the studies folder (if present; with
    ``required``, a folder without one is refused rather than read as the defaults). Its values are checked here,
    so that an error names the file: distinct ``n_values`` >= 2, replication counts >= 2, a seed >= 0."""
    settings = dict(MAIN_TABLE_DEFAULTS)
    path = _studies(studies) / "main_table.toml"
    if not path.is_file():
        if required:
            raise UsageValueError(f"`studies` {studies} holds no main_table.toml, the only file the main table reads "
                                  f"from it (its [main_table] settings): the table would run at its defaults and "
                                  f"ignore the folder; give a folder with main_table.toml, or leave `studies` out")
        return settings
    try:
        d = tomllib.loads(path.read_text(encoding="utf-8")).get("main_table", {})
    except tomllib.TOMLDecodeError as exc:
        raise UsageValueError(f"{path} is not valid TOML: {exc}") from None
    reject_unknown(d, settings, f"[main_table] of {path}")
    try:  # the file's keys, said as the file's (never as the command line's --reps ...)
        for key, v in d.items():
            if key == "seed":
                continue  # any seed the main table takes, checked there
            if key == "n_values":  # a list as the file gives it (one N is not a list), each N once
                if not isinstance(v, list) or not v:
                    raise UsageValueError(f"`n_values` must be a non-empty list of group counts, got {v!r}")
                n_values_iv(v, "n_values", min_value=2)
            elif isinstance(v, bool) or not isinstance(v, int) or v < 2:
                raise UsageValueError(f"`{key}` must be an integer >= 2, got {v!r}")
    except UsageError as exc:
        raise in_file(type(exc)(f"{path}: [main_table] {exc}")) from None
    settings.update(d)
    return settings


@dataclass(frozen=True, eq=False)
class ReproduceResult:
    """What :func:`reproduce` wrote: dataset paths, figure paths, the main table and where it is."""

    quick: bool
    main_table: object
    main_table_path: str | None = None
    datasets: dict = field(default_factory=dict)
    figures: list = field(default_factory=list)
    elapsed_s: float = 0.0
    phase_map_path: str | None = None

    def to_dict(self) -> dict:
        d = {"schema_version": SCHEMA_VERSION, "software": software_versions(), "quick": self.quick,
             **self.main_table.to_dict(), "elapsed_s": self.elapsed_s}
        if self.datasets or self.figures:
            d.update(datasets=self.datasets, figures=self.figures, main_table=self.main_table_path)
        if self.phase_map_path is not None:
            d["phase_map"] = self.phase_map_path
        return d


def reproduce(*, quick: bool = False, table: str | None = None, studies=None, out_dir=None, n_values=None,
              reps=None, confirm_reps=None, rng=None, base=None, scheduler=None, workers=None, force=False,
              progress=None, preset=None) -> ReproduceResult:
    """Run every study of ``studies`` (default: the shipped ones), the main table, the phase map
    (:mod:`spare_mc.analyses.phase`, its quick flavour with ``quick``) and the figures.

    Parameters
    ----------
    quick : bool
        The quick flavour (each spec's ``quick_reps``; the main table's quick sizes).
    table : {"main"} or None
        Only the main table (nothing written).
    studies : path, optional
        A folder of sweep specs (default: :func:`studies_dir`).
    out_dir : path, optional
        Where datasets, ``main_table.json``, ``phase.json`` (with its finished cells in ``phase_cells/``) and
        ``figures/`` go (default ``data/``, ``data/quick/`` for quick).
    n_values, reps, confirm_reps : optional
        Override the main table's settings.
    rng : int, optional
        Root seed. With ``table="main"``: the main table's (any seed :func:`spare_mc.ttt.optimize.main_table` takes).
        Otherwise a non-negative integer that replaces the seed of every study -- each sweep spec's, the main
        table's and the phase map's -- so that one output folder holds one replicate of the whole reproduction
        (default: each spec's own seed).
    base : dict, optional
        :class:`spare_mc.TimelineConfig` overrides for the main table; only with ``table="main"`` (the sweeps and
        the phase map state their settings in their specs, so one folder would otherwise mix two settings).
    scheduler, workers : optional
        Where the sweeps run (see :func:`spare_mc.sweep.runner.run_sweep`). The phase map always runs on this machine, in
        ``workers`` local processes (default: one per core; ``0``: in this process, as the sweeps); with a
        ``scheduler``, ``workers`` sets the phase map's processes only.
    force : bool
        The output folder is a :class:`spare_mc.analyses.folder.StudyFolder`: a reproduction of another setting
        there (other specs, sizes, seed or version) is refused before any work unless ``force``, which moves its
        files aside; ``force`` also replaces files spare-mc did not write.
    progress : callable, optional
        Called with a line of text at each stage.
    preset : str or path, optional
        Run the main table under a preset's option values (:func:`spare_mc.analyses.calibrate.load_preset`; e.g. the fitted
        ``paper-n600``); ``base`` may not set a field the preset sets to another value. Only with
        ``table="main"``: the studies' specs state their own settings.
    """

    settings = main_table_settings(studies, required=table == "main" and studies is not None)
    if n_values is not None:
        settings["n_values"] = list(n_values)
    n_values = n_values_iv(settings["n_values"], "n_values", min_value=2)  # each N once, before any sweep
    if not n_values:
        raise UsageValueError("`n_values` must name at least one N")
    reps = as_int(settings["quick_reps" if quick else "reps"] if reps is None else reps, "reps", min_value=2)
    confirm_reps = as_int(settings["quick_confirm_reps" if quick else "confirm_reps"] if confirm_reps is None
                          else confirm_reps, "confirm_reps", min_value=2)
    seed_given = rng is not None
    rng = settings["seed"] if rng is None else rng
    base = dict(base or {})
    if table is None and base:
        raise UsageValueError(f"`base` applies to the main table only (table='main'), got {sorted(base)}: the sweeps "
                              f"and the phase map state their settings in their specs, so one output folder would "
                              f"mix two settings")
    if table is None and seed_given:
        rng = as_int(rng, "rng", min_value=0)  # the seed of every study, so an int as the specs' seeds
    preset_info = None
    if preset is not None:

        if table != "main":
            raise UsageValueError("`preset` applies to the main table only (table='main'); the studies' specs "
                                  "state their own settings")
        p = load_preset(preset)
        clash = {k: (v, p["overrides"][k]) for k, v in base.items() if k in p["overrides"] and
                 p["overrides"][k] != v}
        if clash:
            raise UsageValueError(f"the preset {p['name']!r} sets {sorted(clash)} to other values than given "
                                  f"({clash}); drop the flag or the preset")
        base = {**p["overrides"], **base}
        preset_info = {"name": p["name"], "fitted": bool(p.get("fitted")), "overrides": p["overrides"],
                       "description": p.get("description", ""), "accepted": p["accepted"],
                       "rejected": p["rejected"]}
    for n in n_values:  # validate every setting before any work starts
        for strategy in STRATEGIES:
            TimelineConfig(strategy, n, r=2 if STRATEGY_TABLE[strategy].takes_r else 1, **applicable(base, strategy))
    log = progress or (lambda msg: None)
    t0 = time.perf_counter()
    if table == "main":
        mt = main_table(n_values, reps=reps, confirm_reps=confirm_reps, rng=rng, base=base, progress=log)
        if preset_info is not None:
            mt.settings["preset"] = preset_info
        return ReproduceResult(quick, mt, elapsed_s=time.perf_counter() - t0)
    if table is not None:
        raise UsageValueError(f"`table` must be 'main' or None, got {table!r}")

    folder = _studies(studies)
    specs = [SweepSpec.from_file(p) for p in sorted(folder.glob("*.toml"))
             if p.name not in ("main_table.toml", "phase_map.toml")]
    if not specs:
        raise UsageValueError(f"no sweep specs (*.toml) in {folder}")
    specs = [sp.quick() if quick else sp for sp in specs]
    if seed_given:
        specs = [replace(sp, seed=rng) for sp in specs]
    names = [sp.name for sp in specs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageValueError(f"two studies in {folder} are named {dup[0]!r}: their datasets would overwrite each "
                              f"other; give each [sweep] a name of its own")
    for sp in specs:
        sp.check_resources()
        sp.check_points()

    phase_spec = folder / "phase_map.toml"  # the phase map's settings, as main_table.toml the main table's
    if phase_spec.exists():
        phase = PhaseStudy.from_file(phase_spec, quick=quick)
    else:
        phase = PhaseStudy.quick() if quick else PhaseStudy()
    if seed_given:
        phase = replace(phase, seed=rng)
    if not quick:
        log("full flavour: expected run time about 2 minutes on 2 cores plus about 8 minutes for the phase map "
            "(quick: about 1.5 minutes)")
    root = os.fspath(out_dir) if out_dir is not None else os.path.join("data", "quick") if quick else "data"
    inputs = {"quick": quick, "specs": {sp.name: sp.digest() for sp in specs}, "n_values": list(n_values),
              "reps": reps, "confirm_reps": confirm_reps, "seed": rng, "phase": dataclasses.asdict(phase)}
    folder = StudyFolder(root, "reproduce", inputs, force=force,
                         result=("main_table.json", ("rows", "paper_N600"), "main table"),
                         owns=("main_table.json", "phase.json", "phase_cells"))
    check_target(os.path.join(root, "phase.json"), "phase map", force=force, keys=("rows", "settings"))
    for name in [sp.name for sp in specs] + ["ttt", "phase"]:  # every figure it may write (save_figures names them)
        check_target(os.path.join(root, "figures", f"{name}.png"), "figure", force=force, figure=True)
    with folder:
        if scheduler is None:  # the kernels of every sweep (the main table's and the phase map's too) at once
            warm_up(specs, processes=workers or None)
        datasets, paths = {}, {}
        # one local cluster for all the sweeps (its start and its workers' imports paid once, not once per sweep);
        # closed before the main table and the phase map, which do not use it
        with shared_local_cluster(scheduler, workers):
            for sp in specs:
                log(f"sweep {sp.name} ({sp.quantity}, {sp.reps} replications per point)")
                path = folder.file(f"{sp.name}.nc", dataset=True)
                datasets[sp.name] = run_study_sweep(sp, path, scheduler=scheduler,
                                                    workers=None if scheduler is not None else workers, force=force)
                paths[sp.name] = path
        log("main table")
        mt = main_table(n_values, reps=reps, confirm_reps=confirm_reps, rng=rng, base=base)
        mt_path = folder.file("main_table.json")
        write_json({**mt.to_dict(), "software": software_versions()}, mt_path)
        phase_workers = usable_cpus() if workers is None else max(workers, 1)  # 0: in this process
        log(f"phase map ({len(phase.n_gpus) * len(phase.save_s) * len(phase.restart_s)} cells, "
            + ("in this process" if phase_workers == 1 else f"{phase_workers} local processes")
            + (": it does not run on the dask scheduler)" if scheduler is not None else ")"))
        folder.file("phase_cells")
        pm = run_phase_study(phase, out_dir=root, workers=phase_workers)
        phase_path = folder.file("phase.json")
        write_json({"schema_version": SCHEMA_VERSION, "software": software_versions(), **pm}, phase_path)
        log("figures")
        figures = save_figures(datasets, folder.file("figures"), force=force)
        figures.append(figure_phase(pm, os.path.join(root, "figures", "phase.png"), force=force))
    return ReproduceResult(quick, mt, mt_path, paths, figures, time.perf_counter() - t0, phase_path)
