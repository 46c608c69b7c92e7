"""Best redundancy and checkpoint period per strategy, by simulation and by theory, and the paper's main table.

Simulation: a grid over ``r`` (CKPT-only: 1; Rep and SPARe: ``r_range``; Rep on replica sets) and over
checkpoint periods ``T_c = f x T_c*(theory)`` for ``f`` in ``period_factors`` (the config field
``ckpt_period_factor``); every grid point runs replications ``0 .. reps - 1`` of one root seed, i.e. the same failure
traces (common random numbers), and the point with the least mean ``TTT/T0`` among those with no capped run is
selected. It is then **re-run on fresh traces** -- replications ``reps .. reps + confirm_reps - 1`` of the same root
-- so that the reported estimate and CI are not biased by the selection (the minimum of noisy means is
optimistic). The confirmation runs of two strategies at one ``N`` share their traces, so their comparison is paired.

Theory (no simulation): the closed-form ``J(r) = S / A*`` of every grid point, next to the simulation
(:func:`spare_mc.ttt.theory.theory_ttt`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import numpy as np

from .._lib.provenance import SCHEMA_VERSION
from .._lib.resources import ResourceLimitError
from .._lib.seeding import root_seed_sequence, root_text
from .._lib.validation import UsageTypeError, UsageValueError, as_choice, as_float, as_int, check_unique, reject_unknown
from ..model.paper import paper_row, paper_setting
from ..model.strategies import STRATEGIES
from ..stats import MCEstimate, eliminate, ratio_estimate, screen_looks
from ..theory.closed_forms import r_star
from .config import TimelineConfig, applicable
from .results import TTTResult
from .run import simulate_ttt
from .theory import theory_ttt

__all__ = ["optimize_strategy", "admissible_r", "OptimumResult", "main_table", "MainTable",
           "MainTableRow", "PERIOD_FACTORS"]

PERIOD_FACTORS = (0.5, 0.71, 1.0, 1.41, 2.0)


@dataclass(frozen=True, eq=False)
class OptimumResult:
    """Outcome of :func:`optimize_strategy`.

    Attributes
    ----------
    strategy : str
    n_groups : int
    best_r : int
    best_ckpt_period_s : float
    best : TTTResult
        The confirmation run of the selected point (fresh replications).
    grid : list of dict
        Every grid point: ``r``, ``ckpt_period_factor``, ``ckpt_period_s``, ``ttt_over_t0``, its CI, ``replications``,
        ``capped_fraction``.
    theory : list of TheoryTTT
        One per ``r``.
    theory_best_r : int
    skipped_r : tuple of int
        The ``r`` of the range not searched: no holder table of the layout (see :func:`admissible_r`).
    """

    strategy: str
    n_groups: int
    best_r: int
    best_ckpt_period_s: float
    best: object
    grid: list = field(repr=False)
    theory: list = field(repr=False)
    theory_best_r: int = 0
    skipped_r: tuple = ()

    def estimate(self, name: str, level: float = 0.95) -> MCEstimate:
        """An estimate of the confirmation run (:meth:`TTTResult.estimate`)."""
        return self.best.estimate(name, level)

    def summary(self) -> dict:
        b = self.best.summary()
        d = {"best_r": self.best_r, "ckpt_period_s": self.best_ckpt_period_s,
             "ttt_over_t0": b["ttt_over_t0"], "ttt_over_t0_ci95": b["ttt_over_t0_ci95"],
             "availability": b["availability"], "availability_ci95": b["availability_ci95"],
             "failures_mean": b["failures_mean"], "wipeouts_mean": b["wipeouts_mean"],
             "capped_fraction": b["capped_fraction"], "ttt_estimator": b["ttt_estimator"], "status": b["status"],
             "theory_best_r": self.theory_best_r,
             "theory_ttt_over_t0": min(t.ttt_over_t0 for t in self.theory)}
        if self.strategy == "spare":
            d["paper_r_star"] = r_star(self.n_groups)
        if self.skipped_r:
            d["skipped_r"] = list(self.skipped_r)  # no holder table exists (or none was found) for these r
        return d


def _r_range_iv(r_range) -> tuple[int, int]:
    """``r_range`` as ``(lo, hi)``: two integers with ``1 <= lo <= hi``."""
    if isinstance(r_range, (str, bytes)) or not hasattr(r_range, "__len__") or len(r_range) != 2:
        raise UsageTypeError(f"`r_range` must be a pair (lo, hi) of integers, got {r_range!r}")
    lo = as_int(r_range[0], "r_range[0]", min_value=1)
    hi = as_int(r_range[1], "r_range[1]", min_value=lo)
    return lo, hi


def period_factors_iv(period_factors) -> tuple[float, ...]:
    """``period_factors`` as a non-empty tuple of distinct positive finite multiples of the theory period (the
    optimiser's, the sensitivity study's and the calibration's grid)."""
    if isinstance(period_factors, (str, bytes)) or not hasattr(period_factors, "__iter__"):
        raise UsageTypeError(f"`period_factors` must be a sequence of distinct positive numbers (multiples of the "
                             f"theory period), got {period_factors!r}")
    out = tuple(as_float(f, f"period_factors[{i}]") for i, f in enumerate(period_factors))
    if not out or any(not (0 < f <= 1e6) for f in out):
        raise UsageValueError(f"`period_factors` must be distinct positive numbers (at most 1e6), got {list(out)}"
                              + (" (an empty grid simulates nothing)" if not out else ""))
    check_unique(out, "period_factors")
    return out


def n_values_iv(values, name: str, min_value: int = 4) -> tuple[int, ...]:
    """A tuple of distinct group counts ``N >= min_value`` (one integer is one N; may be empty)."""
    if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
        values = (values,)
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise UsageTypeError(f"`{name}` must be a sequence of group counts N, got {values!r}")
    values = tuple(as_int(n, name, min_value=min_value) for n in values)
    check_unique(values, name)
    return values


def _base_iv(base) -> dict:
    if base is not None and not isinstance(base, dict):
        raise UsageTypeError(f"`base` must be a dict of TimelineConfig fields or None, got {type(base).__name__}")
    base = dict(base or {})
    reject_unknown(base, {f.name for f in fields(TimelineConfig)}, "`base` (TimelineConfig fields)")
    return base


def _r_values(strategy, n, r_range):
    if strategy == "ckpt":
        return [1]
    lo, hi = r_range
    rs = [r for r in range(max(2, lo), min(hi, n) + 1)]  # Rep: every r (replica sets when r does not divide N)
    if not rs:
        raise UsageValueError(f"no admissible r for strategy {strategy!r} with N={n} in r_range={r_range}")
    return rs


def admissible_r(strategy: str, n_groups: int, r_range=(2, 14), overrides: dict | None = None) -> tuple:
    """``(r values searched, r values skipped)`` of a strategy at ``N`` in ``r_range``: an ``r`` whose holder table
    cannot be built under ``overrides`` (Sidon offsets that do not exist, or that the greedy search does not find,
    e.g. N = 200 with r = 13, 14) is skipped, and said so, rather than failing the search."""
    ok, skipped = [], []
    over = applicable(dict(overrides or {}), strategy)
    for r in _r_values(strategy, n_groups, r_range):
        cfg = TimelineConfig(strategy, n_groups, r=r, **over)
        try:
            cfg.layout_object(rng=0 if cfg.layout == "random" else None)
        except ResourceLimitError:
            raise
        except ValueError:  # no such layout (Sidon offsets impossible or not found)
            skipped.append(r)
        else:
            ok.append(r)
    if not ok:
        raise UsageValueError(f"no r in {r_range} admits a {over.get('layout', 'cyclic')} layout for {strategy} at "
                              f"N={n_groups}")
    return ok, skipped


#: What the optimiser chooses itself: never set by its ``base``.
OPTIMISED = ("strategy", "n_groups", "r", "ckpt_period_s", "ckpt_period_factor")


def _not_optimised(base: dict) -> dict:
    for key in OPTIMISED:
        if key in base:
            raise UsageValueError(f"`base` must not set {key!r}: it is what the optimiser varies")
    return base


def optimize_strategy(strategy: str, n_groups: int, *, reps: int = 20, confirm_reps: int = 50, rng=None,
                      r_range=(2, 14), period_factors=PERIOD_FACTORS, base: dict | None = None,
                      screen_alpha: float = 0.0) -> OptimumResult:
    """Best ``(r, T_c)`` of a strategy at ``N`` by simulation (see the module docstring), with theory alongside.

    ``base`` overrides :class:`TimelineConfig` fields (e.g. ``{"jitter_sd": 0.0, "n_steps": 2000}``); ``rng`` gives
    the root seed. ``r_range`` is searched for Rep and SPARe; CKPT-only has no
    redundancy and runs ``r = 1`` whatever it says (callers such as the phase study pass one range to every
    strategy).

    ``screen_alpha > 0`` screens in looks (:func:`spare_mc.stats.screen_looks`: ``(4, 12, 20)`` for 20 replications;
    none below 8): after each look but the last, :func:`spare_mc.stats.eliminate` drops the grid points a paired
    one-sided t test (Bonferroni over the grid) shows to be worse than another, at ``screen_alpha / (looks - 1)``
    per look, and only the others run the next look's replications. The grid point with the least expected
    ``TTT/T0`` is then dropped with probability at most ``screen_alpha`` (under normality of the paired
    differences); the selection among the points left and the confirmation are as without it, so the reported
    estimate stays unbiased by the selection. A dropped point's grid row holds the replications it ran
    (``replications``). ``0`` (the default): every point runs ``reps``.
    """
    strategy = as_choice(strategy, "strategy", STRATEGIES)
    n_groups = as_int(n_groups, "n_groups", min_value=2)
    reps = as_int(reps, "reps", min_value=2)
    confirm_reps = as_int(confirm_reps, "confirm_reps", min_value=2)
    r_range = _r_range_iv(r_range)
    period_factors = period_factors_iv(period_factors)
    base = _not_optimised(_base_iv(base))
    base = applicable(base, strategy)  # a table's shared settings: each strategy takes the options it has
    screen_alpha = as_float(screen_alpha, "screen_alpha", nonnegative=True, max_value=0.5)
    root = root_seed_sequence(rng)
    grid, theory, points = [], [], []
    best = None
    r_ok, r_skipped = admissible_r(strategy, n_groups, r_range, base)
    for r in r_ok:
        cfg = TimelineConfig(strategy, n_groups, r=r, **base)
        theory.append(theory_ttt(cfg))
        points.extend(replace(cfg, ckpt_period_factor=float(f)) for f in period_factors)
    for point, res in zip(points, _screen(points, reps, root, screen_alpha)):
        est = res.estimate("ttt_over_t0")
        row = {"r": point.r, "ckpt_period_factor": point.ckpt_period_factor, "ckpt_period_s": point.ckpt_period,
               "ttt_over_t0": est.mean, "ttt_over_t0_ci95": list(est.ci), "capped_fraction": res.capped_fraction,
               "replications": res.reps}
        grid.append(row)
        if res.reps == reps and res.capped_fraction == 0 and (best is None or est.mean < best["ttt_over_t0"]):
            best = row
    if best is None:  # every point capped: confirm the theory optimum's point, flagged by its status
        t_best = min(theory, key=lambda t: t.ttt_over_t0)
        best = {"r": t_best.r, "ckpt_period_s": t_best.ckpt_period_s}
    cfg = TimelineConfig(strategy, n_groups, r=best["r"], ckpt_period_s=best["ckpt_period_s"], **base)
    confirm = simulate_ttt(cfg, confirm_reps, rng=root, first_rep=reps)
    t_best = min(theory, key=lambda t: t.ttt_over_t0).r
    return OptimumResult(strategy, n_groups, best["r"], best["ckpt_period_s"], confirm, grid, theory, t_best,
                         tuple(r_skipped))


def _screen(points, reps, root, alpha) -> list:
    """The screen's results, a :class:`~spare_mc.ttt.results.TTTResult` per point on replications ``0 .. n - 1``:
    ``n = reps`` for every point with ``alpha = 0``, else for the points left after the looks' eliminations (see
    :func:`optimize_strategy`)."""
    looks = screen_looks(reps) if alpha > 0 else (reps,)
    runs = [() for _ in points]
    values = np.full((len(points), reps), np.nan)
    done = np.ones(len(points), dtype=bool)  # no capped run so far
    alive = np.ones(len(points), dtype=bool)
    start = 0
    for k, stop in enumerate(looks):
        for p in np.flatnonzero(alive):
            res = simulate_ttt(points[p], stop - start, rng=root, first_rep=start)
            runs[p] += res.runs
            values[p, start:stop] = res.values("ttt_over_t0")
            done[p] &= res.n_capped == 0
        if k < len(looks) - 1:
            alive = eliminate(values[:, :stop], done, alive, alpha / (len(looks) - 1), len(points))
        start = stop
    return [TTTResult(pt, r, root_text(root), 0) for pt, r in zip(points, runs)]


@dataclass(frozen=True, eq=False)
class MainTableRow:
    """One ``N`` of the main table: each strategy's optimum and SPARe's time-to-train reduction over Rep.

    ``reduction`` is ``1 - E[TTT_spare] / E[TTT_rep]`` over the two confirmation runs, which share their failure
    traces (paired), with a delta-method interval (:func:`spare_mc.ratio_estimate`) on the log scale of the ratio,
    so that it never passes 1.
    """

    n_groups: int
    optima: dict
    reduction: MCEstimate

    def estimate(self, name: str, level: float = 0.95) -> MCEstimate:
        """``"reduction"`` or ``"<strategy>.<quantity>"`` (e.g. ``"spare.ttt_over_t0"``)."""
        if name == "reduction":
            return replace(self.reduction, level=level)
        strategy, _, quantity = name.partition(".")
        if strategy not in self.optima or not quantity:
            raise UsageValueError(f"`name` must be 'reduction' or '<strategy>.<quantity>' with a strategy in "
                                  f"{sorted(self.optima)}, got {name!r}")
        return self.optima[strategy].estimate(quantity, level)

    def to_dict(self) -> dict:
        d = {"n_groups": self.n_groups}
        d.update({s: opt.summary() for s, opt in self.optima.items()})
        d["ttt_reduction"] = self.reduction.mean
        d["ttt_reduction_ci95"] = list(self.reduction.ci)
        return d


@dataclass(frozen=True, eq=False)
class MainTable:
    """The paper's main experiment (:func:`main_table`): rows per ``N``, the settings and the published row."""

    rows: tuple
    settings: dict
    paper: dict

    def to_dict(self) -> dict:
        """What ``spare-mc reproduce --table main --json`` prints."""
        return {"schema_version": SCHEMA_VERSION, "rows": [row.to_dict() for row in self.rows],
                "settings": self.settings, "paper_N600": self.paper}


def _reduction(spare, rep) -> MCEstimate:
    sp = spare.best.values("ttt_over_t0")
    rp = rep.best.values("ttt_over_t0")
    est = ratio_estimate(sp, rp, name="ttt_ratio")
    return MCEstimate("ttt_reduction", 1.0 - est.mean, est.se, est.sd, est.n, est.level, "at_most_one",
                      spare.best.n_capped + rep.best.n_capped)


def main_table(n_values=(200, 600, 1000), *, reps: int = 20, confirm_reps: int = 50, rng=None,
               base: dict | None = None, progress=None) -> MainTable:
    """The paper's main experiment: each strategy at its best ``r`` and checkpoint period for each ``N``.

    Every strategy at one ``N`` is optimised on the same root seed, so they see the same failure traces, and the
    confirmation runs are paired (see :class:`MainTableRow`).
    """
    n_values = n_values_iv(n_values, "n_values", min_value=2)
    if not n_values:
        raise UsageValueError("`n_values` must hold at least one N")
    if progress is not None and not callable(progress):
        raise UsageTypeError(f"`progress` must be a callable taking one message, or None, got "
                             f"{type(progress).__name__}")
    base = _not_optimised(_base_iv(base))  # before any work
    reps = as_int(reps, "reps", min_value=2)
    confirm_reps = as_int(confirm_reps, "confirm_reps", min_value=2)
    root = root_seed_sequence(rng)
    rows = []
    for n in n_values:
        opt = {}
        for s in STRATEGIES:
            if progress:
                progress(f"N={n} {s}")
            opt[s] = optimize_strategy(s, n, reps=reps, confirm_reps=confirm_reps, rng=root, base=base)
        rows.append(MainTableRow(int(n), opt, _reduction(opt["spare"], opt["rep"])))
    cfg = TimelineConfig("spare", n_values[0], r=2, **applicable(base or {}, "spare"))
    settings = {k: v for k, v in cfg.to_dict().items() if k not in OPTIMISED}
    settings.update(base or {})  # every shared setting, including those only some strategies use
    settings.update(reps=reps, confirm_reps=confirm_reps, rng_root=root_text(root),
                    period_factors=list(PERIOD_FACTORS),
                    allreduce_model="2 + 8 (N - 200) / 800 s unless allreduce_s is set",
                    seeding="replication i at N: SeedSequence(root, spawn_key=(N, i)); grid points use "
                            "i < reps, confirmation runs reps <= i < reps + confirm_reps")
    return MainTable(tuple(rows), settings, _paper_summary())


def _paper_summary() -> dict:
    """The published row in the table's format (read from :mod:`spare_mc.model.paper`)."""
    row = paper_row(600)
    return {"rep": {"ttt_over_t0": row["rep"]["ttt_over_t0"], "availability": row["rep"]["availability"],
                    "best_r": row["rep"]["r"]},
            "spare": {"ttt_over_t0": row["spare"]["ttt_over_t0"], "availability": row["spare"]["availability"],
                      "best_r": row["spare"]["r"]},
            "ttt_reduction": row["reduction"], "n_groups": 600, "setting": paper_setting()}

