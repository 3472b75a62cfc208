"""The operator methods' short path (elementwise.binary): once an op's loop is resolved for its
operand types, later calls build the node without NumPy's resolution. Each case runs twice, so
the second call takes the short path, and is compared with NumPy (values and dtypes)."""

import operator

import numpy as np
import pytest

import fusedarrays as fa

pytestmark = pytest.mark.usefixtures("cpu_backend")


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
