"""The cuda route of api/sorting.py and api/counting.py run on the cpu backend against a stand-in
for CuPy that has CuPy's semantics where they differ from NumPy's (read in CuPy's source:
cupy/cuda/cupy_thrust.cu, cupy/_manipulation/add_remove.py, cupy/_statistics/histogram.py):

- sorts are CUB's radix sort: float keys ordered by their bits, so a NaN with its sign bit set
  comes first; -0.0 and 0.0 equal; stable; in place for ``ndarray.sort``;
- ``unique`` is CuPy 13's: argsort (the same radix order), ``equal_nan`` assuming NaNs at the
  end (the element after a NaN is never new), the inverse flat;
- ``histogram``: unweighted by CUB (NaN excluded), weighted by CuPy's kernel (NaN counted in the
  first bin), float64 sums; ``bincount`` weighted float64.

fusedarrays' corrections (positive NaN keys, the descending mapping, the inverse's shape, NaN
given weight 0, the weights' dtype) must make every result equal NumPy's. The GPU tier runs the
same functions on CuPy itself (tests/topics/test_sorting.py)."""

import contextlib

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.api import counting, sorting
from fusedarrays.ir import graph

pytestmark = pytest.mark.usefixtures("cpu_backend")
SEED = 20261126


def _radix_keys(a: np.ndarray) -> np.ndarray:
    """CUB's twiddled keys: order by unsigned bits, ±0 equal, a negative NaN below -inf."""
    if a.dtype.kind != "f":
        return a
    bits = np.where(a == 0, 0, a.view(f"u{a.itemsize}")).astype(f"u{a.itemsize}")
    sign = np.array(1, bits.dtype) << np.array(8 * a.itemsize - 1, bits.dtype)
    return np.where(bits & sign, ~bits, bits | sign)


def _radix_order(a: np.ndarray) -> np.ndarray:
    return np.argsort(_radix_keys(np.asarray(a)), axis=-1, kind="stable").astype(np.int64)


class _View(np.ndarray):
    def sort(self, axis=-1):   # CuPy's in-place ndarray.sort
        assert axis == -1 and self.flags.c_contiguous
        base = np.asarray(self)
        base[...] = np.take_along_axis(base, _radix_order(base), axis=-1)


class FakeCupy:
    """CuPy's functions as fusedarrays calls them, with CuPy's semantics (module docstring)."""
    calls: list = []

    @classmethod
    def argsort(cls, a, axis=-1):
        cls.calls.append("argsort")
        assert axis == -1
        return _radix_order(a)

    @classmethod
    def unique(cls, ar, return_index=False, return_inverse=False, return_counts=False, *,
               equal_nan=True):
        cls.calls.append("unique")
        ar = np.asarray(ar).reshape(-1)
        perm = _radix_order(ar)
        aux = ar[perm]
        mask = np.ones(aux.shape, bool)
        mask[1:] = aux[1:] != aux[:-1]
        if equal_nan:
            mask[1:] &= ~np.isnan(aux[:-1])
        out = (aux[mask],)
        out += (perm[mask],) if return_index else ()
        if return_inverse:
            inverse = np.empty(ar.shape, np.intp)
            inverse[perm] = np.cumsum(mask) - 1
            out += (inverse,)
        if return_counts:
            out += (np.diff(np.append(np.nonzero(mask)[0], mask.size)),)
        return out if len(out) > 1 else out[0]

    @classmethod
    def histogram(cls, x, bins, density=False, weights=None):
        cls.calls.append("histogram" + (" weighted" if weights is not None else ""))
        x, edges = np.asarray(x).reshape(-1), np.asarray(bins)
        last = len(edges) - 2
        at = np.minimum(np.searchsorted(edges, x, "right") - 1, last)
        inside = (x >= edges[0]) & (x <= edges[-1])
        if weights is None:
            counts = np.bincount(at[inside], minlength=last + 1).astype(np.int64)
        else:
            w = np.asarray(weights).reshape(-1)
            nan = np.isnan(x)
            at, inside = np.where(nan, 0, at), inside | nan     # the kernel's first bin
            wide = np.float64 if w.dtype.kind == "f" else np.int64
            counts = np.bincount(at[inside], w[inside].astype(np.float64),
                                 minlength=last + 1).astype(wide)
        if density:
            counts = counts / np.diff(edges).astype(np.float64) / counts.sum()
        return counts, edges

    @classmethod
    def bincount(cls, x, weights=None, minlength=None):
        cls.calls.append("bincount")
        assert weights is None or weights.dtype == np.float64
        return np.bincount(x, weights, minlength=minlength or 0)

    searchsorted = staticmethod(np.searchsorted)
    asarray = staticmethod(np.asarray)


def _writable(x: fa.ndarray) -> np.ndarray:
    """A NumPy view of ``x``'s host memory that can be written (CuPy's arrays can)."""
    buffer, shape, strides, offset = graph.leaf_view(x._resolved())
    base = buffer.storage.view(x.dtype)[offset:]
    item = x.dtype.itemsize
    view = np.lib.stride_tricks.as_strided(base, shape, tuple(s * item for s in strides))
    return view.view(_View)


