"""Time to train: an event-driven timeline of a whole job under CKPT-only, Rep+CKPT and SPARe+CKPT.

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

import dataclasses
import functools
import json
import math
from dataclasses import MISSING, dataclass, field, fields
from fractions import Fraction
from typing import NamedTuple

import numpy as np
import xarray as xr

from .._kernels import rectlr as _rk
from .._kernels import timeline as _tk
from .._lib.resources import check_memory
from .._lib.seeding import _UNSET, resolve_seed_alias, root_seed_sequence, root_text, trace_seed_sequence
from .._lib.validation import UsageTypeError, UsageValueError, as_bool, as_choice, as_float, as_int
from ..model.failures import DomainFailures, PerGPU, _shape_iv, failure_model_from_dict, system_mtbf_s, weibull_scale
from ..model.layouts import Layout, ReplicaSets, block, cyclic, random_holders, replica_sets, sidon
from ..model.paper import paper_setting
from ..model.placement import domain_aware, domain_aware_replica_sets
from ..model.topology import Topology
from ..stats import MCEstimate, estimate_mean, one_run_estimate
from ..theory.closed_forms import ckpt_period_optimal, daly_expected_wall_time, daly_optimal_interval
from ..theory.exact import exact_wipeout

__all__ = ["TimelineConfig", "TimelineRun", "TTTResult", "simulate_ttt", "run_timeline", "paper_allreduce_s",
           "theory_ckpt_period_s", "theory_costs", "make_trace", "STRATEGIES",
           "CLASSICAL_RULES", "classical_config", "classical_expected_ttt_s", "classical_segment_s", "is_classical"]

STRATEGIES = ("ckpt", "rep", "spare")
#: SPARe stacking layouts of the timeline.
SPARE_LAYOUTS = ("cyclic", "sidon", "random")
#: ``restart_growth`` -> the exponent of ``N / restart_ref_groups``.
RESTART_GROWTH = {"constant": 0, "linear": 1, "quadratic": 2}
#: The kernel options' values (the first is the default) and their codes.
REP_MASKED_COSTS = {"shrink": _tk.REP_SHRINK, "redo_step": _tk.REP_REDO_STEP, "resync": _tk.REP_RESYNC}
PATCH_COSTS = {"per_shard": _tk.PATCH_PER_SHARD, "none": _tk.PATCH_NONE, "whole_step": _tk.PATCH_WHOLE_STEP}
RESTART_FAILURES = ("absorbed", "stay_dead", "restart_again")
DETECTIONS = ("allreduce", "immediate")
#: How unit clocks are sampled: ``race`` (renewed units race as exponentials in the clock ``(t - t0)^k``: O(log
#: units) per failure and O(1) per restart; "renew" only), ``per_unit`` (a lifetime per unit in a tournament tree:
#: O(log units) per failure, O(units) per restart), ``auto`` (``race`` under "renew", ``per_unit`` under "keep").
UNIT_SAMPLERS = ("auto", "race", "per_unit")
CKPT_POLICIES = {"periodic": _tk.POLICY_PERIODIC, "hazard": _tk.POLICY_HAZARD,
                 "young_hazard": _tk.POLICY_YOUNG_HAZARD}
REPAIRS = {"none": _tk.REPAIR_NONE, "fixed": _tk.REPAIR_FIXED, "lognormal": _tk.REPAIR_LOGNORMAL, "log": _tk.REPAIR_LOG}
REJOINS = ("step", "checkpoint")
CKPT_FAILURES = ("completes", "lost")
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


#: Largest value of any duration parameter, in seconds (about 32 years): larger values are unit mistakes, and every
#: duration must fit the integer-microsecond clock with room to add them up.
MAX_DURATION_S = 1e9
#: Largest system MTBF: a failure-free run (the test of a saturating clock runs 1e300); 1e308 overflowed the mean
#: uptime of the theory.
MAX_MTBF_S = 1e300
#: Largest jitter standard deviation (exclusive): see :func:`_timeline_config_iv`.
MAX_JITTER_SD = 0.2
#: The wall clock of a run never passes ``2^59`` microseconds (about 18,000 years): the cap is checked against it,
#: and for the system-level process ``N x cap`` (its operational clock, in group-microseconds) against ``2^60``.
WALL_LIMIT_US = 1 << 59
OPERATIONAL_LIMIT = 1 << 60

_PAPER = paper_setting()


def _option(default, help_text, *, cli=True, sweep=True, strategies=None):
    """A config field with its meaning and unit (``help``), from which the CLI flag and the sweep parameter derive
    (``default=MISSING``: a required field). ``strategies``: the strategies it affects (others must leave it at its
    default: see :func:`applicable`)."""
    return field(default=default, metadata={"help": help_text, "cli": cli, "sweep": sweep,
                                            "strategies": strategies})


@dataclass(frozen=True)
class TimelineConfig:
    """One time-to-train setting (units in field names; defaults are the paper's stated values, read from
    :mod:`spare_mc.model.paper`).

    Every field's meaning and unit is in ``TimelineConfig.__dataclass_fields__[name].metadata["help"]``; the
    command-line flags of ``spare-mc ttt`` and the parameters of a ``ttt`` sweep are derived from these fields, so
    every default lives here and only here. Numeric values are stored as plain Python ``int``/``float``.

    Parameters
    ----------
    strategy : {"ckpt", "rep", "spare"}
    n_groups : int
    r : int
        Redundancy (1 for CKPT-only; Rep runs on :class:`spare_mc.model.layouts.ReplicaSets`, ``floor(N / r)`` sets of
        ``r`` or more groups, any ``r <= N``).
    layout : {"cyclic", "sidon", "random"}
        SPARe stacking layout (unit stride, Sidon offsets or random holders drawn per job).
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
    restart_s, save_s : float
        Global restart ``T_r`` (3600 s) and checkpoint save ``T_s`` (60 s).
    ckpt_period_s : float or None
        Checkpoint period ``T_c``: wall time from the end of the last checkpoint (or restart) after which the next
        step boundary writes a checkpoint. Any positive value is valid (shorter than one step: a checkpoint after
        every step). ``None`` = ``ckpt_period_factor x`` :func:`theory_ckpt_period_s`.
    ckpt_period_factor : float
        Multiplies the theory period when ``ckpt_period_s`` is None (1.0).
    shrink_s, rectlr_s : float
        Communicator shrink and ReCtlr cost (0.1 s each).
    jitter_sd : float
        Standard deviation of the multiplicative duration jitter (0.05; 0 = off).
    max_wall_factor : float
        A run stops with status ``"capped"`` once the wall clock passes ``max_wall_factor x T0``.
    failures : PerGPU or DomainFailures, optional
        Unit-clock failure model instead of the system-level process. ``mtbf_s`` still sets the ``m`` of the
        theory checkpoint period; when that period is used it must lie within a factor 2 of the model's system
        MTBF in one of its two readings (:func:`spare_mc.model.failures.system_mtbf_s`), else the config is refused.
    topology : Topology, optional
        GPUs and failure domains for ``failures`` (default ``Topology(600_000, n_groups)``).
    restart_growth, restart_ref_groups, rep_allreduce : str, int, str
        The restart time's growth with ``N`` and Rep's all-reduce once per step or per replica.
    rep_masked_cost : {"shrink", "resync", "redo_step"}
        What a masked failure costs Rep at the detecting all-reduce: ``T_shrink``; ``T_shrink + rep_resync_s``;
        ``T_shrink`` and a recomputation of the step (its nominal compute, jittered, booked as ``patch``).
    rep_resync_s : float
        The resynchronisation time of ``rep_masked_cost="resync"`` (s; must be 0 otherwise).
    masked_detect_s : float
        A detection cost (s) charged at every masked detection of Rep and SPARe, booked as ``rectlr_shrink``.
    patch_cost : {"per_shard", "none", "whole_step"}
        SPARe's patch compute: ``patch x T_comp``, nothing, or ``S* x T_comp`` at every masked detection.
    restart_failures : {"absorbed", "stay_dead", "restart_again"}
        Failures during a restart are absorbed, kill live groups that stay dead when the job resumes, or start the
        restart again from their arrival (the classical model's rule).
    ckpt_every_steps : int
        ``k > 0``: a checkpoint after every ``k``-th step since the last checkpoint or restart, instead of by wall
        time (then ``ckpt_period_s`` must be None and ``ckpt_period_factor`` 1).
    ckpt_failure : {"completes", "lost"}
        A failure arriving during a save leaves the checkpoint usable, or makes it unusable (``lost``).
    detection : {"allreduce", "immediate"}
        CKPT-only: failures are detected at the all-reduce (default), or the moment they arrive, interrupting the
        step or the save in progress (partial step time is lost, a partial save is booked as checkpoint time and
        counts as a lost checkpoint). ``ckpt_failure`` has no effect then (leave it at its default).
    final_checkpoint : bool
        A checkpoint after the last step too (not with ``ckpt_failure="lost"``).
    repair : {"none", "fixed", "lognormal", "log"}
        Rep and SPARe: a group found dead (at a masked detection) is repaired after ``repair_s`` (fixed) or a
        lognormal time of mean ``repair_s`` and log-sd ``repair_sd``, and rejoins the running job at the next step
        boundary (``rejoin="step"``) or at the end of the next save (``"checkpoint"``), which pauses ``rejoin_s``:
        Rep's set counts it again; SPARe rebuilds ReCtlr on the groups still dead (``S`` may fall). A global
        restart brings every group back and cancels the repairs in progress. System-level failures, or a log
        replay (:func:`replay_log_ttt`). ``"log"`` (log replay only): a group is ready at the later of its
        detection and the end of repair the log gives for the event that killed it (``time_s + repair_s``; a later
        event touching the dead group can only postpone it); without a repair time it stays dead until the next
        global restart.
    repair_s, repair_sd, rejoin, rejoin_s : float, float, str, float
        See ``repair`` (each must stay at its default without repair).
    load_s : float
        Loading a checkpoint from remote storage, part of a global restart (``restart_s`` is the rest).
    memory_copies, memory_save_s, memory_load_s, remote_every : int, float or None, float or None, int
        In-memory checkpoints (Gemini, SOSP'23): every checkpoint is also kept in the CPU memory of ``m`` groups
        (``memory_save_s`` blocking, default ``save_s / 10``); only every ``remote_every``-th goes to remote storage
        (``save_s``). A wipe-out reloads from memory (``restart_s + memory_load_s``) if a holder of the last
        checkpoint is still alive, else from remote storage (``restart_s + load_s``), losing the memory-only work.
    ckpt_async, async_slowdown : bool, float
        Asynchronous remote saves (CheckFreq, FAST'21): the save runs for ``save_s`` in the background while compute
        runs ``async_slowdown`` times slower (the extra time is checkpoint time); usable once complete.
    ckpt_policy : {"periodic", "hazard", "young_hazard"}
        ``periodic``: the period ``T_c``. The dynamic policies re-evaluate the period at every step boundary from
        the state the failure risk depends on: ``T_f``, the inverse of the instantaneous wipe-out hazard -- the
        system's Weibull hazard at the time since the last failure (the renewal clock: a restart does not reset
        it), scaled to the known live groups, times the share of known live groups whose failure would wipe out
        (all for CKPT-only; the last member of a replica set for Rep; the last live holder of a type for SPARe).
        ``hazard``: ``T_s + sqrt(T_s^2 + 2 T_s (T_f + T_r))`` (``T_r`` the restart with its load ``load_s``; the
        theory optimum with ``T_f`` made
        instantaneous: for CKPT-only under exponential failures it is the periodic ``T_c*`` exactly);
        ``young_hazard``: ``sqrt(2 T_s T_f)``, the variational optimum of Ling, Mi and Lin (IEEE TC 2001). Both are
        multiplied by ``ckpt_period_factor``, which is what the optimiser tunes. System-level failures only, no
        ``ckpt_period_s`` and no ``ckpt_every_steps``.
    """

    strategy: str = _option(MISSING, "redundancy strategy: ckpt (checkpointing only), rep (replication + checkpoints) "
                                  "or spare (stacking with adaptive reordering + checkpoints)", cli=False)
    n_groups: int = _option(MISSING, "number of data-parallel groups N", cli=False)
    r: int = _option(1, "redundancy r: holder groups per shard type (1 for ckpt; Rep: floor(N/r) replica sets of r "
                        "or more groups)", cli=False)
    layout: str = _option("cyclic", "SPARe stacking layout: cyclic (unit stride: group i holds types i..i+r-1), "
                                    "sidon (Sidon offsets: two shard types share at most one holder) or random "
                                    "(independent random holders, one layout per job drawn from its seed)",
                          strategies=("spare",))
    n_steps: int = _option(_PAPER["n_steps"], "training steps of the job")
    compute_s: float = _option(_PAPER["compute_s"], "compute time of one stack layer per step, T_comp (s)")
    allreduce_s: float | None = _option(None, "all-reduce time per step, T_a (s); default 2 + 8 (N - 200)/800 s, "
                                              "the paper's 2-10 s growing with N")
    mtbf_s: float = _option(_PAPER["mtbf_s"], "full-system mean time between failures m of the system-level "
                                              "renewal process (s); per-GPU and domain models are calibrated to it "
                                              "as their `calibration` says (default: the first failure of a fresh "
                                              "system has this mean)")
    shape: float = _option(_PAPER["shape"], "Weibull shape k of the failure inter-arrival times (1 = exponential)")
    live_scaling: bool = _option(True, "the system-level failure rate is proportional to the live GPUs",
                                 cli=False)
    restart_s: float = _option(_PAPER["restart_s"], "global restart time T_r after a wipe-out (s)")
    save_s: float = _option(_PAPER["save_s"], "checkpoint save time T_s (s)")
    ckpt_period_s: float | None = _option(None, "checkpoint period T_c (s): wall time from the end of the last "
                                                "checkpoint or restart to the next checkpoint (at a step boundary); "
                                                "default: ckpt_period_factor x the theory optimum T_c*", cli=False)
    ckpt_period_factor: float = _option(1.0, "multiplies the theory-optimal period T_c* when no checkpoint period "
                                             "is given")
    shrink_s: float = _option(_PAPER["shrink_s"], "communicator shrink after a masked failure (s)",
                              strategies=("rep", "spare"))
    rectlr_s: float = _option(_PAPER["rectlr_s"], "ReCtlr (adaptive reordering) decision time per detection (s)",
                              strategies=("spare",))
    jitter_sd: float = _option(_PAPER["jitter_sd"], "standard deviation of the multiplicative Normal(1, sd^2) "
                                                    "jitter of every duration (0 = off)")
    max_wall_factor: float = _option(100.0, "a run stops as 'capped' when its wall clock passes this multiple of "
                                            "T0 (capped runs count as censored observations)")
    restart_growth: str = _option("constant", "how the global restart time grows with the number of groups: "
                                              "constant (T_r), linear (T_r N / N_ref) or quadratic (T_r (N / "
                                              "N_ref)^2), equal to T_r at N = restart_ref_groups")
    restart_ref_groups: int = _option(600, "the N at which a growing restart time equals restart_s (the paper's "
                                           "setting, N = 600); only with a linear or quadratic restart_growth")
    rep_allreduce: str = _option("per_step", "Rep+CKPT's gradient all-reduce: once per step (per_step) or once per "
                                             "replica, N / n_sets times per step (per_replica; r times when r "
                                             "divides N)", strategies=("rep",))
    rep_masked_cost: str = _option("shrink", "what a failure masked by replication costs Rep+CKPT at the detecting "
                                             "all-reduce: shrink (the communicator shrink T_shrink), resync (T_shrink "
                                             "+ rep_resync_s, re-synchronising a replica) or redo_step (T_shrink, "
                                             "then the step in progress is recomputed: one more step compute, booked "
                                             "as patch)", strategies=("rep",))
    rep_resync_s: float = _option(0.0, "time to re-synchronise a replica after a masked failure, with "
                                       "rep_masked_cost='resync' only (s)", strategies=("rep",))
    masked_detect_s: float = _option(0.0, "fixed detection cost (e.g. a timeout) of every detection that Rep or "
                                          "SPARe masks, booked with ReCtlr/shrink (s; CKPT-only detections are "
                                          "wipe-outs)", strategies=("rep", "spare"))
    patch_cost: str = _option("per_shard", "SPARe's patch compute at a masked detection: per_shard (the largest "
                                           "number of extra shards one survivor recomputes x T_comp), none, or "
                                           "whole_step (the survivors recompute the whole step: S* x T_comp with S* "
                                           "the stack number ReCtlr just set)", strategies=("spare",))
    restart_failures: str = _option("absorbed", "failures during a global restart: absorbed (they kill nothing), "
                                                "stay_dead (they kill live groups, which stay dead when the job "
                                                "resumes and are detected at the first all-reduce after the "
                                                "restart) or restart_again (each starts the restart over)")
    ckpt_every_steps: int = _option(0, "checkpoint after every k-th step since the last checkpoint or restart (k "
                                       "steps; needs no ckpt_period_s and ckpt_period_factor 1); 0 = by wall time, "
                                       "every T_c")
    ckpt_failure: str = _option("completes", "a failure arriving during a checkpoint's save: completes (the "
                                             "checkpoint is usable) or lost (it is unusable: its time is spent, the "
                                             "rollback point and the unsaved work stay as before it)")
    detection: str = _option("allreduce", "when a failure is detected: allreduce (at the all-reduce that ends the "
                                          "compute phase in which it arrived, or the next one) or immediate (when it "
                                          "arrives: the step or checkpoint in progress is interrupted and the job "
                                          "wipes out at once; CKPT-only)", strategies=("ckpt",))
    final_checkpoint: bool = _option(False, "write a checkpoint after the last step too (the job ends when it "
                                            "completes)")
    ckpt_policy: str = _option("periodic", "when a checkpoint is due: periodic (T_c after the last checkpoint or "
                                           "restart), hazard (the period T_s + sqrt(T_s^2 + 2 T_s (T_f + T_r)) with "
                                           "T_f = 1 / the instantaneous wipe-out hazard, re-evaluated at every step "
                                           "boundary from the time since the last failure and the known dead groups) "
                                           "or young_hazard (sqrt(2 T_s T_f), Ling, Mi and Lin 2001); both times "
                                           "ckpt_period_factor; system-level failures only")
    repair: str = _option("none", "repair of failed groups without a global restart: none (a dead group comes back at "
                                  "the next global restart), fixed (after repair_s) or lognormal (mean repair_s, "
                                  "log-sd repair_sd); the repair starts when the failure is detected; or log (a "
                                  "failure log's own repair times, replay_log_ttt only)",
                          strategies=("rep", "spare"))
    repair_s: float = _option(3600.0, "mean repair time of a failed group (s), with repair != none",
                              strategies=("rep", "spare"))
    repair_sd: float = _option(0.5, "standard deviation of the log of a lognormal repair time, with "
                                    "repair='lognormal'", strategies=("rep", "spare"))
    rejoin: str = _option("step", "when a repaired group rejoins: at the next step boundary (step) or at the end of "
                                  "the next checkpoint (checkpoint)", strategies=("rep", "spare"))
    rejoin_s: float = _option(10.0, "pause of the job when repaired groups rejoin (state transfer to them and the "
                                    "communicator rebuild; SPARe also re-runs ReCtlr), booked with ReCtlr/shrink (s)",
                              strategies=("rep", "spare"))
    failures: PerGPU | DomainFailures | None = _option(None, "unit-clock failure model (per-GPU lifetimes or "
                                                             "failure domains) instead of the system-level process",
                                                       cli=False, sweep=False)
    topology: Topology | None = _option(None, "GPUs, nodes, racks and power domains for a unit-clock failure model",
                                        cli=False, sweep=False)
    domain_aware: bool = _option(False, "place every shard's copies in distinct failure domains at the failure "
                                        "model's level (DomainFailures; with several levels the coarsest that "
                                        "admits such a layout; spare_mc.model.placement): Rep's replica sets "
                                        "spread over them; SPARe with layout='sidon' gets domain-aware Sidon "
                                        "offsets (recommended), with layout='cyclic' evenly spread offsets, which "
                                        "split into blocks and stack badly (+1.7 TTT/T0 at N = 600, "
                                        "docs/domains.md)", strategies=("rep", "spare"))
    load_s: float = _option(0.0, "time to load a checkpoint from remote storage at a global restart (s): a restart "
                                 "after a wipe-out takes restart_s (re-scheduling and re-initialisation, growing with "
                                 "N as restart_growth says) plus load_s, or plus memory_load_s when it reloads an "
                                 "in-memory checkpoint")
    memory_copies: int = _option(0, "in-memory checkpoints: each checkpoint is also kept in the CPU memory of this "
                                    "many groups m (0 = remote storage only); a wipe-out reloads the last checkpoint "
                                    "from memory unless every group holding a copy has failed since, else it falls "
                                    "back to the last remote checkpoint")
    memory_save_s: float | None = _option(None, "blocking time of a checkpoint into the CPU memory of m groups (s; "
                                                "memory_copies > 0 only); default save_s / 10")
    memory_load_s: float | None = _option(None, "time to load a checkpoint from CPU memory at a restart (s; "
                                                "memory_copies > 0 only); default memory_save_s")
    remote_every: int = _option(1, "with in-memory checkpoints, every k-th checkpoint since the last remote one also "
                                   "goes to remote storage (save_s); the others to memory only (memory_save_s)")
    ckpt_async: bool = _option(False, "asynchronous remote saves: a save runs in the background for save_s of wall "
                                      "time while compute runs async_slowdown times slower, and the checkpoint is "
                                      "usable in remote storage only once the save is complete")
    async_slowdown: float = _option(1.2, "how much slower compute runs while an asynchronous save is in flight "
                                         "(factor >= 1; ckpt_async only)")
    unit_sampler: str = _option("auto", "how a unit-clock failure model is sampled: race (renewed units race as "
                                        "exponentials in the clock (t - t0)^k; age_policy='renew' only), per_unit "
                                        "(one lifetime per unit, redrawn at restarts) or auto (race under 'renew', "
                                        "per_unit under 'keep'); the same law, different random streams")

    def __post_init__(self):
        for name, value in _timeline_config_iv(self).items():
            object.__setattr__(self, name, value)


    @property
    def memory_save(self) -> float:
        """The blocking time of an in-memory checkpoint (s): ``memory_save_s``, default ``save_s / 10``."""
        return self.save_s / 10.0 if self.memory_save_s is None else self.memory_save_s

    @property
    def memory_load(self) -> float:
        """The load time of an in-memory checkpoint at a restart (s): ``memory_load_s``, default
        :attr:`memory_save`."""
        return self.memory_save if self.memory_load_s is None else self.memory_load_s

    @property
    def unit_race(self) -> bool:
        """Whether the unit clocks are sampled as a race (``unit_sampler``; "auto" = race under "renew")."""
        if self.failures is None or self.unit_sampler == "per_unit":
            return False
        per_gpu = self.failures if isinstance(self.failures, PerGPU) else self.failures.background
        return per_gpu is None or per_gpu.age_policy == "renew"

    def unit_clocks(self) -> UnitClocks | None:
        """Kernel parameters of a unit-clock model (:class:`UnitClocks`: the groups' units, then the domains of
        each level of the model, finest first), or None for the system-level process."""
        if self.failures is None:
            return None
        f, topo = self.failures, self.topology
        per_gpu = f if isinstance(f, PerGPU) else f.background
        scales, n_gu = [], 0
        if per_gpu is not None:  # one unit per group: the first failure of its M GPUs, Weibull(k, lam M^(-1/k))
            n_gu = self.n_groups
            scales += [per_gpu.group_scale(topo) * _US] * n_gu
        ptr, groups = np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)
        class_ends = [n_gu]
        if per_gpu is not f:  # one unit per failure domain of every level of the model
            ptr, groups, level_ptr = topo.domain_units(f.level_names)
            for (_, mtbf_s), n_dom in zip(f.levels, np.diff(level_ptr)):
                scales += [weibull_scale(mtbf_s, f.shape) * _US] * int(n_dom)
            class_ends += [n_gu + int(x) for x in level_ptr[1:]]
        keep = per_gpu is not None and per_gpu.age_policy == "keep"
        return UnitClocks(np.array(scales, dtype=np.float64), n_gu, ptr.astype(np.int64), groups.astype(np.int64),
                          keep, f.shape, tuple(class_ends))

    @property
    def allreduce(self) -> float:
        """``T_a`` in seconds (the default model when ``allreduce_s`` is None)."""
        return paper_allreduce_s(self.n_groups) if self.allreduce_s is None else float(self.allreduce_s)

    @property
    def step_allreduce(self) -> float:
        """The all-reduce time of one step in seconds: ``T_a``, or ``N / n_sets x T_a`` for Rep with
        ``rep_allreduce = "per_replica"`` (``r T_a`` when ``r`` divides ``N``)."""
        if self.strategy == "rep" and self.rep_allreduce == "per_replica":
            return self.n_groups / self.replica_sets().n_sets * self.allreduce
        return self.allreduce

    @property
    def domain_level(self) -> str | None:
        """The level a ``domain_aware`` layout is placed against (None without ``domain_aware``): the model's level,
        or for a mixed model the coarsest of its levels at which such a layout exists. Levels nest (a node lies in
        one rack, ...), so a layout with no two holders of a shard in one domain at a level has none in one domain
        at any finer level either."""
        if not self.domain_aware:
            return None
        kind = "rep" if self.strategy == "rep" else "spare"
        return _aware_level(self.topology, self.r, self.failures.level_names, kind,
                            kind == "spare" and self.layout == "sidon")

    def replica_sets(self) -> ReplicaSets:
        """Rep's replica sets (:class:`spare_mc.model.layouts.ReplicaSets`; the blocks of ``r`` groups when ``r`` divides
        ``N``; with ``domain_aware``, :func:`spare_mc.model.placement.domain_aware_replica_sets`)."""
        if self.domain_aware:
            return _placed_sets(self.topology, self.r, self.domain_level)
        return _replica_sets(self.n_groups, self.r)

    @property
    def rep_step_compute_us(self) -> int:
        """A Rep step's nominal compute in integer microseconds: ``round(N x T_comp / n_sets)`` (``r T_comp`` when
        ``r`` divides ``N``), rounded exactly (half to even)."""
        return round(Fraction(self.n_groups * round(self.compute_s * _US), self.replica_sets().n_sets))

    @property
    def restart(self) -> float:
        """The global restart time in seconds: ``restart_s (N / restart_ref_groups)^p`` with ``p`` = 0, 1 or 2 for
        ``restart_growth`` constant, linear or quadratic."""
        return self.restart_s * (self.n_groups / self.restart_ref_groups) ** RESTART_GROWTH[self.restart_growth]

    @property
    def remote_restart(self) -> float:
        """A global restart that reloads the last checkpoint from remote storage, in seconds: :attr:`restart` plus
        ``load_s``. The ``T_r`` of the theory period (:func:`theory_costs`), of the dynamic ``hazard`` policy and
        of the classical model's ``R``."""
        return self.restart + self.load_s

    @property
    def t0_s(self) -> float:
        """``T0 = n_steps (T_comp + T_a)``: failure-free, redundancy-free time to train."""
        return self.n_steps * (self.compute_s + self.allreduce)

    @property
    def ckpt_period(self) -> float:
        """``T_c`` in seconds: ``ckpt_period_s``, or ``ckpt_period_factor x`` the theory optimum when it is None."""
        if self.ckpt_period_s is not None:
            return self.ckpt_period_s
        return self.ckpt_period_factor * theory_ckpt_period_s(self)

    @property
    def cap_s(self) -> float:
        """The wall-clock cap ``max_wall_factor x T0`` in seconds."""
        return self.max_wall_factor * self.t0_s

    def layout_object(self, rng=None) -> Layout | ReplicaSets:
        """The holder table the timeline runs on (``layout="random"``: drawn with ``rng``, which is then required;
        a job draws it from its replication seed, see :func:`run_timeline`). Rep: ``block(N, r)`` when ``r``
        divides ``N``, else its :meth:`replica_sets` (which have no holder table; the kernel runs Rep on the sets
        either way)."""
        if self.strategy == "ckpt":
            return cyclic(self.n_groups, 1)
        if self.strategy == "rep":
            if self.domain_aware:
                return _placed_layout(self.topology, self.r, self.domain_level, "rep", False)
            return block(self.n_groups, self.r) if self.n_groups % self.r == 0 else self.replica_sets()
        if self.domain_aware:
            return _placed_layout(self.topology, self.r, self.domain_level, "spare", self.layout == "sidon")
        if self.layout == "random":
            if rng is None:
                raise UsageValueError("`layout`='random' draws one layout per job: pass `rng`")
            return random_holders(self.n_groups, self.r, rng=rng)
        return cyclic(self.n_groups, self.r) if self.layout == "cyclic" else sidon(self.n_groups, self.r)

    @property
    def random_layout(self) -> bool:
        """A SPARe job with independent random holders (a layout per job)."""
        return self.strategy == "spare" and self.layout == "random"

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



