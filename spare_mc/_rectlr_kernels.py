"""Numba kernels of ReCtlr, the adaptive reordering controller (private; see :mod:`spare_mc.reorder`).

Data model (arrays, all int64)
------------------------------
- An **edge** ``e = t * r + l`` is "type ``t`` held in layer ``l`` of the holder table"; ``eg[e]`` is its group.
- ``gptr`` (N + 1): group ``g``'s stack occupies slots ``gptr[g] .. gptr[g + 1] - 1`` of ``gstk``.
- ``gstk[gptr[g] + p]`` is the edge at **position** ``p`` of group ``g``'s current stack (0 = top) and
  ``epos[e]`` is the position of edge ``e``: the two are inverse permutations within each group.
- ``own[t]`` is the edge whose group computes (serves) type ``t`` (``-1`` = unassigned), ``load[g]`` the number of
  types group ``g`` serves, ``alive[g]`` 1/0 and ``nlive[t]`` the number of live holders of ``t``.
- ``meta = [S, k, stamp, max_degree]``: stack number, dead groups, visit stamp, longest stack.

Invariant between calls: every type is served by a live group that holds it in its top ``S`` positions and no group
serves more than ``S`` types.

Algorithms
----------
- Phase 0 / Phase 1 feasibility: augmenting paths by breadth-first search (Ford-Fulkerson on the unit-capacity
  type side and capacity-``S`` group side). After a failure only the orphaned types are unassigned; a surviving
  assignment stays valid, and by Berge's theorem (an exposed vertex with no augmenting path is exposed in some
  maximum matching) the repaired matching is perfect iff one exists -- the same answer as solving from scratch.
- Phase 1 raises the capacity one step at a time from ``max(S, c(k))`` and keeps the augmentations already made (a
  larger capacity only relaxes the constraints), on a scratch copy of the assignment.
- Phase 2: successive shortest paths with Johnson potentials and Dijkstra on the residual network
  (source -> types -> groups -> sink), edge cost 1 if the edge sits at position ``>= S*`` (a move) else 0. It starts
  from the Phase-0 assignment, all of whose edges cost 0, so zero potentials are feasible and the result is a
  minimum-cost perfect assignment (no negative residual cycle), whatever the order of the orphans.
- Patch: the types no live group had in its top ``S`` layers when the failure struck must be recomputed by
  survivors; they are spread over live holders minimising the largest number any one survivor computes
  (bottleneck assignment by raising the capacity ``L = 1, 2, ...``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._wipeout_kernels import _draw_group, bounded, random_holders_into

# meta slots
S_, K_, STAMP_, MAXDEG_ = 0, 1, 2, 3
# out slots of one ReCtlr call
O_K, O_C, O_S, O_PHASE0, O_MOVES, O_ORPHANS, O_PATCH_TYPES, O_PATCH, O_WIPED = range(9)
N_OUT = 9

_BIG = np.int64(1) << 40


# ----------------------------------------------------------------------------------------------- building state
@njit(cache=True)
def build_stacks(holders, gptr, gstk, epos, eg):
    """Stacks of a holder table, each group's types in (layer, type) order -- the order of ``Layout.stacks()``."""
    n, r = holders.shape
    for g in range(n + 1):
        gptr[g] = 0
    for t in range(n):
        for l in range(r):
            gptr[holders[t, l] + 1] += 1
    for g in range(n):
        gptr[g + 1] += gptr[g]
    fill = gptr[:n].copy()
    for l in range(r):
        for t in range(n):
            g = holders[t, l]
            e = t * r + l
            eg[e] = g
            gstk[fill[g]] = e
            epos[e] = fill[g] - gptr[g]
            fill[g] += 1
    best = 0
    for g in range(n):
        best = max(best, gptr[g + 1] - gptr[g])
    return best


