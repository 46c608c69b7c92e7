import math

import numpy as np
import pytest
from conftest import ALPHA
from scipy import optimize

import spare_mc as sm


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


def test_rounding_keeps_availabilities_in_the_unit_interval():
    assert 1.0 - 1e-15 < sm.optimal_availability(60, 1e300, 3600) <= 1.0  # 1 - 1e-149 exactly
    run = sm.simulate_ttt(sm.TimelineConfig("spare", 60, r=3, n_steps=200, restart_ref_groups=1,
                                            restart_growth="quadratic"), 3, rng=0)
    assert all(0.0 <= x.availability <= 1.0 and 0.0 <= x.useful_fraction <= 1.0 for x in run.runs)


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


def test_overhead_lower_bound_sums_by_blocks_exactly_at_any_n():
    """The sum of c(k) goes one step per distinct value (a QA pass: N = 10^18 allocated 6.5 TiB, N = 2^31 - 1 took
    40 s and 8 GB); it equals the term-by-term sum for every N <= 120 and every cut, and is exact in integers."""
    from spare_mc.theory.closed_forms import _stack_bound_total

    for n in range(1, 121):
        for m in range(1, n + 1):
            assert _stack_bound_total(n, m) == sum(-(-n // (n - k)) for k in range(m))
    n = 10**18
    m = int(math.floor(sm.mu_paper(n, 30)))
    assert sm.overhead_lower_bound(n, 30) == (1 + 2 * (m - 1)) / m  # c(0) = 1, then 2 until k = N / 2
    assert sm.overhead_lower_bound(2**31 - 1, 30) < 2
    with pytest.raises(ValueError, match=r"distinct terms .* give a smaller `mu`"):
        sm.overhead_lower_bound(n, 30, mu=float(n))


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


# ------------------------------------------------------------------------ Daly's exact expected wall time
def _classical_mc(solve_s, tau, delta, restart, mtbf, reps, seed):
    """The classical model simulated directly (an independent twin of the closed form): segments of ``tau``
    compute + ``delta`` checkpoint, exponential failures everywhere, a failed restart starts again."""
    rng = np.random.default_rng(seed)
    n = int(solve_s // tau + 1e-9)
    last = solve_s - n * tau
    lengths = [tau + delta] * n + ([last + delta] if last > 1e-9 else [])
    out = np.empty(reps)
    for i in range(reps):
        t = 0.0
        for length in lengths:
            while True:
                x = rng.exponential(mtbf)
                if x >= length:
                    t += length
                    break
                t += x
                while True:  # restart until one completes
                    y = rng.exponential(mtbf)
                    if y >= restart:
                        t += restart
                        break
                    t += y
        out[i] = t
    return out


@pytest.mark.parametrize("solve, tau, delta, restart, mtbf", [
    (3000.0, 300.0, 30.0, 100.0, 1000.0),    # solve / tau an integer
    (3100.0, 300.0, 30.0, 100.0, 1000.0),    # a shorter last segment
    (2000.0, 250.0, 20.0, 1500.0, 1000.0),   # R >= M: restarts fail often
    (600.0, 600.0, 60.0, 0.0, 400.0),        # one segment longer than M, no restart time
])
def test_daly_expected_wall_time_matches_a_direct_simulation(solve, tau, delta, restart, mtbf):
    from spare_mc.theory.closed_forms import daly_expected_wall_time

    exact = daly_expected_wall_time(solve, tau, delta, restart, mtbf)
    sim = _classical_mc(solve, tau, delta, restart, mtbf, 6000, seed=11)
    res = sm.compare(sm.estimate_mean(sim, "wall"), exact, alpha=ALPHA)
    assert res.consistent, (exact, sim.mean(), res)


def test_daly_expected_wall_time_limits_and_optimum():
    from scipy.optimize import minimize_scalar

    from spare_mc.theory.closed_forms import ckpt_period_daly, ckpt_period_young, daly_expected_wall_time

    # no failures: the solve time plus one checkpoint per segment
    assert daly_expected_wall_time(3600.0, 600.0, 10.0, 50.0, 1e13) == pytest.approx(3660.0, rel=1e-9)
    # one segment: M e^(R/M) (e^((T+d)/M) - 1) by hand
    assert daly_expected_wall_time(100.0, 100.0, 5.0, 20.0, 50.0) == pytest.approx(
        50 * math.exp(20 / 50) * math.expm1(105 / 50), rel=1e-12)
    assert daly_expected_wall_time(1e6, 1e6, 0.0, 0.0, 1.0) == math.inf
    # the objective is flat near its optimum: compare values, not arguments (continuous T_s / tau)
    solve, d, r, m = 1e6, 60.0, 600.0, 3600.0
    f = lambda tau: m * math.exp(r / m) * math.expm1((tau + d) / m) * solve / tau  # noqa: E731
    best = minimize_scalar(f, bounds=(1.0, 20 * m), method="bounded", options={"xatol": 1e-6}).fun
    young, daly = f(ckpt_period_young(d, m)), f(ckpt_period_daly(d, m))
    assert best <= daly <= young
    assert daly / best - 1 < 1e-3 and young / best - 1 < 1e-2


@pytest.mark.parametrize("kw, match", [
    (dict(solve_s=0.0), "`solve_s` must be > 0"),
    (dict(interval_s=-1.0), "`interval_s` must be > 0"),
    (dict(save_s=-1.0), "`save_s` must be >= 0"),
    (dict(restart_s=math.nan), "`restart_s` must be finite"),
    (dict(mtbf_s="1"), "`mtbf_s` must be a real number"),
])
def test_daly_expected_wall_time_bad_input(kw, match):
    from spare_mc.theory.closed_forms import daly_expected_wall_time

    args = {**dict(solve_s=100.0, interval_s=10.0, save_s=1.0, restart_s=1.0, mtbf_s=100.0), **kw}
    with pytest.raises((sm.UsageValueError, sm.UsageTypeError), match=match):
        daly_expected_wall_time(**args)


def test_closed_forms_do_not_overflow_at_the_ends_of_floating_point():
    """Products and sums of durations near 1e308 overflowed: A* of 1 from NaN, inf for finite periods (QA pass).
    Scale invariance gives the exact values: A* and A depend only on ratios, the periods scale with the inputs."""
    a_small = sm.optimal_availability(1.0, 1.0, 0.0)
    assert sm.optimal_availability(1e160, 1e160, 0.0) == pytest.approx(a_small, rel=1e-14)
    assert sm.optimal_availability(1e300, 1e300, 0.0) == pytest.approx(a_small, rel=1e-14)
    assert sm.availability(1e308, 60.0, 1e308, 1e308) == pytest.approx(0.4)  # T_f / (T_f + T_r + T_c / 2), T_s -> 0
    assert sm.ckpt_period_optimal(1e200, 1e200, 0.0) == pytest.approx(1e200 * (1 + np.sqrt(3)), rel=1e-14)
    assert sm.ckpt_period_young(1e308, 1e308) == pytest.approx(np.sqrt(2) * 1e308, rel=1e-14)
    assert np.isfinite(sm.ckpt_period_daly(1e300, 1e308))
    with pytest.raises(ValueError, match=r"`save_s` must be at least 1e-150 s \(below it the formulas underflow\)"):
        sm.optimal_availability(1e-200, 1e-200, 0.0)  # a ZeroDivisionError before
    with pytest.raises(ValueError, match=r"`mtbf_s` must be at least 1e-150 s"):
        sm.normalized_ttt(600, 9, 5e-324, 60.0, 600.0)


def test_stack_lower_bound_takes_any_integer_dtype():
    """uint64 or int8 k raised numpy 2's OverflowError (-N in k's own dtype), N = 2**70 an int64 one (QA pass)."""
    for dtype in (np.uint64, np.int8, np.uint8, np.int32):
        assert sm.stack_lower_bound(100, np.array([3, 60], dtype=dtype)).tolist() == [2, 3]
    with pytest.raises(ValueError, match=r"`n_groups` must be <= 4611686018427387904"):
        sm.stack_lower_bound(2**70, 5)
