"""NumPy's ufunc protocol as clients call it (issue #32), on the cpu backend against NumPy:
``np.<ufunc>(...)`` with ``dtype=``, ``out=``, ``where=``, ``casting=``, ``order=``, ``subok=``;
``ufunc.reduce`` with ``axis`` (tuple, None), ``dtype``, ``keepdims``, ``initial``, ``where``,
``out``; ``ufunc.accumulate``, ``outer``, ``at``; NumPy's casting errors; and the error for a
NumPy ``out=`` (``a += x`` with a NumPy ``a``) that says what to write."""

import numpy as np
import pytest
from numpy._core._exceptions import _UFuncInputCastingError, _UFuncOutputCastingError

import fusedarrays as fa

SEED = 3301


def _data(shape=(30, 17)):
    rng = np.random.default_rng(SEED)
    f = rng.standard_normal(shape)
    i = rng.integers(-100, 100, shape).astype(np.int8)
    return f, i


def _views(host: np.ndarray):
    """(fa view, NumPy view) pairs: whole, transposed, negative steps."""
    x = fa.asarray(host)
    return [(x, host), (x.T.T, host), (x[::-1, ::2], host[::-1, ::2])]


def _same(got, want, msg: str, exact: bool = True) -> None:
    got = got.get() if isinstance(got, fa.ndarray) else got
    assert got.dtype == np.asarray(want).dtype, f"{msg}: {got.dtype} != {np.asarray(want).dtype}"
    if exact:
        np.testing.assert_array_equal(got, want, err_msg=f"{msg} {SEED=}")
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{msg} {SEED=}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16, np.complex128])
def test_dtype_chooses_numpys_loop(dtype):
    f, i = _data()
    for (x, hx), (y, hy) in zip(_views(i), _views(i[::-1])):
        _same(np.add(x, y, dtype=dtype), np.add(hx, hy, dtype=dtype), f"add {dtype}")
        _same(np.multiply(x, 3, dtype=dtype), np.multiply(hx, 3, dtype=dtype), "weak scalar")
    ff = f.astype(np.float32)
    _same(np.add(fa.asarray(ff), fa.asarray(f), dtype=np.float32),
          np.add(ff, f, dtype=np.float32, casting="same_kind"), "float64 into a float32 loop")


def test_dtype_stays_lazy_and_fused():
    f, i = _data()
    x, y = fa.asarray(f), fa.asarray(i)
    fa.reset_stats()
    r = np.add(x, y, dtype=np.float32) * 2
    assert fa.stats()["launches"] == 0
    got = r.get()
    assert fa.stats()["launches"] == 1
    _same(got, np.add(f, i, dtype=np.float32) * 2, "lazy")


def test_casting_rules_and_numpys_error_types():
    f, i = _data()
    x, y = fa.asarray(f), fa.asarray(i)
    cases = [
        (lambda a, b: np.add(a, a, dtype=np.int32), _UFuncInputCastingError),
        (lambda a, b: np.add(a, b, casting="no"), _UFuncInputCastingError),
        (lambda a, b: np.add(b, b, dtype=np.int64, casting="equiv"), _UFuncInputCastingError),
        (lambda a, b: np.add(a, b, out=np.zeros(a.shape, np.int32) if isinstance(a, np.ndarray)
                             else fa.asarray(np.zeros(a.shape, np.int32))),
         _UFuncOutputCastingError),
        (lambda a, b: np.multiply(b, 2.5, out=np.zeros(a.shape, np.int8)
                                  if isinstance(a, np.ndarray)
                                  else fa.asarray(np.zeros(a.shape, np.int8)), casting="safe"),
         _UFuncOutputCastingError),
    ]
    for call, kind in cases:
        with pytest.raises(kind) as numpy_error:
            call(f, i)
        with pytest.raises(kind) as ours:
            call(x, y)
        assert isinstance(ours.value, fa.FusedArraysError) and isinstance(ours.value, TypeError)
        assert str(ours.value).startswith(str(numpy_error.value) + "; "), str(ours.value)
        assert "casting='unsafe'" in str(ours.value)
    _same(np.add(x, x, dtype=np.int32, casting="unsafe"),
          np.add(f, f, dtype=np.int32, casting="unsafe"), "unsafe")
    with pytest.raises(TypeError, match=r"np.less of \(float64, int8\) with dtype="):
        np.less(x, y, dtype=np.float64)


