"""Command line: ``spare-mc <command> ...``.

Commands
--------
``mu``
    Masked failures of a layout: Monte Carlo of the wipe-out index ``T`` next to the exact value (where one
    exists) and the paper's closed form. Replications are streamed in chunks, so their number is not limited by
    memory. ``--json`` prints one JSON object.
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
    Every grid point of a stored sweep against its exact value where a valid one exists (Holm-corrected).
``plot DATASET``
    Figures of a stored sweep (PNG).
``log check|fit|replay LOG``
    A real failure log (CSV, or Parquet with the ``parquet`` extra) on a topology given by ``--n-gpus``,
    ``--n-groups`` and the domain sizes: ``check`` validates it and prints a summary; ``fit`` prints the per-level
    Weibull fits with confidence intervals and the ``spare-mc ttt`` flags of the fitted model; ``replay`` replays it
    as successive epochs (each from a fully live system to its wipe-out) and prints the wipe-out and, with
    ``--overhead``, the ReCtlr estimates.
``reproduce [--quick]``
    Every shipped study (sweeps on the local cluster or ``--scheduler``), the paper's main table, the phase map and
    all figures, under ``data/`` (``data/quick/`` for the quick flavour). ``--table main`` runs only the main table,
    ``--table domains`` the failure-domain study, ``--table llama3`` the effective training time of the Llama 3
    405B preset (:mod:`spare_mc.analyses.clusters`) with its sensitivity table, ``--table phase`` the phase map of which
    strategy wins by cluster size, save and restart time (:mod:`spare_mc.analyses.phase`).

Exit status: 0 success; 2 a usage error (bad argument or input file: one line naming the parameter and the rule);
1 the operating system refused (a file, the network: one line); 130 interrupted; 70 an internal error (a bug of
spare-mc: shown with its traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import sys
import traceback
import warnings
from dataclasses import MISSING, fields, replace
from dataclasses import MISSING as _MISSING
from fractions import Fraction

import numpy as np
from scipy import stats

from .._lib.loading import interrupted_while_loading
from .._lib.provenance import SCHEMA_VERSION, software_versions
from .._lib.resources import check_local_workers, parse_size
from .._lib.validation import UsageError, UsageValueError
from .._lib.version import __version__
from ..analyses.calibrate import DEFAULT_SCHEDULE, SEARCH_SPACE, calibrate, fitted_clash, write_preset
from ..analyses.clusters import llama3_study
from ..analyses.domain_period import run_domain_period_study
from ..analyses.domains import DomainStudy, domain_study_rows, run_domain_study
from ..analyses.dynamic import STUDY_SETS as _DYNAMIC_SETS
from ..analyses.dynamic import dynamic_study
from ..analyses.phase import PhaseStudy, phase_rows, run_phase_study
from ..analyses.repair import STUDY_SETS, repair_study
from ..analyses.repair import STUDY_SETS as _REPAIR_SETS
from ..analyses.reproduce import reproduce, studies_dir
from ..analyses.sensitivity import check_sensitivity_inputs, default_variants, estimate_cost, sensitivity
from ..logs.failure_logs import fit_failure_log, read_failure_log, replay_log
from ..mc.reorder import exact_stack_bound_sum, overhead_mc
from ..mc.survivability import wipeout_mc
from ..model.failures import FAILURE_SPEC_DEFAULTS, UniformOrder, failure_from_spec
from ..model.kinds import make_layout
from ..model.layouts import LAYOUT_KINDS
from ..model.topology import DOMAIN_LEVELS, PLACEMENTS, Topology
from ..options import set_options
from ..plots.figures import (_check_figure_target, figure_domains, figure_phase, save_dynamic_figure, save_figures,
                             save_repair_figure, save_sensitivity_figure)
from ..stats import MCEstimate, compare
from ..sweep.runner import SweepSpec, compare_dataset, open_sweep_dataset, run_sweep
from ..sweep.storage import SweepWriteError, check_own_json, json_default, write_json
from ..theory.closed_forms import (ckpt_period_daly, ckpt_period_young, daly_expected_wall_time, daly_optimal_interval,
                                   mu_expansion, mu_paper, overhead_lower_bound)
from ..theory.exact import EXACT_LAYOUTS, exact_cost, exact_wipeout
from ..ttt.optimize import OPTIMISED, PERIOD_FACTORS, theory_ttt
from ..ttt.config import TimelineConfig
from ..ttt.theory import classical_config, classical_expected_ttt_s, classical_segment_s
from ..ttt.run import simulate_ttt

#: Replications per chunk of ``spare-mc mu`` (one chunk's per-replication arrays live at once).
MU_CHUNK = 1_000_000


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        raise _CliError(message)


class _CliError(Exception):
    pass


class _Once(argparse.Action):
    """A value that one flag or its deprecated alias gives, never both (the alias warns, naming the new flag)."""

    def __init__(self, option_strings, dest, new=None, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None):
        given = getattr(namespace, "_given", {})  # dest -> the flag that gave it
        if self.dest in given:
            how = "twice" if given[self.dest] == option_string else "too"
            raise _CliError(f"give --{self.dest} once (--trials is its deprecated alias), got {option_string} {how}")
        given[self.dest] = option_string
        namespace._given = given
        if self.new:
            _say(f"spare-mc: warning: {option_string} is deprecated and will be removed in the next release; use "
                 f"{self.new}")
        setattr(namespace, self.dest, values)


def _add_reps(p, default, what):
    p.add_argument("--reps", type=int, default=default, action=_Once, help=f"{what} (default {default})")
    p.add_argument("--trials", type=int, dest="reps", action=_Once, new="--reps", help="deprecated alias of --reps")


def _add_seed(p):
    p.add_argument("--seed", type=int, default=0, help="root seed, a non-negative integer (default 0)")


# ``repair="log"`` needs a failure log replayed through the timeline, which only the Python API does
_CHOICES = {"layout": ("cyclic", "sidon", "random"), "repair": ("none", "fixed", "lognormal")}


def _add_config_options(p, topology=True, failures=True, reserved=()) -> None:
    """One flag per :class:`TimelineConfig` field marked for the command line, with its meaning, unit and default
    taken from the field (so every default lives in one place); ``failures=False``: the system-level failure
    process only (no failure-model flags). ``reserved``: fields the command sets itself; their flags stay (so that
    argparse does not read them as abbreviations of other flags, e.g. ``--shape`` of ``--shapes``) but are hidden
    from the help, and the library refuses them by name."""

    for f in fields(TimelineConfig):
        if not f.metadata.get("cli"):
            continue
        if f.type == "bool":  # a switch that turns the option on (its default is off)
            p.add_argument("--" + f.name.replace("_", "-"), dest=f.name, action="store_const", const=True,
                           default=None, help=argparse.SUPPRESS if f.name in reserved else
                           f.metadata["help"] + " (default off)")
            continue
        kind = {"int": int, "str": str}.get(f.type, float)
        default = None if f.default is MISSING else f.default
        shown = "" if default is None else f" (default {default:g})" if isinstance(default, float) else \
            f" (default {default})"
        p.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=kind, default=None,
                       choices=_CHOICES.get(f.name),
                       help=argparse.SUPPRESS if f.name in reserved else f.metadata["help"] + shown)
    p.add_argument("--no-live-scaling", action="store_true",
                   help="the system-level failure rate does not fall as groups die (default: proportional to the "
                        "live GPUs)")
    if not failures:
        p.set_defaults(failures="system", calibration=None, age_policy=None, domain_mtbf_s=None, domain_levels=None,
                       n_gpus=None,
                       placement=None)
        return
    p.add_argument("--failures", choices=("system", "per-gpu") + DOMAIN_LEVELS + ("mixed",), default="system",
                   help="failure model: system-level renewal (default); per-GPU Weibull lifetimes; or failure domains "
                        "(node, rack, power, pod; mixed: several levels at once, --domain-levels) on top of per-GPU "
                        "lifetimes, calibrated to --mtbf-s as --calibration says")
    p.add_argument("--calibration", choices=("first_failure", "long_run"), default=None,
                   help="how per-GPU lifetimes match --mtbf-s: first_failure (default: the first failure of a fresh "
                        "system has mean --mtbf-s) or long_run (the long-run failure rate is 1/--mtbf-s); they differ "
                        "by a factor G^(1/k - 1) for shape k < 1, about 43 at the paper's setting")
    p.add_argument("--age-policy", choices=("renew", "keep"), default=None,
                   help="GPU ages at a global restart for per-GPU and domain failures: renew (all new) or keep "
                        "(only failed hardware is replaced); default renew")
    p.add_argument("--domain-mtbf-s", type=float, default=None,
                   help="mean lifetime of one failure domain (s); required with --failures node, rack, power or pod")
    p.add_argument("--domain-levels", default=None,
                   help="the levels of --failures mixed, comma-separated, each 'level' (at its default rate, "
                        "spare_mc.model.domain_rates) or 'level=mtbf_s', e.g. 'node,rack=3e7' (default: all, every level "
                        "at its default rate)")
    if not topology:  # reproduce runs every N on the 600,000-GPU contiguous topology
        p.set_defaults(n_gpus=None, placement=None)
        return
    p.add_argument("--n-gpus", type=int, default=None,
                   help="GPUs in the system G for per-GPU and domain failures (default 600000; N must divide it)")
    p.add_argument("--placement", choices=("contiguous", "strided"), default=None,
                   help="how groups map onto nodes and racks for domain failures (default contiguous)")


def _add_study_flags(p, reserved=()) -> None:
    """Where a study runs, whether it may replace foreign files, and its baseline (the ``ttt`` flags of
    system-level failures, but ``reserved``: those the study sets): shared by ``sensitivity``, ``calibrate``,
    ``dynamic`` and ``repair``."""
    p.add_argument("--workers", type=int, default=None,
                   help="local worker processes (default: the number of CPUs; 0 = in this process)")
    p.add_argument("--scheduler", default=None, help="address of an existing dask scheduler")
    p.add_argument("--force", action="store_true", help="replace output files spare-mc did not write")
    _add_config_options(p, topology=False, failures=False, reserved=reserved)


def _build_parser() -> argparse.ArgumentParser:

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--max-memory", metavar="SIZE", default=None,
                        help="memory this run may allocate, e.g. 512M, 8G (default: half of the available memory)")
    p = _Parser(prog="spare-mc", description="SPARe reliability Monte Carlo toolkit")
    p.add_argument("--version", action="version", version=f"spare-mc {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    mu = sub.add_parser("mu", parents=[common], help="masked failures: Monte Carlo vs exact vs the paper's closed form")
    mu.add_argument("--n-groups", type=int, required=True, help="number of data-parallel groups N")
    mu.add_argument("--r", type=int, required=True, help="redundancy r: holder groups per shard type")
    mu.add_argument("--layout", choices=LAYOUT_KINDS, default="cyclic",
                    help="cyclic (unit stride), sidon (Sidon offsets), random (a fresh layout per replication), "
                         "block (Rep); default cyclic")
    _add_reps(mu, 100_000, "Monte Carlo replications, streamed in chunks of 1,000,000")
    _add_seed(mu)
    mu.add_argument("--with-replacement", action="store_true",
                    help="let failures hit already dead groups (a different quantity; named variant)")
    mu.add_argument("--no-exact", action="store_true",
                    help="skip the exact law (it takes minutes beyond N = 50,000: its cost grows like N^2)")
    mu.add_argument("--json", action="store_true", help="print one JSON object")
    ov = sub.add_parser("overhead", parents=[common],
                        help="ReCtlr until wipe-out: measured stack number, Phase-0 rate, moves, patch")
    ov.add_argument("--n-groups", type=int, required=True, help="number of data-parallel groups N")
    ov.add_argument("--r", type=int, required=True, help="redundancy r: holder groups per shard type")
    ov.add_argument("--layout", choices=LAYOUT_KINDS, default="cyclic",
                    help="cyclic (unit stride), sidon, random (a fresh layout per replication), block; default "
                         "cyclic")
    _add_reps(ov, 2000, "Monte Carlo replications")
    _add_seed(ov)
    ov.add_argument("--no-exact", action="store_true",
                    help="skip the exact E[T] and c_mean and the check against them (minutes beyond N = 50,000: "
                         "their cost grows like N^2)")
    ov.add_argument("--json", action="store_true", help="print one JSON object")
    tt = sub.add_parser("ttt", parents=[common],
                        help="time to train of one strategy (event-driven timeline with ReCtlr)")
    tt.add_argument("--model", choices=("step", "classical"), default="step",
                    help="step: the step model of the paper (default); classical: Daly's checkpoint/restart model "
                         "(CKPT-only, solve time --compute-s x --n-steps, interval --ckpt-period-s, immediate "
                         "detection, a failure restarts the restart, a checkpoint after the last segment, "
                         "exponential failures, no all-reduce, no jitter), with its exact expected time")
    tt.add_argument("--strategy", choices=("ckpt", "rep", "spare"), default=None,
                    help="ckpt (checkpointing only), rep (replication + checkpoints), spare (stacking with adaptive "
                         "reordering + checkpoints); required with --model step, ckpt with --model classical")
    tt.add_argument("--n-groups", type=int, default=None,
                    help="number of data-parallel groups N (required with --model step; not with --model classical, "
                         "where every failure stops the whole system)")
    tt.add_argument("--r", type=int, default=None,
                    help="redundancy r (default: 1 for ckpt, 3 for rep, 8 for spare: the paper's optima)")
    period = tt.add_mutually_exclusive_group()
    period.add_argument("--ckpt-period-s", type=float, default=None,
                        help="checkpoint period T_c (s): wall time from the end of the last checkpoint or restart to "
                             "the next checkpoint, at a step boundary (default: the theory optimum T_c*)")
    period.add_argument("--ckpt-period", choices=("optimal",), default=None,
                        help="'optimal' = the theory optimum T_c* (the default)")
    _add_reps(tt, 50, "replications (jobs)")
    _add_seed(tt)
    _add_config_options(tt)
    tt.add_argument("--json", action="store_true", help="print one JSON object")
    sw = sub.add_parser("sweep", parents=[common], help="run or resume a parameter sweep (TOML spec) on dask")
    sw.add_argument("spec", help="path of a TOML sweep spec, or the name of a shipped study (masked, overhead, "
                                 "ttt_spare, ttt_rep, ttt_ckpt)")
    sw.add_argument("--quick", action="store_true", help="the spec's quick size (its quick_reps replications)")
    sw.add_argument("--scheduler", default=None, help="address of an existing dask scheduler (tcp://host:port)")
    sw.add_argument("--out", default=None, help="dataset path (default data/<name>.nc)")
    sw.add_argument("--workers", type=int, default=None,
                    help="local worker processes (default: the number of CPUs; 0 = in this process without dask)")
    sw.add_argument("--force", action="store_true",
                    help="replace an existing --out that is not this sweep's dataset")
    sw.add_argument("--max-tasks", type=int, default=None,
                    help="largest number of tasks (part files) the sweep may create (default 20000)")
    sw.add_argument("--json", action="store_true", help="print a JSON summary")
    cp = sub.add_parser("compare", parents=[common],
                        help="compare a stored sweep with exact values where they exist (Holm-corrected)")
    cp.add_argument("dataset", help="path of a dataset written by spare-mc sweep")
    cp.add_argument("--alpha", type=float, default=1e-3, help="family-wise significance level (default 1e-3)")
    cp.add_argument("--json", action="store_true", help="print one JSON object")
    pl = sub.add_parser("plot", parents=[common], help="figures of a stored sweep dataset")
    pl.add_argument("dataset", nargs="+", help="dataset path(s) written by spare-mc sweep")
    pl.add_argument("--out", default="data/figures", help="output folder of the PNG files (default data/figures)")
    pl.add_argument("--force", action="store_true", help="replace files in --out that spare-mc did not write")
    pl.add_argument("--json", action="store_true", help="print a JSON summary")
    rp = sub.add_parser("reproduce", parents=[common],
                        help="every study, the paper's main table and the figures (or --table main)")
    rp.add_argument("--table", choices=("main", "domains", "domain-period", "llama3", "phase"), default=None,
                    help="run only the main table (writes nothing), the failure-domain study (docs/domains.md; "
                         "with --out-dir it writes domains.json and figures/domains.png there), the effective "
                         "training time of the Llama 3 405B preset with its sensitivity table (docs/llama3.md; "
                         "with --out-dir it writes llama3.json there), or the phase map of which strategy wins by "
                         "cluster size, save and restart time (docs/phase.md; with --out-dir it writes phase.json, "
                         "figures/phase.png and every finished cell, and resumes from them), or the checkpoint "
                         "period re-optimised per failure-domain level (docs/domains.md; with --out-dir it writes "
                         "domain_period.json there)")
    rp.add_argument("--quick", action="store_true", help="the quick flavour (fewer replications; about a minute)")
    rp.add_argument("--studies", default=None,
                    help="folder of sweep specs to run instead of the shipped ones (and its main_table.toml and "
                         "phase_map.toml); with --table phase, a phase-map spec or a folder holding phase_map.toml")
    rp.add_argument("--out-dir", default=None, help="output folder (default data/, or data/quick/ with --quick)")
    rp.add_argument("--force", action="store_true",
                    help="replace existing output files that are not datasets of these studies")
    rp.add_argument("--workers", type=int, default=None,
                    help="local worker processes for the sweeps and the phase map's cells (--table phase: default "
                         "1)")
    rp.add_argument("--scheduler", default=None, help="address of an existing dask scheduler for the sweeps")
    rp.add_argument("--n-values", default=None,
                    help="comma-separated N values of the main table (default 200,600,1000)")
    rp.add_argument("--reps", type=int, default=None,
                    help="replications per grid point of the main table (default 20; quick 6), per row of "
                         "--table domains (100; quick 8) or --table llama3 (1000; quick 100), per searched point of "
                         "--table phase (20; quick 8), per screened period of --table domain-period (20; quick 4)")
    rp.add_argument("--confirm-reps", type=int, default=None,
                    help="replications of each selected optimum on fresh traces (default 50; quick 12; --table "
                         "phase: 100, quick 30; --table domain-period: 100 per compared period, quick 8)")
    rp.add_argument("--seed", type=int, default=None,
                    help="root seed of the table run (--table), or of every study of the full reproduce: each sweep's, "
                         "the main table's and the phase map's (default: each study's own, 0 for the tables)")
    rp.add_argument("--preset", default=None,
                    help="run under a preset's option values (a shipped name, e.g. paper-n600, or a JSON file); "
                         "presets are fitted, never the default")
    _add_config_options(rp, topology=False, reserved=OPTIMISED)
    rp.add_argument("--json", action="store_true", help="print one JSON object")
    se = sub.add_parser("sensitivity", parents=[common],
                        help="paired sensitivity of SPARe's reduction over Rep to every open modelling choice and "
                             "stated input")
    se.add_argument("--n-groups", default="600",
                    help="comma-separated N values (default 600; the full study: 200,600,1000)")
    se.add_argument("--variants", default=None,
                    help="comma-separated names of the variants to run (default: all; see --list-variants)")
    se.add_argument("--list-variants", action="store_true", help="print the variants and exit")
    se.add_argument("--rep-r", default="2-6", help="range of r searched for Rep, LO-HI (default 2-6)")
    se.add_argument("--spare-r", default="2-14", help="range of r searched for SPARe, LO-HI (default 2-14)")
    se.add_argument("--reps", type=int, default=10, help="replications per point of the screen (default 10)")
    se.add_argument("--pilot-reps", type=int, default=40,
                    help="confirmation replications of the pilot stage (default 40)")
    se.add_argument("--target-pp", type=float, default=1.0,
                    help="95%% half-width of every change, in percentage points (default 1)")
    se.add_argument("--max-confirm-reps", type=int, default=400,
                    help="most confirmation replications per point (default 400)")
    _add_seed(se)
    se.add_argument("--out-dir", default=None, help="folder of the datasets and the figure (default data/sensitivity)")
    se.add_argument("--figure", default=None,
                    help="tornado figure path (default <out-dir>/sensitivity.png; 'none' to skip it)")
    _add_study_flags(se, reserved=OPTIMISED)
    se.add_argument("--json", action="store_true", help="print one JSON object")
    ca = sub.add_parser("calibrate", parents=[common],
                        help="search the option combinations a published table does not reject (successive halving)")
    ca.add_argument("--target", required=True,
                    help="the table: 'paper' (the published N = 600 row) or a JSON file (see docs/calibration.md)")
    ca.add_argument("--options", default=None,
                    help="comma-separated options to fit (default: all of rep_masked_cost, restart_failures, layout, "
                         "patch_cost, ckpt_failure, masked_detect_s)")
    ca.add_argument("--schedule", default=None,
                    help="rounds as SCREEN:CONFIRM replications, comma-separated (default 3:6,8:16,20:50)")
    ca.add_argument("--fit-n", default=None, help="comma-separated rows of the table to fit (default: all)")
    ca.add_argument("--predict-n", default=None,
                    help="comma-separated N to predict with the equivalence set (default 200,1000; '' for none)")
    ca.add_argument("--rep-r", default="2-6", help="range of r searched for Rep, LO-HI (default 2-6)")
    ca.add_argument("--spare-r", default="2-14", help="range of r searched for SPARe, LO-HI (default 2-14)")
    ca.add_argument("--period-factors", default=None,
                    help="comma-separated T_c / T_c* factors searched (default 0.5,0.71,1,1.41,2)")
    ca.add_argument("--tol-ttt", type=float, default=0.05, help="relative TTT/T0 tolerance (default 0.05)")
    ca.add_argument("--tol-availability", type=float, default=0.02,
                    help="absolute availability tolerance (default 0.02)")
    ca.add_argument("--alpha", type=float, default=0.05,
                    help="family-wise level of the rejection test per combination (default 0.05)")
    ca.add_argument("--eta", type=int, default=None,
                    help="also drop all but the best 1/eta unrejected per round (successive halving by rank; "
                         "default: drop only the rejected, so the set is every combination not rejected)")
    ca.add_argument("--min-keep", type=int, default=1,
                    help="a cell of the shared options whose members are all rejected keeps its closest this many "
                         "(default 1)")
    _add_seed(ca)
    ca.add_argument("--out-dir", default=None, help="folder of the round datasets (default data/calibrate)")
    ca.add_argument("--preset-out", default=None,
                    help="write the best-fitting combination as a preset file here (labelled as fitted)")
    _add_study_flags(ca, reserved=OPTIMISED)
    ca.add_argument("--json", action="store_true", help="print one JSON object")
    dy = sub.add_parser("dynamic", parents=[common],
                        help="dynamic checkpointing (the hazard policies) against the periodic period, paired, for "
                             "every strategy, r, N and Weibull shape")
    dy.add_argument("--n-groups", default="200,600,1000", help="comma-separated N (default 200,600,1000)")
    dy.add_argument("--shapes", default="0.5,0.78,1", help="comma-separated Weibull shapes k (default 0.5,0.78,1)")
    dy.add_argument("--policies", default="hazard,young_hazard",
                    help="comma-separated dynamic policies (default hazard,young_hazard)")
    dy.add_argument("--screen-reps", type=int, default=20, help="replications per screened point (default 20)")
    dy.add_argument("--confirm-reps", type=int, default=100,
                    help="fresh replications per chosen point (default 100)")
    dy.add_argument("--quick", action="store_true",
                    help="a small flavour: N = 200, k = 0.5 and 1, 2,000 steps, 6 + 20 replications")
    _add_seed(dy)
    dy.add_argument("--out-dir", default=None, help="folder of the datasets, the result and the figure "
                                                    "(default data/dynamic)")
    dy.add_argument("--figure", default=None, help="figure path (default <out-dir>/dynamic.png; 'none' to skip it)")
    _add_study_flags(dy, reserved=_DYNAMIC_SETS)
    dy.add_argument("--json", action="store_true", help="print one JSON object")
    _add_log_parser(sub, common)
    rp = sub.add_parser("repair", parents=[common],
                        help="repair without a global restart: TTT/T0, availability, wipe-outs and the best r of Rep "
                             "and SPARe against the repair time")
    rp.add_argument("--n-groups", default="200,600,1000", help="comma-separated N (default 200,600,1000)")
    rp.add_argument("--repair-times", default=",".join(f"{t:g}" for t in (300, 900, 1800, 3600, 7200, 14400, 43200)),
                    help="comma-separated mean repair times in seconds (default 300 ... 43200)")
    rp.add_argument("--law", choices=("fixed", "lognormal"), default="fixed",
                    help="repair-time law with that mean (default fixed; lognormal uses --repair-sd)")
    _add_reps(rp, 20, "replications per point")
    rp.add_argument("--quick", action="store_true", help="a small flavour: N = 200, three repair times, 2,000 steps")
    _add_seed(rp)
    rp.add_argument("--out-dir", default=None, help="folder of the datasets, the result and the figure "
                                                    "(default data/repair)")
    rp.add_argument("--figure", default=None, help="figure path (default <out-dir>/repair.png; 'none' to skip it)")
    _add_study_flags(rp, reserved=_REPAIR_SETS)
    rp.add_argument("--json", action="store_true", help="print one JSON object")
    return p


_TOPOLOGY_HELP = {"n_gpus": "GPUs of the cluster the log was taken on, G (units are numbered from GPU 0)",
                  "n_groups": "data-parallel groups N of the job (must divide --n-gpus)",
                  "gpus_per_node": "GPUs per node (GPU x is in node x // gpus_per_node)",
                  "nodes_per_rack": "nodes per rack", "racks_per_power": "racks per power/network domain"}


def _add_log_parser(sub, common) -> None:
    """``spare-mc log check|fit|replay``: one flag per :class:`Topology` field, so new domain levels need no edit."""


    lg = sub.add_parser("log", help="real failure logs: check, fit a failure model, replay in the wipe-out and "
                                    "ReCtlr Monte Carlo")
    lsub = lg.add_subparsers(dest="log_command", required=True, parser_class=_Parser)
    helps = {"check": "validate a failure log and print a summary",
             "fit": "per-level Weibull fits (censored maximum likelihood) with confidence intervals",
             "replay": "replay a log as successive epochs: wipe-out and ReCtlr estimates"}
    for name, text in helps.items():
        q = lsub.add_parser(name, parents=[common], help=text)
        q.add_argument("log", help="path of the log: CSV, or Parquet (.parquet/.pq; needs the parquet extra)")
        for f in fields(Topology):
            flag = "--" + f.name.replace("_", "-")
            if f.name == "placement":
                q.add_argument(flag, choices=PLACEMENTS, default=f.default,
                               help=f"how groups map onto GPUs (default {f.default})")
            else:
                what = _TOPOLOGY_HELP.get(f.name, f"topology: {f.name.replace('_', ' ')}")
                required = f.default is _MISSING
                q.add_argument(flag, type=int, required=required, default=None if required else f.default,
                               help=what + ("" if required else f" (default {f.default})"))
        q.add_argument("--duration-s", type=float, default=None,
                       help="end of the observation window, s (default: the log's duration_s metadata, else its "
                            "last event)")
        if name == "fit":
            q.add_argument("--levels", default=None,
                           help="comma-separated levels to fit (default: every level with at least --min-failures "
                                "failures)")
            q.add_argument("--shared-shape", action="store_true",
                           help="one Weibull shape for all fitted levels (needed for a domain model with per-GPU "
                                "background)")
            q.add_argument("--min-failures", type=int, default=10,
                           help="fewest failures a level needs to be fitted (default 10; at least 2)")
            q.add_argument("--ci", choices=("wald", "profile"), default="wald",
                           help="confidence intervals: wald (observed information, log scale; default) or profile "
                                "(profile likelihood: closer to 95%% with few failures)")
        if name == "replay":
            q.add_argument("--layout", choices=("cyclic", "sidon", "block"), default="cyclic",
                           help="cyclic (unit stride), sidon, block (Rep); default cyclic")
            q.add_argument("--r", type=int, required=True, help="redundancy r: holder groups per shard type")
            q.add_argument("--overhead", action="store_true",
                           help="also run ReCtlr on every epoch (stack number, Phase-0 rate, moves, patch)")
        q.add_argument("--json", action="store_true", help="print one JSON object")


# ------------------------------------------------------------------------------------------------- helpers
def _config_overrides(args, n_groups=None) -> dict:
    """:class:`TimelineConfig` keyword arguments from the flags that were given (``failures`` and ``topology``
    built by :func:`spare_mc.model.failures.failure_from_spec` when ``n_groups`` is known)."""

    d = {f.name: getattr(args, f.name) for f in fields(TimelineConfig)
         if f.metadata.get("cli") and getattr(args, f.name, None) is not None}
    if args.no_live_scaling:
        d["live_scaling"] = False
    defaults = {f.name: f.default for f in fields(TimelineConfig)}
    kind = args.failures.replace("-", "_")
    spec = dict(age_policy=args.age_policy, domain_mtbf_s=args.domain_mtbf_s, n_gpus=args.n_gpus,
                placement=args.placement, calibration=args.calibration, domain_levels=args.domain_levels)
    failures, topo = failure_from_spec(kind, n_groups or 2, mtbf_s=d.get("mtbf_s", defaults["mtbf_s"]),
                                       shape=d.get("shape", defaults["shape"]), clocked=True, **spec)
    if failures is not None:
        d["failures"] = failures
        if n_groups is not None:
            d["topology"] = topo
    return d


def _check_reps_and_seed(count, flag, seed) -> None:
    """The rules every command shares: at least 2 replications (for a standard error), a non-negative seed."""
    if count < 2:
        raise UsageValueError(f"`{flag}` must be >= 2 to estimate a standard error, got {count}")
    if seed < 0:
        raise UsageValueError(f"`--seed` must be >= 0, got {seed}")


def _finite(x):
    return None if x is None or not math.isfinite(x) else float(x)


def _json_safe(x):
    """NaN and infinities become null: strict JSON (``NaN`` is not JSON)."""
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, (float, np.floating)) and not math.isfinite(x):
        return None
    return x


def _stamp(out: dict) -> dict:
    """Every JSON output carries the schema version and the versions of the software stack."""
    return {"schema_version": SCHEMA_VERSION, "software": software_versions(), **out}


# ------------------------------------------------------------------------------------------------ commands
#: The longest exact law (seconds on one core, :func:`spare_mc.theory.exact.exact_cost`) ``mu`` and ``overhead`` compute
#: by default: beyond it they refuse up front and point to ``--no-exact``, as they refuse work beyond the memory
#: budget (the recursion is one numba call that Ctrl-C and SIGTERM cannot interrupt).
CLI_EXACT_MAX_S = 600.0


def _exact_budget(args, wanted: bool) -> None:
    """Refuse, before any Monte Carlo, an exact law longer than :data:`CLI_EXACT_MAX_S`; say how long one over
    20 s takes."""

    if not wanted:
        return
    _, seconds, took = exact_cost(args.layout, args.n_groups, args.r)
    if seconds > CLI_EXACT_MAX_S:
        raise UsageValueError(f"the exact law of T at N={args.n_groups:,}, r={args.r} ({args.layout}) would take "
                              f"roughly {took} on one core, in one call that Ctrl-C cannot interrupt: pass "
                              f"--no-exact for the Monte Carlo alone (spare_mc.exact_wipeout computes it if you "
                              f"mean to wait)")
    if seconds > 20 and not args.json:
        _say(f"... the exact law of T at N={args.n_groups:,} takes roughly {took}, after the Monte Carlo, in a call "
             f"Ctrl-C cannot interrupt (--no-exact skips it)")


def run_mu(args) -> dict:
    """The ``mu`` command as a dict (what ``--json`` prints).

    The replications run in chunks of :data:`MU_CHUNK` on one generator, which the kernels advance in place: the
    chunks are consecutive pieces of one random stream, the output depends only on the seed and the count, and memory
    stays O(chunk + N). (Up to one chunk this is exactly one :func:`spare_mc.wipeout_mc` call. Beyond, a layout
    simulated failure by failure gives other numbers than a single huge call, whose kernel carries its permutation
    state from one replication to the next, with the same law; one read from its groups' failure times gives the
    same numbers, its trials carrying no state from one to the next.)
    """

    _check_reps_and_seed(args.reps, "--reps", args.seed)
    layout = make_layout(args.layout, args.n_groups, args.r, rng=0)  # validates N and r first
    _exact_budget(args, args.layout in EXACT_LAYOUTS and not args.with_replacement and not args.no_exact)
    gen = np.random.default_rng(np.random.SeedSequence(args.seed))
    failures = UniformOrder(with_replacement=args.with_replacement)
    sums = {"T": [0, 0], "masked": [0, 0]}
    done = 0
    loud = args.reps > MU_CHUNK and not args.json
    while done < args.reps:
        k = min(MU_CHUNK, args.reps - done)
        res = wipeout_mc(layout, k, failures=failures, fresh_layout=args.layout == "random", rng=gen)
        for name, v in (("T", res.T), ("masked", res.dead_before)):
            sums[name][0] += int(v.sum())
            exact_int64 = float(v.max()) ** 2 * v.size < 2.0**62  # else exact Python integers (huge N only)
            sums[name][1] += int((v * v).sum()) if exact_int64 else sum(x * x for x in v.tolist())
        done += k
        if loud:
            _say(f"... {done:,} of {args.reps:,} replications")
    est = {name: _streamed_estimate(name, s1, s2, args.reps) for name, (s1, s2) in sums.items()}
    exact = None
    if args.layout in EXACT_LAYOUTS and not args.with_replacement and not args.no_exact:
        exact = exact_wipeout(args.layout, args.n_groups, args.r)
    out = {
        "n_groups": args.n_groups, "r": args.r, "layout": args.layout, "reps": args.reps, "seed": args.seed,
        "with_replacement": args.with_replacement,
        "T_definition": ("1-based index of the failure causing the first wipe-out, counting failures that hit dead "
                         "groups; masked = distinct dead groups before it (not T - 1)" if args.with_replacement else
                         "1-based index of the failure causing the first wipe-out; masked failures = T - 1"),
        "exact_mean_T": None if exact is None else exact.mean,
        "exact_sd_T": None if exact is None else exact.sd,
        "mc_mean_T": est["T"].mean, "mc_se_T": est["T"].se, "mc_sd_T": est["T"].sd,
        "mc_ci95_T": list(est["T"].ci),
        "mc_masked_mean": est["masked"].mean, "mc_masked_ci95": list(est["masked"].ci),
        "paper_mu": mu_paper(args.n_groups, args.r),
        "mu_expansion_random": mu_expansion(args.n_groups, args.r),
    }
    if exact is not None:
        c = compare(est["T"], exact.mean, alpha=1e-3)
        out.update(mc_vs_exact_z=_finite(c.z), mc_vs_exact_p=c.p_value, mc_vs_exact_consistent=c.consistent)
    return _stamp(out)


def _streamed_estimate(name, s1, s2, n) -> MCEstimate:
    """Mean, sd and se from exact integer sums (``s1 = sum x``, ``s2 = sum x^2``)."""

    var = Fraction(s2 * n - s1 * s1, n * (n - 1))
    sd = math.sqrt(var) if var > 0 else 0.0
    return MCEstimate(name, s1 / n, sd / math.sqrt(n), sd, n, 0.95, "nonnegative")


def run_overhead(args) -> dict:
    """The ``overhead`` command as a dict (what ``--json`` prints)."""

    _check_reps_and_seed(args.reps, "--reps", args.seed)
    _exact_budget(args, args.layout in EXACT_LAYOUTS and not args.no_exact)
    res = overhead_mc(args.layout, args.reps, n_groups=args.n_groups, r=args.r,
                      rng=np.random.SeedSequence(args.seed))
    out = {"seed": args.seed, **res.summary(),
           "epoch_convention": "epoch k = after k failures, k = 0..T-1, S_0 = 1 unless the top layer is not a "
                               "perfect assignment; ReCtlr rates are per masked failure",
           "paper_overhead_lower_bound": overhead_lower_bound(args.n_groups, args.r)}
    if args.layout in EXACT_LAYOUTS and not args.no_exact:
        out["exact_c_mean"] = exact_stack_bound_sum(args.layout, args.n_groups, args.r).c_mean
        out["exact_mean_T"] = exact_wipeout(args.layout, args.n_groups, args.r).mean
        # the check is on T: c_mean is a function of T whose mean rare long runs dominate (its intervals under-cover
        # at usual replication counts; see compare_dataset)
        c = compare(res.estimate("T"), out["exact_mean_T"], alpha=1e-3)
        out.update(mc_vs_exact_z=_finite(c.z), mc_vs_exact_p=c.p_value, mc_vs_exact_consistent=c.consistent)
    return _stamp(out)


def run_ttt(args) -> dict:
    """The ``ttt`` command as a dict."""

    _check_reps_and_seed(args.reps, "--reps", args.seed)
    if args.ckpt_period == "optimal" and args.ckpt_period_factor not in (None, 1.0):
        raise UsageValueError("`--ckpt-period optimal` means the theory optimum T_c* itself: drop "
                              "`--ckpt-period-factor`, or drop `--ckpt-period optimal` to scale it")
    if args.model == "classical":
        return _run_ttt_classical(args)
    for flag, value in (("--strategy", args.strategy), ("--n-groups", args.n_groups)):
        if value is None:
            raise UsageValueError(f"`{flag}` is required with --model step")
    r = args.r if args.r is not None else {"ckpt": 1, "rep": 3, "spare": 8}[args.strategy]
    if args.ckpt_period == "optimal" and (args.ckpt_policy not in (None, "periodic") or args.ckpt_every_steps):
        how = (f"--ckpt-policy {args.ckpt_policy}" if args.ckpt_policy not in (None, "periodic")
               else f"--ckpt-every-steps {args.ckpt_every_steps}")
        raise UsageValueError(f"`--ckpt-period optimal` (the periodic optimum T_c*) contradicts `{how}`, which "
                              f"sets the checkpoints itself: drop one of them")
    cfg = TimelineConfig(args.strategy, args.n_groups, r=r, ckpt_period_s=args.ckpt_period_s,
                         **_config_overrides(args, args.n_groups))  # (its errors name flags: _main)
    res = simulate_ttt(cfg, args.reps, rng=args.seed)
    out = {"seed": args.seed, **res.summary(), "config": cfg.to_dict()}
    out["ckpt_period_rule"] = ("given" if args.ckpt_period_s is not None else
                               f"every {cfg.ckpt_every_steps} steps" if cfg.ckpt_every_steps else
                               f"{cfg.ckpt_period_factor:g} x the {cfg.ckpt_policy} policy's period, re-evaluated "
                               f"at every step boundary" if cfg.ckpt_policy != "periodic" else
                               f"{cfg.ckpt_period_factor:g} x the theory optimum T_c*")
    out["theory"] = theory_ttt(cfg).to_dict()
    out["availability_definition"] = ("uptime / wall clock; uptime = kept step time (useful + redundant + patch "
                                      "compute + all-reduce + ReCtlr/shrink); not checkpoints, restarts, lost work")
    return _stamp(out)


def _run_ttt_classical(args) -> dict:
    """``ttt --model classical``: the timeline under the classical rules, its mean time against Daly's exact one."""


    if args.failures != "system":
        raise UsageValueError("`--failures` must be 'system' with --model classical (exponential failures of the "
                              "whole system at rate 1/M)")
    if args.ckpt_period == "optimal":
        raise UsageValueError("`--ckpt-period optimal` is the step model's T_c*; with --model classical leave the "
                              "period out for the exact optimum of Daly's expected time, or give --ckpt-period-s")
    kw = _config_overrides(args)
    if args.no_live_scaling:
        raise UsageValueError("`--no-live-scaling` has no effect with --model classical (every failure wipes out "
                              "at once): drop it")
    for name, value in (("strategy", args.strategy), ("r", args.r)):
        if value is not None:
            kw[name] = value
    if args.n_groups is not None:  # it would change only which random stream a replication draws
        raise UsageValueError("`--n-groups` has no effect with --model classical (every failure stops the whole "
                              "system): drop it")
    cfg = classical_config(ckpt_period_s=args.ckpt_period_s, **kw)
    res = simulate_ttt(cfg, args.reps, rng=args.seed)
    est = res.estimate("ttt_over_t0")  # a capped run enters at the cap: the mean and its CI are one estimator
    exact = classical_expected_ttt_s(cfg)
    mean, se = est.mean * cfg.t0_s, est.se * cfg.t0_s
    z = (mean - exact) / se if se > 0 else math.nan
    solve = cfg.n_steps * cfg.compute_s
    restart = cfg.remote_restart  # Daly's R: the whole restart, its checkpoint load included
    tau_opt, e_opt = daly_optimal_interval(solve, cfg.save_s, restart, cfg.mtbf_s)
    at = {"exact_optimum": tau_opt, "young": ckpt_period_young(cfg.save_s, cfg.mtbf_s),
          "daly_higher_order": ckpt_period_daly(cfg.save_s, cfg.mtbf_s)}
    # (the groups, r and layout of the step model mean nothing here: every failure stops the whole system; the
    # config keeps them, as the timeline ran)
    summary = {k: v for k, v in res.summary().items() if k not in ("n_groups", "r", "layout")}
    out = {"seed": args.seed, "model": "classical", **summary, "config": cfg.to_dict(),
           "solve_s": solve, "ckpt_period_s": cfg.ckpt_period,
           "ckpt_period_rule": "given" if args.ckpt_period_s is not None else "the whole number of steps with the least exact E[T_w]",
           "segment_s": classical_segment_s(cfg),
           "ttt_s_mean": mean, "ttt_s_ci95": [t * cfg.t0_s for t in est.ci], "exact_ttt_s": exact,
           "relative_error": (mean - exact) / exact, "z": z,
           "p_value": float(2 * stats.norm.sf(abs(z))) if math.isfinite(z) else math.nan,
           "comparable": res.n_capped == 0,
           "optimum": {name: {"interval_s": tau, "exact_ttt_s": daly_expected_wall_time(solve, tau, cfg.save_s,
                                                                                     restart, cfg.mtbf_s)}
                       for name, tau in at.items()}}
    out["optimum"]["exact_optimum"]["exact_ttt_s"] = e_opt
    if res.n_capped:
        out["comparable"] = False
        out["warning"] = (f"{res.n_capped} runs hit the wall-clock cap: the mean is a lower bound and cannot be "
                          f"compared with the exact value; raise --max-wall-factor")
    return _stamp(out)


