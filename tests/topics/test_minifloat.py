"""bfloat16, float8_e4m3fn and float8_e5m2: ml_dtypes' bits for the cases of
tests/minifloatcases.py, by tier (the functions beyond elementwise ops:
test_minifloat_functions.py).

- cpu: every case, the conversions exhaustively, JAX's promotion table and its refusals,
  stochastic rounding, DLPack with PyTorch's tensors.
- sim (the cuda kernels' source, tiny sizes): the arithmetic and cast cases (bfloat16's 8-lane
  vectors among them), and stochastic rounding with the cpu backend's bits.
- cuda: every case (reductions within one rounding: the device sums float32 in its own tree
  order), every bit pattern loaded and stored, stochastic rounding with the cpu backend's bits
  and unbiased, PyTorch's bfloat16 CUDA tensors through DLPack without a copy.
- ptx (sm_90, no GPU): aligned contiguous bfloat16 moves in 128-bit accesses, the float8 formats
  compile through compiler/minifloat's helpers, a mixed-format expression compiles without a
  call.
"""

import re

import minifloatcases as mc
import ml_dtypes
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.errors import DTypeError, UnsupportedOperationError


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
    torch = pytest.importorskip("torch")
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


# sim

@pytest.mark.parametrize("dtype", [mc.BF16, mc.E4M3], ids=str)
@pytest.mark.tiers("sim")
def test_arithmetic_equals_ml_dtypes(dtype):
    mc.same(*mc.arithmetic(3420, 2, dtype), f"arithmetic {dtype} seed 3420")


@pytest.mark.tiers("sim")
def test_bfloat16_vectors_round_as_ml_dtypes():
    a, b = mc.data(3421, (64,), mc.BF16), mc.data(3422, (64,), mc.BF16)
    got = (fa.asarray(a) * fa.asarray(b) + 0.5).get()
    mc.same(got, a * b + mc.BF16.type(0.5), "bfloat16 vectors seed 3421")
    f = mc.data(3423, (64,), np.dtype(np.float32))
    mc.same(fa.asarray(f).astype(fa.bfloat16).get(), f.astype(mc.BF16), "cast seed 3423")


@pytest.mark.tiers("sim")
def test_stochastic_rounding_has_the_cpu_bits():
    x = np.random.default_rng(3424).standard_normal(48).astype(np.float32)
    got = fa.random.default_rng(3424).stochastic_round(fa.asarray(x), fa.float16).get()
    with config.override(BACKEND="cpu"):
        want = fa.random.default_rng(3424).stochastic_round(fa.asarray(x), fa.float16).get()
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


@pytest.mark.tiers("sim")
def test_namespace_without_helpers_rounds_as_ml_dtypes():
    """A hand-written kernel's namespace (no helper set) still has bfloat16's roundings."""
    from fusedarrays.cuda import sim

    ns = sim._build_namespace({})
    f = mc.data(3425, (16,), np.dtype(np.float32))
    got = np.array([ns["fa_f32_bf16"](v) for v in f], np.uint16)
    np.testing.assert_array_equal(got, f.astype(mc.BF16).view(np.uint16))
    assert ns["cv_e4m3"] is ns["fa_cv_e4m3"]


# cuda

@pytest.mark.parametrize("dtype", mc.FORMATS, ids=str)
@pytest.mark.parametrize("case", [c for c in mc.CASES if c is not mc.reductions],
                         ids=lambda c: c.__name__)
@pytest.mark.tiers("cuda")
def test_cases_equal_ml_dtypes_on_the_device(case, dtype):
    seed = 3430 + mc.CASES.index(case)
    got, want = case(seed, 300, dtype)
    for k, (g, w) in enumerate(zip(*((got, want) if isinstance(got, list) else ([got], [want])))):
        mc.same(g, w, f"{case.__name__} {dtype} part {k} seed {seed}")


@pytest.mark.parametrize("dtype", mc.FORMATS, ids=str)
@pytest.mark.tiers("cuda")
def test_reductions_within_one_rounding(dtype):
    got, want = mc.reductions(3436, 300, dtype)
    for g, w in zip(got, want):
        g32, w32 = g.astype(np.float32), w.astype(np.float32)
        # float8_e4m3fn has no inf: a sum past 448 is its NaN, in ml_dtypes' cast as on the device
        nan = np.isnan(w32)
        np.testing.assert_array_equal(np.isnan(g32), nan, err_msg=f"{dtype} seed 3436")
        step = np.abs(np.nextafter(w32, np.float32(np.inf)) - w32) * 2 ** (23 - 7)
        assert (np.abs(g32 - w32)[~nan] <= step[~nan]).all(), f"{dtype} seed 3436"


