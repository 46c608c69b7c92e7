"""Real failure logs: read and validate them, map them onto the groups, replay them, fit failure models to them.

A **failure log** is a table of hardware failures observed on a cluster, one row per failure (docs/failure_logs.md
has the format, the validation rules and the malformed logs tried):

========== ======== =================================================================================================
column     required meaning
========== ======== =================================================================================================
``time_s`` yes      event time, seconds from the start of the log; finite, ``>= 0``, non-decreasing down the file
``level``  yes      ``"gpu"`` or a failure-domain level of the topology (``topology.DOMAIN_LEVELS``: node, rack,
                    power, ...)
``unit``   yes      index of the failed unit at that level in the topology's numbering: GPU ``x``, node
                    ``x // gpus_per_node``, rack ``x // (gpus_per_node nodes_per_rack)``, ...
``repair_s`` no     time until the unit is back (``>= 0``; empty = unknown); carried to the timeline form only
========== ======== =================================================================================================

CSV files may start with comment lines (``#``); ``# duration_s: VALUE`` gives the **observation window end**
(seconds from the log start, at least the last event time). Parquet files (with the ``parquet`` extra) carry it as
the schema metadata key ``duration_s``. Without it the window ends at the last event (or at an explicit
``duration_s`` argument, which takes precedence).

Model and assumptions
---------------------
- The log starts on a fully live system of new units.
- A GPU failure kills the group of that GPU; a domain failure (node, rack, ...) kills every group with a GPU in the
  domain (:meth:`spare_mc.Topology.domain_groups`). An event that kills no live group is not an event of the job.
- **Replay** (:func:`replay_log`): the log is one long trajectory, cut into epochs. Each epoch starts from a fully
  live system; the event causing a wipe-out ends it (a global restart revives every group) and the next event
  starts the next epoch. Each complete epoch is one sample of ``T``, of the masked failures and of the ReCtlr
  overhead; events after the last wipe-out are an incomplete (censored) epoch and are reported, not used.
- **Fit** (:func:`fit_failure_log`): every unit is a renewal process: it is new at the log start and as good as new
  again right after each failure (repair time not counted). Its lifetimes between failures are Weibull
  observations; the time from its last failure (or from the start, for a unit that never failed) to the window end
  is right-censored.
"""

from __future__ import annotations

import csv
import math
import os
import re
from dataclasses import dataclass
from importlib import resources

import numpy as np

from .._kernels import logs as _lk
from .._kernels.records import EpochsOut, Holding, JobEvents
from .._kernels import rectlr as _rk
from .._kernels import rectlr_layout as _rl
from .._lib.resources import check_memory
from .._lib.seeding import generator
from .._lib.validation import UsageTypeError, UsageValueError, as_choice, as_float, as_int
from ..mc.reorder import _LOG_COLS, _TRIAL_COLS, ESTIMATORS, OverheadResult
from ..mc.survivability import WipeoutResult
from ..model import topology as _topology
from ..model.failures import (DomainFailures, FailureEvents, PerGPU, UniformOrder, _shape_iv, sample_events,
                              weibull_scale)
from ..model.kinds import make_layout
from ..model.layouts import LAYOUT_KINDS, Layout, ReplicaSets
from ..model.topology import Topology
from .weibull import CI_METHODS, LevelFit, _data_iv, _fit_shared, _make_fits, _weibull_sums, weibull_mle

__all__ = [
    "LOG_COLUMNS",
    "REQUIRED_COLUMNS",
    "FailureLog",
    "LevelFit",
    "LogFit",
    "LogReplay",
    "TimelineEvents",
    "example_log_path",
    "failure_log_from_arrays",
    "fit_failure_log",
    "log_levels",
    "read_failure_log",
    "replay_log",
    "sampled_failure_log",
    "synthetic_log",
    "weibull_mle",
    "write_example_log",
    "write_failure_log",
]

#: Columns of a failure log, in their canonical order.
LOG_COLUMNS = ("time_s", "level", "unit", "repair_s")
#: Columns every log must have.
REQUIRED_COLUMNS = ("time_s", "level", "unit")
#: Metadata keys a log may carry (CSV: ``# key: value`` comment lines; Parquet: schema metadata).
METADATA_KEYS = ("duration_s",)
#: Largest event time: the timeline's integer-microsecond clock stays below 2^59 microseconds.
MAX_TIME_S = float(2**59) / 1e6
_PARQUET_SUFFIXES = (".parquet", ".pq")


def log_levels(topology: Topology) -> tuple:
    """The levels a log may name on ``topology``: ``"gpu"`` then the topology's domain levels (node, rack, ...)."""
    return ("gpu", *_topology.DOMAIN_LEVELS)


# ------------------------------------------------------------------------------------------------- the log
@dataclass(frozen=True, eq=False)
class FailureLog:
    """A validated failure log on a topology.

    Attributes
    ----------
    time_s : ndarray of float64
        Event times (s from the log start), non-decreasing.
    level : ndarray of int64
        Level of every event, an index into :attr:`levels`.
    unit : ndarray of int64
        Failed unit at that level.
    repair_s : ndarray of float64 or None
        Repair times (NaN where unknown), or None when the log has no ``repair_s`` column.
    duration_s : float
        End of the observation window (s), ``>= time_s[-1]``.
    topology : Topology
    levels : tuple of str
        ``log_levels(topology)``.
    source : str
        Where the log came from (a path, or ``"<arrays>"``).
    comments : tuple of str
        The CSV comment lines that are not metadata (e.g. how a synthetic log was made).
    """

    time_s: np.ndarray
    level: np.ndarray
    unit: np.ndarray
    repair_s: np.ndarray | None
    duration_s: float
    topology: Topology
    levels: tuple
    source: str = "<arrays>"
    comments: tuple = ()

    def __len__(self):
        return int(self.time_s.size)

    def level_names(self) -> np.ndarray:
        """The level of every event as strings."""
        return np.asarray(self.levels, dtype=object)[self.level]

    def touched_groups(self) -> tuple[np.ndarray, np.ndarray]:
        """Groups each event touches, CSR ``(ptr, groups)``: ``groups[ptr[e]:ptr[e + 1]]`` (sorted, distinct) for
        log row ``e``, whether or not they are live. A GPU event touches its GPU's group, computed from the
        placement (no array of all GPUs); a domain event the groups of :meth:`Topology.domain_groups`."""
        topo = self.topology
        lens = np.ones(len(self), dtype=np.int64)
        csr = {}
        for code, name in enumerate(self.levels):
            m = self.level == code
            if name != "gpu" and m.any():
                csr[code] = topo.domain_groups(name)
                dptr = csr[code][0]
                lens[m] = dptr[self.unit[m] + 1] - dptr[self.unit[m]]
        ptr = np.zeros(len(self) + 1, dtype=np.int64)
        np.cumsum(lens, out=ptr[1:])
        out = np.empty(int(ptr[-1]), dtype=np.int64)
        for code, name in enumerate(self.levels):
            rows = np.nonzero(self.level == code)[0]
            if rows.size == 0:
                continue
            u = self.unit[rows]
            if name == "gpu":
                out[ptr[rows]] = topo.groups_of(u)
                continue
            dptr, dgroups = csr[code]
            n = lens[rows]
            k = np.arange(int(n.sum()), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)  # index within the event
            out[np.repeat(ptr[rows], n) + k] = dgroups[np.repeat(dptr[u], n) + k]
        return ptr, out

    def timeline_events(self) -> TimelineEvents:
        """The log in the form of the job timeline: integer-microsecond times and the groups each event touches
        (:class:`TimelineEvents`)."""
        ptr, groups = self.touched_groups()
        times_us = np.rint(self.time_s * 1e6).astype(np.int64)
        if self.repair_s is None:
            repair_us = np.full(len(self), -1, dtype=np.int64)
        else:
            repair_us = np.where(np.isnan(self.repair_s), -1,
                                 np.rint(np.nan_to_num(self.repair_s) * 1e6)).astype(np.int64)
        return TimelineEvents(times_us, ptr, groups, repair_us, round(self.duration_s * 1e6),
                              self.topology.n_groups)

    def failure_events(self) -> FailureEvents:
        """The log as the failure stream of one fresh system (no restart): :class:`spare_mc.FailureEvents` with the
        log's times and the **live** groups each event kills; events that kill no live group are dropped, and the
        stream ends when every group is dead or the log ends."""
        ptr, groups = self.touched_groups()
        n = self.topology.n_groups
        # the replay kernel on a layout holding no type: it never wipes out, so it records the job events of one
        # system; after every group is dead no row kills anything
        out = _replay(ptr, groups, _NoTypes(n))
        return FailureEvents(self.time_s[out["job_event"]], out["job_ptr"].copy(), out["job_groups"].copy())

    def summary(self) -> dict:
        """Counts per level, units that failed, the window: what ``spare-mc log check`` prints."""
        per = {}
        for i, name in enumerate(self.levels):
            m = self.level == i
            per[name] = {"events": int(m.sum()), "units_failed": int(np.unique(self.unit[m]).size),
                         "units": self.topology.unit_count(name)}
        fresh = self.failure_events()
        return {"source": self.source, "rows": len(self), "duration_s": self.duration_s,
                "first_event_s": float(self.time_s[0]), "last_event_s": float(self.time_s[-1]),
                "has_repair_s": self.repair_s is not None, "levels": per,
                "fresh_system_job_events": len(fresh), "fresh_system_groups_killed": int(fresh.groups.size),
                "topology": self.topology.to_dict()}


