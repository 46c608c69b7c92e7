"""Numba kernel of the time-to-train timeline (private; the model is specified in :mod:`spare_mc.ttt.run`).

All times are integer microseconds, so that jumping over a quiet stretch of ``m`` identical steps (``t += m D``)
gives exactly the same clock as stepping through them one by one -- the property the SimPy twin checks.

Entry point and steps
---------------------
``timeline(P, PF, tables, trace, rng, rrng, res, step, reset, ext)`` simulates one job into ``res`` and returns 0,
or -1 if ReCtlr found no assignment where one must exist (a bug). ``tables`` holds SPARe's holder table and its
fully live ReCtlr state (:func:`live_state`, built once per layout by the caller) and Rep's replica sets, ``trace``
the failure source's input (the records of :mod:`spare_mc._kernels.timeline_layout`); ``step`` and ``reset`` are
ReCtlr's, as first-class functions (see "Compilation"). It copies the state, then :func:`_job` runs the model's
loop:

0. :func:`ckpt_cycles` -- right after a checkpoint, a restart or the start, without jitter and with periodic blocking
   saves (remote ones, or the memory-only ones before a remote save): the whole failure-free cycles (the steps up
   to a due checkpoint and that checkpoint) before the next failure at once, exact integer sums of what the loop
   would run, one iteration per cycle (the Llama 3 preset's CKPT-only job saves ~3,400 times between ~400
   failures);
1. :func:`quiet_stretch` -- the failure-free steps before the next failure (:func:`src_next_time`) in O(1): an
   exact jump without jitter, normal sums with jitter (none while dead groups are pending); if none fits, one
   explicit step:
2. :func:`step_compute` -- its compute phase, ``S`` stack layers;
3. :func:`src_take_until` -- the failures that arrive up to its all-reduce kill their groups;
4. :func:`detect` -- the all-reduce detects them: SPARe runs ReCtlr, Rep counts live set members, CKPT-only wipes
   out;
5. on a wipe-out :func:`wipeout`: ``_global_restart``, then :func:`src_restart` (or
   :func:`src_restart_again`) and the stacks' reset; else
   :func:`finish_step` (ReCtlr and shrink, patch, all-reduce);
6. :func:`checkpoint_if_due`, after a step or a stretch (with ``P_CKPT_LOST``, :func:`src_kills_within` says
   whether a failure arrived during the save);

and after the loop :func:`src_tail`: the failures after the last detection still hit the running job.

Modules
-------
The kernel is split by what it does; each module's functions take the records of
:mod:`spare_mc._kernels.timeline_layout` (which also lays out every array and its slots):

- :mod:`spare_mc._kernels.timeline` (this module) -- the entry point and the job's loop;
- :mod:`spare_mc._kernels.job_steps` -- the checkpoint cycles and quiet stretches, an explicit step, the detection,
  repair and rejoin;
- :mod:`spare_mc._kernels.ckpt_restart` -- checkpoints and global restarts;
- :mod:`spare_mc._kernels.failure_source` -- the failure source's interface, the system process and the log;
- :mod:`spare_mc._kernels.unit_clocks` -- the unit clocks and their race;
- :mod:`spare_mc._kernels.live_set` -- the live groups' set with rank select (the system process's victims);
- :mod:`spare_mc._kernels.timeline_helpers` -- jittered durations, the dynamic period, the critical groups.

The redundancy state (:class:`~spare_mc._kernels.timeline_layout.Redundancy`) is ReCtlr's
:class:`~spare_mc._kernels.rectlr_layout.State` (built for SPARe only), the fully live state a restart returns to
and ReCtlr's two entry points (``red.step``, ``red.reset``); Rep's is ``slive``, the live members of each replica
set (back to ``ssize`` at a restart); CKPT-only has none.

Failure source
--------------
Its state and input are the record ``src`` (:class:`~spare_mc._kernels.timeline_layout.Source`; the arrays are
described in :mod:`spare_mc._kernels.timeline_layout`). The loop calls only these, whatever the model; each branches
on ``P[P_SOURCE]`` inside:

- :func:`src_init` -- a new system at time 0;
- :func:`src_next_time` -- the time of the next failure: ``NEVER`` if none can come, ``TRACE_OUT`` if the trace
  ran out;
- :func:`src_take_until` -- every failure up to a time kills its groups, which become pending;
- :func:`src_restart` -- a global restart: the failures during it are absorbed, every group is back (with
  ``P_STAY_DEAD`` they kill groups, which stay dead and pending);
- :func:`src_tail` -- the failures after the last detection and before the end are counted.

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
Ties fire the lowest unit first. Only :func:`units_redraw` and :func:`units_fire` write ``next_t`` and only
:func:`units_min` searches it (the place for a heap). Sampled as a race (``P_UNIT_RACE``, "renew" only) the units
form classes of one rate each -- the groups, then each level's domains (``P_CLASS_END``, at most ``N_CLASSES``) --
and the next failure is drawn from the classes' active counts and rates (``_race_schedule``,
``_race_pick``) instead of ``next_t``.

The horizon
-----------
A gap or lifetime beyond ``HORIZON_US = 2^61`` (73,000 years in microseconds; group-microseconds for a gap) is
clamped to it (``make_trace`` clips the gaps before converting them to integers; :func:`units_redraw` the
lifetimes; ``_sys_consume`` gaps given directly), so it never happens within the job instead of overflowing.
The argument, given that every wall time of a job stays below ``2^61`` us (the caller's duty: the cap
``max_wall_factor x T0`` and the durations must stay far below it):

- a unit's failure time is ``t_from + lifetime < 2^61 + 2^61 = 2^62`` (``NEVER``, an inactive unit) ``< 2^63``;
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
``P_MASKED_DETECT_US``) and the patch mode (``P_PATCH_COST``) in :func:`detect`; groups that stay dead through a
restart (``P_STAY_DEAD``) in :func:`src_restart`; checkpoints every ``k`` steps (``P_CKPT_EVERY``, also honoured by
the stretches through ``J_CKPT_DUE_STEP``) or lost to a failure (``P_CKPT_LOST``) in :func:`checkpoint_if_due`;
the dynamic period in :func:`dynamic_threshold_us` (asked through :func:`dynamic_due`, which keeps a lower bound of
it, by :func:`checkpoint_if_due` and ``_stretch_exact``; the critical groups it needs are kept by :func:`detect`,
:func:`crit_reset` and :func:`crit_mark`); repair in :func:`repair_schedule` (at a masked detection) and
:func:`rejoin` (at a step boundary, or after a save), the stretches stopping at the first boundary a repair is done
by (``J_NEXT_READY``);
immediate detection (``P_DETECT_IMMEDIATE``) in the explicit step of :func:`_job`, in :func:`checkpoint_if_due`
(an interrupted save) and in ``_stretch_exact`` (whole steps before the failure); restarts started again
(``P_RESTART_AGAIN``) in :func:`src_restart_again`, called by :func:`wipeout`; the final checkpoint
(``P_FINAL_CKPT``) in :func:`checkpoint_if_due` and the loop's condition; in-memory copies and asynchronous saves
in ``_checkpoint_tiered`` (the save), :func:`persist_done` (a save completes), :func:`async_extra` (the slowed
compute of an explicit step), ``job_steps.async_stretch`` (the steps a save slows throughout, at once) and
``_global_restart`` (memory or remote).
Each is 0 by default and then costs one predictable branch. Deaths taken but not detected at the top of the loop
(after a ``P_STAY_DEAD`` restart or a ``P_CKPT_LOST`` save) force an explicit step. Next: dynamic periods where
``J_CKPT_DUE`` is set (:func:`checkpoint_if_due`, ``_global_restart``); restart times growing with ``N`` are
the caller's (``P_RESTART_US``).

Compilation (each function has one signature and is cached)
-----------------------------------------------------------
- Only :func:`timeline` (and :func:`live_state`, an entry point of its own) allocates; everything else is
  compiled without the numba runtime (``_nrt=False``). With it, an array argument costs an atomic reference-count
  increment and decrement per call whenever the callee branches (numba's pruning only removes them in
  straight-line code): about 15 ns per array and call here, which made a first version of this split 5x slower on
  Rep+CKPT.
- The steps the loop runs at every iteration are inlined into :func:`_job` (``inline="always"``), which passes
  dozens of arrays a call would push on the stack: the loop compiles to one function, as before the split. A record
  costs nothing there: numba passes a tuple to a compiled callee field by field, and an inlined step's record fields
  are plain values.
- A callee inherits ``_nrt=False`` unless it sets the option. ReCtlr's per-failure path (``rectlr_step``, compiled
  on its own since the timeline calls it through a pointer) is compiled without the runtime too; the one
  allocation it may need, a longer undo log, happens in ``_phases12_grown`` of :mod:`spare_mc._kernels.rectlr`,
  which declares ``_nrt=True`` itself (as does ``reset_state``), so that whoever calls them gets the runtime variant
  (numba's cache key does not record the flag, so a variant compiled without it must never exist).
- The price: :func:`_job` is a library of its own, which numba optimizes once alone and once more inside
  :func:`timeline`, so a first (uncached) compile takes ~2.5 s longer than the single-function kernel did.
- **Two variants** (the last argument ``ext``, chosen in Python by :func:`variant`). ``None`` compiles the *basic*
  variant: the paper's model and its masked-failure and patch costs, any strategy, jitter or not. Every branch of an
  option beyond it and modern checkpointing -- unit clocks and logs as the source, repair, dynamic checkpoint
  policies, immediate detection, lost checkpoints, stay-dead and restart-again restarts (:func:`_extended`) -- is
  guarded by ``ext is not None``, which numba's branch pruning removes before typing when ``ext`` is ``None``:
  neither the branch nor the kernels only it calls are compiled. :data:`EXTENDED` compiles the *extended* variant,
  with every option. The two run the same code where the options are off (a test compares them job by job), and
  the basic variant refuses (returns -2) parameters that need the extended one. A first paper SPARe job compiled in
  83 s of CPU time before (one variant with everything) and 27-31 s with the basic variant, at the same run time
  (2026-12-06, 2 cores shared with other jobs; CPU time, which contention barely moves).
- **ReCtlr is an argument**, not a callee: :func:`timeline` takes ReCtlr's step and reset as first-class functions
  (``step``, ``reset``: :mod:`spare_mc._kernels.rectlr_calls`) and :func:`~spare_mc._kernels.job_steps.detect`,
  :func:`~spare_mc._kernels.job_steps.rejoin` and :func:`~spare_mc._kernels.ckpt_restart.wipeout` call them
  through ``red``. So the kernel compiles without ReCtlr (a first CKPT-only or Rep+CKPT job never compiles it, and
  a first SPARe job compiles the two in two processes at once: :mod:`spare_mc.ttt.cold_start`), at the price of
  a call through a pointer per detection (about 2% on a SPARe job; 0.95-1.01x, median 0.97x, across the kinds of jobs
  of ``benchmarks/bench_options_revision.py``, 2026-12-07). The kernel no longer builds SPARe's fully
  live state itself: given none (``live0`` with no columns), a SPARe job returns -1, and the caller
  (:func:`spare_mc.ttt.run._run_us`) always gives one.
- Places that take failures rarely call :func:`~spare_mc._kernels.failure_source.take_until` (one compiled copy)
  instead of inlining the source's loop, and the interruptions of immediate detection share one call
  (:func:`_interrupted`); :func:`~spare_mc._kernels.ckpt_restart.wipeout` is a call too. A place that runs at every
  save or step is not rare, whatever its option: the check for failures during a save that may be lost
  (:func:`~spare_mc._kernels.failure_source.src_kills_within`) was a call making two calls, and the Llama 3
  preset's CKPT-only jobs (a check at each of ~3,400 saves) ran 1.8x slower in the extended variant until it was
  inlined (2026-12-07). Constant arguments of calls are int64 values, not literals (a literal compiles a
  specialisation of its own).
"""


