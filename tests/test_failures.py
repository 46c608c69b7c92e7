
import numpy as np
import pytest
from conftest import ALPHA
from scipy import stats

import spare_mc as sm
from spare_mc import testing as ref
from spare_mc.model.failures import weibull_scale

TOPO = sm.Topology(600_000, 600)


def _weibull_cdf(shape, scale):
    return lambda x: 1.0 - np.exp(-(np.asarray(x) / scale) ** shape)


@pytest.mark.parametrize("shape", [0.78, 1.0, 2.5])
def test_per_gpu_600k_stream_times_are_iid_group_weibull(shape):
    """A full stream of the per-GPU model holds each group's lifetime once: N iid Weibull(k, lam M^(-1/k))."""
    model = sm.PerGPU(gpu_mtbf_s=2.0e9, shape=shape)
    times = np.concatenate([sm.sample_events(model, TOPO, rng=s).times for s in range(10)])
    assert stats.kstest(times, _weibull_cdf(shape, model.group_scale(TOPO))).pvalue > ALPHA


@pytest.mark.parametrize("shape", [0.78, 1.5])
def test_group_shortcut_matches_gpu_by_gpu_draw(shape, rng):
    """The exact shortcut (min of M Weibulls is Weibull) against the 600k-GPU draw, two-sample KS."""
    model = sm.PerGPU(gpu_mtbf_s=2.0e9, shape=shape)
    fast = np.concatenate([model.group_lifetimes(TOPO, rng=rng) for _ in range(10)])
    slow = np.concatenate([ref.gpu_by_gpu_group_lifetimes(600_000, 600, 2.0e9, shape, rng) for _ in range(10)])
    assert stats.ks_2samp(fast, slow).pvalue > ALPHA


def test_per_gpu_from_system_mtbf_gives_that_first_failure_mean(rng):
    model = sm.PerGPU.from_system_mtbf(300.0, 600_000, shape=0.78)
    first = np.array([sm.sample_events(model, TOPO, rng=rng).times[0] for _ in range(3000)])
    assert sm.compare(sm.estimate_mean(first), 300.0, alpha=ALPHA).consistent


@pytest.mark.parametrize("shape,scaling", [(0.78, True), (0.78, False), (1.0, True), (2.0, False)])
def test_system_renewal_interarrivals(shape, scaling, rng):
    """Inter-arrival e (0-based) is Weibull(k, lam) / f_e with f_e = (N - e)/N (or 1): rescaled gaps are iid."""
    n = 50
    topo = sm.Topology(n, n)
    model = sm.SystemRenewal(mtbf_s=300.0, shape=shape, live_scaling=scaling)
    gaps = []
    for _ in range(200):
        ev = sm.sample_events(model, topo, rng=rng)
        d = np.diff(np.concatenate([[0.0], ev.times]))
        f = (n - np.arange(n)) / n if scaling else np.ones(n)
        gaps.append(d * f)
        assert len(ev) == n and sorted(ev.groups.tolist()) == list(range(n))
    gaps = np.concatenate(gaps)
    assert stats.kstest(gaps, _weibull_cdf(shape, weibull_scale(300.0, shape))).pvalue > ALPHA


def test_uniform_order_stream_is_a_permutation():
    ev = sm.sample_events(sm.UniformOrder(), sm.Topology(20, 20), rng=1)
    assert sorted(ev.groups.tolist()) == list(range(20)) and ev.times.tolist() == list(range(1, 21))


# --- wipe-out under clocked models -----------------------------------------------------------------------------
@pytest.mark.parametrize("failures", [sm.SystemRenewal(300.0, 0.78), sm.SystemRenewal(300.0, 1.0, False),
                                      sm.PerGPU(2.0e9, 0.78)])
def test_single_group_models_give_the_uniform_order_law(failures):
    """Single-group failures on live groups with exchangeable groups: T has the exact uniform-order law."""
    res = sm.wipeout_mc("cyclic", 10_000, n_groups=600, r=9, failures=failures, topology=TOPO, rng=8)
    assert sm.compare(res.estimate("T"), sm.exact_wipeout("cyclic", 600, 9).mean, alpha=ALPHA).consistent


