"""The handlers of the study commands: ``reproduce`` (the full reproduction, ``--table main`` and the single
tables of :mod:`spare_mc.analyses.tables`), ``sensitivity``, ``calibrate``, ``dynamic`` and ``repair``. Each reads
its flags, refuses the flags its study does not take, and calls the study; ``sensitivity``, ``calibrate``,
``dynamic`` and ``repair`` also write their result JSON and figure, and return a :class:`~spare_mc.cli.format.Report`.
"""

from __future__ import annotations

import os

from .._lib.resources import check_local_workers, usable_cpus
from .._lib.validation import UsageValueError, parse_list
from ..analyses.calibrate import DEFAULT_SCHEDULE, SEARCH_SPACE, calibrate, check_calibrate_inputs, fitted_clash
from ..analyses.calibrate import estimate_cost as estimate_calibration_cost
from ..analyses.dynamic import QUICK as DYNAMIC_QUICK
from ..analyses.dynamic import dynamic_study
from ..analyses.repair import QUICK as REPAIR_QUICK
from ..analyses.repair import STUDY_SETS, repair_study
from ..analyses.reproduce import reproduce
from ..analyses.sensitivity import check_sensitivity_inputs, default_variants, estimate_cost, sensitivity
from ..analyses.tables import domain_period_table, domains_table, llama3_table, phase_table
from ..ttt.optimize import PERIOD_FACTORS
from .format import Report, say
from .handlers import progress
from .parser import build_parser, config_overrides, flag_names, given_config_flags

__all__ = ["run_reproduce", "run_domains_table", "run_domain_period_table", "run_phase_table", "run_llama3_table",
           "run_sensitivity", "run_variants", "run_calibrate", "run_dynamic", "run_repair"]


def run_reproduce(args) -> dict:
    """``reproduce`` and ``reproduce --table main``: :func:`spare_mc.analyses.reproduce.reproduce`."""

    n_values = None if args.n_values is None else parse_list(args.n_values, "--n-values", int)
    if args.seed is not None and args.seed < 0:
        raise UsageValueError(f"`--seed` must be >= 0, got {args.seed}")
    if args.table == "main":  # writes nothing and runs no sweep
        for flag in ("out_dir", "workers", "scheduler"):
            if getattr(args, flag) is not None:
                raise UsageValueError(f"`--{flag.replace('_', '-')}` has no effect with --table main: it runs in this "
                                      f"process and writes nothing (--json prints the table; the full `spare-mc "
                                      f"reproduce` writes main_table.json with the sweeps)")
        if args.force:
            raise UsageValueError("`--force` has no effect with --table main: it writes nothing")
    else:  # one folder, one setting: what only the main table would take is refused, not applied to it alone
        if args.preset is not None:
            raise UsageValueError("`--preset` applies to the main table only: add --table main (the studies' specs "
                                  "state their own settings)")
        given = given_config_flags(args)
        if given:
            raise UsageValueError(f"`{given[0]}` applies to the main table only: add --table main (the full "
                                  f"reproduce runs every study at its spec's settings, so that one output folder "
                                  f"holds one setting)")
    with flag_names(n_values="--n-values", rng="--seed"):
        base = config_overrides(args)
        res = reproduce(quick=args.quick, table=args.table, studies=args.studies, out_dir=args.out_dir,
                        n_values=n_values, reps=args.reps, confirm_reps=args.confirm_reps, rng=args.seed, base=base,
                        scheduler=args.scheduler, workers=args.workers, force=args.force, progress=progress(args),
                        preset=args.preset)
    out = res.to_dict()
    out["table"] = args.table  # (a rejected preset: load_preset warned on stderr; the text output labels it)
    return out


def _force_needs_out_dir(args, table: str) -> None:
    """``reproduce --table X --force`` writes nothing without ``--out-dir``: refused."""
    if args.force and args.out_dir is None:
        raise UsageValueError(f"`--force` has no effect with --table {table} without --out-dir: nothing is "
                              f"written")


