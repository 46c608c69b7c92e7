"""The unit clocks of the timeline's failure source (private): per-unit failure times in a tournament tree, or the
race of renewed units by class (see "Failure source" in :mod:`spare_mc._kernels.timeline`).

Unit ``u`` (groups ``0..n_gu-1`` first, then the domains of each level of the model) fails at its absolute time
``next_t[u]``; a new lifetime is ``max(1, rint(uscale[u] * life[il]))`` microseconds with ``life`` the next entry of
a stream of standard Weibull variates, drawn in unit order. Only :func:`units_redraw` (and its variants) and
:func:`units_fire` write ``next_t`` and only :func:`units_min` searches it (the tournament tree: the place for a
heap). Sampled as a race (``P_UNIT_RACE``, "renew" only) the units form classes of one rate each and the next
failure is drawn from the classes' active counts and rates (:func:`_race_schedule`, :func:`_race_pick`) instead of
``next_t``. The functions that act on the whole source take its record ``src``
(:class:`~spare_mc._kernels.timeline_layout.Source`); the per-failure helpers take the arrays they read.
"""

from __future__ import annotations

import numpy as np

from .cache import drop_if_dependencies_changed
from .timeline_helpers import kernel, kill_if_live
from .timeline_layout import (GB_PEND, HORIZON_F, HORIZON_US, I64_MAX, NEVER, N_CLASSES, PARKED, P_CLASS_END,
                              P_KEEP_AGES, P_N_GROUP_UNITS, P_UNIT_RACE, Q_IA, Q_IL, Q_M, Q_M_FROM, Q_N_OFF, Q_N_PEND,
                              Q_N_UP, Q_T0, Q_T_NEXT, STATUS_OK, STATUS_TRACE, UB_PERM, UB_POS, UB_TMP, UB_TOUR,
                              UF_INV_K, UF_RATE, UF_SIGMA, UF_SIGMA_NEXT)

# the cached kernels of this module contain the helpers' code and the layouts' slots: recompile them when those change
drop_if_dependencies_changed(__file__, ("rectlr_layout.py", "slots.py", "timeline_helpers.py",
                                        "timeline_layout.py"))

#: a victim draw in [0, 2^32) as a fraction of 1
_INV_2_32 = 1.0 / 4294967296.0


@kernel
def _tour_val(next_t, u):
    """The failure time a tournament node compares: a padding leaf (``-1``) never wins."""
    return next_t[u] if u >= 0 else I64_MAX


@kernel
def tour_build(next_t, UB):
    """Every node of the tournament tree from the leaves: node ``i`` holds the unit with the earliest time below it,
    the lower index on a tie (the left child's units have the lower indices). O(units)."""
    tour = UB[UB_TOUR]
    s = tour.shape[0] // 2
    nu = next_t.shape[0]
    for i in range(s):
        tour[s + i] = i if i < nu else -1
    for i in range(s - 1, 0, -1):
        a, b = tour[2 * i], tour[2 * i + 1]
        tour[i] = a if _tour_val(next_t, a) <= _tour_val(next_t, b) else b