def test_out_single_tuple_and_cast():
    f, i = _data()
    for (x, hx), (y, hy) in zip(_views(f), _views(i)):
        out = fa.asarray(np.zeros(hx.shape))
        assert np.add(x, y, out=out) is out
        _same(out, np.add(hx, hy), "out=")
        out32 = fa.asarray(np.zeros(hx.shape, np.float32))
        assert np.subtract(x, y, out=(out32,)) is out32
        _same(out32, np.subtract(hx, hy, out=np.zeros(hx.shape, np.float32)), "out=(a,)")
        outi = fa.asarray(np.zeros(hx.shape, np.int16))
        np.multiply(x, 7, out=outi, casting="unsafe")
        _same(outi, np.multiply(hx, 7, out=np.zeros(hx.shape, np.int16), casting="unsafe"),
              "out= unsafe")


def test_where_with_and_without_out():
    f, _ = _data()
    rng = np.random.default_rng(SEED + 1)
    for x, hx in _views(f):
        mask = rng.random(hx.shape) > 0.4
        start = rng.standard_normal(hx.shape)
        out = fa.asarray(start.copy())
        want = start.copy()
        with np.errstate(invalid="ignore"):
            np.sqrt(hx, out=want, where=mask)
            np.sqrt(x, out=out, where=fa.asarray(mask))
            _same(out, want, "where= with out= keeps out's values")
            # without out=: NumPy leaves the masked elements uninitialised; fusedarrays' are 0
            _same(np.sqrt(x, where=mask), np.where(mask, np.sqrt(hx), 0.0), "where= alone")
        fa.reset_stats()
        (np.exp(x, where=mask) + 1).get()
        assert fa.stats()["launches"] == 1


def test_defaults_accepted_others_refused():
    f, _ = _data()
    x = fa.asarray(f)
    _same(np.add(x, 1.0, order="K", subok=True, signature=None), f + 1.0, "defaults")
    _same(np.add(x, 1.0, order="C"), f + 1.0, "order='C'")
    for kwargs, named in (({"order": "F"}, "order='F'"), ({"subok": False}, "subok=False"),
                          ({"signature": "dd->d"}, "signature='dd->d'")):
        with pytest.raises(fa.UnsupportedOperationError, match=f"^np.add with {named} "):
            np.add(x, 1.0, **kwargs)


def test_a_numpy_out_says_what_to_write():
    f, _ = _data()
    x, host = fa.asarray(f), np.ones(f.shape)
    with pytest.raises(fa.UnsupportedOperationError) as info:
        host += x
    said = str(info.value)
    assert "a += x" in said and "a += x.get()" in said and "fa.asarray(a) + x" in said, said
    assert "out=" not in said.split(":")[0], said     # the user wrote no out=
    np.testing.assert_array_equal(host, np.ones(f.shape))
    with pytest.raises(fa.UnsupportedOperationError, match=r"np.multiply\(\.\.\., out=<a NumPy "
                       r"array \(float64, shape \(30, 17\)\)>\).*x.get\(\)"):
        np.multiply(x, 2, out=host)
    host += x.get()
    np.testing.assert_array_equal(host, 1 + f)


@pytest.mark.parametrize("shape", [(300, 257), (4, 5000)])
def test_reduce_keywords(shape):
    rng = np.random.default_rng(SEED + 2)
    hi = rng.integers(-50, 50, shape).astype(np.int16)
    hf = rng.random(shape) + 0.5
    mask = rng.random(shape) > 0.3
    x, xf = fa.asarray(hi), fa.asarray(hf)
    for axis in (0, 1, -1, (0, 1), None):
        for keepdims in (False, True):
            kw = {"axis": axis, "keepdims": keepdims}
            _same(np.add.reduce(x, **kw), np.add.reduce(hi, **kw), f"add {kw}")
            _same(np.add.reduce(x, dtype=np.float64, **kw),
                  np.add.reduce(hi, dtype=np.float64, **kw), f"add dtype {kw}")
            _same(np.maximum.reduce(x, initial=7, **kw), np.maximum.reduce(hi, initial=7, **kw),
                  f"maximum initial {kw}")
            _same(np.add.reduce(x, where=mask, initial=3, **kw),
                  np.add.reduce(hi, where=mask, initial=3, **kw), f"add where initial {kw}")
            _same(np.logical_and.reduce(x > -45, **kw), np.logical_and.reduce(hi > -45, **kw),
                  f"logical_and {kw}")
    _same(np.multiply.reduce(xf.T[::-1], axis=1, where=mask.T[::-1]),
          np.multiply.reduce(hf.T[::-1], axis=1, where=mask.T[::-1]), "multiply where", False)
    _same(np.minimum.reduce(xf[:, ::-3], axis=0, where=mask[:, ::-3], initial=0.75),
          np.minimum.reduce(hf[:, ::-3], axis=0, where=mask[:, ::-3], initial=0.75), "min")
    out = fa.asarray(np.zeros(shape[1], np.int32))
    assert np.add.reduce(xf * 10, axis=0, out=out) is out     # NumPy's reduce casts unsafely
    _same(out, np.add.reduce(hf * 10, axis=0, out=np.zeros(shape[1], np.int32)), "out", False)


