"""Time-to-train timeline: the numba kernel against the SimPy twin, deterministic edge cases, statistics."""

import math

import numpy as np
import pytest
from conftest import ALPHA
from numba import njit
from scipy import stats

import spare_mc as sm
from spare_mc._kernels import live_set as LS
from spare_mc._kernels import timeline as TK
from spare_mc._lib.seeding import trace_seed_sequence
from spare_mc.testing import timeline_simpy
from spare_mc.ttt.config import TimelineConfig, applicable
from spare_mc.ttt.run import _run_us, job_seed, make_trace, run_timeline, simulate_ttt

KEYS = {"ttt": TK.R_TTT, "useful": TK.R_USEFUL, "redundant": TK.R_REDUNDANT, "patch": TK.R_PATCH,
        "allreduce": TK.R_ALLREDUCE, "rectlr_shrink": TK.R_RECTLR, "checkpoint": TK.R_CKPT, "restart": TK.R_RESTART,
        "lost": TK.R_LOST, "failures": TK.R_FAILURES, "absorbed": TK.R_ABSORBED, "wipeouts": TK.R_WIPEOUTS,
        "checkpoints": TK.R_CHECKPOINTS, "detections": TK.R_DETECTIONS, "steps_run": TK.R_STEPS_RUN,
        "steps_done": TK.R_STEPS_DONE}
STATUS = ["ok", "capped", "trace"]
US = 1_000_000


def _kernel(cfg, trace, jitter_seed=0):
    return _run_us(cfg, cfg.layout_object().holders, *trace, jitter_rng=np.random.default_rng(jitter_seed))


def _random_config(rng, strategy, **kw):
    n = int(rng.choice([12, 24, 60]))
    r = 1 if strategy == "ckpt" else int(rng.choice([2, 3, 4]))
    base = dict(r=r, n_steps=int(rng.integers(50, 300)), mtbf_s=float(rng.uniform(20, 400)),
                shape=float(rng.uniform(0.6, 1.5)), restart_s=float(rng.uniform(10, 500)),
                save_s=float(rng.uniform(1, 30)), ckpt_period_s=float(rng.uniform(50, 1000)), jitter_sd=0.0,
                live_scaling=bool(rng.random() < 0.7), compute_s=float(rng.uniform(1, 20)),
                layout=str(rng.choice(["cyclic", "sidon"])) if n >= 24 else "cyclic",
                max_wall_factor=float(rng.choice([5.0, 100.0])))
    base.update(kw)
    return TimelineConfig(strategy, n, **applicable(base, strategy))  # each strategy takes the options it has


def _random_units(rng, n, kind):
    """Per-GPU lifetimes or failure domains on a small topology (renew or keep ages)."""
    topo = sm.Topology(n * 32, n, gpus_per_node=8, nodes_per_rack=2, racks_per_power=2,
                       placement=str(rng.choice(["contiguous", "strided"])))
    mtbf, k = float(rng.uniform(20, 400)), float(rng.uniform(0.6, 1.5))
    bg = sm.PerGPU.from_system_mtbf(mtbf, topo.n_gpus, k, str(rng.choice(["renew", "keep"])))
    own = dict(shape=k, live_scaling=True)  # a unit-clock model runs under its own shape, on live groups only
    if kind == "per_gpu":
        return dict(failures=bg, topology=topo, **own)
    fail = sm.DomainFailures(str(rng.choice(["node", "rack", "power"])), mtbf * 20, k,
                             background=bg if rng.random() < 0.7 else None)
    return dict(failures=fail, topology=topo, **own)


@pytest.mark.parametrize("failures", ["system", "per_gpu", "domain"])
@pytest.mark.parametrize("strategy", ["ckpt", "rep", "spare"])
def test_kernel_equals_simpy_twin_on_random_traces(strategy, failures):
    """Same trace, jitter off: identical TTT, breakdown and counts to the microsecond (capped runs included),
    for the system-level process, per-GPU lifetimes and failure domains (renew and keep ages)."""
    rng = np.random.default_rng({"ckpt": 1, "rep": 2, "spare": 3}[strategy] + 10 * len(failures))
    seen = set()
    for _ in range(12):
        cfg = _random_config(rng, strategy)
        if failures != "system":
            cfg = TimelineConfig.from_dict({**cfg.to_dict(), **_random_units(rng, cfg.n_groups, failures)})
        length = 50_000
        while True:  # long enough for this run (unit clocks redraw every unit at every restart)
            trace = make_trace(cfg, np.random.default_rng(rng.integers(2**32)), length)
            res = _kernel(cfg, trace)
            if STATUS[res[TK.R_STATUS]] != "trace":
                break
            length *= 4
        twin = timeline_simpy(cfg, trace)
        assert STATUS[res[TK.R_STATUS]] == twin["status"] != "trace"
        assert {k: int(res[i]) for k, i in KEYS.items()} == {k: twin[k] for k in KEYS}
        seen.add((twin["status"], twin["wipeouts"] > 0, twin["detections"] > twin["wipeouts"]))
        # the breakdown adds up to the time to train
        parts = ("useful", "redundant", "patch", "allreduce", "rectlr_shrink", "checkpoint", "restart", "lost")
        assert sum(twin[p] for p in parts) == twin["ttt"]
    assert any(w for _, w, _ in seen)  # wipe-outs happened
    if strategy != "ckpt":
        assert any(m for _, _, m in seen)  # masked failures happened


@njit
def _live_set_run(n, ops, draws, out):
    """Apply ``ops`` to a live set of ``n`` groups (1: take the group of rank ``draws[i] * live >> 32``, its index
    into ``out[i]``; 0: bring back group ``draws[i] % n`` if dead, -1 into ``out[i]``; 2: all live again)."""
    T = np.zeros(LS.live_set_width(n), np.int64)
    up = np.ones(n, np.int64)
    LS.live_fill(T, n)
    live = n
    for i in range(ops.shape[0]):
        out[i] = -1
        if ops[i] == 2:
            LS.live_fill(T, n)
            up[:] = 1
            live = n
        elif ops[i] == 1 and live > 0:
            g = LS.live_take(T, n, (draws[i] * live) >> 32)
            out[i] = g
            up[g] = 0
            live -= 1
        elif ops[i] == 0 and up[draws[i] % n] == 0:
            LS.live_add(T, n, draws[i] % n)
            up[draws[i] % n] = 1
            live += 1