def test_system_renewal_exponential_wipeout_time():
    """Exponential renewal with live scaling: E[time] = m sum_k P(T > k) N / (N - k)."""
    n, r, m = 300, 5, 300.0
    res = sm.wipeout_mc("cyclic", 20_000, n_groups=n, r=r, failures=sm.SystemRenewal(m, 1.0, True), rng=9)
    surv = sm.exact_wipeout("cyclic", n, r).survival
    expected = m * float(np.sum(surv[:-1] * n / (n - np.arange(n))))
    assert sm.compare(res.estimate("time_s"), expected, alpha=ALPHA).consistent
    # without live scaling the time is a sum of T iid Weibull gaps of mean m: E = m E[T] (any shape)
    res2 = sm.wipeout_mc("cyclic", 20_000, n_groups=n, r=r, failures=sm.SystemRenewal(m, 0.78, False), rng=9)
    assert sm.compare(res2.estimate("time_s"), m * sm.exact_wipeout("cyclic", n, r).mean, alpha=ALPHA).consistent


def test_one_domain_per_group_reduces_to_uniform_order():
    """Contiguous groups of 2 nodes, node-level domains only: each node kills one group; group lifetime is the
    min of its 2 node lifetimes, so stream times are iid Weibull(k, lam 2^(-1/k))."""
    topo = sm.Topology(16 * 100, 100)  # M = 16 GPUs = 2 nodes per group
    model = sm.DomainFailures("node", domain_mtbf_s=1.0e6, shape=0.78)
    times = np.concatenate([sm.sample_events(model, topo, rng=s).times for s in range(30)])
    scale = weibull_scale(1.0e6, 0.78) * 2 ** (-1 / 0.78)
    assert stats.kstest(times, _weibull_cdf(0.78, scale)).pvalue > ALPHA
    res = sm.wipeout_mc("cyclic", 10_000, failures=model, topology=topo, n_groups=100, r=4, rng=2)
    assert sm.compare(res.estimate("T"), sm.exact_wipeout("cyclic", 100, 4).mean, alpha=ALPHA).consistent


def _domain_reference(layout, topo, model, rng):
    """Slow twin: draw every domain's and group's lifetime, sort, apply kills; events that kill nothing are
    dropped. Returns (T, dead_before, time)."""
    ptr, groups = topo.domain_groups(model.level)
    dom_t = weibull_scale(model.domain_mtbf_s, model.shape) * rng.weibull(model.shape, size=len(ptr) - 1)
    units = [(t, groups[ptr[d]:ptr[d + 1]].tolist()) for d, t in enumerate(dom_t)]
    if model.background is not None:
        gt = model.background.group_lifetimes(topo, rng=rng)
        units += [(t, [g]) for g, t in enumerate(gt)]
    dead, k = set(), 0
    for t, kill in sorted(units):
        new = [g for g in kill if g not in dead]
        if not new:
            continue
        k += 1
        before = len(dead)
        dead.update(new)
        if layout.is_wiped(dead):
            return k, before, t
    raise AssertionError("no wipe-out")


@pytest.mark.parametrize("placement", ["strided", "contiguous"])
def test_domain_events_match_sort_all_lifetimes_twin(placement, rng):
    topo = sm.Topology(8 * 4 * 60, 60, nodes_per_rack=4, placement=placement)  # M = 32 GPUs
    model = sm.DomainFailures("rack", 5.0e6, 0.78, background=sm.PerGPU(1.0e9, 0.78))
    lay = sm.cyclic(60, 3)
    fast = sm.wipeout_mc(lay, 4000, failures=model, topology=topo, rng=rng)
    slow = np.array([_domain_reference(lay, topo, model, rng) for _ in range(4000)])
    for fast_values, slow_values in ((fast.T, slow[:, 0]), (fast.dead_before, slow[:, 1])):
        assert stats.mannwhitneyu(fast_values, slow_values).pvalue > ALPHA
        assert stats.ttest_ind(fast_values, slow_values, equal_var=False).pvalue > ALPHA
    assert stats.ks_2samp(fast.time_s, slow[:, 2]).pvalue > ALPHA


def test_strided_node_failure_hits_up_to_8_groups():
    topo = sm.Topology(600_000, 600, placement="strided")
    ptr, groups = topo.domain_groups("node")
    sizes = np.diff(ptr)
    assert sizes.max() == 8 and len(ptr) - 1 == 75_000
    ptr_c, _ = sm.Topology(600_000, 600).domain_groups("node")
    assert np.diff(ptr_c).max() == 1  # contiguous: M = 1000 GPUs, a node lies inside one group


