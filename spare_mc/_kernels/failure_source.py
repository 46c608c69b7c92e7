"""The timeline's failure source (private): the system-level renewal trace, the unit clocks (in
:mod:`spare_mc._kernels.unit_clocks`) or a failure log, behind one interface (see "Failure source" in
:mod:`spare_mc._kernels.timeline`).

The loop calls only these, whatever the model; each branches on ``P[P_SOURCE]`` inside and takes the source's record
``src`` (:class:`~spare_mc._kernels.timeline_layout.Source`: its state and its input):

- :func:`src_init` -- a new system at time 0;
- :func:`src_next_time` -- the time of the next failure: ``NEVER`` if none can come, ``TRACE_OUT`` if the trace ran
  out;
- :func:`src_take_until` -- every failure up to a time kills its groups, which become pending;
- :func:`src_restart` -- a global restart: the failures during it are absorbed, every group is back (with
  ``P_STAY_DEAD``, :func:`_src_restart_stay_dead`: they kill groups, which stay dead and pending);
  :func:`src_restart_again` -- one under ``P_RESTART_AGAIN``;
- :func:`src_kills_within` -- whether a failure arrived during a save (``P_CKPT_LOST``);
- :func:`src_tail` -- the failures after the last detection and before the end are counted.

Each returns ``STATUS_OK``, or ``STATUS_TRACE`` when the trace ran out (the caller reruns with a longer one; the
results of such a run are meaningless).
"""

from __future__ import annotations

import numpy as np

from .cache import drop_if_dependencies_changed
from .live_set import live_fill, live_take
from .timeline_helpers import EXTENDED, dur, kernel, kill_if_live, step
from .timeline_layout import (DEAD_KEPT, GB_BACK, GB_LIVE, GB_MEMCOPY, GB_PEND, GB_READY, GB_UP, HORIZON_US, NEVER,
                              N_CLASSES, N_Q, PARKED, PF_JITTER_SD, P_CAP_US, P_KEEP_AGES, P_LIVE_SCALING, P_N_GROUPS,
                              P_N_UNITS, P_REPAIR, P_SOURCE, P_STAY_DEAD, P_UNIT_RACE, Q_IA, Q_M, Q_M_FROM, Q_N_PEND,
                              Q_N_UP, Q_REM, Q_T_LAST, Q_T_NEXT, Q_T_REF, REPAIR_LOG, R_ABSORBED, R_FAILURES, R_RESTART,
                              SRC_LOG, SRC_SYSTEM, SRC_UNITS, STATUS_CAPPED, STATUS_OK, STATUS_TRACE, TRACE_OUT,
                              UB_PERM, UB_POS)
from .unit_clocks import (race_after_stay, race_renew, tour_build, unit_off, units_absorb, units_fire, units_min,
                          units_next, units_redraw, units_redraw_after_stay, units_redraw_kept)

# the cached kernels of this module contain the live set's, the unit clocks' and the helpers' code and the layouts'
# slots: recompile them when those change
drop_if_dependencies_changed(__file__, ("live_set.py", "rectlr_layout.py", "slots.py", "timeline_helpers.py",
                                        "timeline_layout.py", "unit_clocks.py"))


# ---------------------------------------------------------------------------------------------- system process
@kernel
def _all_live(GB, n):
    """Every group is live (the system source's live set and the ``GB_UP`` row)."""
    live_fill(GB[GB_LIVE], n)
    for g in range(n):
        GB[GB_UP, g] = 1


@kernel
def sys_rate(P, Q):
    """Operational units per microsecond outside restarts: the live groups with live scaling, else ``N``."""
    return Q[Q_N_UP] if P[P_LIVE_SCALING] != 0 else P[P_N_GROUPS]


@kernel
def _sys_arrival(Q, rate):
    """Wall time of the next arrival if the operational clock runs at ``rate`` (``NEVER`` if it stands still)."""
    if rate <= 0:
        return NEVER
    return Q[Q_T_REF] + (Q[Q_REM] + rate - 1) // rate


