"""``spare-mc log import`` (issue 37, item 3): an operator's raw CSV log -- its own columns, spreadsheet dates, host
names, rows sorted by node, duplicates -- mapped and cleaned into a canonical log, every dropped or changed row
counted; and the Parquet reader streaming in record batches."""

import datetime as dt
import json
import os
import re

import numpy as np
import pytest

import spare_mc
from spare_mc._lib.resources import ResourceLimitError
from spare_mc.cli import main
from spare_mc.logs import failure_log as fl
from spare_mc.logs.failure_log import read_failure_log, write_failure_log
from spare_mc.logs.importer import import_failure_log
from spare_mc.logs.synthetic import synthetic_log
from spare_mc.model.topology import Topology

TOPO = Topology(256, 32)  # 32 nodes of 8 GPUs, one group per node
TOPO_FLAGS = ["--n-gpus", "256", "--n-groups", "32"]
BASE = dt.datetime(2026, 6, 1)
NO_PYARROW = "pyarrow is not installed (the optional `parquet` extra): the Parquet reader cannot be tested"


def _raw(path, text):
    path.write_text(text)
    return path


def _minutes(log):
    """``log`` as the raw form an operator exports: host names, spreadsheet dates at minute resolution (``12/6/2026
    9:05``), repair times in minutes, an extra column, rows sorted by host, every fifth row twice."""
    rows = []
    for t, u, r in zip(log.time_s, log.unit, log.repair_s):
        d = BASE + dt.timedelta(seconds=float(t))
        rows.append((f"node{u:04d}", f"{d.month}/{d.day}/{d.year} {d.hour}:{d.minute:02d}", repr(float(r) / 60)))
    rows.sort()  # by node, not by time
    rows += rows[::5]
    return "# exported from the ticket system\nhost,opened,repair_min,ticket\n" + "".join(
        f"{h},{d},{r},T{i}\n" for i, (h, d, r) in enumerate(rows))


def _expected(log):
    """The canonical log at the raw file's minute resolution, sorted by time then unit."""
    t = np.floor(log.time_s / 60) * 60
    order = np.lexsort((log.unit, t))
    return t[order], log.unit[order], log.repair_s[order]


