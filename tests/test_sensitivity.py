"""The paired sensitivity study: its statistics, its common random numbers, its selection and its interfaces."""

import json
import math

import numpy as np
import pytest

import spare_mc as sm
from spare_mc.analyses.sensitivity import Variant, default_variants, holm, paired_delta_reduction, sensitivity
from spare_mc.cli import main
from spare_mc.ttt.optimize import optimize_strategy
from spare_mc.ttt.config import TimelineConfig
from spare_mc.ttt.run import simulate_ttt

BASE = {"n_steps": 150}
RR = {"rep": (2, 3), "spare": (2, 4)}
PF = (0.71, 1.41)


# ------------------------------------------------------------------------------------------- statistics
def test_holm_by_hand():
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(holm([0.5, 0.9]), [1.0, 1.0])
    assert holm([]).size == 0


def test_paired_delta_is_the_difference_of_ratios_and_zero_for_the_baseline():
    rng = np.random.default_rng(1)
    s_b, r_b = 2 + rng.random(30), 3 + rng.random(30)
    d0 = paired_delta_reduction(s_b, r_b, s_b, r_b)
    assert d0.mean == 0 and d0.se == 0 and d0.ci == (0.0, 0.0)
    s_v, r_v = s_b * 1.1, r_b * 0.9 + rng.random(30) * 0.1
    d = paired_delta_reduction(s_b, r_b, s_v, r_v)
    expected = 100 * ((1 - s_v.mean() / r_v.mean()) - (1 - s_b.mean() / r_b.mean()))
    assert d.mean == pytest.approx(expected, rel=1e-12) and d.n == 30
    # the delta-method variance by finite differences of the function of the four means
    x = np.vstack([s_b, r_b, s_v, r_v])
    m = x.mean(axis=1)
    f = lambda mm: 100 * (mm[0] / mm[1] - mm[2] / mm[3])  # noqa: E731
    g = np.array([(f(m + h) - f(m - h)) / 2e-7 for h in np.eye(4) * 1e-7])
    assert d.se == pytest.approx(math.sqrt(g @ np.cov(x) @ g / 30), rel=1e-5)


def test_paired_delta_interval_covers_at_its_level():
    """Coverage of the paired interval on correlated lognormal data with a known true change (4,000 studies of
    60 replications: 95% +- 4.5 binomial sd)."""
    rng = np.random.default_rng(7)
    n, studies = 60, 4000
    z = rng.standard_normal((studies, 4, n))
    mix = np.array([[1, 0, 0, 0], [0.3, 1, 0, 0], [0.8, 0.2, 0.6, 0], [0.2, 0.8, 0.1, 0.5]])
    x = np.exp(0.25 * np.einsum("ij,sjn->sin", mix, z)) * np.array([2.0, 3.0, 2.2, 2.9])[None, :, None]
    mu = np.exp(0.25 ** 2 * (mix ** 2).sum(axis=1) / 2) * np.array([2.0, 3.0, 2.2, 2.9])
    true = 100 * (mu[0] / mu[1] - mu[2] / mu[3])
    hits = 0
    for s in range(studies):
        lo, hi = paired_delta_reduction(*x[s]).ci
        hits += lo <= true <= hi
    sd = math.sqrt(0.95 * 0.05 * studies)
    assert abs(hits - 0.95 * studies) < 4.5 * sd, hits / studies


def test_paired_delta_bad_input():
    with pytest.raises(sm.UsageValueError, match="paired vectors"):
        paired_delta_reduction([1, 2], [1, 2], [1], [1])
    with pytest.raises(sm.UsageValueError, match="positive"):
        paired_delta_reduction([1, 2], [0, 0], [1, 2], [1, 2])


