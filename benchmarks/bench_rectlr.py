"""Benchmark: incremental ReCtlr vs solving every failure from scratch, measured in one run.

For cyclic unit stride with r = 9 at N = 1000 and N = 10,000, failures in uniform order until the wipe-out:

- ``incremental``: :func:`spare_mc.overhead_mc` (numba; repair by augmenting paths from the orphaned types);
- ``numba_scratch``: the same kernels with ``from_scratch=True`` (every phase solved from an empty assignment);
- ``scipy_scratch``: :func:`spare_mc.testing.rectlr_reference` (scipy ``maximum_bipartite_matching`` and
  ``min_weight_full_bipartite_matching`` on capacity-split graphs), timed on failures sampled evenly along real
  trajectories (the controller state is advanced by the fast kernel between samples).

All times are per failure (per ReCtlr call, wipe-out included); the ratios ``scipy_scratch / incremental``
(target >= 20) and ``numba_scratch / incremental`` are what matter, not the absolute times. The incremental cost is
also printed in ns per ReCtlr failure against the 200 ns aim of issue 12 (item 5): it includes the driver's bounded
draw and bookkeeping per failure, which are a few ns. Then the growth of the incremental cost with N (N = 200 ...
10,000): per trial and per failure, with log-log slopes.

Where the time goes (``breakdown``): at the paper's SPARe setting (cyclic N = 600, r = 8) and at N = 1000, r = 9,
every ReCtlr call of whole trajectories is timed by the processor's cycle counter (LLVM ``readcyclecounter``,
converted to ns against ``time.perf_counter``; each call's least time over 3 runs of the same trajectories), and
split into the calls Phase 0 settles (no move) and the calls that run Phase 2 (the min-cost search and the patch
search). The counter's own cost is in every call (tens of ns). The aim of issue 38 (item 1), checked at N = 1000,
r = 9 in the same run: a Phase-2 call costs at most 3 Phase-0 calls and the mean call at most 2 (both ratios printed
with PASS or FAIL).

``--before REV`` also times the incremental solver of revision ``REV`` (checked out into a temporary git worktree and
run in a subprocess of this run) on the same failures at cyclic N = 600, r = 8 and N = 1000, r = 9, and reports the
speed-up of this checkout over it.

Usage: ``python benchmarks/bench_rectlr.py [--json] [--quick] [--before REV]``
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
from _revision import at_revision
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

import spare_mc as sm
from spare_mc._kernels import rectlr as _rk
from spare_mc._kernels.timeline import live_state
from spare_mc.mc.reorder import ReCtlr, overhead_mc
from spare_mc.testing import rectlr_reference

TARGET_NS = 200.0  # ns per ReCtlr failure (issue 12, item 5)
#: issue 38, item 1: at N = 1000, r = 9, a Phase-2 call <= 3 Phase-0 calls and the mean call <= 2
TARGET_PHASE2_OVER_PHASE0, TARGET_MEAN_OVER_PHASE0 = 3.0, 2.0


def _per_failure(layout, n, r, trials, seed, from_scratch=False, repeat=3):
    """Best-of-``repeat`` seconds per failure (and per trial) of the numba driver."""
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = overhead_mc(layout, trials, n_groups=n, r=r, from_scratch=from_scratch, rng=seed)
        dt = time.perf_counter() - t0
        best = min(best, dt)
    failures = int(res.rep_stats["T"].sum())
    return best / failures, best / trials, failures / trials


def _scipy_per_failure(n, r, samples, seed):
    """Mean seconds of one from-scratch scipy ReCtlr call, over ``samples`` failures spread along trajectories."""
    rng = np.random.default_rng(seed)
    layout = sm.cyclic(n, r)
    mean_t = sm.exact_wipeout("cyclic", n, r).mean
    stride = max(1, int(mean_t // samples))
    times = []
    while len(times) < samples:
        ctl = ReCtlr(layout)
        for i, g in enumerate(rng.permutation(n)):
            if i % stride == 0:
                stacks, alive, s = ctl.stacks(), ctl.alive, ctl.stack_number
                t0 = time.perf_counter()
                rectlr_reference(stacks, alive, [int(g)], s)
                times.append(time.perf_counter() - t0)
            if ctl.fail(int(g)).wiped or len(times) >= samples:
                break
    return float(np.mean(times)), len(times)


#: the before/after comparison's cases: (N, r, trials)
COMPARE = ((600, 8, 300), (1000, 9, 200))
#: its timing, as source so that the "before" subprocess runs exactly the same code
COMPARE_SRC = r"""
import math, time
from spare_mc.mc.reorder import overhead_mc
def per_failure_ns(n, r, trials, repeat=5):
    overhead_mc("cyclic", 2, n_groups=n, r=r, rng=0)
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = overhead_mc("cyclic", trials, n_groups=n, r=r, rng=1)
        best = min(best, time.perf_counter() - t0)
    return best * 1e9 / int(res.rep_stats["T"].sum())
