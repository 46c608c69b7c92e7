"""The handlers of the commands that run one computation: ``mu``, ``overhead``, ``ttt``, ``sweep``, ``compare``,
``plot`` and ``log check|fit|replay|import``. Each reads its flags, checks what only the command line knows (the
library checks the rest, its errors said in the flags' names by :func:`spare_mc.cli.parser.flag_names`), calls
the library and returns the dict that ``--json`` prints and its formatter (:mod:`spare_mc.cli.format`) shows.
"""

from __future__ import annotations

import os
from dataclasses import fields

from .._lib.provenance import stamp
from .._lib.validation import UsageValueError
from ..analyses.reproduce import studies_dir
from ..logs.failure_log import log_format, read_failure_log, write_failure_log
from ..logs.fit import fit_failure_log
from ..logs.importer import import_failure_log
from ..logs.replay import replay_log
from ..mc.reorder import overhead_check
from ..mc.survivability import MASKED_CHUNK, masked_failures
from ..model.kinds import EXACT_LAYOUTS, make_layout
from ..model.paper import PAPER_R
from ..model.topology import Topology
from ..options import set_options
from ..plots.sweep_figures import save_figures
from ..sweep.compare import compare_dataset
from ..sweep.runner import open_sweep_dataset, run_sweep
from ..sweep.spec import SweepSpec
from ..sweep.storage import atomic_write, check_writable
from ..theory.exact import exact_cost
from ..ttt.config import TimelineConfig
from ..ttt.report import classical_check, step_ttt
from .format import flag_args, say
from .parser import config_overrides, flag_names

__all__ = ["MU_CHUNK", "CLI_EXACT_MAX_S", "check_reps_and_seed", "progress", "run_mu", "run_overhead", "run_ttt",
           "run_sweep_cmd", "run_compare", "run_plot", "run_log_check", "run_log_fit", "run_log_replay",
           "run_log_import"]

#: Replications per chunk of ``spare-mc mu`` (one chunk's per-replication arrays live at once).
MU_CHUNK = MASKED_CHUNK


def check_reps_and_seed(count, flag, seed) -> None:
    """The rules every command shares: at least 2 replications (for a standard error), a non-negative seed."""
    if count < 2:
        raise UsageValueError(f"`{flag}` must be >= 2 to estimate a standard error, got {count}")
    if seed < 0:
        raise UsageValueError(f"`--seed` must be >= 0, got {seed}")


def progress(args):
    """Where a long command reports its stages: lines ``... stage`` on stderr, none with ``--json``."""
    return (lambda msg: say(f"... {msg}")) if not args.json else None


#: The longest exact law (seconds on one core, :func:`spare_mc.theory.exact.exact_cost`) ``mu`` and ``overhead`` compute
#: by default: beyond it they refuse up front and point to ``--no-exact``, as they refuse work beyond the memory
#: budget (the recursion is one numba call that Ctrl-C and SIGTERM cannot interrupt).
CLI_EXACT_MAX_S = 600.0


def _exact_budget(args, wanted: bool) -> None:
    """Refuse, before any Monte Carlo, an exact law longer than :data:`CLI_EXACT_MAX_S`; say how long one over
    20 s takes."""

    if not wanted:
        return
    _, seconds, took = exact_cost(args.layout, args.n_groups, args.r)
    if seconds > CLI_EXACT_MAX_S:
        raise UsageValueError(f"the exact law of T at N={args.n_groups:,}, r={args.r} ({args.layout}) would take "
                              f"roughly {took} on one core, in one call that Ctrl-C cannot interrupt: pass "
                              f"--no-exact for the Monte Carlo alone (spare_mc.exact_wipeout computes it if you "
                              f"mean to wait)")
    if seconds > 20 and not args.json:
        say(f"... the exact law of T at N={args.n_groups:,} takes roughly {took}, after the Monte Carlo, in a call "
             f"Ctrl-C cannot interrupt (--no-exact skips it)")


def run_mu(args) -> dict:
    """The ``mu`` command as a dict (what ``--json`` prints): :func:`spare_mc.mc.survivability.masked_failures`
    in chunks of :data:`MU_CHUNK`, its progress on stderr when there is more than one chunk (not with ``--json``)."""

    check_reps_and_seed(args.reps, "--reps", args.seed)
    make_layout(args.layout, args.n_groups, args.r, rng=0)  # validates N and r before the exact law's budget
    _exact_budget(args, args.layout in EXACT_LAYOUTS and not args.with_replacement and not args.no_exact)
    res = masked_failures(args.layout, args.n_groups, args.r, args.reps, seed=args.seed,
                          with_replacement=args.with_replacement, exact=not args.no_exact, chunk=MU_CHUNK,
                          progress=progress(args))
    return stamp(res.to_dict())


