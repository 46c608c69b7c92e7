"""Weibull lifetimes by censored maximum likelihood, with Wald or profile-likelihood intervals (the names of
``__all__`` are public and re-exported by :mod:`spare_mc.logs.fit`; the others serve that module's fits).

The data of a fit are one or more datasets ``(log x, failed, weight, d, sum of log x over failures)``: lifetimes
``x`` (observed where ``failed``, right-censored elsewhere), with multiplicities. Several datasets may share one
shape (each keeps its scale): :func:`fit_shared` maximises the profile likelihood in the shape (Brent's method on
the summed profile score) and returns the inverse observed information of ``(log k, log lam_1, ...)``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass

import numpy as np
from scipy import special as _sp

from .._lib.dist import chi2_ppf, norm_ppf, scipy_optimize
from .._lib.validation import UsageValueError, as_choice, as_float, as_vector

__all__ = ["CI_METHODS", "LevelFit", "weibull_mle"]

#: Shape range searched (the range the failure models accept).
_SHAPE_BOUNDS = (0.05, 50.0)
#: Interval methods of the fits: Wald on the log scale from the observed information, or profile likelihood.
CI_METHODS = ("wald", "profile")

def weibull_sums(k, lx, fail, w, b):
    """Sums of the censored Weibull log-likelihood at shape ``k``, log-scale ``b``."""
    u = k * (lx - b)
    z = np.exp(u)
    return (w * z).sum(), (w * z * u).sum(), (w * z * u * u).sum()


def _profile_score(k, data):
    """d/dk of the profile log-likelihood (scale maximised out), summed over levels sharing the shape ``k``."""
    s = 0.0
    for lx, fail, w, d, sf in data:
        m = lx.max()
        e = w * np.exp(k * (lx - m))
        s += d / k + sf - d * (e * lx).sum() / e.sum()
    return s


def _log_scale(k, lx, w, d):
    m = lx.max()
    return m + math.log((w * np.exp(k * (lx - m))).sum() / d) / k


def fit_shared(data):
    """Joint MLE of one shape and one scale per dataset; returns ``(k, b, cov, loglik)`` (``b`` log-scales, ``cov``
    the inverse observed information of ``(log k, b_1, ..., b_m)``)."""
    lo, hi = _SHAPE_BOUNDS
    f_lo, f_hi = _profile_score(lo, data), _profile_score(hi, data)
    if not (f_lo > 0 > f_hi):
        side = "below" if f_lo <= 0 else "above"
        raise UsageValueError(f"the Weibull shape MLE lies {side} the range [{lo}, {hi}] (too few or degenerate "
                              f"lifetimes)")
    k = scipy_optimize().brentq(_profile_score, lo, hi, args=(data,), xtol=1e-12, rtol=1e-12)
    m = len(data)
    b = np.array([_log_scale(k, lx, w, d) for lx, _, w, d, _ in data])
    H = np.zeros((m + 1, m + 1))
    loglik = 0.0
    for L, (lx, fail, w, d, sf) in enumerate(data):
        sz, szu, szu2 = weibull_sums(k, lx, fail, w, b[L])
        H[0, 0] += -d * k * b[L] + k * sf - szu - szu2
        H[0, L + 1] = H[L + 1, 0] = -d * k + k * sz + k * szu
        H[L + 1, L + 1] = -k * k * sz
        loglik += d * math.log(k) - d * k * b[L] + (k - 1) * sf - sz
    cov = np.linalg.inv(-H)
    return k, b, cov, loglik


def _loglik(k, b, lx, fail, w, d, sf):
    return d * math.log(k) - d * k * b + (k - 1) * sf - float((w * np.exp(k * (lx - b))).sum())


def _profile_loglik(k, data, fixed=None):
    """Log-likelihood at shape ``k`` with every scale maximised out, except dataset ``fixed[0]`` whose log-scale is
    ``fixed[2]`` (``fixed[1] == "scale"``) or whose log-mean is ``fixed[2]`` (``"mean"``)."""
    total = 0.0
    for L, (lx, fail, w, d, sf) in enumerate(data):
        if fixed is not None and fixed[0] == L:
            b = fixed[2] if fixed[1] == "scale" else fixed[2] - math.lgamma(1.0 + 1.0 / k)
        else:
            b = _log_scale(k, lx, w, d)
        total += _loglik(k, b, lx, fail, w, d, sf)
    return total


def _max_over_shape(data, fixed):
    lo, hi = (math.log(x) for x in _SHAPE_BOUNDS)
    res = scipy_optimize().minimize_scalar(lambda a: -_profile_loglik(math.exp(a), data, fixed), bounds=(lo, hi),
                                           method="bounded", options={"xatol": 1e-9})
    return -float(res.fun)


def _profile_interval(fun, center, step, target, lo_limit=-math.inf, hi_limit=math.inf):
    """The interval ``{x : fun(x) >= target}`` around ``center`` (``fun`` unimodal, maximal at ``center``), in a
    log parameter: bracket outward by doubling ``step``, then Brent's method. A side that reaches its limit
    stays open there."""
    ends = []
    for sign, limit in ((-1.0, lo_limit), (1.0, hi_limit)):
        inner, h = center, step
        while True:
            outer = center + sign * h
            if (sign < 0 and outer <= limit) or (sign > 0 and outer >= limit):
                outer = limit
                if fun(outer) >= target:
                    ends.append(limit)
                    break
            if fun(outer) < target:
                ends.append(scipy_optimize().brentq(lambda x: fun(x) - target, min(inner, outer),
                                                    max(inner, outer), xtol=1e-10))
                break
            inner, h = outer, 2.0 * h
    return ends[0], ends[1]


def _profile_cis(data, k, b, cov, level):
    """Profile-likelihood intervals of the shape and of each dataset's scale and mean, on the log scale."""
    q = float(chi2_ppf(level, 1))
    top = _profile_loglik(k, data)
    target = top - q / 2
    lo, hi = (math.log(x) for x in _SHAPE_BOUNDS)
    a = math.log(k)
    sk = _profile_interval(lambda x: _profile_loglik(math.exp(x), data), a, max(math.sqrt(cov[0, 0]), 1e-6),
                           target, lo, hi)
    for end, bound in ((sk[0], lo), (sk[1], hi)):
        if end == bound:  # the likelihood does not fall below the target within the shapes searched
            warnings.warn(f"the profile interval of the Weibull shape reaches the searched bound "
                          f"{math.exp(bound):g} ({_SHAPE_BOUNDS[0]:g}..{_SHAPE_BOUNDS[1]:g}): it is open on that side "
                          f"(the data hardly constrain the shape there; more failures narrow it)", UserWarning,
                          stacklevel=4)
    out = []
    for L in range(len(data)):
        se = max(math.sqrt(cov[L + 1, L + 1]), 1e-6)
        sc = _profile_interval(lambda x, L=L: _max_over_shape(data, (L, "scale", x)), b[L], se, target)
        m = b[L] + math.lgamma(1.0 + 1.0 / k)
        sm = _profile_interval(lambda x, L=L: _max_over_shape(data, (L, "mean", x)), m, se, target)
        out.append(tuple(tuple(math.exp(v) for v in pair) for pair in (sk, sc, sm)))
    return out


