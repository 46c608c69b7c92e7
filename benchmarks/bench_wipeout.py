"""Benchmark: wipe-out kernel vs the raw bounded-random-integer rate, measured in one run.

Cyclic unit stride, N = 1000, r = 9, uniform order without replacement. The kernel draws one bounded integer
(Lemire's method on the bit generator, see ``spare_mc._wipeout_kernels.bounded``) per simulated failure, so the
raw loop of the same draws is its lower limit; the ratio (kernel time per failure) / (raw time per draw) says how
much the wipe-out bookkeeping adds. The generic (any-layout) kernel on the same layout is reported too.

Usage: ``python benchmarks/bench_wipeout.py [--json] [--reps 200000]``
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from numba import njit

import spare_mc as sm
from spare_mc import _wipeout_kernels as K


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


_KEEP = []


def _src(seed):
    rng = np.random.default_rng(seed)
    _KEEP.append(rng)  # the kernels use the bit generator's state by address: keep it alive
    return K.raw_source(rng)


@njit(cache=True)
def _generator_integers(rng, n, count):
    """The same draws through numba's ``Generator.integers`` (the other possible raw limit)."""
    acc = 0
    i = 0
    for _ in range(count):
        acc += rng.integers(0, n - i)
        i += 1
        if i == n // 2:
            i = 0
    return acc


def _best_of(fn, repeat=5):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--reps", "--trials", dest="trials", type=int, default=200_000,
                   help="wipe-out replications (--trials: the old name)")
    p.add_argument("--n-groups", type=int, default=1000)
    p.add_argument("--r", type=int, default=9)
    a = p.parse_args(argv)
    n, r, trials = a.n_groups, a.r, a.trials
    lay = sm.cyclic(n, r)
    out_T = np.empty(trials, np.int64)
    out_d = np.empty(trials, np.int64)
    hp = np.full(n, r, np.int64)
    # warm up (compile or load from cache)
    K.wipeout_cyclic_unit(*_src(0), n, r, 10, False, out_T[:10], out_d[:10])
    K.wipeout_generic(*_src(0), n, lay.group_ptr, lay.group_types, hp, 10, False, out_T[:10],
                      out_d[:10])
    _raw_draws(*_src(0), n, 10)
    _generator_integers(np.random.default_rng(0), n, 10)

    K.wipeout_cyclic_unit(*_src(1), n, r, trials, False, out_T, out_d)
    failures = int(out_T.sum())  # every failure is one bounded draw
    t_cyc = _best_of(lambda: K.wipeout_cyclic_unit(*_src(1), n, r, trials, False, out_T, out_d))
    t_gen = _best_of(lambda: K.wipeout_generic(*_src(1), n, lay.group_ptr, lay.group_types, hp,
                                               trials, False, out_T, out_d))
    t_raw = _best_of(lambda: _raw_draws(*_src(1), n, failures))
    t_gi = _best_of(lambda: _generator_integers(np.random.default_rng(1), n, failures), repeat=2)
    res = {
        "n_groups": n, "r": r, "trials": trials, "failures_simulated": failures,
        "failures_per_trial": failures / trials,
        "raw_draw_ns": 1e9 * t_raw / failures,
        "generator_integers_draw_ns": 1e9 * t_gi / failures,
        "cyclic_kernel_ns_per_failure": 1e9 * t_cyc / failures,
        "generic_kernel_ns_per_failure": 1e9 * t_gen / failures,
        "cyclic_ratio_to_raw": t_cyc / t_raw,
        "generic_ratio_to_raw": t_gen / t_raw,
        "cyclic_ratio_to_generator_integers": t_cyc / t_gi,
        "cyclic_trials_per_s": trials / t_cyc,
        "generic_trials_per_s": trials / t_gen,
    }
    if a.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k:<32} {v:.4g}" if isinstance(v, float) else f"{k:<32} {v}")


if __name__ == "__main__":
    main()
