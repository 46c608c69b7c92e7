"""Parameter sweeps: a TOML spec -> tasks on dask (local cluster or a given scheduler) -> one xarray dataset.

The spec
--------
.. code-block:: toml

    [sweep]
    name = "masked_vs_r"        # dataset name (data/<name>.nc by default)
    quantity = "wipeout"        # "wipeout", "overhead" or "ttt"
    reps = 2000                 # replications per grid point
    block = 500                 # replications per task (does not change the results)
    seed = 2026                 # root seed

    [grid]                      # one dimension per swept parameter, in this order
    n_groups = [200, 600]
    r = [2, 4, 8]
    layout = ["cyclic", "sidon"]

    [fixed]                     # any other parameter of the quantity (see PARAMETERS)
    jitter_sd = 0.0

Reproducibility: replication ``i`` of grid point ``p`` (its index tuple) draws from
``SeedSequence(seed, spawn_key=(*p, i))`` whatever the task it falls in, so the dataset is identical for any
number of workers, block size or scheduling order. Finished tasks are written to ``<out>.parts/`` as they complete
(atomically); running the same spec again computes only the missing tasks, so an interrupted sweep (Ctrl-C, a
killed process) resumes where it stopped, and a lost worker's tasks are re-run by dask. dask is imported only in
this module, and only when a cluster is used.
"""

from __future__ import annotations

import datetime
import hashlib
import itertools
import json
import math
import os
import sys
import tomllib
from dataclasses import dataclass, field

import numpy as np

from . import __version__
from ._validation import UsageTypeError, UsageValueError, as_choice, as_int

__all__ = ["SweepSpec", "run_sweep", "write_dataset", "open_dataset", "QUANTITIES", "PARAMETERS", "OUTPUTS",
           "summarize"]

QUANTITIES = ("wipeout", "overhead", "ttt")

#: Parameters each quantity accepts (grid or fixed), with their defaults.
_FAILURE_PARAMS = {"failure_model": "uniform", "mtbf_s": 300.0, "shape": 0.78, "age_policy": "renew",
                   "domain_mtbf_s": None, "n_gpus": 600_000, "placement": "contiguous"}

PARAMETERS = {
    "wipeout": {"n_groups": None, "r": None, "layout": "cyclic", **_FAILURE_PARAMS},
    "overhead": {"n_groups": None, "r": None, "layout": "cyclic", **_FAILURE_PARAMS},
    "ttt": {"strategy": None, "n_groups": None, "r": None, "layout": "cyclic", "n_steps": 10_000,
            "compute_s": 64.0, "allreduce_s": None, "mtbf_s": 300.0, "shape": 0.78, "live_scaling": True,
            "restart_s": 3600.0, "save_s": 60.0, "ckpt_period_s": None, "ckpt_period_factor": 1.0,
            "shrink_s": 0.1, "rectlr_s": 0.1, "jitter_sd": 0.05, "max_wall_factor": 100.0,
            "failure_model": "system", "age_policy": "renew", "domain_mtbf_s": None, "n_gpus": 600_000,
            "placement": "contiguous"},
}

#: Failure models a sweep can name (parameter ``failure_model``): ``uniform`` (uniform order; wipeout/overhead only), ``system`` (system-level
#: Weibull renewal, rate proportional to live GPUs), ``per_gpu`` (per-GPU Weibull lifetimes), ``node``/``rack``/
#: ``power`` (failure domains with per-GPU background, ``domain_mtbf_s`` each). All share ``mtbf_s`` (full-system
#: MTBF) and ``shape``.
FAILURE_CHOICES = ("uniform", "system", "per_gpu", "node", "rack", "power")

