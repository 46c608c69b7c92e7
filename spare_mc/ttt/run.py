"""Time to train: running jobs on an event-driven timeline of CKPT-only, Rep+CKPT and SPARe+CKPT.

This module runs the jobs: the per-config job plan (:func:`_job_plan`), the kernel's parameters and calls
(:func:`_kernel_params`, :func:`_run_us`), the failure traces (:func:`make_trace`), the job seeds
(:func:`job_seed`), one job (:func:`run_timeline`; on a failure log's events, :func:`run_log_job`) and replications
(:func:`simulate_ttt`). The configuration is :mod:`spare_mc.ttt.config`'s, the results :mod:`spare_mc.ttt.results`'
(with the accounting of a run's time), the theory :mod:`spare_mc.ttt.theory`'s and :mod:`spare_mc.ttt.period`'s.

The model (docs/model.md, sections 6-8; every choice the paper leaves open is a named field of :class:`TimelineConfig`)
-----------------------------------------------------------------------------------------------------------------------
- The job is ``n_steps`` synchronous steps. A step computes ``S`` stack layers (``S x T_comp``; ``N / n_sets x
  T_comp`` for Rep on its ``n_sets = floor(N / r)`` replica sets, ``r x T_comp`` when ``r`` divides ``N``;
  ``T_comp`` for CKPT-only), then the all-reduce ``T_a``. ``T0 = n_steps (T_comp + T_a)``.
- **Failures** (default, the paper's setting): a system-level Weibull renewal process (shape ``k``, mean ``m`` for
  the full system) whose rate is proportional to the live GPUs (``live_scaling``): inter-arrivals are drawn in
  *operational time*, which runs at the live fraction of the system. Each failure kills a uniformly random live
  group (groups are equal-sized). **Options** (``failures=``): per-GPU Weibull lifetimes (:class:`PerGPU`; a
  group fails at the minimum of its GPUs' lifetimes) and failure domains (:class:`DomainFailures`: a node, rack,
  power domain or pod of the ``topology`` takes down every group it touches -- one level, or several at once --
  plus optional per-GPU background). These
  are unit clocks: at a global restart, lifetimes are redrawn for every unit (``age_policy="renew"``) or only for
  the replaced hardware -- units that failed and those that would have failed during the restart -- while the
  others keep their ages (``"keep"``; domains follow their background's policy).
- **Detection**: failures that arrive up to the end of a step's compute phase are detected at that step's
  all-reduce, together. Failures during the all-reduce, ReCtlr, patch or a checkpoint are detected at the next
  step's all-reduce (their groups are dead meanwhile and no longer fail).
- **SPARe**: at a detection the real ReCtlr (:mod:`spare_mc.mc.reorder`) runs on the newly dead groups: it costs
  ``T_rectlr``, then the patch compute (``patch x T_comp``, the largest number of shards one survivor recomputes),
  then the communicator shrink ``T_shrink``, then the all-reduce; the step completes and ``S*`` holds from the next
  step on (``patch_cost``: the patch is per shard, none, or the whole step ``S* x T_comp``). **Rep**: a failure is
  masked until a whole replica set is dead; a masked detection costs ``T_shrink`` (no ReCtlr, no patch;
  ``rep_masked_cost``: plus a resynchronisation ``rep_resync_s``, or plus a recomputation of the step, booked as
  patch). Both may add a fixed cost ``masked_detect_s`` per masked detection. **CKPT-only**: every detection is a
  wipe-out.
- **Wipe-out** (detected at the all-reduce): the step is lost, a global restart takes ``T_r``, progress rolls back
  to the last checkpoint (all work since is lost), every group is back, ``S`` and the stacks reset. Failures that
  arrive during a restart are absorbed by it (the failure clock keeps running at full rate; the restart brings
  every group back anyway); an arrival at the exact end of the restart hits the restarted system. With
  ``restart_failures="stay_dead"`` they kill live groups instead, which stay dead when the job resumes and are
  detected at its first all-reduce.
- **Checkpoints**: after a step completes, if at least ``T_c`` of wall time has passed since the end of the last
  checkpoint (or restart) -- or, with ``ckpt_every_steps = k``, after every ``k``-th step since then -- a checkpoint
  of cost ``T_s`` is written. It completes (default): the model state is replicated across data-parallel groups, so
  a failure during the save does not corrupt it; such a failure is detected at the next all-reduce and, if it wipes
  out, rolls back to this checkpoint. With ``ckpt_failure="lost"`` a failure arriving during the save makes the
  checkpoint unusable (its time is spent, the rollback point stays the previous one).
- **Jitter** (``jitter_sd > 0``): every duration is multiplied by an independent ``Normal(1, jitter_sd^2)``
  (clipped at 0). Times are integer microseconds.
- **Cost**: stretches of failure-free steps are skipped in O(1), so the cost grows with the number of failures
  and checkpoints, not steps. Without jitter the skip is exact (``m`` identical steps). With jitter, a stretch of
  ``m`` steps that ends -- beyond 12 standard deviations -- before the next failure arrival, the next checkpoint
  and the wall-clock cap has its total compute and all-reduce times drawn as normal sums of ``m`` independent
  jitters (exact in law, rounded to the microsecond once per stretch instead of once per step); steps near those
  boundaries are simulated one by one.
"""

from __future__ import annotations

import collections
import functools
import math
import threading

import numpy as np

from .._kernels import rectlr as _rk
from .._kernels import rectlr_calls as _rc
from .._kernels import timeline as _tk
from .._lib.resources import check_memory
from .._lib.seeding import root_seed_sequence, root_text, trace_seed_sequence
from .._lib.validation import UsageTypeError, UsageValueError, as_int
from . import cold_start as _cold
from .config import CKPT_POLICIES, PATCH_COSTS, REP_MASKED_COSTS, REPAIRS, TimelineConfig, UnitClocks
from .config import US_PER_S as _US  # the bodies below count microseconds in `_US`
from .results import BREAKDOWN as _BREAKDOWN
from .results import TimelineRun, TTTResult

