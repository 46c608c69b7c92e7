"""ReCtlr passed to the timeline as first-class functions, and the first SPARe job's second compiling process.

Every timeline test runs through the first-class calls (tests/test_timeline.py compares them with the SimPy twin
and the exact checks); these check the conversion itself, the stand-ins of the other strategies, the one compiled
signature per variant that the second process relies on, and what the second process does when it works, fails,
hangs or cannot start.
"""

import contextlib
import os
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
from numba import typeof, types
from numba.core.errors import NumbaExperimentalFeatureWarning
from numba.experimental.function_type import _get_jit_address, _get_wrapper_address

import spare_mc
from spare_mc import TimelineConfig
from spare_mc._kernels import rectlr, rectlr_calls
from spare_mc._kernels import timeline as tk
from spare_mc._kernels.rectlr_calls import RESET_SIG, STEP_SIG
from spare_mc.ttt import cold_start
from spare_mc.ttt import run as T
from spare_mc.ttt.run import compile_variant, run_timeline


# ------------------------------------------------------------------------------------------- the first-class calls
def _kernel_addresses(kernel, sig):
    cres = kernel.get_compile_result(sig)
    lib = cres.library
    return (lib.get_pointer_to_function(cres.fndesc.llvm_func_name),
            lib.get_pointer_to_function(cres.fndesc.llvm_cfunc_wrapper_name))


@pytest.mark.parametrize("fc, kernel, sig", [(rectlr_calls.step, rectlr.rectlr_step, STEP_SIG),
                                             (rectlr_calls.reset, rectlr.reset_state, RESET_SIG)])
def test_first_class_functions_are_typed_as_functions_and_convert_to_the_kernels_own_code(fc, kernel, sig):
    """numba types them as ``FunctionType`` of their signature (so the timeline compiles without them), and numba's
    own conversion, which asks for their compile result and addresses at every call, gets those of ReCtlr's
    kernel for that signature -- also for an equal signature object it has not seen, and again from the memo."""
    assert typeof(fc) == types.FunctionType(sig)
    rectlr_calls.calls(True)
    jit_addr, c_addr = _kernel_addresses(kernel, sig)
    equal = types.FunctionType(sig).signature  # equal to sig, another object
    assert equal == sig
    for s in (sig, equal, equal):
        assert _get_jit_address(fc, s) == jit_addr
        assert _get_wrapper_address(fc, s) == c_addr
        assert fc.get_compile_result(s).fndesc.llvm_func_name == kernel.get_compile_result(sig).fndesc.llvm_func_name


def test_the_other_strategies_get_stand_ins_and_a_spare_job_given_them_fails_loudly(monkeypatch):
    """CKPT-only and Rep+CKPT jobs get the stand-ins (they never call ReCtlr); a SPARe job given them by mistake
    stops with the kernel's "no assignment" error instead of running without ReCtlr."""
    assert rectlr_calls.calls(True) == (rectlr_calls.step, rectlr_calls.reset)
    assert rectlr_calls.calls(False) == (rectlr_calls.no_step, rectlr_calls.no_reset)
    cfg = TimelineConfig("spare", 24, r=3, n_steps=200, mtbf_s=30.0)
    run_timeline(cfg, np.random.SeedSequence(0))
    monkeypatch.setattr(rectlr_calls, "calls", lambda spare: (rectlr_calls.no_step, rectlr_calls.no_reset))
    with pytest.raises(RuntimeError, match="ReCtlr found no assignment"):
        run_timeline(cfg, np.random.SeedSequence(0))


def test_numbas_first_class_warning_is_silenced_around_a_variants_first_call_only(monkeypatch):
    """numba warns at every compilation of a kernel taking first-class functions: the warning is silenced around
    each variant's first call in a process (which may compile), not process-wide and not at every job."""
    msg = "First-class function type feature is experimental"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with rectlr_calls.quiet():
            warnings.warn(msg, NumbaExperimentalFeatureWarning, stacklevel=1)  # silenced
        with pytest.raises(NumbaExperimentalFeatureWarning):
            warnings.warn(msg, NumbaExperimentalFeatureWarning, stacklevel=1)  # a user's own: not silenced
    entered = []

    @contextlib.contextmanager
    def counting():
        entered.append(1)
        yield

    monkeypatch.setattr(rectlr_calls, "quiet", counting)
    monkeypatch.setattr(tk, "_noticed", set())
    cfg = TimelineConfig("spare", 24, r=3, n_steps=200)
    for i in range(3):
        run_timeline(cfg, np.random.SeedSequence(i))
    assert entered == [1]


