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


@pytest.mark.parametrize("mine, theirs, args", [
    (dist.t_ppf, stats.t.ppf, (Q, P)),
    (dist.t_isf, stats.t.isf, (Q, P)),
    (dist.t_sf, stats.t.sf, (X, P)),
    (dist.norm_ppf, stats.norm.ppf, (Q,)),
    (dist.norm_sf, stats.norm.sf, (X,)),
    (dist.chi2_ppf, stats.chi2.ppf, (Q, P)),
    (dist.beta_ppf, stats.beta.ppf, (Q, P, P[::-1])),
], ids=["t_ppf", "t_isf", "t_sf", "norm_ppf", "norm_sf", "chi2_ppf", "beta_ppf"])
def test_the_same_numbers_as_scipy_stats(mine, theirs, args):
    np.testing.assert_array_equal(mine(*args), theirs(*args))  # nan where scipy.stats gives nan, bits elsewhere
    assert np.array_equal(np.signbit(mine(*args)), np.signbit(theirs(*args)))
    # scalars in, a numpy float out, as scipy.stats gives; broadcasting a scalar against an array
    one = tuple(a[3] for a in args)
    assert np.isscalar(mine(*one)) and mine(*one) == theirs(*one)
    mixed = (args[0],) + tuple(a[7] for a in args[1:])
    np.testing.assert_array_equal(mine(*mixed), theirs(*mixed))


def test_the_quantiles_the_package_uses():
    """The calls the package makes most: a 95% t interval's factor, a normal one, a chi-squared profile cut."""
    assert float(dist.t_ppf(0.975, 9)) == float(stats.t.ppf(0.975, 9)) == pytest.approx(2.2621571627409915)
    assert float(dist.norm_ppf(0.975)) == float(stats.norm.ppf(0.975))
    assert float(dist.chi2_ppf(0.95, 1)) == float(stats.chi2.ppf(0.95, 1)) == pytest.approx(3.841458820694124)
