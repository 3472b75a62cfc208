"""einops' array-API functions (``einops.array_api``: rearrange, reduce, repeat, pack, unpack)
on fa arrays, each against the same call on NumPy arrays. einops finds fa through
``__array_namespace__`` and calls only the standard's functions."""

import judge
import pytest

import fusedarrays as fa

pytest.importorskip("einops")
from einops import array_api as ea  # noqa: E402 - after the skip above

SEED = 20261201
X = judge.data(SEED, spread=False)                         # (200, 12) float64


def same(call, what: str, *arrays) -> None:
    want = call(*arrays)
    got = call(*[fa.asarray(a) for a in arrays])
    judge.check(got, want, f"einops.array_api.{what} (seed {SEED})")


@pytest.mark.parametrize("pattern, lengths", [
    ("(a b) f -> a (f b)", {"b": 4}), ("t f -> f t", {}),
    ("(a b) (c d) -> c a d b", {"b": 8, "d": 3})])
def test_rearrange(pattern, lengths):
    same(lambda x: ea.rearrange(x, pattern, **lengths), f"rearrange({pattern!r})", X)


@pytest.mark.parametrize("reduction", ["mean", "sum", "max", "min", "prod"])
def test_reduce(reduction):
    same(lambda x: ea.reduce(x, "(a b) f -> a f", reduction, b=4), f"reduce({reduction!r})",
         X[:, :8] * 0.5 + 1)


def test_repeat():
    same(lambda x: ea.repeat(x, "a f -> a r f", r=3), "repeat('a f -> a r f')", X[:20])


def test_rearrange_of_a_view():
    same(lambda x: ea.rearrange(x[::-1].T, "f (a b) -> a f b", b=10), "rearrange(x[::-1].T)", X)


def test_pack_and_unpack():
    def call(x):
        packed, shapes = ea.pack([x, x[:, 0], x[:, :3] * 2], "t *")
        return (packed, *ea.unpack(packed, shapes, "t *"))
    same(call, "pack/unpack", X)
