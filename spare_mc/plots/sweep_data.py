"""The datasets of a sweep figure: checked to be spare-mc sweep datasets, grouped by quantity, the roles of their
swept dimensions (x axis, one line per value, one panel per combination: :func:`axes_roles`, the rule of
:mod:`spare_mc.plots.sweep_figures`), the series of every panel, and the labels and colours of values.
"""

from __future__ import annotations

import itertools

import numpy as np

from .._lib.validation import UsageError, UsageValueError
from ..sweep.spec import PARAMETERS, SweepSpec
from ..sweep.storage import OUTPUTS

__all__ = ["axes_roles"]

_LAYOUT_STYLE = {"cyclic": ("C0", "unit stride"), "sidon": ("C1", "Sidon offsets"), "random": ("C2", "random"),
                 "block": ("C3", "block (Rep)")}
STRATEGY_STYLE = {"ckpt": ("C3", "CKPT-only"), "rep": ("C1", "Rep+CKPT"), "spare": ("C0", "SPARe+CKPT")}
VALUE_STYLE = {"layout": _LAYOUT_STYLE, "strategy": STRATEGY_STYLE}

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


def _where(name, ds):
    src = getattr(ds, "encoding", {}).get("source")
    return str(src) if src else str(name)


def _required(quantity):
    if quantity == "wipeout":
        return ["masked_mean", "masked_ci_low", "masked_ci_high"]
    if quantity == "overhead":
        return ["sum_s", "sum_c", "T"]
    return [f"{v}_{s}" for v in ("ttt_over_t0", "availability") for s in ("mean", "ci_low", "ci_high")]


def grid_dims(ds):
    """Swept dimensions of a checked dataset, in the spec's order."""
    head = _required(ds.attrs["quantity"])[0]
    return [d for d in ds[head].dims if d != "rep"]


def check_dataset(name, ds):
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


def as_py(v):
    """A numpy scalar as the Python value (other values as they are)."""
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


def fixed_params(ds):
    """The sweep's fixed parameters (from the stored spec; the scalar attributes as a fallback)."""

    spec = _stored_spec(ds)
    if spec is not None:
        return dict(spec.fixed)
    return {k: as_py(ds.attrs[k]) for k in PARAMETERS[ds.attrs["quantity"]] if k in ds.attrs}


def is_numeric(values):
    """Whether ``values`` is a non-empty list of numbers (booleans are not)."""
    return len(values) > 0 and all(isinstance(v, (int, float, np.integer, np.floating))
                                   and not isinstance(v, (bool, np.bool_)) for v in values)


def same_value(a, b):
    """Whether two grid values are one value (numbers by value: 300 == 300.0)."""
    if is_numeric([a]) and is_numeric([b]):
        return float(a) == float(b)
    return a == b


def fmt_value(v):
    """A grid value as text for titles and labels (floats in ``%g``)."""
    v = as_py(v)
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def short_name(dim):
    """A dimension's short name for titles (``N``, ``T_c``, ...)."""
    return _DIM_TEXT.get(dim, (dim, dim))[0]


def long_name(dim):
    """A dimension's axis label."""
    return _DIM_TEXT.get(dim, (dim, dim))[1]


def value_label(dim, v):
    """The legend label of a line value (a layout or strategy by its name, else ``dim = value``)."""
    style = VALUE_STYLE.get(dim, {})
    if str(v) in style:
        return style[str(v)][1]
    if dim in ("failure_model", "age_policy", "placement"):
        return fmt_value(v)
    return f"{short_name(dim)} = {fmt_value(v)}"


def period_text(params, short=False):
    """The checkpoint period a ttt grid point ran at, as the sweep's spec gives it."""
    if params.get("ckpt_period_s") is not None:
        return f"T_c = {fmt_value(float(params['ckpt_period_s']))} s"
    f = float(params.get("ckpt_period_factor", 1.0))
    if short:
        return "T_c*" if f == 1.0 else f"T_c = {f:g} × T_c*"
    return f"T_c = {f:g} × T_c* (theory period)"


