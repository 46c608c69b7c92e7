"""Figures from sweep datasets (matplotlib is imported inside the functions only).

Every ``plot_*`` function takes ``ax=None`` (a new figure when omitted) and returns the artists it drew;
``figure_*`` helpers lay several panels out and return the figure.
"""

from __future__ import annotations

import numpy as np

__all__ = ["plot_masked", "plot_overhead", "plot_ttt", "plot_optimal_r", "figure_masked", "figure_overhead",
           "figure_ttt", "save_figures"]

_LAYOUT_STYLE = {"cyclic": ("C0", "unit stride"), "sidon": ("C1", "Sidon offsets"), "random": ("C2", "random"),
                 "block": ("C3", "block (Rep)")}
_STRATEGY_STYLE = {"ckpt": ("C3", "CKPT-only"), "rep": ("C1", "Rep+CKPT"), "spare": ("C0", "SPARe+CKPT")}


def _ax(ax):
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(5, 3.6))
    return ax


def _band(ax, x, mean, low, high, color, label, marker="o"):
    line, = ax.plot(x, mean, marker=marker, ms=4, color=color, label=label)
    band = ax.fill_between(x, low, high, color=color, alpha=0.25, lw=0)
    return [line, band]


def plot_masked(ds, n_groups, ax=None):
    """Masked failures ``T - 1`` vs ``r`` at one ``N``: Monte Carlo mean with its 95% CI band per layout, the exact
    value (crosses) where known, and the paper's ``mu(N, r)`` (dashed)."""
    from .closed_forms import mu_paper
    from .exact import EXACT_LAYOUTS, exact_wipeout

    ax = _ax(ax)
    sub = ds.sel(n_groups=n_groups)
    r = sub["r"].values
    artists = []
    for lay in sub["layout"].values:
        s = sub.sel(layout=lay)
        color, label = _LAYOUT_STYLE.get(str(lay), ("C7", str(lay)))
        artists += _band(ax, r, s["masked_mean"], s["masked_ci_low"], s["masked_ci_high"], color, f"{label} (MC)")
        if str(lay) in EXACT_LAYOUTS:
            ex = [exact_wipeout(str(lay), int(n_groups), int(k)).masked_mean for k in r]
            artists += ax.plot(r, ex, "x", color=color, ms=7, mew=1.5, label=f"{label} (exact)")
    artists += ax.plot(r, [mu_paper(int(n_groups), int(k)) - 1 for k in r], "k--", lw=1, label="paper mu - 1")
    ax.set(xlabel="redundancy r", ylabel="masked failures before wipe-out", title=f"N = {int(n_groups)}")
    ax.legend(fontsize=7)
    return artists


def plot_overhead(ds, n_groups, ax=None):
    """Mean stack number per epoch vs ``r``: measured ``S*`` (solid, CI band) and the ``c(k)`` lower bound (dotted,
    exact crosses where known), per layout."""
    from .exact import EXACT_LAYOUTS
    from .reorder import exact_stack_bound_sum
    from .stats import ratio_estimate

    ax = _ax(ax)
    sub = ds.sel(n_groups=n_groups)
    r = sub["r"].values
    artists = []
    for lay in sub["layout"].values:
        s = sub.sel(layout=lay)
        color, label = _LAYOUT_STYLE.get(str(lay), ("C7", str(lay)))
        meas = [ratio_estimate(s["sum_s"].sel(r=k).values, s["T"].sel(r=k).values) for k in r]
        bound = [ratio_estimate(s["sum_c"].sel(r=k).values, s["T"].sel(r=k).values) for k in r]
        artists += _band(ax, r, [e.mean for e in meas], [e.ci[0] for e in meas], [e.ci[1] for e in meas], color,
                         f"{label}: measured S*")
        artists += ax.plot(r, [e.mean for e in bound], ":", color=color, label=f"{label}: c(k) bound")
        if str(lay) in EXACT_LAYOUTS:
            artists += ax.plot(r, [exact_stack_bound_sum(str(lay), int(n_groups), int(k)).c_mean for k in r], "x",
                               color=color, ms=6)
    ax.set(xlabel="redundancy r", ylabel="mean stack number per epoch (x compute)", title=f"N = {int(n_groups)}")
    ax.legend(fontsize=7)
    return artists


