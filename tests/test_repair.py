"""The repair study: its table, the best-r changes, bad input, the command and the figure."""

import json

import numpy as np
import pytest

import spare_mc as sm
from spare_mc.analyses.repair import RepairResult, repair_study
from spare_mc.cli import main

TINY = dict(repair_times=(60.0, 1e6), r_values={"rep": (2, 3), "spare": (2, 3)}, reps=3,
            base={"n_steps": 200, "mtbf_s": 100.0}, workers=0)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return repair_study((24,), out_dir=str(tmp_path_factory.mktemp("rep")), **TINY)


def test_every_point_and_best(tiny):
    assert len(tiny.rows) == 2 * 3 * 2  # strategies x (none + 2 times) x r
    assert len(tiny.best) == 2 * 3 and len(tiny.reductions) == 3
    for b in tiny.best:
        lo, hi = b["ttt_ci95"]
        assert lo <= b["ttt_over_t0"] <= hi and b["r"] in b["near_optimal_r"]
        cell = [x for x in tiny.rows if (x["strategy"], x["repair_s"]) == (b["strategy"], b["repair_s"])]
        assert b["ttt_over_t0"] == min(x["ttt_over_t0"] for x in cell if x["capped"] == 0)
    # a repair that never ends (1e6 s is beyond these jobs) is the model without repair: same traces, same numbers
    for s in ("rep", "spare"):
        for r in (2, 3):
            none = [x for x in tiny.rows if (x["strategy"], x["r"], x["repair_s"]) == (s, r, None)][0]
            never = [x for x in tiny.rows if (x["strategy"], x["r"], x["repair_s"]) == (s, r, 1e6)][0]
            assert never["ttt_over_t0"] == none["ttt_over_t0"] and never["wipeouts"] == none["wipeouts"]
    assert "SPARe's reduction over Rep" in tiny.table()


def test_best_r_changes():
    best = ({"strategy": "rep", "n_groups": 10, "repair_s": 100.0, "r": 2, "near_optimal_r": [2]},
            {"strategy": "rep", "n_groups": 10, "repair_s": 1000.0, "r": 3, "near_optimal_r": [2, 3]},
            {"strategy": "rep", "n_groups": 10, "repair_s": None, "r": 3, "near_optimal_r": [3]})
    changes = RepairResult((), best, (), {}).best_r_changes()
    assert changes == [{"strategy": "rep", "n_groups": 10, "from_repair_s": 100.0, "to_repair_s": 1000.0,
                        "from_r": 2, "to_r": 3, "near_optimal_before": [2], "near_optimal_after": [2, 3]}]


@pytest.mark.parametrize("kw, match", [
    (dict(repair_times=(0.0,)), r"`repair_times` must be > 0, got repair_times=0.0"),
    (dict(repair_times=()), r"`repair_times` must hold at least one repair time"),
    (dict(repair_times=(60.0, 60.0)), r"`repair_times` must be distinct, got 60.0 twice in \[60.0, 60.0\]"),
    (dict(repair_times=(60.0, float("nan"))), r"`repair_times` must be finite"),
    (dict(base={"repair": "fixed"}), "`base` must not set 'repair'"),
    (dict(repair="weekly"), "`repair` must be 'fixed' or 'lognormal'"),
    (dict(reps=1), "`reps` must be >= 2"),
])
def test_bad_input(kw, match, tmp_path):
    with pytest.raises(sm.UsageValueError, match=match):
        repair_study((24,), out_dir=str(tmp_path), **{**TINY, **kw})


