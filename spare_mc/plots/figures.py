"""Figures from sweep datasets (matplotlib is imported inside the functions only).

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
import itertools
import math
import os
import textwrap
import warnings

import numpy as np
from PIL import Image

from .._lib.validation import UsageError, UsageValueError
from .._lib.version import __version__
from ..mc.reorder import exact_stack_bound_sum
from ..stats import ratio_estimate
from ..sweep.runner import _UNIFORM_ORDER_MODELS as _UNIFORM_ORDER
from ..sweep.runner import OUTPUTS, PARAMETERS, SweepSpec
from ..sweep.storage import _atomic_write, check_regular_target
from ..theory.closed_forms import mu_paper, r_star
from ..theory.exact import EXACT_LAYOUTS, exact_wipeout
from ..ttt.optimize import PERIOD_FACTORS, theory_ttt
from ..ttt.config import TimelineConfig, applicable

__all__ = ["plot_masked", "plot_overhead", "plot_ttt", "plot_optimal_r", "figure_masked", "figure_overhead",
           "figure_ttt", "figure_sweep", "axes_roles", "save_figures", "MAX_PANELS"]

#: Most panels one figure draws (time to train: half as many, each a TTT/T0 and an availability panel).
MAX_PANELS = 12

_LAYOUT_STYLE = {"cyclic": ("C0", "unit stride"), "sidon": ("C1", "Sidon offsets"), "random": ("C2", "random"),
                 "block": ("C3", "block (Rep)")}
_STRATEGY_STYLE = {"ckpt": ("C3", "CKPT-only"), "rep": ("C1", "Rep+CKPT"), "spare": ("C0", "SPARe+CKPT")}
_VALUE_STYLE = {"layout": _LAYOUT_STYLE, "strategy": _STRATEGY_STYLE}

#: dimension -> (short name for titles, axis label)
_DIM_TEXT = {
    "n_groups": ("N", "groups N"), "r": ("r", "redundancy r"), "layout": ("layout", "layout"),
    "strategy": ("strategy", "strategy"), "mtbf_s": ("m", "full-system MTBF m (s)"),
    "shape": ("shape", "Weibull shape"), "failure_model": ("failures", "failure model"),
    "age_policy": ("ages", "GPU ages at a restart"), "domain_mtbf_s": ("domain MTBF", "failure-domain MTBF (s)"),
    "n_gpus": ("GPUs", "GPUs in the system"), "placement": ("placement", "group placement"),
    "n_steps": ("steps", "training steps"), "compute_s": ("T_comp", "layer compute time T_comp (s)"),
    "allreduce_s": ("T_a", "all-reduce time T_a (s)"), "live_scaling": ("live scaling", "live scaling"),
    "restart_s": ("T_r", "global restart time T_r (s)"), "save_s": ("T_s", "checkpoint save time T_s (s)"),
    "ckpt_period_s": ("T_c", "checkpoint period T_c (s)"),
    "ckpt_period_factor": ("f", "checkpoint period factor f (T_c = f × T_c*)"),
    "shrink_s": ("shrink", "communicator shrink time (s)"), "rectlr_s": ("ReCtlr", "ReCtlr time (s)"),
    "jitter_sd": ("jitter", "duration jitter sd"), "max_wall_factor": ("cap", "wall-clock cap (× T0)"),
    "repair_s": ("repair", "mean repair time (s)"), "domain_aware": ("domain-aware", "domain-aware placement"),
    "ckpt_policy": ("policy", "checkpoint policy"), "variant": ("variant", "variant"),
}

_TITLE = {"wipeout": "Masked failures before the first wipe-out", "overhead": "ReCtlr stack number per epoch",
          "ttt": "Time to train"}
_YLABEL = {"masked": "masked failures before wipe-out (T - 1)",
           "overhead": "mean stack number S per epoch\n(compute per step in units of T_comp)",
           "ttt_over_t0": "time to train / T0", "availability": "availability (uptime / wall clock)"}
#: Failure models under which groups fail in a uniformly random order (where the exact laws hold).


# ------------------------------------------------------------------------------------------------ datasets
def _where(name, ds):
    src = getattr(ds, "encoding", {}).get("source")
    return str(src) if src else str(name)


def _required(quantity):
    if quantity == "wipeout":
        return ["masked_mean", "masked_ci_low", "masked_ci_high"]
    if quantity == "overhead":
        return ["sum_s", "sum_c", "T"]
    return [f"{v}_{s}" for v in ("ttt_over_t0", "availability") for s in ("mean", "ci_low", "ci_high")]


def _grid_dims(ds):
    """Swept dimensions of a checked dataset, in the spec's order."""
    head = _required(ds.attrs["quantity"])[0]
    return [d for d in ds[head].dims if d != "rep"]


def _check_dataset(name, ds):
    """Raise :class:`UsageValueError` unless ``ds`` is a dataset written by ``spare-mc sweep``."""

    where = _where(name, ds)
    head = f"not a spare-mc sweep dataset: {where}"
    if not hasattr(ds, "attrs") or not hasattr(ds, "data_vars"):
        raise UsageValueError(f"{head}: expected an xarray Dataset, got {type(ds).__name__}")
    q = ds.attrs.get("quantity")
    if q is None:
        raise UsageValueError(f"{head}: it has no `quantity` attribute (variables: {sorted(map(str, ds.data_vars))})")
    if q not in OUTPUTS:
        raise UsageValueError(f"{head}: unknown quantity {q!r}, expected one of {sorted(OUTPUTS)}")
    need = _required(q)
    missing = [v for v in need if v not in ds.data_vars]
    if missing:
        raise UsageValueError(f"{head}: quantity {q!r} but the variables {missing} are missing")
    dims = [d for d in ds[need[0]].dims if d != "rep"]
    for v in need:
        extra = set(ds[v].dims) - set(dims) - {"rep"}
        if extra or (q == "overhead" and "rep" not in ds[v].dims):
            raise UsageValueError(f"{head}: variable {v!r} has dimensions {ds[v].dims}, expected {dims} "
                                  f"{'and rep' if q == 'overhead' else ''}".rstrip())
    for d in dims:
        if d not in ds.coords:
            raise UsageValueError(f"{head}: dimension {d!r} has no coordinate values")
        if ds.sizes[d] == 0:
            raise UsageValueError(f"{head}: dimension {d!r} is empty")
    if q == "overhead" and ds.sizes["rep"] < 2:
        raise UsageValueError(f"{head}: an overhead sweep needs at least 2 replications for a CI, got "
                              f"{ds.sizes['rep']}")
    return q