_CLOCK_WHY = "seconds; about 32 years, beyond which a duration is a unit mistake"
_DURATIONS = ("compute_s", "restart_s", "save_s", "shrink_s", "rectlr_s", "rep_resync_s", "masked_detect_s", "load_s")


def applicable(overrides: dict, strategy: str) -> dict:
    """The entries of ``overrides`` (TimelineConfig fields) that affect ``strategy``: a setting shared by several
    strategies (a sweep over strategies, the optimiser's ``base``) drops an option where it has no effect."""
    fs = {f.name: f for f in fields(TimelineConfig)}
    return {k: v for k, v in overrides.items()
            if k not in fs or not fs[k].metadata.get("strategies") or strategy in fs[k].metadata["strategies"]}


def _no_effect_iv(cfg, out) -> None:
    """A value given where it has no effect is an error, never silently ignored: a strategy-specific option away
    from its default for another strategy, ``live_scaling=False`` or another ``shape`` with a unit-clock model, a
    ``topology`` without one."""
    s = out["strategy"]
    for f in fields(TimelineConfig):
        strategies = f.metadata.get("strategies")
        if strategies and s not in strategies and out.get(f.name, getattr(cfg, f.name)) != f.default:
            raise UsageValueError(f"`{f.name}` has no effect with strategy={s!r} (it applies to "
                                  f"{' and '.join(strategies)}); leave it at its default {f.default!r}")
    out["unit_sampler"] = as_choice(cfg.unit_sampler, "unit_sampler", UNIT_SAMPLERS)
    out["domain_aware"] = as_bool(cfg.domain_aware, "domain_aware")
    if out["failures"] is None and out["domain_aware"]:
        raise UsageValueError("`domain_aware` needs failure domains (`failures` a DomainFailures; on the command "
                              "line --failures node, rack, power or pod): the copies are placed against the domains "
                              "of its level")
    if out["failures"] is None:
        if cfg.topology is not None:
            raise UsageValueError("`topology` has no effect without a unit-clock failure model (`failures`)")
        if out["unit_sampler"] != "auto":
            raise UsageValueError("`unit_sampler` has no effect without a unit-clock failure model (`failures`)")
        return
    if not out["live_scaling"]:
        raise UsageValueError("`live_scaling`=False has no effect with a unit-clock failure model: per-GPU lifetimes "
                              "and failure domains only hit live groups, by construction")
    if out["shape"] != out["failures"].shape:
        if out["shape"] != _PAPER["shape"]:
            raise UsageValueError(f"`shape`={out['shape']} is the system-level process's; the unit-clock model has "
                                  f"its own shape k={out['failures'].shape}: leave `shape` at its default")
        out["shape"] = out["failures"].shape  # the shape the job runs under
    f = out["failures"]
    if out["domain_aware"]:
        if not isinstance(f, DomainFailures):
            raise UsageValueError("`domain_aware` needs failure domains (`failures` a DomainFailures; on the command "
                                  "line --failures node, rack, power or pod): the copies are placed against the "
                                  "domains of its level")
        if out["strategy"] == "spare" and out["layout"] == "random":
            raise UsageValueError("`domain_aware` places cyclic offsets, not random holders: choose layout='sidon' "
                                  "(domain-aware Sidon offsets, recommended) or 'cyclic' (evenly spread offsets, "
                                  "which stack badly: docs/domains.md)")
        kind = "rep" if out["strategy"] == "rep" else "spare"
        _aware_level(out["topology"], out["r"], f.level_names, kind, out["layout"] == "sidon")  # the clear error, now
    per_gpu = f if isinstance(f, PerGPU) else f.background
    if out["unit_sampler"] == "race" and per_gpu is not None and per_gpu.age_policy == "keep":
        raise UsageValueError("`unit_sampler`='race' needs age_policy='renew' (units race from a common origin, "
                              "the last restart); with age_policy='keep' use 'per_unit' or 'auto'")


