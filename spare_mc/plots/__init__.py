"""Figures of sweep datasets and of the studies (matplotlib is imported inside the functions only).
Imports ``sweep`` and below.

Figures and tables agree, or say why not. A figure and a table from the same run must show the same numbers, or the
figure must label why they differ (:mod:`spare_mc.plots.sweep_figures` says how each figure keeps that rule).

The modules, by job: :mod:`~spare_mc.plots.sweep_figures` (the figures of sweep datasets),
:mod:`~spare_mc.plots.sweep_data` (their datasets: checks, the roles of the dimensions, the series of a panel),
:mod:`~spare_mc.plots.studies` (the figures of the studies), :mod:`~spare_mc.plots.files` (writing figures).
"""

from .files import FIGURE_MARK
from .studies import (figure_domains, figure_dynamic, figure_phase, figure_repair, figure_sensitivity,
                      save_dynamic_figure, save_repair_figure, save_sensitivity_figure)
from .sweep_data import axes_roles
from .sweep_figures import (MAX_PANELS, figure_masked, figure_overhead, figure_sweep, figure_ttt, plot_masked,
                            plot_optimal_r, plot_overhead, plot_ttt, save_figures)

__all__ = ["axes_roles", "figure_domains", "figure_dynamic", "FIGURE_MARK", "figure_masked", "figure_overhead",
           "figure_phase", "figure_repair", "figure_sensitivity", "figure_sweep", "figure_ttt",
           "MAX_PANELS", "plot_masked", "plot_optimal_r", "plot_overhead", "plot_ttt",
           "save_dynamic_figure", "save_figures", "save_repair_figure", "save_sensitivity_figure"]
