"""A real cluster as a preset: Meta's pre-training of Llama 3 405B, and its effective training time in the model.

Source (the facts)
------------------
Llama Team, AI @ Meta, "The Llama 3 Herd of Models", arXiv:2407.21783, 2024: section 3.3.4 "Reliability and
Operational Challenges" and its Table 5, section 3.3.2 and its Table 4 (parallelism), section 3.3.1 (storage).

- A 54-day snapshot of pre-training on **16,384 H100 GPUs** had 466 job interruptions: 47 planned (firmware
  upgrades, configuration updates) and **419 unexpected**, about 78% of them confirmed or suspected hardware issues
  (their causes: :data:`LLAMA3_ROOT_CAUSES`). The report states "more than 90% effective training time" for the
  period.
- Table 4, 405B at 16,384 GPUs: tensor parallelism 8, context parallelism 1, pipeline parallelism 16, data
  parallelism 128; 16 sequences of 8,192 tokens per data-parallel group (16M tokens per batch); 400 TFLOP/s per GPU.
- Storage (3.3.1): 2 TB/s sustained, 7 TB/s peak; a checkpoint saves each GPU's model state, 1 MB to 4 GB per GPU.

Derived (arithmetic on the facts, checked by the tests)
-------------------------------------------------------
- Interruptions arrive every ``54 d x 24 h / 419 = 3.09 h`` (the full-system MTBF ``m = 11,135 s``); per GPU that
  is a mean time between interruptions of ``16,384 x 1,296 h / 419 = 50,677 h``. Under exponential failures the
  two are the same model (``m`` = per-GPU MTBF / GPUs); the preset runs the timeline's system-level process with
  mean ``m`` (:attr:`ClusterPreset.system_mtbf_s`).
- One model replica is ``8 x 1 x 16 = 128`` GPUs, so the job has ``16,384 / 128 = 128`` data-parallel groups.
- A step trains ``16 x 128 x 8,192 = 16,777,216`` tokens, about ``6 x 405e9 x 16,777,216 / (16,384 x 400e12) =
  6.22 s`` at the reported throughput (the ``6 N D`` rule: attention adds some percent; the effective-time
  fraction does not depend on the step time beyond rounding checkpoints to step boundaries).
- At the report's 90%, the loss per unexpected interruption -- restart, re-done work and its share of the
  checkpoint cost -- is at most ``0.1 x 54 d / 419 = 18.6 min`` (:meth:`ClusterPreset.loss_budget_s`).

Assumptions (the report gives none of these; each is a field with its reasoning in ``assumptions``)
-------------------------------------------------------------------------------------------------------
``restart_s`` = 600 s, ``save_s`` = 60 s, ``shape`` = 1 (exponential), the checkpoint period at the theory optimum
of :func:`spare_mc.ttt.period.theory_ckpt_period_s`, no exposed all-reduce (overlapped with compute), no duration
jitter, a failure during a restart starts it again, a save that a failure interrupts is unusable, the 47 planned
interruptions left out, and the job length ``T0 = 0.9 x 54 d`` (so that a job at the report's 90% spans the
snapshot's 54 days of wall clock). docs/llama3.md gives the reasoning at length and the sensitivity of the result to
each.

Effective training time in the model
------------------------------------
The report's metric is the share of elapsed time spent on useful training. In the timeline's accounting
(:mod:`spare_mc.ttt.run`) that is the **useful fraction** ``(useful + all-reduce) / TTT`` of CKPT-only, the
strategy Meta ran: everything but checkpoint saves, restarts and work rolled back by a restart (``= T0 / TTT``
without jitter). Over replications it is the ratio of sums ``sum_i (useful_i + allreduce_i) / sum_i TTT_i``, an
estimate of ``T0 / E[TTT]``, with the delta-method interval of :func:`spare_mc.stats.ratio_estimate`
(:func:`effective_training_time`). The per-level failure rates of the same snapshot (GPU, node, rack, ...) are
:mod:`spare_mc.model.domain_rates`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .._lib.resources import check_memory
from .._lib.seeding import root_seed_sequence, root_text
from .._lib.validation import UsageTypeError, UsageValueError, as_float, as_int, check_unique, reject_unknown
from ..model.domain_rates import SNAPSHOT_GPUS, SNAPSHOT_H, SNAPSHOT_UNEXPECTED
from ..stats import MCEstimate, compare, ratio_estimate
from ..theory.closed_forms import availability
from ..ttt.config import TimelineConfig
from ..ttt.results import TTTResult
from ..ttt.run import RUN_BYTES, simulate_ttt
from ..ttt.theory import classical_expected_ttt_s, is_classical
from .phase import checkpointing

__all__ = ["ClusterPreset", "RootCause", "LLAMA3_ROOT_CAUSES", "LLAMA3_SOURCE", "REPORTED_EFFECTIVE",
           "llama3_405b", "EffectiveTime", "effective_training_time", "report_verdict", "llama3_study"]

LLAMA3_SOURCE = ('Llama Team, AI @ Meta, "The Llama 3 Herd of Models", arXiv:2407.21783, 2024, sections 3.3.1, '
                 '3.3.2 (Table 4) and 3.3.4 (Table 5)')
#: The report's effective training time: "more than 90%" (a lower bound).
REPORTED_EFFECTIVE = 0.90


@dataclass(frozen=True)
class RootCause:
    """One row of the report's Table 5: a root cause of unexpected interruptions, its count and its share as
    printed (percent of the 419)."""

    cause: str
    count: int
    percent: float


#: Table 5 of the report, in its order. The counts sum to 419; every printed share is ``count / 419`` to 0.1 pp
#: except "Faulty GPU", printed as 30.1% where 148 / 419 = 35.3% (the report's GPU total, 58.7%, adds the printed
#: shares). Only the total enters the CKPT-only preset.
LLAMA3_ROOT_CAUSES = (
    RootCause("Faulty GPU", 148, 30.1), RootCause("GPU HBM3 memory", 72, 17.2), RootCause("Software bug", 54, 12.9),
    RootCause("Network switch/cable", 35, 8.4), RootCause("Host maintenance", 32, 7.6),
    RootCause("GPU SRAM memory", 19, 4.5), RootCause("GPU system processor", 17, 4.1), RootCause("NIC", 7, 1.7),
    RootCause("NCCL watchdog timeouts", 7, 1.7), RootCause("Silent data corruption", 6, 1.4),
    RootCause("GPU thermal interface + sensor", 6, 1.4), RootCause("SSD", 3, 0.7), RootCause("Power supply", 3, 0.7),
    RootCause("Server chassis", 2, 0.5), RootCause("IO expansion board", 2, 0.5), RootCause("Dependency", 2, 0.5),
    RootCause("CPU", 2, 0.5), RootCause("System memory", 2, 0.5),
)

# Table 4 of the report, 405B on 16,384 GPUs
_TP, _CP, _PP, _DP = 8, 1, 16, 128
_SEQ_LEN, _SEQS_PER_DP = 8192, 16
_PARAMS = 405e9
_FLOPS_PER_GPU = 400e12
#: The job length as a share of the snapshot: a job at the report's 90% spans its 54 days of wall clock.
_T0_SHARE = 0.9

_LLAMA3_ASSUMPTIONS = (
    ("n_groups", "Table 4: a model replica is TP 8 x CP 1 x PP 16 = 128 GPUs, so 16,384 GPUs hold DP = 128 "
                 "data-parallel groups (CKPT-only stops the whole job at any failure: N matters for Rep and SPARe)"),
    ("step_s", "6 N D / (GPUs x throughput) with N = 405e9 parameters, D = 16 x 128 x 8,192 tokens per step and "
               "400 TFLOP/s per GPU (Table 4); the fraction depends on it only through step-boundary rounding"),
    ("allreduce_s", "0: the data-parallel gradient traffic overlaps compute in the report's setup; an exposed "
                    "all-reduce would count as training time in the metric anyway"),
    ("n_steps", "T0 = 0.9 x 54 days of steps, so that a job at the report's 90% spans the snapshot's 54 days; the "
                "fraction depends on T0 only through edge effects (checked)"),
    ("restart_s", "600 s: not reported. Detection, replacing the host, relaunching 16,384 ranks and reloading the "
                  "checkpoint; the report says startup time was worked on. The 90% figure caps the loss per "
                  "interruption at 18.6 min all included; sensitivity 5-30 min"),
    ("save_s", "60 s: not reported. Writing the model and optimizer state (about 16 bytes x 405e9 = 6.5 TB; at "
               "most 4 GB x 16,384 = 66 TB by the report's per-GPU range) at 2 TB/s sustained takes 3-33 s; 60 s "
               "allows for the pause around it; sensitivity 10-300 s"),
    ("shape", "1 (exponential): the report gives counts, not inter-arrival times; the SPARe paper's k = 0.78 is a "
              "sensitivity row"),
    ("ckpt_period", "the theory optimum T_c* = T_s + sqrt(T_s^2 + 2 T_s (m + T_r)) of the availability model: the "
                    "report gives no period; a well-run job is near the optimum"),
    ("restart_failures", "restart_again: an interruption during a restart makes the relaunch fail and start over"),
    ("ckpt_failure", "lost: every GPU writes its own part of the state (the report: each GPU's model state), so a "
                     "save that a failure interrupts is incomplete and the job rolls back to the one before"),
    ("jitter_sd", "0: no data on step-time variation; the metric is a ratio of times and barely moves with it"),
    ("planned", "the 47 planned interruptions are left out (no lost work; about 47 restarts more)"),
)


def _preset_iv(p: "ClusterPreset") -> dict:
    """Validate a :class:`ClusterPreset` and return its cleaned field values."""
    out = {}
    for name in ("name", "source"):
        if not isinstance(getattr(p, name), str) or not getattr(p, name):
            raise UsageTypeError(f"`{name}` must be a non-empty string, got {getattr(p, name)!r}")
    out["n_gpus"] = g = as_int(p.n_gpus, "n_gpus", min_value=2)
    out["n_groups"] = n = as_int(p.n_groups, "n_groups", min_value=2)
    if g % n:
        raise UsageValueError(f"`n_groups` must divide `n_gpus` (equal data-parallel groups), got n_groups={n} "
                              f"with n_gpus={g}")
    out["snapshot_h"] = as_float(p.snapshot_h, "snapshot_h", positive=True)
    out["interruptions"] = as_int(p.interruptions, "interruptions", min_value=1)
    out["planned_interruptions"] = as_int(p.planned_interruptions, "planned_interruptions", min_value=0)
    out["step_s"] = as_float(p.step_s, "step_s", positive=True)
    out["n_steps"] = as_int(p.n_steps, "n_steps", min_value=1)
    out["restart_s"] = as_float(p.restart_s, "restart_s", positive=True)
    out["save_s"] = as_float(p.save_s, "save_s", positive=True)
    out["shape"] = as_float(p.shape, "shape", positive=True)
    if not isinstance(p.assumptions, tuple) or not all(
            isinstance(a, tuple) and len(a) == 2 and all(isinstance(s, str) for s in a) for a in p.assumptions):
        raise UsageTypeError("`assumptions` must be a tuple of (name, reasoning) string pairs")
    return out


@dataclass(frozen=True)
class ClusterPreset:
    """A real cluster's job as the timeline sees it: public facts, the numbers derived from them, and the stated
    assumptions for what the source does not give.

    Attributes
    ----------
    name, source : str
        A short name and the citation of the facts.
    n_gpus : int
        GPUs of the job (fact).
    snapshot_h : float
        Length of the observed period, hours (fact).
    interruptions : int
        Unexpected interruptions in it (fact).
    planned_interruptions : int
        Planned ones (fact; not simulated).
    n_groups : int
        Data-parallel groups (derived from the parallelism; must divide ``n_gpus``).
    step_s : float
        Time of one training step, s (derived).
    n_steps : int
        Steps of the simulated job (``T0 = n_steps x step_s``; an assumption).
    restart_s, save_s : float
        Global restart and checkpoint save times, s (assumptions).
    shape : float
        Weibull shape of the interruption inter-arrival times (1 = exponential; an assumption).
    assumptions : tuple of (str, str)
        Each assumption's name and reasoning.

    Notes
    -----
    The full-system MTBF is ``m = snapshot_h x 3600 / interruptions`` and the per-GPU mean time between
    interruptions ``n_gpus x snapshot_h / interruptions``: the rate of a whole system of independent GPUs is the sum
    of theirs. Under ``shape != 1`` the preset's failures are the timeline's system-level renewal process with mean
    ``m`` (its long-run rate is still ``1 / m``), not per-GPU Weibull clocks.

    Examples
    --------
    >>> p = llama3_405b()
    >>> round(p.system_mtbf_s / 3600, 2), round(p.gpu_mtbf_h), p.gpus_per_group
    (3.09, 50677, 128)
    """

    name: str
    source: str
    n_gpus: int
    snapshot_h: float
    interruptions: int
    planned_interruptions: int
    n_groups: int
    step_s: float
    n_steps: int
    restart_s: float
    save_s: float
    shape: float = 1.0
    assumptions: tuple = field(default=(), compare=False)

    def __post_init__(self):
        for name, value in _preset_iv(self).items():
            object.__setattr__(self, name, value)

    @property
    def system_mtbf_s(self) -> float:
        """Full-system mean time between unexpected interruptions, ``snapshot_h x 3600 / interruptions`` (s)."""
        return self.snapshot_h * 3600.0 / self.interruptions

    @property
    def gpu_mtbf_h(self) -> float:
        """Mean time between interruptions per GPU, ``n_gpus x snapshot_h / interruptions`` (h)."""
        return self.n_gpus * self.snapshot_h / self.interruptions

    @property
    def gpus_per_group(self) -> int:
        """GPUs per data-parallel group (one model replica)."""
        return self.n_gpus // self.n_groups

    @property
    def t0_s(self) -> float:
        """``T0 = n_steps x step_s``, the failure-free time of the simulated job (s)."""
        return self.n_steps * self.step_s

    def loss_budget_s(self, effective: float = REPORTED_EFFECTIVE) -> float:
        """The largest mean loss per interruption compatible with an effective training time ``effective`` over
        the snapshot: ``(1 - effective) x snapshot / interruptions`` (s), counting restart, re-done work and the
        checkpoint time shared among the interruptions.

        >>> round(llama3_405b().loss_budget_s(0.9) / 60, 1)
        18.6
        """
        effective = as_float(effective, "effective", positive=True, max_value=1.0)
        return (1.0 - effective) * self.snapshot_h * 3600.0 / self.interruptions

    def timeline_config(self, strategy: str = "ckpt", **overrides):
        """The job as a :class:`spare_mc.TimelineConfig`: ``n_groups`` groups, ``n_steps`` steps of ``step_s``
        (all compute: no exposed all-reduce), the system-level process with mean :attr:`system_mtbf_s` and shape
        :attr:`shape`, ``restart_s``, ``save_s``, no jitter, restarts started again by a failure, a save that a
        failure interrupts lost (``ckpt_failure="lost"``), the checkpoint period at the theory optimum.
        ``overrides`` are further TimelineConfig fields (e.g. ``r`` for Rep and SPARe, ``ckpt_period_s``,
        ``detection``), validated by it.
        """

        kw = dict(n_steps=self.n_steps, compute_s=self.step_s, allreduce_s=0.0, mtbf_s=self.system_mtbf_s,
                  shape=self.shape, restart_s=self.restart_s, save_s=self.save_s, jitter_sd=0.0,
                  restart_failures="restart_again", ckpt_failure="lost")
        if "n_groups" in overrides:
            raise UsageValueError("`n_groups` is not an override: N is the preset's (preset.replace(n_groups=...) "
                                  "changes it)")
        reject_unknown(overrides, set(TimelineConfig.__dataclass_fields__) - {"strategy", "n_groups"},
                       "the TimelineConfig overrides", noun="fields")
        return TimelineConfig(strategy, self.n_groups, **{**kw, **overrides})

    def replace(self, **changes) -> "ClusterPreset":
        """A copy with ``changes`` (fields), validated again."""
        reject_unknown(changes, [f.name for f in dataclasses.fields(self)], "ClusterPreset.replace", noun="fields")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """Fields, the derived numbers and the assumptions with their reasoning."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "assumptions"}
        d.update(system_mtbf_s=self.system_mtbf_s, gpu_mtbf_h=self.gpu_mtbf_h, gpus_per_group=self.gpus_per_group,
                 t0_s=self.t0_s, loss_budget_s=self.loss_budget_s())
        d["assumptions"] = dict(self.assumptions)
        return d


