"""Synthetic failure logs: Weibull renewal logs (:func:`synthetic_log`), the streams of the samplers written as a log
(:func:`sampled_failure_log`), the shipped example log (:data:`EXAMPLE`, :func:`example_log_path`,
:func:`write_example_log`) and a raw operator's export of a cluster in service (:func:`write_operator_export`), the
input of ``spare-mc log import``.
"""

from __future__ import annotations

import datetime as _dt
import math
from importlib import resources

import numpy as np

from .._lib.resources import check_memory
from .._lib.seeding import generator
from .._lib.validation import UsageTypeError, UsageValueError, as_choice, as_float, as_int
from ..model import topology as _topology
from ..model.failures import (DomainFailures, FailureEvents, PerGPU, UniformOrder, check_shape, sample_events,
                              weibull_scale)
from ..model.topology import Topology
from ..model.unit_renewal import UnitAges, UnitRenewal
from .epochs import as_replay_layout, replay_epochs
from .failure_log import MAX_TIME_S, FailureLog, as_topology, failure_log_from_arrays, log_levels, write_failure_log

__all__ = ["EXAMPLE", "example_log_path", "sampled_failure_log", "synthetic_log", "write_example_log",
           "write_operator_export"]


#: The earliest event time of a synthetic log: a log starts before its first failure (``time_s > 0``), and a
#: lifetime drawn as exactly 0 is moved here (the smallest positive float).
_FIRST_TIME_S = float(np.nextafter(0.0, 1.0))


def _weibull_params_iv(weibull, topology):
    if not isinstance(weibull, dict) or not weibull:
        raise UsageTypeError("`weibull` must be a non-empty dict level -> (shape, mean_s)")
    out = {}
    for name, spec in weibull.items():
        as_choice(name, "weibull level", log_levels(topology))
        if not isinstance(spec, (tuple, list)) or len(spec) != 2:
            raise UsageValueError(f"`weibull[{name!r}]` must be (shape, mean_s), got {spec!r}")
        shape = check_shape(spec[0], f"weibull[{name!r}] shape")  # the failure models' range
        mean = as_float(spec[1], f"weibull[{name!r}] mean_s", positive=True)
        out[name] = (shape, mean)
    return out


def _renewals_bound(t, k, mean):
    """An upper estimate of the mean number of renewals in ``[0, t]`` of Weibull(``k``) lifetimes of the given
    mean: ``min(t / mean + max(CV^2, 1), 1 / P(X > t))``, ``CV^2 = Gamma(1 + 2/k) / Gamma(1 + 1/k)^2 - 1``."""
    cv2 = math.exp(min(700.0, math.lgamma(1.0 + 2.0 / k) - 2.0 * math.lgamma(1.0 + 1.0 / k))) - 1.0
    z = (t / weibull_scale(mean, k)) ** k  # -log P(X > t)
    return min(t / mean + max(cv2, 1.0), math.exp(min(z, 700.0)))


