"""Benchmark: the time per job of every kind of timeline job, this tree against another revision, in one run.

A change made for one kind of job can slow another: on 2026-12-07 the Llama 3 preset's CKPT-only jobs were found
1.8x slower than a day before, after a change that made a first compilation shorter and was measured on the paper's
SPARe job only (docs/results/speed.md). This script runs the same list of jobs (:data:`KINDS`) on both revisions --
the paper's model for each strategy, each option with a kernel path of its own (immediate detection, stay-dead
restarts, lost saves, a dynamic checkpoint policy, repair, jitter, modern checkpointing, per-GPU unit clocks) and a
cluster preset (restarts started again and lost saves) -- and reports, per kind, the time per job on each and their
ratio.

Each revision runs in a process of its own with its own numba cache (``--before REV`` is checked out into a
temporary git worktree), which first runs every kind once (compiling it), then times each kind as the fastest of
``--batches`` calls of ``simulate_ttt(cfg, jobs, rng=[k, b])`` (what a study calls, the trace drawing included;
``k`` is the kind's index, so that no kind finds its traces in the per-process trace cache that an earlier kind
filled, which would credit the cache's saving to it; each batch's seeds are new, so a study's misses are timed). The two
processes alternate, ``--rounds`` times, each order first in turn, so that the machine's drift falls on both; the
ratio of a kind is the median over the rounds of ``before / this`` (> 1: this tree is faster). A kind whose ratio is
below ``--flag`` (default 0.9) is marked SLOWER. Each process also reports a digest of its first batch's times to
train, so that the report says which kinds give the same jobs on both (SPARe's differ where ReCtlr's tie rule
changed between them).

Usage: ``python benchmarks/bench_options_revision.py --before REV [--rounds 2] [--batches 3] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from _revision import REPO, worktree

#: (kind, TimelineConfig expression, jobs per batch). The expressions see ``sm`` (spare_mc), ``P`` (the paper's
#: setting as keyword arguments) and ``preset`` (the Llama 3 405B preset); they must build on both revisions.
KINDS = (
    ("ckpt, paper", "sm.TimelineConfig('ckpt', 600, **P)", 100),
    ("rep r=3, paper", "sm.TimelineConfig('rep', 600, r=3, **P)", 300),
    ("spare r=8, paper", "sm.TimelineConfig('spare', 600, r=8, **P)", 100),
    ("ckpt, immediate detection", "sm.TimelineConfig('ckpt', 600, detection='immediate', **P)", 100),
    ("rep r=3, stay-dead restarts", "sm.TimelineConfig('rep', 600, r=3, restart_failures='stay_dead', **P)", 300),
    ("ckpt, lost saves", "sm.TimelineConfig('ckpt', 600, ckpt_failure='lost', **P)", 100),
    ("rep r=3, hazard policy", "sm.TimelineConfig('rep', 600, r=3, ckpt_policy='hazard', **P)", 200),
    ("spare r=8, repair 30 min", "sm.TimelineConfig('spare', 600, r=8, repair='fixed', repair_s=1800.0, **P)", 50),
    ("rep r=3, jitter 0.05", "sm.TimelineConfig('rep', 600, r=3, n_steps=10_000, jitter_sd=0.05)", 200),
    ("rep r=3, modern checkpointing", "sm.TimelineConfig('rep', 600, r=3, memory_copies=2, ckpt_async=True, **P)",
     200),
    ("rep r=3, per-GPU Weibull clocks", ("sm.TimelineConfig('rep', 600, r=3, failures=sm.PerGPU(1.8e8, 0.8), "
                                         "ckpt_period_s=1800.0, **P)"), 10),
    # 1,000 seeds a batch, more than the trace cache holds: its cost when every job misses is timed
    ("ckpt, Llama 3 preset (restarts again, lost saves)", "preset.timeline_config()", 1000),
)

CODE = r"""
import hashlib, json, sys, time
import numpy as np
import spare_mc as sm
from spare_mc.analyses.clusters import llama3_405b
P = dict(n_steps=10_000, jitter_sd=0.0)
preset = llama3_405b()
kinds = json.loads(sys.argv[1])
batches = int(sys.argv[2])
cfgs = [(name, eval(expr), jobs) for name, expr, jobs in kinds]
if sys.argv[3] == "warm":
    for name, cfg, jobs in cfgs:
        sm.simulate_ttt(cfg, 2, rng=0)
    print(json.dumps({}))
    sys.exit(0)