def run_sweep_cmd(args) -> dict:
    """The ``sweep`` command."""

    path = args.spec
    if not os.path.exists(path) and os.sep not in path and not path.endswith(".toml"):

        shipped = studies_dir() / f"{path}.toml"
        if not shipped.exists():
            names = sorted(p.stem for p in studies_dir().glob("*.toml") if p.stem != "main_table")
            raise UsageValueError(f"sweep spec file not found: {path} (shipped studies: {', '.join(names)})")
        path = str(shipped)
    spec = SweepSpec.from_file(path)
    if args.quick:
        spec = spec.quick()
    with set_options(**({} if args.max_tasks is None else {"max_tasks": args.max_tasks})):
        ds = run_sweep(spec, args.out, scheduler=args.scheduler, workers=args.workers, force=args.force)
    out = args.out or os.path.join("data", f"{spec.name}.nc")
    return _stamp({"dataset": out, "name": spec.name, "quantity": spec.quantity, "dims": dict(ds.sizes),
                   "spec_digest": spec.digest()})


def run_compare(args) -> dict:
    """The ``compare`` command."""

    if not 0 < args.alpha < 1:
        raise UsageValueError(f"`--alpha` must be in (0, 1), got {args.alpha}")
    res = compare_dataset(open_sweep_dataset(args.dataset), alpha=args.alpha)
    return _stamp({"dataset": args.dataset, **res.to_dict()})


