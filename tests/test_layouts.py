import itertools

import numpy as np
import pytest

import spare_mc as sm
from spare_mc.model._sidon import (bose_chowla_set, bose_chowla_set_prime_power, find_sidon, singer_set,
                                   singer_set_prime_power)
from spare_mc.model.kinds import LAYOUT_TABLE, SPARE_LAYOUTS
from spare_mc.model.layouts import _KINDS, OPTIMAL_GOLOMB_RULERS, _is_modular_sidon, sidon_offsets


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


@pytest.mark.parametrize("dead, exc, match", [
    ([-1, -2], ValueError, r"`dead` must lie in \[0, N\) with N=4, got values in \[-2, -1\]"),  # wrapped before
    ([0.9, 1.9], TypeError, r"must hold integer group indices, got dtype float64"),  # truncated to 0, 1 before
    ("01", TypeError, r"`dead` must be a collection of group indices, got str"),  # read as groups 0 and 1 before
    ([4], ValueError, r"got values in \[4, 4\]"),  # an IndexError before
    (3, TypeError, r"got int"),
])
@pytest.mark.parametrize("lay", [sm.cyclic(4, 2), sm.block(4, 2)], ids=["Layout", "ReplicaSets"])
def test_is_wiped_refuses_what_is_not_a_set_of_groups(lay, dead, exc, match):
    """The reference definition answered True for wrapped, truncated or character 'groups' (QA pass); the replica
    sets' definition had no check at all (-1 wrapped to the last group, 0.9 was group 0)."""
    with pytest.raises(exc, match=match):
        lay.is_wiped(dead)
    assert not lay.is_wiped([]) and lay.is_wiped({0, 1}) and lay.is_wiped(np.array([2, 3], dtype=np.uint8))
    assert lay.is_wiped(g for g in (2, 3)) and lay.is_wiped([0, 0, 1]) and not lay.is_wiped([0, 0])


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
    # r(r-1) = 42 = N-1 would make a perfect difference set mod 43, i.e. a projective plane of order 6, which does
    # not exist (Bruck-Ryser); every construction fails and the error says so and what to do
    with pytest.raises(ValueError, match=r"no modular Sidon offsets found for N=43, r=7 \(not found: tried the "
                                         r"optimal Golomb ruler, 3 greedy orders, .*, a tabu search\); pass "
                                         r"explicit offsets to cyclic_offsets\(\)"):
        sidon_offsets(43, 7, attempts=3)


def test_sidon_ruler_search_stops_at_its_work_limit(monkeypatch):
    """The ruler search has a work limit (N = 10^5, r = 300 took 24 GB and was killed before): with a tiny one,
    a case the rulers solve is not found, and the error names the limit and where the search stopped."""
    import spare_mc.model._sidon as sid
    find_sidon.cache_clear()
    try:
        assert find_sidon(1000, 26)[1] == "singer_ruler"
        find_sidon.cache_clear()
        monkeypatch.setattr(sid, "RULER_WORK_BUDGET", 10_000)
        with pytest.raises(ValueError, match=r"N=1000, r=26 \(not found: .*rulers cut from Singer and Bose-Chowla "
                                             r"sets up to modulus [\d,]+, where the search stopped at its work "
                                             r"limit .*RULER_WORK_BUDGET = 1\.0e\+04.*no tabu search"):
            sidon_offsets(1000, 26)
    finally:
        find_sidon.cache_clear()


