"""fa.random draws inside fa.fuse on the sim backend (the CUDA kernels in numba's simulator):
a fused call's draw, and foreach's draws by the tensors' places in the concatenation, on the
element walk (a bfloat16 store) and the 128-bit vector walk (float32 only, lanes at g - start +
L), the same bits as lazy code on the same backend. Tiny arrays."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

SEED = 34093
SIZES = [5, 9, 3]


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


def data(n, k):
    return np.random.default_rng(SEED + k).standard_normal(n).astype(np.float32)


@fa.fuse
def noisy(x, rng):
    x += rng.random(x.shape, dtype=np.float32)


@fa.fuse
def rounded(w, p, rng):
    p[...] = rng.stochastic_round(w, fa.bfloat16)


def test_foreach_vector_walk_draws_the_concatenation():
    host = [data(n, k) for k, n in enumerate(SIZES)]
    xs = [fa.asarray(a.copy()) for a in host]
    noisy.foreach(xs, fa.random.default_rng(1))
    u = fa.random.default_rng(1).random(sum(SIZES), dtype=np.float32).get()
    starts = np.cumsum([0] + SIZES)
    for k, (x, a) in enumerate(zip(xs, host)):
        np.testing.assert_array_equal(x.get(), a + u[starts[k]:starts[k + 1]],
                                      err_msg=f"tensor {k} (seed {SEED})")


def test_stochastic_round_fused_and_foreach():
    ws = [fa.asarray(data(n, k)) for k, n in enumerate(SIZES)]
    ps = [fa.zeros(n, fa.bfloat16) for n in SIZES]
    rounded.foreach(ws, ps, fa.random.default_rng(2))
    want = fa.random.default_rng(2).stochastic_round(fa.concat(ws), fa.bfloat16)
    got = np.concatenate([p.astype(np.float32).get() for p in ps])
    np.testing.assert_array_equal(got, want.astype(np.float32).get())
    rng, lazy = fa.random.default_rng(3), fa.random.default_rng(3)
    rounded(ws[1], ps[1], rng)
    np.testing.assert_array_equal(ps[1].astype(np.float32).get(),
                                  lazy.stochastic_round(ws[1], fa.bfloat16)
                                  .astype(np.float32).get())