"""


def _compare(rev: str, quick: bool) -> list:
    """ns per failure of this checkout and of revision ``rev`` (a worktree, in a subprocess) on the same failures."""
    cases = [(n, r, max(10, t // 10) if quick else t) for n, r, t in COMPARE]
    ns: dict = {}
    exec(COMPARE_SRC, ns)  # noqa: S102 - our own source, shared with the subprocess
    code = COMPARE_SRC + "\nimport json\nprint(json.dumps([per_failure_ns(*c) for c in %r]))" % (cases,)
    with at_revision(rev) as run:
        # after, before, after, before, after: the fastest of each, so that a slow spell of a shared machine does
        # not land on one side only
        after = [ns["per_failure_ns"](*c) for c in cases]
        before = [math.inf] * len(cases)
        for _ in range(2):
            before = [min(b, x) for b, x in zip(before, run(code))]
            after = [min(a, ns["per_failure_ns"](*c)) for a, c in zip(after, cases)]
    return [{"n_groups": n, "r": r, "trials": t, "before_ns": b, "after_ns": a, "speedup": b / a}
            for (n, r, t), b, a in zip(cases, before, after)]


@intrinsic
def _cycles(typingctx):
    """The processor's cycle counter (``llvm.readcyclecounter``: the TSC on x86-64)."""
    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(64), []),
                                            "llvm.readcyclecounter")
        return builder.call(fn, [])
    return types.int64(), codegen


@njit
def _timed_calls(perms, holders, n, r, rec):
    """ReCtlr on failure orders ``perms`` (one trajectory per row, until the wipe-out), every call timed: ``rec``
    rows (cycles, 1 if Phase 0 settled it). Returns the number of calls."""
    st, rc = live_state(holders)
    if rc < 0:
        raise RuntimeError("ReCtlr found no initial assignment")
    saved = _rk.saved_state(st, n)
    newly = np.empty(1, np.int64)
    m = 0
    for trial in range(perms.shape[0]):
        _rk.reset_state(st, saved, r)
        for i in range(n):
            newly[0] = perms[trial, i]
            t0 = _cycles()
            rc = _rk.rectlr_step(newly, 1, False, n, r, st)
            dt = _cycles() - t0
            if rc < 0:
                raise RuntimeError("ReCtlr found no assignment although no type was wiped out")
            if rc == 1:  # the wipe-out ends the trajectory
                break
            rec[m, 0] = dt
            rec[m, 1] = st.out[_rk.O_PHASE0]
            m += 1
    return m


def _ns_per_cycle() -> float:
    """Nanoseconds per tick of :func:`_cycles`, against ``time.perf_counter`` over 0.2 s."""
    @njit
    def now():
        return _cycles()
    now()
    c0, t0 = now(), time.perf_counter()
    time.sleep(0.2)
    return (time.perf_counter() - t0) * 1e9 / (now() - c0)


