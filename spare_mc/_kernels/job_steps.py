"""The job's steps (private): whole checkpoint cycles at once, the quiet stretches, an explicit step's compute, the
detection of the failures at its all-reduce and its completion, and the repair of failed groups without a global
restart.

The model is :mod:`spare_mc._kernels.timeline`'s docstring, the layout :mod:`spare_mc._kernels.timeline_layout`;
checkpoints and restarts are :mod:`spare_mc._kernels.ckpt_restart`'s. The steps the loop runs at every iteration are
inlined into it (``step``); :func:`repair_schedule` and :func:`rejoin` are calls (they run only with repair).
"""

from __future__ import annotations

import numpy as np

from .cache import drop_if_dependencies_changed
from .failure_source import sys_rate, take_until
from .live_set import live_add
from .rectlr_layout import O_PATCH, S_
from .timeline_helpers import crit_mark, crit_reset, dur, dynamic_due, keep_block, kernel, move_block, step
from .timeline_layout import (DEAD_KEPT, GB_BACK, GB_CRIT, GB_LIST, GB_LIVE, GB_PEND, GB_READY, GB_UP, HORIZON_F,
                              HORIZON_US, I64_MAX, J_C_NOM, J_CKPT_DUE, J_CKPT_DUE_STEP, J_CKPT_STEPS, J_LAST_CK,
                              J_N_CRIT, J_N_KNOWN, J_NEXT_READY, J_PERSIST_END, J_REMOTE_STEPS, J_S, J_SINCE_REMOTE,
                              J_STEPS_DONE, J_T, NEVER, P_AR_US, P_ASYNC, P_CAP_US, P_CKPT_EVERY, P_CKPT_POLICY,
                              P_COMP_US, P_DETECT_IMMEDIATE, P_MASKED_DETECT_US, P_MEM_COPIES, P_MEM_SAVE_US,
                              P_N_GROUPS, P_N_STEPS, P_NO_CYCLES, P_PATCH_COST, P_PERIOD_US, P_R, P_RECTLR_US,
                              P_REJOIN_CKPT, P_REJOIN_US, P_REMOTE_EVERY, P_REP_COST, P_REP_LAYERS, P_REPAIR,
                              P_REPAIR_US, P_RESYNC_US, P_SAVE_US, P_SHRINK_US, P_SOURCE, P_STRATEGY, PATCH_PER_SHARD,
                              PATCH_WHOLE_STEP, PF_ASYNC_F, PF_ASYNC_G, PF_JITTER_SD, PF_REPAIR_MU, PF_REPAIR_SIGMA,
                              POLICY_PERIODIC, Q_IA, Q_N_PEND, Q_N_UP, Q_REM, Q_T_REF, R_ASYNC_SLOW, R_CHECKPOINTS,
                              R_CKPT, R_DETECTIONS, R_LOOPS, R_PATCH_SHARDS, R_REJOINS, R_S_MAX, R_STEPS_RUN, R_SUM_S,
                              REP_REDO_STEP, REP_RESYNC, REPAIR_FIXED, REPAIR_LOG, REPAIR_NONE, SRC_SYSTEM, STATUS_OK,
                              STATUS_TRACE, STRAT_CKPT, STRAT_REP, STRAT_SPARE, W_ALLREDUCE, W_MEM, W_PATCH, W_RECTLR,
                              W_REDUNDANT, W_SINCE, W_USEFUL)

# the cached kernels of this module contain the failure source's and the helpers' code and the layouts' slots (not
# ReCtlr's: they call it through the first-class functions of rectlr_calls): recompile them when those change
drop_if_dependencies_changed(__file__, ("draws.py", "failure_source.py", "live_set.py", "rectlr_layout.py", "slots.py",
                                        "timeline_helpers.py", "timeline_layout.py", "unit_clocks.py"))

#: ``from_scratch=False`` as a plain bool, not the literal ``False``: the type of ``rectlr_calls.STEP_SIG``, and of
#: the compiled ``rectlr_step`` that ``ReCtlr.fail`` and the overhead drivers use
_NOT_FROM_SCRATCH = np.bool_(False)
#: a counter's zero as an int64 value, not a literal (one compiled type per function)
_Z = np.int64(0)


