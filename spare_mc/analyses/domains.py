"""What correlated failures cost, and what a layout placed against the failure domains wins back.

The study behind ``spare-mc reproduce --table domains`` and ``spare-mc domains`` (docs/domains.md). At the paper's
scale (600,000 GPUs in ``N`` groups, contiguous placement unless said) the failures are one level of failure
domains -- node (8 GPUs), rack (32), power domain (256) or pod (8,192) -- on top of independent per-GPU failures
(the background, calibrated to the paper's 300 s system MTBF, Weibull ``k = 0.78``, renewed at restarts). A domain
event kills every group with a GPU in it. Each domain's mean lifetime is the level's default of
:data:`spare_mc.model.domain_rates.DOMAIN_MTBF_DEFAULTS` (derived from the Llama 3 405B report, the assumptions stated
there); ``levels`` may also hold ``"none"``: the background alone, the paper's independent failures. At the
``N`` of ``mixed_n_values`` (default 600) one more row set, level ``"all"``, runs every level at once, each at its
default rate (``DomainFailures.at_default_rates``); its domain-aware layouts are placed against the coarsest level
that admits one (``placed_level``; levels nest, so they avoid every finer level's domains too).

For every ``N``, level, strategy and layout -- SPARe (``r`` from ``spare_r``) with unit-stride cyclic stacking,
Sidon offsets, independent random holders, domain-aware Sidon offsets (``domain-aware``:
:func:`spare_mc.model.placement.domain_aware` with ``sidon=True``) and the evenly spread domain-aware offsets
(``domain-aware-spread``, ``sidon=False``); Rep (``rep_r``) with consecutive replica sets and domain-aware ones --
the study measures

- ``masked``: the masked failures before the first wipe-out of a fresh system (:func:`spare_mc.wipeout_mc` under
  the same failure model), mean and 95% CI;
- ``ttt_over_t0``: the time to train over ``T0`` with checkpoint/restart (:func:`spare_mc.simulate_ttt`, the
  paper's setting otherwise, the checkpoint period at the theory optimum of the 300 s MTBF), mean and 95% CI;
- the paired difference of ``ttt_over_t0`` against the domain-aware layout of the same strategy at the same ``N``
  and level (the jobs of one replication share their failure trace seed), with its 95% CI: what being blind to the
  domains costs.

A layout that no construction can place (e.g. Sidon offsets at a density the search does not reach, or a domain
touching more groups than a domain-aware layout allows) is reported as a row with ``"error"``, never dropped
silently.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

from .._lib.dist import t_ppf
from .._lib.processes import each_in_processes
from .._lib.resources import check_local_workers
from .._lib.validation import UsageTypeError, UsageValueError, as_choice, as_float, as_int, check_unique
from ..mc.survivability import wipeout_mc
from ..model.domain_rates import DOMAIN_MTBF_DEFAULTS
from ..model.failures import DomainFailures, PerGPU, check_shape
from ..model.topology import DOMAIN_LEVELS, Topology
from ..ttt.config import TimelineConfig
from ..ttt.run import simulate_ttt

__all__ = ["DomainStudy", "DOMAIN_STUDY_LAYOUTS", "run_domain_study", "domain_study_rows"]

#: Layouts per strategy (the study's column ``layout``).
DOMAIN_STUDY_LAYOUTS = {"spare": ("cyclic", "sidon", "random", "domain-aware", "domain-aware-spread"),
                        "rep": ("block", "domain-aware")}


@dataclass(frozen=True)
class DomainStudy:
    """Settings of the domain study (defaults: the full study; :meth:`quick`: a smoke-sized one).

    Attributes
    ----------
    n_values : tuple of int
        Group counts ``N`` (each must divide ``n_gpus``).
    levels : tuple of str
        Failure-domain levels (``"node"``, ``"rack"``, ``"power"``, ``"pod"``), and ``"none"`` for the background
        alone.
    spare_r : dict
        SPARe's ``r`` per ``N`` (the paper's optima, 8-10).
    rep_r : int
        Rep's ``r`` (the paper's optimum, 3).
    n_gpus, placement, mtbf_s, shape : the system (600,000 GPUs, contiguous, 300 s, 0.78).
    n_steps : int
        Steps of each job (the paper's 10,000).
    wipeout_reps, ttt_reps : int
        Replications of the wipe-out Monte Carlo and of the time to train per row.
    seed : int
        Root seed (every row of one ``N`` uses the same one: the layouts see the same traces).
    max_wall_factor : float
        A job stops at ``max_wall_factor x T0`` (the timeline's cap; its TTT then enters as a restricted mean, and
        the row's ``capped_fraction`` says how many did).
    mixed_n_values : tuple of int
        The ``N`` of ``n_values`` that also get the row set of level ``"all"``: every domain level at once, each at
        its default rate, on top of the background (``N`` not in ``n_values`` are skipped).
    """

    n_values: tuple = (200, 600, 1000)
    levels: tuple = ("none", "node", "rack", "power", "pod")
    spare_r: dict = field(default_factory=lambda: {200: 8, 600: 8, 1000: 10})
    rep_r: int = 3
    n_gpus: int = 600_000
    placement: str = "contiguous"
    mtbf_s: float = 300.0
    shape: float = 0.78
    n_steps: int = 10_000
    wipeout_reps: int = 2000
    ttt_reps: int = 100
    seed: int = 0
    max_wall_factor: float = 100.0
    mixed_n_values: tuple = (600,)

    @classmethod
    def quick(cls, **kw) -> "DomainStudy":
        """A smoke-sized study (seconds): N = 200, rack level and the background, 1,000 steps, few replications."""
        base = dict(n_values=(200,), levels=("none", "rack"), n_steps=1000, wipeout_reps=300, ttt_reps=8)
        return cls(**{**base, **kw})

    def __post_init__(self):
        for name in ("n_values", "levels", "mixed_n_values"):
            if isinstance(getattr(self, name), (str, bytes)) or not hasattr(getattr(self, name), "__iter__"):
                raise UsageTypeError(f"`{name}` must be a sequence, got {type(getattr(self, name)).__name__}")
        if not isinstance(self.spare_r, dict):
            raise UsageTypeError(f"`spare_r` must be a dict N -> r, got {type(self.spare_r).__name__}")
        n_values = tuple(as_int(n, "n_values", min_value=2) for n in self.n_values)
        check_unique(n_values, "n_values")
        if not n_values:
            raise UsageValueError("`n_values` must not be empty")
        n_gpus = as_int(self.n_gpus, "n_gpus", min_value=2)
        for n in n_values:
            if n_gpus % n:
                raise UsageValueError(f"every N in `n_values` must divide n_gpus={n_gpus}, got N={n}")
            if n not in self.spare_r:
                raise UsageValueError(f"`spare_r` must give SPARe's r for every N, missing N={n}")
        levels = tuple(as_choice(x, "levels", ("none",) + tuple(DOMAIN_LEVELS)) for x in self.levels)
        check_unique(levels, "levels")
        if not levels:
            raise UsageValueError("`levels` must not be empty")
        object.__setattr__(self, "n_values", n_values)
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "n_gpus", n_gpus)
        object.__setattr__(self, "rep_r", as_int(self.rep_r, "rep_r", min_value=2))
        object.__setattr__(self, "spare_r", {int(k): as_int(v, "spare_r", min_value=2) for k, v in self.spare_r.items()})
        object.__setattr__(self, "mtbf_s", as_float(self.mtbf_s, "mtbf_s", positive=True))
        object.__setattr__(self, "shape", check_shape(self.shape))
        object.__setattr__(self, "seed", as_int(self.seed, "seed", min_value=0))
        mwf = as_float(self.max_wall_factor, "max_wall_factor", positive=True)
        if mwf <= 1.0:
            raise UsageValueError(f"`max_wall_factor` must be > 1 (the cap is that many times T0), got {mwf}")
        object.__setattr__(self, "max_wall_factor", mwf)
        object.__setattr__(self, "mixed_n_values",
                           tuple(as_int(n, "mixed_n_values", min_value=2) for n in self.mixed_n_values))
        check_unique(self.mixed_n_values, "mixed_n_values")
        for name in ("n_steps", "wipeout_reps", "ttt_reps"):
            object.__setattr__(self, name, as_int(getattr(self, name), name, min_value=2))
        as_choice(self.placement, "placement", ("contiguous", "strided"))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["spare_r"] = {str(k): v for k, v in self.spare_r.items()}
        return d

    def failure_model(self, level: str, n: int) -> tuple:
        """The failure model of the rows at one level and ``N = n``, and its topology (``n`` groups on
        :attr:`n_gpus` GPUs): the per-GPU background alone for ``level="none"``, every level at its default rate
        over it for ``"all"``, else ``level``'s domains at their default rate over it. Returns ``(failures,
        topology)``."""
        topo = Topology(self.n_gpus, n, placement=self.placement)
        bg = PerGPU.from_system_mtbf(self.mtbf_s, self.n_gpus, self.shape, "renew")
        if level == "none":
            return bg, topo
        if level == "all":
            return DomainFailures.at_default_rates(self.shape, background=bg), topo
        return DomainFailures(level, DOMAIN_MTBF_DEFAULTS[level], self.shape, background=bg), topo

    def timeline_config(self, strategy: str, layout: str, n: int, r: int, failures, topology) -> TimelineConfig:
        """The job of one row: ``strategy`` at ``N = n`` with redundancy ``r`` on the study's ``layout`` (a name of
        :data:`DOMAIN_STUDY_LAYOUTS`: ``"domain-aware"`` is SPARe's domain-aware Sidon offsets or Rep's placed
        sets, ``"domain-aware-spread"`` SPARe's evenly spread cyclic offsets), under ``failures`` on
        ``topology`` (:meth:`failure_model`)."""
        kw = dict(r=r, n_steps=self.n_steps, failures=failures, topology=topology,
                  max_wall_factor=self.max_wall_factor)
        if strategy == "spare":
            kw["layout"] = {"domain-aware": "sidon", "domain-aware-spread": "cyclic"}.get(layout, layout)
        if layout.startswith("domain-aware"):
            kw["domain_aware"] = True
        return TimelineConfig(strategy, n, **kw)


def run_domain_study(study: DomainStudy | None = None, *, progress=None, workers: int = 1) -> dict:
    """Run the study; returns ``{"rows": [...], "settings": ..., "elapsed_s": ...}``.

    Each row: ``n_groups, level, strategy, layout, r, masked_mean, masked_ci95, ttt_over_t0, ttt_over_t0_ci95,
    ttt_vs_domain_aware`` (paired difference and CI, absent for the domain-aware rows themselves) and
    ``capped_fraction``; or ``error`` (why the layout cannot be built) instead of the estimates. No paired
    difference is given where either layout had a job stopped at the cap (``ttt_vs_domain_aware_note`` says so).
    The domain-aware rows of level ``"all"`` also say which level they are placed against (``placed_level``).
    The rows of one ``N`` and level use the same seed whatever else runs, so adding the ``"all"`` rows leaves
    the others unchanged, and the rows are the same whatever the number of ``workers``.

    Parameters
    ----------
    study : DomainStudy, optional
        The settings (default: the full study).
    progress : callable, optional
        Called with a line of text per finished row (with several workers, a block's lines when the block is done).
    workers : int
        Blocks of rows (one ``N`` and level each) computed at once, each in its own process (1: in this process).
        With several, the first block runs in this process first (a cold numba cache compiles the study's kernels
        there, once), then the others in the workers. Scripts that pass ``workers > 1`` need an
        ``if __name__ == "__main__":`` guard (the processes are spawned).
    """

    study = DomainStudy() if study is None else study
    if not isinstance(study, DomainStudy):
        raise UsageTypeError(f"`study` must be a DomainStudy, got {type(study).__name__}")
    if progress is not None and not callable(progress):  # checked before any row is computed
        raise UsageTypeError(f"`progress` must be a function of one line of text (or None), got "
                             f"{type(progress).__name__}")
    workers = check_local_workers(as_int(workers, "workers", min_value=1), scheduler=False)
    t_start = time.perf_counter()
    blocks = [(n, level) for n in study.n_values
              for level in study.levels + (("all",) if n in study.mixed_n_values else ())]
    done = {}
    # the first block here, each row's line as soon as it is computed: on a cold numba cache it compiles every
    # kernel the study runs (one N and level runs them all) once, before any worker starts, so that the workers
    # load them instead of each compiling them at once; then the others, in the workers if there are several
    for n, level in blocks if workers == 1 else blocks[:1]:
        done[n, level] = _block_rows(study, n, level, progress)
    if workers > 1:
        tasks = [(study, n, level) for n, level in blocks[1:]]
        for i, rows in each_in_processes(_block_task, tasks, workers):
            done[blocks[1 + i]] = rows
            for row in rows:
                if progress is not None and "error" not in row:
                    progress(_row_line(row))
    rows = [row for block in blocks for row in done[block]]
    return {"rows": rows, "settings": study.to_dict(), "elapsed_s": time.perf_counter() - t_start}


def _row_line(row: dict) -> str:
    """A computed row's progress line."""
    return (f"N={row['n_groups']} {row['level']:5} {row['strategy']:5} {row['layout']:12} r={row['r']}: masked "
            f"{row['masked_mean']:.2f}, TTT/T0 {row['ttt_over_t0']:.3f}")


def _block_task(args) -> list:
    """:func:`_block_rows` of ``(study, n, level)`` in a worker process (no progress lines: the caller prints them)."""
    study, n, level = args
    return _block_rows(study, n, level, None)


def _block_rows(study: DomainStudy, n: int, level: str, progress) -> list:
    """The rows of one ``N`` and level (every strategy and layout), with their paired differences against the
    domain-aware layout of the same strategy (the jobs of one replication share their trace seed).

    Parameters
    ----------
    study : DomainStudy
    n : int
        ``N``, one of ``study.n_values``.
    level : str
        A level of ``study.levels``, or ``"all"``.
    progress : callable or None
        Called with each computed row's line.

    Returns
    -------
    list of dict
        The rows, in the order of :data:`DOMAIN_STUDY_LAYOUTS` (see :func:`run_domain_study`).
    """

    failures, topo = study.failure_model(level, n)
    rows, per_strategy = [], {}
    for strategy in DOMAIN_STUDY_LAYOUTS:  # SPARe, then Rep
        r = study.spare_r[n] if strategy == "spare" else study.rep_r
        for layout in DOMAIN_STUDY_LAYOUTS[strategy]:
            row = {"n_groups": n, "level": level, "strategy": strategy, "layout": layout, "r": r,
                   "placement": study.placement}
            if layout.startswith("domain-aware") and level == "none":
                continue  # without domains there is nothing to place against
            try:  # the wipe-out Monte Carlo runs on the job's own layout (random: a new one per trial)
                cfg = study.timeline_config(strategy, layout, n, r, failures, topo)
                fresh = cfg.random_layout
                lay = "random" if fresh else cfg.layout_object()
                if level == "all" and cfg.domain_aware:
                    row["placed_level"] = cfg.domain_level
            except UsageValueError as e:
                row["error"] = str(e)
                rows.append(row)
                continue
            wkw = dict(failures=failures, topology=topo, rng=study.seed)
            if fresh:
                w = wipeout_mc(lay, study.wipeout_reps, n_groups=n, r=r, fresh_layout=True, **wkw)
            else:
                w = wipeout_mc(lay, study.wipeout_reps, **wkw)
            m = w.estimate("masked")
            res = simulate_ttt(cfg, study.ttt_reps, rng=study.seed)
            e = res.estimate("ttt_over_t0")
            row.update(masked_mean=m.mean, masked_ci95=list(m.ci), ttt_over_t0=e.mean,
                       ttt_over_t0_ci95=list(e.ci), capped_fraction=res.capped_fraction)
            per_strategy[(strategy, layout)] = res.values("ttt_over_t0")
            rows.append(row)
            if progress is not None:
                progress(_row_line(row))
    for row in rows:
        if "error" in row or row["layout"] == "domain-aware":
            continue
        ref = per_strategy.get((row["strategy"], "domain-aware"))
        if ref is None:
            continue
        capped = {r["capped_fraction"] for r in rows
                  if r["strategy"] == row["strategy"] and r["layout"] in (row["layout"], "domain-aware")}
        if max(capped) > 0:  # a capped job enters at the cap: a difference of restricted means says nothing
            row["ttt_vs_domain_aware_note"] = "not compared: capped jobs on one side"
            continue
        d = per_strategy[(row["strategy"], row["layout"])] - ref
        mean = float(d.mean())
        half = float(t_ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size))
        row["ttt_vs_domain_aware"] = mean
        row["ttt_vs_domain_aware_ci95"] = [mean - half, mean + half]
    return rows


def domain_study_rows(result: dict) -> list:
    """The rows of ``spare-mc reproduce --table domains --json``: the keys the table promises, in order."""
    keys = ("n_groups", "level", "placed_level", "layout", "r", "strategy", "placement", "masked_mean", "masked_ci95",
            "ttt_over_t0",
            "ttt_over_t0_ci95", "capped_fraction", "ttt_vs_domain_aware", "ttt_vs_domain_aware_ci95",
            "ttt_vs_domain_aware_note", "error")
    return [{k: row[k] for k in keys if k in row} for row in result["rows"]]
