"""bfloat16 and float8 on the cuda backend: ml_dtypes' bits for every case of
tests/minifloatcases.py (reductions within one rounding: the device sums float32 in its own
tree order), every bit pattern loaded and stored, stochastic rounding with the cpu backend's
bits and unbiased, PyTorch's bfloat16 CUDA tensors through DLPack without a copy."""

import minifloatcases as mc
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


@pytest.mark.parametrize("dtype", mc.FORMATS, ids=str)
@pytest.mark.parametrize("case", [c for c in mc.CASES if c is not mc.reductions],
                         ids=lambda c: c.__name__)
def test_cases_equal_ml_dtypes(case, dtype):
    seed = 3430 + mc.CASES.index(case)
    got, want = case(seed, 300, dtype)
    for k, (g, w) in enumerate(zip(*((got, want) if isinstance(got, list) else ([got], [want])))):
        mc.same(g, w, f"{case.__name__} {dtype} part {k} seed {seed}")


@pytest.mark.parametrize("dtype", mc.FORMATS, ids=str)
def test_reductions_within_one_rounding(dtype):
    got, want = mc.reductions(3436, 300, dtype)
    for g, w in zip(got, want):
        g32, w32 = g.astype(np.float32), w.astype(np.float32)
        # float8_e4m3fn has no inf: a sum past 448 is its NaN, in ml_dtypes' cast as on the device
        nan = np.isnan(w32)
        np.testing.assert_array_equal(np.isnan(g32), nan, err_msg=f"{dtype} seed 3436")
        step = np.abs(np.nextafter(w32, np.float32(np.inf)) - w32) * 2 ** (23 - 7)
        assert (np.abs(g32 - w32)[~nan] <= step[~nan]).all(), f"{dtype} seed 3436"


@pytest.mark.parametrize("dtype", mc.FORMATS, ids=str)
def test_every_bit_pattern_loads_and_stores(dtype):
    values = np.arange(1 << (8 * dtype.itemsize)).astype(f"u{dtype.itemsize}").view(dtype)
    x = fa.asarray(values)
    mc.same(x.astype(np.float32).get(), values.astype(np.float32), "load")
    mc.same((x * 1).get(), values, "store")


@pytest.mark.parametrize("dtype", [mc.BF16, np.dtype(np.float16)], ids=str)
def test_stochastic_rounding_cpu_bits_and_unbiased(dtype):
    x = np.random.default_rng(3437).standard_normal((300, 257)).astype(np.float32)
    got = fa.random.default_rng(3437).stochastic_round(fa.asarray(x).T, dtype).get()
    with config.override(BACKEND="cpu"):
        want = fa.random.default_rng(3437).stochastic_round(fa.asarray(x).T, dtype).get()
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    mc.stochastic_mean(3438, 200000, dtype)


def test_torch_bfloat16_cuda_tensors_without_copy():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    t = torch.randn(64, 33, device="cuda").to(torch.bfloat16)
    x = fa.asarray(t)                        # through DLPack: the CUDA array interface says <f2
    assert x.dtype == fa.bfloat16
    np.testing.assert_array_equal(x.astype(np.float32).get(), t.float().cpu().numpy())
    back = torch.from_dlpack(x * 2)
    assert back.dtype == torch.bfloat16 and torch.equal(back, t * 2)
