"""The failure-domain study (spare_mc.analyses.domains, ``reproduce --table domains``) and the timeline's domain-aware
placement: the Monte Carlo against exact laws where the domains reduce to one, the kernel against the twin, the
table's shape and its errors."""

import json
import math

import numpy as np
import pytest

import spare_mc as sm
from spare_mc.analyses.domains import DOMAIN_STUDY_LAYOUTS, DomainStudy, domain_study_rows, run_domain_study
from spare_mc.testing import survival_by_subsets, timeline_simpy
from spare_mc.theory.exact import exact_wipeout
from spare_mc.ttt.config import TimelineConfig
from spare_mc.ttt.run import _run_us, make_trace

ALPHA = 1e-4
Z = 3.8906  # two-sided normal quantile at alpha = 1e-4


def _consistent(values, exact_mean):
    """The sample mean is consistent with ``exact_mean`` at ``ALPHA`` (z-test with the sample's own sd)."""
    v = np.asarray(values, dtype=float)
    se = v.std(ddof=1) / math.sqrt(v.size)
    return abs(v.mean() - exact_mean) <= Z * se, v.mean(), se


# ------------------------------------------------------------------ exact values where the domains reduce to a law
def test_domain_aware_rep_under_node_events_has_the_replica_sets_law():
    """600k GPUs, N = 600 contiguous groups of 1,000 GPUs = 125 whole nodes each: a node touches one group, so node
    events (no background) kill the live groups one at a time in uniformly random order, and the domain-aware
    replica sets (a permutation of the groups) have the exact law of Rep's sets: E[masked] = E[T] - 1."""
    topo = sm.Topology(600_000, 600)
    assert sm.model.placement.max_groups_per_domain(topo, "node") == 1
    sets = sm.model.placement.domain_aware_replica_sets(topo, 3, "node")
    assert sets.set_of_group.tolist() != np.repeat(np.arange(200), 3).tolist()  # really permuted
    w = sm.wipeout_mc(sets, 20_000, failures=sm.DomainFailures("node", 1e7, 0.78), topology=topo, rng=11)
    ok, mean, se = _consistent(w.dead_before, exact_wipeout("block", 600, 3).mean - 1)
    assert ok, (mean, se)


def test_domain_aware_spare_under_node_events_matches_exact_enumeration():
    """N = 20 groups of two nodes each, node events only: deaths in uniform order, so the domain-aware Sidon and
    spread offsets have the exact law of their holder tables under uniform order, by enumerating all 2^20 dead
    sets: E[masked] = sum_m P(T > m) - 1."""
    topo = sm.Topology(320, 20, gpus_per_node=8)
    for sidon in (False, True):
        lay = sm.model.placement.domain_aware(topo, 3, "node", kind="spare", sidon=sidon)
        exact = float(sum(survival_by_subsets(lay))) - 1.0
        w = sm.wipeout_mc(lay, 20_000, failures=sm.DomainFailures("node", 5e4, 1.0), topology=topo, rng=12 + sidon)
        ok, mean, se = _consistent(w.dead_before, exact)
        assert ok, (sidon, mean, se, exact)


def test_domain_aware_layout_keeps_every_type_under_a_single_domain_event():
    """The bound behind the study: under a domain-aware layout one domain event kills at most one holder of each
    type, so the first wipe-out needs at least r events for a type to lose its r holders; the rack-blind unit
    stride loses a type to fewer events where a domain covers several consecutive holders. Pods at N = 600 (a pod
    touches up to 10 groups), pod events only, r = 8: every domain-aware trial takes >= r events (a bound that
    cannot fail by chance), and unit stride needs fewer on average."""
    topo = sm.Topology(600_000, 600)
    pods = sm.DomainFailures("pod", 1e6, 1.0)
    aware = sm.wipeout_mc(sm.model.placement.domain_aware(topo, 8, "pod"), 2000, failures=pods, topology=topo, rng=5)
    blind = sm.wipeout_mc(sm.cyclic(600, 8), 2000, failures=pods, topology=topo, rng=5)
    assert aware.T.min() >= 8
    assert blind.T.mean() < aware.T.mean()


