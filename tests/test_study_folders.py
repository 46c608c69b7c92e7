"""The output-folder contract of the studies (issue 36): one study at one setting per folder, refused before any
work otherwise (``force`` moves the other setting's files aside), one lock for the whole run, every output path
checked before any work with the user's path in the error, and a killed run resumed to the identical result."""

import ctypes
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import spare_mc as sm
from spare_mc.analyses.calibrate import calibrate
from spare_mc.analyses.dynamic import dynamic_study
from spare_mc.analyses.folder import LOCK, MANIFEST, REPLACED, StudyFolder
from spare_mc.analyses.repair import repair_study
from spare_mc.analyses.reproduce import reproduce
from spare_mc.analyses.sensitivity import sensitivity
from spare_mc.analyses.tables import domain_period_table, domains_table, llama3_table, phase_table
from spare_mc.cli import main
from spare_mc.sweep.storage import SweepLocked

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}

#: A dynamic study of a few seconds (N = 20, Rep at r = 2, two period factors, 200-step jobs, in this process).
TINY = dict(shapes=(0.5,), policies=("hazard",), r_values={"rep": (2,)}, factors=(1.0, 2.0), screen_reps=2,
            confirm_reps=3, base={"n_steps": 200}, workers=0)


def _tiny(out, seed=0, **kw):
    return dynamic_study((20,), **{**TINY, "rng": seed, **kw}, out_dir=out)


def _load(path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _snapshot(folder):
    """{relative path: bytes} of every file of a folder (the lock files aside)."""
    out = {}
    for root, _, files in os.walk(folder):
        for f in files:
            if f.endswith(".lock") or f == LOCK:
                continue
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, folder)] = fh.read()
    return out


# ------------------------------------------------------------------------------------------ one setting a folder
def test_another_setting_is_refused_and_force_moves_the_first_aside(tmp_path):
    out = str(tmp_path / "dyn")
    first = _tiny(out, seed=0)
    assert _load(first.files["result"])["settings"]["seed"] == 0
    before = _snapshot(out)
    with pytest.raises(sm.UsageValueError, match=r"another setting \(seed: 0 -> 1\).*force=True"):
        _tiny(out, seed=1)
    assert _snapshot(out) == before  # refused before any work: nothing written, nothing replaced
    for other in (dict(policies=("young_hazard",)), dict(confirm_reps=4), dict(base={"n_steps": 300})):
        with pytest.raises(sm.UsageValueError, match="another setting"):
            _tiny(out, **other)
    assert _snapshot(out) == before
    with pytest.warns(UserWarning, match=r"moved the results of another setting \(seed: 0 -> 1\) aside into"):
        second = _tiny(out, seed=1, force=True)
    assert second.files["replaced"].startswith(os.path.join(out, REPLACED))
    assert _load(second.files["result"])["settings"]["seed"] == 1
    moved = os.listdir(os.path.join(out, REPLACED))
    assert len(moved) == 1
    aside = os.path.join(out, REPLACED, moved[0])
    # the first run's files, every one, moved aside untouched (with its manifest)
    assert _snapshot(aside) == before
    assert _load(os.path.join(out, MANIFEST))["settings"]["seed"] == 1


def test_a_rerun_of_the_same_setting_returns_at_once(tmp_path):
    out = str(tmp_path / "dyn")
    first = _tiny(out)
    parts = sorted(p for p in _snapshot(out) if p.endswith(".npz"))
    again = _tiny(out)
    assert sorted(p for p in _snapshot(out) if p.endswith(".npz")) == parts  # no task computed again
    assert [r.to_dict() for r in again.rows] == [r.to_dict() for r in first.rows]
    assert not os.path.exists(os.path.join(out, REPLACED))


