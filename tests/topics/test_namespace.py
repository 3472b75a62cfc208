"""The Array API namespace against NumPy (tests/namespace_cases.py): manipulation cases at every
schedule on cpu and cuda; on cpu at its default settings also creation, data-type functions,
object protocols and products; on sim the copy kernels of concat/stack/tile on small arrays (the
simulator is slow); on cuda products (the tiled product kernel) and protocols on the device; in
PTX for sm_90 the op rows added with the namespace (fa.special: libdevice's erf, erfc and
lgamma, the erfinv/expit/logit helpers, and the new ufuncs), every one of them in one kernel per
dtype. fa.special against SciPy: tests/topics/test_special.py."""

import copy
import pickle

import namespace_cases
import numpy as np
import productcases as pc
import pytest

import fusedarrays as fa
from fusedarrays.ir import ops

SEED = 20261124


@pytest.mark.parametrize("name", list(namespace_cases.CASES))
@pytest.mark.tiers("cpu", "cuda")
def test_case_matches_numpy(name):
    namespace_cases.check_case(name)


@pytest.mark.parametrize("name", ["concat axis 1", "stack", "roll two axes", "tile", "flip 3-D",
                                  "tril", "repeat axis"])
@pytest.mark.tiers("cpu", "cuda")
def test_case_matches_numpy_on_integers(name):
    namespace_cases.check_case(name, np.int16)


def test_repeat_counts_matches_numpy_on_integers():
    namespace_cases.check_case("repeat counts", np.int16)


@pytest.mark.tiers("cpu", "cuda")
def test_writes_through_namespace_views():
    namespace_cases.check_view_writes()


def test_stack_is_one_launch_and_concat_one_per_input_shape():
    x = fa.asarray(namespace_cases.base(SEED))
    before = fa.stats()["launches"]
    fa.stack([x + 1, x * 2, x[::-1]])
    assert fa.stats()["launches"] - before == 1
    before = fa.stats()["launches"]
    fa.concat([x, x * 2, x[:7]])
    assert fa.stats()["launches"] - before == 2


def test_views_stay_views_and_pending_stays_pending():
    x = fa.asarray(namespace_cases.base(SEED))
    y = x * 2
    for view in (fa.flip(y), fa.permute_dims(y, (1, 0)), fa.moveaxis(y, 0, 1), y.mT,
                 fa.broadcast_arrays(y, y[0])[1], fa.unstack(y)[3], fa.expand_dims(y, axis=1)):
        assert view.pending
    assert not fa.flip(x).pending and fa.flip(x)._view_of is not None


def test_every_standard_name_of_an_op_is_the_op():
    for alias, name in ops.ALIASES.items():
        assert getattr(fa, alias) is getattr(fa, name), alias
    for name in ("acos", "asin", "atan", "atan2", "acosh", "asinh", "atanh", "pow",
                 "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift", "conj",
                 "logaddexp", "divide", "abs"):
        assert callable(getattr(fa, name)), name