#: How far `mtbf_s` may lie outside the range of a unit-clock model's system MTBF (its first-failure and long-run
#: values, :func:`spare_mc.model.failures.system_mtbf_s`) when it sets the theory checkpoint period.
UNIT_MTBF_SLACK = 2.0


def _unit_mtbf_iv(out) -> None:
    """With a unit-clock model the theory period still takes ``m`` from ``mtbf_s``, which the model does not set
    (its system MTBF has two readings: :func:`spare_mc.model.failures.system_mtbf_s`). An ``mtbf_s`` that no reading of
    the model supports, even within a factor :data:`UNIT_MTBF_SLACK`, would silently give a period for another
    system (the paper's 300 s against per-GPU lifetimes 60 times as frequent): refused."""

    first, long_run = system_mtbf_s(out["failures"], out["topology"])
    lo, hi = min(first, long_run) / UNIT_MTBF_SLACK, max(first, long_run) * UNIT_MTBF_SLACK
    if not lo <= out["mtbf_s"] <= hi:
        raise UsageValueError(
            f"`mtbf_s`={out['mtbf_s']:g} s sets the theory checkpoint period, but `failures` gives a system MTBF "
            f"of {first:.4g} s (first failure of a fresh system) to {long_run:.4g} s (long run), "
            f"spare_mc.model.failures.system_mtbf_s: set `mtbf_s` to the one you mean, or give `ckpt_period_s`")


