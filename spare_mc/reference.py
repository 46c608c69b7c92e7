"""Slow, obviously correct references ("slow twins") for the fast kernels and the exact forms.

Nothing here is fast; everything here is short enough to check by reading. The test suite compares every fast path
against these: exhaustive enumeration of failure subsets and orders for small ``N``, a plain-Python wipe-out trial,
the GPU-by-GPU failure draw, and the average over all random layouts.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np

from .layouts import Layout

__all__ = ["survival_by_subsets", "T_distribution_by_orders", "random_layout_survival_by_enumeration",
           "wipeout_trial", "gpu_by_gpu_group_lifetimes", "GpuByGpuClock"]


def survival_by_subsets(layout: Layout, max_groups: int = 22) -> list[Fraction]:
    """``P(T > m)`` for m = 0..N by enumerating all ``2^N`` dead sets (exact Fractions)."""
    n = layout.n_groups
    if n > max_groups:
        raise ValueError(f"`layout` has N={n} groups; enumeration of 2^N subsets needs N <= {max_groups}")
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
        raise ValueError(f"`layout` has N={n} groups; enumeration of N! orders needs N <= {max_groups}")
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
        raise ValueError("too many layouts to enumerate")
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
    raise ValueError("the failure order ended before a wipe-out")


def gpu_by_gpu_group_lifetimes(n_gpus: int, n_groups: int, gpu_mean_s: float, shape: float, rng) -> np.ndarray:
    """Group times to failure as the minimum over each group's ``M = G/N`` GPUs of iid Weibull lifetimes.

    The slow twin of the exact shortcut ``min of M Weibull(k, lam) = Weibull(k, lam M^(-1/k))``.
    """
    scale = gpu_mean_s / math.gamma(1.0 + 1.0 / shape)
    life = scale * rng.weibull(shape, size=n_gpus)
    return life.reshape(n_groups, n_gpus // n_groups).min(axis=1)


class GpuByGpuClock:
    """Slow twin of :class:`spare_mc.failures.PerGPUClock`: every GPU's absolute failure time, drawn at its birth.

    A group fails at its earliest GPU failure. At a restart at ``now``: ``renew`` redraws every GPU from ``now``;
    ``keep`` replaces exactly the GPUs whose failure time is ``<= now`` (the one that failed and any that failed
    while their group was down) and leaves all others untouched.
    """

    def __init__(self, model, topology, rng, start_s=0.0):
        self.model, self.rng = model, rng
        self.lam = model.gpu_mtbf_s / math.gamma(1.0 + 1.0 / model.shape)
        self.n, self.m = topology.n_groups, topology.gpus_per_group
        self.fail = start_s + self.lam * rng.weibull(model.shape, size=(self.n, self.m))

    @property
    def next_failure_s(self):
        return self.fail.min(axis=1)

    def restart(self, now_s, failed_groups):
        if self.model.age_policy == "renew":
            self.fail = now_s + self.lam * self.rng.weibull(self.model.shape, size=self.fail.shape)
        else:
            dead = self.fail <= now_s
            self.fail[dead] = now_s + self.lam * self.rng.weibull(self.model.shape, size=int(dead.sum()))
        return self.next_failure_s
