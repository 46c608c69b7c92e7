"""The predictive check of a fitted failure model: does the model reproduce the log it was fitted to?

:func:`predictive_check` simulates the log's own window under the fitted model (same topology, same start state,
times rounded to the log's resolution) ``sims`` times and compares four statistics of the log with their simulated
distributions:

``failures``
    the number of events (the model's subset of the log: every event for the system model, the events of its level
    for a per-unit model);
``interarrival``
    the distribution of the gaps between successive events: the Kolmogorov-Smirnov distance between the log's gaps
    and the gaps of a reference set of simulations (a second, independent set);
``event_times``
    where in the window the events fall (the same distance on the event times): an early-life burst at the log start
    that the model does not have, or the reverse, shows here;
``wipeouts``
    the wipe-outs of a layout (``layout``, ``r``) replaying the log (:func:`spare_mc.replay_log`) against replaying
    each simulated log the same way. Both are replayed **without repairs** (a dead group stays dead until the next
    wipe-out): the fitted model has no repair times, so its simulated logs have none, and a log replayed with its
    own repairs has far fewer wipe-outs than the same events without them (a group back after an hour rarely
    completes a wipe-out); the statistic compares how the failures cluster across groups, which is what the model
    describes.

Each p-value is a Monte Carlo one, ``(1 + #{simulated as extreme}) / (1 + sims)`` (two-sided for the counts: twice
the smaller tail, capped at 1), so it is valid although a log's gaps are not independent (a superposition of renewal
processes is not a renewal process). The model is **consistent** with its log when every p-value is at least
``alpha / 4`` (Bonferroni over the four). The parameters were fitted to the same log, which makes the check
conservative (a fitted model sits closer to its data than the true one would).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._lib.resources import check_memory
from .._lib.seeding import generator
from .._lib.validation import UsageTypeError, UsageValueError, as_float, as_int
from .failure_log import FailureLog
from .models import LevelsModel, SystemFit, UnitFit
from .replay import replay_log

__all__ = ["STATISTICS", "PredictiveCheck", "predictive_check"]

STATISTICS = ("failures", "interarrival", "event_times", "wipeouts")
#: Below this many events the check says it has little power (:attr:`PredictiveCheck.low_power`).
FEW_EVENTS = 30


def _ks(sample: np.ndarray, ref_sorted: np.ndarray) -> float:
    """Kolmogorov-Smirnov distance between the empirical law of ``sample`` and that of ``ref_sorted``.

    ``sup_x |F_s(x) - F_r(x)|`` over both step functions. Between two successive points of ``sample`` ``F_s`` is
    constant and ``F_r`` non-decreasing, so the supremum is reached at a point ``s_i`` of ``sample`` (the
    right-continuous values) or just below it (the left limits ``F_s(s_i-)``, ``F_r(s_i-)``); every one of these
    values is also a value at a point of either set (the left limit at ``s_i`` is the value at the largest point of
    either set below ``s_i``). So this gives exactly the distance over the union of both sets
    (:func:`spare_mc.testing.predictive.ks_union_slow`, its twin), at a cost of ``O(n log m)`` for ``n`` points
    against a reference of ``m``, not ``O((n + m) log m)``: the check compares each of ``sims`` windows with a
    reference of ``sims`` windows, which made its cost quadratic in ``sims``.
    """
    if sample.size == 0 or ref_sorted.size == 0:
        return 1.0 if sample.size != ref_sorted.size else 0.0
    s = np.sort(sample)
    fs_right = np.searchsorted(s, s, side="right") / s.size
    fs_left = np.searchsorted(s, s, side="left") / s.size
    fr_right = np.searchsorted(ref_sorted, s, side="right") / ref_sorted.size
    fr_left = np.searchsorted(ref_sorted, s, side="left") / ref_sorted.size
    return float(max(np.max(np.abs(fs_right - fr_right)), np.max(np.abs(fs_left - fr_left))))


def _p_two_sided(obs: float, sims: np.ndarray) -> float:
    n = sims.size
    lo = (1 + np.sum(sims <= obs)) / (n + 1)
    hi = (1 + np.sum(sims >= obs)) / (n + 1)
    return float(min(1.0, 2 * min(lo, hi)))


def _p_upper(obs: float, sims: np.ndarray) -> float:
    return float((1 + np.sum(sims >= obs)) / (sims.size + 1))


@dataclass(frozen=True, eq=False)
class PredictiveCheck:
    """The result of :func:`predictive_check`."""

    observed: dict
    simulated_ci95: dict
    p_values: dict
    alpha: float
    sims: int
    layout: str
    r: int

    @property
    def consistent(self) -> bool:
        return all(p >= self.alpha / len(self.p_values) for p in self.p_values.values())

    @property
    def failing(self) -> list:
        return [name for name, p in self.p_values.items() if p < self.alpha / len(self.p_values)]

    @property
    def low_power(self) -> bool:
        """Fewer than :data:`FEW_EVENTS` events in the log: a pass says little (three tickets in an hour fit a
        system model with shape 0.29 and pass)."""
        return self.observed["failures"] < FEW_EVENTS

    def to_dict(self) -> dict:
        low = ({"low_power": True,
                "power_note": f"only {self.observed['failures']} events: the check has little power to reject a "
                              f"wrong model, so a pass is weak evidence"} if self.low_power else {"low_power": False})
        return {**low, "observed_failures": self.observed["failures"],
                "simulated_failures_ci95": self.simulated_ci95["failures"],
                "interarrival_p": self.p_values["interarrival"], "event_times_p": self.p_values["event_times"],
                "failures_p": self.p_values["failures"],
                "observed_wipeouts": self.observed["wipeouts"],
                "simulated_wipeouts_ci95": self.simulated_ci95["wipeouts"], "wipeouts_p": self.p_values["wipeouts"],
                "wipeout_layout": {"layout": self.layout, "r": self.r, "repairs": "ignored"},
                "consistent": self.consistent, "failing": self.failing, "alpha": self.alpha, "sims": self.sims,
                "rule": f"Monte Carlo p-values from {self.sims} simulated windows; consistent when each of the "
                        f"{len(self.p_values)} is >= alpha/{len(self.p_values)} = "
                        f"{self.alpha / len(self.p_values):.4g} (Bonferroni)"}


def _subset(log: FailureLog, fit) -> FailureLog:
    """The events of ``log`` the model describes (a per-unit model: its level)."""
    if isinstance(fit, SystemFit):
        return log
    names = fit.modelled_levels if isinstance(fit, LevelsModel) else (fit.level,)
    m = np.isin(log.level, [log.levels.index(name) for name in names])
    rep = None if log.repair_s is None else log.repair_s[m]
    return FailureLog(log.time_s[m], log.level[m], log.unit[m], rep, log.duration_s, log.topology, log.levels,
                      log.source)


#: Bytes per simulated event of the check's reference set at its peak (:func:`predictive_check`): the windows'
#: times, the list of their gaps and the gaps joined, 8 bytes each.
_REF_BYTES = 24
#: Events the reference windows of the gaps and event times hold, about (at least one window, at most ``sims``).
_REF_EVENTS = 2_000_000


def _expected_events(fit, window_s: float) -> float:
    """The model's long-run number of events in a window: ``window / MTBF`` (the system), ``units window /
    mean`` (per-unit renewals; exact for the stationary start)."""
    if isinstance(fit, SystemFit):
        return window_s / fit.mean_s
    if isinstance(fit, LevelsModel):
        return sum(fit.topology.unit_count(level) * window_s / mean for level, _, mean in fit.parts)
    return fit.units * window_s / fit.mean_s


def _wipeouts(log: FailureLog, layout: str, r: int) -> int:
    """Wipe-outs of ``layout`` replaying ``log`` kill-only (its repair times, if any, ignored: module docstring)."""
    return replay_log(log, layout, r=r, repairs="ignore").epochs


def predictive_check(fit, log: FailureLog, *, sims: int = 200, layout: str = "cyclic", r: int = 2,
                     alpha: float = 0.05, rng=0) -> PredictiveCheck:
    """Simulate the log's window under ``fit`` and compare (module docstring).

    Parameters
    ----------
    fit : SystemFit, UnitFit or LevelsModel
    log : FailureLog
        The log the model was fitted to.
    sims : int
        Simulated windows whose statistics the log's are ranked among (at least ``8 / alpha``: fewer could never
        reject); a second, independent set of windows (``sims`` of them, or fewer for a large log: about 2 million
        events) is the reference law of the gaps and event times.
    layout, r : str, int
        The layout whose wipe-outs are compared (default cyclic with r = 2).
    alpha : float
        Level of the check (each of the four tests at ``alpha / 4``).
    rng : seed

    Returns
    -------
    PredictiveCheck
    """
    if not isinstance(fit, (SystemFit, UnitFit, LevelsModel)):
        raise UsageTypeError(f"`fit` must be a SystemFit, UnitFit or LevelsModel (spare_mc.logs.models), got "
                             f"{type(fit).__name__}")
    if not isinstance(log, FailureLog):
        raise UsageTypeError(f"`log` must be a FailureLog, got {type(log).__name__}")
    if log.topology != fit.topology or log.duration_s != fit.window_s:
        raise UsageValueError("`log` must be the log `fit` was fitted to (same topology and window)")
    r = as_int(r, "r", min_value=1)
    alpha = as_float(alpha, "alpha", positive=True, max_value=1.0, max_inclusive=False)
    # a two-sided Monte Carlo p-value is at least 2 / (sims + 1): below alpha/4 only with sims + 1 > 8 / alpha
    least = math.floor(2 * len(STATISTICS) / alpha)
    sims = as_int(sims, "sims", min_value=1)
    if sims < least:
        raise UsageValueError(f"`sims`={sims} is too few for a check at alpha={alpha:g}: its smallest two-sided "
                              f"p-value 2/(sims + 1) would never fall below alpha/{len(STATISTICS)}, so the check "
                              f"could never fail; give at least {least}")
    rng = generator(rng)
    obs_log = _subset(log, fit)
    W = log.duration_s
    obs_t = obs_log.time_s
    # the reference law of the gaps and event times: enough windows for about 2 million events (at most `sims`, at
    # least one); the p-values are exact whatever its size (the log and each simulated window meet the same
    # reference). It holds the windows' times, then their gaps and times sorted: checked before any is drawn
    per_window = max(obs_t.size, _expected_events(fit, W))
    n_ref = min(sims, max(1, math.ceil(_REF_EVENTS / max(1.0, per_window))))
    check_memory(_REF_BYTES * n_ref * per_window,
                 lambda: f"the predictive check's reference of {n_ref} simulated windows of about "
                         f"{per_window:,.0f} events each",
                 "check a shorter window of the log")
    ref = [fit.sample_log(W, rng).time_s for _ in range(n_ref)]
    ref_gaps = np.concatenate([np.diff(x) for x in ref])
    ref_gaps.sort()
    ref_times = np.concatenate(ref)
    del ref
    ref_times.sort()
    stats = {name: np.empty(sims) for name in STATISTICS}
    for i in range(sims):
        s = fit.sample_log(W, rng)
        stats["failures"][i] = len(s)
        stats["interarrival"][i] = _ks(np.diff(s.time_s), ref_gaps)
        stats["event_times"][i] = _ks(s.time_s, ref_times)
        stats["wipeouts"][i] = _wipeouts(s, layout, r) if len(s) else 0
    obs = {"failures": int(obs_t.size), "interarrival": _ks(np.diff(obs_t), ref_gaps),
           "event_times": _ks(obs_t, ref_times), "wipeouts": _wipeouts(obs_log, layout, r)}
    p = {"failures": _p_two_sided(obs["failures"], stats["failures"]),
         "interarrival": _p_upper(obs["interarrival"], stats["interarrival"]),
         "event_times": _p_upper(obs["event_times"], stats["event_times"]),
         "wipeouts": _p_two_sided(obs["wipeouts"], stats["wipeouts"])}
    ci = {name: [float(np.quantile(stats[name], 0.025)), float(np.quantile(stats[name], 0.975))]
          for name in ("failures", "wipeouts")}
    return PredictiveCheck(obs, ci, p, alpha, sims, layout, r)
