"""Figures from sweep datasets (matplotlib is imported inside the functions only); the figures of the studies:
:mod:`spare_mc.plots.studies`.

Every ``plot_*`` function takes ``ax=None`` (a new figure when omitted) and returns the artists it drew;
``figure_*`` helpers lay several panels out and return the figure; :func:`save_figures` writes every figure the
given datasets allow.

Figures and tables agree, or say why not
----------------------------------------
A figure and a table from the same run must show the same numbers, or the figure must label why they differ.
The sweeps of ``spare-mc reproduce`` run every strategy at the checkpoint period of their spec (``T_c = f x T_c*``,
the theory period for ``f = 1``), while its main table (:func:`spare_mc.ttt.optimize.main_table`) runs each strategy at
its best ``(r, T_c)`` over a grid and re-runs that point on fresh seeds; so the time-to-train figure states the
period it was drawn at (title and CKPT-only legend entry), and its "best r" panel is labelled as the argmin over
the sweep at that period (with the range of ``r`` whose 95% CI overlaps the argmin's), not as the optimiser's
choice. Every reference curve names what it is (exact law, bound, the paper's closed form, theory ``J(r)``), and
exact values are drawn only where they hold (uniform failure order: ``failure_model`` uniform, system or
per_gpu).

Which sweep draws how (any dataset ``spare-mc sweep`` writes)
-------------------------------------------------------------
* x axis: ``r`` when it is swept, else the first numeric swept dimension (a dimension with more than one value
  is preferred over a length-1 one); logarithmic, with plain decimal tick labels, when a positive x spans a factor
  of 20 or more. With no numeric dimension at all the x axis is the first categorical one (points with error
  bars).
* lines: one per value of the first categorical swept dimension other than x (``layout``, ``strategy``,
  ``failure_model``, ``age_policy``, ``placement``, ...), each with its 95% confidence band. Time-to-train datasets
  that differ only in ``strategy`` and ``r`` are overlaid in one figure (``ttt.png``); one without the x dimension
  (CKPT-only has no ``r``) is a horizontal band.
* panels: one per combination of the remaining swept dimensions (numeric ones included), at most
  :data:`MAX_PANELS` (time to train: ``MAX_PANELS // 2`` pairs of panels); the figure's title says when panels
  were left out.
* y: the quantity's headline variable: masked failures before the first wipe-out (``wipeout``); the measured
  mean stack number ``S*`` per epoch, ``sum S* / sum T`` over replications, with the ``c(k)`` lower bound
  (``overhead``);
  ``TTT/T0`` (log scale) and availability (``ttt``), plus the best-``r`` panel when ``r`` is the x axis and at most
  one other dimension is swept.

A file that is not a spare-mc sweep dataset raises :class:`spare_mc._lib.validation.UsageValueError` naming the
problem; :func:`save_figures` never returns an empty list.
"""

from __future__ import annotations

import functools
import math
import os
import textwrap
import warnings

import numpy as np

from .._lib.validation import UsageError, UsageValueError
from ..mc.reorder import exact_stack_bound_sum
from ..stats import ratio_estimate
from ..sweep.compare import UNIFORM_ORDER_MODELS
from ..theory.closed_forms import mu_paper, r_star
from ..theory.exact import EXACT_LAYOUTS, exact_wipeout
from ..ttt.optimize import PERIOD_FACTORS, theory_ttt
from ..ttt.config import TimelineConfig, applicable
from .files import as_outdir, check_figure_target, save_png
from .sweep_data import (STRATEGY_STYLE, VALUE_STYLE, as_py, check_dataset, fixed_params, fmt_value, grid_dims,
                         group_datasets, is_numeric, long_name, panel_key, period_text, same_value, short_name,
                         value_label)

__all__ = ["plot_masked", "plot_overhead", "plot_ttt", "plot_optimal_r", "figure_masked", "figure_overhead",
           "figure_ttt", "figure_sweep", "save_figures", "MAX_PANELS"]

#: Most panels one figure draws (time to train: half as many, each a TTT/T0 and an availability panel).
MAX_PANELS = 12

