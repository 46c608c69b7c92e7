import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate

import spare_mc as sm
from spare_mc import testing as ref
from spare_mc.theory.exact import block_mean_closed_form

SMALL = [(n, r) for n in range(1, 13) for r in range(1, n + 1)]


@pytest.mark.parametrize("n,r", SMALL)
def test_cyclic_exact_equals_subset_enumeration(n, r):
    d = sm.exact_wipeout("cyclic", n, r, arithmetic="exact")
    assert list(d.survival_exact) == ref.survival_by_subsets(sm.cyclic(n, r))


@pytest.mark.parametrize("n,r", [(n, r) for n, r in SMALL if n % r == 0])
def test_block_exact_equals_subset_enumeration(n, r):
    d = sm.exact_wipeout("block", n, r, arithmetic="exact")
    assert list(d.survival_exact) == ref.survival_by_subsets(sm.block(n, r))


@pytest.mark.parametrize("n,r", [(1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (3, 3), (4, 1), (4, 2), (4, 3), (4, 4),
                                 (5, 4), (5, 5)])
def test_random_exact_equals_average_over_all_layouts(n, r):
    d = sm.exact_wipeout("random", n, r, arithmetic="exact")
    assert list(d.survival_exact) == ref.random_layout_survival_by_enumeration(n, r)


@pytest.mark.parametrize("layout", [sm.cyclic(7, 3), sm.block(6, 2), sm.sidon(7, 3), sm.cyclic_offsets(7, [0, 2])])
def test_subset_law_equals_order_enumeration(layout):
    """P(T = t) from walking all N! orders equals the difference of the subset-based survival function."""
    by_orders = ref.T_distribution_by_orders(layout)
    surv = ref.survival_by_subsets(layout)
    for t in range(1, layout.n_groups + 1):
        assert by_orders.get(t, Fraction(0)) == surv[t - 1] - surv[t]


FLOAT_CASES = [pytest.param(layout, n, r, marks=[pytest.mark.slow] if n * r >= 12_000 else [])
               for layout in ("cyclic", "block", "random")
               for n, r in [(60, 2), (120, 3), (240, 6), (300, 5), (600, 20), (400, 8)]
               if layout != "block" or n % r == 0]


@pytest.mark.parametrize("layout,n,r", FLOAT_CASES)
def test_float_recursion_matches_exact_arithmetic(layout, n, r):
    fl = sm.exact_wipeout(layout, n, r)
    ex = sm.exact_wipeout(layout, n, r, arithmetic="exact")
    pos = ex.survival > 1e-250
    # documented bound: N (r + 3) ulp for the recursions; exp(N log1p(-p)) adds |log P| ulp for random holders
    rtol = (n * (r + 3) + 4 * np.abs(np.log(ex.survival[pos]))) * 2.0 ** -52
    assert np.all(np.abs(fl.survival[pos] - ex.survival[pos]) <= rtol * ex.survival[pos])
    assert np.all(fl.survival[~pos] < 1e-240)
    assert fl.mean == pytest.approx(float(ex.mean_exact), rel=1e-12)
    assert fl.sd == pytest.approx(math.sqrt(ex.var_exact), rel=1e-9)


def _cyclic_survival_by_rows(n, r):
    """The recursion of ``_exact_kernels.cyclic_survival`` as first written: one ``d`` at a time, its terms ``i``
    in a loop (plain Python floats: the same IEEE operations in the same order)."""
    g = [1.0 if d < r else 0.0 for d in range(n)] + [0.0]
    out = [0.0] * (n + 1)
    out[n - 1] = g[n - 1]
    for z in range(1, n):
        top = n - z - 1
        for d in range(top, -1, -1):
            if d < r:
                g[d] = 1.0
                continue
            w = z / (d + z)
            acc = w * g[d]
            for i in range(0, r - 1):
                w = w * (d - i) / (d - i + z - 1)
                acc += w * g[d - i - 1]
            g[d] = acc
        out[top] = g[top]
    return out


@pytest.mark.parametrize("n,r", [(1, 1), (2, 1), (9, 4), (300, 1), (300, 2), (520, 7), (520, 258), (520, 520)])
def test_cyclic_kernel_in_blocks_is_bitwise_the_row_recursion(n, r):
    """The kernel updates blocks of 256 values of d term by term; it must give exactly the row-by-row floats
    (n = 520 crosses two block boundaries; r = 258 leaves a block of 6 values)."""
    from spare_mc._kernels import exact as _exact_kernels
    got = _exact_kernels.cyclic_survival(n, r, np.empty(n + 1))
    assert got.tolist() == _cyclic_survival_by_rows(n, r)


def test_block_r2_mean_is_casanova_formula():
    for b in (1, 2, 5, 50, 300):
        d = sm.exact_wipeout("block", 2 * b, 2, arithmetic="exact")
        assert d.mean_exact == Fraction(4 ** b, math.comb(2 * b, b))


@pytest.mark.parametrize("n,r", [(6, 3), (600, 3), (9999, 9), (1000, 10)])
def test_block_mean_beta_closed_form(n, r):
    assert sm.exact_wipeout("block", n, r).mean == pytest.approx(block_mean_closed_form(n, r), rel=1e-10)


def _circular_reliability(n, r, q):
    """P(no r cyclically consecutive dead) with iid dead probability q, by a transfer matrix (independent method)."""
    # condition on the length a of the dead run that ends at the last position and wraps to the start
    total = 0.0
    for head in range(r):          # dead run at the start of length exactly head (then an alive group)
        for tail in range(r - head):  # dead run at the end of length exactly tail (preceded by an alive group)
            inner = n - head - tail - 2
            if inner < 0:
                continue
            # linear string of length `inner` with no run of r
            f = np.zeros(r)
            f[0] = 1.0
            for _ in range(inner):
                g = np.zeros(r)
                g[0] = f.sum() * (1 - q)
                g[1:] = f[:-1] * q
                f = g
            total += q ** (head + tail) * (1 - q) ** 2 * f.sum()
    return total


@pytest.mark.parametrize("n,r", [(12, 3), (20, 4), (30, 2)])
def test_cyclic_mean_equals_reliability_integral(n, r):
    """E[T] = (N + 1) int_0^1 R_N(q) dq (uniform order = order of iid U(0,1) lifetimes)."""
    val, _ = integrate.quad(lambda q: _circular_reliability(n, r, q), 0, 1, epsabs=1e-13, epsrel=1e-13)
    assert sm.exact_wipeout("cyclic", n, r).mean == pytest.approx((n + 1) * val, rel=1e-9)


def test_n_10000_is_fast_and_sane():
    import time
    t0 = time.perf_counter()
    d = sm.exact_wipeout("cyclic", 10_000, 9)
    elapsed = time.perf_counter() - t0
    assert elapsed < 30  # generous: about 1 s here; a regression to the big-integer path would take minutes
    assert d.survival[0] == 1.0 and d.survival[-1] == 0.0
    assert np.all(np.diff(d.survival) <= 0)
    assert d.pmf().sum() == pytest.approx(1.0, abs=1e-12)
    # cyclic unit stride masks more than random holders at the same (N, r)
    assert d.mean > sm.exact_wipeout("random", 10_000, 9).mean


def test_expect_and_pmf():
    d = sm.exact_wipeout("block", 4, 2, arithmetic="exact")
    assert d.pmf()[2] == pytest.approx(1 / 3) and d.pmf()[3] == pytest.approx(2 / 3)
    assert d.expect(lambda t: t) == pytest.approx(8 / 3)
    assert d.masked_mean == pytest.approx(5 / 3)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(layout="sidon", n_groups=10, r=2), ValueError, r"`layout` must be one of \['block', 'cyclic', 'random'\]"),
    (dict(layout="block", n_groups=10, r=11), ValueError, r"`r` must satisfy 1 <= r <= N"),
    (dict(layout="cyclic", n_groups=10, r=11), ValueError, r"1 <= r <= N"),
    (dict(layout="cyclic", n_groups=10, r=2, arithmetic="double"), ValueError, r"`arithmetic` must be one of"),
    (dict(layout="cyclic", n_groups="10", r=2), TypeError, r"`n_groups` must be an integer"),
])
def test_exact_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        sm.exact_wipeout(**kwargs)


