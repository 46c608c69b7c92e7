"""A topology's domains (spare_mc.model.topology.Topology.domain_groups) against the GPU-by-GPU computation."""

import itertools

import numpy as np
import pytest

from spare_mc.model.topology import DOMAIN_LEVELS, Topology


def _domain_groups_by_gpu(topo, level):
    """The slow twin: the group of every GPU, paired with its domain, made distinct and sorted by ``np.unique``."""
    dom = np.arange(topo.n_gpus, dtype=np.int64) // topo.domain_size(level)
    n_dom = int(dom[-1]) + 1
    d, g = np.divmod(np.unique(dom * topo.n_groups + topo.group_of_gpu()), topo.n_groups)
    ptr = np.zeros(n_dom + 1, dtype=np.int64)
    np.cumsum(np.bincount(d, minlength=n_dom), out=ptr[1:])
    return ptr, g


# G, N and domain sizes such that domains hold fewer GPUs than a group, as many, more, a partial last domain, and
# under strided placement residues that wrap past N, and domains larger than N
SHAPES = [(64, 8, (8, 4, 8, 32)), (96, 12, (3, 2, 5, 2)), (1000, 40, (7, 3, 2, 4)), (600, 600, (8, 4, 8, 32)),
          (720, 6, (5, 7, 3, 11)), (4800, 48, (8, 4, 8, 32)), (36, 36, (1, 1, 1, 1)), (50, 1, (3, 4, 5, 6))]


@pytest.mark.parametrize("placement", ["contiguous", "strided"])
@pytest.mark.parametrize("g, n, sizes", SHAPES)
def test_domain_groups_are_the_gpu_by_gpu_computation(g, n, sizes, placement):
    node, rack, power, pod = sizes
    topo = Topology(g, n, gpus_per_node=node, nodes_per_rack=rack, racks_per_power=power, placement=placement,
                    power_per_pod=pod)
    for level in DOMAIN_LEVELS:
        ptr, groups = topo.domain_groups(level)
        twin_ptr, twin_groups = _domain_groups_by_gpu(topo, level)
        assert ptr.dtype == groups.dtype == np.int64
        assert np.array_equal(ptr, twin_ptr), (level, ptr, twin_ptr)
        assert np.array_equal(groups, twin_groups), level


def test_domain_groups_at_600k_gpus_are_the_gpu_by_gpu_computation():
    """The study's topologies: 600,000 GPUs, N = 200, 600 and 1,000, both placements."""
    for n, placement in itertools.product((200, 600, 1000), ("contiguous", "strided")):
        topo = Topology(600_000, n, placement=placement)
        for level in DOMAIN_LEVELS:
            got, twin = topo.domain_groups(level), _domain_groups_by_gpu(topo, level)
            assert all(np.array_equal(a, b) for a, b in zip(got, twin)), (n, placement, level)
