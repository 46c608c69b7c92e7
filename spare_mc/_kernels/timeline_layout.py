"""The timeline kernel's data layout (private): its codes, the slots of its packed arrays and its records.

The kernel is :mod:`spare_mc._kernels.timeline` (the model: :mod:`spare_mc.ttt.timeline`). Every slot below is laid
out from the list of its names by :func:`spare_mc._kernels.slots.define` (sizes and offsets counted, never typed; an
import-time check that the slots of each array tile it); the kernel modules import the names they use.

Arrays (int64 unless said)
--------------------------
``P``, the parameters (``N_P`` slots, filled by the caller, read only):

- ``P_STRATEGY``: ``STRAT_CKPT``, ``STRAT_REP`` or ``STRAT_SPARE``;
- ``P_N_GROUPS``, ``P_R``: ``N`` and ``r`` (SPARe's ``holders`` is ``N x r``); ``P_N_STEPS``: the steps of the job;
- the nominal durations ``P_COMP_US`` (one stack layer), ``P_AR_US`` (all-reduce), ``P_RESTART_US``,
  ``P_SAVE_US`` (a checkpoint), ``P_PERIOD_US`` (the checkpoint period ``T_c``), ``P_SHRINK_US``, ``P_RECTLR_US``;
- ``P_CAP_US``: the wall-clock cap (no step starts once the clock has passed it);
- the failure source: ``P_SOURCE`` (``SRC_SYSTEM``, ``SRC_UNITS`` or ``SRC_LOG``), ``P_LIVE_SCALING`` (0/1, system
  source), ``P_KEEP_AGES`` (0/1, unit clocks: keep ages instead of renewing them at a restart), ``P_N_GROUP_UNITS``
  (unit clocks: 0, or ``N`` if units ``0 .. N-1`` are the groups), ``P_N_UNITS``, ``P_UNIT_RACE`` (0/1: the race)
  and the ``N_CLASSES`` slots from ``P_CLASS_END`` (the end of each of the race's classes; unit clocks);
- Rep: ``P_REP_COMP_US`` (the nominal step compute ``round(N T_comp / n_sets)``) and ``P_REP_LAYERS`` (``r`` when
  that is ``r T_comp`` exactly, else 0);
- the options (docs/model.md section 8; defaults 0 = the model without them): ``P_REP_COST`` (``REP_SHRINK``,
  ``REP_REDO_STEP``, ``REP_RESYNC``) and ``P_RESYNC_US``, ``P_MASKED_DETECT_US``, ``P_PATCH_COST``
  (``PATCH_PER_SHARD``, ``PATCH_NONE``, ``PATCH_WHOLE_STEP``), ``P_STAY_DEAD`` (0/1: failures during a restart kill
  groups that stay dead), ``P_CKPT_EVERY`` (``k``: a checkpoint every ``k`` steps; ``HORIZON_US`` = never, and then
  ``P_PERIOD_US`` is the time rule; by steps the caller sets ``P_PERIOD_US = HORIZON_US``), ``P_CKPT_LOST`` (0/1: a
  failure during a save makes it unusable), ``P_DETECT_IMMEDIATE`` (0/1, CKPT-only: a failure stops the step or save
  in progress when it arrives and wipes out), ``P_RESTART_AGAIN`` (0/1: a failure during a restart starts it again),
  ``P_FINAL_CKPT`` (0/1: a checkpoint after the last step too). The last three are the classical model's rules.
  ``P_CKPT_POLICY`` (``POLICY_*``: periodic, or a dynamic period from the wipe-out hazard, with the constants
  ``PF_HAZARD_*``); ``P_REPAIR`` (``REPAIR_*``), ``P_REPAIR_US``, ``P_REJOIN_CKPT``, ``P_REJOIN_US``
  (repair of failed groups without a global restart; lognormal with ``PF_REPAIR_MU``, ``PF_REPAIR_SIGMA``, drawn
  from the kernel's second generator ``rrng``). Checkpointing as practised today (docs/model.md section 6.6a):
  ``P_LOAD_US`` (loading from remote storage, added to ``P_RESTART_US`` at a restart), ``P_MEM_COPIES`` (``m``
  groups keep each checkpoint in memory, ``GB_MEMCOPY``), ``P_REMOTE_EVERY``, ``P_MEM_SAVE_US``, ``P_MEM_LOAD_US``,
  ``P_ASYNC`` (remote saves in the background, compute slowed by ``PF_ASYNC_F``).
- ``P_NO_CYCLES`` (0/1): 1 runs every failure-free checkpoint cycle as one iteration of the job loop instead of
  many at once (:func:`spare_mc._kernels.job_steps.ckpt_cycles`): the same numbers, the reference its tests compare
  with.

``PF``, the float parameters (``N_PF``, float64): ``PF_JITTER_SD``, the standard deviation of the multiplicative
jitter (0: no duration is drawn); the dynamic policies' constants ``PF_HAZARD_*``; the lognormal repair's; the race's
``PF_INV_K`` and rates (``PF_RATE``, ``N_CLASSES`` slots); the asynchronous saves' ``PF_ASYNC_F``, ``PF_ASYNC_G``.

``J``, the job (``N_J``): ``J_T`` (the wall clock), ``J_STEPS_DONE`` (progress), ``J_CKPT_STEPS`` (the progress the
last usable checkpoint saved), ``J_CKPT_DUE`` (the wall time from which a checkpoint is due after a step: ``T_c``
after the end of the last checkpoint or restart), ``J_CKPT_DUE_STEP`` (the progress from which one is due: ``k``
steps after it), ``J_S`` (compute layers per step: ReCtlr's ``S`` for SPARe, ``r`` for Rep, 1 for CKPT-only),
``J_C_NOM`` (a step's nominal compute: ``S T_comp``, Rep's ``P_REP_COMP_US``), ``J_STATUS`` (``STATUS_*``);
``J_REMOTE_STEPS`` (the progress the last remote checkpoint saved; ``J_CKPT_STEPS`` is the last checkpoint of any
kind), ``J_PERSIST_END`` / ``J_PERSIST_STEPS`` (an asynchronous save in flight: when it completes and the progress it
saves; -1 when none), ``J_SINCE_REMOTE`` (memory-only checkpoints since the last remote one), ``J_RESTART_BASE`` (the
nominal length of the restart in progress: ``P_RESTART_US`` plus the load); ``J_DYN_*``, a lower bound of the dynamic
period (:func:`spare_mc._kernels.timeline_helpers.dynamic_due`): ``J_DYN_LB``, valid from the wall time ``J_DYN_T``
(-1: none) while the last failure's time, ``J_N_CRIT`` and ``J_N_KNOWN`` are ``J_DYN_TLAST``, ``J_DYN_CRIT`` and
``J_DYN_KNOWN``.

``W``, the work (``N_W_BLOCKS``): three blocks of ``N_W`` slots ``W_USEFUL, W_REDUNDANT, W_PATCH, W_ALLREDUCE,
W_RECTLR``, aligned with the results (``R_USEFUL + W_x == R_x``, checked below). The block at ``W_SINCE`` holds the
work since the last checkpoint: kept at a checkpoint (or the end), lost at a wipe-out; ``W_MEM`` the work kept by
in-memory checkpoints only (lost at a remote fallback); ``W_PERSIST`` the work to be kept when the asynchronous save
in flight completes.

``res`` (``N_RES``): the ``R_*`` results (times in microseconds); ``res[R_STATUS]`` is one of ``STATUS_*``;
``res[R_CKPTS_LOST]`` counts the checkpoints a failure made unusable (they count in ``R_CHECKPOINTS`` too).

The failure source's state: ``Q`` (``N_Q``): ``Q_N_UP`` (live groups), ``Q_N_PEND`` (dead groups not detected yet),
``Q_IA`` (arrivals consumed), ``Q_REM`` (operational units left until the next arrival, counted from the wall time
``Q_T_REF``), ``Q_IL`` (lifetimes drawn), ...; ``Q_M + c``: the race's active units of class ``c``; ``Q_M_FROM +
c``: those counts when a restart under ``P_STAY_DEAD`` started. ``GB`` (``N_GB x max(N + 1, 2 ceil(N / 64) +
1)``), rows ``GB_LIVE`` (the live groups as a bitset with a Fenwick tree of its words' counts, for the system
source's rank select: :mod:`spare_mc._kernels.live_set`), ``GB_UP`` (1 = live), ``GB_PEND`` (the pending dead groups
``GB[GB_PEND, :Q[Q_N_PEND]]`` in the order they died), ``GB_MEMCOPY`` (1 = holds the in-memory checkpoint) and
``GB_COPIES`` (its first ``P_MEM_COPIES`` slots: the groups the last placement chose, every group with
``GB_MEMCOPY != 0`` among them), ... ``next_t``: each unit's failure time (unit clocks).
``UB`` (rows of ``N_UB x 2 S``, ``S`` the least power of two >= the number of units; for the race, which has no tree,
``N_UB x`` the number of units): the tournament tree over ``next_t`` (1-based, leaves at ``S + u``), and the race's
units by class (active first) with each unit's position. ``UF`` (float64): the race's clock sigma at the last arrival
and at the next one, ``1 / k`` and the rate of a unit of each class (``UF_RATE + c``).

Records
-------
The arrays travel in a few records (``typing.NamedTuple``; numba types each as a tuple of its fields, caches it like
any argument, and passes it to a compiled callee field by field, as it passed the arrays one by one):

- :class:`Trace`, the failure source's input (built by the caller);
- :class:`Tables`, the strategy's tables (built by the caller);
- :class:`Source`, the failure source: its state and its input;
- :class:`Job`, the job's state ``J``, its work ``W`` and its results ``res``;
- :class:`Redundancy`, SPARe's ReCtlr state and the fully live state a restart returns to, Rep's replica sets.

A record crosses from Python into the kernel as the plain tuple of its fields: numba's dispatcher types a plain
tuple of arrays in C and a NamedTuple in Python, about 3 us more per NamedTuple and call (1% of a Rep job).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .cache import drop_if_dependencies_changed
from .rectlr_layout import Saved, State
from .slots import define

# no kernels here (the kernel modules that read these slots name this file and slots.py); named as every kernel
# module names the modules it imports
drop_if_dependencies_changed(__file__, ("rectlr_layout.py", "slots.py"))

# ------------------------------------------------------------------------------------------------------ codes
#: ``P[P_STRATEGY]``
STRAT_CKPT, STRAT_REP, STRAT_SPARE = 0, 1, 2
#: ``P[P_SOURCE]``: a system-level renewal trace, unit clocks (per-GPU lifetimes, failure domains), a failure log
SRC_SYSTEM, SRC_UNITS, SRC_LOG = 0, 1, 2
#: ``res[R_STATUS]``: finished, stopped at the wall-clock cap, ran out of failure trace (extend it and rerun)
STATUS_OK, STATUS_CAPPED, STATUS_TRACE = 0, 1, 2
#: ``P[P_REPAIR]``: failed groups are not repaired (they come back at the next global restart), or repaired after a
#: fixed or a lognormal time and brought back without a restart, or (log replay) back when the log says (``GB_BACK``)
REPAIR_NONE, REPAIR_FIXED, REPAIR_LOGNORMAL, REPAIR_LOG = 0, 1, 2, 3
#: ``P[P_CKPT_POLICY]``: when a checkpoint is due
POLICY_PERIODIC, POLICY_HAZARD, POLICY_YOUNG_HAZARD = 0, 1, 2
#: ``P[P_REP_COST]``: what a masked failure costs Rep (besides ``P_MASKED_DETECT_US``)
REP_SHRINK, REP_REDO_STEP, REP_RESYNC = 0, 1, 2
#: ``P[P_PATCH_COST]``: SPARe's patch compute at a masked detection
PATCH_PER_SHARD, PATCH_NONE, PATCH_WHOLE_STEP = 0, 1, 2

#: the race's classes of units (``P_UNIT_RACE``): the group units, then the domain units of each level of the model
#: (at most four: node, rack, power, pod); class ``c`` is the units ``[P[P_CLASS_END + c - 1], P[P_CLASS_END + c])``
#: (from 0 for ``c = 0``), the classes a model does not use are empty
N_CLASSES = 5

# ------------------------------------------------------------------------------------------------------ slots
#: the results
RES_SLOTS = define(globals(), "N_RES",
                   "R_TTT R_USEFUL R_REDUNDANT R_PATCH R_ALLREDUCE R_RECTLR R_CKPT R_RESTART R_LOST R_FAILURES "
                   "R_ABSORBED R_WIPEOUTS R_CHECKPOINTS R_DETECTIONS R_STEPS_RUN R_SUM_S R_STATUS R_STEPS_DONE "
                   "R_LOOPS R_ARRIVALS R_PATCH_SHARDS R_S_MAX R_CKPTS_LOST R_REJOINS R_MEM_RESTARTS R_FALLBACKS "
                   "R_ASYNC_SLOW")
#: the parameters
define(globals(), "N_P",
       "P_STRATEGY P_N_GROUPS P_R P_N_STEPS P_COMP_US P_AR_US P_RESTART_US P_SAVE_US P_PERIOD_US P_SHRINK_US "
       "P_RECTLR_US P_CAP_US P_SOURCE P_LIVE_SCALING P_KEEP_AGES P_N_GROUP_UNITS P_REP_COMP_US P_REP_COST "
       "P_RESYNC_US P_MASKED_DETECT_US P_PATCH_COST P_STAY_DEAD P_CKPT_EVERY P_CKPT_LOST P_REP_LAYERS "
       "P_DETECT_IMMEDIATE P_RESTART_AGAIN P_FINAL_CKPT P_CKPT_POLICY P_REPAIR P_REPAIR_US P_REJOIN_CKPT "
       "P_REJOIN_US P_UNIT_RACE P_N_UNITS P_MEM_COPIES P_REMOTE_EVERY P_MEM_SAVE_US P_MEM_LOAD_US P_LOAD_US P_ASYNC "
       "P_NO_CYCLES",
       ("P_CLASS_END", N_CLASSES))
#: the float parameters: the jitter; the dynamic policies' constants (the system process's Weibull scale in wall
#: seconds for the full system, ``lambda = m / Gamma(1 + 1/k)``, its shape, the period factor, and ``T_s`` and
#: ``T_r`` in seconds as the policy's formula takes them -- not durations the kernel spends); the lognormal repair's
#: ``mu`` and ``sigma`` (log-seconds); the race of renewed unit clocks (``P_UNIT_RACE``): ``1 / k``; asynchronous
#: saves (``P_ASYNC``): the slowdown factor ``f`` of compute while a save runs, and ``(f - 1) / f``; from
#: ``PF_RATE``, the race's hazard rate of a unit of each class in the clock ``sigma = (t - t0)^k`` (``scale^-k``,
#: microseconds^-k)
define(globals(), "N_PF",
       "PF_JITTER_SD PF_HAZARD_LAM_S PF_HAZARD_SHAPE PF_HAZARD_FACTOR PF_HAZARD_SAVE_S PF_HAZARD_RESTART_S "
       "PF_REPAIR_MU PF_REPAIR_SIGMA PF_INV_K PF_ASYNC_F PF_ASYNC_G",
       ("PF_RATE", N_CLASSES))
#: the job
define(globals(), "N_J",
       "J_T J_STEPS_DONE J_CKPT_STEPS J_CKPT_DUE J_S J_STATUS J_CKPT_DUE_STEP J_C_NOM J_LAST_CK J_N_KNOWN J_N_CRIT "
       "J_NEXT_READY J_REMOTE_STEPS J_PERSIST_END J_PERSIST_STEPS J_SINCE_REMOTE J_RESTART_BASE "
       "J_DYN_T J_DYN_LB J_DYN_TLAST J_DYN_CRIT J_DYN_KNOWN")
#: the work: a block's slots, aligned with ``res[R_USEFUL .. R_RECTLR]``, and ``W``'s three blocks
WORK_SLOTS = define(globals(), "N_W", "W_USEFUL W_REDUNDANT W_PATCH W_ALLREDUCE W_RECTLR")
_BLOCK = len(WORK_SLOTS)  # N_W (one slot per name)
define(globals(), "N_W_BLOCKS", ("W_SINCE", _BLOCK), ("W_MEM", _BLOCK), ("W_PERSIST", _BLOCK))
if [RES_SLOTS["R_USEFUL"] + w for w in WORK_SLOTS.values()] != [RES_SLOTS[f"R_{name[2:]}"] for name in WORK_SLOTS]:
    raise ValueError("the work slots must be aligned with res[R_USEFUL .. R_RECTLR]")  # pragma: no cover
#: the failure source: its scalars, the race's active units of each class (``Q_M + c``) and those counts when a
#: restart under ``P_STAY_DEAD`` started (``Q_M_FROM + c``)
define(globals(), "N_Q", "Q_N_UP Q_N_PEND Q_IA Q_REM Q_T_REF Q_IL Q_T_LAST Q_T0 Q_T_NEXT Q_N_OFF",
       ("Q_M", N_CLASSES), ("Q_M_FROM", N_CLASSES))
#: the rows of its group block
define(globals(), "N_GB", "GB_LIVE GB_UP GB_PEND GB_CRIT GB_TCRIT GB_READY GB_LIST GB_MEMCOPY GB_BACK GB_COPIES")
#: the rows of the unit clocks' block, and the race's float state (see above)
define(globals(), "N_UB", "UB_TOUR UB_PERM UB_POS UB_TMP")
define(globals(), "N_UF", "UF_SIGMA UF_SIGMA_NEXT UF_INV_K", ("UF_RATE", N_CLASSES))

# ------------------------------------------------------------------------------------------------------ times
#: the longest gap (group-microseconds) or lifetime (microseconds): beyond it, a failure never happens (see "The
#: horizon" in :mod:`spare_mc._kernels.timeline`)
HORIZON_US = np.int64(1) << 61
HORIZON_F = float(HORIZON_US)
#: the time of a failure that never comes (an inactive unit, no arrival)
NEVER = np.int64(1) << 62
#: a unit that fired before a restart under ``P_STAY_DEAD``: inactive through it (above ``NEVER``, so never the
#: earliest), redrawn at its end
PARKED = NEVER + 1
#: ``GB_READY`` of a group known dead that no repair brings back (``REPAIR_LOG``, a log event without a repair
#: time): never ready, but still dead when ReCtlr is rebuilt at a rejoin (``NEVER`` there means "not dead")
DEAD_KEPT = NEVER - 1
I64_MAX = np.int64(np.iinfo(np.int64).max)
#: ``src_next_time`` when the system trace ran out
TRACE_OUT = np.int64(-1)


# ---------------------------------------------------------------------------------------------------- records
class Trace(NamedTuple):
    """The failure source's input, read only (the arrays a source does not use are empty)."""

    #: int64: the system trace's inter-arrivals in group-microseconds, or a log's event times
    gaps: np.ndarray
    #: int64: the victim draws in ``[0, 2^32)`` (system trace, the race), or a log's repair times (``REPAIR_LOG``)
    victims: np.ndarray
    #: float64: each unit's Weibull scale in microseconds (unit clocks)
    uscale: np.ndarray
    #: float64: standard Weibull lifetimes, or the race's standard exponentials (unit clocks)
    life: np.ndarray
    #: int64: domain ``d`` (log event ``e``) touches the groups ``dgroups[dptr[d]:dptr[d + 1]]``
    dptr: np.ndarray
    dgroups: np.ndarray