def _choose_roles(values):
    """(x, line, panels) from ``{dim: values}`` (see the module docstring)."""
    dims = list(values)
    numeric = [d for d in dims if is_numeric(values[d])]
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
        self.base = [{**PARAMETERS[self.quantity], **fixed_params(d)} for d in self.datasets]
        self.variants = [_variants(d) for d in self.datasets]
        values = {}
        for ds in self.datasets:
            for d in grid_dims(ds):
                vals = values.setdefault(d, [])
                vals += [as_py(v) for v in ds[d].values if not any(same_value(v, w) for w in vals)]
        for d, vals in values.items():  # a dataset without the dimension sits at its fixed value
            for ds, base in zip(self.datasets, self.base):
                if d not in ds.dims and base.get(d) is not None and not any(same_value(base[d], w) for w in vals):
                    vals.append(as_py(base[d]))
        values = {d: sorted(v) if is_numeric(v) else v for d, v in values.items()}
        self.values = values
        self.x, self.line, self.panels = _choose_roles(values)
        self.x_numeric = self.x is not None and is_numeric(values[self.x])
        self._colors = {}
        used = set()
        for i in range(len(self.datasets)):
            for lv in self._line_values(i):
                key = self._color_key(i, lv)
                if key in self._colors:
                    continue
                dim = self.line if self.line else "strategy"
                color = VALUE_STYLE.get(dim, {}).get(str(key), (None,))[0]
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
            return [as_py(v) for v in ds[self.line].values]
        return [as_py(self.base[i].get(self.line))]

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
                parts.append(STRATEGY_STYLE.get(s, (None, s))[1])
            else:
                parts.append(self.names[i])
        if self.line is not None:
            parts.append(value_label(self.line, lv))
        if not parts and self.quantity == "ttt":
            s = str(self.base[i].get("strategy"))
            parts.append(STRATEGY_STYLE.get(s, (None, s))[1])
        return ", ".join(parts)

    def panel_keys(self):
        """Every combination of the panel dimensions' values that some dataset has (C order)."""
        keys = list(itertools.product(*(self.values[d] for d in self.panels)))
        return [k for k in keys if self.series(k)]

    def key_dict(self, key):
        return dict(zip(self.panels, key))

    def panel_title(self, key):
        return ", ".join(f"{short_name(d)} = {fmt_value(v)}" for d, v in zip(self.panels, key))

    def series(self, key):
        """The series of one panel."""
        out = []
        multi = len(self.datasets) > 1 and self.line not in (None, "strategy")
        for i, ds in enumerate(self.datasets):
            base = self.base[i]
            sel, ok = {}, True
            for d, v in zip(self.panels, key):
                if d in ds.dims:
                    match = [w for w in ds[d].values if same_value(w, v)]
                    if not match:
                        ok = False
                        break
                    sel[d] = match[0]
                elif not same_value(base.get(d), v):
                    ok = False
                    break
            if not ok:
                continue
            for lv in self._line_values(i):
                s = dict(sel)
                if self.line is not None and self.line in ds.dims:
                    s[self.line] = next(w for w in ds[self.line].values if same_value(w, lv))
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
        return np.array([next(j for j, w in enumerate(allv) if same_value(w, v)) for v in xvals], dtype=float)

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
                fx.append(fixed_params(ds))
        keys = [k for k in fx[0] if k not in skip and all(k in f and same_value(f[k], fx[0][k]) for f in fx)]
        return ", ".join(f"{k}={fmt_value(fx[0][k])}" for k in keys)


def _as_list(datasets):
    if isinstance(datasets, dict):
        return list(datasets.items())
    if isinstance(datasets, (list, tuple)):
        return [(d.attrs.get("name", f"dataset {i}") if hasattr(d, "attrs") else f"dataset {i}", d)
                for i, d in enumerate(datasets)]
    return [(datasets.attrs.get("name", "dataset") if hasattr(datasets, "attrs") else "dataset", datasets)]


def group_datasets(datasets, quantity=None):
    """The checked datasets drawn in one figure (of ``quantity``, when given), with their dimensions' roles."""
    items = _as_list(datasets)
    if not items:
        raise UsageValueError("no datasets given")
    for name, ds in items:
        q = check_dataset(name, ds)
        if quantity is not None and q != quantity:
            raise UsageValueError(f"{_where(name, ds)} is a {q!r} sweep, expected {quantity!r}")
    return _Group(items)


def panel_key(g, panel):
    """The panel key from ``panel``: a dict of panel dimensions, a number (N) or None (the only panel)."""
    keys = g.panel_keys()
    if panel is None:
        if len(keys) != 1:
            raise UsageValueError(f"`panel` must name one of the panels {[g.key_dict(k) for k in keys]}")
        return keys[0]
    if not isinstance(panel, dict):
        panel = {"n_groups": panel}
    found = [k for k in keys if set(panel) <= set(g.panels)
             and all(same_value(g.key_dict(k)[n], v) for n, v in panel.items())]
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
    g = group_datasets(datasets)
    return {"x": g.x, "line": g.line, "panels": list(g.panels), "values": dict(g.values)}
