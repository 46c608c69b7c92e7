"""The round trip of a failure log (issue 37, item 6): what one command accepts the next accepts too -- `log check`
refuses what `log fit` refuses, `LogFit.cli_flags` works for every fitted level, `--shared-shape` says when it
cannot apply, and every set of `spare-mc ttt` flags that `log fit` prints runs through `spare-mc ttt` unchanged."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from spare_mc import DomainFailures, PerGPU, TimelineConfig, Topology, UsageValueError, cyclic, sidon
from spare_mc.cli import main
from spare_mc.logs.failure_log import read_failure_log
from spare_mc.logs.fit import fit_failure_log
from spare_mc.logs.synthetic import EXAMPLE, example_log_path
from spare_mc.model.failures import DOMAIN_SIZES
from spare_mc.model.layouts import layout_note
from spare_mc.ttt.theory import theory_caveats, theory_ttt

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


FIT_VARIANTS = {"default": [], "shared": ["--shared-shape", "--levels", "gpu,node"],
                "mixed": ["--shared-shape", "--levels", "gpu,node,rack", "--min-failures", "2"]}


@pytest.mark.parametrize("variant", list(FIT_VARIANTS))
def test_every_printed_flag_set_runs_through_ttt(variant, capsys):
    """Acceptance (issue 37, item 6): each set of flags `log fit --json` prints for the shipped example runs through
    `spare-mc ttt` unchanged. `ttt` refused them (`--n-gpus ... has no effect` for the per-GPU model; without it,
    N = 256 does not divide the default G), and the domain flags assumed ttt's default domain sizes."""
    assert main(["log", "fit", example_log_path(), *TOPO_FLAGS, *FIT_VARIANTS[variant], "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    expected = {"default": {"per-gpu"}, "shared": {"per-gpu", "node"},
                "mixed": {"per-gpu", "node", "rack", "mixed"}}[variant]
    assert set(d["spare_mc_flags"]) == set(d["ttt_args"]) == expected and "flags_note" not in d
    job = ["--n-steps", "40", "--reps", "2", "--json"]
    for name, args in d["ttt_args"].items():
        assert main(["ttt", "--strategy", "spare", "--n-groups", "32", *args, *job]) == 0, (name, args)
        cfg = json.loads(capsys.readouterr().out)["config"]
        used = {"per-gpu": 0, "node": 1, "rack": 2, "mixed": 2}[name]  # the domain sizes the model uses
        keys = ["n_gpus", "n_groups", "placement", *DOMAIN_SIZES[:used]]
        assert {k: cfg["topology"][k] for k in keys} == {k: EXAMPLE["topology"][k] for k in keys}  # the log's own
        fit = d["fits"]["gpu"]
        assert cfg["failures"].get("background", cfg["failures"])["gpu_mtbf_s"] == pytest.approx(fit["mean_s"],
                                                                                                rel=1e-12)
    # a first-failure per-GPU job at N = 256 (one GPU per group), which the default G = 600,000 does not allow
    assert main(["ttt", "--strategy", "ckpt", "--n-groups", "256", *d["ttt_args"]["per-gpu"], *job]) == 0
    capsys.readouterr()


def test_n_groups_not_dividing_the_default_gpus_names_the_fix(capsys):
    base = ["ttt", "--strategy", "spare", "--n-groups", "256", "--failures", "per-gpu", "--n-steps", "40", "--reps",
            "2"]
    assert main(base) == 2
    err = capsys.readouterr().err
    assert _one_line(err) and ("`--n-groups` must divide `--n-gpus` (each group has M = G/N GPUs), got N=256 and the "
                               "default G=600000: give `--n-gpus`, the cluster's GPU count (a multiple of N)") in err
    assert main([*base, "--n-gpus", "512", "--calibration", "first_failure"]) == 0  # the fix runs
    capsys.readouterr()
    # a domain size its level does not use is refused, not ignored; one it uses is taken
    node = ["ttt", "--strategy", "spare", "--n-groups", "32", "--n-gpus", "256", "--failures", "node",
            "--domain-mtbf-s", "1e7", "--n-steps", "40", "--reps", "2"]
    assert main([*node, "--racks-per-power", "2"]) == 2
    err = capsys.readouterr().err
    assert _one_line(err) and "`--racks-per-power` has no effect with --failures='node'" in err
    assert main([*node, "--gpus-per-node", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["topology"]["gpus_per_node"] == 4
    assert main(["ttt", "--strategy", "spare", "--n-groups", "32", "--failures", "per-gpu", "--gpus-per-node",
                 "4"]) == 2
    assert "`--gpus-per-node` has no effect with --failures='per-gpu'" in capsys.readouterr().err


def test_the_theory_block_says_when_it_does_not_apply(capsys):
    """The `theory` block of `spare-mc ttt` disagreed 44.3 against 5.25 with the simulation for a per-GPU Weibull
    model of shape 0.42 without a caveat: it states its assumptions and says when the setting leaves them."""
    topo = Topology(256, 32)
    base = dict(strategy="spare", n_groups=32, r=3, n_steps=100)
    th = theory_ttt(TimelineConfig(**base))  # the paper's setting: system-level renewal, shape 0.78
    assert th.applies and th.why is None and "uniformly random live group" in th.assumptions
    exp = PerGPU(300.0 * 256, 1.0)  # exponential lifetimes: a system MTBF of 300 s, the config's mtbf_s
    assert theory_ttt(TimelineConfig(**base, failures=exp, topology=topo)).applies
    cases = {
        "shape 0.42 != 1": dict(failures=PerGPU.from_system_mtbf(300.0, 256, 0.42), topology=topo),
        "domain failures (node) kill several groups": dict(failures=DomainFailures("node", 1e7, 1.0, background=exp),
                                                          topology=topo),
        "repair='fixed' brings failed groups back": dict(repair="fixed"),
        "checkpoint period 1000 s is not the theory's T_c*": dict(ckpt_period_s=1000.0),
        "ckpt_policy='hazard'": dict(ckpt_policy="hazard"),
    }
    for why, kw in cases.items():
        th = theory_ttt(TimelineConfig(**base, **kw))
        assert not th.applies and why in th.why, (kw, th.why)
    assert theory_caveats(TimelineConfig(**base, ckpt_period_s=theory_ttt(TimelineConfig(**base)).ckpt_period_s)) \
        == []  # the theory's own period, given
    # the command line: in the JSON and in the text
    argv = ["ttt", "--strategy", "spare", "--n-groups", "32", "--failures", "per-gpu", "--shape", "0.42",
            "--n-gpus", "256", "--n-steps", "40", "--reps", "2"]
    assert main([*argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)["theory"]
    assert d["applies"] is False and "shape 0.42 != 1" in d["why"] and d["assumptions"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert re.search(r"\ntheory\.applies +no: per-unit Weibull lifetimes of shape 0\.42 != 1", out)
    assert re.search(r"\ntheory\.assumes +failures of the whole system", out)


@pytest.mark.parametrize("n", [3, 12, 101])
def test_sidon_at_r_2_is_cyclic_and_the_output_says_so(n, capsys):
    """`sidon` with r = 2 silently equalled `cyclic`: it is the same layout (any two offsets are a Sidon set), which
    the outputs now say; from r = 3 they differ and no note is given."""
    assert sidon(n, 2).offsets == (0, 1) and np.array_equal(sidon(n, 2).holders, cyclic(n, 2).holders)
    assert layout_note("sidon", 2) and layout_note("sidon", 1) and layout_note("cyclic", 2) is None
    if n >= 7:
        assert not np.array_equal(sidon(n, 3).holders, cyclic(n, 3).holders) and layout_note("sidon", 3) is None
    if n != 12:
        return
    for argv in (["mu", "--n-groups", "12", "--r", "2", "--layout", "sidon", "--reps", "200", "--no-exact"],
                 ["overhead", "--n-groups", "12", "--r", "2", "--layout", "sidon", "--reps", "50", "--no-exact"],
                 ["ttt", "--strategy", "spare", "--n-groups", "12", "--r", "2", "--layout", "sidon", "--n-steps", "40",
                  "--reps", "2"]):
        assert main([*argv, "--json"]) == 0
        assert "sidon at r = 2 is the cyclic layout" in json.loads(capsys.readouterr().out)["layout_note"], argv
        at3 = [("3" if a == "2" and argv[i - 1] == "--r" else a) for i, a in enumerate(argv)]
        assert main([*at3, "--json"]) == 0  # r = 3: Sidon offsets of their own, no note
        assert "layout_note" not in json.loads(capsys.readouterr().out)


def test_the_text_output_explains_the_rectlr_estimates(capsys):
    """`c_mean`, `hk_fixed_rate`, `patch_mean` were printed without a word of what they are."""
    assert main(["overhead", "--n-groups", "12", "--r", "3", "--reps", "50", "--no-exact"]) == 0
    out = capsys.readouterr().out
    for name in ("c_mean", "hk_fixed_rate", "patch_mean", "s_star_mean", "moves_mean"):
        assert re.search(rf"\n  {name} +\S", out.split("where:")[1]), name
    assert main(["overhead", "--n-groups", "12", "--r", "3", "--reps", "50", "--no-exact", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)  # the JSON keys unchanged, no legend in them
    assert {"c_mean", "hk_fixed_rate", "patch_mean"} <= set(d) and "where" not in d
    assert main(["log", "replay", example_log_path(), *TOPO_FLAGS, "--r", "2", "--overhead", "--ignore-repairs"]) == 0
    out = capsys.readouterr().out
    legend = out.split("where:")[1]
    assert "hk_fixed_rate  share of ReCtlr calls resolved by Phase 0" in legend and "patch_mean     patch compute" \
        in legend and "time_s         time from the epoch's start to its wipe-out (s)" in legend
