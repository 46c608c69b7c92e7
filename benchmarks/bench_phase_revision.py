"""The whole phase map against another revision, cell by cell, in one run: the study's speed-up without the drift
of a shared machine.

Two studies run minutes apart compare the machine's speed as much as the code's (on the 2-core machine of issue 38
the same run of one revision varied by up to 2x within an hour). Here each revision gets a long-lived Python process
(this working tree, and ``--before REV`` checked out into a temporary git worktree), each with its own numba cache
warmed first on a small cell of another cluster size (untimed); the two then compute the map's cells
(:class:`spare_mc.analyses.phase.PhaseStudy` defaults, :func:`~spare_mc.analyses.phase.run_phase_cell`) one after
the other, never at once, the order flipping at every cell, so that a slow spell falls on both. ``--pairs P`` runs
``P`` such pairs side by side (one per core; the cells are dealt round-robin). Each cell is timed inside its
process.

Reported: the serial seconds of each revision over the cells (what the map costs on one core; on ``W`` cores about
``1 / W`` of it), their ratio ``before / this`` with a 95% interval over the cells (the delta method of
:func:`spare_mc.stats.ratio_estimate`: how much the ratio varies from cell to cell, not from run to run), the
same per cluster size, the per-cell ratios' median and range, and which cells gave the same row (every number but
``elapsed_s``; a revision with another ReCtlr tie rule gives other rows at the largest cluster).

Usage::

    python benchmarks/bench_phase_revision.py --before 8873803 [--pairs 2] [--cells 12] [--json]

The whole map takes about ``(before + this) / P`` of serial time: about 15 minutes for 8873803 against issue 38's
final code on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import threading

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _revision import REPO, worktree

WORKER = r"""
import hashlib, json, sys, time
from spare_mc.analyses.phase import PhaseStudy, run_phase_cell
study = PhaseStudy()
# compile (or load) every kernel a cell uses, untimed, on a small cell at a cluster size the map does not have (so
# that no timed cell finds its failure traces already drawn in the process's trace cache)
warm = PhaseStudy(n_gpus=(32_768,), n_steps=200, reps=2, confirm_reps=2, period_factors=(1.0,))
run_phase_cell(warm, 32_768, study.save_s[0], study.restart_s[0])
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    cell = json.loads(line)
    t = time.perf_counter()
    row = run_phase_cell(study, *cell)
    dt = time.perf_counter() - t
    row.pop("elapsed_s", None)
    digest = hashlib.sha256(json.dumps(row, sort_keys=True, default=str).encode()).hexdigest()
    print(json.dumps({"cell_s": dt, "digest": digest}), flush=True)
