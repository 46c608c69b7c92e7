"""Regression tests of issue 36, items 4, 5, 7 and 8: a traceback on an extreme but valid target row, a rejected
calibration shown as a fit, the classical optimum at periods the timeline cannot run, and the wording of the
studies' errors. Each test failed on the commit before the fix; all of them run in well under a second each (the
checks are called directly, or the CLI in-process where the check comes before any work).
"""

import json
import math
import re
import warnings

import numpy as np
import pytest

import spare_mc as sm
from spare_mc.analyses import calibrate as cal
from spare_mc.cli import main
from spare_mc.stats import estimate_mean


# ------------------------------------------------------------------------ 4. extreme target rows: no overflow
def _result(ttt, avail, r=3, near=(3,)):
    """One strategy's confirmation result as :func:`spare_mc.analyses.calibrate._evaluate` returns it."""
    return {"r": r, "near_r": list(near), "ttt": estimate_mean(np.asarray(ttt, float), "ttt_over_t0",
                                                                support="nonnegative"),
            "availability": estimate_mean(np.asarray(avail, float), "availability", support="unit")}


@pytest.mark.parametrize("row", [
    {"r": 3, "ttt_over_t0": 4.2, "availability": 1e-200},  # the row: (0.9 / 1e-200)^2 overflowed
    {"r": 3, "ttt_over_t0": 4.2, "availability": 1.0},
    {"r": 3, "ttt_over_t0": 1.7e308, "availability": 0.5},  # the largest finite TTT/T0
    {"r": 3, "ttt_over_t0": 1.0, "availability": 5e-324},  # the smallest positive float
])
def test_4_judge_an_extreme_but_valid_target_row(row):
    checked = cal.load_target({"rows": [{"n_groups": 8, "rep": row, "spare": row}]})["rows"][0]["rep"]
    res = _result([4.1, 4.3, 4.2, 4.25], [0.9, 0.92, 0.91, 0.9])
    for tol_ttt, tol_a in ((0.05, 0.02), (0.0, 0.0)):  # the tolerances' own extreme: zero
        reasons, errors = cal._judge(res, checked, tol_ttt, tol_a, 0.05 / 12)
        assert len(errors) == 2
        assert errors[0] == pytest.approx(math.log(res["ttt"].mean / row["ttt_over_t0"]))
        a = res["availability"].mean
        rel = (a - row["availability"]) / row["availability"]
        assert errors[1] == rel  # the relative error itself (inf only beyond the float range)
        d = cal._rms(errors + errors)  # the distance of a combination: RMS over both strategies
        if math.isfinite(rel):
            assert math.isfinite(d)
            assert d == pytest.approx(math.sqrt((errors[0] ** 2 + rel ** 2) / 2) if abs(rel) < 1e150
                                      else abs(rel) / math.sqrt(2), rel=1e-12)
        if row["availability"] < 1e-3:
            assert any(x.startswith("availability") for x in reasons)


def test_4_an_alpha_whose_quantile_is_infinite_still_judges_a_zero_spread_result():
    res = _result([9.0, 9.0, 9.0], [0.5, 0.5, 0.5])  # se = 0 on both numbers
    row = {"r": 3, "ttt_over_t0": 4.0, "availability": 0.99}
    # alpha_each underflowing to 0: quantile inf; inf x 0 was nan and a comparison with nan never rejected
    reasons, _ = cal._judge(res, row, 0.05, 0.02, 0.0)
    assert len(reasons) == 2


def test_4_sibling_sensitivity_needed_reps_with_a_tiny_target():
    from spare_mc.analyses.sensitivity import Variant, _needed_reps

    rng = np.random.default_rng(3)
    x = {s: {"baseline@24": 3 + rng.random(8), "v@24": 3.5 + rng.random(8)} for s in ("rep", "spare")}
    v = [Variant("v", "option", "save_s", 1.0, {"save_s": 1.0})]
    need = _needed_reps(x, v, (24,), 1e-300, 8)  # OverflowError: float infinity to integer, before
    assert isinstance(need, int) and need > 10 ** 300
    assert _needed_reps(x, v, (24,), 1e-3, 8) == math.ceil(1.1 * 8 * (_needed_hw(x) / 1e-3) ** 2)


def _needed_hw(x):
    from scipy import stats

    from spare_mc.analyses.sensitivity import paired_delta_reduction
    d = paired_delta_reduction(x["spare"]["baseline@24"], x["rep"]["baseline@24"], x["spare"]["v@24"],
                               x["rep"]["v@24"])
    return float(stats.t.ppf(0.975, 7) * d.se)


