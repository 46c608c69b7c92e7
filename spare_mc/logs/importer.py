"""Importing an operator's failure log (``spare-mc log import``): a raw CSV in the operator's own columns, times
and unit names, cleaned into a canonical spare_mc log (:mod:`spare_mc.logs.failure_log`) with a report of every row
it dropped or changed.

docs/failure_logs.md ("Importing an operator's log") has the rules with an example. In short:

**The column mapping** (columns are named by the raw file's header line; other columns are ignored and listed):

- the failure time: ``time_column`` in ``time_format``, or a ``start_column``/``end_column`` pair (failure at the
  start, repair time ``end - start``; an empty end is an unknown repair). ``time_format`` is a unit of numbers
  (:data:`TIME_UNITS`: ``s``, ``ms``, ``us``, ``min``, ``h``, ``d``), ``epoch`` (seconds since 1970-01-01 UTC),
  ``iso`` (ISO 8601 dates, :meth:`datetime.datetime.fromisoformat`) or a :func:`time.strptime` format
  (``"%Y-%m-%d %H:%M"``; a spreadsheet's ``"12/6/2026 9:05"`` is ``"%m/%d/%Y %H:%M"``). Dates without a UTC
  offset are read as UTC (no daylight-saving jumps); dates with one are converted to UTC.
- the unit: ``unit_column``, its names mapped to the topology's indices by ``unit_names`` (:data:`UNIT_NAMES`):
  ``suffix`` (default: the trailing digits, ``node0123`` -> 123, ``cn-17`` -> 17, ``42`` -> 42), ``index`` (the
  field is the index itself), ``first-seen`` (0, 1, 2, ... in order of first appearance in the raw file: an
  arbitrary placement, for logs where the units' positions do not matter), or ``unit_map_file``, a CSV
  ``name,unit`` (optionally ``level``). Mappings are per level; two names mapped to one unit (``node0123`` and
  ``node123`` by their suffix; one unit twice in a mapping file) are refused: the map is ambiguous.
- the level: a constant ``level`` for every row, or ``level_column`` (values are the log's levels: ``gpu``,
  ``node``, ``rack``, ...).
- the repair time: ``repair_column`` in ``repair_unit`` (empty: unknown), or the start/end pair, or none.

**The time origin and the window.** The origin is ``start`` (a value in ``time_format``), else the raw file's
comment ``# start: VALUE``, else **the first event less one resolution step**: an event at time 0 would have a
lifetime of 0, which the Weibull fit refuses, so the first event lands at one step (60 s at minute resolution).
With an explicit origin an event at it is refused (give an earlier start) and events before it are dropped and
counted. The window end is ``end`` (a value in ``time_format``) or ``duration_s`` (seconds from the origin), else
the raw file's comment ``# end: VALUE`` or ``# duration_s: VALUE``, else the last event; events after it are
dropped and counted. The report says where each came from.

**Cleaning**, each counted in :attr:`ImportedLog.report`:

- rows are sorted by time, then level, then unit (``reordered``: rows that came after a later event in the raw
  file);
- exact duplicates (same time, level and unit) keep one row (``duplicates``: rows removed), with the **longest**
  known repair time of the copies (``duplicates_conflicting_repair``: duplicate sets whose repair times differ,
  unknown against known included);
- a repair that outlasts the unit's next failure is cut to end at it (``repair_truncated``);
- ties (events of different units at one time) are kept; the report gives the number of tied timestamps and rows
  and the detected resolution (the largest of 1 d, 1 h, 1 min, 1 s, 1 ms, 1 us that every event time is a whole
  multiple of);
- units that never fail are no row to clean: the report gives, per level, the units of the topology, the units
  seen and the difference;
- a row with a missing or unreadable field (a time that does not parse, an empty unit, an unknown level or unit
  name, a unit beyond the topology, a negative repair, an end before its start, a wrong field count) is refused,
  naming its line, the column and the value; with ``drop_bad_rows`` it is dropped and counted by reason.

The raw file is read as a stream (the canonical reader's chunked lines: bounded memory, a binary file refused at its
first long line); the kept rows are held in compact arrays (the sort needs them all) and checked against the
memory budget (``--max-memory``) as they accumulate.
"""

from __future__ import annotations

import array
import csv
import datetime as _dt
import math
import os
import re
from dataclasses import dataclass

import numpy as np

from .._lib.resources import check_memory
from .._lib.validation import UsageTypeError, UsageValueError, as_bool, as_choice, as_float
from ..model.topology import Topology
from .failure_log import (
    MAX_TIME_S,
    FailureLog,
    as_topology,
    failure_log_from_arrays,
    log_levels,
    plain_number,
    text_lines,
)

