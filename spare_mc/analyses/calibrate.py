"""Which assumption sets are consistent with a published table? A calibration search, and presets.

A *target table* gives, for some ``N``, each strategy's best ``r``, its ``TTT/T0`` and its availability (format
below; ``"paper"`` is the one published row of the SPARe paper, read from :mod:`spare_mc.model.paper`). The search runs
every combination of the open modelling choices in :data:`SEARCH_SPACE` through the optimiser's procedure (each
strategy at its best ``(r, T_c)`` over the grid, confirmed on fresh traces) and keeps the combinations the table
does not reject.

Separability
------------
An option acts on one strategy or on both (:func:`spare_mc.ttt.config.applicable`), and the table gives each
strategy's numbers separately, so each strategy is searched over the *sub-combinations* of the options it has
(SPARe: layout, patch cost, the shared ones; Rep: masked cost, the shared ones); a full combination is a pair of
sub-combinations that agree on the shared options (restart failures, checkpoint failures, masked detection). On
common random numbers a sub-combination's runs are exactly those of every full combination containing it, so
this is the full factorial search at a fraction of its cost.

Rounds (successive halving's schedule; racing by default)
--------------------------------------------------------
Round ``k`` evaluates the surviving sub-combinations with ``schedule[k] = (reps, confirm_reps)`` (screen
replications ``0 .. reps - 1``, confirmation ``reps .. reps + confirm_reps - 1``: more replications each round, the
same traces). A round screens only the replications the previous one did not: replication ``i`` has the same seed
in every round, so replications ``0 .. reps_(k-1) - 1`` are reused (sweep ``calibrate-r<k>-screen-<strategy>-from<h>``),
and the numbers are those of a full screen (what it saves: docs/calibration.md). After a round the
sub-combinations the table rejects leave (racing: Maron & Moore 1997); with ``eta``
set, only the best ``1 / eta`` of the unrejected ones of each cell of the shared options go on as well (successive
halving by rank: Jamieson & Talwalkar, AISTATS 2016), and those dropped by rank are listed per round (not
rejected, only not pursued). A cell whose members are all rejected keeps its closest ``min_keep``, flagged, so the
closest combinations are reported at the final precision. Options that act only through ``N`` (restart growth,
Rep's all-reduce scaling) are not fitted: they stay at the values the caller gives (default: the stated
assumptions).

Rejection (per strategy and fitted ``N``) and distance
------------------------------------------------------
A strategy's result is *rejected* when its ``TTT/T0`` differs from the table's by more than ``tol_ttt x target +
t se``, or its availability by more than ``tol_availability + t se``, where ``t`` is the Student-t quantile with
the confirmation's ``n - 1`` degrees of freedom at ``alpha / (rounds x 2 strategies x 2 numbers x fitted rows)``
(Bonferroni: a combination that truly sits within the tolerance is falsely rejected in any round with probability
at most ``alpha``); or when the table's ``r`` is not among the near-optimal ``r`` of the screen (those whose best
point's 95% t-interval overlaps the chosen one's; a stated rule, not part of ``alpha``). The *distance* of a full
combination is the root mean square of the relative errors of the four numbers (``TTT/T0`` on the log scale), over
the fitted rows; the *equivalence set* is every full combination whose two sub-combinations are not rejected at the
end (with ``eta``: the unrejected survivors).

Target table format (JSON)
--------------------------
``{"name": str, "source": str, "setting": {TimelineConfig field: value}, "rows": [{"n_groups": int, "rep": {"r":
int, "ttt_over_t0": float, "availability": float}, "spare": {...}}]}``; ``setting`` (optional) gives the table's
stated inputs, ``source`` (optional) its citation, ``description`` (optional) a note. A row may also give the table's
``reduction`` (shown for reference, not fitted). Any other key, at any level, is refused (a misspelt
``availabilty`` would otherwise be ignored), as is an ``N`` given in two rows.

Presets
-------
A preset is a JSON file of :class:`~spare_mc.TimelineConfig` overrides with its provenance (``{"name",
"description", "fitted", "overrides", ...}``); shipped ones live in ``spare_mc/presets`` (package data) and are
named by their stem (``paper-n600``). A preset is never a default: it is applied on request
(``spare-mc reproduce --table main --preset paper-n600``). The preset of a calibration whose table rejects every
combination is the closest one, labelled ``"accepted": false`` (and REJECTED in its description and in every output
that shows it); :func:`load_preset` warns when it loads one.
"""

from __future__ import annotations

import datetime
import inspect
import itertools
import json
import math
import os
import time
import warnings
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from .._lib.dist import t_isf
from .._lib.provenance import SCHEMA_VERSION, software_versions
from .._lib.resources import usable_cpus
from .._lib.validation import (UsageError, UsageTypeError, UsageValueError, as_int, check_unique, in_file,
                               reject_unknown)
from ..model.paper import PAPER_CITATION, paper_results
from ..model.strategies import REDUNDANT_STRATEGIES
from ..stats import estimate_mean, ratio_estimate
from ..sweep.storage import write_json
from ..ttt.config import TimelineConfig, applicable
from ..ttt.optimize import PERIOD_FACTORS, n_values_iv, period_factors_iv
from .folder import MANIFEST, StudyFolder, check_not_in_another_study, check_target
from .engine import (check_base, check_fields, check_r_ranges, confirm_spec, pick, run_stage, screen,
                     study_cluster, timed_r)

__all__ = ["SEARCH_SPACE", "NOT_FITTED", "calibrate", "CalibrationResult", "load_target", "load_preset",
           "preset_names", "presets_dir", "write_preset", "rejection_note", "estimate_cost", "DEFAULT_SCHEDULE"]

#: The fitted options: each a list of ``(label, overrides)`` (the first is the stated assumption).
SEARCH_SPACE = {
    "rep_masked_cost": [("shrink", {}), ("redo_step", {"rep_masked_cost": "redo_step"}),
                        ("resync_60s", {"rep_masked_cost": "resync", "rep_resync_s": 60.0})],
    "restart_failures": [("absorbed", {}), ("stay_dead", {"restart_failures": "stay_dead"})],
    "layout": [("cyclic", {}), ("sidon", {"layout": "sidon"}), ("random", {"layout": "random"})],
    "patch_cost": [("per_shard", {}), ("none", {"patch_cost": "none"}), ("whole_step", {"patch_cost": "whole_step"})],
    "ckpt_failure": [("completes", {}), ("lost", {"ckpt_failure": "lost"})],
    "masked_detect_s": [("0", {}), ("30", {"masked_detect_s": 30.0})],
}
#: Options that act only through N: fixed in advance, never fitted to one row.
NOT_FITTED = ("restart_growth", "restart_ref_groups", "rep_allreduce")
#: ``(screen reps, confirmation reps)`` per round.
DEFAULT_SCHEDULE = ((3, 6), (8, 16), (20, 50))


