"""The command line, ``spare-mc <command> ...``: the entry point (:func:`main`: the table of commands, signals, and
every error as one line and an exit status). The parser is :mod:`spare_mc.cli.parser`, the handlers
:mod:`spare_mc.cli.handlers` and :mod:`spare_mc.cli.studies`, the formatters :mod:`spare_mc.cli.format`.
Imports everything below; nothing imports it.

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
``log import RAW OUT``
    An operator's raw CSV log (its own columns, dates and unit names, mapped by flags) cleaned into a spare_mc log
    (sorted, duplicates removed, repairs cut at the unit's next failure), with every dropped or changed row counted
    (:mod:`spare_mc.logs.importer`).
``reproduce [--quick]``
    Every shipped study (sweeps on the local cluster or ``--scheduler``), the paper's main table, the phase map and
    all figures, under ``data/`` (``data/quick/`` for the quick flavour). ``--table main`` runs only the main table,
    ``--table domains`` the failure-domain study, ``--table llama3`` the effective training time of the Llama 3
    405B preset (:mod:`spare_mc.analyses.clusters`) with its sensitivity table, ``--table phase`` the phase map of which
    strategy wins by cluster size, save and restart time (:mod:`spare_mc.analyses.phase`), ``--table domain-period``
    the checkpoint period re-optimised per failure-domain level (the tables: :mod:`spare_mc.analyses.tables`).
``sensitivity``, ``calibrate``, ``dynamic``, ``repair``
    The studies of :mod:`spare_mc.analyses.sensitivity`, :mod:`~spare_mc.analyses.calibrate`,
    :mod:`~spare_mc.analyses.dynamic` and :mod:`~spare_mc.analyses.repair`.

Exit status: 0 success; 2 a usage error (bad argument or input file: one line naming the parameter and the rule);
1 the operating system refused (a file, the network: one line); 130 interrupted; 70 an internal error (a bug of
spare-mc: shown with its traceback).
"""

from __future__ import annotations

import os
import sys
import traceback
import warnings
from typing import Callable, NamedTuple

from .._lib.loading import interrupted_while_loading
from .._lib.resources import parse_size
from .._lib.validation import UsageError
from .._lib.version import __version__
from ..options import set_options
from ..sweep.storage import SweepWriteError
from . import format as show
from .format import print_json, say
from .handlers import (run_compare, run_log_check, run_log_fit, run_log_import, run_log_replay, run_mu, run_overhead,
                       run_plot, run_recommend, run_sweep_cmd, run_ttt)
from .parser import CliError, build_parser, command_flags, flag_names, glue_negative_sizes, timeline_flags
from .studies import (run_calibrate, run_domain_period_table, run_domains_table, run_dynamic, run_llama3_table,
                      run_phase_table, run_repair, run_reproduce, run_sensitivity, run_variants)

__all__ = ["main", "COMMANDS", "Command", "command_name", "Terminated"]


class Command(NamedTuple):
    """A command: ``run(args)`` computes its output, ``show(output)`` prints it as text (``--json``:
    :func:`spare_mc.cli.format.print_json`)."""

    run: Callable
    show: Callable


#: Every command, by :func:`command_name`: its handler and its formatter.
COMMANDS = {
    "mu": Command(run_mu, show.key_values),
    "overhead": Command(run_overhead, show.overhead),
    "ttt": Command(run_ttt, show.key_values),
    "sweep": Command(run_sweep_cmd, show.key_values),
    "compare": Command(run_compare, show.compare),
    "plot": Command(run_plot, show.key_values),
    "reproduce": Command(run_reproduce, show.reproduce),
    "reproduce --table main": Command(run_reproduce, show.reproduce),
    "reproduce --table domains": Command(run_domains_table, show.domains_table),
    "reproduce --table domain-period": Command(run_domain_period_table, show.domain_period_table),
    "reproduce --table phase": Command(run_phase_table, show.phase_table),
    "reproduce --table llama3": Command(run_llama3_table, show.llama3_table),
    "sensitivity": Command(run_sensitivity, show.sensitivity),
    "sensitivity --list-variants": Command(run_variants, show.variants),
    "calibrate": Command(run_calibrate, show.calibrate),
    "dynamic": Command(run_dynamic, show.study),
    "repair": Command(run_repair, show.study),
    "recommend": Command(run_recommend, show.recommend),
    "log check": Command(run_log_check, show.log_check),
    "log fit": Command(run_log_fit, show.log_fit),
    "log replay": Command(run_log_replay, show.log_replay),
    "log import": Command(run_log_import, show.log_import),
}


