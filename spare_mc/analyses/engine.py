"""The engine of the studies of each strategy at its best ``(r, T_c)``: screen, pick, confirm, by sweeps.

The sensitivity study (:mod:`spare_mc.analyses.sensitivity`) and the calibration (:mod:`spare_mc.analyses.calibrate`)
find, for many override sets (variants, candidate settings) at once, each of Rep+CKPT and SPARe+CKPT at its best
``(r, T_c)`` as :func:`spare_mc.ttt.optimize.main_table` does, but with every stage a resumable sweep
(:func:`spare_mc.sweep.run_study_sweep`: dask-parallel, a dataset with provenance):

1. :func:`screen`: per strategy, sweeps over ``n_groups x r x ckpt_period_factor`` with a ``variant`` dimension on
   replications ``0 .. reps - 1``; optionally (``alpha > 0``) in looks (:func:`screen_looks`) that eliminate the
   grid points a paired test shows to be worse than another (:func:`eliminate`), so that only the others run on;
2. :func:`pick`: the selected point of each screen (the least mean ``TTT/T0`` with no capped run) and the
   near-optimal ``r``;
3. :func:`confirm_spec` and :func:`run_stage`: the selected points re-run on fresh replications.

:func:`study_cluster` holds one local dask cluster for all the stages of a study.

Also the checks of the studies' shared inputs: :func:`check_base`, :func:`check_fields` (TimelineConfig fields, none
of those the studies optimise) and :func:`check_r_ranges` (default :data:`R_RANGES`).
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from .._lib.dist import t_ppf
from .._lib.seeding import trace_seed_sequence
from .._lib.validation import UsageTypeError, UsageValueError, as_int
from ..model.strategies import REDUNDANT_STRATEGIES
from ..stats import eliminate, screen_looks
from ..sweep.cluster import shared_local_cluster
from ..sweep.runner import run_study_sweep
from ..sweep.spec import SweepSpec
from ..ttt.config import TimelineConfig, applicable
from ..ttt.optimize import OPTIMISED, admissible_r
from ..ttt.run import run_timeline

__all__ = ["R_RANGES", "SCREEN_ALPHA", "check_base", "check_fields", "check_r_ranges", "check_screen_alpha",
           "timed_r", "screen", "screen_looks", "eliminate", "pick", "confirm_spec", "run_stage", "study_cluster",
           "screen_groups", "best_in_group", "screen_record"]

#: The ``r`` each strategy's optimum is searched over (the issue's ranges; Rep on replica sets for every ``r``).
R_RANGES = {"rep": (2, 6), "spare": (2, 14)}

#: The screen's elimination error (:func:`eliminate`): the probability that the grid point with the least expected
#: ``TTT/T0`` of one screen is eliminated by the test, summed over its looks, is at most this.
SCREEN_ALPHA = 0.05


def study_cluster(scheduler, workers):
    """A context in which every stage of a study runs on one local dask cluster, started at the first stage that
    needs one (:func:`spare_mc.sweep.cluster.shared_local_cluster`; nothing with a ``scheduler`` or ``workers=0``).
    The numbers do not depend on it."""
    return shared_local_cluster(scheduler, workers)


def check_base(base, what: str = "`base`") -> dict:
    """The shared settings of a study (``base``: :class:`~spare_mc.TimelineConfig` fields, as :func:`check_fields`
    says) as a new dict; ``None`` is ``{}``. ``what`` names the input in the errors."""
    if base is None:
        return {}
    if not isinstance(base, dict):
        raise UsageTypeError(f"{what} must be a dict of TimelineConfig fields, got {type(base).__name__}")
    check_fields(base, what)
    return dict(base)


def check_fields(over: dict, what: str) -> None:
    """``over`` holds only TimelineConfig fields, none of those the study optimises (:data:`OPTIMISED`: never set
    by ``base``, a variant or a preset; a clear error otherwise)."""
    known = set(TimelineConfig.__dataclass_fields__) - {"failures", "topology"}
    unknown = sorted(set(over) - known)
    if unknown:
        raise UsageValueError(f"{what} sets {unknown}, which are not TimelineConfig fields (system-level failures "
                              f"only); expected some of {sorted(known - set(OPTIMISED))}")
    for key in OPTIMISED:
        if key in over:
            raise UsageValueError(f"{what} must not set {key!r}: the study optimises it")


def check_r_ranges(r_ranges) -> dict:
    """``{strategy: (lo, hi)}``, the ``r`` each of Rep and SPARe is searched over: :data:`R_RANGES` updated by
    ``r_ranges`` (``None``: the defaults), each ``2 <= lo <= hi``."""
    if r_ranges is not None and not isinstance(r_ranges, dict):
        raise UsageTypeError(f"`r_ranges` must be a dict {{'rep': (lo, hi), 'spare': (lo, hi)}}, got {r_ranges!r}")
    out = dict(R_RANGES)
    for s, rr in (r_ranges or {}).items():
        if s not in REDUNDANT_STRATEGIES or not (isinstance(rr, (tuple, list)) and len(rr) == 2):
            raise UsageValueError(f"`r_ranges` maps 'rep'/'spare' to (lo, hi), got {s!r}: {rr!r}")
        lo, hi = (as_int(x, f"r_ranges[{s!r}]", min_value=2) for x in rr)
        if lo > hi:
            raise UsageValueError(f"`r_ranges[{s!r}]` must have lo <= hi, got {rr}")
        out[s] = (lo, hi)
    return out


def timed_r(strategy, n, r_range, base) -> tuple:
    """``(rs, seconds)``: the admissible ``r`` of ``strategy`` at ``N = n`` within ``r_range`` and the wall time of
    one job at each, from one timed job (after a warm-up that compiles) at the lowest and the highest ``r``,
    interpolated linearly in between: the cost model of the studies' time estimates."""
    root = np.random.SeedSequence(12345)
    rs, _ = admissible_r(strategy, n, r_range, base)
    times = []
    for r in (rs[0], rs[-1]):
        cfg = TimelineConfig(strategy, n, r=r, **applicable(base, strategy))
        run_timeline(cfg, trace_seed_sequence(root, n, 0))  # compile / warm up
        t = time.perf_counter()
        run_timeline(cfg, trace_seed_sequence(root, n, 1))
        times.append(time.perf_counter() - t)
    return rs, (np.interp(rs, [rs[0], rs[-1]], times) if len(rs) > 1 else np.array(times[:1]))