#: What ``compare`` estimates, per row quantity (the figures of a wipe-out sweep show T - 1, the masked failures).
_COMPARED = {"T": "mean T, the failures up to and including the wipe-out (figures and tables show the masked "
                  "failures, T - 1); 95% CI symmetric, as the test uses",
             "ttt_over_t0": "mean TTT/T0 over the finished runs; 95% CI symmetric, as the test uses"}


def _print_compare(d: dict) -> None:
    for q in sorted({r["quantity"] for r in d["rows"]}):
        print(f"estimate: {_COMPARED.get(q, q)}")
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
    reasons = sorted({r["reason"] for r in d["rows"] if "reason" in r})
    for why in reasons:
        print(f"not compared ({sum(r.get('reason') == why for r in d['rows'])} points): {why}")
    print(f"{d['consistent']}/{d['tested']} grid points consistent with the exact value at family-wise "
          f"alpha={d['alpha']}")


def run_reproduce(args) -> dict:
    """The ``reproduce`` command as a dict: the main table only (``--table main``), the failure-domain study
    (``--table domains``) or every study."""

    if args.table not in (None, "main") and args.force and args.out_dir is None:
        raise UsageValueError(f"`--force` has no effect with --table {args.table} without --out-dir: nothing is "
                              f"written")
    if args.table == "phase" and args.out_dir is not None and not args.force and \
            os.path.exists(os.path.join(args.out_dir, "main_table.json")):
        raise UsageValueError(f"`--out-dir` {args.out_dir} holds a full reproduce, whose phase map is part of it at "
                              f"the folder's settings: rerun the full `spare-mc reproduce` there, choose another "
                              f"folder, or pass --force to replace its phase map")

    if args.table == "domains":
        return _run_domains_table(args)
    if args.table == "domain-period":
        return _run_domain_period_table(args)
    if args.table == "llama3":
        return _run_llama3_table(args)
    if args.table == "phase":
        return _run_phase_table(args)
    if args.n_values is not None:
        try:
            n_values = [int(x) for x in args.n_values.split(",")]
        except ValueError:
            raise UsageValueError(f"`--n-values` must be comma-separated integers, got {args.n_values!r}") from None
    else:
        n_values = None
    for flag, v in (("--reps", args.reps), ("--confirm-reps", args.confirm_reps)):
        if v is not None and v < 2:
            raise UsageValueError(f"`{flag}` must be >= 2, got {v}")
    if args.seed is not None and args.seed < 0:
        raise UsageValueError(f"`--seed` must be >= 0, got {args.seed}")
    if args.table == "main":  # writes nothing and runs no sweep
        for flag in ("out_dir", "workers", "scheduler"):
            if getattr(args, flag) is not None:
                raise UsageValueError(f"`--{flag.replace('_', '-')}` has no effect with --table main: it runs in this "
                                      f"process and writes nothing (--json prints the table; the full `spare-mc "
                                      f"reproduce` writes main_table.json with the sweeps)")
        if args.force:
            raise UsageValueError("`--force` has no effect with --table main: it writes nothing")
    else:  # one folder, one setting: what only the main table would take is refused, not applied to it alone
        if args.preset is not None:
            raise UsageValueError("`--preset` applies to the main table only: add --table main (the studies' specs "
                                  "state their own settings)")
        given = _given_config_flags(args)
        if given:
            raise UsageValueError(f"`{given[0]}` applies to the main table only: add --table main (the full "
                                  f"reproduce runs every study at its spec's settings, so that one output folder "
                                  f"holds one setting)")
    log = (lambda msg: _say(f"... {msg}")) if not args.json else None
    with _flag_names(n_values="--n-values", rng="--seed"):
        base = _config_overrides(args)
        res = reproduce(quick=args.quick, table=args.table, studies=args.studies, out_dir=args.out_dir,
                        n_values=n_values, reps=args.reps, confirm_reps=args.confirm_reps, rng=args.seed, base=base,
                        scheduler=args.scheduler, workers=args.workers, force=args.force, progress=log,
                        preset=args.preset)
    out = res.to_dict()
    out["table"] = args.table
    pre = out.get("settings", {}).get("preset")
    if pre and pre.get("rejected"):
        _say(f"spare-mc: warning: the preset {pre['name']!r} is the closest combination of its calibration, which "
             f"the table REJECTED ({'; '.join(pre['rejected'])})")
    return out


