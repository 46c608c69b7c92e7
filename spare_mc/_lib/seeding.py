"""The randomness convention of the replicated simulations (time to train, the optimiser, sweeps).

Every such entry point takes ``rng`` and turns it into a **root** :class:`numpy.random.SeedSequence`
(:func:`root_seed_sequence`). Each failure trace is a child of the root keyed by what identifies it -- the number of
groups and the replication index, ``(n_groups, rep)`` -- never by the strategy, an option value or a position in a
sweep (:func:`trace_seed_sequence`). Hence strategies and variants compared at one ``N`` see the same failures
(common random numbers), and one configuration gives the same numbers through the API, the command line and a sweep.
"""

from __future__ import annotations

import numbers

import numpy as np

from .validation import UsageTypeError, UsageValueError

__all__ = ["root_seed_sequence", "trace_seed_sequence", "root_text"]


_RNG_RULE = "`rng` must be None, a non-negative int, a non-empty list or tuple of them, a SeedSequence or a Generator"


def _seed_int(x) -> bool:
    """An integer seed entry: an integral number (numpy's too), not a bool, not negative."""
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_)) and int(x) >= 0


def check_rng(rng) -> None:
    """Refuse what :func:`root_seed_sequence` and :func:`generator` do not take, with one message naming ``rng``.

    Taken: ``None``, a :class:`~numpy.random.SeedSequence`, a :class:`~numpy.random.Generator`, a non-negative int
    (numpy integers too) and a non-empty list or tuple of them. Refused: bools (``True`` is not a seed, even inside a
    tuple), negative ints, floats, strings, arrays and the legacy ``RandomState``, which numpy itself would take in
    some places and not others.
    """
    if rng is None or isinstance(rng, (np.random.SeedSequence, np.random.Generator)) or _seed_int(rng):
        return
    if isinstance(rng, (list, tuple)) and rng and all(_seed_int(x) for x in rng):
        return
    kind = UsageValueError if isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_)) \
        else UsageTypeError
    raise kind(f"{_RNG_RULE}, got {rng!r}"[:400])


def root_seed_sequence(rng) -> np.random.SeedSequence:
    """The root :class:`~numpy.random.SeedSequence` of ``rng`` (validated by :func:`check_rng`).

    ``None``: fresh entropy from the operating system (recorded in every result, so the run can be repeated); a
    non-negative int or a sequence of them: ``SeedSequence(rng)``; a ``SeedSequence``: itself; a
    :class:`~numpy.random.Generator`: a root seeded by 128 bits drawn from it (advancing it).
    """
    check_rng(rng)
    if rng is None or isinstance(rng, np.random.SeedSequence):
        return np.random.SeedSequence() if rng is None else rng
    if isinstance(rng, np.random.Generator):
        return np.random.SeedSequence([int(x) for x in rng.integers(0, 2**32, size=4, dtype=np.uint64)])
    if isinstance(rng, (list, tuple)):
        return np.random.SeedSequence([int(x) for x in rng])
    return np.random.SeedSequence(int(rng))


def generator(rng) -> np.random.Generator:
    """``numpy.random.default_rng(rng)`` for what :func:`check_rng` takes, with a usage error naming ``rng``
    instead of numpy's own (a Generator is used as it is, not copied)."""
    check_rng(rng)
    if isinstance(rng, (list, tuple)):
        return np.random.default_rng([int(x) for x in rng])
    return np.random.default_rng(int(rng) if isinstance(rng, numbers.Integral) else rng)


def trace_seed_sequence(root: np.random.SeedSequence, n_groups: int, rep: int) -> np.random.SeedSequence:
    """The seed of replication ``rep`` at ``n_groups``: ``SeedSequence(root.entropy, spawn_key=(*root.spawn_key,
    n_groups, rep))``."""
    return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, int(n_groups), int(rep)),
                                  pool_size=root.pool_size)


def root_text(root: np.random.SeedSequence) -> str:
    """The root's identity as text (entropy, and the spawn key if any) for provenance attributes."""
    key = f", spawn_key={tuple(root.spawn_key)}" if root.spawn_key else ""
    return f"{root.entropy}{key}"