@dataclass(frozen=True, eq=False)
class TimelineEvents:
    """A log for the job timeline (integer microseconds, every event, no liveness filter).

    Attributes
    ----------
    times_us : ndarray of int64, shape (E,)
        Event times in microseconds from the log start, ``round(time_s * 1e6)``, non-decreasing.
    ptr : ndarray of int64, shape (E + 1,)
        CSR offsets: ``ptr[0] = 0``, ``ptr[E] = groups.size``.
    groups : ndarray of int64
        ``groups[ptr[e]:ptr[e + 1]]``: the distinct groups (sorted ascending) that log event ``e`` touches, **dead
        or alive**: the timeline knows which are live (restarts, repairs), and must skip the dead ones itself. Every
        event touches at least one group.
    repair_us : ndarray of int64, shape (E,)
        Repair time of the failed unit in microseconds, ``-1`` where the log gives none.
    duration_us : int
        End of the observation window.
    n_groups : int
        ``N``; every group index lies in ``[0, N)``.
    """

    times_us: np.ndarray
    ptr: np.ndarray
    groups: np.ndarray
    repair_us: np.ndarray
    duration_us: int
    n_groups: int

    def __len__(self):
        return int(self.times_us.size)


# --------------------------------------------------------------------------------------------- validation
def _topology_iv(topology):
    if not isinstance(topology, Topology):
        raise UsageTypeError(f"`topology` must be a Topology, got {type(topology).__name__}")
    return topology


def _check_rows(time_s, level_codes, level_text, unit, repair_s, topology, levels, where):
    """The row rules, vectorised; raises for the earliest offending row (rule order breaks ties).

    ``level_codes`` are indices into ``levels`` (-1 = unknown, then ``level_text`` gives the bad value); ``where(i)``
    names 0-based row ``i`` for the message.
    """
    n = time_s.size
    if n == 0:
        raise UsageValueError(f"{where(None)}: the log has no events (at least one data row is required)")
    counts = np.array([topology.unit_count(name) for name in levels], dtype=np.int64)
    finite = np.isfinite(time_s)
    prev = np.concatenate([[-np.inf], time_s[:-1]])
    known = level_codes >= 0
    limit = np.where(known, counts[np.clip(level_codes, 0, None)], 0)
    rules = [
        (~finite, lambda i: f"`time_s` must be finite, got {float(time_s[i])!r}"),
        (finite & (time_s < 0),
         lambda i: f"`time_s` must be >= 0 (seconds from the log start), got {float(time_s[i])!r}"),
        (finite & (time_s > MAX_TIME_S),
         lambda i: f"`time_s` must be <= {MAX_TIME_S:.6g} s (the integer-microsecond clock), got {float(time_s[i])!r}"),
        (time_s < prev, lambda i: f"`time_s` must be non-decreasing (sorted by time), got {float(time_s[i])!r} after "
                                  f"{float(time_s[i - 1])!r}"),
        (~known, lambda i: f"`level` must be one of {list(levels)}, got {level_text(i)!r}"),
        (known & ((unit < 0) | (unit >= limit)),
         lambda i: f"`unit` must satisfy 0 <= unit < {limit[i]} (the {levels[level_codes[i]]}s of the topology), got "
                   f"unit={unit[i]}"),
    ]
    if repair_s is not None:
        rules.append((~np.isnan(repair_s) & (~np.isfinite(repair_s) | (repair_s < 0)),
                      lambda i: f"`repair_s` must be finite and >= 0 (or empty), got {float(repair_s[i])!r}"))
        rules.append((np.isfinite(repair_s) & (repair_s > MAX_TIME_S),  # its microseconds must fit the clock
                      lambda i: f"`repair_s` must be <= {MAX_TIME_S:.6g} s (the integer-microsecond clock), got "
                                f"{float(repair_s[i])!r}"))
    if n > 1:  # a row repeating an earlier one (time, level, unit): a unit fails once at a time
        key = np.stack([(time_s + 0.0).view(np.int64), level_codes, unit], axis=1)  # + 0.0: -0.0 is 0.0
        _, first_of, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        first_of = first_of[inverse.ravel()]
        rules.append((first_of != np.arange(n),
                      lambda i: f"the event repeats {where(int(first_of[i]))[len(where(None)) + 2:]} (the same "
                                f"time_s, level and unit): a unit fails once at a time; remove the duplicate row"))
    first = [(int(np.argmax(bad)), k) for k, (bad, _) in enumerate(rules) if bad.any()]
    if first:
        i, k = min(first)
        raise UsageValueError(f"{where(i)}: {rules[k][1](i)}")


def _duration_iv(duration_s, header_duration, last, where):
    d = header_duration if duration_s is None else as_float(duration_s, "duration_s", nonnegative=True)
    if d is None:
        return float(last)
    if d > MAX_TIME_S:
        raise UsageValueError(f"{where}: `duration_s` (the observation window end) must be <= {MAX_TIME_S:.6g} s "
                              f"(the integer-microsecond clock), got duration_s={float(d)!r}")
    if d < last:
        raise UsageValueError(f"{where}: `duration_s` (the observation window end) must be >= the last event time "
                              f"{float(last)!r}, got duration_s={float(d)!r}")
    return float(d)


