"""Time to train under an exogenous failure stream: a cluster in service (:class:`spare_mc.model.unit_renewal.
UnitRenewal`) whose failures the job meets as it would meet a log's.

The job is run as on a failure log (:func:`spare_mc.ttt.run.run_log_job`): an event kills the live groups its unit
touches; a global restart renews nothing in the cluster (the units keep failing at their own pace). Replication
``i`` draws its stream from child 0 of its seed (:func:`spare_mc.ttt.run.job_seed`, the stream of the system
trace), its jitter from child 1, as :func:`spare_mc.simulate_ttt` does: the strategies, redundancies and periods run
at one ``N`` and seed meet the same failures (common random numbers).

The stream is drawn to a horizon of ``3 T0`` (at most the wall-clock cap); a job still running at the horizon is
run again on the stream extended to twice the horizon (the same draws first, :class:`~spare_mc.model.unit_renewal.
UnitStream`), so every job sees the stream as if it were infinite.
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels import timeline as _tk
from .._lib.resources import check_memory
from .._lib.seeding import root_seed_sequence, root_text, trace_seed_sequence
from .._lib.validation import UsageTypeError, UsageValueError, as_int
from ..model.topology import Topology
from ..model.unit_renewal import UnitRenewal, events_csr, unit_groups
from .config import US_PER_S, TimelineConfig
from .results import TTTResult
from .run import job_seed, run_log_job

__all__ = ["check_stream_config", "simulate_stream_ttt"]

#: Bytes per event of a drawn stream (time, unit, the event's groups and times in microseconds, with slack).
_EVENT_BYTES = 64


def check_stream_config(cfg: TimelineConfig, model: UnitRenewal, topology: Topology) -> None:
    """Refuse a config the stream cannot run, naming the fix."""
    if not isinstance(cfg, TimelineConfig):
        raise UsageTypeError(f"`cfg` must be a TimelineConfig, got {type(cfg).__name__}")
    if not isinstance(model, UnitRenewal):
        raise UsageTypeError(f"`model` must be a UnitRenewal, got {type(model).__name__}")
    model.check_topology(topology)
    if cfg.failures is not None:
        raise UsageValueError("`cfg.failures` must be None: the stream of `model` is the failure process")
    if cfg.n_groups != topology.n_groups:
        raise UsageValueError(f"`topology` has N={topology.n_groups} groups, the config N={cfg.n_groups}")
    if cfg.ckpt_policy != "periodic":
        raise UsageValueError("a failure stream needs ckpt_policy='periodic' (the dynamic period is defined on the "
                              f"system-level process), got ckpt_policy={cfg.ckpt_policy!r}")
    if cfg.repair == "log":
        raise UsageValueError("repair='log' needs a log's repair times; a model's stream has none: use repair='fixed'"
                              " or 'lognormal'")
    mtbf = model.system_mtbf_s(topology)
    if cfg.ckpt_period_s is None and not math.isclose(cfg.mtbf_s, mtbf, rel_tol=1e-9):
        raise UsageValueError(f"`cfg.mtbf_s`={cfg.mtbf_s:g} sets the checkpoint period, but the model's cluster "
                              f"MTBF is {mtbf:.6g} s (mean_s / units): give mtbf_s={mtbf!r} or a ckpt_period_s")


def simulate_stream_ttt(cfg: TimelineConfig, model: UnitRenewal, topology: Topology, reps: int, *, rng=None,
                        first_rep: int = 0) -> TTTResult:
    """``reps`` jobs of ``cfg`` on the failure stream of ``model`` over ``topology`` (module docstring).

    Parameters
    ----------
    cfg : TimelineConfig
        ``failures=None``, periodic checkpoints; ``mtbf_s`` the model's cluster MTBF (``model.system_mtbf_s``) unless
        ``ckpt_period_s`` is given.
    model : UnitRenewal
    topology : Topology
        With ``cfg.n_groups`` groups.
    reps, rng, first_rep
        As for :func:`spare_mc.simulate_ttt`.

    Returns
    -------
    TTTResult

    Examples
    --------
    >>> topo = Topology(1024, 16)
    >>> m = UnitRenewal("node", 8.64e6, 0.7)
    >>> cfg = TimelineConfig("spare", 16, r=2, n_steps=200, jitter_sd=0.0, mtbf_s=m.system_mtbf_s(topo))
    >>> res = simulate_stream_ttt(cfg, m, topo, 3, rng=1)
    >>> res.reps
    3
    """
    check_stream_config(cfg, model, topology)
    reps = as_int(reps, "reps", min_value=1)
    first_rep = as_int(first_rep, "first_rep", min_value=0)
    ptr_u, groups_u = unit_groups(topology, model.level)
    root = root_seed_sequence(rng)
    units = model.units(topology)
    runs = []
    for i in range(first_rep, first_rep + reps):
        seed = trace_seed_sequence(root, cfg.n_groups, i)
        stream = model.stream(topology, rng=np.random.default_rng(job_seed(seed, 0)))
        horizon = min(3.0 * cfg.t0_s, cfg.cap_s)
        while True:
            check_memory(_EVENT_BYTES * units * horizon / model.mean_s * 1.5,
                         f"a failure stream of {units:,} units over {horizon:.3g} s",
                         "a shorter job or fewer units")
            t, u = stream.until(horizon)
            ptr, groups = events_csr(u, ptr_u, groups_u)
            times_us = np.rint(t * US_PER_S).astype(np.int64)
            run = run_log_job(cfg, seed, (times_us, ptr, groups, np.full(t.size, -1, dtype=np.int64)))
            if run.raw_us[_tk.R_TTT] < round(horizon * US_PER_S) or horizon >= cfg.cap_s:
                break
            horizon = min(2.0 * horizon, cfg.cap_s)
        runs.append(run)
    return TTTResult(cfg, tuple(runs), root_text(root), first_rep)