def _run_domains_table(args) -> dict:
    """``reproduce --table domains``: :func:`spare_mc.analyses.domains.run_domain_study` (quick: the smoke-sized study)."""

    kw = {}
    if args.n_values is not None:
        try:
            kw["n_values"] = tuple(int(x) for x in args.n_values.split(","))
        except ValueError:
            raise UsageValueError(f"`--n-values` must be comma-separated integers, got {args.n_values!r}") from None
        known = sorted(DomainStudy().spare_r)
        bad = [n for n in kw["n_values"] if n not in known]
        if bad:
            raise UsageValueError(f"`--n-values` must be among {','.join(map(str, known))} with --table domains (the "
                                  f"study's SPARe r is set per N; other N: spare_mc.analyses.domains.DomainStudy), got {bad[0]}")
    kw.update(_table_sizes(args, {"reps": "ttt_reps"}))
    for flag in ("studies", "preset", "scheduler", "workers", "confirm_reps"):
        if getattr(args, flag) is not None:
            raise UsageValueError(f"`--{flag.replace('_', '-')}` has no effect with --table domains")
    if args.failures not in (None, "system") or _config_overrides(args):
        raise UsageValueError("the timeline and failure-model options (--failures, --domain-mtbf-s, ...) have no "
                              "effect with --table domains: its failure models and settings are docs/domains.md's")
    study = DomainStudy.quick(**kw) if args.quick else DomainStudy(**kw)
    log = (lambda msg: _say(f"... {msg}")) if not args.json else None
    res = run_domain_study(study, progress=log)
    out = {"rows": domain_study_rows(res), "settings": res["settings"], "elapsed_s": res["elapsed_s"],
           "table": "domains"}
    if args.out_dir is not None:
        path = os.path.join(args.out_dir, "domains.json")
        check_own_json(path, args.force, ("rows", "settings"), "domain study", "pass --force, or choose another folder")
        os.makedirs(os.path.join(args.out_dir, "figures"), exist_ok=True)
        write_json(_stamp(res), path)
        out["figure"] = figure_domains(res, os.path.join(args.out_dir, "figures", "domains.png"), force=args.force)
        out["result"] = path
    return _stamp(out)