def test_reduce_errors_and_empty():
    f, _ = _data()
    x = fa.asarray(f)
    with pytest.raises(ValueError, match="'maximum' does not have an identity, so to use a "
                       "where mask one has to specify 'initial'"):
        np.maximum.reduce(x, where=f > 0)
    empty = np.zeros((0, 4))
    _same(np.maximum.reduce(fa.asarray(empty), initial=-5.0),
          np.maximum.reduce(empty, initial=-5.0), "empty with initial")
    _same(np.add.reduce(fa.asarray(empty), initial=2.5), np.add.reduce(empty, initial=2.5),
          "empty sum with initial")
    _same(np.add.reduce(x, initial=1), np.add.reduce(f, initial=1), "initial", False)


def test_accumulate_outer_at():
    f, i = _data()
    for (x, hx), (y, hy) in zip(_views(i), _views(f)):
        for axis in (0, 1):
            _same(np.add.accumulate(x, axis=axis), np.add.accumulate(hx, axis=axis), "acc")
            _same(np.multiply.accumulate(y, axis=axis, dtype=np.float32),
                  np.multiply.accumulate(hy, axis=axis, dtype=np.float32), "acc dtype", False)
        out = fa.asarray(np.zeros(hx.shape, np.int8))
        assert np.add.accumulate(x, out=out) is out
        _same(out, np.add.accumulate(hx, out=np.zeros(hx.shape, np.int8)), "acc out")
    with pytest.raises(fa.UnsupportedOperationError, match="^np.maximum.accumulate "):
        np.maximum.accumulate(fa.asarray(f))
    a, b = fa.asarray(f[0]), fa.asarray(i[:, 1])
    _same(np.multiply.outer(a, b), np.multiply.outer(f[0], i[:, 1]), "outer")
    _same(np.add.outer(a, b, dtype=np.float32), np.add.outer(f[0], i[:, 1], dtype=np.float32),
          "outer dtype")
    y, hy = fa.asarray(f.copy()), f.copy()
    np.add.at(y, [0, 0, 3], 1.5)
    np.add.at(hy, [0, 0, 3], 1.5)
    _same(y, hy, "at")


def test_dask_argmax_and_chunk_sums_on_fa_chunks():
    """dask's argmax makes its results with ``np.asarray(..., like=meta)`` and gathers through
    a reduced index; its ``d @ d.T`` sums chunks with ``np.add(..., dtype=)``."""
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    h = np.random.default_rng(SEED + 3).standard_normal((40, 30))
    with dask.config.set(scheduler="synchronous"):
        d = da.from_array(fa.asarray(h), chunks=(10, 15), asarray=False)
        for got, want in ((da.argmax(d, axis=0), h.argmax(0)), (da.argmin(d, axis=1),
                                                                 h.argmin(1))):
            got = got.compute()
            assert isinstance(got, fa.ndarray), type(got)
            np.testing.assert_array_equal(got.get(), want)
        product = (d @ d.T).compute()
    assert isinstance(product, fa.ndarray)
    np.testing.assert_allclose(product.get(), h @ h.T, rtol=1e-12, atol=1e-12)


@fa.fuse
def _fused_keywords(x, m):
    y = np.add(x, 1, dtype=np.float64)
    np.multiply(x, 2, out=x, where=m)
    return np.add.reduce(y, axis=1, initial=1.0, keepdims=True) + np.sqrt(np.abs(y), where=m)


def test_keywords_inside_fuse():
    h = np.random.default_rng(SEED + 4).standard_normal((8, 9)).astype(np.float32)
    m = h > 0
    x = fa.asarray(h.copy())
    got = _fused_keywords(x, fa.asarray(m))
    y = np.add(h, 1, dtype=np.float64)
    want = (np.add.reduce(y, axis=1, initial=1.0, keepdims=True)
            + np.where(m, np.sqrt(np.abs(y)), 0))
    np.testing.assert_allclose(got.get(), want, rtol=1e-12, err_msg=f"{SEED=}")
    assert got.dtype == np.float64
    np.multiply(h, 2, out=h, where=m)
    np.testing.assert_array_equal(x.get(), h)
