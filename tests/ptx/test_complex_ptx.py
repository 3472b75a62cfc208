"""complex64 and complex128 kernels compile to PTX for sm_90 without a GPU: element-wide accesses
(a complex64 is one 8-byte ``ld.global.v2.f32``, a complex128 one 16-byte ``v2.f64``), the
complex helpers (Smith division, sin/cos/tanh from real math) and complex scalar parameters,
which numba passes as their two parts."""

import re

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
