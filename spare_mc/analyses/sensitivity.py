"""Does the headline hold? A paired sensitivity study of SPARe's time-to-train reduction over Rep.

For each ``N`` the study finds, for the *baseline* (the stated assumptions: :class:`~spare_mc.TimelineConfig`'s
defaults, optionally updated by ``base``) and for every *variant* (one open modelling choice changed, a named
combination of them, or a stated input scaled), each of Rep+CKPT and SPARe+CKPT at its best ``(r, T_c)`` exactly as
:func:`spare_mc.ttt.optimize.main_table` does, and measures how the reduction ``1 - E[TTT_spare] / E[TTT_rep]`` moves.

Procedure (every stage is a sweep of :mod:`spare_mc.analyses.engine`: dask-parallel, resumable, with provenance)
----------------------------------------------------------------------------------------------------------------
1. **Screen.** Per strategy, one sweep over ``n_groups x r x ckpt_period_factor`` with a ``variant`` dimension,
   up to ``reps`` replications per point (replications ``0 .. reps - 1``), in looks (4, 7, 10 for 10) that drop
   the points a paired, Bonferroni-corrected t test shows to be worse than another (``screen_alpha``: the best
   point of a screen is dropped with probability at most that; :func:`spare_mc.analyses.engine.eliminate`). The
   selected point of a (variant, N, strategy) is the least mean ``TTT/T0`` among the points with no capped run
   that stayed (the main table's rule).
2. **Confirmation (pilot).** The selected points re-run on fresh replications ``reps .. reps + pilot_reps - 1``.
3. **Extension.** From the pilot's paired standard errors, the number of replications ``n`` that brings every
   ``Delta reduction`` 95% half-width to ``target_pp`` (times 1.1, at most ``max_confirm_reps``) is computed, and
   every selected point is extended to ``n`` replications (a two-stage design: the pilot only chooses ``n``; the
   intervals use all ``n``).

Common random numbers: replication ``i`` at ``N`` draws its failure trace from ``SeedSequence(rng, spawn_key=(N,
i))`` whatever the strategy, variant, ``r`` or period (:mod:`spare_mc._lib.seeding`), so the baseline's and a variant's
confirmation runs of both strategies are four paired vectors ``(S_b, R_b, S_v, R_v)`` over the same traces. A
variant that changes nothing for a strategy (an option of the other strategy) is not re-run for it: its numbers
*are* the baseline's, by construction.

Statistics
----------
``reduction = 1 - mean(S) / mean(R)`` with the delta-method interval of :func:`spare_mc.stats.ratio_estimate`.
The change ``Delta = reduction_v - reduction_b = mean(S_b)/mean(R_b) - mean(S_v)/mean(R_v)`` has the delta-method
variance ``g' Sigma g / n`` with ``g = (1/R_b, -S_b/R_b^2, -1/R_v, S_v/R_v^2)`` (bars omitted) and ``Sigma`` the sample
covariance of the four paired vectors; the interval is Student-t with ``n - 1`` degrees of freedom, reported in
percentage points. ``p_value`` tests ``Delta = 0`` (two-sided t); ``p_holm`` is Holm's step-down adjustment over
every (variant, N) tested (Holm 1979, *Scand. J. Statist.* 6:65-70). A variant identical to the baseline for both
strategies (e.g. restart growth at its reference ``N``) has ``Delta = 0`` exactly and ``p = 1``.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np

from .._lib.dist import t_ppf, t_sf
from .._lib.provenance import SCHEMA_VERSION, software_versions
from .._lib.resources import usable_cpus
from .._lib.validation import UsageError, UsageTypeError, UsageValueError, as_int, check_unique
from ..model.strategies import REDUNDANT_STRATEGIES
from ..plots.studies import figure_sensitivity, save_sensitivity_figure
from ..stats import MCEstimate, estimate_mean, ratio_estimate
from ..ttt.config import TimelineConfig, applicable
from ..ttt.optimize import PERIOD_FACTORS, n_values_iv, period_factors_iv
from .folder import StudyFolder
from .engine import (R_RANGES, SCREEN_ALPHA, check_base, check_fields, check_r_ranges, check_screen_alpha, confirm_spec,
                     pick, run_stage, screen, screen_looks, study_cluster, timed_r)

__all__ = ["Variant", "default_variants", "sensitivity", "SensitivityResult", "SensitivityRow", "SelectedPoint",
           "paired_delta_reduction", "holm", "estimate_cost", "check_sensitivity_inputs", "R_RANGES"]



@dataclass(frozen=True)
class Variant:
    """One row of the study: a named set of :class:`~spare_mc.TimelineConfig` overrides of the baseline.

    Attributes
    ----------
    name : str
        Unique, used as the dataset's ``variant`` coordinate.
    kind : {"option", "combination", "input"}
        An open modelling choice, a named combination of them, or a stated input varied over a plausible range.
    option : str
        The field changed (``"a+b"`` for a combination).
    value : object
        Its value (a dict for a combination).
    overrides : dict
        The fields set (e.g. ``{"rep_masked_cost": "resync", "rep_resync_s": 60.0}``).
    why : str
        What the variant means physically.
    """

    name: str
    kind: str
    option: str
    value: object
    overrides: dict
    why: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or self.name == "baseline" or "@" in self.name:
            raise UsageValueError(f"a variant's `name` must be a non-empty string other than 'baseline' and without "
                                  f"'@', got {self.name!r}")
        if self.kind not in ("option", "combination", "input"):
            raise UsageValueError(f"`kind` must be 'option', 'combination' or 'input', got {self.kind!r}")
        if not isinstance(self.overrides, dict) or not self.overrides:
            raise UsageValueError(f"variant {self.name!r}: `overrides` must be a non-empty dict of TimelineConfig "
                                  f"fields")
        check_fields(self.overrides, f"variant {self.name!r}")

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "option": self.option, "value": self.value,
                "overrides": dict(self.overrides), "why": self.why}


def default_variants(base: dict | None = None, *, left_out: bool = False) -> tuple:
    """The study's default variants: every open modelling choice (one at a time), two combinations, and the stated
    inputs ``mtbf_s``, ``restart_s``, ``save_s``, ``compute_s`` at x0.5 and x2 and the Weibull shape at 0.6-1.
    A variant that sets only the baseline's own values (``layout_sidon`` under ``base={"layout": "sidon"}``) would
    change nothing and is left out; ``left_out=True`` returns those instead (so that a caller asking for one by
    name can say why it is not there).

    ``base`` (the baseline's overrides) sets the values the stated inputs are scaled from. Left out, with reasons
    (see ``docs/sensitivity.md``): ``ckpt_every_steps`` (another checkpoint policy, whose ``k`` the optimiser would
    have to search instead of the period), the per-GPU ``calibration`` (the paper's failures are system-level),
    ``rep_allreduce`` and ``restart_growth`` are in the list but act only through ``N`` (at ``N`` = 600 the latter
    is the baseline exactly). A ``restart_ref_groups`` in ``base`` under constant restart growth is the reference
    ``N`` of the two restart-growth variants (:func:`_hand_restart_ref`).
    """
    base = check_base(base)
    cfg = TimelineConfig("spare", 600, r=2, **applicable(_hand_restart_ref(base, ())[0], "spare"))
    v = [
        Variant("rep_redo_step", "option", "rep_masked_cost", "redo_step", {"rep_masked_cost": "redo_step"},
                "Rep: a masked failure also recomputes the step in progress"),
        Variant("rep_resync_60s", "option", "rep_masked_cost", "resync 60 s",
                {"rep_masked_cost": "resync", "rep_resync_s": 60.0},
                "Rep: a masked failure costs a 60 s re-synchronisation of the replica (the state copied from a peer "
                "takes about one checkpoint save)"),
        Variant("masked_detect_30s", "option", "masked_detect_s", 30.0, {"masked_detect_s": 30.0},
                "Rep and SPARe: every detection of a masked failure costs a 30 s timeout"),
        Variant("restart_stay_dead", "option", "restart_failures", "stay_dead", {"restart_failures": "stay_dead"},
                "groups that fail during a global restart stay dead when the job resumes"),
        Variant("patch_none", "option", "patch_cost", "none", {"patch_cost": "none"},
                "SPARe: orphaned shards need no patch compute"),
        Variant("patch_whole_step", "option", "patch_cost", "whole_step", {"patch_cost": "whole_step"},
                "SPARe: a reorder redoes the whole step"),
        Variant("rep_allreduce_per_replica", "option", "rep_allreduce", "per_replica",
                {"rep_allreduce": "per_replica"}, "Rep: one all-reduce per replica layer (N / n_sets x T_a)"),
        Variant("restart_linear", "option", "restart_growth", "linear", {"restart_growth": "linear"},
                "restart time grows linearly with N (T_r at the reference N)"),
        Variant("restart_quadratic", "option", "restart_growth", "quadratic", {"restart_growth": "quadratic"},
                "restart time grows quadratically with N (T_r at the reference N)"),
        Variant("ckpt_lost", "option", "ckpt_failure", "lost", {"ckpt_failure": "lost"},
                "a failure during a checkpoint save loses that checkpoint"),
        Variant("layout_sidon", "option", "layout", "sidon", {"layout": "sidon"},
                "SPARe: Sidon offsets (two shard types share at most one holder)"),
        Variant("layout_random", "option", "layout", "random", {"layout": "random"},
                "SPARe: random holders, one layout per job"),
        Variant("no_jitter", "option", "jitter_sd", 0.0, {"jitter_sd": 0.0},
                "no step-time jitter (every step takes exactly T_comp + T_a)"),
        Variant("sidon+stay_dead", "combination", "layout+restart_failures", {"layout": "sidon",
                "restart_failures": "stay_dead"}, {"layout": "sidon", "restart_failures": "stay_dead"},
                "the two choices that move the optima toward the paper's r"),
        Variant("sidon+stay_dead+redo_step", "combination", "layout+restart_failures+rep_masked_cost",
                {"layout": "sidon", "restart_failures": "stay_dead", "rep_masked_cost": "redo_step"},
                {"layout": "sidon", "restart_failures": "stay_dead", "rep_masked_cost": "redo_step"},
                "the above, and a masked failure costs Rep its step in progress"),
    ]
    if cfg_rep_resync(base):  # a resync baseline: a variant that switches Rep's masked cost away resets its time
        v = [replace(x, overrides={**x.overrides, "rep_resync_s": 0.0})
             if x.overrides.get("rep_masked_cost") not in (None, "resync") else x for x in v]
    for fld, label in (("mtbf_s", "system MTBF"), ("restart_s", "restart time T_r"), ("save_s", "save time T_s"),
                       ("compute_s", "step compute T_comp")):
        for f in (0.5, 2.0):
            val = float(getattr(cfg, fld)) * f
            v.append(Variant(f"{fld}_x{f:g}", "input", fld, val, {fld: val}, f"{label} x{f:g} ({val:g} s)"))
    for k in (0.6, 0.7, 0.9, 1.0):
        v.append(Variant(f"shape_{k:g}", "input", "shape", k, {"shape": k},
                         f"Weibull shape k = {k:g} (1: exponential)"))
    # a variant that sets the baseline's own values changes nothing (Delta = 0 by construction): left out
    changes = [any(base.get(k, getattr(cfg, k)) != val for k, val in x.overrides.items()) for x in v]
    if left_out:
        return tuple(x for x, c in zip(v, changes) if not c)
    return _hand_restart_ref(base, tuple(x for x, c in zip(v, changes) if c))[1]


def _hand_restart_ref(base: dict, variants: tuple) -> tuple:
    """``(base, variants)`` with ``base``'s ``restart_ref_groups`` moved into the variants whose restart time grows
    with ``N``, where the baseline's does not (``restart_growth`` constant): there it has no effect on the baseline
    (whose restart time is ``restart_s`` at every ``N``) and is the reference ``N`` of those variants; a variant
    that sets its own keeps it. An error if no variant grows the restart time (``variants=()``: only ``base``)."""
    if "restart_ref_groups" not in base or base.get("restart_growth", "constant") != "constant":
        return base, variants
    base = dict(base)
    ref = base.pop("restart_ref_groups")
    growing = [v.overrides.get("restart_growth", "constant") != "constant" for v in variants]
    if variants and not any(growing):
        raise UsageValueError(f"`restart_ref_groups`={ref} has no effect: the baseline's restart time is constant "
                              f"and no variant grows it (restart_growth 'linear' or 'quadratic')")
    return base, tuple(replace(v, overrides={"restart_ref_groups": ref, **v.overrides}) if g else v
                       for v, g in zip(variants, growing))


def cfg_rep_resync(base) -> bool:
    """Whether ``base`` sets a positive re-synchronisation time for Rep."""
    return bool(base) and float(base.get("rep_resync_s", 0.0) or 0.0) > 0


# ----------------------------------------------------------------------------------------------- statistics
def paired_delta_reduction(s_b, r_b, s_v, r_v, level: float = 0.95) -> MCEstimate:
    """The change of the reduction ``1 - mean(S)/mean(R)`` from baseline ``b`` to variant ``v``, from four paired
    vectors of per-replication ``TTT/T0`` (same traces), as an :class:`MCEstimate` in percentage points.

    Delta method (see the module docstring): ``Delta = mean(S_b)/mean(R_b) - mean(S_v)/mean(R_v)``, ``se^2 =
    g' Sigma g / n``. When a variant is the baseline for both strategies the four vectors are two pairs of equal
    vectors and ``Delta = se = 0``.
    """
    arrs = [np.asarray(a, dtype=np.float64) for a in (s_b, r_b, s_v, r_v)]
    shapes = [a.shape for a in arrs]
    if len(set(shapes)) != 1 or len(shapes[0]) != 1 or shapes[0][0] < 2 or not all(np.isfinite(a).all()
                                                                                  for a in arrs):
        raise UsageValueError(f"the four paired vectors must be finite, 1-d, of one length >= 2, got shapes {shapes}")
    x = np.vstack(arrs)
    n = x.shape[1]
    m = x.mean(axis=1)
    if (m[[1, 3]] <= 0).any():
        raise UsageValueError("Rep's mean TTT/T0 must be positive")
    delta = m[0] / m[1] - m[2] / m[3]
    g = np.array([1 / m[1], -m[0] / m[1] ** 2, -1 / m[3], m[2] / m[3] ** 2])
    var = float(g @ np.cov(x, ddof=1) @ g) / n
    se = math.sqrt(max(var, 0.0))
    if se < 1e-15 * max(1.0, abs(delta)):
        se = 0.0
    return MCEstimate("delta_reduction_pp", 100 * float(delta), 100 * se, 100 * se * math.sqrt(n), n, level)


def _t_p_value(est: MCEstimate) -> float:

    if est.se == 0:
        return 1.0 if est.mean == 0 else 0.0
    return float(2 * t_sf(abs(est.mean / est.se), est.n - 1))


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values (monotone, capped at 1), in the input order."""
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    m = p.size
    adj = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adj[i] = running
    return adj


# -------------------------------------------------------------------------------------------------- results
@dataclass(frozen=True, eq=False)
class SelectedPoint:
    """One strategy's optimum for one (variant, N): the point the screen chose and its confirmation runs."""

    strategy: str
    r: int
    ckpt_period_factor: float
    ckpt_period_s: float
    ttt: MCEstimate
    availability: MCEstimate
    values: np.ndarray = field(repr=False)
    screen_ttt_over_t0: float = math.nan

    def to_dict(self) -> dict:
        return {"r": self.r, "ckpt_period_s": self.ckpt_period_s, "ckpt_period_factor": self.ckpt_period_factor,
                "ttt_over_t0": self.ttt.mean, "ttt_over_t0_ci95": list(self.ttt.ci),
                "availability": self.availability.mean, "availability_ci95": list(self.availability.ci),
                "capped": self.ttt.censored, "reps": self.ttt.n}


@dataclass(frozen=True, eq=False)
class SensitivityRow:
    """The optima of both strategies at one ``N`` for the baseline or one variant, the reduction and (variants)
    its paired change from the baseline."""

    n_groups: int
    rep: SelectedPoint
    spare: SelectedPoint
    reduction: MCEstimate
    delta: MCEstimate | None = None
    p_value: float | None = None
    p_holm: float | None = None
    #: the variant's confirmation runs of both strategies equal the baseline's, run for run: a setting with no
    #: effect here (e.g. jitter turned off where the baseline has none), not a measured zero
    identical: bool = False

    def to_dict(self) -> dict:
        d = {"rep": self.rep.to_dict(), "spare": self.spare.to_dict(), "reduction": self.reduction.mean,
             "reduction_ci95": list(self.reduction.ci)}
        if self.delta is not None:
            d.update(delta_reduction_pp=self.delta.mean, delta_reduction_pp_ci95=list(self.delta.ci),
                     p_value=self.p_value, p_holm=self.p_holm, identical=self.identical)
        return d


@dataclass(frozen=True, eq=False)
class SensitivityResult:
    """Outcome of :func:`sensitivity`: the baseline row and each variant's rows per ``N``."""

    n_values: tuple
    baseline: dict
    variants: tuple  # of (Variant, {N: SensitivityRow})
    settings: dict
    datasets: dict = field(default_factory=dict)
    elapsed_s: float = 0.0
    #: The files the study wrote: ``{"result": JSON path, "figure": PNG path (if drawn)}``.
    files: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """What ``spare-mc sensitivity --json`` prints."""
        return {"schema_version": SCHEMA_VERSION, "software": software_versions(),
                "n_groups": list(self.n_values),
                "baseline": {str(n): row.to_dict() for n, row in self.baseline.items()},
                "variants": [{**var.to_dict(), "rows": {str(n): row.to_dict() for n, row in rows.items()}}
                             for var, rows in self.variants],
                "settings": self.settings, "datasets": self.datasets, "elapsed_s": self.elapsed_s, **self.files}

    def row(self, name: str, n_groups: int) -> SensitivityRow:
        """The row of variant ``name`` (or ``"baseline"``) at ``n_groups``."""
        if name == "baseline":
            return self.baseline[n_groups]
        for var, rows in self.variants:
            if var.name == name:
                return rows[n_groups]
        raise UsageValueError(f"no variant named {name!r}; expected 'baseline' or one of "
                              f"{[v.name for v, _ in self.variants]}")

    def table(self) -> str:
        """A plain-text table: per ``N``, the baseline then each variant with both optima and the change."""
        lines = []
        for n in self.n_values:
            b = self.baseline[n]
            capped = b.rep.ttt.censored + b.spare.ttt.censored
            lines.append(f"N = {n}: baseline reduction {100 * b.reduction.mean:.1f}% "
                         f"[{100 * b.reduction.ci[0]:.1f}, {100 * b.reduction.ci[1]:.1f}] "
                         f"(Rep r={b.rep.r} {b.rep.ttt.mean:.3f}, SPARe r={b.spare.r} {b.spare.ttt.mean:.3f})"
                         + (f" ({capped} capped runs: restricted means)" if capped else ""))
            lines.append(f"  {'variant':<28} {'Rep r':>5} {'TTT/T0':>7} {'SPARe r':>7} {'TTT/T0':>7} "
                         f"{'reduction':>9} {'delta pp':>9} {'95% CI':>16} {'p_holm':>8}")
            rows = sorted(((var, rows[n]) for var, rows in self.variants), key=lambda vr: -abs(vr[1].delta.mean))
            for var, row in rows:
                ci = f"[{row.delta.ci[0]:+.1f}, {row.delta.ci[1]:+.1f}]"
                capped = row.rep.ttt.censored + row.spare.ttt.censored
                lines.append(f"  {var.name:<28} {row.rep.r:>5} {row.rep.ttt.mean:>7.3f} {row.spare.r:>7} "
                             f"{row.spare.ttt.mean:>7.3f} {100 * row.reduction.mean:>8.1f}% "
                             f"{row.delta.mean:>+9.1f} {ci:>16} {row.p_holm:>8.2g}"
                             + ("  identical runs" if row.identical else "")
                             + (f"  ({capped} capped runs: restricted means)" if capped else ""))
        return "\n".join(lines)

    def figure(self):
        """The tornado figure (:func:`spare_mc.plots.studies.figure_sensitivity`)."""

        return figure_sensitivity(self)


# ------------------------------------------------------------------------------------------------ the study
def _r_values(strategy, n_values, r_ranges):
    lo, hi = r_ranges[strategy]
    rs = list(range(max(2, lo), min(hi, min(n_values)) + 1))
    if not rs:
        raise UsageValueError(f"`r_ranges[{strategy!r}]`={r_ranges[strategy]} leaves no r in 2..{min(n_values)}")
    return rs


def _strategy_overrides(variants, strategy):
    """``{name: overrides}`` of the variants that change something for ``strategy`` (the baseline first)."""
    out = {"baseline": {}}
    for v in variants:
        over = applicable(v.overrides, strategy)
        if over:
            out[v.name] = over
    return out


def _check_out_dir(out_dir, default) -> str:
    """The output folder as text; an existing non-folder or a non-path is a usage error."""
    if out_dir is None:
        out_dir = default
    if not isinstance(out_dir, (str, os.PathLike)) or isinstance(out_dir, bytes) or not os.fspath(out_dir):
        raise UsageTypeError(f"`out_dir` must be a folder path, got {out_dir!r}")
    out_dir = os.fspath(out_dir)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageValueError(f"`out_dir` {out_dir} exists and is not a folder")
    return out_dir


def _check_inputs(n_values, variants, reps, pilot_reps, target_pp, max_confirm_reps, rng, base, r_ranges,
                  period_factors):
    n_values = n_values_iv(n_values, "n_values")
    if not n_values:
        raise UsageValueError("`n_values` must name at least one N, each once, got []")
    base = check_base(base)
    variants = default_variants(base) if variants is None else tuple(variants)
    for v in variants:
        if not isinstance(v, Variant):
            raise UsageTypeError(f"`variants` must hold Variant objects, got {type(v).__name__}")
    base, variants = _hand_restart_ref(base, variants)
    check_unique([v.name for v in variants], "variants' names")
    reps = as_int(reps, "reps", min_value=2)
    pilot_reps = as_int(pilot_reps, "pilot_reps", min_value=4)
    max_confirm_reps = as_int(max_confirm_reps, "max_confirm_reps", min_value=1)
    if max_confirm_reps < pilot_reps:  # the bound is the pilot's: say so
        raise UsageValueError(f"`max_confirm_reps` must be >= `pilot_reps` ({pilot_reps}: the pilot's replications "
                              f"are part of the confirmation), got {max_confirm_reps}")
    if isinstance(target_pp, bool) or not isinstance(target_pp, (int, float, np.integer, np.floating)):
        raise UsageTypeError(f"`target_pp` must be a number of percentage points, got {target_pp!r}")
    target_pp = float(target_pp)
    if not (0 < target_pp < 100):
        raise UsageValueError(f"`target_pp` must be in (0, 100) percentage points, got {target_pp}")
    rng = as_int(0 if rng is None else rng, "rng", min_value=0)
    r_ranges = check_r_ranges(r_ranges)
    period_factors = period_factors_iv(period_factors)
    for s in REDUNDANT_STRATEGIES:  # every variant valid at every N before any work
        for n in n_values:
            for name, over in _strategy_overrides(variants, s).items():
                try:
                    TimelineConfig(s, n, r=2, **{**applicable(base, s), **over})
                except UsageError as exc:
                    raise type(exc)(f"variant {name!r} at N={n}, {s}: {exc}") from None
    return n_values, variants, reps, pilot_reps, target_pp, max_confirm_reps, rng, base, r_ranges, period_factors


def estimate_cost(n_values=(600,), *, variants=None, reps=10, pilot_reps=40, base=None, r_ranges=None,
                  period_factors=PERIOD_FACTORS, workers=None, confirm_reps=None,
                  screen_alpha=SCREEN_ALPHA) -> dict:
    """Expected wall time of :func:`sensitivity` in seconds, from a few timed jobs of the baseline.

    Times one job per strategy and ``N`` at the lowest and highest ``r`` (after compiling), interpolates linearly in
    ``r``, and multiplies by the number of jobs each stage runs (``confirm_reps``: the expected final number of
    confirmation replications, default ``2 x pilot_reps``), divided by the workers (90% efficiency). A variant
    costs what the baseline costs (a shorter MTBF costs more: the estimate is rough, within a factor of about 1.5).
    With the screen's elimination (``screen_alpha > 0``, ``reps >= 8``) every point is counted for the first look
    and, after it, half the points for the second look's replications and a quarter for the last (about what the
    default study keeps).
    """

    (n_values, variants, reps, pilot_reps, _, _, _, base, r_ranges,
     period_factors) = _check_inputs(n_values, variants, reps, pilot_reps, 1.0, max(pilot_reps, 4), 0, base,
                                     r_ranges, period_factors)
    confirm_reps = 2 * pilot_reps if confirm_reps is None else confirm_reps
    looks = screen_looks(reps) if check_screen_alpha(screen_alpha) > 0 else (reps,)
    screen_reps = looks[0] + (0.5 * (looks[1] - looks[0]) + 0.25 * (looks[2] - looks[1]) if len(looks) > 1 else 0)
    workers = usable_cpus() if workers is None else max(1, int(workers))
    screen = confirm = 0.0
    for s in REDUNDANT_STRATEGIES:
        n_var = len(_strategy_overrides(variants, s))
        for n in n_values:
            rs, per_r = timed_r(s, n, r_ranges[s], base)
            screen += n_var * screen_reps * len(period_factors) * float(per_r.sum())
            confirm += n_var * confirm_reps * float(per_r.mean())
    total = (screen + confirm) / (0.9 * workers) if workers > 1 else screen + confirm  # workers=0: this process
    if workers > 0:  # one local dask cluster for the study (about 4 s on 2 cores), about 1 s per stage's sweep
        n_sweeps = 2 * len(n_values) + 4 + 2 * (len(looks) - 1)
        total += 4.0 + 1.0 * n_sweeps
    return {"expected_s": total, "screen_cpu_s": screen, "confirm_cpu_s": confirm, "workers": workers}


def check_sensitivity_inputs(n_values=(600,), *, variants=None, reps=10, pilot_reps=40, target_pp=1.0,
                             max_confirm_reps=400, rng=0, base=None, r_ranges=None, period_factors=PERIOD_FACTORS,
                             out_dir=None, figure=None, force=False, screen_alpha=SCREEN_ALPHA):
    """Validate the arguments of :func:`sensitivity` (every variant at every ``N``, and its output folder, result
    file and figure) without running or writing anything."""
    checked = _check_inputs(n_values, variants, reps, pilot_reps, target_pp, max_confirm_reps, rng, base, r_ranges,
                            period_factors)
    _folder(checked, _check_out_dir(out_dir, os.path.join("data", "sensitivity")), figure, force,
            check_screen_alpha(screen_alpha))


def _folder(checked, out_dir, figure, force, screen_alpha) -> StudyFolder:
    """The study's :class:`~spare_mc.analyses.folder.StudyFolder` at the checked inputs (checked now)."""
    n_values, variants, reps, pilot_reps, target_pp, max_confirm_reps, rng, base, r_ranges, period_factors = checked
    inputs = {"n_values": list(n_values), "variants": [v.to_dict() for v in variants], "reps": reps,
              "pilot_reps": pilot_reps, "target_pp": target_pp, "max_confirm_reps": max_confirm_reps, "seed": rng,
              "base": base, "r_ranges": {s: list(r_ranges[s]) for s in REDUNDANT_STRATEGIES},
              "period_factors": list(period_factors), "screen_alpha": screen_alpha}
    return StudyFolder(out_dir, "sensitivity", inputs, force=force, figure=figure,
                       result=("sensitivity.json", ("variants", "baseline"), "sensitivity result"),
                       owns=("sensitivity.json", "sensitivity.png", "sensitivity-*"))


def sensitivity(n_values=(600,), *, variants=None, reps: int = 10, pilot_reps: int = 40, target_pp: float = 1.0,
                max_confirm_reps: int = 400, rng=0, base: dict | None = None, r_ranges=None,
                period_factors=PERIOD_FACTORS, out_dir=None, figure=None, scheduler=None, workers=None, force=False,
                progress=None, screen_alpha: float = SCREEN_ALPHA) -> SensitivityResult:
    """The paired sensitivity study of the module docstring.

    Parameters
    ----------
    n_values : int or sequence of int
        The ``N`` studied (default 600, the paper's one published row).
    variants : sequence of Variant, optional
        Default :func:`default_variants` of ``base``.
    reps : int
        Replications per point of the screen (``0 .. reps - 1``).
    pilot_reps : int
        Confirmation replications of the pilot stage.
    target_pp : float
        The 95% half-width, in percentage points, every ``Delta reduction`` should reach.
    max_confirm_reps : int
        The most confirmation replications per point (if the target needs more, the study stops there and
        ``settings["target_met"]`` is False).
    rng : int
        The root seed (a non-negative int: the sweeps' seed).
    base : dict, optional
        The baseline's :class:`~spare_mc.TimelineConfig` overrides (shared by both strategies; each takes the
        options it has). A ``restart_ref_groups`` under constant restart growth is the reference ``N`` of the
        variants that grow the restart time.
    r_ranges : dict, optional
        ``{"rep": (lo, hi), "spare": (lo, hi)}`` (default :data:`R_RANGES`).
    period_factors : sequence of float
        ``T_c = f x T_c*`` grid (default the optimiser's).
    out_dir : path, optional
        The study's folder (default ``data/sensitivity``): its datasets and ``sensitivity.json``; finished work is
        kept there and reused by a rerun. One setting per folder (:class:`spare_mc.analyses.folder.StudyFolder`,
        checked before any work): another setting is refused unless ``force``, which moves its files aside.
    figure : path, optional
        A PNG of the study's figure (none by default).
    scheduler, workers, force :
        As for :func:`spare_mc.sweep.runner.run_sweep` (``workers=0``: in this process); ``force`` also moves
        another setting's results aside.
    progress : callable, optional
        Called with a line of text at each stage; also turns the sweeps' progress lines on.
    screen_alpha : float
        The screen's elimination error (default :data:`~spare_mc.analyses.engine.SCREEN_ALPHA`, 0.05): with
        ``reps >= 8`` the screen runs in looks (4, 7, 10 replications for 10) and drops, after each but the last,
        the points a Bonferroni-corrected paired t test shows to be worse than another; the grid point with the
        least expected ``TTT/T0`` of a screen is dropped with probability at most ``screen_alpha`` (under
        normality of the paired differences). 0: every point runs ``reps`` replications.
    """
    t_start = time.perf_counter()
    checked = _check_inputs(n_values, variants, reps, pilot_reps, target_pp, max_confirm_reps, rng, base, r_ranges,
                            period_factors)
    n_values, variants, reps, pilot_reps, target_pp, max_confirm_reps, rng, base, r_ranges, period_factors = checked
    out_dir = _check_out_dir(out_dir, os.path.join("data", "sensitivity"))
    if progress is not None and not callable(progress):
        raise UsageTypeError(f"`progress` must be a callable taking a line of text, got {progress!r}")
    screen_alpha = check_screen_alpha(screen_alpha)
    folder = _folder(checked, out_dir, figure, force, screen_alpha)
    with folder, study_cluster(scheduler, workers):
        res = _run(folder, checked, scheduler, workers, force, progress, screen_alpha)
        return folder.write_result(replace(res, elapsed_s=time.perf_counter() - t_start), save_sensitivity_figure)


def _run(folder, checked, scheduler, workers, force, progress, screen_alpha) -> SensitivityResult:
    """The study of :func:`sensitivity` on its checked inputs (``_check_inputs``), in ``folder`` (held)."""
    t_start = time.perf_counter()
    n_values, variants, reps, pilot_reps, target_pp, max_confirm_reps, rng, base, r_ranges, period_factors = checked
    log = progress or (lambda msg: None)
    show = progress is not None
    datasets = {}
    # 1. screen
    chosen = {s: {} for s in REDUNDANT_STRATEGIES}
    picks, skipped_r, all_screens = {}, {}, []
    for s in REDUNDANT_STRATEGIES:
        named = _strategy_overrides(variants, s)
        screens, paths, skipped = screen("sensitivity-screen", s, named, n_values, reps, rng, base, r_ranges,
                                          period_factors, folder, scheduler, workers, force, show, log,
                                          alpha=screen_alpha)
        datasets.update({os.path.splitext(os.path.basename(p))[0]: p for p in paths})
        skipped_r.update({f"{s}:{name}@{n}": r for (name, n), r in skipped.items()})
        all_screens += list(screens.values())
        for vname, over in named.items():
            for n in n_values:
                r, f, m, _ = pick(screens[(vname, n)])
                picks[(s, vname, n)] = (r, f, m)
                chosen[s][f"{vname}@{n}"] = {"n_groups": n, "r": r, "ckpt_period_factor": f, **over}
    # 2. pilot confirmation, 3. extension to the replications the target needs
    confirm = {}
    for s in REDUNDANT_STRATEGIES:
        spec = confirm_spec(f"sensitivity-confirm-{s}", s, chosen[s], reps, pilot_reps, rng, base, pilot_reps)
        log(f"confirmation {s}: {len(chosen[s])} points x {pilot_reps} fresh replications")
        confirm[s], datasets[spec.name] = run_stage(spec, folder, scheduler, workers, force, show)
    vals = {s: {k: confirm[s]["ttt_over_t0"].sel(variant=k).values for k in chosen[s]} for s in REDUNDANT_STRATEGIES}
    need = _needed_reps(vals, variants, n_values, target_pp, pilot_reps)
    n_final = min(need, max_confirm_reps)
    if n_final > pilot_reps:
        extra = n_final - pilot_reps
        for s in REDUNDANT_STRATEGIES:
            spec = confirm_spec(f"sensitivity-extend-{s}", s, chosen[s], reps + pilot_reps, extra, rng, base,
                                 min(extra, 40))
            log(f"extension {s}: {len(chosen[s])} points x {extra} more replications (target half-width "
                f"{target_pp:g} pp)")
            ext, datasets[spec.name] = run_stage(spec, folder, scheduler, workers, force, show)
            confirm[s] = [confirm[s], ext]
    else:
        confirm = {s: [confirm[s]] for s in REDUNDANT_STRATEGIES}
    # each point's replications reps .. reps + n_final - 1, in order: the pilot, then the extension
    confirm = {s: {q: {k: np.concatenate([ds[q].sel(variant=k).values for ds in confirm[s]]) for k in chosen[s]}
                   for q in ("ttt_over_t0", "availability", "finished")} for s in REDUNDANT_STRATEGIES}
    # rows
    def point(s, vname, n):
        key = vname if f"{vname}@{n}" in chosen[s] else "baseline"
        r, f, m = picks[(s, key, n)]
        c = confirm[s]
        k = f"{key}@{n}"
        ttt = c["ttt_over_t0"][k]
        capped = int((c["finished"][k] == 0).sum())
        over = dict(chosen[s][k])
        for x in ("n_groups", "r", "ckpt_period_factor"):
            over.pop(x)
        period = TimelineConfig(s, n, r=r, ckpt_period_factor=f, **{**applicable(base, s), **over}).ckpt_period
        return SelectedPoint(s, r, f, period, estimate_mean(ttt, "ttt_over_t0", support="nonnegative",
                                                            censored=capped),
                             estimate_mean(c["availability"][k], "availability", support="unit"), ttt, m)

    def reduction(sp, rp):
        est = ratio_estimate(sp.values, rp.values, name="ttt_ratio")
        return MCEstimate("ttt_reduction", 1.0 - est.mean, est.se, est.sd, est.n, est.level, "at_most_one",
                          sp.ttt.censored + rp.ttt.censored)

    baseline = {}
    for n in n_values:
        rp, sp = point("rep", "baseline", n), point("spare", "baseline", n)
        baseline[n] = SensitivityRow(n, rp, sp, reduction(sp, rp))
    out, ps = [], []
    for v in variants:
        rows = {}
        for n in n_values:
            rp, sp = point("rep", v.name, n), point("spare", v.name, n)
            b = baseline[n]
            d = paired_delta_reduction(b.spare.values, b.rep.values, sp.values, rp.values)
            p = _t_p_value(d)
            ps.append(p)
            same = bool(np.array_equal(b.spare.values, sp.values) and np.array_equal(b.rep.values, rp.values))
            rows[n] = SensitivityRow(n, rp, sp, reduction(sp, rp), d, p, identical=same)
        out.append((v, rows))
    adj = iter(holm(ps)) if ps else iter(())
    out = [(v, {n: replace(row, p_holm=float(next(adj))) for n, row in rows.items()}) for v, rows in out]
    worst = max((row.delta.ci[1] - row.delta.mean for _, rows in out for row in rows.values()), default=0.0)
    settings = {"reps": reps, "pilot_reps": pilot_reps, "confirm_reps": max(n_final, pilot_reps),
                "confirm_reps_needed": need, "target_pp": target_pp, "max_confirm_reps": max_confirm_reps,
                "max_half_width_pp": worst, "target_met": bool(worst <= target_pp), "rng_root": str(rng),
                "base": base, "r_ranges": {s: list(r_ranges[s]) for s in REDUNDANT_STRATEGIES},
                "period_factors": list(period_factors),
                "seeding": "replication i at N: SeedSequence(root, spawn_key=(N, i)); screen i < reps, "
                           "confirmation reps <= i < reps + confirm_reps (both strategies, every variant)",
                "selection": "least mean TTT/T0 over r x period factor among points with no capped run",
                "screen": {"alpha": screen_alpha, "looks": list(screen_looks(reps) if screen_alpha > 0 else (reps,)),
                           "points": sum(int(sc["alive"].size) for sc in all_screens),
                           "points_to_the_end": sum(int(sc["alive"].sum()) for sc in all_screens),
                           "replications": sum(int(sc["n"].sum()) for sc in all_screens),
                           "rule": "after each look but the last, a point leaves when a paired one-sided t test "
                                   "(Bonferroni over the grid's other points and the looks) shows it worse than "
                                   "another; the best point leaves with probability <= alpha"},
                "multiple_testing": "Holm over every (variant, N)",
                "skipped_r": skipped_r}
    return SensitivityResult(n_values, baseline, tuple(out), settings, datasets, time.perf_counter() - t_start)


def _needed_reps(vals, variants, n_values, target_pp, n_pilot) -> int:
    """Confirmation replications for every paired Delta half-width <= target (x1.1), from the pilot."""

    need = n_pilot
    tq = t_ppf(0.975, n_pilot - 1)
    for v in variants:
        for n in n_values:
            def get(s, name):
                k = f"{name}@{n}"
                return vals[s][k] if k in vals[s] else vals[s][f"baseline@{n}"]
            d = paired_delta_reduction(get("spare", "baseline"), get("rep", "baseline"), get("spare", v.name),
                                       get("rep", v.name))
            hw = float(tq * d.se)
            if hw > target_pp:
                ratio = hw / target_pp
                want = 1.1 * n_pilot * ratio * ratio
                if not math.isfinite(want):  # a tiny target_pp (1e-300): the count exceeds a float, not an int
                    want = Fraction(1.1) * n_pilot * (Fraction(hw) / Fraction(target_pp)) ** 2
                need = max(need, math.ceil(want))
    return need
