"""A failure log: its form (:class:`FailureLog`, and :class:`TimelineEvents` for the job timeline), the rules
that validate it, reading it from CSV or Parquet and writing it back.

A **failure log** is a table of hardware failures observed on a cluster, one row per failure (docs/failure_logs.md
has the format, the validation rules and the malformed logs tried):

========== ======== =================================================================================================
column     required meaning
========== ======== =================================================================================================
``time_s`` yes      event time, seconds from the start of the log; finite, ``> 0``, non-decreasing down the file
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

The log starts on a fully live system of new units. A GPU failure kills the group of that GPU; a domain failure
(node, rack, ...) kills every group with a GPU in the domain (:meth:`spare_mc.Topology.domain_groups`). An event
that kills no live group is not an event of the job. Replaying a log: :mod:`spare_mc.logs.replay`; fitting failure
models to it: :mod:`spare_mc.logs.fit`; synthetic logs: :mod:`spare_mc.logs.synthetic`.
"""

from __future__ import annotations

import array
import csv
import math
import os
import re
from dataclasses import dataclass

import numpy as np

from .._lib.resources import check_memory
from .._lib.validation import UsageError, UsageTypeError, UsageValueError, as_choice, as_float, in_file
from ..model import topology as _topology
from ..model.failures import FailureEvents
from ..model.topology import Topology
from .epochs import NoTypes, replay_epochs