# ------------------------------------------------------------------------------------------------ targets
#: The keys of a target table's row, and of its ``rep`` and ``spare`` objects.
_ROW_KEYS = ("n_groups", "rep", "spare", "reduction")
_RESULT_KEYS = ("r", "ttt_over_t0", "availability")


def _check_row(row, where, src="the target table"):
    if not isinstance(row, dict) or "n_groups" not in row:
        raise UsageValueError(f"{where}: a row must be an object with n_groups, rep and spare")
    reject_unknown(row, _ROW_KEYS, f"{where} of {src}")
    n = as_int(row["n_groups"], f"{where}.n_groups", min_value=4)
    out = {"n_groups": n}
    for s in REDUNDANT_STRATEGIES:
        x = row.get(s)
        if not isinstance(x, dict):
            raise UsageValueError(f"{where}.{s} must be an object with r, ttt_over_t0 and availability")
        reject_unknown(x, _RESULT_KEYS, f"{where}.{s} of {src}")
        r = as_int(x.get("r"), f"{where}.{s}.r", min_value=2, max_value=n)
        vals = {}
        for key in ("ttt_over_t0", "availability"):
            v = x.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise UsageValueError(f"{where}.{s}.{key} must be a number, got {v!r}")
            vals[key] = float(v)
        if vals["ttt_over_t0"] < 1:
            raise UsageValueError(f"{where}.{s}.ttt_over_t0 must be >= 1 (TTT cannot beat T0), got "
                                  f"{vals['ttt_over_t0']}")
        if not (0 < vals["availability"] <= 1):
            raise UsageValueError(f"{where}.{s}.availability must be in (0, 1], got {vals['availability']}")
        out[s] = {"r": r, **vals}
    return out


def load_target(target) -> dict:
    """A target table: ``"paper"`` (the published row), a path of a JSON file, or a dict (validated; see the
    module docstring for the format)."""
    src = "the target table"
    if isinstance(target, str) and target == "paper":

        d = {"name": "paper", "source": PAPER_CITATION, "setting": {}, "rows": paper_results()["rows"]}
    elif isinstance(target, dict):
        d = target
    elif isinstance(target, (str, os.PathLike)):
        path = os.fspath(target)
        if os.path.isdir(path):
            raise UsageValueError(f"`target` must be 'paper' or a JSON file, got {path!r} (a directory)")
        if not os.path.isfile(path):
            raise UsageValueError(f"`target` must be 'paper' or a JSON file, got {path!r} (no such file)")
        try:
            with open(path, encoding="utf-8") as fh:
                d = json.load(fh)
        except (ValueError, UnicodeDecodeError) as exc:
            raise UsageValueError(f"the target table {path} is not valid JSON: {exc}") from None
        d.setdefault("name", Path(path).stem) if isinstance(d, dict) else None
        src = f"the target table {path}"
    else:
        raise UsageTypeError(f"`target` must be 'paper', a path or a dict, got {type(target).__name__}")
    if not isinstance(d, dict) or not isinstance(d.get("rows"), list) or not d["rows"]:
        raise UsageValueError("a target table must be an object with a non-empty list `rows`")
    reject_unknown(d, ("name", "source", "setting", "rows", "description"), src)
    rows = [_check_row(r, f"rows[{i}]", src) for i, r in enumerate(d["rows"])]
    ns = [r["n_groups"] for r in rows]
    for i, n in enumerate(ns):
        if n in ns[:i]:
            raise UsageValueError(f"rows[{i}].n_groups of {src} repeats N = {n} of rows[{ns.index(n)}]: give each N "
                                  f"one row")
    setting = d.get("setting", {})
    if setting is None:
        setting = {}
    if not isinstance(setting, dict):
        raise UsageValueError(f"the target table's `setting` must be an object of TimelineConfig fields, got "
                              f"{setting!r}")
    try:
        setting = check_base(setting, "the target table's `setting`")  # TimelineConfig fields only
    except UsageError as exc:
        raise in_file(exc) from None
    for i, row in enumerate(rows):  # every row's N (its own limits first, then under the setting)
        for s in REDUNDANT_STRATEGIES:
            try:
                TimelineConfig(s, row["n_groups"], r=2)
            except UsageError as exc:
                raise in_file(type(exc)(f"rows[{i}].n_groups: {exc}")) from None
            try:
                TimelineConfig(s, row["n_groups"], r=2, **applicable(setting, s))
            except UsageError as exc:
                raise in_file(type(exc)(f"the target table's `setting` (at rows[{i}], N = {row['n_groups']}): "
                                        f"{exc}")) from None
    return {"name": str(d.get("name", "target")), "source": str(d.get("source", "")), "setting": setting,
            "rows": rows}


# ------------------------------------------------------------------------------------------------ presets
def presets_dir() -> Path:
    """The folder of the shipped presets (package data)."""
    return Path(str(resources.files("spare_mc").joinpath("presets")))


