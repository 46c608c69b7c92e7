"""Fault injection: a sweep killed at any moment, a corrupt part, a part of another sweep, two sweeps at once.

Each case ends in either the correct dataset (identical to an undisturbed run) or a clear refusal -- never a mixed or
silently wrong one. The faults are real: ``kill -9`` of a process that is inside a part write or the final dataset
write (held there by a patched writer), truncated and foreign part files, and two concurrent processes.
"""

import glob
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from spare_mc.sweep import SweepSpec, run_sweep
from spare_mc.sweep.storage import open_dataset

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
    import spare_mc.sweep.storage as storage
    import spare_mc.sweep.runner as sweep
    hold = os.environ.get("HOLD", "")
    slow = float(os.environ.get("SLOW", "0"))
    real_atomic = storage.atomic_write
    def held(path, write):
        def half(tmp):
            write(tmp)
            with open(tmp, "r+b") as fh:  # a torn write: half of the bytes
                fh.truncate(os.path.getsize(tmp) // 2)
            open(os.environ["MARK"], "w").close()
            time.sleep(600)
        kind = "part" if path.endswith(".npz") else "dataset"
        return real_atomic(path, half if kind == hold else write)
    storage.atomic_write = held
    real_task = sweep.run_task
    def slow_task(*a, **k):
        time.sleep(slow)
        return real_task(*a, **k)
    sweep.run_task = slow_task
    from spare_mc.cli import main
    sys.exit(main(["sweep", sys.argv[1], "--out", sys.argv[2], "--workers", "0"]))
""")


#: A sweep on a local cluster that touches ``MARK`` when the cluster starts (then starts it as usual).
CLUSTER_MARK = textwrap.dedent("""
    import os, sys
    if __name__ == "__main__":  # the workers import this module too
        import distributed
        real_init = distributed.LocalCluster.__init__
        def init(self, *a, **k):
            open(os.environ["MARK"], "w").close()
            real_init(self, *a, **k)
        distributed.LocalCluster.__init__ = init
        from spare_mc.cli import main
        sys.exit(main(["sweep", sys.argv[1], "--out", sys.argv[2], "--workers", "2"]))
""")


def _data(ds):
    ds = ds.copy()
    ds.attrs = {k: v for k, v in ds.attrs.items() if k not in ("created", "content_sha256")}
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


def _threads_cluster(n_workers):
    """A dask cluster of ``n_workers`` threads in this process (its scheduler on tcp, for ``scheduler=``)."""
    from distributed import LocalCluster

    return LocalCluster(n_workers=n_workers, processes=False, threads_per_worker=1, dashboard_address=":0",
                        protocol="tcp")


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


@pytest.mark.slow  # 14 s; two sweeps of one spec to one output stay in the default tier
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


# --------------------------------------------------------------------------- what a QA pass found (fixed)
def test_non_regular_outputs_are_refused_even_with_force(tmp_path):
    """A FIFO (or a device such as /dev/null) is never written over, whatever --force says; an empty --out is
    refused before any work."""
    fifo = tmp_path / "pipe.nc"
    os.mkfifo(fifo)
    (tmp_path / "spec.toml").write_text(SPEC)
    for extra in ([], ["--force"]):
        proc = subprocess.run([sys.executable, "-m", "spare_mc.cli", "sweep", str(tmp_path / "spec.toml"), "--out",
                               str(fifo), "--workers", "0", *extra], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and "is a FIFO; spare-mc only writes regular files" in proc.stderr
    assert os.path.exists(fifo) and not os.path.isfile(fifo)
    proc = subprocess.run([sys.executable, "-m", "spare_mc.cli", "compare", str(fifo)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "not a regular file" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "spare_mc.cli", "sweep", str(tmp_path / "spec.toml"), "--out", "",
                           "--workers", "0"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 2 and "path is empty" in proc.stderr
    assert not list(tmp_path.glob("*.parts"))


def test_outputs_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        run_sweep(SweepSpec.from_toml(SPEC), tmp_path / "u.nc", workers=0, progress=False)
    finally:
        os.umask(old)
    assert (os.stat(tmp_path / "u.nc").st_mode & 0o777) == 0o644
    part = next((tmp_path / "u.nc.parts").rglob("*.npz"))
    assert (os.stat(part).st_mode & 0o777) == 0o644


def test_a_corrupt_dataset_is_detected(tmp_path, reference):
    out = tmp_path / "out.nc"
    (tmp_path / "spec.toml").write_text(SPEC)
    run_sweep(SweepSpec.from_toml(SPEC), out, workers=0, progress=False)
    blob = bytearray(out.read_bytes())
    i = len(blob) - 200  # inside the data section
    blob[i:i + 8] = b"\x7f" * 8
    out.write_bytes(bytes(blob))
    proc = subprocess.run([sys.executable, "-m", "spare_mc.cli", "compare", str(out)], capture_output=True,
                          text=True)
    assert proc.returncode == 2 and "is corrupt" in proc.stderr
    rerun = _rerun(tmp_path, out)  # this sweep's own damaged output: recomputed from its parts
    assert rerun.returncode == 0 and "is corrupt" in rerun.stderr and "will be recomputed" in rerun.stderr
    assert _data(open_dataset(out)).identical(_data(reference))


def test_a_truncated_own_dataset_is_recomputed(tmp_path, reference):
    """A copy of this sweep's dataset cut short (a full disk, a copy interrupted) was refused as "not a dataset of
    this sweep" though it names its digest and its parts are there; a byte-flipped one was recomputed. Both are."""
    out = tmp_path / "out.nc"
    (tmp_path / "spec.toml").write_text(SPEC)
    run_sweep(SweepSpec.from_toml(SPEC), out, workers=0, progress=False)
    out.write_bytes(out.read_bytes()[:5000])
    rerun = _rerun(tmp_path, out)
    assert rerun.returncode == 0 and "most likely truncated" in rerun.stderr and "will be recomputed" in rerun.stderr
    assert _data(open_dataset(out)).identical(_data(reference))


def test_output_paths_a_user_gets_wrong(tmp_path, reference, monkeypatch, capsys):
    """`--out folder/` (a trailing separator) created the folder, then blamed it; a finished dataset in a read-only
    folder was refused ("permission denied") instead of reported up to date. (The folder's write permission is
    faked: a test run as root may write anywhere.)"""
    (tmp_path / "spec.toml").write_text(SPEC)
    proc = _rerun(tmp_path, str(tmp_path / "ts") + os.sep)
    assert proc.returncode == 2 and f"`--out` {tmp_path / 'ts'}{os.sep} is a directory; give the dataset's file name" \
        in proc.stderr
    assert not (tmp_path / "ts").exists() and not list(tmp_path.glob("ts*"))
    import xarray as xr  # a NetCDF file with no variables at --out: refused like any foreign file

    xr.Dataset(coords={"x": [1, 2]}).to_netcdf(tmp_path / "novars.nc", engine="scipy")
    with pytest.raises(ValueError, match=r"already exists and is not a dataset of this sweep"):
        run_sweep(SweepSpec.from_toml(SPEC), tmp_path / "novars.nc", workers=0, progress=False)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro_refused = r"cannot write the dataset .*ro/f.nc: .*ro is not writable \(permission denied\)"
    first = run_sweep(SweepSpec.from_toml(SPEC), ro / "f.nc", workers=0, progress=False)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if os.fspath(p) == str(ro) else real_access(p, mode))
    again = run_sweep(SweepSpec.from_toml(SPEC), ro / "f.nc", workers=0)
    assert "is up to date" in capsys.readouterr().err and again.attrs["created"] == first.attrs["created"]
    with pytest.raises(ValueError, match=ro_refused):
        run_sweep(SweepSpec.from_toml(SPEC.replace("seed = 21", "seed = 22")), ro / "f.nc", workers=0, force=True)
    # this sweep's own dataset, truncated, in that read-only folder: refused before any work, not recomputed into
    # a PermissionError half-way
    (ro / "f.nc").write_bytes((ro / "f.nc").read_bytes()[:5000])
    with pytest.raises(ValueError, match=ro_refused):
        run_sweep(SweepSpec.from_toml(SPEC), ro / "f.nc", workers=0)


