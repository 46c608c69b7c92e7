"""The checkpoint period under failure domains: how far the theory period is from the best one, level by level.

The domain study (:mod:`spare_mc.analyses.domains`) checkpoints every job at the theory optimum of the **background**
failures (the paper's 300 s system MTBF): the theory knows nothing of node, rack, power or pod events. Here each
level's failure model gets its own period, found by simulation, and the study measures what that re-optimisation
wins over the theory period. Setting and layouts are a :class:`~spare_mc.analyses.domains.DomainStudy`'s (one ``N``):

- levels: ``study.levels``, and ``"all"`` (every level at once) when ``N`` is in ``study.mixed_n_values``;
- strategies: CKPT-only, Rep (``rep_r``) on domain-aware replica sets and SPARe (``spare_r``) on domain-aware Sidon
  offsets -- or, where the topology allows no domain-aware layout at a level, Rep's consecutive sets and plain
  Sidon offsets (the row says which);
- **screen**: ``ttt_over_t0`` at every factor of ``period_factors`` times the theory period, ``screen_reps`` jobs
  each on common random numbers (replications ``0 .. screen_reps - 1``); the best factor is the least mean among
  the uncapped points. The grid contains 1, so the screen's best is never worse than the theory period *on the
  screen's own jobs*: that comparison is biased, and not what is reported;
- **confirmation**: the best factor and the theory period (factor 1) on ``confirm_reps`` fresh jobs (replications
  ``screen_reps ..``), paired: the gain is ``TTT(theory) - TTT(best)`` over ``T0``, mean and 95% t interval. A
  gain whose interval covers 0 means the theory period is as good as any on the grid.

**Capped jobs** (past ``max_wall_factor x T0``) decide nothing beyond their presence: one capped job takes its screen
point out of the choice, and a capped job in either arm of the confirmation leaves the row without a paired gain (a
restricted mean says nothing about it). So each screen point and each confirmation arm runs its jobs in replication
order, in chunks of 1, 2, 4, ... jobs, and stops after the first chunk that holds a capped job
(:func:`_jobs_until_capped`). The same jobs are capped either way, so the choice of the best factor, and every
mean, interval and gain of an uncapped point or arm, are those of running every job; what is not computed is the
restricted mean of a point or arm with a capped job, reported as ``None`` with the number of jobs run (its capped
fraction is of those jobs). A job that never finishes runs to the cap, the longest job there is: under node events
every CKPT-only job does, and the default study took 120-123 s before this rule and 41 s with it, its other numbers
identical (2026-12-07, docs/results/speed.md).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from .._lib.dist import t_ppf
from .._lib.validation import UsageTypeError, UsageValueError, as_int
from ..ttt.results import TTTResult
from ..ttt.run import simulate_ttt
from .domains import DomainStudy

__all__ = ["PERIOD_STUDY_FACTORS", "run_domain_period_study"]

#: Multiples of the theory period searched (a factor of sqrt(2) apart, 1/4 to 4).
PERIOD_STUDY_FACTORS = (0.25, 0.35, 0.5, 0.71, 1.0, 1.41, 2.0, 2.83, 4.0)


def _layouts(study, n, failures, topo, level):
    """(strategy, layout, r, config) per strategy: domain-aware where the topology allows it, else rack-blind."""

    out = []
    for strategy, r, aware, blind in (("ckpt", 1, None, "cyclic"), ("rep", study.rep_r, "domain-aware", "block"),
                                      ("spare", study.spare_r[n], "domain-aware", "sidon")):
        cfg = None
        if aware is not None and level != "none":
            try:
                cfg, layout = study.timeline_config(strategy, aware, n, r, failures, topo), aware
                cfg.layout_object()  # builds (and caches) the placement: raises if none exists
            except UsageValueError:
                cfg = None
        if cfg is None:
            cfg, layout = study.timeline_config(strategy, blind, n, r, failures, topo), blind
        out.append((strategy, layout if strategy != "ckpt" else "-", r, cfg))
    return out


def _jobs_until_capped(cfg, reps: int, seed, first_rep: int) -> TTTResult:
    """Replications ``first_rep .. first_rep + reps - 1`` of ``cfg`` run in chunks of 1, 2, 4, ... jobs, stopping
    after the first chunk that holds a capped job: the jobs run, as one :class:`~spare_mc.ttt.results.TTTResult`
    (each replication's jobs are the same whatever the chunks, :func:`~spare_mc.ttt.run.simulate_ttt`)."""
    runs, size = [], 1
    while len(runs) < reps:
        res = simulate_ttt(cfg, min(size, reps - len(runs)), rng=seed, first_rep=first_rep + len(runs))
        runs.extend(res.runs)
        if res.n_capped:
            break
        size *= 2
    return TTTResult(cfg, tuple(runs), res.root_entropy, first_rep)


def _arm(res: TTTResult):
    """(mean, 95% interval) of ``ttt_over_t0`` over the jobs of ``res``, or (None, None) if one is capped."""
    if res.n_capped:
        return None, None
    est = res.estimate("ttt_over_t0")
    return est.mean, list(est.ci)


def _shown(mean) -> str:
    return "capped" if mean is None else f"{mean:.3f}"


def run_domain_period_study(study=None, *, period_factors=PERIOD_STUDY_FACTORS, screen_reps: int = 20,
                            confirm_reps: int = 100, progress=None) -> dict:
    """Best checkpoint period per failure-domain level against the theory period (see the module docstring).

    Parameters
    ----------
    study : DomainStudy, optional
        The setting: ``n_values`` must hold one ``N``; ``levels``, ``spare_r``, ``rep_r``, the system, ``n_steps``,
        ``seed`` and ``max_wall_factor`` are used (default: ``DomainStudy(n_values=(600,))``).
    period_factors : sequence of float
        Multiples of the theory period to search; must contain 1.
    screen_reps, confirm_reps : int
        Jobs per screen point, and per confirmation run (fresh replications, paired).
    progress : callable, optional
        Called with a line of text per row.

    Returns
    -------
    dict
        ``{"rows": [...], "settings": ..., "elapsed_s": ...}``; a row: ``n_groups, level, strategy, layout, r,
        theory_period_s, best_factor, best_at_grid_edge`` (the optimum may lie beyond the grid)``, best_period_s,
        screen`` (factor -> screen mean, ``None`` for a point with a capped job; ``screen_jobs``: the jobs run
        there, fewer than ``screen_reps`` once one was capped; ``screen_capped``: their capped fraction; with every
        point capped the best is the theory period), ``ttt_theory`` and ``ttt_theory_ci95``, ``ttt_best`` and
        ``ttt_best_ci95`` (``None`` for an arm with a capped job), ``theory_jobs`` and ``best_jobs`` (the jobs each
        arm ran), ``gain`` and ``gain_ci95`` (``TTT(theory) - TTT(best)`` over ``T0``, paired; else ``gain_note``),
        ``capped_fraction`` (the larger of the arms' capped fractions among the jobs they ran).
    """


    study = DomainStudy(n_values=(600,)) if study is None else study
    if not isinstance(study, DomainStudy):
        raise UsageTypeError(f"`study` must be a DomainStudy, got {type(study).__name__}")
    if len(study.n_values) != 1:
        raise UsageValueError(f"`study.n_values` must hold one N for the period study, got {study.n_values}")
    if isinstance(period_factors, (str, bytes)):
        raise UsageTypeError(f"`period_factors` must be a sequence of numbers, got {period_factors!r}")
    factors = tuple(float(f) for f in period_factors)
    if 1.0 not in factors or any(not f > 0 for f in factors) or len(set(factors)) != len(factors):
        raise UsageValueError(f"`period_factors` must be positive, distinct and contain 1 (the theory period), got "
                              f"{factors}")
    screen_reps = as_int(screen_reps, "screen_reps", min_value=2)
    confirm_reps = as_int(confirm_reps, "confirm_reps", min_value=2)
    n = study.n_values[0]
    t0 = time.perf_counter()
    rows = []
    for level in study.levels + (("all",) if n in study.mixed_n_values else ()):
        failures, topo = study.failure_model(level, n)
        for strategy, layout, r, cfg in _layouts(study, n, failures, topo, level):
            screen = {f: _jobs_until_capped(replace(cfg, ckpt_period_factor=f), screen_reps, study.seed, 0)
                      for f in factors}
            means = {f: _arm(screen[f])[0] for f in factors}  # None: a capped job, out of the choice
            uncapped = [f for f in factors if means[f] is not None]
            best = min(uncapped, key=means.get) if uncapped else 1.0
            runs = {f: _jobs_until_capped(replace(cfg, ckpt_period_factor=f), confirm_reps, study.seed, screen_reps)
                    for f in dict.fromkeys((1.0, best))}
            (theory, theory_ci), (at_best, best_ci) = _arm(runs[1.0]), _arm(runs[best])
            row = {"n_groups": n, "level": level, "strategy": strategy, "layout": layout, "r": r,
                   "theory_period_s": cfg.ckpt_period, "best_factor": best,
                   "best_at_grid_edge": best in (min(factors), max(factors)),
                   "best_period_s": replace(cfg, ckpt_period_factor=best).ckpt_period,
                   "screen": {f"{f:g}": means[f] for f in factors},
                   "screen_jobs": {f"{f:g}": screen[f].reps for f in factors},
                   "screen_capped": {f"{f:g}": screen[f].capped_fraction for f in factors},
                   "ttt_theory": theory, "ttt_theory_ci95": theory_ci, "ttt_best": at_best, "ttt_best_ci95": best_ci,
                   "theory_jobs": runs[1.0].reps, "best_jobs": runs[best].reps,
                   "capped_fraction": max(runs[f].capped_fraction for f in runs)}
            if row["capped_fraction"] > 0:
                row["gain_note"] = "not compared: capped jobs"
            else:
                d = runs[1.0].values("ttt_over_t0") - runs[best].values("ttt_over_t0")
                mean = float(d.mean())
                half = (float(t_ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size))
                        if d.size > 1 and np.any(d != d[0]) else 0.0)
                row["gain"], row["gain_ci95"] = mean, [mean - half, mean + half]
            rows.append(row)
            if progress is not None:
                gain = f"gain {row['gain']:+.3f}" if "gain" in row else row["gain_note"]
                progress(f"N={n} {level:5} {strategy:5} {layout:12} theory period {row['theory_period_s']:8.1f} s: "
                         f"TTT/T0 {_shown(theory)}; best x{best:g}: {_shown(at_best)}, {gain}")
    settings = {k: v for k, v in study.to_dict().items() if k not in ("ttt_reps", "wipeout_reps", "n_values")}
    settings.update(n_groups=n, period_factors=list(factors), screen_reps=screen_reps, confirm_reps=confirm_reps,
                    jobs_stop_at_first_capped=True)  # capped fractions are of the jobs run (see the docstring)
    return {"rows": rows, "settings": settings, "elapsed_s": time.perf_counter() - t0}
