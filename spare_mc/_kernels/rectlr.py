"""Numba kernels of ReCtlr, the adaptive reordering controller (private; see :mod:`spare_mc.mc.reorder`).

Data model (int64 arrays packed by rows)
---------------------------------------
- An **edge** ``e = t * r + l`` is "type ``t`` held in layer ``l`` of the holder table"; ``E[EG, e]`` is its group
  and ``E[ET, e] = e // r`` its type (a load instead of a 64-bit division: the divisions by the run-time ``r``
  were most of the cost of a ReCtlr call).
- ``G[GPTR]`` (N + 1): group ``g``'s stack occupies slots ``G[GPTR, g] .. G[GPTR, g + 1] - 1`` of ``E[GSTK]``.
- ``E[GSTK, G[GPTR, g] + p]`` is the edge at **position** ``p`` of group ``g``'s current stack (0 = top) and
  ``E[EPOS, e]`` is the position of edge ``e``: the two are inverse permutations within each group.
  ``E[STYPE, G[GPTR, g] + p]`` is that slot's type (``E[ET, E[GSTK, ...]]`` kept beside the slot): a scan of a
  stack reads the slot's edge and type side by side, not one through the other.
- ``G[OWN, t]`` is the edge whose group computes (serves) type ``t`` (``-1`` = unassigned), ``G[LOAD, g]`` the
  number of types group ``g`` serves, ``G[ALIVE, g]`` 1/0 and ``G[NLIVE, t]`` the number of live holders of ``t``;
  ``G[MOVED, g]`` is 1 once Phase 2 has reordered group ``g``'s stack since the last :func:`reset_state`.
- ``meta = [S, k, stamp, max_degree, phase2_id]``: stack number, dead groups, visit stamp, longest stack, and the
  stamp of the current Phase-2 run; ``G[DEEP, g] == phase2_id`` marks a group that Phase 2 has given a type below
  the window (every other group serves only types in its top ``S*`` positions, so the search scans only those).

The arrays are packed into a few 2-d blocks (``E``, ``G``, ``D``, ``H``, see :func:`alloc`) because every array argument
of a non-inlined numba call costs a reference-count round trip (about 8 ns): with one argument per array the calls alone
took ~300 ns per failure. The blocks travel together as one record, :class:`~spare_mc._kernels.rectlr_layout.State`
(``st``; the rows and slots are named in :mod:`spare_mc._kernels.rectlr_layout`), which numba passes to a compiled
callee field by field, as it passed the blocks one by one; a fully live state to return to is a
:class:`~spare_mc._kernels.rectlr_layout.Saved`.

The per-failure path (:func:`rectlr_step` and everything it calls but :func:`_phases12_grown`) is compiled without
the runtime (``_nrt=False``): no reference counting; the one allocation (a longer undo log, rarely needed) is
:func:`_phases12_grown`'s, which declares the runtime. The bucket queue, :func:`_flip`, the Phase-2 searches,
:func:`_patch`, :func:`_resolve`, :func:`_phases12` and Phase 0's search (:func:`_augment_bfs_inlined`) are inlined
(``inline="always"``, each at one call site but the queue's push and ``_flip``; a call passes every array as its
exploded fields, 9 machine words for a 2-d block); Phase 1 and the patch call :func:`_augment_bfs` (rarer searches)
and :func:`_phase2` stays a call. In the per-failure loops indices are cast to unsigned (``_U``): numba then skips its
negative-index wraparound (a load of the row length, spilled in these register-starved loops, and three operations
per access). What was measured (what inlining gained and cost, the dead ends, where the time goes, the tie rule's
effect on later calls): docs/architecture.md, section 8.

Invariant between calls: every type is served by a live group that holds it in its top ``S`` positions and no group
serves more than ``S`` types.

Algorithms
----------
- Phase 0 / Phase 1 feasibility: augmenting paths by breadth-first search (Ford-Fulkerson on the unit-capacity
  type side and capacity-``S`` group side). After a failure only the orphaned types are unassigned; a surviving
  assignment stays valid, and by Berge's theorem (an exposed vertex with no augmenting path is exposed in some
  maximum matching) the repaired matching is perfect iff one exists -- the same answer as solving from scratch.
- Phase 1 raises the capacity one step at a time from ``max(S, c(k))`` and keeps the augmentations already made (a
  larger capacity only relaxes the constraints), on a scratch copy of the assignment. It runs only when Phase 2
  tried first at ``max(S, c(k))`` fails: successive shortest paths place every orphan at a capacity iff a perfect
  assignment exists there (the same augmenting-path argument), so when they all succeed ``S* = max(S, c(k))`` and
  the Phase-2 result is the one the Phase-1-then-Phase-2 order computes; otherwise the attempt is undone from the
  log and the two phases run as stated. ``S*`` rarely exceeds ``max(S, c(k))`` (under 2% of the Phase-2 runs of
  cyclic N = 1000, r = 9), so the Phase-1 search is mostly saved.
- Phase 0 tries every orphan (in the order the dead groups' stacks list them, top first), even after one fails: a
  path it finds costs nothing, the least any path can cost, so it is a shortest path of Phase 2's successive
  shortest paths (which may take the orphans in any order). The orphans it cannot place go to Phase 2, the last one
  first (its failed search is still in the queue and the marks, and Phase 2 continues from it), the others in order.
- Phase 2: successive shortest paths with Johnson potentials on the residual network (source -> types -> groups ->
  sink), edge cost 1 if the edge sits at position ``>= S*`` (a move) else 0. It starts from the Phase-0 assignment,
  all of whose edges cost 0, so zero potentials are feasible and the result is a minimum-cost perfect assignment (no
  negative residual cycle), whatever the order of the orphans. While every path so far cost 0 (all potentials zero,
  every served edge in the top ``S*`` positions) the costs are 0/1 and the search is breadth-first layer by layer
  (:func:`_augment_layers`: a 0-1 breadth-first search, Dial's algorithm with two buckets), starting from Phase 0's
  failed search when it ran at this capacity; after a path that cost a move, Dijkstra with a bucket queue
  (:func:`_augment_min_cost`). Both stop at the first group with room they reach at the least distance left, which is
  then the sink's. A group serves only types in its top ``S*`` positions (the invariant, Phase 0's window) unless a
  Phase-2 path gave it a deeper one (``G[DEEP]``); the backward arcs of the others are found in those positions alone,
  in the same order.
- The tie rule (which of several equally cheap assignments is kept; it decides the state the next failure meets, not
  ``T``, ``c(k)`` or ``S*``): the order above of the orphans; in a breadth-first layer, the types in the order
  reached and each type's holders in layer order for cost-0 arcs, the types of the layer in reverse order and each
  type's holders in reverse layer order for cost-1 arcs; in the bucket queue, first in first out per label; every
  search stops at the first group with room reached (changed on 2026-12-06, issue 38: the old rule was a binary
  heap's order, every search run until a group with room was popped).
- Patch: the types no live group had in its top ``S`` layers when the failure struck must be recomputed by
  survivors; they are spread over live holders minimising the largest number any one survivor computes
  (bottleneck assignment by raising the capacity ``L = 1, 2, ...``). One type or two (the common cases) are placed
  without a search, exactly where the search would place them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .cache import drop_if_dependencies_changed
from .draws import draw_group, random_holders_into
from .rectlr_layout import (ALIVE, BHEAD, BSTAMP, BTAIL, DEEP, DIST, DSTAMP, EG, EPOS, ET, FIN, FSTAMP, GPTR, GSTK,
                            HNEXT, HNODE, K_, L_C, L_EVENT, L_K, L_MOVES, L_ORPHANS, L_PATCH, L_PATCH_TYPES, L_PHASE0,
                            L_S, L_TRIAL, LOAD, MARKG, MARKT, MAXDEG_, MOVED, N_D, N_E, N_G, N_H, N_META, N_OUT,
                            N_TRIAL_COLS, NLIVE, O_C, O_K, O_MOVES, O_ORPHANS, O_PATCH, O_PATCH_TYPES, O_PHASE0, O_S,
                            O_WIPED, ORPH, OWN, P2_, PHI, PHIL, PLOAD, POWN, QCUR, QTAIL_, QUEUE, S_, STAMP_, STYPE,
                            T_CALLS, T_DEAD, T_MOVES, T_NOMOVE, T_ORPHANS, T_PATCH, T_PATCH_TYPES, T_PHASE0, T_S0,
                            T_SMAX, T_SUM_C, T_SUM_S, T_T, VIA, Saved, State, Tally)

# the cached kernels of this module contain the wipe-out kernels' code, and the slots of the layout: recompile them
# when those change
drop_if_dependencies_changed(__file__, ("draws.py", "rectlr_layout.py", "slots.py"))

_BIG = np.int64(1) << 40
# A counter that starts at a constant (``n = 0``) is first typed by numba as that literal, and a call it feeds
# compiles a specialisation for the literal that is never run, besides the int64 one: five of ``rectlr_step``, three
# of ``_resolve``, ``_phases12``... in one test run, each a full compilation. Starting such counters (and the
# constant arguments of the large kernels) at these int64 values keeps one specialisation per call site.
_Z, _ONE = np.int64(0), np.int64(1)
_FALSE = np.bool_(False)
_NONE = np.int64(-1)
# _augment_bfs's rows as int64 values (as literals, each of its two callers compiled a specialisation)
_OWN, _LOAD, _POWN, _PLOAD = np.int64(OWN), np.int64(LOAD), np.int64(POWN), np.int64(PLOAD)
_U = np.uint64  # an unsigned index skips numba's negative-index wraparound (a load of the shape and 3 ops)
_NO_ROOM = -2  # _phases12: the undo log is too short (state restored; retry with a longer one)


@njit(cache=True)
def alloc(n, r):
    """A fresh :class:`~spare_mc._kernels.rectlr_layout.State` (the blocks ``E, G, D, H, meta, ulog, pplan, out``)
    for ``n`` groups and redundancy ``r``."""
    nr = n * r
    E = np.zeros((N_E, nr), np.int64)
    for e in range(nr):
        E[ET, e] = e // r
    G = np.zeros((N_G, n + 1), np.int64)
    G[POWN, :] = -1
    D = np.zeros((N_D, 2 * n + 1), np.int64)
    H = np.zeros((N_H, 2 * nr + 2 * n + 2), np.int64)
    return State(E, G, D, H, np.zeros(N_META, np.int64), np.empty(4 * n + 4, np.int64), np.empty(2 * n, np.int64),
                 np.zeros(N_OUT, np.int64))


# ----------------------------------------------------------------------------------------------- building state
@njit(cache=True)
def build_stacks(holders, E, G):
    """Stacks of a holder table, each group's types in (layer, type) order -- the order of ``Layout.stacks()``.
    Returns the longest stack."""
    n, r = holders.shape
    for g in range(n + 1):
        G[GPTR, g] = 0
        G[MOVED, g] = 0
    for t in range(n):
        for l in range(r):
            G[GPTR, holders[t, l] + 1] += 1
    for g in range(n):
        G[GPTR, g + 1] += G[GPTR, g]
    fill = G[GPTR, :n].copy()
    for l in range(r):
        for t in range(n):
            g = holders[t, l]
            e = t * r + l
            E[EG, e] = g
            E[GSTK, fill[g]] = e
            E[STYPE, fill[g]] = t
            E[EPOS, e] = fill[g] - G[GPTR, g]
            fill[g] += 1
    best = 0
    for g in range(n):
        best = max(best, G[GPTR, g + 1] - G[GPTR, g])
    return best


# ------------------------------------------------------------------------------------------ augmenting paths
@njit(cache=True, _nrt=False, inline="always")
def _flip(g_end, r, E, G, own_row, load_row, ulog, nlog):
    """Apply the augmenting path ending at group ``g_end`` (recorded in ``G[VIA]``) to rows ``own_row`` /
    ``load_row`` of ``G``.

    With ``nlog >= 0`` every change is appended to the undo log ``ulog`` as pairs ``(type, previous edge)`` and
    ``(-1 - g_end, 0)`` for the load increment (the caller guarantees room for ``2 N + 2`` entries). Returns the
    new log length.
    """
    g = g_end
    while True:
        e = G[VIA, _U(g)]
        u = E[ET, _U(e)]
        old = G[own_row, _U(u)]
        if nlog >= 0:
            ulog[_U(nlog)] = u
            ulog[_U(nlog + 1)] = old
            nlog += 2
        G[own_row, _U(u)] = e
        if old < 0:
            break
        g = E[EG, _U(old)]
    G[load_row, _U(g_end)] += 1
    if nlog >= 0:
        ulog[nlog] = -1 - g_end
        ulog[nlog + 1] = 0
        nlog += 2
    return nlog


@njit(cache=True, _nrt=False)
def _undo(ulog, nlog, G):
    for i in range(nlog - 2, -1, -2):
        u = ulog[i]
        if u < 0:
            G[LOAD, -1 - u] -= 1
        else:
            G[OWN, u] = ulog[i + 1]


@njit(cache=True, _nrt=False)
def _augment_bfs(t0, cap, window, r, st, own_row, load_row, nlog):
    """:func:`_augment_bfs_inlined` as a call: Phase 1 and the patch, whose searches are rarer than Phase 0's."""
    return _augment_bfs_inlined(t0, cap, window, r, st, own_row, load_row, nlog)


