"""Fitting failure models to a failure log: a censored Weibull law per level, :func:`fit_failure_log` and
:class:`LogFit` (the likelihood, its maximisation and intervals: :mod:`spare_mc.logs.weibull`).

Every unit is a renewal process: it is new at the log start and as good as new again right after each failure
(repair time not counted). Its lifetimes between failures are Weibull observations; the time from its last failure
(or from the start, for a unit that never failed) to the window end is right-censored.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .._lib.validation import UsageTypeError, UsageValueError, as_choice, as_float, as_int, parse_list
from ..model import topology as _topology
from ..model.failures import DOMAIN_SIZES, DomainFailures, PerGPU
from ..model.topology import Topology
from .failure_log import FailureLog
from .weibull import CI_METHODS, LevelFit, fit_shared, lifetime_data, make_fits, weibull_mle, weibull_sums

__all__ = ["LevelFit", "LogFit", "fit_failure_log", "weibull_mle"]

_TOPOLOGY_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Topology)}


def _level_data(log: FailureLog, code: int):
    """Renewal lifetimes of one level: ``(x, censored, weights, units, rows)``."""
    name = log.levels[code]
    units = log.topology.unit_count(name)
    rows = np.flatnonzero(log.level == code)
    order = rows[np.lexsort((log.time_s[rows], log.unit[rows]))]
    u, t = log.unit[order], log.time_s[order]
    same = np.concatenate([[False], u[1:] == u[:-1]])
    prev = np.where(same, np.concatenate([[0.0], t[:-1]]), 0.0)
    x = t - prev
    if np.any(x <= 0):
        i = order[np.argmax(x <= 0)]
        raise UsageValueError(f"{log.source}: data row {i + 1}: {name} {log.unit[i]} fails at time_s="
                              f"{float(log.time_s[i])!r} with a lifetime of 0 (a failure at the log start); the "
                              f"Weibull fit needs positive lifetimes")
    last = np.concatenate([u[1:] != u[:-1], [True]]) if u.size else np.zeros(0, bool)
    cens = log.duration_s - t[last]
    cens = cens[cens > 0]
    never = units - np.unique(u).size
    xs = np.concatenate([x, cens, [log.duration_s]])
    c = np.concatenate([np.zeros(x.size, bool), np.ones(cens.size + 1, bool)])
    w = np.concatenate([np.ones(x.size + cens.size), [float(never)]])
    if never == 0 or log.duration_s == 0:
        xs, c, w = xs[:-1], c[:-1], w[:-1]
    return xs, c, w, units


@dataclass(frozen=True, eq=False)
class LogFit:
    """Per-level Weibull fits of a failure log, and the failure models they define.

    Attributes
    ----------
    fits : dict of str -> LevelFit
        One per fitted level (in level order).
    skipped : dict of str -> str
        Levels not fitted and why (e.g. fewer than 2 failures).
    shared_shape : bool
        One shape for all fitted levels (joint MLE); needed by :class:`spare_mc.DomainFailures`.
    duration_s : float
    topology : Topology
    source : str
    """

    fits: dict
    skipped: dict
    shared_shape: bool
    duration_s: float
    topology: Topology
    source: str = ""

    def failure_model(self, domain_level=None):
        """The spare_mc failure model of the fit.

        ``domain_level=None`` (or ``"gpu"``): :class:`spare_mc.PerGPU` from the ``gpu`` fit (shape, mean lifetime as
        ``gpu_mtbf_s``). A domain level: :class:`spare_mc.DomainFailures` at that level with per-GPU background,
        which needs the two fitted with a shared shape (``fit_failure_log(..., shared_shape=True)``): the sampler
        races every unit on one hazard clock. Several levels (a sequence), or ``"all"`` (every fitted domain
        level): a mixed :class:`spare_mc.DomainFailures` with every one of them at its fitted mean lifetime, the
        log's own mixture of levels.

        Examples
        --------
        >>> from spare_mc import read_failure_log
        >>> from spare_mc.logs.synthetic import example_log_path
        >>> topo = Topology(256, 32, nodes_per_rack=4, racks_per_power=2)
        >>> fit = fit_failure_log(read_failure_log(example_log_path(), topo), levels=("gpu", "node"),
        ...                       shared_shape=True)
        >>> type(fit.failure_model("node")).__name__
        'DomainFailures'
        >>> fit.failure_model("all").level_names
        ('node',)
        """
        if isinstance(domain_level, str) and domain_level == "gpu":  # the GPU level's own model: per-GPU
            domain_level = None
        if "gpu" not in self.fits:
            raise UsageValueError(f"the failure models need a `gpu` fit; fitted: {sorted(self.fits)}")
        gpu = self.fits["gpu"]
        bg = PerGPU(gpu_mtbf_s=gpu.mean_s, shape=gpu.shape)
        if domain_level is None:
            return bg
        levels = self._domain_levels(domain_level)
        if not self.shared_shape:
            raise UsageValueError("`DomainFailures` needs one Weibull shape for the domains and the per-GPU "
                                  "background: fit with shared_shape=True")
        if isinstance(domain_level, str) and domain_level != "all":
            dom = self.fits[domain_level]
            return DomainFailures(domain_level, dom.mean_s, dom.shape, background=bg)
        return DomainFailures(levels={lvl: self.fits[lvl].mean_s for lvl in levels}, shape=gpu.shape, background=bg)

    def _domain_levels(self, domain_level) -> tuple:
        """The fitted domain levels ``domain_level`` names (one, a sequence, or ``"all"``)."""
        fitted = [lvl for lvl in _topology.DOMAIN_LEVELS if lvl in self.fits]
        if isinstance(domain_level, str) and domain_level == "all":
            if not fitted:
                raise UsageValueError(f"`domain_level`='all' needs a fitted domain level; fitted: {sorted(self.fits)}")
            return tuple(fitted)
        try:
            names = (domain_level,) if isinstance(domain_level, str) else tuple(domain_level)
        except TypeError:
            raise UsageTypeError(f"`domain_level` must be a level name, a sequence of them or 'all', got "
                                 f"{type(domain_level).__name__}") from None
        if not names:
            raise UsageValueError("`domain_level` must name at least one level")
        if len(set(names)) != len(names):
            raise UsageValueError(f"`domain_level` must name each level once, got {list(names)}")
        for lvl in names:
            as_choice(lvl, "domain_level", tuple(_topology.DOMAIN_LEVELS))
            if lvl not in self.fits:
                raise UsageValueError(f"`domain_level`={lvl!r} was not fitted; fitted: {sorted(self.fits)}")
        return names

    def cli_flags(self, domain_level=None, calibration: str = "first_failure") -> dict:
        """The ``spare-mc ttt`` / sweep parameters of :meth:`failure_model` (``failures``, ``mtbf_s``, ``shape``,
        ``n_gpus``, ``calibration`` and ``domain_mtbf_s``, or for several levels ``failures="mixed"`` and
        ``domain_levels``; ``placement`` for a domain model on a strided topology, and the domain sizes it uses
        (``gpus_per_node``, ...) where they differ from :class:`Topology`'s defaults): ``mtbf_s`` is the system
        MTBF whose per-GPU calibration (:meth:`spare_mc.PerGPU.from_system_mtbf`) gives back the fitted GPU mean
        lifetime."""
        calibration = as_choice(calibration, "calibration", ("first_failure", "long_run"))
        if isinstance(domain_level, str) and domain_level == "gpu":  # as failure_model: the per-GPU model
            domain_level = None
        model = self.failure_model(domain_level)
        bg = model if domain_level is None else model.background
        g = self.topology.n_gpus
        mtbf = bg.gpu_mtbf_s / g if calibration == "long_run" else bg.gpu_mtbf_s * g ** (-1.0 / bg.shape)
        mixed = domain_level is not None and not (isinstance(domain_level, str) and domain_level != "all")
        d = {"failures": "per-gpu" if domain_level is None else "mixed" if mixed else domain_level, "mtbf_s": mtbf,
             "shape": bg.shape, "n_gpus": g, "calibration": calibration}
        if mixed:
            d["domain_levels"] = ",".join(f"{lvl}={m!r}" for lvl, m in model.levels)
        elif domain_level is not None:
            d["domain_mtbf_s"] = model.domain_mtbf_s
        if domain_level is not None and self.topology.placement != "contiguous":  # domains depend on it
            d["placement"] = self.topology.placement
        if domain_level is not None:  # the domains' sizes up to the coarsest level, where not spare-mc ttt's default
            coarsest = max(_topology.DOMAIN_LEVELS.index(lvl) for lvl in self._domain_levels(domain_level))
            d.update({k: getattr(self.topology, k) for k in DOMAIN_SIZES[:coarsest + 1]
                      if getattr(self.topology, k) != _TOPOLOGY_DEFAULTS[k]})
        return d

    def to_dict(self) -> dict:
        return {"source": self.source, "duration_s": self.duration_s, "shared_shape": self.shared_shape,
                "fits": {k: v.to_dict() for k, v in self.fits.items()}, "skipped": dict(self.skipped),
                "topology": self.topology.to_dict(),
                "assumptions": "units new at the log start, renewed at each failure (repair time not counted); "
                               "lifetimes from the last failure (or the start) to the window end right-censored",
                "ci_method": next(iter(self.fits.values())).ci_method if self.fits else "wald",
                "ci_method_text": ("profile likelihood (other parameters maximised out, chi-square 1 d.f.)"
                                   if self.fits and next(iter(self.fits.values())).ci_method == "profile" else
                                   "Wald on log k and log scale from the observed information (analytic Hessian); "
                                   "delta method for the mean")}


def fit_failure_log(log: FailureLog, *, levels=None, shared_shape: bool = False, min_failures: int = 10,
                    level: float = 0.95, ci: str = "wald") -> LogFit:
    """Fit a Weibull lifetime law per level of a failure log by maximum likelihood, with confidence intervals.

    Parameters
    ----------
    log : FailureLog
    levels : sequence of str, optional
        Levels to fit (default: every level of the topology with at least ``min_failures`` failures; the others
        are listed in :attr:`LogFit.skipped`). Named levels with too few failures are an error.
    shared_shape : bool
        Fit one shape for all the levels jointly (each keeps its scale); :meth:`LogFit.failure_model` needs it for
        domain failures. It needs two or more fitted levels (with one it would change nothing: refused).
    min_failures : int
        Fewest failures a level needs (>= 2; default 10: with fewer the Wald intervals are not to be trusted).
    level : float
        Confidence level of the intervals.
    ci : {"wald", "profile"}
        Wald intervals from the observed information (default) or profile-likelihood intervals (see
        :func:`weibull_mle`; closer to their level with few failures).

    Returns
    -------
    LogFit

    Notes
    -----
    Each unit of a level (``topology`` numbering; all of them, failed or not) is a renewal process: new at the log
    start, as good as new right after each failure. Its lifetimes are the gaps between its failures (the first from
    time 0); the gap from its last failure, or the whole window for a unit that never failed, is right-censored at
    ``duration_s``. The censored Weibull likelihood and its intervals are those of :func:`weibull_mle` (with a
    shared shape: the profile score summed over levels, one scale per level, the joint observed information).
    Units are independent; a domain failure is counted at its own level only (the GPUs it takes down are not GPU
    failures).
    """
    if not isinstance(log, FailureLog):
        raise UsageTypeError(f"`log` must be a FailureLog, got {type(log).__name__}")
    if not isinstance(shared_shape, bool):
        raise UsageTypeError(f"`shared_shape` must be a bool, got {shared_shape!r}")
    min_failures = as_int(min_failures, "min_failures", min_value=2)
    level = as_float(level, "level", positive=True, max_value=1.0, max_inclusive=False)
    ci = as_choice(ci, "ci", CI_METHODS)
    explicit = levels is not None
    if levels is None:
        levels = log.levels
    elif isinstance(levels, str):
        levels = parse_list(levels, "levels", what="level names")  # (the command line's --levels)
    names = []
    for name in levels:
        as_choice(name, "levels", log.levels)
        if name in names:  # a repeated level would be fitted (and reported) once: say so rather than drop it
            raise UsageValueError(f"`levels` must name each level once, got {name!r} twice")
        names.append(name)
    if not names:
        raise UsageValueError(f"`levels` must name at least one level of the log ({', '.join(log.levels)})")
    data, extra, fitted, skipped = [], [], [], {}
    for name in names:
        code = log.levels.index(name)
        failures = int((log.level == code).sum())
        if failures < min_failures:
            why = f"{failures} failures (fewer than min_failures={min_failures})"
            if explicit:
                raise UsageValueError(f"`levels`: level {name!r} has {why}; it cannot be fitted")
            skipped[name] = why
            continue
        x, c, w, units = _level_data(log, code)
        lx, fail, ww, d, sf = lifetime_data(x, c, w)
        data.append((lx, fail, ww, d, sf))
        extra.append({"units": units, "failures": failures, "censored": round((ww * ~fail).sum()),
                      "exposure_s": float((ww * np.exp(lx)).sum())})
        fitted.append(name)
    if not fitted:
        raise UsageValueError(f"no level of {log.source!r} has at least min_failures={min_failures} failures")
    if shared_shape and len(fitted) < 2:  # one level: a shared shape would be that level's own, silently
        why = "".join(f"; {name}: {w}" for name, w in skipped.items())
        raise UsageValueError(f"`shared_shape`=True needs two or more fitted levels (one shape shared by them), got "
                              f"only {fitted[0]!r}{why}: drop it, or fit more levels")
    fits = {}
    if shared_shape:
        try:
            k, b, cov, _ = fit_shared(data)
        except UsageValueError as e:
            raise UsageValueError(f"the levels {fitted} of {log.source!r} fitted with one shape: {e}") from None
        for L, ex in enumerate(extra):
            lx, fail, w, d, sf = data[L]
            sz = weibull_sums(k, lx, fail, w, b[L])[0]
            ex["loglik"] = d * math.log(k) - d * k * b[L] + (k - 1) * sf - sz
        fits = make_fits(fitted, k, b, cov, extra, level, ci, data)
    else:
        for L, name in enumerate(fitted):
            try:
                k, b, cov, loglik = fit_shared([data[L]])
            except UsageValueError as e:  # say which level's data the fit failed on
                raise UsageValueError(f"level {name!r} of {log.source!r}: {e}") from None
            fits.update(make_fits([name], k, b, cov, [{**extra[L], "loglik": loglik}], level, ci, [data[L]]))
    return LogFit(fits, skipped, shared_shape, log.duration_s, log.topology, log.source)
