"""The failure models the timeline runs, fitted to a failure log: the system-level renewal (:func:`fit_system`) and
per-unit renewals at one level with the units' ages (:func:`fit_units`), each with the command-line flags that run
it (``ttt_flags``) and the synthetic logs of its predictive check (:mod:`spare_mc.logs.predictive`).

System-level renewal (``model="system"``)
    The whole cluster's failures form one renewal process with Weibull inter-arrival times: the process of
    :class:`spare_mc.SystemRenewal`, the timeline's default and the quantity the classic failure studies report.
    Every event of the log counts, whatever its level. The gaps between successive events are the observations,
    **rounded** to the log's time resolution (``resolution_s``; ties across units are gaps of 0 ticks): their exact
    probabilities are those of :func:`spare_mc.logs.likelihood.gap_probabilities`. The log starts at an arbitrary time
    of the cluster's service, so the first event is a forward recurrence time (density ``S(x)/mu``); the time from the
    last event to the window end is right-censored.

Per-unit renewals (``model="unit"``)
    Every unit of one level (GPU, node, rack, ...) is its own Weibull renewal process, renewed at each failure (the
    repair time is not counted), independent of the others: :class:`spare_mc.model.unit_renewal.UnitRenewal`. Its
    lifetimes are the gaps between a unit's failures (rounded likewise when the log has a resolution). The first
    observation of a unit depends on **its age at the log start** (``ages``): ``"stationary"`` (default; a cluster
    long in service: the first failure is a forward recurrence time, a unit that never failed contributes ``P(R >
    window)``) or ``"new"`` (every unit new at the log start: the first failure is a lifetime; the assumption of
    :func:`spare_mc.fit_failure_log`). A log from a cluster in service fitted with ``"new"`` mistakes the units' old
    age for reliability and their first failures for infant mortality; the predictive check says so.

Which fits better is reported as AIC over the same observations when the log has one level (``aic``): the system
model's density of the data ``(time, unit)`` is its density of the event times times ``1/units`` for each event's
unit (each event hits a uniformly random unit); the per-unit model's is the product of the units' renewal
densities. With a resolution ``delta`` the gaps are probabilities of their recorded ticks, but a first failure
(each unit's first, under either model) enters the likelihood as a density: for the AIC it is made the probability
of its tick, ``density x delta`` (to first order in ``delta``), so that both models give probabilities of the same
recorded data and their AIC values compare. (Without it the per-unit model, with a density term per unit that
failed against the system model's one, was charged ``log delta`` per unit, 4.1 nats at minute resolution: a log
drawn from per-unit renewals preferred the system model by 2,100 AIC instead of the reverse by 380.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._lib.seeding import generator
from .._lib.validation import UsageTypeError, UsageValueError, as_choice, as_float
from ..model.failures import SystemRenewal, weibull_scale
from ..model.topology import Topology
from ..model.unit_renewal import AGE_STARTS, UnitAges, UnitRenewal, advance_chains, first_failures
from .failure_log import FailureLog, log_levels
from .likelihood import MLE, Likelihood

__all__ = [
    "MODELS",
    "LevelsModel",
    "SystemFit",
    "UnitFit",
    "detect_resolution",
    "fit_model",
    "fit_system",
    "fit_units",
    "topology_flags",
]

MODELS = ("system", "unit")
#: Resolutions :func:`detect_resolution` recognises (s): an hour, a minute, a second.
_RESOLUTIONS = (3600.0, 60.0, 1.0)


def detect_resolution(time_s: np.ndarray) -> float:
    """The coarsest of 3600, 60 and 1 s of which every event time is a multiple (0: times finer than a second).

    Examples
    --------
    >>> detect_resolution(np.array([60.0, 180.0, 240.0])), detect_resolution(np.array([1.5, 3.0]))
    (60.0, 0.0)
    """
    t = np.asarray(time_s, dtype=float)
    for res in _RESOLUTIONS:
        q = t / res
        if np.all(np.abs(q - np.rint(q)) <= 1e-9 * np.maximum(1.0, np.abs(q))):
            return res
    return 0.0


def _resolution_iv(resolution_s, time_s) -> float:
    if resolution_s is None or (isinstance(resolution_s, str) and resolution_s == "auto"):
        return detect_resolution(time_s)
    res = as_float(resolution_s, "resolution_s", nonnegative=True)
    if res > 0:
        q = time_s / res
        bad = np.abs(q - np.rint(q)) > 1e-9 * np.maximum(1.0, np.abs(q))
        if np.any(bad):
            i = int(np.argmax(bad))
            raise UsageValueError(f"`resolution_s`={res:g}: the event time {float(time_s[i])!r} (row {i + 1}) is not a "
                                  f"multiple of it; give the log's resolution, 0 for exact times, or 'auto'")
    return res


def topology_flags(topology: Topology) -> list:
    """The ``spare-mc ttt`` flags of a topology (every field but ``n_groups``, the job's own: the domains are the
    log's)."""
    out = []
    for name, value in topology.to_dict().items():
        if name != "n_groups":
            out += [f"--{name.replace('_', '-')}", str(value)]
    return out


def _tick_log(res: float, densities: int) -> float:
    """``densities x log(res)``: the density terms of a rounded likelihood made tick probabilities for the AIC
    (module docstring; 0 for exact times)."""
    return densities * math.log(res) if res > 0 else 0.0


def _round_ticks(t: np.ndarray, res: float) -> np.ndarray:
    return np.floor(t / res) * res if res > 0 else t


@dataclass(frozen=True, eq=False)
class _Fit:
    """What the two fits share."""

    shape: float
    shape_ci: tuple
    mean_s: float
    mean_ci: tuple
    n_events: int
    window_s: float
    resolution_s: float
    loglik: float
    ci_method: str
    ci_level: float
    topology: Topology
    source: str
    aic_data: float = field(default=math.nan)

    @property
    def scale_s(self) -> float:
        return weibull_scale(self.mean_s, self.shape)

    @property
    def aic(self) -> float:
        """AIC of the fit's density of the log's ``(time, unit)`` data (module docstring; NaN when the log has
        several levels)."""
        return 4.0 - 2.0 * self.aic_data if math.isfinite(self.aic_data) else math.nan

    def _common(self) -> dict:
        return {"shape": self.shape, "shape_ci95" if self.ci_level == 0.95 else "shape_ci": list(self.shape_ci),
                "n_events": self.n_events, "window_s": self.window_s, "resolution_s": self.resolution_s,
                "loglik": self.loglik, "aic": self.aic, "ci_method": self.ci_method, "ci_level": self.ci_level,
                "source": self.source, "topology": self.topology.to_dict()}


@dataclass(frozen=True, eq=False)
class SystemFit(_Fit):
    """A system-level Weibull renewal fitted to a log (:func:`fit_system`): ``mean_s`` is the system MTBF."""

    kind = "system"

    @property
    def mtbf_s(self) -> float:
        return self.mean_s

    def model(self) -> SystemRenewal:
        """The :class:`spare_mc.SystemRenewal` of the fit (the timeline's ``failures=None`` process)."""
        return SystemRenewal(self.mean_s, self.shape)

    def ttt_flags(self) -> list:
        """The ``spare-mc ttt`` flags that run this model (add the job's own: strategy, N, steps, ...)."""
        return ["--failures", "system", "--mtbf-s", repr(self.mean_s), "--shape", repr(self.shape)]

    def sample_times(self, window_s: float, n: int, rng) -> list:
        """``n`` windows ``[0, window_s)`` of the stationary renewal, each rounded to the resolution: a list of
        sorted time arrays."""
        rng = generator(rng)
        m = UnitRenewal("gpu", self.mean_s, self.shape)  # one chain per window: the same draws as a unit's
        nxt = first_failures(m, n, rng)
        t, c = advance_chains(nxt, window_s, m.scale_s, m.shape, rng)
        order = np.lexsort((t, c))
        t, c = _round_ticks(t[order], self.resolution_s), c[order]
        cut = np.searchsorted(c, np.arange(n + 1))
        return [t[cut[i]:cut[i + 1]] for i in range(n)]

    def sample_log(self, window_s: float, rng, times=None) -> FailureLog:
        """A synthetic log of the window under the model: each event hits a uniformly random GPU (so a random group;
        an event on a dead group is no event of the job, the live scaling of :class:`spare_mc.SystemRenewal`)."""
        rng = generator(rng)
        t = self.sample_times(window_s, 1, rng)[0] if times is None else times
        topo = self.topology
        levels = ("gpu",) + tuple(lv for lv in log_levels(topo) if lv != "gpu")
        u = rng.integers(0, topo.n_gpus, size=t.size)
        return FailureLog(t, np.zeros(t.size, dtype=np.int64), u, None, float(window_s), topo, levels, "simulated")

    def to_dict(self) -> dict:
        return {"model": "system", **self._common(), "mtbf_s": self.mean_s, "mtbf_s_ci95": list(self.mean_ci),
                "ttt_flags": self.ttt_flags(),
                "assumptions": "one renewal process of the whole cluster: every event of the log, whatever its "
                               "level, is one failure; gaps rounded to the resolution (ties: gaps of 0 ticks); the "
                               "log starts at a stationary time (first event: forward recurrence time); the last "
                               "gap right-censored at the window end"}


@dataclass(frozen=True, eq=False)
class UnitFit(_Fit):
    """Per-unit Weibull renewals at one level fitted to a log (:func:`fit_units`): ``mean_s`` is one unit's mean
    lifetime."""

    level: str = "node"
    ages: str = "stationary"
    units: int = 0
    other_events: int = 0

    kind = "unit"

    def model(self, ages=None) -> UnitRenewal:
        """The :class:`spare_mc.model.unit_renewal.UnitRenewal` of the fit, its units starting at ``ages`` (default:
        the ages the fit assumed at the log start; or a :class:`UnitAges`, e.g. :meth:`ages_at`)."""
        return UnitRenewal(self.level, self.mean_s, self.shape, self.ages if ages is None else ages)

    def system_mtbf_s(self) -> float:
        """The cluster's long-run mean time between failures at this level, ``mean_s / units``."""
        return self.mean_s / self.units

    def ages_at(self, log: FailureLog, start_s: float) -> UnitAges:
        """The units' ages at log time ``start_s`` as the log gives them: the time since a unit's last failure
        before ``start_s`` (known), else at least ``start_s`` (with ``ages="stationary"``: beyond it the age is
        stationary) or exactly the time since the log start (``ages="new"``)."""
        start_s = as_float(start_s, "start_s", nonnegative=True)
        if start_s > log.duration_s:
            raise UsageValueError(f"`start_s`={start_s:g} lies after the log's window end {log.duration_s:g} s")
        code = log.levels.index(self.level)
        m = (log.level == code) & (log.time_s <= start_s)
        last = np.full(self.units, -np.inf)
        np.maximum.at(last, log.unit[m], log.time_s[m])
        seen = np.isfinite(last)
        age = np.where(seen, start_s - last, start_s)
        known = seen | (self.ages == "new")
        return UnitAges(age, known)

    def ttt_flags(self) -> list:
        """The ``spare-mc ttt`` flags that run this model on the log's topology (add the job's own)."""
        return ["--failures", "unit", "--unit-level", self.level, "--unit-mean-s", repr(self.mean_s), "--shape",
                repr(self.shape), "--ages", self.ages, *topology_flags(self.topology)]

    def sample_log(self, window_s: float, rng) -> FailureLog:
        """A synthetic log of the window under the model (same topology, same start state), rounded to the
        resolution."""
        stream = self.model().stream(self.topology, rng=rng)
        t, u = stream.until(window_s)
        t = _round_ticks(t, self.resolution_s)
        levels = log_levels(self.topology)
        code = levels.index(self.level)
        return FailureLog(t, np.full(t.size, code, dtype=np.int64), u, None, float(window_s), self.topology,
                          levels, "simulated")

    def to_dict(self) -> dict:
        return {"model": "unit", "level": self.level, "ages": self.ages, **self._common(),
                "mean_lifetime_s": self.mean_s, "mean_lifetime_s_ci95": list(self.mean_ci), "units": self.units,
                "system_mtbf_s": self.system_mtbf_s(), "other_level_events": self.other_events,
                "ttt_flags": self.ttt_flags(),
                "assumptions": f"every {self.level} an independent Weibull renewal process, renewed at each failure "
                               f"(repair time not counted); at the log start the units are "
                               + ("in their stationary state (a cluster long in service)" if self.ages == "stationary"
                                  else "all new") + "; lifetimes from a unit's last failure to the window end "
                               "right-censored" + (f"; {self.other_events} events at other levels are not in this "
                                                   f"model" if self.other_events else "")}


def _check_log(log):
    if not isinstance(log, FailureLog):
        raise UsageTypeError(f"`log` must be a FailureLog (spare_mc.read_failure_log), got {type(log).__name__}")


def _finish(mle: MLE, level: float, ci: str):
    cis = mle.intervals(level, ci)
    return {"shape": mle.k, "shape_ci": tuple(cis["shape"]), "mean_s": mle.mean_s, "mean_ci": tuple(cis["mean_s"]),
            "loglik": mle.loglik, "ci_method": ci, "ci_level": level}


def fit_system(log: FailureLog, *, resolution_s="auto", level: float = 0.95, ci: str = "wald") -> SystemFit:
    """Fit a system-level Weibull renewal to every event of a log (module docstring).

    Parameters
    ----------
    log : FailureLog
    resolution_s : float or "auto"
        The time resolution of the log's times (s): the gaps are rounded observations of this many seconds (0:
        exact times; a gap of 0 is then refused). ``"auto"`` (default): the coarsest of an hour, a minute, a
        second that divides every time (:func:`detect_resolution`).
    level : float
        Confidence level of the intervals.
    ci : {"wald", "profile"}
        Wald intervals on the log scale from the observed information, or profile-likelihood intervals.

    Returns
    -------
    SystemFit

    Examples
    --------
    >>> from spare_mc.logs.synthetic import example_log_path
    >>> from spare_mc import read_failure_log
    >>> log = read_failure_log(example_log_path(), Topology(256, 32, nodes_per_rack=4, racks_per_power=2))
    >>> fit = fit_system(log)
    >>> fit.n_events, fit.ttt_flags()[:2]
    (372, ['--failures', 'system'])
    """
    _check_log(log)
    level = as_float(level, "level", positive=True, max_value=1.0, max_inclusive=False)
    ci = as_choice(ci, "ci", ("wald", "profile"))
    t = log.time_s
    if t.size < 3:
        raise UsageValueError(f"{log.source}: the system fit needs at least 3 events, the log has {t.size}")
    res = _resolution_iv(resolution_s, t)
    gaps = np.diff(t)
    lik = Likelihood(res)
    if res > 0:
        lik.add("rounded", gaps / res)
    else:
        if np.any(gaps <= 0):
            i = int(np.argmax(gaps <= 0))
            raise UsageValueError(f"{log.source}: rows {i + 1} and {i + 2} fail at the same time {t[i]!r}: a tie; "
                                  f"give the log's `resolution_s` (ties are rounded gaps)")
        lik.add("exact", gaps)
    lik.add("first", [t[0]])
    tail = log.duration_s - t[-1]
    if tail > 0:
        lik.add("censored", [tail])
    mle = MLE(lik)
    levels = set(np.unique(log.level).tolist())
    aic_data = math.nan
    if len(levels) == 1:  # each event hits a uniformly random unit of its level
        units = log.topology.unit_count(log.levels[next(iter(levels))])
        aic_data = mle.loglik - t.size * math.log(units) + _tick_log(res, 1)  # the first event's density
    return SystemFit(n_events=int(t.size), window_s=log.duration_s, resolution_s=res, topology=log.topology,
                     source=log.source, aic_data=aic_data, **_finish(mle, level, ci))


def fit_units(log: FailureLog, unit_level: str, *, ages: str = "stationary", resolution_s="auto",
              level: float = 0.95, ci: str = "wald") -> UnitFit:
    """Fit per-unit Weibull renewals at ``unit_level`` (module docstring).

    Parameters
    ----------
    log : FailureLog
    unit_level : str
        A level of the log (``"gpu"``, ``"node"``, ...): its events are the failures; events at other levels are
        not in the model (counted in ``other_events``).
    ages : {"stationary", "new"}
        The units' ages at the log start.
    resolution_s, level, ci
        As for :func:`fit_system`.

    Returns
    -------
    UnitFit
    """
    _check_log(log)
    as_choice(unit_level, "unit_level", log.levels)
    ages = as_choice(ages, "ages", AGE_STARTS)
    level = as_float(level, "level", positive=True, max_value=1.0, max_inclusive=False)
    ci = as_choice(ci, "ci", ("wald", "profile"))
    code = log.levels.index(unit_level)
    rows = np.flatnonzero(log.level == code)
    if rows.size < 2:
        raise UsageValueError(f"{log.source}: level {unit_level!r} has {rows.size} failures; a fit needs at least 2")
    res = _resolution_iv(resolution_s, log.time_s[rows])
    order = rows[np.lexsort((log.time_s[rows], log.unit[rows]))]
    u, t = log.unit[order], log.time_s[order]
    first = np.concatenate([[True], u[1:] != u[:-1]])
    last = np.concatenate([u[1:] != u[:-1], [True]])
    mid = t[~first] - t[np.flatnonzero(~first) - 1]
    W = log.duration_s
    n_units = log.topology.unit_count(unit_level)
    never = n_units - int(first.sum())
    lik = Likelihood(res)
    if res > 0:
        lik.add("rounded", mid / res)
    else:
        if np.any(mid <= 0):
            raise UsageValueError(f"{log.source}: a {unit_level} fails twice at one time; give the log's "
                                  f"`resolution_s`")
        lik.add("exact", mid)
    tails = W - t[last]
    lik.add("censored", tails[tails > 0])
    if ages == "stationary":
        lik.add("first", t[first])
        lik.add("first_cens", [W], [float(never)])
    else:
        if np.any(t[first] <= 0):
            raise UsageValueError(f"{log.source}: a {unit_level} fails at time 0: with ages='new' its first "
                                  f"lifetime is 0; the log must start before its first failure")
        lik.add("exact", t[first])
        lik.add("censored", [W], [float(never)])
    mle = MLE(lik)
    single = np.unique(log.level).size == 1
    return UnitFit(n_events=int(rows.size), window_s=W, resolution_s=res, topology=log.topology, source=log.source,
                   aic_data=mle.loglik + _tick_log(res, int(first.sum())) if single else math.nan,
                   level=unit_level, ages=ages, units=n_units,
                   other_events=int(len(log) - rows.size), **_finish(mle, level, ci))


def fit_model(log: FailureLog, model: str = "system", *, unit_level: str | None = None, **kw):
    """:func:`fit_system` (``model="system"``) or :func:`fit_units` (``model="unit"``, at ``unit_level``; default:
    the level with most events)."""
    model = as_choice(model, "model", MODELS)
    if model == "system":
        if unit_level is not None:
            raise UsageValueError("`unit_level` has no effect with model='system' (every event counts)")
        if kw.pop("ages", None) is not None:
            raise UsageValueError("`ages` has no effect with model='system' (the log starts at a stationary time)")
        return fit_system(log, **kw)
    if unit_level is None:
        counts = np.bincount(log.level, minlength=len(log.levels))
        unit_level = log.levels[int(np.argmax(counts))]
    kw = {k: v for k, v in kw.items() if v is not None}
    return fit_units(log, unit_level, **kw)


@dataclass(frozen=True, eq=False)
class LevelsModel:
    """The per-level fits of :func:`spare_mc.fit_failure_log` read as one cluster, for its predictive check: every
    unit of every fitted level an independent Weibull renewal process with its level's shape and mean, **new at the
    log start** (the fit's assumption, and that of the :class:`spare_mc.PerGPU` and :class:`spare_mc.DomainFailures`
    models it hands to the timeline). Build it with :func:`levels_model`."""

    parts: tuple
    topology: Topology
    window_s: float
    resolution_s: float

    kind = "levels"

    @property
    def modelled_levels(self) -> tuple:
        return tuple(level for level, _, _ in self.parts)

    def sample_log(self, window_s: float, rng) -> FailureLog:
        rng = generator(rng)
        levels = log_levels(self.topology)
        ts, us, cs = [], [], []
        for level, shape, mean in self.parts:
            t, u = UnitRenewal(level, mean, shape, "new").stream(self.topology, rng=rng).until(window_s)
            ts.append(t)
            us.append(u)
            cs.append(np.full(t.size, levels.index(level), dtype=np.int64))
        t, u, c = np.concatenate(ts), np.concatenate(us), np.concatenate(cs)
        order = np.lexsort((u, c, t))
        t = _round_ticks(t[order], self.resolution_s)
        return FailureLog(t, c[order], u[order], None, float(window_s), self.topology, levels, "simulated")


def levels_model(fit, log: FailureLog) -> LevelsModel:
    """The :class:`LevelsModel` of a :class:`spare_mc.logs.fit.LogFit` of ``log``."""
    _check_log(log)
    parts = tuple((level, f.shape, f.mean_s) for level, f in fit.fits.items())
    return LevelsModel(parts, log.topology, log.duration_s, detect_resolution(log.time_s))
