"""Failure processes: streams of failure events ``(time, groups killed)`` over a :class:`~spare_mc.Topology`.

Every model below starts from a fully live system and produces events until every group is dead (or a wipe-out,
inside :func:`spare_mc.wipeout_mc`). Failures only ever hit **live** groups: a dead group stays dead until the next
global restart, and an event that would kill no live group is not an event of the job.

Models
------
:class:`UniformOrder`
    No clock: groups fail one at a time in a uniformly random order (the combinatorial model of docs/model.md,
    section 3).
    ``with_replacement=True`` is the named variant in which a failure may hit an already dead group (and then
    changes nothing but still counts as a failure). Event times are the event indices 1, 2, 3, ...
:class:`SystemRenewal`
    The paper's setting: a system-level renewal process whose inter-arrival times are Weibull with shape ``k`` and
    mean ``mtbf_s`` for the full system; each event kills a uniformly random live group (groups have equal GPU
    counts, so "in proportion to live GPUs" is uniform). With ``live_scaling=True`` the rate scales with the live-GPU
    fraction ``f``: an inter-arrival that starts with ``f`` live is ``mtbf``-Weibull divided by ``f`` (exact for this
    model, since ``f`` only changes at events).
:class:`PerGPU`
    Every GPU has an iid Weibull(``k``, ``lam``) lifetime with mean ``gpu_mtbf_s``; a group dies at its first GPU
    failure. The minimum of ``M`` iid Weibull(k, lam) is Weibull(k, lam M^(-1/k)) exactly, so the sampler draws
    ``N`` group lifetimes instead of ``G`` GPU lifetimes (the GPU-by-GPU draw is the slow twin,
    :func:`spare_mc.testing.failures.gpu_by_gpu_group_lifetimes`). ``age_policy`` says what happens to GPU ages at a
    global restart: :class:`PerGPUClock` carries group failure times across restarts under either policy (the
    wipe-out Monte Carlo starts from a new system, where the policy plays no role).
:class:`DomainFailures`
    Correlated failures: each domain at ``level`` (node, rack, power domain or pod of the topology) has a Weibull
    lifetime with mean ``domain_mtbf_s`` and kills every group touching it; optionally on top of independent
    per-GPU failures with the same shape (``background``). Several levels may fail at once
    (``levels={"node": mtbf_s, "rack": mtbf_s, ...}``, each level its own mean lifetime; all four at their default
    rates: :meth:`DomainFailures.at_default_rates`). With a common shape every unit's cumulative hazard is
    ``rate_u t^k``, so in the clock ``tau = t^k`` the units race as exponentials and the sampler costs O(levels)
    per event plus the groups it kills.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np

from .._kernels import wipeout as _k
from .._kernels.records import EventRecord, Holding, TrialsOut
from .._lib.seeding import generator
from .._lib.validation import UsageTypeError, UsageValueError, as_bool, as_choice, as_float, as_int, reject_unknown
from .domain_rates import DOMAIN_MTBF_DEFAULTS
from .topology import DOMAIN_LEVELS, Topology

__all__ = ["UniformOrder", "SystemRenewal", "PerGPU", "DomainFailures", "FailureEvents", "sample_events",
           "failure_model_from_dict", "failure_from_spec", "FAILURE_KINDS", "FAILURE_SPEC_DEFAULTS", "CALIBRATIONS",
           "weibull_scale", "PerGPUClock", "AGE_POLICIES", "parse_domain_levels", "system_mtbf_s", "check_shape",
           "DOMAIN_SIZES"]

AGE_POLICIES = ("renew", "keep")
#: How per-GPU lifetimes are calibrated to a system MTBF (:meth:`PerGPU.from_system_mtbf`).
CALIBRATIONS = ("first_failure", "long_run")


def weibull_scale(mean: float, shape: float) -> float:
    """Scale ``lam`` of the Weibull with shape ``k`` and the given mean: ``lam = mean / Gamma(1 + 1/k)``."""
    return mean / math.gamma(1.0 + 1.0 / shape)


def system_mtbf_s(failures, topology) -> tuple[float, float]:
    """The full-system MTBF of a unit-clock model (:class:`PerGPU` or :class:`DomainFailures`) on ``topology``, in
    the two senses of :data:`CALIBRATIONS`: ``(first_failure, long_run)``.

    With common shape ``k``, unit ``i`` (``c_i`` of them: the GPUs, the domains of each level) of mean lifetime
    ``m_i`` has cumulative hazard ``(t / lam_i)^k``, ``lam_i = m_i / Gamma(1 + 1/k)``; the first failure of a fresh
    system is Weibull(``k``) with scale ``(sum_i c_i lam_i^-k)^(-1/k)``, so its mean is
    ``Gamma(1 + 1/k) (sum_i c_i lam_i^-k)^(-1/k)`` (``gpu_mtbf_s G^(-1/k)`` for GPUs alone: what
    :meth:`PerGPU.from_system_mtbf` inverts). Units replaced on failure fail in the long run once per
    ``1 / sum_i (c_i / m_i)`` seconds. The two agree for ``k = 1``; for ``k < 1`` the first is the smaller."""
    per_gpu = failures if isinstance(failures, PerGPU) else failures.background
    parts = [] if per_gpu is None else [("gpu", per_gpu.gpu_mtbf_s)]  # (level, mean lifetime)
    parts += getattr(failures, "levels", ())
    counts = [topology.unit_count(level) for level, _ in parts]
    k = failures.shape
    hazard = math.fsum(c * weibull_scale(m, k) ** -k for c, (_, m) in zip(counts, parts))
    first = math.gamma(1.0 + 1.0 / k) * hazard ** (-1.0 / k)
    return first, 1.0 / math.fsum(c / m for c, (_, m) in zip(counts, parts))


def check_shape(shape, name: str = "shape") -> float:
    """A Weibull shape of the failure models, a float in [0.05, 50] (their one check of this range, ``name`` the
    parameter it reports; a larger ``k`` overflows ``Gamma(1 + 1/k)`` terms, a smaller one underflows the scale)."""
    shape = as_float(shape, name, positive=True)
    if not 0.05 <= shape <= 50:
        raise UsageValueError(f"`{name}` must lie in [0.05, 50] (Weibull shape k), got {name}={shape}")
    return shape


@dataclass(frozen=True)
class UniformOrder:
    """Distinct groups fail in a uniformly random order (``with_replacement``: any group, dead or not)."""

    with_replacement: bool = False

    def __post_init__(self):
        object.__setattr__(self, "with_replacement", as_bool(self.with_replacement, "with_replacement"))

    def to_dict(self):
        return {"model": "uniform_order", **asdict(self)}


@dataclass(frozen=True)
class SystemRenewal:
    """System-level Weibull renewal process with mean ``mtbf_s`` (full system) and shape ``shape``."""

    mtbf_s: float
    shape: float = 1.0
    live_scaling: bool = True

    def __post_init__(self):
        object.__setattr__(self, "mtbf_s", as_float(self.mtbf_s, "mtbf_s", positive=True))
        object.__setattr__(self, "shape", check_shape(self.shape))
        object.__setattr__(self, "live_scaling", as_bool(self.live_scaling, "live_scaling"))

    def to_dict(self):
        return {"model": "system_renewal", **asdict(self)}


@dataclass(frozen=True)
class PerGPU:
    """Independent per-GPU Weibull lifetimes with mean ``gpu_mtbf_s`` and shape ``shape``."""

    gpu_mtbf_s: float
    shape: float = 1.0
    age_policy: str = "renew"

    def __post_init__(self):
        object.__setattr__(self, "gpu_mtbf_s", as_float(self.gpu_mtbf_s, "gpu_mtbf_s", positive=True))
        object.__setattr__(self, "shape", check_shape(self.shape))
        as_choice(self.age_policy, "age_policy", AGE_POLICIES)

    @classmethod
    def from_system_mtbf(cls, system_mtbf_s: float, n_gpus: int, shape: float = 1.0, age_policy: str = "renew",
                         calibration: str = "first_failure"):
        """Per-GPU lifetimes calibrated to a full-system MTBF, in one of two senses (``calibration``):

        ``"first_failure"``: the first failure of a fresh system of ``G`` new GPUs has mean ``system_mtbf_s``. That
        first failure is Weibull(k, lam G^(-1/k)), whose mean is ``gpu_mtbf G^(-1/k)``, so
        ``gpu_mtbf = system_mtbf G^(1/k)``.

        ``"long_run"``: the long-run failure rate of the system is ``1 / system_mtbf_s``. With every GPU replaced
        when it fails (a renewal process per GPU), the long-run rate is ``G / gpu_mtbf`` (the elementary renewal
        theorem), so ``gpu_mtbf = G system_mtbf``.

        The two agree for exponential lifetimes (``k = 1``). For ``k < 1`` (a decreasing hazard: new GPUs fail
        more) they differ by the factor ``G^(1/k - 1)``: at ``G = 600,000`` and ``k = 0.78`` the first-failure
        calibration gives a GPU mean lifetime about 43 times the long-run one's.

        Examples
        --------
        >>> first = PerGPU.from_system_mtbf(300.0, 600_000, 0.78)
        >>> long = PerGPU.from_system_mtbf(300.0, 600_000, 0.78, calibration="long_run")
        >>> round(first.gpu_mtbf_s / long.gpu_mtbf_s, 1)
        42.6
        """
        shape = check_shape(shape)
        system_mtbf_s = as_float(system_mtbf_s, "system_mtbf_s", positive=True)
        n_gpus = as_int(n_gpus, "n_gpus", min_value=1)
        calibration = as_choice(calibration, "calibration", CALIBRATIONS)
        gpu = system_mtbf_s * (n_gpus if calibration == "long_run" else n_gpus ** (1.0 / shape))
        if not math.isfinite(gpu):  # name what the caller gave, not the derived lifetime
            raise UsageValueError(f"`system_mtbf_s`={system_mtbf_s:g} at n_gpus={n_gpus} and shape={shape:g} "
                                  f"({calibration}) gives a per-GPU mean lifetime beyond floating point: use a "
                                  f"smaller `system_mtbf_s`")
        return cls(gpu, shape, age_policy)

    def group_scale(self, topology: Topology) -> float:
        """Weibull scale of one group's lifetime, ``lam M^(-1/k)``."""
        return weibull_scale(self.gpu_mtbf_s, self.shape) * topology.gpus_per_group ** (-1.0 / self.shape)

    def group_lifetimes(self, topology: Topology, *, rng=None) -> np.ndarray:
        """``N`` iid group times to failure of a new system (the exact shortcut, O(N) not O(G))."""
        rng = generator(rng)
        return self.group_scale(topology) * rng.weibull(self.shape, size=topology.n_groups)

    def clock(self, topology: Topology, *, rng=None, start_s: float = 0.0) -> "PerGPUClock":
        """A :class:`PerGPUClock` of this model (group failure times across global restarts)."""
        return PerGPUClock(self, topology, rng=rng, start_s=start_s)

    def to_dict(self):
        return {"model": "per_gpu", **asdict(self)}


