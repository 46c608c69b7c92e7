"""spare_mc -- Monte Carlo failure and reliability research toolkit for SPARe-style redundant data parallelism.

The package is layered, lowest first (docs/architecture.md; ``tests/test_layers.py`` enforces it): ``_lib``
(argument checks, seeding, provenance, resource budgets), ``options`` and ``stats`` (estimates, confidence
intervals, comparison with theory) -> ``_kernels`` (the numba loops) -> ``model`` (topology and failure domains,
failure processes, layouts and their placement) -> ``theory`` (exact laws, closed forms) -> ``mc`` (wipe-out Monte
Carlo; ReCtlr, adaptive reordering, and the compute overhead of stacking) -> ``ttt`` (the time-to-train timeline of
CKPT-only, Rep+CKPT and SPARe+CKPT, its theory and the optimiser of redundancy and checkpoint period) -> ``logs``
(real failure logs: read, replayed, fitted) -> ``sweep`` (dask sweeps and their datasets) -> ``plots`` ->
``analyses`` (the studies) -> ``cli`` and ``testing`` (the slow, obviously correct twins of every fast kernel).
The names below are the curated public API; ``import spare_mc as sm`` reaches them all.
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
from .model.kinds import EXACT_LAYOUTS, LAYOUT_KINDS, PLACED_LAYOUT_KINDS, make_layout
from .model.layouts import Layout, ReplicaSets, block, cyclic, cyclic_offsets, random_holders, sidon
from .model.placement import (DomainConflicts, co_domain_differences, domain_aware, domain_aware_offsets,
                              domain_aware_replica_sets, domain_conflicts, max_groups_per_domain)
from .model.topology import Topology
from .options import get_options, set_options
from .stats import (Comparison, MCEstimate, clopper_pearson_interval, compare, estimate_mean, ratio_estimate,
                    wilson_interval)
from .theory.closed_forms import (availability, ckpt_period_daly, ckpt_period_optimal, ckpt_period_young, mu_expansion,
                                  mu_paper, mu_rep_paper, normalized_ttt, optimal_availability, overhead_lower_bound,
                                  r_star, stack_lower_bound)
from .theory.exact import ExactDistribution, exact_wipeout
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
    "ReplicaSets",
    # placement against failure domains
    "co_domain_differences", "max_groups_per_domain", "domain_conflicts", "DomainConflicts", "domain_aware",
    "domain_aware_offsets", "domain_aware_replica_sets", "PLACED_LAYOUT_KINDS",
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
    # the studies (spare_mc.analyses; loaded on first use)
    "sensitivity", "calibrate", "dynamic_study", "repair_study", "reproduce",
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


#: The study functions, loaded on first use (``import spare_mc`` stays as fast as without the studies' imports):
#: name -> the module that holds it. ``sm.sensitivity``, ``sm.calibrate`` and ``sm.reproduce`` are these functions,
#: not the 0.2 module paths of those names (``from spare_mc.sensitivity import Variant`` still reads the deprecated
#: alias; ``import spare_mc.sensitivity as m`` now gives the function: import ``spare_mc.analyses.sensitivity``).
_STUDIES = {"sensitivity": "analyses.sensitivity", "calibrate": "analyses.calibrate",
            "dynamic_study": "analyses.dynamic", "repair_study": "analyses.repair", "reproduce": "analyses.reproduce"}


def __getattr__(name):
    """The study functions (:data:`_STUDIES`), and ``sm.timeline`` and the other 0.2 module paths as attributes: the
    deprecated alias (spare_mc/_moved.py)."""
    if name in _STUDIES:
        return getattr(_import_module(f"{__name__}.{_STUDIES[name]}"), name)
    if name in _MOVED:
        return _import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_STUDIES))


import sys as _sys  # noqa: E402


class _Package(type(_sys)):
    """The package's module type: importing a 0.2 path named like a study function (``import
    spare_mc.sensitivity``) does not bind the alias module over ``sm.sensitivity``, the function."""

    def __setattr__(self, name, value):
        if name in _STUDIES and isinstance(value, type(_sys)):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
