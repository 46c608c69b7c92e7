"""Layouts by name: the table of layout kinds, and the one factory that builds every kind, placed against failure
domains or not.

:data:`LAYOUT_TABLE` says what each layout kind is: SPARe stacking or Rep's replica sets, built from ``N`` and
``r`` alone or placed against a :class:`~spare_mc.Topology`'s failure domains, with an exact law of the wipe-out
index or not. The tuples of kind names that the rest of the package checks against (:data:`LAYOUT_KINDS`,
:data:`PLACED_LAYOUT_KINDS`, :data:`EXACT_LAYOUTS`, :data:`SPARE_LAYOUTS`) are derived from it.

:mod:`spare_mc.model.layouts` builds layouts from ``N`` and ``r``; :mod:`spare_mc.model.placement` builds them
against failure domains. This module sits above both, so that neither imports the other's names.

>>> LAYOUT_KINDS, PLACED_LAYOUT_KINDS
(('cyclic', 'sidon', 'random', 'block'), ('domain_aware', 'domain_aware_sidon', 'domain_aware_block'))
>>> EXACT_LAYOUTS, SPARE_LAYOUTS
(('cyclic', 'random', 'block'), ('cyclic', 'sidon', 'random'))
"""

from __future__ import annotations

from dataclasses import dataclass

from .._lib.validation import UsageValueError, as_choice
from .layouts import Layout, ReplicaSets, block, check_n_r, cyclic, random_holders, sidon
from .placement import domain_aware

__all__ = ["LayoutKind", "LAYOUT_TABLE", "LAYOUT_KINDS", "PLACED_LAYOUT_KINDS", "EXACT_LAYOUTS", "SPARE_LAYOUTS",
           "make_layout"]


@dataclass(frozen=True)
class LayoutKind:
    """One kind of layout, by name.

    Attributes
    ----------
    name : str
        The name :func:`make_layout`, the command line, sweeps and :class:`~spare_mc.TimelineConfig` take.
    redundancy : {"spare", "rep"}
        SPARe's stacking (each group holds ``r`` shard types; :class:`Layout`) or Rep's replica sets (every member
        of a set holds the set's types; :class:`ReplicaSets` when ``r`` does not divide ``N``): the strategy that
        runs on it (:data:`spare_mc.model.strategies.STRATEGY_TABLE`).
    placed : bool
        Placed against the failure domains of a topology at a level (needs ``topology`` and ``level``;
        :func:`spare_mc.model.placement.domain_aware`), so not a choice of the command line's ``mu`` and
        ``overhead`` nor of sweeps.
    exact : bool
        Has an exact law of the wipe-out index under uniformly random failures
        (:func:`spare_mc.theory.exact.exact_wipeout`).
    """

    name: str
    redundancy: str
    placed: bool
    exact: bool


#: Every layout kind by name: cyclic stacking with unit stride, with Sidon offsets, independent random holders,
#: Rep's blocks; and, placed against failure domains, cyclic offsets avoiding the co-domain differences, the same
#: with Sidon offsets, and Rep's sets spread over the domains.
LAYOUT_TABLE = {k.name: k for k in (
    LayoutKind("cyclic", "spare", placed=False, exact=True),
    LayoutKind("sidon", "spare", placed=False, exact=False),
    LayoutKind("random", "spare", placed=False, exact=True),
    LayoutKind("block", "rep", placed=False, exact=True),
    LayoutKind("domain_aware", "spare", placed=True, exact=False),
    LayoutKind("domain_aware_sidon", "spare", placed=True, exact=False),
    LayoutKind("domain_aware_block", "rep", placed=True, exact=False),
)}

#: Layout names built from ``N`` and ``r`` alone: the choices of :func:`make_layout` without a topology, the command
#: line and sweeps.
LAYOUT_KINDS = tuple(k.name for k in LAYOUT_TABLE.values() if not k.placed)
#: Layout names that need a topology and a level (``make_layout(..., topology=, level=)``): cyclic offsets avoiding
#: the co-domain differences, the same with Sidon offsets, and Rep.
PLACED_LAYOUT_KINDS = tuple(k.name for k in LAYOUT_TABLE.values() if k.placed)
#: Layout kinds that have an exact wipe-out distribution.
EXACT_LAYOUTS = tuple(k.name for k in LAYOUT_TABLE.values() if k.exact)
#: SPARe stacking layouts of the timeline (``TimelineConfig.layout``).
SPARE_LAYOUTS = tuple(k.name for k in LAYOUT_TABLE.values() if k.redundancy == "spare" and not k.placed)


def make_layout(kind: str, n_groups: int, r: int, *, rng=None, topology=None, level=None) -> Layout | ReplicaSets:
    """Build a layout by name: one of :data:`LAYOUT_KINDS` (``"block"`` with ``r`` not dividing ``N``: the
    :class:`ReplicaSets` of uneven replication), or, with ``topology`` and ``level``, one of
    :data:`PLACED_LAYOUT_KINDS` (layouts placed against the failure domains at ``level``;
    :func:`spare_mc.model.placement.domain_aware`: ``"domain_aware"``, SPARe offsets avoiding the co-domain
    differences; ``"domain_aware_sidon"``, the same, Sidon; ``"domain_aware_block"``, Rep)."""
    kind = as_choice(kind, "layout", LAYOUT_KINDS + PLACED_LAYOUT_KINDS)
    if kind in PLACED_LAYOUT_KINDS:
        if topology is None or level is None:
            raise UsageValueError(f"layout {kind!r} needs `topology` and `level` (where the failure domains are)")
        n_groups, r = check_n_r(n_groups, r)
        if getattr(topology, "n_groups", n_groups) != n_groups:
            raise UsageValueError(f"`topology` must have n_groups = N = {n_groups}, got {topology.n_groups}")
        if kind == "domain_aware_block":
            return domain_aware(topology, r, level, kind="rep")
        return domain_aware(topology, r, level, kind="spare", sidon=kind == "domain_aware_sidon")
    if topology is not None or level is not None:
        raise UsageValueError(f"`topology` and `level` have no effect with layout {kind!r} (they apply to "
                              f"{', '.join(PLACED_LAYOUT_KINDS)})")
    if kind == "cyclic":
        return cyclic(n_groups, r)
    if kind == "sidon":
        return sidon(n_groups, r)
    if kind == "block":
        n_groups, r = check_n_r(n_groups, r)
        return block(n_groups, r) if n_groups % r == 0 else ReplicaSets(n_groups, r)
    return random_holders(n_groups, r, rng=rng)
