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

The parameters of a ``ttt`` sweep are the fields of :class:`spare_mc.TimelineConfig` (with the same defaults and
meanings; ``ckpt_period_factor`` multiplies the theory period) plus the failure-model parameters of
:func:`spare_mc.model.failures.failure_from_spec` (``failure_model``, ``age_policy``, ``domain_mtbf_s``, ``n_gpus``,
``placement``, ``calibration``, ``domain_levels``: the levels of ``failure_model = "mixed"``, e.g. ``"node,rack=3e7"``).

Reproducibility: replication ``i`` at ``N`` groups draws from ``SeedSequence(seed, spawn_key=(N, i))`` whatever the
task, the grid point or the position in the grid -- the convention of :func:`spare_mc.simulate_ttt` -- so the dataset
is identical for any number of workers, block size or scheduling order, every grid point at one ``N`` sees the same
failures (common random numbers), and a ``ttt`` grid point has exactly the numbers ``simulate_ttt(cfg, reps,
rng=seed)`` and ``spare-mc ttt --seed`` give.

Safety (see :mod:`spare_mc.sweep.storage`): the output is checked before any work (a directory, or an existing file that
is not this sweep's output, is refused unless ``force``; this sweep's own up-to-date output is returned as is);
the number of tasks and the dataset's memory are checked against the limits of :mod:`spare_mc.options`; finished
tasks are written atomically to ``<out>.parts/<digest>/`` as they complete, so an interrupted sweep (Ctrl-C, a killed
process, a lost worker) resumes where it stopped; parts are validated when read and never adopted from another
spec, seed or version; one sweep at a time writes one output. dask is imported only in this module, and only when a
cluster is used.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime
import hashlib
import itertools
import json
import math
import os
import re
import socket
import sys
import time
from dataclasses import MISSING, dataclass, field, fields, replace

import numpy as np
import tomllib
import xarray as xr

from .._lib.provenance import SCHEMA_VERSION, code_digest, software_versions
from .._lib.resources import ResourceLimitError, check_local_workers, check_memory
from .._lib.seeding import trace_seed_sequence, warn_old_access
from .._lib.validation import UsageError, UsageTypeError, UsageValueError, as_choice, as_int, reject_unknown
from .._lib.version import __version__
from ..mc.reorder import overhead_mc
from ..mc.survivability import wipeout_mc
from ..model.failures import FAILURE_KINDS, failure_from_spec
from ..model.kinds import make_layout
from ..options import get_options
from ..stats import compare, estimate_mean
from ..theory.exact import EXACT_LAYOUTS, exact_wipeout
from ..ttt.config import TimelineConfig, applicable
from ..ttt.run import run_timeline
from .storage import (OPTIONAL_OUTPUTS, OUTPUTS, QUANTITIES, CorruptDataset, PartsStore, check_regular_target,
                      open_dataset, summarize, sweep_writing, write_dataset)

__all__ = ["SweepSpec", "run_sweep", "open_sweep_dataset", "compare_dataset", "DatasetComparison", "PointComparison",
           "QUANTITIES", "PARAMETERS", "OUTPUTS", "FAILURE_CHOICES", "WorkersLost", "NO_WORKER_TIMEOUT_S"]

FAILURE_CHOICES = FAILURE_KINDS

_TC_DEFAULTS = {f.name: (None if f.default is MISSING else f.default) for f in fields(TimelineConfig)}
#: Failure-model parameters: ``None`` = the default of :data:`spare_mc.model.failures.FAILURE_SPEC_DEFAULTS`.
_FAILURE_PARAMS = {"age_policy": None, "domain_mtbf_s": None, "n_gpus": None, "placement": None, "calibration": None,
                   "domain_levels": None}

#: Parameters each quantity accepts (grid or fixed), with their defaults (``None`` for required ones and for
#: optional ones whose default is computed). ``ttt`` is derived from :class:`TimelineConfig`'s fields.
PARAMETERS = {
    "wipeout": {"n_groups": None, "r": None, "layout": "cyclic", "failure_model": "uniform",
                "mtbf_s": _TC_DEFAULTS["mtbf_s"], "shape": _TC_DEFAULTS["shape"], **_FAILURE_PARAMS},
    "overhead": {"n_groups": None, "r": None, "layout": "cyclic", "failure_model": "uniform",
                 "mtbf_s": _TC_DEFAULTS["mtbf_s"], "shape": _TC_DEFAULTS["shape"], **_FAILURE_PARAMS},
    "ttt": {**{f.name: _TC_DEFAULTS[f.name] for f in fields(TimelineConfig) if f.metadata.get("sweep")},
            "failure_model": "system", **_FAILURE_PARAMS},
}
_REQUIRED = {"wipeout": ("n_groups", "r"), "overhead": ("n_groups", "r"), "ttt": ("strategy", "n_groups")}



def _fmt_toml(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt_toml(x) for x in v) + "]"
    return repr(v)


