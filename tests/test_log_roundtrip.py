"""The round trip of a failure log (issue 37, item 6): what one command accepts the next accepts too -- `log check`
refuses what `log fit` refuses, `LogFit.cli_flags` works for every fitted level, `--shared-shape` says when it
cannot apply, and every set of `spare-mc ttt` flags that `log fit` prints runs through `spare-mc ttt` unchanged."""

from __future__ import annotations

import json

import pytest

from spare_mc import PerGPU, Topology, UsageValueError
from spare_mc.cli import main
from spare_mc.logs.failure_log import read_failure_log
from spare_mc.logs.fit import fit_failure_log
from spare_mc.logs.synthetic import EXAMPLE, example_log_path

TOPO_FLAGS = ["--n-gpus", "256", "--n-groups", "32", "--nodes-per-rack", "4", "--racks-per-power", "2"]


def _one_line(err):
    return err.count("\n") == 1 and "Traceback" not in err


def test_check_refuses_an_event_at_time_zero_as_fit_does(tmp_path, capsys):
    """A log with an event at time_s = 0 passed `log check` while `log fit` refused it (a lifetime of 0)."""
    path = tmp_path / "zero.csv"
    path.write_text("time_s,level,unit\n0,gpu,3\n5,gpu,4\n9,node,1\n")
    for command in ("check", "fit"):
        assert main(["log", command, str(path), *TOPO_FLAGS]) == 2
        err = capsys.readouterr().err
        assert _one_line(err) and "line 2 (data row 1): `time_s` must be > 0: the log starts before its first " \
                                  "failure" in err and "shift the origin" in err
    path.write_text("time_s,level,unit\n0.5,gpu,3\n5,gpu,4\n9,node,1\n")  # shifted: both accept it
    assert main(["log", "check", str(path), *TOPO_FLAGS]) == 0
    assert main(["log", "fit", str(path), *TOPO_FLAGS, "--min-failures", "2", "--levels", "gpu"]) == 0
    capsys.readouterr()


def _example_fit(**kw):
    return fit_failure_log(read_failure_log(example_log_path(), Topology(**EXAMPLE["topology"])), **kw)


def test_cli_flags_and_failure_model_take_the_gpu_level():
    """`LogFit.cli_flags("gpu")` raised (gpu is not a domain level): the GPU level's model is the per-GPU one."""
    fit = _example_fit(levels=("gpu", "node"), shared_shape=True)
    assert fit.cli_flags("gpu") == fit.cli_flags()
    assert fit.cli_flags("gpu", "long_run") == fit.cli_flags(None, "long_run")
    model = fit.failure_model("gpu")
    assert isinstance(model, PerGPU) and model.gpu_mtbf_s == fit.fits["gpu"].mean_s
    assert fit.cli_flags("node")["failures"] == "node"  # the domain levels as before


def test_shared_shape_with_one_fitted_level_is_refused(capsys):
    """`--shared-shape` with a single fitted level silently did nothing (one level's shape is its own)."""
    with pytest.raises(UsageValueError, match=r"`shared_shape`=True needs two or more fitted levels .* got only "
                                              r"'gpu'; node: 13 failures \(fewer than min_failures=20\)"):
        _example_fit(shared_shape=True, min_failures=20)  # 357 GPU, 13 node, 2 rack failures
    assert main(["log", "fit", example_log_path(), *TOPO_FLAGS, "--levels", "gpu", "--shared-shape"]) == 2
    err = capsys.readouterr().err
    assert _one_line(err) and "`--shared-shape` needs two or more fitted levels" in err and "got only 'gpu'" in err
    assert main(["log", "fit", example_log_path(), *TOPO_FLAGS, "--levels", "gpu,node", "--shared-shape"]) == 0
    capsys.readouterr()
