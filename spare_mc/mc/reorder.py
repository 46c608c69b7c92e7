"""ReCtlr -- adaptive reordering after failures -- and the measured compute overhead of stacking.

The model (docs/model.md, section 4). Every live group computes the top ``S`` layers of its stack each step; the step
needs every shard type computed by one live group. With ``k`` dead groups ``S >= c(k) = ceil(N / (N - k))``. When
failures are detected, ReCtlr runs:

- **Phase 0 (HK-Fixed)**: keep the stacks; is there an assignment of every type to a live group holding it in its
  top ``S`` layers, no group serving more than ``S`` types? If so nothing changes.
- **Phase 1 (HK-Free)**: each live group may permute its own stack; ``S*`` is the least ``S' >= max(S, c(k))`` for
  which an assignment exists. With no type wiped out one always exists at ``S'`` = the longest stack (``r`` for
  regular layouts).
- **Phase 2 (MCMF)**: among the assignments at ``S*``, one with the fewest **moves** (a served type that sits at
  position ``>= S*`` of its group's stack and must be brought into the top ``S*``), by min-cost flow. Each moved
  type swaps places with the deepest top-``S*`` type that group does not serve. ``S`` becomes ``S*``.
- **Patch compute**: the types that no surviving group had in its top ``S`` layers when the failure struck were
  computed only by the dead groups; survivors holding them recompute them before the all-reduce. The patch cost is
  the least possible largest number of extra shards one survivor computes (the types are spread over their live
  holders by a bottleneck assignment); ``patch_types`` is how many types need it.

``S`` never decreases until the wipe-out (then a global restart resets everything). The solver is incremental:
after a failure it repairs the previous assignment by augmenting paths from the orphaned types (the ones the dead
groups served) instead of starting over; ``from_scratch=True`` solves every phase from an empty assignment, and
:func:`spare_mc.testing.rectlr_reference` does it with scipy (and networkx for the min-cost flow). From the same
state all three must agree on Phase-0 feasibility, ``S*``, the minimal number of moves and the patch.

They need not leave the same assignment: several assignments are often equally good (as many moves), and which
one the solver keeps (its tie rule) is the state the next failure meets. Over a run of failures, ``T``, ``c(k)``
and ``S*`` do not depend on it (``S*`` is the least capacity with a perfect assignment over all live holders,
whatever the stacks' order), but the per-call counts that read the stacks and the assignment do: Phase-0
success, moves, orphans and the patch. The paper does not specify a tie rule. Measured on the same failure orders
(``overhead_mc(layout, 300, n_groups=600, r=8, rng=1)`` with and without ``from_scratch``, the tie rule of
2026-12-06): identical ``T`` and ``S*`` in every replication, and per-call means that differ by 0.2-1.3% (cyclic:
``hk_fixed_rate`` 0.6247 vs 0.6237, ``moves_mean`` 0.6025 vs 0.6010, ``patch_mean`` 0.3796 vs 0.3808; random
holders: ``hk_fixed_rate`` 0.3971 vs 0.4022), inside each other's 95% intervals. The tie rule is stated in
:mod:`spare_mc._kernels.rectlr`; its change on 2026-12-06 (issue 38) moved these per-call means by under 1.5%
(``benchmarks/bench_tie_rule.py``).

Epoch convention
----------------
Epoch ``k`` is the time between the ``k``-th and the ``(k+1)``-th failure (event), ``k = 0 .. T-1``: a trial has
exactly ``T`` epochs before its wipe-out. Epoch 0 runs on the initial stacks with ``S_0 = 1`` when the stacks' top
layer is itself a perfect assignment (every cyclic layout and block replication), otherwise with the ``S`` that
ReCtlr finds for the fully live system (possible for random holders, where some groups hold no type at all).
The measured overhead is ``E[sum_{k<T} S_k] / E[T]`` and its lower bound ``E[sum_{k<T} c(k)] / E[T]``, per epoch
(not per unit of time: weighting by time is the time-to-train simulator's job). ReCtlr statistics (Phase-0 rate,
moves, patch) are per **masked** failure event, i.e. per ReCtlr call (``T - 1`` per trial with single failures).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from .._kernels import rectlr as _rk
from .._kernels import rectlr_layout as _rl
from .._kernels.draws import raw_source
from .._lib.resources import check_memory
from .._lib.seeding import generator
from .._lib.validation import UsageTypeError, UsageValueError, as_indices, as_int
from ..model.failures import UniformOrder, sample_events
from ..model.kinds import EXACT_LAYOUTS
from ..model.layouts import Layout, layout_note, random_holders
from ..stats import MCEstimate, compare, estimate_mean, one_run_estimate, ratio_estimate
from ..theory.closed_forms import overhead_lower_bound, stack_lower_bound
from ..theory.exact import exact_wipeout
from .survivability import check_mc_inputs, finite_or_none

__all__ = ["ReCtlr", "ReCtlrStep", "OverheadResult", "overhead_mc", "exact_stack_bound_sum", "StackBoundSum",
           "OverheadCheck", "overhead_check", "EPOCH_CONVENTION"]


def _invariant(ok, message):
    """A state check that survives ``python -O`` (unlike ``assert``)."""
    if not ok:
        raise RuntimeError(f"invalid ReCtlr state: {message}")


@dataclass(frozen=True)
class ReCtlrStep:
    """What one ReCtlr call did.

    Attributes
    ----------
    k : int
        Dead groups after the failure.
    c : int
        ``c(k) = ceil(N / (N - k))`` (0 on a wipe-out with every group dead).
    s_star : int
        The stack number from now on (``S`` unchanged when Phase 0 sufficed).
    phase0 : bool
        Phase 0 (HK-Fixed) sufficed: no reordering, no change of ``S``.
    moves : int
        Shards brought up into a group's top ``S*`` layers (0 when ``phase0``).
    orphans : int
        Types the dead groups were serving (the ones the repair starts from).
    patch_types : int
        Types no survivor had in its top ``S`` layers: recomputed by survivors this step.
    patch : int
        The largest number of those extra shards one survivor computes (minimised over survivors).
    wiped : bool
        A type lost all its holders: wipe-out, no reordering done.
    patch_plan : tuple of (int, int)
        ``(type, survivor)`` for every patch type: who recomputes what this step (a plan achieving ``patch``).
    """

    k: int
    c: int
    s_star: int
    phase0: bool
    moves: int
    orphans: int
    patch_types: int
    patch: int
    wiped: bool
    patch_plan: tuple = ()


class ReCtlr:
    """Stateful ReCtlr over one layout: kill groups, get what the controller did, inspect stacks and assignment.

    Parameters
    ----------
    layout : Layout
        Any layout.
    stacks : list of list of int or 2-d int array, optional
        Initial stack order of every group (top first), each a permutation of the types the group holds. Default:
        ``layout.stacks()`` (layer order).

    Notes
    -----
    The fast path of :func:`overhead_mc` runs the same kernels without the Python layer. See the module docstring
    for the phases and :func:`spare_mc.testing.rectlr_reference` for the slow twin.

    Examples
    --------
    >>> from spare_mc import cyclic
    >>> ctl = ReCtlr(cyclic(6, 3))
    >>> ctl.stack_number
    1
    >>> step = ctl.fail(2)
    >>> step.c, step.s_star, step.phase0, step.moves
    (2, 2, False, 0)
    >>> ctl.fail([3, 4]).wiped
    True
    """

    def __init__(self, layout: Layout, *, stacks=None):
        if not isinstance(layout, Layout):
            raise UsageTypeError(f"`layout` must be a Layout, got {type(layout).__name__}")
        self.layout = layout
        n, r = layout.n_groups, layout.r
        self._n, self._r = n, r
        self._st = _rk.alloc(n, r)  # the kernels' state (E, G, D, H, meta, ulog, pplan, out)
        self._wiped = False
        self._meta[_rk.MAXDEG_] = _rk.build_stacks(layout.holders, self._E, self._G)
        if stacks is not None:
            self._set_stacks(stacks)
        rc = _rk.initial_assignment(n, r, self._st)
        if rc < 0:  # pragma: no cover - an internal error, never a user error
            raise RuntimeError("ReCtlr found no initial assignment although every group is alive")
        self.initial_moves = int(self._out[_rk.O_MOVES])

    # the kernel state's blocks, and views into them
    _E = property(lambda self: self._st.E)
    _G = property(lambda self: self._st.G)
    _meta = property(lambda self: self._st.meta)
    _out = property(lambda self: self._st.out)
    _pplan = property(lambda self: self._st.pplan)
    _gstk = property(lambda self: self._E[_rk.GSTK])
    _epos = property(lambda self: self._E[_rk.EPOS])
    _eg = property(lambda self: self._E[_rk.EG])
    _gptr = property(lambda self: self._G[_rk.GPTR])
    _own = property(lambda self: self._G[_rk.OWN, :self._n])
    _alive = property(lambda self: self._G[_rk.ALIVE, :self._n])

    def _set_stacks(self, stacks):
        n, r = self._n, self._r
        def is_seq(x, ndim):  # a list or tuple (ragged allowed), or an array of that many dimensions
            return isinstance(x, (list, tuple)) or (isinstance(x, np.ndarray) and x.ndim == ndim)
        if not is_seq(stacks, 2):
            shape = f" of shape {stacks.shape}" if isinstance(stacks, np.ndarray) else ""
            raise UsageTypeError(f"`stacks` must be a list of N={n} stacks (or an N x r array), got "
                                 f"{type(stacks).__name__}{shape}")
        if len(stacks) != n:
            raise UsageValueError(f"`stacks` must be a list of N={n} stacks, got {len(stacks)}")
        for g in range(n):
            base, end = self._gptr[g], self._gptr[g + 1]
            edges = self._gstk[base:end]
            by_type = {int(e) // r: int(e) for e in edges}
            if not is_seq(stacks[g], 1) or any(isinstance(t, (list, tuple, np.ndarray)) for t in stacks[g]):
                raise UsageTypeError(f"`stacks[{g}]` must be a list of the type indices group {g} holds, top first, "
                                     f"got {stacks[g]!r}")
            order = [as_int(t, f"stacks[{g}]") for t in stacks[g]]
            if sorted(order) != sorted(by_type):
                raise UsageValueError(f"`stacks[{g}]` must be a permutation of the types group {g} holds "
                                      f"{sorted(by_type)}, got {order}")
            for p, t in enumerate(order):
                e = by_type[t]
                self._gstk[base + p] = e
                self._E[_rk.STYPE, base + p] = t  # the slot's type, which the kernels read beside its edge
                self._epos[e] = p

    # ------------------------------------------------------------------------------------------ inspection
    @property
    def n_groups(self) -> int:
        return self._n

    @property
    def stack_number(self) -> int:
        """Current ``S``."""
        return int(self._meta[_rk.S_])

    @property
    def dead_count(self) -> int:
        """``k``: dead groups."""
        return int(self._meta[_rk.K_])

    @property
    def wiped(self) -> bool:
        return self._wiped

    @property
    def alive(self) -> np.ndarray:
        """Boolean mask of live groups (a copy)."""
        return self._alive.astype(bool)

    def stacks(self) -> list[list[int]]:
        """Each group's types in current stack order (top first)."""
        r = self._r
        return [(self._gstk[self._gptr[g]:self._gptr[g + 1]] // r).tolist() for g in range(self._n)]

    def assignment(self) -> np.ndarray:
        """``a[t]`` = the group serving type ``t``. After a wipe-out there is none (``RuntimeError``): the state
        is left as the failure found it, with types still pointing at dead groups."""
        if self._wiped:
            raise RuntimeError("the layout is wiped out: no assignment exists (build a new ReCtlr, a global restart)")
        return self._eg[self._own].copy()

    def validate(self) -> None:
        """Raise ``RuntimeError`` (an internal error of the solver, never bad input) unless the state is a valid
        ReCtlr state.

        Every type is served exactly once by a live group that holds it in its top ``S`` layers, no group serves
        more than ``S`` types, and every stack is a permutation of the layout's stack.
        """
        S = self.stack_number
        stacks = self.stacks()
        ref = self.layout.stacks()
        for g in range(self._n):
            _invariant(sorted(stacks[g]) == sorted(ref[g]), f"group {g}'s stack is not a permutation of its types")
        if self._wiped:
            return
        a = self.assignment()
        alive = self.alive
        load = np.bincount(a, minlength=self._n)
        _invariant(alive[a].all(), "a type is served by a dead group")
        _invariant(load.max() <= S, f"a group serves {load.max()} > S={S} types")
        for t in range(self._n):
            _invariant(t in stacks[a[t]][:S], f"type {t} is not in the top {S} layers of its group {a[t]}")

    def copy(self) -> "ReCtlr":
        """An independent copy of the current state."""
        new = object.__new__(ReCtlr)
        new.__dict__.update(self.__dict__)
        fresh = _rk.alloc(self._n, self._r)  # the scratch blocks; the state proper is copied
        new._st = fresh._replace(E=self._E.copy(), G=self._G.copy(), meta=self._meta.copy())
        return new

    # ---------------------------------------------------------------------------------------------- action
    def fail(self, groups, *, from_scratch: bool = False) -> ReCtlrStep:
        """Kill ``groups`` (an int or a sequence of distinct groups failing together) and run ReCtlr.

        Already-dead groups are ignored. ``from_scratch=True`` re-solves from an empty assignment: the same answers
        as the incremental repair from this state (used to check it), but possibly another, equally good
        assignment, which later calls start from (see the module docstring). After a wipe-out the controller
        refuses further failures.
        """
        if self._wiped:
            raise RuntimeError("the layout is wiped out; build a new ReCtlr (a global restart)")
        newly = as_indices(groups, "groups", self._n, scalar=True, distinct=True, nonempty=True)
        if not isinstance(from_scratch, bool):
            raise UsageTypeError(f"`from_scratch` must be a bool, got {from_scratch!r}")
        rc = _rk.step_blocks(newly, newly.size, from_scratch, self._n, self._r, tuple(self._st))
        if rc < 0:  # pragma: no cover - an internal error
            raise RuntimeError("ReCtlr found no assignment although no type is wiped out")
        o = self._out
        self._wiped = rc == 1
        npatch = int(o[_rk.O_PATCH_TYPES])
        plan = tuple(zip(self._pplan[:npatch].tolist(), self._pplan[self._n:self._n + npatch].tolist()))
        return ReCtlrStep(int(o[_rk.O_K]), int(o[_rk.O_C]), int(o[_rk.O_S]), bool(o[_rk.O_PHASE0]),
                          int(o[_rk.O_MOVES]), int(o[_rk.O_ORPHANS]), npatch, int(o[_rk.O_PATCH]),
                          bool(o[_rk.O_WIPED]), plan)


# ------------------------------------------------------------------------------------------------ estimators
#: the drivers' per-trial statistics by name (``OverheadResult.rep_stats``, in this order): the kernel's column of each
_TRIAL_COLS = {"T": _rl.T_T, "dead_before": _rl.T_DEAD, "sum_c": _rl.T_SUM_C, "sum_s": _rl.T_SUM_S,
               "calls": _rl.T_CALLS, "phase0": _rl.T_PHASE0, "moves": _rl.T_MOVES, "orphans": _rl.T_ORPHANS,
               "patch_types": _rl.T_PATCH_TYPES, "patch": _rl.T_PATCH, "s0": _rl.T_S0, "s_max": _rl.T_SMAX,
               "no_move": _rl.T_NOMOVE}
#: their per-event log by name (``OverheadResult.log``, in this order)
_LOG_COLS = {"rep": _rl.L_TRIAL, "event": _rl.L_EVENT, "k": _rl.L_K, "c": _rl.L_C, "s_star": _rl.L_S,
             "phase0": _rl.L_PHASE0, "moves": _rl.L_MOVES, "orphans": _rl.L_ORPHANS, "patch_types": _rl.L_PATCH_TYPES,
             "patch": _rl.L_PATCH}

#: Estimators of :meth:`OverheadResult.estimate`: name -> (numerator column, denominator column or None, meaning)
ESTIMATORS = {
    "masked": ("dead_before", None, "failures masked before the wipe-out (dead groups just before it)"),
    "T": ("T", None, "1-based index of the wipe-out failure/event = epochs per trial"),
    "c_mean": ("sum_c", "T", "lower bound E[sum_{k<T} c(k)] / E[T], per epoch"),
    "s_star_mean": ("sum_s", "T", "measured stack number E[sum_{k<T} S_k] / E[T], per epoch"),
    "rho_mean": ("sum_rho", "T", "reordering excess E[sum_{k<T} (S_k - c(k))] / E[T], per epoch"),
    "hk_fixed_rate": ("phase0", "calls", "fraction of ReCtlr calls resolved by Phase 0"),
    "no_move_rate": ("no_move", "calls", "fraction of ReCtlr calls needing no move (Phase 0 or a larger S alone)"),
    "moves_mean": ("moves", "calls", "moves per ReCtlr call"),
    "patch_mean": ("patch", "calls", "largest extra shards per survivor, per ReCtlr call"),
    "patch_types_mean": ("patch_types", "calls", "types recomputed by survivors, per ReCtlr call"),
    "orphans_mean": ("orphans", "calls", "types served by the failed groups, per ReCtlr call"),
    "sum_c": ("sum_c", None, "sum_{k<T} c(k) per trial"),
    "sum_s": ("sum_s", None, "sum_{k<T} S_k per trial"),
}


@dataclass(frozen=True, eq=False)
class OverheadResult:
    """Per-replication ReCtlr statistics until the first wipe-out, and their estimators.

    Attributes
    ----------
    rep_stats : dict of str -> ndarray
        Per replication: ``T``, ``dead_before``, ``sum_c`` (``sum_{k<T} c(k)``), ``sum_s`` (``sum_{k<T} S_k``),
        ``calls`` (ReCtlr calls = masked events), ``phase0``, ``moves``, ``orphans``, ``patch_types``, ``patch``
        (sums over the replication's calls), ``s0`` (initial ``S``), ``s_max``, ``no_move`` (calls with no move).
    gap_counts : ndarray, shape (reps, r + 1)
        Epochs with ``S_k - c(k) = j`` (last column: ``>= r``).
    log : dict of str -> ndarray
        One row per ReCtlr call of the first ``log_reps`` replications (columns ``rep, event, k, c, s_star, phase0,
        moves, orphans, patch_types, patch``).
    layout, n_groups, r, fresh_layout, failures : the setting.
    """

    rep_stats: dict
    gap_counts: np.ndarray
    log: dict
    layout: str
    n_groups: int
    r: int
    fresh_layout: bool
    failures: dict = field(default_factory=dict)

    @property
    def reps(self) -> int:
        """Number of replications."""
        return int(self.rep_stats["T"].size)

    def _column(self, name):
        if name == "sum_rho":
            return self.rep_stats["sum_s"] - self.rep_stats["sum_c"]
        return self.rep_stats[name]

    def estimate(self, name: str, level: float = 0.95) -> MCEstimate:
        """Estimate ``name`` (a key of :data:`ESTIMATORS`) with its standard error and CI.

        Per-replication means use the t interval; per-epoch and per-call quantities are ratios of
        per-replication sums (``sum num / sum den``) whose standard error is the delta method over replications
        (events of one replication are dependent, replications are independent). Intervals respect the support
        (rates in [0, 1], everything else non-negative; see :meth:`MCEstimate.confidence_interval`). From a
        single replication: the value with NaN standard error and interval, as :meth:`TTTResult.estimate`. A
        per-call quantity of runs with no ReCtlr call (every replication wiped out at its first failure, e.g.
        ``r = 1``) is 0 / 0: NaN, undefined (:func:`spare_mc.ratio_estimate`).
        """
        if name not in ESTIMATORS:
            raise UsageValueError(f"`name` must be one of {sorted(ESTIMATORS)}, got {name!r}")
        num, den, _ = ESTIMATORS[name]
        support = "unit" if name.endswith("_rate") else "nonnegative"
        if self.reps < 2:
            return one_run_estimate(name, self._column(num), level, support,
                                    denominators=None if den is None else self._column(den))
        if den is None:
            return estimate_mean(self._column(num), name=name, level=level, support=support)
        return ratio_estimate(self._column(num), self._column(den), name=name, level=level, support=support)

    def gap_distribution(self, level: float = 0.95):
        """Fraction of epochs with ``S_k - c(k) = j`` for ``j = 0 .. r`` (last: ``>= r``), with CIs.

        Returns ``(j, fraction, low, high)``; the intervals are ratio (delta-method) intervals over trials (NaN
        from a single replication, as :meth:`estimate`).
        """
        den = self.rep_stats["T"]
        frac, low, high = [], [], []
        for j in range(self.gap_counts.shape[1]):
            num = self.gap_counts[:, j]
            if num.sum() == 0:
                frac.append(0.0)
                low.append(0.0)
                high.append(0.0)
                continue
            if self.reps < 2:
                est = one_run_estimate(f"gap={j}", num, level, "unit", denominators=den)
            else:
                est = ratio_estimate(num, den, name=f"gap={j}", level=level)
            lo, hi = est.ci
            frac.append(est.mean)
            low.append(lo if math.isnan(lo) else max(lo, 0.0))
            high.append(hi if math.isnan(hi) else min(hi, 1.0))
        return np.arange(self.gap_counts.shape[1]), np.array(frac), np.array(low), np.array(high)

    def summary(self) -> dict:
        """Means and 95% CIs of the main estimators (the ``spare-mc overhead`` JSON keys, ``<name>_ci95``; other
        levels: :meth:`estimate`)."""
        level = 0.95
        d = {"n_groups": self.n_groups, "r": self.r, "layout": self.layout, "reps": self.reps,
             "fresh_layout": self.fresh_layout}
        if layout_note(self.layout, self.r):
            d["layout_note"] = layout_note(self.layout, self.r)
        for name in ("masked", "T", "c_mean", "s_star_mean", "rho_mean", "hk_fixed_rate", "no_move_rate", "moves_mean",
                     "patch_mean", "patch_types_mean"):
            est = self.estimate(name, level)
            d[name] = est.mean
            d[f"{name}_se"] = est.se
            d[f"{name}_ci95"] = list(est.ci)
        j, frac, low, high = self.gap_distribution(level)
        d["gap_fraction"] = frac.tolist()
        d["s0_mean"] = float(self.rep_stats["s0"].mean())
        d["s_max"] = int(self.rep_stats["s_max"].max())
        return d

    def to_xarray(self):
        """Per-replication statistics as an ``xarray.Dataset`` (dimension ``rep``; ``gap_counts`` over ``gap``)."""

        data = {name: ("rep", v) for name, v in self.rep_stats.items()}
        data["gap_counts"] = (("rep", "gap"), self.gap_counts)
        import xarray as xr  # here, not at the top: it and pandas take 0.4 s to import
        ds = xr.Dataset(data, coords={"rep": np.arange(self.reps), "gap": np.arange(self.gap_counts.shape[1])})
        ds.attrs.update(layout=self.layout, n_groups=self.n_groups, r=self.r, fresh_layout=int(self.fresh_layout),
                        failures=json.dumps(self.failures), epoch_convention="epoch k = after k failures, k = 0..T-1")
        return ds


def _overhead_iv(layout, reps, n_groups, r, failures, topology, fresh_layout, log_reps, from_scratch):
    layout, reps, failures, topology, fresh_layout = check_mc_inputs(layout, reps, n_groups, r, failures, topology,
                                                                     fresh_layout)
    if not isinstance(layout, Layout):
        equal = bool(np.all(layout.sizes == layout.r))
        why = ("a ReplicaSets object is not one: for sets of r consecutive groups pass block(N, r), the same sets as "
               "a holder table" if equal else f"Rep with replica sets of unequal size (N={layout.n_groups}, "
               f"r={layout.r}: sizes {sorted(set(layout.sizes.tolist()))}) does not reorder, so it has no stacking "
               f"overhead")
        raise UsageValueError(f"ReCtlr runs on an N x r holder table (a Layout); {why}")
    if isinstance(failures, UniformOrder) and failures.with_replacement:
        raise UsageValueError("`failures` with_replacement=True is not a sequence of distinct group deaths; ReCtlr "
                              "needs UniformOrder(with_replacement=False)")
    log_reps = as_int(log_reps, "log_reps", min_value=0, max_value=reps)
    if log_reps * layout.n_groups > 50_000_000:
        raise UsageValueError(f"`log_reps` * N must be <= 5e7 rows, got {log_reps} * {layout.n_groups}")
    if not isinstance(from_scratch, bool):
        raise UsageTypeError(f"`from_scratch` must be a bool, got {from_scratch!r}")
    check_memory(reps * (8 * _rl.N_TRIAL_COLS + 8 * (layout.r + 1)) + log_reps * layout.n_groups * 8 * _rl.N_LOG_COLS,
                 f"per-replication ReCtlr statistics of {reps:,} replications",
                 "use fewer replications per call (consecutive calls with one Generator continue its stream)")
    return layout, reps, failures, topology, fresh_layout, log_reps


def overhead_mc(layout, reps: int, *, n_groups: int | None = None, r: int | None = None,
                failures=None, topology=None, fresh_layout: bool | None = None, log_reps: int = 0,
                from_scratch: bool = False, rng=None) -> OverheadResult:
    """Monte Carlo of ReCtlr until the first wipe-out: masked failures, stack numbers, Phase-0 rate, moves, patch.

    Parameters
    ----------
    layout : Layout or {"cyclic", "sidon", "random", "block"}
        As in :func:`spare_mc.wipeout_mc` (``"random"`` by name draws a fresh layout per replication).
    reps : int
        Replications.
    n_groups, r : int, optional
        Required with a layout name.
    failures : UniformOrder, SystemRenewal, PerGPU or DomainFailures, optional
        Default: uniform order without replacement (one group at a time). Clocked models are drawn with
        :func:`spare_mc.sample_events`; only the order of deaths and which groups die together matter here.
    topology : Topology, optional
        Required for PerGPU and DomainFailures.
    fresh_layout : bool, optional
    log_reps : int
        Keep one row per ReCtlr call for the first ``log_reps`` replications (:attr:`OverheadResult.log`).
    from_scratch : bool
        Solve every ReCtlr call from an empty assignment (slower; for checks and benchmarks). Each call answers
        as the incremental solver would from the same state, but may keep another of the equally good
        assignments: ``T``, ``c_mean``, ``s_star_mean`` and ``rho_mean`` are identical replication by
        replication; the Phase-0 rate, moves, orphans and patch can differ slightly (by 0.2-1.5% at N = 600,
        r = 8; the module docstring has the measurement).
    rng : None, int >= 0, list of them, SeedSequence or Generator
        The randomness (``None``: fresh entropy). A Generator is used as it is and advanced; numpy's other seed
        forms (arrays, bit generators, ``RandomState``) are refused with a :class:`UsageTypeError`.

    Returns
    -------
    OverheadResult

    Notes
    -----
    With uniform order the kernel draws failures exactly as ``wipeout_mc(..., method="sequential")`` does, so for
    the same ``rng`` the per-replication ``T`` are identical (common random numbers across the two); the default
    ``method="auto"`` of :func:`spare_mc.wipeout_mc` reads ``T`` from order statistics on many layouts (same law,
    other draws).

    Examples
    --------
    >>> res = overhead_mc("cyclic", 200, n_groups=100, r=5, rng=1)
    >>> bool(res.estimate("s_star_mean").mean >= res.estimate("c_mean").mean)
    True
    """
    layout, reps, failures, topology, fresh_layout, log_reps = _overhead_iv(
        layout, reps, n_groups, r, failures, topology, fresh_layout, log_reps, from_scratch)
    rng = generator(rng)
    n, rr = layout.n_groups, layout.r
    stats = np.zeros((reps, _rl.N_TRIAL_COLS), dtype=np.int64)
    gaps = np.zeros((reps, rr + 1), dtype=np.int64)
    log = np.zeros((log_reps * n, _rl.N_LOG_COLS), dtype=np.int64)
    if isinstance(failures, UniformOrder):
        n_log = _rk.overhead_uniform(*raw_source(rng), n, rr, layout.holders, fresh_layout, reps, from_scratch,
                                     _rl.Tally(stats, gaps, log, log_reps))
        if n_log < 0:  # pragma: no cover - an internal error
            raise RuntimeError("ReCtlr found no assignment although no type was wiped out")
    else:

        n_log = 0
        for t in range(reps):
            lay = random_holders(n, rr, rng=rng) if fresh_layout else layout
            ev = sample_events(failures, topology, rng=rng)
            n_log = _rk.overhead_events(n, rr, lay.holders, ev.ptr, ev.groups, t, from_scratch,
                                        tuple(_rl.Tally(stats[t], gaps[t], log, log_reps)), n_log)
            if n_log < 0:  # pragma: no cover - an internal error
                raise RuntimeError("ReCtlr found no assignment although no type was wiped out")
    rep_stats = {name: stats[:, j].copy() for name, j in _TRIAL_COLS.items()}
    log_d = {name: log[:n_log, j].copy() for name, j in _LOG_COLS.items()}
    return OverheadResult(rep_stats, gaps, log_d, layout.kind, n, rr, fresh_layout, failures.to_dict())


def overhead_on_streams(layout: Layout, streams, *, log_reps: int = 0, from_scratch: bool = False,
                        failures: dict) -> OverheadResult:
    """ReCtlr on given event streams, one replication per stream: the statistics of :func:`overhead_mc` for
    streams that were not sampled here (the epochs of a failure log, :func:`spare_mc.replay_log`).

    Parameters
    ----------
    layout : Layout
        The holder table every stream starts from (fully live).
    streams : sequence of (ndarray, ndarray)
        Per replication, its job events in CSR form ``(ptr, groups)``: ``groups[ptr[e]:ptr[e + 1]]`` the live
        groups event ``e`` kills, up to and including the event that wipes a type out.
    log_reps : int
        Keep one row per ReCtlr call for the first ``log_reps`` streams (at most ``len(streams)``, checked by the
        caller).
    from_scratch : bool
        As in :func:`overhead_mc`.
    failures : dict
        What made the streams (:attr:`OverheadResult.failures`).

    Returns
    -------
    OverheadResult
        With ``fresh_layout=False``.
    """
    n, rr = layout.n_groups, layout.r
    reps = len(streams)
    stats = np.zeros((reps, _rl.N_TRIAL_COLS), dtype=np.int64)
    gaps = np.zeros((reps, rr + 1), dtype=np.int64)
    rows = np.zeros((log_reps * n, _rl.N_LOG_COLS), dtype=np.int64)
    n_log = 0
    for i, (ev_ptr, ev_groups) in enumerate(streams):
        n_log = _rk.overhead_events(n, rr, layout.holders, ev_ptr, ev_groups, i, from_scratch,
                                    tuple(_rl.Tally(stats[i], gaps[i], rows, log_reps)), n_log)
        if n_log < 0:  # pragma: no cover - an internal error
            raise RuntimeError("ReCtlr found no assignment although no type was wiped out")
    return OverheadResult({name: stats[:, j].copy() for name, j in _TRIAL_COLS.items()}, gaps,
                          {name: rows[:n_log, j].copy() for name, j in _LOG_COLS.items()}, layout.kind, n, rr,
                          False, failures)


@dataclass(frozen=True)
class StackBoundSum:
    """Exact per-epoch lower bound on the stack number under uniform-order failures.

    Attributes
    ----------
    sum_c : float
        ``E[sum_{k<T} c(k)]``.
    mean_T : float
        ``E[T]`` (epochs per trial).
    c_mean : float
        Their ratio: the per-epoch lower bound on the mean stack number.
    """

    sum_c: float
    mean_T: float
    c_mean: float


def exact_stack_bound_sum(layout: str, n_groups: int, r: int) -> StackBoundSum:
    """Exact ``E[sum_{k<T} c(k)]``, ``E[T]`` and their ratio under uniform-order failures.

    ``E[sum_{k<T} c(k)] = sum_{k>=0} c(k) P(T > k)`` with the exact law of ``T`` from
    :func:`spare_mc.exact_wipeout` (``layout`` in ``"cyclic"``, ``"random"``, ``"block"``); the ratio is the
    per-epoch lower bound on the mean stack number that :meth:`OverheadResult.estimate` ``("c_mean")`` estimates.

    Examples
    --------
    >>> b = exact_stack_bound_sum("cyclic", 4, 2)
    >>> round(b.mean_T, 6), round(b.sum_c, 6)
    (2.333333, 3.666667)
    """
    dist = exact_wipeout(layout, n_groups, r)
    k = np.arange(dist.n_groups)
    c = stack_lower_bound(dist.n_groups, k)
    total = float(np.sum(c * dist.survival[:-1]))
    return StackBoundSum(total, dist.mean, total / dist.mean)


#: How :func:`overhead_check` counts epochs and rates (its ``epoch_convention``).
EPOCH_CONVENTION = ("epoch k = after k failures, k = 0..T-1, S_0 = 1 unless the top layer is not a perfect "
                    "assignment; ReCtlr rates are per masked failure")


@dataclass(frozen=True, eq=False)
class OverheadCheck:
    """What :func:`overhead_check` found: the Monte Carlo (``run``), the paper's lower bound on the overhead, and
    the exact mean stack number and ``E[T]`` with the Monte Carlo's ``T`` against it (None without the exact law).
    :meth:`to_dict` is what ``spare-mc overhead --json`` prints (without its stamp)."""

    run: OverheadResult
    seed: int
    paper_overhead_lower_bound: float
    exact_c_mean: float | None = None
    exact_mean_T: float | None = None
    mc_vs_exact_z: float | None = None
    mc_vs_exact_p: float | None = None
    mc_vs_exact_consistent: bool | None = None

    def to_dict(self) -> dict:
        """The seed, :meth:`OverheadResult.summary`, the epoch convention, the bound and the exact check."""
        out = {"seed": self.seed, **self.run.summary(), "epoch_convention": EPOCH_CONVENTION,
               "paper_overhead_lower_bound": self.paper_overhead_lower_bound}
        if self.exact_mean_T is not None:
            out.update(exact_c_mean=self.exact_c_mean, exact_mean_T=self.exact_mean_T,
                       mc_vs_exact_z=self.mc_vs_exact_z, mc_vs_exact_p=self.mc_vs_exact_p,
                       mc_vs_exact_consistent=self.mc_vs_exact_consistent)
        return out


def overhead_check(layout_kind: str, n_groups: int, r: int, reps: int, *, seed: int = 0,
                   exact: bool = True) -> OverheadCheck:
    """:func:`overhead_mc` of a layout by name, against the paper's bound and the exact laws.

    Parameters
    ----------
    layout_kind : str
        A layout kind (``"random"`` draws a fresh layout per replication).
    n_groups, r : int
        Groups and replicas per shard type.
    reps : int
        Replications.
    seed : int
        ``rng=numpy.random.SeedSequence(seed)`` of :func:`overhead_mc`.
    exact : bool
        When the layout has an exact law: compute the exact mean stack number
        (:func:`exact_stack_bound_sum`) and ``E[T]`` (:func:`spare_mc.theory.exact.exact_wipeout`), and compare
        the Monte Carlo's ``T`` with it (``alpha = 1e-3``). The check is on ``T``: ``c_mean`` is a function of
        ``T`` whose mean rare long runs dominate (its intervals under-cover at usual replication counts; see
        :func:`spare_mc.sweep.compare.compare_dataset`).

    Returns
    -------
    OverheadCheck
    """

    res = overhead_mc(layout_kind, reps, n_groups=n_groups, r=r, rng=np.random.SeedSequence(seed))
    bound = overhead_lower_bound(n_groups, r)
    if not (layout_kind in EXACT_LAYOUTS and exact):
        return OverheadCheck(res, seed, bound)
    c_mean = exact_stack_bound_sum(layout_kind, n_groups, r).c_mean
    mean_t = exact_wipeout(layout_kind, n_groups, r).mean
    c = compare(res.estimate("T"), mean_t, alpha=1e-3)
    return OverheadCheck(res, seed, bound, c_mean, mean_t, finite_or_none(c.z), c.p_value, c.consistent)
