"""complex64 and complex128 through the generated CUDA source in numba's simulator, against NumPy
(tests/complexcases.py), at the smallest sizes that reach each walk (the simulator runs each
thread in Python): 65×136 takes tiles where a complex64 operand is transposed (two rows of
tiles, the second one row deep, and a partial column of tiles; complex128 tiles would pass
the shared memory, so rows), 8×136 rows (more rows and columns than the simulator's grid, so
both stride loops turn), 4×5 coordinates, 1-D views the flat walk."""

import complexcases
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

SMALL = (4, 5)
# the 2-D size at which a layout reaches the walk it is there for, and that walk
LARGE = {"transposed": (65, 136), "negative steps": (8, 136), "broadcast": (8, 136)}
# A walk moves a complex value the same way whatever the op computes from it, so at the large
# sizes a few unary and binary ops take the walk (every op runs at SMALL): the 65 × 136 tiles
# with all 43 took 45-65 s of the 2-core suite.
WALK_OPS = ("negative", "conjugate", "absolute", "exp", "sqrt", "add", "multiply",
            "true_divide", "less")


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "negative steps", "broadcast",
                                    "flat reversed", "zero_d"])
@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_every_complex_op_matches_numpy(dtype, layout):
    reached = set()
    if layout in LARGE:
        reached |= complexcases.check_ops(dtype, layout, LARGE[layout], names=WALK_OPS)[1]
    reached |= complexcases.check_ops(dtype, layout, SMALL)[1]
    schedules = {s for s, _ in reached}
    if layout == "transposed":
        assert ("tiled" if dtype == np.complex64 else "rows") in schedules, reached
    elif layout in LARGE:
        assert "rows" in schedules, reached


def test_mixed_promotion_matches_numpy():
    complexcases.check_mixed_promotion()


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_special_values_match_numpy(dtype):
    complexcases.check_special_values(dtype)


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_ops_without_complex_templates_are_refused(dtype):
    assert complexcases.check_refusals(dtype) >= 5   # cbrt exp2 fabs …


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_reductions_match_numpy(dtype):
    # 3 rows of 136: a block per output (more outputs than the simulator's two blocks), one
    # block for all, a thread per output, and the transpose's sum in parts folded after
    x = fa.asarray(np.ones((3, 136), dtype))
    reached = {(plan.schedule, plan.split > 1) for view in (x, x.T) for axis in (None, 0, 1)
               for plan, _ in fa.explain(fa.sum(view, axis=axis)).kernels}
    assert reached == {("rows", False), ("cols", False), ("cols", True)}, reached
    complexcases.check_reductions(dtype, (3, 136))


@pytest.mark.parametrize("name", list(complexcases.VECTOR_CASES))
def test_complex_operands_take_16_byte_accesses_where_aligned(name):
    complexcases.check_vector_case(name)


def test_complex64_writes_into_aligned_and_misaligned_slices():
    complexcases.check_vector_writes()


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_row_fused_complex_matches_numpy(dtype):
    """A row's mean taken out of it: one row kernel, complex64 rows read two elements per
    16-byte access."""
    seed = 20250113
    base = complexcases.random_complex(np.random.default_rng(seed), (8, 136), dtype)
    x = fa.asarray(base)
    got = x - x.mean(axis=1, keepdims=True)
    plans = [plan for plan, _ in fa.explain(got).kernels]
    assert [p.vector_width for p in plans] == [2 if dtype == np.complex64 else 1], plans
    complexcases.assert_close("multiply", got.get(), base - base.mean(axis=1, keepdims=True),
                              f"row-fused mean of {dtype} (seed {seed})", np.dtype(dtype))
