"""Slow twins of ReCtlr (adaptive reordering): one failure event solved from scratch, with no state carried over, by
scipy's matching routines (:func:`rectlr_reference`), and the fewest moves by networkx's min-cost flow
(:func:`min_moves_networkx`; networkx is imported inside it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_bipartite_matching, min_weight_full_bipartite_matching

__all__ = ["RectlrReference", "min_moves_networkx", "rectlr_reference"]


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