out = {}
for k, (name, cfg, jobs) in enumerate(cfgs):
    best, digest = float("inf"), None
    for b in range(batches):
        t0 = time.perf_counter()
        res = sm.simulate_ttt(cfg, jobs, rng=[k, b + 1])
        best = min(best, time.perf_counter() - t0)
        if b == 0:
            digest = hashlib.sha256(np.asarray(res.values("ttt_over_t0"), dtype=np.float64).tobytes()).hexdigest()[:12]
    out[name] = {"ms_per_job": 1e3 * best / jobs, "digest": digest}
print(json.dumps(out))
"""


def _run(root, cache: str, batches: int, mode: str) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(root), "SPARE_MC_COMPILE_NOTICE": "0"}
    kinds = json.dumps([list(k) for k in KINDS])
    proc = subprocess.run([sys.executable, "-c", CODE, kinds, str(batches), mode], cwd=str(root), env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"the run in {root} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, metavar="REV", help="the revision to compare with (git worktree)")
    ap.add_argument("--rounds", type=int, default=2, help="alternations of the two revisions (default 2)")
    ap.add_argument("--batches", type=int, default=3, help="timed calls per kind, the fastest kept (default 3)")
    ap.add_argument("--flag", type=float, default=0.9, help="mark kinds whose ratio is below this (default 0.9)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.batches < 1:
        ap.error("--rounds and --batches must be at least 1")
    with worktree(args.before) as wt, tempfile.TemporaryDirectory() as c_this, \
            tempfile.TemporaryDirectory() as c_before:
        sides = {"this": (REPO, c_this), "before": (wt, c_before)}
        for root, cache in sides.values():  # compile every kind on both, untimed
            _run(root, cache, 1, "warm")
        rounds = []
        for i in range(args.rounds):
            order = ("this", "before") if i % 2 == 0 else ("before", "this")
            rounds.append({side: _run(*sides[side], args.batches, "time") for side in order})
    out = {"benchmark": "options_revision", "before": args.before, "rounds": args.rounds, "batches": args.batches,
           "kinds": {}}
    for name, _, jobs in KINDS:
        ratios = [r["before"][name]["ms_per_job"] / r["this"][name]["ms_per_job"] for r in rounds]
        out["kinds"][name] = {
            "jobs": jobs,
            "this_ms": [r["this"][name]["ms_per_job"] for r in rounds],
            "before_ms": [r["before"][name]["ms_per_job"] for r in rounds],
            "ratio": statistics.median(ratios), "ratios": ratios,
            "same_jobs": rounds[0]["this"][name]["digest"] == rounds[0]["before"][name]["digest"],
        }
    if args.json:
        print(json.dumps(out))
    else:
        print(f"time per job, this tree against {args.before} ({args.rounds} alternated rounds, fastest of "
              f"{args.batches} batches; ratio = before / this, > 1 faster)")
        for name, k in out["kinds"].items():
            flag = "  SLOWER" if k["ratio"] < args.flag else ""
            print(f"  {name:52} {min(k['before_ms']):8.3f} -> {min(k['this_ms']):8.3f} ms  x{k['ratio']:.2f} "
                  f"(rounds {', '.join(f'{x:.2f}' for x in k['ratios'])}; "
                  f"{'same jobs' if k['same_jobs'] else 'other jobs'}){flag}")
    return out


if __name__ == "__main__":
    main()
