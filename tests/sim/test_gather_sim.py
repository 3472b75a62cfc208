"""Gathers through the CUDA kernel source (simulator): flat with 128-bit accesses of the other
operands and a tail, rows, nd; negative and repeated indices; against NumPy."""

import numpy as np

import fusedarrays as fa
from fusedarrays import config


def test_gathers_in_every_walk():
    seed = 180
    rng = np.random.default_rng(seed)
    with config.override(BACKEND="sim"):   # the tier's backend
        table = rng.standard_normal(700).astype(np.float32)
        idx = rng.integers(-700, 700, 203).astype(np.int32)
        w = rng.standard_normal(203).astype(np.float32)
        flat = fa.asarray(table)[fa.asarray(idx)] * fa.asarray(w)
        assert fa.explain(flat).vector_width == 4
        np.testing.assert_array_equal(flat.get(), table[idx] * w, err_msg=f"{seed=}")
        emb = rng.standard_normal((50, 136)).astype(np.float32)
        rows = rng.integers(-50, 50, 3)
        got = fa.asarray(emb)[::-1][rows] + 1
        assert fa.explain(got).plan.schedule == "rows"
        np.testing.assert_array_equal(got.get(), emb[::-1][rows] + 1, err_msg=f"{seed=}")
        cols = np.array([[3, -1], [3, 0]])
        nd = fa.take(fa.asarray(emb[:4, :6]), cols, axis=1) * 2
        assert fa.explain(nd).plan.schedule == "nd"
        np.testing.assert_array_equal(nd.get(), emb[:4, :6].take(cols, axis=1) * 2)
