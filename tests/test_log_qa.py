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
