"""Wipe-out Monte Carlo: how many failures a layout masks before some shard type loses all its holders.

Per trial, failures are applied to a fully live system until the first wipe-out. Returned per trial:

- ``T``: the 1-based index of the failure (event) that causes the first wipe-out;
- ``dead_before``: distinct dead groups just before it -- the **masked failures**. For single-group failures
  without replacement ``dead_before == T - 1``; with domain events or with replacement they differ;
- ``time_s``: the wipe-out time, for failure models with a clock (``None`` for :class:`UniformOrder`).

Cost per trial is proportional to the failures drawn (O(1) per failure for cyclic unit stride, O(types held) for
any layout; O(N r) extra per trial for a fresh random layout), except under uniform order without replacement,
where ``method="auto"`` (see :func:`wipeout_mc`) reads ``T`` from order statistics whenever that is cheaper: one
draw per replica set for partition layouts (Rep's replica sets); one 32-bit failure time per group (SplitMix64,
seeded per trial) and about three holder look-ups per type for the other layouts when the first wipe-out comes late
(many holders per type).
"""

from __future__ import annotations

import functools
import json
import math
import weakref
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from .._kernels import wipeout as _k
from .._kernels.records import EventRecord, Holding, TrialsOut
from .._lib.resources import check_memory
from .._lib.seeding import generator
from .._lib.validation import UsageTypeError, UsageValueError, as_choice, as_int
from ..model.failures import DomainFailures, PerGPU, SystemRenewal, UniformOrder, lower
from ..model.kinds import EXACT_LAYOUTS, LAYOUT_KINDS, make_layout
from ..model.layouts import Layout, ReplicaSets, layout_note
from ..model.topology import Topology
from ..stats import MCEstimate, clopper_pearson_interval, compare, estimate_mean, one_run_estimate, wilson_interval
from ..theory.closed_forms import mu_expansion, mu_paper
from ..theory.exact import block_mean, exact_wipeout

__all__ = ["WipeoutResult", "wipeout_mc", "partition_classes", "partition_kernel_classes", "uniform_order_kernel",
           "order_stat_table", "check_mc_inputs", "WIPEOUT_METHODS", "ORDER_STAT_MIN_FRACTION", "MaskedFailures",
           "masked_failures", "MASKED_CHUNK", "finite_or_none"]

#: ``wipeout_mc(method=...)``: see :func:`wipeout_mc`.
WIPEOUT_METHODS = ("auto", "sequential", "order")

#: ``method="auto"`` reads ``T`` from the groups' failure times (:func:`~spare_mc._kernels.wipeout.
#: wipeout_order_stat`) when the first wipe-out is expected after this fraction of the groups has failed, estimated
#: as ``n_types^(-1/r)`` (the fraction ``x`` at which ``n_types x^r = 1``: within 11% of ``E[T]/N`` for cyclic and
#: random layouts at N = 200 and 1000, r = 2..9). The order statistics cost O(N) a trial whatever ``T``, failure
#: by failure O(T r): the two cost the same at about 0.25 for cyclic layouts and 0.17 for random ones
#: (``benchmarks/bench_wipeout.py --crossover``); one threshold keeps the layouts of one (N, r) on one method, so
#: that they share their failure times.
ORDER_STAT_MIN_FRACTION = 0.25


def partition_classes(layout):
    """The replica-set structure of a partition layout, or ``None`` if ``layout`` is not one.

    A layout is a partition when its types' holder sets are pairwise equal or disjoint; its distinct holder sets
    are then disjoint "replica sets", and a type is wiped exactly when all members of its set are dead. Rep's
    :class:`~spare_mc.model.layouts.ReplicaSets` always are. A :class:`~spare_mc.model.layouts.Layout` is first screened in
    O(r^2) (the types held by the first holder of type 0 must all have type 0's holder set: this rejects cyclic,
    Sidon and random layouts at once), then checked in O(N r log r); the answer is cached per layout object.

    Returns
    -------
    (sizes, counts) : two int64 arrays, or None
        ``counts[c]`` replica sets of ``sizes[c]`` members each (sizes ascending); groups in no set hold nothing.

    Examples
    --------
    >>> from spare_mc import ReplicaSets, block, cyclic
    >>> [a.tolist() for a in partition_classes(ReplicaSets(11, 4))]
    [[5, 6], [1, 1]]
    >>> [a.tolist() for a in partition_classes(block(12, 3))]
    [[3], [4]]
    >>> partition_classes(cyclic(12, 3)) is None
    True
    """
    return _partition_classes(layout)


