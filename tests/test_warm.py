"""Compiling a first run's kernels ahead, in parallel processes (spare_mc.sweep.warm)."""

import io
import json
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


def _quick_like_tasks(monkeypatch, cached=()):
    """The tasks of a time-to-train sweep of CKPT-only then SPARe, an overhead sweep and a wipe-out sweep, with
    nothing cached but ``cached`` (shared compilations)."""
    monkeypatch.setattr(warm, "_shared_cached", lambda name: name in cached)
    ttt = [SweepSpec.from_toml(_SPEC.replace('quantity = "wipeout"', 'quantity = "ttt"').replace(
        'layout = ["cyclic", "block"]', f'strategy = ["{s}"]').replace("r = [2, 3]", f"r = [{r}]"))
        for s, r in (("ckpt", 1), ("spare", 2))]
    overhead = SweepSpec.from_toml(_SPEC.replace('quantity = "wipeout"', 'quantity = "overhead"'))
    return warm._tasks({"ttt": ttt, "overhead": [overhead], "wipeout": [SweepSpec.from_toml(_SPEC)]})[1]


def test_shared_compilations_come_first_and_the_points_wait_for_them(monkeypatch):
    """ReCtlr and the timeline's variant are tasks of their own, which the points that need them wait for: SPARe's
    time to train both, CKPT-only the variant only, the overhead sweep ReCtlr only, the wipe-out sweep nothing."""
    tasks = _quick_like_tasks(monkeypatch)
    assert [t["msg"] for t in tasks[:2]] == [{"shared": "variant:basic"}, {"shared": "rectlr"}]
    needs = {}
    for t in tasks[2:]:  # sweeps 0 and 1: CKPT-only's and SPARe's time to train
        key = t["family"], t["msg"]["k"] if t["family"] != "ttt" else ("ckpt", "spare")[t["msg"]["spec"]]
        needs[key] = t["needs"]
    assert needs == {("ttt", "ckpt"): ["variant:basic"], ("ttt", "spare"): ["variant:basic", "rectlr"],
                     ("overhead", 0): ["rectlr"], ("overhead", 1): ["rectlr"], ("wipeout", 0): [], ("wipeout", 1): [],
                     ("wipeout", 2): []}
    # a shared compilation in the cache is no task, and nothing waits for it
    tasks = _quick_like_tasks(monkeypatch, cached=("rectlr",))
    assert [t["msg"] for t in tasks if "name" in t] == [{"shared": "variant:basic"}]
    assert all("rectlr" not in t["needs"] for t in tasks)


def test_the_dealer_gives_the_longest_ready_task_and_holds_back_the_waiting_ones(monkeypatch):
    tasks = _quick_like_tasks(monkeypatch)
    dealer = warm._Dealer(tasks)
    first, second = dealer.take(), dealer.take()
    assert (first["name"], second["name"]) == ("variant:basic", "rectlr")  # one process each, at once
    dealt = []
    while (t := dealer.take()) is not None:  # while both compile: only what waits for neither, longest first
        dealt.append(t)
    assert dealt and all(t["family"] == "wipeout" for t in dealt)
    assert [t["cost"] for t in dealt] == sorted((t["cost"] for t in dealt), reverse=True)
    dealer.finish(second)  # ReCtlr done: the overhead points (one per layout), not yet SPARe's
    assert [dealer.take()["family"] for _ in range(2)] == ["overhead"] * 2 and dealer.take() is None
    dealer.finish(first)
    rest = [dealer.take(), dealer.take()]
    assert {t["family"] for t in rest} == {"ttt"} and dealer.take() is None and not dealer.todo


def test_the_estimate_deals_the_tasks_as_the_processes_will(monkeypatch):
    """One process: the sum of the costs. Two: the two shared compilations at once, so the longest of them plus
    what must follow it, and no less than half the total."""
    tasks = _quick_like_tasks(monkeypatch)
    total = sum(t["cost"] for t in tasks)
    assert warm._estimate(tasks, 1) == pytest.approx(total)
    two = warm._estimate(tasks, 2)
    assert total / 2 <= two < warm.COMPILE_S["variant:basic"] + warm.COMPILE_S["rectlr"]
    assert two >= warm.COMPILE_S["variant:basic"] + warm.COMPILE_S["ttt"]  # SPARe's point follows the variant
    assert warm._estimate([], 2) == 0.0