def preset_names() -> list:
    """Names of the shipped presets."""
    d = presets_dir()
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def load_preset(preset) -> dict:
    """A preset by shipped name (``paper-n600``) or JSON path: ``{"name", "overrides", ...}`` with its overrides
    checked as :class:`~spare_mc.TimelineConfig` fields."""
    if not isinstance(preset, (str, os.PathLike)):
        raise UsageTypeError(f"`preset` must be a name or a path, got {type(preset).__name__}")
    text = os.fspath(preset)
    shipped = presets_dir() / f"{text}.json"
    if isinstance(preset, str) and text in preset_names():  # a shipped name wins over a local file of that name
        path = shipped
    else:
        path = Path(preset)
        try:
            ok = path.is_file()
        except OSError:
            ok = False
        if not ok:
            raise UsageValueError(f"`preset` must be a preset name among {preset_names()} or a JSON file, got "
                                  f"{text[:200]!r}")
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageValueError(f"the preset {path} is not valid JSON: {exc}") from None
    if not isinstance(d, dict) or not isinstance(d.get("overrides"), dict):
        raise UsageValueError(f"the preset {path} must be an object with an `overrides` table")
    reject_unknown(d, _PRESET_KEYS, f"the preset {path}")
    try:  # its keys are the file's, never the command line's flags
        over = check_base(d["overrides"], f"the preset {path}: `overrides`")
        for s in ("rep", "spare", "ckpt"):
            try:
                TimelineConfig(s, 600, r=1 if s == "ckpt" else 3, **applicable(over, s))
            except UsageError as exc:
                raise type(exc)(f"the preset {path}: `overrides`: {exc}") from None
    except UsageError as exc:
        raise in_file(exc) from None
    rejected = d.get("rejected") or []
    if not isinstance(rejected, list) or not all(isinstance(x, str) for x in rejected):
        raise UsageValueError(f"the preset {path}: `rejected` must be a list of reasons (text), got {rejected!r}")
    accepted = d.get("accepted", not rejected)
    if not isinstance(accepted, bool) or (accepted and rejected):
        raise UsageValueError(f"the preset {path}: `accepted` must be true or false, and false when `rejected` "
                              f"lists reasons, got {accepted!r} with {len(rejected)} reason(s)")
    name = d.get("name", path.stem)
    if not accepted:
        warnings.warn(f"the preset {name!r} is a REJECTED fit: {rejection_note(rejected)}", UserWarning,
                      stacklevel=2)
    return {**d, "name": name, "overrides": over, "rejected": rejected, "accepted": accepted}


def rejection_note(rejected) -> str:
    """One phrase saying that a preset or calibration's best combination is rejected by its table, with the
    reasons: what every output that shows a rejected preset says."""
    why = "; ".join(rejected)
    return ("its target table rejects every combination of its calibration, and this is only the closest one, not a "
            "fit" + (f" ({why})" if why else ""))


#: The keys a preset file may have (``overrides`` is required).
_PRESET_KEYS = {"schema_version", "name", "fitted", "accepted", "description", "target", "fit_n", "overrides",
                "fitted_options", "fixed", "distance", "rejected", "equivalence_set_size", "settings", "created",
                "software"}


def write_preset(result: "CalibrationResult", path, *, name: str = "paper-n600") -> str:
    """Write the best-fitting member of a calibration as a preset file (labelled as fitted; when the table rejects
    every combination, labelled REJECTED as well: ``"accepted": false``, and its description says so)."""

    best = result.best
    fixed = dict(result.settings.get("base", {}))
    explicit = dict(result.settings.get("fitted_fields", {}).get(best["name"], best["overrides"]))
    accepted = result.accepted
    what = (f"FITTED, not stated: the option values of the best-fitting combination of `spare-mc calibrate --target "
            f"{result.target['name']}`" if accepted else
            f"REJECTED FIT, not stated: the option values of the closest combination of `spare-mc calibrate --target "
            f"{result.target['name']}`, which the table rejects as it rejects every other "
            f"({'; '.join(best['rejected'])})")
    d = {"schema_version": SCHEMA_VERSION, "name": name, "fitted": True, "accepted": accepted,
         "description": f"{what} (fitted on N = {', '.join(map(str, result.fit_n))} only; every other N is a "
                        f"prediction). Never a default.",
         "target": result.target["name"], "fit_n": list(result.fit_n),
         "overrides": {**fixed, **explicit}, "fitted_options": best["labels"], "fixed": fixed,
         "distance": best["distance"], "rejected": best["rejected"],
         "equivalence_set_size": len(result.equivalence_set), "settings": result.settings,
         "created": datetime.date.today().isoformat(), "software": software_versions()}
    write_json(d, path)
    return os.fspath(path)


# ---------------------------------------------------------------------------------------------- the search
def fitted_clash(space, base) -> tuple | None:
    """The first option of ``space`` (option -> list of (label, overrides)) whose values set a field that ``base``
    fixes, as ``(option, sorted fields)``; None if there is none. A fitted option must be free to vary."""
    for opt, values in space.items():
        clash = sorted({k for _, over in values for k in over} & set(base))
        if clash:
            return opt, clash
    return None


def _space(space):
    space = SEARCH_SPACE if space is None else space
    if not isinstance(space, dict) or not space:
        raise UsageValueError("`space` must be a non-empty dict of option -> list of (label, overrides)")
    out = {}
    for opt, values in space.items():
        if opt in NOT_FITTED:
            raise UsageValueError(f"`{opt}` acts only through N: fix it in `base`, it cannot be fitted to a table")
        if not isinstance(values, (list, tuple)) or not values:
            raise UsageValueError(f"`space[{opt!r}]` must be a non-empty list of (label, overrides)")
        vals = []
        for v in values:
            if not (isinstance(v, (list, tuple)) and len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], dict)):
                raise UsageValueError(f"`space[{opt!r}]` entries must be (label, overrides dict), got {v!r}")
            check_fields(v[1], f"`space[{opt!r}]` value {v[0]!r}")
            vals.append((v[0], dict(v[1])))
        labels = [lab for lab, _ in vals]
        if len(set(labels)) != len(labels):
            raise UsageValueError(f"`space[{opt!r}]` repeats a label: {labels}")
        out[opt] = vals
    return out


def _option_strategies(opt, values):
    """The strategies an option acts on (its overrides' fields)."""
    found = set()
    for _, over in values:
        for s in REDUNDANT_STRATEGIES:
            if applicable(over, s):
                found.add(s)
    return found or set(REDUNDANT_STRATEGIES)


def _subcombos(space, strategy):
    """``{name: (labels, overrides)}`` of the sub-combinations of the options acting on ``strategy``."""
    opts = [o for o in space if strategy in _option_strategies(o, space[o])]
    out = {}
    for choice in itertools.product(*(space[o] for o in opts)):
        labels = {o: lab for o, (lab, _) in zip(opts, choice)}
        over = {}
        for _, o in choice:
            over.update(o)
        name = ",".join(f"{o}={lab}" for o, lab in labels.items()) or "stated"
        out[name] = (labels, over)
    return out


def _t_quantile(alpha, k, n):
    """The two-sided Bonferroni Student-t quantile: level ``alpha`` over ``k`` tests, ``n - 1`` degrees of freedom."""

    return float(t_isf(alpha / (2 * k), max(n - 1, 1)))


