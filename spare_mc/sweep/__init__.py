"""Parameter sweeps: a TOML spec -> tasks on dask -> one xarray dataset, its storage and its comparison with
theory. Imports ``logs`` and below.
"""

from .runner import *  # noqa: F401,F403 - the public names of spare_mc.sweep
from .runner import __all__  # noqa: F401
