"""Numba kernel of the time-to-train timeline (private; the model is specified in :mod:`spare_mc.timeline`).

All times are integer microseconds, so that jumping over a quiet stretch of ``m`` identical steps (``t += m D``)
gives exactly the same clock as stepping through them one by one -- the property the SimPy twin checks.

Failure trace (no random numbers are drawn here except the optional jitter):

- ``gaps[i]`` is the ``i``-th inter-arrival in **operational units** (group-microseconds). The operational clock
  runs at ``rate`` units per microsecond: the number of live groups with live scaling, else ``N``; during a global
  restart it runs at ``N``. Between rate changes the ``i``-th arrival happens at
  ``t_ref + ceil((A_i - O_ref) / rate)``.
- ``victims[i]`` in ``[0, 2^32)`` picks the live group of rank ``(victims[i] * n_live) >> 32`` (ranks in increasing
  group index). Every arrival consumes one entry, also when it is absorbed by a restart.

Unit clocks (``units=True``: per-GPU lifetimes and/or failure domains) instead: unit ``u`` (groups ``0..n_gu-1``
first, then domains) fails at its absolute time ``next_t[u]``; a new lifetime is ``max(1, rint(uscale[u] *
life[il]))`` microseconds with ``life`` the next entry of a stream of standard Weibull variates, drawn in unit order.
A group unit kills its group; a domain unit kills every live group it touches; a unit that fired is inactive until
the next restart. At a restart the units that would fire during it are absorbed, and lifetimes are redrawn from its
end: every unit (``keep=False``, "renew") or only the inactive and absorbed ones (``keep=True``, "keep ages").
Ties fire the lowest unit first.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import _rectlr_kernels as _rk

STRAT_CKPT, STRAT_REP, STRAT_SPARE = 0, 1, 2

(R_TTT, R_USEFUL, R_REDUNDANT, R_PATCH, R_ALLREDUCE, R_RECTLR, R_CKPT, R_RESTART, R_LOST, R_FAILURES, R_ABSORBED,
 R_WIPEOUTS, R_CHECKPOINTS, R_DETECTIONS, R_STEPS_RUN, R_SUM_S, R_STATUS, R_STEPS_DONE, R_LOOPS, R_ARRIVALS,
 R_PATCH_SHARDS, R_S_MAX) = range(22)
N_RES = 22
#: ``res[R_STATUS]``: finished, stopped at the wall-clock cap, ran out of failure trace (extend it and rerun)
STATUS_OK, STATUS_CAPPED, STATUS_TRACE = 0, 1, 2

_NEVER = np.int64(1) << 62


@njit(cache=True)
def _keep(res, pend_w):
    """The work since the last checkpoint is kept: move it into ``res[R_USEFUL .. R_RECTLR]``."""
    for i in range(5):
        res[R_USEFUL + i] += pend_w[i]
        pend_w[i] = 0


@njit(cache=True)
def _checkpoint(res, pend_w, save_us, jit_sd, rng):
    """Write a checkpoint: the pending work becomes kept; returns the checkpoint's duration."""
    k_s = _dur(save_us, jit_sd, rng)
    res[R_CKPT] += k_s
    res[R_CHECKPOINTS] += 1
    _keep(res, pend_w)
    return k_s


@njit(cache=True)
def _dur(base_us, jit_sd, rng):
    """A duration with multiplicative jitter ``Normal(1, jit_sd^2)`` (clipped at 0), rounded to microseconds."""
    if jit_sd == 0.0 or base_us == 0:
        return base_us
    x = base_us * rng.normal(1.0, jit_sd)
    if x <= 0.0:
        return np.int64(0)
    return np.int64(np.round(x))


@njit(cache=True)
def _fenwick_fill(tree, n):
    """Fenwick tree of n ones (1-based ``tree[1..n]``)."""
    for i in range(1, n + 1):
        tree[i] = i & (-i)


@njit(cache=True)
def _fenwick_take(tree, n, rank):
    """Remove and return the live group of 0-based ``rank`` (in increasing index) in O(log N)."""
    pos = 0
    rem = rank + 1
    step = 1
    while step * 2 <= n:
        step *= 2
    while step > 0:
        nxt = pos + step
        if nxt <= n and tree[nxt] < rem:
            pos = nxt
            rem -= tree[nxt]
        step //= 2
    g = pos  # 0-based group index = 1-based position pos + 1, minus 1
    i = pos + 1
    while i <= n:
        tree[i] -= 1
        i += i & (-i)
    return g


