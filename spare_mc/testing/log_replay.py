"""Slow twin of the log-replay kernel (:func:`spare_mc._kernels.logs.replay_epochs`, driven by
:func:`spare_mc.replay_log`): Python sets, one event at a time, every dead group checked for its end of repair
before every event."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["replay_reference"]


def replay_reference(log, layout, repairs: bool = False) -> dict:
    """Replay ``log`` on ``layout`` as successive epochs, the obviously correct way.

    Parameters
    ----------
    log : FailureLog
    layout : Layout or ReplicaSets
        A type is a row of the holder table (for replica sets: a set, held by its members).
    repairs : bool
        Use the log's repair times: a group killed by an event is back at the event's ``time_s + repair_s`` (on the
        integer-microsecond clock: ``round(time_s * 1e6) + round(repair_s * 1e6)``); an event that touches it while
        dead postpones that to its own end of repair, or forever (until the wipe-out) without a repair time; the
        group is live for the events strictly after its end of repair.

    Returns
    -------
    dict
        ``epochs``: per complete epoch ``(T, dead_before, wipe-out row)``; ``job_events``: per job event ``(row,
        sorted groups killed)``; ``repaired``: the groups brought back by a repair.
    """
    ptr, groups = log.touched_groups()
    if hasattr(layout, "holders"):
        holders = [set(row) for row in layout.holders.tolist()]
    else:  # replica sets: a "type" is a set, held by its members
        holders = [set(np.flatnonzero(layout.set_of_group == s).tolist()) for s in range(layout.n_sets)]
    times = [round(t * 1e6) for t in log.time_s.tolist()]
    ends = [None] * len(log)  # None: no repair (dead until the wipe-out)
    if repairs:
        for e, x in enumerate(log.repair_s.tolist()):
            ends[e] = None if math.isnan(x) else times[e] + round(x * 1e6)
    forever = float("inf")
    back = {}  # dead group -> end of its repair
    T, epochs, jobs, repaired = 0, [], [], 0
    for e in range(len(log)):
        for g in [g for g, b in back.items() if b < times[e]]:  # repairs over before this event
            del back[g]
            repaired += 1
        end = forever if ends[e] is None else ends[e]
        killed = []
        for g in (int(x) for x in groups[ptr[e]:ptr[e + 1]]):
            if g in back:
                back[g] = max(back[g], end)  # a later event can only postpone the return
            else:
                back[g] = end
                killed.append(g)
        if not killed:
            continue
        T += 1
        jobs.append((e, sorted(killed)))
        dead = set(back)
        if any(h <= dead for h in holders):
            epochs.append((T, len(dead) - len(killed), e))
            back, T = {}, 0
    return {"epochs": epochs, "job_events": jobs, "repaired": repaired}