@dataclass(frozen=True, init=False)
class DomainFailures:
    """Failure domains at one or several levels of the topology, plus optional per-GPU background.

    Every domain at a level of ``levels`` (node, rack, power domain or pod: :data:`spare_mc.model.topology.DOMAIN_LEVELS`)
    has an independent Weibull lifetime with shape ``shape`` and the level's mean ``mtbf_s`` and kills every group
    touching it; ``background`` adds independent per-GPU lifetimes (same shape). Two ways to build one:

    - one level: ``DomainFailures(level, domain_mtbf_s, shape=1.0, background=None)``;
    - several levels at once: ``DomainFailures(levels={"node": mtbf_s, "rack": mtbf_s, ...}, shape=...,
      background=...)`` (a mapping, or a sequence of ``(level, mtbf_s)`` pairs); :meth:`at_default_rates` puts
      every level at its default rate of :data:`spare_mc.model.domain_rates.DOMAIN_MTBF_DEFAULTS`.

    Both store :attr:`levels`, the ``(level, mtbf_s)`` pairs in the order of ``DOMAIN_LEVELS`` (finest first), so
    ``DomainFailures("rack", m)`` equals ``DomainFailures(levels={"rack": m})``, and the order a mapping is written
    in does not matter.

    Parameters
    ----------
    level : str, optional
        The one level (with ``domain_mtbf_s``); not together with ``levels``.
    domain_mtbf_s : float, optional
        Mean lifetime of one domain at ``level`` (s).
    shape : float
        Weibull shape ``k`` of every unit (domains and the background's GPUs): with one shape every unit's
        cumulative hazard is ``rate_u t^k``, so the units race on one hazard clock.
    background : PerGPU or None
        Independent per-GPU failures; ``background.shape`` must equal ``shape``.
    levels : mapping or sequence of pairs, optional
        ``{level: mtbf_s}``: every level failing at once, each with its own mean lifetime.

    Notes
    -----
    Levels nest (a node lies in one rack, a rack in one power domain, ...), but their failures are independent:
    a rack event kills the groups of its nodes whether or not a node of it failed before. A group dies at the
    first of its own background clock and the clocks of the domains it touches, one at each level.

    Examples
    --------
    >>> one = DomainFailures("rack", 6.8e7, 0.78)
    >>> one == DomainFailures(levels={"rack": 6.8e7}, shape=0.78), one.level
    (True, 'rack')
    >>> mixed = DomainFailures(levels={"rack": 6.8e7, "node": 6.9e7}, shape=0.78)
    >>> mixed.level_names
    ('node', 'rack')
    >>> DomainFailures.at_default_rates(0.78).level_names
    ('node', 'rack', 'power', 'pod')
    """

    levels: tuple
    shape: float = 1.0
    background: PerGPU | None = None

    def __init__(self, level=None, domain_mtbf_s=None, shape=1.0, background=None, *, levels=None):
        object.__setattr__(self, "levels", _levels_iv(level, domain_mtbf_s, levels))
        object.__setattr__(self, "shape", check_shape(shape))
        if background is not None:
            if not isinstance(background, PerGPU):
                raise UsageTypeError(f"`background` must be a PerGPU model or None, got {type(background).__name__}")
            if background.shape != self.shape:
                raise UsageValueError(f"`background.shape` must equal `shape` (units race on one hazard clock), got "
                                      f"{background.shape} and {self.shape}")
        object.__setattr__(self, "background", background)

    @classmethod
    def at_default_rates(cls, shape: float = 1.0, background: PerGPU | None = None, levels=DOMAIN_LEVELS):
        """Every level of ``levels`` (default: all of :data:`~spare_mc.model.topology.DOMAIN_LEVELS`) at once, each at
        its default mean lifetime :data:`spare_mc.model.domain_rates.DOMAIN_MTBF_DEFAULTS` (from the Llama 3 405B
        report; the assumptions are stated in :mod:`spare_mc.model.domain_rates`).

        Examples
        --------
        >>> m = DomainFailures.at_default_rates(0.78, levels=("node", "pod"))
        >>> [(lvl, round(s / 3600)) for lvl, s in m.levels]
        [('node', 19233), ('pod', 864)]
        """
        if isinstance(levels, str):
            levels = (levels,)
        return cls(shape=shape, background=background,
                   levels=[(lvl, DOMAIN_MTBF_DEFAULTS[as_choice(lvl, "levels", DOMAIN_LEVELS)]) for lvl in levels])

    @property
    def level_names(self) -> tuple:
        """The levels of the model, finest first."""
        return tuple(lvl for lvl, _ in self.levels)

    @property
    def mixed(self) -> bool:
        """Whether the model has several levels."""
        return len(self.levels) > 1

    @property
    def level(self) -> str:
        """The level of a one-level model (a mixed model has several: :attr:`level_names`)."""
        return self._single()[0]

    @property
    def domain_mtbf_s(self) -> float:
        """The domains' mean lifetime (s) of a one-level model (a mixed model: :meth:`mtbf_of`)."""
        return self._single()[1]

    def mtbf_of(self, level: str) -> float:
        """Mean lifetime (s) of one domain at ``level``."""
        for lvl, m in self.levels:
            if lvl == level:
                return m
        raise UsageValueError(f"`level` must be one of the model's levels {list(self.level_names)}, got "
                              f"level={level!r}")

    def _single(self):
        if self.mixed:
            raise UsageValueError(f"this DomainFailures has several levels {list(self.level_names)}: use "
                                  f"`levels`, `level_names` or `mtbf_of(level)`")
        return self.levels[0]

    def to_dict(self):
        d = {"model": "domains"}
        if self.mixed:
            d["levels"] = dict(self.levels)
        else:
            d["level"], d["domain_mtbf_s"] = self.levels[0]
        d["shape"] = self.shape
        d["background"] = None if self.background is None else self.background.to_dict()
        return d