from __future__ import annotations

import numpy as np
from numba import njit, types

from .cache import drop_if_dependencies_changed, tell_if_compiling
from .ckpt_restart import async_extra, checkpoint_if_due, persist_done, place_copies, wipeout
from .failure_source import src_init, src_next_time, src_tail, src_take_until
from .job_steps import ckpt_cycles, detect, finish_step, quiet_stretch, rejoin, repair_schedule, step_compute
from .live_set import live_set_width
from .rectlr import alloc, build_stacks, initial_assignment, saved_state
from .rectlr_layout import MAXDEG_, State
from .timeline_helpers import EXTENDED, crit_reset, dur, keep_block, kernel
from .timeline_layout import *  # noqa: F403 -- the layout's names, as this kernel's callers read them (TK.R_TTT)
from .timeline_layout import (GB_READY, J_CKPT_DUE, J_CKPT_DUE_STEP, J_CKPT_STEPS, J_C_NOM, J_NEXT_READY, J_PERSIST_END,
                              J_DYN_T, J_LAST_CK, J_S, J_STATUS, J_STEPS_DONE, J_T, NEVER, N_CLASSES, N_GB, N_J, N_Q,
                              N_UB, N_UF, N_W_BLOCKS, PF_INV_K, PF_JITTER_SD, PF_RATE, POLICY_PERIODIC, P_AR_US, P_CAP_US,
                              P_CKPT_EVERY, P_CKPT_POLICY, P_COMP_US, P_DETECT_IMMEDIATE, P_FINAL_CKPT, P_MEM_COPIES,
                              P_N_GROUPS, P_N_STEPS, P_PERIOD_US, P_R, P_REJOIN_CKPT, P_REPAIR, P_REP_COMP_US,
                              P_STRATEGY, P_UNIT_RACE, Q_IA, Q_N_PEND, REPAIR_NONE, R_ARRIVALS, R_CHECKPOINTS, R_LOOPS,
                              R_STATUS, R_STEPS_DONE, R_S_MAX, R_TTT, STATUS_CAPPED, STATUS_OK, STATUS_TRACE, STRAT_REP,
                              STRAT_SPARE, TRACE_OUT, UF_INV_K, UF_RATE, W_MEM, W_PERSIST, W_SINCE, Job, Redundancy,
                              Source, Tables, Trace)

