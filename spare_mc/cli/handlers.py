"""The handlers of the commands that run one computation: ``mu``, ``overhead``, ``ttt``, ``sweep``, ``compare``,
``plot`` and ``log check|fit|replay|import``. Each reads its flags, checks what only the command line knows (the
library checks the rest, its errors said in the flags' names by :func:`spare_mc.cli.parser.flag_names`), calls
the library and returns the dict that ``--json`` prints and its formatter (:mod:`spare_mc.cli.format`) shows.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import fields

from .._lib.provenance import stamp
from .._lib.validation import UsageValueError, as_int, parse_list
from ..analyses.recommend import recommend
from ..analyses.reproduce import studies_dir
from ..logs.failure_log import log_format, read_failure_log, write_failure_log
from ..logs.fit import fit_failure_log
from ..logs.importer import import_failure_log
from ..logs.models import fit_model, levels_model
from ..logs.predictive import predictive_check
from ..logs.replay import replay_log
from ..mc.reorder import overhead_check
from ..mc.survivability import MASKED_CHUNK, masked_failures
from ..model.failures import DOMAIN_SIZES, SystemRenewal
from ..model.kinds import EXACT_LAYOUTS, make_layout
from ..model.paper import PAPER_R
from ..model.topology import Topology
from ..model.unit_renewal import UnitRenewal
from ..options import set_options
from ..plots.sweep_figures import save_figures
from ..sweep.compare import compare_dataset
from ..sweep.runner import open_sweep_dataset, run_sweep
from ..sweep.spec import SweepSpec
from ..sweep.storage import atomic_write, check_writable
from ..theory.exact import exact_cost
from ..ttt.config import TimelineConfig
from ..ttt.report import AVAILABILITY_DEFINITION, classical_check, step_ttt
from ..ttt.stream import simulate_stream_ttt
from .format import flag_args, say
from .parser import config_overrides, flag_names

__all__ = [
    "CLI_EXACT_MAX_S",
    "MU_CHUNK",
    "check_reps_and_seed",
    "progress",
    "run_compare",
    "run_log_check",
    "run_log_fit",
    "run_log_import",
    "run_log_replay",
    "run_mu",
    "run_overhead",
    "run_plot",
    "run_sweep_cmd",
    "run_ttt",
]

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
    :func:`spare_mc.ttt.report.classical_check` with ``--model classical``; a model run with
    ``--accept-failed-check`` is labelled (``model_check``), as ``recommend``'s output is."""

    d = _run_ttt(args)
    if args.accept_failed_check:
        d["model_check"] = ("FAILED: this failure model failed its predictive check (it does not reproduce the log "
                            "it was fitted to); run anyway because --accept-failed-check was given")
    return d


def _run_ttt(args) -> dict:
    check_reps_and_seed(args.reps, "--reps", args.seed)
    if args.ckpt_period == "optimal" and args.ckpt_period_factor not in (None, 1.0):
        raise UsageValueError("`--ckpt-period optimal` means the theory optimum T_c* itself: drop "
                              "`--ckpt-period-factor`, or drop `--ckpt-period optimal` to scale it")
    if args.model_check == "failed" and not args.accept_failed_check:
        raise UsageValueError("`--model-check failed`: this failure model failed its predictive check (it does not "
                              "reproduce the log it was fitted to; see `spare-mc log fit`); add "
                              "--accept-failed-check to run it anyway")
    if args.accept_failed_check and args.model_check != "failed":
        raise UsageValueError("`--accept-failed-check` has no effect without --model-check failed")
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
    unit_flags = [f for f, v in _unit_flag_values(args).items() if v is not None]
    if args.failures == "unit":
        return _run_ttt_unit(args, r)
    if unit_flags:
        raise UsageValueError(f"{', '.join(f'`{f}`' for f in unit_flags)} has no effect without --failures unit")
    cfg = TimelineConfig(args.strategy, args.n_groups, r=r, ckpt_period_s=args.ckpt_period_s,
                         **config_overrides(args, args.n_groups))  # (its errors name flags: spare_mc.cli.main)
    return stamp(step_ttt(cfg, args.reps, seed=args.seed).to_dict())