def _per_layout(fn):
    """Cache ``fn(layout)`` per layout object for as long as the layout lives (layouts hash by identity, eq=False):
    a sweep's one layout is screened and converted once, and a dropped layout takes its entries with it."""
    cache = weakref.WeakKeyDictionary()

    @functools.wraps(fn)
    def cached(layout):
        try:
            return cache[layout]
        except KeyError:
            value = cache[layout] = fn(layout)
            return value

    return cached


@_per_layout
def _partition_classes(layout):
    if isinstance(layout, ReplicaSets):
        sizes = np.asarray(layout.sizes)
    else:
        h = np.asarray(layout.holders)
        first = set(h[0].tolist())
        g = int(h[0, 0])
        if any(set(h[t].tolist()) != first for t in layout.group_types[layout.group_ptr[g]:layout.group_ptr[g + 1]]):
            return None
        rows = np.unique(np.sort(h, axis=1), axis=0)
        members = rows.ravel()
        if np.unique(members).size != members.size:
            return None
        sizes = np.full(rows.shape[0], rows.shape[1], dtype=np.int64)
    values, counts = np.unique(sizes, return_counts=True)
    values, counts = values.astype(np.int64), counts.astype(np.int64)
    values.setflags(write=False)
    counts.setflags(write=False)
    return values, counts


def _partition_is_cheaper(n: int, sizes, counts) -> bool:
    """Whether the order-statistic kernel makes fewer draws than failure by failure would, about.

    Failure by failure costs about ``E[T]`` draws, ``E[T] = (N + 1) Gamma(1 + 1/s) Gamma(b + 1) / Gamma(b + 1 +
    1/s)`` for ``b`` sets of ``s`` (:func:`spare_mc.theory.exact.block_mean_closed_form`; ``s`` the most common size);
    the order statistics cost one draw per set, each with about ``s / 10`` draws' worth of CDF comparisons. At N =
    1000, r = 9 that is 211 against 562 (partition); at N = 600, r = 3, 260 against 92 (failure by failure: many
    small sets die early)."""
    b = int(np.sum(counts))
    s = int(sizes[np.argmax(counts)])
    return b * (1 + s / 10) < block_mean(n, b, s)


def partition_kernel_classes(layout):
    """``partition_classes(layout)`` if :func:`wipeout_mc` (``method="auto"``, uniform order without replacement)
    runs the partition kernel on it -- a partition layout on which it makes fewer draws -- else ``None``."""
    classes = partition_classes(layout)
    return classes if classes is not None and _partition_is_cheaper(layout.n_groups, *classes) else None


def order_stat_table(layout):
    """The holder table the failure-time kernels read (:func:`~spare_mc._kernels.wipeout.wipeout_order_stat`).

    Parameters
    ----------
    layout : Layout or ReplicaSets

    Returns
    -------
    ndarray of uint32, read-only
        ``layout.holders`` (types x r), C-contiguous; for :class:`~spare_mc.model.layouts.ReplicaSets` one row per replica
        set, padded to the largest set with the set's last member (a repeated holder leaves a row's maximum
        unchanged). Cached per layout object for as long as the layout lives (a sweep's one layout is converted
        once).

    Examples
    --------
    >>> from spare_mc import ReplicaSets
    >>> order_stat_table(ReplicaSets(11, 4)).tolist()
    [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 10]]
    """
    return _order_stat_table(layout)


