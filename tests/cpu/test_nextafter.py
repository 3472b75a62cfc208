"""``fa.nextafter`` (Array API 2024.12) and ``np.nextafter`` on fa arrays, on the cpu backend:
NumPy's results bit for bit at every edge of float16, float32 and float64, through views,
scalars, integer promotion, and fused with other ops in one kernel."""

import nextafter_cases as cases
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

pytestmark = pytest.mark.usefixtures("cpu_backend")


@pytest.mark.parametrize("dtype", cases.FLOATS, ids=lambda d: np.dtype(d).name)
def test_every_edge_toward_every_direction(dtype):
    x, y = cases.edges(dtype)[:, None], cases.directions(dtype)[None, :]   # broadcast both ways
    got = fa.nextafter(fa.asarray(x), fa.asarray(y)).get()
    with np.errstate(all="ignore"):
        cases.assert_same_bits(got, np.nextafter(x, y), f"nextafter({np.dtype(dtype)})")
        back = fa.nextafter(fa.asarray(y.T), fa.asarray(x.T)).get()
        cases.assert_same_bits(back, np.nextafter(y.T, x.T), f"nextafter({np.dtype(dtype)}), "
                                                             "directions first")


def test_three_widths_in_one_kernel_through_views():
    seed = 3201
    rng = np.random.default_rng(seed)
    lazy, want = [], []
    for dtype in cases.FLOATS:
        x, y = cases.random_pair(rng, dtype, (300, 257))
        fx, fy = fa.asarray(x), fa.asarray(y)
        for view in (lambda a: a, lambda a: a.T, lambda a: a[::-3, 5::2]):
            vx, vy = view(x), view(y)[::-1]
            lazy.append(fa.nextafter(view(fx), view(fy)[::-1]))
            want.append((np.nextafter(vx, vy), f"{np.dtype(dtype)} seed {seed}"))
    before = fa.stats()["launches"]
    fa.compute(*lazy)
    assert fa.stats()["launches"] - before == 3    # one kernel per result shape, widths mixed
    for result, (expected, what) in zip(lazy, want):
        cases.assert_same_bits(result.get(), expected, what)


def test_numpy_dispatch_scalars_and_promotion():
    seed = 3202
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(500) * 3).astype(np.float32)
    fx = fa.asarray(x)
    got = np.nextafter(fx, np.float32(np.inf))     # __array_ufunc__
    assert isinstance(got, fa.ndarray)
    cases.assert_same_bits(got.get(), np.nextafter(x, np.float32(np.inf)), f"seed {seed}")
    cases.assert_same_bits(fa.nextafter(fx, 0.0).get(), np.nextafter(x, 0.0), "python float y")
    cases.assert_same_bits(fa.nextafter(-1.0, fx).get(), np.nextafter(np.float32(-1), x),
                           "python float x")
    ints = rng.integers(-50, 50, 500).astype(np.int8)
    got = fa.nextafter(fa.asarray(ints), fa.asarray(ints[::-1])).get()
    cases.assert_same_bits(got, np.nextafter(ints, ints[::-1]), "int8 (float16 loop)")
    wide = rng.integers(-50, 50, 500).astype(np.int32)
    got = np.nextafter(fa.asarray(wide), 2).get()
    cases.assert_same_bits(got, np.nextafter(wide, 2), "int32 (float64 loop)")


@np.errstate(over="ignore")     # x * 2 and steps past the largest finite value, as NumPy's
def test_fused_with_arithmetic_in_place_and_on_the_serial_loop():
    seed = 3203
    rng = np.random.default_rng(seed)
    x, y = cases.random_pair(rng, np.float64, (4, 5000))
    fx = fa.asarray(x)
    expr = fa.nextafter(fx * 2, fa.asarray(y)) - fx
    cases.assert_same_bits(expr.get(), np.nextafter(x * 2, y) - x, f"seed {seed}")
    with config.override(CPU_PARALLEL=False):   # the serial loop: a supported setting
        cases.assert_same_bits(fa.nextafter(fx, fa.inf).get(), np.nextafter(x, np.inf),
                               "serial")
    out = fa.asarray(x)
    np.nextafter(out, -np.inf, out=out)
    cases.assert_same_bits(out.get(), np.nextafter(x, -np.inf), "out=")


def test_complex_operands_are_refused_as_numpy_refuses_them():
    z = fa.asarray(np.array([1 + 1j, 2 - 1j]))
    with pytest.raises(TypeError, match="nextafter"):
        fa.nextafter(z, z)
    with pytest.raises(TypeError):
        np.nextafter(np.array([1 + 1j]), np.array([1 + 1j]))