def screen(prefix, strategy, named, n_values, reps, rng, base, r_ranges, period_factors, folder, scheduler,
           workers, force, show, log=None, alpha: float = 0.0, have=None) -> tuple:
    """Screen every named override set of ``strategy`` at every ``N`` over ``r x ckpt_period_factor``.

    One sweep per ``N`` and set of admissible ``r`` (:func:`spare_mc.ttt.optimize.admissible_r`: an ``r`` whose layout
    does not exist is skipped for the variants with that layout only), named ``<prefix>-<strategy>-N<N>[-k]``.
    With ``alpha > 0`` the screen runs in the looks of :func:`screen_looks`: those sweeps hold the first look's
    replications, and after each look the points :func:`eliminate` keeps (at ``alpha / (looks - 1)`` per look) run
    the next look's replications in one sweep per look, ``<prefix>-<strategy>-look<k>``, over every ``N`` and
    variant. ``alpha = 0``: every point runs ``reps`` replications.

    ``have`` (``alpha = 0`` only): ``{(name, N): screen dict}`` of an earlier screen of these variants (or more) on
    the same ``rng``, ``base``, ``r_ranges`` and ``period_factors`` (the calibration's previous round), whose
    replications ``0 .. h - 1`` are taken instead of run again: replication ``i`` has the same seed in every sweep,
    so they are the numbers this screen would compute. Only replications ``h .. reps - 1`` run, in one sweep over
    every ``N`` and variant, ``<prefix>-<strategy>-from<h>`` (a sweep runs at least 2 replications: ``h`` is at most
    ``reps - 2``, and ``have`` is ignored when ``reps < 3``); the result is the one without ``have``.
    Returns ``({(name, N): screen dict}, [dataset paths], {(name, N): skipped r})``; a screen dict has ``r``,
    ``f`` (arrays), ``mean``, ``se``, ``n`` (replications run), ``done`` (no capped run) and ``alive`` (not
    eliminated: ran every replication), each an ``r x f`` array, ``looks``, and ``x`` and ``fin``, the ``r x f x
    reps`` values of ``TTT/T0`` and ``finished`` per replication (NaN where a point was eliminated).
    """

    base_s = applicable(base, strategy)
    looks = screen_looks(reps) if alpha > 0 else (reps,)
    if have is not None:
        if alpha > 0:
            raise ValueError("screen: `have` (replications already run) needs alpha = 0 (no elimination)")
        # a sweep runs at least 2 replications: with only one new, the last two run (one of them again)
        h = min(min(have[(name, n)]["x"].shape[-1] for name in named for n in n_values), reps, reps - 2)
        if h > 0:
            looks = (h, reps)
        else:
            have = None
    out, paths, skipped, data = {}, [], {}, {}
    for n in n_values:
        groups = {}
        for name, over in named.items():
            ok, skip = admissible_r(strategy, n, r_ranges[strategy], {**base_s, **over})
            groups.setdefault(tuple(ok), {})[name] = over
            if skip:
                skipped[(name, n)] = skip
        for k, (rs, variants) in enumerate(groups.items()):
            if have is not None:  # the first look's replications are the earlier screen's
                for name in variants:
                    old = have[(name, n)]
                    if list(old["r"]) != list(rs) or list(old["f"]) != [float(f) for f in period_factors]:
                        raise ValueError(f"screen: `have` for {name!r} at N = {n} is on r {list(old['r'])} x "
                                         f"factors {list(old['f'])}, not on {list(rs)} x {list(period_factors)}")
                    x = np.full((len(rs), len(period_factors), reps), np.nan)
                    fin = np.full_like(x, np.nan)
                    x[..., :looks[0]] = old["x"][..., :looks[0]]
                    fin[..., :looks[0]] = old["fin"][..., :looks[0]]
                    data[(name, n)] = (np.asarray(rs), x, fin, np.ones(x.shape[:2], dtype=bool))
                continue
            spec_name = f"{prefix}-{strategy}-N{n}" + (f"-{k}" if len(groups) > 1 else "")
            spec = SweepSpec(spec_name, "ttt", {"r": list(rs), "ckpt_period_factor": list(period_factors)},
                             looks[0], looks[0], rng, {"strategy": strategy, "n_groups": n, **base_s},
                             variants=variants)
            if log:
                log(f"{spec_name}: {spec.n_points} points x {looks[0]} replications"
                    + (f" (of {reps}: the rest where not eliminated)" if len(looks) > 1 else ""))
            ds, path = run_stage(spec, folder, scheduler, workers, force, show)
            paths.append(path)
            for name in variants:
                sub = ds.sel(variant=name)
                x = np.full((len(rs), len(period_factors), reps), np.nan)
                fin = np.full_like(x, np.nan)
                x[..., :looks[0]] = sub["ttt_over_t0"].transpose("r", "ckpt_period_factor", "rep").values
                fin[..., :looks[0]] = sub["finished"].transpose("r", "ckpt_period_factor", "rep").values
                data[(name, n)] = (np.asarray(rs), x, fin, np.ones(x.shape[:2], dtype=bool))
    for look in range(1, len(looks)):
        lo, hi = looks[look - 1], looks[look]
        points = {}
        for (name, n), (rs, x, fin, alive) in data.items():
            if alpha > 0:
                flat = eliminate(x.reshape(-1, reps)[:, :lo], (fin.reshape(-1, reps)[:, :lo] == 1).all(axis=1),
                                 alive.reshape(-1), alpha / (len(looks) - 1), alive.size)
                alive[...] = flat.reshape(alive.shape)
            for i, j in zip(*np.nonzero(alive)):
                points[f"{name}@{n}@{int(rs[i])}@{period_factors[j]:g}"] = (
                    (name, n, i, j), {"n_groups": n, "r": int(rs[i]), "ckpt_period_factor": period_factors[j],
                                      **named[name]})
        spec_name = f"{prefix}-{strategy}-" + (f"from{lo}" if have is not None else f"look{look + 1}")
        spec = SweepSpec(spec_name, "ttt", {}, hi - lo, hi - lo, rng,
                         {"strategy": strategy, **base_s}, variants={k: v[1] for k, v in points.items()},
                         first_rep=lo)
        if log:
            log(f"{spec.name}: {len(points)} points left of {sum(a[3].size for a in data.values())} x "
                f"{hi - lo} more replications")
        ds, path = run_stage(spec, folder, scheduler, workers, force, show)
        paths.append(path)
        row = {str(k): q for q, k in enumerate(ds["variant"].values)}
        got_x = ds["ttt_over_t0"].transpose("variant", "rep").values
        got_f = ds["finished"].transpose("variant", "rep").values
        for key, ((name, n, i, j), _) in points.items():
            _, x, fin, _ = data[(name, n)]
            x[i, j, lo:hi] = got_x[row[key]]
            fin[i, j, lo:hi] = got_f[row[key]]
    for (name, n), (rs, x, fin, alive) in data.items():
        cnt = np.isfinite(x).sum(axis=-1)
        mean = np.nansum(x, axis=-1) / cnt
        sd = np.sqrt(np.nansum((x - mean[..., None]) ** 2, axis=-1) / np.maximum(cnt - 1, 1))
        out[(name, n)] = {"r": rs, "f": np.asarray(period_factors, dtype=float), "mean": mean,
                          "se": sd / np.sqrt(cnt), "n": cnt, "done": np.nansum(fin == 0, axis=-1) == 0,
                          "alive": alive, "reps": reps, "looks": looks, "x": x, "fin": fin}
    return out, paths, skipped


