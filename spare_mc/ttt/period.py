"""The theory checkpoint period of a configuration: ``T_c*`` and the costs it weighs (no simulation).

:func:`theory_ckpt_period_s` is the default checkpoint period of a :class:`spare_mc.ttt.config.TimelineConfig`
(its ``ckpt_period``), so this module sits below :mod:`spare_mc.ttt.config`: its functions take a config (``cfg``, a
``TimelineConfig``) and read its fields without importing the class. The rest of the time-to-train theory of a config
(the classical model, :func:`spare_mc.ttt.theory.theory_ttt`) is in :mod:`spare_mc.ttt.theory`; the config-free
formulas in :mod:`spare_mc.theory.closed_forms`.
"""

from __future__ import annotations

import functools

from ..theory.closed_forms import ckpt_period_optimal
from ..theory.exact import exact_wipeout

__all__ = ["theory_ckpt_period_s", "theory_costs"]


def mean_wipeout_index(cfg) -> float:
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


def theory_ckpt_period_s(cfg) -> float:
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


def theory_costs(cfg) -> tuple[float, float, float]:
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
