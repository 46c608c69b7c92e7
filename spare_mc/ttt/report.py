"""The timeline's Monte Carlo next to its theory, as ``spare-mc ttt`` reports it: :func:`step_ttt` (the step
model against :func:`spare_mc.ttt.optimize.theory_ttt`) and :func:`classical_check` (the timeline under the
classical rules against Daly's exact expected wall time and its optima). Each returns a result whose ``to_dict()``
is the command's ``--json`` output without its stamp.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .._lib.dist import norm_sf
from ..theory.closed_forms import ckpt_period_daly, ckpt_period_young, daly_expected_wall_time, daly_optimal_interval
from .config import TimelineConfig
from .optimize import theory_ttt
from .results import TTTResult
from .run import simulate_ttt
from .theory import TheoryTTT, best_runnable_period, classical_config, classical_expected_ttt_s, classical_segment_s

__all__ = ["StepTTT", "step_ttt", "ClassicalCheck", "classical_check", "AVAILABILITY_DEFINITION"]

#: What the step model's availability is (``availability_definition`` of :meth:`StepTTT.to_dict`).
AVAILABILITY_DEFINITION = ("uptime / wall clock; uptime = kept step time (useful + redundant + patch compute + "
                           "all-reduce + ReCtlr/shrink); not checkpoints, restarts, lost work")


def _period_rule(cfg: TimelineConfig) -> str:
    """How the step model's checkpoint period was set, in words."""
    return ("given" if cfg.ckpt_period_s is not None else
            f"every {cfg.ckpt_every_steps} steps" if cfg.ckpt_every_steps else
            f"{cfg.ckpt_period_factor:g} x the {cfg.ckpt_policy} policy's period, re-evaluated "
            f"at every step boundary" if cfg.ckpt_policy != "periodic" else
            f"{cfg.ckpt_period_factor:g} x the theory optimum T_c*")


@dataclass(frozen=True, eq=False)
class StepTTT:
    """What :func:`step_ttt` found: the Monte Carlo (``run``), its config, the seed, the checkpoint period's rule in
    words and the theory (``theory``)."""

    run: TTTResult
    config: TimelineConfig
    seed: object
    ckpt_period_rule: str
    theory: TheoryTTT

    def to_dict(self) -> dict:
        """The seed, :meth:`TTTResult.summary`, the config, the period rule, the theory and what availability
        means."""
        return {"seed": self.seed, **self.run.summary(), "config": self.config.to_dict(),
                "ckpt_period_rule": self.ckpt_period_rule, "theory": self.theory.to_dict(),
                "availability_definition": AVAILABILITY_DEFINITION}


def step_ttt(cfg: TimelineConfig, reps: int, *, seed=0) -> StepTTT:
    """The time to train of ``cfg`` by Monte Carlo (:func:`spare_mc.ttt.run.simulate_ttt`) next to its theory
    (:func:`spare_mc.ttt.optimize.theory_ttt`).

    Parameters
    ----------
    cfg : TimelineConfig
    reps : int
        Replications.
    seed : int or seed form of :func:`simulate_ttt`
        Its ``rng``.

    Returns
    -------
    StepTTT
    """

    res = simulate_ttt(cfg, reps, rng=seed)
    rule = _period_rule(cfg)
    return StepTTT(res, cfg, seed, rule, theory_ttt(cfg))


