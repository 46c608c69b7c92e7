"""Benchmark: the cost per job of the timeline's newer options against the same job without them, in one run.

On identical failure traces (paper setting, N = 600, jitter off): CKPT-only with and without the classical rules
(immediate detection, restarts started again, a final checkpoint); CKPT-only, Rep+CKPT (r = 3) and SPARe+CKPT
(r = 8) under the periodic checkpoint policy and the two dynamic ones (which check the period at every step
boundary instead of jumping to the next due checkpoint); Rep+CKPT and SPARe+CKPT with repair (fixed 30 min,
rejoining at the next step boundary) and without. Also the cost of one exact step-model expectation
(:func:`spare_mc.ttt.exact_ttt.exact_step_ttt`). Ratios > 1 mean the option costs more.

Usage: ``python benchmarks/bench_timeline_options.py [--json] [--reps 40] [--n-steps 10000]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import numpy as np

from spare_mc.ttt.exact_ttt import exact_step_ttt
from spare_mc.ttt.config import TimelineConfig
from spare_mc.ttt.run import _run_us, make_trace


def _per_job(cfg, traces):
    holders = cfg.layout_object().holders if cfg.strategy == "spare" else None
    _run_us(cfg, holders, *traces[0], jitter_rng=np.random.default_rng(0))  # compile / load the cache
    t0 = time.perf_counter()
    for tr in traces:
        _run_us(cfg, holders, *tr, jitter_rng=np.random.default_rng(0))
    return (time.perf_counter() - t0) / len(traces)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--n-steps", type=int, default=10_000)
    args = ap.parse_args(argv)
    out = {"benchmark": "timeline_options", "n_groups": 600, "n_steps": args.n_steps, "reps": args.reps}

    base = TimelineConfig("ckpt", 600, n_steps=args.n_steps, jitter_sd=0.0, shape=1.0)
    rng = np.random.default_rng(2026)
    traces = [make_trace(base, rng, 400_000) for _ in range(args.reps)]
    classical = dataclasses.replace(base, detection="immediate", restart_failures="restart_again",
                                    final_checkpoint=True)
    a, b = _per_job(base, traces), _per_job(classical, traces)
    out["classical_rules"] = {"strategy": "ckpt", "without_ms": a * 1e3, "with_ms": b * 1e3, "ratio": b / a}

    out["dynamic_policies"] = {}
    for strategy, r in (("ckpt", 1), ("rep", 3), ("spare", 8)):
        cfg = TimelineConfig(strategy, 600, r=r, n_steps=args.n_steps, jitter_sd=0.0)
        rng = np.random.default_rng(7)
        traces = [make_trace(cfg, rng, 400_000) for _ in range(args.reps)]
        periodic = _per_job(cfg, traces)
        row = {"periodic_ms": periodic * 1e3}
        for policy in ("hazard", "young_hazard"):
            t = _per_job(dataclasses.replace(cfg, ckpt_policy=policy), traces)
            row[f"{policy}_ms"] = t * 1e3
            row[f"{policy}_ratio"] = t / periodic
        out["dynamic_policies"][f"{strategy} r={r}"] = row

    out["repair"] = {}
    for strategy, r in (("rep", 3), ("spare", 8)):
        cfg = TimelineConfig(strategy, 600, r=r, n_steps=args.n_steps, jitter_sd=0.0)
        rng = np.random.default_rng(11)
        traces = [make_trace(cfg, rng, 400_000) for _ in range(args.reps)]
        a = _per_job(cfg, traces)
        b = _per_job(dataclasses.replace(cfg, repair="fixed", repair_s=1800.0), traces)
        out["repair"][f"{strategy} r={r}"] = {"without_ms": a * 1e3, "with_ms": b * 1e3, "ratio": b / a}

    exact = TimelineConfig("rep", 12, r=3, n_steps=200, compute_s=20.0, allreduce_s=5.0, mtbf_s=300.0, shape=1.0,
                           jitter_sd=0.0, restart_s=600.0, save_s=30.0, ckpt_period_s=900.0)
    t0 = time.perf_counter()
    value = exact_step_ttt(exact)
    out["exact_step_ttt"] = {"setting": "rep N=12 r=3, 200 steps", "seconds": time.perf_counter() - t0,
                             "configurations": value.n_configs, "rollback_points": value.rollback_points}
    if args.json:
        print(json.dumps(out))
    else:
        c = out["classical_rules"]
        print(f"classical rules (CKPT-only, N=600, {args.n_steps} steps): {c['without_ms']:.2f} ms -> "
              f"{c['with_ms']:.2f} ms per job (ratio {c['ratio']:.2f})")
        for name, row in out["dynamic_policies"].items():
            print(f"{name:>10}: periodic {row['periodic_ms']:.2f} ms; hazard {row['hazard_ms']:.2f} ms "
                  f"(x{row['hazard_ratio']:.2f}); young_hazard {row['young_hazard_ms']:.2f} ms "
                  f"(x{row['young_hazard_ratio']:.2f})")
        for name, row in out["repair"].items():
            print(f"{name:>10}: repair off {row['without_ms']:.2f} ms; on (30 min) {row['with_ms']:.2f} ms "
                  f"(x{row['ratio']:.2f})")
        e = out["exact_step_ttt"]
        print(f"exact_step_ttt ({e['setting']}): {e['seconds']:.2f} s, {e['configurations']} configurations, "
              f"{e['rollback_points']} rollback points")
    return out


if __name__ == "__main__":
    main()
