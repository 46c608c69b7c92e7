"""The results of time-to-train jobs: :class:`TimelineRun` (one job) and :class:`TTTResult` (the replications of one
:class:`spare_mc.ttt.config.TimelineConfig`: estimates, summary, xarray). :mod:`spare_mc.ttt.run` produces them.

Accounting
----------
``TTT = useful + redundant + patch + allreduce + rectlr_shrink + checkpoint + restart + lost`` exactly, where the
first five count only work that was kept (steps not rolled back), ``useful`` is one layer per step (``C / S`` of a
step's compute ``C``), ``redundant`` the other ``S - 1``, and ``lost`` everything rolled back by a wipe-out
(including the step that detected it). **Availability** = uptime / wall clock with uptime = the kept step time
(useful + redundant + patch + all-reduce + ReCtlr/shrink): the share of the wall clock not spent checkpointing,
restarting or redoing lost work (the quantity the paper's ``A(T_c)`` models). The alternative **useful fraction**
= (useful + all-reduce) / TTT (= ``T0 / TTT`` without jitter) also charges the redundant and patch compute.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from .._lib.validation import UsageValueError
from ..model.layouts import layout_note
from ..stats import MCEstimate, estimate_mean, one_run_estimate
from .config import TimelineConfig

__all__ = ["TimelineRun", "TTTResult"]

_RES_NAMES = ("ttt", "useful", "redundant", "patch", "allreduce", "rectlr_shrink", "checkpoint", "restart", "lost")
#: The parts of a run's time to train (:attr:`TimelineRun.breakdown_s`), in the kernel's order.
BREAKDOWN = _RES_NAMES[1:]


@dataclass(frozen=True)
class TimelineRun:
    """One simulated job.

    Attributes
    ----------
    ttt_s : float
        Time to train (for a capped run: the wall clock when it stopped).
    status : {"ok", "capped"}
    breakdown_s : dict
        ``useful, redundant, patch, allreduce, rectlr_shrink, checkpoint, restart, lost`` (sum = ``ttt_s``).
    failures, absorbed, wipeouts, checkpoints, detections : int
        Failures that killed a group, failures absorbed by restarts, global restarts, checkpoints written
        (including lost ones), all-reduces that detected failures.
    steps_run : int
        Steps executed including lost ones; ``steps_done`` the progress reached (``n_steps`` unless capped).
    mean_s : float
        Mean compute layers per executed step.
    loops : int
        Kernel loop iterations (the simulation cost: failures + checkpoints, not steps, without jitter).
    patch_shards : int
        Extra shards ReCtlr's patch plans assigned (SPARe; counted whatever ``patch_cost`` charges for them).
    arrivals_used : int
        System-level arrivals consumed.
    checkpoints_lost : int
        Checkpoints made unusable by a failure during their save (``ckpt_failure="lost"``; 0 otherwise).
    rejoins : int
        Repaired groups that rejoined the running job (``repair``; 0 otherwise).
    memory_restarts, remote_fallbacks : int
        Wipe-outs that reloaded an in-memory checkpoint, and those that fell back to remote storage because no
        group held a copy any more (``memory_copies > 0``; 0 otherwise).
    async_slowdown_s : float
        Checkpoint time spent as compute slowed by asynchronous saves (``ckpt_async``; in ``checkpoint``).
    """

    ttt_s: float
    status: str
    breakdown_s: dict
    failures: int
    absorbed: int
    wipeouts: int
    checkpoints: int
    detections: int
    steps_run: int
    steps_done: int
    mean_s: float
    patch_shards: int
    loops: int
    arrivals_used: int
    checkpoints_lost: int = 0
    rejoins: int = 0
    memory_restarts: int = 0
    remote_fallbacks: int = 0
    async_slowdown_s: float = 0.0
    raw_us: tuple = field(repr=False, default=())

    @property
    def availability(self) -> float:
        """``1 - (checkpoint + restart + lost) / ttt``, in [0, 1] (a run that only restarted can round to -1e-17)."""
        b = self.breakdown_s
        return min(1.0, max(0.0, 1.0 - (b["checkpoint"] + b["restart"] + b["lost"]) / self.ttt_s))

    @property
    def useful_fraction(self) -> float:
        """``(useful + allreduce) / ttt``, in [0, 1]."""
        b = self.breakdown_s
        return min(1.0, max(0.0, (b["useful"] + b["allreduce"]) / self.ttt_s))


#: Per-run quantities: (description, support of the estimate's interval).
_EST = {
    "ttt_over_t0": ("time to train / T0 (a capped run enters at the cap: restricted mean)", "nonnegative"),
    "availability": ("uptime / wall clock (a capped run: over its simulated wall clock)", "unit"),
    "useful_fraction": ("(useful compute + all-reduce) / wall clock", "unit"),
    "failures": ("failures that killed a group, per run", "nonnegative"),
    "wipeouts": ("global restarts per run", "nonnegative"),
    "checkpoints": ("checkpoints per run", "nonnegative"),
    "mean_s": ("mean compute layers per executed step", "nonnegative"),
    "memory_restarts": ("wipe-outs that reloaded an in-memory checkpoint, per run", "nonnegative"),
    "remote_fallbacks": ("wipe-outs that fell back to remote storage (no copy left), per run", "nonnegative"),
    "async_slowdown_s": ("checkpoint time spent as compute slowed by asynchronous saves, per run (s)",
                         "nonnegative"),
    **{name: (f"time in '{name}' per run (s)", "nonnegative") for name in BREAKDOWN},
}


@dataclass(frozen=True, eq=False)
class TTTResult:
    """Replications of one :class:`TimelineConfig` (runs in replication order).

    **Capped runs** (wall clock past ``max_wall_factor x T0`` before the job finished) are never dropped: each
    enters every estimate as a censored observation. For the time to train that is its value at the cap, so
    :meth:`estimate` of ``"ttt_over_t0"`` is the *restricted mean* ``E[min(TTT, cap)] / T0`` -- the exact mean when no
    run is capped, and a lower bound on it otherwise (the estimate's ``censored`` count says how many runs are at the
    cap; :attr:`capped_fraction` is always reported). The other quantities are measured over each run's simulated
    wall clock: a run capped inside a global restart stops at the cap (the restart counts up to it); one capped
    otherwise ends with the step or checkpoint save under way at the cap, at most one of each past it.

    Attributes
    ----------
    config : TimelineConfig
    runs : tuple of TimelineRun
    root_entropy : str
        The root seed's identity (:func:`spare_mc._lib.seeding.root_text`).
    first_rep : int
        Replication index of ``runs[0]`` (run ``i`` is replication ``first_rep + i``).
    """

    config: TimelineConfig
    runs: tuple
    root_entropy: str
    first_rep: int = 0

    @property
    def reps(self) -> int:
        return len(self.runs)

    @property
    def capped_fraction(self) -> float:
        return sum(r.status == "capped" for r in self.runs) / len(self.runs)

    @property
    def n_capped(self) -> int:
        return sum(r.status == "capped" for r in self.runs)

    def values(self, name: str, finished_only: bool = False) -> np.ndarray:
        """Per-run values of ``name`` (see :data:`_EST`), capped runs included (the time to train at the cap)
        unless ``finished_only``."""
        if name not in _EST:
            raise UsageValueError(f"`name` must be one of {sorted(_EST)}, got {name!r}")
        runs = [r for r in self.runs if r.status == "ok" or not finished_only]
        t0, cap = self.config.t0_s, self.config.cap_s
        get = {"ttt_over_t0": lambda r: min(r.ttt_s, cap) / t0, "availability": lambda r: r.availability,
               "useful_fraction": lambda r: r.useful_fraction, "failures": lambda r: r.failures,
               "wipeouts": lambda r: r.wipeouts, "checkpoints": lambda r: r.checkpoints,
               "mean_s": lambda r: r.mean_s, "memory_restarts": lambda r: r.memory_restarts,
               "remote_fallbacks": lambda r: r.remote_fallbacks, "async_slowdown_s": lambda r: r.async_slowdown_s}
        if name in get:
            return np.array([get[name](r) for r in runs], dtype=float)
        return np.array([r.breakdown_s[name] for r in runs], dtype=float)

    def estimate(self, name: str, level: float = 0.95) -> MCEstimate:
        """Mean over every replication with its interval (respecting the quantity's support); capped runs are
        censored observations (see the class docstring). NaN with fewer than 2 replications."""
        v = self.values(name)
        support = _EST[name][1]
        if v.size < 2:
            return one_run_estimate(name, v, level, support, self.n_capped)
        return estimate_mean(v, name=name, level=level, support=support, censored=self.n_capped)

    def summary(self) -> dict:
        cfg = self.config
        d = {"strategy": cfg.strategy, "n_groups": cfg.n_groups, "r": cfg.r, "layout": cfg.layout,
             "reps": self.reps,
             "ckpt_period_s": None if cfg.ckpt_every_steps or cfg.ckpt_policy != "periodic" else cfg.ckpt_period,
             "allreduce_s": cfg.allreduce, "t0_s": cfg.t0_s, "capped_fraction": self.capped_fraction,
             "rng_root": self.root_entropy}
        note = layout_note(cfg.layout, cfg.r) if cfg.strategy == "spare" and not cfg.domain_aware else None
        if note:
            d["layout_note"] = note
        for name in ("ttt_over_t0", "availability", "useful_fraction"):
            est = self.estimate(name)
            d[name] = est.mean
            d[f"{name}_ci95"] = list(est.ci)
        for name in ("failures", "wipeouts", "checkpoints", "mean_s"):
            d[f"{name}_mean"] = float(np.mean(self.values(name)))
        if cfg.memory_copies > 0:
            for name in ("memory_restarts", "remote_fallbacks"):
                d[f"{name}_mean"] = float(np.mean(self.values(name)))
        if cfg.ckpt_async:
            d["async_slowdown_s_mean"] = float(np.mean(self.values("async_slowdown_s")))
        d["breakdown"] = {name: float(np.mean(self.values(name)) / cfg.t0_s) for name in BREAKDOWN}
        d["breakdown_units"] = "fraction of T0 (mean over all runs)" + (
            "; a capped run's parts cover its simulated wall clock, which ends at the cap inside a restart, or up to "
            "one step and one checkpoint save past it (the parts can sum slightly above ttt_over_t0)"
            if self.n_capped else "")
        if self.n_capped == 0:
            d["ttt_estimator"] = "mean"
            d["status"] = "ok"
        else:
            d["ttt_estimator"] = (f"restricted mean at the wall-clock cap ({cfg.max_wall_factor:g} x T0): a lower "
                                  f"bound "
                                  f"on the mean time to train")
            progress = np.mean([r.steps_done for r in self.runs if r.status == "capped"]) / cfg.n_steps
            d["status"] = (f"{self.n_capped} of {self.reps} runs hit the wall-clock cap before finishing (mean "
                           f"progress of those: {progress:.3f} of the steps); they enter the estimates as censored "
                           f"observations")
        return d

    def to_xarray(self):
        """The per-replication values as an :class:`xarray.Dataset` with dimension ``rep``.

        The configuration is in the attributes in a form netCDF can store: every option as its own attribute,
        booleans as 0/1 (as in the other results' datasets; the strings ``"True"``/``"False"`` it used to store
        are both true in Python), options that are ``None`` (their default rule applies) left out, the failure
        model and topology as JSON; and the whole configuration as JSON in ``config``, so that
        ``TimelineConfig.from_dict(json.loads(ds.attrs["config"]))`` gives it back.
        """


        data = {name: ("rep", self.values(name)) for name in _EST}
        data["status"] = ("rep", np.array([r.status for r in self.runs]))
        import xarray as xr  # here, not at the top: it and pandas take 0.4 s to import
        ds = xr.Dataset(data, coords={"rep": np.arange(self.first_rep, self.first_rep + self.reps)})
        cfg = self.config.to_dict()
        for k, v in cfg.items():
            if v is None:
                continue
            ds.attrs[k] = int(v) if isinstance(v, bool) else json.dumps(v) if isinstance(v, dict) else v
        ds.attrs["config"] = json.dumps(cfg)
        ds.attrs["root_entropy"] = self.root_entropy
        return ds