def _refuse(args, table: str, flags) -> None:
    """The flags (attribute names) that ``reproduce --table X`` does not take, given: refused."""
    for flag in flags:
        if getattr(args, flag) is not None:
            raise UsageValueError(f"`--{flag.replace('_', '-')}` has no effect with --table {table}")


def run_domains_table(args) -> dict:
    """``reproduce --table domains``: :func:`spare_mc.analyses.tables.domains_table`."""

    _force_needs_out_dir(args, "domains")
    n_values = None if args.n_values is None else parse_list(args.n_values, "--n-values", int)
    _refuse(args, "domains", ("studies", "preset", "scheduler", "confirm_reps"))
    if args.failures not in (None, "system") or config_overrides(args):
        raise UsageValueError("the timeline and failure-model options (--failures, --domain-mtbf-s, ...) have no "
                              "effect with --table domains: its failure models and settings are docs/domains.md's")
    # one process per CPU by default, but for the quick study, whose few rows take less time than starting one
    workers = args.workers if args.workers is not None else 1 if args.quick else usable_cpus()
    return domains_table(quick=args.quick, n_values=n_values, reps=args.reps, seed=args.seed, out_dir=args.out_dir,
                         force=args.force, workers=workers, progress=progress(args))


def run_domain_period_table(args) -> dict:
    """``reproduce --table domain-period``: :func:`spare_mc.analyses.tables.domain_period_table`."""

    _force_needs_out_dir(args, "domain-period")
    _refuse(args, "domain-period", ("studies", "preset", "scheduler", "workers"))
    if args.failures not in (None, "system") or config_overrides(args):
        raise UsageValueError("the timeline and failure-model options (--failures, --domain-mtbf-s, ...) have no "
                              "effect with --table domain-period: its failure models and settings are docs/domains.md's")
    n_values = None if args.n_values is None else parse_list(args.n_values, "--n-values", int)
    return domain_period_table(quick=args.quick, n_values=n_values, reps=args.reps, confirm_reps=args.confirm_reps,
                               seed=args.seed, out_dir=args.out_dir, force=args.force, progress=progress(args))


def run_phase_table(args) -> dict:
    """``reproduce --table phase``: :func:`spare_mc.analyses.tables.phase_table`."""

    _force_needs_out_dir(args, "phase")
    for flag in ("preset", "scheduler", "n_values"):
        if getattr(args, flag) is not None:
            hint = (" (cluster sizes and the grid: a spec's [phase] table through --studies, or "
                    "spare_mc.analyses.phase.PhaseStudy)") if flag == "n_values" else ""
            raise UsageValueError(f"`--{flag.replace('_', '-')}` has no effect with --table phase{hint}")
    given = given_config_flags(args)
    if given:
        raise UsageValueError(f"`{given[0]}` has no effect with --table phase: its grid and settings are "
                              f"docs/phase.md's (or a spec's, through --studies)")
    return phase_table(quick=args.quick, studies=args.studies, reps=args.reps, confirm_reps=args.confirm_reps,
                       seed=args.seed, out_dir=args.out_dir, force=args.force, workers=args.workers,
                       progress=progress(args))


def run_llama3_table(args) -> dict:
    """``reproduce --table llama3``: :func:`spare_mc.analyses.tables.llama3_table`."""

    _force_needs_out_dir(args, "llama3")
    _refuse(args, "llama3", ("n_values", "studies", "preset", "scheduler", "workers", "confirm_reps"))
    given = given_config_flags(args)
    if given:
        raise UsageValueError(f"`{given[0]}` has no effect with --table llama3: its settings are the preset's and "
                              f"the sensitivity grid's (docs/llama3.md; other settings: "
                              f"spare_mc.analyses.clusters.effective_training_time)")
    return llama3_table(quick=args.quick, reps=args.reps, seed=args.seed, out_dir=args.out_dir, force=args.force,
                        progress=progress(args))


