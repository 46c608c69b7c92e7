"""The per-config setup of a timeline job (spare_mc.ttt.run: _job_plan, _kernel_params, the placeholder generator,
the learned first trace length) changes no result: a job with warm caches equals the job run fresh, equals the job
run the slow way (its own jitter and repair generators, one long trace), and the caches do not carry anything from
one config to another."""

import dataclasses

import numpy as np
import pytest

import spare_mc as sm
from spare_mc._lib import resources as _resources
from spare_mc.ttt import run as T
from spare_mc._lib.resources import ResourceLimitError, check_memory, memory_negligible
from spare_mc.model.failures import DomainFailures, PerGPU
from spare_mc.model.topology import Topology
from spare_mc.testing import timeline_simpy
from spare_mc.ttt.config import TimelineConfig
from spare_mc.ttt.run import job_seed, make_trace, run_timeline

TOPO = Topology(9_600, 48)
RACK = DomainFailures("rack", 2e6, shape=0.8, background=PerGPU(3e7, 0.8))
KEEP = DomainFailures("rack", 2e6, shape=0.8, background=PerGPU(3e7, 0.8, "keep"))

#: Configs whose jobs use each piece of the setup: jitter and lognormal repairs (their own generators), neither
#: (the placeholder), unit clocks as a race and per unit, a random layout (drawn per job), and CKPT-only under
#: unit clocks, whose jobs need several times the first trace (the learned length).
CONFIGS = {
    "spare_plain": TimelineConfig("spare", 48, r=4, n_steps=300, jitter_sd=0.0),
    "spare_jitter_lognormal": TimelineConfig("spare", 48, r=4, n_steps=300, jitter_sd=0.05, repair="lognormal",
                                             repair_s=600.0),
    "rep_fixed_repair": TimelineConfig("rep", 48, r=3, n_steps=300, jitter_sd=0.0, repair="fixed", repair_s=600.0),
    "spare_random": TimelineConfig("spare", 48, r=4, n_steps=300, layout="random", jitter_sd=0.02),
    "spare_race": TimelineConfig("spare", 48, r=4, n_steps=300, failures=RACK, topology=TOPO, jitter_sd=0.0),
    "rep_per_unit": TimelineConfig("rep", 48, r=3, n_steps=300, failures=KEEP, topology=TOPO, jitter_sd=0.05),
    # mtbf_s = 30 s: a short first trace (the model's own MTBF is 234-2128 s), so the period is given: the theory
    # period of m = 30 s, which mtbf_s alone no longer sets under a model that does not support it
    "ckpt_race": TimelineConfig("ckpt", 48, n_steps=300, failures=RACK, topology=TOPO, jitter_sd=0.0,
                                mtbf_s=30.0, restart_s=600.0, ckpt_period_s=341.42494558940575),
}
SEEDS = [np.random.SeedSequence(7, spawn_key=(48, i)) for i in range(4)]


def _clear():
    for f in (T._job_plan, T._kernel_params, T._prepared):
        f.cache_clear()


def _slow(cfg, ss):
    """The job the slow way: the layout and unit clocks built afresh, its own jitter and repair generators
    (children 1 and 3 of its seed) whatever the config draws, and a trace long enough never to run out."""
    holders = (cfg.layout_object(rng=job_seed(ss, 2)) if cfg.random_layout else cfg.layout_object()).holders
    trace = make_trace(cfg, np.random.default_rng(job_seed(ss, 0)), 1 << 17)
    res = T._run_us(cfg, holders if cfg.strategy == "spare" else None, *trace,
                    jitter_rng=np.random.default_rng(job_seed(ss, 1)), units=cfg.unit_clocks(),
                    repair_rng=np.random.default_rng(job_seed(ss, 3)))
    assert res[T._tk.R_STATUS] != T._tk.STATUS_TRACE
    return T._to_run(res, cfg)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_warm_fresh_and_slow_jobs_are_identical(name):
    cfg = CONFIGS[name]
    _clear()
    fresh = []
    for ss in SEEDS:
        _clear()
        fresh.append(run_timeline(cfg, ss))
    warm = [run_timeline(cfg, ss) for ss in SEEDS]  # the caches hold this config (and its learned length) now
    slow = [_slow(cfg, ss) for ss in SEEDS]
    assert warm == fresh == slow
    assert [r.raw_us for r in warm] == [r.raw_us for r in slow]
    assert any(r.failures > 0 for r in warm)