def _tiered_iv(cfg, out, n) -> None:
    """In-memory copies and asynchronous saves: their values and the rules they do not combine with."""
    fs = TimelineConfig.__dataclass_fields__
    out["memory_copies"] = m = as_int(cfg.memory_copies, "memory_copies", min_value=0)
    if m > n:
        raise UsageValueError(f"`memory_copies` must be <= n_groups = {n} (one copy per group), "
                              f"got memory_copies={m}")
    out["remote_every"] = as_int(cfg.remote_every, "remote_every", min_value=1, max_value=10**9)
    out["ckpt_async"] = as_bool(cfg.ckpt_async, "ckpt_async")
    out["async_slowdown"] = as_float(cfg.async_slowdown, "async_slowdown", max_value=100.0,
                                     why="a compute slowdown factor")
    if out["async_slowdown"] < 1.0:
        raise UsageValueError(f"`async_slowdown` must be >= 1 (compute runs that many times slower while a save "
                              f"is in flight), got async_slowdown={out['async_slowdown']}")
    for name in ("memory_save_s", "memory_load_s"):
        v = getattr(cfg, name)
        out[name] = None if v is None else as_float(v, name, positive=name == "memory_save_s", nonnegative=True,
                                                    max_value=MAX_DURATION_S, why=_CLOCK_WHY)
        if v is not None and 0 < out[name] < 1e-6:
            rule = "at least" if name == "memory_save_s" else "0 or at least"
            raise UsageValueError(f"`{name}` must be {rule} 1 microsecond (1e-06 s), got {name}={v:g}")
    if m == 0:
        for name in ("memory_save_s", "memory_load_s", "remote_every"):
            if out[name] != fs[name].default:
                raise UsageValueError(f"`{name}` has no effect without in-memory checkpoints: set `memory_copies` "
                                      f">= 1, or leave {name} at its default {fs[name].default!r}")
    if not out["ckpt_async"] and out["async_slowdown"] != fs["async_slowdown"].default:
        raise UsageValueError(f"`async_slowdown` has no effect without asynchronous saves: set `ckpt_async`=True, "
                              f"or leave it at its default {fs['async_slowdown'].default!r}")
    if m == 0 and not out["ckpt_async"]:
        return
    what = "in-memory checkpoints (memory_copies > 0)" if m else "asynchronous saves (ckpt_async=True)"
    for name, value, rule in (("ckpt_policy", out["ckpt_policy"], "periodic"),
                              ("ckpt_failure", out["ckpt_failure"], "completes"),
                              ("detection", out["detection"], "allreduce"),
                              ("final_checkpoint", out["final_checkpoint"], False),
                              ("rejoin", out["rejoin"], "step")):
        if value != rule:
            hint = (" (the classical model, --model classical, has immediate detection and a final checkpoint: "
                    "it does not take these options)" if name in ("detection", "final_checkpoint") else "")
            raise UsageValueError(f"{what} are modelled with {name}={rule!r} only, got {name}={value!r}{hint}")


