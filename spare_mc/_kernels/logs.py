"""Numba kernel of failure-log replay (private; its driver is :mod:`spare_mc.logs.epochs`).

A log is one long trajectory. :func:`replay_epochs` walks its events in order from a fully live system, kills the
live groups each event touches, brings a dead group back when the log's repair of it is over (with repairs), and at
a wipe-out revives every group (a global restart) so that the next event starts a new epoch. The slow twin is
:func:`spare_mc.testing.log_replay.replay_reference`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .cache import drop_if_dependencies_changed

# the records' definitions are part of the compiled signatures
drop_if_dependencies_changed(__file__, ("records.py",))

#: The end of repair of an event without a repair time: never (the groups it kills stay dead until the next
#: global restart); larger than every event time of the integer-microsecond clock (< 2^59).
NO_REPAIR = np.int64(1) << 62


@njit(cache=True)
def _heap_push(heap_t, heap_g, h, t, g):
    """Push ``(t, g)`` on the binary min-heap (by ``t``) of size ``h``; returns the new size."""
    i = h
    while i > 0:
        parent = (i - 1) // 2
        if heap_t[parent] <= t:
            break
        heap_t[i] = heap_t[parent]
        heap_g[i] = heap_g[parent]
        i = parent
    heap_t[i] = t
    heap_g[i] = g
    return h + 1


@njit(cache=True)
def _heap_pop(heap_t, heap_g, h):
    """Remove the top of the heap of size ``h``; returns the new size."""
    h -= 1
    t, g = heap_t[h], heap_g[h]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= h:
            break
        if c + 1 < h and heap_t[c + 1] < heap_t[c]:
            c += 1
        if heap_t[c] >= t:
            break
        heap_t[i] = heap_t[c]
        heap_g[i] = heap_g[c]
        i = c
    if h > 0:
        heap_t[i] = t
        heap_g[i] = g
    return h


@njit(cache=True)
def replay_epochs(ev_ptr, ev_groups, holding, epochs_out, jobs_out, repairs):
    """Replay a log's events as successive epochs; returns ``(epochs, job_events, repaired)``.

    Inputs: ``ev_groups[ev_ptr[e]:ev_ptr[e + 1]]`` are the groups log event ``e`` touches; ``holding`` (a
    :data:`~spare_mc._kernels.records.Holding`) the layout as the CSR map group -> types and the holder count of
    every type; ``repairs`` (a :data:`~spare_mc._kernels.records.LogRepairs`) the events' times and ends of repair,
    empty to replay without repairs.

    With repairs, a group killed by event ``e`` is back at ``back[e]`` (:data:`NO_REPAIR`: never, until the next
    global restart); an event that touches it while it is dead can only postpone that, to its own ``back``. A group
    is live again for the events strictly after its end of repair (an event at that very time still finds it dead,
    and postpones it): before each event every dead group whose end of repair is earlier than the event's time
    comes back, and its types count it again. ``repaired`` counts these returns.

    Outputs, per complete epoch ``i`` (one that ends in a wipe-out), in ``epochs_out`` (an
    :data:`~spare_mc._kernels.records.EpochsOut`): ``T[i]`` the 1-based index, within the epoch, of the job event
    causing the wipe-out; ``dead[i]`` the dead groups just before it; ``end[i]`` the log event (0-based row) of the
    wipe-out; ``start[i]`` the first job event of epoch ``i`` (and ``start[epochs]`` the first of the tail). The
    **job events** (log events that kill at least one live group), over all epochs and the incomplete tail, in
    ``jobs_out`` (a :data:`~spare_mc._kernels.records.JobEvents`): ``groups[ptr[j]:ptr[j + 1]]`` the groups job
    event ``j`` killed, ``event[j]`` its log row. Arrays are sized by the caller: ``epochs_out``'s one more than the
    log's events, ``jobs_out``'s and the heap's like ``ev_*``.
    """
    n, group_ptr, group_types, holders_per_type = holding
    out_T, out_dead, out_end, epoch_job_start = epochs_out
    job_ptr, job_groups, job_event = jobs_out
    times, back_of_event, heap_t, heap_g = repairs
    with_repair = back_of_event.shape[0] > 0
    dead = np.zeros(n, np.bool_)
    live_count = holders_per_type.copy()
    killed = np.empty(n, np.int64)   # dead groups of the current epoch (killed[pos[g]] = g)
    pos = np.empty(n, np.int64)
    back = np.empty(n, np.int64)     # end of repair of a dead group
    n_dead = 0
    h = 0                            # pending ends of repair (stale entries are skipped when popped)
    repaired = 0
    epoch = 0
    j = 0
    t_in_epoch = 0
    job_ptr[0] = 0
    epoch_job_start[0] = 0
    for e in range(ev_ptr.shape[0] - 1):
        if with_repair:
            while h > 0 and heap_t[0] < times[e]:
                bt, g = heap_t[0], heap_g[0]
                h = _heap_pop(heap_t, heap_g, h)
                if not dead[g] or back[g] != bt:
                    continue  # back already, or postponed since
                dead[g] = False
                last = killed[n_dead - 1]
                killed[pos[g]] = last
                pos[last] = pos[g]
                n_dead -= 1
                for q in range(group_ptr[g], group_ptr[g + 1]):
                    live_count[group_types[q]] += 1
                repaired += 1
        before = n_dead
        wiped = False
        for p in range(ev_ptr[e], ev_ptr[e + 1]):
            g = ev_groups[p]
            if dead[g]:
                if with_repair and back_of_event[e] > back[g]:  # postponed (NO_REPAIR: until the restart)
                    back[g] = back_of_event[e]
                    if back[g] < NO_REPAIR:
                        h = _heap_push(heap_t, heap_g, h, back[g], g)
                continue
            dead[g] = True
            pos[g] = n_dead
            killed[n_dead] = g
            n_dead += 1
            if with_repair:
                back[g] = back_of_event[e]
                if back[g] < NO_REPAIR:
                    h = _heap_push(heap_t, heap_g, h, back[g], g)
            job_groups[job_ptr[j] + n_dead - before - 1] = g
            for q in range(group_ptr[g], group_ptr[g + 1]):
                t = group_types[q]
                live_count[t] -= 1
                if live_count[t] == 0:
                    wiped = True
        if n_dead == before:
            continue  # kills no live group: not an event of the job
        job_ptr[j + 1] = job_ptr[j] + n_dead - before
        job_event[j] = e
        j += 1
        t_in_epoch += 1
        if wiped:
            out_T[epoch] = t_in_epoch
            out_dead[epoch] = before
            out_end[epoch] = e
            for q in range(n_dead):  # global restart: every group is live again, no repair is pending
                g = killed[q]
                dead[g] = False
                for s in range(group_ptr[g], group_ptr[g + 1]):
                    live_count[group_types[s]] += 1
            n_dead = 0
            h = 0
            t_in_epoch = 0
            epoch += 1
            epoch_job_start[epoch] = j
    return epoch, j, repaired
