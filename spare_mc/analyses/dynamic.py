"""How much dynamic checkpointing changes the time to train: the hazard policies against the periodic one, paired.

The question (the paper expects non-periodic checkpoints to help under decreasing-hazard failures, ``k < 1``): for
CKPT-only, Rep+CKPT and SPARe+CKPT at every ``r``, ``N`` and Weibull shape ``k``, what does a checkpoint period
that follows the failure risk (:class:`spare_mc.ttt.config.TimelineConfig` ``ckpt_policy``) change, each policy at
its own best period factor?

The study
---------
1. **Screen** (one sweep per strategy and ``N``): a grid ``r x shape x ckpt_period_factor`` with a ``variant``
   dimension, one per policy (``periodic`` and the dynamic ones), up to ``screen_reps`` replications. Every
   variant sees the same failure traces at one ``N`` and shape (the seeding: common random numbers). With
   ``screen_alpha > 0`` (default 0.05) and ``screen_reps >= 8`` each *factor screen* -- the factors of one
   (policy, ``r``, shape) -- runs in looks (:func:`spare_mc.stats.screen_looks`: replications 0-3, then 4-11,
   then 12-19 for 20), and after each look but the last a factor leaves when a paired one-sided t test on its
   replication-by-replication differences from another factor of the same screen says it is worse (Bonferroni
   over the screen's ``m - 1`` other factors, ``screen_alpha / 2`` per look), or when it had a capped run and
   another has none (:func:`spare_mc.analyses.engine.screen_groups`). **Guarantee**: in each factor screen the
   factor with the least expected ``TTT/T0`` is eliminated with probability at most ``screen_alpha`` (a union
   bound; exact under normality of the paired differences, approximate otherwise). A factor that stays gets
   exactly the replications of the full screen. Across ``r`` nothing is eliminated: every ``r`` is a reported
   cell.
2. For each (strategy, ``N``, ``r``, shape, policy) the factor with the least mean ``TTT/T0`` among those with no
   capped run that stayed to the last look is chosen -- the optimisation of the periodic period, applied to every
   policy alike. Every reported number comes from the confirmation's fresh replications, so the elimination can
   change only which factor is chosen, never the estimate of a chosen point.
3. **Confirm** (one sweep per strategy and ``N``, on fresh replications ``screen_reps ..``): every chosen point,
   ``confirm_reps`` replications, again on common traces.
4. Per dynamic policy and cell: the paired difference ``D = TTT/T0 (dynamic) - TTT/T0 (periodic)`` per
   replication, its mean with a Student-t interval, the relative change ``mean(dynamic) / mean(periodic) - 1``
   with a delta-method interval, and a two-sided p-value; Holm's correction over every cell of a policy.

For CKPT-only under exponential failures (``k = 1``) the ``hazard`` policy *is* the periodic optimum (the wipe-out
hazard is ``1/M`` whatever happens), so without jitter both runs of every replication are identical and the change
is exactly 0: the study reports it so, and the tests check it. The study therefore runs without jitter by default
(``base={"jitter_sd": 0.0}``): with jitter a dynamic policy checks the period at every step boundary, so it draws
the jitter step by step where the periodic policy draws one normal sum per quiet stretch -- the same law, other
draws -- and the pairing would be looser for no modelling reason.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np

from .._lib.dist import t_ppf, t_sf
from .._lib.provenance import SCHEMA_VERSION, software_versions
from .._lib.validation import UsageValueError, as_float, as_int, check_unique
from ..model.strategies import STRATEGIES
from ..plots.studies import save_dynamic_figure
from ..sweep.cluster import shared_local_cluster
from ..sweep.runner import run_study_sweep
from ..sweep.spec import SweepSpec
from ..ttt.config import CKPT_POLICIES, TimelineConfig, applicable
from .engine import SCREEN_ALPHA, best_in_group, check_screen_alpha, screen_groups, screen_record
from .folder import StudyFolder
from .sensitivity import holm

__all__ = ["DynamicRow", "DynamicResult", "dynamic_study", "DEFAULT_R", "DEFAULT_FACTORS", "QUICK"]

#: The redundancies studied per strategy.
DEFAULT_R = {"ckpt": (1,), "rep": (2, 3, 4), "spare": (2, 3, 4, 6, 8, 10)}
#: Period factors screened for every policy (wider below 1 than the optimiser's: CKPT-only's best periodic period
#: is well below the availability optimum T_c* when the restart is long).
DEFAULT_FACTORS = (0.125, 0.18, 0.25, 0.35, 0.5, 0.71, 1.0, 1.41, 2.0, 2.83)
#: The quick flavour of the study (``spare-mc dynamic --quick``): N = 200, Weibull shapes 0.5 and 1, 6 screened
#: and 20 confirmation replications, jobs of 2,000 steps (``n_steps``: the :class:`~spare_mc.TimelineConfig` field,
#: a default of ``base``).
QUICK = {"n_values": (200,), "shapes": (0.5, 1.0), "screen_reps": 6, "confirm_reps": 20, "n_steps": 2000}


@dataclass(frozen=True)
class DynamicRow:
    """One cell: a dynamic policy against the periodic one, each at its own best factor (confirmation runs).

    ``delta`` is ``mean(TTT/T0, dynamic) - mean(TTT/T0, periodic)`` with its 95% Student-t interval
    ``delta_ci``; ``rel``/``rel_ci`` the relative change ``mean(dyn)/mean(per) - 1`` (delta method); ``p`` and
    ``p_holm`` (Holm over every cell of the policy); ``capped`` the confirmation runs of either that hit the cap;
    ``at_edge`` whether either chosen factor is the smallest or largest screened (the optimum may lie beyond it).
    """

    strategy: str
    n_groups: int
    r: int
    shape: float
    policy: str
    factor: float
    periodic_factor: float
    ttt: float
    periodic_ttt: float
    delta: float
    delta_ci: tuple
    rel: float
    rel_ci: tuple
    p: float
    p_holm: float
    reps: int
    capped: int
    identical: bool
    at_edge: bool = False

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class DynamicResult:
    """Every cell of :func:`dynamic_study`, and its settings."""

    rows: tuple
    settings: dict
    #: The files the study wrote: ``{"result": JSON path, "figure": PNG path (if drawn)}``.
    files: dict = field(default_factory=dict)

    def to_dict(self) -> dict:

        return {"schema_version": SCHEMA_VERSION, "software": software_versions(),
                "rows": [r.to_dict() for r in self.rows], "best": self.best(), "settings": self.settings,
                **self.files}

    def best(self) -> list:
        """Per (``N``, shape, policy): each strategy's best ``r`` and its mean TTT/T0 (confirmation runs), and
        SPARe's reduction over Rep ``1 - SPARe / Rep`` at their best ``r`` when both were studied. Point values: the
        cells' intervals are in :attr:`rows`."""
        out = []
        keys = sorted({(x.n_groups, x.shape) for x in self.rows})
        policies = ["periodic", *sorted({x.policy for x in self.rows})]
        for n, k in keys:
            for pol in policies:
                d = {"n_groups": n, "shape": k, "policy": pol}
                for s in STRATEGIES:
                    cells = [x for x in self.rows if (x.strategy, x.n_groups, x.shape) == (s, n, k)
                             and (pol == "periodic" or x.policy == pol)]
                    if not cells:
                        continue
                    vals = {x.r: (x.periodic_ttt if pol == "periodic" else x.ttt) for x in cells}
                    r = min(vals, key=vals.get)
                    d[s] = {"r": r, "ttt_over_t0": vals[r]}
                if "rep" in d and "spare" in d:
                    d["spare_reduction_over_rep"] = 1 - d["spare"]["ttt_over_t0"] / d["rep"]["ttt_over_t0"]
                out.append(d)
        return out

    def table(self) -> str:
        head = (f"{'strategy':<8} {'N':>5} {'r':>3} {'k':>5} {'policy':<13} {'f_dyn':>5} {'f_per':>5} "
                f"{'TTT/T0 per':>10} {'dyn':>8} {'change':>8} {'95% CI':>18} {'p_holm':>8}")
        lines = [head, "-" * len(head)]
        for x in self.rows:
            lo, hi = x.rel_ci
            lines.append(f"{x.strategy:<8} {x.n_groups:>5} {x.r:>3} {x.shape:>5g} {x.policy:<13} {x.factor:>5g} "
                         f"{x.periodic_factor:>5g} {x.periodic_ttt:>10.3f} {x.ttt:>8.3f} {100 * x.rel:>+7.2f}% "
                         f"[{100 * lo:+6.2f}, {100 * hi:+6.2f}]% {x.p_holm:>8.2g}"
                         + ("  identical runs" if x.identical else "") + (f"  {x.capped} capped" if x.capped else "")
                         + ("  factor at the edge of the grid" if x.at_edge else ""))
        lines += ["", "best r per strategy (TTT/T0) and SPARe's reduction over Rep:"]
        for d in self.best():
            parts = [f"{s} r={d[s]['r']} {d[s]['ttt_over_t0']:.3f}" for s in STRATEGIES if s in d]
            red = (f"; reduction {100 * d['spare_reduction_over_rep']:.1f}%" if "spare_reduction_over_rep" in d
                   else "")
            lines.append(f"  N={d['n_groups']:<5} k={d['shape']:<5g} {d['policy']:<13} " + ", ".join(parts) + red)
        return "\n".join(lines)


