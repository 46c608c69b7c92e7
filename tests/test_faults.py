"""Fault injection: a sweep killed at any moment, a corrupt part, a part of another sweep, two sweeps at once.

Each case ends in either the correct dataset (identical to an undisturbed run) or a clear refusal -- never a mixed or
silently wrong one. The faults are real: ``kill -9`` of a process that is inside a part write or the final dataset
write (held there by a patched writer), truncated and foreign part files, and two concurrent processes.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from spare_mc.storage import open_dataset
from spare_mc.sweep import SweepSpec, run_sweep

SPEC = """
[sweep]
name = "f"
quantity = "wipeout"
reps = 60
block = 10
seed = 21

[grid]
n_groups = [40, 80]
r = [2, 3]
"""

#: Run a sweep in a child process; ``HOLD`` = "part" or "dataset" holds the process inside that write (the data is
#: half written to the temporary file) until it is killed; ``SLOW`` = seconds of sleep in every task.
CHILD = textwrap.dedent("""
    import os, sys, time
    import spare_mc.storage as storage
    import spare_mc.sweep as sweep
    hold = os.environ.get("HOLD", "")
    slow = float(os.environ.get("SLOW", "0"))
    real_atomic = storage._atomic_write
    def held(path, write):
        def half(tmp):
            write(tmp)
            with open(tmp, "r+b") as fh:  # a torn write: half of the bytes
                fh.truncate(os.path.getsize(tmp) // 2)
            open(os.environ["MARK"], "w").close()
            time.sleep(600)
        kind = "part" if path.endswith(".npz") else "dataset"
        return real_atomic(path, half if kind == hold else write)
    storage._atomic_write = held
    real_task = sweep.run_task
    def slow_task(*a, **k):
        time.sleep(slow)
        return real_task(*a, **k)
    sweep.run_task = slow_task
    from spare_mc.cli import main
    sys.exit(main(["sweep", sys.argv[1], "--out", sys.argv[2], "--workers", "0"]))
""")


def _data(ds):
    ds = ds.copy()
    ds.attrs = {k: v for k, v in ds.attrs.items() if k not in ("created",)}
    return ds


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    return run_sweep(SweepSpec.from_toml(SPEC), d / "ref.nc", workers=0, progress=False)


def _child(tmp_path, out, **env):
    (tmp_path / "spec.toml").write_text(SPEC)
    (tmp_path / "child.py").write_text(CHILD)
    return subprocess.Popen([sys.executable, str(tmp_path / "child.py"), str(tmp_path / "spec.toml"), str(out)],
                            env={**os.environ, **{k: str(v) for k, v in env.items()}}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(path, proc, seconds=120):
    for _ in range(int(seconds / 0.05)):
        if os.path.exists(path):
            return
        if proc.poll() is not None:
            raise AssertionError(f"the child ended early: {proc.communicate()}")
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def _rerun(tmp_path, out):
    return subprocess.run([sys.executable, "-m", "spare_mc.cli", "sweep", str(tmp_path / "spec.toml"), "--out",
                           str(out), "--workers", "0"], capture_output=True, text=True)


@pytest.mark.parametrize("hold", ["part", "dataset"])
def test_kill_9_inside_a_write_then_rerun_gives_the_identical_dataset(tmp_path, reference, hold):
    out = tmp_path / "out.nc"
    proc = _child(tmp_path, out, HOLD=hold, MARK=tmp_path / "mark")
    _wait_for(tmp_path / "mark", proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert not out.exists()  # no dataset, and certainly not a torn one
    leftovers = [p for p in tmp_path.rglob("*.tmp")]
    assert leftovers  # the torn temporary file is there...
    rerun = _rerun(tmp_path, out)
    assert rerun.returncode == 0, rerun.stderr
    assert not list(tmp_path.rglob("*.tmp"))  # ...and gone after the rerun, never adopted
    assert _data(open_dataset(out)).identical(_data(reference))


def _finished_parts(out):
    digest = SweepSpec.from_toml(SPEC).digest()
    folder = f"{out}.parts/{digest}"
    return folder, sorted(p for p in os.listdir(folder) if p.endswith(".npz"))


def test_corrupt_and_foreign_parts_are_rejected_and_recomputed(tmp_path, reference):
    out = tmp_path / "out.nc"
    (tmp_path / "spec.toml").write_text(SPEC)
    run_sweep(SweepSpec.from_toml(SPEC), out, workers=0, progress=False)
    os.remove(out)
    folder, parts = _finished_parts(out)
    # a truncated part, a part with garbage bytes, a part of another seed under this sweep's name, a part with a
    # variable missing
    with open(os.path.join(folder, parts[0]), "r+b") as fh:
        fh.truncate(100)
    with open(os.path.join(folder, parts[1]), "wb") as fh:
        fh.write(b"\x00garbage" * 50)
    other = SPEC.replace("seed = 21", "seed = 22")
    run_sweep(SweepSpec.from_toml(other), tmp_path / "other.nc", workers=0, progress=False)
    ofolder = f"{tmp_path / 'other.nc'}.parts/{SweepSpec.from_toml(other).digest()}"
    os.replace(os.path.join(ofolder, parts[2]), os.path.join(folder, parts[2]))
    with np.load(os.path.join(folder, parts[3])) as z:
        kept = {k: z[k] for k in z.files if k != "masked"}
    np.savez(os.path.join(folder, parts[3]), **kept)
    rerun = _rerun(tmp_path, out)
    assert rerun.returncode == 0, rerun.stderr
    for name in parts[:4]:  # each named in a warning, kept aside
        assert name in rerun.stderr and os.path.exists(os.path.join(folder, name + ".rejected"))
    assert "corrupt or truncated" in rerun.stderr and "another sweep or task" in rerun.stderr
    assert "'masked' is missing" in rerun.stderr
    assert _data(open_dataset(out)).identical(_data(reference))


def test_two_concurrent_sweeps_to_one_output(tmp_path, reference):
    """The second is refused at once with a clear message; the first finishes with the correct dataset."""
    out = tmp_path / "out.nc"
    first = _child(tmp_path, out, SLOW=0.2)
    folder = f"{out}.parts/{SweepSpec.from_toml(SPEC).digest()}"
    _wait_for(folder, first)
    second = _child(tmp_path, out)
    _, err = second.communicate(timeout=120)
    assert second.returncode == 2 and "another spare-mc sweep is running into" in err, err
    assert err.count("\n") == 1
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert _data(open_dataset(out)).identical(_data(reference))


def test_two_concurrent_sweeps_of_different_specs_to_one_output(tmp_path, reference):
    """A different spec aimed at the same output while the first runs: refused; after it finished: refused too
    (the file is another sweep's dataset) unless forced."""
    out = tmp_path / "out.nc"
    first = _child(tmp_path, out, SLOW=0.2)
    _wait_for(f"{out}.parts", first)
    other = tmp_path / "other.toml"
    other.write_text(SPEC.replace("seed = 21", "seed = 5"))
    proc = subprocess.run([sys.executable, "-m", "spare_mc.cli", "sweep", str(other), "--out", str(out),
                           "--workers", "0"], capture_output=True, text=True)
    assert proc.returncode == 2 and "another spare-mc sweep is running" in proc.stderr
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    proc = subprocess.run([sys.executable, "-m", "spare_mc.cli", "sweep", str(other), "--out", str(out),
                           "--workers", "0"], capture_output=True, text=True)
    assert proc.returncode == 2 and "refusing to replace it" in proc.stderr
    assert _data(open_dataset(out)).identical(_data(reference))
