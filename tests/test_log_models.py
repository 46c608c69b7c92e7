"""Issue 37: the models the timeline runs, fitted to a log, checked against it, and the recommendation.

The fits are tested against exact laws and an independent fit; the stream sampler against its slow twin and the
exact count of a stationary renewal process; the predictive check on logs of known models (it passes the true model
and fails a wrong one); the printed flags by running them.
"""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import special, stats

from spare_mc import TimelineConfig, Topology, read_failure_log
from spare_mc.analyses.recommend import recommend
from spare_mc.cli import main
from spare_mc.logs.failure_log import FailureLog, log_levels, write_failure_log
from spare_mc.logs.likelihood import MLE, Likelihood, gap_probabilities
from spare_mc.logs.models import fit_system, fit_units
from spare_mc.logs.predictive import _ks, predictive_check
from spare_mc.logs.replay import replay_log
from spare_mc.logs.synthetic import example_log_path
from spare_mc.logs.weibull import weibull_mle
from spare_mc.model import unit_renewal
from spare_mc.model.unit_renewal import UnitAges, UnitRenewal, first_failures
from spare_mc.testing.predictive import ks_union_slow
from spare_mc.testing.unit_renewal import advance_chains_slow, unit_stream_slow
from spare_mc.ttt.stream import simulate_stream_ttt

TOPO = Topology(1024, 16)


def _node_log(k, mean_days, days, seed, ages="stationary", res=60.0):
    m = UnitRenewal("node", mean_days * 86400.0, k, ages)
    W = days * 86400.0
    t, u = m.stream(TOPO, rng=seed).until(W)
    t = np.ceil(t / res) * res if res else t  # recorded at the next tick: never at time 0
    return FailureLog(t, np.full(t.size, 1), u, None, W, TOPO, log_levels(TOPO), f"syn{seed}")


# ------------------------------------------------------------------------------------------- the likelihood
def test_exact_censored_fit_equals_the_independent_weibull_mle():
    rng = np.random.default_rng(1)
    x = 2.0 * rng.weibull(0.7, 400)
    c = x > 3
    xo = np.minimum(x, 3)
    old = weibull_mle(xo, c)
    m = MLE(Likelihood().add("exact", xo[~c]).add("censored", xo[c]))
    assert m.k == pytest.approx(old.shape, rel=1e-6)
    assert m.mean_s == pytest.approx(old.mean_s, rel=1e-6)
    assert m.wald()["shape"] == pytest.approx(tuple(old.shape_ci), rel=1e-4)


@pytest.mark.parametrize("k", [0.5, 0.8, 1.6])
def test_gap_probabilities_are_the_hat_kernel_expectation(k):
    """P_j against direct numerical integration of f(x) hat(x/delta - j), and they sum to one."""
    from scipy import integrate
    lam, delta = 5000.0, 60.0
    f = stats.weibull_min(k, scale=lam).pdf
    for j in (0, 1, 2, 7, 150):
        lo, hi = max(0.0, (j - 1) * delta), (j + 1) * delta
        want = integrate.quad(lambda x, j=j: f(x) * max(0.0, 1 - abs(x / delta - j)), lo, hi, points=[j * delta],
                              limit=200, epsabs=1e-14)[0]
        assert gap_probabilities(np.array([float(j)]), k, lam, delta)[0] == pytest.approx(want, rel=1e-7)
    total = gap_probabilities(np.arange(0, 2000 * lam / delta), k, lam, delta).sum()  # tail S(2000 lam) < 1e-19
    assert total == pytest.approx(1.0, abs=1e-6)


def test_a_fit_of_many_failures_converges_rather_than_running_out_of_evaluations():
    # 2,116 distinct gaps of 20,000 counted 100 times over (2 x 10^6 failures; the sum's rounding error then exceeds
    # an absolute 1e-10, which ran this fit to the simplex's 4,000-evaluation limit): the same maximum, reached by
    # the simplex's own tolerance
    class Counted(Likelihood):
        calls = 0

        def loglik(self, k, lam):
            Counted.calls += 1
            return super().loglik(k, lam)

    x = np.ceil(300.0 * np.random.default_rng(5).weibull(0.7, 20_000))
    vals, counts = np.unique(x, return_counts=True)
    small = MLE(Likelihood(1.0).add("rounded", vals, counts))
    big = MLE(Counted(1.0).add("rounded", vals, counts * 100.0))
    assert Counted.calls < 1000
    assert big.k == pytest.approx(small.k, rel=1e-6) and big.lam == pytest.approx(small.lam, rel=1e-6)