def test_command_and_figure(tmp_path, capsys):
    out = tmp_path / "rep"
    argv = ["repair", "--n-groups", "20", "--repair-times", "60,600", "--reps", "2", "--n-steps", "150",
            "--mtbf-s", "100", "--workers", "0", "--out-dir", str(out), "--law", "lognormal"]
    assert main(argv + ["--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["settings"]["repair"] == "lognormal" and "best_r_changes" in d
    assert d["settings"]["skipped_r_above_n"] == {"spare-N20": [24]}  # the default r range, at N = 20
    assert (out / "repair.png").stat().st_size > 10_000 and (out / "repair.json").exists()
    assert main(argv) == 0  # every dataset reused, its own result replaced
    assert "best r changes" in capsys.readouterr().out
    assert main(argv + ["--repair-s", "50"]) == 2
    assert "`--repair-s` must not be given: the study sets it" in capsys.readouterr().err


def test_options_of_a_repair_go_to_the_repair_variants(tmp_path):
    """`--repair-sd`, `--rejoin` and `--rejoin-s` (in the help, and docs/repair.md) were refused: they were set on
    the no-repair baseline too, where they have no effect. They now belong to the repair variants only: the
    baseline is the no-repair run, and the repaired runs differ with them."""
    from spare_mc.sweep.storage import open_dataset

    kw = {**TINY, "repair_times": (60.0,), "r_values": {"rep": (2,)}, "repair": "lognormal"}
    plain = repair_study((24,), out_dir=str(tmp_path / "a"), **kw)
    wide = repair_study((24,), out_dir=str(tmp_path / "b"), **{**kw, "base": {**TINY["base"], "repair_sd": 2.0,
                                                                            "rejoin": "checkpoint"}})
    assert wide.settings["base"] == {**TINY["base"], "repair_sd": 2.0, "rejoin": "checkpoint"}
    a, b = open_dataset(plain.settings["datasets"][0]), open_dataset(wide.settings["datasets"][0])
    assert a["ttt_over_t0"].sel(variant="none").equals(b["ttt_over_t0"].sel(variant="none"))
    assert not a["ttt_over_t0"].sel(variant="t60").equals(b["ttt_over_t0"].sel(variant="t60"))


def test_interval_clipped_at_zero(monkeypatch, tmp_path):
    """With a handful of wildly spread replications the t interval of TTT/T0 reaches below 0, a value no run can
    take: the table clips it at 0 (the upper end and the mean stay as computed)."""
    import numpy as np
    import xarray as xr

    import spare_mc.analyses.engine as engine
    from spare_mc.analyses.repair import _FACTORS

    def fake(spec, path, **kw):
        variants = list(spec.variants)
        shape = (len(variants), len(spec.grid["r"]), len(_FACTORS), 2)
        vals = np.broadcast_to(np.array([1.0, 30.0]), shape)  # mean 15.5, se 14.5, t(0.975, 1) = 12.7
        dims = ("variant", "r", "ckpt_period_factor", "rep")
        return xr.Dataset({"ttt_over_t0": (dims, vals), "finished": (dims, np.ones(shape, int)),
                           "availability": (dims, np.full(shape, 0.5)), "wipeouts": (dims, np.zeros(shape))},
                          coords={"variant": variants, "r": spec.grid["r"], "ckpt_period_factor": list(_FACTORS)})

    monkeypatch.setattr(engine, "run_study_sweep", fake)  # where the study's screen looks it up
    res = repair_study((24,), out_dir=str(tmp_path), **{**TINY, "reps": 2})
    hi = 15.5 + 12.706204736174696 * 14.5
    for row in res.rows:
        assert row["ttt_over_t0"] == 15.5
        assert row["ttt_ci95"][0] == 0.0 and row["ttt_ci95"][1] == pytest.approx(hi)


# ------------------------------------------------------------------------------ the factor screens in looks
def test_factor_screens_in_looks_give_the_rows_of_the_full_screen(tmp_path):
    """reps = 8 (looks 4, 6, 8): the factors that stay run exactly the replications of the full screen, the others
    stop early, and with the same chosen factors every row (TTT/T0, interval, availability, wipe-outs) is the full
    screen's number for number."""
    from spare_mc.sweep.storage import open_dataset

    kw = {**TINY, "reps": 8, "repair_times": (60.0,), "base": {"n_steps": 300, "mtbf_s": 60.0}, "rng": 4}
    full = repair_study((24,), out_dir=str(tmp_path / "full"), screen_alpha=0, **kw)
    looked = repair_study((24,), out_dir=str(tmp_path / "looks"), **kw)
    sc = looked.settings["screen"]
    assert full.settings["screen"]["looks"] == [8] and sc["looks"] == [4, 6, 8] and sc["alpha"] == 0.05
    assert sc["points"] == full.settings["screen"]["points"] == 2 * 2 * 2 * 7
    assert sc["points_to_the_end"] < sc["points"] and sc["replications"] < 8 * sc["points"]
    for s in ("rep", "spare"):
        a = open_dataset(tmp_path / "full" / f"repair-{s}-N24.nc")
        for look, (lo, hi) in ((2, (4, 6)), (3, (6, 8))):
            c = open_dataset(tmp_path / "looks" / f"repair-{s}-N24-look{look}.nc")
            for key in c["variant"].values:
                v, r, f = key.split("|")
                want = a["ttt_over_t0"].sel(variant=v, r=int(r[2:]), ckpt_period_factor=float(f.split("=")[1]),
                                            rep=slice(lo, hi - 1)).values
                np.testing.assert_array_equal(c["ttt_over_t0"].sel(variant=key).values, want)
    assert [(x["factor"], x["capped"]) for x in looked.rows] == [(x["factor"], x["capped"]) for x in full.rows]
    assert looked.rows == full.rows and looked.best == full.best
    dask = repair_study((24,), out_dir=str(tmp_path / "dask"), **{**kw, "workers": 1})  # the same on a dask worker
    assert dask.rows == looked.rows and dask.settings["screen"] == sc


def test_bad_screen_alpha(tmp_path):
    with pytest.raises(sm.UsageValueError, match=r"`screen_alpha` must be in \[0, 1\)"):
        repair_study((24,), out_dir=str(tmp_path), screen_alpha=1.0, **TINY)


def test_a_screen_in_looks_stopped_between_looks_resumes_to_the_same_result(tmp_path):
    """Each look is its own resumable sweep: with the last look's dataset gone (a run stopped before it was written),
    a rerun reuses the earlier looks' datasets as they are, runs the same points again (the eliminations depend only
    on the data) and gives the same rows."""
    import os

    kw = {**TINY, "reps": 8, "repair_times": (60.0,), "r_values": {"spare": (2, 3)},
          "base": {"n_steps": 300, "mtbf_s": 60.0}, "rng": 4}
    out = tmp_path / "rep"
    first = repair_study((24,), out_dir=str(out), **kw)
    last, kept = out / "repair-spare-N24-look3.nc", [out / "repair-spare-N24.nc", out / "repair-spare-N24-look2.nc"]
    stamps = [os.stat(p).st_mtime_ns for p in kept]
    os.remove(last)
    os.remove(out / "repair.json")
    again = repair_study((24,), out_dir=str(out), **kw)
    assert last.exists() and [os.stat(p).st_mtime_ns for p in kept] == stamps
    assert again.rows == first.rows and again.settings["screen"] == first.settings["screen"]
