"""The timeline's kernel options (the modelling choices the paper leaves open): every value pinned on a hand-built
trace with exact expected microseconds, the kernel equal to the SimPy twin (which implements each option from its
text) on random traces under random combinations of all of them, Rep on replica sets when r does not divide N, bad
values rejected naming the option, and every option a sweep parameter and a command-line flag.

Hand-built traces use the system process without live scaling, so the failure clock always runs at N groups: a
failure at wall time t after the previous one at t' is the gap ``(t - t') x N`` group-microseconds. Times in the
comments are seconds; ``T_comp = 10, T_a = 1, T_r = 100, T_s = 5, T_shrink = 0.5, T_rectlr = 0.25`` unless said.
"""

import dataclasses

import numba
import numpy as np
import pytest

import spare_mc as sm
from spare_mc._kernels import job_steps
from spare_mc._kernels import timeline as TK
from spare_mc.testing import timeline_simpy
from spare_mc.ttt.config import TimelineConfig as _Config
from spare_mc.ttt.config import applicable
from spare_mc.ttt import run as ttt_run
from spare_mc.ttt.run import _kernel_params, _run_us, make_trace, needs_extended, run_timeline, simulate_ttt


def TimelineConfig(strategy, n_groups, **kw):
    """These tests share one setting (BASE, random options) across strategies and failure models: each takes the
    options it has (live scaling is the system process's; unit clocks only hit live groups anyway)."""
    if kw.get("failures") is not None:
        kw.pop("live_scaling", None)
    return _Config(strategy, n_groups, **applicable(kw, strategy))

US = 1_000_000
NEVER = 1 << 60
KEYS = {"ttt": TK.R_TTT, "useful": TK.R_USEFUL, "redundant": TK.R_REDUNDANT, "patch": TK.R_PATCH,
        "allreduce": TK.R_ALLREDUCE, "rectlr_shrink": TK.R_RECTLR, "checkpoint": TK.R_CKPT, "restart": TK.R_RESTART,
        "lost": TK.R_LOST, "failures": TK.R_FAILURES, "absorbed": TK.R_ABSORBED, "wipeouts": TK.R_WIPEOUTS,
        "checkpoints": TK.R_CHECKPOINTS, "checkpoints_lost": TK.R_CKPTS_LOST, "detections": TK.R_DETECTIONS,
        "steps_run": TK.R_STEPS_RUN, "steps_done": TK.R_STEPS_DONE, "rejoins": TK.R_REJOINS}
TIMES = ("ttt", "useful", "redundant", "patch", "allreduce", "rectlr_shrink", "checkpoint", "restart", "lost")
STATUS = ["ok", "capped", "trace"]
BASE = dict(compute_s=10.0, allreduce_s=1.0, restart_s=100.0, save_s=5.0, shrink_s=0.5, rectlr_s=0.25,
            jitter_sd=0.0, live_scaling=False, ckpt_period_s=1e6, n_steps=10)


