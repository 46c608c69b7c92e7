"""Parameter sweeps: a TOML spec -> tasks on dask -> one xarray dataset, its storage and its comparison with
theory. Imports ``logs`` and below.
"""

from .runner import (compare_dataset, DatasetComparison, FAILURE_CHOICES, MixedCodeError, NO_WORKER_TIMEOUT_S,
                     open_dataset, open_sweep_dataset, OUTPUTS, PARAMETERS, PointComparison, QUANTITIES, run_study_sweep,
                     run_sweep, run_task, summarize, SweepSpec, WorkersLost, write_dataset)

__all__ = ["compare_dataset", "DatasetComparison", "FAILURE_CHOICES", "MixedCodeError", "NO_WORKER_TIMEOUT_S",
           "open_dataset", "open_sweep_dataset", "OUTPUTS", "PARAMETERS", "PointComparison", "QUANTITIES", "run_study_sweep",
           "run_sweep", "run_task", "summarize", "SweepSpec", "WorkersLost", "write_dataset"]
