"""np.unravel_index and np.ravel_multi_index on fa arrays against NumPy: both orders, the three
modes of ravel_multi_index, a mode per axis, and NumPy's errors for indices out of range."""

import numpy as np
import pytest

import fusedarrays as fa

SEED = 611


@pytest.mark.parametrize("order", ["C", "F"])
def test_unravel_then_ravel_as_numpy(order):
    rng = np.random.default_rng(SEED)
    flat = rng.integers(0, 3 * 4 * 5, (6, 7))
    got = np.unravel_index(fa.asarray(flat)[::-1], (3, 4, 5), order=order)
    want = np.unravel_index(flat[::-1], (3, 4, 5), order=order)
    assert all(isinstance(g, fa.ndarray) for g in got)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype, f"seed {SEED}"
        np.testing.assert_array_equal(g.get(), w, err_msg=f"seed {SEED} order {order}")
    back = np.ravel_multi_index(got, (3, 4, 5), order=order)
    np.testing.assert_array_equal(back.get(), flat[::-1], err_msg=f"seed {SEED}")


def test_modes_and_errors_as_numpy():
    rng = np.random.default_rng(SEED + 1)
    rows, cols = rng.integers(-4, 8, 50), rng.integers(-6, 9, 50)
    for mode in ("wrap", "clip", ("clip", "wrap")):
        got = fa.ravel_multi_index((fa.asarray(rows), fa.asarray(cols)), (4, 5), mode=mode)
        want = np.ravel_multi_index((rows, cols), (4, 5), mode=mode)
        np.testing.assert_array_equal(got.get(), want, err_msg=f"seed {SEED + 1} mode {mode}")
    with pytest.raises(ValueError, match="invalid entry in coordinates array"):
        np.ravel_multi_index((fa.asarray(rows), fa.asarray(cols)), (4, 5))
    with pytest.raises(ValueError, match="out of bounds for array with size 20"):
        np.unravel_index(fa.asarray(np.array([3, 20])), (4, 5))
    with pytest.raises(fa.DTypeError, match="must be integers"):
        np.unravel_index(fa.asarray(np.array([1.5])), (4, 5))
    # a 0-d index, as dask's argmax passes it: 0-d coordinates
    i, j = np.unravel_index(fa.asarray(np.int64(13)), (4, 5))
    assert (i.shape, int(i), int(j)) == ((), 2, 3)
