"""The few distribution functions the package uses, from ``scipy.special`` (private).

Importing ``scipy.stats`` took 0.36 s of every command's start, for seven functions of four distributions:
Student's t, the normal, chi-squared and beta quantiles and tails for confidence intervals and tests. Each function
here computes what ``scipy.stats`` computes for float64 inputs, with the special function it calls and its handling
of the support's ends, so the results are the same to the bit (``tests/test_dist.py`` compares them on grids that
include the ends, ``nan``, invalid parameters and the sign of zero) -- but one case of ``beta_ppf``, below. A
float32 probability is computed in float64 here (``scipy.stats`` keeps float32); the package passes Python floats.

- ``t_ppf(q, df)`` = ``scipy.stats.t.ppf``: ``stdtrit(df, q)`` for ``0 < q < 1``, ``-inf`` / ``inf`` at 0 / 1;
- ``t_isf(q, df)`` = ``scipy.stats.t.isf``: ``-stdtrit(df, q)``, ``inf`` / ``-inf`` at 0 / 1;
- ``t_sf(x, df)`` = ``scipy.stats.t.sf``: ``stdtr(df, -x)``;
- ``norm_ppf(q)`` = ``scipy.stats.norm.ppf``: ``ndtri(q)``; ``norm_sf(x)`` = ``scipy.stats.norm.sf``: ``ndtr(-x)``;
- ``chi2_ppf(q, df)`` = ``scipy.stats.chi2.ppf``: ``2 gammaincinv(df / 2, q)``, 0 / ``inf`` at 0 / 1;
- ``beta_ppf(q, a, b)`` = ``scipy.stats.beta.ppf``: ``betaincinv(a, b, q)``, 0 / 1 at 0 / 1. ``scipy.stats`` calls
  the private ``scipy.special._ufuncs._beta_ppf``, the same Boost inversion under another error policy: the two
  differ only where Boost's root-finding fails, at ``q`` below about ``1e-16`` (then ``scipy.stats`` warns and
  returns a poorer value, ``betaincinv`` a better one or ``nan``). The package's Clopper-Pearson intervals never go
  there: their level is below ``1 - 2.2e-16`` and their parameters are whole numbers (a review scanned 217,000 of
  their inputs: no difference).

A probability outside ``[0, 1]`` or ``nan``, and a parameter outside its domain (``df, a, b > 0``), give ``nan``
as in ``scipy.stats``. Scalars in give a numpy float out, arrays an array (broadcast).

:func:`scipy_optimize` hands out ``scipy.optimize``, imported at its first use: only the failure-log fits use it, and
importing it took 0.24 s of the command line's 0.77 s start (2026-12-07).
"""

from __future__ import annotations

import numpy as np
from scipy import special as _sp

__all__ = ["beta_ppf", "chi2_ppf", "norm_ppf", "norm_sf", "scipy_optimize", "t_isf", "t_ppf", "t_sf"]


def scipy_optimize():
    """``scipy.optimize``, imported at the first call (Python keeps it: later calls cost a lookup)."""
    from scipy import optimize
    return optimize


def _valid(x, params):
    """``x`` and the parameters as broadcast float64 arrays, and where every parameter is in its domain (``> 0``)."""
    arrays = np.broadcast_arrays(np.asarray(x, dtype=float), *(np.asarray(p, dtype=float) for p in params))
    ok = np.ones(arrays[0].shape, dtype=bool)
    for p in arrays[1:]:
        ok &= p > 0
    return arrays[0], arrays[1:], ok


def _quantile(core, q, lo, hi, *params):
    """``core(q, *params)`` where ``0 < q < 1`` and every parameter is positive, ``lo`` / ``hi`` at ``q`` = 0 / 1
    (valid parameters), ``nan`` elsewhere; ``+ 0.0`` as ``scipy.stats`` adds its ``loc`` (a ``-0.0`` becomes 0)."""
    q, params, ok = _valid(q, params)
    out = np.full(q.shape, np.nan)
    inside = ok & (q > 0) & (q < 1)
    if inside.any():
        out[inside] = core(q[inside], *(p[inside] for p in params)) + 0.0
    out[ok & (q == 0)] = lo
    out[ok & (q == 1)] = hi
    return out[()] if out.ndim == 0 else out


def _tail(core, x, *params):
    """``core(x, *params)`` where every parameter is positive, ``nan`` elsewhere (``scipy.stats``' ``sf`` of a
    distribution on the whole real line: its ends come out of ``core`` itself)."""
    x, params, ok = _valid(x, params)
    out = np.full(x.shape, np.nan)
    if ok.any():
        out[ok] = core(x[ok], *(p[ok] for p in params))
    return out[()] if out.ndim == 0 else out


def t_ppf(q, df):
    """Student's t quantile (``scipy.stats.t.ppf``)."""
    return _quantile(lambda q, df: _sp.stdtrit(df, q), q, -np.inf, np.inf, df)


def t_isf(q, df):
    """Student's t upper quantile, ``t_ppf(1 - q, df)`` without its rounding (``scipy.stats.t.isf``)."""
    return _quantile(lambda q, df: -_sp.stdtrit(df, q), q, np.inf, -np.inf, df)


def t_sf(x, df):
    """Student's t survival function ``P(T > x)`` (``scipy.stats.t.sf``)."""
    return _tail(lambda x, df: _sp.stdtr(df, -x), x, df)


def norm_ppf(q):
    """Standard normal quantile (``scipy.stats.norm.ppf``)."""
    return _quantile(_sp.ndtri, q, -np.inf, np.inf)


def norm_sf(x):
    """Standard normal survival function ``P(Z > x)`` (``scipy.stats.norm.sf``)."""
    return _tail(lambda x: _sp.ndtr(-x), x)


def chi2_ppf(q, df):
    """Chi-squared quantile (``scipy.stats.chi2.ppf``)."""
    return _quantile(lambda q, df: 2 * _sp.gammaincinv(df / 2, q), q, 0.0, np.inf, df)


def beta_ppf(q, a, b):
    """Beta quantile (``scipy.stats.beta.ppf``)."""
    return _quantile(lambda q, a, b: _sp.betaincinv(a, b, q), q, 0.0, 1.0, a, b)