def synthetic_log(topology: Topology, weibull: dict, duration_s: float, *, repair_s: float | None = None,
                  rng=None) -> FailureLog:
    """A synthetic failure log: every unit of each listed level is a Weibull renewal process over the window.

    Parameters
    ----------
    topology : Topology
    weibull : dict
        ``level -> (shape, mean_s)``: the lifetime law of one unit at that level (levels not listed never fail).
    duration_s : float
        Window length (the log's ``duration_s``).
    repair_s : float, optional
        A constant repair time written in the ``repair_s`` column (default: no such column).
    rng : None, int >= 0, list of them, SeedSequence or Generator
        The randomness (``None``: fresh entropy). A Generator is used as it is and advanced; numpy's other seed
        forms (arrays, bit generators, ``RandomState``) are refused with a :class:`UsageTypeError`.

    Returns
    -------
    FailureLog
        Rows sorted by time (ties: level order, then unit).

    Notes
    -----
    Exactly the model :func:`fit_failure_log` assumes: each unit new at 0, renewed at every failure, its failures
    ``t_j = x_1 + ... + x_j <= duration_s`` with iid ``x ~ Weibull(shape, lam)``, ``lam = mean / Gamma(1 + 1/k)``
    -- except that a lifetime too short to move the float clock (``t_j + x == t_j``, at shapes near 0.05) gives no
    second event at the same time: the log would repeat its row, which a log may not; and a first lifetime drawn as
    exactly 0 (probability 2^-53) is the smallest positive float: a log starts before its first failure.
    Levels are drawn in the order of ``log_levels(topology)``, units in index order, in rounds.

    Examples
    --------
    >>> log = synthetic_log(Topology(64, 8), {"gpu": (0.8, 1e6)}, 5e5, rng=1)
    >>> bool(np.all(np.diff(log.time_s) >= 0)), log.duration_s
    (True, 500000.0)
    """
    topology = as_topology(topology)
    weibull = _weibull_params_iv(weibull, topology)
    duration_s = as_float(duration_s, "duration_s", positive=True, max_value=MAX_TIME_S)
    if repair_s is not None:
        repair_s = as_float(repair_s, "repair_s", nonnegative=True)
    rng = generator(rng)
    levels = log_levels(topology)
    # failures per unit: a renewal process has about duration / mean plus a constant, (CV^2 - 1) / 2 (2 at k = 0.5,
    # 14 at k = 0.3), and no more than the lifetimes drawn until one outlasts the window, 1 / P(X > duration) on
    # average (the tighter bound at small k). Each failure is a time, a level and a unit, drawn in rounds and sorted
    # (64 bytes is generous): refuse a log beyond the memory budget before drawing it
    expected = sum(topology.unit_count(name) * _renewals_bound(duration_s, shape, mean)
                   for name, (shape, mean) in weibull.items())
    check_memory(64 * expected, lambda: f"a synthetic log of about {expected:.3g} failures",
                 "a shorter `duration_s`, longer lifetimes or fewer units need less")
    t_all, lv_all, u_all = [], [], []
    for code, name in enumerate(levels):
        if name not in weibull:
            continue
        shape, mean = weibull[name]
        lam = weibull_scale(mean, shape)
        n = topology.unit_count(name)
        # a draw of exactly 0 (probability 2^-53) would be a failure at the log start, which a log may not hold
        clock = np.maximum(lam * rng.weibull(shape, size=n), _FIRST_TIME_S)
        units = np.arange(n, dtype=np.int64)
        while units.size:
            hit = clock <= duration_s
            units, clock = units[hit], clock[hit]
            t_all.append(clock.copy())
            u_all.append(units.copy())
            lv_all.append(np.full(units.size, code, dtype=np.int64))
            clock = clock + lam * rng.weibull(shape, size=units.size)
    t = np.concatenate(t_all) if t_all else np.zeros(0)
    lv = np.concatenate(lv_all) if lv_all else np.zeros(0, np.int64)
    u = np.concatenate(u_all) if u_all else np.zeros(0, np.int64)
    order = np.lexsort((u, lv, t))
    if order.size == 0:
        raise UsageValueError("the synthetic log has no events: lengthen `duration_s` or shorten the lifetimes")
    # a lifetime below the resolution of the float clock (shapes near 0.05) repeats its unit's last failure time:
    # one observable event, and a log may not repeat an event
    ts, ls, us = t[order], lv[order], u[order]
    order = order[np.concatenate([[True], (ts[1:] != ts[:-1]) | (ls[1:] != ls[:-1]) | (us[1:] != us[:-1])])]
    rep = None if repair_s is None else np.full(order.size, repair_s)
    return failure_log_from_arrays(t[order], np.asarray(levels, dtype=object)[lv[order]], u[order], topology,
                                   repair_s=rep, duration_s=duration_s, source="<synthetic>")