def test_one_lock_for_the_whole_run(tmp_path):
    """A second run into a held folder is refused at once, whatever its setting (the locks used to cover one stage
    at a time, so two runs of different seeds interleaved their stages)."""
    out = str(tmp_path / "dyn")
    _tiny(out)
    before = _snapshot(out)
    holder = StudyFolder(out, "dynamic", _load(os.path.join(out, MANIFEST))["settings"])  # the same setting
    with holder:
        for seed in (0, 1):
            with pytest.raises(SweepLocked, match="another spare-mc run is writing into"):
                _tiny(out, seed=seed, force=True)
    assert _snapshot(out) == before


def test_a_damaged_manifest_is_refused_without_force(tmp_path):
    out = tmp_path / "dyn"
    out.mkdir()
    (out / MANIFEST).write_text("{not json")
    with pytest.raises(sm.UsageValueError, match="manifest .* is damaged"):
        _tiny(str(out))


def _foreign(tmp_path, name, study="table-llama3"):
    d = tmp_path / name
    d.mkdir()
    (d / MANIFEST).write_text(json.dumps({"schema_version": 2, "study": study, "digest": "0" * 64,
                                          "settings": {"seed": 7}, "files": []}))
    return str(d)


#: Every study entry point, called on a folder that holds another study: each must refuse before any work (the
#: calls are full-size: a refusal after the work would take minutes, not milliseconds).
STUDIES = {
    "sensitivity": lambda d: sensitivity((200,), out_dir=d, workers=0),
    "calibrate": lambda d: calibrate(out_dir=d, workers=0),
    "dynamic": lambda d: dynamic_study(out_dir=d, workers=0),
    "repair": lambda d: repair_study(out_dir=d, workers=0),
    "reproduce": lambda d: reproduce(quick=True, out_dir=d, workers=0),
    "table-domains": lambda d: domains_table(quick=True, out_dir=d),
    "table-domain-period": lambda d: domain_period_table(quick=True, out_dir=d),
    "table-phase": lambda d: phase_table(quick=True, out_dir=d),
    "table-llama3": lambda d: llama3_table(quick=True, out_dir=d),
}


@pytest.mark.parametrize("study", sorted(STUDIES))
def test_every_study_refuses_a_folder_of_another_study_before_any_work(tmp_path, study):
    other = "dynamic" if study == "table-llama3" else "table-llama3"
    d = _foreign(tmp_path, "other", other)
    command = "dynamic" if other == "dynamic" else "reproduce --table llama3"
    t0 = time.perf_counter()
    with pytest.raises(sm.UsageValueError, match=rf"holds the results of `spare-mc {command}`, another study"):
        STUDIES[study](d)
    assert time.perf_counter() - t0 < 20  # before any work (the full studies take minutes to hours)
    assert sorted(os.listdir(d)) == [MANIFEST]


# ------------------------------------------------------------------------------- outputs that cannot be written
def _drop_dac():
    """In the child: drop the capabilities that let root write into a folder it made read-only (CAP_DAC_OVERRIDE,
    CAP_DAC_READ_SEARCH) from the bounding set, so that the exec'd program runs without them."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (1, 2):
            if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def _run_readonly(args, timeout=120):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=ENV, timeout=timeout,
                          preexec_fn=_drop_dac)


@pytest.fixture
def readonly(tmp_path):
    """A read-only folder (mode 555), checked to be read-only for the children :func:`_run_readonly` starts."""
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    probe = _run_readonly(["-c", f"open({str(d / 'x')!r}, 'w')"])
    assert probe.returncode != 0 and "Permission denied" in probe.stderr, "the folder must be read-only in the child"
    yield d
    d.chmod(0o755)


#: One run per output kind, each into the read-only folder ``{ro}``; ``{w}`` is a writable folder.
READONLY_CASES = {
    "sensitivity --out-dir": ["sensitivity", "--n-groups", "200", "--out-dir", "{ro}/s"],
    "sensitivity --figure": ["sensitivity", "--n-groups", "200", "--out-dir", "{w}/s", "--figure", "{ro}/f.png"],
    "dynamic --out-dir": ["dynamic", "--quick", "--out-dir", "{ro}/d"],
    "dynamic --figure": ["dynamic", "--quick", "--out-dir", "{w}/d", "--figure", "{ro}/f.png"],
    "repair --out-dir": ["repair", "--quick", "--out-dir", "{ro}/r"],
    "repair --figure": ["repair", "--quick", "--out-dir", "{w}/r", "--figure", "{ro}/f.png"],
    "calibrate --out-dir": ["calibrate", "--target", "paper", "--out-dir", "{ro}/c"],
    "calibrate --preset-out": ["calibrate", "--target", "paper", "--out-dir", "{w}/c", "--preset-out", "{ro}/p.json"],
    "reproduce --out-dir": ["reproduce", "--quick", "--out-dir", "{ro}/q"],
    "table domains": ["reproduce", "--table", "domains", "--quick", "--out-dir", "{ro}/t"],
    "table domain-period": ["reproduce", "--table", "domain-period", "--quick", "--out-dir", "{ro}/t"],
    "table phase": ["reproduce", "--table", "phase", "--quick", "--out-dir", "{ro}/t"],
    "table llama3": ["reproduce", "--table", "llama3", "--quick", "--out-dir", "{ro}/t"],
    "sweep --out": ["sweep", "{spec}", "--out", "{ro}/s.nc"],
}

SPEC = """
[sweep]
name = "s"
quantity = "wipeout"
reps = 4
seed = 1

