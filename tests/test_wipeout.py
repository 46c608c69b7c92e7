import json

import numpy as np
import pytest
from conftest import ALPHA
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import spare_mc as sm
from spare_mc._kernels import wipeout as K
from spare_mc import testing as ref
from spare_mc.mc.survivability import WIPEOUT_METHODS, order_stat_table, uniform_order_kernel


def _python_twin(layout, trials, seed, with_replacement=False):
    """The slow twin: the same partial Fisher-Yates draws in plain numpy, then the reference trial."""
    rng = np.random.default_rng(seed)
    n = layout.n_groups
    perm = np.arange(n)
    out = []
    for _ in range(trials):
        order = []
        i = 0
        while True:
            if with_replacement:
                g = int(perm[K.bounded_py(rng.bit_generator, n)])
            else:
                j = i + K.bounded_py(rng.bit_generator, n - i)
                perm[i], perm[j] = perm[j], perm[i]
                g = int(perm[i])
            order.append(g)
            if g not in order[:-1]:
                i += 1
            dead = set(order)
            if layout.is_wiped(dead):
                break
        out.append(ref.wipeout_trial(layout, order))
    return np.array(out)


@pytest.mark.parametrize("layout", [sm.cyclic(13, 3), sm.cyclic(9, 1), sm.cyclic(8, 8), sm.block(12, 4),
                                    sm.sidon(21, 4), sm.random_holders(15, 3, rng=3), sm.cyclic(1, 1)])
@pytest.mark.parametrize("with_replacement", [False, True])
def test_kernel_equals_python_twin_trial_by_trial(layout, with_replacement):
    res = sm.wipeout_mc(layout, 300, failures=sm.UniformOrder(with_replacement), rng=11, method="sequential")
    twin = _python_twin(layout, 300, 11, with_replacement)
    assert np.array_equal(res.T, twin[:, 0])
    assert np.array_equal(res.dead_before, twin[:, 1])


# --- partition layouts: T from the order statistics of the replica sets' maxima -------------------------------
def _free_groups_layout():
    """N = 8, r = 2: types 0-3 held by groups {0, 1}, types 4-7 by {2, 3}; groups 4-7 hold nothing."""
    return sm.Layout(np.array([[0, 1]] * 4 + [[2, 3]] * 4), kind="custom")


PARTITIONS = [sm.block(12, 4), sm.replica_sets(11, 4), sm.replica_sets(1000, 9), sm.block(150, 50),
              _free_groups_layout(), sm.replica_sets(7, 7), sm.block(5, 1)]


def test_partition_classes():
    from spare_mc.mc.survivability import partition_classes
    assert [a.tolist() for a in partition_classes(sm.replica_sets(1000, 9))] == [[9, 10], [110, 1]]
    assert [a.tolist() for a in partition_classes(_free_groups_layout())] == [[2], [2]]
    assert [a.tolist() for a in partition_classes(sm.Layout(sm.block(12, 3).holders[::-1]))] == [[3], [4]]
    for not_partition in (sm.cyclic(12, 3), sm.sidon(31, 3), sm.random_holders(20, 3, rng=1)):
        assert partition_classes(not_partition) is None


@pytest.mark.parametrize("layout", PARTITIONS, ids=lambda l: f"{l.kind}-{l.n_groups}-{l.r}")
def test_partition_kernel_equals_python_twin_trial_by_trial(layout):
    from spare_mc.mc.survivability import partition_classes
    sizes, counts = partition_classes(layout)
    T, D = np.empty(400, np.int64), np.empty(400, np.int64)
    rng = np.random.default_rng(21)  # alive while the kernel reads its state by address
    K.wipeout_partition(*K.raw_source(rng), layout.n_groups, sizes, counts, 400, T, D)
    twin = ref.wipeout_partition_twin(np.random.default_rng(21).bit_generator, layout.n_groups, sizes, counts, 400)
    assert np.array_equal(T, twin)
    assert np.array_equal(D, T - 1)


@pytest.mark.parametrize("layout, partition", [(sm.replica_sets(1000, 9), True), (sm.block(12, 4), True),
                                               (sm.replica_sets(600, 3), False), (sm.block(5, 1), False)])