def _event_units(ev: FailureEvents, topology: Topology):
    """A ``(level, unit)`` per event that kills exactly the event's groups on replay: a GPU of the group for a
    single-group event, else a domain whose live groups are the killed set (searched node, rack, ... upwards)."""
    first_gpu = np.full(topology.n_groups, -1, dtype=np.int64)
    gog = topology.group_of_gpu()
    idx = np.arange(topology.n_gpus - 1, -1, -1)
    first_gpu[gog[idx]] = idx
    maps = {}
    for name in _topology.DOMAIN_LEVELS:
        ptr, groups = topology.domain_groups(name)
        dom = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
        order = np.argsort(groups, kind="stable")
        gptr = np.zeros(topology.n_groups + 1, dtype=np.int64)
        np.cumsum(np.bincount(groups, minlength=topology.n_groups), out=gptr[1:])
        maps[name] = (ptr, groups, gptr, dom[order])
    dead = np.zeros(topology.n_groups, dtype=bool)
    out = []
    for e in range(len(ev)):
        k = np.sort(ev.killed(e))
        if k.size == 1:
            out.append(("gpu", int(first_gpu[k[0]])))
        else:
            found = None
            for name, (ptr, groups, gptr, doms) in maps.items():
                for d in doms[gptr[k[0]]:gptr[k[0] + 1]]:
                    g = groups[ptr[d]:ptr[d + 1]]
                    g = g[~dead[g]]
                    if g.size == k.size and np.array_equal(g, k):
                        found = (name, int(d))
                        break
                if found:
                    break
            if found is None:  # pragma: no cover - every multi-group event of the samplers is a domain event
                raise RuntimeError(f"no unit of the topology kills exactly groups {k.tolist()}")
            out.append(found)
        dead[k] = True
    return out


def sampled_failure_log(failures, topology: Topology, layout, reps: int, *, r: int | None = None,
                        rng=None) -> FailureLog:
    """The event streams of :func:`spare_mc.overhead_mc` written as one failure log.

    Draws ``reps`` streams exactly as ``overhead_mc(layout, reps, failures=failures, topology=topology, rng=rng)``
    does (:func:`spare_mc.sample_events` per replication, one generator), cuts each at its first wipe-out under
    ``layout``, names a unit for every event (a GPU of the group for a single-group event, else the domain whose live
    groups it killed) and lays the streams end to end: stream ``i`` starts at the time of stream ``i - 1``'s
    wipe-out. Replaying the log (:func:`replay_log`) gives back the sampler's per-replication ``T``, masked failures,
    wipe-out times (to rounding of the sums) and ReCtlr statistics.

    Parameters
    ----------
    failures : PerGPU or DomainFailures
    topology : Topology
    layout : Layout, ReplicaSets or {"cyclic", "sidon", "block"}
    reps : int
    r : int, optional
        With a layout name.
    rng : None, int >= 0, list of them, SeedSequence or Generator
        The randomness (``None``: fresh entropy). A Generator is used as it is and advanced; numpy's other seed
        forms (arrays, bit generators, ``RandomState``) are refused with a :class:`UsageTypeError`.

    Returns
    -------
    FailureLog
        With ``duration_s`` the last wipe-out time (no incomplete epoch).
    """
    topology = as_topology(topology)
    if isinstance(failures, UniformOrder) or not isinstance(failures, (PerGPU, DomainFailures)):
        raise UsageTypeError(f"`failures` must be PerGPU or DomainFailures (a model with units and a clock), got "
                             f"{type(failures).__name__}")
    layout = as_replay_layout(layout, None, r, topology)
    reps = as_int(reps, "reps", min_value=1)
    rng = generator(rng)
    offset = 0.0
    t_all, lv_all, u_all = [], [], []
    for _ in range(reps):
        ev = sample_events(failures, topology, rng=rng)
        T = int(replay_epochs(ev.ptr, ev.groups, layout)["T"][0])
        cut = FailureEvents(ev.times[:T], ev.ptr[:T + 1], ev.groups[:ev.ptr[T]])
        units = _event_units(cut, topology)
        t_all.append(np.maximum(offset + cut.times, _FIRST_TIME_S))  # (a lifetime drawn as exactly 0: see above)
        lv_all += [x[0] for x in units]
        u_all += [x[1] for x in units]
        offset = float(t_all[-1][-1])
    comments = ((f"sampled by spare_mc.sampled_failure_log: {reps} streams of {failures.to_dict()} on "
                f"{topology.to_dict()}, each cut at its wipe-out under the {layout.kind} layout (r={layout.r})"),)
    log = failure_log_from_arrays(np.concatenate(t_all), lv_all, np.asarray(u_all, dtype=np.int64), topology,
                                  duration_s=offset, source="<sampled>")
    return FailureLog(log.time_s, log.level, log.unit, None, log.duration_s, topology, log.levels, "<sampled>",
                      comments)


