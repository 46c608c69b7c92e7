"""The named modelling options of the timeline: each pinned on a hand-built trace with exact expected times, each
agreeing with the SimPy twin (which implements it from the option's text) to the microsecond, each bad value
rejected with a message naming the option."""

import numpy as np
import pytest

import spare_mc as sm
from spare_mc._kernels import timeline as TK
from spare_mc.testing import timeline_simpy
from spare_mc.ttt.config import TimelineConfig
from spare_mc.ttt.run import _run_us, job_seed, make_trace, run_timeline, simulate_ttt

US = 1_000_000
KEYS = {"ttt": TK.R_TTT, "useful": TK.R_USEFUL, "redundant": TK.R_REDUNDANT, "patch": TK.R_PATCH,
        "allreduce": TK.R_ALLREDUCE, "rectlr_shrink": TK.R_RECTLR, "checkpoint": TK.R_CKPT, "restart": TK.R_RESTART,
        "lost": TK.R_LOST, "failures": TK.R_FAILURES, "absorbed": TK.R_ABSORBED, "wipeouts": TK.R_WIPEOUTS,
        "checkpoints": TK.R_CHECKPOINTS, "detections": TK.R_DETECTIONS, "steps_run": TK.R_STEPS_RUN,
        "steps_done": TK.R_STEPS_DONE}
NEVER = np.int64(1) << 60


def _kernel(cfg, trace, holders=None):
    holders = cfg.layout_object().holders if holders is None else holders
    return _run_us(cfg, holders, *trace, jitter_rng=np.random.default_rng(0))


def _agree(cfg, trace, holders=None):
    res = _kernel(cfg, trace, holders)
    twin = timeline_simpy(cfg, trace, layout=None if holders is None else sm.Layout(holders, kind="random"))
    assert {k: int(res[i]) for k, i in KEYS.items()} == {k: twin[k] for k in KEYS}
    return res


def _one_failure(t_us, n):
    """A system trace whose only failure arrives at wall time ``t_us`` (rate N with every group alive)."""
    return np.array([t_us * n, NEVER], dtype=np.int64), np.zeros(2, dtype=np.int64)


# ------------------------------------------------------------------------------------------- restart growth
@pytest.mark.parametrize("growth, factor", [("constant", 1), ("linear", 2), ("quadratic", 4)])
def test_restart_time_grows_with_n(growth, factor):
    """CKPT-only at N = 1200 (twice the reference 600): one failure during the first step costs the step and a
    restart of T_r x 1, 2 or 4."""
    cfg = TimelineConfig("ckpt", 1200, jitter_sd=0.0, ckpt_period_s=1e6, n_steps=20, restart_s=100.0,
                         allreduce_s=6.0, restart_growth=growth)
    assert cfg.restart == 100.0 * factor
    res = _agree(cfg, _one_failure(10 * US, 1200))
    assert res[TK.R_RESTART] == factor * 100 * US and res[TK.R_LOST] == 64 * US
    assert res[TK.R_TTT] == 20 * 70 * US + 64 * US + factor * 100 * US
    ref_groups = {} if growth == "constant" else {"restart_ref_groups": 150}  # (refused where it has no effect)
    ref = TimelineConfig("ckpt", 300, restart_s=100.0, restart_growth=growth, **ref_groups)
    assert ref.restart == cfg.restart  # only N / N_ref matters
    # the theory period, and the availability and TTT it predicts, use the restart time the job pays
    th = sm.theory_ttt(cfg)
    assert th.ckpt_period_s == sm.ckpt_period_optimal(60.0, 300.0, factor * 100.0)
    assert th.availability == pytest.approx(sm.optimal_availability(60.0, 300.0, factor * 100.0), rel=1e-12)