def test_creation_matches_numpy():
    rng = np.random.default_rng(SEED)
    start, stop = rng.uniform(-5, 5, 2)
    np.testing.assert_array_equal(fa.linspace(start, stop, 301).get(),
                                  np.linspace(start, stop, 301))
    np.testing.assert_array_equal(fa.linspace(start, stop, 7, endpoint=False,
                                              dtype=fa.float32).get(),
                                  np.linspace(start, stop, 7, endpoint=False, dtype=np.float32))
    for args, kw in [((70, 300), {"k": 5}), ((5,), {}), ((4, 3), {"k": -2, "dtype": fa.int8})]:
        got, want = fa.eye(*args, **kw).get(), np.eye(*args, **kw)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    # diagonals past every element, beyond int64 too (NumPy takes any Python int)
    x = rng.standard_normal((3, 5))
    for k in (2**63, -(2**70), 5, -3, 4, -2):
        np.testing.assert_array_equal(fa.eye(3, 5, k=k).get(), np.eye(3, 5, k=k), f"k={k}")
        np.testing.assert_array_equal(fa.eye(0, k=k).get(), np.eye(0, k=k), f"k={k}")
        near = min(max(k, -3), 5)   # the same triangle; NumPy's tril/triu overflow past int64
        for name in ("tril", "triu"):
            np.testing.assert_array_equal(getattr(fa, name)(fa.asarray(x), k=k).get(),
                                          getattr(np, name)(x, k=near), f"{name} k={k}")
    a, b, c = (rng.standard_normal(n) for n in (4, 6, 3))
    for indexing in ("xy", "ij"):
        got = fa.meshgrid(fa.asarray(a), fa.asarray(b[::-1]), fa.asarray(c), indexing=indexing)
        want = np.meshgrid(a, b[::-1], c, indexing=indexing)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.get(), w)
    np.testing.assert_array_equal(fa.arange(3, 40, 7, dtype=fa.int16).get(),
                                  np.arange(3, 40, 7, dtype=np.int16))
    np.testing.assert_array_equal(fa.from_dlpack(a).get(), a)


def test_creation_default_dtypes_are_numpys():
    assert fa.full((2, 3), 1.5).dtype == np.float64
    assert fa.full((2,), True).dtype == np.bool_
    assert fa.full((2,), 3).dtype == np.int64
    assert fa.zeros(4).dtype == fa.ones((2, 2)).dtype == fa.empty(3).dtype == np.float64
    x = fa.asarray(np.arange(6, dtype=np.int8))
    assert fa.zeros_like(x, dtype=fa.bool).dtype == np.bool_   # a dtype object is falsy
    assert fa.full_like(x, 7).get().tolist() == [7] * 6


def test_asarray_copy_semantics():
    host = namespace_cases.base(SEED)[:4]
    x = fa.asarray(host)
    assert fa.asarray(x) is x and fa.asarray(x, copy=False) is x
    y = fa.asarray(x, copy=True)
    y[...] = 0.0
    np.testing.assert_array_equal(x.get(), host)
    with pytest.raises(ValueError, match="copy=False"):
        fa.asarray(host, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        fa.asarray(x, dtype=fa.float64, copy=False)
    assert fa.asarray(x, dtype=fa.float64).dtype == np.float64
    z = fa.array(x)      # NumPy's np.array: a copy by default
    z[...] = 1.0
    np.testing.assert_array_equal(x.get(), host)
    assert fa.array(x, copy=False) is x
    with pytest.raises(ValueError, match="copy=False"):
        fa.reshape(x.T, (-1,), copy=False)


def test_data_type_functions_match_numpy():
    names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float16", "float32", "float64", "complex64", "complex128"]
    kinds = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
             "complex floating", "numeric"]
    for a in names:
        dt = getattr(fa, a)
        assert dt == np.dtype(a) and hash(dt) == hash(np.dtype(a)) and dt == getattr(np, a)
        for kind in kinds:
            assert fa.isdtype(dt, kind) == np.isdtype(np.dtype(a), kind), (a, kind)
        for b in names:
            assert fa.can_cast(dt, getattr(fa, b)) == np.can_cast(a, b), (a, b)
            if np.result_type(a, b).name in names:
                assert fa.result_type(dt, getattr(fa, b)) == np.result_type(a, b), (a, b)
    x = fa.asarray(np.ones(3, np.int8))
    for scalar in (1, 1.0, True):
        assert fa.result_type(x, scalar) == np.result_type(np.ones(3, np.int8), scalar)
    info = fa.finfo(fa.float32)
    assert (info.bits, info.eps, info.max) == (32, float(np.finfo(np.float32).eps),
                                               float(np.finfo(np.float32).max))
    assert isinstance(info.smallest_normal, float) and fa.finfo(x.astype(fa.float64)).bits == 64
    assert (fa.iinfo(fa.uint16).max, fa.iinfo(x).min) == (65535, -128)
    assert fa.astype(x, fa.int8, copy=False) is x and fa.astype(x, fa.float32).dtype == np.float32
    assert (fa.e, fa.pi, fa.newaxis) == (np.e, np.pi, None) and np.isnan(fa.nan)


