"""Regression tests of the hardening issue: every bad input and fault a QA pass found, one test (or more) each.

Each test failed on the commit before the fix (ac9aee0) and names the item it covers.
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import spare_mc as sm
from spare_mc._lib.resources import ResourceLimitError
from spare_mc.cli import main
from spare_mc.sweep import SweepSpec, compare_dataset, run_sweep
from spare_mc.sweep.storage import open_dataset, write_dataset
from spare_mc.ttt.config import TimelineConfig
from spare_mc.ttt.run import run_timeline, simulate_ttt

SMALL = """
[sweep]
name = "h"
quantity = "wipeout"
reps = 30
block = 10
seed = 7

[grid]
n_groups = [40]
r = [2, 3]
"""


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "spare_mc.cli", *args], capture_output=True, text=True, **kw)


def _one_line(err):
    return err.count("\n") == 1 and "Traceback" not in err


# ----------------------------------------------------------------------------------- 1. the integer clock
@pytest.mark.parametrize("kw, match", [
    (dict(ckpt_period_s=1e18), r"`ckpt_period_s` must be <= 1e\+09"),
    (dict(restart_s=1e300), r"`restart_s` must be <= 1e\+09"),
    (dict(compute_s=1e300), r"`compute_s` must be <= 1e\+09"),
    (dict(save_s=math.inf), r"`save_s` must be finite"),
    (dict(n_steps=10**9, max_wall_factor=1e6), r"beyond the integer-microsecond clock"),
])
def test_1_times_beyond_the_clock_are_rejected_clearly(kw, match):
    with pytest.raises(sm.UsageValueError, match=match):
        TimelineConfig("ckpt", 1000, **kw)


@pytest.mark.parametrize("flag, value", [("--ckpt-period-s", "1e18"), ("--restart-s", "1e300"),
                                         ("--compute-s", "1e300")])
def test_1_cli_times_beyond_the_clock_are_one_line_errors(flag, value, capsys):
    assert main(["ttt", "--strategy", "ckpt", "--n-groups", "100", "--reps", "2", flag, value]) == 2
    err = capsys.readouterr().err
    assert _one_line(err) and f"`{flag}` must be <= 1e+09" in err  # the flag the user typed, not the keyword


# ----------------------------------------------------------------------------- 2. where parts come from
def test_2_a_version_bump_recomputes_and_stamps_the_right_version(tmp_path, monkeypatch):
    spec = SweepSpec.from_toml(SMALL)
    old = run_sweep(spec, tmp_path / "a.nc", workers=0, progress=False)
    import spare_mc.sweep.runner as sweep_mod
    import spare_mc.sweep.spec as spec_mod
    import spare_mc.sweep.tasks as tasks_mod
    monkeypatch.setattr(spec_mod, "__version__", "9.9.9")  # the digest's
    monkeypatch.setattr(tasks_mod, "__version__", "9.9.9")  # the dataset's stamp
    assert spec.digest() != old.attrs["spec_digest"]  # the version is part of the identity of the results
    computed = []
    real = sweep_mod.run_task
    monkeypatch.setattr(sweep_mod, "run_task", lambda *a, **k: computed.append(1) or real(*a, **k))
    new = run_sweep(spec, tmp_path / "a.nc", workers=0, progress=False, force=True)
    assert len(computed) == spec.n_tasks and new.attrs["spare_mc_version"] == "9.9.9"


def test_2_a_parts_folder_without_digest_is_never_adopted(tmp_path, capsys):
    spec7 = SweepSpec.from_toml(SMALL)
    run_sweep(spec7, tmp_path / "s7.nc", workers=0, progress=False)
    # an old-style flat parts folder (no digest) holding seed-7 results, next to a seed-8 output
    flat = tmp_path / "s8.nc.parts"
    flat.mkdir()
    src = tmp_path / "s7.nc.parts" / spec7.digest()
    for p in src.iterdir():
        (flat / p.name).write_bytes(p.read_bytes())
    spec8 = SweepSpec.from_toml(SMALL.replace("seed = 7", "seed = 8"))
    ds8 = run_sweep(spec8, tmp_path / "s8.nc", workers=0, progress=True)
    assert "carry no digest" in capsys.readouterr().err
    fresh = run_sweep(spec8, tmp_path / "fresh.nc", workers=0, progress=False)
    assert ds8.attrs["root_seed"] == "8" and np.array_equal(ds8["T"].values, fresh["T"].values)


def test_2_a_part_missing_a_variable_is_recomputed_not_nan(tmp_path):
    spec = SweepSpec.from_toml(SMALL)
    ref = run_sweep(spec, tmp_path / "a.nc", workers=0, progress=False)
    os.remove(tmp_path / "a.nc")
    folder = tmp_path / "a.nc.parts" / spec.digest()
    part = sorted(folder.glob("*.npz"))[0]
    with np.load(part) as z:
        kept = {k: z[k] for k in z.files if k != "T"}
    np.savez(part, **kept)
    again = run_sweep(spec, tmp_path / "a.nc", workers=0, progress=False)
    assert not np.isnan(again["T"].values).any() and np.array_equal(again["T"].values, ref["T"].values)


def test_2_writes_are_fsynced_and_use_unique_temporaries(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    ds = run_sweep(SweepSpec.from_toml(SMALL), tmp_path / "a.nc", workers=0, progress=False)
    # every part (3 tasks x 2 points) and the dataset: the file and its folder
    assert len(synced) >= 2 * (6 + 1)
    # two writers of one dataset never share a temporary file (both succeed, one result)
    import threading
    errors = []

    def write():
        try:
            for _ in range(5):
                write_dataset(ds, tmp_path / "same.nc")
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and open_dataset(tmp_path / "same.nc")["T"].shape == ds["T"].shape
    assert not list(tmp_path.glob(".same.nc.*"))


# ------------------------------------------------------------------------------------------- 3. --out
def test_3_out_of_another_kind_is_refused_before_any_work(tmp_path):
    spec = SweepSpec.from_toml(SMALL)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    with pytest.raises(sm.UsageValueError, match=r"already exists and is not a dataset of this sweep"):
        run_sweep(spec, notes, workers=0, progress=False)
    assert notes.read_text() == "my notes\n" and not (tmp_path / "notes.txt.parts").exists()
    other = run_sweep(SweepSpec.from_toml(SMALL.replace("seed = 7", "seed = 1")), tmp_path / "o.nc", workers=0,
                      progress=False)
    with pytest.raises(sm.UsageValueError, match=r"a dataset of another sweep or spare_mc version"):
        run_sweep(spec, tmp_path / "o.nc", workers=0, progress=False)
    assert open_dataset(tmp_path / "o.nc").attrs["root_seed"] == other.attrs["root_seed"] == "1"
    ds = run_sweep(spec, notes, workers=0, progress=False, force=True)  # --force replaces it
    assert open_dataset(notes).attrs["spec_digest"] == ds.attrs["spec_digest"]


def test_3_out_a_directory_fails_at_once_without_a_stray_file(tmp_path):
    (tmp_path / "spec.toml").write_text(SMALL)
    (tmp_path / "d").mkdir()
    t = time.perf_counter()
    proc = _cli("sweep", str(tmp_path / "spec.toml"), "--out", str(tmp_path / "d"), "--workers", "0")
    assert proc.returncode == 2 and _one_line(proc.stderr) and "is a directory" in proc.stderr
    assert time.perf_counter() - t < 30 and sorted(os.listdir(tmp_path)) == ["d", "spec.toml"]


def test_3_own_up_to_date_output_is_returned_without_work(tmp_path, monkeypatch):
    spec = SweepSpec.from_toml(SMALL)
    first = run_sweep(spec, tmp_path / "a.nc", workers=0, progress=False)
    import spare_mc.sweep.runner as sweep_mod
    monkeypatch.setattr(sweep_mod, "run_task", lambda *a, **k: pytest.fail("recomputed"))
    again = run_sweep(spec, tmp_path / "a.nc", workers=0, progress=False)
    assert np.array_equal(again["T"].values, first["T"].values)


# ------------------------------------------------------------------------------------ 4. compare's references
def test_4_compare_skips_domain_failures_with_the_reason(tmp_path):
    text = SMALL.replace("[grid]", "[grid]\nfailure_model = [\"uniform\", \"power\"]") \
        + "\n[fixed]\ndomain_mtbf_s = 1.0e5\nn_gpus = 40960\n"
    ds = run_sweep(SweepSpec.from_toml(text), tmp_path / "p.nc", workers=0, progress=False)
    res = compare_dataset(ds, alpha=1e-4)
    power = [r for r in res.rows if r.point["failure_model"] == "power"]
    uniform = [r for r in res.rows if r.point["failure_model"] == "uniform"]
    assert power and all(r.reference is None and "T counts events" in r.reason for r in power)
    assert uniform and all(r.reference is not None and r.consistent for r in uniform)
    assert res.tested == len(uniform)
    proc = _cli("compare", str(tmp_path / "p.nc"))
    assert proc.returncode == 0 and "not compared (2 points)" in proc.stdout and " NO" not in proc.stdout


# -------------------------------------------------------------------------------------- 5. resource limits
def test_5_memory_is_checked_before_allocating():
    with sm.set_options(max_memory=10_000_000):
        with pytest.raises(sm.UsageValueError, match=r"per-replication results of 1,000,000,000 replications "
                                                     r"would need about"):
            sm.wipeout_mc("cyclic", 10**9, n_groups=10, r=2, rng=0)
        with pytest.raises(sm.UsageValueError, match=r"a holder table of N="):
            sm.cyclic(10**7, 9)
        cfg = TimelineConfig("ckpt", 100, mtbf_s=1e-3, n_steps=10**6, max_wall_factor=2.0, jitter_sd=0.0)
        with pytest.raises(sm.UsageValueError, match=r"the failure trace of one job"):
            run_timeline(cfg, np.random.SeedSequence(0))


def test_5_a_growing_trace_stays_within_the_memory_budget():
    """A job whose failures outrun its first trace doubles it until it fits or the budget refuses it; the trace's
    peak (the old trace, the new draws, their blocks and the concatenation) must stay within the budget (a QA pass
    measured 12.0 GB peak against an 11.4 GB budget: each doubling was checked as the final size alone)."""
    import tracemalloc

    budget = 40_000_000
    cfg = TimelineConfig("ckpt", 60, n_steps=1, mtbf_s=1e-3, jitter_sd=0.0)  # a first trace of 393,216 draws
    tracemalloc.start()
    try:
        with sm.set_options(max_memory=budget):
            with pytest.raises(sm.UsageValueError, match=r"the failure trace of one job \([0-9,]+ draws: .*copies"):
                run_timeline(cfg, np.random.SeedSequence(0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= budget + 2_000_000, peak  # the trace's peak, plus a little of everything else


def test_5_mu_streams_its_replications(monkeypatch, capsys):
    """mu runs in chunks on one generator (memory O(chunk)): its numbers are those of the successive calls, exact
    integer sums give the same mean and sd as the concatenated replications, and the estimate agrees with the exact
    law."""
    import spare_mc.cli.handlers as handlers
    monkeypatch.setattr(handlers, "MU_CHUNK", 700)
    assert main(["mu", "--n-groups", "30", "--r", "3", "--reps", "5000", "--seed", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    gen = np.random.default_rng(np.random.SeedSequence(4))
    lay = sm.cyclic(30, 3)
    chunks = [sm.wipeout_mc(lay, k, rng=gen) for k in [700] * 7 + [100]]
    T = np.concatenate([c.T for c in chunks])
    est = sm.estimate_mean(T)
    assert out["mc_mean_T"] == est.mean and out["mc_sd_T"] == pytest.approx(est.sd, rel=1e-12)
    assert out["mc_masked_mean"] == np.concatenate([c.dead_before for c in chunks]).mean()
    assert out["mc_vs_exact_consistent"]
    monkeypatch.setattr(handlers, "MU_CHUNK", 10**6)  # up to one chunk: exactly one call
    assert main(["mu", "--n-groups", "30", "--r", "3", "--reps", "5000", "--seed", "4", "--json"]) == 0
    one = sm.wipeout_mc("cyclic", 5000, n_groups=30, r=3, rng=np.random.default_rng(np.random.SeedSequence(4)))
    assert json.loads(capsys.readouterr().out)["mc_mean_T"] == one.estimate("T").mean


@pytest.mark.parametrize("argv, match", [
    (["mu", "--n-groups", "1000000000000", "--r", "2"], r"`--n-groups` must be <= 2147483647"),
    (["mu", "--n-groups", "1e12", "--r", "2"], r"invalid int value: '1e12'"),
    (["mu", "--n-groups", "100000", "--r", "2", "--max-memory", "1K"], r"would need about"),
    (["mu", "--n-groups", "10", "--r", "2", "--max-memory", "lots"], r"`--max-memory` must be a size like"),
    # argparse read '-5G' as a flag ("expected one argument"); the size's own rule is named now
    (["mu", "--n-groups", "10", "--r", "2", "--max-memory", "-5G"], r"`--max-memory` must be a size like .*got '-5G'"),
])
def test_5_cli_resource_errors_are_one_line(argv, match, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    import re
    assert _one_line(err) and re.search(match, err)


def test_5_too_many_tasks_are_refused_with_the_count(tmp_path):
    text = SMALL.replace("r = [2, 3]", f"r = {list(range(2, 30))}").replace("n_groups = [40]", "n_groups = [40, 41]")
    spec = SweepSpec.from_toml(text.replace("block = 10", "block = 1"))
    with sm.set_options(max_tasks=100):
        with pytest.raises(sm.UsageValueError, match=r"has 1,680 tasks \(56 grid points x 30 blocks"):
            run_sweep(spec, tmp_path / "x.nc", workers=0, progress=False)
    assert not (tmp_path / "x.nc.parts").exists()


# ------------------------------------------------------------------------------------------ 7. OS errors
def test_7_os_and_input_errors_are_one_line(tmp_path):
    (tmp_path / "spec.toml").write_text(SMALL)
    (tmp_path / "afile").write_text("x")
    cases = [
        (("sweep", str(tmp_path / "spec.toml"), "--out", str(tmp_path / "afile" / "x.nc"), "--workers", "0"), 2,
         "is a file, not a folder"),
        (("sweep", str(tmp_path / "spec.toml"), "--out", "/proc/version/x.nc", "--workers", "0"), 2,
         "is a file, not a folder"),
        (("sweep", str(tmp_path / "spec.toml"), "--out", "/proc/spare-mc-nope/x.nc", "--workers", "0"), 1,
         "No such file or directory"),
        (("sweep", str(tmp_path)), 2, "is a directory; give a TOML file"),
        (("compare", str(tmp_path)), 2, "is a directory"),
    ]
    import xarray as xr
    xr.Dataset({"a": ("x", np.arange(3.0))}).to_netcdf(tmp_path / "foreign.nc", engine="scipy")
    cases.append((("compare", str(tmp_path / "foreign.nc")), 2, "is not a spare-mc sweep dataset"))
    cases.append((("plot", str(tmp_path / "foreign.nc")), 2, "is not a spare-mc sweep dataset"))
    for args, rc, text in cases:
        proc = _cli(*args)
        assert proc.returncode == rc and _one_line(proc.stderr) and text in proc.stderr, (args, proc.stderr)


def test_7_unreachable_scheduler_fails_fast(tmp_path):
    import socket
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "spec.toml").write_text(SMALL)
    t = time.perf_counter()
    proc = _cli("sweep", str(tmp_path / "spec.toml"), "--scheduler", f"tcp://127.0.0.1:{port}", "--out",
                str(tmp_path / "x.nc"))
    assert proc.returncode == 1 and _one_line(proc.stderr) and "cannot reach the dask scheduler" in proc.stderr
    assert time.perf_counter() - t < 20


def test_7_a_broken_stderr_pipe_does_not_abort_a_sweep(tmp_path):
    (tmp_path / "spec.toml").write_text(SMALL)
    r, w = os.pipe()
    os.close(r)  # nobody reads stderr
    proc = subprocess.run([sys.executable, "-m", "spare_mc.cli", "sweep", str(tmp_path / "spec.toml"), "--out",
                           str(tmp_path / "x.nc"), "--workers", "0"], stdout=subprocess.DEVNULL, stderr=w)
    os.close(w)
    assert proc.returncode == 0 and open_dataset(tmp_path / "x.nc")["T"].notnull().all()


def test_7_an_interrupt_exits_130_with_one_line(monkeypatch, capsys):
    import spare_mc.cli as cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, "mu", cli.COMMANDS["mu"]._replace(run=interrupted))
    assert main(["mu", "--n-groups", "10", "--r", "2"]) == 130
    err = capsys.readouterr().err
    assert _one_line(err) and "interrupted" in err


@pytest.mark.parametrize("signal_exc, code, word", [("KeyboardInterrupt", 130, "interrupted"),
                                                     ("_Terminated", 143, "terminated")])
def test_7_an_interrupt_inside_a_numba_call_is_one_line(monkeypatch, capsys, signal_exc, code, word):
    """A signal handler that raises while a numba kernel runs (SIGTERM during the exact law at N = 60,000) came out
    as "SystemError: CPUDispatcher(...) returned a result with an exception set" and "internal error: this is a
    bug": numba wraps the handler's exception. It is now the interrupt's one line and exit status."""
    import spare_mc.cli as cli

    def inside_numba(args):
        try:
            raise KeyboardInterrupt if signal_exc == "KeyboardInterrupt" else cli.Terminated
        except KeyboardInterrupt as exc:
            raise SystemError("CPUDispatcher(<function cyclic_survival>) returned a result with an exception "
                              "set") from exc

    monkeypatch.setitem(cli.COMMANDS, "mu", cli.COMMANDS["mu"]._replace(run=inside_numba))
    assert main(["mu", "--n-groups", "10", "--r", "2"]) == code
    err = capsys.readouterr().err
    assert _one_line(err) and f"spare-mc: {word}" in err and "bug" not in err


