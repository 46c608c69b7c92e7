"""Benchmark: the wipe-out kernels vs the numpy order-statistic baseline, per layout, measured in one run.

N = 1000, r = 9, uniform order without replacement, a fixed layout per row: ``cyclic`` (unit stride), ``sidon``,
``random`` (one fixed random-holders layout), ``block`` (Rep: 111 replica sets of 9 or 10 groups, as
``make_layout("block", 1000, 9)`` builds) and ``custom`` (the cyclic holder table with its groups relabelled by a
fixed permutation: a user's table, same law as cyclic). Each row runs the kernel :func:`spare_mc.wipeout_mc` runs
for it (:func:`spare_mc.mc.survivability.uniform_order_kernel`): ``block`` the replica sets' order statistics
(:func:`spare_mc._kernels.wipeout.wipeout_partition`, about one draw per set); ``cyclic`` the sliding-window maxima
of the groups' failure times (``wipeout_cyclic_window``); ``sidon``, ``random`` and ``custom`` the failure times'
order statistics on the holder table (``wipeout_order_stat``). The extra rows ``cyclic-seq``, ``sidon-seq`` and
``block-seq`` are the same layouts failure by failure (``wipeout_mc(method="sequential")``, which keeps common
random numbers between all layouts and with ``overhead_mc``): shown for comparison, without a target.

The baseline is :func:`spare_mc.testing.wipeout_order_statistics`: numpy, vectorised over replications in batches
of 500; per replication one uniform failure time per group, per type the max over its holders' times (the same
holder table as the kernel), the min over types (the wipe-out time) and ``T`` = its rank among the failure times.
It is a correct alternative method: the run checks that its mean ``T`` agrees with the kernel's (two-sample z,
p-value printed). Reported per layout: ns per trial and per failure of both, and the ratio of their per-trial
costs (target >= 5, PASS/FAIL). Times are medians of interleaved repeats. The raw limit is printed too: one bounded
draw (Lemire's method on the bit generator) per simulated failure, which the failure-by-failure kernels make.

``--compare-with FILE`` also times the kernels of another copy of ``spare_mc/_wipeout_kernels.py`` (e.g. the one
of an older commit, extracted with ``git show``) on the same layouts, in the same run: the before/after ratio (a
copy without the order-statistic or partition kernels runs failure by failure instead).

``--crossover`` instead times failure by failure against the order statistics on cyclic and random-holders layouts
at N = 200 and 1000, r = 2..9, next to ``E[T]/N`` and its estimate ``N^(-1/r)``: where the two cost the same is
:data:`spare_mc.mc.survivability.ORDER_STAT_MIN_FRACTION`, the fraction from which ``method="auto"`` takes the order
statistics.

Usage: ``python benchmarks/bench_wipeout.py [--json] [--reps 20000] [--baseline-reps 2000] [--compare-with F]
[--crossover]``
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import sys
import time

import numpy as np
from numba import njit
from scipy import stats

import spare_mc as sm
from spare_mc._kernels import wipeout as K
from spare_mc.mc.survivability import ORDER_STAT_MIN_FRACTION, order_stat_table, partition_classes, uniform_order_kernel
from spare_mc.testing import holder_table, wipeout_order_statistics

LAYOUT_NAMES = ("cyclic", "sidon", "random", "block", "custom", "cyclic-seq", "sidon-seq", "block-seq")
NO_TARGET = ("cyclic-seq", "sidon-seq", "block-seq")  # informational rows
TARGET = 5.0


@njit(cache=True)
def _raw_draws(next_u64, state, n, count):
    """``count`` bounded draws with the same shrinking bounds as a partial Fisher-Yates shuffle."""
    acc = 0
    i = 0
    for _ in range(count):
        acc += K.bounded(next_u64, state, n - i)
        i += 1
        if i == n // 2:
            i = 0
    return acc


def _layouts(n, r):
    cyc = sm.cyclic(n, r)
    relabel = np.random.default_rng(12).permutation(n)
    out = {"cyclic": cyc, "sidon": sm.sidon(n, r), "random": sm.random_holders(n, r, rng=1),
           "block": sm.make_layout("block", n, r), "custom": sm.Layout(relabel[cyc.holders], kind="custom")}
    out.update({f"{name}-seq": out[name] for name in ("cyclic", "sidon", "block")})
    return out


def _method(name):
    """The ``wipeout_mc`` method a row of the table runs: failure by failure for the ``-seq`` rows."""
    return "sequential" if name in NO_TARGET else "auto"


def _kernel_call(mod, layout, reps, rng, method="auto"):
    """The kernel :func:`spare_mc.wipeout_mc` dispatches to with ``method``, called directly from module ``mod``; an
    older copy without the order-statistic (or partition) kernels runs failure by failure instead. Returns T."""
    n = layout.n_groups
    out_T = np.empty(reps, np.int64)
    out_d = np.empty(reps, np.int64)
    src = mod.raw_source(rng)
    kernel = uniform_order_kernel(layout, method)
    if kernel in ("cyclic-window", "order") and not hasattr(mod, "wipeout_order_stat"):
        kernel = "cyclic-unit" if kernel == "cyclic-window" else "sequential"
    if kernel == "partition" and not hasattr(mod, "wipeout_partition"):
        kernel = "sequential"
    if kernel == "cyclic-window":
        mod.wipeout_cyclic_window(*src, n, layout.r, order_stat_table(layout), reps, 0, out_T, out_d)
    elif kernel == "order":
        mod.wipeout_order_stat(*src, n, order_stat_table(layout), reps, 0, out_T, out_d)
    elif kernel == "cyclic-unit":
        mod.wipeout_cyclic_unit(*src, n, layout.r, reps, False, out_T, out_d)
    elif kernel == "partition":
        mod.wipeout_partition(*src, n, *partition_classes(layout), reps, out_T, out_d)
    else:
        hp = layout.sizes.copy() if isinstance(layout, sm.ReplicaSets) else np.full(n, layout.r, np.int64)
        mod.wipeout_generic(*src, n, layout.group_ptr, layout.group_types, hp, reps, False, out_T, out_d)
    return out_T


def crossover(reps: int, repeat: int) -> list:
    """Failure by failure against the order statistics per (layout, N, r), min of ``repeat`` interleaved timings:
    ``[{layout, n_groups, r, mean_T_over_N, estimate, sequential_over_order}]``."""
    rows = []
    for n in (200, 1000):
        for r in range(2, 10):
            for name, lay in (("cyclic", sm.cyclic(n, r)), ("random", sm.random_holders(n, r, rng=1))):
                calls = {method: functools.partial(_kernel_call, K, lay, reps, method=method)
                         for method in ("sequential", "order")}
                for call in calls.values():  # compile or load the caches outside the timings
                    call(np.random.default_rng(0))
                best = dict.fromkeys(calls, np.inf)
                for rep in range(repeat):
                    for key, call in calls.items():
                        dt, T = _timed(lambda: call(np.random.default_rng([rep, n, r])))
                        best[key] = min(best[key], dt)
                rows.append({"layout": name, "n_groups": n, "r": r, "mean_T_over_N": float(T.mean() / n),
                             "estimate": float(n) ** (-1.0 / r),
                             "sequential_over_order": best["sequential"] / best["order"]})
    return rows


def _load_kernels(path):
    # a submodule of spare_mc, so that a copy's relative imports (``from ._draws import ...``) resolve
    spec = importlib.util.spec_from_file_location("spare_mc._wipeout_kernels_compared", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # numba's cache finds the module by name
    spec.loader.exec_module(mod)
    return mod


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--reps", "--trials", dest="reps", type=int, default=20_000,
                   help="kernel replications per layout and repeat (--trials: the old name)")
    p.add_argument("--baseline-reps", type=int, default=2000, help="baseline replications per layout and repeat")
    p.add_argument("--repeat", type=int, default=5, help="interleaved repeats (medians are reported)")
    p.add_argument("--n-groups", type=int, default=1000)
    p.add_argument("--r", type=int, default=9)
    p.add_argument("--compare-with", default=None, help="another _wipeout_kernels.py to time on the same layouts")
    p.add_argument("--crossover", action="store_true",
                   help="failure by failure vs order statistics against E[T]/N (cyclic, random; N = 200, 1000)")
    a = p.parse_args(argv)
    if a.crossover:
        rows = crossover(min(a.reps, 4000), a.repeat)
        if a.json:
            print(json.dumps({"benchmark": "wipeout-crossover", "rows": rows}))
        else:
            print(f"{'layout':<7} {'N':>5} {'r':>2} {'E[T]/N':>7} {'N^(-1/r)':>8} {'sequential/order':>16}")
            for row in rows:
                print(f"{row['layout']:<7} {row['n_groups']:5d} {row['r']:2d} {row['mean_T_over_N']:7.3f} "
                      f"{row['estimate']:8.3f} {row['sequential_over_order']:16.2f}")
            print(f"method='auto' takes the order statistics from N^(-1/r) >= {ORDER_STAT_MIN_FRACTION}")
        return {"rows": rows}
    n, r = a.n_groups, a.r
    layouts = _layouts(n, r)
    tables = {name: holder_table(lay) for name, lay in layouts.items()}
    kernels = {"ours": K}
    if a.compare_with:
        kernels["compared"] = _load_kernels(a.compare_with)
    for name, lay in layouts.items():  # compile or load the caches outside the timings
        for mod in kernels.values():
            _kernel_call(mod, lay, 3, np.random.default_rng(0), _method(name))
    wipeout_order_statistics(tables["cyclic"], n, 10, np.random.default_rng(0))
    _raw_draws(*K.raw_source(keep := np.random.default_rng(0)), n, 10)  # `keep`: the state is used by address

    times = {(name, who): [] for name in layouts for who in [*kernels, "baseline"]}
    failures = {key: 0 for key in times}
    trials = {key: 0 for key in times}
    samples = {name: {"ours": [], "baseline": []} for name in layouts}
    for rep in range(a.repeat):
        for name, lay in layouts.items():
            for who, mod in kernels.items():
                dt, T = _timed(lambda: _kernel_call(mod, lay, a.reps, np.random.default_rng([rep, 1]),
                                                    _method(name)))
                times[name, who].append(dt / a.reps)
                failures[name, who] += int(T.sum())
                trials[name, who] += a.reps
                if who == "ours":
                    samples[name]["ours"].append(T)
            dt, T = _timed(lambda: wipeout_order_statistics(tables[name], n, a.baseline_reps,
                                                            np.random.default_rng([rep, 2])))
            times[name, "baseline"].append(dt / a.baseline_reps)
            failures[name, "baseline"] += int(T.sum())
            trials[name, "baseline"] += a.baseline_reps
            samples[name]["baseline"].append(T)
    # the raw limit: the bounded draws of the cyclic layout's failures
    cyc_failures = failures["cyclic", "ours"] // a.repeat
    raw = []
    for rep in range(a.repeat):
        keep = np.random.default_rng(rep)
        dt, _ = _timed(lambda: _raw_draws(*K.raw_source(keep), n, cyc_failures))
        raw.append(dt / cyc_failures)
    raw_ns = 1e9 * float(np.median(raw))

    rows = []
    for name in layouts:
        row = {"layout": name}
        for who in [*kernels, "baseline"]:
            per_trial = float(np.median(times[name, who]))
            row[f"{who}_ns_per_trial"] = 1e9 * per_trial
            row[f"{who}_ns_per_failure"] = 1e9 * per_trial * trials[name, who] / failures[name, who]
        row["ratio"] = row["baseline_ns_per_trial"] / row["ours_ns_per_trial"]
        row["pass"] = None if name in NO_TARGET else bool(row["ratio"] >= TARGET)
        row["ours_over_raw_draw"] = row["ours_ns_per_failure"] / raw_ns
        if "compared" in kernels:
            row["speedup_over_compared"] = row["compared_ns_per_trial"] / row["ours_ns_per_trial"]
            row["compared_ratio"] = row["baseline_ns_per_trial"] / row["compared_ns_per_trial"]
        ours = np.concatenate(samples[name]["ours"])
        base = np.concatenate(samples[name]["baseline"])
        z = (base.mean() - ours.mean()) / np.sqrt(base.var(ddof=1) / base.size + ours.var(ddof=1) / ours.size)
        row.update(mean_T=float(ours.mean()), baseline_mean_T=float(base.mean()),
                   same_law_pvalue=float(2 * stats.norm.sf(abs(z))))
        rows.append(row)
    out = {"benchmark": "wipeout", "n_groups": n, "r": r, "reps": a.reps, "baseline_reps": a.baseline_reps,
           "repeat": a.repeat, "target_ratio": TARGET, "raw_draw_ns": raw_ns, "layouts": rows,
           "meets_target": all(row["pass"] for row in rows if row["pass"] is not None),
           "baseline_agrees": all(row["same_law_pvalue"] > 1e-4 for row in rows)}
    if a.json:
        print(json.dumps(out))
        return out
    print(f"N={n} r={r}: kernel {a.reps} and baseline {a.baseline_reps} replications x {a.repeat} interleaved "
          f"repeats (medians); raw bounded draw {raw_ns:.2f} ns")
    head = f"{'layout':<10} {'mean T':>7} {'ours ns/trial':>13} {'ns/fail':>8} {'numpy ns/trial':>14} {'ns/fail':>8} "
    head += f"{'ratio':>6} {'vs 5x':>5} {'law p':>6}"
    if "compared" in kernels:
        head += f" | {'before ns/trial':>15} {'ns/fail':>8} {'ratio':>6} {'speedup':>7}"
    print(head)
    for row in rows:
        line = (f"{row['layout']:<10} {row['mean_T']:7.1f} {row['ours_ns_per_trial']:13.0f} "
                f"{row['ours_ns_per_failure']:8.2f} {row['baseline_ns_per_trial']:14.0f} "
                f"{row['baseline_ns_per_failure']:8.2f} {row['ratio']:6.2f} "
                f"{'-' if row['pass'] is None else 'PASS' if row['pass'] else 'FAIL':>5} "
                f"{row['same_law_pvalue']:6.3f}")
        if "compared" in kernels:
            line += (f" | {row['compared_ns_per_trial']:15.0f} {row['compared_ns_per_failure']:8.2f} "
                     f"{row['compared_ratio']:6.2f} {row['speedup_over_compared']:7.2f}")
        print(line)
    print(f"every layout >= {TARGET:g}x the baseline: {out['meets_target']}; baseline has the kernel's law "
          f"(p > 1e-4 everywhere): {out['baseline_agrees']}")
    return out


if __name__ == "__main__":
    main()