# ------------------------------------------------------------------------------------------ augmenting paths
@njit(cache=True)
def _flip(g_end, r, eg, via, own, load, ulog, nlog):
    """Apply the augmenting path ending at group ``g_end`` (recorded in ``via``).

    With ``nlog >= 0`` every change is appended to the undo log ``ulog`` as pairs ``(type, previous edge)`` and
    ``(-1 - g_end, 0)`` for the load increment (the caller guarantees room for ``2 N + 2`` entries). Returns the
    new log length.
    """
    g = g_end
    while True:
        e = via[g]
        u = e // r
        old = own[u]
        if nlog >= 0:
            ulog[nlog] = u
            ulog[nlog + 1] = old
            nlog += 2
        own[u] = e
        if old < 0:
            break
        g = eg[old]
    load[g_end] += 1
    if nlog >= 0:
        ulog[nlog] = -1 - g_end
        ulog[nlog + 1] = 0
        nlog += 2
    return nlog


@njit(cache=True)
def _room(ulog, nlog, n):
    """``ulog``, grown if it cannot take one more augmenting path (rare: paths are short)."""
    if nlog + 2 * n + 4 <= ulog.shape[0]:
        return ulog
    bigger = np.empty(2 * ulog.shape[0] + 2 * n + 4, np.int64)
    bigger[:nlog] = ulog[:nlog]
    return bigger


@njit(cache=True)
def _undo(ulog, nlog, own, load):
    for i in range(nlog - 2, -1, -2):
        u = ulog[i]
        if u < 0:
            load[-1 - u] -= 1
        else:
            own[u] = ulog[i + 1]


@njit(cache=True)
def _augment_bfs(t0, cap, window, r, eg, gptr, gstk, epos, alive, own, load, meta, mark_g, via, queue, ulog,
                 nlog):
    """Give the unassigned type ``t0`` a group by a shortest augmenting path.

    Usable edges: live group, position ``< window``; group capacity ``cap``; every served edge must lie inside the
    window. Returns ``(found, nlog)`` (see :func:`_flip` for the log).
    """
    meta[STAMP_] += 1
    stamp = meta[STAMP_]
    head = 0
    tail = 1
    queue[0] = t0
    while head < tail:
        u = queue[head]
        head += 1
        for l in range(r):
            e = u * r + l
            g = eg[e]
            if alive[g] == 0 or epos[e] >= window or own[u] == e or mark_g[g] == stamp:
                continue
            mark_g[g] = stamp
            via[g] = e
            if load[g] < cap:
                return True, _flip(g, r, eg, via, own, load, ulog, nlog)
            # the types g serves; with a window they all sit inside it (Phase 0 only assigns window edges and
            # the invariant keeps served types in the top S), so only the window is scanned
            for p in range(gptr[g], min(gptr[g + 1], gptr[g] + window)):
                e2 = gstk[p]
                v = e2 // r
                if own[v] == e2:
                    queue[tail] = v
                    tail += 1
    return False, nlog


# ------------------------------------------------------------------------------------------------ min-cost
@njit(cache=True)
def _heap_push(hk, hv, size, key, val):
    i = size
    hk[i] = key
    hv[i] = val
    while i > 0:
        parent = (i - 1) >> 1
        if hk[parent] <= hk[i]:
            break
        hk[parent], hk[i] = hk[i], hk[parent]
        hv[parent], hv[i] = hv[i], hv[parent]
        i = parent
    return size + 1


@njit(cache=True)
def _heap_pop(hk, hv, size):
    """Remove the minimum (left in ``hk[size-1], hv[size-1]``); returns the new size."""
    size -= 1
    hk[0], hk[size] = hk[size], hk[0]
    hv[0], hv[size] = hv[size], hv[0]
    i = 0
    while True:
        a = 2 * i + 1
        if a >= size:
            break
        b = a + 1
        c = b if (b < size and hk[b] < hk[a]) else a
        if hk[i] <= hk[c]:
            break
        hk[i], hk[c] = hk[c], hk[i]
        hv[i], hv[c] = hv[c], hv[i]
        i = c
    return size


