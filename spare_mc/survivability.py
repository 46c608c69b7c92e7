"""Wipe-out Monte Carlo: how many failures a layout masks before some shard type loses all its holders.

Per trial, failures are applied to a fully live system until the first wipe-out. Returned per trial:

- ``T``: the 1-based index of the failure (event) that causes the first wipe-out;
- ``dead_before``: distinct dead groups just before it -- the **masked failures**. For single-group failures
  without replacement ``dead_before == T - 1``; with domain events or with replacement they differ;
- ``time_s``: the wipe-out time, for failure models with a clock (``None`` for :class:`UniformOrder`).

Cost per trial is proportional to the failures drawn (O(1) per failure for cyclic unit stride, O(types held) for
any layout; O(N r) extra per trial for a fresh random layout), except for partition layouts (Rep's replica sets)
under uniform order without replacement: one draw per replica set, from the sets' order statistics
(``method="auto"``, see :func:`wipeout_mc`).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field

import numpy as np

from . import _wipeout_kernels as _k
from ._resources import check_memory
from ._seeding import _UNSET, generator
from ._validation import UsageTypeError, UsageValueError, as_choice, as_int
from .failures import DomainFailures, PerGPU, SystemRenewal, UniformOrder, lower
from .layouts import LAYOUT_KINDS, Layout, ReplicaSets, make_layout
from .exact import block_mean
from .stats import MCEstimate, estimate_mean, wilson_interval
from .topology import Topology

__all__ = ["WipeoutResult", "wipeout_mc", "partition_classes", "partition_kernel_classes", "WIPEOUT_METHODS"]

#: ``wipeout_mc(method=...)``: see :func:`wipeout_mc`.
WIPEOUT_METHODS = ("auto", "sequential")


def partition_classes(layout):
    """The replica-set structure of a partition layout, or ``None`` if ``layout`` is not one.

    A layout is a partition when its types' holder sets are pairwise equal or disjoint; its distinct holder sets
    are then disjoint "replica sets", and a type is wiped exactly when all members of its set are dead. Rep's
    :class:`~spare_mc.layouts.ReplicaSets` always are. A :class:`~spare_mc.layouts.Layout` is first screened in
    O(r^2) (the types held by the first holder of type 0 must all have type 0's holder set: this rejects cyclic,
    Sidon and random layouts at once), then checked in O(N r log r); the answer is cached per layout object.

    Returns
    -------
    (sizes, counts) : two int64 arrays, or None
        ``counts[c]`` replica sets of ``sizes[c]`` members each (sizes ascending); groups in no set hold nothing.

    Examples
    --------
    >>> from spare_mc import replica_sets, block, cyclic
    >>> [a.tolist() for a in partition_classes(replica_sets(11, 4))]
    [[5, 6], [1, 1]]
    >>> [a.tolist() for a in partition_classes(block(12, 3))]
    [[3], [4]]
    >>> partition_classes(cyclic(12, 3)) is None
    True
    """
    return _partition_classes(layout)


@functools.lru_cache(maxsize=64)  # layouts compare by identity (eq=False): a sweep's one layout is checked once
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
    1/s)`` for ``b`` sets of ``s`` (:func:`spare_mc.exact.block_mean_closed_form`; ``s`` the most common size);
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


def _reps_alias(reps, trials, where):
    """``reps``, or its deprecated alias ``trials`` (one release)."""
    if trials is not _UNSET:
        if reps is not None:
            raise UsageTypeError(f"{where}: pass `reps` only (`trials` is its deprecated alias)")
        warnings.warn(f"{where}: `trials` is deprecated; pass `reps` (same meaning)", DeprecationWarning, stacklevel=3)
        return trials
    if reps is None:
        raise UsageTypeError(f"{where}: `reps` (the number of replications) is required")
    return reps


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

    @property
    def trials(self) -> int:
        """Deprecated alias of :attr:`reps` (one release)."""
        warnings.warn("`WipeoutResult.trials` is deprecated; use `reps`", DeprecationWarning, stacklevel=2)
        return self.reps

    def estimate(self, quantity: str = "T", level: float = 0.95) -> MCEstimate:
        """Mean of ``"T"``, ``"masked"`` (``dead_before``) or ``"time_s"`` with its standard error and CI."""
        quantity = as_choice(quantity, "quantity", ("T", "masked", "time_s"))
        if quantity == "time_s" and self.time_s is None:
            raise UsageValueError("`quantity`='time_s' needs a failure model with a clock (not UniformOrder)")
        values = {"T": self.T, "masked": self.dead_before, "time_s": self.time_s}[quantity]
        return estimate_mean(values, quantity, level, support="nonnegative")

    def survival_curve(self, level: float = 0.95):
        """Empirical ``P(T > m)`` for m = 0..N with Wilson intervals: ``(p_hat, low, high)``."""
        counts = np.bincount(self.T, minlength=self.n_groups + 2)
        greater = self.reps - np.cumsum(counts)[: self.n_groups + 1]
        low, high = wilson_interval(greater, self.reps, level)
        return greater / self.reps, low, high

    def to_xarray(self):
        """The per-replication values as an :class:`xarray.Dataset` with dimension ``rep``."""
        import xarray as xr

        data = {"T": ("rep", self.T, {"long_name": "wipe-out failure index (1-based)", "units": "failures"}),
                "masked": ("rep", self.dead_before, {"long_name": "masked failures", "units": "groups"})}
        if self.time_s is not None:
            data["time_s"] = ("rep", self.time_s, {"long_name": "time to first wipe-out", "units": "s"})
        return xr.Dataset(data, attrs={"layout": self.layout, "n_groups": self.n_groups, "r": self.r,
                                       "fresh_layout": int(self.fresh_layout), "failures": str(self.failures)})


def _wipeout_iv(layout, reps, n_groups, r, failures, topology, fresh_layout):
    reps = as_int(reps, "reps", min_value=1)
    if isinstance(layout, str):
        as_choice(layout, "layout", LAYOUT_KINDS)
        if n_groups is None or r is None:
            raise UsageValueError(f"`n_groups` and `r` are required when `layout` is a name ({layout!r})")
        if layout == "random":
            fresh_layout = True if fresh_layout is None else fresh_layout
        layout = make_layout(layout, n_groups, r, rng=0)  # the random instance is unused when fresh
    elif isinstance(layout, (Layout, ReplicaSets)):
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
    if isinstance(failures, (PerGPU, DomainFailures)):
        if topology is None:
            raise UsageValueError(f"`topology` is required for the {type(failures).__name__} failure model")
        if not isinstance(topology, Topology):
            raise UsageTypeError(f"`topology` must be a Topology, got {type(topology).__name__}")
        if topology.n_groups != layout.n_groups:
            raise UsageValueError(f"`topology` has N={topology.n_groups} groups but the layout has N={layout.n_groups}")
    elif topology is None:
        topology = Topology(layout.n_groups, layout.n_groups)
    return layout, reps, failures, topology, fresh_layout


def wipeout_mc(layout, reps: int | None = None, *, n_groups: int | None = None, r: int | None = None,
               failures=None, topology: Topology | None = None, fresh_layout: bool | None = None, rng=None,
               method: str = "auto", trials=_UNSET) -> WipeoutResult:
    """Monte Carlo of the first wipe-out.

    Parameters
    ----------
    layout : Layout or {"cyclic", "sidon", "random", "block"}
        A layout, or a layout name together with ``n_groups`` and ``r``.
    reps : int
        Independent replications (``trials`` is its deprecated alias). Their per-replication results must fit the
        memory budget (:mod:`spare_mc.options`); for more, call again with the same Generator: the kernels advance
        it in place, so consecutive calls continue one random stream (``spare-mc mu`` streams that way).
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
    rng : anything :func:`numpy.random.default_rng` accepts.
    method : {"auto", "sequential"}
        How uniform order without replacement is simulated on a **partition layout** -- one whose types' holder
        sets are pairwise equal or disjoint: Rep's replica sets (``"block"``) and any layout of that shape.
        ``"auto"`` draws ``T`` from its order-statistic representation (:func:`~spare_mc._wipeout_kernels.
        wipeout_partition`: about one draw per replica set instead of one per failure, the same law) when that
        makes fewer draws -- few large sets, as Rep at N = 1000, r = 9 (112 draws, one per set and one per size class, against about 562 failures); many
        small sets (N = 600, r = 3: 200 sets, 92 failures) stay failure by failure. The per-trial
        values then differ from the failure-by-failure kernel's, so a partition layout no longer shares its
        failure order (common random numbers) with other layouts or with :func:`spare_mc.overhead_mc` on the same
        ``rng``. ``"sequential"`` simulates failure by failure, as for every other layout, keeping that sharing.
        Other layouts and failure models are always simulated failure by failure.

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
    reps = _reps_alias(reps, trials, "wipeout_mc")
    method = as_choice(method, "method", WIPEOUT_METHODS)
    layout, trials, failures, topology, fresh_layout = _wipeout_iv(layout, reps, n_groups, r, failures, topology,
                                                                   fresh_layout)
    per = 24 if not isinstance(failures, UniformOrder) else 16
    check_memory(trials * per, f"per-replication results of {trials:,} replications",
                 "use fewer replications per call (consecutive calls with one Generator continue its stream)")
    rng = generator(rng)
    src = _k.raw_source(rng)
    n, rr = layout.n_groups, layout.r
    out_T = np.empty(trials, dtype=np.int64)
    out_dead = np.empty(trials, dtype=np.int64)
    # holders of each type; for uneven replica sets a "type" is a set, held by its members
    holders_per_type = layout.sizes.copy() if isinstance(layout, ReplicaSets) else np.full(n, rr, dtype=np.int64)
    time_s = None
    if isinstance(failures, UniformOrder):
        wr = failures.with_replacement
        if fresh_layout:
            _k.wipeout_random_fresh(*src, n, rr, trials, wr, out_T, out_dead)
        elif layout.kind == "cyclic":
            _k.wipeout_cyclic_unit(*src, n, rr, trials, wr, out_T, out_dead)
        elif method == "auto" and not wr and (classes := partition_kernel_classes(layout)) is not None:
            _k.wipeout_partition(*src, n, classes[0], classes[1], trials, out_T, out_dead)
        else:
            _k.wipeout_generic(*src, n, layout.group_ptr, layout.group_types, holders_per_type, trials, wr, out_T,
                               out_dead)
    else:
        proc = lower(failures, topology)
        time_s = np.empty(trials)
        if fresh_layout:
            ptr, types = np.empty(n + 1, dtype=np.int64), np.empty(n * rr, dtype=np.int64)
        else:
            # the kernel also has a branch that refills these (fresh random layouts), so numba needs them writable;
            # ReplicaSets hands out read-only arrays
            ptr, types = np.array(layout.group_ptr), np.array(layout.group_types)
        _k.wipeout_events(rng, *src, n, ptr, types, holders_per_type, rr if fresh_layout else 0, proc.mode,
                          proc.shape, proc.scale, proc.live_scaling, proc.group_rate, proc.level_rate, proc.level_ptr,
                          proc.dom_ptr, proc.dom_groups, trials, out_T, out_dead, time_s, np.empty(n),
                          np.empty(n, np.int64), np.empty(n, np.int64))
    return WipeoutResult(out_T, out_dead, time_s, layout.kind, n, rr, fresh_layout, failures.to_dict())
