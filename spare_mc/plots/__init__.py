"""Figures of sweep datasets and of the studies (matplotlib is imported inside the functions only).

Figures and tables agree, or say why not. A figure and a table from the same run must show the same numbers, or the
figure must label why they differ (:mod:`spare_mc.plots.figures` says how each figure keeps that rule).
Imports ``sweep`` and below.
"""

from .figures import (axes_roles, figure_domains, figure_dynamic, FIGURE_MARK, figure_masked, figure_overhead,
                      figure_phase, figure_repair, figure_sensitivity, figure_sweep, figure_ttt, MAX_PANELS,
                      plot_masked, plot_optimal_r, plot_overhead, plot_ttt, save_dynamic_figure, save_figures,
                      save_repair_figure, save_sensitivity_figure)

__all__ = ["axes_roles", "figure_domains", "figure_dynamic", "FIGURE_MARK", "figure_masked", "figure_overhead",
           "figure_phase", "figure_repair", "figure_sensitivity", "figure_sweep", "figure_ttt",
           "MAX_PANELS", "plot_masked", "plot_optimal_r", "plot_overhead", "plot_ttt",
           "save_dynamic_figure", "save_figures", "save_repair_figure", "save_sensitivity_figure"]
