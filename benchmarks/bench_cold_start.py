"""Benchmark: the cold start. The same command with an empty numba cache (cold) and again with the cache it left
(warm), each in a fresh process and a fresh output folder, and the compile time of every kernel of the cold run.

The cache is isolated in a temporary ``NUMBA_CACHE_DIR``, so the package's own ``__pycache__`` is neither read nor
touched (:mod:`spare_mc._kernels.cache` leaves a ``NUMBA_CACHE_DIR`` alone). Compile times come from numba's
``numba:compile`` events (:func:`numba.core.event.install_recorder`), recorded in the cold process: the time inside
each dispatcher's compilation, nested compilations (a kernel compiling the kernels it calls) included in the outer
one, so the per-kernel times of the *outermost* compilations add up to the compile total.

Commands (``--commands``, default both):

- ``ttt``: a first ``simulate_ttt`` of the paper's SPARe job (N = 600, r = 8, 10,000 steps, 3 jobs), the issue's
  "cold first run" (target: under 20 s on 2 cores);
- ``quick``: ``spare-mc reproduce --quick`` into a fresh folder (target: cold at most 1.5x warm). Its kernels
  compile ahead in warm-up processes (:mod:`spare_mc.sweep.warm`) or in the dask workers, whose events this process
  does not see: its compile cost is the cold minus the warm time.

Besides the wall time, each run's CPU time is reported: the measured process's and that of every process it waited
for (``RUSAGE_CHILDREN``: the warm-up, dask and phase-map processes included). Compilation is CPU-bound and mostly
single-threaded, so on a machine shared with other work the CPU times compare revisions better than the wall times.

Usage: ``python benchmarks/bench_cold_start.py [--json] [--commands ttt,quick]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

#: The probe run in the measured process: the command, then numba's compile events as JSON on the last line.
_PROBE = r"""
import json, sys, time
from numba.core import event
t0 = time.perf_counter()
with event.install_recorder("numba:compile") as rec:
    if sys.argv[1] == "ttt":
        from spare_mc import TimelineConfig, simulate_ttt
        simulate_ttt(TimelineConfig("spare", 600, r=8, n_steps=10_000), 3, rng=0)
    else:
        from spare_mc.cli import main
        rc = main(["reproduce", "--quick", "--out-dir", sys.argv[2]])
        assert rc == 0, rc
wall = time.perf_counter() - t0
open_, out, depth = {}, [], 0
for ts, ev in rec.buffer:
    name = getattr(ev.data.get("dispatcher"), "py_func", None)
    name = f"{name.__module__}.{name.__qualname__}" if name is not None else "?"
    if ev.is_start:
        open_.setdefault(name, []).append((ts, depth))
        depth += 1
    else:
        depth -= 1
        start, d = open_[name].pop()
        out.append((name, ts - start, d))
print(json.dumps({"wall_s": wall, "compiles": out}))
"""


def _run(command: str, cache: str, out_dir: str) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    t0, u0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run([sys.executable, "-c", _PROBE, command, out_dir], env=env, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, check=False)
    total, u1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (u1.ru_utime + u1.ru_stime) - (u0.ru_utime + u0.ru_stime)  # the probe and every process it waited for
    if res.returncode != 0:
        raise SystemExit(f"{command} failed (exit {res.returncode}):\n{res.stderr[-2000:]}")
    d = json.loads(res.stdout.strip().splitlines()[-1])
    outer = [(n, s) for n, s, depth in d["compiles"] if depth == 0]

    def table(pairs):
        out = {}
        for n, s in pairs:
            out[n] = out.get(n, 0.0) + s
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    return {"process_s": total, "cpu_s": cpu, "in_process_s": d["wall_s"], "compile_s": sum(s for _, s in outer),
            "compilations": len(d["compiles"]), "by_kernel": table(outer),
            "nested": table((n, s) for n, s, depth in d["compiles"] if depth == 1)}


def measure(command: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "numba-cache")
        os.mkdir(cache)
        cold = _run(command, cache, os.path.join(tmp, "cold"))
        warm = _run(command, cache, os.path.join(tmp, "warm"))
    return {"command": command, "cold": cold, "warm": warm, "cold_over_warm": cold["process_s"] / warm["process_s"],
            "cold_over_warm_cpu": cold["cpu_s"] / warm["cpu_s"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commands", default="ttt,quick", help="comma-separated: ttt, quick (default both)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    results = [measure(c) for c in args.commands.split(",")]
    if args.json:
        print(json.dumps(results))  # one line: docs/generate.py reads the last line
        return 0
    for r in results:
        c, w = r["cold"], r["warm"]
        print(f"{r['command']}: cold {c['process_s']:.1f} s (CPU {c['cpu_s']:.1f} s; compiling {c['compile_s']:.1f} s "
              f"in this process, {c['compilations']} compilations), warm {w['process_s']:.1f} s (CPU "
              f"{w['cpu_s']:.1f} s; compiling {w['compile_s']:.1f} s): cold/warm {r['cold_over_warm']:.2f} "
              f"(CPU {r['cold_over_warm_cpu']:.2f})")
        for name, s in list(c["by_kernel"].items())[:12]:
            print(f"    {s:7.1f} s  {name}")
        print("  compiled inside them (callees' own compilations, included above):")
        for name, s in list(c["nested"].items())[:12]:
            print(f"    {s:7.1f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