def run_overhead(args) -> dict:
    """The ``overhead`` command as a dict (what ``--json`` prints): :func:`spare_mc.mc.reorder.overhead_check`."""

    check_reps_and_seed(args.reps, "--reps", args.seed)
    _exact_budget(args, args.layout in EXACT_LAYOUTS and not args.no_exact)
    return stamp(overhead_check(args.layout, args.n_groups, args.r, args.reps, seed=args.seed,
                                exact=not args.no_exact).to_dict())


def run_ttt(args) -> dict:
    """The ``ttt`` command as a dict: :func:`spare_mc.ttt.report.step_ttt`, or
    :func:`spare_mc.ttt.report.classical_check` with ``--model classical``."""

    check_reps_and_seed(args.reps, "--reps", args.seed)
    if args.ckpt_period == "optimal" and args.ckpt_period_factor not in (None, 1.0):
        raise UsageValueError("`--ckpt-period optimal` means the theory optimum T_c* itself: drop "
                              "`--ckpt-period-factor`, or drop `--ckpt-period optimal` to scale it")
    if args.model == "classical":
        return _run_ttt_classical(args)
    for flag, value in (("--strategy", args.strategy), ("--n-groups", args.n_groups)):
        if value is None:
            raise UsageValueError(f"`{flag}` is required with --model step")
    r = args.r if args.r is not None else PAPER_R[args.strategy]
    if args.ckpt_period == "optimal" and (args.ckpt_policy not in (None, "periodic") or args.ckpt_every_steps):
        how = (f"--ckpt-policy {args.ckpt_policy}" if args.ckpt_policy not in (None, "periodic")
               else f"--ckpt-every-steps {args.ckpt_every_steps}")
        raise UsageValueError(f"`--ckpt-period optimal` (the periodic optimum T_c*) contradicts `{how}`, which "
                              f"sets the checkpoints itself: drop one of them")
    cfg = TimelineConfig(args.strategy, args.n_groups, r=r, ckpt_period_s=args.ckpt_period_s,
                         **config_overrides(args, args.n_groups))  # (its errors name flags: spare_mc.cli.main)
    return stamp(step_ttt(cfg, args.reps, seed=args.seed).to_dict())


def _run_ttt_classical(args) -> dict:
    """``ttt --model classical``: the flags' checks, then :func:`spare_mc.ttt.report.classical_check`."""

    if args.failures != "system":
        raise UsageValueError("`--failures` must be 'system' with --model classical (exponential failures of the "
                              "whole system at rate 1/M)")
    if args.ckpt_period == "optimal":
        raise UsageValueError("`--ckpt-period optimal` is the step model's T_c*; with --model classical leave the "
                              "period out for the exact optimum of Daly's expected time, or give --ckpt-period-s")
    kw = config_overrides(args)
    if args.no_live_scaling:
        raise UsageValueError("`--no-live-scaling` has no effect with --model classical (every failure wipes out "
                              "at once): drop it")
    for name, value in (("strategy", args.strategy), ("r", args.r)):
        if value is not None:
            kw[name] = value
    if args.n_groups is not None:  # it would change only which random stream a replication draws
        raise UsageValueError("`--n-groups` has no effect with --model classical (every failure stops the whole "
                              "system): drop it")
    return stamp(classical_check(args.reps, seed=args.seed, ckpt_period_s=args.ckpt_period_s, **kw).to_dict())


def run_sweep_cmd(args) -> dict:
    """The ``sweep`` command."""

    path = args.spec
    if not os.path.exists(path) and os.sep not in path and not path.endswith(".toml"):

        shipped = studies_dir() / f"{path}.toml"
        if not shipped.exists():
            names = sorted(p.stem for p in studies_dir().glob("*.toml") if p.stem != "main_table")
            raise UsageValueError(f"sweep spec file not found: {path} (shipped studies: {', '.join(names)})")
        path = str(shipped)
    spec = SweepSpec.from_file(path)
    if args.quick:
        spec = spec.quick()
    with set_options(**({} if args.max_tasks is None else {"max_tasks": args.max_tasks})):
        ds = run_sweep(spec, args.out, scheduler=args.scheduler, workers=args.workers, force=args.force)
    out = args.out or os.path.join("data", f"{spec.name}.nc")
    return stamp({"dataset": out, "name": spec.name, "quantity": spec.quantity, "dims": dict(ds.sizes),
                   "spec_digest": spec.digest()})


