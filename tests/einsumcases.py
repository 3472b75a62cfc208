"""einsum cases shared by the cpu and gpu tiers: subscripts with operand shapes, checked against
``np.einsum`` on the same data (fresh from a seeded generator) through both entry points."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.api import einsum as einsum_module

SEED = 20261201


@pytest.fixture
def products(monkeypatch):
    """The ``matmul`` calls einsum makes (the product route), as (shape, shape) pairs; the tier
    files import this fixture."""
    calls = []

    def counting(a, b):
        calls.append((a.shape, b.shape))
        return fa.matmul(a, b)

    monkeypatch.setattr(einsum_module, "matmul", counting)
    return calls

# (subscripts, operand shapes, route): "fused" = views and one fused reduction (or a lazy
# product), "matmul" = a product kernel takes part, "view" = no kernel of its own
CASES = [
    ("i,i", [(7,), (7,)], "fused"),
    ("i,i->i", [(7,), (7,)], "fused"),
    ("ij->ji", [(3, 5)], "view"),
    ("ij->", [(300, 257)], "fused"),
    ("ij->j", [(4, 5000)], "fused"),
    ("ii->i", [(6, 6)], "view"),
    ("ii", [(6, 6)], "fused"),
    ("ij,j->i", [(300, 257), (257,)], "fused"),
    ("ij,jk->ik", [(5, 6), (6, 7)], "matmul"),
    ("bij,bjk->bik", [(3, 4, 5), (3, 5, 2)], "matmul"),
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (3, 5, 6)], "matmul"),
    ("i,j->ij", [(5,), (6,)], "fused"),
    ("ijk,ikl->jl", [(3, 4, 5), (3, 5, 6)], "matmul"),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)], "matmul"),
    ("i,i,i->", [(9,), (9,), (9,)], "fused"),
    ("...i,...i->...", [(4, 1, 6), (3, 6)], "fused"),
    ("ijj,jk->ik", [(2, 4, 4), (4, 3)], "matmul"),
    ("ba,ab", [(4, 3), (3, 4)], "fused"),
]


def host_operands(shapes, dtype, rng):
    """Fresh random operands of ``dtype`` (never all zeros: ints in [-9, 9], bools a coin)."""
    out = []
    for shape in shapes:
        if np.dtype(dtype).kind == "b":
            out.append(rng.random(shape) < 0.5)
        elif np.dtype(dtype).kind in "iu":
            out.append(rng.integers(-9, 10, shape).astype(dtype))
        elif np.dtype(dtype).kind == "c":
            out.append((rng.standard_normal(shape) + 1j * rng.standard_normal(shape))
                       .astype(dtype))
        else:
            out.append(rng.standard_normal(shape).astype(dtype))
    return out


def tolerance(dtype) -> dict:
    kind, size = np.dtype(dtype).kind, np.dtype(dtype).itemsize
    if kind in "biu":
        return {"rtol": 0, "atol": 0}
    single = size == 4 or (kind == "c" and size == 8)
    return {"rtol": 2e-5, "atol": 2e-5} if single else {"rtol": 1e-12, "atol": 1e-12}


def check(subscripts, host, *, through_numpy, views=None, looser=1.0, **kwargs):
    """``einsum`` on fa copies of ``host`` (each through ``views`` if given) against
    ``np.einsum`` on the same views of ``host`` (float tolerances times ``looser``: another
    summation order on the GPU); returns the fa result."""
    views = views or [lambda x: x] * len(host)
    want = np.einsum(subscripts, *(v(h) for v, h in zip(views, host)), **kwargs)
    ops = [v(fa.asarray(h)) for v, h in zip(views, host)]
    got = (np.einsum if through_numpy else fa.einsum)(subscripts, *ops, **kwargs)
    assert isinstance(got, fa.ndarray), type(got)
    want = np.asarray(want)
    assert (got.shape, got.dtype) == (want.shape, want.dtype), (subscripts, got, want)
    tol = {k: v * looser for k, v in tolerance(want.dtype).items()}
    np.testing.assert_allclose(got.get(), want, **tol,
                               err_msg=f"{subscripts} {kwargs} seed {SEED}")
    return got
