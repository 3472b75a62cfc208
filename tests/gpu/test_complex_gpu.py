"""complex64 and complex128 on the cuda backend against NumPy (tests/complexcases.py): every
complex op × layout at sizes that reach the flat, rows, tiled and nd walks, promotion with real
arrays and Python complex scalars (complex kernel parameters, passed as their two parts),
special values, refusals and reductions."""

import complexcases
import numpy as np
import pytest

from fusedarrays import config

SHAPES = [(300, 400), (4, 5)]


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


@pytest.mark.parametrize("layout", list(complexcases.LAYOUTS))
@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_every_complex_op_matches_numpy(dtype, layout):
    reached = set()
    for shape in SHAPES:
        reached |= complexcases.check_ops(dtype, layout, shape)[1]
    if layout == "transposed":
        assert ("tiled" if dtype == np.complex64 else "rows") in {s for s, _ in reached}


def test_mixed_promotion_matches_numpy():
    complexcases.check_mixed_promotion()


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_special_values_match_numpy(dtype):
    complexcases.check_special_values(dtype)


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_ops_without_complex_templates_are_refused(dtype):
    assert complexcases.check_refusals(dtype) >= 5   # cbrt exp2 fabs …


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_reductions_match_numpy(dtype):
    complexcases.check_reductions(dtype, (300, 400))


@pytest.mark.parametrize("name", list(complexcases.VECTOR_CASES))
def test_complex_operands_take_16_byte_accesses_where_aligned(name):
    complexcases.check_vector_case(name)


def test_complex64_writes_into_aligned_and_misaligned_slices():
    complexcases.check_vector_writes()


def test_misaligned_complex_imports_never_fault():
    """A CuPy complex view of float data starting at an odd element (each part aligned, the
    element not: complex128 8 bytes off 16, complex64 4 off 8), read and written zero-copy:
    a whole-element access there would raise a misaligned-address error and lose the CUDA
    context; afterwards another kernel proves the context healthy."""
    cupy = pytest.importorskip("cupy")
    import fusedarrays as fa

    n = 1 << 16
    rng = np.random.default_rng(7301)
    print("seed 7301")
    views = {}
    for dtype, part in ((np.complex128, np.float64), (np.complex64, np.float32)):
        data = cupy.asarray(rng.standard_normal(2 * n + 1).astype(part))
        views[dtype] = data[1:].view(dtype)
        assert views[dtype].data.ptr % np.dtype(dtype).itemsize != 0
    for view in views.values():
        z = fa.asarray(view)
        assert fa.explain(z * 2 + 1).plan.operands[0].access.endswith("_split")
        want = cupy.asnumpy(view) * 2 + 1
        np.testing.assert_allclose((z * 2 + 1).get(), want, rtol=1e-6)
        z[...] = z * 2 + 1              # written in place through the misaligned view
        np.testing.assert_allclose(cupy.asnumpy(view), want, rtol=1e-6)
    x = fa.asarray(rng.standard_normal(4096))
    np.testing.assert_allclose((x * 3).get(), x.get() * 3)


def test_data_misaligned_even_for_its_parts_is_refused_and_the_context_lives():
    """A CuPy float32 view one byte into its buffer (and complex64 two bytes in): no access
    can read it, so fa.asarray refuses it with the dtype named, instead of a kernel faulting;
    afterwards another kernel proves the context healthy."""
    cupy = pytest.importorskip("cupy")
    import fusedarrays as fa

    raw = cupy.zeros(4 * 1024 + 8, dtype=cupy.uint8)
    for dtype, skip in ((np.float32, 1), (np.complex64, 2)):
        view = raw[skip:skip + 4 * 1024].view(dtype)
        with pytest.raises(ValueError, match=f"{np.dtype(dtype)}.*copy it into a new array"):
            fa.asarray(view)
    x = fa.asarray(np.arange(4096, dtype=np.float32))
    np.testing.assert_array_equal((x * 3).get(), np.arange(4096, dtype=np.float32) * 3)
