"""Replaying a failure log in the wipe-out Monte Carlo and ReCtlr: :func:`replay_log`, :class:`LogReplay`.

The log is one long trajectory, cut into epochs. Each epoch starts from a fully live system; the event causing a
wipe-out ends it (a global restart revives every group) and the next event starts the next epoch. When the log has
repair times, a dead group comes back when its repair is over, as the timeline's ``repair="log"`` has it. Each
complete epoch is one sample of ``T``, of the masked failures and of the ReCtlr overhead; events after the last
wipe-out are an incomplete (censored) epoch and are reported, not used. (The job timeline on a log's events:
:mod:`spare_mc.logs.replay_ttt`.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._kernels.logs import NO_REPAIR
from .._lib.validation import UsageTypeError, UsageValueError, as_choice, as_int
from ..mc.reorder import ESTIMATORS, overhead_on_streams
from ..mc.survivability import WipeoutResult
from ..model.layouts import Layout, layout_note
from .epochs import as_replay_layout, replay_epochs
from .failure_log import FailureLog

__all__ = ["REPAIRS", "LogReplay", "replay_log"]

#: The ``repairs`` choices of :func:`replay_log`: the log's repair times when it has them (``"auto"``), always
#: (``"log"``: a log without them is an error) or never (``"ignore"``: dead until the next wipe-out).
REPAIRS = ("auto", "log", "ignore")


@dataclass(frozen=True, eq=False)
class LogReplay:
    """A log replayed as successive epochs (each from a fully live system to its wipe-out).

    Attributes
    ----------
    wipeout : WipeoutResult
        One "replication" per complete epoch: ``T`` (1-based job event of the wipe-out within the epoch),
        ``dead_before`` (masked failures) and ``time_s`` (wipe-out time minus the epoch start, i.e. the previous
        wipe-out's time, or 0 for the first epoch).
    overhead : OverheadResult or None
        ReCtlr on every complete epoch (``overhead=True``; a :class:`Layout` only).
    epoch_start_s, epoch_end_s : ndarray
        Start (previous wipe-out time, 0 first) and wipe-out time of every complete epoch, in log time.
    wipe_rows : ndarray of int64
        0-based log row of each epoch's wipe-out event.
    tail_events : int
        Job events after the last wipe-out (an incomplete epoch, censored at the window end; not used).
    tail_s : float
        Its length: ``duration_s`` minus the last wipe-out time.
    ignored_rows : int
        Log rows that killed no live group (not events of the job).
    repairs : {"log", "none", "ignored"}
        Whether dead groups came back after the log's repair times (``"log"``), or stayed dead until the next
        wipe-out because the log has none (``"none"``) or they were ignored (``"ignored"``).
    repaired : int
        Groups brought back by a repair (over the whole log, the tail included).
    """

    wipeout: object
    overhead: object
    epoch_start_s: np.ndarray
    epoch_end_s: np.ndarray
    wipe_rows: np.ndarray
    tail_events: int
    tail_s: float
    ignored_rows: int
    source: str = ""
    repairs: str = "none"
    repaired: int = 0

    @property
    def epochs(self) -> int:
        """Complete epochs (wipe-outs in the log)."""
        return int(self.epoch_end_s.size)

    def estimate(self, name: str, level: float = 0.95):
        """``"T"``, ``"masked"``, ``"time_s"`` from :attr:`wipeout`, any other name from :attr:`overhead`
        (:meth:`spare_mc.OverheadResult.estimate`). Needs at least 2 complete epochs."""

        if name not in ("T", "masked", "time_s") and name not in ESTIMATORS:
            raise UsageValueError(f"`name` must be one of ['T', 'masked', 'time_s'] or, with overhead=True, of "
                                  f"{sorted(ESTIMATORS)}, got {name!r}")
        if self.epochs < 2:
            raise UsageValueError(f"an estimate needs at least 2 complete epochs (wipe-outs), the log "
                                  f"{self.source!r} has {self.epochs}")
        if name in ("T", "masked", "time_s"):
            return self.wipeout.estimate(name, level)
        if self.overhead is None:
            raise UsageValueError(f"`name`={name!r} is a ReCtlr quantity: replay with overhead=True")
        return self.overhead.estimate(name, level)

    def summary(self) -> dict:
        """Epoch counts and 95% intervals of the estimates (what ``spare-mc log replay`` prints)."""
        d = {"source": self.source, "layout": self.wipeout.layout, "n_groups": self.wipeout.n_groups,
             "r": self.wipeout.r, "epochs": self.epochs, "tail_events": self.tail_events, "tail_s": self.tail_s,
             "ignored_rows": self.ignored_rows, "repairs": self.repairs, "repaired_groups": self.repaired}
        if layout_note(self.wipeout.layout, self.wipeout.r):
            d["layout_note"] = layout_note(self.wipeout.layout, self.wipeout.r)
        names = ["T", "masked", "time_s"]
        if self.overhead is not None:
            names += ["c_mean", "s_star_mean", "rho_mean", "hk_fixed_rate", "moves_mean", "patch_mean"]
        for name in names:
            if self.epochs >= 2:
                est = self.estimate(name)
                d[name], d[f"{name}_se"], d[f"{name}_ci95"] = est.mean, est.se, list(est.ci)
            else:
                d[name], d[f"{name}_se"], d[f"{name}_ci95"] = math.nan, math.nan, [math.nan, math.nan]
        return d


def _replay_iv(log, layout, r, overhead, from_scratch, repairs):
    """The checked layout and the repairs the replay uses (``"log"``, ``"none"`` or ``"ignored"``)."""
    if not isinstance(log, FailureLog):
        raise UsageTypeError(f"`log` must be a FailureLog, got {type(log).__name__}")
    layout = as_replay_layout(layout, None, r, log.topology)
    for name, value in (("overhead", overhead), ("from_scratch", from_scratch)):
        if not isinstance(value, bool):
            raise UsageTypeError(f"`{name}` must be a bool, got {value!r}")
    repairs = as_choice(repairs, "repairs", REPAIRS)
    if repairs == "log" and log.repair_s is None:
        raise UsageValueError("`repairs`='log' needs a log with a `repair_s` column (each event's repair time); this "
                              "log has none")
    used = "none" if log.repair_s is None else "ignored" if repairs == "ignore" else "log"
    if overhead and not isinstance(layout, Layout):
        raise UsageValueError("`overhead`=True runs ReCtlr, which needs an N x r holder table (Rep with replica sets "
                              "of unequal size does not reorder)")
    if overhead and used == "log":
        raise UsageValueError("`overhead`=True runs ReCtlr until each wipe-out, which does not take repaired groups "
                              "back; this log has repair times: pass repairs='ignore' to run it on epochs without "
                              "repairs")
    return layout, used


def replay_log(log: FailureLog, layout, *, r: int | None = None, overhead: bool = False, log_reps: int = 0,
               from_scratch: bool = False, repairs: str = "auto") -> LogReplay:
    """Replay a failure log in the wipe-out Monte Carlo (and ReCtlr), one complete epoch per sample.

    Parameters
    ----------
    log : FailureLog
    layout : Layout, ReplicaSets or {"cyclic", "sidon", "block"}
        With a name, ``r`` is required and ``N`` is the topology's.
    r : int, optional
    overhead : bool
        Also run ReCtlr on every epoch (:class:`spare_mc.OverheadResult`; a :class:`Layout` only).
    log_reps, from_scratch :
        As in :func:`spare_mc.overhead_mc` (``log_reps`` epochs' ReCtlr calls are kept row by row).
    repairs : {"auto", "log", "ignore"}
        Whether a dead group comes back after the log's repair time: ``"auto"`` (default) when the log has a
        ``repair_s`` column, ``"log"`` always (the column is required), ``"ignore"`` never (dead until the next
        wipe-out, as a log without repair times). ReCtlr (``overhead=True``) needs epochs without repairs.

    Returns
    -------
    LogReplay

    Notes
    -----
    Epoch ``i`` starts from a fully live system right after the ``i``-th wipe-out (at the log start for ``i = 0``);
    log rows that kill no live group are skipped; the event whose kills wipe a shard type out ends the epoch. This
    is the event stream of :func:`spare_mc.overhead_mc` per replication, so a log written by
    :func:`sampled_failure_log` replays to exactly the sampler's per-replication results.

    With repairs (the rule of :func:`spare_mc.replay_log_ttt` with ``repair="log"``, without its detection): a group
    killed by an event is back at ``time_s + repair_s`` of that event; an event that touches it while it is dead can
    only postpone that, to its own ``time_s + repair_s``; an event without a repair time leaves the groups it touches
    dead until the next wipe-out. A group is live again for the events strictly after its end of repair (an event at
    that very time still finds it dead). Times are compared on the timeline's integer-microsecond clock. ``T`` then
    counts the job events of the epoch (a repaired group can be killed again), and ``dead_before`` the groups dead
    just before the wipe-out, which can be fewer than ``T - 1``.

    Examples
    --------
    >>> from spare_mc import Topology, read_failure_log
    >>> from spare_mc.logs.synthetic import example_log_path
    >>> topo = Topology(256, 32, nodes_per_rack=4, racks_per_power=2)
    >>> rep = replay_log(read_failure_log(example_log_path(), topo), "cyclic", r=2)
    >>> rep.epochs > 10
    True
    """

    layout, used = _replay_iv(log, layout, r, overhead, from_scratch, repairs)
    if used == "log":
        ev = log.timeline_events()  # integer microseconds, as the timeline's repair="log"
        ptr, groups = ev.ptr, ev.groups
        back = np.where(ev.repair_us >= 0, ev.times_us + ev.repair_us, NO_REPAIR)
        out = replay_epochs(ptr, groups, layout, ev.times_us, back)
    else:
        ptr, groups = log.touched_groups()
        out = replay_epochs(ptr, groups, layout)
    epochs = out["epochs"]
    ends = log.time_s[out["end"]]
    starts = np.concatenate([[0.0], ends])[:-1]  # epoch i starts at wipe-out i - 1 (the log start for i = 0)
    failures = {"model": "log", "source": log.source, "duration_s": log.duration_s}
    wipe = WipeoutResult(out["T"].copy(), out["dead"].copy(), ends - starts, layout.kind, layout.n_groups, layout.r,
                         False, failures)
    ov = None
    if overhead:
        log_reps = as_int(log_reps, "log_reps", min_value=0, max_value=epochs)
        jp, jg, st = out["job_ptr"], out["job_groups"], out["start"]
        streams = [(jp[a:b + 1] - jp[a], jg[jp[a]:jp[b]]) for a, b in zip(st[:epochs], st[1:epochs + 1])]
        ov = overhead_on_streams(layout, streams, log_reps=log_reps, from_scratch=from_scratch, failures=failures)
    last = float(ends[-1]) if epochs else 0.0
    tail = int(out["job_ptr"].size - 1 - out["start"][epochs])
    ignored = len(log) - (out["job_ptr"].size - 1)
    return LogReplay(wipe, ov, starts, ends, out["end"].copy(), tail, log.duration_s - last, int(ignored),
                     log.source, used, int(out["repaired"]))