def test_wipeout_mc_takes_the_partition_kernel_where_it_makes_fewer_draws(layout, partition):
    """Few large sets: the order statistics (111 draws against ~561 failures at N = 1000, r = 9); many small sets
    (N = 600, r = 3: 200 sets, ~92 failures): failure by failure."""
    from spare_mc.mc.survivability import partition_classes
    res = sm.wipeout_mc(layout, 50, rng=4)
    T, D = np.empty(50, np.int64), np.empty(50, np.int64)
    rng = np.random.default_rng(4)  # alive while the kernel reads its state by address
    K.wipeout_partition(*K.raw_source(rng), layout.n_groups, *partition_classes(layout), 50, T, D)
    seq = sm.wipeout_mc(layout, 50, rng=4, method="sequential")
    assert np.array_equal(res.T, T if partition else seq.T)


@pytest.mark.parametrize("layout", [PARTITIONS[i] for i in (0, 1, 2, 4)], ids=lambda l: f"{l.kind}-{l.n_groups}-{l.r}")
def test_partition_kernel_has_the_sequential_law(layout):
    """The exact law of T (enumeration of every dead set for small N, else the sets' law) against both kernels."""
    T, D = np.empty(20_000, np.int64), np.empty(20_000, np.int64)
    from spare_mc.mc.survivability import partition_classes
    rng = np.random.default_rng(np.random.SeedSequence([layout.n_groups, 1]))  # alive while the kernel runs
    K.wipeout_partition(*K.raw_source(rng), layout.n_groups, *partition_classes(layout), 20_000, T, D)
    fast = sm.mc.survivability.WipeoutResult(T, D, None, layout.kind, layout.n_groups, layout.r, False)
    seq = sm.wipeout_mc(layout, 20_000, rng=np.random.SeedSequence([layout.n_groups, 2]), method="sequential")
    for res in (fast, seq):
        assert _exact_law_pvalue(layout, res.T) > ALPHA
    assert stats.ks_2samp(fast.T, seq.T).pvalue > ALPHA


def _exact_law_pvalue(layout, T):
    """Chi-square p-value of the sample ``T`` against the exact law of ``layout`` (every dead set enumerated for a
    Layout, N <= 12; else the replica sets' law). Values of expected count below 20 are pooled; a pool of expected
    count 0 must be empty."""
    n = layout.n_groups
    if isinstance(layout, sm.Layout):
        surv = np.array([float(x) for x in ref.survival_by_subsets(layout, max_groups=12)])
    else:
        surv = sm.exact_wipeout("block", n, layout.r).survival
    pmf = -np.diff(surv)  # P(T = m + 1)
    counts = np.bincount(T - 1, minlength=n)[:n]
    keep = pmf * T.size >= 20
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(pmf[keep], pmf[~keep].sum()) * T.size
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
        assert counts[~keep].sum() == 0
    return stats.chisquare(obs, exp).pvalue


def test_partition_extremes():
    """r = N: T = N always; r = 1: T = 1 always; method is validated."""
    assert (sm.wipeout_mc(sm.replica_sets(7, 7), 50, rng=1).T == 7).all()
    assert (sm.wipeout_mc(sm.block(5, 1), 50, rng=1).T == 1).all()
    with pytest.raises(ValueError, match="method"):
        sm.wipeout_mc("block", 10, n_groups=12, r=3, method="fast")


def test_sequential_method_keeps_the_failure_order_of_other_layouts():
    """method="sequential" consumes draws like every fixed layout: block and cyclic at one seed see one order."""
    n, r = 60, 3
    seq = sm.wipeout_mc(sm.block(n, r), 200, rng=5, method="sequential")
    T = np.empty(200, np.int64)
    D = np.empty(200, np.int64)
    lay = sm.block(n, r)
    rng = np.random.default_rng(5)  # alive while the kernel reads its state by address
    K.wipeout_generic(*K.raw_source(rng), n, lay.group_ptr, lay.group_types, np.full(n, r), 200, False, T, D)
    assert np.array_equal(seq.T, T)