def test_rounded_wald_and_profile_intervals_agree():
    """A noisy log-likelihood made the numerical Hessian, and the Wald intervals, 25x too narrow."""
    log = _node_log(0.6, 60, 365, 5)
    wald, prof = fit_units(log, "node"), fit_units(log, "node", ci="profile")
    for a, b in ((wald.shape_ci, prof.shape_ci), (wald.mean_ci, prof.mean_ci)):
        assert a == pytest.approx(b, rel=0.02)
    exact = fit_units(log, "node", resolution_s=0)
    assert wald.shape == pytest.approx(exact.shape, rel=0.01)


# -------------------------------------------------------------------------------------------- the stream
@pytest.mark.parametrize("k", [0.5, 1.0, 2.0])
def test_stationary_first_failure_is_the_forward_recurrence_time(k):
    """P(R <= x) = P(1/k, (x/lam)^k): the fast draw (length-biased Gamma) and the slow twin (inversion)."""
    m = UnitRenewal("node", 1000.0, k)
    lam = m.scale_s
    fast = first_failures(m, 4000, np.random.default_rng(2))
    slow, _ = unit_stream_slow(UnitRenewal("node", 1000.0, k), 1, 0.0, 0)  # (nothing: window 0)
    assert slow.size == 0
    from spare_mc.testing.unit_renewal import first_failure_slow
    rng = np.random.default_rng(3)
    slow = np.array([first_failure_slow(m, None, False, rng) for _ in range(1500)])
    cdf = lambda x: special.gammainc(1.0 / k, (x / lam) ** k)
    assert stats.kstest(fast, cdf).pvalue > 1e-3
    assert stats.kstest(slow, cdf).pvalue > 1e-3


def test_given_ages_draw_the_conditional_residual_life():
    m = UnitRenewal("node", 1000.0, 0.6, UnitAges(np.full(3000, 500.0), np.ones(3000, bool)))
    r = first_failures(m, 3000, np.random.default_rng(4))
    lam, k = m.scale_s, m.shape
    cdf = lambda x: 1 - np.exp(-(((500 + x) / lam) ** k - (500 / lam) ** k))
    assert stats.kstest(r, cdf).pvalue > 1e-3
    # a lower bound only: stationary age given A >= 500, then the residual: against the slow twin
    m2 = UnitRenewal("node", 1000.0, 0.6, UnitAges(np.full(2000, 500.0), np.zeros(2000, bool)))
    fast = first_failures(m2, 2000, np.random.default_rng(5))
    from spare_mc.testing.unit_renewal import first_failure_slow
    rng = np.random.default_rng(6)
    slow = np.array([first_failure_slow(m2, 500.0, False, rng) for _ in range(1000)])
    assert stats.ks_2samp(fast, slow).pvalue > 1e-3


def test_stationary_stream_count_is_exact_and_new_units_burst():
    """E[count in [0, W)] = units W / mu exactly for the stationary start; new units with k < 1 fail more."""
    m = UnitRenewal("node", 1e5, 0.5)
    counts = np.array([m.stream(TOPO, rng=s).until(1e5)[0].size for s in range(300)])
    se = counts.std(ddof=1) / math.sqrt(counts.size)
    assert abs(counts.mean() - 128.0) < 4 * se
    new = UnitRenewal("node", 1e5, 0.5, "new")
    counts_new = np.array([new.stream(TOPO, rng=s).until(1e5)[0].size for s in range(100)])
    assert counts_new.mean() > 128 + 10 * se
    slow = np.array([unit_stream_slow(m, 128, 1e5, s)[0].size for s in range(150)])
    assert stats.ks_2samp(counts, slow).pvalue > 1e-3


