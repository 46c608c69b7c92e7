"""The SimPy twin of the job timeline: :func:`timeline_simpy`, an independent implementation of the time-to-train
model of :mod:`spare_mc.ttt.run` on a SimPy clock, and :class:`SimpyTimeline`, the one job it runs (the state
both processes share, one method per process, event and phase). simpy is imported when a job is built.

Its failure clocks are in :mod:`spare_mc.testing.timeline_clocks`; the duration jitter is drawn in one place,
:meth:`SimpyTimeline.jittered`.
"""

from __future__ import annotations

import bisect
import math
import types
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from .._kernels.timeline_layout import HORIZON_US
from ..mc.reorder import ReCtlr
from ..model.layouts import ReplicaSets
from .timeline_clocks import Renewal, UnitClocks, UnitRace, timeline_unit_clocks

__all__ = ["SimpyTimeline", "timeline_simpy"]

#: Microseconds per second: the twin's clock counts integer microseconds.
_US = 1_000_000
#: What a phase of the trainer returns when the run is over (the cap, the trace ran out, the last restart) ...
_STOP = "stop"
#: ... and when a wipe-out restarted the job (the next step starts from the restored checkpoint).
_WIPED = "wiped"


@dataclass
class _Fleet:
    """The groups as both processes of the twin see them."""

    up: list                                      # live groups in increasing order (a victim draw indexes it)
    dead: set = field(default_factory=set)
    pending: list = field(default_factory=list)   # died since the last all-reduce
    kill_times: list = field(default_factory=list)
    restarting: bool = False
    restart_end: int = 0                          # the end of the restart in progress
    restart_hit: object = None                    # restart_again: the event a failure during the restart fires
    kill_event: object = None                     # immediate detection: the event a kill fires
    arrivals: list = field(default_factory=list)  # wall times of every system-level arrival (the renewal clock)
    rejoin_at: int | None = None                  # repaired groups rejoin at this wall time (announced ahead)
    trace_out: bool = False



def _move_work(dst: dict, src: dict) -> None:
    """Add the work totals of ``src`` to ``dst`` (by key) and empty ``src``: work kept, or moved between the blocks
    of :func:`timeline_simpy` (since the last checkpoint, kept in memory only, in a save in flight)."""
    for key, v in src.items():
        dst[key] += v
        src[key] = 0


def timeline_simpy(cfg, trace, *, jitter_rng=None, layout=None, repair_rng=None, log=None, record=None) -> dict:
    """Independent SimPy implementation of the time-to-train model of :mod:`spare_mc.ttt.run`.

    Written from the model's text, not from the kernel: a failure process and a trainer process on a SimPy clock in
    integer microseconds, stepping through every step (no skipping), Rep wipe-outs decided by
    :meth:`ReplicaSets.is_wiped` on the dead set, SPARe by the :class:`spare_mc.ReCtlr` controller, unit clocks derived
    by :func:`timeline_unit_clocks`; gaps and lifetimes are clamped at the model's horizon of ``2^61`` (Python
    integers: nothing overflows). ``trace = (gaps, victims)`` or ``(life,)`` as in
    :func:`spare_mc.ttt.run.make_trace`; ``jitter_rng`` draws the duration jitter (needed when
    ``cfg.jitter_sd > 0``; it is drawn in :meth:`SimpyTimeline.jittered` only); ``layout`` is the job's holder
    table when it is drawn per job (``cfg.layout == "random"``). Returns the microsecond totals: ``ttt, useful,
    redundant, patch, allreduce, rectlr_shrink, checkpoint, restart, lost, failures, absorbed, wipeouts,
    checkpoints, checkpoints_lost, detections, steps_run, steps_done, status``.

    Notes
    -----
    The options, as their text states them:

    - ``rep_masked_cost``: a masked Rep detection costs the shrink; plus ``rep_resync_s`` ("resync"); or plus a
      fresh step compute in the patch time ("redo_step"). ``masked_detect_s`` is added at every masked detection of
      Rep and SPARe. ``patch_cost``: SPARe's patch is ``patch x T_comp``, nothing, or ``S* x T_comp``.
    - ``restart_failures="stay_dead"``: the restart brings back the groups dead when it begins; failures during it
      kill live groups as at any other time, and those stay dead (and undetected) when the job resumes. Unit clocks:
      units that had fired before the restart are idle through it and get new lifetimes at its end; units that fire
      (or whose group dies) during it stay idle until the next restart; the others are renewed at the end ("renew")
      or keep their clocks ("keep").
    - ``ckpt_every_steps = k``: a checkpoint when ``k`` steps were done since the last checkpoint or restart.
    - ``ckpt_failure="lost"``: a checkpoint during whose save ``[start, end)`` a group was killed is not usable.
    - ``restart_failures="restart_again"``: a failure during a restart (absorbed: it kills nothing) starts it again
      from its arrival, with a fresh restart time; the restart ends when one runs without a failure.
    - ``detection="immediate"`` (CKPT-only): a phase (a step's compute and all-reduce, or a save) during which a
      group is killed, or at whose start one is dead, stops at that kill and the job wipes out then: the time the
      step ran is lost, the time the save ran is checkpoint time and the checkpoint counts as lost. A kill at the
      exact end of a phase hits the next one, at its start.
    - ``final_checkpoint``: a checkpoint after the last step too; the job ends when it completes.
    - ``ckpt_policy`` "hazard" / "young_hazard": at every step boundary, from scratch: the known dead groups (those
      detected since the last restart), the known live groups whose failure would wipe out given them (all for
      CKPT-only; ``ReplicaSets.is_wiped`` for Rep; a type whose every other holder is known dead for SPARe), the
      wall time since the last system-level arrival strictly before now (or since 0), the Weibull hazard there,
      and the period's formula; due when the time since the last checkpoint or restart reaches it.
    - ``repair``: a group found dead at a masked detection is ready ``repair_s`` later (or
      ``exp(mu + sigma Z)`` seconds, ``Z`` from ``repair_rng``, in the order the groups died); at the first step
      boundary (or end of a save, ``rejoin="checkpoint"``) at or after that, while steps remain, every ready group is
      live again, SPARe's controller is rebuilt from scratch on the groups still dead, and the job pauses
      ``rejoin_s``. A failure at that very instant hits the system after the rejoin. A global restart cancels the
      repairs in progress.
    - Rep runs on :class:`spare_mc.model.layouts.ReplicaSets`: a step computes ``round(N T_comp / n_sets)``, one layer's
      worth ``c T_comp / that`` (rounded down) is useful, and the per-replica all-reduce is ``N / n_sets`` times
      ``T_a``.
    """
    return SimpyTimeline(cfg, trace, jitter_rng=jitter_rng, layout=layout, repair_rng=repair_rng, log=log,
                         record=record).run()


