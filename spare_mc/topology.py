"""Topology: GPUs, model-parallel groups and the failure domains they sit in.

``G`` GPUs form ``N`` groups of ``M = G / N`` GPUs (one model replica each). Physically, GPUs sit in nodes of
``gpus_per_node`` GPUs, nodes in racks of ``nodes_per_rack`` nodes, racks in power/network domains of
``racks_per_power`` racks; GPU ``x`` is in node ``x // gpus_per_node`` and so on (a domain at the end may be
partial). The **placement** maps groups onto GPUs:

- ``"contiguous"``: group ``i`` occupies GPUs ``i M ... (i + 1) M - 1`` (a rack failure hits few groups);
- ``"strided"``: group ``i`` occupies GPUs ``i, i + N, i + 2N, ...`` (every group spreads over many nodes, so one
  node failure hits up to ``gpus_per_node`` groups).

A domain failure kills every group with at least one GPU in the domain (fail-stop: one dead GPU kills its group).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ._validation import UsageValueError, as_choice, as_int

__all__ = ["Topology", "DOMAIN_LEVELS", "PLACEMENTS"]

DOMAIN_LEVELS = ("node", "rack", "power")
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
    gpus_per_node, nodes_per_rack, racks_per_power : int
        Domain sizes (defaults: 8 GPUs per node, 4 nodes per rack, 8 racks per power domain).
    placement : {"contiguous", "strided"}
        How groups map onto GPUs.
    """

    n_gpus: int
    n_groups: int
    gpus_per_node: int = 8
    nodes_per_rack: int = 4
    racks_per_power: int = 8
    placement: str = "contiguous"

    def __post_init__(self):
        n_gpus = as_int(self.n_gpus, "n_gpus", min_value=1)
        n_groups = as_int(self.n_groups, "n_groups", min_value=1)
        object.__setattr__(self, "n_gpus", n_gpus)
        object.__setattr__(self, "n_groups", n_groups)
        if n_groups > n_gpus or n_gpus % n_groups:
            raise UsageValueError(f"`n_groups` must divide `n_gpus` (each group has M = G/N GPUs), got G={n_gpus}, "
                                  f"N={n_groups}")
        for name in ("gpus_per_node", "nodes_per_rack", "racks_per_power"):
            object.__setattr__(self, name, as_int(getattr(self, name), name, min_value=1))
        as_choice(self.placement, "placement", PLACEMENTS)

    @property
    def gpus_per_group(self) -> int:
        """``M = G / N``."""
        return self.n_gpus // self.n_groups

    def domain_size(self, level: str) -> int:
        """GPUs per domain at ``level``."""
        level = as_choice(level, "level", DOMAIN_LEVELS)
        size = self.gpus_per_node
        if level in ("rack", "power"):
            size *= self.nodes_per_rack
        if level == "power":
            size *= self.racks_per_power
        return size

    def group_of_gpu(self) -> np.ndarray:
        """The group of every GPU (length ``G``)."""
        x = np.arange(self.n_gpus, dtype=np.int64)
        return x // self.gpus_per_group if self.placement == "contiguous" else x % self.n_groups

    def domain_groups(self, level: str) -> tuple[np.ndarray, np.ndarray]:
        """Groups touched by each domain at ``level``, in CSR form ``(ptr, groups)``.

        ``groups[ptr[d]:ptr[d + 1]]`` are the distinct groups with a GPU in domain ``d`` (sorted).
        """
        size = self.domain_size(level)
        dom = np.arange(self.n_gpus, dtype=np.int64) // size
        n_dom = int(dom[-1]) + 1
        pairs = np.unique(dom * self.n_groups + self.group_of_gpu())
        d, g = np.divmod(pairs, self.n_groups)
        ptr = np.zeros(n_dom + 1, dtype=np.int64)
        np.cumsum(np.bincount(d, minlength=n_dom), out=ptr[1:])
        return ptr, g.astype(np.int64)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Topology":
        return cls(**d)