@pytest.mark.parametrize("n", [1, 2, 5, 63, 64, 65, 127, 128, 129, 600, 1000, 4097])
def test_live_set_rank_select_equals_the_sorted_live_groups(n):
    """The system source's victim (the live group of rank ``floor(u live / 2^32)`` in increasing index), taken from
    the bitset with a Fenwick tree of word counts, is the one a plain sorted list of the live groups gives, through
    takes, returns and refills (word edges: N = 63, 64, 65, 127-129; the sign bit of a full word), and through a
    drain to a few live groups, where whole words are empty and the descent must pass them (W = 10, 16, 65)."""
    rng = np.random.default_rng(n)
    k = 20 * n + 200
    mixed = rng.choice([0, 1, 1, 1, 2], size=k, p=[0.25, 0.25, 0.25, 0.24, 0.01])
    ops = np.concatenate([[2], mixed, [2], np.ones(n - max(1, n // 50), np.int64),  # drain to ~2% live
                          rng.choice([0, 1], size=4 * n + 20, p=[0.5, 0.5])])
    draws = rng.integers(0, 1 << 32, ops.size, dtype=np.int64)
    out = np.empty(ops.size, np.int64)
    _live_set_run(n, ops, draws, out)
    live, want, least = list(range(n)), [], n
    for op, d in zip(ops, draws):
        if op == 2:
            live = list(range(n))
            want.append(-1)
        elif op == 1 and live:
            want.append(live.pop((int(d) * len(live)) >> 32))
        elif op == 0 and int(d) % n not in live:
            live = sorted(live + [int(d) % n])
            want.append(-1)
        else:
            want.append(-1)
        least = min(least, len(live))
    assert out.tolist() == want
    assert len({g for g in want if g >= 0}) == n  # every group was taken at least once
    assert least <= max(1, n // 50)  # the drain emptied most words


@njit
def _select_all(words, out):
    """``out[i, j]``: the position of the ``j``-th set bit of ``words[i]`` by the kernel's select (-1 past the bit
    count)."""
    for i in range(words.shape[0]):
        x = words[i]
        c = 0
        for b in range(64):
            c += (x >> np.uint64(b)) & np.uint64(1)
        for j in range(64):
            out[i, j] = np.int64(LS._select64(x, np.uint64(j))) if j < c else -1


def test_select_in_a_word_equals_the_sorted_bit_positions():
    """The branch-free select in a 64-bit word against the sorted positions of its set bits: random words of every
    density, single bits (the top one included), the full word and its neighbours, every rank below the count."""
    rng = np.random.default_rng(64)
    words = [rng.integers(0, 1 << 63, dtype=np.uint64) | (np.uint64(int(rng.integers(2))) << np.uint64(63))
             for _ in range(300)]
    words += [np.uint64(int(rng.integers(0, 1 << 63))) & np.uint64(int(rng.integers(0, 1 << 63))) &
              np.uint64(int(rng.integers(0, 1 << 63))) for _ in range(100)]  # sparse
    words += [np.uint64(1) << np.uint64(b) for b in range(64)]
    words += [np.uint64(2 ** 64 - 1), np.uint64(2 ** 63), np.uint64(2 ** 64 - 2), np.uint64(2 ** 63 - 1), np.uint64(1)]
    words = np.array(words, dtype=np.uint64)
    out = np.empty((words.size, 64), np.int64)
    _select_all(words, out)
    for x, row in zip(words.tolist(), out):
        bits = [b for b in range(64) if x >> b & 1]
        assert row.tolist() == bits + [-1] * (64 - len(bits)), hex(x)


@pytest.mark.parametrize("kind", ["per_gpu", "domain"])
def test_twin_derives_the_kernels_unit_clocks(kind):
    """The twin derives its unit clocks from the failure model and the topology, not from
    ``TimelineConfig.unit_clocks``: same units, domains and age policy, and the same Weibull scales up to rounding
    (the config lowers the background through a rate, ``scale ((scale / s_g)^k)^(-1/k)``, a few ulps off ``s_g``)."""
    from spare_mc.testing import timeline_unit_clocks
    rng = np.random.default_rng(5)
    for _ in range(40):
        n = int(rng.choice([12, 24, 60]))
        cfg = TimelineConfig("ckpt", n, ckpt_period_s=600.0, **_random_units(rng, n, kind))  # not 300 s's period
        scales, n_gu, ptr, groups, keep, _, _ = cfg.unit_clocks()
        mine = timeline_unit_clocks(cfg)
        assert (mine[1], list(mine[2]), list(mine[3]), mine[4]) == (n_gu, ptr.tolist(), groups.tolist(), keep)
        assert [b for _, b in mine[5]] == list(cfg.unit_clocks().class_ends)
        np.testing.assert_allclose(mine[0], scales, rtol=4e-16, atol=0)


def test_jitter_equal_in_distribution():
    """Jitter on, same trace: the kernel's and the twin's TTT distributions agree (two-sample KS, Welch)."""
    rng = np.random.default_rng(11)
    cfg = TimelineConfig("spare", 24, r=3, n_steps=150, mtbf_s=60.0, restart_s=120.0, save_s=5.0,
                         ckpt_period_s=300.0, compute_s=8.0, allreduce_s=1.0, jitter_sd=0.05)
    trace = make_trace(cfg, rng, 20_000)
    k = np.array([_kernel(cfg, trace, s)[TK.R_TTT] for s in range(300)], dtype=float)
    t = np.array([timeline_simpy(cfg, trace, jitter_rng=np.random.default_rng(10_000 + s))["ttt"]
                  for s in range(300)], dtype=float)
    assert k.std() > 0 and t.std() > 0
    assert stats.ks_2samp(k, t).pvalue > ALPHA
    assert stats.ttest_ind(k, t, equal_var=False).pvalue > ALPHA


def test_per_gpu_exponential_equals_the_live_scaled_system_process_in_distribution():
    """With exponential lifetimes (k = 1) renewed at restarts, per-GPU failures are a Poisson process whose rate is
    proportional to the live groups -- the system-level process with live scaling: same TTT law (KS, Welch)."""
    topo = sm.Topology(24 * 8, 24, gpus_per_node=8)
    base = dict(r=3, n_steps=200, mtbf_s=40.0, shape=1.0, restart_s=100.0, save_s=5.0, ckpt_period_s=200.0,
                compute_s=8.0, allreduce_s=1.0, jitter_sd=0.0)
    sysm = simulate_ttt(TimelineConfig("spare", 24, **base), 400, rng=1)
    pgpu = simulate_ttt(TimelineConfig("spare", 24, **base, topology=topo,
                                       failures=sm.PerGPU.from_system_mtbf(40.0, topo.n_gpus, 1.0, "renew")),
                        400, rng=2)
    a, b = sysm.values("ttt_over_t0"), pgpu.values("ttt_over_t0")
    assert stats.ks_2samp(a, b).pvalue > ALPHA and stats.ttest_ind(a, b, equal_var=False).pvalue > ALPHA
    fa, fb = sysm.values("failures"), pgpu.values("failures")
    assert stats.ttest_ind(fa, fb, equal_var=False).pvalue > ALPHA


def test_jittered_stretches_keep_the_law_and_skip_steps():
    """Long quiet stretches with jitter: the kernel jumps over them with normal sums (few loop iterations), the
    SimPy twin steps through every step; same TTT law and same mean breakdown (KS, Welch)."""
    rng = np.random.default_rng(12)
    cfg = TimelineConfig("spare", 24, r=3, n_steps=1000, mtbf_s=900.0, restart_s=300.0, save_s=5.0,
                         ckpt_period_s=400.0, compute_s=8.0, allreduce_s=1.0, jitter_sd=0.05)
    trace = make_trace(cfg, rng, 20_000)
    runs = [_kernel(cfg, trace, s) for s in range(250)]
    twins = [timeline_simpy(cfg, trace, jitter_rng=np.random.default_rng(5_000 + s)) for s in range(250)]
    for key in ("ttt", "useful", "allreduce", "lost"):
        k = np.array([r[KEYS[key]] for r in runs], dtype=float)
        t = np.array([w[key] for w in twins], dtype=float)
        assert stats.ks_2samp(k, t).pvalue > ALPHA, key
        assert stats.ttest_ind(k, t, equal_var=False).pvalue > ALPHA, key
    loops = np.mean([r[TK.R_LOOPS] for r in runs])
    events = np.mean([r[TK.R_FAILURES] + r[TK.R_CHECKPOINTS] for r in runs])
    assert loops < 0.5 * cfg.n_steps and loops < 20 * events


def _no_failure_trace(cfg):
    return np.array([np.int64(1) << 60], dtype=np.int64), np.zeros(1, dtype=np.int64)


@pytest.mark.parametrize("strategy, r, factor", [("ckpt", 1, 1), ("rep", 3, 3), ("spare", 8, 1)])
def test_no_failures_is_t0_times_overhead_plus_checkpoints(strategy, r, factor):
    cfg = TimelineConfig(strategy, 600, r=r, jitter_sd=0.0, ckpt_period_s=1000.0)
    res = _kernel(cfg, _no_failure_trace(cfg))
    d = factor * 64 * US + 6 * US
    per = -(-1000 * US // d)                # steps between checkpoints
    n_ck = (cfg.n_steps - 1) // per         # none after the last step
    assert res[TK.R_TTT] == cfg.n_steps * d + n_ck * 60 * US
    assert res[TK.R_CHECKPOINTS] == n_ck and res[TK.R_LOST] == 0 and res[TK.R_WIPEOUTS] == 0
    assert res[TK.R_USEFUL] == cfg.n_steps * 64 * US
    assert res[TK.R_REDUNDANT] == cfg.n_steps * (factor - 1) * 64 * US
    # the cost is the number of checkpoints, not of steps
    assert res[TK.R_LOOPS] <= n_ck + 2


def test_failure_right_after_a_checkpoint_loses_nothing_saved():
    """CKPT-only; the first failure 1 us after the first checkpoint ends: only the step in progress is lost."""
    cfg = TimelineConfig("ckpt", 600, jitter_sd=0.0, ckpt_period_s=1000.0, n_steps=100)
    d = 70 * US
    per = -(-1000 * US // d)
    t_ck = per * d + 60 * US
    gaps = np.array([(t_ck + 1) * 600, np.int64(1) << 60], dtype=np.int64)  # rate N = 600 units per us
    res = _kernel(cfg, (gaps, np.zeros(2, dtype=np.int64)))
    base = _kernel(cfg, _no_failure_trace(cfg))
    assert res[TK.R_WIPEOUTS] == 1 and res[TK.R_LOST] == 64 * US
    assert res[TK.R_TTT] == base[TK.R_TTT] + 3600 * US + 64 * US
    # the same failure during the compute of the step that would have triggered the checkpoint loses everything
    # since the start: the steps before and the step that detected it
    gaps[0] = ((per - 1) * d + 1) * 600
    res2 = _kernel(cfg, (gaps, np.zeros(2, dtype=np.int64)))
    assert res2[TK.R_LOST] == (per - 1) * d + 64 * US
    # and one arriving during that step's all-reduce is detected after the checkpoint: only one step lost
    gaps[0] = (per * d - 1) * 600
    res3 = _kernel(cfg, (gaps, np.zeros(2, dtype=np.int64)))
    assert res3[TK.R_LOST] == 64 * US and res3[TK.R_CHECKPOINTS] == res[TK.R_CHECKPOINTS]


def test_ckpt_only_with_restart_longer_than_mtbf_is_capped_with_a_clear_status():
    cfg = TimelineConfig("ckpt", 600, mtbf_s=30.0, restart_s=3600.0, n_steps=2000, max_wall_factor=20.0,
                         jitter_sd=0.0)
    res = simulate_ttt(cfg, 3, rng=4)
    assert all(r.status == "capped" for r in res.runs)
    s = res.summary()
    assert s["capped_fraction"] == 1.0 and "wall-clock cap" in s["status"]
    # capped runs are censored at the cap, never dropped: the restricted mean is the cap itself here
    assert s["ttt_over_t0"] == pytest.approx(20.0, rel=1e-12) and "restricted mean" in s["ttt_estimator"]
    assert res.estimate("ttt_over_t0").censored == 3
    assert all(r.steps_done < 0.05 * cfg.n_steps for r in res.runs)
    assert all(r.ttt_s == 20 * cfg.t0_s for r in res.runs)  # each stopped at the cap, inside a restart
    assert all(sum(r.breakdown_s.values()) == pytest.approx(r.ttt_s, rel=1e-12) for r in res.runs)


def test_rep_never_patches_and_spare_s_follows_rectlr():
    cfg = TimelineConfig("rep", 600, r=3, jitter_sd=0.0, n_steps=2000)
    run = run_timeline(cfg, np.random.SeedSequence(1))
    assert run.breakdown_s["patch"] == 0 and run.mean_s == 3.0 and run.failures > run.wipeouts > 0
    cfg = TimelineConfig("spare", 600, r=8, jitter_sd=0.0, n_steps=2000)
    run = run_timeline(cfg, np.random.SeedSequence(1))
    assert run.breakdown_s["patch"] > 0 and 1.0 < run.mean_s < 8.0 and run.patch_shards > 0


def test_reproducible_and_chunking_independent():
    cfg = TimelineConfig("spare", 200, r=6, n_steps=1000)
    a = simulate_ttt(cfg, 3, rng=9)
    b = simulate_ttt(cfg, 2, rng=9)
    assert a.runs[:2] == b.runs
    assert a.summary() == simulate_ttt(cfg, 3, rng=9).summary()
    # common random numbers: the same failures hit CKPT-only and SPARe until the first restart
    ck = run_timeline(TimelineConfig("ckpt", 200, n_steps=1000, jitter_sd=0.0), np.random.SeedSequence(5))
    sp = run_timeline(TimelineConfig("spare", 200, r=6, n_steps=1000, jitter_sd=0.0), np.random.SeedSequence(5))
    assert ck.failures > 0 and sp.failures > 0


def test_trace_extension_is_transparent():
    """A run that exhausts its first trace block extends the trace and equals a run on a long trace."""
    cfg = TimelineConfig("ckpt", 600, n_steps=3000, jitter_sd=0.0)
    run = run_timeline(cfg, np.random.SeedSequence(3))
    assert run.arrivals_used > 3 * int(cfg.t0_s / cfg.mtbf_s) + 4096
    trace_ss, _ = np.random.SeedSequence(3).spawn(2)
    long_trace = make_trace(cfg, np.random.default_rng(trace_ss), 4 * 4096 * 8)
    again = run_timeline(cfg, np.random.SeedSequence(3), trace=long_trace)
    assert again.ttt_s == run.ttt_s and again.breakdown_s == run.breakdown_s


def test_trace_cache_keeps_its_byte_total_and_drops_the_least_recently_used(monkeypatch):
    """`_TraceCache`: the byte total it keeps equals the sum over the traces it holds through replacements,
    evictions and a clear; the least recently used trace goes first (a `get` makes a trace the most recent), a
    trace larger than the whole budget is not kept, a longer trace for a key replaces the shorter one and a shorter one
    does not replace a longer one."""
    import spare_mc.ttt.run as tr

    def trace(n):
        return np.zeros(n, np.int64), np.ones(n, np.int64)  # 16 n bytes

    def held(c):
        assert c._bytes == sum(a.nbytes for t in c._traces.values() for a in t)
        return list(c._traces)

    monkeypatch.setattr(tr, "TRACE_CACHE_BYTES", 16 * 300)
    c = tr._TraceCache()
    for k in "abc":
        c.put(k, trace(100))
    assert held(c) == ["a", "b", "c"] and c._bytes == 16 * 300
    assert c.get("a")[1][0] == 1 and c.get("zz") is None
    c.put("d", trace(100))  # over the budget: b, the least recently used, goes
    assert held(c) == ["c", "a", "d"]
    c.put("a", trace(200))  # a's longer trace replaces its shorter one; c goes
    assert held(c) == ["d", "a"] and c.get("a")[0].size == 200
    c.put("d", trace(50))  # a shorter trace for d (another thread's miss) keeps the longer; d is the most recent
    assert held(c) == ["a", "d"] and c.get("d")[0].size == 100 and c._bytes == 16 * 300
    c.put("e", trace(1000))  # alone over the budget: not kept, the others stay
    assert held(c) == ["a", "d"] and c.get("e") is None
    c.put("f", trace(300))  # exactly the budget: kept, every other one goes
    assert held(c) == ["f"] and len(c) == 1
    c.clear()
    assert held(c) == [] and c._bytes == 0


def test_cached_traces_are_make_traces_arrays_and_give_the_same_runs(monkeypatch):
    """The per-process trace cache (`_job_trace`) returns exactly what `make_trace` draws from the job's seed, for a
    shorter, an equal and a longer length than the one cached (its extension included), and runs on cached traces
    (other configs, the same replications: common random numbers) equal the runs on traces drawn for each job, with
    the cache left empty by a budget of 0 bytes; likewise for unit clocks."""
    import spare_mc.ttt.run as tr

    tr._TRACES.clear()
    cfg = TimelineConfig("rep", 200, r=3, n_steps=2000, shape=0.7)
    ss = trace_seed_sequence(np.random.SeedSequence(4), 200, 7)
    for length in (5000, 100, 8192, 20000, 3):
        want = make_trace(cfg, np.random.default_rng(job_seed(ss, 0)), length)
        got = tr._job_trace(cfg, ss, length)
        assert len(got) == 2 and all(np.array_equal(a, b) for a, b in zip(got, want))
    assert len(tr._TRACES) == 1
    for seed in ([3, 1], np.array([3, 2], dtype=np.uint64), np.int64(4)):  # a list is unhashable as a key
        ss_list = trace_seed_sequence(np.random.SeedSequence(seed), 200, 0)
        want = make_trace(cfg, np.random.default_rng(job_seed(ss_list, 0)), 100)
        assert all(np.array_equal(a, b) for a, b in zip(tr._job_trace(cfg, ss_list, 100), want))
    assert len(tr._TRACES) == 4
    assert sm.simulate_ttt(cfg, 2, rng=[3, 1]).values("ttt_over_t0").size == 2
    other = TimelineConfig("rep", 200, r=3, n_steps=2000, shape=0.8)  # another shape: another trace
    assert not np.array_equal(tr._job_trace(other, ss, 100)[0], tr._job_trace(cfg, ss, 100)[0])
    cfgs = [TimelineConfig("spare", 200, r=r, n_steps=3000, ckpt_period_factor=f, jitter_sd=0.0)
            for r in (2, 6) for f in (0.5, 2.0)] + [TimelineConfig("ckpt", 600, n_steps=3000, jitter_sd=0.0)]
    root = np.random.SeedSequence(11)
    tr._TRACES.clear()
    cached = [run_timeline(c, trace_seed_sequence(root, c.n_groups, i)) for c in cfgs for i in range(3)]
    assert 0 < len(tr._TRACES) <= 6
    monkeypatch.setattr(tr, "TRACE_CACHE_BYTES", 0)  # every trace drawn for its job, as make_trace gives it
    tr._TRACES.clear()
    fresh = [run_timeline(c, trace_seed_sequence(root, c.n_groups, i)) for c in cfgs for i in range(3)]
    assert len(tr._TRACES) <= 1
    assert cached == fresh
    assert cached[-1].arrivals_used > 4096  # CKPT-only at N = 600 extends its first trace (from the cache too)
    # unit clocks: one trace per seed for the race and one per seed and Weibull shape for per-unit clocks, shared by
    # the failure models, strategies and periods of one N; runs on them equal runs on traces drawn per job
    ucfgs = [TimelineConfig(s, 20, r=2, n_steps=300, failures=f, ckpt_period_s=p, unit_sampler=u)
             for s in ("rep", "spare") for f in (sm.PerGPU(2e5, shape=0.8), sm.PerGPU(1e5, shape=0.8))
             for p in (300.0, 900.0) for u in ("auto", "per_unit")]
    ucfgs += [TimelineConfig("rep", 20, r=2, n_steps=300, failures=sm.PerGPU(2e5, shape=1.2), ckpt_period_s=300.0,
                             unit_sampler=u) for u in ("auto", "per_unit")]  # another shape: per-unit clocks differ
    assert {c.unit_race for c in ucfgs} == {True, False}
    ss = trace_seed_sequence(root, 20, 2)
    for c in ucfgs[:2]:
        for length in (5000, 100, 9000):
            want = make_trace(c, np.random.default_rng(job_seed(ss, 0)), length)
            assert all(np.array_equal(a, b) for a, b in zip(tr._job_trace(c, ss, length), want))
    monkeypatch.setattr(tr, "TRACE_CACHE_BYTES", 48 << 20)
    tr._TRACES.clear()
    cached = [run_timeline(c, trace_seed_sequence(root, 20, i)) for c in ucfgs for i in range(3)]
    assert len(tr._TRACES) == 9  # 3 seeds x (the race, per-unit clocks of shape 0.8, of shape 1.2)
    monkeypatch.setattr(tr, "TRACE_CACHE_BYTES", 0)
    tr._TRACES.clear()
    assert [run_timeline(c, trace_seed_sequence(root, 20, i)) for c in ucfgs for i in range(3)] == cached
    assert any(run.failures for run in cached)


def test_results_dataset_and_estimates(tmp_path):
    import json

    import xarray as xr

    cfg = TimelineConfig("spare", 200, r=6, n_steps=800)
    res = simulate_ttt(cfg, 5, rng=2)
    est = res.estimate("ttt_over_t0")
    assert est.n == 5 and est.ci[0] < est.mean < est.ci[1]
    ds = res.to_xarray()
    assert ds.sizes["rep"] == 5 and ds.attrs["strategy"] == "spare"
    np.testing.assert_allclose(ds["ttt_over_t0"].values, res.values("ttt_over_t0"))
    # QA: booleans were stored as the strings "True"/"False" (both true in Python) and None as "None"
    assert ds.attrs["live_scaling"] == 1 and ds.attrs["ckpt_async"] == 0 and "ckpt_period_s" not in ds.attrs
    assert not any(isinstance(v, str) and v in ("True", "False", "None") for v in ds.attrs.values())
    path = tmp_path / "ttt.nc"
    ds.to_netcdf(path)
    with xr.open_dataset(path) as back:
        assert TimelineConfig.from_dict(json.loads(back.attrs["config"])) == cfg
        assert not back.attrs["ckpt_async"] and back.attrs["live_scaling"]
    for run in res.runs:
        assert sum(run.breakdown_s.values()) == pytest.approx(run.ttt_s, rel=1e-12)
        assert 0 < run.availability <= 1 and run.useful_fraction <= run.availability


def test_paper_allreduce_model():
    assert [sm.ttt.config.paper_allreduce_s(n) for n in (200, 600, 1000)] == [2.0, 6.0, 10.0]
    assert sm.ttt.config.paper_allreduce_s(10) == 0.5


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(strategy="raid", n_groups=10), ValueError, r"`strategy` must be one of"),
    (dict(strategy="ckpt", n_groups=10, r=2), ValueError, r"`r` must be 1 for strategy 'ckpt'"),
    (dict(strategy="rep", n_groups=10, r=11), ValueError, r"`r` must be <= 10"),  # any r <= N (replica sets)
    (dict(strategy="spare", n_groups=10, r=11), ValueError, r"`r` must be <= 10"),
    (dict(strategy="spare", n_groups=1, r=1), ValueError, r"`n_groups` must be >= 2"),
    (dict(strategy="spare", n_groups=10, r=2, mtbf_s=0.0), ValueError, r"`mtbf_s` must be > 0"),
    # accepted before, then an OverflowError deep in a run (5e-324) or a message about `mean_uptime_s` (1e308)
    (dict(strategy="spare", n_groups=10, r=2, mtbf_s=5e-324), ValueError, r"`mtbf_s` must be at least 1 microsecond"),
    (dict(strategy="spare", n_groups=10, r=2, mtbf_s=1e308), ValueError, r"`mtbf_s` must be <= 1e\+300"),
    (dict(strategy="spare", n_groups=10, r=2, mtbf_s=2**2000), ValueError, r"`mtbf_s` must be finite, got an integer "
                                                                            r"of 2001 bits"),
    (dict(strategy="spare", n_groups=10, r=2, jitter_sd=0.7), ValueError, r"`jitter_sd` must be < 0.2"),
    (dict(strategy="spare", n_groups=10, r=2, jitter_sd=-0.1), ValueError, r"`jitter_sd` must be >= 0"),
    (dict(strategy="spare", n_groups=10, r=2, ckpt_period_s=-5.0), ValueError, r"`ckpt_period_s` must be > 0"),
    (dict(strategy="spare", n_groups=10, r=2, layout="block"), ValueError, r"`layout` must be one of"),
    (dict(strategy="spare", n_groups=10, r=2, live_scaling=1), TypeError, r"`live_scaling` must be a bool"),
    (dict(strategy="spare", n_groups=10.5, r=2), TypeError, r"`n_groups` must be an integer"),
    (dict(strategy="spare", n_groups=10, r=2, failures=sm.SystemRenewal(300.0)), TypeError,
     r"`failures` must be PerGPU, DomainFailures or None"),
    (dict(strategy="spare", n_groups=10, r=2, failures=sm.PerGPU(1e9), topology=sm.Topology(80, 8)), ValueError,
     r"`topology` has N=8 groups, the config N=10"),
    (dict(strategy="spare", n_groups=10, r=2, topology="rack"), TypeError, r"`topology` must be a Topology"),
])
def test_config_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        TimelineConfig(**kwargs)


def test_other_errors():
    with pytest.raises(ValueError, match=r"unknown TimelineConfig parameters: \['mtbf'\]"):
        TimelineConfig.from_dict({"strategy": "ckpt", "n_groups": 10, "mtbf": 3.0})
    with pytest.raises(TypeError, match=r"`cfg` must be a TimelineConfig"):
        simulate_ttt({"strategy": "ckpt"}, 2)
    with pytest.raises(ValueError, match=r"`reps` must be >= 1"):
        simulate_ttt(TimelineConfig("ckpt", 10), 0)
    cfg = TimelineConfig("ckpt", 600, n_steps=3000, jitter_sd=0.0)
    short = make_trace(cfg, np.random.default_rng(0), 10)
    with pytest.raises(ValueError, match=r"`trace` ran out"):
        run_timeline(cfg, np.random.SeedSequence(0), trace=(short[0][:5], short[1][:5]))



def _bad_traces():
    """(failure source, a function of a good trace that breaks it, the error, the message): each rule of a caller's
    trace (make_trace's contract), which the kernel would not check (a victim draw >= 2^32 indexes past its live
    set; a negative lifetime runs time backwards)."""
    sysm, units = {}, dict(failures=sm.PerGPU.from_system_mtbf(300.0, 64 * 8, 0.78), live_scaling=True, shape=0.78,
                           unit_sampler="per_unit",
                           topology=sm.Topology(64 * 8, 64))
    race = {**units, "unit_sampler": "race", "failures": sm.DomainFailures("node", 3e4, 0.78,
                                                                           background=units["failures"])}
    return [
        (sysm, lambda t: (t[0], t[1] + (1 << 32)), ValueError, r"`trace` victims\[0\] = \d+ breaks the rule: each "
         r"must be in \[0, 2\^32\)"),
        (sysm, lambda t: (t[0], -t[1]), ValueError, r"victims\[\d+\] = -\d+ breaks the rule"),
        (sysm, lambda t: (np.where(np.arange(t[0].size) == 7, 0, t[0]), t[1]), ValueError,
         r"`trace` gaps\[7\] = 0 breaks the rule: each must be in \[1, 2\^61\]"),
        (sysm, lambda t: (t[0].astype(float), t[1]), TypeError, r"`trace` gaps must be integers, got dtype float64"),
        (sysm, lambda t: (t[0],), ValueError, r"must hold 2 arrays \('gaps', 'victims'\) .* got 1"),
        (sysm, lambda t: (t[0], t[1][:-1]), ValueError, r"gaps and victims must have the same length"),
        (sysm, lambda t: (t[0][None, :], t[1]), ValueError, r"gaps must be one-dimensional, got shape \(1, \d+\)"),
        (sysm, lambda t: 5, TypeError, r"`trace` must be a tuple of arrays \('gaps', 'victims'\), got int"),
        (units, lambda t: (np.where(np.arange(t[0].size) == 3, -1.0, t[0]),), ValueError,
         r"`trace` lifetimes\[3\] = -1.0 breaks the rule: each must be finite and >= 0"),
        (units, lambda t: (np.where(np.arange(t[0].size) == 2, np.nan, t[0]),), ValueError, r"lifetimes\[2\] = nan"),
        (units, lambda t: (t[0].astype(str),), TypeError, r"`trace` lifetimes must be real numbers"),
        (race, lambda t: (t[0], t[1] + (1 << 32)), ValueError, r"`trace` victims\[0\] = \d+ breaks the rule"),
        (race, lambda t: (t[0],), ValueError, r"must hold 2 arrays \('lifetimes', 'victims'\)"),
    ]


@pytest.mark.parametrize("case", range(len(_bad_traces())))
def test_a_callers_trace_is_checked(case):
    """run_timeline(trace=...) names the array, the first bad entry and the rule; the good trace runs."""
    source, breaker, exc, match = _bad_traces()[case]
    cfg = TimelineConfig("spare", 64, r=4, n_steps=200, jitter_sd=0.0, **source)
    good = make_trace(cfg, np.random.default_rng(case), 4096 if cfg.failures is None or cfg.unit_race else 20_000)
    assert run_timeline(cfg, np.random.SeedSequence(0), trace=good).status == "ok"
    with pytest.raises(exc, match=match):
        run_timeline(cfg, np.random.SeedSequence(0), trace=breaker(good))

# ------------------------------------------------------------------------------------------ optimiser and CLI
def test_theory_ttt_pieces():
    from spare_mc.ttt.theory import theory_ttt
    cfg = TimelineConfig("ckpt", 600)
    t = theory_ttt(cfg)
    assert t.S == 1.0 and t.T_f_s == 300.0 and t.paper_J is None
    assert t.ttt_over_t0 == pytest.approx(1 / sm.optimal_availability(60.0, 300.0, 3600.0))
    sp = theory_ttt(TimelineConfig("spare", 600, r=8))
    assert sp.S == pytest.approx(sm.exact_stack_bound_sum("cyclic", 600, 8).c_mean)
    assert sp.mean_T == pytest.approx(sm.exact_wipeout("cyclic", 600, 8).mean)
    assert sp.paper_J == pytest.approx(sm.normalized_ttt(600, 8, 300.0, 60.0, 3600.0))
    rep = theory_ttt(TimelineConfig("rep", 600, r=3))
    assert rep.S == 3.0 and rep.mean_T == pytest.approx(sm.theory.exact.block_mean_closed_form(600, 3))


@pytest.mark.parametrize("kw", [{"load_s": 1e5}, {"restart_growth": "quadratic", "restart_ref_groups": 6},
                                {"memory_copies": 2, "memory_save_s": 5.0, "remote_every": 4},
                                {"ckpt_async": True, "async_slowdown": 1.25}])
def test_theory_ttt_prices_the_checkpointing_its_period_assumes(kw):
    """The theory's availability is the model's value at the period it returns, with the same checkpoint cost and
    restart (a QA pass found the availability still using the plain restart_s while the period took a load time or
    a restart growing with N into account: A = 0.495 instead of 0.041 at load_s = 1e5)."""
    from spare_mc.ttt.theory import theory_ttt
    from spare_mc.ttt.period import theory_costs

    cfg = TimelineConfig("spare", 60, r=3, **kw)
    th = theory_ttt(cfg)
    ts, tf, tr = theory_costs(cfg)
    assert tf == th.T_f_s and tr == pytest.approx(cfg.restart + (cfg.memory_load if cfg.memory_copies else
                                                                cfg.load_s))
    assert th.availability == pytest.approx(sm.availability(th.ckpt_period_s, ts, tf, tr), rel=1e-12)
    assert th.ttt_over_t0 == pytest.approx(th.S / th.availability, rel=1e-12)
    plain = theory_ttt(TimelineConfig("spare", 60, r=3))
    if "load_s" in kw or "restart_growth" in kw:  # a longer restart: a worse availability than the plain config's
        assert th.availability < 0.1 < 0.4 < plain.availability
    with pytest.raises(TypeError, match=r"`cfg` must be a TimelineConfig, got dict"):
        theory_ttt({"strategy": "spare"})


def test_theory_ttt_of_free_checkpoints():
    """An asynchronous save with no slowdown costs the compute nothing (T_s = 0): the period is the save itself
    and the availability the model's with T_s = 0, T_f / (T_f + T_r + T_c / 2)."""
    from spare_mc.ttt.theory import theory_ttt
    from spare_mc.ttt.period import theory_costs

    cfg = TimelineConfig("spare", 60, r=3, ckpt_async=True, async_slowdown=1.0)
    th = theory_ttt(cfg)
    ts, tf, tr = theory_costs(cfg)
    assert ts == 0 and th.ckpt_period_s == cfg.save_s
    assert th.availability == pytest.approx(tf / (tf + tr + cfg.save_s / 2), rel=1e-12)


def test_optimize_strategy_selects_the_grid_minimum_and_confirms_on_fresh_seeds():
    from spare_mc.ttt.optimize import optimize_strategy
    base = {"n_steps": 300, "jitter_sd": 0.0}
    opt = optimize_strategy("spare", 60, reps=3, confirm_reps=4, r_range=(2, 4), period_factors=(0.7, 1.4),
                            base=base, rng=3)
    finished = [g for g in opt.grid if g["capped_fraction"] == 0]
    best = min(finished, key=lambda g: g["ttt_over_t0"])
    assert (opt.best_r, opt.best_ckpt_period_s) == (best["r"], best["ckpt_period_s"])
    assert len(opt.grid) == 3 * 2 and opt.best.reps == 4
    # the confirmation uses other seeds than the grid
    grid_run = simulate_ttt(TimelineConfig("spare", 60, r=opt.best_r, ckpt_period_s=opt.best_ckpt_period_s,
                                           **base), 3, rng=3)
    assert grid_run.runs[0] != opt.best.runs[0]
    s = opt.summary()
    assert s["paper_r_star"] == sm.r_star(60) and s["best_r"] in (2, 3, 4)
    with pytest.raises(ValueError, match=r"`base` must not set 'r'"):
        optimize_strategy("spare", 60, base={"r": 3})
    # Rep runs on replica sets for every r, not only the divisors of N (61 is prime)
    rep = optimize_strategy("rep", 61, reps=2, confirm_reps=2, r_range=(2, 5), period_factors=(1.0,), base=base,
                            rng=3)
    assert sorted(g["r"] for g in rep.grid) == [2, 3, 4, 5] and rep.best_r in (2, 3, 4, 5)
    assert [t.S for t in rep.theory] == [61 / 30, 61 / 20, 61 / 15, 61 / 12]


def test_optimize_strategy_screen_in_looks_runs_the_full_replications_on_the_points_left():
    """With ``screen_alpha`` the grid is screened in looks: every point runs the first look, the points that
    survive the paired eliminations run every replication on the same traces as without elimination (so their grid
    rows are identical), the selection is among them, and its confirmation is the same run."""
    from spare_mc.ttt.optimize import optimize_strategy
    base = {"n_steps": 400, "jitter_sd": 0.0}
    kw = {"reps": 12, "confirm_reps": 4, "r_range": (2, 7), "period_factors": (0.5, 1.0, 2.0), "base": base,
          "rng": 5}
    full = optimize_strategy("spare", 60, **kw)
    looked = optimize_strategy("spare", 60, screen_alpha=0.05, **kw)
    assert all(g["replications"] == 12 for g in full.grid)
    reps = [g["replications"] for g in looked.grid]
    assert set(reps) <= {4, 8, 12} and 12 in reps and min(reps) == 4  # some points were dropped after a look
    for g, h in zip(full.grid, looked.grid):
        if h["replications"] == 12:
            assert g == h  # a point left in ran replications 0 .. 11, as in the full screen
    kept = [h for h in looked.grid if h["replications"] == 12 and h["capped_fraction"] == 0]
    best = min(kept, key=lambda h: h["ttt_over_t0"])
    assert (looked.best_r, looked.best_ckpt_period_s) == (best["r"], best["ckpt_period_s"])
    if (looked.best_r, looked.best_ckpt_period_s) == (full.best_r, full.best_ckpt_period_s):
        assert looked.best.runs == full.best.runs
    with pytest.raises(ValueError, match="`screen_alpha`"):
        optimize_strategy("spare", 60, screen_alpha=-0.1, **kw)


def test_cli_ttt_and_reproduce_json(capsys):
    import json

    from spare_mc.cli import main
    assert main(["ttt", "--strategy", "spare", "--n-groups", "60", "--r", "4", "--reps", "3", "--n-steps", "200",
                 "--seed", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("ttt_over_t0", "availability", "breakdown", "failures_mean", "wipeouts_mean"):
        assert key in out
    lo, hi = out["ttt_over_t0_ci95"]
    assert lo <= out["ttt_over_t0"] <= hi and out["config"]["n_steps"] == 200
    assert main(["reproduce", "--table", "main", "--n-values", "24,60", "--reps", "2", "--confirm-reps", "2",
                 "--n-steps", "100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [row["n_groups"] for row in out["rows"]] == [24, 60]
    for row in out["rows"]:
        assert "ttt_reduction" in row and len(row["ttt_reduction_ci95"]) == 2
        for s in ("ckpt", "rep", "spare"):
            for key in ("best_r", "ckpt_period_s", "ttt_over_t0", "ttt_over_t0_ci95", "availability",
                        "availability_ci95"):
                assert key in row[s]


@pytest.mark.parametrize("n_values, shown", [((24, 60), False), ((200, 600), True)])
def test_the_papers_n600_line_is_printed_beside_an_n600_row_only(capsys, n_values, shown):
    """QA: `reproduce --table main --n-values 7` printed "paper, N=600: ..." under a table without N = 600."""
    from spare_mc.cli.format import main_table
    from spare_mc.ttt.optimize import _paper_summary

    cell = {"best_r": 3, "ckpt_period_s": 100.0, "ttt_over_t0": 2.0, "ttt_over_t0_ci95": [1.9, 2.1],
            "availability": 0.5, "availability_ci95": [0.49, 0.51], "capped_fraction": 0.0}
    rows = [{"n_groups": n, "ckpt": cell, "rep": cell, "spare": cell, "ttt_reduction": 0.1,
             "ttt_reduction_ci95": [0.05, 0.15]} for n in n_values]
    main_table({"rows": rows, "paper_N600": _paper_summary()})
    out = capsys.readouterr().out
    assert ("paper, N=600:" in out) is shown
    assert out.count("TTT reduction") == 2


@pytest.mark.parametrize("argv, match", [
    (["ttt", "--strategy", "rep", "--n-groups", "10", "--r", "11"], r"`--r` must be <= 10"),
    (["ttt", "--strategy", "spare", "--n-groups", "600", "--reps", "1"], r"`--reps` must be >= 2"),
    (["ttt", "--strategy", "spare", "--n-groups", "600", "--mtbf-s", "-3"], r"`--mtbf-s` must be > 0"),
    (["ttt", "--strategy", "spare", "--n-groups", "600", "--ckpt-period-s", "10", "--ckpt-period", "optimal"],
     r"not allowed with argument"),
    (["reproduce", "--n-values", "200,x"], r"`--n-values` must be comma-separated integers"),
    (["reproduce", "--n-values", "1"], r"`--n-values` must be >= 2"),
    (["reproduce", "--table", "side"], r"invalid choice"),
])
def test_cli_bad_arguments(argv, match, capsys):
    import re

    from spare_mc.cli import main
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(match, err)


# ------------------------------------------------------------------------- saturation of the microsecond clock
def _t0_plus_checkpoints_us(cfg):
    """TTT of a failure-free job without jitter: T0 plus the checkpoints (none after the last step)."""
    d = round(cfg.compute_s * US) + round(cfg.allreduce * US)
    per = -(-round(cfg.ckpt_period * US) // d)  # steps between checkpoints
    n_ck = (cfg.n_steps - 1) // per
    return cfg.n_steps * d + n_ck * round(cfg.save_s * US), n_ck


@pytest.mark.parametrize("mtbf_s", [1e11, 1e12, 1e15])
@pytest.mark.parametrize("period_s", [None, 1000.0])
def test_astronomical_mtbf_gives_no_failures(mtbf_s, period_s):
    """CKPT-only at N = 1000 with an MTBF whose gaps (group-microseconds) overflow int64: the gaps saturate at the
    horizon, so no failure happens and the time to train is exactly T0 plus the checkpoints (it used to overflow
    into hundreds of failures, with only a RuntimeWarning)."""
    cfg = TimelineConfig("ckpt", 1000, mtbf_s=mtbf_s, jitter_sd=0.0, ckpt_period_s=period_s)
    ttt_us, n_ck = _t0_plus_checkpoints_us(cfg)
    for run in simulate_ttt(cfg, 4, rng=3).runs:
        assert run.status == "ok" and run.failures == 0 and run.wipeouts == 0 and run.absorbed == 0
        assert run.raw_us[TK.R_TTT] == ttt_us and run.checkpoints == n_ck and run.breakdown_s["lost"] == 0


def test_astronomical_mtbf_cli_reports_no_failures(capsys):
    import json

    from spare_mc.cli import main
    assert main(["ttt", "--strategy", "ckpt", "--n-groups", "1000", "--reps", "4", "--mtbf-s", "1e11",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["failures_mean"] == 0 and out["wipeouts_mean"] == 0


def test_make_trace_clips_gaps_at_the_horizon():
    """Gaps beyond the horizon are clipped to it before the conversion to int64 (no overflow, no warning); the
    others are unchanged."""
    import warnings
    horizon = np.int64(1) << 61
    for mtbf_s in (300.0, 1e9, 1e12, 1e15, 1e300):
        cfg = TimelineConfig("ckpt", 1000, mtbf_s=mtbf_s, jitter_sd=0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            gaps, vic = make_trace(cfg, np.random.default_rng(1), 5000)
        assert gaps.dtype == np.int64 and gaps.min() >= 1 and gaps.max() <= horizon
        scale = cfg.mtbf_s / math.gamma(1 + 1 / cfg.shape)
        with np.errstate(over="ignore"):
            x = np.random.default_rng(1).weibull(cfg.shape, 4096) * scale * US * 1000
        small = x < 2.0 ** 61
        np.testing.assert_array_equal(gaps[:4096][small], np.maximum(1, np.rint(x[small])).astype(np.int64))
        assert np.all(gaps[:4096][~small] == horizon)


@pytest.mark.parametrize("strategy", ["ckpt", "rep", "spare"])
def test_kernel_equals_twin_when_the_trace_saturates(strategy):
    """Traces with gaps beyond any reachable time: from make_trace at astronomical MTBFs, and normal traces with one
    gap of int64's maximum in the middle (the failures before it happen, none after; the operational clock must
    not overflow). Kernel and twin agree to the microsecond."""
    rng = np.random.default_rng({"ckpt": 41, "rep": 42, "spare": 43}[strategy])
    for k in range(8):
        cfg = _random_config(rng, strategy, mtbf_s=1e15) if k < 2 else _random_config(rng, strategy)
        trace = make_trace(cfg, np.random.default_rng(rng.integers(2**32)), 50_000)
        if k >= 2:
            trace[0][int(rng.integers(1, 40))] = np.iinfo(np.int64).max
        res = _kernel(cfg, trace)
        twin = timeline_simpy(cfg, trace)
        assert STATUS[res[TK.R_STATUS]] == twin["status"] != "trace"
        assert {key: int(res[i]) for key, i in KEYS.items()} == {key: twin[key] for key in KEYS}
        assert twin["failures"] <= (0 if k < 2 else 40)


@pytest.mark.parametrize("kind", ["per_gpu", "domain"])
def test_astronomical_unit_lifetimes_never_fail(kind):
    """Unit clocks whose lifetimes do not fit the clock (per-GPU MTBF 1e30 s) saturate at the horizon: no failure
    from them (the domains of the domain model still fail), and the kernel equals the twin."""
    topo = sm.Topology(24 * 8, 24, gpus_per_node=8)
    bg = sm.PerGPU(1e30, 0.78, "keep")
    failures = bg if kind == "per_gpu" else sm.DomainFailures("node", 3000.0, 0.78, background=bg)
    cfg = TimelineConfig("spare", 24, r=3, n_steps=300, compute_s=8.0, allreduce_s=1.0, restart_s=100.0, save_s=5.0,
                         ckpt_period_s=200.0, jitter_sd=0.0, failures=failures, topology=topo)
    runs = simulate_ttt(cfg, 3, rng=1).runs
    if kind == "per_gpu":
        assert all(r.status == "ok" and r.failures == 0 and r.raw_us[TK.R_TTT] == _t0_plus_checkpoints_us(cfg)[0]
                   for r in runs)
    rng = np.random.default_rng(8)
    for _ in range(3):
        trace = make_trace(cfg, np.random.default_rng(rng.integers(2**32)), 200_000)
        res = _kernel(cfg, trace)
        twin = timeline_simpy(cfg, trace)
        assert STATUS[res[TK.R_STATUS]] == twin["status"] == "ok"
        assert {key: int(res[i]) for key, i in KEYS.items()} == {key: twin[key] for key in KEYS}
        assert (twin["failures"] == 0) == (kind == "per_gpu")


def test_a_derived_period_beyond_the_clock_means_never():
    """The theory period of an astronomical MTBF does not fit the microsecond clock: it saturates (no checkpoint,
    no failure) instead of overflowing."""
    for mtbf in (1e24, 1e300):
        cfg = TimelineConfig("spare", 600, r=8, mtbf_s=mtbf, n_steps=300, jitter_sd=0.0)
        run = simulate_ttt(cfg, 1, rng=1).runs[0]
        assert (run.failures, run.checkpoints, run.status) == (0, 0, "ok") and run.ttt_s == cfg.t0_s