def _breakdown(n, r, trials, seed, ns_per_cycle, repeat=3):
    """Phase-0-only calls against Phase-2 calls: their share of the calls and of the time, ns per call. The same
    trajectories run ``repeat`` times (every call on the same state each time) and each call counts its least time:
    an interruption of a shared machine lands in one repeat, not in all."""
    rng = np.random.default_rng(seed)
    perms = np.array([rng.permutation(n) for _ in range(trials)])
    holders = np.ascontiguousarray(sm.cyclic(n, r).holders, dtype=np.int64)
    rec = np.zeros((trials * n, 2), np.int64)
    _timed_calls(perms[:1], holders, n, r, rec)  # compile
    m = _timed_calls(perms, holders, n, r, rec)
    best = rec[:m, 0].copy()
    for _ in range(repeat - 1):
        if _timed_calls(perms, holders, n, r, rec) != m:
            raise RuntimeError("the same trajectories made another number of calls")
        best = np.minimum(best, rec[:m, 0])
    cyc, p0 = best.astype(float) * ns_per_cycle, rec[:m, 1] == 1
    out = {"n_groups": n, "r": r, "calls": int(m), "ns_per_call": float(cyc.mean()),
           "phase0_share_of_calls": float(p0.mean()), "phase0_ns_per_call": float(cyc[p0].mean()),
           "phase2_ns_per_call": float(cyc[~p0].mean()), "phase2_share_of_time": float(cyc[~p0].sum() / cyc.sum()),
           "median_ns_per_call": float(np.median(cyc)), "phase0_median_ns": float(np.median(cyc[p0])),
           "phase2_median_ns": float(np.median(cyc[~p0]))}
    out["ratio_phase2_over_phase0"] = out["phase2_ns_per_call"] / out["phase0_ns_per_call"]
    out["ratio_mean_over_phase0"] = out["ns_per_call"] / out["phase0_ns_per_call"]
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--quick", action="store_true", help="fewer trials and samples (a smoke run)")
    ap.add_argument("--before", metavar="REV", help="also time revision REV's incremental solver (git worktree)")
    args = ap.parse_args(argv)
    q = args.quick
    r = 9
    overhead_mc("cyclic", 2, n_groups=50, r=3, rng=0)  # compile (or load the cache) outside the timings
    overhead_mc("cyclic", 2, n_groups=50, r=3, rng=0, from_scratch=True)
    rectlr_reference([[0, 1], [1, 0]], [True, True], [0], 1)

    cases = []
    for n, trials, scratch_trials, samples in ((1000, 40 if q else 400, 4 if q else 20, 10 if q else 40),
                                               (10_000, 3 if q else 20, 1, 3 if q else 8)):
        inc, inc_trial, fpt = _per_failure("cyclic", n, r, trials, 1)
        nsc, _, _ = _per_failure("cyclic", n, r, scratch_trials, 1, from_scratch=True, repeat=1)
        ssc, got = _scipy_per_failure(n, r, samples, 2)
        cases.append({"n_groups": n, "r": r, "layout": "cyclic", "failures_per_trial": fpt,
                      "incremental_us_per_failure": inc * 1e6, "incremental_ns_per_failure": inc * 1e9,
                      "numba_scratch_us_per_failure": nsc * 1e6,
                      "scipy_scratch_us_per_failure": ssc * 1e6, "scipy_samples": got,
                      "ratio_scipy_over_incremental": ssc / inc, "ratio_numba_scratch_over_incremental": nsc / inc,
                      "incremental_ms_per_trial": inc_trial * 1e3})

    growth = []
    for n in (200, 500, 1000, 2000, 5000, 10_000):
        trials = max(3, int((50 if q else 400) * 1000 / n))
        inc, inc_trial, fpt = _per_failure("cyclic", n, r, trials, 3)
        growth.append({"n_groups": n, "trials": trials, "failures_per_trial": fpt,
                       "us_per_failure": inc * 1e6, "ms_per_trial": inc_trial * 1e3})
    ln = np.log([g["n_groups"] for g in growth])
    slope_trial = float(np.polyfit(ln, np.log([g["ms_per_trial"] for g in growth]), 1)[0])
    slope_failure = float(np.polyfit(ln, np.log([g["us_per_failure"] for g in growth]), 1)[0])
    slope_fpt = float(np.polyfit(ln, np.log([g["failures_per_trial"] for g in growth]), 1)[0])
    ns_per_cycle = _ns_per_cycle()
    breakdown = [_breakdown(n, rr, 60 if q else 600, 4, ns_per_cycle) for n, rr in ((600, 8), (1000, 9))]
    out = {"benchmark": "rectlr", "quick": q, "cases": cases, "target_ratio_scipy_over_incremental": 20.0,
           "breakdown": breakdown, "before": None if args.before is None else
           {"revision": args.before, "cases": _compare(args.before, q)},
           "meets_target": all(c["ratio_scipy_over_incremental"] >= 20 for c in cases), "growth": growth,
           "target_ns_per_failure": TARGET_NS,
           "meets_ns_target": all(c["incremental_ns_per_failure"] <= TARGET_NS for c in cases),
           "loglog_slope_per_trial": slope_trial, "loglog_slope_per_failure": slope_failure,
           "loglog_slope_failures_per_trial": slope_fpt}
    b = next(b for b in breakdown if (b["n_groups"], b["r"]) == (1000, 9))
    out["meets_phase2_target"] = (b["ratio_phase2_over_phase0"] <= TARGET_PHASE2_OVER_PHASE0
                                  and b["ratio_mean_over_phase0"] <= TARGET_MEAN_OVER_PHASE0)
    if args.json:
        print(json.dumps(out))
    else:
        for c in cases:
            print(f"N={c['n_groups']:>6} r={r}: incremental {c['incremental_us_per_failure']:8.2f} us/failure | "
                  f"numba from scratch {c['numba_scratch_us_per_failure']:10.1f} us "
                  f"({c['ratio_numba_scratch_over_incremental']:.0f}x) | scipy from scratch "
                  f"{c['scipy_scratch_us_per_failure']:12.1f} us ({c['ratio_scipy_over_incremental']:.0f}x)")
        for c in cases:
            ok = "PASS" if c["incremental_ns_per_failure"] <= TARGET_NS else "FAIL"
            print(f"N={c['n_groups']:>6} r={r}: {c['incremental_ns_per_failure']:7.0f} ns per ReCtlr failure "
                  f"(aim <= {TARGET_NS:.0f} ns: {ok})")
        print("growth (cyclic, r=9):")
        for g in growth:
            print(f"  N={g['n_groups']:>6}: {g['failures_per_trial']:8.1f} failures/trial, "
                  f"{g['us_per_failure']:6.2f} us/failure, {g['ms_per_trial']:8.2f} ms/trial")
        print(f"log-log slopes vs N: per trial {slope_trial:.2f}, per failure {slope_failure:.2f}, "
              f"failures per trial {slope_fpt:.2f}")
        print("where the time goes (every call timed by the cycle counter, its own cost included):")
        for b in breakdown:
            print(f"  cyclic N={b['n_groups']} r={b['r']}: {b['ns_per_call']:.0f} ns per call; Phase 0 settles "
                  f"{b['phase0_share_of_calls']:.0%} of the calls at {b['phase0_ns_per_call']:.0f} ns, the other "
                  f"{1 - b['phase0_share_of_calls']:.0%} run Phase 2 at {b['phase2_ns_per_call']:.0f} ns: "
                  f"{b['phase2_share_of_time']:.0%} of the time (medians {b['phase0_median_ns']:.0f} and "
                  f"{b['phase2_median_ns']:.0f} ns)")
        b = next(b for b in breakdown if (b["n_groups"], b["r"]) == (1000, 9))
        for name, got, aim in (("Phase-2 call / Phase-0 call", b["ratio_phase2_over_phase0"],
                                TARGET_PHASE2_OVER_PHASE0),
                               ("mean call / Phase-0 call", b["ratio_mean_over_phase0"], TARGET_MEAN_OVER_PHASE0)):
            print(f"N=1000 r=9: {name} {got:.2f} (aim <= {aim:g}: {'PASS' if got <= aim else 'FAIL'})")
        if out["before"] is not None:
            for c in out["before"]["cases"]:
                print(f"  against {args.before}: cyclic N={c['n_groups']} r={c['r']}: {c['before_ns']:.0f} -> "
                      f"{c['after_ns']:.0f} ns per failure, {c['speedup']:.2f}x")
    return out


if __name__ == "__main__":
    main()
