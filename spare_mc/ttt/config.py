"""The configuration of a time-to-train job: :class:`TimelineConfig`, its validation and its option tables.

Every option of the timeline is a field of :class:`TimelineConfig` with its meaning, unit and default
(:func:`_option`: the ``spare-mc ttt`` flags and the ``ttt`` sweep parameters derive from them); :func:`applicable`
keeps the options that affect a strategy. The validators (:func:`_timeline_config_iv` and its parts) refuse a value
out of range, an option where it has no effect, and a duration the kernel's integer-microsecond clock
(:data:`US_PER_S`) cannot hold. Also here: the choice tables of the options (:data:`RESTART_FAILURES`,
:data:`REPAIRS`, ...; the strategies are :mod:`spare_mc.model.strategies`'s, the layouts
:data:`spare_mc.model.kinds.SPARE_LAYOUTS`), the paper's all-reduce default (:func:`paper_allreduce_s`), the unit
clocks a unit-clock failure model gives the kernel (:class:`UnitClocks`) and the layouts a config builds (cached).

The model the fields configure is specified in :mod:`spare_mc.ttt.run`, which runs the jobs; the default checkpoint
period is :func:`spare_mc.ttt.period.theory_ckpt_period_s`.
"""

from __future__ import annotations

import functools
from dataclasses import MISSING, dataclass, field, fields
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from .._kernels import timeline as _tk
from .._lib.validation import UsageTypeError, UsageValueError, as_bool, as_choice, as_float, as_int
from ..model.failures import DomainFailures, PerGPU, check_shape, failure_model_from_dict, system_mtbf_s, weibull_scale
from ..model.kinds import SPARE_LAYOUTS
from ..model.layouts import Layout, ReplicaSets, block, cyclic, random_holders, sidon
from ..model.paper import paper_setting
from ..model.placement import domain_aware, domain_aware_replica_sets
from ..model.strategies import LAYOUT_STRATEGIES, REDUNDANT_STRATEGIES, STRATEGIES, STRATEGY_TABLE
from ..model.topology import Topology
from .period import theory_ckpt_period_s

__all__ = ["TimelineConfig", "paper_allreduce_s"]

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
#: Microseconds per second: the kernel's clock counts integer microseconds.
US_PER_S = 1_000_000


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
                          strategies=LAYOUT_STRATEGIES)
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
                              strategies=REDUNDANT_STRATEGIES)
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
                                          "wipe-outs)", strategies=REDUNDANT_STRATEGIES)
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
                          strategies=REDUNDANT_STRATEGIES)
    repair_s: float = _option(3600.0, "mean repair time of a failed group (s), with repair != none",
                              strategies=REDUNDANT_STRATEGIES)
    repair_sd: float = _option(0.5, "standard deviation of the log of a lognormal repair time, with "
                                    "repair='lognormal'", strategies=REDUNDANT_STRATEGIES)
    rejoin: str = _option("step", "when a repaired group rejoins: at the next step boundary (step) or at the end of "
                                  "the next checkpoint (checkpoint)", strategies=REDUNDANT_STRATEGIES)
    rejoin_s: float = _option(10.0, "pause of the job when repaired groups rejoin (state transfer to them and the "
                                    "communicator rebuild; SPARe also re-runs ReCtlr), booked with ReCtlr/shrink (s)",
                              strategies=REDUNDANT_STRATEGIES)
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
                                        "docs/domains.md)", strategies=REDUNDANT_STRATEGIES)
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
    def draws_jitter(self) -> bool:
        """Whether a job draws duration jitter (``jitter_sd != 0``): the one test the kernel's parameters
        (``PF_JITTER_SD`` is 0 otherwise), the job's jitter generator (a placeholder that must not move otherwise)
        and the SimPy twin all follow."""
        return self.jitter_sd != 0.0

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
            scales += [per_gpu.group_scale(topo) * US_PER_S] * n_gu
        ptr, groups = np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)
        class_ends = [n_gu]
        if per_gpu is not f:  # one unit per failure domain of every level of the model
            ptr, groups, level_ptr = topo.domain_units(f.level_names)
            for (_, mtbf_s), n_dom in zip(f.levels, np.diff(level_ptr)):
                scales += [weibull_scale(mtbf_s, f.shape) * US_PER_S] * int(n_dom)
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
        return round(Fraction(self.n_groups * round(self.compute_s * US_PER_S), self.replica_sets().n_sets))

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
    if not STRATEGY_TABLE[s].takes_r and r != 1:
        raise UsageValueError(f"`r` must be 1 for strategy {s!r} (no redundancy), got r={r}")
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
    out["shape"] = check_shape(cfg.shape)
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
    cap_us = out["max_wall_factor"] * out["n_steps"] * (out["compute_s"] + allreduce) * US_PER_S
    limit, what = (WALL_LIMIT_US, "cap") if out["failures"] is not None else (OPERATIONAL_LIMIT / n, "N x cap")
    if cap_us > limit:
        raise UsageValueError(
            f"the wall-clock cap max_wall_factor x T0 = {cap_us / US_PER_S:.4g} s is beyond the integer-microsecond clock "
            f"({what} must stay below {limit * (n if what != 'cap' else 1):.3g} microseconds): lower "
            f"`max_wall_factor`, `n_steps` or the step time")
    return out


@functools.lru_cache(maxsize=64)
def _replica_sets(n_groups, r):
    return ReplicaSets(n_groups, r)


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
