"""Sweeps on dask: identical datasets whatever the workers, block size, scheduler, lost workers or interruptions."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from spare_mc import TimelineConfig, UsageValueError
from spare_mc.sweep import SweepSpec, compare_dataset, open_dataset, run_sweep, write_dataset

SPEC = """
[sweep]
name = "t"
quantity = "wipeout"
reps = 300
block = 100
seed = 11

[grid]
n_groups = [60, 120]
r = [2, 3]
layout = ["cyclic", "random"]
"""

SLOW_SPEC = """
[sweep]
name = "slow"
quantity = "wipeout"
reps = 8000
block = 1000
seed = 5

[grid]
n_groups = [400, 800]
r = [3, 4]
layout = ["cyclic"]
"""


def _is_part(path):
    """A finished task file (not a temporary one being written)."""
    return path.suffix == ".npz" and not path.name.startswith(".")


def _data(ds):
    """The dataset without the provenance attributes that legitimately differ (creation time, block size)."""
    ds = ds.copy()
    ds.attrs = {k: v for k, v in ds.attrs.items() if k not in ("created", "spec", "content_sha256")}
    return ds


@pytest.fixture
def serial(tmp_path):
    spec = SweepSpec.from_toml(SPEC)
    return run_sweep(spec, tmp_path / "serial.nc", workers=0, progress=False), spec


@pytest.fixture(scope="module")
def slow_reference(tmp_path_factory):
    """SLOW_SPEC's dataset computed in this process (about 8 s), once for the tests that compare with it."""
    return run_sweep(SweepSpec.from_toml(SLOW_SPEC), tmp_path_factory.mktemp("slow") / "ref.nc", workers=0,
                     progress=False)


def test_local_cluster_and_block_size_give_the_identical_dataset(tmp_path, serial):
    ds0, spec = serial
    import dataclasses
    ds1 = run_sweep(dataclasses.replace(spec, block=37), tmp_path / "cluster.nc", workers=2, progress=False)
    assert _data(ds0).identical(_data(ds1))
    assert _data(open_dataset(tmp_path / "cluster.nc")).identical(_data(open_dataset(tmp_path / "serial.nc")))


def test_dataset_round_trip_and_provenance(tmp_path, serial):
    ds0, spec = serial
    back = open_dataset(tmp_path / "serial.nc")
    assert back.attrs["quantity"] == "wipeout" and back.attrs["root_seed"] == "11"
    assert SweepSpec.from_toml(back.attrs["spec"]) == spec and back.attrs["spec_digest"] == spec.digest()
    for k in ("spare_mc_version", "created", "seeding", "software"):
        assert back.attrs[k]
    assert back.attrs["schema_version"] == 2
    assert {"numpy", "numba", "scipy", "xarray", "dask"} <= set(json.loads(back.attrs["software"]))
    assert back["T"].attrs["units"] == "1" and "wipe-out" in back["T"].attrs["long_name"]
    assert back["T_ci_low"].attrs["long_name"].startswith("95% CI low")
    np.testing.assert_array_equal(back["T"].values, ds0["T"].values)
    assert list(back["layout"].values) == ["cyclic", "random"]
    # every value equals a direct wipe-out run with the replication's own seed, keyed by (N, rep) only
    import spare_mc as sm
    one = sm.wipeout_mc("cyclic", 1, n_groups=120, r=3, rng=np.random.SeedSequence(11, spawn_key=(120, 7)))
    assert back["T"].sel(n_groups=120, r=3, layout="cyclic").values[7] == one.T[0]
    write_dataset(back, tmp_path / "again.nc")
    assert _data(open_dataset(tmp_path / "again.nc")).identical(_data(back))


def test_compare_with_exact_and_holm(serial):
    ds0, _ = serial
    res = compare_dataset(ds0, alpha=1e-4)
    assert len(res.rows) == 8 and res.tested == res.consistent == 8
    assert all(r.p_holm >= r.p_value for r in res.rows)
    bad = ds0.copy()
    bad["T"] = bad["T"] + 3.0
    assert not any(r.consistent for r in compare_dataset(bad, alpha=1e-4).rows)


