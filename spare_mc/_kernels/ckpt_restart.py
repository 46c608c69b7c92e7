"""Checkpoints and global restarts of the timeline (private): a due checkpoint (periodic or dynamic, in remote
storage or in memory, blocking or asynchronous) and a wipe-out's way back to the last one.

The model is :mod:`spare_mc._kernels.timeline`'s docstring, the layout :mod:`spare_mc._kernels.timeline_layout`.
:func:`checkpoint_if_due` runs after every step or stretch, :func:`wipeout` at every wipe-out (through
:func:`_global_restart`, the failure source's restart and the stacks' reset); :func:`persist_done` completes an
asynchronous save, :func:`async_extra` slows a step's compute while one runs, :func:`place_copies` chooses the groups
that keep a checkpoint in memory.
"""

from __future__ import annotations

import numpy as np

from .cache import drop_if_dependencies_changed
from .failure_source import src_kills_within, src_next_time, src_restart, src_restart_again, take_until
from .timeline_helpers import crit_reset, dur, dynamic_due, keep_block, kernel, move_block, step
from .timeline_layout import (GB_COPIES, GB_MEMCOPY, GB_PEND, GB_READY, GB_UP, J_C_NOM, J_CKPT_DUE, J_CKPT_DUE_STEP,
                              J_CKPT_STEPS, J_LAST_CK, J_NEXT_READY, J_PERSIST_END, J_PERSIST_STEPS, J_REMOTE_STEPS,
                              J_RESTART_BASE, J_S, J_SINCE_REMOTE, J_STATUS, J_STEPS_DONE, J_T, N_W, NEVER, P_ASYNC,
                              P_CAP_US, P_CKPT_EVERY, P_CKPT_LOST, P_CKPT_POLICY, P_COMP_US, P_DETECT_IMMEDIATE,
                              P_FINAL_CKPT, P_LOAD_US, P_MEM_COPIES, P_MEM_LOAD_US, P_MEM_SAVE_US, P_N_GROUPS,
                              P_N_STEPS, P_PERIOD_US, P_R, P_REMOTE_EVERY, P_REPAIR, P_RESTART_AGAIN, P_RESTART_US,
                              P_SAVE_US, P_STRATEGY, PF_ASYNC_F, PF_ASYNC_G, PF_JITTER_SD, POLICY_PERIODIC, Q_N_PEND,
                              R_ASYNC_SLOW, R_CHECKPOINTS, R_CKPT, R_CKPTS_LOST, R_FALLBACKS, R_LOST, R_MEM_RESTARTS,
                              R_RESTART, R_STEPS_RUN, R_SUM_S, R_WIPEOUTS, REPAIR_NONE, STATUS_CAPPED, STATUS_OK,
                              STATUS_TRACE, STRAT_SPARE, W_MEM, W_PERSIST, W_SINCE)

# the cached kernels of this module contain the failure source's and the helpers' code and the layouts' slots (not
# ReCtlr's: they call it through the first-class functions of rectlr_calls): recompile them when those change
drop_if_dependencies_changed(__file__, ("draws.py", "failure_source.py", "live_set.py", "rectlr_layout.py", "slots.py",
                                        "timeline_helpers.py", "timeline_layout.py", "unit_clocks.py"))


