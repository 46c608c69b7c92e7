"""Slot layouts of the kernels' packed arrays (private): each array's slots laid out from the list of their names.

A kernel keeps the scalars of one kind in one array (its parameters, a job's clock and counters, its results, the
rows of a 2-d block) and reads them through named constants (``P[P_N_GROUPS]``), which numba freezes into the
compiled code. :func:`define` lays such an array out from its slot names in order and defines the constants, and the
array's size, in a module's namespace:

>>> ns = {}
>>> define(ns, "N_X", "X_A X_B", ("X_RUN", 3), "X_C")
{'X_A': 0, 'X_B': 1, 'X_RUN': 2, 'X_C': 5}
>>> ns["N_X"]
6

A name is one slot and ``(name, length)`` a run of ``length`` slots from the name's index. Sizes and offsets are
counted, never typed: a name added to a list moves every later slot and grows the array, so two blocks of one array
cannot overlap, and no count is written twice. The import-time check verifies it all the same (the slots tile
``[0, size)`` exactly) and refuses a name defined twice, in the layout or already in the namespace.

The layouts live in modules of their own (:mod:`spare_mc._kernels.timeline_layout`,
:mod:`spare_mc._kernels.rectlr_layout`) that define them and nothing else; the kernel modules import the names they
use from there, so every use names a module attribute a reader and a linter can follow.
"""

from __future__ import annotations


def _entries(part):
    """``(name, length)`` of each slot or run a part of a layout lists."""
    if isinstance(part, str):
        return [(name, 1) for name in part.split()]
    name, length = part
    if not isinstance(name, str) or not isinstance(length, int) or length < 0:
        raise TypeError(f"a run of slots is (name, length >= 0), got {part!r}")
    return [(name, length)]


def define(namespace: dict, size_name: str, *parts) -> dict:
    """Lay out one array's slots from ``parts`` in order and define them in ``namespace``.

    Parameters
    ----------
    namespace : dict
        Where the constants go (a layout module's ``globals()``).
    size_name : str
        The name of the array's size (its slot count), defined too.
    *parts : str or (str, int)
        Slot names separated by white space (one slot each), or ``(name, length)`` for a run of ``length`` slots
        starting at the name's index.

    Returns
    -------
    dict
        ``{name: index}`` in slot order.

    Raises
    ------
    ValueError
        A name listed twice or already defined in ``namespace``, or slots that do not tile ``[0, size)`` (an
        internal error of this function).
    """
    slots, spans = {}, []
    end = 0
    for part in parts:
        for name, length in _entries(part):
            if name in slots or name in namespace or name == size_name:
                raise ValueError(f"slot {name} is defined twice")
            slots[name] = end
            spans.append((end, end + length, name))
            end += length
    if size_name in namespace:
        raise ValueError(f"{size_name} is defined twice")
    _check_tiling(spans, end)
    namespace.update(slots)
    namespace[size_name] = end
    return slots


def _check_tiling(spans, size) -> None:
    """The spans ``(start, end, name)`` cover ``[0, size)`` once each: no two overlap, none is left out."""
    at = 0
    for start, end, name in sorted(spans):
        if start != at:
            raise ValueError(f"slot {name} starts at {start}, not at {at}: two blocks overlap or leave a gap")
        at = end
    if at != size:
        raise ValueError(f"the slots end at {at}, not at the size {size}")