# ------------------------------------------------------------------------------------------- the study
@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("sens")
    variants = [Variant("sidon", "option", "layout", "sidon", {"layout": "sidon"}),
                Variant("same_at_ref", "option", "restart_growth", "linear",
                        {"restart_growth": "linear", "restart_ref_groups": 24}),
                Variant("stay_dead", "option", "restart_failures", "stay_dead", {"restart_failures": "stay_dead"}),
                Variant("redo", "option", "rep_masked_cost", "redo_step", {"rep_masked_cost": "redo_step"})]
    res = sensitivity((24, 30), variants=variants, reps=3, pilot_reps=6, target_pp=2.0, max_confirm_reps=30,
                      rng=5, base=BASE, r_ranges=RR, period_factors=PF, out_dir=out, workers=0)
    return res, out


def test_baseline_screen_is_the_optimisers_grid_on_the_same_traces(small):
    """The screen's baseline points are the main table's optimiser runs (same seeds): common random numbers."""
    res, out = small
    from spare_mc.sweep.storage import open_dataset

    for s in ("rep", "spare"):
        ds = open_dataset(out / f"sensitivity-screen-{s}-N24.nc")
        opt = optimize_strategy(s, 24, reps=3, confirm_reps=6, rng=5, r_range=RR[s], period_factors=PF, base=BASE)
        for row in opt.grid:
            got = ds["ttt_over_t0"].sel(variant="baseline", r=row["r"],
                                        ckpt_period_factor=row["ckpt_period_factor"]).values.mean()
            assert got == pytest.approx(row["ttt_over_t0"], rel=1e-12)
        assert res.baseline[24].__getattribute__(s).r == opt.best_r


def test_confirmation_runs_are_direct_runs_of_the_selected_point(small):
    res, _ = small
    n_conf = res.settings["confirm_reps"]
    assert n_conf > 6  # the extension stage ran: pilot (6) and extension joined in replication order
    for name in ("baseline", "stay_dead"):
        row = res.row(name, 30)
        for s in ("rep", "spare"):
            p = getattr(row, s)
            over = {"baseline": {}, "stay_dead": {"restart_failures": "stay_dead"}}[name]
            cfg = TimelineConfig(s, 30, r=p.r, ckpt_period_factor=p.ckpt_period_factor, **BASE, **over)
            direct = simulate_ttt(cfg, n_conf, rng=5, first_rep=3)
            np.testing.assert_array_equal(p.values, direct.values("ttt_over_t0"))
            assert p.ckpt_period_s == pytest.approx(cfg.ckpt_period)


def test_a_variant_of_the_other_strategy_reuses_the_baseline_exactly(small):
    res, _ = small
    for n in (24, 30):
        b = res.baseline[n]
        sidon, redo = res.row("sidon", n), res.row("redo", n)
        np.testing.assert_array_equal(sidon.rep.values, b.rep.values)  # layout is SPARe's option
        np.testing.assert_array_equal(redo.spare.values, b.spare.values)  # rep_masked_cost is Rep's
    same = res.row("same_at_ref", 24)  # linear growth with its reference at N: the baseline for both
    assert same.delta.mean == 0 and same.delta.se == 0 and same.p_value == 1 and same.p_holm == 1
    assert res.row("same_at_ref", 30).delta.se > 0  # at N = 30 the restart is longer: a real change
    # a setting with no effect is said to be one, in the table and the JSON, not shown as a measured zero
    assert same.identical and not res.row("same_at_ref", 30).identical and same.to_dict()["identical"] is True
    lines = [line for line in res.table().splitlines() if "same_at_ref" in line]
    assert lines[0].endswith("identical runs") and not lines[1].endswith("identical runs")