#: Per-replication outputs: name -> (units, long name)
OUTPUTS = {
    "wipeout": {"T": ("1", "index of the failure causing the first wipe-out (1-based)"),
                "masked": ("1", "failures masked before the first wipe-out")},
    "overhead": {"T": ("1", "index of the wipe-out failure = epochs per trial"),
                 "masked": ("1", "failures masked before the first wipe-out"),
                 "sum_c": ("1", "sum over epochs of the stack-number lower bound c(k)"),
                 "sum_s": ("1", "sum over epochs of the measured stack number S*"),
                 "calls": ("1", "ReCtlr calls (masked failure events)"),
                 "phase0": ("1", "ReCtlr calls resolved by Phase 0 (HK-Fixed)"),
                 "moves": ("1", "shards moved into a top-S* window, summed over calls"),
                 "patch": ("1", "largest extra shards per survivor, summed over calls")},
    "ttt": {"ttt_over_t0": ("1", "time to train / T0"),
            "availability": ("1", "kept step time / wall clock"),
            "failures": ("1", "failures that killed a group"),
            "wipeouts": ("1", "global restarts"),
            "checkpoints": ("1", "checkpoints written"),
            "mean_s": ("1", "mean compute layers per executed step"),
            "finished": ("1", "1 if the job finished before the wall-clock cap")},
}


def _fmt_toml(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt_toml(x) for x in v) + "]"
    return repr(v)


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep specification (see the module docstring)."""

    name: str
    quantity: str
    grid: dict
    reps: int
    block: int
    seed: int
    fixed: dict = field(default_factory=dict)
    quick_reps: int | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or any(c in self.name for c in "/\\ "):
            raise UsageValueError(f"`sweep.name` must be a non-empty name without spaces or slashes, got {self.name!r}")
        q = as_choice(self.quantity, "sweep.quantity", QUANTITIES)
        as_int(self.reps, "sweep.reps", min_value=2)
        as_int(self.block, "sweep.block", min_value=1)
        as_int(self.seed, "sweep.seed", min_value=0)
        if self.quick_reps is not None:
            as_int(self.quick_reps, "sweep.quick_reps", min_value=2)
        if not isinstance(self.grid, dict) or not self.grid:
            raise UsageValueError("`grid` must name at least one parameter with a list of values")
        allowed = PARAMETERS[q]
        for table, params in (("grid", self.grid), ("fixed", self.fixed)):
            for key in params:
                if key not in allowed:
                    raise UsageValueError(f"unknown parameter `{table}.{key}` for quantity {q!r}; expected one of "
                                     f"{sorted(allowed)}")
        for key, values in self.grid.items():
            if not isinstance(values, list) or not values:
                raise UsageValueError(f"`grid.{key}` must be a non-empty list, got {values!r}")
            if len(set(map(repr, values))) != len(values):
                raise UsageValueError(f"`grid.{key}` must not repeat values, got {values}")
        both = set(self.grid) & set(self.fixed)
        if both:
            raise UsageValueError(f"parameters both swept and fixed: {sorted(both)}")
        missing = [k for k, d in allowed.items() if d is None and k not in self.grid and k not in self.fixed
                   and k not in ("allreduce_s", "ckpt_period_s", "domain_mtbf_s")]
        if missing:
            raise UsageValueError(f"quantity {q!r} needs {missing} in `grid` or `fixed`")

    # ------------------------------------------------------------------------------------------------ I/O
    @classmethod
    def from_toml(cls, text: str) -> "SweepSpec":
        """Parse and validate a TOML spec (the text, not a path)."""
        try:
            d = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise UsageValueError(f"the sweep spec is not valid TOML: {exc}") from None
        unknown = set(d) - {"sweep", "grid", "fixed"}
        if unknown:
            raise UsageValueError(f"unknown tables in the sweep spec: {sorted(unknown)} (expected sweep, grid, fixed)")
        s = dict(d.get("sweep", {}))
        for key in ("name", "quantity", "reps", "seed"):
            if key not in s:
                raise UsageValueError(f"`sweep.{key}` is required")
        extra = set(s) - {"name", "quantity", "reps", "block", "seed", "quick_reps"}
        if extra:
            raise UsageValueError(f"unknown keys in [sweep]: {sorted(extra)}")
        return cls(s["name"], s["quantity"], dict(d.get("grid", {})), s["reps"], s.get("block", s["reps"]),
                   s["seed"], dict(d.get("fixed", {})), s.get("quick_reps"))

    def quick(self) -> "SweepSpec":
        """The same sweep with ``quick_reps`` replications (a smoke-sized run)."""
        from dataclasses import replace

        reps = self.quick_reps or max(2, self.reps // 8)
        return replace(self, reps=reps, block=min(self.block, reps), quick_reps=None)

    @classmethod
    def from_file(cls, path) -> "SweepSpec":
        with open(path, encoding="utf-8") as fh:
            return cls.from_toml(fh.read())

    def to_toml(self) -> str:
        lines = ["[sweep]", f"name = {_fmt_toml(self.name)}", f"quantity = {_fmt_toml(self.quantity)}",
                 f"reps = {self.reps}", f"block = {self.block}", f"seed = {self.seed}", "", "[grid]"]
        lines += [f"{k} = {_fmt_toml(v)}" for k, v in self.grid.items()]
        if self.fixed:
            lines += ["", "[fixed]"] + [f"{k} = {_fmt_toml(v)}" for k, v in self.fixed.items()]
        return "\n".join(lines) + "\n"

    def digest(self) -> str:
        """Identity of the results: everything but the block size and the name."""
        d = {"quantity": self.quantity, "grid": self.grid, "fixed": self.fixed, "reps": self.reps, "seed": self.seed}
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]

    # ---------------------------------------------------------------------------------------------- tasks
    @property
    def dims(self) -> list:
        return list(self.grid)

    def points(self):
        """``(index tuple, parameter dict)`` for every grid point, in C order."""
        keys = self.dims
        for idx in itertools.product(*(range(len(self.grid[k])) for k in keys)):
            params = dict(PARAMETERS[self.quantity])
            params.update(self.fixed)
            params.update({k: self.grid[k][i] for k, i in zip(keys, idx)})
            yield idx, params

    def tasks(self) -> list:
        """``(task key, point index, params, rep_start, rep_stop)`` for every task."""
        out = []
        for idx, params in self.points():
            for a in range(0, self.reps, self.block):
                b = min(a + self.block, self.reps)
                key = "p" + "-".join(map(str, idx)) + f"_r{a}-{b}"
                out.append((key, idx, params, a, b))
        return out

    def check_points(self) -> None:
        """Build every grid point's model once so that invalid values fail before any work starts."""
        for idx, params in self.points():
            try:
                _model(self.quantity, params)
            except (ValueError, TypeError) as exc:
                where = ", ".join(f"{k}={params[k]!r}" for k in self.dims)
                raise type(exc)(f"grid point ({where}): {exc}") from None