def _sensitivity_baseline(args):
    """``sensitivity``'s N values (``--n-groups``) and its variants under the baseline the flags give."""
    n_values = parse_list(args.n_groups, "--n-groups", int)
    base = config_overrides(args)
    return n_values, base, default_variants(base)


def run_variants(args) -> dict:
    """``sensitivity --list-variants``: :func:`spare_mc.analyses.sensitivity.default_variants`."""
    return {"variants": [v.to_dict() for v in _sensitivity_baseline(args)[2]]}


def run_sensitivity(args) -> Report:
    """The ``sensitivity`` command: the study of :mod:`spare_mc.analyses.sensitivity` (its expected time first, on stderr)."""

    n_values, base, variants = _sensitivity_baseline(args)
    if args.variants is not None:
        names = parse_list(args.variants, "--variants", what="variant names")
        known = {v.name: v for v in variants}
        same = {v.name: v for v in default_variants(base, left_out=True)}
        for x in names:
            if x in same:  # left out of this run's variants: say why rather than only "not among"
                sets = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in same[x].overrides.items())
                raise UsageValueError(f"`--variants`: {x!r} sets {sets}, which the baseline already has under the "
                                      f"given flags: it equals the baseline (it would change nothing) and is left "
                                      f"out; choose among {sorted(known)}")
        unknown = [x for x in names if x not in known]
        if unknown:
            raise UsageValueError(f"`--variants` must name variants among {sorted(known)}, got {unknown}")
        variants = tuple(known[x] for x in names)
    if args.seed < 0:
        raise UsageValueError(f"`--seed` must be >= 0, got {args.seed}")
    out_dir, figure = _study_targets(args, "sensitivity")
    r_ranges = _r_ranges(args)
    kw = dict(variants=variants, reps=args.reps, pilot_reps=args.pilot_reps, base=base, r_ranges=r_ranges,
              screen_alpha=args.screen_alpha)
    with flag_names(n_values="--n-groups", out_dir="--out-dir", figure="--figure", force="--force",
                    screen_alpha="--screen-alpha"):
        check_sensitivity_inputs(n_values, target_pp=args.target_pp, max_confirm_reps=args.max_confirm_reps,
                                 rng=args.seed, out_dir=out_dir, figure=figure, force=args.force,
                                 **kw)  # every rule and every output before the timed jobs of the estimate
    cost = estimate_cost(n_values, workers=args.workers, **kw)
    say(f"spare-mc sensitivity: {len(variants)} variants at N = {', '.join(map(str, n_values))}; expected time "
         f"about {cost['expected_s'] / 60:.1f} min on {cost['workers']} worker(s) (a rough estimate from timed jobs)")
    log = progress(args)
    with flag_names(n_values="--n-groups", out_dir="--out-dir", figure="--figure", force="--force"):
        res = sensitivity(n_values, target_pp=args.target_pp, max_confirm_reps=args.max_confirm_reps, rng=args.seed,
                          out_dir=out_dir, figure=figure, scheduler=args.scheduler, workers=args.workers,
                          force=args.force, progress=log, **kw)
    d = res.to_dict()
    d["expected_s"] = cost["expected_s"]
    return Report(d, res)


def _study_targets(args, name):
    """A study's folder and figure: ``(out_dir, figure or None)`` -- ``--out-dir`` (default ``data/<name>``) and
    ``--figure`` (default ``<out-dir>/<name>.png``, ``none`` to skip); ``--workers`` must be >= 0. The study checks
    both, and its result file, before any work (:class:`spare_mc.analyses.folder.StudyFolder`)."""

    check_local_workers(args.workers, "--workers")  # before any work
    for flag in ("out_dir", "figure"):
        if getattr(args, flag) == "":
            raise UsageValueError(f"`--{flag.replace('_', '-')}` is empty; give a path (or leave the flag out for "
                                  f"the default)")
    out_dir = args.out_dir or os.path.join("data", name)
    figure = None if (args.figure or "").lower() == "none" else args.figure or os.path.join(out_dir, f"{name}.png")
    return out_dir, figure