def llama3_405b() -> ClusterPreset:
    """The Llama 3 405B pre-training snapshot (module docstring: facts, derivations, assumptions).

    Examples
    --------
    >>> p = llama3_405b()
    >>> p.n_gpus, p.interruptions, p.n_groups, round(p.step_s, 2), round(p.t0_s / 86400, 1)
    (16384, 419, 128, 6.22, 48.6)
    """
    step_s = 6.0 * _PARAMS * (_SEQS_PER_DP * _DP * _SEQ_LEN) / (SNAPSHOT_GPUS * _FLOPS_PER_GPU)
    n_steps = round(_T0_SHARE * SNAPSHOT_H * 3600.0 / step_s)
    return ClusterPreset("llama3-405b", LLAMA3_SOURCE, SNAPSHOT_GPUS, float(SNAPSHOT_H), SNAPSHOT_UNEXPECTED, 47,
                         SNAPSHOT_GPUS // (_TP * _CP * _PP), step_s, n_steps, restart_s=600.0, save_s=60.0,
                         shape=1.0, assumptions=_LLAMA3_ASSUMPTIONS)


#: Shares of the wall clock reported next to the effective training time (timeline breakdown names).
SHARES = ("restart", "lost", "checkpoint")


@dataclass(frozen=True, eq=False)
class EffectiveTime:
    """The effective training time of a preset's CKPT-only job, with its interval and where the rest went.

    Attributes
    ----------
    config : TimelineConfig
        The job simulated.
    effective : MCEstimate
        ``sum (useful + all-reduce) / sum TTT`` over the replications (:func:`spare_mc.stats.ratio_estimate`).
    shares : dict of MCEstimate
        ``restart``, ``lost`` (work rolled back, re-done later) and ``checkpoint`` as shares of the wall clock,
        same estimator; with ``effective`` they sum to 1.
    running : MCEstimate
        ``1 - (restart + checkpoint) / TTT``: the share of the wall clock spent running steps, including those
        rolled back later (the other reading of "training time").
    interruptions_per_snapshot : MCEstimate
        Interruptions (failures that stopped the job, and those during restarts) per ``snapshot_h`` of wall clock:
        the calibration check (the source's count in expectation).
    first_order : float
        The availability model ``A(T_c) = m (1 - T_s / T_c) / (m + T_r + T_c / 2)`` at the job's period
        (:func:`spare_mc.theory.closed_forms.availability`), a first-order approximation for comparison.
    n_capped : int
        Runs stopped at the wall-clock cap (their values are those of the simulated wall clock).
    root_entropy : str
        The replications' root seed.
    elapsed_s : float
        Time of the simulation.
    counts : dict
        Per-job means of ``wipeouts``, ``memory_restarts``, ``remote_fallbacks`` and ``async_slowdown_s`` (the
        last three are 0 without in-memory copies and asynchronous saves).
    """

    config: object
    effective: MCEstimate
    shares: dict
    running: MCEstimate
    interruptions_per_snapshot: MCEstimate
    first_order: float
    n_capped: int
    root_entropy: str
    elapsed_s: float = 0.0
    counts: dict = field(default_factory=dict)

    @property
    def reps(self) -> int:
        return self.effective.n

    def to_dict(self) -> dict:
        """A flat summary: means with ``_ci95`` intervals, the job's settings."""
        cfg = self.config

        def est(e):
            return {"mean": e.mean, "se": e.se, "ci95": list(e.ci)}

        return {"save_s": cfg.save_s, "restart_s": cfg.restart_s, "shape": cfg.shape, "t0_s": cfg.t0_s,
                "ckpt_period_s": cfg.ckpt_period, "reps": self.reps, "effective": est(self.effective),
                "shares": {k: est(v) for k, v in self.shares.items()}, "running": est(self.running),
                "interruptions_per_snapshot": est(self.interruptions_per_snapshot),
                "first_order": self.first_order, "verdict": report_verdict(self.effective),
                "n_capped": self.n_capped, "rng_root": self.root_entropy, "elapsed_s": self.elapsed_s,
                "counts_mean": dict(self.counts)}


