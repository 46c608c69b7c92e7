"""Monte Carlo estimates with their sampling error, and their comparison with a reference value.

:class:`MCEstimate` is the mean of ``n`` iid replications with standard error ``s / sqrt(n)`` and a Student-t
confidence interval. :func:`compare` is what a user runs to check an analytical value against simulation: it
returns the estimate, CI, reference, relative error, z-score, two-sided p-value and whether the two are consistent
at the chosen level (``p >= alpha``). :func:`wilson_interval` is the binomial interval for proportions such as an
empirical ``P(T > m)``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np

from ._lib.dist import beta_ppf, norm_ppf, t_ppf, t_sf
from ._lib.validation import UsageTypeError, UsageValueError, as_choice, as_float, as_int

__all__ = ["MCEstimate", "Comparison", "compare", "wilson_interval", "clopper_pearson_interval", "estimate_mean",
           "ratio_estimate", "screen_looks", "eliminate"]


SUPPORTS = ("real", "nonnegative", "unit", "at_most_one")


@dataclass(frozen=True)
class MCEstimate:
    """Mean of iid replications.

    Attributes
    ----------
    name : str
    mean, se : float
        Sample mean and standard error ``sd / sqrt(n)`` (``sd`` with ``ddof=1``).
    sd : float
    n : int
    level : float
        Confidence level of :attr:`ci`.
    support : {"real", "nonnegative", "unit", "at_most_one"}
        Where the quantity lives; the interval respects it (see :meth:`confidence_interval`).
    censored : int
        Runs that were stopped at a cap and enter the mean at the cap value (0 = none; then the mean is a
        restricted mean, a lower bound on the uncapped mean). A paired estimate of two runs per replication counts
        the capped runs of both, so it may exceed ``n``.
    ci : tuple of float
        The interval at ``level``.
    """

    name: str
    mean: float
    se: float
    sd: float
    n: int
    level: float = 0.95
    support: str = "real"
    censored: int = 0

    def __post_init__(self):
        if self.support not in SUPPORTS:
            raise UsageValueError(f"`support` must be one of {list(SUPPORTS)}, got {self.support!r}")
        # checked when the estimate is made, not when its interval is first read: an estimate built by hand with a
        # negative se or n = 0 would give a reversed interval, or a comparison called consistent on a NaN interval
        object.__setattr__(self, "n", as_int(self.n, "n", min_value=0))
        object.__setattr__(self, "mean", _real_or_nan(self.mean, "mean"))
        lo, hi = _SUPPORT_RANGE[self.support]
        if not (math.isnan(self.mean) or lo - _SUPPORT_TOL <= self.mean <= hi + _SUPPORT_TOL):
            # the interval is computed on the support's scale: outside it, it came out reversed ((1.30, 1.0))
            raise UsageValueError(f"`mean` must lie in [{lo:g}, {hi:g}] for support={self.support!r}, got "
                                  f"mean={self.mean:g}")
        for name in ("se", "sd"):
            v = _real_or_nan(getattr(self, name), name)
            if v < 0:
                raise UsageValueError(f"`{name}` must be >= 0 (or NaN: unknown), got {name}={v:g}")
            object.__setattr__(self, name, v)
        # no upper bound: a paired estimate (a reduction of two strategies' runs) counts the capped runs of both
        object.__setattr__(self, "censored", as_int(self.censored, "censored", min_value=0))
        object.__setattr__(self, "level", _level(self.level))

    @property
    def ci(self) -> tuple[float, float]:
        return self.confidence_interval(self.level)

    def confidence_interval(self, level: float = 0.95) -> tuple[float, float]:
        """Interval at ``level`` that respects the support.

        ``"real"``: the Student-t interval ``mean -/+ t se`` (``t`` the ``(1 + level)/2`` quantile with ``n - 1``
        degrees of freedom). ``"nonnegative"``: the t interval on the log scale, ``mean x exp(-/+ t se / mean)``
        (delta method: ``se(log mean) = se / mean``), so that it never goes below zero however few replications
        there are. ``"unit"`` (proportions in [0, 1]): the t interval on the logit scale, half-width
        ``t se / (mean (1 - mean))``, back-transformed. ``"at_most_one"`` (a reduction ``1 - ratio`` of positive
        quantities): the log-scale interval of ``1 - mean``, so the interval stays below 1. For large ``n`` all of
        them agree to first order. A mean on the boundary of the support with ``se = 0`` gives the point interval.
        """
        level = _level(level)
        if self.n < 2 or not math.isfinite(self.se) or not math.isfinite(self.mean):
            return (math.nan, math.nan)
        t = float(t_ppf(0.5 + level / 2, self.n - 1))
        m, se = self.mean, self.se
        if self.support != "real" and se == 0:  # identical replications: the point (the transforms' round trips
            return (m, m)                        # could miss it by a rounding step)
        # the transformed intervals contain the mean exactly, not only up to a round trip's rounding
        if self.support == "nonnegative" and m > 0:
            h = t * se / m
            return (min(m * math.exp(-h), m), max(m * math.exp(h), m))
        if self.support == "at_most_one" and m < 1:
            h = t * se / (1 - m)
            return (min(1 - (1 - m) * math.exp(h), m), max(1 - (1 - m) * math.exp(-h), m))
        if self.support == "unit" and 0 < m < 1:
            lm = math.log(m / (1 - m))
            h = t * se / (m * (1 - m))
            return (min(1 / (1 + math.exp(-(lm - h))), m), max(1 / (1 + math.exp(-(lm + h))), m))
        lo, hi = m - t * se, m + t * se
        if self.support in ("nonnegative", "unit"):  # a mean on the boundary with spread: clip to the support
            lo = max(lo, 0.0)
            hi = min(hi, 1.0) if self.support == "unit" else hi
        elif self.support == "at_most_one":
            hi = min(hi, 1.0)
        return (lo, hi)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["ci"] = list(self.ci)
        return d


def _level(level) -> float:
    """A confidence level in (0, 1) whose two-sided quantile ``(1 + level) / 2`` is below 1 in floating point (above
    ``1 - 2.2e-16`` it rounds to 1 and the interval is infinite or NaN)."""
    level = as_float(level, "level", positive=True, max_value=1.0, max_inclusive=False)
    if 0.5 + level / 2 >= 1.0:
        raise UsageValueError(f"`level` must be below 1 - 2.2e-16 (the quantile (1 + level)/2 rounds to 1 above "
                              f"it), got level={level!r}")
    return level


def _real_or_nan(value, name: str) -> float:
    """A real number (NaN allowed: unknown) as a float, or a ``UsageTypeError``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise UsageTypeError(f"`{name}` must be a real number, got {value!r} of type {type(value).__name__}")
    return float(value)


