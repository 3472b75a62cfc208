"""The cuda backend on a real GPU: memory round trips, hand-written kernels, zero-copy imports.

Everything goes through ``CudaBackend``'s methods, as the runtime calls them. Skipped where no
CUDA device is visible.
"""

from __future__ import annotations

import numpy as np
import pytest

from fusedarrays.cuda.backend import CudaBackend

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not CudaBackend.available(), reason="no CUDA device visible"),
]

N = 100_003  # not a multiple of the block or the vector width


@pytest.fixture(scope="module")
def be():
    return CudaBackend(0)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def kernel_source(name: str, params: str, body: str) -> str:
    """A grid-stride kernel like the ones codegen renders."""
    return (f"def {name}({params}):\n"
            "    i = cv_i64(cuda.grid(1))\n"
            "    step = cv_i64(cuda.gridsize(1))\n"
            "    while i < n:\n"
            f"        {body}\n"
            "        i += step\n")


def build(be, name, params, body, param_types, helpers=None):
    artifact = be.compile(kernel_source(name, params, body), name, param_types, helpers or {})
    assert artifact["cubin"][:4] == b"\x7fELF"
    assert f".entry {artifact['entry']}(" in artifact["ptx"]
    return be.load(artifact, param_types)


def run3(be, launcher, a, b, scalar, out_dtype):
    """Launch ``launcher(n, p0=a, p1=b, p2=out, a0=scalar)`` and return ``out`` on the host."""
    sa, sb = be.from_host(a), be.from_host(b)
    out = be.alloc(a.size * np.dtype(out_dtype).itemsize)
    args = [be.operand_arg(sa, a.dtype, 0), be.operand_arg(sb, b.dtype, 0),
            be.operand_arg(out, np.dtype(out_dtype), 0), scalar]
    be.launch(launcher, a.size, args)
    return be.to_host(out, out_dtype, a.size, 0)


def test_device_identity(be):
    assert be.name == "cuda"
    assert be.arch.startswith("sm_")
    assert be.device_key == f"cuda:0:{be.arch}"
    assert set(be.toolchain()) == {"numba", "numba-cuda", "llvmlite", "cuda-core", "nvvm",
                                   "nvjitlink"}


def test_host_device_round_trip(be, rng):
    a = rng.standard_normal(N).astype(np.float32)
    s = be.from_host(a)
    assert s.nbytes == a.nbytes and s.ptr % 16 == 0  # what 128-bit accesses need
    assert np.array_equal(be.to_host(s, np.float32, N, 0), a)
    assert np.array_equal(be.to_host(s, np.float32, 10, 7), a[7:17])
    with pytest.raises(ValueError):
        be.to_host(s, np.float32, N, 1)


def test_alloc_copy_and_zero_bytes(be, rng):
    from fusedarrays.cuda import memory

    a = rng.integers(0, 255, 4096, dtype=np.uint8)
    src, dst = be.from_host(a), be.alloc(a.nbytes)
    memory.copy(dst, src, a.nbytes)
    assert np.array_equal(be.to_host(dst, np.uint8, a.size, 0), a)
    empty = be.alloc(0)
    assert empty.nbytes == 0 and be.to_host(empty, np.float32, 0, 0).size == 0
    be.synchronize()


def test_axpb_float32(be, rng):
    launcher = build(be, "fa_test_axpb_f32", "n, p0, p1, p2, a0",
                     "st_f32(p2, i, ld_f32(p0, i) * ld_f32(p1, i) + a0)",
                     ("i64", "ptr", "ptr", "ptr", "f32"))
    a, b = rng.random(N, np.float32), rng.random(N, np.float32)
    got = run3(be, launcher, a, b, np.float32(0.5), np.float32)
    # NVVM contracts a*b+s into one fma: within an ulp of NumPy's two roundings
    np.testing.assert_allclose(got, a * b + np.float32(0.5), rtol=2e-7)


def test_axpb_float16_matches_numpy_bit_for_bit(be, rng):
    launcher = build(be, "fa_test_axpb_f16", "n, p0, p1, p2, a0",
                     "st_f16(p2, i, cv_f16(cv_f16(ld_f16(p0, i) * ld_f16(p1, i)) + a0))",
                     ("i64", "ptr", "ptr", "ptr", "f16"))
    a = rng.standard_normal(N).astype(np.float16)
    b = rng.standard_normal(N).astype(np.float16)
    s = np.float16(0.3)
    got = run3(be, launcher, a, b, np.float32(s), np.float16)  # f16 scalars travel as float32
    assert np.array_equal(got, a * b + s)  # per-op rounding to half, as NumPy