# ------------------------------------------------------------------------------------------------- round trip
@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_round_trip_from_a_messy_export(tmp_path, capsys, suffix):
    """A canonical log, exported as an operator would (shuffled by node, duplicated rows, minute-resolution
    spreadsheet dates, host names), comes back equal to the original up to the minute, through the library and the
    command line (CSV and Parquet outputs), and ``read_failure_log`` reads the output back."""
    if suffix == "parquet":
        pytest.importorskip("pyarrow", reason=NO_PYARROW)
    rng = np.random.default_rng(5)
    log = synthetic_log(TOPO, {"node": (0.8, 1e6)}, 3e6, rng=6)
    # repair times that end before the unit's next failure (at the minute): none is cut
    t_min = np.floor(log.time_s / 60) * 60
    gap = np.full(len(log), np.inf)
    for unit in np.unique(log.unit):
        rows = np.flatnonzero(log.unit == unit)
        gap[rows[:-1]] = np.diff(t_min[rows])
    repair = np.minimum(rng.uniform(60, 7200, len(log)).round(), gap - 60)
    log = fl.failure_log_from_arrays(log.time_s, log.level_names(), log.unit, TOPO, repair_s=repair, duration_s=3e6)
    t, u, r = _expected(log)
    assert t[0] > 0 and np.unique(np.stack([t, u]), axis=1).shape[1] == len(log)  # no duplicate at the minute
    raw = _raw(tmp_path / "raw.csv", _minutes(log))
    kw = {"unit_column": "host", "time_column": "opened", "time_format": "%m/%d/%Y %H:%M", "level": "node",
          "repair_column": "repair_min", "repair_unit": "min", "start": "6/1/2026 0:00", "duration_s": 3e6}
    out = import_failure_log(raw, TOPO, **kw)
    assert np.array_equal(out.log.time_s, t) and np.array_equal(out.log.unit, u)
    assert np.allclose(out.log.repair_s, r, rtol=1e-12, atol=0) and out.log.duration_s == 3e6
    assert out.log.level_names().tolist() == ["node"] * len(log)
    rep = out.report
    assert rep["counts"]["duplicates"] == len(range(0, len(log), 5)) and rep["rows_written"] == len(log)
    assert rep["counts"]["reordered"] > 0 and rep["counts"]["repair_truncated"] == 0 and rep["resolution_s"] == 60.0
    assert rep["mapping"]["ignored_columns"] == ["ticket"] and rep["origin"]["from"] == "start"
    assert rep["units"]["node"] == {"topology": 32, "seen": len(np.unique(u)), "never_failed": 32 - len(np.unique(u))}
    flags = ["--unit-column", "host", "--time-column", "opened", "--time-format", "%m/%d/%Y %H:%M", "--level", "node",
             "--repair-column", "repair_min", "--repair-unit", "min", "--start", "6/1/2026 0:00", "--duration-s", "3e6"]
    path = tmp_path / f"out.{suffix}"
    assert main(["log", "import", str(raw), str(path), *TOPO_FLAGS, *flags, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["output"] == str(path) and d["format"] == suffix and d["counts"] == rep["counts"]
    back = read_failure_log(path, TOPO)
    for name in ("time_s", "level", "unit", "repair_s"):
        assert np.array_equal(getattr(back, name), getattr(out.log, name))
    assert back.duration_s == 3e6 and back.comments == out.log.comments
    assert back.comments[0].startswith("imported by spare-mc log import") and "'%m/%d/%Y %H:%M'" in back.comments[1]


# ------------------------------------------------------------------------------------------------- cleaning
H = "host,when,rep\n"


def _import(tmp_path, body, header=H, **kw):
    args = {"unit_column": "host", "time_column": "when", "level": "node", "repair_column": "rep"}
    args.update(kw)
    return import_failure_log(_raw(tmp_path / "r.csv", header + body), TOPO, **args)


def test_sorting_counts_rows_that_came_after_a_later_event(tmp_path):
    out = _import(tmp_path, "n3,120,\nn1,60,\nn2,180,\nn4,30,\n", time_format="s")
    assert out.log.time_s.tolist() == [1.0, 31.0, 91.0, 151.0]  # origin: the first event (30) less 1 s
    assert out.log.unit.tolist() == [4, 1, 3, 2] and out.report["counts"]["reordered"] == 2
    assert out.report["lines"]["reordered"] == [3, 5]
    assert out.report["origin"] == {"value": "29.0 s", "from": "first_event", "step_s": 1.0}


def test_duplicates_keep_the_longest_repair_and_count_conflicts(tmp_path):
    out = _import(tmp_path, "n1,60,10\nn1,60,30\nn1,60,\nn2,60,5\nn2,60,5\nn3,120,\nn3,120,\n")
    c = out.report["counts"]
    assert (c["duplicates"], c["duplicates_conflicting_repair"]) == (4, 1)
    assert out.report["lines"]["duplicates"] == [3, 4, 6, 8] and out.report["lines"]["duplicates_conflicting_repair"] \
        == [2]
    assert out.log.unit.tolist() == [1, 2, 3] and out.log.repair_s[:2].tolist() == [30.0, 5.0]
    assert np.isnan(out.log.repair_s[2])


def test_ties_across_units_are_kept_and_reported_with_the_resolution(tmp_path):
    out = _import(tmp_path, "n1,2026-06-01 10:00,\nn2,2026-06-01 10:00,\nn3,2026-06-01 10:00,\nn1,2026-06-01 10:05,\n",
                  time_format="%Y-%m-%d %H:%M")
    assert out.report["ties"] == {"timestamps": 1, "rows": 3} and out.report["resolution_s"] == 60.0
    assert out.log.time_s.tolist() == [60.0, 60.0, 60.0, 360.0]  # the first event at one step (time 0 refused)
    out = _import(tmp_path, "n1,2026-06-01 10:00,\nn2,2026-06-01 13:00,\n", time_format="%Y-%m-%d %H:%M")
    assert out.report["resolution_s"] == 3600.0 and out.log.time_s.tolist() == [3600.0, 14400.0]
    assert out.report["ties"] == {"timestamps": 0, "rows": 0}


def test_a_repair_outlasting_the_next_failure_is_cut_there(tmp_path):
    out = _import(tmp_path, "n1,60,600\nn1,300,30\nn2,100,1000\nn1,400,\n")
    assert out.report["counts"]["repair_truncated"] == 1 and out.report["lines"]["repair_truncated"] == [2]
    assert out.log.repair_s[out.log.unit == 1][:2].tolist() == [240.0, 30.0]
    assert out.log.repair_s[out.log.unit == 2].tolist() == [1000.0]  # its unit's only failure: not cut


def test_units_that_never_fail_are_reported(tmp_path):
    out = _import(tmp_path, "n1,60,\nn5,70,\nn1,80,\n")
    assert out.report["units"] == {"node": {"topology": 32, "seen": 2, "never_failed": 30}}


def test_the_origin_and_the_window_say_where_they_came_from(tmp_path):
    body = "n1,2026-06-01 10:00,\nn2,2026-06-01 10:05,\nn3,2026-06-01 12:00,\n"
    fmt = "%Y-%m-%d %H:%M"
    out = _import(tmp_path, body, time_format=fmt, start="2026-06-01 10:01", end="2026-06-01 11:00")
    c = out.report["counts"]
    assert (c["before_start"], c["after_end"]) == (1, 1) and out.report["lines"]["before_start"] == [2]
    assert out.log.time_s.tolist() == [240.0] and out.log.duration_s == 3540.0
    assert (out.report["origin"]["from"], out.report["window"]["from"]) == ("start", "end")
    meta = "# start: 2026-06-01 09:00\n# end: 2026-06-01 13:00\n"
    out = import_failure_log(_raw(tmp_path / "m.csv", meta + H + body), TOPO, unit_column="host", time_column="when",
                             level="node", time_format=fmt)
    assert out.report["origin"] == {"value": "2026-06-01 09:00:00 UTC", "from": "metadata", "line": 1}
    assert out.report["window"] == {"duration_s": 14400.0, "from": "metadata", "line": 2, "key": "end"}
    out = import_failure_log(_raw(tmp_path / "m.csv", "# duration_s: 9000\n" + H + body), TOPO, unit_column="host",
                             time_column="when", level="node", time_format=fmt, duration_s=8000)
    assert out.report["window"] == {"duration_s": 8000.0, "from": "duration_s"}  # the argument first
    out = _import(tmp_path, body, time_format=fmt)
    assert out.report["window"] == {"duration_s": 7260.0, "from": "last_event"}
    assert "last event" in out.log.comments[2] and "first event less one resolution step" in out.log.comments[2]


def test_start_end_pairs_level_columns_and_unit_maps(tmp_path):
    raw = _raw(tmp_path / "se.csv", "kind,name,down,up\nnode,cn-7,2026-06-01T10:00,2026-06-01T10:30\n"
                                    "rack,r1,2026-06-01T11:00,\nnode,cn-2,2026-06-01T12:00+02:00,2026-06-01T10:45Z\n")
    out = import_failure_log(raw, TOPO, unit_column="name", start_column="down", end_column="up", time_format="iso",
                             level_column="kind")
    # sorted by time, then level, then unit; cn-2 fails at 10:00 UTC (12:00+02:00); the origin is one resolution
    # step (1 h) before the first event
    assert out.log.level_names().tolist() == ["node", "node", "rack"] and out.log.unit.tolist() == [2, 7, 1]
    assert out.log.time_s.tolist() == [3600.0, 3600.0, 7200.0] and out.report["resolution_s"] == 3600.0
    assert out.log.repair_s[:2].tolist() == [2700.0, 1800.0] and np.isnan(out.log.repair_s[2])
    assert out.report["origin"]["value"] == "2026-06-01 09:00:00 UTC"
    with pytest.raises(spare_mc.UsageValueError, match=r"se2.csv: line 2 \(data row 1\): the repair ends "
                                                       r"\('2026-06-01T09:00'\) before the failure"):
        import_failure_log(_raw(tmp_path / "se2.csv", "kind,name,down,up\nnode,cn-7,2026-06-01T10:00,2026-06-01T09:00\n"),
                           TOPO, unit_column="name", start_column="down", end_column="up", time_format="iso",
                           level_column="kind")
    mp = _raw(tmp_path / "map.csv", "name,unit\nalpha,5\nbeta,0\n")
    out = _import(tmp_path, "beta,60,\nalpha,70,\n", unit_map_file=str(mp))
    assert out.log.unit.tolist() == [0, 5] and out.report["mapping"]["unit"]["names"] == f"file {mp}"
    out = _import(tmp_path, "zeta,60,\nalpha,70,\nzeta,80,\n", unit_names="first-seen")
    assert out.log.unit.tolist() == [0, 1, 0]
    out = _import(tmp_path, "3,60,\n12,70,\n", unit_names="index")
    assert out.log.unit.tolist() == [3, 12]
    with pytest.raises(spare_mc.UsageValueError, match=r"the unit names 'alpha' \(.*map2.csv line 2\) and 'gamma' "
                                                       r"\(.*map2.csv line 3\) both map to unit 5 by the mapping file: the mapping is "
                                                       r"ambiguous; fix the mapping file"):
        _import(tmp_path, "alpha,60,\n", unit_map_file=str(_raw(tmp_path / "map2.csv", "name,unit\nalpha,5\ngamma,5\n")))
    with pytest.raises(spare_mc.UsageValueError, match=r"line 34 \(data row 33\): unit 'h32' is node 32, beyond the 32 "
                                                       r"nodes of the topology"):
        _import(tmp_path, "".join(f"h{i},{60 + i},\n" for i in range(33)), unit_names="first-seen")


def test_bad_rows_are_refused_naming_the_row_or_dropped_and_counted(tmp_path):
    body = "n1,60,\n,70,\nn2,abc,\nn3,80,-5\nlogin,90,\nn99,95,\nn4,100,\nn5,110\n"
    with pytest.raises(spare_mc.UsageValueError, match=r"r.csv: line 3 \(data row 2\): the `unit_column` 'host' is "
                                                       r"empty; pass `drop_bad_rows` to drop such rows"):
        _import(tmp_path, body)
    out = _import(tmp_path, body, drop_bad_rows=True)
    assert out.log.unit.tolist() == [1, 4] and out.report["counts"]["bad_rows"] == 6
    assert out.report["bad_rows"] == {"missing unit_column": 1, "time does not parse": 1, "bad repair time": 1,
                                      "unknown unit name": 1, "unit beyond the topology": 1, "wrong field count": 1}
    assert out.report["lines"]["time does not parse"] == [4] and out.report["lines"]["wrong field count"] == [9]


def test_an_import_keeps_its_rows_within_the_memory_budget(tmp_path):
    n = 70_000
    raw = _raw(tmp_path / "long.csv", "host,when\n" + "".join(f"n{i % 32},{i + 1}\n" for i in range(n)))
    with spare_mc.set_options(max_memory=4 * 2**20), \
            pytest.raises(ResourceLimitError, match=r"importing the failure log .*long.csv \(over 65,535 rows"):
        import_failure_log(raw, TOPO, unit_column="host", time_column="when", level="node")
    assert len(import_failure_log(raw, TOPO, unit_column="host", time_column="when", level="node").log) == n


# ------------------------------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("body, flags, message", [
    ("n1,60,\n", ["--time-format", "fortnights"], (r"`--time-format` must be a unit of numbers \(s, ms, us, min, h, "
                                                   r"d\), 'epoch'.* got 'fortnights'")),
    ("n1,60,\n", ["--time-format", "%Y-%Q"], r"`--time-format` '%Y-%Q' is not a valid strftime format"),
    ("n1,2026-06-01 10:00,\nn2,12/6/2026 9:05,\n", ["--time-format", "%Y-%m-%d %H:%M"],
     (r"r.csv: line 3 \(data row 2\): the `--time-column` 'when' value '12/6/2026 9:05' is not a time in the format "
     r"'%Y-%m-%d %H:%M' \(`--time-format`: .*\); pass `--drop-bad-rows`")),
    ("n1,60,\n", ["--time-column", "date"], (r"`--time-column` 'date' is not a column of .*r.csv \(its header, line 1: "
                                            r"'host', 'when', 'rep'\)")),
    ("n1,60,\n", ["--level", None], (r"give the level of every row as `--level` .* or the column that holds it as "
                                    r"`--level-column`")),
    ("n1,60,\n", ["--start-column", "when", "--end-column", "rep"], (r"exactly one of `--time-column` and "
                                                                    r"`--start-column`")),
    ("n1,60,\n", ["--end", "100", "--duration-s", "50"], r"`--end` and `--duration-s` both give the window end"),
    ("node0123,60,\nnode123,70,\n", ["--n-gpus", "2048"],
     (r"the unit names 'node0123' \(line 2\) and 'node123' \(line 3\) both map to node 123 by their numeric suffix: "
     r"the mapping is ambiguous; give a mapping file \(`--unit-map-file`\)")),
    ("n1,60,\nn2,70,\n", ["--start", "60"], (r"r.csv: line 2: the event is at the time origin \(60.0 s\): a unit failing "
                                            r"at time 0 has a lifetime of 0, which the Weibull fit refuses; give an "
                                            r"earlier `--start`")),
    ("n1,60,\n", ["--start", "soon"], (r"`--start` must be a time in the time format 's' \(`--time-format`\), got "
                                      r"'soon'")),
])
def test_every_refusal_names_its_flag_or_row(tmp_path, capsys, body, flags, message):
    raw = _raw(tmp_path / "r.csv", H + body)
    argv = ["log", "import", str(raw), str(tmp_path / "out.csv"), *TOPO_FLAGS, "--unit-column", "host",
            "--time-column", "when", "--level", "node"]
    for i in range(0, len(flags), 2):
        k, v = flags[i], flags[i + 1]
        if k in argv:
            j = argv.index(k)
            del argv[j:j + 2]
        if v is not None:
            argv += [k, v]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and re.search(message, err), err
    assert not (tmp_path / "out.csv").exists()