# ----------------------------------------------------------------------------------------- Rep's all-reduce
def test_rep_all_reduce_once_per_replica():
    """No failure: a Rep step is r T_comp + r T_a with the per-replica all-reduce, r T_comp + T_a otherwise; T0 is
    the same in both (it is the redundancy-free job)."""
    base = dict(r=3, jitter_sd=0.0, ckpt_period_s=1e6, n_steps=50, allreduce_s=5.0)
    per_step = TimelineConfig("rep", 60, **base)
    per_rep = TimelineConfig("rep", 60, rep_allreduce="per_replica", **base)
    trace = (np.array([NEVER], dtype=np.int64), np.zeros(1, dtype=np.int64))
    assert _agree(per_step, trace)[TK.R_TTT] == 50 * (3 * 64 + 5) * US
    res = _agree(per_rep, trace)
    assert res[TK.R_TTT] == 50 * 3 * (64 + 5) * US and res[TK.R_ALLREDUCE] == 50 * 3 * 5 * US
    assert per_rep.t0_s == per_step.t0_s == 50 * 69.0
    # it only concerns Rep: set for SPARe, it is an error (it would have no effect)
    with pytest.raises(sm.UsageValueError, match=r"`rep_allreduce` has no effect with strategy='spare'"):
        TimelineConfig("spare", 60, rep_allreduce="per_replica", **base)
    assert TimelineConfig("spare", 60, **base).step_allreduce == 5.0


# ------------------------------------------------------------------------------------- random SPARe layout
def test_random_layout_is_one_per_job_from_its_seed():
    cfg = TimelineConfig("spare", 60, r=4, layout="random", n_steps=300, jitter_sd=0.0, mtbf_s=120.0)
    root = np.random.SeedSequence(8)
    from spare_mc._lib.seeding import trace_seed_sequence
    lays = [cfg.layout_object(rng=job_seed(trace_seed_sequence(root, 60, i), 2)) for i in range(3)]
    assert not np.array_equal(lays[0].holders, lays[1].holders)  # a layout per job
    runs = simulate_ttt(cfg, 3, rng=8).runs
    assert runs == simulate_ttt(cfg, 3, rng=8).runs  # reproducible
    for i, lay in enumerate(lays):  # the job ran on exactly that layout: the twin on it agrees to the microsecond
        ss = trace_seed_sequence(root, 60, i)
        trace = make_trace(cfg, np.random.default_rng(job_seed(ss, 0)), 50_000)
        res = _agree(cfg, trace, lay.holders)
        assert int(res[TK.R_TTT]) == round(runs[i].ttt_s * US)
    with pytest.raises(sm.UsageValueError, match=r"`layout`='random' draws one layout per job: pass `rng`"):
        cfg.layout_object()


def test_random_traces_agree_with_the_twin_under_every_wrapper_option():
    rng = np.random.default_rng(41)
    for _ in range(12):
        strategy = str(rng.choice(["ckpt", "rep", "spare"]))
        n = int(rng.choice([24, 48]))
        r = 1 if strategy == "ckpt" else int(rng.choice([2, 3, 4]))
        growth = str(rng.choice(["constant", "linear", "quadratic"]))
        ref = int(rng.integers(10, 60))
        cfg = TimelineConfig(strategy, n, r=r, n_steps=int(rng.integers(50, 250)), mtbf_s=float(rng.uniform(30, 300)),
                             restart_s=float(rng.uniform(10, 300)), save_s=float(rng.uniform(1, 20)),
                             ckpt_period_s=float(rng.uniform(50, 800)), compute_s=float(rng.uniform(1, 20)),
                             jitter_sd=0.0, restart_growth=growth,
                             restart_ref_groups=600 if growth == "constant" else ref,  # no effect there: refused
                             rep_allreduce=str(rng.choice(["per_step", "per_replica"])) if strategy == "rep"
                             else "per_step",
                             layout=str(rng.choice(["cyclic", "random"])) if strategy == "spare" else "cyclic",
                             max_wall_factor=20.0)
        holders = cfg.layout_object(rng=rng).holders
        trace = make_trace(cfg, np.random.default_rng(rng.integers(2**32)), 200_000)
        _agree(cfg, trace, holders)


