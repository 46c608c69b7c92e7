"""When does each strategy win? A phase map over cluster size, checkpoint save time and restart time.

The study behind ``spare-mc reproduce --table phase`` (docs/phase.md). For every cell ``(n_gpus, save_s,
restart_s)`` of a grid, six strategies -- CKPT-only, Rep+CKPT and SPARe+CKPT, each with today's and with modern
checkpointing (:func:`checkpointing`) -- run at their best ``r`` and checkpoint period
(:func:`spare_mc.ttt.optimize.optimize_strategy`), and the cell's **winner** is the one with the least confirmed mean
``TTT/T0`` among those with no run stopped at the wall-clock cap. The winner's **margin** over the runner-up is a
paired difference with its 95% interval; a cell whose interval includes 0 is flagged as not significant.

The model (each line is an assumption, stated again in docs/phase.md)
---------------------------------------------------------------------
- **Cluster.** ``n_gpus`` GPUs in data-parallel groups of about ``gpus_per_group`` (1,000) GPUs:
  ``N = round(n_gpus / gpus_per_group)`` (16,384 -> 16, 100,000 -> 100, 600,000 -> 600, the paper's N).
- **Failures.** The system-level Weibull renewal process of the timeline (shape 0.78, the paper's), with a
  system MTBF that scales with the GPU count from one per-GPU MTBF: ``mtbf_s = per_gpu_mtbf_s / n_gpus``, with
  ``per_gpu_mtbf_s = 300 s x 600,000 = 1.8e8 s`` (about 50,000 h, which is also what the Llama 3 405B report gives,
  16,384 GPUs x 3.1 h). 16k GPUs: 3.05 h; 600k GPUs: 300 s, the paper's ``m``.
- **Job.** The paper's (the :class:`~spare_mc.TimelineConfig` defaults: 10,000 steps, ``T_comp`` = 64 s, the
  all-reduce :func:`~spare_mc.paper_allreduce_s` of N, 5% jitter), otherwise the timeline's default rules.
- **Search.** CKPT-only has ``r = 1``; Rep ``r`` in ``2 .. rep_r_max`` (4: the paper's optima are 2-3, one more
  shows the optimum is inside the range); SPARe ``r`` in ``2 .. max(8, floor(log2 N) + 2)`` (at most ``N``; 8 at
  N = 16 and 100, 11 at N = 600, above the paper's ``r* = floor(log2 N + 0.833)``) unless ``spare_r_max`` says
  otherwise; every ``r`` at the periods ``f x T_c*(theory)`` for ``f`` in ``period_factors``.
- **Common random numbers.** Every strategy of a cell -- and every cell of one cluster size -- is optimised on the
  same root seed, so replication ``i`` sees the same failure trace (:func:`spare_mc._lib.seeding.trace_seed_sequence`
  keys it by ``(N, i)`` only); the six confirmation runs of a cell are replications ``reps .. reps + confirm_reps -
  1`` of that root, and the margins are paired differences over them.
- **Capped runs.** A run that passes ``max_wall_factor x T0`` stops and enters at the cap (a restricted mean, a
  lower bound). A strategy with a capped confirmation run never wins; as a runner-up its margin is then a lower
  bound (``margin_note`` says so).

Statistics
----------
``margin = mean(TTT_runner_up - TTT_winner) / T0`` over the paired confirmation replications, with the Student-t
interval of the differences; ``margin_ratio = 1 - E[TTT_winner] / E[TTT_runner_up]`` with the delta-method interval
of :func:`spare_mc.stats.ratio_estimate`. The winner is **significant** when its paired difference to *every* other
strategy has a 95% interval above 0 (an intersection-union test: each comparison at 5% gives a 5% test of "the
winner beats them all", Berger, *Technometrics* 24:295-300, 1982); in practice the runner-up decides it. The same
rule on subsets of the six gives two more readings of each cell (:func:`decide_views`): the winner per checkpointing
kind, and the margin of the winner's redundancy strategy over the best of the other two.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass

import numpy as np

from .._lib.dist import t_ppf
from .._lib.processes import each_in_processes
from .._lib.provenance import software_versions
from .._lib.resources import check_local_workers
from .._lib.seeding import root_seed_sequence, root_text
from .._lib.validation import UsageError, UsageValueError, as_choice, as_float, as_int, reject_unknown
from ..model.strategies import STRATEGIES
from ..stats import ratio_estimate
from ..sweep.storage import write_json
from ..ttt.optimize import optimize_strategy
from ..ttt.config import TimelineConfig

__all__ = ["PhaseStudy", "checkpointing", "cluster", "strategy_key", "base_strategy", "decide", "decide_views",
           "run_phase_cell", "run_phase_study",
           "phase_rows", "KINDS", "STRATEGY_KEYS", "PHASE_PERIOD_FACTORS", "QUICK"]

#: Checkpointing kinds (:func:`checkpointing`).
KINDS = ("today", "modern")
#: Checkpoint-period factors searched: the main table's five (0.5 ... 2) widened by two steps of sqrt(2) on each
#: side, since modern checkpointing's best period may lie far from the theory period of remote saves.
PHASE_PERIOD_FACTORS = (0.25, 0.35, 0.5, 0.71, 1.0, 1.41, 2.0, 2.83, 4.0)
#: The modern fields of :class:`~spare_mc.TimelineConfig` that :func:`checkpointing` sets.
MODERN_FIELDS = ("ckpt_async", "async_slowdown", "memory_copies", "memory_save_s", "memory_load_s", "remote_every",
                 "load_s")


def strategy_key(strategy: str, kind: str) -> str:
    """The JSON key of a strategy under a checkpointing kind: ``"spare"`` (today) or ``"spare_modern"``."""
    return strategy if kind == "today" else f"{strategy}_{kind}"


#: The six strategies' names (the JSON keys): ``ckpt``, ``rep``, ``spare`` and their ``_modern`` variants.
STRATEGY_KEYS = tuple(strategy_key(s, kind) for kind in KINDS for s in STRATEGIES)


def checkpointing(kind: str, save_s: float, restart_s: float) -> dict:
    """The :class:`~spare_mc.TimelineConfig` overrides of one checkpointing kind at a cell ``(T_s, T_r)``.

    Parameters
    ----------
    kind : {"today", "modern"}
    save_s : float
        ``T_s``, the blocking save of a checkpoint to remote storage today (s).
    restart_s : float
        ``T_r``, today's global restart including the load of the checkpoint (s).

    Returns
    -------
    dict
        ``today``: ``{"save_s": T_s, "restart_s": T_r}``. ``modern``: see Notes.

    Notes
    -----
    **today**: every checkpoint is a blocking save of ``T_s`` to remote storage, and a global restart costs ``T_r``,
    which includes loading the checkpoint back.

    **modern** (assumptions, not measurements): two published techniques combined.

    - *Checkpoints in peers' CPU memory* (Gemini, Wang et al., SOSP 2023): each checkpoint is also kept in the CPU
      memory of ``memory_copies = 2`` groups, saved and loaded about an order of magnitude faster than remote
      storage: ``memory_save_s = memory_load_s = T_s / 10`` (blocking). A wipe-out reloads from memory unless
      every holder of the copy has failed since, else from the last remote checkpoint.
    - *Remote saves pipelined with compute* (CheckFreq, Mohan et al., FAST 2021): every ``remote_every = 5``-th
      checkpoint also goes to remote storage, in the background (``ckpt_async``): the save takes ``T_s`` of wall
      time while compute runs ``async_slowdown = 1.2`` times slower (a pessimistic reading of "a few %": the
      snapshot's copy competes for memory bandwidth and PCIe), and the checkpoint is usable once its save completes.
    - *The restart split*: today's ``T_r`` is a restart proper plus the load of the checkpoint from remote storage,
      which takes about as long as its save: ``load_s = T_s`` and ``restart_s = T_r - T_s``, so that a restart from
      remote storage costs ``T_r`` as today and one from memory ``T_r - T_s + T_s / 10``. Where ``T_s > T_r / 2``
      (on the default grid only ``T_s = T_r = 60 s``) the load is taken as ``T_r / 2`` instead: a restart is never
      loading alone.

    The period the optimiser tunes is then the period between in-memory checkpoints.

    Examples
    --------
    >>> checkpointing("today", 60.0, 3600.0)
    {'save_s': 60.0, 'restart_s': 3600.0}
    >>> d = checkpointing("modern", 60.0, 3600.0)
    >>> d["memory_save_s"], d["load_s"], d["restart_s"], d["remote_every"]
    (6.0, 60.0, 3540.0, 5)
    """
    kind = as_choice(kind, "kind", KINDS)
    save_s = as_float(save_s, "save_s", positive=True)
    restart_s = as_float(restart_s, "restart_s", positive=True)
    if kind == "today":
        return {"save_s": save_s, "restart_s": restart_s}
    load = min(save_s, restart_s / 2.0)
    return {"save_s": save_s, "restart_s": restart_s - load, "load_s": load, "memory_copies": 2,
            "memory_save_s": save_s / 10.0, "memory_load_s": save_s / 10.0, "remote_every": 5, "ckpt_async": True,
            "async_slowdown": 1.2}


def modern_available() -> bool:
    """Whether this :class:`~spare_mc.TimelineConfig` has the fields of modern checkpointing."""

    return all(name in TimelineConfig.__dataclass_fields__ for name in MODERN_FIELDS)


#: The quick flavour (``reproduce --quick``): the corners of the map at every cluster size (1 s and 60 s saves, 1 min
#: and 60 min restarts), 2,000 steps, five periods, few replications.
QUICK = {"save_s": (1.0, 60.0), "restart_s": (60.0, 3600.0), "n_steps": 2000, "reps": 8, "confirm_reps": 30,
         "screen_alpha": 0.0, "period_factors": (0.5, 0.71, 1.0, 1.41, 2.0)}


@dataclass(frozen=True)
class PhaseStudy:
    """Settings of the phase map (defaults: the full map; :meth:`quick`: the flavour of ``reproduce --quick``).

    Attributes
    ----------
    n_gpus : tuple of int
        Cluster sizes (16,384, 100,000, 600,000).
    save_s : tuple of float
        Checkpoint save times ``T_s`` of the grid (1, 5, 15, 60 s).
    restart_s : tuple of float
        Global restart times ``T_r`` of the grid, including the load (1, 5, 10, 30, 60 min).
    kinds : tuple of str
        Checkpointing kinds (``"today"``, ``"modern"``; :func:`checkpointing`).
    reps, confirm_reps : int
        Replications per searched point, and of each strategy's selected point on fresh traces (the paired runs).
    screen_alpha : float
        The search's elimination error (default 0.05; 0: every searched point runs ``reps``). With ``alpha > 0`` the
        searched points run in looks, ``(4, 12, 20)`` for 20 replications, and after each look a point a paired t
        test shows to be worse than another stops (:func:`spare_mc.ttt.optimize.optimize_strategy`); the best point
        of a search is then dropped with probability at most ``alpha`` *if the paired differences are normal*,
        which 4 replications of a rare-wipe-out point need not be. The full map run with 0.05 and with 0 chose the
        same point for every strategy of every cell (so every reported number is the same) at 0.60 of the CPU time
        (357 against 591 s, 2026-12-06; docs/phase.md). The quick flavour keeps 0: its 8 replications leave little
        to save.
    period_factors : tuple of float
        ``T_c / T_c*(theory)`` values searched (:data:`PHASE_PERIOD_FACTORS`).
    rep_r_max : int
        Rep's ``r`` is searched over ``2 .. rep_r_max``.
    spare_r_max : int or None
        SPARe's ``r`` is searched over ``2 .. spare_r_max`` (at most N); None: ``max(8, floor(log2 N) + 2)``.
    gpus_per_group : int
        GPUs per data-parallel group: ``N = round(n_gpus / gpus_per_group)``.
    per_gpu_mtbf_s : float
        ``mtbf_s = per_gpu_mtbf_s / n_gpus`` (1.8e8 s: 300 s at 600,000 GPUs).
    shape : float
        Weibull shape of the failure process (0.78).
    n_steps : int
        Steps of the job (10,000).
    max_wall_factor : float
        The wall-clock cap of a run, a multiple of ``T0`` (100: the timeline's default).
    seed : int
        Root seed of every cell (common random numbers).
    """

    n_gpus: tuple = (16_384, 100_000, 600_000)
    save_s: tuple = (1.0, 5.0, 15.0, 60.0)
    restart_s: tuple = (60.0, 300.0, 600.0, 1800.0, 3600.0)
    kinds: tuple = KINDS
    reps: int = 20
    confirm_reps: int = 100
    screen_alpha: float = 0.05
    period_factors: tuple = PHASE_PERIOD_FACTORS
    rep_r_max: int = 4
    spare_r_max: int | None = None
    gpus_per_group: int = 1000
    per_gpu_mtbf_s: float = 1.8e8
    shape: float = 0.78
    n_steps: int = 10_000
    max_wall_factor: float = 100.0
    seed: int = 0

    @classmethod
    def quick(cls, **kw) -> "PhaseStudy":
        """The flavour of ``reproduce --quick`` (:data:`QUICK`, updated by ``kw``)."""
        return cls(**{**QUICK, **kw})

    @classmethod
    def from_file(cls, path, *, quick: bool = False) -> "PhaseStudy":
        """The study of a TOML spec's ``[phase]`` table (keys: the fields; e.g. experiments/phase_map.toml); with
        ``quick``, updated by its ``[phase.quick]`` table (default :data:`QUICK`)."""
        import tomllib

        path = os.fspath(path)
        try:
            with open(path, "rb") as fh:
                d = tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise UsageValueError(f"{path} is not valid TOML: {exc}") from None
        table = d.get("phase")
        if not isinstance(table, dict):
            raise UsageValueError(f"{path} has no [phase] table (the phase map's settings)")
        table = dict(table)
        q = table.pop("quick", QUICK)
        known = set(cls.__dataclass_fields__)
        for what, t in (("[phase]", table), ("[phase.quick]", q)):
            reject_unknown(t, known, f"{what} of {path}")
        try:  # an error names the file and its table: `save_s` is the key [phase].save_s (or [phase.quick]'s)
            return cls(**{**table, **(q if quick else {})})
        except UsageError as exc:
            raise type(exc)(f"[phase]{' with [phase.quick]' if quick else ''} of {path}: {exc}") from None

    def __post_init__(self):
        for name, value in _phase_study_iv(self).items():
            object.__setattr__(self, name, value)

    def n_groups(self, n_gpus: int) -> int:
        """``N`` of a cluster size."""
        return cluster(n_gpus, gpus_per_group=self.gpus_per_group, per_gpu_mtbf_s=self.per_gpu_mtbf_s)["n_groups"]

    def r_range(self, strategy: str, n_gpus: int) -> tuple:
        """The ``r`` range searched for ``strategy`` at a cluster size (see the class docstring)."""
        n = self.n_groups(n_gpus)
        if strategy == "ckpt":
            return (1, 1)
        if strategy == "rep":
            return (2, min(self.rep_r_max, n))
        hi = max(8, math.floor(math.log2(n)) + 2) if self.spare_r_max is None else self.spare_r_max
        return (2, min(hi, n))

    def cell_settings(self) -> dict:
        """Every setting a cell's numbers depend on (the grid's lists excluded): what a stored cell must match."""
        d = self.to_dict()
        for name in ("n_gpus", "save_s", "restart_s"):
            d.pop(name)
        return d

    def to_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def _floats(values, name, positive=True) -> tuple:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise UsageValueError(f"`{name}` must be a sequence of numbers, got {values!r}")
    out = tuple(as_float(v, name, positive=positive) for v in values)
    if not out:
        raise UsageValueError(f"`{name}` must not be empty")
    if len(set(out)) != len(out):
        raise UsageValueError(f"`{name}` must not repeat a value, got {list(out)}")
    return out


def _phase_study_iv(study: PhaseStudy) -> dict:
    """Validate a :class:`PhaseStudy`; return its cleaned field values."""
    out = {}
    out["gpus_per_group"] = g = as_int(study.gpus_per_group, "gpus_per_group", min_value=1)
    if isinstance(study.n_gpus, (str, bytes)) or not hasattr(study.n_gpus, "__iter__"):
        raise UsageValueError(f"`n_gpus` must be a sequence of integers, got {study.n_gpus!r}")
    out["n_gpus"] = tuple(as_int(n, "n_gpus", min_value=1) for n in study.n_gpus)
    if not out["n_gpus"]:
        raise UsageValueError("`n_gpus` must not be empty")
    if len(set(out["n_gpus"])) != len(out["n_gpus"]):
        raise UsageValueError(f"`n_gpus` must not repeat a value, got {list(out['n_gpus'])}")
    for n in out["n_gpus"]:
        if round(n / g) < 2:
            raise UsageValueError(f"every cluster in `n_gpus` must hold at least 2 groups of gpus_per_group={g} GPUs, "
                                  f"got n_gpus={n}")
    out["save_s"] = _floats(study.save_s, "save_s")
    out["restart_s"] = _floats(study.restart_s, "restart_s")
    if isinstance(study.kinds, str) or not hasattr(study.kinds, "__iter__"):
        raise UsageValueError(f"`kinds` must be a sequence of kinds among {list(KINDS)}, got {study.kinds!r}")
    out["kinds"] = tuple(as_choice(k, "kinds", KINDS) for k in study.kinds)
    if not out["kinds"] or len(set(out["kinds"])) != len(out["kinds"]):
        raise UsageValueError(f"`kinds` must name each of {list(KINDS)} at most once and at least one, got "
                              f"{list(out['kinds'])}")
    if "modern" in out["kinds"] and not modern_available():
        raise UsageValueError("`kinds` includes 'modern', but this TimelineConfig has no modern checkpointing fields "
                              f"({', '.join(MODERN_FIELDS)}): use kinds=('today',)")
    out["reps"] = as_int(study.reps, "reps", min_value=2)
    out["confirm_reps"] = as_int(study.confirm_reps, "confirm_reps", min_value=2)
    out["screen_alpha"] = as_float(study.screen_alpha, "screen_alpha", nonnegative=True, max_value=0.5)
    out["period_factors"] = _floats(study.period_factors, "period_factors")
    out["rep_r_max"] = as_int(study.rep_r_max, "rep_r_max", min_value=2)
    if study.spare_r_max is not None:
        out["spare_r_max"] = as_int(study.spare_r_max, "spare_r_max", min_value=2)
    out["per_gpu_mtbf_s"] = as_float(study.per_gpu_mtbf_s, "per_gpu_mtbf_s", positive=True)
    out["shape"] = as_float(study.shape, "shape", positive=True)
    out["n_steps"] = as_int(study.n_steps, "n_steps", min_value=1)
    out["max_wall_factor"] = mwf = as_float(study.max_wall_factor, "max_wall_factor", positive=True)
    if mwf <= 1.0:
        raise UsageValueError(f"`max_wall_factor` must be > 1 (the cap is that many times T0), got {mwf}")
    out["seed"] = as_int(study.seed, "seed", min_value=0)
    return out


def cluster(n_gpus: int, *, gpus_per_group: int = 1000, per_gpu_mtbf_s: float = 1.8e8) -> dict:
    """``{"n_gpus", "n_groups", "mtbf_s"}`` of a cluster: ``N = round(n_gpus / gpus_per_group)`` groups and the
    system MTBF ``per_gpu_mtbf_s / n_gpus``.

    >>> cluster(600_000)
    {'n_gpus': 600000, 'n_groups': 600, 'mtbf_s': 300.0}
    """
    n_gpus = as_int(n_gpus, "n_gpus", min_value=1)
    return {"n_gpus": n_gpus, "n_groups": round(n_gpus / gpus_per_group), "mtbf_s": per_gpu_mtbf_s / n_gpus}


def _t_interval(d: np.ndarray, level: float = 0.95) -> tuple:

    mean = float(d.mean())
    half = float(t_ppf(0.5 + level / 2, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size))
    return mean, (mean - half, mean + half)


def decide(values: dict, capped: dict, level: float = 0.95) -> dict:
    """The winner of a cell and its margin, from the paired confirmation runs.

    Parameters
    ----------
    values : dict
        Strategy -> per-replication ``TTT/T0`` (the same replications, in the same order, for every strategy).
    capped : dict
        Strategy -> number of those replications stopped at the wall-clock cap.

    Returns
    -------
    dict
        ``winner`` (least mean among the strategies with no capped run; None if every one has one),
        ``runner_up`` (the next least mean, capped or not), ``margin`` and ``margin_ci95`` (paired mean difference
        runner-up minus winner and its t interval), ``margin_ratio`` and ``margin_ratio_ci95`` (``1 - E[winner] /
        E[runner_up]``), ``significant`` (every paired difference to the winner has an interval above 0),
        ``margins`` (the difference and interval against every other strategy) and ``margin_note`` where the
        runner-up had capped runs (its margin is then a lower bound).

    Examples
    --------
    >>> d = decide({"a": [1.0, 1.1, 1.2], "b": [2.0, 2.1, 2.3]}, {"a": 0, "b": 0})
    >>> d["winner"], d["runner_up"], d["significant"]
    ('a', 'b', True)
    """

    vals = {k: np.asarray(v, dtype=float) for k, v in values.items()}
    sizes = {v.size for v in vals.values()}
    if len(vals) < 2 or len(sizes) != 1 or sizes.pop() < 2:
        raise UsageValueError("`values` must give at least two strategies the same number (>= 2) of paired "
                              "replications")
    if set(capped) != set(vals):
        raise UsageValueError("`capped` must give a count for every strategy of `values`")
    means = {k: float(v.mean()) for k, v in vals.items()}
    order = sorted(vals, key=lambda k: means[k])
    eligible = [k for k in order if capped[k] == 0]
    out = {"winner": None, "runner_up": None, "significant": False, "margin": None, "margin_ci95": None,
           "margin_ratio": None, "margin_ratio_ci95": None, "margins": {}}
    if not eligible:
        out["margin_note"] = "every strategy had runs stopped at the wall-clock cap: no winner"
        return out
    win = eligible[0]
    others = [k for k in order if k != win]
    out["winner"], out["runner_up"] = win, others[0]
    sig = True
    for k in others:
        mean, ci = _t_interval(vals[k] - vals[win], level)
        out["margins"][k] = {"margin": mean, "margin_ci95": list(ci)}
        sig = sig and ci[0] > 0
    run = out["runner_up"]
    out["margin"] = out["margins"][run]["margin"]
    out["margin_ci95"] = out["margins"][run]["margin_ci95"]
    rat = ratio_estimate(vals[win], vals[run], name="ttt_ratio", level=level)
    out["margin_ratio"] = 1.0 - rat.mean
    lo, hi = rat.ci
    out["margin_ratio_ci95"] = [1.0 - hi, 1.0 - lo]
    out["significant"] = bool(sig)
    if capped[run]:
        out["margin_note"] = (f"the runner-up {run} had {capped[run]} runs stopped at the cap: its mean is a "
                              f"restricted mean, so the margin is a lower bound")
    return out


def _strategy_summary(opt) -> dict:
    best = opt.best
    est = best.estimate("ttt_over_t0")
    av = best.estimate("availability")
    chosen = [g for g in opt.grid if g["r"] == opt.best_r and g["ckpt_period_s"] == opt.best_ckpt_period_s]
    factors = sorted({g["ckpt_period_factor"] for g in opt.grid})
    rs = sorted({g["r"] for g in opt.grid})
    factor = chosen[0]["ckpt_period_factor"] if chosen else None  # None: every point capped, the theory optimum
    # at the grid's lower edge the period may lie below one step, which is a floor (a checkpoint after every step)
    low = factor == factors[0] and opt.best_ckpt_period_s > best.config.compute_s + best.config.allreduce
    return {"best_r": opt.best_r, "ckpt_period_s": opt.best_ckpt_period_s, "ckpt_period_factor": factor,
            "period_at_grid_edge": factor is not None and len(factors) > 1 and (factor == factors[-1] or low),
            "r_at_range_edge": len(rs) > 1 and opt.best_r == rs[-1],
            "ttt_over_t0": est.mean, "ttt_over_t0_ci95": list(est.ci), "availability": av.mean,
            "availability_ci95": list(av.ci), "capped_fraction": best.capped_fraction,
            "wipeouts_mean": float(best.values("wipeouts").mean()), "rng_root": best.root_entropy,
            "first_rep": best.first_rep, "confirm_reps": best.reps, "searched_r": rs}


def run_phase_cell(study: PhaseStudy, n_gpus: int, save_s: float, restart_s: float) -> dict:
    """One cell of the map: the six strategies at their best ``r`` and period on common random numbers, the winner
    and its margin (:func:`decide`). Returns the cell's row (see :func:`phase_rows`)."""

    if not isinstance(study, PhaseStudy):
        raise UsageValueError(f"`study` must be a PhaseStudy, got {type(study).__name__}")
    t_start = time.perf_counter()
    c = cluster(n_gpus, gpus_per_group=study.gpus_per_group, per_gpu_mtbf_s=study.per_gpu_mtbf_s)
    root = root_seed_sequence(study.seed)
    shared = {"n_steps": study.n_steps, "mtbf_s": c["mtbf_s"], "shape": study.shape,
              "max_wall_factor": study.max_wall_factor}
    opts, summaries = {}, {}
    for kind in study.kinds:
        base = {**shared, **checkpointing(kind, save_s, restart_s)}
        for s in STRATEGIES:
            key = strategy_key(s, kind)
            opts[key] = optimize_strategy(s, c["n_groups"], reps=study.reps, confirm_reps=study.confirm_reps,
                                          rng=root, r_range=study.r_range(s, n_gpus),
                                          period_factors=study.period_factors, base=base,
                                          screen_alpha=study.screen_alpha)
            summaries[key] = _strategy_summary(opts[key])
    pairing = {(v["rng_root"], v["first_rep"], v["confirm_reps"]) for v in summaries.values()}
    if len(pairing) != 1:  # the margins are paired differences: the confirmation runs must share their traces
        raise RuntimeError(f"the confirmation runs of a cell do not share their replications: {pairing}")
    values = {k: o.best.values("ttt_over_t0") for k, o in opts.items()}
    capped = {k: o.best.n_capped for k, o in opts.items()}
    d = decide(values, capped)
    row = {"n_gpus": c["n_gpus"], "save_s": float(save_s), "restart_s": float(restart_s), "winner": d["winner"],
           "ttt_over_t0": {k: v["ttt_over_t0"] for k, v in summaries.items()},
           "ttt_over_t0_ci95": {k: v["ttt_over_t0_ci95"] for k, v in summaries.items()},
           "significant": d["significant"], "runner_up": d["runner_up"], "margin": d["margin"],
           "margin_ci95": d["margin_ci95"], "margin_ratio": d["margin_ratio"],
           "margin_ratio_ci95": d["margin_ratio_ci95"], "margins": d["margins"],
           "n_groups": c["n_groups"], "mtbf_s": c["mtbf_s"], "strategies": summaries,
           "pairing": {"rng_root": root_text(root), "replications": [study.reps, study.reps + study.confirm_reps - 1],
                       "trace_seed": "SeedSequence(root, spawn_key=(N, replication))"},
           "elapsed_s": time.perf_counter() - t_start}
    if "margin_note" in d:
        row["margin_note"] = d["margin_note"]
    row.update(decide_views(values, capped, d["winner"]))
    return row


_BRIEF = ("winner", "runner_up", "margin", "margin_ci95", "margin_ratio", "margin_ratio_ci95", "significant",
          "margin_note")


def base_strategy(key: str) -> str:
    """``"spare"`` of ``"spare_modern"``: the redundancy strategy of a key."""
    return key.split("_", 1)[0]


def decide_views(values: dict, capped: dict, winner) -> dict:
    """Two more readings of a cell, from the same paired runs (:func:`decide` on subsets of ``values``).

    - ``by_kind``: per checkpointing kind, the winner among that kind's strategies and its margin -- the phase map
      one would draw with that kind of checkpointing only;
    - ``winner_strategy`` and ``strategy_margin``: the redundancy strategy (``ckpt``, ``rep``, ``spare``) of the
      overall ``winner`` and its margin over the best strategy of another redundancy strategy (either kind): the
      boundary between strategies, which the six-way runner-up (often the winner's own strategy with the other
      checkpointing) does not show.
    """
    out = {"by_kind": {}}
    for kind in KINDS:
        keys = [k for k in (strategy_key(s, kind) for s in STRATEGIES) if k in values]
        if len(keys) >= 2:
            d = decide({k: values[k] for k in keys}, {k: capped[k] for k in keys})
            out["by_kind"][kind] = {k: d[k] for k in _BRIEF if k in d}
    out["winner_strategy"] = None if winner is None else base_strategy(winner)
    if winner is not None:
        keys = [winner] + [k for k in values if base_strategy(k) != base_strategy(winner)]
        if len(keys) >= 2:
            d = decide({k: values[k] for k in keys}, {k: capped[k] for k in keys})
            out["strategy_margin"] = {"versus" if k == "runner_up" else k: d[k] for k in _BRIEF
                                      if k in d and k != "winner"}
    return out


def _cell_path(cells_dir: str, n_gpus: int, save_s: float, restart_s: float) -> str:
    return os.path.join(cells_dir, f"cell_g{n_gpus}_s{save_s:g}_r{restart_s:g}.json")


def _stored_cell(path: str, settings: dict, version: str):
    """The row stored at ``path`` if it was computed under the same cell settings and spare_mc version, else None."""

    try:
        with open(path, encoding="utf-8") as fh:
            d = json.load(fh)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(d, dict) or d.get("cell_settings") != settings or d.get("spare_mc") != version:
        return None
    return d.get("row")


def _cell_task(args):
    study, cell = args
    return cell, run_phase_cell(study, *cell)


def run_phase_study(study: PhaseStudy | None = None, *, progress=None, out_dir=None, workers: int = 1) -> dict:
    """Run the map; returns ``{"rows": [...], "settings": ..., "clusters": ..., "elapsed_s": ...}``.

    Parameters
    ----------
    study : PhaseStudy, optional
        The settings (default: the full map).
    progress : callable, optional
        Called with a line of text per finished cell.
    out_dir : path, optional
        Every finished cell is written at once to ``out_dir/phase_cells/`` (atomically); a later run with the same
        cell settings, seed and spare_mc version reuses those cells instead of computing them again, so an
        interrupted map resumes where it stopped.
    workers : int
        Cells computed at once, each in its own process (1: in this process). Scripts that pass ``workers > 1``
        need an ``if __name__ == "__main__":`` guard (the processes are spawned).
    """

    study = PhaseStudy() if study is None else study
    if not isinstance(study, PhaseStudy):
        raise UsageValueError(f"`study` must be a PhaseStudy, got {type(study).__name__}")
    workers = check_local_workers(as_int(workers, "workers", min_value=1), scheduler=False)
    t_start = time.perf_counter()
    log = progress or (lambda msg: None)
    cells = [(g, s, r) for g in study.n_gpus for s in study.save_s for r in study.restart_s]
    settings, version = study.cell_settings(), software_versions()["spare_mc"]
    cells_dir = None if out_dir is None else os.path.join(os.fspath(out_dir), "phase_cells")
    done = {}
    if cells_dir is not None:
        os.makedirs(cells_dir, exist_ok=True)
        for cell in cells:
            row = _stored_cell(_cell_path(cells_dir, *cell), settings, version)
            if row is not None:
                done[cell] = row
        if done:
            log(f"{len(done)} of {len(cells)} cells reused from {cells_dir}")

    def finish(cell, row):
        done[cell] = row
        if cells_dir is not None:
            write_json({"cell_settings": settings, "spare_mc": version, "row": row}, _cell_path(cells_dir, *cell))
        m = "" if row["margin"] is None else f" by {row['margin']:.3f} [{row['margin_ci95'][0]:.3f}, " \
                                             f"{row['margin_ci95'][1]:.3f}]"
        log(f"{len(done)}/{len(cells)} n_gpus={cell[0]} save={cell[1]:g} s restart={cell[2]:g} s: "
            f"{row['winner']}{m}{'' if row['significant'] else ' (not significant)'} ({row['elapsed_s']:.1f} s)")

    todo = [c for c in cells if c not in done]
    for _, (cell, row) in each_in_processes(_cell_task, [(study, cell) for cell in todo], workers):
        finish(cell, row)
    clusters = [{**cluster(g, gpus_per_group=study.gpus_per_group, per_gpu_mtbf_s=study.per_gpu_mtbf_s),
                 "r_ranges": {s: list(study.r_range(s, g)) for s in STRATEGIES}} for g in study.n_gpus]
    return {"rows": [done[c] for c in cells], "settings": {**study.to_dict(), "rng_root":
                                                           root_text(root_seed_sequence(study.seed))},
            "clusters": clusters,
            "checkpointing_example": {"save_s": 60.0, "restart_s": 3600.0,
                                      **{k: checkpointing(k, 60.0, 3600.0) for k in study.kinds}},
            "elapsed_s": time.perf_counter() - t_start}


#: The keys of a row of ``spare-mc reproduce --table phase --json``, in order: the issue's, then the extras.
ROW_KEYS = ("n_gpus", "save_s", "restart_s", "winner", "ttt_over_t0", "ttt_over_t0_ci95", "significant", "runner_up",
            "margin", "margin_ci95", "margin_ratio", "margin_ratio_ci95", "margins", "margin_note", "winner_strategy",
            "strategy_margin", "by_kind", "n_groups", "mtbf_s", "strategies")


def phase_rows(result: dict) -> list:
    """The rows of ``spare-mc reproduce --table phase --json``: the keys the table promises, in order."""
    return [{k: row[k] for k in ROW_KEYS if k in row} for row in result["rows"]]