@pytest.mark.parametrize("n,r", [(50, 4), (600, 9), (7, 7), (10, 1)])
def test_cyclic_fast_path_equals_generic_kernel(n, r):
    lay = sm.cyclic(n, r)
    fast = sm.wipeout_mc(lay, 2000, rng=5, method="sequential")
    T = np.empty(2000, np.int64)
    D = np.empty(2000, np.int64)
    rng = np.random.default_rng(5)
    K.wipeout_generic(*K.raw_source(rng), n, lay.group_ptr, lay.group_types, np.full(n, r), 2000, False, T, D)
    assert np.array_equal(fast.T, T) and np.array_equal(fast.dead_before, D)


def test_regression_pin():
    """Guard against silent changes of the random stream or the kernels: fixed seed, fixed values."""
    res = sm.wipeout_mc("cyclic", 5, n_groups=600, r=9, rng=2026, method="sequential")
    assert res.T.tolist() == PINNED
    res = sm.wipeout_mc("cyclic", 5, n_groups=600, r=9, rng=2026)  # auto: the failure times' order statistics
    assert res.T.tolist() == PINNED_ORDER


PINNED = [331, 306, 309, 290, 183]  # recorded when the Lemire bounded draw was introduced
PINNED_ORDER = [330, 272, 287, 331, 332]  # recorded when the order-statistic kernels were introduced


def _gof(res, exact):
    """Chi-square goodness of fit of the T sample against the exact pmf, bins of expected count >= 20."""
    pmf = exact.pmf()
    counts = np.bincount(res.T, minlength=exact.n_groups + 1).astype(float)
    exp = pmf * res.reps
    obs_b, exp_b, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(counts, exp):
        acc_o += o
        acc_e += e
        if acc_e >= 20:
            obs_b.append(acc_o)
            exp_b.append(acc_e)
            acc_o = acc_e = 0.0
    obs_b[-1] += acc_o
    exp_b[-1] += acc_e
    return stats.chisquare(obs_b, exp_b).pvalue


MC_CASES = [("cyclic", 600, 9), ("cyclic", 1000, 3), ("cyclic", 600, 20), ("block", 600, 3), ("block", 1000, 10),
            ("random", 600, 9), ("random", 200, 2), ("cyclic", 50, 1)]
# every method on a fixed layout; a random layout by name is fresh per replication (failure by failure only)
MC_METHOD_CASES = [(*case, m) for case in MC_CASES for m in WIPEOUT_METHODS if case[0] != "random" or m != "order"]


@pytest.mark.parametrize("layout,n,r,method", MC_METHOD_CASES)
def test_mc_matches_exact_law(layout, n, r, method):
    res = sm.wipeout_mc(layout, 20_000, n_groups=n, r=r, rng=np.random.SeedSequence([n, r, 7]), method=method)
    ex = sm.exact_wipeout(layout, n, r)
    c = sm.compare(res.estimate("T"), ex.mean, alpha=ALPHA)
    assert c.consistent, c
    if r > 1:
        assert _gof(res, ex) > ALPHA
    assert np.array_equal(res.dead_before, res.T - 1)


def test_fixed_random_layout_is_not_the_average():
    """A fixed random layout is a different (conditional) quantity; fresh layouts target the exact average."""
    fresh = sm.wipeout_mc("random", 4000, n_groups=60, r=3, rng=1)
    fixed = sm.wipeout_mc(sm.random_holders(60, 3, rng=2), 4000, rng=1)
    assert fresh.fresh_layout and not fixed.fresh_layout
    assert sm.compare(fresh.estimate("T"), sm.exact_wipeout("random", 60, 3).mean, alpha=ALPHA).consistent


@pytest.mark.parametrize("layout,n,r", [("cyclic", 300, 5), ("block", 300, 3), ("random", 100, 3)])
def test_with_replacement_matches_its_own_exact_mean(layout, n, r):
    """With replacement, the k-th new death takes Geometric((N-k)/N) draws: E[T] = sum_m P(T>m) N/(N-m)."""
    res = sm.wipeout_mc(layout, 20_000, n_groups=n, r=r, failures=sm.UniformOrder(True), rng=3)
    surv = sm.exact_wipeout(layout, n, r).survival
    m = np.arange(n)
    expected = float(np.sum(surv[:-1] * n / (n - m)))
    assert sm.compare(res.estimate("T"), expected, alpha=ALPHA).consistent
    # and the distinct dead groups before the wipe-out still follow the without-replacement law
    assert sm.compare(res.estimate("masked"), sm.exact_wipeout(layout, n, r).mean - 1, alpha=ALPHA).consistent