# -------------------------------------------------------------------------------------- per-GPU calibration
def test_per_gpu_calibration_first_failure_vs_long_run():
    g, m = 600_000, 300.0
    first = sm.PerGPU.from_system_mtbf(m, g, 0.78)
    long = sm.PerGPU.from_system_mtbf(m, g, 0.78, calibration="long_run")
    assert first.gpu_mtbf_s == pytest.approx(m * g ** (1 / 0.78)) and long.gpu_mtbf_s == pytest.approx(m * g)
    assert first.gpu_mtbf_s / long.gpu_mtbf_s == pytest.approx(g ** (1 / 0.78 - 1))
    # exponential lifetimes: the two calibrations agree
    assert sm.PerGPU.from_system_mtbf(m, g, 1.0).gpu_mtbf_s == pytest.approx(
        sm.PerGPU.from_system_mtbf(m, g, 1.0, calibration="long_run").gpu_mtbf_s)
    model, _ = sm.failure_from_spec("per_gpu", 600, mtbf_s=m, shape=0.78, calibration="long_run", clocked=True)
    assert model == long
    with pytest.raises(sm.UsageValueError, match=r"`calibration` has no effect with failure_model='system'"):
        sm.failure_from_spec("system", 600, mtbf_s=m, shape=0.78, calibration="long_run", clocked=True)


def test_cli_calibration_flag_reaches_the_model():
    """``spare-mc ttt --failures per-gpu --calibration long_run``: the job's per-GPU mean lifetime is G x mtbf_s."""
    import contextlib
    import io
    import json

    from spare_mc.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["ttt", "--strategy", "spare", "--n-groups", "24", "--r", "3", "--n-steps", "400", "--reps", "2",
                     "--failures", "per-gpu", "--n-gpus", "24000", "--calibration", "long_run", "--json"]) == 0
    d = json.loads(out.getvalue())
    assert d["config"]["failures"]["gpu_mtbf_s"] == pytest.approx(24000 * 300.0)


# ------------------------------------------------------------------------------------------------ bad values
@pytest.mark.parametrize("kw, match", [
    (dict(restart_growth="cubic"), r"`restart_growth` must be one of \['constant', 'linear', 'quadratic'\]"),
    (dict(restart_ref_groups=0), r"`restart_ref_groups` must be >= 1"),
    (dict(restart_growth="quadratic", restart_ref_groups=1, restart_s=3600.0), r"the restart time .* must be <="),
    (dict(restart_ref_groups=300), r"`restart_ref_groups`=300 has no effect with restart_growth='constant'"),
    (dict(rep_allreduce="sometimes"), r"`rep_allreduce` must be one of \['per_replica', 'per_step'\]"),
    (dict(layout="hexagonal"), r"`layout` must be one of \['cyclic', 'random', 'sidon'\]"),
])
def test_bad_option_values_name_the_option(kw, match):
    with pytest.raises(sm.UsageValueError, match=match):
        TimelineConfig("spare", 600, r=4, **kw)


def test_options_are_sweep_parameters_and_cli_flags(tmp_path):
    from spare_mc.cli.parser import build_parser
    from spare_mc.sweep import PARAMETERS
    for name in ("restart_growth", "restart_ref_groups", "rep_allreduce", "layout", "calibration"):
        assert name in PARAMETERS["ttt"]
    text = build_parser()._subparsers._group_actions[0].choices["ttt"].format_help()
    for flag in ("--restart-growth", "--restart-ref-groups", "--rep-allreduce", "--calibration"):
        assert flag in text
    run = run_timeline(TimelineConfig("spare", 60, r=3, layout="random", n_steps=100), np.random.SeedSequence(1))
    assert run.status == "ok"