__all__ = ["TIME_UNITS", "UNIT_NAMES", "ImportedLog", "import_failure_log"]

#: Number formats of a time column: seconds per unit.
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "min": 60.0, "h": 3600.0, "d": 86400.0}
#: How unit names become unit indices (or ``unit_map_file``).
UNIT_NAMES = ("suffix", "index", "first-seen")
#: Resolutions the import detects, coarsest first (seconds).
RESOLUTIONS = (86400.0, 3600.0, 60.0, 1.0, 1e-3, 1e-6)
#: Keys of the raw file's ``# key: value`` comment lines that the import reads.
RAW_METADATA = ("start", "end", "duration_s")
#: Memory a kept row takes through the import: its five numbers as arrays, and the sort's indices and copies.
_ROW_BYTES = 160
#: Raw lines listed per reason in the report (the counts are complete).
_EXAMPLES = 10
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_SUFFIX = re.compile(r"(\d+)\Z")


@dataclass(frozen=True, eq=False)
class ImportedLog:
    """The result of :func:`import_failure_log`.

    Attributes
    ----------
    log : FailureLog
        The canonical log; its ``comments`` record the source, the mapping, the origin, the window and the counts
        (:func:`spare_mc.logs.failure_log.write_failure_log` writes them as ``#`` lines).
    report : dict
        Every dropped or changed row counted by reason (``counts``; ``lines``: the first raw lines of each), the
        mapping, the origin and window with where they came from, the resolution, ties and units seen.
    """

    log: FailureLog
    report: dict


class _TimeParser:
    """Text of a time field -> seconds (from the epoch for dates, else in the unit's scale)."""

    def __init__(self, time_format):
        if not isinstance(time_format, str):
            raise UsageTypeError(f"`time_format` must be a string, got {type(time_format).__name__}")
        self.format = time_format
        self.kind = ("number" if time_format in TIME_UNITS or time_format == "epoch" else
                     "iso" if time_format == "iso" else "strftime" if "%" in time_format else None)
        if self.kind is None:
            raise UsageValueError(f"`time_format` must be a unit of numbers ({', '.join(TIME_UNITS)}), 'epoch' "
                                  f"(seconds since 1970-01-01 UTC), 'iso' (ISO 8601 dates) or a strftime format with "
                                  f"'%' directives such as '%Y-%m-%d %H:%M', got {time_format!r}")
        if self.kind == "strftime":
            try:
                _dt.datetime.strptime("", time_format)
            except ValueError as e:
                if "directive" in str(e) or "stray" in str(e):
                    raise UsageValueError(f"`time_format` {time_format!r} is not a valid strftime format ({e})") \
                        from None
        self.scale = TIME_UNITS.get(time_format, 1.0)

    @property
    def is_date(self) -> bool:
        return self.kind != "number"

    def __call__(self, text: str) -> float:
        """Seconds, or ValueError with the reason."""
        if self.kind == "number":
            if not plain_number(text):
                raise ValueError("not a number in ASCII digits")
            v = float(text) * self.scale
            if not math.isfinite(v):
                raise ValueError("not finite")
            return v
        d = _dt.datetime.fromisoformat(text) if self.kind == "iso" else _dt.datetime.strptime(text, self.format)
        return _epoch_s(d)

    def value(self, value, name: str) -> float:
        """An argument (``start``, ``end``) or metadata value in this format, as seconds."""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise UsageTypeError(f"`{name}` must be a string or a number, got {type(value).__name__}")
        if not isinstance(value, str):
            if self.is_date:
                raise UsageValueError(f"`{name}` must be a date in the time format {self.format!r}, got {value!r}")
            value = repr(value)
        text = value.strip()
        try:
            return self(text)
        except ValueError as e:
            if self.format == "epoch":  # seconds since the epoch: a date is clearer to give
                try:
                    return _epoch_s(_dt.datetime.fromisoformat(text))
                except ValueError:
                    pass
            raise UsageValueError(f"`{name}` must be a time in the time format {self.format!r} (`time_format`), got "
                                  f"{value!r} ({e})") from None

    def show(self, seconds: float) -> str:
        """``seconds`` written back in this format (dates in UTC, ISO 8601)."""
        if self.is_date or self.format == "epoch":
            d = _EPOCH + _dt.timedelta(seconds=seconds)
            return d.isoformat(sep=" ").replace("+00:00", " UTC") + (f" (epoch {seconds!r} s)"
                                                                     if self.format == "epoch" else "")
        return f"{seconds / self.scale!r} {self.format}"