def _table_sizes(args, names: dict) -> dict:
    """The replication flags a ``--table`` takes (``names``: flag attribute -> the study's keyword), each >= 2, and
    ``--seed`` (>= 0) as ``seed``; flags not given are left out."""
    out = {}
    for flag, key in names.items():
        v = getattr(args, flag)
        if v is not None:
            if v < 2:
                raise UsageValueError(f"`--{flag.replace('_', '-')}` must be >= 2, got {v}")
            out[key] = v
    if args.seed is not None:
        if args.seed < 0:
            raise UsageValueError(f"`--seed` must be >= 0, got {args.seed}")
        out["seed"] = args.seed
    return out


def _run_domain_period_table(args) -> dict:
    """``reproduce --table domain-period``: :func:`spare_mc.analyses.domain_period.run_domain_period_study` at one N (600
    by default; quick: N = 200, the background and racks, 1,000 steps, three period factors, few jobs)."""

    kw = {}
    if args.n_values is not None:
        known = sorted(DomainStudy().spare_r)
        n = int(args.n_values) if args.n_values.strip().isdigit() else None
        if n not in known:
            raise UsageValueError(f"`--n-values` must be one N among {','.join(map(str, known))} with --table "
                                  f"domain-period (the study's SPARe r is set per N), got {args.n_values!r}")
        kw["n_values"] = (n,)
    run_kw = _table_sizes(args, {"reps": "screen_reps", "confirm_reps": "confirm_reps"})
    if "seed" in run_kw:
        kw["seed"] = run_kw.pop("seed")
    for flag in ("studies", "preset", "scheduler", "workers"):
        if getattr(args, flag) is not None:
            raise UsageValueError(f"`--{flag.replace('_', '-')}` has no effect with --table domain-period")
    if args.failures not in (None, "system") or _config_overrides(args):
        raise UsageValueError("the timeline and failure-model options (--failures, --domain-mtbf-s, ...) have no "
                              "effect with --table domain-period: its failure models and settings are docs/domains.md's")
    if args.quick:
        study = DomainStudy(**{"n_values": (200,), "levels": ("none", "rack"), "n_steps": 1000,
                               "mixed_n_values": (), **kw})
        run_kw = {"period_factors": (0.5, 1.0, 2.0), "screen_reps": 4, "confirm_reps": 8, **run_kw}
    else:
        study = DomainStudy(**{"n_values": (600,), **kw})
    return _json_table(args, "domain-period", ("rows", "settings"), "period study",
                       lambda log: run_domain_period_study(study, progress=log, **run_kw))


def _print_domain_period_table(d: dict) -> None:
    print(f"{'N':>5} {'level':6} {'strategy':8} {'layout':13} {'theory period':>13} {'best':>5} "
          f"{'TTT/T0 theory':>14} {'best':>7} {'gain':>7} {'95% CI':>17}")
    for r in d["rows"]:
        gain = (f"{r['gain']:+7.3f} [{r['gain_ci95'][0]:+6.3f}, {r['gain_ci95'][1]:+6.3f}]" if "gain" in r
                else r.get("gain_note", ""))
        edge = "*" if r["best_at_grid_edge"] else " "
        print(f"{r['n_groups']:>5} {r['level']:6} {r['strategy']:8} {r['layout']:13} {r['theory_period_s']:11.0f} s "
              f"x{r['best_factor']:<4g}{edge} {r['ttt_theory']:14.3f} {r['ttt_best']:7.3f} {gain}")
    print(f"best = the best multiple of the theory period (* at the edge of the grid); gain = TTT/T0 at the theory "
          f"period - at the best one, paired, on fresh jobs ({d['elapsed_s']:.0f} s)")


def _run_phase_table(args) -> dict:
    """``reproduce --table phase``: :func:`spare_mc.analyses.phase.run_phase_study` (quick: the corners of the map)."""

    kw = _table_sizes(args, {"reps": "reps", "confirm_reps": "confirm_reps"})
    check_local_workers(args.workers, "--workers", min_value=1)
    for flag in ("preset", "scheduler", "n_values"):
        if getattr(args, flag) is not None:
            hint = (" (cluster sizes and the grid: a spec's [phase] table through --studies, or "
                    "spare_mc.analyses.phase.PhaseStudy)") if flag == "n_values" else ""
            raise UsageValueError(f"`--{flag.replace('_', '-')}` has no effect with --table phase{hint}")
    given = _given_config_flags(args)
    if given:
        raise UsageValueError(f"`{given[0]}` has no effect with --table phase: its grid and settings are "
                              f"docs/phase.md's (or a spec's, through --studies)")
    if args.studies is not None:  # a spec file, or a folder with phase_map.toml (as main_table.toml for the table)
        spec = args.studies if os.path.isfile(args.studies) else os.path.join(args.studies, "phase_map.toml")
        if not os.path.isfile(spec):
            raise UsageValueError(f"`--studies` must be a phase-map spec (TOML with a [phase] table) or a folder "
                                  f"holding phase_map.toml with --table phase, got {args.studies}")
        study = replace(PhaseStudy.from_file(spec, quick=args.quick), **kw)
    else:
        study = PhaseStudy.quick(**kw) if args.quick else PhaseStudy(**kw)
    log = (lambda msg: _say(f"... {msg}")) if not args.json else None
    path = None
    if args.out_dir is not None:
        path = os.path.join(args.out_dir, "phase.json")
        check_own_json(path, args.force, ("rows", "settings"), "phase map", "pass --force, or choose another folder")
    res = run_phase_study(study, progress=log, out_dir=args.out_dir, workers=args.workers or 1)
    out = {"rows": phase_rows(res), "settings": res["settings"], "clusters": res["clusters"],
           "elapsed_s": res["elapsed_s"], "table": "phase"}
    if path is not None:
        write_json(_json_safe(_stamp(res)), path)
        out["figure"] = figure_phase(res, os.path.join(args.out_dir, "figures", "phase.png"), force=args.force)
        out["result"] = path
    return _stamp(out)


def _print_phase_table(d: dict) -> None:
    keys = [k for k in ("ckpt", "rep", "spare", "ckpt_modern", "rep_modern", "spare_modern")
            if any(k in r["ttt_over_t0"] for r in d["rows"])]
    kinds = [k for k in ("today", "modern") if any(k in r.get("by_kind", {}) for r in d["rows"])]

    def ci(m, c):
        return "" if m is None else f"{m:6.3f} [{c[0]:6.3f}, {c[1]:6.3f}]"

    print(f"{'GPUs':>7} {'T_s':>4} {'T_r':>5} {'winner':13} {'runner-up':13} {'margin, 95% CI':>24} "
          f"{'beats all':9} {'vs other strategy':>31} " + " ".join(f"{'winner ' + k:>13}" for k in kinds) + " "
          + " ".join(f"{k:>12}" for k in keys))
    for r in d["rows"]:
        sm = r.get("strategy_margin") or {}
        other = "" if not sm else (f"{sm['versus']} {ci(sm['margin'], sm['margin_ci95'])}"
                                   + ("" if sm["margin_ci95"][0] > 0 else "*"))
        by = " ".join(f"{str(r['by_kind'][k]['winner']) + ('' if r['by_kind'][k]['significant'] else '*'):>13}"
                      for k in kinds)
        not_beaten = [k for k, v in r.get("margins", {}).items() if not v["margin_ci95"][0] > 0]
        sig = "yes" if r["significant"] else "no: " + ",".join(not_beaten) if not_beaten else "no"
        print(f"{r['n_gpus']:>7} {r['save_s']:>4g} {r['restart_s']:>5g} {str(r['winner']):13} "
              f"{str(r['runner_up']):13} {ci(r['margin'], r['margin_ci95']):>24} {sig:9} {other:>31} {by} "
              + " ".join(f"{r['ttt_over_t0'][k]:12.3f}" if k in r["ttt_over_t0"] else f"{'':>12}" for k in keys))
    print("TTT/T0 of each strategy at its best r and period (confirmation runs); margin = runner-up minus winner, "
          "paired; 'beats all': every paired interval against the winner lies above 0 (else the strategies it does "
          "not beat); 'vs other strategy': against the best of the other redundancy strategies; * not significant"
          + (f"; result: {d['result']}, figure: {d['figure']}" if "result" in d else "") + f" ({d['elapsed_s']:.0f} s)")


#: Replications per row of ``reproduce --table llama3`` (``--quick``: the second).
LLAMA3_REPS = (1000, 100)


def _given_config_flags(args) -> list:
    """The timeline and failure-model flags given on the command line (``--restart-s``, ``--failures``, ...)."""

    given = [f"--{f.name.replace('_', '-')}" for f in fields(TimelineConfig)
             if f.metadata.get("cli") and getattr(args, f.name, None) is not None]
    if args.no_live_scaling:
        given.append("--no-live-scaling")
    if args.failures not in (None, "system"):
        given.append("--failures")
    given += [f"--{name.replace('_', '-')}" for name in ("calibration", "age_policy", "domain_mtbf_s", "domain_levels")
              if getattr(args, name, None) is not None]
    return given


def _run_llama3_table(args) -> dict:
    """``reproduce --table llama3``: :func:`spare_mc.analyses.clusters.llama3_study` (the preset's effective training time,
    the save x restart grid, the k = 0.78 row, the job-length check and the classical check)."""

    for flag in ("n_values", "studies", "preset", "scheduler", "workers", "confirm_reps"):
        if getattr(args, flag) is not None:
            raise UsageValueError(f"`--{flag.replace('_', '-')}` has no effect with --table llama3")
    given = _given_config_flags(args)
    if given:
        raise UsageValueError(f"`{given[0]}` has no effect with --table llama3: its settings are the preset's and "
                              f"the sensitivity grid's (docs/llama3.md; other settings: "
                              f"spare_mc.analyses.clusters.effective_training_time)")
    reps = LLAMA3_REPS[args.quick] if args.reps is None else args.reps
    seed = 0 if args.seed is None else args.seed
    _check_reps_and_seed(reps, "--reps", seed)
    return _json_table(args, "llama3", ("central", "grid"), "Llama 3 study",
                       lambda log: llama3_study(reps=reps, rng=seed, progress=log))


def _json_table(args, table: str, keys: tuple, what: str, run) -> dict:
    """A ``--table`` whose result is one JSON: ``run(progress)`` (progress lines on stderr unless ``--json``),
    stamped; with ``--out-dir``, written to ``<table>.json`` there (``-`` as ``_``), a file that is not one of
    ``what`` (its ``keys``) refused before any work."""
    target = None
    if args.out_dir is not None:
        target = os.path.join(args.out_dir, f"{table.replace('-', '_')}.json")
        check_own_json(target, args.force, keys, what, "pass --force, or choose another folder")
    log = (lambda msg: _say(f"... {msg}")) if not args.json else None
    out = _stamp({"table": table, **run(log)})
    if target is not None:

        os.makedirs(args.out_dir, exist_ok=True)
        write_json(_json_safe(out), target)
        out["result"] = target
    return out