def pick(sc) -> tuple:
    """``(r, ckpt_period_factor, screen mean, near-optimal r)`` of one screen.

    The chosen point is the least mean TTT/T0 among the points with no capped run that the screen's elimination
    kept (``sc["alive"]``; all of them without elimination); if every such point has a capped run, the least
    restricted mean among them -- the optimiser confirms the theory optimum instead; a study flags such rows by their
    ``capped`` count. Near-optimal: the kept ``r`` whose best point's 95% Student-t interval (its replications
    ``- 1`` degrees of freedom) overlaps the chosen point's -- an unpaired, conservative rule (the points share their
    failure traces, so paired differences would be sharper)."""

    mean, se = sc["mean"], sc["se"]
    alive = sc.get("alive", np.ones(mean.shape, dtype=bool))
    reps = np.broadcast_to(np.asarray(sc.get("n", sc.get("reps", 2))), mean.shape)
    tq = t_ppf(0.975, np.maximum(reps - 1, 1))
    ok = sc["done"] & alive
    cand = np.where(ok, mean, np.inf) if ok.any() else np.where(alive, mean, np.inf)
    i, j = np.unravel_index(int(np.argmin(cand)), cand.shape)
    hi_best = mean[i, j] + tq[i, j] * se[i, j]
    near = []
    for k, r in enumerate(sc["r"]):
        jj = int(np.argmin(cand[k]))
        if np.isfinite(cand[k, jj]) and mean[k, jj] - tq[k, jj] * se[k, jj] <= hi_best:
            near.append(int(r))
    return int(sc["r"][i]), float(sc["f"][j]), float(mean[i, j]), near


