"""Benchmark: reading and fitting a failure log against its size (10^3 to 10^7 events), its predictive check, and
the peak memory against the file's size, in one run.

The logs: one cluster (4,096 nodes of 8 GPUs, N = 512 groups) whose nodes are independent Weibull renewals
(:class:`spare_mc.model.unit_renewal.UnitRenewal`, mean life 5 days, shape 0.7, stationary ages), recorded at a
minute's resolution (each time at its next whole minute: never at 0; a node's second failure within the same
minute is dropped, as a real log records one row). The sizes differ by the window: ``n`` events take ``n`` x 5 days
/ 4,096 (10^3: 1.2 days; 10^7: 33 years), so the number of units, and the model, stay fixed. Each log is written
once (CSV, ``write_failure_log``) to a folder (``--dir``, default a temporary one removed at the end).

Each size is measured in a **fresh subprocess** (so its peak resident memory, ``ru_maxrss``, is its own), after a
warm-up on a small log (imports, numba caches):

- ``read``: :func:`spare_mc.read_failure_log`;
- ``fit_system``: :func:`spare_mc.logs.models.fit_system` (rounded gaps aggregated by tick value);
- ``fit_units``: :func:`spare_mc.logs.models.fit_units` at the node level, stationary ages;
- ``fit_levels``: the old per-level fit :func:`spare_mc.fit_failure_log` (units new at the log start);
- ``check_system`` / ``check_units``: :func:`spare_mc.logs.predictive.predictive_check` of each fit at ``--sims``
  (default 200, the command line's) for sizes up to ``--check-max``; above it, the cost of one simulated window
  (drawing it and replaying its wipe-outs, plus the KS distances against a reference of a few windows) is timed on
  a few windows and multiplied by the check's ``2 sims`` windows: an **extrapolation**, labelled so, with the
  memory the check's reference would need (24 bytes per simulated event) against the default budget (half the
  available memory), which the check refuses beyond.

Timings are medians of ``--repeat`` runs (1 at 10^7 events: a read takes about a minute). Reported per size: the
file size, seconds and ns per event of each step, the ratios fit / read, and the peak RSS (above the warmed-up
process and in all) against the file size.

Then, with ``--full`` (or ``--cli-budgets``), the command line on the largest log: ``spare-mc log check`` and
``spare-mc log fit --model system`` under each ``--max-memory`` of ``--cli-budgets`` (default 1536M, which should
hold, and 512M, which should refuse during the read), each a subprocess whose own peak RSS is read with
``os.wait4``: the exit code, the wall time, the peak against the file size and the one-line error.

Usage: ``python benchmarks/bench_log_fit.py [--json] [--quick | --full] [--sizes 1e3,1e4] [--repeat 3]
[--check-max 1e5] [--sims 200] [--cli-budgets 1536M,512M] [--dir DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

N_NODES, GPUS_PER_NODE, N_GROUPS = 4096, 8, 512
MEAN_S, SHAPE, TICK_S = 5 * 86400.0, 0.7, 60.0
QUICK_SIZES = (1_000, 10_000)
DEFAULT_SIZES = (1_000, 10_000, 100_000)
FULL_SIZES = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)


def topology():
    from spare_mc.model.topology import Topology

    return Topology(N_NODES * GPUS_PER_NODE, N_GROUPS, gpus_per_node=GPUS_PER_NODE)


def topology_args() -> list:
    return ["--n-gpus", str(N_NODES * GPUS_PER_NODE), "--n-groups", str(N_GROUPS), "--gpus-per-node",
            str(GPUS_PER_NODE)]


def log_path(folder, n) -> str:
    return os.path.join(folder, f"nodes_{n}.csv")


def make_log(path, n, seed=1):
    """Write the synthetic node log of about ``n`` events (module docstring) to ``path``."""
    from spare_mc.logs.failure_log import FailureLog, log_levels, write_failure_log
    from spare_mc.model.unit_renewal import UnitRenewal

    topo = topology()
    window = np.ceil(n * MEAN_S / N_NODES / TICK_S) * TICK_S
    t, u = UnitRenewal("node", MEAN_S, SHAPE).stream(topo, rng=seed).until(window)
    t = np.ceil(t / TICK_S) * TICK_S  # the next whole minute: a failure in the first minute is at 60 s, not 0
    o = np.lexsort((u, t))
    t, u = t[o], u[o]
    by_unit = np.lexsort((t, u))
    repeat = np.zeros(t.size, dtype=bool)
    repeat[by_unit[1:]] = (u[by_unit[1:]] == u[by_unit[:-1]]) & (t[by_unit[1:]] == t[by_unit[:-1]])
    t, u = t[~repeat], u[~repeat]
    levels = log_levels(topo)
    log = FailureLog(t, np.full(t.size, levels.index("node"), dtype=np.int64), u, None, float(window), topo, levels,
                     "synthetic")
    note = (f"benchmark log: {N_NODES} nodes, UnitRenewal mean {MEAN_S:g} s, shape {SHAPE}, stationary, minute "
            f"resolution, seed {seed}; {int(repeat.sum())} same-minute repeats dropped")
    write_failure_log(path, log, comments=[note])
    return {"events": int(t.size), "dropped_repeats": int(repeat.sum()), "window_s": float(window)}


def _maxrss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def _median_time(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, out


def measure(path, n_target, repeat, check_max, sims, warm_path) -> dict:
    """One size, in this (fresh) process: the steps of the module docstring."""
    from spare_mc._lib.resources import format_bytes, memory_budget
    from spare_mc.logs import predictive as pc
    from spare_mc.logs.failure_log import read_failure_log
    from spare_mc.logs.fit import fit_failure_log
    from spare_mc.logs.models import fit_system, fit_units

    topo = topology()
    warm = read_failure_log(warm_path, topo)  # imports, numba caches of the replay, scipy's special functions
    pc.predictive_check(fit_system(warm), warm, sims=160, rng=0)
    fit_units(warm, "node")
    fit_failure_log(warm)
    del warm
    rss0 = _maxrss_bytes()
    out = {"n_target": n_target, "file_bytes": os.path.getsize(path), "rss_warm_bytes": rss0}
    reps = repeat if n_target <= 1_000_000 else 1
    out["repeat"] = reps
    t_read, times, log = _median_time(lambda: read_failure_log(path, topo), reps)
    out["rss_after_read_bytes"] = _maxrss_bytes()
    n = len(log)
    out.update(events=n, window_s=log.duration_s, read_s=t_read, read_s_all=times)
    steps = {"fit_system": lambda: fit_system(log), "fit_units": lambda: fit_units(log, "node"),
             "fit_levels": lambda: fit_failure_log(log)}
    fits = {}
    for name, fn in steps.items():
        t, times, fits[name] = _median_time(fn, reps)
        out[name + "_s"], out[name + "_s_all"] = t, times
    out["rss_after_fits_bytes"] = _maxrss_bytes()
    out["fit_system_shape"], out["fit_system_mtbf_s"] = fits["fit_system"].shape, fits["fit_system"].mean_s
    out["fit_units_shape"], out["fit_units_mean_s"] = fits["fit_units"].shape, fits["fit_units"].mean_s
    out["system_gap_values"] = _unique_ticks(log.time_s)  # the distinct rounded gaps the likelihood evaluates
    budget = memory_budget()
    for name, fit in (("check_system", fits["fit_system"]), ("check_units", fits["fit_units"])):
        per_window = max(n, pc._expected_events(fit, log.duration_s))
        ref_bytes = pc._REF_BYTES * sims * per_window
        row = {"sims": sims, "windows": 2 * sims, "reference_bytes": ref_bytes,
               "reference": format_bytes(ref_bytes), "budget": format_bytes(budget),
               "within_default_budget": bool(ref_bytes <= budget)}
        if n_target <= check_max:
            t0 = time.perf_counter()
            res = pc.predictive_check(fit, log, sims=sims, rng=0)
            row.update(measured=True, seconds=time.perf_counter() - t0, consistent=res.consistent)
            row["per_window_s"] = row["seconds"] / (2 * sims)
        else:  # a few windows, timed step by step, then multiplied out
            rng = np.random.default_rng(0)
            k = 3 if n_target <= 1_000_000 else 2
            t0 = time.perf_counter()
            wins = [fit.sample_log(log.duration_s, rng) for _ in range(k)]
            t_draw = (time.perf_counter() - t0) / k
            t0 = time.perf_counter()
            for s in wins:
                pc._wipeouts(s, "cyclic", 2)
            t_replay = (time.perf_counter() - t0) / k
            ref_gaps = np.sort(np.concatenate([np.diff(s.time_s) for s in wins]))
            ref_times = np.sort(np.concatenate([s.time_s for s in wins]))
            t0 = time.perf_counter()
            for s in wins:
                pc._ks(np.diff(s.time_s), ref_gaps)
                pc._ks(s.time_s, ref_times)
            t_ks = (time.perf_counter() - t0) / k
            del wins, ref_gaps, ref_times
            # the check: 2 sims windows drawn, sims replayed and compared, and the log itself replayed once
            est = 2 * sims * t_draw + (sims + 1) * (t_replay + t_ks)
            row.update(measured=False, seconds_extrapolated=est, per_window_draw_s=t_draw,
                       per_window_replay_s=t_replay, per_window_ks_s=t_ks, windows_timed=k,
                       per_window_s=est / (2 * sims))
        out[name] = row
    out["rss_after_checks_bytes"] = _maxrss_bytes()
    return out


def _unique_ticks(t) -> int:
    return int(np.unique(np.rint(np.diff(t) / TICK_S)).size)


def _worker(argv):
    cmd = argv[0]
    if cmd == "make":
        print(json.dumps(make_log(argv[1], int(argv[2]))))
    else:
        path, n, repeat, check_max, sims, warm = argv[1:]
        print(json.dumps(measure(path, int(n), int(repeat), float(check_max), int(sims), warm)))


def _run_worker(*args) -> dict:
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", *map(str, args)],
                          capture_output=True, text=True, check=False)
    if proc.returncode:
        raise RuntimeError(f"worker {args[:3]} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cli_runs(path, budgets) -> list:
    """``spare-mc log check`` and ``spare-mc log fit --model system`` of the log at ``path`` under each
    ``--max-memory`` of ``budgets``, each a subprocess: exit code, wall time, its peak RSS (``os.wait4``) and the
    first line of its error."""
    out = []
    for command in (["log", "check"], ["log", "fit", "--model", "system"]):
        for budget in budgets:
            argv = ["spare-mc", *command, path, *topology_args(), "--max-memory", budget, "--json"]
            with tempfile.TemporaryFile("w+") as err, tempfile.TemporaryFile("w+") as std:
                t0 = time.perf_counter()
                proc = subprocess.Popen([sys.executable, "-m", "spare_mc.cli", *argv[1:]], stdout=std, stderr=err)
                _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak RSS
                wall = time.perf_counter() - t0
                proc.returncode = code = os.waitstatus_to_exitcode(status)
                err.seek(0)
                lines = err.read().strip().splitlines()
            out.append({"command": " ".join(argv).replace(path, os.path.basename(path)), "max_memory": budget,
                        "exit": code, "wall_s": wall, "error": lines[-1][:400] if code and lines else None,
                        "peak_rss_bytes": usage.ru_maxrss * 1024, "file_bytes": os.path.getsize(path)})
    return out


def _sizes(text):
    return tuple(int(float(x)) for x in text.split(",") if x.strip())


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        _worker(argv[1:])
        return {}
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES} (CI)")
    size.add_argument("--full", action="store_true", help=f"sizes {FULL_SIZES} (about 30 minutes on 2 cores)")
    size.add_argument("--sizes", default=None, help=f"comma-separated event counts (default {DEFAULT_SIZES})")
    ap.add_argument("--repeat", type=int, default=3, help="runs per timing, the median reported (1 above 10^6)")
    ap.add_argument("--check-max", type=float, default=None,
                    help="largest size whose predictive check runs whole (default 1e5; 1e4 with --quick); above "
                         "it the check's time is extrapolated from a few windows")
    ap.add_argument("--sims", type=int, default=200, help="simulated windows of the predictive check (default 200)")
    ap.add_argument("--cli-budgets", default=None,
                    help="comma-separated --max-memory sizes to run `spare-mc log check` and `log fit --model "
                         "system` of the largest log under (default with --full: 1536M,512M; none otherwise)")
    ap.add_argument("--dir", default=None, help="folder of the logs, kept (default: a temporary folder, removed)")
    args = ap.parse_args(argv)
    sizes = (QUICK_SIZES if args.quick else FULL_SIZES if args.full
             else _sizes(args.sizes) if args.sizes else DEFAULT_SIZES)
    check_max = args.check_max if args.check_max is not None else (1e4 if args.quick else 1e5)
    folder = args.dir or tempfile.mkdtemp(prefix="bench_log_fit_")
    os.makedirs(folder, exist_ok=True)
    try:
        warm = log_path(folder, 2000)
        if not os.path.exists(warm):
            _run_worker("make", warm, 2000)
        out = {"benchmark": "log_fit", "nodes": N_NODES, "gpus_per_node": GPUS_PER_NODE, "n_groups": N_GROUPS,
               "mean_s": MEAN_S, "shape": SHAPE, "tick_s": TICK_S, "sims": args.sims, "check_max": check_max,
               "sizes": []}
        for n in sizes:
            path = log_path(folder, n)
            made = None
            if not os.path.exists(path):
                t0 = time.perf_counter()
                made = _run_worker("make", path, n)
                made["seconds"] = time.perf_counter() - t0
            row = _run_worker("measure", path, n, args.repeat, check_max, args.sims, warm)
            row["made"] = made
            ev = row["events"]
            row["ns_per_event"] = {k: row[k + "_s"] / ev * 1e9
                                   for k in ("read", "fit_system", "fit_units", "fit_levels")}
            row["over_read"] = {k: row[k + "_s"] / row["read_s"] for k in ("fit_system", "fit_units", "fit_levels")}
            for k in ("check_system", "check_units"):
                c = row[k]
                c["over_read"] = c.get("seconds", c.get("seconds_extrapolated")) / row["read_s"]
            row["read_peak_over_file"] = (row["rss_after_read_bytes"] - row["rss_warm_bytes"]) / row["file_bytes"]
            row["peak_rss_over_file"] = row["rss_after_checks_bytes"] / row["file_bytes"]
            out["sizes"].append(row)
            if not args.json:
                _print_row(row)
        budgets = args.cli_budgets or ("1536M,512M" if args.full else "")
        budgets = [b.strip() for b in budgets.split(",") if b.strip()]
        if budgets:
            out["cli"] = cli_runs(log_path(folder, sizes[-1]), budgets)
            if not args.json:
                for c in out["cli"]:
                    print(f"{c['command']}: exit {c['exit']}, {c['wall_s']:.1f} s, peak RSS "
                          f"{c['peak_rss_bytes'] / 2**20:.0f} MB ({c['peak_rss_bytes'] / c['file_bytes']:.2f}x the "
                          f"file){'; ' + c['error'] if c['error'] else ''}")
    finally:
        if args.dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        print(json.dumps(out))
    return out


def _print_row(r):
    mb = 1 << 20
    print(f"{r['events']:>10,} events ({r['file_bytes'] / mb:7.1f} MB, window {r['window_s'] / 86400:8.1f} d): "
          f"read {r['read_s']:.3g} s ({r['ns_per_event']['read']:.0f} ns/event); fit_system {r['fit_system_s']:.3g} s "
          f"({r['over_read']['fit_system']:.2g}x read), fit_units {r['fit_units_s']:.3g} s "
          f"({r['over_read']['fit_units']:.2g}x), fit_levels {r['fit_levels_s']:.3g} s "
          f"({r['over_read']['fit_levels']:.2g}x)")
    for k in ("check_system", "check_units"):
        c = r[k]
        what = (f"{c['seconds']:.3g} s measured" if c["measured"]
                else f"~{c['seconds_extrapolated']:.3g} s extrapolated from {c['windows_timed']} windows")
        print(f"{'':>12}{k}: {what} ({c['per_window_s'] * 1e3:.3g} ms per simulated window); reference "
              f"{c['reference']} ({'within' if c['within_default_budget'] else 'BEYOND'} the default budget "
              f"{c['budget']})")
    print(f"{'':>12}peak RSS: read {(r['rss_after_read_bytes'] - r['rss_warm_bytes']) / mb:.0f} MB above the warm "
          f"process ({r['read_peak_over_file']:.2f}x the file), "
          f"{r['rss_after_checks_bytes'] / mb:.0f} MB in all ({r['peak_rss_over_file']:.2f}x the file)")


if __name__ == "__main__":
    main()