def test_7_a_bug_shows_as_one(monkeypatch, capsys):
    import spare_mc.cli as cli
    monkeypatch.setitem(cli.COMMANDS, "mu", cli.COMMANDS["mu"]._replace(run=lambda args: {}["boom"]))
    assert main(["mu", "--n-groups", "10", "--r", "2"]) == 70
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error: this is a bug in spare-mc" in err


# ------------------------------------------------------------------------------------------- 9. smaller
def test_9_one_checkpoint_period_rule(tmp_path):
    """A period shorter than the save time is a valid setting everywhere (a checkpoint after every step); the sweep
    uses exactly the configured factor (no clamp), and gives simulate_ttt's numbers."""
    cfg = TimelineConfig("ckpt", 24, n_steps=50, save_s=60.0, ckpt_period_s=1.0, jitter_sd=0.0, mtbf_s=1e6)
    run = simulate_ttt(cfg, 2, rng=0).runs[0]
    assert run.checkpoints == cfg.n_steps - 1
    text = """
[sweep]
name = "p"
quantity = "ttt"
reps = 2
seed = 3
[grid]
ckpt_period_factor = [0.01, 1.0]
[fixed]
strategy = "spare"
n_groups = 24
r = 3
n_steps = 60
jitter_sd = 0.0
"""
    ds = run_sweep(SweepSpec.from_toml(text), tmp_path / "p.nc", workers=0, progress=False)
    for f in (0.01, 1.0):
        c = TimelineConfig("spare", 24, r=3, n_steps=60, jitter_sd=0.0, ckpt_period_factor=f)
        res = simulate_ttt(c, 2, rng=3)
        np.testing.assert_array_equal(ds["checkpoints"].sel(ckpt_period_factor=f).values, res.values("checkpoints"))
        np.testing.assert_array_equal(ds["ttt_over_t0"].sel(ckpt_period_factor=f).values, res.values("ttt_over_t0"))
    with pytest.raises(sm.UsageValueError, match=r"give `ckpt_period_s` or `ckpt_period_factor`, not both"):
        TimelineConfig("ckpt", 24, ckpt_period_s=100.0, ckpt_period_factor=2.0)


