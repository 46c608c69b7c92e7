"""The command line's parser and its flags: ``spare-mc``'s subcommands and options, built from the metadata of the
config fields (:class:`~spare_mc.TimelineConfig`, :class:`~spare_mc.model.topology.Topology`) so that every
default, meaning and unit lives in one place; and the mapping between flags and the library's keywords both ways
(the config overrides the flags give, and the library's errors said in the flags' names).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import types
import typing
from dataclasses import MISSING, fields

from .._lib.validation import UsageError
from .._lib.version import __version__
from ..analyses.dynamic import STUDY_SETS as DYNAMIC_SETS
from ..analyses.repair import STUDY_SETS as REPAIR_SETS
from ..logs.models import MODELS as FIT_MODELS
from ..model.failures import DOMAIN_SIZES, FAILURE_SPEC_DEFAULTS, failure_from_spec
from ..model.kinds import LAYOUT_KINDS, SPARE_LAYOUTS
from ..model.paper import PAPER_R
from ..model.strategies import STRATEGIES
from ..model.topology import DOMAIN_LEVELS, PLACEMENTS, Topology
from ..model.unit_renewal import AGE_STARTS, UNIT_LEVELS
from ..ttt.config import TimelineConfig
from ..ttt.optimize import OPTIMISED

__all__ = ["Parser", "CliError", "build_parser", "add_config_options", "flag_type", "config_overrides",
           "given_config_flags", "timeline_flags", "command_flags", "flag_names", "glue_negative_sizes"]


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are a :class:`CliError` (one line, no usage dump)."""

    def error(self, message):  # one line, no usage dump
        raise CliError(message)


class CliError(Exception):
    """A command line argparse cannot read (an unknown flag, a missing value): one line, exit 2."""


class _Once(argparse.Action):
    """A flag given at most once (argparse would keep the last of two values silently)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = getattr(namespace, "_given", set())  # the dests given so far
        if self.dest in given:
            raise CliError(f"give {option_string} once, got {option_string} twice")
        namespace._given = given | {self.dest}
        setattr(namespace, self.dest, values)


class _Removed(argparse.Action):
    """A flag removed from spare-mc: refused in one line that names the flag to use instead (hidden from the
    help)."""

    def __init__(self, option_strings, dest, instead, release, **kwargs):
        super().__init__(option_strings, dest, nargs="?", help=argparse.SUPPRESS, **kwargs)
        self.instead, self.release = instead, release

    def __call__(self, parser, namespace, values, option_string=None):
        raise CliError(f"{option_string} was removed in spare-mc {self.release}; use {self.instead}")


def add_reps(p, default, what):
    """``--reps`` (``what``, its default); ``--trials``, its alias until 0.3.0, is refused naming it."""
    p.add_argument("--reps", type=int, default=default, action=_Once, help=f"{what} (default {default})")
    p.add_argument("--trials", dest="removed_trials", action=_Removed, instead="--reps", release="0.3.0")


def add_seed(p):
    """``--seed``, the root seed (default 0)."""
    p.add_argument("--seed", type=int, default=0, help="root seed, a non-negative integer (default 0)")


# ``repair="log"`` needs a failure log replayed through the timeline, which only the Python API does
CHOICES = {"layout": SPARE_LAYOUTS, "repair": ("none", "fixed", "lognormal")}


def flag_type(hint) -> type:
    """The type of a config field's flag from the field's type (:func:`typing.get_type_hints`, not its annotation
    string): ``int``, ``float``, ``str`` or ``bool`` (a switch), and ``X | None`` as ``X``; any other type is a
    field the command line cannot give (a bug of its metadata)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = members[0] if len(members) == 1 else hint
    if hint not in (int, float, str, bool):
        raise TypeError(f"a command-line field must be an int, float, str or bool (or one of them | None), got {hint}")
    return hint


