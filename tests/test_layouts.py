import numpy as np
import pytest

import spare_mc as sm
from spare_mc.layouts import OPTIMAL_GOLOMB_RULERS, _is_modular_sidon, sidon_offsets


def test_cyclic_unit_stride_stacks_and_holders():
    lay = sm.cyclic(6, 3)
    assert lay.stacks()[0] == [0, 1, 2]
    assert lay.stacks()[5] == [5, 0, 1]
    # type j is held by groups j, j-1, j-2
    assert sorted(lay.holders[0].tolist()) == [0, 4, 5]
    assert lay.kind == "cyclic" and lay.offsets == (0, 1, 2)


def test_every_type_has_r_distinct_holders_for_each_constructor():
    for lay in (sm.cyclic(30, 4), sm.sidon(30, 4), sm.block(30, 5), sm.random_holders(30, 4, rng=1),
                sm.cyclic_offsets(30, [0, 3, 7])):
        assert lay.holders.shape == (30, lay.r)
        assert all(len(set(row)) == lay.r for row in lay.holders.tolist())
        # the CSR inverse lists exactly the (group, type) incidences of the holder table
        pairs = {(g, t) for t, row in enumerate(lay.holders.tolist()) for g in row}
        inv = {(g, t) for g, ts in enumerate(lay.stacks()) for t in ts}
        assert pairs == inv


def test_block_replication_sets():
    lay = sm.block(6, 3)
    for t in range(6):
        assert sorted(lay.holders[t].tolist()) == ([0, 1, 2] if t < 3 else [3, 4, 5])
    assert lay.is_wiped([3, 4, 5]) and not lay.is_wiped([0, 1, 3, 4])


def test_cyclic_wipeout_is_r_consecutive_dead_groups():
    lay = sm.cyclic(10, 3)
    assert lay.is_wiped([8, 9, 0])  # wraps around
    assert not lay.is_wiped([0, 2, 4, 5, 7, 8])  # runs of length <= 2 only


@pytest.mark.parametrize("ruler", OPTIMAL_GOLOMB_RULERS)
def test_golomb_table_entries_are_golomb_rulers(ruler):
    diffs = [b - a for a in ruler for b in ruler if b > a]
    assert len(diffs) == len(set(diffs))


@pytest.mark.parametrize("n,r", [(13, 4), (31, 6), (100, 8), (600, 20), (1000, 15), (200, 12), (57, 6)])
def test_sidon_offsets_are_modular_sidon_and_give_independence(n, r):
    s = sidon_offsets(n, r)
    assert len(s) == r and s[0] == 0 and list(s) == sorted(s) and s[-1] < n
    assert _is_modular_sidon(s, n)
    if n <= 100:
        assert sm.sidon(n, r).max_shared_holders() == 1


def test_unit_stride_violates_independence_for_r_at_least_3():
    assert sm.cyclic(20, 2).max_shared_holders() == 1
    assert sm.cyclic(20, 4).max_shared_holders() == 3


def test_random_holders_reproducible_and_uniform(rng):
    a = sm.random_holders(50, 3, rng=7).holders
    b = sm.random_holders(50, 3, rng=7).holders
    assert np.array_equal(a, b)
    # each group is a holder of a given type with probability r/N: chi-square over many draws
    from scipy import stats
    counts = np.zeros(20)
    for _ in range(400):
        counts += np.bincount(sm.random_holders(20, 3, rng=rng).holders.ravel(), minlength=20)
    assert stats.chisquare(counts).pvalue > 1e-4


# --- bad input: every rule has a test -----------------------------------------------------------------------
@pytest.mark.parametrize("call, exc, match", [
    (lambda: sm.cyclic(5, 6), ValueError, r"`r` must satisfy 1 <= r <= N, got r=6 with N=5"),
    (lambda: sm.cyclic(5, 0), ValueError, r"`r` must satisfy"),
    (lambda: sm.cyclic(0, 1), ValueError, r"`n_groups` must be >= 1"),
    (lambda: sm.cyclic(5.0, 2), TypeError, r"`n_groups` must be an integer"),
    (lambda: sm.cyclic(5, True), TypeError, r"`r` must be an integer"),
    (lambda: sm.block(10, 3), ValueError, r"N divisible by r, got N=10, r=3"),
    (lambda: sm.sidon(10, 4), ValueError, r"Sidon offsets are impossible: r\(r-1\) must be <= N-1"),
    (lambda: sm.cyclic_offsets(10, [1, 2]), ValueError, r"must start with s_0 = 0"),
    (lambda: sm.cyclic_offsets(10, [0, 5, 3]), ValueError, r"0 = s_0 < s_1"),
    (lambda: sm.cyclic_offsets(10, [0, 10]), ValueError, r"s_\(r-1\) < N=10"),
    (lambda: sm.cyclic_offsets(10, []), ValueError, r"`offsets` must not be empty"),
    (lambda: sm.Layout(np.array([[0, 0], [1, 0]])), ValueError, r"type 0 has a repeated holder"),
    (lambda: sm.Layout(np.array([[0, 2], [1, 0]])), ValueError, r"group indices in \[0, N\)"),
    (lambda: sm.Layout(np.array([0, 1])), ValueError, r"2-d array"),
    (lambda: sm.Layout(np.array([[0.0, 1.0], [1.0, 0.0]])), TypeError, r"`holders` must hold integers"),
    (lambda: sm.make_layout("ring", 5, 2), ValueError, r"`layout` must be one of"),
])
def test_layout_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_sidon_search_failure_is_a_clear_error():
    # r(r-1) = 600 <= N-1 = 999, but the greedy search does not find a set: it says so and what to do
    with pytest.raises(ValueError, match=r"no modular Sidon offsets found for N=1000, r=25 .* cyclic_offsets"):
        sidon_offsets(1000, 25, attempts=3)
