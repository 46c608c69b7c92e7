"""Placement: layouts that keep the copies of a shard out of a common failure domain.

Model (docs/placement.md). A :class:`~spare_mc.Topology` puts ``N`` groups on GPUs and GPUs in nested failure
domains (node, rack, power domain, pod). A domain failure kills every group with a GPU in the domain. A layout (an
``N x r`` holder table, or Rep's replica sets) has a **domain conflict** when one domain touches two or more holders
of one shard type (members of one replica set): a single event then removes several copies at once, which the
wipe-out theory (independent group failures) does not account for.

Cyclic layouts. Group ``i``, layer ``l`` holds type ``(i + s_l) mod N``, so type ``j`` is held by groups
``j - s_l``. Let ``D`` be the **co-domain differences** at a level: the residues ``d != 0 (mod N)`` such that some
domain touches two groups ``i`` and ``i + d`` (:func:`co_domain_differences`; ``D = -D``). Then

    a domain touches two holders of some type  <=>  s_a - s_b (mod N) lies in D for some a != b.

(=>: a domain touching the holders ``j - s_a`` and ``j - s_b`` of type ``j`` spans their difference
``s_a - s_b``. <=: if a domain touches ``i`` and ``i + d`` with ``d = s_a - s_b``, these are the holders
``j - s_a`` and ``j - s_b`` of type ``j = i + s_a``, since ``j - s_b = i + s_a - s_b = i + d``.) So a
conflict-free cyclic layout is an offset set whose pairwise differences avoid ``D``: a clique containing 0 in the
circulant graph on ``Z_N`` whose edges are the differences outside ``D``. Under both placements of
:class:`~spare_mc.Topology` every domain touches a run of cyclically consecutive groups, so
``D = {+-1, ..., +-(k - 1)}`` where ``k`` is the largest number of groups one domain touches; then the condition is
that the ``r`` offsets are pairwise at least ``k`` apart around the cycle, possible exactly when
``r <= floor(N / k)`` (``r`` points at pairwise cyclic distance ``>= k`` leave ``r`` gaps of ``>= k`` summing to
``N``; evenly spread offsets ``s_l = floor(l N / r)`` achieve it).

Rep. ``b = floor(N / r)`` replica sets; set ``j`` takes the groups ``g`` with ``g mod b = j`` (sizes as
:func:`spare_mc.model.layouts.set_sizes`). A domain touching ``k`` groups needs them in ``k`` distinct sets, so
``k <= b`` is necessary; for a run of at most ``b`` consecutive groups that does not wrap past group ``N - 1`` the
residues ``g mod b`` are distinct, so it is also sufficient under contiguous placement and whenever ``b`` divides
``N``. When a run wraps (strided placement, ``b`` not dividing ``N``) a deterministic depth-first search over
assignments with the set sizes as capacities runs, and every result is checked against the domains.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from .._lib.validation import UsageTypeError, UsageValueError, as_bool, as_choice, as_int, check_r
from ._sidon import find_sidon
from .layouts import Layout, ReplicaSets, cyclic_offsets, set_sizes
from .topology import DOMAIN_LEVELS, Topology

__all__ = ["co_domain_differences", "max_groups_per_domain", "domain_conflicts", "DomainConflicts",
           "domain_aware", "domain_aware_offsets", "domain_aware_replica_sets", "DOMAIN_AWARE_KINDS"]

#: ``kind`` of :func:`domain_aware`: SPARe cyclic stacking or Rep (block replication).
DOMAIN_AWARE_KINDS = ("spare", "rep")

#: Backtracking nodes the general offset search may visit before giving up (not needed for the topologies of
#: :class:`~spare_mc.Topology`, whose co-domain differences form an interval).
SEARCH_BUDGET = 200_000


def _topology_level_iv(topology, level):
    if not isinstance(topology, Topology):
        raise UsageTypeError(f"`topology` must be a Topology, got {type(topology).__name__}")
    return as_choice(level, "level", DOMAIN_LEVELS)


def _domain_patterns(topology: Topology, level: str) -> tuple[np.ndarray, np.ndarray]:
    """The distinct shapes of the domains' group sets: each domain's groups minus the group of its first GPU
    (mod N), sorted and padded with -1; returns ``(unique rows, groups per domain)``."""
    ptr, groups = topology.domain_groups(level)
    n = topology.n_groups
    size = topology.domain_size(level)
    n_dom = ptr.size - 1
    counts = np.diff(ptr)
    first = topology.group_of_gpu()[np.arange(n_dom, dtype=np.int64) * size]
    rel = (groups - np.repeat(first, counts)) % n
    pad = np.full((n_dom, int(counts.max())), -1, dtype=np.int64)
    pad[np.repeat(np.arange(n_dom), counts), np.arange(groups.size) - np.repeat(ptr[:-1], counts)] = rel
    pad.sort(axis=1)
    # distinct rows through a hash (np.unique(axis=0) sorts structured rows, ~10x slower); checked exactly
    weights = np.random.default_rng(0x51D0).integers(1, 2**62, size=pad.shape[1])
    _, first_row, inverse = np.unique((pad * weights).sum(axis=1), return_index=True, return_inverse=True)
    if not np.array_equal(pad, pad[first_row[inverse.ravel()]]):  # pragma: no cover - a hash collision
        return np.unique(pad, axis=0), counts
    return pad[first_row], counts


def co_domain_differences(topology: Topology, level: str) -> np.ndarray:
    """The cyclic group-index differences that some domain at ``level`` spans.

    Parameters
    ----------
    topology : Topology
    level : one of :data:`spare_mc.model.topology.DOMAIN_LEVELS`

    Returns
    -------
    ndarray of int64
        Sorted ``d`` in ``[1, N)`` such that some domain touches two groups ``i`` and ``(i + d) mod N``; symmetric
        (``d`` in it iff ``N - d`` is).

    Notes
    -----
    Differences within a domain do not change when its groups are translated, so each domain is reduced to its
    group set minus the group of its first GPU; domains of one shape (at most a few per level under both
    placements) are handled once: all pairwise differences of the shape (or, for more than 2,000 groups, the
    support of its circular autocorrelation by FFT). Cost ``O(G)`` plus the distinct shapes.

    Examples
    --------
    >>> co_domain_differences(Topology(600_000, 600), "rack").tolist()  # a rack touches at most 2 groups
    [1, 599]
    >>> co_domain_differences(Topology(4096, 512, placement="strided"), "node").tolist()
    [1, 2, 3, 4, 5, 6, 7, 505, 506, 507, 508, 509, 510, 511]
    """
    level = _topology_level_iv(topology, level)
    n = topology.n_groups
    shapes, _ = _domain_patterns(topology, level)
    hit = np.zeros(n, dtype=bool)
    for row in shapes:
        p = row[row >= 0]
        if p.size <= 2000:
            hit[((p[:, None] - p[None, :]) % n).ravel()] = True
        else:
            ind = np.zeros(n)
            ind[p] = 1.0
            hit |= np.fft.irfft(np.abs(np.fft.rfft(ind)) ** 2, n) > 0.5
    hit[0] = False
    return np.nonzero(hit)[0].astype(np.int64)


def max_groups_per_domain(topology: Topology, level: str) -> int:
    """The largest number of groups one domain at ``level`` touches, ``k``.

    >>> max_groups_per_domain(Topology(600_000, 600), "pod")  # 8,192 GPUs over groups of 1,000
    10
    """
    level = _topology_level_iv(topology, level)
    ptr, _ = topology.domain_groups(level)
    return int(np.diff(ptr).max())


@dataclass(frozen=True)
class DomainConflicts:
    """Result of :func:`domain_conflicts`.

    Attributes
    ----------
    count : int
        Number of (domain, type) pairs where the domain touches two or more holders of the type.
    domain, type : int
        The first such pair (smallest domain, then smallest type), or -1 when ``count == 0``.
    """

    count: int
    domain: int
    type: int


def domain_conflicts(layout, topology: Topology, level: str) -> DomainConflicts:
    """Count the (domain, type) pairs where one domain at ``level`` touches two or more holders of a type.

    The obviously correct, slow reference: for every domain, count the types held by the groups it touches
    (through the layout's group -> types map) and keep those counted twice or more. For
    :class:`~spare_mc.model.layouts.ReplicaSets` a "type" is a replica set and its holders are its members.

    Parameters
    ----------
    layout : Layout or ReplicaSets
    topology : Topology
        With ``topology.n_groups == layout.n_groups``.
    level : one of :data:`spare_mc.model.topology.DOMAIN_LEVELS`

    Returns
    -------
    DomainConflicts

    Examples
    --------
    >>> from spare_mc import cyclic
    >>> topo = Topology(64, 8, gpus_per_node=4)
    >>> domain_conflicts(cyclic(8, 2), topo, "rack").count > 0  # racks of 16 GPUs touch groups i, i+1
    True
    """
    level = _topology_level_iv(topology, level)
    if not isinstance(layout, (Layout, ReplicaSets)):
        raise UsageTypeError(f"`layout` must be a Layout or ReplicaSets, got {type(layout).__name__}")
    if layout.n_groups != topology.n_groups:
        raise UsageValueError(f"`layout` and `topology` must have the same number of groups, got "
                              f"{layout.n_groups} and {topology.n_groups}")
    ptr, groups = topology.domain_groups(level)
    gptr, gtypes = layout.group_ptr, layout.group_types
    count, first = 0, (-1, -1)
    for d in range(ptr.size - 1):
        held = Counter()
        for g in groups[ptr[d]:ptr[d + 1]].tolist():
            held.update(gtypes[gptr[g]:gptr[g + 1]].tolist())
        bad = sorted(t for t, c in held.items() if c >= 2)
        if bad and count == 0:
            first = (d, bad[0])
        count += len(bad)
    return DomainConflicts(count, *first)


def _interval_width(diffs: np.ndarray, n: int) -> int | None:
    """``k`` if ``diffs`` is exactly ``{+-1, ..., +-(k-1)} mod n`` (``k = 1``: empty), else ``None``."""
    if diffs.size == 0:
        return 1
    small = diffs[diffs <= n // 2]
    k = int(small.max()) + 1
    expect = np.unique(np.concatenate([np.arange(1, k), n - np.arange(1, k)]) % n)
    expect = expect[expect != 0]
    return k if np.array_equal(np.sort(diffs), expect) else None


def _clique_search(n: int, r: int, allowed: np.ndarray, budget: int, *, sidon: bool = False):
    """Offsets ``0 = s_0 < ... < s_{r-1}`` with every pairwise difference allowed (and, with ``sidon``, all
    distinct): depth-first, candidates in increasing order, forward checking. Returns ``(offsets or None,
    exhausted)``: ``exhausted`` means the whole tree was searched, i.e. no such set exists."""
    nodes = 0
    allowed = allowed.copy()
    allowed[0] = False

    def extend(s, cand, free):
        nonlocal nodes
        if len(s) == r:
            return s
        if np.count_nonzero(cand) < r - len(s):
            return None
        for c in np.nonzero(cand)[0].tolist():
            nodes += 1
            if nodes > budget:
                return None
            nxt = cand & np.roll(allowed, c)  # x - c allowed
            nxt[:c + 1] = False
            nfree = free
            if sidon:
                d = np.concatenate([(c - np.asarray(s)) % n, (np.asarray(s) - c) % n])
                if not free[d].all() or np.unique(d).size != d.size:
                    continue
                nfree = free.copy()
                nfree[d] = False
            found = extend(s + [c], nxt, nfree)
            if found is not None or nodes > budget:
                return found
        return None

    found = extend([0], allowed.copy(), allowed.copy()) if r > 1 else [0]
    return found, nodes <= budget


def _domain_aware_iv(topology, r, level, kind, sidon):
    level = _topology_level_iv(topology, level)
    r = as_int(r, "r")
    check_r(r, topology.n_groups)
    kind = as_choice(kind, "kind", DOMAIN_AWARE_KINDS)
    sidon = as_bool(sidon, "sidon")
    if sidon and kind == "rep":
        raise UsageValueError("`sidon` applies to kind='spare' (cyclic offsets) only, got kind='rep'")
    return level, r, kind, sidon


def domain_aware_offsets(topology: Topology, r: int, level: str, *, sidon: bool = False) -> tuple[int, ...]:
    """Cyclic offsets ``0 = s_0 < ... < s_{r-1} < N`` whose pairwise differences avoid the co-domain differences
    at ``level`` (and, with ``sidon=True``, are also all distinct mod ``N``).

    Parameters
    ----------
    topology : Topology
    r : int
    level : one of :data:`spare_mc.model.topology.DOMAIN_LEVELS`
    sidon : bool

    Returns
    -------
    tuple of int

    Raises
    ------
    UsageValueError
        When no such offsets exist, saying why: with ``D = {+-1..+-(k-1)}`` (every topology of
        :class:`~spare_mc.Topology`) the condition is ``r <= floor(N / k)``; with ``sidon=True`` also
        ``r (r - 1) <= N - 1 - |D|`` (the ``r(r-1)`` distinct differences must fit outside ``D``).

    Notes
    -----
    Without ``sidon``: evenly spread offsets ``s_l = floor(l N / r)`` (cyclic gaps ``floor(N/r)`` or
    ``ceil(N/r)``) are tried first; they avoid an interval ``D`` whenever any set does. Otherwise a deterministic
    depth-first clique search in the circulant graph of allowed differences runs (candidates in increasing order,
    at most :data:`SEARCH_BUDGET` nodes); if it searches the whole tree, non-existence is proven. With ``sidon``:
    :func:`spare_mc.model.layouts.sidon_offsets`'s constructions, each dilated by the smallest unit ``t`` mod ``N`` for
    which ``t (s_a - s_b)`` avoids ``D`` (a unit dilation keeps a set Sidon), then a greedy and a tabu search
    that treat ``D`` as already used differences.

    Examples
    --------
    >>> domain_aware_offsets(Topology(600_000, 600), 8, "pod")  # a pod touches up to 10 groups
    (0, 75, 150, 225, 300, 375, 450, 525)
    """
    level, r, _, sidon = _domain_aware_iv(topology, r, level, "spare", sidon)
    return _offsets(topology, r, level, sidon)


def _offsets(topology, r, level, sidon):
    n = topology.n_groups
    diffs = co_domain_differences(topology, level)
    k = _interval_width(diffs, n)
    k_max = max_groups_per_domain(topology, level)
    where = (f"at level {level!r} one domain touches up to {k_max} of the N={n} groups "
             f"({topology.placement} placement, {topology.domain_size(level)} GPUs per {level}, "
             f"{topology.gpus_per_group} per group)")
    if k is not None and r > n // k:
        if 2 * k > n:  # the co-domain differences are every nonzero residue
            raise UsageValueError(f"no domain-aware layout exists for r={r}: {where}, and every pair of groups "
                                  f"shares a {level} domain, so no two holders of a type can sit in distinct "
                                  f"domains; need r = 1 (or a finer level or another placement)")
        raise UsageValueError(f"no domain-aware layout exists for r={r}: {where}, so two groups closer than {k} "
                              f"around the cycle share a domain and the r holders of a type must be pairwise at "
                              f"least {k} apart; at most floor(N/{k}) = {n // k} fit; need r <= {n // k}")
    avoid = np.zeros(n, dtype=bool)
    avoid[diffs] = True
    if sidon:
        free = n - 1 - diffs.size
        if r * (r - 1) > free:
            raise UsageValueError(f"no domain-aware Sidon offsets exist for r={r}: {where}; the r(r-1) = "
                                  f"{r * (r - 1)} pairwise differences must be distinct, nonzero and outside the "
                                  f"{diffs.size} co-domain differences, but only {free} residues mod N remain")
        s, _ = find_sidon(n, r, tuple(diffs.tolist()), 200)
        if s is not None:
            return s
        found, exhausted = _clique_search(n, r, ~avoid, SEARCH_BUDGET, sidon=True)
        if found is not None:
            return tuple(found)
        why = ("an exhaustive search shows that no such set exists" if exhausted else
               "none of the constructions (dilated Golomb, Singer, Bose-Chowla sets, greedy, tabu search, "
               f"{SEARCH_BUDGET:,} nodes of exhaustive search) found one")
        raise UsageValueError(f"no domain-aware Sidon offsets for r={r}, N={n}: {where}; the r(r-1) = {r * (r - 1)} "
                              f"differences must be distinct and avoid the {diffs.size} co-domain differences "
                              f"({free} free residues), and {why}; try sidon=False or a smaller r")
    even = np.arange(r, dtype=np.int64) * n // r
    d = (even[:, None] - even[None, :]) % n
    if not avoid[d[~np.eye(r, dtype=bool)]].any():
        return tuple(even.tolist())
    found, exhausted = _clique_search(n, r, ~avoid, SEARCH_BUDGET)
    if found is None:
        why = ("an exhaustive search shows no set of r offsets has all pairwise differences outside them"
               if exhausted else f"the search stopped after {SEARCH_BUDGET:,} nodes without finding one")
        raise UsageValueError(f"no domain-aware offsets for r={r}: {where}; the co-domain differences are "
                              f"{diffs.size} residues mod N and {why}")
    return tuple(found)


def domain_aware_replica_sets(topology: Topology, r: int, level: str) -> ReplicaSets:
    """Rep's ``floor(N / r)`` replica sets with no domain at ``level`` touching two members of one set.

    Set ``j`` is ``{g : g mod b = j}`` with ``b = floor(N / r)`` (sizes as :func:`spare_mc.model.layouts.set_sizes`);
    when a domain wraps past group ``N - 1`` and this conflicts, a deterministic depth-first search over
    assignments runs (groups in order, each into an admissible set with the most room left first; at most
    :data:`SEARCH_BUDGET` nodes), which proves non-existence when it searches the whole tree. The result
    carries ``set_of_group`` and ``sizes`` for the timeline and the wipe-out engine.

    Raises
    ------
    UsageValueError
        If a domain touches more than ``b`` groups (pigeonhole: impossible), or if neither construction works.

    Examples
    --------
    >>> sets = domain_aware_replica_sets(Topology(600_000, 600), 3, "pod")
    >>> sets.set_of_group[:4].tolist(), sets.sizes[:2].tolist()
    ([0, 1, 2, 3], [3, 3])
    """
    level, r, _, _ = _domain_aware_iv(topology, r, level, "rep", False)
    return _replica_sets(topology, r, level)


def _sets_conflict_free(sog: np.ndarray, ptr: np.ndarray, groups: np.ndarray) -> bool:
    dom = np.repeat(np.arange(ptr.size - 1, dtype=np.int64), np.diff(ptr))
    pairs = np.unique(dom * (int(sog.max()) + 1) + sog[groups])
    return pairs.size == groups.size


def _replica_sets(topology, r, level):
    n = topology.n_groups
    b = n // r
    k_max = max_groups_per_domain(topology, level)
    where = (f"at level {level!r} one domain touches up to {k_max} of the N={n} groups "
             f"({topology.placement} placement, {topology.domain_size(level)} GPUs per {level}, "
             f"{topology.gpus_per_group} per group)")
    if k_max > b:
        raise UsageValueError(f"no domain-aware replica sets exist for r={r}: {where}, and those groups must lie in "
                              f"distinct sets, but there are only floor(N/r) = {b}; need floor(N/r) >= {k_max}, "
                              f"i.e. r <= {n // k_max}")
    ptr, groups = topology.domain_groups(level)
    sog = np.arange(n, dtype=np.int64) % b
    if _sets_conflict_free(sog, ptr, groups):
        return ReplicaSets(n, r, assignment=sog)
    sog, exhausted = _search_sets(n, r, ptr, groups, SEARCH_BUDGET)
    if sog is not None and _sets_conflict_free(sog, ptr, groups):
        return ReplicaSets(n, r, assignment=sog)
    why = ("an exhaustive search shows that no assignment with these set sizes exists" if exhausted else
           f"a search ({SEARCH_BUDGET:,} nodes) found no other assignment")
    raise UsageValueError(f"no domain-aware replica sets for r={r}: {where}; sets g mod floor(N/r) conflict where "
                          f"a domain wraps from group N-1 to group 0 (N={n} is not a multiple of floor(N/r) = {b}), "
                          f"and {why}; {_set_advice(n, r, k_max)}")


def _set_advice(n, r, k_max):
    """What to try when domain-aware replica sets for ``r`` do not exist: the ``r`` (>= 2, <= N / k_max) for which
    ``floor(N/r)`` divides ``N`` -- the sets ``g mod floor(N/r)`` never wrap then -- or, if there is none, say so."""
    ok = [x for x in range(2, n // k_max + 1) if x != r and n % (n // x) == 0]
    if ok:
        shown = ", ".join(map(str, ok[:8])) + (", ..." if len(ok) > 8 else "")
        return f"r values for which floor(N/r) divides N (the sets never wrap) are {shown}"
    return (f"no r in 2..{n // k_max} makes floor(N/r) divide N={n} (N is prime or the domains are too wide): "
            f"try a smaller r, or contiguous placement")


def _search_sets(n, r, ptr, groups, budget):
    """Assign groups to sets (capacities ``set_sizes(N, r)``) so that no domain has two groups in one set:
    depth-first over groups 0, 1, ..., each trying the admissible sets with the most room first (the first descent
    is the greedy colouring); of the still empty sets of one size only one is tried (they are interchangeable).
    Returns ``(set_of_group or None, exhausted)``; ``exhausted`` means the whole tree was
    searched, i.e. no assignment exists. ``(None, False)`` when the conflict graph is too large to build."""
    counts = np.diff(ptr)
    if int((counts.astype(np.int64) ** 2).sum()) > 20_000_000:
        return None, False
    sizes = np.array(set_sizes(n, r), dtype=np.int64)
    room = sizes.copy()
    nbr = [set() for _ in range(n)]
    for d in range(ptr.size - 1):
        dom = groups[ptr[d]:ptr[d + 1]].tolist()
        for g in dom:
            nbr[g].update(dom)
    nbr = [sorted(h for h in nb if h < g) for g, nb in enumerate(nbr)]  # earlier groups only
    sog = np.full(n, -1, dtype=np.int64)

    def options(g):
        used = {int(sog[h]) for h in nbr[g]}
        ok, fresh = [], set()
        for j in range(sizes.size):
            if room[j] == 0 or j in used:
                continue
            if room[j] == sizes[j]:  # an empty set: empty sets of one size are interchangeable, try one
                if sizes[j] in fresh:
                    continue
                fresh.add(sizes[j])
            ok.append(j)
        return sorted(ok, key=lambda j: (-room[j], j))

    stack = [options(0)]
    nodes = 0
    while stack:
        g = len(stack) - 1
        if sog[g] >= 0:  # undo the previous choice at this depth
            room[sog[g]] += 1
            sog[g] = -1
        if not stack[-1]:
            stack.pop()
            continue
        nodes += 1
        if nodes > budget:
            return None, False
        j = stack[-1].pop(0)
        sog[g] = j
        room[j] -= 1
        if g == n - 1:
            return sog, True
        stack.append(options(g + 1))
    return None, True


def domain_aware(topology: Topology, r: int, level: str, *, kind: str = "spare", sidon: bool = False):
    """A layout in which no domain at ``level`` touches two holders of one shard type.

    Parameters
    ----------
    topology : Topology
    r : int
        Redundancy, ``1 <= r <= N``.
    level : one of :data:`spare_mc.model.topology.DOMAIN_LEVELS`
    kind : {"spare", "rep"}
        ``"spare"``: cyclic stacking with offsets from :func:`domain_aware_offsets`. ``"rep"``: block
        replication with the sets of :func:`domain_aware_replica_sets`; a holder table when ``r`` divides ``N``
        (each member of a set holds the set's ``r`` types, its own first), else the :class:`ReplicaSets` (as
        :func:`spare_mc.make_layout` does for ``"block"``).
    sidon : bool
        With ``kind="spare"``: also require Sidon offsets (two types share at most one holder).

    Returns
    -------
    Layout or ReplicaSets
        ``Layout.kind`` is ``"domain_aware"`` or ``"domain_aware_sidon"`` (offsets in ``Layout.offsets``), or
        ``"domain_aware_block"``.

    Notes
    -----
    The construction and its correctness argument are in the module docstring and docs/placement.md. Everything
    is deterministic; :func:`domain_conflicts` is the check.

    Examples
    --------
    >>> topo = Topology(600_000, 600)
    >>> lay = domain_aware(topo, 4, "rack")
    >>> lay.offsets, domain_conflicts(lay, topo, "rack").count
    ((0, 150, 300, 450), 0)
    """
    level, r, kind, sidon = _domain_aware_iv(topology, r, level, kind, sidon)
    n = topology.n_groups
    if kind == "spare":
        layout = cyclic_offsets(n, _offsets(topology, r, level, sidon))
        object.__setattr__(layout, "kind", "domain_aware_sidon" if sidon else "domain_aware")
        return layout
    sets = _replica_sets(topology, r, level)
    if n % r:
        object.__setattr__(sets, "kind", "domain_aware_block")  # not the consecutive sets of replica_sets(n, r)
        return sets
    members = np.argsort(sets.set_of_group, kind="stable").reshape(-1, r)  # row j: the members of set j
    holders = np.empty((n, r), dtype=np.int64)
    for m in range(r):
        holders[members[:, m]] = members[:, (m + np.arange(r)) % r]
    return Layout(holders, kind="domain_aware_block")

