"""List inputs of the studies (issue 36, items 1 and 6): every comma-separated list flag is read by one parser
(:func:`spare_mc._lib.validation.parse_list`) that refuses a repeated value, an empty item and a non-number, naming
the flag and the value, before any work; the library functions refuse repeated list arguments too
(:func:`~spare_mc._lib.validation.check_unique`); list fields of the files (a calibration's target table, a
``main_table.toml``, a phase-map spec) are checked where they are read, with unknown keys refused at every level of
a target table; a ``--studies`` folder that ``--table main`` cannot read is refused; a variant left out because it
equals the baseline is named as such.

Every refusal must come before any work: the functions that would start it are replaced by ones that fail the
test (:func:`no_study`, :func:`no_sweep`), so each test takes milliseconds.
"""

import json
import re

import pytest

import spare_mc.analyses.calibrate as calibrate_mod
import spare_mc.analyses.clusters as clusters_mod
import spare_mc.analyses.dynamic as dynamic_mod
import spare_mc.analyses.engine as engine_mod
import spare_mc.analyses.reproduce as reproduce_mod
import spare_mc.cli.studies as cli_studies
from spare_mc import UsageValueError
from spare_mc.analyses.calibrate import calibrate, load_target
from spare_mc.analyses.clusters import llama3_study
from spare_mc.analyses.domains import DomainStudy
from spare_mc.analyses.dynamic import dynamic_study
from spare_mc.analyses.phase import PhaseStudy
from spare_mc.analyses.repair import repair_study
from spare_mc.analyses.reproduce import reproduce
from spare_mc.analyses.sensitivity import check_sensitivity_inputs
from spare_mc.analyses.tables import domains_table
from spare_mc.cli import main
from spare_mc.logs.synthetic import example_log_path


def _started(*args, **kw):
    raise AssertionError("the work started before the input was refused")