# ------------------------------------------------------------------------------ a restart that ends past the cap
def test_a_restart_past_the_cap_ends_the_run_without_drawing_its_failures():
    """CKPT-only, one failure during the first step; the restart (1e6 s) ends far past the cap (5 x T0): the run
    stops at the cap (7000 s), status capped, the restart counting up to it (it counted to its end, 1e6 s, so the
    breakdown summed to 143 x T0 against the time to train's 5; QA 2026-12-04), and the failures the restart would
    absorb are never drawn (the job that used to take 10 GB and 30 s with MTBF 1 ms takes milliseconds)."""
    cfg = TimelineConfig("ckpt", 12, jitter_sd=0.0, ckpt_period_s=1e6, n_steps=20, restart_s=1e6, allreduce_s=6.0,
                         max_wall_factor=5.0, mtbf_s=1.0)
    # one failure at 10 s (during the first step), then arrivals from about 100 s on: inside the restart
    gaps = np.array([10 * US * 12, 90 * US * 12] + [US * 12] * 10 + [NEVER], dtype=np.int64)
    res = _agree(cfg, (gaps, np.zeros(gaps.size, dtype=np.int64)))
    assert res[TK.R_STATUS] == TK.STATUS_CAPPED and res[TK.R_TTT] == 7000 * US == cfg.cap_s * US
    assert res[TK.R_RESTART] == (7000 - 64) * US and res[TK.R_ABSORBED] == 0 and res[TK.R_FAILURES] == 1
    assert res[TK.R_USEFUL:TK.R_LOST + 1].sum() == res[TK.R_TTT]  # the breakdown adds up to the capped time
    assert res[TK.R_ARRIVALS] == 1  # the restart's arrivals were not drawn
    import time
    t = time.perf_counter()
    run = simulate_ttt(TimelineConfig("spare", 100, r=3, n_steps=200, mtbf_s=0.001, restart_s=1e9,
                                      max_wall_factor=1.5), 3, rng=1)
    assert all(r.status == "capped" for r in run.runs) and time.perf_counter() - t < 30


# --------------------------------------------------------------------------------- options where they do nothing
@pytest.mark.parametrize("strategy, kw, match", [
    ("rep", dict(layout="sidon"), r"`layout` has no effect with strategy='rep' \(it applies to spare\)"),
    ("ckpt", dict(rectlr_s=5.0), r"`rectlr_s` has no effect with strategy='ckpt'"),
    ("ckpt", dict(shrink_s=1.0), r"`shrink_s` has no effect with strategy='ckpt' \(it applies to rep and spare\)"),
    ("spare", dict(rep_allreduce="per_replica"), r"`rep_allreduce` has no effect with strategy='spare'"),
    ("rep", dict(patch_cost="none"), r"`patch_cost` has no effect with strategy='rep'"),
    ("spare", dict(live_scaling=False, failures=sm.PerGPU(1e9, 0.78)), r"`live_scaling`=False has no effect"),
    ("spare", dict(shape=2.0, failures=sm.PerGPU(1e9, 0.78)), r"`shape`=2.0 is the system-level process's"),
    ("spare", dict(topology=sm.Topology(6000, 60)), r"`topology` has no effect without a unit-clock failure model"),
])
def test_an_option_given_where_it_has_no_effect_is_an_error(strategy, kw, match):
    with pytest.raises(sm.UsageValueError, match=match):
        TimelineConfig(strategy, 60, r=1 if strategy == "ckpt" else 3, **kw)


def test_shared_settings_apply_where_they_can():
    """A unit-clock model's own shape is the job's; the optimiser's base and a sweep over strategies give each
    strategy the options it has."""
    cfg = TimelineConfig("spare", 60, r=3, failures=sm.PerGPU(1e9, 1.0), ckpt_period_s=600.0)
    assert cfg.shape == 1.0
    opt = sm.optimize_strategy("rep", 24, reps=2, confirm_reps=2, r_range=(2, 3), period_factors=(1.0,),
                               base={"n_steps": 50, "patch_cost": "none", "layout": "sidon"}, rng=1)
    assert opt.best.config.layout == "cyclic"
    from spare_mc.sweep import SweepSpec, run_sweep
    text = """
[sweep]
name = "s"
quantity = "ttt"
reps = 2
seed = 1
[grid]
strategy = ["rep", "spare"]
[fixed]
n_groups = 24
r = 3
n_steps = 60
layout = "sidon"
patch_cost = "none"
"""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        ds = run_sweep(SweepSpec.from_toml(text), f"{d}/s.nc", workers=0, progress=False)
    for s in ("rep", "spare"):
        cfg = TimelineConfig(s, 24, r=3, n_steps=60, **({"layout": "sidon", "patch_cost": "none"} if s == "spare"
                                                         else {}))
        np.testing.assert_array_equal(ds["ttt_over_t0"].sel(strategy=s).values,
                                      simulate_ttt(cfg, 2, rng=1).values("ttt_over_t0"))
    with pytest.raises(sm.UsageValueError, match=r"`layout` has no effect with strategy='rep'"):
        SweepSpec.from_toml(text.replace('strategy = ["rep", "spare"]', 'r = [3]').replace(
            'n_groups = 24', 'n_groups = 24\nstrategy = "rep"').replace("r = 3\n", "")).check_points()


