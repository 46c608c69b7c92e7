"""The handlers of the commands that run one computation: ``mu``, ``overhead``, ``ttt``, ``sweep``, ``compare``,
``plot`` and ``log check|fit|replay``. Each reads its flags, checks what only the command line knows (the
library checks the rest, its errors said in the flags' names by :func:`spare_mc.cli.parser.flag_names`), calls
the library and returns the dict that ``--json`` prints and its formatter (:mod:`spare_mc.cli.format`) shows.
"""

from __future__ import annotations

import math
import os
from dataclasses import fields
from fractions import Fraction

import numpy as np
from scipy import stats

from .._lib.provenance import stamp
from .._lib.validation import UsageValueError
from ..analyses.reproduce import studies_dir
from ..logs.failure_log import read_failure_log
from ..logs.fit import fit_failure_log
from ..logs.replay import replay_log
from ..mc.reorder import exact_stack_bound_sum, overhead_mc
from ..mc.survivability import wipeout_mc
from ..model.failures import UniformOrder
from ..model.kinds import make_layout
from ..model.paper import PAPER_R
from ..model.topology import Topology
from ..options import set_options
from ..plots.sweep_figures import save_figures
from ..stats import MCEstimate, compare
from ..sweep.compare import compare_dataset
from ..sweep.runner import open_sweep_dataset, run_sweep
from ..sweep.spec import SweepSpec
from ..theory.closed_forms import (ckpt_period_daly, ckpt_period_young, daly_expected_wall_time, daly_optimal_interval,
                                   mu_expansion, mu_paper, overhead_lower_bound)
from ..theory.exact import EXACT_LAYOUTS, exact_cost, exact_wipeout
from ..ttt.config import TimelineConfig
from ..ttt.optimize import theory_ttt
from ..ttt.run import simulate_ttt
from ..ttt.theory import classical_config, classical_expected_ttt_s, classical_segment_s
from .format import say
from .parser import config_overrides, flag_names

__all__ = ["MU_CHUNK", "CLI_EXACT_MAX_S", "check_reps_and_seed", "progress", "run_mu", "run_overhead", "run_ttt",
           "run_sweep_cmd", "run_compare", "run_plot", "run_log_check", "run_log_fit", "run_log_replay"]

#: Replications per chunk of ``spare-mc mu`` (one chunk's per-replication arrays live at once).
MU_CHUNK = 1_000_000


def check_reps_and_seed(count, flag, seed) -> None:
    """The rules every command shares: at least 2 replications (for a standard error), a non-negative seed."""
    if count < 2:
        raise UsageValueError(f"`{flag}` must be >= 2 to estimate a standard error, got {count}")
    if seed < 0:
        raise UsageValueError(f"`--seed` must be >= 0, got {seed}")


def progress(args):
    """Where a long command reports its stages: lines ``... stage`` on stderr, none with ``--json``."""
    return (lambda msg: say(f"... {msg}")) if not args.json else None


