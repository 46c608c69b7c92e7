"""The timeline under the classical rules against Daly's exact expected wall time (and the closed form's optimum).

The classical model (docs/model.md section 9) is a preset of the timeline's own rules -- immediate detection, a
failure during a restart starts it again, a checkpoint after the last segment, exponential failures, no
all-reduce -- so this checks the kernel against a result derived independently of its SimPy twin.
"""

import json
import math

import numpy as np
import pytest
from conftest import ALPHA
from scipy import stats

import spare_mc as sm
from spare_mc.cli import main
from spare_mc.theory.closed_forms import (ckpt_period_daly, ckpt_period_young, daly_expected_wall_time,
                                          daly_optimal_interval)
from spare_mc.ttt.config import TimelineConfig
from spare_mc.ttt.theory import (CLASSICAL_RULES, classical_config, classical_expected_ttt_s, classical_segment_s,
                                 is_classical)
from spare_mc.ttt.run import simulate_ttt

#: alpha of the issue's acceptance: the simulated mean must not differ from the exact one at this level
ALPHA_EXACT = 1e-4


# ------------------------------------------------------------------------------------------- the closed form
@pytest.mark.parametrize("solve, delta, restart, m", [
    (360_000.0, 60.0, 600.0, 3600.0), (36_000.0, 300.0, 3600.0, 3600.0), (5_000.0, 10.0, 0.0, 100.0),
    (1_000.0, 500.0, 50.0, 20_000.0), (7_200.0, 1.0, 7_200.0, 600.0),
])
def test_optimal_interval_is_the_best_number_of_equal_segments(solve, delta, restart, m):
    """The optimum equals a brute-force scan over n equal segments, and no interval (Young's, Daly's, a fine grid of
    unequal ones) does better."""
    tau, best = daly_optimal_interval(solve, delta, restart, m)
    scan = [daly_expected_wall_time(solve, solve / n, delta, restart, m) for n in range(1, 3000)]
    assert best == pytest.approx(min(scan), rel=1e-12)
    assert tau == pytest.approx(solve / (1 + int(np.argmin(scan))), rel=1e-12)
    for other in (ckpt_period_young(max(delta, 1e-9), m), ckpt_period_daly(max(delta, 1e-9), m),
                  *np.geomspace(solve / 500, solve, 200)):
        assert daly_expected_wall_time(solve, min(other, solve), delta, restart, m) >= best * (1 - 1e-12)


def test_lambert_interval_solves_the_first_order_condition():
    """Per unit of solve time the minimiser tau* of (e^((tau + delta)/M) - 1) / tau satisfies
    e^((tau* + delta)/M) (1 - tau*/M) = 1; for a long solve the exact optimum approaches it."""
    from scipy.special import lambertw

    for delta, m in ((60.0, 3600.0), (300.0, 3600.0), (1.0, 1e5), (3000.0, 1000.0)):
        tau = m * (1 + float(np.real(lambertw(-math.exp(-delta / m - 1)))))
        assert math.exp((tau + delta) / m) * (1 - tau / m) == pytest.approx(1.0, abs=1e-12)
        tau_long, _ = daly_optimal_interval(1e4 * tau, delta, 100.0, m)
        assert tau_long == pytest.approx(tau, rel=1e-3)


# ------------------------------------------------------------------------------------------------ the preset
def test_classical_config_follows_every_rule_and_refuses_others():
    cfg = classical_config(n_steps=100, compute_s=60.0, ckpt_period_s=600.0, save_s=30.0, restart_s=300.0,
                           mtbf_s=3600.0)
    assert is_classical(cfg) and all(getattr(cfg, k) == v for k, v in CLASSICAL_RULES.items())
    for name, bad in (("shape", 0.78), ("jitter_sd", 0.05), ("allreduce_s", 2.0), ("detection", "allreduce"),
                      ("restart_failures", "absorbed"), ("final_checkpoint", False), ("strategy", "rep")):
        with pytest.raises(sm.UsageValueError, match=f"`{name}`=.* contradicts the classical model"):
            classical_config(n_steps=100, **{name: bad})
    with pytest.raises(sm.UsageValueError, match="does not follow the classical rules"):
        classical_expected_ttt_s(TimelineConfig("ckpt", 10, n_steps=100))