# --------------------------------------------------------------------------------------------------- workers
def _failure_objects(params, n_groups, *, allow_uniform):
    """(failure model or None for uniform order / the timeline's system process, topology or None)."""
    from .failures import DomainFailures, PerGPU, SystemRenewal
    from .topology import Topology

    kind = as_choice(params.get("failure_model", "uniform"), "failure_model", FAILURE_CHOICES)
    if kind == "uniform":
        if not allow_uniform:
            raise UsageValueError("`failure_model` = 'uniform' has no clock; time to train needs 'system', 'per_gpu', "
                             "'node', 'rack' or 'power'")
        return None, None
    if kind == "system":
        return (SystemRenewal(params["mtbf_s"], params["shape"]) if allow_uniform else None), None
    topo = Topology(params["n_gpus"], n_groups, placement=params["placement"])
    bg = PerGPU.from_system_mtbf(params["mtbf_s"], params["n_gpus"], params["shape"], params["age_policy"])
    if kind == "per_gpu":
        return bg, topo
    if params.get("domain_mtbf_s") is None:
        raise UsageValueError(f"`domain_mtbf_s` is required with failure_model = {kind!r}")
    return DomainFailures(kind, params["domain_mtbf_s"], params["shape"], background=bg), topo


def _model(quantity, params):
    """The objects a task runs (validates the parameters)."""
    if quantity in ("wipeout", "overhead"):
        from .layouts import make_layout

        lay = make_layout(params["layout"], params["n_groups"], params["r"], rng=0)
        failures, topo = _failure_objects(params, params["n_groups"], allow_uniform=True)
        return lay, failures, topo
    from .timeline import TimelineConfig, theory_ckpt_period_s

    skip = ("strategy", "n_groups", "ckpt_period_factor", "failure_model", "age_policy", "domain_mtbf_s", "n_gpus",
            "placement")
    kw = {k: v for k, v in params.items() if k not in skip}
    failures, topo = _failure_objects(params, params["n_groups"], allow_uniform=False)
    cfg = TimelineConfig(params["strategy"], params["n_groups"], failures=failures, topology=topo, **kw)
    factor = float(params.get("ckpt_period_factor", 1.0))
    if not factor > 0:
        raise UsageValueError(f"`ckpt_period_factor` must be > 0, got {factor}")
    if params.get("ckpt_period_s") is None:
        from dataclasses import replace

        cfg = replace(cfg, ckpt_period_s=max(factor * theory_ckpt_period_s(cfg), 1.01 * cfg.save_s))
    return cfg