def _levels_iv(level, domain_mtbf_s, levels) -> tuple:
    """The ``(level, mtbf_s)`` pairs of a :class:`DomainFailures`, validated, in ``DOMAIN_LEVELS`` order."""
    if levels is None:
        if level is None or domain_mtbf_s is None:
            raise UsageValueError("DomainFailures needs `level` and `domain_mtbf_s` (one level), or `levels` "
                                  "(several: {level: mtbf_s})")
        pairs = [(level, domain_mtbf_s)]
        names = ("level", "domain_mtbf_s")
    else:
        if level is not None or domain_mtbf_s is not None:
            raise UsageValueError("give either `level` and `domain_mtbf_s` (one level) or `levels` (several), not "
                                  "both")
        if isinstance(levels, str):
            raise UsageTypeError(f"`levels` must map each level to its mean lifetime, e.g. {{'node': 6.9e7}}, got "
                                 f"{levels!r}")
        items = levels.items() if hasattr(levels, "items") else levels
        try:
            pairs = [tuple(p) for p in items]
        except TypeError:
            raise UsageTypeError(f"`levels` must be a mapping {{level: mtbf_s}} or a sequence of (level, mtbf_s) "
                                 f"pairs, got {levels!r}") from None
        if any(len(p) != 2 for p in pairs):
            raise UsageTypeError(f"`levels` must be a mapping {{level: mtbf_s}} or a sequence of (level, mtbf_s) "
                                 f"pairs, got {levels!r}")
        if not pairs:
            raise UsageValueError("`levels` must hold at least one level")
        names = None
    out = {}
    for lvl, m in pairs:
        lvl = as_choice(lvl, names[0] if names else "levels", DOMAIN_LEVELS)
        if lvl in out:
            raise UsageValueError(f"`levels` must name each level once, got {lvl!r} twice")
        out[lvl] = as_float(m, names[1] if names else f"levels[{lvl!r}]", positive=True)
    return tuple((lvl, out[lvl]) for lvl in DOMAIN_LEVELS if lvl in out)


