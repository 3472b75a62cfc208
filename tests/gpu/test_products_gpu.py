"""Products on the cuda backend against NumPy (tests/productcases.py): the tiled kernel (a
block of 16 x 16 threads per 64 x 64 output tile, K in slabs of 16 through shared memory) over
shapes past the tile edges, vectors, broadcast batches, transposed and negative-step views and
each dtype kind; a 1024 x 1024 float32 product against NumPy; many tiles over a batch; the same
bits every run; vecdot and tensordot. Where nvmath-python is installed the float and complex
products here run through cuBLAS (the default); tests/gpu/test_products_cublas_gpu.py checks
the tiled kernel on them with that route switched off."""

import numpy as np
import productcases as pc
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def test_tiles_past_the_edges_layouts_and_batches_match_numpy():
    pc.check_matmul_cases(67, 130, 45, ["float32"], "gpu")
    pc.check_matmul_cases(300, 257, 129, ["float64"], "gpu")


def test_each_dtype_kind_matches_numpy():
    pc.check_matmul_cases(100, 70, 90, ["complex64", "complex128"], "gpu")
    pc.check_matmul_cases(100, 70, 90, ["float16", "int8", "int32", "int64", "uint64", "bool"],
                          "gpu")
    seed = pc.seed_of("gpu mixed")
    rng = np.random.default_rng(seed)
    for left, right in (("int32", "float32"), ("bool", "int8"), ("uint64", "int64")):
        a, b = pc.sample(rng, left, (65, 66)), pc.sample(rng, right, (66, 67))
        pc.check((fa.asarray(a) @ fa.asarray(b)).get(), a, b, f"{left} @ {right} (seed {seed})")


@pytest.mark.parametrize("transposed", [False, True])
def test_1024_squared_float32_and_the_same_bits_every_run(transposed):
    seed = pc.seed_of("gpu 1024", transposed)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((1024, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 1024)).astype(np.float32)
    x, y = fa.asarray(a), fa.asarray(b)
    if transposed:
        a, b, x, y = a.T, b[::-1].T, x.T, y[::-1].T
    first = (x @ y).get()
    np.testing.assert_allclose(first, a @ b, rtol=1e-4, atol=1e-3, err_msg=f"seed {seed}")
    pc.check(first, a, b, f"1024 x 1024 (seed {seed})")
    assert first.tobytes() == (x @ y).get().tobytes()


def test_a_large_broadcast_batch():
    seed = pc.seed_of("gpu batch")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((6, 1, 130, 70)).astype(np.float32)
    b = rng.standard_normal((5, 70, 200)).astype(np.float32)
    pc.check((fa.asarray(a) @ fa.asarray(b)).get(), a, b, f"batch (seed {seed})")


def test_pending_operands_and_readers():
    seed = pc.seed_of("gpu pending")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((200, 150)).astype(np.float32)
    b = rng.standard_normal((150, 100)).astype(np.float32)
    got = ((fa.asarray(a) * 2) @ fa.asarray(b) + 1).get() - np.float32(1)
    np.testing.assert_allclose(got, (a * 2) @ b, rtol=1e-4, atol=1e-3, err_msg=f"seed {seed}")


def test_vecdot_and_tensordot_match_numpy():
    pc.check_vecdot_and_tensordot("gpu")