def test_survival_curve_band_covers_exact():
    """A Bonferroni band over the 201 points: exact (Clopper-Pearson) intervals, whose coverage holds at every
    point whatever the probability; Wilson's undercovers in the far tail at such levels."""
    res = sm.wipeout_mc("cyclic", 20_000, n_groups=200, r=4, rng=9)
    ex = sm.exact_wipeout("cyclic", 200, 4)
    p, lo, hi = res.survival_curve(level=1 - ALPHA / 201, interval="exact")
    inside = (lo <= ex.survival + 1e-12) & (ex.survival - 1e-12 <= hi)
    assert inside.all()
    with pytest.raises(ValueError, match="interval"):
        res.survival_curve(interval="agresti")


def test_same_seed_same_result_and_xarray():
    a = sm.wipeout_mc("block", 100, n_groups=60, r=3, rng=4)
    b = sm.wipeout_mc("block", 100, n_groups=60, r=3, rng=4)
    assert np.array_equal(a.T, b.T)
    ds = a.to_xarray()
    assert ds["T"].attrs["units"] == "failures" and ds.attrs["layout"] == "block"
    assert json.loads(ds.attrs["failures"]) == a.failures  # JSON, not a Python repr


# --- property tests (hypothesis) -----------------------------------------------------------------------------
layouts = st.builds(lambda n, r, kind, seed: sm.make_layout(kind, n, min(r, n), rng=seed),
                    st.integers(2, 30), st.integers(1, 5), st.sampled_from(["cyclic", "random"]),
                    st.integers(0, 2**32 - 1))


@settings(max_examples=60, deadline=None)
@given(layout=layouts, data=st.data())
def test_more_dead_groups_never_unwipe(layout, data):
    dead = data.draw(st.sets(st.integers(0, layout.n_groups - 1)))
    extra = data.draw(st.sets(st.integers(0, layout.n_groups - 1)))
    if layout.is_wiped(dead):
        assert layout.is_wiped(dead | extra)


@settings(max_examples=40, deadline=None)
@given(layout=layouts, seed=st.integers(0, 2**32 - 1))
def test_relabelling_groups_changes_nothing(layout, seed):
    perm = np.random.default_rng(seed).permutation(layout.n_groups)
    relabelled = sm.Layout(perm[layout.holders])
    if layout.n_groups <= 14:
        assert ref.survival_by_subsets(relabelled) == ref.survival_by_subsets(layout)
    dead = set(range(layout.n_groups // 2))
    assert layout.is_wiped(dead) == relabelled.is_wiped({int(perm[g]) for g in dead})


# --- bad input -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, exc, match", [
    (lambda: sm.wipeout_mc("cyclic", 0, n_groups=10, r=2), ValueError, r"`reps` must be >= 1"),
    (lambda: sm.wipeout_mc("cyclic", 10), ValueError, r"`n_groups` and `r` are required"),
    (lambda: sm.wipeout_mc("ring", 10, n_groups=10, r=2), ValueError, r"`layout` must be one of"),
    (lambda: sm.wipeout_mc(42, 10), TypeError, r"`layout` must be a Layout"),
    (lambda: sm.wipeout_mc(sm.cyclic(10, 2), 10, n_groups=11), ValueError, r"`n_groups`=11 disagrees"),
    (lambda: sm.wipeout_mc(sm.cyclic(10, 2), 10, r=3), ValueError, r"`r`=3 disagrees"),
    (lambda: sm.wipeout_mc(sm.cyclic(10, 2), 10, fresh_layout=True), ValueError, r"`fresh_layout`=True draws"),
    (lambda: sm.wipeout_mc(sm.cyclic(10, 2), 10, fresh_layout=1), TypeError, r"`fresh_layout` must be a bool"),
    (lambda: sm.wipeout_mc(sm.cyclic(10, 2), 10, failures="weibull"), TypeError, r"`failures` must be"),
    (lambda: sm.wipeout_mc(sm.cyclic(10, 2), 10, failures=sm.PerGPU(1e6)), ValueError, r"`topology` is required"),
    (lambda: sm.wipeout_mc(sm.cyclic(10, 2), 10, failures=sm.PerGPU(1e6), topology=sm.Topology(40, 20)),
     ValueError, r"`topology` has N=20 groups but the layout has N=10"),
    (lambda: sm.wipeout_mc(sm.cyclic(10, 2), 10, failures=sm.PerGPU(1e6), topology="big"), TypeError,
     r"`topology` must be a Topology"),
    # a topology the group-level models do not use is still checked, not ignored; N and r are checked as integers
    (lambda: sm.wipeout_mc(sm.cyclic(10, 2), 10, topology="x"), TypeError, r"`topology` must be a Topology"),
    (lambda: sm.wipeout_mc(sm.cyclic(10, 2), 10, topology=sm.Topology(40, 20)), ValueError, r"has N=20 groups"),
    (lambda: sm.wipeout_mc(sm.cyclic(10, 2), 10, n_groups="10"), TypeError, r"`n_groups` must be an integer, got '10'"),
    (lambda: sm.wipeout_mc(sm.cyclic(10, 2), 10, r=2.0), TypeError, r"`r` must be an integer, got 2.0"),
    (lambda: sm.wipeout_mc("cyclic", 10, n_groups=10, r=2).estimate("time_s"), ValueError, r"needs a failure model"),
    (lambda: sm.wipeout_mc("cyclic", 10, n_groups=10, r=2).estimate("mean"), ValueError, r"`quantity` must be"),
])
def test_wipeout_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --- the numpy order-statistic baseline (reference.wipeout_order_statistics) ---------------------------------
class _GivenTimes:
    """Stands in for a Generator: ``random`` returns the given failure times."""

    def __init__(self, times):
        self.times = times

    def random(self, shape):
        assert shape == self.times.shape
        return self.times


