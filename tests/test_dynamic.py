"""The dynamic-checkpointing study: the paired statistics, CKPT-only at k = 1 (no change, exactly), bad input, the
command and the figure."""

import json
import math

import numpy as np
import pytest
from scipy import stats

import spare_mc as sm
from spare_mc.analyses.dynamic import _paired, dynamic_study
from spare_mc.cli import main

TINY = dict(shapes=(0.5, 1.0), r_values={"ckpt": (1,), "rep": (3,), "spare": (3,)}, factors=(0.5, 1.0),
            screen_reps=3, confirm_reps=8, base={"n_steps": 300, "mtbf_s": 200.0}, workers=0)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return dynamic_study((24,), out_dir=str(tmp_path_factory.mktemp("dyn")), **TINY)


def test_ckpt_only_under_exponential_failures_changes_nothing(tiny):
    """k = 1, CKPT-only: the hazard policy is the periodic optimum; every replication identical, change 0."""
    (row,) = [x for x in tiny.rows if x.strategy == "ckpt" and x.shape == 1.0 and x.policy == "hazard"]
    assert row.identical and row.factor == row.periodic_factor
    assert row.delta == 0.0 and row.delta_ci == (0.0, 0.0) and row.rel == 0.0 and row.p == 1.0


def test_every_cell_is_reported(tiny):
    cells = {(x.strategy, x.shape, x.policy) for x in tiny.rows}
    assert len(cells) == len(tiny.rows) == 3 * 2 * 2
    for x in tiny.rows:
        lo, hi = x.delta_ci
        assert lo <= x.delta <= hi and 0 <= x.p <= x.p_holm <= 1 and x.reps == 8
        assert x.ttt == pytest.approx(x.periodic_ttt + x.delta)
    assert "identical runs" in tiny.table()
    d = tiny.to_dict()
    assert "schema_version" in d and len(d["rows"]) == len(tiny.rows)


def test_paired_statistics():
    rng = np.random.default_rng(1)
    p = rng.gamma(4.0, 1.0, 200)
    d = p * 0.97 + rng.normal(0, 0.05, 200)
    mean, ci, rel, rci, pval = _paired(d, p)
    assert mean == pytest.approx(np.mean(d - p)) and ci[0] < mean < ci[1]
    assert pval == pytest.approx(stats.ttest_rel(d, p).pvalue)
    assert rel == pytest.approx(d.mean() / p.mean() - 1) and rci[0] < rel < rci[1]
    assert _paired(p, p)[1:] == ((0.0, 0.0), 0.0, (0.0, 0.0), 1.0)


@pytest.mark.parametrize("kw, match", [
    (dict(policies=("periodic",)), "`policies` must be dynamic policies"),
    (dict(base={"ckpt_policy": "hazard"}), "`base` must not set 'ckpt_policy'"),
    (dict(shapes=(0.0,)), "`shapes` must lie in"),
    (dict(factors=(0.0,)), "`factors` must be positive"),
    (dict(screen_reps=1), "`screen_reps` must be >= 2"),
    (dict(r_values={"rep": (2, 30)}), r"the study's rep r values \[2, 30\] need N >= 30 groups, got N = 24"),
    (dict(base={"memory_copies": 2}), "the study compares the periodic period with ckpt_policy='hazard', which "
                                      "this setting does not allow: in-memory checkpoints"),
])
def test_bad_input(kw, match, tmp_path):
    with pytest.raises(sm.UsageValueError, match=match):
        dynamic_study((24,), out_dir=str(tmp_path), **{**TINY, **kw})


