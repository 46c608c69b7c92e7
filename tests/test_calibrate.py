"""The calibration search: target tables, separability, recovery of a known combination, presets."""

import json

import pytest

import spare_mc as sm
from spare_mc.analyses.calibrate import (SEARCH_SPACE, _subcombos, calibrate, load_preset, load_target, preset_names,
                                         write_preset)
from spare_mc.cli import main
from spare_mc.ttt.optimize import optimize_strategy

BASE = {"n_steps": 150}
RR = {"rep": (2, 3), "spare": (2, 4)}
PF = (0.71, 1.41)
SPACE = {"layout": SEARCH_SPACE["layout"][:2], "restart_failures": SEARCH_SPACE["restart_failures"],
         "rep_masked_cost": SEARCH_SPACE["rep_masked_cost"][:2]}
SCHEDULE = ((3, 6), (4, 8))


def _table_of(over, n=24):
    """The table the optimiser produces at N under ``over`` with the last round's replications."""
    row = {"n_groups": n}
    for s in ("rep", "spare"):
        opt = optimize_strategy(s, n, reps=4, confirm_reps=8, rng=3, r_range=RR[s], period_factors=PF,
                                base={**BASE, **over})
        e, a = opt.estimate("ttt_over_t0"), opt.estimate("availability")
        row[s] = {"r": opt.best_r, "ttt_over_t0": e.mean, "availability": a.mean}
    return {"name": "synthetic", "rows": [row]}


@pytest.fixture(scope="module")
def recovered(tmp_path_factory):
    over = {"layout": "sidon", "restart_failures": "stay_dead", "rep_masked_cost": "redo_step"}
    table = _table_of(over)
    res = calibrate(table, space=SPACE, base=BASE, schedule=SCHEDULE, rng=3, r_ranges=RR, period_factors=PF,
                    predict_n=(30,), out_dir=tmp_path_factory.mktemp("cal"), workers=0)
    return res, table, over


def test_subcombinations_split_by_strategy():
    rep = _subcombos(SEARCH_SPACE, "rep")
    spare = _subcombos(SEARCH_SPACE, "spare")
    assert len(rep) == 3 * 2 * 2 * 2 and len(spare) == 2 * 3 * 3 * 2 * 2
    assert all("layout" not in labels for labels, _ in rep.values())
    assert all("rep_masked_cost" not in labels for labels, _ in spare.values())


@pytest.mark.slow  # the search behind it takes about a minute: run by .ci/run's slow tier
def test_a_table_made_by_a_known_combination_is_recovered_exactly(recovered):
    res, table, over = recovered
    names = [c["overrides"] for c in res.equivalence_set]
    assert over in names  # the generating combination is not rejected...
    gen = next(c for c in res.combinations if c["overrides"] == over)
    assert gen["distance"] == 0.0  # ...and reproduces the table exactly (same traces, same replications)
    assert res.best["distance"] == 0.0
    row = gen["rows"]["24"]
    for s in ("rep", "spare"):
        assert row[s]["ttt_over_t0"] == table["rows"][0][s]["ttt_over_t0"]
        assert row[s]["r"] == table["rows"][0][s]["r"]
    assert all(c["distance"] >= 0 for c in res.combinations)
    assert [c["distance"] for c in res.combinations] == sorted(c["distance"] for c in res.combinations)
    p = res.predictions["30"]
    assert p["members"] == len(res.equivalence_set[:8]) and p["reduction_min"] <= p["reduction_max"]


@pytest.mark.slow
def test_shared_options_agree_in_every_full_combination(recovered):
    res, _, _ = recovered
    assert res.combinations
    for c in res.combinations:
        assert set(c["labels"]) == set(SPACE)
        rep, spare = (dict(x.split("=") for x in c["sub_combinations"][s].split(",")) for s in ("rep", "spare"))
        assert rep["restart_failures"] == spare["restart_failures"] == c["labels"]["restart_failures"]
        assert "layout" not in rep and "rep_masked_cost" not in spare
        assert (c["overrides"].get("restart_failures", "absorbed") == c["labels"]["restart_failures"])


def test_an_impossible_table_rejects_everything_and_says_so(tmp_path):
    table = {"name": "impossible", "rows": [{"n_groups": 24, "rep": {"r": 2, "ttt_over_t0": 1.01,
                                                                        "availability": 0.999},
                                             "spare": {"r": 2, "ttt_over_t0": 1.01, "availability": 0.999}}]}
    res = calibrate(table, space={"layout": SPACE["layout"]}, base=BASE, schedule=((2, 4),), rng=1,
                    r_ranges=RR, period_factors=PF, predict_n=(), out_dir=tmp_path, workers=0)
    assert res.equivalence_set == [] and res.best["rejected"]
    assert "none: the closest combinations, all rejected" in res.table()