def _py(v):
    return v.item() if hasattr(v, "item") else v


def _stored_spec(ds):
    """The sweep spec stored with a dataset, or None (none stored, or one that no longer parses)."""

    spec = ds.attrs.get("spec")
    if spec:
        try:
            return SweepSpec.from_toml(str(spec))
        except UsageError:
            pass
    return None


def _variants(ds) -> dict:
    """The sweep's ``[variants]`` tables (name -> parameters) from the stored spec; empty without one."""
    spec = _stored_spec(ds)
    return {} if spec is None else {k: dict(v) for k, v in spec.variants.items()}


def _fixed(ds):
    """The sweep's fixed parameters (from the stored spec; the scalar attributes as a fallback)."""

    spec = _stored_spec(ds)
    if spec is not None:
        return dict(spec.fixed)
    return {k: _py(ds.attrs[k]) for k in PARAMETERS[ds.attrs["quantity"]] if k in ds.attrs}


def _is_numeric(values):
    return len(values) > 0 and all(isinstance(v, (int, float, np.integer, np.floating))
                                   and not isinstance(v, (bool, np.bool_)) for v in values)


def _same(a, b):
    if _is_numeric([a]) and _is_numeric([b]):
        return float(a) == float(b)
    return a == b


def _fmt(v):
    v = _py(v)
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _short(dim):
    return _DIM_TEXT.get(dim, (dim, dim))[0]


def _long(dim):
    return _DIM_TEXT.get(dim, (dim, dim))[1]


def _value_label(dim, v):
    style = _VALUE_STYLE.get(dim, {})
    if str(v) in style:
        return style[str(v)][1]
    return _fmt(v) if dim in ("failure_model", "age_policy", "placement") else f"{_short(dim)} = {_fmt(v)}"


def _period_text(params, short=False):
    """The checkpoint period a ttt grid point ran at, as the sweep's spec gives it."""
    if params.get("ckpt_period_s") is not None:
        return f"T_c = {_fmt(float(params['ckpt_period_s']))} s"
    f = float(params.get("ckpt_period_factor", 1.0))
    if short:
        return "T_c*" if f == 1.0 else f"T_c = {f:g} × T_c*"
    return f"T_c = {f:g} × T_c* (theory period)"


def _choose_roles(values):
    """(x, line, panels) from ``{dim: values}`` (see the module docstring)."""
    dims = list(values)
    numeric = [d for d in dims if _is_numeric(values[d])]
    many = [d for d in dims if len(values[d]) > 1]
    for cands in (["r"] if "r" in numeric and "r" in many else [], [d for d in numeric if d in many],
                  ["r"] if "r" in numeric else [], numeric, dims):
        if cands:
            x = cands[0]
            break
    else:
        x = None
    categorical = [d for d in dims if d != x and d not in numeric]
    line = categorical[0] if categorical else None
    panels = [d for d in dims if d not in (x, line)]
    return x, line, panels


class _Series:
    """One line (or band) of a panel: a dataset's slice at one panel key and line value."""

    def __init__(self, index, sub, params, label, color, ls):
        self.index, self.sub, self.params, self.label, self.color, self.ls = index, sub, params, label, color, ls


