"""complex64 and complex128 against NumPy (tests/complexcases.py) on every tier: every complex
op × layout at sizes that reach the flat, rows, tiled and nd walks; promotion with real arrays
and Python complex scalars (complex kernel parameters, passed as their two parts); special
values; refusals; reductions; 16-byte accesses where aligned.

- cpu at its default settings: also creation, conversions, casts and the namespace's dtype
  objects, and misaligned complex read and written through each walk.
- sim (the generated CUDA source in numba's simulator, which runs each thread in Python): the
  smallest sizes that reach each walk; 65×136 takes tiles where a complex64 operand is
  transposed (two rows of tiles, the second one row deep, and a partial column of tiles;
  complex128 tiles would pass the shared memory, so rows), 8×136 rows (more rows and columns
  than the simulator's grid, so both stride loops turn), 4×5 coordinates, 1-D views the flat
  walk.
- cuda: also misaligned imports from CuPy, which must never fault.
- ptx (sm_90, no GPU): 16-byte accesses where aligned (two complex64 in one
  ``ld.global.v4.f32``, a complex128 one ``v2.f64``; beside float32 a group of 4 elements, the
  complex64 operands in two accesses), element-wide ones in a tail or where misaligned (a
  complex64 one 8-byte ``ld.global.v2.f32``), the complex helpers (Smith division, sin/cos/tanh
  from real math) and complex scalar parameters, which numba passes as their two parts.
"""

import re
import warnings

import complexcases
import numpy as np
import pytest

import fusedarrays as fa

# 300×400 reaches the flat walk, rows and tiles; 4×5 walks coordinates (nd) or flat
SHAPES = [(300, 400), (4, 5)]
EXPECTED = {"contiguous": {"flat"}, "transposed": {"tiled", "nd"},
            "negative steps": {"rows", "nd"},
            "broadcast": {"rows", "nd"}, "flat reversed": {"flat"}, "zero_d": {"flat"}}
# sim: the 2-D size at which a layout reaches the walk it is there for, and that walk
SIM_SMALL = (4, 5)
SIM_LARGE = {"transposed": (65, 136), "negative steps": (8, 136), "broadcast": (8, 136)}
# A walk moves a complex value the same way whatever the op computes from it, so at the large
# sizes a few unary and binary ops take the walk (every op runs at SIM_SMALL): the 65 × 136
# tiles with all 43 took 45-65 s of the 2-core suite.
WALK_OPS = ("negative", "conjugate", "absolute", "exp", "sqrt", "add", "multiply",
            "true_divide", "less")
PARTS = {np.complex64: ("f32", "v2.f32"), np.complex128: ("f64", "v2.f64")}


@pytest.mark.tiers("cpu", "sim", "cuda")
@pytest.mark.parametrize("layout", list(complexcases.LAYOUTS))
@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_every_complex_op_matches_numpy(dtype, layout, tier):
    reached = set()
    if tier == "sim":
        if layout in SIM_LARGE:
            reached |= complexcases.check_ops(dtype, layout, SIM_LARGE[layout],
                                              names=WALK_OPS)[1]
        reached |= complexcases.check_ops(dtype, layout, SIM_SMALL)[1]
        schedules = {s for s, _ in reached}
        if layout == "transposed":
            assert ("tiled" if dtype == np.complex64 else "rows") in schedules, reached
        elif layout in SIM_LARGE:
            assert "rows" in schedules, reached
        return
    for shape in SHAPES:
        checked, got = complexcases.check_ops(dtype, layout, shape, fa.asarray)
        reached |= got
        if tier == "cpu":
            assert checked == len(complexcases.UNARY) + len(complexcases.BINARY) + 1
    if tier == "cuda":
        if layout == "transposed":
            assert ("tiled" if dtype == np.complex64 else "rows") in {s for s, _ in reached}
        return
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


@pytest.mark.tiers("cpu", "sim", "cuda")
def test_mixed_promotion_matches_numpy():
    complexcases.check_mixed_promotion(fa.asarray)


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
@pytest.mark.tiers("cpu", "sim", "cuda")
def test_special_values_match_numpy(dtype):
    complexcases.check_special_values(dtype, fa.asarray)


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
@pytest.mark.tiers("cpu", "sim", "cuda")
def test_ops_without_complex_templates_are_refused(dtype):
    assert complexcases.check_refusals(dtype, fa.asarray) >= 5   # cbrt exp2 fabs …


