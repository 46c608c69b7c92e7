"""Slow twins of the wipe-out Monte Carlo and of the exact laws: exhaustive enumeration of failure subsets and
orders for small ``N`` (exact Fractions), the average over all random layouts, a plain-Python wipe-out trial, and
plain-Python twins of the wipe-out kernels (order statistics, SplitMix64, replica-set partitions) fed the same raw
draws.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np

from .._lib.validation import UsageValueError
from ..model.layouts import Layout

__all__ = ["T_distribution_by_orders", "holder_table", "random_layout_survival_by_enumeration", "splitmix64_py",
           "survival_by_subsets", "wipeout_order_stat_twin", "wipeout_order_statistics", "wipeout_partition_twin",
           "wipeout_trial"]


def survival_by_subsets(layout: Layout, max_groups: int = 22) -> list[Fraction]:
    """``P(T > m)`` for m = 0..N by enumerating all ``2^N`` dead sets (exact Fractions)."""
    n = layout.n_groups
    if n > max_groups:
        raise UsageValueError(f"`layout` has N={n} groups; enumeration of 2^N subsets needs N <= {max_groups}")
    subsets = np.arange(1 << n, dtype=np.int64)
    wiped = np.zeros(subsets.size, dtype=bool)
    for row in layout.holders.tolist():
        mask = sum(1 << g for g in row)
        wiped |= (subsets & mask) == mask
    size = np.array([bin(s).count("1") for s in range(1 << n)])
    ok = np.bincount(size[~wiped], minlength=n + 1)
    return [Fraction(int(ok[m]), math.comb(n, m)) for m in range(n + 1)]


def T_distribution_by_orders(layout: Layout, max_groups: int = 8) -> dict[int, Fraction]:
    """``P(T = t)`` by walking every one of the ``N!`` failure orders (exact Fractions)."""
    n = layout.n_groups
    if n > max_groups:
        raise UsageValueError(f"`layout` has N={n} groups; enumeration of N! orders needs N <= {max_groups}")
    counts: dict[int, int] = {}
    for order in itertools.permutations(range(n)):
        dead = []
        for t, g in enumerate(order, start=1):
            dead.append(g)
            if layout.is_wiped(dead):
                counts[t] = counts.get(t, 0) + 1
                break
    total = math.factorial(n)
    return {t: Fraction(c, total) for t, c in sorted(counts.items())}


def random_layout_survival_by_enumeration(n_groups: int, r: int) -> list[Fraction]:
    """``P(T > m)`` averaged over **all** ``C(N, r)^N`` layouts with independent uniform holders (tiny N only)."""
    subsets_r = list(itertools.combinations(range(n_groups), r))
    if len(subsets_r) ** n_groups > 200_000:
        raise UsageValueError("too many layouts to enumerate")
    total = [Fraction(0)] * (n_groups + 1)
    count = 0
    for rows in itertools.product(subsets_r, repeat=n_groups):
        surv = survival_by_subsets(Layout(np.array(rows, dtype=np.int64), kind="random"))
        total = [a + b for a, b in zip(total, surv)]
        count += 1
    return [x / count for x in total]


def wipeout_trial(layout: Layout, order) -> tuple[int, int]:
    """Apply failures in ``order`` (group indices, repeats allowed) to a fresh system.

    Returns ``(T, dead_before)``: the 1-based index of the failure that first wipes out a type, and the number of
    distinct dead groups just before it. Raises if the order ends first.
    """
    dead: set[int] = set()
    for t, g in enumerate(order, start=1):
        if g in dead:
            continue
        before = len(dead)
        dead.add(int(g))
        if layout.is_wiped(dead):
            return t, before
    raise UsageValueError("the failure order ended before a wipe-out")


def holder_table(layout) -> np.ndarray:
    """The rows of holders the wipe-out kernels see: ``layout.holders`` for a :class:`Layout`; for
    :class:`~spare_mc.model.layouts.ReplicaSets` one row per set listing its members, short sets padded by repeating
    their last member (a repeat changes no maximum)."""
    if isinstance(layout, Layout):
        return layout.holders
    sizes = np.asarray(layout.sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return starts[:, None] + np.minimum(np.arange(sizes.max())[None, :], sizes[:, None] - 1)


def wipeout_order_statistics(holders, n_groups: int, reps: int, rng, *, batch: int = 500) -> np.ndarray:
    """``T`` per replication by order statistics, vectorised over replications in batches of ``batch``.

    Uniform order without replacement is the order of iid uniform failure times ``u_g`` (one per group). A type
    dies at the latest of its holders' times, the first wipe-out at ``w = min_j max_l u[holders[j, l]]``, and
    ``T = #{g : u_g <= w}`` is its rank among the failure times (the failures up to and including it). The law of
    ``T`` is that of :func:`spare_mc.wipeout_mc`'s (not its draws: ``rng`` is used through ``Generator.random``).
    The numpy baseline of ``benchmarks/bench_wipeout.py``.
    """
    holders = np.asarray(holders)
    out = np.empty(reps, dtype=np.int64)
    for start in range(0, reps, batch):
        b = min(batch, reps - start)
        u = rng.random((b, n_groups))
        w = u[:, holders].max(axis=2).min(axis=1)
        out[start:start + b] = (u <= w[:, None]).sum(axis=1)
    return out


def splitmix64_py(seed: int, i: int) -> int:
    """Plain-Python SplitMix64: output ``i`` (0-based) of the stream started at ``seed`` (Steele, Lea & Flood
    2014): ``z = seed + (i + 1) * 0x9E3779B97F4A7C15 mod 2^64``, then ``z ^= z >> 30; z *= 0xBF58476D1CE4E5B9;
    z ^= z >> 27; z *= 0x94D049BB133111EB; z ^= z >> 31``, all mod 2^64."""
    mask = (1 << 64) - 1
    z = (seed + (i + 1) * 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def wipeout_order_stat_twin(bit_generator, holders, n_groups: int, reps: int, drop: int = 0) -> np.ndarray:
    """Plain-Python twin of :func:`spare_mc._kernels.wipeout.wipeout_order_stat` (and of ``wipeout_cyclic_window``
    on the cyclic table): ``T`` per replication from the same raw draws of ``bit_generator``.

    Written from the method, by brute force: per trial one raw draw seeds a SplitMix64 stream
    (:func:`splitmix64_py`) whose output ``i`` gives the 32-bit failure times of groups ``2i`` (upper half) and
    ``2i + 1`` (lower half), of each the top ``32 - drop`` bits; ``m`` = the least over the table's rows of the
    row's largest time, and ``T`` = the groups failed before ``m`` plus the position at which the first row whose
    largest time is ``m`` is complete, when the groups at ``m`` fail in a random order (a Fisher-Yates shuffle of
    them in increasing group order, only if there are several: one bounded draw per position by Lemire's method on
    the upper 32 bits of the trial's next SplitMix64 outputs, after those of the failure times).
    """
    def bounded(seed, i, bound):  # (value, next output index)
        while True:
            x = (splitmix64_py(seed, i) >> 32) * bound
            i += 1
            if (x & 0xFFFFFFFF) >= ((1 << 32) - bound) % bound:
                return x >> 32, i

    rows = [[int(h) for h in row] for row in np.asarray(holders)]
    out = np.empty(reps, dtype=np.int64)
    for t in range(reps):
        seed = int(bit_generator.random_raw())
        u = []
        for i in range((n_groups + 1) // 2):
            z = splitmix64_py(seed, i)
            u += [(z >> 32) >> drop, (z & 0xFFFFFFFF) >> drop]
        u = u[:n_groups]
        m = min(max(u[h] for h in row) for row in rows)
        at = [g for g in range(n_groups) if u[g] == m]
        if len(at) > 1:
            nxt = (n_groups + 1) // 2
            for i in range(len(at) - 1):
                j, nxt = bounded(seed, nxt, len(at) - i)
                at[i], at[i + j] = at[i + j], at[i]
        pos = {g: i for i, g in enumerate(at)}
        first = min(max(pos[h] for h in row if u[h] == m) for row in rows if max(u[h] for h in row) == m)
        out[t] = sum(v < m for v in u) + first + 1
    return out


def wipeout_partition_twin(bit_generator, n_groups: int, sizes, counts, reps: int) -> np.ndarray:
    """Plain-Python twin of :func:`spare_mc._kernels.wipeout.wipeout_partition`: ``T`` per replication, from the
    same raw draws of ``bit_generator`` (``random_raw``; a uniform is its top 53 bits over 2^53).

    Written from the method, not the kernel: ``m``, the least of the replica sets' maxima, by inverting
    ``P(min > x) = (1 - x^s)^K`` per class; then every other set's members failed by ``m``, a ``Bin(s, m)`` count
    given that it is below ``s`` (the set outlives ``m``), found by walking its CDF; then the groups in no set.
    """
    def u01():
        return (int(bit_generator.random_raw()) >> 11) / 2.0**53

    sizes = [int(x) for x in sizes]
    counts = [int(x) for x in counts]
    free = n_groups - sum(s * k for s, k in zip(sizes, counts))
    out = np.empty(reps, dtype=np.int64)
    for t in range(reps):
        mins = [(-math.expm1(math.log(1.0 - u01()) / k)) ** (1.0 / s) for s, k in zip(sizes, counts)]
        cstar = min(range(len(mins)), key=lambda c: (mins[c], c))
        m = mins[cstar]
        T = sizes[cstar]
        for c, (s, k) in enumerate(zip(sizes, counts)):
            others = k - (c == cstar)
            if others == 0:
                continue
            pmf = [math.comb(s, j) * m**j * (1.0 - m) ** (s - j) for j in range(s)]  # j < s: the set outlives m
            cdf = list(itertools.accumulate(pmf))
            for _ in range(others):
                v = u01() * cdf[-1]
                T += next((j for j in range(s - 1) if cdf[j] > v), s - 1)
        T += sum(u01() < m for _ in range(free))
        out[t] = T
    return out