class _Group:
    """Datasets of one quantity drawn in one figure, with the roles of their dimensions."""

    def __init__(self, items):

        self.names = [str(n) for n, _ in items]
        self.datasets = [d for _, d in items]
        self.quantity = self.datasets[0].attrs["quantity"]
        if any(d.attrs["quantity"] != self.quantity for d in self.datasets):
            raise UsageValueError(f"datasets of different quantities cannot share a figure: {self.names}")
        self.base = [{**PARAMETERS[self.quantity], **_fixed(d)} for d in self.datasets]
        self.variants = [_variants(d) for d in self.datasets]
        values = {}
        for ds in self.datasets:
            for d in _grid_dims(ds):
                vals = values.setdefault(d, [])
                vals += [_py(v) for v in ds[d].values if not any(_same(v, w) for w in vals)]
        for d, vals in values.items():  # a dataset without the dimension sits at its fixed value
            for ds, base in zip(self.datasets, self.base):
                if d not in ds.dims and base.get(d) is not None and not any(_same(base[d], w) for w in vals):
                    vals.append(_py(base[d]))
        values = {d: sorted(v) if _is_numeric(v) else v for d, v in values.items()}
        self.values = values
        self.x, self.line, self.panels = _choose_roles(values)
        self.x_numeric = self.x is not None and _is_numeric(values[self.x])
        self._colors = {}
        used = set()
        for i in range(len(self.datasets)):
            for lv in self._line_values(i):
                key = self._color_key(i, lv)
                if key in self._colors:
                    continue
                dim = self.line if self.line else "strategy"
                color = _VALUE_STYLE.get(dim, {}).get(str(key), (None,))[0]
                if color is None or color in used:
                    free = [f"C{k}" for k in range(10) if f"C{k}" not in used]
                    color = free[0] if free else f"C{len(self._colors) % 10}"
                used.add(color)
                self._colors[key] = color

    # ---------------------------------------------------------------------------------------------- pieces
    def _line_values(self, i):
        ds = self.datasets[i]
        if self.line is None:
            return [None]
        if self.line in ds.dims:
            return [_py(v) for v in ds[self.line].values]
        return [_py(self.base[i].get(self.line))]

    def _color_key(self, i, lv):
        if self.line is not None:
            return lv
        if self.quantity == "ttt":
            return self.base[i].get("strategy")
        return self.names[i] if len(self.datasets) > 1 else None

    def _label(self, i, lv):
        parts = []
        if len(self.datasets) > 1 and self.line != "strategy":
            if self.quantity == "ttt":
                s = str(self.base[i].get("strategy"))
                parts.append(_STRATEGY_STYLE.get(s, (None, s))[1])
            else:
                parts.append(self.names[i])
        if self.line is not None:
            parts.append(_value_label(self.line, lv))
        if not parts and self.quantity == "ttt":
            s = str(self.base[i].get("strategy"))
            parts.append(_STRATEGY_STYLE.get(s, (None, s))[1])
        return ", ".join(parts)

    def panel_keys(self):
        """Every combination of the panel dimensions' values that some dataset has (C order)."""
        keys = list(itertools.product(*(self.values[d] for d in self.panels)))
        return [k for k in keys if self.series(k)]

    def key_dict(self, key):
        return dict(zip(self.panels, key))

    def panel_title(self, key):
        return ", ".join(f"{_short(d)} = {_fmt(v)}" for d, v in zip(self.panels, key))

    def series(self, key):
        """The series of one panel."""
        out = []
        multi = len(self.datasets) > 1 and self.line not in (None, "strategy")
        for i, ds in enumerate(self.datasets):
            base = self.base[i]
            sel, ok = {}, True
            for d, v in zip(self.panels, key):
                if d in ds.dims:
                    match = [w for w in ds[d].values if _same(w, v)]
                    if not match:
                        ok = False
                        break
                    sel[d] = match[0]
                elif not _same(base.get(d), v):
                    ok = False
                    break
            if not ok:
                continue
            for lv in self._line_values(i):
                s = dict(sel)
                if self.line is not None and self.line in ds.dims:
                    s[self.line] = next(w for w in ds[self.line].values if _same(w, lv))
                sub = ds.sel(s) if s else ds
                params = {**base, **self.key_dict(key)}
                if self.line is not None:
                    params[self.line] = lv
                # a variant's parameters override the fixed ones, the grid's override both (as the sweep runs them)
                grid = {d: params[d] for d in ds.dims if d in params and d != "variant"}
                params = {**params, **self.variants[i].get(params.get("variant"), {}), **grid}
                ls = ("-", "--", "-.", ":")[i % 4] if multi else "-"
                out.append(_Series(i, sub, params, self._label(i, lv), self._colors[self._color_key(i, lv)], ls))
        return out

    def xpos(self, xvals):
        """Plot positions of x values (categorical x: the value's index)."""
        if self.x_numeric:
            return np.asarray(xvals, dtype=float)
        allv = self.values[self.x] if self.x is not None else [None]
        return np.array([next(j for j, w in enumerate(allv) if _same(w, v)) for v in xvals], dtype=float)

    def reps(self):
        n = sorted({int(d.sizes["rep"]) for d in self.datasets if "rep" in d.dims})
        return "" if not n else (f"{n[0]}" if len(n) == 1 else f"{n[0]}-{n[-1]}")

    def common_fixed(self, skip=()):
        """Fixed parameters shared by every dataset of the group (as ``k=v`` text)."""

        fx = []
        for ds in self.datasets:
            try:
                fx.append(SweepSpec.from_toml(str(ds.attrs["spec"])).fixed)
            except (KeyError, UsageError):
                fx.append(_fixed(ds))
        keys = [k for k in fx[0] if k not in skip and all(k in f and _same(f[k], fx[0][k]) for f in fx)]
        return ", ".join(f"{k}={_fmt(fx[0][k])}" for k in keys)


# ------------------------------------------------------------------------------------------------ numbers
def _head_values(sub, x, var):
    """(x values or None, mean, low, high) of ``<var>_mean/_ci_low/_ci_high`` along x (0-d without x)."""
    xs = [_py(v) for v in sub[x].values] if x is not None and x in sub[f"{var}_mean"].dims else None
    return (xs, np.atleast_1d(sub[f"{var}_mean"].values).astype(float),
            np.atleast_1d(sub[f"{var}_ci_low"].values).astype(float),
            np.atleast_1d(sub[f"{var}_ci_high"].values).astype(float))