def run_task(quantity: str, seed: int, idx: tuple, params: dict, rep_start: int, rep_stop: int) -> dict:
    """Replications ``rep_start .. rep_stop - 1`` of one grid point: ``{output: array}``."""
    model = _model(quantity, params)
    n = rep_stop - rep_start
    outs = {name: np.empty(n) for name in OUTPUTS[quantity]}
    for j, i in enumerate(range(rep_start, rep_stop)):
        ss = np.random.SeedSequence(seed, spawn_key=(*idx, i))
        if quantity == "wipeout":
            from .survivability import wipeout_mc

            lay, failures, topo = model
            res = wipeout_mc(lay, 1, failures=failures, topology=topo, fresh_layout=params["layout"] == "random",
                             rng=ss)
            outs["T"][j] = res.T[0]
            outs["masked"][j] = res.dead_before[0]
        elif quantity == "overhead":
            from .reorder import overhead_mc

            lay, failures, topo = model
            res = overhead_mc(lay, 1, failures=failures, topology=topo, fresh_layout=params["layout"] == "random",
                              rng=ss)
            st = res.trial_stats
            outs["T"][j] = st["T"][0]
            outs["masked"][j] = st["dead_before"][0]
            for name in ("sum_c", "sum_s", "calls", "phase0", "moves", "patch"):
                outs[name][j] = st[name][0]
        else:
            from .timeline import run_timeline

            run = run_timeline(model, ss)
            outs["ttt_over_t0"][j] = run.ttt_s / model.t0_s if run.status == "ok" else math.nan
            outs["availability"][j] = run.availability if run.status == "ok" else math.nan
            outs["failures"][j] = run.failures
            outs["wipeouts"][j] = run.wipeouts
            outs["checkpoints"][j] = run.checkpoints
            outs["mean_s"][j] = run.mean_s
            outs["finished"][j] = 1.0 if run.status == "ok" else 0.0
    return outs


# --------------------------------------------------------------------------------------------------- storage
def _parts_dir(out_path) -> str:
    return str(out_path) + ".parts"


def _save_part(parts, key, result) -> None:
    tmp = os.path.join(parts, f".{key}.tmp.npz")
    np.savez(tmp, **result)
    os.replace(tmp, os.path.join(parts, f"{key}.npz"))


def _load_part(parts, key):
    path = os.path.join(parts, f"{key}.npz")
    if not os.path.exists(path):
        return None
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def write_dataset(ds, path) -> None:
    """Write a dataset to NetCDF (scipy engine, no extra dependency), atomically. Integer variables are stored as
    float64 or int32 (NetCDF-3 has no 64-bit integers); attributes must be strings or numbers."""
    ds = ds.copy()
    for name in list(ds.variables):
        if ds[name].dtype == np.int64:
            v = ds[name].values
            ds[name] = ds[name].astype(np.int32 if v.size == 0 or np.abs(v).max() < 2**31 else np.float64)
    tmp = str(path) + ".tmp"
    ds.to_netcdf(tmp, engine="scipy")
    os.replace(tmp, path)


def open_dataset(path):
    """Open (and load) a dataset written by :func:`write_dataset`."""
    import xarray as xr

    with xr.open_dataset(path, engine="scipy") as ds:
        return ds.load()


def summarize(ds, quantity: str | None = None):
    """Add ``<output>_mean``, ``_se``, ``_ci_low``, ``_ci_high`` (95% t interval over ``rep``, NaNs ignored)."""
    from scipy import stats as st

    quantity = quantity or ds.attrs["quantity"]
    for name, (units, long) in OUTPUTS[quantity].items():
        x = ds[name]
        n = x.notnull().sum("rep")
        mean = x.mean("rep", skipna=True)
        se = x.std("rep", ddof=1, skipna=True) / np.sqrt(n)
        h = st.t.ppf(0.975, np.maximum(n - 1, 1)) * se
        ds[f"{name}_mean"] = mean.assign_attrs(units=units, long_name=f"mean of: {long}")
        ds[f"{name}_se"] = se.assign_attrs(units=units, long_name=f"standard error of the mean of: {long}")
        ds[f"{name}_ci_low"] = (mean - h).assign_attrs(units=units, long_name=f"95% CI low of: {long}")
        ds[f"{name}_ci_high"] = (mean + h).assign_attrs(units=units, long_name=f"95% CI high of: {long}")
    return ds