@kernel
def _sys_consume(t_f, Q, gaps):
    """The next arrival happens at wall time ``t_f``: it becomes the reference point of the operational clock, and
    the following gap is queued (clamped at the horizon)."""
    Q[Q_T_REF] = t_f
    Q[Q_T_LAST] = t_f
    Q[Q_IA] += 1
    if Q[Q_IA] < gaps.shape[0]:
        Q[Q_REM] = min(gaps[Q[Q_IA]], HORIZON_US)


# ------------------------------------------------------------------------------------------------------- a log
@kernel
def _log_fire(e, P, Q, GB, gaps, victims, dptr, dgroups):
    """Log event ``e`` kills the live groups it touches; they become pending. Returns the number killed.

    With ``REPAIR_LOG`` (``victims`` = the events' repair times, -1 unknown) every group it touches is back no
    earlier than the event's end of repair (``NEVER`` if unknown): a group it kills gets that time (``GB_BACK``), a
    group already dead keeps the later of the two, and so does its scheduled rejoin (``GB_READY``, if its death was
    already detected; ``J_NEXT_READY`` may then be early, which :func:`rejoin` tolerates)."""
    killed = 0
    log_repair = P[P_REPAIR] == REPAIR_LOG
    back = NEVER
    if log_repair and victims[e] >= 0:
        back = gaps[e] + victims[e]
    for j in range(dptr[e], dptr[e + 1]):
        g = dgroups[j]
        k = kill_if_live(g, Q, GB)
        killed += k
        if log_repair:
            if k == 1:
                GB[GB_BACK, g] = back
            else:
                GB[GB_BACK, g] = max(GB[GB_BACK, g], back)
                if GB[GB_READY, g] != NEVER:  # detected: its rejoin waits for the new repair too
                    GB[GB_READY, g] = DEAD_KEPT if back == NEVER else max(GB[GB_READY, g], back)
    Q[Q_N_UP] -= killed
    return killed


@kernel
def _log_next(Q, gaps):
    """Time of the log's next event (``gaps`` holds the event times), ``NEVER`` after the last one."""
    return gaps[Q[Q_IA]] if Q[Q_IA] < gaps.shape[0] else NEVER


# --------------------------------------------------------------------------------------------- the interface
@kernel
def src_init(P, src, ext):
    """A new system at time 0: every group live, nothing pending, the first arrival queued (system) or every
    unit's first lifetime drawn (unit clocks). Returns ``STATUS_OK`` or ``STATUS_TRACE``."""
    Q, GB, next_t, UB, UF, gaps, life = src.Q, src.GB, src.next_t, src.UB, src.UF, src.gaps, src.life
    n = P[P_N_GROUPS]
    for i in range(N_Q):
        Q[i] = 0
    Q[Q_N_UP] = n
    live_fill(GB[GB_LIVE], n)
    for g in range(n):
        GB[GB_UP, g] = 1
    if ext is not None and P[P_SOURCE] == SRC_UNITS:
        if P[P_UNIT_RACE] != 0:
            for u in range(P[P_N_UNITS]):
                UB[UB_PERM, u] = u
                UB[UB_POS, u] = u
            return race_renew(np.int64(0), P, Q, UB, UF, life)
        next_t[:] = NEVER  # every unit inactive: all are drawn under either age policy
        return units_redraw(np.int64(0), np.int64(0), P, src)
    if ext is not None and P[P_SOURCE] == SRC_LOG:
        return STATUS_OK
    Q[Q_REM] = min(gaps[0], HORIZON_US) if gaps.shape[0] > 0 else HORIZON_US
    return STATUS_OK


