"""A new user's pass over the log path (log import, log fit, ttt, recommend): each test is a reproducer of something
that went wrong, run as the user ran it."""

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