@step
def _global_restart(t_c, c_step, in_step, s0, P, PF, job, GB, rng):
    """A wipe-out detected at ``t_c``, after ``c_step`` of the step in progress (``in_step`` 1; 0: the wipe-out
    interrupted a checkpoint): that time and all the work since the last checkpoint are lost, progress rolls back
    to it, a global restart takes ``T_r`` plus the checkpoint's load time, and ``S`` is back to ``s0`` (SPARe).
    With in-memory copies (``P_MEM_COPIES``) the last checkpoint is reloaded from memory if a group still holds a
    copy (``GB_MEMCOPY``), else the job falls back to the last checkpoint in remote storage: the work kept in
    memory only is lost too. An asynchronous save done by ``t_c`` counts; one still in flight is abandoned. Returns
    the restart's end (the caller restarts the failure source and resets the stacks)."""
    J, W, res = job.J, job.W, job.res
    persist_done(t_c, P, job)
    res[R_WIPEOUTS] += 1
    lost = c_step
    for i in range(N_W):
        lost += W[i]
        W[i] = 0
    from_memory = False
    for j in range(P[P_MEM_COPIES]):  # a group holding the copy is one of the last placement's (place_copies)
        if GB[GB_MEMCOPY, GB[GB_COPIES, j]] != 0:
            from_memory = True
            break
    if from_memory:  # the save in flight started after an in-memory checkpoint at least as recent: its work stays
        move_block(W, W_PERSIST, W_MEM)
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
    r_s = dur(base, PF[PF_JITTER_SD], rng)
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


@step
def checkpoint_if_due(t_f, P, PF, job, src, rng, ext):
    """After a step or a stretch: if a checkpoint is due (``T_c`` of wall time or ``P_CKPT_EVERY`` steps since the
    last checkpoint or restart) and steps remain -- or, with ``P_FINAL_CKPT``, the last step is done -- write one.
    It completes -- the pending work is kept and the progress saved -- unless ``P_CKPT_LOST`` and a failure arrives
    during the save: then its time is spent but the rollback point stays. The next one is due after it either way.
    With ``P_DETECT_IMMEDIATE`` the next failure, at ``t_f``, interrupts the save if it arrives before the save ends
    (at its very start included): the time until ``t_f`` is spent, the checkpoint is unusable, and the caller wipes
    out at ``t_f``. Returns ``(STATUS_OK or STATUS_TRACE, the wipe-out time or -1)``."""
    J, W, res = job.J, job.W, job.res
    Q, GB = src.Q, src.GB
    done = J[J_STEPS_DONE]
    if done >= P[P_N_STEPS]:
        if P[P_FINAL_CKPT] == 0 or J[J_CKPT_STEPS] >= P[P_N_STEPS]:
            return STATUS_OK, np.int64(-1)
    elif ext is None or P[P_CKPT_POLICY] == POLICY_PERIODIC:
        if J[J_T] < J[J_CKPT_DUE] and done < J[J_CKPT_DUE_STEP]:
            return STATUS_OK, np.int64(-1)
    else:
        # the dynamic policy reads the failures before now: those since the last detection are taken (they become
        # pending, as the next step would make them); mostly there are none, and the source says so without a call
        # (its next failure is after now; TRACE_OUT = -1 calls, and take_until reports it)
        if src_next_time(P, src, ext) <= J[J_T] - 1 and take_until(J[J_T] - 1, P, src, res) != STATUS_OK:
            return STATUS_TRACE, np.int64(-1)
        if not dynamic_due(J[J_T], P, PF, J, Q):
            return STATUS_OK, np.int64(-1)
    if P[P_MEM_COPIES] != 0 or P[P_ASYNC] != 0:
        return _checkpoint_tiered(P, PF, job, Q, GB, rng), np.int64(-1)
    k_s = dur(P[P_SAVE_US], PF[PF_JITTER_SD], rng)
    res[R_CHECKPOINTS] += 1
    t0 = J[J_T]
    if ext is not None and P[P_DETECT_IMMEDIATE] != 0 and (Q[Q_N_PEND] > 0 or t_f < t0 + k_s or t_f <= t0):
        t_w = max(t_f, t0)
        res[R_CKPT] += t_w - t0
        res[R_CKPTS_LOST] += 1
        J[J_T] = t_w
        return STATUS_OK, t_w
    res[R_CKPT] += k_s
    J[J_T] += k_s
    status = STATUS_OK
    killed = np.int64(0)
    if ext is not None and P[P_CKPT_LOST] != 0 and k_s > 0:
        status, killed = src_kills_within(t0, J[J_T], P, src, res)
    if killed > 0:
        res[R_CKPTS_LOST] += 1
    else:
        keep_block(W, W_SINCE, res)
        J[J_CKPT_STEPS] = J[J_STEPS_DONE]
        J[J_REMOTE_STEPS] = J[J_STEPS_DONE]
    J[J_CKPT_DUE] = J[J_T] + P[P_PERIOD_US]
    J[J_LAST_CK] = J[J_T]
    J[J_CKPT_DUE_STEP] = J[J_STEPS_DONE] + P[P_CKPT_EVERY]
    return status, np.int64(-1)


