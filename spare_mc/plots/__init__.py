"""Figures of sweep datasets and of the studies (matplotlib is imported inside the functions only).
Imports ``sweep`` and below.
"""

from .figures import *  # noqa: F401,F403 - the public names of spare_mc.plots
from .figures import __all__  # noqa: F401
