"""fa.random on the cuda backend: the same bits as the cpu backend (every schedule and view of
tests/randomcases.py, and large draws over many blocks), one launch for a fused draw, and the
distributions."""

import numpy as np
import pytest
import randomcases

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def _cpu(fn):
    with config.override(BACKEND="cpu"):   # the reference backend for the device's bits
        return fn()


# Every case, a float64 normal read through a view included: a normal leaves its helper as an
# fma (philox.fa_bm_turn), never a bare product NVVM could contract with the consumer's sum.
CASES = randomcases.CASES


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_same_bits_as_cpu(case):
    seed = 1500 + randomcases.CASES.index(case)
    result, expected = case(seed)
    got = result.get()
    np.testing.assert_array_equal(got, _cpu(lambda: expected(randomcases.materialised)),
                                  err_msg=f"{seed=}")


@pytest.mark.parametrize("dist,dtype", [("normal", np.float32), ("normal", np.float64),
                                        ("random", np.float32), ("random", np.float64),
                                        ("integers", np.int32)])
def test_large_draws_same_bits_as_cpu(dist, dtype):
    seed, n = 2600, (1 << 22) + 5
    got = randomcases.materialised(seed, dist, dtype, n)
    np.testing.assert_array_equal(got, _cpu(lambda: randomcases.materialised(seed, dist, dtype,
                                                                             n)),
                                  err_msg=f"{seed=}")


def test_noise_add_is_one_launch_and_matches_cpu():
    seed, n = 2601, 1 << 22
    host = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    x = fa.asarray(host)
    y = x + np.float32(0.1) * fa.random.default_rng(seed).standard_normal(n, dtype=np.float32)
    y.compute()
    fa.reset_stats()
    y = x + np.float32(0.1) * fa.random.default_rng(seed).standard_normal(n, dtype=np.float32)
    got = y.get()
    assert fa.stats()["launches"] == 1
    noise = _cpu(lambda: randomcases.materialised(seed, "normal", np.float32, n))
    # NVVM may contract 0.1 * noise + x into one fma: the draw is exact, the sum within 1 ulp
    np.testing.assert_allclose(got, host + np.float32(0.1) * noise, rtol=2e-7, atol=1e-7)


def test_distributions_on_the_device():
    seed, n = 2602, 1 << 20
    rng = fa.random.default_rng(seed)
    u, z = rng.random(n, dtype=np.float32).get(), rng.standard_normal(n).get()
    assert 0.0 <= u.min() and u.max() < 1.0 and abs(u.mean() - 0.5) < 2e-3
    assert abs(z.mean()) < 5e-3 and abs(z.var() - 1) < 6e-3
    stats = pytest.importorskip("scipy.stats")
    assert stats.kstest(u, "uniform").pvalue > 1e-3 and stats.kstest(z, "norm").pvalue > 1e-3