BASELINE_LAYOUTS = [sm.cyclic(13, 3), sm.block(12, 4), sm.replica_sets(11, 4), sm.sidon(21, 4),
                    sm.random_holders(15, 3, rng=3), sm.Layout(np.random.default_rng(1).permutation(13)[
                        sm.cyclic(13, 3).holders]), sm.cyclic(1, 1)]


@pytest.mark.parametrize("layout", BASELINE_LAYOUTS)
def test_order_statistics_baseline_equals_the_reference_trial_on_shared_orders(layout):
    """Exact: failure times that rank the groups in a given order give that order's T."""
    rng = np.random.default_rng(7)
    n = layout.n_groups
    orders = np.array([rng.permutation(n) for _ in range(200)])
    times = np.argsort(orders, axis=1) / n  # group orders[i, k] fails k-th
    T = ref.wipeout_order_statistics(ref.holder_table(layout), n, 200, _GivenTimes(times), batch=200)
    assert T.tolist() == [ref.wipeout_trial(layout, o.tolist())[0] for o in orders]


@pytest.mark.parametrize("layout", [sm.cyclic(200, 4), sm.sidon(200, 4), sm.replica_sets(202, 4),
                                    sm.random_holders(200, 4, rng=1)])
def test_order_statistics_baseline_has_the_law_of_wipeout_mc(layout):
    """Statistical: the baseline's mean T agrees with the kernel's within sampling error (two-sample z)."""
    n = layout.n_groups
    base = ref.wipeout_order_statistics(ref.holder_table(layout), n, 6000, np.random.default_rng(3))
    fast = sm.wipeout_mc(layout, 6000, rng=4).T
    z = (base.mean() - fast.mean()) / np.sqrt(base.var(ddof=1) / base.size + fast.var(ddof=1) / fast.size)
    assert 2 * stats.norm.sf(abs(z)) > ALPHA
    assert stats.ks_2samp(base, fast).pvalue > ALPHA


@pytest.mark.parametrize("layout", [sm.random_holders(300, 9, rng=2), sm.block(300, 3), sm.replica_sets(301, 9),
                                    sm.Layout(np.vstack([np.arange(40), (np.arange(40) + 1) % 40]).T)])