def test_rows_deltas_holm_and_json(small):
    res, _ = small
    ps = []
    for var, rows in res.variants:
        for n, row in rows.items():
            b = res.baseline[n]
            d = paired_delta_reduction(b.spare.values, b.rep.values, row.spare.values, row.rep.values)
            assert row.delta.mean == d.mean and row.delta.ci == d.ci
            assert 100 * (row.reduction.mean - b.reduction.mean) == pytest.approx(d.mean, abs=1e-9)
            ps.append(row.p_value)
    np.testing.assert_allclose([row.p_holm for _, rows in res.variants for row in rows.values()], holm(ps))
    d = json.loads(json.dumps(res.to_dict(), default=str))
    assert d["n_groups"] == [24, 30] and set(d["baseline"]) == {"24", "30"}
    row = d["variants"][0]["rows"]["24"]
    assert {"name", "option", "value", "rows"} <= set(d["variants"][0])
    for key in ("rep", "spare", "reduction", "reduction_ci95", "delta_reduction_pp", "delta_reduction_pp_ci95"):
        assert key in row
    for key in ("r", "ttt_over_t0", "ttt_over_t0_ci95", "availability"):
        assert key in row["rep"] and key in row["spare"]
    assert res.settings["target_met"] == (res.settings["max_half_width_pp"] <= 2.0)


def test_needed_reps_by_hand():
    from scipy import stats

    from spare_mc.analyses.sensitivity import _needed_reps

    rng = np.random.default_rng(3)
    x = {s: {"baseline@24": 3 + rng.random(8), "v@24": 3.5 + rng.random(8)} for s in ("rep", "spare")}
    v = [Variant("v", "option", "save_s", 1.0, {"save_s": 1.0})]
    d = paired_delta_reduction(x["spare"]["baseline@24"], x["rep"]["baseline@24"], x["spare"]["v@24"],
                               x["rep"]["v@24"])
    hw = stats.t.ppf(0.975, 7) * d.se
    target = hw / 2
    assert _needed_reps(x, v, (24,), target, 8) == math.ceil(1.1 * 8 * 4)
    assert _needed_reps(x, v, (24,), 2 * hw, 8) == 8


def test_rerun_reuses_every_dataset(small, tmp_path):
    res, out = small
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.nc")}
    variants = [v for v, _ in res.variants]
    again = sensitivity((24, 30), variants=variants, reps=3, pilot_reps=6, target_pp=2.0, max_confirm_reps=30,
                        rng=5, base=BASE, r_ranges=RR, period_factors=PF, out_dir=out, workers=0)
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.nc")} == before  # nothing recomputed or rewritten
    for (v, rows), (_, rows2) in zip(res.variants, again.variants):
        for n in rows:
            assert rows[n].delta.mean == rows2[n].delta.mean