@step
def persist_done(t, P, job):
    """An asynchronous save that is complete by ``t`` makes its checkpoint usable in remote storage: the work it
    saved is kept (and, without in-memory copies, it becomes the rollback point)."""
    J, W, res = job.J, job.W, job.res
    if J[J_PERSIST_END] >= 0 and J[J_PERSIST_END] <= t:
        keep_block(W, W_PERSIST, res)
        J[J_REMOTE_STEPS] = J[J_PERSIST_STEPS]
        if P[P_MEM_COPIES] == 0:
            J[J_CKPT_STEPS] = J[J_PERSIST_STEPS]
        J[J_PERSIST_END] = -1


@kernel
def place_copies(P, Q, GB):
    """The checkpoint just written goes to the CPU memory of ``m = P_MEM_COPIES`` groups: for ``j = 0 .. m - 1``
    the first group at or after ``floor(j N / m)`` (cyclically) that is not yet chosen and not known dead (dead and
    detected). A chosen group that is in fact dead (not detected yet) holds no copy.

    Every write of ``J_LAST_CK`` with copies (a checkpoint, a restart, the start) is followed by a placement before
    the job goes on: ``job_steps._memory_cycles`` relies on it (it does not place the copies of the memory-only
    checkpoints it runs at once, which the loop would place where they already are).

    The groups chosen are kept in ``GB[GB_COPIES, :m]``: only a placement sets ``GB_MEMCOPY``, so the groups of the
    last one are the only ones to clear (not the ``N`` groups: this runs at every in-memory checkpoint, in the
    phase map's modern jobs about one per step). A slot whose search found no group keeps group 0 (cleared again,
    harmlessly; ``GB`` starts at zero)."""
    n = P[P_N_GROUPS]
    m = P[P_MEM_COPIES]
    for j in range(m):
        GB[GB_MEMCOPY, GB[GB_COPIES, j]] = 0
    for j in range(m):
        g = (j * n) // m
        GB[GB_COPIES, j] = 0
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
                    GB[GB_COPIES, j] = g
                    break
            g += 1
            if g == n:
                g = 0
    for j in range(m):
        if GB[GB_MEMCOPY, GB[GB_COPIES, j]] == 2:
            GB[GB_MEMCOPY, GB[GB_COPIES, j]] = 0


