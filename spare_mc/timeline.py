"""Time to train: an event-driven timeline of a whole job under CKPT-only, Rep+CKPT and SPARe+CKPT.

The model (MODEL.md sections 5-6; every choice the paper leaves open is a named field of :class:`TimelineConfig`)
---------------------------------------------------------------------------------------------------------------
- The job is ``n_steps`` synchronous steps. A step computes ``S`` stack layers (``S x T_comp``; ``r x T_comp`` for
  Rep, ``T_comp`` for CKPT-only), then the all-reduce ``T_a``. ``T0 = n_steps (T_comp + T_a)``.
- **Failures** (default, the paper's setting): a system-level Weibull renewal process (shape ``k``, mean ``m`` for
  the full system) whose rate is proportional to the live GPUs (``live_scaling``): inter-arrivals are drawn in
  *operational time*, which runs at the live fraction of the system. Each failure kills a uniformly random live
  group (groups are equal-sized). **Options** (``failures=``): per-GPU Weibull lifetimes (:class:`PerGPU`; a
  group fails at the minimum of its GPUs' lifetimes) and failure domains (:class:`DomainFailures`: a node, rack
  or power domain of the ``topology`` takes down every group it touches, plus optional per-GPU background). These
  are unit clocks: at a global restart, lifetimes are redrawn for every unit (``age_policy="renew"``) or only for
  the replaced hardware -- units that failed and those that would have failed during the restart -- while the
  others keep their ages (``"keep"``; domains follow their background's policy).
- **Detection**: failures that arrive up to the end of a step's compute phase are detected at that step's
  all-reduce, together. Failures during the all-reduce, ReCtlr, patch or a checkpoint are detected at the next
  step's all-reduce (their groups are dead meanwhile and no longer fail).
- **SPARe**: at a detection the real ReCtlr (:mod:`spare_mc.reorder`) runs on the newly dead groups: it costs
  ``T_rectlr``, then the patch compute (``patch x T_comp``, the largest number of shards one survivor recomputes),
  then the communicator shrink ``T_shrink``, then the all-reduce; the step completes and ``S*`` holds from the next
  step on. **Rep**: a failure is masked until a replica set is wiped; a masked detection costs ``T_shrink`` (no
  ReCtlr, no patch). **CKPT-only**: every detection is a wipe-out.
- **Wipe-out** (detected at the all-reduce): the step is lost, a global restart takes ``T_r``, progress rolls back
  to the last checkpoint (all work since is lost), every group is back, ``S`` and the stacks reset. Failures that
  arrive during a restart are absorbed by it (the failure clock keeps running at full rate; the restart brings
  every group back anyway); an arrival at the exact end of the restart hits the restarted system.
- **Checkpoints**: after a step completes, if at least ``T_c`` of wall time has passed since the end of the last
  checkpoint (or restart), a checkpoint of cost ``T_s`` is written. It always completes: the model state is
  replicated across data-parallel groups, so a failure during the save does not corrupt it; such a failure is
  detected at the next all-reduce and, if it wipes out, rolls back to this checkpoint.
- **Jitter** (``jitter_sd > 0``): every duration is multiplied by an independent ``Normal(1, jitter_sd^2)``
  (clipped at 0). Times are integer microseconds.
- **Cost**: stretches of failure-free steps are skipped in O(1), so the cost grows with the number of failures
  and checkpoints, not steps. Without jitter the skip is exact (``m`` identical steps). With jitter, a stretch of
  ``m`` steps that ends -- beyond 12 standard deviations -- before the next failure arrival, the next checkpoint
  and the wall-clock cap has its total compute and all-reduce times drawn as normal sums of ``m`` independent
  jitters (exact in law, rounded to the microsecond once per stretch instead of once per step); steps near those
  boundaries are simulated one by one.

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

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from . import _timeline_kernels as _tk
from ._validation import UsageTypeError, UsageValueError, as_choice, as_float, as_int
from .closed_forms import ckpt_period_optimal
from .exact import block_mean_closed_form, exact_wipeout
from .failures import DomainFailures, PerGPU, failure_model_from_dict, lower
from .layouts import Layout, block, cyclic, sidon
from .stats import MCEstimate, estimate_mean
from .topology import Topology

__all__ = ["TimelineConfig", "TimelineRun", "TTTResult", "simulate_ttt", "run_timeline", "paper_allreduce_s",
           "theory_ckpt_period_s", "make_trace", "STRATEGIES"]

STRATEGIES = ("ckpt", "rep", "spare")
_STRAT_CODE = {"ckpt": _tk.STRAT_CKPT, "rep": _tk.STRAT_REP, "spare": _tk.STRAT_SPARE}
_US = 1_000_000


def paper_allreduce_s(n_groups: int) -> float:
    """Default all-reduce time: the paper gives "2-10 s growing with N" for N = 200 ... 1000; we interpolate
    linearly, ``2 + 8 (N - 200) / 800`` seconds, extended linearly beyond and never below 0.5 s.

    >>> paper_allreduce_s(200), paper_allreduce_s(600), paper_allreduce_s(1000)
    (2.0, 6.0, 10.0)
    """
    n_groups = as_int(n_groups, "n_groups", min_value=1)
    return max(0.5, 2.0 + 8.0 * (n_groups - 200) / 800.0)


@dataclass(frozen=True)
class TimelineConfig:
    """One time-to-train setting (paper defaults for every time parameter; units in field names).

    Parameters
    ----------
    strategy : {"ckpt", "rep", "spare"}
    n_groups : int
    r : int
        Redundancy (1 for CKPT-only; Rep needs ``N % r == 0``).
    layout : {"cyclic", "sidon"}
        SPARe stacking layout (unit stride or Sidon offsets).
    n_steps : int
    compute_s : float
        ``T_comp``, compute time of one stack layer (64 s).
    allreduce_s : float or None
        ``T_a``; ``None`` = :func:`paper_allreduce_s`.
    mtbf_s, shape : float
        Full-system mean time between failures (300 s) and Weibull shape (0.78) of the default system-level
        renewal process (also the ``m`` of the theory checkpoint period).
    live_scaling : bool
        The failure rate is proportional to the live GPUs (system-level process).
    failures : PerGPU or DomainFailures, optional
        Unit-clock failure model instead of the system-level process.
    topology : Topology, optional
        GPUs and failure domains for ``failures`` (default ``Topology(600_000, n_groups)``).
    restart_s, save_s : float
        Global restart ``T_r`` (3600 s) and checkpoint save ``T_s`` (60 s).
    ckpt_period_s : float or None
        Checkpoint period ``T_c``; ``None`` = :func:`theory_ckpt_period_s`.
    shrink_s, rectlr_s : float
        Communicator shrink and ReCtlr cost (0.1 s each).
    jitter_sd : float
        Standard deviation of the multiplicative duration jitter (0.05; 0 = off).
    max_wall_factor : float
        A run stops with status ``"capped"`` once the wall clock passes ``max_wall_factor x T0``.
    """

    strategy: str
    n_groups: int
    r: int = 1
    layout: str = "cyclic"
    n_steps: int = 10_000
    compute_s: float = 64.0
    allreduce_s: float | None = None
    mtbf_s: float = 300.0
    shape: float = 0.78
    live_scaling: bool = True
    restart_s: float = 3600.0
    save_s: float = 60.0
    ckpt_period_s: float | None = None
    shrink_s: float = 0.1
    rectlr_s: float = 0.1
    jitter_sd: float = 0.05
    max_wall_factor: float = 100.0
    failures: PerGPU | DomainFailures | None = None
    topology: Topology | None = None

    def __post_init__(self):
        s = as_choice(self.strategy, "strategy", STRATEGIES)
        n = as_int(self.n_groups, "n_groups", min_value=2, max_value=1 << 24)
        r = as_int(self.r, "r", min_value=1, max_value=n)
        if s == "ckpt" and r != 1:
            raise UsageValueError(f"`r` must be 1 for strategy 'ckpt' (no redundancy), got r={r}")
        if s == "rep" and n % r:
            raise UsageValueError(f"strategy 'rep' needs N divisible by r, got N={n}, r={r}")
        as_choice(self.layout, "layout", ("cyclic", "sidon"))
        as_int(self.n_steps, "n_steps", min_value=1)
        for name in ("compute_s", "mtbf_s", "shape", "restart_s", "save_s", "max_wall_factor"):
            as_float(getattr(self, name), name, positive=True)
        for name in ("shrink_s", "rectlr_s", "jitter_sd"):
            as_float(getattr(self, name), name, nonnegative=True)
        if self.allreduce_s is not None:
            as_float(self.allreduce_s, "allreduce_s", nonnegative=True)
        if self.ckpt_period_s is not None:
            as_float(self.ckpt_period_s, "ckpt_period_s", positive=True)
        if self.jitter_sd >= 0.5:
            raise UsageValueError(f"`jitter_sd` must be < 0.5 (a multiplicative Normal(1, sd^2)), got {self.jitter_sd}")
        if not isinstance(self.live_scaling, bool):
            raise UsageTypeError(f"`live_scaling` must be a bool, got {self.live_scaling!r}")
        if self.failures is not None and not isinstance(self.failures, (PerGPU, DomainFailures)):
            raise UsageTypeError(f"`failures` must be PerGPU, DomainFailures or None (the system-level process), got "
                            f"{type(self.failures).__name__}")
        if self.topology is not None:
            if not isinstance(self.topology, Topology):
                raise UsageTypeError(f"`topology` must be a Topology, got {type(self.topology).__name__}")
            if self.topology.n_groups != n:
                raise UsageValueError(f"`topology` has N={self.topology.n_groups} groups, the config N={n}")
        elif self.failures is not None:
            object.__setattr__(self, "topology", Topology(600_000, n))

    def unit_clocks(self):
        """Kernel parameters of a unit-clock model: ``(uscale_us, n_group_units, dom_ptr, dom_groups, keep,
        shape)``, or None for the system-level process."""
        if self.failures is None:
            return None
        proc = lower(self.failures, self.topology)
        k = proc.shape
        scales = []
        n_gu = self.n_groups if proc.group_rate > 0 else 0
        if n_gu:
            scales += [proc.scale * proc.group_rate ** (-1.0 / k) * _US] * n_gu
        n_dom = proc.dom_ptr.size - 1 if proc.domain_rate > 0 else 0
        if n_dom:
            scales += [proc.scale * proc.domain_rate ** (-1.0 / k) * _US] * n_dom
        if isinstance(self.failures, PerGPU):
            policy = self.failures.age_policy
        else:
            policy = "renew" if self.failures.background is None else self.failures.background.age_policy
        ptr = proc.dom_ptr if n_dom else np.zeros(1, dtype=np.int64)
        groups = proc.dom_groups if n_dom else np.zeros(0, dtype=np.int64)
        return (np.array(scales, dtype=np.float64), n_gu, ptr.astype(np.int64), groups.astype(np.int64),
                policy == "keep", k)
    @property
    def allreduce(self) -> float:
        """``T_a`` in seconds (the default model when ``allreduce_s`` is None)."""
        return paper_allreduce_s(self.n_groups) if self.allreduce_s is None else float(self.allreduce_s)

    @property
    def t0_s(self) -> float:
        """``T0 = n_steps (T_comp + T_a)``: failure-free, redundancy-free time to train."""
        return self.n_steps * (self.compute_s + self.allreduce)

    @property
    def ckpt_period(self) -> float:
        """``T_c`` in seconds (the theory optimum when ``ckpt_period_s`` is None)."""
        return theory_ckpt_period_s(self) if self.ckpt_period_s is None else float(self.ckpt_period_s)

    def layout_object(self) -> Layout:
        """The holder table the timeline runs on."""
        if self.strategy == "ckpt":
            return cyclic(self.n_groups, 1)
        if self.strategy == "rep":
            return block(self.n_groups, self.r)
        return cyclic(self.n_groups, self.r) if self.layout == "cyclic" else sidon(self.n_groups, self.r)

    def to_dict(self) -> dict:
        d = {name: getattr(self, name) for name in self.__dataclass_fields__}
        d["failures"] = None if self.failures is None else self.failures.to_dict()
        d["topology"] = None if self.topology is None else self.topology.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TimelineConfig":
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise UsageValueError(f"unknown TimelineConfig parameters: {sorted(unknown)}")
        d = dict(d)
        if isinstance(d.get("failures"), dict):
            d["failures"] = failure_model_from_dict(d["failures"])
        if isinstance(d.get("topology"), dict):
            d["topology"] = Topology.from_dict(d["topology"])
        return cls(**d)


def mean_wipeout_index(cfg: TimelineConfig) -> float:
    """``E[T]``, failures until a wipe-out in uniform order: 1 (CKPT-only), the exact block mean (Rep), the exact
    cyclic mean (SPARe unit stride) or the exact random-holders mean (SPARe Sidon, which it matches closely)."""
    return _mean_wipeout_index(cfg.strategy, cfg.n_groups, cfg.r, cfg.layout)


@functools.lru_cache(maxsize=256)
def _mean_wipeout_index(strategy, n_groups, r, layout):
    if strategy == "ckpt":
        return 1.0
    if strategy == "rep":
        return block_mean_closed_form(n_groups, r)
    return exact_wipeout("cyclic" if layout == "cyclic" else "random", n_groups, r).mean


def theory_ckpt_period_s(cfg: TimelineConfig) -> float:
    """The availability-optimal period ``T_c* = T_s + sqrt(T_s^2 + 2 T_s (T_f + T_r))`` with
    ``T_f = E[T] m`` the mean time between wipe-outs (failures until a wipe-out times the full-system MTBF;
    live scaling ignored, as in the paper)."""
    tf = mean_wipeout_index(cfg) * cfg.mtbf_s
    return ckpt_period_optimal(cfg.save_s, tf, cfg.restart_s)


_HORIZON_F = float(_tk.HORIZON_US)


def make_trace(cfg: TimelineConfig, rng, length: int):
    """Failure trace for the kernel, drawn in blocks of 4096 so that a longer trace from the same generator state
    starts with the shorter one.

    System-level process: ``(gaps, victims)``, operational-time gaps (group-microseconds, >= 1) and victim draws. A
    gap beyond the horizon ``2^61`` (an MTBF of ~1e11 s or more at N = 1000) is clipped to it before the conversion
    to integers, so that it saturates (the failure never happens within the job) instead of overflowing.
    Unit clocks: ``(life,)``, standard Weibull variates (one per lifetime drawn; the kernel clamps the lifetimes).
    """
    if cfg.failures is not None:
        k = cfg.failures.shape
        return (np.concatenate([rng.weibull(k, 4096) for _ in range(-(-length // 4096))]),)
    k = cfg.shape
    scale = cfg.mtbf_s / math.gamma(1.0 + 1.0 / k)
    gaps, vic = [], []
    for _ in range(-(-length // 4096)):
        w = rng.weibull(k, 4096) * scale
        with np.errstate(over="ignore"):  # an infinite gap saturates like any other beyond the horizon
            ops = np.minimum(w * _US * cfg.n_groups, _HORIZON_F)
        gaps.append(np.maximum(1, np.rint(ops)).astype(np.int64))
        vic.append(rng.integers(0, 1 << 32, 4096, dtype=np.int64))
    return np.concatenate(gaps), np.concatenate(vic)


_RES_NAMES = ("ttt", "useful", "redundant", "patch", "allreduce", "rectlr_shrink", "checkpoint", "restart", "lost")
_BREAKDOWN = _RES_NAMES[1:]


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
        Failures that killed a group, failures absorbed by restarts, global restarts, checkpoints written,
        all-reduces that detected failures.
    steps_run : int
        Steps executed including lost ones; ``steps_done`` the progress reached (``n_steps`` unless capped).
    mean_s : float
        Mean compute layers per executed step.
    loops : int
        Kernel loop iterations (the simulation cost: failures + checkpoints, not steps, without jitter).
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
    raw_us: tuple = field(repr=False, default=())

    @property
    def availability(self) -> float:
        b = self.breakdown_s
        return 1.0 - (b["checkpoint"] + b["restart"] + b["lost"]) / self.ttt_s

    @property
    def useful_fraction(self) -> float:
        b = self.breakdown_s
        return (b["useful"] + b["allreduce"]) / self.ttt_s


_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)


def _run_us(cfg: TimelineConfig, holders, *trace, jitter_rng, units=None) -> np.ndarray:
    """One kernel run on ``trace`` (see :func:`make_trace`); ``units`` = ``cfg.unit_clocks()``."""
    res = np.zeros(_tk.N_RES, dtype=np.int64)
    P = np.zeros(_tk.N_P, dtype=np.int64)
    P[_tk.P_STRATEGY] = _STRAT_CODE[cfg.strategy]
    P[_tk.P_N_GROUPS], P[_tk.P_R] = holders.shape
    P[_tk.P_N_STEPS] = cfg.n_steps
    for slot, seconds in ((_tk.P_COMP_US, cfg.compute_s), (_tk.P_AR_US, cfg.allreduce),
                          (_tk.P_RESTART_US, cfg.restart_s), (_tk.P_SAVE_US, cfg.save_s),
                          (_tk.P_PERIOD_US, cfg.ckpt_period), (_tk.P_SHRINK_US, cfg.shrink_s),
                          (_tk.P_RECTLR_US, cfg.rectlr_s), (_tk.P_CAP_US, cfg.max_wall_factor * cfg.t0_s)):
        P[slot] = round(seconds * _US)
    P[_tk.P_LIVE_SCALING] = cfg.live_scaling
    PF = np.array([float(cfg.jitter_sd)])  # PF_JITTER_SD
    if cfg.failures is None:
        P[_tk.P_SOURCE] = _tk.SRC_SYSTEM
        gaps, vic = trace
        uscale, ptr, groups, life = _EMPTY_F, np.zeros(1, dtype=np.int64), _EMPTY_I, _EMPTY_F
    else:
        P[_tk.P_SOURCE] = _tk.SRC_UNITS
        gaps, vic = _EMPTY_I, _EMPTY_I
        uscale, P[_tk.P_N_GROUP_UNITS], ptr, groups, keep, _ = units if units is not None else cfg.unit_clocks()
        P[_tk.P_KEEP_AGES] = keep
        life = np.ascontiguousarray(trace[0], dtype=np.float64)
    rc = _tk.timeline(P, PF, holders, gaps, vic, uscale, ptr, groups, life, jitter_rng, res)
    if rc < 0:  # pragma: no cover - an internal error
        raise RuntimeError("ReCtlr found no assignment inside the timeline although no type was wiped out")
    return res


def _to_run(res) -> TimelineRun:
    b = {name: res[i] / _US for name, i in zip(_BREAKDOWN, range(_tk.R_USEFUL, _tk.R_LOST + 1))}
    return TimelineRun(res[_tk.R_TTT] / _US, "ok" if res[_tk.R_STATUS] == _tk.STATUS_OK else "capped", b,
                       int(res[_tk.R_FAILURES]), int(res[_tk.R_ABSORBED]), int(res[_tk.R_WIPEOUTS]),
                       int(res[_tk.R_CHECKPOINTS]), int(res[_tk.R_DETECTIONS]), int(res[_tk.R_STEPS_RUN]),
                       int(res[_tk.R_STEPS_DONE]), res[_tk.R_SUM_S] / max(res[_tk.R_STEPS_RUN], 1),
                       int(res[_tk.R_PATCH_SHARDS]), int(res[_tk.R_LOOPS]), int(res[_tk.R_ARRIVALS]),
                       tuple(int(x) for x in res))


@functools.lru_cache(maxsize=64)
def _prepared(cfg: TimelineConfig):
    """The holder table and unit clocks of a config, built once per config rather than once per replication
    (failure-domain clocks take ~20 ms to build at 600k GPUs, several times a job's simulation). The kernel only
    reads them."""
    return cfg.layout_object().holders, cfg.unit_clocks()


def run_timeline(cfg: TimelineConfig, seed_seq: np.random.SeedSequence, *, trace=None) -> TimelineRun:
    """One job from a replication seed (``seed_seq`` children: 0 = failure trace, 1 = jitter), or on a given
    ``trace = (gaps, victims)`` (then an exhausted trace is an error)."""
    if not isinstance(cfg, TimelineConfig):
        raise UsageTypeError(f"`cfg` must be a TimelineConfig, got {type(cfg).__name__}")
    holders, units = _prepared(cfg)
    trace_ss, jitter_ss = seed_seq.spawn(2) if trace is None else (None, seed_seq.spawn(2)[1])
    if trace is not None:
        trace = tuple(np.ascontiguousarray(a) for a in trace)
        res = _run_us(cfg, holders, *trace, jitter_rng=np.random.default_rng(jitter_ss), units=units)
        if res[_tk.R_STATUS] == _tk.STATUS_TRACE:
            raise UsageValueError(f"`trace` ran out after {trace[0].size} draws; give a longer one")
        return _to_run(res)
    trace_rng = np.random.default_rng(trace_ss)
    # first guess: the failures of 3 T0 of wall time (extended by doubling when a run needs more)
    trace = make_trace(cfg, trace_rng, 3 * int(cfg.t0_s / cfg.mtbf_s) + 4096)
    while True:
        res = _run_us(cfg, holders, *trace, jitter_rng=np.random.default_rng(jitter_ss), units=units)
        if res[_tk.R_STATUS] != _tk.STATUS_TRACE:
            return _to_run(res)
        more = make_trace(cfg, trace_rng, trace[0].size)  # same generator: the trace is extended
        trace = tuple(np.concatenate([a, b]) for a, b in zip(trace, more))


_EST = {
    "ttt_over_t0": "time to train / T0 (finished runs)",
    "availability": "uptime / wall clock (finished runs)",
    "useful_fraction": "(useful compute + all-reduce) / wall clock (finished runs)",
    "failures": "failures that killed a group, per run",
    "wipeouts": "global restarts per run",
    "checkpoints": "checkpoints per run",
    "mean_s": "mean compute layers per executed step",
}


@dataclass(frozen=True, eq=False)
class TTTResult:
    """Replications of one :class:`TimelineConfig` (runs in replication order)."""

    config: TimelineConfig
    runs: tuple
    root_entropy: int

    @property
    def reps(self) -> int:
        return len(self.runs)

    @property
    def capped_fraction(self) -> float:
        return sum(r.status == "capped" for r in self.runs) / len(self.runs)

    def values(self, name: str, finished_only: bool = True) -> np.ndarray:
        runs = [r for r in self.runs if r.status == "ok" or not finished_only]
        t0 = self.config.t0_s
        get = {"ttt_over_t0": lambda r: r.ttt_s / t0, "availability": lambda r: r.availability,
               "useful_fraction": lambda r: r.useful_fraction, "failures": lambda r: r.failures,
               "wipeouts": lambda r: r.wipeouts, "checkpoints": lambda r: r.checkpoints,
               "mean_s": lambda r: r.mean_s}
        if name in get:
            return np.array([get[name](r) for r in runs], dtype=float)
        if name in _BREAKDOWN:
            return np.array([r.breakdown_s[name] for r in runs], dtype=float)
        raise UsageValueError(f"`name` must be one of {sorted(list(get) + list(_BREAKDOWN))}, got {name!r}")

    def estimate(self, name: str, level: float = 0.95) -> MCEstimate:
        """Mean over the finished replications with its t interval (NaN if fewer than 2 finished)."""
        v = self.values(name)
        if v.size < 2:
            return MCEstimate(name, math.nan if v.size == 0 else float(v[0]), math.nan, math.nan, int(v.size),
                              level)
        return estimate_mean(v, name=name, level=level)

    def summary(self) -> dict:
        cfg = self.config
        d = {"strategy": cfg.strategy, "n_groups": cfg.n_groups, "r": cfg.r, "layout": cfg.layout,
             "reps": self.reps, "ckpt_period_s": cfg.ckpt_period, "allreduce_s": cfg.allreduce, "t0_s": cfg.t0_s,
             "capped_fraction": self.capped_fraction}
        for name in ("ttt_over_t0", "availability", "useful_fraction"):
            est = self.estimate(name)
            d[name] = est.mean
            d[f"{name}_ci95"] = list(est.ci)
        for name in ("failures", "wipeouts", "checkpoints", "mean_s"):
            d[f"{name}_mean"] = float(np.mean(self.values(name, finished_only=False)))
        d["breakdown"] = {name: float(np.mean(self.values(name, finished_only=False)) / cfg.t0_s)
                          for name in _BREAKDOWN}
        d["breakdown_units"] = "fraction of T0 (mean over all runs)"
        if self.capped_fraction == 1.0:
            d["status"] = (f"every run hit the wall-clock cap ({cfg.max_wall_factor:g} x T0) before finishing: "
                           f"no usable progress; mean progress "
                           f"{np.mean([r.steps_done for r in self.runs]) / cfg.n_steps:.3f} of the steps")
        elif self.capped_fraction > 0:
            d["status"] = "some runs hit the wall-clock cap; estimates use the finished runs only"
        else:
            d["status"] = "ok"
        return d

    def to_xarray(self):
        import xarray as xr

        data = {name: ("rep", self.values(name, finished_only=False)) for name in
                ("ttt_over_t0", "availability", "useful_fraction", "failures", "wipeouts", "checkpoints", "mean_s")
                + _BREAKDOWN}
        data["status"] = ("rep", np.array([r.status for r in self.runs]))
        ds = xr.Dataset(data, coords={"rep": np.arange(self.reps)})
        ds.attrs.update({k: (str(v) if v is None or isinstance(v, (bool, dict)) else v)
                         for k, v in self.config.to_dict().items()})
        ds.attrs["root_entropy"] = str(self.root_entropy)
        return ds


def simulate_ttt(cfg: TimelineConfig, reps: int, *, seed=0) -> TTTResult:
    """``reps`` independent jobs. Replication ``i`` uses ``SeedSequence(seed, spawn_key=(i,))`` whatever else is
    run, so strategies and parameters compared at one seed see the same failure traces (common random numbers).

    Examples
    --------
    >>> cfg = TimelineConfig("spare", 600, r=8, n_steps=500, jitter_sd=0.0)
    >>> res = simulate_ttt(cfg, 4, seed=1)
    >>> bool(res.estimate("ttt_over_t0").mean > 1.5)
    True
    """
    if not isinstance(cfg, TimelineConfig):
        raise UsageTypeError(f"`cfg` must be a TimelineConfig, got {type(cfg).__name__}")
    reps = as_int(reps, "reps", min_value=1)
    seed = as_int(seed, "seed", min_value=0)
    runs = tuple(run_timeline(cfg, np.random.SeedSequence(seed, spawn_key=(i,))) for i in range(reps))
    return TTTResult(cfg, runs, seed)