def _finite(x):
    """A finite float, else None (strict JSON)."""
    return None if x is None or not math.isfinite(x) else float(x)


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
    """The ``mu`` command as a dict (what ``--json`` prints).

    The replications run in chunks of :data:`MU_CHUNK` on one generator, which the kernels advance in place: the
    chunks are consecutive pieces of one random stream, the output depends only on the seed and the count, and memory
    stays O(chunk + N). (Up to one chunk this is exactly one :func:`spare_mc.wipeout_mc` call. Beyond, a layout
    simulated failure by failure gives other numbers than a single huge call, whose kernel carries its permutation
    state from one replication to the next, with the same law; one read from its groups' failure times gives the
    same numbers, its trials carrying no state from one to the next.)
    """

    check_reps_and_seed(args.reps, "--reps", args.seed)
    layout = make_layout(args.layout, args.n_groups, args.r, rng=0)  # validates N and r first
    _exact_budget(args, args.layout in EXACT_LAYOUTS and not args.with_replacement and not args.no_exact)
    gen = np.random.default_rng(np.random.SeedSequence(args.seed))
    failures = UniformOrder(with_replacement=args.with_replacement)
    sums = {"T": [0, 0], "masked": [0, 0]}
    done = 0
    loud = args.reps > MU_CHUNK and not args.json
    while done < args.reps:
        k = min(MU_CHUNK, args.reps - done)
        res = wipeout_mc(layout, k, failures=failures, fresh_layout=args.layout == "random", rng=gen)
        for name, v in (("T", res.T), ("masked", res.dead_before)):
            sums[name][0] += int(v.sum())
            exact_int64 = float(v.max()) ** 2 * v.size < 2.0**62  # else exact Python integers (huge N only)
            sums[name][1] += int((v * v).sum()) if exact_int64 else sum(x * x for x in v.tolist())
        done += k
        if loud:
            say(f"... {done:,} of {args.reps:,} replications")
    est = {name: _streamed_estimate(name, s1, s2, args.reps) for name, (s1, s2) in sums.items()}
    exact = None
    if args.layout in EXACT_LAYOUTS and not args.with_replacement and not args.no_exact:
        exact = exact_wipeout(args.layout, args.n_groups, args.r)
    out = {
        "n_groups": args.n_groups, "r": args.r, "layout": args.layout, "reps": args.reps, "seed": args.seed,
        "with_replacement": args.with_replacement,
        "T_definition": ("1-based index of the failure causing the first wipe-out, counting failures that hit dead "
                         "groups; masked = distinct dead groups before it (not T - 1)" if args.with_replacement else
                         "1-based index of the failure causing the first wipe-out; masked failures = T - 1"),
        "exact_mean_T": None if exact is None else exact.mean,
        "exact_sd_T": None if exact is None else exact.sd,
        "mc_mean_T": est["T"].mean, "mc_se_T": est["T"].se, "mc_sd_T": est["T"].sd,
        "mc_ci95_T": list(est["T"].ci),
        "mc_masked_mean": est["masked"].mean, "mc_masked_ci95": list(est["masked"].ci),
        "paper_mu": mu_paper(args.n_groups, args.r),
        "mu_expansion_random": mu_expansion(args.n_groups, args.r),
    }
    if exact is not None:
        c = compare(est["T"], exact.mean, alpha=1e-3)
        out.update(mc_vs_exact_z=_finite(c.z), mc_vs_exact_p=c.p_value, mc_vs_exact_consistent=c.consistent)
    return stamp(out)


def _streamed_estimate(name, s1, s2, n) -> MCEstimate:
    """Mean, sd and se from exact integer sums (``s1 = sum x``, ``s2 = sum x^2``)."""

    var = Fraction(s2 * n - s1 * s1, n * (n - 1))
    sd = math.sqrt(var) if var > 0 else 0.0
    return MCEstimate(name, s1 / n, sd / math.sqrt(n), sd, n, 0.95, "nonnegative")


def run_overhead(args) -> dict:
    """The ``overhead`` command as a dict (what ``--json`` prints)."""

    check_reps_and_seed(args.reps, "--reps", args.seed)
    _exact_budget(args, args.layout in EXACT_LAYOUTS and not args.no_exact)
    res = overhead_mc(args.layout, args.reps, n_groups=args.n_groups, r=args.r,
                      rng=np.random.SeedSequence(args.seed))
    out = {"seed": args.seed, **res.summary(),
           "epoch_convention": "epoch k = after k failures, k = 0..T-1, S_0 = 1 unless the top layer is not a "
                               "perfect assignment; ReCtlr rates are per masked failure",
           "paper_overhead_lower_bound": overhead_lower_bound(args.n_groups, args.r)}
    if args.layout in EXACT_LAYOUTS and not args.no_exact:
        out["exact_c_mean"] = exact_stack_bound_sum(args.layout, args.n_groups, args.r).c_mean
        out["exact_mean_T"] = exact_wipeout(args.layout, args.n_groups, args.r).mean
        # the check is on T: c_mean is a function of T whose mean rare long runs dominate (its intervals under-cover
        # at usual replication counts; see compare_dataset)
        c = compare(res.estimate("T"), out["exact_mean_T"], alpha=1e-3)
        out.update(mc_vs_exact_z=_finite(c.z), mc_vs_exact_p=c.p_value, mc_vs_exact_consistent=c.consistent)
    return stamp(out)


def run_ttt(args) -> dict:
    """The ``ttt`` command as a dict."""

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
    res = simulate_ttt(cfg, args.reps, rng=args.seed)
    out = {"seed": args.seed, **res.summary(), "config": cfg.to_dict()}
    out["ckpt_period_rule"] = ("given" if args.ckpt_period_s is not None else
                               f"every {cfg.ckpt_every_steps} steps" if cfg.ckpt_every_steps else
                               f"{cfg.ckpt_period_factor:g} x the {cfg.ckpt_policy} policy's period, re-evaluated "
                               f"at every step boundary" if cfg.ckpt_policy != "periodic" else
                               f"{cfg.ckpt_period_factor:g} x the theory optimum T_c*")
    out["theory"] = theory_ttt(cfg).to_dict()
    out["availability_definition"] = ("uptime / wall clock; uptime = kept step time (useful + redundant + patch "
                                      "compute + all-reduce + ReCtlr/shrink); not checkpoints, restarts, lost work")
    return stamp(out)


