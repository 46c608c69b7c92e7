"""A sweep's specification: :class:`SweepSpec` (its TOML form, validation and identity), the parameters each
quantity accepts (:data:`PARAMETERS`), its grid points and tasks with their keys, and the objects a grid point runs.

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
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
from dataclasses import MISSING, dataclass, field, fields, replace

import numpy as np
import tomllib

from .._lib.provenance import SCHEMA_VERSION
from .._lib.resources import ResourceLimitError, check_memory
from .._lib.validation import UsageError, UsageTypeError, UsageValueError, as_choice, as_int, reject_unknown
from .._lib.version import __version__
from ..model.failures import FAILURE_KINDS, failure_from_spec
from ..model.kinds import make_layout
from ..options import get_options
from ..ttt.config import TimelineConfig, applicable
from .storage import OUTPUTS, QUANTITIES

__all__ = ["FAILURE_CHOICES", "PARAMETERS", "SweepSpec"]

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


def plain(v):
    """A TOML/JSON-safe plain Python value (numpy scalars converted)."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
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
        object.__setattr__(self, "grid", {k: plain(v) for k, v in self.grid.items()})
        object.__setattr__(self, "fixed", {k: plain(v) for k, v in self.fixed.items()})
        for vname, over in self.variants.items():
            if not isinstance(vname, str) or not vname:
                raise UsageValueError(f"variant names must be non-empty strings, got {vname!r}")
            if not isinstance(over, dict):
                raise UsageTypeError(f"`variants.{vname}` must be a table of parameters, got {type(over).__name__}")
            clash = set(over) & set(self.grid)
            if clash:
                raise UsageValueError(f"`variants.{vname}` sets {sorted(clash)}, which are swept in `grid`")
        object.__setattr__(self, "variants", {k: {p: plain(v) for p, v in over.items()}
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
        that older digest for any grid (it ignored the order: see ``_check_output`` in :mod:`spare_mc.sweep.runner`)."""
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
                out.append((task_key(idx, a, b), idx, params, a, b))
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
        """Build every grid point's model once so that invalid values fail before any work starts (a holder table
        shared by many points is built for the first of them only)."""
        seen = set()
        for idx, params in self.points():
            try:
                point_model(self.quantity, params, self.lenient, layouts_seen=seen)
            except UsageError as exc:
                where = ", ".join(f"{k}={self.dim_values(k)[i]!r}" for k, i in zip(self.dims, idx))
                hint = ("; an option that applies to some grid values only belongs in a [variants] table"
                        if "has no effect" in str(exc) else "")
                raise type(exc)(f"grid point ({where}): {exc}{hint}") from None


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


def point_model(quantity, params, lenient=(), *, check_layout=True, layouts_seen=None, draw_random=True):
    """The objects a task runs (validates the parameters; ``lenient``: see :attr:`SweepSpec.lenient`).

    For the timeline, the holder table is built once to check that it exists (e.g. Sidon offsets); a run builds
    its own. ``check_layout=False`` skips that (a task: :meth:`SweepSpec.check_points` has checked every point
    before the sweep, and the run's own build raises the same error); ``layouts_seen``, a set, skips the tables
    already checked (their parameters: strategy, layout, ``N``, ``r``; any point with a topology is checked).
    ``draw_random=False``: the layout of a wipe-out or overhead point is ``None`` when it is ``"random"`` (a new one
    is drawn per trial; drawing one here compiles the sampler, which :func:`~spare_mc.sweep.tasks.kernel_key` does
    not need)."""
    strict = "failure_model" not in lenient
    if quantity in ("wipeout", "overhead"):

        lay = (None if not draw_random and params["layout"] == "random"
               else make_layout(params["layout"], params["n_groups"], params["r"], rng=0))
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
    if check_layout:
        key = (cfg.strategy, cfg.layout, cfg.n_groups, cfg.r, cfg.domain_aware) if cfg.topology is None else None
        if layouts_seen is None or key is None or key not in layouts_seen:
            cfg.layout_object(rng=0 if cfg.layout == "random" else None)
            if layouts_seen is not None and key is not None:
                layouts_seen.add(key)
    return cfg


def task_key(idx, a, b) -> str:
    """A task's key, the name of its part file: the point's indices and its replications ``a .. b - 1``
    (``p0-2_r0-25``). :data:`TASK_KEY_RE` reads it back."""
    return "p" + "-".join(map(str, idx)) + f"_r{a}-{b}"


#: a task key (:func:`task_key`) and its replications ``a``, ``b``
TASK_KEY_RE = re.compile(r"p[0-9-]+_r([0-9]+)-([0-9]+)")
