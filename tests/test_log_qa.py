"""A new user's pass over the log path (log import, log fit, ttt, recommend): each test is a reproducer of something
that went wrong, run as the user ran it."""

import json

import numpy as np
import pytest

from spare_mc import Topology
from spare_mc._lib.validation import UsageValueError
from spare_mc.cli import main
from spare_mc.logs.failure_log import FailureLog, log_levels, write_failure_log
from spare_mc.logs.models import fit_units

TOPO = Topology(1024, 16)


def _log(times, units, window, level="node"):
    t = np.asarray(times, dtype=float)
    code = log_levels(TOPO).index(level)
    return FailureLog(t, np.full(t.size, code), np.asarray(units), None, float(window), TOPO, log_levels(TOPO),
                      "qa")


# ------------------------------------------------------------------------------------------- degenerate logs
@pytest.mark.parametrize("ci", ["wald", "profile"])
def test_failures_all_at_one_time_are_refused_not_an_overflow(ci, tmp_path, capsys):
    """Four nodes failing in the same hour of a day's log leave the per-unit shape undetermined: its Wald
    half-width was 1,250 on the log scale and ``math.exp`` raised OverflowError (exit 70, a traceback); the
    profile walked out to exp's range likewise. Now a usage error that says the log does not determine it."""
    log = _log([3600.0] * 4, [5, 6, 7, 9], 86400.0)
    with pytest.raises(UsageValueError, match="does not determine"):
        fit_units(log, "node", ci=ci)
    path = tmp_path / "same.csv"
    write_failure_log(path, log)
    assert main(["log", "fit", str(path), "--n-gpus", "1024", "--n-groups", "16", "--model", "unit",
                 "--ci", ci]) == 2
    err = capsys.readouterr().err
    assert "does not determine" in err and "Traceback" not in err


# ------------------------------------------------------------------------------------------- log fit's flags
@pytest.fixture(scope="module")
def node_log_path(tmp_path_factory):
    """40 node failures at the minute over 30 days (enough for every model's fit)."""
    rng = np.random.default_rng(7)
    t = np.sort(rng.choice(np.arange(1, 30 * 1440), size=40, replace=False)) * 60.0
    path = tmp_path_factory.mktemp("qa") / "node.csv"
    write_failure_log(path, _log(t, rng.integers(0, 128, size=40), 30 * 86400.0))
    return str(path)


FIT = ["--n-gpus", "1024", "--n-groups", "16"]


@pytest.mark.parametrize("model", ["system", "unit"])
def test_min_failures_is_refused_where_it_does_nothing(model, node_log_path, capsys):
    """``--min-failures`` picks the levels of ``--model levels``; with system or unit it was accepted and ignored
    (``--min-failures 500`` fitted 40 failures), while ``--levels`` and ``--shared-shape`` were refused."""
    assert main(["log", "fit", node_log_path, *FIT, "--model", model, "--min-failures", "500"]) == 2
    assert f"`--min-failures` has no effect with --model {model}" in capsys.readouterr().err
    # and with --model levels it still picks the levels, 10 by default
    assert main(["log", "fit", node_log_path, *FIT, "--min-failures", "41"]) == 2
    assert "--min-failures=41" in capsys.readouterr().err
    assert main(["log", "fit", node_log_path, *FIT, "--sims", "160"]) == 0  # the default, 10: node is fitted
    assert capsys.readouterr().out.splitlines()[1].startswith("node")


@pytest.mark.parametrize("model", ["levels", "system", "unit"])
@pytest.mark.parametrize("r, rule", [("17", "<= 16"), ("0", ">= 1")])
def test_check_r_errors_name_the_flag(model, r, rule, node_log_path, capsys):
    """The check's refusal named `r` (``r must satisfy 1 <= r <= N``), which is no flag of ``log fit``."""
    assert main(["log", "fit", node_log_path, *FIT, "--model", model, "--check-r", r]) == 2
    assert f"`--check-r` must be {rule}" in capsys.readouterr().err


def test_a_resolution_that_does_not_divide_the_times_names_the_time_as_a_number(node_log_path, capsys):
    assert main(["log", "fit", node_log_path, *FIT, "--model", "unit", "--resolution-s", "7"]) == 2
    err = capsys.readouterr().err
    assert "`--resolution-s`=7: the event time " in err and "np.float64" not in err


# ------------------------------------------------------------------------------------------- recommend
REC = ["--n-gpus", "1024", "--n-groups", "16", "--n-steps", "100", "--reps", "3", "--spare-r", "2",
       "--period-factors", "1", "--sims", "160", "--replay-starts", "3"]


@pytest.fixture(scope="module")
def burst_log_path(tmp_path_factory):
    """A burst: 60 node failures in the first day of 30, 10 after: no stationary model reproduces it."""
    rng = np.random.default_rng(3)
    t = np.sort(np.concatenate([rng.choice(np.arange(1, 1440), 60, replace=False),
                                rng.choice(np.arange(1440, 30 * 1440), 10, replace=False)])) * 60.0
    path = tmp_path_factory.mktemp("qa") / "burst.csv"
    write_failure_log(path, _log(t, rng.integers(0, 128, size=t.size), 30 * 86400.0))
    return str(path)