def report_verdict(effective: MCEstimate, reported: float = REPORTED_EFFECTIVE) -> str:
    """How an estimate stands against the report's "more than ``reported``": ``"agrees"`` (its 95% interval lies
    above), ``"disagrees"`` (below) or ``"inconclusive"`` (the interval contains ``reported``)."""
    if not isinstance(effective, MCEstimate):
        raise UsageTypeError(f"`effective` must be an MCEstimate, got {type(effective).__name__}")
    lo, hi = effective.ci
    return "agrees" if lo > reported else "disagrees" if hi < reported else "inconclusive"


def _effective_iv(preset, reps, overrides):
    if not isinstance(preset, ClusterPreset):
        raise UsageTypeError(f"`preset` must be a ClusterPreset (e.g. spare_mc.analyses.clusters.llama3_405b()), got "
                             f"{type(preset).__name__}")
    reps = as_int(reps, "reps", min_value=2)
    for name in ("strategy", "r"):
        if name in overrides:
            raise UsageValueError(f"`{name}` cannot be overridden: the effective training time is that of the "
                                  f"CKPT-only job (the strategy the report's job ran); use "
                                  f"preset.timeline_config(strategy, r=...) for Rep or SPARe")
    return reps


def effective_training_time(preset: ClusterPreset | None = None, *, reps: int = 1000, rng=None,
                            **overrides) -> EffectiveTime:
    """Simulate ``reps`` CKPT-only jobs of ``preset`` (default :func:`llama3_405b`) and estimate their effective
    training time with its 95% interval.

    Parameters
    ----------
    preset : ClusterPreset, optional
    reps : int
        Replications (>= 2).
    rng : seed, optional
        Root seed (None, an int >= 0 or a list of them, a SeedSequence or a Generator); replication ``i`` uses the
        stream of :func:`spare_mc.simulate_ttt`, so settings compared under one seed see the same failure traces.
    **overrides
        :class:`spare_mc.TimelineConfig` fields on top of :meth:`ClusterPreset.timeline_config` (not ``strategy``
        or ``r``).

    Returns
    -------
    EffectiveTime

    Notes
    -----
    The effective training time is ``E = sum_i (U_i + A_i) / sum_i W_i`` over replications ``i``, with ``U`` the
    useful compute kept, ``A`` the all-reduce time kept and ``W`` the wall clock (time to train): an estimate of
    ``T0 / E[TTT]`` without jitter. Its standard error is the delta-method value of a ratio of means (Cochran,
    *Sampling Techniques*, 3rd ed., section 6.4; :func:`spare_mc.stats.ratio_estimate`). The shares of restart,
    lost work and checkpoint use the same estimator and with ``E`` sum to 1 for CKPT-only.

    Examples
    --------
    >>> res = effective_training_time(reps=20, rng=1)
    >>> bool(0.5 < res.effective.mean < 1.0), res.reps
    (True, 20)
    """

    preset = llama3_405b() if preset is None else preset
    reps = _effective_iv(preset, reps, overrides)
    cfg = preset.timeline_config("ckpt", **overrides)
    t_start = time.perf_counter()
    res = simulate_ttt(cfg, reps, rng=rng)
    return _effective(preset, res, time.perf_counter() - t_start)


