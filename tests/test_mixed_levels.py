"""Failure models that mix several domain levels at once (``DomainFailures(levels={...})``): one level is the
one-level model, draw for draw; the wipe-out sampler's first event and the timeline's expected time to train
against exact values; the race against a lifetime per unit; the spec, dictionaries and bad input.

The kernel against the SimPy twin on random mixed models is in tests/test_kernel_options.py (source "mixed")."""

import math

import numpy as np
import pytest
from conftest import ALPHA
from scipy import stats
from test_kernel_options import same_law_race_and_per_unit

import spare_mc as sm
from spare_mc.model.domain_rates import DOMAIN_MTBF_DEFAULTS
from spare_mc.model.failures import (failure_from_spec, failure_model_from_dict, lower, parse_domain_levels,
                                     weibull_scale)
from spare_mc.ttt.exact_ttt import exact_step_ttt
from spare_mc.ttt.config import TimelineConfig
from spare_mc.ttt.run import simulate_ttt

# 64 groups of one node each (8 GPUs): a node kills 1 group, a rack 2, a power domain 4, a pod 8
NESTED = sm.Topology(512, 64, gpus_per_node=8, nodes_per_rack=2, racks_per_power=2, power_per_pod=2)
UNITS = {"node": 64, "rack": 32, "power": 16, "pod": 8}
KILLS = {"node": 1, "rack": 2, "power": 4, "pod": 8}


# ---------------------------------------------------------------------------------------- one level
def test_one_level_is_the_one_level_model():
    bg = sm.PerGPU(1e9, 0.78)
    one = sm.DomainFailures("rack", 5e6, 0.78, background=bg)
    assert one == sm.DomainFailures(levels={"rack": 5e6}, shape=0.78, background=bg)
    assert one == sm.DomainFailures(levels=[("rack", 5e6)], shape=0.78, background=bg)
    assert not one.mixed and one.level == "rack" and one.domain_mtbf_s == 5e6
    # the stored form of a one-level model is unchanged (datasets written before read back the same)
    assert one.to_dict() == {"model": "domains", "level": "rack", "domain_mtbf_s": 5e6, "shape": 0.78,
                             "background": bg.to_dict()}


# Pinned on the commit before mixed levels (e85aa99, the one-level kernels): the generalised kernels draw a one-level
# model exactly as before (the level walk adds no random number), so these are the old numbers to the last bit.
_PIN_TOPO = dict(n_gpus=24 * 32, n_groups=24, gpus_per_node=8, nodes_per_rack=2, racks_per_power=2,
                 placement="strided")


def _pin_model():
    topo = sm.Topology(**_PIN_TOPO)
    bg = sm.PerGPU.from_system_mtbf(200.0, topo.n_gpus, 0.7, "renew")
    return sm.DomainFailures(levels={"rack": 40_000.0}, shape=0.7, background=bg), topo


PIN_EVENTS = {"events": (3, 750.7394679801575, [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19]),
              "wipeout": ([3, 2, 1, 3, 1, 1, 1, 5, 2, 3, 1, 2, 1, 1, 1, 1, 3, 2, 4, 1], 46635.68349194429)}
PIN_TTT = {  # (TTT in microseconds, groups killed) of 5 jobs
    ("race", "absorbed"): ([10437800000, 10270200000, 10090400000, 7146400000, 11854600000], [549, 539, 533, 293, 738]),
    ("race", "stay_dead"): ([12973000000, 15864400000, 14074000000, 8244200000, 8854400000],
                            [1105, 1250, 1119, 425, 657]),
    ("per_unit", "absorbed"): ([10639200000, 10955600000, 12037000000, 14439000000, 15336200000],
                               [618, 661, 760, 998, 1133]),
    ("per_unit", "stay_dead"): ([20065200000, 10356200000, 29514400000, 23547600000, 17483600000],
                                [1819, 883, 2779, 2337, 1651]),
}