@njit(cache=True, _nrt=False, inline="always")
def _augment_bfs_inlined(t0, cap, window, r, st, own_row, load_row, nlog):
    """Give the unassigned type ``t0`` a group by a shortest augmenting path (assignment in rows ``own_row`` /
    ``load_row`` of ``G``).

    Usable edges: live group, position ``< window``; group capacity ``cap``; every served edge must lie inside the
    window. Returns ``(found, nlog)`` (see :func:`_flip` for the log, ``st.ulog``; none with ``nlog < 0``).
    """
    E, G, meta, ulog = st.E, st.G, st.meta, st.ulog
    meta[STAMP_] += 1
    stamp = meta[STAMP_]
    head = 0
    tail = 1
    G[QUEUE, 0] = t0
    while head < tail:
        u = G[QUEUE, _U(head)]
        head += 1
        own = G[own_row, _U(u)]
        for e in range(u * r, u * r + r):
            eu = _U(e)
            g = E[EG, eu]
            gu = _U(g)
            if E[EPOS, eu] >= window or own == e or G[ALIVE, gu] == 0 or G[MARKG, gu] == stamp:
                continue
            G[MARKG, gu] = stamp
            G[VIA, gu] = e
            if G[load_row, gu] < cap:
                return True, _flip(g, r, E, G, own_row, load_row, ulog, nlog)
            # the types g serves; with a window they all sit inside it (Phase 0 only assigns window edges and
            # the invariant keeps served types in the top S), so only the window is scanned
            base = G[GPTR, gu]
            for p in range(base, min(G[GPTR, _U(g + 1)], base + window)):
                e2 = E[GSTK, _U(p)]
                v = E[STYPE, _U(p)]
                if G[own_row, _U(v)] == e2:
                    G[QUEUE, _U(tail)] = v
                    tail += 1
    meta[QTAIL_] = tail  # the explored types G[QUEUE, :tail], for Phase 2 to continue from (_augment_layers)
    return False, nlog


