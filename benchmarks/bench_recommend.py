"""Benchmark: the time of :func:`spare_mc.analyses.recommend.recommend` for a typical case, split into its parts,
in one run.

The case: a one-year node log of a 512-node cluster (8 GPUs a node, N = 64 groups of 8 nodes), its nodes
independent Weibull renewals (mean life 100 days, shape 0.7, stationary ages: about 1,900 failures a year, the scale
of the public HPC logs), recorded at a minute's resolution; a job of ``--n-steps`` (default 5,000) steps with the
timeline's default costs; the default candidates (CKPT-only, Rep r = 2, SPARe r = 2, 3, 4, each at 0.5, 1 and 2
times the theory period: 15 candidates) on ``--reps`` jobs each (default 100), the predictive check at 200 sims,
the replay from up to 60 start times. Both models are timed: ``system`` (the default) and ``unit`` (node level).

The parts are timed inside one call of ``recommend`` by wrapping the functions it calls (so they add up to the
call, less its own bookkeeping): ``fit`` (``fit_model``), ``check`` (``predictive_check``), ``candidates`` (every
``simulate_ttt`` / ``simulate_stream_ttt`` run) and ``replay`` (``replay_log_ttt``). A first call on a small log
loads the numba caches; then ``--repeat`` calls (default 3), medians reported, with the ratio of each part to
the whole and the cost of one candidate in timeline jobs (``candidates / (15 reps)``).

Usage: ``python benchmarks/bench_recommend.py [--json] [--quick] [--repeat 3] [--reps 100] [--n-steps 5000]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from spare_mc.analyses import recommend as rec_mod
from spare_mc.logs.failure_log import FailureLog, log_levels
from spare_mc.model.topology import Topology
from spare_mc.model.unit_renewal import UnitRenewal

NODES, GPUS_PER_NODE, N_GROUPS = 512, 8, 64
MEAN_S, SHAPE, TICK_S, YEAR_S = 100 * 86400.0, 0.7, 60.0, 365 * 86400.0
PARTS = {"fit": "fit_model", "check": "predictive_check", "candidates": ("simulate_ttt", "simulate_stream_ttt"),
         "replay": "replay_log_ttt"}


def node_log(window_s=YEAR_S, seed=7) -> FailureLog:
    """The case's log (module docstring); a node's repeat within one minute is dropped."""
    topo = Topology(NODES * GPUS_PER_NODE, N_GROUPS, gpus_per_node=GPUS_PER_NODE)
    t, u = UnitRenewal("node", MEAN_S, SHAPE).stream(topo, rng=seed).until(window_s)
    t = np.ceil(t / TICK_S) * TICK_S
    o = np.lexsort((u, t))
    t, u = t[o], u[o]
    keep = np.ones(t.size, dtype=bool)
    by_unit = np.lexsort((t, u))
    keep[by_unit[1:]] = ~((u[by_unit[1:]] == u[by_unit[:-1]]) & (t[by_unit[1:]] == t[by_unit[:-1]]))
    levels = log_levels(topo)
    return FailureLog(t[keep], np.full(int(keep.sum()), levels.index("node"), dtype=np.int64), u[keep], None,
                      float(window_s), topo, levels, f"one-year log of {NODES} nodes")


class _Timer:
    """Wraps the functions ``recommend`` calls (module attributes of :mod:`spare_mc.analyses.recommend`) and adds
    up their time per part."""

    def __init__(self):
        self.seconds = dict.fromkeys(PARTS, 0.0)
        self.calls = dict.fromkeys(PARTS, 0)
        self._saved = {}

    def __enter__(self):
        for part, names in PARTS.items():
            for name in (names,) if isinstance(names, str) else names:
                fn = getattr(rec_mod, name)
                self._saved[name] = fn
                setattr(rec_mod, name, self._wrap(part, fn))
        return self

    def _wrap(self, part, fn):
        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.seconds[part] += time.perf_counter() - t0
                self.calls[part] += 1
        return timed

    def __exit__(self, *exc):
        for name, fn in self._saved.items():
            setattr(rec_mod, name, fn)


def timed_recommend(log, **kw) -> tuple:
    with _Timer() as tm:
        t0 = time.perf_counter()
        res = rec_mod.recommend(log, **kw)
        total = time.perf_counter() - t0
    return total, tm.seconds, tm.calls, res


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="CI: 1 repeat, 20 reps per candidate, 1,000 steps")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reps", type=int, default=100, help="jobs per candidate (recommend's default 100)")
    ap.add_argument("--n-steps", type=int, default=5000)
    ap.add_argument("--models", default="system,unit")
    args = ap.parse_args(argv)
    if args.quick:
        args.repeat, args.reps, args.n_steps = 1, 20, 1000
    log = node_log()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    warm = node_log(30 * 86400.0, seed=8)
    for model in models:  # numba caches, imports
        rec_mod.recommend(warm, n_steps=200, model=model, reps=2, replay_starts=2, spare_r=(2,),
                          period_factors=(1.0,), accept_failed_check=True)
    out = {"benchmark": "recommend", "nodes": NODES, "n_groups": N_GROUPS, "n_gpus": NODES * GPUS_PER_NODE,
           "events": len(log), "window_s": log.duration_s, "n_steps": args.n_steps, "reps": args.reps,
           "repeat": args.repeat, "models": {}}
    for model in models:
        runs = []
        for i in range(args.repeat):
            total, parts, calls, res = timed_recommend(log, n_steps=args.n_steps, model=model, reps=args.reps,
                                                       rng=i, accept_failed_check=True)
            runs.append((total, parts))
        med = {p: statistics.median(r[1][p] for r in runs) for p in PARTS}
        tot = statistics.median(r[0] for r in runs)
        n_cand = calls["candidates"]
        out["models"][model] = {
            "total_s": tot, "total_s_all": [r[0] for r in runs], "parts_s": med,
            "share": {p: med[p] / tot for p in PARTS}, "other_s": tot - sum(med.values()),
            "candidates": n_cand, "per_candidate_s": med["candidates"] / n_cand,
            "per_job_ms": med["candidates"] / (n_cand * args.reps) * 1e3,
            "replay_starts": res.replay.get("starts"), "check_passed": res.model_check_passed,
            "best": {k: res.best[k] for k in ("strategy", "r", "ckpt_period_s", "ttt_over_t0")}}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"recommend: one-year log of {NODES} nodes ({len(log):,} events), N = {N_GROUPS}, "
              f"{args.n_steps} steps, {args.reps} jobs per candidate, medians of {args.repeat}")
        for model, m in out["models"].items():
            parts = ", ".join(f"{p} {m['parts_s'][p]:.2f} s ({m['share'][p]:.0%})" for p in PARTS)
            print(f"  {model:>6}: {m['total_s']:.2f} s = {parts}; {m['candidates']} candidates, "
                  f"{m['per_job_ms']:.2f} ms per job; check passed: {m['check_passed']}")
    return out


if __name__ == "__main__":
    main()