@dataclass(frozen=True, eq=False)
class ClassicalCheck:
    """What :func:`classical_check` found. :meth:`to_dict` has the Monte Carlo's summary (without the step model's
    groups, r and layout, which mean nothing here), the config, the solve time, the interval and its rule, the
    segment, the mean time to train and its 95% CI in seconds against Daly's exact value (relative error, ``z``,
    two-sided p-value, ``comparable`` = no run hit the wall-clock cap), and ``optimum`` (a ``warning`` when runs were
    capped). ``optimum`` has the continuous optimum (segments of any length: ``continuous_ttt_s``), Young's and
    Daly's higher-order intervals, each with Daly's formula at the interval itself (``continuous_ttt_s``) and at the
    segment a run with that interval has (``segment_s``, a whole number of steps; ``exact_ttt_s``), and the best
    runnable period (``best_runnable_period``: the whole number of steps with the least exact value, which is the
    period the command runs when none is given)."""

    run: TTTResult
    config: TimelineConfig
    seed: object
    period_given: bool

    def to_dict(self) -> dict:
        """The check as ``spare-mc ttt --model classical --json`` prints it (without its stamp)."""
        cfg, res = self.config, self.run
        est = res.estimate("ttt_over_t0")  # a capped run enters at the cap: the mean and its CI are one estimator
        exact = classical_expected_ttt_s(cfg)
        mean, se = est.mean * cfg.t0_s, est.se * cfg.t0_s
        z = (mean - exact) / se if se > 0 else math.nan
        solve = cfg.n_steps * cfg.compute_s
        restart = cfg.remote_restart  # Daly's R: the whole restart, its checkpoint load included
        tau_opt, e_opt = daly_optimal_interval(solve, cfg.save_s, restart, cfg.mtbf_s)
        at = {"continuous_optimum": tau_opt, "young": ckpt_period_young(cfg.save_s, cfg.mtbf_s),
              "daly_higher_order": ckpt_period_daly(cfg.save_s, cfg.mtbf_s)}
        k_best, e_best, exhaustive = best_runnable_period(cfg)
        # (the groups, r and layout of the step model mean nothing here: every failure stops the whole system;
        # the config keeps them, as the timeline ran)
        summary = {k: v for k, v in res.summary().items() if k not in ("n_groups", "r", "layout")}
        out = {"seed": self.seed, "model": "classical", **summary, "config": cfg.to_dict(),
               "solve_s": solve, "ckpt_period_s": cfg.ckpt_period,
               "ckpt_period_rule": ("given" if self.period_given else
                                    "the whole number of steps with the least exact E[T_w]"),
               "segment_s": classical_segment_s(cfg),
               "ttt_s_mean": mean, "ttt_s_ci95": [t * cfg.t0_s for t in est.ci], "exact_ttt_s": exact,
               "relative_error": (mean - exact) / exact, "z": z,
               "p_value": float(2 * norm_sf(abs(z))) if math.isfinite(z) else math.nan,
               "comparable": res.n_capped == 0,
               "optimum": {name: self._interval(tau, solve, restart) for name, tau in at.items()}}
        out["optimum"]["continuous_optimum"]["continuous_ttt_s"] = e_opt
        out["optimum"]["best_runnable_period"] = {
            "interval_s": k_best * cfg.compute_s, "steps": k_best, "segment_s": k_best * cfg.compute_s,
            "exact_ttt_s": e_best, "searched": "every whole number of steps" if exhaustive else
            "the 2,000,000 whole numbers of steps around the continuous optimum"}
        if res.n_capped:
            out["comparable"] = False
            out["warning"] = (f"{res.n_capped} runs hit the wall-clock cap: the mean is a lower bound and cannot be "
                              f"compared with the exact value; raise --max-wall-factor")
        return out

    def _interval(self, tau, solve, restart) -> dict:
        """An interval ``tau`` of the optimum block: Daly's formula with segments of ``tau`` exactly
        (``continuous_ttt_s``), and the segment a run with ``ckpt_period_s = tau`` has -- a whole number of steps,
        ``ceil(tau / T_comp)`` -- with its exact value (``exact_ttt_s``)."""
        cfg = self.config
        if tau <= 0:  # free checkpoints: the continuous optimum is the limit tau -> 0, not a segment
            return {"interval_s": tau, "continuous_ttt_s": solve * math.exp(restart / cfg.mtbf_s),
                    "segment_s": None, "exact_ttt_s": None}
        run = replace(cfg, ckpt_period_s=tau)
        return {"interval_s": tau,
                "continuous_ttt_s": daly_expected_wall_time(solve, tau, cfg.save_s, restart, cfg.mtbf_s),
                "segment_s": classical_segment_s(run), "exact_ttt_s": classical_expected_ttt_s(run)}


def classical_check(reps: int, *, seed=0, ckpt_period_s: float | None = None, **rules) -> ClassicalCheck:
    """The timeline under the classical rules (:func:`spare_mc.ttt.theory.classical_config`) by Monte Carlo,
    against Daly's exact expected wall time and the optimal intervals.

    Parameters
    ----------
    reps : int
        Replications.
    seed : int or seed form of :func:`simulate_ttt`
        Its ``rng``.
    ckpt_period_s : float or None
        The interval; None: the whole number of steps with the least exact expected wall time.
    **rules
        Other :class:`TimelineConfig` fields, as :func:`classical_config` takes them.

    Returns
    -------
    ClassicalCheck
    """

    cfg = classical_config(ckpt_period_s=ckpt_period_s, **rules)
    res = simulate_ttt(cfg, reps, rng=seed)
    return ClassicalCheck(res, cfg, seed, ckpt_period_s is not None)