def _print_llama3_table(d: dict) -> None:
    def ci(e):  # percent
        return f"{100 * e['mean']:6.2f} [{100 * e['ci95'][0]:6.2f}, {100 * e['ci95'][1]:6.2f}]"

    p, c = d["preset"], d["central"]
    print(f"Llama 3 405B preset: {p['n_gpus']:,} GPUs, {p['interruptions']} unexpected interruptions in "
          f"{p['snapshot_h'] / 24:g} days (system MTBF {p['system_mtbf_s'] / 3600:.2f} h, per GPU "
          f"{p['gpu_mtbf_h']:,.0f} h), T0 = {p['t0_s'] / 86400:.1f} days, {d['settings']['reps']} jobs per row")
    print(f"central assumptions: {c['save_s']:g} s blocking saves, {c['restart_s']:g} s restarts, Weibull shape "
          f"{c['shape']:g}, checkpoint period {c['ckpt_period_s']:.0f} s (theory optimum); a failure during a "
          f"restart starts it again, one during a save makes it unusable (docs/llama3.md)")
    print("effective training time = (useful compute + all-reduce) / wall clock of the CKPT-only job")
    print(f"effective training time (%): {ci(c['effective'])}  -- the report: more than "
          f"{100 * d['reported']['effective']:g}% ({c['verdict']})")
    print("  shares of the wall clock (%): " + ", ".join(f"{k} {ci(v)}" for k, v in c["shares"].items())
          + f"; running (re-done work counted as training) {ci(c['running'])}")
    if "modern" in d:
        m = d["modern"]
        k = m["checkpointing"]
        n = m.get("counts_mean", {})
        print(f"with modern checkpointing ({k['memory_copies']} in-memory copies at {k['memory_save_s']:g} s, every "
              f"{k['remote_every']}th checkpoint saved remotely in the background at {k['async_slowdown']:g}x "
              f"slower compute, restart {k['restart_s']:g} s + load; period {m['ckpt_period_s']:.0f} s): "
              f"{ci(m['effective'])} ({m['verdict']})")
        print("  shares (%): " + ", ".join(f"{k} {ci(v)}" for k, v in m["shares"].items())
              + (f"; per job: {n['wipeouts']:.1f} wipe-outs, {n['memory_restarts']:.1f} reloaded from memory, "
                 f"{n['remote_fallbacks']:.2f} from remote storage" if n else ""))
    print(f"{'save (s)':>9} {'restart (s)':>11} {'shape':>5} {'effective % [95% CI]':>26} {'first order':>11}  verdict")
    for r in (*d["grid"], *d["shapes"]):
        central = all(r[k] == c[k] for k in ("save_s", "restart_s", "shape"))
        print(f"{r['save_s']:>9g} {r['restart_s']:>11g} {r['shape']:>5g} {ci(r['effective']):>26} "
              f"{100 * r['first_order']:>11.2f}  {r['verdict']}{'  (central)' if central else ''}")
    for r in d["t0"]:
        print(f"T0 = {r['t0_s'] / 86400:5.1f} days: {ci(r['effective'])}")
    k = d["classical"]
    print(f"classical rules: {ci(k)} vs Daly's exact {100 * k['exact']:.2f} "
          f"({'consistent' if k['consistent'] else 'NOT consistent'} at alpha {k['alpha']:g})")
    if "result" in d:
        print(f"result: {d['result']}")
    print(f"({d['elapsed_s']:.0f} s)")


def _print_domains_table(d: dict) -> None:
    print(f"{'N':>5} {'level':6} {'strategy':8} {'layout':19} {'r':>3} {'masked':>8} {'95% CI':>17} "
          f"{'TTT/T0':>7} {'95% CI':>17} {'vs domain-aware':>16} {'95% CI':>17}")
    for r in d["rows"]:
        head = f"{r['n_groups']:>5} {r['level']:6} {r['strategy']:8} {r['layout']:19} {r['r']:>3}"
        if "error" in r:
            print(f"{head} not built: {r['error']}")
            continue
        line = (f"{head} {r['masked_mean']:8.2f} [{r['masked_ci95'][0]:7.2f}, {r['masked_ci95'][1]:7.2f}] "
                f"{r['ttt_over_t0']:7.3f} [{r['ttt_over_t0_ci95'][0]:6.3f}, {r['ttt_over_t0_ci95'][1]:6.3f}]")
        if "ttt_vs_domain_aware" in r:
            lo, hi = r["ttt_vs_domain_aware_ci95"]
            line += f" {r['ttt_vs_domain_aware']:+16.3f} [{lo:+6.3f}, {hi:+6.3f}]"
        print(line)
    print(f"({d['elapsed_s']:.0f} s)")


def run_sensitivity(args) -> dict:
    """The ``sensitivity`` command: the study of :mod:`spare_mc.analyses.sensitivity` (its expected time first, on stderr)."""

    try:
        n_values = [int(x) for x in args.n_groups.split(",")]
    except ValueError:
        raise UsageValueError(f"`--n-groups` must be comma-separated integers, got {args.n_groups!r}") from None
    base = _config_overrides(args)
    variants = default_variants(base)
    if args.list_variants:
        return {"variants": [v.to_dict() for v in variants]}
    if args.variants is not None:
        names = [x.strip() for x in args.variants.split(",") if x.strip()]
        known = {v.name: v for v in variants}
        unknown = [x for x in names if x not in known]
        if unknown or not names:
            raise UsageValueError(f"`--variants` must name variants among {sorted(known)}, got {unknown or names}")
        variants = tuple(known[x] for x in names)
    if args.seed < 0:
        raise UsageValueError(f"`--seed` must be >= 0, got {args.seed}")
    # refuse a foreign file, or one of this run's other outputs, before any work
    out_dir, figure, result = _study_targets(args, "sensitivity", ("variants", "baseline"), "sensitivity result")
    r_ranges = _r_ranges(args)
    kw = dict(variants=variants, reps=args.reps, pilot_reps=args.pilot_reps, base=base, r_ranges=r_ranges)
    with _flag_names(n_values="--n-groups"):
        check_sensitivity_inputs(n_values, target_pp=args.target_pp, max_confirm_reps=args.max_confirm_reps,
                                 rng=args.seed, **kw)  # every rule before the timed jobs of the estimate
    cost = estimate_cost(n_values, workers=args.workers, **kw)
    _say(f"spare-mc sensitivity: {len(variants)} variants at N = {', '.join(map(str, n_values))}; expected time "
         f"about {cost['expected_s'] / 60:.1f} min on {cost['workers']} worker(s) (a rough estimate from timed jobs)")
    log = (lambda msg: _say(f"... {msg}")) if not args.json else None
    res = sensitivity(n_values, target_pp=args.target_pp, max_confirm_reps=args.max_confirm_reps, rng=args.seed,
                      out_dir=out_dir, scheduler=args.scheduler, workers=args.workers, force=args.force,
                      progress=log, **kw)
    d = res.to_dict()
    d["expected_s"] = cost["expected_s"]
    if figure is not None:
        d["figure"] = save_sensitivity_figure(res, figure, force=args.force)

    d["result"] = result
    write_json(_json_safe(d), d["result"])
    d["_table"] = res.table()
    return d


def _study_targets(args, name, keys, what):
    """A study's outputs, checked before any work: ``(out_dir, figure or None, result)`` -- the folder
    (``--out-dir``, default ``data/<name>``; not a file), the PNG figure (``--figure``, default
    ``<out-dir>/<name>.png``, ``none`` to skip; a file spare-mc did not write is refused without ``--force``) and
    the JSON result ``<out-dir>/<name>.json`` (the same rule, its keys ``keys``); ``--workers`` must be >= 0."""

    check_local_workers(args.workers, "--workers")  # before any work
    out_dir = args.out_dir or os.path.join("data", name)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageValueError(f"`--out-dir` {out_dir} exists and is not a folder")
    figure = None if (args.figure or "").lower() == "none" else args.figure or os.path.join(out_dir, f"{name}.png")
    if figure is not None:
        if not figure.lower().endswith(".png"):
            raise UsageValueError(f"`--figure` must end in .png (the figure is a PNG), got {figure!r}")
        _check_figure_target(figure, args.force)
    result = os.path.join(out_dir, f"{name}.json")
    check_own_json(result, args.force, keys, what)
    if figure is not None and os.path.abspath(figure) == os.path.abspath(result):
        raise UsageValueError(f"`--figure` {figure} is this run's result file; choose another path")
    return out_dir, figure, result


def run_dynamic(args) -> dict:
    """The ``dynamic`` command: :func:`spare_mc.analyses.dynamic.dynamic_study`."""

    def floats(text, flag):
        try:
            return tuple(float(x) for x in text.split(",") if x.strip())
        except ValueError:
            raise UsageValueError(f"`{flag}` must be comma-separated numbers, got {text!r}") from None

    n_values = tuple(int(x) for x in floats(args.n_groups, "--n-groups"))
    shapes = floats(args.shapes, "--shapes")
    policies = tuple(x.strip() for x in args.policies.split(",") if x.strip())
    base = _config_overrides(args)
    kw = dict(screen_reps=args.screen_reps, confirm_reps=args.confirm_reps)
    if args.quick:
        _quick_conflicts(args, "dynamic", ("n_groups", "shapes", "screen_reps", "confirm_reps"))
        n_values, shapes = (200,), (0.5, 1.0)
        kw = dict(screen_reps=6, confirm_reps=20)
        base = {"n_steps": 2000, **base}
    if args.seed < 0:
        raise UsageValueError(f"`--seed` must be >= 0, got {args.seed}")
    out_dir, figure, result = _study_targets(args, "dynamic", ("rows", "settings"), "dynamic-checkpointing result")
    log = (lambda msg: _say(f"... {msg}")) if not args.json else None
    with _flag_names(n_values="--n-groups"):
        res = dynamic_study(n_values, shapes=shapes, policies=policies, rng=args.seed, base=base, out_dir=out_dir,
                            scheduler=args.scheduler, workers=args.workers, force=args.force, progress=log, **kw)
    d = res.to_dict()
    if figure is not None:
        d["figure"] = save_dynamic_figure(res, figure, force=args.force)
    d["result"] = result
    write_json(_json_safe(d), result)
    d["_table"] = res.table()
    return d


def run_repair(args) -> dict:
    """The ``repair`` command: :func:`spare_mc.analyses.repair.repair_study`."""

    try:
        n_values = tuple(int(x) for x in args.n_groups.split(",") if x.strip())
        times = tuple(float(x) for x in args.repair_times.split(",") if x.strip())
    except ValueError:
        raise UsageValueError("`--n-groups` and `--repair-times` must be comma-separated numbers") from None
    base = _config_overrides(args)
    reps = args.reps
    if args.quick:
        _quick_conflicts(args, "repair", ("n_groups", "repair_times"))
        n_values, times, reps = (200,), (600.0, 3600.0, 14400.0), min(reps, 6)
        base = {"n_steps": 2000, **base}
    _check_reps_and_seed(reps, "--reps", args.seed)
    out_dir, figure, result = _study_targets(args, "repair", ("rows", "best", "settings"), "repair result")
    log = (lambda msg: _say(f"... {msg}")) if not args.json else None

    for name in STUDY_SETS:  # (before the mapping below, which reads the study's `repair` as --law)
        if getattr(args, name, None) is not None:
            raise UsageValueError(f"`--{name.replace('_', '-')}` must not be given: the study sets it (the repair law "
                                  f"is --law, the repair times --repair-times)")
    with _flag_names(n_values="--n-groups", repair_times="--repair-times", repair="--law"):
        res = repair_study(n_values, repair_times=times, reps=reps, repair=args.law, rng=args.seed, base=base,
                           out_dir=out_dir, scheduler=args.scheduler, workers=args.workers, force=args.force,
                           progress=log)
    d = res.to_dict()
    d["best_r_changes"] = res.best_r_changes()
    if figure is not None:
        d["figure"] = save_repair_figure(res, figure, force=args.force)
    d["result"] = result
    write_json(_json_safe(d), result)
    d["_table"] = res.table()
    return d