#: Where each support's values must lie, up to rounding (:data:`_SUPPORT_TOL`): (low, high).
_SUPPORT_RANGE = {"real": (-math.inf, math.inf), "nonnegative": (0.0, math.inf), "unit": (0.0, 1.0),
                  "at_most_one": (-math.inf, 1.0)}
#: Rounding a value may carry across its support's edge (an availability of -7e-17 from a difference of times).
_SUPPORT_TOL = 1e-9


def _real_values(values, name: str) -> np.ndarray:
    """``values`` as a float64 array, or a ``UsageTypeError`` for strings, None, complex numbers or objects (a
    generator included: numpy would wrap it in a 0-d object array)."""
    x = np.asarray(values)
    if x.dtype.kind not in "biuf":
        raise UsageTypeError(f"`{name}` must be an array of real numbers, got {type(values).__name__} of dtype "
                             f"{x.dtype}")
    return x.astype(np.float64)


#: Beyond this magnitude a sum or a square of values can overflow: :func:`_mean_sd` scales them first.
_BIG = 1e150


def _mean_sd(x: np.ndarray) -> tuple[float, float]:
    """Mean and ``ddof=1`` standard deviation of finite values; values beyond :data:`_BIG` in magnitude are scaled
    by the largest first, so that finite values give a finite mean (1e308 twice: a sum of inf otherwise). The sd
    can still exceed the largest float (then inf)."""
    scale = float(np.max(np.abs(x)))
    if scale <= _BIG:
        return float(x.mean()), float(x.std(ddof=1))
    xs = x / scale
    with np.errstate(over="ignore"):
        return float(xs.mean()) * scale, float(np.float64(xs.std(ddof=1)) * scale)


