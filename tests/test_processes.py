"""spare_mc._lib.processes: independent tasks in spawned processes, each result handed back with its index."""

import os

import pytest

from spare_mc._lib.processes import each_in_processes


def _square_and_pid(x):
    if x < 0:
        raise ValueError(f"task {x} failed")
    return x * x, os.getpid()


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
