"""Parameter sweeps: a TOML spec -> tasks on dask -> one xarray dataset, its storage and its comparison with
theory. Imports ``logs`` and below.

The modules, by job: :mod:`~spare_mc.sweep.spec` (the spec, its parameters, grid points and task keys),
:mod:`~spare_mc.sweep.tasks` (what a task computes, the dataset assembled from the tasks),
:mod:`~spare_mc.sweep.runner` (running a sweep, resuming it, its output), :mod:`~spare_mc.sweep.cluster` (dask: the
local cluster, lost workers, signals), :mod:`~spare_mc.sweep.progress` (progress on stderr),
:mod:`~spare_mc.sweep.compare` (the dataset against the exact laws), :mod:`~spare_mc.sweep.storage` (files).
"""

from .cluster import NO_WORKER_TIMEOUT_S, MixedCodeError, WorkersLost
from .compare import DatasetComparison, PointComparison, compare_dataset
from .runner import open_sweep_dataset, run_study_sweep, run_sweep
from .spec import FAILURE_CHOICES, PARAMETERS, SweepSpec
from .storage import OUTPUTS, QUANTITIES, open_dataset, summarize, write_dataset
from .tasks import run_task

__all__ = ["compare_dataset", "DatasetComparison", "FAILURE_CHOICES", "MixedCodeError", "NO_WORKER_TIMEOUT_S",
           "open_dataset", "open_sweep_dataset", "OUTPUTS", "PARAMETERS", "PointComparison", "QUANTITIES",
           "run_study_sweep", "run_sweep", "run_task", "summarize", "SweepSpec", "WorkersLost", "write_dataset"]
