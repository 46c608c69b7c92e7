"""The replay kernel's driver: a stream of events cut into epochs at wipe-outs, and the layouts a replay takes.

Every epoch starts from a fully live system; the event whose kills wipe a shard type out ends it, and the next
event that kills a live group starts the next one; with repairs, a dead group comes back when its repair is over.
The kernel (:mod:`spare_mc._kernels.logs`) also records the job events (the live groups each event kills). Used by
:mod:`spare_mc.logs.failure_log` (the job events of one fresh system), :mod:`spare_mc.logs.replay` and
:mod:`spare_mc.logs.synthetic` (a sampled stream cut at its wipe-out).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernels import logs as _lk
from .._kernels.records import EpochsOut, Holding, JobEvents, LogRepairs
from .._lib.validation import UsageTypeError, UsageValueError, as_choice, as_int
from ..model.kinds import LAYOUT_KINDS, make_layout
from ..model.layouts import Layout, ReplicaSets

__all__ = ["NoTypes", "as_replay_layout", "replay_epochs"]


def as_replay_layout(layout, n_groups, r, topology):
    """The layout a replay on ``topology`` runs: a :class:`Layout` or :class:`ReplicaSets` as given, or one made from
    its name with ``r`` (``"random"`` is refused: a log is one trajectory); its ``N`` must be the topology's."""
    if isinstance(layout, str):
        as_choice(layout, "layout", LAYOUT_KINDS)
        if r is None:
            raise UsageValueError(f"`r` is required when `layout` is a name ({layout!r})")
        if layout == "random":
            raise UsageValueError("`layout`='random' by name means a fresh layout per replication; a log is one "
                                  "trajectory: pass one random_holders(...) Layout instead")
        layout = make_layout(layout, topology.n_groups if n_groups is None else n_groups, r, rng=0)
    elif not isinstance(layout, (Layout, ReplicaSets)):
        raise UsageTypeError(f"`layout` must be a Layout, ReplicaSets or one of {list(LAYOUT_KINDS)}, got "
                             f"{type(layout).__name__}")
    elif r is not None and as_int(r, "r", min_value=1) != layout.r:
        raise UsageValueError(f"`r` = {r} disagrees with the given layout's r = {layout.r}: `r` is for a layout "
                              f"given by name; leave it out with a {type(layout).__name__}")
    if layout.n_groups != topology.n_groups:
        raise UsageValueError(f"the layout has N={layout.n_groups} groups but the log's topology has "
                              f"N={topology.n_groups}")
    return layout


@dataclass(frozen=True)
class NoTypes:
    """A layout in which no group holds any type (never wiped out): the replay kernel then only filters kills."""

    n_groups: int

    @property
    def group_ptr(self):
        return np.zeros(self.n_groups + 1, dtype=np.int64)

    @property
    def group_types(self):
        return np.zeros(0, dtype=np.int64)


def _holders_per_type(layout):
    if isinstance(layout, NoTypes):
        return np.zeros(0, dtype=np.int64)
    if isinstance(layout, ReplicaSets):
        return layout.sizes.astype(np.int64)
    return np.full(layout.n_groups, layout.r, dtype=np.int64)


def replay_epochs(ev_ptr, ev_groups, layout, times_us=None, back_us=None):
    """Run the replay kernel; returns a dict of its outputs trimmed to size (and ``repaired``, the groups brought
    back by a repair). ``times_us`` and ``back_us`` (int64 microseconds per event; ``back_us`` the end of the
    event's repair, :data:`spare_mc._kernels.logs.NO_REPAIR` for none): replay with repairs."""
    n_ev = ev_ptr.size - 1
    if back_us is None:
        repairs = LogRepairs(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                             np.zeros(0, np.int64))
    else:
        size = max(ev_groups.size, 1)
        repairs = LogRepairs(np.ascontiguousarray(times_us, np.int64), np.ascontiguousarray(back_us, np.int64),
                             np.zeros(size, np.int64), np.zeros(size, np.int64))
    out_T = np.zeros(n_ev + 1, np.int64)
    out_dead = np.zeros(n_ev + 1, np.int64)
    out_end = np.zeros(n_ev + 1, np.int64)
    job_ptr = np.zeros(n_ev + 1, np.int64)
    job_groups = np.zeros(max(ev_groups.size, 1), np.int64)
    job_event = np.zeros(max(n_ev, 1), np.int64)
    start = np.zeros(n_ev + 2, np.int64)
    epochs, jobs, repaired = _lk.replay_epochs(ev_ptr, ev_groups,
                                               Holding(layout.n_groups, layout.group_ptr, layout.group_types,
                                                       _holders_per_type(layout)),
                                               EpochsOut(out_T, out_dead, out_end, start),
                                               JobEvents(job_ptr, job_groups, job_event), repairs)
    return {"epochs": epochs, "repaired": repaired, "T": out_T[:epochs], "dead": out_dead[:epochs],
            "end": out_end[:epochs],
            "job_ptr": job_ptr[:jobs + 1], "job_groups": job_groups[:job_ptr[jobs]], "job_event": job_event[:jobs],
            "start": start[:epochs + 1]}