@kernel
def _mul_div(a, b, d):
    """``floor(a b / d)`` for ``0 <= a < d < 2^62`` and ``b >= 0`` without overflowing int64 (the result is below
    ``b``): one product when it fits, else binary long multiplication keeping ``q d + rm`` equal to the product of
    ``a`` and the bits of ``b`` read so far, ``0 <= rm < d``."""
    if b == 0 or a <= I64_MAX // b:
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


@kernel
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


@step
def _stretch_exact(t_f, P, PF, J, Q, ext):
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
    if ext is None or P[P_CKPT_POLICY] == POLICY_PERIODIC:
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
            if dynamic_due(t_j, P, PF, J, Q):
                m = j
                break
    return m, m * c_step, m * P[P_AR_US]


@step
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


@step
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


@step
def quiet_stretch(t_f, P, PF, job, Q, rng, ext):
    """Run the failure-free steps before the next failure at ``t_f`` in O(1): an exact jump without jitter, normal
    sums with jitter. Returns the number of steps run (0: the next step is simulated explicitly). While an
    asynchronous save runs, which slows the steps, :func:`async_stretch` decides."""
    J, W, res = job.J, job.W, job.res
    if J[J_PERSIST_END] >= 0:
        return async_stretch(t_f, P, PF, job, Q, ext)
    if PF[PF_JITTER_SD] == 0.0:
        m, sum_c, sum_a = _stretch_exact(t_f, P, PF, J, Q, ext)
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