def plot_ttt(datasets, n_groups, what="ttt_over_t0", ax=None):
    """``TTT/T0`` (or ``availability``) vs ``r`` at one ``N`` for each strategy's dataset (CKPT-only: a band)."""
    ax = _ax(ax)
    artists = []
    for ds in datasets:
        strategy = str(ds.attrs.get("strategy", ""))
        color, label = _STRATEGY_STYLE.get(strategy, ("C7", strategy))
        sub = ds.sel(n_groups=n_groups)
        if "r" in sub.dims:
            artists += _band(ax, sub["r"].values, sub[f"{what}_mean"], sub[f"{what}_ci_low"], sub[f"{what}_ci_high"],
                             color, label)
        else:
            artists.append(ax.axhspan(float(sub[f"{what}_ci_low"]), float(sub[f"{what}_ci_high"]), color=color,
                                      alpha=0.3, label=f"{label} (r = 1): {float(sub[f'{what}_mean']):.3g}"))
    ylabel = "time to train / T0" if what == "ttt_over_t0" else "availability (uptime / wall clock)"
    ax.set(xlabel="redundancy r", ylabel=ylabel, title=f"N = {int(n_groups)}")
    if what == "ttt_over_t0":
        ax.set_yscale("log")
    ax.legend(fontsize=7)
    return artists


def plot_optimal_r(datasets, ax=None):
    """Best ``r`` vs ``N`` per strategy: simulation (argmin of mean ``TTT/T0`` over the sweep's ``r``) next to the
    theory optimum (``J(r)`` minimised) and the paper's ``r* = floor(log2 N + 0.833)``."""
    from .closed_forms import r_star
    from .optimize import theory_ttt
    from .timeline import TimelineConfig

    ax = _ax(ax)
    artists = []
    for ds in datasets:
        strategy = str(ds.attrs.get("strategy", ""))
        if "r" not in ds.dims:
            continue
        color, label = _STRATEGY_STYLE.get(strategy, ("C7", strategy))
        ns = ds["n_groups"].values
        rs = ds["r"].values
        sim = [int(rs[int(np.nanargmin(ds["ttt_over_t0_mean"].sel(n_groups=n).values))]) for n in ns]
        theo = []
        for n in ns:
            vals = [theory_ttt(TimelineConfig(strategy, int(n), r=int(k))).ttt_over_t0 for k in rs]
            theo.append(int(rs[int(np.argmin(vals))]))
        artists += ax.plot(ns, sim, "o-", color=color, label=f"{label}: simulation")
        artists += ax.plot(ns, theo, "s--", color=color, mfc="none", label=f"{label}: theory J(r)")
        if strategy == "spare":
            artists += ax.plot(ns, [r_star(int(n)) for n in ns], "k^:", label="paper r*")
    ax.set(xlabel="groups N", ylabel="best redundancy r", title="optimal r vs N")
    ax.legend(fontsize=7)
    return artists


def _grid(n, width=4.6, height=3.6):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False)
    return fig, axes[0]


def _per_n_figure(ds, plot_one):
    """One panel per ``N`` of a sweep dataset."""
    fig, axes = _grid(ds.sizes["n_groups"])
    for ax, n in zip(axes, ds["n_groups"].values):
        plot_one(ds, n, ax=ax)
    fig.tight_layout()
    return fig


def figure_masked(ds):
    """:func:`plot_masked` for every ``N`` of a wipe-out sweep."""
    return _per_n_figure(ds, plot_masked)


def figure_overhead(ds):
    """:func:`plot_overhead` for every ``N`` of an overhead sweep."""
    return _per_n_figure(ds, plot_overhead)


def figure_ttt(datasets):
    """TTT/T0 (top) and availability (bottom) vs r for each N, and the optimal r vs N."""
    import matplotlib.pyplot as plt

    ns = datasets[0]["n_groups"].values
    fig, axes = plt.subplots(2, len(ns) + 1, figsize=(4.6 * (len(ns) + 1), 7.2), squeeze=False)
    for j, n in enumerate(ns):
        plot_ttt(datasets, n, "ttt_over_t0", ax=axes[0, j])
        plot_ttt(datasets, n, "availability", ax=axes[1, j])
    plot_optimal_r(datasets, ax=axes[0, -1])
    axes[1, -1].axis("off")
    fig.tight_layout()
    return fig


def save_figures(datasets: dict, outdir) -> list:
    """Write every figure the given datasets allow (``{name: dataset}``) as PNG into ``outdir``; returns paths."""
    import os

    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    os.makedirs(outdir, exist_ok=True)
    paths = []
    ttt = []
    for name, ds in datasets.items():
        q = ds.attrs.get("quantity")
        if q == "wipeout":
            fig = figure_masked(ds)
        elif q == "overhead":
            fig = figure_overhead(ds)
        elif q == "ttt":
            ttt.append(ds)
            continue
        else:
            continue
        path = os.path.join(outdir, f"{name}.png")
        fig.savefig(path, dpi=120)
        plt.close(fig)
        paths.append(path)
    if ttt:
        fig = figure_ttt(ttt)
        path = os.path.join(outdir, "ttt.png")
        fig.savefig(path, dpi=120)
        plt.close(fig)
        paths.append(path)
    return paths