# --- bad input -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, exc, match", [
    (lambda: sm.SystemRenewal(-1.0), ValueError, r"`mtbf_s` must be > 0"),
    (lambda: sm.SystemRenewal(300.0, 0.0), ValueError, r"`shape` must be > 0"),
    (lambda: sm.SystemRenewal(300.0, 100.0), ValueError, r"`shape` must lie in \[0.05, 50\]"),
    (lambda: sm.SystemRenewal(300.0, 1.0, "yes"), TypeError, r"`live_scaling` must be a bool"),
    (lambda: sm.SystemRenewal(float("nan")), ValueError, r"`mtbf_s` must be finite"),
    (lambda: sm.PerGPU("1e9"), TypeError, r"`gpu_mtbf_s` must be a real number"),
    (lambda: sm.PerGPU(1e9, age_policy="forever"), ValueError, r"`age_policy` must be one of \['keep', 'renew'\]"),
    (lambda: sm.DomainFailures("row", 1e6), ValueError, r"`level` must be one of"),
    (lambda: sm.DomainFailures("rack", 1e6, 0.78, sm.PerGPU(1e9, 1.0)), ValueError, r"`background.shape` must equal"),
    (lambda: sm.DomainFailures("rack", 1e6, 1.0, "gpu"), TypeError, r"`background` must be a PerGPU"),
    (lambda: sm.UniformOrder(1), TypeError, r"`with_replacement` must be a bool"),
    (lambda: sm.Topology(1000, 3), ValueError, r"`n_groups` must divide `n_gpus`"),
    (lambda: sm.Topology(1000, 10, placement="diagonal"), ValueError, r"`placement` must be one of"),
    (lambda: sm.Topology(1000, 10, gpus_per_node=0), ValueError, r"`gpus_per_node` must be >= 1"),
    (lambda: sm.sample_events(sm.UniformOrder(True), sm.Topology(10, 10)), ValueError, r"with_replacement=True"),
    (lambda: sm.sample_events(sm.PerGPU(1e9), 10), TypeError, r"`topology` must be a Topology"),
    (lambda: sm.sample_events("exp", sm.Topology(10, 10)), TypeError, r"`failures` must be one of"),
])
def test_failure_model_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --- per-GPU ages across global restarts -----------------------------------------------------------------------
def _restart_cycles(clock, now_step, cycles=2):
    """Run `cycles` restarts: restart at the 4th failure + now_step; collect residual next-failure times."""
    out = []
    for _ in range(cycles):
        nxt = clock.next_failure_s.copy()
        now = np.sort(nxt)[3] + now_step
        failed = np.nonzero(nxt <= now)[0]
        out.append(clock.restart(now, failed) - now)
    return np.concatenate(out)


@pytest.mark.parametrize("shape", [0.6, 2.0])
@pytest.mark.parametrize("policy", ["keep", "renew"])
def test_per_gpu_clock_matches_gpu_by_gpu_twin_across_restarts(shape, policy, rng):
    topo = sm.Topology(20 * 50, 20)
    model = sm.PerGPU(gpu_mtbf_s=1.0e6, shape=shape, age_policy=policy)
    step = 0.3 * model.group_scale(topo)
    fast = np.concatenate([_restart_cycles(model.clock(topo, rng=rng), step) for _ in range(300)])
    slow = np.concatenate([_restart_cycles(ref.GpuByGpuClock(model, topo, rng), step) for _ in range(300)])
    assert stats.ks_2samp(fast, slow).pvalue > ALPHA


def test_keep_and_renew_differ_for_aging_gpus(rng):
    """With k = 2 (wear-out) old GPUs fail sooner: keeping ages must shorten the next failure times."""
    topo = sm.Topology(20 * 50, 20)
    step = 0.3 * sm.PerGPU(1e6, 2.0).group_scale(topo)
    keep = np.concatenate([_restart_cycles(sm.PerGPU(1e6, 2.0, "keep").clock(topo, rng=rng), step)
                           for _ in range(100)])
    renew = np.concatenate([_restart_cycles(sm.PerGPU(1e6, 2.0, "renew").clock(topo, rng=rng), step)
                            for _ in range(100)])
    assert stats.mannwhitneyu(keep, renew, alternative="less").pvalue < 1e-6


def test_per_gpu_clock_errors():
    clock = sm.PerGPU(1e6, 0.7, "keep").clock(sm.Topology(100, 10), rng=1)
    late = float(np.max(clock.next_failure_s)) + 1
    with pytest.raises(ValueError, match=r"`failed_groups` must list every group that failed by `now_s`"):
        clock.restart(late, [0])
    with pytest.raises(ValueError, match=r"`failed_groups` must be group indices"):
        clock.restart(late, [10])
    with pytest.raises(ValueError, match=r"must not repeat"):
        clock.restart(late, [1, 1])
    with pytest.raises(TypeError, match=r"`model` must be a PerGPU"):
        sm.model.failures.PerGPUClock(sm.SystemRenewal(300.0), sm.Topology(100, 10))


