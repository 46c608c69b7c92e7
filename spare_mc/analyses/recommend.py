"""From a failure log and a job's facts to a recommendation: the strategy, redundancy ``r`` and checkpoint period
with the least time to train, checked against the log's own events.

:func:`recommend`:

1. fits a failure model to the log (:func:`spare_mc.logs.models.fit_model`: the system-level renewal or per-unit
   renewals) and runs its predictive check (:func:`spare_mc.logs.predictive.predictive_check`); a model that fails
   its check is refused unless ``accept_failed_check=True`` (and the result says so);
2. runs every candidate -- CKPT-only; Rep with ``r = 2``; SPARe with each ``r`` of ``spare_r``; each at every
   checkpoint period of ``period_factors`` times the theory optimum ``T_c*`` -- on ``reps`` jobs under the fitted
   model, all on the same failures (common random numbers: replication ``i`` of every candidate meets the same
   stream);
3. names the best candidate (least mean ``TTT/T0``), the runner-up (the best candidate of another strategy or ``r``)
   and the paired margin runner-up minus best with its 95% interval (mean of the paired differences ± 1.96 standard
   errors);
4. runs the best candidate on the log's own events (:func:`spare_mc.replay_log_ttt`) from start times spaced so that
   the jobs do not overlap (each a different stretch of the log: independent enough for an interval), and says
   whether the model's answer and the replay agree: their difference lies within 1.96 combined standard errors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._lib.validation import UsageTypeError, UsageValueError, as_float, as_int, check_unique
from ..logs.failure_log import FailureLog
from ..logs.models import SystemFit, UnitFit, fit_model
from ..logs.predictive import predictive_check
from ..logs.replay_ttt import replay_log_ttt
from ..model.failures import SystemRenewal
from ..model.topology import Topology
from ..model.unit_renewal import UnitRenewal
from ..ttt.config import TimelineConfig, applicable
from ..ttt.run import simulate_ttt
from ..ttt.stream import simulate_stream_ttt

__all__ = ["Recommendation", "recommend"]

_Z = 1.959963984540054


@dataclass(frozen=True, eq=False)
class Recommendation:
    """What :func:`recommend` found (:meth:`to_dict` is what ``spare-mc recommend --json`` prints)."""

    best: dict
    runner_up: dict
    margin: float
    margin_ci95: tuple
    replay: dict
    fit: object
    check: object
    accepted_failed_check: bool
    candidates: list
    reps: int
    options_not_applied: dict = field(default_factory=dict)

    @property
    def model_check_passed(self):
        """Whether the fitted model passed its predictive check (None: a failure model was given, no log)."""
        return None if self.check is None else self.check.consistent

    @property
    def model_vs_replay_consistent(self):
        return self.replay.get("consistent")

    def to_dict(self) -> dict:
        d = {"best": self.best, "runner_up": self.runner_up, "margin": self.margin,
             "margin_ci95": list(self.margin_ci95), "replay": self.replay,
             "model_check_passed": self.model_check_passed,
             "model_vs_replay_consistent": self.model_vs_replay_consistent,
             "fit": self.fit.to_dict(), "predictive": None if self.check is None else self.check.to_dict(),
             "candidates": self.candidates,
             "reps": self.reps, "options_not_applied": self.options_not_applied,
             "rule": "least mean TTT/T0 under the fitted model over every candidate, all on the same failures "
                     "(common random numbers); margin = runner-up minus best, paired; the replay runs the best "
                     "candidate on the log's own events from non-overlapping start times; consistent when the "
                     "model's mean and the replay's differ by at most 1.96 combined standard errors"}
        if self.check is not None and not self.model_check_passed:
            # the printed flags run the model through `spare-mc ttt`, which must refuse them as `log fit`'s
            d["fit"]["ttt_flags"] = [*d["fit"]["ttt_flags"], "--model-check", "failed"]
        if self.check is None:
            d["label"] = ("a failure model given, not a log: nothing checked it against field data and there is no "
                          "replay; the recommendation holds for that model only")
        elif not self.model_check_passed:
            d["label"] = ("the fitted model FAILED its predictive check (" + ", ".join(self.check.failing)
                          + "); run anyway because accept_failed_check was given: read the numbers with care")
        return d


def _summary(res, cfg) -> dict:
    est = res.estimate("ttt_over_t0")
    return {"strategy": cfg.strategy, "r": cfg.r, "ckpt_period_s": float(cfg.ckpt_period),
            "ttt_over_t0": est.mean, "ttt_over_t0_ci95": list(est.ci), "se": est.se,
            "capped_fraction": res.capped_fraction}


def recommend(log, *, n_steps: int, model: str = "system", unit_level=None, ages=None,
              resolution_s="auto", spare_r=(2, 3, 4), period_factors=(0.5, 1.0, 2.0), reps: int = 100,
              replay_starts: int = 60, sims: int = 200, rng=0, accept_failed_check: bool = False,
              topology: Topology | None = None, **job) -> Recommendation:
    """Recommend a strategy, ``r`` and checkpoint period for a job on the cluster of ``log`` (module docstring).

    Parameters
    ----------
    log : FailureLog, SystemRenewal or UnitRenewal
        The cluster's failure log, on the job's topology (its ``n_groups`` is the job's ``N``); or a failure model
        (with ``topology``), which is then neither fitted, nor checked, nor replayed.
    n_steps : int
        Training steps of the job.
    model : {"system", "unit"}
        The failure model fitted to the log; ``unit_level``, ``ages``, ``resolution_s`` as for
        :func:`spare_mc.logs.models.fit_model`.
    spare_r : sequence of int
        SPARe's redundancies to try (each at most ``N``).
    period_factors : sequence of float
        Checkpoint periods to try, as multiples of the theory optimum ``T_c*``.
    reps : int
        Jobs per candidate under the model.
    replay_starts : int
        Most start times of the replay on the log's own events.
    sims : int
        Simulated windows of the predictive check.
    rng : seed
    accept_failed_check : bool
        Run even when the fitted model fails its predictive check.
    topology : Topology, optional
        The cluster of a failure model given as ``log`` (refused with a log, which has its own).
    **job
        Further :class:`spare_mc.TimelineConfig` options of the job (``compute_s``, ``save_s``, ``restart_s``,
        ``jitter_sd``, checkpointing options, ...); not ``mtbf_s``, ``shape``, ``failures``, ``strategy``, ``r``,
        ``ckpt_period_s`` or ``ckpt_period_factor``, which the recommendation sets. An option of some strategies
        only (``repair``: Rep and SPARe; ``rep_masked_cost``: Rep) applies to those and is dropped for the others
        (:func:`spare_mc.ttt.config.applicable`), as listed in ``options_not_applied``.

    Returns
    -------
    Recommendation
    """
    given_model = isinstance(log, (SystemRenewal, UnitRenewal))
    if not given_model and not isinstance(log, FailureLog):
        raise UsageTypeError(f"`log` must be a FailureLog (spare_mc.read_failure_log), or a failure model "
                             f"(SystemRenewal, UnitRenewal) with its `topology`, got {type(log).__name__}")
    if given_model:
        if not isinstance(topology, Topology):
            raise UsageTypeError(f"a failure model needs `topology` (the cluster: N = its n_groups), got "
                                 f"{type(topology).__name__}")
        fitting = {"model": model != "system", "unit_level": unit_level is not None, "ages": ages is not None,
                   "resolution_s": resolution_s != "auto", "accept_failed_check": accept_failed_check}
        useless = [k for k, v in fitting.items() if v]
        if useless:
            raise UsageValueError(f"{', '.join(f'`{k}`' for k in useless)} has no effect with a failure model "
                                  f"(they fit a log)")
    elif topology is not None:
        raise UsageValueError("`topology` has no effect with a log (the log's own topology is the cluster)")
    taken = sorted(set(job) & {"mtbf_s", "shape", "failures", "strategy", "r", "ckpt_period_s", "ckpt_period_factor",
                               "topology", "n_groups"})
    if taken:
        raise UsageValueError(f"{', '.join(f'`{k}`' for k in taken)}: the recommendation sets these itself (the "
                              f"failure model comes from the log, N from its topology)")
    if job.get("ckpt_every_steps"):
        raise UsageValueError(f"`ckpt_every_steps`={job['ckpt_every_steps']!r}: the recommendation tries checkpoint "
                              f"periods in wall time (`period_factors` times the theory optimum) and reports them; "
                              f"checkpoints every k steps would run another period than it reports")
    if job.get("ckpt_policy", "periodic") != "periodic":
        raise UsageValueError(f"`ckpt_policy`={job['ckpt_policy']!r}: the recommendation tries periodic "
                              f"checkpoints (`period_factors` times the theory optimum) and reports their period, "
                              f"and the replay on a log's events runs periodic ones only; compare a dynamic policy "
                              f"with `spare-mc ttt` or `spare-mc dynamic`")
    if not isinstance(accept_failed_check, bool):
        raise UsageTypeError(f"`accept_failed_check` must be a bool, got {accept_failed_check!r}")
    reps = as_int(reps, "reps", min_value=2)
    replay_starts = as_int(replay_starts, "replay_starts", min_value=2)
    topo = topology if given_model else log.topology
    n = topo.n_groups
    spare_r = [as_int(r, "spare_r", min_value=2, max_value=n) for r in spare_r]
    check_unique(spare_r, "spare_r")
    period_factors = [as_float(f, "period_factors", positive=True) for f in period_factors]
    check_unique(period_factors, "period_factors")
    if not spare_r or not period_factors:
        raise UsageValueError("`spare_r` and `period_factors` must each hold at least one value")
    if given_model:
        fit, check = log, None
    else:
        fit = fit_model(log, model, unit_level=unit_level, ages=ages, resolution_s=resolution_s)
        check = predictive_check(fit, log, sims=sims, rng=rng)
        if not check.consistent and not accept_failed_check:
            raise UsageValueError(f"the {model} model fitted to {log.source} fails its predictive check "
                                  f"({', '.join(check.failing)}: it does not reproduce its own log), so its "
                                  f"recommendation cannot be trusted; try the other model (model='system' or "
                                  f"'unit', ages), or pass accept_failed_check=True to run it anyway")
    if isinstance(fit, (SystemFit, SystemRenewal)):
        base = {"mtbf_s": fit.mtbf_s, "shape": fit.shape}
        if isinstance(fit, SystemRenewal):
            base["live_scaling"] = fit.live_scaling
        stream = None
    else:  # the theory period: exponential at the cluster's long-run rate
        stream = fit.model() if isinstance(fit, UnitFit) else fit
        base = {"mtbf_s": stream.system_mtbf_s(topo), "shape": 1.0}

    def run(cfg):
        if stream is not None:
            return simulate_stream_ttt(cfg, stream, topo, reps, rng=rng)
        return simulate_ttt(cfg, reps, rng=rng)

    kinds = [("ckpt", 1), ("rep", 2)] + [("spare", r) for r in spare_r]
    results, rows = {}, []
    # an option of some strategies only (repairs: Rep and SPARe) is dropped for the others, and listed
    not_applied = {s: sorted(set(job) - set(applicable(job, s))) for s, _ in kinds}
    not_applied = {s: names for s, names in not_applied.items() if names}
    for strategy, r in kinds:
        for f in period_factors:
            cfg = TimelineConfig(strategy, n, r=r, n_steps=n_steps, ckpt_period_factor=f, **base,
                                 **applicable(job, strategy))
            res = run(cfg)
            results[(strategy, r, f)] = (res, cfg)
            rows.append({**_summary(res, cfg), "period_factor": f})
    means = {key: float(np.mean(res.values("ttt_over_t0"))) for key, (res, _) in results.items()}
    best_key = min(means, key=means.get)
    others = [k for k in means if k[:2] != best_key[:2]]
    ru_key = min(others, key=means.get)
    best = {**_summary(*results[best_key]), "period_factor": best_key[2]}
    runner = {**_summary(*results[ru_key]), "period_factor": ru_key[2]}
    diff = results[ru_key][0].values("ttt_over_t0") - results[best_key][0].values("ttt_over_t0")
    se = float(np.std(diff, ddof=1) / math.sqrt(diff.size))
    margin = float(diff.mean())
    if given_model:
        replay = {"strategy": best["strategy"], "r": best["r"], "ttt_over_t0": math.nan,
                  "ttt_over_t0_ci95": [math.nan, math.nan], "starts": 0, "consistent": None,
                  "note": "no log: nothing to replay"}
    else:
        replay = _replay(log, results[best_key][1], best, replay_starts, rng)
    return Recommendation(best, runner, margin, (margin - _Z * se, margin + _Z * se), replay, fit, check,
                          check is not None and not check.consistent, rows, reps, not_applied)


def _replay(log, cfg, best, most, rng) -> dict:
    """The best candidate on the log's own events, from non-overlapping start times."""
    span = 1.5 * best["ttt_over_t0"] * cfg.t0_s  # room for a job a little longer than the model's mean
    count = min(most, int(log.duration_s // span))
    out = {"strategy": cfg.strategy, "r": cfg.r, "ckpt_period_s": float(cfg.ckpt_period), "starts": count}
    if count < 2:
        out.update(ttt_over_t0=math.nan, ttt_over_t0_ci95=[math.nan, math.nan], consistent=None,
                   note=f"the log's window ({log.duration_s:.6g} s) holds fewer than 2 non-overlapping jobs of "
                        f"{span:.6g} s: no replay")
        return out
    starts = np.arange(count) * (log.duration_s / count)
    res = replay_log_ttt(cfg, log, starts_s=starts, rng=rng)
    v = res.result.values("ttt_over_t0")
    se = float(np.std(v, ddof=1) / math.sqrt(v.size))
    mean = float(v.mean())
    consistent = bool(abs(mean - best["ttt_over_t0"]) <= _Z * math.hypot(se, best["se"]))
    out.update(ttt_over_t0=mean, ttt_over_t0_ci95=[mean - _Z * se, mean + _Z * se], se=se,
               within_window=int(res.within_window.sum()), consistent=consistent)
    return out
