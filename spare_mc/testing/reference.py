"""Slow, obviously correct references ("slow twins") for the fast kernels and the exact forms.

Nothing here is fast; everything here is short enough to check by reading. The test suite compares every fast path
against these: exhaustive enumeration of failure subsets and orders for small ``N``, a plain-Python wipe-out trial,
the GPU-by-GPU failure draw, the average over all random layouts, and ReCtlr solved from scratch with scipy's
matching routines (and networkx's min-cost flow).
"""

from __future__ import annotations

import bisect
import itertools
import math
import types
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_bipartite_matching, min_weight_full_bipartite_matching

from .._kernels.timeline_layout import HORIZON_US
from .._lib.validation import UsageValueError
from ..mc.reorder import ReCtlr
from ..model.failures import PerGPU
from ..model.layouts import Layout, replica_sets

__all__ = ["survival_by_subsets", "T_distribution_by_orders", "random_layout_survival_by_enumeration",
           "wipeout_trial", "holder_table", "wipeout_order_statistics", "gpu_by_gpu_group_lifetimes", "GpuByGpuClock", "RectlrReference", "rectlr_reference",
           "min_moves_networkx"]


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
    :class:`~spare_mc.model.layouts.ReplicaSets` one row per set listing its members, short sets padded by repeating their
    last member (a repeat changes no maximum)."""
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


def gpu_by_gpu_group_lifetimes(n_gpus: int, n_groups: int, gpu_mean_s: float, shape: float, rng) -> np.ndarray:
    """Group times to failure as the minimum over each group's ``M = G/N`` GPUs of iid Weibull lifetimes.

    The slow twin of the exact shortcut ``min of M Weibull(k, lam) = Weibull(k, lam M^(-1/k))``.
    """
    scale = gpu_mean_s / math.gamma(1.0 + 1.0 / shape)
    life = scale * rng.weibull(shape, size=n_gpus)
    return life.reshape(n_groups, n_gpus // n_groups).min(axis=1)


class GpuByGpuClock:
    """Slow twin of :class:`spare_mc.model.failures.PerGPUClock`: every GPU's absolute failure time, drawn at its birth.

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


# --------------------------------------------------------------------------------------------------- ReCtlr
@dataclass(frozen=True)
class RectlrReference:
    """ReCtlr outcome solved from scratch (see :func:`rectlr_reference`); fields as in ``ReCtlrStep``."""

    k: int
    c: int
    s_star: int
    phase0: bool
    moves: int
    patch_types: int
    patch: int
    wiped: bool
    patch_type_set: tuple = ()


def _capacitated_graph(n_types, edges, cap, weights=None):
    """Biadjacency of types x (group, copy) with every group split into ``cap`` unit copies."""

    rows, cols, vals = [], [], []
    for i, (t, g) in enumerate(edges):
        for j in range(cap):
            rows.append(t)
            cols.append(g * cap + j)
            vals.append(1.0 if weights is None else weights[i])
    n_groups = max((g for _, g in edges), default=-1) + 1
    return csr_array((vals, (rows, cols)), shape=(n_types, max(n_groups, 1) * cap))


def _max_matching_size(n_types, edges, cap) -> int:

    if not edges:
        return 0
    m = maximum_bipartite_matching(_capacitated_graph(n_types, edges, cap), perm_type="column")
    return int(np.count_nonzero(m >= 0))


