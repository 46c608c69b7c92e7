"""Exact distribution of the wipe-out index ``T``.

Groups fail one at a time in a uniformly random order (without replacement). ``T`` is the 1-based index of the
failure that causes the first wipe-out; ``T - 1`` failures are *masked*. Since the first ``m`` failures form a
uniformly random ``m``-subset, ``P(T > m)`` is the fraction of ``m``-subsets of groups that wipe out no type, and

``E[T] = sum_{m=0}^{N-1} P(T > m)``,  ``E[T^2] = sum_{m=0}^{N-1} (2m + 1) P(T > m)``.

Layouts with exact results (docs/model.md, section 3):

- ``"cyclic"`` (unit stride): circular consecutive-``r``-out-of-``N``:F systems (Derman, Lieberman & Ross 1982;
  Pekoz & Ross 1995). ``P(T > m)`` = (circular 0/1 strings of length N with m ones and no run of r ones) / C(N, m).
- ``"random"`` (independent uniformly random holders, averaged over layouts):
  ``P(T > m) = (1 - C(m, r) / C(N, r))^N``.
- ``"block"`` (block replication, ``b = N / r`` sets): ``P(T > m) = [x^m] ((1 + x)^r - x^r)^b / C(N, m)``.
  For ``r = 2``, ``E[T] = 4^b / C(2b, b)`` (Casanova, Robert, Vivien & Zaidouni 2012); for any ``r``,
  ``E[T] = (N + 1) Gamma(1 + 1/r) Gamma(b + 1) / Gamma(b + 1 + 1/r)`` from ``E[T] = (N+1) int_0^1 (1 - q^r)^b dq``.

Two arithmetics: ``"float"`` runs a cancellation-free recursion on probabilities (numba; relative error below
``N (r + 3) 2^-52``, about 1e-11 at N = 10^4; for random holders ``exp(N log1p(-p))`` adds ``|log P| 2^-52``),
fast enough for N = 10^4; ``"exact"`` returns
:class:`fractions.Fraction` values computed with integers (use it up to N of a few thousand).
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._kernels import exact as _k
from .._lib.resources import check_memory
from .._lib.validation import UsageTypeError, UsageValueError, as_choice, as_int, check_r
from ..model.kinds import EXACT_LAYOUTS
from ..model.layouts import set_sizes

__all__ = ["ExactDistribution", "exact_wipeout", "block_mean_closed_form", "block_mean"]


@dataclass(frozen=True)
class ExactDistribution:
    """The exact law of the wipe-out index ``T`` (1-based; masked failures are ``T - 1``).

    Attributes
    ----------
    layout, n_groups, r : the case.
    survival : ndarray, shape (N + 1,)
        ``survival[m] = P(T > m)`` for ``m = 0 .. N`` (as floats, also for ``arithmetic="exact"``).
    mean, sd : float
        ``E[T]`` and ``sd(T)``.
    arithmetic : ``"float"`` or ``"exact"``.
    survival_exact, mean_exact, var_exact : Fractions, only for ``arithmetic="exact"``.
    """

    layout: str
    n_groups: int
    r: int
    survival: np.ndarray
    mean: float
    sd: float
    arithmetic: str
    survival_exact: tuple | None = None
    mean_exact: Fraction | None = None
    var_exact: Fraction | None = None

    @property
    def masked_mean(self) -> float:
        """``E[T - 1]``, the mean number of masked failures."""
        return self.mean - 1.0

    def pmf(self) -> np.ndarray:
        """``pmf[t] = P(T = t)`` for ``t = 0 .. N`` (``pmf[0] = 0``)."""
        p = np.zeros(self.n_groups + 1)
        p[1:] = self.survival[:-1] - self.survival[1:]
        return np.clip(p, 0.0, 1.0)

    def cdf(self) -> np.ndarray:
        """``cdf[m] = P(T <= m)``."""
        return 1.0 - self.survival

    def expect(self, f) -> float:
        """``E[f(T)]`` for a function ``f`` of an integer array, e.g. the sum of ``c(k)`` over epochs."""
        t = np.arange(self.n_groups + 1)
        return float(np.sum(self.pmf() * f(t)))


def _moments(surv):
    m = np.arange(len(surv) - 1)
    mean = float(np.sum(surv[:-1]))
    second = float(np.sum((2 * m + 1) * surv[:-1]))
    return mean, math.sqrt(max(second - mean * mean, 0.0))


def _exact_iv(layout, n_groups, r, arithmetic):
    if not isinstance(layout, str):
        kind = getattr(layout, "kind", None)
        raise UsageTypeError(f"`layout` must be a layout kind name, one of {list(EXACT_LAYOUTS)}, got a "
                             f"{type(layout).__name__}" + (f" (kind {kind!r}: pass its name)" if kind else ""))
    layout = as_choice(layout, "layout", EXACT_LAYOUTS)
    n_groups = as_int(n_groups, "n_groups", min_value=1)
    r = as_int(r, "r")
    check_r(r, n_groups)
    arithmetic = as_choice(arithmetic, "arithmetic", ("float", "exact"))
    check_memory(n_groups * 8 * 16, f"the exact law of T at N={n_groups:,}")
    return layout, n_groups, r, arithmetic


#: Seconds per step of the float recursions (about 1.3-1.8 ns on the development machine), and the run time from
#: which :func:`exact_wipeout` warns before starting.
_S_PER_STEP, _WARN_AFTER_S = 1.5e-9, 60.0


def exact_cost(layout: str, n: int, r: int) -> tuple[float, float, str]:
    """``(steps, seconds, worded)`` of :func:`exact_wipeout`'s float recursion: its step count, the time it takes on
    one core at :data:`_S_PER_STEP`, and that time worded ("40 s", "150 min"). The one estimate of that cost (the
    warning below and the command line's up-front refusal quote it)."""
    steps = {"cyclic": n * n * r / 2, "block": float(n) * n, "random": float(n) * r}[layout]
    seconds = steps * _S_PER_STEP
    return steps, seconds, f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _warn_if_long(layout: str, n: int, r: int) -> None:
    """Warn before a float recursion that would run over a minute: it runs in one numba call, which Ctrl-C cannot
    interrupt (the interpreter only sees the signal when the call returns)."""
    steps, seconds, took = exact_cost(layout, n, r)
    if seconds > _WARN_AFTER_S:

        warnings.warn(f"exact_wipeout({layout!r}, N={n:,}, r={r}) runs about {steps:.1e} steps of its recursion, "
                      f"roughly {took} on one core, in one numba call that Ctrl-C cannot interrupt; a smaller N, or "
                      f"wipeout_mc for an estimate, is quicker", RuntimeWarning, stacklevel=4)


def exact_wipeout(layout: str, n_groups: int, r: int, *, arithmetic: str = "float") -> ExactDistribution:
    """The exact distribution of the wipe-out index ``T`` for a layout kind.

    Parameters
    ----------
    layout : {"cyclic", "random", "block"}
        Cyclic unit stride, independent random holders (averaged over random layouts), block replication.
    n_groups : int
        ``N >= 1``.
    r : int
        Redundancy, ``1 <= r <= N``. For block replication with ``r`` not dividing ``N`` the law is that of
        :class:`spare_mc.model.layouts.ReplicaSets` (``floor(N / r)`` sets as equal as possible, sizes ``s``):
        ``P(T > m) = [x^m] prod_sets ((1 + x)^s - x^s) / C(N, m)``.
    arithmetic : {"float", "exact"}
        ``"float"``: stable recursion (see module notes), O(N^2 r / 2) for cyclic, O(N^2) for block, O(N r) for
        random, about 1.5 ns a step: a ``RuntimeWarning`` is given before a run of over a minute (cyclic at
        N = 100,000, r = 9), which Ctrl-C cannot interrupt. ``"exact"``: integer/rational arithmetic, exact, much
        slower.

    Returns
    -------
    ExactDistribution

    Examples
    --------
    >>> d = exact_wipeout("block", 4, 2, arithmetic="exact")
    >>> d.mean_exact
    Fraction(8, 3)
    """
    layout, n_groups, r, arithmetic = _exact_iv(layout, n_groups, r, arithmetic)
    if arithmetic == "exact":
        exact_law = {"cyclic": _cyclic_exact, "random": _random_exact,
                     "block": _block_exact if n_groups % r == 0 else _sets_exact}[layout]
        surv_q = exact_law(n_groups, r)
        mean_q = sum(surv_q[:-1], Fraction(0))
        var_q = sum(((2 * m + 1) * s for m, s in enumerate(surv_q[:-1])), Fraction(0)) - mean_q * mean_q
        surv = np.array([float(x) for x in surv_q])
        return ExactDistribution(layout, n_groups, r, surv, float(mean_q), math.sqrt(float(var_q)), arithmetic,
                                 tuple(surv_q), mean_q, var_q)
    surv, mean, sd = _float_law(layout, n_groups, r)
    return ExactDistribution(layout, n_groups, r, surv.copy(), mean, sd, arithmetic)


@functools.lru_cache(maxsize=8)
def _float_law(layout: str, n_groups: int, r: int):
    """``(survival, mean, sd)`` of the float recursion, the survival read-only. Kept for the last 8 cases: one
    time-to-train run asks for the same law twice (the checkpoint period's mean wipe-out index and the stack
    bound), which at N = 50,000 is 2 x 27 s of recursion."""
    _warn_if_long(layout, n_groups, r)
    surv = np.empty(n_groups + 1)
    if layout == "cyclic":
        _k.cyclic_survival(n_groups, r, surv)
    elif layout == "block":  # n / r sets of r, or replica sets one member larger where r does not divide n

        _k.sets_survival(np.asarray(set_sizes(n_groups, r), dtype=np.int64), surv)
    else:
        surv[:] = _random_float(n_groups, r)
    # the true law is <= 1 and non-increasing; rounding (within the error bound above) can break both by ~1e-15
    surv = np.minimum.accumulate(np.clip(surv, 0.0, 1.0))
    mean, sd = _moments(surv)
    surv.setflags(write=False)
    return surv, mean, sd


# ---------------------------------------------------------------------------------------------------------------
# float forms

def _random_float(n, r):
    """``(1 - C(m,r)/C(n,r))^n`` with ``C(m,r)/C(n,r) = prod_{i<r} (m-i)/(n-i)`` and ``exp(n log1p(-p))``."""
    m = np.arange(n + 1, dtype=np.float64)
    p = np.ones(n + 1)
    for i in range(r):
        p *= np.clip(m - i, 0.0, None) / (n - i)
    with np.errstate(divide="ignore"):
        out = np.exp(n * np.log1p(-np.minimum(p, 1.0)))
    out[p >= 1.0] = 0.0
    return out


# ---------------------------------------------------------------------------------------------------------------
# exact (integer) forms

def _cyclic_exact(n, r):
    """Counts of circular strings via ``A(n, m) = n L(n - m, m) / (n - m)`` with inclusion-exclusion for ``L``."""
    out = []
    for m in range(n + 1):
        if m < r:
            out.append(Fraction(1))
            continue
        z = n - m
        if z == 0:
            out.append(Fraction(0))
            continue
        # L(z, m) = #weak compositions of m into z parts each <= r-1
        lz = sum((-1) ** j * math.comb(z, j) * math.comb(m - j * r + z - 1, z - 1)
                 for j in range(0, min(z, m // r) + 1))
        a, rem = divmod(n * lz, z)
        if rem:  # pragma: no cover - a counting identity
            raise RuntimeError(f"cyclic count not divisible: N={n}, m={m}")
        out.append(Fraction(a, math.comb(n, m)))
    return out


def _random_exact(n, r):
    cnr = math.comb(n, r)
    return [(Fraction(cnr - math.comb(m, r), cnr)) ** n for m in range(n + 1)]


def _sets_exact(n, r):
    """``P(T > m) = [x^m] prod_sets ((1 + x)^s - x^s) / C(n, m)`` with exact integer polynomials (the sets of
    :class:`spare_mc.model.layouts.ReplicaSets`)."""

    poly = [1]
    for s in set_sizes(n, r):
        factor = [math.comb(s, i) for i in range(s)]  # (1 + x)^s - x^s
        out = [0] * (len(poly) + s - 1)
        for i, a in enumerate(poly):
            if a:
                for j, c in enumerate(factor):
                    out[i + j] += a * c
        poly = out
    poly += [0] * (n + 1 - len(poly))
    return [Fraction(poly[m], math.comb(n, m)) for m in range(n + 1)]


def _block_exact(n, r):
    b = n // r
    out = []
    for m in range(n + 1):
        cnt = sum((-1) ** j * math.comb(b, j) * math.comb(n - j * r, m - j * r) for j in range(0, min(b, m // r) + 1))
        out.append(Fraction(cnt, math.comb(n, m)))
    return out


def block_mean_closed_form(n_groups: int, r: int) -> float:
    """``E[T]`` for block replication: ``(N + 1) Gamma(1 + 1/r) Gamma(b + 1) / Gamma(b + 1 + 1/r)``, ``b = N/r``.

    From ``E[T] = (N + 1) int_0^1 R(q) dq`` with ``R(q) = (1 - q^r)^b`` and the Beta integral
    ``int_0^1 (1 - q^r)^b dq = B(1/r, b + 1) / r``. For ``r = 2`` it equals ``4^b / C(2b, b)``
    (Casanova et al. 2012).
    """
    n_groups = as_int(n_groups, "n_groups", min_value=1)
    r = as_int(r, "r")
    check_r(r, n_groups)
    if n_groups % r:
        raise UsageValueError(f"block replication needs N divisible by r, got N={n_groups}, r={r}")
    return block_mean(n_groups, n_groups // r, r)


def block_mean(n_groups: int, n_sets: int, size: int) -> float:
    """``(N + 1) Gamma(1 + 1/s) Gamma(b + 1) / Gamma(b + 1 + 1/s)``: the formula of :func:`block_mean_closed_form`
    for ``b`` sets of ``s`` members among ``N`` groups (no checks; also the estimate of ``E[T]`` that
    :func:`spare_mc.wipeout_mc` prices its kernels with when the sets are not all equal)."""
    return (n_groups + 1) * math.exp(math.lgamma(1 + 1 / size) + math.lgamma(n_sets + 1)
                                     - math.lgamma(n_sets + 1 + 1 / size))