@step
def src_next_time(P, src, ext):
    """Time of the next failure: ``NEVER`` if none can come, ``TRACE_OUT`` if the system trace ran out."""
    Q, next_t, UB, UF, gaps = src.Q, src.next_t, src.UB, src.UF, src.gaps
    if ext is not None and P[P_SOURCE] == SRC_UNITS:
        return units_next(P, Q, next_t, UB, UF)
    if ext is not None and P[P_SOURCE] == SRC_LOG:
        return _log_next(Q, gaps)
    if Q[Q_IA] >= gaps.shape[0]:
        return TRACE_OUT
    return _sys_arrival(Q, sys_rate(P, Q))


@step
def src_take_until(t, P, src, res, ext):
    """Every failure at or before ``t`` kills its groups (a uniformly random live group per system arrival; a
    unit's group or domain), which become pending. Returns ``STATUS_OK`` or ``STATUS_TRACE``."""
    Q, GB, next_t, UB, UF, gaps, victims = src.Q, src.GB, src.next_t, src.UB, src.UF, src.gaps, src.victims
    dptr, dgroups = src.dptr, src.dgroups
    if ext is not None and P[P_SOURCE] == SRC_UNITS:
        while units_next(P, Q, next_t, UB, UF) <= t:
            killed = units_fire(P, src)
            if killed < 0:
                return STATUS_TRACE
            res[R_FAILURES] += killed
        return STATUS_OK
    if ext is not None and P[P_SOURCE] == SRC_LOG:
        while _log_next(Q, gaps) <= t:
            res[R_FAILURES] += _log_fire(Q[Q_IA], P, Q, GB, gaps, victims, dptr, dgroups)
            Q[Q_IA] += 1
        return STATUS_OK
    n = P[P_N_GROUPS]
    while True:
        if Q[Q_IA] >= gaps.shape[0]:
            return STATUS_TRACE
        t_f = _sys_arrival(Q, sys_rate(P, Q))
        if t_f > t:
            return STATUS_OK
        if Q[Q_N_UP] > 0:  # else (no live scaling, every group dead) the arrival hits nothing
            g = live_take(GB[GB_LIVE], n, (victims[Q[Q_IA]] * Q[Q_N_UP]) >> 32)
            Q[Q_N_UP] -= 1
            GB[GB_UP, g] = 0
            GB[GB_MEMCOPY, g] = 0
            GB[GB_PEND, Q[Q_N_PEND]] = g
            Q[Q_N_PEND] += 1
            res[R_FAILURES] += 1
        _sys_consume(t_f, Q, gaps)



@kernel
def take_until(t, P, src, res):
    """:func:`src_take_until` as a call, for the places that take failures rarely (a restart, the end of the job, a
    repair, the dynamic policy's look): one compiled copy of the source's loop for them all. Inlining it at every
    such place made the timeline's first compilation several seconds longer and saved no run time; the job loop's
    hot places (an explicit step's detection, :func:`src_kills_within` at every save that may be lost) inline
    :func:`src_take_until` themselves."""
    return src_take_until(t, P, src, res, EXTENDED)

@kernel
def src_restart(t_from, t_end, P, src, res, ext):
    """A global restart from ``t_from`` to ``t_end``: the failures before ``t_end`` are absorbed (the system clock
    runs at the full rate ``N`` meanwhile; unit clocks are redrawn from ``t_end`` under the age policy), and every
    group is back; with ``P_STAY_DEAD`` see :func:`_src_restart_stay_dead`. Returns ``STATUS_OK`` or
    ``STATUS_TRACE``."""
    Q, GB, next_t, UB, UF, gaps, life = src.Q, src.GB, src.next_t, src.UB, src.UF, src.gaps, src.life
    if ext is not None and P[P_STAY_DEAD] != 0:
        return _src_restart_stay_dead(t_from, t_end, P, src, res)
    n = P[P_N_GROUPS]
    if ext is not None and P[P_SOURCE] == SRC_UNITS:
        if P[P_UNIT_RACE] != 0:  # the arrivals before the end are absorbed, then every unit is new
            while Q[Q_T_NEXT] < t_end:
                if units_absorb(P, src) != STATUS_OK:
                    return STATUS_TRACE
                res[R_ABSORBED] += 1
            if race_renew(t_end, P, Q, UB, UF, life) != STATUS_OK:
                return STATUS_TRACE
        elif P[P_KEEP_AGES] != 0:  # the units due before the end are absorbed: O(log units) each
            t_f, u = units_min(next_t, UB, UF)
            while t_f < t_end:
                unit_off(u, P, Q, next_t, UB)
                res[R_ABSORBED] += 1
                t_f, u = units_min(next_t, UB, UF)
            if units_redraw_kept(t_end, P, src) != STATUS_OK:
                return STATUS_TRACE
        else:
            for u in range(next_t.shape[0]):
                if next_t[u] < t_end:
                    res[R_ABSORBED] += 1
            if units_redraw(t_end, t_end, P, src) != STATUS_OK:
                return STATUS_TRACE
        for g in range(n):
            GB[GB_UP, g] = 1
    elif ext is not None and P[P_SOURCE] == SRC_LOG:  # the events before the end are absorbed
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
        Q[Q_REM] -= sys_rate(P, Q) * (t_from - Q[Q_T_REF])
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