# ------------------------------------------------------------------------------------------------ min-cost
@njit(cache=True, _nrt=False, inline="always")
def _serve_scan(g, cap, tail, E, G):
    """Queue the types group ``g`` serves (all in its top ``cap`` positions) behind ``G[QUEUE, :tail]``; returns the
    new tail."""
    base = G[GPTR, _U(g)]
    for p in range(base, min(G[GPTR, _U(g + 1)], base + cap)):
        e2 = E[GSTK, _U(p)]
        v = E[STYPE, _U(p)]
        if G[OWN, _U(v)] == e2:
            G[QUEUE, _U(tail)] = v
            tail += 1
    return tail


@njit(cache=True, _nrt=False, inline="always")
def _augment_layers(t0, cap, stamp0, n, r, st, more):
    """The first searches of a Phase 2 (all potentials zero, every served edge in the top ``cap`` positions): a
    fewest-moves augmenting path from the unassigned type ``t0`` by breadth-first search layer by layer.

    Costs are then 0 (a forward arc into the top ``cap`` positions, every backward arc) or 1 (a forward arc below),
    so the nodes at distance ``d`` are those the cost-0 arcs reach from the cost-1 arcs out of layer ``d - 1``.
    Layer 0 is the breadth-first search of Phase 0 at capacity and window ``cap`` (with ``stamp0 >= 0``, the one
    Phase 0 has just run and failed with, left in ``G[QUEUE, :meta[QTAIL_]]`` and the marks ``stamp0``); layer
    ``d`` scans the cost-1 arcs of layer ``d - 1``'s types in reverse queue order, each type's edges in reverse
    layer order (the tie rule: scanned in queue and layer order, more moves followed per Phase-2 call and the calls
    were slower; see docs/architecture.md, section 8), then continues breadth-first on cost-0 arcs. The search
    stops at the first group with room it reaches: every group of the layers before is full, so its distance ``d``
    is the least possible. Returns ``(n_phi, g_end)`` as :func:`_augment_min_cost`.

    With ``more`` (another orphan to place in this Phase 2) and ``d > 0``, the potentials become ``phi = dist - d``
    on the nodes of layers ``< d`` (0 elsewhere, whose distance is ``>= d``): Johnson's update, which keeps every
    reduced cost non-negative for :func:`_augment_min_cost`. The first node of layer ``j`` sits at
    ``G[QUEUE, D[FIN, j]]``; a group has the layer of the types it serves, which follow one another in the queue.
    """
    E, G, D, meta = st.E, st.G, st.D, st.meta
    g_end = -1
    if stamp0 >= 0:  # Phase 0's failed search from t0, with these marks: layer 0 is complete
        stamp = stamp0
        tail = meta[QTAIL_]
        h = tail
    else:
        meta[STAMP_] += 1
        stamp = meta[STAMP_]
        G[QUEUE, 0] = t0
        tail = _ONE
        h = _Z
    d = _Z
    lo = _Z
    D[FIN, 0] = 0
    while True:
        # the cost-0 arcs of layer d, breadth-first from G[QUEUE, h]
        while h < tail and g_end < 0:
            u = G[QUEUE, _U(h)]
            h += 1
            own = G[OWN, _U(u)]
            for e in range(u * r, u * r + r):
                eu = _U(e)
                g = E[EG, eu]
                gu = _U(g)
                if E[EPOS, eu] >= cap or own == e or G[ALIVE, gu] == 0 or G[MARKG, gu] == stamp:
                    continue
                G[MARKG, gu] = stamp
                G[VIA, gu] = e
                if G[LOAD, gu] < cap:
                    g_end = g
                    break
                tail = _serve_scan(g, cap, tail, E, G)
        if g_end >= 0:
            break
        hi = tail
        if lo == hi:  # layer d is empty: no path
            return _Z, g_end
        d += 1
        D[FIN, _U(d)] = hi
        # the cost-1 arcs of layer d - 1, its types and their edges in reverse order (a type's own edge is in the
        # top cap positions: never one of them)
        for q in range(hi - 1, lo - 1, -1):
            u = G[QUEUE, _U(q)]
            for e in range(u * r + r - 1, u * r - 1, -1):
                eu = _U(e)
                g = E[EG, eu]
                gu = _U(g)
                if E[EPOS, eu] < cap or G[ALIVE, gu] == 0 or G[MARKG, gu] == stamp:
                    continue
                G[MARKG, gu] = stamp
                G[VIA, gu] = e
                if G[LOAD, gu] < cap:
                    g_end = g
                    break
                tail = _serve_scan(g, cap, tail, E, G)
            if g_end >= 0:
                break
        if g_end >= 0:
            break
        lo = hi
        h = hi
    n_phi = _Z
    if more and d > 0:
        for j in range(d):
            delta = d - j
            prev = -1
            for q in range(D[FIN, _U(j)], D[FIN, _U(j + 1)]):
                u = G[QUEUE, _U(q)]
                D[PHI, _U(u)] = -delta
                D[PHIL, _U(n_phi)] = u
                n_phi += 1
                own = G[OWN, _U(u)]
                if own >= 0:
                    g = E[EG, _U(own)]
                    if g != prev:
                        prev = g
                        D[PHI, _U(n + g)] = -delta
                        D[PHIL, _U(n_phi)] = n + g
                        n_phi += 1
    return n_phi, g_end


