"""Command line: ``spare-mc <command> ...``.

Commands
--------
``mu``
    Masked failures of a layout: Monte Carlo of the wipe-out index ``T`` next to the exact value (where one
    exists) and the paper's closed form. ``--json`` prints one JSON object.
``overhead``
    ReCtlr at every failure until the wipe-out: measured stack number ``S*`` vs its lower bound ``c(k)`` (with the
    exact bound where one exists and the paper's approximation), Phase-0 rate, moves and patch size, each with a
    95% confidence interval.
``ttt``
    Time to train of one strategy (CKPT-only, Rep+CKPT, SPARe+CKPT) by the event-driven timeline: ``TTT/T0`` and
    availability with CIs, the time breakdown, failures and wipe-outs (paper defaults for every time parameter).
``sweep SPEC``
    Run (or resume) a parameter sweep described by a TOML spec on a local dask cluster or ``--scheduler ADDRESS``;
    writes an xarray dataset (NetCDF) with per-replication values, means, CIs and provenance.
``compare DATASET``
    Every grid point of a stored sweep against its exact value (Holm-corrected across the grid).
``plot DATASET``
    Figures of a stored sweep (PNG).
``reproduce [--quick]``
    Every study of ``experiments/`` (sweeps on the local cluster or ``--scheduler``), the paper's main table and
    all figures, under ``data/`` (``data/quick/`` for the quick flavour). ``--table main`` runs only the main
    table: every strategy at its best ``r`` and checkpoint period for N = 200, 600, 1000, and SPARe's
    time-to-train reduction over Rep+CKPT.

Bad arguments exit with status 2 and one line on stderr naming the parameter; no traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from . import __version__
from .closed_forms import mu_expansion, mu_paper
from .exact import EXACT_LAYOUTS, exact_wipeout
from .layouts import LAYOUT_KINDS
from .stats import compare
from .survivability import wipeout_mc
from ._validation import UsageError, UsageValueError


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        raise _CliError(message)


class _CliError(Exception):
    pass


def _build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="spare-mc", description="SPARe reliability Monte Carlo toolkit")
    p.add_argument("--version", action="version", version=f"spare-mc {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    mu = sub.add_parser("mu", help="masked failures: Monte Carlo vs exact vs the paper's closed form")
    mu.add_argument("--n-groups", type=int, required=True, help="number of data-parallel groups N")
    mu.add_argument("--r", type=int, required=True, help="redundancy r (holders per shard type)")
    mu.add_argument("--layout", choices=LAYOUT_KINDS, default="cyclic",
                    help="cyclic (unit stride), sidon, random (fresh layout per trial), block (Rep)")
    mu.add_argument("--trials", type=int, default=100_000, help="Monte Carlo trials (default 100000)")
    mu.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    mu.add_argument("--with-replacement", action="store_true",
                    help="let failures hit already dead groups (a different quantity; named variant)")
    mu.add_argument("--json", action="store_true", help="print one JSON object")
    ov = sub.add_parser("overhead", help="ReCtlr until wipe-out: measured stack number, Phase-0 rate, moves, patch")
    ov.add_argument("--n-groups", type=int, required=True, help="number of data-parallel groups N")
    ov.add_argument("--r", type=int, required=True, help="redundancy r (holders per shard type)")
    ov.add_argument("--layout", choices=LAYOUT_KINDS, default="cyclic",
                    help="cyclic (unit stride), sidon, random (fresh layout per trial), block")
    ov.add_argument("--trials", type=int, default=2000, help="Monte Carlo trials (default 2000)")
    ov.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    ov.add_argument("--json", action="store_true", help="print one JSON object")
    tt = sub.add_parser("ttt", help="time to train of one strategy (event-driven timeline with ReCtlr)")
    tt.add_argument("--strategy", choices=("ckpt", "rep", "spare"), required=True)
    tt.add_argument("--n-groups", type=int, required=True, help="number of data-parallel groups N")
    tt.add_argument("--r", type=int, default=None, help="redundancy (default: 1 for ckpt, 3 for rep, 8 for spare)")
    period = tt.add_mutually_exclusive_group()
    period.add_argument("--ckpt-period-s", type=float, default=None, help="checkpoint period T_c in seconds")
    period.add_argument("--ckpt-period", choices=("optimal",), default=None,
                        help="'optimal' = T_c* of the availability model (default)")
    tt.add_argument("--reps", type=int, default=50, help="replications (default 50)")
    tt.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    _add_timeline_options(tt)
    tt.add_argument("--json", action="store_true", help="print one JSON object")
    sw = sub.add_parser("sweep", help="run or resume a parameter sweep (TOML spec) on dask")
    sw.add_argument("spec", help="path of the TOML sweep spec")
    sw.add_argument("--scheduler", default=None, help="address of an existing dask scheduler (tcp://host:port)")
    sw.add_argument("--out", default=None, help="dataset path (default data/<name>.nc)")
    sw.add_argument("--workers", type=int, default=None,
                    help="local worker processes (default: CPUs; 0 = in this process without dask)")
    sw.add_argument("--json", action="store_true", help="print a JSON summary")
    cp = sub.add_parser("compare", help="compare a stored sweep with exact values (Holm-corrected)")
    cp.add_argument("dataset", help="path of a dataset written by spare-mc sweep")
    cp.add_argument("--alpha", type=float, default=1e-3, help="family-wise level (default 1e-3)")
    cp.add_argument("--json", action="store_true", help="print one JSON object")
    rp = sub.add_parser("reproduce", help="every study, the paper's main table and the figures (or --table main)")
    pl = sub.add_parser("plot", help="figures of a stored sweep dataset")
    pl.add_argument("dataset", nargs="+", help="dataset path(s) written by spare-mc sweep")
    pl.add_argument("--out", default="data/figures", help="output directory (default data/figures)")
    pl.add_argument("--json", action="store_true", help="print a JSON summary")
    rp.add_argument("--table", choices=("main",), default=None, help="run only the main table")
    rp.add_argument("--workers", type=int, default=None, help="local worker processes for the sweeps")
    rp.add_argument("--scheduler", default=None, help="address of an existing dask scheduler for the sweeps")
    rp.add_argument("--n-values", default=None,
                    help="comma-separated N values (default: experiments/main_table.toml, 200,600,1000)")
    rp.add_argument("--reps", type=int, default=None,
                    help="replications per grid point (default: experiments/main_table.toml, 20; quick 6)")
    rp.add_argument("--confirm-reps", type=int, default=None,
                    help="replications of each selected optimum on fresh seeds (default 50; quick 12)")
    rp.add_argument("--quick", action="store_true", help="fewer replications (a few minutes on 2 cores)")
    rp.add_argument("--seed", type=int, default=None, help="root seed (default: experiments/main_table.toml, 0)")
    _add_timeline_options(rp)
    rp.add_argument("--json", action="store_true", help="print one JSON object")
    return p


_TIMELINE_OPTIONS = (("n_steps", int), ("compute_s", float), ("allreduce_s", float), ("mtbf_s", float),
                     ("shape", float), ("restart_s", float), ("save_s", float), ("shrink_s", float),
                     ("rectlr_s", float), ("jitter_sd", float), ("max_wall_factor", float))


def _add_timeline_options(p) -> None:
    from .timeline import TimelineConfig

    defaults = TimelineConfig("spare", 600, r=2)
    for name, kind in _TIMELINE_OPTIONS:
        dflt = getattr(defaults, name)
        text = "2 + 8 (N - 200)/800 s" if name == "allreduce_s" else dflt
        p.add_argument("--" + name.replace("_", "-"), type=kind, default=None, help=f"default {text}")
    p.add_argument("--no-live-scaling", action="store_true",
                   help="failure rate does not fall as groups die (default: proportional to live GPUs)")
    p.add_argument("--layout", choices=("cyclic", "sidon"), default=None, help="SPARe layout (default cyclic)")
    p.add_argument("--failures", choices=("system", "per-gpu", "node", "rack", "power"), default="system",
                   help="system-level renewal (default), per-GPU lifetimes, or failure domains at a level on top of "
                        "per-GPU lifetimes (same system MTBF and shape)")
    p.add_argument("--age-policy", choices=("renew", "keep"), default="renew",
                   help="GPU ages at a global restart for per-GPU / domain failures (default renew)")
    p.add_argument("--domain-mtbf-s", type=float, default=None, help="mean lifetime of one failure domain")
    p.add_argument("--n-gpus", type=int, default=600_000, help="GPUs in the system (default 600000)")
    p.add_argument("--placement", choices=("contiguous", "strided"), default="contiguous",
                   help="how groups map onto nodes and racks (default contiguous)")


def _timeline_overrides(args, n_groups=None) -> dict:
    from .failures import DomainFailures, PerGPU
    from .topology import Topology

    d = {name: getattr(args, name) for name, _ in _TIMELINE_OPTIONS if getattr(args, name) is not None}
    if args.no_live_scaling:
        d["live_scaling"] = False
    if args.layout is not None:
        d["layout"] = args.layout
    if args.failures == "system":
        if args.domain_mtbf_s is not None:
            raise UsageValueError("`--domain-mtbf-s` needs `--failures` node, rack or power")
        return d
    mtbf = d.get("mtbf_s", 300.0)
    shape = d.get("shape", 0.78)
    bg = PerGPU.from_system_mtbf(mtbf, args.n_gpus, shape, args.age_policy)
    if args.failures == "per-gpu":
        d["failures"] = bg
    else:
        if args.domain_mtbf_s is None:
            raise UsageValueError(f"`--domain-mtbf-s` is required with `--failures {args.failures}`")
        d["failures"] = DomainFailures(args.failures, args.domain_mtbf_s, shape, background=bg)
    if n_groups is not None:
        d["topology"] = Topology(args.n_gpus, n_groups, placement=args.placement)
    return d


def _json_default(x):
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def _check_replications_and_seed(count, flag, seed) -> None:
    """The rules every command shares: at least 2 replications (for a standard error), a non-negative seed."""
    if count < 2:
        raise UsageValueError(f"`{flag}` must be >= 2 to estimate a standard error, got {count}")
    if seed < 0:
        raise UsageValueError(f"`--seed` must be >= 0, got {seed}")


def _finite(x):
    return None if x is None or not math.isfinite(x) else float(x)


def run_mu(args) -> dict:
    """The ``mu`` command as a dict (what ``--json`` prints)."""
    from .failures import UniformOrder

    _check_replications_and_seed(args.trials, "--trials", args.seed)
    exact = None
    if args.layout in EXACT_LAYOUTS and not args.with_replacement:
        exact = exact_wipeout(args.layout, args.n_groups, args.r)  # validates N, r first
    res = wipeout_mc(args.layout, args.trials, n_groups=args.n_groups, r=args.r,
                     failures=UniformOrder(with_replacement=args.with_replacement),
                     rng=np.random.SeedSequence(args.seed))
    est = res.estimate("T")
    out = {
        "n_groups": args.n_groups, "r": args.r, "layout": args.layout, "trials": args.trials, "seed": args.seed,
        "with_replacement": args.with_replacement,
        "T_definition": "1-based index of the failure causing the first wipe-out; masked failures = T - 1",
        "exact_mean_T": None if exact is None else exact.mean,
        "exact_sd_T": None if exact is None else exact.sd,
        "mc_mean_T": est.mean, "mc_se_T": est.se, "mc_sd_T": est.sd, "mc_ci95_T": list(est.ci),
        "mc_masked_mean": res.estimate("masked").mean,
        "paper_mu": mu_paper(args.n_groups, args.r),
        "mu_expansion_random": mu_expansion(args.n_groups, args.r),
    }
    if exact is not None:
        c = compare(est, exact.mean, alpha=1e-3)
        out.update(mc_vs_exact_z=_finite(c.z), mc_vs_exact_p=c.p_value, mc_vs_exact_consistent=c.consistent)
    return out


def run_overhead(args) -> dict:
    """The ``overhead`` command as a dict (what ``--json`` prints)."""
    from .closed_forms import overhead_lower_bound
    from .reorder import exact_stack_bound_sum, overhead_mc
    from .stats import MCEstimate

    _check_replications_and_seed(args.trials, "--trials", args.seed)
    res = overhead_mc(args.layout, args.trials, n_groups=args.n_groups, r=args.r,
                      rng=np.random.SeedSequence(args.seed))
    out = {"seed": args.seed, **res.summary(),
           "epoch_convention": "epoch k = after k failures, k = 0..T-1, S_0 = 1 unless the top layer is not a "
                               "perfect assignment; ReCtlr rates are per masked failure",
           "paper_overhead_lower_bound": overhead_lower_bound(args.n_groups, args.r)}
    if args.layout in EXACT_LAYOUTS:
        total, mean_t, ratio = exact_stack_bound_sum(args.layout, args.n_groups, args.r)
        out["exact_c_mean"] = ratio
        est = res.estimate("c_mean")
        c = compare(MCEstimate("c_mean", est.mean, est.se, est.sd, est.n), ratio, alpha=1e-3)
        out.update(c_mean_vs_exact_z=_finite(c.z), c_mean_vs_exact_p=c.p_value,
                   c_mean_vs_exact_consistent=c.consistent)
    return out


def run_ttt(args) -> dict:
    """The ``ttt`` command as a dict."""
    from .optimize import theory_ttt
    from .timeline import TimelineConfig, simulate_ttt

    _check_replications_and_seed(args.reps, "--reps", args.seed)
    r = args.r if args.r is not None else {"ckpt": 1, "rep": 3, "spare": 8}[args.strategy]
    cfg = TimelineConfig(args.strategy, args.n_groups, r=r, ckpt_period_s=args.ckpt_period_s,
                         **_timeline_overrides(args, args.n_groups))
    res = simulate_ttt(cfg, args.reps, seed=args.seed)
    out = {"seed": args.seed, **res.summary(), "config": cfg.to_dict()}
    out["ckpt_period_rule"] = "given" if args.ckpt_period_s is not None else "optimal (theory T_c*)"
    out["theory"] = theory_ttt(cfg)
    out["availability_definition"] = ("uptime / wall clock; uptime = kept step time (useful + redundant + patch "
                                      "compute + all-reduce + ReCtlr/shrink); not checkpoints, restarts, lost work")
    return out


def run_sweep_cmd(args) -> dict:
    """The ``sweep`` command."""
    from .sweep import SweepSpec, run_sweep

    if not __import__("os").path.exists(args.spec):
        raise UsageValueError(f"`spec` file not found: {args.spec}")
    spec = SweepSpec.from_file(args.spec)
    ds = run_sweep(spec, args.out, scheduler=args.scheduler, workers=args.workers)
    out = args.out or f"data/{spec.name}.nc"
    return {"dataset": out, "name": spec.name, "quantity": spec.quantity, "dims": dict(ds.sizes),
            "spec_digest": spec.digest()}


def run_compare(args) -> dict:
    """The ``compare`` command."""
    import os

    from .sweep import compare_dataset, open_dataset

    if not os.path.exists(args.dataset):
        raise UsageValueError(f"`dataset` file not found: {args.dataset}")
    if not 0 < args.alpha < 1:
        raise UsageValueError(f"`--alpha` must be in (0, 1), got {args.alpha}")
    rows = compare_dataset(open_dataset(args.dataset), alpha=args.alpha)
    tested = [r for r in rows if "p_holm" in r]
    return {"dataset": args.dataset, "alpha": args.alpha, "rows": rows, "tested": len(tested),
            "consistent": sum(r["consistent"] for r in tested)}


def _print_compare(d: dict) -> None:
    print(f"{'grid point':<44} {'estimate':>10} {'95% CI':>22} {'exact':>10} {'rel err':>9} {'p (Holm)':>9}  ok")
    for r in d["rows"]:
        pt = ", ".join(f"{k}={v}" for k, v in r["point"].items())
        est = "" if r["estimate"] is None else f"{r['estimate']:.4f}"
        ci = "" if r["ci95"] is None else f"[{r['ci95'][0]:.4f}, {r['ci95'][1]:.4f}]"
        ref = "-" if r["reference"] is None else f"{r['reference']:.4f}"
        rel = f"{r['rel_error']:+.2e}" if "rel_error" in r else ""
        ph = f"{r['p_holm']:.3g}" if "p_holm" in r else ""
        ok = {True: "yes", False: "NO"}.get(r.get("consistent"), "")
        print(f"{pt:<44} {est:>10} {ci:>22} {ref:>10} {rel:>9} {ph:>9}  {ok}")
    print(f"{d['consistent']}/{d['tested']} grid points consistent with the exact value at family-wise "
          f"alpha={d['alpha']}")


def _experiments_dir(required=True):
    import pathlib

    d = pathlib.Path(__file__).resolve().parents[1] / "experiments"
    if not d.is_dir():
        if not required:
            return None
        raise UsageValueError(f"the experiments directory {d} is missing (run from a checkout of the repository)")
    return d


def run_reproduce(args) -> dict:
    """The ``reproduce`` command as a dict: the main table only (``--table main``) or every study."""
    import os
    import time

    from .optimize import main_table
    from .timeline import TimelineConfig

    settings = {"n_values": [200, 600, 1000], "reps": 20, "confirm_reps": 50, "quick_reps": 6,
                "quick_confirm_reps": 12, "seed": 0}
    mt = _experiments_dir(required=False)
    if mt is not None and (mt / "main_table.toml").exists():
        import tomllib

        d = tomllib.loads((mt / "main_table.toml").read_text()).get("main_table", {})
        unknown = set(d) - set(settings)
        if unknown:
            raise UsageValueError(f"unknown keys in experiments/main_table.toml: {sorted(unknown)}")
        settings.update(d)
    if args.n_values is not None:
        try:
            settings["n_values"] = [int(x) for x in args.n_values.split(",")]
        except ValueError:
            raise UsageValueError(f"`--n-values` must be comma-separated integers, got {args.n_values!r}") from None
    n_values = tuple(settings["n_values"])
    reps = args.reps if args.reps is not None else settings["quick_reps" if args.quick else "reps"]
    confirm = (args.confirm_reps if args.confirm_reps is not None
               else settings["quick_confirm_reps" if args.quick else "confirm_reps"])
    if reps < 2 or confirm < 2:
        raise UsageValueError(f"`--reps` and `--confirm-reps` must be >= 2, got {reps} and {confirm}")
    seed = settings["seed"] if args.seed is None else args.seed
    if seed < 0:
        raise UsageValueError(f"`--seed` must be >= 0, got {seed}")
    args.seed = seed
    base = _timeline_overrides(args)
    for n in n_values:  # validate every setting before any work starts
        TimelineConfig("spare", n, r=2, **_timeline_overrides(args, n))
    if args.failures != "system" and (args.placement != "contiguous" or args.n_gpus != 600_000):
        raise UsageValueError("`--placement` and `--n-gpus` are only supported by `spare-mc ttt` (reproduce uses the "
                         "default 600,000-GPU contiguous topology)")
    log = (lambda msg: print(f"... {msg}", file=sys.stderr, flush=True))
    if args.table == "main":
        out = main_table(n_values, reps=reps, confirm_reps=confirm, seed=args.seed, base=base,
                         progress=None if args.json else log)
        out["table"] = args.table
        out["quick"] = args.quick
        return out
    # every study: the sweeps of experiments/, the main table, the figures
    from .plots import save_figures
    from .sweep import SweepSpec, run_sweep

    specs = [SweepSpec.from_file(p) for p in sorted(_experiments_dir().glob("*.toml")) if p.name != "main_table.toml"]
    specs = [sp.quick() if args.quick else sp for sp in specs]
    for sp in specs:
        sp.check_points()
    root = os.path.join("data", "quick") if args.quick else "data"
    t0 = time.perf_counter()
    if not args.quick:
        log("full flavour: expected run time about 1.5 minutes on 2 cores (measured 84 s; quick: about 30 s)")
    datasets, paths = {}, {}
    for sp in specs:
        log(f"sweep {sp.name} ({sp.quantity}, {sp.reps} replications per point)")
        path = os.path.join(root, f"{sp.name}.nc")
        datasets[sp.name] = run_sweep(sp, path, scheduler=args.scheduler, workers=args.workers)
        paths[sp.name] = path
    log("main table")
    table = main_table(n_values, reps=reps, confirm_reps=confirm, seed=args.seed, base=base)
    with open(os.path.join(root, "main_table.json"), "w") as fh:
        json.dump(table, fh, default=_json_default, indent=1)
    log("figures")
    figures = save_figures(datasets, os.path.join(root, "figures"))
    return {"quick": args.quick, "datasets": paths, "figures": figures,
            "main_table": os.path.join(root, "main_table.json"), "rows": table["rows"],
            "paper_N600": table["paper_N600"], "elapsed_s": time.perf_counter() - t0}


def run_plot(args) -> dict:
    """The ``plot`` command."""
    import os

    from .plots import save_figures
    from .sweep import open_dataset

    datasets = {}
    for path in args.dataset:
        if not os.path.exists(path):
            raise UsageValueError(f"`dataset` file not found: {path}")
        try:
            ds = open_dataset(path)
        except (ValueError, TypeError) as exc:  # not NetCDF at all: the file's problem, not a bug
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UsageValueError(f"not a spare-mc sweep dataset: {path}: cannot read it as NetCDF ({first})") from None
        datasets[os.path.splitext(os.path.basename(path))[0]] = ds
    figures = save_figures(datasets, args.out)
    # the text table prints a list as numbers: give it the paths as one string (--json keeps the list)
    return {"figures": figures if args.json else ", ".join(figures)}


def _print_main_table(d: dict) -> None:
    print(f"{'N':>6} {'strategy':>9} {'best r':>6} {'T_c (s)':>9} {'TTT/T0':>24} {'availability':>24}")
    for row in d["rows"]:
        for s in ("ckpt", "rep", "spare"):
            x = row[s]
            lo, hi = x["ttt_over_t0_ci95"]
            alo, ahi = x["availability_ci95"]
            print(f"{row['n_groups']:>6} {s:>9} {x['best_r']:>6} {x['ckpt_period_s']:>9.0f} "
                  f"{x['ttt_over_t0']:>8.3f} [{lo:.3f}, {hi:.3f}] {x['availability']:>8.4f} [{alo:.4f}, {ahi:.4f}]")
        lo, hi = row["ttt_reduction_ci95"]
        print(f"{row['n_groups']:>6} SPARe+CKPT vs Rep+CKPT: TTT reduction {row['ttt_reduction']:.3f} "
              f"[{lo:.3f}, {hi:.3f}]")
    p = d["paper_N600"]
    print(f"paper, N=600: Rep+CKPT {p['rep']['ttt_over_t0']} / {p['rep']['availability']:.2%} (r={p['rep']['best_r']}),"
          f" SPARe+CKPT {p['spare']['ttt_over_t0']} / {p['spare']['availability']:.2%} (r={p['spare']['best_r']}),"
          f" reduction {p['ttt_reduction']:.1%}")


def _print_table(d: dict) -> None:
    width = max(len(k) for k in d)
    for k, v in d.items():
        if isinstance(v, float):
            v = f"{v:.6g}"
        elif isinstance(v, list):
            v = "[" + ", ".join(f"{x:.6g}" for x in v) + "]"
        print(f"{k:<{width}}  {v}")


def _say(message: str) -> None:
    """A line on stderr that never raises (stderr may be a closed pipe)."""
    try:
        print(message, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _os_message(exc: OSError) -> str:
    where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
    return f"{exc.strerror or exc}{where}"


def main(argv=None) -> int:
    """Entry point of the ``spare-mc`` console script."""
    try:
        args = _build_parser().parse_args(argv)
        out = {"mu": run_mu, "overhead": run_overhead, "ttt": run_ttt, "reproduce": run_reproduce,
               "sweep": run_sweep_cmd, "compare": run_compare, "plot": run_plot}[args.command](args)
    except (_CliError, UsageError) as exc:  # the caller's input broke a rule: one line, exit 2
        _say(f"spare-mc: error: {exc}")
        return 2
    except OSError as exc:  # the file system or the network refused: one line, exit 1
        _say(f"spare-mc: error: {_os_message(exc)}")
        return 1
    except KeyboardInterrupt:
        _say("spare-mc: interrupted (a sweep keeps its finished tasks and resumes where it stopped)")
        return 130
    except Exception:  # anything else is a bug of spare-mc: say so, with the traceback
        import traceback

        _say(traceback.format_exc().rstrip())
        _say(f"spare-mc: internal error: this is a bug in spare-mc {__version__}; please report it with the command "
             f"line above")
        return 70
    try:
        _emit(args, out)
    except BrokenPipeError:  # e.g. piped into `head`: the reader has gone, which is not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _emit(args, out) -> None:
    if args.json:
        print(json.dumps(out, default=_json_default))
    elif args.command == "reproduce":
        if "datasets" in out:
            print("datasets: " + ", ".join(out["datasets"].values()))
            print("figures:  " + ", ".join(out["figures"]))
            print(f"main table: {out['main_table']} ({out['elapsed_s']:.0f} s in all)")
        _print_main_table(out)
    elif args.command == "compare":
        _print_compare(out)
    else:
        _print_table(out)
    sys.stdout.flush()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
