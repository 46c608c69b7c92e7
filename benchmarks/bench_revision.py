"""This tree against another revision, in one run: cold start and time per timeline job.

For each revision (this working tree, and ``--before REV`` checked out into a temporary git worktree) a fresh Python
process, with an empty numba cache (``NUMBA_CACHE_DIR`` a new temporary folder), measures:

- ``import_s``: ``import spare_mc``;
- ``cold_spare_s``: the first ``simulate_ttt`` of the paper's SPARe job (N = 600, r = 8, one job): almost all of
  it is numba compiling the timeline and ReCtlr kernels;
- ``cold_rep_s``: then the first Rep job (N = 600, r = 3): what Rep compiles beyond SPARe;
- ``spare_ms``, ``rep_ms``: per job once compiled, the best of ``--batches`` batches of ``--jobs`` jobs (the
  fastest batch is the one least disturbed by other work on the machine).

The revisions alternate, ``--rounds`` times, each order first in turn (the first process of a pair can be slower),
and the report gives every round and the median of the per-round ratios ``this / before``. A ratio, not a time: the
machines are shared.

Usage::

    python benchmarks/bench_revision.py --before e27729f [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _revision import REPO, at_revision  # noqa: E402

CODE = r"""
import json, math, time
t0 = time.perf_counter()
import spare_mc as sm
out = {"import_s": time.perf_counter() - t0}
spare, rep = sm.TimelineConfig("spare", 600, r=8), sm.TimelineConfig("rep", 600, r=3)
for name, cfg in (("spare", spare), ("rep", rep)):
    t0 = time.perf_counter()
    sm.simulate_ttt(cfg, 1, rng=0)
    out[f"cold_{name}_s"] = time.perf_counter() - t0
for name, cfg in (("spare", spare), ("rep", rep)):
    best = math.inf
    for b in range(BATCHES):
        t0 = time.perf_counter()
        sm.simulate_ttt(cfg, JOBS, rng=b + 1)
        best = min(best, time.perf_counter() - t0)
    out[f"{name}_ms"] = 1e3 * best / JOBS
print(json.dumps(out))
"""

KEYS = ("import_s", "cold_spare_s", "cold_rep_s", "spare_ms", "rep_ms")


def _measure(run, code: str) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        os.environ["NUMBA_CACHE_DIR"] = cache  # inherited by the process `run` starts
        try:
            return run(code)
        finally:
            del os.environ["NUMBA_CACHE_DIR"]


def _here(code: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), env=env, check=True, capture_output=True,
                          text=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, metavar="REV", help="the revision to compare with")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=20, help="jobs per batch (warm timing)")
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    code = CODE.replace("BATCHES", str(args.batches)).replace("JOBS", str(args.jobs))
    rounds = []
    with at_revision(args.before) as before:
        for i in range(args.rounds):
            order = [("this", _here), ("before", before)]
            if i % 2:
                order.reverse()
            got = {name: _measure(run, code) for name, run in order}
            rounds.append(got)
    ratio = {k: statistics.median(r["this"][k] / r["before"][k] for r in rounds) for k in KEYS}
    out = {"before": args.before, "rounds": rounds, "median_ratio_this_over_before": ratio,
           "rev_this": subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                                      capture_output=True, text=True).stdout.strip()}
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"this tree ({out['rev_this']}) against {args.before}, {args.rounds} alternated rounds, empty numba cache:")
    print(f"{'':14s}" + "".join(f"{k:>14s}" for k in KEYS))
    for i, r in enumerate(rounds):
        for name in ("before", "this"):
            print(f"{f'round {i + 1} {name}':14s}" + "".join(f"{r[name][k]:14.3f}" for k in KEYS))
    print(f"{'ratio (median)':14s}" + "".join(f"{ratio[k]:14.3f}" for k in KEYS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