@kernel  # a call, made only while an asynchronous save runs: inlined, it made the loop larger for every other job
def async_stretch(t_f, P, PF, job, Q, ext):
    """While an asynchronous save runs (until ``e = J_PERSIST_END``), without jitter: the steps before the failure at
    ``t_f`` that the save slows by the same amount, at once. Returns the number of steps run (0: the next step is
    simulated explicitly).

    An explicit step of compute ``c`` starting at ``t_j`` lasts ``c + x (f - 1) / f`` with ``x = min(e - t_j, f c)``
    rounded to the microsecond (:func:`~spare_mc._kernels.ckpt_restart.async_extra`): the same ``E = round(f c (f -
    1) / f)`` for every step whose whole compute the save slows, ``e - t_j >= f c`` (integers: ``e - t_j >=
    ceil(f c)``). Those steps are ``d = c + E + T_ar`` apart; the kernel runs the ``m`` of them that also end their
    compute strictly before the failure, start at or before the cap, are not past the steps left and cross no due
    checkpoint (the bounds of :func:`_stretch_exact` with ``d``). The save does not complete during them (``e > t_j``
    at each start), so each adds exactly what an explicit step adds: ``d`` to the time, ``E`` to the checkpoint time
    and the slowdown, one step's work, and one loop iteration (``R_LOOPS`` counts the iterations they stand for, as
    :func:`ckpt_cycles` does). Only where the explicit step is this simple: no jitter, no undetected death, no
    repair; ``P_NO_CYCLES`` turns it off too (the reference its tests compare with). Dynamic policies and immediate
    detection are refused with asynchronous saves (:class:`~spare_mc.TimelineConfig`): their checks here are for a
    hand-built ``P``. The Llama 3 preset's modern checkpointing saves remotely in the background every fifth
    checkpoint, and ran ~8 explicit steps per save (docs/results/speed.md)."""
    J, W, res = job.J, job.W, job.res
    if PF[PF_JITTER_SD] != 0.0 or Q[Q_N_PEND] > 0 or P[P_NO_CYCLES] != 0:
        return 0
    if ext is not None and (P[P_DETECT_IMMEDIATE] != 0 or P[P_CKPT_POLICY] != POLICY_PERIODIC or
                            P[P_REPAIR] != REPAIR_NONE):
        return 0
    t = J[J_T]
    e = J[J_PERSIST_END]
    c = J[J_C_NOM]
    fc = PF[PF_ASYNC_F] * float(c)
    extra = np.int64(np.floor(fc * PF[PF_ASYNC_G] + 0.5))
    ar = P[P_AR_US]
    d = c + extra + ar
    slack = e - t - np.int64(np.ceil(fc))  # step j is slowed throughout while j d <= slack
    if d <= 0 or e <= t or slack < 0 or t + c + extra >= t_f:
        return 0
    m = min(slack // d + 1, (t_f - t - c - extra - 1) // d + 1)
    m = min(m, min((P[P_CAP_US] - t) // d + 1, P[P_N_STEPS] - J[J_STEPS_DONE]))
    need = J[J_CKPT_DUE] - t
    m = min(m, min(1 if need <= d else (need + d - 1) // d, J[J_CKPT_DUE_STEP] - J[J_STEPS_DONE]))
    if m <= 0:
        return 0
    J[J_T] = t + m * d
    J[J_STEPS_DONE] += m
    res[R_STEPS_RUN] += m
    res[R_SUM_S] += m * J[J_S]
    useful = _useful_share(c, P, J)
    W[W_USEFUL] += m * useful
    W[W_REDUNDANT] += m * (c - useful)
    W[W_ALLREDUCE] += m * ar
    res[R_CKPT] += m * extra
    res[R_ASYNC_SLOW] += m * extra
    res[R_LOOPS] += m - 1
    return m


@kernel  # a call, made once per cycle start: inlined, it made the loop's code larger for every other job
def ckpt_cycles(t_f, P, PF, job, Q, ext):
    """Right after a checkpoint, a restart or the start, the whole failure-free *cycles* before the next failure at
    ``t_f`` at once: a cycle is the stretch of steps until the next checkpoint is due and that checkpoint, which is
    what one iteration of the job loop runs when no failure intervenes. Returns the number of cycles run (the loop
    iterations they stand for).

    Only where a cycle is the same every time: no jitter (no draw is skipped), a periodic policy (not a dynamic
    one), no save in flight, no repair and no undetected death; and a checkpoint that blocks: a remote save without
    in-memory copies and without ``P_ASYNC``, or, with copies, a memory-only checkpoint (:func:`_memory_cycles`). A
    cycle is then ``m`` steps of ``d = C + T_ar`` and a save of ``T_s``, ``L = m d + T_s`` microseconds, with ``m =
    max(1, ceil(T_c / d))`` (``min`` with ``ckpt_every_steps``): the stretch's own count at a cycle's start, where
    the period is whole (``J_CKPT_DUE - t = T_c``). ``k`` cycles run when they all end before the failure (``t + k L
    < t_f``: each cycle's steps end before it, its save is neither interrupted nor lost, and the source is not
    read), start no step past the cap (``t + k L <= cap``) and leave a step for the loop (``done + k m < n_steps``:
    the last stretch and the final checkpoint stay the loop's). Every quantity is a sum of integers that each cycle
    adds alike, so ``k`` cycles at once give exactly the loop's numbers, ``R_LOOPS`` included (``P_NO_CYCLES`` turns
    this off: tests/test_kernel_options.py and tests/test_tiered_ckpt.py compare whole runs with and without it).

    The Llama 3 preset's CKPT-only job saves ~3,400 times between ~400 failures: one loop iteration per save was
    most of its time (docs/results/speed.md)."""
    if P[P_MEM_COPIES] != 0:
        return _memory_cycles(t_f, P, PF, job, Q, ext)
    if P[P_ASYNC] != 0:  # every save is remote and in the background
        return 0
    J, W, res = job.J, job.W, job.res
    m, cycle, k = _cycles_that_fit(t_f, P[P_SAVE_US], P, PF, J, Q, ext)
    if k <= 0:
        return 0
    _add_cycles(k, m, cycle, P, job)
    keep_block(W, W_SINCE, res)  # the first cycle's save keeps what came before it too (a lost save's work)
    res[R_CKPT] += k * P[P_SAVE_US]
    J[J_REMOTE_STEPS] = J[J_STEPS_DONE]
    return k


@kernel  # a call: the cycles with in-memory copies are the rarer ones (ckpt_cycles stays as small as it was)
def _memory_cycles(t_f, P, PF, job, Q, ext):
    """:func:`ckpt_cycles` with in-memory copies: the memory-only checkpoints before the next remote one is due
    (``J_SINCE_REMOTE + 1 < P_REMOTE_EVERY``; the remote one stays the loop's), each a blocking save of
    ``P_MEM_SAVE_US``. Their work is held in memory (``W_MEM``) until the next remote save, the first one holding
    what came before it too. The loop would place each one's copies
    (:func:`~spare_mc._kernels.ckpt_restart.place_copies`) on the live groups and the pending dead ones: with no
    failure read and none pending, where the checkpoint, restart or start that the cycles follow (``J_LAST_CK = t``)
    has just placed them, so they are not placed again. The Llama 3 preset's modern checkpointing writes ~9,500
    checkpoints a job, every fifth one remote; about 5,800 of them run here (docs/results/speed.md)."""
    J, W, res = job.J, job.W, job.res
    m, cycle, k = _cycles_that_fit(t_f, P[P_MEM_SAVE_US], P, PF, J, Q, ext)
    k = min(k, P[P_REMOTE_EVERY] - 1 - J[J_SINCE_REMOTE])
    if k <= 0:
        return 0
    _add_cycles(k, m, cycle, P, job)
    move_block(W, W_SINCE, W_MEM)
    res[R_CKPT] += k * P[P_MEM_SAVE_US]
    J[J_SINCE_REMOTE] += k
    return k


@step
def _cycles_that_fit(t_f, save, P, PF, J, Q, ext):
    """``(m, L, k)`` of :func:`ckpt_cycles` for saves of ``save`` microseconds: ``k = 0`` where no cycle runs."""
    t = J[J_T]
    if PF[PF_JITTER_SD] != 0.0 or J[J_PERSIST_END] >= 0 or Q[Q_N_PEND] > 0 or P[P_NO_CYCLES] != 0:
        return _Z, _Z, _Z
    if ext is not None and (P[P_CKPT_POLICY] != POLICY_PERIODIC or P[P_REPAIR] != REPAIR_NONE):
        return _Z, _Z, _Z
    if J[J_CKPT_DUE] - t != P[P_PERIOD_US] or J[J_CKPT_DUE_STEP] - J[J_STEPS_DONE] != P[P_CKPT_EVERY]:
        return _Z, _Z, _Z
    d = J[J_C_NOM] + P[P_AR_US]
    if d <= 0 or t_f <= t:
        return _Z, _Z, _Z
    period = P[P_PERIOD_US]
    m = min(1 if period <= d else (period + d - 1) // d, P[P_CKPT_EVERY])
    if m < 1:
        return _Z, _Z, _Z
    cycle = m * d + save
    k = min((t_f - t - 1) // cycle, min((P[P_CAP_US] - t) // cycle, (P[P_N_STEPS] - J[J_STEPS_DONE] - 1) // m))
    return m, cycle, k


@step
def _add_cycles(k, m, cycle, P, job):
    """What ``k`` cycles of ``m`` steps, ``cycle`` microseconds each, add whatever their saves are: the steps' work
    (to ``W_SINCE``), the time, the counts, the checkpointed step and the next checkpoint's due time and step. The
    caller adds the saves' time and moves the work where the saves keep it."""
    J, W, res = job.J, job.W, job.res
    c = J[J_C_NOM]
    useful = _useful_share(m * c, P, J)
    W[W_USEFUL] += k * useful
    W[W_REDUNDANT] += k * (m * c - useful)
    W[W_ALLREDUCE] += k * (m * P[P_AR_US])
    J[J_T] += k * cycle
    J[J_STEPS_DONE] += k * m
    res[R_STEPS_RUN] += k * m
    res[R_SUM_S] += k * m * J[J_S]
    res[R_CHECKPOINTS] += k
    J[J_CKPT_STEPS] = J[J_STEPS_DONE]
    J[J_CKPT_DUE] = J[J_T] + P[P_PERIOD_US]
    J[J_LAST_CK] = J[J_T]
    J[J_CKPT_DUE_STEP] = J[J_STEPS_DONE] + P[P_CKPT_EVERY]


@step
def step_compute(P, PF, J, rng):
    """The compute phase of one explicit step (``S`` stack layers; Rep's ``N / n_sets`` layers): returns its
    duration."""
    return dur(J[J_C_NOM], PF[PF_JITTER_SD], rng)


@step
def detect(P, PF, job, src, red, rng, ext):
    """The all-reduce detects every group that died since the last detection (the pending ones), together: SPARe
    runs ReCtlr (a masked failure costs ReCtlr, the shrink, the detection cost and the patch compute of
    ``P_PATCH_COST``), Rep loses a live member per dead group of its replica set (``gset``, live counts ``slive``;
    masked: the shrink, the detection cost and what ``P_REP_COST`` adds), CKPT-only wipes out.

    Returns ``(wiped, ReCtlr + shrink + detection cost, patch cost)``, ``wiped`` 1 on a wipe-out, 0 if masked or
    nothing was pending, -1 if ReCtlr found no assignment (a bug).
    """
    J, res, Q, GB, slive = job.J, job.res, src.Q, src.GB, red.slive
    n_pend = Q[Q_N_PEND]
    if n_pend == 0:
        return 0, np.int64(0), np.int64(0)
    res[R_DETECTIONS] += 1
    Q[Q_N_PEND] = 0
    sd = PF[PF_JITTER_SD]
    if P[P_STRATEGY] == STRAT_SPARE:
        E, G, meta, out = red.st.E, red.st.G, red.st.meta, red.st.out
        rc = red.step(GB[GB_PEND], n_pend, _NOT_FROM_SCRATCH, P[P_N_GROUPS], P[P_R], red.st)
        if rc != 0:
            return rc, np.int64(0), np.int64(0)
        if ext is not None and P[P_CKPT_POLICY] != POLICY_PERIODIC:  # what the dynamic policy knows: the dead and
            # the critical groups
            J[J_N_KNOWN] -= n_pend
            for i in range(n_pend):
                g = GB[GB_PEND, i]
                if GB[GB_CRIT, g] > 0:
                    GB[GB_CRIT, g] = 0
                    J[J_N_CRIT] -= 1
            for i in range(n_pend):
                crit_mark(GB[GB_PEND, i], P, E, G, GB, J)
        extra_rc = (dur(P[P_RECTLR_US], sd, rng) + dur(P[P_SHRINK_US], sd, rng)
                    + dur(P[P_MASKED_DETECT_US], sd, rng))
        mode = P[P_PATCH_COST]
        if mode == PATCH_PER_SHARD:
            extra_patch = dur(out[O_PATCH] * P[P_COMP_US], sd, rng)
        elif mode == PATCH_WHOLE_STEP:
            extra_patch = dur(meta[S_] * P[P_COMP_US], sd, rng)
        else:
            extra_patch = np.int64(0)
        res[R_PATCH_SHARDS] += out[O_PATCH]
        return 0, extra_rc, extra_patch
    if P[P_STRATEGY] == STRAT_CKPT:
        return 1, np.int64(0), np.int64(0)
    wiped = 0
    for i in range(n_pend):
        b = red.gset[GB[GB_PEND, i]]
        slive[b] -= 1
        if slive[b] == 1:
            J[J_N_CRIT] += 1
        elif slive[b] == 0:
            J[J_N_CRIT] -= 1
            wiped = 1
    J[J_N_KNOWN] -= n_pend
    if wiped:
        return 1, np.int64(0), np.int64(0)
    extra_rc = dur(P[P_SHRINK_US], sd, rng)
    if P[P_REP_COST] == REP_RESYNC:
        extra_rc += dur(P[P_RESYNC_US], sd, rng)
    extra_rc += dur(P[P_MASKED_DETECT_US], sd, rng)
    extra_patch = np.int64(0)
    if P[P_REP_COST] == REP_REDO_STEP:  # the step in progress is recomputed
        extra_patch = dur(J[J_C_NOM], sd, rng)
    return 0, extra_rc, extra_patch


@step
def finish_step(t_c, c_step, extra_rc, extra_patch, a_s, P, job, meta):
    """A step whose failures (if any) were masked completes: after its compute (ending at ``t_c``), ReCtlr and the
    shrink, the patch compute, then the all-reduce of ``a_s``; its work is pending until the next checkpoint.
    SPARe's new ``S`` holds from the next step on."""
    J, W, res = job.J, job.W, job.res
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
        J[J_S] = meta[S_]
        J[J_C_NOM] = J[J_S] * P[P_COMP_US]
        res[R_S_MAX] = max(res[R_S_MAX], J[J_S])


@kernel
def repair_schedule(t_det, n_pend, P, PF, J, GB, rrng):
    """A masked detection at ``t_det``: each group it found dead (``GB_PEND[:n_pend]``) is repaired after a repair
    time -- fixed, or ``exp(mu + sigma Z)`` seconds drawn from ``rrng`` in the order the groups died -- and is ready
    to rejoin then (``GB_READY``; ``J_NEXT_READY`` the earliest). With ``REPAIR_LOG`` it is ready at the later of
    the detection and the log's end of repair (``GB_BACK``), or never (``DEAD_KEPT``: until a global restart) if
    that is unknown."""
    for i in range(n_pend):
        g = GB[GB_PEND, i]
        if P[P_REPAIR] == REPAIR_LOG:
            if GB[GB_BACK, g] == NEVER:
                GB[GB_READY, g] = DEAD_KEPT
                continue
            ready = max(t_det, GB[GB_BACK, g])
            GB[GB_READY, g] = ready
            J[J_NEXT_READY] = min(J[J_NEXT_READY], ready)
            continue
        if P[P_REPAIR] == REPAIR_FIXED:
            d = P[P_REPAIR_US]
        else:
            x = np.exp(PF[PF_REPAIR_MU] + PF[PF_REPAIR_SIGMA] * rrng.standard_normal()) * 1e6
            d = HORIZON_US if not x < HORIZON_F else max(np.int64(1), np.int64(np.rint(x)))
        GB[GB_READY, g] = t_det + d
        if t_det + d < J[J_NEXT_READY]:
            J[J_NEXT_READY] = t_det + d


@kernel  # a call: it runs only with repair, at the boundaries a repair is done by; inlined, it would only add to
# the loop's compilation (with 32 arguments, before the records, CPython passed them as one tuple: not inlinable)
def rejoin(P, PF, job, src, red, rng):
    """At the wall time ``J_T`` (a step boundary, or the end of a save): every group whose repair is done rejoins
    the job, without a global restart. The failures before now are taken first (they become pending), the system
    clock's operational time is banked at the old rate, the groups are live again (Rep: their sets count them;
    SPARe: ReCtlr is rebuilt from the fully live state on the groups still known dead -- the stacks re-balance, and
    ``S`` may fall from the next step on), and the job pauses ``P_REJOIN_US`` (booked with ReCtlr/shrink). Returns
    ``STATUS_OK``, ``STATUS_TRACE``, or -1 if ReCtlr found no assignment (a bug)."""
    J, W, res, Q, GB, gaps = job.J, job.W, job.res, src.Q, src.GB, src.gaps
    t = J[J_T]
    if J[J_NEXT_READY] > t:
        return STATUS_OK
    if take_until(t - 1, P, src, res) != STATUS_OK:
        return STATUS_TRACE
    if P[P_SOURCE] == SRC_SYSTEM and Q[Q_IA] >= gaps.shape[0]:  # (a log's events may all be over)
        return STATUS_TRACE
    # bank at the old rate: an arrival at exactly t (still queued) then happens at t under the new rate, with a
    # remainder <= 0 that _sys_arrival turns into t itself
    Q[Q_REM] -= sys_rate(P, Q) * (t - Q[Q_T_REF])
    Q[Q_T_REF] = t
    n = P[P_N_GROUPS]
    nxt = NEVER
    n_dead = np.int64(0)  # not the literal 0: see _NOT_FROM_SCRATCH
    back = 0
    for g in range(n):
        rt = GB[GB_READY, g]
        if rt == NEVER:
            continue
        if rt <= t:
            GB[GB_READY, g] = NEVER
            GB[GB_UP, g] = 1
            live_add(GB[GB_LIVE], n, g)
            Q[Q_N_UP] += 1
            back += 1
            if P[P_STRATEGY] == STRAT_REP:
                b = red.gset[g]
                red.slive[b] += 1
                if red.slive[b] == 2:
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
        red.reset(red.st, red.saved, P[P_R])
        if n_dead > 0:
            if red.step(GB[GB_LIST], n_dead, _NOT_FROM_SCRATCH, n, P[P_R], red.st) != 0:
                return -1
        J[J_S] = red.st.meta[S_]
        J[J_C_NOM] = J[J_S] * P[P_COMP_US]
        res[R_S_MAX] = max(res[R_S_MAX], J[J_S])
        if P[P_CKPT_POLICY] != POLICY_PERIODIC:
            crit_reset(P, red.st.E, red.st.G, GB, red.ssize, J)
    J[J_N_KNOWN] = n - n_dead
    cost = dur(P[P_REJOIN_US], PF[PF_JITTER_SD], rng)
    J[J_T] += cost
    W[W_RECTLR] += cost
    return STATUS_OK
