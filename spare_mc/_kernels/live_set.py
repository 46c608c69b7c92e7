"""The live groups as a set with rank select (private): the system failure source's victim, the live group of a
given rank in increasing index, in O(log(N / 64)).

The set is one int64 row ``T`` (the failure source's ``GB[GB_LIVE]``, :func:`live_set_width` entries): bit ``g &
63`` of word ``g >> 6`` is group ``g``; the words sit at ``W + 1 .. 2 W`` (``W = ceil(N / 64)``) after a Fenwick
tree of their bit counts at ``1 .. W``. :func:`live_fill` fills it, :func:`live_take` removes the group of a rank,
:func:`live_add` brings one back.
"""

from __future__ import annotations

import numpy as np

from .cache import drop_if_dependencies_changed
from .timeline_helpers import kernel, step

# the cached kernels of this module are compiled with the helpers' flags
drop_if_dependencies_changed(__file__, ("rectlr_layout.py", "slots.py", "timeline_helpers.py",
                                        "timeline_layout.py"))

#: the words are handled as ``uint64`` (``_U``; numba makes a float of a uint64 and an int64 together, so every
#: operand is cast) and stored as the int64 of the same bits; the hot take indexes with ``_U`` too, which skips
#: numba's negative-index wraparound (as in :mod:`spare_mc._kernels.rectlr`)
_U = np.uint64
_M1, _M2, _M4 = _U(0x5555555555555555), _U(0x3333333333333333), _U(0x0F0F0F0F0F0F0F0F)
_L8, _H8 = _U(0x0101010101010101), _U(0x8080808080808080)
#: ``_SEL8[8 b + j]``: the position of the ``j``-th set bit of the byte ``b``
_SEL8 = np.zeros(256 * 8, np.uint8)
for _b in range(256):
    _j = 0
    for _i in range(8):
        if _b >> _i & 1:
            _SEL8[8 * _b + _j] = _i
            _j += 1
del _b, _i, _j


@step
def live_set_width(n):
    """Entries of the live-set row for ``n`` groups: ``2 ceil(n / 64) + 1``."""
    return 2 * ((n + 63) >> 6) + 1


@step
def _select64(x, k):
    """Position of the ``k``-th (0-based) set bit of the word ``x`` (``k`` below its bit count), without a branch:
    the byte counts (a SWAR popcount), their running sums by one multiplication, the bytes whose running sum is
    at most ``k`` counted by a second, then a table of the byte's bits (S. Vigna, "Broadword implementation of
    rank/select queries", WEA 2008)."""
    x = _U(x)
    k = _U(k)
    s = x - ((x >> _U(1)) & _M1)
    s = (s & _M2) + ((s >> _U(2)) & _M2)
    s = (s + (s >> _U(4))) & _M4
    b = s * _L8  # byte i: the set bits of bytes 0..i (at most 64, so no carry)
    le = ((k * _L8 | _H8) - b) & _H8  # the top bit of byte i: its running sum is <= k
    shift = (((le >> _U(7)) * _L8) >> _U(56)) << _U(3)  # 8 x the bytes before the one holding the bit
    kin = k - (((b << _U(8)) >> shift) & _U(0xFF))
    return shift + _U(_SEL8[((x >> shift) & _U(0xFF)) * _U(8) + kin])


@kernel
def live_fill(T, n):
    """Every one of the ``n`` groups is live."""
    w = (n + 63) >> 6
    for i in range(1, w + 1):
        T[i] = 0
    for i in range(1, w + 1):  # Fenwick's linear build: node i is complete when it is added to its parent
        bits = min(64, n - 64 * (i - 1))
        T[i] += bits
        j = i + (i & -i)
        if j <= w:
            T[j] += T[i]
        T[w + i] = np.int64(-1) if bits == 64 else (np.int64(1) << bits) - 1


@step
def _live_count_add(T, w, word, delta):
    """Add ``delta`` to the count of word ``word`` (0-based) in the Fenwick tree ``T[1 .. w]``."""
    i = word + 1
    while i <= w:
        T[_U(i)] += delta
        i += i & -i


@kernel
def live_add(T, n, g):
    """Group ``g`` is live again (nothing to do if it is in the set: the unit and log sources kill groups without
    taking them out, and their rejoins come here too)."""
    w = (n + 63) >> 6
    word = g >> 6
    x = _U(T[w + 1 + word])
    bit = _U(1) << _U(g & 63)
    if x & bit:
        return
    T[w + 1 + word] = np.int64(x | bit)
    _live_count_add(T, w, word, 1)


@step
def live_take(T, n, rank):
    """Remove and return the live group of 0-based ``rank`` (in increasing index), ``rank`` below the live count:
    a descent of the words' Fenwick tree (O(log(N / 64))) and a select in the word. The same group as a rank
    select over the groups one by one (``tests/test_timeline.py`` checks it against a sorted list)."""
    w = (n + 63) >> 6
    pos = 0
    rem = rank
    step = 1
    while step * 2 <= w:
        step *= 2
    while step > 0:
        nxt = pos + step
        if nxt <= w:
            c = T[_U(nxt)]
            if c <= rem:
                pos = nxt
                rem -= c
        step >>= 1
    x = _U(T[_U(w + 1 + pos)])  # the word of 0-based index pos holds the group
    bit = _select64(x, _U(rem))
    T[_U(w + 1 + pos)] = np.int64(x & ~(_U(1) << bit))
    _live_count_add(T, w, pos, -1)
    return pos * 64 + np.int64(bit)
