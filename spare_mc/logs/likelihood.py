"""Weibull likelihoods of the observations a failure log gives, and their maximisation with Wald and profile
intervals (the engine of :mod:`spare_mc.logs.models`).

An observation is one of five kinds (``k`` shape, ``lam`` scale, ``S(x) = exp(-(x/lam)^k)``, ``f`` the density, ``mu
= lam Gamma(1 + 1/k)``):

=============== ============================================================== ========================================
kind            what was seen                                                  log-likelihood term
=============== ============================================================== ========================================
``exact``       a lifetime ``x``                                               ``log f(x)``
``censored``    a lifetime longer than ``x`` (the window ended)                ``log S(x)``
``first``       the first failure, at ``x``, of a unit in its stationary       ``log S(x) - log mu``
                state (the forward recurrence time, density ``S(x)/mu``)
``first_cens``  no failure of a stationary unit in the ``x`` seconds seen      ``log Q(1/k, (x/lam)^k)``
``rounded``     a gap of ``j`` ticks between two event times recorded at the   ``log P_j``
                log's resolution ``delta``
=============== ============================================================== ========================================

**Rounded gaps** (the system-level fit; ties at the log's resolution). With both event times truncated to multiples
of ``delta`` and the first one's position in its tick uniform, a true gap ``x`` is recorded as ``j delta`` with
probability ``max(0, 1 - |x/delta - j|)`` (a hat of half-width one tick), so

    P_j = E[hat(X/delta - j)] = (I((j-1) delta, j delta) - I(j delta, (j+1) delta)) / delta,   I(a, b) = int_a^b S,

with ``S = 1`` below 0 (``P_0 = (delta - I(0, delta)) / delta``, the probability of a tie). ``I(a, b) = mu (P(1/k,
z_b) - P(1/k, z_a))`` with ``z = (x/lam)^k`` and ``P`` the regularised lower incomplete gamma (its upper complement
``Q`` where ``z`` is large, to keep the digits). The terms of successive gaps share a recorded time, so this is a
composite likelihood: its maximum is consistent, and the tests check its intervals' coverage by simulation.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special as _sp

from .._lib.dist import chi2_ppf, norm_ppf, scipy_optimize
from .._lib.validation import UsageValueError

KINDS = ("exact", "censored", "first", "first_cens", "rounded")
#: Shape range searched (the range the failure models accept).
SHAPE_BOUNDS = (0.05, 50.0)


def _log_q(a, z):
    """``log Q(a, z)`` (regularised upper incomplete gamma), with its asymptotic form where ``Q`` underflows."""
    q = _sp.gammaincc(a, z)
    with np.errstate(divide="ignore"):
        out = np.log(q)
    tiny = q < 1e-280
    if np.any(tiny):
        zt = z[tiny]
        out[tiny] = (a - 1.0) * np.log(zt) - zt - _sp.gammaln(a) + np.log1p((a - 1.0) / zt)
    return out


#: Gauss-Legendre nodes and weights of the gap probabilities' quadrature (8 per half-tick).
_GL_X, _GL_W = np.polynomial.legendre.leggauss(8)


def log_gap_probabilities(j: np.ndarray, k: float, lam: float, delta: float) -> np.ndarray:
    """``log P_j``: the log-probability that a Weibull(k, lam) gap is recorded as ``j`` ticks of ``delta`` (module
    docstring).

    ``j = 0, 1`` (the hat reaches 0, where the density of ``k < 1`` is infinite): the incomplete-gamma form.
    ``j >= 2``: ``P_j = int f(x) hat(x/delta - j) dx`` by 8-point Gauss-Legendre on each half-tick, where ``f`` is
    smooth (the incomplete-gamma form would be a second difference of nearly equal numbers there, losing about
    ``2 log10(lam/delta)`` digits).
    """
    j = np.asarray(j, dtype=float)
    out = np.empty(j.size)
    a = 1.0 / k
    mu = lam * math.gamma(1.0 + a)
    near = j < 2
    if np.any(near):
        jn = j[near]
        z = (np.array([0.0, 1.0, 2.0]) * delta / lam) ** k
        lo, up = _sp.gammainc(a, z), _sp.gammaincc(a, z)
        i01 = mu * np.where(z[1] < a, lo[1] - lo[0], up[0] - up[1])  # int_0^delta S
        i12 = mu * np.where(z[2] < a, lo[2] - lo[1], up[1] - up[2])  # int_delta^2delta S
        p = np.where(jn == 0, (delta - i01) / delta, (i01 - i12) / delta)
        with np.errstate(divide="ignore"):
            out[near] = np.log(np.maximum(p, 0.0))
    far = ~near
    if np.any(far):
        jf = j[far][:, None]
        half = 0.5 * (1.0 + _GL_X)[None, :]
        xl = (jf - 1.0 + half) * delta
        xr = (jf + half) * delta

        def log_f(x):
            y = x / lam
            return math.log(k / lam) + (k - 1.0) * np.log(y) - y**k

        terms = np.concatenate([log_f(xl) + np.log(0.5 * delta * _GL_W * half),
                                log_f(xr) + np.log(0.5 * delta * _GL_W * (1.0 - half))], axis=1)
        out[far] = _sp.logsumexp(terms, axis=1)
    return out


def gap_probabilities(j: np.ndarray, k: float, lam: float, delta: float) -> np.ndarray:
    """``P_j`` (:func:`log_gap_probabilities`)."""
    return np.exp(log_gap_probabilities(j, k, lam, delta))


class Likelihood:
    """A sum of Weibull log-likelihood terms over weighted observations of the kinds of the module docstring."""

    def __init__(self, delta: float = 0.0):
        self.parts = {kind: (np.zeros(0), np.zeros(0)) for kind in KINDS}
        self.delta = float(delta)

    def add(self, kind: str, x, weights=None) -> Likelihood:
        x = np.asarray(x, dtype=float).ravel()
        w = np.ones(x.size) if weights is None else np.asarray(weights, dtype=float).ravel()
        keep = w > 0
        x, w = x[keep], w[keep]
        if kind == "rounded":
            x = np.rint(x)
        if x.size > 4096:  # aggregate repeated values: ticks of a rounded log repeat a lot
            x, inv = np.unique(x, return_inverse=True)
            w = np.bincount(inv, weights=w, minlength=x.size)
        ox, ow = self.parts[kind]
        self.parts[kind] = (np.concatenate([ox, x]), np.concatenate([ow, w]))
        return self

    def n_failures(self) -> float:
        return float(sum(self.parts[k][1].sum() for k in ("exact", "first", "rounded")))

    def loglik(self, k: float, lam: float) -> float:
        if not (k > 0 and lam > 0 and math.isfinite(k) and math.isfinite(lam)):
            return -math.inf
        total = 0.0
        x, w = self.parts["exact"]
        if x.size:
            total += float((w * (math.log(k / lam) + (k - 1.0) * np.log(x / lam) - (x / lam) ** k)).sum())
        for kind in ("censored", "first"):
            x, w = self.parts[kind]
            if x.size:
                total -= float((w * (x / lam) ** k).sum())
        x, w = self.parts["first"]
        if x.size:
            total -= float(w.sum()) * (math.log(lam) + math.lgamma(1.0 + 1.0 / k))
        x, w = self.parts["first_cens"]
        if x.size:
            total += float((w * _log_q(1.0 / k, (x / lam) ** k)).sum())
        x, w = self.parts["rounded"]
        if x.size:
            lp = log_gap_probabilities(x, k, lam, self.delta)
            if not np.all(np.isfinite(lp)):
                return -math.inf
            total += float((w * lp).sum())
        return total if math.isfinite(total) else -math.inf

    def scale_guess(self) -> float:
        """Exposure over failures: the exponential MLE of the mean."""
        exposure = sum(float((w * x).sum()) for kind, (x, w) in self.parts.items() if kind != "rounded")
        x, w = self.parts["rounded"]
        exposure += float((w * x).sum()) * self.delta
        d = self.n_failures()
        return max(exposure, 1e-300) / max(d, 1.0)


def _derivatives(nll, t, h=1e-4):
    """Gradient and Hessian of ``nll`` at ``t`` (2 parameters) by central differences."""
    f0 = nll(t)
    e = np.eye(2) * h
    g = np.array([(nll(t + e[i]) - nll(t - e[i])) / (2 * h) for i in range(2)])
    H = np.zeros((2, 2))
    for i in range(2):
        H[i, i] = (nll(t + e[i]) - 2 * f0 + nll(t - e[i])) / h**2
    H[0, 1] = H[1, 0] = (nll(t + e[0] + e[1]) - nll(t + e[0] - e[1]) - nll(t - e[0] + e[1])
                         + nll(t - e[0] - e[1])) / (4 * h * h)
    return g, H


#: The largest ``|log x|`` whose ``exp`` a float holds with room to spare (``exp(700)`` is about ``1e304``).
_LOG_MAX = 700.0


def _log_interval(value: float, half: float, what: str) -> tuple:
    """``(value e^-half, value e^half)``: a Wald interval on the log scale, refused when the log does not bound it
    (a half-width beyond a float's range: the information matrix is nearly singular, e.g. a handful of failures all
    at one time; ``math.exp`` raised OverflowError there)."""
    if not abs(math.log(value)) + half < _LOG_MAX:
        raise UsageValueError(f"the Wald interval of the Weibull {what} is unbounded (half-width {half:.3g} on the "
                              f"log scale): the log does not determine it (too few or degenerate lifetimes, e.g. "
                              f"failures all at one time)")
    return value * math.exp(-half), value * math.exp(half)


class MLE:
    """The maximum of a :class:`Likelihood` over ``(log k, log lam)``, with Wald and profile intervals for the shape
    and the mean lifetime ``mu``."""

    def __init__(self, lik: Likelihood):
        if lik.n_failures() < 2:
            raise UsageValueError(f"a Weibull fit needs at least 2 failures, got {lik.n_failures():g}")
        self.lik = lik

        def nll(t):
            v = lik.loglik(math.exp(t[0]), math.exp(t[1]))
            return -v if math.isfinite(v) else 1e300

        x0 = np.array([0.0, math.log(lik.scale_guess())])
        # the simplex stops when its points are within xatol and their values within fatol: the log-likelihood is a
        # sum over the failures, so its rounding error grows with them (about 1e-8 at 10^7 failures, more than an
        # absolute 1e-10), and an absolute fatol ran a 10^7-event log's fit to maxfev (4,000 evaluations of 60 ms
        # where 300 do); 1e-10 per failure keeps the small logs' tolerance and xatol still binds
        r = scipy_optimize().minimize(nll, x0, method="Nelder-Mead",
                                      options={"xatol": 1e-7, "fatol": 1e-10 * max(1.0, lik.n_failures()),
                                               "maxfev": 4000})
        t = r.x
        for _ in range(4):  # Newton polish from finite differences: the Nelder-Mead simplex stops near the top
            g, H = _derivatives(nll, t)
            try:
                step = np.linalg.solve(H, g)
            except np.linalg.LinAlgError:
                break
            if not np.all(np.isfinite(step)) or nll(t - step) > nll(t):
                break
            t = t - step
            if np.max(np.abs(step)) < 1e-10:
                break
        r.x, r.fun = t, nll(t)
        self.theta = r.x
        self.k, self.lam = math.exp(r.x[0]), math.exp(r.x[1])
        lo, hi = SHAPE_BOUNDS
        if not lo < self.k < hi:
            raise UsageValueError(f"the Weibull shape MLE {self.k:.3g} lies outside [{lo}, {hi}] (too few or "
                                  f"degenerate lifetimes)")
        self.loglik = -r.fun
        self.cov = self._covariance(nll)

    @property
    def mean_s(self) -> float:
        return self.lam * math.gamma(1.0 + 1.0 / self.k)

    def _covariance(self, nll) -> np.ndarray:
        """Inverse of the observed information of ``(log k, log lam)``, by central differences."""
        H = _derivatives(nll, self.theta)[1]
        try:
            cov = np.linalg.inv(H)
        except np.linalg.LinAlgError:
            raise UsageValueError("the Weibull fit's information matrix is singular (degenerate data)") from None
        if not np.all(np.isfinite(cov)) or cov[0, 0] <= 0 or cov[1, 1] <= 0:
            raise UsageValueError("the Weibull fit's information matrix is not positive definite (degenerate data)")
        return cov

    def wald(self, level: float = 0.95) -> dict:
        """Wald intervals on the log scale: shape, and the mean by the delta method (``d log mu / d log k =
        -psi(1 + 1/k) / k``)."""
        z = norm_ppf(0.5 + level / 2)
        se_k = math.sqrt(self.cov[0, 0])
        g = np.array([-_sp.digamma(1.0 + 1.0 / self.k) / self.k, 1.0])
        se_m = math.sqrt(float(g @ self.cov @ g))
        return {"shape": _log_interval(self.k, z * se_k, "shape"),
                "mean_s": _log_interval(self.mean_s, z * se_m, "mean")}

    def profile(self, level: float = 0.95) -> dict:
        """Profile-likelihood intervals of the shape and the mean (the other parameter maximised out; chi-square with
        1 degree of freedom)."""
        crit = chi2_ppf(level, 1) / 2
        lik = self.lik

        def prof_k(logk):  # max over log lam
            k = math.exp(logk)
            r = scipy_optimize().minimize_scalar(lambda b: -lik.loglik(k, math.exp(b)),
                                                 bracket=(self.theta[1] - 0.5, self.theta[1] + 0.5))
            return -r.fun

        def prof_mu(logmu):  # max over log k, lam = mu / Gamma(1 + 1/k)
            def nll(logk):
                k = math.exp(logk)
                return -lik.loglik(k, math.exp(logmu - math.lgamma(1.0 + 1.0 / k)))
            r = scipy_optimize().minimize_scalar(nll, bracket=(self.theta[0] - 0.3, self.theta[0] + 0.3))
            return -r.fun

        def interval(fun, center, se):
            out = []
            for sign in (-1.0, 1.0):
                step = max(se, 1e-3)
                far = center + sign * step
                closed = False
                for _ in range(60):
                    # beyond exp's range (a shape or mean past 1e300; math.exp raised OverflowError there) the
                    # profile is flat: the interval will not close
                    if abs(far) > _LOG_MAX:
                        break
                    if self.loglik - fun(far) > crit:
                        closed = True
                        break
                    step *= 2.0
                    far = center + sign * step
                if not closed:
                    raise UsageValueError("a profile-likelihood interval did not close (too little data: the log "
                                          "does not determine the Weibull parameters)")
                out.append(scipy_optimize().brentq(lambda t: self.loglik - fun(t) - crit, *sorted((center, far)),
                                                   xtol=1e-10))
            return math.exp(out[0]), math.exp(out[1])

        g = np.array([-_sp.digamma(1.0 + 1.0 / self.k) / self.k, 1.0])
        # far out on a flat profile the likelihood overflows; loglik reads that as -inf, so numpy need not warn
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            return {"shape": interval(prof_k, self.theta[0], math.sqrt(self.cov[0, 0])),
                    "mean_s": interval(prof_mu, math.log(self.mean_s), math.sqrt(float(g @ self.cov @ g)))}

    def intervals(self, level: float, method: str) -> dict:
        return self.profile(level) if method == "profile" else self.wald(level)