#: Replications per round of :func:`_rows_in_rounds`: the failure traces of a round stay in the process's trace cache
#: (:data:`spare_mc.ttt.run.TRACE_CACHE_BYTES`, 48 MB) while the rows that share them run, if each is at most 192 KB
#: (the Llama 3 preset's are 64 KB: 4,096 draws).
_ROUND_REPS = 256


def _rows_in_rounds(rows, reps: int, root, log) -> list:
    """:func:`effective_training_time` of every row ``(preset, overrides)`` on the replications ``0 .. reps - 1`` of
    the root seed ``root`` (a ``SeedSequence``), run in rounds of :data:`_ROUND_REPS` replications, each round by every
    row in turn.

    The rows' jobs share their failure traces (common random numbers: under system-level failures a trace depends
    on the replication's seed, ``N``, the MTBF and the shape only), and the process keeps a trace for the next job
    that asks for it (:func:`spare_mc.ttt.run._job_trace`). Row after row, 1,000 replications each, every job drew
    its trace again: the cache holds 768 of the Llama 3 preset's, and a row's first replications were gone by the
    time the next row asked (1.9 s of the study's 8.5 s, 2026-12-07). The runs are the same as one
    :func:`~spare_mc.simulate_ttt` call per row (replication ``i``'s seed does not depend on the call). A row's
    ``elapsed_s`` is the sum of its rounds; the first row that asks for a trace pays for drawing it. Rows that share
    their traces should come one after another (the traces of a round are then all used before others come)."""
    cfgs = [p.timeline_config("ckpt", **kw) for p, kw in rows]
    # every row's runs are kept until the last round (one row's at a time before): refused before any work when
    # they would not fit
    check_memory(len(rows) * reps * RUN_BYTES, f"the results of {len(rows)} rows of {reps:,} time-to-train jobs "
                 f"(about {RUN_BYTES} bytes each)", "fewer replications")
    runs: list = [[] for _ in rows]
    elapsed = [0.0] * len(rows)
    for start in range(0, reps, _ROUND_REPS):
        m = min(_ROUND_REPS, reps - start)
        for j, cfg in enumerate(cfgs):
            t = time.perf_counter()
            runs[j].extend(simulate_ttt(cfg, m, rng=root, first_rep=start).runs)
            elapsed[j] += time.perf_counter() - t
        log(f"replications {start}-{start + m - 1} of {len(rows)} rows")
    text = root_text(root)
    return [_effective(p, TTTResult(cfg, tuple(r), text, 0), e)
            for (p, _), cfg, r, e in zip(rows, cfgs, runs, elapsed)]