@kernel
def _src_restart_stay_dead(t_from, t_end, P, src, res):
    """A global restart from ``t_from`` to ``t_end`` under ``P_STAY_DEAD``: the groups dead at ``t_from`` are back;
    the failures before ``t_end`` kill live groups as outside restarts (system clock at its usual rate, live-scaled
    or ``N``; unit clocks: the units active at ``t_from`` keep running, those that fired before are parked), and
    their groups stay dead and pending when the job resumes. Returns ``STATUS_OK`` or ``STATUS_TRACE``."""
    Q, GB, next_t, UB, gaps = src.Q, src.GB, src.next_t, src.UB, src.gaps
    n = P[P_N_GROUPS]
    for c in range(N_CLASSES):
        Q[Q_M_FROM + c] = Q[Q_M + c]
    if P[P_SOURCE] == SRC_UNITS:
        if P[P_UNIT_RACE] == 0:
            for u in range(next_t.shape[0]):
                if next_t[u] == NEVER:
                    next_t[u] = PARKED
            tour_build(next_t, UB)
        for g in range(n):
            GB[GB_UP, g] = 1
    elif P[P_SOURCE] == SRC_LOG:
        for g in range(n):
            GB[GB_UP, g] = 1
    else:
        if Q[Q_IA] >= gaps.shape[0]:
            return STATUS_TRACE
        Q[Q_REM] -= sys_rate(P, Q) * (t_from - Q[Q_T_REF])  # bank the old rate, as in src_restart
        Q[Q_T_REF] = t_from
        _all_live(GB, n)
    Q[Q_N_UP] = n
    Q[Q_N_PEND] = 0
    status = take_until(t_end - 1, P, src, res)
    if status != STATUS_OK or P[P_SOURCE] != SRC_UNITS:
        return status
    if P[P_UNIT_RACE] != 0:
        return race_after_stay(t_end, P, src)
    return units_redraw_after_stay(t_end, P, src)