@njit(cache=True)
def _augment_min_cost(t0, cap, n, r, eg, gptr, gstk, epos, alive, own, load, meta, dist, dstamp, fstamp, phi,
                      phi_list, n_phi, fin, via, hk, hv, ulog, nlog):
    """Shortest (fewest-moves) augmenting path from the unassigned type ``t0`` at capacity ``cap``.

    Nodes: types ``0..N-1``, groups ``N..2N-1``, sink ``2N``. Reduced costs use the potentials ``phi`` (zero at
    the start of a Phase 2); they stay non-negative after each augmentation (``phi += min(d, D) - D``). Returns
    ``(n_phi, nlog)``: the new number of entries of ``phi_list`` (nodes whose potential is non-zero; -1 if no path
    exists) and of the change log.
    """
    meta[STAMP_] += 1
    stamp = meta[STAMP_]
    sink = 2 * n
    dist[t0] = 0
    dstamp[t0] = stamp
    size = _heap_push(hk, hv, 0, 0, t0)
    nfin = 0
    g_end = -1
    big_d = -1
    while size > 0:
        size = _heap_pop(hk, hv, size)
        d = hk[size]
        v = hv[size]
        if fstamp[v] == stamp or d > dist[v]:
            continue
        fstamp[v] = stamp
        if v == sink:
            big_d = d
            break
        fin[nfin] = v
        nfin += 1
        if v < n:  # a type: forward arcs to its other live holders
            for l in range(r):
                e = v * r + l
                g = eg[e]
                if alive[g] == 0 or own[v] == e:
                    continue
                w = n + g
                if fstamp[w] == stamp:
                    continue
                c = 1 if epos[e] >= cap else 0
                nd = d + c + phi[v] - phi[w]
                if dstamp[w] != stamp or nd < dist[w]:
                    dstamp[w] = stamp
                    dist[w] = nd
                    via[g] = e
                    size = _heap_push(hk, hv, size, nd, w)
        else:  # a group: to the sink if it has room, back along the types it serves
            g = v - n
            if load[g] < cap:
                nd = d + phi[v] - phi[sink]
                if dstamp[sink] != stamp or nd < dist[sink]:
                    dstamp[sink] = stamp
                    dist[sink] = nd
                    g_end = g
                    size = _heap_push(hk, hv, size, nd, sink)
            for p in range(gptr[g], gptr[g + 1]):
                e2 = gstk[p]
                u = e2 // r
                if own[u] != e2 or fstamp[u] == stamp:
                    continue
                c = 1 if epos[e2] >= cap else 0
                nd = d - c + phi[v] - phi[u]
                if dstamp[u] != stamp or nd < dist[u]:
                    dstamp[u] = stamp
                    dist[u] = nd
                    size = _heap_push(hk, hv, size, nd, u)
    if big_d < 0:
        return -1, nlog
    for i in range(nfin):
        v = fin[i]
        delta = big_d - dist[v]
        if delta != 0:
            if phi[v] == 0:
                phi_list[n_phi] = v
                n_phi += 1
            phi[v] -= delta
    return n_phi, _flip(g_end, r, eg, via, own, load, ulog, nlog)


# --------------------------------------------------------------------------------------------------- ReCtlr
@njit(cache=True)
def _patch(newly, n_new, S, n, r, eg, gptr, gstk, epos, alive, meta, mark_t, pown, pload, mark_g, via, queue,
           pplan):
    """(number of patch types, least possible max extra shards per survivor). Leaves ``pown``/``pload`` clean.

    The plan is left in ``pplan`` (size 2N): ``pplan[i]`` is the ``i``-th patch type and ``pplan[N + i]`` the
    survivor that recomputes it.
    """
    meta[STAMP_] += 1
    stamp = meta[STAMP_]
    npatch = 0
    for i in range(n_new):
        g = newly[i]
        top = min(S, gptr[g + 1] - gptr[g])
        for p in range(gptr[g], gptr[g] + top):
            t = gstk[p] // r
            if mark_t[t] == stamp:
                continue
            mark_t[t] = stamp
            covered = False
            for l in range(r):
                e = t * r + l
                if alive[eg[e]] != 0 and epos[e] < S:
                    covered = True
                    break
            if not covered:
                pplan[npatch] = t
                npatch += 1
    if npatch == 0:
        return 0, 0
    cap = 1
    for i in range(npatch):
        t = pplan[i]
        while not _augment_bfs(t, cap, _BIG, r, eg, gptr, gstk, epos, alive, pown, pload, meta, mark_g, via, queue,
                               queue, -1)[0]:
            cap += 1
    for i in range(npatch):
        t = pplan[i]
        pplan[n + i] = eg[pown[t]]
        pown[t] = -1
        for l in range(r):
            pload[eg[t * r + l]] = 0
    return npatch, cap