def test_each_variant_compiles_one_signature_for_every_strategy_and_the_second_process_job():
    """The second process compiles a variant by running a 4-step CKPT-only job of it (:func:`compile_variant`):
    that is the variant's only compiled signature, the one every strategy's jobs then load."""
    seed = np.random.SeedSequence(3)
    for cfg in (TimelineConfig("spare", 24, r=3, n_steps=200), TimelineConfig("rep", 24, r=2, n_steps=200),
                TimelineConfig("ckpt", 24, n_steps=200), TimelineConfig("spare", 24, r=3, layout="random", n_steps=200),
                TimelineConfig("spare", 24, r=3, n_steps=200, repair="lognormal"),
                TimelineConfig("spare", 24, r=3, n_steps=200, failures=spare_mc.PerGPU(2e6, 0.8), ckpt_period_s=600.0)):
        run_timeline(cfg, seed)
    for extended in (False, True):
        compile_variant(extended)
    basic = [s for s in tk.timeline.signatures if isinstance(s[-1], types.NoneType)]
    assert len(basic) == 1 and len(tk.timeline.signatures) == 2, tk.timeline.signatures


# ------------------------------------------------------------------------------------------ the second process
@pytest.fixture
def fresh(monkeypatch):
    """cold_start turned on (the suite turns it off), with nothing decided yet in this process, nothing in numba's
    cache and two usable CPUs."""
    monkeypatch.setattr(cold_start, "_pending", {})
    monkeypatch.setattr(cold_start, "_variant_cached", lambda extended: False)
    monkeypatch.setattr(cold_start._cache, "compiled_or_cached", lambda *a, **k: False)
    monkeypatch.setattr(cold_start, "_usable_cpus", lambda: 2)
    monkeypatch.delenv(cold_start.AHEAD_ENV, raising=False)
    monkeypatch.delenv(cold_start._cache.NOTICE_ENV, raising=False)
    return monkeypatch


def _child_runs(fresh, code):
    fresh.setattr(cold_start, "_CHILD", code + "  # {root} {init}")


@pytest.mark.parametrize("why", ["variant cached", "ReCtlr cached", "turned off", "one CPU", "no interpreter"])
def test_nothing_starts_when_it_would_not_help(fresh, capsys, why):
    """No process when the cache holds the variant (nothing to compile) or ReCtlr (nothing to do meanwhile), when
    turned off, with one usable CPU, or without an interpreter to start."""

    def no_process(*a, **k):
        raise AssertionError("a process was started")

    fresh.setattr(subprocess, "Popen", no_process)
    if why == "variant cached":
        fresh.setattr(cold_start, "_variant_cached", lambda extended: True)
    elif why == "ReCtlr cached":
        fresh.setattr(cold_start._cache, "compiled_or_cached", lambda d, which=None: d is tk.live_state)
    elif why == "turned off":
        fresh.setenv(cold_start.AHEAD_ENV, "0")
    elif why == "one CPU":
        fresh.setattr(cold_start, "_usable_cpus", lambda: 1)
    else:
        fresh.setattr(sys, "executable", "")
    assert cold_start.start(False) is False
    cold_start.wait(False)  # nothing pending: returns at once
    assert capsys.readouterr().err == ""


def test_each_plan_asks_for_the_variant_its_jobs_run(monkeypatch):
    """A SPARe config's plan starts the second process for the variant its jobs will need: drawn failures of the
    paper's model the basic one, unit clocks and a failure log's jobs the extended one; other strategies none."""
    asked = []
    monkeypatch.setattr(cold_start, "start", asked.append)
    cfgs = [TimelineConfig("spare", 26, r=3, n_steps=77),
            TimelineConfig("spare", 24, r=3, n_steps=77, failures=spare_mc.PerGPU(2e6, 0.8), ckpt_period_s=600.0),
            TimelineConfig("rep", 26, r=2, n_steps=77)]
    for cfg in cfgs:
        T._job_plan(cfg)
    T._job_plan(cfgs[0], True)
    assert asked == [False, True, True]


def test_a_process_that_works_is_said_once_and_waited_for(fresh, capsys, tmp_path):
    mark = tmp_path / "done"
    _child_runs(fresh, f"import time, pathlib; time.sleep(0.5); pathlib.Path({str(mark)!r}).write_text('x')")
    assert cold_start.start(False) is True
    assert cold_start.start(False) is False  # once per variant and process
    cold_start.wait(False)
    assert mark.exists()  # wait returned after the process finished
    err = capsys.readouterr().err
    assert err.count("in two processes") == 1 and "failed" not in err
    cold_start.wait(False)  # waited for once