@pytest.mark.parametrize("argv, match", [
    (["ttt", "--strategy", "spare", "--n-groups", "60", "--n-gpus", "-8"], r"`--n-gpus` must be >= 60"),
    (["ttt", "--strategy", "spare", "--n-groups", "60", "--placement", "strided"],
     r"`--placement` has no effect with --failures='system'"),
    (["ttt", "--strategy", "spare", "--n-groups", "60", "--failures", "rack"], r"`--domain-mtbf-s` .* is required"),
    (["ttt", "--strategy", "spare", "--n-groups", "60", "--failures", "per-gpu", "--placement", "strided"],
     r"`--placement` has no effect with --failures='per-gpu'"),
])

def test_9_failure_options_are_never_silently_ignored(argv, match, capsys):
    assert main(argv) == 2
    import re
    err = capsys.readouterr().err
    assert _one_line(err) and re.search(match, err)


def test_9_flag_names_leave_a_models_repr_alone(capsys):
    """The command line swaps keywords for flags in the library's errors, but not the fields of a repr."""
    assert main(["ttt", "--strategy", "spare", "--n-groups", "20", "--r", "3", "--failures", "per-gpu", "--n-gpus",
                 "160", "--calibration", "long_run", "--ckpt-policy", "hazard"]) == 2
    err = capsys.readouterr().err
    assert _one_line(err) and "`--failures` must be None" in err and ", shape=0.78, age_policy='renew')" in err


@pytest.mark.parametrize("msg, want", [
    ("give `a_b` or `c`, not both (got a_b=1.0, c=2.0)", "give `--a-b` or `--c`, not both (got --a-b=1.0, --c=2.0)"),
    ("c='x' needs a_b=1", "--c='x' needs --a-b=1"),
    ("`c`=True runs it", "`--c` runs it"),
    ("pass c=True, or not", "pass --c, or not"),
    ("got a_b=PerGPU(a_b=1.0, c=2)", "got --a-b=PerGPU(a_b=1.0, c=2)"),  # a repr's fields stay
    ("x (see f(c=1), a_b=2)", "x (see f(c=1), --a-b=2)"),
])
def test_flag_names_rename_keywords_but_not_a_reprs_fields(msg, want):
    """QA 2026-12-04: a keyword after a comma ("(got --ckpt-period-s=1800.0, ckpt_period_factor=2.0)") or at the
    start of a message, and a switch "`overhead`=True", kept their Python spelling."""
    from spare_mc.cli.parser import flag_names
    with pytest.raises(sm.UsageValueError) as info:
        with flag_names(a_b="--a-b", c="--c"):
            raise sm.UsageValueError(msg)
    assert str(info.value) == want


def test_qa_n_gpus_of_a_first_failure_per_gpu_timeline_changes_no_job(capsys):
    """QA 2026-12-04: per-GPU lifetimes calibrated to the first failure gave the same jobs for any --n-gpus (the
    timeline's unit is a whole group, whose first-failure law does not depend on G), yet the flag was accepted; it
    was then refused. Issue 37: refused, the flags `log fit` prints could not run, and an N that does not divide
    the default G (N = 256) could not run at all. --n-gpus is taken again -- it is the cluster's size, which N must
    divide, and it sets the per-GPU mean lifetime the result reports -- and the jobs stay the same for any G."""
    argv = ["ttt", "--strategy", "spare", "--n-groups", "20", "--r", "3", "--n-steps", "200", "--reps", "3",
            "--failures", "per-gpu", "--age-policy", "keep", "--json"]
    runs = []
    for g in (None, 160, 2000):
        assert main(argv + ([] if g is None else ["--n-gpus", str(g), "--calibration", "long_run"])) == 0
        runs.append(json.loads(capsys.readouterr().out)["ttt_over_t0"])
    assert len(set(runs)) == 3  # with long_run it matters
    # why it has no effect with first_failure: a group's first failure is the minimum of its G/N fresh GPUs, of mean
    # gpu_mtbf (G/N)^(-1/k) = system_mtbf N^(1/k), the same for every G
    group_mean = [sm.PerGPU.from_system_mtbf(300.0, g, 0.78).gpu_mtbf_s * (g / 20) ** (-1 / 0.78)
                  for g in (160, 2000, 600_000)]
    assert group_mean == pytest.approx([300.0 * 20 ** (1 / 0.78)] * 3, rel=1e-12)
    same = []
    for g in (None, 160, 2000):
        assert main(argv + ([] if g is None else ["--n-gpus", str(g)])) == 0
        d = json.loads(capsys.readouterr().out)
        same.append(d["ttt_over_t0"])
        if g is not None:
            assert d["config"]["topology"]["n_gpus"] == g and d["config"]["failures"]["gpu_mtbf_s"] == pytest.approx(
                sm.PerGPU.from_system_mtbf(300.0, g, 0.78).gpu_mtbf_s, rel=1e-12)
    assert len(set(same)) == 1  # with first_failure (the default) the jobs do not depend on G


def test_9_the_default_gpu_count_only_applies_where_it_is_used():
    """N beyond the default 600,000 GPUs is fine for the system-level process (n_gpus plays no role there)."""
    cfg = TimelineConfig("ckpt", 700_000, n_steps=5, allreduce_s=1.0)
    assert cfg.n_groups == 700_000 and sm.failure_from_spec("system", 700_000, mtbf_s=300.0, shape=0.78,
                                                             clocked=True) == (None, None)


def test_2_impossible_layouts_fail_before_any_work(tmp_path):
    text = """
[sweep]
name = "s"
quantity = "ttt"
reps = 2
seed = 1
[grid]
r = [3, 12]
[fixed]
strategy = "spare"
layout = "sidon"
n_groups = 40
"""
    with pytest.raises(sm.UsageValueError, match=r"grid point \(r=12\)"):
        run_sweep(SweepSpec.from_toml(text), tmp_path / "s.nc", workers=0, progress=False)
    assert not (tmp_path / "s.nc.parts").exists()