__all__ = ["simulate_ttt", "run_timeline", "make_trace"]

_STRAT_CODE = {"ckpt": _tk.STRAT_CKPT, "rep": _tk.STRAT_REP, "spare": _tk.STRAT_SPARE}


@functools.lru_cache(maxsize=64)
def _kernel_sets(sets):
    return (_read_only(np.ascontiguousarray(sets.set_of_group, dtype=np.int64)),
            _read_only(np.ascontiguousarray(sets.sizes, dtype=np.int64)))


def _rep_kernel_sets(cfg):
    """Rep's replica sets for the kernel: the set of each group and each set's size (int64, read only)."""
    return _kernel_sets(cfg.replica_sets())


_HORIZON_F = float(_tk.HORIZON_US)


def make_trace(cfg: TimelineConfig, rng, length: int):
    """Failure trace for the kernel, drawn in blocks of 4096 so that a longer trace from the same generator state
    starts with the shorter one.

    System-level process: ``(gaps, victims)``, operational-time gaps (group-microseconds, >= 1) and victim draws. A
    gap beyond the horizon ``2^61`` (an MTBF of ~1e11 s or more at N = 1000) is clipped to it before the conversion
    to integers, so that it saturates (the failure never happens within the job) instead of overflowing.
    Unit clocks: ``(life,)``, standard Weibull variates (one per lifetime drawn; the kernel clamps the lifetimes);
    sampled as a race (:attr:`TimelineConfig.unit_race`): ``(life, victims)``, standard exponentials (one per
    arrival drawn) and victim draws in ``[0, 2^32)`` (one per arrival that happens), as the system process's.
    """
    if cfg.failures is not None:
        k = cfg.failures.shape
        blocks = range(-(-length // 4096))
        if not cfg.unit_race:
            return (np.concatenate([rng.weibull(k, 4096) for _ in blocks]),)
        life, vic = [], []
        for _ in blocks:
            life.append(rng.standard_exponential(4096))
            vic.append(rng.integers(0, 1 << 32, 4096, dtype=np.int64))
        return np.concatenate(life), np.concatenate(vic)
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


#: The failure traces a process keeps (:func:`_job_trace`: system-level and unit-clock ones), at most this many bytes
#: in all.
TRACE_CACHE_BYTES = 48 << 20


class _TraceCache:
    """The traces of :func:`_job_trace`: least recently used first, dropped beyond :data:`TRACE_CACHE_BYTES` in
    all. The total is kept as traces come and go: summed over the cache at every insertion, it cost more than the
    traces it saved when the jobs' seeds outnumber the traces the cache holds (the Llama 3 study, 1,000 seeds per
    row: 5.3 s of its 17 s, 2026-12-07). Thread-safe (a threaded dask scheduler runs jobs of one process at once)."""

    def __init__(self):
        self._traces: collections.OrderedDict = collections.OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._traces)

    def clear(self) -> None:
        with self._lock:
            self._traces.clear()
            self._bytes = 0

    def get(self, key):
        """The trace kept for ``key`` (now the most recently used), or ``None``."""
        with self._lock:
            got = self._traces.get(key)
            if got is not None:
                self._traces.move_to_end(key)
            return got

    def put(self, key, trace: tuple) -> None:
        """Keep ``trace`` for ``key`` -- or the one kept already if it is as long (two threads that missed at once
        put theirs in turn) -- as the most recent, then drop the least recently used traces while the total exceeds
        :data:`TRACE_CACHE_BYTES`. A trace larger than the whole budget is not kept (it would stay in memory after
        its job, outside the job's memory check)."""
        if sum(a.nbytes for a in trace) > TRACE_CACHE_BYTES:
            return
        with self._lock:
            old = self._traces.pop(key, None)
            if old is not None:
                self._bytes -= sum(a.nbytes for a in old)
                if old[0].size >= trace[0].size:
                    trace = old
            self._traces[key] = trace
            self._bytes += sum(a.nbytes for a in trace)
            while self._bytes > TRACE_CACHE_BYTES and len(self._traces) > 1:
                self._bytes -= sum(a.nbytes for a in self._traces.popitem(last=False)[1])


_TRACES = _TraceCache()


def _job_trace(cfg: TimelineConfig, seed_seq: np.random.SeedSequence, length: int) -> tuple:
    """``make_trace(cfg, default_rng(job_seed(seed_seq, 0)), length)``, the failure trace of a job, from a cache.

    Under system-level failures the trace depends only on the replication's seed, ``n_groups``, ``mtbf_s`` and the
    shape -- not on the strategy, ``r``, the period or any option -- so every grid point of a sweep at one ``N``
    runs replication ``i`` on the same trace (common random numbers) and would draw it again. The process keeps the
    longest trace drawn per key (least recently used out beyond :data:`TRACE_CACHE_BYTES`) and returns its first
    ``ceil(length / 4096)`` blocks: exactly :func:`make_trace`'s arrays, whose blocks of 4096 make a longer trace
    start with the shorter one (``tests/test_timeline.py`` checks the arrays and the runs against it). A unit-clock
    trace holds standard variates, the kernel scales them: it depends on the seed and, unless the clocks race, on
    the units' Weibull shape alone, so the failure models of one ``N`` share it too (the period study draws each
    replication's trace for 9 periods and 2 arms)."""
    size = -(-length // 4096) * 4096
    # the seed's entropy: an int (Python's or numpy's) or a sequence of them (a list or array seed, unhashable as it
    # is); seeds that give the same key give the same streams
    entropy = int(seed_seq.entropy) if np.ndim(seed_seq.entropy) == 0 else tuple(int(x) for x in seed_seq.entropy)
    process = ((cfg.mtbf_s, cfg.shape) if cfg.failures is None
               else ("race",) if cfg.unit_race else ("weibull", float(cfg.failures.shape)))
    key = (entropy, seed_seq.spawn_key, seed_seq.pool_size, cfg.n_groups, *process)
    got = _TRACES.get(key)
    if got is None or got[0].size < size:
        got = make_trace(cfg, np.random.default_rng(job_seed(seed_seq, 0)), size)
        _TRACES.put(key, got)
    return tuple(a[:size] for a in got)


#: Memory of one TimelineRun with its raw results (measured: about 1.4 KB; rounded up).
RUN_BYTES = 2048

_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)


def _read_only(a: np.ndarray) -> np.ndarray:
    """``a`` as a read-only array (a view if it is writable). The kernel's table arguments (holders, replica sets)
    are always read-only, so that numba compiles one signature of it."""
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


_NO_SETS = _read_only(np.zeros(0, dtype=np.int64))
#: The kernel's ``live0`` for the strategies without ReCtlr: ReCtlr's blocks with no columns (their rows and types
#: from ``alloc`` itself, run as plain Python), read only like :func:`_live_state`'s, so that numba compiles one
#: signature of the kernel (a SPARe job given it fails: :func:`_run_us` builds the state for a random layout).
_NO_LIVE0 = tuple(_read_only(np.ascontiguousarray(b[..., :0])) for b in _rk.alloc.py_func(0, 1))


def _live_state(holders: np.ndarray):
    """SPARe's fully live ReCtlr state on ``holders`` (:func:`spare_mc._kernels.timeline.live_state`: the fields of
    a ReCtlr ``State``, read only, as the plain tuple the kernel takes), which the kernel copies at the start of a job
    instead of building it; None if ReCtlr finds no initial assignment (the kernel then finds none either and
    reports it)."""
    blocks, rc = _tk.live_state(holders)
    return None if rc < 0 else tuple(_read_only(b) for b in blocks)


def race_rates(units: UnitClocks) -> tuple:
    """The race's constants from the units' Weibull scales (microseconds): ``1 / k`` and the hazard rate of a unit
    of each class in the clock ``sigma = (t - t0)^k`` (``scale^-k``; 0 for a class without units).

    A unit with Weibull(k, ``lam``) lifetime from ``t0`` has cumulative hazard ``((t - t0) / lam)^k = lam^-k
    sigma``: in ``sigma`` every unit is an exponential clock of rate ``lam^-k``, so the first of the active units
    fails after an exponential of rate ``sum lam_u^-k`` and is a given unit with probability proportional to its
    rate (the units of a class share one scale).
    """
    rates, start = [], 0
    for end in units.class_ends:
        rates.append(float(units.uscale_us[start]) ** -units.shape if end > start else 0.0)
        start = end
    return 1.0 / units.shape, tuple(rates)


@functools.lru_cache(maxsize=64)
def _kernel_params(cfg: TimelineConfig):
    """The kernel's parameter blocks ``(P, PF)`` with every slot that depends on the config alone, and Rep's replica
    sets ``(gset, ssize)`` (empty for the others), built once per config rather than once per job (the config's
    derived durations -- the theory checkpoint period, the restart, the cap -- cost more than a short job's setup
    otherwise). The failure source's slots (system, unit clocks or a log) are left at 0 for :func:`_run_us` to fill
    in a copy. All four arrays are read only."""
    P = np.zeros(_tk.N_P, dtype=np.int64)
    P[_tk.P_STRATEGY] = _STRAT_CODE[cfg.strategy]
    P[_tk.P_N_GROUPS], P[_tk.P_R] = cfg.n_groups, cfg.r
    P[_tk.P_N_STEPS] = cfg.n_steps
    every = cfg.ckpt_every_steps
    for slot, seconds in ((_tk.P_COMP_US, cfg.compute_s), (_tk.P_AR_US, cfg.step_allreduce),
                          (_tk.P_RESTART_US, cfg.restart), (_tk.P_SAVE_US, cfg.save_s),
                          (_tk.P_PERIOD_US, math.inf if every or cfg.ckpt_policy != "periodic" else cfg.ckpt_period), (_tk.P_SHRINK_US, cfg.shrink_s),
                          (_tk.P_RECTLR_US, cfg.rectlr_s), (_tk.P_CAP_US, cfg.max_wall_factor * cfg.t0_s),
                          (_tk.P_RESYNC_US, cfg.rep_resync_s), (_tk.P_MASKED_DETECT_US, cfg.masked_detect_s)):
        # every field is validated to fit; a derived period (the theory optimum for an astronomical MTBF) may not:
        # beyond the horizon it means "never" (the wall clock stays below 2^59 microseconds), as does the period
        # when checkpoints are counted in steps
        P[slot] = round(seconds * _US) if seconds * _US < _HORIZON_F else int(_tk.HORIZON_US)
    if cfg.strategy == "rep":
        gset, ssize = _rep_kernel_sets(cfg)
        P[_tk.P_REP_COMP_US] = c_rep = cfg.rep_step_compute_us
        # a whole number of layers per step (r divides N): the kernel's useful share is one division
        P[_tk.P_REP_LAYERS] = c_rep // P[_tk.P_COMP_US] if P[_tk.P_COMP_US] and c_rep % P[_tk.P_COMP_US] == 0 else 0
    else:
        gset, ssize = _NO_SETS, _NO_SETS
    P[_tk.P_REP_COST] = REP_MASKED_COSTS[cfg.rep_masked_cost]
    P[_tk.P_PATCH_COST] = PATCH_COSTS[cfg.patch_cost]
    _variant_slots(cfg, P)
    P[_tk.P_FINAL_CKPT] = cfg.final_checkpoint
    if cfg.repair != "none":
        P[_tk.P_REPAIR_US] = round(cfg.repair_s * _US)
        P[_tk.P_REJOIN_CKPT] = cfg.rejoin == "checkpoint"
        P[_tk.P_REJOIN_US] = round(cfg.rejoin_s * _US)
    P[_tk.P_CKPT_EVERY] = every if every else int(_tk.HORIZON_US)
    P[_tk.P_LIVE_SCALING] = cfg.live_scaling
    P[_tk.P_LOAD_US] = round(cfg.load_s * _US)
    P[_tk.P_MEM_COPIES] = cfg.memory_copies
    P[_tk.P_REMOTE_EVERY] = cfg.remote_every
    P[_tk.P_ASYNC] = cfg.ckpt_async
    if cfg.memory_copies > 0:
        P[_tk.P_MEM_SAVE_US] = round(cfg.memory_save * _US)
        P[_tk.P_MEM_LOAD_US] = round(cfg.memory_load * _US)
    PF = np.zeros(_tk.N_PF)
    PF[_tk.PF_JITTER_SD] = cfg.jitter_sd if cfg.draws_jitter else 0.0  # 0: the kernel draws no jitter
    PF[_tk.PF_ASYNC_F] = cfg.async_slowdown
    PF[_tk.PF_ASYNC_G] = (cfg.async_slowdown - 1.0) / cfg.async_slowdown
    if cfg.ckpt_policy != "periodic":
        PF[_tk.PF_HAZARD_LAM_S] = cfg.mtbf_s / math.gamma(1.0 + 1.0 / cfg.shape)
        PF[_tk.PF_HAZARD_SHAPE] = cfg.shape
        PF[_tk.PF_HAZARD_FACTOR] = cfg.ckpt_period_factor
        PF[_tk.PF_HAZARD_SAVE_S] = cfg.save_s
        PF[_tk.PF_HAZARD_RESTART_S] = cfg.remote_restart  # T_r as the periodic theory has it: with the load
    if cfg.repair == "lognormal":  # mean repair_s: mu = log(mean) - sigma^2 / 2, in log-seconds
        PF[_tk.PF_REPAIR_SIGMA] = cfg.repair_sd
        PF[_tk.PF_REPAIR_MU] = math.log(cfg.repair_s) - cfg.repair_sd ** 2 / 2
    return _read_only(P), _read_only(PF), gset, ssize


def _run_us(cfg: TimelineConfig, holders, *trace, jitter_rng, units=None, repair_rng=None, log=None,
            live0=None) -> np.ndarray:
    """One kernel run on ``trace`` (see :func:`make_trace`); ``units`` = ``cfg.unit_clocks()``. ``holders`` is
    SPARe's holder table; the other strategies ignore it (``None``: CKPT-only's one-column table). ``repair_rng``
    draws lognormal repair times (default: a generator seeded 0); the kernel draws from ``jitter_rng`` only with
    ``jitter_sd > 0`` and from ``repair_rng`` only with ``repair="lognormal"``. ``log = (times_us, ptr, groups)``
    replays those failure events instead (times from the job's start, non-decreasing; event ``e`` touches
    ``groups[ptr[e]:ptr[e + 1]]``, and kills those still live); ``trace`` is then ignored. With ``repair="log"`` the
    log has a fourth array, ``repair_us`` (each event's repair time, -1 unknown). ``live0``: SPARe's fully live
    ReCtlr state on ``holders`` (:func:`_live_state`), else built here (a random layout's table)."""
    if cfg.repair == "log" and (log is None or len(log) != 4):
        raise UsageValueError("repair='log' takes each group's repair time from a failure log: replay one with "
                              "replay_log_ttt (a log with a repair_s column)")
    res = np.zeros(_tk.N_RES, dtype=np.int64)
    if holders is None:
        holders = _one_column(cfg.n_groups)
    elif cfg.strategy == "spare" and holders.shape != (cfg.n_groups, cfg.r):
        raise UsageValueError(f"`holders` must have shape (N, r) = {(cfg.n_groups, cfg.r)}, got {holders.shape}")
    holders = _read_only(holders)  # as a Layout's: one compiled signature of the kernel
    P0, PF0, gset, ssize = _kernel_params(cfg)
    P, PF = P0.copy(), PF0.copy()  # writable, as the kernel's signature has them; the source's slots follow
    if log is not None:
        P[_tk.P_SOURCE] = _tk.SRC_LOG
        gaps, ptr, groups = (np.ascontiguousarray(a, dtype=np.int64) for a in log[:3])
        vic = np.ascontiguousarray(log[3], dtype=np.int64) if cfg.repair == "log" else _EMPTY_I  # repair times
        uscale, life = _EMPTY_F, _EMPTY_F
    elif cfg.failures is None:
        P[_tk.P_SOURCE] = _tk.SRC_SYSTEM
        gaps, vic = trace
        uscale, ptr, groups, life = _EMPTY_F, np.zeros(1, dtype=np.int64), _EMPTY_I, _EMPTY_F
    else:
        P[_tk.P_SOURCE] = _tk.SRC_UNITS
        gaps, vic = _EMPTY_I, _EMPTY_I
        units = units if units is not None else cfg.unit_clocks()
        uscale, ptr, groups = units.uscale_us, units.dom_ptr, units.dom_groups
        P[_tk.P_N_GROUP_UNITS], P[_tk.P_N_UNITS] = units.n_group_units, uscale.size
        P[_tk.P_KEEP_AGES] = units.keep
        ends = units.class_ends
        P[_tk.P_CLASS_END:_tk.P_CLASS_END + _tk.N_CLASSES] = list(ends) + [ends[-1]] * (_tk.N_CLASSES - len(ends))
        life = np.ascontiguousarray(trace[0], dtype=np.float64)
        if cfg.unit_race:
            P[_tk.P_UNIT_RACE] = 1
            vic = np.ascontiguousarray(trace[1], dtype=np.int64)
            PF[_tk.PF_INV_K], rates = race_rates(units)
            PF[_tk.PF_RATE:_tk.PF_RATE + len(rates)] = rates
    if repair_rng is None:
        repair_rng = np.random.default_rng(0) if cfg.repair == "lognormal" else _UNDRAWN
    spare = cfg.strategy == "spare"
    if live0 is None and spare:  # a random layout's table (the kernel calls ReCtlr but never compiles it)
        live0 = _live_state(holders)
    # the records as plain tuples: numba types a NamedTuple argument in Python, ~3 us more per record and job
    tables = tuple(_tk.Tables(holders=holders, live0=_NO_LIVE0 if live0 is None else live0, gset=gset, ssize=ssize))
    trace = tuple(_tk.Trace(gaps=gaps, victims=vic, uscale=uscale, life=life, dptr=ptr, dgroups=groups))
    ext = _tk.variant(P)
    step, reset = _rc.calls(spare)
    _cold.wait(ext is not None)  # a second process compiling the kernel (a first SPARe job)
    if _tk.notice_first_compile(ext):  # the variant's first call in this process: it may compile
        with _rc.quiet():
            rc = _tk.timeline(P, PF, tables, trace, jitter_rng, repair_rng, res, step, reset, ext)
    else:
        rc = _tk.timeline(P, PF, tables, trace, jitter_rng, repair_rng, res, step, reset, ext)
    if jitter_rng is _UNDRAWN or repair_rng is _UNDRAWN:
        _check_undrawn()
    if rc == -2:  # pragma: no cover - an internal error
        raise RuntimeError("the timeline's basic kernel variant was given a job that needs the extended one")
    if rc < 0:  # pragma: no cover - an internal error
        raise RuntimeError("ReCtlr found no assignment inside the timeline although no type was wiped out")
    return res


#: The kernel's result slot of each part of a run's time (:attr:`TimelineRun.breakdown_s`, in its order).
_BREAKDOWN_SLOTS = {"useful": _tk.R_USEFUL, "redundant": _tk.R_REDUNDANT, "patch": _tk.R_PATCH,
                    "allreduce": _tk.R_ALLREDUCE, "rectlr_shrink": _tk.R_RECTLR, "checkpoint": _tk.R_CKPT,
                    "restart": _tk.R_RESTART, "lost": _tk.R_LOST}
if tuple(_BREAKDOWN_SLOTS) != _BREAKDOWN:  # pragma: no cover - a part added to one of them only
    raise ImportError("_BREAKDOWN_SLOTS must name every part of the breakdown, in its order")
#: The kernel's result slot of each count of a :class:`TimelineRun`.
_COUNT_SLOTS = {"failures": _tk.R_FAILURES, "absorbed": _tk.R_ABSORBED, "wipeouts": _tk.R_WIPEOUTS,
                "checkpoints": _tk.R_CHECKPOINTS, "detections": _tk.R_DETECTIONS, "steps_run": _tk.R_STEPS_RUN,
                "steps_done": _tk.R_STEPS_DONE, "patch_shards": _tk.R_PATCH_SHARDS, "loops": _tk.R_LOOPS,
                "arrivals_used": _tk.R_ARRIVALS, "checkpoints_lost": _tk.R_CKPTS_LOST, "rejoins": _tk.R_REJOINS,
                "memory_restarts": _tk.R_MEM_RESTARTS, "remote_fallbacks": _tk.R_FALLBACKS}


def _to_run(res, cfg: TimelineConfig) -> TimelineRun:
    """A kernel run's results ``res`` as a :class:`TimelineRun` (times in seconds: the float64 of ``res[i] / 1e6``)."""
    raw = res.tolist()  # the slots as Python ints, in one call
    # every Rep step computes N / n_sets layers (r when r divides N)
    mean_s = (cfg.replica_sets().compute_factor if cfg.strategy == "rep"
              else res[_tk.R_SUM_S] / max(res[_tk.R_STEPS_RUN], 1))
    return TimelineRun(ttt_s=res[_tk.R_TTT] / _US, status="ok" if raw[_tk.R_STATUS] == _tk.STATUS_OK else "capped",
                       breakdown_s={name: res[slot] / _US for name, slot in _BREAKDOWN_SLOTS.items()}, mean_s=mean_s,
                       async_slowdown_s=res[_tk.R_ASYNC_SLOW] / _US, raw_us=tuple(raw),
                       **{name: raw[slot] for name, slot in _COUNT_SLOTS.items()})


@functools.lru_cache(maxsize=64)
def _one_column(n_groups):
    """CKPT-only's holder table (group ``j`` holds type ``j``), the placeholder of the strategies without ReCtlr."""
    return _read_only(np.arange(n_groups, dtype=np.int64).reshape(n_groups, 1))


@functools.lru_cache(maxsize=64)
def _prepared(cfg: TimelineConfig):
    """The holder table and unit clocks of a config, built once per config rather than once per replication
    (failure-domain clocks took ~20 ms to build at 600k GPUs, several times a job's simulation, when their domains
    were built GPU by GPU; 0.6-2.8 ms since). The kernel only reads them. A random SPARe layout is drawn per job
    instead (``None`` here); CKPT-only and Rep run without one (Rep on its replica sets)."""
    return (cfg.layout_object().holders if cfg.strategy == "spare" and not cfg.random_layout else
            _one_column(cfg.n_groups) if cfg.strategy != "spare" else None), cfg.unit_clocks()


def job_seed(seed_seq: np.random.SeedSequence, stream: int) -> np.random.SeedSequence:
    """Child ``stream`` of a replication seed: 0 draws the failure trace, 1 the jitter, 2 a random layout, 3 the
    repair times.

    Derived from the seed's entropy and spawn key, so it is the same however often the seed was used (unlike
    ``SeedSequence.spawn``, whose children depend on how many were spawned before); for a fresh seed it equals
    ``seed_seq.spawn(3)[stream]``.
    """
    return np.random.SeedSequence(seed_seq.entropy, spawn_key=(*seed_seq.spawn_key, stream),
                                  pool_size=seed_seq.pool_size)


class _JobPlan:
    """What the jobs of one config share (:func:`_job_plan`): the holder table (None: a random layout, drawn per job)
    and unit clocks of :func:`_prepared`, SPARe's fully live ReCtlr state on that table (``live0``,
    :func:`_live_state`; None otherwise), the bytes per draw of a failure trace, and ``trace_length``, the length a
    job's first trace is drawn with.

    ``trace_length`` starts as the failures of 3 T0 of wall time (at most of twice the cap; at least one) plus a
    lifetime per unit when unit clocks are not a race, and grows to the longest trace a job of the config needed: a
    run that exhausts its trace is run again on a longer one, so a config whose jobs need more than the first guess
    (CKPT-only under unit clocks: tens of thousands of absorbed failures) pays that once rather than at every job. A
    run that does not exhaust its trace does not depend on its length (the kernel reads the draws in order), so the
    results do not depend on it either (:func:`make_trace`: a longer trace starts with the shorter one).
    """

    __slots__ = ("holders", "units", "live0", "per_draw", "trace_length")

    def __init__(self, cfg: TimelineConfig, log: bool = False):
        self.holders, self.units = _prepared(cfg)
        if cfg.strategy == "spare":  # a first SPARe job: the kernel's variant compiles in a second process while this
            # one compiles ReCtlr (``log``: the plan of a failure log's jobs, whose source needs the extended variant)
            _cold.start(needs_extended(cfg, log))
        self.live0 = _live_state(self.holders) if cfg.strategy == "spare" and self.holders is not None else None
        race = cfg.failures is not None and cfg.unit_race
        self.per_draw = 8 if cfg.failures is not None and not race else 16
        length = max(1, int(min(3.0 * cfg.t0_s / cfg.mtbf_s, 2.0 * cfg.cap_s / cfg.mtbf_s)))
        if cfg.failures is not None and not race:  # a lifetime per unit at the start
            length += self.units.uscale_us.size
        self.trace_length = length


def _variant_slots(cfg: TimelineConfig, P: np.ndarray) -> None:
    """Set the slots of ``P`` that choose the kernel's variant besides the source (what
    :func:`spare_mc._kernels.timeline.variant` reads): restarts that stay dead or start again, immediate
    detection, the checkpoint policy, repair, saves lost to a failure."""
    P[_tk.P_STAY_DEAD] = cfg.restart_failures == "stay_dead"
    P[_tk.P_RESTART_AGAIN] = cfg.restart_failures == "restart_again"
    P[_tk.P_DETECT_IMMEDIATE] = cfg.detection == "immediate"
    P[_tk.P_CKPT_POLICY] = CKPT_POLICIES[cfg.ckpt_policy]
    P[_tk.P_REPAIR] = REPAIRS[cfg.repair]
    P[_tk.P_CKPT_LOST] = cfg.ckpt_failure == "lost"


def needs_extended(cfg: TimelineConfig, log: bool = False) -> bool:
    """Whether the jobs of ``cfg`` run the timeline kernel's extended variant (``log``: a failure log's jobs, whose
    source always needs it), the basic one otherwise (see "Compilation" in :mod:`spare_mc._kernels.timeline`).
    Reads only the options that choose it, not the config's derived durations (the theory checkpoint period
    compiles the exact wipe-out law's kernels)."""
    P = np.zeros(_tk.N_P, dtype=np.int64)
    _variant_slots(cfg, P)
    P[_tk.P_SOURCE] = _tk.SRC_LOG if log else _tk.SRC_UNITS if cfg.failures is not None else _tk.SRC_SYSTEM
    return _tk.variant(P) is not None


@functools.lru_cache(maxsize=64)
def _job_plan(cfg: TimelineConfig, log: bool = False) -> _JobPlan:
    """The :class:`_JobPlan` of a config, built once (one cache lookup per job instead of one per piece; a SPARe
    plan holds ~0.5 MB of ReCtlr state at N = 600, r = 8, ~1.4 MB at N = 1000, r = 20; 64 plans are kept). ``log``:
    the plan of a failure log's jobs (:func:`run_log_job`), kept apart only because its first use compiles the other
    variant of the kernel."""
    return _JobPlan(cfg, log)


def _trace_memory_check(cfg: TimelineConfig, length: int, per_draw: int, grown_from: int = 0) -> None:
    """Refuse a trace of ``length`` draws that would not fit in the memory budget at its peak: :func:`make_trace`
    holds its blocks and their concatenation (2 copies of what it draws); a trace extended from ``grown_from`` draws
    also holds the old trace and the new one, so ``grown_from + 2 (length - grown_from) + length`` (4 times the old
    length when it doubles)."""
    drawn = length - grown_from
    peak = (grown_from + 2 * drawn + (length if grown_from else 0)) * per_draw
    check_memory(peak, lambda: f"the failure trace of one job ({length:,} draws: MTBF {cfg.mtbf_s:g} s against a "
                 f"wall-clock cap of {cfg.cap_s:.4g} s; the copies made while it is drawn included)",
                 "a larger `mtbf_s`, fewer `n_steps` or a smaller `max_wall_factor` needs less")  # built only if shown


#: The generator the kernel gets for a stream a job never draws from: the jitter unless
#: :attr:`TimelineConfig.draws_jitter`, the repair times unless ``repair="lognormal"`` (the kernel draws them only
#: then). It saves a job two seed derivations and two generators (~0.05 ms, a twentieth of a SPARe job at 600k GPUs)
#: and must never be drawn from: a draw would come from a stream shared by every job, not the job's own, so the
#: results would depend on the jobs run before (a sweep and the API would disagree). :func:`_check_undrawn` raises
#: if it was.
_UNDRAWN = np.random.default_rng(0)
_UNDRAWN_STATE = _UNDRAWN.bit_generator.state


def _check_undrawn() -> None:
    """Raise ``RuntimeError`` (an internal error) if a kernel run drew from :data:`_UNDRAWN`.

    Checked on the host after the run, not inside the kernel: the bit generator's state is compared with its initial
    one (2.7 us per job, measured on a loaded 2-core machine: about 0.3% of a Rep job and 0.15% of a SPARe job at
    the paper's setting), which catches a draw from any code path, present or future, and costs the kernel nothing. A sentinel tested at the draw sites would cost a branch per draw and catch only the
    sites that remember to test it -- a new jittered quantity is exactly the one that would not. The state is
    restored before raising, so that only the run that drew is blamed."""
    if _UNDRAWN.bit_generator.state != _UNDRAWN_STATE:
        _UNDRAWN.bit_generator.state = _UNDRAWN_STATE
        raise RuntimeError("the timeline kernel drew from the placeholder generator of a stream this config never "
                           "draws from (the jitter when TimelineConfig.draws_jitter is False, the repair times unless "
                           "repair='lognormal'): a draw the config's test does not cover")


def _job_rngs(cfg: TimelineConfig, seed_seq: np.random.SeedSequence) -> tuple:
    """The jitter and repair generators of a job (children 1 and 3 of its seed), or :data:`_UNDRAWN` for a stream
    the config never draws from."""
    jitter = np.random.default_rng(job_seed(seed_seq, 1)) if cfg.draws_jitter else _UNDRAWN
    repair = np.random.default_rng(job_seed(seed_seq, 3)) if cfg.repair == "lognormal" else _UNDRAWN
    return jitter, repair


def _checked_trace(cfg: TimelineConfig, trace) -> tuple:
    """A caller's ``trace`` as the kernel's contiguous arrays, or a ``UsageValueError`` / ``UsageTypeError`` naming
    the array and the first entry that breaks the rule of :func:`make_trace`: gaps are integers >= 1, victim draws
    integers in ``[0, 2^32)`` (the kernel takes the victim of rank ``draw * live >> 32``), lifetimes finite floats
    >= 0 (the kernel does not check them: it would index out of its arrays or run on a negative time)."""
    race = cfg.failures is not None and cfg.unit_race
    names = (("gaps", "victims") if cfg.failures is None else ("lifetimes", "victims") if race else ("lifetimes",))
    try:
        arrays = tuple(trace)
    except TypeError:
        raise UsageTypeError(f"`trace` must be a tuple of arrays {names}, got {type(trace).__name__}") from None
    if len(arrays) != len(names):
        raise UsageValueError(f"`trace` must hold {len(names)} arrays {names} for this config's failure source, "
                              f"got {len(arrays)}")
    out = []
    for name, a in zip(names, arrays):
        a = np.ascontiguousarray(a)
        if a.ndim != 1:
            raise UsageValueError(f"`trace` {name} must be one-dimensional, got shape {a.shape}")
        if name == "lifetimes":
            if a.dtype.kind not in "fiu":
                raise UsageTypeError(f"`trace` lifetimes must be real numbers, got dtype {a.dtype}")
            a = np.ascontiguousarray(a, dtype=np.float64)
            bad = np.flatnonzero(~(np.isfinite(a) & (a >= 0.0)))
            rule = "finite and >= 0"
        else:
            if a.dtype.kind not in "iu":
                raise UsageTypeError(f"`trace` {name} must be integers, got dtype {a.dtype}")
            lo, hi = (1, int(_tk.HORIZON_US)) if name == "gaps" else (0, (1 << 32) - 1)
            bad = np.flatnonzero((a < lo) | (a > hi))
            rule = "in [1, 2^61]" if name == "gaps" else "in [0, 2^32)"
            a = np.ascontiguousarray(a, dtype=np.int64)
        if bad.size:
            raise UsageValueError(f"`trace` {name}[{bad[0]}] = {a[bad[0]].item()!r} breaks the rule: each must be "
                                  f"{rule}")
        out.append(a)
    if len(out) == 2 and out[0].size != out[1].size:
        raise UsageValueError(f"`trace` {names[0]} and {names[1]} must have the same length, got {out[0].size} and "
                              f"{out[1].size}")
    return tuple(out)


def run_timeline(cfg: TimelineConfig, seed_seq: np.random.SeedSequence, *, trace=None) -> TimelineRun:
    """One job from its replication seed (children, :func:`job_seed`: 0 = failure trace, 1 = jitter, 2 = a random
    layout, 3 = the repair times), or on a given ``trace = (gaps, victims)`` (then an exhausted trace is an error).

    ``seed_seq`` is normally :func:`spare_mc._lib.seeding.trace_seed_sequence` ``(root, n_groups, rep)``, as
    :func:`simulate_ttt` and the sweeps use it. What depends on the config alone (the holder table, SPARe's fully live
    ReCtlr state, the unit clocks, the kernel's parameters, the trace's first length) is built once per config and
    cached (:func:`_job_plan`, :func:`_kernel_params`; 64 configs each); a failure trace, which depends on the
    replication's seed, ``N`` and the failure process only (``mtbf_s`` and the shape, or for unit clocks the race or
    the units' shape), is cached per process (:func:`_job_trace`).
    """
    if not isinstance(cfg, TimelineConfig):
        raise UsageTypeError(f"`cfg` must be a TimelineConfig, got {type(cfg).__name__}")
    if not isinstance(seed_seq, np.random.SeedSequence):
        raise UsageTypeError(f"`seed_seq` must be a numpy SeedSequence, got {type(seed_seq).__name__}")
    plan = _job_plan(cfg)
    holders, units = plan.holders, plan.units
    if holders is None:  # a random SPARe layout
        holders = cfg.layout_object(rng=job_seed(seed_seq, 2)).holders
    if trace is not None:
        trace = _checked_trace(cfg, trace)
        jitter_rng, repair_rng = _job_rngs(cfg, seed_seq)
        res = _run_us(cfg, holders, *trace, jitter_rng=jitter_rng, units=units, repair_rng=repair_rng,
                      live0=plan.live0)
        if res[_tk.R_STATUS] == _tk.STATUS_TRACE:
            raise UsageValueError(f"`trace` ran out after {trace[0].size} draws; give a longer one")
        return _to_run(res, cfg)
    length = plan.trace_length
    _trace_memory_check(cfg, length, plan.per_draw)
    trace = _job_trace(cfg, seed_seq, length)
    while True:
        jitter_rng, repair_rng = _job_rngs(cfg, seed_seq)  # fresh streams for every attempt
        res = _run_us(cfg, holders, *trace, jitter_rng=jitter_rng, units=units, repair_rng=repair_rng,
                      live0=plan.live0)
        if res[_tk.R_STATUS] != _tk.STATUS_TRACE:
            if trace[0].size > plan.trace_length:  # the next jobs of this config start with this length
                plan.trace_length = trace[0].size
            return _to_run(res, cfg)
        _trace_memory_check(cfg, 2 * trace[0].size, plan.per_draw, grown_from=trace[0].size)
        trace = _job_trace(cfg, seed_seq, 2 * trace[0].size)  # the trace extended (it starts with the shorter one)


def compile_variant(extended: bool) -> None:
    """Compile the timeline kernel's basic or ``extended`` variant into numba's cache (or load it) by running a
    4-step CKPT-only job of it: every strategy's jobs of a variant share its one compiled signature, and this job
    compiles nothing else of note (ReCtlr's stand-ins, under a second). The second process of a first SPARe job
    runs it (:mod:`spare_mc.ttt.cold_start`)."""
    cfg = TimelineConfig("ckpt", 4, n_steps=4, **({"detection": "immediate"} if extended else {}))
    run_timeline(cfg, np.random.SeedSequence(0))


def compile_rectlr() -> None:
    """Compile ReCtlr into numba's cache (or load it) as a SPARe job and ReCtlr's Monte Carlo drivers use it: the
    fully live state of a 4-group layout (:func:`_live_state`, which compiles ReCtlr's phases inside
    ``initial_assignment``) and the timeline's two first-class functions. The kernels a later SPARe job or
    ``overhead_uniform`` compiles on top of it take 1-3 s (2026-12-07, 2 cores). The warm-up of
    :mod:`spare_mc.sweep.warm` runs it in one process while another compiles the timeline."""
    _live_state(_prepared(TimelineConfig("spare", 4, r=2))[0])
    _rc.calls(True)


def run_log_job(cfg: TimelineConfig, seed_seq: np.random.SeedSequence, log) -> TimelineRun:
    """One job on a failure log's events instead of a drawn trace (:func:`spare_mc.replay_log_ttt` runs one per
    start time).

    Parameters
    ----------
    cfg : TimelineConfig
    seed_seq : numpy.random.SeedSequence
        The replication seed (:func:`job_seed`: 1 = jitter, 2 = a random layout, 3 = the repair times; no failure
        trace is drawn).
    log : tuple of arrays
        ``(times_us, ptr, groups, repair_us)``: event ``e`` at ``times_us[e]`` microseconds from the job's start
        (non-decreasing) touches ``groups[ptr[e]:ptr[e + 1]]`` and kills those still live; ``repair_us`` each
        event's repair time (-1 unknown), read with ``repair="log"`` only.

    Returns
    -------
    TimelineRun
        Its ``raw_us`` holds the kernel's integer results (the time to train in microseconds at ``R_TTT``).
    """
    plan = _job_plan(cfg, True)
    holders = plan.holders if plan.holders is not None else cfg.layout_object(rng=job_seed(seed_seq, 2)).holders
    jitter_rng, repair_rng = _job_rngs(cfg, seed_seq)
    res = _run_us(cfg, holders, jitter_rng=jitter_rng, repair_rng=repair_rng, log=log,
                  live0=plan.live0)  # None for a random layout
    return _to_run(res, cfg)


def simulate_ttt(cfg: TimelineConfig, reps: int, *, rng=None, first_rep: int = 0) -> TTTResult:
    """``reps`` independent jobs: replications ``first_rep .. first_rep + reps - 1``.

    Replication ``i`` draws its failure trace (and jitter) from ``SeedSequence(root.entropy, spawn_key=(n_groups,
    i))`` where ``root`` comes from ``rng`` (:func:`spare_mc._lib.seeding.root_seed_sequence`), whatever else is run:
    strategies, redundancies, checkpoint periods and options compared at one ``N`` and root see the same failure
    traces (common random numbers), and the same configuration gives the same numbers here, from ``spare-mc ttt``
    and in a sweep.

    Examples
    --------
    >>> cfg = TimelineConfig("spare", 600, r=8, n_steps=500, jitter_sd=0.0)
    >>> res = simulate_ttt(cfg, 4, rng=1)
    >>> bool(res.estimate("ttt_over_t0").mean > 1.5)
    True
    """
    if not isinstance(cfg, TimelineConfig):
        raise UsageTypeError(f"`cfg` must be a TimelineConfig, got {type(cfg).__name__}")
    reps = as_int(reps, "reps", min_value=1)
    first_rep = as_int(first_rep, "first_rep", min_value=0)
    check_memory(reps * RUN_BYTES, f"the results of {reps:,} time-to-train jobs (about {RUN_BYTES} bytes each)",
                 "fewer replications")
    root = root_seed_sequence(rng)
    runs = tuple(run_timeline(cfg, trace_seed_sequence(root, cfg.n_groups, i))
                 for i in range(first_rep, first_rep + reps))
    return TTTResult(cfg, runs, root_text(root), first_rep)