def test_object_protocols():
    host = namespace_cases.base(SEED)[:5, :6]
    x = fa.asarray(host)
    assert x.__array_namespace__() is fa and fa.__array_api_version__ == "2024.12"
    assert f"{x[1, 2]:.3f}" == f"{host[1, 2]:.3f}" and f"{x}" == str(host)
    with pytest.raises(TypeError, match="format"):
        f"{x:.2f}"
    assert x.tolist() == host.tolist() and (x * 2).tolist() == (host * 2).tolist()
    rows = list(x[::-1] + 1)
    assert len(rows) == 5 and all(isinstance(r, fa.ndarray) for r in rows)
    np.testing.assert_array_equal(np.stack([r.get() for r in rows]), host[::-1] + 1)
    for c in (copy.copy(x), copy.deepcopy(x)):
        c[...] = 0.0
    np.testing.assert_array_equal(x.get(), host)
    pending = x * 3 - 1
    restored = pickle.loads(pickle.dumps(pending))
    np.testing.assert_array_equal(restored.get(), host * 3 - 1)
    with pytest.raises(TypeError, match="unhashable"):
        hash(x)
    assert x.device == fa.asarray(host).device and str(x.device) == fa.backend()
    assert x.to_device(x.device) is x
    with pytest.raises(fa.DeviceUnavailableError, match="cuda:7 is not available"):
        x.to_device("cuda:7")


def test_products_match_numpy():
    rng = np.random.default_rng(SEED)
    a = rng.standard_normal((3, 64, 30)).astype(np.float32)
    b = rng.standard_normal((30, 20)).astype(np.float32)
    fa_a, fa_b = fa.asarray(a), fa.asarray(b)
    # the kernels sum in another order than BLAS: within the bound of a rounded sum
    pc.check((fa_a[:, ::-1] @ fa_b).get(), a[:, ::-1], b, f"a[:, ::-1] @ b (seed {SEED})")
    pc.check((fa_a[0] @ b).get(), a[0], b, f"a[0] @ b (seed {SEED})")
    np.testing.assert_allclose(fa.vecdot(fa_a, fa_a[::-1]).get(), np.vecdot(a, a[::-1]),
                               rtol=1e-5)
    pc.check(fa.tensordot(fa_a, fa_b, axes=1).get(), a, b, f"tensordot (seed {SEED})",
             want=np.tensordot(a, b, 1))
    assert (fa_a @ fa_b.astype(fa.float64)).dtype == np.float64
    got = np.matmul(fa_a, fa_b)
    assert isinstance(got, fa.ndarray)
    pc.check(got.get(), a, b, f"np.matmul (seed {SEED})")
    got = np.vecdot(fa_a, fa_a)
    assert isinstance(got, fa.ndarray)
    np.testing.assert_allclose(got.get(), np.vecdot(a, a), rtol=1e-5)


def test_new_ufuncs_dispatch_from_numpy():
    x = fa.asarray(np.arange(1, 13, dtype=np.int32))
    for ufunc in (np.gcd, np.lcm):
        got = ufunc(x, 8)
        assert isinstance(got, fa.ndarray)
        np.testing.assert_array_equal(got.get(), ufunc(np.arange(1, 13, dtype=np.int32), 8))
    y = fa.asarray(np.linspace(-3, 3, 9))
    np.testing.assert_allclose(np.logaddexp(y, y[::-1]).get(),
                               np.logaddexp(y.get(), y.get()[::-1]), rtol=1e-15)