class Tables(NamedTuple):
    """The strategy's tables, read only."""

    #: SPARe's holder table (``N x r``; the others read only its shape)
    holders: np.ndarray
    #: SPARe's fully live ReCtlr state on it (``live_state``), or blocks with no columns (none: SPARe fails)
    live0: State
    #: Rep: the replica set of each group, the members of each set (empty otherwise)
    gset: np.ndarray
    ssize: np.ndarray


class Source(NamedTuple):
    """The failure source: its state (``Q``, ``GB``, ``next_t``, ``UB``, ``UF``) and its input (the fields of
    :class:`Trace`)."""

    Q: np.ndarray
    GB: np.ndarray
    next_t: np.ndarray
    UB: np.ndarray
    UF: np.ndarray
    gaps: np.ndarray
    victims: np.ndarray
    uscale: np.ndarray
    life: np.ndarray
    dptr: np.ndarray
    dgroups: np.ndarray


class Job(NamedTuple):
    """The job: its state ``J``, its work ``W`` and its results ``res``."""

    J: np.ndarray
    W: np.ndarray
    res: np.ndarray


class Redundancy(NamedTuple):
    """The redundancy state: SPARe's ReCtlr state ``st`` (empty blocks for the others) and the fully live state
    ``saved`` a restart returns to; Rep's replica sets (:class:`Tables`) and the live members of each, ``slive``
    (back to ``ssize`` at a restart). CKPT-only has none."""

    st: State
    saved: Saved
    gset: np.ndarray
    ssize: np.ndarray
    slive: np.ndarray
    #: ReCtlr's step and reset (``rectlr.rectlr_step``, ``rectlr.reset_state``) as first-class functions, from
    #: :func:`spare_mc._kernels.rectlr_calls.calls` (stand-ins, never called, for the other strategies)
    step: object
    reset: object


#: the layout's names: codes, slots, sizes, times and records (the kernel's module re-exports them, and its callers
#: read them there: ``spare_mc._kernels.timeline.R_TTT``)
__all__ = sorted(name for name, value in globals().items() if name[:1].isupper()
                 and (value.__module__ == __name__ if isinstance(value, type) else not callable(value)))