def run_log(args) -> dict:
    """The ``log check|fit|replay`` commands: :mod:`spare_mc.logs.failure_logs`."""

    topo = Topology(**{f.name: getattr(args, f.name) for f in fields(Topology)})
    log = read_failure_log(args.log, topo, duration_s=args.duration_s)
    if args.log_command == "check":
        d = log.summary()
        lines = [f"{d['source']}: valid, {d['rows']} events in {d['duration_s']:.6g} s (first {d['first_event_s']:.6g} "
                 f"s, last {d['last_event_s']:.6g} s){', with repair_s' if d['has_repair_s'] else ''}"]
        for name, x in d["levels"].items():
            lines.append(f"  {name:<8} {x['events']:>8} events, {x['units_failed']:>7} of {x['units']} units failed")
        lines.append(f"on a fresh system (no restart): {d['fresh_system_job_events']} job events kill "
                     f"{d['fresh_system_groups_killed']} of {topo.n_groups} groups")
        return _stamp({**d, "_table": "\n".join(lines)})
    if args.log_command == "fit":
        if args.min_failures < 2:
            raise UsageValueError(f"`--min-failures` must be >= 2, got {args.min_failures}")
        fit = fit_failure_log(log, levels=args.levels, shared_shape=args.shared_shape,
                              min_failures=args.min_failures, ci=args.ci)
        d = fit.to_dict()
        lines = [f"{'level':<8} {'failures':>8} {'units':>8} {'shape k [95% CI]':>28} {'mean lifetime s [95% CI]':>40}"]
        for name, x in fit.fits.items():
            lines.append(f"{name:<8} {x.failures:>8} {x.units:>8} {x.shape:>8.4f} [{x.shape_ci[0]:.4f}, "
                         f"{x.shape_ci[1]:.4f}] {x.mean_s:>12.6g} [{x.mean_ci[0]:.6g}, {x.mean_ci[1]:.6g}]")
        for name, why in fit.skipped.items():
            lines.append(f"{name:<8} not fitted: {why}")
        models = {}
        if "gpu" in fit.fits:
            models["per-gpu"] = fit.cli_flags()
            if fit.shared_shape:
                for name in fit.fits:
                    if name != "gpu":
                        models[name] = fit.cli_flags(name)
                if len(fit.fits) > 2:  # several domain levels: the log's own mixture of them, all at once
                    models["mixed"] = fit.cli_flags("all")
        for name, flags in models.items():
            extra = f" --domain-mtbf-s {flags['domain_mtbf_s']:.6g}" if "domain_mtbf_s" in flags else ""
            extra += f" --domain-levels {flags['domain_levels']}" if "domain_levels" in flags else ""
            extra += f" --placement {flags['placement']}" if "placement" in flags else ""
            lines.append(f"spare-mc ttt flags ({name}): --failures {flags['failures']} --mtbf-s {flags['mtbf_s']:.6g} "
                         f"--shape {flags['shape']:.4g} --n-gpus {flags['n_gpus']} --calibration "
                         f"{flags['calibration']}{extra}")
        if "gpu" in fit.fits and not fit.shared_shape and len(fit.fits) > 1:
            lines.append("(domain models need one shape for domains and GPUs: add --shared-shape)")
        if "gpu" not in fit.fits:
            why = fit.skipped.get("gpu", "not among --levels")
            lines.append(f"(no spare-mc ttt flags: every failure model needs the GPU fit as its per-GPU background, "
                         f"and the gpu level was not fitted: {why})")
        # `spare-mc ttt` builds its domains on the default topology sizes: say so when this log's differ, or the
        # domain flags above would be read as domains of other sizes (the per-GPU model does not depend on them)
        default = Topology(topo.n_gpus, topo.n_groups)
        differ = [f"{f.name}={getattr(topo, f.name)} (ttt: {getattr(default, f.name)})" for f in fields(Topology)
                  if f.name not in ("n_gpus", "n_groups", "placement")  # placement: a flag of its own
                  and getattr(topo, f.name) != getattr(default, f.name)]
        if differ and any(name != "per-gpu" for name in models):
            d["flags_note"] = ("the domain flags assume spare-mc ttt's default topology, which differs from this "
                               "log's: " + ", ".join(differ) + "; for this topology use the Python API "
                               "(LogFit.failure_model with the same Topology)")
            lines.append(f"note: {d['flags_note']}")
        d["spare_mc_flags"] = models
        return _stamp({**d, "_table": "\n".join(lines)})
    rep = replay_log(log, args.layout, r=args.r, overhead=args.overhead)
    d = rep.summary()
    lines = [f"{d['source']}: {d['epochs']} complete epochs (wipe-outs) of the {d['layout']} layout, "
             f"N={d['n_groups']}, r={d['r']}; {d['tail_events']} job events after the last wipe-out ({d['tail_s']:.6g} s, not used); "
             f"{d['ignored_rows']} rows killed no live group"]
    if d["epochs"] < 2:
        lines.append("fewer than 2 complete epochs: no estimates")
    else:
        for name in [k for k in d if f"{k}_ci95" in d]:
            lo, hi = d[f"{name}_ci95"]
            lines.append(f"  {name:<14} {d[name]:>12.6g}  95% CI [{lo:.6g}, {hi:.6g}]")
    return _stamp({**d, "_table": "\n".join(lines)})


def _quick_conflicts(args, command: str, dests) -> None:
    """``--quick`` sets these flags itself: refuse one given with another value than its default rather than
    dropping it silently."""
    def flag(dest):
        return "--" + dest.replace("_", "-")

    sub = _build_parser()._subparsers._group_actions[0].choices[command]
    given = ", ".join(flag(d) for d in dests if getattr(args, d) != sub.get_default(d))
    if given:
        raise UsageValueError(f"--quick sets {', '.join(map(flag, dests))} itself, so {given} would be ignored: drop "
                              f"--quick or {given}")


def _timeline_flags(args) -> dict:
    """The :class:`TimelineConfig` keywords and failure-model parameters that are flags of this command, with
    their flags (``mtbf_s`` is ``--mtbf-s``; ``failure_model`` and ``failures`` are ``--failures``)."""

    names = [f.name for f in fields(TimelineConfig) if f.metadata.get("cli")]
    names += ["strategy", "n_groups", "r", "ckpt_period_s", *FAILURE_SPEC_DEFAULTS]  # last: failure_from_spec's
    out = {n: "--" + n.replace("_", "-") for n in names if hasattr(args, n)}
    if hasattr(args, "failures"):
        out.update(failures="--failures", failure_model="--failures")
    return out


@contextlib.contextmanager
def _flag_names(**flags):
    """Usage errors of the library call inside say the command line's flag where they name a keyword of the
    Python API (``n_values`` is ``--n-groups`` on the command line), and the command line's spelling of a
    failure model (``'per_gpu'`` is ``'per-gpu'``) where ``--failures`` is a flag."""
    try:
        yield
    except UsageError as exc:
        msg = str(exc)
        # a study's reserved keyword: "`base` must not set 'repair'" is "`--repair` must not be given"
        msg = re.sub(r"`base` must not set '(\w+)'",
                     lambda m: f"`{flags[m[1]]}` must not be given" if m[1] in flags else m[0], msg)
        for name, flag in flags.items():
            msg = msg.replace(f"`{name}`=True", f"`{flag}`")  # a switch: "`overhead`=True" is "`--overhead`"
            msg = re.sub(rf"(?<![(,\w]){re.escape(name)}=True\b", flag, msg)  # "pass force=True"
            # "name=" as in "got name=5" or "(got a=1, name=5)", not a field inside a repr such as
            # "PerGPU(gpu_mtbf_s=..., shape=0.78)"
            msg = msg.replace(f"`{name}`", f"`{flag}`")
            msg = re.sub(rf"(?:(?<=[ (])|\A){re.escape(name)}=",
                         lambda m: m[0] if _inside_repr(m.string, m.start()) else f"{flag}=", msg)
        if flags.get("failures") == "--failures":
            msg = msg.replace("'per_gpu'", "'per-gpu'")
        if msg == str(exc):
            raise
        raise type(exc)(msg) from None


def _inside_repr(text: str, i: int) -> bool:
    """Whether position ``i`` of ``text`` lies inside the parentheses of a call or repr (``PerGPU(...)``: the
    innermost open parenthesis follows a name), not a parenthetical remark (``(got ...)``)."""
    depth = 0
    for j in range(i - 1, -1, -1):
        if text[j] == ")":
            depth += 1
        elif text[j] == "(":
            if depth == 0:
                return j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_")
            depth -= 1
    return False


def _command_flags(parser, args) -> dict:
    """Every option of the command ``args`` ran (``log fit``: the ``fit`` parser's), as ``dest -> flag``
    (``min_failures`` is ``--min-failures``). With :func:`_timeline_flags` they rename the library's errors of every
    command (:func:`_main`): its keywords have the flags' names and meanings; a command adds the keywords its flags
    spell otherwise (``n_values`` is ``--n-groups``)."""
    while True:
        sub = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not sub or getattr(args, sub[0].dest, None) not in sub[0].choices:
            break
        parser = sub[0].choices[getattr(args, sub[0].dest)]
    return {a.dest: max(a.option_strings, key=len) for a in parser._actions
            if a.option_strings and a.dest not in ("help", "max_memory") and a.option_strings[0].startswith("--")}


def _ints(text, flag):
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageValueError(f"`{flag}` must be comma-separated integers, got {text!r}") from None


def _r_ranges(args):
    out = {}
    for s, text in (("rep", args.rep_r), ("spare", args.spare_r)):
        try:
            lo, hi = (int(x) for x in text.split("-"))
        except ValueError:
            raise UsageValueError(f"`--{s}-r` must be LO-HI (e.g. 2-6), got {text!r}") from None
        out[s] = (lo, hi)
    return out


def run_calibrate(args) -> dict:
    """The ``calibrate`` command (:func:`spare_mc.analyses.calibrate.calibrate`)."""

    space = SEARCH_SPACE
    if args.options is not None:
        names = [x.strip() for x in args.options.split(",") if x.strip()]
        unknown = [x for x in names if x not in SEARCH_SPACE]
        if len(set(names)) != len(names):
            raise UsageValueError(f"`--options` must name each option once, got {names}")
        if unknown or not names:
            raise UsageValueError(f"`--options` must name options among {list(SEARCH_SPACE)}, got "
                                  f"{unknown or names}")
        space = {k: SEARCH_SPACE[k] for k in names}
    schedule = DEFAULT_SCHEDULE
    if args.schedule is not None:
        try:
            schedule = tuple(tuple(int(y) for y in x.split(":")) for x in args.schedule.split(","))
        except ValueError:
            raise UsageValueError(f"`--schedule` must be SCREEN:CONFIRM pairs, comma-separated (e.g. 3:6,8:16), "
                                  f"got {args.schedule!r}") from None
    pf = PERIOD_FACTORS
    if args.period_factors is not None:
        try:
            pf = tuple(float(x) for x in args.period_factors.split(","))
        except ValueError:
            raise UsageValueError(f"`--period-factors` must be comma-separated numbers, got "
                                  f"{args.period_factors!r}") from None
    if args.seed < 0:
        raise UsageValueError(f"`--seed` must be >= 0, got {args.seed}")
    out_dir = args.out_dir or os.path.join("data", "calibrate")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageValueError(f"`--out-dir` {out_dir} exists and is not a folder")
    check_local_workers(args.workers, "--workers")  # before any work
    result = os.path.join(out_dir, "calibration.json")
    check_own_json(result, args.force, ("equivalence_set", "target"), "calibration result")
    if args.preset_out is not None:
        po = args.preset_out
        if not po.lower().endswith(".json"):
            raise UsageValueError(f"`--preset-out` must end in .json, got {po!r}")
        if os.path.abspath(po) == os.path.abspath(result) or (
                os.path.dirname(os.path.abspath(po)) == os.path.abspath(out_dir)
                and os.path.basename(po).startswith("calibrate-")):
            raise UsageValueError(f"`--preset-out` {po} is one of this run's own outputs in {out_dir}; choose "
                                  f"another path")
        parent = os.path.dirname(os.path.abspath(po))
        if not os.path.isdir(parent) and parent != os.path.abspath(out_dir):  # (--out-dir is made by the run)
            raise UsageValueError(f"`--preset-out`: the folder {parent} does not exist")
        check_own_json(po, args.force, ("overrides", "fitted"), "preset")
    base = _config_overrides(args)
    clash = fitted_clash(space, base)  # said with the command line's names (calibrate's own error names `base`)
    if clash:
        opt, keys = clash
        flags = ", ".join(f"--{k.replace('_', '-')}" for k in keys)
        raise UsageValueError(f"`{flags}` sets what the calibration fits (option {opt!r}): drop the flag, or "
                              f"leave {opt!r} out of `--options`")
    log = (lambda msg: _say(f"... {msg}")) if not args.json else None
    res = calibrate(args.target, fit_n=None if args.fit_n is None else _ints(args.fit_n, "--fit-n"),
                    predict_n=None if args.predict_n is None else _ints(args.predict_n, "--predict-n"),
                    space=space, base=base, schedule=schedule, eta=args.eta,
                    min_keep=args.min_keep, tol_ttt=args.tol_ttt, tol_availability=args.tol_availability,
                    alpha=args.alpha, rng=args.seed, r_ranges=_r_ranges(args), period_factors=pf,
                    out_dir=args.out_dir, scheduler=args.scheduler, workers=args.workers, force=args.force,
                    progress=log)
    d = res.to_dict()

    d["result"] = result
    write_json(_json_safe(d), d["result"])  # the result first: a preset path problem cannot lose it
    if args.preset_out is not None:
        d["preset"] = write_preset(res, args.preset_out, name=os.path.splitext(os.path.basename(args.preset_out))[0])
    d["_table"] = res.table()
    return d