FAILURE_MODELS = (UniformOrder, SystemRenewal, PerGPU, DomainFailures)


def failure_model_from_dict(d: dict):
    """Rebuild a failure model from its ``to_dict()`` (for config files and dataset attributes)."""
    if not isinstance(d, dict) or "model" not in d:
        raise UsageValueError(f"a failure model dict needs a 'model' key, got {d!r}")
    d = dict(d)
    kind = d.pop("model")
    classes = {"uniform_order": UniformOrder, "system_renewal": SystemRenewal, "per_gpu": PerGPU,
               "domains": DomainFailures}
    if not isinstance(kind, str) or kind not in classes:
        raise UsageValueError(f"unknown failure model {kind!r}; expected one of {sorted(classes)}")
    params = inspect.signature(classes[kind]).parameters.values()
    named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if not any(p.kind == p.VAR_KEYWORD for p in params):
        reject_unknown(d, {p.name for p in named}, f"failure model {kind!r}")
    missing = [p.name for p in named if p.default is p.empty and p.name not in d]
    if missing:  # the constructor's own TypeError names no dict
        raise UsageValueError(f"failure model {kind!r} needs {', '.join(repr(m) for m in missing)}, missing from "
                              f"{dict(model=kind, **d)!r}")
    if kind == "domains" and d.get("background") is not None:
        d["background"] = failure_model_from_dict(d["background"])
    return classes[kind](**d)


#: Failure models a sweep or the command line can name: ``uniform`` (uniform order, no clock; wipe-out and
#: overhead studies only), ``system`` (system-level Weibull renewal, rate proportional to live GPUs), ``per_gpu``
#: (per-GPU Weibull lifetimes), ``node`` / ``rack`` / ``power`` / ``pod`` (failure domains with per-GPU background;
#: :data:`spare_mc.model.topology.DOMAIN_LEVELS`), ``mixed`` (several levels at once with per-GPU background:
#: ``domain_levels``, by default every level at its default rate).
FAILURE_KINDS = ("uniform", "system", "per_gpu") + DOMAIN_LEVELS + ("mixed",)

#: Defaults of the failure-model parameters beyond ``mtbf_s`` and ``shape`` (used when a value is not given).
FAILURE_SPEC_DEFAULTS = {"age_policy": "renew", "domain_mtbf_s": None, "n_gpus": 600_000,
                         "placement": "contiguous", "calibration": "first_failure", "domain_levels": None}