def add_config_options(p, topology=True, failures=True, reserved=(), config=TimelineConfig, unit=False) -> None:
    """One flag per :class:`TimelineConfig` field marked for the command line, with its meaning, unit and default
    taken from the field (so every default lives in one place) and its type from the field's type
    (:func:`flag_type`); ``failures=False``: the system-level failure process only (no failure-model flags).
    ``reserved``: fields the command sets itself; their flags stay (so that argparse does not read them as
    abbreviations of other flags, e.g. ``--shape`` of ``--shapes``) but are hidden from the help, and the library
    refuses them by name. ``config``: the dataclass whose fields these are."""

    hints = typing.get_type_hints(config)
    for f in fields(config):
        if not f.metadata.get("cli"):
            continue
        kind = flag_type(hints[f.name])
        if kind is bool:  # a switch that turns the option on (its default is off)
            p.add_argument("--" + f.name.replace("_", "-"), dest=f.name, action="store_const", const=True,
                           default=None, help=argparse.SUPPRESS if f.name in reserved else
                           f.metadata["help"] + " (default off)")
            continue
        default = None if f.default is MISSING else f.default
        shown = "" if default is None else f" (default {default:g})" if isinstance(default, float) else \
            f" (default {default})"
        p.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=kind, default=None,
                       choices=CHOICES.get(f.name),
                       help=argparse.SUPPRESS if f.name in reserved else f.metadata["help"] + shown)
    p.add_argument("--no-live-scaling", action="store_true",
                   help="the system-level failure rate does not fall as groups die (default: proportional to the "
                        "live GPUs)")
    no_sizes = dict.fromkeys(DOMAIN_SIZES)
    if not failures:
        p.set_defaults(failures="system", calibration=None, age_policy=None, domain_mtbf_s=None, domain_levels=None,
                       n_gpus=None, placement=None, **no_sizes)
        return
    kinds = ("system", "per-gpu") + DOMAIN_LEVELS + ("mixed",) + (("unit",) if unit else ())
    p.add_argument("--failures", choices=kinds, default="system",
                   help="failure model: system-level renewal (default); per-GPU Weibull lifetimes; or failure domains "
                        "(node, rack, power, pod; mixed: several levels at once, --domain-levels) on top of per-GPU "
                        "lifetimes, calibrated to --mtbf-s as --calibration says"
                        + ("; unit: a cluster in service, every unit of --unit-level a Weibull renewal process started "
                           "at its age (--unit-mean-s, --shape, --ages; the model `spare-mc log fit --model unit` "
                           "prints)" if unit else ""))
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
        p.set_defaults(n_gpus=None, placement=None, **no_sizes)
        return
    p.add_argument("--n-gpus", type=int, default=None,
                   help="GPUs in the system G for per-GPU and domain failures (default 600000; N must divide it)")
    p.add_argument("--placement", choices=("contiguous", "strided"), default=None,
                   help="how groups map onto nodes and racks for domain failures (default contiguous)")
    defaults = {f.name: f.default for f in fields(Topology)}
    for i, name in enumerate(DOMAIN_SIZES):  # the domains' sizes, as `spare-mc log` takes them (and log fit prints)
        coarser = ", ".join(DOMAIN_LEVELS[i:])
        p.add_argument("--" + name.replace("_", "-"), type=int, default=None,
                       help=f"{TOPOLOGY_HELP.get(name, 'topology: ' + name.replace('_', ' '))}; sizes the failure "
                            f"domains of levels {coarser} (default {defaults[name]})")
    if not unit:
        return
    p.add_argument("--unit-level", choices=UNIT_LEVELS, default=None,
                   help="--failures unit: the failing unit (gpu, node, rack, power, pod)")
    p.add_argument("--unit-mean-s", type=float, default=None,
                   help="--failures unit: mean lifetime of one unit (s)")
    p.add_argument("--ages", choices=AGE_STARTS, default=None,
                   help="--failures unit: the units' ages at the job's start: stationary (a cluster long in service; "
                        "default) or new")