def _timeline_config_iv(cfg: "TimelineConfig") -> dict:
    """Validate a :class:`TimelineConfig` and return its cleaned field values (plain Python numbers)."""
    out = {}
    out["strategy"] = s = as_choice(cfg.strategy, "strategy", STRATEGIES)
    out["n_groups"] = n = as_int(cfg.n_groups, "n_groups", min_value=2, max_value=1 << 24)
    out["r"] = r = as_int(cfg.r, "r", min_value=1, max_value=n)
    if s == "ckpt" and r != 1:
        raise UsageValueError(f"`r` must be 1 for strategy 'ckpt' (no redundancy), got r={r}")
    out["layout"] = as_choice(cfg.layout, "layout", SPARE_LAYOUTS)
    out["restart_growth"] = as_choice(cfg.restart_growth, "restart_growth", tuple(RESTART_GROWTH))
    out["restart_ref_groups"] = as_int(cfg.restart_ref_groups, "restart_ref_groups", min_value=1)
    ref_default = TimelineConfig.__dataclass_fields__["restart_ref_groups"].default
    if out["restart_growth"] == "constant" and out["restart_ref_groups"] != ref_default:
        raise UsageValueError(f"`restart_ref_groups`={out['restart_ref_groups']} has no effect with "
                              f"restart_growth='constant' (the restart time is `restart_s` at every N): set "
                              f"`restart_growth` to 'linear' or 'quadratic', or leave `restart_ref_groups` at its "
                              f"default {ref_default}")
    out["rep_allreduce"] = as_choice(cfg.rep_allreduce, "rep_allreduce", ("per_step", "per_replica"))
    out["rep_masked_cost"] = as_choice(cfg.rep_masked_cost, "rep_masked_cost", REP_MASKED_COSTS)
    out["patch_cost"] = as_choice(cfg.patch_cost, "patch_cost", PATCH_COSTS)
    out["restart_failures"] = as_choice(cfg.restart_failures, "restart_failures", RESTART_FAILURES)
    out["ckpt_failure"] = as_choice(cfg.ckpt_failure, "ckpt_failure", CKPT_FAILURES)
    out["detection"] = as_choice(cfg.detection, "detection", DETECTIONS)
    out["final_checkpoint"] = as_bool(cfg.final_checkpoint, "final_checkpoint")
    out["ckpt_policy"] = as_choice(cfg.ckpt_policy, "ckpt_policy", CKPT_POLICIES)
    if out["ckpt_policy"] != "periodic":
        for name, bad, rule in (("ckpt_period_s", cfg.ckpt_period_s is not None, "None"),
                                ("ckpt_every_steps", cfg.ckpt_every_steps not in (0, None), "0"),
                                ("failures", cfg.failures is not None, "None (the system-level process)")):
            if bad:
                raise UsageValueError(f"ckpt_policy={out['ckpt_policy']!r} derives the period from the hazard: "
                                      f"`{name}` must be {rule}, got {name}={getattr(cfg, name)!r}")
    out["repair"] = as_choice(cfg.repair, "repair", REPAIRS)
    out["rejoin"] = as_choice(cfg.rejoin, "rejoin", REJOINS)
    out["repair_s"] = as_float(cfg.repair_s, "repair_s", positive=True, max_value=MAX_DURATION_S, why=_CLOCK_WHY)
    out["repair_sd"] = as_float(cfg.repair_sd, "repair_sd", positive=True, max_value=5.0,
                                why="the log-sd of a lognormal repair time; beyond 5 the mean is dominated by "
                                    "draws no job lives to see")
    out["rejoin_s"] = as_float(cfg.rejoin_s, "rejoin_s", nonnegative=True, max_value=MAX_DURATION_S, why=_CLOCK_WHY)
    if out["repair_s"] < 1e-6 or 0 < out["rejoin_s"] < 1e-6:
        raise UsageValueError("`repair_s` must be at least 1 microsecond and `rejoin_s` 0 or at least 1 microsecond")
    if out["repair"] == "none":
        for name in ("repair_s", "repair_sd", "rejoin", "rejoin_s"):
            if out[name] != TimelineConfig.__dataclass_fields__[name].default:
                raise UsageValueError(f"`{name}` has no effect without repair: set `repair` to 'fixed' or "
                                      f"'lognormal', or leave {name} at its default")
    else:
        if out["repair"] == "fixed" and out["repair_sd"] != TimelineConfig.__dataclass_fields__["repair_sd"].default:
            raise UsageValueError("`repair_sd` has no effect with repair='fixed': leave it at its default")
        if out["repair"] == "log":
            for name in ("repair_s", "repair_sd"):
                if out[name] != TimelineConfig.__dataclass_fields__[name].default:
                    raise UsageValueError(f"`{name}` has no effect with repair='log' (each event's repair time comes "
                                          f"from the failure log): leave it at its default")
        if cfg.failures is not None:
            raise UsageValueError("`repair` needs the system-level failure process (`failures`=None): repaired "
                                  "hardware under per-GPU or domain clocks is not modelled")
    if out["detection"] == "immediate" and out["ckpt_failure"] != "completes":
        raise UsageValueError("`ckpt_failure` has no effect with detection='immediate' (a failure during a save "
                              "interrupts it at once): leave it at its default 'completes'")
    if out["final_checkpoint"] and out["ckpt_failure"] == "lost" and out["detection"] == "allreduce":
        raise UsageValueError("`final_checkpoint`=True with ckpt_failure='lost' is not modelled (no all-reduce "
                              "follows the last save to detect its loss): use ckpt_failure='completes' or "
                              "detection='immediate'")
    _tiered_iv(cfg, out, n)
    out["ckpt_every_steps"] = k = as_int(cfg.ckpt_every_steps, "ckpt_every_steps", min_value=0, max_value=10**12)
    out["n_steps"] = as_int(cfg.n_steps, "n_steps", min_value=1, max_value=10**12)
    for name in _DURATIONS:
        out[name] = as_float(getattr(cfg, name), name, positive=name in ("compute_s", "restart_s", "save_s"),
                             nonnegative=True, max_value=MAX_DURATION_S, why=_CLOCK_WHY)
    for name in ("allreduce_s", "ckpt_period_s"):
        v = getattr(cfg, name)
        out[name] = None if v is None else as_float(v, name, positive=name == "ckpt_period_s", nonnegative=True,
                                                    max_value=MAX_DURATION_S, why=_CLOCK_WHY)
    out["mtbf_s"] = as_float(cfg.mtbf_s, "mtbf_s", positive=True, max_value=MAX_MTBF_S,
                             why="beyond it the theory's mean uptime overflows")
    # the clock counts microseconds: a shorter duration would be 0 (an MTBF of 5e-324 overflowed a conversion)
    for name in (*_DURATIONS, "allreduce_s", "mtbf_s"):
        v = out[name]
        if v is not None and 0 < v < 1e-6:
            rule = ("at least 1 microsecond (1e-06 s)" if name in ("compute_s", "restart_s", "save_s", "mtbf_s") else
                    "0 or at least 1 microsecond (1e-06 s)")  # the first four must be > 0 (checked above)
            raise UsageValueError(f"`{name}` must be {rule}, got {name}={v:g}")
    out["shape"] = _shape_iv(cfg.shape)
    out["ckpt_period_factor"] = f = as_float(cfg.ckpt_period_factor, "ckpt_period_factor", positive=True,
                                             max_value=1e6)
    if out["ckpt_period_s"] is not None and f != 1.0:
        raise UsageValueError(f"give `ckpt_period_s` or `ckpt_period_factor`, not both (got ckpt_period_s="
                              f"{out['ckpt_period_s']}, ckpt_period_factor={f})")
    if k > 0 and (out["ckpt_period_s"] is not None or f != 1.0):
        raise UsageValueError(f"`ckpt_every_steps`={k} checkpoints by steps: give no `ckpt_period_s` and leave "
                              f"`ckpt_period_factor` at 1 (got ckpt_period_s={out['ckpt_period_s']}, "
                              f"ckpt_period_factor={f})")
    if out["rep_resync_s"] > 0 and out["rep_masked_cost"] != "resync":
        raise UsageValueError(f"`rep_resync_s` > 0 needs rep_masked_cost='resync', got rep_resync_s="
                              f"{out['rep_resync_s']}, rep_masked_cost={out['rep_masked_cost']!r}")
    out["jitter_sd"] = as_float(cfg.jitter_sd, "jitter_sd", nonnegative=True, max_value=MAX_JITTER_SD,
                                max_inclusive=False, why="a duration Normal(1, sd^2) clipped at 0: at sd < 0.2 the "
                                "clipping has probability < 3e-7, which the grouped quiet stretches neglect")
    out["max_wall_factor"] = as_float(cfg.max_wall_factor, "max_wall_factor", positive=True)
    if out["max_wall_factor"] <= 1:
        raise UsageValueError(f"`max_wall_factor` must be > 1 (the cap is a multiple of T0, the failure-free time, "
                              f"which no run can beat), got {out['max_wall_factor']}")
    out["live_scaling"] = as_bool(cfg.live_scaling, "live_scaling")
    if cfg.failures is not None and not isinstance(cfg.failures, (PerGPU, DomainFailures)):
        raise UsageTypeError(f"`failures` must be PerGPU, DomainFailures or None (the system-level process), got "
                             f"{type(cfg.failures).__name__}")
    out["failures"] = cfg.failures
    out["topology"] = cfg.topology
    if cfg.topology is not None:
        if not isinstance(cfg.topology, Topology):
            raise UsageTypeError(f"`topology` must be a Topology, got {type(cfg.topology).__name__}")
        if cfg.topology.n_groups != n:
            raise UsageValueError(f"`topology` has N={cfg.topology.n_groups} groups, the config N={n}")
    elif cfg.failures is not None:
        out["topology"] = Topology(_PAPER["n_gpus"], n)
    _no_effect_iv(cfg, out)
    if out["failures"] is not None and out["ckpt_period_s"] is None and k == 0:
        _unit_mtbf_iv(out)
    growth = (n / out["restart_ref_groups"]) ** RESTART_GROWTH[out["restart_growth"]]
    if out["restart_s"] * growth + out["load_s"] > MAX_DURATION_S:
        raise UsageValueError(f"the restart time restart_s x (N / restart_ref_groups)^p = "
                              f"{out['restart_s'] * growth:.4g} s (restart_growth={out['restart_growth']!r}) must be "
                              f"<= {MAX_DURATION_S:g} s")
    # the integer-microsecond clock: the wall-clock cap (and, for the system process, N x cap) must fit
    allreduce = paper_allreduce_s(n) if out["allreduce_s"] is None else out["allreduce_s"]
    cap_us = out["max_wall_factor"] * out["n_steps"] * (out["compute_s"] + allreduce) * _US
    limit, what = (WALL_LIMIT_US, "cap") if out["failures"] is not None else (OPERATIONAL_LIMIT / n, "N x cap")
    if cap_us > limit:
        raise UsageValueError(
            f"the wall-clock cap max_wall_factor x T0 = {cap_us / _US:.4g} s is beyond the integer-microsecond clock "
            f"({what} must stay below {limit * (n if what != 'cap' else 1):.3g} microseconds): lower "
            f"`max_wall_factor`, `n_steps` or the step time")
    return out