_TITLE = {"wipeout": "Masked failures before the first wipe-out", "overhead": "ReCtlr stack number per epoch",
          "ttt": "Time to train"}
_YLABEL = {"masked": "masked failures before wipe-out (T - 1)",
           "overhead": "mean stack number S per epoch\n(compute per step in units of T_comp)",
           "ttt_over_t0": "time to train / T0", "availability": "availability (uptime / wall clock)"}


def _head_values(sub, x, var):
    """(x values or None, mean, low, high) of ``<var>_mean/_ci_low/_ci_high`` along x (0-d without x)."""
    xs = [as_py(v) for v in sub[x].values] if x is not None and x in sub[f"{var}_mean"].dims else None
    return (xs, np.atleast_1d(sub[f"{var}_mean"].values).astype(float),
            np.atleast_1d(sub[f"{var}_ci_low"].values).astype(float),
            np.atleast_1d(sub[f"{var}_ci_high"].values).astype(float))


def _ratio_values(sub, x, num, den):
    """(x values or None, mean, low, high) of ``sum num / sum den`` over replications, per x."""

    has_x = x is not None and x in sub[num].dims
    xs = [as_py(v) for v in sub[x].values] if has_x else None
    a = sub[num].transpose(x, "rep").values if has_x else sub[num].values[None, :]
    b = sub[den].transpose(x, "rep").values if has_x else sub[den].values[None, :]
    mean, lo, hi = (np.full(a.shape[0], np.nan) for _ in range(3))
    for j in range(a.shape[0]):
        ok = np.isfinite(a[j]) & np.isfinite(b[j])
        if ok.sum() >= 2 and b[j][ok].sum() > 0:
            est = ratio_estimate(a[j][ok], b[j][ok])
            mean[j], (lo[j], hi[j]) = est.mean, est.ci
    return xs, mean, lo, hi


@functools.lru_cache(maxsize=512)
def _exact_masked(layout, n, r):

    return exact_wipeout(layout, n, r).masked_mean


@functools.lru_cache(maxsize=512)
def _exact_bound(layout, n, r):

    return exact_stack_bound_sum(layout, n, r).c_mean


def _reference(fn, params):
    """An exact value at a grid point where it holds (uniform failure order, a layout with an exact law)."""

    if params.get("failure_model", "uniform") not in UNIFORM_ORDER_MODELS or params.get("layout") not in EXACT_LAYOUTS:
        return math.nan
    try:
        return fn(str(params["layout"]), int(params["n_groups"]), int(params["r"]))
    except (UsageError, KeyError, TypeError, ValueError):
        return math.nan


# ------------------------------------------------------------------------------------------------ drawing
def _ax(ax):
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(5, 3.6), layout="constrained")
    return ax


def _plain_log_formatter():
    """A log-axis tick formatter printing plain decimals ("3", "20", "0.5"), not math text ("3×10^0")."""
    from matplotlib.ticker import LogFormatter

    class PlainLogFormatter(LogFormatter):
        def _num_to_string(self, x, vmin, vmax):
            text = f"{x:.6g}"
            return np.format_float_positional(float(text), trim="-") if "e" in text else text

    return PlainLogFormatter


def _set_log(ax, which):
    """Log scale on one axis of ``ax`` with plain decimal tick labels."""
    fmt = _plain_log_formatter()
    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_yscale if which == "y" else ax.set_xscale)("log")
    axis.set_major_formatter(fmt(labelOnlyBase=False))
    axis.set_minor_formatter(fmt(labelOnlyBase=False, minor_thresholds=(2, 0.5)))


def _band(ax, x, mean, low, high, color, label, marker="o", ls="-"):
    line, = ax.plot(x, mean, marker=marker, ms=4, color=color, ls=ls, label=label)
    band = ax.fill_between(x, low, high, color=color, alpha=0.25, lw=0)
    return [line, band]


