"""What ``import fusedarrays`` loads, and that what it leaves for later still works.

The namespace loads rarely-used modules on first use (``fusedarrays/__init__.py``'s ``_LAZY``
and ``api/ondemand.py``'s stubs). These tests run fresh interpreters, since the test process has
long since imported everything.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from childenv import pythonpath

import fusedarrays as fa
from fusedarrays.api.nanfunctions import FUNCTIONS_NAN
from fusedarrays.api.quantiles import FUNCTIONS_QUANTILE

# modules that a program computing `a * b + c` never needs: absent after `import fusedarrays`
HEAVY = (
    "numba", "llvmlite", "cupy", "cuda.core", "scipy", "torch",
    "concurrent.futures",
    "fusedarrays.api.linalg", "fusedarrays.api.random", "fusedarrays.api.npfunctions",
    "fusedarrays.api.ufuncs", "fusedarrays.api.scatter", "fusedarrays.api.indexing",
    "fusedarrays.api.quantiles", "fusedarrays.api.sorting", "fusedarrays.api.einsum",
    "fusedarrays.api.display", "fusedarrays.api.explain", "fusedarrays.api.graphsvg",
    "fusedarrays.api.masks", "fusedarrays.api.nanfunctions", "fusedarrays.api.profile",
    "fusedarrays.fuse.function", "fusedarrays.fuse.across", "fusedarrays.fuse.trace",
    "fusedarrays.runtime.precompile",
)


def _child(code: str) -> dict:
    """The JSON a fresh interpreter prints last, after running ``code``."""
    env = {"PYTHONPATH": pythonpath(Path(__file__).parents[2]), "FUSEDARRAYS_BACKEND": "cpu"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_import_leaves_heavy_modules_unloaded():
    loaded = _child("import sys, json, fusedarrays\n"
                    f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    assert loaded == [], f"import fusedarrays loaded {loaded}"


def test_lazy_names_are_the_tables_names():
    lazy = fa._LAZY
    for table, module in ((FUNCTIONS_NAN, ".api.nanfunctions"),
                          (FUNCTIONS_QUANTILE, ".api.quantiles")):
        assert {n for n, (m, _) in lazy.items() if m == module} == set(table)
        for name, f in table.items():
            assert getattr(fa, name) is f, name
    assert fa.nanmax is FUNCTIONS_NAN["nanmax"]     # not the reduction table's form


def test_every_public_name_resolves_and_is_listed():
    assert set(fa._LAZY) <= set(fa.__all__)
    assert set(fa.__all__) <= set(dir(fa))
    for name in fa.__all__:
        assert getattr(fa, name) is not None or name == "newaxis", name


def test_unknown_name_raises_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        fa.no_such_name  # noqa: B018


CALLS = """
import json, sys
import numpy as np
import fusedarrays as fa
from fusedarrays.api.array import ndarray
rng = np.random.default_rng(36)
h = rng.standard_normal((5, 4)).astype(np.float32)
x = fa.asarray(h)
out = {}
out["repr_is_lazy"] = "pending" in repr(x * 2)
out["sum"] = float(np.sum(x * 2)) - float(np.sum(h * 2))            # __array_function__
out["ufunc"] = np.abs(np.asarray(np.add(x, 1)) - (h + 1)).max().item()  # __array_ufunc__
out["take"] = np.abs(x[np.array([3, 0])].get() - h[[3, 0]]).max().item()  # _take
y, hy = fa.asarray(h.copy()), h.copy()
y[np.array([1, 2])] = 7.0; hy[[1, 2]] = 7.0                         # _index_write
fa.add.at(y, np.array([0, 0]), 1.5); np.add.at(hy, [0, 0], 1.5)    # fa.add.at
np.multiply.at(y, np.array([4]), 2.0); np.multiply.at(hy, [4], 2.0)  # np.<ufunc>.at
out["writes"] = np.abs(y.get() - hy).max().item()
out["nonzero"] = [a.get().tolist() for a in (x > 0).nonzero()] == [
    a.tolist() for a in (h > 0).nonzero()]
out["median"] = float(fa.median(x)) - float(np.median(h))
stubs = ("__array_function__", "__array_ufunc__", "_index_write", "_take", "nonzero",
         "__repr__")
out["replaced"] = [n for n in stubs if ndarray.__dict__[n].__module__ == "fusedarrays.api.ondemand"]
print(json.dumps(out))
"""


def test_members_load_their_modules_on_first_use():
    """Each stub loads its module, is replaced by the real member and gives NumPy's result."""
    out = _child(CALLS)
    assert out.pop("repr_is_lazy") and out.pop("nonzero")
    assert out.pop("replaced") == []
    assert all(abs(v) < 1e-4 for v in out.values()), out


def test_a_lazy_name_loads_on_first_touch():
    out = _child("import sys, json, fusedarrays as fa\n"
                 "before = 'fusedarrays.api.linalg' in sys.modules\n"
                 "n = float(fa.linalg.vector_norm(fa.asarray([3.0, 4.0])))\n"
                 "print(json.dumps([before, 'fusedarrays.api.linalg' in sys.modules, n]))")
    assert out == [False, True, 5.0]


def test_fa_fuse_stays_the_function_whatever_is_imported_first():
    # a subpackage's first import sets it as its parent's attribute: importing one of
    # fusedarrays.fuse's modules (as fusedarrays.optim does) must not turn fa.fuse into it
    got = _child("import json, fusedarrays.fuse.pertensor, fusedarrays.optim, fusedarrays as fa\n"
                 "print(json.dumps({'callable': callable(fa.fuse),\n"
                 "                  'kind': type(fa.fuse).__name__}))")
    assert got == {"callable": True, "kind": "function"}