def _effective(preset: ClusterPreset, res: TTTResult, elapsed: float) -> EffectiveTime:
    """The :class:`EffectiveTime` of the CKPT-only jobs ``res`` of ``preset`` (see :func:`effective_training_time`)
    that took ``elapsed`` seconds."""
    cfg = res.config
    ttt = np.array([r.ttt_s for r in res.runs])
    part = {k: np.array([r.breakdown_s[k] for r in res.runs]) for k in ("useful", "allreduce", *SHARES)}
    eff = ratio_estimate(part["useful"] + part["allreduce"], ttt, name="effective_training_time", support="unit")
    shares = {k: ratio_estimate(part[k], ttt, name=f"{k}_share", support="unit") for k in SHARES}
    running = ratio_estimate(ttt - part["restart"] - part["checkpoint"], ttt, name="running_share", support="unit")
    events = np.array([r.failures + r.absorbed for r in res.runs], dtype=float)
    per = ratio_estimate(events * preset.snapshot_h * 3600.0, ttt, name="interruptions_per_snapshot",
                         support="nonnegative")
    tc = cfg.ckpt_period
    first = availability(tc, cfg.save_s, cfg.mtbf_s, cfg.restart) if tc > cfg.save_s else math.nan
    counts = {k: float(np.mean(res.values(k))) for k in ("wipeouts", "memory_restarts", "remote_fallbacks",
                                                          "async_slowdown_s")}
    return EffectiveTime(cfg, eff, shares, running, per, first, res.n_capped, res.root_entropy, elapsed, counts)


