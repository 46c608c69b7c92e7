"""Coverage of ``spare_mc.model.layouts.sidon_offsets``: for each N, which r are found, by which construction, how fast.

Usage: ``PYTHONPATH=. python experiments/sidon_coverage.py > table.md``. For every N the scan goes up in r from 2
and stops after two consecutive r without a set (r(r-1) <= N-1 is the existence bound ``r_lim``).
"""

import math
import time

from spare_mc.model._sidon import find_sidon

NS = (100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000)


def main():
    find_sidon(45, 7, (), 2)  # compile the numba kernels outside the timings
    print("| N | r_lim | largest r found | constructions used (r range) | not found | slowest success (s) | "
          "slowest failure (s) |")
    print("|---|---|---|---|---|---|---|")
    for n in NS:
        r_lim = (1 + math.isqrt(4 * n - 3)) // 2
        used, missing, misses, best, t_ok, t_fail = {}, [], 0, 0, 0.0, 0.0
        for r in range(2, r_lim + 1):
            find_sidon.cache_clear()
            t1 = time.perf_counter()
            s, how = find_sidon(n, r, (), 200)
            dt = time.perf_counter() - t1
            if s is None:
                t_fail = max(t_fail, dt)
                missing.append(r)
                misses += 1
                if misses == 2:
                    break
                continue
            misses = 0
            best = r
            t_ok = max(t_ok, dt)
            lo, hi = used.get(how, (r, r))
            used[how] = (min(lo, r), max(hi, r))
        ranges = ", ".join(f"{k} {a}-{b}" if a != b else f"{k} {a}" for k, (a, b) in used.items())
        miss = ", ".join(map(str, missing)) + (f" (scan stopped; r up to {r_lim} not tried)" if missing and
                                              missing[-1] < r_lim else "")
        print(f"| {n} | {r_lim} | {best} | {ranges} | {miss or '-'} | {t_ok:.2f} | {t_fail:.1f} |", flush=True)


if __name__ == "__main__":
    main()