def test_the_learned_trace_length_grows_and_changes_nothing():
    cfg = CONFIGS["ckpt_race"]
    _clear()
    first = T._job_plan(cfg).trace_length
    runs = [run_timeline(cfg, ss) for ss in SEEDS]
    assert T._job_plan(cfg).trace_length > first  # the first job needed a longer trace, and the plan kept it
    _clear()
    assert [run_timeline(cfg, ss) for ss in reversed(SEEDS)] == runs[::-1]


def test_the_caches_do_not_leak_between_configs():
    a = CONFIGS["spare_race"]
    variants = [dataclasses.replace(a, save_s=a.save_s * 2), dataclasses.replace(a, r=3),
                dataclasses.replace(a, jitter_sd=0.05), dataclasses.replace(a, failures=KEEP),
                dataclasses.replace(a, unit_sampler="per_unit")]
    _clear()
    before = [run_timeline(a, ss) for ss in SEEDS]
    for b in variants:
        got = [run_timeline(b, ss) for ss in SEEDS]
        _clear()
        assert got == [run_timeline(b, ss) for ss in SEEDS]
        assert got != before
    assert [run_timeline(a, ss) for ss in SEEDS] == before
    # the parameter blocks differ where the configs do
    assert not np.array_equal(T._kernel_params(a)[0], T._kernel_params(variants[0])[0])


def test_cached_blocks_are_read_only_and_bounded():
    cfg = CONFIGS["rep_fixed_repair"]
    P, PF, gset, ssize = T._kernel_params(cfg)
    before = P.copy(), PF.copy()
    run_timeline(cfg, SEEDS[0])
    for a in (P, PF, gset, ssize):
        assert not a.flags.writeable
    assert np.array_equal(P, before[0]) and np.array_equal(PF, before[1])
    for f in (T._job_plan, T._kernel_params, T._prepared):
        assert f.cache_info().maxsize == 64


def test_the_placeholder_generator_is_never_drawn_from():
    state = T._UNDRAWN.bit_generator.state
    for name in ("spare_plain", "rep_fixed_repair", "spare_race", "ckpt_race"):
        jitter, repair = T._job_rngs(CONFIGS[name], SEEDS[0])
        assert jitter is T._UNDRAWN and repair is T._UNDRAWN
        run_timeline(CONFIGS[name], SEEDS[1])
    jitter, repair = T._job_rngs(CONFIGS["spare_jitter_lognormal"], SEEDS[0])
    assert jitter is not T._UNDRAWN and repair is not T._UNDRAWN
    assert T._UNDRAWN.bit_generator.state == state


@pytest.mark.parametrize("stream", ["jitter", "repair"])
def test_a_draw_from_the_placeholder_generator_raises(stream):
    """A run that draws from the placeholder (here: given it for a stream the config draws from, as a new jittered
    quantity drawn outside TimelineConfig.draws_jitter would) raises instead of drawing from a stream every job
    shares; the placeholder is then as new, so the next run that leaves it alone passes."""
    cfg = CONFIGS["spare_jitter_lognormal"]
    trace = make_trace(cfg, np.random.default_rng(job_seed(SEEDS[0], 0)), 1 << 16)
    plan = T._job_plan(cfg)
    rngs = {"jitter_rng": np.random.default_rng(1), "repair_rng": np.random.default_rng(3),
            f"{stream}_rng": T._UNDRAWN}
    with pytest.raises(RuntimeError, match="drew from the placeholder generator"):
        T._run_us(cfg, plan.holders, *trace, **rngs)
    assert T._UNDRAWN.bit_generator.state == T._UNDRAWN_STATE
    plain = CONFIGS["spare_plain"]
    T._run_us(plain, T._job_plan(plain).holders, *trace, jitter_rng=T._UNDRAWN, repair_rng=T._UNDRAWN)