def test_compare_command_says_what_it_estimates(tmp_path, serial, capsys):
    """The command prints T, the failures up to the wipe-out, where the figures show the masked failures T - 1:
    its first line says so."""
    from spare_mc.cli import main

    assert main(["compare", str(tmp_path / "serial.nc")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("estimate: mean T, the failures up to and including the wipe-out (figures and tables "
                             "show the masked failures, T - 1)")
    assert out[1].startswith("grid point") and out[-1] == "8/8 grid points consistent with the exact value at " \
                                                           "family-wise alpha=0.001"


def _dask(args, **kw):
    return subprocess.Popen([sys.executable, "-m", "dask", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)


@pytest.fixture
def real_cluster(tmp_path):
    """A dask scheduler and two single-threaded worker processes on loopback (no nannies)."""
    sched_file = tmp_path / "scheduler.json"
    procs = [_dask(["scheduler", "--host", "127.0.0.1", "--port", "0", "--scheduler-file", str(sched_file),
                    "--no-dashboard"])]
    for _ in range(200):
        if sched_file.exists() and sched_file.read_text().strip():
            break
        time.sleep(0.05)
    address = json.loads(sched_file.read_text())["address"]
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    workers = [_dask(["worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name", f"w{i}"],
                     env=env) for i in range(2)]
    procs += workers
    from distributed import Client
    with Client(address) as c:
        c.wait_for_workers(2, timeout=60)
    yield address, workers
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "spare_mc.cli", *args], capture_output=True, text=True, **kw)


def test_real_scheduler_gives_the_identical_dataset(tmp_path, serial, real_cluster):
    address, _ = real_cluster
    ds0, _ = serial
    (tmp_path / "spec.toml").write_text(SPEC)
    proc = _cli("sweep", str(tmp_path / "spec.toml"), "--scheduler", address, "--out", str(tmp_path / "remote.nc"))
    assert proc.returncode == 0, proc.stderr
    assert _data(open_dataset(tmp_path / "remote.nc")).identical(_data(ds0))


@pytest.mark.slow  # a real cluster and a killed worker: about 25 s, in .ci/run's slow tier
def test_killed_worker_is_survived(tmp_path, real_cluster, slow_reference):
    address, workers = real_cluster
    (tmp_path / "spec.toml").write_text(SLOW_SPEC)
    parts = tmp_path / "remote.nc.parts" / SweepSpec.from_toml(SLOW_SPEC).digest()
    proc = subprocess.Popen([sys.executable, "-m", "spare_mc.cli", "sweep", str(tmp_path / "spec.toml"),
                             "--scheduler", address, "--out", str(tmp_path / "remote.nc")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(600):  # wait for the first finished task, then kill a worker mid-sweep
        if parts.exists() and any(_is_part(p) for p in parts.iterdir()):
            break
        time.sleep(0.05)
    workers[0].kill()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert _data(open_dataset(tmp_path / "remote.nc")).identical(_data(slow_reference))


@pytest.mark.parametrize("sig", [pytest.param(signal.SIGINT, id="ctrl-c"),
                                 pytest.param(signal.SIGTERM, id="terminated", marks=pytest.mark.slow),
                                 pytest.param(signal.SIGKILL, id="killed", marks=pytest.mark.slow)])
def test_interrupted_sweep_resumes_to_the_identical_dataset(tmp_path, sig, slow_reference):
    (tmp_path / "spec.toml").write_text(SLOW_SPEC)
    out = tmp_path / "resumed.nc"
    parts = tmp_path / "resumed.nc.parts" / SweepSpec.from_toml(SLOW_SPEC).digest()
    proc = subprocess.Popen([sys.executable, "-m", "spare_mc.cli", "sweep", str(tmp_path / "spec.toml"), "--out",
                             str(out), "--workers", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    for _ in range(1200):
        if parts.exists() and sum(_is_part(p) for p in parts.iterdir()) >= 3:
            break
        time.sleep(0.05)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    if sig != signal.SIGKILL:  # Ctrl-C and SIGTERM (a batch scheduler's stop) end with one line saying how to resume
        word, code = ("interrupted", 130) if sig == signal.SIGINT else ("terminated", 143)
        assert proc.returncode == code and "Traceback" not in err, err[-2000:]
        assert err.strip().splitlines()[-1] == (f"spare-mc: {word} (a sweep keeps its finished tasks and resumes "
                                                "where it stopped)")
    done = sorted(p.name for p in parts.iterdir() if _is_part(p))
    total = len(SweepSpec.from_toml(SLOW_SPEC).tasks())
    assert 3 <= len(done) < total, (len(done), total)
    assert not out.exists()
    stamps = {name: (parts / name).stat().st_mtime_ns for name in done}
    proc = _cli("sweep", str(tmp_path / "spec.toml"), "--out", str(out), "--workers", "0")
    assert proc.returncode == 0, proc.stderr
    assert all((parts / name).stat().st_mtime_ns == t for name, t in stamps.items())  # not recomputed
    assert _data(open_dataset(out)).identical(_data(slow_reference))


@pytest.mark.parametrize("text, match", [
    (SPEC.replace("n_groups = [60, 120]", "n_group = [60, 120]"), r"unknown parameter `grid.n_group`"),
    (SPEC.replace("r = [2, 3]", "r = []"), r"`grid.r` must be a non-empty list"),
    (SPEC.replace('layout = ["cyclic", "random"]', 'layout = ["sidon"]').replace("r = [2, 3]", "r = [2, 12]"),
     r"grid point \(n_groups=60, r=12, layout='sidon'\): Sidon offsets are impossible"),
    (SPEC.replace('quantity = "wipeout"', 'quantity = "speed"'), r"`sweep.quantity` must be one of"),
    (SPEC.replace("reps = 300", "reps = 1"), r"`sweep.reps` must be >= 2"),
    (SPEC.replace("seed = 11", ""), r"`sweep.seed` is required"),
    (SPEC + "\n[other]\nx = 1\n", r"unknown tables \['other'\] in the sweep spec; expected some of \['fixed', 'grid'"),
    ("[sweep\nname=", r"not valid TOML"),
    (SPEC.replace("r = [2, 3]", "r = [2, 2]"), r"must not repeat values \(2 appears twice\)"),
])
def test_bad_specs_fail_before_any_work(tmp_path, text, match):
    with pytest.raises((ValueError, TypeError), match=match):
        run_sweep(SweepSpec.from_toml(text), tmp_path / "x.nc", workers=0, progress=False)
    assert not (tmp_path / "x.nc.parts").exists()


def test_failure_models_are_sweepable(tmp_path):
    """Any model parameter can be a dimension, including the failure model and the age policy."""
    text = """
[sweep]
name = "fm"
quantity = "overhead"
reps = 6
seed = 3
[grid]
failure_model = ["uniform", "per_gpu", "rack", "mixed"]
[fixed]
n_groups = 120
r = 4
domain_mtbf_s = 3.0e7
domain_levels = "node,rack=3e7"
"""
    ds = run_sweep(SweepSpec.from_toml(text), tmp_path / "fm.nc", workers=0, progress=False)
    assert list(ds["failure_model"].values) == ["uniform", "per_gpu", "rack", "mixed"]
    assert (ds["T"].values >= 1).all()
    ttt = text.replace('quantity = "overhead"', 'quantity = "ttt"').replace('"uniform", ', "") \
        .replace("[fixed]", '[fixed]\nstrategy = "spare"\nn_steps = 200\nage_policy = "keep"')
    ds = run_sweep(SweepSpec.from_toml(ttt), tmp_path / "fm2.nc", workers=0, progress=False)
    assert ds.sizes["failure_model"] == 3 and ds.attrs["strategy"] == "spare"
    with pytest.raises(ValueError, match=r"`domain_mtbf_s` \(mean lifetime of one rack domain, s\) is required with "
                                         r"failure_model='rack'"):
        run_sweep(SweepSpec.from_toml(text.replace("domain_mtbf_s = 3.0e7", "")), tmp_path / "x.nc", workers=0)
    with pytest.raises(ValueError, match=r"'uniform' has no clock"):
        run_sweep(SweepSpec.from_toml(ttt.replace('["per_gpu", "rack", "mixed"]', '["uniform"]')), tmp_path / "y.nc",
                  workers=0)


def test_parts_of_another_spec_are_never_adopted(tmp_path, serial):
    """A seed-12 sweep into a folder that holds seed-11 parts computes its own numbers (the parts live under their
    digest), so the dataset labelled root_seed=12 holds seed-12 results."""
    ds11, _ = serial
    shutil.copytree(tmp_path / "serial.nc.parts", tmp_path / "other.nc.parts")
    spec = SweepSpec.from_toml(SPEC.replace("seed = 11", "seed = 12"))
    ds = run_sweep(spec, tmp_path / "other.nc", workers=0, progress=False)
    fresh = run_sweep(spec, tmp_path / "fresh.nc", workers=0, progress=False)
    assert ds.attrs["root_seed"] == "12" and _data(ds).identical(_data(fresh))
    assert not np.array_equal(ds["T"].values, ds11["T"].values)


def test_a_renamed_spec_relabels_its_up_to_date_dataset(tmp_path, serial, capsys):
    """The name is not in the digest (it changes no number), so a spec renamed since its run is up to date; the
    dataset, returned and on disk, then carries the new name, and nothing is recomputed."""
    ds_t, _ = serial
    shutil.copy(tmp_path / "serial.nc", tmp_path / "renamed.nc")
    spec = SweepSpec.from_toml(SPEC.replace('name = "t"', 'name = "u"'))
    assert spec.digest() == SweepSpec.from_toml(SPEC).digest()
    capsys.readouterr()
    ds = run_sweep(spec, tmp_path / "renamed.nc", workers=0, progress=True)
    assert "its sweep name is now 'u' (was 't'); nothing to compute" in capsys.readouterr().err
    parts = tmp_path / "renamed.nc.parts"
    assert not any(_is_part(p) for p in parts.rglob("*"))  # nothing computed
    on_disk = open_dataset(tmp_path / "renamed.nc")
    assert ds.attrs["name"] == on_disk.attrs["name"] == "u"
    expected = _data(ds_t)
    expected.attrs["name"] = "u"
    assert _data(on_disk).identical(expected) and _data(ds).identical(expected)
    again = run_sweep(spec, tmp_path / "renamed.nc", workers=0, progress=True)  # now plainly up to date
    assert "nothing to compute" in capsys.readouterr().err and again.attrs["name"] == "u"


def test_grid_order_is_part_of_the_identity(tmp_path):
    """Parts are stored by their position in the grid, so a spec listing the same grid keys in another order must
    not adopt them: that put every value under another point's labels (a QA pass found it). The order is in the
    digest; a grid in sorted key order keeps its older digest, and a dataset written under the older digest of a
    grid in another order is recomputed (that code could have mixed its points)."""
    small = "[sweep]\nname = \"o\"\nquantity = \"wipeout\"\nreps = 3\nblock = 1\nseed = 7\n\n[grid]\n{}\n\n" \
            "[fixed]\nn_groups = 60\n"
    r_first = SweepSpec.from_toml(small.format('r = [2, 4]\nlayout = ["cyclic", "block"]'))
    layout_first = SweepSpec.from_toml(small.format('layout = ["cyclic", "block"]\nr = [2, 4]'))
    assert r_first.digest() != layout_first.digest()
    assert layout_first.digest() == layout_first.digest(legacy=True)  # sorted keys: the digest it always had
    assert r_first.digest(legacy=True) == layout_first.digest(legacy=True)  # the ambiguity that was the bug
    ref = run_sweep(layout_first, tmp_path / "ref.nc", workers=0, progress=False)
    run_sweep(r_first, tmp_path / "x.nc", workers=0, progress=False)
    os.remove(tmp_path / "x.nc")  # as if interrupted after its parts were written
    mixed = run_sweep(layout_first, tmp_path / "x.nc", workers=0, progress=False)
    assert _data(mixed).identical(_data(ref))
    # a dataset written under the older digest by a spec whose grid is not in sorted key order: the code of that
    # time could have filled it with another order's parts (values under other points' labels, dimensions in this
    # spec's order, as a QA pass rebuilt with that code), so it is recomputed, not returned as up to date
    old = run_sweep(r_first, tmp_path / "old.nc", workers=0, progress=False)
    mixed_up = old.copy(deep=True)
    mixed_up["T"] = mixed_up["T"].copy(data=mixed_up["T"].values[::-1, ::-1])  # values under other labels
    mixed_up.attrs["spec_digest"] = r_first.digest(legacy=True)
    write_dataset(mixed_up, tmp_path / "old2.nc")
    shutil.rmtree(tmp_path / "old2.nc.parts", ignore_errors=True)
    again = run_sweep(r_first, tmp_path / "old2.nc", workers=0, progress=False)
    assert again.attrs["spec_digest"] == r_first.digest() and _data(again).identical(_data(old))
    with pytest.raises(ValueError, match=r"already exists and is a dataset of another sweep"):
        run_sweep(layout_first, tmp_path / "old2.nc", workers=0, progress=False)
    # a grid in sorted key order has one digest, then and now: its dataset stays up to date
    assert run_sweep(layout_first, tmp_path / "ref.nc", workers=0, progress=False).attrs["created"] == \
        ref.attrs["created"]
    # and the other spec's dataset is still another sweep's (its digest is the unsorted spec's legacy one, but its
    # dimensions are in the other order): refused, not recomputed over (a review caught the first version of the
    # legacy rule doing that)
    with pytest.raises(ValueError, match=r"already exists and is a dataset of another sweep"):
        run_sweep(r_first, tmp_path / "ref.nc", workers=0, progress=False)
    assert open_dataset(tmp_path / "ref.nc").attrs["created"] == ref.attrs["created"]
    # parts left by a run before the fix sat under the shared older digest: each part records its point now, so
    # another point's part at the same position is rejected (and recomputed), whatever folder it is found in
    src = tmp_path / "x.nc.parts" / r_first.digest()
    dst = tmp_path / "y.nc.parts" / layout_first.digest()
    shutil.copytree(src, dst)
    y = run_sweep(layout_first, tmp_path / "y.nc", workers=0, progress=False)
    assert _data(y).identical(_data(ref))
    assert sorted(p.name for p in dst.iterdir() if p.name.endswith(".rejected"))  # set aside, not adopted


def test_cli_bad_sweep_arguments():
    proc = _cli("sweep", "does-not-exist.toml")
    assert proc.returncode == 2 and "sweep spec file not found" in proc.stderr
    proc = _cli("compare", "nope.nc")
    assert proc.returncode == 2 and "dataset file not found" in proc.stderr


def test_figures_from_every_quantity(tmp_path, serial):
    """Every plotting function draws from sweep datasets (given ax or a new one) and the PNGs are written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from spare_mc import plots

    ds0, _ = serial
    over = run_sweep(SweepSpec.from_toml(SPEC.replace('quantity = "wipeout"', 'quantity = "overhead"')
                                         .replace("reps = 300", "reps = 20").replace("block = 100", "block = 10")),
                     tmp_path / "over.nc", workers=0, progress=False)
    ttt = {}
    for strategy, grid in (("spare", "r = [2, 3]"), ("rep", "r = [2, 4]"), ("ckpt", "")):
        text = f"""
[sweep]
name = "ttt_{strategy}"
quantity = "ttt"
reps = 3
seed = 1
[grid]
n_groups = [60, 120]
{grid}
[fixed]
strategy = "{strategy}"
n_steps = 300
{'r = 1' if strategy == 'ckpt' else ''}
"""
        ttt[f"ttt_{strategy}"] = run_sweep(SweepSpec.from_toml(text), tmp_path / f"ttt_{strategy}.nc", workers=0,
                                           progress=False)
    assert plots.plot_masked(ds0, 60)  # ax=None: a new figure
    fig, ax = plt.subplots()
    assert len(plots.plot_overhead(over, 120, ax=ax)) >= 6
    assert plots.plot_ttt(list(ttt.values()), 60, "availability", ax=ax)
    assert plots.plot_optimal_r(list(ttt.values()), ax=ax)
    plt.close("all")
    paths = plots.save_figures({"masked": ds0, "overhead": over, **ttt}, tmp_path / "fig")
    assert sorted(os.path.basename(p) for p in paths) == ["masked.png", "overhead.png", "ttt.png"]
    assert all(os.path.getsize(p) > 10_000 for p in paths)
    # the CLI draws the same from stored datasets
    proc = _cli("plot", str(tmp_path / "serial.nc"), "--out", str(tmp_path / "fig2"), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["figures"] == [str(tmp_path / "fig2" / "serial.png")]


def test_check_points_builds_each_holder_table_once_and_still_refuses_an_impossible_one():
    """``check_points`` checks a holder table once per (strategy, layout, N, r), not once per point: the period
    factors of one r share it, and an impossible one (Sidon, r = 6 at N = 12) is still refused, naming its point."""
    spec = SweepSpec.from_toml(
        '[sweep]\nname = "s"\nquantity = "ttt"\nreps = 2\nseed = 1\n[fixed]\nstrategy = "spare"\nlayout = "sidon"\n'
        'n_groups = 12\n[grid]\nckpt_period_factor = [1.0, 2.0]\nr = [2, 6]\n')
    built = []
    real = TimelineConfig.layout_object

    def counted(self, rng=None):
        built.append(self.r)
        return real(self, rng)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(TimelineConfig, "layout_object", counted)
        with pytest.raises(UsageValueError, match=r"grid point \(ckpt_period_factor=1.0, r=6\): Sidon offsets"):
            spec.check_points()
        assert built == [2, 6]
        built.clear()
        SweepSpec.from_toml(spec.to_toml().replace("r = [2, 6]", "r = [2, 3]")).check_points()
        assert built == [2, 3]  # 4 points, 2 tables