def test_the_options_page_is_current():
    """docs/options.md says it is generated from the code; it had missed a flag added later (`overhead --no-exact`,
    a QA pass). The page is regenerated here and compared, its provenance line (date, versions) aside."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[1] / "docs" / "generate.py"
    spec = importlib.util.spec_from_file_location("docs_generate", path)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)

    def body(text):
        return [line for line in text.splitlines() if not line.startswith("*Generated by")]

    assert body(gen.page_options()) == body((path.parent / "options.md").read_text(encoding="utf-8")), \
        "docs/options.md is out of date: run `python docs/generate.py options`"


def test_restart_ref_groups_where_it_has_no_effect(tmp_path, capsys):
    """The reference N of a growing restart time is refused under constant growth (it would change nothing), on
    the command line in flags; a sweep over ``restart_growth`` keeps it for the points that grow, and the
    sensitivity study hands it to its restart-growth variants."""
    from spare_mc.analyses.sensitivity import Variant, check_sensitivity_inputs, default_variants
    from spare_mc.cli import main
    from spare_mc.sweep import SweepSpec, run_sweep

    assert main(["ttt", "--strategy", "ckpt", "--n-groups", "60", "--restart-ref-groups", "30"]) == 2
    assert "`--restart-ref-groups`=30 has no effect with --restart-growth='constant'" in capsys.readouterr().err
    assert TimelineConfig("ckpt", 60, restart_growth="linear", restart_ref_groups=30).restart == 2 * 3600.0
    spec = SweepSpec("g", "ttt", {"restart_growth": ["constant", "linear"]}, 2, 2, 3,
                     {"strategy": "ckpt", "n_groups": 24, "n_steps": 50, "restart_ref_groups": 12, "jitter_sd": 0.0})
    ds = run_sweep(spec, tmp_path / "g.nc", workers=0, progress=False)
    for growth in ("constant", "linear"):
        ref = {} if growth == "constant" else {"restart_ref_groups": 12}
        res = sm.simulate_ttt(TimelineConfig("ckpt", 24, n_steps=50, jitter_sd=0.0, restart_growth=growth, **ref), 2,
                              rng=3)
        np.testing.assert_array_equal(ds["ttt_over_t0"].sel(restart_growth=growth).values,
                                      res.values("ttt_over_t0"))
    with pytest.raises(sm.UsageValueError, match=r"grid point \(n_groups=24\).*`restart_ref_groups`=12 has no"):
        SweepSpec("h", "ttt", {"n_groups": [24]}, 2, 2, 3, {"strategy": "ckpt", "restart_ref_groups": 12}).check_points()
    grown = {v.name: v.overrides for v in default_variants({"restart_ref_groups": 300})
             if "restart_growth" in v.overrides}
    assert grown == {"restart_linear": {"restart_ref_groups": 300, "restart_growth": "linear"},
                     "restart_quadratic": {"restart_ref_groups": 300, "restart_growth": "quadratic"}}
    sidon = Variant("sidon", "option", "layout", "sidon", {"layout": "sidon"})
    with pytest.raises(sm.UsageValueError, match=r"`restart_ref_groups`=300 has no effect: .* no variant grows it"):
        check_sensitivity_inputs((24,), variants=[sidon], base={"restart_ref_groups": 300})
