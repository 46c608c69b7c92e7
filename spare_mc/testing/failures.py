"""Slow twins of the per-GPU failure draws: group lifetimes as the minimum over each group's GPUs, and a clock that
keeps every GPU's own failure time (:class:`GpuByGpuClock`, the twin of :class:`spare_mc.model.failures.PerGPUClock`).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["GpuByGpuClock", "gpu_by_gpu_group_lifetimes"]


def gpu_by_gpu_group_lifetimes(n_gpus: int, n_groups: int, gpu_mean_s: float, shape: float, rng) -> np.ndarray:
    """Group times to failure as the minimum over each group's ``M = G/N`` GPUs of iid Weibull lifetimes.

    The slow twin of the exact shortcut ``min of M Weibull(k, lam) = Weibull(k, lam M^(-1/k))``.
    """
    scale = gpu_mean_s / math.gamma(1.0 + 1.0 / shape)
    life = scale * rng.weibull(shape, size=n_gpus)
    return life.reshape(n_groups, n_gpus // n_groups).min(axis=1)


class GpuByGpuClock:
    """Slow twin of :class:`spare_mc.model.failures.PerGPUClock`: every GPU's absolute failure time, drawn at its birth.

    A group fails at its earliest GPU failure. At a restart at ``now``: ``renew`` redraws every GPU from ``now``;
    ``keep`` replaces exactly the GPUs whose failure time is ``<= now`` (the one that failed and any that failed
    while their group was down) and leaves all others untouched.
    """

    def __init__(self, model, topology, rng, start_s=0.0):
        self.model, self.rng = model, rng
        self.lam = model.gpu_mtbf_s / math.gamma(1.0 + 1.0 / model.shape)
        self.n, self.m = topology.n_groups, topology.gpus_per_group
        self.fail = start_s + self.lam * rng.weibull(model.shape, size=(self.n, self.m))

    @property
    def next_failure_s(self):
        return self.fail.min(axis=1)

    def restart(self, now_s, failed_groups):
        if self.model.age_policy == "renew":
            self.fail = now_s + self.lam * self.rng.weibull(self.model.shape, size=self.fail.shape)
        else:
            dead = self.fail <= now_s
            self.fail[dead] = now_s + self.lam * self.rng.weibull(self.model.shape, size=int(dead.sum()))
        return self.next_failure_s