@njit(cache=True, _nrt=False, inline="always")
def _push(H, D, nent, live, qt, stamp, v, off, bcur, nb):
    """Queue node ``v`` at label ``cur + off`` (``off >= 0``; ``bcur = cur % nb``): in ``D[QCUR, qt]`` if
    ``off == 0``, else in bucket ``(cur + off) % nb`` (no division while ``off < nb``). Returns ``(nent, live, qt)``."""
    if off == 0:
        D[QCUR, _U(qt)] = v
        return nent, live, qt + 1
    b = bcur + off
    if b >= nb:
        b = b - nb if b - nb < nb else b % nb
    b = _U(b)
    H[HNODE, _U(nent)] = v
    H[HNEXT, _U(nent)] = -1
    if D[BSTAMP, b] != stamp or D[BHEAD, b] < 0:
        D[BSTAMP, b] = stamp
        D[BHEAD, b] = nent
    else:
        H[HNEXT, _U(D[BTAIL, b])] = nent
    D[BTAIL, b] = nent
    return nent + 1, live + 1, qt


@njit(cache=True, _nrt=False, inline="always")
def _augment_min_cost(t0, cap, n, r, st, n_phi):
    """Shortest (fewest-moves) augmenting path from the unassigned type ``t0`` at capacity ``cap``, for the searches
    of a Phase 2 after one whose path cost a move (the potentials are no longer all zero; see
    :func:`_augment_layers` for the others).

    Nodes: types ``0..N-1``, groups ``N..2N-1``, sink ``2N``. Reduced costs use the potentials ``D[PHI]``; they stay
    non-negative after each augmentation (``phi += min(d, D) - D``). Returns ``(n_phi, g_end)``: the new number of
    entries of ``D[PHIL]`` (nodes whose potential is non-zero) and the group with room the path ends at, its
    predecessors in ``G[VIA]`` (-1 if no path exists); :func:`_phase2` applies the path.

    Dijkstra with a bucket queue (Dial's algorithm): the reduced costs are small integers (at most one more than
    the largest ``|phi|``, which is at most the moves of the Phase 2 so far, ``<= N``), so ``2 N + 1`` circular
    FIFO buckets (``D[BHEAD]``, ``D[BTAIL]``, stamped by ``D[BSTAMP]``; the entries in ``H``: ``H[HNODE]`` the node,
    ``H[HNEXT]`` the next entry) hold the labels above the one being popped, whose new entries go to a flat FIFO,
    ``D[QCUR]``, popped after its bucket's (all pushed before): the same order without links (docs/architecture.md,
    section 8). A node is finished when first popped (``D[FSTAMP]``); later entries of it are stale. The search
    stops at the first group with room it reaches at the label being popped (when its arc is relaxed, or when it is
    popped): a group with room has potential 0 (its arc to the sink has reduced cost ``phi[g] - phi[sink] >= 0``,
    the sink's potential stays 0 and potentials only decrease), so the sink's distance ``big_d`` is that label, the
    least left. The nodes finished before have their exact distance ``<= big_d``, every other one at least
    ``big_d``: Johnson's update applies to the finished ones only.
    """
    E, G, D, H, meta = st.E, st.G, st.D, st.H, st.meta
    meta[STAMP_] += 1
    stamp = meta[STAMP_]
    nb = 2 * n + 1
    D[DIST, t0] = 0
    D[DSTAMP, t0] = stamp
    nent = _Z
    live = _Z  # entries of the buckets not popped yet
    D[QCUR, 0] = t0
    qh, qt = _Z, _ONE  # the entries pushed at the current label, D[QCUR, qh:qt]
    cur, bcur = _Z, _Z  # the label being popped and its bucket, cur % nb
    p2 = meta[P2_]
    nfin = 0
    g_end = -1
    while g_end < 0:
        b = _U(bcur)
        if D[BSTAMP, b] == stamp and D[BHEAD, b] >= 0:  # pushed before the label was reached: first out
            i = D[BHEAD, b]
            D[BHEAD, b] = H[HNEXT, _U(i)]
            live -= 1
            v = H[HNODE, _U(i)]
        elif qh < qt:
            v = D[QCUR, _U(qh)]
            qh += 1
        elif live == 0:
            break
        else:  # the next label
            cur += 1
            bcur = bcur + 1 if bcur + 1 < nb else _Z
            qh = qt = _Z
            continue
        vu = _U(v)
        if D[FSTAMP, vu] == stamp:
            continue  # stale: finished at a smaller label
        D[FSTAMP, vu] = stamp
        D[FIN, _U(nfin)] = v
        nfin += 1
        base = cur + D[PHI, vu]  # loop invariants, loaded once: the loops below store to G and D
        if v < n:  # a type: forward arcs to its other live holders
            own = G[OWN, vu]
            for e in range(v * r, v * r + r):
                g = E[EG, _U(e)]
                gu = _U(g)
                if G[ALIVE, gu] == 0 or own == e:
                    continue
                w = n + g
                wu = _U(w)
                c = 1 if E[EPOS, _U(e)] >= cap else 0
                nd = base + c - D[PHI, wu]
                if D[DSTAMP, wu] != stamp or nd < D[DIST, wu]:
                    D[DSTAMP, wu] = stamp
                    D[DIST, wu] = nd
                    G[VIA, gu] = e
                    if nd == cur and G[LOAD, gu] < cap:  # a group with room at the least label: stop
                        g_end = g
                        break
                    nent, live, qt = _push(H, D, nent, live, qt, stamp, w, nd - cur, bcur, nb)
        else:  # a group: to the sink if it has room, back along the types it serves
            g = v - n
            gu = _U(g)
            if G[LOAD, gu] < cap:
                g_end = g
                break
            lo = G[GPTR, gu]
            hi = G[GPTR, _U(g + 1)]
            if G[DEEP, gu] != p2:  # g serves only types in its top cap positions
                hi = min(hi, lo + cap)
            for p in range(lo, hi):
                e2 = E[GSTK, _U(p)]
                u = E[STYPE, _U(p)]
                uu = _U(u)
                if G[OWN, uu] != e2 or D[FSTAMP, uu] == stamp:
                    continue
                c = 1 if p - lo >= cap else 0  # E[EPOS, e2], the position of slot p
                nd = base - c - D[PHI, uu]
                if D[DSTAMP, uu] != stamp or nd < D[DIST, uu]:
                    D[DSTAMP, uu] = stamp
                    D[DIST, uu] = nd
                    nent, live, qt = _push(H, D, nent, live, qt, stamp, u, nd - cur, bcur, nb)
    if g_end < 0:
        return n_phi, g_end
    big_d = cur
    for i in range(nfin):
        v = D[FIN, i]
        delta = big_d - D[DIST, v]
        if delta != 0:
            if D[PHI, v] == 0:
                D[PHIL, n_phi] = v
                n_phi += 1
            D[PHI, v] -= delta
    return n_phi, g_end