@kernel
def src_restart_again(t_from, t_end, r_base, P, PF, src, rng, res):
    """A global restart from ``t_from`` under ``P_RESTART_AGAIN``, first due to end at ``t_end``: every failure
    before the current end starts the restart again from its arrival (a new restart time of nominal ``r_base``,
    jittered; counted as
    absorbed). The system clock runs at the full rate ``N`` throughout; a unit that fires is inactive until the end,
    when lifetimes are redrawn as after any restart. Every group is back at the end. Returns ``(status, the end)``:
    ``STATUS_CAPPED`` (and the end) as soon as an attempt would end past the cap, unsimulated beyond its start."""
    Q, GB, next_t, UB, UF, gaps, life = src.Q, src.GB, src.next_t, src.UB, src.UF, src.gaps, src.life
    n = P[P_N_GROUPS]
    sd = PF[PF_JITTER_SD]
    if P[P_SOURCE] == SRC_UNITS:
        while True:
            t_f = units_next(P, Q, next_t, UB, UF)
            if t_f >= t_end:
                break
            res[R_ABSORBED] += 1
            if units_absorb(P, src) != STATUS_OK:
                return STATUS_TRACE, t_end
            r_s = dur(r_base, sd, rng)
            res[R_RESTART] += t_f + r_s - t_end
            t_end = t_f + r_s
            if t_end > P[P_CAP_US]:
                return STATUS_CAPPED, t_end
        if P[P_UNIT_RACE] != 0:
            status = race_renew(t_end, P, Q, UB, UF, life)
        elif P[P_KEEP_AGES] != 0:  # every unit due before the end was absorbed (off) in the loop
            status = units_redraw_kept(t_end, P, src)
        else:
            status = units_redraw(t_end, t_end, P, src)
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
            r_s = dur(r_base, sd, rng)
            res[R_RESTART] += t_f + r_s - t_end
            t_end = t_f + r_s
            if t_end > P[P_CAP_US]:
                return STATUS_CAPPED, t_end
        for g in range(n):
            GB[GB_UP, g] = 1
    else:
        if Q[Q_IA] >= gaps.shape[0]:
            return STATUS_TRACE, t_end
        Q[Q_REM] -= sys_rate(P, Q) * (t_from - Q[Q_T_REF])  # bank the old rate, as in src_restart
        Q[Q_T_REF] = t_from
        while True:
            if Q[Q_IA] >= gaps.shape[0]:
                return STATUS_TRACE, t_end
            t_f = _sys_arrival(Q, n)
            if t_f >= t_end:
                break
            res[R_ABSORBED] += 1
            _sys_consume(t_f, Q, gaps)
            r_s = dur(r_base, sd, rng)
            res[R_RESTART] += t_f + r_s - t_end
            t_end = t_f + r_s
            if t_end > P[P_CAP_US]:
                return STATUS_CAPPED, t_end
        _all_live(GB, n)
    Q[Q_N_UP] = n
    Q[Q_N_PEND] = 0
    return STATUS_OK, t_end


@step
def src_kills_within(t0, t1, P, src, res):
    """The failures before ``t1`` are taken now (they become pending, as the next step would make them); returns
    ``(status, groups killed by those that arrive in [t0, t1))``.

    Inlined, with one inlined copy of the source's loop for both bounds: with ``P_CKPT_LOST`` it runs at every
    checkpoint, and as a call making two calls of :func:`take_until` it made a CKPT-only job of the Llama 3 preset
    (3,378 checkpoints) 1.8x slower (2026-12-07, issue 38; docs/results/speed.md)."""
    f0 = res[R_FAILURES]
    for i in range(2):
        if i == 1:
            f0 = res[R_FAILURES]
        status = src_take_until((t0 if i == 0 else t1) - 1, P, src, res, EXTENDED)
        if status != STATUS_OK:
            return status, (res[R_FAILURES] - f0) * i  # 0 if the first take failed
    return STATUS_OK, res[R_FAILURES] - f0


@kernel
def src_tail(t, P, src, res, ext):
    """The failures after the last detection and before the end ``t`` still hit the running job: count them.
    Returns ``STATUS_OK`` or ``STATUS_TRACE``."""
    Q, gaps = src.Q, src.gaps
    if ext is not None and P[P_SOURCE] != SRC_SYSTEM:  # unit clocks and logs: as any failure before t (times are
        # whole microseconds)
        return take_until(t - 1, P, src, res)
    while True:
        if Q[Q_IA] >= gaps.shape[0]:
            return STATUS_TRACE
        t_f = _sys_arrival(Q, sys_rate(P, Q))
        if t_f >= t:
            return STATUS_OK
        if Q[Q_N_UP] > 0:
            Q[Q_N_UP] -= 1  # which group no longer matters: no victim is drawn
            res[R_FAILURES] += 1
        _sys_consume(t_f, Q, gaps)