def _plain(v):
    """A TOML/JSON-safe plain Python value (numpy scalars converted)."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def _value_key(v):
    """A grid value's identity: numbers by their value (300 == 300.0), booleans and strings by themselves."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return (type(v).__name__, repr(v))
    return ("number", float(v))


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
    variants: dict = field(default_factory=dict)
    first_rep: int = 0

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or any(c in self.name for c in "/\\ "):
            raise UsageValueError(f"`sweep.name` must be a non-empty name without spaces or slashes, got "
                                  f"{self.name!r}")
        q = as_choice(self.quantity, "sweep.quantity", QUANTITIES)
        object.__setattr__(self, "reps", as_int(self.reps, "sweep.reps", min_value=2))
        object.__setattr__(self, "block", as_int(self.block, "sweep.block", min_value=1))
        object.__setattr__(self, "seed", as_int(self.seed, "sweep.seed", min_value=0))
        if self.quick_reps is not None:
            object.__setattr__(self, "quick_reps", as_int(self.quick_reps, "sweep.quick_reps", min_value=2))
        object.__setattr__(self, "first_rep", as_int(self.first_rep, "sweep.first_rep", min_value=0))
        if not isinstance(self.variants, dict):
            raise UsageTypeError(f"`variants` must be a table of named parameter tables, got "
                                 f"{type(self.variants).__name__}")
        if not isinstance(self.grid, dict) or not (self.grid or self.variants):
            raise UsageValueError("`grid` must name at least one parameter with a list of values (or give "
                                  "[variants])")
        if not isinstance(self.fixed, dict):
            raise UsageTypeError(f"`fixed` must be a table of parameters, got {type(self.fixed).__name__}")
        object.__setattr__(self, "grid", {k: _plain(v) for k, v in self.grid.items()})
        object.__setattr__(self, "fixed", {k: _plain(v) for k, v in self.fixed.items()})
        for vname, over in self.variants.items():
            if not isinstance(vname, str) or not vname:
                raise UsageValueError(f"variant names must be non-empty strings, got {vname!r}")
            if not isinstance(over, dict):
                raise UsageTypeError(f"`variants.{vname}` must be a table of parameters, got {type(over).__name__}")
            clash = set(over) & set(self.grid)
            if clash:
                raise UsageValueError(f"`variants.{vname}` sets {sorted(clash)}, which are swept in `grid`")
        object.__setattr__(self, "variants", {k: {p: _plain(v) for p, v in over.items()}
                                              for k, over in self.variants.items()})
        allowed = PARAMETERS[q]
        tables = [("grid", self.grid), ("fixed", self.fixed)]
        tables += [(f"variants.{k}", v) for k, v in self.variants.items()]
        for table, params in tables:
            for key in params:
                if key not in allowed:
                    raise UsageValueError(f"unknown parameter `{table}.{key}` for quantity {q!r}; expected one of "
                                          f"{sorted(allowed)}")
        for key, values in self.grid.items():
            if not isinstance(values, list) or not values:
                raise UsageValueError(f"`grid.{key}` must be a non-empty list, got {values!r}")
            seen = {}
            for v in values:
                if _value_key(v) in seen:
                    first = seen[_value_key(v)]
                    same = (f"{v!r} appears twice" if type(first) is type(v) and first == v else
                            f"{first!r} and {v!r} are one value")
                    raise UsageValueError(f"`grid.{key}` must not repeat values ({same}), got {values}")
                seen[_value_key(v)] = v
        both = set(self.grid) & set(self.fixed)
        if both:
            raise UsageValueError(f"parameters both swept and fixed: {sorted(both)}")
        missing = [k for k in _REQUIRED[q] if k not in self.grid and k not in self.fixed
                   and not (self.variants and all(k in v for v in self.variants.values()))]
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
        reject_unknown(d, ("sweep", "grid", "fixed", "variants"), "the sweep spec", noun="tables")
        for table in ("sweep", "grid", "fixed", "variants"):  # `grid = 3` at the top is a key, not a table
            if table in d and not isinstance(d[table], dict):
                raise UsageValueError(f"`{table}` must be a table ([{table}] on a line of its own, then its keys), "
                                      f"got a {type(d[table]).__name__} value: {d[table]!r}")
        s = dict(d.get("sweep", {}))
        for key in ("name", "quantity", "reps", "seed"):
            if key not in s:
                raise UsageValueError(f"`sweep.{key}` is required")
        reject_unknown(s, ("name", "quantity", "reps", "block", "seed", "quick_reps", "first_rep"), "[sweep]")
        return cls(s["name"], s["quantity"], dict(d.get("grid", {})), s["reps"], s.get("block", s["reps"]),
                   s["seed"], dict(d.get("fixed", {})), s.get("quick_reps"), dict(d.get("variants", {})),
                   s.get("first_rep", 0))

    def quick(self) -> "SweepSpec":
        """The same sweep with ``quick_reps`` replications (a smoke-sized run)."""
        reps = self.quick_reps or max(2, self.reps // 8)
        return replace(self, reps=reps, block=min(self.block, reps), quick_reps=None)

    @classmethod
    def from_file(cls, path) -> "SweepSpec":
        """Read and validate a spec file (a clear error for a missing file, a directory or bad text)."""
        path = os.fspath(path)
        if not os.path.exists(path):
            raise UsageValueError(f"sweep spec file not found: {path}")
        if os.path.isdir(path):
            raise UsageValueError(f"the sweep spec {path} is a directory; give a TOML file")
        if not os.path.isfile(path):  # a FIFO or a device would block the read, or never end
            raise UsageValueError(f"the sweep spec {path} is not a regular file; give a TOML file")
        # utf-8-sig: a byte-order mark (as some Windows editors write) is not TOML's business
        with open(path, encoding="utf-8-sig") as fh:
            try:
                text = fh.read()
            except UnicodeDecodeError:
                raise UsageValueError(f"the sweep spec {path} is not a text (TOML) file") from None
        try:
            return cls.from_toml(text)
        except UsageError as exc:
            raise type(exc)(f"{path}: {exc}") from None

    def to_toml(self) -> str:
        lines = ["[sweep]", f"name = {_fmt_toml(self.name)}", f"quantity = {_fmt_toml(self.quantity)}",
                 f"reps = {self.reps}", f"block = {self.block}", f"seed = {self.seed}"]
        if self.first_rep:
            lines.append(f"first_rep = {self.first_rep}")
        lines += ["", "[grid]"] + [f"{k} = {_fmt_toml(v)}" for k, v in self.grid.items()]
        if self.fixed:
            lines += ["", "[fixed]"] + [f"{k} = {_fmt_toml(v)}" for k, v in self.fixed.items()]
        for vname, over in self.variants.items():
            lines += ["", f"[variants.{_fmt_toml(vname)}]"] + [f"{k} = {_fmt_toml(v)}" for k, v in over.items()]
        return "\n".join(lines) + "\n"

    def digest(self, *, legacy: bool = False) -> str:
        """Identity of the results: everything the numbers depend on, including the spare_mc and schema versions
        (not the block size, which changes nothing, nor the name).

        The grid's order is part of it: the dataset's dimensions follow it and finished tasks are stored by their
        position in it, so two specs that list the same grid keys in another order must not share parts. A grid
        whose keys are in sorted order keeps the digest it had before the order was recorded; ``legacy=True`` gives
        that older digest for any grid (it ignored the order: see :func:`_check_output`)."""
        d = {"quantity": self.quantity, "grid": self.grid, "fixed": self.fixed, "reps": self.reps, "seed": self.seed,
             "spare_mc": __version__, "schema_version": SCHEMA_VERSION}
        if self.variants or self.first_rep:  # (absent from older digests, which stay valid)
            d.update(variants=[[k, v] for k, v in self.variants.items()], first_rep=self.first_rep)
        if not legacy and list(self.grid) != sorted(self.grid):  # json's sort_keys would lose the order
            d["grid_order"] = list(self.grid)
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]

    # ---------------------------------------------------------------------------------------------- tasks
    @property
    def dims(self) -> list:
        """The dataset's dimensions besides ``rep``: ``variant`` (if any variants) then the grid's."""
        return (["variant"] if self.variants else []) + list(self.grid)

    def dim_values(self, dim) -> list:
        return list(self.variants) if dim == "variant" else self.grid[dim]

    @property
    def n_points(self) -> int:
        return math.prod(len(self.dim_values(d)) for d in self.dims)

    @property
    def n_tasks(self) -> int:
        return self.n_points * -(-self.reps // self.block)

    def points(self):
        """``(index tuple, parameter dict)`` for every point, in C order over :attr:`dims`: the quantity's
        defaults, then ``fixed``, then the point's variant, then its grid values."""
        keys = self.dims
        for idx in itertools.product(*(range(len(self.dim_values(k))) for k in keys)):
            params = dict(PARAMETERS[self.quantity])
            params.update(self.fixed)
            for k, i in zip(keys, idx):
                if k == "variant":
                    params.update(self.variants[self.dim_values(k)[i]])
                else:
                    params[k] = self.grid[k][i]
            yield idx, params

    def tasks(self) -> list:
        """``(task key, point index, params, rep_start, rep_stop)`` for every task; replications are numbered
        ``first_rep .. first_rep + reps - 1`` (their seeds follow these numbers)."""
        out = []
        lo, hi = self.first_rep, self.first_rep + self.reps
        for idx, params in self.points():
            for a in range(lo, hi, self.block):
                b = min(a + self.block, hi)
                out.append((_task_key(idx, a, b), idx, params, a, b))
        return out

    def varies(self, name) -> bool:
        """Whether the parameter ``name`` changes from one point to another (swept, or set by a variant)."""
        return name in self.grid or any(name in v for v in self.variants.values())

    @property
    def lenient(self) -> tuple:
        """The varying parameters that make others inapplicable at some points (the failure model, the strategy,
        the restart growth): there an option that does not apply is validated but ignored instead of refused."""
        return tuple(name for name in ("failure_model", "strategy", "restart_growth") if self.varies(name))

    def check_resources(self) -> None:
        """Refuse, before any work, a sweep with more tasks than ``max_tasks`` or a dataset beyond the memory
        budget (:mod:`spare_mc.options`)."""
        limit = get_options()["max_tasks"]
        if self.n_tasks > limit:
            raise ResourceLimitError(
                f"the sweep {self.name!r} has {self.n_tasks:,} tasks ({self.n_points:,} grid points x "
                f"{-(-self.reps // self.block)} blocks of {self.block} replications), more than the limit of "
                f"{limit:,} (each task is one part file): raise `sweep.block`, shrink the grid, or raise the limit "
                f"(spare_mc.set_options(max_tasks=...) or `spare-mc sweep --max-tasks N`)")
        n_out = len(OUTPUTS[self.quantity])
        check_memory(self.n_points * self.reps * n_out * 8 * 2, f"the dataset of sweep {self.name!r} "
                     f"({self.n_points:,} grid points x {self.reps:,} replications x {n_out} outputs)",
                     "fewer replications or grid points")

    def check_points(self) -> None:
        """Build every grid point's model once so that invalid values fail before any work starts."""
        for idx, params in self.points():
            try:
                _model(self.quantity, params, self.lenient)
            except UsageError as exc:
                where = ", ".join(f"{k}={self.dim_values(k)[i]!r}" for k, i in zip(self.dims, idx))
                hint = ("; an option that applies to some grid values only belongs in a [variants] table"
                        if "has no effect" in str(exc) else "")
                raise type(exc)(f"grid point ({where}): {exc}{hint}") from None


# --------------------------------------------------------------------------------------------------- workers
def _failure_objects(params, n_groups, *, clocked, strict=True):
    """(failure model or None, topology or None) of a point (:func:`spare_mc.model.failures.failure_from_spec`).

    ``strict=False`` (a grid over ``failure_model``): parameters that only some of the swept models use are
    validated but ignored where they have no effect.
    """

    kind = params.get("failure_model")
    extra = {k: params.get(k) for k in _FAILURE_PARAMS}
    if not strict and kind in ("uniform", "system"):
        if extra["n_gpus"] is not None:
            as_int(extra["n_gpus"], "n_gpus", min_value=n_groups)
        extra = dict.fromkeys(extra)
    elif not strict and kind == "per_gpu":
        extra["domain_mtbf_s"] = extra["placement"] = extra["domain_levels"] = None
    elif not strict and kind == "mixed":
        extra["domain_mtbf_s"] = None
    elif not strict:
        extra["domain_levels"] = None
    return failure_from_spec(kind, n_groups, mtbf_s=params["mtbf_s"], shape=params["shape"], clocked=clocked,
                             **extra)


def _model(quantity, params, lenient=()):
    """The objects a task runs (validates the parameters; ``lenient``: see :attr:`SweepSpec.lenient`)."""
    strict = "failure_model" not in lenient
    if quantity in ("wipeout", "overhead"):

        lay = make_layout(params["layout"], params["n_groups"], params["r"], rng=0)
        failures, topo = _failure_objects(params, params["n_groups"], clocked=False, strict=strict)
        return lay, failures, topo
    kw = {k: v for k, v in params.items() if k in _TC_DEFAULTS}
    if "strategy" in lenient:  # an option of another strategy is ignored at this point
        kw = applicable(kw, params["strategy"])
    if "restart_growth" in lenient and kw.get("restart_growth", "constant") == "constant" \
            and "restart_ref_groups" in kw:  # the reference N of the points whose restart time grows
        as_int(kw.pop("restart_ref_groups"), "restart_ref_groups", min_value=1)
    failures, topo = _failure_objects(params, params["n_groups"], clocked=True, strict=strict)
    cfg = TimelineConfig(failures=failures, topology=topo, **kw)
    if cfg.repair == "log":
        raise UsageValueError("`repair`='log' takes each group's repair time from a failure log "
                              "(spare_mc.replay_log_ttt); a sweep samples its failures: use 'fixed' or 'lognormal'")
    # an impossible layout (e.g. Sidon offsets that do not exist) fails here, before any work (random holders are
    # drawn per job from its seed; one draw checks the parameters)
    cfg.layout_object(rng=0 if cfg.layout == "random" else None)
    return cfg


def run_task(quantity: str, seed: int, idx: tuple, params: dict, rep_start: int, rep_stop: int,
             lenient: tuple = ()) -> dict:
    """Replications ``rep_start .. rep_stop - 1`` of one grid point: ``{output: float array}``.

    Replication ``i`` draws from ``SeedSequence(seed, spawn_key=(n_groups, i))`` (``idx``, the point's position in
    the grid, does not enter the seed).
    """
    model = _model(quantity, params, lenient)
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


def _assemble(spec: SweepSpec, results: dict):

    shape = [len(spec.dim_values(k)) for k in spec.dims] + [spec.reps]
    data = {name: np.full(shape, np.nan) for name in OUTPUTS[spec.quantity]}
    for key, idx, _, a, b in spec.tasks():
        for name, arr in results[key].items():
            data[name][idx + (slice(a - spec.first_rep, b - spec.first_rep),)] = arr
    coords = {k: np.array(spec.dim_values(k)) for k in spec.dims}
    coords["rep"] = np.arange(spec.first_rep, spec.first_rep + spec.reps)
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


# ------------------------------------------------------------------------------------------------------- run
_PROBE = """
import sys
from distributed import Client
with Client(sys.argv[1], timeout="8s", set_as_default=False) as c:
    print(c.scheduler_info()["type"])
"""


def _check_scheduler(address: str) -> None:
    """Fail fast (one line) when a dask scheduler address is malformed, unreachable, or not a dask scheduler: a
    TCP connection within 5 s, then a dask handshake within 10 s, run in a child process so that whatever answers
    cannot crash or hang this one."""
    if not isinstance(address, str) or "://" not in address:
        raise UsageValueError(f"`scheduler` must be an address like tcp://host:8786, got {address!r}")
    hostport = address.split("://", 1)[1]
    host, _, port = hostport.rpartition(":")
    try:
        port = int(port)
    except ValueError:
        raise UsageValueError(f"`scheduler` must end with a port number (tcp://host:8786), got {address!r}") from None
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", port), timeout=5):
            pass
    except OSError as exc:  # the network refused: an environment error, not a usage error
        raise ConnectionError(f"cannot reach the dask scheduler at {address}: {exc.strerror or exc}") from None
    import subprocess

    try:
        probe = subprocess.run([sys.executable, "-c", _PROBE, address], capture_output=True, text=True, timeout=15)
        ok = probe.returncode == 0 and probe.stdout.strip() == "Scheduler"
        why = (probe.stderr.strip().splitlines() or ["no answer"])[-1][:160]
    except subprocess.TimeoutExpired:
        ok, why = False, "no dask handshake within 15 s"
    if not ok:
        raise ConnectionError(f"{address} does not answer as a dask scheduler ({why})")


def _check_output(out: str, spec: SweepSpec, force: bool, say=None):
    """Before any work: refuse a directory or an unwritable place, and an existing file that is not this sweep's
    output (unless ``force``). Returns the existing dataset when it is this sweep's up-to-date output (read-only
    places included: nothing is written then). ``say`` (a :class:`_Progress`) gets the warnings: the caller
    checks twice, before and under the output's lock, and warns once."""
    if os.path.isdir(out) or out.endswith(tuple(x for x in (os.sep, os.altsep) if x)):
        raise UsageValueError(f"`out` {out} is a directory; give the dataset's file name (e.g. "
                              f"{os.path.join(out, spec.name + '.nc')})")
    check_regular_target(out, "`out`")  # an empty path, a device, a FIFO: refused whatever `force` says
    folder = os.path.dirname(out) or "."
    parent = folder
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if parent and not os.path.isdir(parent):
        raise UsageValueError(f"cannot write {out}: {parent} is a file, not a folder")
    ds, same, recompute = None, False, None
    digest = spec.digest()
    if os.path.exists(out):
        try:
            ds = open_dataset(out)
            dims = [d for d in ds[next(iter(ds.data_vars))].dims if d != "rep"] if ds.data_vars else None
            same = ds.attrs.get("spec_digest") == digest and dims == spec.dims
            # the digest of before the grid's order was recorded (`legacy`) is today's for a grid listed in sorted
            # key order; for another order it is not trusted: the code of that time could fill such a dataset with
            # another order's parts, every value under another point's labels, and this spec's dimensions
            legacy = spec.digest(legacy=True)
            if not same and legacy != digest and dims == spec.dims and ds.attrs.get("spec_digest") == legacy:
                recompute = (f"{out} was written by an older spare_mc that could mix grid points when the [grid] keys "
                             f"are not in sorted order; it will be recomputed")
        except (CorruptDataset, UsageError) as exc:  # damaged or truncated: recompute this sweep's own output
            ds, same = None, False
            if _claims_digest(out, digest):
                recompute = f"{exc}; it will be recomputed"
    if same:
        return ds
    os.makedirs(folder, exist_ok=True)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageValueError(f"cannot write the dataset into {folder}: permission denied")
    if recompute is not None:
        if say is not None:
            say.warn(recompute)
        return None
    if ds is None and not os.path.exists(out):
        return None
    if not force:
        what = ("a dataset of another sweep or spare_mc version" if ds is not None and "spec_digest" in ds.attrs
                else "not a dataset of this sweep")
        raise UsageValueError(f"`out` {out} already exists and is {what}; refusing to replace it (pass force=True to "
                              f"replace it, or choose another `out`)")
    return None


def _claims_digest(path, digest) -> bool:
    """Whether a (possibly damaged) dataset file still names ``digest`` as its spec digest."""
    try:
        with open(path, "rb") as fh:
            blob = fh.read()
    except OSError:
        return False
    return b"spec_digest" in blob and digest.encode() in blob


#: Outputs that count things (integers).
_COUNTS = {"T", "masked", "sum_c", "sum_s", "calls", "phase0", "moves", "patch", "failures", "wipeouts",
           "checkpoints", "finished", "memory_restarts", "remote_fallbacks"}


def _part_check(quantity, params):
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


def run_sweep(spec: SweepSpec, out=None, *, scheduler: str | None = None, workers: int | None = None,
              progress: bool = True, force: bool = False):
    """Run (or resume) a sweep and write its dataset; returns the dataset.

    Parameters
    ----------
    spec : SweepSpec
    out : path, optional
        Dataset file (default ``data/<name>.nc``); finished tasks live in ``<out>.parts/<digest>/``.
    scheduler : str, optional
        Address of an existing dask scheduler (``tcp://host:port``), checked at once. Default: a local cluster.
    workers : int, optional
        Local cluster size (worker processes with one thread each; default: the number of CPUs). ``0`` runs the
        tasks in this process without dask (for debugging; same results).
    progress : bool
        Progress on stderr (a bar on a terminal, a line per 10% otherwise; never fatal if stderr is gone).
    force : bool
        Replace an existing ``out`` that is not this sweep's output.

    Raises
    ------
    WorkersLost
        The dask workers died (a task killed every worker that ran it, or a local cluster kept none for
        :data:`NO_WORKER_TIMEOUT_S` seconds), or the local cluster did not start. Finished tasks are kept.
    ConnectionError
        The scheduler was lost mid-sweep. Finished tasks are kept.

    Notes
    -----
    A script that runs a sweep on a local cluster must call this under ``if __name__ == "__main__":``: the worker
    processes import the script, and each would start the sweep again. Such a call from a re-imported script is
    refused with :class:`~spare_mc._lib.validation.UsageValueError`.
    """
    if not isinstance(spec, SweepSpec):
        raise UsageTypeError(f"`spec` must be a SweepSpec, got {type(spec).__name__}")
    _check_not_reimported()
    workers = check_local_workers(workers)
    if workers is not None and scheduler is not None:
        raise UsageValueError(f"`workers`={workers} has no effect with `scheduler`: the scheduler's own workers run "
                              f"the tasks (give one of them)")
    spec.check_resources()
    spec.check_points()  # every invalid value fails here, before any work
    out = os.path.join("data", f"{spec.name}.nc") if out is None else os.fspath(out)
    if scheduler is not None:
        _check_scheduler(scheduler)
    existing = _check_output(out, spec, force)
    say = _Progress(spec, progress)
    if existing is not None and existing.attrs.get("name") == spec.name:  # (a rename is written under the lock)
        return _up_to_date(existing, out, spec, say)
    lenient = spec.lenient
    tasks = spec.tasks()
    with PartsStore(out, spec.digest(), OUTPUTS[spec.quantity], warn=say.warn) as store:
        # again, under the lock: another sweep may have just finished (and now warn, once)
        existing = _check_output(out, spec, force, say)
        if existing is not None:
            return _up_to_date(existing, out, spec, say)
        results, todo = {}, []
        for t in tasks:
            got = store.load(t[0], (t[3], t[4]), check=_part_check(spec.quantity, t[2]), params=t[2])
            if got is None:
                todo.append(t)
            else:
                results[t[0]] = got
        store.report_other_code()
        if todo:
            _warn_other_blocks(store.folder, spec, {t[0] for t in tasks}, say.warn)
        say.update(len(results), len(tasks))
        if todo and workers == 0 and scheduler is None:
            for key, idx, params, a, b in todo:
                res = run_task(spec.quantity, spec.seed, idx, params, a, b, lenient)
                store.save(key, (a, b), res, params)
                results[key] = res
                say.update(len(results), len(tasks))
        elif todo:
            _run_on_dask(spec, todo, store, results, scheduler, workers, lenient,
                         lambda: say.update(len(results), len(tasks)))
        say.done()
        with sweep_writing(out):  # every task is on disk: a rerun only assembles them
            ds = write_dataset(_assemble(spec, results), out)
    return ds


def _task_key(idx, a, b) -> str:
    """A task's key, the name of its part file: the point's indices and its replications ``a .. b - 1``
    (``p0-2_r0-25``). :data:`_TASK_KEY_RE` reads it back."""
    return "p" + "-".join(map(str, idx)) + f"_r{a}-{b}"


#: a task key (:func:`_task_key`) and its replications ``a``, ``b``
_TASK_KEY_RE = re.compile(r"p[0-9-]+_r([0-9]+)-([0-9]+)")


def _warn_other_blocks(folder, spec, keys, warn) -> None:
    """Warn when the parts folder holds tasks of this sweep cut into blocks of another size (a part is one task:
    a point and a range of replications): they are not reused, and the warning names the block that would."""
    sizes = {}
    for name in os.listdir(folder):
        m = _TASK_KEY_RE.fullmatch(name[:-4]) if name.endswith(".npz") else None
        if m and name[:-4] not in keys:
            size = int(m.group(2)) - int(m.group(1))
            sizes[size] = sizes.get(size, 0) + 1
    if sizes:
        found = ", ".join(f"{n} of block {b}" for b, n in sorted(sizes.items(), key=lambda kv: -kv[1]))
        best = max(sizes, key=sizes.get)
        warn(f"{folder} holds finished tasks of this sweep cut into blocks of another size ({found}); with "
             f"block = {spec.block} they are not reused. To reuse them, stop and run again with block = {best} "
             f"(sweep.block in the spec): the numbers do not depend on the block")


def _check_not_reimported() -> None:
    """Refuse a call from the top level of a script that a worker process is importing (as ``__mp_main__``): the
    script lacks the ``if __name__ == "__main__":`` guard, and each worker would start the sweep again."""
    frame = sys._getframe(2)  # the caller of run_sweep and the callers above it
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__mp_main__":
            raise UsageValueError('run_sweep was called from the top level of a script without the `if __name__ == '
                                  '"__main__":` guard: dask starts worker processes that import the script, and each '
                                  'would start the sweep again. Put the call under that guard')
        frame = frame.f_back


def _up_to_date(ds, out, spec, say):
    """This sweep's up-to-date output ``ds`` (same digest); a spec renamed since (the digest leaves the name out: it
    changes no number) gets its name written into the file, so that the file, the returned dataset and a study's
    ownership test (:func:`run_study_sweep`) all say the current name. Called under the output's lock."""
    was = ds.attrs.get("name")
    if was == spec.name:
        say.line(f"{out} is up to date (same spec, seed and version); nothing to compute")
        return ds
    ds = ds.copy()
    ds.attrs["name"] = spec.name
    ds = write_dataset(ds, out)
    say.line(f"{out} is up to date (same spec, seed and version); its sweep name is now {spec.name!r} (was "
             f"{was!r}); nothing to compute")
    return ds


def run_study_sweep(spec: SweepSpec, out, *, scheduler: str | None = None, workers: int | None = None,
                    progress: bool = True, force: bool = False):
    """:func:`run_sweep` for a study that owns its output file: the study's own earlier dataset (same sweep name,
    other settings, seed or version) is replaced; any other file only with ``force``."""
    out = os.fspath(out)
    own = False
    if os.path.isfile(out):
        try:
            own = open_dataset(out).attrs.get("name") == spec.name
        except UsageError:
            own = False
    return run_sweep(spec, out, scheduler=scheduler, workers=workers, progress=progress, force=force or own)


def _run_task_here(code: str, *args) -> tuple:
    """:func:`run_task` on a dask worker, returned with the worker's code digest and address: a worker running
    other spare_mc code (another installation, a checkout before or after an update that kept the version string)
    must not put its numbers into this sweep's dataset (the client compares ``code`` with what comes back)."""
    from distributed import get_worker


    return code_digest(), get_worker().address, run_task(*args)


class MixedCodeError(UsageValueError):
    """A dask worker runs other spare_mc code than the client."""


def _check_worker_code(client, code: str) -> None:
    """Every worker connected now runs the client's code (workers that join later are checked per task)."""

    try:
        theirs = client.run(code_digest)
    except Exception as exc:  # noqa: BLE001 - a worker whose spare_mc cannot even report it
        raise MixedCodeError(f"a dask worker cannot report its spare_mc code ({type(exc).__name__}: {exc}); every "
                             f"worker must run the same spare_mc as this client (code {code})") from None
    other = {w: c for w, c in theirs.items() if c != code}
    if other:
        raise MixedCodeError(_mixed_code_message(other, code))


def _mixed_code_message(other: dict, code: str) -> str:
    shown = ", ".join(f"{w} (code {c})" for w, c in sorted(other.items())[:3])
    more = f" and {len(other) - 3} more" if len(other) > 3 else ""
    return (f"dask workers {shown}{more} run other spare_mc code than this client (code {code}): their numbers "
            f"would be mixed into the dataset. Start every worker from the same spare_mc installation (the code "
            f"digest covers its sources and data, not only its version); finished tasks are kept")


class WorkersLost(OSError):
    """The sweep's dask workers are gone, or never came: killed (often for memory), failed to start, or none
    connected for :data:`NO_WORKER_TIMEOUT_S` seconds on a local cluster. The finished tasks are kept: running the
    same sweep again resumes it (the command line exits 1 with one line)."""


#: Seconds a local cluster may have no worker connected, with tasks left, before the sweep stops with
#: :class:`WorkersLost` (its nannies restart a killed worker within a few seconds; a cluster left with none would
#: otherwise wait forever). With an external scheduler, workers may join later: the sweep warns and waits.
NO_WORKER_TIMEOUT_S = 60.0
_WATCH_EVERY_S = 2.0  # how often the connected workers are counted while no task finishes


def _completed(ac, client, local: bool, where: str, warn, resume):
    """The futures of the ``as_completed`` iterator ``ac`` as they finish, watching meanwhile that some worker is
    connected (see :data:`NO_WORKER_TIMEOUT_S`): raises :class:`WorkersLost` (its message ends with ``resume()``)
    on a local cluster, warns (once per such spell) with an external scheduler."""

    idle_since = None
    warned = False
    next_look = time.monotonic() + _WATCH_EVERY_S
    while True:
        batch = ac.next_batch(block=False)
        if batch:
            yield from batch
            continue
        if ac.is_empty():
            return
        now = time.monotonic()
        if now >= next_look:
            next_look = now + _WATCH_EVERY_S
            try:
                n = len(client.nthreads())
            except Exception:  # noqa: BLE001 - the scheduler's own loss shows as cancelled futures
                n = None
            if n == 0:
                idle_since = now if idle_since is None else idle_since
                if now - idle_since >= NO_WORKER_TIMEOUT_S:
                    if local:
                        raise WorkersLost(f"the local dask cluster has had no worker for {now - idle_since:.0f} s "
                                          f"(its worker processes were killed and not restarted); {resume()}")
                    if not warned:
                        warn(f"no dask worker has been connected to {where} for {now - idle_since:.0f} s: waiting "
                             f"for one (finished tasks are kept; Ctrl-C stops)")
                        warned = True
            elif n is not None:
                idle_since, warned = None, False
        time.sleep(0.05)


def _resume_note(n: int, folder: str) -> str:
    if n == 0:
        return "no task had finished: run the same command again once that is fixed"
    return f"the {n} finished tasks are kept in {folder}: run the same command again to resume"


def _run_on_dask(spec, todo, store, results, scheduler, workers, lenient, report):
    from distributed import Client, KilledWorker, as_completed

    cluster = client = None
    stack = contextlib.ExitStack()  # left after the cluster is closed (below): its workers' start method
    warn = _Progress(spec, True).warn
    try:
        if scheduler is None:
            cpus = os.cpu_count() or 1
            if workers and workers > cpus:
                warn(f"{workers} worker processes on {cpus} CPUs: the sweep will be slower than with {cpus} (each "
                     f"worker runs one task at a time)")
            forked = stack.enter_context(_forked_workers())
            try:
                cluster = _local_cluster(min(workers or cpus, len(todo)), forked)  # no idle process
            except Exception as exc:  # (not a signal: KeyboardInterrupt and SIGTERM's _Terminated pass)
                if getattr(sys.modules.get("__main__"), "__file__", None) == "<stdin>":
                    raise WorkersLost("the local dask cluster did not start: code read from standard input (python "
                                      "-) cannot start one, because its worker processes re-import the main script, "
                                      "which has no file here. Save the code to a file, or run the tasks in this "
                                      "process (workers=0)") from None
                raise WorkersLost(
                    f"the local dask cluster did not start ({type(exc).__name__}: {' '.join(str(exc).split())}); "
                    f"if run_sweep is called from a script, call it under `if __name__ == \"__main__\":` (worker "
                    f"processes import the script); with little memory, give fewer workers; "
                    + _resume_note(len(results), store.folder)) from None
            client = Client(cluster)
        else:
            client = Client(scheduler, timeout="10s")
        _check_worker_code(client, store.code)
        futures = [client.submit(_run_task_here, store.code, spec.quantity, spec.seed, idx, params, a, b, lenient,
                                 key=f"{spec.digest()}-{key}", pure=False, retries=3)
                   for key, idx, params, a, b in todo]
        by_key = {f.key: t for f, t in zip(futures, todo)}
        done = _completed(as_completed(futures), client, scheduler is None, scheduler or "the local cluster", warn,
                          lambda: _resume_note(len(results), store.folder))
        for fut in done:
            key, _, params, a, b = by_key[fut.key]
            try:
                code, where, res = fut.result()
            except concurrent.futures.CancelledError as exc:  # the scheduler went away ("scheduler-connection-lost")
                raise ConnectionError(f"lost the dask scheduler {scheduler or '(local)'} "
                                      f"({' '.join(str(exc).split())}); "
                                      + _resume_note(len(results), store.folder)) from None
            except KilledWorker as exc:  # dask gave up on the task: the workers that had it died, one after another
                # (a task merely queued on a dying worker counts too: the message does not say it caused the deaths)
                raise WorkersLost(f"dask gave up on task {key} after {exc.allowed_failures + 1} workers that had it "
                                  f"died (most often a task out of memory: give fewer workers, so that each has "
                                  f"more); " + _resume_note(len(results), store.folder)) from None
            except MemoryError:  # a worker's task ran out of memory (ulimit -v, a container), raised, and retried
                raise WorkersLost(f"task {key} ran out of memory on a dask worker (give fewer workers, so that each "
                                  f"has more, or fewer replications per task: sweep.block); "
                                  + _resume_note(len(results), store.folder)) from None
            if code != store.code:  # a worker that joined after the check
                raise MixedCodeError(_mixed_code_message({where: code}, store.code))
            store.save(key, (a, b), res, params)
            results[key] = res
            report()
            fut.release()
    finally:
        # shutting down after an interrupt makes the scheduler log errors about the client it can no longer
        # reach: noise for the user, who already gets one line; silenced for the shutdown only
        import logging

        log = logging.getLogger("distributed")
        level = log.level
        log.setLevel(logging.CRITICAL + 1)
        try:
            if client is not None:
                client.close()
            if cluster is not None:
                cluster.close()
        finally:
            log.setLevel(level)
            stack.close()


@contextlib.contextmanager
def _forked_workers():
    """While in force, dask starts worker processes (and any its nannies restart) from multiprocessing's fork
    server, started once with SIGINT ignored: so the workers ignore it, whatever this process does meanwhile.
    Yields whether it could (only from the main thread, where signals are handled, and where the platform has a
    fork server: not on Windows). A fork server already running (started by other code of this process) is reused
    as it is. Workers forked from it get the environment it started with: a later change of ``os.environ`` in this
    process does not reach them."""
    import multiprocessing
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or \
            "forkserver" not in multiprocessing.get_all_start_methods():
        yield False
        return
    from multiprocessing import forkserver

    import dask
    from distributed.utils import get_mp_context

    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
        get_mp_context()  # dask's preload of the fork server (its packages, imported once for every worker)
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            forkserver.ensure_running()
        finally:
            signal.signal(signal.SIGINT, old)
        yield True


def _local_cluster(n_workers, forked: bool):
    """A local dask cluster of ``n_workers`` processes, one thread each. ":0": the scheduler's HTTP server on a
    free port, so that several sweeps can run at once.

    Ctrl-C at a terminal reaches the whole process group. The worker processes must ignore it, so that it stops
    the sweep with one line instead of a traceback from every worker: a process started with SIGINT ignored keeps
    ignoring it (across exec, and Python leaves it alone). With ``forked`` (inside :func:`_forked_workers`) they
    do; SIGINT and SIGTERM that arrive while the cluster starts are then recorded, and acted upon once it is up
    (the signal's own handler runs, and the cluster is closed: one line, exit 130 or 143), because interrupting
    the start itself would leave a half-started cluster that dask's exit handler reports with a traceback. Without
    a fork server (Windows), SIGINT is ignored during the whole start (1-3 s), so that the spawned workers inherit
    the ignore, and a Ctrl-C then is lost.
    """
    import signal
    import threading

    from distributed import LocalCluster

    def start():
        return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                            silence_logs=50)  # task errors surface in results

    if threading.current_thread() is not threading.main_thread():  # signals belong to the main thread
        return start()
    if not forked:
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            return start()
        finally:
            signal.signal(signal.SIGINT, old)
    return _start_recording_signals(start)