@njit(cache=True)
def rectlr_step(newly, n_new, from_scratch, n, r, eg, gptr, gstk, epos, alive, nlive, own, load, meta, ulog,
                pown, pload, pplan, mark_g, mark_t, via, queue, orphans, dist, dstamp, fstamp, phi, phi_list, fin,
                hk, hv, out):
    """Kill the groups ``newly[:n_new]`` and run ReCtlr; results in ``out`` (see the ``O_*`` slots).

    ``from_scratch`` discards the surviving assignment and solves every phase from an empty one (the reference
    the incremental repair must agree with). Returns 1 on a wipe-out (the state is then left as it is), -1 if
    the solver found no assignment where one must exist (a bug), else 0.
    """
    for i in range(N_OUT):
        out[i] = 0
    S = meta[S_]
    # deaths
    m = 0
    wiped = False
    for i in range(n_new):
        g = newly[i]
        if alive[g] == 0:
            continue
        newly[m] = g
        m += 1
        alive[g] = 0
        meta[K_] += 1
        for p in range(gptr[g], gptr[g + 1]):
            t = gstk[p] // r
            nlive[t] -= 1
            if nlive[t] == 0:
                wiped = True
    k = meta[K_]
    out[O_K] = k
    if m == 0:
        out[O_C] = -(-n // (n - k)) if k < n else 0
        out[O_S] = S
        out[O_PHASE0] = 1
        return 0
    if wiped:
        out[O_WIPED] = 1
        return 1
    c = -(-n // (n - k))
    out[O_C] = c
    out[O_PATCH_TYPES], out[O_PATCH] = _patch(newly, m, S, n, r, eg, gptr, gstk, epos, alive, meta, mark_t, pown,
                                              pload, mark_g, via, queue, pplan)
    # orphans: the types the dead groups served
    n_orph = 0
    for i in range(m):
        g = newly[i]
        for p in range(gptr[g], gptr[g + 1]):
            e = gstk[p]
            t = e // r
            if own[t] == e:
                own[t] = -1
                orphans[n_orph] = t
                n_orph += 1
        load[g] = 0
    out[O_ORPHANS] = n_orph
    if from_scratch:
        n_orph = 0
        for t in range(n):
            own[t] = -1
            orphans[n_orph] = t
            n_orph += 1
        for g in range(n):
            load[g] = 0
    return _resolve(orphans, n_orph, S, c, n, r, eg, gptr, gstk, epos, alive, own, load, meta, ulog, mark_g,
                    via, queue, dist, dstamp, fstamp, phi, phi_list, fin, hk, hv, out)


@njit(cache=True)
def _resolve(orphans, n_orph, S, c, n, r, eg, gptr, gstk, epos, alive, own, load, meta, ulog, mark_g, via,
             queue, dist, dstamp, fstamp, phi, phi_list, fin, hk, hv, out):
    """Phases 0-2 for the unassigned types ``orphans[:n_orph]`` (every other type is validly assigned)."""
    k = meta[K_]
    # Phase 0: HK-Fixed (current stacks, capacity S, top-S edges only)
    first = 0
    if S * (n - k) >= n:
        while first < n_orph:
            if not _augment_bfs(orphans[first], S, S, r, eg, gptr, gstk, epos, alive, own, load, meta, mark_g,
                                via, queue, ulog, -1)[0]:
                break
            first += 1
    if first == n_orph:
        out[O_S] = S
        out[O_PHASE0] = 1
        return 0
    # Phase 1: HK-Free -- the least capacity >= max(S, c(k)) with a perfect assignment, then undone
    cap = max(S, c)
    nlog = 0
    for i in range(first, n_orph):
        while True:
            ulog = _room(ulog, nlog, n)
            found, nlog = _augment_bfs(orphans[i], cap, _BIG, r, eg, gptr, gstk, epos, alive, own, load, meta,
                                       mark_g, via, queue, ulog, nlog)
            if found:
                break
            cap += 1
            if cap > meta[MAXDEG_]:
                return -1
    _undo(ulog, nlog, own, load)
    s_star = cap
    # Phase 2: fewest moves at S*, successive shortest paths from the Phase-0 assignment
    n_phi = 0
    nlog = 0
    for i in range(first, n_orph):
        ulog = _room(ulog, nlog, n)
        n_phi, nlog = _augment_min_cost(orphans[i], s_star, n, r, eg, gptr, gstk, epos, alive, own, load, meta,
                                        dist, dstamp, fstamp, phi, phi_list, n_phi, fin, via, hk, hv, ulog, nlog)
        if n_phi < 0:
            return -1
    for i in range(n_phi):
        phi[phi_list[i]] = 0
    # bring every served type that sits below the window into it, by swapping with a top slot whose type is not
    # served by this group (the deepest such slot first, so the upper layers keep their order); only types whose
    # server changed in Phase 2 (the log) can sit below the window
    moves = 0
    for i in range(0, nlog, 2):
        t = ulog[i]
        if t < 0:
            continue
        e = own[t]
        if epos[e] < s_star:
            continue
        g = eg[e]
        base = gptr[g]
        q = min(s_star, gptr[g + 1] - base) - 1
        while q >= 0:
            e2 = gstk[base + q]
            if own[e2 // r] != e2:
                break
            q -= 1
        p_old = epos[e]
        gstk[base + q] = e
        gstk[base + p_old] = e2
        epos[e] = q
        epos[e2] = p_old
        moves += 1
    meta[S_] = s_star
    out[O_S] = s_star
    out[O_MOVES] = moves
    return 0


@njit(cache=True)
def initial_assignment(n, r, eg, gptr, gstk, epos, alive, nlive, own, load, meta, ulog, mark_g, via, queue,
                       orphans, dist, dstamp, fstamp, phi, phi_list, fin, hk, hv, out):
    """State of a fully live system: every group alive, ``S = 1`` if the stacks' top layer is a perfect
    assignment, else the least feasible ``S`` with the fewest moves (ReCtlr from an empty assignment)."""
    for g in range(n):
        alive[g] = 1
        load[g] = 0
    for t in range(n):
        own[t] = -1
        nlive[t] = r
        orphans[t] = t
    meta[S_] = 1
    meta[K_] = 0
    for i in range(N_OUT):
        out[i] = 0
    return _resolve(orphans, n, 1, 1, n, r, eg, gptr, gstk, epos, alive, own, load, meta, ulog, mark_g, via,
                    queue, dist, dstamp, fstamp, phi, phi_list, fin, hk, hv, out)


# ---------------------------------------------------------------------------------------------------- drivers
# per-trial statistics columns
T_T, T_DEAD, T_SUM_C, T_SUM_S, T_CALLS, T_PHASE0, T_MOVES, T_ORPHANS, T_PATCH_TYPES, T_PATCH, T_S0, T_SMAX, \
    T_NOMOVE = range(13)
N_TRIAL_COLS = 13
# per-event log columns
L_TRIAL, L_EVENT, L_K, L_C, L_S, L_PHASE0, L_MOVES, L_ORPHANS, L_PATCH_TYPES, L_PATCH = range(10)
N_LOG_COLS = 10


@njit(cache=True)
def _record(out, trial, event, stats, gap_hist, log, n_log, log_trials):
    """Account one masked failure event (epoch ``k`` starts with stack number ``out[O_S]``)."""
    stats[T_SUM_C] += out[O_C]
    stats[T_SUM_S] += out[O_S]
    stats[T_CALLS] += 1
    stats[T_PHASE0] += out[O_PHASE0]
    stats[T_MOVES] += out[O_MOVES]
    if out[O_MOVES] == 0:
        stats[T_NOMOVE] += 1
    stats[T_ORPHANS] += out[O_ORPHANS]
    stats[T_PATCH_TYPES] += out[O_PATCH_TYPES]
    stats[T_PATCH] += out[O_PATCH]
    stats[T_SMAX] = max(stats[T_SMAX], out[O_S])
    gap = out[O_S] - out[O_C]
    nb = gap_hist.shape[0]
    gap_hist[min(gap, nb - 1)] += 1
    if trial < log_trials:
        row = log[n_log]
        row[L_TRIAL] = trial
        row[L_EVENT] = event
        row[L_K] = out[O_K]
        row[L_C] = out[O_C]
        row[L_S] = out[O_S]
        row[L_PHASE0] = out[O_PHASE0]
        row[L_MOVES] = out[O_MOVES]
        row[L_ORPHANS] = out[O_ORPHANS]
        row[L_PATCH_TYPES] = out[O_PATCH_TYPES]
        row[L_PATCH] = out[O_PATCH]
        n_log += 1
    return n_log


@njit(cache=True)
def _start_trial(stats, gap_hist, s0):
    for j in range(N_TRIAL_COLS):
        stats[j] = 0
    stats[T_S0] = s0
    stats[T_SMAX] = s0
    stats[T_SUM_C] = 1
    stats[T_SUM_S] = s0
    gap_hist[min(s0 - 1, gap_hist.shape[0] - 1)] += 1


@njit(cache=True)
def overhead_uniform(next_u64, state, n, r, holders, fresh, trials, from_scratch, out_stats, out_gap, log,
                     log_trials):
    """Uniform-order failures (one group at a time, without replacement) until the first wipe-out, ReCtlr at
    every masked failure. Consumes random numbers exactly like the wipe-out kernels (fresh random-holders layout
    per trial when ``fresh``), so ``T`` equals :func:`wipeout_mc`'s for the same generator state.

    Returns the number of log rows written (events of the first ``log_trials`` trials) or -1 on a solver error.
    """
    nr = n * r
    eg = np.empty(nr, np.int64)
    gptr = np.empty(n + 1, np.int64)
    gstk = np.empty(nr, np.int64)
    epos = np.empty(nr, np.int64)
    alive = np.empty(n, np.int64)
    nlive = np.empty(n, np.int64)
    own = np.empty(n, np.int64)
    load = np.empty(n, np.int64)
    meta = np.zeros(4, np.int64)
    ulog = np.empty(4 * n + 4, np.int64)
    pown = np.full(n, -1, np.int64)
    pload = np.zeros(n, np.int64)
    pplan = np.empty(2 * n, np.int64)
    mark_g = np.zeros(n, np.int64)
    mark_t = np.zeros(n, np.int64)
    via = np.empty(n, np.int64)
    queue = np.empty(n, np.int64)
    orphans = np.empty(n, np.int64)
    dist = np.empty(2 * n + 1, np.int64)
    dstamp = np.zeros(2 * n + 1, np.int64)
    fstamp = np.zeros(2 * n + 1, np.int64)
    phi = np.zeros(2 * n + 1, np.int64)
    phi_list = np.empty(2 * n + 1, np.int64)
    fin = np.empty(2 * n + 1, np.int64)
    hsize = 2 * nr + 2 * n + 2
    hk = np.empty(hsize, np.int64)
    hv = np.empty(hsize, np.int64)
    out = np.zeros(N_OUT, np.int64)
    newly = np.empty(1, np.int64)
    perm = np.arange(n)
    hold = holders.copy()
    # the initial state of a fixed layout, restored at the start of every trial
    meta[MAXDEG_] = build_stacks(hold, gptr, gstk, epos, eg)
    if initial_assignment(n, r, eg, gptr, gstk, epos, alive, nlive, own, load, meta, ulog, mark_g, via,
                          queue, orphans, dist, dstamp, fstamp, phi, phi_list, fin, hk, hv, out) < 0:
        return -1
    gstk0 = gstk.copy()
    epos0 = epos.copy()
    own0 = own.copy()
    load0 = load.copy()
    s0 = meta[S_]
    n_log = 0
    for trial in range(trials):
        if fresh:
            random_holders_into(next_u64, state, n, r, hold)
            meta[MAXDEG_] = build_stacks(hold, gptr, gstk, epos, eg)
            if initial_assignment(n, r, eg, gptr, gstk, epos, alive, nlive, own, load, meta, ulog, mark_g,
                                  via, queue, orphans, dist, dstamp, fstamp, phi, phi_list, fin, hk, hv, out) < 0:
                return -1
        else:
            gstk[:] = gstk0
            epos[:] = epos0
            own[:] = own0
            load[:] = load0
            alive[:] = 1
            nlive[:] = r
            meta[S_] = s0
            meta[K_] = 0
        stats = out_stats[trial]
        _start_trial(stats, out_gap[trial], meta[S_])
        i = 0
        while True:
            newly[0] = _draw_group(next_u64, state, perm, i, n, False)
            i += 1
            rc = rectlr_step(newly, 1, from_scratch, n, r, eg, gptr, gstk, epos, alive, nlive, own, load, meta,
                             ulog, pown, pload, pplan, mark_g, mark_t, via, queue, orphans, dist, dstamp, fstamp,
                             phi, phi_list, fin, hk, hv, out)
            if rc < 0:
                return -1
            if rc == 1:
                break
            n_log = _record(out, trial, i, stats, out_gap[trial], log, n_log, log_trials)
        stats[T_T] = i
        stats[T_DEAD] = i - 1
    return n_log


@njit(cache=True)
def overhead_events(n, r, holders, ev_ptr, ev_groups, trial, from_scratch, stats, gap_hist, log, n_log,
                    log_trials):
    """One trial driven by a given event stream (several groups may die in one event). Returns the new number of
    log rows, or -1 on a solver error. ``stats[T_T]`` is the 1-based index of the wipe-out event and
    ``stats[T_DEAD]`` the groups dead just before it (0 events / all dead if the stream ends first)."""
    nr = n * r
    eg = np.empty(nr, np.int64)
    gptr = np.empty(n + 1, np.int64)
    gstk = np.empty(nr, np.int64)
    epos = np.empty(nr, np.int64)
    alive = np.empty(n, np.int64)
    nlive = np.empty(n, np.int64)
    own = np.empty(n, np.int64)
    load = np.empty(n, np.int64)
    meta = np.zeros(4, np.int64)
    ulog = np.empty(4 * n + 4, np.int64)
    pown = np.full(n, -1, np.int64)
    pload = np.zeros(n, np.int64)
    pplan = np.empty(2 * n, np.int64)
    mark_g = np.zeros(n, np.int64)
    mark_t = np.zeros(n, np.int64)
    via = np.empty(n, np.int64)
    queue = np.empty(n, np.int64)
    orphans = np.empty(n, np.int64)
    dist = np.empty(2 * n + 1, np.int64)
    dstamp = np.zeros(2 * n + 1, np.int64)
    fstamp = np.zeros(2 * n + 1, np.int64)
    phi = np.zeros(2 * n + 1, np.int64)
    phi_list = np.empty(2 * n + 1, np.int64)
    fin = np.empty(2 * n + 1, np.int64)
    hsize = 2 * nr + 2 * n + 2
    hk = np.empty(hsize, np.int64)
    hv = np.empty(hsize, np.int64)
    out = np.zeros(N_OUT, np.int64)
    newly = np.empty(n, np.int64)
    meta[MAXDEG_] = build_stacks(holders, gptr, gstk, epos, eg)
    if initial_assignment(n, r, eg, gptr, gstk, epos, alive, nlive, own, load, meta, ulog, mark_g, via,
                          queue, orphans, dist, dstamp, fstamp, phi, phi_list, fin, hk, hv, out) < 0:
        return -1
    _start_trial(stats, gap_hist, meta[S_])
    n_ev = ev_ptr.shape[0] - 1
    dead_before = 0
    for ev in range(n_ev):
        m = 0
        for j in range(ev_ptr[ev], ev_ptr[ev + 1]):
            newly[m] = ev_groups[j]
            m += 1
        dead_before = meta[K_]
        rc = rectlr_step(newly, m, from_scratch, n, r, eg, gptr, gstk, epos, alive, nlive, own, load, meta, ulog,
                         pown, pload, pplan, mark_g, mark_t, via, queue, orphans, dist, dstamp, fstamp, phi,
                         phi_list, fin, hk, hv, out)
        if rc < 0:
            return -1
        if rc == 1:
            stats[T_T] = ev + 1
            stats[T_DEAD] = dead_before
            return n_log
        n_log = _record(out, trial, ev + 1, stats, gap_hist, log, n_log, log_trials)
    stats[T_T] = n_ev
    stats[T_DEAD] = meta[K_]
    return n_log