"""


class _Worker:
    """A Python process on ``path`` (its ``spare_mc``) with its own numba cache, computing cells on request; its
    standard error goes to ``cache + ".err"``, whose end a failure reports."""

    def __init__(self, path, cache: str):
        self.path, self.err = path, cache + ".err"
        env = {**os.environ, "PYTHONPATH": str(path), "NUMBA_CACHE_DIR": cache}
        with open(self.err, "w") as err:
            self.proc = subprocess.Popen([sys.executable, "-c", WORKER], cwd=str(path), env=env, text=True,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        self._read()  # ready

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            with open(self.err) as fh:
                tail = fh.read()[-2000:]
            raise RuntimeError(f"the worker on {self.path} ended (exit {self.proc.wait()}):\n{tail}")
        return json.loads(line)

    def cell(self, cell) -> dict:
        self.proc.stdin.write(json.dumps(list(cell)) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self):
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


def _pair(before_path, cells, caches, out, log, stop):
    """One pair of processes computing ``cells`` alternately (the order flips at every cell); rows into ``out``.
    Stops before its next cell once ``stop`` (a :class:`threading.Event`) is set."""
    workers = {}
    try:
        workers["before"] = _Worker(before_path, caches[0])
        workers["this"] = _Worker(REPO, caches[1])
        for i, cell in enumerate(cells):
            if stop.is_set():
                return
            row = {"cell": list(cell)}
            for name in (("before", "this") if i % 2 == 0 else ("this", "before")):
                row[name] = workers[name].cell(cell)
            out.append(row)
            log(f"{cell}: before {row['before']['cell_s']:.1f} s, this {row['this']['cell_s']:.1f} s")
    finally:
        for w in workers.values():
            w.close()


def _summary(rows) -> dict:
    from spare_mc.stats import ratio_estimate

    a = np.array([r["before"]["cell_s"] for r in rows])
    b = np.array([r["this"]["cell_s"] for r in rows])
    est = ratio_estimate(a, b, "before / this") if len(rows) > 1 else None  # delta method over the cells
    per = a / b
    out = {"cells": len(rows), "before_serial_s": float(a.sum()), "this_serial_s": float(b.sum()),
           "ratio": float(a.sum() / b.sum()),
           "ratio_ci95": [float(x) for x in est.ci] if est is not None else [math.nan, math.nan],
           "per_cell_ratio_median": float(np.median(per)), "per_cell_ratio_range": [float(per.min()), float(per.max())],
           "same_row": int(sum(r["before"]["digest"] == r["this"]["digest"] for r in rows)),
           "other_rows": [r["cell"] for r in rows if r["before"]["digest"] != r["this"]["digest"]], "by_n_gpus": {}}
    for g in sorted({r["cell"][0] for r in rows}):
        m = np.array([r["cell"][0] == g for r in rows])
        out["by_n_gpus"][str(g)] = {"cells": int(m.sum()), "before_serial_s": float(a[m].sum()),
                                    "this_serial_s": float(b[m].sum()), "ratio": float(a[m].sum() / b[m].sum())}
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, metavar="REV", help="the revision to compare with")
    ap.add_argument("--pairs", type=int, default=2, help="pairs of processes side by side (default 2: one per core)")
    ap.add_argument("--cells", type=int, default=None,
                    help="time only this many cells, spread over the map (default: all of them)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.pairs < 1:
        ap.error("--pairs must be at least 1")
    if args.cells is not None and args.cells < 1:
        ap.error("--cells must be at least 1")
    sys.path.insert(0, str(REPO))
    from spare_mc.analyses.phase import PhaseStudy

    study = PhaseStudy()
    cells = [(g, s, r) for g in study.n_gpus for s in study.save_s for r in study.restart_s]
    if args.cells is not None and args.cells < len(cells):
        cells = [cells[i] for i in np.linspace(0, len(cells) - 1, args.cells).round().astype(int)]
    log = (lambda msg: None) if args.json else (lambda msg: print(msg, flush=True))
    pairs = min(args.pairs, len(cells))
    rows: list = []
    with worktree(args.before) as wt, tempfile.TemporaryDirectory() as tmp:
        threads, errors, stop = [], [], threading.Event()

        def run(i):
            try:
                _pair(wt, cells[i::pairs], (os.path.join(tmp, f"b{i}"), os.path.join(tmp, f"t{i}")), rows, log, stop)
            except Exception as exc:  # noqa: BLE001 - raised below, once the other pairs have stopped
                errors.append(exc)
                stop.set()

        for i in range(pairs):
            threads.append(threading.Thread(target=run, args=(i,)))
            threads[-1].start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
    rows.sort(key=lambda row: cells.index(tuple(row["cell"])))  # the map's order, whichever pair finished first
    out = {"benchmark": "phase_revision", "before": args.before, "pairs": pairs, **_summary(rows),
           "rows": rows}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{out['cells']} cells: before ({args.before}) {out['before_serial_s']:.1f} s serial, this "
              f"{out['this_serial_s']:.1f} s: {out['ratio']:.2f}x [{out['ratio_ci95'][0]:.2f}, "
              f"{out['ratio_ci95'][1]:.2f}] (95% over the cells)")
        for g, v in out["by_n_gpus"].items():
            print(f"  {int(g):>7} GPUs ({v['cells']} cells): {v['before_serial_s']:.1f} against "
                  f"{v['this_serial_s']:.1f} s, {v['ratio']:.2f}x")
        lo, hi = out["per_cell_ratio_range"]
        print(f"per cell: median {out['per_cell_ratio_median']:.2f}x, {lo:.2f}-{hi:.2f}x; the same row in "
              f"{out['same_row']} of {out['cells']} cells")
    return out


if __name__ == "__main__":
    main()