@_per_layout
def _order_stat_table(layout):
    if isinstance(layout, ReplicaSets):
        ptr = np.asarray(layout.group_ptr)
        set_of = np.asarray(layout.group_types)[ptr[:-1]]  # every group is in exactly one set
        order = np.argsort(set_of, kind="stable")
        starts = np.concatenate(([0], np.cumsum(layout.sizes)[:-1]))
        width = int(np.max(layout.sizes))
        idx = starts[:, None] + np.minimum(np.arange(width)[None, :], layout.sizes[:, None] - 1)
        table = order[idx]
    else:
        table = np.asarray(layout.holders)
    table = np.ascontiguousarray(table, dtype=np.uint32)
    table.setflags(write=False)
    return table


@_per_layout
def _is_unit_cyclic(layout) -> bool:
    """Whether the holder table *is* cyclic unit stride's (row ``j`` = ``j, j - 1, ..., j - r + 1`` mod N), which
    the cyclic kernels assume: checked on the table, not read from the ``kind`` label (a table labelled "cyclic"
    that is not would get a wrong law)."""
    if not isinstance(layout, Layout):
        return False
    n, r = layout.n_groups, layout.r
    h = np.asarray(layout.holders)
    return bool(h.shape == (n, r) and np.array_equal(h, (np.arange(n)[:, None] - np.arange(r)[None, :]) % n))


def _expected_fraction(layout) -> float:
    """``n_types^(-1/r)``: about the fraction of groups failed at the first wipe-out (see
    :data:`ORDER_STAT_MIN_FRACTION`)."""
    n_types, r = np.shape(layout.holders)
    return float(n_types) ** (-1.0 / r)


def uniform_order_kernel(layout, method: str = "auto", fresh_layout: bool = False, with_replacement: bool = False):
    """Which kernel :func:`wipeout_mc` runs for uniform failure order on ``layout`` with ``method``.

    Parameters
    ----------
    layout : Layout or ReplicaSets
    method : {"auto", "sequential", "order"}
        As in :func:`wipeout_mc`.
    fresh_layout, with_replacement : bool
        A new random layout per trial; failures drawn with replacement (both simulated failure by failure).

    Returns
    -------
    str
        ``"fresh"`` (a new random layout per trial, failure by failure), ``"partition"`` (the replica sets' order
        statistics), ``"cyclic-window"`` / ``"order"`` (the groups' failure times: cyclic unit stride's sliding
        windows / any holder table), ``"cyclic-unit"`` / ``"sequential"`` (failure by failure: cyclic unit stride's
        O(1) runs / any layout). The cyclic kernels run only on a table that is cyclic unit stride's, whatever its
        ``kind`` label. Under ``"auto"``, :class:`~spare_mc.model.layouts.ReplicaSets` take the partition kernel or run
        failure by failure, never the failure times.

    Raises
    ------
    ValueError
        An unknown ``method``, or ``"order"`` with ``fresh_layout`` or ``with_replacement``.

    Examples
    --------
    >>> from spare_mc import ReplicaSets, cyclic, sidon
    >>> [uniform_order_kernel(x) for x in (cyclic(1000, 9), sidon(1000, 9), cyclic(600, 3), ReplicaSets(1000, 9))]
    ['cyclic-window', 'order', 'cyclic-unit', 'partition']
    """
    method = as_choice(method, "method", WIPEOUT_METHODS)
    if fresh_layout:
        if method == "order":
            raise UsageValueError("`method`='order' needs a fixed layout, but a new random layout is drawn per trial "
                                  "(`fresh_layout`=True, the default for layout 'random' by name): pass a Layout, "
                                  "e.g. random_holders(N, r, rng=...), or `fresh_layout`=False")
        return "fresh"
    cyclic = _is_unit_cyclic(layout)
    if with_replacement:
        if method == "order":
            raise UsageValueError("`method`='order' applies to uniform order without replacement; these failures "
                                  "are drawn with replacement")
        return "cyclic-unit" if cyclic else "sequential"
    if method == "auto":
        if partition_kernel_classes(layout) is not None:
            return "partition"
        if not isinstance(layout, ReplicaSets) and _expected_fraction(layout) >= ORDER_STAT_MIN_FRACTION:
            method = "order"
    if method == "order":
        return "cyclic-window" if cyclic else "order"
    return "cyclic-unit" if cyclic else "sequential"