def test_baseline_flags_that_a_variant_also_sets(tmp_path, capsys):
    """A baseline of ``save_s = 30`` with the save-time variants (which set ``save_s`` too): the variant wins."""
    base = {**BASE, "save_s": 30.0}
    vs = [v for v in default_variants(base) if v.name in ("save_s_x2", "layout_sidon")]
    assert vs[1].name == "save_s_x2" and vs[1].overrides == {"save_s": 60.0}
    res = sensitivity((24,), variants=vs, reps=2, pilot_reps=4, max_confirm_reps=4, base=base, r_ranges=RR,
                      period_factors=PF, out_dir=tmp_path / "b", workers=0)
    assert res.row("save_s_x2", 24).delta.se > 0
    argv = ["sensitivity", "--n-groups", "24", "--variants", "save_s_x0.5", "--save-s", "30", "--n-steps", "120",
            "--rep-r", "2-3", "--spare-r", "2-3", "--reps", "2", "--pilot-reps", "4", "--max-confirm-reps", "4",
            "--workers", "0", "--out-dir", str(tmp_path / "c"), "--json"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["variants"][0]["overrides"] == {"save_s": 15.0} and d["settings"]["base"]["save_s"] == 30.0
    (tmp_path / "c" / "sensitivity.json").write_text("mine")
    assert main(argv) == 2
    assert "is not a sensitivity result written by spare-mc" in capsys.readouterr().err


def test_figure(small, tmp_path):
    from PIL import Image

    from spare_mc.plots import save_sensitivity_figure

    res, _ = small
    path = save_sensitivity_figure(res, tmp_path / "t.png")
    with Image.open(path) as im:
        assert str(im.info["Software"]).startswith("spare-mc")
    (tmp_path / "mine.png").write_text("not a figure")
    with pytest.raises(sm.UsageValueError, match="not a figure written by spare-mc"):
        save_sensitivity_figure(res, tmp_path / "mine.png")


def test_default_variants_are_valid_and_named_once():
    vs = default_variants()
    names = [v.name for v in vs]
    assert len(names) == len(set(names)) and len(vs) >= 20
    kinds = {v.kind for v in vs}
    assert kinds == {"option", "combination", "input"}
    for v in vs:
        for s in ("rep", "spare"):
            TimelineConfig(s, 600, r=3, **sm.ttt.config.applicable(v.overrides, s))


@pytest.mark.parametrize("kw, match", [
    ({"n_values": ()}, "at least one N"),
    ({"n_values": (24, 24)}, "`n_values` must be distinct, got 24 twice"),
    ({"reps": 1}, "`reps` must be >= 2"),
    ({"target_pp": 0}, "`target_pp` must be in"),
    ({"target_pp": "x"}, "`target_pp` must be a number"),
    ({"r_ranges": {"rep": (4, 2)}}, "lo <= hi"),
    ({"r_ranges": {"ckpt": (1, 2)}}, "maps 'rep'/'spare'"),
    ({"base": {"r": 3}}, "must not set 'r'"),
    ({"period_factors": (0,)}, "positive"),
    ({"variants": [Variant("x", "option", "save_s", -1, {"save_s": -1.0})]}, "variant 'x' at N=24"),
    ({"base": {"colour": 1}}, "not TimelineConfig fields"),
    ({"r_ranges": [1, 2]}, "must be a dict"),
    ({"n_values": "600"}, "sequence of group counts"),
    ({"screen_alpha": 1}, r"`screen_alpha` must be in \[0, 1\)"),
    ({"screen_alpha": float("nan")}, r"`screen_alpha` must be in \[0, 1\)"),
    ({"screen_alpha": "0.05"}, "`screen_alpha` must be a number"),
])
def test_bad_input_is_refused_before_any_work(kw, match, tmp_path):
    args = {"n_values": (24,), "out_dir": tmp_path / "o", "workers": 0, **kw}
    with pytest.raises((sm.UsageValueError, sm.UsageTypeError), match=match):
        sensitivity(**args)
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_variant_rules():
    with pytest.raises(sm.UsageValueError, match="other than 'baseline'"):
        Variant("baseline", "option", "x", 1, {"save_s": 1.0})
    with pytest.raises(sm.UsageValueError, match="must not set 'r'"):
        Variant("v", "option", "r", 1, {"r": 1})
    with pytest.raises(sm.UsageValueError, match="non-empty dict"):
        Variant("v", "option", "x", 1, {})
    with pytest.raises(sm.UsageValueError, match="not TimelineConfig fields"):
        Variant("v", "option", "x", 1, {"colour": 1})


# ------------------------------------------------------------------------------------------- the command
def test_cli_runs_writes_and_refuses(tmp_path, capsys):
    out = tmp_path / "cli"
    argv = ["sensitivity", "--n-groups", "24", "--variants", "stay_dead_x", "--out-dir", str(out)]
    assert main(argv) == 2
    assert "`--variants` must name variants" in capsys.readouterr().err
    assert main(["sensitivity", "--n-groups", "24,x"]) == 2
    assert main(["sensitivity", "--n-groups", "24", "--rep-r", "2to3"]) == 2
    assert main(["sensitivity", "--n-groups", "24", "--target-pp", "-1", "--out-dir", str(out)]) == 2
    capsys.readouterr()
    argv = ["sensitivity", "--n-groups", "24", "--variants", "restart_stay_dead,layout_sidon", "--rep-r", "2-3",
            "--spare-r", "2-3", "--reps", "2", "--pilot-reps", "4", "--max-confirm-reps", "8", "--target-pp", "5",
            "--n-steps", "120", "--workers", "0", "--out-dir", str(out), "--json"]
    assert main(argv) == 0
    cap = capsys.readouterr()
    d = json.loads(cap.out)
    assert "expected time about" in cap.err
    assert [v["name"] for v in d["variants"]] == ["restart_stay_dead", "layout_sidon"]
    assert (out / "sensitivity.png").exists() and json.loads((out / "sensitivity.json").read_text())["n_groups"] == [24]
    assert d["settings"]["base"] == {"n_steps": 120}


def test_cli_figure_and_out_dir_rules(tmp_path, capsys):
    base = ["sensitivity", "--n-groups", "24", "--variants", "no_jitter", "--rep-r", "2-3", "--spare-r", "2-3",
            "--reps", "2", "--pilot-reps", "4", "--max-confirm-reps", "4", "--n-steps", "100", "--workers", "0"]
    (tmp_path / "file").write_text("x")
    for extra, msg in ((["--figure", str(tmp_path / "f.pdf")], "must end in .png"),
                       (["--out-dir", str(tmp_path / "file")], "exists and is not a folder"),
                       (["--workers", "-1"], "must be >= 0"),
                       (["--max-wall-factor", "0.5"], "`--max-wall-factor` must be > 1")):
        assert main(base + ["--out-dir", str(tmp_path / "o")] + extra) == 2
        assert msg in capsys.readouterr().err


def test_a_resync_baseline_takes_every_default_variant():
    base = {"rep_masked_cost": "resync", "rep_resync_s": 30.0}
    vs = {v.name: v for v in default_variants(base)}
    assert vs["rep_redo_step"].overrides == {"rep_masked_cost": "redo_step", "rep_resync_s": 0.0}
    for v in vs.values():
        for s in ("rep", "spare"):
            TimelineConfig(s, 600, r=3, **{**sm.ttt.config.applicable(base, s), **sm.ttt.config.applicable(v.overrides,
                                                                                                         s)})


def test_capped_rows_are_marked(tmp_path):
    v = [Variant("short", "input", "mtbf_s", 0.5, {"mtbf_s": 0.5})]
    res = sensitivity((24,), variants=v, reps=2, pilot_reps=4, max_confirm_reps=4,
                      base={**BASE, "max_wall_factor": 2.0}, r_ranges=RR, period_factors=PF, out_dir=tmp_path,
                      workers=0)
    assert res.row("short", 24).rep.ttt.censored > 0
    assert "capped runs: restricted means" in res.table()


def test_default_variants_leave_out_those_that_are_the_baseline():
    """QA 2026-12-04: a baseline's own value as a variant (--jitter-sd 0 listed no_jitter) changes nothing; only
    the shape was left out. Now every such variant is, Rep's options included (their baseline is ``base``'s)."""
    names = {v.name for v in default_variants()}
    assert {"no_jitter", "layout_sidon", "rep_redo_step", "restart_linear", "shape_0.6"} <= names
    for over, gone in (({"jitter_sd": 0.0}, "no_jitter"), ({"layout": "sidon"}, "layout_sidon"),
                       ({"rep_masked_cost": "redo_step"}, "rep_redo_step"),
                       ({"restart_growth": "linear"}, "restart_linear"), ({"shape": 0.6}, "shape_0.6")):
        left = {v.name for v in default_variants(over)}
        assert left == names - {gone}


# ------------------------------------------------------------------------------------ the screen's elimination
def _looks_eliminate(x, looks, alpha, done=None):
    """The alive mask after the elimination looks of :func:`screen` on ``x`` (``points x reps``)."""
    from spare_mc.analyses.engine import eliminate

    alive = np.ones(x.shape[0], dtype=bool)
    done = np.ones(x.shape[0], dtype=bool) if done is None else done
    for n in looks[:-1]:
        alive = eliminate(x[:, :n], done, alive, alpha / (len(looks) - 1), x.shape[0])
    return alive


def test_screen_elimination_keeps_the_best_point_at_its_stated_rate():
    """The least favourable case for the best point: every point has its mean (ties), correlated replications
    (common random numbers). Over 4,000 screens of 30 points, looks 4, 7, 10 at alpha = 0.05, point 0 is
    eliminated in at most 5% of them (+ 4.5 binomial sd); without the Bonferroni factor it would be in most."""
    from spare_mc.analyses.engine import screen_looks

    rng = np.random.default_rng(11)
    looks, alpha, m, trials = screen_looks(10), 0.05, 30, 4000
    assert looks == (4, 7, 10)
    lost = 0
    for _ in range(trials):
        shared = rng.standard_normal((1, 10))
        x = 2.0 + 0.05 * (0.6 * shared + 0.8 * rng.standard_normal((m, 10))) * rng.uniform(0.5, 2.0, (m, 1))
        lost += not _looks_eliminate(x, looks, alpha)[0]
    assert lost <= alpha * trials + 4.5 * math.sqrt(alpha * (1 - alpha) * trials), lost / trials


def test_screen_elimination_drops_clearly_worse_points_and_capped_ones():
    from spare_mc.analyses.engine import eliminate

    rng = np.random.default_rng(3)
    x = np.array([2.0, 2.01, 2.6, 3.0])[:, None] + 0.03 * rng.standard_normal((4, 7))
    alive = _looks_eliminate(x, (4, 7, 10), 0.05)
    assert alive[0] and not alive[2] and not alive[3]  # 2.6 and 3.0 are 20+ sd worse
    done = np.array([False, True, True, True])  # point 0 had a capped run: it cannot be selected
    assert not eliminate(x[:, :4], done, np.ones(4, bool), 0.025, 4)[0]
    nothing = eliminate(x[:, :4], np.zeros(4, bool), np.ones(4, bool), 0.025, 4)
    assert nothing.all()  # every point capped: nothing leaves, the selection falls back on the restricted means
    assert eliminate(np.ones((3, 4)), np.ones(3, bool), np.ones(3, bool), 0.05, 3).all()  # exact ties stay


def test_screen_with_elimination_runs_the_same_replications(tmp_path):
    """The screen in looks (reps = 8: looks 4, 6, 8) gives every point that stays its 8 replications of a full
    screen, number for number, and every other point its first ones; the selection is the least mean among the
    points that stayed."""
    from spare_mc.analyses.engine import pick

    variants = [Variant("stay_dead", "option", "restart_failures", "stay_dead", {"restart_failures": "stay_dead"})]
    kw = {"variants": variants, "reps": 8, "pilot_reps": 6, "target_pp": 50.0, "max_confirm_reps": 6, "rng": 5,
          "base": BASE, "r_ranges": {"rep": (2, 4), "spare": (2, 8)}, "period_factors": PF, "workers": 0}
    full = sensitivity((30,), out_dir=tmp_path / "full", screen_alpha=0, **kw)
    looked = sensitivity((30,), out_dir=tmp_path / "looks", **kw)
    sc = looked.settings["screen"]
    assert full.settings["screen"]["looks"] == [8] and sc["looks"] == [4, 6, 8] and sc["alpha"] == 0.05
    assert sc["points_to_the_end"] < sc["points"] and sc["replications"] < 8 * sc["points"]
    from spare_mc.sweep.storage import open_dataset

    for s in ("rep", "spare"):
        a = open_dataset(tmp_path / "full" / f"sensitivity-screen-{s}-N30.nc")
        b = open_dataset(tmp_path / "looks" / f"sensitivity-screen-{s}-N30.nc")
        np.testing.assert_array_equal(a["ttt_over_t0"].isel(rep=slice(0, 4)).values, b["ttt_over_t0"].values)
        for look, (lo, hi) in ((2, (4, 6)), (3, (6, 8))):
            c = open_dataset(tmp_path / "looks" / f"sensitivity-screen-{s}-look{look}.nc")
            assert c.sizes["variant"] > 0
            for key in c["variant"].values:
                name, _, r, f = key.split("@")
                want = a["ttt_over_t0"].sel(variant=name, r=int(r), ckpt_period_factor=float(f),
                                            rep=slice(lo, hi - 1)).values
                np.testing.assert_array_equal(c["ttt_over_t0"].sel(variant=key).values, want)
    for name in ("baseline", "stay_dead"):  # the selected points survived every look, so their means are the full ones
        for s in ("rep", "spare"):
            p, q = getattr(full.row(name, 30), s), getattr(looked.row(name, 30), s)
            assert (p.r, p.ckpt_period_factor) == (q.r, q.ckpt_period_factor)
    # pick: the least mean among the points that stayed, never an eliminated one
    scr = {"r": np.array([2, 3]), "f": np.array([1.0, 2.0]), "mean": np.array([[1.0, 2.0], [3.0, 1.5]]),
           "se": np.full((2, 2), 0.1), "n": np.array([[4, 8], [8, 8]]), "done": np.ones((2, 2), bool),
           "alive": np.array([[False, True], [True, True]])}
    assert pick(scr)[:3] == (3, 2.0, 1.5)


def test_the_stages_of_a_study_share_one_local_cluster(tmp_path, monkeypatch):
    """Every sweep of a study runs on one local dask cluster (started once), with the numbers of workers=0."""
    import spare_mc.sweep.cluster as cl

    starts = []
    real = cl._local_cluster
    monkeypatch.setattr(cl, "_local_cluster", lambda *a: starts.append(a) or real(*a))
    kw = {"variants": [], "reps": 3, "pilot_reps": 4, "target_pp": 50.0, "max_confirm_reps": 4, "rng": 2, "base": BASE,
          "r_ranges": {"rep": (2, 3), "spare": (2, 3)}, "period_factors": PF}
    here = sensitivity((24,), out_dir=tmp_path / "here", workers=0, **kw)
    dask = sensitivity((24,), out_dir=tmp_path / "dask", workers=1, **kw)
    assert len(starts) == 1 and len(dask.datasets) == 4  # two screens, two confirmations
    for s in ("rep", "spare"):
        np.testing.assert_array_equal(getattr(here.baseline[24], s).values, getattr(dask.baseline[24], s).values)
    assert not cl._SHARED  # closed with the study


def test_parts_saved_on_threads_count_once_on_disk_and_a_failed_write_stops_the_sweep():
    """The dask path saves finished tasks on a few threads (:class:`spare_mc.sweep.cluster._Saver`): a task counts
    (``results``, the progress report) only once its part is written, and a failed write is raised in the
    collecting thread, with the earlier tasks kept."""
    import threading

    from spare_mc.sweep.cluster import _Saver
    from spare_mc.sweep.storage import SweepWriteError

    class Store:
        def __init__(self):
            self.saved, self.lock = [], threading.Lock()

        def save(self, key, rep_range, res, params):
            if key == "bad":
                raise SweepWriteError(28, "No space left on device", f"{key}.npz")
            with self.lock:
                self.saved.append(key)

    store, results, reports = Store(), {}, []
    with _Saver(store, results, lambda: reports.append(len(results))) as saver:
        for k in range(20):
            saver.save(f"t{k}", (0, 1), {"x": k}, {})
        saver.finish()
    assert sorted(results) == sorted(store.saved) == sorted(f"t{k}" for k in range(20)) and len(reports) == 20
    store, results = Store(), {}
    with pytest.raises(SweepWriteError, match="No space left"), _Saver(store, results, lambda: None) as saver:
        saver.save("t0", (0, 1), {}, {})
        saver.save("bad", (0, 1), {}, {})
        saver.finish()
    assert set(results) <= {"t0"} and "bad" not in results