# ------------------------------------------------------------------------------------ the timeline's placement
@pytest.mark.parametrize("strategy, layout", [("rep", "cyclic"), ("spare", "cyclic"), ("spare", "sidon")])
def test_domain_aware_timeline_equals_twin(strategy, layout):
    """Domain-aware SPARe offsets and Rep sets in the timeline: the kernel equals the SimPy twin to the
    microsecond on random traces (node and rack domains, contiguous placement, renewed units)."""
    rng = np.random.default_rng(21)
    for level in ("node", "rack"):
        topo = sm.Topology(24 * 32, 24, gpus_per_node=8, nodes_per_rack=2, racks_per_power=2)
        bg = sm.PerGPU.from_system_mtbf(100.0, topo.n_gpus, 0.8)
        cfg = TimelineConfig(strategy, 24, r=3, n_steps=200, compute_s=8.0, allreduce_s=1.0, save_s=5.0,
                             ckpt_period_s=300.0, restart_s=120.0, jitter_sd=0.0, topology=topo,
                             failures=sm.DomainFailures(level, 3000.0, 0.8, background=bg), domain_aware=True,
                             **({"layout": layout} if strategy == "spare" else {}))
        assert sm.model.placement.domain_conflicts(cfg.layout_object(), topo, level).count == 0
        trace = make_trace(cfg, np.random.default_rng(rng.integers(2**32)), 50_000)
        holders = cfg.layout_object().holders if strategy == "spare" else None
        res = _run_us(cfg, holders, *trace, jitter_rng=np.random.default_rng(0))
        twin = timeline_simpy(cfg, trace)
        assert int(res[0]) == twin["ttt"] and twin["status"] == "ok"
        assert twin["wipeouts"] > 0 and twin["failures"] > 20


def test_domain_aware_option_errors():
    topo = sm.Topology(24 * 32, 24, gpus_per_node=8, nodes_per_rack=2, racks_per_power=2, placement="strided")
    rack = sm.DomainFailures("rack", 3000.0, 0.8)
    with pytest.raises(ValueError, match="`domain_aware` needs failure domains"):
        TimelineConfig("spare", 24, r=3, domain_aware=True)
    with pytest.raises(ValueError, match="`domain_aware` needs failure domains"):
        TimelineConfig("spare", 24, r=3, domain_aware=True, failures=sm.PerGPU(1e6), topology=topo)
    with pytest.raises(ValueError, match="not random holders"):
        TimelineConfig("spare", 24, r=3, layout="random", domain_aware=True, failures=rack, topology=topo)
    with pytest.raises(ValueError, match="no domain-aware layout exists for r=3"):  # a rack touches 16 groups
        TimelineConfig("spare", 24, r=3, domain_aware=True, failures=rack, topology=topo)
    with pytest.raises(ValueError, match="`domain_aware` has no effect with strategy='ckpt'"):
        TimelineConfig("ckpt", 24, domain_aware=True, failures=rack, topology=topo)


# ------------------------------------------------------------------------------------------------ the study
def test_quick_study_rows_and_paired_differences():
    study = DomainStudy.quick(n_steps=300, wipeout_reps=200, ttt_reps=6, levels=("none", "rack", "pod"))
    res = run_domain_study(study)
    rows = domain_study_rows(res)
    keys = {"n_groups", "level", "layout", "r", "masked_mean", "masked_ci95", "ttt_over_t0", "ttt_over_t0_ci95"}
    for level in ("rack", "pod"):
        got = {(r["strategy"], r["layout"]) for r in rows if r["level"] == level}
        assert got == {(s, lay) for s, lays in DOMAIN_STUDY_LAYOUTS.items() for lay in lays}
    assert not any(r["layout"].startswith("domain-aware") for r in rows if r["level"] == "none")
    for r in rows:
        if "error" in r:
            continue
        assert keys <= set(r)
        lo, hi = r["ttt_over_t0_ci95"]
        assert lo <= r["ttt_over_t0"] <= hi and r["ttt_over_t0"] >= 1.0
        if r["level"] != "none" and not r["layout"].startswith("domain-aware"):
            assert "ttt_vs_domain_aware" in r
    json.dumps(rows)  # the table is plain JSON


