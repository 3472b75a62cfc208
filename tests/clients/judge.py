"""How the client tier judges a call: the client's result on fa arrays against the same call on
NumPy arrays (values within a tolerance of the dtype, shape, dtype, and the result's namespace).

A client that returns arrays of its input's namespace must return ``fa.ndarray`` for fa input
(an array it converts to NumPy behind the user's back is a silent host round trip, or a
namespace mix-up the user meets later); a Python scalar is compared as a float.
"""

from __future__ import annotations

import numpy as np

import fusedarrays as fa

# Relative tolerance per result dtype, applied against the result's largest magnitude (so values
# near zero in a transform are judged at the scale of the whole result). float64 allows for
# different LAPACK/BLAS routes (NumPy's on the cpu, cuSOLVER/cuBLAS on cuda) and summation orders.
RTOL = {np.dtype(np.float64): 1e-9, np.dtype(np.float32): 2e-5,
        np.dtype(np.complex128): 1e-9, np.dtype(np.complex64): 2e-5}


def data(seed: int, shape=(200, 12), spread=True) -> np.ndarray:
    """Fresh normal data; with ``spread`` the columns' scales fall from 3 to 0.5, so principal
    components and singular values are distinct (a decomposition is then well defined)."""
    x = np.random.default_rng(seed).standard_normal(shape)
    if spread:
        x *= np.linspace(3.0, 0.5, shape[-1])
    return x


def host(x) -> np.ndarray:
    """Values on the host, whatever the result's type."""
    return x.get() if isinstance(x, fa.ndarray) else np.asarray(x)


def check(got, want, what: str, *, rtol: float | None = None, fa_result: bool = True) -> None:
    """``got`` (the call on fa arrays) matches ``want`` (the call on NumPy arrays); ``what``
    names the call and the seed. Tuples, lists and dicts are compared item by item."""
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), f"{what}: {len(got)} results, NumPy's call {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            check(g, w, f"{what}[{i}]", rtol=rtol, fa_result=fa_result)
        return
    if isinstance(want, np.ndarray) and want.ndim > 0:
        if fa_result:
            assert isinstance(got, fa.ndarray), \
                f"{what}: returned {type(got).__module__}.{type(got).__name__}, not fa.ndarray"
        _check_values(host(got), want, what, rtol)
        return
    # a scalar (Python or NumPy) or 0-d array
    g = host(got)
    w = np.asarray(want)
    if w.dtype.kind in "fc":
        tol = rtol or RTOL.get(w.dtype, 1e-9)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * 1e-3, err_msg=what)
    else:
        assert g == w, f"{what}: {g!r} != NumPy's {w!r}"


def _check_values(got: np.ndarray, want: np.ndarray, what: str, rtol: float | None) -> None:
    assert got.shape == want.shape, f"{what}: shape {got.shape} != NumPy's {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != NumPy's {want.dtype}"
    if want.dtype.kind in "fc":
        tol = rtol or RTOL[want.dtype]
        finite = np.isfinite(want)
        scale = float(np.abs(want[finite]).max()) if finite.any() else 1.0
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(scale, 1e-30),
                                   equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)
