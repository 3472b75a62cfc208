"""fa.random through the CUDA kernel source (simulator): the same bits as the cpu backend in
every schedule, with the vector walk's shared Philox blocks."""

import numpy as np
import pytest
import randomcases

import fusedarrays as fa
from fusedarrays import config


def _cpu_stream(*args, **kwargs):
    with config.override(BACKEND="cpu"):   # the reference backend for the simulator's bits
        return randomcases.materialised(*args, **kwargs)


@pytest.mark.parametrize("case", randomcases.CASES, ids=lambda c: c.__name__)
def test_same_bits_as_cpu(case):
    seed = 1500 + randomcases.CASES.index(case)
    with config.override(BACKEND="sim"):   # the tier's backend
        result, expected = case(seed)
        got = result.get()
    np.testing.assert_array_equal(got, expected(_cpu_stream), err_msg=f"{seed=}")


def test_vector_walk_shares_blocks():
    with config.override(BACKEND="sim"):   # the tier's backend
        x = fa.asarray(np.random.default_rng(9).standard_normal(64).astype(np.float32))
        y = x + fa.random.default_rng(9).standard_normal(64, dtype=np.float32)
        source = fa.explain(y).source
    assert fa.explain(y).vector_width == 4 and "fa_philox_at" in source and "fa_bm_f32(" in source


def test_uniform_comparisons_with_edge_scalars_match_the_cpu():
    """The integer thresholds of a float32 uniform's comparisons (streams.U24_FORMS) through
    the vector walk and its tail (261 elements: 65 vectors and one more): each edge of the cpu
    tier's test, as a float32 and a float64 comparison."""
    seed, n = 1622, 261
    for p in randomcases.scalar_edges(seed, n):
        for q in (p, np.float64(p)):
            with config.override(BACKEND="sim"):   # the tier's backend
                result, expected = randomcases.scalar_comparisons(seed, q, n)
                got = result.get()
            np.testing.assert_array_equal(got, expected(_cpu_stream), err_msg=f"{seed=} {q=}")