def _start_recording_signals(start):
    """``start()`` with SIGINT and SIGTERM recorded instead of handled (those not ignored), then the first one
    recorded handled as its handler says; every cluster started here is closed quietly if anything raises."""
    import signal

    from distributed.deploy.spec import SpecCluster

    before = set(SpecCluster._instances)
    got, olds = [], {}
    try:
        failed = cluster = None
        with contextlib.ExitStack() as restore:  # every handler is put back, even if one of them raises
            for sig in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(sig) is not signal.SIG_IGN:
                    olds[sig] = signal.signal(sig, lambda signum, frame: got.append(signum))
                    restore.callback(signal.signal, sig, olds[sig])
            try:
                cluster = start()
            except BaseException as exc:
                if not got:
                    raise
                # a group's SIGTERM also ends the fork server and the workers, and the start fails: the signal is
                # the news, not the failure
                failed = exc
        if got:
            handler = olds[got[0]]
            if callable(handler):
                handler(got[0], None)  # KeyboardInterrupt, the CLI's SIGTERM handler, or a caller's own
            else:  # SIG_DFL (or a handler not set from Python): the default action ends the process
                _close_quietly(set(SpecCluster._instances) - before)
                signal.raise_signal(got[0])
        if failed is not None:  # the handler let the process go on: the start's own failure
            raise failed
        return cluster
    except BaseException:
        _close_quietly(set(SpecCluster._instances) - before)
        raise