@kernel
def _tour_update(next_t, UB, u):
    """Unit ``u``'s time changed: replay the matches on its path to the root. O(log units)."""
    tour = UB[UB_TOUR]
    i = (tour.shape[0] // 2 + u) >> 1
    while i >= 1:
        a, b = tour[2 * i], tour[2 * i + 1]
        tour[i] = a if _tour_val(next_t, a) <= _tour_val(next_t, b) else b
        i >>= 1


@kernel
def units_min(next_t, UB, UF):
    """(earliest unit time, its unit) from the root of the tournament tree: the lowest index wins a tie;
    ``(NEVER, -1)`` if every unit is inactive. O(1)."""
    w = UB[UB_TOUR, 1]
    if w < 0 or next_t[w] >= NEVER:
        return NEVER, np.int64(-1)
    return next_t[w], w


@kernel
def units_redraw(t_from, t_end, P, src):
    """New lifetimes from ``t_from`` (clamped at the horizon) for every unit, or with kept ages only for the
    inactive ones and those due before ``t_end``; then the tournament tree. Returns ``STATUS_OK`` or
    ``STATUS_TRACE`` (the lifetime stream ran out)."""
    Q, next_t, UB, uscale, life = src.Q, src.next_t, src.UB, src.uscale, src.life
    keep = P[P_KEEP_AGES] != 0
    il = Q[Q_IL]
    status = STATUS_OK
    for u in range(next_t.shape[0]):
        if keep and next_t[u] != NEVER and next_t[u] >= t_end:
            continue
        if il >= life.shape[0]:
            status = STATUS_TRACE
            break
        next_t[u] = t_from + _lifetime_us(uscale[u] * life[il])
        il += 1
    Q[Q_IL] = il
    Q[Q_N_OFF] = 0
    tour_build(next_t, UB)
    return status


@kernel
def _heapsort(a, k):
    """Sort ``a[:k]`` in place, ascending (no allocation)."""
    for start in range(k // 2 - 1, -1, -1):
        _sift(a, start, k)
    for end in range(k - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        _sift(a, np.int64(0), end)  # int64, not a literal 0: one specialisation


@kernel
def _sift(a, i, k):
    while True:
        c = 2 * i + 1
        if c >= k:
            return
        if c + 1 < k and a[c + 1] > a[c]:
            c += 1
        if a[i] >= a[c]:
            return
        a[i], a[c] = a[c], a[i]
        i = c


@kernel
def units_redraw_kept(t_from, P, src):
    """The end of a restart under "keep" in O(k log units): new lifetimes from ``t_from`` for exactly the ``k``
    units that went inactive since the last redraw (fired, absorbed, or their group died; listed in ``UB_TMP``), in
    unit order -- the same draws as :func:`units_redraw`, without visiting the other units. Returns
    ``STATUS_OK`` or ``STATUS_TRACE``."""
    Q, next_t, UB, uscale, life = src.Q, src.next_t, src.UB, src.uscale, src.life
    k = Q[Q_N_OFF]
    lst = UB[UB_TMP]
    _heapsort(lst, k)
    il = Q[Q_IL]
    for i in range(k):
        if il >= life.shape[0]:
            Q[Q_IL] = il
            return STATUS_TRACE
        u = lst[i]
        next_t[u] = t_from + _lifetime_us(uscale[u] * life[il])
        il += 1
        _tour_update(next_t, UB, u)
    Q[Q_IL] = il
    Q[Q_N_OFF] = 0
    return STATUS_OK


@kernel
def _lifetime_us(x):
    """A lifetime of ``x`` microseconds as an integer: at least 1, clamped at the horizon (``nan`` too)."""
    return HORIZON_US if not x < HORIZON_F else max(np.int64(1), np.int64(np.rint(x)))


@kernel
def _race_rate(UF, Q):
    """The race's total hazard rate in the clock sigma: ``sum_c m_c rate_c`` over the classes (group units, then
    each level's domain units) in class order."""
    rate = Q[Q_M] * UF[UF_RATE]
    for c in range(1, N_CLASSES):
        rate += Q[Q_M + c] * UF[UF_RATE + c]
    return rate


@kernel
def _class_start(P, c):
    """The first unit of the race's class ``c``."""
    return np.int64(0) if c == 0 else P[P_CLASS_END + c - 1]


@kernel
def _class_of(P, u):
    """The race's class of unit ``u``."""
    c = 0
    while u >= P[P_CLASS_END + c]:
        c += 1
    return c


@kernel
def _race_schedule(Q, UF, life):
    """The race's next arrival from the clock value of the last one, ``UF[UF_SIGMA]``: ``sigma' = sigma + E /
    rate`` with ``E`` the next standard exponential of ``life``, at wall time ``t0 + rint(sigma'^(1/k))`` (at
    least 1 us after ``t0``, clamped at the horizon); ``NEVER`` with no active unit. Returns ``STATUS_OK`` or
    ``STATUS_TRACE``."""
    rate = _race_rate(UF, Q)
    if not rate > 0.0:
        Q[Q_T_NEXT] = NEVER
        return STATUS_OK
    il = Q[Q_IL]
    if il >= life.shape[0]:
        return STATUS_TRACE
    Q[Q_IL] = il + 1
    sig = UF[UF_SIGMA] + life[il] / rate
    UF[UF_SIGMA_NEXT] = sig
    Q[Q_T_NEXT] = Q[Q_T0] + _lifetime_us(sig ** UF[UF_INV_K])
    return STATUS_OK


@kernel
def race_renew(t_end, P, Q, UB, UF, life):
    """Every unit is new at ``t_end`` (a restart under "renew", or time 0): all active, the clock sigma at 0 from
    ``t0 = t_end``, the next arrival drawn. Returns ``STATUS_OK`` or ``STATUS_TRACE``."""
    _race_reset(t_end, P, Q, UF)
    return _race_schedule(Q, UF, life)


@kernel
def _race_reset(t_end, P, Q, UF):
    """Every unit active and new at ``t_end`` (no arrival drawn yet)."""
    for c in range(N_CLASSES):
        Q[Q_M + c] = P[P_CLASS_END + c] - _class_start(P, c)
    Q[Q_T0] = t_end
    UF[UF_SIGMA] = 0.0


@kernel
def _race_off(P, Q, UB, u):
    """Unit ``u`` leaves the active units of its class: it swaps places with the class's last active unit."""
    c = _class_of(P, u)
    slot = Q_M + c
    start = _class_start(P, c)
    p = UB[UB_POS, u]
    last = start + Q[slot] - 1
    if p > last:
        return
    v = UB[UB_PERM, last]
    UB[UB_PERM, p] = v
    UB[UB_POS, v] = p
    UB[UB_PERM, last] = u
    UB[UB_POS, u] = last
    Q[slot] -= 1


@kernel
def _race_pick(P, Q, UB, UF, victims):
    """The unit of the race's arrival that is due: the victim draw ``x = v 2^-32 rate`` walks the classes in
    order, ``x -= m_c rate_c`` until ``x < m_c rate_c`` (the last class with an active unit takes any rounding
    leftover), then picks the class's active unit of rank ``floor(x / rate_c)``. Returns ``(status, unit)``."""
    ia = Q[Q_IA]
    if ia >= victims.shape[0]:
        return STATUS_TRACE, np.int64(-1)
    Q[Q_IA] = ia + 1
    last = N_CLASSES - 1
    while last > 0 and Q[Q_M + last] == 0:
        last -= 1
    x = victims[ia] * _INV_2_32 * _race_rate(UF, Q)
    c = 0
    while c < last:
        w = Q[Q_M + c] * UF[UF_RATE + c]
        if x < w:
            break
        x -= w
        c += 1
    return STATUS_OK, UB[UB_PERM, _class_start(P, c) + min(np.int64(x / UF[UF_RATE + c]), Q[Q_M + c] - 1)]


@kernel
def unit_off(u, P, Q, next_t, UB):
    """Unit ``u`` is inactive until the next restart (its group died, or it fired)."""
    if P[P_UNIT_RACE] != 0:
        _race_off(P, Q, UB, u)
    elif next_t[u] != NEVER:
        next_t[u] = NEVER
        _tour_update(next_t, UB, u)
        if P[P_KEEP_AGES] != 0:  # "keep": the restart redraws exactly these (UB_TMP lists them)
            UB[UB_TMP, Q[Q_N_OFF]] = u
            Q[Q_N_OFF] += 1


@kernel
def units_next(P, Q, next_t, UB, UF):
    """Time of the next unit failure (``NEVER`` if none can come)."""
    if P[P_UNIT_RACE] != 0:
        return Q[Q_T_NEXT]
    return units_min(next_t, UB, UF)[0]


@kernel
def _units_due(P, Q, next_t, UB, UF, victims):
    """The unit of the next failure, now due. Returns ``(status, unit)``."""
    if P[P_UNIT_RACE] != 0:
        return _race_pick(P, Q, UB, UF, victims)
    return STATUS_OK, units_min(next_t, UB, UF)[1]


@kernel
def _units_advance(P, Q, UF, life):
    """After a failure and the units it made inactive: the race draws its next arrival (the others have theirs)."""
    if P[P_UNIT_RACE] == 0:
        return STATUS_OK
    UF[UF_SIGMA] = UF[UF_SIGMA_NEXT]
    return _race_schedule(Q, UF, life)


@kernel
def units_fire(P, src):
    """The next unit failure, now due: the unit kills its group, or its domain's live groups; they become pending
    and their own units inactive. Returns the number of groups killed, or -1 if the trace ran out."""
    Q, GB, next_t, UB, UF, victims, life = src.Q, src.GB, src.next_t, src.UB, src.UF, src.victims, src.life
    dptr, dgroups = src.dptr, src.dgroups
    status, u = _units_due(P, Q, next_t, UB, UF, victims)
    if status != STATUS_OK:
        return np.int64(-1)
    n_gu = P[P_N_GROUP_UNITS]
    killed = 0
    if u < n_gu:  # a group unit is active only while its group is live
        killed = kill_if_live(u, Q, GB)
    else:
        d = u - n_gu
        for j in range(dptr[d], dptr[d + 1]):
            g = dgroups[j]
            if kill_if_live(g, Q, GB):
                killed += 1
                if n_gu > 0:
                    unit_off(g, P, Q, next_t, UB)
    unit_off(u, P, Q, next_t, UB)
    Q[Q_N_UP] -= killed
    if _units_advance(P, Q, UF, life) != STATUS_OK:
        return np.int64(-1)
    return np.int64(killed)


@kernel
def units_absorb(P, src):
    """The next unit failure, now due, happens during a restart: the unit is inactive until the restart's end, its
    groups are unaffected. Returns ``STATUS_OK`` or ``STATUS_TRACE``."""
    Q, next_t, UB, UF, victims, life = src.Q, src.next_t, src.UB, src.UF, src.victims, src.life
    status, u = _units_due(P, Q, next_t, UB, UF, victims)
    if status != STATUS_OK:
        return status
    unit_off(u, P, Q, next_t, UB)
    return _units_advance(P, Q, UF, life)


@kernel
def units_redraw_after_stay(t_end, P, src):
    """The end of a restart under ``P_STAY_DEAD``, in unit order: a unit that fired before it (``PARKED``) gets a
    new lifetime from ``t_end``; one that fired during it, or whose group died during it (``NEVER``), stays
    inactive until the next restart; the others are redrawn ("renew") or keep their clocks ("keep"). Returns
    ``STATUS_OK`` or ``STATUS_TRACE``."""
    Q, next_t, UB, uscale, life = src.Q, src.next_t, src.UB, src.uscale, src.life
    keep = P[P_KEEP_AGES] != 0
    il = Q[Q_IL]
    status = STATUS_OK
    for u in range(next_t.shape[0]):
        if next_t[u] == NEVER or (keep and next_t[u] != PARKED):
            continue
        if il >= life.shape[0]:
            status = STATUS_TRACE
            break
        next_t[u] = t_end + _lifetime_us(uscale[u] * life[il])
        il += 1
    Q[Q_IL] = il
    tour_build(next_t, UB)
    Q[Q_N_OFF] = 0  # the units still inactive (they fired during the restart) are the next restart's to redraw
    if keep:
        for u in range(next_t.shape[0]):
            if next_t[u] == NEVER:
                UB[UB_TMP, Q[Q_N_OFF]] = u
                Q[Q_N_OFF] += 1
    return status


@kernel
def race_after_stay(t_end, P, src):
    """The end of a restart under ``P_STAY_DEAD`` for the race ("renew"): the units that fired during it, or whose
    group died during it, stay inactive until the next restart (they are the class's units in positions
    ``[m, m_from)``, ``m_from`` the count when it started, ``Q_M_FROM``: the race's inactive units are kept most
    recent first), and so do the units of the groups that died during it (a unit parked before it may belong to
    one); every other unit is new at ``t_end``. Returns ``STATUS_OK`` or ``STATUS_TRACE``."""
    Q, GB, UB, UF, life = src.Q, src.GB, src.UB, src.UF, src.life
    n_gu = P[P_N_GROUP_UNITS]
    n_off = 0
    for c in range(N_CLASSES):
        start = _class_start(P, c)
        for p in range(start + Q[Q_M + c], start + Q[Q_M_FROM + c]):
            UB[UB_TMP, n_off] = UB[UB_PERM, p]
            n_off += 1
    _race_reset(t_end, P, Q, UF)  # every unit active and new at t_end ...
    for i in range(n_off):  # ... but those, in the order they went off,
        _race_off(P, Q, UB, UB[UB_TMP, n_off - 1 - i])
    if n_gu > 0:  # and the units of the groups that died during the restart, in the order they died
        for i in range(Q[Q_N_PEND]):
            _race_off(P, Q, UB, GB[GB_PEND, i])
    return _race_schedule(Q, UF, life)