def test_the_stream_extends_without_changing_its_past():
    s = UnitRenewal("node", 1e5, 0.7).stream(TOPO, rng=1)
    t1, u1 = (a.copy() for a in s.until(5e4))
    t2, u2 = s.until(2e5)
    n = t1.size
    assert np.array_equal(t2[:n], t1) and np.array_equal(u2[:n], u1) and t2[n:].min() >= 5e4


@pytest.mark.parametrize("block", [None, 7])
def test_one_chain_advances_in_blocks_with_the_draws_of_the_loop(block, monkeypatch):
    # the system model's windows: one chain; in blocks (of 7: many blocks, a crossing inside and at a block's end)
    # the same times, the same next failure and the same generator state after as the round-by-round twin
    if block is not None:
        monkeypatch.setattr(unit_renewal, "_BLOCK", block)
    for k, t_s, x0 in ((0.6, 5e4, 10.0), (1.0, 3e3, 0.0), (2.5, 1e3, 2e2), (0.8, 50.0, 60.0), (0.7, 1e5, 3e4)):
        a, b = np.random.default_rng(11), np.random.default_rng(11)
        na, nb = np.array([x0]), np.array([x0])
        ta, ca = unit_renewal.advance_chains(na, t_s, 100.0, k, a)
        tb, cb = advance_chains_slow(nb, t_s, 100.0, k, b)
        assert np.array_equal(ta, tb) and np.array_equal(ca, cb) and na[0] == nb[0]
        assert a.random() == b.random()
    assert ta.size > 50  # the cases do cross several blocks


# --------------------------------------------------------------------------------- fits and their checks
def test_the_checks_ks_distance_equals_its_twin_over_both_sets():
    # ties within and across the sets (rounded gaps), one set inside the other's range, disjoint ranges, one point
    rng = np.random.default_rng(3)
    cases = [(rng.integers(0, 30, n).astype(float), np.sort(rng.integers(0, 30, m).astype(float)))
             for n, m in ((1, 1), (5, 200), (200, 5), (50, 50), (1000, 7))]
    cases += [(rng.random(40), np.sort(rng.random(400) + 5.0)), (rng.random(40) + 5.0, np.sort(rng.random(400))),
              (rng.random(40) * 0.1 + 0.45, np.sort(rng.random(400))), (np.zeros(0), np.ones(3)),
              (np.ones(3), np.zeros(0)), (np.zeros(0), np.zeros(0))]
    for sample, ref in cases:
        assert _ks(sample, ref) == ks_union_slow(sample, ref)


def test_a_check_too_small_to_ever_fail_is_refused():
    log = _node_log(0.5, 30, 60, 0)
    with pytest.raises(ValueError, match="could never fail; give at least 160"):
        predictive_check(fit_units(log, "node"), log, sims=100)


def test_a_check_whose_reference_exceeds_the_memory_budget_is_refused_before_simulating(monkeypatch):
    # 200 windows of the log's ~840 events: about 4 MB of reference; a budget of 0.5 MB refuses it at once
    import spare_mc
    from spare_mc.logs import models

    log = _node_log(0.5, 30, 180, 0)
    fit = fit_units(log, "node")
    monkeypatch.setattr(models.UnitFit, "sample_log", lambda *a, **k: pytest.fail("simulated before the check"))
    with spare_mc.set_options(max_memory=2**19), \
            pytest.raises(ValueError, match=r"predictive check's reference of 200 simulated windows.*shorter window"):
        predictive_check(fit, log)


