"""Time-to-train theory of a configuration, without simulation: the classical checkpoint/restart model and the
availability model's ``J = S / A*``.

Where the time-to-train theory lives:

- here, what reads a :class:`spare_mc.ttt.config.TimelineConfig`: the classical model (Daly, FGCS 2006) as the
  timeline under :data:`CLASSICAL_RULES` (:func:`classical_config`, :func:`is_classical`) and its exact expected wall
  time on the kernel's clock (:func:`classical_segment_s`, :func:`classical_expected_ttt_s`); the closed-form time to
  train of a setting, :func:`theory_ttt` (:class:`TheoryTTT`);
- :mod:`spare_mc.ttt.period`: the theory checkpoint period ``T_c*`` and the costs it weighs
  (:func:`~spare_mc.ttt.period.theory_ckpt_period_s`, :func:`~spare_mc.ttt.period.theory_costs`,
  :func:`~spare_mc.ttt.period.mean_wipeout_index`), below the config, whose default period it is;
- :mod:`spare_mc.ttt.exact_ttt`: the exact expected time to train of the step model (a Markov chain);
- :mod:`spare_mc.theory.closed_forms`: the config-free formulas (Daly's, the paper's ``J(r)``, the availability).

Theory (no simulation): ``J(r) = S / A*(T_f)`` with ``A* = 2 T_s T_f / T_c*^2`` and ``T_f = E[T] m`` (``T_s`` and
``T_r`` the config's mean checkpoint cost and restart, :func:`spare_mc.ttt.period.theory_costs`); ``S`` is 1
(CKPT-only), ``N / floor(N / r)`` (Rep; ``r`` when ``r`` divides ``N``) or the exact per-epoch lower bound
``E[sum c(k)] / E[T]`` (SPARe unit stride; the random-holders value for Sidon). The paper's own ``J(r)`` (its
``mu`` and ``S``-bound approximations) and ``r* = floor(log2 N + 0.833)`` are reported next to it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from .._kernels import timeline as _tk
from .._lib.validation import UsageTypeError, UsageValueError
from ..mc.reorder import exact_stack_bound_sum
from ..model.failures import DomainFailures
from ..theory.closed_forms import (availability, daly_expected_wall_time, daly_optimal_interval, normalized_ttt)
from .config import US_PER_S, TimelineConfig
from .period import mean_wipeout_index, theory_ckpt_period_s, theory_costs

__all__ = ["CLASSICAL_RULES", "classical_config", "classical_expected_ttt_s", "classical_segment_s", "is_classical",
           "best_runnable_period", "theory_ttt", "TheoryTTT", "THEORY_ASSUMPTIONS", "theory_caveats"]

_HORIZON_F = float(_tk.HORIZON_US)


#: The classical checkpoint/restart model (Daly, FGCS 2006) as one value of each of the timeline's rules: no
#: redundancy, no all-reduce (a step is ``T_comp`` of compute; the solve time is ``n_steps x T_comp``), exponential
#: failures at rate ``1/M`` at all times, detected when they arrive, a restart that a failure starts again, a
#: checkpoint after every segment including the last, no jitter. See :func:`classical_config`.
CLASSICAL_RULES = {"strategy": "ckpt", "r": 1, "allreduce_s": 0.0, "shape": 1.0, "jitter_sd": 0.0,
                   "live_scaling": True, "detection": "immediate", "restart_failures": "restart_again",
                   "final_checkpoint": True, "restart_growth": "constant", "ckpt_failure": "completes",
                   "ckpt_every_steps": 0, "failures": None, "ckpt_policy": "periodic"}


def classical_config(**kw) -> TimelineConfig:
    """The timeline under :data:`CLASSICAL_RULES`, the setting of Daly's exact expected wall time.

    ``kw`` are :class:`TimelineConfig` fields: the solve time is ``n_steps x compute_s``, the interval ``tau`` is
    ``ckpt_period_s`` (a checkpoint at the first step boundary ``tau`` or more after the last checkpoint or restart,
    so a segment is ``ceil(tau / T_comp)`` steps: see :func:`classical_segment_s`; default: the exact optimum of
    :func:`spare_mc.theory.closed_forms.daly_optimal_interval`, rounded to the best whole number of steps), ``save_s``
    is ``delta``, ``restart_s + load_s`` is ``R`` and ``mtbf_s`` is ``M``. ``n_groups`` does not matter (default
    2, which leaves the most room for the wall-clock cap on the integer clock): every failure wipes out at once. A
    rule given with another value than the classical one is an error naming it.

    Examples
    --------
    >>> cfg = classical_config(n_steps=100, compute_s=60.0, ckpt_period_s=600.0, save_s=30.0, restart_s=300.0,
    ...                        mtbf_s=3600.0)
    >>> classical_segment_s(cfg), round(classical_expected_ttt_s(cfg), 1)
    (600.0, 7483.2)
    """
    for name, value in CLASSICAL_RULES.items():
        if name in kw and kw[name] != value:
            raise UsageValueError(f"`{name}`={kw[name]!r} contradicts the classical model, whose rule is "
                                  f"{name}={value!r}: drop it")
    kw = {**CLASSICAL_RULES, "n_groups": 2, **kw}
    if kw.get("ckpt_period_s") is None and kw.get("ckpt_period_factor", 1.0) != 1.0:
        raise UsageValueError(f"`ckpt_period_factor`={kw['ckpt_period_factor']!r} scales the step model's T_c*, not "
                              f"the classical optimum: give `ckpt_period_s` instead (default: the whole number of "
                              f"steps with the least exact expected time)")
    if kw.get("ckpt_period_s") is None:
        probe = TimelineConfig(**{**kw, "ckpt_period_s": 1.0})  # validates the durations first
        kw["ckpt_period_s"] = _best_classical_period(probe)
    return TimelineConfig(**kw)


def _best_classical_period(cfg: TimelineConfig) -> float:
    """The interval of whole steps ``k T_comp`` with the least exact expected time (:func:`best_runnable_period`)."""
    return best_runnable_period(cfg)[0] * cfg.compute_s


#: The most step counts :func:`best_runnable_period` evaluates one by one.
_EXHAUSTIVE_STEPS = 2_000_000


def best_runnable_period(cfg: TimelineConfig) -> tuple[int, float, bool]:
    """The segment the timeline can run with the least exact expected wall time: ``(k, E[T_w], exhaustive)``.

    A classical run's segment is a whole number ``k`` of steps (:func:`classical_segment_s`), and the last one is
    what is left, so the exact expected time of the runnable periods is :func:`classical_expected_ttt_s` at
    ``ckpt_period_s = k T_comp``, ``k = 1 .. n_steps``; with the shorter last segment it is not unimodal in ``k``
    (n_steps 99, T_comp 1 s, delta 8.06 s, R 62.3 s, M 32.95 s: walking from the continuous optimum stops at 17
    steps, 20 are better), so every ``k`` is evaluated up to the first ``K`` at which one full segment alone,
    ``M e^(R/M) (e^((K T_comp + delta)/M) - 1)``, costs more than the best found (every longer segment costs more).
    When that range exceeds 2,000,000 step counts, the 2,000,000 around the continuous optimum are evaluated and
    ``exhaustive`` is False. Ties go to the shorter segment.
    """
    if not is_classical(cfg):
        raise UsageValueError("`cfg` does not follow the classical rules: build it with classical_config")
    n = cfg.n_steps
    c_us = round(cfg.compute_s * US_PER_S)
    c = c_us / US_PER_S
    d = round(cfg.save_s * US_PER_S) / US_PER_S
    r = (round(cfg.restart * US_PER_S) + round(cfg.load_s * US_PER_S)) / US_PER_S
    m = cfg.mtbf_s
    tau = daly_optimal_interval(n * c, d, r, m)[0]
    k0 = min(max(1, round(tau / c)), n)

    def exact(k):
        return daly_expected_wall_time(n * c, min(k, n) * c, d, r, m)

    best = exact(k0)
    scale = m * math.exp(r / m) if r / m < 700 else math.inf
    # one full segment of K steps alone costs more than `best` beyond this K
    top = n if not math.isfinite(best / scale) else min(n, max(k0, math.ceil((m * math.log1p(best / scale) - d) / c)))
    lo, hi = 1, top
    exhaustive = hi - lo + 1 <= _EXHAUSTIVE_STEPS
    if not exhaustive:
        lo = max(1, k0 - _EXHAUSTIVE_STEPS // 2)
        hi = min(top, lo + _EXHAUSTIVE_STEPS - 1)
    ks = np.arange(lo, hi + 1, dtype=np.int64)
    q, rem = np.divmod(n, ks)
    with np.errstate(over="ignore", invalid="ignore"):  # beyond a float: inf, never the minimum
        v = q * np.expm1((ks * c + d) / m) + np.where(rem > 0, np.expm1((rem * c + d) / m), 0.0)
    v[~np.isfinite(v)] = np.inf
    if np.isfinite(v).any():  # the few within rounding of the least, by the exact formula (as the run is judged)
        near = ks[v <= v.min() * (1 + 1e-9)]
        cands = [(exact(int(k)), int(k)) for k in near] + [(best, k0)]
    else:
        cands = [(best, k0)]
    value, k = min(cands)
    return k, value, exhaustive


def is_classical(cfg: TimelineConfig) -> bool:
    """Whether ``cfg`` follows every rule of :data:`CLASSICAL_RULES`."""
    return all(getattr(cfg, name) == value for name, value in CLASSICAL_RULES.items())


def classical_segment_s(cfg: TimelineConfig) -> float:
    """The compute of one segment between checkpoints of a classical run: ``k T_comp`` with ``k = ceil(tau /
    T_comp)`` steps (at least 1; ``tau = T_c``), computed on the integer-microsecond clock the kernel uses."""
    c_us = round(cfg.compute_s * US_PER_S)
    tau_us = round(cfg.ckpt_period * US_PER_S) if cfg.ckpt_period * US_PER_S < _HORIZON_F else int(_tk.HORIZON_US)
    k = max(1, -(-tau_us // c_us))
    return min(k, cfg.n_steps) * c_us / US_PER_S


def classical_expected_ttt_s(cfg: TimelineConfig) -> float:
    """Daly's exact expected wall time (:func:`spare_mc.theory.closed_forms.daly_expected_wall_time`) for a classical
    config: solve time ``n_steps x T_comp``, interval :func:`classical_segment_s`, ``delta = T_s``, ``R`` the whole
    restart (``T_r`` plus the checkpoint's load ``load_s``), ``M`` the MTBF."""
    if not is_classical(cfg):
        raise UsageValueError("`cfg` does not follow the classical rules: build it with classical_config")
    restart = (round(cfg.restart * US_PER_S) + round(cfg.load_s * US_PER_S)) / US_PER_S  # as the kernel's clock has it
    return daly_expected_wall_time(cfg.n_steps * round(cfg.compute_s * US_PER_S) / US_PER_S, classical_segment_s(cfg),
                                   round(cfg.save_s * US_PER_S) / US_PER_S, restart, cfg.mtbf_s)


@dataclass(frozen=True)
class TheoryTTT:
    """Closed-form time to train ``J = S / A*`` of one setting, with its pieces (see the module docstring).

    Attributes
    ----------
    r : int
    mean_T : float
        ``E[T]``, failures until a wipe-out in uniform order.
    T_f_s : float
        Mean time between wipe-outs ``E[T] m`` (s).
    ckpt_period_s : float
        The availability-optimal period ``T_c*`` (s).
    availability : float
        The availability model at ``ckpt_period_s``: ``A* = 2 T_s T_f / T_c*^2`` at the optimum (see
        :func:`theory_ttt`).
    S : float
        Mean compute layers per step (1, ``N / n_sets`` for Rep -- ``r`` when ``r`` divides ``N`` -- or the exact
        ``c(k)`` bound).
    ttt_over_t0 : float
        ``S / A*``.
    paper_J : float or None
        The paper's own ``J(r)`` (SPARe, r >= 2).
    applies : bool
        Whether the setting meets the closed form's assumptions (:func:`theory_caveats`).
    why : str or None
        Why not, when it does not.
    assumptions : str
        What the closed form assumes (:data:`THEORY_ASSUMPTIONS`).
    """

    r: int
    mean_T: float
    T_f_s: float
    ckpt_period_s: float
    availability: float
    S: float
    ttt_over_t0: float
    paper_J: float | None = None
    applies: bool = True
    why: str | None = None
    assumptions: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


#: What the closed form assumes (``assumptions`` of :class:`TheoryTTT`).
THEORY_ASSUMPTIONS = ("failures of the whole system at a constant mean interval mtbf_s (a renewal process; its "
                      "shape enters only through the mean), each killing one uniformly random live group; dead "
                      "groups stay dead until the global restart; the live groups' lower failure rate ignored; "
                      "periodic checkpoints at the theory period T_c*; J = S / A*, with the lost work of an "
                      "exponential time between wipe-outs")


def theory_caveats(cfg: TimelineConfig) -> list:
    """The ways ``cfg`` leaves the assumptions of :func:`theory_ttt` (:data:`THEORY_ASSUMPTIONS`), in words; empty
    when the closed form describes it.

    A per-unit model (:class:`spare_mc.PerGPU`, :class:`spare_mc.DomainFailures`) with shape ``k != 1`` starts every
    unit new at the job's start: its failures are not a renewal of the whole system at mean interval ``mtbf_s``
    (for ``k < 1`` they come far faster early on; a per-GPU Weibull with ``k = 0.42`` gave a theory TTT/T0 of 44.3
    against 5.25 simulated). Domain failures kill several groups at once. Repairs bring groups back before the
    global restart. A period other than the theory's ``T_c*`` (given, scaled, every few steps or a dynamic policy)
    is not the period the closed form is evaluated at.
    """
    out = []
    f = cfg.failures
    if f is not None and getattr(f, "shape", 1.0) != 1.0:
        out.append(f"per-unit Weibull lifetimes of shape {f.shape:g} != 1 start new at the job's start: the system's "
                   f"failure rate is not constant (k < 1: many more failures early on), while the theory takes "
                   f"failures at the constant mean interval mtbf_s")
    if isinstance(f, DomainFailures):
        out.append(f"domain failures ({', '.join(f.level_names)}) kill several groups at once; the theory's E[T] "
                   f"counts single-group failures in uniform order")
    if cfg.repair != "none":
        out.append(f"repair={cfg.repair!r} brings failed groups back before the global restart; the theory keeps them "
                   f"dead until it")
    if cfg.ckpt_policy != "periodic":
        out.append(f"the run's checkpoints follow ckpt_policy={cfg.ckpt_policy!r}, not the theory's periodic T_c*")
    elif cfg.ckpt_every_steps:
        out.append(f"the run checkpoints every {cfg.ckpt_every_steps} steps, not at the theory's period T_c*")
    elif cfg.ckpt_period_s is not None or cfg.ckpt_period_factor != 1.0:
        period, run = theory_ckpt_period_s(cfg), cfg.ckpt_period
        if not math.isclose(run, period, rel_tol=1e-9):
            out.append(f"the run's checkpoint period {run:.6g} s is not the theory's T_c* = {period:.6g} s, at which "
                       f"the theory is evaluated")
    return out


def theory_ttt(cfg: TimelineConfig) -> TheoryTTT:
    """Closed-form ``TTT/T0`` estimate ``J = S / A`` for a setting, with its pieces.

    ``A`` is the availability model's value :func:`spare_mc.availability` at the returned period
    (:func:`spare_mc.ttt.period.theory_ckpt_period_s`), with the same checkpoint cost ``T_s``, time between wipe-outs
    ``T_f`` and restart ``T_r`` (:func:`spare_mc.ttt.period.theory_costs`: the restart's growth with ``N``, the load,
    in-memory copies and asynchronous saves included); at the optimal period it is ``A* = 2 T_s T_f / T_c*^2``.
    ``paper_J`` is the paper's own formula, with the plain ``restart_s``. ``assumptions`` says what the closed form
    assumes (:data:`THEORY_ASSUMPTIONS`); ``applies`` is False, with ``why``, when ``cfg`` leaves them
    (:func:`theory_caveats`: per-unit Weibull lifetimes of shape != 1, domain failures, repairs, another period):
    then the theory is no estimate of the run's time to train.
    """
    if not isinstance(cfg, TimelineConfig):
        raise UsageTypeError(f"`cfg` must be a TimelineConfig, got {type(cfg).__name__}")
    mean_t = mean_wipeout_index(cfg)
    ts, tf, tr = theory_costs(cfg)
    period = theory_ckpt_period_s(cfg)
    if ts <= 0:  # free checkpoints (an asynchronous save that costs no compute): the model with T_s = 0
        a_star = tf / (tf + tr + period / 2)
    elif period > ts:
        a_star = availability(period, ts, tf, tr)
    else:  # pragma: no cover - the optimum always exceeds T_s, and an asynchronous save's clamp is >= save_s > T_s
        raise RuntimeError(f"the theory period {period} s does not exceed the checkpoint cost {ts} s")
    if cfg.strategy == "ckpt":
        s = 1.0
    elif cfg.strategy == "rep":
        s = cfg.replica_sets().compute_factor  # N / n_sets (r when r divides N)
    else:
        s = exact_stack_bound_sum("cyclic" if cfg.layout == "cyclic" else "random", cfg.n_groups, cfg.r).c_mean
    paper_j = (normalized_ttt(cfg.n_groups, cfg.r, cfg.mtbf_s, cfg.save_s, cfg.restart_s)
               if cfg.strategy == "spare" and cfg.r >= 2 else None)
    caveats = theory_caveats(cfg)
    return TheoryTTT(cfg.r, mean_t, tf, period, a_star, s, s / a_star, paper_j, not caveats,
                     "; ".join(caveats) or None, THEORY_ASSUMPTIONS)
