"""complex64 and complex128 on the cpu backend at its default settings, against NumPy
(tests/complexcases.py): every complex op × layout at sizes that reach the flat, rows, tiled and
nd walks; promotion with real arrays and Python complex scalars; special values; refusals;
reductions; creation, conversions and the namespace's dtype objects."""

import warnings

import complexcases
import numpy as np
import pytest

import fusedarrays as fa

pytestmark = pytest.mark.usefixtures("cpu_backend")

# 300×400 reaches the flat walk, rows and tiles; 4×5 walks coordinates (nd) or flat
SHAPES = [(300, 400), (4, 5)]
EXPECTED = {"contiguous": {"flat"}, "transposed": {"tiled", "nd"},
            "negative steps": {"rows", "nd"},
            "broadcast": {"rows", "nd"}, "flat reversed": {"flat"}, "zero_d": {"flat"}}


@pytest.mark.parametrize("layout", list(complexcases.LAYOUTS))
@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_every_complex_op_matches_numpy(dtype, layout):
    reached = set()
    for shape in SHAPES:
        checked, got = complexcases.check_ops(dtype, layout, shape, fa.asarray)
        reached |= got
        assert checked == len(complexcases.UNARY) + len(complexcases.BINARY) + 1
    expected = set(EXPECTED[layout])
    if layout == "transposed" and dtype == np.complex128:
        expected = {"rows", "nd"}  # a complex128 tile would pass the 48 KiB of shared memory
    assert expected <= {s for s, _ in reached}, reached


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_rank_three_walks_nd(dtype):
    rng = np.random.default_rng(11)
    a = complexcases.random_complex(rng, (3, 4, 5), dtype)
    x = fa.asarray(a)
    exprs = [(lambda v: v.transpose(2, 0, 1) * v.transpose(2, 0, 1)[::-1] + 1j),
             (lambda v: (np.exp if isinstance(v, np.ndarray) else fa.exp)(v[::-1, :, ::2]))]
    for make in exprs:
        assert fa.explain(make(x)).plan.schedule == "nd"
        complexcases.assert_close("multiply", make(x).get(), make(a), f"nd {dtype} (seed 11)",
                                  np.dtype(dtype))