def _draw(ax, g, s, xs, mean, lo, hi, label, offset=0.0):
    """A series along x (band; points with error bars for a categorical or single x), or a horizontal band."""
    if xs is None:
        line = ax.axhline(mean[0], color=s.color, ls=s.ls, lw=1.2, label=label)
        if not np.isfinite([lo[0], hi[0]]).all():
            return [line]
        return [ax.axhspan(lo[0], hi[0], color=s.color, alpha=0.25, lw=0), line]
    pos = g.xpos(xs)
    if g.x_numeric and len(pos) > 1:
        return _band(ax, pos, mean, lo, hi, s.color, label, ls=s.ls)
    err = np.vstack([mean - lo, hi - mean])
    cont = ax.errorbar(pos + offset, mean, yerr=np.where(np.isfinite(err), err, 0), fmt="o", ms=5, capsize=3,
                       color=s.color, ls="none", label=label)
    return [cont]


def _offset(g, k, n):
    return 0.0 if g.x_numeric or n < 2 else 0.25 * (k - (n - 1) / 2) / max(n - 1, 1)


def _finish_axes(ax, g, key, what, title_extra=""):
    if g.x is None:
        ax.set_xticks([0], ["(no swept parameter)"])
    elif not g.x_numeric:
        vals = g.values[g.x]
        ax.set_xticks(range(len(vals)), [value_label(g.x, v) if g.x in VALUE_STYLE else fmt_value(v) for v in vals])
        ax.set_xlim(-0.5, len(vals) - 0.5)
    else:
        vals = np.asarray(g.values[g.x], dtype=float)
        if vals.min() > 0 and vals.max() / vals.min() >= 20:
            _set_log(ax, "x")
        elif np.all(vals == np.round(vals)):
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
    title = g.panel_title(key) or ", ".join(g.names)
    ax.set(xlabel=long_name(g.x) if g.x else "", ylabel=_YLABEL[what], title=title + title_extra)
    if ax.get_legend_handles_labels()[1]:
        ax.legend(fontsize=7)


def _masked_panel(g, key, ax):

    artists = []
    series = g.series(key)
    for k, s in enumerate(series):
        xs, mean, lo, hi = _head_values(s.sub, g.x, "masked")
        off = _offset(g, k, len(series))
        artists += _draw(ax, g, s, xs, mean, lo, hi, f"{s.label or 'Monte Carlo'} (MC)", off)
        pts = [{**s.params, g.x: v} for v in xs] if xs is not None else [s.params]
        ex = np.array([_reference(_exact_masked, p) for p in pts])
        if np.isfinite(ex).any():
            pos = g.xpos(xs) + off if xs is not None else np.zeros(1)
            artists += ax.plot(pos, ex, "x", color=s.color, ms=7, mew=1.5,
                               label=f"{s.label} (exact)" if s.label else "exact (uniform order)")
    # the paper's closed form: one curve per panel, where failures come in uniform order
    uni = [s for s in series if s.params.get("failure_model", "uniform") in UNIFORM_ORDER_MODELS]
    if uni and g.x is not None and g.x_numeric:
        xs = g.values[g.x]
        try:
            pts = [{**uni[0].params, g.x: v} for v in xs]
            mu = [mu_paper(int(p["n_groups"]), int(p["r"])) - 1 for p in pts]
        except (UsageError, KeyError, TypeError, ValueError):
            mu = None
        if mu is not None:
            artists += ax.plot(g.xpos(xs), mu, "k--", lw=1, label="paper mu - 1 (uniform order)")
    _finish_axes(ax, g, key, "masked")
    return artists


def _overhead_panel(g, key, ax):
    artists = []
    series = g.series(key)
    for k, s in enumerate(series):
        name = f"{s.label}: " if s.label else ""
        off = _offset(g, k, len(series))
        xs, mean, lo, hi = _ratio_values(s.sub, g.x, "sum_s", "T")
        artists += _draw(ax, g, s, xs, mean, lo, hi, f"{name}measured S*", off)
        xs, cm, _, _ = _ratio_values(s.sub, g.x, "sum_c", "T")
        pos = g.xpos(xs) + off if xs is not None else None
        if pos is None:
            artists.append(ax.axhline(cm[0], color=s.color, ls=":", label=f"{name}c(k) bound (MC)"))
        else:
            artists += ax.plot(pos, cm, ":" if len(pos) > 1 else "_", ms=10, color=s.color,
                               label=f"{name}c(k) bound (MC)")
        pts = [{**s.params, g.x: v} for v in xs] if xs is not None else [s.params]
        ex = np.array([_reference(_exact_bound, p) for p in pts])
        if np.isfinite(ex).any():
            artists += ax.plot(pos if pos is not None else np.zeros(1), ex, "x", color=s.color, ms=6,
                               label=f"{name}exact c(k) bound")
    _finish_axes(ax, g, key, "overhead")
    return artists