def test_preset_roundtrip_and_reproduce(recovered, tmp_path):
    res, _, over = recovered
    path = write_preset(res, tmp_path / "mine.json", name="mine")
    p = load_preset(path)
    assert p["fitted"] is True and p["fitted_options"] == res.best["labels"] and "FITTED" in p["description"]
    from spare_mc.analyses.reproduce import reproduce

    assert p["overrides"] == {**BASE, **over} and p["fixed"] == BASE  # the fit's own settings travel with it
    mt = reproduce(table="main", n_values=(24,), reps=2, confirm_reps=3, preset=path)
    assert mt.main_table.rows[0].n_groups == 24
    assert mt.main_table.settings["preset"]["overrides"] == p["overrides"]
    assert mt.main_table.settings["layout"] == "sidon" and mt.main_table.settings["n_steps"] == 150
    with pytest.raises(sm.UsageValueError, match="applies to the main table only"):
        reproduce(preset=path)
    with pytest.raises(sm.UsageValueError, match="sets \\['layout'\\] to other values"):
        reproduce(table="main", n_values=(24,), base={"layout": "random"}, preset=path)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"overrides": {"colour": 1}}))
    with pytest.raises(sm.UsageValueError, match="not TimelineConfig fields"):
        load_preset(bad)
    bad.write_text("{not json")
    with pytest.raises(sm.UsageValueError, match="not valid JSON"):
        load_preset(bad)