@pytest.mark.parametrize("dtype", mc.FORMATS, ids=str)
@pytest.mark.tiers("cuda")
def test_every_bit_pattern_loads_and_stores(dtype):
    values = np.arange(1 << (8 * dtype.itemsize)).astype(f"u{dtype.itemsize}").view(dtype)
    x = fa.asarray(values)
    mc.same(x.astype(np.float32).get(), values.astype(np.float32), "load")
    mc.same((x * 1).get(), values, "store")


@pytest.mark.parametrize("dtype", [mc.BF16, np.dtype(np.float16)], ids=str)
@pytest.mark.tiers("cuda")
def test_stochastic_rounding_cpu_bits_and_unbiased(dtype):
    x = np.random.default_rng(3437).standard_normal((300, 257)).astype(np.float32)
    got = fa.random.default_rng(3437).stochastic_round(fa.asarray(x).T, dtype).get()
    with config.override(BACKEND="cpu"):
        want = fa.random.default_rng(3437).stochastic_round(fa.asarray(x).T, dtype).get()
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    mc.stochastic_mean(3438, 200000, dtype)


@pytest.mark.tiers("cuda")
def test_torch_bfloat16_cuda_tensors_without_copy():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    t = torch.randn(64, 33, device="cuda").to(torch.bfloat16)
    x = fa.asarray(t)                        # through DLPack: the CUDA array interface says <f2
    assert x.dtype == fa.bfloat16
    np.testing.assert_array_equal(x.astype(np.float32).get(), t.float().cpu().numpy())
    back = torch.from_dlpack(x * 2)
    assert back.dtype == torch.bfloat16 and torch.equal(back, t * 2)


# ptx

def count(pattern, ptx):
    return len(re.findall(pattern, ptx))


@pytest.mark.tiers("ptx")
def test_bfloat16_has_128_bit_loads_and_stores():
    rng = np.random.default_rng(3401)
    a, b, c = (fa.asarray(rng.standard_normal(1000).astype(ml_dtypes.bfloat16)) for _ in range(3))
    ex = fa.explain(a * b + c, arch="sm_90")
    assert ex.vector_width == 8
    loads = count(r"ld\.global\.v4\.u32", ex.ptx)
    stores = count(r"st\.global\.v4\.(u32|b32)", ex.ptx)
    assert stores >= 1 and loads == 3 * stores
    assert "ld.global.v2" not in ex.ptx, "each 128-bit load must stay one load"
    assert "call" not in ex.ptx.split("{", 1)[1], "helpers are inlined"


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.tiers("ptx")
def test_float8_and_bfloat16_mixed_compile_inline(dtype):
    rng = np.random.default_rng(3402)
    x = fa.asarray(rng.standard_normal(1000).astype(getattr(ml_dtypes, dtype)))
    w = fa.asarray(rng.standard_normal(1000).astype(ml_dtypes.bfloat16))
    y = (x.astype(fa.float32) * 2.0).astype(fa.bfloat16) + w * 0.5
    ex = fa.explain(y, arch="sm_90")
    assert "ld.global.u8" in ex.ptx and "st.global" in ex.ptx
    assert "call" not in ex.ptx.split("{", 1)[1], "helpers are inlined"


@pytest.mark.tiers("ptx")
def test_kernel_without_helpers_has_the_minifloat_names():
    """A hand-written kernel compiled with no helper set (tests/gpu/test_cuda_backend's) still gets
    ld_bf16 …: compiler/minifloat.bind compiles what the namespace lacks."""
    from fusedarrays.cuda.compile import compile_ptx

    source = ("def k(n, p0, p1, p2):\n    i = cv_i64(cuda.grid(1))\n    if i < n:\n"
              "        st_e4m3(p2, i, ld_bf16(p0, i) * ld_f32(p1, i))\n")
    ptx, entry = compile_ptx(source, "k", ("i64", "ptr", "ptr", "ptr"), "sm_90", {})
    assert "ld.global.u16" in ptx and "st.global.u8" in ptx
    plain = "def k(n, p0):\n    if n > 0:\n        st_f32(p0, 0, ld_f32(p0, 1))\n"
    assert ".entry" in compile_ptx(plain, "k", ("i64", "ptr"), "sm_90", {})[0]