def lifetime_data(lifetimes, censored, weights):
    """One validated dataset ``(log x, failed, weight, d, sum of log x over failures)`` of lifetimes ``x`` (censored
    where ``censored``; ``None``: none) with multiplicities ``weights`` (``None``: 1 each); lifetimes of weight 0
    are dropped."""
    x = as_vector(lifetimes, "lifetimes")
    c = np.zeros(x.size, bool) if censored is None else as_vector(censored, "censored", "biu", size=x.size)
    w = np.ones(x.size) if weights is None else as_vector(weights, "weights", size=x.size)
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise UsageValueError("`lifetimes` must be finite and > 0")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise UsageValueError("`weights` must be finite and >= 0")
    if math.fsum(w) > 2.0**53:  # multiplicities: 1e300 each overflowed the likelihood sums, blamed on the data
        raise UsageValueError(f"`weights` (multiplicities of the lifetimes) must sum to at most 2^53 = 9.0e15, "
                              f"got {math.fsum(w):.3g}")
    fail = ~c
    d = float((w * fail).sum())
    if d < 2:
        raise UsageValueError(f"a Weibull fit needs at least 2 observed (uncensored) lifetimes, got {d:g}")
    keep = w > 0
    lx = np.log(x[keep])
    return lx, fail[keep], w[keep], d, float((w * fail * np.log(x))[keep].sum())


