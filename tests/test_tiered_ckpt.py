"""Checkpointing as practised today: asynchronous saves, in-memory copies with a remote fallback, and the restart
split into re-scheduling and loading (docs/model.md, "Modern checkpointing").

Hand-built traces with exact expected times, the kernel against the SimPy twin under random options, and the two
identities the model promises: ``memory_copies = 0`` is remote-only checkpointing exactly, and copies that never
all fail never roll back further than the last in-memory checkpoint.
"""

import dataclasses

import numpy as np
import pytest
from test_kernel_options import (BASE, KEYS, US, TimelineConfig, _agree, _cycle_start, _cycles_config, _expect,
                                 _long_enough_trace, _random_config, _run, _trace, _with_and_without_cycles)

from spare_mc._kernels import job_steps
from spare_mc._kernels import timeline as TK
from spare_mc.ttt.config import TimelineConfig as _Config
from spare_mc.ttt.period import theory_ckpt_period_s
from spare_mc.ttt.run import make_trace, simulate_ttt

#: the new counters, twin key -> kernel slot
NEW = {"memory_restarts": TK.R_MEM_RESTARTS, "remote_fallbacks": TK.R_FALLBACKS, "async_slowdown": TK.R_ASYNC_SLOW}


def _both(cfg, trace):
    """Kernel and twin on one trace (:func:`test_kernel_options._agree`), the new counters included."""
    return _agree(cfg, trace, keys={**KEYS, **NEW})


def _by_steps(**kw):
    d = dict(BASE, ckpt_every_steps=2, **kw)
    d.pop("ckpt_period_s")
    return d


# ------------------------------------------------------------------------------------------- hand-built traces
# CKPT-only on 4 groups, no jitter, no live scaling: a step is 10 s of compute and a 1 s all-reduce; restart 100 s.
MEMORY = _by_steps(n_steps=10, memory_copies=2, remote_every=3, memory_save_s=1.0, memory_load_s=2.0, load_s=50.0)


def test_memory_reload_after_a_holder_dies():
    """Checkpoints after steps 2 and 4 go to memory (1 s, copies on groups 0 and 2), the third would be remote. A
    failure at 50 s kills group 0 (a holder) during step 5; detected at 56 s, the wipe-out reloads step 4 from group
    2's memory: restart 100 + 2 s, 10 s lost. Then steps 5-6, the remote save (5 s), steps 7-8, a memory checkpoint
    (1 s), steps 9-10: 158 + 22 + 5 + 22 + 1 + 22 = 230 s."""
    got = _both(TimelineConfig("ckpt", 4, **MEMORY), _trace([50], 4, ranks=[0]))
    assert got["ttt"] == 230 * US
    assert (got["restart"], got["lost"], got["checkpoint"]) == (102 * US, 10 * US, 8 * US)
    assert (got["useful"], got["allreduce"], got["checkpoints"]) == (100 * US, 10 * US, 4)
    assert (got["memory_restarts"], got["remote_fallbacks"]) == (1, 0)


def test_remote_fallback_when_every_holder_died():
    """The same, but failures at 48 s and 50 s kill both holders (groups 2 and 0) in step 5: no copy survives, the
    job falls back to the last remote checkpoint -- the start -- losing the memory-kept steps 1-4 (44 s) and step 5's
    compute (10 s); restart 100 + 50 s (the remote load). Then 10 steps with checkpoints to memory, memory, remote,
    memory: 206 + 110 + 1 + 1 + 5 + 1 = 324 s."""
    got = _both(TimelineConfig("ckpt", 4, **MEMORY), _trace([48, 50], 4, ranks=[2, 0], n_live=[4, 3]))
    assert got["ttt"] == 324 * US
    assert (got["restart"], got["lost"], got["checkpoint"]) == (150 * US, 54 * US, 10 * US)
    assert (got["memory_restarts"], got["remote_fallbacks"]) == (0, 1)