def test_the_output_is_not_replaced_without_force_nor_ever_the_raw_log(tmp_path, capsys):
    raw = _raw(tmp_path / "r.csv", H + "n1,60,\n")
    out = tmp_path / "out.csv"
    out.write_text("precious\n")
    argv = ["log", "import", str(raw), str(out), *TOPO_FLAGS, "--unit-column", "host", "--time-column", "when",
            "--level", "node"]
    assert main(argv) == 2
    assert f"OUT {out} exists; pass --force to replace it" in capsys.readouterr().err
    assert out.read_text() == "precious\n"
    assert main([*argv, "--force"]) == 0 and read_failure_log(out, TOPO).unit.tolist() == [1]
    capsys.readouterr()
    argv[3] = str(raw)
    assert main([*argv, "--force"]) == 2
    assert "is the raw log itself" in capsys.readouterr().err and raw.read_text() == H + "n1,60,\n"
    assert main([*argv[:3], str(tmp_path), *argv[4:], "--force"]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main([*argv[:3], str(out), *argv[4:], "--force", "--start", "0", "--time-column", "when"]) == 0
    text = capsys.readouterr().out
    assert "time origin: 0.0 s (from --start)" in text and "window end 60 s after it (from the last event)" in text


# ------------------------------------------------------------------------------------------------- Parquet
def test_parquet_is_read_in_batches_equal_to_csv(tmp_path, monkeypatch):
    pytest.importorskip("pyarrow", reason=NO_PYARROW)
    log = synthetic_log(Topology(64, 8), {"gpu": (0.9, 3e5), "rack": (1.0, 1e6)}, 8e6, repair_s=30.0, rng=4)
    write_failure_log(tmp_path / "a.parquet", log, comments=["made here"])
    write_failure_log(tmp_path / "a.csv", log, comments=["made here"])
    calls = []
    real = fl._parquet_batch
    monkeypatch.setattr(fl, "_parquet_batch", lambda *a: calls.append(a[2]) or real(*a))
    monkeypatch.setattr(fl, "_PARQUET_BATCH_ROWS", 100)
    pq = read_failure_log(tmp_path / "a.parquet", log.topology)
    csv = read_failure_log(tmp_path / "a.csv", log.topology)
    assert calls == list(range(0, len(log), 100))  # one call per batch of 100 rows
    for name in ("time_s", "level", "unit", "repair_s"):
        assert np.array_equal(getattr(pq, name), getattr(csv, name))
    assert pq.duration_s == csv.duration_s == 8e6 and pq.comments == csv.comments == ("made here",)


def test_parquet_refuses_at_the_first_bad_batch_within_memory(tmp_path, monkeypatch):
    pa = pytest.importorskip("pyarrow", reason=NO_PYARROW)
    import pyarrow.parquet as pq

    n = 1000
    t = np.arange(1.0, n + 1)
    unit = np.arange(n) % 64
    calls = []
    real = fl._parquet_batch
    monkeypatch.setattr(fl, "_parquet_batch", lambda *a: calls.append(a[2]) or real(*a))
    monkeypatch.setattr(fl, "_PARQUET_BATCH_ROWS", 100)
    topo = Topology(64, 8)

    def table(path, t=t, unit=unit, level=None):
        pq.write_table(pa.table({"time_s": t, "level": level or ["gpu"] * n, "unit": unit}), path, row_group_size=100)
        calls.clear()
        return path

    bad = unit.copy()
    bad[250] = 64
    with pytest.raises(spare_mc.UsageValueError, match=r"u.pq: data row 251: `unit` must satisfy 0 <= unit < 64"):
        read_failure_log(table(tmp_path / "u.pq", unit=bad), topo)
    assert calls == [0, 100, 200]  # the rest of the file is not read
    back = t.copy()
    back[300] = 299.5  # a step back across the batch boundary
    with pytest.raises(spare_mc.UsageValueError, match=r"data row 301: `time_s` must be non-decreasing .* got 299.5 "
                                                       r"after 300.0"):
        read_failure_log(table(tmp_path / "b.pq", t=back), topo)
    assert calls == [0, 100, 200, 300]
    rep = t.copy()
    rep[300] = 300.0  # the event of row 300 again, first row of the next batch
    u2 = unit.copy()
    u2[300] = u2[299]
    with pytest.raises(spare_mc.UsageValueError, match=r"data row 301: the event repeats data row 300"):
        read_failure_log(table(tmp_path / "r.pq", t=rep, unit=u2), topo)
    levels = ["gpu"] * n
    levels[720] = "switch"
    with pytest.raises(spare_mc.UsageValueError, match=r"data row 721: `level` must be one of .* got 'switch'"):
        read_failure_log(table(tmp_path / "l.pq", level=levels), topo)
    assert calls == [0, 100, 200, 300, 400, 500, 600, 700]
    path = table(tmp_path / "ok.pq")
    # 1,000 rows: refused from the footer's row count, before reading
    with spare_mc.set_options(max_memory=50_000), \
            pytest.raises(ResourceLimitError, match=r"reading the Parquet log .*ok.pq \(1,000 rows\)"):
        read_failure_log(path, topo)
    assert calls == []
    assert len(read_failure_log(path, topo)) == n


# ------------------------------------------------------------------------------------------------- the operator export
def test_an_operator_export_has_the_mess_and_imports_back_to_its_truth(tmp_path):
    """``write_operator_export`` (the worked example's raw log): rows sorted by host, minute dates, duplicates (one
    with another repair time), no window in the file, a new batch that bursts early; imported with the window given,
    the events are the truth's at the minute."""
    from spare_mc.logs.synthetic import write_operator_export

    topo = Topology(1024, 16)  # 128 nodes
    raw = tmp_path / "raw.csv"
    truth = write_operator_export(raw, topo, mean_s=2e6, shape=0.6, duration_s=1e7, new_fraction=0.25, rng=3)
    lines = raw.read_text().splitlines()
    assert lines[0] == "host,opened,repair_min,ticket" and not any(x.startswith("#") for x in lines)
    rows = [x.split(",") for x in lines[1:]]
    assert [r[:2] for r in rows] == sorted(r[:2] for r in rows)  # by host, then date
    assert all(re.fullmatch(r"node\d{4}", r[0]) and re.fullmatch(r"2026-\d\d-\d\d \d\d:\d\d", r[1]) for r in rows)
    repair_min = truth.repair_s / 60
    assert np.all(repair_min == np.rint(repair_min)) and 60 <= np.median(repair_min) <= 90  # median 75 min
    out = import_failure_log(raw, topo, unit_column="host", time_column="opened", time_format="%Y-%m-%d %H:%M",
                             level="node", repair_column="repair_min", repair_unit="min", start="2026-01-01 00:00",
                             duration_s=1e7)
    minute = np.floor(truth.time_s / 60) * 60
    assert set(zip(out.log.time_s.tolist(), out.log.unit.tolist())) == set(zip(minute.tolist(), truth.unit.tolist()))
    counts = out.report["counts"]
    assert counts["reordered"] > 0 and counts["duplicates"] == len(rows) - len(out.log)
    assert counts["duplicates"] >= round(0.02 * len(truth)) + 1 and counts["duplicates_conflicting_repair"] >= 1
    assert out.report["resolution_s"] == 60.0


def test_an_operator_export_starts_its_new_batch_new_and_the_others_stationary():
    """The first failures of the new batch (the last half of the nodes here) follow the lifetime law, the others' the
    forward recurrence time of a unit long in service (density S(x)/mu), each given a failure within the window."""
    from scipy import special, stats

    from spare_mc.logs.synthetic import write_operator_export
    from spare_mc.model.failures import weibull_scale

    k, mean, window = 0.6, 2e6, 2e7
    lam = weibull_scale(mean, k)
    truth = write_operator_export(os.devnull, Topology(4096, 64), mean_s=mean, shape=k, duration_s=window,
                                  new_fraction=0.5, rng=1)
    first = np.full(512, np.inf)
    np.minimum.at(first, truth.unit, truth.time_s)
    new = np.arange(512) >= 256
    laws = {"new": lambda x: 1 - np.exp(-((x / lam) ** k)),  # Weibull lifetime
            "stationary": lambda x: special.gammainc(1 / k, (x / lam) ** k)}  # forward recurrence time

    def p(units, law):  # KS against the law given a failure before the window's end
        x = first[units & np.isfinite(first)]
        return stats.kstest(x, lambda y: laws[law](y) / laws[law](window)).pvalue

    assert p(new, "new") > 1e-3 and p(~new, "stationary") > 1e-3
    assert p(new, "stationary") < 1e-6 and p(~new, "new") < 1e-6
