"""Compiling a first run's kernels ahead, in parallel processes (spare_mc.sweep.warm)."""

import os
import pathlib
import subprocess
import sys

import pytest

import spare_mc
from spare_mc.sweep import warm
from spare_mc.sweep.spec import SweepSpec
from spare_mc.sweep.tasks import kernel_key

_SPEC = """
[sweep]
name = "tiny"
quantity = "wipeout"
reps = 2
seed = 5

[grid]
n_groups = [12, 16]
r = [2, 3]
layout = ["cyclic", "block"]
"""


def test_families_are_dealt_to_the_least_loaded_process():
    fam = {"wipeout": ["a"], "ttt": ["b"], "overhead": ["c"]}
    assert warm._split(fam, 2) == [["ttt"], ["overhead", "wipeout"]]
    assert warm._split(fam, 1) == [["ttt", "overhead", "wipeout"]]
    assert warm._split(fam, 3) == [["ttt"], ["overhead"], ["wipeout"]]


def test_nothing_is_started_when_every_family_is_cached(monkeypatch):
    monkeypatch.setattr(warm, "_cached", lambda q, specs: True)

    def no_process(*a, **k):
        raise AssertionError("a warm-up process was started although every kernel is cached")
    monkeypatch.setattr(warm.subprocess, "Popen", no_process)
    assert warm.warm_up([SweepSpec.from_toml(_SPEC)]) == 0.0


def test_a_failed_warm_up_is_reported_and_the_run_goes_on(monkeypatch, tmp_path):
    """A process that fails costs one line with its last message; nothing is raised (the run compiles what it
    needs itself)."""
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'Traceback ...' >&2\necho 'ImportError: no numba here' >&2\nexit 3\n")
    broken.chmod(0o755)
    monkeypatch.setattr(warm, "_cached", lambda q, specs: False)
    monkeypatch.setattr(warm.sys, "executable", str(broken))
    lines = []
    assert warm.warm_up([SweepSpec.from_toml(_SPEC)], log=lines.append) > 0
    assert lines[0].startswith("spare-mc: compiling the kernels of a first run on this machine (wipeout) in 1 "
                               "process: about 14 s")
    assert lines[1:] == [("spare-mc: compiling wipeout ahead failed (ImportError: no numba here); the run compiles "
                          "it itself")]