def add_study_flags(p, reserved=()) -> None:
    """Where a study runs, whether it may replace foreign files, and its baseline (the ``ttt`` flags of
    system-level failures, but ``reserved``: those the study sets): shared by ``sensitivity``, ``calibrate``,
    ``dynamic`` and ``repair``."""
    p.add_argument("--workers", type=int, default=None,
                   help="local worker processes (default: the number of CPUs; 0 = in this process)")
    p.add_argument("--scheduler", default=None, help="address of an existing dask scheduler")
    p.add_argument("--force", action="store_true",
                   help="an output folder holding another setting's results (or results of no recorded setting): "
                        "move them into <out-dir>/replaced/ and run; also replace files spare-mc did not write")
    add_config_options(p, topology=False, failures=False, reserved=reserved)


def build_parser() -> argparse.ArgumentParser:
    """The ``spare-mc`` parser: every command and its flags."""

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--max-memory", metavar="SIZE", default=None,
                        help="memory this run may allocate, e.g. 512M, 8G (default: half of the available memory)")
    p = Parser(prog="spare-mc", description="SPARe reliability Monte Carlo toolkit")
    p.add_argument("--version", action="version", version=f"spare-mc {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    mu = sub.add_parser("mu", parents=[common], help="masked failures: Monte Carlo vs exact vs the paper's closed form")
    mu.add_argument("--n-groups", type=int, required=True, help="number of data-parallel groups N")
    mu.add_argument("--r", type=int, required=True, help="redundancy r: holder groups per shard type")
    mu.add_argument("--layout", choices=LAYOUT_KINDS, default="cyclic",
                    help="cyclic (unit stride), sidon (Sidon offsets), random (a fresh layout per replication), "
                         "block (Rep); default cyclic")
    add_reps(mu, 100_000, "Monte Carlo replications, streamed in chunks of 1,000,000")
    add_seed(mu)
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
    add_reps(ov, 2000, "Monte Carlo replications")
    add_seed(ov)
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
    tt.add_argument("--strategy", choices=STRATEGIES, default=None,
                    help="ckpt (checkpointing only), rep (replication + checkpoints), spare (stacking with adaptive "
                         "reordering + checkpoints); required with --model step, ckpt with --model classical")
    tt.add_argument("--n-groups", type=int, default=None,
                    help="number of data-parallel groups N (required with --model step; not with --model classical, "
                         "where every failure stops the whole system)")
    tt.add_argument("--r", type=int, default=None,
                    help="redundancy r (default: " + ", ".join(f"{r} for {s}" for s, r in PAPER_R.items())
                         + ": the paper's optima)")
    period = tt.add_mutually_exclusive_group()
    period.add_argument("--ckpt-period-s", type=float, default=None,
                        help="checkpoint period T_c (s): wall time from the end of the last checkpoint or restart to "
                             "the next checkpoint, at a step boundary (default: the theory optimum T_c*)")
    period.add_argument("--ckpt-period", choices=("optimal",), default=None,
                        help="'optimal' = the theory optimum T_c* (the default)")
    add_reps(tt, 50, "replications (jobs)")
    add_seed(tt)
    add_config_options(tt, unit=True)
    tt.add_argument("--model-check", choices=("passed", "failed"), default=None,
                    help="the predictive check of the failure model's fit (`spare-mc log fit` prints it with the "
                         "flags); a failed one is refused unless --accept-failed-check")
    tt.add_argument("--accept-failed-check", action="store_true",
                    help="run a failure model whose fit failed its predictive check anyway")
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
                    help="an --out-dir holding another study's or setting's results: move them into "
                         "<out-dir>/replaced/ and run; also replace files spare-mc did not write")
    rp.add_argument("--workers", type=int, default=None,
                    help="local worker processes for the sweeps and the phase map's cells (--table phase: default "
                         "1), or for --table domains's blocks of rows (default one per CPU; quick 1)")
    rp.add_argument("--scheduler", default=None, help="address of an existing dask scheduler for the sweeps")
    rp.add_argument("--n-values", default=None,
                    help="comma-separated N values of the main table (default 200,600,1000)")
    rp.add_argument("--reps", type=int, default=None,
                    help="replications per grid point of the main table (default 20; quick 6), per row of "
                         "--table domains (100; quick 8) or --table llama3 (1000; quick 100), per searched point of "
                         "--table phase (20; quick 8), per screened period of --table domain-period (20; quick 4; "
                         "fewer once one job is capped)")
    rp.add_argument("--confirm-reps", type=int, default=None,
                    help="replications of each selected optimum on fresh traces (default 50; quick 12; --table "
                         "phase: 100, quick 30; --table domain-period: 100 per compared period, quick 8, fewer once "
                         "one job is capped)")
    rp.add_argument("--seed", type=int, default=None,
                    help="root seed of the table run (--table), or of every study of the full reproduce: each sweep's, "
                         "the main table's and the phase map's (default: each study's own, 0 for the tables)")
    rp.add_argument("--preset", default=None,
                    help="run under a preset's option values (a shipped name, e.g. paper-n600, or a JSON file); "
                         "presets are fitted, never the default")
    add_config_options(rp, topology=False, reserved=OPTIMISED)
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
    se.add_argument("--screen-alpha", type=float, default=0.05,
                    help="the screen's elimination error: the best grid point of a screen is dropped with "
                         "probability at most this (default 0.05; 0: every point runs --reps replications)")
    add_seed(se)
    se.add_argument("--out-dir", default=None, help="folder of the datasets and the figure (default data/sensitivity)")
    se.add_argument("--figure", default=None,
                    help="tornado figure path (default <out-dir>/sensitivity.png; 'none' to skip it)")
    add_study_flags(se, reserved=OPTIMISED)
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
    add_seed(ca)
    ca.add_argument("--out-dir", default=None, help="folder of the round datasets (default data/calibrate)")
    ca.add_argument("--preset-out", default=None,
                    help="write the best-fitting combination as a preset file here (labelled as fitted)")
    add_study_flags(ca, reserved=OPTIMISED)
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
    dy.add_argument("--screen-alpha", type=float, default=0.05,
                    help="the screen's elimination error: in each factor screen (one policy, r and shape) the factor "
                         "with the least expected TTT/T0 is dropped with probability at most this (paired one-sided "
                         "t tests, Bonferroni, union bound; exact under normal paired differences). From 8 screen "
                         "replications on: the screen runs in looks (4, 12, 20 for 20) and factors shown worse stop "
                         "early. Reported numbers come from the confirmation's fresh replications either way "
                         "(default 0.05; 0: every factor runs --screen-reps)")
    add_seed(dy)
    dy.add_argument("--out-dir", default=None, help="folder of the datasets, the result and the figure "
                                                    "(default data/dynamic)")
    dy.add_argument("--figure", default=None, help="figure path (default <out-dir>/dynamic.png; 'none' to skip it)")
    add_study_flags(dy, reserved=DYNAMIC_SETS)
    dy.add_argument("--json", action="store_true", help="print one JSON object")
    add_log_parser(sub, common)
    add_recommend_parser(sub, common)
    rp = sub.add_parser("repair", parents=[common],
                        help="repair without a global restart: TTT/T0, availability, wipe-outs and the best r of Rep "
                             "and SPARe against the repair time")
    rp.add_argument("--n-groups", default="200,600,1000", help="comma-separated N (default 200,600,1000)")
    rp.add_argument("--repair-times", default=",".join(f"{t:g}" for t in (300, 900, 1800, 3600, 7200, 14400, 43200)),
                    help="comma-separated mean repair times in seconds (default 300 ... 43200)")
    rp.add_argument("--law", choices=("fixed", "lognormal"), default="fixed",
                    help="repair-time law with that mean (default fixed; lognormal uses --repair-sd)")
    add_reps(rp, 20, "replications per point")
    rp.add_argument("--quick", action="store_true", help="a small flavour: N = 200, three repair times, 2,000 steps")
    rp.add_argument("--screen-alpha", type=float, default=0.05,
                    help="the screen's elimination error: in each factor screen (one repair time and r) the factor "
                         "with the least expected TTT/T0 is dropped with probability at most this (paired one-sided "
                         "t tests, Bonferroni, union bound; exact under normal paired differences). From 8 "
                         "replications on: the screen runs in looks (4, 12, 20 for 20), factors shown worse stop "
                         "early, and the chosen factor keeps all --reps replications, so its row's numbers are the "
                         "full screen's (default 0.05; 0: every factor runs --reps)")
    add_seed(rp)
    rp.add_argument("--out-dir", default=None, help="folder of the datasets, the result and the figure "
                                                    "(default data/repair)")
    rp.add_argument("--figure", default=None, help="figure path (default <out-dir>/repair.png; 'none' to skip it)")
    add_study_flags(rp, reserved=REPAIR_SETS)
    rp.add_argument("--json", action="store_true", help="print one JSON object")
    return p