def _check_exponential(preset) -> None:
    if preset.shape != 1.0:
        raise UsageValueError(f"the classical check needs exponential failures (`shape` = 1), got "
                              f"shape={preset.shape}")


#: The classical rules on top of a preset (:func:`_classical_check`): failures detected at once, interrupting a save in
#: progress; a checkpoint after the last segment too.
_CLASSICAL_OVERRIDES = {"detection": "immediate", "final_checkpoint": True, "ckpt_failure": "completes"}


def _classical_check(preset, reps, rng, alpha=1e-4, done=None) -> dict:
    """The preset under the classical rules (failures detected at once, interrupting a save in progress; a
    checkpoint after the last segment too):
    its simulated effective time against Daly's exact ``T0 / E[T_w]``
    (:func:`spare_mc.ttt.theory.classical_expected_ttt_s`); only exponential failures have that closed form.
    ``done``: the :class:`EffectiveTime` of those jobs, if already run (:func:`llama3_study`)."""

    _check_exponential(preset)
    res = effective_training_time(preset, reps=reps, rng=rng, **_CLASSICAL_OVERRIDES) if done is None else done
    cfg = res.config
    if not is_classical(cfg):
        raise UsageValueError("the preset's classical variant breaks a classical rule (spare_mc.ttt.theory."
                              "CLASSICAL_RULES): build it from timeline_config's defaults")
    solve_s = cfg.n_steps * round(cfg.compute_s * 1e6) / 1e6  # the kernel's clock counts microseconds
    exact = solve_s / classical_expected_ttt_s(cfg)
    c = compare(res.effective, exact, alpha=alpha)
    return {"mean": c.estimate, "se": c.se, "ci95": list(res.effective.ci), "exact": exact, "z": c.z,
            "p_value": c.p_value, "alpha": alpha, "consistent": c.consistent}