@dataclass(frozen=True, eq=False)
class WipeoutResult:
    """Per-trial wipe-out outcomes and their summaries.

    Attributes
    ----------
    T : ndarray of int64
        1-based index of the wipe-out failure/event, per replication.
    dead_before : ndarray of int64
        Masked failures (distinct dead groups just before the wipe-out), per replication.
    time_s : ndarray of float or None
        Wipe-out time per replication (clocked failure models only).
    layout, n_groups, r, fresh_layout, failures : the setting (``failures`` as a dict).
    """

    T: np.ndarray
    dead_before: np.ndarray
    time_s: np.ndarray | None
    layout: str
    n_groups: int
    r: int
    fresh_layout: bool
    failures: dict = field(default_factory=dict)

    @property
    def reps(self) -> int:
        """Number of replications."""
        return int(self.T.size)

    def estimate(self, quantity: str = "T", level: float = 0.95) -> MCEstimate:
        """Mean of ``"T"``, ``"masked"`` (``dead_before``) or ``"time_s"`` with its standard error and CI (NaN
        standard error and interval from a single replication, as :meth:`TTTResult.estimate`)."""
        quantity = as_choice(quantity, "quantity", ("T", "masked", "time_s"))
        if quantity == "time_s" and self.time_s is None:
            raise UsageValueError("`quantity`='time_s' needs a failure model with a clock (not UniformOrder)")
        values = {"T": self.T, "masked": self.dead_before, "time_s": self.time_s}[quantity]
        if values.size < 2:
            return one_run_estimate(quantity, values, level, "nonnegative")
        return estimate_mean(values, quantity, level, support="nonnegative")

    def survival_curve(self, level: float = 0.95, interval: str = "wilson"):
        """Empirical ``P(T > m)`` for m = 0..N with pointwise intervals: ``(p_hat, low, high)``.

        ``interval="wilson"`` (:func:`~spare_mc.stats.wilson_interval`) or ``"exact"``
        (:func:`~spare_mc.stats.clopper_pearson_interval`: coverage at least ``level`` for every ``m``, so a
        Bonferroni band over the ``N + 1`` points, ``level = 1 - alpha / (N + 1)``, is a valid simultaneous band;
        Wilson's intervals undercover in the far tail at such levels)."""
        interval = as_choice(interval, "interval", ("wilson", "exact"))
        counts = np.bincount(self.T, minlength=self.n_groups + 2)
        greater = self.reps - np.cumsum(counts)[: self.n_groups + 1]
        low, high = (wilson_interval if interval == "wilson" else clopper_pearson_interval)(greater, self.reps, level)
        return greater / self.reps, low, high

    def to_xarray(self):
        """The per-replication values as an :class:`xarray.Dataset` with dimension ``rep``."""

        data = {"T": ("rep", self.T, {"long_name": "wipe-out failure index (1-based)", "units": "failures"}),
                "masked": ("rep", self.dead_before, {"long_name": "masked failures", "units": "groups"})}
        if self.time_s is not None:
            data["time_s"] = ("rep", self.time_s, {"long_name": "time to first wipe-out", "units": "s"})
        import xarray as xr  # here, not at the top: it and pandas take 0.4 s to import
        return xr.Dataset(data, attrs={"layout": self.layout, "n_groups": self.n_groups, "r": self.r,
                                       "fresh_layout": int(self.fresh_layout), "failures": json.dumps(self.failures)})