def test_one_level_draws_as_before_in_the_event_samplers():
    fail, topo = _pin_model()
    ev = sm.sample_events(fail, topo, rng=5)
    assert (len(ev), ev.times[-1], ev.groups[:12].tolist()) == PIN_EVENTS["events"]
    w = sm.wipeout_mc(sm.cyclic(24, 3), 300, failures=fail, topology=topo, rng=3)
    assert (w.T.tolist()[:20], float(w.time_s.sum())) == PIN_EVENTS["wipeout"]


@pytest.mark.parametrize("sampler", ["race", "per_unit"])
@pytest.mark.parametrize("restart_failures", ["absorbed", "stay_dead"])
def test_one_level_draws_as_before_in_the_timeline(sampler, restart_failures):
    fail, topo = _pin_model()
    cfg = TimelineConfig("spare", 24, r=3, n_steps=200, compute_s=8.0, allreduce_s=1.0, save_s=5.0,
                         ckpt_period_s=300.0, restart_s=120.0, jitter_sd=0.0, failures=fail, topology=topo,
                         restart_failures=restart_failures, unit_sampler=sampler)
    res = simulate_ttt(cfg, 5, rng=7)
    assert ([r.raw_us[0] for r in res.runs], [r.failures for r in res.runs]) == PIN_TTT[(sampler, restart_failures)]


# ---------------------------------------------------------------------------------------- exact values
def test_first_event_level_and_time_are_exact():
    """Shape k = 0.7, every level at once, no background, on a fresh system: the first event comes at ``T`` with
    ``T^k ~ Exp(W)``, ``W = sum_l n_l lam_l^-k``, and is of level ``l`` with probability ``n_l lam_l^-k / W``
    (identified by the groups it kills). KS on ``W T^k`` against Exp(1), chi-square on the levels."""
    k = 0.7
    mtbf = {"node": 4000.0, "rack": 3000.0, "power": 1500.0, "pod": 900.0}
    fail = sm.DomainFailures(levels=mtbf, shape=k)
    w = {lvl: UNITS[lvl] * weibull_scale(m, k) ** -k for lvl, m in mtbf.items()}
    total = sum(w.values())
    rng = np.random.default_rng(17)
    first_t, first_level = [], []
    by_kills = {v: lvl for lvl, v in KILLS.items()}
    for _ in range(3000):
        ev = sm.sample_events(fail, NESTED, rng=rng)
        first_t.append(ev.times[0])
        first_level.append(by_kills[ev.killed(0).size])
    assert stats.kstest(total * np.array(first_t) ** k, "expon").pvalue > ALPHA
    counts = np.array([first_level.count(lvl) for lvl in UNITS])
    expected = np.array([w[lvl] / total for lvl in UNITS]) * len(first_level)
    assert counts.min() > 100  # every level is seen often
    assert stats.chisquare(counts, expected).pvalue > ALPHA