@pytest.fixture
def no_study(monkeypatch, tmp_path):
    """The command line's study calls fail the test: a refusal must come before them. Run in an empty folder, so
    that nothing written (``data/``) goes unnoticed."""
    for name in ("dynamic_study", "repair_study", "sensitivity", "estimate_cost", "calibrate", "reproduce",
                 "domains_table", "domain_period_table", "phase_table", "llama3_table"):
        monkeypatch.setattr(cli_studies, name, _started)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def no_sweep(monkeypatch, tmp_path):
    """The library's work (sweeps, the calibration's screens, timeline runs) fails the test. The factor screens of
    the dynamic and repair studies run their sweeps through :mod:`spare_mc.analyses.engine`."""
    for mod in (dynamic_mod, engine_mod, reproduce_mod):
        monkeypatch.setattr(mod, "run_study_sweep", _started)
    monkeypatch.setattr(calibrate_mod, "screen", _started)
    monkeypatch.setattr(clusters_mod, "simulate_ttt", _started)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _refused(argv, capsys) -> str:
    """``spare-mc argv`` exits 2 with one line on stderr; that line."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


#: Every comma-separated list flag of the command line, with a value that repeats one entry (numbers compare by
#: value: 0.5 and 0.50 are one), and the repeated value as the error names it.
LIST_FLAGS = [
    (["dynamic", "--quick", "--policies", "hazard,hazard"], "--policies", "'hazard'"),
    (["dynamic", "--n-groups", "200,600,200"], "--n-groups", "200"),
    (["dynamic", "--shapes", "0.5,0.50"], "--shapes", "0.5"),
    (["repair", "--n-groups", "200,200"], "--n-groups", "200"),
    (["repair", "--repair-times", "300,300.0"], "--repair-times", "300.0"),
    (["sensitivity", "--n-groups", "600,600"], "--n-groups", "600"),
    (["sensitivity", "--variants", "no_jitter,ckpt_lost,no_jitter"], "--variants", "'no_jitter'"),
    (["calibrate", "--target", "paper", "--options", "layout,layout"], "--options", "'layout'"),
    (["calibrate", "--target", "paper", "--schedule", "3:6,3:6"], "--schedule", "(3, 6)"),
    (["calibrate", "--target", "paper", "--fit-n", "600,600"], "--fit-n", "600"),
    (["calibrate", "--target", "paper", "--predict-n", "200,200"], "--predict-n", "200"),
    (["calibrate", "--target", "paper", "--period-factors", "1,1.0"], "--period-factors", "1.0"),
    (["reproduce", "--n-values", "200,200"], "--n-values", "200"),
    (["reproduce", "--table", "main", "--n-values", "200,200"], "--n-values", "200"),
    (["reproduce", "--table", "domains", "--n-values", "200,200"], "--n-values", "200"),
    (["reproduce", "--table", "domain-period", "--n-values", "600,600"], "--n-values", "600"),
    (["log", "fit", str(example_log_path()), "--n-gpus", "256", "--n-groups", "32", "--nodes-per-rack", "4",
      "--racks-per-power", "2", "--levels", "gpu,gpu"], "--levels", "'gpu'"),
    (["ttt", "--strategy", "spare", "--n-groups", "600", "--failures", "mixed", "--domain-levels", "rack,rack"],
     "--domain-levels", "'rack'"),
]


@pytest.mark.parametrize("argv, flag, value", LIST_FLAGS, ids=[f"{a[0]} {f}" for a, f, _ in LIST_FLAGS])
def test_every_list_flag_refuses_a_repeated_value_before_any_work(argv, flag, value, no_study, capsys):
    """``dynamic --quick --policies hazard,hazard`` ran 40 rows instead of 20 and Holm counted every test twice
    (a verdict flipped at 0.05); other list flags ran one setting twice, or refused it late and in the library's
    words. (``--levels`` and ``--domain-levels`` already refused a repeat; they are here so that every list flag
    is.)"""
    err = _refused(argv, capsys)
    assert f"`{flag}`" in err and re.search(rf"got {re.escape(value)} twice", err), err
    assert not (no_study / "data").exists()


#: A list flag of each kind with an empty item: doubled, trailing, or the whole value.
EMPTY_ITEMS = [
    (["dynamic", "--policies", "hazard,,young_hazard"], "--policies"),
    (["dynamic", "--shapes", "0.5,"], "--shapes"),
    (["repair", "--repair-times", "300,,900"], "--repair-times"),
    (["sensitivity", "--variants", "no_jitter,"], "--variants"),
    (["calibrate", "--target", "paper", "--options", ",layout"], "--options"),
    (["calibrate", "--target", "paper", "--fit-n", "600,"], "--fit-n"),
    (["reproduce", "--table", "main", "--n-values", "200,,600"], "--n-values"),
]


@pytest.mark.parametrize("argv, flag", EMPTY_ITEMS, ids=[" ".join(a[:1] + a[-2:]) for a, _ in EMPTY_ITEMS])
def test_an_empty_item_of_a_list_flag_is_refused(argv, flag, no_study, capsys):
    """``"1,,2"`` and a trailing comma were dropped in silence by most list flags (and an error in others)."""
    err = _refused(argv, capsys)
    assert f"`{flag}` must be comma-separated" in err and "without empty items" in err, err


@pytest.mark.parametrize("argv, flag", [
    (["dynamic", "--n-groups", "200,x"], "--n-groups"),
    (["dynamic", "--shapes", "0.5,x"], "--shapes"),
    (["repair", "--n-groups", "200,x"], "--n-groups"),
    (["repair", "--repair-times", "300,x"], "--repair-times"),
    (["calibrate", "--target", "paper", "--period-factors", "1,x"], "--period-factors"),
    (["calibrate", "--target", "paper", "--schedule", "3:6,x"], "--schedule"),
    (["reproduce", "--table", "domain-period", "--n-values", "600,x"], "--n-values"),
])
def test_a_non_number_in_a_list_flag_names_the_flag_and_the_item(argv, flag, no_study, capsys):
    """``repair --repair-times 300,x`` said "`--n-groups` and `--repair-times` must be ...", and the others named
    the whole value, not the item that is not a number (domain-period passed it on to the table)."""
    err = _refused(argv, capsys)
    assert f"`{flag}` must be comma-separated" in err and "got 'x' in" in err and "--n-groups` and" not in err


def test_predict_n_empty_is_no_prediction_and_parse_list_reads_numbers_by_value():
    """``--predict-n ''`` stays "no prediction"; items are stripped and read by value."""
    from spare_mc._lib.validation import check_unique, parse_list  # (new in issue 36)

    assert parse_list("", "--predict-n", int, allow_empty=True) == ()
    assert parse_list(" 200, 600 ", "--n", int) == (200, 600)
    with pytest.raises(UsageValueError, match=r"`--n` must be comma-separated integers, got an empty value"):
        parse_list(" ", "--n", int)
    with pytest.raises(UsageValueError, match=r"got 600 twice \('600' and '0600'\)"):
        parse_list("600,0600", "--n", int)
    with pytest.raises(UsageValueError, match=r"`--shapes` must be finite numbers, got 'nan'"):
        parse_list("0.5,nan", "--shapes", float)
    with pytest.raises(UsageValueError, match=r"got 1.0 twice in \[1, 1.0\]"):
        check_unique((1, 1.0), "x")
    check_unique(([3, 6], [3, 8]), "schedule")  # unhashable entries compare by ==


#: The Python API: every list argument of the studies with one entry repeated.
API_LISTS = [
    (lambda: dynamic_study(policies=("hazard", "hazard")), r"`policies` must be distinct, got 'hazard' twice"),
    (lambda: dynamic_study(shapes=(0.5, 0.50)), r"`shapes` must be distinct, got 0.5 twice"),
    (lambda: dynamic_study(n_values=(200, 200)), r"`n_values` must be distinct, got 200 twice"),
    (lambda: dynamic_study(factors=(1, 1.0)), r"`factors` must be distinct, got 1.0 twice"),
    (lambda: dynamic_study(r_values={"rep": (2, 2)}), r"`r_values\['rep'\]` must be distinct, got 2 twice"),
    (lambda: repair_study(r_values={"spare": (3, 3)}), r"`r_values\['spare'\]` must be distinct, got 3 twice"),
    (lambda: repair_study(repair_times=(60.0, 60)), r"`repair_times` must be distinct, got 60.0 twice"),
    (lambda: check_sensitivity_inputs((600, 600)), r"`n_values` must be distinct, got 600 twice"),
    (lambda: calibrate(schedule=((3, 6), (3, 6))), r"`schedule` must be distinct, got \(3, 6\) twice"),
    (lambda: calibrate(period_factors=(1, 1.0)), r"`period_factors` must be distinct, got 1.0 twice"),
    (lambda: calibrate(fit_n=(600,), predict_n=(200, 600)),
     r"`predict_n` must not hold a fitted N \(`fit_n`\), got 600"),
    (lambda: domains_table(n_values=(200, 200)), r"`n_values` must be distinct, got 200 twice"),
    (lambda: DomainStudy(levels=("none", "rack", "rack")), r"`levels` must be distinct, got 'rack' twice"),
    (lambda: DomainStudy(mixed_n_values=(600, 600)), r"`mixed_n_values` must be distinct, got 600 twice"),
    (lambda: llama3_study(shapes=(0.78, 0.78)), r"`shapes` must be distinct, got 0.78 twice"),
    (lambda: reproduce(n_values=(200, 200)), r"`n_values` must be distinct, got 200 twice"),
]


@pytest.mark.parametrize("call, match", API_LISTS, ids=[m.split("`")[1] + str(i) for i, (_, m) in
                                                        enumerate(API_LISTS)])
def test_the_library_refuses_a_repeated_list_value_before_any_work(call, match, no_sweep):
    """``dynamic_study(policies=("hazard", "hazard"))`` ran every policy twice; ``reproduce(n_values=(200,
    200))`` ran every sweep first and refused the main table's N at the end; a calibration round given twice
    reran the same replications and counted twice in the Bonferroni level; a predicted N that is also fitted was
    dropped in silence."""
    with pytest.raises(UsageValueError, match=match):
        call()
    assert not (no_sweep / "data").exists()


# ---------------------------------------------------------------------------------------------- files
def _row(n=24, **rep):
    return {"n_groups": n, "rep": {"r": 2, "ttt_over_t0": 2.0, "availability": 0.5, **rep},
            "spare": {"r": 3, "ttt_over_t0": 1.5, "availability": 0.7}}


@pytest.mark.parametrize("table, where, key", [
    ({"rows": [_row(availabilty=0.5)]}, r"rows\[0\]\.rep", "availabilty"),
    ({"rows": [_row(), {**_row(30), "colour": 1}]}, r"rows\[1\]", "colour"),
    ({"rows": [{**_row(), "spare": {**_row()["spare"], "note": "x"}}]}, r"rows\[0\]\.spare", "note"),
    ({"rows": [_row()], "setting": {"mtbf": 300.0}}, r"the target table's `setting`", "mtbf"),
])
def test_a_target_table_refuses_unknown_keys_at_every_level(table, where, key, tmp_path):
    """A misspelt ``availabilty`` inside ``rows[].rep`` was ignored (the fit ran against the right key's value,
    or failed on a missing one), while an unknown top-level key was refused. In a file, the error names it."""
    with pytest.raises(UsageValueError, match=rf"{where}.*{key}|{key}.*{where}"):
        load_target(table)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(table))
    with pytest.raises(UsageValueError, match=re.escape(key)):
        load_target(path)


def test_a_target_table_keeps_its_documented_keys_and_names_a_repeated_n_by_its_key_path(tmp_path):
    """``reduction`` (the published row's) stays accepted; a second row of one N names both rows' keys."""
    assert load_target("paper")["rows"][0]["n_groups"] == 600
    assert load_target({"rows": [{**_row(), "reduction": 0.25}]})["rows"][0]["n_groups"] == 24
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"rows": [_row(), _row()]}))
    with pytest.raises(UsageValueError, match=rf"rows\[1\]\.n_groups of the target table {re.escape(str(path))} "
                                              rf"repeats N = 24 of rows\[0\]"):
        load_target(path)


def test_main_table_toml_lists_are_checked_naming_the_file(tmp_path, no_sweep):
    """A ``main_table.toml`` whose ``n_values`` repeats an N ran every sweep of the full reproduction before the
    main table refused it (naming `n_values`, not the file)."""
    (tmp_path / "main_table.toml").write_text("[main_table]\nn_values = [200, 200]\n")
    with pytest.raises(UsageValueError, match=rf"{re.escape(str(tmp_path))}.*main_table.toml: \[main_table\] "
                                              rf"`n_values` must be distinct, got 200 twice"):
        reproduce(studies=tmp_path, table="main")
    (tmp_path / "main_table.toml").write_text("[main_table]\nquick_reps = 1\n")
    with pytest.raises(UsageValueError, match=r"main_table.toml: \[main_table\] `quick_reps` must be an integer >= 2"):
        reproduce(studies=tmp_path, table="main", quick=True)


def test_a_phase_spec_error_names_the_file(tmp_path):
    """A phase-map spec's repeated ``save_s`` was refused as "`save_s` must not repeat", without the file."""
    spec = tmp_path / "phase_map.toml"
    spec.write_text("[phase]\nsave_s = [1.0, 1.0]\n")
    with pytest.raises(UsageValueError, match=rf"\[phase\] of {re.escape(str(spec))}: `save_s` must not repeat"):
        PhaseStudy.from_file(spec)


def test_reproduce_main_refuses_a_studies_folder_without_main_table_toml(tmp_path, no_study, monkeypatch, capsys):
    """``reproduce --table main --quick --studies DIR`` without ``DIR/main_table.toml`` ran at the defaults in
    silence (``--table phase`` refuses a folder without its spec)."""
    folder = tmp_path / "specs"
    folder.mkdir()
    with pytest.raises(UsageValueError, match=rf"`studies` {re.escape(str(folder))} holds no main_table.toml"):
        reproduce(table="main", quick=True, studies=folder)
    monkeypatch.setattr(cli_studies, "reproduce", reproduce)  # the real study: its check comes before any work
    err = _refused(["reproduce", "--table", "main", "--quick", "--studies", str(folder)], capsys)
    assert f"`--studies` {folder} holds no main_table.toml" in err


def test_a_variant_equal_to_the_baseline_is_named_as_such(no_study, capsys):
    """``sensitivity --layout sidon --variants layout_sidon`` said only "must name variants among ...": the
    variant was left out because it equals the baseline under the given flags. The same for the Weibull shape."""
    err = _refused(["sensitivity", "--layout", "sidon", "--variants", "layout_sidon"], capsys)
    assert "'layout_sidon' sets --layout sidon" in err and "equals the baseline" in err
    err = _refused(["sensitivity", "--shape", "1", "--variants", "no_jitter,shape_1"], capsys)
    assert "'shape_1' sets --shape 1.0" in err and "equals the baseline" in err
    err = _refused(["sensitivity", "--variants", "stay_dead_x"], capsys)  # an unknown name: as before
    assert "`--variants` must name variants among" in err