def test_generic_kernel_split_table_equals_the_python_twin(layout):
    """The split table (fixed width + overflow) keeps the draw contract: identical T and masked failures."""
    res = sm.wipeout_mc(layout, 200, rng=12, method="sequential")  # partitions (block, replica sets) default to
    # their own kernel (test_partition_kernel_*)
    twin = _python_twin(layout, 200, 12)
    assert np.array_equal(res.T, twin[:, 0]) and np.array_equal(res.dead_before, twin[:, 1])


def test_generic_kernel_overflow_of_a_lopsided_layout():
    """One group holds every type: the table is one column wide and that group's other types go to the overflow
    list (a padded table would be N x N); same draws, same results."""
    n = 30
    holders = np.column_stack([np.zeros(n, np.int64), np.r_[1:n, 1]])
    holders[0, 1] = 2
    lay = sm.Layout(holders)
    res = sm.wipeout_mc(lay, 200, rng=13)
    twin = _python_twin(lay, 200, 13)
    assert np.array_equal(res.T, twin[:, 0]) and np.array_equal(res.dead_before, twin[:, 1])


# --- every fixed layout: T from the order statistics of the groups' failure times ---------------------------------
ORDER_LAYOUTS = [sm.cyclic(13, 3), sm.cyclic(12, 5), sm.cyclic(9, 1), sm.cyclic(8, 8), sm.cyclic(1, 1),
                 sm.sidon(21, 4), sm.random_holders(15, 3, rng=3), sm.block(12, 4), sm.replica_sets(11, 4),
                 sm.Layout(np.random.default_rng(1).permutation(13)[sm.cyclic(13, 3).holders]),
                 sm.Layout(np.column_stack([np.zeros(30, np.int64), np.r_[1:30, 1]])), sm.sidon(200, 6)]


def _order_kernel(layout, reps, seed, drop=0, window=False):
    T, D = np.empty(reps, np.int64), np.empty(reps, np.int64)
    rng = np.random.default_rng(seed)  # alive while the kernel reads its state by address
    if window:
        K.wipeout_cyclic_window(*K.raw_source(rng), layout.n_groups, layout.r, order_stat_table(layout), reps, drop,
                                T, D)
    else:
        K.wipeout_order_stat(*K.raw_source(rng), layout.n_groups, order_stat_table(layout), reps, drop, T, D)
    assert np.array_equal(D, T - 1)
    return T


@pytest.mark.parametrize("layout", ORDER_LAYOUTS, ids=lambda l: f"{l.kind}-{l.n_groups}-{l.r}")
@pytest.mark.parametrize("drop", [0, 28])
def test_order_stat_kernels_equal_the_python_twin_trial_by_trial(layout, drop):
    """Same raw draws, same T: the kernels (threshold pass, fallback pass, sliding windows, tie breaks) against a
    brute-force twin. ``drop`` = 28 leaves 16 distinct failure times, so most trials break a tie at ``m``."""
    reps = 60 if layout.n_groups > 100 else 400
    twin = ref.wipeout_order_stat_twin(np.random.default_rng(8).bit_generator, order_stat_table(layout),
                                       layout.n_groups, reps, drop)
    assert np.array_equal(_order_kernel(layout, reps, 8, drop), twin)
    if layout.kind == "cyclic":
        assert np.array_equal(_order_kernel(layout, reps, 8, drop, window=True), twin)


@pytest.mark.parametrize("layout", [sm.cyclic(12, 3), sm.sidon(12, 3), sm.random_holders(11, 4, rng=2),
                                    sm.replica_sets(10, 3), sm.cyclic(12, 5)],
                         ids=lambda l: f"{l.kind}-{l.n_groups}-{l.r}")
@pytest.mark.parametrize("drop", [0, 29])
def test_order_stat_kernel_has_the_exact_law(layout, drop):
    """Chi-square against the exact law (every dead set enumerated, N <= 12). With ``drop`` = 29 there are only 8
    distinct failure times, so nearly every trial's T comes through the random tie break: that is the check that
    the tie break keeps the law exact."""
    T = _order_kernel(layout, 20_000, np.random.SeedSequence([layout.n_groups, layout.r, drop]), drop,
                      window=layout.kind == "cyclic" and isinstance(layout, sm.Layout))
    assert _exact_law_pvalue(layout, T) > ALPHA


@pytest.mark.parametrize("lay, method", [(sm.sidon(300, 8), "order"), (sm.block(300, 5), "auto")],
                         ids=["order", "partition"])
