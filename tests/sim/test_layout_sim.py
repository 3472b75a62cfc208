"""Vector widths, tails and misaligned views through the generated CUDA source (simulator)."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_lengths_1_to_17_and_offset_views(dtype):
    rng = np.random.default_rng(115)
    for n in range(1, 18):
        for shift in range(4):
            a = (rng.standard_normal(n + shift) * 8).astype(dtype)
            b = (rng.standard_normal(n + shift) * 8).astype(dtype)
            x, y = fa.asarray(a)[shift:], fa.asarray(b)[shift:]
            expr = x * y + x
            width = fa.explain(expr).vector_width
            if shift == 0:
                assert width == (8 if dtype == np.float16 else 4)
            else:
                assert width == 1, "a view off 16-byte alignment must not take 128-bit accesses"
            np.testing.assert_array_equal(expr.get(), a[shift:] * b[shift:] + a[shift:])


@pytest.mark.parametrize("dtypes, width", [((np.float16, np.float32), 8),
                                            ((np.complex64, np.float32), 4),
                                            ((np.complex64, np.complex128), 2),
                                            ((np.float32, np.complex128), 4)],
                         ids=lambda v: "-".join(np.dtype(d).name for d in v)
                         if isinstance(v, tuple) else str(v))
def test_mixed_lanes_lengths_1_to_17_and_offset_views(dtypes, width):
    """Operands whose 16-byte accesses hold different lane counts: a group is as many elements
    as the widest holds, the others moving it in several accesses; every tail and offset."""
    rng = np.random.default_rng(119)
    for n in range(1, 18):
        for shift in range(3):
            a, b = ((rng.standard_normal(n + shift) * 8 + (1j * rng.standard_normal(n + shift)
                                                            if np.dtype(d).kind == "c" else 0))
                    .astype(d) for d in dtypes)
            x, y = fa.asarray(a)[shift:], fa.asarray(b)[shift:]
            expr = (x - y) + x
            aligned = all((shift * np.dtype(d).itemsize) % 16 == 0 for d in dtypes)
            assert fa.explain(expr).vector_width == (width if aligned else 1), (n, shift)
            want = (a[shift:] - b[shift:]) + a[shift:]
            got = expr.get()
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, err_msg=f"{dtypes} n={n} shift={shift}")


def test_broadcast_rows_keep_vector_width():
    rng = np.random.default_rng(116)
    x = rng.standard_normal((6, 136)).astype(np.float32)
    b, s = rng.standard_normal(136).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    fx, fb, fs = fa.asarray(x), fa.asarray(b), fa.asarray(s)
    expr = (fx + fb[None, :]) * fs[:, None]
    ex = fa.explain(expr)
    assert ex.plan.schedule == "rows" and ex.vector_width == 4
    np.testing.assert_array_equal(expr.get(), (x + b[None, :]) * s[:, None])


def test_transposed_operand_is_tiled_and_correct():
    rng = np.random.default_rng(117)
    x = rng.standard_normal((150, 70)).astype(np.float32)     # x.T is (70, 150): edge tiles
    b, s = rng.standard_normal(150).astype(np.float32), rng.standard_normal(70).astype(np.float32)
    fx, fb, fs = fa.asarray(x), fa.asarray(b), fa.asarray(s)
    expr = (fx.T + fb[None, :]) * fs[:, None]
    assert fa.explain(expr).plan.schedule == "tiled"
    np.testing.assert_array_equal(expr.get(), (x.T + b[None, :]) * s[:, None])
    zh = rng.standard_normal((70, 150)).astype(np.float32)
    z = fa.asarray(zh)
    z += fa.asarray(x).T                                       # tiled, with an in-place output
    np.testing.assert_array_equal(z.get(), zh + x.T)


@pytest.mark.parametrize("shape", [(128, 64), (136, 72)])
def test_vectorised_tiles_full_and_partial(shape):
    """x.T with aligned rows takes 16-byte tile accesses; (136, 72) also has edge tiles."""
    rng = np.random.default_rng(118)
    x = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape[0]).astype(np.float32)
    s = rng.standard_normal(shape[1]).astype(np.float32)
    expr = (fa.asarray(x).T + fa.asarray(b)[None, :]) * fa.asarray(s)[:, None]
    ex = fa.explain(expr)
    assert ex.plan.schedule == "tiled" and ex.vector_width == 4
    np.testing.assert_array_equal(expr.get(), (x.T + b[None, :]) * s[:, None])