def test_parts_of_other_code_are_recomputed(tmp_path, reference, capsys):
    """A sweep resumed after an update that kept the version string: its parts came from other code, and were
    adopted beside the new code's. Each part records the code digest now; another code's part is recomputed."""
    import json

    out = tmp_path / "out.nc"
    run_sweep(SweepSpec.from_toml(SPEC), out, workers=0, progress=False)
    os.remove(out)  # as if interrupted before the dataset was written
    parts = sorted((tmp_path / "out.nc.parts").rglob("*.npz"))
    for part in parts[:3]:  # what other code might have computed
        with np.load(part) as z:
            data = {k: z[k] for k in z.files}
        meta = json.loads(str(data.pop("__meta__")))
        data["T"] = data["T"] + 1.0
        np.savez(part, __meta__=np.array(json.dumps({**meta, "code": "0123456789abcdef"})), **data)
    again = run_sweep(SweepSpec.from_toml(SPEC), out, workers=0)
    err = capsys.readouterr().err
    # one line for all of them (after an update every part of an unfinished sweep is of other code)
    assert err.count("spare-mc: warning:") == 1 and "3 part files in " in err and \
        "were computed by other spare_mc code (code digest 0123456789abcdef; this code " in err
    assert _data(again).identical(_data(reference)) and len(list(parts[0].parent.glob("*.rejected"))) == 3