def parse_domain_levels(text: str) -> dict:
    """The levels of a ``mixed`` failure model from their flat text (a sweep's or the command line's
    ``domain_levels``): comma-separated ``level`` (at its default rate,
    :data:`spare_mc.model.domain_rates.DOMAIN_MTBF_DEFAULTS`) or ``level=mtbf_s``; ``"all"``: every level at its default.

    Examples
    --------
    >>> d = parse_domain_levels("node, rack=3e7")
    >>> list(d), d["rack"]
    (['node', 'rack'], 30000000.0)
    >>> list(parse_domain_levels("all"))
    ['node', 'rack', 'power', 'pod']
    """
    if not isinstance(text, str):
        raise UsageTypeError(f"`domain_levels` must be a string such as 'node,rack=3e7', got {text!r}")
    if text.strip() == "all":
        return dict(DOMAIN_MTBF_DEFAULTS)
    out = {}
    for item in text.split(","):
        name, eq, value = item.partition("=")
        name = name.strip()
        if name not in DOMAIN_LEVELS:
            raise UsageValueError(f"`domain_levels` must list levels of {list(DOMAIN_LEVELS)} as 'level' or "
                                  f"'level=mtbf_s', comma-separated, got {item.strip()!r} in {text!r}")
        if name in out:
            raise UsageValueError(f"`domain_levels` must name each level once, got {name!r} twice in {text!r}")
        if not eq:
            out[name] = DOMAIN_MTBF_DEFAULTS[name]
            continue
        if not value.strip():
            raise UsageValueError(f"`domain_levels`: {item.strip()!r} has no mean lifetime after '=' (give "
                                  f"'{name}=mtbf_s', or '{name}' for its default rate), in {text!r}")
        try:
            out[name] = float(value)
        except ValueError:
            raise UsageValueError(f"`domain_levels`: the mean lifetime of {name!r} must be a number of seconds, got "
                                  f"{value.strip()!r}") from None
        as_float(out[name], f"domain_levels[{name!r}]", positive=True)
    return out


#: The domain sizes of a :class:`Topology` (GPUs per node, nodes per rack, ...), finest first: ``sizes`` of
#: :func:`failure_from_spec`, which a domain level uses up to its own (``node`` only ``gpus_per_node``).
DOMAIN_SIZES = ("gpus_per_node", "nodes_per_rack", "racks_per_power", "power_per_pod")