# --------------------------------------------------------------------------------------------------- ReCtlr
@njit(cache=True, _nrt=False, inline="always")
def _patch(newly, n_new, S, n, r, st):
    """(number of patch types, least possible max extra shards per survivor). Leaves ``G[POWN]``/``G[PLOAD]``
    clean.

    The plan is left in ``pplan`` (size 2N): ``pplan[i]`` is the ``i``-th patch type and ``pplan[N + i]`` the
    survivor that recomputes it.
    """
    E, G, meta, pplan = st.E, st.G, st.meta, st.pplan
    meta[STAMP_] += 1
    stamp = meta[STAMP_]
    npatch = 0
    for i in range(n_new):
        g = newly[i]
        base = G[GPTR, _U(g)]
        top = min(S, G[GPTR, _U(g + 1)] - base)
        for p in range(base, base + top):
            t = E[STYPE, _U(p)]
            tu = _U(t)
            if G[MARKT, tu] == stamp:
                continue
            G[MARKT, tu] = stamp
            own = G[OWN, tu]  # its server, if live, holds it in its top S (the invariant): covered
            if own >= 0 and G[ALIVE, _U(E[EG, _U(own)])] != 0:
                continue
            # covered: a live holder has it in its top S (the position first: a load of the edge row, not of a
            # group's liveness, which is elsewhere in memory)
            covered = False
            for e in range(t * r, t * r + r):
                eu = _U(e)
                if E[EPOS, eu] < S and G[ALIVE, _U(E[EG, eu])] != 0:
                    covered = True
                    break
            if not covered:
                pplan[npatch] = t
                pplan[n + npatch] = _first_live_other(t, _NONE, r, E, G)
                npatch += 1
    if npatch == 0:
        return 0, 0
    if npatch == 1:  # what the search below finds for one type: its first live holder in layer order, at L = 1
        return 1, 1
    if npatch == 2:  # what it finds for two, without the searches (the common case of a Phase-2 call): at L = 1
        # the first goes to h1 = its first live holder; the second to its first live holder other than h1 if it has
        # one; else its search reaches h1 (full) first and moves the first type to its next live holder, if any;
        # else L = 2 and both go to h1
        h1 = pplan[n]
        h2 = _first_live_other(pplan[1], h1, r, E, G)
        if h2 >= 0:
            pplan[n + 1] = h2
            return 2, 1
        pplan[n + 1] = h1
        h1b = _first_live_other(pplan[0], h1, r, E, G)
        if h1b < 0:
            return 2, 2
        pplan[n] = h1b
        return 2, 1
    cap = _ONE
    for i in range(npatch):
        t = pplan[i]
        while not _augment_bfs(t, cap, _BIG, r, st, _POWN, _PLOAD, _NONE)[0]:  # no log: st.ulog is not written
            cap += 1
    for i in range(npatch):
        t = pplan[i]
        pplan[n + i] = E[EG, G[POWN, t]]
        G[POWN, t] = -1
        for l in range(r):
            G[PLOAD, E[EG, t * r + l]] = 0
    return npatch, cap