def failure_log_from_arrays(time_s, level, unit, topology: Topology, *, repair_s=None, duration_s=None,
                            source: str = "<arrays>") -> FailureLog:
    """A validated :class:`FailureLog` from columns (rows are named by their 1-based data row in errors).

    Parameters
    ----------
    time_s : array_like of float
    level : array_like of str
        ``"gpu"`` or a domain level of ``topology``.
    unit : array_like of int
    topology : Topology
    repair_s : array_like of float, optional
        NaN = unknown.
    duration_s : float, optional
        Observation window end (default: the last event time).
    source : str
        A name for messages.

    Examples
    --------
    >>> log = failure_log_from_arrays([10.0, 20.0], ["gpu", "node"], [3, 1], Topology(32, 4))
    >>> log.touched_groups()[1].tolist()
    [0, 1]
    """
    topology = _topology_iv(topology)
    levels = log_levels(topology)
    t_raw = np.asarray(time_s)
    if t_raw.dtype.kind not in "iuf":  # strings would parse, bools would be 0 and 1 s
        raise UsageTypeError(f"`time_s` must hold real numbers, got dtype {t_raw.dtype}")
    if t_raw.ndim > 1:
        raise UsageValueError(f"`time_s` must be one-dimensional, got shape {t_raw.shape}")
    t = t_raw.astype(np.float64).ravel()
    lv = np.asarray(level, dtype=object).ravel()
    u_raw = np.asarray(unit).ravel()
    if u_raw.size and not np.issubdtype(u_raw.dtype, np.integer):
        raise UsageTypeError(f"`unit` must hold integers, got dtype {u_raw.dtype}")
    if u_raw.dtype.kind == "u" and u_raw.size and u_raw.max() >= 1 << 63:  # would wrap to a negative int64
        i = int(np.argmax(u_raw >= 1 << 63))
        raise UsageValueError(f"{source}: data row {i + 1}: `unit` must be a unit index of the topology (0 <= unit "
                              f"< the level's unit count), got {int(u_raw[i])}")
    u = u_raw.astype(np.int64)
    rep = None
    if repair_s is not None:
        rep = np.asarray(repair_s)
        if rep.dtype.kind not in "iuf":
            raise UsageTypeError(f"`repair_s` must hold real numbers (NaN: unknown), got dtype {rep.dtype}")
        rep = rep.astype(np.float64).ravel()
    sizes = {"level": lv.size, "unit": u.size, **({} if rep is None else {"repair_s": rep.size})}
    for name, size in sizes.items():
        if size != t.size:
            raise UsageValueError(f"`{name}` must have one entry per event ({t.size} times), got {size}")
    index = {name: i for i, name in enumerate(levels)}
    codes = np.array([index.get(x, -1) if isinstance(x, str) else -1 for x in lv.tolist()], dtype=np.int64)
    _check_rows(t, codes, lambda i: lv[i], u, rep, topology, levels,
                lambda i: source if i is None else f"{source}: data row {i + 1}")
    d = _duration_iv(duration_s, None, t[-1], source)
    return FailureLog(t + 0.0, codes, u, rep, d, topology, levels, source)  # + 0.0: a time of -0.0 is 0.0


def _plain_number(text: str) -> bool:
    """Whether ``text`` is written with ASCII characters and no underscore: Python's ``int`` and ``float`` also
    read ``1_0`` as 10 and full-width or other Unicode digits, which a log would not mean as numbers."""
    return text.isascii() and "_" not in text


def _parse_metadata(text, lineno, meta, src):
    body = text.lstrip()[1:].strip()
    key, sep, value = body.partition(":")
    key = key.strip()
    if not sep or key not in METADATA_KEYS:
        # a comment that starts like a metadata key but is not written "# key: value" would silently leave the
        # window at the last event: refuse it rather than keep it as a plain comment
        word = body.replace("=", " ").replace(":", " ").split()
        if word and word[0].lower() in METADATA_KEYS:
            raise UsageValueError(f"{src}: line {lineno}: a comment names the metadata key `{word[0]}` but is not "
                                  f"written `# {word[0].lower()}: VALUE`; write it so (or reword the comment)")
        return False
    if key in meta:
        raise UsageValueError(f"{src}: line {lineno}: metadata `{key}` is given twice (first on line {meta[key][1]})")
    try:
        if not _plain_number(value.strip()):
            raise ValueError
        v = float(value.strip())
    except ValueError:
        raise UsageValueError(f"{src}: line {lineno}: metadata `{key}` must be a number, got {value.strip()!r}") \
            from None
    if not math.isfinite(v) or v < 0:
        raise UsageValueError(f"{src}: line {lineno}: metadata `{key}` must be finite and >= 0, got {v!r}")
    meta[key] = (v, lineno)
    return True


def _read_csv(path, topology, duration_s):
    src = os.fspath(path)
    levels = log_levels(topology)
    index = {name: i for i, name in enumerate(levels)}
    # utf-8-sig: a byte-order mark (spreadsheet exports) is not part of the first column's name
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            # line breaks are \n, \r\n or \r only: str.splitlines() also breaks at form feeds, U+2028 and the like,
            # which would shift the line numbers of every message (and cut a comment in two)
            lines = re.split(r"\r\n|\r|\n", f.read())
    except UnicodeDecodeError as e:
        raise UsageValueError(f"{src}: not UTF-8 text (byte {e.start}: {e.reason}); save the log as UTF-8 CSV") \
            from None
    meta, comments, header, cols, commented_header = {}, [], None, None, None
    t, codes, bad_level, units, rep, where_line = [], [], {}, [], [], []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if line.lstrip().startswith("#"):
            if not _parse_metadata(line, lineno, meta, src):
                comments.append(line.lstrip()[1:].strip())
                if header is None and commented_header is None and \
                        set(REQUIRED_COLUMNS) <= {x.strip() for x in comments[-1].split(",")} <= set(LOG_COLUMNS):
                    commented_header = lineno
            continue
        try:  # strict: an unclosed or stray quote is an error, not a field that swallows the rest of the line
            fields_ = [x.strip() for x in next(csv.reader([line], strict=True))]
        except csv.Error as e:
            hint = ("a quoted field ends at its closing quote: a ',' or the end of the line must follow it"
                    if "expected after" in str(e) else "a quoted field must close its quote on the same line")
            raise UsageValueError(f"{src}: line {lineno}: not a valid CSV line ({e}); {hint}") from None
        if header is None:
            if commented_header is not None and not set(fields_) & set(LOG_COLUMNS):
                raise UsageValueError(f"{src}: line {lineno}: expected the header line, got a data line; line "
                                      f"{commented_header} names the columns but is a comment: remove its '#'")
            dup = sorted({x for x in fields_ if fields_.count(x) > 1})
            if dup:
                raise UsageValueError(f"{src}: line {lineno}: the header names column `{dup[0]}` twice")
            unknown = [x for x in fields_ if x not in LOG_COLUMNS]
            if unknown:
                raise UsageValueError(f"{src}: line {lineno}: unknown column `{unknown[0]}` in the header (columns: "
                                      f"{', '.join(LOG_COLUMNS)}; repair_s is optional)")
            missing = [x for x in REQUIRED_COLUMNS if x not in fields_]
            if missing:
                raise UsageValueError(f"{src}: line {lineno}: the header lacks the required column `{missing[0]}` "
                                      f"(required: {', '.join(REQUIRED_COLUMNS)})")
            header = fields_
            cols = {name: fields_.index(name) for name in fields_}
            continue
        row = len(t) + 1
        here = f"{src}: line {lineno} (data row {row})"
        if fields_ == header:
            raise UsageValueError(f"{here}: the header is repeated (two logs concatenated?); give one header line")
        if len(fields_) != len(header):
            raise UsageValueError(f"{here}: expected {len(header)} fields ({', '.join(header)}), got {len(fields_)}")
        for name in ("time_s", "unit", "repair_s"):
            if name in cols and not _plain_number(fields_[cols[name]]):
                raise UsageValueError(f"{here}: `{name}` must be written in ASCII characters without '_', got "
                                      f"{fields_[cols[name]]!r}")
        try:
            t.append(float(fields_[cols["time_s"]]))
        except ValueError:
            raise UsageValueError(f"{here}: `time_s` must be a number, got {fields_[cols['time_s']]!r}") from None
        try:
            units.append(int(fields_[cols["unit"]]))
        except ValueError:
            raise UsageValueError(f"{here}: `unit` must be an integer, got {fields_[cols['unit']]!r}") from None
        if not -(1 << 63) <= units[-1] < 1 << 63:  # beyond int64: surely not a unit of the topology
            raise UsageValueError(f"{here}: `unit` must be a unit index of the topology (0 <= unit < the level's "
                                  f"unit count), got {units[-1]}")
        lv = fields_[cols["level"]]
        code = index.get(lv, -1)
        if code < 0:
            bad_level[len(codes)] = lv
        codes.append(code)
        if "repair_s" in cols:
            text = fields_[cols["repair_s"]]
            try:
                rep.append(float(text) if text else math.nan)
            except ValueError:
                raise UsageValueError(f"{here}: `repair_s` must be a number or empty, got {text!r}") from None
            if text and math.isnan(rep[-1]):  # an explicit 'nan' is not 'unknown' (that is an empty field)
                raise UsageValueError(f"{here}: `repair_s` must be finite and >= 0 (or empty), got {text!r}")
        where_line.append(lineno)
    if header is None:
        raise UsageValueError(f"{src}: no header line (the first line that is not a comment must name the columns "
                              f"{', '.join(REQUIRED_COLUMNS)})")
    t = np.asarray(t, dtype=np.float64)
    rep_a = np.asarray(rep, dtype=np.float64) if "repair_s" in cols else None
    _check_rows(t, np.asarray(codes, dtype=np.int64), lambda i: bad_level.get(i), np.asarray(units, dtype=np.int64),
                rep_a, topology, levels,
                lambda i: src if i is None else f"{src}: line {where_line[i]} (data row {i + 1})")
    header_d = meta["duration_s"][0] if "duration_s" in meta else None
    d = _duration_iv(duration_s, header_d, t[-1], src)
    return FailureLog(t + 0.0, np.asarray(codes, dtype=np.int64), np.asarray(units, dtype=np.int64), rep_a, d, topology,
                      levels, src, tuple(comments))