def _ttt_panel(g, key, what, ax):
    artists = []
    series = g.series(key)
    capped_label, banded, empty = True, False, []
    for k, s in enumerate(series):
        xs, mean, lo, hi = _head_values(s.sub, g.x, what)
        fin = np.atleast_1d(s.sub["finished_mean"].values) if "finished_mean" in s.sub else None
        # no finished run there (every run entered at the cap, or a NaN that draws nothing): say so
        none = ~np.isfinite(mean) if fin is None or fin.shape != mean.shape else ~np.isfinite(mean) | (fin == 0)
        if none.any():
            where = "" if xs is None else f" at {short_name(g.x)} = " + ", ".join(
                fmt_value(v) for v, m in zip(xs, none) if m)
            cap = s.params.get("max_wall_factor")
            empty.append(f"{s.label or 'all'}: no finished run{where} (every run hit the wall-clock cap"
                         f"{f' {fmt_value(cap)} × T0' if cap is not None else ''})")
        label = s.label
        if xs is None:  # e.g. CKPT-only without r: a band at its value, with the period it ran at
            at = f" ({short_name(g.x)} = {fmt_value(s.params[g.x])})" if s.params.get(g.x) is not None else ""
            label = f"{label}{at} at {period_text(s.params)}: {mean[0]:.3g}"
            banded = True
        off = _offset(g, k, len(series))
        artists += _draw(ax, g, s, xs, mean, lo, hi, label, off)
        if fin is not None and xs is not None:
            bad = fin < 1
            if bad.any():  # a capped run enters the mean at the cap: the mean there is a lower bound
                artists.append(ax.scatter(g.xpos(xs)[bad] + off, mean[bad], s=70, facecolors="none",
                                          edgecolors="r", zorder=5,
                                          label="runs capped (counted at the cap: the mean is a lower bound)"
                                          if capped_label else None))
                capped_label = False
    if empty:
        ax.text(0.02, 0.02, "\n".join(empty), transform=ax.transAxes, fontsize=7, color="r", va="bottom", wrap=True)
    if what == "ttt_over_t0":
        data = [a.get_ydata() for a in artists if hasattr(a, "get_ydata")]
        vals = np.concatenate([np.asarray(d, dtype=float) for d in data]) if data else np.array([])
        if (vals[np.isfinite(vals)] > 0).any():
            _set_log(ax, "y")
            if banded:  # room for the legend above the band
                lo, hi = ax.get_ylim()
                ax.set_ylim(lo, hi * 3)
    _finish_axes(ax, g, key, what)
    return artists