@njit(cache=True)
def _units_min(next_t):
    """(earliest unit time, its unit): the lowest index wins a tie; ``(_NEVER, -1)`` if every unit is inactive."""
    best = _NEVER
    bu = -1
    for u in range(next_t.shape[0]):
        if next_t[u] < best:
            best = next_t[u]
            bu = u
    return best, bu


@njit(cache=True)
def _redraw(next_t, uscale, life, il, t_from, keep, t_end):
    """New lifetimes from ``t_from`` for every unit, or with ``keep`` only for the inactive ones and those due
    before ``t_end``. Returns the new stream index, -1 if the stream ran out."""
    for u in range(next_t.shape[0]):
        if keep and next_t[u] != _NEVER and next_t[u] >= t_end:
            continue
        if il >= life.shape[0]:
            return -1
        next_t[u] = t_from + max(np.int64(1), np.int64(np.rint(uscale[u] * life[il])))
        il += 1
    return il


@njit(cache=True)
def _fire(u, n_gu, next_t, upf, dptr, dgroups, pend, npend):
    """Unit ``u`` fails: kill its group or its domain's live groups. Returns (npend, groups killed)."""
    killed = 0
    if u < n_gu:
        upf[u] = 0
        pend[npend] = u
        npend += 1
        killed = 1
    else:
        d = u - n_gu
        for j in range(dptr[d], dptr[d + 1]):
            g = dgroups[j]
            if upf[g] != 0:
                upf[g] = 0
                pend[npend] = g
                npend += 1
                killed += 1
                if n_gu > 0:
                    next_t[g] = _NEVER
    next_t[u] = _NEVER
    return npend, killed


_SAFETY_SD = 12.0


@njit(cache=True)
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


@njit(cache=True)
def _consume(t_f, a_next, ia, gaps):
    """The system process's arrival ``ia`` happens at wall time ``t_f``: it becomes the new reference point of the
    operational clock, and the next arrival's operational time is queued. Returns ``(o_ref, t_ref, ia, a_next)``."""
    o_ref = a_next
    ia += 1
    if ia < gaps.shape[0]:
        a_next += gaps[ia]
    return o_ref, t_f, ia, a_next


@njit(cache=True)
def _next_arrival(t_ref, o_ref, a_next, rate):
    if rate <= 0:
        return _NEVER
    return t_ref + (a_next - o_ref + rate - 1) // rate