def check_mc_inputs(layout, reps, n_groups, r, failures, topology, fresh_layout) -> tuple:
    """The checked inputs of a Monte Carlo run until the first wipe-out (:func:`wipeout_mc`,
    :func:`spare_mc.mc.reorder.overhead_mc`): ``(layout, reps, failures, topology, fresh_layout)``, with a layout
    name built (``n_groups`` and ``r`` required; ``"random"`` by name draws a fresh layout per replication unless
    ``fresh_layout`` says otherwise), uniform order as the default failure model and a topology of one GPU per group
    when none is given."""
    reps = as_int(reps, "reps", min_value=1)
    if isinstance(layout, str):
        as_choice(layout, "layout", LAYOUT_KINDS)
        if n_groups is None or r is None:
            raise UsageValueError(f"`n_groups` and `r` are required when `layout` is a name ({layout!r})")
        if layout == "random":
            fresh_layout = True if fresh_layout is None else fresh_layout
        layout = make_layout(layout, n_groups, r, rng=0)  # the random instance is unused when fresh
    elif isinstance(layout, (Layout, ReplicaSets)):
        n_groups = None if n_groups is None else as_int(n_groups, "n_groups", min_value=1)
        r = None if r is None else as_int(r, "r", min_value=1)
        if n_groups is not None and n_groups != layout.n_groups:
            raise UsageValueError(f"`n_groups`={n_groups} disagrees with the layout's N={layout.n_groups}")
        if r is not None and r != layout.r:
            raise UsageValueError(f"`r`={r} disagrees with the layout's r={layout.r}")
    else:
        raise UsageTypeError(f"`layout` must be a Layout, ReplicaSets or one of {list(LAYOUT_KINDS)}, got "
                             f"{type(layout).__name__}")
    if fresh_layout is None:
        fresh_layout = False
    if not isinstance(fresh_layout, bool):
        raise UsageTypeError(f"`fresh_layout` must be a bool or None, got {fresh_layout!r}")
    if fresh_layout and layout.kind != "random":
        raise UsageValueError(f"`fresh_layout`=True draws a new random-holders layout per trial; the layout is "
                              f"{layout.kind!r}")
    if layout.n_groups >= 2**31:
        raise UsageValueError(f"`n_groups` must be < 2^31 (32-bit bounded draws), got N={layout.n_groups}")
    if failures is None:
        failures = UniformOrder()
    if not isinstance(failures, (UniformOrder, SystemRenewal, PerGPU, DomainFailures)):
        raise UsageTypeError(f"`failures` must be UniformOrder, SystemRenewal, PerGPU or DomainFailures, got "
                             f"{type(failures).__name__}")
    if isinstance(failures, (PerGPU, DomainFailures)) and topology is None:
        raise UsageValueError(f"`topology` is required for the {type(failures).__name__} failure model")
    if topology is not None:  # checked whatever the model (the group-level ones do not use it), never ignored
        if not isinstance(topology, Topology):
            raise UsageTypeError(f"`topology` must be a Topology, got {type(topology).__name__}")
        if topology.n_groups != layout.n_groups:
            raise UsageValueError(f"`topology` has N={topology.n_groups} groups but the layout has N={layout.n_groups}")
    else:
        topology = Topology(layout.n_groups, layout.n_groups)
    return layout, reps, failures, topology, fresh_layout