# the cached kernels of this module contain the code of every other kernel module of the timeline, the layouts'
# slots and some of ReCtlr's (live_state its initial assignment, timeline its alloc and saved_state; the timeline
# calls the rest through first-class functions): recompile them when those change
drop_if_dependencies_changed(__file__, ("ckpt_restart.py", "draws.py", "failure_source.py", "job_steps.py",
                                        "live_set.py", "rectlr.py", "rectlr_layout.py", "slots.py",
                                        "timeline_helpers.py", "timeline_layout.py", "unit_clocks.py"))



# ------------------------------------------------------------------------------------------------ the variants
def _extended(P):
    """Whether the job of parameters ``P`` needs the extended variant of the kernel: a failure source other than
    the system clock (unit clocks, a log), repair, a dynamic checkpoint policy, immediate detection, checkpoints lost
    to failures, groups that stay dead or restarts started again. Every branch the basic variant prunes is guarded by
    one of these (and ``ext is not None``). Modern checkpointing (in-memory copies, asynchronous saves) is in both
    variants: the phase map runs it beside the paper's model, and one variant then serves ``reproduce``."""
    return (P[P_SOURCE] != SRC_SYSTEM or P[P_REPAIR] != REPAIR_NONE or P[P_CKPT_POLICY] != POLICY_PERIODIC
            or P[P_DETECT_IMMEDIATE] != 0 or P[P_CKPT_LOST] != 0 or P[P_STAY_DEAD] != 0
            or P[P_RESTART_AGAIN] != 0)


