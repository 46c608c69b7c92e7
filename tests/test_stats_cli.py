import json
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

import spare_mc as sm
from spare_mc.cli import main


def test_estimate_and_compare(rng):
    x = rng.normal(10.0, 2.0, size=10_000)
    est = sm.estimate_mean(x, "x")
    assert est.se == pytest.approx(x.std(ddof=1) / 100)
    lo, hi = est.ci
    assert lo < est.mean < hi and hi - lo == pytest.approx(2 * 1.9602 * est.se, rel=1e-3)
    c = sm.compare(est, 10.0, alpha=1e-4)
    assert c.consistent and abs(c.z) < 4
    far = sm.compare(est, 11.0, alpha=1e-4)
    assert not far.consistent and far.p_value < 1e-100 and far.rel_error == pytest.approx(est.mean / 11 - 1)
    # consistency is equivalent to the reference lying in the (1 - alpha) interval
    assert (far.ci[0] <= 11.0 <= far.ci[1]) == far.consistent


def test_ci_coverage_is_nominal(rng):
    """Over 2000 experiments the 95% interval covers the true mean about 95% of the time (binomial test)."""
    from scipy import stats
    hits = sum(lo <= 1.0 <= hi for lo, hi in (sm.estimate_mean(rng.exponential(1.0, 200)).ci for _ in range(2000)))
    assert stats.binomtest(hits, 2000, 0.95).pvalue > 1e-4


@pytest.mark.parametrize("support", ["real", "nonnegative", "unit", "at_most_one"])
def test_every_interval_contains_its_mean(support):
    """Identical replications of 0.9728506787330317 (an availability) gave the unit interval (0.97...318,
    0.97...318), one rounding step above the mean: the logit round trip. Every support's interval now contains
    its mean, for identical values and for spreads down to the last bits."""
    from spare_mc.stats import estimate_mean

    rng = np.random.default_rng(3)
    for _ in range(2000):
        m = float(rng.uniform(1e-6, 1 - 1e-6))
        spread = float(10.0 ** rng.uniform(-18, -2)) * rng.integers(0, 2)
        x = m + spread * rng.standard_normal(int(rng.integers(2, 6)))
        x = np.clip(x, 1e-9, 1 - 1e-9)
        est = estimate_mean(x, support=support)
        lo, hi = est.ci
        assert lo <= est.mean <= hi, (support, x.tolist(), est.mean, lo, hi)


def test_wilson_interval():
    lo, hi = sm.wilson_interval(np.array([0, 50, 100]), 100)
    assert lo[0] == 0 and hi[-1] == 1 and lo[1] < 0.5 < hi[1]


def test_support_allows_rounding_across_its_edge():
    """A proportion computed as a difference of times can come out at -7e-17: still in the unit support."""
    est = sm.estimate_mean([-7e-17, 0.5, 1 + 2e-16], support="unit")
    assert 0 <= est.ci[0] <= est.mean <= est.ci[1] <= 1


def test_interval_counts_may_be_whole_floats_and_numpy_integers():
    for k in (np.float64(3.0), np.int32(3), [3.0], np.array([3], np.uint8)):
        for f in (sm.wilson_interval, sm.clopper_pearson_interval):
            assert np.array_equal(np.ravel(f(k, 10)), np.ravel(f(3, 10)))


def test_clopper_pearson_interval_is_scipys_exact_interval():
    k = np.array([0, 1, 3, 50, 97, 99, 100])
    lo, hi = sm.clopper_pearson_interval(k, 100, 0.99)
    for i, kk in enumerate(k.tolist()):
        ci = stats.binomtest(kk, 100).proportion_ci(0.99, method="exact")
        assert lo[i] == pytest.approx(ci.low, abs=1e-10) and hi[i] == pytest.approx(ci.high, abs=1e-10)
    assert lo[0] == 0 and hi[-1] == 1


