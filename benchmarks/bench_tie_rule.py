"""Benchmark: how far a change of ReCtlr's tie rule moves its tie-dependent results, paired on the same failures.

This checkout and revision ``--before REV`` (checked out into a temporary git worktree and run in a subprocess of
this run) run the same failure trajectories (the same seeds):

- ``overhead_mc(layout, reps, n_groups=N, r=r, rng=seed)`` for cyclic N = 600, r = 8, cyclic N = 1000, r = 9, Sidon
  N = 600, r = 9 and random holders N = 300, r = 6: per replication ``T``, ``sum c(k)`` and ``sum S*`` (the
  tie-invariant quantities: checked identical replication by replication, the script fails otherwise), and the sums
  over its ReCtlr calls of the tie-dependent counts: Phase-0 successes, moves, the patch (largest extra shards per
  survivor), patch types and orphans;
- ``simulate_ttt(TimelineConfig("spare", 600, r=8), jobs, rng=seed)``, the paper's SPARe job: per job its time to
  train, tie dependent through the patch time. Its failures and wipe-outs are not invariant: a patch of another
  length moves every later failure to another point of the job (a wipe-out then loses another amount of work), so
  a job's result changes by much more than its patches do, in either direction; the mean over many jobs is what
  can be compared.

The shift of a per-call count is ``sum_i (new_i - old_i) / sum_i calls_i`` over replications ``i`` (the calls are
the same: ``T`` is), with a delta-method 95% interval (:func:`spare_mc.ratio_estimate`); the shift of the time to
train is the mean paired difference with its t interval. Both also relative to the old mean.

Usage: ``python benchmarks/bench_tie_rule.py --before REV [--reps 2000] [--jobs 200] [--json]``
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from _revision import at_revision

import spare_mc as sm

#: the overhead cases: (layout, N, r, seed)
CASES = (("cyclic", 600, 8, 1), ("cyclic", 1000, 9, 2), ("sidon", 600, 9, 3), ("random", 300, 6, 4))
COUNTS = ("phase0", "moves", "patch", "patch_types", "orphans")
INVARIANT = ("T", "calls", "sum_c", "sum_s")
#: run on both revisions: every case's per-replication columns and the timeline's per-job results, as JSON
RUN_SRC = r"""
import numpy as np
from spare_mc.mc.reorder import overhead_mc
from spare_mc.ttt.config import TimelineConfig
from spare_mc.ttt.run import simulate_ttt
def run_all(cases, reps, jobs, cols):
    out = {}
    for kind, n, r, seed in cases:
        res = overhead_mc(kind, reps, n_groups=n, r=r, rng=seed)
        out[f"{kind}-{n}-{r}"] = {c: np.asarray(res.rep_stats[c]).tolist() for c in cols}
    tt = simulate_ttt(TimelineConfig("spare", 600, r=8), jobs, rng=2026)
    out["ttt"] = {"ttt_s": [x.ttt_s for x in tt.runs], "failures": [x.failures for x in tt.runs],
                  "wipeouts": [x.wipeouts for x in tt.runs], "patch_s": [x.breakdown_s["patch"] for x in tt.runs]}
    return out
"""


def _shift_per_call(new, old, calls):
    """Per-call shift (new - old) with its 95% interval, and the old per-call mean."""
    d = np.asarray(new, float) - np.asarray(old, float)
    calls = np.asarray(calls, float)
    old_mean = float(np.sum(old) / calls.sum())
    if not d.any():
        return {"old": old_mean, "shift": 0.0, "ci95": [0.0, 0.0], "relative": 0.0}
    est = sm.ratio_estimate(d, calls)
    return {"old": old_mean, "new": float(np.sum(new) / calls.sum()), "shift": float(est.mean),
            "ci95": [float(est.ci[0]), float(est.ci[1])], "relative": float(est.mean / old_mean)}


def compare(before: dict, after: dict) -> dict:
    """The paired shifts of every tie-dependent quantity and the check of the invariant ones."""
    out = {"cases": {}, "invariant_identical": True}
    for key, a in after.items():
        b = before[key]
        if key == "ttt":
            d = np.asarray(a["ttt_s"]) - np.asarray(b["ttt_s"])
            est = sm.estimate_mean(d) if d.any() else None
            old = float(np.mean(b["ttt_s"]))
            out["ttt"] = {"jobs": len(d), "old_mean_s": old,
                          "shift_s": float(d.mean()), "ci95_s": [0.0, 0.0] if est is None else list(map(float, est.ci)),
                          "relative": float(d.mean() / old), "jobs_changed": int(np.count_nonzero(d)),
                          "patch_shift_s": float(np.mean(np.asarray(a["patch_s"]) - np.asarray(b["patch_s"]))),
                          "old_patch_s": float(np.mean(b["patch_s"]))}
            continue
        same = all(a[c] == b[c] for c in INVARIANT)
        out["invariant_identical"] &= same
        case = {"reps": len(a["T"]), "invariant_identical": same, "calls": int(np.sum(a["calls"]))}
        for c in COUNTS:
            case[c] = _shift_per_call(a[c], b[c], a["calls"])
        out["cases"][key] = case
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", metavar="REV", required=True, help="the revision to compare with (git worktree)")
    ap.add_argument("--reps", type=int, default=2000, help="replications per overhead case")
    ap.add_argument("--jobs", type=int, default=2000, help="timeline jobs")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    ns: dict = {}
    exec(RUN_SRC, ns)  # noqa: S102 - our own source, shared with the subprocess
    cols = INVARIANT + COUNTS
    after = ns["run_all"](CASES, args.reps, args.jobs, cols)
    code = RUN_SRC + f"\nimport json\nprint(json.dumps(run_all({CASES!r}, {args.reps}, {args.jobs}, {cols!r})))"
    with at_revision(args.before) as run:
        before = run(code)
    out = {"benchmark": "tie_rule", "before": args.before, "reps": args.reps, **compare(before, after)}
    if args.json:
        print(json.dumps(out))
        return out
    for key, case in out["cases"].items():
        print(f"{key} ({case['reps']} replications, {case['calls']} calls; T, calls, sum c(k), sum S* identical in "
              f"every replication: {case['invariant_identical']}), per call, old -> shift [95% CI]:")
        for c in COUNTS:
            s = case[c]
            print(f"  {c:<12} {s['old']:.4f} -> {s['shift']:+.4f} [{s['ci95'][0]:+.4f}, {s['ci95'][1]:+.4f}] "
                  f"({s['relative']:+.2%})")
    t = out["ttt"]
    print(f"SPARe timeline N=600 r=8 ({t['jobs']} jobs, {t['jobs_changed']} changed): TTT {t['old_mean_s']:.1f} s -> "
          f"{t['shift_s']:+.0f} s [{t['ci95_s'][0]:+.0f}, {t['ci95_s'][1]:+.0f}] ({t['relative']:+.3%}); patch time "
          f"{t['old_patch_s']:.0f} s per job -> {t['patch_shift_s']:+.0f} s")
    if not out["invariant_identical"]:
        raise SystemExit("a tie-invariant quantity differs between the revisions")
    return out


if __name__ == "__main__":
    main()