def _evaluate(strategy, subs, fit_n, reps, confirm, rng, base, r_ranges, period_factors, folder, rnd, scheduler,
              workers, force, show, have=None):
    """Screen + confirm every sub-combination at every fitted N; per (name, N) a dict of results, the datasets, and
    the screens (``{(name, N): screen dict}``).

    ``have``: the previous round's screens of these sub-combinations (or more), whose replications are reused
    (:func:`~spare_mc.analyses.engine.screen`: replication ``i`` has the same seed in every round, so a round screens
    only its new replications and its numbers are those of a full screen)."""
    variants = {name: applicable(over, strategy) for name, (_, over) in subs.items()}
    screens, paths, skipped = screen(f"calibrate-r{rnd}-screen", strategy, variants, fit_n, reps, rng, base,
                                      r_ranges, period_factors, folder, scheduler, workers, force, show, have=have)
    chosen, near = {}, {}
    for name in variants:
        for n in fit_n:
            r, f, _, near[(name, n)] = pick(screens[(name, n)])
            chosen[f"{name}@{n}"] = {"n_groups": n, "r": r, "ckpt_period_factor": f, **variants[name]}
    spec = confirm_spec(f"calibrate-r{rnd}-confirm-{strategy}", strategy, chosen, reps, confirm, rng, base,
                         min(confirm, 10))
    conf, p2 = run_stage(spec, folder, scheduler, workers, force, show)
    out = {}
    for key, point in chosen.items():
        name, _, n = key.rpartition("@")
        n = int(n)
        c = conf.sel(variant=key)
        capped = int((c["finished"].values == 0).sum())
        out[(name, n)] = {"r": point["r"], "ckpt_period_factor": point["ckpt_period_factor"],
                          "near_r": near[(name, n)], "skipped_r": skipped.get((name, n), []),
                          "ttt": estimate_mean(c["ttt_over_t0"].values, "ttt_over_t0", support="nonnegative",
                                               censored=capped),
                          "availability": estimate_mean(c["availability"].values, "availability", support="unit"),
                          "values": c["ttt_over_t0"].values}
    return out, paths + [p2], screens


def _judge(res, row, tol_ttt, tol_a, alpha_each):
    """``(rejected reasons, relative errors)`` of one strategy's result against one target row (the errors: ``ln(TTT /
    TTT_target)`` and ``(A - A_target) / A_target``, whose RMS over a combination is its distance).

    ``alpha_each``: the level of each of the two numeric tests (a Student-t quantile with the confirmation's
    ``n - 1`` degrees of freedom); the ``r`` test is a stated rule (near-optimal set of the screen).
    """
    reasons = []
    t, a = res["ttt"], res["availability"]
    q = _t_quantile(alpha_each, 1, t.n)
    if abs(t.mean - row["ttt_over_t0"]) > tol_ttt * row["ttt_over_t0"] + _margin(q, t.se):
        reasons.append(f"TTT/T0 {t.mean:.3f} vs {row['ttt_over_t0']}")
    if abs(a.mean - row["availability"]) > tol_a + _margin(q, a.se):
        reasons.append(f"availability {a.mean:.4g} vs {row['availability']}")
    if row["r"] not in res["near_r"]:
        reasons.append(f"best r {res['r']} (near-optimal {res['near_r']}) vs {row['r']}")
    # the relative errors themselves, not their squares: an availability target of 1e-200 makes the relative error
    # ~1e200, whose square overflows a float (the distance is their RMS, :func:`_rms`, which does not)
    errors = [math.log(t.mean / row["ttt_over_t0"]), (a.mean - row["availability"]) / row["availability"]]
    return reasons, errors


def _margin(q, se):
    """The ``q x se`` part of a rejection bound: 0 when ``se`` is 0, also for ``q`` infinite (an ``alpha`` so small
    that its quantile is infinite would otherwise give ``inf x 0 = nan``, and a comparison with nan never rejects)."""
    return 0.0 if se == 0 else q * se


def _rms(errors) -> float:
    """The root mean square of ``errors`` without overflow (``math.hypot`` scales; squaring 1e200 would overflow):
    finite whenever every error is; ``inf`` only when an error is (a relative error beyond the float range, from an
    availability target below about 1e-308)."""
    errors = list(errors)
    return math.hypot(*errors) / math.sqrt(len(errors))


@dataclass(frozen=True, eq=False)
class CalibrationResult:
    """Outcome of :func:`calibrate` (see :meth:`to_dict` for the fields)."""

    target: dict
    fit_n: tuple
    combinations: list  # every full combination evaluated to the end: dicts, by distance
    equivalence_set: list  # the unrejected ones
    best: dict
    rounds: list
    predictions: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    datasets: list = field(default_factory=list)
    elapsed_s: float = 0.0
    #: The files the study wrote: ``{"result": JSON path[, "preset": preset path]}``.
    files: dict = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        """Whether the table leaves any combination unrejected; if not, :attr:`best` is the closest rejected one,
        not a fit."""
        return bool(self.equivalence_set)

    def to_dict(self) -> dict:
        """What ``spare-mc calibrate --json`` prints (``accepted``: false when every combination is rejected)."""
        return {"schema_version": SCHEMA_VERSION, "software": software_versions(), "target": self.target,
                "fit_n": list(self.fit_n), "accepted": self.accepted, "equivalence_set": self.equivalence_set,
                "best": self.best,
                "combinations": self.combinations, "rounds": self.rounds, "predictions": self.predictions,
                "settings": self.settings, "datasets": self.datasets, "elapsed_s": self.elapsed_s, **self.files}

    def table(self) -> str:
        t = self.target
        lines = [f"target {t['name']}: " + "; ".join(
            f"N={r['n_groups']} Rep r={r['rep']['r']} {r['rep']['ttt_over_t0']} / {r['rep']['availability']:.4g}, "
            f"SPARe r={r['spare']['r']} {r['spare']['ttt_over_t0']} / {r['spare']['availability']:.4g}"
            for r in t["rows"] if r["n_groups"] in self.fit_n)]
        for rd in self.rounds:
            lines.append(f"round {rd['round']} ({rd['reps']} + {rd['confirm_reps']} replications): "
                         + "; ".join(f"{s}: {rd[s]['evaluated']} evaluated, {rd[s]['rejected']} rejected, "
                                     f"{rd[s]['kept']} kept" for s in REDUNDANT_STRATEGIES))
        lines.append(f"equivalence set: {len(self.equivalence_set)} combination(s) not rejected")
        lines.append(f"  {'distance':>8}  {'Rep r':>5} {'TTT/T0':>7} {'avail':>7}  {'SPARe r':>7} {'TTT/T0':>7} "
                     f"{'avail':>7}  {'reduction':>9}  combination")
        shown = self.equivalence_set or self.combinations[:5]
        if not self.equivalence_set:
            lines.append("  (none: the closest combinations, all rejected)")
            lines.append(f"REJECTED: the table rejects every combination; the closest, {self.best['name']}, is "
                         f"not a fit (a preset written from it is labelled REJECTED)")
        for c in shown[:20]:
            for n in self.fit_n:
                x = c["rows"][str(n)]
                lines.append(f"  {c['distance']:>8.3f}  {x['rep']['r']:>5} {x['rep']['ttt_over_t0']:>7.3f} "
                             f"{x['rep']['availability']:>7.4f}  {x['spare']['r']:>7} {x['spare']['ttt_over_t0']:>7.3f} "
                             f"{x['spare']['availability']:>7.4f}  {100 * x['reduction']:>8.1f}%  "
                             f"{c['name']}" + (f"  [rejected: {'; '.join(c['rejected'])}]" if c["rejected"] else ""))
        for n, p in self.predictions.items():
            src = " (from the closest REJECTED combination)" if p.get("from_rejected") else ""
            lines.append(f"prediction at N={n} over {p['members']} member(s){src}: reduction "
                         f"{100 * p['reduction_min']:.1f}% .. {100 * p['reduction_max']:.1f}%, Rep r "
                         f"{p['rep_r']}, SPARe r {p['spare_r']}; best-fitting member: reduction "
                         f"{100 * p['best']['reduction']:.1f}% (Rep r={p['best']['rep']['r']} "
                         f"{p['best']['rep']['ttt_over_t0']:.3f}, SPARe r={p['best']['spare']['r']} "
                         f"{p['best']['spare']['ttt_over_t0']:.3f})")
        return "\n".join(lines)


