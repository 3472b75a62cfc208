"""Every op × dtype × layout on the cpu backend at its default settings, against NumPy (see
tests/semantics.py)."""

import numpy as np
import semantics

import fusedarrays as fa
from fusedarrays import config

test_every_op_matches_numpy = semantics.every_op_test("cpu")


def test_serial_loop_matches_numpy():
    rng = np.random.default_rng(20261123)
    a, b = rng.random(100_000).astype(np.float32), rng.random(100_000).astype(np.float32)
    # FUSEDARRAYS_CPU_PARALLEL=0 is a supported setting: every chunk on the calling thread
    with config.override(BACKEND="cpu", CPU_PARALLEL=False):
        got = (fa.asarray(a) * fa.asarray(b) + 2.5).get()
    np.testing.assert_array_equal(got, a * b + np.float32(2.5))


def test_every_unary_float_op_at_three_widths_in_one_kernel():
    semantics.check_mixed_float_unary_ops()


def test_scalar_powers_take_numpys_operator_shortcuts():
    """``x ** 2``, ``x ** -1`` and ``x ** 0.5`` are NumPy's square, reciprocal and sqrt where
    NumPy's operator takes them (so the bits match NumPy's), and pow everywhere else."""
    seed = 61
    rng = np.random.default_rng(seed)
    for dtype in ("float32", "float16", "float64", "int32", "uint8", "bool"):
        x = (rng.standard_normal(3000) * 4).astype(dtype) if dtype != "bool" else \
            rng.random(3000) > 0.5
        if x.dtype.kind in "iu":
            x = rng.integers(0, 9, 3000).astype(dtype)
        if x.dtype.kind == "f":   # where sqrt and pow(x, 0.5) part: sqrt(-0) = -0, sqrt(-inf) = nan
            x[:4] = [-0.0, -np.inf, np.inf, 0.0]
        for exponent in (2, -1, 0.5, 3, 2.0):
            if x.dtype.kind in "biu" and (exponent == -1 or isinstance(exponent, float)
                                          and x.dtype.kind == "b"):
                continue     # NumPy: integers to negative powers raise; bool ** float is float
            with np.errstate(all="ignore"):
                want = x ** exponent
                got = (fa.asarray(x) ** exponent).get()
                inplace = fa.asarray(x.astype(want.dtype))
                inplace **= exponent
            what = f"{dtype} ** {exponent!r} (seed {seed})"
            assert got.dtype == want.dtype, what
            if exponent in (2, -1) and isinstance(exponent, int) or exponent == 0.5:
                np.testing.assert_array_equal(got, want, err_msg=what)   # NumPy's own op
                np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=what)
            else:
                np.testing.assert_allclose(got, want, rtol=2e-3 if dtype == "float16" else
                                           1e-6, err_msg=what)
            with np.errstate(all="ignore"):
                np.testing.assert_allclose(inplace.get(), x.astype(want.dtype) ** exponent,
                                           rtol=2e-3, err_msg=what + " in place")
