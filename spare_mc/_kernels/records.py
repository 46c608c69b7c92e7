"""Named records the kernels take instead of long runs of positional arguments (private).

Each is a :func:`collections.namedtuple`: numba types it as a heterogeneous tuple, reads its fields by name at no
cost, and caches the kernels that take it (a jitclass cannot be cached). The host builds one with the arrays it
already has; the kernel unpacks it at its top.
"""

from __future__ import annotations

from collections import namedtuple

#: A layout as the kernels walk it: ``n`` groups; ``group_types[group_ptr[g]:group_ptr[g + 1]]`` the types group
#: ``g`` holds (CSR); ``holders_per_type[t]`` the number of groups holding type ``t``.
Holding = namedtuple("Holding", "n group_ptr group_types holders_per_type")

#: Per-trial outputs of the wipe-out kernels with a clock: the 1-based wipe-out event ``T``, the dead groups just
#: before it, and its time.
TrialsOut = namedtuple("TrialsOut", "T dead time")

#: One trial's events as the kernel recorded them: ``time[e]`` and ``killed[end[e - 1]:end[e]]`` (``end[-1] = 0``).
EventRecord = namedtuple("EventRecord", "time end killed")

#: Per complete epoch of a log replay: the 1-based wipe-out index within the epoch, the dead groups before it, the
#: log row of the wipe-out, and the epoch's first job event (``start`` has one more entry: the tail's first).
EpochsOut = namedtuple("EpochsOut", "T dead end start")

#: The job events of a log replay (events that kill a live group): ``groups[ptr[j]:ptr[j + 1]]`` the groups event
#: ``j`` killed, ``event[j]`` its log row.
JobEvents = namedtuple("JobEvents", "ptr groups event")

#: The repairs of a log replay (:func:`spare_mc._kernels.logs.replay_epochs`): ``times[e]`` log event ``e``'s time
#: and ``back[e]`` the end of its repair (integer microseconds; :data:`spare_mc._kernels.logs.NO_REPAIR` when the log
#: gives none), both empty to replay without repairs; ``heap_t``, ``heap_g`` the kernel's workspace (a binary heap of
#: pending ends of repair and their groups), as long as the events' touched groups.
LogRepairs = namedtuple("LogRepairs", "times back heap_t heap_g")
