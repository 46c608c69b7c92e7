"""The exact expected time to train of the step model (CKPT-only and Rep+CKPT under exponential failures): limits,
internal consistency, its scope, and the discrete-event timeline against it at alpha = 1e-4."""

import math

import numpy as np
import pytest
from scipy import stats

import spare_mc as sm
from spare_mc.ttt.exact_ttt import MAX_CONFIGS, exact_step_ttt
from spare_mc.ttt.config import TimelineConfig
from spare_mc.ttt.run import simulate_ttt

ALPHA_EXACT = 1e-4
BASE = dict(shape=1.0, jitter_sd=0.0, max_wall_factor=1000.0)


def test_without_failures_it_is_the_failure_free_time_plus_the_saves():
    """MTBF 1e16 s (failures add ~1e-9 s): 200 steps of 65 s and a checkpoint at the first boundary 900 s after the last one (every 14
    steps: 14 checkpoints before the end), plus a final one."""
    cfg = TimelineConfig("ckpt", 100, n_steps=200, compute_s=60.0, allreduce_s=5.0, mtbf_s=1e16, restart_s=600.0,
                         save_s=30.0, ckpt_period_s=900.0, final_checkpoint=True, **BASE)
    assert exact_step_ttt(cfg).ttt_s == pytest.approx(200 * 65 + 15 * 30, rel=1e-9)
    rep = TimelineConfig("rep", 12, r=3, n_steps=100, compute_s=20.0, allreduce_s=5.0, mtbf_s=1e16,
                         restart_s=600.0, save_s=30.0, ckpt_every_steps=10, **BASE)
    assert exact_step_ttt(rep).ttt_s == pytest.approx(100 * 65 + 9 * 30, rel=1e-9)


def test_rep_with_sets_of_one_is_ckpt_only():
    """Rep with r = 1 and no masked cost is CKPT-only on the same clock: the same chain, one configuration."""
    kw = dict(n_steps=200, compute_s=60.0, allreduce_s=5.0, mtbf_s=3600.0, restart_s=600.0, save_s=30.0,
              ckpt_period_s=900.0, **BASE)
    assert exact_step_ttt(TimelineConfig("rep", 12, r=1, shrink_s=0.0, **kw)).ttt_s == pytest.approx(
        exact_step_ttt(TimelineConfig("ckpt", 12, **kw)).ttt_s, rel=1e-12)


def test_restart_again_costs_the_expected_restart_of_restarts():
    """The only difference between absorbed and restart_again is the expected restart time, T_r against
    M (e^(T_r/M) - 1), once per wipe-out: E[TTT] differs by (that difference) x E[wipe-outs], so the ratio of the
    differences for two restart times is fixed by the closed form when the wipe-out count does not depend on T_r
    (it does not: a restart returns to a fresh system either way)."""
    kw = dict(n_steps=150, compute_s=60.0, allreduce_s=5.0, mtbf_s=2000.0, save_s=30.0, ckpt_period_s=600.0, **BASE)
    gaps = []
    for r in (600.0, 3000.0):
        a = exact_step_ttt(TimelineConfig("ckpt", 50, restart_s=r, **kw)).ttt_s
        b = exact_step_ttt(TimelineConfig("ckpt", 50, restart_s=r, restart_failures="restart_again", **kw)).ttt_s
        gaps.append((b - a) / (2000.0 * math.expm1(r / 2000.0) - r))
    assert gaps[0] == pytest.approx(gaps[1], rel=1e-9)  # E[wipe-outs], the same for both restart times
    assert gaps[0] > 1