__all__ = [
    "LOG_COLUMNS",
    "REQUIRED_COLUMNS",
    "FailureLog",
    "TimelineEvents",
    "failure_log_from_arrays",
    "log_format",
    "log_levels",
    "plain_number",
    "read_failure_log",
    "text_lines",
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
        out = replay_epochs(ptr, groups, NoTypes(n))
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
def as_topology(topology):
    """``topology``, checked to be a :class:`Topology`."""
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
        (time_s == 0,  # (-0.0 too) every unit is new at the log start: a failure then has a lifetime of 0
         lambda i: "`time_s` must be > 0: the log starts before its first failure (a failure at time 0 would give "
                   "its unit a lifetime of 0, which no lifetime law has); shift the origin to a moment before "
                   "the first event, or drop the row"),
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
        # sorted by (level, unit, time, row): a repeat follows its first row; a few arrays of n, not np.unique's
        # row-wise copies (which took most of the memory of reading a long log)
        tb = (time_s + 0.0).view(np.int64)  # + 0.0: -0.0 is 0.0
        order = np.lexsort((np.arange(n), tb, unit, level_codes))
        ts, us, cs = tb[order], unit[order], level_codes[order]
        starts = np.ones(n, dtype=bool)
        starts[1:] = (ts[1:] != ts[:-1]) | (us[1:] != us[:-1]) | (cs[1:] != cs[:-1])
        del ts, us, cs
        first_of = np.empty(n, dtype=np.int64)
        first_of[order] = order[np.flatnonzero(starts)][np.cumsum(starts) - 1]
        del order, starts
        rules.append((first_of != np.arange(n),
                      lambda i: f"the event repeats {where(int(first_of[i]))[len(where(None)) + 2:]} (the same "
                                f"time_s, level and unit): a unit fails once at a time; remove the duplicate row"))
    first = [(int(np.argmax(bad)), k) for k, (bad, _) in enumerate(rules) if bad.any()]
    if first:
        i, k = min(first)
        raise UsageValueError(f"{where(i)}: {rules[k][1](i)}")


def _argument(exc):
    """``exc`` marked as about the caller's argument, not the file (:func:`read_failure_log` marks the rest)."""
    exc.file_keys = False
    return exc


def _duration_iv(duration_s, header_duration, last, where):
    d = header_duration if duration_s is None else as_float(duration_s, "duration_s", nonnegative=True)
    if d is None:
        return float(last)
    # the log's own metadata is named as the file's key (never as the command line's --duration-s)
    name, mark = ("metadata `duration_s`", in_file) if duration_s is None else ("`duration_s`", _argument)
    if d > MAX_TIME_S:
        raise mark(UsageValueError(f"{where}: {name} (the observation window end) must be <= {MAX_TIME_S:.6g} s "
                                   f"(the integer-microsecond clock), got {float(d)!r}"))
    if d < last:
        raise mark(UsageValueError(f"{where}: {name} (the observation window end) must be >= the last event time "
                                   f"{float(last)!r}, got {float(d)!r}"))
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
    topology = as_topology(topology)
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


def plain_number(text: str) -> bool:
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
        if not plain_number(value.strip()):
            raise ValueError
        v = float(value.strip())
    except ValueError:
        raise UsageValueError(f"{src}: line {lineno}: metadata `{key}` must be a number, got {value.strip()!r}") \
            from None
    if not math.isfinite(v) or v < 0:
        raise UsageValueError(f"{src}: line {lineno}: metadata `{key}` must be finite and >= 0, got {v!r}")
    meta[key] = (v, lineno)
    return True


#: The longest line a failure log may have (bytes): a row is a few dozen bytes, a comment a sentence or two.
MAX_LINE_BYTES = 1 << 16
#: Bytes read at a time: the reader holds at most this plus one line, whatever the file's size.
_CHUNK_BYTES = 1 << 20
_BREAK = re.compile(rb"\r\n|\r|\n")
#: Memory a data row takes while the log is read (its five numbers and its line number), then as arrays.
_ROW_BYTES = 96


def text_lines(path, src):
    """``(line number, text)`` of each line of a UTF-8 file, read in chunks of :data:`_CHUNK_BYTES` (bounded
    memory, and a signal is acted on between chunks). Line breaks are ``\n``, ``\r\n`` and ``\r`` only
    (``str.splitlines`` also breaks at form feeds, U+2028 and the like, which would shift the line numbers of every
    message and cut a comment in two); a byte-order mark (spreadsheet exports) is dropped. A line longer than
    :data:`MAX_LINE_BYTES`, or bytes that are not UTF-8, are refused at once, naming the line (and the byte)."""
    lineno, pos, buf = 0, 0, b""  # pos: the file offset of buf[0]
    with open(path, "rb") as f:
        while True:
            chunk = f.read(_CHUNK_BYTES)
            buf += chunk
            start = 0
            for m in _BREAK.finditer(buf):
                if chunk and m.end() == len(buf) and buf.endswith(b"\r"):
                    break  # the first half of a '\r\n' perhaps: decided with the next chunk
                lineno += 1
                yield lineno, _decoded(buf[start:m.start()], lineno, pos + start, src)
                start = m.end()
            buf, pos = buf[start:], pos + start
            if len(buf) > MAX_LINE_BYTES:
                raise UsageValueError(f"{src}: line {lineno + 1} is longer than {MAX_LINE_BYTES:,} bytes (no line "
                                      f"break within them): not a failure log in CSV text (a binary file, or line "
                                      f"breaks lost in a conversion)")
            if not chunk:
                break
    if buf:  # the last line, without a line break
        yield lineno + 1, _decoded(buf, lineno + 1, pos, src)


def _decoded(raw: bytes, lineno: int, offset: int, src) -> str:
    """Line ``lineno`` (its bytes ``raw``, at ``offset`` in the file) as text; a byte-order mark opening the file is
    dropped."""
    if offset == 0 and raw.startswith(b"\xef\xbb\xbf"):
        raw, offset = raw[3:], 3
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageValueError(f"{src}: not UTF-8 text (byte {offset + e.start}: {e.reason}; line {lineno}); save the "
                              f"log as UTF-8 CSV") from None


def _read_csv(path, topology, duration_s):
    src = os.fspath(path)
    levels = log_levels(topology)
    index = {name: i for i, name in enumerate(levels)}
    meta, comments, header, cols, commented_header = {}, [], None, None, None
    # compact arrays, not lists of Python numbers: a few dozen bytes a row (a 4-million-row log took 15 times its
    # size when read whole into lists)
    t, codes, bad_level, units, rep, where_line = (array.array("d"), array.array("q"), {}, array.array("q"),
                                                   array.array("d"), array.array("q"))
    for lineno, line in text_lines(path, src):
        if len(t) % 65536 == 65535:  # as the rows accumulate: within the memory budget (--max-memory)
            check_memory((len(t) + 1) * _ROW_BYTES, f"reading the failure log {src} (over {len(t):,} rows so far)",
                         "read a shorter window of the log")
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
            if name in cols and not plain_number(fields_[cols[name]]):
                raise UsageValueError(f"{here}: `{name}` must be written in ASCII characters without '_', got "
                                      f"{fields_[cols[name]]!r}")
        try:
            t.append(float(fields_[cols["time_s"]]))
        except ValueError:
            raise UsageValueError(f"{here}: `time_s` must be a number, got {fields_[cols['time_s']]!r}") from None
        try:
            unit = int(fields_[cols["unit"]])
        except ValueError:
            raise UsageValueError(f"{here}: `unit` must be an integer, got {fields_[cols['unit']]!r}") from None
        if not -(1 << 63) <= unit < 1 << 63:  # beyond int64: surely not a unit of the topology
            raise UsageValueError(f"{here}: `unit` must be a unit index of the topology (0 <= unit < the level's "
                                  f"unit count), got {unit}")
        units.append(unit)
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
    t = np.frombuffer(t, dtype=np.float64) if len(t) else np.zeros(0)
    codes = np.frombuffer(codes, dtype=np.int64) if len(codes) else np.zeros(0, np.int64)
    units = np.frombuffer(units, dtype=np.int64) if len(units) else np.zeros(0, np.int64)
    rep_a = (np.frombuffer(rep, dtype=np.float64) if len(rep) else np.zeros(0)) if "repair_s" in cols else None
    _check_rows(t, codes, lambda i: bad_level.get(i), units, rep_a, topology, levels,
                lambda i: src if i is None else f"{src}: line {where_line[i]} (data row {i + 1})")
    header_d = meta["duration_s"][0] if "duration_s" in meta else None
    d = _duration_iv(duration_s, header_d, t[-1], src)
    return FailureLog(t + 0.0, codes, units, rep_a, d, topology, levels, src, tuple(comments))


def _pyarrow(what):
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise UsageValueError(f"{what} needs pyarrow: install the optional extra, pip install 'spare_mc[parquet]'") \
            from None
    return pyarrow


#: Rows of a Parquet log read at a time (one record batch): its columns take a few MB, whatever the file's size.
_PARQUET_BATCH_ROWS = 1 << 16


def _read_parquet(path, topology, duration_s):
    """A Parquet log read in record batches of :data:`_PARQUET_BATCH_ROWS` rows (``ParquetFile.iter_batches``),
    each checked as it is read: the schema (columns and types) and the metadata before any row, then every batch by
    the row rules of :func:`_check_rows`, so the first bad batch refuses without reading on. The rows are kept in
    arrays sized from the file's row count, which is checked against the memory budget before they are read."""
    src = os.fspath(path)
    pa = _pyarrow(f"reading the Parquet log {src}")
    if not os.path.exists(path):  # pyarrow's error would carry only the path
        raise FileNotFoundError(2, "No such file or directory", src)

    def unreadable(e):  # not Parquet (a CSV named .parquet, an empty or damaged file)
        return UsageValueError(f"{src}: not a readable Parquet file ({str(e).strip().splitlines()[0]}); a log whose "
                               f"name ends {' or '.join(_PARQUET_SUFFIXES)} is read as Parquet, any other as CSV")

    try:
        pfile = pa.parquet.ParquetFile(path)
    except (pa.ArrowException, OSError) as e:
        raise unreadable(e) from None
    with pfile:
        schema = pfile.schema_arrow
        names = schema.names
        dup = sorted({x for x in names if names.count(x) > 1})
        if dup:  # pyarrow's read would fail with "Multiple matches for FieldRef"
            raise UsageValueError(f"{src}: the table has two columns named `{dup[0]}`")
        unknown = [x for x in names if x not in LOG_COLUMNS]
        if unknown:
            raise UsageValueError(f"{src}: unknown column `{unknown[0]}` (columns: {', '.join(LOG_COLUMNS)})")
        missing = [x for x in REQUIRED_COLUMNS if x not in names]
        if missing:
            raise UsageValueError(f"{src}: the table lacks the required column `{missing[0]}`")
        for name in names:
            typ = schema.field(name).type
            number = pa.types.is_integer(typ) or pa.types.is_floating(typ)
            ok = {"time_s": number, "repair_s": number or pa.types.is_null(typ), "unit": pa.types.is_integer(typ),
                  "level": (pa.types.is_string(typ) or pa.types.is_large_string(typ)
                            or (pa.types.is_dictionary(typ) and (pa.types.is_string(typ.value_type)
                                                                 or pa.types.is_large_string(typ.value_type))))}[name]
            if not ok:
                expected = {"unit": "an integer", "level": "a string"}.get(name, "a number")
                raise UsageValueError(f"{src}: column `{name}` has type {typ}, expected {expected}")
        meta = schema.metadata or {}
        header_d = None
        if b"duration_s" in meta:
            try:
                header_d = float(meta[b"duration_s"])
            except ValueError:
                raise UsageValueError(f"{src}: metadata `duration_s` must be a number, got {meta[b'duration_s']!r}") \
                    from None
            if not math.isfinite(header_d) or header_d < 0:
                raise UsageValueError(f"{src}: metadata `duration_s` must be finite and >= 0, got {header_d!r}")
        comments = tuple(meta[b"comments"].decode("utf-8", "replace").split("\n")) if b"comments" in meta else ()
        n_rows = pfile.metadata.num_rows
        check_memory(n_rows * _ROW_BYTES, f"reading the Parquet log {src} ({n_rows:,} rows)",
                     "read a shorter window of the log")
        levels = log_levels(topology)
        index = {name: i for i, name in enumerate(levels)}
        has_rep = "repair_s" in names
        t, codes, units = np.empty(n_rows), np.empty(n_rows, np.int64), np.empty(n_rows, np.int64)
        rep = np.empty(n_rows) if has_rep else None
        bad_level = {}
        # rows of the last time read (their global row numbers): a repeat or a step back across a batch boundary
        # is checked against them; at most one per unit of the topology, since a repeat is refused
        tail = np.zeros(0, np.int64)
        done = 0
        try:
            batches = pfile.iter_batches(batch_size=_PARQUET_BATCH_ROWS, columns=names)
            for batch in batches:
                m = batch.num_rows
                if done + m > n_rows:  # the row count of the footer was wrong: a damaged file
                    raise UsageValueError(f"{src}: not a readable Parquet file (more rows than the {n_rows:,} its "
                                          f"footer declares)")
                _parquet_batch(pa, batch, done, src, index, bad_level, t, codes, units, rep)
                rows = np.concatenate([tail, np.arange(done, done + m)])
                _check_rows(t[rows], codes[rows], lambda i, rows=rows: bad_level.get(int(rows[i])), units[rows],
                            None if rep is None else rep[rows], topology, levels,
                            lambda i, rows=rows: src if i is None else f"{src}: data row {int(rows[i]) + 1}")
                done += m
                tail = rows[t[rows] == t[done - 1]]
        except (pa.ArrowException, OSError) as e:
            raise unreadable(e) from None
    if done != n_rows:
        raise UsageValueError(f"{src}: not a readable Parquet file ({done:,} rows where its footer declares "
                              f"{n_rows:,})")
    if n_rows == 0:
        _check_rows(t, codes, None, units, rep, topology, levels, lambda i: src)
    # the window end: the argument, else the metadata (each named as what it is when it is wrong)
    d = _duration_iv(duration_s, header_d, t[-1], src)
    return FailureLog(t + 0.0, codes, units, rep, d, topology, levels, src, comments)


def _parquet_batch(pa, batch, offset, src, index, bad_level, t, codes, units, rep):
    """Batch ``batch`` (rows ``offset ...``) of a Parquet log into the arrays, refusing a null in a required column,
    a ``uint64`` unit beyond int64 and a NaN repair time (null is unknown)."""
    m = batch.num_rows
    for name in batch.schema.names:
        col = batch.column(name)
        null = col.is_null().to_numpy(zero_copy_only=False) if col.null_count else None
        if name != "repair_s" and null is not None:
            raise UsageValueError(f"{src}: data row {offset + int(np.argmax(null)) + 1}: `{name}` is missing (null)")
        if name == "time_s":
            t[offset:offset + m] = col.cast(pa.float64()).to_numpy(zero_copy_only=False)
        elif name == "unit":
            u = col.to_numpy(zero_copy_only=False)
            if u.dtype.kind == "u" and u.size and u.max() >= 1 << 63:  # beyond int64: no unit (and no wrapping)
                i = int(np.argmax(u >= 1 << 63))
                raise UsageValueError(f"{src}: data row {offset + i + 1}: `unit` must be a unit index of the "
                                      f"topology (0 <= unit < the level's unit count), got {int(u[i])}")
            units[offset:offset + m] = u
        elif name == "level":
            enc = col if pa.types.is_dictionary(col.type) else col.dictionary_encode()
            words = enc.dictionary.to_pylist()
            lut = np.array([index.get(w, -1) for w in words] or [-1], dtype=np.int64)
            idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            codes[offset:offset + m] = lut[idx]
            for i in np.flatnonzero(lut[idx] < 0)[:1]:  # the first unknown level of the batch: its text
                bad_level[offset + int(i)] = words[idx[i]]
        else:  # repair_s: null is 'unknown'; a NaN is refused as in a CSV log (where 'nan' is not empty)
            r = col.cast(pa.float64()).to_numpy(zero_copy_only=False)
            nan = np.isnan(r) if null is None else np.isnan(r) & ~null
            if nan.any():
                raise UsageValueError(f"{src}: data row {offset + int(np.argmax(nan)) + 1}: `repair_s` must be finite "
                                      f"and >= 0 (or null), got nan")
            rep[offset:offset + m] = r


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
    >>> from spare_mc.logs.synthetic import example_log_path
    >>> log = read_failure_log(example_log_path(), Topology(256, 32, nodes_per_rack=4, racks_per_power=2))
    >>> log.duration_s
    2592000.0
    """
    topology = as_topology(topology)
    if not isinstance(path, (str, os.PathLike)):
        raise UsageTypeError(f"`path` must be a path, got {type(path).__name__}")
    if not os.path.exists(path):  # the caller's input, as for a dataset (spare_mc.sweep.storage.open_dataset)
        raise UsageValueError(f"failure log not found: {os.fspath(path)}")
    if os.path.isdir(path):
        raise UsageValueError(f"{os.fspath(path)} is a directory, not a failure log file")
    if duration_s is not None:
        duration_s = as_float(duration_s, "duration_s", nonnegative=True)
    try:
        if os.fspath(path).lower().endswith(_PARQUET_SUFFIXES):
            return _read_parquet(path, topology, duration_s)
        return _read_csv(path, topology, duration_s)
    except UsageError as exc:  # about the file's content: named by its columns and metadata keys, never as flags
        if getattr(exc, "file_keys", None) is None:
            in_file(exc)
        raise


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


def log_format(path) -> str:
    """``"parquet"`` for a path ending ``.parquet`` or ``.pq`` (any case), else ``"csv"``: how a log is read and
    written."""
    return "parquet" if os.fspath(path).lower().endswith(_PARQUET_SUFFIXES) else "csv"


def write_failure_log(path, log: FailureLog, *, comments=None, file_format=None) -> None:
    """Write ``log`` as CSV or Parquet (``file_format``; default :func:`log_format` of ``path``, by its suffix), with
    ``duration_s`` metadata and ``comments`` (default: the log's own) as ``#`` lines (Parquet: the schema metadata
    keys ``duration_s`` and ``comments``). Times are written with ``repr`` so that reading gives back the same
    floats."""
    if not isinstance(log, FailureLog):
        raise UsageTypeError(f"`log` must be a FailureLog, got {type(log).__name__}")
    if not isinstance(path, (str, os.PathLike)):
        raise UsageTypeError(f"`path` must be a path, got {type(path).__name__}")
    comments = log.comments if comments is None else _comments_iv(comments)
    fmt = log_format(path) if file_format is None else as_choice(file_format, "file_format", ("csv", "parquet"))
    names = log.level_names()
    if fmt == "parquet":
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
