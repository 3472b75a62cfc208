"""Products on the cpu backend at its default settings, against NumPy (tests/productcases.py):
matmul of every layout, batch and dtype kind; vecdot (a fused reduction) and tensordot; NumPy's
errors; what explain says; laziness (a product is pending until read, its operands computed
before it, a write into an operand after it does not reach it); empty and K = 0 products; one
kernel for every size of a signature; the same bits every run; the refusal inside fa.fuse."""

import numpy as np
import productcases as pc
import pytest

import fusedarrays as fa
from fusedarrays.compiler.product import ProductPlan
from fusedarrays.compiler.reduction import ReducePlan


def test_layouts_batches_and_shapes_past_the_tile_match_numpy():
    pc.check_matmul_cases(67, 130, 45, ["float32"], "cpu")
    pc.check_matmul_cases(130, 70, 150, ["float64"], "cpu")


def test_each_dtype_matches_numpy():
    pc.check_matmul_cases(9, 13, 7, ["complex64", "complex128"], "cpu")
    pc.check_matmul_cases(9, 13, 7, ["float16", "int8", "int16", "int32", "int64", "uint32",
                                     "uint64", "bool"], "cpu")
    seed = pc.seed_of("cpu mixed")
    rng = np.random.default_rng(seed)
    for left, right in (("int32", "float32"), ("bool", "int8"), ("uint64", "int64"),
                        ("int8", "uint8"), ("float16", "float32"),
                        ("float32", "complex64")):
        a, b = pc.sample(rng, left, (5, 6)), pc.sample(rng, right, (6, 4))
        pc.check((fa.asarray(a) @ fa.asarray(b)).get(), a, b, f"{left} @ {right} (seed {seed})")


def test_numpy_entry_points_and_methods():
    seed = pc.seed_of("cpu entry points")
    rng = np.random.default_rng(seed)
    a, b = pc.sample(rng, "float32", (6, 5)), pc.sample(rng, "float32", (5, 4))
    for got in (np.matmul(fa.asarray(a), fa.asarray(b)), fa.asarray(a) @ b, a @ fa.asarray(b),
                fa.matmul(a, fa.asarray(b)), fa.linalg.matmul(fa.asarray(a), b)):
        assert isinstance(got, fa.ndarray)
        pc.check(got.get(), a, b, f"entry point (seed {seed})")
    x = pc.sample(rng, "float32", (3, 5))
    got = np.vecdot(fa.asarray(x), fa.asarray(x))
    assert isinstance(got, fa.ndarray)
    np.testing.assert_allclose(got.get(), np.vecdot(x, x), rtol=1e-5)


def test_vecdot_and_tensordot_match_numpy():
    pc.check_vecdot_and_tensordot("cpu")


def test_errors_are_numpys():
    a, b = fa.ones((3, 4)), fa.ones((5, 6))
    for x, y in (((3, 4), (5, 6)), ((4,), (5,)), ((2, 3), (4,)), ((5,), (5, 2, 3)),
                 ((3, 1, 5, 7), (4, 6, 2)), ((3, 5, 7), (4, 7, 2))):
        with pytest.raises(ValueError) as numpy_error:
            np.matmul(np.ones(x), np.ones(y))
        with pytest.raises(ValueError) as ours:
            fa.ones(x) @ fa.ones(y)
        assert str(ours.value) == str(numpy_error.value)
    with pytest.raises(ValueError, match="at least one dimension"):
        fa.matmul(a, fa.asarray(np.float32(2)))
    with pytest.raises(ValueError, match="core dimension 0.*size 4 is different from 1"):
        fa.vecdot(fa.ones((3, 1)), fa.ones((3, 4)))
    with pytest.raises(ValueError, match="could not be broadcast together with remapped"):
        fa.vecdot(fa.ones((3, 4)), fa.ones((2, 4)))
    with pytest.raises(ValueError, match="shape-mismatch for sum"):
        fa.tensordot(a, b, axes=1)
    with pytest.raises(np.exceptions.AxisError):
        fa.vecdot(fa.ones((2, 3)), fa.ones((3,)), axis=1)


def test_explain_says_not_fused_and_names_the_kernel():
    a, b = fa.ones((5, 4)), fa.ones((4, 3))
    explanation = fa.explain(a @ b + 1)
    text = str(explanation)
    assert explanation.launches == 2
    assert "matmul is not fused" in text and "tiled kernel" in text
    assert isinstance(explanation.kernels[0][0], ProductPlan)
    assert "matmul" in explanation._repr_html_()
    plans = [plan for plan, _ in fa.explain(fa.vecdot(a * 2, a)).kernels]   # fused reduction
    assert [type(p) for p in plans] == [ReducePlan]


def test_lazy_until_read_operands_computed_first_and_writes_after_it_not_seen():
    seed = pc.seed_of("cpu lazy")
    rng = np.random.default_rng(seed)
    a, b = pc.sample(rng, "float64", (7, 5)), pc.sample(rng, "float64", (5, 6))
    x, y = fa.asarray(a.copy()), fa.asarray(b)
    pending = x * 3
    product = pending @ y
    assert product.pending and not pending.pending         # the operand ran, the product waits
    x[...] = 0.5                                           # the product reads x * 3 from before
    total = product.sum(axis=0)
    pc.check(product.get(), a * 3, b, f"product (seed {seed})")
    np.testing.assert_allclose(total.get(), ((a * 3) @ b).sum(axis=0), rtol=1e-12)


def test_empty_and_k_zero_products():
    for x, y in (((0, 3), (3, 4)), ((2, 0), (0, 5)), ((2, 3), (3, 0)), ((0, 2, 3), (3, 4))):
        want = np.matmul(np.ones(x, np.float32), np.ones(y, np.float32))
        got = (fa.ones(x, dtype=fa.float32) @ fa.ones(y, dtype=fa.float32)).get()
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_one_kernel_for_every_size_and_the_same_bits_every_run():
    seed = pc.seed_of("cpu sizes")
    rng = np.random.default_rng(seed)
    fa.reset_stats()
    for m, k, n in ((5, 7, 3), (40, 9, 70), (3, 100, 2)):
        a, b = pc.sample(rng, "float32", (m, k)), pc.sample(rng, "float32", (k, n))
        first = (fa.asarray(a) @ fa.asarray(b)).get()
        assert first.tobytes() == (fa.asarray(a) @ fa.asarray(b)).get().tobytes()
        pc.check(first, a, b, f"({m}, {k}) @ ({k}, {n}) (seed {seed})")
    assert fa.stats()["compiles"] <= 1


def test_refused_inside_fuse_with_a_clear_message():
    @fa.fuse
    def step(a, b):
        return a @ b

    with pytest.raises(fa.FusedArraysError, match="fa.matmul .*never fused"):
        step(fa.ones((2, 2)), fa.ones((2, 2)))