#: The classical checkpoint/restart model (Daly, FGCS 2006) as one value of each of the timeline's rules: no
#: redundancy, no all-reduce (a step is ``T_comp`` of compute; the solve time is ``n_steps x T_comp``), exponential
#: failures at rate ``1/M`` at all times, detected when they arrive, a restart that a failure starts again, a
#: checkpoint after every segment including the last, no jitter. See :func:`classical_config`.
CLASSICAL_RULES = {"strategy": "ckpt", "r": 1, "allreduce_s": 0.0, "shape": 1.0, "jitter_sd": 0.0,
                   "live_scaling": True, "detection": "immediate", "restart_failures": "restart_again",
                   "final_checkpoint": True, "restart_growth": "constant", "ckpt_failure": "completes",
                   "ckpt_every_steps": 0, "failures": None, "ckpt_policy": "periodic"}


def classical_config(**kw) -> TimelineConfig:
    """The timeline under :data:`CLASSICAL_RULES`, the setting of Daly's exact expected wall time.

    ``kw`` are :class:`TimelineConfig` fields: the solve time is ``n_steps x compute_s``, the interval ``tau`` is
    ``ckpt_period_s`` (a checkpoint at the first step boundary ``tau`` or more after the last checkpoint or restart,
    so a segment is ``ceil(tau / T_comp)`` steps: see :func:`classical_segment_s`; default: the exact optimum of
    :func:`spare_mc.theory.closed_forms.daly_optimal_interval`, rounded to the best whole number of steps), ``save_s``
    is ``delta``, ``restart_s + load_s`` is ``R`` and ``mtbf_s`` is ``M``. ``n_groups`` does not matter (default
    2, which leaves the most room for the wall-clock cap on the integer clock): every failure wipes out at once. A
    rule given with another value than the classical one is an error naming it.

    Examples
    --------
    >>> cfg = classical_config(n_steps=100, compute_s=60.0, ckpt_period_s=600.0, save_s=30.0, restart_s=300.0,
    ...                        mtbf_s=3600.0)
    >>> classical_segment_s(cfg), round(classical_expected_ttt_s(cfg), 1)
    (600.0, 7483.2)
    """
    for name, value in CLASSICAL_RULES.items():
        if name in kw and kw[name] != value:
            raise UsageValueError(f"`{name}`={kw[name]!r} contradicts the classical model, whose rule is "
                                  f"{name}={value!r}: drop it")
    kw = {**CLASSICAL_RULES, "n_groups": 2, **kw}
    if kw.get("ckpt_period_s") is None and kw.get("ckpt_period_factor", 1.0) != 1.0:
        raise UsageValueError(f"`ckpt_period_factor`={kw['ckpt_period_factor']!r} scales the step model's T_c*, not "
                              f"the classical optimum: give `ckpt_period_s` instead (default: the whole number of "
                              f"steps with the least exact expected time)")
    if kw.get("ckpt_period_s") is None:
        probe = TimelineConfig(**{**kw, "ckpt_period_s": 1.0})  # validates the durations first
        kw["ckpt_period_s"] = _best_classical_period(probe)
    return TimelineConfig(**kw)


def _best_classical_period(cfg: TimelineConfig) -> float:
    """The interval of whole steps ``k T_comp`` with the least exact expected time: ``k`` walks from the step count
    nearest the exact optimum of :func:`spare_mc.theory.closed_forms.daly_optimal_interval` while the value improves."""
    c = cfg.compute_s
    tau = daly_optimal_interval(cfg.n_steps * c, cfg.save_s, cfg.remote_restart, cfg.mtbf_s)[0]

    def value(k):
        return classical_expected_ttt_s(dataclasses.replace(cfg, ckpt_period_s=k * c))

    k0 = min(max(1, round(tau / c)), cfg.n_steps)
    best_k, best = k0, value(k0)
    for step in (-1, 1):
        k = k0 + step
        while 1 <= k <= cfg.n_steps:
            v = value(k)
            if not v < best:
                break
            best_k, best = k, v
            k += step
    return best_k * c


def is_classical(cfg: TimelineConfig) -> bool:
    """Whether ``cfg`` follows every rule of :data:`CLASSICAL_RULES`."""
    return all(getattr(cfg, name) == value for name, value in CLASSICAL_RULES.items())