def test_namespace_views_and_special_functions_inside_fuse():
    host = namespace_cases.base(SEED)
    out_host = np.zeros_like(host)

    @fa.fuse
    def step(x, out):
        out[...] = fa.where(fa.flip(x, axis=1) > 0, fa.special.erf(x * 0.1), fa.permute_dims(
            fa.permute_dims(x, (1, 0)), (1, 0)))

    x, out = fa.asarray(host), fa.asarray(out_host)
    before = fa.stats()["launches"]
    step(x, out)
    assert fa.stats()["launches"] - before == 1
    scipy_special = pytest.importorskip("scipy.special")
    want = np.where(host[:, ::-1] > 0, scipy_special.erf(host * np.float32(0.1)), host)
    np.testing.assert_allclose(out.get(), want, rtol=1e-6, atol=1e-7, err_msg=f"seed {SEED}")

    @fa.fuse
    def joined(x):
        return fa.concat([x, x])

    with pytest.raises(fa.TracerConversionError, match="concat"):
        joined(x)


@pytest.mark.tiers("sim")
def test_copy_kernels_match_numpy():
    host = np.random.default_rng(SEED).standard_normal((6, 9)).astype(np.float32)
    x = fa.asarray(host)
    cases = [
        (fa.concat([x[::-1], x * 2], axis=1), np.concatenate([host[::-1], host * 2], axis=1)),
        (fa.stack([x, x.T.T + 1]), np.stack([host, host + 1])),
        (fa.tile(x[:2, ::-3], (2, 2)), np.tile(host[:2, ::-3], (2, 2))),
        (fa.tile(x[:2, ::-3], 3), np.tile(host[:2, ::-3], 3)),     # one int, as np.tile takes
        (fa.roll(x, 4, axis=1), np.roll(host, 4, axis=1)),
        (fa.tril(x, k=1) + fa.eye(6, 9, dtype=fa.float32), np.tril(host, 1) + np.eye(6, 9)),
    ]
    for got, want in cases:
        np.testing.assert_array_equal(got.get(), want.astype(np.float32))
    assert fa.backend() == "sim"


@pytest.mark.tiers("cuda")
def test_products_and_protocols_on_the_device():
    rng = np.random.default_rng(SEED)
    a = rng.standard_normal((64, 30)).astype(np.float32)
    x = fa.asarray(a)
    pc.check((x @ x.T).get(), a, a.T, f"x @ x.T (seed {SEED})")   # not BLAS's order
    assert str(x.device) == "cuda:0" and x.to_device(x.device) is x
    assert x.tolist() == a.tolist() and f"{x[3, 4]:.4f}" == f"{a[3, 4]:.4f}"


# ptx: PTX for sm_90 from arrays on the cpu (no GPU needed)

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.tiers("ptx")
def test_special_and_new_float_rows_compile_into_one_kernel(dtype):
    rng = np.random.default_rng(SEED)
    x, y = (fa.asarray(rng.uniform(0.1, 0.9, 4096).astype(dtype)) for _ in range(2))
    s = fa.special
    expr = (s.erf(x) + s.erfc(y) + s.erfinv(x) + s.expit(y) + s.logit(x) + s.gammaln(y)
            + fa.logaddexp(x, y) + fa.logaddexp2(x, y) + fa.heaviside(x, y) + fa.deg2rad(x)
            + fa.rad2deg(y) + fa.fabs(x))
    ptx = fa.explain(expr, arch="sm_90").ptx
    assert ".entry" in ptx and "ld.global" in ptx
    assert expr.dtype == np.dtype(dtype)


@pytest.mark.parametrize("dtype", ["int64", "uint32"])
@pytest.mark.tiers("ptx")
def test_integer_rows_compile(dtype):
    rng = np.random.default_rng(SEED)
    x, y = (fa.asarray(rng.integers(1, 1000, 4096).astype(dtype)) for _ in range(2))
    expr = fa.gcd(x, y) + fa.lcm(y, x) + fa.fmod(x, y) + fa.bitwise_count(x)
    ptx = fa.explain(expr, arch="sm_90").ptx
    assert ".entry" in ptx and "rem." in ptx