def _ratio_values(sub, x, num, den):
    """(x values or None, mean, low, high) of ``sum num / sum den`` over replications, per x."""

    has_x = x is not None and x in sub[num].dims
    xs = [_py(v) for v in sub[x].values] if has_x else None
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

    if params.get("failure_model", "uniform") not in _UNIFORM_ORDER or params.get("layout") not in EXACT_LAYOUTS:
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
        ax.set_xticks(range(len(vals)), [_value_label(g.x, v) if g.x in _VALUE_STYLE else _fmt(v) for v in vals])
        ax.set_xlim(-0.5, len(vals) - 0.5)
    else:
        vals = np.asarray(g.values[g.x], dtype=float)
        if vals.min() > 0 and vals.max() / vals.min() >= 20:
            _set_log(ax, "x")
        elif np.all(vals == np.round(vals)):
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
    title = g.panel_title(key) or ", ".join(g.names)
    ax.set(xlabel=_long(g.x) if g.x else "", ylabel=_YLABEL[what], title=title + title_extra)
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
    uni = [s for s in series if s.params.get("failure_model", "uniform") in _UNIFORM_ORDER]
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
            where = "" if xs is None else f" at {_short(g.x)} = " + ", ".join(
                _fmt(v) for v, m in zip(xs, none) if m)
            cap = s.params.get("max_wall_factor")
            empty.append(f"{s.label or 'all'}: no finished run{where} (every run hit the wall-clock cap"
                         f"{f' {_fmt(cap)} × T0' if cap is not None else ''})")
        label = s.label
        if xs is None:  # e.g. CKPT-only without r: a band at its value, with the period it ran at
            at = f" ({_short(g.x)} = {_fmt(s.params[g.x])})" if s.params.get(g.x) is not None else ""
            label = f"{label}{at} at {_period_text(s.params)}: {mean[0]:.3g}"
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
    numeric = pdim not in g.panels or _is_numeric(g.values[pdim])
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
    seen = [_py(h) for v in rows.values() for h, *_ in v]
    if pdim in g.panels:  # the panel dimension's own order
        hs_all = [h for h in g.values[pdim] if any(_same(h, w) for w in seen)]
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
        hpos = np.array([float(h) if numeric else next(j for j, w in enumerate(hs_all) if _same(w, h))
                         for h, *_ in pts])
        off = 0.015 * span * (k - (len(idents) - 1) / 2)
        at = _period_text(s0.params, short=True)
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
                               label=f"{_STRATEGY_STYLE.get(strategy, (None, strategy))[1]}: theory J(r) (at T_c*)")
        if strategy == "spare" and "r*" not in drawn:
            try:
                artists += ax.plot(hpos, [r_star(int(p[1].params["n_groups"])) for p in pts], "k^:",
                                   label="paper r* = floor(log2 N + 0.833)")
                drawn.add("r*")
            except (UsageError, KeyError, TypeError, ValueError):
                pass
    from matplotlib.ticker import MaxNLocator

    if not numeric:
        ax.set_xticks(range(len(hs_all)), [_fmt(h) for h in hs_all])
    elif len(hs_all) == 1:
        ax.set_xticks([float(hs_all[0])], [_fmt(hs_all[0])])
        ax.set_xlim(float(hs_all[0]) - 0.1 * span, float(hs_all[0]) + 0.1 * span)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(xlabel=_long(pdim), ylabel="best redundancy r",
           title="best r vs N: argmin over the sweep\n(the main table's r is the optimiser's over r and T_c)")
    ax.title.set_fontsize(9)
    if ax.get_legend_handles_labels()[1]:
        ax.legend(fontsize=6.5)
    return artists


# ------------------------------------------------------------------------------------------------ public
def _as_list(datasets):
    if isinstance(datasets, dict):
        return list(datasets.items())
    if isinstance(datasets, (list, tuple)):
        return [(d.attrs.get("name", f"dataset {i}") if hasattr(d, "attrs") else f"dataset {i}", d)
                for i, d in enumerate(datasets)]
    return [(datasets.attrs.get("name", "dataset") if hasattr(datasets, "attrs") else "dataset", datasets)]


def _group(datasets, quantity=None):
    items = _as_list(datasets)
    if not items:
        raise UsageValueError("no datasets given")
    for name, ds in items:
        q = _check_dataset(name, ds)
        if quantity is not None and q != quantity:
            raise UsageValueError(f"{_where(name, ds)} is a {q!r} sweep, expected {quantity!r}")
    return _Group(items)


def _panel_key(g, panel):
    """The panel key from ``panel``: a dict of panel dimensions, a number (N) or None (the only panel)."""
    keys = g.panel_keys()
    if panel is None:
        if len(keys) != 1:
            raise UsageValueError(f"`panel` must name one of the panels {[g.key_dict(k) for k in keys]}")
        return keys[0]
    if not isinstance(panel, dict):
        panel = {"n_groups": panel}
    found = [k for k in keys if set(panel) <= set(g.panels)
             and all(_same(g.key_dict(k)[n], v) for n, v in panel.items())]
    if len(found) != 1:
        raise UsageValueError(f"`panel` = {panel} must name exactly one of the panels "
                              f"{[g.key_dict(k) for k in keys]}")
    return found[0]


def axes_roles(datasets) -> dict:
    """Which swept dimension each figure element shows (the rule of the module docstring).

    Parameters
    ----------
    datasets : xarray.Dataset, list of Dataset or dict of name -> Dataset
        Sweep datasets of one quantity drawn together.

    Returns
    -------
    dict
        ``x`` (dimension on the x axis or None), ``line`` (categorical dimension with one line per value, or None),
        ``panels`` (dimensions with one panel per combination of values), ``values`` (every dimension's values).
    """
    g = _group(datasets)
    return {"x": g.x, "line": g.line, "panels": list(g.panels), "values": dict(g.values)}


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
    g = _group(ds, "wipeout")
    return _masked_panel(g, _panel_key(g, panel), _ax(ax))


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
    g = _group(ds, "overhead")
    return _overhead_panel(g, _panel_key(g, panel), _ax(ax))


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
    g = _group(datasets, "ttt")
    return _ttt_panel(g, _panel_key(g, panel), what, _ax(ax))


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
    g = _group(datasets, "ttt")
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
    g = _group(datasets)
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
    periods = {_period_text(s.params) for k in keys for s in g.series(k)}
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
    _group(ds, "wipeout")
    return figure_sweep(ds)


def figure_overhead(ds):
    """:func:`plot_overhead` for every panel of an overhead sweep (see :func:`figure_sweep`)."""
    _group(ds, "overhead")
    return figure_sweep(ds)


