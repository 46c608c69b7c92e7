"""Random-draw primitives of the numba kernels (private): bounded integers, uniforms and failure times on the
caller's generator, random holder tables.

- ``rng`` is a ``numpy.random.Generator`` passed in by the caller; kernels read its bit generator through
  ``next_u64``/``state`` (:func:`raw_source`, from ``Generator.bit_generator.ctypes``) and advance it in place. Keep
  the Generator alive while a kernel runs: the state is read by address.
- Bounded draws use Lemire's multiply-and-reject method on the upper 32 bits of a raw draw (:func:`bounded`):
  exactly uniform for bounds below 2^32, about ten times faster here than ``Generator.integers`` inside numba. The
  stream therefore differs from ``Generator.integers``; :func:`bounded_py` is its plain-Python twin.
- Failure times for the order-statistic wipe-out kernels come from a SplitMix64 stream (:func:`splitmix64`, Steele,
  Lea & Flood 2014) seeded by one raw draw per trial: counter-based, so a loop of them vectorises
  (:func:`failure_times_into`); :func:`bounded_splitmix` continues the same stream for a trial's tie break. The
  plain-Python twins are :func:`spare_mc.testing.wipeout.splitmix64_py` and
  :func:`spare_mc.testing.wipeout.wipeout_order_stat_twin`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_MASK32 = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)
_SHIFT = np.uint64(32)
_TWO_M53 = 1.0 / 9007199254740992.0  # 2^-53
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, inline="always")
def _lemire_rejects(m, b):
    """Whether Lemire's product ``m = (x >> 32) * b`` must be drawn again: its low 32 bits fall below
    ``2^32 mod b`` (Lemire 2019). The common case ``low >= b`` skips the division."""
    low = m & _MASK32
    return low < b and low < (_TWO32 - b) % b


@njit(cache=True)
def bounded(next_u64, state, bound):
    """Uniform integer in ``[0, bound)`` for ``1 <= bound < 2^32`` (Lemire 2019, 32-bit variant)."""
    b = np.uint64(bound)
    m = (next_u64(state) >> _SHIFT) * b
    while _lemire_rejects(m, b):
        m = (next_u64(state) >> _SHIFT) * b
    return np.int64(m >> _SHIFT)


def bounded_py(bit_generator, bound: int) -> int:
    """Plain-Python twin of :func:`bounded` on the same bit generator."""
    m = (int(bit_generator.random_raw()) >> 32) * bound
    if (m & 0xFFFFFFFF) < bound:
        t = ((1 << 32) - bound) % bound
        while (m & 0xFFFFFFFF) < t:
            m = (int(bit_generator.random_raw()) >> 32) * bound
    return m >> 32


def raw_source(rng):
    """``(next_u64, state)`` of a Generator's bit generator for the kernels (keep ``rng`` alive meanwhile)."""
    c = rng.bit_generator.ctypes
    return c.next_uint64, c.state_address


@njit(cache=True)
def draw_group(next_u64, state, perm, i, n, with_replacement):
    """The ``i``-th failed group: uniform among the ``n - i`` not yet drawn, or uniform over all ``n``."""
    if with_replacement:
        return perm[bounded(next_u64, state, n)]
    j = i + bounded(next_u64, state, n - i)
    g = perm[j]
    perm[j] = perm[i]
    perm[i] = g
    return g


@njit(cache=True)
def u01(next_u64, state):
    """Uniform double in ``[0, 1)`` from the top 53 bits of one raw draw (numpy's ``next_double`` for PCG64)."""
    return np.float64(next_u64(state) >> np.uint64(11)) * _TWO_M53


@njit(cache=True)
def splitmix64(seed, i):
    """Output ``i`` (0-based) of the SplitMix64 generator started at ``seed`` (Steele, Lea & Flood 2014, the
    generator Vigna recommends for seeding xoshiro): ``z = seed + (i + 1) * 0x9E3779B97F4A7C15`` put through two
    xor-shift-multiply rounds. Counter-based, so a loop of outputs has no carried dependency and vectorises.
    Started at 1234567 it gives 6457827717110365317, 3203168211198807973, ... (the published reference values)."""
    z = seed + np.uint64(i + 1) * _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def bounded_splitmix(seed, i, bound):
    """Lemire's method (as :func:`bounded`) on the upper 32 bits of SplitMix64 outputs ``i, i + 1, ...`` of the
    stream started at ``seed``: ``(uniform integer in [0, bound), index of the next unused output)``."""
    b = np.uint64(bound)
    m = (splitmix64(seed, i) >> _SHIFT) * b
    i += 1
    while _lemire_rejects(m, b):
        m = (splitmix64(seed, i) >> _SHIFT) * b
        i += 1
    return np.int64(m >> _SHIFT), i


@njit(cache=True)
def failure_times_into(seed, n, drop, u):
    """Fill ``u`` (uint32, length ``n``) with i.i.d. uniform 32-bit failure times from the SplitMix64 stream
    started at ``seed`` (one raw draw of the caller's generator per trial): output ``i`` gives ``u[2i]`` (its upper
    32 bits) and ``u[2i + 1]`` (its lower 32 bits); an odd ``n`` takes the upper half of one more output. About
    0.3 us for N = 1000, against 1.8 us for 500 calls of the caller's bit generator through its function pointer.
    ``drop`` > 0 (tests only) keeps the top ``32 - drop`` bits, so that ties are common."""
    d = np.uint32(drop)
    for i in range(n >> 1):
        z = splitmix64(seed, i)
        u[2 * i] = np.uint32(z >> _SHIFT) >> d
        u[2 * i + 1] = np.uint32(z & _MASK32) >> d
    if n & 1:
        u[n - 1] = np.uint32(splitmix64(seed, n >> 1) >> _SHIFT) >> d


@njit(cache=True)
def random_holders_into(next_u64, state, n, r, holders):
    """Fill ``holders`` (n x r) with an independent uniformly random r-subset of groups per type (Floyd)."""
    for j in range(n):
        # Robert Floyd's algorithm: r distinct values from [0, n) with exactly r draws
        for idx in range(r):
            top = n - r + idx
            v = bounded(next_u64, state, top + 1)
            for q in range(idx):
                if holders[j, q] == v:
                    v = top
                    break
            holders[j, idx] = v
        # shuffle the row so that stack layers are exchangeable (Floyd's order is not uniform)
        for idx in range(r - 1, 0, -1):
            q = bounded(next_u64, state, idx + 1)
            v = holders[j, idx]
            holders[j, idx] = holders[j, q]
            holders[j, q] = v
