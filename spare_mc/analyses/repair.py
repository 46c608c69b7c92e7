"""Repair without a global restart: time to train, availability and wipe-outs against the repair time.

The question: when failed groups come back after a repair time instead of waiting for the next global restart
(:class:`spare_mc.ttt.config.TimelineConfig` ``repair``), how do Rep+CKPT and SPARe+CKPT change, and at which repair
time does each one's best redundancy ``r`` change?

The study: per strategy and ``N``, one sweep over ``r x ckpt_period_factor`` with one variant per repair time (and
``none``, today's model), ``reps`` replications on common failure traces (an ``r`` above ``N`` is skipped at that
``N`` and listed in the settings). For each variant the best ``(r, f)`` by
mean TTT/T0 among the points with no capped run, with the ``r`` whose best interval overlaps it (near-optimal);
TTT/T0, availability and wipe-outs per job at every ``r`` (each at its best factor); and SPARe's reduction over
Rep at their best ``r``.

The factor screens in looks (``screen_alpha``, default 0.05; from ``reps >= 8``): each *factor screen* -- the
period factors of one (repair time, ``r``) -- runs replications 0-3, then 4-11, then 12-19 (for 20,
:func:`spare_mc.stats.screen_looks`); after each look but the last a factor leaves when a paired one-sided t test
on its replication-by-replication differences from another factor of the same screen says it is worse
(Bonferroni over the screen's ``m - 1 = 6`` other factors, ``screen_alpha / 2`` per look), or when it had a capped
run and another has none (:func:`spare_mc.analyses.engine.screen_groups`). **Guarantee**: in each factor screen
the factor with the least expected ``TTT/T0`` is eliminated with probability at most ``screen_alpha`` (a union
bound; exact under normality of the paired differences, approximate otherwise). The chosen factor stayed to the
end, so every number reported at it (TTT/T0, its interval, availability, wipe-outs) is computed from exactly the
``reps`` replications of the full screen: the elimination can change a row only by changing its chosen factor.
Nothing is eliminated across ``r``: every ``r`` is a reported row.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from .._lib.dist import t_ppf
from .._lib.provenance import SCHEMA_VERSION, software_versions
from .._lib.validation import UsageValueError, as_float, as_int, check_unique
from ..plots.studies import save_repair_figure
from ..sweep.cluster import shared_local_cluster
from ..ttt.config import MAX_DURATION_S, TimelineConfig, applicable
from .engine import SCREEN_ALPHA, best_in_group, check_screen_alpha, screen_groups, screen_record
from .folder import StudyFolder

__all__ = ["RepairResult", "repair_study", "DEFAULT_REPAIR_TIMES", "DEFAULT_R", "QUICK"]

#: Repair times studied (s): 5 minutes to 12 hours.
DEFAULT_REPAIR_TIMES = (300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 43200.0)
#: The redundancies studied per strategy.
DEFAULT_R = {"rep": (2, 3, 4, 5), "spare": (2, 3, 4, 5, 6, 8, 10, 12, 16, 24)}
#: The quick flavour of the study (``spare-mc repair --quick``): N = 200, three repair times, at most 6
#: replications per point, jobs of 2,000 steps (``n_steps``: the :class:`~spare_mc.TimelineConfig` field, a default
#: of ``base``).
QUICK = {"n_values": (200,), "repair_times": (600.0, 3600.0, 14400.0), "reps": 6, "n_steps": 2000}
_FACTORS = (0.5, 0.71, 1.0, 1.41, 2.0, 2.83, 4.0)
#: The outputs of a run the study reads from its screen.
_FIELDS = ("ttt_over_t0", "finished", "availability", "wipeouts")


@dataclass(frozen=True)
class RepairResult:
    """``rows``: one dict per (strategy, N, repair time, r) with the point at its best factor (``ttt_over_t0``,
    ``ttt_ci95``, ``availability``, ``wipeouts`` per job, ``factor``, ``capped``); ``best``: per (strategy,
    N, repair time) the best ``r``, its values and the near-optimal ``r``; ``reductions``: SPARe's reduction over
    Rep at their best ``r`` per (N, repair time)."""

    rows: tuple
    best: tuple
    reductions: tuple
    settings: dict
    #: The files the study wrote: ``{"result": JSON path, "figure": PNG path (if drawn)}``.
    files: dict = field(default_factory=dict)

    def to_dict(self) -> dict:

        return {"schema_version": SCHEMA_VERSION, "software": software_versions(), "rows": list(self.rows),
                "best": list(self.best), "reductions": list(self.reductions), "settings": self.settings,
                "best_r_changes": self.best_r_changes(), **self.files}

    def best_r_changes(self) -> list:
        """Per (strategy, N): the repair times (ascending, ``none`` last) at which the best ``r`` differs from the
        one before."""
        out = []
        for s in sorted({b["strategy"] for b in self.best}):
            for n in sorted({b["n_groups"] for b in self.best if b["strategy"] == s}):
                seq = [b for b in self.best if (b["strategy"], b["n_groups"]) == (s, n)]
                seq.sort(key=lambda b: math.inf if b["repair_s"] is None else b["repair_s"])
                for a, b in zip(seq, seq[1:]):
                    if a["r"] != b["r"]:
                        out.append({"strategy": s, "n_groups": n, "from_repair_s": a["repair_s"],
                                    "to_repair_s": b["repair_s"], "from_r": a["r"], "to_r": b["r"],
                                    "near_optimal_before": a["near_optimal_r"],
                                    "near_optimal_after": b["near_optimal_r"]})
        return out

    def table(self) -> str:
        lines = [f"{'strategy':<8} {'N':>5} {'repair':>8} {'best r':>6} {'TTT/T0':>8} {'95% CI':>17} "
                 f"{'avail.':>7} {'wipeouts':>8} near-optimal r"]
        lines.append("-" * len(lines[0]))
        for b in self.best:
            lo, hi = b["ttt_ci95"]
            rt = "none" if b["repair_s"] is None else f"{b['repair_s']:g} s"
            lines.append(f"{b['strategy']:<8} {b['n_groups']:>5} {rt:>8} {b['r']:>6} {b['ttt_over_t0']:>8.3f} "
                         f"[{lo:.3f}, {hi:.3f}] {b['availability']:>7.3f} {b['wipeouts']:>8.2f} "
                         f"{b['near_optimal_r']}" + ("  (period factor at the edge of the grid)"
                                                     if b["factor_at_edge"] else ""))
        if self.reductions:
            lines += ["", "SPARe's reduction over Rep at their best r:"]
            for x in self.reductions:
                rt = "none" if x["repair_s"] is None else f"{x['repair_s']:g} s"
                lines.append(f"  N={x['n_groups']:<5} repair {rt:>8}: {100 * x['reduction']:.1f}% "
                             f"(Rep r={x['rep_r']}, SPARe r={x['spare_r']})")
        changes = self.best_r_changes()
        lines += ["", "best r changes:" if changes else "best r changes: none over the repair times studied"]
        for c in changes:
            fr = "none" if c["from_repair_s"] is None else f"{c['from_repair_s']:g} s"
            to = "none" if c["to_repair_s"] is None else f"{c['to_repair_s']:g} s"
            lines.append(f"  {c['strategy']} N={c['n_groups']}: r={c['from_r']} at {fr} -> r={c['to_r']} at {to} "
                         f"(near-optimal {c['near_optimal_before']} -> {c['near_optimal_after']})")
        return "\n".join(lines)


#: The :class:`~spare_mc.TimelineConfig` fields the study sets itself (never in ``base``).
STUDY_SETS = ("repair", "repair_s", "r", "ckpt_period_factor", "ckpt_period_s")


def _check(n_values, repair_times, r_values, reps, repair, base):
    n_values = tuple(as_int(n, "n_values", min_value=2) for n in n_values)
    repair_times = tuple(as_float(t, "repair_times", positive=True, max_value=MAX_DURATION_S, why="seconds")
                         for t in repair_times)
    if not repair_times:
        raise UsageValueError("`repair_times` must hold at least one repair time (positive seconds)")
    for name, values in (("n_values", n_values), ("repair_times", repair_times)):
        check_unique(values, name)  # a repeated value would run (and record) one variant twice
    r_values = {s: tuple(r_values.get(s, ())) for s in DEFAULT_R} if r_values else dict(DEFAULT_R)
    for s, rs in r_values.items():
        check_unique(rs, f"r_values[{s!r}]")
    if not any(r_values.values()):
        raise UsageValueError("`r_values` selects no strategy")
    reps = as_int(reps, "reps", min_value=2)
    if repair not in ("fixed", "lognormal"):
        raise UsageValueError(f"`repair` must be 'fixed' or 'lognormal', got {repair!r}")
    base = dict(base or {})
    for name in STUDY_SETS:
        if name in base:
            raise UsageValueError(f"`base` must not set {name!r}: the study sets it")
    for s, rs in r_values.items():
        for n in n_values:
            if rs and not any(r <= n for r in rs):
                raise UsageValueError(f"`r_values` of {s} has no r <= N = {n}: {list(rs)}")
            for r in rs:
                if r <= n:  # an r above N is skipped at that N (listed in the settings)
                    TimelineConfig(s, n, r=r, repair=repair, repair_s=repair_times[0], **applicable(base, s))
    return n_values, repair_times, r_values, reps, base


#: TimelineConfig fields that describe a repair: set on the repair variants only
_REPAIR_OPTIONS = ("repair_sd", "rejoin", "rejoin_s")


def repair_study(n_values=(200, 600, 1000), *, repair_times=DEFAULT_REPAIR_TIMES, r_values=None, reps: int = 20,
                 repair: str = "fixed", rng=0, base=None, out_dir=os.path.join("data", "repair"), figure=None,
                 scheduler=None, workers=None, force: bool = False, progress=None,
                 screen_alpha: float = SCREEN_ALPHA) -> RepairResult:
    """Run the study of the module docstring into the folder ``out_dir``: resumable sweeps, ``repair.json`` and,
    with ``figure``, the figure (a PNG path).

    ``base`` sets other :class:`TimelineConfig` fields (e.g. ``repair_sd``, ``rejoin``, ``rejoin_s``; the paper's
    setting otherwise). ``repair`` is the repair-time law, with mean the studied repair time. ``out_dir`` is a
    :class:`spare_mc.analyses.folder.StudyFolder`: one setting per folder, checked before any work; another setting
    is refused unless ``force`` (which moves its files aside, and replaces files spare-mc did not write).
    ``screen_alpha`` is the elimination of the factor screens (0 turns it off; the module docstring says what it
    guarantees); it acts from ``reps >= 8``.
    """

    n_values, repair_times, r_values, reps, base = _check(n_values, repair_times, r_values, reps, repair, base)
    rng = as_int(rng, "rng", min_value=0)  # the sweeps' seed; before the folder records it
    screen_alpha = check_screen_alpha(screen_alpha)
    settings = {"n_values": list(n_values), "repair_times": list(repair_times), "repair": repair,
                "r_values": {s: list(r) for s, r in r_values.items()}, "factors": list(_FACTORS), "reps": reps,
                "seed": rng, "base": base, "screen_alpha": screen_alpha}
    folder = StudyFolder(out_dir, "repair", settings, force=force, figure=figure,
                         result=("repair.json", ("rows", "best", "settings"), "repair result"),
                         owns=("repair.json", "repair.png", "repair-*"))
    with folder, shared_local_cluster(scheduler, workers):
        return folder.write_result(_run(folder, settings, scheduler, workers, force, progress), save_repair_figure)


def _run(folder, settings, scheduler, workers, force, progress) -> RepairResult:
    """The study's sweeps and rows at ``settings`` (the checked inputs), in ``folder`` (held)."""
    n_values, repair_times, r_values, reps, repair, rng = (
        settings[k] for k in ("n_values", "repair_times", "r_values", "reps", "repair", "seed"))
    base = dict(settings["base"])
    # the options of a repair (its spread, how a repaired group rejoins) belong to the repair variants: the
    # no-repair baseline refuses them (no effect without a repair)
    of_repair = {k: base.pop(k) for k in _REPAIR_OPTIONS if k in base}
    variants = {"none": {}, **{f"t{t:g}": {"repair": repair, "repair_s": t, **of_repair} for t in repair_times}}
    tq = float(t_ppf(0.975, reps - 1))
    alpha = settings["screen_alpha"]
    rows, best, paths, skipped = [], [], [], {}
    screens = []  # the factor screens, for the settings' record (screen_record)
    for s, rs_all in r_values.items():
        if not rs_all:
            continue
        base_s = applicable(base, s)
        for n in n_values:
            rs = tuple(r for r in rs_all if r <= n)
            if len(rs) < len(rs_all):
                skipped[f"{s}-N{n}"] = [r for r in rs_all if r > n]
            sc = screen_groups(f"repair-{s}-N{n}", {"r": list(rs), "ckpt_period_factor": list(_FACTORS)},
                               "ckpt_period_factor", {k: applicable(v, s) for k, v in variants.items()}, reps, rng,
                               {"strategy": s, "n_groups": n, **base_s}, alpha, folder, scheduler, workers, force,
                               progress is not None, log=progress, fields=_FIELDS)
            paths.extend(sc["paths"])
            screens.append(sc)
            for v in variants:
                rt = variants[v].get("repair_s")
                cell = []
                for r in rs:
                    g = sc["groups"][(v, r)]
                    j = best_in_group(g)
                    pick = {f: g["x"][f][j] for f in _FIELDS}  # every replication: the chosen point stayed
                    vals = pick["ttt_over_t0"]
                    mean = float(vals.mean())
                    se = float(vals.std(ddof=1) / math.sqrt(reps))
                    row = {"strategy": s, "n_groups": n, "repair_s": rt, "r": int(r),
                           "factor": float(_FACTORS[j]), "ttt_over_t0": mean,
                           # TTT/T0 > 0 (below 1 only with jitter): a t interval from a handful of replications
                           # can reach below 0, clip it
                           "ttt_ci95": [max(0.0, mean - tq * se), mean + tq * se],
                           "availability": float(pick["availability"].mean()),
                           "wipeouts": float(pick["wipeouts"].mean()),
                           "capped": int((pick["finished"] != 1).sum()), "se": se,
                           "factor_at_edge": j in (0, len(_FACTORS) - 1)}
                    cell.append(row)
                rows.extend(cell)
                ok = [c for c in cell if c["capped"] == 0] or cell
                b = min(ok, key=lambda c: c["ttt_over_t0"])
                hi = b["ttt_over_t0"] + tq * b["se"]
                near = [c["r"] for c in cell if c["ttt_over_t0"] - tq * c["se"] <= hi]
                best.append({**b, "near_optimal_r": near})
    reductions = []
    for n in n_values:
        for v in variants:
            rt = variants[v].get("repair_s")
            pair = {b["strategy"]: b for b in best if b["n_groups"] == n and b["repair_s"] == rt}
            if "rep" in pair and "spare" in pair:
                reductions.append({"n_groups": n, "repair_s": rt, "rep_r": pair["rep"]["r"],
                                   "spare_r": pair["spare"]["r"],
                                   "reduction": 1 - pair["spare"]["ttt_over_t0"] / pair["rep"]["ttt_over_t0"]})
    return RepairResult(tuple(rows), tuple(best), tuple(reductions),
                        {**settings, "screen": screen_record(alpha, screens), "datasets": paths,
                         "skipped_r_above_n": skipped})
