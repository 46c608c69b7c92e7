"""The tasks of a sweep: what one task computes (:func:`run_task`: replications of one grid point), the checks a
finished task's values must pass (:func:`part_check`) and the tasks' results assembled into the dataset.

Reproducibility: replication ``i`` at ``N`` groups draws from ``SeedSequence(seed, spawn_key=(N, i))`` whatever the
task (:mod:`spare_mc.sweep.spec`).
"""

from __future__ import annotations

import datetime
import json

import numpy as np

from .._lib.provenance import SCHEMA_VERSION, software_versions
from .._lib.seeding import trace_seed_sequence
from .._lib.version import __version__
from ..mc.reorder import overhead_mc
from ..mc.survivability import uniform_order_kernel, wipeout_mc
from ..model.failures import UniformOrder
from ..ttt.run import needs_extended, run_timeline
from .spec import SweepSpec, point_model
from .storage import OUTPUTS, summarize

__all__ = ["assemble_dataset", "kernel_key", "part_check", "run_task"]


def run_task(quantity: str, seed: int, idx: tuple, params: dict, rep_start: int, rep_stop: int,
             lenient: tuple = ()) -> dict:
    """Replications ``rep_start .. rep_stop - 1`` of one grid point: ``{output: float array}``.

    Replication ``i`` draws from ``SeedSequence(seed, spawn_key=(n_groups, i))`` (``idx``, the point's position in
    the grid, does not enter the seed).
    """
    model = point_model(quantity, params, lenient, check_layout=False)  # checked before the sweep (check_points)
    root = np.random.SeedSequence(seed)
    n = rep_stop - rep_start
    outs = {name: np.empty(n) for name in OUTPUTS[quantity]}
    for j, i in enumerate(range(rep_start, rep_stop)):
        ss = trace_seed_sequence(root, params["n_groups"], i)
        if quantity == "wipeout":

            lay, failures, topo = model
            res = wipeout_mc(lay, 1, failures=failures, topology=topo, fresh_layout=params["layout"] == "random",
                             rng=ss)
            outs["T"][j] = res.T[0]
            outs["masked"][j] = res.dead_before[0]
        elif quantity == "overhead":

            lay, failures, topo = model
            res = overhead_mc(lay, 1, failures=failures, topology=topo, fresh_layout=params["layout"] == "random",
                              rng=ss)
            st = res.rep_stats
            outs["T"][j] = st["T"][0]
            outs["masked"][j] = st["dead_before"][0]
            for name in ("sum_c", "sum_s", "calls", "phase0", "moves", "patch"):
                outs[name][j] = st[name][0]
        else:

            run = run_timeline(model, ss)
            outs["ttt_over_t0"][j] = min(run.ttt_s, model.cap_s) / model.t0_s
            outs["availability"][j] = run.availability
            outs["failures"][j] = run.failures
            outs["wipeouts"][j] = run.wipeouts
            outs["checkpoints"][j] = run.checkpoints
            outs["mean_s"][j] = run.mean_s
            outs["finished"][j] = 1.0 if run.status == "ok" else 0.0
            outs["memory_restarts"][j] = run.memory_restarts
            outs["remote_fallbacks"][j] = run.remote_fallbacks
            outs["async_slowdown_s"][j] = run.async_slowdown_s
    return outs