#: The shipped example: topology, per-level Weibull laws, window and seed.
EXAMPLE = {"topology": {"n_gpus": 256, "n_groups": 32, "gpus_per_node": 8, "nodes_per_rack": 4,
                        "racks_per_power": 2, "placement": "contiguous"},
           "weibull": {"gpu": (0.78, 2.0e6), "node": (0.78, 1.0e7), "rack": (0.78, 5.0e6)},
           "duration_s": 2_592_000.0, "repair_s": 3600.0, "seed": 20261130}


def example_log_path() -> str:
    """Path of the shipped synthetic example log (``spare_mc/data/example_failure_log.csv``)."""
    return str(resources.files("spare_mc").joinpath("data", "example_failure_log.csv"))


def write_example_log(path) -> FailureLog:
    """Regenerate the shipped example log at ``path`` (deterministic: :data:`EXAMPLE` fixes everything).

    Command (from the repository root)::

        python -c "import spare_mc.logs.synthetic as f; f.write_example_log('spare_mc/data/example_failure_log.csv')"
    """
    ex = EXAMPLE
    topo = Topology(**ex["topology"])
    log = synthetic_log(topo, ex["weibull"], ex["duration_s"], repair_s=ex["repair_s"], rng=ex["seed"])
    laws = ", ".join(f"{k}: shape {s:g}, mean {m:g} s" for k, (s, m) in ex["weibull"].items())
    comments = (
        "SYNTHETIC failure log (not measured on any cluster), generated by spare_mc.logs.synthetic.synthetic_log.",
        ("Command: python -c \"import spare_mc.logs.synthetic as f; "
        "f.write_example_log('spare_mc/data/example_failure_log.csv')\""),
        f"Topology: {ex['topology']}",
        (f"Per-unit Weibull renewal lifetimes ({laws}); power domains never fail; repair_s is a constant "
        f"{ex['repair_s']:g} s; seed {ex['seed']}."),
        "Columns: time_s (s from the log start), level, unit (index at that level), repair_s (s).",
    )
    write_failure_log(path, log, comments=comments)
    return log


