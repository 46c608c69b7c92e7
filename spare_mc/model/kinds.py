"""Layouts by name: the one factory that builds every kind of layout, placed against failure domains or not.

:mod:`spare_mc.model.layouts` builds layouts from ``N`` and ``r``; :mod:`spare_mc.model.placement` builds them
against a :class:`~spare_mc.Topology`'s failure domains from those. This module sits above both, so that neither
imports the other's factory.
"""

from __future__ import annotations

from .._lib.validation import UsageValueError, as_choice
from .layouts import LAYOUT_KINDS, Layout, _n_r_iv, block, cyclic, random_holders, replica_sets, sidon
from .placement import PLACED_LAYOUT_KINDS, make_placed_layout

__all__ = ["make_layout"]


def make_layout(kind: str, n_groups: int, r: int, *, rng=None, topology=None, level=None) -> Layout:
    """Build a layout by name: one of :data:`LAYOUT_KINDS` (``"block"`` with ``r`` not dividing ``N``: the
    :class:`ReplicaSets` of uneven replication), or, with ``topology`` and ``level``, one of
    :data:`spare_mc.model.placement.PLACED_LAYOUT_KINDS` (layouts placed against the failure domains at ``level``;
    :func:`spare_mc.model.placement.domain_aware`)."""
    kind = as_choice(kind, "layout", LAYOUT_KINDS + PLACED_LAYOUT_KINDS)
    if kind in PLACED_LAYOUT_KINDS:
        if topology is None or level is None:
            raise UsageValueError(f"layout {kind!r} needs `topology` and `level` (where the failure domains are)")
        n_groups, r = _n_r_iv(n_groups, r)
        if getattr(topology, "n_groups", n_groups) != n_groups:
            raise UsageValueError(f"`topology` must have n_groups = N = {n_groups}, got {topology.n_groups}")
        return make_placed_layout(kind, topology, r, level)
    if topology is not None or level is not None:
        raise UsageValueError(f"`topology` and `level` have no effect with layout {kind!r} (they apply to "
                              f"{', '.join(PLACED_LAYOUT_KINDS)})")
    if kind == "cyclic":
        return cyclic(n_groups, r)
    if kind == "sidon":
        return sidon(n_groups, r)
    if kind == "block":
        n_groups, r = _n_r_iv(n_groups, r)
        return block(n_groups, r) if n_groups % r == 0 else replica_sets(n_groups, r)
    return random_holders(n_groups, r, rng=rng)