def _optimal_r_panel(g, ax):
    """Best r per panel: argmin over the sweep (with the r whose CI overlaps it), theory J(r), the paper's r*."""

    _TC_FIELDS = set(TimelineConfig.__dataclass_fields__)
    pdim = g.panels[0] if g.panels else "n_groups"
    numeric = pdim not in g.panels or is_numeric(g.values[pdim])
    rows = {}  # (dataset, line value) -> list of (h, params, argmin r, overlap r's, theory r)
    for key in g.panel_keys():
        for s in g.series(key):
            if "r" not in s.sub["ttt_over_t0_mean"].dims:
                continue
            rs = [int(v) for v in s.sub["r"].values]
            m = s.sub["ttt_over_t0_mean"].values.astype(float)
            if "finished_mean" in s.sub and s.sub["finished_mean"].shape == m.shape:
                m = np.where(s.sub["finished_mean"].values == 0, np.nan, m)  # every run capped: no value to rank
            lo = s.sub["ttt_over_t0_ci_low"].values.astype(float)
            hi = s.sub["ttt_over_t0_ci_high"].values.astype(float)
            if not np.isfinite(m).any():
                continue
            j = int(np.nanargmin(m))
            near = [rs[k] for k in range(len(rs)) if k == j or (np.isfinite(lo[k] + hi[k] + lo[j] + hi[j])
                                                                  and lo[k] <= hi[j] and hi[k] >= lo[j])]
            theo = None
            try:  # the series' own configuration, as the sweep ran it (failure model aside: the theory's is m)
                kw = applicable({n: v for n, v in s.params.items() if n in _TC_FIELDS and v is not None
                                 and n not in ("r", "failures", "topology")}, str(s.params.get("strategy")))
                vals = [theory_ttt(TimelineConfig(**kw, r=k)).ttt_over_t0 for k in rs]
                theo = rs[int(np.argmin(vals))]
            except (UsageError, KeyError, TypeError, ValueError):
                pass
            h = s.params.get(pdim)
            rows.setdefault((s.index, s.params.get(g.line) if g.line else None), []).append(
                (h, s, rs[j], near, theo))
    artists = []
    idents = list(rows)
    if not idents:
        ax.text(0.5, 0.5, "no finished runs to compare", transform=ax.transAxes, ha="center", color="r")
    seen = [as_py(h) for v in rows.values() for h, *_ in v]
    if pdim in g.panels:  # the panel dimension's own order
        hs_all = [h for h in g.values[pdim] if any(same_value(h, w) for w in seen)]
    else:
        hs_all = sorted(set(seen))
    span = 1.0  # of the horizontal axis, for the small offsets that keep strategies' bars apart
    if numeric and len(hs_all) > 1:
        span = float(max(hs_all) - min(hs_all))
    elif numeric and hs_all and hs_all[0]:
        span = abs(float(hs_all[0]))
    drawn = set()
    for k, ident in enumerate(idents):
        pts = rows[ident]
        s0 = pts[0][1]
        hpos = np.array([float(h) if numeric else next(j for j, w in enumerate(hs_all) if same_value(w, h))
                         for h, *_ in pts])
        off = 0.015 * span * (k - (len(idents) - 1) / 2)
        at = period_text(s0.params, short=True)
        artists += ax.plot(hpos + off, [p[2] for p in pts], "o-", color=s0.color,
                           label=f"{s0.label}: argmin over the sweep at {at}")
        artists.append(ax.vlines(hpos + off, [min(p[3]) - 0.15 for p in pts], [max(p[3]) + 0.15 for p in pts],
                                 color=s0.color, lw=6, alpha=0.3,
                                 label=f"{s0.label}: r whose 95% CI overlaps the argmin's"))
        theo = tuple((float(hp), p[4]) for hp, p in zip(hpos, pts) if p[4] is not None)
        strategy = str(s0.params.get("strategy"))
        if theo and (strategy, theo) not in drawn:  # theory does not see the failure model: draw it once
            drawn.add((strategy, theo))
            artists += ax.plot([t[0] for t in theo], [t[1] for t in theo], "s--", color=s0.color, mfc="none",
                               label=f"{STRATEGY_STYLE.get(strategy, (None, strategy))[1]}: theory J(r) (at T_c*)")
        if strategy == "spare" and "r*" not in drawn:
            try:
                artists += ax.plot(hpos, [r_star(int(p[1].params["n_groups"])) for p in pts], "k^:",
                                   label="paper r* = floor(log2 N + 0.833)")
                drawn.add("r*")
            except (UsageError, KeyError, TypeError, ValueError):
                pass
    from matplotlib.ticker import MaxNLocator

    if not numeric:
        ax.set_xticks(range(len(hs_all)), [fmt_value(h) for h in hs_all])
    elif len(hs_all) == 1:
        ax.set_xticks([float(hs_all[0])], [fmt_value(hs_all[0])])
        ax.set_xlim(float(hs_all[0]) - 0.1 * span, float(hs_all[0]) + 0.1 * span)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(xlabel=long_name(pdim), ylabel="best redundancy r",
           title="best r vs N: argmin over the sweep\n(the main table's r is the optimiser's over r and T_c)")
    ax.title.set_fontsize(9)
    if ax.get_legend_handles_labels()[1]:
        ax.legend(fontsize=6.5)
    return artists


