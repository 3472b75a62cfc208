"""``fa.linalg`` on the sim backend, small: the library routines take NumPy's LAPACK on the
simulator's host memory, and their results feed generated CUDA kernels run in numba's simulator
(a diagonal view's trace, a matrix norm's fused reductions)."""

import linalgcases as lc
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


def test_a_factorization_feeds_simulated_kernels():
    seed = lc.seed_of("sim")
    h = lc.hermitian_pd(np.random.default_rng(seed), "float64", (4, 4))
    low = fa.linalg.cholesky(fa.asarray(h) * 1.0)
    lc.close(low, np.linalg.cholesky(h), "float64", f"cholesky (seed {seed})")
    lc.close(fa.linalg.trace(low, offset=-1), np.trace(np.linalg.cholesky(h), -1), "float64",
             f"trace of the factor (seed {seed})")
    lc.close(fa.linalg.matrix_norm(low, ord=1), np.linalg.norm(np.linalg.cholesky(h), 1),
             "float64", f"1-norm of the factor (seed {seed})")