def _epoch_s(d: _dt.datetime) -> float:
    if d.tzinfo is None:
        d = d.replace(tzinfo=_dt.UTC)
    return (d - _EPOCH).total_seconds()


class _UnitNames:
    """Unit names -> indices at each level: by suffix, as indices, first seen, or a mapping file. Refuses two names
    for one unit (an ambiguous map)."""

    def __init__(self, unit_names, unit_map_file, levels, topology, src):
        self.levels = levels
        self.file = None
        self.rule = unit_names
        self.name_of = {}  # (level code, index) -> (name, line): ambiguity
        self.index_of = {}  # (level code, name) -> index
        self.next_free = {}  # first-seen counters
        if unit_map_file is not None:
            self.rule = "file"
            self.file = os.fspath(unit_map_file)
            self._read_map(topology)

    def _read_map(self, topology):
        path = self.file
        if not os.path.isfile(path):
            raise UsageValueError(f"`unit_map_file` {path} is not a file")
        header = None
        for lineno, line in text_lines(path, path):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                fields_ = [x.strip() for x in next(csv.reader([line], strict=True))]
            except csv.Error as e:
                raise UsageValueError(f"{path}: line {lineno}: not a valid CSV line ({e})") from None
            if header is None:
                if not {"name", "unit"} <= set(fields_) or not set(fields_) <= {"name", "unit", "level"}:
                    raise UsageValueError(f"{path}: line {lineno}: the mapping file's header must be name,unit "
                                          f"(and optionally level), got {line.strip()!r}")
                header = {x: i for i, x in enumerate(fields_)}
                continue
            if len(fields_) != len(header):
                raise UsageValueError(f"{path}: line {lineno}: expected {len(header)} fields, got {len(fields_)}")
            name, text = fields_[header["name"]], fields_[header["unit"]]
            lv = fields_[header["level"]] if "level" in header else None
            codes = range(len(self.levels)) if lv is None else [self.levels.index(lv)] if lv in self.levels else []
            if not codes:
                raise UsageValueError(f"{path}: line {lineno}: level {lv!r} is not one of {list(self.levels)}")
            if not name or not (text.isascii() and text.isdigit()):
                raise UsageValueError(f"{path}: line {lineno}: expected a name and a unit index >= 0, got "
                                      f"{name!r}, {text!r}")
            for code in codes:
                if (code, name) in self.index_of:
                    raise UsageValueError(f"{path}: line {lineno}: name {name!r} is mapped twice")
                count = topology.unit_count(self.levels[code])
                if int(text) >= count and lv is not None:
                    raise UsageValueError(f"{path}: line {lineno}: unit {text} is beyond the {count} "
                                          f"{self.levels[code]}s of the topology")
                self._claim(code, int(text), name, f"{path} line {lineno}",
                            None if lv is not None else f"unit {int(text)}")
                self.index_of[(code, name)] = int(text)
        if header is None:
            raise UsageValueError(f"{path}: the mapping file has no header line (name,unit)")

    def _claim(self, code, index, name, where, what=None):
        prior = self.name_of.setdefault((code, index), (name, where))
        if prior[0] != name:
            how = {"suffix": "by their numeric suffix", "index": "as indices", "file": "by the mapping file"}
            fix = ("fix the mapping file so that it names each unit once" if self.rule == "file" else
                   "give a mapping file (`unit_map_file`) that names each unit once")
            raise UsageValueError(f"the unit names {prior[0]!r} ({prior[1]}) and {name!r} ({where}) both map to "
                                  f"{what or f'{self.levels[code]} {index}'} {how.get(self.rule, '')}: the mapping is "
                                  f"ambiguous; {fix}")

    def __call__(self, code, name, where, count):
        """The index of ``name`` at level ``code`` (of ``count`` units), or ValueError with the reason (a bad row;
        :class:`_Beyond` for an index beyond the topology). Only names within the topology are remembered: at most
        one per unit, whatever the file's size."""
        key = (code, name)
        got = self.index_of.get(key)
        if got is not None:
            if got >= count:
                raise _Beyond(got)
            return got
        if self.rule == "file":
            raise ValueError(f"unit name {name!r} is not in the mapping file {self.file}")
        if self.rule == "first-seen":
            index = self.next_free.get(code, 0)
            if index >= count:
                raise _Beyond(index)
            self.next_free[code] = index + 1
        else:
            m = _SUFFIX.search(name) if self.rule == "suffix" else None
            if self.rule == "index":
                if not (name.isascii() and name.isdigit()):
                    raise ValueError(f"unit {name!r} is not an index (a whole number >= 0; `unit_names`='index')")
                index = int(name)
            elif m is None:
                raise ValueError(f"unit name {name!r} has no numeric suffix (`unit_names`='suffix'; give a mapping "
                                 f"file, `unit_map_file`)")
            else:
                index = int(m.group(1))
            if index >= count:
                raise _Beyond(index)
        self._claim(code, index, name, where)
        self.index_of[key] = index
        return index


