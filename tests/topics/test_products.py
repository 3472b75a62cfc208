"""Products against NumPy (tests/productcases.py) on every tier: matmul of every layout, batch
and dtype kind past the tile edges; vecdot (a fused reduction) and tensordot.

- cpu at its default settings: NumPy's errors; what explain says; laziness (a product is
  pending until read, its operands computed before it, a write into an operand after it does
  not reach it); empty and K = 0 products; one kernel for every size of a signature; the same
  bits every run; the refusal inside fa.fuse.
- sim: the generated tiled CUDA product kernel (a block of 16 x 16 threads per 64 x 64 output
  tile, K in slabs of 16 through shared memory) in numba's simulator. Small shapes (every
  simulated thread is a Python thread), still past one tile on each side: (67, 20) @ (20, 70)
  takes two tiles along M and N and two slabs along K, each partly past the matrix edge.
- cuda: the tiled kernel over vectors, broadcast batches, transposed and negative-step views; a
  1024 x 1024 float32 product against NumPy; many tiles over a batch; the same bits every run.
  Where nvmath-python is installed the float and complex products here run through cuBLAS (the
  default); tests/topics/test_products_cublas.py's cuda cases check the tiled kernel on them
  with that route switched off.
- ptx (sm_90, no GPU): every dtype kind and both load orders, shared-memory slabs with
  barriers, the accumulators in registers (no local memory), float16 summed in float32, and no
  atomics (each output summed in K order: the same bits every run).
"""

import re

import numpy as np
import productcases as pc
import pytest

import fusedarrays as fa
from fusedarrays.compiler.product import ProductPlan
from fusedarrays.compiler.reduction import ReducePlan

TAG = {"cpu": "cpu", "sim": "sim", "cuda": "gpu"}   # the tier's name in productcases' seeds
# each tier's (M, K, N, dtypes) of pc.check_matmul_cases past the tile
PAST_THE_TILE = {"cpu": [(67, 130, 45, ["float32"]), (130, 70, 150, ["float64"])],
                 "sim": [(67, 20, 70, ["float32"])],
                 "cuda": [(67, 130, 45, ["float32"]), (300, 257, 129, ["float64"])]}
# each tier's (M, K, N), dtypes besides complex, and mixed pairs with their shapes
DTYPE_KINDS = {
    "cpu": ((9, 13, 7), ["float16", "int8", "int16", "int32", "int64", "uint32", "uint64", "bool"],
            6, ((5, 6), (6, 4))),
    "sim": ((9, 13, 7), ["float16", "float64", "int32", "int64", "bool", "uint8"], 3,
            ((5, 6), (6, 4))),
    "cuda": ((100, 70, 90), ["float16", "int8", "int32", "int64", "uint64", "bool"], 3,
             ((65, 66), (66, 67))),
}
MIXED = (("int32", "float32"), ("bool", "int8"), ("uint64", "int64"), ("int8", "uint8"),
         ("float16", "float32"), ("float32", "complex64"))
_ATOMIC = re.compile(r"^\s*(@%p\d+\s+)?(atom|red)\.", re.M)


@pytest.mark.tiers("cpu", "sim", "cuda")
def test_layouts_batches_and_shapes_past_the_tile_match_numpy(tier):
    for m, k, n, dtypes in PAST_THE_TILE[tier]:
        pc.check_matmul_cases(m, k, n, dtypes, TAG[tier])


@pytest.mark.tiers("cpu", "sim", "cuda")
def test_each_dtype_kind_matches_numpy(tier):
    # float16 sums in float32, integers wrap in their own type, bool is the or of the ands;
    # mixed operands read in place and sum in NumPy's result type
    (m, k, n), dtypes, mixed, (left_shape, right_shape) = DTYPE_KINDS[tier]
    pc.check_matmul_cases(m, k, n, ["complex64", "complex128"], TAG[tier])
    pc.check_matmul_cases(m, k, n, dtypes, TAG[tier])
    seed = pc.seed_of(f"{TAG[tier]} mixed")
    rng = np.random.default_rng(seed)
    for left, right in MIXED[:mixed]:
        a, b = pc.sample(rng, left, left_shape), pc.sample(rng, right, right_shape)
        pc.check((fa.asarray(a) @ fa.asarray(b)).get(), a, b, f"{left} @ {right} (seed {seed})")