def test_command_and_figure(tmp_path, capsys):
    out = tmp_path / "dyn"
    argv = ["dynamic", "--n-groups", "24", "--shapes", "1", "--policies", "hazard", "--screen-reps", "2",
            "--confirm-reps", "4", "--n-steps", "200", "--mtbf-s", "200", "--workers", "0", "--out-dir", str(out)]
    assert main(argv + ["--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {x["strategy"] for x in d["rows"]} == {"ckpt", "rep", "spare"}
    assert (out / "dynamic.png").stat().st_size > 10_000 and (out / "dynamic.json").exists()
    assert main(argv) == 0  # the second run reuses every dataset and replaces its own result
    assert "result:" in capsys.readouterr().out
    assert main(argv[:-2] + ["--out-dir", str(out), "--shape", "0.7"]) == 2
    assert "`--shape` must not be given: the study sets it" in capsys.readouterr().err


def test_ttt_says_which_policy_set_the_period(capsys):
    """`spare-mc ttt --ckpt-policy young_hazard --ckpt-period-factor 0.5` said "0.5 x the theory optimum T_c*",
    and `--ckpt-period optimal` beside a dynamic policy or --ckpt-every-steps was silently ignored (QA pass)."""
    argv = ["ttt", "--strategy", "rep", "--r", "2", "--n-groups", "20", "--n-steps", "100", "--reps", "3", "--json"]
    assert main(argv + ["--ckpt-policy", "young_hazard", "--ckpt-period-factor", "0.5"]) == 0
    rule = json.loads(capsys.readouterr().out)["ckpt_period_rule"]
    assert rule == "0.5 x the young_hazard policy's period, re-evaluated at every step boundary"
    for extra, named in ((["--ckpt-policy", "hazard"], "--ckpt-policy hazard"),
                         (["--ckpt-every-steps", "5"], "--ckpt-every-steps 5")):
        assert main(argv + extra + ["--ckpt-period", "optimal"]) == 2
        assert f"`--ckpt-period optimal` (the periodic optimum T_c*) contradicts `{named}`" in capsys.readouterr().err



@pytest.mark.parametrize("policy", ["hazard", "young_hazard"])
@pytest.mark.parametrize("shape", [0.5, 0.78, 1.0, 2.0])
def test_dynamic_due_decides_as_the_period_evaluated_at_every_boundary(shape, policy):
    """The kernel's dynamic_due skips the period's evaluation below a bound kept from an earlier one (shape <= 1:
    the period does not shrink with the age). Over a random history of boundaries, failures (the last failure's
    time), changes of the critical and known groups, and the checkpoints it calls for, it answers exactly as the
    period evaluated every time -- and the bound is in fact used (for shape > 1 it never is)."""
    from spare_mc._kernels import timeline_layout as lay
    from spare_mc._kernels.timeline_helpers import dynamic_due, dynamic_threshold_us
    from spare_mc.ttt.run import _kernel_params
    P, PF, _, _ = _kernel_params(sm.TimelineConfig("rep", 200, r=2, shape=shape, ckpt_policy=policy))
    P, PF = P.copy(), PF.copy()
    J, Q = np.zeros(lay.N_J, np.int64), np.zeros(lay.N_Q, np.int64)
    J[lay.J_DYN_T] = -1
    J[lay.J_N_KNOWN], J[lay.J_N_CRIT] = 200, 100
    rng = np.random.default_rng(11)
    t, counts = 0, {"due": 0, "not due": 0, "bound used": 0}
    for _ in range(20_000):
        u = rng.random()
        if u < 0.05:
            Q[lay.Q_T_LAST] = t - int(rng.integers(0, 10**6))  # a failure taken (up to a second ago)
        elif u < 0.07:
            J[lay.J_N_CRIT] = int(rng.integers(0, 3)) * int(rng.integers(1, 100))  # 0: the period is infinite
        elif u < 0.08:
            J[lay.J_N_KNOWN] -= 1
        t += int(rng.integers(1, 5 * 10**7))  # a boundary up to 50 s later
        want = float(t - J[lay.J_LAST_CK]) >= dynamic_threshold_us(t, Q[lay.Q_T_LAST], P, PF, J)
        evaluated_at = J[lay.J_DYN_T]
        got = dynamic_due(t, P, PF, J, Q)
        assert got == want
        counts["due" if got else "not due"] += 1
        counts["bound used"] += 0 <= evaluated_at == J[lay.J_DYN_T]  # not evaluated again
        if got:
            J[lay.J_LAST_CK] = t  # the checkpoint it calls for
    assert counts["due"] > 200 and counts["not due"] > 5_000, counts
    if shape <= 1.0:
        assert counts["bound used"] > 5_000, counts
    else:
        assert counts["bound used"] == 0, counts


# ------------------------------------------------------------------------------ the factor screens in looks
@pytest.mark.parametrize("m", [7, 10])  # the repair study's factors, the dynamic study's
def test_factor_screen_elimination_keeps_the_best_factor_at_its_stated_rate(m):
    """The studies' looks (4, 12, 20 of 20 replications) at screen_alpha = 0.05 on the least favourable case for
    the best factor: every factor has its mean (ties), correlated replications (common random numbers), other
    spreads. Over 3,000 screens factor 0 is eliminated in at most 5% (+ 4.5 binomial sd): 4.4% at m = 7, 4.1% at
    m = 10; without the Bonferroni factor over the screen's m - 1 other factors, 19% and 26% (measured)."""
    from spare_mc.analyses.engine import eliminate, screen_looks

    rng = np.random.default_rng(m)
    looks, alpha, trials = screen_looks(20), 0.05, 3000
    assert looks == (4, 12, 20)
    lost = 0
    for _ in range(trials):
        shared = rng.standard_normal((1, 20))
        x = 2.0 + 0.05 * (0.6 * shared + 0.8 * rng.standard_normal((m, 20))) * rng.uniform(0.5, 2.0, (m, 1))
        alive = np.ones(m, dtype=bool)
        for n in looks[:-1]:
            alive = eliminate(x[:, :n], np.ones(m, bool), alive, alpha / (len(looks) - 1), m)
        lost += not alive[0]
    assert lost <= alpha * trials + 4.5 * math.sqrt(alpha * (1 - alpha) * trials), lost / trials


def test_best_in_group_never_picks_an_eliminated_or_capped_factor():
    from spare_mc.analyses.engine import best_in_group

    x = np.array([[1.0] * 4 + [np.nan] * 4, [2.0] * 8, [1.5] * 8, [1.2] * 8])
    g = {"x": {"ttt_over_t0": x}, "alive": np.array([False, True, True, True]),
         "done": np.array([True, True, True, False])}
    assert best_in_group(g) == 2  # 0 eliminated, 3 capped: the least mean of the others
    assert best_in_group({**g, "done": np.zeros(4, bool)}) == 3  # every factor capped: the least mean that stayed


def test_factor_screens_in_looks_choose_from_the_full_screens_replications(tmp_path):
    """screen_reps = 8 (looks 4, 6, 8): the factors that stay run exactly the full screen's replications, the
    others stop early; with the same chosen factors the confirmation, and so every row, is the full screen's."""
    from spare_mc.sweep.storage import open_dataset

    kw = {**TINY, "factors": (0.25, 0.5, 1.0, 2.0, 4.0), "screen_reps": 8, "confirm_reps": 4, "rng": 2}
    full = dynamic_study((24,), out_dir=str(tmp_path / "full"), screen_alpha=0, **kw)
    looked = dynamic_study((24,), out_dir=str(tmp_path / "looks"), **kw)
    sc = looked.settings["screen"]
    assert full.settings["screen"]["looks"] == [8] and sc["looks"] == [4, 6, 8]
    assert sc["points_to_the_end"] < sc["points"] == 3 * 2 * 3 * 5 and sc["replications"] < 8 * sc["points"]
    for s in ("ckpt", "rep", "spare"):
        a = open_dataset(tmp_path / "full" / f"dynamic-screen-{s}-N24.nc")
        for look, (lo, hi) in ((2, (4, 6)), (3, (6, 8))):
            c = open_dataset(tmp_path / "looks" / f"dynamic-screen-{s}-N24-look{look}.nc")
            for key in c["variant"].values:
                v, r, k, f = key.split("|")
                want = a["ttt_over_t0"].sel(variant=v, r=int(r[2:]), shape=float(k.split("=")[1]),
                                            ckpt_period_factor=float(f.split("=")[1]), rep=slice(lo, hi - 1)).values
                np.testing.assert_array_equal(c["ttt_over_t0"].sel(variant=key).values, want)
    assert looked.rows == full.rows