class SimpyTimeline:
    """One job of :func:`timeline_simpy` (same arguments): the state its failure process and its trainer process
    share, one method per process, event and phase of the model. :meth:`run` simulates the job once and returns the
    microsecond totals.

    The failure process is one of :meth:`log_failures` (a failure log), :meth:`renewal_failures` (the system-level
    renewal process), :meth:`unit_failures` (unit clocks, one lifetime per unit) and :meth:`race_failures` (unit
    clocks sampled as a race); the trainer (:meth:`trainer`) runs steps (:meth:`immediate_step`,
    :meth:`detected_step`), books them (:meth:`book_step`), checkpoints (:meth:`checkpoint_if_due`,
    :meth:`blocking_checkpoint`, :meth:`tiered_checkpoint`), wipes out and restarts (:meth:`wipe_out`) and lets
    repaired groups rejoin (:meth:`rejoin`).
    """

    def __init__(self, cfg, trace, *, jitter_rng=None, layout=None, repair_rng=None, log=None, record=None):
        import simpy

        self.simpy = simpy
        self.cfg, self.trace, self.jitter_rng, self.repair_rng, self.record = cfg, trace, jitter_rng, repair_rng, record
        self.horizon = horizon = int(HORIZON_US)  # a longer gap or lifetime is clamped to it: it never ends in a job
        self.n = n = cfg.n_groups
        self.sets = sets = (None if cfg.strategy != "rep" else
                            ReplicaSets(n, cfg.r) if not cfg.domain_aware else cfg.replica_sets())  # placed sets
        if layout is None and cfg.strategy != "rep":
            layout = cfg.layout_object()
        self.layout = layout
        self.stay_dead = cfg.restart_failures == "stay_dead"
        self.again = cfg.restart_failures == "restart_again"
        self.immediate = cfg.detection == "immediate"
        # from the options' text: the restart time grows as (N / N_ref)^0, ^1 or ^2; Rep all-reduces once per
        # replica (N / n_sets times a step) when asked
        power = {"constant": 0, "linear": 1, "quadratic": 2}[cfg.restart_growth]
        self.restart_seconds = cfg.restart_s * (n / cfg.restart_ref_groups) ** power
        per_replica = cfg.strategy == "rep" and cfg.rep_allreduce == "per_replica"
        allreduce_seconds = cfg.allreduce * (n / sets.n_sets if per_replica else 1)

        self.env = simpy.Environment()
        self.fleet = fleet = _Fleet(list(range(n)))
        fleet.copies = set()  # the groups holding a copy of the last checkpoint in their memory
        self.copies = cfg.memory_copies
        self.tiered = self.copies > 0 or cfg.ckpt_async
        self.tot = dict.fromkeys(("useful", "redundant", "patch", "allreduce", "rectlr_shrink", "checkpoint",
                                  "restart", "lost", "failures", "absorbed", "wipeouts", "checkpoints",
                                  "checkpoints_lost", "detections", "steps_run", "rejoins", "memory_restarts",
                                  "remote_fallbacks", "async_slowdown"), 0)
        self.repairing = cfg.repair != "none"
        self.ready = {}  # group -> wall time its repair is done (inf: known dead, back only at a global restart)
        self.log_back = {}  # repair="log": group -> when the log's units that killed it are all back (inf: unknown)

        self.units = self.race = self.clock = None
        if log is not None:  # a failure log: event e at times[e] touches groups[ptr[e]:ptr[e + 1]]
            self.log_events = tuple([int(x) for x in a] for a in log[:3])
            # repair="log": event e's unit is back at times[e] + repair[e] (never if unknown, -1)
            self.log_repair = [math.inf if x < 0 else int(x) for x in log[3]] if cfg.repair == "log" else None
            self.failure_process = self.log_failures
        elif cfg.failures is None:
            self.clock = clock = Renewal([min(int(x), horizon) for x in trace[0]], [int(x) for x in trace[1]])
            clock.a = clock.gaps[0] if clock.gaps else None
            self.failure_process = self.renewal_failures
        else:
            self.units = units = UnitClocks(*timeline_unit_clocks(cfg), [float(x) for x in trace[0]])
            units.next = [None] * len(units.scales)
            if cfg.unit_race:  # a unit of scale lam has hazard rate lam^-k in the clock sigma = (t - t0)^k
                k = cfg.failures.shape
                self.race = UnitRace(units.classes, units.life, [int(x) for x in trace[1]],
                                     [units.scales[a] ** -k if b > a else 0.0 for a, b in units.classes], 1.0 / k,
                                     horizon)
            if self.race is None:
                self.redraw(0, lambda u: True)
                self.failure_process = self.unit_failures
            else:
                self.race.renew(0)
                self.failure_process = self.race_failures

        self.comp, self.ar = round(cfg.compute_s * _US), round(allreduce_seconds * _US)
        # a Rep step computes N / n_sets layers (each member of a set computes the set's shard)
        self.rep_step = round(Fraction(n * self.comp, sets.n_sets)) if sets is not None else None
        self.period, self.cap = round(cfg.ckpt_period * _US), round(cfg.max_wall_factor * cfg.t0_s * _US)
        self.every = cfg.ckpt_every_steps
        self.policy = cfg.ckpt_policy
        self.result = {"status": "ok"}
        self.fail_proc = self.st = None

    def run(self) -> dict:
        """Simulate the job: the failure process, then the trainer, until the trainer ends; the totals."""
        env, tot, fleet = self.env, self.tot, self.fleet
        self.fail_proc = env.process(self.failure_process())
        proc = env.process(self.trainer())
        env.run(until=proc)
        result = self.result
        st = result["state"]
        for block in (st.since_ck, st.in_memory, st.persisting):  # progress kept when the job ends, however it ends
            _move_work(tot, block)
        tot["ttt"] = result.get("end", env.now)
        if "cut" in result:  # stopped inside a restart: every failure up to its start was detected
            tot["failures"] = sum(k <= result["cut"] for k in fleet.kill_times)
        else:
            tot["failures"] = sum(k < env.now for k in fleet.kill_times)  # failures that hit the running job
        tot["steps_done"] = result.get("done", 0)
        tot["status"] = result["status"]
        return tot

    # --------------------------------------------------------------------------------------- durations, repairs
    def jittered(self, base):
        """A phase of nominal length ``base`` (us) as it runs: the duration jitter, decided and drawn here only
        (one normal of ``jitter_rng`` per phase of non-zero length while the config draws jitter: the kernel's and
        the job's test, :attr:`~spare_mc.ttt.config.TimelineConfig.draws_jitter`)."""
        base = int(base)
        if not self.cfg.draws_jitter or base == 0:
            return base
        return max(0, int(np.round(base * self.jitter_rng.normal(1.0, float(self.cfg.jitter_sd)))))

    def repair_done(self, g):
        """When a group found dead now is ready to rejoin."""
        if self.cfg.repair == "log":
            return max(self.env.now, self.log_back[g])
        return self.env.now + self.repair_time()

    def repair_time(self):
        cfg, horizon = self.cfg, self.horizon
        if cfg.repair == "fixed":
            return round(cfg.repair_s * _US)
        sigma = cfg.repair_sd
        x = math.exp(math.log(cfg.repair_s) - sigma ** 2 / 2 + sigma * self.repair_rng.standard_normal()) * 1e6
        return horizon if not x < horizon else max(1, int(np.rint(x)))

    # ------------------------------------------------------------------------------------------ failure events
    def note(self, touched):
        """``record``: every failure event, absorbed or not, as (time, the groups it touches)."""
        if self.record is not None:
            self.record.append((self.env.now, list(touched)))

    def kill(self, g):
        fleet = self.fleet
        fleet.copies.discard(g)  # its memory, with a checkpoint copy in it, is gone
        fleet.up.remove(g)
        fleet.dead.add(g)
        fleet.pending.append(g)
        fleet.kill_times.append(self.env.now)
        if fleet.kill_event is not None and not fleet.kill_event.triggered:
            fleet.kill_event.succeed()

    def absorbing(self):
        """Failures now are absorbed: a restart is running and the restart takes them (the default)."""
        return self.fleet.restarting and not self.stay_dead

    def absorb(self):
        """A failure during a restart: counted; under restart_again it starts the restart again."""
        self.tot["absorbed"] += 1
        if self.again and not self.fleet.restart_hit.triggered:
            self.fleet.restart_hit.succeed()

    def restart_ends_now(self):
        """A failure at the very end of a restart hits the restarted system: let the restart end first."""
        return self.fleet.restarting and self.env.now == self.fleet.restart_end

    # --------------------------------------------------------------------------------------- failure processes
    def log_failures(self):
        """The failure process of a failure log: its events at their times."""
        env, fleet, simpy = self.env, self.fleet, self.simpy
        times, ptr, groups = self.log_events
        log_repair, log_back, ready = self.log_repair, self.log_back, self.ready
        for e, t_e in enumerate(times):
            while env.now < t_e:
                try:
                    yield env.timeout(t_e - env.now)
                except simpy.Interrupt:  # restarts change nothing here: wait on for the same event
                    pass
            while self.restart_ends_now():  # a restart ending now comes first: the event hits the restarted job
                yield env.timeout(0)
            if self.absorbing():
                self.absorb()
                continue
            back = None if log_repair is None else t_e + log_repair[e]
            for g in groups[ptr[e]:ptr[e + 1]]:
                if g not in fleet.dead:
                    self.kill(g)
                    if back is not None:
                        log_back[g] = back
                elif back is not None:  # already dead: it is back only when this unit is back too
                    log_back[g] = max(log_back[g], back)
                    if g in ready:
                        ready[g] = max(ready[g], back)
        while True:  # the log is over: no more failures
            try:
                yield env.event()
            except simpy.Interrupt:
                pass

    def renewal_failures(self):
        """The failure process of the system-level renewal process: arrivals on the operational clock, each killing
        a uniformly chosen live group."""
        env, fleet, simpy, clock, cfg, n = self.env, self.fleet, self.simpy, self.clock, self.cfg, self.n
        while True:
            if clock.a is None:
                fleet.trace_out = True
                return
            rate = n if self.absorbing() else (len(fleet.up) if cfg.live_scaling else n)
            try:
                if rate == 0:
                    yield env.event()  # never fires: woken only by an interrupt
                else:
                    yield env.timeout(clock.t_ref + -(-(clock.a - clock.o_ref) // rate) - env.now)
                # a restart ending now, or repaired groups rejoining now, come first (the trainer resumes after
                # two hops)
                while self.restart_ends_now() or fleet.rejoin_at == env.now:
                    yield env.timeout(0)
            except simpy.Interrupt:  # the rate changes (a restart starts, groups rejoin): bank the clock
                clock.o_ref += rate * (env.now - clock.t_ref)
                clock.t_ref = env.now
                continue
            fleet.arrivals.append(env.now)
            clock.o_ref, clock.t_ref = clock.a, env.now
            if self.absorbing():
                self.note([0])
                self.absorb()
            elif fleet.up:  # with no live group (live scaling off) the failure hits nothing
                victim = fleet.up[(clock.victims[clock.i] * len(fleet.up)) >> 32]
                self.note([victim])
                self.kill(victim)
            else:
                self.note([0])  # every group is dead
            clock.i += 1
            clock.a = clock.a + clock.gaps[clock.i] if clock.i < len(clock.gaps) else None

    def redraw(self, t_from, which):
        """New lifetimes from ``t_from`` for the units ``which(u)`` selects, in unit order."""
        units, horizon = self.units, self.horizon
        for u in range(len(units.scales)):
            if not which(u):
                continue
            if units.il >= len(units.life):
                self.fleet.trace_out = True
                return
            life = units.scales[u] * units.life[units.il]
            units.next[u] = t_from + (horizon if not life < horizon else max(1, int(np.rint(life))))
            units.il += 1

    def unit_groups(self, u):
        """The groups unit ``u`` touches (dead or alive)."""
        units = self.units
        if u < units.n_group_units:
            return [u]
        d = u - units.n_group_units
        return units.dom_groups[units.dom_ptr[d]:units.dom_ptr[d + 1]]

    def live_targets(self, u):
        """The groups unit ``u`` kills: its group, or its domain's live groups."""
        return [u] if u < self.units.n_group_units else [g for g in self.unit_groups(u) if g not in self.fleet.dead]

    def race_failures(self):
        """The failure process of unit clocks sampled as a race (:class:`UnitRace`)."""
        env, fleet, simpy, race, units = self.env, self.fleet, self.simpy, self.race, self.units
        while True:
            if race.trace_out:
                fleet.trace_out = True
                return
            try:
                if race.t_next is None:
                    yield env.event()
                else:
                    yield env.timeout(race.t_next - env.now)
                if self.restart_ends_now():  # the restart ends first: it renews the units and wakes us
                    yield env.timeout(0)
                    continue
            except simpy.Interrupt:  # a restart ended: the units were renewed
                continue
            u = race.pick()
            if u is None:
                fleet.trace_out = True
                return
            self.note(self.unit_groups(u))
            if self.absorbing():
                race.off(u)
                race.advance()
                self.absorb()
                continue
            for g in self.live_targets(u):
                self.kill(g)
                if g < units.n_group_units:
                    race.off(g)  # a dead group's GPUs no longer fail
            race.off(u)
            race.advance()

    def unit_failures(self):
        """The failure process of unit clocks with one lifetime drawn per unit (:class:`UnitClocks`)."""
        env, simpy, units = self.env, self.simpy, self.units
        while True:
            active = [(t, u) for u, t in enumerate(units.next) if t is not None]
            try:
                if not active:
                    yield env.event()
                else:
                    yield env.timeout(min(active)[0] - env.now)
                if self.restart_ends_now():  # the restart ends first: it redraws the lifetimes and wakes us
                    yield env.timeout(0)
                    continue
            except simpy.Interrupt:  # a restart ended: lifetimes were redrawn
                continue
            _, u = min(active)
            units.next[u] = None
            self.note(self.unit_groups(u))
            if self.absorbing():
                self.absorb()
                continue
            for g in self.live_targets(u):
                self.kill(g)
                if g < units.n_group_units:
                    units.next[g] = None  # a dead group's GPUs no longer fail

    # -------------------------------------------------------------------------------------- the trainer's rules
    def killed_within(self, t0, t1):
        """Whether a group was killed at a time in ``[t0, t1)``."""
        for t in reversed(self.fleet.kill_times):
            if t < t0:
                return False
            if t < t1:
                return True
        return False

    def dynamic_due(self, since_ck, known_dead):
        """The dynamic policy's rule at this step boundary (see the notes of :func:`timeline_simpy`)."""
        cfg, n, sets, layout, env = self.cfg, self.n, self.sets, self.layout, self.env
        live = [g for g in range(n) if g not in known_dead]
        if cfg.strategy == "ckpt":
            n_crit = len(live)
        elif cfg.strategy == "rep":
            n_crit = sum(sets.is_wiped(known_dead | {g}) for g in live)
        else:
            dead_types = [t for t in range(n) if all(int(h) in known_dead for h in layout.holders[t])]
            assert not dead_types  # a known wipe-out would have restarted
            n_crit = sum(any(all(int(h) in known_dead or int(h) == g for h in layout.holders[t]) for t in range(n))
                         for g in live)
        if n_crit == 0:
            return False
        k = cfg.shape
        lam = cfg.mtbf_s / math.gamma(1.0 + 1.0 / k)
        last = max([t for t in self.fleet.arrivals if t < env.now], default=0)
        age = (env.now - last) / 1e6 / lam
        if age == 0.0 and k < 1.0:
            base = math.inf
        else:
            base = k * age ** (k - 1.0)
        if not base > 0.0:
            return False
        tf = lam * (n if cfg.live_scaling else len(live)) / (n_crit * base)
        ts, tr = cfg.save_s, self.restart_seconds + cfg.load_s  # T_r with its checkpoint load
        x = ts + math.sqrt(ts * ts + 2.0 * ts * (tf + tr)) if self.policy == "hazard" else math.sqrt(2.0 * ts * tf)
        thr = cfg.ckpt_period_factor * x * 1e6
        return math.isfinite(thr) and since_ck >= round(thr)

    # ------------------------------------------------------------------------------------------------ trainer
    def trainer(self):
        """The trainer process: steps, checkpoints, wipe-outs and rejoins until the job is done (or capped, or the
        trace runs out)."""
        cfg, env = self.cfg, self.env
        st = types.SimpleNamespace(ctl=ReCtlr(self.layout) if cfg.strategy == "spare" else None, done=0, saved=0,
                                   known_dead=set(),
                                   last_ck=0,  # wall time of the end of the last checkpoint or restart
                                   mark=0,     # steps done at the last checkpoint or restart
                                   since_ck=dict.fromkeys(("useful", "redundant", "patch", "allreduce",
                                                           "rectlr_shrink"), 0),
                                   remote=0,          # steps done at the last checkpoint in remote storage
                                   since_remote=0,    # in-memory checkpoints since the last remote save
                                   persist_end=None,  # when the asynchronous save in flight completes
                                   persist_steps=0)
        st.in_memory = dict.fromkeys(st.since_ck, 0)   # work kept only by in-memory checkpoints
        st.persisting = dict.fromkeys(st.since_ck, 0)  # work the save in flight will keep
        self.st = self.result["state"] = st
        st.S = st.ctl.stack_number if st.ctl else (cfg.r if cfg.strategy == "rep" else 1)

        if self.copies:  # the initial state is held like a restored checkpoint
            self.place_copies()
        while st.done < cfg.n_steps or (cfg.final_checkpoint and st.saved < cfg.n_steps):
            self.persist_check()
            if env.now > self.cap:
                self.result["status"] = "capped"
                break
            nominal = self.rep_step if self.sets is not None else st.S * self.comp
            c = self.jittered(nominal)
            step = yield from (self.immediate_step(c) if self.immediate else self.detected_step(c))
            if step is _STOP:
                return
            if step is _WIPED:
                continue
            self.book_step(c, nominal, *step)
            if self.repairing and cfg.rejoin == "step":
                yield from self.rejoin()
            if (yield from self.checkpoint_if_due()) is _STOP:
                return
        self.result["done"] = st.done

    def immediate_step(self, c):
        """A step under immediate detection (CKPT-only): its compute ``c`` and all-reduce as one phase a kill stops.
        Returns ``(all-reduce, 0, 0)``, or :data:`_WIPED` / :data:`_STOP` when a kill stopped it."""
        env, fleet, tot = self.env, self.fleet, self.tot
        a = self.jittered(self.ar)
        start = env.now
        stopped = yield from self.interruptible(c + a)
        if fleet.trace_out:
            self.result["status"] = "trace"
            return _STOP
        if stopped:
            tot["detections"] += 1
            tot["steps_run"] += 1
            fleet.pending = []
            if (yield from self.wipe_out(env.now - start)):
                return _STOP
            return _WIPED
        tot["steps_run"] += 1
        return a, 0, 0

    def detected_step(self, c):
        """A step whose failures are detected at its all-reduce: compute ``c`` (slowed by an asynchronous save in
        flight), then the detection (masked, or a wipe-out), then the all-reduce. Returns ``(all-reduce, ReCtlr and
        shrink time, patch time)``, or :data:`_WIPED` / :data:`_STOP`."""
        cfg, env, fleet, tot, st = self.cfg, self.env, self.fleet, self.tot, self.st
        slow = 0
        if st.persist_end is not None and st.persist_end > env.now:  # compute runs f times slower until
            x = min(float(st.persist_end - env.now), cfg.async_slowdown * float(c))  # the save is done
            slow = int(math.floor(x * ((cfg.async_slowdown - 1.0) / cfg.async_slowdown) + 0.5))
            tot["checkpoint"] += slow
            tot["async_slowdown"] += slow
        yield env.timeout(c + slow)
        yield env.timeout(0)  # let failures arriving exactly now land first
        if fleet.trace_out:
            self.result["status"] = "trace"
            return _STOP
        newly, fleet.pending = fleet.pending, []
        wiped = False
        extra_rc = extra_patch = 0
        if newly:
            wiped, extra_rc, extra_patch = self.detection(newly)
        tot["steps_run"] += 1
        if wiped:
            if (yield from self.wipe_out(c)):
                return _STOP
            return _WIPED
        st.known_dead |= set(newly)
        if self.repairing:
            for g in newly:
                self.ready[g] = self.repair_done(g)
        a = self.jittered(self.ar)
        if cfg.rejoin == "step":  # at the end of the step in progress
            self.announce(env.now + extra_rc + extra_patch + a, st.done + 1)
        yield env.timeout(extra_rc + extra_patch + a)
        if fleet.trace_out:
            self.result["status"] = "trace"
            return _STOP
        return a, extra_rc, extra_patch

    def detection(self, newly):
        """The groups ``newly`` found dead at an all-reduce: ``(wiped out?, ReCtlr and shrink time, patch time)``
        of the strategy (Rep's replica sets, SPARe's controller; CKPT-only always wipes out)."""
        cfg, st = self.cfg, self.st
        dur = self.jittered
        wiped = False
        extra_rc = extra_patch = 0
        self.tot["detections"] += 1
        if cfg.strategy == "ckpt":
            wiped = True
        elif cfg.strategy == "rep":
            wiped = self.sets.is_wiped(self.fleet.dead)
            if not wiped:
                extra_rc = dur(round(cfg.shrink_s * _US))
                if cfg.rep_masked_cost == "resync":
                    extra_rc += dur(round(cfg.rep_resync_s * _US))
                extra_rc += dur(round(cfg.masked_detect_s * _US))
                if cfg.rep_masked_cost == "redo_step":
                    extra_patch = dur(self.rep_step)
        else:
            step = st.ctl.fail(newly)
            wiped = step.wiped
            if not wiped:
                extra_rc = (dur(round(cfg.rectlr_s * _US)) + dur(round(cfg.shrink_s * _US))
                            + dur(round(cfg.masked_detect_s * _US)))
                extra_patch = {"per_shard": lambda: dur(step.patch * self.comp), "none": lambda: 0,
                               "whole_step": lambda: dur(step.s_star * self.comp)}[cfg.patch_cost]()
        return wiped, extra_rc, extra_patch

    def book_step(self, c, nominal, a, extra_rc, extra_patch):
        """A step done: its compute ``c`` split into useful and redundant work, its costs booked since the last
        checkpoint."""
        st = self.st
        useful = c * self.comp // nominal if self.sets is not None else c // st.S
        st.since_ck["useful"] += useful
        st.since_ck["redundant"] += c - useful
        st.since_ck["patch"] += extra_patch
        st.since_ck["rectlr_shrink"] += extra_rc
        st.since_ck["allreduce"] += a
        st.done += 1
        if st.ctl:
            st.S = st.ctl.stack_number

    def interruptible(self, length):
        """Immediate detection: run a phase of ``length`` unless a kill stops it. Returns whether one did (a
        group dead at its start, or killed before its end)."""
        env, fleet = self.env, self.fleet
        yield env.timeout(0)  # let failures arriving exactly now land first
        start = env.now
        if not fleet.pending:
            fleet.kill_event = env.event()
            yield env.timeout(length) | fleet.kill_event
            fleet.kill_event = None
        return bool(fleet.pending) and (env.now < start + length or env.now == start)

    # ------------------------------------------------------------------------------------------- checkpoints
    def checkpoint_if_due(self):
        """After a step: a checkpoint if the policy says one is due (and the final one, if asked). Returns
        :data:`_STOP` when the run ended in it."""
        cfg, env, st = self.cfg, self.env, self.st
        if self.policy != "periodic":
            due = self.dynamic_due(env.now - st.last_ck, st.known_dead)
        else:
            due = st.done - st.mark >= self.every if self.every else env.now - st.last_ck >= self.period
        if self.tiered:
            if due and st.done < cfg.n_steps:
                yield from self.tiered_checkpoint()
        elif (due and st.done < cfg.n_steps) or (cfg.final_checkpoint and st.done == cfg.n_steps):
            return (yield from self.blocking_checkpoint())
        return None

    def blocking_checkpoint(self):
        """A checkpoint to remote storage that blocks the job (under immediate detection a kill stops it). Returns
        :data:`_STOP` when the run ended in it, :data:`_WIPED` when a kill stopped it and the job restarted."""
        cfg, env, fleet, tot, st = self.cfg, self.env, self.fleet, self.tot, self.st
        start = env.now
        k = self.jittered(round(cfg.save_s * _US))
        if self.immediate:
            stopped = yield from self.interruptible(k)
            if fleet.trace_out:
                self.result["status"] = "trace"
                return _STOP
            if stopped:  # the save is interrupted: unusable, and the job wipes out now
                tot["checkpoint"] += env.now - start
                tot["checkpoints"] += 1
                tot["checkpoints_lost"] += 1
                tot["detections"] += 1
                fleet.pending = []
                if (yield from self.wipe_out(0)):
                    return _STOP
                return _WIPED
        else:
            if self.repairing and cfg.rejoin == "checkpoint":
                self.announce(start + k, st.done)
            yield env.timeout(k)
        tot["checkpoint"] += k
        tot["checkpoints"] += 1
        if cfg.ckpt_failure == "lost" and self.killed_within(start, start + k):
            tot["checkpoints_lost"] += 1  # unusable: the rollback point and the unsaved work stay
        else:
            _move_work(tot, st.since_ck)
            st.saved = st.remote = st.done
        st.last_ck, st.mark = env.now, st.done
        if self.repairing and cfg.rejoin == "checkpoint":
            yield from self.rejoin()
        return None

    def place_copies(self):
        """For j = 0 .. m - 1, the first group at or after floor(j N / m), cyclically, not chosen yet and not
        known dead; a chosen group that is dead (not detected yet) gets no copy."""
        n, copies, st, fleet = self.n, self.copies, self.st, self.fleet
        chosen = []
        for j in range(copies):
            g = j * n // copies
            for _ in range(n):
                if g not in chosen and g not in st.known_dead:
                    chosen.append(g)
                    break
                g = (g + 1) % n
        fleet.copies = {g for g in chosen if g not in fleet.dead}

    def persist_check(self):
        """An asynchronous save complete by now: its checkpoint is in remote storage, its work kept."""
        st = self.st
        if st.persist_end is not None and st.persist_end <= self.env.now:
            _move_work(self.tot, st.persisting)
            st.remote = st.persist_steps
            if not self.copies:
                st.saved = st.persist_steps
            st.persist_end = None

    def tiered_checkpoint(self):
        """A due checkpoint with in-memory copies and/or asynchronous saves, as the options' text says."""
        cfg, env, tot, st, copies = self.cfg, self.env, self.tot, self.st, self.copies
        self.persist_check()
        remote = not copies or st.since_remote + 1 >= cfg.remote_every
        if remote and cfg.ckpt_async and st.persist_end is not None:
            if not copies:
                return  # one remote save at a time: due again at the next step boundary
            remote = False
        tot["checkpoints"] += 1
        if copies and (not remote or cfg.ckpt_async):
            k = self.jittered(round(cfg.memory_save * _US))
            yield env.timeout(k)
            tot["checkpoint"] += k
            self.place_copies()
            st.saved = st.done
        if not remote:
            _move_work(st.in_memory, st.since_ck)
            st.since_remote += 1
        elif not cfg.ckpt_async:
            k = self.jittered(round(cfg.save_s * _US))
            yield env.timeout(k)
            tot["checkpoint"] += k
            _move_work(tot, st.in_memory)
            _move_work(tot, st.since_ck)
            if copies:
                self.place_copies()
            st.saved = st.remote = st.done
            st.since_remote = 0
        else:
            _move_work(st.persisting, st.in_memory)
            _move_work(st.persisting, st.since_ck)
            st.persist_steps = st.done
            st.persist_end = env.now + self.jittered(round(cfg.save_s * _US))
            st.since_remote = 0
            self.persist_check()
        st.last_ck, st.mark = env.now, st.done

    # ------------------------------------------------------------------------------------ wipe-outs, rejoins
    def wipe_out(self, lost_now):
        """A wipe-out now, ``lost_now`` of the phase in progress lost: the global restart. Returns True if the
        run stopped inside it (the cap)."""
        cfg, env, fleet, tot, st, n = self.cfg, self.env, self.fleet, self.tot, self.st, self.n
        self.persist_check()
        tot["wipeouts"] += 1
        lost = sum(st.since_ck.values()) + lost_now
        if self.copies and fleet.copies:  # a holder of the last checkpoint is alive: reload it from memory
            _move_work(st.in_memory, st.persisting)
            tot["memory_restarts"] += 1
            base = round(self.restart_seconds * _US) + round(cfg.memory_load * _US)
        else:  # from remote storage: the work kept only in memory is lost too
            lost += sum(st.in_memory.values()) + sum(st.persisting.values())
            st.in_memory = dict.fromkeys(st.since_ck, 0)
            st.persisting = dict.fromkeys(st.since_ck, 0)
            if self.copies:
                tot["remote_fallbacks"] += 1
                st.since_remote = 0
            st.saved = st.remote
            base = round(self.restart_seconds * _US) + round(cfg.load_s * _US)
        st.persist_end = None  # a save in flight is abandoned
        tot["lost"] += lost
        self.ready.clear()  # every group comes back with the restart
        st.since_ck = dict.fromkeys(st.since_ck, 0)
        st.done = st.saved
        fleet.restarting = True
        replaced = m_from = None
        if self.stay_dead:  # the groups dead now come back; the ones that die during the restart stay dead
            units, race = self.units, self.race
            replaced = set() if units is None else {u for u, t in enumerate(units.next) if t is None}
            m_from = None if units is None or race is None else list(race.m)
            fleet.up, fleet.dead, fleet.pending = list(range(n)), set(), []
        self.fail_proc.interrupt()
        start = env.now
        r_s = self.jittered(base)
        while True:
            if env.now + r_s > self.cap:  # a restart that ends past the cap ends the run at the cap, unsimulated
                tot["restart"] += self.cap - start
                self.result.update(status="capped", done=st.done, end=self.cap, cut=start)
                return True
            fleet.restart_end = env.now + r_s
            fleet.restart_hit = env.event()
            yield env.timeout(r_s) | fleet.restart_hit
            if self.again and fleet.restart_hit.triggered and env.now < fleet.restart_end:
                r_s = self.jittered(base)  # a failure: the restart starts again from it
                continue
            break
        tot["restart"] += env.now - start
        if not self.stay_dead:
            fleet.up, fleet.dead, fleet.pending = list(range(n)), set(), []
        fleet.restarting = False  # same rate as during the restart: the system process needs no wake-up
        if self.renew_units(replaced, m_from):
            self.result["status"] = "trace"
            return True
        st.ctl = ReCtlr(self.layout) if cfg.strategy == "spare" else None
        if st.ctl:
            st.S = st.ctl.stack_number
        st.last_ck, st.mark = env.now, st.done
        st.known_dead = set()
        if self.copies:  # the restored checkpoint is in every group's memory: m of them keep a copy
            self.place_copies()
        return False

    def renew_units(self, replaced, m_from):
        """The unit clocks at the end of a restart (``replaced``, ``m_from``: the units idle, and the race's counts,
        when it began, under stay_dead); wakes the failure process. Returns whether the trace ran out."""
        env, fleet, units, race = self.env, self.fleet, self.units, self.race
        if units is not None and race is not None:  # every unit is new, but under stay_dead those that
            if self.stay_dead:                      # went off during the restart
                race.renew_but(env.now, m_from, fleet.pending)
            else:
                race.renew(env.now)
            self.fail_proc.interrupt()
            if race.trace_out:
                return True
        elif units is not None:  # replaced hardware gets new lifetimes from the end of the restart
            if not self.stay_dead:
                self.redraw(env.now, lambda u: not units.keep or units.next[u] is None)
            else:
                def renewed(u):
                    if u < units.n_group_units and u in fleet.dead:
                        return False  # its group died during the restart: idle until the next one
                    if u in replaced:
                        return True  # it fired before the restart: new hardware
                    return units.next[u] is not None and not units.keep
                self.redraw(env.now, renewed)
            self.fail_proc.interrupt()
            if fleet.trace_out:
                return True
        return False

    def announce(self, end, done):
        """Repaired groups will rejoin at ``end``, when ``done`` steps are done (none once every step is):
        failures at that instant wait for them."""
        ready = self.ready
        if self.repairing and done < self.cfg.n_steps and ready and min(ready.values()) <= end:
            self.fleet.rejoin_at = end

    def rejoin(self):
        """Every group whose repair is done is live again; the job pauses ``rejoin_s``."""
        cfg, env, fleet, st, ready = self.cfg, self.env, self.fleet, self.st, self.ready
        if fleet.rejoin_at != env.now:
            return
        back = sorted(g for g, t in ready.items() if t <= env.now)
        if not back:  # repair='log': a later event postponed the repair announced; nothing rejoins
            fleet.rejoin_at = None
            return
        for g in back:
            del ready[g]
            bisect.insort(fleet.up, g)
            fleet.dead.discard(g)
            st.known_dead.discard(g)
        self.tot["rejoins"] += len(back)
        if cfg.strategy == "spare":
            st.ctl = ReCtlr(self.layout)
            if ready:
                st.ctl.fail(sorted(ready))
            st.S = st.ctl.stack_number
        fleet.rejoin_at = None
        if self.fail_proc.is_alive:
            self.fail_proc.interrupt()  # the failure rate follows the live groups
        cost = self.jittered(round(cfg.rejoin_s * _US))
        yield env.timeout(cost)
        st.since_ck["rectlr_shrink"] += cost