# ------------------------------------------------------------------------ 5. a rejected calibration is labelled
def _calibration(rejected: bool) -> cal.CalibrationResult:
    """A calibration result built directly (no run): one combination, rejected or not."""
    row = {"rep": {"r": 3, "ttt_over_t0": 4.3, "availability": 0.8}, "spare": {"r": 8, "ttt_over_t0": 2.5,
                                                                                  "availability": 0.94}}
    combo = {"name": "layout=sidon", "labels": {"layout": "sidon"}, "overrides": {"layout": "sidon"},
             "rows": {"600": {**row, "reduction": 0.41}}, "distance": 0.4,
             "rejected": ["N=600 spare TTT/T0 3.100 vs 2.49"] if rejected else []}
    target = {"name": "t", "source": "", "setting": {}, "rows": [{"n_groups": 600, **row}]}
    settings = {"base": {}, "fitted_fields": {"layout=sidon": {"layout": "sidon"}}}
    return cal.CalibrationResult(target, (600,), [combo], [] if rejected else [combo], combo, [], {}, settings)


def test_5_a_rejected_calibration_is_labelled_in_every_output(tmp_path, capsys):
    res = _calibration(rejected=True)
    assert res.to_dict()["accepted"] is False
    assert "REJECTED" in res.table()
    path = tmp_path / "p.json"
    cal.write_preset(res, path, name="p")
    d = json.loads(path.read_text())
    assert d["accepted"] is False and d["rejected"]
    assert d["description"].startswith("REJECTED")
    with pytest.warns(UserWarning, match="REJECTED fit"):  # the library warns (Python API)
        p = cal.load_preset(path)
    assert p["accepted"] is False
    # reproduce --table main --preset FILE: the text labels it (it said only "(FITTED)"), the JSON too
    run = ["reproduce", "--table", "main", "--preset", str(path), "--n-values", "8", "--reps", "2",
           "--confirm-reps", "2", "--n-steps", "50"]
    capsys.readouterr()
    with pytest.warns(UserWarning, match="REJECTED fit"):
        assert main(run) == 0
    out = capsys.readouterr().out
    assert "preset p (FITTED, REJECTED): layout=sidon" in out and "is a REJECTED fit" in out
    with pytest.warns(UserWarning, match="REJECTED fit"):
        assert main([*run, "--json"]) == 0
    pre = json.loads(capsys.readouterr().out)["settings"]["preset"]
    assert pre["accepted"] is False and pre["rejected"] == d["rejected"]


def test_5_an_accepted_calibration_is_not_labelled_rejected(tmp_path):
    res = _calibration(rejected=False)
    assert res.to_dict()["accepted"] is True and "REJECTED" not in res.table()
    path = tmp_path / "p.json"
    cal.write_preset(res, path, name="p")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning
        p = cal.load_preset(path)
    assert p["accepted"] is True and json.loads(path.read_text())["description"].startswith("FITTED")
    assert cal.load_preset("paper-n600")["accepted"] is True  # the shipped preset (no `accepted` key) loads as is


def test_5_a_preset_contradicting_itself_is_refused(tmp_path):
    res = _calibration(rejected=True)
    path = tmp_path / "p.json"
    cal.write_preset(res, path, name="p")
    d = json.loads(path.read_text())
    d["accepted"] = True
    path.write_text(json.dumps(d))
    with pytest.raises(sm.UsageValueError, match="`accepted` must be"):
        cal.load_preset(path)


# ------------------------------------------------------------- 7. the classical optimum at runnable periods
def _brute_force(cfg):
    """The least exact expected time over every runnable period ``k T_comp``, k = 1 .. n_steps."""
    import dataclasses

    from spare_mc.ttt.theory import classical_expected_ttt_s
    vals = [classical_expected_ttt_s(dataclasses.replace(cfg, ckpt_period_s=k * cfg.compute_s))
            for k in range(1, cfg.n_steps + 1)]
    k = int(np.argmin(vals)) + 1
    return k, vals[k - 1]


@pytest.mark.parametrize("kw", [
    dict(n_steps=600, compute_s=60.0, save_s=300.0, restart_s=3600.0, mtbf_s=3600.0),  # the README's example
    # the shorter last segment makes the value non-unimodal in k: walking from the continuous optimum stopped at 17
    dict(n_steps=99, compute_s=1.0, save_s=8.06402841789456, restart_s=62.3020600473339, mtbf_s=32.95109706224164,
         max_wall_factor=1e9),
])
def test_7_best_runnable_period_is_the_brute_force_minimum(kw):
    from spare_mc.ttt.theory import best_runnable_period, classical_config

    cfg = classical_config(**kw)
    k, value, exhaustive = best_runnable_period(cfg)
    assert exhaustive and (k, value) == _brute_force(cfg)
    assert cfg.ckpt_period == k * cfg.compute_s  # the period the command runs when none is given