class _Beyond(ValueError):
    """A unit name whose index lies beyond the level's units (``args[0]``: the index)."""


def _resolution(t) -> float | None:
    """The largest of :data:`RESOLUTIONS` that every value of ``t`` (seconds) is a whole multiple of, else None."""
    for r in RESOLUTIONS:
        x = t / r
        if np.all(np.abs(x - np.rint(x)) <= 1e-6 + 8 * np.finfo(np.float64).eps * np.abs(x)):
            return r
    return None


def _show_s(r) -> str:
    return {86400.0: "1 d", 3600.0: "1 h", 60.0: "1 min", 1.0: "1 s", 1e-3: "1 ms", 1e-6: "1 us"}.get(r, f"{r!r} s")


def import_failure_log(raw, topology: Topology, *, unit_column: str, time_column: str | None = None,
                       time_format: str = "s", start_column: str | None = None, end_column: str | None = None,
                       unit_names: str | None = None, unit_map_file=None, level: str | None = None,
                       level_column: str | None = None, repair_column: str | None = None, repair_unit: str = "s",
                       start=None, end=None, duration_s=None, drop_bad_rows: bool = False) -> ImportedLog:
    """Read an operator's raw CSV failure log, map its columns, clean it and return a canonical log and a report.

    Parameters
    ----------
    raw : str or path-like
        The raw CSV (UTF-8; ``#`` comment lines; the first other line names the columns).
    topology : Topology
        The cluster: it numbers the units and bounds them.
    unit_column : str
        Column of the failed unit's name or index.
    time_column, time_format : str
        Column of the failure time and its format: a unit of numbers (``s``, ``ms``, ``us``, ``min``, ``h``,
        ``d``), ``epoch``, ``iso`` or a strftime format (module docstring). Exclusive with ``start_column``.
    start_column, end_column : str, optional
        A start/end pair in ``time_format`` instead: the failure at the start, repair ``end - start``.
    unit_names : {"suffix", "index", "first-seen"}, optional
        How names become indices (default ``suffix``); or ``unit_map_file``, a CSV ``name,unit[,level]``.
    level, level_column : str
        The level of every row, or the column that gives it (exactly one of them).
    repair_column : str, optional
        Repair times in ``repair_unit`` (a unit of :data:`TIME_UNITS`); empty fields are unknown.
    start, end : str or float, optional
        The time origin and the window end, in ``time_format`` (default: the raw file's ``# start:`` and ``# end:``
        comments, else the first event less one resolution step, and the last event).
    duration_s : float, optional
        The window end as seconds from the origin (exclusive with ``end``).
    drop_bad_rows : bool
        Drop rows with a missing or unreadable field and count them, instead of refusing the log.

    Returns
    -------
    ImportedLog

    Examples
    --------
    >>> import os, tempfile
    >>> raw = os.path.join(tempfile.mkdtemp(), "raw.csv")
    >>> with open(raw, "w") as f:
    ...     _ = f.write("host,when\\nnode3,2026-06-01 10:02\\nnode1,2026-06-01 10:00\\nnode3,2026-06-01 10:02\\n")
    >>> out = import_failure_log(raw, Topology(64, 8), unit_column="host", time_column="when",
    ...                          time_format="%Y-%m-%d %H:%M", level="node")
    >>> out.log.time_s.tolist(), out.log.unit.tolist()
    ([60.0, 180.0], [1, 3])
    >>> out.report["counts"]["duplicates"], out.report["counts"]["reordered"], out.report["origin"]["from"]
    (1, 1, 'first_event')
    """
    topology = as_topology(topology)
    if not isinstance(raw, (str, os.PathLike)):
        raise UsageTypeError(f"`raw` must be a path, got {type(raw).__name__}")
    src = os.fspath(raw)
    if not os.path.exists(src):
        raise UsageValueError(f"raw failure log not found: {src}")
    if os.path.isdir(src):
        raise UsageValueError(f"{src} is a directory, not a raw failure log file")
    levels = log_levels(topology)
    drop_bad_rows = as_bool(drop_bad_rows, "drop_bad_rows")
    parse = _TimeParser(time_format)
    for name, v in (("unit_column", unit_column), ("time_column", time_column), ("start_column", start_column),
                    ("end_column", end_column), ("level_column", level_column), ("repair_column", repair_column)):
        if v is not None and (not isinstance(v, str) or not v.strip()):
            raise UsageValueError(f"`{name}` must be a column name, got {v!r}")
    if (time_column is None) == (start_column is None):
        raise UsageValueError("give the failure time as `time_column`, or as a `start_column`/`end_column` pair "
                              "(exactly one of `time_column` and `start_column`)")
    if start_column is not None and end_column is None:
        raise UsageValueError("`start_column` needs `end_column` (the repair time is end - start); for failure "
                              "times alone use `time_column`")
    if end_column is not None and start_column is None:
        raise UsageValueError("`end_column` needs `start_column`")
    if end_column is not None and repair_column is not None:
        raise UsageValueError("`repair_column` and `end_column` both give the repair time: give one")
    if (level is None) == (level_column is None):
        raise UsageValueError(f"give the level of every row as `level` (one of {list(levels)}) or the column that "
                              f"holds it as `level_column` (exactly one)")
    if level is not None:
        as_choice(level, "level", levels)
    repair_scale = TIME_UNITS[as_choice(repair_unit, "repair_unit", tuple(TIME_UNITS))]
    if unit_map_file is not None and unit_names is not None:
        raise UsageValueError("`unit_names` and `unit_map_file` are two ways to name units: give one")
    if unit_map_file is None:
        unit_names = as_choice("suffix" if unit_names is None else unit_names, "unit_names", UNIT_NAMES)
    if duration_s is not None:
        duration_s = as_float(duration_s, "duration_s", positive=True)
        if end is not None:
            raise UsageValueError("`end` and `duration_s` both give the window end: give one")
    start_abs = None if start is None else parse.value(start, "start")
    end_abs = None if end is None else parse.value(end, "end")
    names = _UnitNames(unit_names, unit_map_file, levels, topology, src)

    wanted = {"time_column": time_column, "start_column": start_column, "end_column": end_column,
              "unit_column": unit_column, "level_column": level_column, "repair_column": repair_column}
    wanted = {k: v.strip() for k, v in wanted.items() if v is not None}
    index = {name: i for i, name in enumerate(levels)}
    counts = dict.fromkeys(("reordered", "duplicates", "duplicates_conflicting_repair", "repair_truncated",
                            "bad_rows", "before_start", "after_end"), 0)
    bad_reasons, lines = {}, {}
    meta = {}
    header, cols, data_rows = None, None, 0
    t_a, c_a, u_a, r_a, l_a = (array.array("d"), array.array("q"), array.array("q"), array.array("d"),
                               array.array("q"))
    has_repair = repair_column is not None or end_column is not None

    def note(reason, lineno):
        got = lines.setdefault(reason, [])
        if len(got) < _EXAMPLES:
            got.append(lineno)

    for lineno, line in text_lines(src, src):
        if len(t_a) % 65536 == 65535:
            check_memory((len(t_a) + 1) * _ROW_BYTES, f"importing the failure log {src} (over {len(t_a):,} rows "
                                                      f"kept so far)", "import a shorter window of the log")
        if not line.strip():
            continue
        if line.lstrip().startswith("#"):
            key, sep, value = line.lstrip()[1:].partition(":")
            key = key.strip()
            if sep and key in RAW_METADATA:
                if key in meta:
                    raise UsageValueError(f"{src}: line {lineno}: metadata '{key}' is given twice (first on line "
                                          f"{meta[key][1]})")
                meta[key] = (value.strip(), lineno)
            continue
        try:
            fields_ = [x.strip() for x in next(csv.reader([line], strict=True))]
        except csv.Error as e:
            fields_ = None
            why = f"not a valid CSV line ({e})"
        if header is None:
            if fields_ is None:
                raise UsageValueError(f"{src}: line {lineno}: the header line is {why}")
            dup = sorted({x for x in fields_ if fields_.count(x) > 1 and x in wanted.values()})
            if dup:
                raise UsageValueError(f"{src}: line {lineno}: the header names column {dup[0]!r} twice")
            for key, name in wanted.items():
                if name not in fields_:
                    raise UsageValueError(f"`{key}` {name!r} is not a column of {src} (its header, line {lineno}: "
                                          f"{', '.join(repr(x) for x in fields_)})")
            header, cols = fields_, {key: fields_.index(name) for key, name in wanted.items()}
            continue
        data_rows += 1
        here = f"{src}: line {lineno} (data row {data_rows})"

        def bad(reason, message, lineno=lineno, here=here):
            if not drop_bad_rows:
                raise UsageValueError(f"{here}: {message}; pass `drop_bad_rows` to drop such rows and count them")
            bad_reasons[reason] = bad_reasons.get(reason, 0) + 1
            counts["bad_rows"] += 1
            note(reason, lineno)

        if fields_ is None:
            bad("not valid CSV", why)
            continue
        if len(fields_) != len(header):
            bad("wrong field count", f"expected {len(header)} fields ({', '.join(header)}), got {len(fields_)}")
            continue
        f = {key: fields_[i] for key, i in cols.items()}
        tkey = "time_column" if time_column is not None else "start_column"
        missing = [k for k in (tkey, "unit_column", "level_column") if k in f and not f[k]]
        if missing:
            bad(f"missing {missing[0]}", f"the `{missing[0]}` {wanted[missing[0]]!r} is empty")
            continue
        try:
            t = parse(f[tkey])
        except ValueError as e:
            bad("time does not parse", f"the `{tkey}` {wanted[tkey]!r} value {f[tkey]!r} is not a time in the "
                                       f"format {parse.format!r} (`time_format`: {e})")
            continue
        if level is not None:
            code = index[level]
        else:
            code = index.get(f["level_column"], -1)
            if code < 0:
                bad("unknown level", f"the `level_column` {wanted['level_column']!r} value {f['level_column']!r} "
                                     f"is not a level of the log (one of {list(levels)})")
                continue
        count = topology.unit_count(levels[code])
        try:
            unit = names(code, f["unit_column"], f"line {lineno}", count)
        except _Beyond as e:
            bad("unit beyond the topology", f"unit {f['unit_column']!r} is {levels[code]} {e.args[0]}, beyond the "
                                            f"{count} {levels[code]}s of the topology")
            continue
        except ValueError as e:
            bad("unknown unit name", str(e))
            continue
        rep = math.nan
        if repair_column is not None and f["repair_column"]:
            text = f["repair_column"]
            try:
                if not plain_number(text):
                    raise ValueError
                rep = float(text) * repair_scale
            except ValueError:
                rep = -1.0
            if not (math.isfinite(rep) and rep >= 0):
                bad("bad repair time", f"the `repair_column` {wanted['repair_column']!r} value {text!r} is not a "
                                       f"number >= 0 (or empty: unknown)")
                continue
        elif end_column is not None and f["end_column"]:
            try:
                rep = parse(f["end_column"]) - t
            except ValueError as e:
                bad("time does not parse", f"the `end_column` {wanted['end_column']!r} value {f['end_column']!r} is "
                                           f"not a time in the format {parse.format!r} (`time_format`: {e})")
                continue
            if rep < 0:
                bad("end before start", f"the repair ends ({f['end_column']!r}) before the failure "
                                        f"({f[tkey]!r})")
                continue
        t_a.append(t)
        c_a.append(code)
        u_a.append(unit)
        r_a.append(rep)
        l_a.append(lineno)
    if header is None:
        raise UsageValueError(f"{src}: no header line (the first line that is not a comment must name the columns)")
    n = len(t_a)
    if n == 0:
        raise UsageValueError(f"{src}: no event to import ({data_rows} data rows, {counts['bad_rows']} of them "
                              f"dropped as bad rows)")
    check_memory(n * _ROW_BYTES, f"importing the failure log {src} ({n:,} rows)", "import a shorter window of the log")
    t_abs = np.frombuffer(t_a, dtype=np.float64)
    code = np.frombuffer(c_a, dtype=np.int64)
    unit = np.frombuffer(u_a, dtype=np.int64)
    rep = np.frombuffer(r_a, dtype=np.float64).copy()
    line_of = np.frombuffer(l_a, dtype=np.int64)

    # ------------------------------------------------------------------ the origin, the window, the resolution
    resolution = _resolution(t_abs)
    step = 1e-6 if resolution is None else resolution

    def meta_value(key):
        text, lineno = meta[key]
        if key == "duration_s":
            v = float(text) if plain_number(text) and re.fullmatch(r"[0-9.eE+-]+", text or "x") else math.nan
            if not (math.isfinite(v) and v > 0):
                raise UsageValueError(f"{src}: line {lineno}: metadata 'duration_s' must be a number of seconds > 0, "
                                      f"got {text!r}")
            return v, lineno
        try:
            return parse.value(text, key), lineno
        except UsageValueError as e:
            raise UsageValueError(f"{src}: line {lineno}: metadata '{key}': {str(e).replace(f'`{key}` ', '')}") \
                from None

    if start_abs is not None:
        origin, origin_from = start_abs, {"from": "start"}
    elif "start" in meta:
        origin, lineno = meta_value("start")
        origin_from = {"from": "metadata", "line": lineno}
    else:
        origin, origin_from = float(t_abs.min()) - step, {"from": "first_event", "step_s": step}
    t = t_abs - origin
    before = t < 0
    at_zero = t == 0
    if at_zero.any():
        i = int(np.argmax(at_zero))
        raise UsageValueError(f"{src}: line {int(line_of[i])}: the event is at the time origin "
                              f"({parse.show(origin)}): a unit failing at time 0 has a lifetime of 0, which the "
                              f"Weibull fit refuses; give an earlier `start`")
    if end_abs is not None:
        d, window_from = end_abs - origin, {"from": "end"}
    elif duration_s is not None:
        d, window_from = duration_s, {"from": "duration_s"}
    elif "end" in meta or "duration_s" in meta:
        if "end" in meta and "duration_s" in meta:
            raise UsageValueError(f"{src}: line {meta['duration_s'][1]}: metadata 'end' (line {meta['end'][1]}) and "
                                  f"'duration_s' both give the window end: keep one")
        key = "end" if "end" in meta else "duration_s"
        v, lineno = meta_value(key)
        d, window_from = (v - origin if key == "end" else v), {"from": "metadata", "line": lineno, "key": key}
    else:
        d, window_from = None, {"from": "last_event"}
    if d is not None and not (0 < d <= MAX_TIME_S):
        what = {"end": "`end`", "duration_s": "`duration_s`"}.get(window_from["from"], f"the raw file's metadata "
                                                                                      f"(line {window_from.get('line')})")
        raise UsageValueError(f"the window end from {what} is {d!r} s after the origin ({parse.show(origin)}); it "
                              f"must be > 0 and <= {MAX_TIME_S:.6g} s (the integer-microsecond clock)")
    after = np.zeros(n, dtype=bool) if d is None else t > d
    counts["before_start"] = int(before.sum())
    counts["after_end"] = int(after.sum())
    for reason, mask in (("before_start", before), ("after_end", after)):
        for i in np.flatnonzero(mask)[:_EXAMPLES]:
            note(reason, int(line_of[i]))
    keep = ~(before | after)
    if not keep.any():
        raise UsageValueError(f"{src}: every event lies outside the window ({counts['before_start']} before the "
                              f"origin, {counts['after_end']} after the end)")
    over = keep & ((t > MAX_TIME_S) | (np.nan_to_num(rep) > MAX_TIME_S))
    if over.any():
        i = int(np.argmax(over))
        raise UsageValueError(f"{src}: line {int(line_of[i])}: the event (at {t[i]!r} s from the origin, repair "
                              f"{rep[i]!r} s) lies beyond the integer-microsecond clock ({MAX_TIME_S:.6g} s): check "
                              f"`time_format` and the origin")
    t, code, unit, rep, line_of = t[keep], code[keep], unit[keep], rep[keep], line_of[keep]
    del t_a, c_a, u_a, r_a, l_a, t_abs, before, after, keep

    # ------------------------------------------------------------------ sorting and duplicates
    late = np.flatnonzero(t[1:] < np.maximum.accumulate(t)[:-1]) + 1  # rows after a later event of the raw file
    counts["reordered"] = int(late.size)
    for i in late[:_EXAMPLES]:
        note("reordered", int(line_of[i]))
    del late
    order = np.lexsort((unit, code, t))
    t, code, unit, rep, line_of = t[order], code[order], unit[order], rep[order], line_of[order]
    del order
    first = np.ones(t.size, dtype=bool)
    first[1:] = (t[1:] != t[:-1]) | (code[1:] != code[:-1]) | (unit[1:] != unit[:-1])
    starts = np.flatnonzero(first)
    counts["duplicates"] = int(t.size - starts.size)
    for i in np.flatnonzero(~first)[:_EXAMPLES]:
        note("duplicates", int(line_of[i]))
    if counts["duplicates"]:
        nan = np.isnan(rep)
        size = np.diff(np.append(starts, t.size))
        n_nan = np.add.reduceat(nan.astype(np.int64), starts)
        hi = np.fmax.reduceat(rep, starts)  # the longest known repair of the copies (NaN: all unknown)
        lo = np.fmin.reduceat(rep, starts)
        conflict = (size > 1) & (((n_nan > 0) & (n_nan < size)) | (hi != lo) & (n_nan < size))
        counts["duplicates_conflicting_repair"] = int(conflict.sum())
        for g in np.flatnonzero(conflict)[:_EXAMPLES]:
            note("duplicates_conflicting_repair", int(line_of[starts[g]]))
        t, code, unit, line_of, rep = t[starts], code[starts], unit[starts], line_of[starts], hi
    del first, starts

    # ------------------------------------------------------------------ repairs outlasting the next failure
    if has_repair:
        by_unit = np.lexsort((t, unit, code))
        same = (code[by_unit][1:] == code[by_unit][:-1]) & (unit[by_unit][1:] == unit[by_unit][:-1])
        cur, nxt = by_unit[:-1][same], by_unit[1:][same]
        gap = t[nxt] - t[cur]
        cut = rep[cur] > gap  # NaN (unknown) compares False
        counts["repair_truncated"] = int(cut.sum())
        for i in cur[cut][:_EXAMPLES]:
            note("repair_truncated", int(line_of[i]))
        rep[cur[cut]] = gap[cut]
        del by_unit, same, cur, nxt, gap, cut

    # ------------------------------------------------------------------ ties, units, the log
    distinct = np.ones(t.size, dtype=bool)
    distinct[1:] = t[1:] != t[:-1]
    per_time = np.diff(np.append(np.flatnonzero(distinct), t.size))
    ties = {"timestamps": int((per_time > 1).sum()), "rows": int(per_time[per_time > 1].sum())}
    units = {}
    for c in np.unique(code).tolist():
        seen = int(np.unique(unit[code == c]).size)
        total = topology.unit_count(levels[c])
        units[levels[c]] = {"topology": total, "seen": seen, "never_failed": total - seen}
    duration = float(t[-1]) if d is None else float(d)
    mapping = {"time": ({"column": wanted["time_column"], "format": parse.format} if time_column is not None else
                        {"start_column": wanted["start_column"], "end_column": wanted["end_column"],
                         "format": parse.format}),
               "unit": {"column": wanted["unit_column"],
                        "names": names.rule if names.file is None else f"file {names.file}"},
               "level": {"constant": level} if level is not None else {"column": wanted["level_column"]},
               "repair": ({"column": wanted["repair_column"], "unit": repair_unit} if repair_column is not None else
                          {"end_minus_start": True} if end_column is not None else None),
               "ignored_columns": [x for x in header if x not in wanted.values()]}
    report = {"source": src, "rows_read": data_rows, "rows_written": int(t.size), "mapping": mapping,
              "origin": {"value": parse.show(origin), **origin_from},
              "window": {"duration_s": duration, **window_from},
              "resolution_s": resolution, "ties": ties, "counts": counts, "bad_rows": bad_reasons,
              "lines": {k: sorted(v) for k, v in lines.items()}, "units": units, "drop_bad_rows": drop_bad_rows}
    log = failure_log_from_arrays(t, np.asarray(levels, dtype=object)[code], unit, topology,
                                  repair_s=rep if has_repair else None, duration_s=duration, source=src)
    return ImportedLog(FailureLog(log.time_s, log.level, log.unit, log.repair_s, log.duration_s, log.topology,
                                  log.levels, src, tuple(" ".join(c.splitlines()) for c in _comments(report))),
                       report)