@pytest.mark.parametrize("call, exc, match", [
    (lambda: sm.PerGPU.from_system_mtbf(-5.0, 1000), ValueError, r"`system_mtbf_s` must be > 0"),
    (lambda: sm.PerGPU.from_system_mtbf(300.0, 0), ValueError, r"`n_gpus` must be >= 1"),
    (lambda: sm.PerGPU(1e6).clock(sm.Topology(100, 10), rng=1).restart(float("inf"), []), ValueError,
     r"`now_s` must be finite"),
    (lambda: sm.PerGPU(1e6).clock(sm.Topology(100, 10), rng=1).restart(1e12, list(range(10)), [1.0]), ValueError,
     r"one time per failed group"),
    (lambda: sm.PerGPU(1e6).clock(sm.Topology(100, 10), rng=1, start_s=5.0).restart(1e12, list(range(10)),
                                                                                   [1.0] * 10),
     ValueError, r"between the previous restart and `now_s`"),
    (lambda: sm.model.failures.PerGPUClock(sm.PerGPU(1e6), "topo"), TypeError, r"`topology` must be a Topology"),
])
def test_per_gpu_construction_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_system_mtbf_s_is_the_mean_first_failure_and_the_long_run_interval():
    """First failure of a fresh system: a Monte Carlo over the units' own Weibull lifetimes (GPUs and every domain)
    agrees with the closed form at ALPHA; for GPUs alone it is what PerGPU.from_system_mtbf inverts; the long-run
    interval is 1 / sum(count / mean); with k = 1 the two readings coincide."""
    from spare_mc.model.failures import system_mtbf_s
    topo = sm.Topology(256, 8)  # 32 nodes, 8 racks, 1 power domain
    k = 0.7
    model = sm.DomainFailures(levels={"node": 4e4, "rack": 9e4}, shape=k, background=sm.PerGPU(5e5, k))
    first, long_run = system_mtbf_s(model, topo)
    assert long_run == pytest.approx(1.0 / (256 / 5e5 + 32 / 4e4 + 8 / 9e4), rel=1e-12)
    rng = np.random.default_rng(11)
    scales = np.repeat([weibull_scale(5e5, k), weibull_scale(4e4, k), weibull_scale(9e4, k)], [256, 32, 8])
    mins = (rng.weibull(k, (20_000, scales.size)) * scales).min(axis=1)
    assert sm.compare(sm.estimate_mean(mins), first, alpha=ALPHA).consistent
    cal = sm.PerGPU.from_system_mtbf(300.0, 256, k)
    assert system_mtbf_s(cal, topo)[0] == pytest.approx(300.0, rel=1e-12)
    f1, l1 = system_mtbf_s(sm.DomainFailures("rack", 9e4, 1.0, background=sm.PerGPU(5e5, 1.0)), topo)
    assert f1 == pytest.approx(l1, rel=1e-12)


def test_a_timeline_mtbf_that_no_reading_of_the_unit_model_supports_is_refused():
    """The theory period takes m from mtbf_s: per-GPU lifetimes 60 times as frequent as the paper's 300 s used to
    run with the period of 300 s (QA pass); now refused, unless the period is given or mtbf_s matches the model."""
    fast = sm.PerGPU(1e7, shape=0.7)  # at 600k GPUs: 0.056 s (first failure) to 16.7 s (long run)
    with pytest.raises(ValueError, match=r"`mtbf_s`=300 s sets the theory checkpoint period, .* 0.05565 s .* 16.67 s"):
        sm.TimelineConfig("spare", 600, r=8, failures=fast, n_steps=300)
    assert sm.TimelineConfig("spare", 600, r=8, failures=fast, n_steps=300, ckpt_period_s=60.0).ckpt_period == 60.0
    assert sm.TimelineConfig("spare", 600, r=8, failures=fast, n_steps=300, mtbf_s=16.7).ckpt_period > 0
    cal = sm.PerGPU.from_system_mtbf(300.0, 600_000, 0.78)  # the paper's MTBF, as the domain study runs it
    assert sm.TimelineConfig("spare", 600, r=8, failures=sm.DomainFailures.at_default_rates(0.78, background=cal))