[grid]
n_groups = [40]
r = [2, 3]
"""


@pytest.mark.parametrize("case", sorted(READONLY_CASES))
def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path, readonly, case):
    w = tmp_path / "w"
    w.mkdir()
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    args = [a.format(ro=readonly, w=w, spec=spec) for a in READONLY_CASES[case]]
    t0 = time.perf_counter()
    r = _run_readonly(["-m", "spare_mc.cli", *args])
    took = time.perf_counter() - t0
    given = next(a for a in args if a.startswith(str(readonly)))
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert given in r.stderr and "not writable" in r.stderr and ".tmp" not in r.stderr
    assert took < 30, f"refused after {took:.0f} s: after work, not before"
    assert os.listdir(readonly) == [] and not any(os.scandir(w))


def test_atomic_write_names_the_file_not_its_temporary(tmp_path, readonly):
    """An unwritable folder met at write time (the folder changed after the checks) names the file being
    written, not the temporary file spare-mc could not create (it named ``.p.json.vxqnvvv5.tmp``)."""
    code = textwrap.dedent(f"""
        from spare_mc.sweep.storage import write_json
        try:
            write_json({{"a": 1}}, {str(readonly / 'p.json')!r})
        except OSError as exc:
            print(exc.filename)
    """)
    r = _run_readonly(["-c", code])
    assert r.stdout.strip() == str(readonly / "p.json"), r.stderr


# ------------------------------------------------------------------------------------------ killed and resumed
# The script restores Python's SIGINT handler first: a test run started as a background job or under nohup ignores
# SIGINT, the child would inherit that, and the SIGINT case below would never stop it
_SCRIPT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from spare_mc.analyses.dynamic import dynamic_study
dynamic_study((20, 30), shapes=(0.5,), policies=("hazard",), r_values={"rep": (2, 3)}, factors=(1.0, 2.0),
              screen_reps=4, confirm_reps=6, base={"n_steps": 400}, workers=0, rng=3, out_dir=sys.argv[1])
"""


def _rows(path):
    return _load(os.path.join(path, "dynamic.json"))["rows"]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["kill -9", "SIGINT"])