def confirm_spec(name, strategy, chosen, first_rep, reps, rng, base, block) -> SweepSpec:
    """The confirmation sweep of ``strategy``'s selected points: ``chosen`` (``{variant name: overrides}``, each
    with its ``r`` and ``ckpt_period_factor``) on replications ``first_rep .. first_rep + reps - 1`` (fresh ones:
    after the screen's), ``block`` replications per task, over the shared settings ``base``."""
    return SweepSpec(name, "ttt", {}, reps, block, rng, {"strategy": strategy, **applicable(base, strategy)},
                     variants=chosen, first_rep=first_rep)


def run_stage(spec, folder, scheduler, workers, force, progress):
    """Run one stage's sweep into ``<folder>/<spec.name>.nc`` (``folder``: the study's held
    :class:`~spare_mc.analyses.folder.StudyFolder`, which records the file; resumable:
    :func:`spare_mc.sweep.run_study_sweep`); returns ``(dataset, path)``."""
    path = folder.file(f"{spec.name}.nc", dataset=True)
    return run_study_sweep(spec, path, scheduler=scheduler, workers=workers, force=force, progress=progress), path


def check_screen_alpha(screen_alpha, name: str = "screen_alpha") -> float:
    """``screen_alpha`` as a float in ``[0, 1)`` (0: no elimination in the screen); ``name`` names it in the
    errors."""
    if isinstance(screen_alpha, bool) or not isinstance(screen_alpha, (int, float, np.integer, np.floating)):
        raise UsageTypeError(f"`{name}` must be a number in [0, 1), got {screen_alpha!r}")
    screen_alpha = float(screen_alpha)
    if not (0 <= screen_alpha < 1):
        raise UsageValueError(f"`{name}` must be in [0, 1) (0: no elimination), got {screen_alpha}")
    return screen_alpha