def _assemble(spec: SweepSpec, results: dict):
    import xarray as xr

    shape = [len(spec.grid[k]) for k in spec.dims] + [spec.reps]
    data = {name: np.full(shape, np.nan) for name in OUTPUTS[spec.quantity]}
    for key, idx, _, a, b in spec.tasks():
        for name, arr in results[key].items():
            data[name][idx + (slice(a, b),)] = arr
    coords = {k: np.array(v) for k, v in spec.grid.items()}
    coords["rep"] = np.arange(spec.reps)
    ds = xr.Dataset({name: (spec.dims + ["rep"], arr, {"units": OUTPUTS[spec.quantity][name][0],
                                                     "long_name": OUTPUTS[spec.quantity][name][1]})
                     for name, arr in data.items()}, coords=coords)
    ds.attrs.update(name=spec.name, quantity=spec.quantity, spare_mc_version=__version__,
                    created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    root_seed=str(spec.seed), reps=spec.reps, spec=spec.to_toml(), spec_digest=spec.digest(),
                    seeding="replication i of grid point p: SeedSequence(root_seed, spawn_key=(*p, i))")
    ds.attrs.update({k: v for k, v in spec.fixed.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)})
    return summarize(ds, spec.quantity)


# ------------------------------------------------------------------------------------------------------- run
def run_sweep(spec: SweepSpec, out=None, *, scheduler: str | None = None, workers: int | None = None,
              progress: bool = True):
    """Run (or resume) a sweep and write its dataset; returns the dataset.

    Parameters
    ----------
    spec : SweepSpec
    out : path, optional
        Dataset file (default ``data/<name>.nc``); finished tasks live in ``<out>.parts/`` until the end.
    scheduler : str, optional
        Address of an existing dask scheduler (``tcp://host:port``). Default: a local cluster.
    workers : int, optional
        Local cluster size (worker processes with one thread each; default: the number of CPUs). ``0`` runs the
        tasks in this process without dask (for debugging; same results).
    """
    if not isinstance(spec, SweepSpec):
        raise UsageTypeError(f"`spec` must be a SweepSpec, got {type(spec).__name__}")
    if workers is not None:
        workers = as_int(workers, "workers", min_value=0)
    spec.check_points()  # every invalid value fails here, before any work
    out = os.path.join("data", f"{spec.name}.nc") if out is None else str(out)
    parts = _parts_dir(out)
    os.makedirs(parts, exist_ok=True)
    stamp = os.path.join(parts, "SPEC_DIGEST")
    if os.path.exists(stamp):
        with open(stamp) as fh:
            if fh.read().strip() != spec.digest():
                raise UsageValueError(f"{parts} holds results of a different spec; remove it or choose another `out`")
    else:
        with open(stamp, "w") as fh:
            fh.write(spec.digest())
    for leftover in os.listdir(parts):  # a part being written when the previous run was killed
        if leftover.startswith(".") and leftover.endswith(".tmp.npz"):
            os.remove(os.path.join(parts, leftover))
    tasks = spec.tasks()
    results = {}
    todo = []
    for t in tasks:
        got = _load_part(parts, t[0])
        if got is None:
            todo.append(t)
        else:
            results[t[0]] = got
    done0 = len(results)

    tty = sys.stderr.isatty()
    shown = [-1]

    def report(k):  # a progress bar on a terminal, a line per 10% otherwise
        if not progress:
            return
        tenth = (10 * k) // max(len(tasks), 1)
        if tty:
            bar = "#" * (30 * k // max(len(tasks), 1))
            print(f"\r[spare-mc sweep {spec.name}] [{bar:<30}] {k}/{len(tasks)} tasks", end="", file=sys.stderr,
                  flush=True)
        elif tenth != shown[0]:
            shown[0] = tenth
            print(f"[spare-mc sweep {spec.name}] {k}/{len(tasks)} tasks", file=sys.stderr, flush=True)

    report(done0)
    if todo and workers == 0 and scheduler is None:
        for key, idx, params, a, b in todo:
            res = run_task(spec.quantity, spec.seed, idx, params, a, b)
            _save_part(parts, key, res)
            results[key] = res
            report(len(results))
    elif todo:
        from distributed import Client, LocalCluster, as_completed

        cluster = None
        if scheduler is None:
            cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=40)
            client = Client(cluster)
        else:
            client = Client(scheduler)
        try:
            futures = [client.submit(run_task, spec.quantity, spec.seed, idx, params, a, b, key=f"{spec.digest()}-{key}",
                                     pure=False, retries=3) for key, idx, params, a, b in todo]
            by_key = {f.key: t[0] for f, t in zip(futures, todo)}
            for fut in as_completed(futures):
                key = by_key[fut.key]
                res = fut.result()
                _save_part(parts, key, res)
                results[key] = res
                report(len(results))
                fut.release()
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    if progress and tty:
        print(file=sys.stderr)
    ds = _assemble(spec, results)
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    write_dataset(ds, out)
    return ds


