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


def test_box_muller_intrinsics_equal_the_portable_helpers_for_every_word():
    """The float32 Box-Muller with cuda's intrinsics (cuda/randombits.py: 32-bit integers, the
    division's and square root's fast paths, the quarter turn by selects) against the portable
    helpers compiled for the device (IEEE div.rn and sqrt.rn, the quarter turn by branches), bit
    for bit: every first word a (the radius is a's alone) beside a fixed second word, then every
    second word b beside a fixed a (the angle and its turn are b's alone, r's sign excepted)."""
    from numba import cuda, types

    from fusedarrays.compiler import philox
    from fusedarrays.cuda import intrinsics

    renamed = philox.RANDOM_SOURCE
    for piece in ("fa_bm_ratio_f32", "fa_bm_sqrt_f32", "fa_bm_turn_f32", "fa_bm_f32"):
        renamed = renamed.replace(piece + "(", piece.replace("fa_bm", "fa_ref_bm") + "(")
    portable: dict = {}
    exec(renamed, {"math": __import__("math")}, portable)
    source = '''
def check(bad, fixed, which):
    i = cuda.grid(1)
    count = 0
    while i < 4294967296:
        a, b = (cv_u32(i), cv_u32(fixed)) if which == 0 else (cv_u32(fixed), cv_u32(i))
        got, want = fa_bm_f32(a, b), fa_ref_bm_f32(a, b)
        for k in range(2):   # the same value and the same sign (zeros), never NaN
            if (got[k] != want[k]
                    or math.copysign(cv_f32(1.0), got[k]) != math.copysign(cv_f32(1.0), want[k])):
                count += 1
        i += cuda.gridsize(1)
    if count:
        cuda.atomic.add(bad, 0, count)
'''
    from fusedarrays.compiler import devicelib

    helpers = dict(devicelib.helpers())
    helpers.update((name, fn) for name, fn in portable.items() if name.startswith("fa_ref_bm"))
    namespace = dict(intrinsics.device_namespace(helpers))
    exec(source, namespace)
    check = cuda.jit(types.void(types.int64[:], types.int64, types.int64))(namespace["check"])
    for which, fixed in ((0, 12345), (0, 0xFFFFFFFF), (1, 777), (1, 0xFFFFFFFE)):
        bad = cuda.to_device(np.zeros(1, np.int64))
        check[132 * 32, 256](bad, fixed, which)
        assert bad.copy_to_host()[0] == 0, (which, fixed)


def test_uniform_comparisons_with_edge_scalars_match_the_cpu():
    """The integer thresholds of a float32 uniform's comparisons on the device: each edge of
    the cpu tier's test, as a float32 and a float64 comparison, over 2**20 + 3 elements."""
    seed, n = 2602, (1 << 20) + 3
    for p in randomcases.scalar_edges(seed, n):
        for q in (p, np.float64(p)):
            result, expected = randomcases.scalar_comparisons(seed, q, n)
            want = _cpu(lambda e=expected: e(randomcases.materialised))
            np.testing.assert_array_equal(result.get(), want, err_msg=f"{seed=} {q=}")
