"""The redundancy strategies by name: one table, and every tuple of strategy names derived from it.

A time-to-train job runs one of three strategies (docs/model.md, section 6): CKPT-only (checkpoints and global
restarts, no redundancy), Rep+CKPT (replication: Rep's replica sets, plus checkpoints) and SPARe+CKPT (stacking
with adaptive reordering, plus checkpoints). :data:`STRATEGY_TABLE` says what each one is; the command line's
``--strategy`` choices, :class:`~spare_mc.TimelineConfig`'s validation, the studies' lists and the tables' and
figures' orders read the tuples below, so a strategy is named, labelled and ordered in one place.

>>> STRATEGIES, REDUNDANT_STRATEGIES
(('ckpt', 'rep', 'spare'), ('rep', 'spare'))
>>> STRATEGY_TABLE["spare"].label, STRATEGY_LABELS["ckpt"]
('SPARe+CKPT', 'CKPT-only')
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Strategy", "STRATEGY_TABLE", "STRATEGIES", "REDUNDANT_STRATEGIES", "LAYOUT_STRATEGIES",
           "STRATEGY_LABELS"]


@dataclass(frozen=True)
class Strategy:
    """One redundancy strategy of the timeline.

    Attributes
    ----------
    name : str
        Its name in the API, the command line and every output (``"ckpt"``, ``"rep"``, ``"spare"``).
    label : str
        Its name in tables and figures (``"CKPT-only"``, ``"Rep+CKPT"``, ``"SPARe+CKPT"``).
    takes_r : bool
        Whether the redundancy ``r`` is a parameter (CKPT-only runs ``r = 1``).
    has_layout : bool
        Whether which groups hold which shards is a choice (``TimelineConfig.layout``: SPARe's stacking layouts).
    redundancy : {"rep", "spare"} or None
        How it keeps copies: Rep's replica sets, SPARe's stacking, or none; the ``redundancy`` of the layout kinds
        it runs on (:data:`spare_mc.model.kinds.LAYOUT_TABLE`).
    """

    name: str
    label: str
    takes_r: bool
    has_layout: bool
    redundancy: str | None


#: Every strategy by name, in the order of every table and figure.
STRATEGY_TABLE = {s.name: s for s in (
    Strategy("ckpt", "CKPT-only", takes_r=False, has_layout=False, redundancy=None),
    Strategy("rep", "Rep+CKPT", takes_r=True, has_layout=False, redundancy="rep"),
    Strategy("spare", "SPARe+CKPT", takes_r=True, has_layout=True, redundancy="spare"),
)}

#: Every strategy's name: ``("ckpt", "rep", "spare")``.
STRATEGIES = tuple(STRATEGY_TABLE)
#: The strategies with redundancy (they take ``r``; the ones the sensitivity and calibration studies and the
#: repair study compare): ``("rep", "spare")``.
REDUNDANT_STRATEGIES = tuple(s.name for s in STRATEGY_TABLE.values() if s.takes_r)
#: The strategies that take a ``layout``: ``("spare",)``.
LAYOUT_STRATEGIES = tuple(s.name for s in STRATEGY_TABLE.values() if s.has_layout)
#: name -> label (``{"ckpt": "CKPT-only", "rep": "Rep+CKPT", "spare": "SPARe+CKPT"}``).
STRATEGY_LABELS = {s.name: s.label for s in STRATEGY_TABLE.values()}