TOPOLOGY_HELP = {"n_gpus": "GPUs of the cluster the log was taken on, G (units are numbered from GPU 0)",
                  "n_groups": "data-parallel groups N of the job (must divide --n-gpus)",
                  "gpus_per_node": "GPUs per node (GPU x is in node x // gpus_per_node)",
                  "nodes_per_rack": "nodes per rack", "racks_per_power": "racks per power/network domain",
                  "power_per_pod": "power domains per pod"}


def add_topology_flags(q) -> None:
    """One flag per :class:`Topology` field (the log's cluster): ``log`` and ``recommend``."""
    for f in fields(Topology):
        flag = "--" + f.name.replace("_", "-")
        if f.name == "placement":
            q.add_argument(flag, choices=PLACEMENTS, default=f.default,
                           help=f"how groups map onto GPUs (default {f.default})")
        else:
            what = TOPOLOGY_HELP.get(f.name, f"topology: {f.name.replace('_', ' ')}")
            required = f.default is MISSING
            q.add_argument(flag, type=int, required=required, default=None if required else f.default,
                           help=what + ("" if required else f" (default {f.default})"))


def add_recommend_parser(sub, common) -> None:
    """``spare-mc recommend LOG``: the log's topology flags, the failure model's, the job's timeline flags."""

    rc = sub.add_parser("recommend", parents=[common],
                        help="from a failure log and a job's facts: the best strategy, r and checkpoint period, "
                             "checked against the log's own events")
    rc.add_argument("log", nargs="?", default=None,
                    help="path of the failure log (CSV, or Parquet with the parquet extra); without one, give a "
                         "failure model: --mtbf-s and --shape (system-level renewal) or --unit-level, --unit-mean-s "
                         "and --shape (a cluster in service), which is then neither checked nor replayed")
    rc.add_argument("--unit-mean-s", type=float, default=None,
                    help="without a log: the mean lifetime of one unit of --unit-level (s)")
    add_topology_flags(rc)
    rc.add_argument("--duration-s", type=float, default=None,
                    help="end of the log's observation window, s (default: its duration_s metadata, else its last "
                         "event)")
    rc.add_argument("--model", choices=FIT_MODELS, default=None,
                    help="failure model fitted to the log: system (one renewal process of the cluster; default) or "
                         "unit (per-unit renewals at their ages)")
    rc.add_argument("--unit-level", "--level", dest="unit_level", default=None,
                    help="--model unit: the failing level (default: most events)")
    rc.add_argument("--ages", choices=AGE_STARTS, default=None,
                    help="--model unit: the units' ages at the log start (default stationary)")
    rc.add_argument("--resolution-s", default=None,
                    help="the log's time resolution in s (default auto; 0: exact times)")
    rc.add_argument("--spare-r", default="2,3,4", help="SPARe redundancies to try, comma-separated (default 2,3,4)")
    rc.add_argument("--period-factors", default="0.5,1,2",
                    help="checkpoint periods to try, as multiples of the theory optimum (default 0.5,1,2)")
    add_reps(rc, 100, "jobs per candidate under the fitted model")
    rc.add_argument("--replay-starts", type=int, default=None,
                    help="most start times of the replay on the log's own events (default 60)")
    rc.add_argument("--sims", type=int, default=None,
                    help="simulated windows of the model's predictive check (default 200)")
    rc.add_argument("--accept-failed-check", action="store_true",
                    help="recommend even when the fitted model fails its predictive check (labelled in the output)")
    add_seed(rc)
    add_config_options(rc, topology=False, failures=False, reserved=("mtbf_s", "shape", "ckpt_period_factor"))
    # --mtbf-s and --shape are the failure model without a log (the positional's help names them): shown, with
    # what they mean here, not hidden as the reserved fields are nor with the timeline's defaults, which do not apply
    model_help = {"mtbf_s": "without a log: the system MTBF of a system-level renewal process (s), with --shape",
                  "shape": "without a log: the Weibull shape k of the failure model (with --mtbf-s, or with "
                           "--unit-level and --unit-mean-s)"}
    for action in rc._actions:
        if action.dest in model_help:
            action.help = model_help[action.dest]
    # the log's topology flags: add_config_options reset their defaults to None (the timeline's failure model has none)
    rc.set_defaults(**{f.name: f.default for f in fields(Topology) if f.default is not MISSING})
    rc.add_argument("--json", action="store_true", help="print one JSON object")