def _modern_overrides(preset) -> dict:
    return {**checkpointing("modern", preset.save_s, preset.restart_s), "ckpt_failure": "completes"}


def _modern_row(preset, reps, rng, log, done=None) -> dict:
    """The central preset with checkpointing as practised today (:func:`spare_mc.analyses.phase.checkpointing` "modern": copies
    in two groups' CPU memory at ``T_s / 10``, every fifth checkpoint saved remotely in the background, the restart
    split into ``T_r - T_s`` and a load of ``T_s``), on the same failure traces. A failure during a save no longer
    makes it unusable (``ckpt_failure="completes"``): a background save is usable once complete, a memory copy at
    once. ``done``: the :class:`EffectiveTime` of those jobs, if already run (:func:`llama3_study`)."""

    kw = _modern_overrides(preset)
    res = effective_training_time(preset, reps=reps, rng=rng, **kw) if done is None else done
    row = res.to_dict()
    row.pop("first_order")  # the availability model of blocking remote saves does not describe this job
    row["checkpointing"] = kw
    e = row["effective"]
    log(f"modern checkpointing: effective {e['mean']:.4f} [{e['ci95'][0]:.4f}, {e['ci95'][1]:.4f}]")
    return row


def _study_iv(reps, **lists):
    """Validate :func:`llama3_study`'s arguments: ``reps >= 2`` and sequences of positive numbers."""
    reps = as_int(reps, "reps", min_value=2)
    out = {}
    for name, values in lists.items():
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise UsageTypeError(f"`{name}` must be a sequence of numbers, got {values!r}")
        out[name] = tuple(as_float(v, name, positive=True) for v in values)
        check_unique(out[name], name)
    return reps, out