def test_7_the_optimum_block_labels_continuous_and_runnable_values():
    from spare_mc.theory.closed_forms import ckpt_period_daly, daly_expected_wall_time
    from spare_mc.ttt.report import classical_check
    from spare_mc.ttt.theory import classical_config

    kw = dict(n_steps=600, compute_s=60.0, save_s=300.0, restart_s=3600.0, mtbf_s=3600.0)
    opt = classical_check(20, seed=1, ckpt_period_s=1800.0, **kw).to_dict()["optimum"]
    k, value = _brute_force(classical_config(**kw))
    assert opt["best_runnable_period"]["interval_s"] == k * 60.0 == 1200.0
    assert opt["best_runnable_period"]["exact_ttt_s"] == value == pytest.approx(151_747.7, abs=0.05)
    daly = opt["daly_higher_order"]
    assert daly["interval_s"] == ckpt_period_daly(300.0, 3600.0)
    assert daly["segment_s"] == 1320.0  # ceil(1276.5 / 60) = 22 steps: what the simulation runs
    assert daly["exact_ttt_s"] == daly_expected_wall_time(36_000.0, 1320.0, 300.0, 3600.0, 3600.0)
    assert daly["exact_ttt_s"] == pytest.approx(152_126.8, abs=0.05)
    assert daly["continuous_ttt_s"] == pytest.approx(152_198.5, abs=0.05)
    cont = opt["continuous_optimum"]
    assert cont["continuous_ttt_s"] < opt["best_runnable_period"]["exact_ttt_s"] <= cont["exact_ttt_s"]


# ---------------------------------------------------------------------------------------------- 8. wording
_ROW = {"rep": {"r": 3, "ttt_over_t0": 4.27, "availability": 0.8}, "spare": {"r": 8, "ttt_over_t0": 2.49,
                                                                              "availability": 0.94}}