def _paired(d, p):
    """Paired comparison of per-replication vectors ``d`` (dynamic) and ``p`` (periodic)."""

    n = d.size
    diff = d - p
    mean = float(diff.mean())
    se = float(diff.std(ddof=1) / math.sqrt(n))
    tq = float(t_ppf(0.975, n - 1))
    if se < 1e-15 * max(1.0, abs(mean)):
        se = 0.0
    pval = 1.0 if se == 0 and mean == 0 else (0.0 if se == 0 else float(2 * t_sf(abs(mean / se), n - 1)))
    md, mp = float(d.mean()), float(p.mean())
    rel = md / mp - 1
    g = np.array([1 / mp, -md / mp ** 2])
    var = float(g @ np.cov(np.vstack([d, p]), ddof=1) @ g) / n
    rse = math.sqrt(max(var, 0.0)) if se > 0 else 0.0
    return mean, (mean - tq * se, mean + tq * se), rel, (rel - tq * rse, rel + tq * rse), pval


#: The :class:`~spare_mc.TimelineConfig` fields the study sets itself (never in ``base``).
STUDY_SETS = ("ckpt_policy", "ckpt_period_s", "ckpt_every_steps", "ckpt_period_factor", "shape", "r", "failures")


def _check(n_values, shapes, policies, r_values, factors, screen_reps, confirm_reps, base):
    n_values = tuple(as_int(n, "n_values", min_value=2) for n in n_values)
    shapes = tuple(as_float(k, "shapes") for k in shapes)
    policies = tuple(policies)
    factors = tuple(as_float(f, "factors") for f in factors)
    for name, values in (("n_values", n_values), ("shapes", shapes), ("policies", policies), ("factors", factors)):
        check_unique(values, name)  # a repeated value would run, and count in the Holm correction, twice
    for k in shapes:
        if not 0.05 <= k <= 50:
            raise UsageValueError(f"`shapes` must lie in [0.05, 50] (Weibull shapes), got {k}")
    bad = [p for p in policies if p not in CKPT_POLICIES or p == "periodic"]
    if bad or not policies:
        raise UsageValueError(f"`policies` must be dynamic policies among "
                              f"{sorted(set(CKPT_POLICIES) - {'periodic'})}, got {list(policies)}")
    r_values = {s: tuple(r_values.get(s, ())) for s in DEFAULT_R} if r_values else dict(DEFAULT_R)
    if not any(r_values.values()):
        raise UsageValueError("`r_values` selects no strategy")
    for s, rs in r_values.items():
        check_unique(rs, f"r_values[{s!r}]")
    if not factors or min(factors) <= 0:
        raise UsageValueError(f"`factors` must be positive, got {list(factors)}")
    screen_reps = as_int(screen_reps, "screen_reps", min_value=2)
    confirm_reps = as_int(confirm_reps, "confirm_reps", min_value=2)
    base = {"jitter_sd": 0.0, **(base or {})}
    for name in STUDY_SETS:
        if name in base:
            raise UsageValueError(f"`base` must not set {name!r}: the study sets it")
    for s, rs in r_values.items():  # every setting valid before any work
        for n in n_values:
            if any(r > n for r in rs):
                raise UsageValueError(f"the study's {s} r values {list(rs)} need N >= {max(rs)} groups, got N = "
                                      f"{n} (`n_values`)")
            for r in rs:
                for k in shapes:
                    for pol in ("periodic", *policies):
                        try:
                            TimelineConfig(s, n, r=r, shape=k, ckpt_policy=pol, **applicable(base, s))
                        except UsageValueError as exc:
                            if pol == "periodic":
                                raise
                            raise UsageValueError(f"the study compares the periodic period with ckpt_policy="
                                                  f"{pol!r}, which this setting does not allow: {exc}") from None
    return n_values, shapes, policies, r_values, factors, screen_reps, confirm_reps, base