def test_async_save_abandoned_by_a_wipeout_before_it_completes():
    """Asynchronous saves of 20 s, compute 1.5 times slower meanwhile. Save 1 runs 22-42 s: step 3's compute is
    slowed by 15 (1 - 1/1.5) = 5 s, step 4's (4 s of the save left) by 4/3 s. Save 2 starts at 50.333333 s; step 5's
    compute ends at 65.333333 s, where a failure at 60 s wipes out before save 2 completes: back to step 2 (steps 3-4
    and step 5's compute lost: 32 s), restart 100 s. Then steps 3-4, save 3 at 187.333333 s slowing steps 5 and 6 by 5
    and 4/3 s: the job ends at 215.666666 s."""
    cfg = TimelineConfig("ckpt", 4, **_by_steps(n_steps=6, ckpt_async=True, async_slowdown=1.5, save_s=20.0))
    got = _both(cfg, _trace([60], 4))
    assert got["ttt"] == 215_666_666
    assert got["checkpoint"] == got["async_slowdown"] == 5_000_000 + 1_333_333 + 5_000_000 + 5_000_000 + 1_333_333
    assert (got["lost"], got["restart"], got["useful"], got["allreduce"]) == (32 * US, 100 * US, 60 * US, 6 * US)


def test_async_save_completed_before_the_detection_counts():
    """Asynchronous saves of 5 s at half speed: save 2 runs 46.5-51.5 s; a failure at 50 s is detected at the end of
    step 5's compute (46.5 + 10 + 2.5 = 59 s), after the save completed: the job rolls back to step 4 only."""
    cfg = TimelineConfig("ckpt", 4, **_by_steps(n_steps=6, ckpt_async=True, async_slowdown=2.0))
    got = _both(cfg, _trace([50], 4))
    assert got["ttt"] == 181 * US
    assert (got["lost"], got["checkpoint"]) == (10 * US, 5 * US)


def test_restart_split_into_parts_and_memory_copies_zero_is_remote_only():
    """``restart_s + load_s`` is one restart of that length (jittered as one duration), so ``load_s`` moved into
    ``restart_s`` gives the same job, to the microsecond, jitter on; so does ``memory_copies=0`` under any
    ``load_s``."""
    rng = np.random.default_rng(5)
    for strategy in ("ckpt", "rep", "spare"):
        for _ in range(4):
            cfg = dataclasses.replace(_random_config(rng, strategy, "system"), jitter_sd=0.03)
            split = dataclasses.replace(cfg, restart_s=cfg.restart_s * 0.4, load_s=cfg.restart_s * 0.6)
            trace = _long_enough_trace(cfg, rng)
            a, b = _run(cfg, trace, jitter_seed=7), _run(split, trace, jitter_seed=7)
            assert abs(int(a[TK.R_RESTART]) - int(b[TK.R_RESTART])) <= a[TK.R_WIPEOUTS]  # rounding of the parts
            if a[TK.R_WIPEOUTS] == 0 or round(cfg.restart * US) == round(split.restart * US) + round(split.load_s * US):
                assert np.array_equal(a, b)


# ------------------------------------------------------------------------------------- the kernel and its twin
def _random_tiered(rng, strategy, source):
    """A random setting of every kernel option with random in-memory copies and asynchronous saves."""
    cfg = _random_config(rng, strategy, source)
    kw = dict(ckpt_failure="completes", load_s=float(rng.choice([0.0, rng.uniform(0, 200)])))
    m = int(rng.choice([0, 1, 2, 3]))
    if m:
        kw.update(memory_copies=min(m, cfg.n_groups), remote_every=int(rng.integers(1, 5)))
        if rng.random() < 0.7:
            kw["memory_save_s"] = float(rng.uniform(0.1, 5))
        if rng.random() < 0.5:
            kw["memory_load_s"] = float(rng.uniform(0, 50))
    if m == 0 or rng.random() < 0.5:
        kw.update(ckpt_async=True, async_slowdown=float(rng.uniform(1.0, 2.5)))
    return dataclasses.replace(cfg, **kw)


@pytest.mark.parametrize("source", ["system", "per_gpu", "domain"])
@pytest.mark.parametrize("strategy", ["ckpt", "rep", "spare"])
def test_kernel_equals_twin_with_tiered_checkpoints(strategy, source):
    """Random options with random in-memory copies, remote periods, asynchronous saves and load times: identical
    TTT, breakdown and counts to the microsecond, including reloads from memory, remote fallbacks and slowed steps."""
    rng = np.random.default_rng({"ckpt": 500, "rep": 600, "spare": 700}[strategy]
                                + {"system": 0, "per_gpu": 1, "domain": 2}[source])
    seen = set()
    for _ in range(14):
        cfg = _random_tiered(rng, strategy, source)
        got = _both(cfg, _long_enough_trace(cfg, rng))
        seen |= {k for k in NEW if got[k] > 0}
    assert {"memory_restarts", "async_slowdown"} <= seen


