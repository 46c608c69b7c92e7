"""Figures of the studies: the sensitivity tornado, dynamic checkpointing, repair without a global restart, failure
domains and the phase map (matplotlib is imported inside the functions only); each also written as a PNG
(:func:`spare_mc.plots.files.save_study_figure`)."""

from __future__ import annotations

import numpy as np

from .._lib.validation import UsageValueError
from .files import save_study_figure

__all__ = ["figure_domains", "figure_dynamic", "figure_phase", "figure_repair", "figure_sensitivity",
           "save_dynamic_figure", "save_repair_figure", "save_sensitivity_figure"]


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


def save_sensitivity_figure(result, path, *, force: bool = False) -> str:
    """Write :func:`figure_sensitivity` as a PNG to ``path`` (:func:`save_study_figure`)."""
    return save_study_figure(figure_sensitivity, result, path, force)


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
    """Write :func:`figure_dynamic` as a PNG to ``path`` (:func:`save_study_figure`)."""
    return save_study_figure(figure_dynamic, result, path, force)


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
    """Write :func:`figure_repair` as a PNG to ``path`` (:func:`save_study_figure`)."""
    return save_study_figure(figure_repair, result, path, force)


def figure_domains(result, path=None, *, force: bool = False):
    """The failure-domain study (:func:`spare_mc.analyses.domains.run_domain_study`): per ``N`` (columns), masked
    failures before the first wipe-out (top) and TTT/T0 (bottom) with 95% intervals, against the domain level (x),
    one marker per strategy and layout. With ``path``: written as a PNG (returns the path); else the figure."""
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
    return save_study_figure(draw, result, path, force)


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
    return save_study_figure(draw, result, path, force)