def test_a_dask_worker_running_other_code_stops_the_sweep(tmp_path, monkeypatch):
    """A worker started from another spare_mc (an older checkout, the same version string) put its numbers into
    the dataset without a word. The workers' code digests are compared with the client's, before the tasks and
    with every result. (A threads cluster in this process: its worker reports a fake digest.)"""
    from distributed import get_worker

    import spare_mc._lib.provenance as prov
    import spare_mc.sweep.cluster as sweep_cluster
    from spare_mc.sweep.cluster import MixedCodeError

    mine = prov.code_digest()  # a string: the fake below is pickled by value for the worker

    def fake():
        try:
            get_worker()
        except ValueError:
            return mine
        return "0ther0ther0ther0"

    monkeypatch.setattr(sweep_cluster, "code_digest", fake)  # where the sweep's dask code looks it up
    with _threads_cluster(1) as cluster:
        with pytest.raises(MixedCodeError, match=r"dask workers tcp://.* \(code 0ther0ther0ther0\) run other "
                                                 r"spare_mc code than this client \(code [0-9a-f]{16}\)"):
            run_sweep(SweepSpec.from_toml(SPEC), tmp_path / "x.nc", scheduler=cluster.scheduler_address,
                      progress=False)
    assert not (tmp_path / "x.nc").exists() and not list((tmp_path / "x.nc.parts").rglob("*.npz"))

    class Workers:  # the check before the tasks: what client.run(code_digest) returns for each worker
        def __init__(self, answer):
            self.answer = answer

        def run(self, fn):
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

    from spare_mc.sweep.cluster import _check_worker_code

    _check_worker_code(Workers({"tcp://a:1": mine, "tcp://b:2": mine}), mine)
    with pytest.raises(MixedCodeError, match=r"dask workers tcp://b:2 \(code 0ther\) run other spare_mc code"):
        _check_worker_code(Workers({"tcp://a:1": mine, "tcp://b:2": "0ther"}), mine)
    with pytest.raises(MixedCodeError, match=r"a dask worker cannot report its spare_mc code \(AttributeError: "):
        _check_worker_code(Workers(AttributeError("module has no attribute 'code_digest'")), mine)


def test_losing_the_scheduler_is_one_error_and_resumable(tmp_path, reference, monkeypatch):
    """The scheduler killed mid-sweep was "internal error: this is a bug" (exit 70, from the futures cancelled with
    scheduler-connection-lost). It is now an OSError (one line, exit 1) saying the finished tasks are kept, and a
    rerun completes the identical dataset. (A threads cluster in this process; its scheduler is closed as soon as
    the first finished task's part is on disk -- a fixed 2 s wait found none on a loaded machine --, the client
    gives up reconnecting 10 s later.)"""
    import threading

    import spare_mc.sweep.cluster as sweep_cluster

    real = sweep_cluster.run_task  # what the dask workers (threads of this process) run
    monkeypatch.setattr(sweep_cluster, "run_task", lambda *a, **k: time.sleep(0.3) or real(*a, **k))
    out = tmp_path / "x.nc"
    cluster = _threads_cluster(1)
    try:
        def close_scheduler():
            deadline = time.monotonic() + 120.0
            while not list((tmp_path / "x.nc.parts").rglob("*.npz")) and time.monotonic() < deadline:
                time.sleep(0.05)
            cluster.sync(cluster.scheduler.close)

        threading.Thread(target=close_scheduler, daemon=True).start()
        with pytest.raises(ConnectionError, match=r"lost the dask scheduler tcp://.*scheduler-connection-lost.*; the "
                                                  r"\d+ finished tasks are kept in .*x.nc.parts/[0-9a-f]{16}: run the "
                                                  r"same command again to resume"):
            run_sweep(SweepSpec.from_toml(SPEC), out, scheduler=cluster.scheduler_address, progress=False)
    finally:
        import gc
        import warnings

        try:  # its scheduler is gone: a plain close waits 30 s for it
            cluster.close(timeout=2)
        except Exception:  # noqa: BLE001 - the TimeoutError of that wait
            pass
        from distributed.core import Status

        cluster.status = Status.closed  # else it warns "unclosed cluster" when collected, at the latest at exit
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            cluster = None
            gc.collect()
    assert 0 < len(list((tmp_path / "x.nc.parts").rglob("*.npz"))) < 8 and not out.exists()
    monkeypatch.setattr(sweep_cluster, "run_task", real)
    assert _data(run_sweep(SweepSpec.from_toml(SPEC), out, workers=0, progress=False)).identical(_data(reference))