@pytest.mark.tiers("cpu", "sim", "cuda")
@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_reductions_match_numpy(dtype, tier):
    if tier != "sim":
        complexcases.check_reductions(dtype, (300, 400), fa.asarray)
        return
    # 3 rows of 136: a block per output (more outputs than the simulator's two blocks), one
    # block for all, a thread per output, and the transpose's sum in parts folded after
    x = fa.asarray(np.ones((3, 136), dtype))
    reached = {(plan.schedule, plan.split > 1) for view in (x, x.T) for axis in (None, 0, 1)
               for plan, _ in fa.explain(fa.sum(view, axis=axis)).kernels}
    assert reached == {("rows", False), ("cols", False), ("cols", True)}, reached
    complexcases.check_reductions(dtype, (3, 136))


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
@pytest.mark.tiers("cpu", "sim", "cuda")
def test_complex_operands_take_16_byte_accesses_where_aligned(name):
    """The cases whose cuda kernels move complex operands in 16-byte accesses (the plan is the
    same on every backend; the cpu walk is element by element)."""
    complexcases.check_vector_case(name)


@pytest.mark.tiers("cpu", "sim", "cuda")
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


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
@pytest.mark.tiers("sim")
def test_row_fused_complex_matches_numpy(dtype):
    """A row's mean taken out of it: one row kernel, complex64 rows read two elements per
    16-byte access."""
    seed = 20250113
    base = complexcases.random_complex(np.random.default_rng(seed), (8, 136), dtype)
    x = fa.asarray(base)
    got = x - x.mean(axis=1, keepdims=True)
    plans = [plan for plan, _ in fa.explain(got).kernels]
    assert [p.vector_width for p in plans] == [2 if dtype == np.complex64 else 1], plans
    complexcases.assert_close("multiply", got.get(), base - base.mean(axis=1, keepdims=True),
                              f"row-fused mean of {dtype} (seed {seed})", np.dtype(dtype))


@pytest.mark.tiers("cuda")
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


@pytest.mark.tiers("cuda")
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


# ptx: PTX for sm_90 from arrays on the cpu (no GPU needed)

@pytest.mark.parametrize("dtype", list(PARTS), ids=lambda d: np.dtype(d).name)
@pytest.mark.tiers("ptx")
def test_complex_expression_compiles_with_element_wide_accesses(dtype):
    rng = np.random.default_rng(8)
    a = fa.asarray((rng.standard_normal(4096) + 1j).astype(dtype))
    b = fa.asarray(rng.standard_normal(4096).astype(np.float32))
    expr = (a * b + 0.5j) / (a - 1) + fa.sin(a) * fa.exp(fa.conj(a)) - fa.tanh(a) ** 2
    ptx = fa.explain(expr, arch="sm_90").ptx
    part, vector = PARTS[dtype]
    assert re.search(rf"ld\.global(\.nc)?\.{re.escape(vector)}", ptx), "complex loads"
    assert re.search(rf"st\.global\.{re.escape(vector)}", ptx), "complex stores"
    # the scalar 0.5j (and the 1 promoted to complex) are two parameters of the part's type each
    assert len(re.findall(rf"\.param \.{part} ", ptx)) == 4


@pytest.mark.parametrize("dtype", list(PARTS), ids=lambda d: np.dtype(d).name)
@pytest.mark.tiers("ptx")
def test_parts_and_comparisons_compile(dtype):
    a = fa.asarray(np.arange(256, dtype=dtype) * (1 - 1j))
    exprs = [fa.abs(a) + fa.angle(a) * a.real - a.imag,
             fa.where((a < a * 2) | (a >= 1j) | fa.isnan(a) | fa.isinf(a), fa.sign(a),
                      fa.reciprocal(a)),
             a.astype(bool), fa.sqrt(a) + fa.log(a) + fa.cos(a)]
    with pytest.warns(np.exceptions.ComplexWarning):
        exprs.append(a.astype(np.float32))
    for expr in exprs:
        assert ".entry" in fa.explain(expr, arch="sm_90").ptx


@pytest.mark.tiers("ptx")
def test_complex64_leaves_float32_vector_paths_alone():
    x = fa.asarray(np.ones(4096, np.float32))
    ptx = fa.explain(x * 2 + 1, arch="sm_90").ptx
    assert "ld.global.v4.f32" in ptx or "ld.global.nc.v4.f32" in ptx


def _accesses(ptx: str) -> dict:
    """How many of each global load and store the PTX holds (``ld.global.nc`` as ``ld``)."""
    found = re.findall(r"\b(ld|st)\.global(?:\.nc)?\.((?:v[24]\.)?[a-z]+\d+)", ptx)
    counts: dict = {}
    for op, kind in found:
        counts[f"{op}.{kind}"] = counts.get(f"{op}.{kind}", 0) + 1
    return counts