def test_study_rows_with_every_level_at_once(tmp_path):
    """The row set of level "all" (every level at its default rate at once) at the N of ``mixed_n_values``: every
    layout, the domain-aware ones placed against the coarsest level that admits them (pods at N = 200, r = 8 and 3),
    and the other rows unchanged by its presence (each row draws from the study's seed alone)."""
    kw = {"n_steps": 300, "wipeout_reps": 200, "ttt_reps": 6, "levels": ("none",)}
    res = run_domain_study(DomainStudy.quick(**kw, mixed_n_values=(200,)))
    rows = domain_study_rows(res)
    mixed = [r for r in rows if r["level"] == "all"]
    assert {(r["strategy"], r["layout"]) for r in mixed} == {(s, lay) for s, lays in DOMAIN_STUDY_LAYOUTS.items()
                                                            for lay in lays}
    for r in mixed:
        assert ("placed_level" in r) == r["layout"].startswith("domain-aware")
        if r["layout"] == "domain-aware":
            assert r["placed_level"] == "pod" and "error" not in r
        elif "error" not in r and r["layout"] != "domain-aware-spread":
            assert "ttt_vs_domain_aware" in r
    alone = domain_study_rows(run_domain_study(DomainStudy.quick(**kw, mixed_n_values=())))
    assert [r for r in rows if r["level"] != "all"] == alone
    assert res["settings"]["mixed_n_values"] == (200,)
    from spare_mc.plots import figure_domains
    assert figure_domains(res, str(tmp_path / "domains.png")) == str(tmp_path / "domains.png")


def test_study_settings_are_validated():
    with pytest.raises(ValueError, match="every N in `n_values` must divide n_gpus"):
        DomainStudy(n_values=(700,))
    with pytest.raises(ValueError, match="`spare_r` must give SPARe's r for every N"):
        DomainStudy(n_values=(300,))
    with pytest.raises(ValueError, match="levels"):
        DomainStudy(levels=("shelf",))


def test_study_rows_do_not_depend_on_the_workers():
    """Blocks of rows (one N and level each) computed in two spawned processes: the same rows, in the same order,
    as in this process, error rows and paired differences included, and one progress line per computed row."""
    study = DomainStudy.quick(n_values=(200,), spare_r={200: 20}, n_steps=300, wipeout_reps=100, ttt_reps=4,
                              levels=("none", "rack", "pod"))
    lines = {1: [], 2: []}
    res = {w: run_domain_study(study, workers=w, progress=lines[w].append) for w in (1, 2)}
    assert res[1]["rows"] == res[2]["rows"]
    assert any("error" in r for r in res[1]["rows"]) and any("ttt_vs_domain_aware" in r for r in res[1]["rows"])
    assert sorted(lines[1]) == sorted(lines[2]) and len(lines[1]) == sum("error" not in r for r in res[1]["rows"])
    with pytest.raises(ValueError, match="`workers` must be >= 1"):
        run_domain_study(study, workers=0)


def test_reproduce_table_domains_cli(tmp_path, capsys):
    from spare_mc.cli import main
    assert main(["reproduce", "--table", "domains", "--quick", "--reps", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["table"] == "domains" and out["rows"]
    assert main(["reproduce", "--table", "domains", "--quick", "--reps", "3", "--out-dir", str(tmp_path)]) == 0
    assert (tmp_path / "domains.json").exists() and (tmp_path / "figures" / "domains.png").exists()
    assert main(["reproduce", "--table", "domains", "--quick", "--preset", "paper-n600"]) == 2
    capsys.readouterr()
    assert main(["reproduce", "--table", "domains", "--quick", "--reps", "3", "--workers", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == out["rows"]
    assert main(["reproduce", "--table", "domains", "--quick", "--workers", "0"]) == 2
    assert "`--workers` must be >= 1" in capsys.readouterr().err
