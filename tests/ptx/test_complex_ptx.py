"""complex64 and complex128 kernels compile to PTX for sm_90 without a GPU: 16-byte accesses where
aligned (two complex64 in one ``ld.global.v4.f32``, a complex128 one ``v2.f64``; beside float32 a
group of 4 elements, the complex64 operands in two accesses), element-wide ones in a tail or
where misaligned (a complex64 one 8-byte ``ld.global.v2.f32``), the
complex helpers (Smith division, sin/cos/tanh from real math) and complex scalar parameters,
which numba passes as their two parts."""

import re

import complexcases
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

PARTS = {np.complex64: ("f32", "v2.f32"), np.complex128: ("f64", "v2.f64")}


@pytest.fixture(autouse=True)
def cpu_arrays():
    with config.override(BACKEND="cpu"):
        yield


@pytest.mark.parametrize("dtype", list(PARTS), ids=lambda d: np.dtype(d).name)
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


def test_complex64_moves_two_elements_per_16_byte_access():
    a, b, c = _operands(np.random.default_rng(81), *[np.complex64] * 3)
    ex = fa.explain(a * b + c, arch="sm_90")
    n = _accesses(ex.ptx)
    assert ex.vector_width == 2, ex.vector_width
    # the vector loop: ld.global.v4.f32 (two complex64), three loads per store (NVVM may unroll
    # it); the tail: one 8-byte element each
    assert n.get("st.v4.f32", 0) >= 1 and n["ld.v4.f32"] == 3 * n["st.v4.f32"], n
    assert n.get("ld.v2.f32", 0) <= 3 and n.get("st.v2.f32", 0) <= 1, n


def test_complex128_is_one_16_byte_access_per_element():
    a, b, c = _operands(np.random.default_rng(82), *[np.complex128] * 3)
    n = _accesses(fa.explain(a * b + c, arch="sm_90").ptx)
    assert n.get("ld.v2.f64", 0) >= 3 and n.get("st.v2.f64", 0) >= 1, n
    assert not any(k.endswith((".f64", ".b64")) and ".v2." not in k for k in n), n


def test_complex64_beside_float32_groups_four_elements():
    a, b, c = _operands(np.random.default_rng(83), np.complex64, np.float32, np.complex64)
    ex = fa.explain(a * b + c, arch="sm_90")
    n = _accesses(ex.ptx)
    assert ex.vector_width == 4, ex.vector_width
    # a group: 2 accesses of a, 1 of b, 2 of c, 2 stores; the float32 operand stays a v4 load
    assert n.get("st.v4.f32", 0) >= 2 and 2 * n["ld.v4.f32"] == 5 * n["st.v4.f32"], n
    assert n.get("ld.f32", 0) <= 1, n      # b's tail element only


def test_complex64_beside_complex128_groups_two_elements():
    a, b = _operands(np.random.default_rng(84), np.complex64, np.complex128)
    ex = fa.explain(a * b, arch="sm_90")
    n = _accesses(ex.ptx)
    assert ex.vector_width == 2, ex.vector_width
    # a group: one v4.f32 of a, two v2.f64 of b, two v2.f64 stores; tail: one element each
    assert n.get("ld.v4.f32", 0) >= 1 and n["ld.v2.f64"] == 2 * n["ld.v4.f32"] + 1, n
    assert n["st.v2.f64"] == 2 * n["ld.v4.f32"] + 1 and n.get("ld.v2.f32", 0) == 1, n


def test_misaligned_complex64_goes_element_by_element():
    a, b = _operands(np.random.default_rng(85), np.complex64, np.complex64, n=4097)
    ex = fa.explain(a[1:] * b[:-1], arch="sm_90")
    n = _accesses(ex.ptx)
    assert ex.vector_width == 1 and "ld.v4.f32" not in n and "ld.v2.f32" in n, n


@pytest.mark.parametrize("dtype", list(PARTS), ids=lambda d: np.dtype(d).name)
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
