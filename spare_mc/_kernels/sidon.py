"""Numba kernel of the modular Sidon search (private; validation and verification live in ``_sidon``).

A set ``S`` of ``r`` residues mod ``n`` is scored by its difference counts: ``cnt[d] = base[d] + #{(a, b) in S^2 :
a != b, a - b = d mod n}``, where ``base[d] = 1`` marks a forbidden difference. ``S`` is a Sidon set avoiding the
forbidden differences exactly when every ``cnt[d] <= 1``; the cost is ``sum_d max(cnt[d] - 1, 0)``. The search is
min-conflicts with a tabu list: take a random element involved in a conflict out, put in the residue that makes
the cost smallest (random among ties, not recently taken out), until the cost is 0 or the move budget is spent.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=False)
def _add(cnt, s, r, skip, y, n, sign):
    """Add (sign=1) or remove (sign=-1) the differences between ``y`` and every element of ``s`` but ``skip``;
    return the change in cost."""
    delta = 0
    for j in range(r):
        if j == skip:
            continue
        for d in ((y - s[j]) % n, (s[j] - y) % n):
            if sign > 0:
                if cnt[d] >= 1:
                    delta += 1
                cnt[d] += 1
            else:
                cnt[d] -= 1
                if cnt[d] >= 1:
                    delta -= 1
    return delta


@njit(cache=False)
def sidon_local_search(n, r, base, rand, max_moves, tenure, out):
    """Search a Sidon set of ``r`` residues mod ``n`` avoiding the differences with ``base[d] = 1``.

    ``rand`` is an int64 array of nonnegative random numbers, used cyclically (the caller owns the generator).
    Writes the set into ``out`` and returns the number of moves used, or -1 when the budget ran out.
    """
    n_rand = rand.size
    k = 0
    in_set = np.zeros(n, dtype=np.bool_)
    s = np.empty(r, dtype=np.int64)
    # a random start of r distinct residues
    m = 0
    while m < r:
        y = rand[k % n_rand] % n
        k += 1
        if not in_set[y]:
            in_set[y] = True
            s[m] = y
            m += 1
    cnt = base.copy()
    cost = 0
    for i in range(r):
        for j in range(r):
            if i != j:
                d = (s[i] - s[j]) % n
                if cnt[d] >= 1:
                    cost += 1
                cnt[d] += 1
    tabu = np.full(n, -1, dtype=np.int64)
    conflicted = np.empty(r, dtype=np.int64)
    best_y = np.empty(n, dtype=np.int64)
    for move in range(max_moves):
        if cost == 0:
            for i in range(r):  # a loop: numba compiles a slice assignment's error message (1.55-1.83 s)
                out[i] = s[i]
            return move
        # the elements with a difference whose count exceeds one
        nc = 0
        for i in range(r):
            bad = False
            for j in range(r):
                if i != j and (cnt[(s[i] - s[j]) % n] > 1 or cnt[(s[j] - s[i]) % n] > 1):
                    bad = True
                    break
            if bad:
                conflicted[nc] = i
                nc += 1
        i = conflicted[rand[k % n_rand] % nc]
        k += 1
        old = s[i]
        cost += _add(cnt, s, r, i, old, n, -1)
        in_set[old] = False
        tabu[old] = move + tenure
        best = 1 << 62
        nb = 0
        for y in range(n):
            if in_set[y] or tabu[y] > move:
                continue
            delta = _add(cnt, s, r, i, y, n, 1)
            _add(cnt, s, r, i, y, n, -1)
            if delta < best:
                best = delta
                nb = 0
            if delta == best:
                best_y[nb] = y
                nb += 1
        if nb == 0:  # everything tabu: put the old element back
            y = old
        else:
            y = best_y[rand[k % n_rand] % nb]
            k += 1
        s[i] = y
        in_set[y] = True
        cost += _add(cnt, s, r, i, y, n, 1)
    if cost == 0:
        for i in range(r):
            out[i] = s[i]
        return max_moves
    return -1


@njit(cache=False)
def sidon_greedy(n, r, used0, order, out):
    """Modular Mian--Chowla greedy: starting from ``{0}``, add each residue of ``order`` whose differences with the
    set so far are new, distinct and not marked in ``used0`` (``used0[0]`` must be True). Writes the set into
    ``out`` and returns its size (``r`` on success)."""
    used = used0.copy()
    out[0] = 0
    m = 1
    new = np.empty(2 * r, dtype=np.int64)
    for c in order:
        if m == r:
            break
        ok = True
        k = 0
        for j in range(m):
            for d in ((c - out[j]) % n, (out[j] - c) % n):
                if used[d]:
                    ok = False
                    break
                for i in range(k):
                    if new[i] == d:
                        ok = False
                        break
                if not ok:
                    break
                new[k] = d
                k += 1
            if not ok:
                break
        if ok:
            for i in range(k):
                used[new[i]] = True
            out[m] = c
            m += 1
    return m


@njit(cache=False)
def singer_walk(q, a, b, c, out):
    """The exponents ``i < q^2 + q + 1`` at which ``x^i`` in ``GF(q)[x] / (x^3 + a x^2 + b x + c)`` has no ``x^2``
    term, written to ``out`` (``q + 2`` slots) until ``q + 2`` are found; returns how many. The twin is the walk of
    :func:`spare_mc.model._sidon.singer_set`."""
    v = q * q + q + 1
    c0, c1, c2 = 1, 0, 0
    m = 0
    for i in range(v):
        if c2 == 0:
            out[m] = i
            m += 1
            if m > q + 1:
                break
        c0, c1, c2 = (-c * c2) % q, (c0 - b * c2) % q, (c1 - a * c2) % q
    return m


@njit(cache=False)
def bose_chowla_walk(q, a, b, out):
    """The exponents ``i < q^2 - 1`` at which ``theta^i = c0 + c1 theta`` in ``GF(q)[x] / (x^2 - a x - b)`` has
    ``c1 = 1``, written to ``out`` (``q + 1`` slots) until ``q + 1`` are found; returns how many. The twin is the
    walk of :func:`spare_mc.model._sidon.bose_chowla_set`."""
    v = q * q - 1
    c0, c1 = 1, 0
    m = 0
    for i in range(v):
        if c1 == 1:
            out[m] = i
            m += 1
            if m > q:
                break
        c0, c1 = (b * c1) % q, (c0 + a * c1) % q
    return m


@njit(cache=False)
def field_powers(p, deg, f_low, table):
    """Powers of ``x`` in ``GF(p)[x] / (x^deg + f_low[deg-1] x^(deg-1) + ... + f_low[0])``: row ``i`` of ``table``
    (shape ``(p^deg - 1, deg)``) gets the coefficients of ``x^i``. Returns the multiplicative order of ``x`` if it
    is below ``p^deg - 1`` (then the polynomial is not primitive and ``table`` is incomplete), else ``p^deg - 1``."""
    m = table.shape[0]
    cur = np.zeros(deg, dtype=np.int64)
    cur[0] = 1
    for i in range(m):
        if i > 0:
            is_one = cur[0] == 1
            for j in range(1, deg):
                if cur[j] != 0:
                    is_one = False
            if is_one:
                return i
        for j in range(deg):  # a loop: numba compiles a slice assignment's error message
            table[i, j] = cur[j]
        top = cur[deg - 1]
        for j in range(deg - 1, 0, -1):
            cur[j] = (cur[j - 1] - top * f_low[j]) % p
        cur[0] = (-top * f_low[0]) % p
    return m


@njit(cache=False)
def sidon_rows_mask(rows, n, seen, stamp, ok):
    """``ok[i]`` = row ``i`` of ``rows`` (shape ``(B, r)``, residues mod ``n``) is a Sidon set mod ``n``: its
    ``r (r - 1)`` ordered differences ``a - c mod n`` are nonzero and distinct.

    ``seen`` (``n`` int64) marks the differences met in the current row with the row's stamp, so a row stops at its
    first repeated difference (most failing rows after a few of their ``r (r - 1)``): no clearing between rows.
    Pass a zeroed ``seen`` with ``stamp = 0``, then the returned stamp with the same ``seen`` for the next batch.
    The slow twin is ``spare_mc.model._sidon._sidon_rows`` (every difference of every row, sorted).
    """
    b, r = rows.shape
    for i in range(b):
        stamp += 1
        good = True
        for a in range(r):
            for c in range(a + 1, r):
                d1 = (rows[i, c] - rows[i, a]) % n
                if d1 == 0 or seen[d1] == stamp:
                    good = False
                    break
                seen[d1] = stamp
                d2 = n - d1  # the opposite difference; d2 == d1 when 2 d1 = n: a repeat
                if seen[d2] == stamp:
                    good = False
                    break
                seen[d2] = stamp
            if not good:
                break
        ok[i] = good
    return stamp
