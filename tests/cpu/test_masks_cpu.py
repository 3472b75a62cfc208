"""Boolean-mask writes x[mask] = v on the cpu backend at its defaults, against NumPy: masks from
fa comparisons and NumPy arrays, views with negative steps as targets, shapes reaching every
schedule; the forms that are not supported raise IndexError naming the alternative."""

import numpy as np
import pytest

import fusedarrays as fa

pytestmark = pytest.mark.usefixtures("cpu_backend")

SHAPES = [(1003,), (6, 136), (3, 5, 8)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_mask_write_matches_numpy(shape, dtype):
    seed = 160 + len(shape)
    rng = np.random.default_rng(seed)
    host = (rng.standard_normal(shape) * 10).astype(dtype)
    x, expect = fa.asarray(host.copy()), host.copy()
    x[x > 0] = 3                                     # an fa mask, a Python scalar
    expect[expect > 0] = 3
    np.testing.assert_array_equal(x.get(), expect, err_msg=f"{seed=}")
    mask = rng.random(shape) < 0.3
    x[mask] = np.array([-1.5])                        # a NumPy mask, a one-element array
    expect[mask] = np.array([-1.5])
    np.testing.assert_array_equal(x.get(), expect, err_msg=f"{seed=}")
    view, eview = x[::-1], expect[::-1]               # a view as the target
    flip = rng.random(shape) < 0.5
    view[flip] = 7
    eview[flip] = 7
    np.testing.assert_array_equal(x.get(), expect, err_msg=f"{seed=}")


def test_unsupported_mask_forms():
    x = fa.asarray(np.arange(6.0).reshape(2, 3))
    with pytest.raises(IndexError, match="in order"):
        x[x > 2] = np.array([1.0, 2.0, 3.0])
    with pytest.raises(IndexError, match="shape"):
        x[np.array([True, False])] = 1.0
    with pytest.raises(IndexError, match="mask"):
        x[x > 2]  # noqa: B018 - reading a mask's selection is not supported