def test_a_run_of_over_a_minute_is_announced_before_it_starts(monkeypatch):
    """The float recursions run in one numba call that Ctrl-C cannot stop (a QA pass waited 40 s at N = 400,000):
    a warning with the expected time comes first. Checked without the long run: the estimate's threshold is
    lowered so that a quick case crosses it."""
    import warnings

    from spare_mc.theory import exact as ex
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = sm.exact_wipeout("cyclic", 2000, 9)  # ~2e7 steps: silent
    monkeypatch.setattr(ex, "_WARN_AFTER_S", 1e-3)
    with warnings.catch_warnings():  # the law is kept: asked again, it is not recomputed, and nothing is announced
        warnings.simplefilter("error")
        again = sm.exact_wipeout("cyclic", 2000, 9)
    assert np.array_equal(again.survival, quiet.survival)
    ex._float_law.cache_clear()
    with pytest.warns(RuntimeWarning, match=r"exact_wipeout\('cyclic', N=2,000, r=9\) runs about 1.8e\+07 steps .* "
                                            r"Ctrl-C cannot interrupt") as caught:
        d = sm.exact_wipeout("cyclic", 2000, 9)
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert np.array_equal(d.survival, quiet.survival)  # the warning changes nothing else


def test_the_float_law_is_computed_once_and_each_caller_gets_its_own_copy(monkeypatch):
    """A time-to-train run asks for the same law twice (checkpoint period, stack bound): the recursion runs once,
    and a caller that writes into its survival array does not change what the next caller gets."""
    from spare_mc.theory import exact as ex
    ex._float_law.cache_clear()
    calls = []
    kernel = ex._k.cyclic_survival
    monkeypatch.setattr(ex._k, "cyclic_survival", lambda n, r, out: calls.append(n) or kernel(n, r, out))
    a = sm.exact_wipeout("cyclic", 300, 5)
    a.survival[:] = -1.0
    b = sm.exact_wipeout("cyclic", 300, 5)
    assert calls == [300]
    assert b.survival[0] == 1.0 and b.survival.flags.writeable
    assert b.mean == a.mean and b.survival[-1] == 0.0