def _row_dict(rep, spare):

    red = ratio_estimate(spare["values"], rep["values"])
    lo, hi = red.ci
    d = {}
    for s, x in (("rep", rep), ("spare", spare)):
        d[s] = {"r": x["r"], "near_r": x["near_r"], "skipped_r": x["skipped_r"],
                "ckpt_period_factor": x["ckpt_period_factor"],
                "ttt_over_t0": x["ttt"].mean, "ttt_over_t0_ci95": list(x["ttt"].ci),
                "availability": x["availability"].mean, "availability_ci95": list(x["availability"].ci),
                "capped": x["ttt"].censored}
    d.update(reduction=1 - red.mean, reduction_ci95=[1 - hi, 1 - lo])
    return d


def _seq_pairs(schedule):
    if isinstance(schedule, (str, bytes)) or not hasattr(schedule, "__iter__"):
        raise UsageTypeError(f"`schedule` must be a sequence of (screen reps, confirmation reps), got {schedule!r}")
    out = []
    for k, pair in enumerate(schedule):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise UsageValueError(f"`schedule[{k}]` must be (screen reps, confirmation reps), got {pair!r}")
        counts = []
        for v, what, lo in ((pair[0], "screen replications", 2), (pair[1], "confirmation replications", 3)):
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise UsageValueError(f"`schedule` round {k + 1}: the {what} must be an integer >= {lo}, got {v!r}")
            counts.append(int(v))
        out.append(tuple(counts))
    if not out:
        raise UsageValueError("`schedule` must have at least one round")
    check_unique(out, "schedule")  # a repeated round reruns the same replications, and counts in alpha twice
    if any(b[0] < a[0] or b[1] < a[1] for a, b in zip(out, out[1:])):
        raise UsageValueError(f"`schedule` must not decrease from one round to the next (the rounds refine), got "
                              f"{out}")
    return out


def _number(v, name, lo, hi, lo_open=False):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not (
            (lo < v if lo_open else lo <= v) and v < hi):
        raise UsageValueError(f"`{name}` must be a number in {'(' if lo_open else '['}{lo}, {hi}), got {v!r}")
    return float(v)


def _check_inputs(target, fit_n, predict_n, space, base, schedule, eta, min_keep, max_members, tol_ttt,
                  tol_availability, alpha, rng, r_ranges, period_factors):
    """Every argument of :func:`calibrate` checked (every combination at every N included), before any work."""
    tgt = load_target(target)
    given = check_base(base)
    clash = {k: (v, tgt["setting"][k]) for k, v in given.items() if k in tgt["setting"] and tgt["setting"][k] != v}
    if clash:  # (said for the Python API and the command line alike: `base` is the command line's timeline flags)
        raise UsageValueError(f"the settings given (`base`; on the command line, the timeline flags) set "
                              f"{sorted(clash)} to other values than the target table states in its `setting` "
                              f"({clash}): a table is fitted under its own stated inputs")
    space = _space(space)
    clash = fitted_clash(space, tgt["setting"])
    if clash:  # the table's own setting: a file's key, which the command line's `--options` cannot rename
        raise UsageValueError(f"the target table's `setting` fixes {clash[1]}, which the search fits (option "
                              f"{clash[0]!r}): leave {clash[0]!r} out of the options searched (`--options` on the "
                              f"command line, `space` in Python), or the field out of the table's `setting`")
    base = {**tgt["setting"], **given}
    clash = fitted_clash(space, base)
    if clash:
        raise UsageValueError(f"`base` fixes {clash[1]}, which `space[{clash[0]!r}]` fits")
    rows = {r["n_groups"]: r for r in tgt["rows"]}
    fit_n = tuple(sorted(rows)) if fit_n is None else n_values_iv(fit_n, "fit_n")
    missing = [n for n in fit_n if n not in rows]
    if missing or not fit_n:
        raise UsageValueError(f"`fit_n` must be rows of the target table {sorted(rows)}, got {list(fit_n)}")
    if predict_n is None:
        predict_n = tuple(n for n in (200, 1000) if n not in fit_n)
    else:
        predict_n = n_values_iv(predict_n, "predict_n")
        both = [n for n in predict_n if n in fit_n]
        if both:  # it would be dropped: a fitted row is not a prediction
            raise UsageValueError(f"`predict_n` must not hold a fitted N (`fit_n`), got {both[0]} in both: the "
                                  f"fit there is not a prediction")
    sched = _seq_pairs(schedule)
    if eta is not None:
        eta = as_int(eta, "eta", min_value=2)
    min_keep = as_int(min_keep, "min_keep", min_value=1)
    max_members = as_int(max_members, "max_members", min_value=1)
    tol_ttt = _number(tol_ttt, "tol_ttt", 0, 1)
    tol_availability = _number(tol_availability, "tol_availability", 0, 1)
    alpha = _number(alpha, "alpha", 0, 1, lo_open=True)
    rng = as_int(rng, "rng", min_value=0)
    r_ranges = check_r_ranges(r_ranges)
    period_factors = period_factors_iv(period_factors)
    for n in fit_n:
        for s in REDUNDANT_STRATEGIES:
            lo, hi = r_ranges[s]
            if not lo <= rows[n][s]["r"] <= hi:
                raise UsageValueError(f"the table's {s} r = {rows[n][s]['r']} at N = {n} is outside the searched "
                                      f"range {r_ranges[s]}")
    subs = {s: _subcombos(space, s) for s in REDUNDANT_STRATEGIES}
    for s in REDUNDANT_STRATEGIES:  # every combination valid before any work
        for name, (_, over) in subs[s].items():
            for n in fit_n + predict_n:
                try:
                    TimelineConfig(s, n, r=2, **{**applicable(base, s), **applicable(over, s)})
                except UsageError as exc:
                    raise type(exc)(f"combination {name!r} at N={n}, {s}: {exc}") from None
    return (tgt, rows, base, space, fit_n, predict_n, sched, eta, min_keep, max_members, tol_ttt, tol_availability,
            alpha, rng, r_ranges, period_factors, subs)


