"""Default event rates per failure-domain level, derived from one public source.

Source: Meta's report on pre-training Llama 3 405B ("The Llama 3 Herd of Models", Llama Team, AI @ Meta, 2024,
arXiv:2407.21783, section 3.3.4 and its table of root causes): 16,384 H100 GPUs over a 54-day snapshot had 466 job
interruptions, 47 planned and **419 unexpected**. Of the 419, GPU issues were 58.7% (among them faulty GPUs 148 =
30.1%, HBM3 memory 72 = 17.2%, GPU SRAM 19 = 4.5%, GPU system processor 17 = 4.1%), network switches and cables 35
(8.4%), CPUs 2.

Every rate below is **events per unit per hour = events / (units x 1,296 h)** over that snapshot, with the units
counted on the default :class:`~spare_mc.Topology` sizes (8 GPUs per node, 32 per rack, 256 per power domain,
8,192 per pod), so the snapshot's cluster has 16,384 GPUs, 2,048 nodes, 512 racks, 64 power domains and 2 pods.
The mean lifetime of one unit is the inverse: ``mtbf_h = units x 1,296 / events``.

========  =======  ======  ==========  ==============================================================
level     units    events  mtbf (h)    where the events come from
========  =======  ======  ==========  ==============================================================
gpu       16,384   246     86,316      source: GPU issues, 58.7% of 419 (the per-GPU background)
node      2,048    138     19,233      assumption: every unexpected interruption that is neither a GPU
                                       nor a network event (419 - 246 - 35) took down one host
rack      512      35      18,959      assumption: every network switch/cable event took down one rack
                                       (its top-of-rack switch and the cables behind it)
power     64       (0)     27,648      assumption: none reported; rule of three, 3 / (64 x 1,296 h)
pod       2        (0)     864         assumption: none reported; rule of three, 3 / (2 x 1,296 h)
========  =======  ======  ==========  ==============================================================

Reasoning behind the assumptions (the source attributes events to components, not to failure domains):

- **node**: the remaining 138 interruptions (software bugs, host maintenance, host hardware such as the 2 CPUs,
  network adapters, ...) are charged to one host each. Some were job-wide software faults rather than a host
  failure, so this *over*-states the node rate: a pessimistic default.
- **rack**: the report does not say how many GPUs one switch or cable event took out. A cable takes out one node,
  a leaf switch a rack; charging all 35 events to whole racks is the pessimistic reading.
- **power** and **pod**: the report lists no power-domain or pod-wide outage in 54 days. Zero events in an exposure
  of ``E`` unit-hours is consistent (at 95%) with any rate up to ``3 / E`` (the "rule of three": ``exp(-3) ~ 0.05``),
  so ``E / 3`` hours is the *shortest* mean lifetime the data cannot rule out. With only 2 pods observed this bound
  is weak (36 days per pod); it is a deliberately pessimistic default for studying layouts placed against domains,
  not an estimate. Pass a measured ``domain_mtbf_s`` whenever one is known.

The numbers are rates of **interruptions** (what took the synchronous job down), not of component failures: a
masked failure under SPARe is exactly such an event that no longer interrupts.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._lib.validation import as_choice
from .topology import DOMAIN_LEVELS

__all__ = ["DomainRate", "DOMAIN_RATES", "DOMAIN_MTBF_DEFAULTS", "GPU_MTBF_DEFAULT_S", "domain_mtbf_default_s"]

#: Length of the Llama 3 snapshot, hours (54 days).
SNAPSHOT_H = 54 * 24
#: GPUs in the Llama 3 snapshot.
SNAPSHOT_GPUS = 16_384
#: Unexpected interruptions in the snapshot.
SNAPSHOT_UNEXPECTED = 419


@dataclass(frozen=True)
class DomainRate:
    """The derivation of one level's default mean lifetime.

    Attributes
    ----------
    level : str
        ``"gpu"`` or one of :data:`spare_mc.model.topology.DOMAIN_LEVELS`.
    gpus_per_unit : int
        GPUs in one unit at the default topology sizes.
    events : float
        Events charged to the level in the snapshot (for a level with none reported: the rule-of-three bound, 3).
    sourced : bool
        Whether ``events`` is a count of the source (True) or an assumption (False; see ``why``).
    why : str
        Where the events come from.
    """

    level: str
    gpus_per_unit: int
    events: float
    sourced: bool
    why: str

    @property
    def units(self) -> int:
        """Units of this level in the 16,384-GPU snapshot."""
        return SNAPSHOT_GPUS // self.gpus_per_unit

    @property
    def mtbf_h(self) -> float:
        """Mean lifetime of one unit, ``units x 1,296 h / events``."""
        return self.units * SNAPSHOT_H / self.events

    @property
    def mtbf_s(self) -> float:
        """:attr:`mtbf_h` in seconds."""
        return self.mtbf_h * 3600.0


_GPU_EVENTS = round(0.587 * SNAPSHOT_UNEXPECTED)  # 246
_NETWORK_EVENTS = 35

#: The derivation of every level (see the module docstring).
DOMAIN_RATES = {
    "gpu": DomainRate("gpu", 1, _GPU_EVENTS, True, "GPU issues: 58.7% of the 419 unexpected interruptions"),
    "node": DomainRate("node", 8, SNAPSHOT_UNEXPECTED - _GPU_EVENTS - _NETWORK_EVENTS, False,
                       "every interruption neither GPU nor network (419 - 246 - 35) charged to one host"),
    "rack": DomainRate("rack", 32, _NETWORK_EVENTS, False,
                       "every network switch/cable interruption (35, 8.4%) charged to one whole rack"),
    "power": DomainRate("power", 256, 3.0, False,
                        "none reported: rule-of-three bound 3 / (64 domains x 1,296 h)"),
    "pod": DomainRate("pod", 8192, 3.0, False, "none reported: rule-of-three bound 3 / (2 pods x 1,296 h)"),
}

#: Default mean lifetime (seconds) of one failure domain at each level of :data:`spare_mc.model.topology.DOMAIN_LEVELS`
#: (``DomainFailures(level, DOMAIN_MTBF_DEFAULTS[level], ...)``), derived in the module docstring.
DOMAIN_MTBF_DEFAULTS = {level: DOMAIN_RATES[level].mtbf_s for level in DOMAIN_LEVELS}

#: Default mean lifetime (seconds) of one GPU from the same source (the per-GPU background, long-run sense:
#: ``PerGPU(GPU_MTBF_DEFAULT_S, 1.0)`` or ``PerGPU.from_system_mtbf(..., calibration="long_run")``).
GPU_MTBF_DEFAULT_S = DOMAIN_RATES["gpu"].mtbf_s


def domain_mtbf_default_s(level: str) -> float:
    """Default mean lifetime (s) of one domain at ``level`` (:data:`DOMAIN_MTBF_DEFAULTS`).

    Examples
    --------
    >>> round(domain_mtbf_default_s("rack") / 3600)
    18959
    >>> round(domain_mtbf_default_s("pod") / 3600)
    864
    """
    return DOMAIN_MTBF_DEFAULTS[as_choice(level, "level", DOMAIN_LEVELS)]
