"""Heavy statistical checks (``-m slow``): large N and many trials, run by CI after the default tier."""

import numpy as np
import pytest
from conftest import ALPHA

import spare_mc as sm

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("layout,n,r,trials", [("cyclic", 10_000, 9, 20_000), ("block", 9_999, 9, 20_000),
                                               ("random", 2_000, 5, 20_000), ("cyclic", 600, 20, 200_000)])
def test_mc_matches_exact_at_large_n(layout, n, r, trials):
    res = sm.wipeout_mc(layout, trials, n_groups=n, r=r, rng=np.random.SeedSequence([n, r, 99]))
    ex = sm.exact_wipeout(layout, n, r)
    assert sm.compare(res.estimate("T"), ex.mean, alpha=ALPHA).consistent
    # the sample sd agrees too: its delta-method se is sd sqrt((kurtosis - 1) / (4n)), kurtosis from the exact law
    t = np.arange(n + 1)
    kurt = float(np.sum(ex.pmf() * (t - ex.mean) ** 4)) / ex.sd ** 4
    se_sd = ex.sd * np.sqrt((kurt - 1) / (4 * trials))
    assert abs(res.estimate("T").sd - ex.sd) < 4.0 * se_sd  # |z| < 3.9 is the two-sided 1e-4 level


def test_survival_curve_at_n_1000_inside_bonferroni_bands():
    """Exact (Clopper-Pearson) intervals: Wilson's failed this band with one trial at T = 729, where P(T > 727) is
    1.4e-7 (2.7% chance of one such trial in 200,000), its lower bound 1.65e-7 at level 1 - 1e-7."""
    res = sm.wipeout_mc("cyclic", 200_000, n_groups=1000, r=10, rng=5)
    ex = sm.exact_wipeout("cyclic", 1000, 10)
    _, lo, hi = res.survival_curve(level=1 - ALPHA / 1001, interval="exact")
    assert np.all((lo <= ex.survival + 1e-12) & (ex.survival - 1e-12 <= hi))


def test_per_gpu_600k_wipeout_time_against_order_statistics():
    """PerGPU on 600k GPUs: the wipe-out time is the T-th order statistic of N iid group lifetimes with T
    independent of the values, so E[time] = sum_t P(T = t) E[X_(t)] (order-statistic means by simulation of the
    lifetimes alone, a different code path)."""
    topo = sm.Topology(600_000, 600)
    model = sm.PerGPU(2.0e9, 0.78)
    res = sm.wipeout_mc("cyclic", 20_000, n_groups=600, r=9, failures=model, topology=topo, rng=3)
    rng = np.random.default_rng(4)
    sims = np.sort(np.stack([model.group_lifetimes(topo, rng=rng) for _ in range(20_000)]), axis=1)
    pmf = sm.exact_wipeout("cyclic", 600, 9).pmf()[1:]
    ref = sm.estimate_mean(sims @ pmf)  # sum_t P(T = t) X_(t) per simulated system: its mean is the target
    est = res.estimate("time_s")
    z = (est.mean - ref.mean) / np.hypot(est.se, ref.se)  # both sides carry sampling error
    assert abs(z) < 3.89  # two-sided 1e-4


@pytest.mark.parametrize("layout,n,r,trials", [("cyclic", 1000, 10, 4000), ("cyclic", 600, 20, 4000),
                                               ("random", 600, 20, 2000), ("block", 1000, 10, 4000)])
def test_overhead_lower_bound_matches_exact_at_paper_sizes(layout, n, r, trials):
    """E[sum_{k<T} c(k)] and the per-epoch ratio from ReCtlr runs vs the exact law of T."""
    res = sm.overhead_mc(layout, trials, n_groups=n, r=r, rng=np.random.SeedSequence([n, r, 7]))
    total, mean_t, ratio = (lambda b: (b.sum_c, b.mean_T, b.c_mean))(sm.exact_stack_bound_sum(layout, n, r))
    assert sm.compare(res.estimate("sum_c"), total, alpha=ALPHA).consistent
    assert sm.compare(res.estimate("c_mean"), ratio, alpha=ALPHA).consistent
    assert res.estimate("s_star_mean").mean >= res.estimate("c_mean").mean


def test_rectlr_many_more_random_instances_agree_with_the_twins():
    """20,000 ReCtlr calls on layouts up to N = 40 against from-scratch, scipy and networkx."""
    from test_reorder import run_random_trajectories

    phase0, moved, wide_patch = run_random_trajectories(99, 20_000, 40, 12, 0.8)
    assert phase0 > 1000 and moved > 1000 and wide_patch > 100


@pytest.mark.parametrize("strategy, r", [("ckpt", 1), ("rep", 3), ("spare", 8)])
def test_timeline_equals_simpy_twin_at_paper_size(strategy, r):
    """N = 600, 2000 steps, paper time parameters, jitter off: microsecond agreement on 5 traces each, for the
    system-level process and rack domains with per-GPU background (keep ages)."""
    from spare_mc._kernels import timeline as TK
    from spare_mc.testing import timeline_simpy
    from spare_mc.ttt.config import TimelineConfig
    from spare_mc.ttt.run import _run_us, make_trace

    rng = np.random.default_rng(17)
    bg = sm.PerGPU.from_system_mtbf(300.0, 600_000, 0.78, "keep")
    for failures in (None, sm.DomainFailures("rack", 3.0e8, 0.78, background=bg)):
        cfg = TimelineConfig(strategy, 600, r=r, n_steps=2000, jitter_sd=0.0, failures=failures)
        for _ in range(5):
            trace = make_trace(cfg, rng, 400_000 if failures is not None else 60_000)
            res = _run_us(cfg, cfg.layout_object().holders, *trace, jitter_rng=np.random.default_rng(0))
            twin = timeline_simpy(cfg, trace)
            assert res[TK.R_STATUS] == 0 and twin["status"] == "ok"
            assert (int(res[TK.R_TTT]), int(res[TK.R_LOST]), int(res[TK.R_FAILURES]), int(res[TK.R_WIPEOUTS])) == \
                (twin["ttt"], twin["lost"], twin["failures"], twin["wipeouts"])
