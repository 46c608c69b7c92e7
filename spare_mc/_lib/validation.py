"""Small argument checkers shared by the public entry points.

Every public function validates its arguments in one ``_xxx_iv`` function built from these helpers, so that bad
input raises a ``TypeError`` (wrong kind) or ``ValueError`` (wrong value) whose message names the parameter and the
rule, before any numba kernel sees it.

Every such error is a :class:`UsageError` (the marker of "the caller's input was wrong"), in a ``ValueError`` and a
``TypeError`` flavour so that ``except ValueError`` keeps working. The command line reports a ``UsageError`` as a
one-line usage error (exit status 2); any other exception is a bug of spare_mc and is shown as one.
"""

from __future__ import annotations

import difflib
import math
import numbers

import numpy as np


class UsageError(Exception):
    """Marker base class: the caller's input broke a documented rule (the message names the parameter and rule)."""


class UsageValueError(UsageError, ValueError):
    """A parameter has the right kind but a value that breaks a rule."""


class UsageTypeError(UsageError, TypeError):
    """A parameter has the wrong kind."""


def as_int(value, name: str, *, min_value: int | None = None, max_value: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise naming ``name`` and the rule."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise UsageTypeError(f"`{name}` must be an integer, got {value!r} of type {type(value).__name__}")
    value = int(value)
    if min_value is not None and value < min_value:
        raise UsageValueError(f"`{name}` must be >= {min_value}, got {name}={value}")
    if max_value is not None and value > max_value:
        raise UsageValueError(f"`{name}` must be <= {max_value}, got {name}={value}")
    return value


def as_float(value, name: str, *, positive: bool = False, nonnegative: bool = False,
             max_value: float | None = None, max_inclusive: bool = True, why: str = "") -> float:
    """Return ``value`` as a finite float, or raise naming ``name`` and the rule."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise UsageTypeError(f"`{name}` must be a real number, got {value!r} of type {type(value).__name__}")
    try:
        value = float(value)
    except OverflowError:  # an int beyond floating point (2**2000)
        raise UsageValueError(f"`{name}` must be finite, got an integer of {int(value).bit_length()} bits") from None
    if not math.isfinite(value):
        raise UsageValueError(f"`{name}` must be finite, got {name}={value}")
    if positive and value <= 0:
        raise UsageValueError(f"`{name}` must be > 0, got {name}={value}")
    if nonnegative and value < 0:
        raise UsageValueError(f"`{name}` must be >= 0, got {name}={value}")
    if max_value is not None:
        if (max_inclusive and value > max_value) or (not max_inclusive and value >= max_value):
            op = "<=" if max_inclusive else "<"
            why = f" ({why})" if why else ""
            raise UsageValueError(f"`{name}` must be {op} {max_value:g}{why}, got {name}={value:g}")
    return value


def as_bool(value, name: str) -> bool:
    """Return ``value`` as a Python bool (``numpy.bool_`` accepted), or raise naming ``name``."""
    if not isinstance(value, (bool, np.bool_)):
        raise UsageTypeError(f"`{name}` must be a bool, got {value!r} of type {type(value).__name__}")
    return bool(value)


def as_choice(value, name: str, choices) -> str:
    """Return ``value`` if it is one of ``choices`` (strings), else raise naming them."""
    if not isinstance(value, str):
        raise UsageTypeError(f"`{name}` must be a string, one of {sorted(choices)}, got {value!r}")
    if value not in choices:
        raise UsageValueError(f"`{name}` must be one of {sorted(choices)}, got {name}={value!r}")
    return value


def reject_unknown(given, known, where: str, *, noun: str = "keys") -> None:
    """Refuse names of ``given`` that ``known`` lacks (a misspelt key would otherwise be ignored, or fail far from
    its cause), with one message naming them, the place, the closest known name of each and every known one:
    ``unknown keys ['colour'] in the preset p.json (did you mean 'color'?); expected some of [...]``."""

    known = sorted(map(str, known))
    unknown = sorted({str(k) for k in given} - set(known))
    if not unknown:
        return
    close = [(u, difflib.get_close_matches(u, known, n=1)) for u in unknown]
    hint = ", ".join(f"{m[0]!r}" if len(unknown) == 1 else f"{m[0]!r} for {u!r}" for u, m in close if m)
    raise UsageValueError(f"unknown {noun} {unknown} in {where}" + (f" (did you mean {hint}?)" if hint else "")
                          + f"; expected some of {known}")


def check_r(r: int, n_groups: int) -> None:
    """The redundancy rule shared by every layout and exact form."""
    if not 1 <= r <= n_groups:
        raise UsageValueError(f"`r` must satisfy 1 <= r <= N, got r={r} with N={n_groups}")


_KIND_WORDS = {"f": "real numbers", "iuf": "real numbers", "iu": "integers", "b": "booleans", "biu": "booleans or 0/1"}


def as_vector(value, name: str, kinds: str = "iuf", *, size: int | None = None) -> np.ndarray:
    """``value`` as a 1-d numpy array whose dtype kind is one of ``kinds`` (numpy's letters: ``b`` bool, ``i``/``u``
    integers, ``f`` floats), not coerced: strings, objects, bools where numbers are expected and 2-d input are
    refused, where ``np.asarray(value, float)`` would parse ``"3"`` or flatten a table. ``size``: the length it must
    have. Integer input asked for as real numbers comes back as float64; ``kinds="biu"`` (flags) must be 0/1 and
    comes back as bool."""
    try:
        a = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nesting
        raise UsageTypeError(f"`{name}` must be a 1-d array of {_KIND_WORDS.get(kinds, kinds)}: {exc}") from None
    if a.ndim == 0:
        raise UsageTypeError(f"`{name}` must be a 1-d array of {_KIND_WORDS.get(kinds, kinds)}, got {value!r}"[:300])
    if a.ndim != 1:
        raise UsageValueError(f"`{name}` must be a 1-d array, got shape {a.shape}")
    if a.size and a.dtype.kind not in kinds:
        raise UsageTypeError(f"`{name}` must hold {_KIND_WORDS.get(kinds, kinds)}, got dtype {a.dtype}")
    if size is not None and a.size != size:
        raise UsageValueError(f"`{name}` must have {size} entries, got {a.size}")
    if kinds == "biu":
        if a.size and a.dtype.kind != "b" and not np.all((a == 0) | (a == 1)):
            raise UsageValueError(f"`{name}` must be booleans or 0/1, got values other than 0 and 1")
        return a.astype(bool)
    if "f" in kinds and a.dtype.kind != "f":
        return a.astype(np.float64)
    return a


def as_indices(value, name: str, n: int, what: str = "group", *, n_name: str | None = "N", scalar: bool = False,
               distinct: bool = False, nonempty: bool = False) -> np.ndarray:
    """``value`` as a 1-d int64 array of indices in ``[0, n)``, the one check of every index argument (dead or
    failed groups, GPUs): integers only (no bools, floats or strings, which numpy would truncate or parse), no
    negative index (which numpy would wrap to the end) and none past ``n``. ``scalar``: a single index is accepted
    as one entry; ``distinct``: repeats are refused; ``nonempty``: an empty input is refused. Any iterable (a set, a
    generator) is accepted where a collection is. ``n_name``: how the bound is named in the message."""
    if isinstance(value, (str, bytes)) or (not scalar and not hasattr(value, "__iter__")):
        raise UsageTypeError(f"`{name}` must be a collection of {what} indices, got {type(value).__name__}")
    if not isinstance(value, np.ndarray) and hasattr(value, "__iter__") and not hasattr(value, "__len__"):
        value = list(value)  # a set's or a generator's entries
    elif isinstance(value, (set, frozenset)):
        value = sorted(value)
    try:
        a = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nesting
        raise UsageTypeError(f"`{name}` must be a 1-d collection of {what} indices: {exc}") from None
    if a.ndim == 0 and scalar:
        a = a.reshape(1)
    if a.ndim != 1:
        raise UsageValueError(f"`{name}` must be a {what} index or a 1-d collection of them, got shape {a.shape}"
                              if scalar else f"`{name}` must be a 1-d collection of {what} indices, got shape "
                              f"{a.shape}")
    if a.size == 0:
        if nonempty:
            raise UsageValueError(f"`{name}` must be a {what} index or a non-empty 1-d collection of them, got an "
                                  f"empty one")
        return np.empty(0, np.int64)
    if a.dtype.kind not in "iu":
        raise UsageTypeError(f"`{name}` must hold integer {what} indices, got dtype {a.dtype}")
    if a.min() < 0 or a.max() >= n:
        bound = f"[0, {n_name}) with {n_name}={n}" if n_name else f"[0, {n})"
        raise UsageValueError(f"`{name}` must lie in {bound}, got values in [{a.min()}, {a.max()}]")
    a = a.astype(np.int64, copy=False)
    if distinct and np.unique(a).size != a.size:
        raise UsageValueError(f"`{name}` must be distinct, got {a.tolist()}"[:300])
    return a


def check_unique(values, name: str, *, given=None) -> None:
    """Refuse a value that ``values`` holds twice, naming ``name`` and the value: a repeated entry of a list input
    would run (and count) one setting twice -- two rows, a multiple-testing correction over twice the tests --
    or be merged while the settings record both. Values compare by value (``0.5`` and ``0.50``, ``2`` and
    ``2.0`` are one). ``given``: the text of each value as the user wrote it (a command line's items), shown when
    the two spellings differ. Unhashable values (lists from a JSON file) compare by ``==``."""
    values = list(values)
    seen: dict = {}
    for i, v in enumerate(values):
        try:
            j = seen.setdefault(v, i)
        except TypeError:  # unhashable
            j = next((k for k in range(i) if values[k] == v), i)
        if j == i:
            continue
        if given is None:
            raise UsageValueError(f"`{name}` must be distinct, got {v!r} twice in {values}"[:300])
        a, b = given[j].strip(), given[i].strip()
        spelt = f" ({a!r} and {b!r})" if a != b else ""
        raise UsageValueError(f"`{name}` must be distinct, got {v!r} twice{spelt} in {','.join(given)!r}"[:300])


_LIST_KINDS = {int: "integers", float: "numbers", str: "names"}


def parse_list(text, flag: str, kind=str, *, what: str | None = None, choices=None,
               allow_empty: bool = False) -> tuple:
    """A command line's comma-separated list (``--policies hazard,young_hazard``) as a tuple: the one parser of
    every list flag. Refused, naming ``flag``: an empty item (``"1,,2"``, a trailing comma, an empty text unless
    ``allow_empty``, which gives ``()``), an item that is not of ``kind``, a non-finite number, a name not among
    ``choices``, and a repeated value (:func:`check_unique`: numbers by value, ``0.5`` and ``0.50`` are one).

    Parameters
    ----------
    text : str
        The flag's value.
    flag : str
        The flag as the user typed it (``"--policies"``), named in every error.
    kind : int, float, str or callable
        How an item (stripped) is read; a callable raises ``ValueError`` on an item it cannot read.
    what : str, optional
        The items' description in the error (default by ``kind``: "integers", "numbers", "names").
    choices : collection of str, optional
        The values an item may take.
    allow_empty : bool
        An empty (or blank) text is the empty list.

    Examples
    --------
    >>> parse_list("0.5, 1", "--shapes", float)
    (0.5, 1.0)
    >>> parse_list("hazard,hazard", "--policies")
    Traceback (most recent call last):
    ...
    spare_mc._lib.validation.UsageValueError: `--policies` must be distinct, got 'hazard' twice in 'hazard,hazard'
    """
    what = what or _LIST_KINDS.get(kind, "values")
    if not isinstance(text, str):
        raise UsageTypeError(f"`{flag}` must be comma-separated {what}, got {text!r}")
    if not text.strip():
        if allow_empty:
            return ()
        raise UsageValueError(f"`{flag}` must be comma-separated {what}, got an empty value")
    items = text.split(",")
    if any(not x.strip() for x in items):
        raise UsageValueError(f"`{flag}` must be comma-separated {what} without empty items (a doubled or trailing "
                              f"comma), got {text!r}")
    out = []
    for item in items:
        x = item.strip()
        try:
            v = kind(x)
        except (ValueError, OverflowError):
            raise UsageValueError(f"`{flag}` must be comma-separated {what}, got {x!r}"
                                  + (f" in {text!r}" if len(items) > 1 else "")) from None
        if isinstance(v, float) and not math.isfinite(v):
            raise UsageValueError(f"`{flag}` must be finite {what}, got {x!r}" + (f" in {text!r}" if len(items) > 1
                                                                                  else ""))
        if choices is not None and v not in choices:
            raise UsageValueError(f"`{flag}` must name {what} among {list(choices)}, got {x!r}")
        out.append(v)
    check_unique(out, flag, given=items)
    return tuple(out)


def in_file(exc: UsageError) -> UsageError:
    """``exc`` marked as an error about a file's content (a target table, a preset, a log's metadata): the names it
    gives are the file's keys, so the command line leaves them as they are instead of saying its flags' names."""
    exc.file_keys = True
    return exc