def test_reproduce_preset_on_the_command_line(recovered, tmp_path, capsys):
    res, _, _ = recovered
    path = write_preset(res, tmp_path / "mine.json", name="mine")
    argv = ["reproduce", "--table", "main", "--n-values", "24", "--reps", "2", "--confirm-reps", "3", "--preset",
            str(path), "--json"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["settings"]["preset"]["name"] == "mine" and d["rows"][0]["spare"]["best_r"] >= 2
    assert main(argv[:-1] + ["--layout", "cyclic", "--json"]) == 2
    assert "to other values than given" in capsys.readouterr().err
    assert main(["reproduce", "--preset", str(path)]) == 2


def test_shipped_preset_is_fitted_and_valid():
    assert "paper-n600" in preset_names()
    p = load_preset("paper-n600")
    assert p["fitted"] is True and p["target"] == "paper" and p["fit_n"] == [600]
    assert set(p["overrides"]) <= {f for f in sm.TimelineConfig.__dataclass_fields__}


def test_paper_target_is_the_published_row():
    t = load_target("paper")
    assert [r["n_groups"] for r in t["rows"]] == [600]
    assert t["rows"][0]["spare"] == {"r": 8, "ttt_over_t0": 2.49, "availability": 0.939}


@pytest.mark.parametrize("table, match", [
    ({"rows": []}, "non-empty list `rows`"),
    ({"rows": [{"n_groups": 24}]}, r"rows\[0\].rep must be an object"),
    ({"rows": [{"n_groups": 24, "rep": {"r": 2, "ttt_over_t0": 0.5, "availability": 0.9},
                "spare": {"r": 2, "ttt_over_t0": 2, "availability": 0.9}}]}, "must be >= 1"),
    ({"rows": [{"n_groups": 24, "rep": {"r": 2, "ttt_over_t0": 2, "availability": 1.5},
                "spare": {"r": 2, "ttt_over_t0": 2, "availability": 0.9}}]}, r"availability must be in \(0, 1\]"),
    ({"rows": [{"n_groups": 24, "rep": {"r": 2, "ttt_over_t0": "x", "availability": 0.5},
                "spare": {"r": 2, "ttt_over_t0": 2, "availability": 0.9}}]}, "must be a number"),
    ({"rows": [], "colour": 1}, "non-empty list"),
    ({"rows": [{"n_groups": 24, "rep": {"r": 2, "ttt_over_t0": 2, "availability": 0.5},
                "spare": {"r": 2, "ttt_over_t0": 2, "availability": 0.9}}], "setting": {"colour": 1}},
     "sets \\['colour'\\], which are not TimelineConfig fields"),
])
def test_bad_tables(table, match):
    with pytest.raises((sm.UsageValueError, sm.UsageTypeError), match=match):
        load_target(table)


@pytest.mark.parametrize("kw, match", [
    ({"setting": "ab"}, "`setting` must be an object"),
    ({"setting": {"r": 3}}, "must not set 'r'"),
    ({"setting": {"colour": 3}}, "not TimelineConfig fields"),
    ({"setting": {"ckpt_period_s": 100.0}}, "must not set 'ckpt_period_s'"),
])
def test_bad_table_settings(kw, match):
    t = _table_of({}, 24)
    with pytest.raises((sm.UsageValueError, sm.UsageTypeError), match=match):
        load_target({**t, **kw})


@pytest.mark.parametrize("kw, match", [
    ({"r_ranges": {"spare": 5}}, "maps 'rep'/'spare'"),
    ({"r_ranges": {"ckpt": (1, 2)}}, "maps 'rep'/'spare'"),
    ({"r_ranges": [2, 3]}, "`r_ranges` must be a dict"),
    ({"period_factors": (0.5, -1)}, "distinct positive"),
    ({"period_factors": 3}, "sequence of distinct positive numbers"),
    ({"fit_n": 24.5}, "`fit_n` must be"),
    ({"fit_n": (24, 24)}, "`fit_n` must be distinct, got 24 twice"),
    ({"predict_n": "200"}, "`predict_n` must be a sequence"),
    ({"schedule": 3}, "`schedule` must be a sequence"),
    ({"schedule": ((3, 6, 9),)}, r"`schedule\[0\]` must be"),
    ({"schedule": ()}, "at least one round"),
    ({"eta": 1}, "`eta` must be >= 2"),
    ({"alpha": 0}, r"`alpha` must be a number in \(0, 1\)"),
    ({"alpha": 1.5}, r"`alpha` must be a number in \(0, 1\)"),
    ({"space": {"layout": [("a", {}), ("a", {"layout": "sidon"})]}}, "repeats a label"),
    ({"space": {"layout": [("x", {"colour": 1})]}}, "not TimelineConfig fields"),
    ({"space": {"layout": [("x", {"r": 3})]}}, "must not set 'r'"),
])
def test_bad_calibrate_arguments(kw, match, tmp_path):
    t = _table_of({}, 24)
    with pytest.raises((sm.UsageValueError, sm.UsageTypeError), match=match):
        calibrate(t, **{"out_dir": tmp_path / "o", **kw})
    assert not (tmp_path / "o").exists()


def test_bad_calls(tmp_path):
    t = _table_of({}, 24)
    with pytest.raises(sm.UsageValueError, match="acts only through N"):
        calibrate(t, space={"restart_growth": [("c", {})]}, out_dir=tmp_path)
    with pytest.raises(sm.UsageValueError, match="`fit_n` must be rows"):
        calibrate(t, fit_n=(600,), out_dir=tmp_path)
    with pytest.raises(sm.UsageValueError, match="fixes \\['layout'\\]"):
        calibrate(t, base={"layout": "sidon"}, out_dir=tmp_path)
    with pytest.raises(sm.UsageValueError, match="outside the searched range"):
        calibrate(t, r_ranges={"rep": (5, 6)}, out_dir=tmp_path)
    with pytest.raises(sm.UsageValueError, match="`tol_ttt` must be"):
        calibrate(t, tol_ttt=-1, out_dir=tmp_path)
    with pytest.raises(sm.UsageValueError, match="preset name among"):
        load_preset("no-such-preset")


def test_cli_calibrate_smoke(tmp_path, capsys):
    table = tmp_path / "t.json"
    table.write_text(json.dumps(_table_of({})))
    preset = tmp_path / "o" / "p.json"  # inside --out-dir, which the run creates (QA 2026-12-03: was refused)
    argv = ["calibrate", "--target", str(table), "--options", "layout,restart_failures", "--schedule", "4:8",
            "--rep-r", "2-3", "--spare-r", "2-4", "--period-factors", "0.71,1.41", "--n-steps", "150",
            "--seed", "3", "--predict-n", "", "--workers", "0", "--out-dir", str(tmp_path / "o"),
            "--preset-out", str(preset), "--json"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["target"]["name"] == "synthetic" and d["equivalence_set"][0]["distance"] == 0.0
    assert json.loads(preset.read_text())["fitted"] is True
    assert json.loads((tmp_path / "o" / "calibration.json").read_text())["equivalence_set"]
    assert main(argv) == 0  # its own results are replaced...
    capsys.readouterr()
    preset.write_text("my notes")
    assert main(argv) == 2  # ...a file it did not write is not
    assert "is not a preset written by spare-mc" in capsys.readouterr().err
    assert preset.read_text() == "my notes"
    assert main(["calibrate", "--target", str(tmp_path / "missing.json")]) == 2
    assert main(["calibrate", "--target", "paper", "--options", "colour"]) == 2
    assert main(["calibrate", "--target", "paper", "--schedule", "2-4"]) == 2
    capsys.readouterr()
    # a flag that sets a fitted option is named as a flag (it was "`base` fixes ['layout'], which `space[...]` fits")
    assert main(["calibrate", "--target", "paper", "--layout", "sidon"]) == 2
    assert ("`--layout` sets what the calibration fits (option 'layout'): drop the flag, or leave 'layout' out of "
            "`--options`") in capsys.readouterr().err


def test_a_preset_pins_every_fitted_option_even_at_its_default(capsys):
    """paper-n600 fitted patch_cost = per_shard (the default): a flag that changes it contradicts the preset."""
    p = load_preset("paper-n600")
    assert p["overrides"]["patch_cost"] == "per_shard" and p["overrides"]["rep_masked_cost"] == "resync"
    assert set(SEARCH_SPACE) <= set(p["overrides"]) | {"rep_masked_cost"}
    argv = ["reproduce", "--table", "main", "--preset", "paper-n600", "--patch-cost", "whole_step"]
    assert main(argv) == 2
    assert "sets ['patch_cost'] to other values" in capsys.readouterr().err


def test_preset_files_with_unknown_keys_and_the_shipped_name_wins(tmp_path, monkeypatch):
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"overrides": {}, "colour": "blue"}))
    with pytest.raises(sm.UsageValueError, match=r"unknown keys \['colour'\]"):
        load_preset(bad)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "paper-n600").write_text(json.dumps({"overrides": {"layout": "cyclic"}}))
    assert load_preset("paper-n600")["fitted"] is True  # the shipped preset, not the local file