def add_log_parser(sub, common) -> None:
    """``spare-mc log check|fit|replay|import``: one flag per :class:`Topology` field, so new domain levels need no
    edit."""

    lg = sub.add_parser("log", help="real failure logs: check, fit a failure model, replay in the wipe-out and "
                                    "ReCtlr Monte Carlo")
    lsub = lg.add_subparsers(dest="log_command", required=True, parser_class=Parser)
    helps = {"check": "validate a failure log and print a summary",
             "fit": "per-level Weibull fits (censored maximum likelihood) with confidence intervals",
             "replay": "replay a log as successive epochs: wipe-out and ReCtlr estimates"}
    for name, text in helps.items():
        q = lsub.add_parser(name, parents=[common], help=text)
        q.add_argument("log", help="path of the log: CSV, or Parquet (.parquet/.pq; needs the parquet extra)")
        add_topology_flags(q)
        q.add_argument("--duration-s", type=float, default=None,
                       help="end of the observation window, s (default: the log's duration_s metadata, else its "
                            "last event)")
        if name == "fit":
            q.add_argument("--model", choices=("levels",) + FIT_MODELS, default="levels",
                           help="levels: a Weibull law per level, units new at the log start (default; the PerGPU "
                                "and domain models); system: one renewal process of the whole cluster (every event, "
                                "ties as rounded gaps); unit: every unit of --unit-level a renewal process at its "
                                "age (--ages). system and unit are checked against the log (predictive check)")
            q.add_argument("--unit-level", "--level", dest="unit_level", default=None,
                           help="--model unit: the level whose units fail (default: the level with most events)")
            q.add_argument("--ages", choices=AGE_STARTS, default=None,
                           help="--model unit: the units' ages at the log start: stationary (default; a cluster "
                                "in service) or new")
            q.add_argument("--resolution-s", default=None,
                           help="--model system/unit: the log's time resolution in s (gaps are rounded "
                                "observations; 0: exact times; default auto: an hour, a minute or a second)")
            q.add_argument("--sims", type=int, default=200,
                           help="simulated windows of the predictive check, which every --model runs (default 200)")
            q.add_argument("--check-layout", choices=("cyclic", "block", "sidon"), default="cyclic",
                           help="the layout whose wipe-outs the predictive check compares (default cyclic)")
            q.add_argument("--check-r", type=int, default=2,
                           help="its redundancy r, at most --n-groups (default 2)")
            add_seed(q)
            q.add_argument("--levels", default=None,
                           help="--model levels: comma-separated levels to fit (default: every level with at least "
                                "--min-failures failures)")
            q.add_argument("--shared-shape", action="store_true",
                           help="--model levels: one Weibull shape for all fitted levels (needed for a domain model "
                                "with per-GPU background)")
            q.add_argument("--min-failures", type=int, default=None,
                           help="--model levels: fewest failures a level needs to be fitted (default 10; at least 2)")
            q.add_argument("--ci", choices=("wald", "profile"), default="wald",
                           help="confidence intervals: wald (observed information, log scale; default) or profile "
                                "(profile likelihood: closer to 95%% with few failures)")
        if name == "replay":  # not "random": by name that is a fresh layout per replication, a log is one trajectory
            q.add_argument("--layout", choices=tuple(k for k in LAYOUT_KINDS if k != "random"), default="cyclic",
                           help="cyclic (unit stride), sidon, block (Rep); default cyclic")
            q.add_argument("--r", type=int, required=True, help="redundancy r: holder groups per shard type")
            q.add_argument("--overhead", action="store_true",
                           help="also run ReCtlr on every epoch (stack number, Phase-0 rate, moves, patch; on a log "
                                "with repair times it needs --ignore-repairs)")
            q.add_argument("--ignore-repairs", action="store_true",
                           help="ignore the log's repair_s column: a dead group stays dead until the next wipe-out "
                                "(default: it is back after its repair when the log gives one)")
        q.add_argument("--json", action="store_true", help="print one JSON object")
    add_log_import_parser(lsub, common)


