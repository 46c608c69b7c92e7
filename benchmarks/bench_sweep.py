"""Benchmark: parallel efficiency of a CPU-bound sweep on 1 vs 2 local dask workers, and the per-task overhead.

Each cluster (one single-threaded worker process per core) is started before timing; the sweep connects to it with
``scheduler=ADDRESS``. The CPU-bound sweep is a ReCtlr overhead study (N = 600, r in {4, 8}, three layouts,
48 tasks); efficiency = T(1 worker) / (2 x T(2 workers)), target >= 80% on 2 cores. The per-task overhead is the
wall time per task of a sweep of near-empty tasks on 2 workers. Both sweeps also give identical datasets on 1 and 2
workers, which the benchmark checks.

Usage: ``python benchmarks/bench_sweep.py [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from spare_mc.sweep import SweepSpec, run_sweep

CPU_SPEC = """
[sweep]
name = "bench_cpu"
quantity = "overhead"
reps = {reps}
block = {block}
seed = 1
[grid]
n_groups = [600]
r = [4, 8]
layout = ["cyclic", "sidon", "random"]
"""

TINY_SPEC = """
[sweep]
name = "bench_tiny"
quantity = "wipeout"
reps = 200
block = 1
seed = 1
[grid]
n_groups = [20]
r = [2]
"""


def _timed(spec, address, tmp, tag):
    t0 = time.perf_counter()
    ds = run_sweep(spec, os.path.join(tmp, f"{tag}.nc"), scheduler=address, progress=False)
    return time.perf_counter() - t0, ds


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--reps", type=int, default=320, help="replications per grid point of the CPU-bound sweep")
    args = ap.parse_args(argv)
    from distributed import LocalCluster

    cpu = SweepSpec.from_toml(CPU_SPEC.format(reps=args.reps, block=max(1, args.reps // 8)))
    tiny = SweepSpec.from_toml(TINY_SPEC)
    run_sweep(SweepSpec.from_toml(TINY_SPEC.replace("reps = 200", "reps = 2")), os.path.join(tempfile.mkdtemp(),
              "warm.nc"), workers=0, progress=False)  # compile / load the numba cache in this process
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 2):
            with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                              silence_logs=40) as cluster:
                addr = cluster.scheduler_address
                _timed(SweepSpec.from_toml(TINY_SPEC.replace("reps = 200", "reps = 4")), addr, tmp, f"w{n}")
                _timed(SweepSpec.from_toml(CPU_SPEC.format(reps=6, block=1)), addr, tmp, f"warm{n}")
                times[n], ds = _timed(cpu, addr, tmp, f"cpu{n}")
                times[f"data{n}"] = ds
                if n == 2:
                    t_tiny, _ = _timed(tiny, addr, tmp, "tiny")
    identical = times["data1"].drop_attrs().identical(times["data2"].drop_attrs())
    tasks = len(cpu.tasks())
    out = {"benchmark": "sweep", "tasks": tasks, "t_1_worker_s": times[1], "t_2_workers_s": times[2],
           "speedup": times[1] / times[2], "parallel_efficiency": times[1] / (2 * times[2]),
           "target_efficiency": 0.8, "meets_target": times[1] / (2 * times[2]) >= 0.8,
           "per_task_overhead_ms": t_tiny / len(tiny.tasks()) * 1e3, "identical_1_vs_2_workers": identical}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"CPU-bound sweep, {tasks} tasks: 1 worker {times[1]:.2f} s, 2 workers {times[2]:.2f} s -> speedup "
              f"{out['speedup']:.2f}, parallel efficiency {out['parallel_efficiency']:.0%} (target 80%)")
        print(f"per-task overhead (near-empty tasks, 2 workers): {out['per_task_overhead_ms']:.1f} ms; "
              f"identical datasets on 1 and 2 workers: {identical}")
    return out


if __name__ == "__main__":
    main()