def screen_groups(name, grid, screened, variants, reps, rng, fixed, alpha, folder, scheduler, workers, force, show,
                  log=None, fields=("ttt_over_t0", "finished")) -> dict:
    """Screen a ``ttt`` sweep grid in looks, eliminating within each *group*: the points of one variant that differ
    only in the ``screened`` dimension (the dynamic and repair studies: the period factors of one ``r``, shape and
    policy or repair time, whose best is chosen and reported).

    ``grid`` (``{dim: values}``, ``screened`` one of its keys), ``variants`` (``{name: overrides}``, not empty),
    ``reps``, ``rng`` and ``fixed`` make the full screen, the sweep ``name`` (``reps`` replications, one task per
    point). With ``alpha > 0`` and ``reps >= 8`` the sweep ``name`` holds the first look's replications
    (:func:`screen_looks`); after each look but the last, :func:`eliminate` (at ``alpha / (looks - 1)`` per look,
    Bonferroni over the group's ``m - 1`` other points) drops the points of each group that a paired one-sided t
    test shows to be worse than another of the group, or that have a capped run; the points left run the next
    look's replications in one sweep, ``<name>-look<k>``. Replication ``i`` has the same seed in every sweep, so a
    point that stays has exactly the numbers of the full screen. Guarantee, per group: the point with the least
    expected ``TTT/T0`` is eliminated with probability at most ``alpha`` (union bound; exact under normality of the
    paired differences). ``alpha = 0`` or ``reps < 8``: the full screen, the sweep of before (same name, spec and
    dataset).

    Returns ``{"groups": {(variant, *other dims' values): group}, "looks", "paths", "points", "points_to_the_end",
    "replications"}``; a group has ``x`` (``{field: (m, reps) array}``, NaN where not run), ``alive`` (stayed to
    the end: ran every replication) and ``done`` (no capped run among those run), each of the ``m`` screened
    values in grid order.
    """
    if not variants:
        raise UsageValueError("`variants` must name at least one variant")
    dims = list(grid)
    others = [d for d in dims if d != screened]
    m = len(grid[screened])
    looks = screen_looks(reps) if alpha > 0 else (reps,)
    spec = SweepSpec(name, "ttt", dict(grid), looks[0], looks[0], rng, dict(fixed), variants=dict(variants))
    if log:
        log(f"{name}: {spec.n_points} points x {looks[0]} replications"
            + (f" (of {reps}: the rest where not eliminated)" if len(looks) > 1 else ""))
    ds, path = run_stage(spec, folder, scheduler, workers, force, show)
    paths, groups = [path], {}
    for v in variants:
        sub = ds.sel(variant=v)
        got = {f: sub[f].transpose(*others, screened, "rep").values for f in fields}
        for combo in itertools.product(*(range(len(grid[d])) for d in others)):
            key = (v, *(grid[d][i] for d, i in zip(others, combo)))
            x = {f: np.full((m, reps), np.nan) for f in fields}
            for f in fields:
                x[f][:, :looks[0]] = got[f][combo]
            groups[key] = {"x": x, "alive": np.ones(m, dtype=bool)}
    for look in range(1, len(looks)):
        lo, hi = looks[look - 1], looks[look]
        points = {}
        for key, g in groups.items():
            fin = (g["x"]["finished"][:, :lo] == 1).all(axis=1)
            g["alive"] = eliminate(g["x"]["ttt_over_t0"][:, :lo], fin, g["alive"], alpha / (len(looks) - 1), m)
            for j in np.flatnonzero(g["alive"]):
                over = {**variants[key[0]], **dict(zip(others, key[1:])), screened: grid[screened][j]}
                label = "|".join([key[0], *(f"{d}={over[d]:g}" for d in (*others, screened))])
                points[label] = (key, int(j), over)
        spec = SweepSpec(f"{name}-look{look + 1}", "ttt", {}, hi - lo, hi - lo, rng, dict(fixed),
                         variants={k: p[2] for k, p in points.items()}, first_rep=lo)
        if log:
            log(f"{spec.name}: {len(points)} points left of {m * len(groups)} x {hi - lo} more replications")
        ds, path = run_stage(spec, folder, scheduler, workers, force, show)
        paths.append(path)
        got = {f: ds[f].transpose("variant", "rep").values for f in fields}
        row = {str(k): q for q, k in enumerate(ds["variant"].values)}
        for label, (key, j, _) in points.items():
            for f in fields:
                groups[key]["x"][f][j, lo:hi] = got[f][row[label]]
    for g in groups.values():
        g["done"] = np.nansum(g["x"]["finished"] == 0, axis=-1) == 0
    return {"groups": groups, "looks": looks, "paths": paths, "points": m * len(groups),
            "points_to_the_end": int(sum(g["alive"].sum() for g in groups.values())),
            "replications": int(sum(np.isfinite(g["x"]["ttt_over_t0"]).sum() for g in groups.values()))}


def screen_record(alpha, screens) -> dict:
    """The ``settings.screen`` record of a study whose factor screens ran through :func:`screen_groups`: the
    elimination error ``alpha``, the looks, and the points, the points that stayed to the end and the replications
    run, summed over ``screens`` (the :func:`screen_groups` results, in order; none: empty looks and zeros)."""
    return {"alpha": alpha, "looks": list(screens[-1]["looks"]) if screens else [],
            **{k: sum(sc[k] for sc in screens) for k in ("points", "points_to_the_end", "replications")}}


def best_in_group(group) -> int:
    """The index of a :func:`screen_groups` group's selected point: the least mean ``TTT/T0`` among the points that
    stayed to the end with no capped run; if each of those has a capped run, the least mean among them (the
    studies flag such rows by their ``capped`` count). Without elimination (every point stayed) this is the rule
    of before."""
    x, alive = group["x"]["ttt_over_t0"], group["alive"]
    ok = alive & group["done"]
    mean = np.nanmean(x, axis=-1)  # (every point ran the first look)
    return int(np.argmin(np.where(ok, mean, np.inf) if ok.any() else np.where(alive, mean, np.inf)))