@pytest.mark.slow
def test_warm_up_fills_the_cache_a_new_process_then_finds(tmp_path):
    """With an empty cache, warm_up compiles the sweep's kernels in a process of its own; a new process then finds
    them in the cache, and a second warm_up starts nothing."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": str(pathlib.Path(spare_mc.__file__).parents[1])}
    code = ("import sys; from spare_mc.sweep import warm; from spare_mc.sweep.spec import SweepSpec; "
            "spec = SweepSpec.from_toml(sys.argv[1]); print(warm._cached('wipeout', [spec])); "
            "print(warm.warm_up([spec]) > 0); print(warm._cached('wipeout', [spec]))")
    r = subprocess.run([sys.executable, "-c", code, _SPEC], capture_output=True, text=True, env=env, timeout=300,
                       check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True", "True"]  # cold; compiled ahead; in the cache now
    assert r.stderr.count("spare-mc: compiling the kernels of a first run") == 1
    r = subprocess.run([sys.executable, "-c", code, _SPEC], capture_output=True, text=True, env=env, timeout=300,
                       check=False)
    assert r.stdout.split() == ["True", "False", "True"] and "compiling" not in r.stderr


def test_a_failing_sweep_does_not_stop_the_others_in_a_warm_up_process(monkeypatch, capsys):
    """In a child, a sweep that fails is reported on its standard error (and its exit status), after the other
    sweeps ran."""
    import json
    ran = []
    monkeypatch.setattr(warm, "run_task", lambda q, seed, idx, params, a, b, lenient: ran.append(params["layout"]))
    bad = _SPEC.replace('quantity = "wipeout"', 'quantity = "nonsense"')
    with pytest.raises(SystemExit) as info:
        warm._run(json.dumps({"wipeout": [bad, _SPEC]}))
    assert info.value.code == 1
    # the good sweep ran, one point per layout and wipe-out kernel (kernel_key)
    assert sorted(ran) == ["block", "block", "cyclic"]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "quantity" in err


def test_the_warm_up_runs_a_point_of_every_kernel_the_sweep_runs(monkeypatch):
    """N and r are numeric, yet they choose the wipe-out kernel: the warm-up runs the first point of each
    (layout, kernel), so every kernel of the sweep is compiled (one point per layout left three of the quick
    masked sweep's six kernels to its dask workers)."""
    spec = SweepSpec.from_toml(_SPEC.replace("[12, 16]", "[12, 600]").replace('"block"]', '"block", "random"]'))
    firsts = {}
    for i, p in spec.points():
        firsts.setdefault((p["layout"], kernel_key("wipeout", p)), i)
    assert set(firsts) == {("cyclic", "cyclic-window"), ("cyclic", "cyclic-unit"), ("block", "order"),
                           ("block", "partition"), ("block", "sequential"), ("random", "fresh")}
    ran = []
    monkeypatch.setattr(warm, "run_task", lambda q, seed, idx, params, a, b, lenient: ran.append(idx))
    warm._run_spec("wipeout", spec)
    assert ran == sorted(firsts.values())  # each the first point of its kind, in the sweep's order


def test_kernel_key_names_the_timeline_variant():
    spec = SweepSpec.from_toml(_SPEC.replace('quantity = "wipeout"', 'quantity = "ttt"').replace(
        'layout = ["cyclic", "block"]', 'strategy = ["ckpt"]\ndetection = ["allreduce", "immediate"]').replace(
        "r = [2, 3]", "r = [1]"))
    keys = {p["detection"]: kernel_key("ttt", p) for _, p in spec.points()}
    assert keys == {"allreduce": "basic", "immediate": "extended"}
    overhead = SweepSpec.from_toml(_SPEC.replace('quantity = "wipeout"', 'quantity = "overhead"'))
    assert {kernel_key("overhead", p) for _, p in overhead.points()} == {"uniform"}  # a driver per failure model
    events = SweepSpec.from_toml(_SPEC.replace('layout = ["cyclic", "block"]', 'failure_model = ["per_gpu"]\n'
                                               'mtbf_s = [3600.0]'))
    assert {kernel_key("wipeout", p) for _, p in events.points()} == {"events"}


def test_a_family_is_cached_only_when_every_kernel_it_runs_is(monkeypatch):
    """One wipe-out kernel in the cache no longer counts for the others the sweep runs; a sweep without SPARe
    does not need ReCtlr's initial state."""
    have = set()
    monkeypatch.setattr(warm._cache, "compiled_or_cached", lambda d, which=None: d.py_func.__name__ in have)
    spec = SweepSpec.from_toml(_SPEC)  # cyclic-window, order and partition (kernel_key)
    have.update({"wipeout_cyclic_window", "wipeout_order_stat"})
    assert not warm._cached("wipeout", [spec])
    have.add("wipeout_partition")
    assert warm._cached("wipeout", [spec])
    ckpt = SweepSpec.from_toml(_SPEC.replace('quantity = "wipeout"', 'quantity = "ttt"').replace(
        'layout = ["cyclic", "block"]', 'strategy = ["ckpt"]').replace("r = [2, 3]", "r = [1]"))
    have.add("timeline")
    assert warm._cached("ttt", [ckpt])
    spare = SweepSpec.from_toml(_SPEC.replace('quantity = "wipeout"', 'quantity = "ttt"').replace(
        'layout = ["cyclic", "block"]', 'strategy = ["spare"]'))
    assert not warm._cached("ttt", [spare])
    have.add("live_state")
    assert warm._cached("ttt", [spare])


def test_a_kernel_key_that_fails_costs_a_line_not_the_run(monkeypatch):
    """The points were checked before the warm-up, so kernel_key failing is a bug: said in one line, and the run
    goes on compiling what it needs itself (no process started)."""
    def broken(*a, **k):
        raise KeyError("mtbf_s")
    monkeypatch.setattr(warm, "kernel_key", broken)

    def no_process(*a, **k):
        raise AssertionError("a warm-up process was started")
    monkeypatch.setattr(warm.subprocess, "Popen", no_process)
    lines = []
    assert warm.warm_up([SweepSpec.from_toml(_SPEC)], log=lines.append) == 0.0
    assert lines == [("spare-mc: could not tell which kernels to compile ahead (KeyError: 'mtbf_s'); the run "
                      "compiles what it needs itself")]