@contextlib.contextmanager
def _borrowed(name, *arrays):
    xs = [fa.asarray(a) for a in arrays]
    for x in xs:
        if x.pending:
            x.compute()
    yield FakeCupy, tuple(_writable(x) for x in xs)


@pytest.fixture(autouse=True)
def cupy_route(monkeypatch):
    for module in (sorting, counting):
        monkeypatch.setattr(module, "library", lambda name, *arrays: FakeCupy)
        monkeypatch.setattr(module, "borrowed", _borrowed)
    FakeCupy.calls = []
    yield FakeCupy.calls


def _signed_nans(rng, shape) -> np.ndarray:
    """Ties, NaNs of both signs (the x86 default NaN is negative), zeros of both signs."""
    host = rng.integers(-3, 4, shape).astype(np.float32)
    flat = host.reshape(-1)
    picked = rng.choice(flat.size, 8, replace=False)
    flat[picked[:3]], flat[picked[3:5]] = np.nan, -np.nan
    flat[picked[5:]] = -0.0
    assert np.signbit(flat[picked[3]])
    return host


def test_the_stand_in_puts_a_negative_nan_first_as_cub_does():
    keys = np.array([1.0, -np.nan, np.nan, -np.inf, -0.0, 0.0], np.float32)
    assert _radix_order(keys).tolist() == [1, 3, 4, 5, 0, 2]


def test_sort_and_argsort_equal_numpys_through_the_cupy_route(cupy_route):
    rng = np.random.default_rng(SEED)
    print(f"seed {SEED}")
    host = _signed_nans(rng, (5, 6, 7))
    for name, view in {"base": lambda a: a, "negative steps": lambda a: a[::-1, :, ::-2],
                       "transposed": lambda a: a.transpose(2, 0, 1)}.items():
        h, x = view(host), view(fa.asarray(host))
        for axis in (0, 1, 2):
            what = f"{name} axis={axis} (seed {SEED})"
            got = fa.sort(x, axis=axis).get()
            np.testing.assert_array_equal(got, np.sort(h, axis=axis), err_msg=what)
            np.testing.assert_array_equal(fa.sort(x, axis=axis, descending=True).get(),
                                          np.flip(np.sort(h, axis=axis), axis), err_msg=what)
            np.testing.assert_array_equal(fa.argsort(x, axis=axis).get(),
                                          np.argsort(h, axis=axis, kind="stable"), err_msg=what)
            down = fa.argsort(x, axis=axis, descending=True).get()
            flipped = np.flip(h, axis)
            want = h.shape[axis] - 1 - np.flip(np.argsort(flipped, axis, kind="stable"), axis)
            np.testing.assert_array_equal(down, want, err_msg=what)
    assert "argsort" in cupy_route
    ints = rng.integers(-9, 9, (4, 33)).astype(np.int16)
    np.testing.assert_array_equal(fa.argsort(fa.asarray(ints)).get(),
                                  np.argsort(ints, kind="stable"))
    np.testing.assert_array_equal(fa.sort(fa.asarray(ints) * 3, axis=0).get(),
                                  np.sort(ints * 3, axis=0))


def test_set_functions_equal_numpys_through_the_cupy_route(cupy_route):
    rng = np.random.default_rng(SEED + 1)
    host = _signed_nans(rng, (6, 5))
    x = fa.asarray(host)
    for got, want in zip(fa.unique_all(x), np.unique_all(host)):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got.get(), want, err_msg=f"seed {SEED + 1}")
    for kw in ({"return_inverse": True, "return_counts": True, "return_index": True}, {}):
        got, want = np.unique(x, **kw), np.unique(host, **kw)
        for g, w in zip(*((got, want) if kw else ((got,), (want,)))):
            assert g.shape == w.shape, kw
            np.testing.assert_array_equal(g.get(), w, err_msg=str(kw))
    assert cupy_route.count("unique") == 3


def test_histogram_and_bincount_equal_numpys_through_the_cupy_route(cupy_route):
    rng = np.random.default_rng(SEED + 2)
    host = rng.standard_normal(300).astype(np.float32)
    host[::7] = np.nan
    weights = rng.random(300).astype(np.float32)
    x = fa.asarray(host)
    for kw in ({"range": (-1.0, 2.0)}, {"bins": np.array([-4.0, -1.0, 0.0, 0.5, 4.0])},
               {"range": (-2, 2), "weights": weights}, {"range": (-2, 2), "density": True}):
        args = {k: fa.asarray(v) if k == "weights" else v for k, v in kw.items()}
        (counts, edges), (want, want_edges) = fa.histogram(x, **args), np.histogram(host, **kw)
        assert counts.dtype == want.dtype, (kw, counts.dtype, want.dtype)
        np.testing.assert_allclose(counts.get(), want, rtol=1e-6, err_msg=str(kw))
        np.testing.assert_array_equal(edges.get(), want_edges)
    assert "histogram weighted" in cupy_route       # NaN given weight 0, not dropped by CUB
    finite = np.nan_to_num(host)
    for got, want in zip(fa.histogram(fa.asarray(finite), bins=9), np.histogram(finite, 9)):
        np.testing.assert_array_equal(got.get(), want)
    ints = rng.integers(0, 12, 300)
    got = fa.bincount(fa.asarray(ints), weights=fa.asarray(weights), minlength=3)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.get(), np.bincount(ints, weights), rtol=1e-12)