def test_flags_that_contradict_the_tables_setting(tmp_path):
    t = {**_table_of({}, 24), "setting": {"mtbf_s": 300.0}}
    with pytest.raises(sm.UsageValueError, match="other values than the target table states"):
        calibrate(t, base={"mtbf_s": 600.0}, out_dir=tmp_path)
    with pytest.raises(sm.UsageValueError, match="must not decrease"):
        calibrate(t, schedule=((4, 6), (2, 3)), out_dir=tmp_path)


def test_cli_output_paths_are_checked_before_any_work(tmp_path, capsys):
    base = ["calibrate", "--target", "paper", "--options", "layout", "--schedule", "2:3", "--predict-n", "",
            "--spare-r", "7-9", "--rep-r", "2-3", "--period-factors", "1", "--workers", "0",
            "--out-dir", str(tmp_path / "o")]
    for extra, msg in ((["--preset-out", str(tmp_path / "no" / "dir" / "p.json")], "does not exist"),
                       (["--preset-out", str(tmp_path / "o" / "calibration.json")], "this run's own outputs"),
                       (["--preset-out", str(tmp_path / "p.txt")], "must end in .json"),
                       (["--options", "layout,layout"], "`--options` must be distinct, got 'layout' twice")):
        assert main(base + extra) == 2
        assert msg in capsys.readouterr().err
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_a_round_that_reuses_the_previous_rounds_replications_computes_the_full_screen(tmp_path):
    """``engine.screen(have=...)`` (the calibration's rounds): a screen of 3 replications continued to 5 gives every
    number, the capped flags and the chosen point of a screen of 5 run at once, and runs only replications 3 and 4."""
    from spare_mc.analyses.engine import pick, screen
    from spare_mc.analyses.folder import StudyFolder

    named = {"a": {}, "b": {"layout": "sidon"}}
    args = {"strategy": "spare", "named": named, "n_values": (24,), "rng": 5, "base": BASE, "r_ranges": RR,
            "period_factors": PF, "scheduler": None, "workers": 0, "force": False, "show": False}
    with StudyFolder(str(tmp_path / "full"), "calibrate", {"t": 1}) as f:
        full, _, _ = screen("full", folder=f, reps=5, **args)
    with StudyFolder(str(tmp_path / "steps"), "calibrate", {"t": 2}) as f:
        first, _, _ = screen("first", folder=f, reps=3, **args)
        more, paths, _ = screen("more", folder=f, reps=5, have=first, **args)
    assert [p.rsplit("/", 1)[-1] for p in paths] == ["more-spare-from3.nc"]
    for key in full:
        for field in ("x", "fin", "mean", "se", "n", "done"):
            assert (full[key][field] == more[key][field]).all(), (key, field)
        assert pick(full[key]) == pick(more[key])
    with pytest.raises(ValueError, match="needs alpha = 0"):
        screen("bad", folder=None, reps=5, have=first, alpha=0.05, **args)
