"""Rep when r does not divide N: replica sets as equal as possible, the exact law of T, Monte Carlo against it."""

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from conftest import ALPHA

import spare_mc as sm
from spare_mc.model.layouts import ReplicaSets, replica_sets, set_sizes


@pytest.mark.parametrize("n", range(2, 13))
def test_exact_law_equals_enumeration(n):
    """P(T > m) from the product generating function (exact integers) and from the float recursion, against the
    fraction of m-subsets of dead groups that contain no whole set, for every r and every N <= 12."""
    for r in range(1, n + 1):
        sets = replica_sets(n, r)
        brute = [Fraction(sum(not sets.is_wiped(c) for c in itertools.combinations(range(n), m)), math.comb(n, m))
                 for m in range(n + 1)]
        exact = sm.exact_wipeout("block", n, r, arithmetic="exact")
        assert list(exact.survival_exact) == brute, (n, r)
        flt = sm.exact_wipeout("block", n, r)
        assert np.max(np.abs(flt.survival - np.array([float(x) for x in brute]))) < 1e-14


def test_set_sizes_rule():
    assert set_sizes(200, 3) == [4, 4] + [3] * 64          # N mod r sets one member larger (the example)
    assert set_sizes(1000, 3) == [4] + [3] * 332
    assert set_sizes(11, 4) == [6, 5]                       # more remainder than sets: still as equal as possible
    for n in range(1, 80):
        for r in range(1, n + 1):
            s = set_sizes(n, r)
            assert len(s) == n // r and sum(s) == n and min(s) >= r and max(s) - min(s) <= 1
    sets = replica_sets(200, 3)
    assert sets.n_sets == 66 and sets.compute_factor == pytest.approx(200 / 66)
    assert np.bincount(sets.set_of_group).tolist() == sets.sizes.tolist()
    assert isinstance(sm.make_layout("block", 200, 3), ReplicaSets)
    assert isinstance(sm.make_layout("block", 201, 3), sm.Layout)


def test_equal_sets_have_the_block_law():
    """The float recursion on equal sets against the inclusion-exclusion law of block replication (Fractions)."""
    from spare_mc._kernels import exact as K
    from spare_mc.theory.exact import _block_exact

    for n, r in ((12, 3), (600, 3), (1000, 10)):
        b = np.empty(n + 1)
        K.sets_survival(replica_sets(n, r).sizes.copy(), b)
        np.testing.assert_allclose(b, [float(x) for x in _block_exact(n, r)], rtol=1e-11, atol=1e-300)


@pytest.mark.parametrize("n, r", [(200, 3), (1000, 3)])
def test_monte_carlo_matches_the_exact_law(n, r):
    res = sm.wipeout_mc("block", 20_000, n_groups=n, r=r, rng=2026)
    exact = sm.exact_wipeout("block", n, r)
    c = sm.compare(res.estimate("T"), exact.mean, alpha=ALPHA)
    assert c.consistent, c
    # and the whole law: chi-square goodness of fit over bins of expected count >= 50
    from scipy import stats
    pmf = exact.pmf()
    counts = np.bincount(res.T, minlength=n + 1)
    edges, acc = [0], 0.0
    for t in range(n + 1):
        acc += pmf[t] * res.reps
        if acc >= 50:
            edges.append(t + 1)
            acc = 0.0
    edges[-1] = n + 1
    obs = [counts[a:b].sum() for a, b in zip(edges[:-1], edges[1:])]
    exp = [pmf[a:b].sum() * res.reps for a, b in zip(edges[:-1], edges[1:])]
    assert stats.chisquare(obs, np.array(exp) * sum(obs) / sum(exp)).pvalue > ALPHA


def test_cli_mu_block_with_r_not_dividing_n(capsys):
    from spare_mc.cli import main
    assert main(["mu", "--layout", "block", "--n-groups", "200", "--r", "3", "--reps", "5000", "--seed", "1",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["exact_mean_T"] == pytest.approx(sm.exact_wipeout("block", 200, 3).mean)
    assert out["mc_vs_exact_consistent"]


def test_rectlr_refuses_replica_sets():
    with pytest.raises(sm.UsageValueError, match=r"does not reorder, so it has no stacking overhead"):
        sm.overhead_mc("block", 10, n_groups=200, r=3)
    with pytest.raises(sm.UsageValueError, match=r"replica_sets\(N, r\)"):
        sm.block(200, 3)
