"""The failure-log reader reads in bounded chunks (issue 37, the streaming reader): a file without line breaks
(``/dev/zero``, a binary file) is refused at its first long line instead of being read whole, rows are kept in
compact arrays within the memory budget, and chunk boundaries change nothing."""

import os
import resource
import subprocess
import sys
import time

import numpy as np
import pytest

import spare_mc
from spare_mc._lib.resources import ResourceLimitError
from spare_mc.logs import failure_log as fl
from spare_mc.logs.failure_log import MAX_LINE_BYTES, read_failure_log
from spare_mc.model.topology import Topology

SMALL = Topology(64, 8)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _log(path, rows, *, breaks="\n", comment=True):
    text = (f"# made by hand{breaks}# duration_s: 1e6{breaks}" if comment else "") + f"time_s,level,unit{breaks}"
    text += breaks.join(f"{t},{lv},{u}" for t, lv, u in rows) + breaks
    path.write_bytes(text.encode())
    return path


def test_dev_zero_is_refused_at_its_first_line_in_bounded_memory():
    """``spare-mc log check /dev/zero`` grew to 24 GB and was killed by the kernel: the whole file was read before
    any check."""
    code = ("import resource, sys\n"
            "from spare_mc.cli import main\n"
            "rc = main(['log', 'check', '/dev/zero', '--n-gpus', '64', '--n-groups', '8'])\n"
            "print(rc, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": ROOT})
    rc, rss_kb = r.stdout.split()
    assert rc == "2" and "line 1 is longer than 65,536 bytes" in r.stderr, r.stderr
    assert time.perf_counter() - t0 < 60
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # this process: the same packages loaded
    assert int(rss_kb) < base + 200_000  # KB: the reader holds one chunk (1 MiB) and one line at the most


def test_a_long_line_is_refused_as_such(tmp_path):
    """A 200 MB line without a line break was reported with a hint about quotes that were not there."""
    p = tmp_path / "one.csv"
    p.write_bytes(b"time_s,level,unit\n" + b"1" * (MAX_LINE_BYTES + 10))
    with pytest.raises(spare_mc.UsageValueError, match=r"one.csv: line 2 is longer than 65,536 bytes"):
        read_failure_log(p, SMALL)


@pytest.mark.parametrize("breaks", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64])
def test_chunk_boundaries_change_nothing(tmp_path, monkeypatch, breaks, chunk):
    """Every line break (``\\r\\n`` split across two chunks included) and a byte-order mark read the same in chunks
    of any size; line numbers in errors too."""
    rows = [(1.5, "gpu", 3), (2, "node", 1), (7.25, "gpu", 0)]
    p = _log(tmp_path / "a.csv", rows, breaks=breaks)
    p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())
    whole = read_failure_log(p, SMALL)
    monkeypatch.setattr(fl, "_CHUNK_BYTES", chunk)
    cut = read_failure_log(p, SMALL)
    for a, b in ((whole.time_s, cut.time_s), (whole.level, cut.level), (whole.unit, cut.unit)):
        assert np.array_equal(a, b)
    assert (whole.comments, whole.duration_s) == (cut.comments, cut.duration_s) == (("made by hand",), 1e6)
    bad = _log(tmp_path / "b.csv", [*rows, (3, "gpu", 1)], breaks=breaks)
    with pytest.raises(spare_mc.UsageValueError, match=r"b.csv: line 7 \(data row 4\): `time_s` must be "
                                                       r"non-decreasing"):
        read_failure_log(bad, SMALL)


def test_bytes_that_are_not_utf8_name_their_byte_and_line(tmp_path, monkeypatch):
    p = tmp_path / "x.csv"
    p.write_bytes(b"time_s,level,unit\n1,gpu,0\n2,g\xffpu,1\n")
    for chunk in (4, 1 << 20):
        monkeypatch.setattr(fl, "_CHUNK_BYTES", chunk)
        with pytest.raises(spare_mc.UsageValueError, match=r"not UTF-8 text \(byte 29: invalid start byte; line 3\)"):
            read_failure_log(p, SMALL)


def test_the_rows_are_read_within_the_memory_budget(tmp_path):
    """The rows accumulate against ``--max-memory`` as they are read (a 4-million-row log took 15 times its size and
    ignored the limit)."""
    n = 70_000
    p = tmp_path / "long.csv"
    p.write_text("time_s,level,unit\n" + "".join(f"{i + 1},gpu,{i % 64}\n" for i in range(n)))
    with spare_mc.set_options(max_memory=2 * 2**20):
        with pytest.raises(ResourceLimitError, match=r"reading the failure log .*long.csv"):
            read_failure_log(p, SMALL)
    log = read_failure_log(p, SMALL)
    assert len(log) == n and log.time_s[-1] == n