#: :func:`_extended` compiled, for :func:`timeline`'s check
extended = kernel(_extended)


_noticed: set = set()  # the variants :func:`notice_first_compile` has looked at in this process


def variant_signature(extended: bool):
    """A test of a compiled signature of :func:`timeline` (for :func:`~spare_mc._kernels.cache.compiled_or_cached`):
    whether it is the extended variant's (``extended``) or the basic one's (its last argument's type is ``None``)."""
    return lambda sig: isinstance(sig[-1], types.NoneType) != extended


def notice_first_compile(ext) -> bool:
    """Before a first call of :func:`timeline` in variant ``ext``: tell the user once if it compiles (about 11 s for
    the basic variant and 33 s for the extended one from an empty cache on 2 cores, without ReCtlr, 2026-12-07; see
    :func:`~spare_mc._kernels.cache.tell_if_compiling`). Returns whether this is the variant's first call in this
    process (which may compile). O(1) after the first call of each variant."""
    basic = ext is None
    if basic in _noticed:
        return False
    _noticed.add(basic)
    tell_if_compiling("the timeline kernel" if basic else "the timeline kernel (its extended variant)",
                      11 if basic else 33, timeline, variant_signature(not basic))
    return True


def variant(P):
    """The ``ext`` argument of :func:`timeline` for parameters ``P``: ``None`` (the basic variant) unless
    :func:`_extended`, else :data:`~spare_mc._kernels.timeline_helpers.EXTENDED`. Plain Python: it chooses the
    compiled variant, so it must run before numba types the call."""
    return EXTENDED if _extended(P) else None