def figure_ttt(datasets):
    """TTT/T0 (top) and availability (bottom) per panel of time-to-train sweeps, and the best r per N."""
    _group(datasets, "ttt")
    return figure_sweep(datasets)


def _ttt_signature(ds):
    """Time-to-train datasets with equal signatures differ only in strategy and r: they share a figure."""
    fixed = {k: v for k, v in _fixed(ds).items() if k not in ("strategy", "r")}
    dims = tuple(d for d in _grid_dims(ds) if d not in ("strategy", "r"))
    return dims, tuple(sorted((k, repr(_py(v))) for k, v in fixed.items()))


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
    outdir = _outdir_iv(outdir)
    for name in datasets:  # a name is a file name in outdir, never a path out of it
        if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or os.sep in name:
            raise UsageValueError(f"a dataset's name is its figure's file name in `outdir`: it must be a plain name, "
                                  f"got {name!r}")
    quantities = {name: _check_dataset(name, ds) for name, ds in datasets.items()}  # every file before any work
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
        _check_figure_target(path, force)
    os.makedirs(outdir, exist_ok=True)

    paths = []
    for (fname, group), path in zip(jobs, targets):
        _save_png(figure_sweep(group), path)
        paths.append(path)
    return paths


#: Extensions that make an ``outdir`` look like a figure's file name rather than a folder.
_IMAGE_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")


def _outdir_iv(outdir) -> str:
    """The folder the figures go into: a non-empty path that is a folder or does not exist yet, and not a figure's
    file name (each figure is ``<name>.png`` inside it; `--out fig.png` would have made a folder ``fig.png``)."""

    if not isinstance(outdir, (str, os.PathLike)) or isinstance(outdir, bytes) or not os.fspath(outdir):
        raise UsageValueError(f"`outdir` must be a folder path, got {outdir!r}")
    outdir = os.fspath(outdir)
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        raise UsageValueError(f"`outdir` {outdir} is a file, not a folder: the figures go into a folder, each as "
                              f"<name>.png")
    if not os.path.exists(outdir) and outdir.lower().endswith(_IMAGE_SUFFIXES):
        raise UsageValueError(f"`outdir` is the folder the figures go into (each as <name>.png), got {outdir!r}, a "
                              f"figure's file name: give a folder")
    return outdir


def _save_png(fig, path) -> None:
    """Write ``fig`` as a PNG atomically, marked as spare-mc's (PNG text "Software"), and close it."""
    import matplotlib.pyplot as plt


    try:
        _atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png",
                                                    metadata={"Software": f"{FIGURE_MARK} {__version__}"}))
    finally:
        plt.close(fig)


#: The PNG "Software" text of every figure spare-mc writes: what it may overwrite without ``force``.
FIGURE_MARK = "spare-mc"


def _check_figure_target(path, force):
    """Refuse to replace a file that is not a figure spare-mc wrote (unless ``force``), and anything not regular."""


    check_regular_target(path, "figure")
    if force or not os.path.exists(path):
        return
    try:

        with Image.open(path) as im:
            ours = str(im.info.get("Software", "")).startswith(FIGURE_MARK)
    except Exception:  # noqa: BLE001 - not an image at all
        ours = False
    if not ours:
        raise UsageValueError(f"{path} exists and is not a figure written by spare-mc; refusing to replace it (pass "
                              f"force=True, or choose another folder)")