def test_every_group_dies_and_each_domain_fires_at_most_once():
    """A stream to the end: every group is killed exactly once; no domain event kills a group outside its domain."""
    fail = sm.DomainFailures.at_default_rates(0.78, background=sm.PerGPU(1e9, 0.78))
    ev = sm.sample_events(fail, NESTED, rng=3)
    assert sorted(ev.groups.tolist()) == list(range(64))
    for e in range(len(ev)):
        g = ev.killed(e)
        assert g.size == 1 or any(np.array_equal(np.unique(g // KILLS[lvl]), [g[0] // KILLS[lvl]]) for lvl in KILLS)


@pytest.mark.parametrize("sampler", ["race", "per_unit"])
def test_ckpt_only_timeline_matches_the_exact_expectation(sampler):
    """CKPT-only under every level at once plus a per-GPU background, all exponential (k = 1) and renewed: every
    event wipes out and the units are memoryless, so the failures are a Poisson process of rate ``W = N / m_g +
    sum_l n_l / m_l`` while the job runs -- the system process with MTBF ``1 / W`` without live scaling, whose
    expected time to train :func:`spare_mc.ttt.exact_ttt.exact_step_ttt` gives exactly. Both unit samplers, t-test
    at alpha = 1e-4."""
    mtbf = {"node": 60_000.0, "rack": 40_000.0, "power": 30_000.0, "pod": 20_000.0}
    bg = sm.PerGPU(512 * 50_000.0, 1.0)
    fail = sm.DomainFailures(levels=mtbf, shape=1.0, background=bg)
    rate = 64 / (bg.gpu_mtbf_s / 8) + sum(UNITS[lvl] / m for lvl, m in mtbf.items())
    common = dict(n_steps=200, compute_s=20.0, allreduce_s=5.0, save_s=30.0, restart_s=600.0, ckpt_period_s=900.0,
                  jitter_sd=0.0, max_wall_factor=1000.0, shape=1.0)
    ex = exact_step_ttt(TimelineConfig("ckpt", 64, mtbf_s=1.0 / rate, live_scaling=False, **common))
    cfg = TimelineConfig("ckpt", 64, failures=fail, topology=NESTED, unit_sampler=sampler, **common)
    res = simulate_ttt(cfg, 1500, rng=11)
    assert res.n_capped == 0
    v = res.values("ttt_over_t0")
    p = 2 * stats.t.sf(abs(v.mean() - ex.ttt_over_t0) / (v.std(ddof=1) / math.sqrt(v.size)), v.size - 1)
    assert p > ALPHA, (v.mean(), ex.ttt_over_t0, p)
    assert np.mean(res.values("wipeouts")) > 1


@pytest.mark.parametrize("restart_failures", ["absorbed", "stay_dead"])
def test_race_and_per_unit_are_the_same_law_with_mixed_levels(restart_failures):
    """Weibull k = 0.7, nodes, racks and power domains at once with a per-GPU background on 24 strided groups
    (a domain kills several groups): the race (one class per level) and a lifetime per unit give the same TTT,
    failure and wipe-out laws (KS and Welch, alpha = 1e-4)."""
    topo = sm.Topology(24 * 32, 24, gpus_per_node=8, nodes_per_rack=2, racks_per_power=2, placement="strided")
    bg = sm.PerGPU.from_system_mtbf(300.0, topo.n_gpus, 0.7, "renew")
    fail = sm.DomainFailures(levels={"node": 150_000.0, "rack": 60_000.0, "power": 30_000.0}, shape=0.7,
                             background=bg)
    same_law_race_and_per_unit(fail, topo, restart_failures, seeds=(21, 22))


# ---------------------------------------------------------------------------------------- the model's API
def test_levels_are_stored_finest_first_whatever_the_order_given():
    a = sm.DomainFailures(levels={"pod": 3e6, "node": 7e7}, shape=0.9)
    assert a == sm.DomainFailures(levels=[("node", 7e7), ("pod", 3e6)], shape=0.9)
    assert a.level_names == ("node", "pod") and a.mixed and a.mtbf_of("pod") == 3e6
    assert failure_model_from_dict(a.to_dict()) == a
    assert a.to_dict()["levels"] == {"node": 7e7, "pod": 3e6}


def test_all_levels_at_their_default_rates_is_one_call():
    bg = sm.PerGPU(1e9, 0.78)
    m = sm.DomainFailures.at_default_rates(0.78, background=bg)
    assert m.levels == tuple(DOMAIN_MTBF_DEFAULTS.items()) and m.background == bg
    model, topo = failure_from_spec("mixed", 600, mtbf_s=300.0, shape=0.78)
    assert model == sm.DomainFailures.at_default_rates(0.78, background=model.background)
    assert topo == sm.Topology(600_000, 600)
    model, _ = failure_from_spec("mixed", 600, mtbf_s=300.0, shape=0.78, domain_levels="rack=3e7, pod")
    assert model.levels == (("rack", 3e7), ("pod", DOMAIN_MTBF_DEFAULTS["pod"]))


def test_domain_units_concatenate_the_levels():
    topo = sm.Topology(600_000, 600, placement="strided")
    ptr, groups, level_ptr = topo.domain_units(("node", "pod"))
    pn, gn = topo.domain_groups("node")
    pp, gp = topo.domain_groups("pod")
    assert level_ptr.tolist() == [0, pn.size - 1, pn.size + pp.size - 2]
    assert np.array_equal(ptr, np.concatenate([pn, pp[1:] + pn[-1]]))
    assert np.array_equal(groups, np.concatenate([gn, gp]))
    assert all(np.array_equal(a, b) for a, b in zip(topo.domain_groups(["node", "pod"]), (ptr, groups)))


def test_lowered_rates_are_relative_to_the_finest_level():
    """The wipe-out kernel's time unit is the finest level's Weibull scale: its rate is 1, another level's
    ``(scale / scale_l)^k``, the groups' ``(scale / s_g)^k``."""
    k = 0.8
    bg = sm.PerGPU(1e8, k)
    proc = lower(sm.DomainFailures(levels={"rack": 2e6, "power": 5e5}, shape=k, background=bg), NESTED)
    scale = weibull_scale(2e6, k)
    assert proc.scale == scale and proc.level_rate[0] == 1.0
    assert proc.level_rate[1] == pytest.approx((scale / weibull_scale(5e5, k)) ** k, rel=1e-14)
    assert proc.group_rate == pytest.approx((scale / bg.group_scale(NESTED)) ** k, rel=1e-14)
    assert proc.level_ptr.tolist() == [0, 32, 48]


def test_timeline_config_round_trips_a_mixed_model():
    fail = sm.DomainFailures(levels={"node": 7e7, "rack": 6e7}, shape=0.78, background=sm.PerGPU(5e9, 0.78))
    cfg = TimelineConfig("spare", 600, r=8, failures=fail, topology=sm.Topology(600_000, 600))
    assert TimelineConfig.from_dict(cfg.to_dict()) == cfg
    units = cfg.unit_clocks()
    assert units.class_ends == (600, 600 + 75_000, 600 + 75_000 + 18_750)
    assert units.uscale_us.size == units.class_ends[-1]


def test_domain_aware_places_against_the_coarsest_level_that_allows_it():
    """Levels nest, so a layout domain-aware at a level is domain-aware at every finer one: a mixed model places
    against the coarsest of its levels that admits a layout. On 64 groups in 8 pods of 8: r = 8 Sidon offsets
    exist against racks but not pods, r = 9 evenly spread offsets against power domains (only 8 pods)."""
    every = sm.DomainFailures.at_default_rates(1.0)
    for r, layout, level in ((5, "sidon", "pod"), (8, "sidon", "rack"), (9, "cyclic", "power")):
        cfg = TimelineConfig("spare", 64, r=r, layout=layout, failures=every, topology=NESTED, domain_aware=True,
                             ckpt_period_s=600.0)  # a period: the default 300 s MTBF is not these models'
        assert cfg.domain_level == level
        one = TimelineConfig("spare", 64, r=r, layout=layout, failures=sm.DomainFailures(level, 1e6, 1.0),
                             topology=NESTED, domain_aware=True, ckpt_period_s=600.0)
        lay = cfg.layout_object()
        assert np.array_equal(lay.holders, one.layout_object().holders)
        for lvl in every.level_names[:every.level_names.index(level) + 1]:
            assert sm.model.placement.domain_conflicts(lay, NESTED, lvl).count == 0
    with pytest.raises(sm.UsageValueError, match="no domain-aware Sidon offsets exist for r=9"):
        TimelineConfig("spare", 64, r=9, layout="sidon", failures=every, topology=NESTED, domain_aware=True,
                       ckpt_period_s=600.0)


# ---------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("make, exc, match", [
    (lambda: sm.DomainFailures(levels={"row": 1e6}), ValueError, r"`levels` must be one of"),
    (lambda: sm.DomainFailures(levels={"rack": 0.0}), ValueError, r"`levels\['rack'\]` must be > 0"),
    (lambda: sm.DomainFailures(levels={"rack": -5.0, "node": 1e6}), ValueError, r"`levels\['rack'\]` must be > 0"),
    (lambda: sm.DomainFailures(levels=[("rack", 1e6), ("rack", 2e6)]), ValueError, r"name each level once"),
    (lambda: sm.DomainFailures(levels={}), ValueError, r"`levels` must hold at least one level"),
    (lambda: sm.DomainFailures(levels="rack"), TypeError, r"`levels` must map each level"),
    (lambda: sm.DomainFailures(levels=[("rack",)]), TypeError, r"`levels` must be a mapping"),
    (lambda: sm.DomainFailures("rack", 1e6, levels={"node": 1e6}), ValueError, r"not both"),
    (lambda: sm.DomainFailures("rack"), ValueError, r"needs `level` and `domain_mtbf_s`"),
    (lambda: sm.DomainFailures(levels={"rack": 1e6, "node": 1e6}, shape=0.78, background=sm.PerGPU(1e9, 1.0)),
     ValueError, r"`background.shape` must equal `shape`"),
    (lambda: sm.DomainFailures(levels={"rack": 1e6, "node": 1e6}).level, ValueError, r"has several levels"),
    (lambda: sm.DomainFailures(levels={"rack": 1e6, "node": 1e6}).domain_mtbf_s, ValueError, r"has several levels"),
    (lambda: sm.DomainFailures(levels={"rack": 1e6}).mtbf_of("pod"), ValueError, r"one of the model's levels"),
    (lambda: sm.DomainFailures.at_default_rates(levels=("rack", "row")), ValueError, r"`levels` must be one of"),
    (lambda: NESTED.domain_units(("rack", "rack")), ValueError, r"name each level once"),
    (lambda: NESTED.domain_units(()), ValueError, r"at least one level"),
    (lambda: parse_domain_levels("rack,row"), ValueError, r"`domain_levels` must list levels"),
    (lambda: parse_domain_levels("rack,rack=3"), ValueError, r"name each level once"),
    (lambda: parse_domain_levels("rack=fast"), ValueError, r"must be a number of seconds"),
    (lambda: parse_domain_levels("node="), ValueError, r"'node=' has no mean lifetime after '='"),  # was the default
    (lambda: parse_domain_levels("rack=-1"), ValueError, r"`domain_levels\['rack'\]` must be > 0"),
    (lambda: failure_from_spec("mixed", 600, mtbf_s=300.0, shape=0.78, domain_mtbf_s=1e6), ValueError,
     r"`domain_mtbf_s` has no effect with failure_model='mixed'"),
    (lambda: failure_from_spec("rack", 600, mtbf_s=300.0, shape=0.78, domain_mtbf_s=1e6, domain_levels="node"),
     ValueError, r"`domain_levels` has no effect with failure_model='rack'"),
    (lambda: failure_from_spec("system", 600, mtbf_s=300.0, shape=0.78, domain_levels="node"),
     ValueError, r"`domain_levels` has no effect with failure_model='system'"),
])
def test_bad_input_names_the_parameter_and_the_rule(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


def test_command_line_runs_a_mixed_model(capsys):
    import json

    from spare_mc.cli import main
    flags = ["ttt", "--strategy", "spare", "--r", "3", "--n-groups", "24", "--n-gpus", "192", "--reps", "2",
             "--n-steps", "50", "--failures", "mixed"]
    assert main([*flags, "--domain-levels", "node,rack=3e7", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["config"]["failures"]["levels"] == {"node": DOMAIN_MTBF_DEFAULTS["node"], "rack": 3e7}
    assert main([*flags, "--json"]) == 0  # every level at its default rate
    assert list(json.loads(capsys.readouterr().out)["config"]["failures"]["levels"]) == list(DOMAIN_MTBF_DEFAULTS)
    assert main([*flags[:-2], "--failures", "rack", "--domain-mtbf-s", "1e7", "--domain-levels", "node"]) == 2
    # the command line names its flags where the library names its keywords
    assert "`--domain-levels` has no effect with --failures='rack'" in capsys.readouterr().err
    # a domain level far more frequent than the --mtbf-s the theory period is taken from: refused, in flags
    assert main([*flags, "--domain-levels", "node=1e3", "--n-gpus", "24000"]) == 2
    err = capsys.readouterr().err
    assert "`--mtbf-s`=300 s sets the theory checkpoint period" in err and "give `--ckpt-period-s`" in err
    assert "`mtbf_s`" not in err
