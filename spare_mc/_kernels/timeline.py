"""Numba kernel of the time-to-train timeline (private; the model is specified in :mod:`spare_mc.ttt.run`).

All times are integer microseconds, so that jumping over a quiet stretch of ``m`` identical steps (``t += m D``)
gives exactly the same clock as stepping through them one by one -- the property the SimPy twin checks.

Entry point and steps
---------------------
``timeline(P, PF, holders, live0, gset, ssize, gaps, victims, uscale, dptr, dgroups, life, rng, rrng, res)``
simulates one job into ``res`` and returns 0, or -1 if ReCtlr found no assignment where one must exist (a bug).
``holders`` is SPARe's holder table (the others read only its shape), ``live0`` SPARe's fully live ReCtlr state on
it (:func:`live_state`, built once per layout by the caller; or empty, and the kernel builds it), ``gset`` /
``ssize`` Rep's replica sets (the set of each group, the size of each set; empty otherwise). It builds the state,
then :func:`_job` runs the model's loop:

1. :func:`_quiet_stretch` -- the failure-free steps before the next failure (:func:`_src_next_time`) in O(1): an
   exact jump without jitter, normal sums with jitter (none while dead groups are pending); if none fits, one
   explicit step:
2. :func:`_step_compute` -- its compute phase, ``S`` stack layers;
3. :func:`_src_take_until` -- the failures that arrive up to its all-reduce kill their groups;
4. :func:`_detect` -- the all-reduce detects them: SPARe runs ReCtlr, Rep counts live set members, CKPT-only wipes
   out;
5. on a wipe-out :func:`_wipeout`: :func:`_global_restart`, then :func:`_src_restart` (or
   :func:`_src_restart_again`) and the stacks' reset; else
   :func:`_finish_step` (ReCtlr and shrink, patch, all-reduce);
6. :func:`_checkpoint_if_due`, after a step or a stretch (with ``P_CKPT_LOST``, :func:`_src_kills_within` says
   whether a failure arrived during the save);

and after the loop :func:`_src_tail`: the failures after the last detection still hit the running job.

Blocks (int64 arrays unless said; the slots are constants of this module)
-------------------------------------------------------------------------
``P``, the parameters (``N_P`` slots, filled by the caller, read only):

- ``P_STRATEGY``: ``STRAT_CKPT``, ``STRAT_REP`` or ``STRAT_SPARE``;
- ``P_N_GROUPS``, ``P_R``: ``N`` and ``r`` (SPARe's ``holders`` is ``N x r``); ``P_N_STEPS``: the steps of the job;
- the nominal durations ``P_COMP_US`` (one stack layer), ``P_AR_US`` (all-reduce), ``P_RESTART_US``,
  ``P_SAVE_US`` (a checkpoint), ``P_PERIOD_US`` (the checkpoint period ``T_c``), ``P_SHRINK_US``, ``P_RECTLR_US``;
- ``P_CAP_US``: the wall-clock cap (no step starts once the clock has passed it);
- the failure source: ``P_SOURCE`` (``SRC_SYSTEM`` or ``SRC_UNITS``), ``P_LIVE_SCALING`` (0/1, system source),
  ``P_KEEP_AGES`` (0/1, unit clocks: keep ages instead of renewing them at a restart), ``P_N_GROUP_UNITS`` (unit
  clocks: 0, or ``N`` if units ``0 .. N-1`` are the groups), ``P_N_UNITS``, ``P_UNIT_RACE`` (0/1: the race) and the
  ``N_CLASSES`` slots from ``P_CLASS_END`` (the end of each of the race's classes; unit clocks);
- Rep: ``P_REP_COMP_US`` (the nominal step compute ``round(N T_comp / n_sets)``) and ``P_REP_LAYERS`` (``r`` when
  that is ``r T_comp`` exactly, else 0);
- the options (docs/model.md section 8; defaults 0 = the model without them): ``P_REP_COST`` (``REP_SHRINK``,
  ``REP_REDO_STEP``, ``REP_RESYNC``) and ``P_RESYNC_US``, ``P_MASKED_DETECT_US``, ``P_PATCH_COST``
  (``PATCH_PER_SHARD``, ``PATCH_NONE``, ``PATCH_WHOLE_STEP``), ``P_STAY_DEAD`` (0/1: failures during a restart kill
  groups that stay dead), ``P_CKPT_EVERY`` (``k``: a checkpoint every ``k`` steps; ``HORIZON_US`` = never, and then
  ``P_PERIOD_US`` is the time rule; by steps the caller sets ``P_PERIOD_US = HORIZON_US``), ``P_CKPT_LOST`` (0/1: a
  failure during a save makes it unusable), ``P_DETECT_IMMEDIATE`` (0/1, CKPT-only: a failure stops the step or save
  in progress when it arrives and wipes out), ``P_RESTART_AGAIN`` (0/1: a failure during a restart starts it again),
  ``P_FINAL_CKPT`` (0/1: a checkpoint after the last step too). The last three are the classical model's rules.
  ``P_CKPT_POLICY`` (``POLICY_*``: periodic, or a dynamic period from the wipe-out hazard, with the constants
  ``PF_LAM_S .. PF_RESTART_S``); ``P_REPAIR`` (``REPAIR_*``), ``P_REPAIR_US``, ``P_REJOIN_CKPT``, ``P_REJOIN_US``
  (repair of failed groups without a global restart; lognormal with ``PF_REPAIR_MU``, ``PF_REPAIR_SIGMA``, drawn
  from the kernel's second generator ``rrng``). Checkpointing as practised today (docs/model.md section 6.6a):
  ``P_LOAD_US`` (loading from remote storage, added to ``P_RESTART_US`` at a restart), ``P_MEM_COPIES`` (``m``
  groups keep each checkpoint in memory, ``GB_MEMCOPY``), ``P_REMOTE_EVERY``, ``P_MEM_SAVE_US``, ``P_MEM_LOAD_US``,
  ``P_ASYNC`` (remote saves in the background, compute slowed by ``PF_ASYNC_F``).

``PF``, the float parameters (``N_PF``): ``PF_JITTER_SD``, the standard deviation of the multiplicative jitter.

``J``, the job (``N_J``): ``J_T`` (the wall clock), ``J_STEPS_DONE`` (progress), ``J_CKPT_STEPS`` (the progress the
last usable checkpoint saved), ``J_CKPT_DUE`` (the wall time from which a checkpoint is due after a step: ``T_c``
after the end of the last checkpoint or restart), ``J_CKPT_DUE_STEP`` (the progress from which one is due: ``k``
steps after it), ``J_S`` (compute layers per step: ReCtlr's ``S`` for SPARe, ``r`` for Rep, 1 for CKPT-only),
``J_C_NOM`` (a step's nominal compute: ``S T_comp``, Rep's ``P_REP_COMP_US``), ``J_STATUS`` (``STATUS_*``);
``J_REMOTE_STEPS`` (the progress the last remote checkpoint saved; ``J_CKPT_STEPS`` is the last checkpoint of any
kind), ``J_PERSIST_END`` / ``J_PERSIST_STEPS`` (an asynchronous save in flight: when it completes and the progress it
saves; -1 when none), ``J_SINCE_REMOTE`` (memory-only checkpoints since the last remote one), ``J_RESTART_BASE`` (the
nominal length of the restart in progress: ``P_RESTART_US`` plus the load).

``W``, the work since the last checkpoint (``N_W``): ``W_USEFUL, W_REDUNDANT, W_PATCH, W_ALLREDUCE, W_RECTLR``,
aligned with the results (``R_USEFUL + W_x == R_x``): kept at a checkpoint (or the end), lost at a wipe-out. Two more
blocks follow it: ``W_MEM`` (kept by in-memory checkpoints only: lost at a remote fallback) and ``W_PERSIST`` (to be
kept when the asynchronous save in flight completes).

``res`` (``N_RES``): the ``R_*`` results (times in microseconds); ``res[R_STATUS]`` is one of ``STATUS_*``;
``res[R_CKPTS_LOST]`` counts the checkpoints a failure made unusable (they count in ``R_CHECKPOINTS`` too).

The redundancy state is the blocks ``E, G, D, H, meta, ulog, pplan, out`` of :mod:`spare_mc._kernels.rectlr`
(ReCtlr, built for SPARe only) and the fully live state ``gstk0, epos0, own0, load0, s0`` a restart returns to;
Rep's is ``slive``, the live members of each replica set (back to ``ssize`` at a restart); CKPT-only has none.

Failure source
--------------
Its state: ``Q`` (``N_Q``): ``Q_N_UP`` (live groups), ``Q_N_PEND`` (dead groups not detected yet), ``Q_IA``
(arrivals consumed), ``Q_REM`` (operational units left until the next arrival, counted from the wall time
``Q_T_REF``), ``Q_IL`` (lifetimes drawn);
``GB`` (``N_GB x max(N + 1, 2 ceil(N / 64) + 1)``), rows ``GB_LIVE`` (the live groups as a bitset with a Fenwick
tree of its words' counts, for the system source's rank select: :func:`_live_take`), ``GB_UP`` (1 = live),
``GB_PEND`` (the pending dead groups ``GB[GB_PEND, :Q[Q_N_PEND]]`` in the order they died); ``next_t`` (unit
clocks). The loop calls only these five, whatever the model; each branches on ``P[P_SOURCE]`` inside:

- :func:`_src_init` -- a new system at time 0;
- :func:`_src_next_time` -- the time of the next failure: ``_NEVER`` if none can come, ``TRACE_OUT`` if the trace
  ran out;
- :func:`_src_take_until` -- every failure up to a time kills its groups, which become pending;
- :func:`_src_restart` -- a global restart: the failures during it are absorbed, every group is back (with
  ``P_STAY_DEAD``, :func:`_src_restart_stay_dead`: they kill groups, which stay dead and pending);
- :func:`_src_tail` -- the failures after the last detection and before the end are counted.

Each of the others returns ``STATUS_OK``, or ``STATUS_TRACE`` when the trace ran out (the caller reruns with a
longer one; the results of such a run are meaningless).

System-level renewal trace (``SRC_SYSTEM``; no random numbers are drawn here except the optional jitter):

- ``gaps[i]`` is the ``i``-th inter-arrival in **operational units** (group-microseconds). The operational clock
  runs at ``rate`` units per microsecond: the number of live groups with live scaling, else ``N``; during a global
  restart it runs at ``N``. Between rate changes the next arrival happens at ``t_ref + ceil(rem / rate)``, with
  ``rem`` its gap minus the operational time run since the previous arrival (banked at each rate change).
- ``victims[i]`` in ``[0, 2^32)`` picks the live group of rank ``(victims[i] * n_live) >> 32`` (ranks in increasing
  group index); with no live group (possible only without live scaling) the arrival hits nothing. Every arrival
  consumes one entry, also when it is absorbed by a restart or hits nothing.

Unit clocks (``SRC_UNITS``: per-GPU lifetimes and/or failure domains) instead: unit ``u`` (groups ``0..n_gu-1``
first, then the domains of each level of the model, ``dptr``/``dgroups`` concatenated) fails at its absolute time
``next_t[u]``; a new lifetime is ``max(1, rint(uscale[u] *
life[il]))`` microseconds with ``life`` the next entry of a stream of standard Weibull variates, drawn in unit order.
A group unit kills its group; a domain unit kills every live group it touches; a unit that fired is inactive until
the next restart. At a restart the units that would fire during it are absorbed, and lifetimes are redrawn from its
end: every unit (``keep=False``, "renew") or only the inactive and absorbed ones (``keep=True``, "keep ages").
Ties fire the lowest unit first. Only :func:`_units_redraw` and :func:`_units_fire` write ``next_t`` and only
:func:`_units_min` searches it (the place for a heap). Sampled as a race (``P_UNIT_RACE``, "renew" only) the units
form classes of one rate each -- the groups, then each level's domains (``P_CLASS_END``, at most ``N_CLASSES``) --
and the next failure is drawn from the classes' active counts and rates (:func:`_race_schedule`,
:func:`_race_pick`) instead of ``next_t``.

The horizon
-----------
A gap or lifetime beyond ``HORIZON_US = 2^61`` (73,000 years in microseconds; group-microseconds for a gap) is
clamped to it (``make_trace`` clips the gaps before converting them to integers; :func:`_units_redraw` the
lifetimes; :func:`_sys_consume` gaps given directly), so it never happens within the job instead of overflowing.
The argument, given that every wall time of a job stays below ``2^61`` us (the caller's duty: the cap
``max_wall_factor x T0`` and the durations must stay far below it):

- a unit's failure time is ``t_from + lifetime < 2^61 + 2^61 = 2^62`` (``_NEVER``, an inactive unit) ``< 2^63``;
- the system clock never accumulates operational time: ``Q_REM`` is one gap minus the operational time run since
  the previous arrival, ``0 < rem <= 2^61``, and banking subtracts ``rate x elapsed < rem`` (the arrival is still
  ahead), so no product overflows and the arrival ``t_ref + ceil(rem / rate) <= t_ref + rem < 2^62``;
- a failure time is otherwise only compared with the clock or has the clock subtracted from it (the stretches).

A saturated lifetime still fails ``2^61`` us after it was drawn: never within a job. A saturated gap lasts at least
``2^61 / N`` us of wall time (the clock runs at most at ``N`` units per microsecond): 73 years at ``N = 1000``,
38 hours at the largest ``N = 2^24`` -- the range of the integer group-microsecond trace.

Options and extending
---------------------
An option is a ``P_*`` slot read where it acts: the cost of a masked failure (``P_REP_COST``, ``P_RESYNC_US``,
``P_MASKED_DETECT_US``) and the patch mode (``P_PATCH_COST``) in :func:`_detect`; groups that stay dead through a
restart (``P_STAY_DEAD``) in :func:`_src_restart`; checkpoints every ``k`` steps (``P_CKPT_EVERY``, also honoured by
the stretches through ``J_CKPT_DUE_STEP``) or lost to a failure (``P_CKPT_LOST``) in :func:`_checkpoint_if_due`;
the dynamic period in :func:`_dynamic_threshold_us` (read by :func:`_checkpoint_if_due` and
:func:`_stretch_exact`; the critical groups it needs are kept by :func:`_detect`, :func:`_crit_reset` and
:func:`_crit_mark`); repair in :func:`_repair_schedule` (at a masked detection) and :func:`_rejoin` (at a step
boundary, or after a save), the stretches stopping at the first boundary a repair is done by (``J_NEXT_READY``);
immediate detection (``P_DETECT_IMMEDIATE``) in the explicit step of :func:`_job`, in :func:`_checkpoint_if_due`
(an interrupted save) and in :func:`_stretch_exact` (whole steps before the failure); restarts started again
(``P_RESTART_AGAIN``) in :func:`_src_restart_again`, called by :func:`_wipeout`; the final checkpoint
(``P_FINAL_CKPT``) in :func:`_checkpoint_if_due` and the loop's condition; in-memory copies and asynchronous saves
in :func:`_checkpoint_tiered` (the save), :func:`_persist_done` (a save completes), :func:`_async_extra` (the slowed
compute of an explicit step; no stretch while a save is in flight) and :func:`_global_restart` (memory or remote).
Each is 0 by default and then costs one predictable branch. Deaths taken but not detected at the top of the loop
(after a ``P_STAY_DEAD`` restart or a ``P_CKPT_LOST`` save) force an explicit step. Next: dynamic periods where
``J_CKPT_DUE`` is set (:func:`_checkpoint_if_due`, :func:`_global_restart`); restart times growing with ``N`` are
the caller's (``P_RESTART_US``).

Compilation (each function has one signature and is cached)
-----------------------------------------------------------
- Only :func:`timeline` (and :func:`live_state`, an entry point of its own) allocates; everything else is
  compiled without the numba runtime (``_nrt=False``). With it, an array argument costs an atomic reference-count
  increment and decrement per call whenever the callee branches (numba's pruning only removes them in
  straight-line code): about 15 ns per array and call here, which made a first version of this split 5x slower on
  Rep+CKPT.
- The steps the loop runs at every iteration are inlined into :func:`_job` (``inline="always"``), which passes
  dozens of arrays a call would push on the stack: the loop compiles to one function, as before the split.
- A callee inherits ``_nrt=False`` unless it sets the option. ReCtlr's per-failure path (``rectlr_step``) is
  compiled without the runtime too; the one allocation it may need, a longer undo log, happens in
  ``_phases12_grown`` of :mod:`spare_mc._kernels.rectlr`, which declares ``_nrt=True`` itself (as does
  ``reset_state``), so that whoever calls them gets the runtime variant (numba's cache key does not record the flag,
  so a variant compiled without it must never exist).
- The price: :func:`_job` is a library of its own, which numba optimizes once alone and once more inside
  :func:`timeline`, so a first (uncached) compile takes ~2.5 s longer than the single-function kernel did.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import rectlr as _rk
from .cache import drop_if_dependencies_changed

# the cached kernels of this module contain ReCtlr's and the wipe-out kernels' code: recompile them when those change
drop_if_dependencies_changed(__file__, ("rectlr.py", "draws.py"))

STRAT_CKPT, STRAT_REP, STRAT_SPARE = 0, 1, 2
SRC_SYSTEM, SRC_UNITS, SRC_LOG = 0, 1, 2

(R_TTT, R_USEFUL, R_REDUNDANT, R_PATCH, R_ALLREDUCE, R_RECTLR, R_CKPT, R_RESTART, R_LOST, R_FAILURES, R_ABSORBED,
 R_WIPEOUTS, R_CHECKPOINTS, R_DETECTIONS, R_STEPS_RUN, R_SUM_S, R_STATUS, R_STEPS_DONE, R_LOOPS, R_ARRIVALS,
 R_PATCH_SHARDS, R_S_MAX, R_CKPTS_LOST, R_REJOINS, R_MEM_RESTARTS, R_FALLBACKS, R_ASYNC_SLOW) = range(27)
N_RES = 27
#: ``res[R_STATUS]``: finished, stopped at the wall-clock cap, ran out of failure trace (extend it and rerun)
STATUS_OK, STATUS_CAPPED, STATUS_TRACE = 0, 1, 2

# the parameters
(P_STRATEGY, P_N_GROUPS, P_R, P_N_STEPS, P_COMP_US, P_AR_US, P_RESTART_US, P_SAVE_US, P_PERIOD_US, P_SHRINK_US,
 P_RECTLR_US, P_CAP_US, P_SOURCE, P_LIVE_SCALING, P_KEEP_AGES, P_N_GROUP_UNITS, P_REP_COMP_US, P_REP_COST,
 P_RESYNC_US, P_MASKED_DETECT_US, P_PATCH_COST, P_STAY_DEAD, P_CKPT_EVERY, P_CKPT_LOST, P_REP_LAYERS,
 P_DETECT_IMMEDIATE, P_RESTART_AGAIN, P_FINAL_CKPT, P_CKPT_POLICY, P_REPAIR, P_REPAIR_US, P_REJOIN_CKPT,
 P_REJOIN_US, P_UNIT_RACE, P_N_UNITS, P_MEM_COPIES, P_REMOTE_EVERY, P_MEM_SAVE_US, P_MEM_LOAD_US, P_LOAD_US,
 P_ASYNC) = range(41)
#: the race's classes of units (``P_UNIT_RACE``): the group units, then the domain units of each level of the model
#: (at most four: node, rack, power, pod); class ``c`` is the units ``[P[P_CLASS_END + c - 1], P[P_CLASS_END + c])``
#: (from 0 for ``c = 0``), the classes a model does not use are empty
N_CLASSES = 5
P_CLASS_END = 41
N_P = P_CLASS_END + N_CLASSES
#: ``P[P_REPAIR]``: failed groups are not repaired (they come back at the next global restart), or repaired after a
#: fixed or a lognormal time and brought back without a restart, or (log replay) back when the log says (``GB_BACK``)
REPAIR_NONE, REPAIR_FIXED, REPAIR_LOGNORMAL, REPAIR_LOG = 0, 1, 2, 3
#: ``P[P_CKPT_POLICY]``: when a checkpoint is due
POLICY_PERIODIC, POLICY_HAZARD, POLICY_YOUNG_HAZARD = 0, 1, 2
#: ``P[P_REP_COST]``: what a masked failure costs Rep (besides ``P_MASKED_DETECT_US``)
REP_SHRINK, REP_REDO_STEP, REP_RESYNC = 0, 1, 2
#: ``P[P_PATCH_COST]``: SPARe's patch compute at a masked detection
PATCH_PER_SHARD, PATCH_NONE, PATCH_WHOLE_STEP = 0, 1, 2
#: the jitter; the dynamic policies' constants: the system process's Weibull scale in wall seconds for the full
#: system (``lambda = m / Gamma(1 + 1/k)``), its shape, the period factor, ``T_s`` and ``T_r`` in seconds
#: the race of renewed unit clocks (``P_UNIT_RACE``): ``1 / k``, and from ``PF_RATE`` the hazard rate of a unit of
#: each class in the clock ``sigma = (t - t0)^k`` (``scale^-k``, microseconds^-k; ``N_CLASSES`` slots)
#: asynchronous saves (``P_ASYNC``): the slowdown factor ``f`` of compute while a save runs, and ``(f - 1) / f``
(PF_JITTER_SD, PF_LAM_S, PF_SHAPE, PF_FACTOR, PF_SAVE_S, PF_RESTART_S, PF_REPAIR_MU, PF_REPAIR_SIGMA, PF_INV_K,
 PF_ASYNC_F, PF_ASYNC_G) = range(11)
PF_RATE = 11
N_PF = PF_RATE + N_CLASSES
# the job
J_T, J_STEPS_DONE, J_CKPT_STEPS, J_CKPT_DUE, J_S, J_STATUS, J_CKPT_DUE_STEP, J_C_NOM, J_LAST_CK, J_N_KNOWN, \
    J_N_CRIT, J_NEXT_READY, J_REMOTE_STEPS, J_PERSIST_END, J_PERSIST_STEPS, J_SINCE_REMOTE, J_RESTART_BASE = range(17)
N_J = 17
# the work since the last checkpoint, aligned with res[R_USEFUL .. R_RECTLR]; ``W`` holds three such blocks: the work
# since the last checkpoint (``W[:N_W]``), the work kept by in-memory checkpoints only (``W[W_MEM:W_MEM + N_W]``)
# and the work an asynchronous save in flight will keep (``W[W_PERSIST:W_PERSIST + N_W]``)
W_USEFUL, W_REDUNDANT, W_PATCH, W_ALLREDUCE, W_RECTLR = range(5)
N_W = 5
W_MEM, W_PERSIST = N_W, 2 * N_W
assert (R_USEFUL, R_REDUNDANT, R_PATCH, R_ALLREDUCE, R_RECTLR) == tuple(R_USEFUL + w for w in range(N_W))
# the failure source: its scalars and the rows of its group block
# (``Q_M + c``: the race's active units of class ``c``; ``Q_M_FROM + c``: those counts when a restart under
# ``P_STAY_DEAD`` started)
Q_N_UP, Q_N_PEND, Q_IA, Q_REM, Q_T_REF, Q_IL, Q_T_LAST, Q_T0, Q_T_NEXT, Q_N_OFF = range(10)
Q_M = 10
Q_M_FROM = Q_M + N_CLASSES
N_Q = Q_M_FROM + N_CLASSES
GB_LIVE, GB_UP, GB_PEND, GB_CRIT, GB_TCRIT, GB_READY, GB_LIST, GB_MEMCOPY, GB_BACK = range(9)
N_GB = 9
# the unit clocks' block (rows of ``N_UB x 2 S``, ``S`` the least power of two >= the number of units; for the race,
# which has no tree, ``N_UB x`` the number of units): the tournament tree over ``next_t`` (1-based, leaves at
# ``S + u``), and the race's units by class (active first) with each unit's position; the race's float state (the
# clock sigma at the last arrival, at the next one), ``1 / k`` and the rate of a unit of each class (``UF_RATE + c``)
UB_TOUR, UB_PERM, UB_POS, UB_TMP = range(4)
N_UB = 4
UF_SIGMA, UF_SIGMA_NEXT, UF_INV_K = range(3)
UF_RATE = 3
N_UF = UF_RATE + N_CLASSES

#: the longest gap (group-microseconds) or lifetime (microseconds): beyond it, a failure never happens (see above)
HORIZON_US = np.int64(1) << 61
_HORIZON_F = float(HORIZON_US)
_NEVER = np.int64(1) << 62
#: a unit that fired before a restart under ``P_STAY_DEAD``: inactive through it (above ``_NEVER``, so never the
#: earliest), redrawn at its end
_PARKED = _NEVER + 1
#: ``GB_READY`` of a group known dead that no repair brings back (``REPAIR_LOG``, a log event without a repair
#: time): never ready, but still dead when ReCtlr is rebuilt at a rejoin (``_NEVER`` there means "not dead")
_DEAD_KEPT = _NEVER - 1
_I64_MAX = np.int64(np.iinfo(np.int64).max)
#: :func:`_src_next_time` when the system trace ran out
TRACE_OUT = np.int64(-1)

#: a function of the source or a helper: no allocation, so no runtime (see "Compilation" above)
_kernel = njit(cache=True, _nrt=False)
#: a step the loop runs at every iteration, or a small helper of one: inlined into its callers (numba inlines the
#: source, so these have no compiled code of their own unless called from Python)
_step = njit(cache=True, _nrt=False, inline="always")
#: ReCtlr's step and the stacks' reset set their own runtime flag (in :mod:`spare_mc._kernels.rectlr`: the step runs
#: without it and hands the rare allocation to a function with it), whoever calls them
_rectlr_step = _rk.rectlr_step
#: ``from_scratch=False`` as a plain bool, not the literal ``False``: the same compiled ``rectlr_step`` as
#: ``ReCtlr.fail`` and the overhead drivers use (a literal compiles one more; see ``_rectlr_kernels._Z``)
_NOT_FROM_SCRATCH = np.bool_(False)
_reset_state = _rk.reset_state


# ------------------------------------------------------------------------------------------------------ helpers
@_step
def _dur(base_us, jit_sd, rng):
    """A duration with multiplicative jitter ``Normal(1, jit_sd^2)`` (clipped at 0), rounded to microseconds.

    Inlined: without jitter (the common case, and the benchmarks') it is a test, not a call that passes the
    generator (1% of the paper's SPARe timeline, 2026-12-04); the draw is :func:`_dur_jittered`'s."""
    if jit_sd == 0.0 or base_us == 0:
        return base_us
    return _dur_jittered(base_us, jit_sd, rng)


@_kernel
def _dur_jittered(base_us, jit_sd, rng):
    """:func:`_dur` with jitter (``jit_sd > 0``, ``base_us != 0``)."""
    x = base_us * rng.normal(1.0, jit_sd)
    if x <= 0.0:
        return np.int64(0)
    return np.int64(np.round(x))


@_kernel
def _keep_block(W, off, res):
    """The work of the block of ``W`` at ``off`` is kept: moved into ``res[R_USEFUL .. R_RECTLR]`` (0: the work
    since the last checkpoint; ``W_MEM``, ``W_PERSIST``)."""
    for i in range(N_W):
        res[R_USEFUL + i] += W[off + i]
        W[off + i] = 0


@_kernel
def _move_block(W, src, dst):
    """Add the block of ``W`` at ``src`` to the one at ``dst`` and empty it."""
    for i in range(N_W):
        W[dst + i] += W[src + i]
        W[src + i] = 0


@_kernel
def _mul_div(a, b, d):
    """``floor(a b / d)`` for ``0 <= a < d < 2^62`` and ``b >= 0`` without overflowing int64 (the result is below
    ``b``): one product when it fits, else binary long multiplication keeping ``q d + rm`` equal to the product of
    ``a`` and the bits of ``b`` read so far, ``0 <= rm < d``."""
    if b == 0 or a <= _I64_MAX // b:
        return a * b // d
    q = np.int64(0)
    rm = np.int64(0)
    for bit in range(62, -1, -1):
        q <<= 1
        rm <<= 1
        if rm >= d:
            rm -= d
            q += 1
        if (b >> bit) & 1:
            rm += a
            if rm >= d:
                rm -= d
                q += 1
    return q


_SAFETY_SD = 12.0


@_kernel
def _max_steps_within(room, d, v):
    """Largest m >= 0 with ``m d + 12 sqrt(m v) < room``: m steps of mean ``d`` and variance ``v`` each fit in
    ``room`` beyond 12 standard deviations (probability of overrun < 1e-32)."""
    if room <= 0.0:
        return 0
    k = _SAFETY_SD
    x = (-k * np.sqrt(v) + np.sqrt(k * k * v + 4.0 * d * room)) / (2.0 * d)
    m = int(x * x)
    while m > 0 and m * d + k * np.sqrt(m * v) >= room:
        m -= 1
    while (m + 1) * d + k * np.sqrt((m + 1) * v) < room:
        m += 1
    return m


@_kernel
def _dynamic_threshold_us(t, t_last, P, PF, J):
    """The dynamic policy's period at wall time ``t`` (microseconds, rounded, as a float; ``inf`` = not due):
    ``f x (T_s + sqrt(T_s^2 + 2 T_s (T_f + T_r)))`` (``POLICY_HAZARD``) or ``f sqrt(2 T_s T_f)``
    (``POLICY_YOUNG_HAZARD``) with ``T_f`` the inverse of the instantaneous wipe-out hazard: the system's Weibull
    hazard at the wall time since the last failure (at ``t_last``; the job start counts as one), scaled to the known
    live groups (live scaling), times the share of known live groups whose failure would wipe out
    (``J_N_CRIT / J_N_KNOWN``): ``T_f = lambda x (N or n_known) / (n_crit x k x (age / lambda)^(k - 1))``."""
    n_crit = J[J_N_CRIT]
    if n_crit <= 0:
        return np.inf
    lam = PF[PF_LAM_S]
    k = PF[PF_SHAPE]
    base = k * ((t - t_last) / 1e6 / lam) ** (k - 1.0)
    if not base > 0.0:
        return np.inf
    n_scale = P[P_N_GROUPS] if P[P_LIVE_SCALING] != 0 else J[J_N_KNOWN]
    tf = lam * n_scale / (n_crit * base)
    ts = PF[PF_SAVE_S]
    if P[P_CKPT_POLICY] == POLICY_HAZARD:
        x = ts + np.sqrt(ts * ts + 2.0 * ts * (tf + PF[PF_RESTART_S]))
    else:
        x = np.sqrt(2.0 * ts * tf)
    return np.rint(PF[PF_FACTOR] * x * 1e6)


@_kernel
def _crit_reset(P, E, G, GB, ssize, J):
    """A fully live system (the start, a restart): every group known live; the live groups whose failure would
    wipe out (``J_N_CRIT``): all for CKPT-only, the members of replica sets of one for Rep, the sole holders of a
    type for SPARe (with ``GB_CRIT`` counting each group's types it is the last live holder of, ``GB_TCRIT`` marking
    those types)."""
    n = P[P_N_GROUPS]
    J[J_N_KNOWN] = n
    if P[P_STRATEGY] == STRAT_CKPT:
        J[J_N_CRIT] = n
        return
    if P[P_STRATEGY] == STRAT_REP:
        c = 0
        for b in range(ssize.shape[0]):
            if ssize[b] == 1:
                c += 1
        J[J_N_CRIT] = c
        return
    for g in range(n):
        GB[GB_CRIT, g] = 0
        GB[GB_TCRIT, g] = 0
    J[J_N_CRIT] = 0
    _crit_mark(np.int64(-1), P, E, G, GB, J)


@_kernel
def _crit_mark(g, P, E, G, GB, J):
    """SPARe: after ReCtlr took group ``g``'s death (``g = -1``: every type), each of its types left with one live
    holder makes that holder critical."""
    n, r = P[P_N_GROUPS], P[P_R]
    lo, hi = (0, n) if g < 0 else (G[_rk.GPTR, g], G[_rk.GPTR, g + 1])
    for i in range(lo, hi):
        t = i if g < 0 else E[_rk.STYPE, i]  # the type of stack slot i
        if G[_rk.NLIVE, t] != 1 or GB[GB_TCRIT, t] != 0:
            continue
        GB[GB_TCRIT, t] = 1
        for l in range(r):
            h = E[_rk.EG, t * r + l]
            if G[_rk.ALIVE, h] != 0:
                GB[GB_CRIT, h] += 1
                if GB[GB_CRIT, h] == 1:
                    J[J_N_CRIT] += 1
                break


# ------------------------------------------------------------------------------ failure source: system process
#: the live groups' set (row ``GB_LIVE``): bit ``g & 63`` of word ``g >> 6`` is group ``g``; the words sit at
#: ``W + 1 .. 2 W`` (``W = ceil(N / 64)``) after a Fenwick tree of their bit counts at ``1 .. W``. The words are
#: handled as ``uint64`` (``_U``; numba makes a float of a uint64 and an int64 together, so every operand is cast)
#: and stored as the int64 of the same bits; the hot take indexes with ``_U`` too, which skips numba's
#: negative-index wraparound (as in :mod:`spare_mc._kernels.rectlr`)
_U = np.uint64
_M1, _M2, _M4 = _U(0x5555555555555555), _U(0x3333333333333333), _U(0x0F0F0F0F0F0F0F0F)
_L8, _H8 = _U(0x0101010101010101), _U(0x8080808080808080)
#: ``_SEL8[8 b + j]``: the position of the ``j``-th set bit of the byte ``b``
_SEL8 = np.zeros(256 * 8, np.uint8)
for _b in range(256):
    _j = 0
    for _i in range(8):
        if _b >> _i & 1:
            _SEL8[8 * _b + _j] = _i
            _j += 1
del _b, _i, _j


@_step
def live_set_width(n):
    """Entries of the live-set row for ``n`` groups: ``2 ceil(n / 64) + 1``."""
    return 2 * ((n + 63) >> 6) + 1


@_step
def _select64(x, k):
    """Position of the ``k``-th (0-based) set bit of the word ``x`` (``k`` below its bit count), without a branch:
    the byte counts (a SWAR popcount), their running sums by one multiplication, the bytes whose running sum is
    at most ``k`` counted by a second, then a table of the byte's bits (S. Vigna, "Broadword implementation of
    rank/select queries", WEA 2008)."""
    x = _U(x)
    k = _U(k)
    s = x - ((x >> _U(1)) & _M1)
    s = (s & _M2) + ((s >> _U(2)) & _M2)
    s = (s + (s >> _U(4))) & _M4
    b = s * _L8  # byte i: the set bits of bytes 0..i (at most 64, so no carry)
    le = ((k * _L8 | _H8) - b) & _H8  # the top bit of byte i: its running sum is <= k
    shift = (((le >> _U(7)) * _L8) >> _U(56)) << _U(3)  # 8 x the bytes before the one holding the bit
    kin = k - (((b << _U(8)) >> shift) & _U(0xFF))
    return shift + _U(_SEL8[((x >> shift) & _U(0xFF)) * _U(8) + kin])


@_kernel
def _live_fill(T, n):
    """Every one of the ``n`` groups is live."""
    w = (n + 63) >> 6
    for i in range(1, w + 1):
        T[i] = 0
    for i in range(1, w + 1):  # Fenwick's linear build: node i is complete when it is added to its parent
        bits = min(64, n - 64 * (i - 1))
        T[i] += bits
        j = i + (i & -i)
        if j <= w:
            T[j] += T[i]
        T[w + i] = np.int64(-1) if bits == 64 else (np.int64(1) << bits) - 1


@_step
def _live_count_add(T, w, word, delta):
    """Add ``delta`` to the count of word ``word`` (0-based) in the Fenwick tree ``T[1 .. w]``."""
    i = word + 1
    while i <= w:
        T[_U(i)] += delta
        i += i & -i


@_kernel
def _live_add(T, n, g):
    """Group ``g`` is live again (nothing to do if it is in the set: the unit and log sources kill groups without
    taking them out, and their rejoins come here too)."""
    w = (n + 63) >> 6
    word = g >> 6
    x = _U(T[w + 1 + word])
    bit = _U(1) << _U(g & 63)
    if x & bit:
        return
    T[w + 1 + word] = np.int64(x | bit)
    _live_count_add(T, w, word, 1)


@_step
def _live_take(T, n, rank):
    """Remove and return the live group of 0-based ``rank`` (in increasing index), ``rank`` below the live count:
    a descent of the words' Fenwick tree (O(log(N / 64))) and a select in the word. The same group as a rank
    select over the groups one by one (``tests/test_timeline.py`` checks it against a sorted list)."""
    w = (n + 63) >> 6
    pos = 0
    rem = rank
    step = 1
    while step * 2 <= w:
        step *= 2
    while step > 0:
        nxt = pos + step
        if nxt <= w:
            c = T[_U(nxt)]
            if c <= rem:
                pos = nxt
                rem -= c
        step >>= 1
    x = _U(T[_U(w + 1 + pos)])  # the word of 0-based index pos holds the group
    bit = _select64(x, _U(rem))
    T[_U(w + 1 + pos)] = np.int64(x & ~(_U(1) << bit))
    _live_count_add(T, w, pos, -1)
    return pos * 64 + np.int64(bit)


@_kernel
def _all_live(GB, n):
    """Every group is live (the system source's live set and the ``GB_UP`` row)."""
    _live_fill(GB[GB_LIVE], n)
    for g in range(n):
        GB[GB_UP, g] = 1


@_kernel
def _sys_rate(P, Q):
    """Operational units per microsecond outside restarts: the live groups with live scaling, else ``N``."""
    return Q[Q_N_UP] if P[P_LIVE_SCALING] != 0 else P[P_N_GROUPS]


@_kernel
def _sys_arrival(Q, rate):
    """Wall time of the next arrival if the operational clock runs at ``rate`` (``_NEVER`` if it stands still)."""
    if rate <= 0:
        return _NEVER
    return Q[Q_T_REF] + (Q[Q_REM] + rate - 1) // rate


@_kernel
def _sys_consume(t_f, Q, gaps):
    """The next arrival happens at wall time ``t_f``: it becomes the reference point of the operational clock, and
    the following gap is queued (clamped at the horizon)."""
    Q[Q_T_REF] = t_f
    Q[Q_T_LAST] = t_f
    Q[Q_IA] += 1
    if Q[Q_IA] < gaps.shape[0]:
        Q[Q_REM] = min(gaps[Q[Q_IA]], HORIZON_US)


# ---------------------------------------------------------------------------------- failure source: unit clocks
#: a victim draw in [0, 2^32) as a fraction of 1
_INV_2_32 = 1.0 / 4294967296.0


@_kernel
def _tour_val(next_t, u):
    """The failure time a tournament node compares: a padding leaf (``-1``) never wins."""
    return next_t[u] if u >= 0 else _I64_MAX


@_kernel
def _tour_build(next_t, UB):
    """Every node of the tournament tree from the leaves: node ``i`` holds the unit with the earliest time below it,
    the lower index on a tie (the left child's units have the lower indices). O(units)."""
    tour = UB[UB_TOUR]
    s = tour.shape[0] // 2
    nu = next_t.shape[0]
    for i in range(s):
        tour[s + i] = i if i < nu else -1
    for i in range(s - 1, 0, -1):
        a, b = tour[2 * i], tour[2 * i + 1]
        tour[i] = a if _tour_val(next_t, a) <= _tour_val(next_t, b) else b


@_kernel
def _tour_update(next_t, UB, u):
    """Unit ``u``'s time changed: replay the matches on its path to the root. O(log units)."""
    tour = UB[UB_TOUR]
    i = (tour.shape[0] // 2 + u) >> 1
    while i >= 1:
        a, b = tour[2 * i], tour[2 * i + 1]
        tour[i] = a if _tour_val(next_t, a) <= _tour_val(next_t, b) else b
        i >>= 1


@_kernel
def _units_min(next_t, UB, UF):
    """(earliest unit time, its unit) from the root of the tournament tree: the lowest index wins a tie;
    ``(_NEVER, -1)`` if every unit is inactive. O(1)."""
    w = UB[UB_TOUR, 1]
    if w < 0 or next_t[w] >= _NEVER:
        return _NEVER, np.int64(-1)
    return next_t[w], w


@_kernel
def _units_redraw(t_from, t_end, P, Q, next_t, UB, UF, uscale, life):
    """New lifetimes from ``t_from`` (clamped at the horizon) for every unit, or with kept ages only for the
    inactive ones and those due before ``t_end``; then the tournament tree. Returns ``STATUS_OK`` or
    ``STATUS_TRACE`` (the lifetime stream ran out)."""
    keep = P[P_KEEP_AGES] != 0
    il = Q[Q_IL]
    status = STATUS_OK
    for u in range(next_t.shape[0]):
        if keep and next_t[u] != _NEVER and next_t[u] >= t_end:
            continue
        if il >= life.shape[0]:
            status = STATUS_TRACE
            break
        next_t[u] = t_from + _lifetime_us(uscale[u] * life[il])
        il += 1
    Q[Q_IL] = il
    Q[Q_N_OFF] = 0
    _tour_build(next_t, UB)
    return status


@_kernel
def _heapsort(a, k):
    """Sort ``a[:k]`` in place, ascending (no allocation)."""
    for start in range(k // 2 - 1, -1, -1):
        _sift(a, start, k)
    for end in range(k - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        _sift(a, 0, end)


@_kernel
def _sift(a, i, k):
    while True:
        c = 2 * i + 1
        if c >= k:
            return
        if c + 1 < k and a[c + 1] > a[c]:
            c += 1
        if a[i] >= a[c]:
            return
        a[i], a[c] = a[c], a[i]
        i = c


@_kernel
def _units_redraw_kept(t_from, P, Q, next_t, UB, UF, uscale, life):
    """The end of a restart under "keep" in O(k log units): new lifetimes from ``t_from`` for exactly the ``k``
    units that went inactive since the last redraw (fired, absorbed, or their group died; listed in ``UB_TMP``), in
    unit order -- the same draws as :func:`_units_redraw`, without visiting the other units. Returns
    ``STATUS_OK`` or ``STATUS_TRACE``."""
    k = Q[Q_N_OFF]
    lst = UB[UB_TMP]
    _heapsort(lst, k)
    il = Q[Q_IL]
    for i in range(k):
        if il >= life.shape[0]:
            Q[Q_IL] = il
            return STATUS_TRACE
        u = lst[i]
        next_t[u] = t_from + _lifetime_us(uscale[u] * life[il])
        il += 1
        _tour_update(next_t, UB, u)
    Q[Q_IL] = il
    Q[Q_N_OFF] = 0
    return STATUS_OK


@_kernel
def _lifetime_us(x):
    """A lifetime of ``x`` microseconds as an integer: at least 1, clamped at the horizon (``nan`` too)."""
    return HORIZON_US if not x < _HORIZON_F else max(np.int64(1), np.int64(np.rint(x)))


@_kernel
def _race_rate(UF, Q):
    """The race's total hazard rate in the clock sigma: ``sum_c m_c rate_c`` over the classes (group units, then
    each level's domain units) in class order."""
    rate = Q[Q_M] * UF[UF_RATE]
    for c in range(1, N_CLASSES):
        rate += Q[Q_M + c] * UF[UF_RATE + c]
    return rate


@_kernel
def _class_start(P, c):
    """The first unit of the race's class ``c``."""
    return np.int64(0) if c == 0 else P[P_CLASS_END + c - 1]


@_kernel
def _class_of(P, u):
    """The race's class of unit ``u``."""
    c = 0
    while u >= P[P_CLASS_END + c]:
        c += 1
    return c


@_kernel
def _race_schedule(Q, UF, life):
    """The race's next arrival from the clock value of the last one, ``UF[UF_SIGMA]``: ``sigma' = sigma + E /
    rate`` with ``E`` the next standard exponential of ``life``, at wall time ``t0 + rint(sigma'^(1/k))`` (at
    least 1 us after ``t0``, clamped at the horizon); ``_NEVER`` with no active unit. Returns ``STATUS_OK`` or
    ``STATUS_TRACE``."""
    rate = _race_rate(UF, Q)
    if not rate > 0.0:
        Q[Q_T_NEXT] = _NEVER
        return STATUS_OK
    il = Q[Q_IL]
    if il >= life.shape[0]:
        return STATUS_TRACE
    Q[Q_IL] = il + 1
    sig = UF[UF_SIGMA] + life[il] / rate
    UF[UF_SIGMA_NEXT] = sig
    Q[Q_T_NEXT] = Q[Q_T0] + _lifetime_us(sig ** UF[UF_INV_K])
    return STATUS_OK


@_kernel
def _race_renew(t_end, P, Q, UB, UF, life):
    """Every unit is new at ``t_end`` (a restart under "renew", or time 0): all active, the clock sigma at 0 from
    ``t0 = t_end``, the next arrival drawn. Returns ``STATUS_OK`` or ``STATUS_TRACE``."""
    _race_reset(t_end, P, Q, UF)
    return _race_schedule(Q, UF, life)


@_kernel
def _race_reset(t_end, P, Q, UF):
    """Every unit active and new at ``t_end`` (no arrival drawn yet)."""
    for c in range(N_CLASSES):
        Q[Q_M + c] = P[P_CLASS_END + c] - _class_start(P, c)
    Q[Q_T0] = t_end
    UF[UF_SIGMA] = 0.0


@_kernel
def _race_off(P, Q, UB, u):
    """Unit ``u`` leaves the active units of its class: it swaps places with the class's last active unit."""
    c = _class_of(P, u)
    slot = Q_M + c
    start = _class_start(P, c)
    p = UB[UB_POS, u]
    last = start + Q[slot] - 1
    if p > last:
        return
    v = UB[UB_PERM, last]
    UB[UB_PERM, p] = v
    UB[UB_POS, v] = p
    UB[UB_PERM, last] = u
    UB[UB_POS, u] = last
    Q[slot] -= 1


@_kernel
def _race_pick(P, Q, UB, UF, victims):
    """The unit of the race's arrival that is due: the victim draw ``x = v 2^-32 rate`` walks the classes in
    order, ``x -= m_c rate_c`` until ``x < m_c rate_c`` (the last class with an active unit takes any rounding
    leftover), then picks the class's active unit of rank ``floor(x / rate_c)``. Returns ``(status, unit)``."""
    ia = Q[Q_IA]
    if ia >= victims.shape[0]:
        return STATUS_TRACE, np.int64(-1)
    Q[Q_IA] = ia + 1
    last = N_CLASSES - 1
    while last > 0 and Q[Q_M + last] == 0:
        last -= 1
    x = victims[ia] * _INV_2_32 * _race_rate(UF, Q)
    c = 0
    while c < last:
        w = Q[Q_M + c] * UF[UF_RATE + c]
        if x < w:
            break
        x -= w
        c += 1
    return STATUS_OK, UB[UB_PERM, _class_start(P, c) + min(np.int64(x / UF[UF_RATE + c]), Q[Q_M + c] - 1)]


@_kernel
def _unit_off(u, P, Q, next_t, UB):
    """Unit ``u`` is inactive until the next restart (its group died, or it fired)."""
    if P[P_UNIT_RACE] != 0:
        _race_off(P, Q, UB, u)
    elif next_t[u] != _NEVER:
        next_t[u] = _NEVER
        _tour_update(next_t, UB, u)
        if P[P_KEEP_AGES] != 0:  # "keep": the restart redraws exactly these (UB_TMP lists them)
            UB[UB_TMP, Q[Q_N_OFF]] = u
            Q[Q_N_OFF] += 1


@_kernel
def _units_next(P, Q, next_t, UB, UF):
    """Time of the next unit failure (``_NEVER`` if none can come)."""
    if P[P_UNIT_RACE] != 0:
        return Q[Q_T_NEXT]
    return _units_min(next_t, UB, UF)[0]


@_kernel
def _units_due(P, Q, next_t, UB, UF, victims):
    """The unit of the next failure, now due. Returns ``(status, unit)``."""
    if P[P_UNIT_RACE] != 0:
        return _race_pick(P, Q, UB, UF, victims)
    return STATUS_OK, _units_min(next_t, UB, UF)[1]


@_kernel
def _units_advance(P, Q, UF, life):
    """After a failure and the units it made inactive: the race draws its next arrival (the others have theirs)."""
    if P[P_UNIT_RACE] == 0:
        return STATUS_OK
    UF[UF_SIGMA] = UF[UF_SIGMA_NEXT]
    return _race_schedule(Q, UF, life)


@_kernel
def _kill_if_live(g, Q, GB):
    """Group ``g`` dies if it is live: it becomes pending. Returns 1 if it did, else 0 (``Q_N_UP`` is the caller's)."""
    if GB[GB_UP, g] == 0:
        return np.int64(0)
    GB[GB_UP, g] = 0
    GB[GB_MEMCOPY, g] = 0  # its memory, and the checkpoint copy in it, are gone
    GB[GB_PEND, Q[Q_N_PEND]] = g
    Q[Q_N_PEND] += 1
    return np.int64(1)


@_kernel
def _units_fire(P, Q, GB, next_t, UB, UF, victims, life, dptr, dgroups):
    """The next unit failure, now due: the unit kills its group, or its domain's live groups; they become pending
    and their own units inactive. Returns the number of groups killed, or -1 if the trace ran out."""
    status, u = _units_due(P, Q, next_t, UB, UF, victims)
    if status != STATUS_OK:
        return np.int64(-1)
    n_gu = P[P_N_GROUP_UNITS]
    killed = 0
    if u < n_gu:  # a group unit is active only while its group is live
        killed = _kill_if_live(u, Q, GB)
    else:
        d = u - n_gu
        for j in range(dptr[d], dptr[d + 1]):
            g = dgroups[j]
            if _kill_if_live(g, Q, GB):
                killed += 1
                if n_gu > 0:
                    _unit_off(g, P, Q, next_t, UB)
    _unit_off(u, P, Q, next_t, UB)
    Q[Q_N_UP] -= killed
    if _units_advance(P, Q, UF, life) != STATUS_OK:
        return np.int64(-1)
    return np.int64(killed)


@_kernel
def _units_absorb(P, Q, next_t, UB, UF, victims, life):
    """The next unit failure, now due, happens during a restart: the unit is inactive until the restart's end, its
    groups are unaffected. Returns ``STATUS_OK`` or ``STATUS_TRACE``."""
    status, u = _units_due(P, Q, next_t, UB, UF, victims)
    if status != STATUS_OK:
        return status
    _unit_off(u, P, Q, next_t, UB)
    return _units_advance(P, Q, UF, life)


# ----------------------------------------------------------------------------------- failure source: a log
@_kernel
def _log_fire(e, P, Q, GB, gaps, victims, dptr, dgroups):
    """Log event ``e`` kills the live groups it touches; they become pending. Returns the number killed.

    With ``REPAIR_LOG`` (``victims`` = the events' repair times, -1 unknown) every group it touches is back no
    earlier than the event's end of repair (``_NEVER`` if unknown): a group it kills gets that time (``GB_BACK``), a
    group already dead keeps the later of the two, and so does its scheduled rejoin (``GB_READY``, if its death was
    already detected; ``J_NEXT_READY`` may then be early, which :func:`_rejoin` tolerates)."""
    killed = 0
    log_repair = P[P_REPAIR] == REPAIR_LOG
    back = _NEVER
    if log_repair and victims[e] >= 0:
        back = gaps[e] + victims[e]
    for j in range(dptr[e], dptr[e + 1]):
        g = dgroups[j]
        k = _kill_if_live(g, Q, GB)
        killed += k
        if log_repair:
            if k == 1:
                GB[GB_BACK, g] = back
            else:
                GB[GB_BACK, g] = max(GB[GB_BACK, g], back)
                if GB[GB_READY, g] != _NEVER:  # detected: its rejoin waits for the new repair too
                    GB[GB_READY, g] = _DEAD_KEPT if back == _NEVER else max(GB[GB_READY, g], back)
    Q[Q_N_UP] -= killed
    return killed


@_kernel
def _log_next(Q, gaps):
    """Time of the log's next event (``gaps`` holds the event times), ``_NEVER`` after the last one."""
    return gaps[Q[Q_IA]] if Q[Q_IA] < gaps.shape[0] else _NEVER


# ------------------------------------------------------------------------------- failure source: the interface
@_kernel
def _src_init(P, Q, GB, next_t, UB, UF, gaps, uscale, life):
    """A new system at time 0: every group live, nothing pending, the first arrival queued (system) or every
    unit's first lifetime drawn (unit clocks). Returns ``STATUS_OK`` or ``STATUS_TRACE``."""
    n = P[P_N_GROUPS]
    for i in range(N_Q):
        Q[i] = 0
    Q[Q_N_UP] = n
    _live_fill(GB[GB_LIVE], n)
    for g in range(n):
        GB[GB_UP, g] = 1
    if P[P_SOURCE] == SRC_UNITS:
        if P[P_UNIT_RACE] != 0:
            for u in range(P[P_N_UNITS]):
                UB[UB_PERM, u] = u
                UB[UB_POS, u] = u
            return _race_renew(np.int64(0), P, Q, UB, UF, life)
        next_t[:] = _NEVER  # every unit inactive: all are drawn under either age policy
        return _units_redraw(np.int64(0), np.int64(0), P, Q, next_t, UB, UF, uscale, life)
    if P[P_SOURCE] == SRC_LOG:
        return STATUS_OK
    Q[Q_REM] = min(gaps[0], HORIZON_US) if gaps.shape[0] > 0 else HORIZON_US
    return STATUS_OK


@_step
def _src_next_time(P, Q, next_t, UB, UF, gaps):
    """Time of the next failure: ``_NEVER`` if none can come, ``TRACE_OUT`` if the system trace ran out."""
    if P[P_SOURCE] == SRC_UNITS:
        return _units_next(P, Q, next_t, UB, UF)
    if P[P_SOURCE] == SRC_LOG:
        return _log_next(Q, gaps)
    if Q[Q_IA] >= gaps.shape[0]:
        return TRACE_OUT
    return _sys_arrival(Q, _sys_rate(P, Q))


@_step
def _src_take_until(t, P, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, res):
    """Every failure at or before ``t`` kills its groups (a uniformly random live group per system arrival; a
    unit's group or domain), which become pending. Returns ``STATUS_OK`` or ``STATUS_TRACE``."""
    if P[P_SOURCE] == SRC_UNITS:
        while _units_next(P, Q, next_t, UB, UF) <= t:
            killed = _units_fire(P, Q, GB, next_t, UB, UF, victims, life, dptr, dgroups)
            if killed < 0:
                return STATUS_TRACE
            res[R_FAILURES] += killed
        return STATUS_OK
    if P[P_SOURCE] == SRC_LOG:
        while _log_next(Q, gaps) <= t:
            res[R_FAILURES] += _log_fire(Q[Q_IA], P, Q, GB, gaps, victims, dptr, dgroups)
            Q[Q_IA] += 1
        return STATUS_OK
    n = P[P_N_GROUPS]
    while True:
        if Q[Q_IA] >= gaps.shape[0]:
            return STATUS_TRACE
        t_f = _sys_arrival(Q, _sys_rate(P, Q))
        if t_f > t:
            return STATUS_OK
        if Q[Q_N_UP] > 0:  # else (no live scaling, every group dead) the arrival hits nothing
            g = _live_take(GB[GB_LIVE], n, (victims[Q[Q_IA]] * Q[Q_N_UP]) >> 32)
            Q[Q_N_UP] -= 1
            GB[GB_UP, g] = 0
            GB[GB_MEMCOPY, g] = 0
            GB[GB_PEND, Q[Q_N_PEND]] = g
            Q[Q_N_PEND] += 1
            res[R_FAILURES] += 1
        _sys_consume(t_f, Q, gaps)


@_kernel
def _src_restart(t_from, t_end, P, Q, GB, next_t, UB, UF, gaps, victims, uscale, life, dptr, dgroups, res):
    """A global restart from ``t_from`` to ``t_end``: the failures before ``t_end`` are absorbed (the system clock
    runs at the full rate ``N`` meanwhile; unit clocks are redrawn from ``t_end`` under the age policy), and every
    group is back; with ``P_STAY_DEAD`` see :func:`_src_restart_stay_dead`. Returns ``STATUS_OK`` or
    ``STATUS_TRACE``."""
    if P[P_STAY_DEAD] != 0:
        return _src_restart_stay_dead(t_from, t_end, P, Q, GB, next_t, UB, UF, gaps, victims, uscale, life, dptr, dgroups,
                                      res)
    n = P[P_N_GROUPS]
    if P[P_SOURCE] == SRC_UNITS:
        if P[P_UNIT_RACE] != 0:  # the arrivals before the end are absorbed, then every unit is new
            while Q[Q_T_NEXT] < t_end:
                if _units_absorb(P, Q, next_t, UB, UF, victims, life) != STATUS_OK:
                    return STATUS_TRACE
                res[R_ABSORBED] += 1
            if _race_renew(t_end, P, Q, UB, UF, life) != STATUS_OK:
                return STATUS_TRACE
        elif P[P_KEEP_AGES] != 0:  # the units due before the end are absorbed: O(log units) each
            t_f, u = _units_min(next_t, UB, UF)
            while t_f < t_end:
                _unit_off(u, P, Q, next_t, UB)
                res[R_ABSORBED] += 1
                t_f, u = _units_min(next_t, UB, UF)
            if _units_redraw_kept(t_end, P, Q, next_t, UB, UF, uscale, life) != STATUS_OK:
                return STATUS_TRACE
        else:
            for u in range(next_t.shape[0]):
                if next_t[u] < t_end:
                    res[R_ABSORBED] += 1
            if _units_redraw(t_end, t_end, P, Q, next_t, UB, UF, uscale, life) != STATUS_OK:
                return STATUS_TRACE
        for g in range(n):
            GB[GB_UP, g] = 1
    elif P[P_SOURCE] == SRC_LOG:  # the events before the end are absorbed
        while _log_next(Q, gaps) < t_end:
            res[R_ABSORBED] += 1
            Q[Q_IA] += 1
        for g in range(n):
            GB[GB_UP, g] = 1
    else:
        if Q[Q_IA] >= gaps.shape[0]:
            return STATUS_TRACE
        # bank the operational time run at the old rate since the reference point (the arrival is still ahead, so
        # rem stays positive), then run at N
        Q[Q_REM] -= _sys_rate(P, Q) * (t_from - Q[Q_T_REF])
        Q[Q_T_REF] = t_from
        while True:
            if Q[Q_IA] >= gaps.shape[0]:
                return STATUS_TRACE
            t_f = _sys_arrival(Q, n)
            if t_f >= t_end:
                break
            res[R_ABSORBED] += 1
            _sys_consume(t_f, Q, gaps)
        _all_live(GB, n)
    Q[Q_N_UP] = n
    Q[Q_N_PEND] = 0
    return STATUS_OK


@_kernel
def _units_redraw_after_stay(t_end, P, Q, next_t, UB, UF, uscale, life):
    """The end of a restart under ``P_STAY_DEAD``, in unit order: a unit that fired before it (``_PARKED``) gets a
    new lifetime from ``t_end``; one that fired during it, or whose group died during it (``_NEVER``), stays
    inactive until the next restart; the others are redrawn ("renew") or keep their clocks ("keep"). Returns
    ``STATUS_OK`` or ``STATUS_TRACE``."""
    keep = P[P_KEEP_AGES] != 0
    il = Q[Q_IL]
    status = STATUS_OK
    for u in range(next_t.shape[0]):
        if next_t[u] == _NEVER or (keep and next_t[u] != _PARKED):
            continue
        if il >= life.shape[0]:
            status = STATUS_TRACE
            break
        next_t[u] = t_end + _lifetime_us(uscale[u] * life[il])
        il += 1
    Q[Q_IL] = il
    _tour_build(next_t, UB)
    Q[Q_N_OFF] = 0  # the units still inactive (they fired during the restart) are the next restart's to redraw
    if keep:
        for u in range(next_t.shape[0]):
            if next_t[u] == _NEVER:
                UB[UB_TMP, Q[Q_N_OFF]] = u
                Q[Q_N_OFF] += 1
    return status


@_kernel
def _race_after_stay(t_end, P, Q, GB, UB, UF, life):
    """The end of a restart under ``P_STAY_DEAD`` for the race ("renew"): the units that fired during it, or whose
    group died during it, stay inactive until the next restart (they are the class's units in positions
    ``[m, m_from)``, ``m_from`` the count when it started, ``Q_M_FROM``: the race's inactive units are kept most
    recent first), and so do the units of the groups that died during it (a unit parked before it may belong to
    one); every other unit is new at ``t_end``. Returns ``STATUS_OK`` or ``STATUS_TRACE``."""
    n_gu = P[P_N_GROUP_UNITS]
    n_off = 0
    for c in range(N_CLASSES):
        start = _class_start(P, c)
        for p in range(start + Q[Q_M + c], start + Q[Q_M_FROM + c]):
            UB[UB_TMP, n_off] = UB[UB_PERM, p]
            n_off += 1
    _race_reset(t_end, P, Q, UF)  # every unit active and new at t_end ...
    for i in range(n_off):  # ... but those, in the order they went off,
        _race_off(P, Q, UB, UB[UB_TMP, n_off - 1 - i])
    if n_gu > 0:  # and the units of the groups that died during the restart, in the order they died
        for i in range(Q[Q_N_PEND]):
            _race_off(P, Q, UB, GB[GB_PEND, i])
    return _race_schedule(Q, UF, life)


@_kernel
def _src_restart_stay_dead(t_from, t_end, P, Q, GB, next_t, UB, UF, gaps, victims, uscale, life, dptr, dgroups, res):
    """A global restart from ``t_from`` to ``t_end`` under ``P_STAY_DEAD``: the groups dead at ``t_from`` are back;
    the failures before ``t_end`` kill live groups as outside restarts (system clock at its usual rate, live-scaled
    or ``N``; unit clocks: the units active at ``t_from`` keep running, those that fired before are parked), and
    their groups stay dead and pending when the job resumes. Returns ``STATUS_OK`` or ``STATUS_TRACE``."""
    n = P[P_N_GROUPS]
    for c in range(N_CLASSES):
        Q[Q_M_FROM + c] = Q[Q_M + c]
    if P[P_SOURCE] == SRC_UNITS:
        if P[P_UNIT_RACE] == 0:
            for u in range(next_t.shape[0]):
                if next_t[u] == _NEVER:
                    next_t[u] = _PARKED
            _tour_build(next_t, UB)
        for g in range(n):
            GB[GB_UP, g] = 1
    elif P[P_SOURCE] == SRC_LOG:
        for g in range(n):
            GB[GB_UP, g] = 1
    else:
        if Q[Q_IA] >= gaps.shape[0]:
            return STATUS_TRACE
        Q[Q_REM] -= _sys_rate(P, Q) * (t_from - Q[Q_T_REF])  # bank the old rate, as in _src_restart
        Q[Q_T_REF] = t_from
        _all_live(GB, n)
    Q[Q_N_UP] = n
    Q[Q_N_PEND] = 0
    status = _src_take_until(t_end - 1, P, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, res)
    if status != STATUS_OK or P[P_SOURCE] != SRC_UNITS:
        return status
    if P[P_UNIT_RACE] != 0:
        return _race_after_stay(t_end, P, Q, GB, UB, UF, life)
    return _units_redraw_after_stay(t_end, P, Q, next_t, UB, UF, uscale, life)


@_kernel
def _src_restart_again(t_from, t_end, r_base, P, PF, Q, GB, next_t, UB, UF, gaps, victims, uscale, life, rng, res):
    """A global restart from ``t_from`` under ``P_RESTART_AGAIN``, first due to end at ``t_end``: every failure
    before the current end starts the restart again from its arrival (a new restart time of nominal ``r_base``,
    jittered; counted as
    absorbed). The system clock runs at the full rate ``N`` throughout; a unit that fires is inactive until the end,
    when lifetimes are redrawn as after any restart. Every group is back at the end. Returns ``(status, the end)``:
    ``STATUS_CAPPED`` (and the end) as soon as an attempt would end past the cap, unsimulated beyond its start."""
    n = P[P_N_GROUPS]
    sd = PF[PF_JITTER_SD]
    if P[P_SOURCE] == SRC_UNITS:
        while True:
            t_f = _units_next(P, Q, next_t, UB, UF)
            if t_f >= t_end:
                break
            res[R_ABSORBED] += 1
            if _units_absorb(P, Q, next_t, UB, UF, victims, life) != STATUS_OK:
                return STATUS_TRACE, t_end
            r_s = _dur(r_base, sd, rng)
            res[R_RESTART] += t_f + r_s - t_end
            t_end = t_f + r_s
            if t_end > P[P_CAP_US]:
                return STATUS_CAPPED, t_end
        if P[P_UNIT_RACE] != 0:
            status = _race_renew(t_end, P, Q, UB, UF, life)
        elif P[P_KEEP_AGES] != 0:  # every unit due before the end was absorbed (off) in the loop
            status = _units_redraw_kept(t_end, P, Q, next_t, UB, UF, uscale, life)
        else:
            status = _units_redraw(t_end, t_end, P, Q, next_t, UB, UF, uscale, life)
        if status != STATUS_OK:
            return STATUS_TRACE, t_end
        for g in range(n):
            GB[GB_UP, g] = 1
    elif P[P_SOURCE] == SRC_LOG:
        while True:
            t_f = _log_next(Q, gaps)
            if t_f >= t_end:
                break
            res[R_ABSORBED] += 1
            Q[Q_IA] += 1
            r_s = _dur(r_base, sd, rng)
            res[R_RESTART] += t_f + r_s - t_end
            t_end = t_f + r_s
            if t_end > P[P_CAP_US]:
                return STATUS_CAPPED, t_end
        for g in range(n):
            GB[GB_UP, g] = 1
    else:
        if Q[Q_IA] >= gaps.shape[0]:
            return STATUS_TRACE, t_end
        Q[Q_REM] -= _sys_rate(P, Q) * (t_from - Q[Q_T_REF])  # bank the old rate, as in _src_restart
        Q[Q_T_REF] = t_from
        while True:
            if Q[Q_IA] >= gaps.shape[0]:
                return STATUS_TRACE, t_end
            t_f = _sys_arrival(Q, n)
            if t_f >= t_end:
                break
            res[R_ABSORBED] += 1
            _sys_consume(t_f, Q, gaps)
            r_s = _dur(r_base, sd, rng)
            res[R_RESTART] += t_f + r_s - t_end
            t_end = t_f + r_s
            if t_end > P[P_CAP_US]:
                return STATUS_CAPPED, t_end
        _all_live(GB, n)
    Q[Q_N_UP] = n
    Q[Q_N_PEND] = 0
    return STATUS_OK, t_end


@_kernel
def _src_kills_within(t0, t1, P, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, res):
    """The failures before ``t1`` are taken now (they become pending, as the next step would make them); returns
    ``(status, groups killed by those that arrive in [t0, t1))``."""
    status = _src_take_until(t0 - 1, P, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, res)
    if status != STATUS_OK:
        return status, np.int64(0)
    f0 = res[R_FAILURES]
    status = _src_take_until(t1 - 1, P, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, res)
    return status, res[R_FAILURES] - f0


@_kernel
def _src_tail(t, P, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, res):
    """The failures after the last detection and before the end ``t`` still hit the running job: count them.
    Returns ``STATUS_OK`` or ``STATUS_TRACE``."""
    if P[P_SOURCE] != SRC_SYSTEM:  # unit clocks and logs: as any failure before t (times are whole microseconds)
        return _src_take_until(t - 1, P, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, res)
    while True:
        if Q[Q_IA] >= gaps.shape[0]:
            return STATUS_TRACE
        t_f = _sys_arrival(Q, _sys_rate(P, Q))
        if t_f >= t:
            return STATUS_OK
        if Q[Q_N_UP] > 0:
            Q[Q_N_UP] -= 1  # which group no longer matters: no victim is drawn
            res[R_FAILURES] += 1
        _sys_consume(t_f, Q, gaps)


# ------------------------------------------------------------------------------------------------ the job steps
@_step
def _stretch_exact(t_f, P, PF, J, Q):
    """Without jitter: the ``m`` identical steps whose compute ends before the failure at ``t_f``, none after a due
    checkpoint (by wall time or by steps), none starting past the cap. Returns ``(m, their compute, their
    all-reduce)``."""
    t = J[J_T]
    c_step = J[J_C_NOM]
    d_step = c_step + P[P_AR_US]
    if P[P_DETECT_IMMEDIATE] != 0:  # steps that end at or before the failure (it interrupts the next one)
        q = (t_f - t) // d_step if d_step > 0 else 0
    elif t + c_step >= t_f:
        q = 0
    else:
        q = (t_f - t - c_step - 1) // d_step + 1
    m_cap = (P[P_CAP_US] - t) // d_step + 1
    m = min(q, min(P[P_N_STEPS] - J[J_STEPS_DONE], m_cap))
    if P[P_REPAIR] != REPAIR_NONE and P[P_REJOIN_CKPT] == 0:  # stop at the first boundary a repair is done by
        need_r = J[J_NEXT_READY] - t
        m = min(m, 1 if need_r <= d_step else (need_r + d_step - 1) // d_step)
    if P[P_CKPT_POLICY] == POLICY_PERIODIC:
        need = J[J_CKPT_DUE] - t
        j_ck = 1 if need <= d_step else (need + d_step - 1) // d_step
        j_ck = min(j_ck, J[J_CKPT_DUE_STEP] - J[J_STEPS_DONE])
        m = min(m, j_ck)
    else:
        # steps that end at or before the next failure (every failure before a boundary is known there), up to the
        # first boundary at which the dynamic period has passed
        m = min(m, (t_f - t) // d_step if d_step > 0 else 0)
        for j in range(1, m + 1):
            t_j = t + j * d_step
            if float(t_j - J[J_LAST_CK]) >= _dynamic_threshold_us(t_j, Q[Q_T_LAST], P, PF, J):
                m = j
                break
    return m, m * c_step, m * P[P_AR_US]


@_step
def _stretch_jittered(t_f, P, PF, J, rng):
    """With jitter: ``m >= 2`` steps that end -- beyond 12 standard deviations -- before the failure at ``t_f``, with
    no checkpoint due (by wall time or by steps) and no step starting past the cap before the last of them; their
    total compute and all-reduce times are exact normal sums of ``m`` independent jitters (rounded once per
    stretch). Returns ``(m, compute, all-reduce)``, ``m = 0`` if fewer than 2 steps fit."""
    if P[P_CKPT_POLICY] != POLICY_PERIODIC:  # the dynamic period is checked at every step boundary
        return 0, np.int64(0), np.int64(0)
    t = J[J_T]
    sd = PF[PF_JITTER_SD]
    c_nom = J[J_C_NOM]
    ar = P[P_AR_US]
    d_nom = c_nom + ar
    v = sd * sd * (float(c_nom) * c_nom + float(ar) * ar)
    m1 = _max_steps_within(float(t_f - t), float(d_nom), v)
    stop = min(J[J_CKPT_DUE], P[P_CAP_US] + 1)
    if P[P_REPAIR] != REPAIR_NONE and P[P_REJOIN_CKPT] == 0:
        stop = min(stop, J[J_NEXT_READY])
    m2 = _max_steps_within(float(stop - t), float(d_nom), v) + 1
    m = min(min(m1, m2), min(P[P_N_STEPS] - J[J_STEPS_DONE], J[J_CKPT_DUE_STEP] - J[J_STEPS_DONE]))
    if m < 2:
        return 0, np.int64(0), np.int64(0)
    sm = np.sqrt(float(m))
    sum_c = max(np.int64(0), np.int64(np.rint(m * c_nom + c_nom * sd * sm * rng.normal(0.0, 1.0))))
    sum_a = max(np.int64(0), np.int64(np.rint(m * ar + ar * sd * sm * rng.normal(0.0, 1.0))))
    return m, sum_c, sum_a


@_step
def _useful_share(c, P, J):
    """The ``useful`` share of a step's compute ``c``, one layer's worth: ``c // S``; for Rep ``c x T_comp / C``
    rounded down, ``C`` its nominal step compute (``c // r`` when ``r`` divides ``N``). The rest is redundant."""
    if P[P_STRATEGY] != STRAT_REP:
        return c // J[J_S]
    if P[P_REP_LAYERS] > 0:  # C = r T_comp exactly: the same as c // r
        return c // P[P_REP_LAYERS]
    d = J[J_C_NOM]
    if d <= 0:
        return np.int64(0)
    q = c // d
    return q * P[P_COMP_US] + _mul_div(c - q * d, P[P_COMP_US], d)


@_step
def _quiet_stretch(t_f, P, PF, J, Q, W, rng, res):
    """Run the failure-free steps before the next failure at ``t_f`` in O(1): an exact jump without jitter, normal
    sums with jitter. Returns the number of steps run (0: the next step is simulated explicitly; always while an
    asynchronous save runs, which slows the steps)."""
    if J[J_PERSIST_END] >= 0:
        return 0
    if PF[PF_JITTER_SD] == 0.0:
        m, sum_c, sum_a = _stretch_exact(t_f, P, PF, J, Q)
    else:
        m, sum_c, sum_a = _stretch_jittered(t_f, P, PF, J, rng)
    if m <= 0:
        return 0
    S = J[J_S]
    J[J_T] += sum_c + sum_a
    J[J_STEPS_DONE] += m
    res[R_STEPS_RUN] += m
    res[R_SUM_S] += m * S
    useful = _useful_share(sum_c, P, J)
    W[W_USEFUL] += useful
    W[W_REDUNDANT] += sum_c - useful
    W[W_ALLREDUCE] += sum_a
    return m


@_step
def _step_compute(P, PF, J, rng):
    """The compute phase of one explicit step (``S`` stack layers; Rep's ``N / n_sets`` layers): returns its
    duration."""
    return _dur(J[J_C_NOM], PF[PF_JITTER_SD], rng)


@_step
def _detect(P, PF, J, Q, GB, st, gset, slive, rng, res):
    """The all-reduce detects every group that died since the last detection (the pending ones), together: SPARe
    runs ReCtlr (a masked failure costs ReCtlr, the shrink, the detection cost and the patch compute of
    ``P_PATCH_COST``), Rep loses a live member per dead group of its replica set (``gset``, live counts ``slive``;
    masked: the shrink, the detection cost and what ``P_REP_COST`` adds), CKPT-only wipes out.

    Returns ``(wiped, ReCtlr + shrink + detection cost, patch cost)``, ``wiped`` 1 on a wipe-out, 0 if masked or
    nothing was pending, -1 if ReCtlr found no assignment (a bug).
    """
    n_pend = Q[Q_N_PEND]
    if n_pend == 0:
        return 0, np.int64(0), np.int64(0)
    res[R_DETECTIONS] += 1
    Q[Q_N_PEND] = 0
    sd = PF[PF_JITTER_SD]
    if P[P_STRATEGY] == STRAT_SPARE:
        E, G, meta, out = st.E, st.G, st.meta, st.out
        rc = _rectlr_step(GB[GB_PEND], n_pend, _NOT_FROM_SCRATCH, P[P_N_GROUPS], P[P_R], st)
        if rc != 0:
            return rc, np.int64(0), np.int64(0)
        if P[P_CKPT_POLICY] != POLICY_PERIODIC:  # what the dynamic policy knows: the dead and the critical groups
            J[J_N_KNOWN] -= n_pend
            for i in range(n_pend):
                g = GB[GB_PEND, i]
                if GB[GB_CRIT, g] > 0:
                    GB[GB_CRIT, g] = 0
                    J[J_N_CRIT] -= 1
            for i in range(n_pend):
                _crit_mark(GB[GB_PEND, i], P, E, G, GB, J)
        extra_rc = (_dur(P[P_RECTLR_US], sd, rng) + _dur(P[P_SHRINK_US], sd, rng)
                    + _dur(P[P_MASKED_DETECT_US], sd, rng))
        mode = P[P_PATCH_COST]
        if mode == PATCH_PER_SHARD:
            extra_patch = _dur(out[_rk.O_PATCH] * P[P_COMP_US], sd, rng)
        elif mode == PATCH_WHOLE_STEP:
            extra_patch = _dur(meta[_rk.S_] * P[P_COMP_US], sd, rng)
        else:
            extra_patch = np.int64(0)
        res[R_PATCH_SHARDS] += out[_rk.O_PATCH]
        return 0, extra_rc, extra_patch
    if P[P_STRATEGY] == STRAT_CKPT:
        return 1, np.int64(0), np.int64(0)
    wiped = 0
    for i in range(n_pend):
        b = gset[GB[GB_PEND, i]]
        slive[b] -= 1
        if slive[b] == 1:
            J[J_N_CRIT] += 1
        elif slive[b] == 0:
            J[J_N_CRIT] -= 1
            wiped = 1
    J[J_N_KNOWN] -= n_pend
    if wiped:
        return 1, np.int64(0), np.int64(0)
    extra_rc = _dur(P[P_SHRINK_US], sd, rng)
    if P[P_REP_COST] == REP_RESYNC:
        extra_rc += _dur(P[P_RESYNC_US], sd, rng)
    extra_rc += _dur(P[P_MASKED_DETECT_US], sd, rng)
    extra_patch = np.int64(0)
    if P[P_REP_COST] == REP_REDO_STEP:  # the step in progress is recomputed
        extra_patch = _dur(J[J_C_NOM], sd, rng)
    return 0, extra_rc, extra_patch


@_step
def _global_restart(t_c, c_step, in_step, s0, P, PF, J, W, GB, rng, res):
    """A wipe-out detected at ``t_c``, after ``c_step`` of the step in progress (``in_step`` 1; 0: the wipe-out
    interrupted a checkpoint): that time and all the work since the last checkpoint are lost, progress rolls back
    to it, a global restart takes ``T_r`` plus the checkpoint's load time, and ``S`` is back to ``s0`` (SPARe).
    With in-memory copies (``P_MEM_COPIES``) the last checkpoint is reloaded from memory if a group still holds a
    copy (``GB_MEMCOPY``), else the job falls back to the last checkpoint in remote storage: the work kept in
    memory only is lost too. An asynchronous save done by ``t_c`` counts; one still in flight is abandoned. Returns
    the restart's end (the caller restarts the failure source and resets the stacks)."""
    _persist_done(t_c, P, J, W, res)
    res[R_WIPEOUTS] += 1
    lost = c_step
    for i in range(N_W):
        lost += W[i]
        W[i] = 0
    from_memory = False
    if P[P_MEM_COPIES] > 0:
        for g in range(P[P_N_GROUPS]):
            if GB[GB_MEMCOPY, g] != 0:
                from_memory = True
                break
    if from_memory:  # the save in flight started after an in-memory checkpoint at least as recent: its work stays
        _move_block(W, W_PERSIST, W_MEM)
        res[R_MEM_RESTARTS] += 1
        base = P[P_RESTART_US] + P[P_MEM_LOAD_US]
    else:
        for i in range(W_MEM, W_PERSIST + N_W):
            lost += W[i]
            W[i] = 0
        if P[P_MEM_COPIES] > 0:
            res[R_FALLBACKS] += 1
            J[J_SINCE_REMOTE] = 0
        J[J_CKPT_STEPS] = J[J_REMOTE_STEPS]
        base = P[P_RESTART_US] + P[P_LOAD_US]
    J[J_PERSIST_END] = -1
    J[J_RESTART_BASE] = base
    res[R_LOST] += lost
    res[R_STEPS_RUN] += in_step
    res[R_SUM_S] += in_step * J[J_S]
    J[J_STEPS_DONE] = J[J_CKPT_STEPS]
    r_s = _dur(base, PF[PF_JITTER_SD], rng)
    res[R_RESTART] += r_s
    t_end = t_c + r_s
    J[J_T] = t_end
    J[J_CKPT_DUE] = t_end + P[P_PERIOD_US]
    J[J_LAST_CK] = t_end
    J[J_CKPT_DUE_STEP] = J[J_STEPS_DONE] + P[P_CKPT_EVERY]
    if P[P_STRATEGY] == STRAT_SPARE:
        J[J_S] = s0
        J[J_C_NOM] = s0 * P[P_COMP_US]
    return t_end


@_step
def _finish_step(t_c, c_step, extra_rc, extra_patch, a_s, P, J, W, meta, res):
    """A step whose failures (if any) were masked completes: after its compute (ending at ``t_c``), ReCtlr and the
    shrink, the patch compute, then the all-reduce of ``a_s``; its work is pending until the next checkpoint.
    SPARe's new ``S`` holds from the next step on."""
    S = J[J_S]
    J[J_T] = t_c + extra_rc + extra_patch + a_s
    J[J_STEPS_DONE] += 1
    res[R_STEPS_RUN] += 1
    res[R_SUM_S] += S
    useful = _useful_share(c_step, P, J)
    W[W_USEFUL] += useful
    W[W_REDUNDANT] += c_step - useful
    W[W_PATCH] += extra_patch
    W[W_ALLREDUCE] += a_s
    W[W_RECTLR] += extra_rc
    if P[P_STRATEGY] == STRAT_SPARE:
        J[J_S] = meta[_rk.S_]
        J[J_C_NOM] = J[J_S] * P[P_COMP_US]
        res[R_S_MAX] = max(res[R_S_MAX], J[J_S])


@_step
def _checkpoint_if_due(t_f, P, PF, J, W, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, rng, res):
    """After a step or a stretch: if a checkpoint is due (``T_c`` of wall time or ``P_CKPT_EVERY`` steps since the
    last checkpoint or restart) and steps remain -- or, with ``P_FINAL_CKPT``, the last step is done -- write one.
    It completes -- the pending work is kept and the progress saved -- unless ``P_CKPT_LOST`` and a failure arrives
    during the save: then its time is spent but the rollback point stays. The next one is due after it either way.
    With ``P_DETECT_IMMEDIATE`` the next failure, at ``t_f``, interrupts the save if it arrives before the save ends
    (at its very start included): the time until ``t_f`` is spent, the checkpoint is unusable, and the caller wipes
    out at ``t_f``. Returns ``(STATUS_OK or STATUS_TRACE, the wipe-out time or -1)``."""
    done = J[J_STEPS_DONE]
    if done >= P[P_N_STEPS]:
        if P[P_FINAL_CKPT] == 0 or J[J_CKPT_STEPS] >= P[P_N_STEPS]:
            return STATUS_OK, np.int64(-1)
    elif P[P_CKPT_POLICY] == POLICY_PERIODIC:
        if J[J_T] < J[J_CKPT_DUE] and done < J[J_CKPT_DUE_STEP]:
            return STATUS_OK, np.int64(-1)
    else:
        # the dynamic policy reads the failures before now: those since the last detection are taken (they become
        # pending, as the next step would make them)
        if _src_take_until(J[J_T] - 1, P, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, res) != STATUS_OK:
            return STATUS_TRACE, np.int64(-1)
        if float(J[J_T] - J[J_LAST_CK]) < _dynamic_threshold_us(J[J_T], Q[Q_T_LAST], P, PF, J):
            return STATUS_OK, np.int64(-1)
    if P[P_MEM_COPIES] != 0 or P[P_ASYNC] != 0:
        return _checkpoint_tiered(P, PF, J, W, Q, GB, rng, res), np.int64(-1)
    k_s = _dur(P[P_SAVE_US], PF[PF_JITTER_SD], rng)
    res[R_CHECKPOINTS] += 1
    t0 = J[J_T]
    if P[P_DETECT_IMMEDIATE] != 0 and (Q[Q_N_PEND] > 0 or t_f < t0 + k_s or t_f <= t0):
        t_w = max(t_f, t0)
        res[R_CKPT] += t_w - t0
        res[R_CKPTS_LOST] += 1
        J[J_T] = t_w
        return STATUS_OK, t_w
    res[R_CKPT] += k_s
    J[J_T] += k_s
    status = STATUS_OK
    killed = np.int64(0)
    if P[P_CKPT_LOST] != 0 and k_s > 0:
        status, killed = _src_kills_within(t0, J[J_T], P, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, res)
    if killed > 0:
        res[R_CKPTS_LOST] += 1
    else:
        _keep_block(W, 0, res)
        J[J_CKPT_STEPS] = J[J_STEPS_DONE]
        J[J_REMOTE_STEPS] = J[J_STEPS_DONE]
    J[J_CKPT_DUE] = J[J_T] + P[P_PERIOD_US]
    J[J_LAST_CK] = J[J_T]
    J[J_CKPT_DUE_STEP] = J[J_STEPS_DONE] + P[P_CKPT_EVERY]
    return status, np.int64(-1)


@_step
def _persist_done(t, P, J, W, res):
    """An asynchronous save that is complete by ``t`` makes its checkpoint usable in remote storage: the work it
    saved is kept (and, without in-memory copies, it becomes the rollback point)."""
    if J[J_PERSIST_END] >= 0 and J[J_PERSIST_END] <= t:
        _keep_block(W, W_PERSIST, res)
        J[J_REMOTE_STEPS] = J[J_PERSIST_STEPS]
        if P[P_MEM_COPIES] == 0:
            J[J_CKPT_STEPS] = J[J_PERSIST_STEPS]
        J[J_PERSIST_END] = -1


@_kernel
def _place_copies(P, Q, GB):
    """The checkpoint just written goes to the CPU memory of ``m = P_MEM_COPIES`` groups: for ``j = 0 .. m - 1``
    the first group at or after ``floor(j N / m)`` (cyclically) that is not yet chosen and not known dead (dead and
    detected). A chosen group that is in fact dead (not detected yet) holds no copy."""
    n = P[P_N_GROUPS]
    m = P[P_MEM_COPIES]
    for g in range(n):
        GB[GB_MEMCOPY, g] = 0
    for j in range(m):
        g = (j * n) // m
        for _ in range(n):
            if GB[GB_MEMCOPY, g] == 0:
                ok = GB[GB_UP, g] != 0
                if not ok:  # dead: chosen only if the job does not know it yet (pending)
                    for i in range(Q[Q_N_PEND]):
                        if GB[GB_PEND, i] == g:
                            ok = True
                            break
                if ok:
                    GB[GB_MEMCOPY, g] = 1 if GB[GB_UP, g] != 0 else 2
                    break
            g += 1
            if g == n:
                g = 0
    for g in range(n):
        if GB[GB_MEMCOPY, g] == 2:
            GB[GB_MEMCOPY, g] = 0


@_kernel
def _checkpoint_tiered(P, PF, J, W, Q, GB, rng, res):
    """A due checkpoint with in-memory copies and/or asynchronous saves (see the model). Every
    ``P_REMOTE_EVERY``-th checkpoint since the last remote one (each one without copies) goes to remote storage,
    the others to memory only. A memory checkpoint blocks for ``P_MEM_SAVE_US`` and is usable at once. A remote one
    blocks for ``P_SAVE_US`` (it is also copied to memory), or with ``P_ASYNC`` is copied to memory (blocking, with
    copies) and then saved in the background for ``P_SAVE_US``, usable in remote storage once done. A remote save due
    while another is in flight is made to memory only, or postponed to the next step boundary without copies.
    Returns ``STATUS_OK``."""
    _persist_done(J[J_T], P, J, W, res)
    m = P[P_MEM_COPIES]
    done = J[J_STEPS_DONE]
    remote = m == 0 or J[J_SINCE_REMOTE] + 1 >= P[P_REMOTE_EVERY]
    if remote and P[P_ASYNC] != 0 and J[J_PERSIST_END] >= 0:
        if m == 0:
            return STATUS_OK
        remote = False
    res[R_CHECKPOINTS] += 1
    sd = PF[PF_JITTER_SD]
    if m > 0 and (not remote or P[P_ASYNC] != 0):
        k_s = _dur(P[P_MEM_SAVE_US], sd, rng)
        J[J_T] += k_s
        res[R_CKPT] += k_s
        _place_copies(P, Q, GB)
        J[J_CKPT_STEPS] = done
    if not remote:
        _move_block(W, 0, W_MEM)
        J[J_SINCE_REMOTE] += 1
    elif P[P_ASYNC] == 0:
        k_s = _dur(P[P_SAVE_US], sd, rng)
        J[J_T] += k_s
        res[R_CKPT] += k_s
        _keep_block(W, W_MEM, res)
        _keep_block(W, 0, res)
        if m > 0:
            _place_copies(P, Q, GB)
        J[J_CKPT_STEPS] = done
        J[J_REMOTE_STEPS] = done
        J[J_SINCE_REMOTE] = 0
    else:
        _move_block(W, W_MEM, W_PERSIST)
        _move_block(W, 0, W_PERSIST)
        J[J_PERSIST_STEPS] = done
        J[J_PERSIST_END] = J[J_T] + _dur(P[P_SAVE_US], sd, rng)
        J[J_SINCE_REMOTE] = 0
        _persist_done(J[J_T], P, J, W, res)  # a save of length 0 is done at once
    J[J_CKPT_DUE] = J[J_T] + P[P_PERIOD_US]
    J[J_LAST_CK] = J[J_T]
    J[J_CKPT_DUE_STEP] = done + P[P_CKPT_EVERY]
    return STATUS_OK


@_step
def _async_extra(c, PF, J, res):
    """The slowdown of a step's compute ``c`` starting at ``J_T`` while an asynchronous save runs until
    ``J_PERSIST_END``: compute runs ``f`` times slower until then, so the phase lasts ``c + x (f - 1) / f`` with
    ``x = min(the save's time left, f c)`` (rounded to the microsecond), booked as checkpoint time. Returns the
    extra time."""
    e = J[J_PERSIST_END]
    if e <= J[J_T]:
        return np.int64(0)
    x = min(float(e - J[J_T]), PF[PF_ASYNC_F] * float(c))
    extra = np.int64(np.floor(x * PF[PF_ASYNC_G] + 0.5))
    res[R_CKPT] += extra
    res[R_ASYNC_SLOW] += extra
    return extra


@_step
def _wipeout(t_c, c_step, in_step, P, PF, J, W, Q, GB, next_t, UB, UF, gaps, victims, uscale, life, dptr, dgroups, st,
             saved, ssize, slive, rng, res):
    """A wipe-out detected at ``t_c`` (see :func:`_global_restart`): back to the last checkpoint through a global
    restart; the failures during it are absorbed (or, under ``P_STAY_DEAD``, kill groups that stay dead; under
    ``P_RESTART_AGAIN``, each starts the restart again from its arrival); every other group is back, and the stacks
    reset. Returns 1 if the run stopped inside the restart (it ends past the cap: nothing during it can change the
    outcome, so its failures are not drawn -- with a tiny MTBF and a long restart they could be billions; the run
    stops at the cap, and the restart counts up to it), else 0; sets ``J[J_STATUS]``."""
    t_end = _global_restart(t_c, c_step, in_step, saved.s, P, PF, J, W, GB, rng, res)
    status = STATUS_CAPPED if t_end > P[P_CAP_US] else STATUS_OK
    if status == STATUS_OK and P[P_RESTART_AGAIN] != 0:
        status, t_end = _src_restart_again(t_c, t_end, J[J_RESTART_BASE], P, PF, Q, GB, next_t, UB, UF, gaps, victims, uscale, life, rng, res)
        J[J_T] = t_end
        J[J_CKPT_DUE] = t_end + P[P_PERIOD_US]
        J[J_LAST_CK] = t_end
    if status == STATUS_CAPPED:  # the run stops at the cap, inside the restart: the restart counts up to the cap
        res[R_RESTART] -= t_end - P[P_CAP_US]
        J[J_T] = P[P_CAP_US]
        J[J_STATUS] = STATUS_CAPPED
        return 1
    if P[P_RESTART_AGAIN] == 0:
        status = _src_restart(t_c, t_end, P, Q, GB, next_t, UB, UF, gaps, victims, uscale, life, dptr, dgroups, res)
    J[J_STATUS] = status
    if P[P_MEM_COPIES] > 0:  # the restored checkpoint is in every group's memory: m of them keep a copy
        _place_copies(P, Q, GB)
    if P[P_STRATEGY] == STRAT_SPARE:
        _reset_state(st, saved, P[P_R])
    else:
        for b in range(ssize.shape[0]):
            slive[b] = ssize[b]
    if P[P_CKPT_POLICY] != POLICY_PERIODIC:
        _crit_reset(P, st.E, st.G, GB, ssize, J)
    if P[P_REPAIR] != REPAIR_NONE:  # every group is back: repairs in progress are moot
        J[J_NEXT_READY] = _NEVER
        for g in range(P[P_N_GROUPS]):
            GB[GB_READY, g] = _NEVER
    return 0


@_kernel
def _repair_schedule(t_det, n_pend, P, PF, J, GB, rrng):
    """A masked detection at ``t_det``: each group it found dead (``GB_PEND[:n_pend]``) is repaired after a repair
    time -- fixed, or ``exp(mu + sigma Z)`` seconds drawn from ``rrng`` in the order the groups died -- and is ready
    to rejoin then (``GB_READY``; ``J_NEXT_READY`` the earliest). With ``REPAIR_LOG`` it is ready at the later of
    the detection and the log's end of repair (``GB_BACK``), or never (``_DEAD_KEPT``: until a global restart) if
    that is unknown."""
    for i in range(n_pend):
        g = GB[GB_PEND, i]
        if P[P_REPAIR] == REPAIR_LOG:
            if GB[GB_BACK, g] == _NEVER:
                GB[GB_READY, g] = _DEAD_KEPT
                continue
            ready = max(t_det, GB[GB_BACK, g])
            GB[GB_READY, g] = ready
            J[J_NEXT_READY] = min(J[J_NEXT_READY], ready)
            continue
        if P[P_REPAIR] == REPAIR_FIXED:
            d = P[P_REPAIR_US]
        else:
            x = np.exp(PF[PF_REPAIR_MU] + PF[PF_REPAIR_SIGMA] * rrng.standard_normal()) * 1e6
            d = HORIZON_US if not x < _HORIZON_F else max(np.int64(1), np.int64(np.rint(x)))
        GB[GB_READY, g] = t_det + d
        if t_det + d < J[J_NEXT_READY]:
            J[J_NEXT_READY] = t_det + d


@_kernel  # not inlined: 32 arguments make CPython pass them as a tuple, which numba cannot inline
def _rejoin(P, PF, J, W, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, st, saved, gset, ssize, slive, rng,
            res):
    """At the wall time ``J_T`` (a step boundary, or the end of a save): every group whose repair is done rejoins
    the job, without a global restart. The failures before now are taken first (they become pending), the system
    clock's operational time is banked at the old rate, the groups are live again (Rep: their sets count them;
    SPARe: ReCtlr is rebuilt from the fully live state on the groups still known dead -- the stacks re-balance, and
    ``S`` may fall from the next step on), and the job pauses ``P_REJOIN_US`` (booked with ReCtlr/shrink). Returns
    ``STATUS_OK``, ``STATUS_TRACE``, or -1 if ReCtlr found no assignment (a bug)."""
    t = J[J_T]
    if J[J_NEXT_READY] > t:
        return STATUS_OK
    if _src_take_until(t - 1, P, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, res) != STATUS_OK:
        return STATUS_TRACE
    if P[P_SOURCE] == SRC_SYSTEM and Q[Q_IA] >= gaps.shape[0]:  # (a log's events may all be over)
        return STATUS_TRACE
    # bank at the old rate: an arrival at exactly t (still queued) then happens at t under the new rate, with a
    # remainder <= 0 that _sys_arrival turns into t itself
    Q[Q_REM] -= _sys_rate(P, Q) * (t - Q[Q_T_REF])
    Q[Q_T_REF] = t
    n = P[P_N_GROUPS]
    nxt = _NEVER
    n_dead = np.int64(0)  # not the literal 0: see _NOT_FROM_SCRATCH
    back = 0
    for g in range(n):
        rt = GB[GB_READY, g]
        if rt == _NEVER:
            continue
        if rt <= t:
            GB[GB_READY, g] = _NEVER
            GB[GB_UP, g] = 1
            _live_add(GB[GB_LIVE], n, g)
            Q[Q_N_UP] += 1
            back += 1
            if P[P_STRATEGY] == STRAT_REP:
                b = gset[g]
                slive[b] += 1
                if slive[b] == 2:
                    J[J_N_CRIT] -= 1
        else:
            nxt = min(nxt, rt)
            GB[GB_LIST, n_dead] = g
            n_dead += 1
    J[J_NEXT_READY] = nxt
    if back == 0:  # REPAIR_LOG: a later log event postponed the repair that J_NEXT_READY announced; nothing rejoins
        return STATUS_OK
    res[R_REJOINS] += back
    if P[P_STRATEGY] == STRAT_SPARE:
        _reset_state(st, saved, P[P_R])
        if n_dead > 0:
            if _rectlr_step(GB[GB_LIST], n_dead, _NOT_FROM_SCRATCH, n, P[P_R], st) != 0:
                return -1
        J[J_S] = st.meta[_rk.S_]
        J[J_C_NOM] = J[J_S] * P[P_COMP_US]
        res[R_S_MAX] = max(res[R_S_MAX], J[J_S])
        if P[P_CKPT_POLICY] != POLICY_PERIODIC:
            _crit_reset(P, st.E, st.G, GB, ssize, J)
    J[J_N_KNOWN] = n - n_dead
    cost = _dur(P[P_REJOIN_US], PF[PF_JITTER_SD], rng)
    J[J_T] += cost
    W[W_RECTLR] += cost
    return STATUS_OK


# -------------------------------------------------------------------------------------------------- the kernel
@njit(cache=True)
def live_state(holders):
    """SPARe's redundancy state of a fully live system on ``holders`` (``N x r``): the blocks ``(E, G, D, H, meta,
    ulog, pplan, out)`` of :mod:`spare_mc._kernels.rectlr` with the stacks built and ReCtlr's initial assignment
    made, and its return code (< 0: no assignment). :func:`timeline` copies it (the caller's per-config cache:
    building it costs ~0.1 ms at N = 600, r = 8), or calls this when given none."""
    n, r = holders.shape
    st = _rk.alloc(n, r)
    st.meta[_rk.MAXDEG_] = _rk.build_stacks(holders, st.E, st.G)
    rc = _rk.initial_assignment(n, r, st)
    return st, rc


@njit(cache=True)
def timeline(P, PF, holders, live0, gset, ssize, gaps, victims, uscale, dptr, dgroups, life, rng, rrng, res):
    """Simulate one training job; results in ``res`` (``R_*`` slots, times in microseconds). Returns 0, or -1 if
    ReCtlr found no assignment although no type was wiped out (a bug). Allocates the state, then runs :func:`_job`.

    ``holders`` is SPARe's holder table (``N x r``; only its shape is read otherwise); ``live0`` is SPARe's state of
    a fully live system on it, the blocks of :func:`live_state` (copied, never written), or blocks with no columns
    (then the kernel builds it); ``gset`` (``N``) and ``ssize`` are Rep's replica sets: the set of each group and
    the members of each set (empty otherwise).
    """
    res[:] = 0
    n, r = P[P_N_GROUPS], P[P_R]
    # the redundancy state of a fully live system, and a copy to return to at restarts (SPARe's ReCtlr)
    if live0[0].shape[1] > 0:  # the heap H is scratch (read only below its size): not copied
        st = _rk.State(live0[0].copy(), live0[1].copy(), live0[2].copy(), np.empty_like(live0[3]), live0[4].copy(),
                       live0[5].copy(), live0[6].copy(), live0[7].copy())
    elif P[P_STRATEGY] == STRAT_SPARE:
        st, rc = live_state(holders)
        if rc < 0:
            return -1
    else:
        st = _rk.alloc(n, holders.shape[1])
    saved = _rk.saved_state(st, n)
    s0 = saved.s
    # Rep: the live members of each replica set
    slive = ssize.copy()
    # the failure source and the job
    Q = np.zeros(N_Q, np.int64)
    GB = np.zeros((N_GB, max(n + 1, live_set_width(n))), np.int64)
    next_t = np.empty(uscale.shape[0], np.int64)
    if P[P_UNIT_RACE] != 0:  # no tournament tree: a slot per unit (under a third of its width at 19,350 units)
        # not zeroed: the race writes UB_PERM / UB_POS at the start and UB_TMP before it reads it, and has no tree
        UB = np.empty((N_UB, uscale.shape[0]), np.int64)
    else:
        n_leaves = 1
        while n_leaves < uscale.shape[0]:
            n_leaves *= 2
        UB = np.zeros((N_UB, 2 * n_leaves), np.int64)
    UF = np.zeros(N_UF)
    for c in range(N_CLASSES):
        UF[UF_RATE + c] = PF[PF_RATE + c]
    UF[UF_INV_K] = PF[PF_INV_K]
    J = np.zeros(N_J, np.int64)
    J[J_PERSIST_END] = -1
    W = np.zeros(3 * N_W, np.int64)
    J[J_S] = s0 if P[P_STRATEGY] == STRAT_SPARE else (r if P[P_STRATEGY] == STRAT_REP else 1)
    J[J_C_NOM] = P[P_REP_COMP_US] if P[P_STRATEGY] == STRAT_REP else J[J_S] * P[P_COMP_US]
    J[J_CKPT_DUE] = P[P_PERIOD_US]
    J[J_CKPT_DUE_STEP] = P[P_CKPT_EVERY]
    res[R_S_MAX] = J[J_S]
    if P[P_CKPT_POLICY] != POLICY_PERIODIC:
        _crit_reset(P, st.E, st.G, GB, ssize, J)
    J[J_NEXT_READY] = _NEVER
    for g in range(n):
        GB[GB_READY, g] = _NEVER
    return _job(P, PF, gaps, victims, uscale, dptr, dgroups, life, rng, rrng, res, st, saved, gset, ssize, slive, Q,
                GB, next_t, UB, UF, J, W)


@_kernel
def _job(P, PF, gaps, victims, uscale, dptr, dgroups, life, rng, rrng, res, st, saved, gset, ssize, slive, Q, GB, next_t,
         UB, UF, J, W):
    """The job, step after step until ``n_steps`` are done (the steps are inlined here). Returns 0, or -1 if ReCtlr
    found no assignment (a bug)."""
    J[J_STATUS] = _src_init(P, Q, GB, next_t, UB, UF, gaps, uscale, life)
    if P[P_MEM_COPIES] > 0:  # the initial state is held like a restored checkpoint
        _place_copies(P, Q, GB)
    stopped_in_restart = False
    immediate = P[P_DETECT_IMMEDIATE] != 0
    while (J[J_STEPS_DONE] < P[P_N_STEPS] or (P[P_FINAL_CKPT] != 0 and J[J_CKPT_STEPS] < P[P_N_STEPS])) and \
            J[J_STATUS] == STATUS_OK:
        res[R_LOOPS] += 1
        _persist_done(J[J_T], P, J, W, res)  # an asynchronous save in flight may be complete
        if J[J_T] > P[P_CAP_US]:
            J[J_STATUS] = STATUS_CAPPED
            break
        t_f = _src_next_time(P, Q, next_t, UB, UF, gaps)
        if t_f == TRACE_OUT:
            J[J_STATUS] = STATUS_TRACE
            break
        if Q[Q_N_PEND] > 0:  # deaths not detected yet (a restart under stay_dead, a lost checkpoint): the next step
            t_f = J[J_T]     # detects them, no stretch
        if J[J_STEPS_DONE] >= P[P_N_STEPS]:
            m = 0  # every step is done: only the final checkpoint is left
        else:
            # the steps before the next failure at once, else one explicit step
            m = _quiet_stretch(t_f, P, PF, J, Q, W, rng, res)
            if m == 0:
                c_step = _step_compute(P, PF, J, rng)
                if immediate:
                    # the next failure interrupts the step if it arrives before the step ends (at its start
                    # included): detected at once, a wipe-out (CKPT-only)
                    a_s = _dur(P[P_AR_US], PF[PF_JITTER_SD], rng)
                    if Q[Q_N_PEND] > 0 or t_f < J[J_T] + c_step + a_s or t_f <= J[J_T]:
                        t_w = max(t_f, J[J_T])
                        if _src_take_until(t_w, P, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, res) != STATUS_OK:
                            J[J_STATUS] = STATUS_TRACE
                            break
                        _detect(P, PF, J, Q, GB, st, gset, slive, rng, res)
                        if _wipeout(t_w, t_w - J[J_T], 1, P, PF, J, W, Q, GB, next_t, UB, UF, gaps, victims, uscale,
                                    life, dptr, dgroups, st, saved, ssize, slive, rng, res):
                            stopped_in_restart = True
                            break
                        continue
                    _finish_step(J[J_T] + c_step, c_step, np.int64(0), np.int64(0), a_s, P, J, W, st.meta, res)
                else:
                    t_c = J[J_T] + c_step + _async_extra(c_step, PF, J, res)
                    # the failures up to the end of its compute phase are detected together at its all-reduce
                    if _src_take_until(t_c, P, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, res) != STATUS_OK:
                        J[J_STATUS] = STATUS_TRACE
                        break
                    n_pend = Q[Q_N_PEND]
                    wiped, extra_rc, extra_patch = _detect(P, PF, J, Q, GB, st, gset, slive, rng, res)
                    if wiped < 0:
                        return -1
                    if P[P_REPAIR] != REPAIR_NONE and not wiped and n_pend > 0:
                        _repair_schedule(t_c, n_pend, P, PF, J, GB, rrng)
                    if wiped:
                        if _wipeout(t_c, c_step, 1, P, PF, J, W, Q, GB, next_t, UB, UF, gaps, victims, uscale, life,
                                    dptr, dgroups, st, saved, ssize, slive, rng, res):
                            stopped_in_restart = True
                            break
                        continue
                    a_s = _dur(P[P_AR_US], PF[PF_JITTER_SD], rng)
                    _finish_step(t_c, c_step, extra_rc, extra_patch, a_s, P, J, W, st.meta, res)
        if P[P_REPAIR] != REPAIR_NONE and P[P_REJOIN_CKPT] == 0 and J[J_STEPS_DONE] < P[P_N_STEPS]:
            status = _rejoin(P, PF, J, W, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, st, saved, gset, ssize,
                             slive, rng, res)
            if status < 0:
                return -1
            if status != STATUS_OK:
                J[J_STATUS] = status
                break
        n_ck = res[R_CHECKPOINTS]
        status, t_w = _checkpoint_if_due(t_f, P, PF, J, W, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, rng, res)
        J[J_STATUS] = status
        if P[P_REPAIR] != REPAIR_NONE and P[P_REJOIN_CKPT] != 0 and t_w < 0 and res[R_CHECKPOINTS] > n_ck and \
                status == STATUS_OK and J[J_STEPS_DONE] < P[P_N_STEPS]:
            status = _rejoin(P, PF, J, W, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, st, saved, gset, ssize,
                             slive, rng, res)
            if status < 0:
                return -1
            J[J_STATUS] = status
        if t_w >= 0:  # a failure interrupted the save (immediate detection): a wipe-out at t_w
            if _src_take_until(t_w, P, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, res) != STATUS_OK:
                J[J_STATUS] = STATUS_TRACE
                break
            _detect(P, PF, J, Q, GB, st, gset, slive, rng, res)
            if _wipeout(t_w, np.int64(0), 0, P, PF, J, W, Q, GB, next_t, UB, UF, gaps, victims, uscale, life, dptr,
                        dgroups, st, saved, ssize, slive, rng, res):
                stopped_in_restart = True
                break
    # the failures after the last detection but before the end still count (they hit the running job); a run that
    # stopped inside a restart detected every failure up to it
    if J[J_STATUS] != STATUS_TRACE and not stopped_in_restart and \
            _src_tail(J[J_T], P, Q, GB, next_t, UB, UF, gaps, victims, life, dptr, dgroups, res) != STATUS_OK:
        J[J_STATUS] = STATUS_TRACE
    _keep_block(W, 0, res)  # the job is over: what it did is kept, whatever checkpoint holds it
    _keep_block(W, W_MEM, res)
    _keep_block(W, W_PERSIST, res)
    res[R_TTT] = J[J_T]
    res[R_STATUS] = J[J_STATUS]
    res[R_STEPS_DONE] = J[J_STEPS_DONE]
    res[R_ARRIVALS] = Q[Q_IA]
    return 0