@pytest.mark.tiers("cpu", "sim", "cuda")
def test_vecdot_and_tensordot_match_numpy(tier):
    pc.check_vecdot_and_tensordot(TAG[tier])


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


# sim

@pytest.mark.tiers("sim")
def test_pending_operands_and_readers_and_the_kernel_that_ran():
    seed = pc.seed_of("sim pending")
    rng = np.random.default_rng(seed)
    a, b = pc.sample(rng, "float32", (10, 6)), pc.sample(rng, "float32", (6, 5))
    got = ((fa.asarray(a) * 2 - 1) @ fa.asarray(b).T.T + 1.5).get()
    pc.check(got - np.float32(1.5), a * 2 - 1, b, f"pending operands (seed {seed})",
             want=(a * 2 - 1) @ b)
    explanation = fa.explain(fa.asarray(a) @ fa.asarray(b) + 1)
    assert "not fused" in str(explanation)
    assert "cuda.shared.array" in explanation.kernels[0][1]   # the tiled kernel, not the cpu loop


# cuda

@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.tiers("cuda")
def test_1024_squared_float32_and_the_same_bits_every_run(transposed):
    seed = pc.seed_of("gpu 1024", transposed)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((1024, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 1024)).astype(np.float32)
    x, y = fa.asarray(a), fa.asarray(b)
    if transposed:
        a, b, x, y = a.T, b[::-1].T, x.T, y[::-1].T
    first = (x @ y).get()
    np.testing.assert_allclose(first, a @ b, rtol=1e-4, atol=1e-3, err_msg=f"seed {seed}")
    pc.check(first, a, b, f"1024 x 1024 (seed {seed})")
    assert first.tobytes() == (x @ y).get().tobytes()


@pytest.mark.tiers("cuda")
def test_a_large_broadcast_batch():
    seed = pc.seed_of("gpu batch")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((6, 1, 130, 70)).astype(np.float32)
    b = rng.standard_normal((5, 70, 200)).astype(np.float32)
    pc.check((fa.asarray(a) @ fa.asarray(b)).get(), a, b, f"batch (seed {seed})")


@pytest.mark.tiers("cuda")
def test_pending_operands_and_readers():
    seed = pc.seed_of("gpu pending")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((200, 150)).astype(np.float32)
    b = rng.standard_normal((150, 100)).astype(np.float32)
    got = ((fa.asarray(a) * 2) @ fa.asarray(b) + 1).get() - np.float32(1)
    np.testing.assert_allclose(got, (a * 2) @ b, rtol=1e-4, atol=1e-3, err_msg=f"seed {seed}")


# ptx: PTX for sm_90 from arrays on the cpu (no GPU needed)

def _product_ptx(array) -> tuple[ProductPlan, str]:
    explanation = fa.explain(array, arch="sm_90")
    (plan, _), = [(p, s) for p, s in explanation.kernels if isinstance(p, ProductPlan)]
    index = [p for p, _ in explanation.kernels].index(plan)
    return plan, explanation.ptx[index]


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int32", "bool"])
@pytest.mark.tiers("ptx")
def test_the_tiled_kernel_compiles_with_shared_slabs_and_no_local_memory(dtype):
    rng = np.random.default_rng(90)
    a = fa.asarray(rng.standard_normal((70, 20)).astype(dtype))
    b = fa.asarray(rng.standard_normal((3, 20, 9)).astype(dtype))
    plan, ptx = _product_ptx(a @ b + 1)
    assert plan.name in ptx
    assert re.search(r"\.shared\s", ptx) and "bar.sync" in ptx       # slabs staged, waited on
    assert re.search(r"ld\.shared", ptx) and re.search(r"st\.shared", ptx)
    assert ".local" not in ptx                                        # 16 accumulators: registers
    assert not _ATOMIC.search(ptx)


@pytest.mark.tiers("ptx")
def test_float16_sums_in_float32_and_transposed_operands_load_along_their_unit_axis():
    h = fa.asarray(np.ones((40, 30), np.float16))
    plan, ptx = _product_ptx(h @ h.T)
    assert plan.along == ("col", "row")       # b = h.T is contiguous along K: threads along K
    assert re.search(r"(fma\.rn|add(\.rn)?)\.f32", ptx) and "cvt.f32.f16" in ptx
    assert not re.search(r"(fma\.rn|add(\.rn)?)\.f16", ptx)
