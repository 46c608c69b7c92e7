"""The slow, obviously correct twins of the fast kernels: importable by a user who changes a kernel and wants its
oracle. They need the test extras (simpy, networkx): ``pip install 'spare_mc[test]'``; both are imported lazily,
inside the functions that use them (:func:`timeline_simpy`, :func:`min_moves_networkx`), so the rest imports
without them. Imports ``ttt`` and below; nothing in the package imports it.

The modules, by what they check: :mod:`~spare_mc.testing.wipeout` (the wipe-out Monte Carlo and the exact laws:
enumeration, plain trials, twins of the wipe-out kernels), :mod:`~spare_mc.testing.failures` (the per-GPU failure
draws), :mod:`~spare_mc.testing.rectlr` (ReCtlr from scratch: scipy matching, networkx min-cost flow),
:mod:`~spare_mc.testing.timeline_twin` (the SimPy twin of the job timeline) and
:mod:`~spare_mc.testing.timeline_clocks` (its failure clocks), :mod:`~spare_mc.testing.log_replay` (the replay of a
failure log, with its repairs).
"""

from .failures import GpuByGpuClock, gpu_by_gpu_group_lifetimes
from .log_replay import replay_reference
from .rectlr import RectlrReference, min_moves_networkx, rectlr_reference
from .timeline_clocks import timeline_unit_clocks
from .timeline_twin import SimpyTimeline, timeline_simpy
from .wipeout import (T_distribution_by_orders, holder_table, random_layout_survival_by_enumeration, splitmix64_py,
                      survival_by_subsets, wipeout_order_stat_twin, wipeout_order_statistics, wipeout_partition_twin,
                      wipeout_trial)

__all__ = ["survival_by_subsets", "T_distribution_by_orders", "random_layout_survival_by_enumeration",
           "wipeout_trial", "holder_table", "wipeout_order_statistics", "splitmix64_py", "wipeout_order_stat_twin",
           "wipeout_partition_twin", "gpu_by_gpu_group_lifetimes", "GpuByGpuClock", "RectlrReference",
           "rectlr_reference", "min_moves_networkx", "timeline_unit_clocks", "timeline_simpy", "SimpyTimeline",
           "replay_reference"]