# -------------------------------------------------------------------------------------------------- the kernel
@njit(cache=True)
def live_state(holders):
    """SPARe's redundancy state of a fully live system on ``holders`` (``N x r``): ReCtlr's
    :class:`~spare_mc._kernels.rectlr_layout.State` with the stacks built and the initial assignment made, and its
    return code (< 0: no assignment). :func:`timeline` copies it (the caller's per-config cache:
    building it costs ~0.1 ms at N = 600, r = 8)."""
    n, r = holders.shape
    st = alloc(n, r)
    st.meta[MAXDEG_] = build_stacks(holders, st.E, st.G)
    rc = initial_assignment(n, r, st)
    return st, rc


@njit(cache=True)
def timeline(P, PF, tables, trace, rng, rrng, res, step, reset, ext):
    """Simulate one training job; results in ``res`` (``R_*`` slots, times in microseconds). Returns 0, -1 if
    ReCtlr found no assignment although no type was wiped out (a bug), or -2 if ``ext`` is ``None`` (the basic
    variant) and ``P`` needs the extended one (:func:`variant` chooses ``ext``; see "Compilation" above). Allocates
    the state, then runs :func:`_job`.

    ``tables`` and ``trace`` are the fields of a :class:`~spare_mc._kernels.timeline_layout.Tables` (its ``live0``
    the fields of a :class:`~spare_mc._kernels.rectlr_layout.State`) and of a
    :class:`~spare_mc._kernels.timeline_layout.Trace`, as plain tuples (see "Records" in
    :mod:`spare_mc._kernels.timeline_layout`): ``holders`` is SPARe's holder table (``N x r``; only its shape is read
    otherwise); ``live0`` is SPARe's state of a fully live system on it, from :func:`live_state` (copied, never
    written), or blocks with no columns (the other strategies; for SPARe the kernel then returns -1); ``gset``
    (``N``) and ``ssize`` are Rep's replica sets: the set of each group and the members of each set (empty
    otherwise). ``rng`` draws the jitter (only with ``PF_JITTER_SD > 0``), ``rrng`` the lognormal repair times (only
    with ``REPAIR_LOGNORMAL``). ``step`` and ``reset`` are ReCtlr's, as first-class functions
    (:func:`spare_mc._kernels.rectlr_calls.calls`; stand-ins for the other strategies).
    """
    if ext is None and extended(P):
        return -2
    tb = Tables(*tables)
    live0 = State(*tb.live0)
    tr = Trace(*trace)
    res[:] = 0
    n, r = P[P_N_GROUPS], P[P_R]
    # SPARe's ReCtlr state of a fully live system, and a copy to return to at restarts
    if live0.E.shape[1] > 0:  # the heap H is scratch (read only below its size): not copied
        st = State(live0.E.copy(), live0.G.copy(), live0.D.copy(), np.empty_like(live0.H), live0.meta.copy(),
                   live0.ulog.copy(), live0.pplan.copy(), live0.out.copy())
    elif P[P_STRATEGY] == STRAT_SPARE:  # no fully live state: ReCtlr found no initial assignment
        return -1
    else:
        st = alloc(n, tb.holders.shape[1])
    saved = saved_state(st, n)
    s0 = saved.s
    # the redundancy state: ReCtlr's and the one it returns to; Rep's replica sets and the live members of each
    red = Redundancy(st, saved, tb.gset, tb.ssize, tb.ssize.copy(), step, reset)
    # the failure source and the job
    Q = np.zeros(N_Q, np.int64)
    GB = np.zeros((N_GB, max(n + 1, live_set_width(n))), np.int64)
    n_units = tr.uscale.shape[0]
    next_t = np.empty(n_units, np.int64)
    if P[P_UNIT_RACE] != 0:  # no tournament tree: a slot per unit (under a third of its width at 19,350 units)
        # not zeroed: the race writes UB_PERM / UB_POS at the start and UB_TMP before it reads it, and has no tree
        UB = np.empty((N_UB, n_units), np.int64)
    else:
        n_leaves = 1
        while n_leaves < n_units:
            n_leaves *= 2
        UB = np.zeros((N_UB, 2 * n_leaves), np.int64)
    UF = np.zeros(N_UF)
    for c in range(N_CLASSES):
        UF[UF_RATE + c] = PF[PF_RATE + c]
    UF[UF_INV_K] = PF[PF_INV_K]
    J = np.zeros(N_J, np.int64)
    J[J_PERSIST_END] = -1
    J[J_DYN_T] = -1  # no bound of the dynamic period yet
    W = np.zeros(N_W_BLOCKS, np.int64)
    J[J_S] = s0 if P[P_STRATEGY] == STRAT_SPARE else (r if P[P_STRATEGY] == STRAT_REP else 1)
    J[J_C_NOM] = P[P_REP_COMP_US] if P[P_STRATEGY] == STRAT_REP else J[J_S] * P[P_COMP_US]
    J[J_CKPT_DUE] = P[P_PERIOD_US]
    J[J_CKPT_DUE_STEP] = P[P_CKPT_EVERY]
    res[R_S_MAX] = J[J_S]
    if ext is not None and P[P_CKPT_POLICY] != POLICY_PERIODIC:
        crit_reset(P, st.E, st.G, GB, red.ssize, J)
    J[J_NEXT_READY] = NEVER
    for g in range(n):
        GB[GB_READY, g] = NEVER
    src = Source(Q, GB, next_t, UB, UF, tr.gaps, tr.victims, tr.uscale, tr.life, tr.dptr, tr.dgroups)
    return _job(P, PF, Job(J, W, res), src, red, rng, rrng, ext)



