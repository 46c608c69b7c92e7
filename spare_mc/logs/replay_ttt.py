"""A failure log's own events through the timeline: time to train of jobs started at chosen log times.

Model-free (no fitted failure model): the events the log recorded are the failures, the rest of the job follows
:class:`spare_mc.TimelineConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernels import timeline as _tk
from .._lib.seeding import root_seed_sequence, root_text, trace_seed_sequence
from .._lib.validation import UsageTypeError, UsageValueError
from ..ttt.config import US_PER_S, TimelineConfig
from ..ttt.results import TTTResult
from ..ttt.run import run_log_job
from .failure_log import FailureLog

__all__ = ["replay_log_ttt", "LogTTTResult"]


@dataclass(frozen=True, eq=False)
class LogTTTResult:
    """Jobs replayed on a failure log (:func:`replay_log_ttt`).

    Attributes
    ----------
    result : TTTResult
        One run per start time, in the order of ``starts_s`` (estimates and CIs as for sampled jobs: the runs of
        one log are not independent when their windows overlap, so read the CI as a spread, not as sampling
        error).
    starts_s : ndarray
        The log time at which each job starts.
    within_window : ndarray of bool
        Whether the job ended (or was capped) within the log's observation window; a job that runs past its end sees
        no failures after it.
    """

    result: TTTResult
    starts_s: np.ndarray
    within_window: np.ndarray


def replay_log_ttt(cfg: TimelineConfig, log, *, starts_s=None, rng=None) -> LogTTTResult:
    """Time to train with the failures of a log (:class:`spare_mc.logs.failure_log.FailureLog`) instead of a sampler.

    A job started at log time ``s`` sees every log event at ``time_s >= s``, at job time ``time_s - s``: the
    event kills the groups it touches that are live (a GPU its group; a node, rack, ... every group with a GPU in
    it, through the log's topology), and during a global restart it is absorbed (or starts the restart again, or
    kills groups that stay dead, under ``restart_failures``). Dead groups come back at the next global restart, or
    with ``cfg.repair`` (Rep and SPARe) after their repair: ``"log"`` uses the log's own repair times (the group is
    ready at the later of its detection and ``time_s + repair_s`` of the event that killed it, postponed by any
    later event that touches it while dead; an event without ``repair_s`` leaves it dead until the next restart);
    ``"fixed"`` and ``"lognormal"`` draw them as for the sampled process (repair stream: child 3 of job ``i``'s
    seed). The config's failure process is not used: ``cfg`` must have no unit-clock model and a periodic
    checkpoint policy (the dynamic period is defined on the sampled process). Its ``mtbf_s`` still sets the default
    checkpoint period (give ``ckpt_period_s``, or the ``mtbf_s`` of a fit of the log,
    :func:`spare_mc.logs.fit.fit_failure_log`).

    Parameters
    ----------
    cfg : TimelineConfig
    log : FailureLog
        On a topology of ``cfg.n_groups`` groups.
    starts_s : sequence of float, optional
        Job start times in the log (default ``[0]``); each must lie in ``[0, duration_s)``.
    rng : seed
        Jitter of each job (job ``i`` uses the stream of replication ``i``).

    Returns
    -------
    LogTTTResult
    """
    if not isinstance(cfg, TimelineConfig):
        raise UsageTypeError(f"`cfg` must be a TimelineConfig, got {type(cfg).__name__}")
    if not isinstance(log, FailureLog):
        raise UsageTypeError(f"`log` must be a FailureLog (spare_mc.read_failure_log), got {type(log).__name__}")
    if cfg.failures is not None:
        raise UsageValueError("`cfg.failures` must be None to replay a log: the log's events are the failures")
    if cfg.ckpt_policy != "periodic":
        raise UsageValueError("replaying a log needs ckpt_policy='periodic' (the dynamic period is defined on the "
                              f"sampled process), got ckpt_policy={cfg.ckpt_policy!r}")
    if cfg.repair == "log" and log.repair_s is None:
        raise UsageValueError("repair='log' needs a log with a `repair_s` column (each event's repair time); this "
                              "log has none: use repair='fixed' or 'lognormal', or add the column")
    ev = log.timeline_events()
    if ev.n_groups != cfg.n_groups:
        raise UsageValueError(f"the log's topology has N={ev.n_groups} groups, the config N={cfg.n_groups}")
    raw = np.atleast_1d(np.asarray([0.0] if starts_s is None else starts_s))
    if raw.dtype.kind not in "iuf":  # not bools (True would be 1 s), strings or objects
        raise UsageTypeError(f"`starts_s` must be a sequence of real numbers (start times in s), got dtype "
                             f"{raw.dtype}")
    starts = raw.astype(float)
    if starts.ndim != 1 or starts.size == 0:
        raise UsageValueError("`starts_s` must be a non-empty sequence of start times (s)")
    duration_s = ev.duration_us / US_PER_S
    bad = np.nonzero(~np.isfinite(starts) | (starts < 0) | (starts >= duration_s))[0]
    if bad.size:
        raise UsageValueError(f"`starts_s` must lie in [0, duration_s) = [0, {duration_s:g}) s, got "
                              f"starts_s[{bad[0]}] = {float(starts[bad[0]])!r}")
    root = root_seed_sequence(rng)
    runs, within = [], []
    for i, start in enumerate(starts):
        s_us = round(start * US_PER_S)
        first = int(np.searchsorted(ev.times_us, s_us, side="left"))
        times = ev.times_us[first:] - s_us
        ptr = ev.ptr[first:] - ev.ptr[first]
        groups = ev.groups[ev.ptr[first]:]
        run = run_log_job(cfg, trace_seed_sequence(root, cfg.n_groups, i), (times, ptr, groups, ev.repair_us[first:]))
        runs.append(run)
        within.append(s_us + run.raw_us[_tk.R_TTT] <= ev.duration_us)
    return LogTTTResult(TTTResult(cfg, tuple(runs), root_text(root), 0), starts, np.array(within, dtype=bool))