@dataclass(frozen=True)
class LevelFit:
    """The Weibull fit of one level's unit lifetimes.

    Attributes
    ----------
    level : str
    shape : float
        MLE of the Weibull shape ``k``.
    scale_s : float
        MLE of the scale ``lam`` (s).
    mean_s : float
        Mean lifetime of one unit, ``lam Gamma(1 + 1/k)`` (its MTBF, s).
    shape_ci, scale_ci, mean_ci : tuple of float
        Wald intervals at :attr:`ci_level` on the log scale (observed information, delta method for the mean).
    se_log_shape, se_log_scale, se_log_mean : float
        Standard errors of the logs.
    units, failures, censored : int
        Units at the level, observed lifetimes (failures) and right-censored intervals (units never failing count
        once each).
    exposure_s : float
        Total time at risk (sum of all lifetimes and censored intervals).
    loglik : float
        The maximised log-likelihood of this level's data (under a shared shape: at the shared MLE).
    shared_shape : bool
        Whether the shape was fitted jointly with other levels.
    ci_level : float
    ci_method : {"wald", "profile"}
        How :attr:`shape_ci`, :attr:`scale_ci` and :attr:`mean_ci` were computed (the standard errors are always
        the observed-information ones).
    """

    level: str
    shape: float
    scale_s: float
    mean_s: float
    shape_ci: tuple
    scale_ci: tuple
    mean_ci: tuple
    se_log_shape: float
    se_log_scale: float
    se_log_mean: float
    units: int
    failures: int
    censored: int
    exposure_s: float
    loglik: float
    shared_shape: bool = False
    ci_level: float = 0.95
    ci_method: str = "wald"

    def confidence_interval(self, param: str, level: float = 0.95) -> tuple:
        """Wald interval of ``"shape"``, ``"scale_s"`` or ``"mean_s"`` at ``level`` on the log scale (whatever
        :attr:`ci_method`: profile intervals exist only at :attr:`ci_level`)."""
        param = as_choice(param, "param", ("shape", "scale_s", "mean_s"))
        level = as_float(level, "level", positive=True, max_value=1.0, max_inclusive=False)
        z = float(norm_ppf(0.5 + level / 2))
        v = getattr(self, param)
        se = {"shape": self.se_log_shape, "scale_s": self.se_log_scale, "mean_s": self.se_log_mean}[param]
        return (v * math.exp(-z * se), v * math.exp(z * se))

    def to_dict(self) -> dict:
        d = asdict(self)
        for key in ("shape_ci", "scale_ci", "mean_ci"):
            d[key] = list(d[key])
        return d