def classical_segment_s(cfg: TimelineConfig) -> float:
    """The compute of one segment between checkpoints of a classical run: ``k T_comp`` with ``k = ceil(tau /
    T_comp)`` steps (at least 1; ``tau = T_c``), computed on the integer-microsecond clock the kernel uses."""
    c_us = round(cfg.compute_s * _US)
    tau_us = round(cfg.ckpt_period * _US) if cfg.ckpt_period * _US < _HORIZON_F else int(_tk.HORIZON_US)
    k = max(1, -(-tau_us // c_us))
    return min(k, cfg.n_steps) * c_us / _US


def classical_expected_ttt_s(cfg: TimelineConfig) -> float:
    """Daly's exact expected wall time (:func:`spare_mc.theory.closed_forms.daly_expected_wall_time`) for a classical
    config: solve time ``n_steps x T_comp``, interval :func:`classical_segment_s`, ``delta = T_s``, ``R`` the whole
    restart (``T_r`` plus the checkpoint's load ``load_s``), ``M`` the MTBF."""
    if not is_classical(cfg):
        raise UsageValueError("`cfg` does not follow the classical rules: build it with classical_config")
    restart = (round(cfg.restart * _US) + round(cfg.load_s * _US)) / _US  # as the kernel's clock has it
    return daly_expected_wall_time(cfg.n_steps * round(cfg.compute_s * _US) / _US, classical_segment_s(cfg),
                                   round(cfg.save_s * _US) / _US, restart, cfg.mtbf_s)


def mean_wipeout_index(cfg: TimelineConfig) -> float:
    """``E[T]``, failures until a wipe-out in uniform order: 1 (CKPT-only), the exact mean of the replica sets (Rep,
    ``exact_wipeout("block", N, r)``, any ``r``), the exact cyclic mean (SPARe unit stride) or the exact
    random-holders mean (SPARe Sidon, random and domain-aware offsets, which spread the copies as Sidon's do)."""
    return _mean_wipeout_index(cfg.strategy, cfg.n_groups, cfg.r, "sidon" if cfg.domain_aware else cfg.layout)


@functools.lru_cache(maxsize=256)
def _mean_wipeout_index(strategy, n_groups, r, layout):
    if strategy == "ckpt":
        return 1.0
    if strategy == "rep":
        return exact_wipeout("block", n_groups, r).mean  # the replica sets' law, for every r
    return exact_wipeout("cyclic" if layout == "cyclic" else "random", n_groups, r).mean


@functools.lru_cache(maxsize=64)
def _replica_sets(n_groups, r):
    return replica_sets(n_groups, r)


@functools.lru_cache(maxsize=64)
def _placed_sets(topology, r, level):
    return domain_aware_replica_sets(topology, r, level)


@functools.lru_cache(maxsize=64)
def _placed_layout(topology, r, level, kind, sidon):
    return domain_aware(topology, r, level, kind=kind, sidon=sidon)


@functools.lru_cache(maxsize=64)
def _aware_level(topology, r, levels, kind, sidon):
    """The coarsest of ``levels`` (finest first) at which a domain-aware layout exists; if none does, the finest
    level's error."""
    for i, level in enumerate(reversed(levels)):
        try:
            _placed_layout(topology, r, level, kind, sidon)
            return level
        except UsageValueError:
            if i == len(levels) - 1:
                raise


@functools.lru_cache(maxsize=64)
def _kernel_sets(sets):
    return (_read_only(np.ascontiguousarray(sets.set_of_group, dtype=np.int64)),
            _read_only(np.ascontiguousarray(sets.sizes, dtype=np.int64)))


def _rep_kernel_sets(cfg):
    """Rep's replica sets for the kernel: the set of each group and each set's size (int64, read only)."""
    return _kernel_sets(cfg.replica_sets())


def theory_ckpt_period_s(cfg: TimelineConfig) -> float:
    """The availability-optimal period ``T_c* = T_s + sqrt(T_s^2 + 2 T_s (T_f + T_r))`` with
    ``T_f = E[T] m`` the mean time between wipe-outs (failures until a wipe-out times the full-system MTBF;
    live scaling ignored, as in the paper) and ``T_r`` the restart with its remote load ``load_s``. ``T_s`` is the
    mean cost of a checkpoint: an asynchronous remote save costs the compute its slowdown takes, ``T_s (1 - 1/f)``
    (and, without copies, the period is at least ``save_s``: one save at a time); with in-memory copies and
    ``remote_every = k``, ``((k - 1) T_mem + C_remote) / k`` with ``C_remote`` the remote save's cost (plus its copy to
    memory when it runs in the background), and ``T_r`` the restart with the memory load (most restarts reload from
    memory; the period is that of all checkpoints)."""
    ts, tf, tr = theory_costs(cfg)
    period = ckpt_period_optimal(ts, tf, tr) if ts > 0 else 0.0
    if cfg.ckpt_async and cfg.memory_copies == 0:  # a save cannot start before the last one completed
        period = max(period, cfg.save_s)
    return period


def theory_costs(cfg: TimelineConfig) -> tuple[float, float, float]:
    """``(T_s, T_f, T_r)`` of the availability model for a config, in seconds: the mean cost of a checkpoint, the
    mean time between wipe-outs and the restart with its load, as :func:`theory_ckpt_period_s` explains. The period
    and the theory's availability (:func:`spare_mc.theory_ttt`) both take them from here, so that they describe
    the same checkpointing."""
    tf = mean_wipeout_index(cfg) * cfg.mtbf_s
    ts, tr = cfg.save_s, cfg.remote_restart
    # an asynchronous remote save costs the compute its slowdown takes (when steps run all through it)
    remote = cfg.save_s * (1.0 - 1.0 / cfg.async_slowdown) if cfg.ckpt_async else cfg.save_s
    if cfg.memory_copies > 0:  # the mean cost of a checkpoint: k - 1 to memory, then one remote (after its copy
        k = cfg.remote_every   # to memory if it runs in the background); most restarts reload from memory
        ts = ((k - 1) * cfg.memory_save + remote + (cfg.memory_save if cfg.ckpt_async else 0.0)) / k
        tr = cfg.restart + cfg.memory_load
    elif cfg.ckpt_async:
        ts = remote
    return ts, tf, tr


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


#: Memory of one TimelineRun with its raw results (measured: about 1.4 KB; rounded up).
_RUN_BYTES = 2048

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
#: The kernel's ``live0`` when it builds SPARe's fully live state itself: ReCtlr's blocks with no columns (their
#: rows and types from ``alloc`` itself, run as plain Python), read only like :func:`_live_state`'s, so that numba
#: compiles one signature of the kernel.
_NO_LIVE0 = tuple(_read_only(np.ascontiguousarray(b[..., :0])) for b in _rk.alloc.py_func(0, 1))


def _live_state(holders: np.ndarray):
    """SPARe's fully live ReCtlr state on ``holders`` (:func:`spare_mc._kernels.timeline.live_state`, read only),
    which the kernel copies at the start of a job instead of building it; None if ReCtlr finds no initial
    assignment (the kernel then finds none either and reports it)."""
    blocks, rc = _tk.live_state(holders)
    return None if rc < 0 else tuple(_read_only(b) for b in blocks)


class UnitClocks(NamedTuple):
    """The unit clocks of a unit-clock failure model, as the kernel takes them (:meth:`TimelineConfig.unit_clocks`).

    Units are the ``n_group_units`` groups (per-GPU lifetimes; 0 without them), then the domains of each level of
    the model (finest first); ``uscale_us[u]`` is unit ``u``'s Weibull scale in microseconds, the domain ``u -
    n_group_units`` touches ``dom_groups[dom_ptr[d]:dom_ptr[d + 1]]``, ``keep`` says whether ages are kept at a
    restart, ``shape`` is ``k``. ``class_ends`` ends each class of units that share one scale: the groups, then
    each level (``class_ends[0] = n_group_units``, the last is the number of units).
    """

    uscale_us: np.ndarray
    n_group_units: int
    dom_ptr: np.ndarray
    dom_groups: np.ndarray
    keep: bool
    shape: float
    class_ends: tuple


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
    P[_tk.P_STAY_DEAD] = cfg.restart_failures == "stay_dead"
    P[_tk.P_RESTART_AGAIN] = cfg.restart_failures == "restart_again"
    P[_tk.P_DETECT_IMMEDIATE] = cfg.detection == "immediate"
    P[_tk.P_FINAL_CKPT] = cfg.final_checkpoint
    P[_tk.P_CKPT_POLICY] = CKPT_POLICIES[cfg.ckpt_policy]
    P[_tk.P_REPAIR] = REPAIRS[cfg.repair]
    if cfg.repair != "none":
        P[_tk.P_REPAIR_US] = round(cfg.repair_s * _US)
        P[_tk.P_REJOIN_CKPT] = cfg.rejoin == "checkpoint"
        P[_tk.P_REJOIN_US] = round(cfg.rejoin_s * _US)
    P[_tk.P_CKPT_EVERY] = every if every else int(_tk.HORIZON_US)
    P[_tk.P_CKPT_LOST] = cfg.ckpt_failure == "lost"
    P[_tk.P_LIVE_SCALING] = cfg.live_scaling
    P[_tk.P_LOAD_US] = round(cfg.load_s * _US)
    P[_tk.P_MEM_COPIES] = cfg.memory_copies
    P[_tk.P_REMOTE_EVERY] = cfg.remote_every
    P[_tk.P_ASYNC] = cfg.ckpt_async
    if cfg.memory_copies > 0:
        P[_tk.P_MEM_SAVE_US] = round(cfg.memory_save * _US)
        P[_tk.P_MEM_LOAD_US] = round(cfg.memory_load * _US)
    PF = np.zeros(_tk.N_PF)
    PF[_tk.PF_JITTER_SD] = cfg.jitter_sd
    PF[_tk.PF_ASYNC_F] = cfg.async_slowdown
    PF[_tk.PF_ASYNC_G] = (cfg.async_slowdown - 1.0) / cfg.async_slowdown
    if cfg.ckpt_policy != "periodic":
        PF[_tk.PF_LAM_S] = cfg.mtbf_s / math.gamma(1.0 + 1.0 / cfg.shape)
        PF[_tk.PF_SHAPE] = cfg.shape
        PF[_tk.PF_FACTOR] = cfg.ckpt_period_factor
        PF[_tk.PF_SAVE_S] = cfg.save_s
        PF[_tk.PF_RESTART_S] = cfg.remote_restart  # T_r as the periodic theory has it: with the load
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
    ReCtlr state on ``holders`` (:func:`_live_state`), else the kernel builds it."""
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
    rc = _tk.timeline(P, PF, holders, _NO_LIVE0 if live0 is None else live0, gset, ssize, gaps, vic, uscale, ptr,
                      groups, life, jitter_rng, repair_rng, res)
    if rc < 0:  # pragma: no cover - an internal error
        raise RuntimeError("ReCtlr found no assignment inside the timeline although no type was wiped out")
    return res


def _to_run(res, cfg: TimelineConfig) -> TimelineRun:
    raw = res.tolist()  # the slots as Python ints, in one call
    times = res[_tk.R_USEFUL:_tk.R_LOST + 1] / _US  # the breakdown, as the float64 scalars of res[i] / _US
    b = dict(zip(_BREAKDOWN, times))
    # every Rep step computes N / n_sets layers (r when r divides N)
    mean_s = (cfg.replica_sets().compute_factor if cfg.strategy == "rep"
              else res[_tk.R_SUM_S] / max(res[_tk.R_STEPS_RUN], 1))
    return TimelineRun(res[_tk.R_TTT] / _US, "ok" if raw[_tk.R_STATUS] == _tk.STATUS_OK else "capped", b,
                       raw[_tk.R_FAILURES], raw[_tk.R_ABSORBED], raw[_tk.R_WIPEOUTS], raw[_tk.R_CHECKPOINTS],
                       raw[_tk.R_DETECTIONS], raw[_tk.R_STEPS_RUN], raw[_tk.R_STEPS_DONE], mean_s,
                       raw[_tk.R_PATCH_SHARDS], raw[_tk.R_LOOPS], raw[_tk.R_ARRIVALS], raw[_tk.R_CKPTS_LOST],
                       raw[_tk.R_REJOINS], raw[_tk.R_MEM_RESTARTS], raw[_tk.R_FALLBACKS], res[_tk.R_ASYNC_SLOW] / _US,
                       tuple(raw))


@functools.lru_cache(maxsize=64)
def _one_column(n_groups):
    """CKPT-only's holder table (group ``j`` holds type ``j``), the placeholder of the strategies without ReCtlr."""
    return _read_only(np.arange(n_groups, dtype=np.int64).reshape(n_groups, 1))


@functools.lru_cache(maxsize=64)
def _prepared(cfg: TimelineConfig):
    """The holder table and unit clocks of a config, built once per config rather than once per replication
    (failure-domain clocks take ~20 ms to build at 600k GPUs, several times a job's simulation). The kernel only
    reads them. A random SPARe layout is drawn per job instead (``None`` here); CKPT-only and Rep run without one
    (Rep on its replica sets)."""
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

    def __init__(self, cfg: TimelineConfig):
        self.holders, self.units = _prepared(cfg)
        self.live0 = _live_state(self.holders) if cfg.strategy == "spare" and self.holders is not None else None
        race = cfg.failures is not None and cfg.unit_race
        self.per_draw = 8 if cfg.failures is not None and not race else 16
        length = max(1, int(min(3.0 * cfg.t0_s / cfg.mtbf_s, 2.0 * cfg.cap_s / cfg.mtbf_s)))
        if cfg.failures is not None and not race:  # a lifetime per unit at the start
            length += self.units.uscale_us.size
        self.trace_length = length


@functools.lru_cache(maxsize=64)
def _job_plan(cfg: TimelineConfig) -> _JobPlan:
    """The :class:`_JobPlan` of a config, built once (one cache lookup per job instead of one per piece; a SPARe
    plan holds ~0.5 MB of ReCtlr state at N = 600, r = 8, ~1.4 MB at N = 1000, r = 20; 64 plans are kept)."""
    return _JobPlan(cfg)


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


#: The generator the kernel gets for a stream a job never draws from: the jitter when ``jitter_sd = 0``, the repair
#: times unless ``repair="lognormal"`` (the kernel draws them only then). It saves a job two seed derivations and two
#: generators (~0.05 ms, a twentieth of a SPARe job at 600k GPUs) and is never used, so it is as good as the job's
#: own streams.
_UNDRAWN = np.random.default_rng(0)


def _job_rngs(cfg: TimelineConfig, seed_seq: np.random.SeedSequence) -> tuple:
    """The jitter and repair generators of a job (children 1 and 3 of its seed), or :data:`_UNDRAWN` for a stream
    the config never draws from."""
    jitter = np.random.default_rng(job_seed(seed_seq, 1)) if cfg.jitter_sd != 0.0 else _UNDRAWN
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
    cached (:func:`_job_plan`, :func:`_kernel_params`; 64 configs each).
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
    trace_rng = np.random.default_rng(job_seed(seed_seq, 0))
    length = plan.trace_length
    _trace_memory_check(cfg, length, plan.per_draw)
    trace = make_trace(cfg, trace_rng, length)
    while True:
        jitter_rng, repair_rng = _job_rngs(cfg, seed_seq)  # fresh streams for every attempt
        res = _run_us(cfg, holders, *trace, jitter_rng=jitter_rng, units=units, repair_rng=repair_rng,
                      live0=plan.live0)
        if res[_tk.R_STATUS] != _tk.STATUS_TRACE:
            if trace[0].size > plan.trace_length:  # the next jobs of this config start with this length
                plan.trace_length = trace[0].size
            return _to_run(res, cfg)
        _trace_memory_check(cfg, 2 * trace[0].size, plan.per_draw, grown_from=trace[0].size)
        more = make_trace(cfg, trace_rng, trace[0].size)  # same generator: the trace is extended
        trace = tuple(np.concatenate([a, b]) for a, b in zip(trace, more))
        del more


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
    **{name: (f"time in '{name}' per run (s)", "nonnegative") for name in _BREAKDOWN},
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
        d["breakdown"] = {name: float(np.mean(self.values(name)) / cfg.t0_s) for name in _BREAKDOWN}
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
        ds = xr.Dataset(data, coords={"rep": np.arange(self.first_rep, self.first_rep + self.reps)})
        cfg = self.config.to_dict()
        for k, v in cfg.items():
            if v is None:
                continue
            ds.attrs[k] = int(v) if isinstance(v, bool) else json.dumps(v) if isinstance(v, dict) else v
        ds.attrs["config"] = json.dumps(cfg)
        ds.attrs["root_entropy"] = self.root_entropy
        return ds


def simulate_ttt(cfg: TimelineConfig, reps: int, *, rng=None, first_rep: int = 0, seed=_UNSET) -> TTTResult:
    """``reps`` independent jobs: replications ``first_rep .. first_rep + reps - 1``.

    Replication ``i`` draws its failure trace (and jitter) from ``SeedSequence(root.entropy, spawn_key=(n_groups,
    i))`` where ``root`` comes from ``rng`` (:func:`spare_mc._lib.seeding.root_seed_sequence`), whatever else is run:
    strategies, redundancies, checkpoint periods and options compared at one ``N`` and root see the same failure
    traces (common random numbers), and the same configuration gives the same numbers here, from ``spare-mc ttt``
    and in a sweep. ``seed`` is the deprecated alias of ``rng``.

    Examples
    --------
    >>> cfg = TimelineConfig("spare", 600, r=8, n_steps=500, jitter_sd=0.0)
    >>> res = simulate_ttt(cfg, 4, rng=1)
    >>> bool(res.estimate("ttt_over_t0").mean > 1.5)
    True
    """
    rng = resolve_seed_alias(rng, seed, "simulate_ttt")
    if not isinstance(cfg, TimelineConfig):
        raise UsageTypeError(f"`cfg` must be a TimelineConfig, got {type(cfg).__name__}")
    reps = as_int(reps, "reps", min_value=1)
    first_rep = as_int(first_rep, "first_rep", min_value=0)
    check_memory(reps * _RUN_BYTES, f"the results of {reps:,} time-to-train jobs (about {_RUN_BYTES} bytes each)",
                 "fewer replications")
    root = root_seed_sequence(rng)
    runs = tuple(run_timeline(cfg, trace_seed_sequence(root, cfg.n_groups, i))
                 for i in range(first_rep, first_rep + reps))
    return TTTResult(cfg, runs, root_text(root), first_rep)
