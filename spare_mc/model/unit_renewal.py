"""A cluster in service: every unit of one level is an independent Weibull renewal process, started at its age.

:class:`UnitRenewal` is the failure model a per-unit fit of a failure log hands to the timeline
(:mod:`spare_mc.logs.models`). It differs from :class:`spare_mc.PerGPU` in two ways, both needed to reproduce a log:

- **the failures are the cluster's, not the job's**: every unit (GPU, node, rack, ...) fails and is renewed (repaired
  or replaced as good as new) whether the job runs or not, so the failures form one **exogenous stream** of events
  ``(time, unit)``; the timeline plays it like a log (:func:`spare_mc.ttt.stream.simulate_stream_ttt`). A global
  restart of the job renews nothing.
- **units start at their age**, never silently new: ``ages="stationary"`` (the default) starts every unit at the
  stationary age of its renewal process, the state of a cluster long in service; ``"new"`` starts them all new (the
  assumption of :class:`spare_mc.PerGPU`); :class:`UnitAges` gives each unit its age (known, or only a lower bound:
  what a log says at a chosen start time, :meth:`spare_mc.logs.models.UnitFit.ages_at`).

The draws (Weibull lifetime ``X`` with shape ``k``, scale ``lam``, mean ``mu = lam Gamma(1 + 1/k)``):

- a new unit's first failure: ``X``;
- the stationary start: the first failure is the forward recurrence time ``R``, with density ``S(x) / mu``. It is
  drawn as ``R = U X*`` with ``U`` uniform and ``X*`` the length-biased lifetime (density ``x f(x) / mu``), for which
  ``(X* / lam)^k`` is Gamma(1 + 1/k, 1) (Cox, *Renewal Theory*, 1962, section 5.2);
- a unit of known age ``a``: the residual life given survival to ``a``, ``lam ((a / lam)^k + E)^(1/k) - a`` with
  ``E`` standard exponential (inverting the cumulative hazard);
- a unit of age at least ``a`` (no failure seen in a log since its start ``a`` seconds ago): the stationary age
  conditioned on ``A >= a``, ``P(A > x) = Q(1/k, (x / lam)^k)`` (regularised upper incomplete gamma), inverted, then
  its residual life as above.

After its first failure a unit renews: its next lifetimes are iid ``X``. The slow, obviously correct twin is
:func:`spare_mc.testing.unit_renewal.unit_stream_slow`; the tests check the stationary stream against its exact law
(the expected count in any window of a stationary renewal process is ``units x window / mu``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special as _sp

from .._lib.seeding import generator
from .._lib.validation import UsageTypeError, UsageValueError, as_choice, as_float, as_vector
from .failures import check_shape, weibull_scale
from .topology import DOMAIN_LEVELS, Topology

__all__ = [
    "AGE_STARTS",
    "UNIT_LEVELS",
    "UnitAges",
    "UnitRenewal",
    "UnitStream",
    "advance_chains",
    "events_csr",
    "first_failures",
    "unit_groups",
]

#: How the units of a :class:`UnitRenewal` start (besides a :class:`UnitAges`).
AGE_STARTS = ("stationary", "new")
#: Levels a unit may be.
UNIT_LEVELS = ("gpu",) + tuple(DOMAIN_LEVELS)


@dataclass(frozen=True, eq=False)
class UnitAges:
    """Each unit's age at the start (s): exact where ``known``, else a lower bound (the unit did not fail in the
    ``age_s`` seconds a log saw of it; its age beyond is stationary)."""

    age_s: np.ndarray
    known: np.ndarray

    def __post_init__(self):
        a = as_vector(self.age_s, "age_s", "iuf").astype(float)
        k = as_vector(self.known, "known", "b", size=a.size)
        if a.size and (not np.all(np.isfinite(a)) or a.min() < 0):
            raise UsageValueError("`age_s` must hold finite ages >= 0 (s)")
        a.flags.writeable = False
        k = k.copy()
        k.flags.writeable = False
        object.__setattr__(self, "age_s", a)
        object.__setattr__(self, "known", k)


@dataclass(frozen=True, eq=False)
class UnitRenewal:
    """Independent Weibull renewal processes, one per unit of ``level``, started at their ages (module docstring).

    Parameters
    ----------
    level : {"gpu", "node", "rack", "power", "pod"}
        The failing unit; a unit's failure kills every group with a GPU in it.
    mean_s : float
        Mean lifetime of one unit (s).
    shape : float
        Weibull shape ``k`` in [0.05, 50].
    ages : {"stationary", "new"} or UnitAges
        The units' ages at time 0 (default: stationary).

    Examples
    --------
    >>> m = UnitRenewal("node", 8.64e6, 0.7)
    >>> topo = Topology(1024, 16)
    >>> round(m.system_mtbf_s(topo))  # the long-run mean time between failures of the 128 nodes
    67500
    """

    level: str
    mean_s: float
    shape: float = 1.0
    ages: object = "stationary"

    def __post_init__(self):
        as_choice(self.level, "level", UNIT_LEVELS)
        object.__setattr__(self, "mean_s", as_float(self.mean_s, "mean_s", positive=True))
        object.__setattr__(self, "shape", check_shape(self.shape))
        if not isinstance(self.ages, UnitAges):
            if not isinstance(self.ages, str):
                raise UsageTypeError(f"`ages` must be one of {list(AGE_STARTS)} or a UnitAges, got "
                                     f"{type(self.ages).__name__}")
            as_choice(self.ages, "ages", AGE_STARTS)

    @property
    def scale_s(self) -> float:
        """Weibull scale ``lam`` of one unit's lifetime."""
        return weibull_scale(self.mean_s, self.shape)

    def units(self, topology: Topology) -> int:
        """Units of ``level`` in ``topology``."""
        return topology.unit_count(self.level)

    def system_mtbf_s(self, topology: Topology) -> float:
        """Long-run mean time between failures of the whole cluster, ``mean_s / units`` (the elementary renewal
        theorem; exact at every time for the stationary start)."""
        return self.mean_s / self.units(topology)

    def check_topology(self, topology: Topology) -> None:
        if not isinstance(topology, Topology):
            raise UsageTypeError(f"`topology` must be a Topology, got {type(topology).__name__}")
        if isinstance(self.ages, UnitAges) and self.ages.age_s.size != self.units(topology):
            raise UsageValueError(f"`ages` gives {self.ages.age_s.size} ages; the topology has "
                                  f"{self.units(topology)} units at level {self.level!r}")

    def stream(self, topology: Topology, *, rng=None) -> UnitStream:
        """The cluster's failure stream on ``topology`` (:class:`UnitStream`)."""
        return UnitStream(self, topology, rng=rng)

    def to_dict(self) -> dict:
        ages = self.ages if isinstance(self.ages, str) else "given"
        return {"model": "unit_renewal", "level": self.level, "mean_s": self.mean_s, "shape": self.shape,
                "ages": ages}