def _run_ttt_classical(args) -> dict:
    """``ttt --model classical``: the timeline under the classical rules, its mean time against Daly's exact one."""


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
    cfg = classical_config(ckpt_period_s=args.ckpt_period_s, **kw)
    res = simulate_ttt(cfg, args.reps, rng=args.seed)
    est = res.estimate("ttt_over_t0")  # a capped run enters at the cap: the mean and its CI are one estimator
    exact = classical_expected_ttt_s(cfg)
    mean, se = est.mean * cfg.t0_s, est.se * cfg.t0_s
    z = (mean - exact) / se if se > 0 else math.nan
    solve = cfg.n_steps * cfg.compute_s
    restart = cfg.remote_restart  # Daly's R: the whole restart, its checkpoint load included
    tau_opt, e_opt = daly_optimal_interval(solve, cfg.save_s, restart, cfg.mtbf_s)
    at = {"exact_optimum": tau_opt, "young": ckpt_period_young(cfg.save_s, cfg.mtbf_s),
          "daly_higher_order": ckpt_period_daly(cfg.save_s, cfg.mtbf_s)}
    # (the groups, r and layout of the step model mean nothing here: every failure stops the whole system; the
    # config keeps them, as the timeline ran)
    summary = {k: v for k, v in res.summary().items() if k not in ("n_groups", "r", "layout")}
    out = {"seed": args.seed, "model": "classical", **summary, "config": cfg.to_dict(),
           "solve_s": solve, "ckpt_period_s": cfg.ckpt_period,
           "ckpt_period_rule": "given" if args.ckpt_period_s is not None else "the whole number of steps with the least exact E[T_w]",
           "segment_s": classical_segment_s(cfg),
           "ttt_s_mean": mean, "ttt_s_ci95": [t * cfg.t0_s for t in est.ci], "exact_ttt_s": exact,
           "relative_error": (mean - exact) / exact, "z": z,
           "p_value": float(2 * stats.norm.sf(abs(z))) if math.isfinite(z) else math.nan,
           "comparable": res.n_capped == 0,
           "optimum": {name: {"interval_s": tau, "exact_ttt_s": daly_expected_wall_time(solve, tau, cfg.save_s,
                                                                                     restart, cfg.mtbf_s)}
                       for name, tau in at.items()}}
    out["optimum"]["exact_optimum"]["exact_ttt_s"] = e_opt
    if res.n_capped:
        out["comparable"] = False
        out["warning"] = (f"{res.n_capped} runs hit the wall-clock cap: the mean is a lower bound and cannot be "
                          f"compared with the exact value; raise --max-wall-factor")
    return stamp(out)


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
    """``log check``: :meth:`spare_mc.logs.failure_logs.FailureLog.summary`."""
    return stamp(_read_log(args).summary())


def run_log_fit(args) -> dict:
    """``log fit``: :func:`spare_mc.logs.failure_logs.fit_failure_log`, with the ``spare-mc ttt`` flags of the
    fitted models (``spare_mc_flags``)."""

    log = _read_log(args)
    topo = log.topology
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
    # `spare-mc ttt` builds its domains on the default topology sizes: say so when this log's differ, or the
    # domain flags would be read as domains of other sizes (the per-GPU model does not depend on them)
    default = Topology(topo.n_gpus, topo.n_groups)
    differ = [f"{f.name}={getattr(topo, f.name)} (ttt: {getattr(default, f.name)})" for f in fields(Topology)
              if f.name not in ("n_gpus", "n_groups", "placement")  # placement: a flag of its own
              and getattr(topo, f.name) != getattr(default, f.name)]
    if differ and any(name != "per-gpu" for name in models):
        d["flags_note"] = ("the domain flags assume spare-mc ttt's default topology, which differs from this "
                           "log's: " + ", ".join(differ) + "; for this topology use the Python API "
                           "(LogFit.failure_model with the same Topology)")
    d["spare_mc_flags"] = models
    return stamp(d)


def run_log_replay(args) -> dict:
    """``log replay``: :func:`spare_mc.logs.failure_logs.replay_log`."""
    return stamp(replay_log(_read_log(args), args.layout, r=args.r, overhead=args.overhead).summary())


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