def test_a_process_that_fails_is_reported_and_the_job_goes_on(fresh, capsys):
    _child_runs(fresh, "import sys; print('it broke', file=sys.stderr); sys.exit(3)")
    assert cold_start.start(True) is True
    cold_start.wait(True)
    assert "compiling the timeline kernel ahead failed (it broke); the job compiles it itself" in \
        capsys.readouterr().err


def test_every_thread_waits_for_the_process(fresh, capsys):
    """Jobs on several threads (dask's threads): each one's first kernel call waits for the process, not only the
    first thread's."""
    _child_runs(fresh, "import time; time.sleep(1.5)")
    assert cold_start.start(False) is True
    took = []

    def job():
        t = time.perf_counter()
        cold_start.wait(False)
        took.append(time.perf_counter() - t)

    threads = [threading.Thread(target=job) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(took) == 3 and min(took) > 0.5, took
    assert "failed" not in capsys.readouterr().err


def test_an_interruption_while_waiting_stops_the_process(fresh):
    _child_runs(fresh, "import time; time.sleep(60)")
    assert cold_start.start(False) is True
    proc = cold_start._pending[False][0]
    real_wait = proc.wait

    def interrupted(timeout=None):
        if timeout is not None:
            raise KeyboardInterrupt
        return real_wait()

    fresh.setattr(proc, "wait", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cold_start.wait(False)
    assert proc.poll() is not None and cold_start._pending[False] is None


def test_a_process_that_imports_another_spare_mc_fails_and_says_so(fresh, capsys):
    """The process must compile into this package's cache: one that finds another ``spare_mc`` first says so."""
    fresh.setattr(cold_start, "_INIT", "/nowhere/spare_mc/__init__.py")
    assert cold_start.start(False) is True
    cold_start.wait(False)
    assert "ahead failed (another spare_mc comes first on its path: " in capsys.readouterr().err


def test_a_process_that_hangs_is_stopped(fresh, capsys):
    _child_runs(fresh, "import time; time.sleep(60)")
    fresh.setattr(cold_start, "WAIT_S", 0.5)
    assert cold_start.start(False) is True
    proc = cold_start._pending[False][0]
    cold_start.wait(False)
    assert proc.poll() is not None  # stopped
    assert "took over 0 s and was stopped" in capsys.readouterr().err


def test_a_process_that_cannot_start_is_reported(fresh, capsys):
    def no_resources(*a, **k):
        raise OSError("no more processes")

    fresh.setattr(subprocess, "Popen", no_resources)
    assert cold_start.start(False) is False
    assert "could not start a process to compile the timeline kernel ahead (no more processes)" in \
        capsys.readouterr().err


_COLD_JOB = """
from numba.core import event
from spare_mc import TimelineConfig, simulate_ttt

compiled = []
class Count(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
r = simulate_ttt(TimelineConfig("spare", 24, r=3, n_steps=300, mtbf_s=60.0), 3, rng=5)
print(repr([run.ttt_s for run in r.runs]))
print("compiled:", compiled)
"""


@pytest.mark.slow
def test_a_cold_first_spare_job_compiles_in_two_processes_and_gives_the_same_numbers(tmp_path):
    """An empty numba cache: the first SPARe job says it compiles in two processes, and its numbers are those of a
    warm run; a second process on that cache compiles nothing (ReCtlr's first-class functions once compiled a
    second copy of rectlr_step in every process: numba's cache had keyed the two compilations differently)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), cold_start._cache.NOTICE_ENV: "1"}
    env.pop(cold_start.AHEAD_ENV, None)
    cold = subprocess.run([sys.executable, "-c", _COLD_JOB], env=env, capture_output=True, text=True, timeout=600,
                          check=True)
    assert "in two processes" in cold.stderr, cold.stderr
    warm = subprocess.run([sys.executable, "-c", _COLD_JOB], env=env, capture_output=True, text=True, timeout=600,
                          check=True)
    numbers, compiled = cold.stdout.splitlines()
    assert "timeline" not in compiled and "rectlr_step" in compiled  # the other process compiled the timeline
    assert warm.stderr == "" and warm.stdout.splitlines() == [numbers, "compiled: []"]
    here = spare_mc.simulate_ttt(TimelineConfig("spare", 24, r=3, n_steps=300, mtbf_s=60.0), 3, rng=5)
    assert numbers == repr([run.ttt_s for run in here.runs])