def _err(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_8a_file_errors_name_the_files_keys_not_flags(tmp_path, capsys):
    target = tmp_path / "t.json"
    target.write_text(json.dumps({"setting": {"mtbf_s": -1}, "rows": [{"n_groups": 600, **_ROW}]}))
    err = _err(capsys, ["calibrate", "--target", str(target), "--out-dir", str(tmp_path / "c")])
    assert "`mtbf_s` must be > 0" in err and "--mtbf-s" not in err and "the target table's `setting`" in err
    preset = tmp_path / "p.json"
    preset.write_text(json.dumps({"name": "p", "overrides": {"mtbf_s": -1}}))
    err = _err(capsys, ["reproduce", "--table", "main", "--preset", str(preset)])
    assert "`mtbf_s` must be > 0" in err and "--mtbf-s" not in err and "`overrides`" in err
    log = tmp_path / "l.csv"
    log.write_text("# duration_s: 10\ntime_s,level,unit\n20,gpu,0\n")
    err = _err(capsys, ["log", "check", str(log), "--n-gpus", "8", "--n-groups", "8"])
    assert "metadata `duration_s`" in err and "--duration-s" not in err
    log.write_text("# duration_s: abc\ntime_s,level,unit\n20,gpu,0\n")
    err = _err(capsys, ["log", "check", str(log), "--n-gpus", "8", "--n-groups", "8"])
    assert "metadata `duration_s` must be a number" in err
    log.write_text("time_s,level,unit\n20,gpu,0\n")  # the flag itself is still named as the flag
    err = _err(capsys, ["log", "check", str(log), "--n-gpus", "8", "--n-groups", "8", "--duration-s", "5"])
    assert "`--duration-s`" in err


def test_8b_a_clash_with_the_tables_setting_is_not_said_in_api_terms(tmp_path, capsys):
    target = tmp_path / "t.json"
    target.write_text(json.dumps({"setting": {"layout": "sidon"}, "rows": [{"n_groups": 600, **_ROW}]}))
    err = _err(capsys, ["calibrate", "--target", str(target), "--out-dir", str(tmp_path / "c")])
    assert "the target table's `setting` fixes ['layout']" in err and "--options" in err
    assert "`base`" not in err and "space[" not in err


def test_8c_max_confirm_reps_names_pilot_reps(capsys):
    err = _err(capsys, ["sensitivity", "--max-confirm-reps", "1"])
    assert "`--max-confirm-reps` must be >= `--pilot-reps` (40" in err


def test_8d_a_truncated_dataset_is_called_unreadable(tmp_path):
    from spare_mc.sweep import SweepSpec, run_sweep

    small = ('[sweep]\nname = "h"\nquantity = "wipeout"\nreps = 20\nblock = 10\nseed = 7\n\n'
             '[grid]\nn_groups = [40]\nr = [2, 3]\n')
    spec = SweepSpec.from_toml(small)
    out = tmp_path / "h.nc"
    run_sweep(spec, str(out), workers=0, progress=False)
    out.write_bytes(out.read_bytes()[:3000])  # truncated
    other = SweepSpec.from_toml(small.replace("seed = 7", "seed = 8"))
    with pytest.raises(sm.UsageValueError, match=r"h\.nc already exists and is unreadable as a dataset \(.*truncated"):
        run_sweep(other, str(out), workers=0, progress=False)


def test_8e_an_impossible_n_names_its_row():
    with pytest.raises(sm.UsageValueError, match=r"^rows\[1\]\.n_groups: `n_groups` must be <="):
        cal.load_target({"rows": [{"n_groups": 600, **_ROW}, {"n_groups": 10 ** 9, **_ROW}]})


def test_8f_calibrate_says_its_expected_time_first(tmp_path, capsys, monkeypatch):
    import spare_mc.cli.studies as studies

    def stop(*a, **kw):  # the estimate is said before the calibration starts: stop there
        raise KeyboardInterrupt
    monkeypatch.setattr(studies, "calibrate", stop)
    rc = main(["calibrate", "--target", "paper", "--options", "patch_cost", "--schedule", "100000:200000",
               "--predict-n", "", "--out-dir", str(tmp_path / "c"), "--workers", "0"])
    assert rc == 130
    err = capsys.readouterr().err
    m = re.search(r"spare-mc calibrate: ([\d,]+) jobs at most; expected time at most about ([\d.]+) min", err)
    assert m and int(m[1].replace(",", "")) > 10 ** 7 and float(m[2]) > 60
    est = cal.estimate_cost("paper", space={"patch_cost": cal.SEARCH_SPACE["patch_cost"]}, predict_n=(),
                            schedule=((2, 3),), workers=0)
    from spare_mc.analyses.engine import R_RANGES
    from spare_mc.ttt.optimize import PERIOD_FACTORS, admissible_r
    members = {"rep": 1, "spare": 3}  # patch_cost acts on SPARe only
    assert est["jobs"] == sum(members[s] * (2 * len(PERIOD_FACTORS) * len(admissible_r(s, 600, R_RANGES[s], {})[0])
                                            + 3) for s in members)


def test_8g_the_studies_are_spare_mc_attributes():
    from spare_mc.analyses.calibrate import calibrate
    from spare_mc.analyses.dynamic import dynamic_study
    from spare_mc.analyses.repair import repair_study
    from spare_mc.analyses.reproduce import reproduce
    from spare_mc.analyses.sensitivity import sensitivity
    assert (sm.sensitivity, sm.calibrate, sm.dynamic_study, sm.repair_study, sm.reproduce) == (
        sensitivity, calibrate, dynamic_study, repair_study, reproduce)
    assert {"sensitivity", "calibrate", "dynamic_study", "repair_study", "reproduce"} <= set(sm.__all__)
    assert set(sm.__all__) <= set(dir(sm))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from spare_mc.sensitivity import Variant  # the 0.2 path still reads the module
    assert Variant is not None and sm.sensitivity is sensitivity  # and does not rebind sm.sensitivity


def test_8a_sibling_main_table_toml_keys_are_named_as_the_files(tmp_path, capsys):
    (tmp_path / "main_table.toml").write_text("[main_table]\nreps = -1\n")
    err = _err(capsys, ["reproduce", "--table", "main", "--studies", str(tmp_path)])
    assert "main_table.toml: [main_table] `reps` must be an integer >= 2, got -1" in err and "--reps" not in err


def test_8_sibling_a_schedule_round_is_named_by_the_flag(capsys):
    """`calibrate --schedule 2:2` said "`schedule[0] confirm_reps` must be >= 3": the library's name for the
    command line's flag (found by the QA pass of issue 36)."""
    assert main(["calibrate", "--target", "paper", "--schedule", "3:6,2:2"]) == 2
    err = capsys.readouterr().err
    assert "`--schedule` round 2: the confirmation replications must be an integer >= 3, got 2" in err
