"""bfloat16, float8_e4m3fn and float8_e5m2 on the cpu backend: ml_dtypes' bits for every case of
tests/minifloatcases.py, the conversions exhaustively, JAX's promotion table and its refusals,
stochastic rounding, DLPack with PyTorch's tensors."""

import minifloatcases as mc
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.errors import DTypeError, UnsupportedOperationError

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def cpu_backend():
    with config.override(BACKEND="cpu"):
        yield


@pytest.mark.parametrize("dtype", mc.FORMATS, ids=str)
@pytest.mark.parametrize("case", mc.CASES, ids=lambda c: c.__name__)
def test_cases_equal_ml_dtypes(case, dtype):
    seed = 3400 + mc.CASES.index(case)
    got, want = case(seed, 300, dtype)
    for k, (g, w) in enumerate(zip(*((got, want) if isinstance(got, list) else ([got], [want])))):
        mc.same(g, w, f"{case.__name__} {dtype} part {k} seed {seed}")


@pytest.mark.parametrize("dtype", mc.FORMATS, ids=str)
def test_every_bit_pattern_loads_and_rounds_back(dtype):
    """Each of the format's values loads as ml_dtypes' float32 and stores back to its bits; a
    float32 one step above each rounds as ml_dtypes rounds it."""
    words = np.arange(1 << (8 * dtype.itemsize)).astype(f"u{dtype.itemsize}")
    values = words.view(dtype)
    x = fa.asarray(values)
    mc.same(x.astype(np.float32).get(), values.astype(np.float32), "load")
    mc.same((x * 1).get(), values, "store")
    f = values.astype(np.float32)
    above = np.nextafter(f, np.float32(np.inf)) * np.float32(1.0001)
    with np.errstate(all="ignore"):
        mc.same(fa.asarray(above).astype(dtype).get(), above.astype(dtype), "round")


PROMOTIONS = [  # (a, b, JAX's result) with a Python scalar as a type
    ("bfloat16", "float16", "float32"), ("bfloat16", "int64", "bfloat16"),
    ("bfloat16", "uint8", "bfloat16"), ("bfloat16", "bool", "bfloat16"),
    ("bfloat16", "float32", "float32"), ("bfloat16", "float64", "float64"),
    ("bfloat16", "complex64", "complex64"), ("bfloat16", float, "bfloat16"),
    ("bfloat16", int, "bfloat16"), ("bfloat16", complex, "complex64"),
    ("float8_e4m3fn", "int32", "float8_e4m3fn"), ("float8_e5m2", "bool", "float8_e5m2"),
    ("float8_e4m3fn", float, "float8_e4m3fn"), ("float8_e5m2", int, "float8_e5m2"),
]


@pytest.mark.parametrize("a, b, want", PROMOTIONS, ids=str)
def test_promotion_is_jax(a, b, want):
    x = fa.ones(3, dtype=getattr(fa, a))
    y = {float: 1.5, int: 2, complex: 1j}.get(b) if isinstance(b, type) else \
        fa.ones(3, dtype=np.dtype(b))
    assert (x + y).dtype == np.dtype(getattr(fa, want))


REFUSED = [("float8_e4m3fn", "float8_e5m2"), ("float8_e4m3fn", "bfloat16"),
           ("float8_e5m2", "float16"), ("float8_e4m3fn", "float32")]


@pytest.mark.parametrize("a, b", REFUSED, ids=str)
def test_float8_refuses_other_floats(a, b):
    x, y = fa.ones(3, dtype=getattr(fa, a)), fa.ones(3, dtype=getattr(fa, b))
    with pytest.raises(UnsupportedOperationError, match=rf"add on.*{a}.*8-bit floats.*astype"):
        x + y
    with pytest.raises(UnsupportedOperationError, match="8-bit floats"):
        x * 1j


def test_nextafter_refuses_bfloat16():
    x = fa.ones(3, dtype=fa.bfloat16)
    with pytest.raises(UnsupportedOperationError, match="nextafter on bfloat16.*float32"):
        fa.nextafter(x, x)


def test_dtypes_are_ml_dtypes():
    assert fa.bfloat16 == np.dtype(mc.BF16) and fa.float8_e4m3fn == mc.E4M3
    assert fa.float8_e5m2 == mc.E5M2 and fa.isdtype(fa.float32, "real floating")


@pytest.mark.parametrize("dtype", [mc.BF16, np.dtype(np.float16)], ids=str)
def test_stochastic_rounding_is_unbiased(dtype):
    mc.stochastic_mean(3410, 40000, dtype)


def test_stochastic_rounding_moves_within_a_spacing_and_refuses_float8():
    rng = fa.random.default_rng(3411)
    x = fa.asarray(np.random.default_rng(3411).standard_normal(1000).astype(np.float32))
    y = rng.stochastic_round(x * 2.0, fa.bfloat16)
    got = y.get().astype(np.float32).astype(np.float64)
    exact = (x * 2.0).get().astype(np.float64)
    ulp = 2.0 ** (np.frexp(exact)[1] - 8)          # bfloat16's spacing around each value
    assert (np.abs(got - exact) < ulp).all() and (got != exact.astype(np.float32)).any()
    with pytest.raises(DTypeError, match="stochastic_round: dtype float8_e4m3fn.*astype"):
        rng.stochastic_round(x, fa.float8_e4m3fn)


def test_stochastic_rounding_of_float64_and_edges():
    rng = fa.random.default_rng(3412)
    v = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40, 3.4e38, -1.0], np.float64)
    got = rng.stochastic_round(fa.asarray(v), fa.bfloat16).get().astype(np.float64)
    assert np.isposinf(got[0]) and np.isneginf(got[1]) and np.isnan(got[2])
    assert got[3] == 0 and np.signbit(got[4]) and got[7] == -1.0
    assert 0 <= got[5] <= 2e-40 and got[6] >= 3.38e38


@pytest.mark.parametrize("tdtype", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_dlpack_with_torch_both_ways_without_copy(tdtype):
    g = torch.Generator().manual_seed(3413)
    t = (torch.randn(6, 40, generator=g) * 4).to(getattr(torch, tdtype))
    for view in (t, t.T, t[1:, ::3]):
        x = fa.from_dlpack(view)
        assert x.dtype == getattr(fa, tdtype)
        want = view.float().numpy()
        np.testing.assert_array_equal(x.astype(np.float32).get(), want)
    x = fa.from_dlpack(t)
    t[0, 0] = 2.0
    assert float(x[0, 0].astype(np.float32).get()) == 2.0     # the same memory
    back = torch.from_dlpack(x * 1)
    assert back.dtype == getattr(torch, tdtype)
    assert torch.equal(back.view(torch.uint8), t.view(torch.uint8)) if tdtype != "bfloat16" \
        else torch.equal(back, t)