def write_operator_export(path, topology: Topology, *, mean_s: float, shape: float, duration_s: float,
                          level: str = "node", new_fraction: float = 0.0, repair_median_s: float = 4500.0,
                          repair_sigma: float = 0.8, duplicates: float = 0.02, start: str = "2026-01-01 00:00",
                          rng=None) -> FailureLog:
    """Write a raw failure log as an operator's ticket system exports it, from a cluster in service.

    Every unit of ``level`` is an independent Weibull renewal process
    (:class:`spare_mc.model.unit_renewal.UnitRenewal`); the last ``round(new_fraction * units)`` units (a batch
    installed together) are **new** at the window's start, the others at their stationary age (long in service), so
    the log opens with the new batch's early-life failures when ``shape < 1``. The file then has the features of a
    real export, each of which ``spare-mc log import`` has a rule for:

    - columns ``host,opened,repair_min,ticket``: host names ``node0007`` (the level's name and the unit index, four
      digits), the date at **minute resolution** (``%Y-%m-%d %H:%M``, UTC; a failure within a minute of
      another unit's has the same date: a tie), the repair time in whole minutes (lognormal, median
      ``repair_median_s``, log-sd ``repair_sigma``, at least 1), a ticket id (a column the import ignores);
    - rows **sorted by host**, then date, not by time;
    - a fraction ``duplicates`` of the rows written twice (exact copies), and one more row written again as a second
      ticket with another repair time (a duplicate with a conflicting repair);
    - **no window**: neither the start nor the end of the observation is in the file (give them to the import).

    Parameters
    ----------
    path : str or path-like
        The CSV to write (replaced if it exists).
    topology : Topology
    mean_s, shape : float
        One unit's mean lifetime (s) and Weibull shape.
    duration_s : float
        The observation window (s) from ``start``.
    level : str
        The failing level (a level of :func:`spare_mc.model.unit_renewal.UnitRenewal`).
    new_fraction : float
        Fraction of the units new at the start, in [0, 1].
    repair_median_s, repair_sigma : float
        The lognormal repair time: median (s) and standard deviation of its log.
    duplicates : float
        Fraction of the rows written twice, in [0, 1].
    start : str
        The window's start, ``%Y-%m-%d %H:%M`` (UTC).
    rng : seed
        The randomness (``None``: fresh entropy).

    Returns
    -------
    FailureLog
        The true events, at the exact times (s from ``start``) with the repair times written (s), before the export
        rounds them to the minute; ``len(log)`` distinct failures. A failure within the first minute would be dated
        at ``start`` itself, which the import refuses as an origin event (give an earlier ``--start``).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "raw.csv"
    >>> truth = write_operator_export(path, Topology(256, 32), mean_s=2e6, shape=0.6, duration_s=4e6,
    ...                               new_fraction=0.25, rng=1)
    >>> path.read_text().splitlines()[0]
    'host,opened,repair_min,ticket'
    """
    topology = as_topology(topology)
    mean_s = as_float(mean_s, "mean_s", positive=True)
    duration_s = as_float(duration_s, "duration_s", positive=True, max_value=MAX_TIME_S)
    new_fraction = as_float(new_fraction, "new_fraction", nonnegative=True, max_value=1.0)
    repair_median_s = as_float(repair_median_s, "repair_median_s", positive=True)
    repair_sigma = as_float(repair_sigma, "repair_sigma", nonnegative=True)
    duplicates = as_float(duplicates, "duplicates", nonnegative=True, max_value=1.0)
    try:
        origin = _dt.datetime.strptime(start, "%Y-%m-%d %H:%M")
    except (TypeError, ValueError):
        raise UsageValueError(f"`start` must be a date '%Y-%m-%d %H:%M', got {start!r}") from None
    rng = generator(rng)
    n = topology.unit_count(as_choice(level, "level", log_levels(topology)))
    new = np.arange(n) >= n - round(new_fraction * n)
    model = UnitRenewal(level, mean_s, shape, UnitAges(np.zeros(n), new))  # known age 0: new; else stationary
    t, u = model.stream(topology, rng=rng).until(duration_s)
    if t.size == 0:
        raise UsageValueError("the export has no failures: lengthen `duration_s` or shorten `mean_s`")
    t = np.maximum(t, _FIRST_TIME_S)
    repair_min = np.maximum(1.0, np.rint(repair_median_s / 60 * np.exp(repair_sigma * rng.standard_normal(t.size))))
    truth = failure_log_from_arrays(t, np.full(t.size, level), u, topology, repair_s=repair_min * 60,
                                    duration_s=duration_s, source="<operator export>")
    rows = [(f"{level}{unit:04d}", (origin + _dt.timedelta(minutes=math.floor(x / 60))).strftime("%Y-%m-%d %H:%M"),
             int(rm), f"T{i + 1:06d}") for i, (x, unit, rm) in enumerate(zip(t, u, repair_min))]
    copies = rng.choice(len(rows), size=round(duplicates * len(rows)), replace=False)
    rows += [rows[i] for i in copies]
    host, date, rm, _ = rows[int(rng.integers(len(truth)))]
    rows.append((host, date, rm + 30, f"T{len(truth) + 1:06d}"))  # a second ticket for one failure
    rows.sort()  # by host, then date
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("host,opened,repair_min,ticket\n")
        f.writelines(f"{h},{d},{r},{k}\n" for h, d, r, k in rows)
    return truth
