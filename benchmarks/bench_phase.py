"""Benchmark: the cost of one cell of the phase map and of the whole map, against one job of the paper's setting,
measured in one run.

The reference is one job of the paper's setting (SPARe+CKPT, N = 600, r = 8, 10,000 steps, the default
:class:`~spare_mc.TimelineConfig`), timed as the median over a few replications. Then, at every cluster size of the
full map (:class:`spare_mc.analyses.phase.PhaseStudy` defaults: six strategies, each searched over its ``r`` range and nine
period factors with ``reps`` replications, then confirmed), two cells are timed -- the cheapest-looking and the
dearest-looking corner of the grid, (smallest ``T_s``, smallest ``T_r``) and (largest, largest) -- and their mean
times the cells per size gives the whole map's serial cost; on ``W`` cores with one cell per process it is about
``1 / W`` of that (cells are independent; the largest cluster size dominates). The quick flavour
(:data:`spare_mc.analyses.phase.QUICK`, what ``reproduce --quick`` runs) is timed whole, serially. Reported: seconds per
cell, the same in reference jobs (the ratio, which is what transfers to another machine), and the map estimates.

Usage: ``python benchmarks/bench_phase.py [--json] [--kinds today,modern] [--workers 2]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from spare_mc.analyses.phase import PhaseStudy, run_phase_cell, run_phase_study
from spare_mc.ttt.config import TimelineConfig
from spare_mc.ttt.run import simulate_ttt


def _reference_job_s(reps: int = 5) -> float:
    cfg = TimelineConfig("spare", 600, r=8)
    simulate_ttt(cfg, 1, rng=0)  # compile / load the cache
    times = []
    for i in range(reps):
        t = time.perf_counter()
        simulate_ttt(cfg, 1, rng=0, first_rep=i)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--kinds", default=None, help="comma-separated checkpointing kinds (default: the study's)")
    ap.add_argument("--workers", type=int, default=2, help="cores the whole map is estimated for (default 2)")
    ap.add_argument("--skip-quick", action="store_true", help="do not time the quick map")
    args = ap.parse_args(argv)
    kw = {} if args.kinds is None else {"kinds": tuple(k.strip() for k in args.kinds.split(",") if k.strip())}
    study = PhaseStudy(**kw)
    ref = _reference_job_s()
    run_phase_cell(PhaseStudy(**{**kw, "n_gpus": (16_384,), "n_steps": 200, "reps": 2, "confirm_reps": 2,
                                 "period_factors": (1.0,)}), 16_384, 1.0, 60.0)  # compile every kernel first
    out = {"benchmark": "phase", "reference_job_s": ref,
           "reference": "one job of SPARe+CKPT, N = 600, r = 8, 10,000 steps (paper setting), median of 5",
           "kinds": list(study.kinds), "reps": study.reps, "confirm_reps": study.confirm_reps,
           "period_factors": list(study.period_factors), "cells": {}}
    cells_per_size = len(study.save_s) * len(study.restart_s)
    serial = 0.0
    for g in study.n_gpus:
        times = []
        for s, r in ((study.save_s[0], study.restart_s[0]), (study.save_s[-1], study.restart_s[-1])):
            t = time.perf_counter()
            run_phase_cell(study, g, s, r)
            times.append(time.perf_counter() - t)
        mean = sum(times) / len(times)
        out["cells"][str(g)] = {"cell_s": times, "corners": [[study.save_s[0], study.restart_s[0]],
                                                              [study.save_s[-1], study.restart_s[-1]]],
                                "cell_s_mean": mean, "cell_in_reference_jobs": mean / ref}
        serial += mean * cells_per_size
    out["cells_per_size"] = cells_per_size
    out["full_map_serial_s"] = serial
    out["full_map_workers"] = args.workers
    out["full_map_s_on_workers"] = serial / args.workers
    out["full_map_in_reference_jobs"] = serial / ref
    if not args.skip_quick:
        q = PhaseStudy.quick(**kw)
        t = time.perf_counter()
        run_phase_study(q)
        out["quick_map_s"] = time.perf_counter() - t
        out["quick_map_cells"] = len(q.n_gpus) * len(q.save_s) * len(q.restart_s)
        out["quick_map_in_reference_jobs"] = out["quick_map_s"] / ref
    if args.json:
        print(json.dumps(out))
    else:
        print(f"reference job (SPARe N=600 r=8): {ref * 1e3:.1f} ms")
        for g, c in out["cells"].items():
            print(f"{int(g):>7} GPUs: {c['cell_s_mean']:6.1f} s per cell ({c['cell_in_reference_jobs']:.0f} "
                  f"reference jobs; corners {', '.join(f'{x:.1f}' for x in c['cell_s'])} s)")
        print(f"whole map ({cells_per_size * len(study.n_gpus)} cells): {serial:.0f} s serial, about "
              f"{serial / args.workers:.0f} s on {args.workers} cores")
        if "quick_map_s" in out:
            print(f"quick map ({out['quick_map_cells']} cells, serial): {out['quick_map_s']:.1f} s")
    return out


if __name__ == "__main__":
    main()