def _unit_flag_values(args) -> dict:
    """The flags of ``ttt --failures unit`` and their values (None: not given)."""
    names = ["unit_level", "unit_mean_s", "ages"]
    return {"--" + n.replace("_", "-"): getattr(args, n, None) for n in names}


def _run_ttt_unit(args, r) -> dict:
    """``ttt --failures unit``: a cluster in service (:class:`spare_mc.model.unit_renewal.UnitRenewal`) run as an
    exogenous failure stream (:func:`spare_mc.ttt.stream.simulate_stream_ttt`)."""

    for flag, value in (("--unit-level", args.unit_level), ("--unit-mean-s", args.unit_mean_s),
                        ("--n-gpus", args.n_gpus)):
        if value is None:
            raise UsageValueError(f"`{flag}` is required with --failures unit")
    useless = [flag for flag, value in (("--mtbf-s", args.mtbf_s), ("--calibration", args.calibration),
                                        ("--age-policy", args.age_policy), ("--domain-mtbf-s", args.domain_mtbf_s),
                                        ("--domain-levels", args.domain_levels))
               if value is not None]
    if args.no_live_scaling:
        useless.append("--no-live-scaling")
    if useless:
        raise UsageValueError(f"{', '.join(f'`{f}`' for f in useless)} has no effect with --failures unit (the "
                              f"cluster's MTBF is --unit-mean-s / units; units fail whether the job runs or not)")
    topo_kw = {f.name: getattr(args, f.name) for f in fields(Topology)
               if f.name not in ("n_groups",) and getattr(args, f.name, None) is not None}
    topo = Topology(n_groups=args.n_groups, **topo_kw)
    # --shape's default is the one its help states, the timeline's (0.78), as for every other failure model; it was
    # 1.0 here, silently
    shape = next(f.default for f in fields(TimelineConfig) if f.name == "shape") if args.shape is None else args.shape
    model = UnitRenewal(args.unit_level, args.unit_mean_s, shape, args.ages or "stationary")
    kw = config_overrides(args)
    kw["shape"] = 1.0  # the theory period's process: exponential at the cluster's long-run rate (ckpt_period_rule)
    kw["mtbf_s"] = model.system_mtbf_s(topo)
    cfg = TimelineConfig(args.strategy, args.n_groups, r=r, ckpt_period_s=args.ckpt_period_s, **kw)
    res = simulate_stream_ttt(cfg, model, topo, args.reps, rng=args.seed)
    d = {"seed": args.seed, **res.summary(), "config": cfg.to_dict(), "failure_model": model.to_dict(),
         "topology": topo.to_dict(),
         "ckpt_period_rule": ("given" if args.ckpt_period_s is not None else
                              "the theory optimum T_c* for exponential failures at the cluster's long-run MTBF "
                              "(--unit-mean-s / units)"),
         "theory": {"applies": False,
                    "why": "the closed forms assume a system-level renewal process restarted with the job; here "
                           "units of a cluster in service fail on their own clocks (exogenous stream)"},
         "availability_definition": AVAILABILITY_DEFINITION}
    return stamp(d)


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
    if args.model != "levels":
        return _run_log_fit_model(args, log)
    given = [flag for flag, value in (("--unit-level", args.unit_level), ("--ages", args.ages),
                                      ("--resolution-s", args.resolution_s)) if value is not None]
    if given:
        raise UsageValueError(f"{', '.join(f'`{f}`' for f in given)} has no effect with --model levels (give "
                              f"--model system or unit)")
    check_r = _check_r(args, log)
    fit = fit_failure_log(log, levels=args.levels, shared_shape=args.shared_shape,
                          min_failures=10 if args.min_failures is None else args.min_failures, ci=args.ci)
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
    check = predictive_check(levels_model(fit, log), log, sims=args.sims, layout=args.check_layout,
                             r=check_r, rng=args.seed)
    d["predictive"] = check.to_dict()
    d["model_check_passed"] = check.consistent
    if not check.consistent:
        d["label"] = (f"REJECTED by its predictive check ({', '.join(check.failing)}): every unit new at the log "
                      f"start does not reproduce this log (a cluster in service? try --model unit, whose units start "
                      f"at their stationary age, or --model system); `spare-mc ttt` refuses these flags unless given "
                      f"--accept-failed-check")
        models = {name: {**flags, "model_check": "failed"} for name, flags in models.items()}
    d["spare_mc_flags"] = models
    d["ttt_args"] = {name: flag_args(flags) for name, flags in models.items()}
    return stamp(d)