def test_kernel_equals_twin_with_tiered_checkpoints_and_repair():
    """Repaired groups rejoin at step boundaries (their memory, and a copy in it, was lost when they died)."""
    rng = np.random.default_rng(808)
    for strategy in ("rep", "spare"):
        for _ in range(6):
            cfg = _random_tiered(rng, strategy, "system")
            cfg = dataclasses.replace(cfg, repair=str(rng.choice(["fixed", "lognormal"])),
                                      repair_s=float(rng.uniform(20, 400)), rejoin_s=float(rng.uniform(0, 5)),
                                      repair_sd=0.5)
            _both(cfg, _long_enough_trace(cfg, rng))


@pytest.mark.parametrize("strategy, n, r", [("ckpt", 12, 1), ("rep", 12, 3), ("spare", 12, 3)])
def test_copies_that_survive_never_roll_back_past_the_last_memory_checkpoint(strategy, n, r):
    """Every group holds a copy (m = N), so a wipe-out, which kills only some groups, always finds one: with memory
    saves and loads priced like remote ones, the job is then exactly the remote-only job checkpointing at every
    memory checkpoint -- no restart ever rolls back further than the last in-memory checkpoint."""
    rng = np.random.default_rng(31 + r)
    for _ in range(6):
        base = dict(n_steps=int(rng.integers(60, 200)), mtbf_s=float(rng.uniform(30, 300)), save_s=7.0,
                    restart_s=80.0, load_s=30.0, compute_s=5.0, allreduce_s=1.0, jitter_sd=0.0,
                    ckpt_period_s=float(rng.uniform(30, 200)))
        remote = _Config(strategy, n, r=r, **base)
        memory = dataclasses.replace(remote, memory_copies=n, remote_every=int(rng.integers(2, 6)),
                                     memory_save_s=7.0, memory_load_s=30.0)
        trace = _long_enough_trace(remote, rng)
        a, b = _run(remote, trace), _run(memory, trace)
        assert b[TK.R_FALLBACKS] == 0 and b[TK.R_MEM_RESTARTS] == b[TK.R_WIPEOUTS]
        keep = [i for i in range(TK.N_RES) if i not in (TK.R_MEM_RESTARTS, TK.R_LOOPS)]
        assert np.array_equal(a[keep], b[keep])


def test_async_without_slowdown_equals_a_free_save():
    """With ``async_slowdown = 1`` a save costs no compute: every checkpoint costs nothing but may not be usable yet,
    so the job is never faster than one whose saves are free and usable at once (``save_s`` tiny), on the same
    failures -- and equal to it when no wipe-out hits a save in flight."""
    cfg = _Config("rep", 24, r=3, n_steps=300, mtbf_s=60.0, save_s=30.0, restart_s=200.0, compute_s=6.0,
                  allreduce_s=1.0, jitter_sd=0.0, ckpt_period_s=120.0, ckpt_async=True, async_slowdown=1.0)
    free = dataclasses.replace(cfg, ckpt_async=False, async_slowdown=1.2, save_s=1e-6)
    rng = np.random.default_rng(3)
    for _ in range(10):
        trace = _long_enough_trace(cfg, rng)
        a, b = _run(cfg, trace), _run(free, trace)
        assert a[TK.R_ASYNC_SLOW] == 0
        assert a[TK.R_TTT] >= b[TK.R_TTT] - b[TK.R_CKPT]


# --------------------------------------------------------------------------------------------------- the law
def test_memory_checkpoints_pay_off_statistically():
    """Cheap in-memory checkpoints at a short period against remote-only ones at theirs (each at its theory
    period), on common failure traces: the paired difference of TTT/T0 is negative far beyond its sampling error
    (CKPT-only, 600 groups, the paper's failure process)."""
    base = dict(n_steps=1500, restart_s=1800.0, save_s=60.0, load_s=600.0)
    remote = _Config("ckpt", 600, **base)
    memory = dataclasses.replace(remote, memory_copies=2, remote_every=10)
    assert theory_ckpt_period_s(memory) < theory_ckpt_period_s(remote)
    a = simulate_ttt(remote, 30, rng=11).values("ttt_over_t0")
    b = simulate_ttt(memory, 30, rng=11).values("ttt_over_t0")
    d = b - a
    assert d.mean() + 5 * d.std(ddof=1) / np.sqrt(d.size) < 0