def run_compare(args) -> dict:
    """The ``compare`` command."""

    if not 0 < args.alpha < 1:
        raise UsageValueError(f"`--alpha` must be in (0, 1), got {args.alpha}")
    res = compare_dataset(open_sweep_dataset(args.dataset), alpha=args.alpha)
    return stamp({"dataset": args.dataset, **res.to_dict()})


def _read_log(args):
    """The log of ``log check|fit|replay`` on the topology its flags give."""
    topo = Topology(**{f.name: getattr(args, f.name) for f in fields(Topology)})
    return read_failure_log(args.log, topo, duration_s=args.duration_s)


def run_log_check(args) -> dict:
    """``log check``: :meth:`spare_mc.logs.failure_log.FailureLog.summary`."""
    return stamp(_read_log(args).summary())


def run_log_fit(args) -> dict:
    """``log fit``: :func:`spare_mc.logs.fit.fit_failure_log`, with the ``spare-mc ttt`` flags of the
    fitted models (``spare_mc_flags``)."""

    log = _read_log(args)
    fit = fit_failure_log(log, levels=args.levels, shared_shape=args.shared_shape,
                          min_failures=args.min_failures, ci=args.ci)
    d = fit.to_dict()
    models = {}
    if "gpu" in fit.fits:
        models["per-gpu"] = fit.cli_flags()
        if fit.shared_shape:
            for name in fit.fits:
                if name != "gpu":
                    models[name] = fit.cli_flags(name)
            if len(fit.fits) > 2:  # several domain levels: the log's own mixture of them, all at once
                models["mixed"] = fit.cli_flags("all")
    # (the domain models' flags carry the log's domain sizes where they differ from spare-mc ttt's defaults, and
    # its placement: each set runs through `spare-mc ttt --strategy S --n-groups N` as printed)
    d["spare_mc_flags"] = models
    d["ttt_args"] = {name: flag_args(flags) for name, flags in models.items()}
    return stamp(d)


def run_log_replay(args) -> dict:
    """``log replay``: :func:`spare_mc.logs.replay.replay_log`."""
    log = _read_log(args)
    if args.overhead and log.repair_s is not None and not args.ignore_repairs:
        raise UsageValueError("`--overhead` runs ReCtlr until each wipe-out, which does not take repaired groups "
                              "back; this log has repair times: pass --ignore-repairs to run it on epochs without "
                              "repairs")
    return stamp(replay_log(log, args.layout, r=args.r, overhead=args.overhead,
                            repairs="ignore" if args.ignore_repairs else "auto").summary())


def run_log_import(args) -> dict:
    """``log import``: :func:`spare_mc.logs.importer.import_failure_log`, written to OUT atomically (an existing OUT
    only with ``--force``; never over the raw file)."""
    out = args.out
    if os.path.exists(out) and os.path.exists(args.raw) and os.path.samefile(out, args.raw):
        raise UsageValueError(f"OUT {out} is the raw log itself: write the imported log to another file")
    check_writable(out, "imported log")
    if os.path.exists(out) and not args.force:
        raise UsageValueError(f"OUT {out} exists; pass --force to replace it, or choose another file")
    topo = Topology(**{f.name: getattr(args, f.name) for f in fields(Topology)})
    kw = {k: getattr(args, k) for k in ("unit_column", "time_column", "time_format", "start_column", "end_column",
                                        "unit_names", "unit_map_file", "level", "level_column", "repair_column",
                                        "repair_unit", "start", "end", "duration_s", "drop_bad_rows")}
    imported = import_failure_log(args.raw, topo, **kw)
    fmt = log_format(out)
    atomic_write(out, lambda tmp: write_failure_log(tmp, imported.log, file_format=fmt))
    return stamp({"output": out, "format": fmt, **imported.report})


def run_plot(args) -> dict:
    """The ``plot`` command."""

    names = [os.path.splitext(os.path.basename(path))[0] for path in args.dataset]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        clash = ", ".join(p for p, n in zip(args.dataset, names) if n == dup[0])
        raise UsageValueError(f"two datasets are named {dup[0]!r} ({clash}): their figures would overwrite each "
                              f"other; plot them one at a time into different --out folders")
    datasets = {n: open_sweep_dataset(path) for n, path in zip(names, args.dataset)}
    with flag_names(outdir="--out"):
        return stamp({"figures": save_figures(datasets, args.out, force=args.force)})