def run_dynamic(args) -> Report:
    """The ``dynamic`` command: :func:`spare_mc.analyses.dynamic.dynamic_study`."""

    n_values = parse_list(args.n_groups, "--n-groups", int)
    shapes = parse_list(args.shapes, "--shapes", float)
    policies = parse_list(args.policies, "--policies", what="dynamic policies")
    base = config_overrides(args)
    kw = dict(screen_reps=args.screen_reps, confirm_reps=args.confirm_reps)
    if args.quick:
        _quick_conflicts(args, "dynamic", ("n_groups", "shapes", "screen_reps", "confirm_reps"))
        n_values, shapes = DYNAMIC_QUICK["n_values"], DYNAMIC_QUICK["shapes"]
        kw = dict(screen_reps=DYNAMIC_QUICK["screen_reps"], confirm_reps=DYNAMIC_QUICK["confirm_reps"])
        base = {"n_steps": DYNAMIC_QUICK["n_steps"], **base}
    if args.seed < 0:
        raise UsageValueError(f"`--seed` must be >= 0, got {args.seed}")
    out_dir, figure = _study_targets(args, "dynamic")
    log = progress(args)
    with flag_names(n_values="--n-groups", out_dir="--out-dir", figure="--figure", force="--force",
                    screen_alpha="--screen-alpha"):
        res = dynamic_study(n_values, shapes=shapes, policies=policies, rng=args.seed, base=base, out_dir=out_dir,
                            figure=figure, scheduler=args.scheduler, workers=args.workers, force=args.force,
                            progress=log, screen_alpha=args.screen_alpha, **kw)
    return Report(res.to_dict(), res)


def run_repair(args) -> Report:
    """The ``repair`` command: :func:`spare_mc.analyses.repair.repair_study`."""

    n_values = parse_list(args.n_groups, "--n-groups", int)
    times = parse_list(args.repair_times, "--repair-times", float)
    base = config_overrides(args)
    reps = args.reps
    if args.quick:
        _quick_conflicts(args, "repair", ("n_groups", "repair_times"))
        n_values, times, reps = REPAIR_QUICK["n_values"], REPAIR_QUICK["repair_times"], min(reps, REPAIR_QUICK["reps"])
        base = {"n_steps": REPAIR_QUICK["n_steps"], **base}
    if args.seed < 0:  # (`--reps`: the study's rule)
        raise UsageValueError(f"`--seed` must be >= 0, got {args.seed}")
    out_dir, figure = _study_targets(args, "repair")
    log = progress(args)

    for name in STUDY_SETS:  # (before the mapping below, which reads the study's `repair` as --law)
        if getattr(args, name, None) is not None:
            raise UsageValueError(f"`--{name.replace('_', '-')}` must not be given: the study sets it (the repair law "
                                  f"is --law, the repair times --repair-times)")
    with flag_names(n_values="--n-groups", repair_times="--repair-times", repair="--law", out_dir="--out-dir",
                    figure="--figure", force="--force", screen_alpha="--screen-alpha"):
        res = repair_study(n_values, repair_times=times, reps=reps, repair=args.law, rng=args.seed, base=base,
                           out_dir=out_dir, figure=figure, scheduler=args.scheduler, workers=args.workers,
                           force=args.force, progress=log, screen_alpha=args.screen_alpha)
    return Report(res.to_dict(), res)


def _quick_conflicts(args, command: str, dests) -> None:
    """``--quick`` sets these flags itself: refuse one given with another value than its default rather than
    dropping it silently."""
    def flag(dest):
        return "--" + dest.replace("_", "-")

    sub = build_parser()._subparsers._group_actions[0].choices[command]
    given = ", ".join(flag(d) for d in dests if getattr(args, d) != sub.get_default(d))
    if given:
        raise UsageValueError(f"--quick sets {', '.join(map(flag, dests))} itself, so {given} would be ignored: drop "
                              f"--quick or {given}")