# ----------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kw, match", [
    (dict(memory_save_s=1.0), "memory_save_s.*memory_copies"),
    (dict(remote_every=3), "remote_every.*memory_copies"),
    (dict(async_slowdown=2.0), "async_slowdown.*ckpt_async"),
    (dict(ckpt_async=True, async_slowdown=0.5), "async_slowdown.*>= 1"),
    (dict(memory_copies=-1), "memory_copies"),
    (dict(memory_copies=13), "memory_copies"),
    (dict(memory_copies=2, remote_every=0), "remote_every"),
    (dict(memory_copies=2, memory_save_s=0.0), "memory_save_s"),
    (dict(memory_copies=2, ckpt_failure="lost"), "ckpt_failure='completes'"),
    (dict(ckpt_async=True, final_checkpoint=True), "final_checkpoint=False"),
    (dict(ckpt_async=True, ckpt_policy="hazard"), "ckpt_policy='periodic'"),
    (dict(load_s=-1.0), "load_s"),
    (dict(memory_copies="2"), "memory_copies"),
])
def test_bad_tiered_options_name_the_parameter(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        _Config("rep", 12, r=3, **kw)


def test_theory_period_follows_the_checkpoint_kind():
    cfg = _Config("ckpt", 600, save_s=60.0, restart_s=3000.0, load_s=600.0)
    assert theory_ckpt_period_s(cfg) == pytest.approx(
        theory_ckpt_period_s(dataclasses.replace(cfg, restart_s=3600.0, load_s=0.0)))
    mem = dataclasses.replace(cfg, memory_copies=1)
    assert mem.memory_save == 6.0 and mem.memory_load == 6.0
    # k = 1: every checkpoint is a blocking remote save, only the load is faster
    assert theory_ckpt_period_s(mem) == pytest.approx(
        theory_ckpt_period_s(dataclasses.replace(cfg, restart_s=3006.0, load_s=0.0)))
    # k = 5 with background saves: four memory saves (6 s), one copy (6 s) and 60 (1 - 1/1.5) = 20 s of slowdown
    tiered = dataclasses.replace(mem, remote_every=5, ckpt_async=True, async_slowdown=1.5)
    assert theory_ckpt_period_s(tiered) == pytest.approx(
        theory_ckpt_period_s(dataclasses.replace(cfg, save_s=10.0, restart_s=3006.0, load_s=0.0)))
    asy = dataclasses.replace(cfg, ckpt_async=True, async_slowdown=1.0)
    assert theory_ckpt_period_s(asy) == 60.0  # no blocking cost: one save at a time


def test_make_trace_unchanged_by_checkpoint_options():
    """The options change the checkpoints, not the failures: the same replication draws the same trace."""
    cfg = _Config("spare", 60, r=4)
    other = dataclasses.replace(cfg, memory_copies=3, ckpt_async=True)
    a = make_trace(cfg, np.random.default_rng(1), 100)
    b = make_trace(other, np.random.default_rng(1), 100)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("strategy, r", [("ckpt", 1), ("rep", 3), ("spare", 3)])
def test_memory_only_checkpoints_are_remote_checkpoints_with_memory_costs(strategy, r):
    """With a copy on every group and no remote save within the job (``remote_every`` beyond its checkpoints), every
    checkpoint is a memory save and every restart a reload from memory: exactly the remote-only job whose save and
    load cost what memory's do, jitter on."""
    rng = np.random.default_rng(71 + r)
    for _ in range(5):
        base = dict(n_steps=int(rng.integers(60, 200)), mtbf_s=float(rng.uniform(30, 300)), restart_s=80.0,
                    compute_s=5.0, allreduce_s=1.0, jitter_sd=0.04, ckpt_period_s=float(rng.uniform(30, 200)))
        memory = _Config(strategy, 12, r=r, save_s=40.0, load_s=25.0, memory_copies=12, remote_every=10**9,
                         memory_save_s=3.0, memory_load_s=7.0, **base)
        remote = _Config(strategy, 12, r=r, save_s=3.0, load_s=7.0, **base)
        trace = _long_enough_trace(remote, rng)
        a, b = _run(remote, trace, jitter_seed=5), _run(memory, trace, jitter_seed=5)
        assert b[TK.R_FALLBACKS] == 0 and b[TK.R_MEM_RESTARTS] == b[TK.R_WIPEOUTS]
        keep = [i for i in range(TK.N_RES) if i not in (TK.R_MEM_RESTARTS, TK.R_LOOPS)]
        assert np.array_equal(a[keep], b[keep])


# ------------------------------------------------------------------ the steps an asynchronous save slows, at once
def _long_async(rng, strategy, source):
    """:func:`_random_tiered` with an asynchronous save long enough for several steps to run under it (2-20
    steps' compute), its slowdown 1 (a quarter of the time) or 1-2.5, most often no jitter (with jitter every
    step is explicit) and often a cap that binds."""
    cfg = _random_tiered(rng, strategy, source)
    return dataclasses.replace(cfg, ckpt_async=True, async_slowdown=1.0 if rng.random() < 0.25 else float(
                                   rng.uniform(1.0, 2.5)),
                               save_s=float(rng.uniform(2, 20)) * cfg.compute_s,
                               jitter_sd=float(rng.choice([0.0, 0.0, 0.0, 0.05])),
                               max_wall_factor=float(rng.choice([1.05, 1.3, 100.0])))


@pytest.mark.parametrize("strategy", ["ckpt", "rep", "spare"])
def test_async_stretches_give_the_loops_numbers(strategy, monkeypatch):
    """Random options with long asynchronous saves: the kernel with the slowed steps run at once
    (``job_steps.async_stretch``) gives every result slot of the loop that runs them one by one (``P_NO_CYCLES =
    1``), ``R_LOOPS`` included, and without jitter both equal the SimPy twin. System-level failures: the unit
    clocks' settings of these tests fail too often for a save to see many steps (the source only gives the
    stretch its next failure)."""
    rng = np.random.default_rng({"ckpt": 41, "rep": 42, "spare": 43}[strategy])
    slowed = 0
    for _ in range(10):
        cfg = _long_async(rng, strategy, "system")
        trace = _long_enough_trace(cfg, rng)
        at_once, loop = _with_and_without_cycles(cfg, trace, monkeypatch)
        assert at_once.tolist() == loop.tolist()
        slowed += at_once[TK.R_ASYNC_SLOW] > 0
        if cfg.jitter_sd == 0.0:
            _both(cfg, trace)
    assert slowed >= 5


@pytest.mark.parametrize("source", ["system", "domain"])
@pytest.mark.parametrize("strategy", ["ckpt", "rep", "spare"])
def test_memory_cycles_at_once_give_the_loops_numbers(strategy, source, monkeypatch):
    """Many failure-free checkpoint cycles between failures with in-memory copies (2-6 checkpoints per remote one,
    remote saves blocking or in the background), under the random options of the cycles' own test: the kernel
    with the memory-only cycles at once (``job_steps.ckpt_cycles``) gives every result slot of the loop that runs
    one cycle per iteration (``P_NO_CYCLES = 1``), ``R_LOOPS`` included, and without jitter both equal the SimPy
    twin. Reloads from memory happen under every source; remote fallbacks (every copy lost) under failure domains,
    which kill several groups at once: the held work then goes, which a cycle that kept it instead would not."""
    rng = np.random.default_rng({"ckpt": 61, "rep": 62, "spare": 63}[strategy] + (0 if source == "system" else 7))
    seen = set()
    for _ in range(10):
        cfg = _cycles_config(rng, strategy, source)
        # the options tiered checkpoints are modelled with (TimelineConfig): blocking saves that complete, detection
        # at the all-reduce, no final checkpoint
        kw = dict(ckpt_failure="completes", detection="allreduce", final_checkpoint=False, rejoin="step",
                  memory_copies=int(rng.integers(1, 4)), remote_every=int(rng.integers(2, 7)),
                  memory_save_s=float(rng.uniform(0.1, 5)), memory_load_s=float(rng.uniform(0, 50)),
                  load_s=float(rng.choice([0.0, rng.uniform(0, 200)])))
        if rng.random() < 0.5:
            kw.update(ckpt_async=True, async_slowdown=float(rng.uniform(1.0, 2.5)))
        cfg = dataclasses.replace(cfg, **kw)
        trace = _long_enough_trace(cfg, rng)
        at_once, loop = _with_and_without_cycles(cfg, trace, monkeypatch)
        assert at_once.tolist() == loop.tolist()
        if cfg.jitter_sd == 0.0:
            got = _both(cfg, trace)
            seen |= {k for k in ("memory_restarts", "remote_fallbacks", "async_slowdown") if got[k] > 0}
    assert "memory_restarts" in seen and (source != "domain" or "remote_fallbacks" in seen)


def _in_flight(save_s=60.0, slowdown=1.5, **kw):
    """CKPT-only, 10 s of compute and a 1 s all-reduce per step, an asynchronous save of ``save_s`` just started
    (``J_PERSIST_END``) at t = 0: a slowed step's compute is ``f c`` = 15 s, of which ``E = 5`` s extra, so the
    slowed steps are 16 s apart."""
    cfg = TimelineConfig("ckpt", 12, **{**BASE, "n_steps": 40, "ckpt_period_s": 1000.0, "ckpt_async": True,
                                        "async_slowdown": slowdown, "save_s": save_s, **kw})
    return _cycle_start(cfg, J_PERSIST_END=round(save_s * US))


@pytest.mark.parametrize("kw, t_f_s, m", [
    ({}, 1e9, 3),                                   # starts at 0, 16, 32 s (60 - t >= 15); at 48 s only 12 s left
    ({}, 47, 2),                                    # the second step's compute ends at 31 s, the third's at 47 s
    ({}, 47.000001, 3),                             # ... strictly before the failure
    ({"save_s": 75.0}, 1e9, 4),                     # 75 - 48 = 27 >= 15: a fourth
    ({"ckpt_period_s": 20.0}, 1e9, 2),              # a checkpoint is due at 20 s: after the second step (32 s)
    ({"ckpt_every_steps": 1, "ckpt_period_s": None}, 1e9, 1),  # due after every step
    ({"n_steps": 2}, 1e9, 2),                       # the steps left
    ({"save_s": 14.0}, 1e9, 0),                     # 14 < f c: the first step is slowed only in part (explicit)
    ({"jitter_sd": 0.05}, 1e9, 0),                  # drawn durations: explicit steps
    ({"slowdown": 1.0}, 1e9, 5),                    # f = 1: E = 0, steps 11 s apart, 60 - t >= 10: 0, 11, ..., 44
    ({"cap_us": 16 * US}, 1e9, 2),                  # the steps that start at or before the cap: 0 and 16 s
    ({"cap_us": 16 * US - 1}, 1e9, 1),
])
def test_async_stretch_counts_the_slowed_steps(kw, t_f_s, m):
    """``job_steps.async_stretch`` on its own: the steps the save slows throughout, that end their compute before the
    failure, cross no due checkpoint and are not past the steps left; each adds what an explicit step adds."""
    cap = kw.pop("cap_us", None)
    P, PF, job, Q = _in_flight(**kw)
    if cap is not None:
        P[TK.P_CAP_US] = cap
    assert job_steps.async_stretch(np.int64(round(t_f_s * US)), P, PF, job, Q, None) == m
    f = kw.get("slowdown", 1.5)
    extra = round(10 * f * (f - 1) / f * US)
    d = 11 * US + extra
    J, res = job.J, job.res
    assert J[TK.J_T] == m * d and J[TK.J_STEPS_DONE] == res[TK.R_STEPS_RUN] == m
    assert res[TK.R_CKPT] == res[TK.R_ASYNC_SLOW] == m * extra and res[TK.R_LOOPS] == max(m - 1, 0)
    assert job.W[TK.W_USEFUL] == m * 10 * US and job.W[TK.W_ALLREDUCE] == m * US
    assert J[TK.J_PERSIST_END] == round(kw.get("save_s", 60.0) * US)  # still in flight
    P, PF, job, Q = _in_flight()
    assert job_steps.async_stretch(np.int64(10**15), P, PF, job, Q, TK.EXTENDED) == 3  # the extended variant too
    # none with a death pending, no save in flight, repair (groups rejoin at step boundaries) or a dynamic policy
    for state in ({"Q_N_PEND": 1}, {"J_PERSIST_END": 0}, {"P_REPAIR": TK.REPAIR_FIXED},
                  {"P_CKPT_POLICY": TK.POLICY_PERIODIC + 1}):
        P, PF, job, Q = _in_flight()
        for name, value in state.items():
            {"Q": Q, "J": job.J, "P": P}[name[0]][getattr(TK, name)] = value
        assert job_steps.async_stretch(np.int64(10**15), P, PF, job, Q, TK.EXTENDED) == 0
