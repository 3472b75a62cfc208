"""The operator methods' short path (elementwise.binary): once an op's loop is resolved for its
operand types, later calls build the node without NumPy's resolution. Each case runs twice, so
the second call takes the short path, and is compared with NumPy (values and dtypes)."""

import operator

import numpy as np
import pytest

import fusedarrays as fa


@pytest.mark.parametrize("fn", [operator.add, operator.sub, operator.mul, operator.truediv,
                                operator.lt, operator.pow])
def test_operators_with_arrays_and_weak_scalars_match_numpy_twice(fn):
    rng = np.random.default_rng(11)
    a = rng.uniform(1, 2, 16).astype(np.float32)
    i = rng.integers(1, 5, 16).astype(np.int8)
    x, k = fa.asarray(a), fa.asarray(i)
    for _ in range(2):
        for left, right, hl, hr in [(x, x, a, a), (x, 2.5, a, 2.5), (3, x, 3, a),
                                    (k, 2, i, 2), (2, k, 2, i), (k, x, i, a), (k, 1.5, i, 1.5)]:
            got, want = fn(left, right), fn(hl, hr)
            assert got.dtype == want.dtype, (fn, hl, hr)
            np.testing.assert_allclose(got.get(), want, rtol=1e-6)


def test_a_weak_int_that_does_not_fit_raises_on_the_short_path_too():
    k = fa.asarray(np.arange(4, dtype=np.int8))
    (k + 3).get()                            # resolves (int8, int) once
    for _ in range(2):
        with pytest.raises(OverflowError, match="out of bounds for int8"):
            k + 300
        with pytest.raises(OverflowError, match="out of bounds for int8"):
            300 + k


@pytest.mark.parametrize("fn", [operator.sub, operator.truediv, operator.pow])
def test_a_scalar_or_array_before_an_expression_binds_in_its_place(fn):
    # 1.5 - e, y - e and x - e (x one of e's leaves) put e's params first and the leaf or
    # scalar after them (graph.op_of's mirrored order): each must still read its own value
    seed = 23
    print("seed", seed)
    rng = np.random.default_rng(seed)
    a, b = (rng.uniform(1, 2, (33, 66)).astype(np.float32) for _ in range(2))
    x, y = fa.asarray(a), fa.asarray(b)
    for _ in range(2):
        for left, hl in ((1.5, 1.5), (y, b), (x, a), (y[::-1, ::2], b[::-1, ::2])):
            for e, he in ((x * 0.75 + 0.25, a * np.float32(0.75) + np.float32(0.25)),
                          (x[::-1, ::2] * y[:, 1::2], a[::-1, ::2] * b[:, 1::2])):
                if np.shape(hl) not in ((), he.shape):
                    continue
                got, want = fn(left, e), fn(hl, he)
                assert got.dtype == want.dtype
                np.testing.assert_allclose(got.get(), want, rtol=2e-6)