# ------------------------------------------------------------------------------------------- sensitivity study
def figure_sensitivity(result):
    """Tornado figure of a :class:`spare_mc.analyses.sensitivity.SensitivityResult`: one panel per ``N``, one bar per
    variant (the change of SPARe's reduction over Rep, in percentage points, from the baseline), sorted by size,
    with the paired 95% CI as whiskers; bars whose Holm-adjusted p-value is below 0.05 are solid, the others
    hatched. The baseline reduction and both baseline optima are in each panel's title; each label carries the
    variant's optima (Rep r / SPARe r)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    ns = list(result.n_values)
    n_var = len(result.variants)
    if n_var == 0:
        raise UsageValueError("the sensitivity result has no variants to draw")
    fig, axes = plt.subplots(1, len(ns), figsize=(6.4 * len(ns), 0.32 * n_var + 1.8), squeeze=False,
                             sharey=False)
    colors = {"option": "C0", "combination": "C3", "input": "C2"}
    for ax, n in zip(axes[0], ns):
        b = result.baseline[n]
        rows = sorted(((v, rows[n]) for v, rows in result.variants), key=lambda vr: abs(vr[1].delta.mean))
        y = np.arange(len(rows))
        for yi, (v, row) in zip(y, rows):
            lo, hi = row.delta.ci
            sig = row.p_holm is not None and row.p_holm < 0.05
            ax.barh(yi, row.delta.mean, color=colors[v.kind], alpha=0.85 if sig else 0.35,
                    hatch=None if sig else "//", edgecolor=colors[v.kind])
            ax.errorbar(row.delta.mean, yi, xerr=[[row.delta.mean - lo], [hi - row.delta.mean]], fmt="none",
                        ecolor="k", capsize=2, lw=0.8)
        ax.set_yticks(y, [f"{v.name} ({row.rep.r}/{row.spare.r})"
                          + (" *capped" if row.rep.ttt.censored + row.spare.ttt.censored else "")
                          for v, row in rows], fontsize=7)
        ax.axvline(0, color="k", lw=0.8)
        ax.set_xlabel("change of SPARe's TTT reduction over Rep (percentage points)")
        ax.set_title(f"N = {n}: baseline {100 * b.reduction.mean:.1f}% "
                     f"[{100 * b.reduction.ci[0]:.1f}, {100 * b.reduction.ci[1]:.1f}]\n"
                     f"(Rep r = {b.rep.r} / SPARe r = {b.spare.r}; labels: each variant's optima)", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    kinds = {v.kind for v, _ in result.variants}
    handles = [matplotlib.patches.Patch(color=c, label=k) for k, c in colors.items() if k in kinds]
    handles.append(matplotlib.patches.Patch(facecolor="white", edgecolor="grey", hatch="//",
                                            label="not significant (Holm, 5%)"))
    fig.legend(handles=handles, fontsize=7, loc="lower center", ncol=len(handles), frameon=False)
    fig.suptitle("Sensitivity of the headline: paired 95% CIs on common random numbers (*capped: runs hit the "
                 "wall-clock cap, restricted means)", fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def _save_study_figure(draw, result, path, force: bool) -> str:
    """Write ``draw(result)`` as a PNG to ``path`` (atomically; a file spare-mc did not write is kept unless
    ``force``): the figure of a study (sensitivity, dynamic checkpointing, repair). Returns the path."""

    path = os.fspath(path)
    if not path.lower().endswith(".png"):
        raise UsageValueError(f"the figure path must end in .png (the figure is a PNG), got {path!r}")
    _check_figure_target(path, force)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    _save_png(draw(result), path)
    return path


def save_sensitivity_figure(result, path, *, force: bool = False) -> str:
    """Write :func:`figure_sensitivity` as a PNG to ``path`` (:func:`_save_study_figure`)."""
    return _save_study_figure(figure_sensitivity, result, path, force)


def figure_dynamic(result):
    """The change of TTT/T0 from the periodic checkpoint policy to each dynamic one (each at its best period
    factor), in percent with the paired 95% interval: one row of panels per strategy, one column per Weibull shape,
    ``r`` on the x axis, one line per ``N`` and policy (solid: hazard, dashed: young_hazard). Points whose
    Holm-adjusted p-value is below 0.05 are filled."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    rows = result.rows
    if not rows:
        raise UsageValueError("the dynamic-checkpointing result has no rows to draw")
    strategies = [s for s in ("ckpt", "rep", "spare") if any(x.strategy == s for x in rows)]
    shapes = sorted({x.shape for x in rows})
    ns = sorted({x.n_groups for x in rows})
    policies = sorted({x.policy for x in rows})
    fig, axes = plt.subplots(len(strategies), len(shapes), figsize=(4.2 * len(shapes), 3.0 * len(strategies)),
                             squeeze=False, sharex="row")
    names = {"ckpt": "CKPT-only", "rep": "Rep+CKPT", "spare": "SPARe+CKPT"}
    for i, s in enumerate(strategies):
        for j, k in enumerate(shapes):
            ax = axes[i][j]
            ax.axhline(0.0, color="0.5", lw=0.8)
            for a, n in enumerate(ns):
                for b, pol in enumerate(policies):
                    cell = sorted((x for x in rows if x.strategy == s and x.shape == k and x.n_groups == n
                                   and x.policy == pol), key=lambda x: x.r)
                    if not cell:
                        continue
                    rs = np.array([x.r for x in cell], dtype=float) + 0.08 * (a - (len(ns) - 1) / 2) + 0.03 * b
                    y = np.array([100 * x.rel for x in cell])
                    lo = y - np.array([100 * x.rel_ci[0] for x in cell])
                    hi = np.array([100 * x.rel_ci[1] for x in cell]) - y
                    line = ax.errorbar(rs, y, yerr=[lo, hi], color=f"C{a}", ls="-" if b == 0 else "--",
                                       marker="o", mfc="none", capsize=2, lw=1,
                                       label=f"N={n}, {pol}" if i == 0 and j == 0 else None)
                    sig = [x.p_holm < 0.05 for x in cell]
                    ax.plot(rs[sig], y[sig], "o", color=line[0].get_color())
            ax.set_title(f"{names[s]}, k = {k:g}", fontsize=9)
            ax.set_xticks(sorted({x.r for x in rows if x.strategy == s}))
            ax.set_xlabel("r")
            if j == 0:
                ax.set_ylabel("TTT/T0 change vs periodic (%)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 6), fontsize=7, frameon=False)
    fig.suptitle("Dynamic checkpoint period (each policy at its best factor), paired 95% CI; filled: Holm p < 0.05",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def save_dynamic_figure(result, path, *, force: bool = False) -> str:
    """Write :func:`figure_dynamic` as a PNG to ``path`` (:func:`_save_study_figure`)."""
    return _save_study_figure(figure_dynamic, result, path, force)


def figure_repair(result):
    """Repair without a global restart: per ``N`` (columns), TTT/T0 at the best ``r`` with its 95% interval, the
    best ``r`` (dotted: the smallest near-optimal ``r``), availability and wipe-outs per job against the repair time
    (log scale), for Rep+CKPT and SPARe+CKPT; today's model (no repair) as a dashed line."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    best = list(result.best)
    if not best:
        raise UsageValueError("the repair result has no rows to draw")
    ns = sorted({b["n_groups"] for b in best})
    fig, axes = plt.subplots(4, len(ns), figsize=(4.4 * len(ns), 9.0), squeeze=False, sharex=True)
    names = {"rep": "Rep+CKPT", "spare": "SPARe+CKPT"}
    for j, n in enumerate(ns):
        for c, s in enumerate(("rep", "spare")):
            seq = sorted((b for b in best if b["n_groups"] == n and b["strategy"] == s and b["repair_s"] is not None),
                         key=lambda b: b["repair_s"])
            none = [b for b in best if b["n_groups"] == n and b["strategy"] == s and b["repair_s"] is None]
            if not seq:
                continue
            x = np.array([b["repair_s"] / 3600 for b in seq])
            y = np.array([b["ttt_over_t0"] for b in seq])
            lo = y - np.array([b["ttt_ci95"][0] for b in seq])
            hi = np.array([b["ttt_ci95"][1] for b in seq]) - y
            axes[0][j].errorbar(x, y, yerr=[lo, hi], marker="o", color=f"C{c}", capsize=2, label=names[s])
            axes[1][j].step(x, [b["r"] for b in seq], where="mid", marker="o", color=f"C{c}", label=names[s])
            axes[1][j].plot(x, [min(b["near_optimal_r"]) for b in seq], ls=":", marker=".", color=f"C{c}")
            axes[2][j].plot(x, [b["availability"] for b in seq], marker="o", color=f"C{c}", label=names[s])
            axes[3][j].plot(x, [b["wipeouts"] for b in seq], marker="o", color=f"C{c}", label=names[s])
            if none:
                b = none[0]
                for row, key in ((0, "ttt_over_t0"), (1, "r"), (2, "availability"), (3, "wipeouts")):
                    axes[row][j].axhline(b[key], color=f"C{c}", ls="--", lw=0.8)
        axes[0][j].set_title(f"N = {n} (dashed: no repair)", fontsize=9)
        axes[3][j].set_xlabel("repair time (h)")
        times = sorted({b["repair_s"] / 3600 for b in best if b["repair_s"] is not None})
        for row in range(4):
            axes[row][j].set_xscale("log")
            axes[row][j].minorticks_off()
            axes[row][j].set_xticks(times, [f"{t:.2g}" for t in times], fontsize=7)
    for row, label in enumerate(("TTT/T0 at the best r", "best r (dotted: smallest\nnear-optimal r)",
                                 "availability", "wipe-outs per job")):
        axes[row][0].set_ylabel(label)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def save_repair_figure(result, path, *, force: bool = False) -> str:
    """Write :func:`figure_repair` as a PNG to ``path`` (:func:`_save_study_figure`)."""
    return _save_study_figure(figure_repair, result, path, force)


def figure_domains(result, path=None, *, force: bool = False):
    """The failure-domain study (:func:`spare_mc.analyses.domains.run_domain_study`): per ``N`` (columns), masked failures
    before the first wipe-out (top) and TTT/T0 (bottom) with 95% intervals, against the domain level (x), one
    marker per strategy and layout. With ``path``: written as a PNG (returns the path); else the figure."""
    def draw(res):
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        rows = [r for r in res["rows"] if "error" not in r]
        if not rows:
            raise UsageValueError("the domain study has no rows to draw")
        ns = sorted({r["n_groups"] for r in rows})
        series = [("spare", "cyclic"), ("spare", "sidon"), ("spare", "random"), ("spare", "domain-aware"),
                  ("spare", "domain-aware-spread"), ("rep", "block"), ("rep", "domain-aware")]
        fig, axes = plt.subplots(2, len(ns), figsize=(4.6 * len(ns), 7.0), squeeze=False)
        width = 0.8 / len(series)
        for j, n in enumerate(ns):
            levels = [lv for lv in ("none", "node", "rack", "power", "pod", "all")
                      if any(r["level"] == lv and r["n_groups"] == n for r in rows)]  # "all": every level at once
            for k, (s, lay) in enumerate(series):
                pts = [(levels.index(r["level"]), r) for r in rows
                       if r["n_groups"] == n and r["strategy"] == s and r["layout"] == lay]
                if not pts:
                    continue
                x = np.array([p for p, _ in pts]) - 0.4 + (k + 0.5) * width
                label = f"{'SPARe' if s == 'spare' else 'Rep'} {lay}"
                style = dict(marker="os^D*vx"[k], ls="none", color=f"C{k}", capsize=2, label=label)
                for row, key in ((0, "masked"), (1, "ttt_over_t0")):
                    y = np.array([r[f"{key}_mean" if key == "masked" else key] for _, r in pts])
                    ci = np.array([r[f"{key}_ci95"] for _, r in pts])
                    axes[row][j].errorbar(x, y, yerr=[y - ci[:, 0], ci[:, 1] - y], **style)
            for row, lab in ((0, "masked failures before a wipe-out"), (1, "TTT / T0")):
                ax = axes[row][j]
                ax.set_xticks(range(len(levels)), levels)
                ax.set_ylabel(lab)
                ax.grid(alpha=0.3)
            rs = {s: next((r["r"] for r in rows if r["n_groups"] == n and r["strategy"] == s), None)
                  for s in ("spare", "rep")}
            axes[0][j].set_title(f"N = {n} (SPARe r = {rs['spare']}, Rep r = {rs['rep']})")
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=7, frameon=False)
        fig.suptitle("Failure domains at 600k GPUs: rack-blind and domain-aware layouts")
        fig.tight_layout(rect=(0, 0.05, 1, 1))
        return fig

    if path is None:
        return draw(result)
    return _save_study_figure(draw, result, path, force)


#: Colours of the phase map's winners: today's checkpointing light, modern dark (tab20 pairs).
_PHASE_COLOURS = {"ckpt": "#c7c7c7", "ckpt_modern": "#7f7f7f", "rep": "#ffbb78", "rep_modern": "#ff7f0e",
                  "spare": "#aec7e8", "spare_modern": "#1f77b4"}
_PHASE_NAMES = {"ckpt": "CKPT", "rep": "Rep+CKPT", "spare": "SPARe+CKPT", "ckpt_modern": "CKPT, modern",
                "rep_modern": "Rep+CKPT, modern", "spare_modern": "SPARe+CKPT, modern"}


def figure_phase(result, path=None, *, force: bool = False):
    """The phase map (:func:`spare_mc.analyses.phase.run_phase_study`): one column of panels per cluster size, save time
    ``T_s`` (x) by restart time ``T_r`` (y). Top row: the winner of the six strategies (light: today's
    checkpointing, dark: modern), labelled with its margin over the runner-up and, where the runner-up is the same
    redundancy strategy, over the best other strategy too ("vs" line); then one row per checkpointing kind (the
    winner among that kind's three strategies, the row's ``by_kind``). Margins are TTT/T0 differences with paired
    95% intervals; cells whose margin is not significant are hatched and marked "n.s.". With ``path``: written as a
    PNG (returns the path); else the figure."""
    def views(res):
        rows = res["rows"]
        out = [("all six strategies", {id(r): r for r in rows})]
        for kind, title in (("today", "today's checkpointing"), ("modern", "modern checkpointing")):
            if any(kind in r.get("by_kind", {}) for r in rows):
                out.append((title, {id(r): r.get("by_kind", {}).get(kind) for r in rows}))
        return out

    def draw(res):
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.colors as mcolors
        import matplotlib.patches as mpatches
        import matplotlib.pyplot as plt

        rows = res["rows"]
        if not rows:
            raise UsageValueError("the phase map has no rows to draw")
        sizes = sorted({r["n_gpus"] for r in rows})
        saves = sorted({r["save_s"] for r in rows})
        restarts = sorted({r["restart_s"] for r in rows})
        vs = views(res)
        fig, axes = plt.subplots(len(vs), len(sizes), figsize=(1.0 + 1.9 * len(saves) * len(sizes),
                                                               0.9 + (0.55 + 0.8 * len(restarts)) * len(vs)),
                                 squeeze=False)
        seen = []
        for i, (title, pick) in enumerate(vs):
            for j, g in enumerate(sizes):
                ax = axes[i][j]
                for r in (r for r in rows if r["n_gpus"] == g):
                    v = pick[id(r)]
                    if v is None:
                        continue
                    x, y = saves.index(r["save_s"]), restarts.index(r["restart_s"])
                    w = v["winner"]
                    colour = _PHASE_COLOURS.get(w, "white")
                    ax.add_patch(mpatches.Rectangle((x - 0.5, y - 0.5), 1, 1, facecolor=colour, edgecolor="white",
                                                    hatch=None if v["significant"] else "///", lw=1.5))
                    if w is not None and w not in seen:
                        seen.append(w)
                    red, green, blue = mcolors.to_rgb(colour)
                    dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.55  # white text on dark cells
                    if w is None:
                        text = "no winner\n(all capped)"
                    else:
                        m, (lo, hi), versus = v["margin"], v["margin_ci95"], ""
                        if not v["significant"] and v.get("margins"):  # the comparison that is not significant
                            weakest = min(v["margins"], key=lambda k: v["margins"][k]["margin_ci95"][0])
                            m, (lo, hi) = v["margins"][weakest]["margin"], v["margins"][weakest]["margin_ci95"]
                            versus = " vs " + _PHASE_NAMES[weakest].replace("+CKPT", "")
                        text = (f"{_PHASE_NAMES[w]}\n{m:+.3f} [{lo:.3f}, {hi:.3f}]"
                                + ("" if v["significant"] else f"{versus} n.s."))
                        sm = r.get("strategy_margin") if i == 0 else None
                        if sm and sm.get("versus") != v["runner_up"] and sm.get("margin") is not None:
                            short = _PHASE_NAMES[sm["versus"]].replace("+CKPT", "").replace(", modern", " (mod.)")
                            text += (f"\nvs {short}: +{sm['margin']:.3f}"
                                     + ("" if sm["significant"] else " n.s."))
                    ax.text(x, y, text, ha="center", va="center", fontsize=7, color="white" if dark else "black",
                            bbox=None if v["significant"] else dict(facecolor=colour, edgecolor="none", pad=1.0))
                ax.set_xlim(-0.5, len(saves) - 0.5)
                ax.set_ylim(-0.5, len(restarts) - 0.5)
                ax.set_xticks(range(len(saves)), [f"{s:g}" for s in saves])
                ax.set_yticks(range(len(restarts)), [f"{t / 60:g}" for t in restarts])
                ax.tick_params(labelsize=7)
                if i == len(vs) - 1:
                    ax.set_xlabel("checkpoint save time T_s (s)", fontsize=8)
                if j == 0:
                    ax.set_ylabel(f"{title}\nrestart time T_r (min)", fontsize=8)
                one = next(r for r in rows if r["n_gpus"] == g)
                extra = ""
                if "n_groups" in one and "mtbf_s" in one:
                    m = one["mtbf_s"]
                    extra = f", N = {one['n_groups']}, MTBF " + (f"{m / 3600:.2f} h" if m >= 3600 else
                                                                 f"{m / 60:.1f} min")
                if i == 0:
                    ax.set_title(f"{g:,} GPUs{extra}", fontsize=9)
        handles = [mpatches.Patch(facecolor=_PHASE_COLOURS[w], label=_PHASE_NAMES[w])
                   for w in _PHASE_COLOURS if w in seen]
        handles.append(mpatches.Patch(facecolor="white", edgecolor="grey", hatch="///",
                                      label="margin not significant (95%)"))
        fig.legend(handles=handles, fontsize=7, loc="lower center", ncol=len(handles), frameon=False)
        fig.suptitle("Which strategy wins: least TTT/T0, each strategy at its best r and checkpoint period; label: "
                     "margin over the runner-up (TTT/T0, paired 95% CI)", fontsize=9)
        fig.tight_layout(rect=(0, 0.035, 1, 1))
        return fig

    if path is None:
        return draw(result)
    return _save_study_figure(draw, result, path, force)