def _round(text):
    """One round of ``--schedule``, ``SCREEN:CONFIRM``, as two integers (a ``ValueError`` otherwise)."""
    screen, confirm = text.split(":")
    return int(screen), int(confirm)


def _r_ranges(args):
    """``--rep-r`` and ``--spare-r`` (``LO-HI``) as the searched ranges of r per strategy."""
    out = {}
    for s, text in (("rep", args.rep_r), ("spare", args.spare_r)):
        try:
            lo, hi = (int(x) for x in text.split("-"))
        except ValueError:
            raise UsageValueError(f"`--{s}-r` must be LO-HI (e.g. 2-6), got {text!r}") from None
        out[s] = (lo, hi)
    return out


def run_calibrate(args) -> Report:
    """The ``calibrate`` command (:func:`spare_mc.analyses.calibrate.calibrate`)."""

    space = SEARCH_SPACE
    if args.options is not None:
        names = parse_list(args.options, "--options", what="options", choices=SEARCH_SPACE)
        space = {k: SEARCH_SPACE[k] for k in names}
    schedule = DEFAULT_SCHEDULE
    if args.schedule is not None:
        schedule = parse_list(args.schedule, "--schedule", _round, what="SCREEN:CONFIRM pairs (e.g. 3:6,8:16)")
    pf = PERIOD_FACTORS
    if args.period_factors is not None:
        pf = parse_list(args.period_factors, "--period-factors", float)
    fit_n = None if args.fit_n is None else parse_list(args.fit_n, "--fit-n", int)
    predict_n = None if args.predict_n is None else parse_list(args.predict_n, "--predict-n", int, allow_empty=True)
    if args.seed < 0:
        raise UsageValueError(f"`--seed` must be >= 0, got {args.seed}")
    check_local_workers(args.workers, "--workers")  # before any work
    base = config_overrides(args)
    clash = fitted_clash(space, base)  # said with the command line's names (calibrate's own error names `base`)
    if clash:
        opt, keys = clash
        flags = ", ".join(f"--{k.replace('_', '-')}" for k in keys)
        raise UsageValueError(f"`{flags}` sets what the calibration fits (option {opt!r}): drop the flag, or "
                              f"leave {opt!r} out of `--options`")
    log = progress(args)
    kw = dict(fit_n=fit_n, predict_n=predict_n, space=space, base=base, schedule=schedule, eta=args.eta,
              min_keep=args.min_keep, tol_ttt=args.tol_ttt, tol_availability=args.tol_availability,
              alpha=args.alpha, rng=args.seed, r_ranges=_r_ranges(args), period_factors=pf)
    with flag_names(out_dir="--out-dir", preset_out="--preset-out", force="--force", schedule="--schedule",
                    fit_n="--fit-n", predict_n="--predict-n", period_factors="--period-factors"):
        # every rule and every output before the timed jobs of the estimate
        check_calibrate_inputs(args.target, out_dir=args.out_dir, preset_out=args.preset_out, force=args.force, **kw)
    cost = estimate_calibration_cost(args.target, workers=args.workers, **kw)
    say(f"spare-mc calibrate: {cost['jobs']:,} jobs at most; expected time at most about "
        f"{cost['expected_s'] / 60:.1f} min on {cost['workers']} worker(s) (a rough estimate from timed jobs; "
        f"the rejected combinations leave early)")
    with flag_names(out_dir="--out-dir", preset_out="--preset-out", force="--force", schedule="--schedule",
                    fit_n="--fit-n", predict_n="--predict-n", period_factors="--period-factors"):
        res = calibrate(args.target, out_dir=args.out_dir, preset_out=args.preset_out, scheduler=args.scheduler,
                        workers=args.workers, force=args.force, progress=log, **kw)
    d = res.to_dict()
    d["expected_s"] = cost["expected_s"]
    return Report(d, res)