def kernel_key(quantity: str, params: dict, lenient: tuple = ()) -> str:
    """Which compiled kernel the tasks of a grid point run, as far as the point's numeric values choose it.

    Numeric values change no compiled type, but some choose the kernel: ``N`` and ``r`` choose among the six
    wipe-out kernels of uniform failure order. :func:`spare_mc.sweep.warm.warm_up` runs one point per combination
    of this key and the point's non-numeric parameters, so that it compiles every kernel the sweep runs.

    Parameters
    ----------
    quantity : {"wipeout", "overhead", "ttt"}
    params : dict
        The point's parameter values (:meth:`~spare_mc.sweep.spec.SweepSpec.points`), checked before the sweep
        (:meth:`~spare_mc.sweep.spec.SweepSpec.check_points`).
    lenient : tuple
        The spec's :attr:`~spare_mc.sweep.spec.SweepSpec.lenient`.

    Returns
    -------
    str
        ``"wipeout"``: :func:`~spare_mc.mc.survivability.uniform_order_kernel`'s answer under uniform failure order,
        else ``"events"`` (failures drawn in time); ``"overhead"``: ``"uniform"`` or ``"events"`` (ReCtlr's two
        Monte Carlo drivers); ``"ttt"``: the timeline's variant, ``"basic"`` or ``"extended"``
        (:func:`~spare_mc.ttt.run.needs_extended`).

    Examples
    --------
    >>> base = {"layout": "cyclic", "failure_model": "uniform", "mtbf_s": None, "shape": 1.0}
    >>> [kernel_key("wipeout", {**base, "n_groups": n, "r": r}) for n, r in ((600, 2), (600, 8), (12, 3))]
    ['cyclic-unit', 'cyclic-window', 'cyclic-window']
    """
    model = point_model(quantity, params, lenient, check_layout=False, draw_random=False)
    if quantity == "ttt":
        return "extended" if needs_extended(model) else "basic"
    lay, failures, _ = model
    uniform = failures is None or isinstance(failures, UniformOrder)
    if quantity == "overhead":
        return "uniform" if uniform else "events"
    if not uniform:
        return "events"
    return uniform_order_kernel(lay, "auto", params["layout"] == "random",
                                failures is not None and failures.with_replacement)


def assemble_dataset(spec: SweepSpec, results: dict):
    """The dataset of ``spec`` from its tasks' results (``{task key: {output: array}}``), with its provenance
    attributes and summaries (:func:`spare_mc.sweep.storage.summarize`)."""
    shape = [len(spec.dim_values(k)) for k in spec.dims] + [spec.reps]
    data = {name: np.full(shape, np.nan) for name in OUTPUTS[spec.quantity]}
    for key, idx, _, a, b in spec.tasks():
        for name, arr in results[key].items():
            data[name][idx + (slice(a - spec.first_rep, b - spec.first_rep),)] = arr
    coords = {k: np.array(spec.dim_values(k)) for k in spec.dims}
    coords["rep"] = np.arange(spec.first_rep, spec.first_rep + spec.reps)
    import xarray as xr  # here, not at the top: it and pandas take 0.4 s to import
    ds = xr.Dataset({name: (spec.dims + ["rep"], arr, {"units": OUTPUTS[spec.quantity][name][0],
                                                     "long_name": OUTPUTS[spec.quantity][name][1]})
                     for name, arr in data.items()}, coords=coords)
    ds.attrs.update(name=spec.name, quantity=spec.quantity, schema_version=SCHEMA_VERSION,
                    spare_mc_version=__version__,
                    software=json.dumps(software_versions(), sort_keys=True),
                    created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    root_seed=str(spec.seed), reps=spec.reps, spec=spec.to_toml(), spec_digest=spec.digest(),
                    seeding="replication i at N groups: SeedSequence(root_seed, spawn_key=(N, i))")
    if spec.quantity == "ttt":
        ds.attrs["censoring"] = ("a run that hits the wall-clock cap enters ttt_over_t0 at the cap (finished = 0): "
                                 "ttt_over_t0_mean is the restricted mean, a lower bound where finished_mean < 1")
    ds.attrs.update({k: v for k, v in spec.fixed.items()
                     if isinstance(v, (str, int, float)) and not isinstance(v, bool)})
    return summarize(ds, spec.quantity)


#: Outputs that count things (integers).
_COUNTS = {"T", "masked", "sum_c", "sum_s", "calls", "phase0", "moves", "patch", "failures", "wipeouts",
           "checkpoints", "finished", "memory_restarts", "remote_fallbacks"}


def part_check(quantity, params):
    """A part's values must be possible: finite, in their support, integers for counts, ``T <= N``."""
    def check(data):
        for name, (_, _, support) in OUTPUTS[quantity].items():
            v = data[name]
            if not np.isfinite(v).all():
                return f"{name!r} is not finite"
            if support in ("nonnegative", "unit") and (v < 0).any():
                return f"{name!r} is negative"
            if support == "unit" and (v > 1).any():
                return f"{name!r} exceeds 1"
            if name in _COUNTS and (v != np.round(v)).any():
                return f"{name!r} is not an integer count"
        if quantity != "ttt" and ((data["T"] < 1) | (data["T"] > params["n_groups"])).any():
            return f"'T' outside 1..N={params['n_groups']}"
        return None

    return check