def plot_masked(ds, panel=None, ax=None):
    """Masked failures ``T - 1`` along x at one panel of a wipe-out sweep.

    Monte Carlo mean with its 95% CI band per line (layout, ...), the exact value (crosses) where one exists
    (uniform failure order, layouts cyclic / random / block) and the paper's ``mu - 1`` (dashed).

    Parameters
    ----------
    ds : xarray.Dataset
        A wipe-out sweep.
    panel : dict or number, optional
        Values of the panel dimensions (a number: ``{"n_groups": number}``); may be omitted with one panel.
    ax : matplotlib.axes.Axes, optional
        Default: a new figure.

    Returns
    -------
    list
        The artists drawn.
    """
    g = group_datasets(ds, "wipeout")
    return _masked_panel(g, panel_key(g, panel), _ax(ax))


def plot_overhead(ds, panel=None, ax=None):
    """Mean stack number per epoch along x at one panel of an overhead sweep.

    The measured ``S*`` (``sum S* / sum T``, solid, 95% CI band), the Monte Carlo ``c(k)`` lower bound (dotted)
    and the exact bound (crosses, uniform failure order and a layout with an exact law), per line.

    Parameters
    ----------
    ds : xarray.Dataset
        An overhead sweep.
    panel : dict or number, optional
        Values of the panel dimensions (a number: ``{"n_groups": number}``); may be omitted with one panel.
    ax : matplotlib.axes.Axes, optional
        Default: a new figure.

    Returns
    -------
    list
        The artists drawn.
    """
    g = group_datasets(ds, "overhead")
    return _overhead_panel(g, panel_key(g, panel), _ax(ax))


def plot_ttt(datasets, panel=None, what="ttt_over_t0", ax=None):
    """``TTT/T0`` (log scale) or availability along x at one panel, for time-to-train datasets drawn together.

    A dataset without the x dimension (CKPT-only has no ``r``) is a horizontal band, labelled with the checkpoint
    period it ran at.

    Parameters
    ----------
    datasets : xarray.Dataset, list of Dataset or dict of name -> Dataset
        Time-to-train sweeps (one per strategy, say).
    panel : dict or number, optional
        Values of the panel dimensions (a number: ``{"n_groups": number}``); may be omitted with one panel.
    what : {"ttt_over_t0", "availability"}
    ax : matplotlib.axes.Axes, optional
        Default: a new figure.

    Returns
    -------
    list
        The artists drawn.
    """
    if what not in ("ttt_over_t0", "availability"):
        raise UsageValueError(f"`what` must be 'ttt_over_t0' or 'availability', got {what!r}")
    g = group_datasets(datasets, "ttt")
    return _ttt_panel(g, panel_key(g, panel), what, _ax(ax))


def plot_optimal_r(datasets, ax=None):
    """Best ``r`` per ``N`` (or per the one other swept dimension) of time-to-train sweeps over ``r``.

    "argmin over the sweep": the ``r`` with the least mean ``TTT/T0`` at the sweep's checkpoint period (``T_c*``
    unless the spec sets another), with a vertical bar over the ``r`` whose 95% CI overlaps the argmin's (those
    the sweep cannot tell apart); next to it the theory optimum (``J(r)`` minimised) and the paper's
    ``r* = floor(log2 N + 0.833)``. ``spare-mc reproduce``'s main table picks ``r`` by the optimiser over
    ``(r, T_c)`` instead, so the two may differ.

    Parameters
    ----------
    datasets : xarray.Dataset, list of Dataset or dict of name -> Dataset
        Time-to-train sweeps with ``r`` as the x axis.
    ax : matplotlib.axes.Axes, optional
        Default: a new figure.

    Returns
    -------
    list
        The artists drawn.

    Raises
    ------
    UsageValueError
        When ``r`` is not the x axis of the datasets or more than one other dimension is swept.
    """
    g = group_datasets(datasets, "ttt")
    if g.x != "r" or len(g.panels) > 1:
        raise UsageValueError(f"the best-r panel needs `r` on the x axis and at most one other swept dimension; "
                              f"got x={g.x!r}, panels={g.panels}")
    return _optimal_r_panel(g, _ax(ax))