def _close_quietly(clusters) -> None:
    """Close local clusters, started or half-started, with no message now or at exit (dask's exit handler reports a
    half-started cluster it still finds open with a traceback)."""
    from distributed.core import Status

    for cluster in clusters:
        try:
            cluster.close(timeout=10)
        except Exception:  # noqa: BLE001 - a half-started cluster fails its own close; it is marked closed below
            pass
        cluster.status = Status.closed


class _Progress:
    """Progress and warnings on stderr that never abort a sweep (stderr may be a closed pipe)."""

    def __init__(self, spec, enabled):
        self.name = spec.name
        self.enabled = enabled
        try:
            self.tty = sys.stderr.isatty()
        except (OSError, ValueError, AttributeError):
            self.tty = False
        self.shown = -1

    def _write(self, text, end="\n"):
        try:
            print(text, end=end, file=sys.stderr, flush=True)
        except (OSError, ValueError):  # a broken pipe or a closed stderr: go on silently
            self.enabled = False

    def line(self, msg):
        if self.enabled:
            self._write(f"[spare-mc sweep {self.name}] {msg}")

    def warn(self, msg):
        self._write(f"spare-mc: warning: {msg}")

    def update(self, k, total):
        if not self.enabled:
            return
        if self.tty:
            bar = "#" * (30 * k // max(total, 1))
            self._write(f"\r[spare-mc sweep {self.name}] [{bar:<30}] {k}/{total} tasks", end="")
        else:
            tenth = (10 * k) // max(total, 1)
            if tenth != self.shown:
                self.shown = tenth
                self._write(f"[spare-mc sweep {self.name}] {k}/{total} tasks")

    def done(self):
        if self.enabled and self.tty:
            self._write("")


def open_sweep_dataset(path):
    """:func:`spare_mc.sweep.storage.open_dataset`, then check that it is a spare-mc sweep dataset (its quantity, spec and
    variables)."""
    try:
        ds = open_dataset(path)
    except UsageValueError as exc:
        if not os.path.isfile(path):  # missing, a folder...: the reason alone says it
            raise
        raise UsageValueError(f"not a spare-mc sweep dataset: {exc}") from None
    q = ds.attrs.get("quantity")
    if q not in QUANTITIES:
        raise UsageValueError(f"{path} is not a spare-mc sweep dataset (its `quantity` attribute is {q!r}; expected "
                              f"one of {list(QUANTITIES)})")
    if "spec" not in ds.attrs:
        raise UsageValueError(f"{path} is not a spare-mc sweep dataset (no `spec` attribute)")
    try:
        SweepSpec.from_toml(ds.attrs["spec"])
    except UsageValueError as exc:
        raise UsageValueError(f"{path}: its `spec` attribute is not a valid sweep spec: {exc}") from None
    missing = [name for name in OUTPUTS[q] if name not in ds and name not in OPTIONAL_OUTPUTS]
    if missing:
        raise UsageValueError(f"{path} is not a complete spare-mc {q} dataset: variables {missing} are missing")
    return ds


# ------------------------------------------------------------------------------------------------- analysis
@dataclass(frozen=True)
class PointComparison:
    """One grid point of :func:`compare_dataset`.

    ``reference`` is ``None`` where no valid exact value exists, and ``reason`` says why; otherwise ``z``,
    ``p_value``, ``p_holm`` (Holm-adjusted across the tested points) and ``consistent`` (``p_holm >= alpha``).
    """

    point: dict
    quantity: str
    estimate: object
    reference: float | None
    reason: str = ""
    rel_error: float | None = None
    z: float | None = None
    p_value: float | None = None
    p_holm: float | None = None
    consistent: bool | None = None

    def to_dict(self) -> dict:
        d = {"point": self.point, "quantity": self.quantity,
             "estimate": None if self.estimate is None else self.estimate.mean,
             "ci95": None if self.estimate is None else list(self.estimate.ci), "reference": self.reference}
        if self.p_value is None:
            d["reason"] = self.reason
        else:
            d.update(rel_error=self.rel_error, z=self.z, p_value=self.p_value, p_holm=self.p_holm,
                     consistent=self.consistent)
        return d


@dataclass(frozen=True)
class DatasetComparison:
    """Outcome of :func:`compare_dataset`: a row per grid point, the family-wise level, the counts."""

    quantity: str
    alpha: float
    rows: tuple

    @property
    def tested(self) -> int:
        return sum(r.p_value is not None for r in self.rows)

    @property
    def consistent(self) -> int:
        return sum(bool(r.consistent) for r in self.rows if r.p_value is not None)

    def to_dict(self) -> dict:
        return {"schema_version": SCHEMA_VERSION, "quantity": self.quantity, "alpha": self.alpha,
                "rows": [r.to_dict() for r in self.rows], "tested": self.tested, "consistent": self.consistent}

    def __iter__(self):  # the list of dict rows this used to be (one release)
        warn_old_access("iterating over compare_dataset(...)", "compare_dataset(...).rows or .to_dict()['rows']")
        return iter(self.to_dict()["rows"])

    def __len__(self):
        return len(self.rows)


#: Failure models under which groups die one at a time in a uniformly random order (iid group lifetimes or a
#: uniformly chosen victim), so that the uniform-order exact laws apply; under domain events ``T`` counts events.
_UNIFORM_ORDER_MODELS = ("uniform", "system", "per_gpu")


def _reference(quantity, point):
    """(exact value, None) or (None, why there is none)."""

    if quantity == "ttt":
        return None, "time to train has no exact reference in this model"
    model = point.get("failure_model", "uniform")
    if model not in _UNIFORM_ORDER_MODELS:
        return None, (f"failure_model={model!r}: a domain event kills several groups at once, so T counts events "
                      f"and the uniform-order exact law does not apply")
    layout = point.get("layout", "cyclic")
    if layout not in EXACT_LAYOUTS:
        return None, f"no exact law for layout {layout!r} (exact: {', '.join(EXACT_LAYOUTS)})"
    return exact_wipeout(layout, point["n_groups"], point["r"]).mean, ""


def compare_dataset(ds, *, alpha: float = 1e-3) -> DatasetComparison:
    """Compare every grid point that has a valid exact value with it, Holm-Bonferroni corrected across the grid.

    ``wipeout`` and ``overhead``: mean ``T`` vs the exact law (cyclic unit stride, random holders, block). (The
    overhead sweep's ``sum c(k) / T`` is a function of ``T`` alone, but its mean is dominated by rare long runs --
    epochs past ``N / 2`` -- so at usual replication counts its intervals under-cover badly (measured: 70% for a
    nominal 95% at N = 200, r = 5, 60 replications, whatever the interval method); ``T`` carries the same
    information with light tails.) A reference is valid only
    where groups fail one at a time in uniformly random order (failure models ``uniform``, ``system``,
    ``per_gpu``): under domain failures an event kills several groups and ``T`` counts events. Points without a
    valid reference (those, Sidon layouts, time to train) carry ``reference=None`` and the reason.
    """

    quantity = ds.attrs.get("quantity")
    if quantity not in QUANTITIES or "spec" not in ds.attrs:
        raise UsageValueError("`ds` is not a spare-mc sweep dataset (no `quantity`/`spec` attributes)")
    first = next(iter(OUTPUTS[quantity]))
    dims = [d for d in ds[first].dims if d != "rep"]
    spec = SweepSpec.from_toml(ds.attrs["spec"])
    fixed = spec.fixed
    base = {k: v for k, v in PARAMETERS[quantity].items() if v is not None}
    rows = []
    for idx in itertools.product(*(range(ds.sizes[d]) for d in dims)):
        sel = {d: _plain(ds[d].values[i]) for d, i in zip(dims, idx)}
        variant = spec.variants.get(sel.get("variant"), {})
        grid = {k: v for k, v in sel.items() if k != "variant"}
        point = {**base, **fixed, **variant, **grid}
        shown = {**fixed, **sel, **variant}
        sub = ds.isel({d: i for d, i in zip(dims, idx)})
        if quantity in ("wipeout", "overhead"):
            est = estimate_mean(sub["T"].values, name="T")
        else:
            v = sub["ttt_over_t0"].values
            est = estimate_mean(v[np.isfinite(v)], name="ttt_over_t0") if np.isfinite(v).sum() >= 2 else None
        ref, why = _reference(quantity, point)
        row = PointComparison(shown, est.name if est is not None else "ttt_over_t0", est, ref, why)
        if ref is not None and est.se > 0:
            c = compare(est, ref, alpha=alpha)
            row = replace(row, rel_error=c.rel_error, z=c.z, p_value=c.p_value)
        elif ref is not None:
            row = replace(row, reason=f"not testable: its {est.n} replications have no spread (standard error 0); "
                                      f"run more replications")
        rows.append(row)
    tested = sorted((i for i, r in enumerate(rows) if r.p_value is not None), key=lambda i: rows[i].p_value)
    running = 0.0
    for rank, i in enumerate(tested):  # Holm step-down
        running = max(running, min(1.0, (len(tested) - rank) * rows[i].p_value))
        rows[i] = replace(rows[i], p_holm=running, consistent=bool(running >= alpha))
    return DatasetComparison(quantity, alpha, tuple(rows))


# re-exported for backward compatibility: storage moved to :mod:`spare_mc.sweep.storage`
__all__ += ["write_dataset", "open_dataset", "summarize"]
