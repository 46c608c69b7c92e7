import numpy as np
import pytest

#: Strict two-sided level for every statistical test: a correct implementation fails one test in 10,000 runs.
ALPHA = 1e-4


@pytest.fixture
def rng():
    return np.random.default_rng(20261129)
