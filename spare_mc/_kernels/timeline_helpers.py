"""Small kernels the timeline's steps share (private): how they compile, jittered durations, moving work between the
blocks of ``W``, the dynamic checkpoint period and the critical groups it needs, a group's death.

The model is :mod:`spare_mc._kernels.timeline`'s docstring, the layout :mod:`spare_mc._kernels.timeline_layout`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .cache import drop_if_dependencies_changed
from .rectlr_layout import ALIVE, EG, GPTR, NLIVE, STYPE
from .timeline_layout import (GB_CRIT, GB_MEMCOPY, GB_PEND, GB_TCRIT, GB_UP, J_DYN_CRIT, J_DYN_KNOWN, J_DYN_LB,
                              J_DYN_T, J_DYN_TLAST, J_LAST_CK, J_N_CRIT, J_N_KNOWN, N_W, PF_HAZARD_FACTOR,
                              PF_HAZARD_LAM_S, PF_HAZARD_RESTART_S, PF_HAZARD_SAVE_S, PF_HAZARD_SHAPE, POLICY_HAZARD,
                              P_CKPT_POLICY, P_LIVE_SCALING, P_N_GROUPS, P_R, P_STRATEGY, Q_N_PEND, Q_T_LAST, R_USEFUL,
                              STRAT_CKPT, STRAT_REP)

# the cached kernels of this module hold the layouts' slots: recompile them when those change
drop_if_dependencies_changed(__file__, ("rectlr_layout.py", "slots.py", "timeline_layout.py"))

#: a function of the source or a helper: no allocation, so no runtime (see "Compilation" in
#: :mod:`spare_mc._kernels.timeline`)
kernel = njit(cache=True, _nrt=False)
#: a step the loop runs at every iteration, or a small helper of one: inlined into its callers (numba inlines the
#: source, so these have no compiled code of their own unless called from Python)
step = njit(cache=True, _nrt=False, inline="always")
#: The ``ext`` argument of the timeline's kernels in its *extended* variant (see "Compilation" in
#: :mod:`spare_mc._kernels.timeline`): every option compiled. ``None`` compiles the *basic* variant, in which numba
#: prunes each branch guarded by ``ext is not None`` before typing it, with the kernels only those branches call.
EXTENDED = np.int64(1)


@step
def dur(base_us, jit_sd, rng):
    """A duration with multiplicative jitter ``Normal(1, jit_sd^2)`` (clipped at 0), rounded to microseconds.

    Inlined: without jitter (the common case, and the benchmarks') it is a test, not a call that passes the
    generator (1% of the paper's SPARe timeline, 2026-12-04); the draw is :func:`_dur_jittered`'s."""
    if jit_sd == 0.0 or base_us == 0:
        return base_us
    return _dur_jittered(base_us, jit_sd, rng)


@kernel
def _dur_jittered(base_us, jit_sd, rng):
    """:func:`dur` with jitter (``jit_sd > 0``, ``base_us != 0``)."""
    x = base_us * rng.normal(1.0, jit_sd)
    if x <= 0.0:
        return np.int64(0)
    return np.int64(np.round(x))


@step  # inlined: its block offsets are constants, and a call would compile a specialisation per pair of them
def move_block(W, src, dst):
    """Add the block of ``W`` at ``src`` to the one at ``dst`` and empty it."""
    for i in range(N_W):
        W[dst + i] += W[src + i]
        W[src + i] = 0


@kernel
def keep_block(W, off, res):
    """The work of the block of ``W`` at ``off`` is kept: moved into ``res[R_USEFUL .. R_RECTLR]`` (``W_SINCE``: the
    work since the last checkpoint; ``W_MEM``, ``W_PERSIST``)."""
    for i in range(N_W):
        res[R_USEFUL + i] += W[off + i]
        W[off + i] = 0


@kernel
def dynamic_threshold_us(t, t_last, P, PF, J):
    """The dynamic policy's period at wall time ``t`` (microseconds, rounded, as a float; ``inf`` = not due):
    ``f x (T_s + sqrt(T_s^2 + 2 T_s (T_f + T_r)))`` (``POLICY_HAZARD``) or ``f sqrt(2 T_s T_f)``
    (``POLICY_YOUNG_HAZARD``) with ``T_f`` the inverse of the instantaneous wipe-out hazard: the system's Weibull
    hazard at the wall time since the last failure (at ``t_last``; the job start counts as one), scaled to the known
    live groups (live scaling), times the share of known live groups whose failure would wipe out
    (``J_N_CRIT / J_N_KNOWN``): ``T_f = lambda x (N or n_known) / (n_crit x k x (age / lambda)^(k - 1))``."""
    n_crit = J[J_N_CRIT]
    if n_crit <= 0:
        return np.inf
    lam = PF[PF_HAZARD_LAM_S]
    k = PF[PF_HAZARD_SHAPE]
    base = k * ((t - t_last) / 1e6 / lam) ** (k - 1.0)
    if not base > 0.0:
        return np.inf
    n_scale = P[P_N_GROUPS] if P[P_LIVE_SCALING] != 0 else J[J_N_KNOWN]
    tf = lam * n_scale / (n_crit * base)
    ts = PF[PF_HAZARD_SAVE_S]
    if P[P_CKPT_POLICY] == POLICY_HAZARD:
        x = ts + np.sqrt(ts * ts + 2.0 * ts * (tf + PF[PF_HAZARD_RESTART_S]))
    else:
        x = np.sqrt(2.0 * ts * tf)
    return np.rint(PF[PF_HAZARD_FACTOR] * x * 1e6)


#: ``dynamic_due``'s bound: the exact period times ``1 - _LB_REL`` less ``_LB_ABS`` microseconds (far more than the
#: rounding of the period's few floating-point operations), and the largest bound stored (any larger period is "not
#: due" for every wall time a job can reach, ``< HORIZON_US``)
_LB_REL, _LB_ABS, _LB_MAX = 1e-9, np.int64(2), 4e18


@step
def dynamic_due(t, P, PF, J, Q):
    """Whether the dynamic period has passed at wall time ``t``: ``t - J_LAST_CK >= dynamic_threshold_us(t, ...)``
    (the last failure's time ``Q_T_LAST``), exactly, with fewer evaluations of the period.

    The period is a function of ``t`` and the *key* (the last failure's time, ``J_N_CRIT``, ``J_N_KNOWN``; the rest is
    constant in a job). For a fixed key and a Weibull shape ``k <= 1`` it does not decrease with ``t``: the hazard
    ``k (age / lambda)^(k - 1)`` does not increase with the age, so ``T_f`` and the period do not decrease. So the
    period evaluated at ``t_0`` bounds the period at every ``t >= t_0`` of the same key from below, and a time
    ``t - J_LAST_CK`` under that bound is not due without the power and square root of an evaluation (the dynamic
    policy asks at every step boundary, mostly long before the period has passed: a profile of Rep r = 2 jobs at
    N = 1000 spent 12.6% of its time in libm's ``pow``, 7% in periodic ones). The bound kept (``J_DYN_LB``, from
    ``J_DYN_T``) is the evaluated period less ``1e-9`` of it and 2 microseconds, so the rounding of the evaluation
    cannot make it exceed a later period; any time at or above it is decided by an evaluation. ``k > 1`` (a period
    that shrinks with the age) evaluates every time."""
    elapsed = t - J[J_LAST_CK]
    if J[J_DYN_T] >= 0 and t >= J[J_DYN_T] and elapsed < J[J_DYN_LB] and J[J_DYN_TLAST] == Q[Q_T_LAST] and \
            J[J_DYN_CRIT] == J[J_N_CRIT] and J[J_DYN_KNOWN] == J[J_N_KNOWN]:
        return False
    th = dynamic_threshold_us(t, Q[Q_T_LAST], P, PF, J)
    if PF[PF_HAZARD_SHAPE] <= 1.0 and th >= 0.0:  # not NaN
        J[J_DYN_T] = t
        J[J_DYN_LB] = np.int64(th * (1.0 - _LB_REL)) - _LB_ABS if th < _LB_MAX else np.int64(_LB_MAX)
        J[J_DYN_TLAST] = Q[Q_T_LAST]
        J[J_DYN_CRIT] = J[J_N_CRIT]
        J[J_DYN_KNOWN] = J[J_N_KNOWN]
    return not float(elapsed) < th


@kernel
def crit_reset(P, E, G, GB, ssize, J):
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
    crit_mark(np.int64(-1), P, E, G, GB, J)


@kernel
def crit_mark(g, P, E, G, GB, J):
    """SPARe: after ReCtlr took group ``g``'s death (``g = -1``: every type), each of its types left with one live
    holder makes that holder critical."""
    n, r = P[P_N_GROUPS], P[P_R]
    lo, hi = (0, n) if g < 0 else (G[GPTR, g], G[GPTR, g + 1])
    for i in range(lo, hi):
        t = i if g < 0 else E[STYPE, i]  # the type of stack slot i
        if G[NLIVE, t] != 1 or GB[GB_TCRIT, t] != 0:
            continue
        GB[GB_TCRIT, t] = 1
        for l in range(r):
            h = E[EG, t * r + l]
            if G[ALIVE, h] != 0:
                GB[GB_CRIT, h] += 1
                if GB[GB_CRIT, h] == 1:
                    J[J_N_CRIT] += 1
                break


@kernel
def kill_if_live(g, Q, GB):
    """Group ``g`` dies if it is live: it becomes pending. Returns 1 if it did, else 0 (``Q_N_UP`` is the caller's)."""
    if GB[GB_UP, g] == 0:
        return np.int64(0)
    GB[GB_UP, g] = 0
    GB[GB_MEMCOPY, g] = 0  # its memory, and the checkpoint copy in it, are gone
    GB[GB_PEND, Q[Q_N_PEND]] = g
    Q[Q_N_PEND] += 1
    return np.int64(1)