def _operands(rng, *dtypes, n=4096):
    return [fa.asarray(complexcases.random_complex(rng, n, d) if np.dtype(d).kind == "c" else
                       rng.standard_normal(n).astype(d)) for d in dtypes]


@pytest.mark.tiers("ptx")
def test_complex64_moves_two_elements_per_16_byte_access():
    a, b, c = _operands(np.random.default_rng(81), *[np.complex64] * 3)
    ex = fa.explain(a * b + c, arch="sm_90")
    n = _accesses(ex.ptx)
    assert ex.vector_width == 2, ex.vector_width
    # the vector loop: ld.global.v4.f32 (two complex64), three loads per store (NVVM may unroll
    # it); the tail: one 8-byte element each
    assert n.get("st.v4.f32", 0) >= 1 and n["ld.v4.f32"] == 3 * n["st.v4.f32"], n
    assert n.get("ld.v2.f32", 0) <= 3 and n.get("st.v2.f32", 0) <= 1, n


@pytest.mark.tiers("ptx")
def test_complex128_is_one_16_byte_access_per_element():
    a, b, c = _operands(np.random.default_rng(82), *[np.complex128] * 3)
    n = _accesses(fa.explain(a * b + c, arch="sm_90").ptx)
    assert n.get("ld.v2.f64", 0) >= 3 and n.get("st.v2.f64", 0) >= 1, n
    assert not any(k.endswith((".f64", ".b64")) and ".v2." not in k for k in n), n


@pytest.mark.tiers("ptx")
def test_complex64_beside_float32_groups_four_elements():
    a, b, c = _operands(np.random.default_rng(83), np.complex64, np.float32, np.complex64)
    ex = fa.explain(a * b + c, arch="sm_90")
    n = _accesses(ex.ptx)
    assert ex.vector_width == 4, ex.vector_width
    # a group: 2 accesses of a, 1 of b, 2 of c, 2 stores; the float32 operand stays a v4 load
    assert n.get("st.v4.f32", 0) >= 2 and 2 * n["ld.v4.f32"] == 5 * n["st.v4.f32"], n
    assert n.get("ld.f32", 0) <= 1, n      # b's tail element only


@pytest.mark.tiers("ptx")
def test_complex64_beside_complex128_groups_two_elements():
    a, b = _operands(np.random.default_rng(84), np.complex64, np.complex128)
    ex = fa.explain(a * b, arch="sm_90")
    n = _accesses(ex.ptx)
    assert ex.vector_width == 2, ex.vector_width
    # a group: one v4.f32 of a, two v2.f64 of b, two v2.f64 stores; tail: one element each
    assert n.get("ld.v4.f32", 0) >= 1 and n["ld.v2.f64"] == 2 * n["ld.v4.f32"] + 1, n
    assert n["st.v2.f64"] == 2 * n["ld.v4.f32"] + 1 and n.get("ld.v2.f32", 0) == 1, n


@pytest.mark.tiers("ptx")
def test_misaligned_complex64_goes_element_by_element():
    a, b = _operands(np.random.default_rng(85), np.complex64, np.complex64, n=4097)
    ex = fa.explain(a[1:] * b[:-1], arch="sm_90")
    n = _accesses(ex.ptx)
    assert ex.vector_width == 1 and "ld.v4.f32" not in n and "ld.v2.f32" in n, n


@pytest.mark.parametrize("dtype", list(PARTS), ids=lambda d: np.dtype(d).name)
@pytest.mark.tiers("ptx")
def test_misaligned_complex_is_read_and_written_by_parts(dtype):
    """Elements half an element off their size (a CuPy view of float data at an odd element):
    one access per part, never the whole-element access that faults there."""
    rng = np.random.default_rng(86)
    part, whole = PARTS[dtype]
    z = complexcases.misaligned(complexcases.random_complex(rng, 4096, dtype))
    n = _accesses(fa.explain(z * 2 + 1, arch="sm_90").ptx)
    assert n.get(f"ld.{part}", 0) >= 2 and f"ld.{whole}" not in n, n
    n = _accesses(fa.explain(fa.asarray(complexcases.random_complex(rng, 4096, dtype)) * 2 + 1,
                             arch="sm_90").ptx)
    assert f"ld.{whole}" in n, n    # aligned: the whole element in one access still