def test_nothing_is_started_when_every_family_is_cached(monkeypatch):
    monkeypatch.setattr(warm, "_cached", lambda q, specs, kinds=None: True)

    def no_process(*a, **k):
        raise AssertionError("a warm-up process was started although every kernel is cached")
    monkeypatch.setattr(warm.subprocess, "Popen", no_process)
    assert warm.warm_up([SweepSpec.from_toml(_SPEC)]) == 0.0


def test_a_failed_warm_up_is_reported_and_the_run_goes_on(monkeypatch, tmp_path):
    """Processes that fail cost one line per family with their last message; nothing is raised (the run compiles
    what it needs itself). No more processes than usable CPUs."""
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'Traceback ...' >&2\necho 'ImportError: no numba here' >&2\nexit 3\n")
    broken.chmod(0o755)
    monkeypatch.setattr(warm, "_cached", lambda q, specs, kinds=None: False)
    monkeypatch.setattr(warm.sys, "executable", str(broken))
    monkeypatch.setattr(warm, "usable_cpus", lambda: 2)
    for processes, n in ((1, 1), (2, 2), (8, 2)):
        lines = []
        assert warm.warm_up([SweepSpec.from_toml(_SPEC)], processes=processes, log=lines.append) > 0
        assert lines[0].startswith(f"spare-mc: compiling the kernels of a first run on this machine (wipeout) in {n} "
                                   f"process{'es' if n > 1 else ''}: about ")
        assert lines[1:] == [("spare-mc: compiling wipeout ahead failed (ImportError: no numba here); the run "
                              "compiles it itself")]


#: A warm-up process that only replies, as told by its first argument (after the sweeps' file): ``die`` exits at a
#: shared compilation (as a process that dies), ``fail`` replies that it failed; a point whose ``k`` is 1 fails; a
#: line of noise comes before the replies; every task received is logged.
_FAKE_CHILD = """#!{python}
import json, sys
mode, log = {mode!r}, {log!r}
print("noise: not a reply", flush=True)
for line in sys.stdin:
    msg = json.loads(line)
    with open(log, "a") as f:
        f.write(line)
    if mode == "die-all" or ("shared" in msg and mode == "die"):
        sys.stderr.write("MemoryError: killed\\n")
        sys.exit(9)
    bad = msg.get("k") == 1 or ("shared" in msg and mode == "fail")
    print("spare-mc-warm: " + ("failed ValueError: bad point" if bad else "ok"), flush=True)
"""


def _fake_warm_up(monkeypatch, tmp_path, mode, specs):
    """warm_up on 2 processes of :data:`_FAKE_CHILD` in ``mode``, nothing cached: ``(messages sent, log lines)``."""
    log = tmp_path / f"sent-{mode}.jsonl"
    fake = tmp_path / f"python-{mode}"
    fake.write_text(_FAKE_CHILD.format(python=sys.executable, mode=mode, log=str(log)))
    fake.chmod(0o755)
    monkeypatch.setattr(warm.sys, "executable", str(fake))
    monkeypatch.setattr(warm, "_cached", lambda q, specs, kinds=None: False)
    monkeypatch.setattr(warm, "_shared_cached", lambda name: False)
    monkeypatch.setattr(warm, "usable_cpus", lambda: 2)
    lines = []
    warm.warm_up(specs, log=lines.append)
    return [json.loads(x) for x in log.read_text().splitlines()], lines


def _all_messages(specs):
    _, tasks = warm._tasks(warm._families(specs))
    return sorted(json.dumps(t["msg"], sort_keys=True) for t in tasks)


def test_the_processes_are_dealt_every_task_and_their_failures_said_once_per_family(monkeypatch, tmp_path):
    """The protocol with processes that only reply: every task is sent once; a failed point is said once for its
    family; a process that dies takes only its own task down, the other process goes on with the rest; a line that
    is not a reply is ignored."""
    specs = [SweepSpec.from_toml(_SPEC), SweepSpec.from_toml(_SPEC.replace('quantity = "wipeout"',
                                                                             'quantity = "overhead"'))]
    sent, lines = _fake_warm_up(monkeypatch, tmp_path, "die", specs)
    # ReCtlr's process died; the other ran the wipe-out points (3 kernels) and, ReCtlr's task being over, the
    # overhead points (2 layouts)
    assert sorted(json.dumps(m, sort_keys=True) for m in sent) == _all_messages(specs)
    assert lines[0].startswith("spare-mc: compiling the kernels of a first run on this machine (overhead, wipeout) "
                               "in 2 processes")
    assert sorted(lines[1:]) == [
        "spare-mc: compiling ReCtlr ahead failed (MemoryError: killed); the run compiles it itself",
        "spare-mc: compiling overhead ahead failed (ValueError: bad point); the run compiles it itself",
        "spare-mc: compiling wipeout ahead failed (ValueError: bad point); the run compiles it itself"]