def _comments(report) -> list:
    """The comment lines of an imported log: the source, the mapping, the origin and window, the counts."""
    m = report["mapping"]
    tm = m["time"]
    time = (f"time column {tm['column']!r}" if "column" in tm else
            f"failure at start column {tm['start_column']!r}, repair until end column {tm['end_column']!r}")
    rep = m["repair"]
    repair = ("no repair times" if rep is None else f"repair column {rep['column']!r} in {rep['unit']}"
              if "column" in rep else "repair = end - start")
    level = f"level {m['level']['constant']}" if "constant" in m["level"] else f"level column {m['level']['column']!r}"
    o, w = report["origin"], report["window"]
    where = {"start": "given", "end": "given", "duration_s": "given", "first_event": "the first event less one "
             "resolution step", "last_event": "the last event", "metadata": "the raw file's comment"}
    c = report["counts"]
    res = report["resolution_s"]
    return [f"imported by spare-mc log import (spare_mc.logs.importer) from {report['source']}",
            (f"mapping: {time} as {tm['format']!r}; unit column {m['unit']['column']!r} named by "
             f"{m['unit']['names']}; {level}; {repair}"),
            (f"time origin: {o['value']} ({where[o['from']]}); window end {w['duration_s']!r} s after it "
             f"({where[w['from']]})"),
            (f"rows: {report['rows_read']} read, {report['rows_written']} written; "
             + ", ".join(f"{k} {v}" for k, v in c.items())),
            (f"resolution {'finer than 1 us' if res is None else _show_s(res)}; tied timestamps "
             f"{report['ties']['timestamps']} ({report['ties']['rows']} rows)")]
