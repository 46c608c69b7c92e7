"""The slow, obviously correct twin of :class:`spare_mc.model.unit_renewal.UnitStream`: one unit at a time, each
first failure drawn by inverting its exact distribution function numerically (bisection), not by the shortcuts of
the fast sampler (the length-biased Gamma draw, the closed-form residual)."""

from __future__ import annotations

import math

import numpy as np
from scipy import special as _sp

from ..model.unit_renewal import UnitAges, UnitRenewal


def _bisect(cdf, u, hi):
    """The ``x`` with ``cdf(x) = u`` (``cdf`` increasing from 0), by bisection to relative 1e-12."""
    while cdf(hi) < u:
        hi *= 2.0
    lo = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if cdf(mid) < u:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return 0.5 * (lo + hi)


def first_failure_slow(model: UnitRenewal, age_s: float | None, known: bool, rng) -> float:
    """One unit's first failure: new (``age_s`` None, ``ages="new"``), stationary (``age_s`` None), or of age
    ``age_s`` (``known``) / at least ``age_s``."""
    k, lam = model.shape, model.scale_s
    mu = model.mean_s

    def surv(x):
        return math.exp(-((x / lam) ** k))

    def stat_tail(x):  # P(A > x) = P(R > x) for the stationary age / forward recurrence: Q(1/k, (x/lam)^k)
        return float(_sp.gammaincc(1.0 / k, (x / lam) ** k))

    u = rng.random()
    if age_s is None and model.ages == "new":
        return _bisect(lambda x: 1.0 - surv(x), u, lam)
    if age_s is None:  # forward recurrence time: P(R <= x) = 1 - Q(1/k, (x/lam)^k)
        return _bisect(lambda x: 1.0 - stat_tail(x), u, mu)
    a = float(age_s)
    if not known:  # the stationary age given A >= a
        tail_a = stat_tail(a)
        a = a + _bisect(lambda y: 1.0 - stat_tail(a + y) / tail_a, u, mu)
        u = rng.random()
    s_a = surv(a)
    return _bisect(lambda x: 1.0 - surv(a + x) / s_a, u, lam)


def unit_stream_slow(model: UnitRenewal, n_units: int, t_s: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Every failure in ``[0, t_s)`` of ``n_units`` units, unit by unit: ``(times, units)`` sorted by time, then
    unit."""
    rng = np.random.default_rng(rng)
    times, units = [], []
    for u in range(n_units):
        if isinstance(model.ages, UnitAges):
            t = first_failure_slow(model, model.ages.age_s[u], bool(model.ages.known[u]), rng)
        else:
            t = first_failure_slow(model, None, False, rng)
        while t < t_s:
            times.append(t)
            units.append(u)
            t += model.scale_s * (-math.log(1.0 - rng.random())) ** (1.0 / model.shape)
    order = np.lexsort((np.array(units, dtype=np.int64), np.array(times)))
    return np.array(times)[order], np.array(units, dtype=np.int64)[order]


def advance_chains_slow(next_s: np.ndarray, t_s: float, lam: float, k: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """The round-by-round twin of :func:`spare_mc.model.unit_renewal.advance_chains`: every chain short of ``t_s``
    records its next failure and draws one lifetime, until none is (in place on ``next_s``)."""
    new_t, new_c = [], []
    active = np.flatnonzero(next_s < t_s)
    while active.size:
        new_t.append(next_s[active].copy())
        new_c.append(active)
        next_s[active] += lam * rng.weibull(k, size=active.size)
        active = active[next_s[active] < t_s]
    if not new_t:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    return np.concatenate(new_t), np.concatenate(new_c)