# _interrupted: the job goes on, the trace ran out, it stopped in a restart. The constant arguments of the calls below
# are int64 values, not literals: a literal argument compiles a specialisation of its own (two of wipeout, two of
# _interrupted, each a full compilation)
_GO_ON, _TRACE_OUT, _STOPPED = 0, 1, 2


@kernel
def _interrupted(t_w, c_step, in_step, P, PF, job, src, red, rng, ext):
    """Immediate detection (``P_DETECT_IMMEDIATE``): a failure at ``t_w`` interrupted the step in progress (after
    ``c_step`` of it, ``in_step`` 1) or a save (``in_step`` 0): the failures up to it are taken and detected, and
    the job wipes out. Returns ``_GO_ON``, ``_TRACE_OUT`` (``J[J_STATUS]`` set) or ``_STOPPED`` (inside the
    restart).

    A call, not inlined: both of the job loop's interruptions share one compiled copy of the source's loop and of
    the detection, which inlined at each place made a first compilation of :func:`_job` longer for a rare path."""
    J = job.J
    if src_take_until(t_w, P, src, job.res, ext) != STATUS_OK:
        J[J_STATUS] = STATUS_TRACE
        return _TRACE_OUT
    detect(P, PF, job, src, red, rng, ext)
    if wipeout(t_w, c_step, in_step, P, PF, job, src, red, rng, ext):
        return _STOPPED
    return _GO_ON

