"""bfloat16 and float8 in the simulator (the cuda kernels' source, tiny sizes): ml_dtypes' bits
for the arithmetic and cast cases of tests/minifloatcases.py (bfloat16's 8-lane vectors among
them), and stochastic rounding with the cpu backend's bits."""

import minifloatcases as mc
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


@pytest.mark.parametrize("dtype", [mc.BF16, mc.E4M3], ids=str)
def test_arithmetic_equals_ml_dtypes(dtype):
    mc.same(*mc.arithmetic(3420, 2, dtype), f"arithmetic {dtype} seed 3420")


def test_bfloat16_vectors_round_as_ml_dtypes():
    a, b = mc.data(3421, (64,), mc.BF16), mc.data(3422, (64,), mc.BF16)
    got = (fa.asarray(a) * fa.asarray(b) + 0.5).get()
    mc.same(got, a * b + mc.BF16.type(0.5), "bfloat16 vectors seed 3421")
    f = mc.data(3423, (64,), np.dtype(np.float32))
    mc.same(fa.asarray(f).astype(fa.bfloat16).get(), f.astype(mc.BF16), "cast seed 3423")


def test_stochastic_rounding_has_the_cpu_bits():
    x = np.random.default_rng(3424).standard_normal(48).astype(np.float32)
    got = fa.random.default_rng(3424).stochastic_round(fa.asarray(x), fa.float16).get()
    with config.override(BACKEND="cpu"):
        want = fa.random.default_rng(3424).stochastic_round(fa.asarray(x), fa.float16).get()
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_namespace_without_helpers_rounds_as_ml_dtypes():
    """A hand-written kernel's namespace (no helper set) still has bfloat16's roundings."""
    from fusedarrays.cuda import sim

    ns = sim._build_namespace({})
    f = mc.data(3425, (16,), np.dtype(np.float32))
    got = np.array([ns["fa_f32_bf16"](v) for v in f], np.uint16)
    np.testing.assert_array_equal(got, f.astype(mc.BF16).view(np.uint16))
    assert ns["cv_e4m3"] is ns["fa_cv_e4m3"]