def dynamic_study(n_values=(200, 600, 1000), *, shapes=(0.5, 0.78, 1.0), policies=("hazard", "young_hazard"),
                  r_values=None, factors=DEFAULT_FACTORS, screen_reps: int = 20, confirm_reps: int = 100, rng=0,
                  base=None, out_dir=os.path.join("data", "dynamic"), figure=None, scheduler=None, workers=None,
                  force: bool = False, progress=None, screen_alpha: float = SCREEN_ALPHA) -> DynamicResult:
    """Run the study of the module docstring into the folder ``out_dir``: its datasets (resumable sweeps, NetCDF),
    ``dynamic.json`` and, with ``figure``, the figure.

    Parameters
    ----------
    n_values, shapes : sequences
        ``N`` and Weibull shapes ``k``.
    policies : sequence of str
        Dynamic policies compared with the periodic one.
    r_values : dict, optional
        ``{strategy: r values}`` (default :data:`DEFAULT_R`; a strategy left out is not studied).
    factors : sequence of float
        ``ckpt_period_factor`` grid screened for every policy.
    screen_reps, confirm_reps : int
    rng : int
        Root seed.
    base : dict, optional
        Other :class:`TimelineConfig` fields (the paper's setting by default, without jitter: see above).
    out_dir : path
        The study's folder (:class:`spare_mc.analyses.folder.StudyFolder`: one setting per folder, checked before
        any work; another setting is refused unless ``force``, which moves its files aside).
    figure : path, optional
        A PNG of the study's figure (none by default).
    scheduler, workers :
        As :func:`spare_mc.sweep.run_sweep`.
    force : bool
        Move another setting's results aside; replace files spare-mc did not write.
    progress : callable, optional
        Called with one line per sweep.
    screen_alpha : float
        The screen's elimination (0 turns it off; :data:`spare_mc.analyses.engine.SCREEN_ALPHA` by default): with
        ``screen_reps >= 8`` every factor screen (one per strategy, ``N``, policy, ``r`` and shape) runs in looks,
        and the factors a paired test shows to be worse than another of the same screen stop early. The factor
        with the least expected ``TTT/T0`` of a screen is eliminated with probability at most ``screen_alpha``
        (see the module docstring).
    """

    n_values, shapes, policies, r_values, factors, screen_reps, confirm_reps, base = _check(
        n_values, shapes, policies, r_values, factors, screen_reps, confirm_reps, base)
    rng = as_int(rng, "rng", min_value=0)  # the sweeps' seed; before the folder records it
    screen_alpha = check_screen_alpha(screen_alpha)
    settings = {"n_values": list(n_values), "shapes": list(shapes), "policies": list(policies),
                "r_values": {s: list(r) for s, r in r_values.items()}, "factors": list(factors),
                "screen_reps": screen_reps, "confirm_reps": confirm_reps, "seed": rng, "base": base,
                "screen_alpha": screen_alpha}
    folder = StudyFolder(out_dir, "dynamic", settings, force=force, figure=figure,
                         result=("dynamic.json", ("rows", "settings"), "dynamic-checkpointing result"),
                         owns=("dynamic.json", "dynamic.png", "dynamic-*"))
    with folder, shared_local_cluster(scheduler, workers):
        return folder.write_result(_run(folder, settings, scheduler, workers, force, progress), save_dynamic_figure)


