"""spare_mc -- Monte Carlo failure and reliability research toolkit for SPARe-style redundant data parallelism.

The package follows the data flow of a study:

``topology`` (GPUs, groups, failure domains) -> ``failures`` (failure-event samplers) -> ``layouts`` (who holds
which shard; ``placement``: layouts placed against failure domains) -> ``survivability`` (wipe-out Monte Carlo)
-> ``exact`` / ``closed_forms`` (theory) -> ``stats`` (estimates, confidence intervals, comparison with theory)
-> ``cli``. ``failure_logs`` reads, replays and fits real failure logs; ``reorder`` runs ReCtlr (adaptive
reordering) failure by failure and measures the compute overhead of stacking; ``timeline`` simulates a whole
training job (CKPT-only, Rep+CKPT, SPARe+CKPT) and ``optimize`` finds each strategy's best redundancy and checkpoint
period. ``reference`` holds the slow, obviously correct twins of every fast kernel.
"""

from ._lib import loading as _loading  # noqa: F401 - first: the console script's Ctrl-C while the package loads
from ._lib.validation import UsageError, UsageTypeError, UsageValueError
from ._lib.version import __version__
from .logs.failure_log import FailureLog, TimelineEvents, failure_log_from_arrays, read_failure_log, write_failure_log
from .logs.fit import LevelFit, LogFit, fit_failure_log, weibull_mle
from .logs.replay import LogReplay, replay_log
from .logs.replay_ttt import LogTTTResult, replay_log_ttt
from .logs.synthetic import sampled_failure_log, synthetic_log
from .mc.reorder import OverheadResult, ReCtlr, ReCtlrStep, StackBoundSum, exact_stack_bound_sum, overhead_mc
from .mc.survivability import WipeoutResult, wipeout_mc
from .model.failures import (DomainFailures, FailureEvents, PerGPU, SystemRenewal, UniformOrder, failure_from_spec,
                             failure_model_from_dict, sample_events)
from .model.kinds import make_layout
from .model.layouts import (LAYOUT_KINDS, Layout, ReplicaSets, block, cyclic, cyclic_offsets, random_holders,
                            replica_sets, sidon)
from .model.placement import (PLACED_LAYOUT_KINDS, DomainConflicts, co_domain_differences, domain_aware,
                              domain_aware_offsets, domain_aware_replica_sets, domain_conflicts, make_placed_layout,
                              max_groups_per_domain)
from .model.topology import Topology
from .options import get_options, set_options
from .stats import (Comparison, MCEstimate, clopper_pearson_interval, compare, estimate_mean, ratio_estimate,
                    wilson_interval)
from .theory.closed_forms import (availability, ckpt_period_daly, ckpt_period_optimal, ckpt_period_young, mu_expansion,
                                  mu_paper, mu_rep_paper, normalized_ttt, optimal_availability, overhead_lower_bound,
                                  r_star, stack_lower_bound)
from .theory.exact import EXACT_LAYOUTS, ExactDistribution, exact_wipeout
from .ttt.config import TimelineConfig, paper_allreduce_s
from .ttt.optimize import MainTable, MainTableRow, OptimumResult, main_table, optimize_strategy
from .ttt.results import TimelineRun, TTTResult
from .ttt.run import simulate_ttt
from .ttt.theory import TheoryTTT, theory_ttt

__all__ = [
    # topology and failure models
    "Topology", "UniformOrder", "SystemRenewal", "PerGPU", "DomainFailures", "FailureEvents", "sample_events",
    "failure_model_from_dict", "failure_from_spec",
    # failure logs: read, replay, fit, generate
    "FailureLog", "TimelineEvents", "LogReplay", "LevelFit", "LogFit", "read_failure_log", "write_failure_log",
    "failure_log_from_arrays", "replay_log", "fit_failure_log", "weibull_mle", "synthetic_log",
    "sampled_failure_log",
    # layouts
    "LAYOUT_KINDS", "Layout", "block", "cyclic", "cyclic_offsets", "make_layout", "random_holders", "sidon",
    "ReplicaSets", "replica_sets",
    # placement against failure domains
    "co_domain_differences", "max_groups_per_domain", "domain_conflicts", "DomainConflicts", "domain_aware",
    "domain_aware_offsets", "domain_aware_replica_sets", "make_placed_layout", "PLACED_LAYOUT_KINDS",
    # wipe-out Monte Carlo, exact laws, closed forms
    "WipeoutResult", "wipeout_mc", "EXACT_LAYOUTS", "ExactDistribution", "exact_wipeout",
    "availability", "ckpt_period_daly", "ckpt_period_optimal", "ckpt_period_young", "mu_expansion", "mu_paper",
    "mu_rep_paper", "normalized_ttt", "optimal_availability", "overhead_lower_bound", "r_star", "stack_lower_bound",
    # adaptive reordering
    "ReCtlr", "ReCtlrStep", "OverheadResult", "overhead_mc", "exact_stack_bound_sum", "StackBoundSum",
    # time to train and the optimiser
    "TimelineConfig", "TimelineRun", "TTTResult", "paper_allreduce_s", "simulate_ttt", "replay_log_ttt",
    "LogTTTResult", "OptimumResult",
    "main_table", "optimize_strategy", "theory_ttt", "TheoryTTT", "MainTable", "MainTableRow",
    # statistics
    "MCEstimate", "Comparison", "compare", "estimate_mean", "ratio_estimate", "wilson_interval",
    "clopper_pearson_interval",
    # errors
    "UsageError", "UsageTypeError", "UsageValueError",
    # options
    "set_options", "get_options",
    "__version__",
]

# the digest of the code as loaded, not as it may be on disk later (a session that imported spare_mc, then pulled
# an update, still runs the old code: its sweep parts must say so); about 2 ms
from ._lib.provenance import code_digest as _code_digest  # noqa: E402

_code_digest()
del _code_digest

# the module paths of 0.2 (spare_mc.timeline, spare_mc.failure_logs, ...) stay importable, with a warning, for 0.3.x
from importlib import import_module as _import_module  # noqa: E402

from ._moved import MOVED as _MOVED  # noqa: E402
from ._moved import install as _install_moved  # noqa: E402

_install_moved()
del _install_moved


def __getattr__(name):
    """``sm.timeline`` and the other 0.2 module paths as attributes: the deprecated alias (spare_mc/_moved.py)."""
    if name in _MOVED:
        return _import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
