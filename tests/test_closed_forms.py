import math

import numpy as np
import pytest
from scipy import optimize

import spare_mc as sm
from spare_mc import closed_forms as cf


def test_mu_paper_values_and_limits():
    assert sm.mu_paper(600, 20) == pytest.approx(math.gamma(1 / 20) / 20 * 600 ** 0.95)
    assert sm.mu_paper(1000, 1) == pytest.approx(1.0)  # r = 1: first failure wipes out
    assert sm.mu_rep_paper(600, 3) == pytest.approx(3 ** (1 / 3) * sm.mu_paper(600, 3))


@pytest.mark.parametrize("r", [2, 3, 5, 9, 20])
def test_expansion_beats_paper_form_and_converges(r):
    errs = []
    for n in (200, 1000, 10_000, 1_000_000):
        exact = sm.exact_wipeout("random", n, r).mean
        e_exp = abs(sm.mu_expansion(n, r) - exact)
        e_pap = abs(sm.mu_paper(n, r) - exact)
        assert e_exp < 0.05 and e_exp < e_pap / 20
        errs.append(e_exp)
    assert errs[-1] < errs[-2]  # o(1): the error eventually shrinks with N (slowly for large r)


def test_paper_form_is_the_leading_term():
    # relative error of the paper's form vanishes like N^(-1 + 1/r)
    rel = [abs(sm.mu_paper(n, 3) / sm.exact_wipeout("random", n, 3).mean - 1) for n in (100, 10_000)]
    assert rel[1] < rel[0] / 10


def test_rep_asymptotics_against_exact_block():
    for n, r in [(9999, 9), (9000, 3)]:
        assert sm.mu_rep_paper(n, r) == pytest.approx(sm.exact_wipeout("block", n, r).mean, rel=0.01)


def test_stack_lower_bound():
    assert sm.stack_lower_bound(10, 0) == 1
    assert sm.stack_lower_bound(10, 5) == 2
    assert sm.stack_lower_bound(10, 6) == 3
    assert sm.stack_lower_bound(10, np.arange(10)).tolist() == [1, 2, 2, 2, 2, 2, 3, 4, 5, 10]
    with pytest.raises(ValueError, match=r"`k` must satisfy 0 <= k < N=10"):
        sm.stack_lower_bound(10, 10)
    with pytest.raises(TypeError, match=r"`k` must be integer"):
        sm.stack_lower_bound(10, 1.5)


def test_overhead_lower_bound_by_hand():
    # N = 10, mu = 6.5: floor 6, c(0..5) = 1,2,2,2,2,2 -> 11/6
    assert sm.overhead_lower_bound(10, 2, mu=6.5) == pytest.approx(11 / 6)
    assert 1.0 <= sm.overhead_lower_bound(600, 20) < 2.5


def test_young_and_daly():
    assert sm.ckpt_period_young(60, 3000) == pytest.approx(600.0)
    d, m = 60.0, 3000.0
    x = d / (2 * m)
    assert sm.ckpt_period_daly(d, m) == pytest.approx(600 * (1 + math.sqrt(x) / 3 + x / 9) - 60)
    assert sm.ckpt_period_daly(100, 40) == 40  # d >= 2M: checkpoint every M
    # Daly -> Young - d as d/M -> 0
    assert sm.ckpt_period_daly(1e-3, 1e6) == pytest.approx(sm.ckpt_period_young(1e-3, 1e6), rel=1e-3)


@pytest.mark.parametrize("ts,tf,tr", [(60, 3600, 3600), (60, 1.3e5, 3600), (10, 500, 0)])
def test_optimal_period_maximises_availability(ts, tf, tr):
    tc = sm.ckpt_period_optimal(ts, tf, tr)
    res = optimize.minimize_scalar(lambda x: -sm.availability(x, ts, tf, tr), bounds=(ts * 1.0001, 100 * tc),
                                   method="bounded", options={"xatol": 1e-6 * tc})
    assert res.x == pytest.approx(tc, rel=1e-4)
    assert sm.optimal_availability(ts, tf, tr) == pytest.approx(sm.availability(tc, ts, tf, tr), rel=1e-12)


def test_normalized_ttt_and_r_star():
    assert sm.r_star(600) == math.floor(math.log2(600) + 0.8327)
    assert [sm.r_star(n) for n in (200, 600, 1000)] == [8, 10, 10]
    j = [sm.normalized_ttt(600, r, 300, 60, 3600) for r in range(2, 16)]
    assert all(v > 1 for v in j)
    r_best = 2 + int(np.argmin(j))
    assert abs(r_best - sm.r_star(600)) <= 3  # the paper's r* approximates the minimiser of its own J(r)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: sm.mu_paper(10, 11), ValueError, r"1 <= r <= N"),
    (lambda: sm.availability(50, 60, 1000, 10), ValueError, r"`ckpt_period_s` must exceed `save_s`"),
    (lambda: sm.availability(100, 60, -1, 10), ValueError, r"`mean_uptime_s` must be > 0"),
    (lambda: sm.ckpt_period_optimal(60, 100, -5), ValueError, r"`restart_s` must be >= 0"),
    (lambda: sm.ckpt_period_young(0, 100), ValueError, r"`save_s` must be > 0"),
    (lambda: sm.r_star(1), ValueError, r"`n_groups` must be >= 2"),
    (lambda: sm.overhead_lower_bound(10, 2, mu=-1), ValueError, r"`mu` must be > 0"),
])
def test_closed_form_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
