"""Exact expected time to train of the step model for CKPT-only and Rep+CKPT under exponential failures.

A Markov renewal (first-step) analysis of the timeline's own rules (docs/model.md section 9.2), computed with
matrix exponentials to about 1e-12 relative, against which the discrete-event timeline is tested.

The chain
---------
Failures form a Poisson process: the system-level process with shape 1 (mean ``M`` for the full system), whose
rate is ``n_live / (N M)`` with live scaling (``1 / M`` without, while a group lives), each failure killing a
uniformly random live group. Between detections only the *configuration* matters: for each replica set size ``s``
and live count ``j``, how many sets have ``j`` of their ``s`` members live (CKPT-only: ``N`` sets of one group).
A set with no live member dooms the job: the next detection wipes out, whatever happens meanwhile, so every such
configuration is one absorbing state ``DOOMED``. Over an interval of length ``L`` the configuration moves by
``exp(Q L)`` with ``Q`` the generator (a failure in a class ``(s, j)`` at rate ``j x c_(s,j)`` per live group's
rate).

A step starts in a state ``(y, flag)``: its configuration and whether deaths are pending (happened since the last
detection). Its compute phase (``C``: ``T_comp`` for CKPT-only, Rep's step compute) ends at a detection: ``DOOMED``
there is a wipe-out; a changed configuration, or a pending death, is a masked detection; otherwise nothing
happens. The rest of the step -- ``T_a``, plus the masked cost ``e`` (shrink, resync, detection cost, or the
recomputed step) -- and a checkpoint ``T_s`` when due move the configuration on with their own ``exp(Q L)``, and a
change there leaves deaths pending. A checkpoint is due when the wall time since the last checkpoint or restart,
``i (C + T_a) + m e`` after ``i`` steps of which ``m`` were masked, reaches ``T_c`` (or every ``k`` steps), as in
the timeline, on the same integer-microsecond clock. The configuration is *not* reset by a checkpoint: dead groups
stay dead until the next global restart.

A wipe-out after ``i`` steps since the last checkpoint or restart, at progress ``p``, rolls back to ``q = p - i``,
and the restart -- ``T_r``, or ``M (e^(T_r/M) - 1)`` in expectation when a failure starts it again -- returns to a
fresh configuration. So with ``A(q)`` the expected time from a fresh start at ``q`` to the first wipe-out or the
end, and ``W(q, q')`` the probability that the first wipe-out rolls back to ``q'`` (``q' >= q``),

    F(q) = A(q) + sum_q' W(q, q') (R + F(q')),

solved from the last rollback point down (``F(q)`` appears on both sides through ``W(q, q)``). ``E[TTT] = F(0)``.

Scope
-----
Strategies ``ckpt`` and ``rep`` (SPARe's state is the set of dead groups itself and ReCtlr's stack number, far too
many states); the system-level process with ``shape = 1``; no jitter; failures during a restart ``absorbed`` or
``restart_again`` (``stay_dead`` would start a restart from a random configuration: not done); ``detection =
"allreduce"``; ``ckpt_failure = "completes"``; any ``rep_masked_cost``, ``rep_allreduce``, ``live_scaling``,
``ckpt_every_steps``, ``final_checkpoint``, and Rep's sets of ``r`` or ``r + 1`` groups. The wall-clock cap is not
modelled: compare with runs of which none was capped. Cost: ``O(n_steps^2 / K)`` vector steps for ``K`` steps
between checkpoints, with a configuration space that grows like ``n_sets^(r-1)`` (refused beyond
``MAX_CONFIGS``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import expm

from .._lib.validation import UsageValueError
from .config import TimelineConfig

__all__ = ["ExactTTT", "exact_step_ttt", "MAX_CONFIGS"]

#: Largest configuration space :func:`exact_step_ttt` accepts (dense matrix exponentials of this size).
MAX_CONFIGS = 3000
_US = 1_000_000


@dataclass(frozen=True)
class ExactTTT:
    """The exact expected time to train of one :class:`spare_mc.ttt.config.TimelineConfig`.

    Attributes
    ----------
    ttt_s : float
        ``E[TTT]`` in seconds.
    ttt_over_t0 : float
    n_configs : int
        Configurations of the replica sets (without the doomed state).
    rollback_points : int
        Checkpoint positions a wipe-out can roll back to (each one a renewal equation).
    """

    ttt_s: float
    ttt_over_t0: float
    n_configs: int
    rollback_points: int


def _scope_iv(cfg) -> None:
    rules = [("strategy", cfg.strategy in ("ckpt", "rep"), "ckpt or rep (SPARe's state is too large)"),
             ("failures", cfg.failures is None, "None (the system-level process)"),
             ("shape", cfg.shape == 1.0, "1 (exponential failures)"),
             ("jitter_sd", cfg.jitter_sd == 0.0, "0"),
             ("restart_failures", cfg.restart_failures in ("absorbed", "restart_again"),
              "'absorbed' or 'restart_again' (stay_dead is not covered)"),
             ("detection", cfg.detection == "allreduce", "'allreduce' (the classical model covers 'immediate')"),
             ("ckpt_failure", cfg.ckpt_failure == "completes", "'completes'")]
    for name, ok, rule in rules:
        if not ok:
            raise UsageValueError(f"exact_step_ttt needs `{name}` = {rule}, got {name}={getattr(cfg, name)!r}")


def _configs(sizes):
    """Every configuration reachable from the fresh one: for each set size ``s`` (with ``n_s`` sets), the counts of
    sets with ``j = 1 .. s`` live members. Returns (list of tuples, index dict, the fresh configuration)."""
    per_size = []
    for s, n_s in sizes:
        per_size.append([c for c in itertools.product(range(n_s + 1), repeat=s) if sum(c) == n_s])
    confs = [tuple(itertools.chain.from_iterable(parts)) for parts in itertools.product(*per_size)]
    fresh = tuple(itertools.chain.from_iterable([0] * (s - 1) + [n_s] for s, n_s in sizes))
    return confs, {c: i for i, c in enumerate(confs)}, fresh


def _generator(cfg, sizes, confs, index):
    """The generator over the configurations plus DOOMED (last index)."""
    n = cfg.n_groups
    k = len(confs)
    q = np.zeros((k + 1, k + 1))
    offsets = np.cumsum([0] + [s for s, _ in sizes])
    for a, conf in enumerate(confs):
        live = sum((j + 1) * conf[offsets[b] + j] for b, (s, _) in enumerate(sizes) for j in range(s))
        per_group = 1.0 / (n * cfg.mtbf_s) if cfg.live_scaling else 1.0 / (cfg.mtbf_s * live)
        for b, (s, _) in enumerate(sizes):
            for j in range(s):  # class (s, j + 1 live)
                count = conf[offsets[b] + j]
                if count == 0:
                    continue
                rate = per_group * (j + 1) * count
                if j == 0:
                    dest = k  # the set loses its last member
                else:
                    nxt = list(conf)
                    nxt[offsets[b] + j] -= 1
                    nxt[offsets[b] + j - 1] += 1
                    dest = index[tuple(nxt)]
                q[a, dest] += rate
                q[a, a] -= rate
    return q


def exact_step_ttt(cfg) -> ExactTTT:
    """The exact ``E[TTT]`` of a CKPT-only or Rep+CKPT timeline under exponential failures (see the module
    docstring for the chain and its scope; a setting outside it is refused naming the rule).

    Examples
    --------
    >>> from spare_mc.ttt.config import TimelineConfig
    >>> cfg = TimelineConfig("ckpt", 100, n_steps=200, compute_s=60.0, allreduce_s=5.0, mtbf_s=3600.0, shape=1.0,
    ...                      jitter_sd=0.0, restart_s=600.0, save_s=30.0, ckpt_period_s=900.0)
    >>> round(exact_step_ttt(cfg).ttt_over_t0, 6)
    1.371566
    """


    if not isinstance(cfg, TimelineConfig):
        raise UsageValueError(f"`cfg` must be a TimelineConfig, got {type(cfg).__name__}")
    _scope_iv(cfg)
    if cfg.strategy == "ckpt":
        sizes = [(1, cfg.n_groups)]
    else:
        sets = cfg.replica_sets()
        sizes = sorted((int(s), int(np.sum(sets.sizes == s))) for s in np.unique(sets.sizes))
    n_conf = 1
    for s, n_s in sizes:
        n_conf *= math.comb(n_s + s - 1, s - 1)
    if n_conf > MAX_CONFIGS:
        raise UsageValueError(f"exact_step_ttt: {n_conf:,} replica-set configurations (N={cfg.n_groups}, r={cfg.r}) "
                              f"exceed MAX_CONFIGS = {MAX_CONFIGS}: use a smaller N")
    confs, index, fresh = _configs(sizes)
    k = len(confs)
    doomed = k
    gen = _generator(cfg, sizes, confs, index)

    # durations on the timeline's integer-microsecond clock
    c_us = cfg.rep_step_compute_us if cfg.strategy == "rep" else round(cfg.compute_s * _US)
    a_us = round(cfg.step_allreduce * _US)
    e_us = 0
    if cfg.strategy == "rep":
        e_us = round(cfg.shrink_s * _US) + round(cfg.masked_detect_s * _US)
        if cfg.rep_masked_cost == "resync":
            e_us += round(cfg.rep_resync_s * _US)
        elif cfg.rep_masked_cost == "redo_step":
            e_us += c_us
    s_us = round(cfg.save_s * _US)
    r_us = round(cfg.restart * _US)
    every = cfg.ckpt_every_steps
    period_us = None if every else round(cfg.ckpt_period * _US)
    n_steps = cfg.n_steps

    def ex(us):
        return expm(gen * (us / _US))

    e_c, e_a, e_am, e_s = ex(c_us), ex(a_us), ex(a_us + e_us), ex(s_us)
    d_c, d_a, d_am, d_s = (np.diag(x).copy() for x in (e_c, e_a, e_am, e_s))
    for dg in (d_c, d_a, d_am, d_s):
        dg[doomed] = 0.0  # DOOMED staying DOOMED is not "unchanged": it is handled at the next detection
    m_s = cfg.mtbf_s  # the failure rate during a restart is that of the full system, 1 / M
    restart_s = (m_s * math.expm1(r_us / _US / m_s) if cfg.restart_failures == "restart_again" else r_us / _US)
    final_s = s_us / _US if cfg.final_checkpoint else 0.0

    def due(i, m):
        return i >= every if every else i * (c_us + a_us) + m * e_us >= period_us

    def forward(q):
        """From a fresh start at progress q: (expected time to the first wipe-out or the end, {q': probability
        that the first wipe-out rolls back to q'})."""
        start = np.zeros(k + 1)
        start[index[fresh]] = 1.0
        states = {(0, 0, False): start}  # (steps since the last checkpoint or restart, masked among them, pending)
        time_s = 0.0
        wipes = {}
        for p in range(q, n_steps):
            nxt = {}

            def add(key, vec):
                if key in nxt:
                    nxt[key] = nxt[key] + vec
                else:
                    nxt[key] = vec

            for (i, m, pend), v in states.items():
                mass = v.sum()
                if mass < 1e-300:
                    continue
                time_s += mass * c_us / _US
                u = v @ e_c
                if u[doomed] > 0:
                    wipes[p - i] = wipes.get(p - i, 0.0) + u[doomed]
                same = v * d_c
                changed = u - same
                changed[doomed] = 0.0
                masked, clean = (changed + same, None) if pend else (changed, same)
                for vec, ext, dg, mm in ((masked, e_am, d_am, m + 1), (clean, e_a, d_a, m)):
                    if vec is None:
                        continue
                    w = vec.sum()
                    if w < 1e-300:
                        continue
                    time_s += w * (a_us + (e_us if ext is e_am else 0)) / _US
                    post = vec @ ext
                    stay = vec * dg
                    moved = post - stay
                    i1 = i + 1
                    if p + 1 < n_steps and due(i1, mm):
                        for vv, pp in ((stay, False), (moved, True)):
                            if vv.sum() < 1e-300:
                                continue
                            time_s += vv.sum() * s_us / _US
                            after = vv @ e_s
                            st2 = vv * d_s
                            add((0, 0, pp), st2)
                            add((0, 0, True), after - st2)
                        # the rollback point is now p + 1: keys restart at i = 0 (p - i = p + 1 at the next step)
                    else:
                        add((i1, mm, False), stay)
                        add((i1, mm, True), moved)
            states = nxt
        finished = sum(v.sum() for v in states.values())
        time_s += finished * final_s
        return time_s, wipes

    # every rollback point reachable from 0, and each one's forward pass
    cache = {}
    todo = [0]
    while todo:
        q = todo.pop()
        if q in cache:
            continue
        cache[q] = forward(q)
        todo.extend(q2 for q2 in cache[q][1] if q2 not in cache)
    f = {}
    for q in sorted(cache, reverse=True):
        a_q, wipes = cache[q]
        self_w = wipes.get(q, 0.0)
        rhs = a_q + sum(w * (restart_s + (f[q2] if q2 != q else 0.0)) for q2, w in wipes.items())
        if self_w >= 1.0:
            raise UsageValueError("exact_step_ttt: a wipe-out before the next checkpoint is certain, so the job never "
                                  "finishes (check mtbf_s against the step and checkpoint times)")
        f[q] = rhs / (1.0 - self_w)
    return ExactTTT(float(f[0]), float(f[0]) / cfg.t0_s, k, len(cache))