def test_segments_are_whole_steps():
    """A checkpoint at the first step boundary tau or more after the last one: segments of ceil(tau / T_comp)
    steps; the exact value uses that segment (and a shorter last one)."""
    cfg = classical_config(n_steps=100, compute_s=60.0, ckpt_period_s=650.0, save_s=30.0, restart_s=300.0,
                           mtbf_s=3600.0)
    assert classical_segment_s(cfg) == 660.0
    assert classical_expected_ttt_s(cfg) == daly_expected_wall_time(6000.0, 660.0, 30.0, 300.0, 3600.0)
    default = classical_config(n_steps=600, compute_s=60.0, save_s=30.0, restart_s=600.0, mtbf_s=3600.0)
    best = min(daly_expected_wall_time(36_000.0, k * 60.0, 30.0, 600.0, 3600.0) for k in range(1, 601))
    assert classical_expected_ttt_s(default) == pytest.approx(best, rel=1e-12)  # the best whole-step interval


# ---------------------------------------------------------------------------------- the timeline against Daly
def _check_against_daly(tau, delta, restart, m, n_steps, compute_s, reps, seed, load_s=0.0):
    """The simulated mean time equals Daly's exact one at ALPHA_EXACT, with a relative 95% half-width <= 1% and no
    run stopped by the cap. Returns (relative error, relative half-width)."""
    cfg = classical_config(n_steps=n_steps, compute_s=compute_s, ckpt_period_s=tau, save_s=delta,
                           restart_s=restart, mtbf_s=m, max_wall_factor=1e4, load_s=load_s)
    res = simulate_ttt(cfg, reps, rng=seed)
    assert res.n_capped == 0
    v = np.array([r.ttt_s for r in res.runs])
    exact = classical_expected_ttt_s(cfg)
    se = v.std(ddof=1) / math.sqrt(v.size)
    half = stats.t.ppf(0.975, v.size - 1) * se / exact
    p = 2 * stats.t.sf(abs(v.mean() - exact) / se, v.size - 1)
    assert half <= 0.01, half
    assert p > ALPHA_EXACT, (v.mean(), exact, p)
    return (v.mean() - exact) / exact, half


@pytest.mark.parametrize("tau, delta, restart, m, n_steps, compute_s", [
    (600.0, 30.0, 300.0, 3600.0, 600, 60.0),     # R < M
    (1800.0, 300.0, 3600.0, 3600.0, 2400, 60.0),  # R = M
])
def test_timeline_matches_daly(tau, delta, restart, m, n_steps, compute_s):
    _check_against_daly(tau, delta, restart, m, n_steps, compute_s, reps=2000, seed=5)


def test_daly_restart_includes_the_checkpoint_load():
    """The restart a run pays is ``restart_s + load_s``; the exact value and its optimum used ``restart_s`` alone,
    so a split restart (600 s of re-scheduling, 3000 s of loading) was "rejected" at z = 50. Now the split and the
    whole restart have one exact value, and the simulation agrees with it."""
    kw = dict(n_steps=600, compute_s=60.0, ckpt_period_s=1800.0, save_s=300.0, mtbf_s=3600.0)
    split = classical_config(restart_s=600.0, load_s=3000.0, **kw)
    assert classical_expected_ttt_s(split) == classical_expected_ttt_s(classical_config(restart_s=3600.0, **kw))
    assert classical_config(restart_s=600.0, load_s=3000.0, **{**kw, "ckpt_period_s": None}).ckpt_period == \
        classical_config(restart_s=3600.0, **{**kw, "ckpt_period_s": None}).ckpt_period
    _check_against_daly(1800.0, 300.0, 600.0, 3600.0, 2400, 60.0, reps=2000, seed=5, load_s=3000.0)


@pytest.mark.slow
@pytest.mark.parametrize("tau, delta, restart, m, n_steps, compute_s", [
    (600.0, 60.0, 7200.0, 3600.0, 6000, 60.0),    # R = 2M
    (300.0, 10.0, 60.0, 1000.0, 3000, 30.0),      # short restart, short saves
    (3600.0, 120.0, 1200.0, 1800.0, 2000, 60.0),  # tau = 2M: most segments fail at least once
    (650.0, 30.0, 300.0, 3600.0, 1010, 60.0),     # tau not a whole number of steps; a shorter last segment
    (100.0, 5.0, 1500.0, 500.0, 1000, 10.0),      # R = 3 M: restarts of restarts dominate
])
def test_timeline_matches_daly_grid(tau, delta, restart, m, n_steps, compute_s):
    _check_against_daly(tau, delta, restart, m, n_steps, compute_s, reps=4000, seed=6)


