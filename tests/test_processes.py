"""spare_mc._lib.processes: independent tasks in spawned processes, each result handed back with its index; and
how many workers the CPUs this process may use allow by default (spare_mc._lib.resources.usable_cpus)."""

import os
import time

import pytest

import spare_mc as sm
from spare_mc._lib import resources
from spare_mc._lib.processes import each_in_processes


def _square_and_pid(x):
    if x < 0:
        raise ValueError(f"task {x} failed")
    return x * x, os.getpid()


def _options(_):
    return sm.get_options()


def test_one_worker_runs_in_this_process_in_order():
    got = list(each_in_processes(_square_and_pid, range(4), 1))
    assert [i for i, _ in got] == [0, 1, 2, 3]
    assert [v for _, (v, _) in got] == [0, 1, 4, 9] and {pid for _, (_, pid) in got} == {os.getpid()}


def test_several_workers_give_every_result_with_its_index_from_other_processes():
    got = dict(each_in_processes(_square_and_pid, [3, 1, 4, 1, 5], 2))
    assert {i: v for i, (v, _) in got.items()} == {0: 9, 1: 1, 2: 16, 3: 1, 4: 25}
    pids = {pid for _, pid in got.values()}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2


def test_a_failing_task_raises_in_the_caller_with_its_own_error():
    with pytest.raises(ValueError, match="task -1 failed"):
        list(each_in_processes(_square_and_pid, [1, -1, 2], 2))
    with pytest.raises(ValueError, match="task -1 failed"):
        list(each_in_processes(_square_and_pid, [1, -1, 2], 1))


def test_workers_run_under_the_callers_options():
    """A spawned process starts with the default options: each task carries the caller's (a memory budget set
    here is the workers' too, so a run refused with one worker is refused with two)."""
    with sm.set_options(max_memory=1024, max_tasks=7):
        for workers in (1, 2):
            got = dict(each_in_processes(_options, [0, 1], workers))
            assert all(o == sm.get_options() for o in got.values()), (workers, got)
    assert sm.get_options()["max_tasks"] != 7


def test_stopping_early_terminates_the_workers():
    """A caller that stops consuming (here ``break`` after the first result) does not wait for the other tasks: the
    workers are terminated, the pool closed."""
    t0 = time.perf_counter()
    for _ in each_in_processes(_sleep, [0.0, 60.0, 60.0, 60.0], 2):
        break
    assert time.perf_counter() - t0 < 30


def _sleep(seconds):
    time.sleep(seconds)
    return seconds


def test_usable_cpus_follows_the_affinity_mask(monkeypatch):
    """The default number of workers is the CPUs this process may run on (a batch scheduler's binding, taskset, a
    container's cpuset), not the machine's: 4 of a 128-CPU node give 4; without an affinity call, the machine's."""
    monkeypatch.setattr(resources.os, "sched_getaffinity", lambda pid: {3, 7, 9, 11}, raising=False)
    monkeypatch.setattr(resources.os, "cpu_count", lambda: 128)
    assert resources.usable_cpus() == 4
    with pytest.raises(ValueError, match="more than 4 per CPU .16 on 4 CPUs"):
        resources.check_local_workers(17)
    monkeypatch.delattr(resources.os, "sched_getaffinity")
    assert resources.usable_cpus() == 128