@kernel
def _job(P, PF, job, src, red, rng, rrng, ext):
    """The job, step after step until ``n_steps`` are done (the steps are inlined here). Returns 0, or -1 if ReCtlr
    found no assignment (a bug)."""
    J, W, res, Q, GB = job.J, job.W, job.res, src.Q, src.GB
    J[J_STATUS] = src_init(P, src, ext)
    if P[P_MEM_COPIES] > 0:  # the initial state is held like a restored checkpoint
        place_copies(P, Q, GB)
    stopped_in_restart = False
    immediate = P[P_DETECT_IMMEDIATE] != 0
    while (J[J_STEPS_DONE] < P[P_N_STEPS] or (P[P_FINAL_CKPT] != 0 and J[J_CKPT_STEPS] < P[P_N_STEPS])) and \
            J[J_STATUS] == STATUS_OK:
        res[R_LOOPS] += 1
        persist_done(J[J_T], P, job)  # an asynchronous save in flight may be complete
        if J[J_T] > P[P_CAP_US]:
            J[J_STATUS] = STATUS_CAPPED
            break
        t_f = src_next_time(P, src, ext)
        if t_f == TRACE_OUT:
            J[J_STATUS] = STATUS_TRACE
            break
        if J[J_LAST_CK] == J[J_T]:  # right after a checkpoint or a restart: the failure-free cycles before t_f
            res[R_LOOPS] += ckpt_cycles(t_f, P, PF, job, Q, ext)
        if Q[Q_N_PEND] > 0:  # deaths not detected yet (a restart under stay_dead, a lost checkpoint): the next step
            t_f = J[J_T]     # detects them, no stretch
        if J[J_STEPS_DONE] >= P[P_N_STEPS]:
            m = 0  # every step is done: only the final checkpoint is left
        else:
            # the steps before the next failure at once, else one explicit step
            m = quiet_stretch(t_f, P, PF, job, Q, rng, ext)
            if m == 0:
                c_step = step_compute(P, PF, J, rng)
                if ext is not None and immediate:
                    # the next failure interrupts the step if it arrives before the step ends (at its start
                    # included): detected at once, a wipe-out (CKPT-only)
                    a_s = dur(P[P_AR_US], PF[PF_JITTER_SD], rng)
                    if Q[Q_N_PEND] > 0 or t_f < J[J_T] + c_step + a_s or t_f <= J[J_T]:
                        t_w = max(t_f, J[J_T])
                        how = _interrupted(t_w, t_w - J[J_T], np.int64(1), P, PF, job, src, red, rng, ext)
                        if how == _STOPPED:
                            stopped_in_restart = True
                        if how != _GO_ON:
                            break
                        continue
                    finish_step(J[J_T] + c_step, c_step, np.int64(0), np.int64(0), a_s, P, job, red.st.meta)
                else:
                    t_c = J[J_T] + c_step + async_extra(c_step, PF, J, res)
                    # the failures up to the end of its compute phase are detected together at its all-reduce
                    if src_take_until(t_c, P, src, res, ext) != STATUS_OK:
                        J[J_STATUS] = STATUS_TRACE
                        break
                    n_pend = Q[Q_N_PEND]
                    wiped, extra_rc, extra_patch = detect(P, PF, job, src, red, rng, ext)
                    if wiped < 0:
                        return -1
                    if ext is not None and P[P_REPAIR] != REPAIR_NONE and not wiped and n_pend > 0:
                        repair_schedule(t_c, n_pend, P, PF, J, GB, rrng)
                    if wiped:
                        if wipeout(t_c, c_step, np.int64(1), P, PF, job, src, red, rng, ext):
                            stopped_in_restart = True
                            break
                        continue
                    a_s = dur(P[P_AR_US], PF[PF_JITTER_SD], rng)
                    finish_step(t_c, c_step, extra_rc, extra_patch, a_s, P, job, red.st.meta)
        if ext is not None and P[P_REPAIR] != REPAIR_NONE and P[P_REJOIN_CKPT] == 0 and \
                J[J_STEPS_DONE] < P[P_N_STEPS]:
            status = rejoin(P, PF, job, src, red, rng)
            if status < 0:
                return -1
            if status != STATUS_OK:
                J[J_STATUS] = status
                break
        n_ck = res[R_CHECKPOINTS]
        status, t_w = checkpoint_if_due(t_f, P, PF, job, src, rng, ext)
        J[J_STATUS] = status
        if ext is not None and P[P_REPAIR] != REPAIR_NONE and P[P_REJOIN_CKPT] != 0 and t_w < 0 and \
                res[R_CHECKPOINTS] > n_ck and \
                status == STATUS_OK and J[J_STEPS_DONE] < P[P_N_STEPS]:
            status = rejoin(P, PF, job, src, red, rng)
            if status < 0:
                return -1
            J[J_STATUS] = status
        if ext is not None and t_w >= 0:  # a failure interrupted the save (immediate detection): a wipe-out at t_w
            how = _interrupted(t_w, np.int64(0), np.int64(0), P, PF, job, src, red, rng, ext)
            if how == _STOPPED:
                stopped_in_restart = True
            if how != _GO_ON:
                break
    # the failures after the last detection but before the end still count (they hit the running job); a run that
    # stopped inside a restart detected every failure up to it
    if J[J_STATUS] != STATUS_TRACE and not stopped_in_restart and \
            src_tail(J[J_T], P, src, res, ext) != STATUS_OK:
        J[J_STATUS] = STATUS_TRACE
    keep_block(W, W_SINCE, res)  # the job is over: what it did is kept, whatever checkpoint holds it
    keep_block(W, W_MEM, res)
    keep_block(W, W_PERSIST, res)
    res[R_TTT] = J[J_T]
    res[R_STATUS] = J[J_STATUS]
    res[R_STEPS_DONE] = J[J_STEPS_DONE]
    res[R_ARRIVALS] = Q[Q_IA]
    return 0