def _ruler_batches_at_once(n, r):
    """The ruler construction as one array per set (the slow twin of ``_ruler_batches``, whose memory is bounded:
    shortest first, ties in (dilation, window) order)."""
    from spare_mc.model._sidon import _units, algebraic_sets
    for name, q, v, s in algebraic_sets(max_v=4 * n * n, min_size=r, keep=lambda q, v, k: (r - 1) * v <= 2 * n * k):
        base = np.asarray(s, dtype=np.int64)
        k = base.size
        ts = _units(v)
        ts = ts[ts <= v // 2]
        dil = np.sort((ts[:, None] * base[None, :]) % v, axis=1)
        ext = np.concatenate([dil, dil + v], axis=1)
        spans = ext[:, r - 1:r - 1 + k] - ext[:, :k]
        ti, wi = np.nonzero(spans < n)
        if ti.size == 0:
            continue
        order = np.argsort(spans[ti, wi], kind="stable")
        ti, wi = ti[order], wi[order]
        rows = ext[ti[:, None], wi[:, None] + np.arange(r)[None, :]]
        yield name, q, rows - rows[:, :1]


@pytest.mark.parametrize("n, r", [(1000, 26), (700, 22), (300, 16)])
def test_ruler_batches_are_the_all_at_once_rulers_in_bounded_batches(n, r):
    from spare_mc.model._sidon import _ruler_batches
    want = list(_ruler_batches_at_once(n, r))
    assert want
    for batch, block_spans in ((4096, 1 << 21), (37, 100)):  # small blocks and batches: every boundary crossed
        got = list(_ruler_batches(n, r, batch=batch, block_spans=block_spans))
        assert all(rows.shape[0] <= batch for _, _, rows in got)
        assert [(a, b) for a, b, _ in want] == list(dict.fromkeys((a, b) for a, b, _ in got))
        assert np.array_equal(np.concatenate([x for _, _, x in want]), np.concatenate([x for _, _, x in got]))


@pytest.mark.parametrize("n, r, avoid", [(300, 14, tuple(range(1, 9))), (300, 15, (1, 2, 3, 4)),
                                         (400, 17, (1, 2, 3, 4))])
def test_rulers_checked_against_avoided_differences_in_chunks_give_the_same_set(monkeypatch, n, r, avoid):
    """Step 4 of find_sidon with differences to avoid checks the rulers in chunks of bounded memory: the same set
    as checking a whole batch at once (a chunk of every size, one row each included). Each case reaches step 4."""
    from spare_mc.model import _sidon
    monkeypatch.setattr(_sidon, "AVOID_CHUNK_BYTES", 1 << 62)  # the whole batch at once, as before the chunks
    want = _sidon.find_sidon(n, r, avoid=avoid, attempts=20)
    assert want[0] is not None and want[1].endswith("_ruler")
    for size in (1, 3 * max(n, 1000), 1 << 25):
        monkeypatch.setattr(_sidon, "AVOID_CHUNK_BYTES", size)
        assert _sidon.find_sidon(n, r, avoid=avoid, attempts=20) == want


@pytest.mark.parametrize("q", [149, 151, 211])
def test_singer_and_bose_chowla_walk_kernels_match_their_twins(q):
    """The numba walks used for fields above SMALL_FIELD against the Python walks, candidate by candidate
    (primitive ones, which give the whole set, and the others, which stop early)."""
    from spare_mc._kernels.sidon import bose_chowla_walk, singer_walk
    from spare_mc.model._sidon import SMALL_FIELD, _bose_chowla_walk_py, _singer_walk_py
    assert q * q - 1 > SMALL_FIELD
    buf = np.empty(q + 2, dtype=np.int64)
    full = 0
    for a, b, c in itertools.product((0, 1, q - 1), (0, 2, q - 2), (1, 3, q - 1)):
        want = _singer_walk_py(q, a, b, c)
        assert buf[:singer_walk(q, a, b, c, buf)].tolist() == want
        full += len(want) == q + 1
        if b:
            assert buf[:bose_chowla_walk(q, a, b, buf)].tolist() == _bose_chowla_walk_py(q, a, b)
    s = singer_set(q)  # the kernel's set is the Python definition's first full, Sidon walk
    assert len(s) == q + 1 and _is_modular_sidon(s, q * q + q + 1)


def test_prime_power_by_trial_division_to_the_square_root():
    from spare_mc.model._sidon import _is_prime, _prime_power
    powers = {p ** e: (p, e) for p in range(2, 5000) if _is_prime(p) for e in range(1, 13) if p ** e < 5000}
    assert len(powers) == 669 + 42  # the primes below 5000, and their higher powers
    for q in range(0, 5000):
        assert _prime_power(q) == powers.get(q), q


def test_sidon_offsets_dense_n1000_r25():
    # r(r-1) = 600 <= 999: the greedy fails here, a ruler cut from a Bose-Chowla set works
    s = sidon_offsets(1000, 25)
    assert len(s) == 25 and s[0] == 0 and list(s) == sorted(s) and _is_modular_sidon(s, 1000)
    assert find_sidon(1000, 25)[1] == "bose_chowla_ruler"


@pytest.mark.parametrize("q", [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47])
def test_singer_and_bose_chowla_sets_are_sidon(q):
    s = singer_set(q)
    v = q * q + q + 1
    assert len(s) == q + 1 and all(0 <= x < v for x in s) and _is_modular_sidon(s, v)
    # a perfect difference set: every nonzero residue is exactly one difference
    assert sorted((a - b) % v for a in s for b in s if a != b) == list(range(1, v))
    b = bose_chowla_set(q)
    assert len(b) == q and _is_modular_sidon(b, q * q - 1)
    assert singer_set(q + 1 if q > 2 else 4) is None  # composite: not built


@pytest.mark.parametrize("q", [4, 8, 9, 16, 25, 27, 32])
def test_prime_power_singer_and_bose_chowla_sets_are_sidon(q):
    s = singer_set_prime_power(q)
    v = q * q + q + 1
    assert len(s) == q + 1 and sorted((a - b) % v for a in s for b in s if a != b) == list(range(1, v))
    b = bose_chowla_set_prime_power(q)
    assert len(b) == q and _is_modular_sidon(b, q * q - 1)
    assert singer_set_prime_power(6) is None and bose_chowla_set_prime_power(12) is None


def test_field_walk_kernel_matches_python_twin():
    from spare_mc._kernels.sidon import field_powers
    from spare_mc.model._sidon import field_powers_py
    for p, deg in ((2, 6), (3, 3), (5, 2), (2, 4)):
        for code in range(1, p ** deg):
            f_low = np.array([(code // p ** j) % p for j in range(deg)], dtype=np.int64)
            a = np.zeros((p ** deg - 1, deg), dtype=np.int64)
            b = np.zeros_like(a)
            ka, kb = field_powers(p, deg, f_low, a), field_powers_py(p, deg, f_low, b)
            assert ka == kb and np.array_equal(a[:ka], b[:kb])


def test_sidon_rows_kernel_matches_numpy_twin():
    """The early-exit check of ruler rows against the sort of all their differences: random rows (most not
    Sidon), real rulers cut from a Singer set (many Sidon), rows with a difference of n / 2 or a repeated element,
    and a stamp carried over batches as find_sidon does."""
    from spare_mc._kernels.sidon import sidon_rows_mask
    from spare_mc.model._sidon import _ruler_batches, _sidon_rows

    rng = np.random.default_rng(7)
    for n, r in ((31, 5), (64, 6), (200, 8), (1000, 26), (1000, 27)):
        batches = [rng.integers(0, n, size=(300, r))]
        batches += [rows for _, _, rows in itertools.islice(_ruler_batches(n, r), 3)]
        special = np.zeros((2, r), dtype=np.int64)
        special[0, 1:] = np.arange(1, r) ** 2 % n
        special[0, 1] = n // 2  # 0 and n/2: the difference n/2 is its own opposite (a repeat when n is even)
        special[1, :] = 0  # repeated elements: a zero difference
        batches.append(special)
        seen, stamp = np.zeros(n, dtype=np.int64), 0
        hits = 0
        for rows in batches:
            rows = np.ascontiguousarray(rows % n, dtype=np.int64)
            ok = np.empty(rows.shape[0], dtype=np.bool_)
            stamp = sidon_rows_mask(rows, n, seen, stamp, ok)
            assert np.array_equal(ok, _sidon_rows(rows, n)), (n, r)
            hits += int(ok.sum())
        assert stamp == sum(b.shape[0] for b in batches) and hits > 0


@pytest.mark.parametrize("n, r, method", [(993, 32, "singer"), (1986, 31, "singer"), (960, 31, "bose_chowla"),
                                          (1000, 26, "singer_ruler"), (600, 21, "singer_ruler"),
                                          (1000, 27, "singer_ruler"), (1302, 26, "singer")])
def test_algebraic_constructions_reach_dense_sets(n, r, method):
    s, how = find_sidon(n, r)
    assert how == method and len(s) == r and _is_modular_sidon(s, n)


def _old_greedy(n, r, attempts=200):
    """The search of earlier versions (pure Python), the twin of the greedy step."""
    def extend(order):
        s, diffs = [0], set()
        for c in order:
            if len(s) == r:
                break
            new, ok = set(), True
            for a in s:
                for d in ((c - a) % n, (a - c) % n):
                    if d == 0 or d in diffs or d in new:
                        ok = False
                        break
                    new.add(d)
                if not ok:
                    break
            if ok:
                s.append(c)
                diffs |= new
        return s
    cand = list(range(1, n))
    rng = np.random.default_rng(0x5BA2E)
    for attempt in range(attempts):
        s = extend(cand if attempt == 0 else rng.permutation(cand).tolist())
        if len(s) == r:
            return tuple(sorted(s))
    return None


@pytest.mark.parametrize("n, r", [(31, 6), (900, 21), (1000, 22), (66, 8), (50, 7)])
def test_sidon_offsets_found_before_do_not_change(n, r):
    assert sidon_offsets(n, r) == _old_greedy(n, r)


def test_sidon_offsets_with_avoided_differences():
    avoid = tuple(range(1, 8)) + tuple(range(1000 - 7, 1000))
    s, _ = find_sidon(1000, 20, avoid)
    assert _is_modular_sidon(s, 1000)
    assert not {(a - b) % 1000 for a in s for b in s if a != b} & set(avoid)


def test_replica_sets_with_an_assignment():
    sets = sm.ReplicaSets(11, 4, assignment=np.arange(11) % 2)
    assert sets.sizes.tolist() == [6, 5] and sets.set_of_group.tolist() == (np.arange(11) % 2).tolist()
    assert sets.is_wiped([0, 2, 4, 6, 8, 10]) and not sets.is_wiped([0, 1, 2, 3, 4, 5])
    assert sets.to_dict()["set_of_group"] == sets.set_of_group.tolist()
    assert "set_of_group" not in sm.ReplicaSets(11, 4).to_dict()


@pytest.mark.parametrize("assignment, exc, match", [
    (np.arange(10) % 2, ValueError, r"`assignment` must have one entry per group, shape \(11,\)"),
    (np.arange(11) % 3, ValueError, r"set indices in \[0, 2\)"),
    (np.r_[np.zeros(7, int), np.ones(4, int)], ValueError, r"set 0 has 7"),
    (np.arange(11) * 0.5, TypeError, r"`assignment` must hold integers"),
])
def test_replica_sets_assignment_errors(assignment, exc, match):
    with pytest.raises(exc, match=match):
        sm.ReplicaSets(11, 4, assignment=assignment)


def test_make_layout_placed_names():
    topo = sm.Topology(600_000, 600)
    lay = sm.make_layout("domain_aware", 600, 4, topology=topo, level="rack")
    assert lay.kind == "domain_aware" and lay.offsets == (0, 150, 300, 450)
    assert sm.make_layout("domain_aware_block", 600, 4, topology=topo, level="pod").kind == "domain_aware_block"
    with pytest.raises(ValueError, match=r"layout 'domain_aware' needs `topology` and `level`"):
        sm.make_layout("domain_aware", 600, 4)
    with pytest.raises(ValueError, match=r"`topology` and `level` have no effect with layout 'cyclic'"):
        sm.make_layout("cyclic", 600, 4, topology=topo, level="rack")
    with pytest.raises(ValueError, match=r"`topology` must have n_groups = N = 300, got 600"):
        sm.make_layout("domain_aware", 300, 4, topology=topo, level="rack")


def test_the_table_of_layout_kinds_says_what_make_layout_builds():
    """One table (model.kinds.LAYOUT_TABLE): every kind is built by make_layout under its name, Rep's kinds are
    replica sets (ReplicaSets when r does not divide N), SPARe's holder tables, the placed ones need a topology; the
    public tuples are derived from it."""
    topo = sm.Topology(602_000, 602)
    for name, k in LAYOUT_TABLE.items():
        place = dict(topology=topo, level="pod") if k.placed else {}
        lay = sm.make_layout(name, 602, 4, rng=1, **place)
        assert lay.kind == name and isinstance(lay, sm.ReplicaSets) == (k.redundancy == "rep")
        if not k.placed:
            with pytest.raises(ValueError, match="have no effect"):
                sm.make_layout(name, 602, 4, topology=topo, level="pod")
        else:
            with pytest.raises(ValueError, match="needs `topology` and `level`"):
                sm.make_layout(name, 602, 4)
    assert sm.LAYOUT_KINDS == tuple(n for n, k in LAYOUT_TABLE.items() if not k.placed)
    assert sm.PLACED_LAYOUT_KINDS == tuple(n for n, k in LAYOUT_TABLE.items() if k.placed)
    assert sm.EXACT_LAYOUTS == ("cyclic", "random", "block") and SPARE_LAYOUTS == ("cyclic", "sidon", "random")
    for name in sm.EXACT_LAYOUTS:
        sm.exact_wipeout(name, 12, 3)
    # the labels a holder table may carry (model.layouts) are the table's kinds, plus "custom" and "offsets"
    assert set(_KINDS) == set(LAYOUT_TABLE) | {"custom", "offsets"}


@pytest.mark.parametrize("make, match", [
    # a label or offsets that do not describe the table would make to_dict() rebuild another layout (a QA pass)
    (lambda: sm.Layout(np.array([[0, 2], [1, 0], [2, 1]]), kind="cyclic", offsets=(0, 2)),
     r"`holders` is not the cyclic table of offsets \[0, 2\]"),
    # offsets off the canonical form were accepted and did not survive to_dict -> cyclic_offsets (QA pass)
    (lambda: sm.Layout(np.array([[0, 2], [1, 0], [2, 1]]), kind="offsets", offsets=(0, 4)),
     r"`offsets` must satisfy 0 = s_0 < s_1 < ... < s_\(r-1\) < N=3, got \[0, 4\]"),
    (lambda: sm.Layout(np.array([[0, 1], [1, 2], [2, 0]]), kind="offsets", offsets=(0, -1)), r"got \[0, -1\]"),
    (lambda: sm.Layout(sm.random_holders(30, 3, rng=1).holders, kind="cyclic"), r"offsets \[0, 1, 2\]"),
    (lambda: sm.Layout(sm.random_holders(30, 3, rng=1).holders, kind="block"), r"not block replication's table"),
    (lambda: sm.Layout(sm.cyclic(6, 2).holders, kind="sidon"), r"a 'sidon' layout needs its `offsets`"),
    (lambda: sm.Layout(sm.cyclic(6, 2).holders, kind="random", offsets=(0, 1)), r"`offsets` applies to the cyclic"),
    (lambda: sm.Layout(sm.cyclic(6, 2).holders, kind="cyclic", offsets=(0, 1, 2)), r"sequence of r=2 integers"),
    (lambda: sm.Layout([[0, 1], [1, 2], [2, 0]], kind=5), r"`kind` must be one of \['custom', 'cyclic'"),
    (lambda: sm.Layout([[0, 1], [1], [2, 0]]), r"`holders` must be a rectangular \(N, r\) table"),
    (lambda: sm.Layout(np.array([[0, 2**63], [1, 2], [2, 0]], dtype=np.uint64)),
     r"got values in \[0, 9223372036854775808\]"),
    (lambda: sm.cyclic_offsets(10, 3), r"`offsets` must be a sequence of integers"),
    (lambda: sm.cyclic_offsets(10, None), r"`offsets` must be a sequence of integers"),
])
def test_a_layout_label_must_describe_its_table(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_every_built_layout_round_trips_through_its_label():
    for lay in (sm.cyclic(60, 4), sm.sidon(60, 4), sm.block(60, 4), sm.cyclic_offsets(60, (0, 3, 7)),
                sm.Layout(sm.cyclic(60, 4).holders, kind="cyclic"), sm.Layout(sm.block(60, 4).holders, kind="block")):
        d = lay.to_dict()
        again = sm.cyclic_offsets(60, d["offsets"]) if "offsets" in d else sm.make_layout(d["kind"], 60, d["r"])
        assert np.array_equal(again.holders, lay.holders), d