def _pyarrow(what):
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise UsageValueError(f"{what} needs pyarrow: install the optional extra, pip install 'spare_mc[parquet]'") \
            from None
    return pyarrow


def _read_parquet(path, topology, duration_s):
    src = os.fspath(path)
    pa = _pyarrow(f"reading the Parquet log {src}")
    if not os.path.exists(path):  # pyarrow's error would carry only the path
        raise FileNotFoundError(2, "No such file or directory", src)
    try:
        with pa.parquet.ParquetFile(path) as pfile:
            names = pfile.schema_arrow.names
            dup = sorted({x for x in names if names.count(x) > 1})
            if dup:  # pyarrow's read would fail with "Multiple matches for FieldRef"
                raise UsageValueError(f"{src}: the table has two columns named `{dup[0]}`")
            table = pfile.read()
    except (pa.ArrowException, OSError) as e:  # not Parquet (a CSV named .parquet, an empty or damaged file)
        raise UsageValueError(f"{src}: not a readable Parquet file ({str(e).strip().splitlines()[0]}); a log whose "
                              f"name ends {' or '.join(_PARQUET_SUFFIXES)} is read as Parquet, any other as CSV") \
            from None
    names = table.column_names
    unknown = [x for x in names if x not in LOG_COLUMNS]
    if unknown:
        raise UsageValueError(f"{src}: unknown column `{unknown[0]}` (columns: {', '.join(LOG_COLUMNS)})")
    missing = [x for x in REQUIRED_COLUMNS if x not in names]
    if missing:
        raise UsageValueError(f"{src}: the table lacks the required column `{missing[0]}`")
    cols = {}
    for name in names:
        col = table.column(name)
        if name != "repair_s" and col.null_count:
            i = next(k for k, v in enumerate(col.to_pylist()) if v is None)
            raise UsageValueError(f"{src}: data row {i + 1}: `{name}` is missing (null)")
        typ = col.type
        ok = {"time_s": pa.types.is_integer(typ) or pa.types.is_floating(typ),
              "repair_s": pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_null(typ),
              "unit": pa.types.is_integer(typ),
              "level": pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_dictionary(typ)}[name]
        if not ok:
            expected = {"unit": "an integer", "level": "a string"}.get(name, "a number")
            raise UsageValueError(f"{src}: column `{name}` has type {typ}, expected {expected}")
        cols[name] = col.to_pylist()
        if name == "unit" and pa.types.is_unsigned_integer(typ):  # beyond int64: no unit (and no wrapping)
            i = next((k for k, v in enumerate(cols[name]) if v >= 1 << 63), None)
            if i is not None:
                raise UsageValueError(f"{src}: data row {i + 1}: `unit` must be a unit index of the topology (0 <= "
                                      f"unit < the level's unit count), got {cols[name][i]}")
        if name == "repair_s":  # null is 'unknown'; a NaN is refused as in a CSV log (where 'nan' is not empty)
            i = next((k for k, v in enumerate(cols[name]) if v is not None and v != v), None)
            if i is not None:
                raise UsageValueError(f"{src}: data row {i + 1}: `repair_s` must be finite and >= 0 (or null), "
                                      f"got nan")
    meta = table.schema.metadata or {}
    header_d = None
    if b"duration_s" in meta:
        try:
            header_d = float(meta[b"duration_s"])
        except ValueError:
            raise UsageValueError(f"{src}: metadata `duration_s` must be a number, got {meta[b'duration_s']!r}") \
                from None
        if not math.isfinite(header_d) or header_d < 0:
            raise UsageValueError(f"{src}: metadata `duration_s` must be finite and >= 0, got {header_d!r}")
    rep = None
    if "repair_s" in cols:
        rep = np.array([math.nan if v is None else v for v in cols["repair_s"]], dtype=np.float64)
    log = failure_log_from_arrays(np.asarray(cols["time_s"], dtype=np.float64), cols["level"],
                                  np.asarray(cols["unit"], dtype=np.int64), topology, repair_s=rep,
                                  duration_s=duration_s if duration_s is not None else header_d, source=src)
    return log


def read_failure_log(path, topology: Topology, *, duration_s=None) -> FailureLog:
    """Read and validate a failure log (CSV, or Parquet by the suffix ``.parquet`` / ``.pq``).

    Parameters
    ----------
    path : str or path-like
    topology : Topology
        The cluster the log was taken on: it numbers the units and checks their range.
    duration_s : float, optional
        Observation window end; default the log's ``duration_s`` metadata, else its last event time.

    Returns
    -------
    FailureLog

    Raises
    ------
    UsageValueError
        For a malformed log, naming the file line (CSV, 1-based, counting every line) and the 1-based data row, and
        the rule broken (docs/failure_logs.md lists them).

    Examples
    --------
    >>> log = read_failure_log(example_log_path(), Topology(256, 32, nodes_per_rack=4, racks_per_power=2))
    >>> log.duration_s
    2592000.0
    """
    topology = _topology_iv(topology)
    if not isinstance(path, (str, os.PathLike)):
        raise UsageTypeError(f"`path` must be a path, got {type(path).__name__}")
    if not os.path.exists(path):  # the caller's input, as for a dataset (spare_mc.sweep.storage.open_dataset)
        raise UsageValueError(f"failure log not found: {os.fspath(path)}")
    if os.path.isdir(path):
        raise UsageValueError(f"{os.fspath(path)} is a directory, not a failure log file")
    if os.fspath(path).lower().endswith(_PARQUET_SUFFIXES):
        return _read_parquet(path, topology, duration_s)
    return _read_csv(path, topology, duration_s)


def _comments_iv(comments) -> tuple:
    """``comments`` as a tuple of one-line strings that read back as comments (not as metadata)."""
    if isinstance(comments, (str, bytes)) or not hasattr(comments, "__iter__"):
        raise UsageTypeError(f"`comments` must be a sequence of strings (one per line), got {comments!r}")
    out = tuple(comments)
    for i, c in enumerate(out):
        if not isinstance(c, str):
            raise UsageTypeError(f"`comments[{i}]` must be a string, got {type(c).__name__}")
        if "\r" in c or "\n" in c:  # the reader's line breaks (a form feed or U+2028 is not one)
            raise UsageValueError(f"`comments[{i}]` must be one line (a line break would start a data line), got {c!r}")
        try:
            is_meta = _parse_metadata("# " + c, 1, {}, "")
        except UsageValueError:
            is_meta = True
        if is_meta:
            raise UsageValueError(f"`comments[{i}]` reads as the metadata line `# {c}` (keys: "
                                  f"{', '.join(METADATA_KEYS)}); reword it")
    return out