def test_failure_time_kernels_consecutive_calls_equal_one_call(lay, method):
    """One raw draw per trial and no state carried between trials: chunks of one stream are exactly one call's
    values, which failure by failure they are not (its permutation state carries over between trials), as the
    docstring of ``reps`` says."""
    if method == "auto":
        assert uniform_order_kernel(lay, "auto") == "partition"
    one = sm.wipeout_mc(lay, 400, rng=3, method=method).T
    gen = np.random.default_rng(3)
    parts = [sm.wipeout_mc(lay, k, rng=gen, method=method).T for k in (150, 1, 249)]
    assert np.array_equal(one, np.concatenate(parts))
    seq = sm.wipeout_mc(lay, 400, rng=3, method="sequential").T
    gen = np.random.default_rng(3)
    assert not np.array_equal(seq, np.concatenate([sm.wipeout_mc(lay, k, rng=gen, method="sequential").T
                                                   for k in (150, 1, 249)]))


def test_order_method_shares_failure_times_between_layouts():
    """On one rng every layout run by the order statistics reads the same failure times: cyclic through its
    sliding windows equals the generic kernel on the cyclic table, and a layout whose types are a relabelling of
    another's (same holder sets, types permuted) gets the same T trial by trial."""
    lay = sm.cyclic(400, 9)
    assert np.array_equal(sm.wipeout_mc(lay, 300, rng=4, method="order").T, _order_kernel(lay, 300, 4))
    perm = np.random.default_rng(0).permutation(400)
    shuffled = sm.Layout(lay.holders[perm], kind="custom")
    assert np.array_equal(sm.wipeout_mc(shuffled, 300, rng=4, method="order").T, _order_kernel(lay, 300, 4))


@pytest.mark.parametrize("layout, kernel", [
    (sm.cyclic(1000, 9), "cyclic-window"), (sm.cyclic(600, 3), "cyclic-unit"), (sm.sidon(1000, 9), "order"),
    (sm.random_holders(600, 3, rng=1), "sequential"), (sm.replica_sets(1000, 9), "partition"),
    (sm.replica_sets(600, 3), "sequential"), (sm.block(600, 3), "sequential"), (sm.cyclic(200, 4), "cyclic-window")],
    ids=lambda x: x if isinstance(x, str) else f"{x.kind}-{x.n_groups}-{x.r}")
def test_auto_takes_the_order_statistics_when_the_wipeout_comes_late(layout, kernel):
    """``n_types^(-1/r) >= 0.25``: 1000^(-1/9) = 0.46 and 200^(-1/4) = 0.27 take them; 600^(-1/3) = 0.12 does not."""
    assert uniform_order_kernel(layout) == kernel
    res = sm.wipeout_mc(layout, 40, rng=6)
    method = _METHOD_OF_KERNEL[kernel]
    expected = _partition_call(layout, 40, 6) if method is None else sm.wipeout_mc(layout, 40, rng=6, method=method).T
    assert np.array_equal(res.T, expected)


def _partition_call(layout, reps, seed):
    from spare_mc.mc.survivability import partition_classes
    T, D = np.empty(reps, np.int64), np.empty(reps, np.int64)
    rng = np.random.default_rng(seed)  # alive while the kernel reads its state by address
    K.wipeout_partition(*K.raw_source(rng), layout.n_groups, *partition_classes(layout), reps, T, D)
    return T


_METHOD_OF_KERNEL = {"cyclic-window": "order", "order": "order", "cyclic-unit": "sequential",
                     "sequential": "sequential", "partition": None}


@pytest.mark.parametrize("kwargs, match", [
    ({"failures": sm.UniformOrder(with_replacement=True)}, "without replacement"),
    ({"failures": sm.SystemRenewal(300.0)}, "SystemRenewal"),
])
def test_order_method_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sm.wipeout_mc(sm.cyclic(20, 3), 10, method="order", **kwargs)
    with pytest.raises(ValueError, match="fixed layout"):
        sm.wipeout_mc("random", 10, n_groups=20, r=3, method="order")


