import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spare_mc as sm
from spare_mc.model._sidon import is_modular_sidon
from spare_mc.model.domain_rates import DOMAIN_MTBF_DEFAULTS, DOMAIN_RATES, domain_mtbf_default_s
from spare_mc.model.failures import FAILURE_KINDS, failure_from_spec
from spare_mc.model.layouts import set_sizes
from spare_mc.model.placement import co_domain_differences, domain_aware, domain_conflicts, max_groups_per_domain
from spare_mc.model.topology import DOMAIN_LEVELS


# --- slow twins -----------------------------------------------------------------------------------------------
def brute_domains(topo, level):
    """Groups of every domain, GPU by GPU."""
    size = topo.domain_size(level)
    m = topo.gpus_per_group
    doms = {}
    for x in range(topo.n_gpus):
        g = x // m if topo.placement == "contiguous" else x % topo.n_groups
        doms.setdefault(x // size, set()).add(g)
    return [doms[d] for d in sorted(doms)]


def brute_differences(topo, level):
    n = topo.n_groups
    return sorted({(a - b) % n for dom in brute_domains(topo, level) for a in dom for b in dom if a != b})


def offsets_exist(n, r, diffs, sidon):
    """Whether some offsets 0 = s_0 < ... < s_{r-1} < N have every pairwise difference outside ``diffs`` (and
    distinct, for ``sidon``): exhaustive."""
    bad = set(diffs)
    for rest in itertools.combinations(range(1, n), r - 1):
        s = (0,) + rest
        d = [(a - b) % n for a in s for b in s if a != b]
        if not bad.intersection(d) and (not sidon or len(set(d)) == len(d)):
            return True
    return False


def sets_exist(topo, level, r):
    """Whether some assignment of groups to sets of sizes set_sizes(N, r) keeps every domain's groups in distinct
    sets: every distinct arrangement of the set labels, no pruning."""
    sizes = set_sizes(topo.n_groups, r)
    doms = brute_domains(topo, level)

    def arrangements(room, prefix):
        if len(prefix) == topo.n_groups:
            yield prefix
            return
        for j, c in enumerate(room):
            if c:
                room[j] -= 1
                yield from arrangements(room, prefix + [j])
                room[j] += 1

    return any(all(len({a[g] for g in d}) == len(d) for d in doms) for a in arrangements(list(sizes), []))


topologies = st.builds(
    lambda n, m, gpn, npr, rpp, ppp, placement: sm.Topology(n * m, n, gpus_per_node=gpn, nodes_per_rack=npr,
                                                              racks_per_power=rpp, power_per_pod=ppp,
                                                              placement=placement),
    st.integers(2, 14), st.integers(1, 6), st.integers(1, 4), st.integers(1, 3), st.integers(1, 3),
    st.integers(1, 3), st.sampled_from(["contiguous", "strided"]))
levels = st.sampled_from(DOMAIN_LEVELS)


# --- the pod level and the rate table ------------------------------------------------------------------------
def test_pod_level_sizes_and_failure_kind():
    topo = sm.Topology(600_000, 600)
    assert DOMAIN_LEVELS == ("node", "rack", "power", "pod") and "pod" in FAILURE_KINDS
    assert topo.domain_size("pod") == 8192 and sm.Topology(600_000, 600, power_per_pod=2).domain_size("pod") == 512
    ptr, _ = topo.domain_groups("pod")
    assert ptr.size - 1 == -(-600_000 // 8192) and max_groups_per_domain(topo, "pod") == 10
    model, t = failure_from_spec("pod", 600, mtbf_s=300.0, shape=0.78, domain_mtbf_s=1e6)
    assert model.level == "pod" and t == topo
    assert sm.Topology.from_dict({k: v for k, v in topo.to_dict().items() if k != "power_per_pod"}) == topo
    with pytest.raises(ValueError, match=r"`domain_mtbf_s` .* is required with failure_model='pod'"):
        failure_from_spec("pod", 600, mtbf_s=300.0, shape=0.78)
    with pytest.raises(ValueError, match=r"`power_per_pod` must be >= 1"):
        sm.Topology(600_000, 600, power_per_pod=0)
    with pytest.raises(TypeError, match=r"`power_per_pod` must be an integer"):
        sm.Topology(600_000, 600, power_per_pod=2.0)


def test_pod_failures_sample_events():
    topo = sm.Topology(4096, 64, gpus_per_node=8, nodes_per_rack=2, racks_per_power=2, power_per_pod=4)
    ev = sm.sample_events(sm.DomainFailures("pod", 1e6), topo, rng=3)
    # each pod (8 x 2 x 2 x 4 = 128 GPUs = 2 groups of 64) kills its 2 groups at once
    assert len(ev) == 32 and all(len(ev.killed(e)) == 2 for e in range(len(ev)))


def test_domain_rate_defaults_follow_the_source():
    assert DOMAIN_RATES["gpu"].events == 246 and DOMAIN_RATES["rack"].events == 35
    assert DOMAIN_RATES["node"].events + 246 + 35 == 419
    assert round(DOMAIN_RATES["rack"].mtbf_h) == round(512 * 1296 / 35)
    assert set(DOMAIN_MTBF_DEFAULTS) == set(DOMAIN_LEVELS)
    assert domain_mtbf_default_s("pod") == pytest.approx(2 * 1296 / 3 * 3600)
    assert all(r.sourced == (r.level in ("gpu",)) for r in DOMAIN_RATES.values())
    with pytest.raises(ValueError, match=r"`level` must be one of"):
        domain_mtbf_default_s("gpu")


# --- co-domain differences -------------------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(topo=topologies)
def test_co_domain_differences_match_gpu_by_gpu(topo):
    for level in DOMAIN_LEVELS:
        assert co_domain_differences(topo, level).tolist() == brute_differences(topo, level)
        assert max_groups_per_domain(topo, level) == max(len(d) for d in brute_domains(topo, level))


def test_co_domain_differences_fft_branch_matches_pairwise():
    # a strided pod touching 2,400 groups takes the FFT route; the answer is every nonzero difference
    topo = sm.Topology(4800 * 4, 4800, placement="strided", gpus_per_node=8, nodes_per_rack=4, racks_per_power=8,
                       power_per_pod=10)
    d = co_domain_differences(topo, "pod")
    assert max_groups_per_domain(topo, "pod") == 2560
    assert d.tolist() == list(range(1, 4800))


def test_co_domain_differences_at_600k_are_fast():
    import time
    t0 = time.perf_counter()
    for placement in ("contiguous", "strided"):
        topo = sm.Topology(600_000, 1000, placement=placement)
        d = {level: co_domain_differences(topo, level) for level in DOMAIN_LEVELS}
        k = {level: max_groups_per_domain(topo, level) for level in DOMAIN_LEVELS}
        for level in DOMAIN_LEVELS:  # always a cyclic interval +-1..+-(k-1)
            expect = sorted({x % 1000 for j in range(1, k[level]) for x in (j, -j)})
            assert d[level].tolist() == expect
    assert k == {"node": 8, "rack": 32, "power": 256, "pod": 1000}  # strided
    assert time.perf_counter() - t0 < 30


# --- the checker -----------------------------------------------------------------------------------------------
def test_domain_conflicts_counts_pairs():
    topo = sm.Topology(64, 8, gpus_per_node=4, nodes_per_rack=4)  # a rack = 16 GPUs = groups 2i, 2i+1
    res = domain_conflicts(sm.cyclic(8, 2), topo, "rack")
    # rack i touches groups 2i, 2i+1, which both hold type 2i+1 (unit stride)
    assert (res.count, res.domain, res.type) == (4, 0, 1)
    assert domain_conflicts(sm.cyclic_offsets(8, [0, 2]), topo, "rack").count == 0
    assert domain_conflicts(sm.block(8, 2), topo, "rack").count == 8  # both types of the set, in every rack
    assert domain_conflicts(sm.ReplicaSets(8, 2, assignment=np.arange(8) % 4), topo, "rack").count == 0


@settings(max_examples=100, deadline=None)
@given(topo=topologies, level=levels, data=st.data())
def test_offset_condition_is_equivalent_to_no_conflict(topo, level, data):
    # the correctness argument of the construction: conflict-free <=> no pairwise offset difference in D
    n = topo.n_groups
    s = [0] + sorted(data.draw(st.sets(st.integers(1, n - 1), max_size=n - 1)))
    dset = set(co_domain_differences(topo, level).tolist())
    avoids = not any((a - b) % n in dset for a in s for b in s if a != b)
    assert avoids == (domain_conflicts(sm.cyclic_offsets(n, s), topo, level).count == 0)


# --- the constructions: a property test over random topologies -------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(topo=topologies, level=levels, kind=st.sampled_from(["spare", "rep"]), data=st.data())
def test_domain_aware_is_conflict_free_or_proves_why_not(topo, level, kind, data):
    n = topo.n_groups
    r = data.draw(st.integers(1, n))
    sidon = kind == "spare" and data.draw(st.booleans())
    diffs = brute_differences(topo, level)
    k = max(len(d) for d in brute_domains(topo, level))
    try:
        lay = domain_aware(topo, r, level, kind=kind, sidon=sidon)
    except sm.UsageValueError as e:
        msg = str(e)
        assert f"at level {level!r} one domain touches up to {k} of the N={n} groups" in msg
        if kind == "rep":  # pigeonhole (k groups of one domain need k distinct sets) or exhaustive search
            assert (f"need floor(N/r) >= {k}" in msg and k > n // r) or "exhaustive search shows" in msg
            if "exhaustive" in msg and n <= 10:
                assert not sets_exist(topo, level, r)
        else:  # the stated obstruction is real: no offset set works (exhaustive)
            assert "need r <=" in msg or "need r = 1" in msg or "remain" in msg or "exhaustive search shows" in msg
            assert not offsets_exist(n, r, diffs, sidon)
        return
    assert domain_conflicts(lay, topo, level).count == 0
    if kind == "spare":
        assert lay.r == r and (not sidon or is_modular_sidon(lay.offsets, n))
    else:
        sets = sm.model.placement.domain_aware_replica_sets(topo, r, level)
        assert sets.sizes.tolist() == set_sizes(n, r) and domain_conflicts(sets, topo, level).count == 0


@settings(max_examples=100, deadline=None)
@given(topo=topologies, level=levels, data=st.data())
def test_offsets_when_possible_are_found(topo, level, data):
    # the other direction: whenever some offset set avoids D (exhaustive search), domain_aware finds one
    n = topo.n_groups
    r = data.draw(st.integers(1, min(n, 6)))
    exists = offsets_exist(n, r, brute_differences(topo, level), False)
    try:
        domain_aware(topo, r, level)
        found = True
    except sm.UsageValueError:
        found = False
    assert found == exists


def test_domain_aware_rep_holder_table_and_sets():
    topo = sm.Topology(600_000, 600)
    lay = domain_aware(topo, 3, "pod", kind="rep")
    assert lay.kind == "domain_aware_block" and lay.holders[:, 0].tolist() == list(range(600))
    # set 0 = groups 0, 200, 400: every member holds all three types of the set
    assert sorted(lay.holders[0].tolist()) == [0, 200, 400]
    assert sorted(lay.stacks()[200]) == [0, 200, 400]
    assert lay.to_dict()["holders"] == lay.holders.tolist()
    assert domain_aware(topo, 3, "pod").to_dict()["offsets"] == [0, 200, 400]
    assert domain_conflicts(lay, topo, "pod").count == 0
    assert domain_conflicts(sm.block(600, 3), topo, "pod").count > 0
    sets = domain_aware(topo, 7, "pod", kind="rep")  # 7 does not divide 600: ReplicaSets with sizes 8 and 7
    assert isinstance(sets, sm.ReplicaSets) and sets.sizes.tolist() == set_sizes(600, 7)
    assert domain_conflicts(sets, topo, "pod").count == 0
    # labelled as placed sets, not the consecutive ones of ReplicaSets(600, 7) (QA: both said "block")
    assert sets.kind == "domain_aware_block" and sm.ReplicaSets(600, 7).kind == "block"
    assert sm.wipeout_mc(sets, 4, rng=1).layout == "domain_aware_block"


def test_domain_aware_layouts_survive_pod_failures_longer():
    # wipe-out under pod failures (plus a per-GPU background): a domain-aware layout outlives the plain one, and
    # uneven domain-aware replica sets run in the wipe-out engine (read-only set arrays)
    topo = sm.Topology(600_000, 600)
    fail = sm.DomainFailures("pod", 3e4, 1.0, background=sm.PerGPU.from_system_mtbf(300, 600_000, 1.0))
    t = {name: sm.wipeout_mc(lay, 300, failures=fail, topology=topo, rng=1).estimate("time_s")
         for name, lay in (("cyclic", sm.cyclic(600, 8)), ("aware", domain_aware(topo, 8, "pod")),
                           ("sets", domain_aware(topo, 7, "pod", kind="rep")), ("plain_sets", sm.ReplicaSets(600, 7)))}
    assert t["aware"].ci[0] > 10 * t["cyclic"].ci[1]
    assert t["sets"].ci[0] > 2 * t["plain_sets"].ci[1]


def test_paper_scale_layouts():
    topo = sm.Topology(600_000, 600)
    lay = domain_aware(topo, 19, "pod", sidon=True)  # a pod spans 10 groups: D = +-1..+-9
    assert is_modular_sidon(lay.offsets, 600) and lay.r == 19
    d = set(co_domain_differences(topo, "pod").tolist())
    assert not {(a - b) % 600 for a in lay.offsets for b in lay.offsets if a != b} & d
    # unit stride puts r - 1 types of every group pair i, i+1 under one pod
    assert domain_conflicts(sm.cyclic(600, 8), topo, "pod").count > 0
    strided = sm.Topology(600_000, 600, placement="strided")
    with pytest.raises(ValueError, match=r"one domain touches up to 600 of the N=600 groups .* need r = 1"):
        domain_aware(strided, 2, "pod")
    with pytest.raises(ValueError, match=r"at most floor\(N/256\) = 2 fit; need r <= 2"):
        domain_aware(strided, 3, "power")
    assert domain_aware(strided, 2, "power").offsets == (0, 300)


def test_sidon_counting_bound_message():
    topo = sm.Topology(64 * 8, 64, gpus_per_node=16)  # a node = 2 groups: D = {1, 63}
    with pytest.raises(ValueError, match=r"r\(r-1\) = 72 pairwise differences .* only 61 residues mod N remain"):
        domain_aware(topo, 9, "node", sidon=True)


# --- bad input -------------------------------------------------------------------------------------------------
TOPO = sm.Topology(600_000, 600)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: domain_aware("topo", 3, "rack"), TypeError, r"`topology` must be a Topology, got str"),
    (lambda: domain_aware(TOPO, 3.0, "rack"), TypeError, r"`r` must be an integer"),
    (lambda: domain_aware(TOPO, 601, "rack"), ValueError, r"`r` must satisfy 1 <= r <= N, got r=601 with N=600"),
    (lambda: domain_aware(TOPO, 0, "rack"), ValueError, r"`r` must satisfy 1 <= r <= N"),
    (lambda: domain_aware(TOPO, 3, "row"), ValueError, r"`level` must be one of \['node', 'pod', 'power', 'rack'\]"),
    (lambda: domain_aware(TOPO, 3, 2), TypeError, r"`level` must be a string"),
    (lambda: domain_aware(TOPO, 3, "rack", kind="ring"), ValueError, r"`kind` must be one of \['rep', 'spare'\]"),
    (lambda: domain_aware(TOPO, 3, "rack", sidon=1), TypeError, r"`sidon` must be a bool"),
    (lambda: domain_aware(TOPO, 3, "rack", kind="rep", sidon=True), ValueError, r"`sidon` applies to kind='spare'"),
    (lambda: domain_aware(TOPO, 301, "rack"), ValueError, r"need r <= 300"),
    (lambda: domain_aware(TOPO, 301, "rack", kind="rep"), ValueError, r"need floor\(N/r\) >= 2, i.e. r <= 300"),
    (lambda: co_domain_differences(TOPO, "cabinet"), ValueError, r"`level` must be one of"),
    (lambda: domain_conflicts(sm.cyclic(10, 2), TOPO, "rack"), ValueError, r"same number of groups, got 10 and 600"),
    (lambda: domain_conflicts([[0, 1]], TOPO, "rack"), TypeError, r"`layout` must be a Layout or ReplicaSets"),
    (lambda: sm.make_layout("ring", 600, 3, topology=TOPO, level="rack"), ValueError, r"`layout` must be one of"),
    (lambda: sm.make_layout("sidon", 600, 3, topology=TOPO, level="rack"), ValueError,
     r"`topology` and `level` have no effect with layout 'sidon'"),
    (lambda: sm.make_placed_layout, AttributeError, r"make_placed_layout"),  # removed in 0.3.0: use make_layout
])
def test_placement_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_a_level_whose_domains_join_every_pair_of_groups_says_so():
    """A strided rack touching all 32 groups: the message said the holders must be "at least 17 groups apart"
    next to "touches up to 32" (17 is the cyclic distance no pair reaches); it now says every pair shares a rack."""
    topo = sm.Topology(256, 32, placement="strided")
    with pytest.raises(sm.UsageValueError, match=r"one domain touches up to 32 of the N=32 groups .*, and every pair "
                                                 r"of groups shares a rack domain, so no two holders of a type can "
                                                 r"sit in distinct domains; need r = 1"):
        domain_aware(topo, 3, "rack")
    assert domain_aware(topo, 1, "rack").r == 1
    with pytest.raises(sm.UsageValueError, match=r"two groups closer than 8 around the cycle share a domain and the "
                                                 r"r holders of a type must be pairwise at least 8 apart; at most "
                                                 r"floor\(N/8\) = 4 fit; need r <= 4"):
        domain_aware(topo, 5, "node")  # a node's 8 GPUs sit in 8 consecutive groups


def test_impossible_replica_sets_suggest_r_values_that_exist():
    """When the sets g mod floor(N/r) wrap and no other assignment exists, the error names the r for which they do
    not wrap (floor(N/r) divides N), and each of those works; for a prime N it says that there is none."""
    import re

    from spare_mc.model.placement import domain_aware
    from spare_mc.model.topology import Topology

    topo = Topology(26 * 32, 26, placement="strided")
    with pytest.raises(ValueError, match="r values for which floor") as err:
        domain_aware(topo, 3, "node", kind="rep")
    suggested = [int(x) for x in re.search(r"never wrap\) are ([\d, ]+)", str(err.value)).group(1).split(", ")]
    for r in suggested:
        domain_aware(topo, r, "node", kind="rep")
    from spare_mc.model.placement import _set_advice
    assert "no r in 2..6" in _set_advice(13, 3, 2)