def test_a_large_logs_reference_is_a_few_windows(monkeypatch):
    """The reference holds about _REF_EVENTS events: for a large log a few windows, not sims of them (a 10^7-event
    log needed 200 windows, 45 GB)."""
    from spare_mc.logs import models, predictive
    log = _node_log(0.5, 30, 180, 0)  # about 840 events
    fit = fit_units(log, "node")
    calls = []
    real = models.UnitFit.sample_log
    monkeypatch.setattr(models.UnitFit, "sample_log", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    monkeypatch.setattr(predictive, "_REF_EVENTS", 2000)
    predictive_check(fit, log, sims=160)
    assert len(calls) == 160 + math.ceil(2000 / len(log))


def test_the_check_passes_the_true_model_and_fails_all_new_on_aged_units():
    log = _node_log(0.5, 30, 180, 0)
    good = predictive_check(fit_units(log, "node"), log, rng=0)
    bad = predictive_check(fit_units(log, "node", ages="new"), log, rng=0)
    assert good.consistent
    assert not bad.consistent and "event_times" in bad.failing


def test_the_aic_compares_the_models_at_the_minute_as_with_exact_times():
    """On a log drawn from per-unit renewals the per-unit model has the lower AIC, and the two models' AIC difference
    is the same recorded at the minute as with exact times: the first failures' densities are made tick
    probabilities (before, the minute log preferred the system model, charged log(60) per unit that failed)."""
    diffs = []
    for res in (0.0, 60.0):
        log = _node_log(0.6, 30, 365, 3, res=res)
        diffs.append(fit_system(log, resolution_s=res).aic - fit_units(log, "node", resolution_s=res).aic)
    assert diffs[0] > 50 and diffs[1] == pytest.approx(diffs[0], rel=0.05)


def test_the_check_counts_wipeouts_kill_only_on_a_log_with_repair_times():
    """The fitted model has no repair times, so its simulated logs have none: the check replays the log without its
    repairs too. The same events with and without repair times get the same check (the log's repairs used to be
    replayed: the true model failed, about 10 wipe-outs against a simulated 142-168)."""
    log = _node_log(0.5, 30, 180, 0)
    rep = FailureLog(log.time_s, log.level, log.unit, np.full(len(log), 4500.0), log.duration_s, TOPO, log.levels,
                     "with repairs")
    assert replay_log(rep, "cyclic", r=2).epochs < replay_log(log, "cyclic", r=2).epochs  # the repairs matter
    fit = fit_units(log, "node")
    plain, repaired = predictive_check(fit, log, rng=0), predictive_check(fit, rep, rng=0)
    assert repaired.observed == plain.observed and repaired.p_values == plain.p_values and repaired.consistent
    assert repaired.to_dict()["wipeout_layout"]["repairs"] == "ignored"


def test_log_fit_json_keys_and_flags_run_through_ttt(tmp_path):
    path = tmp_path / "log.csv"
    write_failure_log(path, _node_log(0.7, 30, 120, 2))
    topo = ["--n-gpus", "1024", "--n-groups", "16"]
    job = ["--strategy", "spare", "--n-groups", "16", "--r", "2", "--n-steps", "200", "--reps", "5"]
    for model, keys in (("system", ("mtbf_s", "mtbf_s_ci95")), ("unit", ("mean_lifetime_s", "mean_lifetime_s_ci95"))):
        extra = ["--level", "node"] if model == "unit" else []  # the acceptance's spelling of --unit-level
        out = subprocess.run([sys.executable, "-m", "spare_mc.cli", "log", "fit", str(path), *topo, "--model", model,
                              *extra, "--json"], capture_output=True, text=True, check=True)
        d = json.loads(out.stdout)
        for key in ("model", "shape", "shape_ci95", "n_events", "window_s", "ttt_flags", *keys):
            assert key in d
        for key in ("observed_failures", "simulated_failures_ci95", "interarrival_p", "consistent"):
            assert key in d["predictive"]
        run = subprocess.run([sys.executable, "-m", "spare_mc.cli", "ttt", *job, *d["ttt_flags"], "--json"],
                             capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stderr


def test_ttt_failures_unit_prints_its_text_output(capsys):
    """The text output of `spare-mc ttt --failures unit` (a theory block without closed-form numbers or assumptions:
    it raised KeyError 'assumptions'; only --json worked)."""
    args = ["ttt", "--strategy", "spare", "--r", "2", "--n-groups", "16", "--n-steps", "100", "--reps", "2",
            "--failures", "unit", "--unit-level", "node", "--unit-mean-s", "2e6", "--shape", "0.7", "--n-gpus", "1024"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "theory.applies" in out and "no: the closed forms assume a system-level renewal process" in out


def test_a_failed_check_is_refused_by_ttt_unless_accepted():
    base = [sys.executable, "-m", "spare_mc.cli", "ttt", "--strategy", "ckpt", "--n-groups", "16", "--n-steps",
            "50", "--reps", "2", "--failures", "system", "--mtbf-s", "5000", "--model-check", "failed"]
    out = subprocess.run(base, capture_output=True, text=True, check=False)
    assert out.returncode == 2 and "--accept-failed-check" in out.stderr
    assert subprocess.run([*base, "--accept-failed-check"], capture_output=True, text=True, check=False).returncode == 0


def test_unit_model_failures_per_unit_time_match_the_log():
    """A model that passed its check: its simulated jobs see the log's failure rate (within CI)."""
    log = _node_log(0.6, 40, 365, 7)
    fit = fit_units(log, "node")
    m = fit.model()
    cfg = TimelineConfig("ckpt", 16, r=1, n_steps=2000, jitter_sd=0.0, mtbf_s=fit.system_mtbf_s())
    res = simulate_stream_ttt(cfg, m, TOPO, 200, rng=1)
    # every event of the stream during a job: those that killed a live group and those absorbed by a restart
    n = np.array([run.failures + run.absorbed for run in res.runs], dtype=float)
    t = res.values("ttt_over_t0") * cfg.t0_s
    rate = n.sum() / t.sum()
    se = np.std(n - rate * t, ddof=1) * math.sqrt(n.size) / t.sum()
    lo, hi = fit.mean_ci
    log_rate = len(log) / log.duration_s
    assert 128 / hi <= log_rate <= 128 / lo  # the fitted cluster rate covers the log's
    assert abs(rate - 128 / fit.mean_s) < 4 * se  # and the jobs meet the model's rate


def test_system_fit_on_the_example_log():
    log = read_failure_log(example_log_path(), Topology(256, 32, nodes_per_rack=4, racks_per_power=2))
    fit = fit_system(log)
    assert fit.n_events == len(log) and fit.ttt_flags()[:2] == ["--failures", "system"]
    assert fit.shape_ci[0] < fit.shape < fit.shape_ci[1]


def test_recommend_agrees_with_the_replay_of_a_true_model():
    log = _node_log(0.6, 60, 365, 5)
    rec = recommend(log, n_steps=2000, model="unit", reps=40, spare_r=(2,), period_factors=(1.0,), rng=1)
    d = rec.to_dict()
    for key in ("strategy", "r", "ckpt_period_s", "ttt_over_t0", "ttt_over_t0_ci95"):
        assert key in d["best"] and key in d["runner_up"]
    assert d["model_check_passed"] and d["model_vs_replay_consistent"]
    assert d["margin_ci95"][0] <= d["margin"] <= d["margin_ci95"][1]


@pytest.mark.parametrize("sizes", [[], ["--gpus-per-node", "8", "--nodes-per-rack", "4", "--racks-per-power", "2"]])
def test_spare_mc_recommend_runs_with_the_domain_sizes_given_or_not(capsys, sizes):
    """The command line ran in neither case: the timeline's flags reset the log's domain sizes to None (`--gpus-per-
    node` must be an integer, got None), and given, they were refused as having no effect on the system model."""
    args = ["recommend", example_log_path(), "--n-gpus", "256", "--n-groups", "32", *sizes, "--n-steps", "50",
            "--reps", "2", "--spare-r", "2", "--period-factors", "1", "--sims", "160", "--replay-starts", "2",
            "--accept-failed-check", "--json"]
    assert main(args) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["fit"]["topology"]["gpus_per_node"] == 8 and d["fit"]["n_events"] == 372
    assert d["fit"]["topology"]["racks_per_power"] == (2 if sizes else 8)


def test_recommend_applies_repairs_to_rep_and_spare_only():
    """A repair option (Rep and SPARe only) is dropped for CKPT-only and listed: it was passed to every candidate, and
    the CKPT-only one refused it after the fit and the check had run, so no recommendation could take repairs."""
    log = _node_log(0.5, 30, 180, 0)
    rec = recommend(log, n_steps=300, model="unit", reps=3, spare_r=(2,), period_factors=(1.0,), sims=160,
                    repair="fixed", repair_s=1800.0, rng=1)
    d = rec.to_dict()
    assert d["options_not_applied"] == {"ckpt": ["repair", "repair_s"]}
    assert {c["strategy"] for c in d["candidates"]} == {"ckpt", "rep", "spare"}


def test_recommend_refuses_a_model_that_fails_its_check():
    log = _node_log(0.5, 30, 180, 0)
    with pytest.raises(ValueError, match="fails its predictive check"):
        recommend(log, n_steps=500, model="unit", ages="new", reps=5, spare_r=(2,), period_factors=(1.0,))


# ------------------------------------------------------------------------- coverage (the acceptance's 30 logs)
#: Logs per coverage case, and the fewest intervals of them that must cover: P(Bin(60, 0.95) < 52) = 0.003.
COVER_LOGS, COVER_MIN = 60, 52


@pytest.mark.slow
@pytest.mark.parametrize("k", [0.5, 0.75, 1.0])
def test_system_fit_intervals_cover_the_truth(k):
    """60 logs of a system-level renewal (minute ties) per shape: the 95% intervals cover k and the MTBF at their
    rate."""
    mean = 3000.0
    lam = mean / math.gamma(1 + 1 / k)
    cover_k = cover_m = 0
    rng = np.random.default_rng(int(k * 100))  # one stream for all the logs of a case
    for _ in range(COVER_LOGS):
        t = np.cumsum(lam * rng.weibull(k, 800))
        t = np.floor(t / 60) * 60 + 60
        log = FailureLog(t, np.zeros(t.size, dtype=np.int64), rng.integers(0, 1024, t.size), None, float(t[-1]),
                         TOPO, log_levels(TOPO), "sys")
        f = fit_system(log)
        cover_k += f.shape_ci[0] <= k <= f.shape_ci[1]
        cover_m += f.mean_ci[0] <= mean <= f.mean_ci[1]
    assert cover_k >= COVER_MIN and cover_m >= COVER_MIN, (cover_k, cover_m)


@pytest.mark.slow
@pytest.mark.parametrize("ages", ["stationary", "new"])
def test_unit_fit_intervals_cover_the_truth(ages):
    """Per-unit renewals of 128 nodes, aged (stationary) or new at the log start (an early-life burst), fitted with
    the same ages: the intervals cover at their rate."""
    cover_k = cover_m = 0
    for seed in range(COVER_LOGS):
        f = fit_units(_node_log(0.6, 30, 120, 100 + seed, ages=ages), "node", ages=ages)
        cover_k += f.shape_ci[0] <= 0.6 <= f.shape_ci[1]
        cover_m += f.mean_ci[0] <= 30 * 86400 <= f.mean_ci[1]
    assert cover_k >= COVER_MIN and cover_m >= COVER_MIN, (cover_k, cover_m)


@pytest.mark.slow
def test_the_check_rejects_all_new_on_aged_units_and_passes_the_truth_on_most_logs():
    """30 logs of aged units (k = 0.5): the true model passes its check on at least 27 (the check's level is 5%:
    P(Bin(30, 0.05) > 3) = 0.06 for an exact check, less for this conservative one); the all-new model fails on at
    least 20 (its power measured on other seeds was about 0.9)."""
    passed = failed = 0
    for seed in range(30):
        log = _node_log(0.5, 30, 180, 500 + seed)
        passed += predictive_check(fit_units(log, "node"), log, rng=seed).consistent
        failed += not predictive_check(fit_units(log, "node", ages="new"), log, rng=seed).consistent
    assert passed >= 27 and failed >= 20, (passed, failed)


# ------------------------------------------------------------------ the default per-level fit is checked too
def test_the_per_level_fit_is_checked_and_a_failed_check_marks_its_flags(tmp_path, capsys):
    """A log of aged nodes and GPUs fitted per level (every unit new at the log start): the check fails on the event
    times and every printed flag set carries --model-check failed, which ttt refuses."""
    from spare_mc.cli import main
    topo = Topology(1024, 16)
    m_gpu, m_node = UnitRenewal("gpu", 40 * 86400.0 * 8, 0.5), UnitRenewal("node", 40 * 86400.0, 0.5)
    W = 180 * 86400.0
    tg, ug = m_gpu.stream(topo, rng=1).until(W)
    tn, un = m_node.stream(topo, rng=2).until(W)
    t = np.concatenate([tg, tn])
    c = np.concatenate([np.zeros(tg.size, dtype=np.int64), np.ones(tn.size, dtype=np.int64)])
    u = np.concatenate([ug, un])
    o = np.lexsort((u, c, t))
    path = tmp_path / "aged.csv"
    write_failure_log(path, FailureLog(t[o], c[o], u[o], None, W, topo, log_levels(topo), "aged"))
    assert main(["log", "fit", str(path), "--n-gpus", "1024", "--n-groups", "16", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert not d["model_check_passed"] and "event_times" in d["predictive"]["failing"]
    assert d["ttt_args"]["per-gpu"][-2:] == ["--model-check", "failed"]
    job = ["ttt", "--strategy", "ckpt", "--n-groups", "16", "--n-steps", "50", "--reps", "2"]
    assert main([*job, *d["ttt_args"]["per-gpu"]]) == 2
    assert "--accept-failed-check" in capsys.readouterr().err
    assert main([*job, *d["ttt_args"]["per-gpu"], "--accept-failed-check", "--json"]) == 0


def test_the_example_logs_check_ignores_repairs_on_both_sides():
    """The example log has repair times; its check replays the log and the simulated windows kill-only alike (a
    repaired log against unrepaired simulations gave 17 wipe-outs against 49-68)."""
    log = read_failure_log(example_log_path(), Topology(256, 32, nodes_per_rack=4, racks_per_power=2))
    d = predictive_check(fit_units(log, "gpu"), log, rng=0).to_dict()
    assert d["wipeout_layout"]["repairs"] == "ignored"
    lo, hi = d["simulated_wipeouts_ci95"]
    assert lo <= d["observed_wipeouts"] <= hi


@pytest.mark.slow
def test_the_check_passes_a_true_system_renewal_on_most_logs():
    """30 logs of a system-level renewal (k = 0.6, minute ties): the fitted system model passes on at least 27."""
    lam = 3000.0 / math.gamma(1 + 1 / 0.6)
    rng = np.random.default_rng(60)
    passed = 0
    for i in range(30):
        t = np.ceil(np.cumsum(lam * rng.weibull(0.6, 600)) / 60) * 60
        log = FailureLog(t, np.zeros(t.size, dtype=np.int64), rng.integers(0, 1024, t.size), None, float(t[-1]),
                         TOPO, log_levels(TOPO), "sys")
        passed += predictive_check(fit_system(log), log, rng=i).consistent
    assert passed >= 27, passed


@pytest.mark.slow
def test_recommend_agrees_with_the_replay_on_most_logs_of_a_true_model():
    """30 node logs of aged units: the model's answer and the log replay agree (their 95% test) on at least 25
    (P(Bin(30, 0.95) < 25) = 0.003 if the two estimate one number)."""
    agree = 0
    for i in range(30):
        log = _node_log(0.6, 60, 365, 900 + i)
        rec = recommend(log, n_steps=2000, model="unit", reps=40, spare_r=(2,), period_factors=(1.0,), rng=i)
        agree += bool(rec.model_vs_replay_consistent)
    assert agree >= 25, agree


def test_recommend_cli_json_keys_and_job_flags(tmp_path, capsys):
    """The acceptance's keys, with modern checkpointing flags passed through to the job."""
    from spare_mc.cli import main
    path = tmp_path / "log.csv"
    write_failure_log(path, _node_log(0.6, 60, 365, 5))
    argv = ["recommend", str(path), "--n-gpus", "1024", "--n-groups", "16", "--model", "unit", "--n-steps", "1500",
            "--reps", "20", "--spare-r", "2", "--period-factors", "1", "--memory-copies", "2", "--ckpt-async", "--json"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    for part in ("best", "runner_up"):
        for key in ("strategy", "r", "ckpt_period_s", "ttt_over_t0", "ttt_over_t0_ci95"):
            assert key in d[part]
    for key in ("strategy", "r", "ttt_over_t0", "ttt_over_t0_ci95"):
        assert key in d["replay"]
    for key in ("margin_ci95", "model_check_passed", "model_vs_replay_consistent"):
        assert key in d
    assert main([*argv[:-1], "--mtbf-s", "100"]) == 2
    assert "`--mtbf-s` has no effect with a log" in capsys.readouterr().err


def test_ages_at_a_start_time_are_the_logs():
    """Known where the unit failed before the start (time since its last failure), a lower bound elsewhere; a model
    started at those ages is never new."""
    t = np.array([100.0, 250.0, 400.0, 900.0])
    u = np.array([3, 3, 5, 3])
    log = FailureLog(t, np.ones(4, dtype=np.int64), u, None, 1000.0, TOPO, log_levels(TOPO), "ages")
    fit = fit_units(log, "node", resolution_s=0)
    ages = fit.ages_at(log, 500.0)
    assert ages.age_s[3] == 250.0 and ages.known[3]
    assert ages.age_s[5] == 100.0 and ages.known[5]
    assert ages.age_s[0] == 500.0 and not ages.known[0]
    r = first_failures(fit.model(ages), ages.age_s.size, np.random.default_rng(0))
    assert r.shape == (128,) and np.all(r >= 0)
    with pytest.raises(ValueError, match="after the log's window end"):
        fit.ages_at(log, 2000.0)


def test_recommend_from_a_failure_model_without_a_log(capsys):
    """From a model (no log): no fit, no check, no replay, and the output says so; log-only flags are refused."""
    from spare_mc.cli import main
    from spare_mc.model.failures import SystemRenewal
    rec = recommend(SystemRenewal(4e4, 0.7), topology=TOPO, n_steps=800, reps=10, spare_r=(2,),
                    period_factors=(1.0,), rng=1)
    d = rec.to_dict()
    assert d["model_check_passed"] is None and d["predictive"] is None and d["model_vs_replay_consistent"] is None
    assert "no log" in d["replay"]["note"] and "not a log" in d["label"]
    unit = recommend(UnitRenewal("node", 5e6, 0.6), topology=TOPO, n_steps=800, reps=10, spare_r=(2,),
                     period_factors=(1.0,), rng=1)
    assert unit.best["strategy"] in ("ckpt", "rep", "spare")
    with pytest.raises(ValueError, match="`model` has no effect with a failure model"):
        recommend(SystemRenewal(4e4, 0.7), topology=TOPO, n_steps=800, model="unit")
    with pytest.raises(TypeError, match="needs `topology`"):
        recommend(SystemRenewal(4e4, 0.7), n_steps=800)
    base = ["recommend", "--n-gpus", "1024", "--n-groups", "16", "--n-steps", "800", "--reps", "10", "--spare-r", "2",
            "--period-factors", "1"]
    assert main([*base, "--unit-level", "node", "--unit-mean-s", "5e6", "--shape", "0.6"]) == 0
    assert "no log: nothing to replay" in capsys.readouterr().out
    assert main([*base, "--mtbf-s", "4e4", "--shape", "0.7", "--sims", "300"]) == 2
    assert "`--sims` has no effect without a log" in capsys.readouterr().err
    assert main(base) == 2
    assert "give a failure log, or a failure model" in capsys.readouterr().err


def test_a_check_on_a_tiny_log_says_it_has_little_power():
    t = np.array([600.0, 1200.0, 1260.0, 3000.0, 3060.0])
    log = FailureLog(t, np.ones(5, dtype=np.int64), np.array([1, 2, 3, 4, 5]), None, 3600.0, TOPO,
                     log_levels(TOPO), "tiny")
    d = predictive_check(fit_system(log), log).to_dict()
    assert d["low_power"] and "little power" in d["power_note"]
    big = _node_log(0.6, 30, 60, 3)
    assert not predictive_check(fit_units(big, "node"), big).to_dict()["low_power"]