def test_one_property_decides_whether_a_job_draws_jitter():
    """TimelineConfig.draws_jitter decides it for the kernel's parameters (PF_JITTER_SD is 0 otherwise), the job's
    generators and the SimPy twin (which takes no jitter generator then)."""
    for name, cfg in CONFIGS.items():
        P, PF, _, _ = T._kernel_params(cfg)
        jitter, _ = T._job_rngs(cfg, SEEDS[0])
        assert cfg.draws_jitter == (cfg.jitter_sd != 0.0) == (PF[T._tk.PF_JITTER_SD] != 0.0) == \
            (jitter is not T._UNDRAWN), name
    cfg = CONFIGS["spare_plain"]
    trace = make_trace(cfg, np.random.default_rng(5), 1 << 14)
    twin = timeline_simpy(cfg, trace, jitter_rng=None)  # no jitter drawn: no generator needed
    res = T._run_us(cfg, T._job_plan(cfg).holders, *trace, jitter_rng=T._UNDRAWN)
    assert twin["ttt"] == res[T._tk.R_TTT]


def test_negligible_memory_requests_skip_the_system_but_not_a_limit(monkeypatch):
    monkeypatch.setattr(_resources, "available_memory", lambda: 0)  # a system with no memory left
    assert memory_negligible(_resources.NEGLIGIBLE_BYTES)
    check_memory(_resources.NEGLIGIBLE_BYTES, "a small trace")  # passes without asking the system
    with pytest.raises(ResourceLimitError, match="a larger trace would need"):
        check_memory(_resources.NEGLIGIBLE_BYTES + 1, "a larger trace")
    with sm.set_options(max_memory=1000):  # a limit set is honoured for any size
        assert not memory_negligible(1001)
        with pytest.raises(ResourceLimitError, match="a small trace would need"):
            check_memory(1001, "a small trace")


@pytest.mark.parametrize("layout", ["cyclic", "sidon"])
def test_the_cached_live_state_gives_the_results_of_a_fresh_one_and_stays_as_built(layout):
    """SPARe's fully live ReCtlr state, built once per config (_JobPlan.live0) and copied by the kernel at every job,
    gives the results of a state built afresh for the job (what _run_us does when given none, as for a random
    layout), through restarts and repairs; the cached blocks stay as built (the kernel never writes them)."""
    cfg = TimelineConfig("spare", 48, r=4, layout=layout, n_steps=400, mtbf_s=200.0, jitter_sd=0.05, repair="fixed",
                         repair_s=900.0)
    plan = T._job_plan(cfg)
    built, rc = T._tk.live_state(plan.holders)
    assert rc >= 0
    wipeouts = 0
    for ss in SEEDS:
        trace = make_trace(cfg, np.random.default_rng(job_seed(ss, 0)), 1 << 16)
        a = T._run_us(cfg, plan.holders, *trace, jitter_rng=np.random.default_rng(1), live0=plan.live0)
        b = T._run_us(cfg, plan.holders, *trace, jitter_rng=np.random.default_rng(1))
        assert np.array_equal(a, b)
        wipeouts += a[T._tk.R_WIPEOUTS]
    assert wipeouts > 0
    for i in (0, 1, 2, 3, 4, 7):  # E, G, D, H, meta, out (ulog and pplan are scratch)
        assert np.array_equal(plan.live0[i], built[i])
        assert not plan.live0[i].flags.writeable
    assert T._job_plan(CONFIGS["spare_random"]).live0 is None  # a layout per job: built per job by _run_us
    assert T._job_plan(CONFIGS["rep_fixed_repair"]).live0 is None


def test_every_numeric_field_refuses_a_string_a_list_and_nan_by_name():
    """A QA pass found `allreduce_s='fast'` compared with a number before its type was checked (a raw TypeError;
    an internal error from a sweep spec). Every numeric field of the config now gets a usage error naming it."""
    from dataclasses import fields

    from spare_mc._lib.validation import UsageError

    for f in fields(TimelineConfig):
        if "float" not in str(f.type) and "int" not in str(f.type):
            continue
        for bad in ("fast", [1], float("nan")):
            kw = {"strategy": "spare", "n_groups": 60, "r": 3, f.name: bad}
            with pytest.raises(UsageError, match=f"`{f.name}`"):
                TimelineConfig(**kw)