def _check_r(args, log) -> int:
    """``--check-r``, checked before any fit: 1 to N (predictive_check's own refusal named its parameter ``r``, which
    is no flag of ``log fit``)."""
    return as_int(args.check_r, "check_r", min_value=1, max_value=log.topology.n_groups)


def _resolution(args):
    """``--resolution-s``: None (not given), ``"auto"`` or a number of seconds."""
    res = args.resolution_s
    if res is None or res == "auto":
        return res
    try:
        return float(res)
    except ValueError:
        raise UsageValueError(f"`--resolution-s` must be a number of seconds or 'auto', got {res!r}") from None


def _run_log_fit_model(args, log) -> dict:
    """``log fit --model system|unit``: :func:`spare_mc.logs.models.fit_model` and its predictive check."""

    given = [flag for flag, value in (("--levels", args.levels), ("--shared-shape", args.shared_shape or None),
                                      ("--min-failures", args.min_failures)) if value is not None]
    if args.model == "system":
        given += [flag for flag, value in (("--unit-level", args.unit_level), ("--ages", args.ages))
                  if value is not None]
    if given:
        raise UsageValueError(f"{', '.join(f'`{f}`' for f in given)} has no effect with --model {args.model}")
    res = _resolution(args)
    kw = {"resolution_s": "auto" if res is None else res, "ci": args.ci}
    if args.model == "unit":
        kw["ages"] = args.ages or "stationary"
    check_r = _check_r(args, log)
    fit = fit_model(log, args.model, unit_level=args.unit_level, **kw)
    check = predictive_check(fit, log, sims=args.sims, layout=args.check_layout, r=check_r, rng=args.seed)
    d = fit.to_dict()
    d["predictive"] = check.to_dict()
    d["model_check_passed"] = check.consistent
    if not check.consistent:
        d["label"] = (f"REJECTED by its predictive check ({', '.join(check.failing)}): the model does not "
                      f"reproduce its own log; `spare-mc ttt` refuses these flags unless given "
                      f"--accept-failed-check")
        d["ttt_flags"] = [*d["ttt_flags"], "--model-check", "failed"]
    return stamp(d)