@kernel
def _checkpoint_tiered(P, PF, job, Q, GB, rng):
    """A due checkpoint with in-memory copies and/or asynchronous saves (see the model). Every
    ``P_REMOTE_EVERY``-th checkpoint since the last remote one (each one without copies) goes to remote storage,
    the others to memory only. A memory checkpoint blocks for ``P_MEM_SAVE_US`` and is usable at once. A remote one
    blocks for ``P_SAVE_US`` (it is also copied to memory), or with ``P_ASYNC`` is copied to memory (blocking, with
    copies) and then saved in the background for ``P_SAVE_US``, usable in remote storage once done. A remote save due
    while another is in flight is made to memory only, or postponed to the next step boundary without copies.
    Returns ``STATUS_OK``."""
    J, W, res = job.J, job.W, job.res
    persist_done(J[J_T], P, job)
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
        k_s = dur(P[P_MEM_SAVE_US], sd, rng)
        J[J_T] += k_s
        res[R_CKPT] += k_s
        place_copies(P, Q, GB)
        J[J_CKPT_STEPS] = done
    if not remote:
        move_block(W, W_SINCE, W_MEM)
        J[J_SINCE_REMOTE] += 1
    elif P[P_ASYNC] == 0:
        k_s = dur(P[P_SAVE_US], sd, rng)
        J[J_T] += k_s
        res[R_CKPT] += k_s
        keep_block(W, W_MEM, res)
        keep_block(W, W_SINCE, res)
        if m > 0:
            place_copies(P, Q, GB)
        J[J_CKPT_STEPS] = done
        J[J_REMOTE_STEPS] = done
        J[J_SINCE_REMOTE] = 0
    else:
        move_block(W, W_MEM, W_PERSIST)
        move_block(W, W_SINCE, W_PERSIST)
        J[J_PERSIST_STEPS] = done
        J[J_PERSIST_END] = J[J_T] + dur(P[P_SAVE_US], sd, rng)
        J[J_SINCE_REMOTE] = 0
        persist_done(J[J_T], P, job)  # a save of length 0 is done at once
    J[J_CKPT_DUE] = J[J_T] + P[P_PERIOD_US]
    J[J_LAST_CK] = J[J_T]
    J[J_CKPT_DUE_STEP] = done + P[P_CKPT_EVERY]
    return STATUS_OK


@step
def async_extra(c, PF, J, res):
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


@kernel  # a call: wipe-outs are rare, and the job loop has two places that restart
def wipeout(t_c, c_step, in_step, P, PF, job, src, red, rng, ext):
    """A wipe-out detected at ``t_c`` (see :func:`_global_restart`): back to the last checkpoint through a global
    restart; the failures during it are absorbed (or, under ``P_STAY_DEAD``, kill groups that stay dead; under
    ``P_RESTART_AGAIN``, each starts the restart again from its arrival); every other group is back, and the stacks
    reset. Returns 1 if the run stopped inside the restart (it ends past the cap: nothing during it can change the
    outcome, so its failures are not drawn -- with a tiny MTBF and a long restart they could be billions; the run
    stops at the cap, and the restart counts up to it), else 0; sets ``J[J_STATUS]``."""
    J, res = job.J, job.res
    Q, GB = src.Q, src.GB
    t_end = _global_restart(t_c, c_step, in_step, red.saved.s, P, PF, job, GB, rng)
    status = STATUS_CAPPED if t_end > P[P_CAP_US] else STATUS_OK
    if ext is not None and status == STATUS_OK and P[P_RESTART_AGAIN] != 0:
        status, t_end = src_restart_again(t_c, t_end, J[J_RESTART_BASE], P, PF, src, rng, res)
        J[J_T] = t_end
        J[J_CKPT_DUE] = t_end + P[P_PERIOD_US]
        J[J_LAST_CK] = t_end
    if status == STATUS_CAPPED:  # the run stops at the cap, inside the restart: the restart counts up to the cap
        res[R_RESTART] -= t_end - P[P_CAP_US]
        J[J_T] = P[P_CAP_US]
        J[J_STATUS] = STATUS_CAPPED
        return 1
    if ext is None or P[P_RESTART_AGAIN] == 0:
        status = src_restart(t_c, t_end, P, src, res, ext)
    J[J_STATUS] = status
    if P[P_MEM_COPIES] > 0:  # the restored checkpoint is in every group's memory: m of them keep a copy
        place_copies(P, Q, GB)
    if P[P_STRATEGY] == STRAT_SPARE:
        red.reset(red.st, red.saved, P[P_R])
    else:
        for b in range(red.ssize.shape[0]):
            red.slive[b] = red.ssize[b]
    if ext is not None and P[P_CKPT_POLICY] != POLICY_PERIODIC:
        crit_reset(P, red.st.E, red.st.G, GB, red.ssize, J)
    if ext is not None and P[P_REPAIR] != REPAIR_NONE:  # every group is back: repairs in progress are moot
        J[J_NEXT_READY] = NEVER
        for g in range(P[P_N_GROUPS]):
            GB[GB_READY, g] = NEVER
    return 0