def test_a_killed_study_resumes_to_the_identical_result(tmp_path, how):
    ref = str(tmp_path / "ref")
    subprocess.run([sys.executable, "-c", _SCRIPT, ref], check=True, env=ENV, capture_output=True)
    out = str(tmp_path / "cut")
    stages = ("dynamic-screen-rep-N20.nc", "dynamic-confirm-rep-N20.nc", "dynamic-screen-rep-N30.nc")
    for stage in stages:  # stop the run once each stage's dataset is written, then rerun to the end
        p = subprocess.Popen([sys.executable, "-c", _SCRIPT, out], env=ENV, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not os.path.exists(os.path.join(out, stage)) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        p.send_signal(signal.SIGKILL if how == "kill -9" else signal.SIGINT)
        p.wait(timeout=60)
    assert not os.path.exists(os.path.join(out, "dynamic.json")), "a run ended before its signal: nothing stopped"
    subprocess.run([sys.executable, "-c", _SCRIPT, out], check=True, env=ENV, capture_output=True)
    assert _rows(out) == _rows(ref)
    assert not os.path.exists(os.path.join(out, REPLACED))


#: Holds the study, inside its folder's lock, at its first sweep until the file ``sys.argv[2]`` exists (at most
#: five minutes), so that a test can try other runs on the folder meanwhile whatever the machine's speed.
_GATE = """
import os, sys, time
import spare_mc.analyses.dynamic as _dynamic
_screen_groups = _dynamic.screen_groups
def _held(*args, **kwargs):
    deadline = time.monotonic() + 300
    while not os.path.exists(sys.argv[2]):
        if time.monotonic() > deadline:
            sys.exit("the test never released the study")
        time.sleep(0.02)
    return _screen_groups(*args, **kwargs)
_dynamic.screen_groups = _held
"""


@pytest.mark.slow
def test_two_studies_into_one_folder_at_once(tmp_path):
    """Runs of the same and of another setting started while a study runs are refused; the running study ends
    with the result of an undisturbed run.

    The running study is held at its first sweep until the others have been tried: a run made long enough to
    outlast them (400,000 steps) once ended first when the kernels got faster."""
    ref = str(tmp_path / "ref")
    subprocess.run([sys.executable, "-c", _SCRIPT, ref], check=True, env=ENV, capture_output=True, timeout=300)
    out, go = str(tmp_path / "both"), str(tmp_path / "go")
    with subprocess.Popen([sys.executable, "-c", _GATE + _SCRIPT, out, go], env=ENV, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True) as first:
        try:
            deadline = time.monotonic() + 120
            while (not os.path.exists(os.path.join(out, MANIFEST)) and first.poll() is None
                   and time.monotonic() < deadline):
                time.sleep(0.02)
            if first.poll() is not None:
                pytest.fail(f"the held run ended before it started its study: {first.communicate()[1][-2000:]}")
            assert os.path.exists(os.path.join(out, MANIFEST)), "the held run did not start its study in 120 s"
            other = _SCRIPT.replace("rng=3", "rng=4")
            for second, match in ((_SCRIPT, "another spare-mc run is writing into"), (other, "another setting")):
                r = subprocess.run([sys.executable, "-c", second, out], env=ENV, capture_output=True, text=True,
                                   timeout=120)
                assert r.returncode != 0 and match in r.stderr, r.stderr[-2000:]
            assert first.poll() is None, "the held run ended before it was released"
            open(go, "w").close()
            err = first.communicate(timeout=300)[1]
        except BaseException:
            first.kill()
            first.wait()
            raise
        assert first.returncode == 0, err[-2000:]
    assert _rows(out) == _rows(ref)


def test_a_foreign_figure_in_a_reproduce_folder_is_refused_before_any_work(tmp_path):
    """The figures of the full reproduce were checked after every sweep, the main table and the phase map had run:
    a foreign ``figures/ttt.png`` cost the whole run."""
    out = tmp_path / "q"
    (out / "figures").mkdir(parents=True)
    (out / "figures" / "ttt.png").write_bytes(b"my own picture")
    t0 = time.perf_counter()
    with pytest.raises(sm.UsageValueError, match=r"ttt.png exists and is not a figure written by spare-mc"):
        reproduce(quick=True, out_dir=out, workers=0)
    assert time.perf_counter() - t0 < 20
    assert sorted(p.name for p in out.rglob("*")) == ["figures", "ttt.png"]


# ------------------------------------------------------------- QA of the contract (a fresh-eyes pass, issue 36)
def test_a_folder_without_a_usable_manifest_is_never_silently_replaced(tmp_path):
    """Results whose manifest was deleted (or written by 0.3.0, which kept none) or damaged were replaced by
    another setting without a word, and --force overwrote them in place instead of moving them aside."""
    for damage in ("delete", "garbage", "settings a list"):
        out = str(tmp_path / damage.replace(" ", "_"))
        _tiny(out, seed=0)
        before = {k: v for k, v in _snapshot(out).items() if k != MANIFEST}
        if damage == "delete":
            os.remove(os.path.join(out, MANIFEST))
        else:
            bad = "{garbage" if damage == "garbage" else json.dumps({"study": "dynamic", "digest": "x" * 64,
                                                                      "settings": [1, 2], "files": []})
            with open(os.path.join(out, MANIFEST), "w") as fh:
                fh.write(bad)
        match = "no record of the setting" if damage == "delete" else "manifest .* is damaged"
        with pytest.raises(sm.UsageValueError, match=match):
            _tiny(out, seed=1)
        with pytest.warns(UserWarning, match="moved the results of"):
            res = _tiny(out, seed=1, force=True)
        aside = os.path.join(out, REPLACED, os.listdir(os.path.join(out, REPLACED))[0])
        kept = {k: v for k, v in _snapshot(aside).items() if k != MANIFEST}
        assert kept == before, damage  # every result of seed 0, moved untouched
        assert _load(res.files["result"])["settings"]["seed"] == 1


def test_force_moves_a_users_file_aside_rather_than_deleting_it(tmp_path):
    out = tmp_path / "u"
    out.mkdir()
    (out / "dynamic.json").write_text("my notes")
    with pytest.raises(sm.UsageValueError, match="is not a dynamic-checkpointing result written by spare-mc"):
        _tiny(str(out))
    with pytest.warns(UserWarning, match="unrecorded setting"):
        _tiny(str(out), force=True)
    assert [p.read_text() for p in (out / REPLACED).rglob("dynamic.json")] == ["my notes"]


def test_a_figure_recorded_by_another_study_folder_is_refused(tmp_path):
    """``--figure R/dynamic.png`` from a run into another folder replaced R's figure without R's lock."""
    first = _tiny(str(tmp_path / "r"), figure=str(tmp_path / "r" / "dynamic.png"))
    before = _snapshot(str(tmp_path / "r"))
    for force in (False, True):
        with pytest.raises(sm.UsageValueError, match=r"is a result of the study in .*r \(its .* records it\)"):
            _tiny(str(tmp_path / "z"), seed=1, figure=first.files["figure"], force=force)
    assert _snapshot(str(tmp_path / "r")) == before


def test_force_never_moves_anything_out_of_the_folder(tmp_path):
    """Entries of a hand-edited manifest that leave the folder -- ``..``, an absolute path, a symbolic link out --
    or name the lock or ``replaced/`` are never moved."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.png").write_bytes(b"x")
    (outside / "g.txt").write_text("keep")
    out = tmp_path / "d"
    out.mkdir()
    os.symlink(outside, out / "link")
    _tiny(str(out))
    m = _load(str(out / MANIFEST))
    m["files"] += ["link/f.png", "../outside/g.txt", str(outside / "g.txt"), LOCK, REPLACED, 5, None]
    (out / MANIFEST).write_text(json.dumps(m))
    (out / REPLACED).mkdir()
    with pytest.warns(UserWarning, match="moved the results of another setting"):
        _tiny(str(out), seed=1, force=True)
    assert (outside / "f.png").read_bytes() == b"x" and (outside / "g.txt").read_text() == "keep"
    assert (out / LOCK).exists() and (out / "link").is_symlink()


def test_the_api_checks_its_arguments_before_it_claims_the_folder(tmp_path):
    out = tmp_path / "p"
    for rng in (-1, 1.5, True, "0", __import__("numpy").random.default_rng(0)):
        with pytest.raises((sm.UsageValueError, sm.UsageTypeError), match="`rng`"):
            _tiny(str(out), seed=rng)
    assert not out.exists()  # nothing claimed: a valid run can use the folder
    _tiny(str(out), seed=__import__("numpy").int64(0))
    _tiny(str(out), seed=0)  # the same setting (a numpy integer is recorded as the number)
    with pytest.raises(sm.UsageTypeError, match="`force`"):
        _tiny(str(out), seed=1, force="no")
    with pytest.raises(sm.UsageValueError, match="`figure` must be a file path"):
        _tiny(str(out), figure=b"x.png")


def test_empty_output_flags_are_refused(capsys):
    for flag in ("--out-dir", "--figure"):
        assert main(["dynamic", "--quick", flag, ""]) == 2
        assert f"`{flag}` is empty" in capsys.readouterr().err


#: Two more studies, small: a sensitivity study (screen, pilot, extension) and a calibration (a round, predictions).
_OTHERS = {
    "sensitivity": ("sensitivity.json", """
import sys
from spare_mc.analyses.sensitivity import Variant, sensitivity
v = [Variant("stay_dead", "option", "restart_failures", "stay_dead", {"restart_failures": "stay_dead"})]
sensitivity((24,), variants=v, reps=3, pilot_reps=6, max_confirm_reps=12, target_pp=0.5, base={"n_steps": 120},
            r_ranges={"rep": (2, 3), "spare": (2, 4)}, period_factors=(0.71, 1.41), workers=0, out_dir=sys.argv[1])
"""),
    "calibrate": ("calibration.json", """
import sys
from spare_mc.analyses.calibrate import calibrate
table = {"name": "small", "rows": [{"n_groups": 24, "rep": {"r": 2, "ttt_over_t0": 3.0, "availability": 0.7},
                                    "spare": {"r": 3, "ttt_over_t0": 2.5, "availability": 0.9}}]}
space = {"restart_failures": [("absorbed", {}), ("stay_dead", {"restart_failures": "stay_dead"})]}
calibrate(table, space=space, base={"n_steps": 120}, schedule=((2, 4), (3, 5)),
          r_ranges={"rep": (2, 3), "spare": (2, 4)}, period_factors=(0.71, 1.41), predict_n=(30,), workers=0,
          out_dir=sys.argv[1])
"""),
}


def _result(path, name):
    """A study's result JSON without what differs between two runs of one setting: timings, versions, paths."""
    d = _load(os.path.join(path, name))
    for key in ("elapsed_s", "software", "result", "figure", "datasets", "replaced"):
        d.pop(key, None)
    return json.loads(json.dumps(d).replace(path, "<out>"))


@pytest.mark.slow
@pytest.mark.parametrize("study", sorted(_OTHERS))
def test_other_studies_killed_at_each_stage_resume_to_the_identical_result(tmp_path, study):
    """`kill -9` once each of the first three datasets is written, then a rerun: the result of an undisturbed
    run (the dynamic study's test above covers SIGINT too)."""
    name, script = _OTHERS[study]
    ref = str(tmp_path / "ref")
    subprocess.run([sys.executable, "-c", script, ref], check=True, env=ENV, capture_output=True)
    out = str(tmp_path / "cut")
    for k in (1, 2, 3):
        p = subprocess.Popen([sys.executable, "-c", script, out], env=ENV, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while p.poll() is None and time.monotonic() < deadline and (
                not os.path.isdir(out) or sum(f.endswith(".nc") for f in os.listdir(out)) < k):
            time.sleep(0.02)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=60)
    assert not os.path.exists(os.path.join(out, name)), "a run ended before its kill: the test stopped nothing"
    subprocess.run([sys.executable, "-c", script, out], check=True, env=ENV, capture_output=True)
    assert _result(out, name) == _result(ref, name)
    assert not os.path.exists(os.path.join(out, REPLACED))