def _trace(times_s, n, ranks=None, n_live=None):
    """System trace (no live scaling: the clock runs at N): failures at wall times ``times_s``, then none. The
    ``i``-th kills the live group of rank ``ranks[i]`` among ``n_live[i]`` (default: the lowest live group)."""
    t = [round(x * US) for x in times_s]
    gaps = [(b - a) * n for a, b in zip([0] + t[:-1], t)] + [NEVER]
    ranks = ranks or [0] * len(t)
    n_live = n_live or [n] * len(t)
    vic = [-(-(k << 32) // m) for k, m in zip(ranks, n_live)] + [0]  # (v * n_live) >> 32 == rank
    return np.array(gaps, dtype=np.int64), np.array(vic, dtype=np.int64)


def _run(cfg, trace, holders=None, jitter_seed=0):
    if holders is None and cfg.strategy == "spare":
        holders = cfg.layout_object().holders
    return _run_us(cfg, holders, *trace, jitter_rng=np.random.default_rng(jitter_seed),
                   repair_rng=np.random.default_rng(99))


def _agree(cfg, trace, holders=None, keys=KEYS):
    """Kernel and twin on one trace, jitter off: identical to the microsecond in every total of ``keys`` (twin key
    -> kernel slot). Returns the kernel's totals."""
    res = _run(cfg, trace, holders)
    twin = timeline_simpy(cfg, trace, layout=None if holders is None else sm.Layout(holders, kind="random"),
                          repair_rng=np.random.default_rng(99))
    assert STATUS[res[TK.R_STATUS]] == twin["status"] != "trace"
    mine = {k: int(res[i]) for k, i in keys.items()}
    assert mine == {k: twin[k] for k in keys}
    assert sum(mine[k] for k in TIMES[1:]) == mine["ttt"]  # every microsecond in one bucket
    return mine


def _expect(got, **want_s):
    """``got`` (microseconds and counts) has the expected values (times given in seconds)."""
    for k, v in want_s.items():
        assert got[k] == (round(v * US) if k in TIMES else v), (k, got[k], v)


# ---------------------------------------------------------------------------------------- 1. rep_masked_cost
@pytest.mark.parametrize("cost, extra, ttt, rectlr, patch", [
    ("shrink", {}, 310.5, 0.5, 0.0),                         # 10 steps of 3 x 10 + 1 = 310, + T_shrink
    ("resync", {"rep_resync_s": 2.0}, 312.5, 2.5, 0.0),      # + T_shrink + rep_resync_s
    ("redo_step", {}, 340.5, 0.5, 30.0),                     # + T_shrink + a fresh step compute 3 x 10 (patch)
])
def test_rep_masked_cost(cost, extra, ttt, rectlr, patch):
    """Rep N = 12, r = 3 (4 sets of 3); one failure at 40 s (step 2 computes 31-61) kills group 0: masked at the
    all-reduce at 61 s."""
    cfg = TimelineConfig("rep", 12, r=3, rep_masked_cost=cost, **extra, **BASE)
    got = _agree(cfg, _trace([40], 12))
    _expect(got, ttt=ttt, useful=100, redundant=200, allreduce=10, rectlr_shrink=rectlr, patch=patch, lost=0,
            failures=1, detections=1, wipeouts=0)


def test_rep_redo_step_failure_during_the_recompute_is_detected_at_the_next_all_reduce():
    """redo_step: step 2 = compute 31-61, shrink 61-61.5, recompute 61.5-91.5, all-reduce -92.5. A failure at 71.5 s
    (during the recompute) kills group 3 (rank 2 of the 11 live): detected at step 3's all-reduce (92.5 + 30 =
    122.5), masked again: TTT = 310 + 2 x (0.5 + 30) = 371."""
    cfg = TimelineConfig("rep", 12, r=3, rep_masked_cost="redo_step", **BASE)
    got = _agree(cfg, _trace([40, 71.5], 12, ranks=[0, 2], n_live=[12, 11]))
    _expect(got, ttt=371, patch=60, rectlr_shrink=1.0, failures=2, detections=2, wipeouts=0)


# ---------------------------------------------------------------------------- 2. masked_detect_s and 3. patch
@pytest.mark.parametrize("patch_cost, detect, ttt, patch, rectlr", [
    ("per_shard", 0.0, 200.75, 10.0, 0.75),   # one shard of one survivor: 1 x T_comp
    ("none", 0.0, 190.75, 0.0, 0.75),
    ("whole_step", 0.0, 210.75, 20.0, 0.75),  # S* x T_comp = 2 x 10
    ("per_shard", 3.0, 203.75, 10.0, 3.75),   # + the detection cost, booked with ReCtlr and the shrink
])
def test_spare_patch_cost_and_masked_detection_cost(patch_cost, detect, ttt, patch, rectlr):
    """SPARe cyclic N = 12, r = 2: S = 1 (the top layer is a perfect assignment), a step is 10 + 1. A failure at
    15 s kills group 0 (types 0 and 1): at the all-reduce at 21 s ReCtlr raises S to c(1) = ceil(12 / 11) = 2, and
    type 0 (on top of group 0 only) is patched by group 11, one shard. Steps 3-10 run with S = 2 (21 s):
    TTT = 11 + 11 + 8 x 21 + 0.25 + 0.5 + patch + detect = 190.75 + patch + detect."""
    step = sm.ReCtlr(sm.cyclic(12, 2)).fail([0])
    assert (step.s_star, step.patch) == (2, 1)
    cfg = TimelineConfig("spare", 12, r=2, patch_cost=patch_cost, masked_detect_s=detect, **BASE)
    got = _agree(cfg, _trace([15], 12))
    _expect(got, ttt=ttt, patch=patch, rectlr_shrink=rectlr, useful=100, redundant=80, allreduce=10, detections=1)


def test_masked_detection_cost_does_not_apply_to_wipe_outs():
    """CKPT-only: the failure at 15 s wipes out at 21 s (steps 1 and 2's compute lost), restart to 121 s, then 10
    steps: 231 s whatever masked_detect_s; Rep pays it at masked detections only (a set wiped: none)."""
    got = _agree(TimelineConfig("ckpt", 12, masked_detect_s=3.0, **BASE), _trace([15], 12))
    _expect(got, ttt=231, lost=21, restart=100, rectlr_shrink=0)
    # Rep r = 3: groups 0, 1, 2 die during step 1's compute (0-30): the all-reduce at 30 s sees set 0 wiped
    got = _agree(TimelineConfig("rep", 12, r=3, masked_detect_s=3.0, **BASE), _trace([1, 2, 3], 12))
    _expect(got, ttt=30 + 100 + 310, lost=30, rectlr_shrink=0, wipeouts=1, detections=1)


# ------------------------------------------------------------------------------------ 4. restart_failures
def test_stay_dead_ckpt_only_second_restart():
    """CKPT-only; failure 1 at 15 s wipes out at 21 s, the restart runs 21-121; failure 2 at 50 s.
    absorbed: it is absorbed, TTT = 121 + 10 x 11 = 231.
    stay_dead: it kills a group that stays dead; the first step after the restart (compute 121-131) detects it: a
    second wipe-out (its compute lost), restart 131-231, TTT = 231 + 110 = 341."""
    trace = _trace([15, 50], 12)
    got = _agree(TimelineConfig("ckpt", 12, **BASE), trace)
    _expect(got, ttt=231, lost=21, restart=100, failures=1, absorbed=1, wipeouts=1, steps_run=12)
    got = _agree(TimelineConfig("ckpt", 12, restart_failures="stay_dead", **BASE), trace)
    _expect(got, ttt=341, lost=21 + 10, restart=200, failures=2, absorbed=0, wipeouts=2, detections=2, steps_run=13)


def test_stay_dead_rep_masks_the_death_after_the_restart():
    """Rep N = 12, r = 3, n_steps = 5, with live scaling. Failures at 5, 10, 20 s kill groups 0, 1, 2 (set 0):
    wipe-out at 30 s, restart 30-130. Failure 4 at 70 s (gap: 9 live groups x 10 s from 20 to 30, then 12 x 40 s)
    and failure 5 (gap 11 x 10 s: at 80 s with 11 live under stay_dead) kill groups 0 and 1 under stay_dead; the
    all-reduce of the first step after the restart (130-160) detects them: set 0 keeps group 2, masked (T_shrink).
    TTT = 130 + 5 x 31 + 0.5 under stay_dead, 130 + 155 with both absorbed."""
    gaps = np.array([g * US for g in (5 * 12, 5 * 11, 10 * 10, 9 * 10 + 12 * 40, 11 * 10)] + [NEVER], dtype=np.int64)
    trace = (gaps, np.zeros(6, dtype=np.int64))
    base = {**BASE, "live_scaling": True, "n_steps": 5}
    got = _agree(TimelineConfig("rep", 12, r=3, **base), trace)
    _expect(got, ttt=285, lost=30, failures=3, absorbed=2, wipeouts=1, detections=1)
    got = _agree(TimelineConfig("rep", 12, r=3, restart_failures="stay_dead", **base), trace)
    _expect(got, ttt=285.5, lost=30, rectlr_shrink=0.5, failures=5, absorbed=0, wipeouts=1, detections=2)


@pytest.mark.parametrize("policy, restart_failures, redraw5, ttt, wipeouts, failures, absorbed", [
    # unit 1 (50 s) is absorbed; every unit renewed at 121: TTT = 121 + 110
    ("renew", "absorbed", 1e7, 231, 1, 1, 1),
    # unit 1 kills group 1 during the restart: wipe-out at 131, restart to 231, then 110
    ("renew", "stay_dead", 1e7, 341, 2, 2, 0),
    # the same, and the 6th lifetime drawn (unit 2's at 121: units 0, 2, 3 in order, unit 1 stays idle) is 30 s:
    # unit 2 fires at 151, during the second restart: a third wipe-out at 241, restart to 341, then 110
    ("renew", "stay_dead", 30.0, 451, 3, 3, 0),
    # unit 2 keeps its clock (200 s): it fires during step 8 after the restart (compute 198-208): wipe-out at 208
    # (7 steps and a compute lost), restart 208-308, then 110
    ("keep", "absorbed", 1e7, 418, 2, 2, 1),
    # unit 1 kills group 1 during restart 1 (wipe-out at 131), unit 2 (kept, 200 s) kills group 2 during restart 2
    # (131-231): wipe-out at 241, restart 241-341, then 110
    ("keep", "stay_dead", 1e7, 451, 3, 3, 0),
])
def test_stay_dead_unit_clocks(policy, restart_failures, redraw5, ttt, wipeouts, failures, absorbed):
    """CKPT-only N = 4 with per-GPU clocks (one unit per group): first lifetimes 15, 50, 200 s and never; unit 0
    wipes out at 21 s, the restart runs 21-121. Under stay_dead, a unit that fired before a restart is idle through
    it and redrawn at its end, one that fires during it stays idle until the next restart."""
    topo = sm.Topology(32, 4, gpus_per_node=8)
    cfg = TimelineConfig("ckpt", 4, failures=sm.PerGPU(1000.0, 1.0, policy), topology=topo,
                         restart_failures=restart_failures, unit_sampler="per_unit", **BASE)
    scale = cfg.unit_clocks()[0][0]
    lifetimes = [15, 50, 200, 1e7, 1e7, redraw5] + [1e7] * 40
    got = _agree(cfg, (np.array([t * US / scale for t in lifetimes]),))
    _expect(got, ttt=ttt, wipeouts=wipeouts, failures=failures, absorbed=absorbed, restart=100 * wipeouts)


def test_an_arrival_with_no_live_group_hits_nothing():
    """Without live scaling the clock runs at N even when every group is dead: CKPT-only N = 2, three failures
    during step 1's compute (0-10 s) kill groups 0 and 1, the third hits nothing; wipe-out at 10 s, restart to 110,
    then 10 steps: 220. (Before, the third drew a victim from an empty set.)"""
    got = _agree(TimelineConfig("ckpt", 2, **BASE), _trace([1, 2, 3], 2))
    _expect(got, ttt=220, failures=2, absorbed=0, wipeouts=1, lost=10)
    # the same under stay_dead, with the third failure during the restart: it kills a group (all are back)
    got = _agree(TimelineConfig("ckpt", 2, restart_failures="stay_dead", **BASE), _trace([1, 2, 50], 2))
    _expect(got, ttt=330, failures=3, wipeouts=2, lost=20)


# ------------------------------------------------------------------------------------- 5. ckpt_every_steps
def test_checkpoints_every_k_steps():
    """k = 3, no period: checkpoints after steps 3, 6 and 9 (none after the last): TTT = 10 x 11 + 3 x 5 = 125.
    A failure at 80 s (step 7 computes 76-86; checkpoint 2 was 71-76) wipes out at 86 s: rollback to step 6,
    restart to 186; the next checkpoint is 3 steps after the restart (after step 9, at 219): TTT = 235."""
    base = {k: v for k, v in BASE.items() if k != "ckpt_period_s"}
    cfg = TimelineConfig("ckpt", 12, ckpt_every_steps=3, **base)
    _expect(_agree(cfg, _trace([], 12)), ttt=125, checkpoint=15, checkpoints=3)
    _expect(_agree(cfg, _trace([80], 12)), ttt=235, checkpoint=15, checkpoints=3, lost=10, restart=100)


@pytest.mark.parametrize("jitter_sd", [0.0, 0.05])
def test_checkpoints_every_k_steps_are_exact_when_stretches_are_skipped(jitter_sd):
    """1000 failure-free steps, k = 7: exactly floor(999 / 7) = 142 checkpoints with and without jitter, although
    the kernel jumps over the steps between them (a few loop iterations per checkpoint)."""
    cfg = TimelineConfig("spare", 24, r=3, n_steps=1000, ckpt_every_steps=7, jitter_sd=jitter_sd, compute_s=8.0,
                         allreduce_s=1.0, save_s=5.0)
    for seed in range(5):
        res = _run(cfg, _trace([], 24), jitter_seed=seed)
        assert res[TK.R_CHECKPOINTS] == 142 and res[TK.R_STEPS_DONE] == 1000
        assert res[TK.R_LOOPS] <= (2 if jitter_sd == 0 else 6) * 143
        if jitter_sd == 0:
            assert res[TK.R_TTT] == 1000 * 9 * US + 142 * 5 * US
    assert timeline_simpy(cfg, _trace([], 24), jitter_rng=np.random.default_rng(0))["checkpoints"] == 142


# --------------------------------------------------------------------------------------- 6. ckpt_failure
@pytest.mark.parametrize("t_fail, mode, ttt, lost, checkpoints, n_lost", [
    # completes: rollback to the checkpoint after step 3 (33-38); lost = step 4's compute; restart 48-148; 7 steps
    # with checkpoints after steps 6 (181-186) and 9 (219-224): 235
    (35, "completes", 235, 10, 3, 0),
    # lost: the checkpoint is unusable, the wipe-out rolls back past it to step 0: lost = 3 x 11 + 10 = 43;
    # restart 48-148; 10 steps with checkpoints after steps 3, 6, 9: 148 + 110 + 15 = 273
    (35, "lost", 273, 43, 4, 1),
    (33, "lost", 273, 43, 4, 1),      # an arrival at the save's start is during it
    (38, "lost", 235, 10, 3, 0),      # one at its end is not
])
def test_checkpoint_lost_to_a_failure_during_its_save(t_fail, mode, ttt, lost, checkpoints, n_lost):
    """CKPT-only, T_c = 30 s: the first checkpoint is written 33-38 s; the failure is detected at step 4's all-reduce
    (compute 38-48) and wipes out."""
    cfg = TimelineConfig("ckpt", 12, ckpt_failure=mode, **{**BASE, "ckpt_period_s": 30.0})
    got = _agree(cfg, _trace([t_fail], 12))
    _expect(got, ttt=ttt, lost=lost, checkpoints=checkpoints, checkpoints_lost=n_lost, wipeouts=1,
            checkpoint=5 * checkpoints)


@pytest.mark.parametrize("mode, ttt, lost, checkpoints", [
    # the checkpoint after step 2 (62-67) holds: the wipe-out at 128.5 loses step 3 (31.5 with the shrink) and
    # step 4's compute (30): 61.5; restart 128.5-228.5, steps 3-6 with one checkpoint (after step 4): 357.5
    ("completes", 357.5, 61.5, 2),
    # it is lost (a failure at 64 s): the masked failure does not stop the job, the next checkpoint is due T_c
    # after its end (127 s) but the wipe-out comes first and rolls back to step 0: lost = 31 + 31 + 31.5 + 30;
    # restart 128.5-228.5, 6 steps with checkpoints after steps 2 and 4: 424.5
    ("lost", 424.5, 123.5, 3),
])
def test_lost_checkpoint_keeps_the_unsaved_work_pending(mode, ttt, lost, checkpoints):
    """Rep N = 12, r = 3, T_c = 60 s, 6 steps of 31 s: failures at 64 s (group 0, during the first save), 100 and
    101 s (groups 1 and 2, step 4's compute 98.5-128.5: set 0 wiped)."""
    cfg = TimelineConfig("rep", 12, r=3, ckpt_failure=mode, **{**BASE, "ckpt_period_s": 60.0, "n_steps": 6})
    got = _agree(cfg, _trace([64, 100, 101], 12))
    _expect(got, ttt=ttt, lost=lost, checkpoints=checkpoints, checkpoints_lost=checkpoints - 2, restart=100,
            useful=60, redundant=120, allreduce=6, rectlr_shrink=0, wipeouts=1, detections=2, failures=3)


def test_lost_checkpoint_schedule_continues_from_its_end():
    """Rep, T_c = 60 s, one masked failure at 64 s during the first save (62-67): the next checkpoint is still due
    at 67 + 60 = 127 (after step 4, 129.5-134.5, the shrink having added 0.5), then 196.5 and 263.5: the same 4
    checkpoints as when it completes, TTT = 10 x 31 + 4 x 5 + 0.5."""
    for mode, n_lost in (("completes", 0), ("lost", 1)):
        cfg = TimelineConfig("rep", 12, r=3, ckpt_failure=mode, **{**BASE, "ckpt_period_s": 60.0})
        _expect(_agree(cfg, _trace([64], 12)), ttt=330.5, checkpoints=4, checkpoints_lost=n_lost)
    run = run_timeline(cfg, np.random.SeedSequence(0), trace=_trace([64], 12))
    assert run.checkpoints_lost == 1 and run.checkpoints == 4


# ------------------------------------------------------------------------------- 7. Rep with r not dividing N
def test_uneven_rep_step_time():
    """N = 200, r = 3: 66 replica sets (two of 4, 64 of 3); a step computes round(200 x 64 s / 66) and one layer
    of it is useful."""
    cfg = TimelineConfig("rep", 200, r=3, n_steps=100, jitter_sd=0.0, ckpt_period_s=1e6)
    c = round(200 * 64 * US / 66)
    assert c == 193_939_394 and cfg.rep_step_compute_us == c
    got = _agree(cfg, _trace([], 200))
    _expect(got, failures=0, checkpoints=0)
    assert got["ttt"] == 100 * (c + 2 * US)
    assert got["useful"] == 100 * 64 * US and got["redundant"] == 100 * (c - 64 * US)
    run = simulate_ttt(TimelineConfig("rep", 200, r=3, n_steps=100, jitter_sd=0.0, mtbf_s=1e12), 1, rng=0).runs[0]
    assert run.raw_us[TK.R_TTT] == 100 * (c + 2 * US) + run.checkpoints * 60 * US
    assert run.mean_s == 200 / 66
    # the per-replica all-reduce: N / n_sets times T_a
    per_rep = TimelineConfig("rep", 200, r=3, rep_allreduce="per_replica", allreduce_s=2.0)
    assert per_rep.step_allreduce == 200 / 66 * 2.0
    assert TimelineConfig("rep", 201, r=3, rep_allreduce="per_replica", allreduce_s=2.0).step_allreduce == 6.0
    # the theory: the replica sets' law and S = N / n_sets
    assert sm.ttt.period.mean_wipeout_index(cfg) == sm.exact_wipeout("block", 200, 3).mean
    assert sm.theory_ttt(cfg).S == 200 / 66


def test_uneven_rep_wipes_out_only_when_a_whole_set_is_dead():
    """N = 200, r = 3, shrink free: set 0 = groups 0-3 survives the deaths of 0, 1, 2 (three masked detections,
    one per step) and is wiped out by the death of 3 at step 4; a set of 3 (8, 9, 10) by its third death."""
    c = round(200 * 64 * US / 66)
    d = c + 2 * US
    base = dict(n_steps=10, jitter_sd=0.0, ckpt_period_s=1e6, shrink_s=0.0, live_scaling=False)
    cfg = TimelineConfig("rep", 200, r=3, **base)
    times = [(k * d + US) / US for k in range(4)]  # 1 s into steps 1-4
    got = _agree(cfg, _trace(times, 200))
    _expect(got, detections=4, wipeouts=1, failures=4)
    assert got["lost"] == 3 * d + c and got["ttt"] == 3 * d + c + 3600 * US + 10 * d
    got = _agree(cfg, _trace(times[:3], 200, ranks=[8, 8, 8], n_live=[200, 199, 198]))
    _expect(got, detections=3, wipeouts=1, failures=3)
    assert got["lost"] == 2 * d + c
    # the replica sets decide: the same deaths as a dead set in the twin's terms
    assert replica_sets_wiped(200, 3, [0, 1, 2]) is False and replica_sets_wiped(200, 3, [0, 1, 2, 3]) is True


def replica_sets_wiped(n, r, dead):
    return sm.ReplicaSets(n, r).is_wiped(dead)


def test_even_rep_runs_on_the_blocks_bit_for_bit():
    """r dividing N: the sets are the blocks, a step is r T_comp, and the run equals the one on block()'s holder
    table through the public API (the same numbers as before replica sets, pinned by the existing tests)."""
    cfg = TimelineConfig("rep", 60, r=3, n_steps=300, jitter_sd=0.05, mtbf_s=60.0)
    assert cfg.rep_step_compute_us == 3 * 64 * US and cfg.layout_object().kind == "block"
    trace = make_trace(cfg, np.random.default_rng(4), 20_000)
    a = _run_us(cfg, cfg.layout_object().holders, *trace, jitter_rng=np.random.default_rng(1))
    b = _run_us(cfg, None, *trace, jitter_rng=np.random.default_rng(1))
    assert np.array_equal(a, b) and a[TK.R_WIPEOUTS] > 0 and a[TK.R_DETECTIONS] > a[TK.R_WIPEOUTS]


def test_mul_div_is_exact_beyond_int64_products():
    """The useful share of a Rep step, floor(c T_comp / C), must not overflow for long stretches or huge T_comp."""
    rng = np.random.default_rng(3)
    for _ in range(2000):
        d = int(rng.integers(1, 1 << 52))
        a = int(rng.integers(0, d))
        b = int(rng.integers(0, 1 << 62))
        assert job_steps._mul_div(np.int64(a), np.int64(b), np.int64(d)) == a * b // d


def test_one_compiled_signature_for_every_strategy():
    """CKPT-only, Rep (even and uneven) and SPARe (fixed and random layouts, a writable holder table) share one
    compiled kernel: the table arguments are always passed read-only, as a Layout's."""
    for cfg in (TimelineConfig("ckpt", 24, n_steps=50), TimelineConfig("rep", 24, r=3, n_steps=50),
                TimelineConfig("rep", 25, r=3, n_steps=50), TimelineConfig("spare", 24, r=3, n_steps=50),
                TimelineConfig("spare", 24, r=3, n_steps=50, layout="random")):
        simulate_ttt(cfg, 1, rng=1)
    cfg = TimelineConfig("spare", 24, r=3, n_steps=50)
    _run_us(cfg, cfg.layout_object().holders.copy(), *_trace([], 24), jitter_rng=np.random.default_rng(0))
    # one basic variant (their options are all off), and at most the extended one besides (other tests' options)
    sigs = TK.timeline.signatures
    assert sum(isinstance(sig[-1], numba.types.NoneType) for sig in sigs) == 1, sigs
    assert len(sigs) <= 2, sigs


#: one setting of each option the basic variant of the kernel prunes (TK._extended)
_EXTENSIONS = ({"repair": "fixed", "repair_s": 900.0}, {"ckpt_policy": "hazard"}, {"detection": "immediate"},
               {"ckpt_failure": "lost"}, {"restart_failures": "stay_dead"}, {"restart_failures": "restart_again"})


def test_variant_is_basic_only_without_extensions():
    """The extended variant is chosen for every option the basic one prunes, and for failure sources other than the
    system clock; the basic one otherwise (every strategy, jitter or not, modern checkpointing or not)."""
    for strategy, r in (("ckpt", 1), ("rep", 3), ("spare", 3)):
        for jitter, modern in ((0.0, {}), (0.05, {}), (0.0, {"memory_copies": 2, "ckpt_async": True})):
            cfg = TimelineConfig(strategy, 24, r=r, n_steps=50, jitter_sd=jitter, **modern)
            P, *_ = _kernel_params(cfg)
            assert TK.variant(P) is None
    for ext in _EXTENSIONS:
        # immediate detection is CKPT-only's (Rep and SPARe mask failures at their all-reduce)
        cfg = TimelineConfig("ckpt", 24, n_steps=50, **ext) if "detection" in ext else \
            TimelineConfig("rep", 24, r=3, n_steps=50, **ext)
        P, *_ = _kernel_params(cfg)
        assert TK.variant(P) is TK.EXTENDED, ext
    P, *_ = _kernel_params(TimelineConfig("spare", 24, r=3, n_steps=50))
    for slot, value in ((TK.P_SOURCE, TK.SRC_UNITS), (TK.P_SOURCE, TK.SRC_LOG)):
        Q = P.copy()
        Q[slot] = value
        assert TK.variant(Q) is TK.EXTENDED


def test_needs_extended_says_what_the_kernel_params_choose():
    """run.needs_extended (the warm-up's and the cold start's answer, which skips the derived durations) agrees
    with the variant of the kernel's full parameters for every option that chooses it, each source included."""
    from spare_mc.model.failures import PerGPU

    configs = [TimelineConfig(s, 24, r=r, n_steps=50) for s, r in (("ckpt", 1), ("rep", 3), ("spare", 3))]
    configs += [TimelineConfig("ckpt", 24, n_steps=50, **ext) if "detection" in ext else
                TimelineConfig("rep", 24, r=3, n_steps=50, **ext) for ext in _EXTENSIONS]
    configs.append(TimelineConfig("spare", 24, r=3, n_steps=50, failures=PerGPU(1e6), ckpt_period_s=600.0,
                                  topology=sm.Topology(24 * 8, 24, gpus_per_node=8)))
    for cfg in configs:
        for log in (False, True):
            P = _kernel_params(cfg)[0].copy()
            P[TK.P_SOURCE] = TK.SRC_LOG if log else TK.SRC_UNITS if cfg.failures is not None else TK.SRC_SYSTEM
            assert needs_extended(cfg, log) == (TK.variant(P) is not None), (cfg, log)
    assert [needs_extended(c) for c in configs[:3]] == [False] * 3 and needs_extended(configs[-1])


@pytest.mark.parametrize("strategy,r,jitter,modern", [("ckpt", 1, 0.05, False), ("rep", 3, 0.0, False),
                                                      ("spare", 3, 0.05, False), ("spare", 4, 0.0, False),
                                                      ("spare", 3, 0.05, True)])
def test_basic_variant_is_the_extended_one_with_its_options_off(monkeypatch, strategy, r, jitter, modern):
    """The basic variant is the extended kernel with the pruned branches' options off: the same jobs give the same
    results, slot for slot, whichever variant runs them (modern checkpointing is in both)."""
    extra = {"memory_copies": 2, "ckpt_async": True, "remote_every": 3} if modern else {}
    cfg = TimelineConfig(strategy, 32, r=r, n_steps=400, mtbf_s=40.0 * 60, jitter_sd=jitter, **extra)
    basic = simulate_ttt(cfg, 6, rng=11)
    monkeypatch.setattr(TK, "variant", lambda P: TK.EXTENDED)
    extended = simulate_ttt(cfg, 6, rng=11)
    assert sum(run.wipeouts for run in basic.runs) > 0  # the restarts ran too
    for a, b in zip(basic.runs, extended.runs):
        assert a == b


def test_basic_variant_refuses_a_job_that_needs_the_extended_one(monkeypatch):
    """A job with an option the basic variant prunes never runs in it silently: the kernel returns -2 and the caller
    raises."""
    monkeypatch.setattr(TK, "variant", lambda P: None)
    cfg = TimelineConfig("rep", 24, r=3, n_steps=50, repair="fixed", repair_s=900.0)
    with pytest.raises(RuntimeError, match="extended"):
        simulate_ttt(cfg, 1, rng=1)


# ---------------------------------------------------------------------------------------- twin, randomly
def _random_units(rng, n, kind):
    topo = sm.Topology(n * 32, n, gpus_per_node=8, nodes_per_rack=2, racks_per_power=2,
                       placement=str(rng.choice(["contiguous", "strided"])))
    mtbf, k = float(rng.uniform(20, 400)), float(rng.uniform(0.6, 1.5))
    bg = sm.PerGPU.from_system_mtbf(mtbf, topo.n_gpus, k, str(rng.choice(["renew", "keep"])))
    own = dict(shape=k, live_scaling=True)  # a unit-clock model runs under its own shape, on live groups only
    if kind == "per_gpu":
        return dict(failures=bg, topology=topo, **own)
    if kind == "mixed":  # two to four levels at once, each its own mean lifetime; either unit sampler
        levels = [str(x) for x in rng.choice(["node", "rack", "power", "pod"], int(rng.integers(2, 5)), False)]
        fail = sm.DomainFailures(levels={lvl: mtbf * float(rng.uniform(10, 80)) for lvl in levels}, shape=k,
                                 background=bg if rng.random() < 0.7 else None)
        keep = fail.background is not None and fail.background.age_policy == "keep"
        sampler = "per_unit" if keep else str(rng.choice(["race", "per_unit"]))
        return dict(failures=fail, topology=topo, unit_sampler=sampler, **own)
    fail = sm.DomainFailures(str(rng.choice(["node", "rack", "power"])), mtbf * 20, k,
                             background=bg if rng.random() < 0.7 else None)
    return dict(failures=fail, topology=topo, **own)


def _long_enough_trace(cfg, rng):
    """A failure trace the job does not run out of: 50,000 draws, then 4 times more until it suffices (each try
    from a fresh seed drawn from ``rng``)."""
    length = 50_000
    while True:
        trace = make_trace(cfg, np.random.default_rng(rng.integers(2**32)), length)
        if STATUS[_run(cfg, trace)[TK.R_STATUS]] != "trace":
            return trace
        length *= 4


def _random_config(rng, strategy, source):
    """A random setting with a random value of every kernel option (those of another strategy are ignored)."""
    if strategy == "rep":
        n = int(rng.choice([12, 13, 25, 26, 60]))
        r = int(rng.choice([2, 3, 4, 5]))
    else:
        n = int(rng.choice([12, 24, 60]))
        r = 1 if strategy == "ckpt" else int(rng.choice([2, 3, 4]))
    cost = str(rng.choice(["shrink", "redo_step", "resync"]))
    kw = dict(r=r, n_steps=int(rng.integers(50, 300)), mtbf_s=float(rng.uniform(20, 400)),
              shape=float(rng.uniform(0.6, 1.5)), restart_s=float(rng.uniform(10, 500)),
              save_s=float(rng.uniform(1, 30)), jitter_sd=0.0, live_scaling=bool(rng.random() < 0.7),
              compute_s=float(rng.uniform(1, 20)), max_wall_factor=float(rng.choice([5.0, 100.0])),
              layout=str(rng.choice(["cyclic", "sidon"])) if n >= 24 else "cyclic",
              rep_allreduce=str(rng.choice(["per_step", "per_replica"])),
              rep_masked_cost=cost, rep_resync_s=float(rng.uniform(0, 20)) if cost == "resync" else 0.0,
              masked_detect_s=float(rng.choice([0.0, rng.uniform(0, 10)])),
              patch_cost=str(rng.choice(["per_shard", "none", "whole_step"])),
              restart_failures=str(rng.choice(["absorbed", "stay_dead"])),
              ckpt_failure=str(rng.choice(["completes", "lost"])))
    if rng.random() < 0.4:
        kw["ckpt_every_steps"] = int(rng.integers(1, 25))
    else:
        kw["ckpt_period_s"] = float(rng.uniform(50, 1000))
    if source != "system":
        kw.update(_random_units(rng, n, source))
    return TimelineConfig(strategy, n, **kw)


@pytest.mark.parametrize("source", ["system", "per_gpu", "domain", "mixed"])
@pytest.mark.parametrize("strategy", ["ckpt", "rep", "spare"])
def test_kernel_equals_twin_under_random_options(strategy, source):
    """Random combinations of every option, jitter off: identical TTT, breakdown and counts to the microsecond
    (capped runs included; Rep with r dividing N or not; system process, per-GPU and domain clocks, renew and keep;
    several domain levels at once under either unit sampler)."""
    rng = np.random.default_rng({"ckpt": 100, "rep": 200, "spare": 300}[strategy]
                                + {"system": 0, "per_gpu": 1, "domain": 2, "mixed": 3}[source])
    seen = set()
    for _ in range(25):
        cfg = _random_config(rng, strategy, source)
        got = _agree(cfg, _long_enough_trace(cfg, rng))
        seen.add(("capped", got["ttt"] > cfg.cap_s * US))
        seen.add(("stay_dead wipe-out", cfg.restart_failures == "stay_dead" and got["wipeouts"] > 0))
        seen.add(("lost checkpoint", got["checkpoints_lost"] > 0))
        seen.add(("uneven", strategy == "rep" and cfg.n_groups % cfg.r != 0))
        seen.add(("race", cfg.unit_race))
    assert ("stay_dead wipe-out", True) in seen and ("lost checkpoint", True) in seen
    if source == "mixed":  # both unit samplers
        assert ("race", True) in seen and ("race", False) in seen
    if strategy == "rep":
        assert ("uneven", True) in seen


def test_random_spare_layout_with_every_option():
    """The random SPARe layout (drawn per job) under random options: the kernel equals the twin on that layout."""
    rng = np.random.default_rng(77)
    for _ in range(4):
        cfg = dataclasses.replace(_random_config(rng, "spare", "system"), layout="random")
        holders = cfg.layout_object(rng=rng).holders
        _agree(cfg, make_trace(cfg, np.random.default_rng(rng.integers(2**32)), 200_000), holders)


@pytest.mark.parametrize("strategy, n, r, kw", [
    ("spare", 24, 3, dict(restart_failures="stay_dead", ckpt_failure="lost", ckpt_every_steps=6,
                          patch_cost="whole_step", masked_detect_s=2.0)),
    ("rep", 25, 3, dict(restart_failures="stay_dead", ckpt_failure="lost", rep_masked_cost="redo_step",
                        ckpt_period_s=300.0)),
])
def test_jitter_equal_in_distribution_under_options(strategy, n, r, kw):
    """Jitter on (the kernel skips quiet stretches with normal sums, the twin steps through every step): the same
    law of the time to train and of the lost work on one trace (two-sample KS and Welch)."""
    from conftest import ALPHA
    from scipy import stats
    cfg = TimelineConfig(strategy, n, r=r, n_steps=400, mtbf_s=150.0, restart_s=120.0, save_s=5.0, compute_s=8.0,
                         allreduce_s=1.0, jitter_sd=0.05, **kw)
    trace = make_trace(cfg, np.random.default_rng(12), 20_000)
    runs = [_run(cfg, trace, jitter_seed=s) for s in range(250)]
    twins = [timeline_simpy(cfg, trace, jitter_rng=np.random.default_rng(10_000 + s)) for s in range(250)]
    for key in ("ttt", "lost", "checkpoints_lost"):
        k = np.array([x[KEYS[key]] for x in runs], dtype=float)
        t = np.array([w[key] for w in twins], dtype=float)
        assert stats.ks_2samp(k, t).pvalue > ALPHA, key
        assert stats.ttest_ind(k, t, equal_var=False).pvalue > ALPHA, key
    assert np.mean([x[TK.R_CKPTS_LOST] for x in runs]) > 0 and np.mean([x[TK.R_WIPEOUTS] for x in runs]) > 0


# --------------------------------------------------- 7. the classical rules: restart_again, immediate, final
def test_restart_again_starts_the_restart_over():
    """CKPT-only: failure 1 at 15 s wipes out at 21 s, the restart runs 21-121. A failure at 50 s starts it again:
    50-150, TTT = 150 + 110 = 260. With another at 140 s: again 140-240, TTT 350. Absorbed (the default): 231."""
    got = _agree(TimelineConfig("ckpt", 12, restart_failures="restart_again", **BASE), _trace([15, 50], 12))
    _expect(got, ttt=260, lost=21, restart=129, failures=1, absorbed=1, wipeouts=1, steps_run=12)
    got = _agree(TimelineConfig("ckpt", 12, restart_failures="restart_again", **BASE), _trace([15, 50, 140], 12))
    _expect(got, ttt=350, lost=21, restart=219, failures=1, absorbed=2, wipeouts=1)
    # a failure at the very end of the restart (150 s) hits the restarted system: step 1 (150-161) detects it
    got = _agree(TimelineConfig("ckpt", 12, restart_failures="restart_again", **BASE), _trace([15, 50, 150], 12))
    _expect(got, ttt=150 + 10 + 100 + 110, lost=21 + 10, restart=229, failures=2, absorbed=1, wipeouts=2)


def test_restart_again_past_the_cap_stops_the_run_there():
    """Cap 2 x T0 = 220 s: the restart 21-121 starts again at 120.5 s and would end at 220.5 s > 220: the run stops
    at the cap, capped, the restart booked up to it (199 s), with the failures inside that last attempt not drawn."""
    got = _agree(TimelineConfig("ckpt", 12, restart_failures="restart_again", **{**BASE, "max_wall_factor": 2.0}),
                 _trace([15, 120.5, 130], 12))
    _expect(got, ttt=220, restart=199, absorbed=1, wipeouts=1, lost=21)


def test_restart_again_on_unit_clocks():
    """CKPT-only N = 4 with per-GPU clocks: lifetimes 15, 50, 200 s, never. Unit 0 wipes out at 21 s; unit 1 fires at
    50 s during the restart (21-121): again 50-150. Renew: every unit redrawn at 150 (all never): TTT 150 + 110.
    Keep: unit 2 keeps its 200 s and fires during step 5 (compute 194-204): wipe-out at 204 (4 steps and a compute
    lost), restart 204-304, TTT 304 + 110."""
    topo = sm.Topology(32, 4, gpus_per_node=8)
    for policy, ttt, wipeouts in (("renew", 260, 1), ("keep", 414, 2)):
        cfg = TimelineConfig("ckpt", 4, failures=sm.PerGPU(1000.0, 1.0, policy), topology=topo,
                             restart_failures="restart_again", unit_sampler="per_unit", **BASE)
        scale = cfg.unit_clocks()[0][0]
        got = _agree(cfg, (np.array([t * US / scale for t in [15, 50, 200] + [1e7] * 40]),))
        _expect(got, ttt=ttt, wipeouts=wipeouts, absorbed=1, restart=129 + 100 * (wipeouts - 1))


def _race_trace(events, n_units, rate):
    """A race trace (``unit_sampler="race"``, shape 1, so the clock sigma is the wall time since the last renewal):
    ``events`` = [(sigma of the arrival in s, active units then, the rank of the unit it picks, or None for the
    last draw)]; every exponential is the step in sigma times the total rate, every victim draw hits its rank."""
    life, vic, prev = [], [], 0.0
    for sigma_s, m, rank in events:
        life.append((sigma_s - prev) * US * m * rate)
        prev = sigma_s
        if rank is not None:
            vic.append(-(-(rank << 32) // m))  # (v / 2^32) m rate / rate = rank (and a hair)
    return np.array(life + [1e9] * 4), np.array(vic + [0] * 4, dtype=np.int64)


@pytest.mark.parametrize("restart_failures, ttt, wipeouts, failures, absorbed, restart", [
    # unit 0 at 15 s wipes out at 21 s; the arrival at 50 s (3 units left) falls in the restart (21-121):
    # absorbed; every unit renewed at 121, none fails again: TTT 121 + 110
    ("absorbed", 231, 1, 1, 1, 100),
    # it kills group 1 instead; its unit stays off after the restart: wipe-out at 131, restart to 231, then 110
    ("stay_dead", 341, 2, 2, 0, 200),
    # it restarts the restart: 50-150, then 110
    ("restart_again", 260, 1, 1, 1, 129),
])
def test_race_of_renewed_units_on_a_hand_built_trace(restart_failures, ttt, wipeouts, failures, absorbed, restart):
    """CKPT-only N = 4, per-GPU clocks sampled as a race (k = 1): arrivals at sigma 15 s (4 units active, unit 0)
    and 50 s (3 active, rank 0 of [3, 1, 2] after unit 0 swapped with unit 3 is unit 3 -- pick rank 1: unit 1),
    then an exponential of 1e9 (never)."""
    topo = sm.Topology(32, 4, gpus_per_node=8)
    cfg = TimelineConfig("ckpt", 4, failures=sm.PerGPU(1000.0, 1.0, "renew"), topology=topo,
                         restart_failures=restart_failures, unit_sampler="race", **BASE)
    assert cfg.unit_race
    rate = 1.0 / cfg.unit_clocks()[0][0]
    got = _agree(cfg, _race_trace([(15, 4, 0), (50, 3, 1)], 4, rate))
    _expect(got, ttt=ttt, wipeouts=wipeouts, failures=failures, absorbed=absorbed, restart=restart)


def test_race_domain_event_kills_its_groups_and_their_units():
    """CKPT-only N = 4 on nodes of 16 GPUs (two groups each), node failures only (no background), race, k = 1:
    the arrival at 15 s picks node 1 (groups 2 and 3): one failure event, two groups killed, wipe-out at 21 s,
    restart to 121, then 110 (the arrival drawn after 121 is never)."""
    topo = sm.Topology(32, 4, gpus_per_node=16)
    cfg = TimelineConfig("ckpt", 4, failures=sm.DomainFailures("node", 1000.0, 1.0), topology=topo, **BASE)
    assert cfg.unit_race and cfg.unit_clocks()[1] == 0
    rate = 1.0 / cfg.unit_clocks()[0][0]
    got = _agree(cfg, _race_trace([(15, 2, 1)], 2, rate))
    _expect(got, ttt=231, wipeouts=1, failures=2, absorbed=0)


def test_race_needs_renewed_units():
    topo = sm.Topology(32, 4, gpus_per_node=8)
    with pytest.raises(ValueError, match="`unit_sampler`='race' needs age_policy='renew'"):
        TimelineConfig("ckpt", 4, failures=sm.PerGPU(1000.0, 0.8, "keep"), topology=topo, unit_sampler="race")
    with pytest.raises(ValueError, match="`unit_sampler` has no effect without a unit-clock failure model"):
        TimelineConfig("ckpt", 4, unit_sampler="per_unit")
    with pytest.raises(ValueError, match="unit_sampler"):
        TimelineConfig("ckpt", 4, failures=sm.PerGPU(1000.0, 0.8), topology=topo, unit_sampler="heap")


@pytest.mark.parametrize("restart_failures", ["absorbed", "stay_dead", "restart_again"])
def test_race_and_per_unit_lifetimes_are_the_same_law(restart_failures):
    """Under age_policy='renew' the race and a lifetime per unit are two samplers of one law: Weibull k = 0.7
    failure domains (racks) with a per-GPU background on 24 groups, strided so a rack kills several groups. TTT,
    failures and wipe-outs agree in distribution (two-sample KS and Welch, alpha = 1e-4)."""
    topo = sm.Topology(24 * 32, 24, gpus_per_node=8, nodes_per_rack=2, racks_per_power=2, placement="strided")
    bg = sm.PerGPU.from_system_mtbf(200.0, topo.n_gpus, 0.7, "renew")
    fail = sm.DomainFailures("rack", 40_000.0, 0.7, background=bg)  # 48 racks: one event per ~830 s
    same_law_race_and_per_unit(fail, topo, restart_failures, seeds=(7, 8))


def same_law_race_and_per_unit(fail, topo, restart_failures, seeds):
    """SPARe r = 3 on ``topo``'s 24 groups under ``fail``, 400 jobs per sampler (race: root ``seeds[0]``,
    per_unit: ``seeds[1]``): TTT, failures and wipe-outs agree in distribution (two-sample KS and Welch at
    alpha = 1e-4)."""
    from scipy import stats
    runs = {}
    for sampler, seed in zip(("race", "per_unit"), seeds):
        cfg = TimelineConfig("spare", 24, r=3, n_steps=200, compute_s=8.0, allreduce_s=1.0, save_s=5.0,
                             ckpt_period_s=300.0, restart_s=120.0, jitter_sd=0.0, failures=fail, topology=topo,
                             restart_failures=restart_failures, unit_sampler=sampler)
        runs[sampler] = simulate_ttt(cfg, 400, rng=seed)
    for name in ("ttt_over_t0", "failures", "wipeouts"):
        a, b = runs["race"].values(name), runs["per_unit"].values(name)
        assert a.std() > 0 and b.std() > 0
        assert stats.ks_2samp(a, b).pvalue > 1e-4, name
        assert stats.ttest_ind(a, b, equal_var=False).pvalue > 1e-4, name


def test_immediate_detection_interrupts_the_step():
    """CKPT-only, detection at arrival: a failure at 15 s stops step 2 (11-22) at once: 11 + 4 s lost, restart
    15-115, TTT 225 (231 when detected at the all-reduce). A failure at 22 s, the very end of step 2, stops step 3
    at its start: 22 s lost, TTT 232."""
    cfg = TimelineConfig("ckpt", 12, detection="immediate", **BASE)
    _expect(_agree(cfg, _trace([15], 12)), ttt=225, lost=15, restart=100, wipeouts=1, detections=1, steps_run=12)
    _expect(_agree(cfg, _trace([22], 12)), ttt=232, lost=22, restart=100, wipeouts=1, steps_run=13)


def test_immediate_detection_interrupts_the_save():
    """Checkpoints every 2 steps: steps 1-2 (0-22), save 22-27, steps 3-4 (27-49), save 49-54. A failure at 51 s
    stops the second save: 2 s of checkpoint time, a lost checkpoint, steps 3-4 lost; restart 51-151, then 8 steps
    and 3 saves: TTT 151 + 88 + 15 = 254."""
    base = {**BASE, "ckpt_period_s": None}
    cfg = TimelineConfig("ckpt", 12, detection="immediate", ckpt_every_steps=2, **base)
    got = _agree(cfg, _trace([51], 12))
    _expect(got, ttt=254, checkpoint=22, checkpoints=5, checkpoints_lost=1, lost=22, restart=100, useful=100,
            allreduce=10, wipeouts=1)


def test_final_checkpoint():
    """A checkpoint after the last step: 110 + 5 = 115. Under immediate detection a failure at 112 s stops it: the
    whole job is lost (no earlier checkpoint), restart 112-212, then 10 steps and the final save: 327."""
    got = _agree(TimelineConfig("ckpt", 12, final_checkpoint=True, **BASE), _trace([], 12))
    _expect(got, ttt=115, checkpoint=5, checkpoints=1)
    got = _agree(TimelineConfig("ckpt", 12, final_checkpoint=True, detection="immediate", **BASE), _trace([112], 12))
    _expect(got, ttt=327, checkpoint=7, checkpoints=2, checkpoints_lost=1, lost=110, restart=100)
    # detected at the all-reduce, a failure during the final save changes nothing (the save completes): 115
    got = _agree(TimelineConfig("ckpt", 12, final_checkpoint=True, **BASE), _trace([112], 12))
    _expect(got, ttt=115, failures=1, wipeouts=0)


@pytest.mark.parametrize("strategy, kw, match", [
    ("rep", dict(detection="immediate"), r"`detection` has no effect with strategy='rep'"),
    ("ckpt", dict(detection="at_once"), r"`detection` must be one of \['allreduce', 'immediate'\]"),
    ("ckpt", dict(detection="immediate", ckpt_failure="lost"), r"`ckpt_failure` has no effect with detection="),
    ("ckpt", dict(final_checkpoint=True, ckpt_failure="lost"), r"`final_checkpoint`=True with ckpt_failure='lost'"),
    ("ckpt", dict(final_checkpoint="yes"), r"`final_checkpoint` must be"),
])
def test_classical_rules_bad_values(strategy, kw, match):
    with pytest.raises((sm.UsageValueError, sm.UsageTypeError), match=match):
        _Config(strategy, 12, **kw)


@pytest.mark.parametrize("source", ["system", "per_gpu", "domain"])
@pytest.mark.parametrize("strategy", ["ckpt", "rep", "spare"])
def test_kernel_equals_twin_under_the_classical_rules(strategy, source):
    """The random settings of the test above, with restart_again, a final checkpoint and (CKPT-only) immediate
    detection drawn on top: identical to the microsecond."""
    rng = np.random.default_rng({"ckpt": 400, "rep": 500, "spare": 600}[strategy]
                                + {"system": 0, "per_gpu": 1, "domain": 2}[source])
    seen = set()
    for _ in range(15):
        cfg = _random_config(rng, strategy, source)
        extra = dict(restart_failures=str(rng.choice(["restart_again", "restart_again", cfg.restart_failures])),
                     final_checkpoint=bool(rng.random() < 0.5))
        if strategy == "ckpt" and rng.random() < 0.7:
            extra.update(detection="immediate", ckpt_failure="completes")
        if extra["final_checkpoint"] and extra.get("detection", "allreduce") == "allreduce":
            extra["ckpt_failure"] = "completes"
        cfg = dataclasses.replace(cfg, **extra)
        got = _agree(cfg, _long_enough_trace(cfg, rng))
        seen.add(("restart again", cfg.restart_failures == "restart_again" and got["absorbed"] > 0))
        seen.add(("immediate wipe-out", cfg.detection == "immediate" and got["wipeouts"] > 0))
        seen.add(("final", cfg.final_checkpoint and got["ttt"] <= cfg.cap_s * US))
    assert ("restart again", True) in seen and ("final", True) in seen
    if strategy == "ckpt":
        assert ("immediate wipe-out", True) in seen


# ------------------------------------------------------------------------------------ 8. dynamic checkpointing
@pytest.mark.parametrize("strategy", ["ckpt", "rep", "spare"])
def test_kernel_equals_twin_under_dynamic_policies(strategy):
    """The hazard policies on random settings (system-level failures, every other option random, period factor
    random): identical to the microsecond, with the policy's checkpoints seen at several dead-group counts."""
    rng = np.random.default_rng({"ckpt": 700, "rep": 800, "spare": 900}[strategy])
    seen = set()
    for _ in range(12):
        cfg = _random_config(rng, strategy, "system")
        kw = dict(ckpt_policy=str(rng.choice(["hazard", "young_hazard"])), ckpt_period_s=None, ckpt_every_steps=0,
                  ckpt_period_factor=float(rng.choice([0.5, 1.0, 2.0])))
        if rng.random() < 0.3:
            kw["restart_failures"] = "restart_again"
        cfg = dataclasses.replace(cfg, **kw)
        got = _agree(cfg, _long_enough_trace(cfg, rng))
        seen.add(("checkpoints", got["checkpoints"] > 0))
        seen.add(("masked", strategy != "ckpt" and got["detections"] > got["wipeouts"]))
    assert ("checkpoints", True) in seen
    if strategy != "ckpt":
        assert ("masked", True) in seen


@pytest.mark.parametrize("n, mtbf, restart, save, factor, load", [
    (600, 300.0, 3600.0, 60.0, 1.0, 0.0), (100, 2000.0, 600.0, 30.0, 0.5, 0.0), (12, 150.0, 100.0, 5.0, 2.0, 0.0),
    (200, 3000.0, 600.0, 60.0, 1.0, 600.0)])  # a restart with a checkpoint load: T_r = restart + load (QA pass)
def test_hazard_policy_is_the_periodic_optimum_for_ckpt_under_exponential_failures(n, mtbf, restart, save, factor,
                                                                                     load):
    """CKPT-only, shape 1: the wipe-out hazard is 1/M whatever the time since the last failure, so the hazard policy
    is the periodic T_c* (times the same factor): the same runs, to the microsecond, on the same traces."""
    kw = dict(n_steps=300, compute_s=20.0, allreduce_s=2.0, mtbf_s=mtbf, shape=1.0, restart_s=restart, save_s=save,
              jitter_sd=0.0, ckpt_period_factor=factor, load_s=load)
    periodic = TimelineConfig("ckpt", n, **kw)
    hazard = TimelineConfig("ckpt", n, ckpt_policy="hazard", **kw)
    wipeouts = 0
    for seed in range(5):
        trace = make_trace(periodic, np.random.default_rng(seed), 20_000)
        a, b = _run(periodic, trace), _run(hazard, trace)
        wipeouts += a[TK.R_WIPEOUTS]
        assert np.array_equal(a[:TK.R_LOOPS], b[:TK.R_LOOPS])  # every result but the loop count
    assert wipeouts >= 3


def test_dynamic_policy_bad_values():
    with pytest.raises(sm.UsageValueError, match=r"`ckpt_policy` must be one of"):
        _Config("ckpt", 12, ckpt_policy="adaptive")
    with pytest.raises(sm.UsageValueError, match=r"`ckpt_period_s` must be None"):
        _Config("ckpt", 12, ckpt_policy="hazard", ckpt_period_s=100.0)
    with pytest.raises(sm.UsageValueError, match=r"`ckpt_every_steps` must be 0"):
        _Config("ckpt", 12, ckpt_policy="hazard", ckpt_every_steps=3)
    with pytest.raises(sm.UsageValueError, match=r"`failures` must be None"):
        _Config("ckpt", 12, ckpt_policy="young_hazard", failures=sm.PerGPU(1e6, 0.8))


# ---------------------------------------------------------------------------------------------- 9. repair
def test_repaired_group_rejoins_at_the_next_step_boundary():
    """Rep N = 12, r = 3 (steps of 30 + 1 s). Group 0 dies at 5 s, masked at the all-reduce at 30 s (shrink 0.5):
    repaired 50 s later (ready at 80 s), it rejoins at the first boundary after, 93.5 s, pausing 2 s. Groups 1 and
    2 (ranks 1 of 12 and 1 of 11) die at 100 and 110 s: set 0 still has group 0, so step 4 (95.5-125.5) masks them;
    ready at 175.5 s, they rejoin at 189 s. TTT = 310 + 2 x (0.5 + 2) = 315; without repair the set is wiped."""
    trace = _trace([5, 100, 110], 12, ranks=[0, 1, 1], n_live=[12, 12, 11])
    cfg = TimelineConfig("rep", 12, r=3, repair="fixed", repair_s=50.0, rejoin_s=2.0, **BASE)
    _expect(_agree(cfg, trace), ttt=315, rectlr_shrink=5, rejoins=3, wipeouts=0, failures=3, detections=2)
    got = _agree(TimelineConfig("rep", 12, r=3, **BASE), trace)
    assert got["wipeouts"] == 1 and got["rejoins"] == 0


def test_repaired_group_rejoins_after_the_next_checkpoint():
    """The same first failure with checkpoints every 4 steps and rejoin='checkpoint': steps 1-4 end at 124.5 s,
    the save runs to 129.5 s, group 0 rejoins then (ready since 80 s) and the job pauses 2 s: TTT = 310.5 + 2 x 5
    (saves after steps 4 and 8) + 2 = 322.5."""
    base = {**BASE, "ckpt_period_s": None}
    cfg = TimelineConfig("rep", 12, r=3, repair="fixed", repair_s=50.0, rejoin_s=2.0, rejoin="checkpoint",
                         ckpt_every_steps=4, **base)
    _expect(_agree(cfg, _trace([5], 12)), ttt=322.5, rejoins=1, checkpoints=2, rectlr_shrink=2.5)


def test_spare_rejoin_rebuilds_the_stacks():
    """SPARe cyclic N = 12, r = 2 (the patch test above): group 0 dies at 15 s and is found at 21 s (ReCtlr 0.25,
    shrink 0.5, patch 10, all-reduce 1: step 2 ends at 32.75 s), S rises to 2. Repaired 30 s later (51 s), it
    rejoins at the end of step 3 (20 + 1 s: 53.75 s), pausing 1 s, and S falls back to 1: steps 4-10 take 11 s each.
    TTT = 11 + 21.75 + 21 + 1 + 7 x 11 = 131.75 (200.75 without repair: S = 2 to the end)."""
    cfg = TimelineConfig("spare", 12, r=2, repair="fixed", repair_s=30.0, rejoin_s=1.0, **BASE)
    _expect(_agree(cfg, _trace([15], 12)), ttt=131.75, rejoins=1, redundant=10, patch=10)
    _expect(_agree(TimelineConfig("spare", 12, r=2, **BASE), _trace([15], 12)), ttt=200.75, rejoins=0)


@pytest.mark.parametrize("strategy", ["rep", "spare"])
def test_repair_that_never_ends_is_todays_model(strategy):
    """A repair time beyond every job (1e9 s): the same runs as without repair, on the same traces, jitter on."""
    rng = np.random.default_rng(1000 + len(strategy))
    for _ in range(8):
        cfg = dataclasses.replace(_random_config(rng, strategy, "system"), jitter_sd=0.05)
        trace = make_trace(cfg, np.random.default_rng(rng.integers(2**32)), 200_000)
        for repair in ("fixed", "lognormal"):
            never = dataclasses.replace(cfg, repair=repair, repair_s=1e9, repair_sd=0.5)
            a, b = _run(cfg, trace), _run(never, trace)
            assert np.array_equal(a[:TK.R_LOOPS], b[:TK.R_LOOPS]) and b[TK.R_REJOINS] == 0


@pytest.mark.parametrize("strategy", ["rep", "spare"])
def test_kernel_equals_twin_with_repair(strategy):
    """Random settings with repair (fixed or lognormal, rejoin at a step or a checkpoint, sometimes a dynamic
    checkpoint policy): identical to the microsecond."""
    rng = np.random.default_rng({"rep": 1100, "spare": 1200}[strategy])
    seen = set()
    for _ in range(12):
        cfg = _random_config(rng, strategy, "system")
        kw = dict(repair=str(rng.choice(["fixed", "lognormal"])), repair_s=float(rng.uniform(20, 2000)),
                  rejoin=str(rng.choice(["step", "checkpoint"])), rejoin_s=float(rng.choice([0.0, 5.0])))
        if rng.random() < 0.3:
            kw.update(ckpt_policy="hazard", ckpt_period_s=None, ckpt_every_steps=0)
        cfg = dataclasses.replace(cfg, **kw)
        trace = make_trace(cfg, np.random.default_rng(rng.integers(2**32)), 200_000)
        got = _agree(cfg, trace)
        seen.add(("rejoins", got["rejoins"] > 0))
        seen.add(("checkpoint rejoin", cfg.rejoin == "checkpoint" and got["rejoins"] > 0))
    assert ("rejoins", True) in seen and ("checkpoint rejoin", True) in seen


@pytest.mark.parametrize("strategy, kw, match", [
    ("rep", dict(repair_s=100.0), "`repair_s` has no effect without repair"),
    ("rep", dict(rejoin="checkpoint"), "`rejoin` has no effect without repair"),
    ("spare", dict(repair="fixed", repair_sd=1.0), "`repair_sd` has no effect with repair='fixed'"),
    ("rep", dict(repair="weekly"), r"`repair` must be one of"),
    ("ckpt", dict(repair="fixed"), "`repair` has no effect with strategy='ckpt'"),
    ("rep", dict(repair="fixed", repair_s=0.0), "`repair_s` must be > 0"),
    ("rep", dict(repair="lognormal", repair_sd=9.0), "`repair_sd` must be <= 5"),
    ("rep", dict(repair="fixed", failures=sm.PerGPU(1e6, 0.8)), "`repair` needs the system-level failure process"),
])
def test_repair_bad_values(strategy, kw, match):
    with pytest.raises(sm.UsageValueError, match=match):
        _Config(strategy, 12, r=1 if strategy == "ckpt" else 3, **kw)


# ------------------------------------------------------------------------------------------------ bad values
@pytest.mark.parametrize("kw, exc, match", [
    (dict(rep_masked_cost="free"), sm.UsageValueError,
     r"`rep_masked_cost` must be one of \['redo_step', 'resync', 'shrink'\]"),
    (dict(rep_resync_s=-1.0, rep_masked_cost="resync"), sm.UsageValueError, r"`rep_resync_s` must be >= 0"),
    (dict(rep_resync_s=5.0), sm.UsageValueError, r"`rep_resync_s` > 0 needs rep_masked_cost='resync'"),
    (dict(rep_resync_s=5.0, rep_masked_cost="redo_step"), sm.UsageValueError,
     r"`rep_resync_s` > 0 needs rep_masked_cost='resync'"),
    (dict(masked_detect_s=-0.1), sm.UsageValueError, r"`masked_detect_s` must be >= 0"),
    (dict(masked_detect_s=2e9), sm.UsageValueError, r"`masked_detect_s` must be <= 1e\+09"),
    (dict(patch_cost="half"), sm.UsageValueError, r"`patch_cost` must be one of \['none', 'per_shard', 'whole_step'\]"),
    (dict(restart_failures="revived"), sm.UsageValueError,
     r"`restart_failures` must be one of \['absorbed', 'restart_again', 'stay_dead'\]"),
    (dict(ckpt_every_steps=-1), sm.UsageValueError, r"`ckpt_every_steps` must be >= 0"),
    (dict(ckpt_every_steps=2.5), sm.UsageTypeError, r"`ckpt_every_steps` must be an integer"),
    (dict(ckpt_every_steps=5, ckpt_period_s=100.0), sm.UsageValueError,
     r"`ckpt_every_steps`=5 checkpoints by steps: give no `ckpt_period_s`"),
    (dict(ckpt_every_steps=5, ckpt_period_factor=2.0), sm.UsageValueError,
     r"`ckpt_every_steps`=5 .* leave `ckpt_period_factor` at 1"),
    (dict(ckpt_failure="maybe"), sm.UsageValueError, r"`ckpt_failure` must be one of \['completes', 'lost'\]"),
])
def test_bad_values_name_the_option(kw, exc, match):
    strategy = "spare" if "patch_cost" in kw else "rep"  # a strategy the option applies to
    with pytest.raises(exc, match=match):
        _Config(strategy, 12, r=3, **kw)


def test_options_are_sweep_parameters_and_cli_flags(capsys):
    import json

    from spare_mc.cli import main
    from spare_mc.cli.parser import build_parser
    from spare_mc.sweep import PARAMETERS
    defaults = {"rep_masked_cost": "shrink", "rep_resync_s": 0.0, "masked_detect_s": 0.0, "patch_cost": "per_shard",
                "restart_failures": "absorbed", "ckpt_every_steps": 0, "ckpt_failure": "completes"}
    for name, value in defaults.items():
        assert PARAMETERS["ttt"][name] == value
        assert getattr(TimelineConfig("ckpt", 12), name) == value
    text = build_parser()._subparsers._group_actions[0].choices["ttt"].format_help()
    for flag in ("--rep-masked-cost", "--rep-resync-s", "--masked-detect-s", "--patch-cost", "--restart-failures",
                 "--ckpt-every-steps", "--ckpt-failure"):
        assert flag in text
    assert main(["ttt", "--strategy", "rep", "--n-groups", "25", "--r", "3", "--n-steps", "100", "--reps", "2",
                 "--rep-masked-cost", "redo_step", "--masked-detect-s", "2", "--restart-failures", "stay_dead",
                 "--ckpt-every-steps", "5", "--ckpt-failure", "lost", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["config"]["ckpt_every_steps"] == 5 and out["config"]["restart_failures"] == "stay_dead"
    assert out["ckpt_period_rule"] == "every 5 steps" and out["ckpt_period_s"] is None
    assert out["config"]["rep_masked_cost"] == "redo_step" and out["config"]["masked_detect_s"] == 2.0


def test_options_in_a_sweep(tmp_path):
    from spare_mc.sweep import SweepSpec, run_sweep
    text = """
[sweep]
name = "kopt"
quantity = "ttt"
reps = 2
seed = 1
[grid]
restart_failures = ["absorbed", "stay_dead"]
ckpt_failure = ["completes", "lost"]
[fixed]
strategy = "rep"
n_groups = 25
r = 3
n_steps = 150
ckpt_every_steps = 4
"""
    ds = run_sweep(SweepSpec.from_toml(text), tmp_path / "k.nc", workers=0, progress=False)
    assert ds.sizes["restart_failures"] == 2 and ds.sizes["ckpt_failure"] == 2
    cfg = TimelineConfig("rep", 25, r=3, n_steps=150, ckpt_every_steps=4, restart_failures="stay_dead",
                         ckpt_failure="lost")
    np.testing.assert_array_equal(ds["ttt_over_t0"].sel(restart_failures="stay_dead", ckpt_failure="lost").values,
                                  simulate_ttt(cfg, 2, rng=1).values("ttt_over_t0"))


# ---------------------------------------------------------------------------------------- 10. failure-log replay
def _log(events):
    """Log arrays from [(time in s, [groups])]."""
    times = np.array([round(t * US) for t, _ in events], dtype=np.int64)
    ptr = np.cumsum([0] + [len(g) for _, g in events]).astype(np.int64)
    groups = np.array([g for _, gs in events for g in gs], dtype=np.int64)
    return times, ptr, groups


def _agree_log(cfg, log):
    """Kernel and twin replaying one log, jitter off: identical to the microsecond. Returns the kernel's totals."""
    holders = cfg.layout_object().holders if cfg.strategy == "spare" else None
    res = _run_us(cfg, holders, jitter_rng=np.random.default_rng(0), log=log, repair_rng=np.random.default_rng(99))
    twin = timeline_simpy(cfg, None, log=log, repair_rng=np.random.default_rng(99))
    mine = {k: int(res[i]) for k, i in KEYS.items()}
    assert STATUS[res[TK.R_STATUS]] == twin["status"] == "ok" or STATUS[res[TK.R_STATUS]] == twin["status"]
    assert mine == {k: twin[k] for k in KEYS}
    return mine


@pytest.mark.parametrize("restart_failures, ttt, wipeouts, failures, absorbed, restart", [
    # the event at 15 s kills groups 2 and 3 (wipe-out at 21 s, restart to 121); the one at 50 s is absorbed; every
    # group is back, and the one at 125 s kills group 2: wipe-out at 131, restart to 231, then 110 s
    ("absorbed", 341, 2, 3, 1, 200),
    # the event at 50 s kills group 0, which stays dead: wipe-out at 131 (the event at 125 s also kills group 2)
    ("stay_dead", 341, 2, 4, 0, 200),
    # the event at 50 s restarts the restart (50-150); the one at 125 s falls in it too (125-225): then 110 s
    ("restart_again", 335, 1, 2, 2, 204),
])
def test_log_replay_on_a_hand_built_log(restart_failures, ttt, wipeouts, failures, absorbed, restart):
    """CKPT-only N = 4 replaying a log: (15 s, groups 2 and 3), (50 s, group 0), (125 s, group 2)."""
    cfg = TimelineConfig("ckpt", 4, restart_failures=restart_failures, **BASE)
    got = _agree_log(cfg, _log([(15, [2, 3]), (50, [0]), (125, [2])]))
    _expect(got, ttt=ttt, wipeouts=wipeouts, failures=failures, absorbed=absorbed, restart=restart)


@pytest.mark.parametrize("strategy", ["ckpt", "rep", "spare"])
def test_log_replay_equals_twin_under_random_options(strategy):
    """Random logs (events touching 1-3 groups, some at equal times) under random options, including restarts
    started again and immediate detection: the kernel and the twin agree to the microsecond."""
    rng = np.random.default_rng({"ckpt": 31, "rep": 32, "spare": 33}[strategy])
    for _ in range(20):
        cfg = _random_config(rng, strategy, "system")
        extra = {}
        if rng.random() < 0.3:
            extra["restart_failures"] = "restart_again"
        if strategy == "ckpt" and rng.random() < 0.3:
            extra.update(detection="immediate", ckpt_failure="completes")
        cfg = dataclasses.replace(cfg, **extra)
        n, e = cfg.n_groups, int(rng.integers(5, 300))
        times = np.sort(rng.integers(0, int(cfg.t0_s * 3 * US), e)).astype(np.int64)
        times[1::7] = times[0::7][:times[1::7].size]  # some events at one time
        times.sort()
        sizes = rng.integers(1, 4, e)
        ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        groups = np.concatenate([np.sort(rng.choice(n, k, replace=False)) for k in sizes]).astype(np.int64)
        _agree_log(cfg, (times, ptr, groups))


@pytest.mark.parametrize("source", ["system", "per_gpu", "domain"])
def test_sampled_failures_written_as_a_log_replay_to_the_same_job(source):
    """Every failure event of a sampled job (absorbed ones too), written as a log with the groups it touches,
    replays to the same job to the microsecond: the log source is the samplers' events and nothing else."""
    rng = np.random.default_rng({"system": 41, "per_gpu": 42, "domain": 43}[source])
    for _ in range(10):
        strategy = str(rng.choice(["ckpt", "rep", "spare"]))
        cfg = _random_config(rng, strategy, source)
        trace = _long_enough_trace(cfg, rng)
        record = []
        twin = timeline_simpy(cfg, trace, repair_rng=np.random.default_rng(99), record=record)
        log = _log([(t / US, g) for t, g in record])
        # the same job without its failure model (the shape and live scaling of a sampler play no role in a replay)
        replay_cfg = dataclasses.replace(cfg, failures=None, topology=None, unit_sampler="auto")
        got = _agree_log(replay_cfg, log)
        assert got == {k: twin[k] for k in KEYS}


# ------------------------------------------------------------------------------- 10a. the log's repair times
def _log_rep(events):
    """Log arrays with repair times from [(time in s, [groups], repair in s or None)]."""
    times, ptr, groups = _log([(t, g) for t, g, _ in events])
    return times, ptr, groups, np.array([-1 if x is None else round(x * US) for _, _, x in events], dtype=np.int64)


def test_log_repair_on_a_hand_built_log():
    """Rep N = 12, r = 3 (steps of 30 + 1 s) and the groups of set 0 failing as in the fixed-repair test above, now
    with the log's repair times: group 0 (5 s, back at 55 s) is found at 30 s and ready at 55 s, so it rejoins at
    the boundary at 62.5 s (pause 2 s). Groups 1 and 2 (100 s and 110 s, back at 140 s and 170 s) are found at
    125.5 s (step 4 ends at 127 s): group 1 rejoins at 158 s (pause to 160 s), group 2 at the end of step 6, 191 s.
    TTT = 310 + 2 x 0.5 + 3 x 2 = 317. Without a repair time for group 0 it never comes back and set 0 is wiped
    when groups 1 and 2 are found."""
    cfg = TimelineConfig("rep", 12, r=3, repair="log", rejoin_s=2.0, **BASE)
    got = _agree_log(cfg, _log_rep([(5, [0], 50), (100, [1], 40), (110, [2], 60)]))
    _expect(got, ttt=317, rectlr_shrink=7, rejoins=3, wipeouts=0, failures=3, detections=2)
    got = _agree_log(cfg, _log_rep([(5, [0], None), (100, [1], 40), (110, [2], 60)]))
    assert got["wipeouts"] == 1 and got["rejoins"] == 0


def test_log_repair_a_later_event_postpones_a_dead_groups_return():
    """The same job; a rack-like event at 20 s touches groups 0 (already dead, repair then ends at 20 + 100 =
    120 s) and 3 (back at 120 s too). Group 0, found at 30 s, waits for 120 s: it rejoins with group 3 at the end of
    step 4 (127 s), not at 62.5 s. An event with an unknown repair time touching a dead group keeps it dead."""
    cfg = TimelineConfig("rep", 12, r=3, repair="log", rejoin_s=2.0, **BASE)
    got = _agree_log(cfg, _log_rep([(5, [0], 50), (20, [0, 3], 100)]))
    _expect(got, ttt=310.5 + 2, rejoins=2, detections=1, failures=2)
    got = _agree_log(cfg, _log_rep([(5, [0], 50), (20, [0, 3], None)]))
    _expect(got, ttt=310.5, rejoins=0)


def test_spare_log_repair_keeps_a_group_without_repair_dead_at_a_rejoin():
    """SPARe cyclic N = 12, r = 2: group 0 dies at 15 s with no repair time, group 6 at 16 s (back at 40 s).
    When group 6 rejoins, ReCtlr is rebuilt on the groups still dead -- group 0 among them, so S stays 2 to the
    end -- and the kernel and the twin agree."""
    cfg = TimelineConfig("spare", 12, r=2, repair="log", rejoin_s=1.0, **BASE)
    both = _agree_log(cfg, _log_rep([(15, [0], None), (16, [6], 24)]))
    one = _agree_log(cfg, _log_rep([(15, [0], None)]))
    assert both["rejoins"] == 1 and one["rejoins"] == 0
    assert both["redundant"] == one["redundant"]  # S = 2 from the first detection on, in both jobs


@pytest.mark.parametrize("strategy", ["rep", "spare"])
def test_log_repair_equals_twin_on_random_logs(strategy):
    """Random logs with random repair times (some unknown) under random options: identical to the microsecond;
    unknown (or never-ending) repair times for every event are the job without repair."""
    rng = np.random.default_rng({"rep": 51, "spare": 52}[strategy])
    seen = set()
    for _ in range(15):
        cfg = _random_config(rng, strategy, "system")
        cfg = dataclasses.replace(cfg, repair="log", rejoin=str(rng.choice(["step", "checkpoint"])),
                                  rejoin_s=float(rng.choice([0.0, 5.0])))
        n, e = cfg.n_groups, int(rng.integers(5, 200))
        times = np.sort(rng.integers(0, int(cfg.t0_s * 3 * US), e)).astype(np.int64)
        sizes = rng.integers(1, 4, e)
        ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        groups = np.concatenate([np.sort(rng.choice(n, k, replace=False)) for k in sizes]).astype(np.int64)
        repair = np.where(rng.random(e) < 0.2, -1, rng.integers(0, int(cfg.t0_s * US), e)).astype(np.int64)
        got = _agree_log(cfg, (times, ptr, groups, repair))
        seen.add(got["rejoins"] > 0)
        none = dataclasses.replace(cfg, repair="none", rejoin="step", rejoin_s=10.0)
        base = _agree_log(none, (times, ptr, groups))
        assert _agree_log(cfg, (times, ptr, groups, np.full(e, -1, np.int64))) == base
    assert True in seen


def test_replay_log_ttt_with_the_logs_repair_times():
    """The public entry point: a synthetic log with a 30 min repair time per event; repair='log' brings groups
    back (rejoins), which shortens the jobs against the same log without repair; errors name the rule."""
    topo = sm.Topology(600_000, 600)
    log = sm.synthetic_log(topo, {"gpu": (1.0, 300.0 * 600_000)}, 3600 * 100, repair_s=1800.0, rng=3)
    cfg = _Config("rep", 600, r=3, n_steps=300, jitter_sd=0.0, ckpt_period_s=3600.0)
    rep = sm.replay_log_ttt(dataclasses.replace(cfg, repair="log"), log, starts_s=[0.0, 3600.0 * 20])
    base = sm.replay_log_ttt(cfg, log, starts_s=[0.0, 3600.0 * 20])
    assert all(r.rejoins > 0 for r in rep.result.runs)
    assert all(a.ttt_s <= b.ttt_s for a, b in zip(rep.result.runs, base.result.runs))
    bare = sm.synthetic_log(topo, {"gpu": (1.0, 300.0 * 600_000)}, 3600 * 100, rng=3)
    with pytest.raises(ValueError, match="repair='log' needs a log with a `repair_s` column"):
        sm.replay_log_ttt(dataclasses.replace(cfg, repair="log"), bare)
    with pytest.raises(ValueError, match="repair='log' takes each group's repair time from a failure log"):
        simulate_ttt(dataclasses.replace(cfg, repair="log"), 1, rng=0)
    with pytest.raises(ValueError, match="`repair_s` has no effect with repair='log'"):
        _Config("rep", 600, r=3, repair="log", repair_s=60.0)


def test_repair_log_is_refused_where_failures_are_sampled(tmp_path, capsys):
    """The command line offers no 'log' repair (no command replays a job on a log), and a sweep refuses it before
    any task runs."""
    from spare_mc.cli import main
    from spare_mc.sweep import SweepSpec, run_sweep
    assert main(["ttt", "--strategy", "rep", "--n-groups", "60", "--r", "3", "--repair", "log"]) == 2
    assert "invalid choice: 'log'" in capsys.readouterr().err
    spec = SweepSpec.from_toml("""
[sweep]
name = "repairlog"
quantity = "ttt"
reps = 2
seed = 1
[grid]
repair = ["fixed", "log"]
[fixed]
strategy = "rep"
n_groups = 60
r = 3
n_steps = 100
""")
    with pytest.raises(ValueError, match=r"grid point \(repair='log'\): `repair`='log' takes each group's repair"):
        run_sweep(spec, tmp_path / "r.nc", workers=0, progress=False)
    assert not (tmp_path / "r.nc.parts").exists()


def test_replay_log_ttt_on_a_synthetic_log():
    """The public entry point: a log on the paper's topology, jobs started every 50 h, each within the window,
    and errors naming the rule."""
    topo = sm.Topology(600_000, 600)
    log = sm.synthetic_log(topo, {"gpu": (1.0, 300.0 * 600_000), "rack": (1.0, 2e8)}, 3600 * 200, rng=3)
    cfg = _Config("spare", 600, r=8, n_steps=300, jitter_sd=0.0, ckpt_period_s=3600.0)
    out = sm.replay_log_ttt(cfg, log, starts_s=[0.0, 50 * 3600.0, 100 * 3600.0])
    assert out.within_window.all() and out.result.reps == 3
    assert all(r.status == "ok" and r.failures > 0 for r in out.result.runs)
    with pytest.raises(ValueError, match=r"`starts_s` must lie in \[0, duration_s\)"):
        sm.replay_log_ttt(cfg, log, starts_s=[-1.0])
    with pytest.raises(ValueError, match="the log's topology has N=600 groups, the config N=12"):
        sm.replay_log_ttt(_Config("ckpt", 12), log)
    with pytest.raises(ValueError, match="needs ckpt_policy='periodic'"):
        sm.replay_log_ttt(dataclasses.replace(cfg, ckpt_policy="hazard", ckpt_period_s=None), log)
    with pytest.raises(TypeError, match="`log` must be a FailureLog"):
        sm.replay_log_ttt(cfg, log.timeline_events())


# --------------------------------------------------------------- 11. failure-free checkpoint cycles at once
def _with_and_without_cycles(cfg, trace, monkeypatch):
    """The kernel's results on ``trace`` with the failure-free cycles run at once (the default) and one loop
    iteration per cycle (``P_NO_CYCLES = 1``, the loop as it was): every slot, ``R_LOOPS`` included."""
    both = []
    for off in (0, 1):
        P0, PF0, gset, ssize = ttt_run._kernel_params(cfg)
        P1 = P0.copy()
        P1[TK.P_NO_CYCLES] = off
        P1.flags.writeable = P0.flags.writeable
        with monkeypatch.context() as m:
            m.setattr(ttt_run, "_kernel_params", lambda c, p=(P1, PF0, gset, ssize): p)
            both.append(_run(cfg, trace))
    return both


def _cycles_config(rng, strategy, source):
    """Settings where many checkpoint cycles fit between failures (system MTBF 20-200 periods), with every option the
    cycles must respect: saves by steps or by time, lost saves, immediate detection and a final checkpoint
    (CKPT-only), restarts started again or groups that stay dead, a cap that binds, and now and then jitter (no
    cycle then: the loop runs). Asynchronous saves without copies, dynamic policies and repair turn the cycles off;
    their jobs are compared with the twin in tests/test_tiered_ckpt.py, test_dynamic.py and section 9. With in-memory
    copies the memory-only cycles run at once: tests/test_tiered_ckpt.py compares them with the loop."""
    n = int(rng.choice([12, 24])) if strategy != "rep" else int(rng.choice([12, 13, 24]))
    r = 1 if strategy == "ckpt" else int(rng.choice([2, 3]))
    compute = float(rng.uniform(1, 10))
    period = float(rng.uniform(0.5, 8)) * compute
    kw = dict(r=r, n_steps=int(rng.integers(100, 600)), compute_s=compute, allreduce_s=float(rng.uniform(0, 2)),
              mtbf_s=period * float(rng.uniform(20, 200)), shape=float(rng.uniform(0.6, 1.5)),
              restart_s=float(rng.uniform(10, 300)), save_s=float(rng.uniform(0.5, 10)),
              jitter_sd=float(rng.choice([0.0, 0.0, 0.0, 0.05])), live_scaling=bool(rng.random() < 0.5),
              max_wall_factor=float(rng.choice([1.05, 1.3, 100.0])),
              restart_failures=str(rng.choice(["absorbed", "stay_dead", "restart_again"])),
              ckpt_failure=str(rng.choice(["completes", "lost"])))
    if strategy == "ckpt" and kw["restart_failures"] == "stay_dead":
        kw["restart_failures"] = "absorbed"
    if strategy == "ckpt" and rng.random() < 0.3:
        kw.update(detection="immediate", ckpt_failure="completes", final_checkpoint=bool(rng.random() < 0.5))
    elif kw["ckpt_failure"] == "completes" and rng.random() < 0.2:
        kw["final_checkpoint"] = True
    if rng.random() < 0.3:
        kw["ckpt_every_steps"] = int(rng.integers(1, 12))
    else:
        kw["ckpt_period_s"] = period
    if source != "system":
        kw.update(_random_units(rng, n, source))  # system MTBF 20-400 s: a few cycles between failures
    return TimelineConfig(strategy, n, **kw)


@pytest.mark.parametrize("source", ["system", "domain"])
@pytest.mark.parametrize("strategy", ["ckpt", "rep", "spare"])
def test_cycles_at_once_give_the_loops_numbers(strategy, source, monkeypatch):
    """Many failure-free cycles between failures under random options: the kernel with its cycles at once gives
    every result slot of the loop run one cycle per iteration (``R_LOOPS`` included), and both equal the SimPy twin,
    which steps through every step."""
    rng = np.random.default_rng({"ckpt": 11, "rep": 12, "spare": 13}[strategy] + (0 if source == "system" else 7))
    for _ in range(12):
        cfg = _cycles_config(rng, strategy, source)
        trace = _long_enough_trace(cfg, rng)
        at_once, loop = _with_and_without_cycles(cfg, trace, monkeypatch)
        assert at_once.tolist() == loop.tolist()
        if cfg.jitter_sd == 0.0:
            _agree(cfg, trace)


def test_cycles_at_once_on_a_hand_built_trace():
    """CKPT-only, ``T_c = 30``: a cycle is 3 steps (33 s) and a save (5 s), 38 s. Without failures 40 steps are 13
    cycles and one step: TTT 13 x 38 + 11 = 505 s. A failure at 114 s, the end of the third save, hits the running
    job after it (not the save: a save's interval is [start, end)): detected when step 10's compute ends, 124 s (its
    10 s lost), a wipe-out back to step 9, then the restart (100 s) and the 31 steps left: 10 cycles and a step."""
    kw = {**BASE, "n_steps": 40, "ckpt_period_s": 30.0, "ckpt_failure": "lost"}
    got = _agree(TimelineConfig("ckpt", 12, **kw), _trace([], 12))
    _expect(got, ttt=505, checkpoints=13, steps_run=40, useful=400, allreduce=40, checkpoint=65)
    got = _agree(TimelineConfig("ckpt", 12, **kw), _trace([114], 12))
    _expect(got, checkpoints=13, checkpoints_lost=0, wipeouts=1, lost=10, restart=100, ttt=124 + 100 + 31 * 11 + 10 * 5)


def _cycle_start(cfg, **state):
    """The kernel's state at the start of a job of ``cfg`` (a cycle's start: nothing done, a checkpoint due after one
    period or ``ckpt_every_steps``), with ``state`` (``J_*`` / ``Q_*`` slot names) changed."""
    P, PF, _, _ = _kernel_params(cfg)
    J, W = np.zeros(TK.N_J, np.int64), np.zeros(TK.N_W_BLOCKS, np.int64)
    res, Q = np.zeros(TK.N_RES, np.int64), np.zeros(TK.N_Q, np.int64)
    J[TK.J_CKPT_DUE], J[TK.J_CKPT_DUE_STEP], J[TK.J_PERSIST_END] = P[TK.P_PERIOD_US], P[TK.P_CKPT_EVERY], -1
    J[TK.J_S] = 1
    J[TK.J_C_NOM] = P[TK.P_REP_COMP_US] if cfg.strategy == "rep" else P[TK.P_COMP_US]
    for name, value in state.items():
        (Q if name.startswith("Q_") else J)[getattr(TK, name)] = value
    return P.copy(), PF.copy(), TK.Job(J, W, res), Q


@pytest.mark.parametrize("kw, t_f_s, k, steps", [
    ({}, 114, 2, 3),                                   # cycles of 3 steps (33 s) and a save (5 s): 38 s; two end by 114
    ({}, 114.000001, 3, 3),                            # the third ends at 114 s, before the failure
    ({"ckpt_every_steps": 2, "ckpt_period_s": None}, 114, 4, 2),  # by steps: 2 steps and a save, 27 s; 4 by 108 s
    ({"n_steps": 7}, 1e9, 2, 3),                       # 6 steps, one left for the loop
    ({"n_steps": 6}, 1e9, 1, 3),                       # 3 steps, 3 left for the loop
    ({"n_steps": 400, "max_wall_factor": 1.01}, 1e9, "cap", 3),  # the cycles that start no step past the cap
    ({"detection": "immediate", "final_checkpoint": True}, 114, 2, 3),
    ({"jitter_sd": 0.05}, 1e9, 0, 3),                  # no cycle: its durations are drawn
    ({"ckpt_async": True}, 1e9, 0, 3),                 # no cycle: every save is remote and in the background
    # in-memory copies: the memory-only checkpoints (a 2 s save: 35 s cycles) before the remote one is due
    ({"memory_copies": 2, "remote_every": 4, "memory_save_s": 2.0}, 1e9, 3, 3),
    ({"memory_copies": 2, "remote_every": 4, "memory_save_s": 2.0}, 70, 1, 3),  # the second ends at 70 s
    ({"memory_copies": 2, "remote_every": 4, "memory_save_s": 2.0, "ckpt_async": True}, 1e9, 3, 3),
    ({"memory_copies": 2, "remote_every": 1}, 1e9, 0, 3),  # every checkpoint remote: no memory-only cycle
])
def test_ckpt_cycles_counts_the_cycles_that_fit(kw, t_f_s, k, steps):
    """``job_steps.ckpt_cycles`` on its own, CKPT-only, ``T_c = 30``, 10 + 1 s steps, 5 s saves, 40 steps: the cycles
    that end strictly before the failure at ``t_f``, leave a step and start no step past the cap, and the state they
    leave (a checkpoint just written); none where a cycle is not the same every time. With in-memory copies, the
    memory-only checkpoints before the next remote one, their work held in memory."""
    cfg = TimelineConfig("ckpt", 12, **{**BASE, "n_steps": 40, "ckpt_period_s": 30.0, **kw})
    P, PF, job, Q = _cycle_start(cfg)
    mem = kw.get("memory_copies", 0)
    save = kw.get("memory_save_s", 5.0) if mem else 5.0
    cycle = steps * 11 + save
    if k == "cap":  # cap = 1.01 x T0: the whole cycles that end by it (fewer than the 133 the steps allow)
        k = int(P[TK.P_CAP_US] // round(cycle * US))
        assert 0 < k < 133
    assert job_steps.ckpt_cycles(np.int64(round(t_f_s * US)), P, PF, job, Q, None) == k
    J, res, W = job.J, job.res, job.W
    kept = {name: int(res[i]) for name, i in KEYS.items()}
    if mem and k:  # the work is held in memory (W_MEM), not kept yet
        for name, i in (("useful", TK.W_USEFUL), ("allreduce", TK.W_ALLREDUCE)):
            assert kept[name] == 0 and W[TK.W_SINCE + i] == 0
            kept[name] = int(W[TK.W_MEM + i])
        assert J[TK.J_SINCE_REMOTE] == k and J[TK.J_REMOTE_STEPS] == 0
    _expect(kept, checkpoints=k, steps_run=k * steps, useful=k * steps * 10, allreduce=k * steps,
            checkpoint=k * save)
    assert J[TK.J_T] == J[TK.J_LAST_CK] == round(k * cycle * US)
    assert J[TK.J_STEPS_DONE] == J[TK.J_CKPT_STEPS] == k * steps
    if not mem:
        assert J[TK.J_REMOTE_STEPS] == k * steps
    if k:
        assert J[TK.J_CKPT_DUE] - J[TK.J_T] == P[TK.P_PERIOD_US]
        assert J[TK.J_CKPT_DUE_STEP] - J[TK.J_STEPS_DONE] == P[TK.P_CKPT_EVERY]
    # no cycle with a death pending, nor away from a cycle's start
    for state in ({"Q_N_PEND": 1}, {"J_T": 1}):
        P, PF, job, Q = _cycle_start(cfg, **state)
        assert job_steps.ckpt_cycles(np.int64(10**15), P, PF, job, Q, None) == 0


@pytest.mark.parametrize("state, k", [
    ({"J_SINCE_REMOTE": 2}, 1),                      # remote_every = 4: the third memory checkpoint, then the remote
    ({"J_SINCE_REMOTE": 3}, 0),                      # the next checkpoint is the remote one: the loop's
    ({"J_SINCE_REMOTE": 5}, 0),                      # past it (a remote save postponed while one was in flight)
    ({"J_PERSIST_END": 10**9}, 0),                   # a save in flight slows the steps: not a plain cycle
])
def test_memory_cycles_stop_before_the_remote_save(state, k):
    """With in-memory copies (``remote_every = 4``), the memory-only cycles from a later point of the remote period:
    as many as are left before the remote save, none while a save is in flight."""
    cfg = TimelineConfig("ckpt", 12, **{**BASE, "n_steps": 40, "ckpt_period_s": 30.0, "memory_copies": 2,
                                        "remote_every": 4, "memory_save_s": 2.0, "ckpt_async": True})
    P, PF, job, Q = _cycle_start(cfg, **state)
    assert job_steps.ckpt_cycles(np.int64(10**15), P, PF, job, Q, None) == k
    assert job.J[TK.J_SINCE_REMOTE] == state.get("J_SINCE_REMOTE", 0) + k
    assert job.res[TK.R_CHECKPOINTS] == k and job.J[TK.J_T] == k * 35 * US
