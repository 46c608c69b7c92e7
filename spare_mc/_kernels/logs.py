"""Numba kernel of failure-log replay (private; see :mod:`spare_mc.logs.failure_logs`).

A log is one long trajectory. :func:`replay_epochs` walks its events in order from a fully live system, kills the
live groups each event touches, and at a wipe-out revives every group (a global restart) so that the next event
starts a new epoch. The slow twin is ``_replay_reference`` in ``tests/test_failure_logs.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .cache import drop_if_dependencies_changed

# the records' definitions are part of the compiled signatures
drop_if_dependencies_changed(__file__, ("records.py",))


@njit(cache=True)
def replay_epochs(ev_ptr, ev_groups, holding, epochs_out, jobs_out):
    """Replay a log's events as successive epochs; returns ``(epochs, job_events)``.

    Inputs: ``ev_groups[ev_ptr[e]:ev_ptr[e + 1]]`` are the groups log event ``e`` touches; ``holding`` (a
    :data:`~spare_mc._kernels.records.Holding`) the layout as the CSR map group -> types and the holder count of
    every type.

    Outputs, per complete epoch ``i`` (one that ends in a wipe-out), in ``epochs_out`` (an
    :data:`~spare_mc._kernels.records.EpochsOut`): ``T[i]`` the 1-based index, within the epoch, of the job event
    causing the wipe-out; ``dead[i]`` the dead groups just before it; ``end[i]`` the log event (0-based row) of the
    wipe-out; ``start[i]`` the first job event of epoch ``i`` (and ``start[epochs]`` the first of the tail). The
    **job events** (log events that kill at least one live group), over all epochs and the incomplete tail, in
    ``jobs_out`` (a :data:`~spare_mc._kernels.records.JobEvents`): ``groups[ptr[j]:ptr[j + 1]]`` the groups job
    event ``j`` killed, ``event[j]`` its log row. Arrays are sized by the caller: ``epochs_out``'s one more than the
    log's events, ``jobs_out``'s like ``ev_*``.
    """
    n, group_ptr, group_types, holders_per_type = holding
    out_T, out_dead, out_end, epoch_job_start = epochs_out
    job_ptr, job_groups, job_event = jobs_out
    dead = np.zeros(n, np.bool_)
    live_count = holders_per_type.copy()
    killed = np.empty(n, np.int64)   # dead groups of the current epoch
    n_dead = 0
    epoch = 0
    j = 0
    t_in_epoch = 0
    job_ptr[0] = 0
    epoch_job_start[0] = 0
    for e in range(ev_ptr.shape[0] - 1):
        before = n_dead
        wiped = False
        for p in range(ev_ptr[e], ev_ptr[e + 1]):
            g = ev_groups[p]
            if dead[g]:
                continue
            dead[g] = True
            killed[n_dead] = g
            n_dead += 1
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
            for q in range(n_dead):  # global restart: every group is live again
                g = killed[q]
                dead[g] = False
                for s in range(group_ptr[g], group_ptr[g + 1]):
                    live_count[group_types[s]] += 1
            n_dead = 0
            t_in_epoch = 0
            epoch += 1
            epoch_job_start[epoch] = j
    return epoch, j
