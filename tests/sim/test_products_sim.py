"""Products on the sim backend: the generated tiled CUDA product kernel (a block of 16 x 16
threads per 64 x 64 output tile, K in slabs of 16 through shared memory) runs in numba's
simulator, against NumPy (tests/productcases.py). Small shapes (every simulated thread is a
Python thread), still past one tile on each side: (67, 20) @ (20, 70) takes two tiles along M
and N and two slabs along K, each partly past the matrix edge."""

import numpy as np
import productcases as pc
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


def test_tiles_past_the_edges_layouts_and_batches_match_numpy():
    pc.check_matmul_cases(67, 20, 70, ["float32"], "sim")


def test_each_dtype_kind_matches_numpy():
    # float16 sums in float32, integers wrap in their own type, bool is the or of the ands;
    # mixed operands read in place and sum in NumPy's result type
    pc.check_matmul_cases(9, 13, 7, ["complex64", "complex128"], "sim")
    pc.check_matmul_cases(9, 13, 7, ["float16", "float64", "int32", "int64", "bool", "uint8"],
                          "sim")
    seed = pc.seed_of("sim mixed")
    rng = np.random.default_rng(seed)
    for left, right in (("int32", "float32"), ("bool", "int8"), ("uint64", "int64")):
        a, b = pc.sample(rng, left, (5, 6)), pc.sample(rng, right, (6, 4))
        pc.check((fa.asarray(a) @ fa.asarray(b)).get(), a, b, f"{left} @ {right} (seed {seed})")


def test_pending_operands_and_readers_and_the_kernel_that_ran():
    seed = pc.seed_of("sim pending")
    rng = np.random.default_rng(seed)
    a, b = pc.sample(rng, "float32", (10, 6)), pc.sample(rng, "float32", (6, 5))
    got = ((fa.asarray(a) * 2 - 1) @ fa.asarray(b).T.T + 1.5).get()
    pc.check(got - np.float32(1.5), a * 2 - 1, b, f"pending operands (seed {seed})",
             want=(a * 2 - 1) @ b)
    explanation = fa.explain(fa.asarray(a) @ fa.asarray(b) + 1)
    assert "not fused" in str(explanation)
    assert "cuda.shared.array" in explanation.kernels[0][1]   # the tiled kernel, not the cpu loop


def test_vecdot_and_tensordot_match_numpy():
    pc.check_vecdot_and_tensordot("sim")