def run_recommend(args) -> dict:
    """``recommend``: :func:`spare_mc.analyses.recommend.recommend`."""

    check_reps_and_seed(args.reps, "--reps", args.seed)
    set_by_us = [flag for flag, name in (("--ckpt-period-factor", "ckpt_period_factor"),)
                 if getattr(args, name, None) is not None]
    if args.no_live_scaling and args.log is not None:
        set_by_us.append("--no-live-scaling")
    if set_by_us:
        raise UsageValueError(f"{', '.join(f'`{f}`' for f in set_by_us)} has no effect with recommend: the periods "
                              f"come from --period-factors and the failure model from the log")
    model_flags = {"--mtbf-s": args.mtbf_s, "--shape": args.shape, "--unit-mean-s": args.unit_mean_s}
    log_flags = {"--model": args.model, "--resolution-s": args.resolution_s, "--sims": args.sims,
                 "--replay-starts": args.replay_starts, "--duration-s": args.duration_s,
                 "--accept-failed-check": args.accept_failed_check or None}
    topo = Topology(**{f.name: getattr(args, f.name) for f in fields(Topology)})
    if args.log is None:
        model = _recommend_model(args, log_flags)
        fit_kw = {"topology": topo}
    else:
        given = [f for f, v in model_flags.items() if v is not None]
        if given:
            raise UsageValueError(f"{', '.join(f'`{f}`' for f in given)} has no effect with a log: the failure "
                                  f"model is fitted to it (give these without a log to recommend for a model)")
        if (args.model or "system") == "system":
            given = [f for f, v in (("--unit-level", args.unit_level), ("--ages", args.ages)) if v is not None]
            if given:
                raise UsageValueError(f"{', '.join(f'`{f}`' for f in given)} has no effect with --model system")
        res = _resolution(args)
        model = _read_log(args)
        fit_kw = {"model": args.model or "system", "unit_level": args.unit_level, "ages": args.ages,
                  "resolution_s": "auto" if res is None else res,
                  "replay_starts": 60 if args.replay_starts is None else args.replay_starts,
                  "sims": 200 if args.sims is None else args.sims, "accept_failed_check": args.accept_failed_check}
    # the topology flags are the log's (and the fitted model's), not a TimelineConfig failure model's
    job = config_overrides(argparse.Namespace(**{**vars(args), "n_gpus": None, "placement": None,
                                                 **dict.fromkeys(DOMAIN_SIZES)}))
    n_steps = job.pop("n_steps", None)
    if n_steps is None:
        raise UsageValueError("`--n-steps` (the job's training steps) is required")
    for name in ("mtbf_s", "shape", "live_scaling"):  # the failure model's, not the job's
        job.pop(name, None)
    spare_r = list(parse_list(args.spare_r, "--spare-r", int, what="redundancies"))
    factors = list(parse_list(args.period_factors, "--period-factors", float, what="period factors"))
    with flag_names(spare_r="--spare-r", period_factors="--period-factors", reps="--reps",
                    replay_starts="--replay-starts", sims="--sims", unit_level="--unit-level"):
        rec = recommend(model, n_steps=n_steps, spare_r=spare_r, period_factors=factors, reps=args.reps,
                        rng=args.seed, **fit_kw, **job)
    return stamp(rec.to_dict())


def _recommend_model(args, log_flags: dict):
    """``recommend`` without a log: the failure model its flags give."""
    given = [f for f, v in log_flags.items() if v is not None]
    if given:
        raise UsageValueError(f"{', '.join(f'`{f}`' for f in given)} has no effect without a log (they fit, check "
                              f"or replay one)")
    if args.unit_mean_s is not None:
        missing = [f for f, v in (("--unit-level", args.unit_level), ("--shape", args.shape)) if v is None]
        if missing or args.mtbf_s is not None:
            raise UsageValueError("a cluster-in-service model needs --unit-level, --unit-mean-s and --shape (not "
                                  "--mtbf-s)" + (f"; missing: {', '.join(missing)}" if missing else ""))
        return UnitRenewal(args.unit_level, args.unit_mean_s, args.shape, args.ages or "stationary")
    if args.mtbf_s is not None and args.shape is not None:
        extra = [f for f, v in (("--unit-level", args.unit_level), ("--ages", args.ages)) if v is not None]
        if extra:
            raise UsageValueError(f"{', '.join(f'`{f}`' for f in extra)} has no effect with a system-level model "
                                  f"(--mtbf-s)")
        return SystemRenewal(args.mtbf_s, args.shape, live_scaling=not args.no_live_scaling)
    raise UsageValueError("give a failure log, or a failure model: --mtbf-s and --shape (a system-level renewal) "
                          "or --unit-level, --unit-mean-s and --shape (every unit a renewal process)")


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