def failure_from_spec(kind: str, n_groups: int, *, mtbf_s: float, shape: float, age_policy=None,
                      domain_mtbf_s=None, n_gpus=None, placement=None, calibration=None, domain_levels=None,
                      clocked: bool = False, sizes=None):
    """The failure model and topology named by flat parameters (a sweep's or the command line's).

    Parameters
    ----------
    kind : one of :data:`FAILURE_KINDS`
    n_groups : int
    mtbf_s, shape : float
        Full-system MTBF (s) and Weibull shape. For ``per_gpu`` and the domain models' background the per-GPU mean
        lifetime is set from ``mtbf_s`` by ``calibration`` (:meth:`PerGPU.from_system_mtbf`): by default so that the
        **first failure of a fresh system** has mean ``mtbf_s``; ``"long_run"`` matches the long-run rate.
    age_policy, domain_mtbf_s, n_gpus, placement, calibration, domain_levels : optional
        ``None`` = not given: :data:`FAILURE_SPEC_DEFAULTS`. A value given for a model it does not affect is an
        error (``n_gpus`` of the system process, say), never silently ignored; ``n_gpus`` is always validated.
        ``domain_levels`` (``mixed`` only; :func:`parse_domain_levels`) defaults to every level at its default
        rate; ``domain_mtbf_s`` is the one level's mean lifetime of ``node`` ... ``pod`` only.
    clocked : bool
        For the timeline: ``uniform`` is refused (it has no clock) and ``system`` returns ``(None, None)`` (the
        timeline's own system-level process) instead of a :class:`SystemRenewal`.
    sizes : dict, optional
        Domain sizes of the topology (:data:`DOMAIN_SIZES` -> int; the others keep :class:`Topology`'s defaults),
        for the domain models only, and each only up to the model's coarsest level (``rack`` takes
        ``gpus_per_node`` and ``nodes_per_rack``): a size that changes nothing is an error.

    Returns
    -------
    (model or None, Topology or None)
    """
    kind = as_choice(kind, "failure_model", FAILURE_KINDS)
    n_groups = as_int(n_groups, "n_groups", min_value=1)
    if sizes is None:
        sizes = {}
    if not isinstance(sizes, dict) or not set(sizes) <= set(DOMAIN_SIZES):
        raise UsageValueError(f"`sizes` must be a dict of domain sizes ({', '.join(DOMAIN_SIZES)}), got {sizes!r}")
    given = {"age_policy": age_policy, "domain_mtbf_s": domain_mtbf_s, "n_gpus": n_gpus, "placement": placement,
             "calibration": calibration, "domain_levels": domain_levels, **sizes}
    given = {k: v for k, v in given.items() if v is not None}
    sizes = {k: as_int(v, k, min_value=1) for k, v in given.items() if k in DOMAIN_SIZES}
    p = {**FAILURE_SPEC_DEFAULTS, **given}
    if "n_gpus" in given or kind not in ("uniform", "system"):  # the default applies only where it is used
        n_gpus = as_int(p["n_gpus"], "n_gpus", min_value=n_groups)
        if n_gpus % n_groups and "n_gpus" not in given:  # the default G: say how to set the cluster's own
            raise UsageValueError(f"`n_groups` must divide `n_gpus` (each group has M = G/N GPUs), got N={n_groups} "
                                  f"and the default G={n_gpus}: give `n_gpus`, the cluster's GPU count (a multiple "
                                  f"of N)")
    as_choice(p["age_policy"], "age_policy", AGE_POLICIES)
    as_choice(p["calibration"], "calibration", CALIBRATIONS)
    if kind in ("uniform", "system"):
        useless = sorted(given)
        if useless:
            raise UsageValueError(f"{', '.join(f'`{k}`' for k in useless)} has no effect with failure_model={kind!r} "
                                  f"(it applies to 'per_gpu', 'node', 'rack', 'power', 'pod' or 'mixed')")
        if kind == "uniform":
            if clocked:
                raise UsageValueError("`failure_model` = 'uniform' has no clock; time to train needs 'system', "
                                      "'per_gpu', 'node', 'rack', 'power', 'pod' or 'mixed'")
            return None, None
        return (None if clocked else SystemRenewal(mtbf_s, shape)), None
    if kind == "per_gpu":
        # (n_gpus is taken: with calibration='first_failure' a time-to-train run does not depend on it -- its unit
        # is a whole group, whose first failure has the same law for any G -- but it is the cluster's size, which
        # N must divide, and it sets the per-GPU mean lifetime the result reports)
        useless = sorted(k for k in ("domain_mtbf_s", "placement", "domain_levels", *DOMAIN_SIZES) if k in given)
        if useless:
            raise UsageValueError(f"{', '.join(f'`{k}`' for k in useless)} has no effect with "
                                  f"failure_model='per_gpu' (equal groups: where their GPUs sit does not change "
                                  f"their lifetimes; it applies to 'node', 'rack', 'power', 'pod' or 'mixed')")
        topo = Topology(n_gpus, n_groups, placement=p["placement"])
        return PerGPU.from_system_mtbf(mtbf_s, n_gpus, shape, p["age_policy"], p["calibration"]), topo
    if kind == "mixed":
        if "domain_mtbf_s" in given:
            raise UsageValueError("`domain_mtbf_s` has no effect with failure_model='mixed' (give each level's mean "
                                  "lifetime in `domain_levels`, e.g. 'node,rack=3e7')")
        levels = parse_domain_levels("all" if p["domain_levels"] is None else p["domain_levels"])
    else:
        if "domain_levels" in given:
            raise UsageValueError(f"`domain_levels` has no effect with failure_model={kind!r} (it applies to "
                                  f"'mixed')")
        if p["domain_mtbf_s"] is None:
            raise UsageValueError(f"`domain_mtbf_s` (mean lifetime of one {kind} domain, s) is required with "
                                  f"failure_model={kind!r}")
        levels = (kind,)
    coarsest = max(DOMAIN_LEVELS.index(lvl) for lvl in levels)
    useless = [k for k in DOMAIN_SIZES[coarsest + 1:] if k in given]
    if useless:
        made_of = ", ".join(DOMAIN_SIZES[:coarsest + 1])
        raise UsageValueError(f"{', '.join(f'`{k}`' for k in useless)} has no effect with failure_model={kind!r}: "
                              f"the {DOMAIN_LEVELS[coarsest]} domains are made of {made_of} only")
    topo = Topology(n_gpus, n_groups, placement=p["placement"], **sizes)
    bg = PerGPU.from_system_mtbf(mtbf_s, n_gpus, shape, p["age_policy"], p["calibration"])
    if kind == "mixed":
        return DomainFailures(levels=levels, shape=shape, background=bg), topo
    return DomainFailures(kind, p["domain_mtbf_s"], shape, background=bg), topo


class KernelProcess(NamedTuple):
    """A failure model lowered to the scalars and arrays of :func:`spare_mc._kernels.wipeout.wipeout_events`.

    Domain units are the domains of every level, concatenated (``dom_groups[dom_ptr[d]:dom_ptr[d + 1]]`` are the
    groups domain ``d`` touches); level ``l`` owns domains ``level_ptr[l]:level_ptr[l + 1]``, each of cumulative
    hazard ``level_rate[l] (t / scale)^k``; a group unit has ``group_rate (t / scale)^k``.
    """

    mode: int
    shape: float
    scale: float
    live_scaling: bool
    group_rate: float
    level_rate: np.ndarray
    level_ptr: np.ndarray
    dom_ptr: np.ndarray
    dom_groups: np.ndarray