@njit(cache=True, _nrt=False)
def _first_live_other(t, h, r, E, G):
    """The first live holder of type ``t`` in layer order other than group ``h`` (-1 if none)."""
    for e in range(t * r, t * r + r):
        g = E[EG, _U(e)]
        if g != h and G[ALIVE, _U(g)] != 0:
            return g
    return -1


@njit(cache=True, _nrt=False)  # no reference counting per call; a longer undo log is _phases12_grown's job
def rectlr_step(newly, n_new, from_scratch, n, r, st):
    """Kill the groups ``newly[:n_new]`` and run ReCtlr on the state ``st`` (a
    :class:`~spare_mc._kernels.rectlr_layout.State`); results in ``st.out`` (see the ``O_*`` slots).

    ``from_scratch`` discards the surviving assignment and solves every phase from an empty one (the reference
    the incremental repair must agree with); ``n_new < 0``: :func:`initial_assignment`'s solve (one inlined copy
    of the phases for both). Returns 1 on a wipe-out (the state is then left as it is), -1 if the solver found no
    assignment where one must exist (a bug), else 0.
    """
    E, G, meta, out = st.E, st.G, st.meta, st.out
    for i in range(N_OUT):
        out[i] = 0
    if n_new < 0:
        S = c = _ONE
        n_orph = n
    else:
        S = meta[S_]
        m = _Z  # deaths
        wiped = False
        for i in range(n_new):
            g = newly[i]
            if G[ALIVE, g] == 0:
                continue
            newly[m] = g
            m += 1
            G[ALIVE, g] = 0
            meta[K_] += 1
            for p in range(G[GPTR, _U(g)], G[GPTR, _U(g + 1)]):
                tu = _U(E[STYPE, _U(p)])
                G[NLIVE, tu] -= 1
                if G[NLIVE, tu] == 0:
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
        out[O_PATCH_TYPES], out[O_PATCH] = _patch(newly, m, S, n, r, st)
        n_orph = _Z  # orphans: the types the dead groups served
        for i in range(m):
            g = newly[i]
            base = G[GPTR, _U(g)]
            for p in range(base, min(G[GPTR, _U(g + 1)], base + S)):  # a group serves types in its top S only
                e = E[GSTK, _U(p)]
                t = E[STYPE, _U(p)]
                if G[OWN, _U(t)] == e:
                    G[OWN, _U(t)] = -1
                    G[ORPH, _U(n_orph)] = t
                    n_orph += 1
            G[LOAD, g] = 0
        out[O_ORPHANS] = n_orph
        if from_scratch:
            n_orph = _Z
            for t in range(n):
                G[OWN, t] = -1
                G[ORPH, n_orph] = t
                n_orph += 1
            for g in range(n):
                G[LOAD, g] = 0
    return _resolve(n_orph, S, c, n, r, st)


@njit(cache=True, _nrt=False)
def step_blocks(newly, n_new, from_scratch, n, r, blocks):
    """:func:`rectlr_step` called from Python (``ReCtlr.fail``), the state as the plain tuple of its blocks
    (``tuple(st)``): numba's dispatcher types a plain tuple of arrays in C but a NamedTuple in Python (a
    :class:`~spare_mc._kernels.rectlr_layout.State` argument: ~2.5 us more per call from Python)."""
    return rectlr_step(newly, n_new, from_scratch, n, r, State(*blocks))


@njit(cache=True, _nrt=False, inline="always")
def _resolve(n_orph, S, c, n, r, st):
    """Phases 0-2 for the unassigned types ``G[ORPH, :n_orph]`` (every other type is validly assigned)."""
    G, meta, out = st.G, st.meta, st.out
    k = meta[K_]
    # Phase 0: HK-Fixed (current stacks, capacity S, top-S edges only). Every orphan is tried: those it places cost
    # 0, the least possible, so successive shortest paths may take them first; the others go to G[ORPH, :nf]
    nf = _Z
    reuse = False
    if S * (n - k) >= n:
        for i in range(n_orph):
            t = G[ORPH, i]
            reuse = not _augment_bfs_inlined(t, S, S, r, st, OWN, LOAD, -1)[0]
            if reuse:
                G[ORPH, nf] = t
                nf += 1
        if nf == 0:
            out[O_S] = S
            out[O_PHASE0] = 1
            return 0
        if reuse and nf > 1:  # the last search failed and is still in the queue: its orphan goes first in Phase 2
            G[ORPH, 0], G[ORPH, nf - 1] = G[ORPH, nf - 1], G[ORPH, 0]
    else:
        nf = n_orph
    # with reuse and c <= S, Phase 2 runs at Phase 0's capacity first and continues from its last, failed search
    rc = _phases12(_Z, nf, S, c, n, r, st, reuse and c <= S)
    if rc == _NO_ROOM:  # rare: long augmenting paths or many orphans (a multi-group event, the initial state)
        rc = _phases12_grown(_Z, nf, S, c, n, r, st)
    return rc


