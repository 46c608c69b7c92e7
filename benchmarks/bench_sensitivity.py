"""Benchmark: the cost of the sensitivity study per variant, and how it scales with variants and workers.

At N = 600 (the default study's N) with the default grids (Rep r 2-6, SPARe r 2-14, five periods), a reduced
replication budget (``--reps`` screen, ``--pilot`` confirmation, no extension) keeps the run short; the cost of the
default study is this cost times about ``10 / reps`` for the screen, which dominates. Measured, each on a fresh
output folder (the numba cache warm, every dask cluster started before timing):

* wall time with 1, 2 and 4 variants (plus the baseline) on 2 workers: the cost per variant is the slope of a
  least-squares line through the three points, the intercept the fixed cost (baseline, cluster round trips);
* the 2-variant study on 1 worker, for the speed-up and parallel efficiency on 2 cores;
* the mean CPU time of one timeline job at the baseline's SPARe r = 2 and r = 14 and Rep r = 2 (the raw limit
  the sweep layer adds its overhead to), and the job count, so the study's own overhead is job CPU time vs wall
  time x workers.

Usage: ``python benchmarks/bench_sensitivity.py [--json] [--reps 3] [--pilot 6]``
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import numpy as np


def _variants(k):
    from spare_mc.analyses.sensitivity import default_variants

    pick = ["restart_stay_dead", "layout_sidon", "rep_redo_step", "mtbf_s_x2"]
    vs = {v.name: v for v in default_variants()}
    return [vs[n] for n in pick[:k]]


def _study(k, reps, pilot, address, tmp, tag):
    from spare_mc.analyses.sensitivity import sensitivity

    t0 = time.perf_counter()
    res = sensitivity((600,), variants=_variants(k), reps=reps, pilot_reps=pilot, target_pp=50.0,
                      max_confirm_reps=pilot, out_dir=os.path.join(tmp, tag), scheduler=address)
    return time.perf_counter() - t0, res


def _jobs(k, reps, pilot):
    """Timeline jobs the study runs: screen points x reps + confirmation points x pilot."""
    from spare_mc.analyses.sensitivity import _strategy_overrides
    from spare_mc.ttt.optimize import PERIOD_FACTORS

    n = 0
    for s, n_r in (("rep", 5), ("spare", 13)):
        nv = len(_strategy_overrides(_variants(k), s))
        n += nv * n_r * len(PERIOD_FACTORS) * reps + nv * pilot
    return n


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--reps", type=int, default=3, help="screen replications per point")
    ap.add_argument("--pilot", type=int, default=6, help="confirmation replications")
    args = ap.parse_args(argv)
    from distributed import LocalCluster

    from spare_mc._lib.seeding import trace_seed_sequence
    from spare_mc.ttt.config import TimelineConfig
    from spare_mc.ttt.run import run_timeline

    root = np.random.SeedSequence(99)
    job_ms = {}
    for s, r in (("spare", 2), ("spare", 14), ("rep", 2)):
        cfg = TimelineConfig(s, 600, r=r)
        run_timeline(cfg, trace_seed_sequence(root, 600, 0))
        t0 = time.process_time()
        for i in range(1, 6):
            run_timeline(cfg, trace_seed_sequence(root, 600, i))
        job_ms[f"{s}_r{r}"] = (time.process_time() - t0) / 5 * 1e3
    walls = {}
    with tempfile.TemporaryDirectory() as tmp:
        for workers in (2, 1):
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                              silence_logs=40) as cluster:
                addr = cluster.scheduler_address
                _study(1, 2, 4, addr, tmp, f"warm{workers}")  # workers compile / load the numba cache
                for k in ((1, 2, 4) if workers == 2 else (2,)):
                    walls[(workers, k)], _ = _study(k, args.reps, args.pilot, addr, tmp, f"w{workers}k{k}")
    ks = np.array([1, 2, 4], dtype=float)
    ts = np.array([walls[(2, 1)], walls[(2, 2)], walls[(2, 4)]])
    slope, intercept = np.polyfit(ks, ts, 1)
    speedup = walls[(1, 2)] / walls[(2, 2)]
    out = {"benchmark": "sensitivity", "n_groups": 600, "reps": args.reps, "pilot_reps": args.pilot,
           "wall_s_2_workers": {str(int(k)): t for k, t in zip(ks, ts)}, "wall_s_1_worker_2_variants": walls[(1, 2)],
           "s_per_variant_2_workers": float(slope), "fixed_s_2_workers": float(intercept),
           "speedup_2_vs_1_worker": speedup, "parallel_efficiency": speedup / 2, "job_cpu_ms": job_ms,
           "jobs": {str(int(k)): _jobs(int(k), args.reps, args.pilot) for k in ks},
           "default_study_s_per_variant_estimate": float(slope) * 10 / args.reps}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"N = 600, screen {args.reps} + confirmation {args.pilot} replications, 2 workers: "
              + ", ".join(f"{int(k)} variant(s) {t:.1f} s" for k, t in zip(ks, ts)))
        print(f"-> {slope:.1f} s per variant (+ {intercept:.1f} s fixed); the default study (10 screen "
              f"replications) about {out['default_study_s_per_variant_estimate']:.0f} s per variant")
        print(f"2 variants on 1 worker {walls[(1, 2)]:.1f} s: speed-up {speedup:.2f} on 2 workers, parallel "
              f"efficiency {speedup / 2:.0%}")
        print("one timeline job (CPU): " + ", ".join(f"{k} {v:.1f} ms" for k, v in job_ms.items()))
    return out


if __name__ == "__main__":
    main()
