"""Layouts: which data-parallel groups hold which shard types.

A layout over ``N`` groups and ``N`` shard types with redundancy ``r`` is an ``N x r`` **holder table**:
``holders[j, l]`` is the group that holds shard type ``j`` in stack layer ``l``. Every type has ``r`` distinct
holders. A type is *wiped out* once all its holders are dead (docs/model.md, section 3).

Constructors
------------
- :func:`cyclic` -- SPARe cyclic stacking with unit stride: group ``i`` holds ``D_i ... D_{i+r-1}``.
- :func:`cyclic_offsets` -- cyclic stacking with an arbitrary offset vector ``0 = s_0 < ... < s_{r-1} < N``:
  group ``i``, layer ``l`` holds type ``(i + s_l) mod N``.
- :func:`sidon` -- cyclic stacking whose offsets form a modular Sidon set (all pairwise differences distinct mod
  ``N``), which is exactly the paper's "independence condition": two types share at most one holder group.
- :func:`random_holders` -- each type's ``r`` holders drawn independently and uniformly (the model behind the
  paper's closed form). Groups then hold a variable number of types.
- :func:`block` -- block replication (the Rep baseline): ``N/r`` replica sets of ``r`` consecutive groups, every
  member of a set holds the set's ``r`` types.
- :class:`Layout` itself accepts any valid holder table (a custom layout).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._kernels.draws import random_holders_into, raw_source
from .._lib.resources import check_memory
from .._lib.seeding import generator
from .._lib.validation import UsageTypeError, UsageValueError, as_choice, as_indices, as_int, check_r
from ._sidon import OPTIMAL_GOLOMB_RULERS, find_sidon, is_modular_sidon  # noqa: F401 (the table is re-exported)

__all__ = ["ReplicaSets", "set_sizes", "Layout", "cyclic", "cyclic_offsets",
           "sidon", "sidon_offsets", "random_holders", "block", "check_n_r", "layout_note"]


@dataclass(frozen=True, eq=False)
class Layout:
    """An ``N x r`` holder table.

    Parameters
    ----------
    holders : array_like of int, shape (N, r)
        ``holders[j, l]`` is the group holding shard type ``j`` in stack layer ``l``. Entries must lie in
        ``[0, N)`` and be distinct within a row.
    kind : str
        A label (``"cyclic"``, ``"sidon"``, ``"offsets"``, ``"random"``, ``"block"``, ``"custom"``, or
        ``"domain_aware"`` / ``"domain_aware_block"`` from :func:`spare_mc.model.placement.domain_aware`).
    offsets : tuple of int or None
        The offset vector of a cyclic layout, else ``None``.

    Notes
    -----
    The inverse map (group -> the types it holds, in layer order) is :meth:`stacks`, stored in CSR form
    (``group_ptr``, ``group_types``) for the numba kernels.
    """

    holders: np.ndarray
    kind: str = "custom"
    offsets: tuple | None = None
    group_ptr: np.ndarray = field(init=False, repr=False)
    group_types: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        try:
            h = np.asarray(self.holders)
        except ValueError:  # numpy's "inhomogeneous shape" for ragged rows
            raise UsageValueError("`holders` must be a rectangular (N, r) table: every row lists r groups") from None
        if h.ndim != 2:
            raise UsageValueError(f"`holders` must be a 2-d array of shape (N, r), got ndim={h.ndim}")
        if h.size and not np.issubdtype(h.dtype, np.integer):
            raise UsageTypeError(f"`holders` must hold integers, got dtype {h.dtype}")
        n, r = h.shape
        if n < 1 or r < 1:
            raise UsageValueError(f"`holders` must have at least one row and one column, got shape {h.shape}")
        check_r(r, n)
        lo, hi = int(h.min()), int(h.max())  # before the conversion: a uint64 beyond 2^63 would wrap
        if lo < 0 or hi >= n:
            raise UsageValueError(f"`holders` entries must be group indices in [0, N) with N={n}, "
                                  f"got values in [{lo}, {hi}]")
        h = h.astype(np.int64)
        srt = np.sort(h, axis=1)
        dup = np.nonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1))[0]
        if dup.size:
            raise UsageValueError(f"`holders` rows must list distinct groups, but type {dup[0]} has a repeated "
                                  f"holder: {h[dup[0]].tolist()}")
        object.__setattr__(self, "offsets", _kind_iv(self.kind, self.offsets, h))
        h.setflags(write=False)
        object.__setattr__(self, "holders", h)
        ptr, types = _invert(h)
        # read-only, as the holders and ReplicaSets' set_of_group (its group_types): the kernels that take either
        # then compile once, not once per writability
        types.setflags(write=False)
        object.__setattr__(self, "group_ptr", ptr)
        object.__setattr__(self, "group_types", types)

    @property
    def n_groups(self) -> int:
        """Number of groups (= number of shard types) ``N``."""
        return self.holders.shape[0]

    @property
    def r(self) -> int:
        """Redundancy: holders per shard type."""
        return self.holders.shape[1]

    def stacks(self) -> list[list[int]]:
        """The types each group holds, in stack-layer order (layer 0 first)."""
        return [self.group_types[self.group_ptr[g]:self.group_ptr[g + 1]].tolist() for g in range(self.n_groups)]

    def is_wiped(self, dead) -> bool:
        """Whether some type has lost all its holders when the groups in ``dead`` are dead.

        The obviously correct (slow) definition, used as the reference for every fast kernel. ``dead`` is a
        collection of group indices in ``[0, N)`` (repeats allowed); anything else is refused, not wrapped (-1) or
        truncated (1.7).
        """
        g = as_indices(dead, "dead", self.n_groups)
        dead_mask = np.zeros(self.n_groups, dtype=bool)
        dead_mask[g] = True
        return bool(dead_mask[self.holders].all(axis=1).any())

    def max_shared_holders(self) -> int:
        """Largest number of holder groups two distinct types share (1 = the paper's independence condition)."""
        sets = [set(row) for row in self.holders.tolist()]
        best = 0
        for g in range(self.n_groups):
            ts = self.group_types[self.group_ptr[g]:self.group_ptr[g + 1]]
            for a in range(len(ts)):
                for b in range(a + 1, len(ts)):
                    best = max(best, len(sets[ts[a]] & sets[ts[b]]))
        return best

    def to_dict(self) -> dict:
        """Parameters that reproduce this layout (the holder table itself for random, custom and domain-aware Rep
        layouts)."""
        d = {"kind": self.kind, "n_groups": self.n_groups, "r": self.r}
        if self.offsets is not None:
            d["offsets"] = list(self.offsets)
        if self.kind in ("random", "custom", "domain_aware_block"):
            d["holders"] = self.holders.tolist()
        return d


#: The labels a :class:`Layout` may carry; those of :data:`_OFFSET_KINDS` are cyclic tables of their offsets, and
#: ``to_dict`` describes them (and ``block``) by their parameters alone, so the table must be the one they build.
_KINDS = ("custom", "cyclic", "offsets", "sidon", "random", "block", "domain_aware", "domain_aware_sidon",
          "domain_aware_block")
_OFFSET_KINDS = ("cyclic", "offsets", "sidon", "domain_aware", "domain_aware_sidon")


def _kind_iv(kind, offsets, h: np.ndarray):
    """The checked ``offsets`` of a layout labelled ``kind`` with holder table ``h`` (a wrong label would make
    :meth:`Layout.to_dict` describe another layout)."""
    if not isinstance(kind, str) or kind not in _KINDS:
        raise UsageValueError(f"`kind` must be one of {list(_KINDS)}, got {kind!r}")
    n, r = h.shape
    if offsets is None and kind == "cyclic":
        want = tuple(range(r))
    elif offsets is None:
        if kind in _OFFSET_KINDS:
            raise UsageValueError(f"a {kind!r} layout needs its `offsets` (cyclic_offsets builds one)")
        if kind == "block" and (n % r or not np.array_equal(h, _block_table(n, r))):
            raise UsageValueError("`holders` is not block replication's table (kind='block'); label it 'custom'")
        return None
    else:
        if kind not in _OFFSET_KINDS:
            raise UsageValueError(f"`offsets` applies to the cyclic kinds {list(_OFFSET_KINDS)}, not {kind!r}")
        if isinstance(offsets, (str, bytes)) or not hasattr(offsets, "__len__") or len(offsets) != r:
            raise UsageValueError(f"`offsets` must be a sequence of r={r} integers, got {offsets!r}")
        want = tuple(as_int(x, "offsets") for x in offsets)
        if want[0] != 0 or any(b <= a for a, b in zip(want, want[1:])) or want[-1] >= n:  # as cyclic_offsets: else
            raise UsageValueError(f"`offsets` must satisfy 0 = s_0 < s_1 < ... < s_(r-1) < N={n}, got "  # no round
                                  f"{list(want)}")  # trip through to_dict (offsets (0, 5) at N = 4 was accepted)
    j = np.arange(n, dtype=np.int64)
    if any(not np.array_equal(h[:, l], (j - s) % n) for l, s in enumerate(want)):  # a column at a time: O(N) memory
        raise UsageValueError(f"`holders` is not the cyclic table of offsets {list(want)} (holders[j, l] = (j - s_l) "
                              f"mod N) that kind={kind!r} says; label it 'custom'")
    return None if offsets is None else want


def _invert(holders: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR inverse of a holder table: group -> types, ordered by (layer, type)."""
    n, r = holders.shape
    groups = holders.T.ravel()  # layer-major order: layer 0 of every type first
    types = np.tile(np.arange(n, dtype=np.int64), r)
    order = np.argsort(groups, kind="stable")
    counts = np.bincount(groups, minlength=n)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, types[order]


def check_n_r(n_groups, r) -> tuple[int, int]:
    """``(N, r)`` checked for a holder table: integers with ``1 <= r <= N < 2^31``, the table within the memory
    budget (:mod:`spare_mc.options`)."""
    n_groups = as_int(n_groups, "n_groups", min_value=1, max_value=2**31 - 1)
    r = as_int(r, "r")
    check_r(r, n_groups)
    check_memory(n_groups * r * 8 * 4, f"a holder table of N={n_groups:,} groups x r={r}")
    return n_groups, r


def cyclic_offsets(n_groups: int, offsets) -> Layout:
    """Cyclic stacking with offsets ``s``: group ``i``, layer ``l`` holds type ``(i + s_l) mod N``.

    Parameters
    ----------
    n_groups : int
        ``N``.
    offsets : sequence of int
        ``0 = s_0 < s_1 < ... < s_{r-1} < N``.

    Returns
    -------
    Layout
        ``holders[j, l] = (j - s_l) mod N``.
    """
    n_groups = as_int(n_groups, "n_groups", min_value=1)
    if isinstance(offsets, (str, bytes)) or not hasattr(offsets, "__iter__"):
        raise UsageTypeError(f"`offsets` must be a sequence of integers 0 = s_0 < s_1 < ..., got {offsets!r}")
    s = [as_int(x, "offsets") for x in offsets]
    if not s:
        raise UsageValueError("`offsets` must not be empty")
    check_r(len(s), n_groups)
    if s[0] != 0:
        raise UsageValueError(f"`offsets` must start with s_0 = 0, got {s[0]}")
    if any(b <= a for a, b in zip(s, s[1:])) or s[-1] >= n_groups:
        raise UsageValueError(f"`offsets` must satisfy 0 = s_0 < s_1 < ... < s_(r-1) < N={n_groups}, got {s}")
    j = np.arange(n_groups, dtype=np.int64)[:, None]
    holders = (j - np.asarray(s, dtype=np.int64)[None, :]) % n_groups
    kind = "cyclic" if s == list(range(len(s))) else "offsets"
    return Layout(holders, kind=kind, offsets=tuple(s))


def cyclic(n_groups: int, r: int) -> Layout:
    """SPARe cyclic stacking with unit stride: group ``i`` holds ``D_i, D_{i+1}, ..., D_{i+r-1}``.

    A wipe-out is exactly ``r`` cyclically consecutive dead groups. For ``r >= 3`` two types can share up to
    ``r - 1`` holders, so the paper's independence condition does not hold (see :func:`sidon`).

    Examples
    --------
    >>> cyclic(5, 2).stacks()
    [[0, 1], [1, 2], [2, 3], [3, 4], [4, 0]]
    """
    n_groups, r = check_n_r(n_groups, r)
    return cyclic_offsets(n_groups, range(r))


def _is_modular_sidon(s, n: int) -> bool:
    """Whether the pairwise differences of ``s`` are distinct and nonzero mod ``n`` (the slow reference)."""
    return is_modular_sidon(s, n)


def sidon_offsets(n_groups: int, r: int, *, attempts: int = 200) -> tuple[int, ...]:
    """Offsets ``0 = s_0 < ... < s_{r-1} < N`` whose pairwise differences are all distinct modulo ``N``.

    Parameters
    ----------
    n_groups : int
        ``N``.
    r : int
        Number of offsets, ``1 <= r`` and ``r (r - 1) <= N - 1``.
    attempts : int
        Restarts of the randomised searches (the algebraic constructions do not use it).

    Returns
    -------
    tuple of int
        Sorted offsets starting at 0, verified Sidon mod ``N``.

    Notes
    -----
    Such a set exists only if ``r (r - 1) <= N - 1``: its ``r(r-1)`` ordered differences are nonzero and distinct
    mod ``N``. The constructions, tried in this order (docs/placement.md has the proofs and a coverage table):

    1. the optimal Golomb ruler of order ``r <= 20`` (:data:`OPTIMAL_GOLOMB_RULERS`), Sidon mod ``N`` whenever
       ``N >= 2L + 1`` for its length ``L``;
    2. the modular Mian--Chowla greedy (each new offset the smallest that keeps the differences distinct) from
       ``attempts`` deterministic orders (1 and 2 are the constructions of earlier versions and come first so that
       the offsets they found do not change);
    3. a Singer set (``q + 1`` elements mod ``q^2 + q + 1``) or a Bose--Chowla set (``q`` elements mod ``q^2 - 1``),
       ``q`` a prime power, whose modulus divides ``N`` (a set Sidon mod ``v`` is Sidon mod every multiple of ``v``);
    4. Golomb rulers cut from those sets (``r`` cyclically consecutive elements of a unit dilation ``t S mod v``,
       read as integers), kept if Sidon mod ``N`` (always so when ``N >= 2 span + 1``);
    5. a min-conflicts tabu search with a fixed seed.

    Everything is deterministic and the result is re-verified; results are cached per ``(N, r, attempts)``.

    Examples
    --------
    >>> s = sidon_offsets(1000, 25)
    >>> len(s), _is_modular_sidon(s, 1000)
    (25, True)
    """
    n_groups, r = check_n_r(n_groups, r)
    attempts = as_int(attempts, "attempts", min_value=1)
    if r * (r - 1) > n_groups - 1:
        raise UsageValueError(f"Sidon offsets are impossible: r(r-1) must be <= N-1 for r={r} shard copies "
                              f"to have distinct pairwise differences mod N={n_groups}, got r(r-1)={r * (r - 1)}")
    s, how = find_sidon(n_groups, r, (), attempts)
    if s is None:
        raise UsageValueError(f"no modular Sidon offsets found for N={n_groups}, r={r} ({how}); pass explicit "
                              f"offsets to cyclic_offsets()")
    return s


def layout_note(kind: str, r: int) -> str | None:
    """A note for the output of a layout that is another one under its name, or None.

    ``sidon`` at ``r <= 2`` is the cyclic layout: any two offsets are a Sidon set (one difference and its
    negative), the search returns ``(0, 1)`` (``(0,)`` at ``r = 1``), and two types of a cyclic layout with ``r = 2``
    already share at most one holder. Its results are the cyclic layout's, which the output says rather than
    refuse it (a sweep over ``r`` with ``layout = "sidon"`` includes ``r = 2``).

    Examples
    --------
    >>> layout_note("sidon", 3) is None
    True
    >>> layout_note("sidon", 2)[:36]
    'sidon at r = 2 is the cyclic layout:'
    """
    if kind == "sidon" and r <= 2:
        return (f"sidon at r = {r} is the cyclic layout: any {r} offsets form a Sidon set, the offsets are "
                f"{tuple(range(r))} and two types already share at most one holder, so its results are cyclic's "
                f"(Sidon offsets differ from unit stride from r = 3)")
    return None


def sidon(n_groups: int, r: int) -> Layout:
    """Cyclic stacking with modular Sidon offsets (see :func:`sidon_offsets`).

    Any two distinct types then share at most one holder group (the paper's independence condition). At ``r <= 2``
    this is the cyclic layout itself (:func:`layout_note`: the outputs say so).
    """
    layout = cyclic_offsets(n_groups, sidon_offsets(n_groups, r))
    object.__setattr__(layout, "kind", "sidon")
    return layout


def random_holders(n_groups: int, r: int, *, rng=None) -> Layout:
    """Each type's ``r`` holders are an independent uniformly random ``r``-subset of the groups.

    The stack order of a group lists its types by (layer, type). Groups hold ``r`` types on average, not exactly.
    """
    n_groups, r = check_n_r(n_groups, r)
    holders = np.empty((n_groups, r), dtype=np.int64)
    rng = generator(rng)
    random_holders_into(*raw_source(rng), n_groups, r, holders)  # the same draw as wipeout_mc's
    return Layout(holders, kind="random")


def block(n_groups: int, r: int) -> Layout:
    """Block replication (Rep): replica set ``b`` = groups ``b r ... b r + r - 1``, each holding types
    ``b r ... b r + r - 1`` (and computing all of them every step, cost ``r x``).
    """
    n_groups, r = check_n_r(n_groups, r)
    if n_groups % r:
        raise UsageValueError(f"block replication as an N x r holder table needs N divisible by r, got N={n_groups}, "
                              f"r={r} (N % r = {n_groups % r}); ReplicaSets(N, r) (or layout 'block' by name) is "
                              f"Rep with sets of r and r + 1 groups")
    return Layout(_block_table(n_groups, r), kind="block")


def _block_table(n: int, r: int) -> np.ndarray:
    """Block replication's holder table (``r`` divides ``n``): type ``j`` is held by the groups of its set."""
    j = np.arange(n, dtype=np.int64)[:, None]
    return (j // r) * r + (j + np.arange(r, dtype=np.int64)[None, :]) % r


@dataclass(frozen=True, eq=False)
class ReplicaSets:
    """Replication (Rep) when ``r`` need not divide ``N``: ``b = floor(N / r)`` replica sets of consecutive groups,
    as equal as possible -- sizes ``floor(N / b)`` and, for the first ``N mod b`` sets, one more -- so that every
    shard keeps at least ``r`` copies. (When ``N mod r <= b`` that is ``N mod r`` sets of ``r + 1`` and the rest of
    ``r``; at N = 11, r = 4 it is two sets of 6 and 5.)

    Every member of a set computes the set's one shard each step, so a step processes ``floor(N / r)`` distinct
    shards; the job is wiped out when every member of some set is dead. A set plays the role of a shard type held
    by its members (``group_types[g]`` is the set of group ``g``), which is all the wipe-out engine and the exact
    law need. When ``r`` divides ``N`` the law of ``T`` equals that of :func:`block`'s holder table.

    By default set ``j`` is a run of consecutive groups. ``assignment`` (the set of every group) places the
    members elsewhere, e.g. in distinct failure domains (:func:`spare_mc.model.placement.domain_aware_replica_sets`);
    set ``j`` must still have ``sizes[j]`` members, so the law of ``T`` under uniformly random failures is the same.

    Attributes
    ----------
    n_groups, r : int
    kind : str
        ``"block"``; ``"domain_aware_block"`` for the sets of :func:`spare_mc.model.placement.domain_aware`.
    assignment : ndarray of int64 or None
        The set of each group as given (``None``: consecutive runs).
    sizes : ndarray of int64
        Members of each set (``floor(N / b)``, one more for the first ``N mod b`` sets).
    set_of_group : ndarray of int64
        The set of each group.

    Examples
    --------
    >>> s = ReplicaSets(200, 3)
    >>> s.n_sets, s.sizes[:3].tolist(), round(s.compute_factor, 4)
    (66, [4, 4, 3], 3.0303)
    """

    n_groups: int
    r: int
    assignment: np.ndarray | None = field(default=None, repr=False)
    kind: str = field(default="block", init=False)
    sizes: np.ndarray = field(init=False, repr=False)
    set_of_group: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        n, r = check_n_r(self.n_groups, self.r)
        object.__setattr__(self, "n_groups", n)
        object.__setattr__(self, "r", r)
        sizes = np.array(set_sizes(n, r), dtype=np.int64)
        sizes.setflags(write=False)
        if self.assignment is None:
            sog = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
        else:
            sog = _assignment_iv(self.assignment, n, sizes)
            object.__setattr__(self, "assignment", sog)
        sog.setflags(write=False)
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "set_of_group", sog)

    @property
    def n_sets(self) -> int:
        """``floor(N / r)``, the shards one step processes."""
        return int(self.sizes.size)

    @property
    def group_ptr(self) -> np.ndarray:
        """CSR map group -> sets for the kernels: every group is in one set."""
        return np.arange(self.n_groups + 1, dtype=np.int64)

    @property
    def group_types(self) -> np.ndarray:
        return self.set_of_group

    @property
    def compute_factor(self) -> float:
        """Compute per step relative to a redundancy-free step: ``N / floor(N / r)`` (``r`` when ``r`` divides
        ``N``; 3.03 at N = 200, r = 3)."""
        return self.n_groups / self.n_sets

    def is_wiped(self, dead) -> bool:
        """Whether some set is entirely dead (the obviously correct definition). ``dead`` as in
        :meth:`Layout.is_wiped`: group indices in ``[0, N)``, repeats allowed."""
        dead_mask = np.zeros(self.n_groups, dtype=bool)
        dead_mask[as_indices(dead, "dead", self.n_groups)] = True
        dead_per_set = np.bincount(self.set_of_group[dead_mask], minlength=self.n_sets)
        return bool((dead_per_set == self.sizes).any())

    def to_dict(self) -> dict:
        d = {"kind": "block", "n_groups": self.n_groups, "r": self.r, "sizes": self.sizes.tolist()}
        if self.assignment is not None:
            d["set_of_group"] = self.set_of_group.tolist()
        return d


def _assignment_iv(assignment, n: int, sizes: np.ndarray) -> np.ndarray:
    a = np.asarray(assignment)
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise UsageTypeError(f"`assignment` must hold integers (the set of each group), got dtype {a.dtype}")
    if a.shape != (n,):
        raise UsageValueError(f"`assignment` must have one entry per group, shape ({n},), got shape {a.shape}")
    a = a.astype(np.int64)
    b = sizes.size
    if a.min() < 0 or a.max() >= b:
        raise UsageValueError(f"`assignment` entries must be set indices in [0, {b}) (floor(N/r) sets), got values "
                              f"in [{a.min()}, {a.max()}]")
    counts = np.bincount(a, minlength=b)
    bad = np.nonzero(counts != sizes)[0]
    if bad.size:
        raise UsageValueError(f"`assignment` must give set j exactly sizes[j] members (sizes {sizes.tolist()}), but "
                              f"set {bad[0]} has {counts[bad[0]]}")
    return a


def set_sizes(n_groups: int, r: int) -> list:
    """The sizes of Rep's ``floor(N / r)`` replica sets, as equal as possible (see :class:`ReplicaSets`)."""
    b = n_groups // r
    base, extra = divmod(n_groups, b)
    return [base + 1] * extra + [base] * (b - extra)

