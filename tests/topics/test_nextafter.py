"""``fa.nextafter`` (Array API 2024.12) and ``np.nextafter`` on fa arrays: NumPy's results bit for
bit at every edge of float16, float32 and float64 on every tier (on sim the CUDA kernel source:
devicelib's bit steps over the simulator's bit views, one small kernel per width; on cuda
libdevice's bit reinterpretations, no flush of subnormals); on cpu through views, scalars,
integer promotion, and fused with other ops in one kernel; on cuda random views at a size that
takes the vector walk; in PTX for sm_90 the float's bits reinterpreted in registers."""

import re

import nextafter_cases as cases
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.mark.tiers("cpu", "sim", "cuda")
@pytest.mark.parametrize("dtype", cases.FLOATS, ids=lambda d: np.dtype(d).name)
def test_every_edge_toward_every_direction(dtype, tier):
    x, y = cases.edges(dtype)[:, None], cases.directions(dtype)[None, :]   # broadcast both ways
    if tier == "sim":   # one small kernel per width in the simulator: a reversed view, one way
        with np.errstate(all="ignore"):
            got = fa.nextafter(fa.asarray(x)[::-1], fa.asarray(y)).get()
            assert fa.backend() == "sim"
            cases.assert_same_bits(got, np.nextafter(x[::-1], y), f"nextafter({np.dtype(dtype)})")
        return
    with np.errstate(all="ignore"):
        got = fa.nextafter(fa.asarray(x), fa.asarray(y)).get()
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


@pytest.mark.tiers("cuda")
@pytest.mark.parametrize("dtype", cases.FLOATS, ids=lambda d: np.dtype(d).name)
def test_random_views(dtype):
    seed = 3205
    rng = np.random.default_rng(seed)
    x, y = cases.random_pair(rng, dtype, (300, 1024))
    fx, fy = fa.asarray(x), fa.asarray(y)
    with np.errstate(all="ignore"):
        for got, want in ((fa.nextafter(fx, fy), np.nextafter(x, y)),
                          (fa.nextafter(fx.T, fy[::-1].T), np.nextafter(x.T, y[::-1].T))):
            cases.assert_same_bits(got.get(), want, f"{np.dtype(dtype)} seed {seed}")


@pytest.mark.tiers("ptx")
@pytest.mark.parametrize("dtype, reg", [(np.float16, "b32"), (np.float32, "b32"),
                                        (np.float64, "b64")], ids=["float16", "float32",
                                                                   "float64"])
def test_nextafter_reinterprets_bits_in_registers(dtype, reg):
    """libdevice's ``float_as_int`` family: ``mov.b32``/``mov.b64``, no memory round trip and
    no call, fused with the ops around it."""
    rng = np.random.default_rng(3204)
    x = fa.asarray(rng.standard_normal(4096).astype(dtype))
    ptx = fa.explain(fa.nextafter(x * 2, x) + 1, arch="sm_90").ptx
    assert ".entry" in ptx and "call" not in ptx.split(".entry", 1)[1]
    assert re.search(rf"mov\.{reg}\s+%f[d]?\d+, %r[d]?\d+", ptx), "bits back to a float"
    assert re.search(rf"mov\.{reg}\s+%r[d]?\d+, %f[d]?\d+", ptx), "a float's bits"