def test_bool_kernel(be, rng):
    launcher = build(be, "fa_test_xor_b1", "n, p0, p1, p2, a0",
                     "st_b1(p2, i, (ld_b1(p0, i) != ld_b1(p1, i)) or cv_b1(a0))",
                     ("i64", "ptr", "ptr", "ptr", "b1"))
    a, b = rng.random(N) < 0.5, rng.random(N) < 0.5
    assert np.array_equal(run3(be, launcher, a, b, np.uint8(0), np.bool_), a ^ b)
    assert run3(be, launcher, a, b, np.uint8(1), np.bool_).all()


def test_helper_functions(be, rng):
    def _twice(x):
        return cv_f32(x * 2)  # noqa: F821 - from the device namespace

    launcher = build(be, "fa_test_helper", "n, p0, p1, p2, a0",
                     "st_f32(p2, i, _twice(ld_f32(p0, i)) + ld_f32(p1, i) * a0)",
                     ("i64", "ptr", "ptr", "ptr", "f32"), helpers={"_twice": _twice})
    a, b = rng.random(N, np.float32), rng.random(N, np.float32)
    np.testing.assert_allclose(run3(be, launcher, a, b, np.float32(0), np.float32), 2 * a)


@pytest.mark.parametrize(("code", "lanes", "dtype"), [("f32", 4, np.float32),
                                                       ("f16", 8, np.float16)])
def test_vector_loads_and_stores(be, rng, code, lanes, dtype):
    names = ", ".join(f"v{k}" for k in range(lanes))
    doubled = ", ".join(f"v{k} * 2" for k in range(lanes))
    source = ("def fa_test_vec(n, p0, p1):\n"
              "    j = cv_i64(cuda.grid(1))\n"
              "    if j < n:\n"
              f"        {names} = ldv{lanes}_{code}(p0, j)\n"
              f"        stv{lanes}_{code}(p1, j, {doubled})\n")
    params = ("i64", "ptr", "ptr")
    launcher = be.load(be.compile(source, "fa_test_vec", params, {}), params)
    x = rng.standard_normal(lanes * 1000).astype(dtype)
    sx, out = be.from_host(x), be.alloc(x.nbytes)
    assert sx.ptr % 16 == 0 and out.ptr % 16 == 0
    be.launch(launcher, x.size // lanes, [sx.ptr, out.ptr])
    want = (x.astype(np.float32) * 2).astype(dtype)
    assert np.array_equal(be.to_host(out, dtype, x.size, 0), want)


def _increment_in_place(be, storage, dtype, count, offset):
    launcher = build(be, "fa_test_inc", "n, p0", "st_f32(p0, i, ld_f32(p0, i) + cv_f32(1))",
                     ("i64", "ptr"))
    be.launch(launcher, count, [be.operand_arg(storage, dtype, offset)])
    be.synchronize()


class _CAIOnly:
    """Exposes only ``__cuda_array_interface__``, to take that path instead of DLPack."""

    def __init__(self, array):
        self.array = array
        self.__cuda_array_interface__ = array.__cuda_array_interface__


def _check_import(be, obj, expected: np.ndarray):
    owner, storage, dtype, shape, strides, offset = be.import_array(obj)
    assert owner is be  # the array lives on cuda:0, this backend's device
    assert dtype == expected.dtype and shape == expected.shape
    span = be.to_host(storage, dtype, storage.nbytes // dtype.itemsize, 0)
    picked = [span[offset + int(np.dot(ix, strides))] for ix in np.ndindex(*shape)]
    assert np.array_equal(np.array(picked).reshape(shape), expected)
    return storage, dtype, offset


def test_import_cupy_zero_copy(be):
    cp = pytest.importorskip("cupy")
    x = cp.arange(1000, dtype=cp.float32).reshape(10, 100)
    _check_import(be, x, cp.asnumpy(x))
    _check_import(be, x[::-2, ::3], cp.asnumpy(x[::-2, ::3]))  # negative strides: offset > 0
    _check_import(be, _CAIOnly(x.T), cp.asnumpy(x.T))
    storage, dtype, offset = _check_import(be, x, cp.asnumpy(x))
    _increment_in_place(be, storage, dtype, x.size, offset)
    assert float(x[3, 7]) == 308.0  # written through our pointer, seen by CuPy


def test_import_torch_zero_copy(be):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    x = torch.arange(1000, dtype=torch.float32, device="cuda").reshape(10, 100)
    _check_import(be, x, x.cpu().numpy())
    _check_import(be, x.t(), x.t().cpu().numpy())
    storage, dtype, offset = _check_import(be, x, x.cpu().numpy())
    _increment_in_place(be, storage, dtype, x.numel(), offset)
    assert float(x[3, 7]) == 308.0