def write_failure_log(path, log: FailureLog, *, comments=None) -> None:
    """Write ``log`` as CSV (or Parquet by the suffix), with ``duration_s`` metadata and ``comments`` (default: the
    log's own) as ``#`` lines. Times are written with ``repr`` so that reading gives back the same floats."""
    if not isinstance(log, FailureLog):
        raise UsageTypeError(f"`log` must be a FailureLog, got {type(log).__name__}")
    if not isinstance(path, (str, os.PathLike)):
        raise UsageTypeError(f"`path` must be a path, got {type(path).__name__}")
    comments = log.comments if comments is None else _comments_iv(comments)
    names = log.level_names()
    if os.fspath(path).lower().endswith(_PARQUET_SUFFIXES):
        pa = _pyarrow(f"writing the Parquet log {os.fspath(path)}")
        data = {"time_s": pa.array(log.time_s), "level": pa.array(names.tolist(), type=pa.string()),
                "unit": pa.array(log.unit)}
        if log.repair_s is not None:
            data["repair_s"] = pa.array(log.repair_s, from_pandas=True)
        meta = {"duration_s": repr(log.duration_s)}
        if comments:
            meta["comments"] = "\n".join(comments)
        pa.parquet.write_table(pa.table(data, metadata=meta), path)
        return
    with open(path, "w", newline="", encoding="utf-8") as f:
        f.writelines(f"# {c}\n" for c in comments)
        f.write(f"# duration_s: {log.duration_s!r}\n")
        cols = ["time_s", "level", "unit"] + (["repair_s"] if log.repair_s is not None else [])
        f.write(",".join(cols) + "\n")
        rep = log.repair_s
        for i in range(len(log)):
            row = f"{float(log.time_s[i])!r},{names[i]},{int(log.unit[i])}"
            if rep is not None:
                row += "," + ("" if math.isnan(rep[i]) else repr(float(rep[i])))
            f.write(row + "\n")


# ------------------------------------------------------------------------------------------------- replay
def _layout_iv(layout, n_groups, r, topology):
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
class _NoTypes:
    """A layout in which no group holds any type (never wiped out): the replay kernel then only filters kills."""

    n_groups: int

    @property
    def group_ptr(self):
        return np.zeros(self.n_groups + 1, dtype=np.int64)

    @property
    def group_types(self):
        return np.zeros(0, dtype=np.int64)


def _holders_per_type(layout):
    if isinstance(layout, _NoTypes):
        return np.zeros(0, dtype=np.int64)
    if isinstance(layout, ReplicaSets):
        return layout.sizes.astype(np.int64)
    return np.full(layout.n_groups, layout.r, dtype=np.int64)


def _replay(ev_ptr, ev_groups, layout):
    """Run the replay kernel; returns a dict of its outputs trimmed to size."""
    n_ev = ev_ptr.size - 1
    out_T = np.zeros(n_ev + 1, np.int64)
    out_dead = np.zeros(n_ev + 1, np.int64)
    out_end = np.zeros(n_ev + 1, np.int64)
    job_ptr = np.zeros(n_ev + 1, np.int64)
    job_groups = np.zeros(max(ev_groups.size, 1), np.int64)
    job_event = np.zeros(max(n_ev, 1), np.int64)
    start = np.zeros(n_ev + 2, np.int64)
    epochs, jobs = _lk.replay_epochs(ev_ptr, ev_groups, Holding(layout.n_groups, layout.group_ptr, layout.group_types,
                                                                _holders_per_type(layout)),
                                     EpochsOut(out_T, out_dead, out_end, start), JobEvents(job_ptr, job_groups, job_event))
    return {"epochs": epochs, "T": out_T[:epochs], "dead": out_dead[:epochs], "end": out_end[:epochs],
            "job_ptr": job_ptr[:jobs + 1], "job_groups": job_groups[:job_ptr[jobs]], "job_event": job_event[:jobs],
            "start": start[:epochs + 1]}


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
             "ignored_rows": self.ignored_rows}
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


def _replay_iv(log, layout, r, overhead, from_scratch):
    if not isinstance(log, FailureLog):
        raise UsageTypeError(f"`log` must be a FailureLog, got {type(log).__name__}")
    layout = _layout_iv(layout, None, r, log.topology)
    for name, value in (("overhead", overhead), ("from_scratch", from_scratch)):
        if not isinstance(value, bool):
            raise UsageTypeError(f"`{name}` must be a bool, got {value!r}")
    if overhead and not isinstance(layout, Layout):
        raise UsageValueError("`overhead`=True runs ReCtlr, which needs an N x r holder table (Rep with replica sets "
                              "of unequal size does not reorder)")
    return layout


