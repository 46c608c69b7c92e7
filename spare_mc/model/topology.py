"""Topology: GPUs, model-parallel groups and the failure domains they sit in.

``G`` GPUs form ``N`` groups of ``M = G / N`` GPUs (one model replica each). Physically, GPUs sit in nodes of
``gpus_per_node`` GPUs, nodes in racks of ``nodes_per_rack`` nodes, racks in power domains of ``racks_per_power``
racks, and power domains in **pods** of ``power_per_pod`` power domains (a network pod or power feed: by default
8, 32, 256 and 8,192 GPUs per node, rack, power domain and pod). GPU ``x`` is in node ``x // gpus_per_node`` and
so on (a domain at the end may be partial). A pod is larger than a group at the paper's sizes (600,000 / N GPUs
per group: 1,000 at N = 600), so a pod failure kills several groups even under contiguous placement. The
**placement** maps groups onto GPUs:

- ``"contiguous"``: group ``i`` occupies GPUs ``i M ... (i + 1) M - 1`` (a rack failure hits few groups);
- ``"strided"``: group ``i`` occupies GPUs ``i, i + N, i + 2N, ...`` (every group spreads over many nodes, so one
  node failure hits up to ``gpus_per_node`` groups).

A domain failure kills every group with at least one GPU in the domain (fail-stop: one dead GPU kills its group).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np

from .._lib.resources import check_memory
from .._lib.validation import UsageTypeError, UsageValueError, as_choice, as_indices, as_int, reject_unknown

__all__ = ["Topology", "DOMAIN_LEVELS", "PLACEMENTS"]

#: Failure-domain levels, smallest first (each one a whole number of the previous one).
DOMAIN_LEVELS = ("node", "rack", "power", "pod")
PLACEMENTS = ("contiguous", "strided")


@dataclass(frozen=True)
class Topology:
    """GPUs, groups and failure domains.

    Parameters
    ----------
    n_gpus : int
        ``G``, e.g. 600,000.
    n_groups : int
        ``N``; must divide ``G``.
    gpus_per_node, nodes_per_rack, racks_per_power, power_per_pod : int
        Domain sizes (defaults: 8 GPUs per node, 4 nodes per rack, 8 racks per power domain, 32 power domains per
        pod, i.e. 8, 32, 256 and 8,192 GPUs per node, rack, power domain and pod).
    placement : {"contiguous", "strided"}
        How groups map onto GPUs.

    Notes
    -----
    ``power_per_pod`` comes after ``placement`` so that positional calls written before the pod level existed
    keep their meaning. The per-level mean lifetimes in :data:`spare_mc.model.domain_rates.DOMAIN_MTBF_DEFAULTS` assume
    these default sizes.

    Examples
    --------
    >>> t = Topology(600_000, 600)
    >>> [t.domain_size(level) for level in DOMAIN_LEVELS]
    [8, 32, 256, 8192]
    >>> ptr, groups = t.domain_groups("pod")
    >>> groups[ptr[0]:ptr[1]].tolist()  # the first pod covers GPUs 0..8191: groups 0..8 of 1,000 GPUs
    [0, 1, 2, 3, 4, 5, 6, 7, 8]
    """

    n_gpus: int
    n_groups: int
    gpus_per_node: int = 8
    nodes_per_rack: int = 4
    racks_per_power: int = 8
    placement: str = "contiguous"
    power_per_pod: int = 32

    def __post_init__(self):
        n_gpus = as_int(self.n_gpus, "n_gpus", min_value=1)
        n_groups = as_int(self.n_groups, "n_groups", min_value=1)
        object.__setattr__(self, "n_gpus", n_gpus)
        object.__setattr__(self, "n_groups", n_groups)
        if n_groups > n_gpus or n_gpus % n_groups:
            raise UsageValueError(f"`n_groups` must divide `n_gpus` (each group has M = G/N GPUs), got G={n_gpus}, "
                                  f"N={n_groups}")
        for name in ("gpus_per_node", "nodes_per_rack", "racks_per_power", "power_per_pod"):
            object.__setattr__(self, name, as_int(getattr(self, name), name, min_value=1))
        as_choice(self.placement, "placement", PLACEMENTS)

    @property
    def gpus_per_group(self) -> int:
        """``M = G / N``."""
        return self.n_gpus // self.n_groups

    def domain_size(self, level: str) -> int:
        """GPUs per domain at ``level``."""
        level = as_choice(level, "level", DOMAIN_LEVELS)
        factors = (self.gpus_per_node, self.nodes_per_rack, self.racks_per_power, self.power_per_pod)
        return math.prod(factors[:DOMAIN_LEVELS.index(level) + 1])

    def unit_count(self, level: str) -> int:
        """Failure units at ``level``: the GPUs (``"gpu"``), or the domains of a domain level (``ceil(G / size)``:
        the last one may be partial)."""
        return self.n_gpus if level == "gpu" else -(-self.n_gpus // self.domain_size(level))

    def group_of_gpu(self) -> np.ndarray:
        """The group of every GPU (length ``G``)."""
        return self.groups_of(np.arange(self.n_gpus, dtype=np.int64))

    def groups_of(self, gpus: np.ndarray) -> np.ndarray:
        """The group of each GPU index in ``gpus`` (int64 array): ``g // (G / N)`` placed contiguously, ``g mod N``
        strided. No array of all GPUs is built (a failure log's GPU events at 60 million GPUs need none). Indices
        outside ``[0, G)`` are refused (-1 mapped to group -1 before)."""
        one = isinstance(gpus, (int, np.integer)) or (isinstance(gpus, np.ndarray) and gpus.ndim == 0)
        g = as_indices(gpus, "gpus", self.n_gpus, "GPU", n_name=None, scalar=True)
        g = g // self.gpus_per_group if self.placement == "contiguous" else g % self.n_groups
        return g[0] if one else g

    def domain_groups(self, level) -> tuple[np.ndarray, np.ndarray]:
        """Groups touched by each domain at ``level``, in CSR form ``(ptr, groups)``.

        ``groups[ptr[d]:ptr[d + 1]]`` are the distinct groups with a GPU in domain ``d`` (sorted). ``level`` may also
        be a sequence of levels: their domains concatenated in that order (:meth:`domain_units` also says where
        each level's domains start).
        """
        if not isinstance(level, str):
            return self.domain_units(level)[:2]
        size = self.domain_size(level)
        n_dom, n, g_all = self.unit_count(level), self.n_groups, self.n_gpus
        # Domain d holds GPUs first .. first + span - 1 (the last one may be partial). Contiguous placement maps them
        # to one range of groups; strided placement (group = GPU mod N) to the residues of `span` consecutive
        # integers: one range, or two when they wrap past N, or every group when span >= N. So the groups are one
        # or two ranges per domain, built without an array per GPU (tests/test_topology.py checks them against
        # the GPU-by-GPU computation).
        last = g_all - (n_dom - 1) * size
        # the groups listed in all: at most n_dom + N contiguous (a domain's range shares at most its first group with
        # the previous domain's), exactly this many strided
        total = n_dom + n if self.placement == "contiguous" else (n_dom - 1) * min(size, n) + min(last, n)
        check_memory(8 * (12 * n_dom + 2 * total), lambda: f"the {level} domains of a topology of {g_all:,} GPUs",
                     "fewer `n_gpus` need less")
        first = np.arange(n_dom, dtype=np.int64) * size
        span = np.full(n_dom, size, dtype=np.int64)
        span[-1] = last
        if self.placement == "contiguous":
            m = self.gpus_per_group
            lo = first // m
            starts, lens = lo, (first + span - 1) // m - lo + 1
        else:
            s = first % n
            k = np.minimum(span, n)
            wrap = np.maximum(s + k - n, 0)  # residues 0 .. wrap - 1, then s .. s + k - wrap - 1
            starts = np.stack([np.zeros_like(s), s], axis=1).ravel()
            lens = np.stack([wrap, k - wrap], axis=1).ravel()
        ptr = np.zeros(n_dom + 1, dtype=np.int64)
        np.cumsum(lens.reshape(n_dom, -1).sum(axis=1), out=ptr[1:])
        offsets = np.cumsum(lens) - lens
        groups = np.repeat(starts - offsets, lens)
        groups += np.arange(int(ptr[-1]), dtype=np.int64)
        return ptr, groups

    def domain_units(self, levels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The domains of several levels as one list of units: ``(ptr, groups, level_ptr)``.

        Domain ``d`` of the concatenation (the domains of ``levels[0]``, then of ``levels[1]``, ...) touches
        ``groups[ptr[d]:ptr[d + 1]]``; level ``levels[l]`` owns domains ``level_ptr[l]:level_ptr[l + 1]``.

        Examples
        --------
        >>> ptr, groups, level_ptr = Topology(600_000, 600).domain_units(("rack", "pod"))
        >>> level_ptr.tolist(), int(ptr[-1]) == groups.size
        ([0, 18750, 18824], True)
        """
        if isinstance(levels, str):
            levels = (levels,)
        try:
            levels = list(levels)
        except TypeError:
            raise UsageTypeError(f"`levels` must be a level name or a sequence of level names "
                                 f"({', '.join(DOMAIN_LEVELS)}), got {type(levels).__name__}") from None
        levels = [as_choice(lvl, "levels", DOMAIN_LEVELS) for lvl in levels]
        if not levels:
            raise UsageValueError("`levels` must hold at least one level")
        if len(set(levels)) != len(levels):
            raise UsageValueError(f"`levels` must name each level once, got {levels}")
        ptrs, groups, level_ptr = [np.zeros(1, dtype=np.int64)], [], [0]
        for lvl in levels:
            p, g = self.domain_groups(lvl)
            ptrs.append(p[1:] + ptrs[-1][-1])
            groups.append(g)
            level_ptr.append(level_ptr[-1] + p.size - 1)
        return np.concatenate(ptrs), np.concatenate(groups), np.array(level_ptr, dtype=np.int64)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Topology":
        if not isinstance(d, dict):
            raise UsageTypeError(f"a topology dict must be a dict, got {type(d).__name__}")
        reject_unknown(d, [f.name for f in fields(cls)], "a Topology dict")
        return cls(**d)