def estimate_cost(target="paper", *, fit_n=None, predict_n=None, space=None, base=None, schedule=DEFAULT_SCHEDULE,
                  eta=None, min_keep=1, tol_ttt=0.05, tol_availability=0.02, alpha=0.05, rng=0, r_ranges=None,
                  period_factors=PERIOD_FACTORS, max_members=8, workers=None) -> dict:
    """The most wall time :func:`calibrate` should take, in seconds, from a few timed jobs (its arguments checked first,
    as :func:`calibrate` checks them).

    Times one job per strategy and ``N`` (fitted and predicted) at the lowest and highest ``r`` of the searched range
    (after compiling), interpolates linearly in ``r``, and counts the jobs as if no sub-combination left before the
    last round (the racing and halving only shorten it) and every prediction ran ``max_members`` members: the screen
    (``reps x r values x period factors``) and the confirmation (``confirm_reps``) of every round, divided by the
    workers (90% efficiency), plus about 4 s for starting the study's local cluster and 1 s per sweep. Rough: within
    a factor of about 1.5 for the work it counts. Returns ``{"expected_s", "jobs", "workers"}``.
    """
    (_, _, base, _, fit_n, predict_n, sched, _, _, max_members, _, _, _, _, r_ranges, period_factors,
     subs) = _check_inputs(target, fit_n, predict_n, space, base, schedule, eta, min_keep, max_members, tol_ttt,
                           tol_availability, alpha, rng, r_ranges, period_factors)
    workers = usable_cpus() if workers is None else max(1, int(workers))
    cpu, jobs = 0.0, 0
    for s in REDUNDANT_STRATEGIES:
        for n in fit_n + predict_n:
            rs, per_r = timed_r(s, n, r_ranges[s], base)
            rounds = sched if n in fit_n else sched[-1:]  # a prediction: the last round's replications
            members = len(subs[s]) if n in fit_n else min(len(subs[s]), max_members)
            for reps, confirm in rounds:
                cpu += members * (reps * len(period_factors) * float(per_r.sum()) + confirm * float(per_r.mean()))
                jobs += members * (reps * len(period_factors) * len(rs) + confirm)
    sweeps = 2 * 2 * len(sched) + (2 * 2 if predict_n else 0)  # screen + confirmation per strategy per round
    total = cpu / (0.9 * workers) if workers > 1 else cpu
    if workers > 0:  # one local cluster for the study (engine.study_cluster), about 1 s per sweep besides
        total += 4.0 + 1.0 * sweeps
    return {"expected_s": total, "jobs": jobs, "workers": workers}


def calibrate(target="paper", *, fit_n=None, predict_n=None, space=None, base=None, schedule=DEFAULT_SCHEDULE,
              eta: int | None = None, min_keep: int = 1, tol_ttt: float = 0.05, tol_availability: float = 0.02,
              alpha: float = 0.05, rng=0, r_ranges=None, period_factors=PERIOD_FACTORS, max_members: int = 8,
              out_dir=None, preset_out=None, scheduler=None, workers=None, force=False,
              progress=None) -> CalibrationResult:
    """Search :data:`SEARCH_SPACE` for the option combinations a target table does not reject (module docstring).

    Parameters
    ----------
    target : "paper", path or dict
        The table (:func:`load_target`).
    fit_n : int or sequence of int, optional
        The rows fitted (default: every row of the table; the paper has one, N = 600).
    predict_n : int or sequence of int, optional
        ``N`` at which the equivalence set's members (at most ``max_members``, by distance) are run as predictions
        (default: 200 and 1000, minus the fitted ``N``; ``()`` for none).
    space : dict, optional
        ``{option: [(label, overrides), ...]}`` (default :data:`SEARCH_SPACE`).
    base : dict, optional
        Fixed :class:`~spare_mc.TimelineConfig` overrides (the stated inputs, the N-only options); the table's own
        ``setting`` is applied first. Stored in the preset with the fitted options.
    schedule : sequence of (int, int)
        ``(screen reps, confirmation reps)`` per round.
    eta : int or None
        None (default): a sub-combination leaves only when rejected (racing), so the equivalence set is every
        combination the table does not reject. An int: also keep only the best ``1/eta`` of the unrejected ones
        of each cell of the shared options per round (successive halving by rank, cheaper for large spaces); the
        set is then the unrejected *survivors*, and the ones dropped by rank are listed per round.
    min_keep : int
        A cell of the shared options whose members are all rejected keeps its closest ``min_keep`` to the end,
        flagged as rejected (so the closest combinations are reported at the final precision).
    tol_ttt, tol_availability : float
        The stated tolerance: relative for ``TTT/T0``, absolute for availability.
    alpha : float
        Family-wise level of the numeric rejection tests of one full combination over all rounds (Bonferroni over
        the rounds and the four numbers per fitted row; Student-t quantiles).
    out_dir : path, optional
        The study's folder (default ``data/calibrate``): the round datasets, which a rerun reuses, and
        ``calibration.json``. One setting per folder (:class:`spare_mc.analyses.folder.StudyFolder`, checked before
        any work): another setting is refused unless ``force``, which moves its files aside.
    preset_out : path, optional
        Also write the best combination as a preset file (:func:`write_preset`; checked before any work).
    scheduler, workers, force, progress :
        As for :func:`spare_mc.analyses.sensitivity.sensitivity`.
    """
    t_start = time.perf_counter()
    checked = _check_inputs(target, fit_n, predict_n, space, base, schedule, eta, min_keep, max_members, tol_ttt,
                            tol_availability, alpha, rng, r_ranges, period_factors)
    if progress is not None and not callable(progress):
        raise UsageTypeError(f"`progress` must be a callable taking a line of text, got {progress!r}")
    folder, preset_out, inputs = _outputs(checked, out_dir, preset_out, force)
    rows, space, subs = checked[1], checked[3], checked[16]
    with folder, study_cluster(scheduler, workers):
        res = _search(folder, dict(inputs, rows=rows, space=space, subs=subs, t_start=t_start), scheduler, workers,
                      force, progress)
        res = folder.write_result(res)  # the result first: a preset that cannot be written cannot lose it
        if preset_out is not None:
            name = os.path.splitext(os.path.basename(preset_out))[0]
            res = replace(res, files={**res.files, "preset": write_preset(res, folder.record(preset_out), name=name)})
        return res