def test_recommend_prints_the_flags_of_a_failed_model_with_model_check_failed(burst_log_path, capsys):
    """With --accept-failed-check, recommend printed the failed model's `spare-mc ttt` flags without
    `--model-check failed`, so ttt ran them unlabelled: `log fit` prints the same model's flags with it."""
    assert main(["recommend", burst_log_path, *REC, "--accept-failed-check", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["model_check_passed"] is False
    assert d["fit"]["ttt_flags"][-2:] == ["--model-check", "failed"]
    assert main(["log", "fit", burst_log_path, *REC[:4], "--model", "system", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ttt_flags"] == d["fit"]["ttt_flags"]
    assert main(["recommend", burst_log_path, *REC, "--accept-failed-check"]) == 0
    assert "--model-check failed" in capsys.readouterr().out


@pytest.mark.parametrize("flags, name", [(["--ckpt-every-steps", "5"], "--ckpt-every-steps"),
                                         (["--ckpt-policy", "hazard"], "--ckpt-policy")])
def test_recommend_refuses_checkpoints_it_would_not_report(flags, name, node_log_path, capsys):
    """With --ckpt-every-steps the candidates checkpointed every k steps while the table and `best` reported the
    theory period times the factor (and the default factors stopped on `--ckpt-period-factor`, a flag recommend
    does not take); with --ckpt-policy hazard every candidate ran and then the replay refused it."""
    assert main(["recommend", node_log_path, *REC, *flags]) == 2
    assert f"`{name}`=" in capsys.readouterr().err
    assert main(["recommend", *REC[:-4], "--mtbf-s", "3e4", "--shape", "0.8", *flags]) == 2  # a model: too
    assert f"`{name}`=" in capsys.readouterr().err


def test_recommend_text_says_which_candidates_were_capped(node_log_path, capsys):
    """A capped candidate's TTT/T0 is a lower bound (the ttt output says so); the recommend table did not."""
    args = ["recommend", node_log_path, *REC[:4], "--n-steps", "2000", "--reps", "4", "--spare-r", "2",
            "--period-factors", "1", "--sims", "160", "--replay-starts", "3", "--max-wall-factor", "1.3"]
    assert main([*args, "--json"]) == 0
    capped = [x for x in json.loads(capsys.readouterr().out)["candidates"] if x["capped_fraction"] > 0]
    assert capped
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.count("capped: a lower bound") >= len(capped)


def test_a_unit_fit_says_which_events_it_leaves_out(capsys):
    """The example log has gpu, node and rack events; the unit model at gpu level leaves 15 out (a rack kills
    4 groups): the JSON said so (other_level_events), the text did not."""
    from spare_mc.logs.synthetic import example_log_path

    args = ["log", "fit", str(example_log_path()), "--n-gpus", "256", "--n-groups", "32", "--nodes-per-rack", "4",
            "--racks-per-power", "2", "--model", "unit", "--sims", "160"]
    assert main([*args, "--json"]) == 0
    n = json.loads(capsys.readouterr().out)["other_level_events"]
    assert n == 15
    assert main(args) == 0
    assert f"({n} events at other levels are not in this model" in capsys.readouterr().out


def test_recommend_text_says_when_replayed_jobs_ran_past_the_log(node_log_path, capsys):
    """A replayed job that runs past the log's end meets no failures there (``within_window`` in the JSON); the
    text printed the replay's TTT/T0 without saying so. A real run's output, with its last job past the end."""
    from spare_mc.cli import format as fmt

    assert main(["recommend", node_log_path, *REC, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["replay"]["within_window"] == d["replay"]["starts"] == 3
    fmt.recommend(d)
    assert "ran past the log's end" not in capsys.readouterr().out
    d["replay"]["within_window"] = 2
    fmt.recommend(d)
    assert "(1 of the 3 replayed jobs ran past the log's end" in capsys.readouterr().out


def test_recommend_help_lists_the_flags_of_a_model_without_a_log(capsys):
    """The help said "without a log, give --mtbf-s and --shape" but hid both flags (and the timeline's defaults,
    300 s and 0.78, do not apply: without a log they are required)."""
    with pytest.raises(SystemExit) as stop:
        main(["recommend", "--help"])
    assert stop.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--mtbf-s MTBF_S without a log: the system MTBF" in out
    assert "--shape SHAPE without a log: the Weibull shape" in out


def test_ttt_failures_unit_without_shape_uses_the_shape_its_help_states(capsys):
    """`spare-mc ttt --help` says --shape defaults to 0.78; with --failures unit and no --shape the units were
    exponential (1.0), silently."""
    from spare_mc import TimelineConfig

    args = ["ttt", "--strategy", "spare", "--n-groups", "16", "--n-steps", "20", "--reps", "2", "--failures", "unit",
            "--unit-level", "node", "--unit-mean-s", "1e7", "--n-gpus", "1024", "--json"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["failure_model"]["shape"] == TimelineConfig.shape == 0.78
    with pytest.raises(SystemExit):
        main(["ttt", "--help"])
    assert "(default 0.78)" in " ".join(capsys.readouterr().out.split()).split("--shape SHAPE", 2)[-1][:120]


def test_ttt_labels_a_model_run_despite_its_failed_check(capsys):
    """`--model-check failed --accept-failed-check` ran the model with no word of the failed check in the text or
    the JSON (recommend labels the same case)."""
    args = ["ttt", "--strategy", "spare", "--n-groups", "16", "--n-steps", "20", "--reps", "2", "--mtbf-s", "3e4",
            "--model-check", "failed", "--accept-failed-check"]
    assert main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model_check"].startswith("FAILED")
    assert main(args) == 0
    assert "model_check              FAILED" in capsys.readouterr().out
    assert main(args[:-3]) == 0
    assert "model_check" not in capsys.readouterr().out