@njit(cache=True)
def timeline(strategy, n, r, holders, n_steps, comp_us, ar_us, restart_us, save_us, period_us, shrink_us,
             rectlr_us, jit_sd, rng, cap_us, live_scaling, gaps, victims, units, uscale, n_gu, dptr, dgroups, keep,
             life, res):
    """Simulate one training job; results in ``res`` (``R_*`` slots, times in microseconds)."""
    for i in range(N_RES):
        res[i] = 0
    n_trace = gaps.shape[0]
    n_units = uscale.shape[0]
    # ---- redundancy state (ReCtlr for SPARe; live holders per type for Rep and CKPT-only)
    E, G, D, H, meta, ulog, pplan, out = _rk.alloc(n, r)
    meta[_rk.MAXDEG_] = _rk.build_stacks(holders, E, G)
    if _rk.initial_assignment(n, r, E, G, D, H, meta, ulog, out) < 0:
        return -1
    gstk0 = E[_rk.GSTK].copy()
    epos0 = E[_rk.EPOS].copy()
    own0 = G[_rk.OWN, :n].copy()
    load0 = G[_rk.LOAD, :n].copy()
    s0 = meta[_rk.S_]
    # ---- failure clock and true (possibly undetected) deaths
    tree = np.empty(n + 1, np.int64)
    _fenwick_fill(tree, n)
    n_up = n
    pend = np.empty(n, np.int64)
    npend = 0
    ia = 0
    a_next = gaps[0] if n_trace > 0 else _NEVER
    t_ref = 0
    o_ref = 0
    upf = np.ones(n, np.int64)
    next_t = np.empty(n_units, np.int64)
    il = 0
    status = STATUS_OK
    if units:
        il = _redraw(next_t, uscale, life, il, 0, False, 0)
        if il < 0:
            status = STATUS_TRACE
    # ---- progress and accounting
    t = 0
    steps_done = 0
    ckpt_steps = 0
    last_ck = 0
    # work since the last checkpoint, aligned with res[R_USEFUL .. R_RECTLR]: kept at a checkpoint (or the end),
    # lost at a wipe-out
    pend_w = np.zeros(5, np.int64)
    S = s0 if strategy == STRAT_SPARE else (r if strategy == STRAT_REP else 1)
    res[R_S_MAX] = S
    while steps_done < n_steps and status == STATUS_OK:
        res[R_LOOPS] += 1
        if t > cap_us:
            status = STATUS_CAPPED
            break
        if units:
            t_f = _units_min(next_t)[0]
        else:
            rate = n_up if live_scaling else n
            if ia >= n_trace:
                status = STATUS_TRACE
                break
            t_f = _next_arrival(t_ref, o_ref, a_next, rate)
        m = 0
        sum_c = 0
        sum_a = 0
        if jit_sd == 0.0:
            # ---- quiet stretch: m identical steps with no arrival before their compute ends, in O(1)
            c_step = S * comp_us
            d_step = c_step + ar_us
            if t + c_step >= t_f:
                q = 0
            else:
                q = (t_f - t - c_step - 1) // d_step + 1
            need = period_us - (t - last_ck)
            j_ck = 1 if need <= d_step else (need + d_step - 1) // d_step
            m_cap = (cap_us - t) // d_step + 1
            m = min(min(q, j_ck), min(n_steps - steps_done, m_cap))
            sum_c = m * c_step
            sum_a = m * ar_us
        else:
            # ---- jittered stretch: m steps that end -- beyond 12 standard deviations -- before the next arrival,
            # with no checkpoint due and no step starting past the cap before the last of them; their total compute
            # and all-reduce times are exact normal sums of m independent jitters (rounded once per stretch)
            c_nom = S * comp_us
            d_nom = c_nom + ar_us
            v = jit_sd * jit_sd * (float(c_nom) * c_nom + float(ar_us) * ar_us)
            m1 = _max_steps_within(float(t_f - t), float(d_nom), v)
            m2 = _max_steps_within(float(min(last_ck + period_us, cap_us + 1) - t), float(d_nom), v) + 1
            m = min(min(m1, m2), n_steps - steps_done)
            if m >= 2:
                sm = np.sqrt(float(m))
                sum_c = max(np.int64(0), np.int64(np.rint(m * c_nom + c_nom * jit_sd * sm * rng.normal(0.0, 1.0))))
                sum_a = max(np.int64(0), np.int64(np.rint(m * ar_us + ar_us * jit_sd * sm * rng.normal(0.0, 1.0))))
            else:
                m = 0
        if m > 0:
            t += sum_c + sum_a
            steps_done += m
            res[R_STEPS_RUN] += m
            res[R_SUM_S] += m * S
            useful = sum_c // S
            pend_w[0] += useful
            pend_w[1] += sum_c - useful
            pend_w[3] += sum_a
            if t - last_ck >= period_us and steps_done < n_steps:
                t += _checkpoint(res, pend_w, save_us, jit_sd, rng)
                ckpt_steps = steps_done
                last_ck = t
            continue
        # ---- one explicit step
        c_step = _dur(S * comp_us, jit_sd, rng)
        t_c = t + c_step
        # arrivals up to the all-reduce: each kills a uniformly random live group (or a unit's groups)
        while units:
            t_f, u = _units_min(next_t)
            if t_f > t_c:
                break
            npend, killed = _fire(u, n_gu, next_t, upf, dptr, dgroups, pend, npend)
            n_up -= killed
            res[R_FAILURES] += killed
        while not units:
            if ia >= n_trace:
                status = STATUS_TRACE
                break
            rate = n_up if live_scaling else n
            t_f = _next_arrival(t_ref, o_ref, a_next, rate)
            if t_f > t_c:
                break
            g = _fenwick_take(tree, n, (victims[ia] * n_up) >> 32)
            n_up -= 1
            pend[npend] = g
            npend += 1
            res[R_FAILURES] += 1
            o_ref, t_ref, ia, a_next = _consume(t_f, a_next, ia, gaps)
        if status == STATUS_TRACE:
            break
        useful = c_step // S
        red = c_step - useful
        extra_rc = 0
        extra_patch = 0
        wiped = False
        if npend > 0:
            res[R_DETECTIONS] += 1
            if strategy == STRAT_SPARE:
                rc = _rk.rectlr_step(pend, npend, False, n, r, E, G, D, H, meta, ulog, pplan, out)
                if rc < 0:
                    return -1
                wiped = rc == 1
                if not wiped:
                    extra_rc = _dur(rectlr_us, jit_sd, rng) + _dur(shrink_us, jit_sd, rng)
                    extra_patch = _dur(out[_rk.O_PATCH] * comp_us, jit_sd, rng)
                    res[R_PATCH_SHARDS] += out[_rk.O_PATCH]
            else:
                for i in range(npend):
                    g = pend[i]
                    for p in range(G[_rk.GPTR, g], G[_rk.GPTR, g + 1]):
                        tt = E[_rk.GSTK, p] // r
                        G[_rk.NLIVE, tt] -= 1
                        if G[_rk.NLIVE, tt] == 0:
                            wiped = True
                if not wiped:
                    extra_rc = _dur(shrink_us, jit_sd, rng)
            npend = 0
        if wiped:
            # ---- global restart: roll back to the last checkpoint, every group back, S reset
            res[R_WIPEOUTS] += 1
            res[R_LOST] += pend_w.sum() + c_step
            res[R_STEPS_RUN] += 1
            res[R_SUM_S] += S
            pend_w[:] = 0
            steps_done = ckpt_steps
            rate = n_up if live_scaling else n
            o_ref += rate * (t_c - t_ref)
            t_ref = t_c
            r_s = _dur(restart_us, jit_sd, rng)
            t_end = t_c + r_s
            if units:
                for u in range(n_units):
                    if next_t[u] < t_end:
                        res[R_ABSORBED] += 1
                il = _redraw(next_t, uscale, life, il, t_end, keep, t_end)
                if il < 0:
                    status = STATUS_TRACE
                upf[:] = 1
            # arrivals during the restart are absorbed by it (the clock runs at full rate)
            while not units:
                if ia >= n_trace:
                    status = STATUS_TRACE
                    break
                t_f = _next_arrival(t_ref, o_ref, a_next, n)
                if t_f >= t_end:
                    break
                res[R_ABSORBED] += 1
                o_ref, t_ref, ia, a_next = _consume(t_f, a_next, ia, gaps)
            if status == STATUS_TRACE:
                break
            res[R_RESTART] += r_s
            t = t_end
            _fenwick_fill(tree, n)
            n_up = n
            _rk.reset_state(E, G, meta, gstk0, epos0, own0, load0, s0, r)
            if strategy == STRAT_SPARE:
                S = s0
            last_ck = t
            continue
        a_s = _dur(ar_us, jit_sd, rng)
        t = t_c + extra_rc + extra_patch + a_s
        steps_done += 1
        res[R_STEPS_RUN] += 1
        res[R_SUM_S] += S
        pend_w[0] += useful
        pend_w[1] += red
        pend_w[2] += extra_patch
        pend_w[3] += a_s
        pend_w[4] += extra_rc
        if strategy == STRAT_SPARE:
            S = meta[_rk.S_]
            res[R_S_MAX] = max(res[R_S_MAX], S)
        if t - last_ck >= period_us and steps_done < n_steps:
            t += _checkpoint(res, pend_w, save_us, jit_sd, rng)
            ckpt_steps = steps_done
            last_ck = t
    # failures after the last detection but before the end still count (they hit the running job)
    while units and status != STATUS_TRACE:
        t_f, u = _units_min(next_t)
        if t_f >= t:
            break
        npend, killed = _fire(u, n_gu, next_t, upf, dptr, dgroups, pend, 0)
        res[R_FAILURES] += killed
    while not units and status != STATUS_TRACE:
        if ia >= n_trace:
            status = STATUS_TRACE
            break
        t_f = _next_arrival(t_ref, o_ref, a_next, n_up if live_scaling else n)
        if t_f >= t:
            break
        n_up -= 1
        res[R_FAILURES] += 1
        o_ref, t_ref, ia, a_next = _consume(t_f, a_next, ia, gaps)
    _keep(res, pend_w)
    res[R_TTT] = t
    res[R_STATUS] = status
    res[R_STEPS_DONE] = steps_done
    res[R_ARRIVALS] = ia
    return 0