def add_log_import_parser(lsub, common) -> None:
    """``spare-mc log import RAW OUT``: the flags of :func:`spare_mc.logs.importer.import_failure_log` (same names)."""
    q = lsub.add_parser("import", parents=[common],
                        help="convert an operator's raw CSV log (own columns, dates, host names) into a spare_mc "
                             "log, cleaned, with a report of every dropped or changed row")
    q.add_argument("raw", help="the raw CSV log (UTF-8; '#' comment lines; a header line naming the columns)")
    q.add_argument("out", help="the spare_mc log to write: CSV, or Parquet by the suffix .parquet/.pq")
    add_topology_flags(q)
    q.add_argument("--unit-column", required=True, help="column of the failed unit (a name or an index)")
    q.add_argument("--unit-names", choices=("suffix", "index", "first-seen"), default=None,
                   help="how unit names become indices: suffix (default: the trailing digits, node0123 -> 123), "
                        "index (the field is the index), first-seen (0, 1, ... in order of first appearance)")
    q.add_argument("--unit-map-file", default=None, help="a CSV name,unit[,level] mapping unit names to indices")
    q.add_argument("--time-column", default=None, help="column of the failure time")
    q.add_argument("--start-column", default=None,
                   help="column of the failure (start of the outage), with --end-column: repair = end - start")
    q.add_argument("--end-column", default=None, help="column of the end of the outage (empty: unknown repair)")
    q.add_argument("--time-format", default="s",
                   help="format of the time columns, --start and --end: s, ms, us, min, h, d (numbers in that "
                        "unit), epoch (seconds since 1970 UTC), iso (ISO 8601 dates) or a strftime format such as "
                        "'%%Y-%%m-%%d %%H:%%M' or '%%m/%%d/%%Y %%H:%%M' (default s)")
    q.add_argument("--level", default=None, help="the level of every row (gpu, node, rack, ...)")
    q.add_argument("--level-column", default=None, help="column giving each row's level (instead of --level)")
    q.add_argument("--repair-column", default=None, help="column of repair times (empty: unknown)")
    q.add_argument("--repair-unit", choices=("s", "ms", "us", "min", "h", "d"), default="s",
                   help="unit of --repair-column (default s)")
    q.add_argument("--start", default=None,
                   help="the time origin, in --time-format (default: the raw file's '# start:' comment, else the "
                        "first event less one resolution step)")
    q.add_argument("--end", default=None, help="the window end, in --time-format (default: the raw file's "
                                               "'# end:' or '# duration_s:' comment, else the last event)")
    q.add_argument("--duration-s", type=float, default=None, help="the window end, seconds after the origin")
    q.add_argument("--drop-bad-rows", action="store_true",
                   help="drop rows with a missing or unreadable field and count them (default: refuse the log, "
                        "naming the first)")
    q.add_argument("--force", action="store_true", help="replace OUT if it exists")
    q.add_argument("--json", action="store_true", help="print one JSON object")