@pytest.mark.slow
def test_simulated_best_period_is_as_good_as_the_exact_optimum():
    """On a grid of whole-step periods (common random numbers), the simulated best period's exact value is within
    1% of the closed form's optimum; Young's and Daly's periods are within 1% too, and never better."""
    solve, delta, restart, m, c = 36_000.0, 60.0, 600.0, 3600.0, 60.0
    _, best = daly_optimal_interval(solve, delta, restart, m)
    grid = [k * c for k in range(4, 21)]
    means = []
    for tau in grid:
        cfg = classical_config(n_steps=600, compute_s=c, ckpt_period_s=tau, save_s=delta, restart_s=restart,
                               mtbf_s=m, max_wall_factor=1e4)
        means.append(simulate_ttt(cfg, 1000, rng=8).estimate("ttt_over_t0").mean)
    tau_sim = grid[int(np.argmin(means))]
    for tau in (tau_sim, ckpt_period_young(delta, m), ckpt_period_daly(delta, m)):
        value = daly_expected_wall_time(solve, tau, delta, restart, m)
        assert best <= value <= 1.01 * best, (tau, value / best)


# ----------------------------------------------------------------------------------------------- the command
def test_cli_classical_prints_the_exact_time(capsys):
    rc = main(["ttt", "--model", "classical", "--compute-s", "60", "--n-steps", "600", "--ckpt-period-s", "600",
               "--save-s", "30", "--restart-s", "300", "--mtbf-s", "3600", "--reps", "300", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["exact_ttt_s"] == pytest.approx(daly_expected_wall_time(36_000.0, 600.0, 30.0, 300.0, 3600.0))
    lo, hi = out["ttt_s_ci95"]
    assert lo < out["ttt_s_mean"] < hi and out["comparable"] and out["p_value"] > ALPHA
    assert out["segment_s"] == 600.0 and out["solve_s"] == 36_000.0
    assert set(out["optimum"]) == {"continuous_optimum", "best_runnable_period", "young", "daly_higher_order"}
    assert not {"n_groups", "r", "layout"} & set(out)  # the step model's, meaningless here (it printed N = 2)


@pytest.mark.parametrize("argv, match", [
    (["--shape", "0.78"], "`--shape`=0.78 contradicts the classical model"),
    (["--strategy", "spare"], "`--strategy`='spare' contradicts the classical model"),
    (["--failures", "per-gpu"], "`--failures` must be 'system' with --model classical"),
    (["--no-live-scaling"], "`--no-live-scaling` has no effect with --model classical"),
    (["--n-groups", "4"], "`--n-groups` has no effect with --model classical"),  # it only changed the streams
    # it scaled the step model's T_c* (2 x 2400 s) while saying "the least exact E[T_w]" (QA 2026-12-04)
    (["--ckpt-period-factor", "2"], "`--ckpt-period-factor`=2.0 scales the step model's T_c*, not the classical"),
    (["--restart-failures", "absorbed"], "`--restart-failures`='absorbed' contradicts"),
    (["--ckpt-policy", "hazard"], "`--ckpt-policy`='hazard' contradicts the classical model"),
])
def test_cli_classical_refuses_other_rules(argv, match, capsys):
    assert main(["ttt", "--model", "classical", "--n-steps", "100", "--reps", "10", *argv]) == 2
    assert match in capsys.readouterr().err


def test_cli_step_model_still_needs_strategy_and_n(capsys):
    assert main(["ttt", "--n-groups", "10", "--reps", "10"]) == 2
    assert "`--strategy` is required with --model step" in capsys.readouterr().err


def test_free_checkpoints_give_the_limit_of_ever_more_segments():
    """With save_s = 0 every extra segment lowers the cost; the walk over n did not end (QA pass). The optimum is
    the limit tau -> 0, T_s e^(R/M), which a million segments approach from above."""
    tau, best = daly_optimal_interval(3600.0, 0.0, 600.0, 3600.0)
    assert tau == 0.0 and best == pytest.approx(3600.0 * math.exp(600.0 / 3600.0), rel=1e-15)
    many = daly_expected_wall_time(3600.0, 3600.0 / 1e6, 0.0, 600.0, 3600.0)
    assert best < many < best * (1 + 1e-5)