def command_name(args) -> str:
    """The key of :data:`COMMANDS` that the parsed command line names: the command, its ``log`` subcommand,
    ``reproduce``'s ``--table`` or ``sensitivity --list-variants``."""
    if args.command == "log":
        return f"log {args.log_command}"
    if args.command == "reproduce" and args.table is not None:
        return f"reproduce --table {args.table}"
    if args.command == "sensitivity" and args.list_variants:
        return "sensitivity --list-variants"
    return args.command


_RESUMES = " (a sweep keeps its finished tasks and resumes where it stopped)"


def _sweeping(args) -> bool:
    """The command runs a resumable sweep (its finished tasks are on disk); not the single tables that keep
    nothing until they end (``reproduce --table main|domains|domain-period|llama3``, and ``--table phase`` without
    ``--out-dir``)."""
    if args is None:
        return False
    table = getattr(args, "table", None)
    if args.command == "reproduce" and (table in ("main", "domains", "domain-period", "llama3")
                                        or (table == "phase" and args.out_dir is None)):  # cells kept in --out-dir
        return False
    return args.command in ("sweep", "reproduce", "sensitivity", "calibrate", "dynamic", "repair")


def _interrupted(exc: KeyboardInterrupt, args) -> int:
    """One line for Ctrl-C or SIGTERM (:class:`Terminated`); the exit status, 130 or 143."""
    term = isinstance(exc, Terminated)
    say("spare-mc: " + ("terminated" if term else "interrupted") + (_RESUMES if _sweeping(args) else ""))
    return 143 if term else 130


def _interrupt_inside(exc: BaseException):
    """The KeyboardInterrupt (Ctrl-C, or SIGTERM's :class:`Terminated`) an exception was raised from, if any: a
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
    """The operating system's refusal in one line: its reason and the file."""
    if exc.strerror is None:  # raised by spare_mc with its own message
        return str(exc)
    where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
    return f"{exc.strerror}{where}"


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a batch scheduler's stop or time limit), raised where the signal lands so that it takes
    Ctrl-C's way out: a sweep closes its local cluster and the one-line message says how to resume (exit 143)."""


def _on_sigterm(signum, frame):
    """SIGTERM's handler: :class:`Terminated` where the signal lands."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM stops at once, as it would have without us
    raise Terminated


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


def _main(argv):
    """Parse, run the command and print its output; every error as one line and the exit status."""

    args = None
    try:
        parser = build_parser()
        args = parser.parse_args(glue_negative_sizes(sys.argv[1:] if argv is None else list(argv)))
        memory = {} if args.max_memory is None else {"max_memory": parse_size(args.max_memory)}
        with set_options(**memory), flag_names(**{**command_flags(parser, args), **timeline_flags(args)}):
            command = COMMANDS[command_name(args)]
            out = command.run(args)
    except (CliError, UsageError) as exc:  # the caller's input broke a rule: one line, exit 2
        say(f"spare-mc: error: {exc}")
        return 2
    except OSError as exc:  # the file system or the network refused: one line, exit 1
        say(f"spare-mc: error: {_os_message(exc)}" + (_RESUMES if isinstance(exc, SweepWriteError) else ""))
        return 1
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
        return _interrupted(exc, args)
    except MemoryError:  # the machine's or the process's limit (ulimit -v, a container), not a bug: one line, exit 1
        say("spare-mc: error: out of memory: the run needs more memory than this process may use (give a smaller "
             "problem, fewer replications per task or fewer workers; a sweep keeps its finished tasks and resumes)")
        return 1
    except Exception as exc:  # anything else is a bug of spare-mc: say so, with the traceback
        interrupt = _interrupt_inside(exc)
        if interrupt is not None:  # a signal handler raised inside a numba call, which wraps it in a SystemError
            return _interrupted(interrupt, args)

        say(traceback.format_exc().rstrip())
        say(f"spare-mc: internal error: this is a bug in spare-mc {__version__}; please report it with the command "
             f"line above")
        return 70
    if sys.stdout is None:  # started with stdout closed (`>&-`): nothing to print to, which is the caller's choice
        return 0
    try:
        if args.json:
            print_json(out)
        else:
            command.show(out)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into `head`: the reader has gone, which is not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError as exc:  # e.g. a full disk: one line, exit 1
        say(f"spare-mc: error: cannot write the output: {_os_message(exc)}")
        return 1
    return 0