@njit(cache=True, _nrt=True)  # explicit: a callee compiles with its caller's flags unless it declares its own
def _phases12_grown(first, n_orph, S, c, n, r, st):
    """:func:`_phases12` with undo logs of doubling length (in place of ``st.ulog``) until one is long enough (the
    only allocation on the ReCtlr path, kept out of the reference-count-free code)."""
    size = st.ulog.shape[0]
    while True:
        size = 2 * size + 2 * n + 4
        longer = State(st.E, st.G, st.D, st.H, st.meta, np.empty(size, np.int64), st.pplan, st.out)
        rc = _phases12(first, n_orph, S, c, n, r, longer, _FALSE)  # Phase 0's search is overwritten by now
        if rc != _NO_ROOM:
            return rc


@njit(cache=True, _nrt=False, inline="always")
def _phases12(first, n_orph, S, c, n, r, st, reuse):
    """Phases 1 and 2 for the orphans ``G[ORPH, first:n_orph]`` that Phase 0 could not place (with ``reuse``, Phase
    0's failed search for the first of them is left in the queue and the marks: see :func:`_augment_layers`).

    Returns 0, -1 (no assignment where one must exist: a bug) or ``_NO_ROOM`` when ``ulog`` cannot take one more
    augmenting path (``2 N + 4`` entries); the assignment is then restored as it was on entry (every change since
    is in the log), so the caller can run it again with a longer log and get the same result.
    """
    G, meta, ulog = st.G, st.meta, st.ulog
    room = ulog.shape[0] - 2 * n - 4
    # Phase 2 at the least candidate capacity first: if it places every orphan, that capacity is S* (see the module
    # docstring) and this is exactly the Phase 2 below; if not, undo it and find S* by Phase 1
    rc = _phase2(first, n_orph, max(S, c), n, r, st, room, reuse)
    if rc != -1:
        return rc
    # Phase 1: HK-Free -- the least capacity >= max(S, c(k)) with a perfect assignment, then undone
    cap = max(S, c)
    nlog = _Z
    for i in range(first, n_orph):
        while True:
            if nlog > room:
                _undo(ulog, nlog, G)
                return _NO_ROOM
            found, nlog = _augment_bfs(G[ORPH, i], cap, _BIG, r, st, _OWN, _LOAD, nlog)
            if found:
                break
            cap += 1
            if cap > meta[MAXDEG_]:
                return -1
    _undo(ulog, nlog, G)
    return _phase2(first, n_orph, cap, n, r, st, room, _FALSE)


@njit(cache=True, _nrt=False)
def _phase2(first, n_orph, s_star, n, r, st, room, reuse):
    """Phase 2 at capacity ``s_star`` for the orphans ``G[ORPH, first:n_orph]``, then the moves that bring every
    served type into the top ``s_star`` layers.

    Returns 0, ``_NO_ROOM`` (see :func:`_phases12`) or -1 when an orphan has no augmenting path at ``s_star``
    (no perfect assignment there); in both of the last cases the assignment and the potentials are as on entry.
    """
    E, G, D, meta, ulog, out = st.E, st.G, st.D, st.meta, st.ulog, st.out
    # Phase 2: fewest moves at S*, successive shortest paths from the Phase-0 assignment; breadth-first by layers
    # while the potentials are all zero (every path so far cost 0), then Dijkstra
    n_phi = _Z
    nlog = _Z
    stamp0 = meta[STAMP_] if reuse else -1  # the marks of Phase 0's failed search
    meta[STAMP_] += 1
    meta[P2_] = meta[STAMP_]
    for i in range(first, n_orph):
        if nlog > room:
            _undo(ulog, nlog, G)
            for q in range(n_phi):
                D[PHI, D[PHIL, q]] = 0
            return _NO_ROOM
        if n_phi == 0:
            got, g_end = _augment_layers(G[ORPH, i], s_star, stamp0 if i == first else -1, n, r, st, i + 1 < n_orph)
        else:
            got, g_end = _augment_min_cost(G[ORPH, i], s_star, n, r, st, n_phi)
        if g_end < 0:
            _undo(ulog, nlog, G)
            for q in range(n_phi):
                D[PHI, D[PHIL, q]] = 0
            return -1
        n_phi = got
        g = g_end
        while True:  # mark the groups that will serve a type below the window
            e = G[VIA, g]
            if E[EPOS, e] >= s_star:
                G[DEEP, g] = meta[P2_]
            old = G[OWN, E[ET, e]]
            if old < 0:
                break
            g = E[EG, old]
        nlog = _flip(g_end, r, E, G, OWN, LOAD, ulog, nlog)
    for i in range(n_phi):
        D[PHI, D[PHIL, i]] = 0
    # bring every served type that sits below the window into it, by swapping with a top slot whose type is not
    # served by this group (the deepest such slot first, so the upper layers keep their order); only types whose
    # server changed in Phase 2 (the log) can sit below the window
    moves = 0
    for i in range(0, nlog, 2):
        t = ulog[i]
        if t < 0:
            continue
        e = G[OWN, t]
        if E[EPOS, e] < s_star:
            continue
        g = E[EG, e]
        base = G[GPTR, g]
        q = min(s_star, G[GPTR, g + 1] - base) - 1
        e2 = -1
        while q >= 0:
            e2 = E[GSTK, base + q]
            if G[OWN, E[STYPE, base + q]] != e2:
                break
            q -= 1
        p_old = E[EPOS, e]
        E[GSTK, base + q] = e
        E[GSTK, base + p_old] = e2
        E[STYPE, base + p_old] = E[STYPE, base + q]
        E[STYPE, base + q] = t
        E[EPOS, e] = q
        E[EPOS, e2] = p_old
        G[MOVED, g] = 1
        moves += 1
    meta[S_] = s_star
    out[O_S] = s_star
    out[O_MOVES] = moves
    return 0