def wipeout_mc(layout, reps: int, *, n_groups: int | None = None, r: int | None = None,
               failures=None, topology: Topology | None = None, fresh_layout: bool | None = None, rng=None,
               method: str = "auto") -> WipeoutResult:
    """Monte Carlo of the first wipe-out.

    Parameters
    ----------
    layout : Layout or {"cyclic", "sidon", "random", "block"}
        A layout, or a layout name together with ``n_groups`` and ``r``.
    reps : int
        Independent replications. Their per-replication results must fit the
        memory budget (:mod:`spare_mc.options`); for more, call again with the same Generator: the kernels advance
        it in place, so consecutive calls continue one random stream (``spare-mc mu`` streams that way). Split calls
        give exactly the values of one call only with the failure-time kernels (``"order"`` and ``"partition"``,
        which ``method="auto"`` may pick: :func:`uniform_order_kernel` says which runs); the other kernels keep a
        permutation (of the groups, or of the domains) across the replications of a call, so split calls give other
        values of the same law (statistics.md section 7).
    n_groups, r : int, optional
        Required with a layout name.
    failures : UniformOrder, SystemRenewal, PerGPU or DomainFailures, optional
        Failure model (default: uniform order without replacement).
    topology : Topology, optional
        Required for PerGPU and DomainFailures.
    fresh_layout : bool, optional
        Draw a new independent-random-holders layout for every replication. Default: True for ``layout="random"`` given
        by name (so that the estimate targets the exact formula, an average over random layouts), False for a
        given :class:`Layout`.
    rng : None, int >= 0, list of them, SeedSequence or Generator
        The randomness (``None``: fresh entropy). A Generator is used as it is and advanced; numpy's other seed
        forms (arrays, bit generators, ``RandomState``) are refused with a :class:`UsageTypeError`.
    method : {"auto", "sequential", "order"}
        How uniform order without replacement is simulated (other failure models are always simulated event by
        event). Every method has the same law of ``T``; they differ in cost and in which draws make a trial.

        - ``"sequential"``: failure by failure, one bounded draw per failure (a partial Fisher-Yates shuffle). Every
          layout then sees the same failure order on the same ``rng`` -- common random numbers between layouts and
          with :func:`spare_mc.overhead_mc` (statistics.md section 8).
        - ``"order"``: from the order statistics of i.i.d. 32-bit failure times, one per group (a SplitMix64
          stream seeded by one raw draw of ``rng`` per trial): ``T`` is the rank of ``m``, the least over types
          of the max over their holders (:func:`~spare_mc._kernels.wipeout.wipeout_order_stat`; sliding-window
          maxima for cyclic unit stride; a tie at ``m``, probability about ``N 2^-32``, is broken by a random
          order drawn from the trial's own stream). O(N) a trial whatever
          ``T``. Every layout run this way sees the same failure times on the same ``rng``, and consecutive calls
          on one ``rng`` give exactly the values of one call with all the replications (no state carries over
          from one trial to the next).
        - ``"auto"`` (default): the cheapest. A **partition layout** -- types' holder sets pairwise equal or
          disjoint: Rep's replica sets, the block table -- with few large sets draws ``T`` from the sets' order
          statistics (:func:`~spare_mc._kernels.wipeout.wipeout_partition`: one draw per set, 112 against about
          562 failures at N = 1000, r = 9). Other layouts take ``"order"`` when the first wipe-out is expected
          late, ``n_types^(-1/r) >= ORDER_STAT_MIN_FRACTION`` (0.25: SPARe's stacks, e.g. N = 1000, r = 9 or N =
          600, r = 5), else ``"sequential"`` (Rep's r = 3, where few groups fail before a wipe-out). Which one a
          layout takes: :func:`uniform_order_kernel`.
    Returns
    -------
    WipeoutResult

    Examples
    --------
    >>> res = wipeout_mc("cyclic", 2000, n_groups=600, r=9, rng=0)
    >>> est = res.estimate("T")
    >>> bool(200 < est.mean < 400)
    True
    """
    method = as_choice(method, "method", WIPEOUT_METHODS)
    layout, reps, failures, topology, fresh_layout = check_mc_inputs(layout, reps, n_groups, r, failures, topology,
                                                                     fresh_layout)
    if isinstance(failures, UniformOrder):
        kernel = uniform_order_kernel(layout, method, fresh_layout, failures.with_replacement)
    elif method == "order":
        raise UsageValueError(f"`method`='order' applies to uniform order without replacement, not to "
                              f"{type(failures).__name__}")
    per = 24 if not isinstance(failures, UniformOrder) else 16
    check_memory(reps * per, f"per-replication results of {reps:,} replications",
                 "use fewer replications per call (consecutive calls with one Generator continue its stream)")
    rng = generator(rng)
    src = _k.raw_source(rng)
    n, rr = layout.n_groups, layout.r
    out_T = np.empty(reps, dtype=np.int64)
    out_dead = np.empty(reps, dtype=np.int64)
    # holders of each type; for uneven replica sets a "type" is a set, held by its members
    holders_per_type = layout.sizes.copy() if isinstance(layout, ReplicaSets) else np.full(n, rr, dtype=np.int64)
    time_s = None
    if isinstance(failures, UniformOrder):
        wr = failures.with_replacement
        if kernel == "fresh":
            _k.wipeout_random_fresh(*src, n, rr, reps, wr, out_T, out_dead)
        elif kernel == "cyclic-unit":
            _k.wipeout_cyclic_unit(*src, n, rr, reps, wr, out_T, out_dead)
        elif kernel == "partition":
            classes = partition_classes(layout)
            _k.wipeout_partition(*src, n, classes[0], classes[1], reps, out_T, out_dead)
        elif kernel == "cyclic-window":
            _k.wipeout_cyclic_window(*src, n, rr, order_stat_table(layout), reps, 0, out_T, out_dead)
        elif kernel == "order":
            _k.wipeout_order_stat(*src, n, order_stat_table(layout), reps, 0, out_T, out_dead)
        else:
            _k.wipeout_generic(*src, n, layout.group_ptr, layout.group_types, holders_per_type, reps, wr, out_T,
                               out_dead)
    else:
        proc = lower(failures, topology)
        time_s = np.empty(reps)
        if fresh_layout:
            ptr, types = np.empty(n + 1, dtype=np.int64), np.empty(n * rr, dtype=np.int64)
        else:
            # the kernel also has a branch that refills these (fresh random layouts), so numba needs them writable;
            # ReplicaSets hands out read-only arrays
            ptr, types = np.array(layout.group_ptr), np.array(layout.group_types)
        _k.wipeout_events(rng, *src, Holding(n, ptr, types, holders_per_type), rr if fresh_layout else 0, proc, reps,
                          TrialsOut(out_T, out_dead, time_s), EventRecord(np.empty(n), np.empty(n, np.int64),
                                                                          np.empty(n, np.int64)))
    return WipeoutResult(out_T, out_dead, time_s, layout.kind, n, rr, fresh_layout, failures.to_dict())