def lower(model, topology: Topology) -> KernelProcess:
    """Translate a clocked failure model into kernel parameters (rates in units of ``scale``).

    For :class:`DomainFailures` the unit of time is the Weibull scale of its first (finest) level, so that level's
    rate is exactly 1 and a one-level model lowers as it always did; another level's rate is ``(scale /
    scale_l)^k``, the background's ``(scale / s_g)^k`` with ``s_g`` a group's scale.
    """
    empty_ptr = np.zeros(1, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    no_levels = np.zeros(0), np.zeros(1, dtype=np.int64)
    if isinstance(model, SystemRenewal):
        return KernelProcess(0, model.shape, weibull_scale(model.mtbf_s, model.shape), model.live_scaling, 0.0,
                             *no_levels, empty_ptr, empty)
    if isinstance(model, PerGPU):
        # each group's hazard is (t / group_scale)^k: rate 1 in units of group_scale
        return KernelProcess(1, model.shape, model.group_scale(topology), False, 1.0, *no_levels, empty_ptr, empty)
    if isinstance(model, DomainFailures):
        k = model.shape
        scale = weibull_scale(model.levels[0][1], k)  # the first level's hazard (t/scale)^k: rate 1
        group_rate = 0.0 if model.background is None else (scale / model.background.group_scale(topology)) ** k
        level_rate = np.array([(scale / weibull_scale(m, k)) ** k for _, m in model.levels])
        ptr, groups, level_ptr = topology.domain_units(model.level_names)
        return KernelProcess(1, k, scale, False, group_rate, level_rate, level_ptr, ptr, groups)
    raise UsageTypeError(f"`failures` must be one of {[m.__name__ for m in FAILURE_MODELS]}, got "
                         f"{type(model).__name__}")


@dataclass(frozen=True)
class FailureEvents:
    """A stream of failure events.

    ``times[e]`` is the time of event ``e`` (seconds; event indices for :class:`UniformOrder`) and
    ``groups[ptr[e]:ptr[e + 1]]`` the groups it killed.
    """

    times: np.ndarray
    ptr: np.ndarray
    groups: np.ndarray

    def __len__(self):
        return len(self.times)

    def killed(self, e: int) -> np.ndarray:
        """Groups killed by event ``e`` (``0 <= e < n_events``; -1 gave an empty array, not the last event)."""
        e = as_int(e, "e", min_value=0, max_value=self.ptr.size - 2)
        return self.groups[self.ptr[e]:self.ptr[e + 1]]


def sample_events(failures, topology: Topology, *, rng=None) -> FailureEvents:
    """Draw one stream of failure events from a fully live system until every group is dead.

    Parameters
    ----------
    failures : UniformOrder, SystemRenewal, PerGPU or DomainFailures
    topology : Topology
    rng : None, int >= 0, list of them, SeedSequence or Generator
        The randomness (``None``: fresh entropy). A Generator is used as it is and advanced; numpy's other seed
        forms (arrays, bit generators, ``RandomState``) are refused with a :class:`UsageTypeError`.

    Returns
    -------
    FailureEvents

    Examples
    --------
    >>> ev = sample_events(PerGPU(gpu_mtbf_s=3.0e9, shape=0.78), Topology(600_000, 600), rng=1)
    >>> len(ev), ev.groups.size
    (600, 600)
    """
    if not isinstance(topology, Topology):
        raise UsageTypeError(f"`topology` must be a Topology, got {type(topology).__name__}")
    rng = generator(rng)
    n = topology.n_groups
    if isinstance(failures, UniformOrder):
        if failures.with_replacement:
            raise UsageValueError("`failures` with_replacement=True has no finite stream of distinct deaths; it is "
                                  "only meaningful inside wipeout_mc")
        perm = rng.permutation(n).astype(np.int64)
        return FailureEvents(np.arange(1, n + 1, dtype=np.float64), np.arange(n + 1, dtype=np.int64), perm)
    proc = lower(failures, topology)
    no_types_ptr = np.zeros(n + 1, dtype=np.int64)
    no_types = np.zeros(0, dtype=np.int64)
    rec_time = np.empty(n)
    rec_end = np.empty(n, dtype=np.int64)
    rec_killed = np.empty(n, dtype=np.int64)
    out = np.empty(1, dtype=np.int64), np.empty(1, dtype=np.int64), np.empty(1)
    k = _k.wipeout_events(rng, *_k.raw_source(rng), Holding(n, no_types_ptr, no_types, np.zeros(n, dtype=np.int64)),
                          0, proc, 1, TrialsOut(*out), EventRecord(rec_time, rec_end, rec_killed))
    ptr = np.zeros(k + 1, dtype=np.int64)
    ptr[1:] = rec_end[:k]
    return FailureEvents(rec_time[:k].copy(), ptr, rec_killed[:ptr[-1]].copy())


class PerGPUClock:
    """Next failure time of every group under per-GPU Weibull lifetimes, across global restarts.

    GPU ages accrue in wall-clock time, running or idle. Each group's GPUs are kept as **cohorts** (count, birth
    time); a new system is one cohort of ``M`` GPUs born at ``start_s``. ``next_failure_s[g]`` is group ``g``'s
    next failure time, drawn as the first failure of its cohorts given that they are alive now: solve
    ``sum_c n_c [H(now + s - b_c) - H(now - b_c)] = E`` for ``s`` with ``E ~ Exp(1)`` and the GPU cumulative
    hazard ``H(a) = (a / lam)^k`` (bisection, to relative precision 1e-12).

    At a global restart at ``now_s`` (:meth:`restart`), with the failed groups and their failure times:

    - ``age_policy="renew"``: every GPU is as good as new (all groups restart as one cohort born at ``now_s``);
    - ``age_policy="keep"``: the GPU that failed is replaced by a new one; which cohort it came from is drawn in
      proportion to ``n_c h(t_f - b_c)``. The failed group's other GPUs kept aging while it was down, and those that
      failed in ``(t_f, now_s]`` (binomial per cohort) are replaced too. Live groups keep every GPU. Then every
      group's next failure is drawn given survival to ``now_s``.

    The GPU-by-GPU slow twin is :class:`spare_mc.testing.failures.GpuByGpuClock`; the tests compare the two in
    distribution. For ``shape == 1`` both policies give the same law (memoryless lifetimes).
    """

    def __init__(self, model: PerGPU, topology: Topology, *, rng=None, start_s: float = 0.0):
        if not isinstance(model, PerGPU):
            raise UsageTypeError(f"`model` must be a PerGPU model, got {type(model).__name__}")
        if not isinstance(topology, Topology):
            raise UsageTypeError(f"`topology` must be a Topology, got {type(topology).__name__}")
        self.model = model
        self.topology = topology
        self.rng = generator(rng)
        self.lam = weibull_scale(model.gpu_mtbf_s, model.shape)
        self.now_s = as_float(start_s, "start_s")
        n = topology.n_groups
        self.count = np.zeros((n, 4), dtype=np.int64)
        self.birth = np.zeros((n, 4))
        self._reset_all(self.now_s)

    def _reset_all(self, now):
        self.count[:] = 0
        self.count[:, 0] = self.topology.gpus_per_group
        self.birth[:] = now
        self.next_failure_s = now + self.model.group_scale(self.topology) * self.rng.weibull(
            self.model.shape, size=self.topology.n_groups)

    def _H(self, age):
        return (np.maximum(age, 0.0) / self.lam) ** self.model.shape

    def _draw_next(self, now):
        """Next failure of every group given that all its GPUs are alive at ``now``."""
        n_c, b = self.count, self.birth
        h0 = (n_c * self._H(now - b)).sum(axis=1)
        target = h0 + self.rng.standard_exponential(self.topology.n_groups)

        def excess(s):
            return (n_c * self._H(now + s[:, None] - b)).sum(axis=1) - target

        hi = np.full(self.topology.n_groups, self.model.group_scale(self.topology))
        for _ in range(200):
            short = excess(hi) < 0
            if not short.any():
                break
            hi[short] *= 2.0
        lo = np.zeros_like(hi)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            above = excess(mid) >= 0
            hi = np.where(above, mid, hi)
            lo = np.where(above, lo, mid)
            if np.all(hi - lo <= 1e-12 * hi):
                break
        self.next_failure_s = now + hi

    def restart(self, now_s: float, failed_groups, failure_times_s=None):
        """Global restart at ``now_s`` after ``failed_groups`` failed at ``failure_times_s`` (default: their
        :attr:`next_failure_s`). Returns the new :attr:`next_failure_s`."""
        now_s = as_float(now_s, "now_s")
        failed = np.asarray(failed_groups, dtype=np.int64).ravel()
        if failed.size and (failed.min() < 0 or failed.max() >= self.topology.n_groups):
            raise UsageValueError(f"`failed_groups` must be group indices in [0, {self.topology.n_groups})")
        if np.unique(failed).size != failed.size:
            raise UsageValueError("`failed_groups` must not repeat a group")
        tf = self.next_failure_s[failed] if failure_times_s is None else np.asarray(failure_times_s, float).ravel()
        if tf.shape != failed.shape:
            raise UsageValueError("`failure_times_s` must have one time per failed group")
        if failed.size and (np.any(tf > now_s) or np.any(tf < self.now_s)):
            raise UsageValueError("`failure_times_s` must lie between the previous restart and `now_s`")
        missed = np.setdiff1d(np.nonzero(self.next_failure_s <= now_s)[0], failed)
        if missed.size:
            raise UsageValueError(f"`failed_groups` must list every group that failed by `now_s`; group {missed[0]} "
                                  f"failed at {self.next_failure_s[missed[0]]} <= {now_s}")
        self.now_s = now_s
        if self.model.age_policy == "renew":
            self._reset_all(now_s)
            return self.next_failure_s
        k = self.model.shape
        for g, t in zip(failed.tolist(), tf.tolist()):
            n_c, b = self.count[g], self.birth[g]
            live = n_c > 0
            # the failing GPU's cohort, in proportion to n_c h(t - b_c), h(a) = k/lam (a/lam)^(k-1)
            w = np.where(live, n_c * np.maximum(t - b, 1e-300) ** (k - 1.0), 0.0)
            c = self.rng.choice(len(w), p=w / w.sum())
            n_c[c] -= 1
            # the others aged idle through (t, now]: failed with probability 1 - S(now - b)/S(t - b)
            p_fail = -np.expm1(-(self._H(now_s - b) - self._H(t - b)))
            extra = self.rng.binomial(n_c, np.clip(p_fail, 0.0, 1.0))
            n_c -= extra
            self._add_cohort(g, 1 + int(extra.sum()), now_s)
        self._draw_next(now_s)
        return self.next_failure_s

    def _add_cohort(self, g, count, birth):
        free = np.nonzero(self.count[g] == 0)[0]
        if free.size == 0:
            grow = self.count.shape[1]
            self.count = np.concatenate([self.count, np.zeros_like(self.count[:, :grow])], axis=1)
            self.birth = np.concatenate([self.birth, np.zeros_like(self.birth[:, :grow])], axis=1)
            free = np.array([grow])
        self.count[g, free[0]] = count
        self.birth[g, free[0]] = birth
