"""Modular Sidon sets: algebraic constructions and searches (private; the public entry is
:func:`spare_mc.model.layouts.sidon_offsets`).

A set ``S`` of residues mod ``n`` is a (modular) **Sidon set** when its ``|S|(|S| - 1)`` ordered differences
``a - b`` (``a != b``) are distinct mod ``n``. Facts used below:

1. Translating (``S + c``) or dilating by a unit (``t S``, ``gcd(t, n) = 1``) keeps ``S`` Sidon mod ``n``; so does
   taking a subset.
2. Sidon mod ``v`` implies Sidon mod every multiple ``n = m v`` (a collision mod ``n`` is one mod ``v``).
3. An integer Sidon set (a Golomb ruler) of span ``L`` is Sidon mod every ``n >= 2L + 1`` (integer differences
   lie in ``[-L, L]``, where distinct integers stay distinct mod ``n``).
4. ``r(r - 1) <= n - 1`` is necessary (the nonzero residues hold all the differences), and more generally
   ``r(r - 1) <= n - 1 - |D|`` when the differences must also avoid a set ``D`` of residues.

Constructions (q a prime power: :func:`singer_set` / :func:`bose_chowla_set` for primes,
:func:`singer_set_prime_power` / :func:`bose_chowla_set_prime_power` for ``p^e``, ``e >= 2``; every set built is
checked to be Sidon before use):

- **Singer** (1938): ``q + 1`` residues mod ``v = q^2 + q + 1``. With ``g`` a generator of ``GF(q^3)^*`` (here the
  class of ``x`` in ``GF(q)[x] / f`` for a monic cubic ``f`` for which that works), the exponents
  ``{ i in [0, v) : g^i in W }`` for a 2-dimensional ``GF(q)``-subspace ``W`` (here the polynomials with no
  ``x^2`` term) form a planar difference set: every nonzero residue mod ``v`` is exactly one difference.
- **Bose--Chowla** (Bose 1942): ``q`` residues mod ``q^2 - 1``: with ``theta`` a generator of ``GF(q^2)^*``,
  ``{ i in [0, q^2 - 1) : theta^i - theta in GF(q) }``.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from .._kernels.sidon import (bose_chowla_walk, field_powers, sidon_greedy, sidon_local_search, sidon_rows_mask,
                              singer_walk)

#: Optimal Golomb rulers of orders 1..20 (published tables of the optimal-Golomb-ruler searches; every entry is
#: re-checked to be a Golomb ruler by the test suite). A ruler of length L is a modular Sidon set mod N if 2L < N.
OPTIMAL_GOLOMB_RULERS = (
    (0,), (0, 1), (0, 1, 3), (0, 1, 4, 6), (0, 1, 4, 9, 11), (0, 1, 4, 10, 12, 17), (0, 1, 4, 10, 18, 23, 25),
    (0, 1, 4, 9, 15, 22, 32, 34), (0, 1, 5, 12, 25, 27, 35, 41, 44), (0, 1, 6, 10, 23, 26, 34, 41, 53, 55),
    (0, 1, 4, 13, 28, 33, 47, 54, 64, 70, 72), (0, 2, 6, 24, 29, 40, 43, 55, 68, 75, 76, 85),
    (0, 2, 5, 25, 37, 43, 59, 70, 85, 89, 98, 99, 106), (0, 4, 6, 20, 35, 52, 59, 77, 78, 86, 89, 99, 122, 127),
    (0, 4, 20, 30, 57, 59, 62, 76, 100, 111, 123, 136, 144, 145, 151),
    (0, 1, 4, 11, 26, 32, 56, 68, 76, 115, 117, 134, 150, 163, 168, 177),
    (0, 5, 7, 17, 52, 56, 67, 80, 81, 100, 122, 138, 159, 165, 168, 191, 199),
    (0, 2, 10, 22, 53, 56, 82, 83, 89, 98, 130, 148, 153, 167, 188, 192, 205, 216),
    (0, 1, 6, 25, 32, 72, 100, 108, 120, 130, 153, 169, 187, 190, 204, 231, 233, 242, 246),
    (0, 1, 8, 11, 68, 77, 94, 116, 121, 156, 158, 179, 194, 208, 212, 228, 240, 253, 259, 283),
)


def is_modular_sidon(s, n: int) -> bool:
    """Whether the ordered differences of ``s`` are distinct and nonzero mod ``n`` (the obviously correct check)."""
    diffs = set()
    for a in s:
        for b in s:
            if a != b:
                d = (a - b) % n
                if d == 0 or d in diffs:
                    return False
                diffs.add(d)
    return True


def _is_prime(q: int) -> bool:
    return q >= 2 and all(q % p for p in range(2, math.isqrt(q) + 1))


@functools.lru_cache(maxsize=None)
def singer_set(q: int) -> tuple[int, ...] | None:
    """Singer's ``q + 1`` residues mod ``q^2 + q + 1`` (q prime), or ``None`` if ``q`` is not prime.

    Powers of ``x`` in ``GF(q)[x] / (x^3 + a x^2 + b x + c)`` are walked as coefficient triples ``(c0, c1, c2)``;
    ``x * (c0 + c1 x + c2 x^2) = -c c2 + (c0 - b c2) x + (c1 - a c2) x^2``. The first cubic (in lexicographic
    order of ``(a, b, c)``) whose exponent set has ``q + 1`` elements and is Sidon mod ``v`` is used.

    Examples
    --------
    >>> singer_set(2)  # the Fano plane: differences 1..6 mod 7 once each
    (0, 1, 3)
    """
    if not _is_prime(q):
        return None
    v = q * q + q + 1
    walk = _singer_walk_py
    if v > SMALL_FIELD:  # numba (17x faster per walk at q = 601); small fields need no compilation

        buf = np.empty(q + 2, dtype=np.int64)
        walk = lambda q, a, b, c: buf[:singer_walk(q, a, b, c, buf)].tolist()  # noqa: E731
    for a in range(q):
        for b in range(q):
            for c in range(1, q):
                s = walk(q, a, b, c)
                if len(s) == q + 1 and is_modular_sidon(s, v):
                    return tuple(s)
    return None  # pragma: no cover - a primitive cubic exists for every prime q


def _singer_walk_py(q, a, b, c):
    """The walk of :func:`singer_set` for one cubic: exponents with no ``x^2`` term, stopping at ``q + 2`` of
    them (the pure-Python twin of :func:`spare_mc._kernels.sidon.singer_walk`)."""
    c0, c1, c2 = 1, 0, 0
    s = []
    for i in range(q * q + q + 1):
        if c2 == 0:
            s.append(i)
            if len(s) > q + 1:
                break
        c0, c1, c2 = (-c * c2) % q, (c0 - b * c2) % q, (c1 - a * c2) % q
    return s


@functools.lru_cache(maxsize=None)
def bose_chowla_set(q: int) -> tuple[int, ...] | None:
    """Bose--Chowla's ``q`` residues mod ``q^2 - 1`` (q prime), or ``None`` if ``q`` is not prime.

    ``theta`` is the class of ``x`` in ``GF(q)[x] / (x^2 - a x - b)``; its powers ``c0 + c1 theta`` are walked with
    ``theta (c0 + c1 theta) = b c1 + (c0 + a c1) theta``; ``theta^i - theta in GF(q)`` means ``c1 = 1``. The first
    ``(a, b)`` whose exponent set has ``q`` elements and is Sidon mod ``q^2 - 1`` is used.

    Examples
    --------
    >>> s = bose_chowla_set(5); len(s), is_modular_sidon(s, 24)
    (5, True)
    """
    if not _is_prime(q):
        return None
    v = q * q - 1
    walk = _bose_chowla_walk_py
    if v > SMALL_FIELD:  # numba (q = 601 took 15 s in Python), as singer_set

        buf = np.empty(q + 1, dtype=np.int64)
        walk = lambda q, a, b: buf[:bose_chowla_walk(q, a, b, buf)].tolist()  # noqa: E731
    for a in range(q):
        for b in range(1, q):
            s = walk(q, a, b)
            if len(s) == q and is_modular_sidon(s, v):
                return tuple(s)
    return None  # pragma: no cover


def _bose_chowla_walk_py(q, a, b):
    """The walk of :func:`bose_chowla_set` for one quadratic: exponents with ``c1 = 1``, stopping at ``q + 1`` of
    them (the pure-Python twin of :func:`spare_mc._kernels.sidon.bose_chowla_walk`)."""
    c0, c1 = 1, 0
    s = []
    for i in range(q * q - 1):
        if c1 == 1:
            s.append(i)
            if len(s) > q:
                break
        c0, c1 = (b * c1) % q, (c0 + a * c1) % q
    return s


def _prime_power(q: int):
    """``(p, e)`` with ``q = p^e``, ``p`` prime, or ``None``. Trial division up to ``sqrt(q)``: a ``q`` with no
    divisor there is prime (dividing up to ``q`` itself made the scan of every ``q`` up to ``2 N / (r - 1)`` in
    :func:`_ruler_batches` quadratic: 110 s for ``N = 10^5``)."""
    if q < 2:
        return None
    for p in range(2, math.isqrt(q) + 1):
        if q % p == 0:
            e, x = 0, q
            while x % p == 0:
                x //= p
                e += 1
            return (p, e) if x == 1 else None  # p is the least divisor > 1 of q: prime
    return (q, 1)


#: Fields up to this many nonzero elements are walked in Python (:func:`field_powers_py`), larger ones by numba.
SMALL_FIELD = 20_000


def field_powers_py(p, deg, f_low, table):
    """Pure-Python twin of :func:`spare_mc._kernels.sidon.field_powers` (same contract)."""
    m = table.shape[0]
    cur = [1] + [0] * (deg - 1)
    f = [int(c) for c in f_low]
    rows = []
    for i in range(m):
        if i > 0 and cur[0] == 1 and not any(cur[1:]):
            table[:i] = rows
            return i
        rows.append(cur)
        top = cur[-1]
        cur = [(-top * f[0]) % p] + [(cur[j - 1] - top * f[j]) % p for j in range(1, deg)]
    table[:] = rows
    return m


def _primitive_powers(p: int, deg: int) -> np.ndarray:
    """Coefficient rows of ``g^0, g^1, ..., g^(p^deg - 2)`` for a generator ``g`` of ``GF(p^deg)^*``: ``g`` is the
    class of ``x`` modulo the first primitive polynomial in lexicographic order of its lower coefficients."""

    m = p ** deg - 1
    walk = field_powers if m > SMALL_FIELD else field_powers_py  # small fields: no compilation needed
    table = np.empty((m, deg), dtype=np.int64)
    for code in range(1, p ** deg):
        f_low = np.array([(code // p ** j) % p for j in range(deg)], dtype=np.int64)
        if f_low[0] and walk(p, deg, f_low, table) == m:
            return table
    raise RuntimeError(f"no primitive polynomial of degree {deg} over GF({p})")  # pragma: no cover


#: Largest field ``GF(p^k)`` the prime-power constructions build (its power table has this many rows).
MAX_FIELD = 600_000


@functools.lru_cache(maxsize=None)
def singer_set_prime_power(q: int) -> tuple[int, ...] | None:
    """Singer's ``q + 1`` residues mod ``q^2 + q + 1`` for a prime power ``q = p^e`` (``None`` if ``q`` is not one
    or ``GF(q^3)`` is larger than :data:`MAX_FIELD`): ``{ i in [0, v) : Tr(g^i) = 0 }`` with ``g`` a generator of
    ``GF(q^3)^*`` and ``Tr(y) = y + y^q + y^(q^2)`` the trace to ``GF(q)``, whose kernel is a 2-dimensional
    ``GF(q)``-subspace (a line of the projective plane). ``y^q`` is read off the power table:
    ``(g^i)^q = g^(i q mod (q^3 - 1))``.

    Examples
    --------
    >>> s = singer_set_prime_power(4); len(s), is_modular_sidon(s, 21)
    (5, True)
    """
    pe = _prime_power(q)
    if pe is None or q ** 3 - 1 > MAX_FIELD:
        return None
    p, e = pe
    table = _primitive_powers(p, 3 * e)
    m = table.shape[0]
    v = q * q + q + 1
    i = np.arange(v, dtype=np.int64)
    tr = (table[i] + table[(i * q) % m] + table[(i * q * q) % m]) % p
    s = tuple(np.nonzero(~tr.any(axis=1))[0].tolist())
    return s if len(s) == q + 1 and is_modular_sidon(s, v) else None


@functools.lru_cache(maxsize=None)
def bose_chowla_set_prime_power(q: int) -> tuple[int, ...] | None:
    """Bose--Chowla's ``q`` residues mod ``q^2 - 1`` for a prime power ``q = p^e`` (``None`` if ``q`` is not one or
    ``GF(q^2)`` is larger than :data:`MAX_FIELD`): ``{ i : g^i - g in GF(q) }``, where ``GF(q)`` is ``{0}`` and the
    powers ``g^(j (q + 1))``; membership is read off a discrete-log table.

    Examples
    --------
    >>> s = bose_chowla_set_prime_power(9); len(s), is_modular_sidon(s, 80)
    (9, True)
    """
    pe = _prime_power(q)
    if pe is None or q ** 2 - 1 > MAX_FIELD:
        return None
    p, e = pe
    table = _primitive_powers(p, 2 * e)
    m = table.shape[0]
    weights = p ** np.arange(2 * e, dtype=np.int64)
    log = np.full(p ** (2 * e), -1, dtype=np.int64)
    log[table @ weights] = np.arange(m)
    h = ((table - table[1]) % p) @ weights  # codes of g^i - g
    in_subfield = (h == 0) | ((log[h] >= 0) & (log[h] % (q + 1) == 0))
    s = tuple(np.nonzero(in_subfield)[0].tolist())
    return s if len(s) == q and is_modular_sidon(s, m) else None


def algebraic_sets(max_v: int, min_size: int, keep=None):
    """Every Singer and Bose--Chowla set with modulus ``<= max_v`` and at least ``min_size`` elements:
    ``(name, q, modulus, set)``, by increasing modulus, built as they are consumed (a generator).
    ``keep(q, v, k)`` (optional) filters by parameters before a
    set is built (``k`` its size)."""
    params = []
    q = 2
    while q * q - 1 <= max_v:
        if _prime_power(q) is not None:
            if q + 1 >= min_size and q * q + q + 1 <= max_v:
                params.append(("singer", q, q * q + q + 1, q + 1))
            if q >= min_size:
                params.append(("bose_chowla", q, q * q - 1, q))
        q += 1
    for name, q, v, k in sorted(params, key=lambda t: t[2]):
        if keep is not None and not keep(q, v, k):
            continue
        if _is_prime(q):
            s = singer_set(q) if name == "singer" else bose_chowla_set(q)
        else:
            s = singer_set_prime_power(q) if name == "singer" else bose_chowla_set_prime_power(q)
        if s is not None:
            yield name, q, v, s


def _units(v: int) -> np.ndarray:
    t = np.arange(1, v, dtype=np.int64)
    return t[np.gcd(t, v) == 1]


def _avoids(s: np.ndarray, n: int, avoid: np.ndarray | None) -> bool:
    if avoid is None:
        return True
    d = (s[:, None] - s[None, :]) % n
    return not avoid[d[~np.eye(s.size, dtype=bool)]].any()


def _dilate_to_avoid(s, n: int, avoid: np.ndarray | None):
    """A unit dilation ``t s mod n`` (smallest ``t``) whose differences avoid ``avoid``, normalised to start at 0;
    ``None`` if none does."""
    s = np.asarray(s, dtype=np.int64)
    if avoid is None:
        return s
    diffs = ((s[:, None] - s[None, :]) % n)[~np.eye(s.size, dtype=bool)]
    for t in _units(n) if n > 1 else []:
        if not avoid[(t * diffs) % n].any():
            return (t * s) % n
    return None


def _normalise(s, n: int) -> tuple[int, ...]:
    s = np.asarray(s, dtype=np.int64)
    return tuple(sorted(((s - s.min()) % n).tolist()))


#: Work limit of the ruler search: window spans computed (dilations x set size, per set) plus ruler marks built
#: (rulers x r). ``N = 20,000, r = 130`` needs 1.2e9 (2.1e8 + 1.0e9, 37 s) and stays within it, as does every
#: case of the coverage table in docs/placement.md; the densest larger cases reach it (``N = 5 * 10^4, r = 200``
#: would need over 1.2e10, about 6 minutes and, before the rulers were built a batch at a time, 12 GB).
RULER_WORK_BUDGET = 1.5e9


def _ruler_batches(n: int, r: int, batch: int = 4096, spent: dict | None = None, block_spans: int = 1 << 21):
    """Golomb rulers of ``r`` marks and span ``< n`` cut from the algebraic sets, in batches ``(name, q, rulers)``
    of at most ``batch`` rows.

    For every Singer / Bose--Chowla set of ``k >= r`` elements mod ``v``, every unit dilation ``t <= v / 2``
    (``v - t`` gives the mirror image) and every window of ``r`` cyclically consecutive elements of ``t S mod v``,
    the window re-based at 0 is a Golomb ruler: a Sidon set mod ``v`` read as integers in ``[0, v)`` has distinct
    integer differences. Within a set the rulers come shortest first (ties in (dilation, window) order). Sets whose
    typical window is far longer than ``n`` (``(r - 1) v / k > 2 n``, so ``q <= 2 n / (r - 1) + 1``) are skipped.

    Memory stays bounded: the spans are computed for blocks of dilations and only the windows shorter than ``n``
    are kept, as indices; the rulers are built a batch at a time (a set mod ``v < n`` has all its ``v k / 2``
    windows shorter than ``n``: 14.5 million rulers of 300 marks for ``N = 10^5, r = 300`` took 24 GB at once).
    Time is bounded by :data:`RULER_WORK_BUDGET`: the search stops before the set or the batch that would pass it,
    and records that set's modulus in ``spent["stopped_at"]`` (``spent["work"]``: the work done).
    """
    spent = {} if spent is None else spent
    spent["work"] = 0
    q_max = _ruler_q_max(n, r)
    max_v = min(4 * n * n, q_max * q_max + q_max + 1)
    for name, q, v, s in algebraic_sets(max_v=max_v, min_size=r, keep=lambda q, v, k: (r - 1) * v <= 2 * n * k):
        base = np.asarray(s, dtype=np.int64)
        k = base.size
        ts = _units(v)
        ts = ts[ts <= v // 2]
        if spent["work"] + ts.size * k > RULER_WORK_BUDGET:
            spent["stopped_at"] = v
            return
        spent["work"] += ts.size * k
        per = max(1, block_spans // k)  # dilations per block: about 2 million spans
        found = []
        for lo in range(0, ts.size, per):
            spans = _window_spans(ts[lo:lo + per], base, v, r)
            ti, wi = np.nonzero(spans < n)  # row-major: the order of one nonzero over all dilations
            found.append((ti + lo, wi, spans[ti, wi]))
        ti = np.concatenate([f[0] for f in found])
        if ti.size == 0:
            continue
        wi = np.concatenate([f[1] for f in found])
        order = np.argsort(np.concatenate([f[2] for f in found]), kind="stable")
        del found
        for lo in range(0, order.size, batch):
            sel = order[lo:lo + batch]
            if spent["work"] + sel.size * r > RULER_WORK_BUDGET:
                spent["stopped_at"] = v
                return
            spent["work"] += sel.size * r
            ext = _dilations(ts[ti[sel]], base, v)
            rows = ext[np.arange(sel.size)[:, None], wi[sel][:, None] + np.arange(r)[None, :]]
            yield name, q, rows - rows[:, :1]


def _ruler_q_max(n: int, r: int) -> int:
    """The largest order ``q`` whose Singer or Bose--Chowla set :func:`_ruler_batches` keeps: its rule
    ``(r - 1) v <= 2 n k`` fails beyond it, as ``v / k >= q - 1`` for both families."""
    return 2 * n // max(r - 1, 1) + 1


def _dilations(ts, base, v):
    """``t S mod v`` sorted, for every ``t`` of ``ts`` (rows), followed by the same plus ``v`` (cyclic windows)."""
    dil = np.sort((ts[:, None] * base[None, :]) % v, axis=1)
    return np.concatenate([dil, dil + v], axis=1)


def _window_spans(ts, base, v, r):
    """Span of the window of ``r`` cyclically consecutive elements starting at each element of each dilation."""
    ext = _dilations(ts, base, v)
    k = base.size
    return ext[:, r - 1:r - 1 + k] - ext[:, :k]


def _sidon_rows(rows: np.ndarray, n: int) -> np.ndarray:
    """Which rows of ``rows`` (shape (B, r)) are Sidon mod ``n`` (vectorised :func:`is_modular_sidon`): the slow
    twin of :func:`spare_mc._kernels.sidon.sidon_rows_mask`, which :func:`find_sidon` runs (at N = 10^4, r = 100
    this sort of every row's 9,900 differences took 126 of the 138 s of a search that finds nothing)."""
    r = rows.shape[1]
    off = ~np.eye(r, dtype=bool)
    d = np.sort(((rows[:, :, None] - rows[:, None, :]) % n)[:, off], axis=1)
    return ~((d[:, 1:] == d[:, :-1]).any(axis=1) | (d[:, 0] == 0))


#: Construction names reported by :func:`find_sidon`, in the order they are tried.
METHODS = ("golomb_table", "greedy", "singer", "bose_chowla", "singer_ruler", "bose_chowla_ruler", "local_search")


@functools.lru_cache(maxsize=512)
def find_sidon(n: int, r: int, avoid: tuple = (), attempts: int = 200):
    """A Sidon set of ``r`` residues mod ``n`` containing 0 whose differences avoid ``avoid``: ``(set, method)``
    or ``(None, reason)``. Arguments are assumed valid (the public wrappers validate them).

    Tried in order (:data:`METHODS`): the optimal Golomb ruler of order ``r`` (``r <= 20``) if ``2 L < n`` (fact
    3); the modular Mian--Chowla greedy from ``attempts`` deterministic orders (these two first, as in earlier
    versions, so that every set found before stays the same); Singer / Bose--Chowla sets whose modulus divides
    ``n`` (fact 2); the table's ruler and rulers cut from the algebraic sets (:func:`_ruler_batches`) that are
    Sidon mod ``n`` (checked; always so when ``2 span < n``); a min-conflicts tabu search
    (:mod:`spare_mc._kernels.sidon`) with a fixed seed. Each candidate is dilated by the smallest unit that makes
    its differences avoid ``avoid``
    (fact 1). The returned set is re-verified with :func:`is_modular_sidon`.
    """
    av = None
    if avoid:
        av = np.zeros(n, dtype=bool)
        av[np.asarray(avoid, dtype=np.int64) % n] = True
    s, method = _search(n, r, av, attempts)
    if s is None:
        return None, method
    out = _normalise(s, n)
    if len(out) != r or not is_modular_sidon(out, n) or not _avoids(np.asarray(out), n, av):
        raise RuntimeError(f"find_sidon built an invalid set {out} mod {n} ({method})")  # pragma: no cover
    return out, method


#: Bytes of the boolean tables of one chunk of rulers checked against the differences to avoid (step 4 of
#: :func:`find_sidon` with ``avoid``): about 32 MB.
AVOID_CHUNK_BYTES = 1 << 25

#: Largest ``n`` for which :func:`find_sidon` runs the tabu search.
LOCAL_SEARCH_MAX_N = 600


def _search(n, r, av, attempts):
    # 1-2: the constructions of earlier versions first, so that every set they found stays the same
    ruler = np.asarray(OPTIMAL_GOLOMB_RULERS[r - 1] if r <= len(OPTIMAL_GOLOMB_RULERS) else [n], dtype=np.int64)
    if 2 * ruler[-1] < n:
        s = _dilate_to_avoid(ruler, n, av)
        if s is not None:
            return s, "golomb_table"
    s = _greedy(n, r, av, attempts)
    if s is not None:
        return s, "greedy"
    # 3: algebraic sets whose modulus divides n
    for name, q, v, s in algebraic_sets(max_v=n, min_size=r):
        if n % v == 0:
            s = _dilate_to_avoid(np.asarray(s[:r]), n, av)
            if s is not None:
                return s, name
    # 4: rulers (the table's, then cut from algebraic sets) that happen to be Sidon mod n, each with the smallest
    # unit dilation t that moves its differences off av: t D(S) misses av  <=>  D(S) misses t^-1 av
    batches = [("golomb_table", 0, ruler[None, :])] if ruler[-1] < n else []
    off = ~np.eye(r, dtype=bool)
    if av is not None:
        units = _units(n) if n > 1 else np.ones(1, dtype=np.int64)
        inv = np.array([pow(int(t), -1, n) for t in units.tolist()], dtype=np.int64)
        bad = np.nonzero(av)[0]
        moved = (inv[:, None] * bad[None, :]) % n  # (units, |av|): t^-1 av for every unit t

    seen, stamp = np.zeros(n, dtype=np.int64), 0
    spent = {}
    # the ruler batches have at most 4096 rows (the table's ruler is one), so each is checked as it comes
    for name, q, rows in itertools.chain(batches, _ruler_batches(n, r, spent=spent)):
        label = name if name == "golomb_table" else name + "_ruler"
        batch = np.ascontiguousarray(rows, dtype=np.int64)
        ok = np.empty(batch.shape[0], dtype=np.bool_)
        stamp = sidon_rows_mask(batch, n, seen, stamp, ok)  # as _sidon_rows(batch, n), stopping early per row
        batch = batch[ok]
        if batch.shape[0] == 0:
            continue
        if av is None:
            return batch[0], label
        # rows in chunks: a chunk's tables are (rows x n) and (rows x units x |av|) booleans, which for a whole
        # batch of 4096 rows at n = 10^5 would be 0.4 GB and several GB
        step = max(1, AVOID_CHUNK_BYTES // max(n, moved.size))
        for a in range(0, batch.shape[0], step):
            chunk = batch[a:a + step]
            present = np.zeros((chunk.shape[0], n), dtype=bool)
            d = ((chunk[:, :, None] - chunk[:, None, :]) % n)[:, off]
            present[np.arange(chunk.shape[0])[:, None], d] = True
            ok = ~present[:, moved].any(axis=2)  # (rows, units)
            hit = np.nonzero(ok.any(axis=1))[0]
            if hit.size:
                i = hit[0]
                return (units[np.argmax(ok[i])] * chunk[i]) % n, label
    # 5: local search (only for small n: it costs O(n r) per move and has not beaten 4 above on larger n)
    s = _local_search(n, r, av, attempts) if n <= LOCAL_SEARCH_MAX_N else None
    if s is not None:
        return s, "local_search"
    tried = ["the optimal Golomb ruler"] if r <= len(OPTIMAL_GOLOMB_RULERS) else []
    tried += [f"{attempts} greedy orders", "Singer and Bose-Chowla sets whose modulus divides N"]
    if "stopped_at" in spent:
        tried.append(f"rulers cut from Singer and Bose-Chowla sets up to modulus {spent['stopped_at']:,}, where "
                     f"the search stopped at its work limit (spare_mc.model._sidon.RULER_WORK_BUDGET = "
                     f"{RULER_WORK_BUDGET:.1e} window spans and ruler marks)")
    else:
        tried.append(f"rulers cut from every Singer and Bose-Chowla set of order q <= {_ruler_q_max(n, r)}")
    tried.append("a tabu search" if n <= LOCAL_SEARCH_MAX_N else f"no tabu search (only for N <= {LOCAL_SEARCH_MAX_N})")
    return None, "not found: tried " + ", ".join(tried)


def _greedy(n, r, av, attempts):
    """Modular Mian--Chowla: add each candidate that keeps the differences distinct (and off ``av``); the first
    order is 1, 2, ..., the others deterministic random permutations."""

    used0 = np.zeros(n, dtype=np.bool_) if av is None else av.copy()
    used0[0] = True
    rng = np.random.default_rng(0x5BA2E)  # fixed: the construction must be deterministic
    cand = np.arange(1, n, dtype=np.int64)
    out = np.empty(r, dtype=np.int64)
    for attempt in range(attempts):
        order = cand if attempt == 0 else rng.permutation(cand)
        if sidon_greedy(n, r, used0, order, out) == r:
            return out.copy()
    return None


def _local_search(n, r, av, attempts):

    base = np.zeros(n, dtype=np.int64) if av is None else av.astype(np.int64)
    base[0] = 0
    out = np.empty(r, dtype=np.int64)
    moves = max(200, int(2e7 // (n * r)))  # about the same work (~1 s) whatever the size
    for attempt in range(max(1, min(attempts, 4))):
        rand = np.random.default_rng([0x5BA2E, n, r, attempt]).integers(0, 2**62, size=1 << 14)
        if sidon_local_search(n, r, base, rand, moves, max(2, r // 4), out) >= 0:
            return out.copy()
    return None