#: Replications per chunk of :func:`masked_failures` (one chunk's per-replication arrays live at once).
MASKED_CHUNK = 1_000_000


def finite_or_none(x):
    """A finite float, else None (strict JSON)."""
    return None if x is None or not math.isfinite(x) else float(x)


def _streamed_estimate(name, s1, s2, n) -> MCEstimate:
    """Mean, sd and se from exact integer sums (``s1 = sum x``, ``s2 = sum x^2``)."""

    var = Fraction(s2 * n - s1 * s1, n * (n - 1))
    sd = math.sqrt(var) if var > 0 else 0.0
    return MCEstimate(name, s1 / n, sd / math.sqrt(n), sd, n, 0.95, "nonnegative")


@dataclass(frozen=True)
class MaskedFailures:
    """What :func:`masked_failures` found: the Monte Carlo estimates of ``T`` and of the masked failures, the exact
    law's mean and sd when it was computed, the paper's ``mu`` and its expansion, and the Monte Carlo against the
    exact mean (``mc_vs_exact_*``, None without the exact law). :meth:`to_dict` is what ``spare-mc mu --json``
    prints (without its stamp)."""

    n_groups: int
    r: int
    layout: str
    reps: int
    seed: int
    with_replacement: bool
    T_definition: str
    exact_mean_T: float | None
    exact_sd_T: float | None
    mc_mean_T: float
    mc_se_T: float
    mc_sd_T: float
    mc_ci95_T: list
    mc_masked_mean: float
    mc_masked_ci95: list
    paper_mu: float
    mu_expansion_random: float
    mc_vs_exact_z: float | None = None
    mc_vs_exact_p: float | None = None
    mc_vs_exact_consistent: bool | None = None

    def to_dict(self) -> dict:
        """The fields by name, in order; the ``mc_vs_exact_*`` ones only when the exact law was computed."""
        out = {f: getattr(self, f) for f in self.__dataclass_fields__}
        if self.exact_mean_T is None:
            for name in ("mc_vs_exact_z", "mc_vs_exact_p", "mc_vs_exact_consistent"):
                del out[name]
        if layout_note(self.layout, self.r):
            out["layout_note"] = layout_note(self.layout, self.r)
        return out


