"""Measured compute overhead of stacking: unit stride vs Sidon offsets vs random holders.

For each (N, r) -- the paper's N = 600, r = 20 point, and N in {200, 600, 1000} at the paper's r* = floor(log2 N +
0.833) and at the simulated SPARe optimum r = 8 -- runs ReCtlr at every failure until the wipe-out (uniform order)
and reports, with 95% confidence intervals: masked failures, the measured mean stack number E[sum S_k]/E[T], its
lower bound E[sum c(k)]/E[T] (exact where the law of T is known), the excess rho, the Phase-0 (HK-Fixed) rate, the
share of calls needing no move, moves and patch size per call. All layouts at one (N, r) start from the same seed,
but each replication consumes as many draws as its T, so their streams part after the first replication: the
layouts are compared as independent samples (their CIs are unpaired).

Usage: ``python experiments/overhead_layouts.py [--reps 2000] [--seed 2026] [--json PATH]``
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import spare_mc as sm

POINTS = [(600, 20), (200, sm.r_star(200)), (600, sm.r_star(600)), (1000, sm.r_star(1000)), (600, 8)]
LAYOUTS = ("cyclic", "sidon", "random")
KEYS = ("masked", "s_star_mean", "c_mean", "rho_mean", "hk_fixed_rate", "no_move_rate", "moves_mean", "patch_mean")


def run(reps: int, seed: int) -> list[dict]:
    rows = []
    for n, r in POINTS:
        for lay in LAYOUTS:
            t0 = time.perf_counter()
            res = sm.overhead_mc(lay, reps, n_groups=n, r=r, rng=np.random.SeedSequence(seed, spawn_key=(n, r)))
            row = {"n_groups": n, "r": r, "layout": lay, "reps": reps, "seconds": time.perf_counter() - t0}
            for key in KEYS:
                est = res.estimate(key)
                row[key] = est.mean
                row[f"{key}_ci95"] = list(est.ci)
            row["exact_c_mean"] = (sm.exact_stack_bound_sum(lay, n, r).c_mean if lay in sm.EXACT_LAYOUTS else None)
            row["paper_overhead_lower_bound"] = sm.overhead_lower_bound(n, r)
            row["paper_mu"] = sm.mu_paper(n, r)
            rows.append(row)
    return rows


def _fmt(row, key, digits=3):
    lo, hi = row[f"{key}_ci95"]
    return f"{row[key]:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000, help="replications per (N, r, layout)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--json", help="also write the rows to this JSON file")
    args = ap.parse_args(argv)
    rows = run(args.reps, args.seed)
    print("| N | r | layout | masked | S* mean | c(k) bound (exact) | rho | Phase-0 rate | no-move rate | moves/call "
          "| patch/call |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        ex = "" if row["exact_c_mean"] is None else f" ({row['exact_c_mean']:.3f})"
        print(f"| {row['n_groups']} | {row['r']} | {row['layout']} | {_fmt(row, 'masked', 1)} | "
              f"{_fmt(row, 's_star_mean')} | {_fmt(row, 'c_mean')}{ex} | {_fmt(row, 'rho_mean')} | "
              f"{_fmt(row, 'hk_fixed_rate')} | {_fmt(row, 'no_move_rate')} | {_fmt(row, 'moves_mean')} | "
              f"{_fmt(row, 'patch_mean')} |")
    print("paper: " + ", ".join(f"N={n} r={r}: mu={sm.mu_paper(n, r):.1f}, S-bar lower bound "
                                 f"{sm.overhead_lower_bound(n, r):.3f}" for n, r in POINTS))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
