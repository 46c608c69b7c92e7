"""Numba kernels of the wipe-out Monte Carlo (private; see :mod:`spare_mc.mc.survivability`).

Conventions shared by every kernel:

- ``rng`` is a ``numpy.random.Generator`` passed in by the caller; its state advances in place.
- per trial the kernels write ``out_T`` (1-based index of the wipe-out failure or event), ``out_dead`` (distinct
  dead groups just before it) and, where there is a clock, ``out_time``.
- cost per trial is proportional to the failures drawn: the per-failure work is O(1) (cyclic unit stride), O(types
  held by the failed group) (any layout; the fixed-layout kernel pads the stacks to a common width, so the loop
  has a constant trip count, and keeps the rare longer stacks' extra types apart), and the state touched in a trial is undone at its end -- or, for the fixed-layout
  kernel when the undo would touch more counters than there are, restored by one vectorised copy.
- uniform order without replacement is a partial Fisher-Yates shuffle of a permutation array that is never reset
  (a partial shuffle of any fixed permutation gives a uniform sample), one bounded draw per failure.
- random draws come from :mod:`spare_mc._kernels.draws` (bounded integers, SplitMix64 failure times, random holder
  tables), whose docstring states the streams.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .cache import drop_if_dependencies_changed
from .draws import (  # noqa: F401 (re-exported)
    bounded,
    bounded_py,
    bounded_splitmix,
    draw_group,
    failure_times_into,
    random_holders_into,
    raw_source,
    splitmix64,
    u01,
)

# the kernels here inline the draw primitives: their numba cache must go when those change
drop_if_dependencies_changed(__file__, ("draws.py", "records.py"))

_N_DUMMY_ROWS = 16


@njit(cache=True)
def _kill_generic(g, group_ptr, group_types, live_count):
    """Decrement the live-holder count of every type ``g`` holds; True if one reaches zero."""
    wiped = False
    for p in range(group_ptr[g], group_ptr[g + 1]):
        t = group_types[p]
        live_count[t] -= 1
        if live_count[t] == 0:
            wiped = True
    return wiped


@njit(cache=True)
def _revive_generic(g, group_ptr, group_types, live_count):
    for p in range(group_ptr[g], group_ptr[g + 1]):
        live_count[group_types[p]] += 1


@njit(cache=True)
def _one_trial_generic(next_u64, state, n, perm, group_ptr, group_types, live_count, dead, killed, with_replacement):
    """One trial of uniform-order failures on any layout. Returns (T, dead_before); state restored on exit."""
    k = 0
    nk = 0
    while True:
        g = draw_group(next_u64, state, perm, nk, n, with_replacement)
        k += 1
        if dead[g]:
            continue  # with replacement only: a failure that hits a dead group changes nothing
        dead[g] = True
        killed[nk] = g
        nk += 1
        if _kill_generic(g, group_ptr, group_types, live_count):
            break
    for q in range(nk):
        g = killed[q]
        dead[g] = False
        _revive_generic(g, group_ptr, group_types, live_count)
    return k, nk - 1


@njit(cache=True)
def table_width(group_ptr, n):
    """Width ``w`` of the fixed part of a group -> types table: the least expected cost per failure of ``w``
    counter updates plus, for a group holding more than ``w`` types, its extra ones and about sixteen updates'
    worth for the mispredicted branch into them (measured on random-holders layouts at N = 1000, r = 9: ``w`` = 12
    for stacks of 9 on average and 21 at most)."""
    longest = 0
    for g in range(n):
        longest = max(longest, group_ptr[g + 1] - group_ptr[g])
    hist = np.zeros(longest + 2, np.int64)
    for g in range(n):
        hist[group_ptr[g + 1] - group_ptr[g]] += 1
    best_w, best_cost = longest, longest * n
    above = 0     # groups holding more than w types
    extra = 0     # their types beyond the first w
    for w in range(longest, 0, -1):
        cost = w * n + extra + 16 * above
        if cost < best_cost:
            best_w, best_cost = w, cost
        above += hist[w]
        extra += above
    return best_w


@njit(cache=True)
def split_types_into(group_ptr, group_types, n_types, table, over_ptr, over_types):
    """Fill ``table`` (n x w) with the first ``w`` types of every group, padded with dummy types, and the CSR
    ``over_ptr``/``over_types`` with the rest (``over_types`` needs ``sum(max(0, deg - w))`` slots).

    Slot ``l`` of a short row ``g`` holds the dummy type ``n_types + (g mod 16) w + l``. Dummies get more holders
    than a trial can kill (see :func:`live_counts`), so they never wipe out; spreading them over 16 rows keeps
    consecutive failures from updating one dummy counter (a store-to-load dependency chain). The fixed width gives the per-failure loop a constant trip
    count (no mispredicted loop exit, no pointer loads) and the overflow loop is empty for most groups.
    """
    n, w = table.shape
    q = 0
    for g in range(n):
        lo = group_ptr[g]
        d = group_ptr[g + 1] - lo
        for l in range(w):
            table[g, l] = group_types[lo + l] if l < d else n_types + (g % _N_DUMMY_ROWS) * w + l
        over_ptr[g] = q
        for p in range(lo + w, lo + d):
            over_types[q] = group_types[p]
            q += 1
    over_ptr[n] = q


@njit(cache=True)
def live_counts(holders_per_type, n, w):
    """Live-holder counters for :func:`split_types_into`'s table: the real types', then ``n + 1`` per dummy
    (a dummy loses at most one holder per failure, at most ``n`` per trial)."""
    nt = holders_per_type.shape[0]
    live = np.empty(nt + _N_DUMMY_ROWS * w, np.int32)
    for t in range(nt):
        live[t] = holders_per_type[t]
    for l in range(_N_DUMMY_ROWS * w):
        live[nt + l] = n + 1
    return live


@njit(cache=True)
def _trials_split(next_u64, state, n, table, over_ptr, over_types, live0, trials, out_T, out_dead):
    """Uniform order without replacement on a split group -> types map (see :func:`split_types_into`).

    Per failure: one bounded draw, the partial Fisher-Yates swap and one decrement of a live-holder counter per
    type held (int32 counters, unsigned table entries: no negative-index fix-ups). The failed groups are
    ``perm[:i]``, so no kill list is kept; the counters are restored by undoing those failures, or by copying
    ``live0`` when that is cheaper (``i w`` read-modify-writes against a vectorised copy of ``n_types + w``).
    """
    w = table.shape[1]
    nc = live0.shape[0]
    perm = np.arange(n).astype(np.int32)  # int32 (n < 2^31): perm, table and counters fit the L1 cache together
    live = live0.copy()
    has_over = over_types.shape[0] > 0    # regular layouts (every stack of the same length) have no overflow
    for t in range(trials):
        i = 0
        while True:
            j = i + bounded(next_u64, state, n - i)
            g = perm[j]
            perm[j] = perm[i]
            perm[i] = g
            i += 1
            wiped = False
            row = table[g]
            for l in range(w):
                u = row[l]
                v = live[u] - 1
                live[u] = v
                wiped |= v == 0
            if has_over:
                for p in range(over_ptr[g], over_ptr[g + 1]):
                    u = over_types[p]
                    v = live[u] - 1
                    live[u] = v
                    wiped |= v == 0
            if wiped:
                break
        out_T[t] = i
        out_dead[t] = i - 1
        if 8 * i * w >= nc:
            # a loop, not ``live[:] = live0``: numba's slice assignment from an array compiles a formatted
            # shape-mismatch error (1.55-1.83 s in a process's first kernel that has one, 2026-12-07)
            for c in range(nc):
                live[c] = live0[c]
        else:
            for q in range(i):
                g = perm[q]
                row = table[g]
                for l in range(w):
                    live[row[l]] += 1
                for p in range(over_ptr[g], over_ptr[g + 1]):
                    live[over_types[p]] += 1


@njit(cache=True)
def wipeout_generic(next_u64, state, n, group_ptr, group_types, holders_per_type, trials, with_replacement, out_T,
                    out_dead):
    """Uniform-order wipe-out trials on a fixed layout given by its CSR group -> types map.

    Without replacement (the common case) the trials run on a split copy of the map (:func:`_trials_split`: a
    fixed-width table plus the rare longer stacks' overflow). Same draws as :func:`_one_trial_generic` (one
    bounded draw per failure), so the same results.
    """
    if not with_replacement:
        w = table_width(group_ptr, n)
        n_over = 0
        for g in range(n):
            n_over += max(0, group_ptr[g + 1] - group_ptr[g] - w)
        table = np.empty((n, w), np.uint32)
        over_ptr = np.empty(n + 1, np.int64)
        over_types = np.empty(n_over, np.uint32)
        split_types_into(group_ptr, group_types, holders_per_type.shape[0], table, over_ptr, over_types)
        _trials_split(next_u64, state, n, table, over_ptr, over_types, live_counts(holders_per_type, n, w), trials,
                      out_T, out_dead)
        return
    perm = np.arange(n)
    live_count = holders_per_type.copy()
    dead = np.zeros(n, np.bool_)
    killed = np.empty(n, np.int64)
    for t in range(trials):
        out_T[t], out_dead[t] = _one_trial_generic(next_u64, state, n, perm, group_ptr, group_types, live_count,
                                                   dead, killed, with_replacement)


@njit(cache=True)
def wipeout_cyclic_unit(next_u64, state, n, r, trials, with_replacement, out_T, out_dead):
    """Uniform-order wipe-out trials for cyclic unit stride in O(1) per failure.

    A type is wiped iff ``r`` cyclically consecutive groups are dead. ``run[g]`` is nonzero iff ``g`` is dead and,
    at the two ends of a maximal dead run, equals the run's length; a new death merges the runs ending at its two
    neighbours. It consumes random numbers exactly like :func:`wipeout_generic`, so both give identical ``T``.
    The run ends wrap around by a compare and subtract (an integer ``%`` by a run-time ``n`` is a 64-bit division,
    the most expensive instruction of the loop).
    """
    perm = np.arange(n)
    run = np.zeros(n, np.int32)
    killed = np.empty(n, np.int64)
    for t in range(trials):
        k = 0
        nk = 0
        while True:
            g = draw_group(next_u64, state, perm, nk, n, with_replacement)
            k += 1
            if run[g] != 0:
                continue
            killed[nk] = g
            nk += 1
            left = run[g - 1] if g > 0 else run[n - 1]
            right = run[g + 1] if g < n - 1 else run[0]
            total = left + 1 + right
            run[g] = total
            a = g - left
            if a < 0:
                a += n
            b = g + right
            if b >= n:
                b -= n
            run[a] = total
            run[b] = total
            if total >= r:
                break
        out_T[t] = k
        out_dead[t] = nk - 1
        for q in range(nk):
            run[killed[q]] = 0


@njit(cache=True)
def partition_class_min(u, count, size):
    """The least of ``count`` independent set maxima of ``size`` uniforms, by inversion of one uniform ``u`` in
    ``(0, 1]``: ``P(min > x) = (1 - x^size)^count``, so ``min = (1 - u^(1/count))^(1/size)``, computed as
    ``(-expm1(log(u) / count))^(1/size)`` to keep its precision when ``u^(1/count)`` is close to 1."""
    return (-np.expm1(np.log(u) / count)) ** (1.0 / size)


@njit(cache=True)
def truncated_binomial_cdf(m, s, cdf):
    """Fill ``cdf[0:s]`` with the unnormalised CDF of ``Bin(s, m)`` on ``0 .. s-1`` (the count of a set's ``s``
    members failed by level ``m``, given that not all of them have) and return its total ``1 - m^s``.

    Terms ``C(s, j) m^j (1 - m)^(s - j)`` in logs (``lgamma``-free: the log binomial coefficient is accumulated),
    so ``m`` near 0 or 1 and large ``s`` lose no precision to under- or overflow."""
    lm = np.log(m) if m > 0.0 else -np.inf
    l1m = np.log1p(-m)
    lc = 0.0  # log C(s, j)
    acc = 0.0
    for j in range(s):
        if j > 0:
            lc += np.log((s - j + 1) / j)
        term = lc + (s - j) * l1m
        if j > 0:
            term += j * lm
        acc += np.exp(term)
        cdf[j] = acc
    return acc


@njit(cache=True)
def wipeout_partition(next_u64, state, n, class_size, class_count, trials, out_T, out_dead):
    """Uniform-order wipe-out trials (without replacement) on a partition layout, from the order statistics.

    A partition layout's groups fall into disjoint sets (``class_count[c]`` sets of ``class_size[c]`` members; the
    other groups hold nothing) and a set's types are wiped exactly when all its members are dead: Rep's replica
    sets and the block holder table. Uniform order is the order of i.i.d. uniform failure times ``U_g``. Set
    ``j``'s wipe-out time is the max ``M_j`` of its members' times, with CDF ``x^s``; the first wipe-out comes at
    ``m = min_j M_j`` and ``T`` is the rank of ``m``, the number of groups with ``U_g <= m``. Drawn exactly, per
    trial:

    1. per class ``c`` the least of its ``K_c`` set maxima (:func:`partition_class_min`, one uniform); ``m`` is
       the least over classes, in class ``c*`` (the per-class minima of the other classes are discarded: given
       ``m`` and ``c*`` they only say that every other set has ``M_j > m``);
    2. ``T = s(c*)`` (the wiped set) plus, for every other set, independently, its members failed by ``m``: a
       ``Bin(s, m)`` count conditioned to be below ``s`` (``M_j > m``), one uniform by inversion of
       :func:`truncated_binomial_cdf`; plus, for every group outside the sets, one uniform ``< m``.

    About one draw per set instead of one per failure: at N = 1000, r = 9 (111 sets in two size classes,
    ``E[T]`` = 561.6) that is 112 draws a trial against about 562. ``out_dead = T - 1``. The law is that of
    :func:`wipeout_generic` on the same layout; the draws, and so the per-trial values, differ.
    """
    n_cls = class_size.shape[0]
    n_free = n
    smax = 1
    for c in range(n_cls):
        n_free -= class_size[c] * class_count[c]
        smax = max(smax, class_size[c])
    cdf = np.empty(smax)
    for t in range(trials):
        m = 2.0
        cstar = 0
        for c in range(n_cls):
            mc = partition_class_min(1.0 - u01(next_u64, state), class_count[c], class_size[c])
            if mc < m:
                m = mc
                cstar = c
        T = class_size[cstar]
        for c in range(n_cls):
            k = class_count[c] - (1 if c == cstar else 0)
            if k == 0:
                continue
            s = class_size[c]
            z = truncated_binomial_cdf(m, s, cdf)
            for _ in range(k):
                v = u01(next_u64, state) * z
                j = 0
                for i in range(s - 1):  # the count of CDF values <= v, branch-free: a search loop's exit is
                    j += cdf[i] <= v    # unpredictable and cost three times as much (measured at s = 9)
                T += j
        for _ in range(n_free):
            if u01(next_u64, state) < m:
                T += 1
        out_T[t] = T
        out_dead[t] = T - 1


_ALL32 = np.uint32(0xFFFFFFFF)


@njit(cache=True)
def _rank_of_min_max(seed, holders, u, m, below, n_at):
    """``T`` for failure times ``u`` whose least type maximum is ``m``: the groups failed before ``m``, then those
    failed *at* ``m`` in a uniformly random order (a bounded-draw shuffle, only when two or more groups share the
    value ``m``) up to the first that completes a type. The shuffle draws from the trial's own SplitMix64 stream
    (outputs ``ceil(n / 2), ...``, after the failure times), so a trial takes one raw draw of the caller's
    generator, tie or not, and layouts keep sharing their failure times trial by trial.

    Ties elsewhere do not matter: every group below ``m`` precedes every group at ``m`` in any tie-break, and no
    type is complete before ``m``. A type can complete only at ``m`` if its maximum is ``m``; it completes when the
    last of its holders at ``m`` fails. ``below`` and ``n_at`` (>= 2) count the times below and at ``m``."""
    n = u.shape[0]
    at = np.empty(n_at, np.int64)
    k = 0
    for g in range(n):
        if u[g] == m:
            at[k] = g
            k += 1
    nxt = (n + 1) >> 1  # the first SplitMix64 output the failure times left unused
    for i in range(n_at - 1):
        j, nxt = bounded_splitmix(seed, nxt, n_at - i)
        j += i
        g = at[j]
        at[j] = at[i]
        at[i] = g
    pos = np.full(n, -1, np.int64)
    for i in range(n_at):
        pos[at[i]] = i
    first = n_at
    nt, r = holders.shape
    for j in range(nt):
        mx = np.uint32(0)
        last = -1
        for l in range(r):
            h = holders[j, l]
            mx = max(mx, u[h])
            last = max(last, pos[h])
        if mx == m:
            first = min(first, last)
    return below + first + 1


@njit(cache=True)
def _rank(seed, holders, u, m):
    """``T``: the number of failure times ``<= m``, unless several equal ``m`` (then :func:`_rank_of_min_max`)."""
    le = np.int32(0)  # int32 (n < 2^31): narrow counters vectorise the loop
    eq = np.int32(0)
    for g in range(u.shape[0]):
        le += np.int32(u[g] <= m)
        eq += np.int32(u[g] == m)
    if eq > 1:
        return _rank_of_min_max(seed, holders, u, m, np.int64(le - eq), np.int64(eq))
    return np.int64(le)


@njit(cache=True, inline="always")  # inlined at numba level: no call in the per-type loops
def _finish_type(u, row, k, bound, m):
    """``min(m, max(bound, u[row[k:]]))``: a type's maximum from its bound over the first ``k`` holders, folded
    into the running least maximum ``m``."""
    mx = bound
    for l in range(k, row.shape[0]):
        v = u[row[l]]
        mx = v if v > mx else mx
    return mx if mx < m else m


@njit(cache=True)
def wipeout_order_stat(next_u64, state, n, holders, trials, drop, out_T, out_dead):
    """Uniform-order wipe-out trials (without replacement) on any fixed layout, from the order statistics.

    Uniform order is the order of i.i.d. uniform failure times ``u_g`` (:func:`failure_times_into`, 32 bits each,
    from a SplitMix64 stream seeded by one raw draw of the caller's generator per trial).
    A type is wiped at the latest of its holders' times; the first wipe-out comes at ``m = min_j max_l
    u[holders[j, l]]`` and ``T`` is the rank of ``m``, the number of groups with ``u_g <= m``
    (:func:`_rank_of_min_max` when several groups share the value ``m``: probability about ``n 2^-32`` a trial,
    where it breaks the tie by a uniformly random order, which keeps the law exact).

    ``m`` is found without a full pass over the table: first the max over each type's first three holders (a lower
    bound of its maximum, branch-free), and the types whose bound is below a threshold ``theta`` are listed; their
    full maxima give ``m'``. If ``m' < theta``, no other type can go below it and ``m = m'``; otherwise the types
    with a bound at or above ``theta`` but below ``m'`` are finished too. The result never depends on ``theta``;
    only the cost does. ``theta`` tracks the 95th percentile of ``m`` (a stochastic-approximation step per trial),
    so about one trial in twenty takes the second pass. Cost: one raw draw, ``ceil(n / 2)`` SplitMix64 outputs
    and about ``3 n_types`` gathers a trial plus the listed types' rest (N = 1000, r = 9: about 150 types of
    Sidon or random layouts, 190 of cyclic, six more look-ups each) -- against one bounded draw and ``r`` counter
    updates per failure (``E[T]`` = 442 for Sidon) failure by failure.

    ``holders`` is the layout's (types x r) table as uint32 (unsigned indices: no negative-index fix-ups).
    ``out_dead = T - 1``. Same law as :func:`wipeout_generic`; other draws, so other per-trial values.
    """
    nt, r = holders.shape
    k = min(3, r)
    u = np.empty(n, np.uint32)
    part = np.empty(nt, np.uint32)
    listed = np.empty(nt, np.int32)
    top = float(_ALL32 >> np.uint32(drop))  # the largest failure time
    theta = 0.5 * top
    step = top / 256.0
    for t in range(trials):
        seed = next_u64(state)
        failure_times_into(seed, n, drop, u)
        th = np.uint32(theta)
        c = 0
        if k == 3:  # unrolled: with a loop of run-time length a trial costs 1.7x as much (5.8 against 3.4 us, measured)
            for j in range(nt):
                row = holders[j]
                a = u[row[0]]
                v = u[row[1]]
                a = v if v > a else a
                v = u[row[2]]
                a = v if v > a else a
                part[j] = a
                listed[c] = j
                c += np.int32(a < th)
        else:
            for j in range(nt):
                row = holders[j]
                a = u[row[0]]
                for l in range(1, k):
                    v = u[row[l]]
                    a = v if v > a else a
                part[j] = a
                listed[c] = j
                c += np.int32(a < th)
        m = _ALL32
        for q in range(c):
            m = _finish_type(u, holders[listed[q]], k, part[listed[q]], m)
        if m >= th:  # the listed types do not settle it: finish the others whose bound is below m
            for j in range(nt):
                if part[j] >= th and part[j] < m:
                    m = _finish_type(u, holders[j], k, part[j], m)
            theta = min(top, theta + 0.95 * step)
        else:
            theta = max(0.0, theta - 0.05 * step)
        T = _rank(seed, holders, u, m)
        out_T[t] = T
        out_dead[t] = T - 1


@njit(cache=True)
def wipeout_cyclic_window(next_u64, state, n, r, holders, trials, drop, out_T, out_dead):
    """Uniform-order wipe-out trials (without replacement) for cyclic unit stride, from the order statistics.

    The types' holder sets are the ``n`` windows of ``r`` cyclically consecutive groups, so ``m`` (see
    :func:`wipeout_order_stat`, same failure times, same draws) is the least sliding-window maximum of the failure
    times: on the times extended by their first ``r - 1``, ``ceil(log2 r)`` vectorised passes ``a[i] = max(a[i],
    a[i + w])`` (``w`` = 1, 2, 4, ...) leave in ``a[i]`` the max over ``[i, i + w)``, and the window of ``r`` is the
    max of two overlapping such spans. ``holders`` (the cyclic table) serves only to break a tie at ``m``. Same
    results as :func:`wipeout_order_stat` on the cyclic table. Requires ``1 <= r <= n`` (a cyclic layout's rule):
    the extension copies ``u[:r - 1]`` without a bounds check.
    """
    L0 = n + r - 1
    u = np.empty(n, np.uint32)
    a = np.empty(L0, np.uint32)
    b = np.empty(L0, np.uint32)
    for t in range(trials):
        seed = next_u64(state)
        failure_times_into(seed, n, drop, u)
        for i in range(n):  # loops, not slice assignments (see _trials_split)
            a[i] = u[i]
        for i in range(r - 1):
            a[n + i] = u[i]
        src, dst = a, b
        w = 1
        L = L0
        while 2 * w <= r:
            np.maximum(src[:L - w], src[w:L], dst[:L - w])
            src, dst = dst, src
            L -= w
            w *= 2
        s = r - w
        np.maximum(src[:n], src[s:s + n], dst[:n])
        m = dst[:n].min()
        T = _rank(seed, holders, u, m)
        out_T[t] = T
        out_dead[t] = T - 1


@njit(cache=True)
def invert_holders_into(holders, n, group_ptr, group_types):
    """CSR group -> types of a holder table, ordered by (layer, type), by counting sort."""
    r = holders.shape[1]
    for g in range(n + 1):
        group_ptr[g] = 0
    for j in range(n):
        for l in range(r):
            group_ptr[holders[j, l] + 1] += 1
    for g in range(n):
        group_ptr[g + 1] += group_ptr[g]
    fill = group_ptr[:n].copy()
    for l in range(r):
        for j in range(n):
            g = holders[j, l]
            group_types[fill[g]] = j
            fill[g] += 1


@njit(cache=True)
def wipeout_random_fresh(next_u64, state, n, r, trials, with_replacement, out_T, out_dead):
    """Uniform-order wipe-out trials, each on a freshly drawn independent-random-holders layout (O(N r) a trial)."""
    holders = np.empty((n, r), np.int64)
    group_ptr = np.empty(n + 1, np.int64)
    group_types = np.empty(n * r, np.int64)
    perm = np.arange(n)
    live_count = np.full(n, r, np.int64)
    dead = np.zeros(n, np.bool_)
    killed = np.empty(n, np.int64)
    for t in range(trials):
        random_holders_into(next_u64, state, n, r, holders)
        invert_holders_into(holders, n, group_ptr, group_types)
        out_T[t], out_dead[t] = _one_trial_generic(next_u64, state, n, perm, group_ptr, group_types, live_count,
                                                   dead, killed, with_replacement)


@njit(cache=True)
def wipeout_events(rng, next_u64, state, holding, fresh_random_r, proc, trials, out, rec):
    """Wipe-out trials under a failure process with a clock (see :mod:`spare_mc.model.failures` for the models).

    mode 0 -- system renewal: inter-arrival ``scale * Weibull(shape)`` (divided by the live fraction when
              ``live_scaling``), each event kills a uniformly random live group;
    mode 1 -- competing clocks with common Weibull shape (per-GPU lifetimes and/or failure domains): group units of
              cumulative hazard ``group_rate * t^shape`` and the domain units of level ``l`` (domains
              ``level_ptr[l]:level_ptr[l + 1]``) of ``level_rate[l] * t^shape``, all new at time 0. In the hazard
              clock ``tau = t^shape`` they race as exponentials, so the next unit is chosen with probability
              proportional to its rate: one uniform ``u`` in ``[0, total)`` picks the groups if ``u < n_live
              group_rate``, else the first level whose cumulative weight (unfired domains x rate) exceeds the rest,
              then a uniformly random unfired domain of it. A domain event kills every live group it touches and
              events that kill nothing are not counted. With one level this draws exactly as the one-level kernel
              did (the level walk adds no random number).

    ``holding`` is a :data:`~spare_mc._kernels.records.Holding`, ``proc`` a
    :class:`~spare_mc.model.failures.KernelProcess` (``mode, shape, scale, live_scaling, group_rate, level_rate,
    level_ptr, dom_ptr, dom_groups``), ``out`` a :data:`~spare_mc._kernels.records.TrialsOut` (one entry per trial)
    and ``rec`` an :data:`~spare_mc._kernels.records.EventRecord` (``n`` entries each).
    ``fresh_random_r > 0`` draws a new random-holders layout per trial (then the CSR arrays are scratch space).
    A trial ends at the wipe-out or when every group is dead (a layout holding no types records the whole
    stream). The last trial's events are left in ``rec_time`` (event times), ``rec_end`` (``rec_killed[rec_end[e-1]
    :rec_end[e]]`` are the groups event ``e`` killed) and ``rec_killed``; the return value is its event count.
    Times are ``scale * clock`` (mode 0) or ``scale * tau^(1/shape)`` (mode 1): rates are in units of ``scale``.
    """
    n, group_ptr, group_types, holders_per_type = holding
    mode, shape, scale, live_scaling, group_rate, level_rate, level_ptr, dom_ptr, dom_groups = proc
    out_T, out_dead, out_time = out
    rec_time, rec_end, rec_killed = rec
    n_dom = dom_ptr.shape[0] - 1
    n_lev = level_rate.shape[0]
    live = np.arange(n)          # live[0:n_live] are the live groups
    pos = np.arange(n)           # pos[g] = index of g in live (valid while g is live)
    dperm = np.arange(n_dom)     # dperm[level_ptr[l]:level_ptr[l] + fired[l]] are level l's domains already fired
    fired = np.zeros(max(n_lev, 1), np.int64)
    live_count = holders_per_type.copy()
    killed = np.empty(n, np.int64)
    holders = np.empty((n, max(fresh_random_r, 1)), np.int64)
    for t in range(trials):
        if fresh_random_r > 0:
            random_holders_into(next_u64, state, n, fresh_random_r, holders)
            invert_holders_into(holders, n, group_ptr, group_types)
        n_live = n
        fired[:] = 0
        k = 0
        nk = 0
        clock = 0.0
        wiped = False
        while not wiped and n_live > 0:
            if mode == 0:
                f = n_live / n if live_scaling else 1.0
                clock += rng.weibull(shape) / f
                victim_domain = -1
            else:
                total = n_live * group_rate
                last = -1        # the last level with an unfired domain
                for l in range(n_lev):
                    left = level_ptr[l + 1] - level_ptr[l] - fired[l]
                    total += left * level_rate[l]
                    if left > 0:
                        last = l
                clock += rng.standard_exponential() / total
                victim_domain = -1
                x = rng.random() * total - n_live * group_rate
                if x >= 0.0 and last >= 0:
                    l = 0
                    while l < last:  # the level whose weight holds x (the last one takes rounding leftovers)
                        w = (level_ptr[l + 1] - level_ptr[l] - fired[l]) * level_rate[l]
                        if x < w:
                            break
                        x -= w
                        l += 1
                    lo = level_ptr[l] + fired[l]
                    j = lo + rng.integers(0, level_ptr[l + 1] - lo)
                    victim_domain = dperm[j]
                    dperm[j] = dperm[lo]
                    dperm[lo] = victim_domain
                    fired[l] += 1
            before = nk
            if victim_domain < 0:
                g = live[rng.integers(0, n_live)]
                lo, hi = 0, 1
            else:
                lo, hi = dom_ptr[victim_domain], dom_ptr[victim_domain + 1]
            for p in range(lo, hi):
                if victim_domain >= 0:
                    g = dom_groups[p]
                    if pos[g] >= n_live:
                        continue  # already dead
                # remove g from the live list (swap with the last live)
                i = pos[g]
                last = live[n_live - 1]
                live[i] = last
                pos[last] = i
                live[n_live - 1] = g
                pos[g] = n_live - 1
                n_live -= 1
                killed[nk] = g
                nk += 1
                if _kill_generic(g, group_ptr, group_types, live_count):
                    wiped = True
            if nk > before:
                rec_time[k] = scale * (clock if mode == 0 else clock ** (1.0 / shape))
                k += 1
                rec_end[k - 1] = nk
        out_T[t] = k
        out_dead[t] = before
        out_time[t] = rec_time[k - 1]
        for q in range(nk):
            _revive_generic(killed[q], group_ptr, group_types, live_count)
            rec_killed[q] = killed[q]
        # live/pos stay a valid permutation; every group is live again
    return k