def test_a_shared_compilation_that_fails_still_lets_its_points_run(monkeypatch, tmp_path):
    """ReCtlr's task replies that it failed: the overhead points that waited for it still run (they compile what it
    lacks themselves), and ReCtlr's failure is said once."""
    spec = SweepSpec.from_toml(_SPEC.replace('quantity = "wipeout"', 'quantity = "overhead"').replace(
        'layout = ["cyclic", "block"]', 'layout = ["cyclic"]'))
    sent, lines = _fake_warm_up(monkeypatch, tmp_path, "fail", [spec])
    assert sorted(json.dumps(m, sort_keys=True) for m in sent) == _all_messages([spec])
    assert lines[1:] == ["spare-mc: compiling ReCtlr ahead failed (ValueError: bad point); the run compiles it itself"]


def test_when_every_process_dies_each_family_left_is_said(monkeypatch, tmp_path):
    """Both processes die at their first task: the families of the tasks they took failed, the others did not
    happen; one line for each family."""
    specs = [SweepSpec.from_toml(_SPEC), SweepSpec.from_toml(_SPEC.replace('quantity = "wipeout"',
                                                                             'quantity = "overhead"'))]
    sent, lines = _fake_warm_up(monkeypatch, tmp_path, "die-all", specs)
    assert len(sent) == 2  # one task each, the two first dealt: ReCtlr and the first wipe-out kernel
    assert sorted(lines[1:]) == [
        "spare-mc: compiling ReCtlr ahead failed (MemoryError: killed); the run compiles it itself",
        "spare-mc: compiling overhead ahead did not happen (the warm-up processes exited: MemoryError: killed); the "
        "run compiles it itself",
        "spare-mc: compiling wipeout ahead failed (MemoryError: killed); the run compiles it itself"]


def test_what_a_task_prints_does_not_reach_the_replies(tmp_path):
    """A real warm-up process (:func:`warm._serve`) whose task prints on standard output: its standard output holds
    the replies only, the print goes to its standard error."""
    sweeps, tasks = warm._tasks({"wipeout": [SweepSpec.from_toml(_SPEC)]})
    path = tmp_path / "sweeps.json"
    path.write_text(json.dumps(sweeps))
    code = ("import sys; from spare_mc.sweep import warm; "
            "warm.run_task = lambda *a: print('a task printing', flush=True); warm._serve(sys.argv[1])")
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(spare_mc.__file__).parents[1])}
    r = subprocess.run([sys.executable, "-c", code, str(path)], input="".join(json.dumps(t["msg"]) + "\n"
                                                                               for t in tasks),
                       capture_output=True, text=True, env=env, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["spare-mc-warm: ok"] * len(tasks)
    assert r.stderr.count("a task printing") == len(tasks)


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


def test_a_failing_task_does_not_stop_the_others_in_a_warm_up_process(monkeypatch, tmp_path):
    """In a child, a task that fails is replied as failed with its message on one line, and the next tasks run."""
    ran = []

    def fake_run(q, seed, idx, params, a, b, lenient):
        if params["layout"] == "cyclic":
            raise ValueError("no\nway")
        ran.append(params["layout"])
    monkeypatch.setattr(warm, "run_task", fake_run)
    sweeps, tasks = warm._tasks({"wipeout": [SweepSpec.from_toml(_SPEC)]})
    path = tmp_path / "sweeps.json"
    path.write_text(json.dumps(sweeps))
    replies = io.StringIO()
    warm._serve(str(path), [json.dumps(t["msg"]) + "\n" for t in tasks], replies)
    # one point per layout and wipe-out kernel (kernel_key): cyclic-window, then block's order and partition
    assert replies.getvalue().splitlines() == ["spare-mc-warm: failed ValueError: no way", "spare-mc-warm: ok",
                                               "spare-mc-warm: ok"]
    assert ran == ["block", "block"]


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
    memo = {}
    sweeps, tasks = warm._tasks({"wipeout": [spec]})
    for t in tasks:
        warm._run_task(t["msg"], sweeps, memo)
    assert ran == sorted(firsts.values())  # each the first point of its kind, in the sweep's order
    assert len(memo) == 1  # the sweep's points found once


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