def run_plot(args) -> dict:
    """The ``plot`` command."""

    names = [os.path.splitext(os.path.basename(path))[0] for path in args.dataset]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        clash = ", ".join(p for p, n in zip(args.dataset, names) if n == dup[0])
        raise UsageValueError(f"two datasets are named {dup[0]!r} ({clash}): their figures would overwrite each "
                              f"other; plot them one at a time into different --out folders")
    datasets = {n: open_sweep_dataset(path) for n, path in zip(names, args.dataset)}
    with _flag_names(outdir="--out"):
        return _stamp({"figures": save_figures(datasets, args.out, force=args.force)})


def _print_main_table(d: dict) -> None:
    print(f"{'N':>6} {'strategy':>9} {'best r':>6} {'T_c (s)':>9} {'TTT/T0':>24} {'availability':>24}")
    for row in d["rows"]:
        for s in ("ckpt", "rep", "spare"):
            x = row[s]
            lo, hi = x["ttt_over_t0_ci95"]
            alo, ahi = x["availability_ci95"]
            flag = " (capped runs: restricted mean)" if x["capped_fraction"] > 0 else ""
            print(f"{row['n_groups']:>6} {s:>9} {x['best_r']:>6} {x['ckpt_period_s']:>9.0f} "
                  f"{x['ttt_over_t0']:>8.3f} [{lo:.3f}, {hi:.3f}] {x['availability']:>8.4f} [{alo:.4f}, {ahi:.4f}]"
                  f"{flag}")
        lo, hi = row["ttt_reduction_ci95"]
        print(f"{row['n_groups']:>6} SPARe+CKPT vs Rep+CKPT: TTT reduction {row['ttt_reduction']:.3f} "
              f"[{lo:.3f}, {hi:.3f}]")
    pre = d.get("settings", {}).get("preset")
    if pre:
        print(f"preset {pre['name']} ({'FITTED' if pre['fitted'] else 'stated'}): "
              + ", ".join(f"{k}={v}" for k, v in pre["overrides"].items()))
    p = d["paper_N600"]
    if not any(row["n_groups"] == 600 for row in d["rows"]):
        return  # the paper's row is compared with ours at N = 600 only
    print(f"paper, N=600: Rep+CKPT {p['rep']['ttt_over_t0']} / {p['rep']['availability']:.2%} (r={p['rep']['best_r']}),"
          f" SPARe+CKPT {p['spare']['ttt_over_t0']} / {p['spare']['availability']:.2%} (r={p['spare']['best_r']}),"
          f" reduction {p['ttt_reduction']:.1%}")


def _print_table(d: dict) -> None:
    d = {k: v for k, v in d.items() if k not in ("software", "schema_version")}
    width = max(len(k) for k in d)
    for k, v in d.items():
        if isinstance(v, float):
            v = f"{v:.6g}"
        elif isinstance(v, list) and all(isinstance(x, (int, float)) for x in v):
            v = "[" + ", ".join(f"{x:.6g}" for x in v) + "]"
        print(f"{k:<{width}}  {v}")


# ---------------------------------------------------------------------------------------------------- main
def _say(message: str) -> None:
    """A line on stderr that never raises (stderr may be a closed pipe)."""
    try:
        print(message, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


_RESUMES = " (a sweep keeps its finished tasks and resumes where it stopped)"


def _sweeping(args) -> bool:
    """The command runs a resumable sweep (its finished tasks are on disk)."""
    return args is not None and args.command in ("sweep", "reproduce", "sensitivity", "calibrate", "dynamic",
                                                 "repair")


def _interrupted(exc: KeyboardInterrupt, args) -> int:
    """One line for Ctrl-C or SIGTERM (:class:`_Terminated`); the exit status, 130 or 143."""
    term = isinstance(exc, _Terminated)
    _say("spare-mc: " + ("terminated" if term else "interrupted") + (_RESUMES if _sweeping(args) else ""))
    return 143 if term else 130


def _interrupt_inside(exc: BaseException):
    """The KeyboardInterrupt (Ctrl-C, or SIGTERM's :class:`_Terminated`) an exception was raised from, if any: a
    signal handler's exception raised inside a numba call comes out as "SystemError: ... returned a result with an
    exception set", with the handler's exception as its cause. Only explicit causes are followed: a bug raised
    while handling an interrupt stays a bug."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__
    return None


def _os_message(exc: OSError) -> str:
    if exc.strerror is None:  # raised by spare_mc with its own message
        return str(exc)
    where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
    return f"{exc.strerror}{where}"


_COMMANDS = {"mu": run_mu, "overhead": run_overhead, "ttt": run_ttt, "reproduce": run_reproduce,
             "sweep": run_sweep_cmd, "compare": run_compare, "plot": run_plot, "sensitivity": run_sensitivity,
             "calibrate": run_calibrate, "dynamic": run_dynamic, "repair": run_repair, "log": run_log}


class _Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a batch scheduler's stop or time limit), raised where the signal lands so that it takes
    Ctrl-C's way out: a sweep closes its local cluster and the one-line message says how to resume (exit 143)."""


def _on_sigterm(signum, frame):
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM stops at once, as it would have without us
    raise _Terminated


def main(argv=None) -> int:
    """Entry point of the ``spare-mc`` console script.

    Exit status: 0 success, 1 the operating system refused, 2 a usage error, 70 a bug of spare-mc, 130 Ctrl-C,
    143 SIGTERM (docs/robustness.md, "Exit status")."""
    import signal
    import threading

    old = None
    if threading.current_thread() is threading.main_thread():  # signal handlers can only be set there
        old = signal.signal(signal.SIGTERM, _on_sigterm)

        if signal.getsignal(signal.SIGINT) is interrupted_while_loading:  # the console script has loaded
            signal.signal(signal.SIGINT, signal.default_int_handler)
    fmt = warnings.formatwarning  # a warning is one line, like an error, not Python's file:line and source
    warnings.formatwarning = lambda message, category, *rest, **kw: f"spare-mc: warning: {message}\n"
    try:
        return _main(argv)
    finally:
        warnings.formatwarning = fmt
        if old is not None:
            signal.signal(signal.SIGTERM, old)


def _glue_negative_sizes(argv: list) -> list:
    """``--max-memory -5G`` as ``--max-memory=-5G``: argparse reads a value that starts with '-' (and is not a plain
    negative number) as another flag, and says "expected one argument"; glued, the size's own check names the
    rule."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--max-memory" and i + 1 < len(argv) and argv[i + 1][:1] == "-" and argv[i + 1][1:2].isdigit():
            out.append(f"--max-memory={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def _main(argv):

    args = None
    try:
        parser = _build_parser()
        args = parser.parse_args(_glue_negative_sizes(sys.argv[1:] if argv is None else list(argv)))
        memory = {} if args.max_memory is None else {"max_memory": parse_size(args.max_memory)}
        with set_options(**memory), _flag_names(**{**_command_flags(parser, args), **_timeline_flags(args)}):
            out = _COMMANDS[args.command](args)
    except (_CliError, UsageError) as exc:  # the caller's input broke a rule: one line, exit 2
        _say(f"spare-mc: error: {exc}")
        return 2
    except OSError as exc:  # the file system or the network refused: one line, exit 1
        _say(f"spare-mc: error: {_os_message(exc)}" + (_RESUMES if isinstance(exc, SweepWriteError) else ""))
        return 1
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (_Terminated)
        return _interrupted(exc, args)
    except MemoryError:  # the machine's or the process's limit (ulimit -v, a container), not a bug: one line, exit 1
        _say("spare-mc: error: out of memory: the run needs more memory than this process may use (give a smaller "
             "problem, fewer replications per task or fewer workers; a sweep keeps its finished tasks and resumes)")
        return 1
    except Exception as exc:  # anything else is a bug of spare-mc: say so, with the traceback
        interrupt = _interrupt_inside(exc)
        if interrupt is not None:  # a signal handler raised inside a numba call, which wraps it in a SystemError
            return _interrupted(interrupt, args)

        _say(traceback.format_exc().rstrip())
        _say(f"spare-mc: internal error: this is a bug in spare-mc {__version__}; please report it with the command "
             f"line above")
        return 70
    if sys.stdout is None:  # started with stdout closed (`>&-`): nothing to print to, which is the caller's choice
        return 0
    try:
        _emit(args, out)
    except BrokenPipeError:  # e.g. piped into `head`: the reader has gone, which is not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError as exc:  # e.g. a full disk: one line, exit 1
        _say(f"spare-mc: error: cannot write the output: {_os_message(exc)}")
        return 1
    return 0


def _emit(args, out) -> None:
    table = out.pop("_table", None) if isinstance(out, dict) else None
    if args.json:
        print(json.dumps(_json_safe(out), default=json_default, allow_nan=False))
    elif args.command == "calibrate":
        print(table)
        if "preset" in out:
            print(f"preset: {out['preset']}")
        print(f"{out['elapsed_s']:.0f} s")
    elif args.command in ("dynamic", "repair"):
        print(table)
        print(f"result: {out['result']}" + (f"; figure: {out['figure']}" if "figure" in out else ""))
    elif args.command == "sensitivity" and table is None:  # --list-variants
        for v in out["variants"]:
            print(f"{v['name']:<28} {v['kind']:<12} {v['why']}")
    elif args.command == "sensitivity":
        print(table)
        print(f"datasets: {', '.join(out['datasets'].values())}")
        print(f"result: {out['result']}" + (f"; figure: {out['figure']}" if "figure" in out else ""))
        s = out["settings"]
        print(f"{s['confirm_reps']} confirmation replications per point; largest 95% half-width "
              f"{s['max_half_width_pp']:.2f} pp (target {s['target_pp']:g} pp"
              f"{'' if s['target_met'] else ', NOT met: raise --max-confirm-reps'}); {out['elapsed_s']:.0f} s")
    elif args.command == "reproduce" and out.get("table") == "domains":
        _print_domains_table(out)
    elif args.command == "reproduce" and out.get("table") == "phase":
        _print_phase_table(out)
    elif args.command == "reproduce" and out.get("table") == "llama3":
        _print_llama3_table(out)
    elif args.command == "reproduce" and out.get("table") == "domain-period":
        _print_domain_period_table(out)
    elif args.command == "reproduce":
        if "datasets" in out:
            print("datasets: " + ", ".join(out["datasets"].values()))
            print("figures:  " + ", ".join(out["figures"]))
            if "phase_map" in out:
                print(f"phase map: {out['phase_map']} (spare-mc reproduce --table phase --quick recomputes and prints it "
                      f"in ~10 s)")
            print(f"main table: {out['main_table']} ({out['elapsed_s']:.0f} s in all)")
        _print_main_table(out)
    elif args.command == "compare":
        _print_compare(out)
    elif args.command == "log":
        print(table)
    else:
        _print_table(out)
    sys.stdout.flush()