def _suptitle(fig, g, notes):
    head = f"{_TITLE[g.quantity]}: {', '.join(g.names)}"
    reps = g.reps()
    if reps:
        head += f" ({reps} replications per point, 95% CI)"
    fixed = g.common_fixed(skip=("strategy", "r") if len(g.datasets) > 1 else ())

    width = max(40, int(fig.get_figwidth() * 15))
    lines = [head] + ([f"fixed: {fixed}"] if fixed else []) + notes
    fig.suptitle("\n".join(textwrap.fill(t, width) for t in lines), fontsize=9)


def _cap(g):
    keys = g.panel_keys()
    cap = MAX_PANELS // 2 if g.quantity == "ttt" else MAX_PANELS
    notes = []
    if len(keys) > cap:
        msg = (f"showing the first {cap} of {len(keys)} panels ({', '.join(g.panels)}); plot a selection "
               f"(ds.sel(...)) for the others")
        warnings.warn(f"{', '.join(g.names)}: {msg}", UserWarning, stacklevel=3)
        notes.append(msg)
        keys = keys[:cap]
    return keys, notes


def _panel_grid(n, extra=0, rows_per=1, width=4.8, height=3.7):
    import matplotlib.pyplot as plt

    ncols = min(n, 4 if rows_per == 1 else 3)
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows * rows_per, ncols + extra, figsize=(width * (ncols + extra),
                                                                      height * nrows * rows_per + 0.6),
                             squeeze=False, layout="constrained")
    return fig, axes, ncols