def masked_failures(layout_kind: str, n_groups: int, r: int, reps: int, *, seed: int = 0,
                    with_replacement: bool = False, exact: bool = True, chunk: int = MASKED_CHUNK,
                    progress=None) -> MaskedFailures:
    """How many failures a layout masks before its first wipe-out, by Monte Carlo in chunks, against the exact law.

    The replications run in chunks of ``chunk`` on one generator, which the kernels advance in place: the chunks are
    consecutive pieces of one random stream, the output depends only on the seed and the count, and memory stays
    O(chunk + N). (Up to one chunk this is exactly one :func:`wipeout_mc` call. Beyond, a layout simulated failure
    by failure gives other numbers than a single huge call, whose kernel carries its permutation state from one
    replication to the next, with the same law; one read from its groups' failure times gives the same numbers, its
    trials carrying no state from one to the next.) The sums of ``T`` and of its square are exact integers.

    Parameters
    ----------
    layout_kind : str
        A layout kind of :func:`spare_mc.model.kinds.make_layout` (``"random"`` draws a fresh layout per trial).
    n_groups, r : int
        Groups and replicas per shard type.
    reps : int
        Replications (at least 2, for a standard error).
    seed : int
        Root of the one random stream: ``numpy.random.default_rng(numpy.random.SeedSequence(seed))``.
    with_replacement : bool
        Failures may hit dead groups (``T`` then counts them; the masked failures are the distinct dead groups).
    exact : bool
        Compute the exact law of ``T`` (:func:`spare_mc.theory.exact.exact_wipeout`) when the layout has one and
        failures are without replacement, and compare the Monte Carlo mean with it (``alpha = 1e-3``).
    chunk : int
        Replications per chunk.
    progress : callable or None
        Called with ``"{done:,} of {reps:,} replications"`` after each chunk when there is more than one.

    Returns
    -------
    MaskedFailures
    """

    layout = make_layout(layout_kind, n_groups, r, rng=0)  # validates N and r first
    gen = np.random.default_rng(np.random.SeedSequence(seed))
    failures = UniformOrder(with_replacement=with_replacement)
    sums = {"T": [0, 0], "masked": [0, 0]}
    done = 0
    loud = reps > chunk and progress is not None
    while done < reps:
        k = min(chunk, reps - done)
        res = wipeout_mc(layout, k, failures=failures, fresh_layout=layout_kind == "random", rng=gen)
        for name, v in (("T", res.T), ("masked", res.dead_before)):
            sums[name][0] += int(v.sum())
            exact_int64 = float(v.max()) ** 2 * v.size < 2.0**62  # else exact Python integers (huge N only)
            sums[name][1] += int((v * v).sum()) if exact_int64 else sum(x * x for x in v.tolist())
        done += k
        if loud:
            progress(f"{done:,} of {reps:,} replications")
    est = {name: _streamed_estimate(name, s1, s2, reps) for name, (s1, s2) in sums.items()}
    law = None
    if layout_kind in EXACT_LAYOUTS and not with_replacement and exact:
        law = exact_wipeout(layout_kind, n_groups, r)
    checks = {}
    if law is not None:
        c = compare(est["T"], law.mean, alpha=1e-3)
        checks = {"mc_vs_exact_z": finite_or_none(c.z), "mc_vs_exact_p": c.p_value,
                  "mc_vs_exact_consistent": c.consistent}
    return MaskedFailures(
        n_groups=n_groups, r=r, layout=layout_kind, reps=reps, seed=seed, with_replacement=with_replacement,
        T_definition=("1-based index of the failure causing the first wipe-out, counting failures that hit dead "
                      "groups; masked = distinct dead groups before it (not T - 1)" if with_replacement else
                      "1-based index of the failure causing the first wipe-out; masked failures = T - 1"),
        exact_mean_T=None if law is None else law.mean,
        exact_sd_T=None if law is None else law.sd,
        mc_mean_T=est["T"].mean, mc_se_T=est["T"].se, mc_sd_T=est["T"].sd, mc_ci95_T=list(est["T"].ci),
        mc_masked_mean=est["masked"].mean, mc_masked_ci95=list(est["masked"].ci),
        paper_mu=mu_paper(n_groups, r), mu_expansion_random=mu_expansion(n_groups, r), **checks)