@njit(cache=True)
def initial_assignment(n, r, st):
    """State of a fully live system: every group alive, ``S = 1`` if the stacks' top layer is a perfect
    assignment, else the least feasible ``S`` with the fewest moves (ReCtlr from an empty assignment)."""
    G, meta = st.G, st.meta
    for g in range(n):
        G[ALIVE, g] = 1
        G[LOAD, g] = 0
    for t in range(n):
        G[OWN, t] = -1
        G[NLIVE, t] = r
        G[ORPH, t] = t
    meta[S_] = 1
    meta[K_] = 0
    return rectlr_step(G[ORPH], _NONE, _FALSE, n, r, st)  # its n_new < 0 branch


@njit(cache=True)
def saved_state(st, n):
    """The state ``st`` of ``n`` groups as a fully live state to return to (:func:`reset_state`): copies of its
    stacks and assignment, and its ``S``."""
    return Saved(st.E[GSTK].copy(), st.E[EPOS].copy(), st.G[OWN, :n].copy(), st.G[LOAD, :n].copy(), st.meta[S_])


@njit(cache=True, _nrt=True)  # as rectlr_step
def reset_state(st, saved, r):
    """Back to the saved fully-live state ``saved`` (a :class:`~spare_mc._kernels.rectlr_layout.Saved`; a global
    restart).

    Only the stacks of the groups Phase 2 has reordered since (``G[MOVED]``, set by every move) are copied back:
    a move swaps two edges of one group, so that group's slots of ``E[GSTK]``, ``E[STYPE]`` and its edges'
    ``E[EPOS]`` are all it changes; a flagged group whose stack is back as saved is copied again, which is
    harmless (what it gained: docs/architecture.md, section 8)."""
    E, G, meta = st.E, st.G, st.meta
    gstk0, epos0, own0, load0, s0 = saved
    n = own0.shape[0]
    for g in range(n):
        if G[MOVED, g] != 0:
            G[MOVED, g] = 0
            for p in range(G[GPTR, g], G[GPTR, g + 1]):
                e = gstk0[p]
                E[GSTK, p] = e
                E[STYPE, p] = E[ET, e]
                E[EPOS, e] = epos0[e]
    for i in range(n):
        G[OWN, i] = own0[i]
        G[LOAD, i] = load0[i]
        G[ALIVE, i] = 1
        G[NLIVE, i] = r
    meta[S_] = s0
    meta[K_] = 0


# ---------------------------------------------------------------------------------------------------- drivers
@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
def _start_trial(stats, gap_hist, s0):
    for j in range(N_TRIAL_COLS):
        stats[j] = 0
    stats[T_S0] = s0
    stats[T_SMAX] = s0
    stats[T_SUM_C] = 1
    stats[T_SUM_S] = s0
    gap_hist[min(s0 - 1, gap_hist.shape[0] - 1)] += 1


@njit(cache=True)
def overhead_uniform(next_u64, state, n, r, holders, fresh, trials, from_scratch, tally):
    """Uniform-order failures (one group at a time, without replacement) until the first wipe-out, ReCtlr at
    every masked failure. Consumes random numbers exactly like the failure-by-failure wipe-out kernels (fresh
    random-holders layout per trial when ``fresh``), so ``T`` equals ``wipeout_mc(..., method="sequential")``'s for
    the same generator state. Writes the rows of every trial of ``tally`` (a
    :class:`~spare_mc._kernels.rectlr_layout.Tally`).

    Returns the number of log rows written (events of the first ``tally.log_trials`` trials) or -1 on a solver
    error.
    """
    st = alloc(n, r)
    E, G, meta = st.E, st.G, st.meta
    newly = np.empty(1, np.int64)
    perm = np.arange(n)
    hold = holders.copy()
    # the initial state of a fixed layout, restored at the start of every trial
    meta[MAXDEG_] = build_stacks(hold, E, G)
    if initial_assignment(n, r, st) < 0:
        return -1
    saved = saved_state(st, n)
    n_log = _Z
    for trial in range(trials):
        if fresh:
            random_holders_into(next_u64, state, n, r, hold)
            meta[MAXDEG_] = build_stacks(hold, E, G)
            if initial_assignment(n, r, st) < 0:
                return -1
        else:
            reset_state(st, saved, r)
        stats = tally.stats[trial]
        _start_trial(stats, tally.gap_hist[trial], meta[S_])
        i = _Z
        while True:
            newly[0] = draw_group(next_u64, state, perm, i, n, False)
            i += 1
            rc = rectlr_step(newly, _ONE, from_scratch, n, r, st)
            if rc < 0:
                return -1
            if rc == 1:
                break
            n_log = _record(st.out, trial, i, stats, tally.gap_hist[trial], tally.log, n_log, tally.log_trials)
        stats[T_T] = i
        stats[T_DEAD] = i - 1
    return n_log


@njit(cache=True)
def overhead_events(n, r, holders, ev_ptr, ev_groups, trial, from_scratch, tally_fields, n_log):
    """One trial driven by a given event stream (several groups may die in one event), written into the
    :class:`~spare_mc._kernels.rectlr_layout.Tally` of that trial's rows and the log, given as the plain tuple of
    its fields (called from Python once per trial: see :func:`step_blocks`). Returns the new number of log rows, or
    -1 on a solver error. ``stats[T_T]`` is the 1-based index of the wipe-out event and ``stats[T_DEAD]`` the groups
    dead just before it (0 events / all dead if the stream ends first)."""
    tally = Tally(*tally_fields)
    st = alloc(n, r)
    meta = st.meta
    stats, gap_hist = tally.stats, tally.gap_hist
    newly = np.empty(n, np.int64)
    meta[MAXDEG_] = build_stacks(holders, st.E, st.G)
    if initial_assignment(n, r, st) < 0:
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
        rc = rectlr_step(newly, m, from_scratch, n, r, st)
        if rc < 0:
            return -1
        if rc == 1:
            stats[T_T] = ev + 1
            stats[T_DEAD] = dead_before
            return n_log
        n_log = _record(st.out, trial, ev + 1, stats, gap_hist, tally.log, n_log, tally.log_trials)
    stats[T_T] = n_ev
    stats[T_DEAD] = meta[K_]
    return n_log
