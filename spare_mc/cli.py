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
    return p


def _finite(x):
    return None if x is None or not math.isfinite(x) else float(x)


def run_mu(args) -> dict:
    """The ``mu`` command as a dict (what ``--json`` prints)."""
    from .failures import UniformOrder

    if args.trials < 2:
        raise ValueError(f"`--trials` must be >= 2 to estimate a standard error, got {args.trials}")
    if args.seed < 0:
        raise ValueError(f"`--seed` must be >= 0, got {args.seed}")
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

    if args.trials < 2:
        raise ValueError(f"`--trials` must be >= 2 to estimate a standard error, got {args.trials}")
    if args.seed < 0:
        raise ValueError(f"`--seed` must be >= 0, got {args.seed}")
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


def _print_table(d: dict) -> None:
    width = max(len(k) for k in d)
    for k, v in d.items():
        if isinstance(v, float):
            v = f"{v:.6g}"
        elif isinstance(v, list):
            v = "[" + ", ".join(f"{x:.6g}" for x in v) + "]"
        print(f"{k:<{width}}  {v}")


def main(argv=None) -> int:
    """Entry point of the ``spare-mc`` console script."""
    try:
        args = _build_parser().parse_args(argv)
        out = {"mu": run_mu, "overhead": run_overhead}[args.command](args)
    except (_CliError, ValueError, TypeError) as exc:
        print(f"spare-mc: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(out))
    else:
        _print_table(out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