@pytest.mark.parametrize("p", [1e-6, 5e-6, 2e-5, 0.3])
def test_clopper_pearson_covers_where_wilson_does_not(p):
    """Exact miss probabilities from the binomial pmf, n = 200,000 at level 1 - 1e-4: each side of the exact
    interval misses with probability at most 5e-5 for every p; Wilson's lower bound misses far more often when
    n p is near 1 (the far tail of a survival curve)."""
    n, level = 200_000, 1 - 1e-4
    k = np.arange(n + 1) if p > 1e-3 else np.arange(200)
    pmf = stats.binom.pmf(k, n, p)
    lo, hi = sm.clopper_pearson_interval(k, n, level)
    assert pmf[lo > p].sum() <= 5e-5 * (1 + 1e-9) and pmf[hi < p].sum() <= 5e-5 * (1 + 1e-9)
    if p == 5e-6:
        wlo, _ = sm.wilson_interval(k, n, level)
        assert pmf[wlo > p].sum() > 1e-3


@pytest.mark.parametrize("call, exc, match", [
    (lambda: sm.estimate_mean([1.0]), ValueError, r"at least 2 replications"),
    (lambda: sm.estimate_mean([1.0, np.nan]), ValueError, r"`values` must be finite"),
    (lambda: sm.compare(3.0, 1.0), TypeError, r"`estimate` must be an MCEstimate"),
    (lambda: sm.compare(sm.estimate_mean([1.0, 2.0]), 1.0, alpha=1.5), ValueError, r"`alpha` must be < 1"),
    (lambda: sm.wilson_interval([1], 0), ValueError, r"`n` must be >= 1"),
    (lambda: sm.compare(sm.estimate_mean([1.0, 2.0]), 1.0, alpha=1e-300), ValueError, r"`alpha` must be at least"),
    # impossible counts gave NaN or bounds outside [0, 1] (a QA pass): each is refused, naming the first bad one
    (lambda: sm.clopper_pearson_interval(11, 10), ValueError, r"`successes` must be whole numbers in \[0, n\] with "
                                                              r"n=10, got 11"),
    (lambda: sm.clopper_pearson_interval(-1, 10), ValueError, r"got -1"),
    (lambda: sm.wilson_interval([3, 5.5], 10), ValueError, r"got 5.5 \(at index 1\)"),
    (lambda: sm.wilson_interval([3, np.nan], 10), ValueError, r"got nan \(at index 1\)"),
    (lambda: sm.wilson_interval("5", 10), TypeError, r"`successes` must be a count .* of dtype <U1"),
    # an estimate on a support its values do not live on gave an interval that excludes its own mean (QA pass)
    (lambda: sm.estimate_mean([1.0, 2.0, 3.0], support="unit"), ValueError,
     r"`values` must lie in \[0, 1\] for support='unit', got 2 at index 1"),
    (lambda: sm.estimate_mean([1.0, -2.0], support="nonnegative"), ValueError, r"got -2 at index 1"),
    (lambda: sm.estimate_mean([1.0, 2.0], support="at_most_one"), ValueError, r"\[-inf, 1\]"),
    (lambda: sm.estimate_mean([1.0, 2.0, 3.0], censored=5), ValueError, r"`censored` must be <= 3"),
    (lambda: sm.estimate_mean([1.0, 2.0, 3.0], censored=-1), ValueError, r"`censored` must be >= 0"),
    (lambda: sm.estimate_mean([1.0, 2.0, 3.0], censored=1.5), TypeError, r"`censored` must be an integer"),
    (lambda: sm.estimate_mean(["1", "2"]), TypeError, r"`values` must be an array of real numbers"),
    (lambda: sm.estimate_mean(x for x in (1.0, 2.0)), TypeError, r"got generator of dtype object"),
    (lambda: sm.ratio_estimate([1.0, 2.0], [1j, 2.0]), TypeError, r"`denominators` must be an array of real"),
    (lambda: sm.wilson_interval(True, 10), TypeError, r"of dtype bool"),
    (lambda: sm.clopper_pearson_interval(None, 10), TypeError, r"of dtype object"),
    # a second QA pass: a ratio off its support gave an interval excluding its mean; a level whose quantile rounds
    # to 1 gave NaN or infinite intervals; a hand-made estimate with n = 0 compared as consistent, a negative se
    # gave a reversed interval
    (lambda: sm.ratio_estimate([2.0, 3.0], [1.0, 1.0], support="unit"), ValueError,
     r"the ratio sum\(numerators\) / sum\(denominators\) = 2.5 must lie in \[0, 1\] for support='unit'"),
    (lambda: sm.ratio_estimate([-2.0, -2.1], [1.0, 1.0], support="nonnegative"), ValueError, r"= -2.05 must lie"),
    (lambda: sm.wilson_interval(5, 10, level=1 - 1e-16), ValueError, r"`level` must be below 1 - 2.2e-16"),
    (lambda: sm.clopper_pearson_interval(5, 10, level=1 - 1e-16), ValueError, r"`level` must be below"),
    (lambda: sm.estimate_mean([1.0, 2.0, 3.0], level=1 - 1e-16), ValueError, r"`level` must be below"),
    (lambda: sm.MCEstimate("x", 1.0, -0.1, 1.0, 10), ValueError, r"`se` must be >= 0 \(or NaN: unknown\)"),
    (lambda: sm.MCEstimate("x", 1.0, 0.1, 1.0, -5), ValueError, r"`n` must be >= 0"),
    (lambda: sm.MCEstimate("x", "1", 0.1, 1.0, 10), TypeError, r"`mean` must be a real number"),
    (lambda: sm.MCEstimate("x", 1.0, 0.1, 1.0, "10"), TypeError, r"`n` must be an integer"),
    (lambda: sm.compare(sm.MCEstimate("x", 1.0, 0.1, 1.0, 0), 5.0), ValueError,
     r"`estimate` must come from at least 2 replications"),
    (lambda: sm.compare(sm.MCEstimate("x", 1.0, float("nan"), float("nan"), 1), 1.0), ValueError, r"n=1"),
    # a third QA pass: a hand-made mean off its support gave a reversed interval ((1.30, 1.0) for a unit mean 1.5)
    (lambda: sm.MCEstimate("x", 1.5, 0.1, 1.0, 100, support="unit"), ValueError,
     r"`mean` must lie in \[0, 1\] for support='unit', got mean=1.5"),
    (lambda: sm.MCEstimate("x", -1.0, 0.1, 1.0, 100, support="nonnegative"), ValueError, r"\[0, inf\].*mean=-1"),
    (lambda: sm.MCEstimate("x", 2.0, 0.05, 0.07, 10, support="at_most_one"), ValueError, r"\[-inf, 1\].*mean=2"),
])
def test_stats_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_cli_mu_json_keys_and_consistency(capsys):
    assert main(["mu", "--n-groups", "600", "--r", "9", "--layout", "cyclic", "--reps", "20000", "--seed", "3",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("n_groups", "r", "layout", "reps", "seed", "exact_mean_T", "exact_sd_T", "mc_mean_T", "mc_se_T",
                "mc_ci95_T", "paper_mu"):
        assert key in out
    assert out["exact_mean_T"] == pytest.approx(sm.exact_wipeout("cyclic", 600, 9).mean)
    lo, hi = out["mc_ci95_T"]
    assert lo < out["mc_mean_T"] < hi and out["mc_vs_exact_consistent"]


def test_cli_random_layout_is_fresh_per_trial_and_sidon_has_no_exact(capsys):
    assert main(["mu", "--n-groups", "200", "--r", "3", "--layout", "random", "--reps", "20000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mc_vs_exact_consistent"]
    assert main(["mu", "--n-groups", "100", "--r", "4", "--layout", "sidon", "--reps", "100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["exact_mean_T"] is None and out["exact_sd_T"] is None


def test_cli_overhead_json(capsys):
    assert main(["overhead", "--n-groups", "300", "--r", "6", "--layout", "cyclic", "--reps", "400", "--seed", "2",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("masked", "c_mean", "s_star_mean", "hk_fixed_rate", "moves_mean", "patch_mean"):
        lo, hi = out[f"{key}_ci95"]
        assert lo <= out[key] <= hi
    assert (out["n_groups"], out["r"], out["layout"], out["reps"], out["seed"]) == (300, 6, "cyclic", 400, 2)
    assert out["exact_c_mean"] == pytest.approx(sm.exact_stack_bound_sum("cyclic", 300, 6).c_mean)
    assert out["mc_vs_exact_consistent"] and out["exact_mean_T"] == pytest.approx(
        sm.exact_wipeout("cyclic", 300, 6).mean)
    assert out["s_star_mean"] >= out["c_mean"]
    # --no-exact: the same estimates, without the exact laws (minutes at large N) or the check against them
    assert main(["overhead", "--n-groups", "300", "--r", "6", "--layout", "cyclic", "--reps", "400", "--seed", "2",
                 "--json", "--no-exact"]) == 0
    quick = json.loads(capsys.readouterr().out)
    assert not [k for k in quick if "exact" in k] and quick["c_mean"] == out["c_mean"]


def test_cli_table_output(capsys):
    assert main(["mu", "--n-groups", "60", "--r", "3", "--layout", "block", "--reps", "100"]) == 0
    assert "exact_mean_T" in capsys.readouterr().out


@pytest.mark.parametrize("argv, match", [
    (["mu", "--n-groups", "6", "--r", "8"], r"`--r` must satisfy 1 <= r <= N, got --r=8 with N=6"),
    (["mu", "--n-groups", "x", "--r", "8"], r"argument --n-groups: invalid int value: 'x'"),
    (["mu", "--n-groups", "10", "--r", "4", "--layout", "sidon"], r"Sidon offsets are impossible"),
    (["mu", "--n-groups", "10", "--r", "3", "--layout", "ring"], r"argument --layout: invalid choice"),
    (["mu", "--n-groups", "10", "--r", "3", "--reps", "1"], r"`--reps` must be >= 2"),
    (["mu", "--n-groups", "10", "--r", "3", "--seed", "-1"], r"`--seed` must be >= 0"),
    (["mu", "--r", "3"], r"required: --n-groups"),
    (["overhead", "--n-groups", "6", "--r", "8"], r"`--r` must satisfy 1 <= r <= N, got --r=8 with N=6"),
    (["overhead", "--n-groups", "10", "--r", "3", "--reps", "1"], r"`--reps` must be >= 2"),
    (["overhead", "--n-groups", "10", "--r", "3", "--seed", "-2"], r"`--seed` must be >= 0"),
    ([], r"required: command"),
])
def test_cli_bad_arguments_one_line(argv, match, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    import re
    assert re.search(match, err)


def test_console_script_runs():
    proc = subprocess.run([sys.executable, "-m", "spare_mc.cli", "mu", "--n-groups", "0", "--r", "1"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("spare-mc: error: `--n-groups` must be >= 1")


def test_confidence_interval_level_rule():
    est = sm.estimate_mean([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"`level` must be < 1"):
        est.confidence_interval(1.0)
    with pytest.raises(ValueError, match=r"`level` must be > 0"):
        est.confidence_interval(0.0)


def test_cli_output_into_a_closed_pipe_is_not_an_error(monkeypatch):
    """`spare-mc ... | head`: writing after the reader has gone raises EPIPE; the command still exits 0."""
    import os
    r, w = os.pipe()
    os.close(r)  # the reader is gone before anything is written
    out = os.fdopen(w, "w")
    monkeypatch.setattr(sys, "stdout", out)
    try:
        assert main(["overhead", "--n-groups", "100", "--r", "4", "--reps", "50", "--json"]) == 0
    finally:
        out.close()


def test_ratio_with_negative_denominators_has_a_positive_se():
    """The delta-method se divides by |mean(Y)|: negative denominators gave a negative se and a reversed interval
    (QA pass)."""
    pos = sm.ratio_estimate([1.0, 2.0, 3.0], [1.0, 2.0, 3.5])
    neg = sm.ratio_estimate([1.0, 2.0, 3.0], [-1.0, -2.0, -3.5])
    assert neg.mean == -pos.mean and neg.se == pos.se > 0
    lo, hi = neg.ci
    assert lo < neg.mean < hi


def test_huge_finite_values_give_a_finite_mean():
    """1e308 twice summed to inf (mean inf, interval NaN); values beyond 1e150 are scaled first (QA pass). Below
    that the usual sums are kept, bit for bit."""
    est = sm.estimate_mean([1e308, 1e308])
    assert est.mean == 1e308 and est.se == 0.0 and est.ci == (1e308, 1e308)
    est = sm.estimate_mean([1e200, 3e200], support="nonnegative")
    assert est.mean == pytest.approx(2e200) and est.sd == pytest.approx(np.sqrt(2) * 1e200)
    lo, hi = est.ci
    assert 0 < lo < est.mean < hi < np.inf
    x = np.array([1.0, 2.5, 4.0])
    assert sm.estimate_mean(x).mean == float(x.mean()) and sm.estimate_mean(x).sd == float(x.std(ddof=1))