def first_failures(model: UnitRenewal, n: int, rng: np.random.Generator) -> np.ndarray:
    """Time of each unit's first failure from time 0 (module docstring)."""
    k, lam = model.shape, model.scale_s
    ages = model.ages
    if isinstance(ages, str) and ages == "new":
        return lam * rng.weibull(k, size=n)
    if isinstance(ages, str):  # stationary: the forward recurrence time U X*
        xstar = lam * rng.standard_gamma(1.0 + 1.0 / k, size=n) ** (1.0 / k)
        return (1.0 - rng.random(n)) * xstar
    a = ages.age_s.copy()
    unknown = ~ages.known
    if unknown.any():  # stationary age given A >= a: invert P(A > x) = Q(1/k, (x/lam)^k)
        q = _sp.gammaincc(1.0 / k, (a[unknown] / lam) ** k)
        u = 1.0 - rng.random(int(unknown.sum()))  # in (0, 1]
        a[unknown] = lam * _sp.gammainccinv(1.0 / k, u * q) ** (1.0 / k)
        a[unknown] = np.maximum(a[unknown], ages.age_s[unknown])
    h = (a / lam) ** k + rng.standard_exponential(n)
    return np.maximum(lam * h ** (1.0 / k) - a, 0.0)


class UnitStream:
    """The failure events of a :class:`UnitRenewal` cluster, drawn as far as asked (:meth:`until`).

    ``until(t)`` returns every failure in ``[0, t)``, sorted by time (ties by unit), as ``(times_s, units)``; a later
    call with a larger ``t`` returns the whole stream so far: the events before the earlier horizon are unchanged (the
    stream is drawn in order, each unit's chain advanced past the horizon).
    """

    def __init__(self, model: UnitRenewal, topology: Topology, *, rng=None):
        if not isinstance(model, UnitRenewal):
            raise UsageTypeError(f"`model` must be a UnitRenewal, got {type(model).__name__}")
        model.check_topology(topology)
        self.model, self.topology = model, topology
        self.rng = generator(rng)
        self.n_units = model.units(topology)
        self.next_s = first_failures(model, self.n_units, self.rng)
        self.horizon_s = 0.0
        self._times, self._units = [], []

    def until(self, t_s: float) -> tuple[np.ndarray, np.ndarray]:
        t_s = as_float(t_s, "t_s", nonnegative=True)
        if t_s > self.horizon_s:
            tt, uu = advance_chains(self.next_s, t_s, self.model.scale_s, self.model.shape, self.rng)
            order = np.lexsort((uu, tt))
            self._times.append(tt[order])
            self._units.append(uu[order])
            self.horizon_s = t_s
        if len(self._times) != 1:
            self._times = [np.concatenate(self._times)] if self._times else [np.zeros(0)]
            self._units = [np.concatenate(self._units)] if self._units else [np.zeros(0, dtype=np.int64)]
        return self._times[0], self._units[0]


