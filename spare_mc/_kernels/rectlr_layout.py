"""ReCtlr's state layout (private): the rows and slots of its packed blocks and the records that carry them.

The data model is :mod:`spare_mc._kernels.rectlr`'s docstring; this module only names the slots (laid out by
:func:`spare_mc._kernels.slots.define`: sizes counted, never typed) and defines the two records its kernels take:

- :class:`State`, the blocks ``(E, G, D, H, meta, ulog, pplan, out)`` of one controller (:func:`~spare_mc._kernels.
  rectlr.alloc`), passed whole to :func:`~spare_mc._kernels.rectlr.rectlr_step` and the phases;
- :class:`Saved`, a fully live state to return to at a global restart (:func:`~spare_mc._kernels.rectlr.saved_state`,
  :func:`~spare_mc._kernels.rectlr.reset_state`).

numba types a record as a tuple of its fields and passes it to a compiled callee field by field, exactly as it
passes the arrays one by one: a record costs nothing at a call (and is cached like any argument type, which a
``jitclass`` is not).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .cache import drop_if_dependencies_changed
from .slots import define

# no kernels here (the modules whose kernels read these slots name this file and slots.py); named as every kernel
# module names the modules it imports
drop_if_dependencies_changed(__file__, ("slots.py",))

#: ``meta``: stack number ``S``, dead groups ``k``, visit stamp, longest stack, the stamp of the current Phase-2 run,
#: the length of the queue a failed breadth-first search left (its explored types)
META_SLOTS = define(globals(), "N_META", "S_ K_ STAMP_ MAXDEG_ P2_ QTAIL_")
#: ``out``: the results of one ReCtlr call
OUT_SLOTS = define(globals(), "N_OUT", "O_K O_C O_S O_PHASE0 O_MOVES O_ORPHANS O_PATCH_TYPES O_PATCH O_WIPED")
#: the rows of the packed blocks: ``E`` (``N_E x N r``), ``G`` (``N_G x (N + 1)``), ``D`` (``N_D x (2 N + 1)``),
#: ``H`` (``N_H x (2 N r + 2 N + 2)``)
define(globals(), "N_E", "EG GSTK EPOS ET STYPE")
define(globals(), "N_G", "GPTR ALIVE NLIVE OWN LOAD POWN PLOAD MARKG MARKT VIA QUEUE ORPH DEEP MOVED")
define(globals(), "N_D", "DIST DSTAMP FSTAMP PHI PHIL FIN BHEAD BTAIL BSTAMP QCUR")
define(globals(), "N_H", "HNEXT HNODE")
#: the overhead drivers' per-trial statistics columns
TRIAL_SLOTS = define(globals(), "N_TRIAL_COLS",
                     "T_T T_DEAD T_SUM_C T_SUM_S T_CALLS T_PHASE0 T_MOVES T_ORPHANS T_PATCH_TYPES T_PATCH T_S0 T_SMAX "
                     "T_NOMOVE")
#: their per-event log columns
LOG_SLOTS = define(globals(), "N_LOG_COLS",
                   "L_TRIAL L_EVENT L_K L_C L_S L_PHASE0 L_MOVES L_ORPHANS L_PATCH_TYPES L_PATCH")


class State(NamedTuple):
    """One controller's blocks (int64, ``n`` groups, redundancy ``r``; :func:`spare_mc._kernels.rectlr.alloc`)."""

    #: edges: ``N_E x N r`` (group, stack slot, position, type of each edge; each slot's type)
    E: np.ndarray
    #: groups and types: ``N_G x (N + 1)`` (stack pointers, liveness, assignment, the searches' marks and queue)
    G: np.ndarray
    #: the min-cost search's nodes: ``N_D x (2 N + 1)`` (labels, stamps, potentials; the buckets' heads and tails; the
    #: current label's FIFO)
    D: np.ndarray
    #: its bucket queue's entries: ``N_H x (2 N r + 2 N + 2)`` (the next entry of the bucket, the node)
    H: np.ndarray
    #: the ``N_META`` scalars (``S_``, ``K_``...)
    meta: np.ndarray
    #: the undo log of the phases (``4 N + 4``; a longer one is allocated when a call needs it)
    ulog: np.ndarray
    #: the patch plan (``2 N``: the types, then the survivors that recompute them)
    pplan: np.ndarray
    #: the ``N_OUT`` results of the last call (``O_*``)
    out: np.ndarray


class Saved(NamedTuple):
    """A fully live state a global restart returns to (:func:`spare_mc._kernels.rectlr.saved_state`)."""

    #: ``E[GSTK]`` (``N r``): every stack as built
    gstk: np.ndarray
    #: ``E[EPOS]`` (``N r``)
    epos: np.ndarray
    #: ``G[OWN, :N]``: the assignment
    own: np.ndarray
    #: ``G[LOAD, :N]``
    load: np.ndarray
    #: ``S``
    s: np.int64


class Tally(NamedTuple):
    """What the overhead drivers write (:func:`spare_mc._kernels.rectlr.overhead_uniform`, ``overhead_events``):
    per-trial statistics (``T_*`` columns) and histograms of ``S - c`` (the rows of every trial, or one trial's row),
    and the per-event log (``L_*`` columns) of the first ``log_trials`` trials."""

    stats: np.ndarray
    gap_hist: np.ndarray
    log: np.ndarray
    log_trials: int