def _run(folder, settings, scheduler, workers, force, progress) -> DynamicResult:
    """The study's sweeps and rows at ``settings`` (the checked inputs), in ``folder`` (held)."""
    n_values, shapes, policies, factors = (settings[k] for k in ("n_values", "shapes", "policies", "factors"))
    screen_reps, confirm_reps, rng, base = (settings[k] for k in ("screen_reps", "confirm_reps", "seed", "base"))
    r_values = settings["r_values"]
    variants = {"periodic": {}, **{p: {"ckpt_policy": p} for p in policies}}
    alpha = settings["screen_alpha"]
    paths, rows = [], []
    screens = []  # the factor screens, for the settings' record (screen_record)

    def run(spec):
        path = folder.file(f"{spec.name}.nc", dataset=True)
        if progress:
            progress(f"{spec.name}: {spec.n_points} points x {spec.reps} replications")
        paths.append(path)
        return run_study_sweep(spec, path, scheduler=scheduler, workers=workers, force=force,
                               progress=progress is not None)

    for s, rs in r_values.items():
        if not rs:
            continue
        base_s = applicable(base, s)
        for n in n_values:
            sc = screen_groups(f"dynamic-screen-{s}-N{n}",
                               {"r": list(rs), "shape": list(shapes), "ckpt_period_factor": list(factors)},
                               "ckpt_period_factor", variants, screen_reps, rng,
                               {"strategy": s, "n_groups": n, **base_s}, alpha, folder, scheduler, workers, force,
                               progress is not None, log=progress)
            paths.extend(sc["paths"])
            screens.append(sc)
            chosen = {}
            for (v, r, k), g in sc["groups"].items():
                chosen[f"{v}|r{r}|k{k:g}"] = {**variants[v], "r": r, "shape": k,
                                              "ckpt_period_factor": float(factors[best_in_group(g)])}
            conf = run(SweepSpec(f"dynamic-confirm-{s}-N{n}", "ttt", {}, confirm_reps, confirm_reps, rng,
                                 {"strategy": s, "n_groups": n, **base_s}, variants=chosen,
                                 first_rep=screen_reps))
            for r in rs:
                for k in shapes:
                    per = conf.sel(variant=f"periodic|r{r}|k{k:g}")
                    pv = per["ttt_over_t0"].values
                    for pol in policies:
                        dyn = conf.sel(variant=f"{pol}|r{r}|k{k:g}")
                        dv = dyn["ttt_over_t0"].values
                        mean, ci, rel, rci, pval = _paired(dv, pv)
                        capped = int((per["finished"].values != 1).sum() + (dyn["finished"].values != 1).sum())
                        rows.append(dict(strategy=s, n_groups=n, r=r, shape=k, policy=pol,
                                         factor=chosen[f"{pol}|r{r}|k{k:g}"]["ckpt_period_factor"],
                                         periodic_factor=chosen[f"periodic|r{r}|k{k:g}"]["ckpt_period_factor"],
                                         ttt=float(dv.mean()), periodic_ttt=float(pv.mean()), delta=mean,
                                         delta_ci=ci, rel=rel, rel_ci=rci, p=pval, reps=int(dv.size),
                                         capped=capped, identical=bool(np.array_equal(dv, pv)),
                                         at_edge=any(chosen[f"{v}|r{r}|k{k:g}"]["ckpt_period_factor"]
                                                     in (min(factors), max(factors)) for v in ("periodic", pol))))
    for pol in policies:  # Holm over every cell of one policy
        idx = [i for i, x in enumerate(rows) if x["policy"] == pol]
        for i, ph in zip(idx, holm([rows[i]["p"] for i in idx])):
            rows[i]["p_holm"] = float(ph)
    return DynamicResult(tuple(DynamicRow(**x) for x in rows),
                         {**settings, "screen": screen_record(alpha, screens), "datasets": paths})