def rectlr_reference(stacks, alive, newly_dead, stack_number: int) -> RectlrReference:
    """ReCtlr for one failure event, solved from scratch with ``scipy.sparse.csgraph``.

    Parameters
    ----------
    stacks : list of list of int
        Each group's types in current order (top first), before the failure.
    alive : array_like of bool
        Live groups before the failure.
    newly_dead : sequence of int
        Groups failing now.
    stack_number : int
        ``S`` before the failure.

    Notes
    -----
    Written from the definitions, with no state carried over: Phase 0 is a maximum matching of types to
    ``S`` copies of every live group over top-``S`` edges; ``S*`` is the least capacity ``>= max(S, c(k))`` at
    which the matching over all live holders is perfect; the fewest moves is a minimum-weight full matching with
    weight 2 for an edge at position ``>= S*`` and 1 otherwise (scipy needs non-zero weights), minus ``N``. The
    patch is the least capacity at which the types no survivor has in its top ``S`` can be matched to live
    holders.
    """

    n = len(stacks)
    S = int(stack_number)
    alive_after = np.array(alive, dtype=bool)
    newly = [g for g in newly_dead if alive_after[g]]
    alive_after[newly] = False
    k = n - int(alive_after.sum())
    holders = [[] for _ in range(n)]  # type -> [(group, position)]
    for g, st in enumerate(stacks):
        for p, t in enumerate(st):
            holders[t].append((g, p))
    if any(not any(alive_after[g] for g, _ in holders[t]) for t in range(n)):
        return RectlrReference(k, 0, 0, False, 0, 0, 0, True)
    c = -(-n // (n - k))
    live_top = {t for g in range(n) if alive_after[g] for t in stacks[g][:S]}
    patch_set = sorted({t for g in newly for t in stacks[g][:S]} - live_top)
    patch = 0
    if patch_set:
        idx = {t: i for i, t in enumerate(patch_set)}
        pedges = [(idx[t], g) for t in patch_set for g, _ in holders[t] if alive_after[g]]
        patch = 1
        while _max_matching_size(len(patch_set), pedges, patch) < len(patch_set):
            patch += 1
    top_edges = [(t, g) for t in range(n) for g, p in holders[t] if alive_after[g] and p < S]
    if _max_matching_size(n, top_edges, S) == n:
        return RectlrReference(k, c, S, True, 0, len(patch_set), patch, False, tuple(patch_set))
    free = [(t, g, p) for t in range(n) for g, p in holders[t] if alive_after[g]]
    s_star = max(S, c)
    while _max_matching_size(n, [(t, g) for t, g, _ in free], s_star) < n:
        s_star += 1
    weights = [2.0 if p >= s_star else 1.0 for _, _, p in free]
    graph = _capacitated_graph(n, [(t, g) for t, g, _ in free], s_star, weights)
    rows, cols = min_weight_full_bipartite_matching(graph)
    moves = int(round(graph[rows, cols].sum())) - n
    return RectlrReference(k, c, s_star, False, moves, len(patch_set), patch, False, tuple(patch_set))


def min_moves_networkx(stacks, alive, stack_number: int) -> int:
    """Fewest moves at capacity ``stack_number`` by networkx's min-cost flow (a second, independent Phase 2).

    Network: source -> type (capacity 1) -> live holder group (capacity 1, cost 1 if the type sits at position
    ``>= stack_number``) -> sink (capacity ``stack_number``); demand ``N``. Raises ``networkx.NetworkXUnfeasible``
    if no perfect assignment exists.
    """
    import networkx as nx

    n = len(stacks)
    G = nx.DiGraph()
    G.add_node("s", demand=-n)
    G.add_node("z", demand=n)
    for g, st in enumerate(stacks):
        if not alive[g]:
            continue
        G.add_edge(("g", g), "z", capacity=int(stack_number), weight=0)
        for p, t in enumerate(st):
            G.add_edge(("t", t), ("g", g), capacity=1, weight=int(p >= stack_number))
    for t in range(n):
        G.add_edge("s", ("t", t), capacity=1, weight=0)
    flow = nx.min_cost_flow(G)
    return int(nx.cost_of_flow(G, flow))


# ------------------------------------------------------------------------------------------------ timeline
def timeline_unit_clocks(cfg) -> tuple:
    """The unit clocks of a unit-clock failure model, derived from ``cfg.failures`` and ``cfg.topology``.

    Returns ``(scales_us, n_group_units, dom_ptr, dom_groups, keep, classes)``: every unit's Weibull scale in
    microseconds (the groups first, then the domains of each level), how many units are groups, the groups each
    domain touches (CSR), whether ages are kept at a restart, and the classes of units sharing one scale as
    ``(first unit, end)`` pairs: the groups, then each level of the model.

    Notes
    -----
    Written from the model, not from :meth:`TimelineConfig.unit_clocks`: a GPU lifetime is Weibull with shape ``k``
    and scale ``lam = mean / Gamma(1 + 1/k)``; a group fails at the first of its ``M`` GPUs, the minimum of ``M``
    such lifetimes, Weibull with scale ``lam M^(-1/k)``; a domain's lifetime is Weibull with the domain's own mean.
    Per-GPU model: one unit per group. Domain model: one unit per group for the per-GPU background (if any), then
    for every level of the model, finest first (node, rack, power, pod), one unit per domain of
    ``topology.domain_groups(level)``. Domains follow their background's age policy ("renew" without one).
    """

    f, topo = cfg.failures, cfg.topology
    per_gpu = f if isinstance(f, PerGPU) else f.background
    scales, n_gu = [], 0
    if per_gpu is not None:
        k = per_gpu.shape
        lam = per_gpu.gpu_mtbf_s / math.gamma(1.0 + 1.0 / k)
        n_gu = topo.n_groups
        scales += [lam * topo.gpus_per_group ** (-1.0 / k) * 1e6] * n_gu
    ptr, groups, classes = [0], [], [(0, n_gu)]
    if per_gpu is not f:
        for level in ("node", "rack", "power", "pod"):
            mean = dict(f.levels).get(level)
            if mean is None:
                continue
            lp, lg = topo.domain_groups(level)
            first = len(scales)
            ptr += [ptr[-1] + int(x) for x in lp[1:]]
            groups += [int(x) for x in lg]
            scales += [mean / math.gamma(1.0 + 1.0 / f.shape) * 1e6] * (len(lp) - 1)
            classes.append((first, len(scales)))
    keep = per_gpu is not None and per_gpu.age_policy == "keep"
    return scales, n_gu, ptr, groups, keep, classes


@dataclass
class _Fleet:
    """The groups as both processes of the twin see them."""

    up: list                                      # live groups in increasing order (a victim draw indexes it)
    dead: set = field(default_factory=set)
    pending: list = field(default_factory=list)   # died since the last all-reduce
    kill_times: list = field(default_factory=list)
    restarting: bool = False
    restart_end: int = 0                          # the end of the restart in progress
    restart_hit: object = None                    # restart_again: the event a failure during the restart fires
    kill_event: object = None                     # immediate detection: the event a kill fires
    arrivals: list = field(default_factory=list)  # wall times of every system-level arrival (the renewal clock)
    rejoin_at: int | None = None                  # repaired groups rejoin at this wall time (announced ahead)
    trace_out: bool = False


@dataclass
class _Renewal:
    """The system-level renewal process: arrival ``i`` at operational time ``a`` (None once the trace is out); the
    operational clock stood at ``o_ref`` at wall time ``t_ref``."""

    gaps: list
    victims: list
    i: int = 0
    a: int | None = None
    o_ref: int = 0
    t_ref: int = 0


@dataclass
class _Units:
    """Unit clocks: ``next[u]`` is unit ``u``'s absolute failure time, None while inactive (until a restart);
    ``il`` lifetimes of ``life`` are used."""

    scales: list
    n_group_units: int
    dom_ptr: list
    dom_groups: list
    keep: bool
    classes: list
    life: list
    next: list = field(default_factory=list)
    il: int = 0


class _Race:
    """Renewed unit clocks sampled as a race (``unit_sampler`` "race"), written from the model: from the last
    renewal ``t0`` every active unit has cumulative hazard ``rate_c (t - t0)^k`` (``rate_c = scale_c^-k`` for its
    class: group units, then the domain units of each level), so in the clock ``sigma = (t - t0)^k`` the next
    failure of the active units comes after an exponential of rate ``sum rate_c m_c`` (``m_c`` active units of
    class ``c``) and is a uniformly chosen active unit of a class chosen in proportion to ``rate_c m_c``.

    Each class keeps its units in a list, the active ones first; a unit going inactive swaps places with the last
    active one. Every arrival drawn takes one standard exponential of ``life``; every arrival that happens takes
    one victim draw ``v`` in ``[0, 2^32)``: ``x = v 2^-32 rate`` falls in class ``c`` if ``sum_{b<c} m_b rate_b <=
    x < sum_{b<=c} m_b rate_b`` (class order: groups, then the levels finest first; the last class with an active
    unit takes what rounding leaves over), and picks its active unit of rank ``floor((x - sum_{b<c} m_b rate_b) /
    rate_c)``. The sums are accumulated as the kernel does, class by class: the rate ``sum_c m_c rate_c`` in class
    order, then ``x`` less each class's weight in turn, so that both round alike.
    """

    def __init__(self, classes, life, picks, rates, inv_k, horizon):
        self.lists = [list(range(a, b)) for a, b in classes]
        self.cls = {u: c for c, lst in enumerate(self.lists) for u in lst}
        self.pos = {u: i for lst in self.lists for i, u in enumerate(lst)}
        self.m = [0] * len(classes)
        self.life, self.picks, self.il, self.ip = life, picks, 0, 0
        self.rates, self.inv_k = rates, inv_k
        self.horizon = horizon
        self.t0, self.sigma, self.sigma_next, self.t_next = 0, 0.0, 0.0, None
        self.trace_out = False

    def rate(self):
        total = 0.0
        for m, rate in zip(self.m, self.rates):
            total += m * rate
        return total

    def off(self, u):
        """Unit ``u`` is inactive until the next renewal."""
        c = self.cls[u]
        lst, p, last = self.lists[c], self.pos[u], self.m[c] - 1
        if p > last:
            return
        v = lst[last]
        lst[p], self.pos[v] = v, p
        lst[last], self.pos[u] = u, last
        self.m[c] -= 1

    def schedule(self):
        """The next arrival from the clock value of the last one (None with no active unit)."""
        rate = self.rate()
        if not rate > 0.0:
            self.t_next = None
            return
        if self.il >= len(self.life):
            self.trace_out = True
            return
        self.sigma_next = self.sigma + self.life[self.il] / rate
        self.il += 1
        x = self.sigma_next ** self.inv_k
        self.t_next = self.t0 + (self.horizon if not x < self.horizon else max(1, int(np.rint(x))))

    def advance(self):
        """After an arrival and the units it made inactive: the next one."""
        self.sigma = self.sigma_next
        self.schedule()

    def pick(self):
        """The unit of the arrival now due (None if the victim draws ran out)."""
        if self.ip >= len(self.picks):
            self.trace_out = True
            return None
        x = self.picks[self.ip] * (1.0 / 4294967296.0) * self.rate()
        self.ip += 1
        last = max(c for c, m in enumerate(self.m) if m > 0)
        for c in range(last + 1):
            w = self.m[c] * self.rates[c]
            if c == last or x < w:
                return self.lists[c][min(int(x / self.rates[c]), self.m[c] - 1)]
            x -= w

    def reset(self, t):
        """Every unit active and new at ``t``."""
        self.m = [len(lst) for lst in self.lists]
        self.t0, self.sigma = t, 0.0

    def renew(self, t):
        self.reset(t)
        self.schedule()

    def renew_but(self, t, m_from, dead_groups):
        """The end of a restart under stay_dead: the units that went inactive during it (since the counts were
        ``m_from``) stay inactive, and so do the units of the groups ``dead_groups`` that died during it (in the
        order they died); every other unit is new at ``t``."""
        during = [u for c in range(len(self.lists)) for u in self.lists[c][self.m[c]:m_from[c]]]
        self.reset(t)
        for u in reversed(during):
            self.off(u)
        for g in dead_groups:
            if g < len(self.lists[0]):
                self.off(g)
        self.schedule()


def _move_work(dst: dict, src: dict) -> None:
    """Add the work totals of ``src`` to ``dst`` (by key) and empty ``src``: work kept, or moved between the blocks
    of :func:`timeline_simpy` (since the last checkpoint, kept in memory only, in a save in flight)."""
    for key, v in src.items():
        dst[key] += v
        src[key] = 0


def timeline_simpy(cfg, trace, *, jitter_rng=None, layout=None, repair_rng=None, log=None, record=None) -> dict:
    """Independent SimPy implementation of the time-to-train model of :mod:`spare_mc.ttt.run`.

    Written from the model's text, not from the kernel: a failure process and a trainer process on a SimPy clock in
    integer microseconds, stepping through every step (no skipping), Rep wipe-outs decided by
    :meth:`ReplicaSets.is_wiped` on the dead set, SPARe by the :class:`spare_mc.ReCtlr` controller, unit clocks derived
    by :func:`timeline_unit_clocks`; gaps and lifetimes are clamped at the model's horizon of ``2^61`` (Python
    integers: nothing overflows). ``trace = (gaps, victims)`` or ``(life,)`` as in
    :func:`spare_mc.ttt.run.make_trace`; ``jitter_rng`` draws the duration jitter (needed when ``cfg.jitter_sd > 0``);
    ``layout`` is the job's holder table when it is drawn per job (``cfg.layout == "random"``). Returns the
    microsecond totals: ``ttt, useful, redundant, patch, allreduce, rectlr_shrink, checkpoint, restart, lost,
    failures, absorbed, wipeouts, checkpoints, checkpoints_lost, detections, steps_run, steps_done, status``.

    Notes
    -----
    The options, as their text states them:

    - ``rep_masked_cost``: a masked Rep detection costs the shrink; plus ``rep_resync_s`` ("resync"); or plus a
      fresh step compute in the patch time ("redo_step"). ``masked_detect_s`` is added at every masked detection of
      Rep and SPARe. ``patch_cost``: SPARe's patch is ``patch x T_comp``, nothing, or ``S* x T_comp``.
    - ``restart_failures="stay_dead"``: the restart brings back the groups dead when it begins; failures during it
      kill live groups as at any other time, and those stay dead (and undetected) when the job resumes. Unit clocks:
      units that had fired before the restart are idle through it and get new lifetimes at its end; units that fire
      (or whose group dies) during it stay idle until the next restart; the others are renewed at the end ("renew")
      or keep their clocks ("keep").
    - ``ckpt_every_steps = k``: a checkpoint when ``k`` steps were done since the last checkpoint or restart.
    - ``ckpt_failure="lost"``: a checkpoint during whose save ``[start, end)`` a group was killed is not usable.
    - ``restart_failures="restart_again"``: a failure during a restart (absorbed: it kills nothing) starts it again
      from its arrival, with a fresh restart time; the restart ends when one runs without a failure.
    - ``detection="immediate"`` (CKPT-only): a phase (a step's compute and all-reduce, or a save) during which a
      group is killed, or at whose start one is dead, stops at that kill and the job wipes out then: the time the
      step ran is lost, the time the save ran is checkpoint time and the checkpoint counts as lost. A kill at the
      exact end of a phase hits the next one, at its start.
    - ``final_checkpoint``: a checkpoint after the last step too; the job ends when it completes.
    - ``ckpt_policy`` "hazard" / "young_hazard": at every step boundary, from scratch: the known dead groups (those
      detected since the last restart), the known live groups whose failure would wipe out given them (all for
      CKPT-only; ``ReplicaSets.is_wiped`` for Rep; a type whose every other holder is known dead for SPARe), the
      wall time since the last system-level arrival strictly before now (or since 0), the Weibull hazard there,
      and the period's formula; due when the time since the last checkpoint or restart reaches it.
    - ``repair``: a group found dead at a masked detection is ready ``repair_s`` later (or
      ``exp(mu + sigma Z)`` seconds, ``Z`` from ``repair_rng``, in the order the groups died); at the first step
      boundary (or end of a save, ``rejoin="checkpoint"``) at or after that, while steps remain, every ready group is
      live again, SPARe's controller is rebuilt from scratch on the groups still dead, and the job pauses
      ``rejoin_s``. A failure at that very instant hits the system after the rejoin. A global restart cancels the
      repairs in progress.
    - Rep runs on :func:`spare_mc.model.layouts.replica_sets`: a step computes ``round(N T_comp / n_sets)``, one layer's
      worth ``c T_comp / that`` (rounded down) is useful, and the per-replica all-reduce is ``N / n_sets`` times
      ``T_a``.
    """
    import simpy


    us = 1_000_000
    horizon = int(HORIZON_US)  # a longer gap or lifetime is clamped to it: it never ends within a job
    n = cfg.n_groups
    sets = (None if cfg.strategy != "rep" else
            replica_sets(n, cfg.r) if not cfg.domain_aware else cfg.replica_sets())  # placed sets: from the config
    if layout is None and cfg.strategy != "rep":
        layout = cfg.layout_object()
    sd = float(cfg.jitter_sd)
    stay_dead = cfg.restart_failures == "stay_dead"
    again = cfg.restart_failures == "restart_again"
    immediate = cfg.detection == "immediate"
    # from the options' text: the restart time grows as (N / N_ref)^0, ^1 or ^2; Rep all-reduces once per replica
    # (N / n_sets times a step) when asked
    power = {"constant": 0, "linear": 1, "quadratic": 2}[cfg.restart_growth]
    restart_seconds = cfg.restart_s * (n / cfg.restart_ref_groups) ** power
    per_replica = cfg.strategy == "rep" and cfg.rep_allreduce == "per_replica"
    allreduce_seconds = cfg.allreduce * (n / sets.n_sets if per_replica else 1)

    def dur(base):
        base = int(base)
        if not cfg.draws_jitter or base == 0:  # the kernel's and the job's test (TimelineConfig.draws_jitter)
            return base
        return max(0, int(np.round(base * jitter_rng.normal(1.0, sd))))

    env = simpy.Environment()
    fleet = _Fleet(list(range(n)))
    fleet.copies = set()  # the groups holding a copy of the last checkpoint in their memory
    copies = cfg.memory_copies
    tiered = copies > 0 or cfg.ckpt_async
    tot = dict.fromkeys(("useful", "redundant", "patch", "allreduce", "rectlr_shrink", "checkpoint", "restart",
                         "lost", "failures", "absorbed", "wipeouts", "checkpoints", "checkpoints_lost", "detections",
                         "steps_run", "rejoins", "memory_restarts", "remote_fallbacks", "async_slowdown"), 0)
    repairing = cfg.repair != "none"
    ready = {}  # group -> wall time its repair is done (inf: known dead, back only at a global restart)
    log_back = {}  # repair="log": group -> when the log's units that killed it are all back (inf: unknown)

    def repair_done(g):
        """When a group found dead now is ready to rejoin."""
        if cfg.repair == "log":
            return max(env.now, log_back[g])
        return env.now + repair_time()

    def repair_time():
        if cfg.repair == "fixed":
            return round(cfg.repair_s * us)
        sigma = cfg.repair_sd
        x = math.exp(math.log(cfg.repair_s) - sigma ** 2 / 2 + sigma * repair_rng.standard_normal()) * 1e6
        return horizon if not x < horizon else max(1, int(np.rint(x)))

    def note(touched):
        """``record``: every failure event, absorbed or not, as (time, the groups it touches)."""
        if record is not None:
            record.append((env.now, list(touched)))

    def kill(g):
        fleet.copies.discard(g)  # its memory, with a checkpoint copy in it, is gone
        fleet.up.remove(g)
        fleet.dead.add(g)
        fleet.pending.append(g)
        fleet.kill_times.append(env.now)
        if fleet.kill_event is not None and not fleet.kill_event.triggered:
            fleet.kill_event.succeed()

    def absorbing():
        """Failures now are absorbed: a restart is running and the restart takes them (the default)."""
        return fleet.restarting and not stay_dead

    def absorb():
        """A failure during a restart: counted; under restart_again it starts the restart again."""
        tot["absorbed"] += 1
        if again and not fleet.restart_hit.triggered:
            fleet.restart_hit.succeed()

    def restart_ends_now():
        """A failure at the very end of a restart hits the restarted system: let the restart end first."""
        return fleet.restarting and env.now == fleet.restart_end

    if log is not None:  # a failure log: event e at times[e] touches groups[ptr[e]:ptr[e + 1]]
        times, ptr, groups = ([int(x) for x in a] for a in log[:3])
        # repair="log": event e's unit is back at times[e] + repair[e] (never if unknown, -1)
        log_repair = [math.inf if x < 0 else int(x) for x in log[3]] if cfg.repair == "log" else None
        units = race = None

        def failure_process():
            for e, t_e in enumerate(times):
                while env.now < t_e:
                    try:
                        yield env.timeout(t_e - env.now)
                    except simpy.Interrupt:  # restarts change nothing here: wait on for the same event
                        pass
                while restart_ends_now():  # a restart ending now comes first: the event hits the restarted job
                    yield env.timeout(0)
                if absorbing():
                    absorb()
                    continue
                back = None if log_repair is None else t_e + log_repair[e]
                for g in groups[ptr[e]:ptr[e + 1]]:
                    if g not in fleet.dead:
                        kill(g)
                        if back is not None:
                            log_back[g] = back
                    elif back is not None:  # already dead: it is back only when this unit is back too
                        log_back[g] = max(log_back[g], back)
                        if g in ready:
                            ready[g] = max(ready[g], back)
            while True:  # the log is over: no more failures
                try:
                    yield env.event()
                except simpy.Interrupt:
                    pass
    elif cfg.failures is None:
        clock = _Renewal([min(int(x), horizon) for x in trace[0]], [int(x) for x in trace[1]])
        clock.a = clock.gaps[0] if clock.gaps else None
        units = race = None

        def failure_process():
            while True:
                if clock.a is None:
                    fleet.trace_out = True
                    return
                rate = n if absorbing() else (len(fleet.up) if cfg.live_scaling else n)
                try:
                    if rate == 0:
                        yield env.event()  # never fires: woken only by an interrupt
                    else:
                        yield env.timeout(clock.t_ref + -(-(clock.a - clock.o_ref) // rate) - env.now)
                    # a restart ending now, or repaired groups rejoining now, come first (the trainer resumes after
                    # two hops)
                    while restart_ends_now() or fleet.rejoin_at == env.now:
                        yield env.timeout(0)
                except simpy.Interrupt:  # the rate changes (a restart starts, groups rejoin): bank the clock
                    clock.o_ref += rate * (env.now - clock.t_ref)
                    clock.t_ref = env.now
                    continue
                fleet.arrivals.append(env.now)
                clock.o_ref, clock.t_ref = clock.a, env.now
                if absorbing():
                    note([0])
                    absorb()
                elif fleet.up:  # with no live group (live scaling off) the failure hits nothing
                    victim = fleet.up[(clock.victims[clock.i] * len(fleet.up)) >> 32]
                    note([victim])
                    kill(victim)
                else:
                    note([0])  # every group is dead
                clock.i += 1
                clock.a = clock.a + clock.gaps[clock.i] if clock.i < len(clock.gaps) else None
    else:
        units = _Units(*timeline_unit_clocks(cfg), [float(x) for x in trace[0]])
        units.next = [None] * len(units.scales)
        race = None
        if cfg.unit_race:  # a unit of scale lam has hazard rate lam^-k in the clock sigma = (t - t0)^k
            k = cfg.failures.shape
            race = _Race(units.classes, units.life, [int(x) for x in trace[1]],
                         [units.scales[a] ** -k if b > a else 0.0 for a, b in units.classes], 1.0 / k, horizon)

        def redraw(t_from, which):
            """New lifetimes from ``t_from`` for the units ``which(u)`` selects, in unit order."""
            for u in range(len(units.scales)):
                if not which(u):
                    continue
                if units.il >= len(units.life):
                    fleet.trace_out = True
                    return
                life = units.scales[u] * units.life[units.il]
                units.next[u] = t_from + (horizon if not life < horizon else max(1, int(np.rint(life))))
                units.il += 1

        def unit_groups(u):
            """The groups unit ``u`` touches (dead or alive)."""
            if u < units.n_group_units:
                return [u]
            d = u - units.n_group_units
            return units.dom_groups[units.dom_ptr[d]:units.dom_ptr[d + 1]]

        def live_targets(u):
            """The groups unit ``u`` kills: its group, or its domain's live groups."""
            return [u] if u < units.n_group_units else [g for g in unit_groups(u) if g not in fleet.dead]

        if race is None:
            redraw(0, lambda u: True)
        else:
            race.renew(0)

        def race_process():
            while True:
                if race.trace_out:
                    fleet.trace_out = True
                    return
                try:
                    if race.t_next is None:
                        yield env.event()
                    else:
                        yield env.timeout(race.t_next - env.now)
                    if restart_ends_now():  # the restart ends first: it renews the units and wakes us
                        yield env.timeout(0)
                        continue
                except simpy.Interrupt:  # a restart ended: the units were renewed
                    continue
                u = race.pick()
                if u is None:
                    fleet.trace_out = True
                    return
                note(unit_groups(u))
                if absorbing():
                    race.off(u)
                    race.advance()
                    absorb()
                    continue
                for g in live_targets(u):
                    kill(g)
                    if g < units.n_group_units:
                        race.off(g)  # a dead group's GPUs no longer fail
                race.off(u)
                race.advance()

        def failure_process():
            if race is not None:
                yield from race_process()
                return
            while True:
                active = [(t, u) for u, t in enumerate(units.next) if t is not None]
                try:
                    if not active:
                        yield env.event()
                    else:
                        yield env.timeout(min(active)[0] - env.now)
                    if restart_ends_now():  # the restart ends first: it redraws the lifetimes and wakes us
                        yield env.timeout(0)
                        continue
                except simpy.Interrupt:  # a restart ended: lifetimes were redrawn
                    continue
                _, u = min(active)
                units.next[u] = None
                note(unit_groups(u))
                if absorbing():
                    absorb()
                    continue
                for g in live_targets(u):
                    kill(g)
                    if g < units.n_group_units:
                        units.next[g] = None  # a dead group's GPUs no longer fail

    fail_proc = env.process(failure_process())
    comp, ar = round(cfg.compute_s * us), round(allreduce_seconds * us)
    # a Rep step computes N / n_sets layers (each member of a set computes the set's shard)
    rep_step = round(Fraction(n * comp, sets.n_sets)) if sets is not None else None
    period, cap = round(cfg.ckpt_period * us), round(cfg.max_wall_factor * cfg.t0_s * us)
    every = cfg.ckpt_every_steps
    result = {"status": "ok"}

    def killed_within(t0, t1):
        """Whether a group was killed at a time in ``[t0, t1)``."""
        for t in reversed(fleet.kill_times):
            if t < t0:
                return False
            if t < t1:
                return True
        return False

    policy = cfg.ckpt_policy

    def dynamic_due(since_ck, known_dead):
        """The dynamic policy's rule at this step boundary (see the notes)."""
        live = [g for g in range(n) if g not in known_dead]
        if cfg.strategy == "ckpt":
            n_crit = len(live)
        elif cfg.strategy == "rep":
            n_crit = sum(sets.is_wiped(known_dead | {g}) for g in live)
        else:
            dead_types = [t for t in range(n) if all(int(h) in known_dead for h in layout.holders[t])]
            assert not dead_types  # a known wipe-out would have restarted
            n_crit = sum(any(all(int(h) in known_dead or int(h) == g for h in layout.holders[t]) for t in range(n))
                         for g in live)
        if n_crit == 0:
            return False
        k = cfg.shape
        lam = cfg.mtbf_s / math.gamma(1.0 + 1.0 / k)
        last = max([t for t in fleet.arrivals if t < env.now], default=0)
        age = (env.now - last) / 1e6 / lam
        if age == 0.0 and k < 1.0:
            base = math.inf
        else:
            base = k * age ** (k - 1.0)
        if not base > 0.0:
            return False
        tf = lam * (n if cfg.live_scaling else len(live)) / (n_crit * base)
        ts, tr = cfg.save_s, restart_seconds + cfg.load_s  # T_r with its checkpoint load
        x = ts + math.sqrt(ts * ts + 2.0 * ts * (tf + tr)) if policy == "hazard" else math.sqrt(2.0 * ts * tf)
        thr = cfg.ckpt_period_factor * x * 1e6
        return math.isfinite(thr) and since_ck >= round(thr)

    def trainer():
        st = types.SimpleNamespace(ctl=ReCtlr(layout) if cfg.strategy == "spare" else None, done=0, saved=0,
                                   known_dead=set(),
                                   last_ck=0,  # wall time of the end of the last checkpoint or restart
                                   mark=0,     # steps done at the last checkpoint or restart
                                   since_ck=dict.fromkeys(("useful", "redundant", "patch", "allreduce",
                                                           "rectlr_shrink"), 0),
                                   remote=0,          # steps done at the last checkpoint in remote storage
                                   since_remote=0,    # in-memory checkpoints since the last remote save
                                   persist_end=None,  # when the asynchronous save in flight completes
                                   persist_steps=0)
        st.in_memory = dict.fromkeys(st.since_ck, 0)   # work kept only by in-memory checkpoints
        st.persisting = dict.fromkeys(st.since_ck, 0)  # work the save in flight will keep
        result["state"] = st
        st.S = st.ctl.stack_number if st.ctl else (cfg.r if cfg.strategy == "rep" else 1)

        def wipe_out(lost_now):
            """A wipe-out now, ``lost_now`` of the phase in progress lost: the global restart. Returns True if the
            run stopped inside it (the cap)."""
            persist_check()
            tot["wipeouts"] += 1
            lost = sum(st.since_ck.values()) + lost_now
            if copies and fleet.copies:  # a holder of the last checkpoint is alive: reload it from memory
                _move_work(st.in_memory, st.persisting)
                tot["memory_restarts"] += 1
                base = round(restart_seconds * us) + round(cfg.memory_load * us)
            else:  # from remote storage: the work kept only in memory is lost too
                lost += sum(st.in_memory.values()) + sum(st.persisting.values())
                st.in_memory = dict.fromkeys(st.since_ck, 0)
                st.persisting = dict.fromkeys(st.since_ck, 0)
                if copies:
                    tot["remote_fallbacks"] += 1
                    st.since_remote = 0
                st.saved = st.remote
                base = round(restart_seconds * us) + round(cfg.load_s * us)
            st.persist_end = None  # a save in flight is abandoned
            tot["lost"] += lost
            ready.clear()  # every group comes back with the restart
            st.since_ck = dict.fromkeys(st.since_ck, 0)
            st.done = st.saved
            fleet.restarting = True
            if stay_dead:  # the groups dead now come back; the ones that die during the restart stay dead
                replaced = set() if units is None else {u for u, t in enumerate(units.next) if t is None}
                m_from = None if units is None or race is None else list(race.m)
                fleet.up, fleet.dead, fleet.pending = list(range(n)), set(), []
            fail_proc.interrupt()
            start = env.now
            r_s = dur(base)
            while True:
                if env.now + r_s > cap:  # a restart that ends past the cap ends the run at the cap, unsimulated
                    tot["restart"] += cap - start
                    result.update(status="capped", done=st.done, end=cap, cut=start)
                    return True
                fleet.restart_end = env.now + r_s
                fleet.restart_hit = env.event()
                yield env.timeout(r_s) | fleet.restart_hit
                if again and fleet.restart_hit.triggered and env.now < fleet.restart_end:
                    r_s = dur(base)  # a failure: the restart starts again from it
                    continue
                break
            tot["restart"] += env.now - start
            if not stay_dead:
                fleet.up, fleet.dead, fleet.pending = list(range(n)), set(), []
            fleet.restarting = False  # same rate as during the restart: the system process needs no wake-up
            if units is not None and race is not None:  # every unit is new, but under stay_dead those that
                if stay_dead:                           # went off during the restart
                    race.renew_but(env.now, m_from, fleet.pending)
                else:
                    race.renew(env.now)
                fail_proc.interrupt()
                if race.trace_out:
                    result["status"] = "trace"
                    return True
            elif units is not None:  # replaced hardware gets new lifetimes from the end of the restart
                if not stay_dead:
                    redraw(env.now, lambda u: not units.keep or units.next[u] is None)
                else:
                    def renewed(u):
                        if u < units.n_group_units and u in fleet.dead:
                            return False  # its group died during the restart: idle until the next one
                        if u in replaced:
                            return True  # it fired before the restart: new hardware
                        return units.next[u] is not None and not units.keep
                    redraw(env.now, renewed)
                fail_proc.interrupt()
                if fleet.trace_out:
                    result["status"] = "trace"
                    return True
            st.ctl = ReCtlr(layout) if cfg.strategy == "spare" else None
            if st.ctl:
                st.S = st.ctl.stack_number
            st.last_ck, st.mark = env.now, st.done
            st.known_dead = set()
            if copies:  # the restored checkpoint is in every group's memory: m of them keep a copy
                place_copies()
            return False

        def place_copies():
            """For j = 0 .. m - 1, the first group at or after floor(j N / m), cyclically, not chosen yet and not
            known dead; a chosen group that is dead (not detected yet) gets no copy."""
            chosen = []
            for j in range(copies):
                g = j * n // copies
                for _ in range(n):
                    if g not in chosen and g not in st.known_dead:
                        chosen.append(g)
                        break
                    g = (g + 1) % n
            fleet.copies = {g for g in chosen if g not in fleet.dead}

        def persist_check():
            """An asynchronous save complete by now: its checkpoint is in remote storage, its work kept."""
            if st.persist_end is not None and st.persist_end <= env.now:
                _move_work(tot, st.persisting)
                st.remote = st.persist_steps
                if not copies:
                    st.saved = st.persist_steps
                st.persist_end = None

        def tiered_checkpoint():
            """A due checkpoint with in-memory copies and/or asynchronous saves, as the options' text says."""
            persist_check()
            remote = not copies or st.since_remote + 1 >= cfg.remote_every
            if remote and cfg.ckpt_async and st.persist_end is not None:
                if not copies:
                    return  # one remote save at a time: due again at the next step boundary
                remote = False
            tot["checkpoints"] += 1
            if copies and (not remote or cfg.ckpt_async):
                k = dur(round(cfg.memory_save * us))
                yield env.timeout(k)
                tot["checkpoint"] += k
                place_copies()
                st.saved = st.done
            if not remote:
                _move_work(st.in_memory, st.since_ck)
                st.since_remote += 1
            elif not cfg.ckpt_async:
                k = dur(round(cfg.save_s * us))
                yield env.timeout(k)
                tot["checkpoint"] += k
                _move_work(tot, st.in_memory)
                _move_work(tot, st.since_ck)
                if copies:
                    place_copies()
                st.saved = st.remote = st.done
                st.since_remote = 0
            else:
                _move_work(st.persisting, st.in_memory)
                _move_work(st.persisting, st.since_ck)
                st.persist_steps = st.done
                st.persist_end = env.now + dur(round(cfg.save_s * us))
                st.since_remote = 0
                persist_check()
            st.last_ck, st.mark = env.now, st.done

        def interruptible(length):
            """Immediate detection: run a phase of ``length`` unless a kill stops it. Returns whether one did (a
            group dead at its start, or killed before its end)."""
            yield env.timeout(0)  # let failures arriving exactly now land first
            start = env.now
            if not fleet.pending:
                fleet.kill_event = env.event()
                yield env.timeout(length) | fleet.kill_event
                fleet.kill_event = None
            return bool(fleet.pending) and (env.now < start + length or env.now == start)

        def announce(end, done):
            """Repaired groups will rejoin at ``end``, when ``done`` steps are done (none once every step is):
            failures at that instant wait for them."""
            if repairing and done < cfg.n_steps and ready and min(ready.values()) <= end:
                fleet.rejoin_at = end

        def rejoin():
            """Every group whose repair is done is live again; the job pauses ``rejoin_s``."""
            if fleet.rejoin_at != env.now:
                return
            back = sorted(g for g, t in ready.items() if t <= env.now)
            if not back:  # repair='log': a later event postponed the repair announced; nothing rejoins
                fleet.rejoin_at = None
                return
            for g in back:
                del ready[g]
                bisect.insort(fleet.up, g)
                fleet.dead.discard(g)
                st.known_dead.discard(g)
            tot["rejoins"] += len(back)
            if cfg.strategy == "spare":
                st.ctl = ReCtlr(layout)
                if ready:
                    st.ctl.fail(sorted(ready))
                st.S = st.ctl.stack_number
            fleet.rejoin_at = None
            if fail_proc.is_alive:
                fail_proc.interrupt()  # the failure rate follows the live groups
            cost = dur(round(cfg.rejoin_s * us))
            yield env.timeout(cost)
            st.since_ck["rectlr_shrink"] += cost

        if copies:  # the initial state is held like a restored checkpoint
            place_copies()
        while st.done < cfg.n_steps or (cfg.final_checkpoint and st.saved < cfg.n_steps):
            persist_check()
            if env.now > cap:
                result["status"] = "capped"
                break
            nominal = rep_step if sets is not None else st.S * comp
            c = dur(nominal)
            if immediate:  # CKPT-only
                a = dur(ar)
                start = env.now
                stopped = yield from interruptible(c + a)
                if fleet.trace_out:
                    result["status"] = "trace"
                    return
                if stopped:
                    tot["detections"] += 1
                    tot["steps_run"] += 1
                    fleet.pending = []
                    if (yield from wipe_out(env.now - start)):
                        return
                    continue
                extra_rc = extra_patch = 0
                tot["steps_run"] += 1
            else:
                slow = 0
                if st.persist_end is not None and st.persist_end > env.now:  # compute runs f times slower until
                    x = min(float(st.persist_end - env.now), cfg.async_slowdown * float(c))  # the save is done
                    slow = int(math.floor(x * ((cfg.async_slowdown - 1.0) / cfg.async_slowdown) + 0.5))
                    tot["checkpoint"] += slow
                    tot["async_slowdown"] += slow
                yield env.timeout(c + slow)
                yield env.timeout(0)  # let failures arriving exactly now land first
                if fleet.trace_out:
                    result["status"] = "trace"
                    return
                newly, fleet.pending = fleet.pending, []
                wiped = False
                extra_rc = extra_patch = 0
                if newly:
                    tot["detections"] += 1
                    if cfg.strategy == "ckpt":
                        wiped = True
                    elif cfg.strategy == "rep":
                        wiped = sets.is_wiped(fleet.dead)
                        if not wiped:
                            extra_rc = dur(round(cfg.shrink_s * us))
                            if cfg.rep_masked_cost == "resync":
                                extra_rc += dur(round(cfg.rep_resync_s * us))
                            extra_rc += dur(round(cfg.masked_detect_s * us))
                            if cfg.rep_masked_cost == "redo_step":
                                extra_patch = dur(rep_step)
                    else:
                        step = st.ctl.fail(newly)
                        wiped = step.wiped
                        if not wiped:
                            extra_rc = (dur(round(cfg.rectlr_s * us)) + dur(round(cfg.shrink_s * us))
                                        + dur(round(cfg.masked_detect_s * us)))
                            extra_patch = {"per_shard": lambda: dur(step.patch * comp), "none": lambda: 0,
                                           "whole_step": lambda: dur(step.s_star * comp)}[cfg.patch_cost]()
                tot["steps_run"] += 1
                if wiped:
                    if (yield from wipe_out(c)):
                        return
                    continue
                st.known_dead |= set(newly)
                if repairing:
                    for g in newly:
                        ready[g] = repair_done(g)
                a = dur(ar)
                if cfg.rejoin == "step":  # at the end of the step in progress
                    announce(env.now + extra_rc + extra_patch + a, st.done + 1)
                yield env.timeout(extra_rc + extra_patch + a)
                if fleet.trace_out:
                    result["status"] = "trace"
                    return
            useful = c * comp // nominal if sets is not None else c // st.S
            st.since_ck["useful"] += useful
            st.since_ck["redundant"] += c - useful
            st.since_ck["patch"] += extra_patch
            st.since_ck["rectlr_shrink"] += extra_rc
            st.since_ck["allreduce"] += a
            st.done += 1
            if st.ctl:
                st.S = st.ctl.stack_number
            if repairing and cfg.rejoin == "step":
                yield from rejoin()
            if policy != "periodic":
                due = dynamic_due(env.now - st.last_ck, st.known_dead)
            else:
                due = st.done - st.mark >= every if every else env.now - st.last_ck >= period
            if tiered:
                if due and st.done < cfg.n_steps:
                    yield from tiered_checkpoint()
            elif (due and st.done < cfg.n_steps) or (cfg.final_checkpoint and st.done == cfg.n_steps):
                start = env.now
                k = dur(round(cfg.save_s * us))
                if immediate:
                    stopped = yield from interruptible(k)
                    if fleet.trace_out:
                        result["status"] = "trace"
                        return
                    if stopped:  # the save is interrupted: unusable, and the job wipes out now
                        tot["checkpoint"] += env.now - start
                        tot["checkpoints"] += 1
                        tot["checkpoints_lost"] += 1
                        tot["detections"] += 1
                        fleet.pending = []
                        if (yield from wipe_out(0)):
                            return
                        continue
                else:
                    if repairing and cfg.rejoin == "checkpoint":
                        announce(start + k, st.done)
                    yield env.timeout(k)
                tot["checkpoint"] += k
                tot["checkpoints"] += 1
                if cfg.ckpt_failure == "lost" and killed_within(start, start + k):
                    tot["checkpoints_lost"] += 1  # unusable: the rollback point and the unsaved work stay
                else:
                    _move_work(tot, st.since_ck)
                    st.saved = st.remote = st.done
                st.last_ck, st.mark = env.now, st.done
                if repairing and cfg.rejoin == "checkpoint":
                    yield from rejoin()
        result["done"] = st.done

    proc = env.process(trainer())
    env.run(until=proc)
    st = result["state"]
    for block in (st.since_ck, st.in_memory, st.persisting):  # progress kept when the job ends, however it ends
        _move_work(tot, block)
    tot["ttt"] = result.get("end", env.now)
    if "cut" in result:  # stopped inside a restart: every failure up to its start was detected
        tot["failures"] = sum(k <= result["cut"] for k in fleet.kill_times)
    else:
        tot["failures"] = sum(k < env.now for k in fleet.kill_times)  # failures that hit the running job
    tot["steps_done"] = result.get("done", 0)
    tot["status"] = result["status"]
    return tot
