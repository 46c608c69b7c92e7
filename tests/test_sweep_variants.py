"""Sweeps with named variants (a dimension of parameter sets) and an offset of the replication numbers."""

import numpy as np
import pytest

import spare_mc as sm
from spare_mc.sweep import SweepSpec, compare_dataset, run_sweep
from spare_mc.ttt.config import TimelineConfig
from spare_mc.ttt.run import simulate_ttt

TTT = """
[sweep]
name = "v"
quantity = "ttt"
reps = 3
block = 2
seed = 4
first_rep = 10

[grid]
r = [2, 3]

[fixed]
strategy = "spare"
n_groups = 24
n_steps = 120
jitter_sd = 0.0

[variants.baseline]

[variants.linear_restart]
restart_growth = "linear"
restart_ref_groups = 12

[variants.short_save]
save_s = 30.0
"""


def test_variants_are_a_dimension_with_the_numbers_of_direct_runs(tmp_path):
    spec = SweepSpec.from_toml(TTT)
    assert spec.dims == ["variant", "r"] and spec.n_points == 6 and SweepSpec.from_toml(spec.to_toml()) == spec
    ds = run_sweep(spec, tmp_path / "v.nc", workers=0, progress=False)
    assert list(ds["variant"].values) == ["baseline", "linear_restart", "short_save"]
    assert ds["rep"].values.tolist() == [10, 11, 12]  # replications 10..12 of the root: fresh traces
    over = {"baseline": {}, "linear_restart": {"restart_growth": "linear", "restart_ref_groups": 12},
            "short_save": {"save_s": 30.0}}
    for name, kw in over.items():
        for r in (2, 3):
            cfg = TimelineConfig("spare", 24, r=r, n_steps=120, jitter_sd=0.0, **kw)
            res = simulate_ttt(cfg, 3, rng=4, first_rep=10)
            np.testing.assert_array_equal(ds["ttt_over_t0"].sel(variant=name, r=r).values, res.values("ttt_over_t0"))


def test_variant_rules():
    with pytest.raises(sm.UsageValueError, match=r"`variants.x` sets \['r'\], which are swept in `grid`"):
        SweepSpec.from_toml(TTT + '\n[variants.x]\nr = 4\n')
    with pytest.raises(sm.UsageValueError, match=r"unknown parameter `variants.y.colour`"):
        SweepSpec.from_toml(TTT + '\n[variants.y]\ncolour = "red"\n')
    with pytest.raises(sm.UsageValueError, match=r"`sweep.first_rep` must be >= 0"):
        SweepSpec.from_toml(TTT.replace("first_rep = 10", "first_rep = -1"))
    a, b = SweepSpec.from_toml(TTT), SweepSpec.from_toml(TTT.replace("first_rep = 10", "first_rep = 11"))
    assert a.digest() != b.digest()


def test_variants_in_wipeout_sweeps_and_compare(tmp_path):
    text = """
[sweep]
name = "w"
quantity = "wipeout"
reps = 400
seed = 2
[grid]
r = [2, 3]
[fixed]
n_groups = 60
[variants.unit]
layout = "cyclic"
[variants.blocks]
layout = "block"
[variants.rack]
failure_model = "rack"
domain_mtbf_s = 1.0e6
n_gpus = 1920
"""
    ds = run_sweep(SweepSpec.from_toml(text), tmp_path / "w.nc", workers=0, progress=False)
    res = compare_dataset(ds, alpha=1e-4)
    tested = [r for r in res.rows if r.reference is not None]
    assert len(tested) == 4 and all(r.consistent for r in tested)
    assert all("T counts events" in r.reason for r in res.rows if r.point["variant"] == "rack")


def test_experiment_specs_are_valid():
    """Every spec under experiments/ parses: each sweep spec's points are valid settings, and a phase-map spec (a
    [phase] table, not a sweep) is a valid PhaseStudy in both flavours."""
    import pathlib

    import tomllib

    from spare_mc.analyses.phase import PhaseStudy
    from spare_mc.sweep import SweepSpec

    specs = sorted((pathlib.Path(__file__).resolve().parents[1] / "experiments").glob("*.toml"))
    assert specs
    for path in specs:
        if "phase" in tomllib.loads(path.read_text()):
            assert PhaseStudy.from_file(path).n_gpus and PhaseStudy.from_file(path, quick=True).n_gpus
            continue
        spec = SweepSpec.from_toml(path.read_text())
        spec.check_points()
        assert spec.n_points > 0, path