def test_9_intervals_respect_the_support_with_two_replications(capsys):
    res = simulate_ttt(TimelineConfig("spare", 60, r=3, n_steps=200, mtbf_s=200.0), 2, rng=1)
    for name in ("ttt_over_t0", "failures", "mean_s"):
        lo, hi = res.estimate(name).ci
        assert 0 <= lo <= res.estimate(name).mean <= hi
    lo, hi = res.estimate("availability").ci
    assert 0 <= lo <= hi <= 1
    assert main(["mu", "--n-groups", "600", "--r", "9", "--reps", "2", "--seed", "1", "--json", "--no-exact"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mc_ci95_T"][0] > 0
    est = sm.MCEstimate("x", mean=0.98, se=0.05, sd=0.07, n=2, support="unit")
    assert 0 < est.ci[0] < 0.98 < est.ci[1] < 1


def test_9_grid_values_repeat_by_value():
    with pytest.raises(sm.UsageValueError, match=r"`grid.mtbf_s` must not repeat values \(300 and 300.0 are one"):
        SweepSpec.from_toml(SMALL.replace("r = [2, 3]", "r = [2, 3]\nmtbf_s = [300, 300.0]"))
    SweepSpec.from_toml(SMALL.replace("r = [2, 3]", "r = [2, 3]\nlayout = [\"cyclic\", \"sidon\"]"))


def test_9_numpy_scalars_are_stored_as_python_numbers():
    cfg = TimelineConfig("spare", np.int64(60), r=np.int32(3), mtbf_s=np.float32(300.0), n_steps=np.int64(100))
    d = cfg.to_dict()
    assert type(d["n_groups"]) is int and type(d["r"]) is int and type(d["mtbf_s"]) is float
    json.dumps(d)  # serialisable as it is
    spec = SweepSpec("x", "wipeout", {"n_groups": [np.int64(40)], "r": [2]}, np.int64(10), 5, np.int64(3))
    assert type(spec.grid["n_groups"][0]) is int and type(spec.reps) is int and "40" in spec.to_toml()
    topo = sm.Topology(np.int64(960), np.int64(60))
    assert type(topo.n_gpus) is int and type(sm.PerGPU(np.float64(1e6)).gpu_mtbf_s) is float


# -------------------------------------------------------------------------------- consistency of the library
def test_one_rng_convention_through_api_cli_and_sweep(tmp_path, capsys):
    """Replication i at N draws from SeedSequence(seed, spawn_key=(N, i)) in simulate_ttt, spare-mc ttt and a sweep,
    whatever the strategy: one configuration, one set of numbers."""
    cfg = TimelineConfig("spare", 40, r=3, n_steps=150)
    api = simulate_ttt(cfg, 3, rng=5)
    assert api.runs[2] == run_timeline(cfg, np.random.SeedSequence(5, spawn_key=(40, 2)))
    assert simulate_ttt(cfg, 1, rng=5, first_rep=2).runs[0] == api.runs[2]
    assert main(["ttt", "--strategy", "spare", "--n-groups", "40", "--r", "3", "--n-steps", "150", "--reps", "3",
                 "--seed", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ttt_over_t0"] == api.estimate("ttt_over_t0").mean
    text = """
[sweep]
name = "c"
quantity = "ttt"
reps = 3
block = 2
seed = 5
[grid]
strategy = ["ckpt", "spare"]
[fixed]
n_groups = 40
n_steps = 150
"""
    spec = SweepSpec.from_toml(text.replace("n_steps = 150", "n_steps = 150\nr = 3").replace('"ckpt", ', ""))
    ds = run_sweep(spec, tmp_path / "c.nc", workers=0, progress=False)
    np.testing.assert_array_equal(ds["ttt_over_t0"].sel(strategy="spare").values, api.values("ttt_over_t0"))


def test_common_random_numbers_across_strategies():
    """The failure trace of replication i at N is the same for every strategy: with no redundancy and no jitter,
    CKPT-only and SPARe (r = 1 is not allowed; use its first failure) see the first failure at the same time."""
    base = dict(n_steps=300, jitter_sd=0.0, restart_s=10.0, mtbf_s=200.0, live_scaling=False)
    ck = simulate_ttt(TimelineConfig("ckpt", 40, **base), 3, rng=9)
    rp = simulate_ttt(TimelineConfig("rep", 40, r=2, **base), 3, rng=9)
    for a, b in zip(ck.runs, rp.runs):  # the first detection happens at the same step
        assert a.failures > 0 and b.failures > 0
    from spare_mc._lib.seeding import trace_seed_sequence
    from spare_mc.ttt.run import make_trace
    for strategy, r in (("ckpt", 1), ("rep", 2), ("spare", 4)):
        c = TimelineConfig(strategy, 40, r=r, **base)
        ss = trace_seed_sequence(np.random.SeedSequence(9), 40, 1).spawn(2)[0]
        gaps, vic = make_trace(c, np.random.default_rng(ss), 100)
        if strategy == "ckpt":
            first = (gaps.copy(), vic.copy())
        assert np.array_equal(gaps, first[0]) and np.array_equal(vic, first[1])


def test_removed_aliases_are_refused(capsys):
    """The aliases 0.2.0 deprecated for one release are gone in 0.3.0: an unknown keyword, no attribute, and
    ``--trials`` refused in one line naming ``--reps``."""
    cfg = TimelineConfig("ckpt", 24, n_steps=50)
    for call in (lambda: simulate_ttt(cfg, 2, seed=3),
                 lambda: sm.optimize_strategy("ckpt", 24, reps=2, confirm_reps=2, base={"n_steps": 50}, seed=1),
                 lambda: sm.main_table((24,), reps=2, confirm_reps=2, base={"n_steps": 50}, seed=1),
                 lambda: sm.wipeout_mc("cyclic", trials=50, n_groups=20, r=2, rng=1),
                 lambda: sm.overhead_mc("cyclic", trials=5, n_groups=20, r=2, rng=1),
                 lambda: sm.overhead_mc("cyclic", 5, n_groups=20, r=2, log_trials=1, rng=1)):
        with pytest.raises(TypeError, match=r"unexpected keyword argument '(seed|trials|log_trials)'"):
            call()
    w = sm.wipeout_mc("cyclic", 50, n_groups=20, r=2, rng=1)
    o = sm.overhead_mc("cyclic", 5, n_groups=20, r=2, log_reps=1, rng=1)
    assert w.reps == 50 and o.reps == 5 and o.rep_stats["T"].size == 5
    for res, name in ((w, "trials"), (o, "trials"), (o, "trial_stats")):
        with pytest.raises(AttributeError, match=name):
            getattr(res, name)
    for argv in (["mu", "--n-groups", "20", "--r", "2", "--trials", "100", "--json"],
                 ["overhead", "--n-groups", "20", "--r", "2", "--trials", "10"],
                 ["ttt", "--strategy", "ckpt", "--n-groups", "24", "--n-steps", "50", "--trials"]):
        assert main(argv) == 2
        cap = capsys.readouterr()
        assert cap.out == ""
        assert cap.err.strip() == "spare-mc: error: --trials was removed in spare-mc 0.3.0; use --reps"


def test_old_return_types_are_refused(tmp_path):
    """Indexing and unpacking the results that used to be dicts and tuples (one release with a warning, 0.2.x)
    and ``summary(level=)`` are gone in 0.3.0."""
    with pytest.raises(TypeError, match=r"not subscriptable"):
        sm.theory_ttt(TimelineConfig("ckpt", 600))["S"]
    with pytest.raises(TypeError, match=r"non-iterable"):
        total, mean_t, ratio = sm.exact_stack_bound_sum("cyclic", 4, 2)
    b = sm.exact_stack_bound_sum("cyclic", 4, 2)
    assert (b.sum_c, b.mean_T) == pytest.approx((11 / 3, 7 / 3))
    with pytest.raises(TypeError, match=r"not subscriptable"):
        b[2]
    ds = run_sweep(SweepSpec.from_toml(SMALL), tmp_path / "a.nc", workers=0, progress=False)
    res = compare_dataset(ds)
    assert len(res) == len(res.rows) == 2 and res.rows[0].consistent in (True, False)
    with pytest.raises(TypeError, match=r"not iterable"):
        list(res)
    o = sm.overhead_mc("cyclic", 5, n_groups=20, r=2, rng=1)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'level'"):
        o.summary(level=0.95)


def test_every_result_class_has_estimate():
    w = sm.wipeout_mc("cyclic", 20, n_groups=20, r=2, rng=1)
    o = sm.overhead_mc("cyclic", 20, n_groups=20, r=2, rng=1)
    t = simulate_ttt(TimelineConfig("ckpt", 24, n_steps=50), 2, rng=1)
    opt = sm.optimize_strategy("ckpt", 24, reps=2, confirm_reps=2, base={"n_steps": 50}, rng=1)
    for res, name in ((w, "T"), (o, "c_mean"), (t, "ttt_over_t0"), (opt, "ttt_over_t0")):
        assert isinstance(res.estimate(name), sm.MCEstimate)
    table = sm.main_table((24,), reps=2, confirm_reps=2, base={"n_steps": 50}, rng=1)
    assert isinstance(table.rows[0].estimate("reduction"), sm.MCEstimate)
    assert table.rows[0].estimate("spare.ttt_over_t0").n == 2
    assert json.loads(json.dumps(table.to_dict()))["schema_version"] == 2
    assert table.to_dict()["rows"][0]["n_groups"] == 24
    with pytest.raises(TypeError, match=r"not subscriptable"):  # the dict it was until 0.2.x
        table["rows"]


def test_usage_errors_share_one_marker_and_the_namespace_is_explicit():
    for call in (lambda: sm.cyclic(5, 9), lambda: sm.Topology(10, 3), lambda: TimelineConfig("x", 10),
                 lambda: sm.wipeout_mc("cyclic", "many", n_groups=10, r=2)):
        with pytest.raises(sm.UsageError):
            call()
    assert issubclass(sm.UsageValueError, ValueError) and issubclass(sm.UsageTypeError, TypeError)
    ns = {}
    exec("from spare_mc import *", ns)
    assert "stats" not in ns and "timeline" not in ns and "simulate_ttt" in ns
    assert set(sm.__all__) <= set(dir(sm))


def test_defaults_live_in_one_place():
    """Sweep parameters and CLI flags are derived from TimelineConfig's fields; the paper's numbers from one file."""
    from dataclasses import fields

    from spare_mc.cli.parser import build_parser
    from spare_mc.model.paper import paper_setting
    from spare_mc.sweep import PARAMETERS
    for f in fields(TimelineConfig):
        if f.metadata.get("sweep"):
            assert f.name in PARAMETERS["ttt"]
            if f.default is not None and not isinstance(f.default, type(fields)):
                assert PARAMETERS["ttt"][f.name] == f.default or f.name in ("strategy", "n_groups")
    help_text = build_parser()._subparsers._group_actions[0].choices["ttt"].format_help()
    for f in fields(TimelineConfig):
        if f.metadata.get("cli"):
            assert "--" + f.name.replace("_", "-") in help_text
    setting = paper_setting()
    cfg = TimelineConfig("spare", 600, r=8)
    assert (cfg.mtbf_s, cfg.shape, cfg.restart_s, cfg.save_s, cfg.compute_s, cfg.n_steps) == tuple(
        setting[k] for k in ("mtbf_s", "shape", "restart_s", "save_s", "compute_s", "n_steps"))
    assert sm.main_table.__module__ == "spare_mc.ttt.optimize"


def test_every_cli_option_says_what_it_means():
    from spare_mc.cli.parser import build_parser
    sub = build_parser()._subparsers._group_actions[0].choices
    for name, parser in sub.items():
        for action in parser._actions:
            if action.option_strings and action.dest != "help" and action.help != argparse.SUPPRESS:
                assert action.help and len(action.help) > 12, (name, action.option_strings)
    text = sub["ttt"].format_help()
    assert "full-system mean time between failures" in text and "(s)" in text
    for name in ("reproduce", "sensitivity", "calibrate", "dynamic", "repair"):  # the study sets it: not offered
        assert "--ckpt-period-factor" not in sub[name].format_help() and "--ckpt-period-factor" in text
    assert "first failure of a fresh system" in text


def test_studies_ship_as_package_data():
    from spare_mc.analyses.reproduce import main_table_settings, studies_dir
    names = sorted(p.name for p in studies_dir().glob("*.toml"))
    assert {"masked.toml", "overhead.toml", "ttt_spare.toml", "main_table.toml"} <= set(names)
    assert main_table_settings()["n_values"] == [200, 600, 1000]


def test_capped_runs_are_censored_in_sweeps_too(tmp_path):
    text = """
[sweep]
name = "cap"
quantity = "ttt"
reps = 2
seed = 1
[grid]
mtbf_s = [30.0, 3.0e6]
[fixed]
strategy = "ckpt"
n_groups = 600
n_steps = 2000
max_wall_factor = 5.0
jitter_sd = 0.0
"""
    ds = run_sweep(SweepSpec.from_toml(text), tmp_path / "cap.nc", workers=0, progress=False)
    capped = ds.sel(mtbf_s=30.0)
    assert (capped["finished"].values == 0).all() and np.allclose(capped["ttt_over_t0"].values, 5.0)
    assert float(capped["ttt_over_t0_mean"]) == pytest.approx(5.0) and "restricted mean" in ds.attrs["censoring"]
    assert (ds.sel(mtbf_s=3.0e6)["finished"].values == 1).all()


def test_warnings_policy_is_intact():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sm.estimate_mean([1.0, 2.0, 4.0])


# ---------------------------------------------------------------------------- what a fresh-eyes QA pass found
def test_qa_closed_stdout_and_full_disk():
    proc = subprocess.run(f"{sys.executable} -m spare_mc.cli mu --n-groups 20 --r 2 --reps 50 >&-", shell=True,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    if os.path.exists("/dev/full"):
        proc = subprocess.run(f"{sys.executable} -m spare_mc.cli mu --n-groups 20 --r 2 --reps 50 --json > /dev/full",
                              shell=True, capture_output=True, text=True)
        assert proc.returncode == 1 and _one_line(proc.stderr) and "cannot write the output" in proc.stderr


@pytest.mark.parametrize("argv, match", [
    (["mu", "--n-groups", "10", "--r", "3", "--trials", "100", "--reps", "200"], r"--trials was removed"),
    (["ttt", "--strategy", "ckpt", "--n-groups", "24", "--ckpt-period", "optimal", "--ckpt-period-factor", "2"],
     r"`--ckpt-period optimal` means the theory optimum"),
    (["ttt", "--strategy", "ckpt", "--n-groups", "24", "--compute-s", "1e-9"], r"`--compute-s` must be at least 1 "
                                                                             r"microsecond \(1e-06 s\), got"),
    (["ttt", "--strategy", "ckpt", "--n-groups", "24", "--jitter-sd", "0.3"], r"`--jitter-sd` must be < 0.2"),
    (["reproduce", "--n-gpus", "1200"], r"unrecognized arguments: --n-gpus"),
])
def test_qa_cli_contradictions_are_usage_errors(argv, match, capsys):
    import re
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.search(match, err), err


def test_qa_rng_errors_are_usage_errors():
    for bad in (-1, "a", 1.5, True):
        with pytest.raises(sm.UsageError, match=r"`rng` must be"):
            sm.wipeout_mc("cyclic", 5, n_groups=10, r=2, rng=bad)
        with pytest.raises(sm.UsageError, match=r"`rng` must be"):
            sm.random_holders(10, 3, rng=bad)


@pytest.mark.parametrize("bad", [(True,), [np.True_], [], (1, -2), np.random.RandomState(0), np.array([1, 2]),
                                 np.random.PCG64(1)])
def test_every_entry_point_takes_the_same_seeds(bad):
    """A bool inside a tuple was a seed to every entry point, and a RandomState, a BitGenerator or an array was one
    to the generator-based ones (wipe-out, layouts) but not to the SeedSequence-based ones (time to train): both
    kinds of entry point now take exactly the documented set."""
    with pytest.raises(sm.UsageTypeError, match=r"`rng` must be None, a non-negative int, a non-empty list"):
        sm.wipeout_mc("cyclic", 5, n_groups=10, r=2, rng=bad)
    with pytest.raises(sm.UsageTypeError, match=r"`rng` must be None, a non-negative int, a non-empty list"):
        sm.simulate_ttt(sm.TimelineConfig("ckpt", 24, n_steps=10), 2, rng=bad)


def test_seeds_given_as_a_list_or_a_numpy_int_are_one_seed_everywhere():
    a = sm.wipeout_mc("cyclic", 50, n_groups=10, r=2, rng=[3, 4])
    b = sm.wipeout_mc("cyclic", 50, n_groups=10, r=2, rng=(np.int64(3), 4))
    assert np.array_equal(a.T, b.T)
    cfg = sm.TimelineConfig("ckpt", 24, n_steps=10)
    assert np.array_equal(sm.simulate_ttt(cfg, 2, rng=np.uint8(5)).values("ttt_over_t0"),
                          sm.simulate_ttt(cfg, 2, rng=5).values("ttt_over_t0"))


def test_qa_reductions_stay_below_one_and_zero_spread_is_not_testable(tmp_path, capsys):
    est = sm.MCEstimate("ttt_reduction", mean=0.57, se=0.25, sd=0.35, n=2, support="at_most_one")
    lo, hi = est.ci
    assert lo < 0.57 < hi < 1
    assert main(["reproduce", "--table", "main", "--n-steps", "100", "--reps", "2", "--confirm-reps", "2",
                 "--n-values", "8", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["ttt_reduction_ci95"][1] < 1
    ds = run_sweep(SweepSpec.from_toml(SMALL.replace("reps = 30", "reps = 2").replace("block = 10", "block = 2")
                                       .replace("n_groups = [40]", "n_groups = [3]").replace("r = [2, 3]", "r = [3]")),
                   tmp_path / "z.nc", workers=0, progress=False)
    res = compare_dataset(ds)  # N = r = 3: T is always 3, no spread
    assert res.tested == 0 and "not testable" in res.rows[0].reason


def test_qa_mu_with_replacement_says_what_masked_means(capsys):
    assert main(["mu", "--n-groups", "10", "--r", "3", "--reps", "200", "--with-replacement", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "not T - 1" in out["T_definition"]
    assert main(["overhead", "--n-groups", "20", "--r", "1", "--reps", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)  # strict JSON: no NaN
    assert out["hk_fixed_rate"] is None and out["moves_mean"] is None  # 0 of 0 calls: undefined, not 0


def test_qa_plot_never_overwrites_what_it_did_not_write(tmp_path, capsys):
    ds = run_sweep(SweepSpec.from_toml(SMALL), tmp_path / "a.nc", workers=0, progress=False)
    (tmp_path / "b").mkdir()
    run_sweep(SweepSpec.from_toml(SMALL.replace("seed = 7", "seed = 8")), tmp_path / "b" / "a.nc", workers=0,
              progress=False)
    assert main(["plot", str(tmp_path / "a.nc"), str(tmp_path / "b" / "a.nc"), "--out", str(tmp_path / "f")]) == 2
    assert "two datasets are named 'a'" in capsys.readouterr().err
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "a.png").write_text("my own notes\n")
    assert main(["plot", str(tmp_path / "a.nc"), "--out", str(tmp_path / "f")]) == 2
    assert "is not a figure written by spare-mc" in capsys.readouterr().err
    assert (tmp_path / "f" / "a.png").read_text() == "my own notes\n"
    assert main(["plot", str(tmp_path / "a.nc"), "--out", str(tmp_path / "f"), "--force"]) == 0
    assert main(["plot", str(tmp_path / "a.nc"), "--out", str(tmp_path / "f")]) == 0  # its own figure: replaced
    capsys.readouterr()
    _ = ds


def test_qa_reproduce_refuses_duplicate_studies_and_foreign_files(tmp_path, capsys):
    studies = tmp_path / "st"
    studies.mkdir()
    (studies / "one.toml").write_text(SMALL)
    (studies / "two.toml").write_text(SMALL.replace("seed = 7", "seed = 99"))
    assert main(["reproduce", "--studies", str(studies), "--out-dir", str(tmp_path / "o"), "--quick",
                 "--n-values", "8", "--reps", "2", "--confirm-reps", "2"]) == 2
    assert "two studies in" in capsys.readouterr().err
    (studies / "two.toml").unlink()
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "main_table.json").write_text("{\"mine\": 1}\n")
    assert main(["reproduce", "--studies", str(studies), "--out-dir", str(tmp_path / "o"), "--quick",
                 "--n-values", "8", "--reps", "2", "--confirm-reps", "2"]) == 2
    assert "is not a main table written by spare-mc" in capsys.readouterr().err
    assert json.loads((tmp_path / "o" / "main_table.json").read_text()) == {"mine": 1}


def _tiny_studies(folder):
    """A studies folder that runs in seconds: one wipe-out sweep, a main table at N = 8, a one-cell phase map."""
    folder.mkdir()
    (folder / "one.toml").write_text(SMALL)
    (folder / "main_table.toml").write_text("[main_table]\nn_values = [8]\nreps = 2\nconfirm_reps = 2\n")
    (folder / "phase_map.toml").write_text('[phase]\nn_gpus = [16384]\nsave_s = [1.0]\nrestart_s = [60.0]\n'
                                           'kinds = ["today"]\nn_steps = 300\nreps = 2\nconfirm_reps = 3\n')
    return folder


def test_qa_full_reproduce_keeps_one_setting_per_folder(tmp_path, capsys):
    """QA 2026-12-03: the full reproduce applied --seed and the timeline flags to the main table alone, so one
    folder mixed two settings. The seed now applies to every study; a timeline flag, a preset or a ``base`` is
    refused (they apply to the main table only: --table main)."""
    from spare_mc.analyses.reproduce import reproduce

    studies, out = _tiny_studies(tmp_path / "st"), tmp_path / "o"
    for argv, flag in ((["--layout", "sidon"], "--layout"), (["--n-steps", "50"], "--n-steps"),
                       (["--failures", "rack", "--domain-mtbf-s", "1e8"], "--failures"),
                       (["--preset", "paper-n600"], "--preset")):
        assert main(["reproduce", "--studies", str(studies), "--out-dir", str(out), *argv]) == 2
        err = capsys.readouterr().err
        assert _one_line(err) and f"`{flag}` applies to the main table only: add --table main" in err
    assert not out.exists()  # refused before any work
    with pytest.raises(sm.UsageValueError, match=r"`base` applies to the main table only \(table='main'\)"):
        reproduce(studies=studies, out_dir=out, base={"layout": "sidon"})
    with pytest.raises(sm.UsageValueError, match=r"`rng` must be >= 0"):
        reproduce(studies=studies, out_dir=out, rng=-1)
    assert main(["reproduce", "--studies", str(studies), "--out-dir", str(out), "--workers", "0", "--json"]) == 0
    capsys.readouterr()

    def seeds():
        return (open_dataset(out / "h.nc").attrs["root_seed"],
                json.loads((out / "main_table.json").read_text())["settings"]["rng_root"],
                json.loads((out / "phase.json").read_text())["settings"]["seed"])

    assert seeds() == ("7", "0", 0)  # each spec's own seed
    again = ["reproduce", "--studies", str(studies), "--out-dir", str(out), "--workers", "0", "--seed", "5", "--json"]
    assert main(again) == 2  # another setting into the folder (issue 36): refused, the first kept
    err = capsys.readouterr().err
    assert _one_line(err) and "another setting (" in err and "; seed: 0 -> 5;" in err and "--force" in err
    assert seeds() == ("7", "0", 0)
    with pytest.warns(UserWarning, match=r"moved the results of another setting \(.*seed: 0 -> 5"):
        assert main([*again, "--force"]) == 0  # moved aside (and said so), then run
    capsys.readouterr()
    assert seeds() == ("5", "5", 5)  # every study of the folder at the given seed


@pytest.mark.parametrize("argv, match", [
    (["reproduce", "--table", "main", "--out-dir", "x"], r"`--out-dir` has no effect with --table main"),
    (["reproduce", "--table", "main", "--workers", "2"], r"`--workers` has no effect with --table main"),
    (["reproduce", "--table", "main", "--scheduler", "tcp://127.0.0.1:1"],
     r"`--scheduler` has no effect with --table main"),
    (["reproduce", "--table", "main", "--force"], r"`--force` has no effect with --table main"),
    (["repair", "--repair", "fixed"], r"`--repair` must not be given: the study sets it"),
    (["dynamic", "--shape", "0.9"], r"`--shape` must not be given: the study sets it"),
    (["sensitivity", "--ckpt-period-factor", "2"], r"`--ckpt-period-factor` must not be given"),
    (["sweep", "masked", "--workers", "1000"], r"`--workers`=1000 local worker processes is more than 4 per CPU"),
    (["repair", "--workers", "1000"], r"`--workers`=1000 local worker processes"),
    (["reproduce", "--table", "phase", "--workers", "1000"], r"`--workers`=1000 local worker processes"),
])
def test_qa_2026_12_03_flags_that_would_be_ignored_or_unbounded(argv, match, capsys):
    """QA 2026-12-03: flags --table main ignored (an unreachable scheduler exited 0), errors that named the Python
    API (`base`, force=True), and an unbounded number of local workers (1,000 processes for 8 tasks)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert _one_line(err) and re.search(match, err), err
    assert "`base`" not in err and "force=True" not in err


def test_qa_errors_about_foreign_files_name_the_flag(tmp_path, capsys):
    out = tmp_path / "x.nc"
    out.write_text("not mine")
    assert main(["sweep", "masked", "--quick", "--workers", "0", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "(pass --force to replace it, or choose another `--out`)" in err and "force=True" not in err
    with pytest.raises(sm.UsageValueError, match=r"pass force=True to replace it, or choose another `out`"):
        run_sweep(SweepSpec.from_toml(SMALL), out, workers=0, progress=False)
    with pytest.raises(ResourceLimitError, match=r"`workers`=1000 local worker processes .* \(`scheduler`\)"):
        run_sweep(SweepSpec.from_toml(SMALL), tmp_path / "y.nc", workers=1000, progress=False)


# --------------------------------------------------------------------- a new user's bad input (QA, 2026-11-30)
def _qa_cases():
    """(call, error, message): bad input to the correlated-failure tools that used to escape as a bare TypeError, a
    numpy memory error, an error naming another parameter, or be silently ignored."""
    from spare_mc._lib.resources import ResourceLimitError
    from spare_mc.analyses.domains import DomainStudy, run_domain_study
    from spare_mc.logs.failure_log import read_failure_log
    from spare_mc.logs.replay import replay_log
    from spare_mc.logs.synthetic import example_log_path
    from spare_mc.model.failures import failure_model_from_dict
    from spare_mc.logs.replay_ttt import replay_log_ttt
    topo = sm.Topology(256, 32, nodes_per_rack=4, racks_per_power=2)
    log = lambda: read_failure_log(example_log_path(), topo)  # noqa: E731
    return [
        (lambda: sm.Topology(64, 8).domain_units(3), TypeError, r"`levels` must be a level name or a sequence"),
        (lambda: sm.Topology.from_dict({**sm.Topology(64, 8).to_dict(), "foo": 1}), ValueError,
         r"unknown keys \['foo'\] in a Topology dict; expected some of \['gpus_per_node'"),
        (lambda: failure_model_from_dict({"model": "per_gpu", "gpu_mtbf_s": 1e6, "bogus": 1}), ValueError,
         r"unknown keys \['bogus'\] in failure model 'per_gpu'"),
        # a second QA pass: the constructor's TypeError, an unhashable model name, a dataclass TypeError
        (lambda: failure_model_from_dict({"model": "per_gpu"}), ValueError,
         r"failure model 'per_gpu' needs 'gpu_mtbf_s', missing from \{'model': 'per_gpu'\}"),
        (lambda: failure_model_from_dict({"model": ["x"]}), ValueError, r"unknown failure model \['x'\]"),
        (lambda: sm.sample_events(sm.PerGPU(100.0), sm.Topology(64, 8), rng=0).killed(-1), ValueError,
         r"`e` must be >= 0, got e=-1"),  # the empty array before
        (lambda: sm.Topology(64, 8).groups_of(np.array([-1, 3])), ValueError,
         r"`gpus` must lie in \[0, 64\), got values in \[-1, 3\]"),  # group -1 before
        (lambda: sm.Topology(64, 8).groups_of([0.5]), TypeError, r"`gpus` must hold integer GPU indices"),
        (lambda: sm.optimize_strategy("spare", 20, base={"n_step": 100}), ValueError,
         r"unknown keys \['n_step'\] in `base` \(TimelineConfig fields\) \(did you mean 'n_steps'\?\)"),
        (lambda: sm.Topology(100_000_000_000, 8).domain_groups("rack"), ResourceLimitError,
         r"the rack domains of a topology of 100,000,000,000 GPUs would need about"),
        (lambda: replay_log(log(), sm.cyclic(32, 2), r=5), ValueError,
         r"`r` = 5 disagrees with the given layout's r = 2"),
        (lambda: DomainStudy.quick(n_values=200), TypeError, r"`n_values` must be a sequence, got int"),
        (lambda: DomainStudy.quick(mtbf_s=-1), ValueError, r"`mtbf_s` must be > 0"),
        (lambda: DomainStudy.quick(shape=0), ValueError, r"`shape` must be > 0"),
        (lambda: DomainStudy.quick(seed=-1), ValueError, r"`seed` must be >= 0"),
        (lambda: run_domain_study(DomainStudy.quick(), progress=True), TypeError,
         r"`progress` must be a function of one line of text \(or None\), got bool"),
        (lambda: replay_log_ttt(TimelineConfig("ckpt", 32), log(), starts_s=["abc"]), TypeError,
         r"`starts_s` must be a sequence of real numbers"),
        (lambda: replay_log_ttt(TimelineConfig("ckpt", 32), log(), starts_s=[True]), TypeError,
         r"`starts_s` must be a sequence of real numbers .* got dtype bool"),
        (lambda: sm.stats.estimate_mean([1.0, 2.0, 3.0], level=2), ValueError, r"`level` must be < 1"),
        (lambda: sm.PerGPU.from_system_mtbf(1e300, 600_000, 0.5), ValueError,
         r"`system_mtbf_s`=1e\+300 at n_gpus=600000 and shape=0.5 \(first_failure\) gives a per-GPU mean lifetime "
         r"beyond floating point"),
    ]


@pytest.mark.parametrize("case", range(14))
def test_qa_bad_input_to_the_domain_and_log_tools_is_named(case):
    call, exc, match = _qa_cases()[case]
    with pytest.raises(exc, match=match):
        call()


def test_qa_log_fit_flags_carry_the_domain_sizes_of_the_log(tmp_path, capsys):
    """`spare-mc log fit` prints `spare-mc ttt` flags; ttt built the default topology's domains, so a log on other
    sizes got a note beside the domain flags. ttt now takes the domain sizes (issue 37), and the domain flags carry
    the ones that differ from its defaults: they run as printed, on the log's own domains."""
    from spare_mc.logs.failure_log import write_failure_log
    from spare_mc.logs.synthetic import synthetic_log
    topo = sm.Topology(2048, 32, nodes_per_rack=4, racks_per_power=2)
    write_failure_log(tmp_path / "p.csv", synthetic_log(topo, {"gpu": (0.8, 3e6), "power": (0.8, 2e6)}, 3e7, rng=1))
    args = ["log", "fit", str(tmp_path / "p.csv"), "--n-gpus", "2048", "--n-groups", "32", "--nodes-per-rack", "4",
            "--racks-per-power", "2", "--levels", "gpu,power"]
    assert main([*args, "--shared-shape", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["spare_mc_flags"]["power"]["racks_per_power"] == 2 and "flags_note" not in d
    assert "racks_per_power" not in d["spare_mc_flags"]["per-gpu"]  # the per-GPU model has no domains
    assert main(["ttt", "--strategy", "spare", "--n-groups", "32", *d["ttt_args"]["power"], "--n-steps", "20",
                 "--reps", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["topology"]["racks_per_power"] == 2


def test_qa_a_flag_given_twice_says_which(capsys):
    """--reps twice names --reps twice; --reps with --trials (its alias until 0.3.0) names the removed flag."""
    base = ["ttt", "--strategy", "ckpt", "--n-groups", "8", "--n-steps", "20"]
    assert main([*base, "--reps", "2", "--reps", "3"]) == 2
    assert "give --reps once, got --reps twice" in capsys.readouterr().err
    assert main([*base, "--reps", "2", "--trials", "3"]) == 2
    assert "--trials was removed in spare-mc 0.3.0; use --reps" in capsys.readouterr().err


def test_unknown_keys_are_named_with_the_closest_known_one():
    """One rule and one message for every dict or file whose keys are checked (topologies, failure models, sweep
    specs, presets, target tables, study files): the unknown names, the place, a close known name when there is one,
    and every known name."""
    from spare_mc._lib.validation import reject_unknown

    reject_unknown({"a": 1}, ["a", "b"], "x")  # known keys pass
    reject_unknown({}, [], "x")
    with pytest.raises(sm.UsageValueError) as e:
        reject_unknown({"reps": 1, "seeed": 2}, ["reps", "seed", "block"], "[sweep]")
    assert str(e.value) == "unknown keys ['seeed'] in [sweep] (did you mean 'seed'?); expected some of ['block', " \
                           "'reps', 'seed']"
    with pytest.raises(sm.UsageValueError) as e:
        reject_unknown({"colr": 1, "zzz": 2, 3: 4}, ["color"], "the preset p.json")
    assert str(e.value) == "unknown keys ['3', 'colr', 'zzz'] in the preset p.json (did you mean 'color' for " \
                           "'colr'?); expected some of ['color']"
    with pytest.raises(sm.UsageValueError, match=r"unknown tables \['grd'\] in the sweep spec \(did you mean 'grid'"):
        sm.sweep.SweepSpec.from_toml('[sweep]\nname = "a"\nquantity = "wipeout"\nreps = 3\nseed = 1\n[grd]\nr = [2]\n')


@pytest.mark.parametrize("call, exc, match", [
    (lambda: sm.main_table(()), ValueError, r"`n_values` must hold at least one N"),
    (lambda: sm.main_table(1), ValueError, r"`n_values` must be >= 2, got n_values=1"),  # one int is one N
    (lambda: sm.main_table("30"), TypeError, r"`n_values` must be a sequence of group counts N, got '30'"),
    (lambda: sm.main_table([30, 30]), ValueError, r"`n_values` must be distinct, got 30 twice"),
    (lambda: sm.main_table([30], progress=5), TypeError, r"`progress` must be a callable"),
    (lambda: sm.main_table([30], base=3), TypeError, r"`base` must be a dict"),
    (lambda: sm.optimize_strategy("spare", 30, period_factors=()), ValueError, r"an empty grid simulates nothing"),
    (lambda: sm.optimize_strategy("spare", 30, period_factors="15"), TypeError, r"`period_factors` must be a seq"),
    (lambda: sm.optimize_strategy("spare", 30, period_factors=(1, -1)), ValueError, r"distinct positive numbers"),
    (lambda: sm.optimize_strategy("spare", 30, period_factors=(1, 1)), ValueError,
     r"`period_factors` must be distinct, got 1.0 twice"),
    (lambda: sm.optimize_strategy("spare", 30, period_factors=(1, "x")), TypeError, r"`period_factors\[1\]`"),
    (lambda: sm.optimize_strategy("spare", 30, r_range=(3,)), TypeError, r"`r_range` must be a pair"),
    (lambda: sm.optimize_strategy("spare", 30, r_range=(4, 2)), ValueError, r"`r_range\[1\]` must be >= 4"),
    (lambda: sm.optimize_strategy("spare", 30, base=[1]), TypeError, r"`base` must be a dict"),
])
def test_qa_optimizer_arguments_are_checked_before_any_run(call, exc, match):
    """A QA pass: an empty period grid returned a 'best' point without simulating anything, '15' was read as the
    factors 1 and 5, a repeated N gave duplicate rows, and the rest were raw unpack or type errors."""
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize("cmd, rule", [("sensitivity", ">= 4"), ("dynamic", ">= 2"), ("repair", ">= 2")])
def test_qa_study_commands_name_the_flag_not_the_keyword(cmd, rule, capsys):
    """The studies' Python keyword is n_values; their command line says --n-groups, and so do its errors."""
    assert main([cmd, "--n-groups", "1"]) == 2
    assert f"`--n-groups` must be {rule}, got --n-groups=1" in capsys.readouterr().err


@pytest.mark.parametrize("argv, given", [(["dynamic", "--quick", "--n-groups", "16", "--shapes", "0.7"],
                                          "--n-groups, --shapes"),
                                         (["repair", "--quick", "--repair-times", "60"], "--repair-times")])
def test_qa_quick_refuses_the_flags_it_would_override(argv, given, capsys):
    """--quick sets its own sizes; a flag given next to it was silently dropped (a QA pass got N = 200 for
    --n-groups 16)."""
    assert main(argv) == 2
    assert f"so {given} would be ignored: drop --quick or {given}" in capsys.readouterr().err


def test_qa_cli_warnings_are_one_line(monkeypatch, capsys):
    """A library warning on the command line reads like an error: one line, without Python's file:line and source
    line (here exact_wipeout's notice of a long run, its threshold lowered so that a quick case crosses it)."""
    import warnings

    from spare_mc.theory import exact as ex
    monkeypatch.setattr(ex, "_WARN_AFTER_S", 1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        # print to stderr through formatwarning, as Python does outside pytest (restored on exit)
        warnings.showwarning = lambda m, c, f, n, file=None, line=None: sys.stderr.write(
            warnings.formatwarning(m, c, f, n, line))
        assert main(["mu", "--n-groups", "30", "--r", "3", "--reps", "100", "--seed", "1"]) == 0
    err = capsys.readouterr().err
    assert "spare-mc: warning: exact_wipeout('cyclic', N=30, r=3) runs about" in err and ".py:" not in err


def test_qa_a_truncated_or_missing_dataset_says_so(tmp_path, capsys):
    """A file cut short read as raw numpy text ("cannot reshape array of size 0 ..."), and a missing one as "not a
    spare-mc sweep dataset: dataset file not found"; each now says what is wrong."""
    import xarray as xr

    from spare_mc.sweep.storage import open_dataset, write_dataset

    write_dataset(xr.Dataset({"x": ("i", np.arange(2000.0))}), tmp_path / "full.nc")
    (tmp_path / "cut.nc").write_bytes((tmp_path / "full.nc").read_bytes()[:3000])
    with pytest.raises(sm.UsageValueError, match=r"it starts as NetCDF, so it is most likely truncated"):
        open_dataset(tmp_path / "cut.nc")
    assert main(["plot", str(tmp_path / "missing.nc"), "--out", str(tmp_path / "f")]) == 2
    assert capsys.readouterr().err.strip() == f"spare-mc: error: dataset file not found: {tmp_path / 'missing.nc'}"


def test_one_replication_gives_the_value_with_an_unknown_spread_in_every_simulation_result():
    """wipeout_mc and overhead_mc results raised an error naming `values` (an argument the caller never passed) on
    one replication, while a time-to-train result gave the value with NaN spread, as documented: all three now do
    the latter, and the value is that replication's own."""
    w = sm.wipeout_mc("cyclic", 1, n_groups=10, r=2, rng=1)
    est = w.estimate("masked")
    assert (est.n, est.mean) == (1, float(w.dead_before[0])) and math.isnan(est.se) and all(map(math.isnan, est.ci))
    o = sm.overhead_mc("cyclic", 1, n_groups=10, r=2, rng=1)
    for name, (num, den, _) in sm.mc.reorder.ESTIMATORS.items():
        one = o.estimate(name)
        assert one.n == 1 and math.isnan(one.se) and math.isnan(one.sd)
        expect = o._column(num)[0] / (1.0 if den is None else o._column(den)[0])
        assert one.mean == pytest.approx(expect)
    t = sm.simulate_ttt(sm.TimelineConfig("ckpt", 24, n_steps=10), 1, rng=5).estimate("ttt_over_t0")
    assert t.n == 1 and math.isnan(t.se)
    with pytest.raises(sm.UsageValueError, match=r"`level` must be < 1"):
        o.estimate("masked", level=2)


@pytest.mark.parametrize("argv, rule", [
    (["repair", "--repair-times", "1,1"], "`--repair-times` must be distinct, got 1.0 twice in '1,1'"),
    (["repair", "--n-groups", "600,600"], "`--n-groups` must be distinct, got 600 twice in '600,600'"),
    (["repair", "--repair-times", "300,nan"], "`--repair-times` must be finite"),
    (["repair", "--repair-times", "300,inf"], "`--repair-times` must be finite"),
])
def test_qa_repair_refuses_repeated_or_infinite_values_before_any_run(argv, rule, capsys):
    """A third QA pass: repeated values started the whole study (one variant ran twice, or was merged while the
    settings recorded both) and nan passed the up-front check, to fail once the study had started."""
    assert main(argv) == 2
    assert rule in capsys.readouterr().err


def test_qa_third_pass_bad_inputs_are_named(tmp_path):
    """A third QA pass (2026-12-03): a log window beyond the integer-microsecond clock (accepted, then an
    OverflowError in replay_log_ttt), a non-path to write_failure_log (Python's TypeError), an unknown estimate
    name on a short log (blamed on the epochs), replica sets of equal size (called 'N not divisible by r'), a
    Layout object where exact_wipeout takes a kind name (its whole repr in the message) and a mean failure count
    above N (a bound for an impossible system)."""
    from spare_mc.logs.failure_log import failure_log_from_arrays, write_failure_log
    from spare_mc.logs.replay import replay_log
    topo = sm.Topology(64, 8)
    with pytest.raises(ValueError, match=r"`duration_s` \(the observation window end\) must be <= 5.76461e\+11 s"):
        failure_log_from_arrays([1.0], ["gpu"], [3], topo, duration_s=1e15)
    (tmp_path / "far.csv").write_text("# duration_s: 1e300\ntime_s,level,unit\n1.0,gpu,3\n")
    with pytest.raises(ValueError, match=r"far.csv: metadata `duration_s` .* must be <= 5.76461e\+11 s"):
        sm.read_failure_log(tmp_path / "far.csv", topo)
    log = failure_log_from_arrays([1.0], ["gpu"], [3], topo, duration_s=10.0)
    with pytest.raises(TypeError, match=r"`path` must be a path, got int"):
        write_failure_log(5, log)
    with pytest.raises(ValueError, match=r"`name` must be one of \['T', 'masked', 'time_s'\]"):
        replay_log(log, "cyclic", r=2).estimate("bogus")
    with pytest.raises(ValueError, match=r"at least 2 complete epochs"):
        replay_log(log, "cyclic", r=2).estimate("T")
    with pytest.raises(ValueError, match=r"a ReplicaSets object is not one: .* pass block\(N, r\)"):
        sm.overhead_mc(sm.ReplicaSets(30, 3), 10, rng=1)
    with pytest.raises(ValueError, match=r"sizes \[3, 4\]\) does not reorder"):
        sm.overhead_mc(sm.ReplicaSets(31, 3), 10, rng=1)
    with pytest.raises(TypeError, match=r"`layout` must be a layout kind name, .* got a Layout \(kind 'cyclic': pass"):
        sm.exact_wipeout(sm.cyclic(10, 3), 10, 3)
    with pytest.raises(ValueError, match=r"`mu` \(the mean failures to a wipe-out\) must be <= N = 10"):
        sm.overhead_lower_bound(10, 3, mu=50)
    assert sm.overhead_lower_bound(10, 3, mu=10) > 0


@pytest.mark.parametrize("argv", [["mu", "--n-groups", "2000000", "--r", "3", "--reps", "10"],
                                  ["overhead", "--n-groups", "1000000", "--r", "3", "--reps", "2"]])
def test_qa_an_exact_law_of_hours_is_refused_before_the_monte_carlo(argv, capsys):
    """A third QA pass: `mu` at N = 2,000,000 ran its Monte Carlo, then said 'about 108000 s' and, from the exact
    module, 'roughly 150 min' (two estimates), then ran the exact law in a call SIGTERM could not stop. Now one
    estimate (spare_mc.theory.exact.exact_cost) and a refusal up front that names --no-exact."""
    from spare_mc.theory.exact import exact_cost
    assert main(argv) == 2
    err = capsys.readouterr().err
    n = int(argv[2])
    assert f"would take roughly {exact_cost('cyclic', n, 3)[2]} on one core" in err and "pass --no-exact" in err