def figure_sweep(datasets):
    """Every panel of sweep datasets of one quantity (see the module docstring for the layout rule).

    Parameters
    ----------
    datasets : xarray.Dataset, list of Dataset or dict of name -> Dataset
        One wipe-out or overhead sweep, or time-to-train sweeps to overlay.

    Returns
    -------
    matplotlib.figure.Figure
    """
    g = group_datasets(datasets)
    keys, notes = _cap(g)
    if g.quantity != "ttt":
        fig, axes, ncols = _panel_grid(len(keys))
        for j, key in enumerate(keys):
            ax = axes[j // ncols, j % ncols]
            (_masked_panel if g.quantity == "wipeout" else _overhead_panel)(g, key, ax)
        for j in range(len(keys), axes.size):
            axes.flat[j].axis("off")
        _suptitle(fig, g, notes)
        return fig
    best_r = g.x == "r" and len(g.panels) <= 1
    fig, axes, ncols = _panel_grid(len(keys), extra=int(best_r), rows_per=2)
    for j, key in enumerate(keys):
        row, col = 2 * (j // ncols), j % ncols
        _ttt_panel(g, key, "ttt_over_t0", axes[row, col])
        _ttt_panel(g, key, "availability", axes[row + 1, col])
    used = {(2 * (j // ncols) + i, j % ncols) for j in range(len(keys)) for i in (0, 1)}
    if best_r:
        best_ax = axes[0, -1]
        _optimal_r_panel(g, best_ax)
        used.add((0, axes.shape[1] - 1))
        if best_ax.get_legend() is not None:  # the legend goes into the empty axes below, off the data
            best_ax.get_legend().remove()
            axes[1, -1].legend(*best_ax.get_legend_handles_labels(), loc="upper left", fontsize=8,
                               title="best r vs N (panel above)", title_fontsize=8)
    for (i, j), ax in np.ndenumerate(axes):
        if (i, j) not in used:
            ax.axis("off")
    periods = {period_text(s.params) for k in keys for s in g.series(k)}
    if "ckpt_period_factor" in g.values or "ckpt_period_s" in g.values:
        notes.append("checkpoint period as swept (T_c = f × T_c*, T_c* the theory period)")
    elif len(periods) == 1:

        strategies = {str(s.params.get("strategy")) for k in keys for s in g.series(k)}
        who = "every strategy at" if len(strategies) > 1 else "at"
        factors = ", ".join(f"{f:g}" for f in PERIOD_FACTORS)
        notes.append(f"{who} {periods.pop()}; the main table of `spare-mc reproduce` runs each strategy at its "
                     f"best r and T_c over T_c = {{{factors}}} × T_c*, so its TTT/T0 is usually lower and its best r "
                     f"may differ")
    _suptitle(fig, g, notes)
    return fig


def figure_masked(ds):
    """:func:`plot_masked` for every panel of a wipe-out sweep (see :func:`figure_sweep`)."""
    group_datasets(ds, "wipeout")
    return figure_sweep(ds)


def figure_overhead(ds):
    """:func:`plot_overhead` for every panel of an overhead sweep (see :func:`figure_sweep`)."""
    group_datasets(ds, "overhead")
    return figure_sweep(ds)


def figure_ttt(datasets):
    """TTT/T0 (top) and availability (bottom) per panel of time-to-train sweeps, and the best r per N."""
    group_datasets(datasets, "ttt")
    return figure_sweep(datasets)


def _ttt_signature(ds):
    """Time-to-train datasets with equal signatures differ only in strategy and r: they share a figure."""
    fixed = {k: v for k, v in fixed_params(ds).items() if k not in ("strategy", "r")}
    dims = tuple(d for d in grid_dims(ds) if d not in ("strategy", "r"))
    return dims, tuple(sorted((k, repr(as_py(v))) for k, v in fixed.items()))


def save_figures(datasets: dict, outdir, *, force: bool = False) -> list:
    """Write every figure of the given datasets as PNG into ``outdir``.

    Each wipe-out or overhead sweep gets ``<name>.png``; time-to-train sweeps that differ only in strategy and
    ``r`` share one figure (``ttt.png``, or ``<first name>.png`` when there are several such groups; a group of one
    dataset is named after it). Every target is checked before anything is drawn: two figures may not share a
    file, and a file that is not a figure spare-mc wrote (PNG text "Software: spare-mc ...") is not replaced unless
    ``force``. Figures are written atomically.

    Parameters
    ----------
    datasets : dict
        ``{name: dataset}`` (the name is usually the file's stem).
    outdir : path
        Output directory (created).

    Returns
    -------
    list of str
        The paths written (never empty).

    Raises
    ------
    UsageValueError
        No datasets, or one that is not a spare-mc sweep dataset (the message names it and the problem).
    """

    import matplotlib

    matplotlib.use("Agg", force=False)

    if not isinstance(datasets, dict) or not datasets:
        raise UsageValueError(f"`datasets` must be a non-empty dict of name -> sweep dataset, got {datasets!r}")
    outdir = as_outdir(outdir)
    for name in datasets:  # a name is a file name in outdir, never a path out of it
        if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or os.sep in name:
            raise UsageValueError(f"a dataset's name is its figure's file name in `outdir`: it must be a plain name, "
                                  f"got {name!r}")
    quantities = {name: check_dataset(name, ds) for name, ds in datasets.items()}  # every file before any work
    jobs = []
    ttt_groups = {}
    for name, ds in datasets.items():
        if quantities[name] == "ttt":
            ttt_groups.setdefault(_ttt_signature(ds), []).append(name)
        else:
            jobs.append((str(name), {name: ds}))
    for names in ttt_groups.values():
        fname = str(names[0]) if len(names) == 1 else "ttt" if len(ttt_groups) == 1 else str(names[0])
        jobs.append((fname, {n: datasets[n] for n in names}))
    targets = [os.path.join(outdir, f"{fname}.png") for fname, _ in jobs]
    dup = sorted({t for t in targets if targets.count(t) > 1})
    if dup:
        raise UsageValueError(f"two figures would be written to {dup[0]}: give the datasets different names")
    for path in targets:  # before drawing anything
        check_figure_target(path, force)
    os.makedirs(outdir, exist_ok=True)

    paths = []
    for (fname, group), path in zip(jobs, targets):
        save_png(figure_sweep(group), path)
        paths.append(path)
    return paths