def test_splitmix64_gives_the_published_reference_values():
    """SplitMix64 started at 1234567: the reference outputs published with the generator's C code; kernel = twin."""
    expected = [6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431,
                16408922859458223821]
    assert [ref.splitmix64_py(1234567, i) for i in range(5)] == expected
    assert [int(K.splitmix64(np.uint64(1234567), i)) for i in range(5)] == expected
    u = np.empty(7, np.uint32)
    K.failure_times_into(np.uint64(1234567), 7, 0, u)
    halves = [w for z in expected[:4] for w in (z >> 32, z & 0xFFFFFFFF)][:7]
    assert u.tolist() == halves


def test_order_stat_pin():
    """The generic failure-time kernel's values for a fixed seed (the twin shares its draw protocol, so a change
    made to both would pass the twin test: this catches it)."""
    assert sm.wipeout_mc(sm.sidon(600, 9), 5, rng=2026).T.tolist() == PINNED_ORDER_SIDON


PINNED_ORDER_SIDON = [309, 317, 315, 221, 297]  # recorded when the tie break moved to the trial's SplitMix64 stream


def test_order_stat_layouts_stay_in_step_through_ties():
    """A tie at m draws from the trial's own SplitMix64 stream, not the caller's generator: after runs on
    different layouts with frequent ties (3-bit times), the generators are in the same state, so the layouts
    keep sharing their failure times trial by trial."""
    states = []
    for lay in (sm.cyclic(40, 6), sm.sidon(40, 6), sm.random_holders(40, 6, rng=1)):
        rng = np.random.default_rng(5)
        T, D = np.empty(50, np.int64), np.empty(50, np.int64)
        K.wipeout_order_stat(*K.raw_source(rng), 40, order_stat_table(lay), 50, 29, T, D)
        states.append(rng.bit_generator.state["state"]["state"])
    assert states[0] == states[1] == states[2]


def test_a_cyclic_label_on_another_table_is_not_trusted():
    """The cyclic kernels assume the unit-stride table; a different table labelled "cyclic" runs the generic
    kernels and gets its own law (Sidon's table here), the same values as under its own label. Layout refuses such
    a label when it is built; the kernels do not rely on that (the label is relabelled here as sidon() does)."""
    sid = sm.sidon(50, 5)
    with pytest.raises(ValueError, match=r"not the cyclic table of offsets"):
        sm.Layout(sid.holders, kind="cyclic")
    fake = sm.Layout(sid.holders)
    object.__setattr__(fake, "kind", "cyclic")
    assert uniform_order_kernel(fake) == "order" and uniform_order_kernel(fake, "sequential") == "sequential"
    assert uniform_order_kernel(sm.Layout(sm.cyclic(50, 5).holders, kind="custom")) == "cyclic-window"
    for method in WIPEOUT_METHODS:
        assert np.array_equal(sm.wipeout_mc(fake, 300, rng=1, method=method).T,
                              sm.wipeout_mc(sid, 300, rng=1, method=method).T)


def test_uniform_order_kernel_validates_method():
    with pytest.raises(ValueError, match="method"):
        uniform_order_kernel(sm.cyclic(20, 3), "bogus")


def test_order_stat_table_of_replica_sets_with_an_assignment():
    """Replica sets placed by an explicit assignment (set of each group, not consecutive): one table row per set,
    holding exactly that set's members (padded with a repeat), and the failure-time kernel equals its twin."""
    assignment = np.random.default_rng(3).permutation(np.repeat(np.arange(4), [4, 4, 3, 3]))  # sizes 4, 4, 3, 3
    lay = sm.ReplicaSets(14, 3, assignment=assignment)
    table = order_stat_table(lay)
    assert table.shape == (lay.n_sets, 4)
    for j, row in enumerate(table.tolist()):
        members = set(np.flatnonzero(assignment == lay.group_types[lay.group_ptr[row[0]]]).tolist())
        assert set(row) == members and len(members) == lay.sizes[j]
    rows = sorted(tuple(sorted(set(row))) for row in table.tolist())
    assert rows == sorted(tuple(np.flatnonzero(assignment == s).tolist()) for s in range(lay.n_sets))
    twin = ref.wipeout_order_stat_twin(np.random.default_rng(9).bit_generator, table, 14, 300)
    assert np.array_equal(sm.wipeout_mc(lay, 300, rng=9, method="order").T, twin)