def replay_log(log: FailureLog, layout, *, r: int | None = None, overhead: bool = False, log_reps: int = 0,
               from_scratch: bool = False) -> LogReplay:
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

    Returns
    -------
    LogReplay

    Notes
    -----
    Epoch ``i`` starts from a fully live system right after the ``i``-th wipe-out (at the log start for ``i = 0``);
    log rows that kill no live group are skipped; the event whose kills wipe a shard type out ends the epoch. This
    is the event stream of :func:`spare_mc.overhead_mc` per replication, so a log written by
    :func:`sampled_failure_log` replays to exactly the sampler's per-replication results.

    Examples
    --------
    >>> topo = Topology(256, 32, nodes_per_rack=4, racks_per_power=2)
    >>> rep = replay_log(read_failure_log(example_log_path(), topo), "cyclic", r=2)
    >>> rep.epochs > 10
    True
    """

    layout = _replay_iv(log, layout, r, overhead, from_scratch)
    ptr, groups = log.touched_groups()
    out = _replay(ptr, groups, layout)
    epochs = out["epochs"]
    ends = log.time_s[out["end"]]
    starts = np.concatenate([[0.0], ends])[:-1]  # epoch i starts at wipe-out i - 1 (the log start for i = 0)
    failures = {"model": "log", "source": log.source, "duration_s": log.duration_s}
    wipe = WipeoutResult(out["T"].copy(), out["dead"].copy(), ends - starts, layout.kind, layout.n_groups, layout.r,
                         False, failures)
    ov = None
    if overhead:
        log_reps = as_int(log_reps, "log_reps", min_value=0, max_value=epochs)
        n, rr = layout.n_groups, layout.r
        stats = np.zeros((epochs, _rl.N_TRIAL_COLS), dtype=np.int64)
        gaps = np.zeros((epochs, rr + 1), dtype=np.int64)
        rows = np.zeros((log_reps * n, _rl.N_LOG_COLS), dtype=np.int64)
        n_log = 0
        jp, jg, st = out["job_ptr"], out["job_groups"], out["start"]
        for i in range(epochs):
            a, b = st[i], st[i + 1]
            ev_ptr = jp[a:b + 1] - jp[a]
            n_log = _rk.overhead_events(n, rr, layout.holders, ev_ptr, jg[jp[a]:jp[b]], i, from_scratch,
                                        tuple(_rl.Tally(stats[i], gaps[i], rows, log_reps)), n_log)
            if n_log < 0:  # pragma: no cover - an internal error
                raise RuntimeError("ReCtlr found no assignment although no type was wiped out")
        ov = OverheadResult({name: stats[:, j].copy() for name, j in _TRIAL_COLS.items()}, gaps,
                            {name: rows[:n_log, j].copy() for name, j in _LOG_COLS.items()}, layout.kind,
                            n, rr, False, failures)
    last = float(ends[-1]) if epochs else 0.0
    tail = int(out["job_ptr"].size - 1 - out["start"][epochs])
    ignored = len(log) - (out["job_ptr"].size - 1)
    return LogReplay(wipe, ov, starts, ends, out["end"].copy(), tail, log.duration_s - last, int(ignored),
                     log.source)


# --------------------------------------------------------------------------------------------------- fit
# (the Weibull likelihood, its maximisation and intervals live in spare_mc/_weibull.py)
def _level_data(log: FailureLog, code: int):
    """Renewal lifetimes of one level: ``(x, censored, weights, units, rows)``."""
    name = log.levels[code]
    units = log.topology.unit_count(name)
    rows = np.flatnonzero(log.level == code)
    order = rows[np.lexsort((log.time_s[rows], log.unit[rows]))]
    u, t = log.unit[order], log.time_s[order]
    same = np.concatenate([[False], u[1:] == u[:-1]])
    prev = np.where(same, np.concatenate([[0.0], t[:-1]]), 0.0)
    x = t - prev
    if np.any(x <= 0):
        i = order[np.argmax(x <= 0)]
        raise UsageValueError(f"{log.source}: data row {i + 1}: {name} {log.unit[i]} fails at time_s="
                              f"{float(log.time_s[i])!r} with a lifetime of 0 (a failure at the log start); the "
                              f"Weibull fit needs positive lifetimes")
    last = np.concatenate([u[1:] != u[:-1], [True]]) if u.size else np.zeros(0, bool)
    cens = log.duration_s - t[last]
    cens = cens[cens > 0]
    never = units - np.unique(u).size
    xs = np.concatenate([x, cens, [log.duration_s]])
    c = np.concatenate([np.zeros(x.size, bool), np.ones(cens.size + 1, bool)])
    w = np.concatenate([np.ones(x.size + cens.size), [float(never)]])
    if never == 0 or log.duration_s == 0:
        xs, c, w = xs[:-1], c[:-1], w[:-1]
    return xs, c, w, units


@dataclass(frozen=True, eq=False)
class LogFit:
    """Per-level Weibull fits of a failure log, and the failure models they define.

    Attributes
    ----------
    fits : dict of str -> LevelFit
        One per fitted level (in level order).
    skipped : dict of str -> str
        Levels not fitted and why (e.g. fewer than 2 failures).
    shared_shape : bool
        One shape for all fitted levels (joint MLE); needed by :class:`spare_mc.DomainFailures`.
    duration_s : float
    topology : Topology
    source : str
    """

    fits: dict
    skipped: dict
    shared_shape: bool
    duration_s: float
    topology: Topology
    source: str = ""

    def failure_model(self, domain_level=None):
        """The spare_mc failure model of the fit.

        ``domain_level=None``: :class:`spare_mc.PerGPU` from the ``gpu`` fit (shape, mean lifetime as
        ``gpu_mtbf_s``). A domain level: :class:`spare_mc.DomainFailures` at that level with per-GPU background,
        which needs the two fitted with a shared shape (``fit_failure_log(..., shared_shape=True)``): the sampler
        races every unit on one hazard clock. Several levels (a sequence), or ``"all"`` (every fitted domain
        level): a mixed :class:`spare_mc.DomainFailures` with every one of them at its fitted mean lifetime, the
        log's own mixture of levels.

        Examples
        --------
        >>> topo = Topology(256, 32, nodes_per_rack=4, racks_per_power=2)
        >>> fit = fit_failure_log(read_failure_log(example_log_path(), topo), levels=("gpu", "node"),
        ...                       shared_shape=True)
        >>> type(fit.failure_model("node")).__name__
        'DomainFailures'
        >>> fit.failure_model("all").level_names
        ('node',)
        """
        if "gpu" not in self.fits:
            raise UsageValueError(f"the failure models need a `gpu` fit; fitted: {sorted(self.fits)}")
        gpu = self.fits["gpu"]
        bg = PerGPU(gpu_mtbf_s=gpu.mean_s, shape=gpu.shape)
        if domain_level is None:
            return bg
        levels = self._domain_levels(domain_level)
        if not self.shared_shape:
            raise UsageValueError("`DomainFailures` needs one Weibull shape for the domains and the per-GPU "
                                  "background: fit with shared_shape=True")
        if isinstance(domain_level, str) and domain_level != "all":
            dom = self.fits[domain_level]
            return DomainFailures(domain_level, dom.mean_s, dom.shape, background=bg)
        return DomainFailures(levels={lvl: self.fits[lvl].mean_s for lvl in levels}, shape=gpu.shape, background=bg)

    def _domain_levels(self, domain_level) -> tuple:
        """The fitted domain levels ``domain_level`` names (one, a sequence, or ``"all"``)."""
        fitted = [lvl for lvl in _topology.DOMAIN_LEVELS if lvl in self.fits]
        if isinstance(domain_level, str) and domain_level == "all":
            if not fitted:
                raise UsageValueError(f"`domain_level`='all' needs a fitted domain level; fitted: {sorted(self.fits)}")
            return tuple(fitted)
        try:
            names = (domain_level,) if isinstance(domain_level, str) else tuple(domain_level)
        except TypeError:
            raise UsageTypeError(f"`domain_level` must be a level name, a sequence of them or 'all', got "
                                 f"{type(domain_level).__name__}") from None
        if not names:
            raise UsageValueError("`domain_level` must name at least one level")
        if len(set(names)) != len(names):
            raise UsageValueError(f"`domain_level` must name each level once, got {list(names)}")
        for lvl in names:
            as_choice(lvl, "domain_level", tuple(_topology.DOMAIN_LEVELS))
            if lvl not in self.fits:
                raise UsageValueError(f"`domain_level`={lvl!r} was not fitted; fitted: {sorted(self.fits)}")
        return names

    def cli_flags(self, domain_level=None, calibration: str = "first_failure") -> dict:
        """The ``spare-mc ttt`` / sweep parameters of :meth:`failure_model` (``failures``, ``mtbf_s``, ``shape``,
        ``n_gpus``, ``calibration`` and ``domain_mtbf_s``, or for several levels ``failures="mixed"`` and
        ``domain_levels``; ``placement`` for a domain model on a strided topology): ``mtbf_s`` is the system
        MTBF whose per-GPU calibration (:meth:`spare_mc.PerGPU.from_system_mtbf`) gives back the fitted GPU mean
        lifetime."""
        calibration = as_choice(calibration, "calibration", ("first_failure", "long_run"))
        model = self.failure_model(domain_level)
        bg = model if domain_level is None else model.background
        g = self.topology.n_gpus
        mtbf = bg.gpu_mtbf_s / g if calibration == "long_run" else bg.gpu_mtbf_s * g ** (-1.0 / bg.shape)
        mixed = domain_level is not None and not (isinstance(domain_level, str) and domain_level != "all")
        d = {"failures": "per-gpu" if domain_level is None else "mixed" if mixed else domain_level, "mtbf_s": mtbf,
             "shape": bg.shape, "n_gpus": g, "calibration": calibration}
        if mixed:
            d["domain_levels"] = ",".join(f"{lvl}={m!r}" for lvl, m in model.levels)
        elif domain_level is not None:
            d["domain_mtbf_s"] = model.domain_mtbf_s
        if domain_level is not None and self.topology.placement != "contiguous":  # domains depend on it
            d["placement"] = self.topology.placement
        return d

    def to_dict(self) -> dict:
        return {"source": self.source, "duration_s": self.duration_s, "shared_shape": self.shared_shape,
                "fits": {k: v.to_dict() for k, v in self.fits.items()}, "skipped": dict(self.skipped),
                "topology": self.topology.to_dict(),
                "assumptions": "units new at the log start, renewed at each failure (repair time not counted); "
                               "lifetimes from the last failure (or the start) to the window end right-censored",
                "ci_method": next(iter(self.fits.values())).ci_method if self.fits else "wald",
                "ci_method_text": ("profile likelihood (other parameters maximised out, chi-square 1 d.f.)"
                                   if self.fits and next(iter(self.fits.values())).ci_method == "profile" else
                                   "Wald on log k and log scale from the observed information (analytic Hessian); "
                                   "delta method for the mean")}


def fit_failure_log(log: FailureLog, *, levels=None, shared_shape: bool = False, min_failures: int = 10,
                    level: float = 0.95, ci: str = "wald") -> LogFit:
    """Fit a Weibull lifetime law per level of a failure log by maximum likelihood, with confidence intervals.

    Parameters
    ----------
    log : FailureLog
    levels : sequence of str, optional
        Levels to fit (default: every level of the topology with at least ``min_failures`` failures; the others
        are listed in :attr:`LogFit.skipped`). Named levels with too few failures are an error.
    shared_shape : bool
        Fit one shape for all the levels jointly (each keeps its scale); :meth:`LogFit.failure_model` needs it for
        domain failures.
    min_failures : int
        Fewest failures a level needs (>= 2; default 10: with fewer the Wald intervals are not to be trusted).
    level : float
        Confidence level of the intervals.
    ci : {"wald", "profile"}
        Wald intervals from the observed information (default) or profile-likelihood intervals (see
        :func:`weibull_mle`; closer to their level with few failures).

    Returns
    -------
    LogFit

    Notes
    -----
    Each unit of a level (``topology`` numbering; all of them, failed or not) is a renewal process: new at the log
    start, as good as new right after each failure. Its lifetimes are the gaps between its failures (the first from
    time 0); the gap from its last failure, or the whole window for a unit that never failed, is right-censored at
    ``duration_s``. The censored Weibull likelihood and its intervals are those of :func:`weibull_mle` (with a
    shared shape: the profile score summed over levels, one scale per level, the joint observed information).
    Units are independent; a domain failure is counted at its own level only (the GPUs it takes down are not GPU
    failures).
    """
    if not isinstance(log, FailureLog):
        raise UsageTypeError(f"`log` must be a FailureLog, got {type(log).__name__}")
    if not isinstance(shared_shape, bool):
        raise UsageTypeError(f"`shared_shape` must be a bool, got {shared_shape!r}")
    min_failures = as_int(min_failures, "min_failures", min_value=2)
    level = as_float(level, "level", positive=True, max_value=1.0, max_inclusive=False)
    ci = as_choice(ci, "ci", CI_METHODS)
    explicit = levels is not None
    if levels is None:
        levels = log.levels
    elif isinstance(levels, str):
        levels = tuple(x.strip() for x in levels.split(",") if x.strip())
    names = []
    for name in levels:
        as_choice(name, "levels", log.levels)
        if name in names:  # a repeated level would be fitted (and reported) once: say so rather than drop it
            raise UsageValueError(f"`levels` must name each level once, got {name!r} twice")
        names.append(name)
    if not names:
        raise UsageValueError(f"`levels` must name at least one level of the log ({', '.join(log.levels)})")
    data, extra, fitted, skipped = [], [], [], {}
    for name in names:
        code = log.levels.index(name)
        failures = int((log.level == code).sum())
        if failures < min_failures:
            why = f"{failures} failures (fewer than min_failures={min_failures})"
            if explicit:
                raise UsageValueError(f"`levels`: level {name!r} has {why}; it cannot be fitted")
            skipped[name] = why
            continue
        x, c, w, units = _level_data(log, code)
        lx, fail, ww, d, sf = _data_iv(x, c, w)
        data.append((lx, fail, ww, d, sf))
        extra.append({"units": units, "failures": failures, "censored": round((ww * ~fail).sum()),
                      "exposure_s": float((ww * np.exp(lx)).sum())})
        fitted.append(name)
    if not fitted:
        raise UsageValueError(f"no level of {log.source!r} has at least min_failures={min_failures} failures")
    fits = {}
    if shared_shape:
        try:
            k, b, cov, _ = _fit_shared(data)
        except UsageValueError as e:
            raise UsageValueError(f"the levels {fitted} of {log.source!r} fitted with one shape: {e}") from None
        for L, ex in enumerate(extra):
            lx, fail, w, d, sf = data[L]
            sz = _weibull_sums(k, lx, fail, w, b[L])[0]
            ex["loglik"] = d * math.log(k) - d * k * b[L] + (k - 1) * sf - sz
        fits = _make_fits(fitted, k, b, cov, extra, level, ci, data)
    else:
        for L, name in enumerate(fitted):
            try:
                k, b, cov, loglik = _fit_shared([data[L]])
            except UsageValueError as e:  # say which level's data the fit failed on
                raise UsageValueError(f"level {name!r} of {log.source!r}: {e}") from None
            fits.update(_make_fits([name], k, b, cov, [{**extra[L], "loglik": loglik}], level, ci, [data[L]]))
    return LogFit(fits, skipped, shared_shape, log.duration_s, log.topology, log.source)


# --------------------------------------------------------------------------------------------- generators
def _weibull_params_iv(weibull, topology):
    if not isinstance(weibull, dict) or not weibull:
        raise UsageTypeError("`weibull` must be a non-empty dict level -> (shape, mean_s)")
    out = {}
    for name, spec in weibull.items():
        as_choice(name, "weibull level", log_levels(topology))
        if not isinstance(spec, (tuple, list)) or len(spec) != 2:
            raise UsageValueError(f"`weibull[{name!r}]` must be (shape, mean_s), got {spec!r}")
        shape = _shape_iv(spec[0], f"weibull[{name!r}] shape")  # the failure models' range
        mean = as_float(spec[1], f"weibull[{name!r}] mean_s", positive=True)
        out[name] = (shape, mean)
    return out


def _renewals_bound(t, k, mean):
    """An upper estimate of the mean number of renewals in ``[0, t]`` of Weibull(``k``) lifetimes of the given
    mean: ``min(t / mean + max(CV^2, 1), 1 / P(X > t))``, ``CV^2 = Gamma(1 + 2/k) / Gamma(1 + 1/k)^2 - 1``."""
    cv2 = math.exp(min(700.0, math.lgamma(1.0 + 2.0 / k) - 2.0 * math.lgamma(1.0 + 1.0 / k))) - 1.0
    z = (t / weibull_scale(mean, k)) ** k  # -log P(X > t)
    return min(t / mean + max(cv2, 1.0), math.exp(min(z, 700.0)))


def synthetic_log(topology: Topology, weibull: dict, duration_s: float, *, repair_s: float | None = None,
                  rng=None) -> FailureLog:
    """A synthetic failure log: every unit of each listed level is a Weibull renewal process over the window.

    Parameters
    ----------
    topology : Topology
    weibull : dict
        ``level -> (shape, mean_s)``: the lifetime law of one unit at that level (levels not listed never fail).
    duration_s : float
        Window length (the log's ``duration_s``).
    repair_s : float, optional
        A constant repair time written in the ``repair_s`` column (default: no such column).
    rng : None, int >= 0, list of them, SeedSequence or Generator
        The randomness (``None``: fresh entropy). A Generator is used as it is and advanced; numpy's other seed
        forms (arrays, bit generators, ``RandomState``) are refused with a :class:`UsageTypeError`.

    Returns
    -------
    FailureLog
        Rows sorted by time (ties: level order, then unit).

    Notes
    -----
    Exactly the model :func:`fit_failure_log` assumes: each unit new at 0, renewed at every failure, its failures
    ``t_j = x_1 + ... + x_j <= duration_s`` with iid ``x ~ Weibull(shape, lam)``, ``lam = mean / Gamma(1 + 1/k)``
    -- except that a lifetime too short to move the float clock (``t_j + x == t_j``, at shapes near 0.05) gives no
    second event at the same time: the log would repeat its row, which a log may not.
    Levels are drawn in the order of ``log_levels(topology)``, units in index order, in rounds.

    Examples
    --------
    >>> log = synthetic_log(Topology(64, 8), {"gpu": (0.8, 1e6)}, 5e5, rng=1)
    >>> bool(np.all(np.diff(log.time_s) >= 0)), log.duration_s
    (True, 500000.0)
    """
    topology = _topology_iv(topology)
    weibull = _weibull_params_iv(weibull, topology)
    duration_s = as_float(duration_s, "duration_s", positive=True, max_value=MAX_TIME_S)
    if repair_s is not None:
        repair_s = as_float(repair_s, "repair_s", nonnegative=True)
    rng = generator(rng)
    levels = log_levels(topology)
    # failures per unit: a renewal process has about duration / mean plus a constant, (CV^2 - 1) / 2 (2 at k = 0.5,
    # 14 at k = 0.3), and no more than the lifetimes drawn until one outlasts the window, 1 / P(X > duration) on
    # average (the tighter bound at small k). Each failure is a time, a level and a unit, drawn in rounds and sorted
    # (64 bytes is generous): refuse a log beyond the memory budget before drawing it
    expected = sum(topology.unit_count(name) * _renewals_bound(duration_s, shape, mean)
                   for name, (shape, mean) in weibull.items())
    check_memory(64 * expected, lambda: f"a synthetic log of about {expected:.3g} failures",
                 "a shorter `duration_s`, longer lifetimes or fewer units need less")
    t_all, lv_all, u_all = [], [], []
    for code, name in enumerate(levels):
        if name not in weibull:
            continue
        shape, mean = weibull[name]
        lam = weibull_scale(mean, shape)
        n = topology.unit_count(name)
        clock = lam * rng.weibull(shape, size=n)
        units = np.arange(n, dtype=np.int64)
        while units.size:
            hit = clock <= duration_s
            units, clock = units[hit], clock[hit]
            t_all.append(clock.copy())
            u_all.append(units.copy())
            lv_all.append(np.full(units.size, code, dtype=np.int64))
            clock = clock + lam * rng.weibull(shape, size=units.size)
    t = np.concatenate(t_all) if t_all else np.zeros(0)
    lv = np.concatenate(lv_all) if lv_all else np.zeros(0, np.int64)
    u = np.concatenate(u_all) if u_all else np.zeros(0, np.int64)
    order = np.lexsort((u, lv, t))
    if order.size == 0:
        raise UsageValueError("the synthetic log has no events: lengthen `duration_s` or shorten the lifetimes")
    # a lifetime below the resolution of the float clock (shapes near 0.05) repeats its unit's last failure time:
    # one observable event, and a log may not repeat an event
    ts, ls, us = t[order], lv[order], u[order]
    order = order[np.concatenate([[True], (ts[1:] != ts[:-1]) | (ls[1:] != ls[:-1]) | (us[1:] != us[:-1])])]
    rep = None if repair_s is None else np.full(order.size, repair_s)
    return failure_log_from_arrays(t[order], np.asarray(levels, dtype=object)[lv[order]], u[order], topology,
                                   repair_s=rep, duration_s=duration_s, source="<synthetic>")


def _event_units(ev: FailureEvents, topology: Topology):
    """A ``(level, unit)`` per event that kills exactly the event's groups on replay: a GPU of the group for a
    single-group event, else a domain whose live groups are the killed set (searched node, rack, ... upwards)."""
    first_gpu = np.full(topology.n_groups, -1, dtype=np.int64)
    gog = topology.group_of_gpu()
    idx = np.arange(topology.n_gpus - 1, -1, -1)
    first_gpu[gog[idx]] = idx
    maps = {}
    for name in _topology.DOMAIN_LEVELS:
        ptr, groups = topology.domain_groups(name)
        dom = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
        order = np.argsort(groups, kind="stable")
        gptr = np.zeros(topology.n_groups + 1, dtype=np.int64)
        np.cumsum(np.bincount(groups, minlength=topology.n_groups), out=gptr[1:])
        maps[name] = (ptr, groups, gptr, dom[order])
    dead = np.zeros(topology.n_groups, dtype=bool)
    out = []
    for e in range(len(ev)):
        k = np.sort(ev.killed(e))
        if k.size == 1:
            out.append(("gpu", int(first_gpu[k[0]])))
        else:
            found = None
            for name, (ptr, groups, gptr, doms) in maps.items():
                for d in doms[gptr[k[0]]:gptr[k[0] + 1]]:
                    g = groups[ptr[d]:ptr[d + 1]]
                    g = g[~dead[g]]
                    if g.size == k.size and np.array_equal(g, k):
                        found = (name, int(d))
                        break
                if found:
                    break
            if found is None:  # pragma: no cover - every multi-group event of the samplers is a domain event
                raise RuntimeError(f"no unit of the topology kills exactly groups {k.tolist()}")
            out.append(found)
        dead[k] = True
    return out


def sampled_failure_log(failures, topology: Topology, layout, reps: int, *, r: int | None = None,
                        rng=None) -> FailureLog:
    """The event streams of :func:`spare_mc.overhead_mc` written as one failure log.

    Draws ``reps`` streams exactly as ``overhead_mc(layout, reps, failures=failures, topology=topology, rng=rng)``
    does (:func:`spare_mc.sample_events` per replication, one generator), cuts each at its first wipe-out under
    ``layout``, names a unit for every event (a GPU of the group for a single-group event, else the domain whose live
    groups it killed) and lays the streams end to end: stream ``i`` starts at the time of stream ``i - 1``'s
    wipe-out. Replaying the log (:func:`replay_log`) gives back the sampler's per-replication ``T``, masked failures,
    wipe-out times (to rounding of the sums) and ReCtlr statistics.

    Parameters
    ----------
    failures : PerGPU or DomainFailures
    topology : Topology
    layout : Layout, ReplicaSets or {"cyclic", "sidon", "block"}
    reps : int
    r : int, optional
        With a layout name.
    rng : None, int >= 0, list of them, SeedSequence or Generator
        The randomness (``None``: fresh entropy). A Generator is used as it is and advanced; numpy's other seed
        forms (arrays, bit generators, ``RandomState``) are refused with a :class:`UsageTypeError`.

    Returns
    -------
    FailureLog
        With ``duration_s`` the last wipe-out time (no incomplete epoch).
    """
    topology = _topology_iv(topology)
    if isinstance(failures, UniformOrder) or not isinstance(failures, (PerGPU, DomainFailures)):
        raise UsageTypeError(f"`failures` must be PerGPU or DomainFailures (a model with units and a clock), got "
                             f"{type(failures).__name__}")
    layout = _layout_iv(layout, None, r, topology)
    reps = as_int(reps, "reps", min_value=1)
    rng = generator(rng)
    offset = 0.0
    t_all, lv_all, u_all = [], [], []
    for _ in range(reps):
        ev = sample_events(failures, topology, rng=rng)
        T = int(_replay(ev.ptr, ev.groups, layout)["T"][0])
        cut = FailureEvents(ev.times[:T], ev.ptr[:T + 1], ev.groups[:ev.ptr[T]])
        units = _event_units(cut, topology)
        t_all.append(offset + cut.times)
        lv_all += [x[0] for x in units]
        u_all += [x[1] for x in units]
        offset = float(t_all[-1][-1])
    comments = ((f"sampled by spare_mc.sampled_failure_log: {reps} streams of {failures.to_dict()} on "
                f"{topology.to_dict()}, each cut at its wipe-out under the {layout.kind} layout (r={layout.r})"),)
    log = failure_log_from_arrays(np.concatenate(t_all), lv_all, np.asarray(u_all, dtype=np.int64), topology,
                                  duration_s=offset, source="<sampled>")
    return FailureLog(log.time_s, log.level, log.unit, None, log.duration_s, topology, log.levels, "<sampled>",
                      comments)


#: The shipped example: topology, per-level Weibull laws, window and seed.
EXAMPLE = {"topology": {"n_gpus": 256, "n_groups": 32, "gpus_per_node": 8, "nodes_per_rack": 4,
                        "racks_per_power": 2, "placement": "contiguous"},
           "weibull": {"gpu": (0.78, 2.0e6), "node": (0.78, 1.0e7), "rack": (0.78, 5.0e6)},
           "duration_s": 2_592_000.0, "repair_s": 3600.0, "seed": 20261130}


def example_log_path() -> str:
    """Path of the shipped synthetic example log (``spare_mc/data/example_failure_log.csv``)."""
    return str(resources.files("spare_mc").joinpath("data", "example_failure_log.csv"))


def write_example_log(path) -> FailureLog:
    """Regenerate the shipped example log at ``path`` (deterministic: :data:`EXAMPLE` fixes everything).

    Command (from the repository root)::

        python -c "import spare_mc.logs.failure_logs as f; f.write_example_log('spare_mc/data/example_failure_log.csv')"
    """
    ex = EXAMPLE
    topo = Topology(**ex["topology"])
    log = synthetic_log(topo, ex["weibull"], ex["duration_s"], repair_s=ex["repair_s"], rng=ex["seed"])
    laws = ", ".join(f"{k}: shape {s:g}, mean {m:g} s" for k, (s, m) in ex["weibull"].items())
    comments = (
        "SYNTHETIC failure log (not measured on any cluster), generated by spare_mc.logs.failure_logs.synthetic_log.",
        ("Command: python -c \"import spare_mc.logs.failure_logs as f; "
        "f.write_example_log('spare_mc/data/example_failure_log.csv')\""),
        f"Topology: {ex['topology']}",
        (f"Per-unit Weibull renewal lifetimes ({laws}); power domains never fail; repair_s is a constant "
        f"{ex['repair_s']:g} s; seed {ex['seed']}."),
        "Columns: time_s (s from the log start), level, unit (index at that level), repair_s (s).",
    )
    write_failure_log(path, log, comments=comments)
    return log