def one_run_estimate(name: str, values, level: float = 0.95, support: str = "real", censored: int = 0,
                     denominators=None) -> MCEstimate:
    """What a result object's ``estimate`` returns from fewer than 2 replications: the value (or the ratio
    ``numerator / denominator``; NaN with no replication) with NaN standard error, sd and interval -- one run has
    no spread to estimate. :func:`estimate_mean` and :func:`ratio_estimate` themselves refuse such input."""
    x = np.asarray(values, dtype=np.float64)
    if denominators is not None:
        y = np.asarray(denominators, dtype=np.float64)
        mean = float(x[0] / y[0]) if x.size and y[0] != 0 else math.nan
    else:
        mean = float(x[0]) if x.size else math.nan
    return MCEstimate(name, mean, math.nan, math.nan, int(x.size), level, support, censored)


def estimate_mean(values, name: str = "value", level: float = 0.95, *, support: str = "real",
                  censored: int = 0) -> MCEstimate:
    """:class:`MCEstimate` of the mean of ``values`` (1-d, at least 2 finite values inside ``support``).

    ``censored`` counts the replications stopped at a cap (at most their number).
    """
    x = _real_values(values, "values")
    if x.ndim != 1 or x.size < 2:
        raise UsageValueError(f"`values` must be 1-d with at least 2 replications, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise UsageValueError("`values` must be finite")
    support = as_choice(support, "support", SUPPORTS)
    lo, hi = _SUPPORT_RANGE[support]
    out = np.flatnonzero((x < lo - _SUPPORT_TOL) | (x > hi + _SUPPORT_TOL))
    if out.size:  # the interval would be computed on a scale the values do not live on
        raise UsageValueError(f"`values` must lie in [{lo:g}, {hi:g}] for support={support!r}, got "
                              f"{x[out[0]]:g} at index {out[0]}")
    censored = as_int(censored, "censored", min_value=0, max_value=x.size)
    mean, sd = _mean_sd(x)
    return MCEstimate(name, mean, sd / math.sqrt(x.size), sd, int(x.size), level, support, censored)


def ratio_estimate(numerators, denominators, name: str = "ratio", level: float = 0.95, *,
                   support: str = "real") -> MCEstimate:
    """:class:`MCEstimate` of ``E[X] / E[Y]`` from iid pairs ``(X_i, Y_i)`` (a ratio of per-trial sums).

    The estimate is ``R = sum X / sum Y``; its standard error is the delta-method (linearisation) value
    ``sqrt(sum (X_i - R Y_i)^2 / (n (n - 1))) / mean(Y)`` (Cochran, *Sampling Techniques*, 3rd ed., section 6.4),
    the usual interval for per-event averages when the events of one trial are dependent and trials independent.
    ``sd`` is ``se * sqrt(n)`` so that the Student-t interval of :class:`MCEstimate` applies.

    Examples
    --------
    >>> est = ratio_estimate([2, 4, 6], [1, 2, 3])
    >>> est.mean, est.se
    (2.0, 0.0)
    """
    x = _real_values(numerators, "numerators")
    y = _real_values(denominators, "denominators")
    if x.ndim != 1 or x.shape != y.shape or x.size < 2:
        raise UsageValueError(f"`numerators` and `denominators` must be 1-d of equal length >= 2, got shapes {x.shape} "
                              f"and {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise UsageValueError("`numerators` and `denominators` must be finite")
    ybar = y.mean()
    if ybar == 0:
        if x.any():
            raise UsageValueError("`denominators` sum to zero but `numerators` do not: the ratio is undefined")
        return MCEstimate(name, math.nan, math.nan, math.nan, int(x.size), level, support)  # 0 / 0: undefined
    ratio = float(x.sum() / y.sum())
    support = as_choice(support, "support", SUPPORTS)
    lo, hi = _SUPPORT_RANGE[support]
    if not lo - _SUPPORT_TOL <= ratio <= hi + _SUPPORT_TOL:  # the interval would be computed on a scale it misses
        raise UsageValueError(f"the ratio sum(numerators) / sum(denominators) = {ratio:g} must lie in [{lo:g}, "
                              f"{hi:g}] for support={support!r}")
    d = x - ratio * y
    se = float(math.sqrt(np.sum(d * d) / (x.size * (x.size - 1))) / abs(ybar))  # |mean(Y)|: Y may be negative
    return MCEstimate(name, ratio, se, se * math.sqrt(x.size), int(x.size), level, support)


@dataclass(frozen=True)
class Comparison:
    """Monte Carlo estimate vs reference value (see :func:`compare`)."""

    name: str
    estimate: float
    se: float
    ci: tuple[float, float]
    reference: float
    rel_error: float
    z: float
    p_value: float
    alpha: float
    consistent: bool
    n: int

    def to_dict(self) -> dict:
        d = asdict(self)
        d["ci"] = list(self.ci)
        return d


def compare(estimate: MCEstimate, reference: float, *, alpha: float = 1e-3) -> Comparison:
    """Compare a Monte Carlo estimate with a reference value.

    ``z = (estimate - reference) / se``; the two-sided p-value is from the Student t distribution with ``n - 1``
    degrees of freedom (the normal for large n); the two are *consistent* when ``p >= alpha``. The CI returned is
    at level ``1 - alpha``, so ``consistent`` is equivalent to the reference lying inside it.

    Parameters
    ----------
    estimate : MCEstimate
    reference : float
        Exact or closed-form value.
    alpha : float
        Significance level, ``0 < alpha < 1``. Across a grid of comparisons divide it by the number of tests
        (Bonferroni) or use a false-discovery procedure.

    Examples
    --------
    >>> est = MCEstimate("T", mean=10.1, se=0.05, sd=5.0, n=10_000)
    >>> c = compare(est, 10.0)
    >>> round(c.z, 6), c.consistent
    (2.0, True)
    """
    if not isinstance(estimate, MCEstimate):
        raise UsageTypeError(f"`estimate` must be an MCEstimate, got {type(estimate).__name__}")
    reference = as_float(reference, "reference")
    alpha = as_float(alpha, "alpha", positive=True, max_value=1.0, max_inclusive=False)
    if 1.0 - alpha == 1.0:  # the interval's level 1 - alpha would round to 1
        raise UsageValueError(f"`alpha` must be at least 1.2e-16 (1 - alpha, the interval's level, rounds to 1 "
                              f"below it), got alpha={alpha:g}")
    if estimate.n < 2 or not math.isfinite(estimate.se) or not math.isfinite(estimate.mean):
        raise UsageValueError(f"`estimate` must come from at least 2 replications with a finite mean and standard "
                              f"error, got n={estimate.n}, mean={estimate.mean:g}, se={estimate.se:g}")
    if estimate.se == 0.0:
        z = 0.0 if estimate.mean == reference else math.copysign(math.inf, estimate.mean - reference)
    else:
        z = (estimate.mean - reference) / estimate.se
    df = max(estimate.n - 1, 1)
    p = float(2 * t_sf(abs(z), df))
    rel = (estimate.mean - reference) / reference if reference != 0 else math.nan
    sym = replace(estimate, support="real")  # the symmetric interval: inside it <=> p >= alpha
    return Comparison(estimate.name, estimate.mean, estimate.se, sym.confidence_interval(1 - alpha),
                      reference, rel, float(z), p, alpha, bool(p >= alpha), estimate.n)


def _successes_iv(successes, n: int) -> np.ndarray:
    """``successes`` as float64 counts, or a ``UsageTypeError`` / ``UsageValueError``: whole numbers (integer
    dtype, or floats with integer values) in ``[0, n]``, not bools or strings."""
    k = np.asarray(successes)
    if k.dtype.kind not in "iuf":  # not bools (a count, not a flag), strings, None or objects
        raise UsageTypeError(f"`successes` must be a count or an array of counts (integers), got {successes!r} "
                             f"of dtype {k.dtype}")
    k = k.astype(np.float64)
    bad = ~(np.isfinite(k) & (k == np.floor(k)) & (k >= 0) & (k <= n))
    if bad.any():
        raise UsageValueError(f"`successes` must be whole numbers in [0, n] with n={n}, got "
                              f"{k[bad].ravel()[0]:g}" + (f" (at index {np.flatnonzero(bad.ravel())[0]})"
                                                          if k.ndim else ""))
    return k


def wilson_interval(successes, n, level: float = 0.95):
    """Wilson score interval for a binomial proportion (vectorised over ``successes``, whole numbers in
    ``[0, n]``)."""
    n = as_int(n, "n", min_value=1)
    level = _level(level)
    k = _successes_iv(successes, n)
    z = norm_ppf(0.5 + level / 2)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    low = np.where(k == 0, 0.0, np.clip(centre - half, 0, 1))  # exact ends (rounding leaves ~1e-18)
    high = np.where(k == n, 1.0, np.clip(centre + half, 0, 1))
    return low, high


def clopper_pearson_interval(successes, n, level: float = 0.95):
    """Exact (Clopper-Pearson) interval for a binomial proportion, vectorised over ``successes``.

    ``low`` is the ``(1 - level) / 2`` quantile of ``Beta(k, n - k + 1)`` (0 at ``k = 0``) and ``high`` the
    ``(1 + level) / 2`` quantile of ``Beta(k + 1, n - k)`` (1 at ``k = n``), so that each side misses with
    probability at most ``(1 - level) / 2`` whatever the true proportion [S4]. Wider than :func:`wilson_interval`,
    whose coverage is only approximate and fails in the tails at high levels: with 1 success in 200,000 at level
    ``1 - 1e-7`` Wilson's lower bound is 1.65e-7, and ``P(at least 1 success | p = 1.39e-7)`` is 2.7%. Use this one
    for simultaneous (Bonferroni) bands.
    """
    n = as_int(n, "n", min_value=1)
    level = _level(level)
    k = _successes_iv(successes, n)
    a = (1 - level) / 2
    with np.errstate(invalid="ignore"):
        low = np.where(k == 0, 0.0, beta_ppf(a, np.maximum(k, 1), n - k + 1))
        high = np.where(k == n, 1.0, beta_ppf(1 - a, k + 1, np.maximum(n - k, 1)))
    return low, high


# ------------------------------------------------------------------ screening a grid in looks (selection)
def screen_looks(reps: int) -> tuple:
    """The replication counts at which a screen of ``reps`` replications per point looks at its data: ``(4, 7,
    10)`` for 10 (every point runs 4, the points left after the first elimination 3 more, those left after the
    second the last 3); ``(reps,)`` (no elimination) below 8, where the first look would have too few degrees of
    freedom to eliminate anything."""
    reps = as_int(reps, "reps", min_value=2)
    if reps < 8:
        return (reps,)
    return (4, (reps + 5) // 2, reps)


def eliminate(values, done, alive, alpha_look: float, m_points: int):
    """The points left after one look of the screen's elimination.

    ``values`` is ``(points, n)``: the ``n`` replications run so far at each point (common random numbers: column
    ``i`` is replication ``i`` of every point); ``done[p]``: point ``p`` has no capped run; ``alive[p]``: still in.
    Returns the new ``alive`` mask. A point with a capped run cannot be selected (the selection rule) and leaves as
    soon as some alive point has none. Among the others, point ``i`` leaves when for some alive point ``j`` the
    paired one-sided t statistic of the differences ``x_i - x_j`` (``n - 1`` degrees of freedom) exceeds the
    ``1 - alpha_look / (m_points - 1)`` quantile: Bonferroni over the ``m_points - 1`` other points of the grid (its
    full size, not the data-dependent number left). So, under normality of the paired differences, the point with
    the least expected value is eliminated at this look with probability at most ``alpha_look``, whatever the
    others and the earlier looks (a union bound over its comparisons). If no alive point is free of capped runs,
    nothing leaves (the selection then falls back to the least restricted mean).
    """
    x = np.asarray(values, dtype=float)
    alive = np.asarray(alive, dtype=bool).copy()
    cand = alive & np.asarray(done, dtype=bool)
    n = x.shape[1]
    if not cand.any():
        return alive
    alive &= cand
    idx = np.flatnonzero(cand)
    if len(idx) < 2 or n < 2 or m_points < 2:
        return alive
    q = float(t_ppf(1.0 - alpha_look / (m_points - 1), n - 1))
    xs = x[idx]
    d = xs[:, None, :] - xs[None, :, :]  # d[i, j] = x_i - x_j, replication by replication
    mean = d.mean(axis=-1)
    sd = d.std(axis=-1, ddof=1)
    worse = (mean > q * sd / math.sqrt(n)) & (mean > 0)
    alive[idx[worse.any(axis=1)]] = False
    return alive
