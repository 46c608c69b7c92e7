"""The SPARe paper's stated setting and published results, read from one package data file (``data/paper.json``).

Everything in spare_mc that uses a number from the paper -- the defaults of :class:`spare_mc.TimelineConfig`, the
optimiser's and ``spare-mc reproduce``'s comparison row, any calibration -- reads it from here, so that the paper's
numbers live in exactly one place.

Source: Lee et al., "SPARe: Stacked Parallelism with Adaptive Reordering for Fault-Tolerant LLM Pretraining Systems
with 100k+ GPUs", ICML 2026, arXiv:2603.00357.
"""

from __future__ import annotations

import copy
import functools
import json
from importlib import resources

__all__ = ["paper_setting", "paper_results", "paper_row", "PAPER_CITATION", "PAPER_R"]


@functools.lru_cache(maxsize=1)
def _load() -> dict:
    return json.loads(resources.files("spare_mc").joinpath("data", "paper.json").read_text(encoding="utf-8"))


def paper_setting() -> dict:
    """The parameters the paper states (a copy): ``n_steps``, ``mtbf_s``, ``shape``, ``restart_s``, ... ."""
    return copy.deepcopy(_load()["setting"])


def paper_results() -> dict:
    """The published main-table rows (a copy)."""
    return copy.deepcopy(_load()["results"])


def paper_row(n_groups: int = 600) -> dict | None:
    """The published row at ``n_groups`` (``None`` where the paper publishes none).

    >>> paper_row(600)["spare"]["r"]
    8
    """
    for row in _load()["results"]["rows"]:
        if row["n_groups"] == n_groups:
            return copy.deepcopy(row)
    return None


PAPER_CITATION = _load()["citation"]


def _paper_r() -> dict:
    row = paper_row(600)
    return {"ckpt": 1, "rep": row["rep"]["r"], "spare": row["spare"]["r"]}


#: Each strategy's redundancy r at the paper's optimum, read from its published N = 600 row (CKPT-only has no
#: redundancy: 1): ``{"ckpt": 1, "rep": 3, "spare": 8}``, the ``r`` of ``spare-mc ttt`` when ``--r`` is not given.
PAPER_R = _paper_r()