def advance_chains(next_s: np.ndarray, t_s: float, lam: float, k: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Advance independent renewal chains (next failure ``next_s[c]`` of chain ``c``, lifetimes Weibull(k, lam)) past
    ``t_s``, in place; return the failures before ``t_s`` as ``(times, chains)``, unsorted.

    The chains still short of ``t_s`` draw one lifetime each per round. A single chain (the system-level renewal of
    :class:`spare_mc.logs.models.SystemFit`) would then cost a round per failure, so it draws its lifetimes in
    blocks (:func:`_advance_one`): the same draws, sums and generator state after (the twin
    :func:`spare_mc.testing.unit_renewal.advance_chains_slow` is the round-by-round loop).
    """
    if next_s.size == 1:
        return _advance_one(next_s, t_s, lam, k, rng)
    new_t, new_c = [], []
    active = np.flatnonzero(next_s < t_s)
    while active.size:
        new_t.append(next_s[active].copy())
        new_c.append(active)
        next_s[active] += lam * rng.weibull(k, size=active.size)
        active = active[next_s[active] < t_s]
    if not new_t:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    return np.concatenate(new_t), np.concatenate(new_c)


#: Most lifetimes :func:`_advance_one` draws at a time (8 MB of them).
_BLOCK = 1 << 20


def _advance_one(next_s: np.ndarray, t_s: float, lam: float, k: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """:func:`advance_chains` of one chain, its lifetimes drawn in blocks of about the count left to ``t_s``.

    ``Generator.weibull(k, size=m)`` gives the ``m`` draws of ``m`` calls with ``size=1`` and ``np.cumsum`` adds
    left to right as the round-by-round loop does, so the times are the same floats. The draws of a block past the
    one that crosses ``t_s`` are given back: the generator's state is restored from before the block and exactly
    the draws used are made again, so later draws are those of the loop too.
    """
    x = float(next_s[0])
    if not x < t_s:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    mean = lam * math.gamma(1.0 + 1.0 / k)
    out = []
    while x < t_s:
        m = int(min(_BLOCK, 16 + 1.25 * (t_s - x) / mean))
        state = rng.bit_generator.state
        c = np.cumsum(np.concatenate([[x], lam * rng.weibull(k, size=m)]))
        cross = np.flatnonzero(c >= t_s)
        if cross.size:
            j = int(cross[0])  # c[:j] are failures before t_s; the chain's next one is c[j], after j draws
            rng.bit_generator.state = state
            rng.weibull(k, size=j)
            out.append(c[:j])
            x = float(c[j])
        else:
            out.append(c[:m])
            x = float(c[m])
    next_s[0] = x
    t = np.concatenate(out)
    return t, np.zeros(t.size, dtype=np.int64)


def unit_groups(topology: Topology, level: str) -> tuple[np.ndarray, np.ndarray]:
    """Groups each unit of ``level`` kills, CSR ``(ptr, groups)`` (a GPU: its group)."""
    if level == "gpu":
        g = topology.group_of_gpu()
        return np.arange(g.size + 1, dtype=np.int64), g
    return topology.domain_groups(level)


def events_csr(units: np.ndarray, ptr_u: np.ndarray, groups_u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The groups each event (a failing unit) touches, CSR: ``(ptr, groups)`` with ``groups[ptr[e]:ptr[e + 1]]`` the
    groups of unit ``units[e]``."""
    counts = ptr_u[units + 1] - ptr_u[units]
    ptr = np.zeros(units.size + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    idx = np.repeat(ptr_u[units] - ptr[:-1], counts) + np.arange(ptr[-1], dtype=np.int64)
    return ptr, groups_u[idx]