@pytest.mark.parametrize("fail_on", ["part", "dataset"])
def test_a_full_disk_names_the_file_and_the_sweep_resumes(tmp_path, reference, monkeypatch, capsys, fail_on):
    """ENOSPC while writing a finished task (or the dataset) said "No space left on device" and no path: a write
    to an open file carries no file name. The error now names the file and says the finished tasks are kept
    (exit 1), the torn temporary is gone, and a rerun completes the identical dataset."""
    import errno

    import spare_mc.sweep.storage as storage
    from spare_mc.cli import main

    real_fsync = os.fsync
    written = []

    def full_disk(fd):
        name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))  # the temporary: .<target>.<random>.tmp
        started = fail_on == "dataset" or len(written) >= 3
        if name.startswith(".out.nc." if fail_on == "dataset" else ".p") and started:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if name.startswith(".p"):
            written.append(name)
        return real_fsync(fd)

    monkeypatch.setattr(storage.os, "fsync", full_disk)
    (tmp_path / "spec.toml").write_text(SPEC)
    out = tmp_path / "out.nc"
    assert main(["sweep", str(tmp_path / "spec.toml"), "--out", str(out), "--workers", "0"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    where = r"out\.nc\.parts/[0-9a-f]{16}/p[\d-]+_r\d+-\d+\.npz" if fail_on == "part" else r"out\.nc"
    assert re.fullmatch(rf"spare-mc: error: No space left on device: \S*{where} \(a sweep keeps its finished tasks "
                        r"and resumes where it stopped\)", err), err
    parts = sorted(p.name for p in (tmp_path / "out.nc.parts").rglob("*") if p.is_file() and p.name != ".lock")
    assert not out.exists() and not any(p.endswith(".tmp") for p in parts), parts
    assert len(parts) == len(written) == (3 if fail_on == "part" else 24)  # 24 tasks: 4 points x 6 blocks
    monkeypatch.setattr(storage.os, "fsync", real_fsync)
    assert _data(run_sweep(SweepSpec.from_toml(SPEC), out, workers=0, progress=False)).identical(_data(reference))


def test_spec_files_a_user_gets_wrong(tmp_path):
    """A top-level key where a table belongs was a traceback (exit 70); a byte-order mark was "Invalid statement
    (at line 1, column 1)"; a FIFO given as the spec hung."""
    body = SPEC.strip() + "\n"
    for top, match in (('fixed = "none"', r"`fixed` must be a table \(\[fixed\] on a line of its own, then its "
                                          r"keys\), got a str value: 'none'"),
                       ('variants = ["a"]', r"`variants` must be a table")):
        (tmp_path / "t.toml").write_text(top + "\n" + body)
        with pytest.raises(ValueError, match=match):
            SweepSpec.from_file(tmp_path / "t.toml")
    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf" + body.encode())
    assert SweepSpec.from_file(tmp_path / "bom.toml") == SweepSpec.from_toml(SPEC)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(ValueError, match=r"the sweep spec .*fifo is not a regular file"):
        SweepSpec.from_file(tmp_path / "fifo")


@pytest.mark.parametrize("value, why", [(np.nan, "not finite"), (-np.inf, "not finite"), (999.0, "outside 1..N"),
                                        (2.5, "not an integer count"), (0.0, "outside 1..N")])
def test_impossible_values_in_a_part_are_rejected(tmp_path, reference, value, why):
    out = tmp_path / "out.nc"
    (tmp_path / "spec.toml").write_text(SPEC)
    run_sweep(SweepSpec.from_toml(SPEC), out, workers=0, progress=False)
    os.remove(out)
    folder, parts = _finished_parts(out)
    path = os.path.join(folder, parts[0])
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    data["T"] = data["T"].copy()
    data["T"][0] = value
    np.savez(path, **data)
    rerun = _rerun(tmp_path, out)
    assert rerun.returncode == 0 and why in rerun.stderr and parts[0] in rerun.stderr
    assert _data(open_dataset(out)).identical(_data(reference))


JUNK = textwrap.dedent("""
    import socket, sys, threading, time
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 0)); s.listen(5)
    print(s.getsockname()[1], flush=True)
    mode = sys.argv[1]
    def serve(c):
        if mode == "garbage":
            c.sendall(b"HTTP/1.1 400 Bad Request\\r\\nContent-Length: 0\\r\\n\\r\\n" * 4)
        time.sleep(60)
    while True:
        c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
""")


# 15-20 s each (the probe's timeout); the unreachable port stays in the default tier
# (test_hardening.py::test_7_unreachable_scheduler_fails_fast)
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["garbage", "silent"])
def test_a_port_that_is_not_a_dask_scheduler_fails_fast_in_one_line(tmp_path, mode):
    (tmp_path / "junk.py").write_text(JUNK)
    (tmp_path / "spec.toml").write_text(SPEC)
    server = subprocess.Popen([sys.executable, str(tmp_path / "junk.py"), mode], stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "spare_mc.cli", "sweep", str(tmp_path / "spec.toml"),
                               "--scheduler", f"tcp://127.0.0.1:{port}", "--out", str(tmp_path / "x.nc")],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1 and "does not answer as a dask scheduler" in proc.stderr
        assert proc.stderr.count("\n") == 1 and time.perf_counter() - t < 40
    finally:
        server.kill()
        server.communicate()


@pytest.mark.parametrize("sig, code, word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_a_signal_while_the_local_cluster_starts_stops_the_sweep(tmp_path, sig, code, word):
    """A Ctrl-C while the local cluster started (1-3 s) was lost: SIGINT was ignored then, so that the workers
    inherit the ignore, and the sweep ran on to the end; a SIGTERM then left a half-started cluster that dask's
    exit handler reported with a traceback. The workers now fork from a fork server that ignores SIGINT, and a
    signal during the start is acted upon once the cluster is up: one line, no traceback, nothing left running."""
    (tmp_path / "spec.toml").write_text(SPEC)
    (tmp_path / "child.py").write_text(CLUSTER_MARK)
    out, mark = tmp_path / "out.nc", tmp_path / "starting"
    proc = subprocess.Popen([sys.executable, str(tmp_path / "child.py"), str(tmp_path / "spec.toml"), str(out)],
                            env={**os.environ, "MARK": str(mark)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    _wait_for(mark, proc)
    os.killpg(proc.pid, sig)  # as a terminal's Ctrl-C does: the whole process group
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code and "Traceback" not in err, err[-2000:]
    assert err.strip().splitlines()[-1].startswith(f"spare-mc: {word}"), err
    assert not out.exists()
    for _ in range(600):  # the workers and the fork server end with their parent
        if not _live_members(proc.pid):
            break
        time.sleep(0.05)
    assert not _live_members(proc.pid)


def _live_members(pgid):
    """The processes of process group ``pgid`` that are still running (zombies left aside; Linux ``/proc``)."""
    live = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as fh:
                fields = fh.read().rsplit(")", 1)[1].split()  # after the command name: state, ppid, pgrp, ...
        except OSError:  # ended meanwhile
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            live.append(stat)
    return live


def test_ctrl_c_while_the_console_script_loads_is_one_line():
    """A Ctrl-C in the second that `spare-mc` spends importing its packages was a traceback from inside an import:
    now one line, exit 130. Importing spare_mc elsewhere leaves the importer's SIGINT handler alone."""
    import shutil

    script = os.path.join(os.path.dirname(sys.executable), "spare-mc")  # the installed console script
    script = script if os.path.exists(script) else shutil.which("spare-mc")
    assert script, "the spare-mc console script is not installed (pip install -e .)"
    proc = subprocess.Popen([script, "mu", "--n-groups", "100", "--r", "3"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for _ in range(2000):  # until numpy's core is loaded: spare_mc._lib.loading has run, the imports are under way
        with open(f"/proc/{proc.pid}/maps") as fh:
            if "_multiarray_umath" in fh.read():
                break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err == "spare-mc: interrupted\n" and out == "", (proc.returncode, err)
    # whatever handler the importer starts with (Python's own, or SIG_IGN inherited from a background job, nohup or a
    # CI runner), importing spare_mc leaves it as it was
    check = ("import signal; before = signal.getsignal(signal.SIGINT); import spare_mc; "
             "print(signal.getsignal(signal.SIGINT) is before, before is signal.SIG_IGN)")
    for start, ignored in ((signal.SIG_DFL, "False"), (signal.SIG_IGN, "True")):
        here = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                              preexec_fn=lambda start=start: signal.signal(signal.SIGINT, start))
        assert here.stdout.split() == ["True", ignored], here


@pytest.mark.slow  # 17 s; test_sweep.py's interrupted[ctrl-c] stays in the default tier
def test_ctrl_c_of_a_dask_sweep_is_one_line_and_resumable(tmp_path):
    """Ctrl-C at the terminal reaches the whole process group (the sweep and its worker processes): exit 130 with
    one message and no traceback from the workers or the scheduler; the rerun gives the identical dataset."""
    slow = SPEC.replace("block = 10", "block = 1")
    (tmp_path / "spec.toml").write_text(slow)
    out = tmp_path / "out.nc"
    proc = subprocess.Popen([sys.executable, "-m", "spare_mc.cli", "sweep", str(tmp_path / "spec.toml"), "--out",
                             str(out), "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    folder = f"{out}.parts/{SweepSpec.from_toml(slow).digest()}"
    for _ in range(1200):  # until the first tasks are done
        if os.path.isdir(folder) and len([p for p in os.listdir(folder) if p.endswith(".npz")]) >= 3:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "Traceback" not in err, err[-2000:]
    assert err.strip().splitlines()[-1].startswith("spare-mc: interrupted")
    rerun = _rerun(tmp_path, out)
    assert rerun.returncode == 0, rerun.stderr
    ref = run_sweep(SweepSpec.from_toml(slow), tmp_path / "ref.nc", workers=0, progress=False)
    assert _data(open_dataset(out)).identical(_data(ref))


def test_a_local_cluster_left_without_workers_stops_the_sweep(tmp_path, monkeypatch):
    """QA: after repeated kill -9 of its workers a local cluster had none left, and the sweep waited silently for
    ever. A local cluster with no worker connected for NO_WORKER_TIMEOUT_S now stops it: one OSError (exit 1)
    that says why and that a rerun resumes. (A threads cluster that never has a worker; the timeout shortened.)"""
    import spare_mc.sweep.cluster as sweep_cluster

    monkeypatch.setattr(sweep_cluster, "NO_WORKER_TIMEOUT_S", 1.0)
    monkeypatch.setattr(sweep_cluster, "_WATCH_EVERY_S", 0.2)
    monkeypatch.setattr(sweep_cluster, "_local_cluster", lambda n, forked: _threads_cluster(0))
    t0 = time.monotonic()
    with pytest.raises(sweep_cluster.WorkersLost, match=r"^the local dask cluster has had no worker for [0-9] s \(its "
                                                         r"worker processes were killed and not restarted\); no task "
                                                         r"had finished"):
        run_sweep(SweepSpec.from_toml(SPEC), tmp_path / "x.nc", workers=2, progress=False)
    assert time.monotonic() - t0 < 60 and not (tmp_path / "x.nc").exists()
    assert issubclass(sweep_cluster.WorkersLost, OSError)  # the command line's one line and exit 1


def test_an_external_scheduler_without_workers_warns_and_waits(tmp_path, reference, monkeypatch, capsys):
    """With an external scheduler workers may join later: the sweep warns once and goes on waiting; a worker that
    joins then computes the identical dataset."""
    import threading

    import spare_mc.sweep.cluster as sweep_cluster
    from spare_mc.sweep.progress import Progress

    monkeypatch.setattr(sweep_cluster, "NO_WORKER_TIMEOUT_S", 0.5)
    monkeypatch.setattr(sweep_cluster, "_WATCH_EVERY_S", 0.1)
    warned = threading.Event()
    real_warn = Progress.warn

    def warn(self, msg):
        real_warn(self, msg)
        if msg.startswith("no dask worker"):
            warned.set()

    monkeypatch.setattr(Progress, "warn", warn)
    with _threads_cluster(0) as cluster:
        def add_a_worker():
            if warned.wait(120):
                cluster.scale(1)

        threading.Thread(target=add_a_worker, daemon=True).start()
        ds = run_sweep(SweepSpec.from_toml(SPEC), tmp_path / "x.nc", scheduler=cluster.scheduler_address,
                       progress=False)
    assert warned.is_set()
    err = capsys.readouterr().err
    assert re.search(r"warning: no dask worker has been connected to tcp://\S+ for [0-9] s: waiting for one "
                     r"\(finished tasks are kept; Ctrl-C stops\)", err), err
    assert err.count("no dask worker") == 1
    assert _data(ds).identical(_data(reference))


def _fail_third_future(monkeypatch, error):
    """Make the third finished future of a sweep on dask raise dask's KilledWorker (``error`` "killed") or a
    MemoryError ("memory") from ``result()``, as dask and numpy raise them; returns the real ``_completed``."""
    from distributed import KilledWorker

    import spare_mc.sweep.cluster as sweep_cluster

    real = sweep_cluster._completed

    class Killed:
        def __init__(self, fut):
            self.key = fut.key

        def result(self):
            if error == "memory":
                np.empty(1 << 52, np.uint8)  # 4 PB: numpy's _ArrayMemoryError, a MemoryError
            raise KilledWorker(self.key, None, 3)

    def completed(*a, **k):
        for i, fut in enumerate(real(*a, **k)):
            yield Killed(fut) if i == 2 else fut

    monkeypatch.setattr(sweep_cluster, "_completed", completed)
    return real


@pytest.mark.parametrize("error", ["killed", "memory"])
def test_a_task_that_kills_its_workers_is_one_error_and_resumable(tmp_path, reference, monkeypatch, error):
    """QA: dask's KilledWorker (a task whose workers all died, e.g. out of memory) and a task's MemoryError (a
    worker under ``ulimit -v``) reached the user as "internal error: this is a bug" (exit 70). Each is one OSError
    now, naming the task and the likely cause; the finished tasks are kept and a rerun completes the identical
    dataset. (dask's own exception, or numpy's, raised by the third finished future of a threads cluster.) The
    KilledWorker message does not say the task caused the deaths: a task merely queued on a dying worker counts
    too (QA: it named a tiny task)."""
    import spare_mc.sweep.cluster as sweep_cluster

    real = _fail_third_future(monkeypatch, error)
    out = tmp_path / "x.nc"
    why = (r"^task p[0-9-]+_r\d+-\d+ ran out of memory on a dask worker \(give fewer workers, so that each has more, "
           r"or fewer replications per task: sweep.block\); the 2 finished tasks are kept" if error == "memory" else
           r"^dask gave up on task p[0-9-]+_r\d+-\d+ after 4 workers that had it died \(most often a task out of "
           r"memory: give fewer workers, so that each has more\); the 2 finished tasks are kept in "
           r".*x.nc.parts/[0-9a-f]{16}: run the same command again")
    with _threads_cluster(1) as cluster:
        with pytest.raises(sweep_cluster.WorkersLost, match=why):
            run_sweep(SweepSpec.from_toml(SPEC), out, scheduler=cluster.scheduler_address, progress=False)
    assert len(list((tmp_path / "x.nc.parts").rglob("*.npz"))) == 2 and not out.exists()
    monkeypatch.setattr(sweep_cluster, "_completed", real)
    assert _data(run_sweep(SweepSpec.from_toml(SPEC), out, workers=0, progress=False)).identical(_data(reference))


def test_a_local_cluster_that_does_not_start_is_one_line(tmp_path, monkeypatch, capsys):
    """QA: "Nanny failed to start" (a RuntimeError from dask) was "internal error" with a traceback, exit 70. It is
    one line and exit 1 now, with the two usual causes (a script without the main guard; too little memory)."""
    import spare_mc.sweep.cluster as sweep_cluster
    from spare_mc.cli import main

    def fail(n, forked):
        raise RuntimeError("Nanny failed to start.")

    monkeypatch.setattr(sweep_cluster, "_local_cluster", fail)
    (tmp_path / "spec.toml").write_text(SPEC)
    assert main(["sweep", str(tmp_path / "spec.toml"), "--out", str(tmp_path / "x.nc"), "--workers", "2"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len([ln for ln in err.splitlines() if "error" in ln]) == 1, err
    assert err.splitlines()[-1].startswith("spare-mc: error: the local dask cluster did not start (RuntimeError: "
                                           "Nanny failed to start.); if run_sweep is called from a script, call it "
                                           "under `if __name__ == \"__main__\":`"), err


def test_run_sweep_from_a_script_without_the_main_guard(tmp_path):
    """QA: a script that calls run_sweep at its top level, without ``if __name__ == "__main__":``, was imported
    again by every dask worker process, which started the sweep again. A call from the top level of a script being
    imported as ``__mp_main__`` is refused, naming the guard, and the script itself gets one error (the cluster
    could not start) with the same hint; nothing is computed."""
    from spare_mc._lib.validation import UsageValueError

    spec = SweepSpec.from_toml(SPEC)
    code = compile("run_sweep(spec, out, workers=0, progress=False)", str(tmp_path / "script.py"), "exec")
    with pytest.raises(UsageValueError, match=r"run_sweep was called from the top level of a script without the "
                                              r"`if __name__ == \"__main__\":` guard"):
        exec(code, {"__name__": "__mp_main__", "run_sweep": run_sweep, "spec": spec, "out": tmp_path / "a.nc"})
    exec(code, {"__name__": "__main__", "run_sweep": run_sweep, "spec": spec, "out": tmp_path / "b.nc"})  # guarded
    assert (tmp_path / "b.nc").exists() and not (tmp_path / "a.nc").exists()

    (tmp_path / "spec.toml").write_text(SPEC)
    (tmp_path / "noguard.py").write_text(textwrap.dedent(f"""
        from spare_mc.sweep import SweepSpec, run_sweep
        run_sweep(SweepSpec.from_file({str(tmp_path / 'spec.toml')!r}), {str(tmp_path / 'c.nc')!r}, workers=2,
                  progress=False)
    """))
    proc = subprocess.run([sys.executable, str(tmp_path / "noguard.py")], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("spare_mc.sweep.cluster.WorkersLost: the local dask cluster did not start") and \
        'call it under `if __name__ == "__main__":`' in last, proc.stderr
    assert 'UsageValueError: run_sweep was called from the top level of a script without the' in proc.stderr
    assert not (tmp_path / "c.nc").exists() and not list((tmp_path / "c.nc.parts").rglob("*.npz"))


def test_resuming_with_another_block_size_names_the_block_that_reuses_the_parts(tmp_path, reference, capsys):
    """QA: a sweep resumed with another block size recomputed everything, silently leaving the finished parts
    unused (a part is a point and a range of replications). It still recomputes (the numbers do not depend on the
    block), but warns and names the block that would reuse them."""
    import dataclasses

    spec = SweepSpec.from_toml(SPEC)
    out = tmp_path / "x.nc"
    run_sweep(spec, out, workers=0, progress=False)
    out.unlink()  # as if the sweep had stopped before its dataset: every part is on disk
    capsys.readouterr()
    ds = run_sweep(dataclasses.replace(spec, block=20), out, workers=0, progress=False)
    err = capsys.readouterr().err
    assert re.search(r"warning: \S+x.nc.parts/[0-9a-f]{16} holds finished tasks of this sweep cut into blocks of "
                     r"another size \(24 of block 10\); with block = 20 they are not reused. To reuse them, stop and "
                     r"run again with block = 10", err), err
    assert _data(ds).drop_attrs().identical(_data(reference).drop_attrs())
    assert {k: v for k, v in _data(ds).attrs.items() if k != "spec"} == \
        {k: v for k, v in _data(reference).attrs.items() if k != "spec"}
    out.unlink()
    run_sweep(dataclasses.replace(spec, block=20), out, workers=0, progress=False)  # its own parts: no warning
    assert "another size" not in capsys.readouterr().err


def test_task_keys_are_read_back_by_the_pattern_that_finds_other_blocks():
    """The block warning reads the part names back with ``TASK_KEY_RE``, the pattern of ``task_key`` that
    ``SweepSpec.tasks()`` names them with: every key of a sweep matches and gives its replications."""
    import dataclasses

    from spare_mc.sweep.spec import TASK_KEY_RE

    for block in (7, 10, 40):
        spec = dataclasses.replace(SweepSpec.from_toml(SPEC), block=block)
        for key, _idx, _params, a, b in spec.tasks():
            m = TASK_KEY_RE.fullmatch(key)
            assert m and (int(m.group(1)), int(m.group(2))) == (a, b), key


def test_out_of_memory_is_one_line_not_a_bug(tmp_path, monkeypatch, capsys):
    """QA: a MemoryError (``ulimit -v``, a container without overcommit) in any command was "internal error: this is
    a bug" with a traceback, exit 70. It is one line and exit 1."""
    import spare_mc.sweep.runner as sweep
    from spare_mc.cli import main

    def big(*a, **k):
        np.empty(1 << 52, np.uint8)  # 4 PB: numpy raises a MemoryError

    monkeypatch.setattr(sweep, "run_task", big)
    (tmp_path / "spec.toml").write_text(SPEC)
    assert main(["sweep", str(tmp_path / "spec.toml"), "--out", str(tmp_path / "x.nc"), "--workers", "0"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    assert err.splitlines()[-1].startswith("spare-mc: error: out of memory: the run needs more memory than this "
                                           "process may use"), err


def test_run_sweep_from_standard_input_names_the_cause(tmp_path):
    """QA: code piped into ``python -`` cannot start a local cluster (its workers re-import a main script that has
    no file); the error said to add the main guard, which cannot help. It names the cause and the way out."""
    (tmp_path / "spec.toml").write_text(SPEC)
    code = textwrap.dedent(f"""
        from spare_mc.sweep import SweepSpec, run_sweep
        if __name__ == "__main__":
            run_sweep(SweepSpec.from_file({str(tmp_path / 'spec.toml')!r}), {str(tmp_path / 'c.nc')!r}, workers=2,
                      progress=False)
    """)
    proc = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1] == (
        "spare_mc.sweep.cluster.WorkersLost: the local dask cluster did not start: code read from standard input "
        "(python -) "
        "cannot start one, because its worker processes re-import the main script, which has no file here. Save the "
        "code to a file, or run the tasks in this process (workers=0)"), proc.stderr
    assert not (tmp_path / "c.nc").exists()


def test_batch_sizes():
    """Sweep tasks per dask task (:func:`spare_mc.sweep.cluster._batch_size`): one for a small sweep or a long
    task, more for many short tasks, within the caps."""
    from spare_mc.sweep.cluster import BATCHES_PER_WORKER, MAX_BATCH, MAX_BATCH_REPS, _batch_size

    assert _batch_size(12, 1, 10) == 1  # SPEC: every worker needs its batches
    assert _batch_size(10_000, 2, MAX_BATCH_REPS) == 1  # a long task runs alone
    assert _batch_size(10_000, 2, MAX_BATCH_REPS + 1) == 1
    assert _batch_size(10_000, 2, 1) == MAX_BATCH
    assert _batch_size(780, 2, 5) == min(MAX_BATCH, MAX_BATCH_REPS // 5, 780 // (BATCHES_PER_WORKER * 2))
    assert _batch_size(0, 0, 0) == 1


def test_batched_tasks_give_the_identical_dataset_and_a_lost_batch_keeps_the_others(tmp_path, monkeypatch):
    """Tasks run in batches of several per dask task (a sweep of many short tasks) give the dataset of the run in
    one process; when dask gives up on a batch, the error names its tasks, the tasks of the batches finished before
    are kept, and a rerun completes the identical dataset."""
    import spare_mc.sweep.cluster as sweep_cluster

    spec = SweepSpec.from_toml(SPEC.replace("reps = 60", "reps = 40").replace("block = 10", "block = 1"))
    assert spec.n_tasks == 160 and sweep_cluster._batch_size(160, 1, 1) == 10
    ref = run_sweep(spec, tmp_path / "ref.nc", workers=0, progress=False)
    with _threads_cluster(1) as cluster:
        ds = run_sweep(spec, tmp_path / "batched.nc", scheduler=cluster.scheduler_address, progress=False)
    assert _data(ds).identical(_data(ref))

    real = _fail_third_future(monkeypatch, "killed")
    out = tmp_path / "x.nc"
    why = (r"^dask gave up on task p[0-9-]+_r\d+-\d+ \(a batch of 10 tasks, to p[0-9-]+_r\d+-\d+\) after 4 workers "
           r"that had it died .*; the 20 finished tasks are kept in .*x.nc.parts/[0-9a-f]{16}: run the same command")
    with _threads_cluster(1) as cluster, pytest.raises(sweep_cluster.WorkersLost, match=why):
        run_sweep(spec, out, scheduler=cluster.scheduler_address, progress=False)
    assert len(list((tmp_path / "x.nc.parts").rglob("*.npz"))) == 20 and not out.exists()
    monkeypatch.setattr(sweep_cluster, "_completed", real)
    assert _data(run_sweep(spec, out, workers=0, progress=False)).identical(_data(ref))


def _spawned_workers(pid):
    """The pids of the multiprocessing workers that process ``pid`` has started (Linux ``/proc``)."""
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            with open(stat.replace("stat", "cmdline"), "rb") as fh:
                cmd = fh.read()
        except (OSError, ValueError, IndexError):  # ended meanwhile
            continue
        if ppid == pid and b"multiprocessing" in cmd:
            found.append(int(stat.split("/")[2]))
    return found


@pytest.mark.slow  # ~30 s
@pytest.mark.parametrize("sig, delay, code, word", [(signal.SIGINT, 0.0, 130, "interrupted"),
                                                    (signal.SIGINT, 1.5, 130, "interrupted"),
                                                    (signal.SIGTERM, 0.0, 143, "terminated")])
def test_ctrl_c_of_a_study_in_worker_processes_is_one_line(sig, delay, code, word):
    """Ctrl-C (or SIGTERM) reaches the study's spawned worker processes too (`reproduce --table domains --workers
    2`), as they start (``delay`` 0: the pool's start interrupted printed tracebacks) or while they run: the console
    script says so once and exits 130 (143); the workers leave without a word and the whole process group ends."""
    import shutil

    script = os.path.join(os.path.dirname(sys.executable), "spare-mc")
    script = script if os.path.exists(script) else shutil.which("spare-mc")
    assert script, "the spare-mc console script is not installed (pip install -e .)"
    proc = subprocess.Popen([script, "reproduce", "--table", "domains", "--n-values", "200", "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for _ in range(1200):  # the first block runs in the parent, then the workers start
        if _spawned_workers(proc.pid) or proc.poll() is not None:
            break
        time.sleep(0.05)
    assert proc.poll() is None and _spawned_workers(proc.pid), "no worker process started"
    time.sleep(delay)  # 0: as they start (a signal then, raised between starting a worker and sending it its task,
    os.killpg(proc.pid, sig)  # left the worker reading an empty pipe, or the pool unable to close)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code and "Traceback" not in err and "Error" not in err, err[-2000:]
    assert err.count(f"spare-mc: {word}") == 1 and err.strip().splitlines()[-1] == f"spare-mc: {word}", err
    for _ in range(600):
        if not _live_members(proc.pid):
            break
        time.sleep(0.05)
    assert not _live_members(proc.pid)