def llama3_study(*, reps: int = 1000, rng=0, save_values=(10.0, 60.0, 300.0),
                 restart_values=(300.0, 600.0, 1800.0), shapes=(0.78,), t0_factors=(0.5, 2.0),
                 progress=None) -> dict:
    """The effective training time of :func:`llama3_405b`, its sensitivity to the assumptions, and two checks.

    Returns a dict: ``preset`` (facts, derived numbers, assumptions), ``central`` (:meth:`EffectiveTime.to_dict`
    of the preset), ``grid`` (every ``save_s x restart_s``), ``shapes`` (the central times under other Weibull
    shapes), ``t0`` (the central job ``t0_factors`` times as long: edge effects), ``classical`` (the classical
    variant against Daly's exact value), ``reported`` and ``settings``. Every row shares the root seed ``rng``
    (common random numbers; one root drawn from it, also when it is a ``Generator`` or ``None``), and the rows run
    their replications in rounds (:func:`_rows_in_rounds`), so that each failure trace is drawn once for them all.
    """
    reps, lists = _study_iv(reps, save_values=save_values, restart_values=restart_values, shapes=shapes,
                            t0_factors=t0_factors)
    log = progress or (lambda msg: None)
    preset = llama3_405b()
    t_start = time.perf_counter()

    _check_exponential(preset)  # the classical check's closed form, before any work
    root = root_seed_sequence(rng)  # one root for every row, whatever rng is (a Generator would advance per row)
    grid_rows = [(preset.replace(save_s=s, restart_s=r), f"save {s:g} s, restart {r:g} s")
                 for s in lists["save_values"] for r in lists["restart_values"]]
    shape_rows = [(preset.replace(shape=k), f"shape {k:g}") for k in lists["shapes"]]
    t0_rows = [(preset.replace(n_steps=max(1, round(f * preset.n_steps))), f"T0 x {f:g}")
               for f in lists["t0_factors"]]
    # the rows that share their failure traces first, then the other shapes', so that a round's shared traces are
    # used by all of their rows before the other shapes' traces come into the cache
    rows = {"central": (preset, {}), **{what: (p, {}) for p, what in grid_rows + t0_rows},
            "modern": (preset, _modern_overrides(preset)), "classical": (preset, _CLASSICAL_OVERRIDES),
            **{what: (p, {}) for p, what in shape_rows}}
    done = dict(zip(rows, _rows_in_rounds(list(rows.values()), reps, root, log)))

    def row(what):
        d = done[what].to_dict()
        e = d["effective"]
        log(f"{what}: effective {e['mean']:.4f} [{e['ci95'][0]:.4f}, {e['ci95'][1]:.4f}]")
        return d

    central = row("central")
    modern = _modern_row(preset, reps, root, log, done=done["modern"])
    grid = [row(what) for _, what in grid_rows]
    shape_dicts = [row(what) for _, what in shape_rows]
    t0_dicts = [row(what) for _, what in t0_rows]
    classical = _classical_check(preset, reps, root, done=done["classical"])
    log(f"classical rules: {classical['mean']:.4f} vs Daly's exact {classical['exact']:.4f}")
    return {"preset": preset.to_dict(), "central": central, "modern": modern, "grid": grid, "shapes": shape_dicts,
            "t0": t0_dicts,
            "classical": classical,
            "reported": {"effective": REPORTED_EFFECTIVE, "claim": "more than 90% effective training time"},
            "definition": "effective training time = (useful compute + all-reduce) / wall clock of the CKPT-only "
                          "job, ratio of sums over replications (T0 / E[TTT] without jitter)",
            "settings": {"reps": reps, "rng_root": central["rng_root"], **{k: list(v) for k, v in lists.items()}},
            "elapsed_s": time.perf_counter() - t_start}
