import os

import numpy as np
import pytest

# What the tests capture on standard error must not depend on whether numba's cache was warm (CI starts cold): the
# one-time "compiling ..." notice is off here; tests/test_numba_cache.py turns it on where it tests it. Nor does a
# first SPARe job start a second process to compile the timeline (spare_mc.ttt.cold_start), whose failure would
# print a line: tests/test_rectlr_calls.py turns it on where it tests it.
os.environ["SPARE_MC_COMPILE_NOTICE"] = "0"
os.environ["SPARE_MC_COMPILE_AHEAD"] = "0"

#: Strict two-sided level for every statistical test: a correct implementation fails one test in 10,000 runs.
ALPHA = 1e-4


@pytest.fixture
def rng():
    return np.random.default_rng(20261129)
