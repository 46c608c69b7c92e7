"""spare_mc._lib.dist: the distribution functions from scipy.special give scipy.stats' numbers to the bit."""

import numpy as np
import pytest
from scipy import stats

from spare_mc._lib import dist

RNG = np.random.default_rng(2026)
#: probabilities: random, the ends, just inside them, outside, nan
Q = np.concatenate([RNG.random(3000), [0.0, 1.0, 0.5, 0.975, 0.995, 1e-300, 1 - 1e-16, -0.1, 1.1, np.nan]])
#: real values: random, large, the infinities, zero of both signs, nan
X = np.concatenate([RNG.normal(0, 4, 3000), [0.0, -0.0, 40.0, -40.0, np.inf, -np.inf, 1e300, np.nan, 3.0, -3.0]])
#: a positive parameter per point, with a few invalid ones (0, negative, nan) and large ones
P = np.concatenate([RNG.integers(1, 3000, 3000).astype(float), [1.0, 2.0, 0.0, -1.0, np.nan, 1e6, 0.5, 7.0, 9.0,
                                                                  3.0]])


#: the special values, every probability against every parameter (outer product), so that each end meets valid and
#: invalid parameters alike
Q_SPECIAL = np.array([0.0, 1.0, 0.5, 0.975, 1e-16, -0.1, 1.1, np.nan])
P_SPECIAL = np.array([1.0, 2.0, 9.0, 0.5, 1e6, np.inf, 0.0, -1.0, np.nan])
X_SPECIAL = np.array([0.0, -0.0, 3.0, -3.0, np.inf, -np.inf, np.nan])

CASES = [(dist.t_ppf, stats.t.ppf, 1, "q"), (dist.t_isf, stats.t.isf, 1, "q"), (dist.t_sf, stats.t.sf, 1, "x"),
         (dist.norm_ppf, stats.norm.ppf, 0, "q"), (dist.norm_sf, stats.norm.sf, 0, "x"),
         (dist.chi2_ppf, stats.chi2.ppf, 1, "q"), (dist.beta_ppf, stats.beta.ppf, 2, "q")]
IDS = ["t_ppf", "t_isf", "t_sf", "norm_ppf", "norm_sf", "chi2_ppf", "beta_ppf"]


def _same(a, b):
    """Equal values (nan where nan), the same sign of zero, the same kind of result (numpy float or array)."""
    a, b = np.asarray(a), np.asarray(b)
    np.testing.assert_array_equal(a, b)
    assert a.dtype == b.dtype == np.float64 and a.shape == b.shape
    num = ~np.isnan(b)
    assert np.array_equal(np.signbit(a[num]), np.signbit(b[num]))  # a nan's sign bit means nothing


@pytest.mark.parametrize("mine, theirs, n_params, first", CASES, ids=IDS)
def test_the_same_numbers_as_scipy_stats(mine, theirs, n_params, first):
    """Random values paired by index, and the special values crossed with every parameter."""
    base = Q if first == "q" else X
    args = (base,) + (P, P[::-1])[:n_params]
    _same(mine(*args), theirs(*args))
    special = Q_SPECIAL if first == "q" else X_SPECIAL
    grids = np.meshgrid(special, *([P_SPECIAL] * n_params), indexing="ij")
    grid = [g.ravel() for g in grids]
    _same(mine(*grid), theirs(*grid))


@pytest.mark.parametrize("mine, theirs, n_params, first", CASES, ids=IDS)
def test_scalars_lists_and_integers_as_the_callers_pass_them(mine, theirs, n_params, first):
    """A scalar in gives a numpy float out; a scalar against an array broadcasts; Python ints, lists and numpy integer
    arrays for the parameters (the callers pass ``n - 1`` as an int, or ``np.maximum(k, 1)`` of counts)."""
    x = 0.975 if first == "q" else 2.5
    ints = np.array([1, 5, 9, 120], dtype=np.int64)
    for params in ((), (9,), (9, 4))[n_params:n_params + 1]:
        out = mine(x, *params)
        assert isinstance(out, np.float64) and out == theirs(x, *params)
    many = (ints, ints[::-1])[:n_params]
    _same(mine(x, *many), theirs(x, *many))                                      # scalar against arrays
    _same(mine([x, 0.5 if first == "q" else -1.0], *(list(m[:2]) for m in many)),
          theirs([x, 0.5 if first == "q" else -1.0], *(list(m[:2]) for m in many)))  # lists


def test_the_quantiles_the_package_uses():
    """The calls the package makes most: a 95% t interval's factor, a normal one, a chi-squared profile cut, and a
    Clopper-Pearson interval's ends on whole-number parameters."""
    assert float(dist.t_ppf(0.975, 9)) == float(stats.t.ppf(0.975, 9)) == pytest.approx(2.2621571627409915)
    assert float(dist.norm_ppf(0.975)) == float(stats.norm.ppf(0.975))
    assert float(dist.chi2_ppf(0.95, 1)) == float(stats.chi2.ppf(0.95, 1)) == pytest.approx(3.841458820694124)
    k, n = np.arange(0, 51), 50
    for a in (0.025, 0.005, 1.1e-16):
        _same(dist.beta_ppf(a, np.maximum(k, 1), n - k + 1), stats.beta.ppf(a, np.maximum(k, 1), n - k + 1))
        _same(dist.beta_ppf(1 - a, k + 1, np.maximum(n - k, 1)), stats.beta.ppf(1 - a, k + 1, np.maximum(n - k, 1)))
