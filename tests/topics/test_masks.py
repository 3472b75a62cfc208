"""Boolean-mask writes x[mask] = v on the cpu backend at its defaults, against NumPy: masks from
fa comparisons and NumPy arrays, views with negative steps as targets, shapes reaching every
schedule; arrays of values in order and masks over leading axes, as NumPy takes them."""

import numpy as np
import pytest

import fusedarrays as fa

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


def test_mask_forms_numpy_takes():
    """An array of the selected elements' values in order, a mask over leading axes, and
    reading the selection (compacted through the host)."""
    seed = 165
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((20, 136)).astype(np.float32)
    x, expect = fa.asarray(host.copy()), host.copy()
    x[x > 0] = fa.asarray(host[host > 0] * 2)
    expect[expect > 0] = host[host > 0] * 2
    rows = rng.random(20) < 0.5
    x[rows] = 1.5
    expect[rows] = 1.5
    x[::-1][rows] = np.arange(136, dtype=np.float32)      # broadcast to the selection
    expect[::-1][rows] = np.arange(136, dtype=np.float32)
    np.testing.assert_array_equal(x.get(), expect, err_msg=f"{seed=}")
    np.testing.assert_array_equal(x[x > 1].get(), expect[expect > 1], err_msg=f"{seed=}")
    np.testing.assert_array_equal(x.T[rows[:17].tolist() + [False] * 119].get(),
                                  expect.T[rows[:17].tolist() + [False] * 119],
                                  err_msg=f"{seed=}")
    with pytest.raises(ValueError, match="could not be broadcast"):
        x[x > 0] = np.array([1.0, 2.0])
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[np.array([True, False])] = 1.0


def test_a_0d_mask_writes_all_or_nothing():
    seed = 77
    rng = np.random.default_rng(seed)
    for shape in [(), (5,), (3, 4)]:
        for flag in (True, False):
            x = rng.standard_normal(shape).astype(np.float32)
            value = np.float32(rng.standard_normal())
            for mask in (flag, np.bool_(flag), np.array(flag), fa.asarray(np.array(flag))):
                a = fa.asarray(x)
                a[mask] = value
                want = x.copy()
                want[np.array(flag)] = value
                np.testing.assert_array_equal(a.get(), want, err_msg=f"{shape} {flag} {seed=}")