def check_calibrate_inputs(target="paper", *, out_dir=None, preset_out=None, force=False, **kw) -> None:
    """Check every argument of :func:`calibrate` (``kw``: its other keywords) and every output it would write --
    its folder, ``calibration.json``, ``preset_out`` -- without running or writing anything."""
    keys = ("fit_n", "predict_n", "space", "base", "schedule", "eta", "min_keep", "max_members", "tol_ttt",
            "tol_availability", "alpha", "rng", "r_ranges", "period_factors")
    reject_unknown(kw, keys, "check_calibrate_inputs", noun="keywords")
    defaults = {k: v.default for k, v in inspect.signature(calibrate).parameters.items()}  # calibrate's own
    args = {**{k: defaults[k] for k in keys}, **kw}
    _outputs(_check_inputs(target, *(args[k] for k in keys)), out_dir, preset_out, force)


def _outputs(checked, out_dir, preset_out, force) -> tuple:
    """``(folder, preset_out, inputs)``: the study's :class:`~spare_mc.analyses.folder.StudyFolder` at the checked
    inputs (``inputs``, the settings its digest is taken over) and the preset path, both checked now."""
    (tgt, _, base, space, fit_n, predict_n, sched, eta, min_keep, max_members, tol_ttt, tol_availability, alpha,
     rng, r_ranges, period_factors, _) = checked
    out_dir = os.fspath(os.path.join("data", "calibrate") if out_dir is None else out_dir)
    inputs = {"target": tgt, "fit_n": list(fit_n), "predict_n": list(predict_n),
              "space": {o: [[lab, over] for lab, over in v] for o, v in space.items()}, "base": base,
              "schedule": [list(p) for p in sched], "eta": eta, "min_keep": min_keep, "max_members": max_members,
              "tol_ttt": tol_ttt, "tol_availability": tol_availability, "alpha": alpha, "seed": rng,
              "r_ranges": {s: list(r_ranges[s]) for s in REDUNDANT_STRATEGIES}, "period_factors": list(period_factors)}
    result = ("calibration.json", ("equivalence_set", "target"), "calibration result")
    folder = StudyFolder(out_dir, "calibrate", inputs, force=force, result=result,
                         owns=("calibration.json", "calibrate-*"))
    if preset_out is not None:
        preset_out = _check_preset_out(preset_out, folder, force)
    return folder, preset_out, inputs


def _check_preset_out(path, folder, force) -> str:
    """``preset_out`` checked before any work: a ``.json`` file that is none of the run's own outputs, in a folder
    that exists (or is the study's), writable, and not a file spare-mc did not write (unless ``force``)."""
    if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes) or not os.fspath(path):
        raise UsageTypeError(f"`preset_out` must be a file path, got {path!r}")
    po = os.fspath(path)
    if not po.lower().endswith(".json"):
        raise UsageValueError(f"`preset_out` must end in .json, got {po!r}")
    root = os.path.abspath(folder.root)
    parent = os.path.dirname(os.path.abspath(po))
    if os.path.abspath(po) == os.path.join(root, "calibration.json") or (
            parent == root and (os.path.basename(po).startswith("calibrate-") or os.path.basename(po) == MANIFEST)):
        raise UsageValueError(f"`preset_out` {po} is one of this run's own outputs in {folder.root}; choose another "
                              f"path")
    if not os.path.isdir(parent) and parent != root:  # (the study's folder is made by the run)
        raise UsageValueError(f"`preset_out` {po}: the folder {os.path.dirname(po) or '.'} does not exist")
    check_target(po, "preset", force=force, keys=("overrides", "fitted"), flag="preset_out")
    check_not_in_another_study(po, folder.root, "`preset_out`")
    return po


