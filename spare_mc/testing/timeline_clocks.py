"""The failure clocks of the SimPy timeline twin (:mod:`spare_mc.testing.timeline_twin`), written from the model:
the unit clocks of a unit-clock failure model (:func:`timeline_unit_clocks`), the system-level renewal process
(:class:`Renewal`), unit clocks drawn one lifetime per unit (:class:`UnitClocks`) or sampled as a race
(:class:`UnitRace`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..model.failures import PerGPU

__all__ = ["Renewal", "UnitClocks", "UnitRace", "timeline_unit_clocks"]


def timeline_unit_clocks(cfg) -> tuple:
    """The unit clocks of a unit-clock failure model, derived from ``cfg.failures`` and ``cfg.topology``.

    Returns ``(scales_us, n_group_units, dom_ptr, dom_groups, keep, classes)``: every unit's Weibull scale in
    microseconds (the groups first, then the domains of each level), how many units are groups, the groups each
    domain touches (CSR), whether ages are kept at a restart, and the classes of units sharing one scale as
    ``(first unit, end)`` pairs: the groups, then each level of the model.

    Notes
    -----
    Written from the model, not from :meth:`TimelineConfig.unit_clocks`: a GPU lifetime is Weibull with shape ``k``
    and scale ``lam = mean / Gamma(1 + 1/k)``; a group fails at the first of its ``M`` GPUs, the minimum of ``M``
    such lifetimes, Weibull with scale ``lam M^(-1/k)``; a domain's lifetime is Weibull with the domain's own mean.
    Per-GPU model: one unit per group. Domain model: one unit per group for the per-GPU background (if any), then
    for every level of the model, finest first (node, rack, power, pod), one unit per domain of
    ``topology.domain_groups(level)``. Domains follow their background's age policy ("renew" without one).
    """

    f, topo = cfg.failures, cfg.topology
    per_gpu = f if isinstance(f, PerGPU) else f.background
    scales, n_gu = [], 0
    if per_gpu is not None:
        k = per_gpu.shape
        lam = per_gpu.gpu_mtbf_s / math.gamma(1.0 + 1.0 / k)
        n_gu = topo.n_groups
        scales += [lam * topo.gpus_per_group ** (-1.0 / k) * 1e6] * n_gu
    ptr, groups, classes = [0], [], [(0, n_gu)]
    if per_gpu is not f:
        for level in ("node", "rack", "power", "pod"):
            mean = dict(f.levels).get(level)
            if mean is None:
                continue
            lp, lg = topo.domain_groups(level)
            first = len(scales)
            ptr += [ptr[-1] + int(x) for x in lp[1:]]
            groups += [int(x) for x in lg]
            scales += [mean / math.gamma(1.0 + 1.0 / f.shape) * 1e6] * (len(lp) - 1)
            classes.append((first, len(scales)))
    keep = per_gpu is not None and per_gpu.age_policy == "keep"
    return scales, n_gu, ptr, groups, keep, classes


@dataclass
class Renewal:
    """The system-level renewal process: arrival ``i`` at operational time ``a`` (None once the trace is out); the
    operational clock stood at ``o_ref`` at wall time ``t_ref``."""

    gaps: list
    victims: list
    i: int = 0
    a: int | None = None
    o_ref: int = 0
    t_ref: int = 0


@dataclass
class UnitClocks:
    """Unit clocks: ``next[u]`` is unit ``u``'s absolute failure time, None while inactive (until a restart);
    ``il`` lifetimes of ``life`` are used."""

    scales: list
    n_group_units: int
    dom_ptr: list
    dom_groups: list
    keep: bool
    classes: list
    life: list
    next: list = field(default_factory=list)
    il: int = 0


class UnitRace:
    """Renewed unit clocks sampled as a race (``unit_sampler`` "race"), written from the model: from the last
    renewal ``t0`` every active unit has cumulative hazard ``rate_c (t - t0)^k`` (``rate_c = scale_c^-k`` for its
    class: group units, then the domain units of each level), so in the clock ``sigma = (t - t0)^k`` the next
    failure of the active units comes after an exponential of rate ``sum rate_c m_c`` (``m_c`` active units of
    class ``c``) and is a uniformly chosen active unit of a class chosen in proportion to ``rate_c m_c``.

    Each class keeps its units in a list, the active ones first; a unit going inactive swaps places with the last
    active one. Every arrival drawn takes one standard exponential of ``life``; every arrival that happens takes
    one victim draw ``v`` in ``[0, 2^32)``: ``x = v 2^-32 rate`` falls in class ``c`` if ``sum_{b<c} m_b rate_b <=
    x < sum_{b<=c} m_b rate_b`` (class order: groups, then the levels finest first; the last class with an active
    unit takes what rounding leaves over), and picks its active unit of rank ``floor((x - sum_{b<c} m_b rate_b) /
    rate_c)``. The sums are accumulated as the kernel does, class by class: the rate ``sum_c m_c rate_c`` in class
    order, then ``x`` less each class's weight in turn, so that both round alike.
    """

    def __init__(self, classes, life, picks, rates, inv_k, horizon):
        self.lists = [list(range(a, b)) for a, b in classes]
        self.cls = {u: c for c, lst in enumerate(self.lists) for u in lst}
        self.pos = {u: i for lst in self.lists for i, u in enumerate(lst)}
        self.m = [0] * len(classes)
        self.life, self.picks, self.il, self.ip = life, picks, 0, 0
        self.rates, self.inv_k = rates, inv_k
        self.horizon = horizon
        self.t0, self.sigma, self.sigma_next, self.t_next = 0, 0.0, 0.0, None
        self.trace_out = False

    def rate(self):
        total = 0.0
        for m, rate in zip(self.m, self.rates):
            total += m * rate
        return total

    def off(self, u):
        """Unit ``u`` is inactive until the next renewal."""
        c = self.cls[u]
        lst, p, last = self.lists[c], self.pos[u], self.m[c] - 1
        if p > last:
            return
        v = lst[last]
        lst[p], self.pos[v] = v, p
        lst[last], self.pos[u] = u, last
        self.m[c] -= 1

    def schedule(self):
        """The next arrival from the clock value of the last one (None with no active unit)."""
        rate = self.rate()
        if not rate > 0.0:
            self.t_next = None
            return
        if self.il >= len(self.life):
            self.trace_out = True
            return
        self.sigma_next = self.sigma + self.life[self.il] / rate
        self.il += 1
        x = self.sigma_next ** self.inv_k
        self.t_next = self.t0 + (self.horizon if not x < self.horizon else max(1, int(np.rint(x))))

    def advance(self):
        """After an arrival and the units it made inactive: the next one."""
        self.sigma = self.sigma_next
        self.schedule()

    def pick(self):
        """The unit of the arrival now due (None if the victim draws ran out)."""
        if self.ip >= len(self.picks):
            self.trace_out = True
            return None
        x = self.picks[self.ip] * (1.0 / 4294967296.0) * self.rate()
        self.ip += 1
        last = max(c for c, m in enumerate(self.m) if m > 0)
        for c in range(last + 1):
            w = self.m[c] * self.rates[c]
            if c == last or x < w:
                return self.lists[c][min(int(x / self.rates[c]), self.m[c] - 1)]
            x -= w

    def reset(self, t):
        """Every unit active and new at ``t``."""
        self.m = [len(lst) for lst in self.lists]
        self.t0, self.sigma = t, 0.0

    def renew(self, t):
        self.reset(t)
        self.schedule()

    def renew_but(self, t, m_from, dead_groups):
        """The end of a restart under stay_dead: the units that went inactive during it (since the counts were
        ``m_from``) stay inactive, and so do the units of the groups ``dead_groups`` that died during it (in the
        order they died); every other unit is new at ``t``."""
        during = [u for c in range(len(self.lists)) for u in self.lists[c][self.m[c]:m_from[c]]]
        self.reset(t)
        for u in reversed(during):
            self.off(u)
        for g in dead_groups:
            if g < len(self.lists[0]):
                self.off(g)
        self.schedule()