# ------------------------------------------------------------------------------------------------- analysis
def compare_dataset(ds, *, alpha: float = 1e-3) -> list:
    """Compare every grid point with its exact value, with a Holm-Bonferroni correction across the grid.

    ``wipeout``: mean ``T`` vs the exact law (cyclic unit stride, random holders, block); ``overhead``: the
    per-epoch lower bound ``sum c(k) / T`` vs :func:`spare_mc.exact_stack_bound_sum`. Points without an exact
    value (Sidon layouts, time to train) are listed with ``reference = None``. Returns rows (dicts) with the
    estimate, its 95% CI, the reference, relative error, z, p, the Holm-adjusted p-value and ``consistent``
    (adjusted p >= alpha).
    """
    from .exact import EXACT_LAYOUTS, exact_wipeout
    from .reorder import exact_stack_bound_sum
    from .stats import estimate_mean, ratio_estimate

    quantity = ds.attrs["quantity"]
    dims = [d for d in ds["T"].dims if d != "rep"] if "T" in ds else [d for d in ds[next(iter(OUTPUTS[quantity]))].dims
                                                                      if d != "rep"]
    fixed = SweepSpec.from_toml(ds.attrs["spec"]).fixed
    rows = []
    for idx in itertools.product(*(range(ds.sizes[d]) for d in dims)):
        sel = {d: ds[d].values[i] for d, i in zip(dims, idx)}
        point = {**fixed, **{k: (v.item() if hasattr(v, "item") else v) for k, v in sel.items()}}
        sub = ds.isel({d: i for d, i in zip(dims, idx)})
        row = {"point": point, "reference": None}
        layout = point.get("layout", "cyclic")
        if quantity == "wipeout":
            est = estimate_mean(sub["T"].values, name="T")
            if layout in EXACT_LAYOUTS:
                row["reference"] = exact_wipeout(layout, point["n_groups"], point["r"]).mean
        elif quantity == "overhead":
            est = ratio_estimate(sub["sum_c"].values, sub["T"].values, name="c_mean")
            if layout in EXACT_LAYOUTS:
                row["reference"] = exact_stack_bound_sum(layout, point["n_groups"], point["r"])[2]
        else:
            v = sub["ttt_over_t0"].values
            est = estimate_mean(v[np.isfinite(v)], name="ttt_over_t0") if np.isfinite(v).sum() >= 2 else None
        row["quantity"] = est.name if est is not None else "ttt_over_t0"
        row["estimate"] = None if est is None else est.mean
        row["ci95"] = None if est is None else list(est.ci)
        if row["reference"] is not None:
            from .stats import compare

            c = compare(est, row["reference"], alpha=alpha)
            row.update(rel_error=c.rel_error, z=c.z, p_value=c.p_value)
        rows.append(row)
    tested = [r for r in rows if "p_value" in r]
    m = len(tested)
    running = 0.0
    for rank, r in enumerate(sorted(tested, key=lambda r: r["p_value"])):  # Holm step-down
        running = max(running, min(1.0, (m - rank) * r["p_value"]))
        r["p_holm"] = running
        r["consistent"] = bool(running >= alpha)
    return rows