def _search(folder, c, scheduler, workers, force, progress) -> CalibrationResult:
    """The rounds, the combinations and the predictions of :func:`calibrate` on its checked inputs ``c``, in
    ``folder`` (held)."""
    tgt, fit_n, predict_n, rows, space, subs, base = (c[k] for k in ("target", "fit_n", "predict_n", "rows", "space",
                                                                   "subs", "base"))
    sched, eta, min_keep, max_members = (c[k] for k in ("schedule", "eta", "min_keep", "max_members"))
    tol_ttt, tol_availability, alpha, rng = (c[k] for k in ("tol_ttt", "tol_availability", "alpha", "seed"))
    r_ranges, period_factors, t_start = c["r_ranges"], c["period_factors"], c["t_start"]
    fit_n, predict_n, sched = tuple(fit_n), tuple(predict_n), [tuple(p) for p in sched]
    log = progress or (lambda msg: None)
    show = progress is not None
    alpha_each = alpha / (len(sched) * 2 * 2 * len(fit_n))  # per numeric test: rounds x strategies x numbers x rows
    shared = [o for o in space if _option_strategies(o, space[o]) == set(REDUNDANT_STRATEGIES)]
    alive = {s: list(subs[s]) for s in REDUNDANT_STRATEGIES}
    rounds, datasets = [], []
    results, verdict, score = {}, {}, {}
    screened = {s: None for s in REDUNDANT_STRATEGIES}  # each strategy's last screens: the next round reuses them
    for k, (reps, confirm) in enumerate(sched):
        info = {"round": k, "reps": reps, "confirm_reps": confirm}
        last = k == len(sched) - 1
        for s in REDUNDANT_STRATEGIES:
            log(f"round {k}: {s}, {len(alive[s])} sub-combinations x {reps} + {confirm} replications")
            res, paths, screened[s] = _evaluate(s, {n: subs[s][n] for n in alive[s]}, fit_n, reps, confirm, rng,
                                                base, r_ranges, period_factors, folder, k, scheduler, workers, force,
                                                show, have=screened[s])
            datasets += paths
            for name in alive[s]:
                reasons, errs = [], []
                for n in fit_n:
                    rs, e = _judge(res[(name, n)], rows[n][s], tol_ttt, tol_availability, alpha_each)
                    reasons += [f"N={n} {s} {x}" for x in rs]
                    errs += e
                results[(s, name)] = res
                verdict[(s, name)] = reasons
                score[(s, name)] = _rms(errs)
            kept, n_ok, dropped = [], 0, []
            cells = {}
            for name in alive[s]:
                cells.setdefault(tuple(subs[s][name][0].get(o) for o in shared), []).append(name)
            for members in cells.values():  # per cell of the shared options: Rep and SPARe survivors always join
                ok = sorted((m for m in members if not verdict[(s, m)]), key=lambda m: score[(s, m)])
                n_ok += len(ok)
                if not ok:  # every member rejected: the closest go on, flagged, to be reported at full precision
                    keep = sorted(members, key=lambda m: score[(s, m)])[:min_keep]
                elif eta is None or last:
                    keep = ok
                else:
                    keep = ok[:max(min_keep, math.ceil(len(members) / eta))]
                kept += keep
                dropped += [m for m in ok if m not in keep]
            info[s] = {"evaluated": len(alive[s]), "rejected": len(alive[s]) - n_ok, "kept": len(kept),
                       "dropped_by_rank": dropped}
            alive[s] = kept
        rounds.append(info)
    # full combinations from the last round's survivors (joined on the shared options)
    combos = []
    for rn in alive["rep"]:
        for sn in alive["spare"]:
            lr, ls = subs["rep"][rn][0], subs["spare"][sn][0]
            if any(lr.get(o) != ls.get(o) for o in shared):
                continue
            labels = {o: (lr[o] if o in lr else ls[o]) for o in space if o in lr or o in ls}
            over = {**subs["rep"][rn][1], **subs["spare"][sn][1]}
            rrows, errs = {}, []
            for n in fit_n:
                rp, sp = results[("rep", rn)][(rn, n)], results[("spare", sn)][(sn, n)]
                rrows[str(n)] = _row_dict(rp, sp)
                for s, x in (("rep", rp), ("spare", sp)):
                    errs += _judge(x, rows[n][s], tol_ttt, tol_availability, alpha_each)[1]
            name = ",".join(f"{o}={labels[o]}" for o in labels)
            combos.append({"name": name, "labels": labels, "overrides": over, "rows": rrows,
                           "distance": _rms(errs),
                           "rejected": verdict[("rep", rn)] + verdict[("spare", sn)], "_subs": (rn, sn)})
    if not combos:  # cannot happen: every cell of the shared options keeps at least one member per strategy
        raise RuntimeError("no Rep and SPARe survivors agree on the shared options")
    combos.sort(key=lambda c: c["distance"])
    eq = [c for c in combos if not c["rejected"]]
    best = (eq or combos)[0]
    # predictions at the other N
    predictions = {}
    members = (eq or combos[:1])[:max_members]
    if predict_n:
        reps, confirm = sched[-1]
        need = {s: sorted({m["_subs"][0 if s == "rep" else 1] for m in members}) for s in REDUNDANT_STRATEGIES}
        pres = {}
        for s in REDUNDANT_STRATEGIES:
            log(f"predictions: {s}, {len(need[s])} sub-combinations at N = {', '.join(map(str, predict_n))}")
            res, paths, _ = _evaluate(s, {n: subs[s][n] for n in need[s]}, predict_n, reps, confirm, rng, base,
                                      r_ranges, period_factors, folder, "p", scheduler, workers, force, show)
            datasets += paths
            pres[s] = res
        for n in predict_n:
            per = [(m, _row_dict(pres["rep"][(m["_subs"][0], n)], pres["spare"][(m["_subs"][1], n)]))
                   for m in members]
            reds = [row["reduction"] for _, row in per]
            predictions[str(n)] = {"members": len(per), "from_rejected": not eq,
                                   "reduction_min": min(reds), "reduction_max": max(reds),
                                   "rep_r": sorted({row["rep"]["r"] for _, row in per}),
                                   "spare_r": sorted({row["spare"]["r"] for _, row in per}),
                                   "best": per[0][1], "rows": {m["name"]: row for m, row in per}}
    defaults = {f: TimelineConfig.__dataclass_fields__[f].default for f in TimelineConfig.__dataclass_fields__}
    fitted_fields = {}
    for c in combos:
        c["sub_combinations"] = dict(zip(REDUNDANT_STRATEGIES, c.pop("_subs")))
        explicit = {}
        for o, lab in c["labels"].items():  # every field of every fitted option, defaults included
            fields_o = sorted({f for _, over in space[o] for f in over})
            chosen = dict(space[o])[lab]
            explicit.update({f: chosen.get(f, defaults[f]) for f in fields_o})
        fitted_fields[c["name"]] = explicit
    settings = {"schedule": [list(p) for p in sched], "eta": eta, "min_keep": min_keep, "tol_ttt": tol_ttt,
                "tol_availability": tol_availability, "alpha": alpha, "alpha_per_test": alpha_each,
                "rng_root": str(rng), "base": base,
                "space": {o: [lab for lab, _ in v] for o, v in space.items()}, "not_fitted": list(NOT_FITTED),
                "r_ranges": {s: list(r_ranges[s]) for s in REDUNDANT_STRATEGIES},
                "period_factors": list(period_factors),
                "predict_n": list(predict_n), "max_members": max_members, "fitted_fields": fitted_fields,
                "set": "every combination not rejected" if eta is None else
                       f"the unrejected survivors of halving by rank (eta = {eta})",
                "distance": "RMS over the fitted rows of ln(TTT/TTT_target) and (A - A_target)/A_target, both "
                            "strategies",
                "rejection": "|TTT - target| > tol_ttt target + t se or |A - target| > tol_availability + t se "
                             "(t: Student-t, n - 1 degrees of freedom, two-sided at alpha_per_test = alpha / "
                             "(rounds x 2 strategies x 2 numbers x fitted rows)), or the target r outside the "
                             "near-optimal r of the screen (a stated rule, not part of alpha)"}
    return CalibrationResult(tgt, fit_n, combos, eq, best, rounds, predictions, settings, datasets,
                             time.perf_counter() - t_start)