def config_overrides(args, n_groups=None) -> dict:
    """:class:`TimelineConfig` keyword arguments from the flags that were given (``failures`` and ``topology``
    built by :func:`spare_mc.model.failures.failure_from_spec` when ``n_groups`` is known)."""

    d = {f.name: getattr(args, f.name) for f in fields(TimelineConfig)
         if f.metadata.get("cli") and getattr(args, f.name, None) is not None}
    if args.no_live_scaling:
        d["live_scaling"] = False
    defaults = {f.name: f.default for f in fields(TimelineConfig)}
    kind = args.failures.replace("-", "_")
    if kind == "unit":  # a stream, not a TimelineConfig failure model (spare_mc.cli.handlers._run_ttt_unit)
        return d
    spec = dict(age_policy=args.age_policy, domain_mtbf_s=args.domain_mtbf_s, n_gpus=args.n_gpus,
                placement=args.placement, calibration=args.calibration, domain_levels=args.domain_levels)
    sizes = {name: getattr(args, name, None) for name in DOMAIN_SIZES}
    failures, topo = failure_from_spec(kind, n_groups or 2, mtbf_s=d.get("mtbf_s", defaults["mtbf_s"]),
                                       shape=d.get("shape", defaults["shape"]), clocked=True,
                                       sizes={k: v for k, v in sizes.items() if v is not None}, **spec)
    if failures is not None:
        d["failures"] = failures
        if n_groups is not None:
            d["topology"] = topo
    return d