def make_fits(names, k, b, cov, extra, level, ci="wald", data=None):
    """A :class:`LevelFit` per name from the MLE ``(k, b, cov)`` of :func:`fit_shared` on ``data`` (one dataset per
    name): intervals at ``level`` by ``ci`` (``"profile"`` needs ``data``); ``extra[L]`` gives the other fields of
    name ``L`` (units, failures, censored, exposure_s, loglik)."""
    z = float(norm_ppf(0.5 + level / 2))
    profile = _profile_cis(data, k, b, cov, level) if ci == "profile" else None
    dpsi = -float(_sp.digamma(1.0 + 1.0 / k)) / k  # d log Gamma(1 + 1/k) / d log k
    fits = {}
    for L, name in enumerate(names):
        lam = math.exp(b[L])
        mean = lam * math.gamma(1.0 + 1.0 / k)
        g = np.zeros(len(names) + 1)
        g[0], g[L + 1] = dpsi, 1.0
        se_k, se_b = math.sqrt(cov[0, 0]), math.sqrt(cov[L + 1, L + 1])
        se_m = math.sqrt(float(g @ cov @ g))
        if profile is None:
            cis = ((k * math.exp(-z * se_k), k * math.exp(z * se_k)),
                   (lam * math.exp(-z * se_b), lam * math.exp(z * se_b)),
                   (mean * math.exp(-z * se_m), mean * math.exp(z * se_m)))
        else:
            cis = profile[L]
        fits[name] = LevelFit(name, k, lam, mean, *cis, se_k, se_b, se_m, **extra[L], shared_shape=len(names) > 1,
                              ci_level=level, ci_method=ci)
    return fits


def weibull_mle(lifetimes, censored=None, *, weights=None, level: float = 0.95, ci: str = "wald") -> LevelFit:
    """Maximum-likelihood Weibull fit of right-censored lifetimes, with Wald intervals.

    Parameters
    ----------
    lifetimes : 1-d array_like of real numbers
        Positive lifetimes (s). Strings, bools and 2-d input are refused, not converted.
    censored : 1-d array_like of bool (or 0/1), optional
        True where the lifetime is right-censored (the unit was still alive then). Default: none.
    weights : 1-d array_like of real numbers, optional
        Multiplicity of each entry (e.g. many units never failing, all censored at the window end); they must
        sum to at most ``2^53`` (counts exact in floating point).
    level : float
    ci : {"wald", "profile"}
        Wald intervals on the log scale (default), or profile-likelihood intervals (better with few failures,
        slower).

    Returns
    -------
    LevelFit
        With ``level="lifetimes"`` and ``units`` the number of entries (weighted).

    Notes
    -----
    The log-likelihood of Weibull(``k``, ``lam``) with ``d`` observed lifetimes ``x_i`` and censored ``c_j`` is
    ``d log k - d k log lam + (k - 1) sum log x_i - sum (x/lam)^k`` (the last sum over every entry). For fixed
    ``k`` the scale is ``lam^k = sum x^k / d``; the shape solves the profile score
    ``1/k + mean(log x_i) - sum x^k log x / sum x^k = 0``, which is decreasing in ``k`` (Brent's method on
    [0.05, 50]). Intervals: the inverse observed Fisher information of ``(log k, log lam)`` (analytic Hessian), Wald
    intervals on the log scale back-transformed, and the delta method for ``log mean = log lam + log Gamma(1 +
    1/k)``. With ``ci="profile"``: the set of values whose profile log-likelihood (the other parameters maximised
    out) is within ``chi2_1(level) / 2`` of the maximum. Lawless, *Statistical Models and Methods for Lifetime
    Data*, 2nd ed. (2003), sections 2.4 and 5.2; Meeker and Escobar, *Statistical Methods for Reliability Data*
    (1998), section 8.3.

    Examples
    --------
    >>> x = np.random.default_rng(0).weibull(0.8, 2000) * 100.0
    >>> fit = weibull_mle(x)
    >>> fit.shape_ci[0] < 0.8 < fit.shape_ci[1], fit.scale_ci[0] < 100.0 < fit.scale_ci[1]
    (True, True)
    """
    level = as_float(level, "level", positive=True, max_value=1.0, max_inclusive=False)
    ci = as_choice(ci, "ci", CI_METHODS)
    lx, fail, w, d, sf = lifetime_data(lifetimes, censored, weights)
    data = [(lx, fail, w, d, sf)]
    k, b, cov, loglik = fit_shared(data)
    extra = {"units": round(w.sum()), "failures": round(d), "censored": round((w * ~fail).sum()),
             "exposure_s": float((w * np.exp(lx)).sum()), "loglik": loglik}
    return make_fits(["lifetimes"], k, b, cov, [extra], level, ci, data)["lifetimes"]