def test_mixed_promotion_matches_numpy():
    complexcases.check_mixed_promotion(fa.asarray)


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_special_values_match_numpy(dtype):
    complexcases.check_special_values(dtype, fa.asarray)


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_ops_without_complex_templates_are_refused(dtype):
    assert complexcases.check_refusals(dtype, fa.asarray) >= 5   # cbrt exp2 fabs …


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_reductions_match_numpy(dtype):
    complexcases.check_reductions(dtype, (300, 400), fa.asarray)


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_angle_and_parts_match_numpy(dtype):
    rng = np.random.default_rng(3)
    a = complexcases.random_complex(rng, (40, 50), dtype)
    x = fa.asarray(a)
    for deg in (False, True):
        complexcases.assert_close("absolute", fa.angle(x, deg=deg).get(), np.angle(a, deg=deg),
                                  f"angle {dtype} deg={deg} (seed 3)", np.dtype(dtype))
        complexcases.assert_close("absolute", np.angle(x, deg=deg).get(),
                                  np.angle(a, deg=deg), f"np.angle {dtype} (seed 3)",
                                  np.dtype(dtype))
    assert np.array_equal(x.real.get(), a.real) and np.array_equal(x.imag.get(), a.imag)
    assert np.array_equal(x.conj().get(), a.conj())
    assert np.array_equal(np.real(x).get(), a.real) and np.array_equal(np.imag(x).get(), a.imag)
    r = (rng.standard_normal(30) * 3).astype(np.float32)
    for v in (r, r.astype(np.int16)):
        got, want = fa.angle(fa.asarray(v)).get(), np.angle(v)
        assert got.dtype == want.dtype and np.allclose(got, want)
        assert fa.imag(fa.asarray(v)).get().dtype == v.dtype
        assert np.array_equal(fa.imag(fa.asarray(v)).get(), np.imag(v))
        assert np.array_equal(fa.real(fa.asarray(v)).get(), v)


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_casts_follow_numpy(dtype):
    rng = np.random.default_rng(4)
    a = complexcases.random_complex(rng, 64, dtype)
    a[:3] = [0, 1j, 2]
    x = fa.asarray(a)
    for target in ("float32", "float64", "float16", "int16", "int64", "uint8"):
        with pytest.warns(np.exceptions.ComplexWarning):
            got = x.astype(target).get()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = a.astype(target)
        assert got.dtype == want.dtype
        assert np.array_equal(got, want), (target, got[:5], want[:5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(x.astype(bool).get(), a.astype(bool))
        other = np.complex128 if dtype == np.complex64 else np.complex64
        assert np.array_equal(x.astype(other).get(), a.astype(other))
        r = (rng.standard_normal(64) * 5).astype(np.float32)
        assert np.array_equal(fa.asarray(r).astype(dtype).get(), r.astype(dtype))
        i = rng.integers(-100, 100, 64).astype(np.int32)
        assert np.array_equal(fa.asarray(i).astype(dtype).get(), i.astype(dtype))


def test_creation_and_conversions():
    z = fa.full((2, 3), 1 + 2j)
    assert z.dtype == np.complex128 and np.array_equal(z.get(), np.full((2, 3), 1 + 2j))
    z = fa.full((5,), -0.5j, dtype=fa.complex64)
    assert z.dtype == np.complex64 and np.array_equal(z.get(), np.full(5, -0.5j, np.complex64))
    assert np.array_equal(fa.zeros(4, dtype=fa.complex64).get(), np.zeros(4, np.complex64))
    assert fa.ones((2, 2), dtype="complex128").get().dtype == np.complex128
    assert fa.asarray(3 - 4j).dtype == np.complex128
    assert complex(fa.asarray(3 - 4j) * 2) == 6 - 8j
    assert float(abs(fa.asarray(np.complex64(3 + 4j)))) == 5.0
    a = np.array([1 + 2j, -3.5j], np.complex64)
    x = fa.asarray(a)
    assert str(x) == str(a) and "complex64" in repr(x)
    assert x.tolist() == a.tolist()
    y = x * 2
    y += 1j
    assert np.array_equal(y.get(), a * 2 + 1j)
    with pytest.raises(TypeError):
        r = fa.asarray(np.ones(2, np.float32))
        r += x                                  # complex into float32: same_kind refuses


def test_namespace_dtypes():
    assert fa.complex64 == np.complex64 and fa.complex128 == np.complex128
    assert fa.isdtype(fa.complex64, "complex floating")
    assert fa.isdtype(fa.complex128, "numeric")
    assert not fa.isdtype(fa.complex64, "real floating")
    info = fa.finfo(fa.complex64)
    assert info.dtype == np.float32 and info.eps == float(np.finfo(np.float32).eps)
    assert fa.finfo(fa.complex128).bits == 64
    assert fa.result_type(fa.float32, 1j) == np.complex64
    assert fa.result_type(fa.int32, fa.complex64) == np.complex128
    assert fa.result_type(fa.float64, fa.complex64) == np.complex128
    assert fa.can_cast(fa.complex64, fa.complex128)
    ns = fa.__array_namespace_info__()
    assert set(ns.dtypes(kind="complex floating")) == {"complex64", "complex128"}
    assert ns.default_dtypes()["complex floating"] == np.complex128


@pytest.mark.parametrize("name", list(complexcases.VECTOR_CASES))
def test_complex_vector_cases_match_numpy(name):
    """The cases whose cuda kernels move complex operands in 16-byte accesses (the plan is the
    same on every backend; the cpu walk is element by element)."""
    complexcases.check_vector_case(name)


def test_complex64_writes_into_aligned_and_misaligned_slices():
    complexcases.check_vector_writes()


@pytest.mark.parametrize("walk", list(complexcases.MISALIGNED_WALKS))
@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_misaligned_complex_read_and_written(dtype, walk):
    """Complex elements half an element off their size (an import of a complex view of float
    data starting at an odd element): the cpu target's accesses at any address
    (cpu/intrinsics.py), read and written through each walk, against NumPy."""
    seed = 7300 + 10 * list(complexcases.MISALIGNED_WALKS).index(walk) + dtype.itemsize
    complexcases.check_misaligned_walk(dtype, walk, seed)