def given_config_flags(args) -> list:
    """The timeline and failure-model flags given on the command line (``--restart-s``, ``--failures``, ...)."""

    given = [f"--{f.name.replace('_', '-')}" for f in fields(TimelineConfig)
             if f.metadata.get("cli") and getattr(args, f.name, None) is not None]
    if args.no_live_scaling:
        given.append("--no-live-scaling")
    if args.failures not in (None, "system"):
        given.append("--failures")
    given += [f"--{name.replace('_', '-')}" for name in ("calibration", "age_policy", "domain_mtbf_s", "domain_levels",
                                                          *DOMAIN_SIZES)
              if getattr(args, name, None) is not None]
    return given


def timeline_flags(args) -> dict:
    """The :class:`TimelineConfig` keywords and failure-model parameters that are flags of this command, with
    their flags (``mtbf_s`` is ``--mtbf-s``; ``failure_model`` and ``failures`` are ``--failures``)."""

    names = [f.name for f in fields(TimelineConfig) if f.metadata.get("cli")]
    names += ["strategy", "n_groups", "r", "ckpt_period_s", *FAILURE_SPEC_DEFAULTS, *DOMAIN_SIZES]  # (from_spec's)
    out = {n: "--" + n.replace("_", "-") for n in names if hasattr(args, n)}
    if hasattr(args, "failures"):
        out.update(failures="--failures", failure_model="--failures")
    return out


@contextlib.contextmanager
def flag_names(**flags):
    """Usage errors of the library call inside say the command line's flag where they name a keyword of the
    Python API (``n_values`` is ``--n-groups`` on the command line), and the command line's spelling of a
    failure model (``'per_gpu'`` is ``'per-gpu'``) where ``--failures`` is a flag."""
    try:
        yield
    except UsageError as exc:
        if getattr(exc, "file_keys", False):  # about a file's content: its keys, not flags (in_file)
            raise
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
                         lambda m: m[0] if inside_repr(m.string, m.start()) else f"{flag}=", msg)
        if flags.get("failures") == "--failures":
            msg = msg.replace("'per_gpu'", "'per-gpu'")
        if msg == str(exc):
            raise
        raise type(exc)(msg) from None


def inside_repr(text: str, i: int) -> bool:
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


def command_flags(parser, args) -> dict:
    """Every option of the command ``args`` ran (``log fit``: the ``fit`` parser's), as ``dest -> flag``
    (``min_failures`` is ``--min-failures``). With :func:`timeline_flags` they rename the library's errors of every
    command (:func:`spare_mc.cli.main`): its keywords have the flags' names and meanings; a command adds the
    keywords its flags spell otherwise (``n_values`` is ``--n-groups``)."""
    while True:
        sub = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not sub or getattr(args, sub[0].dest, None) not in sub[0].choices:
            break
        parser = sub[0].choices[getattr(args, sub[0].dest)]
    return {a.dest: max(a.option_strings, key=len) for a in parser._actions
            if a.option_strings and a.dest not in ("help", "max_memory") and a.option_strings[0].startswith("--")
            and not isinstance(a, _Removed)}


def glue_negative_sizes(argv: list) -> list:
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
