"""The slow, obviously correct twin of the predictive check's Kolmogorov-Smirnov distance
(:func:`spare_mc.logs.predictive._ks`): both empirical distribution functions evaluated at every point of either
set."""

from __future__ import annotations

import numpy as np


def ks_union_slow(sample: np.ndarray, ref_sorted: np.ndarray) -> float:
    """``max |F_s(x) - F_r(x)|`` over every ``x`` of ``sample`` and of ``ref_sorted`` (right-continuous empirical
    distribution functions; 1 when exactly one set is empty, 0 when both are)."""
    if sample.size == 0 or ref_sorted.size == 0:
        return 1.0 if sample.size != ref_sorted.size else 0.0
    s = np.sort(sample)
    grid = np.concatenate([s, ref_sorted])
    fs = np.searchsorted(s, grid, side="right") / s.size
    fr = np.searchsorted(ref_sorted, grid, side="right") / ref_sorted.size
    return float(np.max(np.abs(fs - fr)))