@pytest.mark.parametrize("kw, match", [
    (dict(strategy="spare", r=3), "`strategy` = ckpt or rep"),
    (dict(shape=0.78), "`shape` = 1"),
    (dict(jitter_sd=0.05), "`jitter_sd` = 0"),
    (dict(restart_failures="stay_dead"), "`restart_failures` = 'absorbed' or 'restart_again'"),
    (dict(detection="immediate"), "`detection` = 'allreduce'"),
    (dict(ckpt_failure="lost"), "`ckpt_failure` = 'completes'"),
    (dict(failures=sm.PerGPU(1e6, 1.0), ckpt_period_s=600.0), "`failures` = None"),
])
def test_outside_its_scope_it_names_the_rule(kw, match):
    base = dict(strategy="ckpt", n_groups=12, n_steps=50, shape=1.0, jitter_sd=0.0)
    with pytest.raises(sm.UsageValueError, match=match):
        exact_step_ttt(TimelineConfig(**{**base, **kw}))


def test_too_many_configurations_are_refused():
    cfg = TimelineConfig("rep", 600, r=3, n_steps=50, shape=1.0, jitter_sd=0.0)
    with pytest.raises(sm.UsageValueError, match=f"exceed MAX_CONFIGS = {MAX_CONFIGS}"):
        exact_step_ttt(cfg)


def _des_vs_exact(cfg, reps, seed):
    ex = exact_step_ttt(cfg)
    res = simulate_ttt(cfg, reps, rng=seed)
    assert res.n_capped == 0
    v = res.values("ttt_over_t0")
    se = v.std(ddof=1) / math.sqrt(v.size)
    p = 2 * stats.t.sf(abs(v.mean() - ex.ttt_over_t0) / se, v.size - 1)
    assert p > ALPHA_EXACT, (v.mean(), ex.ttt_over_t0, p)
    assert np.mean(res.values("wipeouts")) > 1  # failures matter in every setting tested


COMMON = dict(compute_s=20.0, allreduce_s=5.0, save_s=30.0, **BASE)


@pytest.mark.parametrize("strategy, n, kw", [
    ("ckpt", 100, dict(n_steps=200, mtbf_s=3600.0, restart_s=600.0, ckpt_period_s=900.0)),
    ("rep", 12, dict(r=3, n_steps=200, mtbf_s=300.0, restart_s=600.0, ckpt_period_s=900.0)),
])
def test_timeline_matches_the_exact_expectation(strategy, n, kw):
    _des_vs_exact(TimelineConfig(strategy, n, **{**COMMON, **kw}), reps=1500, seed=3)


@pytest.mark.slow
@pytest.mark.parametrize("strategy, n, kw", [
    # a long restart (R >= M), started again by failures, and a final checkpoint
    ("ckpt", 50, dict(n_steps=300, mtbf_s=1500.0, restart_s=3000.0, restart_failures="restart_again",
                      ckpt_period_s=300.0, final_checkpoint=True)),
    # R >= M with absorbed failures, no live scaling, checkpoints by steps
    ("ckpt", 8, dict(n_steps=300, mtbf_s=1000.0, restart_s=1500.0, live_scaling=False, ckpt_every_steps=7)),
    # Rep, r does not divide N (sets of 3 and 4), masked failures recompute the step, no live scaling
    ("rep", 13, dict(r=3, n_steps=150, mtbf_s=200.0, restart_s=900.0, ckpt_period_s=600.0,
                     rep_masked_cost="redo_step", live_scaling=False)),
    # Rep r = 2, resync cost, per-replica all-reduce, restart_again with R >= M
    ("rep", 20, dict(r=2, n_steps=200, mtbf_s=400.0, restart_s=500.0, ckpt_every_steps=12, rep_masked_cost="resync",
                     rep_resync_s=15.0, rep_allreduce="per_replica", restart_failures="restart_again")),
    # Rep r = 4 with a masked detection cost and a final checkpoint
    ("rep", 24, dict(r=4, n_steps=150, mtbf_s=150.0, restart_s=300.0, ckpt_period_s=400.0, masked_detect_s=10.0,
                     final_checkpoint=True)),
])
def test_timeline_matches_the_exact_expectation_grid(strategy, n, kw):
    _des_vs_exact(TimelineConfig(strategy, n, **{**COMMON, **kw}), reps=3000, seed=4)
